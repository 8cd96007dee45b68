//! min-p, top-k and top-p (docs/SEMANTICS.md §4) against an independent restatement; ties at
//! the top-k boundary, min-p exactly at its threshold, NaN and infinite rows, logprobs.

mod common;

use sampler_host::backend::{Backend, Batch, BatchRow};
use sampler_host::logits::HostLogits;
use sampler_host::reference::{kept_set, logprobs, CpuReference};
use sampler_host::settings::SamplingParams;
use sampler_kernels::fixed::{soft_ceil, soft_ln, weight};
use sampler_kernels::status::{STATUS_NO_VALID_TOKEN, STATUS_OK};

/// Kept set restated: sort indices by (value desc, index asc) with float comparisons, then
/// the three filters one after another, top-p by a plain search over prefix lengths.
fn independent_kept(x: &[f32], p: &SamplingParams) -> Vec<u32> {
    let m = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if m == f32::NEG_INFINITY {
        return Vec::new();
    }
    let inf = m == f32::INFINITY;
    let mut idx: Vec<usize> = (0..x.len())
        .filter(|&i| {
            if inf {
                x[i] == m
            } else {
                x[i] > f32::NEG_INFINITY
            }
        })
        .collect();
    idx.sort_by(|&a, &b| {
        x[b].partial_cmp(&x[a])
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(&b))
    });
    if p.min_p > 0.0 && !inf {
        let thr = m + soft_ln(p.min_p);
        idx.retain(|&i| x[i] >= thr);
    }
    if p.top_k > 0 {
        idx.truncate(p.top_k as usize);
    }
    if p.top_p < 1.0 {
        let w: Vec<u128> = idx
            .iter()
            .map(|&i| if inf { 1 } else { weight(x[i], soft_ceil(m)) })
            .collect();
        let z: u128 = w.iter().sum();
        let p24 = ((p.top_p as f64 * 16_777_216.0).floor() as u128).max(1);
        let prefix: Vec<u128> = w
            .iter()
            .scan(0u128, |acc, &v| {
                *acc += v;
                Some(*acc)
            })
            .collect();
        let n = 1 + prefix
            .iter()
            .position(|&m| m * (1 << 24) >= z * p24)
            .unwrap_or(0);
        idx.truncate(n);
    }
    idx.into_iter().map(|i| i as u32).collect()
}

#[test]
fn kept_sets_match_restatement() {
    let mut rng = common::rng("kept_sets_match_restatement");
    for &(vocab, reps) in &[(151_936usize, 2), (50_257, 3), (1_001, 30)] {
        for _ in 0..reps {
            let row: Vec<f32> = rng.llm_row(vocab);
            let mut p = rng.params(vocab);
            p.temperature = 1.0;
            assert_eq!(
                kept_set(&row, &p).tokens,
                independent_kept(&row, &p),
                "{p:?}"
            );
        }
    }
}

#[test]
fn wide_top_k_and_flat_nucleus_are_exact() {
    let mut rng = common::rng("wide_top_k_and_flat_nucleus_are_exact");
    let vocab = 50_257;
    let row = rng.llm_row(vocab);
    for k in [129u32, 1_000, 5_000, 50_257, 100_000] {
        let p = SamplingParams::default().with_top_k(k);
        let ks = kept_set(&row, &p);
        assert_eq!(ks.tokens.len(), (k as usize).min(vocab));
        assert_eq!(ks.tokens, independent_kept(&row, &p));
    }
    // Flat rows: exactly equal, and nearly flat; the nucleus is thousands wide.
    let flat = vec![0.5f32; vocab];
    for pp in [0.5f32, 0.95, 0.999] {
        let p = SamplingParams::default().with_top_p(pp);
        let ks = kept_set(&flat, &p);
        let want =
            ((pp as f64 * 16_777_216.0).floor() / 16_777_216.0 * vocab as f64).ceil() as usize;
        assert_eq!(ks.tokens.len(), want, "p {pp}");
        assert_eq!(
            ks.tokens,
            (0..want as u32).collect::<Vec<_>>(),
            "ties go to lower indices"
        );
        let noisy: Vec<f32> = (0..vocab).map(|_| rng.normal(0.05)).collect();
        assert_eq!(kept_set(&noisy, &p).tokens, independent_kept(&noisy, &p));
    }
}

#[test]
fn top_k_boundary_ties_go_to_lower_index() {
    let row = [1.0f32, 3.0, 2.0, 3.0, 3.0, 0.0, 3.0];
    let p = SamplingParams::default().with_top_k(2);
    assert_eq!(kept_set(&row, &p).tokens, vec![1, 3]);
    let p = SamplingParams::default().with_top_k(5);
    assert_eq!(kept_set(&row, &p).tokens, vec![1, 3, 4, 6, 2]);
    let mut seen = [0u32; 7];
    for s in 0..2_000 {
        let o = common::sample_once(
            SamplingParams::random(1.0, s).with_top_k(2),
            &[],
            &row,
            None,
        );
        seen[o.token as usize] += 1;
    }
    assert!(
        seen[1] > 800 && seen[3] > 800 && seen[1] + seen[3] == 2_000,
        "{seen:?}"
    );
}

#[test]
fn min_p_at_the_boundary() {
    for &min_p in &[0.25f32, 0.1, 0.5, 0.9, 1.0, 1e-30] {
        let thr = 0.0 + soft_ln(min_p);
        let below = if thr == 0.0 {
            -1e-45
        } else {
            f32::from_bits(thr.to_bits() + 1)
        };
        let row = [below, 0.0, thr, -100.0, thr];
        let p = SamplingParams::default().with_min_p(min_p);
        let kept = kept_set(&row, &p).tokens;
        if min_p == 1.0 {
            assert_eq!(thr, 0.0);
            assert_eq!(kept, vec![1, 2, 4]);
        } else {
            assert_eq!(kept, vec![1, 2, 4], "min_p {min_p}: thr {thr}");
        }
        // Against f64: the threshold is ln(min_p) to within 1e-6 relative.
        assert!(
            ((thr as f64) - (min_p as f64).ln()).abs()
                <= 1e-6 * (min_p as f64).ln().abs().max(1e-30)
        );
    }
    // Temperature applies before min-p.
    let row = [2.0f32, 2.0 + 2.0 * soft_ln(0.5), -10.0];
    let p = SamplingParams::random(2.0, 1).with_min_p(0.5);
    let x: Vec<f32> = row.iter().map(|v| v / 2.0).collect();
    assert_eq!(kept_set(&x, &p).tokens, independent_kept(&x, &p));
}

#[test]
fn nan_and_infinite_rows() {
    let mut rng = common::rng("nan_and_infinite_rows");
    let vocab = 1_000;
    let variants = [
        SamplingParams::greedy(),
        SamplingParams::random(1.0, 3),
        SamplingParams::random(0.7, 9)
            .with_top_k(5)
            .with_top_p(0.5)
            .with_min_p(0.2),
    ];
    for p in &variants {
        for fill in [f32::NAN, f32::NEG_INFINITY] {
            let row = vec![fill; vocab];
            let o = common::sample_once(p.clone(), &[], &row, None);
            assert_eq!((o.token, o.status), (-1, STATUS_NO_VALID_TOKEN));
        }
        let mut row = rng.llm_row(vocab);
        let t = rng.token(vocab);
        row[t as usize] = f32::INFINITY;
        for s in 0..20 {
            let o = common::sample_once(p.clone().with_seed(s), &[], &row, None);
            assert_eq!((o.token, o.status), (t as i32, STATUS_OK));
        }
        // NaN everywhere but one finite token: that one, always.
        let mut row = vec![f32::NAN; vocab];
        row[vocab - 3] = -1e30;
        assert_eq!(
            common::sample_once(p.clone(), &[], &row, None).token as usize,
            vocab - 3
        );
    }
    // A NaN row does not disturb its neighbours.
    let good = rng.llm_row(vocab);
    let alone = common::sample_once(SamplingParams::random(1.0, 77), &[], &good, None);
    let mut data = vec![f32::NAN; vocab];
    data.extend_from_slice(&good);
    let mut b = CpuReference::new(vocab, 2).expect("backend");
    b.add_request(1, SamplingParams::random(1.0, 5), &[])
        .expect("add");
    b.add_request(2, SamplingParams::random(1.0, 77), &[])
        .expect("add");
    let batch = Batch {
        logits: HostLogits::f32(&data, 2, vocab).expect("logits"),
        rows: vec![BatchRow::new(1), BatchRow::new(2)],
    };
    let outs = b.sample(&batch).expect("sample");
    assert_eq!(outs[0].status, STATUS_NO_VALID_TOKEN);
    assert_eq!(outs[1], alone);
    // Several +inf: the kept set is exactly those, then top-k keeps the lowest indices.
    let mut row = rng.llm_row(vocab);
    for t in [900usize, 5, 77, 400] {
        row[t] = f32::INFINITY;
    }
    assert_eq!(
        kept_set(&row, &SamplingParams::default()).tokens,
        vec![5, 77, 400, 900]
    );
    assert_eq!(
        kept_set(&row, &SamplingParams::default().with_top_k(2)).tokens,
        vec![5, 77]
    );
    assert_eq!(
        kept_set(&row, &SamplingParams::default().with_top_p(0.5)).tokens,
        vec![5, 77]
    );
    assert_eq!(
        kept_set(&row, &SamplingParams::default().with_top_p(0.51)).tokens,
        vec![5, 77, 400]
    );
    assert_eq!(
        common::sample_once(SamplingParams::greedy(), &[], &row, None).token,
        5
    );
}

#[test]
fn logprobs_are_log_softmax() {
    let mut rng = common::rng("logprobs_are_log_softmax");
    let vocab = 50_257;
    let row = rng.llm_row(vocab);
    for p in [
        SamplingParams::greedy().with_logprobs(20),
        SamplingParams::random(0.7, 11)
            .with_top_k(40)
            .with_logprobs(5),
    ] {
        let o = common::sample_once(p.clone(), &[], &row, None);
        let t = if p.temperature > 0.0 {
            p.temperature as f64
        } else {
            1.0
        };
        let x: Vec<f64> = row
            .iter()
            .map(|&v| {
                (v / if p.temperature > 0.0 {
                    p.temperature
                } else {
                    1.0
                }) as f64
            })
            .collect();
        let m = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lse = m + x.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
        let lp = o.logprob.expect("logprob") as f64;
        assert!((lp - (x[o.token as usize] - lse)).abs() < 1e-4, "t {t}");
        assert_eq!(o.top_logprobs.len(), p.top_logprobs as usize);
        let mut order: Vec<usize> = (0..vocab).collect();
        order.sort_by(|&a, &b| {
            row[b]
                .partial_cmp(&row[a])
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.cmp(&b))
        });
        for (j, &(tok, l)) in o.top_logprobs.iter().enumerate() {
            assert_eq!(tok as usize, order[j]);
            assert!(((l as f64) - (x[tok as usize] - lse)).abs() < 1e-4);
        }
    }
    let lp = logprobs(&[f32::INFINITY, 0.0, f32::INFINITY, f32::NEG_INFINITY]);
    assert_eq!(lp[0], -(2.0f64).ln());
    assert_eq!(lp[1], f64::NEG_INFINITY);
    let o = common::sample_once(
        SamplingParams::random(1.0, 1).with_logprobs(0),
        &[],
        &[f32::NAN; 8],
        None,
    );
    assert_eq!((o.logprob, o.top_logprobs.len()), (None, 0));
}
