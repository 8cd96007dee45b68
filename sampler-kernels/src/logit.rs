//! The per-token prologue: raw logit → processed logit `x`, one function for host and device.
//!
//! Order (docs/SEMANTICS.md §2): NaN → -inf, bitmask, repetition penalty, frequency/presence
//! penalty, logit bias, temperature, NaN → -inf again, `-0.0` → `+0.0`. Each step is one IEEE
//! f32 operation rounded to nearest; nothing is fused, so both sides get the same bits.

use crate::keys::{canonical, from_ordered_bits, ordered_bits};

/// Per-row settings the prologue needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogitParams {
    /// Repetition penalty `r > 0`; 1 disables.
    pub repetition: f32,
    /// Frequency penalty per output occurrence.
    pub frequency: f32,
    /// Presence penalty for any output occurrence.
    pub presence: f32,
    /// Temperature; 0 means greedy (no scaling).
    pub temperature: f32,
}

impl LogitParams {
    /// Neutral penalties at temperature `t`.
    pub const fn neutral(temperature: f32) -> Self {
        Self {
            repetition: 1.0,
            frequency: 0.0,
            presence: 0.0,
            temperature,
        }
    }
}

/// Words per row of an XGrammar bitmask for `vocab` tokens: `ceil(vocab / 32)`.
#[inline]
pub fn bitmask_words(vocab: u32) -> u32 {
    vocab.div_ceil(32)
}

/// XGrammar layout: token `t` lives in word `t >> 5`, bit `t & 31` (LSB first); 1 = allowed.
#[inline]
pub fn bitmask_allows(word: i32, token: u32) -> bool {
    ((word as u32) >> (token & 31)) & 1 == 1
}

/// Exact bf16 → f32.
#[inline]
pub fn widen_bf16(bits: u16) -> f32 {
    f32::from_bits((bits as u32) << 16)
}

/// Exact IEEE binary16 → f32 (subnormals, infinities and NaN payloads included).
#[inline]
pub fn widen_f16(bits: u16) -> f32 {
    let sign = ((bits as u32) & 0x8000) << 16;
    let exp = ((bits >> 10) & 0x1f) as u32;
    let man = (bits & 0x03ff) as u32;
    if exp == 0x1f {
        return f32::from_bits(sign | 0x7f80_0000 | (man << 13));
    }
    if exp == 0 {
        // Zero or subnormal: man * 2^-24, exact in f32.
        let mag = (man as f32) * (1.0 / 16_777_216.0);
        return f32::from_bits(sign | mag.to_bits());
    }
    f32::from_bits(sign | ((exp + 112) << 23) | (man << 13))
}

/// The prologue for one token. `allowed`: bitmask bit (true when the row has no mask);
/// `seen`: in the prompt or `count > 0`; `count`: occurrences in the output so far;
/// `bias`: this token's logit bias (0 when none).
///
/// Equal, bit for bit, to `temper(process_untempered(..), p.temperature)`: the GPU's stage 1
/// selects on the untempered value and tempers only the tokens that can still matter.
#[inline]
pub fn process_logit(
    raw: f32,
    allowed: bool,
    seen: bool,
    count: u32,
    bias: f32,
    p: &LogitParams,
) -> f32 {
    temper(process_untempered(raw, allowed, seen, count, bias, p), p.temperature)
}

/// Steps 1–5 of the prologue (docs/SEMANTICS.md §2), then NaN → `-inf` and `-0` → `+0`.
#[inline]
pub fn process_untempered(
    raw: f32,
    allowed: bool,
    seen: bool,
    count: u32,
    bias: f32,
    p: &LogitParams,
) -> f32 {
    process_untempered_with(raw, allowed, seen, count, bias, p, || 1.0 / p.repetition)
}

/// [`process_untempered`] with the reciprocal of the repetition penalty, `1 / p.repetition`,
/// from `inverse_repetition`, which a caller may compute once per row: a division per token
/// is a subroutine on the GPU, and the compiler did not always hoist it out of the token loops.
/// A closure, so that `process_untempered` still divides only where a penalty applies (its
/// callers' code stays as it was measured).
#[inline]
pub fn process_untempered_with<R: Fn() -> f32>(
    raw: f32,
    allowed: bool,
    seen: bool,
    count: u32,
    bias: f32,
    p: &LogitParams,
    inverse_repetition: R,
) -> f32 {
    if raw.is_nan() || !allowed {
        return f32::NEG_INFINITY;
    }
    let mut x = raw;
    if seen && p.repetition != 1.0 {
        // A multiply by the reciprocal, not a division, as in `temper`.
        x = if x > 0.0 {
            x * inverse_repetition()
        } else {
            x * p.repetition
        };
    }
    if count > 0 {
        let mut t = p.frequency * (count as f32);
        t += p.presence;
        x -= t;
    }
    x += bias;
    if x.is_nan() {
        return f32::NEG_INFINITY;
    }
    canonical(x)
}

/// [`process_untempered_with`] as selects, with the reciprocal `1 / p.repetition` given: the
/// same operations in the same order, so the same bits (tested), but no early return, so a
/// thread's eight tokens need no branch and reconvergence point each (with one, they had
/// eight). Verification's first pass takes it for rows with a bias, bitmask or penalties.
#[inline(always)]
pub fn process_untempered_selects(
    raw: f32,
    allowed: bool,
    seen: bool,
    count: u32,
    bias: f32,
    p: &LogitParams,
    inverse_repetition: f32,
) -> f32 {
    let factor = if raw > 0.0 { inverse_repetition } else { p.repetition };
    let x = if seen && p.repetition != 1.0 { raw * factor } else { raw };
    let mut t = p.frequency * (count as f32);
    t += p.presence;
    let x = if count > 0 { x - t } else { x };
    // NaN (a NaN logit's too) → -inf, then -0 → +0, as `temper_by` does: no branch.
    let x = (x + bias).max(f32::NEG_INFINITY) + 0.0;
    if allowed {
        x
    } else {
        f32::NEG_INFINITY
    }
}

/// A penalty count word after `times` more outputs of its token: the low 31 bits count and
/// stop at `0x7fff_ffff`, the top bit is kept. Equal to `times` single increments, each skipped
/// once the count is full (tested).
#[inline]
pub fn saturating_count_add(old: u32, times: u32) -> u32 {
    let count = old & 0x7fff_ffff;
    let room = 0x7fff_ffff - count;
    (old & 0x8000_0000) | (count + if times < room { times } else { room })
}

/// [`process_untempered`] for a token with no mask, penalty or bias (NaN → `-inf`, `-0` →
/// `+0`): [`temper_by`] at scale 1, which does exactly that in two instructions on the GPU (the
/// multiply by 1 folds away). Stage 1 takes it for every token of a plain row.
#[inline]
pub fn plain_untempered(raw: f32) -> f32 {
    temper_by(raw, 1.0)
}

/// Steps 6–8: multiply by `1 / t` (greedy rows, `t <= 0`, keep `y`), NaN → `-inf`, `-0` →
/// `+0`. Non-decreasing in `y` for a fixed `t`, so selection may happen before it. A multiply,
/// not a division: on the GPU a division is a subroutine with a slow path, and stage 1's mass
/// scan and the exact pass take this for every token.
#[inline]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN temperature must take the greedy branch
pub fn temper(y: f32, t: f32) -> f32 {
    if !(t > 0.0) {
        return y;
    }
    temper_by(y, 1.0 / t)
}

/// The factor [`temper_by`] takes for a row at temperature `t`: `1 / t` for a random row, 1 for
/// a greedy one. Computed once per row.
#[inline]
pub fn temper_scale(t: f32) -> f32 {
    if t > 0.0 {
        1.0 / t
    } else {
        1.0
    }
}

/// [`temper`] with the row's [`temper_scale`] computed once: equal to `temper(y, t)` for every
/// `y` that [`process_untempered`] returns (never NaN, never `-0`), greedy rows included.
#[inline]
pub fn temper_by(y: f32, scale: f32) -> f32 {
    // Branch-free, three instructions on the GPU (`max.f32` returns the operand that is not
    // NaN; `-0 + 0 = +0`): stage 1's mass scan takes it for every token.
    (y * scale).max(f32::NEG_INFINITY) + 0.0
}

/// A value `g` such that every `y < g` has `temper(y, t) < v`: stage 1's cheap filter, which
/// skips tempering the tokens that cannot reach the candidate threshold `v`. Conservative
/// (8 ulps below `v · t`); `-inf` (filter nothing) where that bound would not be safe.
#[inline]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN temperature must take the greedy branch
pub fn temper_floor(v: f32, t: f32) -> f32 {
    if !(t > 0.0) {
        return v; // greedy rows: temper is the identity
    }
    let g = v * t;
    // Near zero ulps stop being relative and the margin argument fails; beyond f32 range it
    // is meaningless. Neither happens for logits worth selecting, so filter nothing there.
    if !(g.is_finite() && (g >= 1.0e-30 || g <= -1.0e-30)) {
        return f32::NEG_INFINITY;
    }
    from_ordered_bits(ordered_bits(g).saturating_sub(8))
}

/// A value `g` such that no finite `y >= g` has `temper(y, t) == -inf`; only `t < 1` can
/// overflow a finite `y` to `-inf`. Stage 1 sends finite `y < g` through the exact path.
#[inline]
#[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN temperature must take the greedy branch
pub fn temper_overflow_floor(t: f32) -> f32 {
    if !(t > 0.0) || t >= 1.0 {
        return f32::NEG_INFINITY;
    }
    let g = -f32::MAX * t;
    from_ordered_bits(ordered_bits(g).saturating_add(8))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random f32 bit patterns plus the values where rounding and overflow bite.
    fn awkward_values(seed: u64, n: usize) -> std::vec::Vec<f32> {
        let mut v = std::vec![0.0, -0.0, 1.0, -1.0, f32::MAX, -f32::MAX, f32::MIN_POSITIVE, 1.0e-40, -1.0e-40,
            f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 3.0e38, -3.0e38, 1.0e-30, -1.0e-30];
        let mut s = seed;
        for _ in 0..n {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let bits = s as u32;
            // Half raw bit patterns, half logit-like magnitudes.
            v.push(if s >> 63 == 0 { f32::from_bits(bits) } else { ((bits >> 8) as f32 / 16_777_216.0 - 0.5) * 60.0 });
        }
        v
    }

    /// `temper` is one multiply by the rounded reciprocal (then NaN → -inf, -0 → +0), and
    /// `temper_by` with the row's scale gives the same for every value the prologue returns.
    #[test]
    fn temper_is_a_multiply_by_the_reciprocal() {
        // `!(t > 0.0)` on purpose: a NaN temperature takes this branch too.
        #[allow(clippy::neg_cmp_op_on_partial_ord)]
        let plain = |y: f32, t: f32| {
            if !(t > 0.0) {
                return y;
            }
            let x = y * (1.0 / t);
            if x.is_nan() {
                f32::NEG_INFINITY
            } else {
                crate::keys::canonical(x)
            }
        };
        let ys = awkward_values(0x7e3, 4000);
        let temps = [0.0f32, -1.0, f32::NAN, 0.7, 1.0, 1.5, 1.0e-20, 1.0e-40, 40.0, 3.0e38, f32::INFINITY, f32::MIN_POSITIVE];
        let params = LogitParams::neutral(1.0);
        for &t in &temps {
            for &y in &ys {
                assert_eq!(temper(y, t).to_bits(), plain(y, t).to_bits(), "y {y:e} t {t:e}");
                let processed = process_untempered(y, true, false, 0, 0.0, &params);
                assert_eq!(temper_by(processed, temper_scale(t)).to_bits(), temper(processed, t).to_bits(), "y {y:e} t {t:e}");
            }
        }
    }

    /// `plain_untempered` is the prologue of a token with no mask, penalty or bias; and the
    /// kernels that temper a plain row's raw logits directly (stage 1's mass scan,
    /// verification) may: that prologue changes nothing `temper_by` does not do itself.
    #[test]
    fn plain_prologue_shortcuts_match_the_prologue() {
        let raws = awkward_values(0xab5, 4000);
        let params = [LogitParams::neutral(1.0), LogitParams { repetition: 1.3, frequency: 0.4, presence: 0.25, temperature: 0.7 }];
        let scales = [1.0f32, 1.0 / 0.7, 1.0 / 1.5, 0.0, 1.0e20, 3.0e38, f32::INFINITY, f32::MIN_POSITIVE, 2.5e-39];
        for params in &params {
            for &raw in &raws {
                let plain = process_untempered(raw, true, false, 0, 0.0, params);
                assert_eq!(plain_untempered(raw).to_bits(), plain.to_bits(), "raw {raw:e}");
                for &scale in &scales {
                    assert_eq!(temper_by(raw, scale).to_bits(), temper_by(plain, scale).to_bits(), "raw {raw:e} scale {scale:e}");
                }
            }
        }
    }

    #[test]
    fn count_adds_saturate_as_single_increments() {
        for old in [0u32, 1, 5, 0x7fff_fffd, 0x7fff_ffff, 0x8000_0000, 0x8000_0003, 0xffff_fffe, 0xffff_ffff] {
            for times in 0u32..10 {
                let mut one_at_a_time = old;
                for _ in 0..times {
                    if one_at_a_time & 0x7fff_ffff != 0x7fff_ffff {
                        one_at_a_time += 1;
                    }
                }
                assert_eq!(saturating_count_add(old, times), one_at_a_time, "old {old:#x} times {times}");
            }
        }
    }

    #[test]
    fn split_prologue_equals_process_logit() {
        let ys = awkward_values(0x5eed, 4000);
        let temps = [0.0f32, -1.0, f32::NAN, 0.7, 1.0, 1.5, 0.05, 3.0e-3, 40.0, 1.0e-20];
        for (&t, repetition) in temps.iter().flat_map(|t| [(t, 1.3f32), (t, 1.0), (t, 0.8)]) {
            let params = LogitParams { repetition, frequency: 0.4, presence: 0.25, temperature: t };
            for (i, &raw) in ys.iter().enumerate() {
                let (seen, count, bias) = (i % 3 == 0, (i % 5) as u32, if i % 7 == 0 { -2.5 } else { 0.0 });
                let whole = process_logit(raw, i % 11 != 0, seen, count, bias, &params);
                let split = temper(process_untempered(raw, i % 11 != 0, seen, count, bias, &params), t);
                assert_eq!(whole.to_bits(), split.to_bits(), "raw {raw:e} t {t}");
                // The kernels' per-tile form: both reciprocals computed once per row.
                let inverse = 1.0 / params.repetition;
                let hoisted = process_untempered_with(raw, i % 11 != 0, seen, count, bias, &params, || inverse);
                assert_eq!(whole.to_bits(), temper_by(hoisted, temper_scale(t)).to_bits(), "raw {raw:e} t {t}");
                let selects = process_untempered_selects(raw, i % 11 != 0, seen, count, bias, &params, inverse);
                assert_eq!(hoisted.to_bits(), selects.to_bits(), "raw {raw:e} t {t}: select form");
            }
        }
    }

    #[test]
    fn temper_floors_never_drop_a_token_that_reaches_the_threshold() {
        let ys = awkward_values(0xf1007, 20_000);
        let temps = [0.7f32, 1.0, 1.5, 0.05, 3.0e-3, 40.0, 0.999_999_9];
        let mut filtered = 0usize;
        for &t in &temps {
            let neg = temper_overflow_floor(t);
            for (i, &v) in ys.iter().enumerate() {
                if v.is_nan() || v == f32::NEG_INFINITY {
                    continue;
                }
                let g = temper_floor(v, t);
                // Probe y at and around the floor and at a random value.
                let near = [g, from_ordered_bits(ordered_bits(g).wrapping_sub(1)), ys[(i * 7 + 3) % ys.len()]];
                for &y in &near {
                    if y.is_nan() {
                        continue;
                    }
                    if y < g {
                        filtered += 1;
                        assert!(temper(y, t) < v, "y {y:e} < floor {g:e} but temper {:e} >= v {v:e} (t {t})", temper(y, t));
                    }
                    if y.is_finite() && y >= neg {
                        assert!(temper(y, t) > f32::NEG_INFINITY, "y {y:e} >= overflow floor {neg:e} (t {t})");
                    }
                }
            }
        }
        assert!(filtered > 10_000, "the floors filtered almost nothing ({filtered}): the test lost its teeth");
    }

    #[test]
    fn bitmask_layout() {
        assert_eq!(bitmask_words(32), 1);
        assert_eq!(bitmask_words(33), 2);
        assert_eq!(bitmask_words(151_936), 4748);
        assert_eq!(bitmask_words(50_257), 1571);
        assert!(bitmask_allows(1, 0));
        assert!(!bitmask_allows(1, 1));
        assert!(bitmask_allows(i32::MIN, 31));
        assert!(bitmask_allows(-1, 63));
        assert!(!bitmask_allows(0, 5));
    }

    #[test]
    fn widen() {
        assert_eq!(widen_bf16(0x3f80), 1.0);
        assert_eq!(widen_bf16(0xc040), -3.0);
        assert_eq!(widen_f16(0x3c00), 1.0);
        assert_eq!(widen_f16(0xc000), -2.0);
        assert_eq!(widen_f16(0x0001), 5.960_464_5e-8);
        assert_eq!(widen_f16(0x8000).to_bits(), (-0.0f32).to_bits());
        assert_eq!(widen_f16(0x7c00), f32::INFINITY);
        assert_eq!(widen_f16(0xfc00), f32::NEG_INFINITY);
        assert!(widen_f16(0x7e00).is_nan());
        assert_eq!(widen_f16(0x7bff), 65504.0);
        assert_eq!(widen_f16(0x03ff), 6.097_555e-5);
    }

    #[test]
    fn prologue_steps() {
        let n = LogitParams::neutral(1.0);
        assert_eq!(
            process_logit(f32::NAN, true, false, 0, 0.0, &n),
            f32::NEG_INFINITY
        );
        assert_eq!(
            process_logit(5.0, false, false, 0, 0.0, &n),
            f32::NEG_INFINITY
        );
        let r = LogitParams {
            repetition: 2.0,
            ..n
        };
        assert_eq!(process_logit(3.0, true, true, 0, 0.0, &r), 1.5);
        assert_eq!(process_logit(-3.0, true, true, 0, 0.0, &r), -6.0);
        assert_eq!(process_logit(3.0, true, false, 0, 0.0, &r), 3.0);
        let fp = LogitParams {
            frequency: 0.5,
            presence: 1.0,
            ..n
        };
        assert_eq!(process_logit(3.0, true, true, 4, 0.0, &fp), 0.0);
        assert_eq!(process_logit(-1.0, true, true, 2, 0.25, &fp), -2.75);
        let t = LogitParams {
            temperature: 0.5,
            ..fp
        };
        assert_eq!(process_logit(1.0, true, false, 0, 1.0, &t), 4.0);
        // -0.0 is canonicalised; inf - inf becomes -inf.
        assert_eq!(process_logit(-0.0, true, false, 0, 0.0, &n).to_bits(), 0);
        let big = LogitParams {
            frequency: f32::MAX,
            ..n
        };
        assert_eq!(
            process_logit(f32::INFINITY, true, true, 2, 0.0, &big),
            f32::NEG_INFINITY
        );
        // Greedy: no scaling.
        assert_eq!(
            process_logit(3.0, true, false, 0, 0.0, &LogitParams::neutral(0.0)),
            3.0
        );
    }
}
