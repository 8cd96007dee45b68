//! The per-token prologue: raw logit → processed logit `x`, one function for host and device.
//!
//! Order (docs/SEMANTICS.md §2): NaN → -inf, bitmask, repetition penalty, frequency/presence
//! penalty, logit bias, temperature, NaN → -inf again, `-0.0` → `+0.0`. Each step is one IEEE
//! f32 operation rounded to nearest; nothing is fused, so both sides get the same bits.

use crate::keys::canonical;

/// Per-row settings the prologue needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogitParams {
    /// Repetition penalty `r > 0`; 1 disables.
    pub repetition: f32,
    /// Frequency penalty per output occurrence.
    pub frequency: f32,
    /// Presence penalty for any output occurrence.
    pub presence: f32,
    /// Temperature; 0 means greedy (no division).
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
#[inline]
pub fn process_logit(
    raw: f32,
    allowed: bool,
    seen: bool,
    count: u32,
    bias: f32,
    p: &LogitParams,
) -> f32 {
    if raw.is_nan() || !allowed {
        return f32::NEG_INFINITY;
    }
    let mut x = raw;
    if seen && p.repetition != 1.0 {
        x = if x > 0.0 {
            x / p.repetition
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
    if p.temperature > 0.0 {
        x /= p.temperature;
    }
    if x.is_nan() {
        return f32::NEG_INFINITY;
    }
    canonical(x)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Greedy: no division.
        assert_eq!(
            process_logit(3.0, true, false, 0, 0.0, &LogitParams::neutral(0.0)),
            3.0
        );
    }
}
