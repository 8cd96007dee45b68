//! Block-wide building blocks of the sampler kernels (device only): reductions, scans, a
//! shared-memory bitonic sort, a warp sort and warp scans, and the shared-memory map they all
//! use.
//!
//! Every `block_*` function is called by all `SAMPLER_THREADS` threads of a block together and
//! contains barriers; a caller that lets part of the block skip one deadlocks. Each ends with
//! a barrier, so the shared scratch it used is free again on return. The `warp_*` functions
//! and `shfl_idx_u128` are called by the 32 lanes of one warp and use no shared memory.

use crate::abi::{MERGE_CAPACITY, SAMPLER_THREADS};
use crate::intrinsics::*;
use crate::keys::{bitonic_keeps_larger, bitonic_stages_with_stride, BITONIC_PAD};

/// Warps per sampler block.
pub const WARPS: u32 = SAMPLER_THREADS / 32;

// Shared-memory map (byte offsets from `shared_base()`), sized to fit SAMPLER_SHARED_BYTES.
/// Per-warp partials of reductions and scans: 16 bytes per warp.
pub const SM_REDUCE: u32 = 0;
/// Small broadcast values (selection results, counters).
pub const SM_RESULT: u32 = 256;
/// Radix histogram: counts, `u32[256]`.
pub const SM_HIST: u32 = 512;
/// Radix histogram: mass, low and high `u64` halves of a `u128`, `[256]` each.
pub const SM_HIST_LO: u32 = 1536;
pub const SM_HIST_HI: u32 = 3584;
/// Mass bands of a tile: `u64[37]`.
pub const SM_BAND: u32 = 5632;
/// Logit bias of the current tile, `f32[TILE_TOKENS]`.
pub const SM_BIAS: u32 = 6144;
/// Sort buffer: `u64[2048]`.
pub const SM_SORT: u32 = 22528;
/// End of the map.
pub const SM_END: u32 = SM_SORT + 2048 * 8;

const _: () = assert!(SM_END <= crate::abi::SAMPLER_SHARED_BYTES);
const _: () = assert!(SM_BIAS + crate::abi::TILE_TOKENS * 4 <= SM_SORT);

/// Address of shared slot `offset`.
#[inline(always)]
pub fn smem(offset: u32) -> u32 {
    shared_base() + offset
}

/// The `u128` at a 16-byte slot of shared memory, low half first.
///
/// # Safety
/// `addr` is a 16-byte slot of the map.
#[inline(always)]
pub(crate) unsafe fn ld_shared_u128(addr: u32) -> u128 {
    // SAFETY: forwarded.
    unsafe { (ld_shared_u64(addr + 8) as u128) << 64 | ld_shared_u64(addr) as u128 }
}

/// The larger of two `u64`.
#[inline(always)]
pub(crate) fn max_u64(a: u64, b: u64) -> u64 {
    if a > b {
        a
    } else {
        b
    }
}

/// Inclusive prefix sum of `v` over the lanes of a warp (wrapping), for any [`Word`].
///
/// # Safety
/// All 32 lanes call it together.
#[inline(always)]
pub(crate) unsafe fn warp_inclusive_scan<T: Word>(v: T) -> T {
    let lane = lane_id();
    let mut s = v;
    let mut d = 1;
    while d < 32 {
        // SAFETY: forwarded (whole warp converged).
        let up = unsafe { s.shfl_up(d) };
        if lane >= d {
            s = s.wrapping_add(up);
        }
        d <<= 1;
    }
    s
}

/// `op` folded over the lanes of a warp by butterfly, in every lane.
///
/// # Safety
/// All 32 lanes call it together; `op` is associative and commutative.
#[inline(always)]
unsafe fn warp_reduce<T: Word, F: Fn(T, T) -> T>(v: T, op: F) -> T {
    let mut acc = v;
    let mut x = 16;
    while x > 0 {
        // SAFETY: forwarded (whole warp converged).
        acc = op(acc, unsafe { acc.shfl_xor(x) });
        x >>= 1;
    }
    acc
}

/// Largest `v` over the lanes of a warp, in every lane (stage 1's lists and stage 2's fold of
/// the tile heads). Its own butterfly, not
/// [`warp_reduce`]'s: through it, LLVM ordered `sample_rows`' zero initializations
/// differently, and the PTX would no longer be the one the H200 tested (session 55).
///
/// # Safety
/// All 32 lanes call it together.
#[inline(always)]
pub(crate) unsafe fn warp_max_u64(v: u64) -> u64 {
    let mut v = v;
    let mut x = 16;
    while x > 0 {
        // SAFETY: forwarded (whole warp converged).
        v = max_u64(v, unsafe { shfl_xor_u64(FULL_MASK, v, x) });
        x >>= 1;
    }
    v
}

/// Sum of `v` over the lanes of a warp, in every lane (wrapping).
///
/// # Safety
/// All 32 lanes call it together.
#[inline(always)]
pub(crate) unsafe fn warp_sum_u128(v: u128) -> u128 {
    // SAFETY: forwarded.
    unsafe { warp_reduce(v, u128::wrapping_add) }
}

/// Lane `src`'s `u128`, in every lane.
///
/// # Safety
/// All 32 lanes call it together with the same `src < 32`.
#[inline(always)]
pub(crate) unsafe fn shfl_idx_u128(v: u128, src: u32) -> u128 {
    // SAFETY: forwarded (two 64-bit halves).
    unsafe { ((shfl_idx_u64(FULL_MASK, (v >> 64) as u64, src) as u128) << 64) | shfl_idx_u64(FULL_MASK, v as u64, src) as u128 }
}

/// The integer widths the block reductions and scans work on, with how to move them between
/// lanes and through the per-warp slots of `SM_REDUCE` (16 bytes per warp).
pub(crate) trait Word: Copy {
    const ZERO: Self;
    /// Bytes of one slot.
    const SLOT: u32;
    fn wrapping_add(self, other: Self) -> Self;
    fn wrapping_sub(self, other: Self) -> Self;
    /// # Safety
    /// The whole warp calls it together.
    unsafe fn shfl_xor(self, lane_xor: u32) -> Self;
    /// # Safety
    /// The whole warp calls it together.
    unsafe fn shfl_up(self, delta: u32) -> Self;
    /// # Safety
    /// `addr` is a `SLOT`-aligned shared address inside the map.
    unsafe fn store(self, addr: u32);
    /// # Safety
    /// As for `store`.
    unsafe fn load(addr: u32) -> Self;
}

impl Word for u32 {
    const ZERO: Self = 0;
    const SLOT: u32 = 4;
    fn wrapping_add(self, other: Self) -> Self {
        u32::wrapping_add(self, other)
    }
    fn wrapping_sub(self, other: Self) -> Self {
        u32::wrapping_sub(self, other)
    }
    unsafe fn shfl_xor(self, lane_xor: u32) -> Self {
        // SAFETY: forwarded.
        unsafe { shfl_xor_u32(FULL_MASK, self, lane_xor) }
    }
    unsafe fn shfl_up(self, delta: u32) -> Self {
        // SAFETY: forwarded.
        unsafe { shfl_up_u32(FULL_MASK, self, delta) }
    }
    unsafe fn store(self, addr: u32) {
        // SAFETY: forwarded.
        unsafe { st_shared_u32(addr, self) }
    }
    unsafe fn load(addr: u32) -> Self {
        // SAFETY: forwarded.
        unsafe { ld_shared_u32(addr) }
    }
}

impl Word for u64 {
    const ZERO: Self = 0;
    const SLOT: u32 = 8;
    fn wrapping_add(self, other: Self) -> Self {
        u64::wrapping_add(self, other)
    }
    fn wrapping_sub(self, other: Self) -> Self {
        u64::wrapping_sub(self, other)
    }
    unsafe fn shfl_xor(self, lane_xor: u32) -> Self {
        // SAFETY: forwarded.
        unsafe { shfl_xor_u64(FULL_MASK, self, lane_xor) }
    }
    unsafe fn shfl_up(self, delta: u32) -> Self {
        // SAFETY: forwarded.
        unsafe { shfl_up_u64(FULL_MASK, self, delta) }
    }
    unsafe fn store(self, addr: u32) {
        // SAFETY: forwarded.
        unsafe { st_shared_u64(addr, self) }
    }
    unsafe fn load(addr: u32) -> Self {
        // SAFETY: forwarded.
        unsafe { ld_shared_u64(addr) }
    }
}

impl Word for u128 {
    const ZERO: Self = 0;
    const SLOT: u32 = 16;
    fn wrapping_add(self, other: Self) -> Self {
        u128::wrapping_add(self, other)
    }
    fn wrapping_sub(self, other: Self) -> Self {
        u128::wrapping_sub(self, other)
    }
    unsafe fn shfl_xor(self, lane_xor: u32) -> Self {
        // SAFETY: forwarded (two 64-bit halves).
        unsafe { ((((self >> 64) as u64).shfl_xor(lane_xor) as u128) << 64) | (self as u64).shfl_xor(lane_xor) as u128 }
    }
    unsafe fn shfl_up(self, delta: u32) -> Self {
        // SAFETY: forwarded (two 64-bit halves).
        unsafe { ((((self >> 64) as u64).shfl_up(delta) as u128) << 64) | (self as u64).shfl_up(delta) as u128 }
    }
    unsafe fn store(self, addr: u32) {
        // SAFETY: forwarded (two 8-byte halves of a 16-byte slot).
        unsafe {
            (self as u64).store(addr);
            ((self >> 64) as u64).store(addr + 8);
        }
    }
    unsafe fn load(addr: u32) -> Self {
        // SAFETY: forwarded.
        unsafe { ((u64::load(addr + 8) as u128) << 64) | u64::load(addr) as u128 }
    }
}

/// `op` folded over the block: butterfly within each warp, then over the warps' results.
///
/// # Safety
/// The whole block calls it together; `op` is associative and commutative.
#[inline(always)]
unsafe fn block_reduce<T: Word, F: Fn(T, T) -> T>(v: T, identity: T, op: F) -> T {
    // SAFETY: forwarded.
    unsafe { block_reduce_into::<T, F, true>(v, identity, op) }
}

/// [`block_reduce`], the result in every thread (`ALL`) or in warp 0 only (the others get
/// `identity`).
///
/// # Safety
/// As for [`block_reduce`].
#[inline(always)]
unsafe fn block_reduce_into<T: Word, F: Fn(T, T) -> T, const ALL: bool>(v: T, identity: T, op: F) -> T {
    // SAFETY: whole block converged (caller); slots SM_REDUCE + SLOT·warp are in the map.
    unsafe {
        let acc = warp_reduce(v, &op);
        if lane_id() == 0 {
            acc.store(smem(SM_REDUCE + warp_id() * T::SLOT));
        }
        sync_threads();
        let mut out = identity;
        if ALL || warp_id() == 0 {
            let mut w = 0;
            while w < WARPS {
                out = op(out, T::load(smem(SM_REDUCE + w * T::SLOT)));
                w += 1;
            }
        }
        sync_threads();
        out
    }
}

/// Exclusive prefix sum in thread order, and the block total (wrapping; callers stay far from
/// overflow).
///
/// # Safety
/// The whole block calls it together.
#[inline(always)]
unsafe fn block_exclusive_scan<T: Word>(v: T) -> (T, T) {
    // SAFETY: whole block converged (caller); SM_REDUCE slots in the map.
    unsafe {
        let incl = warp_inclusive_scan(v);
        if lane_id() == 31 {
            incl.store(smem(SM_REDUCE + warp_id() * T::SLOT));
        }
        sync_threads();
        let (mut before, mut total) = (T::ZERO, T::ZERO);
        let mut w = 0;
        while w < WARPS {
            let s = T::load(smem(SM_REDUCE + w * T::SLOT));
            if w < warp_id() {
                before = before.wrapping_add(s);
            }
            total = total.wrapping_add(s);
            w += 1;
        }
        sync_threads();
        (before.wrapping_add(incl).wrapping_sub(v), total)
    }
}

/// Largest `v` over the block.
///
/// # Safety
/// The whole block calls it together.
#[inline(always)]
pub unsafe fn block_max_u64(v: u64) -> u64 {
    // SAFETY: forwarded.
    unsafe { block_reduce(v, 0, max_u64) }
}

/// Smallest `v` over the block.
///
/// # Safety
/// The whole block calls it together.
#[inline(always)]
pub unsafe fn block_min_u32(v: u32) -> u32 {
    // SAFETY: as for block_max_u64: `max(!v)` is `!min(v)`.
    unsafe { !(block_max_u64(!v as u64) as u32) }
}

/// Sum of `v` over the block (wrapping, but callers stay far from 2^32).
///
/// # Safety
/// The whole block calls it together.
#[inline(always)]
pub unsafe fn block_sum_u32(v: u32) -> u32 {
    // SAFETY: forwarded.
    unsafe { block_reduce(v, 0, u32::wrapping_add) }
}

/// Sum of `v` over the block. Exact: masses stay below 2^110.
///
/// # Safety
/// The whole block calls it together.
#[inline(always)]
pub unsafe fn block_sum_u128(v: u128) -> u128 {
    // SAFETY: forwarded.
    unsafe { block_reduce(v, 0, u128::wrapping_add) }
}

/// [`block_sum_u128`] whose result only warp 0 gets (the other threads get 0): the other warps
/// skip the fold over the warps' sums, sixteen loads and adds that `exact_gather` paid in every
/// warp of every tile for the one thread that writes the sum.
///
/// # Safety
/// The whole block calls it together.
#[inline(always)]
pub unsafe fn block_sum_u128_to_warp0(v: u128) -> u128 {
    // SAFETY: forwarded.
    unsafe { block_reduce_into::<_, _, false>(v, 0, u128::wrapping_add) }
}

/// Adds this block's arrival to `counter` after every thread's earlier global writes, and
/// returns, in every thread, whether the count it reached is `last`: then the block sees every
/// write the other arrivals made before theirs (the release and acquire halves of a grid
/// barrier, without the wait), so it may finish what they started.
///
/// # Safety
/// The whole block calls it together; `counter` is a 4-byte aligned global word of the step's
/// scratch that only such arrivals change while they happen; readers of the other arrivals'
/// writes use loads that do not hit a stale L1 line (volatile or `.relaxed.gpu`).
#[inline(always)]
pub unsafe fn block_arrive(counter: *mut u32, last: u32) -> bool {
    // SAFETY: the barrier puts every thread's writes before thread 0's release fence; the
    // atomic is on the caller's word; `barrier.red` hands thread 0's acquire to the block.
    unsafe {
        sync_threads();
        let mut is_last = false;
        if thread_idx_x() == 0 {
            fence_acq_rel_gpu();
            is_last = atom_add_global_u32(counter, 1).wrapping_add(1) == last;
            if is_last {
                fence_acq_rel_gpu();
            }
        }
        sync_threads_or(is_last)
    }
}

/// Exclusive prefix sum of `v` in thread order, and the block total.
///
/// # Safety
/// The whole block calls it together.
#[inline(always)]
pub unsafe fn block_exclusive_scan_u32(v: u32) -> (u32, u32) {
    // SAFETY: forwarded.
    unsafe { block_exclusive_scan(v) }
}

/// Exclusive prefix sum of `v` in thread order, and the block total, exactly.
///
/// # Safety
/// The whole block calls it together.
#[inline(always)]
pub unsafe fn block_exclusive_scan_u128(v: u128) -> (u128, u128) {
    // SAFETY: forwarded.
    unsafe { block_exclusive_scan(v) }
}

/// Adds a `u128` to a shared-memory sum kept as two `u64` halves at `lo` and `hi` (there is no
/// 128-bit atomic): the low half's carry goes into the high half, so concurrent adds stay exact.
///
/// # Safety
/// `lo` and `hi` are 8-byte aligned slots of the launch's shared memory that only such adds (and
/// reads after a barrier) touch.
#[inline(always)]
pub unsafe fn atom_add_shared_u128(lo: u32, hi: u32, value: u128) {
    let low = value as u64;
    // SAFETY: forwarded.
    unsafe {
        let old = atom_add_shared_u64(lo, low);
        let carry = (old.wrapping_add(low) < old) as u64;
        let high = (value >> 64) as u64 + carry;
        if high != 0 {
            atom_add_shared_u64(hi, high);
        }
    }
}

/// Sorts `n` (a power of two, ≤ 2048) `u64` at `SM_SORT` into descending order, bitonically.
///
/// # Safety
/// The whole block calls it together; `n` is a power of two no larger than 2048.
#[inline(always)]
pub unsafe fn block_sort_desc(n: u32) {
    // SAFETY: forwarded; SM_SORT holds 2048 keys: 8n bytes for any n ≤ 2048, and 16n for the
    // sorts in registers (n ≤ 1024, asserted below).
    unsafe { block_sort_desc_at(SM_SORT, n) }
}
const _: () = assert!(SM_END - SM_SORT >= 16 * 2 * SAMPLER_THREADS);

/// Sorts `n` (a power of two) `u64` at shared offset `base` into descending order, bitonically.
/// Up to two keys a thread, each thread holds its positions' keys in registers: the stages
/// within a warp (strides below 32) are shuffles, a stride of `SAMPLER_THREADS` compares a
/// thread's two keys, and only the others go through shared memory (10 of 45 stages at 512
/// keys, 14 of 55 at 1024), one barrier each: they alternate between `base` and the `n` keys
/// after it. A stage behind a barrier took about 300 cycles in `exact_finish` (session 23's
/// source counters), where most of the sorts are of a few hundred keys. Larger lists take every
/// stage through shared memory.
///
/// Out of line, one copy for every call site: inlined at each (stage 2's merge, its re-keying,
/// top log-probabilities, the exact pass's finish, verification), it made those kernels' code
/// larger and rows at B = 1 slower, though they run one sort a row.
///
/// # Safety
/// The whole block calls it together; `base + 8n` lies inside the launch's shared memory, and
/// for `n ≤ 2 · SAMPLER_THREADS` so does `base + 16n`, whose upper half the sort overwrites.
#[inline(never)]
pub unsafe extern "C" fn block_sort_desc_at(base: u32, n: u32) {
    // SAFETY: forwarded.
    unsafe {
        if n <= SAMPLER_THREADS {
            sort_desc_in_registers::<1>(base, n)
        } else if n <= 2 * SAMPLER_THREADS {
            sort_desc_in_registers::<2>(base, n)
        } else {
            sort_desc_in_shared(base, n)
        }
    }
}

/// One stage of the network for position `pos`: `other` is the key at `pos ^ stride`, and
/// [`bitonic_keeps_larger`] says which of the two stays (host-tested there, on the same network
/// run sequentially).
#[inline(always)]
fn bitonic_step(key: u64, other: u64, pos: u32, size: u32, stride: u32) -> u64 {
    if (key < other) == bitonic_keeps_larger(pos, size, stride) {
        other
    } else {
        key
    }
}

/// A stage of the network inside the warp (`stride < 32`), by shuffle.
///
/// # Safety
/// All 32 lanes of the warp call it together.
#[inline(always)]
unsafe fn shuffle_step(key: u64, pos: u32, size: u32, stride: u32) -> u64 {
    // SAFETY: forwarded.
    bitonic_step(key, unsafe { shfl_xor_u64(FULL_MASK, key, stride) }, pos, size, stride)
}

/// Position of a thread's `j`-th key in [`sort_desc_in_registers`].
#[inline(always)]
fn held_pos(j: usize, tid: u32) -> u32 {
    j as u32 * SAMPLER_THREADS + tid
}

/// [`block_sort_desc_at`] for `n ≤ K · SAMPLER_THREADS`: thread `t` holds positions `t` and
/// (with `K` = 2) `t + SAMPLER_THREADS`. The shuffle stages are spelled out, each with a constant
/// stride; a loop over the stages, branching per stage between a shuffle and a barrier, held
/// 17–18% of `exact_finish`'s stall samples (session 24, run 6). Below 32 keys the warp sorts 32
/// positions: past `n` they hold [`BITONIC_PAD`], so the first `n` are the `n` keys, sorted.
///
/// # Safety
/// As for [`block_sort_desc_at`], with `n ≤ K · SAMPLER_THREADS`.
#[inline(always)]
unsafe fn sort_desc_in_registers<const K: usize>(base: u32, n: u32) {
    // SAFETY: shared accesses below 2n, inside the caller's buffer; every thread runs every
    // stage (uniform loops), so the shuffles have the whole warp and the barriers the block.
    // A stage writes the half that the stage before did not read, and reads after a barrier:
    // by the time a thread writes a half again, every thread has passed the barrier after its
    // last read of it. The last such stage writes the upper half, so the final stores to `base`
    // race with no read.
    unsafe {
        const { assert!(K == 1 || K == 2) };
        // `$body` for `j` = 0, and for `j` = 1 when `K` is 2, spelled out: closures (as in
        // `each8`) were not inlined into `exact_tail`, and the keys went to local memory.
        macro_rules! each_held {
            (|$j:ident| $body:block) => {{
                {
                    let $j = 0usize;
                    $body
                }
                if K == 2 {
                    let $j = K - 1;
                    $body
                }
            }};
        }
        let tid = thread_idx_x();
        let mut key = [BITONIC_PAD; K];
        each_held!(|j| {
            if held_pos(j, tid) < n {
                key[j] = ld_shared_u64(smem(base + held_pos(j, tid) * 8));
            }
        });
        each_held!(|j| {
            let (pos, mut k) = (held_pos(j, tid), key[j]);
            k = shuffle_step(k, pos, 2, 1);
            k = shuffle_step(k, pos, 4, 2);
            k = shuffle_step(k, pos, 4, 1);
            k = shuffle_step(k, pos, 8, 4);
            k = shuffle_step(k, pos, 8, 2);
            k = shuffle_step(k, pos, 8, 1);
            k = shuffle_step(k, pos, 16, 8);
            k = shuffle_step(k, pos, 16, 4);
            k = shuffle_step(k, pos, 16, 2);
            key[j] = shuffle_step(k, pos, 16, 1);
        });
        let mut upper = bitonic_stages_with_stride(n, 32, SAMPLER_THREADS) % 2 == 1;
        let mut size = 32;
        while size <= if n > 32 { n } else { 32 } {
            let mut stride = size >> 1;
            if K == 2 && stride == SAMPLER_THREADS {
                // Positions t and t + SAMPLER_THREADS: both of this thread.
                let (a, b) = (key[0], key[K - 1]);
                let (hi, lo) = if a < b { (b, a) } else { (a, b) };
                let (first, second) = if bitonic_keeps_larger(held_pos(0, tid), size, stride) { (hi, lo) } else { (lo, hi) };
                each_held!(|j| { key[j] = if j == 0 { first } else { second }; });
                stride >>= 1;
            }
            while stride >= 32 {
                let half = if upper { base + n * 8 } else { base };
                each_held!(|j| {
                    if held_pos(j, tid) < n {
                        st_shared_u64(smem(half + held_pos(j, tid) * 8), key[j]);
                    }
                });
                sync_threads();
                // `pos ^ stride < n` exactly when `pos < n`: stride < n, a power of two.
                each_held!(|j| {
                    let pos = held_pos(j, tid);
                    let other = if pos < n { ld_shared_u64(smem(half + (pos ^ stride) * 8)) } else { 0 };
                    key[j] = bitonic_step(key[j], other, pos, size, stride);
                });
                upper = !upper;
                stride >>= 1;
            }
            each_held!(|j| {
                let (pos, mut k) = (held_pos(j, tid), key[j]);
                k = shuffle_step(k, pos, size, 16);
                k = shuffle_step(k, pos, size, 8);
                k = shuffle_step(k, pos, size, 4);
                k = shuffle_step(k, pos, size, 2);
                key[j] = shuffle_step(k, pos, size, 1);
            });
            size <<= 1;
        }
        each_held!(|j| {
            if held_pos(j, tid) < n {
                st_shared_u64(smem(base + held_pos(j, tid) * 8), key[j]);
            }
        });
        sync_threads();
    }
}

/// [`block_sort_desc_at`] with every stage through shared memory, for any `n`.
///
/// # Safety
/// As for [`block_sort_desc_at`].
#[inline(always)]
unsafe fn sort_desc_in_shared(base: u32, n: u32) {
    // SAFETY: every index stays below n, inside the caller's buffer; barriers separate the stages.
    unsafe {
        let tid = thread_idx_x();
        let mut size = 2;
        while size <= n {
            let mut stride = size >> 1;
            while stride > 0 {
                let mut i = tid;
                while i < n / 2 {
                    let lo = (i / stride) * 2 * stride + (i % stride);
                    let hi = lo + stride;
                    let a = ld_shared_u64(smem(base + lo * 8));
                    let b = ld_shared_u64(smem(base + hi * 8));
                    let descending = (lo & size) == 0;
                    if (a < b) == descending {
                        st_shared_u64(smem(base + lo * 8), b);
                        st_shared_u64(smem(base + hi * 8), a);
                    }
                    i += SAMPLER_THREADS;
                }
                sync_threads();
                stride >>= 1;
            }
            size <<= 1;
        }
    }
}

/// Sorts one word per lane into descending order across the warp (lane 0 gets the largest).
///
/// # Safety
/// All 32 lanes of the warp call it together.
#[inline(always)]
pub(crate) unsafe fn warp_sort_desc<T: Word + PartialOrd>(v: T) -> T {
    // SAFETY: whole warp converged (caller).
    unsafe {
        let lane = lane_id();
        let mut v = v;
        let mut size = 2;
        while size <= 32 {
            let mut stride = size >> 1;
            while stride > 0 {
                let other = v.shfl_xor(stride);
                // One comparison serves both directions (equal words are the same word either
                // way): two comparisons and their selects cost three instructions more a step
                // on u64 keys (session 47).
                let keep_max = bitonic_keeps_larger(lane, size, stride);
                v = if (v > other) == keep_max { v } else { other };
                stride >>= 1;
            }
            size <<= 1;
        }
        v
    }
}

/// Eight f32 from the bit patterns of two 16-byte vector loads, in order.
#[inline(always)]
pub fn f32x8(a: [u32; 4], b: [u32; 4]) -> [f32; 8] {
    [
        f32::from_bits(a[0]),
        f32::from_bits(a[1]),
        f32::from_bits(a[2]),
        f32::from_bits(a[3]),
        f32::from_bits(b[0]),
        f32::from_bits(b[1]),
        f32::from_bits(b[2]),
        f32::from_bits(b[3]),
    ]
}

/// Calls `f(0)` … `f(7)`, spelled out. Per-thread arrays must only ever be indexed by constants,
/// or they move to local memory (the PTX check rejects that); every kernel's 8-token loops use
/// this.
#[inline(always)]
pub fn each8<F: FnMut(usize)>(mut f: F) {
    f(0);
    f(1);
    f(2);
    f(3);
    f(4);
    f(5);
    f(6);
    f(7);
}

/// Calls `f(j)` for `j` in `0..N` (`N` is 1, 2, 4 or 8), each index a constant, so per-thread
/// arrays indexed by `j` stay in registers.
#[inline(always)]
pub fn each_n<const N: usize, F: FnMut(usize)>(mut f: F) {
    const { assert!(N == 1 || N == 2 || N == 4 || N == 8) };
    f(0);
    if N >= 2 {
        f(1);
    }
    if N >= 4 {
        f(2);
        f(3);
    }
    if N == 8 {
        f(4);
        f(5);
        f(6);
        f(7);
    }
}

/// Positions of a merged list of `MERGE_CAPACITY` keys that each thread of a 512-thread block
/// owns (2048 / 512): stage 2's and verification's sorted lists.
pub const OWN: usize = (MERGE_CAPACITY / SAMPLER_THREADS) as usize;

/// Calls `f(0)` … `f(OWN - 1)`, spelled out, for a thread's `OWN` positions of a merged list.
#[inline(always)]
pub fn each_own<F: FnMut(usize)>(mut f: F) {
    const _: () = assert!(OWN == 4);
    f(0);
    f(1);
    f(2);
    f(3);
}

/// How many consecutive positions of a sorted list of `n` keys (zero-padded to
/// [`pow2_at_least`]`(n)`) each thread of a `SAMPLER_THREADS` block holds when the list is
/// spread as thinly as runs of a power of two allow: one for up to 512 keys. Work per key is
/// then a chain of one call in most threads, not of `OWN` or 8 in a few.
#[inline(always)]
pub fn run_per_thread(n: u32) -> u32 {
    let padded = pow2_at_least(n);
    if padded > SAMPLER_THREADS {
        padded / SAMPLER_THREADS
    } else {
        1
    }
}

/// The smallest power of two ≥ `n` (and ≥ 2).
#[inline(always)]
pub fn pow2_at_least(n: u32) -> u32 {
    let mut p = 2;
    while p < n {
        p <<= 1;
    }
    p
}
