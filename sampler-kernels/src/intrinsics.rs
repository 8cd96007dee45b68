//! Thin wrappers over the PTX instructions the kernels need, written with `asm!`.
//!
//! rustc's NVPTX backend has no stable intrinsics for most of these, and `core::arch::nvptx`
//! covers only a few, so each one is spelled out here with the PTX it emits. Everything is
//! `#[inline(always)]`: these are single instructions, and a call that survived inlining
//! would cost a call and return around each. (The few functions kept out of line on purpose
//! are `extern "C"` with scalar or by-value arguments, so they need no stack frame, which the
//! PTX check rejects: see ARCHITECTURE.md, "Heavy per-position arithmetic out of line".)
//!
//! Safety, in general: these are only meaningful inside a kernel launch. Warp-synchronous
//! instructions (`*.sync` with a member mask) require every lane named in the mask to execute
//! the same instruction, and block barriers require every thread of the block to arrive.
#![allow(clippy::missing_safety_doc)]

use core::arch::{asm, global_asm};

// The block's dynamic shared memory. Its size is set at launch; kernels carve it up by byte
// offsets from `shared_base()`.
global_asm!(".extern .shared .align 16 .b8 SMEM[];");

macro_rules! special_register {
    ($(#[$doc:meta])* $name:ident, $reg:literal) => {
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            let value: u32;
            // SAFETY: reading a special register has no side effect and no precondition.
            unsafe { asm!(concat!("mov.u32 {0}, ", $reg, ";"), out(reg32) value, options(pure, nomem, nostack)) };
            value
        }
    };
}

special_register!(
    /// `mov.u32 %r, %tid.x`: the thread's index in its block.
    thread_idx_x, "%tid.x"
);
special_register!(
    /// `mov.u32 %r, %ntid.x`: threads per block along x.
    block_dim_x, "%ntid.x"
);
special_register!(
    /// `mov.u32 %r, %ctaid.x`: the block's index in the grid along x.
    block_idx_x, "%ctaid.x"
);
special_register!(
    /// `mov.u32 %r, %ctaid.y`: the block's index in the grid along y.
    block_idx_y, "%ctaid.y"
);
special_register!(
    /// `mov.u32 %r, %nctaid.x`: blocks in the grid along x.
    grid_dim_x, "%nctaid.x"
);
special_register!(
    /// `mov.u32 %r, %laneid`: the thread's lane in its warp, 0..32.
    lane_id, "%laneid"
);

/// The warp's index in its block, for a one-dimensional block.
#[inline(always)]
pub fn warp_id() -> u32 {
    thread_idx_x() >> 5
}

/// [`warp_id`], read from `%tid.x` wherever it is called: LLVM may not merge the reads, so
/// the value need not stay in a register between uses.
#[inline(always)]
pub fn volatile_warp_id() -> u32 {
    let tid: u32;
    // SAFETY: reading a special register has no side effect and no precondition.
    unsafe { asm!("mov.u32 {0}, %tid.x;", out(reg32) tid, options(nomem, nostack)) };
    tid >> 5
}

/// Every lane of a warp, as a member mask.
pub const FULL_MASK: u32 = 0xffff_ffff;

/// `shfl.sync.bfly.b32 d, v, lane_xor, 0x1f, mask`: the value of lane `lane_id ^ lane_xor`.
///
/// # Safety
/// Every lane in `mask` executes this call, converged, with the same `lane_xor` and `mask`.
#[inline(always)]
pub unsafe fn shfl_xor_u32(mask: u32, value: u32, lane_xor: u32) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the lanes in `mask` reach this instruction together.
    unsafe {
        asm!("shfl.sync.bfly.b32 {0}, {1}, {2}, 0x1f, {3};",
             out(reg32) out, in(reg32) value, in(reg32) lane_xor, in(reg32) mask,
             options(nomem, nostack))
    };
    out
}

/// `shfl.sync.down.b32 d, v, delta, 0x1f, mask`: the value of lane `lane_id + delta`, or the
/// lane's own value where that lane is outside the warp.
///
/// # Safety
/// As for [`shfl_xor_u32`].
#[inline(always)]
pub unsafe fn shfl_down_u32(mask: u32, value: u32, delta: u32) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the lanes in `mask` reach this instruction together.
    unsafe {
        asm!("shfl.sync.down.b32 {0}, {1}, {2}, 0x1f, {3};",
             out(reg32) out, in(reg32) value, in(reg32) delta, in(reg32) mask,
             options(nomem, nostack))
    };
    out
}

/// `shfl.sync.idx.b32 d, v, src_lane, 0x1f, mask`: the value of lane `src_lane` (a broadcast).
///
/// # Safety
/// As for [`shfl_xor_u32`].
#[inline(always)]
pub unsafe fn shfl_idx_u32(mask: u32, value: u32, src_lane: u32) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the lanes in `mask` reach this instruction together.
    unsafe {
        asm!("shfl.sync.idx.b32 {0}, {1}, {2}, 0x1f, {3};",
             out(reg32) out, in(reg32) value, in(reg32) src_lane, in(reg32) mask,
             options(nomem, nostack))
    };
    out
}

/// `vote.sync.ballot.b32 d, p, mask`: bit `i` is set when lane `i` passed `true`.
///
/// # Safety
/// Every lane in `mask` executes this call, converged, with the same `mask`.
#[inline(always)]
pub unsafe fn ballot(mask: u32, predicate: bool) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the lanes in `mask` reach this instruction together.
    unsafe {
        asm!("{{ .reg .pred p; setp.ne.u32 p, {1}, 0; vote.sync.ballot.b32 {0}, p, {2}; }}",
             out(reg32) out, in(reg32) predicate as u32, in(reg32) mask,
             options(nomem, nostack))
    };
    out
}

/// `vote.sync.any.pred d, p, mask`: whether any lane in `mask` passed `true`.
///
/// # Safety
/// As for [`ballot`].
#[inline(always)]
pub unsafe fn vote_any(mask: u32, predicate: bool) -> bool {
    let out: u32;
    // SAFETY: the caller guarantees the lanes in `mask` reach this instruction together.
    unsafe {
        asm!("{{ .reg .pred p, q; setp.ne.u32 p, {1}, 0; vote.sync.any.pred q, p, {2}; selp.u32 {0}, 1, 0, q; }}",
             out(reg32) out, in(reg32) predicate as u32, in(reg32) mask,
             options(nomem, nostack))
    };
    out != 0
}

/// `vote.sync.all.pred d, p, mask`: whether every lane in `mask` passed `true`.
///
/// # Safety
/// As for [`ballot`].
#[inline(always)]
pub unsafe fn vote_all(mask: u32, predicate: bool) -> bool {
    let out: u32;
    // SAFETY: the caller guarantees the lanes in `mask` reach this instruction together.
    unsafe {
        asm!("{{ .reg .pred p, q; setp.ne.u32 p, {1}, 0; vote.sync.all.pred q, p, {2}; selp.u32 {0}, 1, 0, q; }}",
             out(reg32) out, in(reg32) predicate as u32, in(reg32) mask,
             options(nomem, nostack))
    };
    out != 0
}

/// `barrier.sync 0`: block-wide barrier; also orders shared-memory accesses across it.
///
/// The non-`.aligned` form on purpose: LLVM does not treat inline asm as convergent, so it may
/// duplicate a barrier into branches; `bar.sync` (= `barrier.sync.aligned`) would then be
/// undefined, while `barrier.sync` only needs every thread to arrive at barrier 0 somewhere.
///
/// # Safety
/// Every thread of the block arrives at a barrier 0 the same number of times (no thread has
/// returned early and no thread is on a path that skips it).
#[inline(always)]
pub unsafe fn sync_threads() {
    // SAFETY: the caller guarantees that the whole block arrives.
    unsafe { asm!("barrier.sync 0;", options(nostack)) };
}

/// `barrier.sync ID, threads`: a barrier for the `threads` threads (whole warps) that use
/// barrier `ID`; also orders their shared-memory accesses across it. Non-`.aligned`, as
/// [`sync_threads`] says why. `ID` is a constant: with a register operand ptxas reserves all
/// 16 barriers for the kernel.
///
/// # Safety
/// `1 ≤ ID < 16` is used by no other group of threads at the same time; `threads` is a
/// multiple of 32, and exactly that many threads arrive, each with the same `threads`.
#[inline(always)]
pub unsafe fn sync_named<const ID: u32>(threads: u32) {
    // SAFETY: the caller guarantees the group's arrival and the barrier's exclusive use.
    unsafe { asm!("barrier.sync {0}, {1};", const ID, in(reg32) threads, options(nostack)) };
}

/// `barrier.red.or.pred 0`: a block-wide barrier like [`sync_threads`] (same barrier 0, same
/// memory ordering, non-aligned) that also returns, in every thread, whether any thread of
/// the block passed `true`.
///
/// # Safety
/// As for [`sync_threads`].
#[inline(always)]
pub unsafe fn sync_threads_or(predicate: bool) -> bool {
    let out: u32;
    // SAFETY: the caller guarantees that the whole block arrives.
    unsafe {
        asm!("{{ .reg .pred p, q; setp.ne.u32 p, {1}, 0; barrier.red.or.pred q, 0, p; selp.u32 {0}, 1, 0, q; }}",
             out(reg32) out, in(reg32) predicate as u32, options(nostack))
    };
    out != 0
}

/// `bar.warp.sync mask`: waits for the lanes in `mask` and orders their memory accesses.
///
/// # Safety
/// Every lane in `mask` executes this call with the same `mask`.
#[inline(always)]
pub unsafe fn sync_warp(mask: u32) {
    // SAFETY: the caller guarantees that the lanes in `mask` arrive.
    unsafe { asm!("bar.warp.sync {0};", in(reg32) mask, options(nostack)) };
}

/// `griddepcontrol.wait`: waits until every grid this one depends on programmatically (the
/// previous kernel of a step launched with programmatic stream serialization) has completed
/// and its memory operations are visible. Returns at once in a grid launched without that
/// attribute, so a kernel may call it however it was launched.
///
/// # Safety
/// None beyond being in a kernel; it is `unsafe` because what it orders is the caller's
/// argument for every later access to the previous kernels' outputs.
#[inline(always)]
pub unsafe fn wait_for_prior_grids() {
    // SAFETY: no operands. Without `nomem` the asm may touch memory as far as the compiler
    // knows, so it keeps every load and store on the side of it where the caller put them.
    unsafe { asm!("griddepcontrol.wait;", options(nostack)) };
}

/// `griddepcontrol.launch_dependents`: lets the next kernel, if launched with programmatic
/// stream serialization, be scheduled once every block of this grid has called it or exited.
/// A hint only: the dependent still orders its accesses with [`wait_for_prior_grids`].
#[inline(always)]
pub fn allow_dependent_launch() {
    // SAFETY: a scheduling hint with no operands and no effect on memory.
    unsafe { asm!("griddepcontrol.launch_dependents;", options(nostack)) };
}

/// The start of every step kernel launched overlapped after another that reads what it
/// wrote: wait for that kernel (and so, transitively, for all earlier ones), then let the next
/// kernel be placed. After the wait, not before: placed at once, each kernel placed the next,
/// and the waiting grids slowed the working ones (measured, ARCHITECTURE.md).
///
/// # Safety
/// As for [`wait_for_prior_grids`].
#[inline(always)]
pub unsafe fn follow_previous_kernel() {
    // SAFETY: forwarded.
    unsafe { wait_for_prior_grids() };
    allow_dependent_launch();
}

/// `mov.u32 %r, SMEM`: the shared-window address of the block's dynamic shared memory.
#[inline(always)]
pub fn shared_base() -> u32 {
    let addr: u32;
    // SAFETY: taking the address of the shared symbol touches no memory.
    unsafe { asm!("mov.u32 {0}, SMEM;", out(reg32) addr, options(pure, nomem, nostack)) };
    addr
}

/// `ld.shared.u32 d, [addr]`.
///
/// # Safety
/// `addr` is 4-byte aligned and inside the dynamic shared memory given at launch; no other
/// thread writes it without a barrier in between.
#[inline(always)]
pub unsafe fn ld_shared_u32(addr: u32) -> u32 {
    let value: u32;
    // SAFETY: the caller guarantees alignment, bounds and the absence of a race.
    unsafe { asm!("ld.shared.u32 {0}, [{1}];", out(reg32) value, in(reg32) addr, options(nostack, readonly)) };
    value
}

/// `st.shared.u32 [addr], v`.
///
/// # Safety
/// As for [`ld_shared_u32`], for a write.
#[inline(always)]
pub unsafe fn st_shared_u32(addr: u32, value: u32) {
    // SAFETY: the caller guarantees alignment, bounds and the absence of a race.
    unsafe { asm!("st.shared.u32 [{0}], {1};", in(reg32) addr, in(reg32) value, options(nostack)) };
}

/// `ld.shared.u64 d, [addr]`.
///
/// # Safety
/// `addr` is 8-byte aligned; otherwise as for [`ld_shared_u32`].
#[inline(always)]
pub unsafe fn ld_shared_u64(addr: u32) -> u64 {
    let value: u64;
    // SAFETY: the caller guarantees alignment, bounds and the absence of a race.
    unsafe { asm!("ld.shared.u64 {0}, [{1}];", out(reg64) value, in(reg32) addr, options(nostack, readonly)) };
    value
}

/// `st.shared.u64 [addr], v`.
///
/// # Safety
/// `addr` is 8-byte aligned; otherwise as for [`st_shared_u32`].
#[inline(always)]
pub unsafe fn st_shared_u64(addr: u32, value: u64) {
    // SAFETY: the caller guarantees alignment, bounds and the absence of a race.
    unsafe { asm!("st.shared.u64 [{0}], {1};", in(reg32) addr, in(reg64) value, options(nostack)) };
}

/// `cvta.to.global.u64` then `ld.global.nc.v4.u32 {a, b, c, d}, [g]`: a 16-byte load through the non-coherent
/// (read-only) data path.
///
/// Not `pure`, on purpose: LLVM then keeps the load where it is written instead of sinking it
/// toward its first use, so a kernel can issue its loads before unrelated checks.
///
/// # Safety
/// `ptr` is 16-byte aligned, points to 16 readable bytes of global memory, and nothing writes
/// those bytes while the kernel runs.
#[inline(always)]
pub unsafe fn ld_global_nc_v4_u32(ptr: *const u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the caller guarantees alignment, bounds and that the data is read-only.
    unsafe {
        asm!("{{ .reg .u64 g; cvta.to.global.u64 g, {4}; ld.global.nc.v4.u32 {{{0}, {1}, {2}, {3}}}, [g]; }}",
             out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg64) ptr,
             options(nostack, readonly))
    };
    [a, b, c, d]
}

/// [`ld_global_nc_v4_u32`] twice, at `ptr` and 16 bytes on: a lane's 8 f32 logits or 8 penalty
/// counts, in order.
///
/// # Safety
/// `ptr` is 16-byte aligned, points to 32 readable bytes of global memory, and nothing writes
/// those bytes while the kernel runs.
#[inline(always)]
pub unsafe fn ld_global_nc_v8_u32(ptr: *const u32) -> [u32; 8] {
    // SAFETY: forwarded; both halves are inside the 32 bytes, each 16-byte aligned.
    let (a, b) = unsafe { (ld_global_nc_v4_u32(ptr), ld_global_nc_v4_u32(ptr.add(4))) };
    [a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]]
}

/// `cvta.to.global.u64` then `prefetch.global.L2 [g]`: asks L2 for the 128-byte line holding
/// `ptr`, without waiting and without a register. A block that streams a row at one block per
/// SM keeps one tile of loads in registers; prefetched lines let the tiles after it arrive from
/// L2 instead of DRAM.
///
/// Kept where it is written (not `pure`), so it issues before the loads it is meant to hide.
///
/// # Safety
/// `ptr` points into an allocation of global memory (a hint, but kept in bounds so that the
/// sanitizer and the address translation see only the kernel's own buffers).
#[inline(always)]
pub unsafe fn prefetch_global_l2(ptr: *const u8) {
    // SAFETY: the caller keeps the address inside global memory; nothing is read into a register.
    unsafe {
        asm!("{{ .reg .u64 g; cvta.to.global.u64 g, {0}; prefetch.global.L2 [g]; }}",
             in(reg64) ptr, options(nostack, readonly, preserves_flags))
    };
}

/// `prefetch.global.L1 [BAND_SCALES + o]` for `o` = 0, 128, 256 and 288 (its first byte, the
/// next two lines, its last element): every 128-byte line of `fixed::BAND_SCALES` (296 bytes;
/// an 8-byte element never straddles a line). The address is the symbol's, named in the
/// instruction (nvptx's inline assembly takes no `sym` operand for a static), so no register
/// holds it.
///
/// # Safety
/// None beyond a hint's: the addresses lie inside the static, in global memory.
#[inline(always)]
pub unsafe fn prefetch_band_scales_lines() {
    const { assert!(core::mem::size_of::<[u64; crate::fixed::BAND_SCALE.len()]>() == 296) };
    // SAFETY: addresses inside the static; nothing is read into a register.
    unsafe {
        asm!("prefetch.global.L1 [BAND_SCALES]; prefetch.global.L1 [BAND_SCALES+128]; prefetch.global.L1 [BAND_SCALES+256]; prefetch.global.L1 [BAND_SCALES+288];",
             options(nostack, readonly, preserves_flags))
    };
}

/// Prefetches `bytes` from byte address `start` into L2 ([`prefetch_global_l2`]), one 128-byte
/// line per participant: participant `slot` of `slots` takes lines `slot`, `slot + slots`, ...
/// Every address asked for lies in `[start, start + bytes)`.
///
/// # Safety
/// `[start, start + bytes)` lies in one allocation of global memory.
#[inline(always)]
pub unsafe fn prefetch_span_l2(start: u64, bytes: u64, slot: u32, slots: u32) {
    let mut offset = slot as u64 * 128;
    while offset < bytes {
        // SAFETY: start + offset < start + bytes (caller's span).
        unsafe { prefetch_global_l2((start + offset) as *const u8) };
        offset += slots as u64 * 128;
    }
}

/// `cvta.to.global.u64` then `ld.global.nc.u32 d, [g]`: a 4-byte read-only load, for the ragged ends of a row.
///
/// # Safety
/// `ptr` is 4-byte aligned and readable; nothing writes it while the kernel runs.
#[inline(always)]
pub unsafe fn ld_global_nc_u32(ptr: *const u32) -> u32 {
    let value: u32;
    // SAFETY: the caller guarantees alignment, bounds and that the data is read-only.
    unsafe {
        asm!("{{ .reg .u64 g; cvta.to.global.u64 g, {1}; ld.global.nc.u32 {0}, [g]; }}",
             out(reg32) value, in(reg64) ptr, options(nostack, readonly, pure))
    };
    value
}

/// `shfl.sync.up.b32 d, v, delta, 0, mask`: the value of lane `lane_id - delta`, or the lane's
/// own value for the first `delta` lanes (the building block of warp prefix scans).
///
/// # Safety
/// As for [`shfl_xor_u32`].
#[inline(always)]
pub unsafe fn shfl_up_u32(mask: u32, value: u32, delta: u32) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the lanes in `mask` reach this instruction together.
    unsafe {
        asm!("shfl.sync.up.b32 {0}, {1}, {2}, 0, {3};",
             out(reg32) out, in(reg32) value, in(reg32) delta, in(reg32) mask,
             options(nomem, nostack))
    };
    out
}

/// `atom.shared.add.u32 old, [addr], v`: adds `v` and returns the previous value.
///
/// # Safety
/// `addr` is 4-byte aligned and inside the launch's dynamic shared memory.
#[inline(always)]
pub unsafe fn atom_add_shared_u32(addr: u32, value: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees alignment and bounds; the operation itself is atomic.
    unsafe { asm!("atom.shared.add.u32 {0}, [{1}], {2};", out(reg32) old, in(reg32) addr, in(reg32) value, options(nostack)) };
    old
}

/// `atom.shared.add.u64 old, [addr], v`: adds `v` and returns the previous value.
///
/// # Safety
/// `addr` is 8-byte aligned and inside the launch's dynamic shared memory.
#[inline(always)]
pub unsafe fn atom_add_shared_u64(addr: u32, value: u64) -> u64 {
    let old: u64;
    // SAFETY: the caller guarantees alignment and bounds; the operation itself is atomic.
    unsafe { asm!("atom.shared.add.u64 {0}, [{1}], {2};", out(reg64) old, in(reg32) addr, in(reg64) value, options(nostack)) };
    old
}

/// Shuffles a `u64` as two 32-bit halves with [`shfl_xor_u32`].
///
/// # Safety
/// As for [`shfl_xor_u32`].
#[inline(always)]
pub unsafe fn shfl_xor_u64(mask: u32, value: u64, lane_xor: u32) -> u64 {
    // SAFETY: forwarded from the caller.
    let (lo, hi) = unsafe { (shfl_xor_u32(mask, value as u32, lane_xor), shfl_xor_u32(mask, (value >> 32) as u32, lane_xor)) };
    ((hi as u64) << 32) | lo as u64
}

/// Shuffles a `u64` up by `delta` lanes with [`shfl_up_u32`].
///
/// # Safety
/// As for [`shfl_xor_u32`].
#[inline(always)]
pub unsafe fn shfl_up_u64(mask: u32, value: u64, delta: u32) -> u64 {
    // SAFETY: forwarded from the caller.
    let (lo, hi) = unsafe { (shfl_up_u32(mask, value as u32, delta), shfl_up_u32(mask, (value >> 32) as u32, delta)) };
    ((hi as u64) << 32) | lo as u64
}

/// `cvta.to.global.u64` then `st.global.v4.u32 [g], {a, b, c, d}`: a 16-byte store.
///
/// # Safety
/// `ptr` is 16-byte aligned and points to 16 writable bytes of global memory that no other
/// thread accesses during the kernel.
#[inline(always)]
pub unsafe fn st_global_v4_u32(ptr: *mut u32, v: [u32; 4]) {
    // SAFETY: the caller guarantees alignment, bounds and exclusive access.
    unsafe {
        asm!("{{ .reg .u64 g; cvta.to.global.u64 g, {0}; st.global.v4.u32 [g], {{{1}, {2}, {3}, {4}}}; }}",
             in(reg64) ptr, in(reg32) v[0], in(reg32) v[1], in(reg32) v[2], in(reg32) v[3],
             options(nostack))
    };
}

/// `match.any.sync.b32 d, v, mask`: the lanes of `mask` whose `value` equals this lane's.
///
/// # Safety
/// Every lane in `mask` executes this call, converged, with the same `mask`.
#[inline(always)]
pub unsafe fn match_any_sync(mask: u32, value: u32) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the lanes in `mask` reach this instruction together.
    unsafe { asm!("match.any.sync.b32 {0}, {1}, {2};", out(reg32) out, in(reg32) value, in(reg32) mask, options(nomem, nostack)) };
    out
}

/// `redux.sync.add.u32 d, v, mask`: the sum of `value` over the lanes of `mask` (wrapping).
///
/// # Safety
/// Every lane in `mask` executes this call with the same `mask`, and this lane is in `mask`.
#[inline(always)]
pub unsafe fn redux_add_sync(mask: u32, value: u32) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the lanes in `mask` reach this instruction together.
    unsafe { asm!("redux.sync.add.u32 {0}, {1}, {2};", out(reg32) out, in(reg32) value, in(reg32) mask, options(nomem, nostack)) };
    out
}

/// `redux.sync.max.u32 d, v, mask`: the largest `value` over the lanes of `mask`.
///
/// # Safety
/// Every lane in `mask` executes this call with the same `mask`, and this lane is in `mask`.
#[inline(always)]
pub unsafe fn redux_max_sync(mask: u32, value: u32) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the lanes in `mask` reach this instruction together.
    unsafe { asm!("redux.sync.max.u32 {0}, {1}, {2};", out(reg32) out, in(reg32) value, in(reg32) mask, options(nomem, nostack)) };
    out
}

/// `atom.shared.or.b32 old, [addr], v`: sets the bits of `v` and returns the previous word.
///
/// # Safety
/// `addr` is 4-byte aligned and inside the launch's dynamic shared memory.
#[inline(always)]
pub unsafe fn atom_or_shared_u32(addr: u32, value: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees alignment and bounds; the operation itself is atomic.
    unsafe { asm!("atom.shared.or.b32 {0}, [{1}], {2};", out(reg32) old, in(reg32) addr, in(reg32) value, options(nostack)) };
    old
}

/// Reads a `u64` from lane `src_lane` with [`shfl_idx_u32`] on both halves.
///
/// # Safety
/// As for [`shfl_xor_u32`].
#[inline(always)]
pub unsafe fn shfl_idx_u64(mask: u32, value: u64, src_lane: u32) -> u64 {
    // SAFETY: forwarded from the caller.
    let (lo, hi) = unsafe { (shfl_idx_u32(mask, value as u32, src_lane), shfl_idx_u32(mask, (value >> 32) as u32, src_lane)) };
    ((hi as u64) << 32) | lo as u64
}

/// `red.global.add.u32 [ptr], v`: adds `v` without returning the old value.
///
/// # Safety
/// `ptr` is a 4-byte aligned global address the kernel may write.
#[inline(always)]
pub unsafe fn red_add_global_u32(ptr: *mut u32, value: u32) {
    // SAFETY: the caller guarantees the address; the operation itself is atomic.
    unsafe { asm!("red.global.add.u32 [{0}], {1};", in(reg64) ptr, in(reg32) value, options(nostack)) };
}

/// `red.global.add.u64 [ptr], v`: adds `v` without returning the old value.
///
/// # Safety
/// `ptr` is an 8-byte aligned global address the kernel may write.
#[inline(always)]
pub unsafe fn red_add_global_u64(ptr: *mut u64, value: u64) {
    // SAFETY: the caller guarantees the address; the operation itself is atomic.
    unsafe { asm!("red.global.add.u64 [{0}], {1};", in(reg64) ptr, in(reg64) value, options(nostack)) };
}

/// `atom.global.add.u32 old, [ptr], v`: adds `v` and returns the previous value.
///
/// # Safety
/// `ptr` is a 4-byte aligned global address the kernel may write.
#[inline(always)]
pub unsafe fn atom_add_global_u32(ptr: *mut u32, value: u32) -> u32 {
    let old: u32;
    // SAFETY: the caller guarantees the address; the operation itself is atomic.
    unsafe { asm!("atom.global.add.u32 {0}, [{1}], {2};", out(reg32) old, in(reg64) ptr, in(reg32) value, options(nostack)) };
    old
}

/// `mov.b32 d, v`: `v`, hidden from LLVM. A loop bounded by `opaque_u32(8)` is not unrolled by
/// LLVM (it cannot see the trip count), which keeps a heavy per-token body in the code once.
#[inline(always)]
pub fn opaque_u32(value: u32) -> u32 {
    let out: u32;
    // SAFETY: a register move; no memory, no side effect.
    unsafe { asm!("mov.b32 {0}, {1};", out(reg32) out, in(reg32) value, options(pure, nomem, nostack)) };
    out
}

/// `.pragma "nounroll";`: asks ptxas not to unroll the loop whose header holds it (PTX ISA,
/// "Pragma strings"). Place it first in a loop body.
#[inline(always)]
pub fn pragma_nounroll() {
    // SAFETY: a directive; it emits no instruction.
    unsafe { asm!(".pragma \"nounroll\";", options(nomem, nostack, preserves_flags)) };
}

/// `redux.sync.min.u32 d, v, mask`: the least `value` over the lanes of `mask`.
///
/// # Safety
/// Every lane in `mask` executes this call, converged, with the same `mask`.
#[inline(always)]
pub unsafe fn redux_min_sync(mask: u32, value: u32) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the lanes' participation.
    unsafe { asm!("redux.sync.min.u32 {0}, {1}, {2};", out(reg32) out, in(reg32) value, in(reg32) mask, options(nomem, nostack)) };
    out
}

/// `redux.sync.or.b32 d, v, mask`: the bitwise or of `value` over the lanes of `mask`.
///
/// # Safety
/// Every lane in `mask` executes this call with the same `mask`, and this lane is in `mask`.
#[inline(always)]
pub unsafe fn redux_or_sync(mask: u32, value: u32) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the lanes in `mask` reach this instruction together.
    unsafe { asm!("redux.sync.or.b32 {0}, {1}, {2};", out(reg32) out, in(reg32) value, in(reg32) mask, options(nomem, nostack)) };
    out
}

/// `fence.acq_rel.gpu`: orders this thread's memory operations before and after it for every
/// thread of the GPU (with a barrier, the release and acquire halves of a grid-level barrier).
///
/// # Safety
/// None beyond being inside a kernel; it only orders memory operations.
#[inline(always)]
pub unsafe fn fence_acq_rel_gpu() {
    // SAFETY: a fence has no operands.
    unsafe { asm!("fence.acq_rel.gpu;", options(nostack)) };
}

/// `selp.u32 d, a, b, p` with `p = when`: `a` when `when` holds, else `b`. Opaque to LLVM, so
/// both operands are computed first: a plain `if` let it sink `a`'s arithmetic under a branch
/// per token, which ptxas wraps in a divergence region (`BSSY`/`BSYNC`).
#[inline(always)]
pub fn select_u32(when: bool, a: u32, b: u32) -> u32 {
    let d: u32;
    // SAFETY: arithmetic on registers only.
    unsafe {
        asm!(
            "{{ .reg .pred %when; setp.ne.u32 %when, {w}, 0; selp.u32 {d}, {a}, {b}, %when; }}",
            d = out(reg32) d, w = in(reg32) when as u32, a = in(reg32) a, b = in(reg32) b,
            options(pure, nomem, nostack)
        )
    };
    d
}

/// `fma.rn.f32 d, a, b, c`: `a · b + c` rounded once, to nearest even. Inline assembly, so
/// that the PTX check can tell it from a contraction (`fixed::fused_mul_add` is its one user).
#[inline(always)]
pub fn fma_rn_f32(a: f32, b: f32, c: f32) -> f32 {
    let d: f32;
    // SAFETY: arithmetic on registers only.
    unsafe { asm!("fma.rn.f32 {0}, {1}, {2}, {3};", out(reg32) d, in(reg32) a, in(reg32) b, in(reg32) c, options(pure, nomem, nostack)) };
    d
}

/// `add.rm.f32 d, a, b`: `a + b` rounded once, toward −∞ (IEEE 754 `roundTowardNegative`).
/// Correctly rounded like `fma.rn`: `fixed::small_floor` adds a power-of-two magic to a
/// small non-negative value and reads `floor` off the sum's bits (this add and a subtraction),
/// where the round-to-nearest form took four instructions more.
#[inline(always)]
pub fn add_rm_f32(a: f32, b: f32) -> f32 {
    let d: f32;
    // SAFETY: arithmetic on registers only.
    unsafe { asm!("add.rm.f32 {0}, {1}, {2};", out(reg32) d, in(reg32) a, in(reg32) b, options(pure, nomem, nostack)) };
    d
}

/// `min.NaN.f32 d, a, b`: the smaller of `a` and `b`, or NaN when either is NaN (sm_80 and
/// later; one instruction). Stage 1 takes a plain row's least raw logit with it, so that a NaN
/// token, which the prologue would make `-inf`, also marks its lane as holding an invalid one.
#[inline(always)]
pub fn min_nan_f32(a: f32, b: f32) -> f32 {
    let d: f32;
    // SAFETY: arithmetic on registers only.
    unsafe { asm!("min.NaN.f32 {0}, {1}, {2};", out(reg32) d, in(reg32) a, in(reg32) b, options(pure, nomem, nostack)) };
    d
}

/// `red.shared.add.u32 [addr], v`: adds `v` with no returned value, so the warp does not wait
/// for the shared-memory round trip (a load, add and store would: the next update of a slot
/// that may alias it has to follow the store).
///
/// # Safety
/// `addr` is 4-byte aligned and inside the dynamic shared memory given at launch.
#[inline(always)]
pub unsafe fn red_add_shared_u32(addr: u32, value: u32) {
    // SAFETY: the caller guarantees alignment and bounds; the operation itself is atomic.
    unsafe { asm!("red.shared.add.u32 [{0}], {1};", in(reg32) addr, in(reg32) value, options(nostack)) };
}

/// `red.relaxed.gpu.global.add.u32 [ptr], v`: a device-scope atomic add with no returned value.
///
/// # Safety
/// `ptr` is a 4-byte aligned global address the kernel may write.
#[inline(always)]
pub unsafe fn red_add_relaxed_gpu_u32(ptr: *mut u32, value: u32) {
    // SAFETY: the caller guarantees the address; the operation itself is atomic.
    unsafe { asm!("red.relaxed.gpu.global.add.u32 [{0}], {1};", in(reg64) ptr, in(reg32) value, options(nostack)) };
}

/// `red.release.gpu.global.add.u32 [ptr], v`: a device-scope atomic add with no returned value,
/// after every earlier memory operation of this thread (and those it has observed) for a reader
/// that acquires the word.
///
/// # Safety
/// `ptr` is a 4-byte aligned global address the kernel may write.
#[inline(always)]
pub unsafe fn red_add_release_gpu_u32(ptr: *mut u32, value: u32) {
    // SAFETY: the caller guarantees the address; the operation itself is atomic.
    unsafe { asm!("red.release.gpu.global.add.u32 [{0}], {1};", in(reg64) ptr, in(reg32) value, options(nostack)) };
}

/// `red.relaxed.gpu.global.max.u32 [ptr], v`: a device-scope atomic maximum with no returned
/// value.
///
/// # Safety
/// `ptr` is a 4-byte aligned global address the kernel may write.
#[inline(always)]
pub unsafe fn red_max_relaxed_gpu_u32(ptr: *mut u32, value: u32) {
    // SAFETY: the caller guarantees the address; the operation itself is atomic.
    unsafe { asm!("red.relaxed.gpu.global.max.u32 [{0}], {1};", in(reg64) ptr, in(reg32) value, options(nostack)) };
}

/// `ld.relaxed.gpu.global.u32`: a load that sees other blocks' writes at device scope (never a
/// stale L1 line).
///
/// # Safety
/// `ptr` is a 4-byte aligned global address the kernel may read.
#[inline(always)]
pub unsafe fn ld_relaxed_gpu_u32(ptr: *const u32) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the address.
    unsafe { asm!("ld.relaxed.gpu.global.u32 {0}, [{1}];", out(reg32) out, in(reg64) ptr, options(nostack, readonly)) };
    out
}

/// `ld.acquire.gpu.global.u32`: [`ld_relaxed_gpu_u32`] that also orders this thread's later
/// memory operations after it, so they see what the word's releasing writer wrote before it.
///
/// # Safety
/// `ptr` is a 4-byte aligned global address the kernel may read.
#[inline(always)]
pub unsafe fn ld_acquire_gpu_u32(ptr: *const u32) -> u32 {
    let out: u32;
    // SAFETY: the caller guarantees the address.
    unsafe { asm!("ld.acquire.gpu.global.u32 {0}, [{1}];", out(reg32) out, in(reg64) ptr, options(nostack)) };
    out
}

/// `ld.relaxed.gpu.global.u64`: as [`ld_relaxed_gpu_u32`], eight bytes.
///
/// # Safety
/// `ptr` is an 8-byte aligned global address the kernel may read.
#[inline(always)]
pub unsafe fn ld_relaxed_gpu_u64(ptr: *const u64) -> u64 {
    let out: u64;
    // SAFETY: the caller guarantees the address.
    unsafe { asm!("ld.relaxed.gpu.global.u64 {0}, [{1}];", out(reg64) out, in(reg64) ptr, options(nostack, readonly)) };
    out
}

/// `nanosleep.u32 t`: suspends the thread for about `t` nanoseconds (a polite spin).
///
/// # Safety
/// None beyond being inside a kernel.
#[inline(always)]
pub unsafe fn nanosleep(ns: u32) {
    // SAFETY: no memory effect.
    unsafe { asm!("nanosleep.u32 {0};", in(reg32) ns, options(nostack, nomem)) };
}

/// `cvta.to.global.u64` then `ld.global.v4.u32`: a 16-byte coherent load, for data that other
/// blocks of the same launch wrote before a grid-level barrier (the `.nc` path may not see it).
///
/// # Safety
/// `ptr` is 16-byte aligned and points to 16 readable bytes of global memory; writers of those
/// bytes are ordered before this load by a barrier with device-scope fences.
#[inline(always)]
pub unsafe fn ld_global_v4_u32(ptr: *const u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the caller guarantees alignment, bounds and ordering.
    unsafe {
        asm!("{{ .reg .u64 g; cvta.to.global.u64 g, {4}; ld.global.v4.u32 {{{0}, {1}, {2}, {3}}}, [g]; }}",
             out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg64) ptr,
             options(nostack, readonly))
    };
    [a, b, c, d]
}

/// `ld.shared.v4.u32 {a, b, c, d}, [addr]`.
///
/// # Safety
/// `addr` is 16-byte aligned; otherwise as for [`ld_shared_u32`].
#[inline(always)]
pub unsafe fn ld_shared_v4_u32(addr: u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: the caller guarantees alignment, bounds and the absence of a race.
    unsafe {
        asm!("ld.shared.v4.u32 {{{0}, {1}, {2}, {3}}}, [{4}];",
             out(reg32) a, out(reg32) b, out(reg32) c, out(reg32) d, in(reg32) addr,
             options(nostack, readonly))
    };
    [a, b, c, d]
}

/// `cvta.to.global.u64` then `cp.async.cg.shared.global [dst], [g], 16`: copies 16 bytes from
/// global to shared memory without passing through registers (through L2, not L1). The copy
/// is only requested: it belongs to this thread's next [`cp_async_commit`] group and is done
/// (and its bytes visible to this thread) after a [`cp_async_wait_group`] that covers that
/// group. Holding loads in flight this way ties up no register, so no later instruction that
/// reuses one waits on the load by mistake (see `tiles::ring_fetch`).
///
/// # Safety
/// `dst` is 16-byte aligned and inside the dynamic shared memory given at launch; `src` is
/// 16-byte aligned and points to 16 readable bytes of global memory that nothing writes while
/// the kernel runs. Until the copy is waited for, nothing reads or writes `dst`'s 16 bytes
/// (and no other copy targets them).
#[inline(always)]
pub unsafe fn cp_async_16(dst: u32, src: *const u32) {
    // SAFETY: the caller guarantees alignment, bounds and that nothing touches dst meanwhile.
    unsafe {
        asm!("{{ .reg .u64 g; cvta.to.global.u64 g, {1}; cp.async.cg.shared.global [{0}], [g], 16; }}",
             in(reg32) dst, in(reg64) src, options(nostack))
    };
}

/// `cp.async.commit_group`: closes this thread's pending [`cp_async_16`] copies into one group
/// (an empty group if there are none, which keeps a caller's count of groups uniform).
#[inline(always)]
pub fn cp_async_commit() {
    // SAFETY: only groups this thread's own copies; no memory is touched.
    unsafe { asm!("cp.async.commit_group;", options(nostack)) };
}

/// `cp.async.wait_group N`: waits until at most the `N` most recently committed groups of this
/// thread are still in flight, so every older copy is done and visible to this thread.
#[inline(always)]
pub fn cp_async_wait_group<const N: u32>() {
    // SAFETY: waits on this thread's own copies only. Not `nomem`: shared loads must not move
    // above it.
    unsafe { asm!("cp.async.wait_group {0};", const N, options(nostack)) };
}

/// `cp.async.wait_all`: commits any pending copies and waits for every group of this thread.
#[inline(always)]
pub fn cp_async_wait_all() {
    // SAFETY: as for cp_async_wait_group.
    unsafe { asm!("cp.async.wait_all;", options(nostack)) };
}
