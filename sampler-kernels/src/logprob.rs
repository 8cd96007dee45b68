//! Log-probabilities from the fixed-point masses, for host and device alike.
//!
//! Log-probabilities are reported, not decided on, so they are not part of the bitwise contract
//! (docs/SEMANTICS.md): the GPU must agree with the reference to 1e-3. They are still computed
//! from the exact integer mass `Z` of the row, so the only error is soft_exp's and soft_ln's.

use crate::fixed::{soft_ln, FRAC_ONE};

const _: () = assert!(1u128 << MASS_SCALE_LOG2 == FRAC_ONE as u128 * (1u128 << 52));

/// `log2` of the weight of a token at the row's ceiling: `FRAC_ONE (2^23) × BAND_SCALE[0] (2^52)`.
pub const MASS_SCALE_LOG2: i32 = 75;

/// `ln(z / 2^75)`, that is `ln Σ exp(x_j - Mc)` for a row mass `z` relative to ceiling `Mc`.
#[inline]
pub fn ln_mass(z: u128) -> f64 {
    if z == 0 {
        return f64::NEG_INFINITY;
    }
    // u128 → f64 through two u64 halves: a direct conversion would call into compiler-rt.
    let value = ((z >> 64) as u64) as f64 * 18_446_744_073_709_551_616.0 + (z as u64) as f64;
    let bits = value.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32 - 1023;
    let mantissa = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    soft_ln(mantissa as f32) as f64 + ((exponent - MASS_SCALE_LOG2) as f64) * core::f64::consts::LN_2
}

/// Log-probability of a token with processed value `x` in a finite row with ceiling `mc` and
/// `ln_z = ln_mass(Z)`: `x - Mc - ln(Z / 2^75)`.
#[inline]
pub fn token_logprob(x: f32, mc: f32, ln_z: f64) -> f32 {
    if x.is_nan() || x == f32::NEG_INFINITY {
        return f32::NEG_INFINITY;
    }
    ((x as f64 - mc as f64) - ln_z) as f32
}

/// Log-probability of a token in a row with `infinite` tokens at +inf: uniform among them.
#[inline]
pub fn infinite_row_logprob(x: f32, infinite: u32) -> f32 {
    if x == f32::INFINITY && infinite > 0 {
        -(soft_ln(infinite as f32))
    } else {
        f32::NEG_INFINITY
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed::{soft_ceil, weight};

    /// Every token's log-probability from the row's weights against the f64 softmax of `xs`
    /// (finite values), within 1e-5; returns `soft_ceil` of the maximum and `ln Z`.
    fn assert_softmax_logprobs(xs: &[f32], label: &str) -> (f32, f64) {
        let m = xs.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let mc = soft_ceil(m);
        let z: u128 = xs.iter().map(|&x| weight(x, mc)).sum();
        let lse = xs.iter().map(|&x| ((x - m) as f64).exp()).sum::<f64>().ln() + m as f64;
        let ln_z = ln_mass(z);
        for &x in xs {
            let want = x as f64 - lse;
            let got = token_logprob(x, mc, ln_z) as f64;
            assert!((got - want).abs() < 1e-5, "{label}, x {x}: got {got}, want {want}");
        }
        (mc, ln_z)
    }

    #[test]
    fn logprobs_match_f64_softmax() {
        let (mc, ln_z) = assert_softmax_logprobs(&[3.25, -1.5, 0.0, 2.999, -30.0, 7.75, 7.7], "small row");
        assert_eq!(token_logprob(f32::NEG_INFINITY, mc, ln_z), f32::NEG_INFINITY);
        assert!((infinite_row_logprob(f32::INFINITY, 4) as f64 + 4f64.ln()).abs() < 1e-6);
    }

    /// Rows of huge values, where f32 values are halves (`2^22` to `2^23`) or integers, on
    /// either side of zero: the mass of the weights gives the f64 softmax's log-probabilities
    /// (until session 46 a half-integer band took the weight of the band below it, and these
    /// were up to about 0.35 nat low).
    #[test]
    fn logprobs_of_huge_rows_match_f64_softmax() {
        let mut s = 0x9e37_79b9u32;
        for centre in [4_500_000.0f32, -4_500_000.0, 6_000_000.0, -8_000_000.0, 20_000_000.0] {
            let xs: std::vec::Vec<f32> = (0..400)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 17;
                    s ^= s << 5;
                    centre + (s % 64) as f32 * 0.5 - 16.0
                })
                .collect();
            assert_softmax_logprobs(&xs, &std::format!("centre {centre}"));
        }
    }
}
