//! Decisions on processed logits: min-p threshold, top-p stopping test, draw target, and the
//! device-side sanity check of settings. Integer where it matters, so both sides agree.

use crate::fixed::{soft_ln, MAX_WEIGHT};
use crate::keys::{key_value, ordered_bits};

/// `p24` for `top_p`: `max(1, trunc(p * 2^24))`. `p * 2^24` is exact (power-of-two scale).
#[inline]
pub fn top_p_units(p: f32) -> u32 {
    let u = (p * 16_777_216.0) as u32;
    if u == 0 {
        1
    } else {
        u
    }
}

/// `top_p == 1` keeps everything (no top-p pass at all).
#[inline]
pub fn top_p_disabled(p: f32) -> bool {
    p >= 1.0
}

/// Has a prefix of mass `mass` reached fraction `p24 / 2^24` of `total`?
/// Exact: `mass * 2^24 >= total * p24`; no overflow for `total < 2^103`.
#[inline]
pub fn top_p_reached(mass: u128, total: u128, p24: u32) -> bool {
    (mass << 24) >= total * (p24 as u128)
}

/// Can `n` keys of a row reach top-p `p24` of its mass `total` ([`top_p_reached`])? Not when
/// even `n` keys of the largest weight a token can have ([`MAX_WEIGHT`]) fall short. Stage 2
/// asks it of the most keys the row's candidate lists hold: a row whose nucleus is wider than
/// all of them (a flat row's) goes to the exact pass without the merge and sort that would find
/// that out. `n < 2^28`.
#[inline]
pub fn top_p_within(n: u32, total: u128, p24: u32) -> bool {
    top_p_reached(n as u128 * MAX_WEIGHT, total, p24)
}

/// min-p threshold in logit space: keep `x >= max + soft_ln(min_p)`. `min_p <= 0` disables
/// (returns `-inf`, which keeps every finite token).
#[inline]
pub fn min_p_threshold(max: f32, min_p: f32) -> f32 {
    if min_p.is_nan() || min_p <= 0.0 {
        return f32::NEG_INFINITY;
    }
    max + soft_ln(min_p)
}

/// min-p as a key floor: a key survives min-p exactly when it is `>=` this (value bits above
/// the index bits, so every index of the threshold's value passes). 1 (every valid key) when
/// min-p is off; never 0, which marks "no key".
#[inline]
pub fn min_p_floor(max_key: u64, min_p: f32) -> u64 {
    if min_p > 0.0 {
        let floor = (ordered_bits(min_p_threshold(key_value(max_key), min_p)) as u64) << 32;
        if floor == 0 {
            1
        } else {
            floor
        }
    } else {
        1
    }
}

/// `floor(total * r64 / 2^64)` without 256-bit arithmetic; `< total` whenever `total > 0`.
#[inline]
pub fn draw_target(total: u128, r64: u64) -> u128 {
    let hi = total >> 64;
    let lo = (total as u64) as u128;
    hi * (r64 as u128) + ((lo * (r64 as u128)) >> 64)
}

/// How many top log-probabilities a row asks for (`RowSettings::flags`).
#[inline]
pub fn top_logprobs(flags: u32) -> u32 {
    (flags >> crate::abi::ROW_TOP_LOGPROBS_SHIFT) & 0xff
}

/// Whether stage 2 decides a row with these settings itself, whatever its logits, so that the
/// row is never left to the exact pass: a greedy row (`temperature == 0`) that wants no
/// log-probability and no top log-probabilities (`RowSettings::flags`). `sample_rows` finishes
/// such a row from its tile records before any test that could list it. A step whose rows are
/// all such is a greedy step: the host launches `sample_tiles_greedy` alone, which finishes
/// the rows (`sampler::finish_greedy_row`, the same outputs).
#[inline]
pub fn stage2_always_decides(temperature: f32, flags: u32) -> bool {
    use crate::abi::ROW_WANT_LOGPROB;
    temperature == 0.0 && flags & ROW_WANT_LOGPROB == 0 && top_logprobs(flags) == 0
}

/// The largest top-k that [`stage2_seldom_lists`] counts on stage 2 to settle (the design's
/// candidate count, `k_c` = 128). Up to the 32 keys of one tile list a merge holds the first
/// `k` keys whenever it fits its 2048; past that, when the row's largest keys crowd into few
/// tiles, stage 2 re-reads up to three of them (`sampler::merge_crowded`), which settles any
/// `k` up to this one.
pub const SELDOM_LISTED_TOP_K: u32 = 128;

/// Whether stage 2 leaves a row with these settings to the exact pass only on unusual logits
/// (huge or infinite values, a top-k beyond the merged prefix): a greedy row, a random row
/// with top-k up to [`SELDOM_LISTED_TOP_K`] (top-p and min-p then act inside the top-k
/// prefix), or a random row with no truncation (drawn from the tile masses). A top-p or min-p
/// row without such a top-k is listed whenever its kept set is wider than the merge, as most
/// flat rows' are. A prediction, not a promise: for a step of such rows the host launches no
/// exact pass (`ExactPassLaunch::BySettings`), and stage 2's quiet build finishes a row it
/// cannot decide itself, with the single-block pass, only more slowly.
#[inline]
pub fn stage2_seldom_lists(s: &crate::abi::RowSettings) -> bool {
    // min-p is off unless it is a number above 0 (0, negative or NaN: off).
    let min_p_on = s.min_p > 0.0;
    let untruncated = s.top_k == 0 && top_p_disabled(s.top_p) && !min_p_on;
    s.temperature == 0.0 || (s.top_k > 0 && s.top_k <= SELDOM_LISTED_TOP_K) || untruncated
}

/// Whether a row with these settings may skip its candidate lists when its request's last step
/// was wide (`abi::SLOT_WIDE`): a random row with top-p alone (no top-k, no min-p, no top
/// log-probabilities). Stage 2 leaves such a row to the exact pass without reading its lists;
/// the pass's band mode needs none. Never a row of a quiet step ([`stage2_seldom_lists`] is
/// false), whose stage 2 would finish it with the slow single-block pass.
#[inline]
pub fn lists_skippable(s: &crate::abi::RowSettings) -> bool {
    // min-p is off unless it is a number above 0 (0, negative or NaN: off).
    let min_p_on = s.min_p > 0.0;
    s.temperature != 0.0 && !top_p_disabled(s.top_p) && s.top_k == 0 && !min_p_on && top_logprobs(s.flags) == 0
}

/// Whether a row with these settings may be a *warp row* of the split exact pass
/// (`abi::is_warp_row!`): in band mode, which needs top-p as its only truncation (no min-p, and
/// a top-k, if any, of at least `vocab`, so at least every valid token), and without logit bias.
/// A prediction from the settings, for the host's choice of the pass's tile builds: stage 2
/// decides band mode from the row itself (a smaller top-k may still keep every valid token of
/// a masked row, and a row without usable bands is never in band mode).
#[inline]
pub fn may_be_warp_row(s: &crate::abi::RowSettings, vocab: u32) -> bool {
    // min-p is off unless it is a number above 0 (0, negative or NaN: off).
    let min_p_on = s.min_p > 0.0;
    s.temperature > 0.0 && !top_p_disabled(s.top_p) && !min_p_on && (s.top_k == 0 || s.top_k >= vocab) && s.bias_len == 0
}

/// Whether stage 1 scans a row with these settings in `sample_tiles_mass` (band masses as well
/// as the tile's keys) rather than `sample_tiles`: a row that wants log-probabilities or top
/// log-probabilities, or a random row without top-k (its draw or top-p needs the row mass).
/// The host lists such rows with each step's settings, and the mass kernel scans exactly the
/// listed rows; both kernels test it again per row.
#[inline]
pub fn needs_row_mass(s: &crate::abi::RowSettings) -> bool {
    use crate::abi::ROW_WANT_LOGPROB;
    s.flags & ROW_WANT_LOGPROB != 0 || top_logprobs(s.flags) != 0 || (s.temperature != 0.0 && s.top_k == 0)
}

/// Settings a kernel accepts; anything else makes it emit `STATUS_INVALID_SETTINGS`.
/// Same rules as the host validation (docs/SEMANTICS.md §5).
#[inline]
pub fn settings_valid(
    temperature: f32,
    top_p: f32,
    min_p: f32,
    repetition: f32,
    frequency: f32,
    presence: f32,
) -> bool {
    temperature.is_finite()
        && temperature >= 0.0
        && top_p > 0.0
        && top_p <= 1.0
        && (0.0..=1.0).contains(&min_p)
        && repetition.is_finite()
        && repetition > 0.0
        && frequency.is_finite()
        && presence.is_finite()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_units() {
        assert_eq!(top_p_units(0.5), 1 << 23);
        assert_eq!(top_p_units(1e-30), 1);
        assert_eq!(top_p_units(0.9), (0.9f32 as f64 * 16_777_216.0) as u32);
        assert!(top_p_disabled(1.0));
        assert!(!top_p_disabled(0.999_999_94));
    }

    #[test]
    fn min_p_floor_keeps_exactly_the_values_at_or_above_the_threshold() {
        use crate::keys::sort_key;
        let max_key = sort_key(3.25, 17);
        for min_p in [0.0f32, 1e-6, 0.01, 0.2, 0.5, 1.0] {
            let floor = min_p_floor(max_key, min_p);
            assert_ne!(floor, 0);
            let thr = min_p_threshold(3.25, min_p);
            for i in 0..4000u32 {
                let x = 3.25 - i as f32 * 0.003;
                for index in [0u32, 5, u32::MAX - 1] {
                    assert_eq!(sort_key(x, index) >= floor, x >= thr, "x {x} min_p {min_p} index {index}");
                }
            }
        }
    }

    #[test]
    fn reached() {
        assert!(top_p_reached(50, 100, 1 << 23));
        assert!(!top_p_reached(49, 100, 1 << 23));
        let big = (1u128 << 103) - 1;
        assert!(top_p_reached(big, big, (1 << 24) - 1));
    }

    #[test]
    fn top_p_within_never_refuses_a_prefix_that_reaches() {
        use crate::fixed::tests::split_mix64;
        use crate::fixed::{soft_ceil, weight};
        let mut next = split_mix64(0x70b91d);
        let mut normal = move || {
            let (a, b) = ((next() >> 11) as f64 / (1u64 << 53) as f64, (next() >> 11) as f64 / (1u64 << 53) as f64);
            ((-2.0 * (1.0 - a).ln()).sqrt() * (2.0 * core::f64::consts::PI * b).cos()) as f32
        };
        for (vocab, sigma, peaked) in [(32000usize, 0.5f32, false), (50257, 2.0, true), (151936, 0.5, false), (151936, 2.0, true), (50257, 4.0, false)] {
            let mut x: std::vec::Vec<f32> = (0..vocab).map(|_| sigma * normal()).collect();
            if peaked {
                for i in 0..20 {
                    x[i * 997 % vocab] += 8.0 + (i % 7) as f32;
                }
            }
            let mc = soft_ceil(x.iter().cloned().fold(f32::NEG_INFINITY, f32::max));
            let mut w: std::vec::Vec<u128> = x.iter().map(|&v| weight(v, mc)).collect();
            assert!(w.iter().all(|&w| w <= MAX_WEIGHT));
            w.sort_unstable_by(|a, b| b.cmp(a));
            let z: u128 = w.iter().sum();
            let lists = vocab.div_ceil(crate::abi::TILE_TOKENS as usize) * crate::abi::TILE_CANDIDATES;
            for p in [0.5f32, 0.9, 0.95, 0.99] {
                let p24 = top_p_units(p);
                let mut mass = 0u128;
                for (i, &wi) in w.iter().enumerate() {
                    mass += wi;
                    let n = i as u32 + 1;
                    if top_p_reached(mass, z, p24) {
                        assert!(top_p_within(n, z, p24), "V {vocab} sigma {sigma} p {p}: {n} keys reach");
                    }
                }
                // Flat rows' nuclei are wider than every candidate list, and the bound says so.
                if !peaked && sigma < 1.0 && p >= 0.9 {
                    assert!(!top_p_within(lists as u32, z, p24), "V {vocab} p {p}");
                }
            }
        }
    }

    /// Which settings the host counts as seldom listed: greedy rows, small top-k with or
    /// without top-p and min-p, untruncated random rows; not top-p or min-p alone, nor a
    /// large top-k.
    #[test]
    fn seldom_listed_rows() {
        use crate::abi::RowSettings;
        let row = |temperature: f32, top_k: u32, top_p: f32, min_p: f32| RowSettings {
            temperature,
            top_k,
            top_p,
            min_p,
            repetition_penalty: 1.0,
            ..RowSettings::default()
        };
        assert!(stage2_seldom_lists(&row(0.0, 0, 0.5, 0.2)));
        assert!(stage2_seldom_lists(&row(0.7, 50, 0.9, 0.0)));
        assert!(stage2_seldom_lists(&row(1.0, SELDOM_LISTED_TOP_K, 0.95, 0.1)));
        assert!(stage2_seldom_lists(&row(1.0, 0, 1.0, 0.0)));
        assert!(!stage2_seldom_lists(&row(1.0, SELDOM_LISTED_TOP_K + 1, 1.0, 0.0)));
        assert!(!stage2_seldom_lists(&row(1.0, 0, 0.95, 0.0)));
        assert!(!stage2_seldom_lists(&row(1.0, 0, 1.0, 0.05)));
        // A min-p that is no number above 0 is off: the row is untruncated.
        assert!(stage2_seldom_lists(&row(1.0, 0, 1.0, f32::NAN)));
        assert!(stage2_seldom_lists(&row(1.0, 0, 1.0, -0.5)));
    }

    /// Which settings may make a warp row: random top-p rows without min-p, top-k under the
    /// vocab or bias; not greedy rows, nor rows with top-k, min-p, bias or no top-p.
    #[test]
    fn warp_row_candidates() {
        use crate::abi::RowSettings;
        let row = |temperature: f32, top_k: u32, top_p: f32, min_p: f32, bias_len: u32| RowSettings {
            temperature,
            top_k,
            top_p,
            min_p,
            bias_len,
            repetition_penalty: 1.0,
            ..RowSettings::default()
        };
        let vocab = 32_000;
        assert!(may_be_warp_row(&row(1.0, 0, 0.95, 0.0, 0), vocab));
        assert!(may_be_warp_row(&row(0.7, vocab, 0.5, 0.0, 0), vocab));
        assert!(may_be_warp_row(&row(0.7, 0, 0.9, f32::NAN, 0), vocab));
        assert!(!may_be_warp_row(&row(0.7, vocab - 1, 0.9, 0.0, 0), vocab));
        assert!(!may_be_warp_row(&row(0.7, 0, 0.9, 0.05, 0), vocab));
        assert!(!may_be_warp_row(&row(0.7, 0, 0.9, 0.0, 1), vocab));
        assert!(!may_be_warp_row(&row(0.7, 0, 1.0, 0.0, 0), vocab));
        assert!(!may_be_warp_row(&row(0.0, 0, 0.9, 0.0, 0), vocab));
    }

    #[test]
    fn targets() {
        assert_eq!(draw_target(10, 0), 0);
        assert_eq!(draw_target(10, u64::MAX), 9);
        assert_eq!(draw_target(1u128 << 64, 12345), 12345);
        let z = (3u128 << 90) + 987_654_321;
        for r in [0u64, 1, 1 << 63, u64::MAX, 0x1234_5678_9abc_def0] {
            let u = draw_target(z, r);
            assert!(u < z);
            // Compare with a 256-bit-free f64 estimate.
            let est = (z as f64) * (r as f64) / 18_446_744_073_709_551_616.0;
            assert!(((u as f64) - est).abs() <= est * 1e-12 + 2.0);
        }
    }

    #[test]
    fn a_row_that_may_skip_its_lists_needs_the_mass_and_makes_its_step_busy() {
        use crate::abi::{RowSettings, ROW_TOP_LOGPROBS_SHIFT, ROW_WANT_LOGPROB};
        let row = |temperature: f32, top_p: f32, top_k: u32, min_p: f32, flags: u32| RowSettings {
            temperature,
            top_p,
            min_p,
            repetition_penalty: 1.0,
            frequency_penalty: 0.0,
            presence_penalty: 0.0,
            top_k,
            slot: 0,
            bias_offset: 0,
            bias_len: 0,
            flags,
            _pad: 0,
        };
        let mut skippable = 0;
        for t in [0.0f32, 0.7, 1.0, f32::NAN] {
            for p in [1.0f32, 0.95, 0.5] {
                for k in [0u32, 1, 50, SELDOM_LISTED_TOP_K, SELDOM_LISTED_TOP_K + 1, 5000] {
                    for m in [0.0f32, 0.1, -1.0, f32::NAN] {
                        for flags in [0, ROW_WANT_LOGPROB, 5 << ROW_TOP_LOGPROBS_SHIFT] {
                            let s = row(t, p, k, m, flags);
                            if !lists_skippable(&s) {
                                continue;
                            }
                            skippable += 1;
                            // Scanned with its band sums, in a step with an exact pass.
                            assert!(needs_row_mass(&s) && !stage2_seldom_lists(&s), "{s:?}");
                            // Top-p alone, random, no top log-probabilities.
                            let min_p_on = m > 0.0;
                            assert!(t != 0.0 && p < 1.0 && k == 0 && !min_p_on && flags & (0xff << ROW_TOP_LOGPROBS_SHIFT) == 0, "{s:?}");
                        }
                    }
                }
            }
        }
        // T 0.7, 1 and NaN (refused later as invalid), p 0.95 and 0.5, min-p 0, -1 and NaN
        // (NaN refused later), with or without the log-probability of the token.
        assert_eq!(skippable, 3 * 2 * 3 * 2);
    }

    #[test]
    fn min_p() {
        assert_eq!(min_p_threshold(3.0, 0.0), f32::NEG_INFINITY);
        assert_eq!(min_p_threshold(3.0, 1.0), 3.0);
        assert_eq!(min_p_threshold(f32::INFINITY, 0.1), f32::INFINITY);
    }

    #[test]
    fn valid() {
        assert!(settings_valid(1.0, 1.0, 0.0, 1.0, 0.0, 0.0));
        assert!(!settings_valid(f32::NAN, 1.0, 0.0, 1.0, 0.0, 0.0));
        assert!(!settings_valid(1.0, 0.0, 0.0, 1.0, 0.0, 0.0));
        assert!(!settings_valid(1.0, 1.0, 1.5, 1.0, 0.0, 0.0));
        assert!(!settings_valid(1.0, 1.0, 0.0, 0.0, 0.0, 0.0));
        assert!(!settings_valid(1.0, 1.0, 0.0, 1.0, f32::INFINITY, 0.0));
    }
}
