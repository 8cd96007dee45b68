//! Top-k alone on the CPU: the definition that `GpuTopK` must match exactly
//! (docs/SEMANTICS.md §11), and the checks both share.
//!
//! Straightforward on purpose: widen the row, key every token with the shared
//! `sampler_kernels::topk::topk_key`, select and sort. The GPU path computes the same keys, so
//! equality is bit for bit, values and indices.

use sampler_kernels::abi::{MAX_VOCAB, TOPK_MAX_K};
use sampler_kernels::keys::{key_index, key_value};
use sampler_kernels::topk::topk_key;

use crate::error::{Error, Field, Result};
use crate::logits::HostLogits;

/// Top-k of a batch: `rows × k` values and indices, row-major, each row in key order (value
/// descending, ties to the lower index).
#[derive(Clone, Debug, PartialEq)]
pub struct TopK {
    pub rows: usize,
    pub k: usize,
    /// Widened values; NaN inputs appear as `-inf`, `-0.0` as `+0.0`.
    pub values: Vec<f32>,
    /// Token indices within the row.
    pub indices: Vec<i32>,
}

impl TopK {
    /// Row `r`'s values and indices (empty slices out of range).
    pub fn row(&self, r: usize) -> (&[f32], &[i32]) {
        let range = r.saturating_mul(self.k)..r.saturating_mul(self.k).saturating_add(self.k);
        (self.values.get(range.clone()).unwrap_or(&[]), self.indices.get(range).unwrap_or(&[]))
    }
}

/// Checks `1 <= k <= min(TOPK_MAX_K, vocab)` and `vocab <= MAX_VOCAB`.
pub fn check_k(k: usize, vocab: usize) -> Result<()> {
    if vocab == 0 || vocab > MAX_VOCAB as usize {
        return Err(Error::InvalidSetting {
            request: None,
            field: Field::Logits,
            reason: format!("vocab {vocab} is not in 1..=2^20"),
        });
    }
    if k == 0 || k > TOPK_MAX_K as usize || k > vocab {
        return Err(Error::InvalidSetting {
            request: None,
            field: Field::TopK,
            reason: format!("k {k} is not in 1..={}", vocab.min(TOPK_MAX_K as usize)),
        });
    }
    Ok(())
}

/// The `k` largest logits of every row of `logits`, with their indices, in key order.
pub fn top_k(logits: &HostLogits<'_>, k: usize) -> Result<TopK> {
    check_k(k, logits.vocab())?;
    let rows = logits.rows();
    let mut out = TopK { rows, k, values: Vec::with_capacity(rows * k), indices: Vec::with_capacity(rows * k) };
    let mut row = Vec::new();
    let mut keys = Vec::new();
    for r in 0..rows {
        logits.row_f32(r, &mut row);
        keys.clear();
        keys.extend(row.iter().enumerate().map(|(i, &x)| topk_key(x, i as u32)));
        // Largest first: partition at k, then sort the k winners.
        keys.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
        keys.truncate(k);
        keys.sort_unstable_by(|a, b| b.cmp(a));
        out.values.extend(keys.iter().map(|&key| key_value(key)));
        out.indices.extend(keys.iter().map(|&key| key_index(key) as i32));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logits::LogitsData;
    use half::{bf16, f16};
    use rand_xoshiro::rand_core::Rng;
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn rng() -> Xoshiro256PlusPlus {
        crate::test_rng("topk tests")
    }

    /// A row with ties, NaN, ±inf, ±0 and ordinary values.
    fn nasty_row(rng: &mut impl Rng, vocab: usize) -> Vec<f32> {
        (0..vocab)
            .map(|_| match rng.next_u32() % 16 {
                0 => f32::NAN,
                1 => f32::INFINITY,
                2 => f32::NEG_INFINITY,
                3 => -0.0,
                4 => 0.0,
                5..=7 => (rng.next_u32() % 5) as f32, // many ties
                _ => (rng.next_u32() as i32) as f32 * 1e-6,
            })
            .collect()
    }

    /// Independent restatement: sort (value desc, index asc) with NaN as -inf, -0 as +0.
    fn naive(row: &[f32], k: usize) -> (Vec<f32>, Vec<i32>) {
        let clean = |x: f32| if x.is_nan() { f32::NEG_INFINITY } else if x == 0.0 { 0.0 } else { x };
        let mut order: Vec<usize> = (0..row.len()).collect();
        order.sort_by(|&a, &b| clean(row[b]).partial_cmp(&clean(row[a])).unwrap_or(std::cmp::Ordering::Equal).then(a.cmp(&b)));
        order.truncate(k);
        (order.iter().map(|&i| clean(row[i])).collect(), order.iter().map(|&i| i as i32).collect())
    }

    #[test]
    fn equals_a_full_sort_on_nasty_rows() {
        let mut rng = rng();
        for &(vocab, rows, stride) in &[(1usize, 2usize, 1usize), (7, 3, 9), (300, 4, 300), (5000, 2, 5003)] {
            let data: Vec<f32> = (0..(rows - 1) * stride + vocab).map(|_| 0.0).collect();
            let mut data = data;
            for r in 0..rows {
                let row = nasty_row(&mut rng, vocab);
                data[r * stride..r * stride + vocab].copy_from_slice(&row);
            }
            let logits = HostLogits::new(LogitsData::F32(&data), rows, vocab, stride).expect("logits");
            for k in [1, (vocab / 2 + 1).min(1024), vocab.min(1024)] {
                let got = top_k(&logits, k).expect("top_k");
                for r in 0..rows {
                    let (want_v, want_i) = naive(&data[r * stride..r * stride + vocab], k);
                    let (v, i) = got.row(r);
                    assert_eq!(i, &want_i[..], "V={vocab} k={k} row {r}");
                    let bits = |s: &[f32]| s.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(v), bits(&want_v), "V={vocab} k={k} row {r}");
                }
            }
        }
    }

    #[test]
    fn ties_go_to_the_lower_index_and_nan_is_negative_infinity() {
        let data = [1.0, f32::NAN, 1.0, f32::NEG_INFINITY, -0.0, f32::INFINITY, 0.0];
        let got = top_k(&HostLogits::f32(&data, 1, 7).expect("logits"), 7).expect("top_k");
        assert_eq!(got.indices, vec![5, 0, 2, 4, 6, 1, 3]);
        assert_eq!(got.values[3].to_bits(), 0.0f32.to_bits());
        assert_eq!(got.values[5], f32::NEG_INFINITY);
    }

    #[test]
    fn half_inputs_are_widened_exactly() {
        let mut rng = rng();
        let vocab = 2000;
        let src: Vec<f32> = (0..vocab).map(|_| ((rng.next_u32() % 20_000) as f32 - 10_000.0) * 1e-3).collect();
        let b: Vec<bf16> = src.iter().map(|&x| bf16::from_f32(x)).collect();
        let h: Vec<f16> = src.iter().map(|&x| f16::from_f32(x)).collect();
        for (data, widened) in [
            (LogitsData::Bf16(&b), b.iter().map(|v| v.to_f32()).collect::<Vec<_>>()),
            (LogitsData::F16(&h), h.iter().map(|v| v.to_f32()).collect::<Vec<_>>()),
        ] {
            let got = top_k(&HostLogits::new(data, 1, vocab, vocab).expect("logits"), 100).expect("top_k");
            let (want_v, want_i) = naive(&widened, 100);
            assert_eq!(got.indices, want_i);
            assert_eq!(got.values, want_v);
        }
    }

    #[test]
    fn bad_k_and_vocab_are_typed_errors() {
        let data = vec![0.0f32; 2048];
        let logits = HostLogits::f32(&data, 1, 2048).expect("logits");
        for k in [0, 1025, 5000] {
            assert!(matches!(top_k(&logits, k), Err(Error::InvalidSetting { field: Field::TopK, .. })), "k {k}");
        }
        let small = HostLogits::f32(&data[..10], 1, 10).expect("logits");
        assert!(matches!(top_k(&small, 11), Err(Error::InvalidSetting { field: Field::TopK, .. })));
        assert!(top_k(&small, 10).is_ok());
        assert!(matches!(check_k(1, MAX_VOCAB as usize + 1), Err(Error::InvalidSetting { field: Field::Logits, .. })));
    }
}
