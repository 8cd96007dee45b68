//! Chi-square tests of random sampling against the exact truncated distribution
//! `p_i = W_i / Z_kept`, with enough draws to catch a 1% relative bias (checked: the same
//! draws are tested against a 1%-tilted distribution, which must be rejected). p = 1e-5.

mod common;

use sampler_host::backend::{Backend, Batch, BatchRow};
use sampler_host::logits::HostLogits;
use sampler_host::reference::{draw, kept_set, process_row, CpuReference, KeptSet};
use sampler_host::settings::SamplingParams;
use sampler_host::state::RequestState;
use sampler_kernels::fixed::{soft_ceil, weight};
use sampler_kernels::philox::{random_u64, STREAM_TOKEN};

/// Exact probabilities over the vocab from the kept set, weights recomputed here.
fn expected(x: &[f32], kept: &[u32]) -> Vec<f64> {
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let w: Vec<u128> = kept
        .iter()
        .map(|&t| {
            if m == f32::INFINITY {
                1
            } else {
                weight(x[t as usize], soft_ceil(m))
            }
        })
        .collect();
    let z: u128 = w.iter().sum();
    let mut p = vec![0.0; x.len()];
    for (&t, &wi) in kept.iter().zip(&w) {
        p[t as usize] = wi as f64 / z as f64;
    }
    p
}

fn draw_counts(kept: &KeptSet, vocab: usize, seed: u64, n: u64) -> Vec<u64> {
    let mut counts = vec![0u64; vocab];
    for step in 0..n {
        let t = draw(kept, random_u64(seed, step, STREAM_TOKEN)).expect("a token");
        counts[t as usize] += 1;
    }
    counts
}



#[test]
fn truncated_sampling_is_exact() {
    let mut rng = common::rng("truncated_sampling_is_exact");
    let vocab = 500;
    let cases = [
        SamplingParams::random(1.0, 0).with_top_k(16),
        SamplingParams::random(0.8, 0).with_top_p(0.8),
        SamplingParams::random(1.3, 0)
            .with_min_p(0.05)
            .with_top_k(20)
            .with_top_p(0.95),
    ];
    for (case, p) in cases.into_iter().enumerate() {
        // The first case carries the power check (noncentrality ~150 against a critical
        // value ~50); the others only the fit.
        let n = if case == 0 { 1_500_000 } else { 400_000 };
        // A peaked row so the kept set has ~10-20 tokens.
        let mut raw: Vec<f32> = (0..vocab).map(|_| rng.normal(1.0)).collect();
        for j in 0..18 {
            raw[rng.token(vocab) as usize] = 6.0 - 0.25 * j as f32;
        }
        let x: Vec<f32> = raw.iter().map(|v| v / p.temperature).collect();
        let kept = kept_set(&x, &p);
        assert!(kept.tokens.len() >= 5, "{}", kept.tokens.len());
        let probs = expected(&x, &kept.tokens);
        let counts = draw_counts(&kept, vocab, rng.u64(), n);
        common::assert_fits(&counts, &probs, &format!("{p:?}"));
        if case > 0 {
            continue;
        }
        let (stat, df) = common::chi2(&counts, &common::tilted(&probs));
        assert!(
            stat > common::chi2_critical(df),
            "a 1% tilt went unnoticed: {stat:.1} (df {df})"
        );
    }
}

#[test]
fn untruncated_sampling_is_proportional_to_weights() {
    let mut rng = common::rng("untruncated_sampling_is_proportional_to_weights");
    let vocab = 64;
    let x: Vec<f32> = (0..vocab).map(|_| rng.normal(1.0)).collect();
    let kept = kept_set(&x, &SamplingParams::default());
    assert_eq!(kept.tokens.len(), vocab);
    let probs = expected(&x, &kept.tokens);
    let counts = draw_counts(&kept, vocab, rng.u64(), 300_000);
    common::assert_fits(&counts, &probs, "k=0 p=1");
    // And the weights are softmax to ~1e-6.
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let z: f64 = x.iter().map(|&v| (v as f64 - m).exp()).sum();
    for (i, &p) in probs.iter().enumerate() {
        let want = ((x[i] as f64) - m).exp() / z;
        assert!((p - want).abs() / want < 1e-5, "token {i}: {p} vs {want}");
    }
}

#[test]
fn several_infinities_are_uniform() {
    let mut rng = common::rng("several_infinities_are_uniform");
    let vocab = 100;
    let mut x = rng.llm_row(vocab);
    let mut infs: Vec<u32> = (0..7).map(|_| rng.token(vocab)).collect();
    infs.sort_unstable();
    infs.dedup();
    for &t in &infs {
        x[t as usize] = f32::INFINITY;
    }
    let kept = kept_set(&x, &SamplingParams::default());
    assert_eq!(kept.tokens, infs);
    let mut probs = vec![0.0; vocab];
    for &t in &infs {
        probs[t as usize] = 1.0 / infs.len() as f64;
    }
    let counts = draw_counts(&kept, vocab, rng.u64(), 300_000);
    common::assert_fits(&counts, &probs, "+inf tokens");
}

#[test]
fn backend_draws_match_the_distribution() {
    let mut rng = common::rng("backend_draws_match_the_distribution");
    let vocab = 96;
    let raw: Vec<f32> = (0..vocab).map(|_| rng.normal(1.5)).collect();
    let params = SamplingParams::random(0.9, 0)
        .with_top_k(12)
        .with_top_p(0.9);
    let rows = 256;
    let draws_per_row = 400;
    let data: Vec<f32> = (0..rows).flat_map(|_| raw.iter().copied()).collect();
    let mut b = CpuReference::new(vocab, rows).expect("backend");
    let mut seeds = Vec::new();
    for r in 0..rows as u64 {
        let s = rng.u64();
        seeds.push(s);
        b.add_request(r, params.clone().with_seed(s), &[])
            .expect("add");
    }
    let batch = Batch {
        logits: HostLogits::f32(&data, rows, vocab).expect("logits"),
        rows: (0..rows as u64).map(BatchRow::new).collect(),
    };
    let st = RequestState {
        params: params.clone(),
        prompt: Vec::new(),
        output_counts: Default::default(),
        step: 0,
    };
    let x = process_row(&raw, &st, None);
    let kept = kept_set(&x, &params);
    let mut counts = vec![0u64; vocab];
    for step in 0..draws_per_row {
        let outs = b.sample(&batch).expect("sample");
        for (r, o) in outs.iter().enumerate() {
            counts[o.token as usize] += 1;
            // The backend's token is exactly the documented draw.
            if step % 50 == 0 {
                let want = draw(&kept, random_u64(seeds[r], step, STREAM_TOKEN)).expect("token");
                assert_eq!(o.token as u32, want);
            }
        }
    }
    common::assert_fits(&counts, &expected(&x, &kept.tokens), "backend");
}
