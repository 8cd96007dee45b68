//! The bitonic network's compare rule, on both targets: the block sort and the warp sort
//! (`block.rs`, device only) keep each position's key in a register and apply this rule per
//! stage, and the host test below runs the same network sequentially, so the rule is checked
//! in CI.

/// Whether position `pos` keeps the larger of its key and its partner's (`pos ^ stride`) at
/// the stage (`size`, `stride`) of a descending bitonic sort: in a run that ends descending
/// (`pos & size == 0`) the lower position of each pair keeps the larger key, in the others the
/// higher one does. `size` and `stride` are powers of two, `stride < size`.
#[inline(always)]
pub fn keeps_larger(pos: u32, size: u32, stride: u32) -> bool {
    ((pos & stride) == 0) == ((pos & size) == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn split_mix64(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The network as the device runs it, one position a thread: every position reads its
    /// partner's key of the previous stage and keeps the larger or the smaller.
    fn network(keys: &[u64]) -> Vec<u64> {
        let n = keys.len() as u32;
        let mut k = keys.to_vec();
        let mut size = 2;
        while size <= n {
            let mut stride = size >> 1;
            while stride > 0 {
                k = (0..n)
                    .map(|pos| {
                        let (mine, other) = (k[pos as usize], k[(pos ^ stride) as usize]);
                        if (mine < other) == keeps_larger(pos, size, stride) { other } else { mine }
                    })
                    .collect();
                stride >>= 1;
            }
            size <<= 1;
        }
        k
    }

    #[test]
    fn the_network_sorts_descending() {
        let mut state = 0x5eed_2023u64;
        for n in [2usize, 4, 8, 16, 32, 64, 128, 256, 512] {
            for round in 0..40 {
                // Distinct keys, ties (zero padding and a few repeated values) and runs.
                let keys: Vec<u64> = (0..n)
                    .map(|i| match round % 4 {
                        0 => split_mix64(&mut state),
                        1 => split_mix64(&mut state) % 5,
                        2 => i as u64,
                        _ => if i % 3 == 0 { 0 } else { split_mix64(&mut state) >> 40 },
                    })
                    .collect();
                let mut want = keys.clone();
                want.sort_unstable_by(|a, b| b.cmp(a));
                assert_eq!(network(&keys), want, "n = {n}, round {round}");
            }
        }
    }
}
