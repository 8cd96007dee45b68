//! Shared helpers of the integration tests: GPU discovery with a visible SKIP, and fresh
//! random inputs.
//!
//! GPU tests call [`gpu_or_skip`]. Without a device they print `SKIP (no CUDA device)` on the
//! real stderr (libtest's capture would hide a `println!`) and return `None`; with
//! `REQUIRE_GPU=1` they panic instead, so the bundle's run on a GPU machine cannot pass by
//! skipping.
//!
//! Under `SONIC_SANITIZE=1` (set by `run.sh sanitize`) the GPU tests pick their reduced sizes
//! through [`sized`]: compute-sanitizer slows kernels by 10–100×, so they run fewer rows, steps
//! and replays, but every code path the full size reaches (dtype, feature, vocab size, exact
//! pass, graph replay, one-chunk and merged top-k, edge rows) and every assertion stays.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sampler_host::cuda::GpuDevice;
use sampler_host::Error;

/// Opens GPU 0, or reports a skip (or a failure under `REQUIRE_GPU=1`) when there is none.
pub fn gpu_or_skip(test: &str) -> Option<GpuDevice> {
    match GpuDevice::open(0) {
        Ok(device) => Some(device),
        Err(Error::NoCudaDevice { detail }) => {
            if std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("{test}: REQUIRE_GPU=1 but no CUDA device: {detail}");
            }
            let _ = writeln!(std::io::stderr(), "SKIP (no CUDA device): {test}");
            None
        }
        Err(other) => panic!("{test}: GPU present but unusable: {other}"),
    }
}

/// True under `SONIC_SANITIZE=1`: the GPU tests run their reduced sizes (see the crate docs).
pub fn sanitize_mode() -> bool {
    std::env::var("SONIC_SANITIZE").is_ok_and(|v| v == "1")
}

/// `full` in a normal run, `reduced` under `SONIC_SANITIZE=1`. Only sizes go through here
/// (rows, steps, replays, lists of cases), never what a test checks.
pub fn sized<T>(full: T, reduced: T) -> T {
    if sanitize_mode() {
        reduced
    } else {
        full
    }
}

/// A generator seeded from the clock, with the seed printed so a failure can be replayed by
/// setting `SONIC_TEST_SEED`.
pub fn fresh_rng(test: &str) -> Xoshiro256PlusPlus {
    let seed = std::env::var("SONIC_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0x5eed)
    });
    let mode = if sanitize_mode() { " (reduced sizes: SONIC_SANITIZE=1)" } else { "" };
    let _ = writeln!(std::io::stderr(), "{test}: SONIC_TEST_SEED={seed}{mode}");
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// `n` random `u32`, none forced to zero.
pub fn random_u32s(rng: &mut impl Rng, n: usize) -> Vec<u32> {
    (0..n).map(|_| rng.next_u32()).collect()
}

/// Uniform in (0, 1).
pub fn unit(rng: &mut impl Rng) -> f64 {
    ((rng.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// `N(0, sigma²)` by Box–Muller.
pub fn normal(rng: &mut impl Rng, sigma: f64) -> f32 {
    let (a, b) = (unit(rng), unit(rng));
    (sigma * (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()) as f32
}

/// Shapes of logit rows the GPU tests draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowShape {
    /// N(0, 2) plus about 20 tokens boosted by +8..+14: LLM-like.
    Peaked,
    /// N(0, 0.5): high entropy, wide nuclei, forces the exact pass.
    Flat,
}

/// One row of logits of the given shape.
pub fn logit_row(rng: &mut impl Rng, shape: RowShape, vocab: usize) -> Vec<f32> {
    match shape {
        RowShape::Peaked => {
            let mut row: Vec<f32> = (0..vocab).map(|_| normal(rng, 2.0)).collect();
            for _ in 0..vocab.min(20) {
                let t = (rng.next_u64() % vocab as u64) as usize;
                row[t] += 8.0 + 6.0 * unit(rng) as f32;
            }
            row
        }
        RowShape::Flat => (0..vocab).map(|_| normal(rng, 0.5)).collect(),
    }
}

/// `rng` reduced to `0..n`.
pub fn below(rng: &mut impl Rng, n: u64) -> u64 {
    rng.next_u64() % n
}

/// Random valid settings covering every feature, on and off, including top-k above the tile
/// lists and wide nuclei.
pub fn mixed_params(rng: &mut impl Rng, vocab: usize) -> sampler_host::settings::SamplingParams {
    use sampler_host::settings::SamplingParams;
    let mut p = if below(rng, 4) == 0 {
        SamplingParams::greedy()
    } else {
        let t = 0.3 + unit(rng) as f32 * 1.2;
        SamplingParams::random(t, rng.next_u64())
    };
    match below(rng, 5) {
        0 | 1 => {}
        2 | 3 => p.top_k = 1 + below(rng, 128) as u32,
        _ => p.top_k = 129 + below(rng, 4000) as u32,
    }
    if below(rng, 5) < 3 {
        p.top_p = 0.5 + 0.49 * unit(rng) as f32;
    }
    if below(rng, 3) == 0 {
        p.min_p = 0.001 + 0.2 * unit(rng) as f32;
    }
    if below(rng, 2) == 0 {
        p.repetition_penalty = 0.8 + 0.7 * unit(rng) as f32;
        p.frequency_penalty = unit(rng) as f32 - 0.3;
        p.presence_penalty = unit(rng) as f32 - 0.3;
    }
    if below(rng, 3) == 0 {
        let n = 1 + below(rng, 30) as usize;
        let mut ids: Vec<u32> = (0..n).map(|_| below(rng, vocab as u64) as u32).collect();
        ids.sort_unstable();
        ids.dedup();
        p.logit_bias = ids.into_iter().map(|t| (t, (unit(rng) as f32 - 0.5) * 20.0)).collect();
    }
    if below(rng, 3) == 0 {
        p.logprobs = true;
        p.top_logprobs = below(rng, 21) as u32;
    }
    p
}

/// A random XGrammar bitmask row allowing each token with probability `allow`.
pub fn bitmask_row(rng: &mut impl Rng, vocab: usize, allow: f64) -> Vec<i32> {
    let words = vocab.div_ceil(32);
    (0..words)
        .map(|_| {
            let mut w = 0u32;
            for b in 0..32 {
                if unit(rng) < allow {
                    w |= 1 << b;
                }
            }
            w as i32
        })
        .collect()
}

/// One batch row per mask, request `i` for the `i`-th, with its grammar bitmask where it has one.
pub fn rows_with_masks(masks: &[Option<Vec<i32>>]) -> Vec<sampler_host::backend::BatchRow<'_>> {
    use sampler_host::backend::BatchRow;
    masks
        .iter()
        .enumerate()
        .map(|(i, m)| match m {
            Some(m) => BatchRow::with_bitmask(i as u64, m),
            None => BatchRow::new(i as u64),
        })
        .collect()
}

/// Grammar bitmask rows as a caller lays them out in a device buffer (`DeviceBitmask`): row `i`
/// starts at word `i · stride` and holds `rows[i]`; a row without a mask, and the padding past
/// each mask, are zeros, which allow no token, so a row that read a mask it did not ask for
/// would lose its token.
pub fn pitched_mask_words(rows: &[Option<&[i32]>], stride: usize) -> Vec<i32> {
    let mut words = vec![0i32; rows.len() * stride];
    for (r, mask) in rows.iter().enumerate() {
        if let Some(mask) = mask {
            words[r * stride..][..mask.len()].copy_from_slice(mask);
        }
    }
    words
}

/// Random prompt tokens.
pub fn prompt(rng: &mut impl Rng, vocab: usize) -> Vec<u32> {
    let n = (rng.next_u64() % 64) as usize;
    (0..n).map(|_| (rng.next_u64() % vocab as u64) as u32).collect()
}

/// How far GPU and reference log-probabilities may differ (docs/SEMANTICS.md: not bitwise).
pub const LOGPROB_TOLERANCE: f32 = 1e-3;

/// GPU output against the CPU reference: tokens and statuses exactly, log-probabilities within
/// [`LOGPROB_TOLERANCE`]. Returns a description of the first difference.
pub fn compare_outputs(
    gpu: &sampler_host::backend::RowOutput,
    cpu: &sampler_host::backend::RowOutput,
) -> Option<String> {
    if gpu.token != cpu.token || gpu.status != cpu.status {
        return Some(format!("token/status gpu {}/{} cpu {}/{}", gpu.token, gpu.status, cpu.token, cpu.status));
    }
    let close = |a: f32, b: f32| a == b || (a - b).abs() <= LOGPROB_TOLERANCE;
    match (gpu.logprob, cpu.logprob) {
        (None, None) => {}
        (Some(a), Some(b)) if close(a, b) => {}
        (a, b) => return Some(format!("logprob gpu {a:?} cpu {b:?}")),
    }
    if gpu.top_logprobs.len() != cpu.top_logprobs.len() {
        return Some(format!("top-logprob count gpu {} cpu {}", gpu.top_logprobs.len(), cpu.top_logprobs.len()));
    }
    for (g, c) in gpu.top_logprobs.iter().zip(&cpu.top_logprobs) {
        if g.0 != c.0 || !close(g.1, c.1) {
            return Some(format!("top logprob gpu {g:?} cpu {c:?}"));
        }
    }
    None
}

/// A verification output against the reference's: accepted count, tokens and status exactly,
/// log-probabilities within [`LOGPROB_TOLERANCE`]. Returns a description of the first difference.
pub fn compare_verify_outputs(
    gpu: &sampler_host::verify::VerifyOutput,
    cpu: &sampler_host::verify::VerifyOutput,
) -> Option<String> {
    if gpu.accepted != cpu.accepted || gpu.tokens != cpu.tokens || gpu.status != cpu.status {
        return Some(format!(
            "gpu accepted {} tokens {:?} status {}; cpu accepted {} tokens {:?} status {}",
            gpu.accepted, gpu.tokens, gpu.status, cpu.accepted, cpu.tokens, cpu.status
        ));
    }
    if gpu.logprobs.len() != cpu.logprobs.len() {
        return Some(format!("logprob count gpu {} cpu {}", gpu.logprobs.len(), cpu.logprobs.len()));
    }
    for (g, c) in gpu.logprobs.iter().zip(&cpu.logprobs) {
        if !(g == c || (g - c).abs() <= LOGPROB_TOLERANCE) {
            return Some(format!("logprobs gpu {:?} cpu {:?}", gpu.logprobs, cpu.logprobs));
        }
    }
    None
}

/// Index of a row's largest value, the lowest on ties (a plain greedy row's token: the
/// benchmark's and the soak's drafts that the target accepts). The values are not NaN.
pub fn first_argmax(x: &[f32]) -> u32 {
    (0..x.len()).fold(0, |best, i| if x[i] > x[best] { i } else { best }) as u32
}

/// `rows` rows of `vocab` logits, `row_stride` apart: 70% peaked, 30% flat (the flat ones take
/// the exact pass). The gaps between strided rows hold NaN, so a kernel that reads them is
/// caught rather than fed zeros. Each row comes from its own generator, seeded from `rng` in
/// row order, and the rows are filled on several threads: the GPU tests draw hundreds of
/// millions of values, a few seconds of a device call each on one thread. The rows do not
/// depend on the number of threads.
pub fn random_rows(rng: &mut impl Rng, rows: usize, vocab: usize, row_stride: usize) -> Vec<f32> {
    assert!(row_stride >= vocab, "row stride {row_stride} below the vocab {vocab}");
    let mut all = vec![f32::NAN; (rows.max(1) - 1) * row_stride + vocab];
    if rows == 0 {
        return all;
    }
    let plan: Vec<(RowShape, u64)> = (0..rows)
        .map(|_| (if below(rng, 10) < 7 { RowShape::Peaked } else { RowShape::Flat }, rng.next_u64()))
        .collect();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(rows);
    let per_thread = rows.div_ceil(threads);
    std::thread::scope(|scope| {
        for (run, part) in all.chunks_mut(per_thread * row_stride).zip(plan.chunks(per_thread)) {
            scope.spawn(move || {
                for (i, &(shape, seed)) in part.iter().enumerate() {
                    let mut row_rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                    run[i * row_stride..i * row_stride + vocab].copy_from_slice(&logit_row(&mut row_rng, shape, vocab));
                }
            });
        }
    });
    all
}

/// About a third of the rows get a grammar bitmask; a few of those allow almost nothing.
pub fn random_masks(rng: &mut impl Rng, rows: usize, vocab: usize) -> Vec<Option<Vec<i32>>> {
    (0..rows)
        .map(|_| match below(rng, 10) {
            0..=5 => None,
            6..=8 => {
                let allow = 0.3 + 0.69 * unit(rng);
                Some(bitmask_row(rng, vocab, allow))
            }
            _ => Some(bitmask_row(rng, vocab, 0.0005)),
        })
        .collect()
}

/// Logits in the dtype under test, rounded from f32 values: the copies a test hands the CPU
/// reference (`host`) and uploads to the device (`f32s`, or the 16-bit patterns of `bits`).
pub struct TypedRows {
    pub dtype: sampler_host::logits::LogitsDtype,
    pub f32s: Vec<f32>,
    pub bf16s: Vec<half::bf16>,
    pub f16s: Vec<half::f16>,
}

impl TypedRows {
    pub fn new(dtype: sampler_host::logits::LogitsDtype, values: Vec<f32>) -> Self {
        let bf16s = values.iter().map(|&v| half::bf16::from_f32(v)).collect();
        let f16s = values.iter().map(|&v| half::f16::from_f32(v)).collect();
        Self { dtype, f32s: values, bf16s, f16s }
    }

    /// The rows as the reference reads them (`rows` rows of `vocab`, `stride` apart).
    pub fn host(&self, rows: usize, vocab: usize, stride: usize) -> sampler_host::logits::HostLogits<'_> {
        use sampler_host::logits::{HostLogits, LogitsData, LogitsDtype};
        let data = match self.dtype {
            LogitsDtype::F32 => LogitsData::F32(&self.f32s),
            LogitsDtype::Bf16 => LogitsData::Bf16(&self.bf16s),
            LogitsDtype::F16 => LogitsData::F16(&self.f16s),
        };
        HostLogits::new(data, rows, vocab, stride).expect("host logits")
    }

    /// The 16-bit patterns of a bf16 or f16 dtype (empty for f32).
    pub fn bits(&self) -> Vec<u16> {
        use sampler_host::logits::LogitsDtype;
        match self.dtype {
            LogitsDtype::F32 => Vec::new(),
            LogitsDtype::Bf16 => self.bf16s.iter().map(|v| v.to_bits()).collect(),
            LogitsDtype::F16 => self.f16s.iter().map(|v| v.to_bits()).collect(),
        }
    }
}

/// A draft distribution close to the target's: 70% softmax of the row `x` (processed values, or
/// raw logits at T 1), 30% noise, in [0, 1], never all zero. Against `p = softmax(x)`,
/// `Σ min(p, q) ≥ 0.7`: a draft sampled from it is accepted with at least that probability
/// when `p` is the target distribution (no truncation).
pub fn draft_q_row(rng: &mut impl Rng, x: &[f32]) -> Vec<f32> {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let soft: Vec<f64> = x.iter().map(|&v| if max.is_finite() && v > f32::NEG_INFINITY { ((v - max) as f64).exp() } else { 0.0 }).collect();
    let s: f64 = soft.iter().sum::<f64>().max(f64::MIN_POSITIVE);
    let noise: Vec<f64> = (0..x.len()).map(|_| unit(rng)).collect();
    let n: f64 = noise.iter().sum();
    soft.iter().zip(&noise).map(|(a, b)| (0.7 * a / s + 0.3 * b / n) as f32).collect()
}

/// A token drawn from the weights `q` by inverse CDF.
pub fn sample_weights(rng: &mut impl Rng, q: &[f32]) -> u32 {
    let total: f64 = q.iter().map(|&v| v as f64).sum();
    let mut u = unit(rng) * total;
    for (i, &v) in q.iter().enumerate() {
        u -= v as f64;
        if u <= 0.0 {
            return i as u32;
        }
    }
    (q.len() - 1) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each mask at its row's start, zeros in unmasked rows and padding.
    #[test]
    fn pitched_mask_words_place_each_row_at_its_stride() {
        let (a, b) = ([1, 2, 3], [-4, 5, 6]);
        let words = pitched_mask_words(&[Some(&a[..]), None, Some(&b[..])], 5);
        assert_eq!(words, [1, 2, 3, 0, 0, 0, 0, 0, 0, 0, -4, 5, 6, 0, 0]);
    }

    /// `random_rows` fills row `r` with the row its own generator gives, whatever thread took
    /// it, leaves the strided gaps NaN, and mixes both shapes.
    #[test]
    fn random_rows_are_each_rows_own_draw() {
        let (rows, vocab, stride) = (37usize, 1000usize, 1003usize);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(77);
        let mut replay = rng.clone();
        let all = random_rows(&mut rng, rows, vocab, stride);
        assert_eq!(all.len(), (rows - 1) * stride + vocab);
        let mut flat = 0;
        for r in 0..rows {
            let shape = if below(&mut replay, 10) < 7 { RowShape::Peaked } else { RowShape::Flat };
            flat += (shape == RowShape::Flat) as usize;
            let mut row_rng = Xoshiro256PlusPlus::seed_from_u64(replay.next_u64());
            assert_eq!(&all[r * stride..r * stride + vocab], &logit_row(&mut row_rng, shape, vocab)[..], "row {r}");
            if r + 1 < rows {
                assert!(all[r * stride + vocab..(r + 1) * stride].iter().all(|v| v.is_nan()), "gap after row {r}");
            }
        }
        assert!(flat > 0 && flat < rows, "{flat} flat rows of {rows}");
        assert!(random_rows(&mut rng, 0, vocab, stride).iter().all(|v| v.is_nan()));
    }
}
