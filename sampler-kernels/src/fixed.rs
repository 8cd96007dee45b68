//! Fixed-point token weights: the exact, integer definition of "probability mass".
//!
//! Floating-point `exp` and float sums differ between libm, CUDA and summation orders, so the
//! contract defines weights as integers built from pure f32 `+ - * /` (which round alike on
//! the host and on nvptx: rustc never contracts to FMA) and a constant table:
//!
//! `c = soft_ceil(x)`, `f = x - c` in [-1, 0], `frac = trunc(soft_exp(f) * 2^31)`,
//! `d = soft_ceil(M) - c` (the "band"), `W = frac * E[d]` with `E[d] = floor(2^52 e^-d)` for
//! `d <= 36`, else 0. Sums of `W` are exact in `u128`, in any order. A GPU tile can sum
//! `frac` per band without knowing the row maximum; the band totals combine later.

/// Deepest band that carries weight; tokens more than ~e^-36 below the top weigh 0.
pub const BAND_FLOOR: u32 = 36;

/// `frac` of a token sitting exactly on an integer (f = 0).
pub const FRAC_ONE: u32 = 1 << 31;

/// `E[d] = floor(2^52 * e^-d)`, computed with Python `decimal` at 80 digits.
pub const BAND_SCALE: [u64; 37] = [
    4503599627370496,
    1656781714176973,
    609495931154489,
    224221022549381,
    82486304474355,
    30345015594323,
    11163307379178,
    4106751280277,
    1510789366018,
    555788347698,
    204463106760,
    75217773455,
    27671072464,
    10179618675,
    3744872429,
    1377661576,
    506813370,
    186446219,
    68589731,
    25232751,
    9282610,
    3414881,
    1256264,
    462153,
    170016,
    62545,
    23009,
    8464,
    3113,
    1145,
    421,
    155,
    57,
    20,
    7,
    2,
    1,
];

const TWO_POW_23: f32 = 8_388_608.0;

/// Ceiling without libm: `x` itself when `|x| >= 2^23` (already an integer) or non-finite.
/// Written with selects, not an early return: stage 1's mass scan takes it for every token,
/// and a branch per token kept ptxas from overlapping the tokens' arithmetic.
#[inline]
pub fn soft_ceil(x: f32) -> f32 {
    let small = x < TWO_POW_23 && x > -TWO_POW_23;
    let v = if small { x } else { 0.0 };
    // SAFETY: |v| < 2^23 (not NaN) fits i32.
    let t = (unsafe { v.to_int_unchecked::<i32>() }) as f32;
    let up = if t < v { t + 1.0 } else { t };
    if small {
        up
    } else {
        x
    }
}

/// `e^f` for `f` in [-1, 0] from f32 `*` and `+` only: `(e^(f/2))^2`, the inner one by a
/// degree-9 Taylor polynomial in Horner form. `soft_exp(0) == 1` exactly.
#[inline]
pub fn soft_exp(f: f32) -> f32 {
    let g = f * 0.5;
    let mut p = 1.0 / 362_880.0f32;
    p = p * g + 1.0 / 40_320.0;
    p = p * g + 1.0 / 5_040.0;
    p = p * g + 1.0 / 720.0;
    p = p * g + 1.0 / 120.0;
    p = p * g + 1.0 / 24.0;
    p = p * g + 1.0 / 6.0;
    p = p * g + 0.5;
    p = p * g + 1.0;
    p = p * g + 1.0;
    p * p
}

/// Natural log from f32 `* + /` and bit ops: exponent/mantissa split, mantissa folded into
/// (sqrt(1/2), sqrt(2)], then the atanh series `2s(1 + s^2/3 + ...)`. `soft_ln(1) == 0`
/// exactly; `soft_ln(0) == -inf`; negative or NaN input gives NaN.
#[inline]
pub fn soft_ln(x: f32) -> f32 {
    if x.is_nan() || x < 0.0 {
        return f32::NAN;
    }
    if x == 0.0 {
        return f32::NEG_INFINITY;
    }
    if x == f32::INFINITY {
        return x;
    }
    let mut bits = x.to_bits();
    let mut e: i32 = 0;
    if bits < 0x0080_0000 {
        // Subnormal: scale into the normal range (exact).
        bits = (x * 16_777_216.0).to_bits();
        e = -24;
    }
    e += ((bits >> 23) & 0xff) as i32 - 127;
    let mut m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
    if m > core::f32::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let s = (m - 1.0) / (m + 1.0);
    let s2 = s * s;
    let mut q = 1.0 / 15.0f32;
    q = q * s2 + 1.0 / 13.0;
    q = q * s2 + 1.0 / 11.0;
    q = q * s2 + 1.0 / 9.0;
    q = q * s2 + 1.0 / 7.0;
    q = q * s2 + 1.0 / 5.0;
    q = q * s2 + 1.0 / 3.0;
    q = q * s2 + 1.0;
    let lnm = (s + s) * q;
    lnm + (e as f32) * core::f32::consts::LN_2
}

/// `trunc(soft_exp(f) * 2^31)` for the fractional offset `f = x - soft_ceil(x)`.
#[inline]
pub fn frac_weight(f: f32) -> u32 {
    (soft_exp(f) * 2_147_483_648.0) as u32
}

/// Band scale `E[d]` of a token with ceiling `c` in a row with ceiling-of-max `mc`;
/// 0 below the floor (and for inputs that break `c <= mc`, which a correct caller never passes).
#[inline]
pub fn band_scale(c: f32, mc: f32) -> u64 {
    let d = mc - c;
    if !(d >= 0.0 && d <= BAND_FLOOR as f32) {
        return 0;
    }
    match BAND_SCALE.get(d as usize) {
        Some(&e) => e,
        None => 0,
    }
}

/// Weight `W(x)` of a token with processed logit `x` in a row whose maximum `M` is finite and
/// `mc = soft_ceil(M)`. `-inf`/NaN weigh 0. Always `< 2^84`.
#[inline]
pub fn weight(x: f32, mc: f32) -> u128 {
    if !x.is_finite() {
        return 0;
    }
    let c = soft_ceil(x);
    let frac = frac_weight(x - c);
    (frac as u128) * (band_scale(c, mc) as u128)
}

/// Sub-bins per band of [`exact_bin`].
pub const EXACT_SUB_BINS: u32 = 128;
/// Bin of the tokens in no band (more than `BAND_FLOOR` below `mc`): they weigh nothing.
pub const EXACT_ZERO_BIN: u32 = (BAND_FLOOR + 1) * EXACT_SUB_BINS;

/// Histogram bin of a finite value `x` with `c = soft_ceil(x)` in a row with `mc = soft_ceil(M)`,
/// `x <= M`: band `d = mc - c` times `EXACT_SUB_BINS`, plus a sub-bin by `x - c` (the top of the
/// band first). Never increases as `x` grows, so each bin is a run of the key order, and
/// `bin / EXACT_SUB_BINS` is the band whose scale weighs the token. Not part of the contract:
/// the split exact pass uses it only to find where to look, then decides on the keys.
#[inline]
pub fn exact_bin(x: f32, c: f32, mc: f32) -> u32 {
    let d = mc - c;
    if d.is_nan() || d > BAND_FLOOR as f32 {
        return EXACT_ZERO_BIN;
    }
    let top = (EXACT_SUB_BINS - 1) as f32;
    let s = (x - c + 1.0) * EXACT_SUB_BINS as f32;
    let s = if s >= top {
        EXACT_SUB_BINS - 1
    } else if s > 0.0 {
        s as u32
    } else {
        0
    };
    let d = if d > 0.0 { d as u32 } else { 0 };
    d * EXACT_SUB_BINS + (EXACT_SUB_BINS - 1 - s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exp_error(f: f32) -> f64 {
        let want = (f as f64).exp();
        ((soft_exp(f) as f64) - want).abs() / want
    }

    #[test]
    fn soft_exp_accuracy() {
        assert_eq!(soft_exp(0.0), 1.0);
        let mut worst = 0.0f64;
        let n = 2_000_000u32;
        for i in 0..=n {
            let f = -(i as f32) / (n as f32);
            worst = worst.max(exp_error(f));
        }
        // Every f32 in [-2^-20, 0] and near -1 too.
        let mut b = (-1.0f32).to_bits();
        for _ in 0..200_000 {
            worst = worst.max(exp_error(f32::from_bits(b)));
            b -= 1;
        }
        for b in 0x8000_0001u32..0x8003_0d41 {
            worst = worst.max(exp_error(f32::from_bits(b)));
        }
        assert!(worst < 1e-6, "soft_exp relative error {worst}");
    }

    #[test]
    fn soft_ln_accuracy() {
        assert_eq!(soft_ln(1.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(soft_ln(0.0), f32::NEG_INFINITY);
        assert!(soft_ln(-1.0).is_nan());
        let mut worst = 0.0f64;
        let mut check = |x: f32| {
            let want = (x as f64).ln();
            let got = soft_ln(x) as f64;
            let err = if want == 0.0 {
                got.abs()
            } else {
                ((got - want) / want).abs()
            };
            worst = worst.max(err);
        };
        // Dense sweep over (0, 1] by bit patterns, plus the neighbourhood of 1 and subnormals.
        let top = 1.0f32.to_bits();
        let mut b = 1u32;
        while b <= top {
            check(f32::from_bits(b));
            b += 97;
        }
        for i in 0..100_000 {
            check(f32::from_bits(top - i));
            check(f32::from_bits(top + i));
        }
        check(1e-45);
        check(f32::MAX);
        assert!(worst < 1e-6, "soft_ln relative error {worst}");
    }

    #[test]
    fn soft_ceil_matches_std() {
        let vals = [
            0.0f32,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            1.0000001,
            -1.0000001,
            2.5,
            -2.5,
            8_388_607.5,
            -8_388_607.5,
            8_388_608.0,
            -8_388_608.0,
            1e30,
            -1e30,
            1e-40,
            -1e-40,
            123.0,
            -123.0,
        ];
        for &v in &vals {
            assert_eq!(soft_ceil(v), v.ceil(), "{v}");
        }
        let mut s = 0x1234_5678u32;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            let v = f32::from_bits(s);
            if v.is_finite() {
                assert_eq!(soft_ceil(v), v.ceil(), "{v}");
            }
        }
        assert!(soft_ceil(f32::NAN).is_nan());
        assert_eq!(soft_ceil(f32::INFINITY), f32::INFINITY);
    }

    #[test]
    fn band_table_is_floor_of_exp() {
        assert_eq!(BAND_SCALE[0], 1u64 << 52);
        for (d, &e) in BAND_SCALE.iter().enumerate() {
            let exact = 4_503_599_627_370_496.0f64 * (-(d as f64)).exp();
            // floor: e <= exact < e + 1, with f64 exp's relative error allowed.
            assert!(
                (e as f64) <= exact * (1.0 + 1e-15),
                "E[{d}] = {e} > {exact}"
            );
            assert!(
                (e as f64) + 1.0 > exact * (1.0 - 1e-15),
                "E[{d}] = {e} too small for {exact}"
            );
            if exact > 1e6 {
                assert!(((e as f64) - exact).abs() / exact < 1e-15 + 1.0 / exact);
            }
        }
    }

    #[test]
    fn weights() {
        let mc = soft_ceil(3.2);
        assert_eq!(weight(f32::NEG_INFINITY, mc), 0);
        assert_eq!(weight(f32::NAN, mc), 0);
        assert_eq!(weight(3.0, mc), FRAC_ONE as u128 * BAND_SCALE[1] as u128);
        assert_eq!(weight(-40.0, mc), 0);
        // Ratio of weights tracks e^(x1 - x2).
        let w1 = weight(3.2, mc) as f64;
        let w2 = weight(0.7, mc) as f64;
        let want = (2.5f64).exp();
        assert!((w1 / w2 - want).abs() / want < 3e-6);
        // Monotone in x in the upper bands (deep bands have coarse E[d], where the floor of
        // E can make a band boundary step back by a hair; the contract never relies on it).
        let mut prev = 0u128;
        let mut x = -6.0f32;
        while x <= 3.2 {
            let w = weight(x, mc);
            assert!(w >= prev, "{x}");
            prev = w;
            x += 0.001;
        }
    }

    #[test]
    fn exact_bins_follow_the_key_order_and_the_bands() {
        // SplitMix64: the crate has no dependencies, not even for tests.
        let mut state = 0x005e_edb1_u64;
        let mut uniform = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
        };
        for _ in 0..200 {
            let top = uniform() * 80.0 - 40.0;
            let mc = soft_ceil(top);
            let mut xs: std::vec::Vec<f32> = (0..2000)
                .map(|_| top - uniform() * 45.0)
                .chain([top, mc - 1.0, mc - 36.0, mc - 37.0, top - 1e-6, 0.0])
                .filter(|x| *x <= top)
                .collect();
            xs.sort_by(|a, b| b.total_cmp(a));
            let mut last = 0;
            for &x in &xs {
                let c = soft_ceil(x);
                let bin = exact_bin(x, c, mc);
                assert!(bin >= last, "bin fell from {last} to {bin} at x = {x}, mc = {mc}");
                last = bin;
                assert!(bin <= EXACT_ZERO_BIN);
                let scale = band_scale(c, mc);
                if bin < EXACT_ZERO_BIN {
                    assert_eq!(BAND_SCALE[(bin / EXACT_SUB_BINS) as usize], scale, "x = {x}, mc = {mc}");
                } else {
                    assert_eq!(scale, 0, "x = {x}, mc = {mc} is in a band");
                }
            }
        }
    }
}
