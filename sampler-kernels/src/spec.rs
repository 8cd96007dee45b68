//! Speculative verification on the GPU (device only): docs/SEMANTICS.md §10, the same decisions
//! as `sampler-host/src/verify.rs` (the CPU reference), bit for bit.
//!
//! Three kernels, one launch each, for a whole heterogeneous batch:
//! 1. `verify_rows`, a group of blocks per target row `j` of a request: the processed row
//!    exactly (the penalty state sees the request's drafts `d_0..d_{j-1}` as emitted output),
//!    then the row's decisions: greedy argmax, or min-p / top-k / top-p (kept set `K_j`, mass
//!    `Z`) by whole-row exact selection, and the accept test of `d_j`. A row that would need a
//!    draw (rejected, or the bonus row `j = n`) leaves its plan and is marked pending.
//! 2. `verify_draws`: the draw of the one row where each chain stops (residual draw over
//!    `R_i = max(0, A_i - B_i)`, or the bonus draw), from the cache. The drawing rows' tiles are
//!    the work items, handed out over the whole grid; chunks under a row's kept floor are
//!    skipped (`VerifyParams::chunk_max`); the block that sums a row's last tile draws it.
//!    Rows past the first rejection are never drawn.
//! 3. `verify_chains`, one thread per request: the first rejection, the outputs, and the state
//!    update (emitted tokens counted, `step += 1` once); and the call's chains counted for the
//!    next call's layout.
//!
//! Rows are independent, so every row of every request is decided in parallel, and no row waits
//! on another. `verify_rows` runs a co-resident (cooperative) grid: with few rows, each row
//! gets `grid / rows` blocks (its group), which split every tile pass (summary, masses, radix
//! histograms, the bucket gather, the draw's tile sums) and meet at a device-scope barrier to
//! combine exact integer partials, so every block of a group makes the same decisions; with
//! many rows, each block takes whole rows as it becomes free, position-major
//! (`VerifyParams::row_order`, handed out by a counter); with many rows from few requests,
//! mostly random, groups take rows the same way, a group's leader taking from the counter, as
//! they do with few rows when the last call's chains mostly stopped at their first draft
//! (`VerifyParams::chain_stats`, counted by `verify_chains`).
//! A row that does not accept its draft marks its request's rejection word, and a row is
//! dropped once an earlier row of its request is marked (a block alone checks before the
//! row's first pass and after it; a group's leader passes over such rows as it takes its next
//! item, and the group checks again after the first pass; both check a row that selects by
//! value bins after its bin histogram): nothing reads a chain past its first rejection. The
//! word is a hint; no decision depends on it. Where the last call's chains mostly stopped at
//! their first draft, a row handed out on its own (blocks alone, groups in turn) waits, as it
//! is taken, for its request's first row to be decided, and is dropped if that row stopped the
//! chain. A row that needs only its mass (no selection,
//! no min-p floor) adds it up in the first pass, by band sums under each warp's running
//! ceiling. The first pass stores each processed value in
//! `VerifyParams::cache`; later passes read it back, so the prologue (penalties with the
//! earlier drafts, bias, bitmask, temperature) runs once per token.
//! Everything goes through the shared pure functions (`logit`, `keys`, `fixed`, `decide`,
//! `philox`, `verify`) that the CPU reference calls. A block holds one row at a time, one block
//! per SM, so every pass over a row keeps the next tile in registers and asks L2 for the one
//! after it (`PREFETCH_AHEAD`).
//!
//! Selections (top-k, top-p) of finite rows use the split exact pass's value bins
//! (`fixed::exact_bin`): a histogram built in the mass pass places both boundaries, and one
//! gather of the boundary bins decides them; other rows use a radix selection adapted from
//! `sampler.rs`'s single-block pass (a pass per digit level), kept here so the two files can
//! change independently. Rows with neither a selection nor a min-p floor add up their mass
//! by band sums (`band_mass`), as stage 1's mass scan does. Each pass over the cache loads one
//! tile ahead.

use crate::abi::*;
use crate::block::*;
use crate::decide::{min_p_floor, settings_valid, top_p_disabled, top_p_reached, top_p_units};
use crate::exact::{
    add_to_tile_bins, bin_boundaries, bin_mass, decide_gathered, each_own_bin, tile_bin, Boundaries, Cut, BINS, BINS_PER_THREAD, NONE,
    X_COUNT_K, X_MASS_K, X_MASS_P,
};
use crate::fixed::{band_and_fraction, band_shift, bands_usable, ceiling_index, exact_bin, small_ceil, soft_ceil, weight_parts, BAND_SCALE, BAND_SCALES, NO_BAND};
use crate::intrinsics::*;
use crate::keys::{floor_value, from_ordered_bits, key_index, key_value, reaches_floor, reaches_floor_flat, sort_key};
use crate::logit::{process_untempered_selects, saturating_count_add, temper_by, temper_scale, widen_bf16, widen_f16, LogitParams};
use crate::sampler::{key_weight, key_weight_inline, keys8, load_raw1, plain8};
use crate::logprob::{infinite_row_logprob, ln_mass, token_logprob};
use crate::philox::{random_u64_at, STREAM_SPEC_ACCEPT, STREAM_SPEC_RESIDUAL, STREAM_TOKEN};
use crate::status::{NO_TOKEN, STATUS_INVALID_SETTINGS, STATUS_NO_VALID_TOKEN, STATUS_OK};
use crate::verify::{
    chains_stop_early, draft_units, draw_span, group_shape, ratio_f32, residual_positive, residual_screen, residual_screen_code, residual_weight, spec_accept, u128_to_f64, SCREEN_POSITIVE,
    SCREEN_UNSURE, U256,
};

/// Digit of keys that take no part in a histogram level (warp aggregation needs every lane).
const NO_DIGIT: u32 = u32::MAX;
/// `VRow::draft` at `j = n`.
const NO_DRAFT: u32 = u32::MAX;
const LO64: u128 = u64::MAX as u128;

// Shared memory: the block.rs map, plus the request's drafts where stage 1 keeps its bands
// (verification never uses those).
/// The request's draft tokens, `u32[VERIFY_MAX_DRAFTS]`.
const SM_DRAFTS: u32 = SM_BAND;
/// `verify_rows`' current item while a whole-row block runs it (a `u32`).
const SM_ITEM: u32 = SM_DRAFTS + VERIFY_MAX_DRAFTS * 4;
/// `past_rejection`'s answer, broadcast from thread 0 (a `u32`).
const SM_SKIP: u32 = SM_ITEM + 4;
const _: () = assert!(SM_SKIP + 4 <= SM_BIAS);

// Broadcast slots inside SM_RESULT (256 bytes).
const RES_SELECT: u32 = SM_RESULT;
const RES_LOWER: u32 = SM_RESULT + 16;
const RES_TILE: u32 = SM_RESULT + 24;
const RES_PICK: u32 = SM_RESULT + 32;
const RES_U128: u32 = SM_RESULT + 48;
const RES_REST: u32 = SM_RESULT + 64;
const _: () = assert!(RES_REST + 32 <= SM_RESULT + 256);

// ---------------------------------------------------------------------------------------------
// Unrolled loops: per-thread arrays are indexed by constants only (or they go to local memory).

/// `each8` for bodies too large for LLVM to inline a closure (the 256-bit residual weights): the
/// body is pasted eight times with `$j` a constant.
macro_rules! unroll8 {
    ($j:ident => $body:block) => {{
        {
            const $j: usize = 0;
            $body
        }
        {
            const $j: usize = 1;
            $body
        }
        {
            const $j: usize = 2;
            $body
        }
        {
            const $j: usize = 3;
            $body
        }
        {
            const $j: usize = 4;
            $body
        }
        {
            const $j: usize = 5;
            $body
        }
        {
            const $j: usize = 6;
            $body
        }
        {
            const $j: usize = 7;
            $body
        }
    }};
}

// ---------------------------------------------------------------------------------------------
// 256-bit block sums and scans, as three exact u128 reductions of 64/64/128-bit parts.

#[inline(always)]
fn u256_join(a: u128, b: u128, c: u128) -> U256 {
    U256::from_u128(a).wrapping_add(U256 { hi: b >> 64, lo: b << 64 }).wrapping_add(U256 { hi: c, lo: 0 })
}

/// Sum of `v` over the lanes of a warp, in every lane (exact: every part sum stays below 2^128).
///
/// # Safety
/// The whole warp calls it together.
#[inline(always)]
unsafe fn warp_sum_u256(v: U256) -> U256 {
    // SAFETY: forwarded (whole warp).
    unsafe { u256_join(warp_sum_u128(v.lo & LO64), warp_sum_u128(v.lo >> 64), warp_sum_u128(v.hi)) }
}

/// Exclusive prefix sum of `v` in thread order, and the block total (exact; the total equals
/// [`block_sum_u256`]'s, so a caller that needs both runs only the scan).
///
/// # Safety
/// The whole block calls it together.
#[inline(always)]
unsafe fn block_exclusive_scan_u256(v: U256) -> (U256, U256) {
    // SAFETY: forwarded (whole block).
    unsafe {
        let (a, ta) = block_exclusive_scan_u128(v.lo & LO64);
        let (b, tb) = block_exclusive_scan_u128(v.lo >> 64);
        let (c, tc) = block_exclusive_scan_u128(v.hi);
        (u256_join(a, b, c), u256_join(ta, tb, tc))
    }
}

#[inline(always)]
unsafe fn st_shared_u256(addr: u32, v: U256) {
    // SAFETY: the caller passes a 32-byte slot of the map.
    unsafe {
        st_shared_u64(addr, v.lo as u64);
        st_shared_u64(addr + 8, (v.lo >> 64) as u64);
        st_shared_u64(addr + 16, v.hi as u64);
        st_shared_u64(addr + 24, (v.hi >> 64) as u64);
    }
}

#[inline(always)]
unsafe fn ld_shared_u256(addr: u32) -> U256 {
    // SAFETY: the caller passes a 32-byte slot of the map.
    unsafe {
        let lo = ((ld_shared_u64(addr + 8) as u128) << 64) | ld_shared_u64(addr) as u128;
        let hi = ((ld_shared_u64(addr + 24) as u128) << 64) | ld_shared_u64(addr + 16) as u128;
        U256 { hi, lo }
    }
}

// ---------------------------------------------------------------------------------------------
// The first pass's partials, folded in one block reduction.

/// What a row's first pass finds, per thread, per block, then per group: the largest key,
/// the valid and `+inf` counts (packed: each is at most the vocabulary, so the low half never
/// carries), the draft's key, `Q = Σ q`, and (group only) the largest read of the request's
/// rejection word.
#[derive(Clone, Copy)]
struct Pass1 {
    max_key: u64,
    counts: u64,
    draft_key: u64,
    q_sum: u128,
    seen: u64,
}

impl Pass1 {
    #[inline(always)]
    fn fold(self, o: Pass1) -> Pass1 {
        Pass1 {
            max_key: max_u64(self.max_key, o.max_key),
            counts: self.counts.wrapping_add(o.counts),
            draft_key: max_u64(self.draft_key, o.draft_key),
            q_sum: self.q_sum.wrapping_add(o.q_sum),
            seen: max_u64(self.seen, o.seen),
        }
    }
}

/// Per-warp slots of [`block_fold_pass1`] (48 bytes a warp): the radix histogram's mass
/// halves, which nothing uses between a row's first pass and its selections.
const SM_FOLD: u32 = SM_HIST_LO;
const _: () = assert!(SM_FOLD + WARPS * 48 <= SM_HIST_HI + 256 * 8);

/// [`Pass1`] over the block, in every thread: one warp butterfly of all five parts together
/// and one exchange through shared memory. Five block reductions in turn cost ten barriers and
/// five butterflies one after another (a row's first pass took 7.5-9 µs to combine in
/// session 57's timestamps).
///
/// # Safety
/// The whole block calls it together.
#[inline(always)]
unsafe fn block_fold_pass1(v: Pass1) -> Pass1 {
    // SAFETY (whole block, converged): SM_FOLD slots of the map; the barriers order the stores
    // before the loads and the loads before the next call's stores.
    unsafe {
        let mut acc = v;
        let mut x = 16;
        while x > 0 {
            let lo = acc.q_sum as u64;
            let hi = (acc.q_sum >> 64) as u64;
            let other = Pass1 {
                max_key: shfl_xor_u64(FULL_MASK, acc.max_key, x),
                counts: shfl_xor_u64(FULL_MASK, acc.counts, x),
                draft_key: shfl_xor_u64(FULL_MASK, acc.draft_key, x),
                q_sum: (shfl_xor_u64(FULL_MASK, hi, x) as u128) << 64 | shfl_xor_u64(FULL_MASK, lo, x) as u128,
                seen: shfl_xor_u64(FULL_MASK, acc.seen, x),
            };
            acc = acc.fold(other);
            x >>= 1;
        }
        let slot = SM_FOLD + warp_id() * 48;
        if lane_id() == 0 {
            st_shared_u64(smem(slot), acc.max_key);
            st_shared_u64(smem(slot + 8), acc.counts);
            st_shared_u64(smem(slot + 16), acc.draft_key);
            st_shared_u64(smem(slot + 24), acc.q_sum as u64);
            st_shared_u64(smem(slot + 32), (acc.q_sum >> 64) as u64);
            st_shared_u64(smem(slot + 40), acc.seen);
        }
        sync_threads();
        let mut out = Pass1 { max_key: 0, counts: 0, draft_key: 0, q_sum: 0, seen: 0 };
        let mut w = 0;
        while w < WARPS {
            let at = SM_FOLD + w * 48;
            out = out.fold(Pass1 {
                max_key: ld_shared_u64(smem(at)),
                counts: ld_shared_u64(smem(at + 8)),
                draft_key: ld_shared_u64(smem(at + 16)),
                q_sum: (ld_shared_u64(smem(at + 32)) as u128) << 64 | ld_shared_u64(smem(at + 24)) as u128,
                seen: ld_shared_u64(smem(at + 40)),
            });
            w += 1;
        }
        sync_threads();
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Row groups: the blocks that share one target row.

/// Block `g` of a row's `size` blocks takes tiles `g, g + size, ...`; the group's blocks are
/// consecutive from `first_block` (`verify::group_shape`). `size == 1` is a block alone, with
/// no device-scope barrier.
#[derive(Clone, Copy)]
struct Group {
    row: u32,
    g: u32,
    size: u32,
    first_block: u32,
    /// The group takes rows in turn (`GroupShape::stride > 0`): only then can an earlier row of
    /// the request have stopped the chain before this one starts.
    in_turn: bool,
    /// Group barriers passed on this row so far (every block of a group passes the same ones);
    /// the row's barrier counter counts them from zero.
    barriers: u32,
    /// Group barriers the group passed on its earlier rows: the parity of `epoch + barriers`
    /// picks the half of a block's slot that [`Group::share`] writes, so a group that moves
    /// to its next row still alternates halves.
    epoch: u32,
}

/// Words of a row's scratch head: `verify_rows`' barrier counter, its two selections' gather
/// counters, `verify_draws`' count of the row's summed tiles (each kernel counts from zero),
/// the request's rejection word (in its first row's head only; see [`mark_rejected`]), the
/// call's hand-out counters of whole rows and of draw tiles (in row 0's head only; see
/// [`verify_rows`] and [`verify_draws`]), and the group's count of blocks that saw the row's
/// chain stopped after its bin histogram; whether the request's first row is decided (in
/// that row's head only; see [`mark_first_row_decided`]); and the group's count of blocks that
/// have read the row's bin histogram back.
const HEAD_ROWS_BARRIER: u32 = 0;
const HEAD_GATHER: u32 = 1;
const HEAD_DRAW_TILES_DONE: u32 = 3;
const HEAD_REJECTED: u32 = 4;
const HEAD_NEXT_ROW: u32 = 5;
const HEAD_NEXT_DRAW_TILE: u32 = 6;
/// Blocks of a group taking rows in turn that saw the row's chain stopped as they finished its
/// bin histogram (`bin_histogram`): nonzero drops the row in every block of the group alike.
const HEAD_STOP_SEEN: u32 = 7;
/// Nonzero once the request's first row is decided, in that row's head (see
/// [`mark_first_row_decided`]).
const HEAD_FIRST_DECIDED: u32 = 8;
/// Blocks of the row's group that have read its bin histogram back (see [`bin_histogram`]).
const HEAD_BINS_READ: u32 = 9;
const _: () = assert!((HEAD_BINS_READ + 1) * 4 <= VERIFY_ROW_HEAD_BYTES);

impl Group {
    /// Whether this block writes the row's result when every block of the group knows it.
    #[inline(always)]
    fn leader(&self) -> bool {
        self.g == 0
    }

    /// Every block of the group arrives before any leaves; global writes before it are visible
    /// to global reads after it, in every block of the group.
    ///
    /// # Safety
    /// The whole block calls it; every block of the group calls it the same number of times
    /// (they take the same branches); the grid is co-resident (cooperative launch), so the
    /// group's blocks all run; the row's counter was zero at launch.
    #[inline(always)]
    unsafe fn sync(&mut self, p: &VerifyParams) {
        // SAFETY (whole block): the counter is this row's, in row_scratch; thread 0 spins alone
        // while the others wait at the second barrier.
        unsafe {
            sync_threads();
            if self.size > 1 {
                self.barriers += 1;
                let target = self.barriers * self.size;
                if thread_idx_x() == 0 {
                    let counter = (p.row_scratch + self.row as u64 * VERIFY_ROW_SCRATCH_BYTES as u64) as *mut u32;
                    let counter = counter.add(HEAD_ROWS_BARRIER as usize);
                    fence_acq_rel_gpu();
                    red_add_relaxed_gpu_u32(counter, 1);
                    while ld_relaxed_gpu_u32(counter) < target {
                        nanosleep(32);
                    }
                    fence_acq_rel_gpu();
                }
                sync_threads();
            }
        }
    }

    /// Publishes this block's six `words` (thread 0's) and returns, on thread `t < size`,
    /// block `t`'s words (zeros on the other threads): a block reduction of the result is the
    /// group's. The two halves of a block's slot alternate with the barrier count, so a block
    /// one barrier ahead never overwrites words another block still reads. (Six words,
    /// unrolled: an indexed array would live in local memory.)
    ///
    /// # Safety
    /// As for [`Group::sync`]; `size > 1`.
    #[inline(always)]
    unsafe fn share(&mut self, p: &VerifyParams, words: [u64; SHARED_WORDS]) -> [u64; SHARED_WORDS] {
        let half = ((self.epoch + self.barriers) & 1) as u64 * (BLOCK_HIST / 2);
        let tid = thread_idx_x();
        let mut out = [0u64; SHARED_WORDS];
        // SAFETY: block indices < grid; six words fit a half (asserted below); the barrier
        // orders thread 0's stores before the other blocks' loads.
        unsafe {
            if tid == 0 {
                let mine = (p.group_scratch + block_idx_x() as u64 * VERIFY_BLOCK_SCRATCH_BYTES as u64 + half) as *mut u64;
                mine.write(words[0]);
                mine.add(1).write(words[1]);
                mine.add(2).write(words[2]);
                mine.add(3).write(words[3]);
                mine.add(4).write(words[4]);
                mine.add(5).write(words[5]);
            }
            self.sync(p);
            if tid < self.size {
                let theirs =
                    (p.group_scratch + (self.first_block + tid) as u64 * VERIFY_BLOCK_SCRATCH_BYTES as u64 + half) as *const u64;
                out = [
                    ld_relaxed_gpu_u64(theirs),
                    ld_relaxed_gpu_u64(theirs.add(1)),
                    ld_relaxed_gpu_u64(theirs.add(2)),
                    ld_relaxed_gpu_u64(theirs.add(3)),
                    ld_relaxed_gpu_u64(theirs.add(4)),
                    ld_relaxed_gpu_u64(theirs.add(5)),
                ];
            }
        }
        out
    }
}

impl Group {
    /// The group's sum of one histogram bin: thread `t < 256` passes its block's count and
    /// mass of digit `255 - t` and gets the group's (other threads pass and get zeros). Same
    /// alternating halves as [`Group::share`].
    ///
    /// # Safety
    /// As for [`Group::sync`]; `size > 1`.
    #[inline(always)]
    unsafe fn share_bin(&mut self, p: &VerifyParams, h: u32, m: u128) -> (u32, u128) {
        let half = ((self.epoch + self.barriers) & 1) as u64 * (BLOCK_HIST_BYTES / 2) as u64;
        let bins = |block: u32| (p.group_scratch + block as u64 * VERIFY_BLOCK_SCRATCH_BYTES as u64 + BLOCK_HIST + half) as *mut u64;
        let tid = thread_idx_x();
        // SAFETY: block indices < grid, bin tid < 256 of a half; the barrier orders the stores
        // before the other blocks' loads.
        unsafe {
            if tid < 256 {
                let mine = bins(block_idx_x()).add(tid as usize * 3);
                mine.write(h as u64);
                mine.add(1).write(m as u64);
                mine.add(2).write((m >> 64) as u64);
            }
            self.sync(p);
            let (mut count, mut mass) = (0u32, 0u128);
            if tid < 256 {
                let mut b = 0;
                while b < self.size {
                    let theirs = bins(self.first_block + b).add(tid as usize * 3) as *const u64;
                    count += ld_relaxed_gpu_u64(theirs) as u32;
                    mass += ((ld_relaxed_gpu_u64(theirs.add(2)) as u128) << 64) | ld_relaxed_gpu_u64(theirs.add(1)) as u128;
                    b += 1;
                }
            }
            (count, mass)
        }
    }
}

/// Byte offset of a block's histogram halves in its group scratch (after the words).
const BLOCK_HIST: u64 = 128;
const BLOCK_HIST_BYTES: u32 = 2 * 256 * 24;
/// Byte offsets in a block's group scratch of a bin histogram's counts (`u32[BINS]`) and
/// fraction sums (`u64[BINS]`): a group's first block's holds the group's.
const G_COUNT: u64 = BLOCK_HIST + BLOCK_HIST_BYTES as u64;
const G_SUM: u64 = (G_COUNT + BINS as u64 * 4).next_multiple_of(8);
const _: () = assert!(G_SUM + BINS as u64 * 8 <= VERIFY_BLOCK_SCRATCH_BYTES as u64);
/// Byte offset of a row's gather list in its row scratch (after the head and the tile sums).
const ROW_LIST: u64 = VERIFY_ROW_HEAD_BYTES as u64 + 2 * MAX_TILES as u64 * 32;
const _: () = assert!(ROW_LIST + MERGE_CAPACITY as u64 * 8 <= ROW_PLAN);
/// Byte offset of a row's draw plan in its row scratch (after the gather list).
const ROW_PLAN: u64 = ROW_LIST + MERGE_CAPACITY as u64 * 8;
const _: () = assert!(ROW_PLAN + 80 <= VERIFY_ROW_SCRATCH_BYTES as u64);

/// Words a block publishes per group reduction.
const SHARED_WORDS: usize = 6;
const _: () = assert!(BLOCK_HIST as u32 / 2 >= SHARED_WORDS as u32 * 8);

// ---------------------------------------------------------------------------------------------
// Settings and the target row.

#[inline(always)]
unsafe fn active(p: &VerifyParams) -> (u32, u32) {
    // SAFETY: the header holds four u32 the host wrote before the launch.
    let (requests, rows) = unsafe { ((p.header as *const u32).read(), (p.header as *const u32).add(1).read()) };
    (if requests < p.requests { requests } else { p.requests }, if rows < p.rows { rows } else { p.rows })
}

/// A request's settings, as four 16-byte loads.
///
/// # Safety
/// `request < requests`; the settings array is 16-byte aligned and not written during the call.
#[inline(always)]
unsafe fn read_settings(p: &VerifyParams, request: u32) -> VerifySettings {
    const _: () = assert!(core::mem::size_of::<VerifySettings>() == 64);
    let at = (p.settings + request as u64 * 64) as *const u32;
    // SAFETY: 64 readable bytes at a 16-byte aligned address (caller).
    let (a, b, c, d) = unsafe {
        (ld_global_nc_v4_u32(at), ld_global_nc_v4_u32(at.add(4)), ld_global_nc_v4_u32(at.add(8)), ld_global_nc_v4_u32(at.add(12)))
    };
    VerifySettings {
        row: RowSettings {
            temperature: f32::from_bits(a[0]),
            top_p: f32::from_bits(a[1]),
            min_p: f32::from_bits(a[2]),
            repetition_penalty: f32::from_bits(a[3]),
            frequency_penalty: f32::from_bits(b[0]),
            presence_penalty: f32::from_bits(b[1]),
            top_k: b[2],
            slot: b[3],
            bias_offset: c[0],
            bias_len: c[1],
            flags: c[2],
            _pad: c[3],
        },
        drafts: d[0],
        first_row: d[1],
        q_first: d[2],
        _pad: d[3],
    }
}

/// Every field that guards a memory access is in range, and the settings are valid. The
/// request's rows must all be active (`rows` = active target rows). Bias and draft ids are
/// checked separately (they need a loop).
#[inline(always)]
fn request_ok(p: &VerifyParams, s: &VerifySettings, rows: u32) -> bool {
    let r = &s.row;
    r.slot < p.slots
        && r.bias_offset <= p.bias_capacity
        && r.bias_len <= p.bias_capacity - r.bias_offset
        && (r.flags & ROW_HAS_BITMASK == 0 || p.bitmask != 0)
        && s.drafts <= p.max_drafts
        && p.max_drafts <= VERIFY_MAX_DRAFTS
        && s.first_row < rows
        && s.drafts < rows - s.first_row
        // A request without drafts reads no q row (a call may then have no q buffer at all).
        && (s.q_first == VERIFY_ONE_HOT
            || s.drafts == 0
            || (p.q != 0 && s.q_first <= p.q_rows && s.drafts <= p.q_rows - s.q_first))
        && settings_valid(r.temperature, r.top_p, r.min_p, r.repetition_penalty, r.frequency_penalty, r.presence_penalty)
}

#[inline(always)]
fn has_penalties(s: &RowSettings) -> bool {
    s.repetition_penalty != 1.0 || s.frequency_penalty != 0.0 || s.presence_penalty != 0.0
}

/// One target row, set up for the passes.
#[derive(Clone, Copy)]
struct VRow {
    /// The request's logit-bias entries in the call's bias arrays (the only settings the
    /// passes need besides `params`; fewer live registers than the whole `RowSettings`).
    bias_offset: u32,
    bias_len: u32,
    params: LogitParams,
    /// Byte address of the row's first logit, and whether whole tiles load as 16-byte vectors.
    logits: u64,
    vector_ok: bool,
    /// Byte address of the slot's penalty counts, 0 without penalties.
    counts: u64,
    /// Earlier drafts (`SM_DRAFTS[0..extra]`) that count as output; 0 without penalties.
    extra: u32,
    /// Byte address of the row's bitmask words, 0 without a mask.
    bitmask: u64,
    d: DraftRow,
}

/// The draft side of target row `j`: what the accept test and the draw read.
#[derive(Clone, Copy)]
struct DraftRow {
    /// Byte address of the row's draft probabilities; 0 for one-hot `q`, a greedy request, or
    /// `j = n`.
    q: u64,
    q_vector_ok: bool,
    /// `d_j`, or `NO_DRAFT` at `j = n`.
    draft: u32,
}

impl DraftRow {
    /// Row `position` of the request `vs`, whose draft there is `draft`; a greedy request
    /// (`greedy`, when the caller has not already ruled it out) reads no `q`.
    #[inline(always)]
    fn new(p: &VerifyParams, vs: &VerifySettings, position: u32, draft: u32, greedy: bool) -> DraftRow {
        let q = if !greedy && draft != NO_DRAFT && vs.q_first != VERIFY_ONE_HOT {
            p.q + (vs.q_first + position) as u64 * p.q_stride * 4
        } else {
            0
        };
        DraftRow { q, q_vector_ok: q % 16 == 0, draft }
    }
}

// ---------------------------------------------------------------------------------------------
// The prologue over one tile, with the drafts before this position counted as output.

#[inline(always)]
fn widen_pair(word: u32, dtype: u32) -> (f32, f32) {
    if dtype == DTYPE_BF16 {
        (widen_bf16(word as u16), widen_bf16((word >> 16) as u16))
    } else {
        (widen_f16(word as u16), widen_f16((word >> 16) as u16))
    }
}

/// Raw logits of this thread's 8 tokens from `base`; tokens past the vocab read as NaN.
///
/// # Safety
/// `logits` is the row's first element; the row holds `vocab` elements.
#[inline(always)]
unsafe fn load_raw(p: &VerifyParams, logits: u64, vector_ok: bool, base: u32) -> [f32; 8] {
    let mut raw = [f32::NAN; 8];
    if base >= p.vocab {
        return raw;
    }
    if vector_ok && base + 8 <= p.vocab {
        if p.dtype == DTYPE_F32 {
            let ptr = (logits + base as u64 * 4) as *const u32;
            // SAFETY: 8 tokens inside the row, 16-byte aligned (row start aligned, base % 8 == 0).
            raw = unsafe { ld_global_nc_v8_u32(ptr) }.map(f32::from_bits);
        } else {
            // SAFETY: as above; 8 half-width tokens are one 16-byte vector.
            let q = unsafe { ld_global_nc_v4_u32((logits + base as u64 * 2) as *const u32) };
            let (r0, r1) = widen_pair(q[0], p.dtype);
            let (r2, r3) = widen_pair(q[1], p.dtype);
            let (r4, r5) = widen_pair(q[2], p.dtype);
            let (r6, r7) = widen_pair(q[3], p.dtype);
            raw = [r0, r1, r2, r3, r4, r5, r6, r7];
        }
        return raw;
    }
    each8(|j| {
        let t = base + j as u32;
        if t < p.vocab {
            // SAFETY: token t < vocab lies inside the row.
            raw[j] = unsafe { load_raw1(p.dtype, logits, t) };
        }
    });
    raw
}

/// Draft probabilities (as f32) of this thread's 8 tokens from `base`; 0 past the vocab.
///
/// # Safety
/// `r.q` is a q row of `vocab` f32.
#[inline(always)]
unsafe fn load_q(p: &VerifyParams, r: &DraftRow, base: u32) -> [f32; 8] {
    let mut q = [0.0f32; 8];
    if base >= p.vocab {
        return q;
    }
    if r.q_vector_ok && base + 8 <= p.vocab {
        let ptr = (r.q + base as u64 * 4) as *const u32;
        // SAFETY: 8 values inside the q row, 16-byte aligned.
        return unsafe { ld_global_nc_v8_u32(ptr) }.map(f32::from_bits);
    }
    each8(|j| {
        let t = base + j as u32;
        if t < p.vocab {
            // SAFETY: t < vocab inside the q row.
            q[j] = unsafe { ((r.q + t as u64 * 4) as *const f32).read() };
        }
    });
    q
}

/// Processed values of this thread's 8 tokens of `tile`, whose raw logits `raw` are
/// (`load_raw`; docs/SEMANTICS.md §2), with the penalty state of position `j`: real counts
/// plus one per earlier draft.
///
/// # Safety
/// The whole block calls it together with the same `tile` (the bias table needs barriers);
/// `SM_DRAFTS[0..r.extra]` holds the drafts.
#[inline(always)]
unsafe fn process8(p: &VerifyParams, r: &VRow, tile: u32, raw: [f32; 8]) -> [f32; 8] {
    let tid = thread_idx_x();
    let tile_start = tile * TILE_TOKENS;
    let base = tile_start + tid * TOKENS_PER_THREAD;
    let has_bias = r.bias_len > 0;
    // SAFETY (whole block): the bias table lives at SM_BIAS, TILE_TOKENS f32; the barrier before
    // clearing keeps earlier readers safe, the one after scattering publishes it.
    unsafe {
        if has_bias {
            sync_threads();
            each8(|j| st_shared_u32(smem(SM_BIAS + (tid * TOKENS_PER_THREAD + j as u32) * 4), 0));
            sync_threads();
            let mut i = tid;
            while i < r.bias_len {
                let entry = (r.bias_offset + i) as usize;
                let token = (p.bias_tokens as *const u32).add(entry).read();
                let value = (p.bias_values as *const u32).add(entry).read();
                if token >= tile_start && token - tile_start < TILE_TOKENS {
                    st_shared_u32(smem(SM_BIAS + (token - tile_start) * 4), value);
                }
                i += SAMPLER_THREADS;
            }
            sync_threads();
        }
    }
    let mask_word = if r.bitmask != 0 && base < p.vocab {
        // SAFETY: word base/32 < bitmask_words for base < vocab.
        unsafe { ((r.bitmask + (base / 32) as u64 * 4) as *const u32).read() }
    } else {
        u32::MAX
    };
    let mut counts = [0u32; 8];
    if r.counts != 0 && base < p.vocab {
        let ptr = (r.counts + base as u64 * 4) as *const u32;
        // SAFETY: counts rows are counts_stride (a multiple of 8, ≥ vocab) long and 16-byte
        // aligned, so base..base+8 is inside and aligned.
        counts = unsafe { ld_global_nc_v8_u32(ptr) };
        // Earlier drafts of the chain count as output (they become seen).
        let mut i = 0;
        while i < r.extra {
            // SAFETY: i < extra ≤ drafts staged in SM_DRAFTS.
            let off = unsafe { ld_shared_u32(smem(SM_DRAFTS + i * 4)) }.wrapping_sub(base);
            if off < TOKENS_PER_THREAD {
                each8(|j| {
                    if off == j as u32 && counts[j] & 0x7fff_ffff != 0x7fff_ffff {
                        counts[j] += 1;
                    }
                });
            }
            i += 1;
        }
    }
    // Selects, not a branch per token: a token past the vocab is one not allowed.
    let inverse_repetition = 1.0 / r.params.repetition;
    let scale = temper_scale(r.params.temperature);
    let full = base + TOKENS_PER_THREAD <= p.vocab;
    let mut x = [f32::NEG_INFINITY; 8];
    each8(|j| {
        let inside = full || base + (j as u32) < p.vocab;
        let allowed = inside && (mask_word >> ((base & 31) + j as u32)) & 1 == 1;
        let bias = if has_bias {
            // SAFETY: this thread's own slot of the bias table (zero past the vocab).
            f32::from_bits(unsafe { ld_shared_u32(smem(SM_BIAS + (tid * TOKENS_PER_THREAD + j as u32) * 4)) })
        } else {
            0.0
        };
        let c = counts[j];
        x[j] = temper_by(process_untempered_selects(raw[j], allowed, c != 0, c & 0x7fff_ffff, bias, &r.params, inverse_repetition), scale);
    });
    x
}

#[inline(always)]
fn tile_base(tile: u32) -> u32 {
    tile * TILE_TOKENS + thread_idx_x() * TOKENS_PER_THREAD
}

/// The 8 cache slots of a row's processed values from token `base` (a multiple of 8).
#[inline(always)]
fn cache_slots_at(p: &VerifyParams, row: u32, base: u32) -> *mut u32 {
    (p.cache + (row as u64 * p.tiles as u64 * TILE_TOKENS as u64 + base as u64) * 4) as *mut u32
}

/// This thread's 8 cache slots of `tile` in the row's processed values.
#[inline(always)]
fn cache_slots(p: &VerifyParams, row: u32, tile: u32) -> *mut u32 {
    cache_slots_at(p, row, tile_base(tile))
}

/// Stores the processed values of this thread's 8 tokens of `tile`.
///
/// # Safety
/// `row < rows`, `tile < tiles`; the cache holds `rows × tiles × TILE_TOKENS` f32.
#[inline(always)]
unsafe fn store_cached8(p: &VerifyParams, row: u32, tile: u32, x: &[f32; 8]) {
    let at = cache_slots(p, row, tile);
    // SAFETY: 32 bytes inside the cache, 16-byte aligned (base % 8 == 0, cache aligned).
    unsafe {
        st_global_v4_u32(at, [x[0].to_bits(), x[1].to_bits(), x[2].to_bits(), x[3].to_bits()]);
        st_global_v4_u32(at.add(4), [x[4].to_bits(), x[5].to_bits(), x[6].to_bits(), x[7].to_bits()]);
    }
}

/// The processed values of this thread's 8 tokens of `tile`, as the first pass stored them
/// (bit for bit what [`process8`] gives).
///
/// # Safety
/// As for [`store_cached8`]; a group barrier separates the store from this load when another
/// block stored the tile.
#[inline(always)]
unsafe fn cached8(p: &VerifyParams, row: u32, tile: u32) -> [f32; 8] {
    // SAFETY: forwarded.
    unsafe { cached8_at(p, row, tile_base(tile)) }
}

/// The processed values of the 8 tokens from `base` (a multiple of 8, inside the row's tiles).
///
/// # Safety
/// As for [`cached8`].
#[inline(always)]
unsafe fn cached8_at(p: &VerifyParams, row: u32, base: u32) -> [f32; 8] {
    let at = cache_slots_at(p, row, base);
    // SAFETY: 32 bytes inside the cache, 16-byte aligned; ordered by the caller's barrier.
    let (a, b) = unsafe { (ld_global_v4_u32(at), ld_global_v4_u32(at.add(4))) };
    f32x8(a, b)
}

/// How many tiles past the one being processed a pass asks L2 for: one comes into registers
/// (`for_each_cached_tile!`), the rest by [`prefetch_tile`]. A whole-row block is one per SM, and
/// one tile of loads in flight left it waiting on DRAM for every tile. Measured (session 12,
/// run 5): 2 is 0.2–2.3% faster than 3 on the verification cells, 5 up to 2.5% slower.
const PREFETCH_AHEAD: u32 = 2;

/// Asks L2 for tile `tile` of a row of `len` values of `element` bytes from byte address
/// `start`: one 128-byte line for each of the 128 threads from `first_thread` (a 16 KiB tile of
/// f32 is 128 lines), so that two spans can go out at once from different threads. Nothing
/// past the row is asked for.
///
/// # Safety
/// `[start, start + len · element)` lies in one allocation of global memory.
#[inline(always)]
unsafe fn prefetch_tile(len: u32, start: u64, element: u64, tile: u32, first_thread: u32) {
    let slot = thread_idx_x().wrapping_sub(first_thread);
    let first = tile as u64 * TILE_TOKENS as u64;
    if slot < 128 && first < len as u64 {
        let tokens = if len as u64 - first < TILE_TOKENS as u64 { len as u64 - first } else { TILE_TOKENS as u64 };
        // SAFETY: tokens first..first + tokens of the row (caller's span).
        unsafe { prefetch_span_l2(start + first * element, tokens * element, slot, 128) };
    }
}

/// The row's cached values as a span for [`prefetch_tile`]: `(len, start)`.
#[inline(always)]
fn cache_span(p: &VerifyParams, row: u32) -> (u32, u64) {
    (p.tiles * TILE_TOKENS, cache_slots_at(p, row, 0) as u64)
}

// ---------------------------------------------------------------------------------------------
// Row summary and weights.

#[derive(Clone, Copy)]
struct Summary {
    infinite: u32,
    /// soft_ceil of the row max (finite rows).
    mc: f32,
}

impl Summary {
    #[inline(always)]
    fn infinite_row(&self) -> bool {
        self.infinite > 0
    }
    /// [`Summary::weight_of`] as its two factors (`fixed::weight_parts`).
    #[inline(always)]
    fn weight_parts_of(&self, key: u64) -> (u32, u64) {
        let x = key_value(key);
        if key == 0 {
            (0, 0)
        } else if self.infinite_row() {
            ((x == f32::INFINITY) as u32, (x == f32::INFINITY) as u64)
        } else {
            weight_parts(x, self.mc)
        }
    }
    /// `W` of a key (unit weights for +inf tokens of an infinite row; 0 for key 0).
    #[inline(always)]
    fn weight_of(&self, key: u64) -> u128 {
        key_weight_inline(key, self.mc, self.infinite)
    }
    /// [`Self::weight_of`] through `sampler::key_weight`'s one out-of-line copy, for
    /// once-a-row loops (as stage 2's `weight_of_once`).
    #[inline(always)]
    fn weight_of_once(&self, key: u64) -> u128 {
        key_weight(key, self.mc, self.infinite)
    }
    #[inline(always)]
    fn logprob_of(&self, key: u64, ln_z: f64) -> f32 {
        if key == 0 {
            f32::NEG_INFINITY
        } else if self.infinite_row() {
            infinite_row_logprob(key_value(key), self.infinite)
        } else {
            token_logprob(key_value(key), self.mc, ln_z)
        }
    }
}

/// Runs `$body` with `$tile` and its cached values `$x` for the tiles `$first, $first + $step,
/// ...` of `$row`, the next tile's loads issued before the body runs on the current one, and
/// the tiles after it asked of L2 ([`PREFETCH_AHEAD`]): a block holds one row at a time, so
/// without them each tile would wait a whole memory round trip. A macro, so that the body
/// inlines (a closure nested in a closure may not).
///
/// Safety (the caller's `unsafe`): the whole block runs it with the same arguments; the tiles
/// are cached, and published to this block by a group barrier where another block stored them.
macro_rules! for_each_cached_tile {
    ($p:expr, $row:expr, $first:expr, $step:expr, |$tile:ident, $x:ident| $body:block) => {{
        let (p, row, step) = ($p, $row, $step);
        let mut $tile = $first;
        if $tile < p.tiles {
            let (len, start) = cache_span(p, row);
            // (With PREFETCH_AHEAD = 2 this is the tile loaded below. Without it ptxas spilled 84
            // bytes more in `verify_rows` (session 13), so it stays.)
            prefetch_tile(len, start, 4, $tile + (PREFETCH_AHEAD - 1) * step, 128);
            let mut $x = cached8(p, row, $tile);
            loop {
                let next = $tile + step;
                let ahead = if next < p.tiles { cached8(p, row, next) } else { $x };
                prefetch_tile(len, start, 4, $tile + PREFETCH_AHEAD * step, 0);
                $body
                if next >= p.tiles {
                    break;
                }
                ($tile, $x) = (next, ahead);
            }
        }
    }};
}

/// Calls `f(key)` for every valid key ≥ `floor` of the cached row, in tiles `first, first +
/// step, ...`.
///
/// # Safety
/// As for [`for_each_cached_tile!`].
#[inline(always)]
unsafe fn for_each_key<F: FnMut(u64)>(p: &VerifyParams, row: u32, first: u32, step: u32, floor: u64, mut f: F) {
    // SAFETY: forwarded.
    unsafe {
        let fv = floor_value(floor);
        for_each_cached_tile!(p, row, first, step, |tile, x| {
            let base = tile_base(tile);
            each8(|j| {
                if reaches_floor(x[j], base + j as u32, floor, fv) {
                    f(sort_key(x[j], base + j as u32));
                }
            });
        })
    }
}

/// Like [`for_each_key`], but calls `f` for all 8 slots (key 0 where none qualifies), so warps
/// stay converged for warp-wide instructions inside `f`.
///
/// # Safety
/// As for [`for_each_cached_tile!`].
#[inline(always)]
unsafe fn for_each_key_all<F: FnMut(u64)>(p: &VerifyParams, row: u32, first: u32, step: u32, floor: u64, mut f: F) {
    // SAFETY: forwarded.
    unsafe {
        let fv = floor_value(floor);
        for_each_cached_tile!(p, row, first, step, |tile, x| {
            let base = tile_base(tile);
            each8(|j| f(if reaches_floor(x[j], base + j as u32, floor, fv) { sort_key(x[j], base + j as u32) } else { 0 }));
        })
    }
}

/// In one pass over the group's tiles: the count and mass of the row's keys ≥ `floor`, and
/// the mass of all its keys (exact integer sums, combined over the group). `valid` is the
/// row's count of valid keys (the first pass's).
///
/// A finite row with usable bands and no min-p floor (`floor ≤ 1`: then the count is `valid`
/// and the two masses are one) adds its tokens' fractions to lane-private band sums
/// ([`band_mass`]), as stage 1's mass scan does, and weighs them once at the end: per token a
/// fraction and a shared-memory add, where a `u128` weight cost a table load, a wide multiply
/// and two `u128` additions. Other rows weigh each key; those without a floor (infinite rows,
/// unusable bands) still sum the two masses apart: summing once behind a branch (+48 SASS
/// instructions) measured 0.996–1.013× the time on `verify_uniform` (session 39, when every
/// row took that loop).
///
/// # Safety
/// The whole block calls it together; the group's tiles are cached.
#[inline(always)]
unsafe fn count_masses(p: &VerifyParams, grp: &mut Group, sum: &Summary, floor: u64, valid: u32) -> (u32, u128, u128) {
    let (mut count, mut mass, mut all) = (0u32, 0u128, 0u128);
    let banded = floor <= 1 && !sum.infinite_row() && bands_usable(sum.mc);
    // SAFETY: uniform calls by the whole block (`banded` is block-uniform).
    unsafe {
        if banded {
            all = band_mass(p, grp, sum.mc);
        } else {
            for_each_key(p, grp.row, grp.g, grp.size, 1, |key| {
                let w = sum.weight_of(key);
                all += w;
                if key >= floor {
                    count += 1;
                    mass += w;
                }
            });
        }
        let (mut count, mut mass, mut all) = (block_sum_u32(count), block_sum_u128(mass), block_sum_u128(all));
        if grp.size > 1 {
            let w = grp.share(p, [count as u64, mass as u64, (mass >> 64) as u64, all as u64, (all >> 64) as u64, 0]);
            count = block_sum_u32(w[0] as u32);
            mass = block_sum_u128(((w[2] as u128) << 64) | w[1] as u128);
            all = block_sum_u128(((w[4] as u128) << 64) | w[3] as u128);
        }
        if banded {
            (valid, all, all)
        } else {
            (count, mass, all)
        }
    }
}

/// `band_mass`' lane-private sums, `u32[NO_BAND + 1][SAMPLER_THREADS]` (band-major, so a
/// warp's adds to one band hit 32 banks), in the sort and histogram region, which the rows
/// that take it never use (they select nothing).
const SM_MASS_BANDS: u32 = SM_SORT;
const _: () = assert!(SM_MASS_BANDS + (NO_BAND + 1) * SAMPLER_THREADS * 4 <= VERIFY_ROWS_SHARED_BYTES);

/// This thread's column of the band sums (band `d` at `+ d · SAMPLER_THREADS · 4`), as a
/// shared address: `smem` adds the window's base, which is not 0. (Until session 42 the
/// columns were raw offsets, so they sat that far below the region, over the top of the bias
/// table: harmless while only a pass of their own used them, but the first pass's band sums
/// lost every band-0 sum the bias table overwrote.)
#[inline(always)]
fn band_column() -> u32 {
    smem(SM_MASS_BANDS + thread_idx_x() * 4)
}
/// Tiles a thread adds to its band sums before weighing them: 8 fractions of at most `2^23`
/// per tile, so 32 tiles stay under `2^31` in a `u32`.
const MASS_FOLD_TILES: u32 = 32;
const _: () = assert!(MASS_FOLD_TILES as u64 * TOKENS_PER_THREAD as u64 * (1u64 << 23) < 1u64 << 32);

/// This thread's share of the row's mass `Σ W` over the group's cached tiles, as
/// [`Summary::weight_of`] weighs each key (`W = frac · E[d]`, `fixed::weight`): each token's
/// fraction goes to its band `d = mc - ceil(x)`, and the sums are weighed by `E[d]` every
/// [`MASS_FOLD_TILES`] tiles and at the end. Integer sums, so the order changes nothing.
///
/// # Safety
/// The whole block calls it together, with barriers since the sort region's last use; the
/// row is finite with usable bands (`mc = soft_ceil` of its maximum, `bands_usable`).
#[inline(always)]
unsafe fn band_mass(p: &VerifyParams, grp: &Group, mc: f32) -> u128 {
    let column = band_column();
    let band_stride = SAMPLER_THREADS * 4;
    // `mc` is an integer inside the ceilings' range, so this is `mc` as an integer.
    let (_, mc_i) = small_ceil(mc);
    let mut total = 0u128;
    // SAFETY: the thread's own column of the band sums (in bounds: asserted above); the tile
    // loop as `for_each_cached_tile!` requires.
    unsafe {
        clear_band_column();
        let mut since_fold = 0u32;
        for_each_cached_tile!(p, grp.row, grp.g, grp.size, |tile, x| {
            // (Reductions with no returned value: two of a thread's tokens may share a band, and
            // a load, add and store would wait for the one before.)
            each8(|j| {
                let (band, frac) = band_and_fraction(x[j], mc_i);
                red_add_shared_u32(column + band * band_stride, frac);
            });
            since_fold += 1;
            if since_fold == MASS_FOLD_TILES {
                total += fold_band_sums(column, band_stride);
                since_fold = 0;
            }
        });
        total + fold_band_sums(column, band_stride)
    }
}

/// `Σ E[d] · sum[d]` over this thread's band sums, which it clears (the discard row is never
/// read).
///
/// # Safety
/// `column` is this thread's column of the band sums.
#[inline(always)]
unsafe fn fold_band_sums(column: u32, band_stride: u32) -> u128 {
    let mut total = 0u128;
    let mut d = 0;
    // SAFETY: the caller's column.
    unsafe {
        while d < NO_BAND {
            let at = column + d * band_stride;
            total += ld_shared_u32(at) as u128 * BAND_SCALES[d as usize] as u128;
            st_shared_u32(at, 0);
            d += 1;
        }
    }
    total
}

/// Tiles a block may add to its first pass's band sums ([`add_to_running_bands`]): 8 fractions
/// of at most `2^23` per tile, so 63 tiles stay under `2^32` in a `u32`, with no fold on the
/// way (the fold needs the row's ceiling, which the pass is still finding).
const PASS_BAND_TILES: u32 = 63;
const _: () = assert!(PASS_BAND_TILES as u64 * TOKENS_PER_THREAD as u64 * (1u64 << 23) < 1u64 << 32);

/// Zeroes this thread's column of the band sums, discard row included.
///
/// # Safety
/// No other use of the sort region is in flight (a barrier since its last use).
#[inline(always)]
unsafe fn clear_band_column() {
    let column = band_column();
    let mut d = 0;
    // SAFETY: the thread's own column (in bounds: asserted with SM_MASS_BANDS).
    unsafe {
        while d <= NO_BAND {
            st_shared_u32(column + d * SAMPLER_THREADS * 4, 0);
            d += 1;
        }
    }
}

/// Moves this thread's band sums `by` bands down, the ones pushed past the last band dropping
/// (the discard row is left as it is: it is never read).
///
/// # Safety
/// The thread's own column, as [`clear_band_column`] leaves it.
#[inline(always)]
unsafe fn shift_band_column(by: u32) {
    let column = band_column();
    let stride = SAMPLER_THREADS * 4;
    let mut d = NO_BAND;
    // SAFETY: the thread's own column; descending, so each source is read before it is written.
    unsafe {
        while d > 0 {
            d -= 1;
            let v = if d >= by { ld_shared_u32(column + (d - by) * stride) } else { 0 };
            st_shared_u32(column + d * stride, v);
        }
    }
}

/// The first pass's band sums of a tile: this thread's processed values `x` go to its column
/// under the warp's running `ceiling` (`soft_ceil` of the largest value the warp has seen),
/// raised first to `warp_top`'s (the ordered bits of the warp's largest value in this tile, 0
/// for none), the sums moving down with it (`fixed::band_shift`). The same integers as
/// [`band_mass`] adds under the row's ceiling once the sums move there
/// ([`running_band_mass`]); `fixed`'s `running_ceiling_band_sums_are_the_weights` holds that.
///
/// # Safety
/// The whole warp calls it together (`ceiling` and `warp_top` are warp-uniform); the column
/// was cleared for this row and is within [`PASS_BAND_TILES`] tiles of it.
#[inline(always)]
unsafe fn add_to_running_bands(ceiling: &mut f32, warp_top: u32, x: &[f32; 8]) {
    let column = band_column();
    let stride = SAMPLER_THREADS * 4;
    let tile_ceil = if warp_top != 0 { soft_ceil(from_ordered_bits(warp_top)) } else { f32::NEG_INFINITY };
    // SAFETY: the thread's own column; a warp-uniform branch.
    unsafe {
        if tile_ceil > *ceiling {
            shift_band_column(band_shift(*ceiling, tile_ceil));
            *ceiling = tile_ceil;
        }
        let ceiling_i = ceiling_index(*ceiling);
        // (Reductions with no returned value, as in `band_mass`.)
        each8(|j| {
            let (band, frac) = band_and_fraction(x[j], ceiling_i);
            red_add_shared_u32(column + band * stride, frac);
        });
    }
}

/// The row's mass from the first pass's band sums: each thread's sums moved from its warp's
/// `ceiling` to the row's `mc` and weighed ([`fold_band_sums`]), then summed over the block
/// and the group.
///
/// # Safety
/// The whole block calls it together, and every block of the group; the row is finite with
/// usable bands (`mc`), and every tile of this block went through [`add_to_running_bands`].
#[inline(always)]
unsafe fn running_band_mass(p: &VerifyParams, grp: &mut Group, ceiling: f32, mc: f32) -> u128 {
    let column = band_column();
    // SAFETY: the thread's own column; uniform calls by the whole block.
    unsafe {
        shift_band_column(band_shift(ceiling, mc));
        let mut all = block_sum_u128(fold_band_sums(column, SAMPLER_THREADS * 4));
        if grp.size > 1 {
            let w = grp.share(p, [all as u64, (all >> 64) as u64, 0, 0, 0, 0]);
            all = block_sum_u128(((w[1] as u128) << 64) | w[0] as u128);
        }
        all
    }
}

// ---------------------------------------------------------------------------------------------
// Selection by value bins: the split exact pass's bins (`fixed::exact_bin`, 1/128 nat inside
// each mass band, so a flat 151936-token row's fullest bin holds about a thousand keys) place
// the top-k and top-p boundaries from one histogram pass, and one gather of the boundary bins
// decides both on keys and exact masses. The radix selection below takes a pass per digit
// level and per selection, each weighing every key in 128-bit arithmetic: it stays for rows
// this cannot take (infinite rows, unusable bands, boundary bins over `MERGE_CAPACITY` keys).

/// A tile's part of each bin, as [`add_to_tile_bins`] packs it: the count with the high bits of
/// the fraction sum.
const V_PACK: u32 = SM_SORT;
/// A tile's sum of the fractions' low bits per bin.
const V_LO: u32 = V_PACK + BINS * 4;
/// The row's count per bin (each thread adds the tile parts of its own bins).
const V_COUNT: u32 = V_LO + BINS * 4;
/// The row's fraction sum per bin.
const V_SUM: u32 = (V_COUNT + BINS * 4).next_multiple_of(8);
const _: () = assert!(V_SUM + BINS * 8 <= VERIFY_ROWS_SHARED_BYTES);
const _: () = assert!(BINS_PER_THREAD * SAMPLER_THREADS >= BINS);

/// Bin `i` of this thread's run (thread order is bin order, and so key order).
#[inline(always)]
fn own_bin(i: usize) -> u32 {
    thread_idx_x() * BINS_PER_THREAD + i as u32
}

/// Bin of a valid key of a finite row with usable bands (`mc = soft_ceil` of its maximum).
#[inline(always)]
fn bin_of(key: u64, mc: f32) -> u32 {
    let x = key_value(key);
    exact_bin(x, soft_ceil(x), mc)
}

/// One pass over the group's tiles: the row's keys ≥ `floor` counted and weighed by bin into
/// `V_COUNT` / `V_SUM`, the group's sums in every block of the group. Returns, for a group
/// taking rows in turn, whether one of its blocks saw the row's chain stopped (an earlier row
/// marked in the request's rejection word; the row is row `position` of its request) as it
/// finished its tiles: the same answer in every block, so the group drops the row together.
/// One-round groups and blocks alone return false.
///
/// # Safety
/// The whole block calls it together, and every block of the group; the group's tiles are
/// cached; the row is finite with usable bands (`sum.mc`); the group's global bins are zero,
/// and this leaves them zero.
#[inline(always)]
unsafe fn bin_histogram(p: &VerifyParams, grp: &mut Group, sum: &Summary, floor: u64, position: u32) -> bool {
    // SAFETY (whole block, uniform branches): each thread clears and flushes only its own
    // bins, between barriers; the atomics stay inside V_PACK / V_LO (bin < BINS); global bins
    // are the group's first block's slot of group_scratch.
    unsafe {
        each_own_bin(|i| {
            let b = own_bin(i);
            if b < BINS {
                st_shared_u32(smem(V_PACK + b * 4), 0);
                st_shared_u32(smem(V_LO + b * 4), 0);
                st_shared_u32(smem(V_COUNT + b * 4), 0);
                st_shared_u64(smem(V_SUM + b * 8), 0);
            }
        });
        sync_threads();
        let fv = floor_value(floor);
        for_each_cached_tile!(p, grp.row, grp.g, grp.size, |tile, x| {
            let base = tile_base(tile);
            each8(|j| {
                // (A cached value is never -0: the key's value is the value.)
                if reaches_floor(x[j], base + j as u32, floor, fv) {
                    add_to_tile_bins(V_PACK, V_LO, x[j], sum.mc);
                }
            });
            sync_threads();
            // The tile's parts into the row's sums, before the next tile's atomics.
            each_own_bin(|i| {
                let b = own_bin(i);
                if b < BINS {
                    let packed = ld_shared_u32(smem(V_PACK + b * 4));
                    if packed != 0 {
                        let (count, part) = tile_bin(packed, ld_shared_u32(smem(V_LO + b * 4)));
                        st_shared_u32(smem(V_COUNT + b * 4), ld_shared_u32(smem(V_COUNT + b * 4)) + count);
                        st_shared_u64(smem(V_SUM + b * 8), ld_shared_u64(smem(V_SUM + b * 8)) + part);
                        st_shared_u32(smem(V_PACK + b * 4), 0);
                        st_shared_u32(smem(V_LO + b * 4), 0);
                    }
                }
            });
            sync_threads();
        });
        if grp.size == 1 {
            return false;
        }
        // Added before the exchange's group barrier and read after it, so every block reads
        // the same count. (The chain mostly stops while a later row runs: its rows start
        // together, and a rejection at position 0 is known only after that row's passes.)
        let stop_seen = head_word(p.row_scratch, grp.row, HEAD_STOP_SEEN);
        if thread_idx_x() == 0 && grp.in_turn && position > 0 && chain_stopped_before(p, grp.row - position, position) {
            red_add_global_u32(stop_seen, 1);
        }
        let slot = p.group_scratch + grp.first_block as u64 * VERIFY_BLOCK_SCRATCH_BYTES as u64;
        let (counts, sums) = ((slot + G_COUNT) as *mut u32, (slot + G_SUM) as *mut u64);
        each_own_bin(|i| {
            let b = own_bin(i);
            let n = if b < BINS { ld_shared_u32(smem(V_COUNT + b * 4)) } else { 0 };
            if n != 0 {
                red_add_global_u32(counts.add(b as usize), n);
                let m = ld_shared_u64(smem(V_SUM + b * 8));
                if m != 0 {
                    red_add_global_u64(sums.add(b as usize), m);
                }
            }
        });
        grp.sync(p);
        each_own_bin(|i| {
            let b = own_bin(i);
            if b < BINS {
                st_shared_u32(smem(V_COUNT + b * 4), ld_relaxed_gpu_u32(counts.add(b as usize)));
                st_shared_u64(smem(V_SUM + b * 8), ld_relaxed_gpu_u64(sums.add(b as usize)));
            }
        });
        let stopped = ld_relaxed_gpu_u32(stop_seen) != 0;
        // The last block of the group to have read the bins back clears them for the next row
        // or call (the stop count stays until `verify_chains` clears the heads): no block waits
        // for the others, as a group barrier before the first block's clear made them
        // (session 57). The clear comes before that block's next group barrier, and every
        // later add to these bins (the group's next row) comes after it.
        if block_arrive(head_word(p.row_scratch, grp.row, HEAD_BINS_READ), grp.size) {
            each_own_bin(|i| {
                let b = own_bin(i);
                if b < BINS && ld_shared_u32(smem(V_COUNT + b * 4)) != 0 {
                    counts.add(b as usize).write(0);
                    sums.add(b as usize).write(0);
                }
            });
        }
        stopped
    }
}

/// Where a binned row's boundaries lie: the same in every thread and every block of the group.
#[derive(Clone, Copy)]
struct BinChoice {
    /// The boundaries; the masses before them are read again from `bin_boundaries`' shared
    /// slots where they are needed (kept in registers across the gather, they spilled).
    b: Boundaries,
    /// Whether the boundary bins fit the gather list (else the radix selection decides).
    fits: bool,
}

/// The boundaries of the histogram in `V_COUNT` / `V_SUM`, as `exact_bins` finds them.
///
/// # Safety
/// The whole block calls it, after [`bin_histogram`].
#[inline(always)]
unsafe fn choose_bins(top_k: u32, top_p: f32) -> BinChoice {
    // SAFETY (whole block): each thread reads its own bins, and any bin after the barriers of
    // bin_histogram; the broadcast slots bin_boundaries uses are free here.
    unsafe {
        let mut own_counts = [0u32; BINS_PER_THREAD as usize];
        each_own_bin(|i| {
            let b = own_bin(i);
            if b < BINS {
                own_counts[i] = ld_shared_u32(smem(V_COUNT + b * 4));
            }
        });
        let own_mass_at = |i: usize| {
            let b = own_bin(i);
            if b < BINS {
                bin_mass(b, ld_shared_u64(smem(V_SUM + b * 8)))
            } else {
                0
            }
        };
        let mass_of = |b: u32| bin_mass(b, ld_shared_u64(smem(V_SUM + b * 8)));
        let b = bin_boundaries(&own_counts, own_mass_at, mass_of, top_k, top_p);
        let mut own_gather = 0u32;
        each_own_bin(|i| {
            let bin = own_bin(i);
            if bin == b.bin_k || (b.bin_p_lo <= bin && bin <= b.bin_p_hi) {
                own_gather += own_counts[i];
            }
        });
        let gather = block_sum_u32(own_gather);
        BinChoice { b, fits: gather <= MERGE_CAPACITY && (top_p_disabled(top_p) || b.bin_p_lo != NONE) }
    }
}

/// Appends the group's keys ≥ `floor` that `take` accepts to the row's list (its gather
/// counter `call`), and leaves the first `n` of them (at most `MERGE_CAPACITY`) sorted, largest
/// first, at `SM_SORT`, zero-padded to a power of two, in every block of the group. Returns `n`.
///
/// # Safety
/// The whole block calls it, and every block of the group, with the same arguments; the
/// group's tiles are cached; the counter is zero.
#[inline(always)]
unsafe fn gather_sorted<F: Fn(u64) -> bool>(p: &VerifyParams, grp: &mut Group, floor: u64, call: u32, take: F) -> u32 {
    let row = grp.row;
    // SAFETY (whole block): the row's list holds MERGE_CAPACITY keys (positions past it are
    // counted, not stored); the group barrier orders the stores before the loads; SM_SORT
    // holds 2048 keys.
    unsafe {
        let head = (p.row_scratch + row as u64 * VERIFY_ROW_SCRATCH_BYTES as u64) as *mut u32;
        let counter = head.add((HEAD_GATHER + call) as usize);
        let list = (p.row_scratch + row as u64 * VERIFY_ROW_SCRATCH_BYTES as u64 + ROW_LIST) as *mut u64;
        for_each_key(p, row, grp.g, grp.size, floor, |key| {
            if take(key) {
                let pos = atom_add_global_u32(counter, 1);
                if pos < MERGE_CAPACITY {
                    list.add(pos as usize).write(key);
                }
            }
        });
        grp.sync(p);
        let n = ld_relaxed_gpu_u32(counter);
        let n = if n < MERGE_CAPACITY { n } else { MERGE_CAPACITY };
        let padded = pow2_at_least(n);
        let mut i = thread_idx_x();
        while i < padded {
            st_shared_u64(smem(SM_SORT + i * 8), if i < n { ld_relaxed_gpu_u64(list.add(i as usize)) } else { 0 });
            i += SAMPLER_THREADS;
        }
        sync_threads();
        block_sort_desc(padded);
        n
    }
}

/// Gathers the keys of the boundary bins into the row's list, sorts them, and decides top-k
/// and then top-p on them exactly: the kept floor and mass, as the radix selection gives them.
/// `None` only if the bins' guarantee failed (no key reached `p·Z1`).
///
/// # Safety
/// The whole block calls it, and every block of the group, after [`choose_bins`] with `fits`;
/// the group's tiles are cached; the row's first gather counter is zero.
#[inline(always)]
unsafe fn select_binned(p: &VerifyParams, grp: &mut Group, sum: &Summary, floor: u64, c: &BinChoice, top_p: f32) -> Option<(u64, u128)> {
    let tid = thread_idx_x();
    // SAFETY (whole block, uniform branches): the boundary bins hold at most MERGE_CAPACITY
    // keys (`fits`); SM_SORT and the broadcast slots from the map, read after the barriers
    // that order them.
    unsafe {
        let c = &c.b;
        if c.bin_k == NONE && top_p_disabled(top_p) {
            // Top-k keeps every key ≥ the floor (k ≥ n_m), and there is no top-p.
            return Some((floor, c.z_m));
        }
        let n = gather_sorted(p, grp, floor, 0, |key| {
            let bin = bin_of(key, sum.mc);
            bin == c.bin_k || (c.bin_p_lo <= bin && bin <= c.bin_p_hi)
        });
        // Spread thinly: the weights below are recomputed per key, a serial chain per thread.
        let held = run_per_thread(n);
        let first = tid * held;
        let mut keys = [0u64; OWN];
        let mut bins = [NONE; OWN];
        each_own(|q| {
            if (q as u32) < held && first + (q as u32) < n {
                keys[q] = ld_shared_u64(smem(SM_SORT + (first + q as u32) * 8));
                bins[q] = bin_of(keys[q], sum.mc);
            }
        });

        // The masses before the boundaries come from bin_boundaries' broadcast slots, not from
        // `c` (kept in registers across the gather, they spilled).
        let cut = Cut {
            floor,
            z_m: c.z_m,
            bin_k: c.bin_k,
            k1: c.k1,
            count_before_k: ld_shared_u32(smem(X_COUNT_K)),
            mass_before_k: ld_shared_u128(smem(X_MASS_K)),
            bin_p_lo: c.bin_p_lo,
        };
        let (kept_floor, z) = decide_gathered(&keys, &bins, first, held, cut, top_p, |q| sum.weight_of_once(keys[q]), || ld_shared_u128(smem(X_MASS_P)));
        if z == 0 {
            None
        } else {
            Some((kept_floor, z))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Exact selection over the whole row (the algorithm of sampler.rs's exact pass).

#[derive(Clone, Copy)]
enum Target {
    Count(u32),
    Mass { total: u128, p24: u32 },
}

impl Target {
    #[inline(always)]
    fn reached(&self, count: u32, mass: u128) -> bool {
        match *self {
            Target::Count(k) => count >= k,
            Target::Mass { total, p24 } => top_p_reached(mass, total, p24),
        }
    }
}

/// The first `n` keys of `SM_SORT` as this thread's `OWN` positions with inclusive prefix
/// masses over the list.
///
/// # Safety
/// The whole block calls it together.
#[inline(always)]
unsafe fn sorted_prefix_masses(n: u32, sum: &Summary) -> ([u64; OWN], [u128; OWN]) {
    let first = thread_idx_x() * OWN as u32;
    let mut keys = [0u64; OWN];
    let mut prefix = [0u128; OWN];
    let mut run = 0u128;
    each_own(|q| {
        let i = first + q as u32;
        if i < n {
            // SAFETY: i < n ≤ 2048 positions of SM_SORT.
            keys[q] = unsafe { ld_shared_u64(smem(SM_SORT + i * 8)) };
            run += sum.weight_of_once(keys[q]);
        }
        prefix[q] = run;
    });
    // SAFETY: the whole block calls this function together.
    let (before, _) = unsafe { block_exclusive_scan_u128(run) };
    each_own(|q| prefix[q] += before);
    (keys, prefix)
}

/// The shortest prefix (key order, keys ≥ `floor`) that reaches `target`: returns its last key
/// and its mass. MSD radix on 8-bit digits with count and mass histograms until the boundary
/// bucket fits `SM_SORT`, then a sort of that bucket. The group's blocks histogram their own
/// tiles and add the histograms (exact integers), and gather the bucket into the row's list,
/// which every block then sorts: all reach the same answer.
///
/// # Safety
/// The whole block calls it together, and every block of the group; the target is reachable
/// by the keys ≥ `floor`; the group's tiles are cached; `call` is 0 for a row's first
/// selection, 1 for its second (each has its own gather counter, zero at launch).
#[inline(always)]
unsafe fn select_exact(p: &VerifyParams, grp: &mut Group, sum: &Summary, floor: u64, target: Target, call: u32) -> (u64, u128) {
    let tid = thread_idx_x();
    let row = grp.row;
    let (mut prefix, mut level) = (0u64, 0u32);
    let (mut acc_count, mut acc_mass) = (0u32, 0u128);
    // SAFETY (whole block): histogram slots and SM_SORT from the map; uniform loop bounds.
    unsafe {
        let in_bucket = |key: u64, prefix: u64, level: u32| level == 0 || (key >> (64 - level)) == prefix;
        loop {
            let shift = 56 - level;
            if tid < 256 {
                st_shared_u32(smem(SM_HIST + tid * 4), 0);
                st_shared_u64(smem(SM_HIST_LO + tid * 8), 0);
                st_shared_u64(smem(SM_HIST_HI + tid * 8), 0);
            }
            sync_threads();
            for_each_key_all(p, row, grp.g, grp.size, floor, |key| {
                let counted = key != 0 && in_bucket(key, prefix, level);
                let digit = if counted { ((key >> shift) & 255) as u32 } else { NO_DIGIT };
                let w = if counted { sum.weight_of(key) } else { 0 };
                let peers = match_any_sync(FULL_MASK, digit);
                // W <= 2^75 (< 2^84): four 21-bit limbs, each summed over ≤ 32 lanes without overflow.
                let l0 = redux_add_sync(peers, (w & 0x1f_ffff) as u32) as u128;
                let l1 = redux_add_sync(peers, ((w >> 21) & 0x1f_ffff) as u32) as u128;
                let l2 = redux_add_sync(peers, ((w >> 42) & 0x1f_ffff) as u32) as u128;
                let l3 = redux_add_sync(peers, ((w >> 63) & 0x1f_ffff) as u32) as u128;
                if counted && peers.trailing_zeros() == lane_id() {
                    let total = l0 + (l1 << 21) + (l2 << 42) + (l3 << 63);
                    atom_add_shared_u32(smem(SM_HIST + digit * 4), peers.count_ones());
                    atom_add_shared_u128(smem(SM_HIST_LO + digit * 8), smem(SM_HIST_HI + digit * 8), total);
                }
            });
            sync_threads();
            // Thread t looks at digit 255 - t, so thread order is key order.
            let (h, m) = if tid < 256 {
                let d = 255 - tid;
                (
                    ld_shared_u32(smem(SM_HIST + d * 4)),
                    ((ld_shared_u64(smem(SM_HIST_HI + d * 8)) as u128) << 64) | ld_shared_u64(smem(SM_HIST_LO + d * 8)) as u128,
                )
            } else {
                (0, 0)
            };
            let (h, m) = if grp.size > 1 { grp.share_bin(p, h, m) } else { (h, m) };
            let (c_before, _) = block_exclusive_scan_u32(h);
            let (m_before, _) = block_exclusive_scan_u128(m);
            if tid == 0 {
                // Fallback if the target were ever unreached: the last digit.
                st_shared_u32(smem(RES_SELECT), 0);
            }
            sync_threads();
            if tid < 256
                && h > 0
                && !target.reached(acc_count + c_before, acc_mass + m_before)
                && target.reached(acc_count + c_before + h, acc_mass + m_before + m)
            {
                st_shared_u32(smem(RES_SELECT), 255 - tid);
            }
            sync_threads();
            let digit = ld_shared_u32(smem(RES_SELECT));
            sync_threads();
            let above_t = 255 - digit;
            let (c_above, m_above, bucket) = {
                let (mut c, mut m2, mut b) = (0u32, 0u128, 0u32);
                if tid < 256 && tid < above_t {
                    c = h;
                    m2 = m;
                }
                if tid == above_t {
                    b = h;
                }
                (block_sum_u32(c), block_sum_u128(m2), block_sum_u32(b))
            };
            acc_count += c_above;
            acc_mass += m_above;
            prefix = (prefix << 8) | digit as u64;
            level += 8;
            if bucket <= MERGE_CAPACITY || level == 64 {
                break;
            }
        }
        // Gather the boundary bucket, sort it, and finish position by position.
        let n = gather_sorted(p, grp, floor, call, |key| in_bucket(key, prefix, level));
        let first = tid * OWN as u32;
        let (keys, prefix_mass) = sorted_prefix_masses(n, sum);
        let mut hit = u32::MAX;
        each_own(|q| {
            let i = first + q as u32;
            if i < n && hit == u32::MAX && target.reached(acc_count + i + 1, acc_mass + prefix_mass[q]) {
                hit = i;
            }
        });
        let hit = block_min_u32(hit);
        let hit = if hit == u32::MAX { if n > 0 { n - 1 } else { 0 } } else { hit };
        each_own(|q| {
            if first + q as u32 == hit {
                let mass = acc_mass + prefix_mass[q];
                st_shared_u64(smem(RES_U128), mass as u64);
                st_shared_u64(smem(RES_U128 + 8), (mass >> 64) as u64);
                st_shared_u64(smem(RES_LOWER), keys[q]);
            }
        });
        sync_threads();
        let mass = ((ld_shared_u64(smem(RES_U128 + 8)) as u128) << 64) | ld_shared_u64(smem(RES_U128)) as u128;
        let lower = ld_shared_u64(smem(RES_LOWER));
        sync_threads();
        (lower, mass)
    }
}

// ---------------------------------------------------------------------------------------------
// The draw: index-order walk over the kept keys, by plain weights or residual weights.

/// What a draw weighs each kept token by: the residual `R_i = max(0, W_i·Q − q_i·Z)`; the
/// plain weights `W_i` of `p_j` are the same formula with `q_i = 0` and `Q = 1`, so both draws
/// share one code path (and one inlined copy).
#[derive(Clone, Copy)]
struct Weights {
    z: u128,
    q_total: u128,
    plain: bool,
}

impl Weights {
    const PLAIN: Weights = Weights { z: 0, q_total: 1, plain: true };
}

/// One token's weight in a draw (computed on demand, not stored: 8 × 256 bits per thread
/// would not fit in registers).
#[inline(always)]
fn token_weight(sum: &Summary, w: Weights, r: &DraftRow, key: u64, floor: u64, q: f32, token: u32) -> U256 {
    if key == 0 || key < floor {
        return U256::ZERO;
    }
    let qi = if w.plain {
        0
    } else if r.q != 0 {
        draft_units(q)
    } else {
        (token == r.draft) as u64
    };
    let wide = residual_once(key, sum.mc, sum.infinite, w.z, qi, w.q_total);
    U256 { hi: wide.hi, lo: wide.lo }
}

/// A [`U256`] across a call (`#[repr(C)]`: under the C ABI it comes back in `.param` space,
/// not through local memory).
#[repr(C)]
#[derive(Clone, Copy)]
struct WideWeight {
    hi: u128,
    lo: u128,
}

/// [`token_weight`]'s residual through one out-of-line copy: the draw's tile walk ran sixteen
/// inlined copies of it (two 256-bit products each) once a row, fetched cold.
#[inline(never)]
extern "C" fn residual_once(key: u64, mc: f32, infinite: u32, z: u128, qi: u64, q_total: u128) -> WideWeight {
    let r = residual_weight(key_weight_inline(key, mc, infinite), z, qi, q_total);
    WideWeight { hi: r.hi, lo: r.lo }
}

/// What a token adds to its tile's residual sum in [`draw`]'s first pass, split: `(W, q)`
/// when its residual weight is positive (`verify::residual_positive`), else `(0, 0)`. The
/// tile's sum is then `Q · ΣW − Z · Σq`, the same integer as the sum of [`token_weight`]s,
/// without two 256-bit products per token.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn residual_parts(sum: &Summary, w: Weights, r: &DraftRow, key: u64, floor: u64, q: f32, token: u32, q_total_f: f64, z_f: f64) -> (u128, u128) {
    if key == 0 || key < floor {
        return (0, 0);
    }
    let (frac, scale) = sum.weight_parts_of(key);
    let qi = if w.plain {
        0
    } else if r.q != 0 {
        draft_units(q)
    } else {
        (token == r.draft) as u64
    };
    if residual_positive(frac, scale, qi, w.q_total, w.z, q_total_f, z_f) {
        (frac as u128 * scale as u128, qi as u128)
    } else {
        (0, 0)
    }
}

/// [`sum_span`]'s band tables of a screened row: `E[d]` (`u64[NO_BAND]`) and `E[d] / Z` as f32
/// bits (`u32[NO_BAND]`), in the histogram region, which the draws never use otherwise.
const SM_DRAW_SCALES: u32 = SM_HIST;
const SM_DRAW_E_OVER_Z: u32 = SM_DRAW_SCALES + NO_BAND * 8;
const _: () = assert!(SM_DRAW_E_OVER_Z + NO_BAND * 4 <= SM_HIST_LO && NO_BAND as usize == BAND_SCALE.len());

/// [`residual_parts`] for a finite row with usable bands (`mc_i`, the integer ceiling of its
/// maximum), from the band tables instead of a weight and two f64 products per token: the
/// token's band and fraction (`fixed::band_and_fraction`, which gives the same `W` as
/// `weight_parts` there), its draft units, and `verify::residual_screen`, with the exact
/// 256-bit comparison ([`residual_exact`]) only where the screen declines. `(floor, fv)` is the
/// kept floor and its `floor_value`; `inv_q` is `1 / Q` as `ratio_f32` gives it.
///
/// # Safety
/// The band tables hold this row's `E[d]` and `E[d] / Z` (`sum_span`), published by a barrier.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn screened_parts(w: Weights, r: &DraftRow, x: f32, token: u32, (floor, fv): (u64, f32), q: f32, mc_i: i32, inv_q: f32) -> (u128, u128) {
    if !reaches_floor(x, token, floor, fv) {
        return (0, 0);
    }
    let (band, frac) = band_and_fraction(x, mc_i);
    if band >= NO_BAND {
        return (0, 0); // W = 0: never positive
    }
    // SAFETY: band < NO_BAND, inside both tables (the caller's barrier published them).
    let (e, e_over_z) = unsafe { (ld_shared_u64(smem(SM_DRAW_SCALES + band * 8)), f32::from_bits(ld_shared_u32(smem(SM_DRAW_E_OVER_Z + band * 4)))) };
    // `q · 2^63` is what `draft_units` truncates (the same product, so computed once).
    let (qi, qf) = if w.plain {
        (0, 0.0)
    } else if r.q != 0 {
        (draft_units(q), q * 9_223_372_036_854_775_808.0)
    } else {
        ((token == r.draft) as u64, 1.0)
    };
    let weight = frac as u128 * e as u128;
    let positive = match residual_screen(frac, e_over_z, qi, qf, inv_q) {
        Some(v) => v,
        None => residual_exact(weight, w.q_total, qi, w.z),
    };
    if positive {
        (weight, qi as u128)
    } else {
        (0, 0)
    }
}

// `screened_parts8` sums the weights in two u64 halves of `E[d]`: its high half must stay
// under 2^21.
const _: () = assert!({
    let mut i = 0;
    while i < BAND_SCALE.len() && BAND_SCALE[i] < 1 << 53 {
        i += 1;
    }
    i == BAND_SCALE.len()
});

/// [`screened_parts`] summed over a lane's eight tokens of a chunk (`base` the first's index):
/// `(ΣW, Σq)` over its positive tokens. The eight tokens are one basic block (weights, table
/// loads, `verify::residual_screen_code`, sums by selects), so their chains of arithmetic
/// overlap; tokens the screen cannot settle go through [`screened_parts`] afterwards, one at a
/// time (rare: a residual within 2^-16 of zero).
///
/// # Safety
/// As [`screened_parts`].
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn screened_parts8(w: Weights, r: &DraftRow, x: &[f32; 8], base: u32, (floor, fv): (u64, f32), q: &[f32; 8], mc_i: i32, inv_q: f32) -> (u128, u128) {
    // ΣW in two u64 halves of `E[d]` (`E[d] < 2^53`, `frac ≤ 2^23`: eight products of each
    // half fit), each token's fraction selected, not its 128-bit weight.
    let (mut w_lo, mut w_hi, mut sum_q) = (0u64, 0u64, 0u128);
    let mut unsure = 0u32;
    let with_q = !w.plain & (r.q != 0);
    unroll8!(J => {
        let token = base + J as u32;
        let (band, frac) = band_and_fraction(x[J], mc_i);
        let in_band = band < NO_BAND;
        let live = in_band & reaches_floor_flat(x[J], token, floor, fv);
        let slot = if in_band { band } else { 0 };
        // SAFETY: slot < NO_BAND, inside both tables (the caller's barrier published them).
        let (e, e_over_z) = unsafe { (ld_shared_u64(smem(SM_DRAW_SCALES + slot * 8)), f32::from_bits(ld_shared_u32(smem(SM_DRAW_E_OVER_Z + slot * 4)))) };
        // `screened_parts`' three cases as selects: a plain row's `(0, 0)`, a row with draft
        // probabilities, a one-hot draft.
        let drafted = (token == r.draft) as u64;
        let qi = if with_q { draft_units(q[J]) } else if w.plain { 0 } else { drafted };
        let qf = if with_q { q[J] * 9_223_372_036_854_775_808.0 } else if w.plain { 0.0 } else { 1.0 };
        let code = residual_screen_code(frac, e_over_z, qi, qf, inv_q);
        let positive = live & (code == SCREEN_POSITIVE);
        unsure |= ((live & (code == SCREEN_UNSURE)) as u32) << J;
        let f = if positive { frac } else { 0 } as u64;
        w_lo = w_lo.wrapping_add(f * (e as u32) as u64);
        w_hi = w_hi.wrapping_add(f * (e >> 32));
        sum_q = sum_q.wrapping_add(if positive { qi as u128 } else { 0 });
    });
    let mut sum_w = w_lo as u128 + ((w_hi as u128) << 32);
    while unsure != 0 {
        let j = unsure.trailing_zeros();
        unsure &= unsure - 1;
        // Constant indices only (a run-time index would put the arrays in local memory).
        let (mut xj, mut qj) = (x[0], q[0]);
        unroll8!(J => {
            if j == J as u32 {
                (xj, qj) = (x[J], q[J]);
            }
        });
        // SAFETY: forwarded.
        let (sw, sq) = unsafe { screened_parts(w, r, xj, base + j, (floor, fv), qj, mc_i, inv_q) };
        sum_w = sum_w.wrapping_add(sw);
        sum_q = sum_q.wrapping_add(sq);
    }
    (sum_w, sum_q)
}

/// `W·Q > q·Z` in 256 bits, out of line: the screen seldom declines, and eight inlined copies
/// of the products would sit in the draw's token loop.
#[inline(never)]
extern "C" fn residual_exact(weight: u128, q_total: u128, q: u64, z: u128) -> bool {
    U256::mul_wide(weight, q_total) > U256::mul_wide(q as u128, z)
}

/// The row's per-tile sums of draw `attempt` (0 or 1), `U256[MAX_TILES]` as four u64 each.
#[inline(always)]
fn tile_sums(p: &VerifyParams, row: u32, attempt: u32) -> *mut u64 {
    (p.row_scratch + row as u64 * VERIFY_ROW_SCRATCH_BYTES as u64 + VERIFY_ROW_HEAD_BYTES as u64 + attempt as u64 * MAX_TILES as u64 * 32)
        as *mut u64
}

/// The chunk maxima of `row` from `tile`'s first chunk (`VerifyParams::chunk_max`).
#[inline(always)]
fn chunk_maxima(p: &VerifyParams, row: u32, tile: u32) -> *mut u32 {
    (p.chunk_max + (row as u64 * p.tiles as u64 + tile as u64) * VERIFY_CHUNKS_PER_TILE as u64 * 4) as *mut u32
}

/// The weights of a pending row's draw: the residual where a draft was rejected, the plain
/// weights at the bonus row.
#[inline(always)]
fn draw_weights(plan: &Plan) -> Weights {
    if plan.d.draft != NO_DRAFT {
        Weights { z: plan.z, q_total: plan.q_total, plain: false }
    } else {
        Weights::PLAIN
    }
}

/// Sums draw weights `w` over keys ≥ the plan's floor for tiles `first .. first + n` of `row`,
/// and stores each tile's sum in the row's sums of `attempt`. Up to 16 tiles, each gets
/// `16 / n` warps, a warp every `16 / n`-th chunk of it; past 16, warp `w` takes local tiles
/// `w, w + 16, ...` whole. A warp skips the chunks whose largest key is under the floor (one
/// ballot over their maxima), so a truncated row reads only the chunks that hold kept tokens,
/// and it loads its next chunk while it sums the current one. One warp sum per (warp, tile),
/// then one thread per tile adds its parts. It ends with a barrier after the stores.
///
/// # Safety
/// The whole block calls it together; `1 ≤ n`, `first + n ≤ tiles`; the row is cached, its
/// chunk maxima written.
#[inline(always)]
unsafe fn sum_span(p: &VerifyParams, row: u32, first: u32, n: u32, plan: &Plan, w: Weights, attempt: u32) {
    const WARPS: u32 = SAMPLER_THREADS / 32;
    let tid = thread_idx_x();
    let (warp, lane) = (tid / 32, tid % 32);
    let per_tile = if n <= WARPS { WARPS / n } else { 1 };
    let at_once = WARPS / per_tile;
    let c0 = warp % per_tile;
    let owned = (VERIFY_CHUNKS_PER_TILE - c0).div_ceil(per_tile);
    let r = plan.d;
    let floor = plan.kept_floor;
    // (A chunk's keys all have `key >> 32 ≤` its maximum, which is 0 when none is valid.)
    let floor_hi = (floor >> 32) as u32;
    let with_q = r.q != 0 && !w.plain;
    let (q_total_f, z_f) = (u128_to_f64(w.q_total), u128_to_f64(w.z));
    // A finite row with usable bands (nearly every row) weighs its tokens from the band tables
    // and screens each residual in f32 (`screened_parts8`); others take `residual_parts`.
    let screened = !plan.sum.infinite_row() && bands_usable(plan.sum.mc);
    let mc_i = if screened { small_ceil(plan.sum.mc).1 } else { 0 };
    let (inv_q, fv) = (ratio_f32(1.0, q_total_f), floor_value(floor));
    // SAFETY (whole block; every branch below is warp-uniform: the warp's tiles, the ballot,
    // the chunk walk): tiles < p.tiles and their chunks are inside the cache, the chunk maxima
    // and the q row; SM_SORT holds a U256 per (tile, warp) slot (n · per_tile ≤ max(16, n) ≤
    // MAX_TILES of them), read after the barrier; the band tables are written by threads
    // below NO_BAND before a barrier (the last reads of the previous ones were before this
    // function's last barrier).
    unsafe {
        if screened {
            if let Some(&e) = BAND_SCALES.get(tid as usize) {
                st_shared_u64(smem(SM_DRAW_SCALES + tid * 8), e);
                st_shared_u32(smem(SM_DRAW_E_OVER_Z + tid * 4), ratio_f32(e as f64, z_f).to_bits());
            }
            sync_threads();
        }
        let mut t = warp / per_tile;
        while t < n {
            let tile = first + t;
            // (hi, lo) = (ΣW, Σq) over the positive tokens (`residual_parts`). Σq ≤ Q < 2^82,
            // so the U256 additions never carry from lo into hi.
            let mut mine = U256::ZERO;
            let top = if lane < owned { chunk_maxima(p, row, tile).add((c0 + lane * per_tile) as usize).read() } else { 0 };
            let mut pass = ballot(u32::MAX, lane < owned && top != 0 && top >= floor_hi);
            let base_of = |i: u32| tile * TILE_TOKENS + ((c0 + i * per_tile) * 32 + lane) * TOKENS_PER_THREAD;
            if pass != 0 {
                let mut i = pass.trailing_zeros();
                pass &= pass - 1;
                let mut x = cached8_at(p, row, base_of(i));
                let mut q = if with_q { load_q(p, &r, base_of(i)) } else { [0.0; 8] };
                loop {
                    let more = pass != 0;
                    let i_next = if more { pass.trailing_zeros() } else { i };
                    let (x_next, q_next) = if more {
                        (cached8_at(p, row, base_of(i_next)), if with_q { load_q(p, &r, base_of(i_next)) } else { [0.0; 8] })
                    } else {
                        (x, q)
                    };
                    let base = base_of(i);
                    if screened {
                        let (sw, sq) = screened_parts8(w, &r, &x, base, (floor, fv), &q, mc_i, inv_q);
                        mine.hi = mine.hi.wrapping_add(sw);
                        mine.lo = mine.lo.wrapping_add(sq);
                    } else {
                        let keys = keys8(&x, base);
                        unroll8!(J => {
                            let (sw, sq) = residual_parts(&plan.sum, w, &r, keys[J], floor, q[J], base + J as u32, q_total_f, z_f);
                            mine.hi = mine.hi.wrapping_add(sw);
                            mine.lo = mine.lo.wrapping_add(sq);
                        });
                    }
                    if !more {
                        break;
                    }
                    pass &= pass - 1;
                    (x, q, i) = (x_next, q_next, i_next);
                }
                mine = warp_sum_u256(mine);
            }
            if lane == 0 {
                st_shared_u256(smem(SM_SORT + (t * per_tile + c0) * 32), mine);
            }
            t += at_once;
        }
        sync_threads();
        if tid < n {
            let mut parts = U256::ZERO;
            let mut k = 0;
            while k < per_tile {
                parts = parts.wrapping_add(ld_shared_u256(smem(SM_SORT + (tid * per_tile + k) * 32)));
                k += 1;
            }
            // Σ max(0, W·Q − q·Z) = Q·ΣW − Z·Σq over the positive tokens.
            let total = U256::mul_wide(parts.hi, w.q_total).wrapping_sub(U256::mul_wide(parts.lo, w.z));
            let at = tile_sums(p, row, attempt).add((first + tid) as usize * 4);
            at.write(total.lo as u64);
            at.add(1).write((total.lo >> 64) as u64);
            at.add(2).write(total.hi as u64);
            at.add(3).write((total.hi >> 64) as u64);
        }
        // The slots are read before anything reuses them, and the sums stored before a count.
        sync_threads();
    }
}

const _: () = assert!(SM_SORT + MAX_TILES * 32 <= SM_END && MAX_TILES <= SAMPLER_THREADS);

/// The draw from the row's tile sums of `attempt`: the total `T`, the target
/// `floor(T · r64 / 2^64)`, then the first token in index order whose running sum exceeds it,
/// by a walk of the tile that holds the target. `None` when the total is 0; `Some(0)`
/// (defensively, no token) when the sums point at no tile.
///
/// # Safety
/// The whole block calls it together; every tile's sum of `attempt` is stored and ordered
/// before this block's reads (a device-scope count, or this block's own stores and barrier).
#[inline(always)]
unsafe fn pick(p: &VerifyParams, row: u32, plan: &Plan, w: Weights, r64: u64, attempt: u32) -> Option<u64> {
    let tid = thread_idx_x();
    let r = plan.d;
    let with_q = r.q != 0 && !w.plain;
    let sums = tile_sums(p, row, attempt);
    // SAFETY (whole block): one thread per tile (tiles ≤ MAX_TILES ≤ threads); the result slots
    // are in the sampler map; uniform branches.
    unsafe {
        let m = if tid < p.tiles {
            let at = sums.add(tid as usize * 4) as *const u64;
            U256 {
                lo: ((ld_relaxed_gpu_u64(at.add(1)) as u128) << 64) | ld_relaxed_gpu_u64(at) as u128,
                hi: ((ld_relaxed_gpu_u64(at.add(3)) as u128) << 64) | ld_relaxed_gpu_u64(at.add(2)) as u128,
            }
        } else {
            U256::ZERO
        };
        // One scan gives each tile's prefix and the total. RES_TILE starts as "none" before it:
        // every earlier read of the slot is behind a barrier, and the scan's barriers order
        // this store before the hit's.
        if tid == 0 {
            st_shared_u32(smem(RES_TILE), u32::MAX);
        }
        let (before, total) = block_exclusive_scan_u256(m);
        if total.is_zero() {
            return None;
        }
        let u = total.mul_frac64(r64);
        if tid < p.tiles && !m.is_zero() && before <= u && u < before.wrapping_add(m) {
            st_shared_u32(smem(RES_TILE), tid);
            st_shared_u256(smem(RES_REST), u.wrapping_sub(before));
        }
        sync_threads();
        let tile = ld_shared_u32(smem(RES_TILE));
        let rest = ld_shared_u256(smem(RES_REST));
        sync_threads();
        if tile >= p.tiles {
            // Unreachable with exact sums; no token rather than a wrong one.
            return Some(0);
        }
        if tid == 0 {
            st_shared_u64(smem(RES_PICK), 0);
        }
        sync_threads();
        // One tile: this thread's share, a scan, then its own tokens in index order.
        let base = tile_base(tile);
        let x = cached8(p, row, tile);
        let keys = keys8(&x, base);
        let q = if with_q { load_q(p, &r, base) } else { [0.0; 8] };
        let mut mine = U256::ZERO;
        unroll8!(J => {
            mine = mine.wrapping_add(token_weight(&plan.sum, w, &r, keys[J], plan.kept_floor, q[J], base + J as u32));
        });
        let (mut run, _) = block_exclusive_scan_u256(mine);
        // Only the thread whose span holds `rest` walks its tokens again: the other 511 weighed
        // theirs for nothing, and the weights' issue slots were most of the draw's time
        // (session 57's timestamps: `finish_draw` 12.8-13.6 µs at heterogeneous B = 8).
        if !mine.is_zero() && run <= rest && rest < run.wrapping_add(mine) {
            unroll8!(J => {
                let wj = token_weight(&plan.sum, w, &r, keys[J], plan.kept_floor, q[J], base + J as u32);
                let next = run.wrapping_add(wj);
                if !wj.is_zero() && run <= rest && rest < next {
                    st_shared_u64(smem(RES_PICK), keys[J]);
                }
                run = next;
            });
            let _ = run; // the eighth copy's update has no reader
        }
        sync_threads();
        let key = ld_shared_u64(smem(RES_PICK));
        sync_threads();
        Some(key)
    }
}

// ---------------------------------------------------------------------------------------------
// Stage 1: a group of blocks per target row.

/// Writes a row's result (thread 0 of the writing block: the group's leader, or the block
/// that drew).
#[inline(always)]
unsafe fn write_result(p: &VerifyParams, row: u32, writer: bool, token: i32, status: u32, accept: bool, lp_draft: f32, lp_token: f32) {
    if thread_idx_x() != 0 || !writer {
        return;
    }
    // SAFETY: row < rows ≤ the capacity of row_results; 16-byte aligned 32-byte entries.
    unsafe {
        let at = (p.row_results + row as u64 * 32) as *mut u32;
        st_global_v4_u32(at, [token as u32, status, accept as u32, lp_draft.to_bits()]);
        st_global_v4_u32(at.add(4), [lp_token.to_bits(), 0, 0, 0]);
    }
}

/// What a row's draw needs besides the request's settings: written by `verify_rows` where it
/// leaves the draw to `verify_draws`.
#[derive(Clone, Copy)]
struct Plan {
    kept_floor: u64,
    z: u128,
    q_total: u128,
    sum: Summary,
    ln_z: f64,
    /// The row's draft side (the draw's weights read `q` and `d_j`).
    d: DraftRow,
    /// The draw's random word ([`draw_word`]) and whether the row reports log-probabilities:
    /// the block that draws needs nothing else of the request.
    r64: u64,
    want_lp: bool,
}

/// The random word of a pending row's draw: stream 2 (the residual) at position `j` after a
/// rejected draft, stream 0 (the token) at the bonus row.
///
/// # Safety
/// `slot < slots`.
#[inline(always)]
unsafe fn draw_word(p: &VerifyParams, slot: u32, position: u32, draft: u32) -> u64 {
    // SAFETY: slot < slots (caller).
    let (seed, step) = unsafe { ((p.seeds as *const u64).add(slot as usize).read(), (p.steps as *const u64).add(slot as usize).read()) };
    random_u64_at(seed, step, if draft != NO_DRAFT { STREAM_SPEC_RESIDUAL } else { STREAM_TOKEN }, position)
}

/// Marks the row's draw as pending and stores its plan (thread 0 of the group's leader): ten
/// words, the 80 bytes `VERIFY_ROW_SCRATCH_BYTES` leaves for it.
///
/// # Safety
/// `row < rows`; the row scratch and results hold `rows` entries.
#[inline(always)]
unsafe fn write_pending(p: &VerifyParams, row: u32, leader: bool, plan: &Plan) {
    if thread_idx_x() != 0 || !leader {
        return;
    }
    // SAFETY: the row's 80-byte plan slot and its 32-byte result, both 16-byte aligned.
    unsafe {
        let at = (p.row_scratch + row as u64 * VERIFY_ROW_SCRATCH_BYTES as u64 + ROW_PLAN) as *mut u64;
        at.write(plan.kept_floor);
        at.add(1).write(plan.z as u64);
        at.add(2).write((plan.z >> 64) as u64);
        at.add(3).write(plan.q_total as u64);
        at.add(4).write((plan.q_total >> 64) as u64);
        at.add(5).write(plan.sum.mc.to_bits() as u64 | (plan.sum.infinite as u64) << 32);
        at.add(6).write(plan.ln_z.to_bits());
        at.add(7).write(plan.d.q);
        at.add(8).write(plan.d.draft as u64 | (plan.want_lp as u64) << 32);
        at.add(9).write(plan.r64);
        let result = (p.row_results + row as u64 * 32) as *mut u32;
        st_global_v4_u32(result, [NO_TOKEN as u32, STATUS_OK, 0, f32::NAN.to_bits()]);
        st_global_v4_u32(result.add(4), [f32::NAN.to_bits(), 1, 0, 0]);
    }
}

/// The plan [`write_pending`] stored (written by an earlier kernel).
///
/// # Safety
/// `row < rows`, and its draw is pending.
#[inline(always)]
unsafe fn read_plan(p: &VerifyParams, row: u32) -> Plan {
    // SAFETY: the row's plan slot.
    unsafe {
        let at = (p.row_scratch + row as u64 * VERIFY_ROW_SCRATCH_BYTES as u64 + ROW_PLAN) as *const u64;
        let packed = at.add(5).read();
        let draft_word = at.add(8).read();
        Plan {
            kept_floor: at.read(),
            z: ((at.add(2).read() as u128) << 64) | at.add(1).read() as u128,
            q_total: ((at.add(4).read() as u128) << 64) | at.add(3).read() as u128,
            sum: Summary { infinite: (packed >> 32) as u32, mc: f32::from_bits(packed as u32) },
            ln_z: f64::from_bits(at.add(6).read()),
            d: {
                let q = at.add(7).read();
                DraftRow { q, q_vector_ok: q % 16 == 0, draft: draft_word as u32 }
            },
            r64: at.add(9).read(),
            want_lp: draft_word >> 32 != 0,
        }
    }
}

/// Stage 1 of verification; see the module header.
///
/// # Safety
/// Launch cooperatively (every block co-resident), with `SAMPLER_THREADS` threads and
/// `VERIFY_ROWS_SHARED_BYTES` of dynamic shared memory (the bin histogram runs past the sampler
/// map); `group_scratch` holds one slot per block of the grid, its bin histograms zero; every
/// pointer in `p` is valid for the sizes `VerifyParams` documents; the rows' barrier and gather
/// counters are zero (as `verify_chains` leaves them).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn verify_rows(p: VerifyParams) {
    if block_dim_x() != SAMPLER_THREADS {
        return;
    }
    // SAFETY: the header; rows and requests are clipped to the buffers' capacities.
    let (requests, rows) = unsafe { active(&p) };
    if rows == 0 {
        return;
    }
    let grid = grid_dim_x();
    // SAFETY: the header has VERIFY_HEADER_WORDS words.
    let random = unsafe { (p.header as *const u32).add(VERIFY_HEADER_RANDOM as usize).read() };
    // SAFETY: chain_stats is one u64; the last call's verify_chains wrote it, and nothing
    // writes it before this grid is done (verify_draws zeroes it), so every block reads the same.
    let stop_early = chains_stop_early(unsafe { (p.chain_stats as *const u64).read() });
    let shape = group_shape(grid, block_idx_x(), rows, requests, random, p.tiles, stop_early);
    let (g, size) = (shape.g, shape.size);
    let mut item = shape.first;
    // Whole rows are items of `VerifyParams::row_order`: a block alone takes item b, then
    // whichever comes next when it is free (a counter in row 0's head, cleared by
    // `verify_chains`). Handed out every grid-th item, a block could meet a run of heavy rows
    // that the skip did not drop while others idled. Groups taking rows in turn do the same:
    // group i takes item i, then its leader takes the next from the counter and shares it
    // through a group barrier. Handed out every groups-th item, a group met one row of each
    // position, and a group whose rows all ran (accepted chains, or rows started before their
    // request's stop was known) took a round more than the others.
    // A block alone's item waits in shared memory while the row runs: held in a register, it
    // made ptxas spill 120 bytes more. A group in turn keeps its item in a register
    // and its SM_ITEM store goes unread; the kernel's spills stay within the PTX check's
    // allowance. (One call site: each
    // inlined copy of the row is 400 KB of SASS.)
    let next_row = head_word(p.row_scratch, 0, HEAD_NEXT_ROW);
    let mut epoch = 0u32;
    while item < rows {
        // SAFETY: item < rows, and the host writes `rows` entries; SM_ITEM is this loop's
        // alone, written by thread 0 before the row and after the first barrier below, and
        // read by all after the second, the third keeping the next write behind every read.
        // The counter is row 0's head word (rows > 0), which nothing else uses: blocks alone or
        // group leaders take from it, never both in one call.
        unsafe {
            let ordered = size == 1 || shape.stride > 0;
            let at = if ordered { (p.row_order as *const u32).add(item as usize).read() } else { item };
            let row = if at < rows { at } else { item };
            if thread_idx_x() == 0 {
                st_shared_u32(smem(SM_ITEM), item);
            }
            let mut grp = Group { row, g, size, first_block: block_idx_x() - g, in_turn: shape.stride > 0, barriers: 0, epoch };
            verify_row(&p, requests, rows, &mut grp);
            // (Read again, not kept across the row: kept, ptxas spilled 24 B more.)
            let wait = rows_wait(&p, size, shape.stride);
            if wait && g == 0 && thread_idx_x() == 0 {
                mark_first_row_decided(&p, row);
            }
            if size > 1 {
                if shape.stride == 0 {
                    break;
                }
                // The leader's next item, to every block of the group (the barrier of the
                // share also keeps every thread past the row before the next one's staging).
                // It counts on the finished row's barrier counter, which only this group uses.
                let next = if g == 0 && thread_idx_x() == 0 {
                    take_item(p.row_order, p.row_map, p.row_scratch, p.header, rows, next_row, shape.stride, wait)
                } else {
                    0
                };
                let w = grp.share(&p, [next as u64, 0, 0, 0, 0, 0]);
                epoch += grp.barriers;
                item = block_max_u64(w[0]) as u32;
                continue;
            }
            epoch += grp.barriers;
            sync_threads();
            if thread_idx_x() == 0 {
                // Waiting, as a group's leader does; else the row's own checks drop it.
                let next = if wait {
                    take_item(p.row_order, p.row_map, p.row_scratch, p.header, rows, next_row, grid, true)
                } else {
                    grid + atom_add_global_u32(next_row, 1)
                };
                st_shared_u32(smem(SM_ITEM), next);
            }
            sync_threads();
            item = ld_shared_u32(smem(SM_ITEM));
            sync_threads();
        }
    }
}

/// Whether rows handed out one at a time (blocks alone, `size == 1`, or groups taking rows in
/// turn, `stride > 0`) wait for their request's first row: where the last call's chains
/// mostly stopped at their first draft. Started at once, such rows were mostly dropped late or
/// not at all, and held their blocks past the rows that mattered (session 57: heterogeneous
/// B = 8 and 32 0.83-0.92x the time). A row waits for the first row only: waiting for every
/// earlier row ran a chain that accepts its first drafts one row at a time (heterogeneous
/// B = 32 and 128 up to 1.53x).
///
/// # Safety
/// `chain_stats` is as [`verify_rows`] found it (nothing writes it during the grid).
#[inline(always)]
unsafe fn rows_wait(p: &VerifyParams, size: u32, stride: u32) -> bool {
    // SAFETY: one u64 (caller).
    (size == 1 || stride > 0) && chains_stop_early(unsafe { (p.chain_stats as *const u64).read_volatile() })
}

/// The next item for a group's leader (thread 0) taking rows in turn: `base` plus the
/// counter's next value, passing over items whose rows lie past their request's known stop
/// ([`item_past_rejection`]; each counted as skipped in the header). Without it a group spent
/// two group barriers on each such item before dropping it (the item's share and the
/// rejection word's), and once a call's first rows stop their chains most items are such.
/// Blocks alone use it only to wait (`wait`, where the last call's chains mostly stopped at
/// their first draft): its four dependent loads, while the block waits, made all-greedy calls
/// about 1.03× slower (session 42, run 1), and their own check costs no group barrier.
/// With `wait`, an item's row waits for its request's first row ([`item_past_rejection`]).
///
/// Out of line, with scalar arguments (the call's buffers from `p`), so that its two callers
/// share one body: inlined twice, ptxas spilled 24 B more in `verify_rows`.
///
/// # Safety
/// `next_row` is row 0's counter; `order`, `map`, `scratch` and `header` are the call's
/// `row_order`, `row_map`, `row_scratch` and `header`, the order and map with `rows` entries.
#[inline(never)]
unsafe fn take_item(order: u64, map: u64, scratch: u64, header: u64, rows: u32, next_row: *mut u32, base: u32, wait: bool) -> u32 {
    // SAFETY: forwarded; one thread takes the item (and counts its skips).
    unsafe {
        let mut item = base + atom_add_global_u32(next_row, 1);
        while item < rows && item_past_rejection(order, map, scratch, rows, item, wait) {
            red_add_global_u32(skip_counter(header), 1);
            item = base + atom_add_global_u32(next_row, 1);
        }
        item
    }
}

/// Whether item `item` (< rows) of the position-major order is a row `j > 0` whose request's
/// rejection word already marks an earlier row: the same hint as [`past_rejection`], read
/// from the map (a row whose map entry is not its request's row `j`, which `verify_row`
/// reports, is never passed over). With `wait`, it first waits for the request's first row
/// ([`wait_for_first_row`]).
///
/// # Safety
/// `item < rows`; as for [`take_item`].
#[inline(always)]
unsafe fn item_past_rejection(order: u64, map: u64, scratch: u64, rows: u32, item: u32, wait: bool) -> bool {
    // SAFETY: entries below rows; the words are in a row's head (first_row < rows).
    unsafe {
        let row = (order as *const u32).add(item as usize).read();
        if row >= rows {
            return false;
        }
        let entry = (map + row as u64 * 8) as *const u32;
        let (request, position) = (entry.read(), entry.add(1).read());
        if position == 0 || position > row || position > VERIFY_MAX_DRAFTS {
            return false;
        }
        let first_row = row - position;
        let first = (map + first_row as u64 * 8) as *const u32;
        if first.read() != request || first.add(1).read() != 0 {
            return false;
        }
        let rejected = head_word(scratch, first_row, HEAD_REJECTED);
        if wait {
            return wait_for_first_row(head_word(scratch, first_row, HEAD_FIRST_DECIDED), rejected, position);
        }
        stops_before(ld_relaxed_gpu_u32(rejected), position)
    }
}

/// Word `word` of row `row`'s scratch head (`scratch`: the call's `row_scratch`).
#[inline(always)]
fn head_word(scratch: u64, row: u32, word: u32) -> *mut u32 {
    (scratch + row as u64 * VERIFY_ROW_SCRATCH_BYTES as u64 + word as u64 * 4) as *mut u32
}

/// Marks a request's first row as decided once it is done, whichever way it ended, after
/// whatever it marked in the rejection word (a release: a reader that acquires the flag sees
/// the mark). Thread 0 of the row's leader; other rows mark nothing.
///
/// # Safety
/// `row` is below the call's rows; the map holds an entry for it.
#[inline(always)]
unsafe fn mark_first_row_decided(p: &VerifyParams, row: u32) {
    // SAFETY: the row's own head (caller).
    unsafe {
        if ((p.row_map + row as u64 * 8) as *const u32).add(1).read() == 0 {
            red_add_release_gpu_u32(head_word(p.row_scratch, row, HEAD_FIRST_DECIDED), 1);
        }
    }
}

/// Nanoseconds a waiting row sleeps between two reads of its first row's flag.
const WAIT_SLEEP_NS: u32 = 128;
/// Most polls of one wait (a few milliseconds): the hint never holds a row for longer, whatever
/// the map says. With a map the host built, a request's first row was handed out before its other
/// rows and runs on a co-resident block that never waits, so the wait ends well before.
const WAIT_POLLS: u32 = 8192;

/// Waits (one thread) until the request's first row is decided (`flag`) or a row has stopped
/// the chain before row `position` (`rejected`), or [`WAIT_POLLS`] polls pass; returns whether
/// the chain is known to stop before `position`. Where chains mostly stop at their first draft,
/// that settles most rows; a chain that accepts its first draft likely runs on, and its rows
/// start together as before. Only a hint: a row that starts anyway computes what it would
/// have.
///
/// # Safety
/// `flag` and `rejected` are the request's words (its first row's head).
#[inline(never)]
unsafe fn wait_for_first_row(flag: *mut u32, rejected: *mut u32, position: u32) -> bool {
    let mut polls = 0u32;
    // SAFETY: the caller's words; the acquire orders the rejection word's read after the flag.
    unsafe {
        loop {
            let decided = ld_acquire_gpu_u32(flag) != 0;
            if stops_before(ld_relaxed_gpu_u32(rejected), position) {
                return true;
            }
            if decided || polls >= WAIT_POLLS {
                return false;
            }
            nanosleep(WAIT_SLEEP_NS);
            polls += 1;
        }
    }
}

/// Rejection words hold `REJECTED_BASE - j` for a row `j` that accepted nothing, so their
/// maximum marks the earliest such row (0: none yet).
const REJECTED_BASE: u32 = VERIFY_MAX_DRAFTS + 1;

/// The request's rejection word: `HEAD_REJECTED` of its first row's head.
#[inline(always)]
fn rejected_word(p: &VerifyParams, first_row: u32) -> *mut u32 {
    head_word(p.row_scratch, first_row, HEAD_REJECTED)
}

/// Whether a rejection word's value `word` marks a row before row `position` (every reader's
/// test, whichever way it read the word).
#[inline(always)]
fn stops_before(word: u32, position: u32) -> bool {
    word > REJECTED_BASE - position
}

/// The call's count of dropped rows: header word 3, which `GpuVerifier::skipped_rows` reads
/// back (`header`: the call's `VerifyParams::header`).
#[inline(always)]
fn skip_counter(header: u64) -> *mut u32 {
    (header as *mut u32).wrapping_add(3)
}

/// Whether the request's rejection word, read now, marks a row before row `position`: the
/// hint every drop of a row past its chain's stop reads.
///
/// # Safety
/// `first_row` is the request's first row (< rows).
#[inline(always)]
unsafe fn chain_stopped_before(p: &VerifyParams, first_row: u32, position: u32) -> bool {
    // SAFETY: the word is in the first row's scratch head (caller).
    unsafe { stops_before(ld_relaxed_gpu_u32(rejected_word(p, first_row)), position) }
}

/// Counts one dropped row in the call's header ([`skip_counter`]).
///
/// # Safety
/// `p.header` is the call's header; one thread per dropped row calls it.
#[inline(always)]
unsafe fn count_skipped(p: &VerifyParams) {
    // SAFETY: header word 3 is the call's skip counter (caller).
    unsafe { red_add_global_u32(skip_counter(p.header), 1) };
}

/// Records that the request's chain stops at or before row `position` (a draft rejected or not
/// decided here, a greedy mismatch, a row error): thread 0 of the leader, a relaxed
/// device-scope maximum. It is a hint: it only lets later rows of the same request skip work
/// (`past_rejection`), and no decision reads it.
///
/// # Safety
/// `first_row` is the request's first row (< rows); `position ≤ VERIFY_MAX_DRAFTS`.
#[inline(always)]
unsafe fn mark_rejected(p: &VerifyParams, first_row: u32, position: u32, leader: bool) {
    if thread_idx_x() == 0 && leader {
        // SAFETY: the word is in the first row's scratch head (caller).
        unsafe { red_max_relaxed_gpu_u32(rejected_word(p, first_row), REJECTED_BASE - position) };
    }
}

/// Whether this block may drop row `position` because an earlier row of its request already
/// stopped the chain: `verify_chains` and `verify_draws` read a chain only up to its first
/// non-accepted row, so nothing reads a row after it. This is the test of a block that holds a
/// whole row (`grp.size == 1`; groups taking rows in turn have [`group_past`]); the answer is
/// block-uniform (thread 0 reads it and broadcasts it through shared memory), so the block's
/// barriers stay uniform. A skipped row is counted in the header.
///
/// # Safety
/// The whole block calls it; `first_row` is the request's first row (< rows).
#[inline(always)]
unsafe fn past_rejection(p: &VerifyParams, grp: &Group, first_row: u32, position: u32) -> bool {
    if grp.size != 1 || position == 0 {
        return false;
    }
    // SAFETY (whole block): the word is in the first row's head.
    unsafe {
        if thread_idx_x() == 0 {
            let skip = chain_stopped_before(p, first_row, position);
            if skip {
                count_skipped(p);
            }
            st_shared_u32(smem(SM_SKIP), skip as u32);
        }
        sync_threads();
        let skip = ld_shared_u32(smem(SM_SKIP)) != 0;
        // The next check's store waits for every read of this one.
        sync_threads();
        skip
    }
}

/// [`past_rejection`] through one out-of-line copy ([`lone_block_stopped`]), for the checks
/// after a row's first pass and after its bin histogram. (The row-start check stays inline:
/// with all three out of line, ptxas spilled 28 B more and all-greedy calls, which make two
/// checks a short row, were 1.008-1.019x slower; session 45.)
///
/// # Safety
/// As for [`past_rejection`].
#[inline(always)]
unsafe fn past_rejection_later(p: &VerifyParams, grp: &Group, first_row: u32, position: u32) -> bool {
    if grp.size != 1 || position == 0 {
        return false;
    }
    // SAFETY (whole block): the word is in the first row's head; header word 3 counts skips.
    unsafe { lone_block_stopped(rejected_word(p, first_row), REJECTED_BASE - position, skip_counter(p.header)) }
}

/// A block alone's check of its chain's stop, out of line, with scalar arguments: the check
/// after a bin histogram inlined (a third inline copy, or one `barrier.red.or`) made ptxas
/// spill about 140 B more in the row's setup and every other call up to 1.6% slower (session
/// 44); out of line, `verify_rows` spills 4 B less than without it (session 45). Its body is
/// [`past_rejection`]'s, written out twice: with one inline body for both, the PTX changed
/// (session 45's review), and the build measured and tested is this one.
///
/// # Safety
/// The whole block calls it; `word` is the request's rejection word, `skips` the header's skip
/// counter.
#[inline(never)]
unsafe fn lone_block_stopped(word: *mut u32, above: u32, skips: *mut u32) -> bool {
    // SAFETY (whole block): thread 0 alone reads the word and counts the skip, then broadcasts.
    unsafe {
        if thread_idx_x() == 0 {
            let skip = ld_relaxed_gpu_u32(word) > above;
            if skip {
                red_add_global_u32(skips, 1);
            }
            st_shared_u32(smem(SM_SKIP), skip as u32);
        }
        sync_threads();
        let skip = ld_shared_u32(smem(SM_SKIP)) != 0;
        // The next check's store waits for every read of this one.
        sync_threads();
        skip
    }
}

/// Whether a group taking rows in turn may drop row `position`, from the largest of its
/// blocks' reads of the request's rejection word (`seen`, shared through a group barrier, so
/// every block of the group decides alike). The leader counts the skip in the header.
///
/// # Safety
/// The whole block calls it, and every block of the group with the same `seen`.
#[inline(always)]
unsafe fn group_past(p: &VerifyParams, grp: &Group, seen: u32, position: u32) -> bool {
    let skip = grp.in_turn && position > 0 && stops_before(seen, position);
    if skip && grp.leader() && thread_idx_x() == 0 {
        // SAFETY: the call's header; the leader's thread 0 alone.
        unsafe { count_skipped(p) };
    }
    skip
}

/// One target row, by one block of its group.
///
/// # Safety
/// As for [`verify_rows`]; `grp.row < rows`; the whole block calls it, and every block of the
/// group with the same row.
#[inline(always)]
unsafe fn verify_row(p: &VerifyParams, requests: u32, rows: u32, grp: &mut Group) {
    let row = grp.row;
    let tid = thread_idx_x();
    let leader = grp.leader();
    // SAFETY: row < rows: one (request, position) pair of the map.
    let (request, position) = unsafe {
        let map = (p.row_map + row as u64 * 8) as *const u32;
        (map.read(), map.add(1).read())
    };
    // SAFETY (whole block from here on; every branch below depends only on values every
    // thread, and every block of the group, reads or combines alike, so barriers stay
    // uniform): reads stay inside the buffers that VerifyParams describes once `request_ok`
    // and the id checks hold.
    unsafe {
        if request >= requests {
            write_result(p, row, leader, NO_TOKEN, STATUS_INVALID_SETTINGS, false, f32::NAN, f32::NAN);
            return;
        }
        let vs = read_settings(p, request);
        let s = vs.row;
        if !request_ok(p, &vs, rows) || position > vs.drafts || vs.first_row + position != row {
            write_result(p, row, leader, NO_TOKEN, STATUS_INVALID_SETTINGS, false, f32::NAN, f32::NAN);
            return;
        }
        // Stage the drafts (all of them are checked, so every row of a request agrees).
        let mut bad = 0u32;
        if tid < vs.drafts {
            let d = (p.drafts as *const u32).add((request * p.max_drafts + tid) as usize).read();
            bad += (d >= p.vocab) as u32;
            st_shared_u32(smem(SM_DRAFTS + tid * 4), d);
        }
        let mut i = tid;
        while i < s.bias_len {
            let token = (p.bias_tokens as *const u32).add((s.bias_offset + i) as usize).read();
            bad += (token >= p.vocab) as u32;
            i += SAMPLER_THREADS;
        }
        // (Its barriers also publish SM_DRAFTS.)
        if block_sum_u32(bad) != 0 {
            write_result(p, row, leader, NO_TOKEN, STATUS_INVALID_SETTINGS, false, f32::NAN, f32::NAN);
            return;
        }
        // Rows past a known rejection are dropped here and again after the first pass, and a
        // binned row once more after its bin histogram.
        // (From the row, not `vs`: `row` and `position` stay live anyway.)
        let first_row = row - position;
        if past_rejection(p, grp, first_row, position) {
            return;
        }
        let greedy = s.temperature == 0.0;
        let draft = if position < vs.drafts { ld_shared_u32(smem(SM_DRAFTS + position * 4)) } else { NO_DRAFT };
        let penalties = has_penalties(&s);
        let element: u64 = if p.dtype == DTYPE_F32 { 4 } else { 2 };
        let logits = p.logits + row as u64 * p.row_stride * element;
        let r = VRow {
            bias_offset: s.bias_offset,
            bias_len: s.bias_len,
            params: LogitParams {
                repetition: s.repetition_penalty,
                frequency: s.frequency_penalty,
                presence: s.presence_penalty,
                temperature: s.temperature,
            },
            logits,
            vector_ok: logits % 16 == 0,
            counts: if penalties { p.counts + s.slot as u64 * p.counts_stride as u64 * 4 } else { 0 },
            extra: if penalties { position } else { 0 },
            bitmask: if s.flags & ROW_HAS_BITMASK != 0 { p.bitmask + row as u64 * p.bitmask_words as u64 * 4 } else { 0 },
            d: DraftRow::new(p, &vs, position, draft, greedy),
        };
        let want_lp = s.flags & ROW_WANT_LOGPROB != 0;

        // Pass 1 over the group's tiles, caching the processed values: maximum, valid and +inf
        // counts, the draft's key, and Q = Σ q_i. A greedy row without log-probabilities reads
        // nothing back (no mass, no selection, never a draw), so it caches nothing.
        let cached = !greedy || want_lp;
        // Rows with no bias, bitmask or penalties take a loop of their own: the general prologue
        // costs branches per token that such rows (every row of many batches) would pay.
        let plain = r.bias_len == 0 && r.bitmask == 0 && r.counts == 0;
        let scale = temper_scale(r.params.temperature);
        let (mut max_key, mut valid, mut infinite, mut draft_key, mut q_sum) = (0u64, 0u32, 0u32, 0u64, 0u128);
        // A row whose mass is every key's (no selection, no min-p floor: random rows that
        // truncate nothing, greedy rows with log-probabilities) adds it up in this pass, under
        // each warp's running ceiling (`add_to_running_bands`), when the block's tiles fit the
        // band sums: no second pass over the cache.
        let pass_bands = cached
            && (if greedy { want_lp } else { s.top_k == 0 && top_p_disabled(s.top_p) && !(s.min_p > 0.0) })
            && p.tiles.div_ceil(grp.size) <= PASS_BAND_TILES;
        let mut ceiling = f32::NEG_INFINITY;
        if pass_bands {
            clear_band_column();
        }
        // The next tile's logits are requested before this one is processed, and the tiles
        // after it, of the logits and of q (loaded after the prologue, so not a tile ahead),
        // are asked of L2, as `for_each_cached_tile!` does; before the loop, the logits' tiles
        // between those two (none at `PREFETCH_AHEAD` = 2) and q's first two.
        let mut tile = grp.g;
        let mut k = 2;
        while k < PREFETCH_AHEAD {
            prefetch_tile(p.vocab, r.logits, element, tile + k * grp.size, 0);
            k += 1;
        }
        if r.d.q != 0 {
            prefetch_tile(p.vocab, r.d.q, 4, tile, 256);
            prefetch_tile(p.vocab, r.d.q, 4, tile + grp.size, 384);
        }
        let mut raw = load_raw(p, r.logits, r.vector_ok, tile_base(tile));
        while tile < p.tiles {
            let base = tile_base(tile);
            let next = tile + grp.size;
            let ahead = if next < p.tiles { load_raw(p, r.logits, r.vector_ok, tile_base(next)) } else { raw };
            prefetch_tile(p.vocab, r.logits, element, tile + PREFETCH_AHEAD * grp.size, 0);
            if r.d.q != 0 {
                prefetch_tile(p.vocab, r.d.q, 4, tile + (PREFETCH_AHEAD - 1) * grp.size, 256);
            }
            let x = if plain { plain8(&raw, scale) } else { process8(p, &r, tile, raw) };
            raw = ahead;
            if cached {
                store_cached8(p, row, tile, &x);
            }
            // The thread's largest key from float compares: the values are never NaN nor -0,
            // so `>` orders them as their keys do, and keeping the first of equal values keeps
            // the lower index. One key per thread and tile instead of eight 64-bit keys and
            // compares; the draft's key only in the thread that holds it.
            let (mut best, mut best_j) = (f32::NEG_INFINITY, 0u32);
            each8(|j| {
                if x[j] > best {
                    best = x[j];
                    best_j = j as u32;
                }
                valid += (x[j] > f32::NEG_INFINITY) as u32;
                infinite += (x[j] == f32::INFINITY) as u32;
            });
            let top = if best > f32::NEG_INFINITY { sort_key(best, base + best_j) } else { 0 };
            if draft.wrapping_sub(base) < TOKENS_PER_THREAD {
                each8(|j| {
                    if base + j as u32 == draft && x[j] > f32::NEG_INFINITY {
                        draft_key = sort_key(x[j], draft);
                    }
                });
            }
            max_key = if top > max_key { top } else { max_key };
            if cached {
                // The chunk's largest key (its value half), for the draws' skip of chunks
                // under the kept floor. (The loop is block-uniform: the warp is converged.)
                let chunk_top = redux_max_sync(u32::MAX, (top >> 32) as u32);
                if tid % 32 == 0 {
                    chunk_maxima(p, row, tile).add((tid / 32) as usize).write(chunk_top);
                }
                if pass_bands {
                    add_to_running_bands(&mut ceiling, chunk_top, &x);
                }
            }
            if r.d.q != 0 {
                let qv = load_q(p, &r.d, base);
                each8(|j| q_sum += draft_units(qv[j]) as u128);
            }
            tile = next;
        }
        // valid < 2^32 per block and over the group (≤ vocab), so the packed sum carries nothing.
        let mut pass = block_fold_pass1(Pass1 { max_key, counts: valid as u64 | (infinite as u64) << 32, draft_key, q_sum, seen: 0 });
        if grp.size > 1 {
            // (Its barrier also publishes the cache to the group.) Each block adds its read of
            // the request's rejection word; the word only grows, so the largest read is one
            // every block of the group takes.
            let seen = if tid == 0 && grp.in_turn && position > 0 { ld_relaxed_gpu_u32(rejected_word(p, first_row)) } else { 0 };
            let w = grp.share(p, [pass.max_key, pass.counts, pass.draft_key, pass.q_sum as u64, (pass.q_sum >> 64) as u64, seen as u64]);
            pass = block_fold_pass1(Pass1 { max_key: w[0], counts: w[1], draft_key: w[2], q_sum: ((w[4] as u128) << 64) | w[3] as u128, seen: w[5] });
        }
        let (max_key, counts, draft_key, q_sum, group_rejection) = (pass.max_key, pass.counts as u128, pass.draft_key, pass.q_sum, pass.seen as u32);
        let infinite = (counts >> 32) as u32;
        let q_total = if r.d.q != 0 { q_sum } else { 1 };
        if max_key == 0 {
            write_result(p, row, leader, NO_TOKEN, STATUS_NO_VALID_TOKEN, false, f32::NAN, f32::NAN);
            mark_rejected(p, first_row, position, leader);
            return;
        }
        if past_rejection_later(p, grp, first_row, position) || group_past(p, grp, group_rejection, position) {
            return;
        }
        let sum = Summary { infinite, mc: if infinite > 0 { 0.0 } else { soft_ceil(key_value(max_key)) } };

        // Each inlined copy of a pass costs tens of kilobytes of PTX (the bundle has a size
        // budget), so `count_masses` and `draw` have one call site each; `select_exact` keeps
        // two (with a runtime target, ptxas spills).
        // K1 = keys ≥ floor1: min-p is a key bound; top-k a count selection on top of it.
        let floor_m = if greedy { 1 } else { min_p_floor(max_key, s.min_p) };
        // A finite row that selects (top-k or top-p) places its boundaries by value bins in the
        // pass that adds up its masses; the others add them up alone.
        let binned = !greedy && (s.top_k != 0 || !top_p_disabled(s.top_p)) && !sum.infinite_row() && bands_usable(sum.mc);
        let choice = if binned {
            // The row is dropped here if its chain stopped while the histogram ran: a group
            // taking rows in turn by the count its blocks exchange, a block alone by its own
            // check (heterogeneous B = 128 0.895x, session 45). (A watch of the word through
            // the first pass cost greedy calls 8-14%, session 43.)
            if bin_histogram(p, grp, &sum, floor_m, position) {
                if leader && tid == 0 {
                    count_skipped(p);
                }
                return;
            }
            if past_rejection_later(p, grp, first_row, position) {
                return;
            }
            Some(choose_bins(s.top_k, s.top_p))
        } else {
            None
        };
        // (One call site: each inlined copy of a pass is tens of kilobytes.) A binned row counts
        // again only for the mass under a min-p floor, which its log-probabilities need.
        // A row that added its bands in the first pass weighs them (what `count_masses` finds
        // for it: every key counts, and the mass under the floor is the whole mass).
        let counted = if pass_bands && !sum.infinite_row() && bands_usable(sum.mc) {
            let all = running_band_mass(p, grp, ceiling, sum.mc);
            (counts as u32, all, all)
        } else if (!binned && (!greedy || want_lp)) || (binned && want_lp && floor_m > 1) {
            count_masses(p, grp, &sum, floor_m, counts as u32)
        } else {
            (0, 0, 0)
        };
        let (n_m, z_m, z_all) = match choice {
            Some(c) => (c.b.n_m, c.b.z_m, if floor_m > 1 { counted.2 } else { c.b.z_m }),
            None => counted,
        };
        let ln_z = if !want_lp {
            0.0
        } else if sum.infinite_row() {
            0.0
        } else {
            ln_mass(z_all)
        };
        let lp_of = |key: u64| if want_lp { sum.logprob_of(key, ln_z) } else { f32::NAN };

        if greedy {
            let top = key_index(max_key);
            let accept = draft != NO_DRAFT && draft == top;
            let lp = lp_of(max_key);
            write_result(p, row, leader, top as i32, STATUS_OK, accept, lp, lp);
            if !accept {
                mark_rejected(p, first_row, position, leader);
            }
            return;
        }

        // Selections: top-k (a count) on K_m, then top-p (a mass) on K1; from the boundary bins
        // when they fit the list, else by radix levels.
        let (mut kept_floor, mut z, mut by_radix) = (0u64, 0u128, true);
        if let Some(c) = choice {
            if c.fits {
                match select_binned(p, grp, &sum, floor_m, &c, s.top_p) {
                    Some((floor, mass)) => (kept_floor, z, by_radix) = (floor, mass, false),
                    None => {
                        write_result(p, row, leader, NO_TOKEN, STATUS_NO_VALID_TOKEN, false, f32::NAN, f32::NAN);
                        mark_rejected(p, first_row, position, leader);
                        return;
                    }
                }
            }
        }
        if by_radix {
            let k1 = if s.top_k == 0 || s.top_k > n_m { n_m } else { s.top_k };
            let (floor1, z1) = if k1 < n_m { select_exact(p, grp, &sum, floor_m, Target::Count(k1), 0) } else { (floor_m, z_m) };
            (kept_floor, z) = if top_p_disabled(s.top_p) {
                (floor1, z1)
            } else {
                select_exact(p, grp, &sum, floor1, Target::Mass { total: z1, p24: top_p_units(s.top_p) }, 1)
            };
        }

        if draft != NO_DRAFT {
            // SAFETY: slot < slots (request_ok).
            let (seed, step) = ((p.seeds as *const u64).add(s.slot as usize).read(), (p.steps as *const u64).add(s.slot as usize).read());
            let w_d = if draft_key != 0 && draft_key >= kept_floor { sum.weight_of(draft_key) } else { 0 };
            let q_d = if r.d.q != 0 {
                draft_units(((r.d.q + draft as u64 * 4) as *const f32).read())
            } else {
                1
            };
            if spec_accept(w_d, z, q_d, q_total, random_u64_at(seed, step, STREAM_SPEC_ACCEPT, position)) {
                write_result(p, row, leader, draft as i32, STATUS_OK, true, lp_of(draft_key), f32::NAN);
                return;
            }
        }
        // Rejected, or the bonus row: the token is drawn only if the chain stops here, which
        // `verify_draws` decides once every row's accept test is in.
        // (Only the thread that writes the plan needs the word.)
        let r64 = if tid == 0 && leader { draw_word(p, s.slot, position, draft) } else { 0 };
        write_pending(p, row, leader, &Plan { kept_floor, z, q_total, sum, ln_z, d: r.d, r64, want_lp });
        mark_rejected(p, first_row, position, leader);
    }
}

// ---------------------------------------------------------------------------------------------
// Stage 2: the one draw a request's chain needs.

/// Where `verify_draws` lists the drawing rows of a window of requests (`u32` rows): the bias
/// table's place, which the draws do not use.
const SM_DRAW_LIST: u32 = SM_BIAS;
/// Requests per window of the list.
const DRAW_WINDOW: u32 = (SM_SORT - SM_BIAS) / 4;
const _: () = assert!(DRAW_WINDOW % SAMPLER_THREADS == 0 && DRAW_WINDOW < 1 << 16);

/// Stage 2 of verification: for each request, the row where its chain stops (the first
/// rejected draft, or the bonus row after `n` accepted ones) gets its draw: the residual draw
/// (stream 2 at `j`; if the residual is empty, `p_j = q_j` exactly, the plain draw with the same
/// word), or the bonus draw (stream 0 at position `n`). Rows past the stop are never drawn.
///
/// The work goes by tiles, not by requests: every block lists the drawing rows alike
/// ([`list_drawing_rows`]), and the rows' tiles, in spans of [`draw_span`] tiles, are items that
/// blocks take as `verify_rows` takes whole rows (block `b` item `b`, then the next from a
/// counter in row 0's head). A block sums its item's tiles into the row's scratch and counts
/// them; the block that counts a row's last tile draws it ([`finish_draw`]). So a row with
/// full support spreads over the grid while a truncated one costs a few chunks, and no block
/// waits for another.
///
/// # Safety
/// As for [`verify_rows`], except that `SAMPLER_SHARED_BYTES` of dynamic shared memory is
/// enough and nothing waits on other blocks; launched after it on the same stream (its row
/// results, plans, cache and chunk maxima are complete); the row heads' draw words are zero
/// (as `verify_chains` leaves them).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn verify_draws(p: VerifyParams) {
    if block_dim_x() != SAMPLER_THREADS {
        return;
    }
    if block_idx_x() == 0 && thread_idx_x() == 0 {
        // SAFETY: chain_stats is one u64. Every verify_rows block has read it (the grid before
        // this one), and this call's verify_chains counts into it after this grid.
        unsafe { (p.chain_stats as *mut u64).write_volatile(0) };
    }
    // SAFETY: the header; rows and requests are clipped to the buffers' capacities.
    let (requests, rows) = unsafe { active(&p) };
    if requests == 0 || rows == 0 || p.tiles == 0 {
        return;
    }
    let tid = thread_idx_x();
    let grid = grid_dim_x();
    let next_item = head_word(p.row_scratch, 0, HEAD_NEXT_DRAW_TILE);
    // SAFETY (whole block): every block lists the same rows (see `list_drawing_rows`), so items
    // mean the same rows and tiles everywhere; the list and SM_ITEM are this loop's, each
    // rewrite behind a barrier after the last read; the counter is row 0's head word (rows > 0).
    unsafe {
        let mut window = 0;
        let (mut listed, wide) = list_drawing_rows(&p, window, requests, rows);
        let mut span = draw_span(listed, wide, p.tiles, grid);
        let mut per_row = p.tiles.div_ceil(span);
        // Items of the earlier windows.
        let mut offset = 0u32;
        let mut item = block_idx_x();
        loop {
            while item >= offset + listed * per_row {
                offset += listed * per_row;
                window += DRAW_WINDOW;
                if window >= requests {
                    return;
                }
                let (l, w) = list_drawing_rows(&p, window, requests, rows);
                listed = l;
                span = draw_span(listed, w, p.tiles, grid);
                per_row = p.tiles.div_ceil(span);
            }
            // The next item is asked for now, and read once this one is done.
            let next = if tid == 0 { atom_add_global_u32(next_item, 1) } else { 0 };
            let local = item - offset;
            let row = ld_shared_u32(smem(SM_DRAW_LIST + (local / per_row) * 4));
            let first = (local % per_row) * span;
            let n = if p.tiles - first < span { p.tiles - first } else { span };
            draw_item(&p, row, first, n);
            sync_threads();
            if tid == 0 {
                st_shared_u32(smem(SM_ITEM), grid + next);
            }
            sync_threads();
            item = ld_shared_u32(smem(SM_ITEM));
            sync_threads();
        }
    }
}

/// The row where `request`'s chain stops, when that row's token is left to a draw.
///
/// # Safety
/// `request < requests`; `verify_rows` of this call has finished.
#[inline(always)]
unsafe fn drawing_row(p: &VerifyParams, request: u32, rows: u32) -> Option<u32> {
    // SAFETY: request_ok keeps the walk inside the request's rows; row results were written by
    // verify_rows for every row up to the chain's stop.
    unsafe {
        let vs = read_settings(p, request);
        if !request_ok(p, &vs, rows) {
            return None; // verify_chains reports it
        }
        let mut j = 0;
        let mut res = read_row_result(p, vs.first_row);
        while res.status == STATUS_OK && res.accept != 0 && j < vs.drafts {
            j += 1;
            res = read_row_result(p, vs.first_row + j);
        }
        // (Not the status: a draw that finds no token changes it, and it keeps `pending`.)
        if res.pending != 0 {
            Some(vs.first_row + j)
        } else {
            None // decided already (greedy, accepted, or a row error)
        }
    }
}

/// Lists at `SM_DRAW_LIST`, in request order, the drawing rows ([`drawing_row`]) of requests
/// `window ..` (at most `DRAW_WINDOW` of them); returns how many, and how many of them are wide
/// (no kept floor: every chunk is summed). Every block gets the same list whenever it looks:
/// accepted rows are never drawn, and a draw keeps its row's `pending`.
///
/// # Safety
/// The whole block calls it together; `window < requests`; nothing reads the previous list
/// any more.
#[inline(always)]
unsafe fn list_drawing_rows(p: &VerifyParams, window: u32, requests: u32, rows: u32) -> (u32, u32) {
    let tid = thread_idx_x();
    let end = if requests - window < DRAW_WINDOW { requests } else { window + DRAW_WINDOW };
    let (mut listed, mut wide) = (0, 0);
    let mut at = window;
    // SAFETY (whole block): uniform loop; positions < DRAW_WINDOW inside the list; the scan's
    // barriers order earlier reads before these stores, the last one these stores before reads.
    unsafe {
        while at < end {
            let request = at + tid;
            let row = if request < end { drawing_row(p, request, rows) } else { None };
            // The plan's first word is the kept floor.
            let is_wide = match row {
                Some(row) => ((p.row_scratch + row as u64 * VERIFY_ROW_SCRATCH_BYTES as u64 + ROW_PLAN) as *const u64).read() >> 32 == 0,
                None => false,
            };
            // Packed: the rows found below bit 16 (< DRAW_WINDOW), the wide ones above.
            let (before, found) = block_exclusive_scan_u32(row.is_some() as u32 | (is_wide as u32) << 16);
            if let Some(row) = row {
                st_shared_u32(smem(SM_DRAW_LIST + (listed + (before & 0xffff)) * 4), row);
            }
            listed += found & 0xffff;
            wide += found >> 16;
            at += SAMPLER_THREADS;
        }
        sync_threads();
    }
    (listed, wide)
}

/// Tiles `first .. first + n` of drawing row `row`: their sums, then, in the block that counts
/// the row's last tile, the draw.
///
/// # Safety
/// The whole block calls it together; `row` is listed; `1 ≤ n`, `first + n ≤ tiles`, and no
/// other item covers these tiles.
#[inline(always)]
unsafe fn draw_item(p: &VerifyParams, row: u32, first: u32, n: u32) {
    // SAFETY (whole block): the plan was written by verify_rows; the counter is the row's head
    // word, zero at launch, counting each tile once.
    unsafe {
        let plan = read_plan(p, row);
        let w = draw_weights(&plan);
        sum_span(p, row, first, n, &plan, w, 0);
        let mut last = false;
        if thread_idx_x() == 0 {
            let done = head_word(p.row_scratch, row, HEAD_DRAW_TILES_DONE);
            // The fence orders the block's sums (stored before `sum_span`'s last barrier) before
            // the count; the last counter's fence orders every block's sums before its reads.
            fence_acq_rel_gpu();
            last = atom_add_global_u32(done, n) + n == p.tiles;
            if last {
                fence_acq_rel_gpu();
            }
        }
        if sync_threads_or(last) {
            finish_draw(p, row, &plan, w);
        }
    }
}

/// The draw of a row whose tile sums are all in, and its result.
///
/// # Safety
/// The whole block calls it together; every tile sum of the row's first attempt is stored and
/// ordered before this block's reads.
#[inline(always)]
unsafe fn finish_draw(p: &VerifyParams, row: u32, plan: &Plan, w: Weights) {
    // SAFETY (whole block): forwarded; the plan carries the draw's word.
    unsafe {
        // (One call site of `pick`: each inlined copy is tens of kilobytes of SASS.)
        let (mut w, mut attempt) = (w, 0);
        let key = loop {
            match pick(p, row, plan, w, plan.r64, attempt) {
                None if !w.plain => {
                    // An empty residual means p_j = q_j exactly: the plain draw with the same
                    // word, by this block alone (real drafts never get here).
                    (w, attempt) = (Weights::PLAIN, 1);
                    sum_span(p, row, 0, p.tiles, plan, w, attempt);
                }
                key => break key.unwrap_or(0),
            }
        };
        let lp = if plan.want_lp { plan.sum.logprob_of(key, plan.ln_z) } else { f32::NAN };
        if thread_idx_x() == 0 {
            // `pending` stays set: the other blocks' lists must not change.
            let at = (p.row_results + row as u64 * 32) as *mut u32;
            let (token, status, lp) = if key != 0 { (key_index(key) as i32, STATUS_OK, lp) } else { (NO_TOKEN, STATUS_NO_VALID_TOKEN, f32::NAN) };
            st_global_v4_u32(at, [token as u32, status, 0, f32::NAN.to_bits()]);
            st_global_v4_u32(at.add(4), [lp.to_bits(), 1, 0, 0]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Stage 3: one thread per request.

#[inline(always)]
unsafe fn read_row_result(p: &VerifyParams, row: u32) -> VerifyRowResult {
    // SAFETY: row < rows (caller); written by verify_rows earlier on the stream.
    unsafe {
        let at = (p.row_results + row as u64 * 32) as *const u32;
        VerifyRowResult {
            token: at.read() as i32,
            status: at.add(1).read(),
            accept: at.add(2).read(),
            logprob_draft: f32::from_bits(at.add(3).read()),
            logprob_token: f32::from_bits(at.add(4).read()),
            pending: at.add(5).read(),
            _pad: [0; 2],
        }
    }
}

/// Stage 3 of verification: each request's chain, outputs and state update, and the chain's
/// count in `chain_stats` for the next call's layout.
///
/// # Safety
/// Launch with `VERIFY_CHAIN_THREADS` threads per block and at least `requests` threads in
/// all, after `verify_rows` and `verify_draws` (which zeroes `chain_stats`) of the same call on
/// the same stream.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn verify_chains(p: VerifyParams) {
    let request = block_idx_x() * block_dim_x() + thread_idx_x();
    // SAFETY: the header.
    let (requests, rows) = unsafe { active(&p) };
    // The next call's groups count their barriers from zero, and its requests start with no
    // rejection. verify_rows has finished (same stream), and it wrote only active rows' heads.
    let mut row = request;
    while row < rows {
        // SAFETY: row < rows ≤ the row scratch's capacity.
        const _: () = assert!(VERIFY_ROW_HEAD_BYTES == 48); // three 16-byte stores
        unsafe {
            let head = (p.row_scratch + row as u64 * VERIFY_ROW_SCRATCH_BYTES as u64) as *mut u32;
            st_global_v4_u32(head, [0; 4]);
            st_global_v4_u32(head.add(4), [0; 4]);
            st_global_v4_u32(head.add(8), [0; 4]);
        }
        row += grid_dim_x() * block_dim_x();
    }
    // Every thread reaches the count, so that a warp adds its requests' chains in one atomic
    // on the one word, not one a request (which measured the same up to B = 128, session 56).
    // SAFETY: request < requests (checked here); the body's own conditions.
    let chain = if request < requests { unsafe { finish_chain(&p, request, rows) } } else { 0 };
    // SAFETY (whole warp: VERIFY_CHAIN_THREADS is a multiple of 32, and no thread has
    // returned): reductions; chain_stats is one u64, zeroed by this call's verify_draws.
    unsafe {
        let stopped = redux_add_sync(FULL_MASK, chain as u32);
        let ran = redux_add_sync(FULL_MASK, (chain >> 32) as u32);
        if lane_id() == 0 && stopped + ran > 0 {
            red_add_global_u64(p.chain_stats as *mut u64, stopped as u64 | (ran as u64) << 32);
        }
    }
}

/// One request's chain (`request < requests`): its accepted drafts, tokens and status, the
/// emitted tokens' counts and its step; returns its count for `chain_stats` (1: it stopped at
/// its first draft, `1 << 32`: it accepted one or more, 0: no drafts or invalid settings).
///
/// # Safety
/// As for [`verify_chains`], with `request < requests`.
#[inline(always)]
unsafe fn finish_chain(p: &VerifyParams, request: u32, rows: u32) -> u64 {
    let width = p.max_drafts + 1;
    let out = (request * width) as usize;
    // SAFETY: request < requests ≤ the capacity of settings, drafts and outputs; the rows of a
    // request that passes request_ok are active rows; token ids are checked before they index
    // the counts.
    unsafe {
        let s = read_settings(p, request);
        let tokens = (p.out_tokens as *mut i32).add(out);
        let logprobs = (p.out_logprobs as *mut f32).add(out);
        let mut status = STATUS_INVALID_SETTINGS;
        let mut emitted = 0u32;
        let mut accepted = 0u32;
        let mut chain = 0u64;
        let ok = request_ok(p, &s, rows) && read_row_result(p, s.first_row).status != STATUS_INVALID_SETTINGS;
        if ok {
            status = STATUS_OK;
            let counts = (p.counts as *mut u32).add(s.row.slot as usize * p.counts_stride as usize);
            // Eight rows of the chain at a time: their results and drafts are loaded together,
            // then the emitted tokens' counts, so a chain costs a few memory round trips, not
            // two or three per row (this kernel is the last of every call).
            let mut j = 0u32;
            let mut stop = false;
            while !stop && j <= s.drafts {
                let mut res = [VerifyRowResult::default(); 8];
                let mut drafted = [0u32; 8];
                each8(|k| {
                    let jk = j + k as u32;
                    if jk <= s.drafts {
                        res[k] = read_row_result(p, s.first_row + jk);
                    }
                    if jk < s.drafts {
                        drafted[k] = (p.drafts as *const u32).add((request * p.max_drafts + jk) as usize).read();
                    }
                });
                let mut token = [NO_TOKEN; 8];
                each8(|k| {
                    let jk = j + k as u32;
                    if stop || jk > s.drafts {
                        return;
                    }
                    let r = res[k];
                    if r.status != STATUS_OK {
                        status = r.status;
                        stop = true;
                        return;
                    }
                    let accept = r.accept != 0 && jk < s.drafts;
                    token[k] = if accept { drafted[k] as i32 } else { r.token };
                    tokens.add(jk as usize).write(token[k]);
                    logprobs.add(jk as usize).write(if accept { r.logprob_draft } else { r.logprob_token });
                    emitted = jk + 1;
                    if accept {
                        accepted += 1;
                    } else {
                        stop = true;
                    }
                });
                // Each distinct counted token once, with its multiplicity in these rows: the
                // loads go out together, and the adds saturate as one at a time would.
                let mut old = [0u32; 8];
                let mut first = [false; 8];
                each8(|k| {
                    let t = token[k];
                    first[k] = t >= 0 && (t as u32) < p.vocab && !token[..k].contains(&t);
                    if first[k] {
                        old[k] = counts.add(t as usize).read();
                    }
                });
                each8(|k| {
                    if first[k] {
                        let times = token[k..].iter().filter(|&&t| t == token[k]).count() as u32;
                        counts.add(token[k] as usize).write(saturating_count_add(old[k], times));
                    }
                });
                j += 8;
            }
            if s.drafts > 0 {
                chain = if accepted == 0 { 1 } else { 1 << 32 };
            }
            let step = (p.steps as *mut u64).add(s.row.slot as usize);
            step.write(step.read().wrapping_add(1));
        }
        let mut k = emitted;
        while k < width {
            tokens.add(k as usize).write(NO_TOKEN);
            logprobs.add(k as usize).write(f32::NAN);
            k += 1;
        }
        (p.out_accepted as *mut u32).add(request as usize).write(accepted);
        (p.out_status as *mut u32).add(request as usize).write(status);
        chain
    }
}
