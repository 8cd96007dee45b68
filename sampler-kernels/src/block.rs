//! Block-wide building blocks of the sampler kernels (device only): reductions, scans, a
//! shared-memory bitonic sort, a warp sort, and the shared-memory map they all use.
//!
//! Every function here is called by all `SAMPLER_THREADS` threads of a block together and
//! contains barriers; a caller that lets part of the block skip one deadlocks. Each function
//! ends with a barrier, so the shared scratch it used is free again on return.

use crate::abi::SAMPLER_THREADS;
use crate::intrinsics::*;

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

#[inline(always)]
fn max_u64(a: u64, b: u64) -> u64 {
    if a > b {
        a
    } else {
        b
    }
}

/// Largest `v` over the block.
///
/// # Safety
/// The whole block calls it together.
#[inline(always)]
pub unsafe fn block_max_u64(v: u64) -> u64 {
    // SAFETY: whole block converged (caller); slots SM_REDUCE + 8·warp are in the map.
    unsafe {
        let mut m = v;
        let mut x = 16;
        while x > 0 {
            m = max_u64(m, shfl_xor_u64(FULL_MASK, m, x));
            x >>= 1;
        }
        if lane_id() == 0 {
            st_shared_u64(smem(SM_REDUCE + warp_id() * 8), m);
        }
        sync_threads();
        let mut out = 0;
        let mut w = 0;
        while w < WARPS {
            out = max_u64(out, ld_shared_u64(smem(SM_REDUCE + w * 8)));
            w += 1;
        }
        sync_threads();
        out
    }
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
    // SAFETY: whole block converged (caller); slots SM_REDUCE + 4·warp are in the map.
    unsafe {
        let mut s = v;
        let mut x = 16;
        while x > 0 {
            s = s.wrapping_add(shfl_xor_u32(FULL_MASK, s, x));
            x >>= 1;
        }
        if lane_id() == 0 {
            st_shared_u32(smem(SM_REDUCE + warp_id() * 4), s);
        }
        sync_threads();
        let mut out = 0u32;
        let mut w = 0;
        while w < WARPS {
            out = out.wrapping_add(ld_shared_u32(smem(SM_REDUCE + w * 4)));
            w += 1;
        }
        sync_threads();
        out
    }
}

#[inline(always)]
unsafe fn shfl_xor_u128(v: u128, x: u32) -> u128 {
    // SAFETY: forwarded (whole warp converged).
    unsafe {
        let lo = shfl_xor_u64(FULL_MASK, v as u64, x);
        let hi = shfl_xor_u64(FULL_MASK, (v >> 64) as u64, x);
        ((hi as u128) << 64) | lo as u128
    }
}

#[inline(always)]
unsafe fn shfl_up_u128(v: u128, d: u32) -> u128 {
    // SAFETY: forwarded (whole warp converged).
    unsafe {
        let lo = shfl_up_u64(FULL_MASK, v as u64, d);
        let hi = shfl_up_u64(FULL_MASK, (v >> 64) as u64, d);
        ((hi as u128) << 64) | lo as u128
    }
}

#[inline(always)]
unsafe fn st_shared_u128(addr: u32, v: u128) {
    // SAFETY: forwarded (16-byte slot in the map).
    unsafe {
        st_shared_u64(addr, v as u64);
        st_shared_u64(addr + 8, (v >> 64) as u64);
    }
}

#[inline(always)]
unsafe fn ld_shared_u128(addr: u32) -> u128 {
    // SAFETY: forwarded (16-byte slot in the map).
    unsafe { ((ld_shared_u64(addr + 8) as u128) << 64) | ld_shared_u64(addr) as u128 }
}

/// Sum of `v` over the block. Exact: masses stay below 2^110.
///
/// # Safety
/// The whole block calls it together.
#[inline(always)]
pub unsafe fn block_sum_u128(v: u128) -> u128 {
    // SAFETY: whole block converged (caller); slots SM_REDUCE + 16·warp are in the map.
    unsafe {
        let mut s = v;
        let mut x = 16;
        while x > 0 {
            s = s.wrapping_add(shfl_xor_u128(s, x));
            x >>= 1;
        }
        if lane_id() == 0 {
            st_shared_u128(smem(SM_REDUCE + warp_id() * 16), s);
        }
        sync_threads();
        let mut out = 0u128;
        let mut w = 0;
        while w < WARPS {
            out = out.wrapping_add(ld_shared_u128(smem(SM_REDUCE + w * 16)));
            w += 1;
        }
        sync_threads();
        out
    }
}

/// Exclusive prefix sum of `v` in thread order, and the block total.
///
/// # Safety
/// The whole block calls it together.
#[inline(always)]
pub unsafe fn block_exclusive_scan_u32(v: u32) -> (u32, u32) {
    // SAFETY: whole block converged (caller); SM_REDUCE slots in the map.
    unsafe {
        let lane = lane_id();
        let mut incl = v;
        let mut d = 1;
        while d < 32 {
            let t = shfl_up_u32(FULL_MASK, incl, d);
            if lane >= d {
                incl = incl.wrapping_add(t);
            }
            d <<= 1;
        }
        if lane == 31 {
            st_shared_u32(smem(SM_REDUCE + warp_id() * 4), incl);
        }
        sync_threads();
        let (mut before, mut total) = (0u32, 0u32);
        let mut w = 0;
        while w < WARPS {
            let s = ld_shared_u32(smem(SM_REDUCE + w * 4));
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

/// Exclusive prefix sum of `v` in thread order, and the block total, exactly.
///
/// # Safety
/// The whole block calls it together.
#[inline(always)]
pub unsafe fn block_exclusive_scan_u128(v: u128) -> (u128, u128) {
    // SAFETY: whole block converged (caller); SM_REDUCE slots in the map.
    unsafe {
        let lane = lane_id();
        let mut incl = v;
        let mut d = 1;
        while d < 32 {
            let t = shfl_up_u128(incl, d);
            if lane >= d {
                incl = incl.wrapping_add(t);
            }
            d <<= 1;
        }
        if lane == 31 {
            st_shared_u128(smem(SM_REDUCE + warp_id() * 16), incl);
        }
        sync_threads();
        let (mut before, mut total) = (0u128, 0u128);
        let mut w = 0;
        while w < WARPS {
            let s = ld_shared_u128(smem(SM_REDUCE + w * 16));
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

/// Sorts `n` (a power of two, ≤ 2048) `u64` at `SM_SORT` into descending order, bitonically.
///
/// # Safety
/// The whole block calls it together; `n` is a power of two no larger than 2048.
#[inline(always)]
pub unsafe fn block_sort_desc(n: u32) {
    // SAFETY: every index stays below n ≤ 2048, inside SM_SORT; barriers separate the stages.
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
                    let a = ld_shared_u64(smem(SM_SORT + lo * 8));
                    let b = ld_shared_u64(smem(SM_SORT + hi * 8));
                    let descending = (lo & size) == 0;
                    if (a < b) == descending {
                        st_shared_u64(smem(SM_SORT + lo * 8), b);
                        st_shared_u64(smem(SM_SORT + hi * 8), a);
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

/// Sorts one `u64` per lane into descending order across the warp (lane 0 gets the largest).
///
/// # Safety
/// All 32 lanes of the warp call it together.
#[inline(always)]
pub unsafe fn warp_sort_desc(v: u64) -> u64 {
    // SAFETY: whole warp converged (caller).
    unsafe {
        let lane = lane_id();
        let mut v = v;
        let mut size = 2;
        while size <= 32 {
            let mut stride = size >> 1;
            while stride > 0 {
                let other = shfl_xor_u64(FULL_MASK, v, stride);
                let descending = (lane & size) == 0;
                let lower = (lane & stride) == 0;
                let keep_max = lower == descending;
                v = if keep_max { max_u64(v, other) } else if v < other { v } else { other };
                stride >>= 1;
            }
            size <<= 1;
        }
        v
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
