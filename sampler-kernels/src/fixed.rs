//! Fixed-point token weights: the exact, integer definition of "probability mass".
//!
//! Floating-point `exp` and float sums differ between libm, CUDA and summation orders, so the
//! contract defines weights as integers built from pure f32 `+ - *`, fused multiply-adds and
//! bit operations (each rounds once, as IEEE 754 says, on the host and on nvptx: rustc never
//! contracts `a * b + c`, and the one fused operation is [`fused_mul_add`]) and a constant table:
//!
//! `c = soft_ceil(x)`, `f = x - c` in [-1, 0], `frac = round((1 + f·q(f)) * 2^23)` (read from
//! the bits of `fused_mul_add(q(f), f, 2)`, [`frac_weight`]; `soft_exp(f) = 1 + f·q(f)`),
//! `d = soft_ceil(M) - c` (the "band"), `W = frac * E[d]` with
//! `E[d] = floor(2^52 e^-d)` for `d <= 36`, else 0. Sums of `W` are exact in `u128`, in any
//! order. A GPU tile can sum `frac` per band without knowing the row maximum; the band totals
//! combine later.
//!
//! Every per-token step is an f32 add or multiply or an integer operation: no float-to-int
//! conversion (a quarter-rate instruction on the GPU, four of them per token in stage 1's mass
//! scan before) and no division.

/// Deepest band that carries weight; tokens more than ~e^-36 below the top weigh 0.
pub const BAND_FLOOR: u32 = 36;

/// `frac` of a token sitting exactly on an integer (f = 0).
pub const FRAC_ONE: u32 = 1 << 23;

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

/// [`BAND_SCALE`] as one static, which every run-time lookup indexes: the device then holds
/// one copy of the table, which stage 2 asks L1 for as it starts
/// (`sampler::prefetch_band_scales`). After the L2 flush of the benchmark (or a model's forward
/// pass), a lookup waited for DRAM: 9% of a lone flat row's `sample_rows` samples (session 55).
// The device names it in `intrinsics::prefetch_band_scales_lines`' PTX: an unmangled symbol.
#[cfg_attr(target_arch = "nvptx64", unsafe(no_mangle))]
pub static BAND_SCALES: [u64; 37] = BAND_SCALE;

/// Bound of [`small_ceil`]'s range: every f32 of magnitude `2^22` or more is a multiple of 1/2,
/// and stage 2 uses band sums only for ceilings inside it (`sampler::bands_usable`).
pub const CEIL_LIMIT: f32 = 4_194_304.0;

/// `2^23`: every f32 of this magnitude or more is an integer, its own ceiling.
const INTEGER_LIMIT: f32 = 8_388_608.0;

/// `1.5 · 2^23`: adding it to `|v| < 2^22` lands in `[2^23, 2^24)`, where the f32 spacing is 1,
/// so the sum is `v` rounded to an integer, and its bits minus this constant's are that integer.
const ROUND_MAGIC: f32 = 12_582_912.0;

/// `ceil(v)` as an f32 and as an integer, for `|v| < CEIL_LIMIT` (the caller's range; others
/// give meaningless values, never a fault). f32 adds and an integer subtraction only: no
/// conversion instruction, so stage 1 can take it for every token.
#[inline(always)]
pub fn small_ceil(v: f32) -> (f32, i32) {
    let lifted = v + ROUND_MAGIC;
    let nearest = lifted - ROUND_MAGIC;
    let up = nearest < v;
    let c = if up { nearest + 1.0 } else { nearest };
    let ci = (lifted.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32) + up as i32;
    (c, ci)
}

/// Row ceilings whose band sums stage 2 uses. Inside them, every token within the 37 bands of
/// the ceiling has `|x| < CEIL_LIMIT`: the only tokens stage 1's mass scan puts in a band (a
/// row near `-2^22` is finished token by token instead).
#[inline]
pub fn bands_usable(mc: f32) -> bool {
    mc < CEIL_LIMIT && mc > -(CEIL_LIMIT - 64.0)
}

/// `ceil(x)` for every finite `x` (so a band `d = soft_ceil(M) - soft_ceil(x)` is a whole
/// number); `x` itself when it is not finite. Below `2^23` in magnitude, `x ± 2^23` (the sign of
/// `x`) lands where the f32 spacing is 1, so the sum minus the same constant is `x` rounded to
/// an integer; from `2^23` on, `x` is one. Until session 46 it was `ceil` below `2^22` only, and
/// between `2^22` and `2^23`, where f32 values are halves, `x` itself: a half-integer band
/// took the weight of the whole band below it. Written with selects, not an early return: a
/// branch per token kept ptxas from overlapping the tokens' arithmetic.
#[inline]
pub fn soft_ceil(x: f32) -> f32 {
    let fractional = x < INTEGER_LIMIT && x > -INTEGER_LIMIT;
    let v = if fractional { x } else { 0.0 };
    let lift = if v < 0.0 { -INTEGER_LIMIT } else { INTEGER_LIMIT };
    let nearest = (v + lift) - lift;
    let c = if nearest < v { nearest + 1.0 } else { nearest };
    if fractional {
        c
    } else {
        x
    }
}

/// `1 + f·q(f)` in Horner form, `q` the degree-6 polynomial interpolating `(e^f - 1)/f` at the
/// seven Chebyshev nodes of [-1, 0], `-1/2 + cos((2k + 1)π/14)/2`, coefficients rounded to f32
/// (`q0` is exactly 1). `exp_coefficients_are_the_interpolant` solves the interpolation again.
const EXP_Q: [f32; 6] = [
    f32::from_bits(0x390758a8), // q6 ≈ 1.2907630e-4
    f32::from_bits(0x3aaa7ec4), // q5 ≈ 1.3007750e-3
    f32::from_bits(0x3c0795fc), // q4 ≈ 8.2755052e-3
    f32::from_bits(0x3d2a95e3), // q3 ≈ 4.1646849e-2
    f32::from_bits(0x3e2aa9d0), // q2 ≈ 1.6666341e-1
    f32::from_bits(0x3efffff9), // q1 ≈ 4.9999979e-1
];

/// `a · b + c` rounded once, to nearest even (IEEE 754 `fusedMultiplyAdd`), so the host and
/// the device agree bit for bit: `fma.rn.f32` in inline assembly on nvptx (the PTX check
/// accepts `fma` only inside inline assembly, so a contraction would still be caught), the
/// `llvm.fma` intrinsic on the host (a hardware FMA or libm's `fmaf`, both exact).
#[inline(always)]
pub fn fused_mul_add(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        crate::intrinsics::fma_rn_f32(a, b, c)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        core::intrinsics::fmaf32(a, b, c)
    }
}

/// `q(f) = (e^f - 1)/f` for `f` in [-1, 0]: [`EXP_Q`] in Horner form, six fused multiply-adds.
#[inline(always)]
fn exp_quotient(f: f32) -> f32 {
    let mut q = EXP_Q[0];
    q = fused_mul_add(q, f, EXP_Q[1]);
    q = fused_mul_add(q, f, EXP_Q[2]);
    q = fused_mul_add(q, f, EXP_Q[3]);
    q = fused_mul_add(q, f, EXP_Q[4]);
    q = fused_mul_add(q, f, EXP_Q[5]);
    fused_mul_add(q, f, 1.0)
}

/// `e^f` for `f` in [-1, 0]: `1 + f·q(f)`, seven fused multiply-adds (relative error under
/// 3e-7, tested; `soft_exp(0) == 1` exactly). Fused, the chain is half the instructions and
/// half the dependent latency of separate multiplies and adds.
#[inline]
pub fn soft_exp(f: f32) -> f32 {
    fused_mul_add(exp_quotient(f), f, 1.0)
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

/// `round((1 + f·q(f)) · 2^23)`, to nearest, ties to even, with `f·q(f)` exact (as
/// [`soft_exp`] before its own rounding), for the fractional offset `f = x - soft_ceil(x)`: in
/// `[0.36 · 2^23, 2^23]`. The last multiply-add adds 2 instead of 1, so its result lies in
/// [1, 2], where the f32 spacing is `2^-23`: that one rounding is the rounding, and the bits
/// minus those of `1.0` hold the result. At most `2^23`, so 256 of them fit a `u32` (stage 1's
/// lane-private band sums). This runs for every token of every row that needs the row mass.
#[inline]
pub fn frac_weight(f: f32) -> u32 {
    fused_mul_add(exp_quotient(f), f, 2.0).to_bits().wrapping_sub(1.0f32.to_bits())
}

/// Band scale `E[d]` of a token with ceiling `c` in a row with ceiling-of-max `mc`;
/// 0 below the floor (and for inputs that break `c <= mc`, which a correct caller never passes).
#[inline]
pub fn band_scale(c: f32, mc: f32) -> u64 {
    let d = mc - c;
    if !(d >= 0.0 && d <= BAND_FLOOR as f32) {
        return 0;
    }
    match BAND_SCALES.get(d as usize) {
        Some(&e) => e,
        None => 0,
    }
}

/// The largest weight [`weight`] gives any token: a whole fraction in band 0, `2^75`.
pub const MAX_WEIGHT: u128 = FRAC_ONE as u128 * BAND_SCALE[0] as u128;

/// Weight `W(x)` of a token with processed logit `x` in a row whose maximum `M` is finite and
/// `mc = soft_ceil(M)`. `-inf`/NaN weigh 0. Always `<= MAX_WEIGHT`.
#[inline]
pub fn weight(x: f32, mc: f32) -> u128 {
    if !x.is_finite() {
        return 0;
    }
    let c = soft_ceil(x);
    let frac = frac_weight(x - c);
    (frac as u128) * (band_scale(c, mc) as u128)
}

/// [`weight`]'s two factors `(frac, E[d])`, `W = frac · E[d]` (`(0, 0)` for `-inf`/NaN): both
/// are exact in f64 (`frac <= 2^23`, `E[d] < 2^53`), so a caller that wants `W` in floating
/// point multiplies them once and converts no u128 (a compiler-rt call on the GPU). `weight`
/// does not call it: written through it, ptxas laid out the step kernels differently (their
/// SASS changed), and those were measured as they are. A test holds the two equal.
#[inline]
pub fn weight_parts(x: f32, mc: f32) -> (u32, u64) {
    if !x.is_finite() {
        return (0, 0);
    }
    let c = soft_ceil(x);
    (frac_weight(x - c), band_scale(c, mc))
}

/// Band rows of [`band_and_fraction`]: the `BAND_FLOOR + 1` bands, then the one for tokens
/// in none.
pub const NO_BAND: u32 = BAND_FLOOR + 1;

/// [`weight`] split for band sums: `(d, frac)` with `weight(x, mc) = frac · BAND_SCALE[d]`
/// when `d < NO_BAND`, and `d = NO_BAND` where the weight is 0, for a row whose `mc` is
/// `bands_usable` and `mc_i` its integer (`small_ceil(mc).1`). The band is an integer
/// difference, with no conversion, so a loop over every token can take it (verification's mass
/// pass; stage 1's mass scan computes the same under a running ceiling). A token with
/// `|x| ≥ 2^22`, or not finite, is in no band of a usable ceiling.
/// `band_and_fraction_sums_are_the_weights` holds it to `weight`.
#[inline(always)]
pub fn band_and_fraction(x: f32, mc_i: i32) -> (u32, u32) {
    let small = x < CEIL_LIMIT && x > -CEIL_LIMIT;
    let v = if small { x } else { 0.0 };
    let (c, ci) = small_ceil(v);
    let band = mc_i.wrapping_sub(ci) as u32;
    (if small && band < NO_BAND { band } else { NO_BAND }, frac_weight(v - c))
}

/// The row band that band `d` of a tile with ceiling `ceiling` is, in a row of ceiling `mc`
/// (`mc − ceiling + d`), or `u32::MAX` past [`BAND_FLOOR`] (or above the row's top), where
/// [`band_scale`] gives 0. Stage 2 adds stage 1's tile band sums up per row band through it, so
/// the row mass is `Σ_b S_b · E[b]`: the same integer as the sum of every tile band's
/// `sum · band_scale(ceiling − d, mc)`, since both scale a sum by its row band's `E`
/// (`row_band_sums_weigh_as_the_tile_bands`). Ceilings are whole numbers of usable rows
/// ([`soft_ceil`], [`bands_usable`]), so the arithmetic is exact.
#[inline(always)]
pub fn row_band_of(mc: f32, ceiling: f32, d: u32) -> u32 {
    let b = mc - ceiling + d as f32;
    if b >= 0.0 && b <= BAND_FLOOR as f32 {
        b as u32
    } else {
        u32::MAX
    }
}

/// A running ceiling as the integer [`band_and_fraction`] takes: `c` itself when `|c| <
/// CEIL_LIMIT`, else 0. A ceiling outside that range is no usable row's (its sums are never
/// read), and 0 keeps every band in bounds.
#[inline(always)]
pub fn ceiling_index(c: f32) -> i32 {
    if c < CEIL_LIMIT && c > -CEIL_LIMIT {
        c as i32
    } else {
        0
    }
}

/// How many bands down the sums taken under ceiling `from` move when the ceiling becomes
/// `to >= from` (both `soft_ceil` values): `to - from`, or `NO_BAND` (every sum drops) when
/// that passes the last band or either ceiling is outside the band range, where no band sum
/// is ever read (`-inf`, a ceiling before any valid token, holds sums in the discard row
/// only). Verification's first pass keeps band sums under each warp's running ceiling and
/// moves them to the row's with it; `running_ceiling_band_sums_are_the_weights` holds the
/// result to [`weight`].
#[inline(always)]
pub fn band_shift(from: f32, to: f32) -> u32 {
    let d = to - from;
    if from > -CEIL_LIMIT && to < CEIL_LIMIT && d >= 0.0 && d < NO_BAND as f32 {
        d as u32
    } else {
        NO_BAND
    }
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
    let d = small_floor(d, BAND_FLOOR as f32);
    d * EXACT_SUB_BINS + exact_sub_bin(x, c)
}

/// [`exact_bin`]'s position within its band, `0..EXACT_SUB_BINS` (the top of the band first),
/// for `x` with `c = soft_ceil(x)`. The split pass's band mode bins one band by it alone.
#[inline]
pub fn exact_sub_bin(x: f32, c: f32) -> u32 {
    EXACT_SUB_BINS - 1 - small_floor(sub_bin_scaled(x, c), SUB_BIN_TOP)
}

/// [`exact_sub_bin`] for the band's own values, `x` in `(c - 1, c]` (elsewhere a number the
/// caller must not use): there the scaled value is at least 0, so the lower clamp is left out,
/// one instruction fewer a token in the band histograms, which select a spare bin for tokens
/// outside the band. `band_sub_bin_is_exact_sub_bin_in_the_band` holds the two equal.
#[inline(always)]
pub fn band_sub_bin(x: f32, c: f32) -> u32 {
    let t = sub_bin_scaled(x, c);
    (EXACT_SUB_BINS - 1).wrapping_sub(floor_of_small(if t < SUB_BIN_TOP { t } else { SUB_BIN_TOP }))
}

/// The last sub-bin's number as an f32, where the scaled value is clamped.
const SUB_BIN_TOP: f32 = (EXACT_SUB_BINS - 1) as f32;

/// `(x - c + 1) · EXACT_SUB_BINS` in one rounding: scaling by a power of two commutes with
/// rounding (the sum is 0 or at least 2^-24, never subnormal), so the fused form is the
/// two-step one bit for bit (`sub_bin_fused_scale_is_the_two_step_one`), one instruction fewer
/// a token in the exact pass's histograms.
#[inline(always)]
fn sub_bin_scaled(x: f32, c: f32) -> f32 {
    let sub = EXACT_SUB_BINS as f32;
    fused_mul_add(x - c, sub, sub)
}

/// The least and the greatest `x` in `(c - 1, c]` with `exact_sub_bin(x, c) == sub`, for an
/// integer `c` with `|c| < CEIL_LIMIT`; `lo > hi` when no float falls in that sub-bin. So a
/// token of that band is in sub-bin `sub` exactly when `lo <= x <= hi`: the band mode's gather
/// tests two float compares per token instead of binning it.
#[inline]
pub fn exact_sub_bin_bounds(sub: u32, c: f32) -> (f32, f32) {
    sub_bin_bounds_of_edges(exact_sub_bin_edge(sub, c), exact_sub_bin_edge(sub.wrapping_sub(1), c))
}

/// [`exact_sub_bin_bounds`] from its two edges: `exact_sub_bin_edge(sub, c)` and
/// `exact_sub_bin_edge(sub.wrapping_sub(1), c)` (the device finds them in two lanes).
#[inline]
pub fn sub_bin_bounds_of_edges(first: u32, past: u32) -> (f32, f32) {
    use crate::keys::from_ordered_bits;
    // `past - 1` is at least `c - 1`'s ordered bits: an ordered value.
    (from_ordered_bits(first), from_ordered_bits(past.wrapping_sub(1)))
}

/// The first value of the band `(c - 1, c]`, as [`ordered_bits`](crate::keys::ordered_bits),
/// whose sub-bin is at most `at_most` (`u32::MAX`: none is, so one past `c`'s). A binary search
/// over the band's ordered bits (the sub-bin never increases with `x`), within
/// [`SUB_BIN_EDGE_WINDOW`] of where the edge lies before rounding, `c - 1 + (127 - at_most) / 128`
/// ([`first_reaching`]): the window takes 7 steps where the band takes up to 31 (`exact_bins`
/// waited for them).
#[inline]
pub fn exact_sub_bin_edge(at_most: u32, c: f32) -> u32 {
    use crate::keys::{from_ordered_bits, ordered_bits};
    let (first, past) = (ordered_bits(c - 1.0) + 1, ordered_bits(c) + 1);
    if at_most == u32::MAX {
        return past;
    }
    first_reaching(first, past, sub_bin_edge_guess(at_most, c), SUB_BIN_EDGE_WINDOW, |bits| {
        exact_sub_bin(from_ordered_bits(bits), c) <= at_most
    })
}

/// Where [`exact_sub_bin_edge`]'s edge lies before rounding, as ordered bits:
/// `c - 1 + (127 - at_most) / 128` (`at_most < 128`).
#[inline(always)]
pub fn sub_bin_edge_guess(at_most: u32, c: f32) -> u32 {
    let steps_below = (EXACT_SUB_BINS - 1).saturating_sub(at_most) as f32;
    crate::keys::ordered_bits(c - 1.0 + steps_below * (1.0 / EXACT_SUB_BINS as f32))
}

/// The first of `first .. past` where `reaches` holds (`past` if none), for a `reaches` that
/// never goes from true back to false. A binary search within `window` of `guess` when the
/// window's ends show the answer inside it (the value before it misses, its end reaches, or
/// they are the range's), else over the whole range: the same answer either way.
#[inline(always)]
pub fn first_reaching<R: Fn(u32) -> bool>(first: u32, past: u32, guess: u32, window: u32, reaches: R) -> u32 {
    let guess = guess.clamp(first, past);
    let window_lo = guess.saturating_sub(window).max(first);
    let window_past = guess.saturating_add(window).min(past);
    let bracketed = (window_lo == first || !reaches(window_lo - 1)) && (window_past == past || reaches(window_past));
    let (mut lo, mut hi) = if bracketed { (window_lo, window_past) } else { (first, past) };
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if reaches(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// How many ordered values on each side of its unrounded position [`exact_sub_bin_edge`]
/// searches first: the roundings of `(x - c + 1) · 128` move the edge by at most 64 values of
/// `x` for every ceiling up to 60 in magnitude (tested; 32 is too few for one edge). Where the
/// window misses, the whole band is searched.
pub const SUB_BIN_EDGE_WINDOW: u32 = 64;

/// Bit `j` set where byte `j` of `word` equals the byte repeated in `pattern`
/// (`b · 0x01010101`): the exact pass's gather finds the tokens whose band code (a byte, the
/// sub-bin of [`exact_sub_bin`]) is the boundary sub-bin, four at a time. Exact for every byte:
/// each is tested with its top bit cleared, so no carry crosses into the next.
#[inline(always)]
pub fn byte_hits(word: u32, pattern: u32) -> u32 {
    let t = word ^ pattern;
    let zero = !(((t & 0x7f7f_7f7f) + 0x7f7f_7f7f) | t | 0x7f7f_7f7f) >> 7;
    (zero | zero >> 7 | zero >> 14 | zero >> 21) & 0xf
}

/// `floor(v)` clamped to `[0, top]` (`top < 2^22`; `v` not NaN), with no conversion
/// instruction: the exact pass calls it twice per token.
#[inline(always)]
fn small_floor(v: f32, top: f32) -> u32 {
    let v = if v > 0.0 { v } else { 0.0 };
    let v = if v < top { v } else { top };
    floor_of_small(v)
}

/// `floor(v)` for `v` in `[0, 2^22)`. On the GPU `v + ROUND_MAGIC` rounded toward −∞ lands in
/// `[2^23, 2^24)`, where the spacing is 1, at `ROUND_MAGIC + floor(v)`, so the bits give it in
/// two instructions (`add.rm`, a subtraction), where the round-to-nearest form, `-ceil(-v)`
/// through [`small_ceil`], took four more in the SASS (session 34). The host keeps that form.
/// Both are `floor` exactly, the device's by the rounding mode's definition (a directed
/// rounding is correctly rounded like `fma.rn`, so host and device agree bit for bit);
/// `small_floor_is_the_clamped_floor` holds the host's.
#[inline(always)]
fn floor_of_small(v: f32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        crate::intrinsics::add_rm_f32(v, ROUND_MAGIC).to_bits().wrapping_sub(ROUND_MAGIC.to_bits())
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        small_ceil(-v).1.wrapping_neg() as u32
    }
}

#[cfg(test)]
pub(crate) mod tests {
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
        assert!(worst < 5e-7, "soft_exp relative error {worst}");
    }

    /// `EXP_Q` (and `q0 = 1`) is the Chebyshev interpolant its comment says, solved here in f64
    /// and rounded to f32: each coefficient within one f32 step of the solution.
    #[test]
    fn exp_coefficients_are_the_interpolant() {
        const N: usize = 7;
        let g = |x: f64| if x == 0.0 { 1.0 } else { x.exp_m1() / x };
        let mut m = [[0.0f64; N + 1]; N];
        for (k, row) in m.iter_mut().enumerate() {
            let x = -0.5 + 0.5 * (((2 * k + 1) as f64) * core::f64::consts::PI / (2 * N) as f64).cos();
            for (j, cell) in row.iter_mut().take(N).enumerate() {
                *cell = x.powi(j as i32);
            }
            row[N] = g(x);
        }
        // Gauss-Jordan with partial pivoting.
        for i in 0..N {
            let pivot = (i..N).max_by(|&a, &b| m[a][i].abs().total_cmp(&m[b][i].abs())).unwrap_or(i);
            m.swap(i, pivot);
            let pivot_row = m[i];
            for (r, row) in m.iter_mut().enumerate() {
                if r != i {
                    let factor = row[i] / pivot_row[i];
                    for (cell, &p) in row.iter_mut().zip(&pivot_row).skip(i) {
                        *cell -= factor * p;
                    }
                }
            }
        }
        let solved: std::vec::Vec<f64> = (0..N).map(|i| m[i][N] / m[i][i]).collect();
        // EXP_Q runs from q6 down to q1.
        let table: std::vec::Vec<f32> = core::iter::once(1.0f32).chain(EXP_Q.iter().rev().copied()).collect();
        for (j, (&want, &have)) in solved.iter().zip(&table).enumerate() {
            let step = f32::from_bits(have.to_bits() + 1) - have;
            assert!(((have as f64) - want).abs() <= step as f64, "q{j}: table {have:e}, solved {want:e}");
        }
    }

    /// `frac_weight` is `(1 + f·q(f)) · 2^23` with `f·q(f)` exact, rounded to nearest, ties to
    /// even, over every f32 step near both ends of [-1, 0] and a dense sweep between: the bit
    /// trick is the rounding. The reference is exact: `f·q` is a product of two f32 (exact in
    /// f64), and the f64 sum's error term (Fast2Sum) settles values that look like ties.
    #[test]
    fn frac_weight_rounds_to_nearest() {
        let check = |f: f32| {
            let a = 8_388_608.0f64;
            let b = (f as f64) * (exp_quotient(f) as f64) * a;
            let sum = a + b;
            let error = b - (sum - a);
            let floor = sum.floor();
            let rest = sum - floor;
            let up = rest > 0.5 || (rest == 0.5 && (error > 0.0 || (error == 0.0 && floor as u64 % 2 == 1)));
            let want = if up { floor + 1.0 } else { floor };
            assert_eq!(frac_weight(f) as f64, want, "f = {f:e}");
            assert!(frac_weight(f) <= FRAC_ONE && frac_weight(f) > FRAC_ONE / 3, "f = {f:e}");
        };
        assert_eq!(frac_weight(0.0), FRAC_ONE);
        for i in 0..=1_000_000u32 {
            check(-(i as f32) / 1_000_000.0);
        }
        let (mut lo, mut hi) = ((-1.0f32).to_bits(), 0x8000_0000u32);
        for _ in 0..100_000 {
            check(f32::from_bits(lo));
            check(f32::from_bits(hi));
            lo -= 1;
            hi += 1;
        }
    }

    /// `small_floor` is the clamped floor, at integers, just below them and in between.
    #[test]
    fn small_floor_is_the_clamped_floor() {
        let want = |v: f32, top: f32| v.max(0.0).min(top).floor() as u32;
        let mut v = -3.0f32;
        while v < 140.0 {
            for w in [v, f32::from_bits(v.to_bits() + 1), f32::from_bits(v.to_bits().wrapping_sub(1))] {
                assert_eq!(small_floor(w, 127.0), want(w, 127.0), "{w}");
                assert_eq!(small_floor(w, 36.0), want(w, 36.0), "{w}");
            }
            v += 0.0078125 * 3.0;
        }
        assert_eq!(small_floor(f32::NEG_INFINITY, 127.0), 0);
        assert_eq!(small_floor(f32::INFINITY, 127.0), 127);
    }

    /// `exact_sub_bin`'s fused scale (`sub_bin_scaled`) is `(d + 1) · 128` rounded twice, bit
    /// for bit: over every f32 step near both ends of the band's `[-1, 0]`, a dense sweep of
    /// it, and random bit patterns of every magnitude (overflow, infinities and NaN included).
    #[test]
    fn sub_bin_fused_scale_is_the_two_step_one() {
        let sub = EXACT_SUB_BINS as f32;
        let check = |d: f32| {
            // `d - 0` is `d` for every f32, so this is the scale the code computes.
            let (fused, two_step) = (sub_bin_scaled(d, 0.0), (d + 1.0) * sub);
            assert!(fused.to_bits() == two_step.to_bits() || (fused.is_nan() && two_step.is_nan()), "d = {d:e}");
        };
        for i in 0..=1_000_000u32 {
            check(-(i as f32) / 1_000_000.0);
        }
        let (mut lo, mut hi) = ((-1.0f32).to_bits(), 0x8000_0000u32);
        for _ in 0..100_000 {
            for bits in [lo, hi, lo.wrapping_sub(200_000), hi - 0x8000_0000] {
                check(f32::from_bits(bits));
            }
            lo -= 1;
            hi += 1;
        }
        let mut s = 0x2545_f491u32;
        for _ in 0..2_000_000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            check(f32::from_bits(s));
        }
        for d in [f32::INFINITY, f32::NEG_INFINITY, f32::MAX, f32::MIN, f32::MAX / sub, f32::MIN / sub, -1.0, -0.0, 0.0] {
            check(d);
        }
    }

    /// `band_sub_bin` is `exact_sub_bin` on every value of the band `(c - 1, c]`, for ceilings
    /// across the range (every f32 of the band where it holds few, else every step near both
    /// ends and near each sub-bin edge, and random values), and outside the band it returns
    /// without a fault (its number is not used there).
    #[test]
    fn band_sub_bin_is_exact_sub_bin_in_the_band() {
        let mut s = 0x9e37_79b9u32;
        for c in [-4_194_303.0f32, -70_000.0, -37.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0, 17.0, 36.0, 100.0, 65_537.0, 1_048_575.0, 4_194_303.0] {
            let (lo, hi) = (c - 1.0, c);
            let check = |x: f32| {
                if x > lo && x <= hi {
                    assert_eq!(band_sub_bin(x, c), exact_sub_bin(x, c), "x = {x:e}, c = {c}");
                }
            };
            let (first, last) = (crate::keys::ordered_bits(lo) + 1, crate::keys::ordered_bits(hi));
            if last - first < 3_000_000 {
                for bits in first..=last {
                    check(crate::keys::from_ordered_bits(bits));
                }
                continue;
            }
            for k in 0..200_000 {
                check(crate::keys::from_ordered_bits(first + k));
                check(crate::keys::from_ordered_bits(last - k));
            }
            for edge in 0..=EXACT_SUB_BINS {
                let at = crate::keys::ordered_bits(lo + edge as f32 / EXACT_SUB_BINS as f32);
                for d in 0..64 {
                    check(crate::keys::from_ordered_bits(at.wrapping_add(d).wrapping_sub(32)));
                }
            }
            for _ in 0..200_000 {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                check(crate::keys::from_ordered_bits(first + s % (last - first + 1)));
            }
        }
        for x in [f32::NEG_INFINITY, f32::INFINITY, -1e30, 1e30, -5.0, 7.5] {
            let _ = band_sub_bin(x, 0.0);
        }
    }

    /// `small_ceil`'s integer is its float, and both are `ceil`, over the whole range it serves.
    #[test]
    fn small_ceil_is_ceil_with_its_integer() {
        let mut s = 0x9e37_79b9u32;
        let check = |v: f32| {
            let (c, ci) = small_ceil(v);
            assert_eq!(c, v.ceil(), "{v}");
            assert_eq!(ci as f32, c, "{v}");
        };
        for v in [0.0f32, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 1e-40, -1e-40, 4_194_303.5, -4_194_303.5, 4_194_303.0, -(4_194_304.0 - 0.25)] {
            check(v);
        }
        for _ in 0..500_000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            let v = f32::from_bits(s);
            if v.abs() < CEIL_LIMIT {
                check(v);
            }
            // Logit-like magnitudes, where most tokens are.
            check((s >> 8) as f32 / 65_536.0 - 128.0);
        }
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
            4_194_303.5,
            -4_194_303.5,
            4_194_304.0,
            -4_194_304.0,
            4_194_304.5,
            -4_194_304.5,
            8_388_607.5,
            -8_388_607.5,
            1e30,
            -1e30,
            1e-40,
            -1e-40,
            123.0,
            -123.0,
        ];
        // The contract: ceil of every finite value (from 2^23 on, the value itself), and
        // small_ceil's where it is defined.
        let want = |v: f32| v.ceil();
        for v in [CEIL_LIMIT - 0.5, -CEIL_LIMIT + 0.5, 0.5, -0.5, -0.0, 3.25, -3.25] {
            assert_eq!(soft_ceil(v).to_bits(), small_ceil(v).0.to_bits(), "{v}");
        }
        for &v in &vals {
            assert_eq!(soft_ceil(v), want(v), "{v}");
        }
        let mut s = 0x1234_5678u32;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            let v = f32::from_bits(s);
            if v.is_finite() {
                assert_eq!(soft_ceil(v), want(v), "{v}");
            }
        }
        // Below 2^22 the bits of small_ceil's (the weights there are as before session 46);
        // from 2^22 to 2^23, every half-integer's ceiling.
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            let v = (s as f32 / u32::MAX as f32 - 0.5) * 2.0 * CEIL_LIMIT;
            assert_eq!(soft_ceil(v).to_bits(), small_ceil(v).0.to_bits(), "{v}");
            let half = (s % (1 << 23)) as f32 * 0.5 + CEIL_LIMIT;
            for h in [half, -half] {
                assert_eq!(soft_ceil(h), h.ceil(), "{h}");
                assert_eq!(soft_ceil(h) - h, if h.fract() == 0.0 { 0.0 } else { 0.5 }, "{h}");
            }
        }
        assert!(soft_ceil(f32::NAN).is_nan());
        assert_eq!(soft_ceil(f32::INFINITY), f32::INFINITY);
        assert_eq!(soft_ceil(f32::NEG_INFINITY), f32::NEG_INFINITY);
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

    /// A xorshift64 stream from `seed` (the band tests' random values).
    fn xorshift_stream(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

    /// Tile band sums added up per row band ([`row_band_of`]) and weighed once give the same
    /// row mass as every tile band weighed on its own (stage 1's records, as `summarize`
    /// folds them): random rows of up to 64 tiles whose ceilings lie from the row's down past
    /// the floor, over the usable range of row ceilings (both ends included).
    #[test]
    fn row_band_sums_weigh_as_the_tile_bands() {
        let mut next = xorshift_stream(0x2545_f491_4f6c_dd1du64);
        let mut reached_floor = 0;
        for row in 0..500u64 {
            let mc = match row {
                0 => soft_ceil(CEIL_LIMIT - 1.0),
                1 => soft_ceil(-(CEIL_LIMIT - 64.0) + 0.5),
                _ => soft_ceil(((next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 400.0),
            };
            assert!(bands_usable(mc), "row {row}: {mc}");
            let tiles = 1 + next() % 64;
            let mut per_row_band = [0u64; BAND_FLOOR as usize + 1];
            let mut pairs = 0u128;
            for tile in 0..tiles {
                let ceiling = if tile == 0 { mc } else { mc - (next() % 48) as f32 };
                for d in 0..=BAND_FLOOR {
                    // Up to 4096 tokens' fractions of at most 2^23; some bands empty.
                    let sum = if next().is_multiple_of(5) { 0 } else { next() % (1u64 << 35) };
                    pairs += sum as u128 * band_scale(ceiling - d as f32, mc) as u128;
                    match row_band_of(mc, ceiling, d) {
                        u32::MAX => reached_floor += (sum != 0) as u32,
                        b => per_row_band[b as usize] += sum,
                    }
                }
            }
            let folded: u128 = per_row_band.iter().enumerate().map(|(b, &s)| s as u128 * band_scale(mc - b as f32, mc) as u128).sum();
            assert_eq!(folded, pairs, "row {row}: mc {mc}");
            assert!(pairs > 0, "row {row}");
        }
        assert!(reached_floor > 0, "no tile band fell past the floor");
    }

    /// Every token's `(band, frac)` gives its weight, so band sums weighed once give the row's
    /// mass, over random rows whose ceilings span the usable range (both ends included) and
    /// tokens from the top down past the floor, on integers, and not finite.
    #[test]
    fn band_and_fraction_sums_are_the_weights() {
        let mut next = xorshift_stream(0x9e37_79b9_7f4a_7c15u64);
        let unit = |r: u64| (r >> 40) as f32 / (1u64 << 24) as f32;
        for row in 0..400 {
            let max = match row {
                0 => CEIL_LIMIT - 1.0,
                1 => -(CEIL_LIMIT - 64.0) + 0.5,
                2 => 0.0,
                _ => (unit(next()) - 0.5) * 200.0,
            };
            let mc = soft_ceil(max);
            assert!(bands_usable(mc), "row {row}: {mc}");
            let (_, mc_i) = small_ceil(mc);
            let mut sums = [0u128; NO_BAND as usize];
            let mut total = 0u128;
            for t in 0..3000 {
                let x = match t % 50 {
                    0 => f32::NEG_INFINITY,
                    1 => f32::NAN,
                    2 => max,
                    3 => mc - (t % 45) as f32,
                    4 => -CEIL_LIMIT * 2.0,
                    _ => max - unit(next()) * 45.0,
                };
                let (band, frac) = band_and_fraction(x, mc_i);
                let w = weight(x, mc);
                if band < NO_BAND {
                    assert_eq!(frac as u128 * BAND_SCALE[band as usize] as u128, w, "row {row}: x = {x}");
                    sums[band as usize] += frac as u128;
                } else {
                    assert_eq!(band, NO_BAND);
                    assert_eq!(w, 0, "row {row}: x = {x} has weight but no band");
                }
                total += w;
            }
            let folded: u128 = sums.iter().zip(BAND_SCALE).map(|(&s, e)| s * e as u128).sum();
            assert_eq!(folded, total, "row {row}");
            assert!(total > 0, "row {row}");
        }
    }

    /// Verification's first pass: each warp adds its tokens to lane-private band sums under its
    /// own running ceiling (the ceiling of the largest value it has seen), moving the sums down
    /// by [`band_shift`] when a tile raises it, and at the end moves them to the row's ceiling
    /// and weighs them. The total is the row's `Σ weight`, exactly, on rows whose tiles raise
    /// the ceilings often, with masked tokens, values out of the band range and warps that see
    /// no valid token.
    #[test]
    fn running_ceiling_band_sums_are_the_weights() {
        const WARPS: usize = 4;
        const LANES: usize = 32;
        const PER_LANE: usize = 8;
        const TILES: usize = 63;
        let mut next = xorshift_stream(0x2545_f491_4f6c_dd1du64);
        let unit = |r: u64| (r >> 40) as f32 / (1u64 << 24) as f32;
        let shift = |sums: &mut [u32; NO_BAND as usize + 1], by: u32| {
            for d in (0..NO_BAND as usize).rev() {
                sums[d] = if d >= by as usize { sums[d - by as usize] } else { 0 };
            }
        };
        for row in 0..60 {
            // Rising rows (each tile's values a few units above the last's), falling ones, flat
            // ones, and rows near the band range's ends.
            let slope = [0.9f32, -0.7, 0.0, 3.5][row % 4];
            let start = match row {
                0 => CEIL_LIMIT - 300.0,
                1 => -(CEIL_LIMIT - 64.0) + 10.0,
                _ => (unit(next()) - 0.5) * 100.0,
            };
            let tiles = 1 + row % TILES;
            let value = |tile: usize, r: u64| -> f32 {
                match r % 97 {
                    0 => f32::NEG_INFINITY,
                    1 => -CEIL_LIMIT * 3.0,
                    _ => start + slope * tile as f32 - unit(r) * 30.0,
                }
            };
            let xs: std::vec::Vec<std::vec::Vec<f32>> =
                (0..tiles).map(|t| (0..WARPS * LANES * PER_LANE).map(|_| value(t, next())).collect()).collect();
            // Warp 3 sees only masked tokens in every row of a multiple of 5.
            let xs: std::vec::Vec<std::vec::Vec<f32>> = xs
                .into_iter()
                .map(|mut v| {
                    if row % 5 == 0 {
                        v[3 * LANES * PER_LANE..].fill(f32::NEG_INFINITY);
                    }
                    v
                })
                .collect();
            let max = xs.iter().flatten().fold(f32::NEG_INFINITY, |m, &x| if x > m { x } else { m });
            let mc = soft_ceil(max);
            if !bands_usable(mc) {
                continue;
            }
            let expected: u128 = xs.iter().flatten().map(|&x| weight(x, mc)).sum();
            let mut total = 0u128;
            for w in 0..WARPS {
                let mut ceiling = f32::NEG_INFINITY;
                let mut sums = [[0u32; NO_BAND as usize + 1]; LANES];
                for tile in &xs {
                    let part = &tile[w * LANES * PER_LANE..(w + 1) * LANES * PER_LANE];
                    let top = part.iter().fold(f32::NEG_INFINITY, |m, &x| if x > m { x } else { m });
                    let tile_ceil = if top > f32::NEG_INFINITY { soft_ceil(top) } else { f32::NEG_INFINITY };
                    if tile_ceil > ceiling {
                        let by = band_shift(ceiling, tile_ceil);
                        sums.iter_mut().for_each(|s| shift(s, by));
                        ceiling = tile_ceil;
                    }
                    for (lane, s) in sums.iter_mut().enumerate() {
                        for &x in &part[lane * PER_LANE..(lane + 1) * PER_LANE] {
                            let (band, frac) = band_and_fraction(x, ceiling_index(ceiling));
                            s[band as usize] = s[band as usize].checked_add(frac).unwrap();
                        }
                    }
                }
                let by = band_shift(ceiling, mc);
                for s in &mut sums {
                    shift(s, by);
                    total += (0..NO_BAND as usize).map(|d| s[d] as u128 * BAND_SCALE[d] as u128).sum::<u128>();
                }
            }
            assert_eq!(total, expected, "row {row}");
            assert!(total > 0, "row {row}");
        }
    }

    #[test]
    fn weights() {
        let mc = soft_ceil(3.2);
        assert_eq!(weight(f32::NEG_INFINITY, mc), 0);
        assert_eq!(weight(f32::NAN, mc), 0);
        assert_eq!(weight(3.0, mc), FRAC_ONE as u128 * BAND_SCALE[1] as u128);
        for x in [f32::NEG_INFINITY, f32::NAN, 3.0, 3.9, -40.0, -28.7, 4.25, f32::MIN_POSITIVE, -1e-30] {
            let (frac, scale) = weight_parts(x, mc);
            assert_eq!(weight(x, mc), frac as u128 * scale as u128, "x = {x}");
        }
        assert_eq!(weight(-40.0, mc), 0);
        // Ratio of weights tracks e^(x1 - x2).
        let w1 = weight(3.2, mc) as f64;
        let w2 = weight(0.7, mc) as f64;
        let want = (2.5f64).exp();
        assert!((w1 / w2 - want).abs() / want < 2e-6);
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

    /// SplitMix64: the crate has no dependencies, not even for tests.
    pub(crate) fn split_mix64(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }

    #[test]
    fn byte_hits_flags_exactly_the_equal_bytes() {
        let naive = |word: u32, b: u32| (0..4).fold(0u32, |m, j| m | (((word >> (8 * j)) & 0xff == b) as u32) << j);
        let mut next = split_mix64(0xb17e_5017);
        // Every byte value as the pattern, against words mixing equal bytes, their neighbours
        // (a borrow or carry would show there), 0x00, 0x7f, 0x80 and 0xff, and random bytes.
        for b in 0..=0xffu32 {
            let pattern = b.wrapping_mul(0x0101_0101);
            for _ in 0..400 {
                let r = next();
                let mut word = 0u32;
                for j in 0..4 {
                    let pick = (r >> (8 * j)) & 0xff;
                    let byte = match pick % 8 {
                        0 | 1 => b,
                        2 => b.wrapping_add(1) & 0xff,
                        3 => b.wrapping_sub(1) & 0xff,
                        4 => [0x00, 0x7f, 0x80, 0xff][(pick >> 3) as usize % 4],
                        _ => ((r >> 32) >> (8 * j)) as u32 & 0xff,
                    };
                    word |= byte << (8 * j);
                }
                assert_eq!(byte_hits(word, pattern), naive(word, b), "word {word:#010x}, byte {b:#04x}");
            }
        }
    }

    #[test]
    fn exact_bins_follow_the_key_order_and_the_bands() {
        let mut next = split_mix64(0x005e_edb1);
        let mut uniform = move || (next() >> 40) as f32 / (1u64 << 24) as f32;
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
                // The split pass's gather tests a token's band as `mc - c` before it bins it.
                let d = mc - c;
                if d <= BAND_FLOOR as f32 {
                    assert_eq!(bin / EXACT_SUB_BINS, d as u32, "x = {x}, mc = {mc}");
                } else {
                    assert_eq!(bin, EXACT_ZERO_BIN, "x = {x}, mc = {mc}");
                }
                let scale = band_scale(c, mc);
                if bin < EXACT_ZERO_BIN {
                    assert_eq!(BAND_SCALE[(bin / EXACT_SUB_BINS) as usize], scale, "x = {x}, mc = {mc}");
                } else {
                    assert_eq!(scale, 0, "x = {x}, mc = {mc} is in a band");
                }
            }
        }
    }

    #[test]
    fn first_reaching_finds_the_edge_from_any_guess() {
        let mut next = split_mix64(0x0f1_257);
        for _ in 0..200_000 {
            let first = (next() % 1000) as u32;
            let past = first + (next() % 3000) as u32;
            let edge = first + (next() % (past - first + 1) as u64) as u32;
            // Guesses anywhere, far off on both sides included, and windows of every size.
            let guess = (next() % 5000) as u32;
            let window = (next() % 200) as u32;
            let got = first_reaching(first, past, guess, window, |v| v >= edge);
            assert_eq!(got, edge, "range {first}..{past}, guess {guess}, window {window}");
        }
    }

    #[test]
    fn sub_bin_edge_window_finds_the_whole_band_search() {
        use crate::keys::{from_ordered_bits, ordered_bits};
        // The plain search over the whole band, as exact_sub_bin_edge was before its window.
        let whole_band = |at_most: u32, c: f32| {
            let (mut lo, mut hi) = (ordered_bits(c - 1.0) + 1, ordered_bits(c) + 1);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if exact_sub_bin(from_ordered_bits(mid), c) <= at_most {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            lo
        };
        let (mut missed_window, mut searched) = (0u32, 0u32);
        let mut ceilings: std::vec::Vec<f32> = (-60..=60).map(|c| c as f32).collect();
        ceilings.extend([1024.0f32, 65_537.0, 2_097_152.0, -2_097_151.0, 4_194_303.0]);
        for &c in &ceilings {
            for at_most in 0..EXACT_SUB_BINS {
                let edge = exact_sub_bin_edge(at_most, c);
                assert_eq!(edge, whole_band(at_most, c), "c = {c}, at_most = {at_most}");
                // Where the window holds the edge, the search never left it.
                let (first, past) = (ordered_bits(c - 1.0) + 1, ordered_bits(c) + 1);
                let guess = sub_bin_edge_guess(at_most, c).clamp(first, past);
                if c.abs() <= 60.0 {
                    searched += 1;
                    missed_window += (edge.abs_diff(guess) > SUB_BIN_EDGE_WINDOW) as u32;
                }
            }
            assert_eq!(exact_sub_bin_edge(u32::MAX, c), ordered_bits(c) + 1);
        }
        // The window must pay: every ceiling up to 60 in magnitude finds its edges inside it.
        assert_eq!(missed_window, 0, "{missed_window} of {searched} edges lay outside the window");
    }

    #[test]
    fn sub_bin_bounds_hold_exactly_the_sub_bin() {
        use crate::keys::{from_ordered_bits, ordered_bits};
        let mut next = split_mix64(0x5eb_b1e5);
        // Small ceilings (every sub-bin holds floats), and huge ones (a band of few floats,
        // most sub-bins empty), each band enumerated whole where it is small enough.
        let ceilings = [-40.0f32, -3.0, -1.0, 0.0, 1.0, 2.0, 17.0, 1024.0, 2_097_152.0, -2_097_151.0, 4_194_303.0];
        for &c in &ceilings {
            let (first, last) = (ordered_bits(c - 1.0) + 1, ordered_bits(c));
            let bounds: std::vec::Vec<(f32, f32)> = (0..EXACT_SUB_BINS).map(|s| exact_sub_bin_bounds(s, c)).collect();
            let check = |x: f32| {
                let s = exact_sub_bin(x, c);
                for (t, &(lo, hi)) in bounds.iter().enumerate() {
                    assert_eq!(lo <= x && x <= hi, t as u32 == s, "x = {x}, c = {c}, sub-bin {t} [{lo}, {hi}], x's {s}");
                }
            };
            if last - first < 1 << 16 {
                (first..=last).map(from_ordered_bits).for_each(check);
            } else {
                for _ in 0..20_000 {
                    check(from_ordered_bits(first + (next() % (last - first + 1) as u64) as u32));
                }
                // Each non-empty sub-bin's ends and their neighbours.
                for &(lo, hi) in &bounds {
                    if lo <= hi {
                        for o in [ordered_bits(lo), ordered_bits(hi)] {
                            for q in [o - 1, o, o + 1] {
                                if (first..=last).contains(&q) {
                                    check(from_ordered_bits(q));
                                }
                            }
                        }
                    }
                }
                assert!(bounds.iter().all(|&(lo, hi)| lo <= hi), "c = {c}: every sub-bin of a small ceiling holds floats");
            }
        }
    }
}
