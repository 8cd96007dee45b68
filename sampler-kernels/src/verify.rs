//! Speculative verification: exact acceptance test and residual weights (docs/SEMANTICS.md §10).
//!
//! The target probability of token `i` is `W_i / Z` (fixed-point weights of the kept set), the
//! draft probability is `q_i / Q` (`q_i = trunc(q · 2^63)` from the drafter's f32, `Q = Σ q`).
//! Both are rationals, so every decision is an integer comparison after cross-multiplying by
//! `Z · Q`. The products reach ~2^187, so they live in a 256-bit [`U256`] built from `u128`
//! multiplies and adds only (no division: on the GPU that would call into compiler-rt).

/// Scale of draft probabilities: `q_units = trunc(q · 2^63)`, so `q = 1` is `2^63` and fits u64.
pub const DRAFT_SCALE_LOG2: u32 = 63;

/// Unsigned 256-bit integer; field order (hi, lo) makes the derived order numeric.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct U256 {
    /// Bits 128..256.
    pub hi: u128,
    /// Bits 0..128.
    pub lo: u128,
}

const LO64: u128 = u64::MAX as u128;

impl U256 {
    /// Zero.
    pub const ZERO: U256 = U256 { hi: 0, lo: 0 };

    /// A value below 2^128.
    #[inline]
    pub const fn from_u128(v: u128) -> U256 {
        U256 { hi: 0, lo: v }
    }

    /// The full product `a · b` (schoolbook on 64-bit halves; never overflows).
    #[inline]
    pub fn mul_wide(a: u128, b: u128) -> U256 {
        let (a0, a1) = (a & LO64, a >> 64);
        let (b0, b1) = (b & LO64, b >> 64);
        let p00 = a0 * b0;
        let p01 = a0 * b1;
        let p10 = a1 * b0;
        let p11 = a1 * b1;
        // Each term < 2^64, so the middle column cannot overflow u128.
        let mid = (p00 >> 64) + (p01 & LO64) + (p10 & LO64);
        U256 {
            hi: p11 + (p01 >> 64) + (p10 >> 64) + (mid >> 64),
            lo: (p00 & LO64) | (mid << 64),
        }
    }

    /// `self + o`, wrapping at 2^256 (callers stay far below it: sums here are < 2^187).
    #[inline]
    pub fn wrapping_add(self, o: U256) -> U256 {
        let (lo, carry) = self.lo.overflowing_add(o.lo);
        U256 {
            hi: self.hi.wrapping_add(o.hi).wrapping_add(carry as u128),
            lo,
        }
    }

    /// `self - o`, wrapping (callers only subtract a smaller value).
    #[inline]
    pub fn wrapping_sub(self, o: U256) -> U256 {
        let (lo, borrow) = self.lo.overflowing_sub(o.lo);
        U256 {
            hi: self.hi.wrapping_sub(o.hi).wrapping_sub(borrow as u128),
            lo,
        }
    }

    /// `floor(self · r / 2^64)`: the 256-bit form of `decide::draw_target`; `< self` when
    /// `self > 0`.
    #[inline]
    pub fn mul_frac64(self, r: u64) -> U256 {
        let r = r as u128;
        // Limbs times r with a carry chain; the lowest limb only feeds the carry.
        let t0 = (self.lo & LO64) * r;
        let t1 = (self.lo >> 64) * r + (t0 >> 64);
        let t2 = (self.hi & LO64) * r + (t1 >> 64);
        let t3 = (self.hi >> 64) * r + (t2 >> 64);
        U256 {
            hi: t3,
            lo: (t1 & LO64) | (t2 << 64),
        }
    }

    /// True for zero.
    #[inline]
    pub fn is_zero(self) -> bool {
        self.hi == 0 && self.lo == 0
    }
}

/// Is `q` a draft probability the verifier accepts: in `[0, 1]` (NaN, negatives, > 1 are not)?
#[inline]
pub fn draft_prob_valid(q: f32) -> bool {
    (0.0..=1.0).contains(&q)
}

/// `trunc(q · 2^63)` for a valid draft probability (exact: scaling by a power of two, then a
/// truncating conversion); `-0.0` and NaN give 0.
#[inline]
pub fn draft_units(q: f32) -> u64 {
    (q * 9_223_372_036_854_775_808.0f32) as u64
}

/// The acceptance test of a draft token `d`: `u · q_d/Q < W_d/Z` with `u = r64 / 2^64`,
/// decided exactly as `floor(q_d · Z · r64 / 2^64) < W_d · Q` (equivalent to
/// `r64 · q_d · Z < 2^64 · W_d · Q` because the right side is an integer). A token with
/// `W_d = 0` is never accepted; `q_d = 0 < W_d` always is. Needs `Z, Q > 0` for meaning.
#[inline]
pub fn spec_accept(w_d: u128, z: u128, q_d: u64, q_total: u128, r64: u64) -> bool {
    let lhs = U256::mul_wide(q_d as u128, z).mul_frac64(r64);
    lhs < U256::mul_wide(w_d, q_total)
}

/// Residual weight of a token, `max(0, W·Q - q·Z)`: `Z·Q` times `max(0, p - q)`.
#[inline]
pub fn residual_weight(w: u128, z: u128, q: u64, q_total: u128) -> U256 {
    let a = U256::mul_wide(w, q_total);
    let b = U256::mul_wide(q as u128, z);
    if a > b {
        a.wrapping_sub(b)
    } else {
        U256::ZERO
    }
}

/// Relative gap beyond which [`residual_positive`] trusts its f64 products: each carries under
/// 2^-50 of relative error, so a gap of 2^-40 cannot change the exact comparison's answer.
const RESIDUAL_F64_MARGIN: f64 = 1.0 / (1u64 << 40) as f64;

/// Whether a token's residual weight `max(0, W·Q − q·Z)` is positive (`W·Q > q·Z`), for
/// `W = frac · scale` ([`crate::fixed::weight_parts`]; `scale < 2^53`). `q_total_f` and `z_f` are
/// `Q` and `Z` through [`u128_to_f64`]. Decided by f64 products when they are more than 2^-40
/// apart, else by the exact 256-bit products: always the same answer as comparing
/// [`residual_weight`] with zero, at a few f64 operations for nearly every token.
///
/// A tile's residual sum is then `Q · ΣW − Z · Σq` over its positive tokens, two u128 sums
/// per token instead of two 256-bit products.
#[inline]
pub fn residual_positive(frac: u32, scale: u64, q: u64, q_total: u128, z: u128, q_total_f: f64, z_f: f64) -> bool {
    let a = frac as f64 * scale as f64 * q_total_f;
    let b = q as f64 * z_f;
    if a > b * (1.0 + RESIDUAL_F64_MARGIN) {
        return true;
    }
    if a < b * (1.0 - RESIDUAL_F64_MARGIN) {
        return false;
    }
    U256::mul_wide(frac as u128 * scale as u128, q_total) > U256::mul_wide(q as u128, z)
}

/// Relative gap beyond which [`residual_screen`] trusts its f32 estimates: each is within
/// 2^-22 of its exact ratio (two roundings of 2^-24 on each side, and 2^-51 from the f64
/// totals), so a gap of 2^-16 cannot change the exact comparison's answer.
const RESIDUAL_F32_MARGIN: f32 = 1.0 / 65_536.0;

/// `v ≤ 2^23` (a [`crate::fixed::frac_weight`]) as an f32, exactly, with no conversion
/// instruction (on the GPU those issue at an eighth of the float rate): `v`'s bits under the
/// exponent of 2^23, less 2^23.
#[inline(always)]
pub fn frac_as_f32(v: u32) -> f32 {
    f32::from_bits(v | 0x4b00_0000) - 8_388_608.0
}

/// `num / den` rounded to f32 (a verification draw's per-row factors: `E[d] / Z` per band and
/// `1 / Q`, [`residual_screen`]'s inputs).
#[inline]
pub fn ratio_f32(num: f64, den: f64) -> f32 {
    (num / den) as f32
}

/// Whether a token's residual weight `max(0, W·Q − q·Z)` is positive, from f32 estimates of
/// the two probabilities, or `None` when they are too close to tell (then the caller compares
/// the exact 256-bit products, as [`residual_positive`] does).
/// - `frac` and `e_over_z`: the token's weight `W = frac · E[d]` as `frac ≤ 2^23` and
///   `ratio_f32(E[d], Z)` (Z through [`u128_to_f64`]);
/// - `q`: its draft units, `q = trunc(qf)` for `qf < 2^64` (`qf = q_f32 · 2^63`, or 1 for a
///   one-hot draft);
/// - `inv_q`: `ratio_f32(1, Q)`.
///
/// `q = 0` is positive exactly when `W` is. Otherwise `W / Z` and `q / Q` are estimated at a
/// few f32 operations, no conversion, where [`residual_positive`] spent three 64-bit
/// conversions and five f64 products a token; `qf − 1` bounds `q` from below where `qf`
/// has a fraction (under 2^23).
#[inline(always)]
pub fn residual_screen(frac: u32, e_over_z: f32, q: u64, qf: f32, inv_q: f32) -> Option<bool> {
    match residual_screen_code(frac, e_over_z, q, qf, inv_q) {
        SCREEN_POSITIVE => Some(true),
        SCREEN_ZERO => Some(false),
        _ => None,
    }
}

/// [`residual_screen_code`]: the residual weight is 0 (`Some(false)`).
pub const SCREEN_ZERO: u32 = 0;
/// [`residual_screen_code`]: the residual weight is positive (`Some(true)`).
pub const SCREEN_POSITIVE: u32 = 1;
/// [`residual_screen_code`]: too close to tell; the exact products decide (`None`).
pub const SCREEN_UNSURE: u32 = 2;

/// [`residual_screen`] as a code ([`SCREEN_ZERO`], [`SCREEN_POSITIVE`], [`SCREEN_UNSURE`]),
/// written with selects: the draw's token loop takes eight tokens in one basic block, so that
/// their arithmetic overlaps, which a branch per token prevented.
// (`!(qf < 2^64)` takes NaN too, in one unordered compare: `is_nan() ||` made it three.)
#[allow(clippy::neg_cmp_op_on_partial_ord)]
#[inline(always)]
pub fn residual_screen_code(frac: u32, e_over_z: f32, q: u64, qf: f32, inv_q: f32) -> u32 {
    let p = frac_as_f32(frac) * e_over_z;
    let above = p > qf * inv_q * (1.0 + RESIDUAL_F32_MARGIN);
    let q_low = if qf < 8_388_608.0 { qf - 1.0 } else { qf };
    let below = p < q_low * inv_q * (1.0 - RESIDUAL_F32_MARGIN);
    let screened = if above {
        SCREEN_POSITIVE
    } else if below {
        SCREEN_ZERO
    } else {
        SCREEN_UNSURE
    };
    let when_q_zero = if frac != 0 && e_over_z > 0.0 { SCREEN_POSITIVE } else { SCREEN_ZERO };
    if q == 0 {
        when_q_zero
    } else if !(qf < 18_446_744_073_709_551_616.0) {
        SCREEN_UNSURE
    } else {
        screened
    }
}

/// `v` as f64 within 2^-51 of relative error, without a u128 conversion (on the GPU that is a
/// call into compiler-rt): the two 64-bit halves, each converted natively.
#[inline]
pub fn u128_to_f64(v: u128) -> f64 {
    (v >> 64) as u64 as f64 * 18_446_744_073_709_551_616.0 + v as u64 as f64
}

/// Draw target in a residual of total `total`: `floor(total · r64 / 2^64)`; the chosen token is
/// the first (index order) whose running residual sum exceeds it.
#[inline]
pub fn residual_target(total: U256, r64: u64) -> U256 {
    total.mul_frac64(r64)
}

/// How `verify_rows`' blocks share a call's target rows ([`group_shape`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupShape {
    /// The block's first item (`≥ items`: the block idles).
    pub first: u32,
    /// The block's place in its group: it takes tiles `g, g + size, ...` of each row.
    pub g: u32,
    /// Blocks per group; 1 is a block alone, which takes whole rows from a counter after
    /// `first`.
    pub size: u32,
    /// A group of `size > 1` takes item `first`, then items from `stride` up as its leader
    /// takes them from a counter (`verify_rows`): every item at or past `stride` goes to the
    /// group that asks first. 0: `first` alone.
    pub stride: u32,
}

/// Whether most chains of the last call stopped at their first draft, from its
/// `VerifyParams::chain_stats` word (stopped in the low half, ran past it in the high half): at
/// least three in four of its requests with drafts, and one or more. Zero (the first call) is
/// no.
#[inline(always)]
pub fn chains_stop_early(stats: u64) -> bool {
    let (stopped, ran) = (stats as u32 as u64, stats >> 32);
    stopped > 0 && stopped >= 3 * ran
}

/// How many times the blocks a row gets in one round a group taking rows in turn must give it,
/// with few rows and chains that stopped early: with twice as many (one request of eight rows,
/// B = 1) groups in turn took 1.025× the time, since a row's time is mostly its passes'
/// latency and the turn's hand-out adds to it; with five to eight times, 0.67–0.72× (B = 8).
pub const IN_TURN_GAIN: u32 = 4;

/// How a co-resident grid of `grid` blocks shares `items` target rows of `requests` requests
/// (`random` of them random), rows of `tiles` tiles each, for block `block`; `stop_early` is
/// [`chains_stop_early`] of the last call.
/// - Groups of `grid / requests` blocks (at most one per tile) take the items in turn, when at
///   least half of the requests are random, and either the rows outnumber half the grid, or
///   the last call's chains mostly stopped at their first draft and these groups are at least
///   [`IN_TURN_GAIN`] times the one-round groups below. Group `i` takes item `i` of the position-major order,
///   then the next from a counter. Whole rows, one per block, ran every row of a chain at
///   once, so a row past the chain's stop was rarely known to be one; one-round groups too run
///   a chain's rows at once, each on a fraction of the blocks its first row could have, which
///   costs little when chains run on and much when they stop at once (groups in turn at
///   B = 8: 0.71× the time where every chain stopped at its first draft, 1.43–1.73× where
///   drafts were accepted half the time or more; session 56). A random row takes several
///   passes, which a skip saves; a greedy row takes one, and groups cost it more in barriers
///   and pipeline starts than they save (all-greedy calls measured 1.17×).
/// - Otherwise few rows (at most `grid / 2`): each gets `grid / items` blocks (at most one per
///   tile), one round.
/// - Otherwise `size` is 1 and blocks take whole rows, `first` = `block`, then from a counter.
///
/// It depends only on the launch, the header and the last call's counts, so every block agrees.
#[inline(always)]
pub fn group_shape(grid: u32, block: u32, items: u32, requests: u32, random: u32, tiles: u32, stop_early: bool) -> GroupShape {
    let alone = GroupShape { first: block, g: 0, size: 1, stride: 0 };
    let per_item = grid.checked_div(items).unwrap_or(0).min(tiles);
    let per_request = grid.checked_div(requests).unwrap_or(0).min(tiles);
    let larger = per_item <= 1 || stop_early && per_request >= IN_TURN_GAIN * per_item;
    let in_turn = per_request > 1 && larger && items > 0 && random * 2 >= requests;
    if per_item > 1 && !in_turn {
        return GroupShape { first: block / per_item, g: block % per_item, size: per_item, stride: 0 };
    }
    if in_turn {
        let groups = grid / per_request;
        let first = if block < groups * per_request { block / per_request } else { items };
        return GroupShape { first, g: block % per_request, size: per_request, stride: groups };
    }
    alone
}

/// Most tiles in one `verify_draws` item when rows cost unequally: blocks then take several
/// items each.
pub const DRAW_SPAN_MAX: u32 = 8;

/// Tiles per `verify_draws` item when `listed` rows draw, `wide` of them with no kept floor,
/// on a grid of `grid` blocks. When nearly all are wide, every tile costs alike: one round, each
/// row split into `grid / listed` equal items (a row per item once rows outnumber blocks).
/// Otherwise the grid's share of the tiles, up to `DRAW_SPAN_MAX`: a small call is still one
/// round, and past that the hand-out evens out rows of unequal cost (a truncated row's tiles
/// cost a few chunks, a wide row's all of them). At least 1; above `tiles` only when a row has
/// fewer than `DRAW_SPAN_MAX` tiles, where an item is the whole row.
#[inline(always)]
pub fn draw_span(listed: u32, wide: u32, tiles: u32, grid: u32) -> u32 {
    let grid = if grid > 0 { grid } else { 1 };
    let tiles = if tiles > 0 { tiles } else { 1 };
    if wide * 10 >= listed * 9 {
        let per_row = (grid / if listed > 0 { listed } else { 1 }).clamp(1, tiles);
        tiles.div_ceil(per_row)
    } else {
        (listed * tiles).div_ceil(grid).clamp(1, DRAW_SPAN_MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::draw_target;

    /// `chains_stop_early` at its boundaries: at least three in four of the last call's chains
    /// with drafts stopped at their first draft, and one or more did; the two halves of the
    /// word are counted apart (a count in the high half never reads as stopped chains), and
    /// `3 · ran` does not overflow at the largest counts.
    #[test]
    fn chains_stop_early_at_its_boundaries() {
        let word = |stopped: u32, ran: u32| stopped as u64 | (ran as u64) << 32;
        for (stopped, ran, early) in [
            (0, 0, false),
            (1, 0, true),
            (3, 1, true),
            (2, 1, false),
            (299, 100, false),
            (300, 100, true),
            (0, 7, false),
            (u32::MAX, u32::MAX / 3, true),
            (u32::MAX, u32::MAX / 3 + 1, false),
        ] {
            assert_eq!(chains_stop_early(word(stopped, ran)), early, "stopped {stopped}, ran {ran}");
        }
    }

    /// Every item gets the same number of blocks (or is visited by exactly one block in turn),
    /// groups are whole, consecutive and disjoint, their blocks take the same items, and no
    /// group is larger than the item's tiles. Rows outnumber half the grid only with groups
    /// that take items in turn or with blocks alone.
    #[test]
    fn group_shapes_cover_every_item_once() {
        use std::{format, vec::Vec};
        for grid in [1u32, 7, 132, 264] {
            for items in 1u32..300 {
                for (requests, random) in [1u32, 3, 17, 33, 66, 67, 132, 299].into_iter().filter(|&r| r <= items).flat_map(|r| [(r, r), (r, r / 2), (r, 0)]) {
                    for (tiles, stop_early) in [1u32, 8, 37, 64].into_iter().flat_map(|t| [(t, false), (t, true)]) {
                        let label = format!("grid {grid} items {items} requests {requests} random {random} tiles {tiles} early {stop_early}");
                        let mut blocks_of = [0u32; 300];
                        let mut seen: Option<(u32, u32)> = None;
                        let mut items_of_group: Vec<Vec<u32>> = Vec::new();
                        for block in 0..grid {
                            let s = group_shape(grid, block, items, requests, random, tiles, stop_early);
                            assert!(s.size >= 1 && s.size <= tiles.max(1) && s.g < s.size, "{label}");
                            assert_eq!(*seen.get_or_insert((s.size, s.stride)), (s.size, s.stride), "{label}: every block agrees");
                            assert_eq!(s.g, block % s.size, "{label}: consecutive groups");
                            let mut taken = Vec::new();
                            let mut item = s.first;
                            while item < items {
                                blocks_of[item as usize] += 1;
                                taken.push(item);
                                if s.size > 1 && s.stride == 0 {
                                    break;
                                }
                                // Blocks alone and groups in turn take the counter's items;
                                // any visiting order that reaches each once stands for it.
                                item += if s.size == 1 { grid } else { s.stride };
                            }
                            let group = (block / s.size) as usize;
                            if s.g == 0 {
                                items_of_group.push(taken);
                            } else if s.first < items {
                                assert_eq!(items_of_group[group], taken, "{label}: block {block} leaves its group");
                            }
                        }
                        let (size, stride) = seen.unwrap_or((1, 0));
                        for (item, &n) in blocks_of.iter().enumerate().take(items as usize) {
                            assert_eq!(n, size, "{label}: item {item}");
                        }
                        if items * 2 > grid && size > 1 {
                            assert!(stride > 0 && requests * 2 <= grid && random * 2 >= requests, "{label}: {size} blocks per row");
                        }
                        let (per_item, per_request) = ((grid / items).min(tiles), (grid / requests).min(tiles));
                        if stride > 0 {
                            assert!(random * 2 >= requests, "{label}: groups in turn with most requests greedy");
                            assert!(items * 2 > grid || stop_early && per_request >= IN_TURN_GAIN * per_item, "{label}: few rows in turn without the hint, or in small groups");
                        }
                        let fits_in_turn = per_request > 1 && random * 2 >= requests;
                        if fits_in_turn && (items * 2 > grid || stop_early && per_request >= IN_TURN_GAIN * per_item) {
                            assert!(stride > 0, "{label}: rows a group could take in turn go to one round or blocks alone");
                        }
                    }
                }
            }
        }
    }

    fn xorshift(s: &mut u64) -> u64 {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        *s
    }

    #[test]
    fn wide_products() {
        assert_eq!(U256::mul_wide(0, u128::MAX), U256::ZERO);
        assert_eq!(U256::mul_wide(3, 5), U256::from_u128(15));
        // (2^128 - 1)^2 = 2^256 - 2^129 + 1.
        let m = U256::mul_wide(u128::MAX, u128::MAX);
        assert_eq!(
            m,
            U256 {
                hi: u128::MAX - 1,
                lo: 1
            }
        );
        assert_eq!(
            U256::mul_wide(1 << 100, 1 << 100),
            U256 { hi: 1 << 72, lo: 0 }
        );
        // Products that fit u128 agree with u128; add/sub invert each other.
        let mut s = 0x1234_5678_9abc_def1u64;
        for _ in 0..10_000 {
            let a = (xorshift(&mut s) as u128) << (xorshift(&mut s) % 40);
            let b = xorshift(&mut s) as u128 >> (xorshift(&mut s) % 60);
            if let Some(p) = a.checked_mul(b) {
                assert_eq!(U256::mul_wide(a, b), U256::from_u128(p));
            }
            let x = U256::mul_wide(a << 20, b << 30);
            let y = U256::mul_wide(b, a);
            assert_eq!(x.wrapping_add(y).wrapping_sub(y), x);
            assert!(x.wrapping_add(y) >= x);
        }
        let c = U256 {
            hi: 0,
            lo: u128::MAX,
        }
        .wrapping_add(U256::from_u128(1));
        assert_eq!(c, U256 { hi: 1, lo: 0 });
        assert_eq!(
            c.wrapping_sub(U256::from_u128(1)),
            U256 {
                hi: 0,
                lo: u128::MAX
            }
        );
    }

    #[test]
    fn frac64_matches_draw_target_below_2_128() {
        let mut s = 0xdead_beef_cafe_f00du64;
        for _ in 0..10_000 {
            let t = ((xorshift(&mut s) as u128) << 64 | xorshift(&mut s) as u128)
                >> (xorshift(&mut s) % 100);
            let r = xorshift(&mut s);
            assert_eq!(
                U256::from_u128(t).mul_frac64(r),
                U256::from_u128(draw_target(t, r))
            );
        }
        // Top of the range: (2^256 - 1) · (2^64 - 1) / 2^64 = 2^256 - 2^192 - 1 (floor).
        let max = U256 {
            hi: u128::MAX,
            lo: u128::MAX,
        };
        let got = max.mul_frac64(u64::MAX);
        assert_eq!(
            got,
            U256 {
                hi: u128::MAX - (1u128 << 64),
                lo: u128::MAX
            }
        );
        assert_eq!(max.mul_frac64(0), U256::ZERO);
        // Scaling by 2^128 shifts the answer by 2^128.
        let t = 0x0123_4567_89ab_cdef_0011_2233_4455_6677u128;
        let r = 0xfedc_ba98_7654_3210u64;
        assert_eq!(
            U256 { hi: t, lo: 0 }.mul_frac64(r),
            U256 {
                hi: draw_target(t, r),
                lo: (t.wrapping_mul(r as u128)) << 64
            }
        );
    }

    #[test]
    fn units() {
        assert_eq!(draft_units(1.0), 1 << 63);
        assert_eq!(draft_units(0.5), 1 << 62);
        assert_eq!(draft_units(0.0), 0);
        assert_eq!(draft_units(-0.0), 0);
        assert_eq!(draft_units(f32::MIN_POSITIVE), 0);
        assert_eq!(
            draft_units(0.1),
            (0.1f32 as f64 * (1u64 << 63) as f64) as u64
        );
        assert!(draft_prob_valid(0.0) && draft_prob_valid(-0.0) && draft_prob_valid(1.0));
        assert!(!draft_prob_valid(f32::NAN) && !draft_prob_valid(-1e-30));
        assert!(!draft_prob_valid(1.000_000_1) && !draft_prob_valid(f32::INFINITY));
    }

    #[test]
    fn acceptance_edges() {
        let z = 1000u128;
        // p(d) = 0: never; q(d) = 0 and p(d) > 0: always.
        for r in [0, 1, u64::MAX] {
            assert!(!spec_accept(0, z, 5, 10, r));
            assert!(spec_accept(1, z, 0, 10, r));
            // p = q: always (u < 1).
            assert!(spec_accept(300, z, 3, 10, r));
        }
        // p(d) = 0.25, q(d) = 0.5 (one quarter of 2^64 from the threshold at u = 1/2).
        assert!(spec_accept(250, z, 5, 10, (1 << 63) - 1));
        assert!(!spec_accept(250, z, 5, 10, 1 << 63));
        // Largest operands stay exact: W <= 2^75, Z <= 2^95, q = 2^63, Q < 2^83.
        let w = (1u128 << 83) - 1;
        let zz = (1u128 << 103) - 7;
        let q = 1u64 << 63;
        let qq = (1u128 << 83) - 1;
        assert!(spec_accept(w, zz, q, qq, 0));
        let _ = spec_accept(w, zz, q, qq, u64::MAX);
    }

    /// `residual_positive` agrees with the exact residual on random magnitudes over the whole
    /// range, on exact ties, and on pairs one unit apart at the largest magnitudes (where the
    /// f64 products cannot tell them apart and the exact path decides); the split sum
    /// `Q · ΣW − Z · Σq` over the positive tokens equals the sum of residual weights.
    #[test]
    fn residual_positive_matches_the_exact_residual() {
        use crate::fixed::BAND_SCALE;
        assert!(BAND_SCALE.iter().all(|&e| e < 1u64 << 53));
        let mut s = 0x1234_5678_9abc_def1u64;
        let mut both = [0usize; 2];
        for _ in 0..20_000 {
            let frac = (xorshift(&mut s) % (1 << 23)) as u32 + (xorshift(&mut s) % 2) as u32;
            let scale = BAND_SCALE[(xorshift(&mut s) % BAND_SCALE.len() as u64) as usize] >> (xorshift(&mut s) % 4);
            let q_total = ((xorshift(&mut s) as u128) << (xorshift(&mut s) % 18)) | 1;
            let z = ((xorshift(&mut s) as u128) << (xorshift(&mut s) % 30)) | 1;
            let (mut sum_w, mut sum_q, mut want) = (0u128, 0u128, U256::ZERO);
            for _ in 0..8 {
                let q = match xorshift(&mut s) % 4 {
                    0 => 0,
                    1 => xorshift(&mut s) >> 1,
                    // Near the tie W·Q = q·Z.
                    _ => {
                        let w = frac as u128 * scale as u128;
                        let tie = (u128_to_f64(w) * u128_to_f64(q_total) / u128_to_f64(z)) as u64;
                        tie.wrapping_add(xorshift(&mut s) % 3).wrapping_sub(1)
                    }
                };
                let exact = residual_weight(frac as u128 * scale as u128, z, q, q_total);
                let fast = residual_positive(frac, scale, q, q_total, z, u128_to_f64(q_total), u128_to_f64(z));
                assert_eq!(fast, !exact.is_zero(), "frac {frac} scale {scale} q {q} Q {q_total} Z {z}");
                both[fast as usize] += 1;
                if fast {
                    sum_w += frac as u128 * scale as u128;
                    sum_q += q as u128;
                }
                want = want.wrapping_add(exact);
            }
            assert_eq!(U256::mul_wide(sum_w, q_total).wrapping_sub(U256::mul_wide(sum_q, z)), want);
        }
        assert!(both[0] > 1000 && both[1] > 1000, "{both:?}");
        // Exact ties (q = W, Z = Q) and one unit either side, where only the exact path can
        // tell: W ≈ 2^62, Q ≈ 2^81.
        let (frac, scale, qq) = ((1u32 << 23) - 1, (1u64 << 39) + 12_345, (1u128 << 81) - 3);
        let w = frac as u64 * scale;
        for (q, positive) in [(w, false), (w - 1, true), (w + 1, false)] {
            assert!(residual_weight(w as u128, qq, q, qq).is_zero() != positive);
            assert_eq!(residual_positive(frac, scale, q, qq, qq, u128_to_f64(qq), u128_to_f64(qq)), positive, "q = W {:+}", q as i128 - w as i128);
        }
        // Plain weights (Q = 1, Z = 0, q = 0): positive exactly when W is.
        assert!(residual_positive(5, 7, 0, 1, 0, 1.0, 0.0));
        assert!(!residual_positive(0, 7, 0, 1, 0, 1.0, 0.0));
        assert!(!residual_positive(0, 0, 0, 1, 0, 1.0, 0.0));
    }

    /// `residual_screen`, where it answers, gives the exact answer: on random weights, masses
    /// and draft probabilities over the whole range, on probabilities from one to 2^12 f32
    /// steps from the tie `q / Q = W / Z` (inside its margin it must decline), on drafts under
    /// 2^-40 (whose units truncate a fraction), and on one-hot drafts; and it answers most
    /// cases.
    #[test]
    fn residual_screen_agrees_with_the_exact_residual() {
        use crate::fixed::BAND_SCALE;
        let mut s = 0x5eed_0f5c_2ee4_u64;
        let unit = |r: u64| (r >> 40) as f32 / (1u64 << 24) as f32;
        let (mut answered, mut declined) = ([0usize; 2], 0usize);
        for case in 0..200_000 {
            let frac = ((xorshift(&mut s) % (1 << 23)) as u32 + (xorshift(&mut s) % 2) as u32).max(1);
            let e = BAND_SCALE[(xorshift(&mut s) % BAND_SCALE.len() as u64) as usize];
            let w = frac as u128 * e as u128;
            // Z at least the weight (a kept token's), up to 2^100; Q from one unit to 2^88.
            let z = w + (((xorshift(&mut s) as u128) << 64 | xorshift(&mut s) as u128) >> (28 + xorshift(&mut s) % 100));
            let one_hot = case % 7 == 0;
            let q_total = if one_hot { 1 } else { (((xorshift(&mut s) as u128) << 64 | xorshift(&mut s) as u128) >> (40 + xorshift(&mut s) % 88)) | 1 };
            let (q, qf) = if one_hot {
                (1u64, 1.0f32)
            } else {
                let q32 = match case % 5 {
                    // Near the tie: q32 · 2^63 / Q ≈ W / Z, then 2^0 to 2^12 f32 steps either
                    // way (the margin is about 2^7 to 2^8 of them).
                    0 | 1 => {
                        let tie = (u128_to_f64(w) / u128_to_f64(z) * u128_to_f64(q_total) / 2f64.powi(63)) as f32;
                        let r = xorshift(&mut s);
                        let steps = (1i32 << (r % 13)) + ((r >> 8) % 4) as i32 - 2;
                        let steps = if r & (1 << 20) != 0 { steps } else { -steps };
                        f32::from_bits((tie.to_bits() as i32 + steps) as u32)
                    }
                    // Tiny drafts, whose units keep a fraction before truncation.
                    2 => unit(xorshift(&mut s)) * 2f32.powi(-40 - (xorshift(&mut s) % 30) as i32),
                    _ => unit(xorshift(&mut s)).powi(1 + (xorshift(&mut s) % 12) as i32),
                };
                if !draft_prob_valid(q32) {
                    continue;
                }
                (draft_units(q32), q32 * 9_223_372_036_854_775_808.0)
            };
            if q as u128 > q_total {
                continue; // Q sums the row's units, so it holds each of them.
            }
            let exact = residual_positive(frac, e, q, q_total, z, u128_to_f64(q_total), u128_to_f64(z));
            assert_eq!(exact, !residual_weight(w, z, q, q_total).is_zero());
            match residual_screen(frac, ratio_f32(e as f64, u128_to_f64(z)), q, qf, ratio_f32(1.0, u128_to_f64(q_total))) {
                Some(v) => {
                    assert_eq!(v, exact, "case {case}: frac {frac} E {e} q {q} qf {qf} Q {q_total} Z {z}");
                    answered[v as usize] += 1;
                }
                None => declined += 1,
            }
        }
        // (This seed: 16814 negative and 65071 positive answers, 55592 declined.)
        assert!(answered[0] > 10_000 && answered[1] > 40_000, "{answered:?}");
        assert!(declined > 0 && declined < 70_000, "declined {declined}");
        // q = 0: positive exactly when W is.
        assert_eq!(residual_screen(5, 0.5, 0, 0.0, 1.0), Some(true));
        assert_eq!(residual_screen(0, 0.5, 0, 0.0, 1.0), Some(false));
        // Units that would not fit a u64: declined.
        assert_eq!(residual_screen(5, 0.5, u64::MAX, f32::INFINITY, 1e-30), None);
        for v in [0u32, 1, 2, 12_345, (1 << 23) - 1, 1 << 23] {
            assert_eq!(frac_as_f32(v), v as f32);
        }
    }

    #[test]
    fn u128_to_f64_is_close() {
        let mut s = 0x0dd_ba11_u64;
        for _ in 0..10_000 {
            let v = ((xorshift(&mut s) as u128) << 64 | xorshift(&mut s) as u128) >> (xorshift(&mut s) % 128);
            let got = u128_to_f64(v);
            let want = v as f64;
            assert!((got - want).abs() <= want * 2f64.powi(-51), "{v}: {got} vs {want}");
        }
        assert_eq!(u128_to_f64(0), 0.0);
        assert_eq!(u128_to_f64(1 << 100), 2f64.powi(100));
    }

    #[test]
    fn residual_is_positive_part() {
        assert_eq!(residual_weight(0, 100, 7, 10), U256::ZERO);
        assert_eq!(residual_weight(50, 100, 5, 10), U256::ZERO); // p = q
        assert_eq!(residual_weight(60, 100, 5, 10), U256::from_u128(100)); // 600 - 500
        assert_eq!(residual_weight(40, 100, 5, 10), U256::ZERO);
        // One-hot q (Q = 1): other tokens keep W, the draft keeps max(0, W - Z) = 0.
        assert_eq!(residual_weight(40, 100, 0, 1), U256::from_u128(40));
        assert_eq!(residual_weight(100, 100, 1, 1), U256::ZERO);
        assert_eq!(
            residual_target(U256::from_u128(100), u64::MAX),
            U256::from_u128(99)
        );
    }

    /// A call whose drawing rows are (nearly) all wide runs in one round of items when it has
    /// no more rows than blocks, split as finely as that allows; other calls take spans of at
    /// most `DRAW_SPAN_MAX` tiles and no more than one round's share.
    #[test]
    fn draw_spans_fit_rows_and_rounds() {
        for grid in [1u32, 7, 132, 264] {
            for tiles in [1u32, 8, 32, 37, 64, 256] {
                for listed in 0u32..400 {
                    for wide in [0, listed / 2, listed * 9 / 10, listed] {
                        let span = draw_span(listed, wide, tiles, grid);
                        assert!(span >= 1 && (span <= tiles || span <= DRAW_SPAN_MAX), "grid {grid} tiles {tiles} listed {listed}: {span}");
                        let items = listed * tiles.div_ceil(span);
                        if wide * 10 >= listed * 9 {
                            if listed <= grid {
                                assert!(items <= grid, "grid {grid} tiles {tiles} listed {listed}: {items} items");
                            }
                            assert!(span <= tiles);
                            // The finest split that keeps one round.
                            let per_row = tiles.div_ceil(span);
                            if listed > 0 && listed <= grid {
                                assert!(per_row * listed <= grid);
                                assert!(span == 1 || (tiles.div_ceil(span - 1)) * listed > grid, "grid {grid} tiles {tiles} listed {listed}: span {span} not the finest");
                            }
                        } else {
                            assert!(span <= DRAW_SPAN_MAX);
                            // No more than one round's share: the grid's tiles per block.
                            assert!(span <= (listed * tiles).div_ceil(grid).max(1));
                        }
                    }
                }
            }
        }
        // The H200 calls measured (132 blocks, V = 151936: 37 tiles): uniform B = 128 takes a
        // row per item, B = 32 four items a row, B = 8 sixteen (spans of 3); heterogeneous
        // B = 128 (about 96 drawing rows, few wide) spans of 8.
        assert_eq!(draw_span(128, 128, 37, 132), 37);
        assert_eq!(draw_span(32, 32, 37, 132), 10);
        assert_eq!(draw_span(8, 8, 37, 132), 3);
        assert_eq!(draw_span(96, 10, 37, 132), 8);
        assert_eq!(draw_span(1, 0, 37, 132), 1);
    }
}
