//! The speculative-verification workloads of `sonic-bench` (included by the binary with
//! `#[path]`, so they stay out of the single-step code):
//! - `verify_uniform`: B requests × 4 drafts, random sampling at T 1 with full draft-probability
//!   rows, no truncation, penalties or masks (the shape FlashInfer's chain speculative sampling
//!   covers);
//! - `verify_hetero`: per request a random mix of greedy and random settings (top-k, top-p,
//!   min-p, penalties with 100 prompt tokens, logit bias), 0..7 drafts, draft-probability rows on
//!   half of the random requests, a grammar bitmask on 30% of the requests;
//! - `verify_accepted`: B greedy requests × 4 drafts, each draft the argmax of its target row,
//!   so every draft is accepted and no row can be skipped (the case where `verify_rows`' skip
//!   of rows past a rejection saves nothing and its checks still run);
//! - `verify_accept70`: the same, but each draft is its row's argmax with probability 0.7 and
//!   a uniform random token otherwise, so chains stop where a production drafter's might
//!   (1.77 of 4 drafts accepted on average);
//! - `verify_sampled`: B random requests (T 1) × 4 drafts with full draft-probability rows, each
//!   q row `0.7 · p + 0.3 · noise` of its own target row and each draft sampled from it, so a
//!   draft is accepted with probability `Σ min(p, q) ≥ 0.7`: chains stop anywhere, with a
//!   residual draw where they stop and a bonus draw where they do not (the production shape
//!   of random sampling with a drafter).
//!
//! Timed like the step: CUDA events around one graph replay of the three verification kernels,
//! two target-logit sets alternating, the flush buffer rewritten before each replay. In the
//! first two workloads drafts are uniform random tokens. In `verify_hetero` nearly every chain
//! stops at its first draft (a truncated or greedy row keeps no random token; a row without q
//! accepts `d` with probability `p(d)`), and its random requests run a residual draw. In
//! `verify_uniform` a draft is accepted about half the time (`min(1, p(d)/q(d))` for a uniform
//! `d`, with `p` and the `u^8` weights of `q` both spread over the vocabulary: an estimate from
//! the two generators' distributions, session 43), so chains stop anywhere. GB/s counts the
//! bytes a call must move: target logits, draft-probability rows, bitmask rows, and the penalty
//! counts once per target row of a request with penalties.

use rand_xoshiro::rand_core::Rng;
use sampler_host::backend::Backend;
use sampler_host::cuda::GpuDevice;
use sampler_host::gpu::{DeviceLogits, GpuSampler, GpuSamplerConfig};
use sampler_host::gpu_verify::{DeviceVerifyRequest, DraftProbs, GpuVerifier, VerifyGraph};
use sampler_host::settings::SamplingParams;
use sampler_kernels::abi::{DTYPE_F32, FILL_PEAKED};
use sampler_tests::{below, bitmask_row, draft_q_row, first_argmax, mixed_params, sample_weights, unit};

use super::{split_cell_name, time_replays, BenchResult, L2Flush, Timing};

/// The two verification workloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VerifyWorkload {
    Uniform,
    Hetero,
    Accepted,
    Accept70,
    Sampled,
}

impl VerifyWorkload {
    /// Every verification workload, in the grid's order.
    pub const ALL: [VerifyWorkload; 5] =
        [VerifyWorkload::Uniform, VerifyWorkload::Hetero, VerifyWorkload::Accepted, VerifyWorkload::Accept70, VerifyWorkload::Sampled];

    pub fn name(self) -> &'static str {
        match self {
            VerifyWorkload::Uniform => "verify_uniform",
            VerifyWorkload::Hetero => "verify_hetero",
            VerifyWorkload::Accepted => "verify_accepted",
            VerifyWorkload::Accept70 => "verify_accept70",
            VerifyWorkload::Sampled => "verify_sampled",
        }
    }
}

/// One verification cell (f32 logits).
pub struct VerifyCell {
    pub workload: VerifyWorkload,
    pub vocab: usize,
    pub batch: usize,
}

/// What one cell measured.
pub struct VerifyMeasured {
    pub timing: Timing,
    pub bytes: f64,
    /// Target rows of the call.
    pub rows: usize,
    /// Rows `verify_rows` skipped in one replay after the timed ones (past a rejection it
    /// already knew).
    pub skipped: u32,
}

/// The grid: B ∈ {1, 8, 32, 128}, V ∈ {128256, 151936} (quick: V 128256, B ∈ {1, 32}).
pub fn cells(quick: bool) -> Vec<VerifyCell> {
    let (vocabs, batches): (&[usize], &[usize]) = if quick { (&[128_256], &[1, 32]) } else { (&[128_256, 151_936], &[1, 8, 32, 128]) };
    let mut out = Vec::new();
    for &vocab in vocabs {
        for &batch in batches {
            for workload in VerifyWorkload::ALL {
                out.push(VerifyCell { workload, vocab, batch });
            }
        }
    }
    out
}

/// The cell `workload:f32:vocab:batch` names, if it names a verification cell (any batch, not
/// only the grid's).
pub fn parse_cell(name: &str) -> Option<VerifyCell> {
    let (w, d, vocab, batch) = split_cell_name(name)?;
    let workload = VerifyWorkload::ALL.into_iter().find(|x| x.name() == w)?;
    (d == "f32").then_some(VerifyCell { workload, vocab, batch })
}

/// A draft-probability row in [0, 1]: random weights normalised to sum 1.
fn q_row(rng: &mut impl Rng, vocab: usize) -> Vec<f32> {
    let w: Vec<f64> = (0..vocab).map(|_| unit(rng).powi(8)).collect();
    let s: f64 = w.iter().sum();
    w.iter().map(|&v| (v / s) as f32).collect()
}

/// Measures one cell.
pub fn run_verify_cell(cell: &VerifyCell, flush: &mut L2Flush, replays: usize, rng: &mut impl Rng) -> BenchResult<VerifyMeasured> {
    const MAX_DRAFTS: usize = 8;
    let (vocab, batch) = (cell.vocab, cell.batch);
    let config = GpuSamplerConfig { max_requests: batch, max_bias_entries: batch * 32, ..GpuSamplerConfig::new(vocab, batch) };
    let mut verifier = GpuVerifier::new(GpuSampler::new(GpuDevice::open(0)?, config)?, MAX_DRAFTS)?;
    let words = vocab.div_ceil(32);
    let hetero = cell.workload == VerifyWorkload::Hetero;
    // Greedy requests whose drafts are their rows' argmax: always, or with probability 0.7.
    let accepted = matches!(cell.workload, VerifyWorkload::Accepted | VerifyWorkload::Accept70);
    let all_accepted = cell.workload == VerifyWorkload::Accepted;
    let sampled = cell.workload == VerifyWorkload::Sampled;

    // Requests: settings, prompt, drafts, whether they bring q rows, bitmask rows.
    let mut drafts: Vec<Vec<u32>> = Vec::new();
    let mut has_q = Vec::new();
    let mut masks: Vec<Option<Vec<i32>>> = Vec::new();
    let mut penalty_rows = 0usize;
    for r in 0..batch {
        let params = if hetero {
            let mut p = mixed_params(rng, vocab);
            p.top_logprobs = 0;
            p
        } else if accepted {
            SamplingParams::greedy()
        } else {
            SamplingParams::random(1.0, rng.next_u64())
        };
        let n = if hetero { below(rng, 8) as usize } else { 4 };
        if params.repetition_penalty != 1.0 || params.frequency_penalty != 0.0 || params.presence_penalty != 0.0 {
            penalty_rows += n + 1;
        }
        has_q.push(if hetero { !params.is_greedy() && below(rng, 2) == 0 } else { !accepted });
        let prompt: Vec<u32> = if hetero { (0..100).map(|_| below(rng, vocab as u64) as u32).collect() } else { Vec::new() };
        verifier.add_request(r as u64, params, &prompt)?;
        drafts.push((0..n).map(|_| below(rng, vocab as u64) as u32).collect());
        masks.push(if hetero && below(rng, 10) < 3 {
            let allow = 0.5 + 0.49 * unit(rng);
            Some((0..=n).flat_map(|_| bitmask_row(rng, vocab, allow)).collect())
        } else {
            None
        });
    }
    let rows: usize = drafts.iter().map(|d| d.len() + 1).sum();
    let q_rows: usize = drafts.iter().zip(&has_q).filter(|(_, &q)| q).map(|(d, _)| d.len()).sum();
    let mask_rows: usize = drafts.iter().zip(&masks).filter(|(_, m)| m.is_some()).map(|(d, _)| d.len() + 1).sum();

    let stream = verifier.device().stream().clone();
    let mut sets = Vec::new();
    for set in 0..2u64 {
        let mut s = stream.alloc_zeros::<f32>(rows * vocab)?;
        verifier.device().fill_logits(&mut s, DTYPE_F32, rows, vocab, vocab, rng.next_u64() ^ set, FILL_PEAKED)?;
        sets.push(s);
    }
    if accepted {
        // A draft is its row's argmax (plain greedy rows: the largest logit, lowest index on
        // ties), or for verify_accept70 a random token 3 times in 10; the second set is a copy
        // of the first, so both replays accept the same drafts.
        let host = stream.clone_dtoh(&sets[0])?;
        let mut row = 0;
        for d in &mut drafts {
            for t in d.iter_mut() {
                let x = &host[row * vocab..(row + 1) * vocab];
                *t = first_argmax(x);
                if !all_accepted && below(rng, 10) < 3 {
                    *t = below(rng, vocab as u64) as u32;
                }
                row += 1;
            }
            row += 1; // the bonus row
        }
        let (first, second) = sets.split_at_mut(1);
        stream.memcpy_dtod(&first[0], &mut second[0])?;
    }
    // verify_sampled: each draft row's q from its own target row, the draft sampled from q; the
    // second set is a copy of the first, so both replays accept the same drafts.
    let mut sampled_q = Vec::new();
    if sampled {
        let host = stream.clone_dtoh(&sets[0])?;
        let mut row = 0;
        for d in &mut drafts {
            for t in d.iter_mut() {
                let q = draft_q_row(rng, &host[row * vocab..(row + 1) * vocab]);
                *t = sample_weights(rng, &q);
                sampled_q.extend_from_slice(&q);
                row += 1;
            }
            row += 1; // the bonus row
        }
        let (first, second) = sets.split_at_mut(1);
        stream.memcpy_dtod(&first[0], &mut second[0])?;
    }
    let requests: Vec<DeviceVerifyRequest<'_>> = (0..batch)
        .map(|r| DeviceVerifyRequest {
            request: r as u64,
            drafts: &drafts[r],
            has_draft_probs: has_q[r],
            bitmask: masks[r].as_deref(),
            device_bitmask: false,
        })
        .collect();
    // verify_sampled's own q rows; else one host q row, copied to every q row (its contents do
    // not change the work there: drafts are uniform tokens).
    let mut q_dev = stream.alloc_zeros::<f32>(q_rows.max(1) * vocab)?;
    if sampled {
        stream.memcpy_htod(&sampled_q, &mut q_dev.slice_mut(0..q_rows * vocab))?;
    } else {
        let q_host = q_row(rng, vocab);
        for i in 0..q_rows {
            stream.memcpy_htod(&q_host, &mut q_dev.slice_mut(i * vocab..(i + 1) * vocab))?;
        }
    }
    verifier.upload_verify(&requests)?;
    let mut graphs: Vec<VerifyGraph> = Vec::new();
    for set in &sets {
        let q = DraftProbs::f32(&q_dev, q_rows, vocab);
        // SAFETY: the logits sets and q rows live until the end of this function, after the last
        // replay.
        graphs.push(unsafe { verifier.capture_verify(&DeviceLogits::f32(set, rows, vocab), Some(&q), rows) }?);
    }
    let timing = time_replays(&stream, flush, 10, replays, |i| Ok(verifier.replay(&graphs[i % graphs.len()])?))?;
    // One more replay from a fresh upload (which zeroes the skip count), read back, so a
    // kernel fault surfaces here rather than in the next cell.
    verifier.upload_verify(&requests)?;
    verifier.replay(&graphs[0])?;
    let skipped = verifier.skipped_rows()?;
    let outs = verifier.read_verify_outputs()?;
    if sampled {
        let accepted: usize = outs.iter().map(|o| o.accepted).sum();
        eprintln!("verify_sampled V={vocab} B={batch}: {:.2} of 4 drafts accepted on average", accepted as f64 / batch.max(1) as f64);
    }
    if all_accepted {
        let short = outs.iter().filter(|o| o.accepted != 4).count();
        if short > 0 {
            eprintln!("verify_accepted V={vocab} B={batch}: {short} requests accepted fewer than 4 drafts");
        }
    }
    let bytes = ((rows + q_rows) * vocab * 4 + mask_rows * words * 4 + penalty_rows * vocab * 4) as f64;
    Ok(VerifyMeasured { timing, bytes, rows, skipped })
}
