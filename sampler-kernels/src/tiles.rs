//! Stage 1 of the sampler step (device only): one warp per (row, vocab tile), in two kernels
//! over the same grid. `sample_tiles` takes the rows that need no row mass, `sample_tiles_mass`
//! the others; each skips the other's rows. A greedy step (every row greedy without
//! log-probabilities) is a third build alone, `sample_tiles_greedy`: every row scanned for its
//! maximum, and the warp that counts a row's last tile record finishes the row (`arrive`,
//! `sampler::finish_greedy_row`), so the step needs no other kernel.
//!
//! A warp streams its 4096-token tile in 16 rounds of 256 tokens (8 consecutive tokens per
//! lane, logits loaded three rounds ahead: into registers in `sample_tiles`, into a ring of
//! shared-memory slots by `cp.async` in `sample_tiles_mass` and in `sample_tiles_ring`, the
//! build of `sample_tiles` for one-wave grids, `ring_fetch`) and leaves the
//! `TileRecord` stages 2 and 3 read: the tile's 32 largest keys, its valid and +inf counts and,
//! for rows that need it, the exact band masses. In `sample_tiles` each (mode, features) pair
//! gets its own loop, so the hot loop of a plain row is the prologue and one comparison per
//! token:
//! - greedy rows keep a running maximum (value, then index);
//! - other rows keep a sorted top 32 in registers (lane i holds the i-th key) and its 32nd key
//!   as a threshold. Tokens above it go to a per-warp buffer, merged 32 at a time. The test is
//!   made before the temperature (`logit::temper_floor`), so only tokens that may pass are
//!   tempered and keyed;
//! - rows that need the row mass (no top-k, or log-probabilities) also add each token's
//!   fixed-point fraction to lane-private band sums under a running ceiling. When the ceiling
//!   rises the sums shift down, and bands pushed past 36 drop: what the tile maximum gives.
//!   Every token is tempered there (a multiply by the row's `1 / T`; band and fraction from
//!   the bits of exact f32 sums, no conversion), so `sample_tiles_mass` has one round body
//!   for all feature sets (unrolled per (mode, features) it was 14.6k instructions and
//!   stalled on instruction fetches), unrolled over the lane's 8 tokens so that their band
//!   arithmetic overlaps.
//!
//! Small grids split a tile between warps (`abi::scan_split`: 2, 4 or 8 consecutive warps of a
//! block, each scanning 16 / split rounds): a lone warp's 16 rounds are a serial chain, and at
//! B = 1 five blocks would hold the whole GPU's work. The warp of the first part merges the
//! parts' lists (exact top 32 of their union), counts and band sums (each part's shifted to the
//! highest ceiling) behind a named barrier of the tile's warps, so the record is the one a
//! single warp writes. Otherwise there is no barrier: the warps of a block scan unrelated
//! tiles, and a warp that meets an inactive, unaddressable or other-kernel row leaves (with
//! all its tile's parts; stage 2 reports invalid rows).
//!
//! `sample_tiles_mass` is persistent, and most rows are usually not its own: the host lists its
//! rows with the step's settings, and each group of warps (one warp, or the 2 or 4 parts of
//! `abi::mass_split`) strides over those rows' items alone, so the warps get equal shares.
//! When it runs beside `sample_tiles_ring` (`overlap_stage1`) on a grid of one warp a tile,
//! that kernel takes the other rows from the host's second list (`StepParams::scan_rows`) and
//! gives their tiles two warps where they fit (`abi::listed_scan_split`; the host launches
//! every warp the GPU holds): heterogeneous B = 64 at V = 128256 gets two warps a tile instead
//! of one, and no warp of a mass row that would only exit.
//!
//! Launch order: `sample_tiles` is the step's first kernel. `sample_tiles_mass` is launched
//! overlapped after it and runs beside it when `sample_tiles` lets it (`overlap_stage1`, grids
//! of up to six waves); it
//! reads nothing `sample_tiles` writes, and waits for it only at its end, so that the next
//! kernel's wait covers both.

use crate::abi::*;
use crate::block::{each8, max_u64, smem, warp_max_u64};
use crate::fixed::{ceiling_index, frac_weight, small_ceil, soft_ceil, BAND_FLOOR, CEIL_LIMIT, FRAC_ONE};
use crate::intrinsics::*;
use crate::keys::{from_ordered_bits, key_of_ordered, key_value, ordered_bits, sort_key, ORDERED_INFINITY};
use crate::logit::{plain_untempered, process_untempered, widen_bf16, widen_f16, temper, temper_by, temper_floor, temper_overflow_floor, temper_scale};
use crate::decide::needs_row_mass;
use crate::sampler::{
    active_rows, finish_greedy_row, lists_skipped, load_raw8, needs_candidates, read_settings, record_ptr, row_addressable, row_logits,
    row_setup, Row, RECORD_TAIL,
};

// ---------------------------------------------------------------------------------------------
// Constants and the per-warp shared-memory layout.

const LANE_TOKENS: u32 = 8;
/// How many rounds ahead of the one being scanned a greedy row's lane asks L2 for its logits:
/// registers hold at most three rounds, too few in flight for DRAM. Six measured faster than
/// none, ten, or the whole tile at once (ARCHITECTURE.md, "Why these choices").
const PREFETCH_ROUNDS: u32 = 6;
const ROUND_TOKENS: u32 = 32 * LANE_TOKENS;
const ROUNDS: u32 = TILE_TOKENS / ROUND_TOKENS;
const BANDS: u32 = MASS_BANDS as u32;
/// Fewer than 32 keys wait between rounds, and one round adds at most 256.
const BUFFER_KEYS: u32 = 288;
const BIAS_WORDS: u32 = TILE_TOKENS / 32;
/// Bias entries of one tile held in shared memory; a tile with more searches global memory.
const BIAS_LIST: u32 = 64;

// A warp's shared region: in `sample_tiles_mass` the band sums come first, then the part both
// kernels have.
/// Lane-private band sums, `u32[BANDS + 1][32]` (band-major: lane `l` of band `d` is
/// conflict-free). A lane adds at most 128 fractions of at most `2^23` per tile, so `u32` holds
/// them. Row `BANDS` takes the tokens outside the bands, so that the band update needs no
/// branch; it is never read.
const BAND_BYTES: u32 = (BANDS + 1) * 32 * 4;
/// The band row that discards.
const DISCARD_BAND: u32 = BANDS;
/// The integer ceiling `scan_mass` gives a token in no band: `c - NO_BAND_CEIL` wraps to at
/// least `2^31 - 2^22` for every ceiling `c` a round uses (`|c| <= 2^22`), past the bands.
const NO_BAND_CEIL: i32 = i32::MIN;
/// Keys waiting to be merged, `u64[BUFFER_KEYS]`.
const W_BUFFER: u32 = 0;
/// One bit per token of the tile: the row has a bias entry for it.
const W_BIAS_MAP: u32 = W_BUFFER + BUFFER_KEYS * 8;
/// `(offset in tile, value bits)` of the tile's bias entries, in entry order.
const W_BIAS_LIST: u32 = W_BIAS_MAP + BIAS_WORDS * 4;
const W_END: u32 = W_BIAS_LIST + BIAS_LIST * 8;
/// The warp's count of buffered keys (`append_round`, `insert_round`), in the buffer's last
/// slot, which no round reaches (below `BUFFER_KEYS - 1`: fewer than 32 wait, and a round adds
/// at most 256).
const W_COUNT: u32 = W_BUFFER + (BUFFER_KEYS - 1) * 8;
const _: () = assert!(BUFFER_KEYS - 1 >= 31 + ROUND_TOKENS);

/// `sample_tiles_mass` stages a round's tempered values here, past what `sample_tiles` has,
/// `f32[8][32]` (token-major: lane `l` of token `j` is conflict-free): a round may append all
/// of its 256 keys to the buffer, and their keys are built from these values.
const W_STAGE: u32 = W_END;
/// A split tile's part publishes its result in its buffer for the first part to merge: its
/// list (`u64[32]` from `W_BUFFER`), then its valid count, `+inf` count and band ceiling.
const W_PART_VALID: u32 = W_BUFFER + 32 * 8;
const W_PART_INFINITE: u32 = W_PART_VALID + 4;
const W_PART_CEILING: u32 = W_PART_VALID + 8;

const _: () = assert!(W_END == SCAN_WARP_SHARED_BYTES);
const _: () = assert!(W_PART_CEILING + 4 <= W_BIAS_MAP);
/// `sample_tiles_mass`' ring of logits, past the staging: `MASS_RING_ROUNDS` slots of one round
/// each, 32 bytes a lane ([`ring_fetch`]).
const W_RING: u32 = W_STAGE + LANE_TOKENS * 32 * 4;
const RING_SLOT_BYTES: u32 = LANE_TOKENS * 32 * 4;
/// Rounds requested ahead of the one scanned: the ring's other slots.
const RING_AHEAD: u32 = MASS_RING_ROUNDS - 1;
const _: () = assert!(BAND_BYTES + W_RING + MASS_RING_ROUNDS * RING_SLOT_BYTES == MASS_SCAN_WARP_SHARED_BYTES);
/// `sample_tiles_ring`'s ring, past the region `sample_tiles` has (that kernel stages nothing).
const W_TILES_RING: u32 = W_END;
const _: () = assert!(W_TILES_RING + MASS_RING_ROUNDS * RING_SLOT_BYTES == SCAN_RING_WARP_SHARED_BYTES && W_TILES_RING % 16 == 0);
/// Bytes between consecutive warps' shared regions in each stage-1 kernel: the mass scan's
/// (band sums, ring), `sample_tiles_ring`'s (ring) or `sample_tiles`'.
const fn warp_region_bytes(mass_kernel: bool, ring: bool) -> u32 {
    if mass_kernel {
        MASS_SCAN_WARP_SHARED_BYTES
    } else if ring {
        SCAN_RING_WARP_SHARED_BYTES
    } else {
        SCAN_WARP_SHARED_BYTES
    }
}
const _: () = assert!(MASS_RING_ROUNDS.is_power_of_two() && RING_AHEAD == 3 && W_RING % 16 == 0 && BAND_BYTES % 16 == 0);
const _: () = assert!(BUFFER_KEYS >= 31 + ROUND_TOKENS);
const _: () = assert!(TILE_CANDIDATES == 32 && ROUNDS * ROUND_TOKENS == TILE_TOKENS);
const _: () = assert!(BANDS == BAND_FLOOR + 1 && BANDS <= 64);
const _: () = assert!((ROUNDS * LANE_TOKENS) as u64 * FRAC_ONE as u64 <= u32::MAX as u64);

// What a row needs from its tiles (const generic parameters of the scan loop).
/// Greedy without log-probabilities: the largest key only.
const MODE_MAX: u32 = 0;
/// The 32 largest keys.
const MODE_CANDIDATES: u32 = 1;
/// The 32 largest keys and the band sums (`sample_tiles_mass` only).
const MODE_MASS: u32 = 2;

// Which parts of the prologue a row uses (const generic parameters of the scan loop).
/// No bitmask, penalty or bias: NaN → -inf is all.
const PLAIN: u32 = 0;
/// A grammar bitmask, a bias entry in the tile or penalties (counts are read if the row has
/// them). One variant for all of these: in a heterogeneous batch every variant's loop is hot
/// at once, and with a separate masked variant `sample_tiles` spent half its stall samples
/// waiting for instruction fetches.
const FEATURED: u32 = 1;

/// One lane's share of a round, loaded ahead of use.
#[derive(Clone, Copy)]
struct RoundInput {
    raw: [f32; 8],
    counts: [u32; 8],
    mask: u32,
}

/// The tile a warp scans, and the row it belongs to.
struct TileScan {
    row: Row,
    /// First token of the tile.
    start: u32,
    /// The rounds this warp scans, `first_round .. end_round` (all 16 unless the tile is split
    /// between warps).
    first_round: u32,
    end_round: u32,
    /// The part of this warp's shared region both kernels have (buffer and bias).
    shared: u32,
    /// This warp's band sums (`sample_tiles_mass`), else unused.
    bands: u32,
    /// This warp's ring of logits ([`ring_fetch`]): `sample_tiles_mass` and `sample_tiles_ring`;
    /// else unused.
    ring: u32,
    /// Bias entries of the row that fall in this tile.
    bias_found: u32,
}

// ---------------------------------------------------------------------------------------------
// Warp helpers.


/// `v[j]` for a run-time `j < 8` by selects: an indexed register array would go to local memory.
#[inline(always)]
fn pick8<T: Copy>(v: &[T; 8], j: u32) -> T {
    let odd = j & 1 != 0;
    let e0 = if odd { v[1] } else { v[0] };
    let e1 = if odd { v[3] } else { v[2] };
    let e2 = if odd { v[5] } else { v[4] };
    let e3 = if odd { v[7] } else { v[6] };
    let f0 = if j & 2 != 0 { e1 } else { e0 };
    let f1 = if j & 2 != 0 { e3 } else { e2 };
    if j & 4 != 0 {
        f1
    } else {
        f0
    }
}


/// The 32 largest of `list` (sorted descending across lanes) and `chunk` (one key per lane, any
/// order), sorted descending across lanes. Keys are unique, so nothing is counted twice.
///
/// # Safety
/// All 32 lanes call it together.
#[inline(always)]
unsafe fn merge_top32(list: u64, chunk: u64) -> u64 {
    let lane = lane_id();
    // SAFETY (whole warp converged): shuffles only.
    unsafe {
        let sorted = crate::block::warp_sort_desc(chunk);
        merge_sorted_top32(list, shfl_idx_u64(FULL_MASK, sorted, 31 - lane))
    }
}

/// The 32 largest of `list` (sorted descending across lanes) and another sorted list given in
/// ascending order (lane i holds its (31 - i)-th largest), sorted descending across lanes.
///
/// # Safety
/// All 32 lanes call it together.
#[inline(always)]
unsafe fn merge_sorted_top32(list: u64, ascending: u64) -> u64 {
    let lane = lane_id();
    // Descending against ascending: the larger of each pair is the top 32, as a bitonic
    // sequence; five half-cleaner steps sort it.
    let mut v = max_u64(list, ascending);
    let mut stride = 16;
    while stride > 0 {
        // SAFETY (whole warp converged): a shuffle.
        let other = unsafe { shfl_xor_u64(FULL_MASK, v, stride) };
        // One comparison for both directions, as in `warp_sort_desc`.
        v = if (v > other) == (lane & stride == 0) { v } else { other };
        stride >>= 1;
    }
    v
}

// ---------------------------------------------------------------------------------------------
// Loads and the prologue.

/// This lane's 8 logits of a round as loaded, before widening: f32 bits, or for bf16/f16 two
/// 16-bit values per word in words 0..4 (token `2i` in the low half of word `i`, as a 16-byte
/// load gives them). Rounds are loaded ahead in this form and widened where they are used, so
/// the widening is in the code once per loop instead of once per load.
pub(crate) type RawBits = [u32; 8];

/// NaN read as f32, as bf16 pairs and as f16 pairs: what a token past the vocab loads as (the
/// prologue makes any NaN -inf).
pub(crate) const NAN_WORD: u32 = 0x7fff_7fff;

/// [`RawBits`] of this lane's 8 tokens starting at `base` (`base % 8 == 0`); tokens past the
/// vocab read as NaN. The same values as `sampler::load_raw8`, whose widening is [`widen8`].
///
/// # Safety
/// `logits` is a row of `p` and `vector_ok` says whether it starts 16-byte aligned
/// (`sampler::row_logits`).
#[inline(always)]
pub(crate) unsafe fn load_bits8(p: &StepParams, logits: u64, vector_ok: bool, base: u32) -> RawBits {
    let mut w = [NAN_WORD; 8];
    if base >= p.vocab {
        return w;
    }
    if whole_vector(p, vector_ok, base) {
        if p.dtype == DTYPE_F32 {
            // SAFETY: 8 tokens inside the row; 16-byte aligned (row start aligned, base % 8 == 0).
            w = unsafe { ld_global_nc_v8_u32((logits + base as u64 * 4) as *const u32) };
        } else {
            // SAFETY: as above; 8 half-width tokens are one 16-byte vector.
            let q = unsafe { ld_global_nc_v4_u32((logits + base as u64 * 2) as *const u32) };
            w = [q[0], q[1], q[2], q[3], NAN_WORD, NAN_WORD, NAN_WORD, NAN_WORD];
        }
        return w;
    }
    // The row's last tokens, or a row that is not 16-byte aligned: token by token, in a loop
    // that is not unrolled (rare, and eight inlined copies per call site were most of the code).
    let half = p.dtype != DTYPE_F32;
    let tokens = opaque_u32(LANE_TOKENS);
    let mut j = 0;
    while j < tokens {
        pragma_nounroll();
        let t = base + j;
        if t < p.vocab {
            // SAFETY: token t < vocab lies inside the row.
            let (word, value, mask) = unsafe {
                if half {
                    let bits = ((logits + t as u64 * 2) as *const u16).read() as u32;
                    let shift = (j & 1) * 16;
                    (j >> 1, bits << shift, 0xffffu32 << shift)
                } else {
                    (j, ((logits + t as u64 * 4) as *const u32).read(), u32::MAX)
                }
            };
            each8(|i| {
                if i as u32 == word {
                    w[i] = (w[i] & !mask) | value;
                }
            });
        }
        j += 1;
    }
    w
}

/// Whether this lane's 8 tokens from `base` are a whole vector of an aligned row: what
/// [`load_bits8`] loads with vector loads and `sample_tiles_mass`' ring copies. The rest (a
/// row's last tokens, an unaligned row) are loaded token by token, by [`ring_take`] too. (The
/// first bound keeps `base + 8` from wrapping.)
#[inline(always)]
fn whole_vector(p: &StepParams, vector_ok: bool, base: u32) -> bool {
    vector_ok && base < p.vocab && base + LANE_TOKENS <= p.vocab
}

/// Requests this lane's logits of the round at `base` into ring slot `slot` (modulo
/// `MASS_RING_ROUNDS`) and commits them as one group: an empty group without `fetch` or where
/// [`whole_vector`] says no, so that every round has its group. The ring keeps three rounds in
/// flight with no register: loaded into registers three rounds ahead, the logits were moved
/// along a ring of three each round, and the round waited for the load it had just issued
/// (14% of `sample_tiles_mass`' stall samples at flat top-p B = 256, 8.5% on one
/// instruction: session 35).
///
/// # Safety
/// `logits` and `vector_ok` are a row of `p` (`sampler::row_logits`); `ring` is this warp's
/// ring (`W_RING` in a mass-scan region). The slot's previous round has been taken
/// ([`ring_take`]) and its values used.
#[inline(always)]
unsafe fn ring_fetch(p: &StepParams, logits: u64, vector_ok: bool, ring: u32, slot: u32, base: u32, fetch: bool) {
    if fetch && whole_vector(p, vector_ok, base) {
        let dst = ring_lane_slot(ring, slot);
        // SAFETY: 8 tokens inside the row, 16-byte aligned (row start aligned, base % 8 == 0);
        // the destination is this lane's 32 bytes of a free slot.
        unsafe {
            if p.dtype == DTYPE_F32 {
                let src = (logits + base as u64 * 4) as *const u32;
                cp_async_16(dst, src);
                cp_async_16(dst + 16, src.add(4));
            } else {
                cp_async_16(dst, (logits + base as u64 * 2) as *const u32);
            }
        }
    }
    cp_async_commit();
}

/// This lane's logits of the round at `base`, as [`load_bits8`] gives them: from ring slot
/// `slot` once its group is in, or loaded here where [`whole_vector`] says no.
///
/// # Safety
/// As for [`ring_fetch`]; the round's group was committed by [`ring_fetch`] for this slot and
/// base, and exactly `RING_AHEAD - 1` groups after it.
#[inline(always)]
unsafe fn ring_take(p: &StepParams, logits: u64, vector_ok: bool, ring: u32, slot: u32, base: u32) -> RawBits {
    cp_async_wait_group::<{ RING_AHEAD - 1 }>();
    // SAFETY: forwarded; the slot's group is in.
    unsafe { ring_read(p, logits, vector_ok, ring, slot, base) }
}

/// This lane's 32 bytes of ring slot `slot` (modulo `MASS_RING_ROUNDS`).
#[inline(always)]
fn ring_lane_slot(ring: u32, slot: u32) -> u32 {
    ring + (slot % MASS_RING_ROUNDS) * RING_SLOT_BYTES + lane_id() * 32
}

/// [`ring_take`] without its wait: for a caller that has waited for the slot's group itself.
///
/// # Safety
/// As for [`ring_take`], after a wait that covers the slot's group.
#[inline(always)]
unsafe fn ring_read(p: &StepParams, logits: u64, vector_ok: bool, ring: u32, slot: u32, base: u32) -> RawBits {
    if !whole_vector(p, vector_ok, base) {
        // SAFETY: forwarded.
        return unsafe { load_bits8(p, logits, vector_ok, base) };
    }
    let at = ring_lane_slot(ring, slot);
    // SAFETY: this lane's own copy, done (waited for by the caller), visible to this lane.
    unsafe {
        let a = ld_shared_v4_u32(at);
        if p.dtype == DTYPE_F32 {
            let b = ld_shared_v4_u32(at + 16);
            [a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]]
        } else {
            [a[0], a[1], a[2], a[3], NAN_WORD, NAN_WORD, NAN_WORD, NAN_WORD]
        }
    }
}

/// The logits of [`RawBits`], widened exactly (`logit::widen_bf16`, `logit::widen_f16`).
#[inline(always)]
pub(crate) fn widen8(w: &RawBits, dtype: u32) -> [f32; 8] {
    if dtype == DTYPE_F32 {
        let mut raw = [0.0f32; 8];
        each8(|j| raw[j] = f32::from_bits(w[j]));
        return raw;
    }
    let pair = |word: u32| {
        if dtype == DTYPE_BF16 {
            (widen_bf16(word as u16), widen_bf16((word >> 16) as u16))
        } else {
            (widen_f16(word as u16), widen_f16((word >> 16) as u16))
        }
    };
    let (r0, r1) = pair(w[0]);
    let (r2, r3) = pair(w[1]);
    let (r4, r5) = pair(w[2]);
    let (r6, r7) = pair(w[3]);
    [r0, r1, r2, r3, r4, r5, r6, r7]
}

/// [`widen8`] of raw words held bit-cast as f32 (how the round registers of half-width rows
/// carry them: a bit-cast costs no instruction, a widening waits for the load).
#[inline(always)]
fn widen_bits(w: &[f32; 8], dtype: u32) -> [f32; 8] {
    widen8(&f32_as_bits(w), dtype)
}

/// Raw words as the f32 registers that carry them (no instruction).
#[inline(always)]
fn bits_as_f32(w: &RawBits) -> [f32; 8] {
    let mut x = [0.0f32; 8];
    each8(|j| x[j] = f32::from_bits(w[j]));
    x
}

/// The raw words [`bits_as_f32`] carries.
#[inline(always)]
fn f32_as_bits(x: &[f32; 8]) -> RawBits {
    let mut w = [0u32; 8];
    each8(|j| w[j] = x[j].to_bits());
    w
}

/// Penalty counts of this lane's 8 tokens starting at `first` (`first % 8 == 0`).
///
/// # Safety
/// `r` is the row of a valid launch (its pointers are inside their buffers).
#[inline(always)]
unsafe fn load_counts(p: &StepParams, r: &Row, first: u32) -> [u32; 8] {
    if first >= p.vocab || r.counts == 0 {
        return [0; 8];
    }
    let ptr = (r.counts + first as u64 * 4) as *const u32;
    // SAFETY: counts rows are counts_stride (a multiple of 8, ≥ vocab) long and 16-byte aligned,
    // so first..first+8 is inside and aligned.
    unsafe { ld_global_nc_v8_u32(ptr) }
}

/// Bitmask word holding this lane's 8 tokens starting at `first` (all allowed without a mask).
///
/// # Safety
/// As for [`load_counts`].
#[inline(always)]
unsafe fn load_mask(p: &StepParams, r: &Row, first: u32) -> u32 {
    if first >= p.vocab || r.bitmask == 0 {
        return u32::MAX;
    }
    // SAFETY: word first/32 < bitmask_words for first < vocab.
    unsafe { ld_global_nc_u32((r.bitmask + (first / 32) as u64 * 4) as *const u32) }
}

/// Collects the row's bias entries that fall in this tile into the warp's bitmap and list.
/// Returns how many there are (the list keeps the first `BIAS_LIST`, in entry order), and
/// whether a token had two entries (a bit already set).
///
/// # Safety
/// All 32 lanes call it together; the row's bias range is inside the bias arrays.
#[inline(always)]
unsafe fn collect_bias(p: &StepParams, r: &Row, start: u32, shared: u32) -> (u32, bool) {
    let lane = lane_id();
    let len = r.settings.bias_len;
    // SAFETY (whole warp): this warp's region; bias reads stay inside bias_offset..+bias_len,
    // which row_addressable checked against bias_capacity.
    unsafe {
        let mut w = lane;
        while w < BIAS_WORDS {
            st_shared_u32(shared + W_BIAS_MAP + w * 4, 0);
            w += 32;
        }
        sync_warp(FULL_MASK);
        let mut found = 0u32;
        let mut duplicate = false;
        let mut base = 0u32;
        while base < len {
            let i = base + lane;
            let (mut inside, mut offset, mut value) = (false, 0u32, 0u32);
            if i < len {
                let entry = (r.settings.bias_offset + i) as usize;
                offset = (p.bias_tokens as *const u32).add(entry).read().wrapping_sub(start);
                inside = offset < TILE_TOKENS;
                if inside {
                    value = (p.bias_values as *const u32).add(entry).read();
                }
            }
            let hits = ballot(FULL_MASK, inside);
            if inside {
                let bit = 1 << (offset & 31);
                duplicate |= atom_or_shared_u32(shared + W_BIAS_MAP + (offset / 32) * 4, bit) & bit != 0;
                let pos = found + (hits & ((1u32 << lane) - 1)).count_ones();
                if pos < BIAS_LIST {
                    st_shared_u64(shared + W_BIAS_LIST + pos * 8, ((value as u64) << 32) | offset as u64);
                }
            }
            found += hits.count_ones();
            base += 32;
        }
        sync_warp(FULL_MASK);
        (found, vote_any(FULL_MASK, duplicate))
    }
}

/// Bias of the token at `offset` in the tile, which the bitmap marks: the first entry for it.
///
/// # Safety
/// After [`collect_bias`] for this tile.
#[inline(always)]
unsafe fn bias_at(p: &StepParams, scan: &TileScan, offset: u32) -> f32 {
    // SAFETY: list slots below min(found, BIAS_LIST); global entries inside the row's range.
    unsafe {
        if scan.bias_found <= BIAS_LIST {
            let mut e = 0;
            while e < scan.bias_found {
                let v = ld_shared_u64(scan.shared + W_BIAS_LIST + e * 8);
                if v as u32 == offset {
                    return f32::from_bits((v >> 32) as u32);
                }
                e += 1;
            }
        } else {
            let s = &scan.row.settings;
            let mut i = 0;
            while i < s.bias_len {
                let entry = (s.bias_offset + i) as usize;
                if (p.bias_tokens as *const u32).add(entry).read() == scan.start + offset {
                    return f32::from_bits((p.bias_values as *const u32).add(entry).read());
                }
                i += 1;
            }
        }
        0.0
    }
}

/// Untempered processed values (`logit::process_untempered`) of this lane's 8 tokens, with
/// each token's bias looked up where it is used (`sample_tiles`: the array of
/// [`bias8`] spilled under its 80 registers).
///
/// # Safety
/// `first` is this lane's first token of a round of `scan`'s tile.
#[inline(always)]
unsafe fn prologue8(p: &StepParams, scan: &TileScan, first: u32, input: &RoundInput) -> [f32; 8] {
    let offset = first - scan.start;
    // SAFETY: forwarded.
    let biased = if scan.bias_found > 0 { unsafe { biased8(scan, offset) } } else { 0 };
    prologue8_with(scan, first, input, |j| {
        if (biased >> j) & 1 != 0 {
            // SAFETY: forwarded; the bitmap marks this token.
            unsafe { bias_at(p, scan, offset + j as u32) }
        } else {
            0.0
        }
    })
}

/// Bit `j`: the tile's bias bitmap marks this lane's token `offset + j`.
///
/// # Safety
/// After [`collect_bias`] for this tile; `offset % 8 == 0`, `offset < TILE_TOKENS`.
#[inline(always)]
unsafe fn biased8(scan: &TileScan, offset: u32) -> u32 {
    // SAFETY: word offset/32 < BIAS_WORDS of this warp's bitmap.
    (unsafe { ld_shared_u32(scan.shared + W_BIAS_MAP + (offset / 32) * 4) } >> (offset & 31)) & 0xff
}

/// [`prologue8`] with token `j`'s bias from `bias_of(j)`.
#[inline(always)]
fn prologue8_with<B: Fn(usize) -> f32>(scan: &TileScan, first: u32, input: &RoundInput, bias_of: B) -> [f32; 8] {
    let allowed = input.mask >> (first & 31);
    let mut y = [f32::NEG_INFINITY; 8];
    each8(|j| {
        let bias = bias_of(j);
        let c = input.counts[j];
        y[j] = process_untempered(input.raw[j], (allowed >> j) & 1 == 1, c != 0, c & 0x7fff_ffff, bias, &scan.row.params);
    });
    y
}

// ---------------------------------------------------------------------------------------------
// Candidates and band sums.

/// The running top 32 of a warp.
struct TopList {
    /// Lane i: the i-th largest key so far (0 = none yet).
    list: u64,
    /// The 32nd largest key (0 while fewer than 32): smaller keys can never make the list.
    threshold: u64,
    /// Keys in the buffer.
    waiting: u32,
}

/// Adds this lane's tokens of one round whose bit is set in `passed` (their keys, from
/// `key_of(j)`, reach the threshold's value) to the warp's list (`sample_tiles_mass`). Slots
/// come from the warp's count of buffered keys, as in [`append_round`].
///
/// # Safety
/// All 32 lanes call it together, with the count at `W_COUNT` equal to `top.waiting`.
#[inline(always)]
unsafe fn insert_round<K: Fn(u32) -> u64>(top: &mut TopList, shared: u32, passed: u32, key_of: K) {
    // SAFETY (whole warp, uniform branches): buffer slots below BUFFER_KEYS - 1 (waiting < 32
    // on entry, at most 256 added).
    unsafe {
        if !vote_any(FULL_MASK, passed != 0) {
            return; // the common round: nothing above the threshold
        }
        let mut at = take_slots(shared, passed.count_ones());
        let mut m = passed;
        while m != 0 {
            let j = m.trailing_zeros();
            m &= m - 1;
            st_shared_u64(at, key_of(j));
            at += 8;
        }
        merge_buffered(top, shared);
    }
}

/// `sample_tiles`' form of [`insert_round`]: this lane's tokens whose bit is set in `through`
/// (the floor let them through) get buffer slots before they are tempered, so each writes its
/// key there at once, from the loop that tempers it: `tempered(j)` gives (untempered value,
/// tempered value, key or 0 for a token tempered to -inf), and `count(v, x)` is called once a
/// token. A key that does not beat the threshold writes 0, which the merges skip
/// (`merge_buffered`). Tempering into the values and building the keys again in a second loop
/// took about 40 instructions more a token (session 47). With `seed` (no floor yet) and a list
/// not yet full, each lane's best key joins the list first, which sets a threshold at once
/// instead of buffering the whole first round; that token then takes no slot.
///
/// # Safety
/// All 32 lanes call it together, with the same `seed`, and with the count at `W_COUNT` equal
/// to `top.waiting`.
#[inline(always)]
unsafe fn append_round<K: Fn(u32) -> (f32, f32, u64), C: FnMut(f32, f32)>(
    top: &mut TopList,
    shared: u32,
    through: u32,
    seed: bool,
    tempered: K,
    mut count: C,
) {
    // SAFETY (whole warp, uniform branches): buffer slots below BUFFER_KEYS - 1 (waiting < 32
    // on entry, at most 256 added); merge_buffered orders the lanes' shared accesses.
    unsafe {
        if !vote_any(FULL_MASK, through != 0) {
            return; // no token of the round reaches the floor
        }
        let mut through = through;
        let mut seeded = 0;
        if seed && top.threshold == 0 {
            let (mut best, mut best_j) = (0u64, 0u32);
            let mut m = through;
            while m != 0 {
                let j = m.trailing_zeros();
                m &= m - 1;
                let key = tempered(j).2;
                if key > best {
                    best = key;
                    best_j = j;
                }
            }
            top.list = merge_top32(top.list, best);
            top.threshold = shfl_idx_u64(FULL_MASK, top.list, 31);
            // The seeded token takes no slot; it is still counted below.
            if best != 0 {
                seeded = 1 << best_j;
            }
        }
        let mut at = take_slots(shared, (through & !seeded).count_ones());
        while through != 0 {
            let j = through.trailing_zeros();
            through &= through - 1;
            let (v, x, key) = tempered(j);
            count(v, x);
            if seeded >> j & 1 == 0 {
                st_shared_u64(at, if key > top.threshold { key } else { 0 });
                at += 8;
            }
        }
        merge_buffered(top, shared);
    }
}

/// The address of the first of `keys` buffer slots for this lane (unused when `keys` is 0):
/// a lane with keys adds their number to the warp's count of buffered keys (`W_COUNT`), in any
/// order of lanes, since the list is the top 32 of the keys whatever order they merge in. A
/// warp prefix sum of the counts (five shuffles with their selects and adds) took about 20
/// instructions a round more (session 47).
///
/// # Safety
/// After the round's floor test, before its keys are written; the count is `top.waiting`.
#[inline(always)]
unsafe fn take_slots(shared: u32, keys: u32) -> u32 {
    if keys == 0 {
        return 0;
    }
    // SAFETY: W_COUNT is this warp's count word; its plain writes are ordered by warp syncs.
    shared + W_BUFFER + unsafe { atom_add_shared_u32(shared + W_COUNT, keys) } * 8
}

/// Sets the warp's count of buffered keys (`W_COUNT`) to none, before a tile's first round.
///
/// # Safety
/// All 32 lanes call it together.
#[inline(always)]
unsafe fn reset_count(shared: u32) {
    // SAFETY (whole warp): this warp's count word, last read before a warp sync (the end of
    // `merge_buffered`); this sync orders the reset before the first round's slots.
    unsafe {
        if lane_id() == 0 {
            st_shared_u32(shared + W_COUNT, 0);
        }
        sync_warp(FULL_MASK);
    }
}

/// After a round's keys are in the buffer: reads the warp's count of them (`W_COUNT`) and
/// merges them into the list 32 at a time while 32 wait (a chunk of zeros alone, keys
/// [`append_round`] stopped, is skipped), then stores the count left.
///
/// # Safety
/// All 32 lanes call it together, after writing their keys to the buffer.
#[inline(always)]
unsafe fn merge_buffered(top: &mut TopList, shared: u32) {
    let lane = lane_id();
    // SAFETY (whole warp): slots below BUFFER_KEYS - 1; sync_warp orders the lanes' shared
    // accesses: the keys and the count before the reads, the reads and the count's store
    // before the next round's slots.
    unsafe {
        sync_warp(FULL_MASK);
        top.waiting = ld_shared_u32(shared + W_COUNT);
        let before = top.waiting;
        while top.waiting >= 32 {
            top.waiting -= 32;
            let chunk = ld_shared_u64(shared + W_BUFFER + (top.waiting + lane) * 8);
            if vote_any(FULL_MASK, chunk != 0) {
                top.list = merge_top32(top.list, chunk);
                top.threshold = shfl_idx_u64(FULL_MASK, top.list, 31);
            }
        }
        if top.waiting != before {
            // Every lane's read of the count before lane 0 writes it: the merges' shuffles
            // converge the warp but order no memory. (Without this sync, racecheck's process
            // failed at exit: session 47, runs 2-3.)
            sync_warp(FULL_MASK);
            if lane == 0 {
                st_shared_u32(shared + W_COUNT, top.waiting);
            }
        }
        sync_warp(FULL_MASK);
    }
}

/// `list` with the `waiting` keys left in the buffer merged in (the scan's last step).
///
/// # Safety
/// All 32 lanes call it together, with the same `waiting` (< 32).
#[inline(always)]
unsafe fn flush(list: u64, waiting: u32, shared: u32) -> u64 {
    if waiting == 0 {
        return list;
    }
    let lane = lane_id();
    // SAFETY (whole warp): slots below waiting < 32; the sync_warp orders their writes (by
    // other lanes) before the reads.
    unsafe {
        sync_warp(FULL_MASK);
        let chunk = if lane < waiting { ld_shared_u64(shared + W_BUFFER + lane * 8) } else { 0 };
        merge_top32(list, chunk)
    }
}

/// Asks L2 for this lane's 8 tokens from token `first` of the row (one line: 32 or 16 bytes at
/// a multiple of their size), without a register; tokens past the vocab are not asked for.
///
/// # Safety
/// `logits` is the row's address in `p`.
#[inline(always)]
unsafe fn prefetch_round(p: &StepParams, logits: u64, first: u32) {
    if first < p.vocab {
        let size = if p.dtype == DTYPE_F32 { 4 } else { 2 };
        // SAFETY: token `first` < vocab lies inside the row, inside the logits allocation.
        unsafe { prefetch_global_l2((logits + first as u64 * size) as *const u8) };
    }
}

#[inline(always)]
fn band_slot(bands: u32, band: u32, lane: u32) -> u32 {
    bands + (band * 32 + lane) * 4
}

/// Moves this lane's band sums `delta` bands down (the ceiling rose by `delta`); bands that
/// fall past the floor weigh nothing under any higher ceiling either, so they are dropped.
///
/// # Safety
/// `shared` is this warp's region.
#[inline(always)]
unsafe fn shift_bands(bands: u32, delta: f32) {
    let lane = lane_id();
    let s = if delta < BANDS as f32 { delta as u32 } else { BANDS };
    let mut d = BANDS;
    // SAFETY: this lane's own slots; descending, so each source is read before it is written.
    unsafe {
        while d > 0 {
            d -= 1;
            let v = if d >= s { ld_shared_u32(band_slot(bands, d - s, lane)) } else { 0 };
            st_shared_u32(band_slot(bands, d, lane), v);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The scan of one tile, and the entry points.

/// What a warp found in its tile.
struct TileResult {
    /// Lane i: the i-th largest key (`MODE_MAX`: every lane holds the largest).
    list: u64,
    /// Warp totals.
    valid: u32,
    infinite: u32,
    /// Ceiling of the band sums (`MODE_MASS`).
    ceiling: f32,
    /// Keys still in the warp's buffer, not yet merged into `list` (`flush`).
    waiting: u32,
}

/// Untempered values of a row with no bitmask, penalty or bias: what `process_untempered`
/// gives for a token with none (NaN becomes -inf, -0 becomes +0). `sampler::plain8` is the
/// tempered form, for passes that temper every token.
#[inline(always)]
fn plain_untempered8(raw: &[f32; 8]) -> [f32; 8] {
    let mut y = [f32::NEG_INFINITY; 8];
    each8(|j| y[j] = plain_untempered(raw[j]));
    y
}

/// A floor on the untempered values of a plain row's candidates, from this warp's rounds that
/// are already loaded (the first `own` of `raw`). `θ`, the 32nd largest of the lanes' two
/// largest values, has 32 tokens of this warp's part at or above it, so its 32nd key is at
/// least `temper(θ)`, and a value below `temper_floor(temper(θ))` cannot make the list.
/// Without it the list starts empty: the first round tempered and buffered every token (a few
/// hundred keys merged a tile, most of the candidate work; with the tile split, of each part).
///
/// # Safety
/// All 32 lanes call it together.
#[inline(always)]
unsafe fn loaded_floor(raw: &[[f32; 8]; 3], own: u32, t: f32) -> f32 {
    let lane = lane_id();
    let (mut first, mut second) = (f32::NEG_INFINITY, f32::NEG_INFINITY);
    let mut r = 0;
    while r < 3 {
        if (r as u32) < own {
            let y = plain_untempered8(&raw[r]);
            each8(|j| {
                let v = y[j];
                let lower = if v < first { v } else { first };
                second = if lower > second { lower } else { second };
                first = if v > first { v } else { first };
            });
        }
        r += 1;
    }
    // SAFETY (whole warp converged): shuffles and a reduction.
    unsafe {
        // The largest 32 of the 64 values: descending firsts against ascending seconds, the
        // larger of each pair (a bitonic merge's first step); θ is the least of those.
        let firsts = crate::block::warp_sort_desc(ordered_bits(first));
        let seconds = crate::block::warp_sort_desc(ordered_bits(second));
        let pair = firsts.max(shfl_idx_u32(FULL_MASK, seconds, 31 - lane));
        let theta = from_ordered_bits(redux_min_sync(FULL_MASK, pair));
        // temper_floor gives -inf (no filter) wherever its margin argument fails (θ = ±inf,
        // t = +inf, values near 0).
        temper_floor(temper(theta, t), t)
    }
}

/// A greedy round of a lane's 8 values `y` from token `first`: the running maximum (value,
/// then index) and the valid and `+inf` counts. A lane meets its tokens in index order, so `>`
/// keeps the lowest index of a tie. Tokens are counted one by one only in a lane whose round
/// has a -inf or +inf (the values are never NaN, so the float minimum and maximum tell).
/// [`scan_max_slots`] calls it; `scan_rounds` keeps its own copy of these lines, since calling
/// this there changed `sample_tiles`' SASS, which session 30 kept as measured.
#[inline(always)]
fn max_round(y: &[f32; 8], first: u32, best: (&mut f32, &mut u32), counts: (&mut u32, &mut u32)) {
    let ((best_y, best_i), (valid, infinite)) = (best, counts);
    let (mut least, mut most) = (f32::INFINITY, f32::NEG_INFINITY);
    each8(|j| {
        if y[j] > *best_y {
            *best_y = y[j];
            *best_i = first + j as u32;
        }
        least = least.min(y[j]);
        most = most.max(y[j]);
    });
    if least > f32::NEG_INFINITY {
        *valid += LANE_TOKENS;
    } else {
        each8(|j| *valid += (y[j] > f32::NEG_INFINITY) as u32);
    }
    if most == f32::INFINITY {
        each8(|j| *infinite += (y[j] == f32::INFINITY) as u32);
    }
}

/// [`scan_rounds`] for a plain row of a greedy step (`sample_tiles_greedy`): three rounds a
/// pass, each round's logits in a slot of its own, which loads the logits three rounds on once
/// its round is done. `scan_rounds` rotates a ring of three by moves instead, and the move of
/// the load just issued waited on it (47% of the greedy loop's stall samples at B = 64:
/// session 30). A function of its own so that `sample_tiles` keeps its loop: with this one for
/// its greedy rows, top-k 50 steps took 1.2% longer at B = 64.
///
/// # Safety
/// As for [`scan_rounds`].
#[inline(always)]
unsafe fn scan_max_slots(p: &StepParams, scan: &TileScan, raw: [[f32; 8]; 3]) -> TileResult {
    let lane = lane_id();
    let (mut best_y, mut best_i) = (f32::NEG_INFINITY, 0u32);
    let (mut valid, mut infinite) = (0u32, 0u32);
    let [mut raw_a, mut raw_b, mut raw_c] = raw;
    let limit = (scan.start + scan.end_round * ROUND_TOKENS).min(p.vocab);
    let mut round_start = scan.start + scan.first_round * ROUND_TOKENS;
    // One round on the logits in `$slot`, which then takes the logits three rounds on; false
    // past the limit. A macro, so that the slots stay registers (a closure taking them by
    // reference put them on the stack).
    macro_rules! round {
        ($slot:ident) => {
            if round_start >= limit {
                false
            } else {
                let first = round_start + lane * LANE_TOKENS;
                // SAFETY: loads and prefetches inside the row, clipped to the vocab (whole warp).
                unsafe {
                    if round_start + PREFETCH_ROUNDS * ROUND_TOKENS < limit {
                        prefetch_round(p, scan.row.logits, first + PREFETCH_ROUNDS * ROUND_TOKENS);
                    }
                    max_round(&plain_untempered8(&$slot), first, (&mut best_y, &mut best_i), (&mut valid, &mut infinite));
                    // Rounds past the limit hold no token of this warp: not loaded.
                    if round_start + 3 * ROUND_TOKENS < limit {
                        $slot = load_raw8(p, scan.row.logits, scan.row.vector_ok, first + 3 * ROUND_TOKENS);
                    }
                }
                round_start += ROUND_TOKENS;
                true
            }
        };
    }
    while round!(raw_a) && round!(raw_b) && round!(raw_c) {}
    // SAFETY: the whole warp is here.
    unsafe {
        let valid = redux_add_sync(FULL_MASK, valid);
        let infinite = redux_add_sync(FULL_MASK, infinite);
        let list = warp_max_u64(if best_y > f32::NEG_INFINITY { sort_key(best_y, best_i) } else { 0 });
        TileResult { list, valid, infinite, ceiling: f32::NEG_INFINITY, waiting: 0 }
    }
}

/// [`scan_max_slots`] for half-width logits (bf16, f16): each slot holds two rounds as raw
/// words ([`load_half_pair`]), widened only when their round comes, so three slots keep six
/// rounds (the bytes f32's three are) in flight. Widened at the load, a round waited on its
/// load at once: bf16 greedy steps moved half f32's bytes in the same time (session 47's grid,
/// B = 1024). One loop per `DTYPE` (bf16, f16): with the dtype a run-time value, each word's
/// widening branched around the f16 path, and a third of the kernel's cycles at bf16
/// B = 1024 waited on instruction fetch (session 48).
///
/// # Safety
/// As for [`scan_rounds`]; `raw` holds this warp's first three pairs as [`load_half_pair`]
/// gives them, bit-cast to f32.
#[inline(always)]
unsafe fn scan_max_pairs<const DTYPE: u32>(p: &StepParams, scan: &TileScan, raw: [[f32; 8]; 3]) -> TileResult {
    let lane = lane_id();
    let (mut best_y, mut best_i) = (f32::NEG_INFINITY, 0u32);
    let (mut valid, mut infinite) = (0u32, 0u32);
    let [mut pair_a, mut pair_b, mut pair_c] = raw;
    let limit = (scan.start + scan.end_round * ROUND_TOKENS).min(p.vocab);
    let mut round_start = scan.start + scan.first_round * ROUND_TOKENS;
    // A pass over the two rounds in `$slot`, which then takes the pair six rounds on; false
    // past the limit. A part has an even number of rounds, so a pair is never split between
    // warps. A macro for the reason `scan_max_slots` gives.
    macro_rules! pair {
        ($slot:ident) => {
            if round_start >= limit {
                false
            } else {
                let first = round_start + lane * LANE_TOKENS;
                // SAFETY: loads and prefetches inside the row, clipped to the vocab (whole warp).
                unsafe {
                    if round_start + 2 * PREFETCH_ROUNDS * ROUND_TOKENS < limit {
                        prefetch_round(p, scan.row.logits, first + 2 * PREFETCH_ROUNDS * ROUND_TOKENS);
                        prefetch_round(p, scan.row.logits, first + (2 * PREFETCH_ROUNDS + 1) * ROUND_TOKENS);
                    }
                    max_round(&plain_untempered8(&widen_bits(&$slot, DTYPE)), first, (&mut best_y, &mut best_i), (&mut valid, &mut infinite));
                    if round_start + ROUND_TOKENS < limit {
                        let w = f32_as_bits(&$slot);
                        let high = widen8(&[w[4], w[5], w[6], w[7], NAN_WORD, NAN_WORD, NAN_WORD, NAN_WORD], DTYPE);
                        max_round(&plain_untempered8(&high), first + ROUND_TOKENS, (&mut best_y, &mut best_i), (&mut valid, &mut infinite));
                    }
                    if round_start + 6 * ROUND_TOKENS < limit {
                        $slot = bits_as_f32(&load_half_pair(p, scan.row.logits, scan.row.vector_ok, first + 6 * ROUND_TOKENS));
                    }
                }
                round_start += 2 * ROUND_TOKENS;
                true
            }
        };
    }
    while pair!(pair_a) && pair!(pair_b) && pair!(pair_c) {}
    // SAFETY: the whole warp is here.
    unsafe {
        let valid = redux_add_sync(FULL_MASK, valid);
        let infinite = redux_add_sync(FULL_MASK, infinite);
        let list = warp_max_u64(if best_y > f32::NEG_INFINITY { sort_key(best_y, best_i) } else { 0 });
        TileResult { list, valid, infinite, ceiling: f32::NEG_INFINITY, waiting: 0 }
    }
}

/// This lane's half-width logits of the round at `base` (words 0..4) and of the round after it
/// (words 4..8), each as [`load_bits8`] gives them.
///
/// # Safety
/// As for [`load_bits8`]; the row's logits are bf16 or f16.
#[inline(always)]
unsafe fn load_half_pair(p: &StepParams, logits: u64, vector_ok: bool, base: u32) -> RawBits {
    // SAFETY: forwarded.
    let (a, b) = unsafe { (load_bits8(p, logits, vector_ok, base), load_bits8(p, logits, vector_ok, base + ROUND_TOKENS)) };
    [a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]]
}

/// The rounds of one tile for one (mode, features) pair. `raw` holds this lane's logits of
/// the first three rounds, already requested; with `RING` (`sample_tiles_ring`) they are in
/// the warp's ring instead (`raw` unused), and every round is taken from it. `WORDS`: with
/// `DTYPE_F32`, `raw` and the rounds loaded ahead are widened values; with `DTYPE_BF16` or
/// `DTYPE_F16` (a plain row of `sample_tiles_half`), raw words of that dtype bit-cast to f32,
/// widened in their round, since a widening at the load waits for the load.
///
/// # Safety
/// All 32 lanes call it together; `scan` describes a valid row and tile of `p`; with `RING`,
/// [`ring_fetch`] has requested this warp's first `RING_AHEAD` rounds into `scan.ring`, one
/// group each, and nothing since.
#[inline(always)]
unsafe fn scan_rounds<const MODE: u32, const FEATURES: u32, const RING: bool, const WORDS: u32>(
    p: &StepParams,
    scan: &TileScan,
    raw: [[f32; 8]; 3],
) -> TileResult {
    let lane = lane_id();
    let t = scan.row.settings.temperature;
    let overflow_floor = temper_overflow_floor(t);
    let mut top = TopList { list: 0, threshold: 0, waiting: 0 };
    let mut floor_y = f32::NEG_INFINITY;
    let (mut best_y, mut best_i) = (f32::NEG_INFINITY, 0u32);
    let (mut valid, mut infinite) = (0u32, 0u32);
    // SAFETY (whole warp; MODE and FEATURES are constants, every other branch is warp-uniform):
    // this warp's shared slots; loads clipped to the vocab and the row's buffers.
    unsafe {
        if MODE == MODE_CANDIDATES {
            reset_count(scan.shared);
        }
        let first0 = scan.start + scan.first_round * ROUND_TOKENS + lane * LANE_TOKENS;
        // How far ahead logits are loaded is what the registers allow under 80 (24 warps per
        // SM): three rounds for plain rows, none with features (whose counts take 8 more);
        // other warps hide the rest. Early loads not used are reloaded from cache. Mask words
        // are loaded one round ahead, penalty counts in their round. The ring keeps every
        // row's logits three rounds ahead without registers.
        let ahead_rounds = if FEATURES == PLAIN && !RING { 3 } else { 0 };
        let (logits, vector_ok) = (scan.row.logits, scan.row.vector_ok);
        if MODE == MODE_CANDIDATES && FEATURES == PLAIN {
            let own = (scan.end_round - scan.first_round).min(3);
            floor_y = if RING {
                // The floor from the rounds already requested: all of them in, read without
                // being taken. Only this warp's own rounds count (`own`); a slot past them
                // holds nothing requested and is not used.
                cp_async_wait_group::<0>();
                let read = |k: u32| widen8(&ring_read(p, logits, vector_ok, scan.ring, k, first0 + k * ROUND_TOKENS), p.dtype);
                loaded_floor(&[read(0), read(1), read(2)], own, t)
            } else {
                loaded_floor(&if WORDS != DTYPE_F32 { [widen_bits(&raw[0], WORDS), widen_bits(&raw[1], WORDS), widen_bits(&raw[2], WORDS)] } else { raw }, own, t)
            };
        }
        let mut slot = 0;
        let [mut raw_a, mut raw_b, mut raw_c] = raw;
        let mut mask = if FEATURES != PLAIN { load_mask(p, &scan.row, first0) } else { u32::MAX };
        // The loop runs on the round's first token against one limit (the end of this warp's
        // rounds or the vocab): what is live across it is what 80 registers allow.
        let limit = (scan.start + scan.end_round * ROUND_TOKENS).min(p.vocab);
        let mut round_start = scan.start + scan.first_round * ROUND_TOKENS;
        let mut later_round = false;
        while round_start < limit {
            let first = round_start + lane * LANE_TOKENS;
            // Greedy rows only: for top-k rows it measured 2.5% slower at B = 256.
            if MODE == MODE_MAX && round_start + PREFETCH_ROUNDS * ROUND_TOKENS < limit {
                prefetch_round(p, scan.row.logits, first + PREFETCH_ROUNDS * ROUND_TOKENS);
            }
            // Rounds past the limit hold no token of this warp (or none at all): not loaded.
            let raw_ahead = if ahead_rounds > 0 && round_start + ahead_rounds * ROUND_TOKENS < limit {
                if WORDS != DTYPE_F32 {
                    bits_as_f32(&load_bits8(p, scan.row.logits, scan.row.vector_ok, first + ahead_rounds * ROUND_TOKENS))
                } else {
                    load_raw8(p, scan.row.logits, scan.row.vector_ok, first + ahead_rounds * ROUND_TOKENS)
                }
            } else {
                [f32::NAN; 8]
            };
            if ahead_rounds == 0 && later_round && !RING {
                raw_a = load_raw8(p, scan.row.logits, scan.row.vector_ok, first);
            }
            let raw = if RING {
                let raw = widen8(&ring_take(p, logits, vector_ok, scan.ring, slot, first), p.dtype);
                let ahead = scan.first_round + slot + RING_AHEAD < scan.end_round;
                ring_fetch(p, logits, vector_ok, scan.ring, slot + RING_AHEAD, first + RING_AHEAD * ROUND_TOKENS, ahead);
                raw
            } else if WORDS != DTYPE_F32 {
                widen_bits(&raw_a, WORDS)
            } else {
                raw_a
            };
            let mask_ahead = if FEATURES != PLAIN && round_start + ROUND_TOKENS < limit {
                load_mask(p, &scan.row, first + ROUND_TOKENS)
            } else {
                u32::MAX
            };
            // A plain top-k row's round compares the raw logits: what the plain prologue does
            // (NaN to -inf, -0 to +0) changes no comparison below but the least value's
            // (`min_nan_f32` there), and the tokens through the floor take it in the loop.
            let raw_round = MODE == MODE_CANDIDATES && FEATURES == PLAIN;
            let y = if FEATURES != PLAIN {
                let counts = load_counts(p, &scan.row, first);
                prologue8(p, scan, first, &RoundInput { raw, counts, mask })
            } else if raw_round {
                raw
            } else {
                plain_untempered8(&raw)
            };
            if MODE == MODE_CANDIDATES && FEATURES != PLAIN {
                // No loaded floor here: the least of the lanes' largest `y` this round has 32
                // tokens of the round at or above it, so below `temper_floor` of its tempered
                // value a token cannot make the list (the round's own floor, never lowered).
                let mut lane_best = f32::NEG_INFINITY;
                each8(|j| lane_best = if y[j] > lane_best { y[j] } else { lane_best });
                let least = redux_min_sync(FULL_MASK, if lane_best > f32::NEG_INFINITY { ordered_bits(lane_best) } else { 0 });
                if least != 0 {
                    let own = temper_floor(temper(from_ordered_bits(least), t), t);
                    floor_y = if own > floor_y { own } else { floor_y };
                }
            }
            if MODE == MODE_MAX {
                // A lane meets its tokens in index order, so `>` keeps the lowest index of a tie.
                // Tokens are counted one by one only in a lane whose round has a -inf or +inf
                // (the values are never NaN, so the float minimum and maximum tell).
                let (mut least, mut most) = (f32::INFINITY, f32::NEG_INFINITY);
                each8(|j| {
                    if y[j] > best_y {
                        best_y = y[j];
                        best_i = first + j as u32;
                    }
                    least = least.min(y[j]);
                    most = most.max(y[j]);
                });
                if least > f32::NEG_INFINITY {
                    valid += LANE_TOKENS;
                } else {
                    each8(|j| valid += (y[j] > f32::NEG_INFINITY) as u32);
                }
                if most == f32::INFINITY {
                    each8(|j| infinite += (y[j] == f32::INFINITY) as u32);
                }
            } else if MODE == MODE_CANDIDATES {
                // Below the floor a token cannot reach the threshold, so it is not tempered (unless
                // tempering could overflow a finite value to -inf). The few that are go through a
                // loop over their bits: a branch per token would be if-converted and every token
                // would pay for `temper` (a division per token until session 7).
                //
                // Branch-free a token: every token above -inf counts as valid here, and the loop
                // corrects the count of those it tempers. Values below the overflow floor are
                // looked for only in a lane that has one (never for t >= 1). A test and count
                // per token written with `||` took a branch and a reconvergence each (108 warp
                // instructions a round with the prologue, 57 now: session 35).
                let mut lane_least = f32::INFINITY;
                if raw_round {
                    // NaN when the lane has a NaN token: counted one by one below, as -inf.
                    each8(|j| lane_least = min_nan_f32(lane_least, y[j]));
                } else {
                    each8(|j| lane_least = lane_least.min(y[j]));
                }
                if lane_least > f32::NEG_INFINITY {
                    valid += LANE_TOKENS;
                } else {
                    each8(|j| valid += (y[j] > f32::NEG_INFINITY) as u32);
                }
                let mut slow = 0u32;
                each8(|j| slow |= ((y[j] >= floor_y) as u32) << j);
                // Not `<`: a NaN least (a raw round) must look too.
                if !(lane_least >= overflow_floor) {
                    each8(|j| slow |= ((y[j] < overflow_floor && y[j] > f32::NEG_INFINITY) as u32) << j);
                }
                let before = top.threshold;
                append_round(&mut top, scan.shared, slow, floor_y == f32::NEG_INFINITY, |j| {
                    let v = if raw_round { plain_untempered(pick8(&y, j)) } else { pick8(&y, j) };
                    let x = temper(v, t);
                    (v, x, if x > f32::NEG_INFINITY { sort_key(x, first + j) } else { 0 })
                }, |v, x| {
                    // Valid if tempered above -inf, not as counted above (v above -inf).
                    valid = valid.wrapping_add((x > f32::NEG_INFINITY) as u32).wrapping_sub((v > f32::NEG_INFINITY) as u32);
                    infinite += (x == f32::INFINITY) as u32;
                });
                if top.threshold != before {
                    // Never lowered: a floor valid under a smaller threshold stays valid (and
                    // temper_floor gives -inf near 0, below a loaded floor).
                    let raised = temper_floor(key_value(top.threshold), t);
                    floor_y = if raised > floor_y { raised } else { floor_y };
                }
            }
            match ahead_rounds {
                0 => {}
                1 => raw_a = raw_ahead,
                2 => {
                    raw_a = raw_b;
                    raw_b = raw_ahead;
                }
                _ => {
                    raw_a = raw_b;
                    raw_b = raw_c;
                    raw_c = raw_ahead;
                }
            }
            mask = mask_ahead;
            round_start += ROUND_TOKENS;
            later_round = true;
            slot += 1;
        }
        let valid = redux_add_sync(FULL_MASK, valid);
        let infinite = redux_add_sync(FULL_MASK, infinite);
        // The buffer's last keys are merged by the caller (`scan_tile`), once for both loops.
        let list = if MODE == MODE_MAX {
            warp_max_u64(if best_y > f32::NEG_INFINITY { sort_key(best_y, best_i) } else { 0 })
        } else {
            top.list
        };
        TileResult { list, valid, infinite, ceiling: f32::NEG_INFINITY, waiting: top.waiting }
    }
}

/// Bias of this lane's 8 tokens at `offset` in the tile (0 where the bitmap marks none), for
/// `sample_tiles_mass`. The lookups run in a loop that is not unrolled: biased tokens are rare,
/// and eight inlined copies of [`bias_at`] were much of a round's code. (`sample_tiles` keeps
/// them inlined, [`prologue8`]: this array spilled under its 80 registers.)
///
/// # Safety
/// After [`collect_bias`] for this tile; `offset % 8 == 0`, `offset < TILE_TOKENS`.
#[inline(always)]
unsafe fn bias8(p: &StepParams, scan: &TileScan, offset: u32) -> [f32; 8] {
    let mut bias = [0.0f32; 8];
    if scan.bias_found == 0 {
        return bias;
    }
    // SAFETY: forwarded.
    let mut marked = unsafe { biased8(scan, offset) };
    while marked != 0 {
        pragma_nounroll();
        let j = marked.trailing_zeros();
        marked &= marked - 1;
        // SAFETY: forwarded; the bitmap marks this token.
        let b = unsafe { bias_at(p, scan, offset + j) };
        each8(|i| {
            if i as u32 == j {
                bias[i] = b;
            }
        });
    }
    bias
}

/// The rounds of one tile of a row that needs the row mass (`sample_tiles_mass`): the 32
/// largest keys and the band sums, for every feature set (`features` is a run-time value: one
/// round body for all rows keeps the kernel's code small enough for the instruction cache).
///
/// A round is unrolled over the lane's 8 tokens, all in registers, and is one basic block up
/// to the band updates but for the rare shift of the sums. It applies the prologue and the
/// temperature, takes the warp's largest and least values, then computes every token's
/// fixed-point fraction while those reductions and the round's ceiling are in flight (the
/// eight chains overlap each other too: one token at a time, a loop of dependent
/// multiply-adds, was most of this kernel's time), and adds the fractions to their bands.
/// Then it counts and marks the tokens that may pass the list's threshold; their keys are
/// built from tempered values staged in shared memory.
///
/// # Safety
/// All 32 lanes call it together; `scan` describes a valid row and tile of `p`.
#[inline(always)]
unsafe fn scan_mass(p: &StepParams, scan: &TileScan, features: u32, max_only: bool) -> TileResult {
    let lane = lane_id();
    let scale = temper_scale(scan.row.settings.temperature);
    let mut top = TopList { list: 0, threshold: 0, waiting: 0 };
    // `max_only` (stage 2 reads no list, `needs_candidates`): the tile's largest key instead of
    // a list, warp-uniform: the largest value so far (ordered bits, 0 for none) and the index
    // of its first token.
    let (mut best_bits, mut best_index) = (0u32, 0u32);
    let (mut valid, mut infinite) = (0u32, 0u32);
    let mut ceiling = f32::NEG_INFINITY;
    let stage = scan.shared + W_STAGE + lane * 4;
    // SAFETY (whole warp; every branch on `features`, `top` and `ceiling` is warp-uniform): this
    // warp's shared slots (staging and band slots are lane-private); loads clipped to the vocab
    // and the row's buffers.
    unsafe {
        let mut d = 0;
        while d < BANDS {
            st_shared_u32(band_slot(scan.bands, d, lane), 0);
            d += 1;
        }
        if !max_only {
            reset_count(scan.shared);
        }
        let first0 = scan.start + lane * LANE_TOKENS;
        // Logits three rounds ahead, whatever the features, in the ring (`ring_fetch`).
        let ring = scan.ring;
        let mut mask = if features != PLAIN { load_mask(p, &scan.row, first0 + scan.first_round * ROUND_TOKENS) } else { u32::MAX };
        let mut round = scan.first_round;
        while round < scan.end_round && scan.start + round * ROUND_TOKENS < p.vocab {
            let first = first0 + round * ROUND_TOKENS;
            let (logits, vector_ok, slot) = (scan.row.logits, scan.row.vector_ok, round - scan.first_round);
            let bits = ring_take(p, logits, vector_ok, ring, slot, first);
            ring_fetch(p, logits, vector_ok, ring, slot + RING_AHEAD, first + RING_AHEAD * ROUND_TOKENS, round + RING_AHEAD < scan.end_round);
            let raw = widen8(&bits, p.dtype);
            let mask_ahead = if features != PLAIN && round + 1 < scan.end_round {
                load_mask(p, &scan.row, first + ROUND_TOKENS)
            } else {
                u32::MAX
            };
            // Pass 1: x = temper(prologue), and the lane's largest x (temper is not monotone at
            // t = +inf, so the largest is taken after it).
            let y = if features != PLAIN {
                // The bias lookups out of line (`bias8`): smaller code, which this kernel's
                // registers allow.
                let input = RoundInput { raw, counts: load_counts(p, &scan.row, first), mask };
                let bias = bias8(p, scan, first - scan.start);
                prologue8_with(scan, first, &input, |j| bias[j])
            } else {
                // A plain row's prologue (NaN → -inf, -0 → +0) is what `temper_by` does anyway
                // (`logit`'s `plain_prologue_shortcuts_match_the_prologue`).
                raw
            };
            // The largest and least as floats: the values are never NaN nor -0, so this orders
            // them as their ordered bits do, at one instruction a token.
            let mut x = [f32::NEG_INFINITY; 8];
            let (mut lane_max, mut lane_min) = (f32::NEG_INFINITY, f32::INFINITY);
            each8(|j| {
                x[j] = temper_by(y[j], scale);
                lane_max = lane_max.max(x[j]);
                lane_min = lane_min.min(x[j]);
            });
            let lane_top = if lane_max > f32::NEG_INFINITY { ordered_bits(lane_max) } else { 0 };
            let round_top = redux_max_sync(FULL_MASK, lane_top);
            // Taken in every round (max_only has no use for it): a reduction under a branch
            // would end the block.
            let least_top = redux_min_sync(FULL_MASK, lane_top);
            // Each token's fraction weight and integer ceiling do not depend on the round's
            // ceiling. Computed here, in one basic block with everything up to the band updates,
            // the eight chains of multiply-adds fill the wait on the reductions and the ceiling,
            // which ran before them with nothing to overlap.
            let (mut weight, mut token_ceil) = ([0u32; 8], [0i32; 8]);
            each8(|j| {
                // A token outside the ceiling's 37 bands adds to the discard row. The band is an
                // integer difference (`small_ceil`): no conversion. A token with |x| >= 2^22, or
                // not finite, is in no band of a ceiling that stage 2 uses (`bands_usable`):
                // `NO_BAND_CEIL` puts it in the discard row under every ceiling.
                let small = x[j] < CEIL_LIMIT && x[j] > -CEIL_LIMIT;
                let v = if small { x[j] } else { 0.0 };
                let (c, ci) = small_ceil(v);
                weight[j] = frac_weight(v - c);
                token_ceil[j] = if small { ci } else { NO_BAND_CEIL };
            });
            // The round's ceiling with selects: only the shift of the sums is a branch, just
            // before the band updates, the first to need it. (`soft_ceil` of round_top's bits
            // when it is 0, no value, is discarded.)
            let top_ceil = soft_ceil(from_ordered_bits(round_top));
            let round_ceil = if round_top != 0 { top_ceil } else { f32::NEG_INFINITY };
            let shift = round_ceil > ceiling && ceiling > f32::NEG_INFINITY;
            let shift_by = round_ceil - ceiling;
            ceiling = if round_ceil > ceiling { round_ceil } else { ceiling };
            // Once per round, so a conversion is fine; outside the range, bands are never used
            // (`CEIL_LIMIT`) and any value keeps the slots in bounds.
            let ceiling_i = ceiling_index(ceiling);
            let mut slot = [0u32; 8];
            each8(|j| {
                let band = ceiling_i.wrapping_sub(token_ceil[j]) as u32;
                let band = if band < BANDS { band } else { DISCARD_BAND };
                slot[j] = band_slot(scan.bands, band, lane);
            });
            if shift {
                shift_bands(scan.bands, shift_by);
            }
            // The band updates as reductions with no returned value: a load, add and store per
            // token made each update wait for the one before (two of a lane's tokens may share a
            // slot), eight shared-memory round trips in a chain.
            each8(|j| red_add_shared_u32(slot[j], weight[j]));
            if max_only && round_top > best_bits {
                // Strictly larger: on a tie the earlier round's token, whose index is lower.
                // In a round, a lower lane holds lower indices.
                let mut at = LANE_TOKENS;
                each8(|j| {
                    if at == LANE_TOKENS && x[j] == lane_max {
                        at = j as u32;
                    }
                });
                let holders = ballot(FULL_MASK, lane_top == round_top);
                best_index = shfl_idx_u32(FULL_MASK, first + at, holders.trailing_zeros());
                best_bits = round_top;
            }
            if round_top == ORDERED_INFINITY {
                // +inf tokens are counted only in rounds that have one (never in finite rows).
                each8(|j| infinite += (x[j] == f32::INFINITY) as u32);
            }
            if lane_min > f32::NEG_INFINITY {
                valid += LANE_TOKENS; // the common case: no token of the lane is masked or -inf
            } else {
                each8(|j| valid += (x[j] > f32::NEG_INFINITY) as u32);
            }
            if !max_only {
                // A bit for each token whose value reaches the threshold's (a key above the
                // threshold has at least its value) and the least of the lanes' largest values
                // in this round: 32 tokens of the round are at or above that, so a token below
                // it is not in the tile's top 32. Without it the first round appended all 256
                // tokens, about half the keys a tile merged.
                let list_floor = if top.threshold == 0 { f32::NEG_INFINITY } else { key_value(top.threshold) };
                let round_floor = if least_top == 0 { f32::NEG_INFINITY } else { from_ordered_bits(least_top) };
                let floor_x = if round_floor > list_floor { round_floor } else { list_floor };
                let mut passed = 0u32;
                each8(|j| {
                    st_shared_u32(stage + j as u32 * 128, x[j].to_bits());
                    passed |= ((x[j] > f32::NEG_INFINITY && x[j] >= floor_x) as u32) << j;
                });
                // The marked tokens' keys, from the staged values, go to the buffer at once (a
                // warp prefix sum of the lanes' counts) and are merged in chunks of 32. A token
                // tied with the threshold's value may be marked with a smaller key; merging it
                // changes nothing. Each lane reads only its own staged values, so no sync_warp is
                // needed for them.
                insert_round(&mut top, scan.shared, passed, |j| sort_key(f32::from_bits(ld_shared_u32(stage + j * 128)), first + j));
            }
            mask = mask_ahead;
            round += 1;
        }
        if max_only && lane == 0 && best_bits != 0 {
            top.list = key_of_ordered(best_bits, best_index);
        }
        TileResult {
            list: top.list,
            valid: redux_add_sync(FULL_MASK, valid),
            infinite: redux_add_sync(FULL_MASK, infinite),
            ceiling,
            waiting: top.waiting,
        }
    }
}

/// Merges the results of a tile's parts, in the warp of part 0 (the others' return values are
/// unused): the top 32 of their lists (greedy: the largest key), the summed counts and the
/// highest band ceiling, which is the record a single warp scanning the whole tile writes
/// (the band sums are merged from the parts' shared regions by the caller, [`scan_tile`]).
///
/// # Safety
/// All 32 lanes of each of the tile's `parts` warps call it together, and they are the
/// consecutive warps `group · parts ..` of the block (see [`scan_tile`]); `shared` is the
/// calling warp's region of the kernel's layout (the warps' regions are `stride` bytes apart),
/// and its buffer is free.
#[inline(always)]
unsafe fn merge_parts(res: TileResult, greedy: bool, shared: u32, (part, parts): (u32, u32), stride: u32) -> TileResult {
    let lane = lane_id();
    // SAFETY (whole warps of the group): each warp writes its own buffer; the named barrier
    // (one per group, at most 4 groups; no other barrier is used in these kernels) orders the
    // writes before part 0 reads the other warps' buffers, which are not written again before
    // the group's next barrier.
    unsafe {
        sync_warp(FULL_MASK);
        st_shared_u64(shared + W_BUFFER + lane * 8, res.list);
        if lane == 0 {
            st_shared_u32(shared + W_PART_VALID, res.valid);
            st_shared_u32(shared + W_PART_INFINITE, res.infinite);
            st_shared_u32(shared + W_PART_CEILING, res.ceiling.to_bits());
        }
        sync_group(parts);
        if part != 0 {
            return res;
        }
        let (mut list, mut valid, mut infinite, mut ceiling) = (res.list, res.valid, res.infinite, res.ceiling);
        let mut k = 1;
        while k < parts {
            let other = shared + k * stride;
            list = if greedy {
                max_u64(list, ld_shared_u64(other + W_BUFFER + lane * 8))
            } else {
                merge_sorted_top32(list, ld_shared_u64(other + W_BUFFER + (31 - lane) * 8))
            };
            valid += ld_shared_u32(other + W_PART_VALID);
            infinite += ld_shared_u32(other + W_PART_INFINITE);
            let c = f32::from_bits(ld_shared_u32(other + W_PART_CEILING));
            ceiling = if c > ceiling { c } else { ceiling };
            k += 1;
        }
        TileResult { list, valid, infinite, ceiling, waiting: 0 }
    }
}

/// The named barrier of this warp's group of `parts` consecutive warps (ids 1 ..= 4, one per
/// group, named by constants: with a register id, ptxas reserves all 16 barriers).
///
/// # Safety
/// Every warp of the group calls it, converged; `parts` divides the block's warps and leaves
/// at most 4 groups.
#[inline(always)]
unsafe fn sync_group(parts: u32) {
    // SAFETY: forwarded.
    unsafe {
        match volatile_warp_id() / parts {
            0 => sync_named::<1>(parts * 32),
            1 => sync_named::<2>(parts * 32),
            2 => sync_named::<3>(parts * 32),
            _ => sync_named::<4>(parts * 32),
        }
    }
}

/// This warp's part of its tile in `sample_tiles`, and the parts per tile (`tile_split`:
/// 2, 4 or 8; else 1). Read again where needed: cheaper than keeping it in registers.
#[inline(always)]
fn tile_part(p: &StepParams) -> (u32, u32) {
    let parts = match p.tile_split {
        2 | 4 | 8 => p.tile_split,
        _ => 1,
    };
    (volatile_warp_id() % parts, parts)
}

/// Scans this warp's part of tile `tile` of `row` (`16 / parts` rounds each; the part is
/// `tile_part` in `sample_tiles`, `mass_part` in `sample_tiles_mass`) if the row belongs to
/// this kernel; the warp of part 0 merges the parts and writes the record. `GREEDY_STEP`
/// (`sample_tiles_greedy`): every row is this kernel's and is scanned for its maximum alone.
/// `RING` (`sample_tiles_ring`): `sample_tiles` with its logits in the warp's ring, as the mass
/// scan's are. `HALF` (`sample_tiles_half`): a plain row's bf16 or f16 rounds loaded ahead are
/// raw words, widened in their round (`sample_tiles_greedy` does so too, in pairs).
/// In that kernel a plain row (no bitmask, bias or penalties) scans the `span_left` tiles from
/// `tile` in one pass (`sample_tiles_greedy_pairs`): the first tile's record holds their
/// maximum and counts, the others' hold none. Returns, in that kernel, how many tiles the warp
/// counts: those whose records it wrote (part 0), or `span_left` when its row is active and
/// not addressable (no record); otherwise 0.
///
/// # Safety
/// All 32 lanes call it together; `row < rows`, `tile < tiles`, `tile + span_left <= tiles`
/// (`span_left` is 1 outside `sample_tiles_greedy_pairs`); `p` describes valid buffers;
/// `region` is this warp's shared region of the kernel's size. With `parts > 1`, the `parts`
/// warps of the tile are consecutive warps of one block, and every one of them calls this
/// function with the same (row, tile).
#[inline(always)]
unsafe fn scan_and_record<const MASS_KERNEL: bool, const GREEDY_STEP: bool, const RING: bool, const HALF: bool>(
    p: &StepParams,
    row: u32,
    tile: u32,
    region: u32,
    mass_part: (u32, u32),
    span_left: u32,
) -> u32 {
    let (part, parts) = if MASS_KERNEL { mass_part } else { tile_part(p) };
    let lane = lane_id();
    let start = tile * TILE_TOKENS;
    let (first_round, end_round) = (part * (ROUNDS / parts), (part + 1) * (ROUNDS / parts));
    let (logits, vector_ok) = row_logits(p, row);
    // The first rounds' logits go out before the settings: their address needs none. A
    // `sample_tiles` warp with two rounds (a tile split 8 ways) loads its neighbour's first
    // round as its third, unused, which the neighbour loads at the same time: skipping it
    // spilled registers. (The ring builds skip such a round.)
    let first0 = start + first_round * ROUND_TOKENS + lane * LANE_TOKENS;

    // `sample_tiles_mass` and `sample_tiles_ring` request them into the warp's ring
    // (`ring_fetch`; waited for before the ring is used again if the row is not scanned);
    // `sample_tiles` takes f32 as its round loop does, widened at the load (measured: greedy
    // B = 1024 was 6% slower with the deferred widening); half-width logits stay raw words
    // until their round (`sample_tiles_half`, `sample_tiles_greedy`).
    let ring = if MASS_KERNEL { region + BAND_BYTES + W_RING } else { region + W_TILES_RING };
    // SAFETY: row < rows; load_raw8 clips to the vocab, ring_fetch to whole vectors inside it;
    // the ring is this warp's and free (every earlier copy was waited for).
    let raw_f32 = unsafe {
        if MASS_KERNEL || RING {
            let mut k = 0;
            while k < RING_AHEAD {
                ring_fetch(p, logits, vector_ok, ring, k, first0 + k * ROUND_TOKENS, first_round + k < end_round);
                k += 1;
            }
            [[f32::NAN; 8]; 3]
        } else if GREEDY_STEP && p.dtype != DTYPE_F32 {
            // Half-width logits stay raw words, two rounds a slot (`scan_max_pairs`); pairs
            // past this warp's part are not loaded.
            let pair = |k: u32| {
                if first_round + 2 * k < end_round {
                    bits_as_f32(&load_half_pair(p, logits, vector_ok, first0 + 2 * k * ROUND_TOKENS))
                } else {
                    [f32::NAN; 8]
                }
            };
            [pair(0), pair(1), pair(2)]
        } else if HALF && p.dtype != DTYPE_F32 {
            // Raw words, widened in their round (`scan_rounds`' `WORDS`): widened here, each
            // round waited on its load at once.
            [
                bits_as_f32(&load_bits8(p, logits, vector_ok, first0)),
                bits_as_f32(&load_bits8(p, logits, vector_ok, first0 + ROUND_TOKENS)),
                bits_as_f32(&load_bits8(p, logits, vector_ok, first0 + 2 * ROUND_TOKENS)),
            ]
        } else {
            [
                load_raw8(p, logits, vector_ok, first0),
                load_raw8(p, logits, vector_ok, first0 + ROUND_TOKENS),
                load_raw8(p, logits, vector_ok, first0 + 2 * ROUND_TOKENS),
            ]
        }
    };
    // SAFETY: one u32 and one settings entry (row < rows).
    let (active, s) = unsafe { (active_rows(p), read_settings(p, row)) };
    if row >= active {
        return 0;
    }
    if !row_addressable(p, &s) {
        // No record: stage 2 (or the greedy finish) refuses the row.
        return if GREEDY_STEP { span_left } else { 0 };
    }
    let greedy = GREEDY_STEP || s.temperature == 0.0;
    if !GREEDY_STEP && needs_row_mass(&s) != MASS_KERNEL {
        return 0; // the other stage-1 kernel's row (the same answer for every part)
    }
    let r = row_setup(p, row, s);
    let (shared, bands) = if MASS_KERNEL { (region + BAND_BYTES, region) } else { (region, 0) };
    // SAFETY (whole warp from here on; every branch below is warp-uniform): shared slots of this
    // warp's region; record writes go to this (row, tile)'s record only.
    unsafe {
        let (bias_found, duplicate_bias) = if s.bias_len > 0 { collect_bias(p, &r, start, shared) } else { (0, false) };
        let features = if r.counts != 0 || bias_found > 0 || r.bitmask != 0 { FEATURED } else { PLAIN };
        // A plain greedy row scans its span's tiles as one run of rounds (its first loads lie in
        // the first tile). A row with bias entries takes its tiles one a call: the bias map is
        // a tile's.
        let span_tiles = if GREEDY_STEP && span_left > 1 && features == PLAIN && s.bias_len == 0 { span_left } else { 1 };
        let end_round = if span_tiles > 1 { ROUNDS * span_tiles } else { end_round };
        let scan = TileScan { row: r, start, first_round, end_round, shared, bands, ring, bias_found };
        // Half-width logits loaded into registers are raw words (above); a featured loop takes
        // only its first round from them, widened here.
        let half = !MASS_KERNEL && !RING && (GREEDY_STEP || HALF) && p.dtype != DTYPE_F32;
        let featured_raw = if half { [widen_bits(&raw_f32[0], p.dtype), [f32::NAN; 8], [f32::NAN; 8]] } else { raw_f32 };
        let (mode, res) = if MASS_KERNEL {
            (MODE_MASS, scan_mass(p, &scan, features, !needs_candidates(&s) || lists_skipped(p, &s)))
        } else if greedy {
            let res = match features {
                PLAIN if GREEDY_STEP && half && p.dtype == DTYPE_BF16 => scan_max_pairs::<DTYPE_BF16>(p, &scan, raw_f32),
                PLAIN if GREEDY_STEP && half => scan_max_pairs::<DTYPE_F16>(p, &scan, raw_f32),
                PLAIN if GREEDY_STEP => scan_max_slots(p, &scan, raw_f32),
                PLAIN if half && p.dtype == DTYPE_BF16 => scan_rounds::<MODE_MAX, PLAIN, RING, DTYPE_BF16>(p, &scan, raw_f32),
                PLAIN if half => scan_rounds::<MODE_MAX, PLAIN, RING, DTYPE_F16>(p, &scan, raw_f32),
                PLAIN => scan_rounds::<MODE_MAX, PLAIN, RING, DTYPE_F32>(p, &scan, raw_f32),
                _ => scan_rounds::<MODE_MAX, FEATURED, RING, DTYPE_F32>(p, &scan, featured_raw),
            };
            (MODE_MAX, res)
        } else {
            let res = match features {
                PLAIN if half && p.dtype == DTYPE_BF16 => scan_rounds::<MODE_CANDIDATES, PLAIN, RING, DTYPE_BF16>(p, &scan, raw_f32),
                PLAIN if half => scan_rounds::<MODE_CANDIDATES, PLAIN, RING, DTYPE_F16>(p, &scan, raw_f32),
                PLAIN => scan_rounds::<MODE_CANDIDATES, PLAIN, RING, DTYPE_F32>(p, &scan, raw_f32),
                _ => scan_rounds::<MODE_CANDIDATES, FEATURED, RING, DTYPE_F32>(p, &scan, featured_raw),
            };
            (MODE_CANDIDATES, res)
        };
        let mut res = res;
        if mode != MODE_MAX {
            res.list = flush(res.list, res.waiting, shared);
        }
        let stride = warp_region_bytes(MASS_KERNEL, RING);
        let own_ceiling = res.ceiling;
        // The part is read again, not kept live across the scan (registers).
        let (part, parts) = if MASS_KERNEL { mass_part } else { tile_part(p) };
        let res = if parts > 1 { merge_parts(res, mode == MODE_MAX, shared, (part, parts), stride) } else { res };
        if part != 0 {
            return 0; // part 0 writes the record
        }

        let rec = record_ptr(p, row, tile);
        if mode != MODE_MAX {
            (rec as *mut u64).add(lane as usize).write(res.list);
        } else if lane == 0 {
            (rec as *mut u64).write(res.list);
        }
        let has_mass = MASS_KERNEL
            && res.valid > 0
            && res.infinite == 0
            && res.ceiling < CEIL_LIMIT
            && res.ceiling > -CEIL_LIMIT;
        if has_mass {
            // Other lanes' sums are read now (other parts' too: behind merge_parts' barrier);
            // the start rotates with the lane so that the 32 lanes hit different banks. A part
            // whose ceiling is lower by δ holds band b's tokens in its band b − δ, as a single
            // warp's sums after `shift_bands`; a part with no valid token has no sums.
            sync_warp(FULL_MASK);
            let out = (rec + 8 * TILE_CANDIDATES as u64) as *mut u64;
            let mut b = lane;
            while b < BANDS {
                let mut sum = 0u64;
                let mut q = 0;
                while q < parts {
                    let own = shared + q * stride + W_PART_CEILING;
                    let c = if q == 0 { own_ceiling } else { f32::from_bits(ld_shared_u32(own)) };
                    let delta = res.ceiling - c;
                    if c > f32::NEG_INFINITY && delta <= b as f32 {
                        // SAFETY: 0 <= delta <= b < 37: both ceilings are finite integers.
                        let src = b - delta.to_int_unchecked::<u32>();
                        let part_bands = bands + q * stride;
                        let mut k = 0;
                        while k < 32 {
                            sum += ld_shared_u32(band_slot(part_bands, src, (k + lane) & 31)) as u64;
                            k += 1;
                        }
                    }
                    q += 1;
                }
                out.add(b as usize).write(sum);
                b += 32;
            }
        }
        if lane == 0 {
            let flags = if has_mass { TILE_HAS_MASS } else { 0 } | if duplicate_bias { TILE_DUPLICATE_BIAS } else { 0 };
            write_record_tail(rec, [if has_mass { res.ceiling.to_bits() } else { 0 }, res.valid, res.infinite, flags]);
            // The span's other tiles: no key, no count, no flag (their tokens are in the first).
            let mut t = 1;
            while t < span_tiles {
                let other = record_ptr(p, row, tile + t);
                (other as *mut u64).write(0);
                write_record_tail(other, [0; 4]);
                t += 1;
            }
        }
        if GREEDY_STEP { span_tiles } else { 0 }
    }
}

/// Writes a tile record's four `u32` after its keys and bands: the band ceiling's bits, the
/// valid and `+inf` counts, the `TILE_*` flags.
///
/// # Safety
/// `rec` is a record of `p.records` ([`record_ptr`]).
#[inline(always)]
unsafe fn write_record_tail(rec: u64, tail: [u32; 4]) {
    let at = (rec + RECORD_TAIL) as *mut u32;
    // SAFETY: the four u32 at RECORD_TAIL lie inside the record.
    unsafe {
        at.write(tail[0]);
        at.add(1).write(tail[1]);
        at.add(2).write(tail[2]);
        at.add(3).write(tail[3]);
    }
}

/// Scans this warp's part of (row, tile) ([`scan_and_record`]); in a greedy step, the `span`
/// tiles from `tile` (clipped to the row's; `span` is 1 but in `sample_tiles_greedy_pairs`),
/// and the warp that wrote their records (part 0) counts them with one [`arrive`]; an active
/// row that is not addressable is counted too (the finish refuses it). The part and the
/// settings are read again here rather than kept live across the scan (registers).
///
/// # Safety
/// As for [`scan_and_record`]; `span` is 1 outside a greedy step, and more only with one part
/// a tile.
#[inline(always)]
unsafe fn scan_tile<const MASS_KERNEL: bool, const GREEDY_STEP: bool, const RING: bool, const HALF: bool, const SPAN: u32>(
    p: &StepParams,
    row: u32,
    tile: u32,
    region: u32,
    mass_part: (u32, u32),
    span: u32,
) {
    // SAFETY: forwarded; the whole warp gets the same answer; one settings entry (row < rows).
    unsafe {
        if !GREEDY_STEP || SPAN == 1 {
            // `sample_tiles_greedy` as it was before the pairs (the same SASS): the loop below,
            // in that kernel, cost its steps of one tile a warp 0.4–1.9% (session 49, run 1).
            if scan_and_record::<MASS_KERNEL, GREEDY_STEP, RING, HALF>(p, row, tile, region, mass_part, 1) != 0 && tile_part(p).0 == 0 {
                arrive(p, row, &read_settings(p, row), 1);
            }
            return;
        }
        // A plain row's span in one call; other rows a tile a call (a loop, not unrolled: one
        // copy of the scan).
        let end = if tile + span < p.tiles { tile + span } else { p.tiles };
        let (mut at, mut counted) = (tile, 0);
        while at < end {
            pragma_nounroll();
            let covered = scan_and_record::<MASS_KERNEL, GREEDY_STEP, RING, HALF>(p, row, at, region, mass_part, end - at);
            if covered == 0 {
                break;
            }
            counted += covered;
            at += covered;
            if at < end {
                // The next tile's scan clears the warp's bias map, which other lanes read in
                // this one (racecheck, session 49 run 2).
                sync_warp(FULL_MASK);
            }
        }
        if counted > 0 && tile_part(p).0 == 0 {
            arrive(p, row, &read_settings(p, row), counted);
        }
    }
}

/// Counts this warp's `tiles` records of `row` in a greedy step, after the records' writes,
/// and finishes the row (`sampler::finish_greedy_row`) in the warp whose count reaches the
/// row's tiles: then every record of the row is visible to it (the release and acquire halves
/// of `block::block_arrive`, for one warp). That warp zeroes the count for the next step.
///
/// # Safety
/// All 32 lanes call it together, once per warp span of a greedy step (each (row, tile)
/// counted once in all), after writing the tiles' records if any; `row < active rows`.
#[inline(always)]
unsafe fn arrive(p: &StepParams, row: u32, s: &RowSettings, tiles: u32) {
    let counter = (p.row_arrivals as *mut u32).wrapping_add(row as usize);
    // SAFETY: `bar.warp.sync` orders the lanes' record writes before lane 0's release fence;
    // the counter is this row's word of `row_arrivals`; after lane 0's acquire fence the
    // second `bar.warp.sync` hands it to the lanes, which read the records with volatile loads.
    unsafe {
        sync_warp(FULL_MASK);
        let mut last = false;
        if lane_id() == 0 {
            fence_acq_rel_gpu();
            last = atom_add_global_u32(counter, tiles).wrapping_add(tiles) == p.tiles;
            if last {
                fence_acq_rel_gpu();
            }
        }
        let last = ballot(FULL_MASK, last) != 0;
        if last {
            sync_warp(FULL_MASK);
            finish_greedy_row(p, row, s);
            if lane_id() == 0 {
                counter.write(0);
            }
        }
    }
}

/// Stage 1 for rows that need no row mass: with `s = tile_split`, warp `w` of block `b` scans
/// part `w % s` of (row, tile) = divmod(b · SCAN_WARPS / s + w / s, tiles). (Its ring build,
/// [`sample_tiles_ring`], beside the mass scan takes (list position, tile) there instead, with
/// `s = listed_scan_split`: `sample_tiles_body`.)
///
/// # Safety
/// Launch with `SCAN_THREADS` threads, at least `ceil(rows · tiles · s / SCAN_WARPS)` blocks and
/// `SCAN_SHARED_BYTES` of dynamic shared memory; every pointer in `p` is valid for the sizes
/// `StepParams` documents.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn sample_tiles(p: StepParams) {
    // `sample_tiles_mass` scans other rows, so it may start as soon as this grid is placed.
    if p.overlap_stage1 != 0 {
        allow_dependent_launch();
    }
    // SAFETY: forwarded.
    unsafe { sample_tiles_body::<false, false, false, 1>(&p) }
}

/// [`sample_tiles`] for bf16 and f16 logits: the logits a plain row loads ahead are held as
/// raw words and widened in their round, not at the load, where the widening waited for the
/// load at once (`scan_rounds`' `WORDS`). A kernel of its own, so that `sample_tiles`' f32 code
/// stays as it is: with both in one kernel, f32 top-k 50 steps took 1.015× the time at
/// B = 256 (session 48, run 1). Correct for f32 logits too (widened at the load, as
/// `sample_tiles`), though the host launches it only for half-width ones.
///
/// # Safety
/// As for [`sample_tiles`].
#[no_mangle]
pub unsafe extern "ptx-kernel" fn sample_tiles_half(p: StepParams) {
    if p.overlap_stage1 != 0 {
        allow_dependent_launch();
    }
    // SAFETY: forwarded.
    unsafe { sample_tiles_body::<false, false, true, 1>(&p) }
}

/// The whole step for a greedy step (every row one that `decide::stage2_always_decides`; the
/// host launches nothing else): [`sample_tiles`]' scan, each row's maximum alone, and the warp
/// that counts a row's last tile record finishes the row (`sampler::finish_greedy_row`: the
/// outputs and state update `sample_rows` gives; a row that is not such is refused). A kernel
/// of its own, so that `sample_tiles`' code, which other steps run, has none of this.
///
/// # Safety
/// As for [`sample_tiles`]; `row_arrivals` is zero for every row (each step leaves it so).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn sample_tiles_greedy(p: StepParams) {
    // SAFETY: forwarded.
    unsafe { sample_tiles_body::<true, false, false, 1>(&p) }
}

/// [`sample_tiles_greedy`] with two tiles a warp: a plain row's warp scans both as one run of
/// rounds and writes their maximum in the first tile's record (the second's holds none), a
/// featured row's scans them one after the other, and either counts both with one arrival.
/// The host launches it for large half-width greedy grids (`abi::greedy_span`), with
/// `abi::greedy_spans` warps. A kernel of its own: in `sample_tiles_greedy`, the two-tile loop
/// made steps of one tile a warp 0.4–1.9% slower (session 49, run 1).
///
/// # Safety
/// As for [`sample_tiles_greedy`], with `tile_split` 1 and a warp per `greedy_span_item`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn sample_tiles_greedy_pairs(p: StepParams) {
    // SAFETY: forwarded.
    unsafe { sample_tiles_body::<true, false, false, 2>(&p) }
}

/// [`sample_tiles`] with each warp's logits in a ring of [`MASS_RING_ROUNDS`] round slots in
/// shared memory, filled three rounds ahead by `cp.async` copies as the mass scan's are
/// (`ring_fetch`), for every row, featured ones included: no register holds a load in flight.
/// The host launches it for grids whose warps are all resident at once (`abi::one_wave`),
/// where a warp's own lookahead is what hides the loads; in larger grids other warps do, and
/// the ring's copies, waits and shared memory (58 KiB a block, not 26) measured slower
/// (session 36).
///
/// # Safety
/// As for [`sample_tiles`], launched with [`SCAN_RING_SHARED_BYTES`] of dynamic shared memory.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn sample_tiles_ring(p: StepParams) {
    if p.overlap_stage1 != 0 {
        allow_dependent_launch();
    }
    // SAFETY: forwarded.
    unsafe { sample_tiles_body::<false, true, false, 1>(&p) }
}

/// The body of the five entry points above. `SPAN`: tiles a greedy step's warp scans (1, or 2
/// in `sample_tiles_greedy_pairs`).
///
/// # Safety
/// As for [`sample_tiles`].
#[inline(always)]
unsafe fn sample_tiles_body<const GREEDY_STEP: bool, const RING: bool, const HALF: bool, const SPAN: u32>(p: &StepParams) {
    let mut p = *p;
    // SAFETY: forwarded (a stage-1 kernel).
    unsafe { clear_exact_list_head(&p) };
    if block_dim_x() != SCAN_THREADS || p.tiles == 0 {
        return;
    }
    // Beside the mass scan, the warps go to the rows it leaves (`StepParams::scan_rows`), two a
    // tile where they fit: a warp of a mass row would only exit. The local copy carries
    // the split, which `tile_part` reads from it. Only the ring build, the one-wave grids
    // (`abi::one_wave`), whose warps a listed row's tiles can take: in `sample_tiles` the
    // list's registers spilled, and beside the mass scan on grids of several waves
    // (`overlap_stage1`) it and `sample_tiles_half` scan every row. Only where the host's split
    // is one warp a tile, which it may double (`listed_scan_split`); elsewhere the list would
    // only cost its two round trips.
    let listing = RING && !GREEDY_STEP && lists_scan_rows(p.overlap_stage1, p.tile_split);
    let list = p.scan_rows as *const u32;
    // SAFETY: the list's count (the host writes it with the settings).
    let listed = if listing { unsafe { ld_global_nc_u32(list) }.min(p.rows) } else { p.rows };
    if listing {
        p.tile_split = listed_scan_split(listed * p.tiles, grid_dim_x() * SCAN_WARPS, p.scan_resident_warps, p.tile_split);
    }
    let parts = tile_part(&p).1;
    // `sample_tiles_greedy_pairs` gives a warp `SPAN` tiles (`greedy_span`), with one part a
    // tile only (the host launches it so).
    let span = if GREEDY_STEP && SPAN > 1 && parts == 1 { SPAN } else { 1 };
    let g = block_idx_x() * (SCAN_WARPS / parts) + warp_id() / parts;
    let (at, tile) = greedy_span_item(g, p.tiles, span);
    if at >= listed {
        return; // the whole group: its warps share g
    }
    // SAFETY: at < listed ≤ rows, and the list has 1 + rows entries.
    let row = if listing { unsafe { ld_global_nc_u32(list.add(1 + at as usize)) } } else { at };
    if row >= p.rows {
        return; // a listed row past the launch: the group alike
    }
    // SAFETY: the whole warp shares (row, tile) (warp-uniform g), row < rows, tile < tiles; the
    // region is this warp's slice of the launch's shared memory; the `parts` warps of a tile
    // are consecutive in the block (parts divides SCAN_WARPS) and all get here.
    unsafe {
        scan_tile::<false, GREEDY_STEP, RING, HALF, SPAN>(&p, row, tile, smem(warp_id() * warp_region_bytes(false, RING)), (0, 1), span);
        if RING {
            // Nothing in flight when the warp leaves (a row left unscanned keeps its first
            // copies).
            cp_async_wait_all();
        }
    }
}

/// Clears the exact-pass list's head (the count, `exact_tail`'s queue and the count of block
/// rows) for this step, from block 0's thread 0. Each stage-1 kernel does: a step whose rows
/// all need the row mass launches `sample_tiles_mass` alone, and one with none of them
/// `sample_tiles` alone.
///
/// # Safety
/// Called from a stage-1 kernel: stage 2, which appends to the list, starts after it (and
/// the step's first kernel waited for the step before, whose exact pass read the list).
#[inline(always)]
unsafe fn clear_exact_list_head(p: &StepParams) {
    if block_idx_x() == 0 && thread_idx_x() == 0 {
        // SAFETY: the list holds EXACT_LIST_HEAD + rows words; see the function's contract.
        unsafe {
            (p.exact_list as *mut u32).write(0);
            (p.exact_list as *mut u32).add(1).write(0);
            (p.exact_list as *mut u32).add(EXACT_LIST_BLOCK_ROWS as usize).write(0);
        }
    }
}

/// Stage 1 for rows that need the row mass (no top-k, or log-probabilities). Persistent: the
/// grid is at most what fits on the GPU at once, and each group of `parts` consecutive warps
/// strides over the (row, tile) items of the rows the host listed (`StepParams::mass_rows`),
/// so a batch with few such rows does not pay for scheduling a block per item with this
/// kernel's shared memory, and every warp gets the same number of items give or take one
/// (`abi::mass_split` picks the parts, 1, 2 or 4, from their count).
///
/// In a step with rows of both kinds it is launched overlapped after `sample_tiles` and runs
/// alongside it: the two kernels read the same inputs (logits, settings, counts: none written
/// in the step before stage 2) and write the records of disjoint rows, so it waits for
/// `sample_tiles` only at its end, so that a kernel waiting for this one also waits for that.
/// A step whose rows all need the mass launches it first, without `sample_tiles`.
///
/// # Safety
/// Launch with `MASS_SCAN_THREADS` threads, any number of blocks, and `MASS_SCAN_SHARED_BYTES`
/// of dynamic shared memory; pointers as for [`sample_tiles`].
#[no_mangle]
pub unsafe extern "ptx-kernel" fn sample_tiles_mass(p: StepParams) {
    // No early `launch_dependents`: `sample_rows` placed beside this kernel slowed it (measured,
    // ARCHITECTURE.md), so the next launch waits for its blocks to exit.
    // SAFETY: forwarded; a stage-1 kernel.
    unsafe {
        clear_exact_list_head(&p);
        scan_mass_items(&p);
        wait_for_prior_grids();
    }
}

/// The body of [`sample_tiles_mass`]: each group of warps strides over the items (row, tile)
/// of the rows the host listed, so every warp gets the same share give or take one item.
/// Striding over every row's items instead (and skipping other rows'), a warp got up to five
/// of this kernel's items and another none (heterogeneous B = 256: 17% of warp slots
/// occupied, of 25%), and the kernel lasted as long as the busiest warp.
///
/// # Safety
/// As for [`sample_tiles_mass`].
#[inline(always)]
unsafe fn scan_mass_items(p: &StepParams) {
    let p = *p;
    if block_dim_x() != MASS_SCAN_THREADS || p.tiles == 0 {
        return;
    }
    let list = p.mass_rows as *const u32;
    // SAFETY: the list's count; never more rows than the launch has (a list of every row
    // after a raw settings write is ascending, so the first `rows` are the launch's).
    let listed = unsafe { ld_global_nc_u32(list) }.min(p.rows);
    let items = listed * p.tiles;
    // Every warp reads the same count, so every warp of the grid picks the same split.
    let parts = mass_split(items, grid_dim_x() * MASS_SCAN_WARPS);
    let groups = MASS_SCAN_WARPS / parts;
    let (part, group) = (warp_id() % parts, warp_id() / parts);
    let stride = grid_dim_x() * groups;
    let mut item = block_idx_x() * groups + group;
    while item < items {
        // SAFETY: the whole group shares item (group-uniform), so the listed row (tested
        // below rows; scan_tile tests the rest) and tile < tiles; the list has 1 + listed
        // entries; the region is this warp's slice of the launch's shared memory and the
        // group's warps are consecutive. The barrier after it keeps part 0's reads of the
        // group's band sums and buffers before any of them is cleared for the next item (with
        // one part, a sync_warp does that for the lanes' band sums).
        unsafe {
            let row = ld_global_nc_u32(list.add(1 + (item / p.tiles) as usize));
            if row < p.rows {
                scan_tile::<true, false, false, false, 1>(&p, row, item % p.tiles, smem(warp_id() * warp_region_bytes(true, false)), (part, parts), 1);
                // The ring is free for the next item: a row left unscanned leaves its first
                // rounds' copies in flight (after a scan, only empty groups).
                cp_async_wait_all();
            }
            if parts > 1 {
                sync_group(parts);
            } else {
                sync_warp(FULL_MASK);
            }
        }
        item += stride;
    }
}
