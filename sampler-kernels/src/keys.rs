//! Order-preserving packed sort keys: one `u64` per token that orders by (value desc, index asc).
//!
//! Every "order" in the contract (top-k, top-p prefix, greedy argmax, top logprobs) is the
//! order of these keys, largest first. A single integer comparison gives the same answer on
//! the host and the GPU (radix sort, warp max) with ties broken toward the lower index.

/// `-0.0` becomes `+0.0` so that equal values compare as ties.
#[inline]
pub fn canonical(x: f32) -> f32 {
    if x == 0.0 {
        0.0
    } else {
        x
    }
}

/// Maps a non-NaN `f32` to a `u32` whose unsigned order is the float order
/// (`-inf` → smallest, `+inf` → largest). `-0.0` and `+0.0` map alike.
#[inline]
pub fn ordered_bits(x: f32) -> u32 {
    let b = canonical(x).to_bits();
    if b & 0x8000_0000 != 0 {
        !b
    } else {
        b | 0x8000_0000
    }
}

/// `ordered_bits(+inf)`, the largest ordered value of a number.
pub const ORDERED_INFINITY: u32 = 0xff80_0000;

/// Inverse of [`ordered_bits`] (returns `+0.0` for either zero).
#[inline]
pub fn from_ordered_bits(o: u32) -> f32 {
    if o & 0x8000_0000 != 0 {
        f32::from_bits(o & 0x7fff_ffff)
    } else {
        f32::from_bits(!o)
    }
}

/// Packed key: larger key = earlier in (value desc, index asc) order.
#[inline]
pub fn sort_key(x: f32, index: u32) -> u64 {
    key_of_ordered(ordered_bits(x), index)
}

/// [`sort_key`] of a value already in [`ordered_bits`] form.
#[inline]
pub fn key_of_ordered(ordered: u32, index: u32) -> u64 {
    ((ordered as u64) << 32) | (!index) as u64
}

/// Value part of a key.
#[inline]
pub fn key_value(key: u64) -> f32 {
    from_ordered_bits((key >> 32) as u32)
}

/// Token index part of a key.
#[inline]
pub fn key_index(key: u64) -> u32 {
    !(key as u32)
}

/// The value [`reaches_floor`] compares with: a key floor's value, or `-inf` when the floor's
/// value half is at or below `-inf`'s (every valid key reaches such a floor).
#[inline]
pub fn floor_value(floor: u64) -> f32 {
    let o = (floor >> 32) as u32;
    if o > ordered_bits(f32::NEG_INFINITY) {
        from_ordered_bits(o)
    } else {
        f32::NEG_INFINITY
    }
}

/// Whether token `index` of value `x` has a valid key (`x > -inf`) at least `floor`, given
/// `fv = floor_value(floor)`: equal to `x > -inf && sort_key(x, index) >= floor` for every `x`
/// but `-0` and NaN (tested), from float compares, the key built only on a tie with the floor's
/// value. Passes over values that fail a floor then build no key per token.
#[inline(always)]
pub fn reaches_floor(x: f32, index: u32, floor: u64, fv: f32) -> bool {
    x > f32::NEG_INFINITY && (x > fv || (x == fv && sort_key(x, index) >= floor))
}

/// [`reaches_floor`] with every part evaluated (`&`, `|`, no short circuit), for loops that
/// keep a lane's tokens in one basic block: the same answer for every input (tested).
#[inline(always)]
pub fn reaches_floor_flat(x: f32, index: u32, floor: u64, fv: f32) -> bool {
    (x > f32::NEG_INFINITY) & ((x > fv) | ((x == fv) & (sort_key(x, index) >= floor)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_matches_floats() {
        let vals = [
            f32::NEG_INFINITY,
            -f32::MAX,
            -1.5,
            -f32::MIN_POSITIVE,
            -1e-45,
            0.0,
            1e-45,
            f32::MIN_POSITIVE,
            1.0,
            f32::MAX,
            f32::INFINITY,
        ];
        for w in vals.windows(2) {
            assert!(ordered_bits(w[0]) < ordered_bits(w[1]), "{} {}", w[0], w[1]);
        }
        assert_eq!(ordered_bits(-0.0), ordered_bits(0.0));
        assert_eq!(ordered_bits(f32::INFINITY), ORDERED_INFINITY);
        for &v in &vals {
            assert_eq!(from_ordered_bits(ordered_bits(v)).to_bits(), v.to_bits());
        }
    }

    #[test]
    fn reaching_a_floor_is_the_key_compare() {
        let vals = [f32::NEG_INFINITY, -f32::MAX, -1.5, -1e-45, 0.0, 1e-45, 1.0, 1.5, f32::MAX, f32::INFINITY];
        let mut floors: std::vec::Vec<u64> = std::vec![1, 2, u32::MAX as u64, u64::MAX, (ORDERED_INFINITY as u64 + 1) << 32, 0x7fff_ffff_0000_0000];
        for &v in &vals {
            for index in [0u32, 7, 8, 1 << 20] {
                floors.push(sort_key(v, index));
                floors.push((ordered_bits(v) as u64) << 32);
            }
        }
        let mut passed = 0;
        for &floor in &floors {
            let fv = floor_value(floor);
            for &x in &vals {
                for index in [0u32, 6, 7, 8, 9, 1 << 20] {
                    let want = x > f32::NEG_INFINITY && sort_key(x, index) >= floor;
                    assert_eq!(reaches_floor(x, index, floor, fv), want, "x {x:e} index {index} floor {floor:#x}");
                    assert_eq!(reaches_floor_flat(x, index, floor, fv), want, "x {x:e} index {index} floor {floor:#x}");
                    passed += want as u32;
                }
            }
        }
        assert!(passed > 100, "{passed}");
    }

    #[test]
    fn ties_go_to_lower_index() {
        assert!(sort_key(1.0, 3) > sort_key(1.0, 4));
        assert!(sort_key(-0.0, 9) < sort_key(0.0, 8));
        assert!(sort_key(2.0, 100) > sort_key(1.0, 0));
        let k = sort_key(-3.25, 12345);
        assert_eq!(key_value(k), -3.25);
        assert_eq!(key_index(k), 12345);
    }
}

/// Batcher's odd–even merge network for 8 elements (19 comparators), largest first.
/// Constant indices only, so on the GPU the array stays in registers.
#[inline(always)]
pub fn sort8_desc(mut k: [u64; 8]) -> [u64; 8] {
    macro_rules! cas {
        ($i:literal, $j:literal) => {
            if k[$i] < k[$j] {
                k.swap($i, $j);
            }
        };
    }
    cas!(0, 1);
    cas!(2, 3);
    cas!(4, 5);
    cas!(6, 7);
    cas!(0, 2);
    cas!(1, 3);
    cas!(4, 6);
    cas!(5, 7);
    cas!(1, 2);
    cas!(5, 6);
    cas!(0, 4);
    cas!(1, 5);
    cas!(2, 6);
    cas!(3, 7);
    cas!(2, 4);
    cas!(3, 5);
    cas!(1, 2);
    cas!(3, 4);
    cas!(5, 6);
    k
}

/// The bitonic network's compare rule: at the stage (`size`, `stride`) of a sort into
/// descending order, whether position `pos` keeps the larger of its key and its partner's
/// (`pos ^ stride`). In a run that ends descending (`pos & size == 0`) the lower position of a
/// pair keeps the larger key, in the others the higher one does. `size` and `stride` are powers
/// of two, `stride < size`. The block sort and the warp sort (`block.rs`, device only) hold a
/// key a position in registers and apply it per stage; the test below runs the same network.
#[inline(always)]
pub fn bitonic_keeps_larger(pos: u32, size: u32, stride: u32) -> bool {
    ((pos & stride) == 0) == ((pos & size) == 0)
}

/// The key the block sort gives a position past its list: the smallest, so that the first `n`
/// positions of a padded sort are the list's `n` keys, sorted (lists under 32 keys are sorted
/// as the whole warp's 32).
pub const BITONIC_PAD: u64 = 0;

/// How many stages of the network on `n` keys (a power of two, or 0) have a stride in
/// `lo..hi` (powers of two): the block sort's stages through shared memory (`lo` = 32, `hi` =
/// the threads), which alternate between two halves and must end on the upper one. Sizes
/// `2^s`, `s` = 1..=L (`n = 2^L`), each have the strides `2^j`, `j < s`; those with
/// `a ≤ j < min(b, s)` count (`lo = 2^a`, `hi = 2^b`): `1 + 2 + … + (c − a)` for the sizes up to
/// `2^c`, `c = min(L, b)`, and `b − a` for each size past `2^b`. A closed form: the sort asks
/// on every call, and the loop it replaces ran up to 55 turns.
#[inline(always)]
pub fn bitonic_stages_with_stride(n: u32, lo: u32, hi: u32) -> u32 {
    let levels = (u32::BITS - n.leading_zeros()).saturating_sub(1);
    let (a, b) = (lo.trailing_zeros(), hi.trailing_zeros());
    let c = if levels < b { levels } else { b };
    let up_to_hi = if c > a { (c - a) * (c - a + 1) / 2 } else { 0 };
    let past_hi = if levels > b && b > a { (levels - b) * (b - a) } else { 0 };
    up_to_hi + past_hi
}

#[cfg(test)]
mod network_tests {
    use super::{bitonic_keeps_larger, bitonic_stages_with_stride, sort8_desc, BITONIC_PAD};
    use std::vec::Vec;

    /// The bitonic network as the device runs it, one position a thread: every position reads
    /// its partner's key of the previous stage and keeps the larger or the smaller.
    fn bitonic(keys: &[u64]) -> Vec<u64> {
        let n = keys.len() as u32;
        let mut k = keys.to_vec();
        let mut size = 2;
        while size <= n {
            let mut stride = size >> 1;
            while stride > 0 {
                k = (0..n)
                    .map(|pos| {
                        let (mine, other) = (k[pos as usize], k[(pos ^ stride) as usize]);
                        if (mine < other) == bitonic_keeps_larger(pos, size, stride) { other } else { mine }
                    })
                    .collect();
                stride >>= 1;
            }
            size <<= 1;
        }
        k
    }

    #[test]
    fn the_bitonic_network_sorts_descending() {
        // Every 0-1 input up to 16 keys (the 0-1 principle), then random keys, ties, zero
        // padding and sorted runs up to 512.
        for n in [2u32, 4, 8, 16] {
            for bits in 0u32..1 << n {
                let k: Vec<u64> = (0..n).map(|i| ((bits >> i) & 1) as u64).collect();
                assert!(bitonic(&k).windows(2).all(|w| w[0] >= w[1]), "{k:?}");
            }
        }
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for n in [32usize, 64, 128, 256, 512] {
            for round in 0..40 {
                let k: Vec<u64> = (0..n)
                    .map(|i| match round % 4 {
                        0 => next(),
                        1 => next() % 5,
                        2 => i as u64,
                        _ if i % 3 == 0 => 0,
                        _ => next() >> 40,
                    })
                    .collect();
                let mut want = k.clone();
                want.sort_unstable_by(|a, b| b.cmp(a));
                assert_eq!(bitonic(&k), want, "n = {n}, round {round}");
            }
        }
        // Below 32 keys the device sorts the whole warp, positions past `n` holding 0.
        for n in [2usize, 4, 8, 16] {
            for _ in 0..40 {
                let k: Vec<u64> = (0..n).map(|_| next() % 7).collect();
                let mut padded = k.clone();
                padded.resize(32, BITONIC_PAD);
                let mut want = k.clone();
                want.sort_unstable_by(|a, b| b.cmp(a));
                assert_eq!(bitonic(&padded)[..n], want[..], "n = {n}");
            }
        }
    }

    #[test]
    fn counts_the_stages_through_shared_memory() {
        // The network's stage count by size: log2(size) stages each, strides size/2 down to 1.
        let between = |n: u32, lo: u32, hi: u32| -> u32 {
            (1..=n.trailing_zeros()).map(|log| (0..log).filter(|&s| lo <= 1 << s && 1 << s < hi).count() as u32).sum()
        };
        for log in 0..=12u32 {
            for (lo, hi) in [(32, 512), (32, 1024), (1, 2), (64, 4096), (1, 1 << 13), (512, 32), (16, 16)] {
                assert_eq!(bitonic_stages_with_stride(1 << log, lo, hi), between(1 << log, lo, hi), "n = 2^{log}, {lo}..{hi}");
            }
        }
        assert_eq!(bitonic_stages_with_stride(0, 32, 512), 0);
        assert_eq!(bitonic_stages_with_stride(512, 32, 512), 10);
        assert_eq!(bitonic_stages_with_stride(1024, 32, 512), 14);
    }

    #[test]
    fn sorts_every_zero_one_input_and_random_keys() {
        // The 0-1 principle: a comparator network that sorts all 256 binary inputs sorts all.
        for bits in 0u32..256 {
            let k: [u64; 8] = core::array::from_fn(|i| ((bits >> i) & 1) as u64);
            let s = sort8_desc(k);
            assert!(s.windows(2).all(|w| w[0] >= w[1]), "{k:?} -> {s:?}");
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..1000 {
            let k: [u64; 8] = core::array::from_fn(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            });
            let mut want = k;
            want.sort_unstable_by(|a, b| b.cmp(a));
            assert_eq!(sort8_desc(k), want);
        }
    }
}
