//! The per-token prologue (docs/SEMANTICS.md §2) against an independent restatement, the
//! bitmask layout, penalties on negative logits, and exact widening of bf16/f16.

mod common;

use std::collections::HashMap;

use half::{bf16, f16};
use sampler_host::backend::{Backend, Batch, BatchRow};
use sampler_host::logits::{HostLogits, LogitsData};
use sampler_host::reference::{greedy_choice, process_row, CpuReference};
use sampler_host::settings::SamplingParams;
use sampler_host::state::RequestState;
use sampler_kernels::logit::{widen_bf16, widen_f16};
use sampler_kernels::status::{STATUS_NO_VALID_TOKEN, STATUS_OK};

fn state(params: SamplingParams, prompt: &[u32], outputs: &[(u32, u32)]) -> RequestState {
    let mut p = prompt.to_vec();
    p.sort_unstable();
    p.dedup();
    RequestState {
        params,
        prompt: p,
        output_counts: outputs.iter().copied().collect(),
        step: 0,
    }
}

/// The prologue restated rule by rule over the whole row, one pass per rule.
fn restate(raw: &[f32], st: &RequestState, mask: Option<&[i32]>) -> Vec<f32> {
    let p = &st.params;
    let counts: HashMap<u32, u32> = st.output_counts.clone();
    let mut x: Vec<f32> = raw
        .iter()
        .map(|&v| if v.is_nan() { f32::NEG_INFINITY } else { v })
        .collect();
    let mut dead: Vec<bool> = raw.iter().map(|v| v.is_nan()).collect();
    if let Some(m) = mask {
        for (t, d) in dead.iter_mut().enumerate() {
            if (m[t / 32] as u32) & (1u32 << (t % 32)) == 0 {
                *d = true;
            }
        }
    }
    for t in 0..x.len() {
        if dead[t] {
            x[t] = f32::NEG_INFINITY;
            continue;
        }
        let c = counts.get(&(t as u32)).copied().unwrap_or(0);
        let seen = c > 0 || st.prompt.contains(&(t as u32));
        if seen && p.repetition_penalty != 1.0 {
            // Multiplies by the rounded reciprocal (SEMANTICS §2, step 3), not a division.
            x[t] = if x[t] > 0.0 {
                x[t] * (1.0 / p.repetition_penalty)
            } else {
                x[t] * p.repetition_penalty
            };
        }
        if c > 0 {
            x[t] -= p.frequency_penalty * c as f32 + p.presence_penalty;
        }
    }
    for &(t, b) in &p.logit_bias {
        x[t as usize] += b;
    }
    if p.temperature > 0.0 {
        let scale = 1.0 / p.temperature; // step 6: the reciprocal, rounded once
        for v in &mut x {
            *v *= scale;
        }
    }
    for v in &mut x {
        if v.is_nan() {
            *v = f32::NEG_INFINITY;
        }
        if *v == 0.0 {
            *v = 0.0;
        }
    }
    x
}

#[test]
fn prologue_matches_restatement() {
    let mut rng = common::rng("prologue_matches_restatement");
    for &vocab in &[50_257usize, 151_936, 1_003, 33] {
        for _ in 0..3 {
            let mut row = rng.llm_row(vocab);
            // Some negative, NaN, infinite and zero entries.
            for _ in 0..5 {
                let t = rng.token(vocab) as usize;
                row[t] = [f32::NAN, -0.0, f32::NEG_INFINITY, -7.5, 0.0][rng.below(5) as usize];
            }
            let mut params = rng.params(vocab);
            params.repetition_penalty = 0.5 + rng.unit() as f32;
            params.frequency_penalty = rng.normal(1.0);
            params.presence_penalty = rng.normal(1.0);
            let prompt: Vec<u32> = (0..50).map(|_| rng.token(vocab)).collect();
            let outputs: Vec<(u32, u32)> = (0..30)
                .map(|_| (rng.token(vocab), 1 + rng.below(4) as u32))
                .collect();
            let st = state(params, &prompt, &outputs);
            let mask = rng.bitmask(vocab, 0.7);
            for m in [None, Some(&mask[..])] {
                let got = process_row(&row, &st, m);
                let want = restate(&row, &st, m);
                for t in 0..vocab {
                    assert_eq!(
                        got[t].to_bits(),
                        want[t].to_bits(),
                        "token {t}: {} vs {}",
                        got[t],
                        want[t]
                    );
                }
                // And the f64 view of the same rules agrees to f32 rounding.
                let p = &st.params;
                for t in (0..vocab).step_by(97) {
                    if !got[t].is_finite()
                        || m.is_some_and(|m| (m[t / 32] >> (t % 32)) & 1 == 0)
                        || row[t].is_nan()
                    {
                        continue;
                    }
                    let mut v = row[t] as f64;
                    let c = st.count(t as u32) as f64;
                    if st.seen(t as u32) {
                        let r = p.repetition_penalty as f64;
                        v = if v > 0.0 { v / r } else { v * r };
                    }
                    if c > 0.0 {
                        v -= p.frequency_penalty as f64 * c + p.presence_penalty as f64;
                    }
                    v += p
                        .logit_bias
                        .iter()
                        .find(|b| b.0 as usize == t)
                        .map_or(0.0, |b| b.1 as f64);
                    if p.temperature > 0.0 {
                        v /= p.temperature as f64;
                    }
                    assert!(
                        (got[t] as f64 - v).abs() <= 1e-5 * (1.0 + v.abs()),
                        "token {t}: {} vs {v}",
                        got[t]
                    );
                }
            }
        }
    }
}

#[test]
fn greedy_is_argmax_with_lowest_index() {
    let mut rng = common::rng("greedy_is_argmax_with_lowest_index");
    for &vocab in &[50_257usize, 77] {
        let mut row = rng.llm_row(vocab);
        let best = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        // Three-way tie at the top: the lowest index must win.
        let ties = [rng.token(vocab), rng.token(vocab), rng.token(vocab)];
        for &t in &ties {
            row[t as usize] = best + 1.0;
        }
        let out = common::sample_once(SamplingParams::greedy(), &[], &row, None);
        assert_eq!(out.status, STATUS_OK);
        assert_eq!(out.token as u32, *ties.iter().min().unwrap_or(&0));
    }
    // -0.0 and +0.0 tie: the lower index wins whichever zero it holds.
    let row = [-1.0f32, -0.0, 0.0, -3.0];
    assert_eq!(
        common::sample_once(SamplingParams::greedy(), &[], &row, None).token,
        1
    );
    let row = [-1.0f32, 0.0, -0.0, -3.0];
    assert_eq!(
        common::sample_once(SamplingParams::greedy(), &[], &row, None).token,
        1
    );
}

#[test]
fn bitmask_empty_full_and_ragged() {
    let mut rng = common::rng("bitmask_empty_full_and_ragged");
    for &vocab in &[50_257usize, 100, 32, 31] {
        let row = rng.llm_row(vocab);
        let words = vocab.div_ceil(32);
        let empty = vec![0i32; words];
        let full = vec![-1i32; words];
        for params in [
            SamplingParams::greedy(),
            SamplingParams::random(1.0, 5)
                .with_top_k(40)
                .with_top_p(0.9),
        ] {
            let none = common::sample_once(params.clone(), &[], &row, Some(&empty));
            assert_eq!((none.token, none.status), (-1, STATUS_NO_VALID_TOKEN));
            let a = common::sample_once(params.clone(), &[], &row, Some(&full));
            let b = common::sample_once(params.clone(), &[], &row, None);
            assert_eq!(a, b);
            // Only the bits past V are set: still nothing to sample.
            if vocab % 32 != 0 {
                let mut tail = vec![0i32; words];
                tail[words - 1] = !((1u32 << (vocab % 32)) - 1) as i32;
                let o = common::sample_once(params.clone(), &[], &row, Some(&tail));
                assert_eq!(o.status, STATUS_NO_VALID_TOKEN);
            }
            // A single allowed token, the last one of a ragged vocab.
            let mut one = vec![0i32; words];
            one[(vocab - 1) / 32] = 1 << ((vocab - 1) % 32);
            assert_eq!(
                common::sample_once(params.clone(), &[], &row, Some(&one)).token as usize,
                vocab - 1
            );
            // Random masks: the chosen token is always allowed.
            for _ in 0..20 {
                let m = rng.bitmask(vocab, 0.1);
                let o =
                    common::sample_once(params.clone().with_seed(rng.u64()), &[], &row, Some(&m));
                if o.status == STATUS_OK {
                    let t = o.token as usize;
                    assert!((m[t / 32] >> (t % 32)) & 1 == 1);
                } else {
                    assert!(m.iter().all(|&w| w == 0) || vocab < 64);
                }
            }
        }
    }
}

#[test]
fn penalties_on_negative_logits() {
    let p = SamplingParams::greedy().with_penalties(2.0, 0.0, 0.0);
    let st = state(p, &[0, 1], &[]);
    let x = process_row(&[-2.0, 3.0, -1.0, 1.0], &st, None);
    assert_eq!(x, vec![-4.0, 1.5, -1.0, 1.0]);
    assert_eq!(greedy_choice(&x), Some(1));
    // r < 1 boosts instead: negative seen logits move toward zero... multiplied by r.
    let st = state(
        SamplingParams::greedy().with_penalties(0.5, 0.0, 0.0),
        &[0],
        &[],
    );
    assert_eq!(process_row(&[-2.0, -1.5], &st, None), vec![-1.0, -1.5]);
    // Frequency and presence only count output tokens, and push negatives further down.
    let st = state(
        SamplingParams::greedy().with_penalties(1.0, 0.5, 0.25),
        &[2],
        &[(0, 3), (1, 1)],
    );
    assert_eq!(
        process_row(&[-1.0, -1.0, -1.0], &st, None),
        vec![-2.75, -1.75, -1.0]
    );
    // Seen through the output only: the repetition penalty applies too.
    let st = state(
        SamplingParams::greedy().with_penalties(3.0, 0.0, 0.0),
        &[],
        &[(1, 1)],
    );
    assert_eq!(
        process_row(&[-1.0, -1.0, 6.0], &st, None),
        vec![-1.0, -3.0, 6.0]
    );
}

#[test]
fn sampler_updates_penalty_state() {
    // Greedy with a strong presence penalty cycles through the top tokens.
    let row = [5.0f32, 4.0, 3.0, -10.0];
    let mut b = CpuReference::new(4, 1).expect("backend");
    b.add_request(
        1,
        SamplingParams::greedy().with_penalties(1.0, 0.0, 10.0),
        &[],
    )
    .expect("add");
    let logits = HostLogits::f32(&row, 1, 4).expect("logits");
    let batch = Batch {
        logits,
        rows: vec![BatchRow::new(1)],
    };
    let toks: Vec<i32> = (0..3)
        .map(|_| b.sample(&batch).expect("sample")[0].token)
        .collect();
    assert_eq!(toks, vec![0, 1, 2]);
    assert_eq!(b.request_step(1).expect("step"), 3);
    b.reset_request(1, &[]).expect("reset");
    assert_eq!(b.request_step(1).expect("step"), 0);
    assert_eq!(b.sample(&batch).expect("sample")[0].token, 0);
    // A prompt token is seen from the start.
    b.update_request(1, SamplingParams::greedy().with_penalties(10.0, 0.0, 0.0))
        .expect("update");
    b.reset_request(1, &[0]).expect("reset");
    assert_eq!(b.sample(&batch).expect("sample")[0].token, 1);
}

#[test]
fn widening_is_exact() {
    for bits in 0..=u16::MAX {
        let h = f16::from_bits(bits).to_f32();
        let w = widen_f16(bits);
        assert!(
            h.to_bits() == w.to_bits() || (h.is_nan() && w.is_nan()),
            "f16 {bits:#06x}"
        );
        let h = bf16::from_bits(bits).to_f32();
        let w = widen_bf16(bits);
        assert!(
            h.to_bits() == w.to_bits() || (h.is_nan() && w.is_nan()),
            "bf16 {bits:#06x}"
        );
    }
}

#[test]
fn half_precision_inputs_match_widened_f32() {
    let mut rng = common::rng("half_precision_inputs_match_widened_f32");
    let vocab = 50_257;
    let rows = 3;
    let raw: Vec<f32> = (0..rows).flat_map(|_| rng.llm_row(vocab)).collect();
    let as_bf16: Vec<bf16> = raw.iter().map(|&v| bf16::from_f32(v)).collect();
    let as_f16: Vec<f16> = raw.iter().map(|&v| f16::from_f32(v)).collect();
    let params: Vec<SamplingParams> = (0..rows).map(|_| rng.params(vocab)).collect();
    let run = |data: LogitsData<'_>| {
        let mut b = CpuReference::new(vocab, rows).expect("backend");
        for (i, p) in params.iter().enumerate() {
            b.add_request(i as u64, p.clone(), &[]).expect("add");
        }
        let logits = HostLogits::new(data, rows, vocab, vocab).expect("logits");
        let batch = Batch {
            logits,
            rows: (0..rows as u64).map(BatchRow::new).collect(),
        };
        b.sample(&batch).expect("sample")
    };
    let wide_b: Vec<f32> = as_bf16.iter().map(|v| v.to_f32()).collect();
    let wide_h: Vec<f32> = as_f16.iter().map(|v| v.to_f32()).collect();
    assert_eq!(
        run(LogitsData::Bf16(&as_bf16)),
        run(LogitsData::F32(&wide_b))
    );
    assert_eq!(run(LogitsData::F16(&as_f16)), run(LogitsData::F32(&wide_h)));
    // A padded row stride reads the same rows.
    let mut padded = vec![f32::NAN; rows * (vocab + 13)];
    for r in 0..rows {
        padded[r * (vocab + 13)..r * (vocab + 13) + vocab]
            .copy_from_slice(&wide_b[r * vocab..(r + 1) * vocab]);
    }
    let mut b = CpuReference::new(vocab, rows).expect("backend");
    for (i, p) in params.iter().enumerate() {
        b.add_request(i as u64, p.clone(), &[]).expect("add");
    }
    let logits =
        HostLogits::new(LogitsData::F32(&padded), rows, vocab, vocab + 13).expect("logits");
    let batch = Batch {
        logits,
        rows: (0..rows as u64).map(BatchRow::new).collect(),
    };
    assert_eq!(
        b.sample(&batch).expect("sample"),
        run(LogitsData::F32(&wide_b))
    );
}
