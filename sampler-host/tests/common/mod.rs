//! Shared helpers of the reference tests: a clock-seeded generator (seed printed, override
//! with SONIC_TEST_SEED), LLM-like rows, and a chi-square test that merges sparse bins.
#![allow(dead_code)]

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sampler_host::backend::{Backend, Batch, BatchRow, RowOutput};
use sampler_host::logits::HostLogits;
use sampler_host::reference::CpuReference;
use sampler_host::settings::SamplingParams;

pub struct TestRng(Xoshiro256PlusPlus);

/// A generator seeded from the clock (or SONIC_TEST_SEED); the seed goes to stderr, which the
/// test harness shows when the test fails.
pub fn rng(test: &str) -> TestRng {
    let seed = std::env::var("SONIC_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("{test}: SONIC_TEST_SEED={seed}");
    TestRng(Xoshiro256PlusPlus::seed_from_u64(seed))
}

impl TestRng {
    pub fn u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.u64() % n
    }
    /// Uniform in (0, 1).
    pub fn unit(&mut self) -> f64 {
        ((self.u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    pub fn normal(&mut self, sigma: f64) -> f32 {
        let (a, b) = (self.unit(), self.unit());
        (sigma * (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()) as f32
    }
    /// N(0, 2) noise with a few boosted tokens, never all zeros.
    pub fn llm_row(&mut self, vocab: usize) -> Vec<f32> {
        let mut row: Vec<f32> = (0..vocab).map(|_| self.normal(2.0)).collect();
        for j in 0..vocab.min(20) {
            let t = self.below(vocab as u64) as usize;
            row[t] += 10.0 - 0.3 * j as f32;
        }
        row
    }
    pub fn token(&mut self, vocab: usize) -> u32 {
        self.below(vocab as u64) as u32
    }
    /// Random but valid settings of every kind, greedy about one time in five.
    pub fn params(&mut self, vocab: usize) -> SamplingParams {
        let mut p = if self.below(5) == 0 {
            SamplingParams::greedy()
        } else {
            SamplingParams::random(0.3 + self.unit() as f32 * 1.5, self.u64())
        };
        if self.below(2) == 0 {
            p.top_k = 1 + self.below(300) as u32;
        }
        if self.below(2) == 0 {
            p.top_p = 0.05 + 0.9 * self.unit() as f32;
        }
        if self.below(3) == 0 {
            p.min_p = 0.2 * self.unit() as f32;
        }
        if self.below(2) == 0 {
            p.repetition_penalty = 0.8 + 0.6 * self.unit() as f32;
            p.frequency_penalty = self.unit() as f32 - 0.2;
            p.presence_penalty = self.unit() as f32 - 0.2;
        }
        if self.below(2) == 0 {
            let mut ids: Vec<u32> = (0..5).map(|_| self.token(vocab)).collect();
            ids.sort_unstable();
            ids.dedup();
            p.logit_bias = ids.into_iter().map(|t| (t, self.normal(3.0))).collect();
        }
        p
    }
    pub fn bitmask(&mut self, vocab: usize, density: f64) -> Vec<i32> {
        let words = vocab.div_ceil(32);
        let mut m = vec![0i32; words];
        for t in 0..vocab {
            if self.unit() < density {
                m[t >> 5] |= 1 << (t & 31);
            }
        }
        m
    }
}

/// Samples one request alone, once, without keeping the backend.
pub fn sample_once(
    params: SamplingParams,
    prompt: &[u32],
    row: &[f32],
    mask: Option<&[i32]>,
) -> RowOutput {
    let mut b = CpuReference::new(row.len(), 1).expect("backend");
    b.add_request(7, params, prompt).expect("add");
    let logits = HostLogits::f32(row, 1, row.len()).expect("logits");
    let batch = Batch {
        logits,
        rows: vec![BatchRow {
            request: 7,
            bitmask: mask,
            device_bitmask: false,
        }],
    };
    b.sample(&batch).expect("sample").remove(0)
}

/// Upper critical value of chi-square with `df` degrees of freedom at p = 1e-5
/// (Wilson–Hilferty).
pub fn chi2_critical(df: usize) -> f64 {
    let z = 4.265;
    let k = df as f64;
    let h = 2.0 / (9.0 * k);
    k * (1.0 - h + z * h.sqrt()).powi(3)
}

/// Chi-square statistic and degrees of freedom of `counts` against `probs` (bins expecting
/// fewer than 20 draws are merged). Panics if a zero-probability bin was hit.
pub fn chi2(counts: &[u64], probs: &[f64]) -> (f64, usize) {
    let n: u64 = counts.iter().sum();
    let mut stat = 0.0;
    let mut bins = 0usize;
    let (mut small_obs, mut small_exp) = (0u64, 0.0f64);
    for (&c, &p) in counts.iter().zip(probs) {
        if p == 0.0 {
            assert_eq!(c, 0, "a zero-probability token was drawn");
            continue;
        }
        let e = p * n as f64;
        if e < 20.0 {
            small_obs += c;
            small_exp += e;
            continue;
        }
        stat += (c as f64 - e).powi(2) / e;
        bins += 1;
    }
    if small_exp > 0.0 {
        stat += (small_obs as f64 - small_exp).powi(2) / small_exp.max(1.0);
        bins += 1;
    }
    (stat, bins.saturating_sub(1).max(1))
}

/// Fails unless `counts` fit `probs` by chi-square at the module's significance.
pub fn assert_fits(counts: &[u64], probs: &[f64], what: &str) {
    let (stat, df) = chi2(counts, probs);
    let crit = chi2_critical(df);
    assert!(stat < crit, "{what}: chi2 {stat:.1} >= {crit:.1} (df {df})");
}

/// Tilts half of the nonzero probabilities up by 1% and half down, renormalised: what a
/// statistical test must be able to tell apart from the exact distribution.
pub fn tilted(probs: &[f64]) -> Vec<f64> {
    let mut flip = false;
    let mut t: Vec<f64> = probs
        .iter()
        .map(|&p| {
            if p == 0.0 {
                return 0.0;
            }
            flip = !flip;
            p * if flip { 1.01 } else { 0.99 }
        })
        .collect();
    let s: f64 = t.iter().sum();
    t.iter_mut().for_each(|v| *v /= s);
    t
}
