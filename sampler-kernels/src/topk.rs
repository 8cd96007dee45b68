//! Top-k alone (docs/SEMANTICS.md §11): for each row, the k largest logits and their indices in
//! key order, exact for every k up to `TOPK_MAX_K`.
//!
//! Two kernels, on purpose simpler than the sampler's: no settings, no mass.
//! 1. `topk_chunks`, grid `chunks × rows`: a block reads its chunk of a row once, in
//!    iterations of `TOPK_ITER` tokens (prefetching the next iteration while it filters the
//!    current one). Each token becomes a packed key; keys at or above the block's threshold θ
//!    are appended to a shared candidate buffer (warp scan + one barrier per iteration). When
//!    the buffer could not take another full iteration, the block selects its k largest
//!    candidates exactly (MSD radix select on the keys, 8 bits per level) and θ rises to the
//!    k-th of them, so later tokens mostly fail one float compare with θ's value (only ties
//!    with it and NaN build the exact key). The chunk's k largest keys go to a record, or,
//!    when the row is one chunk, straight to the outputs, sorted.
//! 2. `topk_merge`, grid `rows`, only when a row has several chunks: the same filter and
//!    select over the row's chunk records, then a bitonic sort of the k winners.
//!
//! Exactness: keys are distinct (they carry the index), each chunk keeps its own k largest,
//! and the row's k largest are among the union of the chunks' k largest. Nothing is estimated.
//!
//! The pure parts (the key of a token and the launch geometry) compile for the host too, so
//! the CPU reference and `GpuTopK` use the same definitions.

use crate::abi::{TOPK_ITER, TOPK_MERGE_KEYS};
use crate::keys::sort_key;

/// The order key of a token for top-k: NaN sorts as `-inf`; everything else as `keys::sort_key`.
#[inline]
pub fn topk_key(x: f32, index: u32) -> u64 {
    sort_key(if x.is_nan() { f32::NEG_INFINITY } else { x }, index)
}

/// Keys per chunk record for `k`: a multiple of 8, so records stay 64-byte aligned.
#[inline]
pub fn record_stride(k: u32) -> u32 {
    k.div_ceil(8).max(1) * 8
}

/// How `topk_chunks` splits rows: `chunks` blocks per row of `chunk_len` tokens each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopKGeometry {
    pub chunks: u32,
    pub chunk_len: u32,
}

/// Chunks per row for `rows` rows: enough blocks in all to fill the GPU (`target_blocks`),
/// no more than the row has iterations, and no more than the merge reads comfortably
/// (`TOPK_MERGE_KEYS` keys per row). Every chunk is non-empty.
pub fn geometry(rows: u32, vocab: u32, k: u32, target_blocks: u32) -> TopKGeometry {
    let iters = vocab.div_ceil(TOPK_ITER).max(1);
    let want = target_blocks.div_ceil(rows.max(1)).max(1);
    let by_merge = (TOPK_MERGE_KEYS / record_stride(k)).max(1);
    let chunks = want.min(by_merge).min(iters);
    let per_chunk = iters.div_ceil(chunks);
    TopKGeometry { chunks: iters.div_ceil(per_chunk), chunk_len: per_chunk * TOPK_ITER }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{MAX_VOCAB, TOPK_MAX_K};

    #[test]
    fn nan_sorts_as_negative_infinity() {
        assert_eq!(topk_key(f32::NAN, 7), sort_key(f32::NEG_INFINITY, 7));
        assert_eq!(topk_key(-f32::NAN, 7), sort_key(f32::NEG_INFINITY, 7));
        assert!(topk_key(f32::NEG_INFINITY, 0) > topk_key(f32::NAN, 1));
        assert!(topk_key(-0.0, 3) > topk_key(0.0, 4));
        // Real keys are never 0, the pad value of chunk records.
        assert!(topk_key(f32::NEG_INFINITY, u32::MAX - 1) > 1);
    }

    #[test]
    fn geometry_covers_every_row_with_non_empty_chunks() {
        for vocab in [1u32, 100, 4095, 4096, 4097, 32_000, 50_257, 131_072, 151_936, 262_144, MAX_VOCAB] {
            for rows in [1u32, 3, 64, 257, 1024, 65_535] {
                for k in [1u32, 50, 128, 1000, TOPK_MAX_K] {
                    let g = geometry(rows, vocab, k, 528);
                    assert!(g.chunks >= 1 && g.chunk_len.is_multiple_of(TOPK_ITER), "{g:?}");
                    assert!(g.chunks as u64 * g.chunk_len as u64 >= vocab as u64, "{vocab} {g:?}");
                    assert!(((g.chunks - 1) * g.chunk_len) < vocab, "empty last chunk: {vocab} {g:?}");
                    assert!(g.chunks == 1 || g.chunks * record_stride(k) <= TOPK_MERGE_KEYS, "{k} {g:?}");
                    assert!(rows as u64 * g.chunks as u64 <= 528 + rows as u64, "{rows} {g:?}");
                }
            }
        }
        assert_eq!(geometry(1, 131_072, 128, 528), TopKGeometry { chunks: 32, chunk_len: 4096 });
        assert_eq!(geometry(1024, 262_144, 128, 528).chunks, 1);
    }
}

/// A sequential model of the two kernels, step for step: the same iteration layout, float
/// pre-filter, thresholds, radix levels (histogram, warp 0's lane-by-lane digit search, stop
/// rule), compaction positions and buffer bounds, with the 512 threads run one after another.
/// It checks the algorithm's arithmetic on the host (the GPU tests check the kernels).
#[cfg(test)]
mod model {
    use super::*;
    use crate::abi::{TOPK_BUFFER, TOPK_MAX_K, TOPK_THREADS};
    use crate::keys::key_value;
    use std::vec::Vec;

    const T: u32 = TOPK_THREADS;

    /// `select` + `compact`: keeps the `l` largest of `buf[..n]` at the front.
    fn select(buf: &mut [u64], n: u32, l: u32) -> (u64, u32) {
        assert!(n > l && l >= 1 && n <= TOPK_BUFFER);
        let (mut prefix, mut need, mut shift) = (0u64, l, 56u32);
        loop {
            let mut hist = [0u32; 256];
            let hi_mask = if shift >= 56 { 0 } else { !0u64 << (shift + 8) };
            for &key in &buf[..n as usize] {
                if key & hi_mask == prefix {
                    hist[((key >> shift) & 0xff) as usize] += 1;
                }
            }
            // Warp 0: lane l owns bins 255 - 8l ..= 248 - 8l.
            let own: Vec<u32> = (0..32u32).map(|lane| (0..8).map(|b| hist[(255 - 8 * lane - b) as usize]).sum()).collect();
            let incl: Vec<u32> = own.iter().scan(0, |acc, &x| { *acc += x; Some(*acc) }).collect();
            let first = (0..32).find(|&lane| incl[lane] >= need).unwrap_or(31);
            let top = 255 - 8 * first as u32;
            let mut above = incl[first] - own[first];
            let (mut digit, mut count, mut found) = (top - 7, 0u32, false);
            for b in 0..8 {
                let c = hist[(top - b) as usize];
                if !found {
                    if above + c >= need {
                        (digit, count, found) = (top - b, c, true);
                    } else {
                        above += c;
                    }
                }
            }
            prefix |= (digit as u64) << shift;
            need = need.saturating_sub(above);
            if count <= need || shift == 0 {
                break;
            }
            shift -= 8;
        }
        compact(buf, n, prefix)
    }

    fn compact(buf: &mut [u64], n: u32, theta: u64) -> (u64, u32) {
        // Thread t owns slots j·512 + t; positions are an exclusive scan in thread order.
        let keep = |buf: &[u64], t: u32, j: u32| {
            let i = j * T + t;
            i < n && buf[i as usize] >= theta
        };
        let counts: Vec<u32> = (0..T).map(|t| (0..10).filter(|&j| keep(buf, t, j)).count() as u32).collect();
        let total: u32 = counts.iter().sum();
        let least = buf[..n as usize].iter().copied().filter(|&k| k >= theta).min().unwrap_or(u64::MAX);
        let before = buf.to_vec();
        let mut pos = 0u32;
        for t in 0..T {
            for j in 0..10 {
                if keep(&before, t, j) {
                    // Every write lands below 2·T, so slots j >= 2 are never overwritten before
                    // their owner reads them again (the kernel keeps only j < 2 in registers).
                    assert!(pos < 2 * T, "a compaction wrote slot {pos}");
                    buf[pos as usize] = before[(j * T + t) as usize];
                    pos += 1;
                }
            }
        }
        assert_eq!(pos, total);
        (least, total)
    }

    /// `append`: thread t's survivors `take[t]` (bit j = element j) in thread order.
    fn append(buf: &mut [u64], n: u32, take: &[u32], key_of: impl Fn(u32, u32) -> u64) -> u32 {
        assert!(n <= TOPK_BUFFER - TOPK_ITER);
        let mut pos = n;
        for t in 0..T {
            for j in 0..8 {
                if (take[t as usize] >> j) & 1 == 1 {
                    buf[pos as usize] = key_of(t, j);
                    pos += 1;
                }
            }
        }
        pos
    }

    /// `chunk_top` for f32: the chunk's keys at the front of the buffer, and their count.
    fn chunk_top(row: &[f32], start: u32, end: u32, k: u32) -> Vec<u64> {
        let mut buf = std::vec![0u64; TOPK_BUFFER as usize];
        let (mut theta, mut n) = (1u64, 0u32);
        let mut theta_value = key_value(theta);
        let index = |base: u32, t: u32, j: u32| base + (j >> 2) * (TOPK_ITER / 2) + t * 4 + (j & 3);
        let iters = (end - start).div_ceil(TOPK_ITER);
        for it in 0..iters {
            let base = start + it * TOPK_ITER;
            let x = |t: u32, j: u32| {
                let i = index(base, t, j);
                if i < end { row[i as usize] } else { 0.0 }
            };
            let take: Vec<u32> = (0..T)
                .map(|t| {
                    (0..8).filter(|&j| {
                        #[allow(clippy::neg_cmp_op_on_partial_ord)]
                        let maybe = !(x(t, j) < theta_value) && index(base, t, j) < end;
                        maybe && topk_key(x(t, j), index(base, t, j)) >= theta
                    })
                    .fold(0u32, |m, j| m | 1 << j)
                })
                .collect();
            n = append(&mut buf, n, &take, |t, j| topk_key(x(t, j), index(base, t, j)));
            if n > TOPK_BUFFER - TOPK_ITER {
                (theta, n) = select(&mut buf, n, k);
                theta_value = key_value(theta);
            }
        }
        if n > k {
            (_, n) = select(&mut buf, n, k);
        }
        buf.truncate(n as usize);
        buf
    }

    /// `topk_merge` over zero-padded records of `stride` keys.
    fn merge(records: &[u64], k: u32) -> Vec<u64> {
        let mut buf = std::vec![0u64; TOPK_BUFFER as usize];
        let (mut theta, mut n) = (1u64, 0u32);
        let total = records.len() as u32;
        for it in 0..total.div_ceil(TOPK_ITER) {
            let base = it * TOPK_ITER;
            let key = |t: u32, j: u32| {
                let at = base + t * 8;
                if at + 8 <= total { records[(at + j) as usize] } else { 0 }
            };
            let take: Vec<u32> = (0..T).map(|t| (0..8).filter(|&j| key(t, j) >= theta).fold(0u32, |m, j| m | 1 << j)).collect();
            n = append(&mut buf, n, &take, key);
            if n > TOPK_BUFFER - TOPK_ITER {
                (theta, n) = select(&mut buf, n, k);
            }
        }
        if n > k {
            (_, n) = select(&mut buf, n, k);
        }
        buf.truncate(n as usize);
        buf
    }

    /// Both stages for one row with the launch geometry of `rows` rows.
    fn row_top(row: &[f32], k: u32, rows: u32) -> Vec<u64> {
        let vocab = row.len() as u32;
        let g = geometry(rows, vocab, k, 528);
        let stride = record_stride(k) as usize;
        let mut out = if g.chunks == 1 {
            chunk_top(row, 0, vocab, k)
        } else {
            let mut records = std::vec![0u64; g.chunks as usize * stride];
            for c in 0..g.chunks {
                let start = c * g.chunk_len;
                let end = vocab.min(start + g.chunk_len);
                let keys = chunk_top(row, start, end, k);
                let want = sorted_keys(&row[start as usize..end as usize], start).len().min(k as usize);
                assert_eq!(keys.len(), want, "chunk {c} keeps min(k, len) keys");
                records[c as usize * stride..c as usize * stride + keys.len()].copy_from_slice(&keys);
            }
            merge(&records, k)
        };
        out.sort_unstable_by(|a, b| b.cmp(a));
        out
    }

    fn sorted_keys(row: &[f32], offset: u32) -> Vec<u64> {
        let mut keys: Vec<u64> = row.iter().enumerate().map(|(i, &x)| topk_key(x, offset + i as u32)).collect();
        keys.sort_unstable_by(|a, b| b.cmp(a));
        keys
    }

    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn model_equals_a_full_sort() {
        let mut state = 0x2545_f491_4f6c_dd1du64
            ^ std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1);
        std::eprintln!("model seed {state}");
        let shapes: [fn(u64, usize) -> f32; 6] = [
            |r, _| ((r >> 40) as f32 / 16_777_216.0 - 0.5) * 8.0,                // uniform-ish
            |_, i| i as f32 * 1e-3,                                              // ascending
            |_, i| -(i as f32),                                                  // descending
            |r, _| (r % 3) as f32,                                               // ties
            |r, _| [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0, 1.0][(r % 6) as usize],
            |_, _| 0.25,                                                         // one value
        ];
        for (s, shape) in shapes.iter().enumerate() {
            for &(vocab, rows) in &[(5000usize, 1u32), (40_000, 1), (40_000, 3), (70_000, 1000), (4096, 1)] {
                let row: Vec<f32> = (0..vocab).map(|i| shape(xorshift(&mut state), i)).collect();
                let all = sorted_keys(&row, 0);
                for k in [1u32, 50, 128, 1000, TOPK_MAX_K] {
                    let got = row_top(&row, k, rows);
                    assert_eq!(got[..], all[..k as usize], "shape {s} V={vocab} B={rows} k={k}");
                }
            }
        }
    }
}

#[cfg(target_arch = "nvptx64")]
pub use device::{topk_chunks, topk_merge};

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::topk_key;
    use crate::abi::*;
    use crate::block::{each8, pow2_at_least, smem, warp_inclusive_scan};
    use crate::intrinsics::*;
    use crate::keys::{key_index, key_value};
    use crate::logit::{widen_bf16, widen_f16};

    const WARPS: u32 = TOPK_THREADS / 32;
    // A compaction reads ten buffer slots per thread (`each10`).
    const _: () = assert!(TOPK_BUFFER == 10 * TOPK_THREADS);
    const _: () = assert!(TOPK_THREADS == 512 && TOPK_ITER == 4096);

    // Shared-memory map (byte offsets from `shared_base()`).
    /// Per-warp survivor counts of an append, two sets used alternately (`u32[2][16]`), so one
    /// barrier per iteration suffices: a set is rewritten only two barriers after it was read.
    const TK_SLOTS: u32 = 256;
    /// Per-warp count (`u32`, +0) and smallest kept key (`u64`, +8) of a compaction: 16 B a warp.
    const TK_COMPACT: u32 = 384;
    /// The radix level's answer: digit, keys above it, keys in it (`u32` each).
    const TK_RESULT: u32 = 640;
    /// Radix histogram, `u32[256]`.
    const TK_HIST: u32 = 1024;
    /// Candidate buffer, `u64[TOPK_BUFFER]`.
    const TK_BUF: u32 = 2048;
    const _: () = assert!(TK_SLOTS + 2 * WARPS * 4 <= TK_COMPACT && TK_COMPACT + WARPS * 16 <= TK_RESULT);
    const _: () = assert!(TK_RESULT + 16 <= TK_HIST && TK_HIST + 256 * 4 <= TK_BUF);
    const _: () = assert!(TK_BUF + TOPK_BUFFER * 8 <= TOPK_SHARED_BYTES);

    /// Shared address of buffer slot `i` (callers keep `i < TOPK_BUFFER`).
    #[inline(always)]
    fn buf(i: u32) -> u32 {
        smem(TK_BUF + i * 8)
    }

    // Per-thread arrays are indexed only by constants (a runtime index would put them in
    // local memory, which the PTX check rejects); these spell the indices out.

    #[inline(always)]
    fn each10<F: FnMut(usize)>(mut f: F) {
        each8(&mut f);
        f(8);
        f(9);
    }


    /// Combines per-warp inclusive totals published at `slots` (16 `u32`, `stride` bytes
    /// apart) after a barrier: (keys before this warp, block total).
    ///
    /// # Safety
    /// The whole block calls it together, after a barrier that follows every warp's write.
    #[inline(always)]
    unsafe fn warp_offsets(slots: u32, stride: u32) -> (u32, u32) {
        let lane = lane_id();
        let warp = warp_id();
        // SAFETY: lanes < 16 read the 16 published slots inside the map; the warp is converged.
        unsafe {
            let w = if lane < WARPS { ld_shared_u32(smem(slots + lane * stride)) } else { 0 };
            let incl = warp_inclusive_scan::<u32>(w);
            let total = shfl_idx_u32(FULL_MASK, incl, WARPS - 1);
            let before = shfl_idx_u32(FULL_MASK, incl, warp.wrapping_sub(1) & 31);
            (if warp == 0 { 0 } else { before }, total)
        }
    }

    /// Appends this thread's keys `key_of(j)` for the bits `j` set in `take` after the buffer's
    /// `n` keys; returns the new count, the same in every thread.
    ///
    /// Once θ has risen, most iterations have no survivor anywhere in the block: then a warp
    /// skips its scan, and the barrier itself (`barrier.red.or`) tells every thread that there
    /// is nothing to place, so the offsets and the writes are skipped too.
    ///
    /// # Safety
    /// The whole block calls it together with the same `n` and `parity`, and
    /// `n <= TOPK_BUFFER - TOPK_ITER`.
    #[inline(always)]
    unsafe fn append<K: Fn(usize) -> u64>(take: u32, key_of: K, n: u32, parity: u32) -> u32 {
        let c = take.count_ones();
        let slots = TK_SLOTS + (parity & 1) * WARPS * 4;
        // SAFETY: whole block converged (caller); `any` is warp-uniform and `placed`
        // block-uniform, so the shuffles and the barrier are reached by all; the slot set
        // `parity` was last read two barriers ago; buffer writes stay below
        // n + TOPK_ITER <= TOPK_BUFFER.
        unsafe {
            let any = vote_any(FULL_MASK, c != 0);
            let incl = if any { warp_inclusive_scan::<u32>(c) } else { 0 };
            if lane_id() == 31 {
                st_shared_u32(smem(slots + warp_id() * 4), incl);
            }
            let placed = sync_threads_or(c != 0);
            if !placed {
                return n;
            }
            let (before, total) = warp_offsets(slots, 4);
            if take != 0 {
                let mut pos = n + before + incl - c;
                each8(|j| {
                    if (take >> j) & 1 == 1 {
                        if pos < TOPK_BUFFER {
                            st_shared_u64(buf(pos), key_of(j));
                        }
                        pos += 1;
                    }
                });
            }
            n + total
        }
    }

    /// Warp 0's part of a radix level: finds the digit whose bucket holds the `need`-th
    /// largest key of the histogram, and publishes (digit, keys above it, keys in it).
    ///
    /// # Safety
    /// All 32 lanes of warp 0 call it together, after the histogram is complete.
    #[inline(always)]
    unsafe fn find_digit(need: u32) {
        let lane = lane_id();
        // Lane l owns bins 255 - 8l down to 248 - 8l, so lane order is digit order, descending.
        let top = 255 - 8 * lane;
        // SAFETY: bins are inside TK_HIST; warp 0 is converged (caller).
        unsafe {
            let mut own = 0u32;
            let mut b = 0;
            while b < 8 {
                own += ld_shared_u32(smem(TK_HIST + (top - b) * 4));
                b += 1;
            }
            let incl = warp_inclusive_scan::<u32>(own);
            let hit = ballot(FULL_MASK, incl >= need);
            // `hit == 0` cannot happen while the bucket holds `need` keys; lane 31 then answers
            // with digit 0 and count 0, which ends the selection instead of looping.
            let first = if hit == 0 { 31 } else { hit.trailing_zeros() };
            if lane == first {
                let mut above = incl - own;
                let (mut digit, mut count, mut found) = (top - 7, 0u32, false);
                let mut b = 0;
                while b < 8 {
                    let c = ld_shared_u32(smem(TK_HIST + (top - b) * 4));
                    if !found {
                        if above + c >= need {
                            digit = top - b;
                            count = c;
                            found = true;
                        } else {
                            above += c;
                        }
                    }
                    b += 1;
                }
                st_shared_u32(smem(TK_RESULT), digit);
                st_shared_u32(smem(TK_RESULT + 4), above);
                st_shared_u32(smem(TK_RESULT + 8), count);
            }
        }
    }

    /// Keeps exactly the `l` largest of the buffer's `n` distinct keys (`n > l >= 1`) at its
    /// front and returns (the smallest kept key, the new count).
    ///
    /// MSD radix select, 8 bits a level: a level histograms the keys still in the bucket,
    /// warp 0 picks the digit holding the `need`-th key, and the search stops as soon as that
    /// whole bucket is kept. Then `key >= prefix` is exactly the kept set.
    ///
    /// # Safety
    /// The whole block calls it together with the same `n` and `l`; `n <= TOPK_BUFFER`.
    #[inline(always)]
    unsafe fn select(n: u32, l: u32) -> (u64, u32) {
        let tid = thread_idx_x();
        let lane = lane_id();
        let below_me = (1u32 << lane) - 1;
        let rounds = n.div_ceil(TOPK_THREADS);
        let (mut prefix, mut need, mut shift) = (0u64, l, 56u32);
        // SAFETY: whole block converged (caller), on uniform branches: `rounds`, `shift`,
        // `need` and the published result are the same in every thread. Three barriers a
        // level separate clearing, counting, choosing and reading.
        unsafe {
            loop {
                if tid < 256 {
                    st_shared_u32(smem(TK_HIST + tid * 4), 0);
                }
                sync_threads();
                let hi_mask = if shift >= 56 { 0 } else { !0u64 << (shift + 8) };
                let mut r = 0;
                while r < rounds {
                    let i = r * TOPK_THREADS + tid;
                    let key = if i < n { ld_shared_u64(buf(i)) } else { 0 };
                    let inside = i < n && key & hi_mask == prefix;
                    let digit = if inside { ((key >> shift) & 0xff) as u32 } else { 256 };
                    // One atomic per distinct digit in the warp: the top levels are crowded.
                    let peers = match_any_sync(FULL_MASK, digit);
                    if inside && peers & below_me == 0 {
                        atom_add_shared_u32(smem(TK_HIST + digit * 4), peers.count_ones());
                    }
                    r += 1;
                }
                sync_threads();
                if warp_id() == 0 {
                    find_digit(need);
                }
                sync_threads();
                let digit = ld_shared_u32(smem(TK_RESULT)) & 0xff;
                let above = ld_shared_u32(smem(TK_RESULT + 4));
                let count = ld_shared_u32(smem(TK_RESULT + 8));
                prefix |= (digit as u64) << shift;
                need = need.saturating_sub(above);
                if count <= need || shift == 0 {
                    break;
                }
                shift -= 8;
            }
            compact(n, prefix)
        }
    }

    /// Moves the buffer's keys `>= theta` (of its first `n`) to its front; returns (the
    /// smallest of them, how many).
    ///
    /// Called with exactly `l <= TOPK_MAX_K` keys at or above `theta`, so the moved keys land
    /// in slots below `TOPK_MAX_K = 2 · TOPK_THREADS`: only a thread's first two slots can be
    /// overwritten before it has moved them, so only those two stay in registers across the
    /// barrier (ten would spill), and the others are read again afterwards.
    ///
    /// # Safety
    /// The whole block calls it together with the same `n` and `theta`; `n <= TOPK_BUFFER`.
    #[inline(always)]
    unsafe fn compact(n: u32, theta: u64) -> (u64, u32) {
        const _: () = assert!(TOPK_MAX_K <= 2 * TOPK_THREADS);
        let tid = thread_idx_x();
        let lane = lane_id();
        let (mut first, mut second) = (0u64, 0u64);
        let mut keep = 0u32;
        let mut least = u64::MAX;
        // SAFETY: whole block converged (caller). Slots below 2 · TOPK_THREADS are read before
        // the barrier and kept in registers; writes go below the kept count <= TOPK_MAX_K, so
        // the slots read again after the barrier are never written; the final barrier publishes
        // the buffer and frees the TK_COMPACT slots.
        unsafe {
            each10(|j| {
                let i = j as u32 * TOPK_THREADS + tid;
                if i < n {
                    let key = ld_shared_u64(buf(i));
                    if j == 0 {
                        first = key;
                    } else if j == 1 {
                        second = key;
                    }
                    if key >= theta {
                        keep |= 1 << j;
                        least = if key < least { key } else { least };
                    }
                }
            });
            let c = keep.count_ones();
            let incl = warp_inclusive_scan::<u32>(c);
            let mut x = 16;
            while x > 0 {
                let other = shfl_xor_u64(FULL_MASK, least, x);
                least = if other < least { other } else { least };
                x >>= 1;
            }
            if lane == 31 {
                st_shared_u32(smem(TK_COMPACT + warp_id() * 16), incl);
                st_shared_u64(smem(TK_COMPACT + warp_id() * 16 + 8), least);
            }
            sync_threads();
            let (before, total) = warp_offsets(TK_COMPACT, 16);
            let mut block_least = if lane < WARPS { ld_shared_u64(smem(TK_COMPACT + lane * 16 + 8)) } else { u64::MAX };
            let mut x = 16;
            while x > 0 {
                let other = shfl_xor_u64(FULL_MASK, block_least, x);
                block_least = if other < block_least { other } else { block_least };
                x >>= 1;
            }
            let mut pos = before + incl - c;
            each10(|j| {
                if (keep >> j) & 1 == 1 {
                    let key = match j {
                        0 => first,
                        1 => second,
                        _ => ld_shared_u64(buf(j as u32 * TOPK_THREADS + tid)),
                    };
                    if pos < TOPK_BUFFER {
                        st_shared_u64(buf(pos), key);
                    }
                    pos += 1;
                }
            });
            sync_threads();
            (block_least, total)
        }
    }

    /// Sorts the first `size` keys of the buffer (a power of two, `<= 1024`) into descending
    /// order, bitonically.
    ///
    /// # Safety
    /// The whole block calls it together with the same `size`, after a barrier.
    #[inline(always)]
    unsafe fn sort_desc(size: u32) {
        let tid = thread_idx_x();
        let mut block = 2;
        // SAFETY: indices stay below size <= 1024 < TOPK_BUFFER; a barrier ends every stage.
        unsafe {
            while block <= size {
                let mut stride = block >> 1;
                while stride > 0 {
                    let mut i = tid;
                    while i < size / 2 {
                        let lo = ((i & !(stride - 1)) << 1) | (i & (stride - 1));
                        let hi = lo + stride;
                        let a = ld_shared_u64(buf(lo));
                        let b = ld_shared_u64(buf(hi));
                        let descending = lo & block == 0;
                        if (a < b) == descending {
                            st_shared_u64(buf(lo), b);
                            st_shared_u64(buf(hi), a);
                        }
                        i += TOPK_THREADS;
                    }
                    sync_threads();
                    stride >>= 1;
                }
                block <<= 1;
            }
        }
    }

    /// Sorts the buffer's `n <= k` keys and writes the row's outputs: `k` values and indices.
    /// Slots past `n` (only when a row has fewer than k tokens, which the host refuses) come
    /// out as NaN / -1.
    ///
    /// # Safety
    /// The whole block calls it together; `p` passed `shape_ok`; `row < p.rows`.
    #[inline(always)]
    unsafe fn emit(p: &TopKParams, row: u32, n: u32) {
        let tid = thread_idx_x();
        let size = pow2_at_least(p.k);
        // SAFETY: size <= 1024 < TOPK_BUFFER; the barrier publishes the pads and every earlier
        // append; outputs hold rows × k entries and row < rows, i < k.
        unsafe {
            let mut i = tid;
            while i < size {
                if i >= n {
                    st_shared_u64(buf(i), 0);
                }
                i += TOPK_THREADS;
            }
            sync_threads();
            sort_desc(size);
            let mut i = tid;
            while i < p.k {
                let key = ld_shared_u64(buf(i));
                let at = row as usize * p.k as usize + i as usize;
                (p.out_values as *mut f32).add(at).write(key_value(key));
                (p.out_indices as *mut i32).add(at).write(key_index(key) as i32);
                i += TOPK_THREADS;
            }
        }
    }

    /// Whether the launch parameters are consistent; every block checks before it touches
    /// memory and returns as a whole otherwise (so no barrier is half-skipped).
    #[inline(always)]
    fn shape_ok(p: &TopKParams) -> bool {
        block_dim_x() == TOPK_THREADS
            && p.k >= 1
            && p.k <= TOPK_MAX_K
            && p.k <= p.vocab
            && p.vocab <= MAX_VOCAB
            && p.dtype <= DTYPE_F16
            && p.chunks >= 1
            && p.chunk_len >= TOPK_ITER
            && p.chunk_len % TOPK_ITER == 0
            && p.chunk_len <= MAX_VOCAB + TOPK_ITER
            && p.record_stride >= p.k
            && p.record_stride % 8 == 0
            && p.record_stride <= TOPK_MAX_K
            && (p.chunks as u64) * (p.chunk_len as u64) >= p.vocab as u64
            && (p.chunks as u64) * (p.record_stride as u64) <= u32::MAX as u64 / 2
    }

    /// Four logits of `dtype` f32 at `q..q + 4` (zeros past `end`), as bits.
    ///
    /// # Safety
    /// `row` addresses a row of at least `end` f32.
    #[inline(always)]
    unsafe fn load_quad_f32(row: u64, q: u32, end: u32, vector_ok: bool) -> [u32; 4] {
        let at = (row + q as u64 * 4) as *const u32;
        // SAFETY: the vector load covers q..q + 4 <= end, 16-byte aligned (row start aligned,
        // q a multiple of 4); scalar loads stay below `end`.
        unsafe {
            if vector_ok && q + 4 <= end {
                ld_global_nc_v4_u32(at)
            } else {
                let one = |e: u32| if q + e < end { ld_global_nc_u32(at.add(e as usize)) } else { 0 };
                [one(0), one(1), one(2), one(3)]
            }
        }
    }

    /// Eight 16-bit logits at `q..q + 8` (zeros past `end`), two to a word, low half first.
    ///
    /// # Safety
    /// `row` addresses a row of at least `end` 16-bit values.
    #[inline(always)]
    unsafe fn load_oct_u16(row: u64, q: u32, end: u32, vector_ok: bool) -> [u32; 4] {
        let at = (row + q as u64 * 2) as *const u16;
        // SAFETY: the vector load covers q..q + 8 <= end, 16-byte aligned (row start aligned,
        // q a multiple of 8); scalar loads stay below `end`.
        unsafe {
            if vector_ok && q + 8 <= end {
                ld_global_nc_v4_u32(at as *const u32)
            } else {
                let one = |e: u32| if q + e < end { at.add(e as usize).read() as u32 } else { 0 };
                [one(0) | one(1) << 16, one(2) | one(3) << 16, one(4) | one(5) << 16, one(6) | one(7) << 16]
            }
        }
    }

    /// This thread's raw logits of the iteration at `base`: f32 as two coalesced quads
    /// (`base + 4·tid` and `base + 2048 + 4·tid`), 16-bit as eight in a row at `base + 8·tid`.
    ///
    /// # Safety
    /// As for the loaders.
    #[inline(always)]
    unsafe fn load_logits<const D: u32>(row: u64, base: u32, end: u32, vector_ok: bool) -> [u32; 8] {
        let tid = thread_idx_x();
        // SAFETY: forwarded.
        unsafe {
            if D == DTYPE_F32 {
                let [a, b, c, d] = load_quad_f32(row, base + tid * 4, end, vector_ok);
                let [e, f, g, h] = load_quad_f32(row, base + TOPK_ITER / 2 + tid * 4, end, vector_ok);
                [a, b, c, d, e, f, g, h]
            } else {
                let [a, b, c, d] = load_oct_u16(row, base + tid * 8, end, vector_ok);
                [a, b, c, d, 0, 0, 0, 0]
            }
        }
    }

    /// Token index of this thread's element `j` of the iteration at `base` (the layout of
    /// [`load_logits`]).
    #[inline(always)]
    fn element_index<const D: u32>(base: u32, j: usize) -> u32 {
        let tid = thread_idx_x();
        if D == DTYPE_F32 {
            base + (j as u32 >> 2) * (TOPK_ITER / 2) + tid * 4 + (j as u32 & 3)
        } else {
            base + tid * 8 + j as u32
        }
    }

    /// Widened values of the raw logits from [`load_logits`].
    #[inline(always)]
    fn widen<const D: u32>(raw: &[u32; 8]) -> [f32; 8] {
        let mut xs = [0f32; 8];
        each8(|j| {
            xs[j] = if D == DTYPE_F32 {
                f32::from_bits(raw[j])
            } else {
                let bits = (raw[j >> 1] >> ((j as u32 & 1) * 16)) as u16;
                if D == DTYPE_BF16 {
                    widen_bf16(bits)
                } else {
                    widen_f16(bits)
                }
            };
        });
        xs
    }

    /// Which of this thread's elements enter the buffer: those before `end` whose key is
    /// `>= theta`. A float compare with θ's value settles almost every element (`x < θ` fails
    /// the key test whatever the index); only elements that are not below it (ties with θ's
    /// value, NaN, or a NaN θ before the first selection) pay for the exact key.
    #[inline(always)]
    fn survivors<const D: u32>(xs: &[f32; 8], base: u32, end: u32, theta: u64, theta_value: f32) -> u32 {
        // Every iteration but a row's last is whole: one uniform test instead of eight.
        let whole = base + TOPK_ITER <= end;
        let mut maybe = 0u32;
        each8(|j| {
            // Written as `!(x < θ)` on purpose: NaN on either side must reach the exact test.
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            let not_below = !(xs[j] < theta_value);
            if not_below && (whole || element_index::<D>(base, j) < end) {
                maybe |= 1 << j;
            }
        });
        let mut take = 0u32;
        if maybe != 0 {
            each8(|j| {
                if (maybe >> j) & 1 == 1 && topk_key(xs[j], element_index::<D>(base, j)) >= theta {
                    take |= 1 << j;
                }
            });
        }
        take
    }

    /// Stage 1 for one dtype: the chunk's k largest keys into the buffer; returns their count.
    ///
    /// # Safety
    /// The whole block calls it; `p` passed `shape_ok`; `row < p.rows`; `start < end <= vocab`.
    #[inline(always)]
    unsafe fn chunk_top<const D: u32>(p: &TopKParams, row: u32, start: u32, end: u32) -> u32 {
        let element: u64 = if D == DTYPE_F32 { 4 } else { 2 };
        let row_ptr = p.logits + row as u64 * p.row_stride * element;
        let vector_ok = row_ptr % 16 == 0;
        let iters = (end - start).div_ceil(TOPK_ITER);
        // θ = 1 admits every real key (they are all > 1); its value is NaN, so every element
        // takes the exact test until the first selection.
        let (mut theta, mut n) = (1u64, 0u32);
        let mut theta_value = key_value(theta);
        // SAFETY: loads stay inside the row below `end` (the host checked rows, stride and
        // length); the block-wide helpers are called by the whole block on uniform branches
        // (`iters`, `n` and `theta` are the same in every thread).
        unsafe {
            let mut raw = load_logits::<D>(row_ptr, start, end, vector_ok);
            let mut it = 0;
            while it < iters {
                let base = start + it * TOPK_ITER;
                // Next iteration's loads go out before this one is filtered.
                let next = if it + 1 < iters { load_logits::<D>(row_ptr, base + TOPK_ITER, end, vector_ok) } else { [0; 8] };
                let xs = widen::<D>(&raw);
                let take = survivors::<D>(&xs, base, end, theta, theta_value);
                n = append(take, |j| topk_key(xs[j], element_index::<D>(base, j)), n, it);
                if n > TOPK_BUFFER - TOPK_ITER {
                    (theta, n) = select(n, p.k);
                    theta_value = key_value(theta);
                }
                raw = next;
                it += 1;
            }
            if n > p.k {
                (_, n) = select(n, p.k);
            }
        }
        n
    }

    /// Stage 1: one block per (chunk, row). See the module documentation.
    ///
    /// # Safety
    /// Grid `chunks × rows`, `TOPK_THREADS` threads, `TOPK_SHARED_BYTES` of dynamic shared
    /// memory; `logits` holds `rows` rows of `vocab` elements of `dtype`, `row_stride` apart;
    /// `records` holds `rows × chunks × record_stride` u64 when `chunks > 1`; the outputs hold
    /// `rows × k` entries each.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn topk_chunks(p: TopKParams) {
        let (chunk, row) = (block_idx_x(), block_idx_y());
        if !shape_ok(&p) || row >= p.rows || chunk >= p.chunks {
            return;
        }
        let start = chunk * p.chunk_len;
        if start >= p.vocab {
            return;
        }
        let end = if p.vocab - start < p.chunk_len { p.vocab } else { start + p.chunk_len };
        // SAFETY: the whole block is here (the returns above are uniform); launch contract.
        unsafe {
            let n = match p.dtype {
                DTYPE_F32 => chunk_top::<DTYPE_F32>(&p, row, start, end),
                DTYPE_BF16 => chunk_top::<DTYPE_BF16>(&p, row, start, end),
                _ => chunk_top::<DTYPE_F16>(&p, row, start, end),
            };
            if p.chunks == 1 {
                emit(&p, row, n);
            } else {
                // The last append wrote after its barrier: publish it before reading.
                sync_threads();
                let record = (p.records as *mut u64)
                    .add((row as usize * p.chunks as usize + chunk as usize) * p.record_stride as usize);
                let mut i = thread_idx_x();
                while i < p.record_stride {
                    record.add(i as usize).write(if i < n { ld_shared_u64(buf(i)) } else { 0 });
                    i += TOPK_THREADS;
                }
            }
        }
    }

    /// Eight record keys at `at..at + 8` of a row's `total` (zeros past it).
    ///
    /// # Safety
    /// `rec` addresses `total` u64, 16-byte aligned; `total` and `at` are multiples of 8.
    #[inline(always)]
    unsafe fn load_keys(rec: u64, at: u32, total: u32) -> [u64; 8] {
        let mut keys = [0u64; 8];
        if at + 8 <= total {
            let p = (rec + at as u64 * 8) as *const u32;
            // SAFETY: 64 readable bytes at a 64-byte aligned address inside the row's records,
            // written by the previous kernel and not written during this one.
            let (a, b, c, d) = unsafe {
                (ld_global_nc_v4_u32(p), ld_global_nc_v4_u32(p.add(4)), ld_global_nc_v4_u32(p.add(8)), ld_global_nc_v4_u32(p.add(12)))
            };
            let pair = |lo: u32, hi: u32| (hi as u64) << 32 | lo as u64;
            keys = [pair(a[0], a[1]), pair(a[2], a[3]), pair(b[0], b[1]), pair(b[2], b[3]),
                    pair(c[0], c[1]), pair(c[2], c[3]), pair(d[0], d[1]), pair(d[2], d[3])];
        }
        keys
    }

    /// Stage 2: one block per row, for rows of several chunks: the k largest of the chunk
    /// records, sorted, to the outputs.
    ///
    /// # Safety
    /// Grid `rows`, `TOPK_THREADS` threads, `TOPK_SHARED_BYTES` of dynamic shared memory, after
    /// `topk_chunks` with the same parameters on the same stream.
    #[no_mangle]
    pub unsafe extern "ptx-kernel" fn topk_merge(p: TopKParams) {
        let row = block_idx_x();
        if !shape_ok(&p) || row >= p.rows || p.chunks < 2 {
            return;
        }
        let total = p.chunks * p.record_stride;
        let rec = p.records + row as u64 * total as u64 * 8;
        let iters = total.div_ceil(TOPK_ITER);
        let tid = thread_idx_x();
        let (mut theta, mut n) = (1u64, 0u32);
        // SAFETY: as in `chunk_top`: uniform loop bounds and block-wide helpers; theta >= 1
        // keeps the 0 pads out, so only real keys (distinct) enter the buffer.
        unsafe {
            let mut raw = load_keys(rec, tid * 8, total);
            let mut it = 0;
            while it < iters {
                let base = it * TOPK_ITER;
                let next = if it + 1 < iters { load_keys(rec, base + TOPK_ITER + tid * 8, total) } else { [0; 8] };
                let mut take = 0u32;
                each8(|j| {
                    if raw[j] >= theta {
                        take |= 1 << j;
                    }
                });
                n = append(take, |j| raw[j], n, it);
                if n > TOPK_BUFFER - TOPK_ITER {
                    (theta, n) = select(n, p.k);
                }
                raw = next;
                it += 1;
            }
            if n > p.k {
                (_, n) = select(n, p.k);
            }
            emit(&p, row, n);
        }
    }
}
