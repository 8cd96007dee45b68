//! The split exact pass (device only): finishes the rows stage 2 could not decide from the tile
//! lists, over many blocks per row instead of one block doing every pass.
//!
//! A listed row with a finite maximum takes four kernels, each idle for other rows:
//! 1. `exact_histogram`, one block per (row, tile): a histogram of the row's keys above the
//!    min-p floor over `fixed::exact_bin` bins (1/128 nat within each mass band): counts and
//!    exact fraction sums, so a bin's mass is its sum times its band scale.
//! 2. `exact_bins`, one block per row: the bin holding the top-k boundary and the bins the top-p
//!    boundary can fall in (a range when top-k leaves Z1 known only to within its boundary bin).
//!    A row whose boundary bins hold more than `EXACT_GATHER_KEYS` keys goes to the single-block
//!    pass instead.
//! 3. `exact_gather`, one block per (row, tile): stores the keys of the boundary bins, and sums
//!    per tile the mass of the keys in bins that are kept for sure.
//! 4. `exact_finish`, one block per row: sorts the gathered keys and decides top-k and top-p on
//!    them exactly, draws, finds the tile where the draw falls from the per-tile kept masses,
//!    and walks that tile in index order. `exact_finish_two_per_sm` is the same body at two
//!    blocks per SM, for batches of more rows than SMs.
//!
//! *Band mode.* A row with top-p, no min-p and no effective top-k comes with its boundary band
//! from stage 2 (`ExactJob::band`): the histogram bins that band alone, per tile; `exact_bins`
//! writes the tiles' sure masses and the boundary sub-bin's value bounds; the gather stores the
//! keys within those bounds, by value compares alone. *Warp rows* (a step of band rows without
//! logit bias, enough for warp runs) also get band codes: the histogram writes each token's
//! sub-bin as a byte, and the gather reads those bytes, then the logits of the boundary
//! sub-bin's tokens alone.
//!
//! Rows the split pass does not take (infinite rows, rows without band masses, top
//! log-probabilities still to write, no scratch left, boundary bins too full) take the
//! single-block pass, `sampler::exact_single`, in `exact_finish` too: its blocks take every
//! listed row in turn.
//!
//! `exact_tail` runs all of it in one launch (opt-in; the host's `ExactPassLaunch`): the same
//! bodies, items from one queue, a row's next phase started by the block that finishes its
//! previous one.
//!
//! The bins only say where to look. Every decision is made on keys and exact integer masses
//! with the functions the CPU reference uses, so the tokens are the reference's. The pass reads
//! a listed row twice (the second read mostly from L2; a warp row's second reads its band codes,
//! a byte a token, and the boundary sub-bin's logits) plus one tile.

use crate::abi::*;
use crate::block::*;
use crate::decide::{draw_target, min_p_floor, top_p_disabled, top_p_reached, top_p_units};
use crate::fixed::{band_sub_bin, byte_hits, exact_bin, exact_sub_bin_edge, frac_weight, sub_bin_bounds_of_edges, soft_ceil, BAND_SCALES, FRAC_ONE};
use crate::intrinsics::*;
use crate::keys::{floor_value, key_index, key_value, reaches_floor, sort_key};
use crate::logit::temper_scale;
use crate::logprob::ln_mass;
use crate::sampler::{
    active_rows, draw_inputs, draw_of, exact_single, finish, finish_chosen, load_raw8, process_raw8, prologue1, prologue1_inputs, prologue8, read_settings,
    recorded_band_mass, recorded_band_share, recorded_band_words, row_logits, row_setup, walk_tile, Prologue1Inputs, Row, Summary,
};
use crate::tiles::{load_bits8, widen8, RawBits, NAN_WORD};
use crate::status::{NO_TOKEN, STATUS_NO_VALID_TOKEN};

// ---------------------------------------------------------------------------------------------
// Constants and shared-memory layouts.

const THREADS: u32 = SAMPLER_THREADS;
const SUB: u32 = EXACT_SUB_BINS;
pub(crate) const BINS: u32 = EXACT_BINS;
/// Tokens more than 36 nats below the top: counted for top-k, no mass.
pub(crate) const ZERO_BIN: u32 = BINS - 1;
pub(crate) const NONE: u32 = u32::MAX;
/// Bins each `exact_bins` thread owns, as one run: thread order is bin order.
pub(crate) const BINS_PER_THREAD: u32 = BINS.div_ceil(THREADS);
const GATHER: u32 = EXACT_GATHER_KEYS;
/// Sorted positions a finishing thread holds at most (`finish_split` spreads fewer keys).
const OWN: u32 = GATHER / THREADS;

// `exact_histogram`: per bin two u32 words that together hold the count and the fraction sum
// of a tile (64-bit shared atomics would be CAS loops). They follow the sampler map's bias
// table, which the prologue uses.
/// Per bin, the token count in the bits from `H_HI_BITS` up and the sum of `frac >> H_LO_BITS`
/// below them; one tile's 4096 tokens fit (`frac <= 2^23`), so two shared atomics per token.
/// Count on top: a token's word is `(frac >> H_LO_BITS) + H_COUNT_ONE`, one `LEA.HI`, where
/// the count below took a shift and two logic operations (session 34).
const H_COUNT: u32 = SM_SORT;
/// Per bin, the sum of `frac`'s low `H_LO_BITS`.
const H_LO: u32 = H_COUNT + BINS * 4;
const H_HI_BITS: u32 = 19;
const H_COUNT_ONE: u32 = 1 << H_HI_BITS;
const H_LO_BITS: u32 = 17;
const _: () = assert!(H_LO + BINS * 4 <= EXACT_HIST_SHARED_BYTES);
// Band mode's sub-bins, then a spare bin per lane (tokens outside the band add there).
const _: () = assert!(SUB + 32 <= BINS);
// A tile's sums fit their fields: the high fractions below the count, the count in the word,
// the low fractions in theirs.
const _: () = assert!(TILE_TOKENS as u64 * (FRAC_ONE >> H_LO_BITS) as u64 <= (H_COUNT_ONE - 1) as u64);
const _: () = assert!((TILE_TOKENS as u64) << H_HI_BITS | (H_COUNT_ONE - 1) as u64 <= u32::MAX as u64);
const _: () = assert!(TILE_TOKENS << H_LO_BITS <= 1 << 31);

// `exact_finish` on a split row: the gathered keys, then the per-tile mass of the kept keys
// among them. The bias table the final walk uses overlaps them; they are dead by then.
const F_KEYS: u32 = SM_HIST;
const F_TILE_LO: u32 = F_KEYS + GATHER * 8;
const F_TILE_HI: u32 = F_TILE_LO + MAX_TILES * 8;
/// The draw's seed and step, which thread 0 reads with the gathered keys.
const F_DRAW: u32 = F_TILE_HI + MAX_TILES * 8;
const _: () = assert!(F_DRAW + 16 <= SAMPLER_SHARED_BYTES);
const _: () = assert!(OWN == 8 && GATHER.is_power_of_two());
// `block_sort_desc_at` in registers (up to 2 · THREADS keys) uses twice the list at F_KEYS.
const _: () = assert!(GATHER >= 2 * 2 * THREADS);

// `exact_gather`: per warp, the staged keys of four tokens a lane. The region is free in
// `exact_gather`; in `exact_tail` it is the histogram's, but a block that takes a gather item
// takes no histogram item after it (the queue runs in order), and `finish_split`'s keys
// overlay it there anyway.
const G_STAGE: u32 = SM_SORT;
const G_STAGE_WARP_BYTES: u32 = 32 * 4 * 8;
const _: () = assert!(G_STAGE + (THREADS / 32) * G_STAGE_WARP_BYTES <= SAMPLER_SHARED_BYTES);

// Warp rows (`EXACT_LIST_BLOCK_ROWS` is 0): `exact_histogram`'s per-warp sub-bins, two words
// each as in the block histogram (counts, then fractions), each `SUB` sub-bins and then a
// spare bin per lane, where the lane's tokens outside the band add: never read, so their adds
// need no select of a zero.
const WH_COUNT: u32 = SM_SORT;
const WH_BINS: u32 = SUB + 32;
const WH_WARP_BYTES: u32 = WH_BINS * 8;
// Warp rows, both kernels: where each warp's run ends, read once an item (in a register it was
// spilled across the round loop). A slot per thread: each lane reads what it wrote, so no
// sync_warp is needed (one cost 36 bytes of spills). The histogram's follow its sub-bins, the
// gather's its block path's staging.
const WH_END: u32 = WH_COUNT + (THREADS / 32) * WH_WARP_BYTES;
const WG_END: u32 = G_STAGE + (THREADS / 32) * G_STAGE_WARP_BYTES;
const _: () = assert!(WH_END + THREADS * 4 <= EXACT_HIST_SHARED_BYTES && WG_END + THREADS * 4 <= SAMPLER_SHARED_BYTES);
/// A warp item's round: 32 lanes of 8 tokens.
const ROUND: u32 = WARP_ROUND_TOKENS;
const _: () = assert!(ROUND == 32 * TOKENS_PER_THREAD && TILE_ROUNDS == 16 && SUB % 32 == 0);
/// Warp rows' band codes (`StepParams::exact_codes`): a token's sub-bin of the boundary band,
/// or a byte of at least `SUB` outside it: the histogram writes the number of the spare bin
/// the token added to, and the gather reads this byte for rounds past an item.
const CODE_OUT: u32 = 0xff;
const _: () = assert!(WH_BINS <= CODE_OUT && TOKENS_PER_THREAD == 8);
/// Rounds of codes a lane reads at once in the gather (8 bytes each).
const CODE_CHUNK: u32 = 8;
// A step's warp rounds fit u32 (`for_each_warp_item`).
const _: () = assert!((EXACT_SLOTS_MAX as u64) * (MAX_TILES as u64) * (TILE_ROUNDS as u64) < 1 << 31);

// `exact_bins`: the row's fraction sums (each thread its own run of bins).
const B_SUMS: u32 = SM_HIST;
const _: () = assert!(B_SUMS + BINS * 8 <= SAMPLER_SHARED_BYTES);

// Broadcast slots inside SM_RESULT.
const X_BIN_K: u32 = SM_RESULT;
pub(crate) const X_COUNT_K: u32 = SM_RESULT + 4;
pub(crate) const X_MASS_K: u32 = SM_RESULT + 16;
pub(crate) const X_MASS_P: u32 = SM_RESULT + 32;
const X_KEY: u32 = SM_RESULT + 48;
const X_MASS: u32 = SM_RESULT + 64;
const X_TILE: u32 = SM_RESULT + 80;
const X_BASE: u32 = SM_RESULT + 84;
const X_ITEM: u32 = SM_RESULT + 88;

// ---------------------------------------------------------------------------------------------
// Helpers.

#[inline(always)]
fn join(h: [u64; 2]) -> u128 {
    (h[1] as u128) << 64 | h[0] as u128
}

#[inline(always)]
fn halves(v: u128) -> [u64; 2] {
    [v as u64, (v >> 64) as u64]
}

/// Listed rows, and how many of them (the first ones) have split-pass scratch.
///
/// # Safety
/// `p` describes the step's buffers.
#[inline(always)]
unsafe fn listed(p: &StepParams) -> (u32, u32) {
    // SAFETY: the count is the list's first u32.
    let n = unsafe { (p.exact_list as *const u32).read_volatile() };
    let n = if n < p.rows { n } else { p.rows };
    (n, if n < p.exact_slots { n } else { p.exact_slots })
}

/// Row at list position `pos` (a stale entry at or past the listed count).
///
/// # Safety
/// `pos < rows`.
#[inline(always)]
unsafe fn listed_row(p: &StepParams, pos: u32) -> u32 {
    // SAFETY: the list holds `rows` entries after the head.
    unsafe { (p.exact_list as *const u32).add((EXACT_LIST_HEAD + pos) as usize).read_volatile() }
}

/// How stage 2 (or `exact_bins`) left `row`; written by an earlier kernel of the step.
///
/// # Safety
/// `row < rows`.
#[inline(always)]
unsafe fn flag_of(p: &StepParams, row: u32) -> u32 {
    // SAFETY: row < rows.
    unsafe { (p.exact_flags as *const u32).add(row as usize).read_volatile() }
}

/// Runs `$body` for every listed split row this block takes (`$pos`, `$row`), blocks taking the
/// list in turn. A macro, not a function taking the body: as a closure or a function pointer,
/// `exact_finish`'s body spilled.
///
/// # Safety (of the expansion)
/// Inside an `unsafe` block of a kernel whose whole block runs it; `$p` describes the step's
/// buffers; `$body` is a whole-block body for a split row.
macro_rules! for_each_split_row {
    ($p:expr, |$pos:ident, $row:ident, $r:ident| $body:expr) => {{
        // Reads that do not wait on one another go out together: the count with the row at
        // the first position (in the list, whose `rows` entries an earlier kernel wrote or
        // left), the flag with the job and the settings (read whatever the flag). As a chain
        // of count, row, flag, then job, they were most of `exact_bins`' first 2 µs at B = 1.
        let mut $pos = block_idx_x();
        let mut $row = if $pos < $p.rows { listed_row($p, $pos) } else { NONE };
        let (_, split) = listed($p);
        while $pos < split {
            if $row < $p.rows {
                let flag = flag_of($p, $row);
                let $r = split_row($p, $pos, $row);
                if flag == EXACT_SPLIT {
                    $body;
                }
            }
            $pos += grid_dim_x();
            $row = if $pos < split { listed_row($p, $pos) } else { NONE };
        }
    }};
}

#[inline(always)]
fn job_ptr(p: &StepParams, pos: u32) -> *mut ExactJob {
    (p.exact_jobs as *mut ExactJob).wrapping_add(pos as usize)
}

/// The row's arrival counter (`ExactJob::tiles_done`).
#[inline(always)]
fn tiles_done(p: &StepParams, pos: u32) -> *mut u32 {
    // SAFETY: no access, only an address: every caller passes a position with scratch, so the
    // place is inside the jobs buffer.
    unsafe { &raw mut (*job_ptr(p, pos)).tiles_done }
}

/// `tiles_done` once a row's bins are chosen: one past every histogram tile's arrival. The
/// gather tiles then count on from there.
#[inline(always)]
fn bins_ready(p: &StepParams) -> u32 {
    p.tiles + 1
}

#[inline(always)]
fn bin_counts(p: &StepParams, pos: u32) -> *mut u32 {
    (p.exact_counts as *mut u32).wrapping_add(pos as usize * BINS as usize)
}

#[inline(always)]
fn bin_sums(p: &StepParams, pos: u32) -> *mut u64 {
    (p.exact_sums as *mut u64).wrapping_add(pos as usize * BINS as usize)
}

/// Band mode's histogram of tile `tile` (`EXACT_SUB_BINS` words, `StepParams::exact_tile_bins`).
#[inline(always)]
fn tile_bins(p: &StepParams, pos: u32, tile: u32) -> *mut u64 {
    (p.exact_tile_bins as *mut u64).wrapping_add((pos as usize * p.tiles as usize + tile as usize) * SUB as usize)
}

#[inline(always)]
fn gathered_keys(p: &StepParams, pos: u32) -> *mut u64 {
    (p.exact_keys as *mut u64).wrapping_add(pos as usize * GATHER as usize)
}

#[inline(always)]
fn tile_masses(p: &StepParams, pos: u32) -> *mut u64 {
    (p.exact_tile_mass as *mut u64).wrapping_add(pos as usize * p.tiles as usize * 2)
}

/// Band scale of a bin (0 for the zero bin).
#[inline(always)]
fn bin_scale(bin: u32) -> u64 {
    match BAND_SCALES.get((bin / SUB) as usize) {
        Some(&e) if bin < ZERO_BIN => e,
        _ => 0,
    }
}

/// Exact mass of a bin from its fraction sum.
#[inline(always)]
pub(crate) fn bin_mass(bin: u32, sum: u64) -> u128 {
    sum as u128 * bin_scale(bin) as u128
}

/// Bin, weight and key of a key ≥ the floor (`NONE` and 0 for a key that is not).
#[inline(always)]
fn classify(key: u64, floor: u64, mc: f32) -> (u32, u128) {
    if key == 0 || key < floor {
        return (NONE, 0);
    }
    let x = key_value(key);
    let c = soft_ceil(x);
    let bin = exact_bin(x, c, mc);
    let w = if bin < ZERO_BIN { frac_weight(x - c) as u128 * bin_scale(bin) as u128 } else { 0 };
    (bin, w)
}

/// [`classify`]'s result across a call (`#[repr(C)]`: under the C ABI it comes back in
/// `.param` space, not through local memory).
#[repr(C)]
#[derive(Clone, Copy)]
struct Classified {
    weight: u128,
    bin: u32,
}

/// [`classify`] through one out-of-line copy, for `finish_split`'s once-a-row loops over a
/// thread's 8 gathered keys: inlined there, it was some thirty copies of straight-line code
/// that one block per row fetched cold. `exact_gather`'s per-token loop keeps `classify`.
#[inline(never)]
extern "C" fn classify_once(key: u64, floor: u64, mc: f32) -> Classified {
    let (bin, weight) = classify(key, floor, mc);
    Classified { weight, bin }
}

/// Adds a key's value `x` (at or above its row's floor) to a tile's bin histogram in shared
/// memory: per bin a packed word at `pack + 4·bin` (the count from bit `H_HI_BITS` up, the sum
/// of `frac >> H_LO_BITS` below it) and the sum of `frac`'s low bits at `lo + 4·bin`, so two
/// u32 shared atomics per key (64-bit ones would be CAS loops). The zero bin only counts.
/// `exact_histogram` and verification's bin histogram both build their tiles with it.
///
/// # Safety
/// `pack` and `lo` are shared byte offsets of `BINS` words each that only such adds touch
/// between barriers; a tile adds at most `TILE_TOKENS` keys (asserted above: they fit).
#[inline(always)]
pub(crate) unsafe fn add_to_tile_bins(pack: u32, lo: u32, x: f32, mc: f32) {
    let c = soft_ceil(x);
    let bin = exact_bin(x, c, mc);
    // SAFETY: bin < BINS, inside both arrays.
    unsafe {
        if bin < ZERO_BIN {
            add_to_bin(pack, lo, bin, frac_weight(x - c));
        } else {
            atom_add_shared_u32(smem(pack + bin * 4), H_COUNT_ONE);
        }
    }
}

/// Adds a key of fraction `frac` to bin `bin` of [`add_to_tile_bins`]' two arrays.
///
/// # Safety
/// As for [`add_to_tile_bins`], with `bin` inside both arrays.
#[inline(always)]
unsafe fn add_to_bin(pack: u32, lo: u32, bin: u32, frac: u32) {
    // SAFETY: forwarded.
    unsafe {
        atom_add_shared_u32(smem(pack + bin * 4), packed_add(frac));
        atom_add_shared_u32(smem(lo + bin * 4), lo_add(frac));
    }
}

/// What a key of fraction `frac` adds to its bin's packed word: one count, `frac`'s high bits.
#[inline(always)]
fn packed_add(frac: u32) -> u32 {
    (frac >> H_LO_BITS) + H_COUNT_ONE
}

/// What a key of fraction `frac` adds to its bin's low word.
#[inline(always)]
fn lo_add(frac: u32) -> u32 {
    frac & ((1 << H_LO_BITS) - 1)
}

/// A tile bin's count and fraction sum from the two words [`add_to_tile_bins`] keeps.
#[inline(always)]
pub(crate) fn tile_bin(packed: u32, lo: u32) -> (u32, u64) {
    (packed >> H_HI_BITS, lo as u64 + (((packed & (H_COUNT_ONE - 1)) as u64) << H_LO_BITS))
}

/// Calls `f(i)` for `i` in `0..BINS_PER_THREAD`, each index a constant, so per-thread bin
/// arrays stay in registers.
#[inline(always)]
pub(crate) fn each_own_bin<F: FnMut(usize)>(mut f: F) {
    const _: () = assert!(BINS_PER_THREAD == 10);
    f(0);
    f(1);
    f(2);
    f(3);
    f(4);
    f(5);
    f(6);
    f(7);
    f(8);
    f(9);
}

/// What every kernel of the split pass knows about a row.
struct SplitRow {
    settings: RowSettings,
    row: Row,
    job: ExactJob,
    mc: f32,
    floor: u64,
}

/// # Safety
/// `pos` is a split row's list position; its job was written by an earlier kernel.
#[inline(always)]
unsafe fn split_row(p: &StepParams, pos: u32, row: u32) -> SplitRow {
    // SAFETY: pos < exact_slots jobs; forwarded.
    unsafe { split_row_with(p, row, job_ptr(p, pos).read_volatile(), read_settings(p, row)) }
}

#[inline(always)]
fn split_row_with(p: &StepParams, row: u32, job: ExactJob, settings: RowSettings) -> SplitRow {
    let mc = soft_ceil(key_value(job.max_key));
    SplitRow { settings, row: row_setup(p, row, settings), job, mc, floor: min_p_floor(job.max_key, settings.min_p) }
}

/// The job fields the tile kernels read (the others zero), each read on its own: read whole,
/// the job's unused words were loaded one after another into one register (ARCHITECTURE.md,
/// "Why these choices", session 15). `PLAIN`: plain loads, for `exact_histogram` and
/// `exact_gather`, where an earlier kernel wrote them (volatile ones went out one after another
/// with the flag's, each a round trip to L2); else volatile, for `exact_tail`, which writes them
/// in the same launch.
///
/// # Safety
/// `pos` has split-pass scratch.
#[inline(always)]
unsafe fn tile_job<const PLAIN: bool>(p: &StepParams, pos: u32) -> ExactJob {
    let job = job_ptr(p, pos);
    /// One field, plain or volatile.
    #[inline(always)]
    unsafe fn field<T: Copy, const PLAIN: bool>(at: *const T) -> T {
        // SAFETY: a field of the job (caller).
        unsafe {
            if PLAIN {
                at.read()
            } else {
                at.read_volatile()
            }
        }
    }
    // SAFETY: fields of the position's job.
    unsafe {
        ExactJob {
            max_key: field::<_, PLAIN>(&raw const (*job).max_key),
            mass_ok: field::<_, PLAIN>(&raw const (*job).mass_ok),
            bin_k: field::<_, PLAIN>(&raw const (*job).bin_k),
            bin_p_lo: field::<_, PLAIN>(&raw const (*job).bin_p_lo),
            bin_p_hi: field::<_, PLAIN>(&raw const (*job).bin_p_hi),
            sure_end: field::<_, PLAIN>(&raw const (*job).sure_end),
            band: field::<_, PLAIN>(&raw const (*job).band),
            gather_lo: field::<_, PLAIN>(&raw const (*job).gather_lo),
            gather_hi: field::<_, PLAIN>(&raw const (*job).gather_hi),
            ..ExactJob::default()
        }
    }
}

/// What a tile kernel of the split pass reads for a (position, tile) item: the row's state, and
/// this thread's raw logits of the tile.
struct TileItem {
    r: SplitRow,
    raw: [f32; 8],
}

/// Reads a tile item (`PLAIN` as for [`tile_job`]). The job, the settings and the logits are
/// requested together, in that order: none depends on another, and half-width logits are
/// widened once they arrive, which would hold back loads issued after them.
///
/// # Safety
/// `pos` is a listed position with split-pass scratch and `row < rows` its row. The job is read
/// as it is now: the caller uses it only for a row flagged for the split pass.
#[inline(always)]
unsafe fn tile_item<const PLAIN: bool>(p: &StepParams, pos: u32, row: u32, tile: u32) -> TileItem {
    let (logits, vector_ok) = row_logits(p, row);
    // SAFETY: the row exists; load_raw8 clips to the vocab; forwarded.
    unsafe {
        let (job, settings) = (tile_job::<PLAIN>(p, pos), read_settings(p, row));
        let raw = load_raw8(p, logits, vector_ok, tile * TILE_TOKENS + thread_idx_x() * TOKENS_PER_THREAD);
        TileItem { r: split_row_with(p, row, job, settings), raw }
    }
}

/// Calls `f(position, row, tile, item)` for the split rows, one (position, tile) item per block
/// in turn. An item's reads are issued before its row's flag is known: a listed row that is not
/// split reads a tile it does not use. The list, the flags and the jobs are read with plain
/// loads: an earlier kernel wrote them, and nothing writes them in these kernels (as volatile
/// loads they went out one after another, each a round trip to L2: the list, the job, then the
/// flag, a third of the histogram's stall samples with the logits).
///
/// With `AHEAD` (`exact_histogram`) the list's entries are read two items ahead, so that an
/// item waits for one round trip, and the next item's logits are asked of L2 as this one
/// starts. Without (`exact_gather`: ahead, ptxas gave it 98 registers, one block per SM, or
/// spilled at 64) an item waits for two.
///
/// # Safety
/// The whole block calls it; `f` is a whole-block body; nothing writes the list, the flags or
/// the jobs' fields `tile_job` reads while the kernel runs.
#[inline(always)]
unsafe fn for_each_split_tile<const AHEAD: bool, F: FnMut(u32, u32, u32, TileItem)>(p: &StepParams, mut f: F) {
    // SAFETY: list reads at listed positions (item < items); flags of listed rows (< rows);
    // positions below `split` have scratch.
    unsafe {
        let (_, split) = listed(p);
        let items = split * p.tiles;
        let list = (p.exact_list as *const u32).add(EXACT_LIST_HEAD as usize);
        let is_split = |row: u32| (p.exact_flags as *const u32).add(row as usize).read() == EXACT_SPLIT;
        let mut item = block_idx_x();
        if !AHEAD {
            while item < items {
                let (pos, tile) = (item / p.tiles, item % p.tiles);
                let row = list.add(pos as usize).read();
                if row < p.rows {
                    let input = tile_item::<true>(p, pos, row, tile);
                    if is_split(row) {
                        f(pos, row, tile, input);
                    }
                }
                item += grid_dim_x();
            }
            return;
        }
        // Items as (position, tile), three in a row (this one, the next, the one after), stepped
        // by the grid without a division per item.
        let row_at = |item: u32, pos: u32| if item < items { list.add(pos as usize).read() } else { NONE };
        let step = (grid_dim_x() / p.tiles, grid_dim_x() % p.tiles);
        let advance = |at: (u32, u32)| step_split_item(at, step, p.tiles);
        let mut at = (item / p.tiles, item % p.tiles);
        let mut next_at = advance(at);
        let mut after_at = advance(next_at);
        let (mut row, mut next_row) = (row_at(item, at.0), row_at(item + grid_dim_x(), next_at.0));
        while item < items {
            let next = item + grid_dim_x();
            let after_row = row_at(next + grid_dim_x(), after_at.0);
            if row < p.rows {
                let input = tile_item::<true>(p, at.0, row, at.1);
                prefetch_tile(p, next_row, next_at.1);
                if is_split(row) {
                    f(at.0, row, at.1, input);
                }
            }
            (item, row, next_row) = (next, next_row, after_row);
            (at, next_at, after_at) = (next_at, after_at, advance(after_at));
        }
    }
}

/// Asks L2 for tile `tile` of row `row`'s logits (nothing for a row past the active ones, such
/// as `NONE`), a 128-byte line per thread: a hint, with no register held.
#[inline(always)]
fn prefetch_tile(p: &StepParams, row: u32, tile: u32) {
    if row < p.rows && tile < p.tiles {
        let element: u64 = if p.dtype == DTYPE_F32 { 4 } else { 2 };
        let first = tile * TILE_TOKENS;
        let tokens = if p.vocab - first < TILE_TOKENS { p.vocab - first } else { TILE_TOKENS };
        // SAFETY: tokens first..first + tokens < vocab of an active row, inside the logits.
        unsafe { prefetch_span_l2(row_logits(p, row).0 + first as u64 * element, tokens as u64 * element, thread_idx_x(), THREADS) };
    }
}

// ---------------------------------------------------------------------------------------------
// Warp rows: band mode without logit bias, a warp per run of rounds.

/// How `exact_histogram` and `exact_gather` take the step's split rows: the split count, and
/// `Some(run)` when they are all *warp rows* (band mode, no logit bias) and
/// `abi::warp_row_run` gives each of the launch's warps `run` rounds of them. A block item of
/// one tile gave each thread 8 tokens between two barriers and the item's reads, and left the
/// loads idle at every barrier; a warp streams its rounds with the next ones loading.
///
/// # Safety
/// `p` describes the step's buffers; stage 2 has run.
#[inline(always)]
unsafe fn step_warp_run(p: &StepParams) -> (u32, Option<u32>) {
    // SAFETY: head words of the list, written by stage 1 and stage 2 (earlier kernels); both
    // loads go out before either is used.
    let (block_rows, (_, split)) = unsafe { ((p.exact_list as *const u32).add(EXACT_LIST_BLOCK_ROWS as usize).read(), listed(p)) };
    if block_rows != 0 {
        return (split, None);
    }
    (split, crate::abi::warp_row_run(split, p.tiles, grid_dim_x() * (THREADS / 32)))
}

/// Part of a warp's run inside one tile: rounds `first_round .. first_round + rounds` of tile
/// `tile` of the split row at list position `pos`. `whole` when they are all the tile's 16
/// rounds (no other warp has any of them).
struct WarpItem {
    pos: u32,
    tile: u32,
    first_round: u32,
    rounds: u32,
    whole: bool,
}

/// Calls `f(item, row, first)` for this warp's run ([`step_warp_run`]): rounds `warp · run ..`
/// of the split rows' rounds in a row (`tiles · TILE_ROUNDS` a row, the last tile's rounds past
/// the vocab skipped), cut where a tile ends, so a run is one to a few items; `first` is what
/// `load(item, row)` read for the item's first rounds (the histogram: the lane's logits of the
/// first round; the gather: its band codes of the first rounds). Rows that are not (or no
/// longer) split, or not warp rows, are skipped.
///
/// An item's reads go out in two round trips: its list entry, then the row's flag, job,
/// settings and `load`'s reads together, before any of them is tested.
///
/// `end_slots` is the shared offset of the kernel's per-thread run ends (`WH_END`, `WG_END`).
///
/// # Safety
/// The whole warp calls it (every branch is warp-uniform); `(split, Some(run))` is
/// [`step_warp_run`]; `load` reads only inside the row's logits or its position's codes;
/// `end_slots` has `THREADS` words of shared memory that nothing else uses.
#[inline(always)]
unsafe fn for_each_warp_item<T, L: Fn(&WarpItem, &SplitRow) -> T, F: FnMut(&WarpItem, &SplitRow, T)>(
    p: &StepParams,
    split: u32,
    run: u32,
    end_slots: u32,
    load: L,
    mut f: F,
) {
    // SAFETY: list reads below the split count, flags of listed rows, jobs of positions with
    // scratch (below `split`).
    unsafe {
        // Rounds in u32: at most EXACT_SLOTS_MAX · MAX_TILES · TILE_ROUNDS (2^20) a step.
        let row_rounds = p.tiles * TILE_ROUNDS;
        let total = split * row_rounds;
        let first = (block_idx_x() * (THREADS / 32) + warp_id()).saturating_mul(run);
        let end_slot = smem(end_slots + thread_idx_x() * 4);
        st_shared_u32(end_slot, if first.saturating_add(run) < total { first + run } else { total });
        let mut at = first;
        while at < ld_shared_u32(end_slot) {
            let pos = at / row_rounds;
            let k = at - pos * row_rounds;
            let (tile, first_round) = (k / TILE_ROUNDS, k % TILE_ROUNDS);
            let left = ld_shared_u32(end_slot) - at;
            let rounds = if TILE_ROUNDS - first_round < left { TILE_ROUNDS - first_round } else { left };
            at += rounds;
            let item = WarpItem { pos, tile, first_round, rounds, whole: rounds == TILE_ROUNDS };
            if item_start(&item) >= p.vocab {
                continue; // rounds of the last tile past the vocab
            }
            let row = listed_row(p, pos);
            let listed = row < p.rows;
            // A stale entry reads row 0's fields, which are not used.
            let at_row = if listed { row } else { 0 };
            let flag = flag_of(p, at_row);
            let r = split_row_with(p, at_row, tile_job::<true>(p, pos), read_settings(p, at_row));
            let first = load(&item, &r);
            if listed && flag == EXACT_SPLIT && is_warp_row!(r.job.band, r.settings.bias_len) {
                f(&item, &r, first);
            }
        }
    }
}

/// Calls `f(base, x)` for the rounds of `item` that start inside the vocab: `base` is this
/// lane's first token, `x` its 8 processed values (-inf past the vocab; a plain f32 row's
/// whole-vector items may give -0 where the prologue gives +0, which the histogram, the one
/// caller, bins the same). `first` is the first round's logits; the next round's are loaded
/// before a round is processed, and the one after is asked of L2, each lane its own tokens (no
/// register: 64 registers did not hold a second round ahead without spills). Asking for 4 or 6
/// rounds ahead was slower (session 29), and a shared-memory ring three rounds ahead no faster
/// (session 38).
///
/// # Safety
/// The whole warp calls it; `r` is a split row without logit bias.
#[inline(always)]
unsafe fn for_each_warp_round<F: FnMut(u32, [f32; 8])>(p: &StepParams, r: &SplitRow, item: &WarpItem, first: RawBits, mut f: F) {
    let start = item_start(item);
    let rounds = item.rounds;
    let lane_base = start + lane_id() * TOKENS_PER_THREAD;
    let (logits, vector_ok) = (r.row.logits, r.row.vector_ok);
    let element: u64 = if p.dtype == DTYPE_F32 { 4 } else { 2 };
    // The lane's own tokens of round `k` of the item asked of L2 (one sector: 32 bytes of f32,
    // 16 of bf16/f16), if the round is the item's and inside the vocab.
    let prefetch = |k: u32| {
        let at = lane_base + k * ROUND;
        if k < rounds && at < p.vocab {
            // SAFETY: token `at` of the row, inside the vocab.
            unsafe { prefetch_global_l2((logits + at as u64 * element) as *const u8) };
        }
    };
    // An item of a plain f32 row whose rounds are all whole vectors (a flat band-mode row's
    // items but one that reaches the vocab's end): its rounds loaded and tempered without the
    // general path's tests, NaN fill and prologue branches; `prologue8` is `plain8` for such a
    // row, and `load_bits8` these vector loads. `plain8` less its `+ 0`: a -0 gives the
    // histogram the same band test, sub-bin and fraction as +0 (`x - c` is `-c` either way).
    // A round went from about 264 SASS instructions run to 221 (this machine's ptxas), and
    // the histogram from 53 to 48 µs at flat top-p 0.95, B = 256 (Nsight, session 38): it is
    // bound by its instructions, not by its loads (a ring three rounds ahead changed nothing).
    if p.dtype == DTYPE_F32 && vector_ok && start + rounds * ROUND <= p.vocab && r.row.bitmask == 0 && r.row.counts == 0 {
        let scale = temper_scale(r.row.params.temperature);
        let lane_logits = (logits + lane_base as u64 * 4) as *const u32;
        // SAFETY: rounds below `rounds` lie inside the vocab (tested above), 16-byte aligned
        // (row start aligned, lane_base % 8 == 0); the last round loads itself again as its
        // successor instead of testing.
        unsafe {
            let load = |k: u32| ld_global_nc_v8_u32(lane_logits.add((k * ROUND) as usize));
            let mut now = first;
            let mut k = 0;
            while k < rounds {
                prefetch(k + 2);
                let next = load(if k + 1 < rounds { k + 1 } else { k });
                let mut x = [0.0f32; 8];
                each8(|j| x[j] = (f32::from_bits(now[j]) * scale).max(f32::NEG_INFINITY));
                f(lane_base + k * ROUND, x);
                now = next;
                k += 1;
            }
        }
        return;
    }
    // SAFETY: load_bits8 clips to the vocab; prologue8 reads the row's mask and counts for
    // tokens inside it.
    unsafe {
        let load = |k: u32| if k < rounds { load_bits8(p, logits, vector_ok, lane_base + k * ROUND) } else { [NAN_WORD; 8] };
        let mut now = first;
        let mut k = 0;
        while k < rounds && start + k * ROUND < p.vocab {
            prefetch(k + 2);
            let next = load(k + 1);
            let base = lane_base + k * ROUND;
            let x = prologue8(p, &r.row, base, widen8(&now, p.dtype), false, |_| 0.0);
            f(base, x);
            now = next;
            k += 1;
        }
    }
}

/// `exact_histogram` for warp rows: each warp bins its items' band tokens into its own sub-bins
/// in shared memory (a token outside the band adds to a spare bin, so the loop has no branch), then
/// adds them to the tile's histogram: stored when the item is the whole tile, else added with
/// `red.global` (`exact_bins` leaves the histograms zero). The sums are the block path's: the
/// two words of a bin add up over items.
///
/// # Safety
/// The whole block calls it, with `EXACT_HIST_SHARED_BYTES` of shared memory; `(split,
/// Some(run))` is [`step_warp_run`].
#[inline(always)]
unsafe fn histogram_warp_rows(p: &StepParams, split: u32, run: u32) {
    // Shared addresses, not offsets: as `smem(counts + bin * 4)` each add of the round loop
    // took two instructions for its address, `bin * 4 + counts` then the base.
    let counts = smem(WH_COUNT + warp_id() * WH_WARP_BYTES);
    let los = counts + WH_BINS * 4;
    // SAFETY (whole warp, warp-uniform branches): the warp's own shared bins; global writes to
    // the row's tile histograms (positions with scratch, tiles below `tiles`).
    unsafe {
        // The sub-bins, then the lane's spare bin (never read; cleared all the same).
        each_n::<{ (SUB / 32) as usize }, _>(|q| {
            let i = q as u32 * 32 + lane_id();
            st_shared_u32(counts + i * 4, 0);
            st_shared_u32(los + i * 4, 0);
        });
        st_shared_u32(counts + (SUB + lane_id()) * 4, 0);
        st_shared_u32(los + (SUB + lane_id()) * 4, 0);
        sync_warp(FULL_MASK);
        let load = |item: &WarpItem, r: &SplitRow| load_bits8(p, r.row.logits, r.row.vector_ok, item_start(item) + lane_id() * TOKENS_PER_THREAD);
        for_each_warp_item(p, split, run, WH_END, load, |item, r, raw| {
            let c = r.mc - r.job.band as f32;
            let below = c - 1.0;
            let codes = band_codes(p, item.pos);
            for_each_warp_round(p, r, item, raw, |base, x| {
                let mut code = [0u32; 2];
                each8(|j| {
                    // A token outside the band adds to its lane's spare bin (distinct lanes,
                    // distinct banks), which nothing reads: every add runs, with no select of
                    // its value. ptxas turned a predicated add into a branch region per add
                    // (`BSSY`/`BSYNC`, 16 a round), whose branch resolution held 14% of this
                    // kernel's stall samples (session 32, flat top-p B = 64). The bin is the
                    // token's code too: a spare bin's number is past every sub-bin.
                    let inside = x[j] > below && x[j] <= c;
                    let bin = select_u32(inside, band_sub_bin(x[j], c), SUB + lane_id());
                    let frac = frac_weight(x[j] - c);
                    red_add_shared_u32(counts + bin * 4, packed_add(frac));
                    red_add_shared_u32(los + bin * 4, lo_add(frac));
                    code[j / 4] |= bin << (8 * (j % 4));
                });
                // The round's codes for the gather: 8 bytes a lane, 256 a warp.
                codes.add(base as usize).cast::<u64>().write(code[0] as u64 | (code[1] as u64) << 32);
            });
            sync_warp(FULL_MASK);
            let out = tile_bins(p, item.pos, item.tile);
            each_n::<{ (SUB / 32) as usize }, _>(|q| {
                let i = q as u32 * 32 + lane_id();
                let packed = ld_shared_u32(counts + i * 4);
                if packed != 0 {
                    let word = packed as u64 | (ld_shared_u32(los + i * 4) as u64) << 32;
                    if item.whole {
                        out.add(i as usize).write(word);
                    } else {
                        red_add_global_u64(out.add(i as usize), word);
                    }
                    st_shared_u32(counts + i * 4, 0);
                    st_shared_u32(los + i * 4, 0);
                }
            });
            sync_warp(FULL_MASK);
        });
    }
}

/// `exact_gather` for warp rows: reads the band codes the histogram wrote, a byte a token, in
/// chunks of `CODE_CHUNK` rounds, and stores the keys of the tokens coded with the boundary
/// sub-bin, reading those tokens' logits alone (`gather_coded_chunk`). A round of codes is a
/// quarter of a round of f32 logits, and L2 mostly still holds them.
///
/// # Safety
/// The whole block calls it; `(split, Some(run))` is [`step_warp_run`], `exact_bins` has chosen
/// the rows' bins, and `exact_histogram_runs` of the same step wrote the rows' codes.
#[inline(always)]
unsafe fn gather_warp_rows(p: &StepParams, split: u32, run: u32) {
    // SAFETY (whole warp): codes of the rounds the histogram took (inside the vocab) of split
    // rows in band mode whose bins are chosen.
    unsafe {
        let load = |item: &WarpItem, _: &SplitRow| load_codes(p, item.pos, item_start(item), item.rounds);
        for_each_warp_item(p, split, run, WG_END, load, |item, r, first| {
            // The boundary sub-bin (`choose_band_bins` wrote `band · SUB + sub`).
            let hit = r.job.bin_p_lo.wrapping_sub(r.job.band * SUB);
            let start = item_start(item);
            let mut codes = first;
            let mut k = 0;
            loop {
                gather_coded_chunk(p, item.pos, r, start + k * ROUND, &codes, hit);
                k += CODE_CHUNK;
                if k >= item.rounds {
                    break;
                }
                codes = load_codes(p, item.pos, start + k * ROUND, item.rounds - k);
            }
        });
    }
}

/// The first token of a warp item.
#[inline(always)]
fn item_start(item: &WarpItem) -> u32 {
    item.tile * TILE_TOKENS + item.first_round * ROUND
}

/// Band codes of list position `pos`: a byte a token of the row's tiles (`StepParams::
/// exact_codes`).
#[inline(always)]
fn band_codes(p: &StepParams, pos: u32) -> *mut u8 {
    (p.exact_codes as *mut u8).wrapping_add(pos as usize * (p.tiles * TILE_TOKENS) as usize)
}

/// This lane's codes of the `CODE_CHUNK` rounds from token `start` (8 bytes a round), of which
/// the first `rounds` are the item's: rounds past those or starting past the vocab read as
/// `CODE_OUT` (the histogram wrote no codes for them).
///
/// # Safety
/// `pos` has codes (below `exact_slots`); the histogram of this step wrote the rounds that
/// start inside the vocab.
#[inline(always)]
unsafe fn load_codes(p: &StepParams, pos: u32, start: u32, rounds: u32) -> [u64; CODE_CHUNK as usize] {
    let codes = band_codes(p, pos);
    let mut w = [CODE_OUT as u64 * 0x0101_0101_0101_0101; CODE_CHUNK as usize];
    each_n::<{ CODE_CHUNK as usize }, _>(|i| {
        let at = start + i as u32 * ROUND;
        if (i as u32) < rounds && at < p.vocab {
            // SAFETY: a round inside the vocab of a position with codes; 8-byte aligned.
            w[i] = unsafe { codes.add((at + lane_id() * TOKENS_PER_THREAD) as usize).cast::<u64>().read() };
        }
    });
    w
}

/// Stores the keys of this lane's tokens coded `hit` among `codes`, the chunk from token
/// `start`: one global atomic per warp for the chunk's run of the list, then each lane's tokens
/// in turn, their logits read and processed one at a time (`sampler::prologue1`, the values
/// `prologue8` gives). A flat row's boundary sub-bin holds about 1 token in 200, so most lanes
/// have none.
///
/// # Safety
/// The whole warp calls it, for a split row in band mode whose bins are chosen; `codes` are
/// [`load_codes`]' for `start`.
#[inline(always)]
unsafe fn gather_coded_chunk(p: &StepParams, pos: u32, r: &SplitRow, start: u32, codes: &[u64; CODE_CHUNK as usize], hit: u32) {
    let lane = lane_id();
    let pattern = hit.wrapping_mul(0x0101_0101);
    let mut hits = 0u64;
    each_n::<{ CODE_CHUNK as usize }, _>(|i| {
        let byte_bits = byte_hits(codes[i] as u32, pattern) | byte_hits((codes[i] >> 32) as u32, pattern) << 4;
        hits |= (byte_bits as u64) << (8 * i);
    });
    let n = hits.count_ones();
    // SAFETY (whole warp): the row's job counter and its gathered keys (positions below
    // GATHER); logits, mask words and counts of tokens inside the vocab (coded tokens are).
    unsafe {
        if !vote_any(FULL_MASK, n != 0) {
            return;
        }
        let token_of = |hits: u64| {
            let bit = hits.trailing_zeros();
            start + (bit / 8) * ROUND + lane * TOKENS_PER_THREAD + bit % 8
        };
        // The first token's reads go out before the reservation's round trip is waited on.
        let mut token = token_of(hits);
        let mut input = if n != 0 { prologue1_inputs(p, &r.row, token) } else { Prologue1Inputs::NONE };
        let mut at = reserve_keys(p, pos, lane, n);
        let out = gathered_keys(p, pos);
        while hits != 0 {
            let x = prologue1(&r.row, input);
            if at < GATHER {
                out.add(at as usize).write(sort_key(x, token));
            }
            at += 1;
            hits &= hits - 1;
            if hits != 0 {
                token = token_of(hits);
                input = prologue1_inputs(p, &r.row, token);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 1. The histogram.

/// Split pass, step 1: each block takes (row, tile) items in turn and adds the tile's keys above
/// the min-p floor to the row's bin counts and fraction sums.
///
/// # Safety
/// Launch with `SAMPLER_THREADS` threads, any grid, and `EXACT_HIST_SHARED_BYTES` of dynamic
/// shared memory, after `sample_rows` of the same step on the same stream.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn exact_histogram(p: StepParams) {
    // SAFETY: forwarded.
    unsafe { exact_histogram_body::<false>(&p) }
}

/// [`exact_histogram`] that also takes warp rows a warp per run of rounds ([`step_warp_run`]).
/// The host launches it for steps of enough rows to reach that path
/// (`abi::warp_row_run`); smaller steps get [`exact_histogram`]: with the warp path in the same
/// kernel, their block path was 3.5 µs slower a step (flat top-p B = 1, session 29, not
/// explained: neither the kernels' durations under Nsight nor their stack frames).
///
/// # Safety
/// As for [`exact_histogram`].
#[no_mangle]
pub unsafe extern "ptx-kernel" fn exact_histogram_runs(p: StepParams) {
    // SAFETY: forwarded.
    unsafe { exact_histogram_body::<true>(&p) }
}

/// # Safety
/// As for [`exact_histogram`].
#[inline(always)]
unsafe fn exact_histogram_body<const RUNS: bool>(p: &StepParams) {
    // SAFETY: a wait, no access; everything below follows it.
    unsafe { follow_previous_kernel() };
    if block_dim_x() != THREADS || p.tiles == 0 {
        return;
    }
    // SAFETY (whole block; every branch is block-uniform): the bodies' contracts hold for the
    // items `for_each_split_tile` hands out.
    unsafe {
        // Most steps list no split row: a block without an item leaves before clearing 37 KiB.
        let (split, warp_run) = if RUNS { step_warp_run(p) } else { (listed(p).1, None) };
        if block_idx_x() >= split * p.tiles {
            return;
        }
        if let Some(run) = warp_run {
            histogram_warp_rows(p, split, run);
            return;
        }
        clear_histogram();
        let tid = thread_idx_x();
        for_each_split_tile::<true, _>(p, |pos, _, tile, input| histogram_tile(p, tid, pos, tile, input));
    }
}

/// Zeroes the block's shared histogram: thread t owns bins t, t + THREADS, ..., and clears them
/// here and after each flush, so clearing needs no barrier of its own.
///
/// # Safety
/// The whole block calls it; the block has `EXACT_HIST_SHARED_BYTES` of shared memory.
#[inline(always)]
unsafe fn clear_histogram() {
    let mut b = thread_idx_x();
    while b < BINS {
        // SAFETY: bins of the layout above.
        unsafe {
            st_shared_u32(smem(H_COUNT + b * 4), 0);
            st_shared_u32(smem(H_LO + b * 4), 0);
        }
        b += THREADS;
    }
    // SAFETY: the whole block is here.
    unsafe { sync_threads() };
}

/// Adds the tile's keys above the row's min-p floor to the row's bins, through the block's
/// shared histogram (zero on entry and on return).
///
/// # Safety
/// The whole block calls it for a split row's (position, tile), with `input` its [`tile_item`];
/// `tid` the thread's index (read once by the caller: read in here, the addresses derived from
/// it were recomputed per item, and `exact_gather` spilled 4 bytes); the block has
/// `EXACT_HIST_SHARED_BYTES` of shared memory.
#[inline(always)]
unsafe fn histogram_tile(p: &StepParams, tid: u32, pos: u32, tile: u32, input: TileItem) {
    // SAFETY (whole block): shared slots from the layout above; global writes to the row's own
    // bins (atomic).
    unsafe {
        let r = input.r;
        let x = process_raw8(p, &r.row, tile, input.raw);
        if r.job.band != NONE {
            // Band mode: the boundary band's tokens alone, into its sub-bins, and the tile's
            // histogram to its own place (`exact_bins` adds the tiles up).
            // Branch-free: every token's sub-bin and fraction are computed, and a token outside
            // the band adds to its lane's spare bin (`SUB + lane`, never read) instead. Around a
            // branch per token slot, the divergence region held 14% of the kernel's stall
            // samples (session 22, flat rows); ptxas turns predicated adds back into branches.
            let c = r.mc - r.job.band as f32;
            let below = c - 1.0;
            let spare = SUB + (tid & 31);
            each8(|j| {
                let inside = x[j] > below && x[j] <= c;
                add_to_bin(H_COUNT, H_LO, select_u32(inside, band_sub_bin(x[j], c), spare), frac_weight(x[j] - c));
            });
            sync_threads();
            if tid < SUB + 32 {
                if tid < SUB {
                    let (packed, lo) = (ld_shared_u32(smem(H_COUNT + tid * 4)), ld_shared_u32(smem(H_LO + tid * 4)));
                    tile_bins(p, pos, tile).add(tid as usize).write(packed as u64 | (lo as u64) << 32);
                }
                // The spare bins too: the block's next item may bin a row whole.
                st_shared_u32(smem(H_COUNT + tid * 4), 0);
                st_shared_u32(smem(H_LO + tid * 4), 0);
            }
            sync_threads();
            return;
        }
        // Float compares, a key only on a tie with the floor's value (`keys::reaches_floor`).
        let (base, fv) = (tile * TILE_TOKENS + tid * TOKENS_PER_THREAD, floor_value(r.floor));
        each8(|j| {
            if reaches_floor(x[j], base + j as u32, r.floor, fv) {
                add_to_tile_bins(H_COUNT, H_LO, x[j], r.mc);
            }
        });
        sync_threads();
        let (counts, sums) = (bin_counts(p, pos), bin_sums(p, pos));
        let mut b = tid;
        while b < BINS {
            let packed = ld_shared_u32(smem(H_COUNT + b * 4));
            if packed != 0 {
                let (count, sum) = tile_bin(packed, ld_shared_u32(smem(H_LO + b * 4)));
                red_add_global_u32(counts.add(b as usize), count);
                if sum != 0 {
                    red_add_global_u64(sums.add(b as usize), sum);
                }
                st_shared_u32(smem(H_COUNT + b * 4), 0);
                st_shared_u32(smem(H_LO + b * 4), 0);
            }
            b += THREADS;
        }
        sync_threads();
    }
}

// ---------------------------------------------------------------------------------------------
// 2. The boundary bins.

/// Split pass, step 2: one block per listed row in turn finds the boundary bins from the row's
/// histogram, clears the histogram for the next step, and sends a row whose boundary bins hold
/// too many keys to the single-block pass.
///
/// # Safety
/// Launch with `SAMPLER_THREADS` threads, any grid, and `SAMPLER_SHARED_BYTES` of dynamic shared
/// memory, after `exact_histogram` of the same step on the same stream.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn exact_bins(p: StepParams) {
    // SAFETY: forwarded.
    unsafe { exact_bins_body::<8, 2>(&p) }
}

/// [`exact_bins`] built for two 512-thread blocks per SM (64 registers; it spills, within the
/// PTX check's allowance): the host launches it for batches of more rows than SMs
/// (`abi::rows_two_per_sm`), whose rows one block per SM (127 registers) chose in two waves
/// (flat top-p 0.95, B = 256: 19.9 µs under Nsight, session 28). A row's choice is a latency
/// chain on one block, as the finish's is, which the same split sped up in session 23.
///
/// # Safety
/// As for [`exact_bins`].
#[no_mangle]
pub unsafe extern "ptx-kernel" fn exact_bins_two_per_sm(p: StepParams) {
    // SAFETY: forwarded.
    unsafe { exact_bins_body::<4, 1>(&p) }
}

/// The body of both entry points above.
///
/// # Safety
/// As for [`exact_bins`].
#[inline(always)]
unsafe fn exact_bins_body<const LOADS: usize, const TURN: usize>(p: &StepParams) {
    let p = *p;
    // SAFETY: a wait, no access; everything below follows it.
    unsafe { follow_previous_kernel() };
    if block_dim_x() != THREADS {
        return;
    }
    // SAFETY: list and flag reads in bounds; choose_bins is a whole-block body.
    unsafe { for_each_split_row!(&p, |pos, row, r| choose_bins::<false, LOADS, TURN>(&p, pos, row, r)) }
}

/// Where a row's top-k and top-p boundaries lie in a bin histogram: the same in every thread.
#[derive(Clone, Copy)]
pub(crate) struct Boundaries {
    /// Count and mass of the histogram (the keys above the min-p floor).
    pub(crate) n_m: u32,
    pub(crate) z_m: u128,
    /// The top-k count (`n_m` when top-k keeps every key).
    pub(crate) k1: u32,
    /// The bin of the `k1`-th key (`NONE` when top-k keeps every key, or when that key weighs
    /// nothing: then it changes nothing), with the count and mass of the bins before it.
    pub(crate) bin_k: u32,
    pub(crate) count_before_k: u32,
    pub(crate) mass_before_k: u128,
    /// The first bins whose inclusive running mass reaches `p·Z1` for the least and the largest
    /// `Z1` that `bin_k` allows (`NONE` without top-p, or if never reached), and the mass
    /// before the first.
    pub(crate) bin_p_lo: u32,
    pub(crate) bin_p_hi: u32,
    pub(crate) mass_before_p: u128,
}

/// The boundaries of a bin histogram of which this thread owns the run of bins from
/// `tid · BINS_PER_THREAD`: `own_counts[i]` and `own_mass_at(i)` are the count and mass of its
/// bin `i` (zero past the end), `mass_of(b)` the mass of any bin. Both split-pass `exact_bins`
/// and verification's binned selection (`spec.rs`) decide where to look with it.
///
/// # Safety
/// The whole block calls it; the broadcast slots `X_BIN_K` .. `X_MASS_P` are free. They keep
/// `count_before_k` and `mass_before_k` (when `bin_k` is a bin) and `mass_before_p` (when
/// `bin_p_lo` is) until the caller writes them, for callers short of registers.
#[inline(always)]
pub(crate) unsafe fn bin_boundaries<M: Fn(usize) -> u128, B: Fn(u32) -> u128>(
    own_counts: &[u32; BINS_PER_THREAD as usize],
    own_mass_at: M,
    mass_of: B,
    top_k: u32,
    top_p: f32,
) -> Boundaries {
    let tid = thread_idx_x();
    let first = tid * BINS_PER_THREAD;
    // SAFETY (whole block): broadcast slots of the layout; the barriers order their writes
    // (one thread each) and reads.
    unsafe {
        let (mut own_count, mut own_mass) = (0u32, 0u128);
        each_own_bin(|i| {
            own_count += own_counts[i];
            own_mass += own_mass_at(i);
        });
        let (count_before, n_m) = block_exclusive_scan_u32(own_count);
        let (mass_before, z_m) = block_exclusive_scan_u128(own_mass);
        let k1 = if top_k == 0 || top_k > n_m { n_m } else { top_k };

        // The top-k boundary: the bin where the running count reaches k1. In the zero bin it
        // changes nothing: those keys weigh nothing, so none is drawn or tips top-p.
        if tid == 0 {
            st_shared_u32(smem(X_BIN_K), NONE);
        }
        sync_threads();
        if k1 < n_m {
            let (mut run_c, mut run_m) = (count_before, mass_before);
            each_own_bin(|i| {
                let (b, n) = (first + i as u32, own_counts[i]);
                if run_c < k1 && k1 <= run_c + n && b < ZERO_BIN {
                    st_shared_u32(smem(X_BIN_K), b);
                    st_shared_u32(smem(X_COUNT_K), run_c);
                    st_shared_u64(smem(X_MASS_K), run_m as u64);
                    st_shared_u64(smem(X_MASS_K + 8), (run_m >> 64) as u64);
                }
                run_c += n;
                run_m += own_mass_at(i);
            });
        }
        sync_threads();
        let bin_k = ld_shared_u32(smem(X_BIN_K));
        let (count_before_k, mass_before_k) = if bin_k != NONE {
            (
                ld_shared_u32(smem(X_COUNT_K)),
                ld_shared_u128(smem(X_MASS_K)),
            )
        } else {
            (0, z_m)
        };

        // The top-p boundary for the least and the largest Z1 the top-k bin allows: the first
        // bin whose inclusive running mass reaches p·Z1. Z1 ≤ that mass at bin_k, so both are
        // at or before bin_k.
        let has_top_p = !top_p_disabled(top_p);
        let (z1_lo, z1_hi) = if bin_k != NONE { (mass_before_k, mass_before_k + mass_of(bin_k)) } else { (z_m, z_m) };
        let (mut hit_lo, mut hit_hi, mut before_lo) = (NONE, NONE, 0u128);
        if has_top_p {
            let p24 = top_p_units(top_p);
            let mut run_m = mass_before;
            each_own_bin(|i| {
                let (b, m) = (first + i as u32, own_mass_at(i));
                if hit_lo == NONE && top_p_reached(run_m + m, z1_lo, p24) {
                    hit_lo = b;
                    before_lo = run_m;
                }
                if hit_hi == NONE && top_p_reached(run_m + m, z1_hi, p24) {
                    hit_hi = b;
                }
                run_m += m;
            });
        }
        let bin_p_lo = block_min_u32(hit_lo);
        let bin_p_hi = block_min_u32(hit_hi);
        if has_top_p && hit_lo == bin_p_lo && hit_lo != NONE {
            st_shared_u64(smem(X_MASS_P), before_lo as u64);
            st_shared_u64(smem(X_MASS_P + 8), (before_lo >> 64) as u64);
        }
        sync_threads();
        let mass_before_p = if has_top_p && bin_p_lo != NONE {
            ld_shared_u128(smem(X_MASS_P))
        } else {
            0
        };
        Boundaries { n_m, z_m, k1, bin_k, count_before_k, mass_before_k, bin_p_lo, bin_p_hi, mass_before_p }
    }
}

/// # Safety
/// The whole block calls it for a split row, with `r` its [`split_row`] read after the
/// histogram.
#[inline(always)]
unsafe fn choose_bins<const TAIL: bool, const LOADS: usize, const TURN: usize>(p: &StepParams, pos: u32, row: u32, r: SplitRow) {
    let tid = thread_idx_x();
    let first = tid * BINS_PER_THREAD;
    // SAFETY (whole block): each thread reads and clears only its own bins; shared slots from
    // the layout; the job is written by thread 0 after the barriers of the scans.
    unsafe {
        if r.job.band != NONE {
            choose_band_bins::<TAIL, LOADS, TURN>(p, pos, row, &r);
            return;
        }
        let (counts, sums) = (bin_counts(p, pos), bin_sums(p, pos));
        // This thread's bins, loaded together (one memory round trip, not one per bin and pass):
        // counts into registers, fraction sums into shared memory (registers would not hold
        // both); bins past the end read as empty.
        let mut own_counts = [0u32; BINS_PER_THREAD as usize];
        each_own_bin(|i| {
            let b = first + i as u32;
            if b < BINS {
                own_counts[i] = counts.add(b as usize).read_volatile();
                st_shared_u64(smem(B_SUMS + b * 8), sums.add(b as usize).read_volatile());
            }
        });
        let own_mass_at = |i: usize| {
            let b = first + i as u32;
            if b < BINS {
                bin_mass(b, ld_shared_u64(smem(B_SUMS + b * 8)))
            } else {
                0
            }
        };
        let s = &r.settings;
        let mass_of = |b: u32| bin_mass(b, ld_shared_u64(smem(B_SUMS + b * 8)));
        let bounds = bin_boundaries(&own_counts, own_mass_at, mass_of, s.top_k, s.top_p);
        let Boundaries { z_m, k1, bin_k, count_before_k, mass_before_k, bin_p_lo, bin_p_hi, mass_before_p, .. } = bounds;
        let top_p = !top_p_disabled(s.top_p);

        // Keys the boundary bins hold; then every read of this thread's bins is done, so they
        // are cleared for the next step.
        let mut own_gather = 0u32;
        each_own_bin(|i| {
            let b = first + i as u32;
            if b == bin_k || (bin_p_lo <= b && b <= bin_p_hi) {
                own_gather += own_counts[i];
            }
            if b < BINS && own_counts[i] != 0 {
                counts.add(b as usize).write(0);
                sums.add(b as usize).write(0);
            }
        });
        let gather = block_sum_u32(own_gather);
        if tid == 0 {
            if gather > GATHER || (top_p && bin_p_lo == NONE) {
                (p.exact_flags as *mut u32).add(row as usize).write(EXACT_SINGLE);
            } else {
                let sure_end = if top_p {
                    bin_p_lo
                } else if bin_k != NONE {
                    bin_k
                } else {
                    BINS
                };
                let job = job_ptr(p, pos);
                job.write(ExactJob {
                    z_m: halves(z_m),
                    mass_before_k: halves(mass_before_k),
                    mass_before_p: halves(mass_before_p),
                    k1,
                    count_before_k,
                    bin_k,
                    bin_p_lo,
                    bin_p_hi,
                    sure_end,
                    gathered: 0,
                    ..r.job
                });
            }
            // The row's route and bins are written: `exact_tail`'s waiting items may go on.
            // (`exact_bins`' readers are later kernels: no fence, whose wait for the writes
            // ended the block's work.)
            if TAIL {
                fence_acq_rel_gpu();
                tiles_done(p, pos).write_volatile(bins_ready(p));
            }
        }
        sync_threads();
    }
}

/// Band mode's bins: adds up the tiles' sub-bins of the boundary band, finds the one where the
/// running mass (from the bands before) reaches `p·Z`, writes each tile's mass of sure keys
/// (stage 1's bands before the boundary band and the sub-bins before that one), and the bounds
/// of the values `exact_gather` stores. A row whose boundary sub-bin holds more than `GATHER`
/// keys goes to the single-block pass.
///
/// # Safety
/// The whole block calls it for a split row in band mode whose histogram tiles are all written.
#[inline(always)]
unsafe fn choose_band_bins<const TAIL: bool, const LOADS: usize, const TURN: usize>(p: &StepParams, pos: u32, row: u32, r: &SplitRow) {
    const GROUPS: u32 = THREADS / SUB;
    let tid = thread_idx_x();
    let (warp, lane) = (tid / 32, tid % 32);
    // SAFETY (whole block, uniform branches): the row's tile histograms and tile masses (tiles
    // below `tiles`), stage 1's records of the row; shared slots from the layout (B_SUMS holds
    // 512 counts and 512 sums); thread 0 writes the job and the flag after the barriers.
    unsafe {
        let job = r.job;
        let (band, c) = (job.band, r.mc - job.band as f32);
        let scale = bin_scale(band * SUB);
        // Thread (group, sub) adds sub-bin `sub` of every GROUPS-th tile from `group`. Volatile:
        // in `exact_tail` other blocks wrote them in this launch.
        let (sub, group) = (tid % SUB, tid / SUB);
        let (mut count, mut sum) = (0u32, 0u64);
        let mut t = group;
        while t < p.tiles {
            // `LOADS` loads in flight before the first add: one a loop turn waited an L2 round
            // trip each (8 turns at V = 128256); eight take a V = 128256 row in one.
            let mut words = [0u64; LOADS];
            each_n::<LOADS, _>(|q| {
                let at = t + q as u32 * GROUPS;
                if at < p.tiles {
                    words[q] = tile_bins(p, pos, at).add(sub as usize).read_volatile();
                }
            });
            each_n::<LOADS, _>(|q| {
                let (n, f) = tile_bin(words[q] as u32, (words[q] >> 32) as u32);
                count += n;
                sum += f;
            });
            t += LOADS as u32 * GROUPS;
        }
        st_shared_u32(smem(B_SUMS + tid * 4), count);
        st_shared_u64(smem(B_SUMS + THREADS * 4 + tid * 8), sum);
        sync_threads();
        let (mut count, mut sum) = (0u32, 0u64);
        if tid < SUB {
            each_n::<{ GROUPS as usize }, _>(|g| {
                let at = g as u32 * SUB + tid;
                count += ld_shared_u32(smem(B_SUMS + at * 4));
                sum += ld_shared_u64(smem(B_SUMS + THREADS * 4 + at * 8));
            });
        }
        // The sub-bins in key order: the first reaching p·Z holds the boundary.
        let own = sum as u128 * scale as u128;
        let (before, _) = block_exclusive_scan_u128(own);
        let (mass_before_band, z) = (join(job.mass_before_band), join(job.z));
        let p24 = top_p_units(r.settings.top_p);
        let mass_before = mass_before_band + before;
        let hit = own != 0 && !top_p_reached(mass_before, z, p24) && top_p_reached(mass_before + own, z, p24);
        let hit_sub = block_min_u32(if hit { tid } else { NONE });
        if hit {
            st_shared_u32(smem(X_COUNT_K), count);
            st_shared_u64(smem(X_MASS_P), mass_before as u64);
            st_shared_u64(smem(X_MASS_P + 8), (mass_before >> 64) as u64);
        }
        sync_threads();
        let ok = hit_sub != NONE && ld_shared_u32(smem(X_COUNT_K)) <= GATHER;
        if ok {
            // A warp per tile: its lanes over stage 1's bands and the sure sub-bins. `TURN` tiles
            // a turn, every word of them requested before any is summed (two: a V = 128256 row's
            // in one round trip, not two); a warp short of tiles reads its first again.
            const WARPS: u32 = THREADS / 32;
            let end = band as f32;
            let mut t = warp;
            while t < p.tiles {
                let tiles: [u32; TURN] = core::array::from_fn(|k| if t + k as u32 * WARPS < p.tiles { t + k as u32 * WARPS } else { t });
                let bands = tiles.map(|at| [recorded_band_words(p, row, at, lane), recorded_band_words(p, row, at, lane + 32)]);
                // Read whatever `hit_sub`: a load under the test waited before the next.
                let subs = tiles.map(|at| {
                    let mut w = [0u64; (SUB / 32) as usize];
                    each_n::<{ (SUB / 32) as usize }, _>(|q| w[q] = tile_bins(p, pos, at).add(q * 32 + lane as usize).read_volatile());
                    w
                });
                each_n::<TURN, _>(|k| {
                    let mut part = recorded_band_share(bands[k][0], lane, r.mc, end) + recorded_band_share(bands[k][1], lane + 32, r.mc, end);
                    each_n::<{ (SUB / 32) as usize }, _>(|q| {
                        let (_, f) = tile_bin(subs[k][q] as u32, (subs[k][q] >> 32) as u32);
                        if q as u32 * 32 + lane < hit_sub {
                            part += f as u128 * scale as u128;
                        }
                    });
                    let m = warp_sum_u128(part);
                    if lane == 0 && (k == 0 || tiles[k] != t) {
                        let at = tile_masses(p, pos).add(tiles[k] as usize * 2);
                        at.write(m as u64);
                        at.add(1).write((m >> 64) as u64);
                    }
                });
                t += TURN as u32 * WARPS;
            }
        }
        // `fixed::exact_sub_bin_bounds`, its two searches in two lanes at once.
        let (mut lo, mut past) = (0, 0);
        if warp == 0 {
            let edge = exact_sub_bin_edge(if lane == 0 { hit_sub } else { hit_sub.wrapping_sub(1) }, c);
            (lo, past) = (edge, shfl_idx_u32(FULL_MASK, edge, 1));
        }
        // The tile masses are written before thread 0's release below.
        sync_threads();
        // Every read of the tile histograms is done: back to zero for the next step, since warp
        // rows add their items to them.
        let histograms = tile_bins(p, pos, 0);
        let mut i = tid;
        while i < p.tiles * SUB {
            histograms.add(i as usize).write(0);
            i += THREADS;
        }
        if tid == 0 {
            if ok {
                let (lo, hi) = sub_bin_bounds_of_edges(lo, past);
                let bin = band * SUB + hit_sub;
                job_ptr(p, pos).write(ExactJob {
                    z_m: job.z,
                    mass_before_p: halves(ld_shared_u128(smem(X_MASS_P))),
                    k1: 0,
                    count_before_k: 0,
                    bin_k: NONE,
                    bin_p_lo: bin,
                    bin_p_hi: bin,
                    sure_end: bin,
                    gathered: 0,
                    gather_lo: lo.to_bits(),
                    gather_hi: hi.to_bits(),
                    ..job
                });
            } else {
                (p.exact_flags as *mut u32).add(row as usize).write(EXACT_SINGLE);
            }
            // As in `choose_bins`: `exact_tail`'s waiting items may go on.
            if TAIL {
                fence_acq_rel_gpu();
                tiles_done(p, pos).write_volatile(bins_ready(p));
            }
        }
        sync_threads();
    }
}

// ---------------------------------------------------------------------------------------------
// 3. The gather.

/// Split pass, step 3: each block takes (row, tile) items in turn, stores the tile's keys that
/// fall in the row's boundary bins, and writes the tile's mass of keys in the sure bins.
///
/// # Safety
/// Launch with `SAMPLER_THREADS` threads, any grid, and `SAMPLER_SHARED_BYTES` of dynamic shared
/// memory, after `exact_bins` of the same step on the same stream.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn exact_gather(p: StepParams) {
    // SAFETY: forwarded.
    unsafe { exact_gather_body::<false>(&p) }
}

/// [`exact_gather`] that also takes warp rows a warp per run of rounds, launched with
/// [`exact_histogram_runs`].
///
/// # Safety
/// As for [`exact_gather`].
#[no_mangle]
pub unsafe extern "ptx-kernel" fn exact_gather_runs(p: StepParams) {
    // SAFETY: forwarded.
    unsafe { exact_gather_body::<true>(&p) }
}

/// # Safety
/// As for [`exact_gather`].
#[inline(always)]
unsafe fn exact_gather_body<const RUNS: bool>(p: &StepParams) {
    // SAFETY: a wait, no access; everything below follows it.
    unsafe { follow_previous_kernel() };
    if block_dim_x() != THREADS || p.tiles == 0 {
        return;
    }
    let tid = thread_idx_x();
    // SAFETY (whole block): the bodies' contracts hold for the items handed out.
    unsafe {
        if RUNS {
            if let (split, Some(run)) = step_warp_run(p) {
                gather_warp_rows(p, split, run);
                return;
            }
        }
        for_each_split_tile::<false, _>(p, |pos, row, tile, input| gather_tile(p, tid, pos, row, tile, input))
    }
}

/// The row bands (`mc − ceil(x)`, as floats) of the tokens whose bins `exact_gather` must
/// compute, `first ..= last`. Bands before `first` are wholly sure and above the min-p floor, so
/// their mass is stage 1's (0 when the row has no band masses: then every band is classified);
/// a token after `last` is in no boundary bin and in no sure bin, so it adds nothing.
#[inline(always)]
fn classified_bands(r: &SplitRow) -> (f32, f32) {
    let job = &r.job;
    let band_of = |bin: u32| if bin == NONE { 0 } else { bin / SUB };
    let last = band_of(job.bin_k).max(band_of(job.bin_p_hi)).max(band_of(job.sure_end.wrapping_sub(1)));
    let zero_band = (ZERO_BIN / SUB) as f32;
    let floor_band = if r.floor > 1 {
        // Tokens of a band before the floor's are above it: their ceiling is larger.
        let d = r.mc - soft_ceil(key_value(r.floor));
        if d < zero_band { d } else { zero_band }
    } else {
        zero_band
    };
    let sure_band = (job.sure_end / SUB) as f32;
    let first = if job.mass_ok == 0 {
        0.0
    } else if sure_band < floor_band {
        sure_band
    } else {
        floor_band
    };
    // The zero bin weighs nothing; should it ever be a boundary bin, every band is classified.
    (first, if last < ZERO_BIN / SUB { last as f32 } else { f32::INFINITY })
}

/// Stores the tile's keys that fall in the row's boundary bins and writes the tile's mass of
/// keys in the sure bins.
///
/// # Safety
/// The whole block calls it for a split row's (position, tile) whose bins are chosen, with
/// `input` its [`tile_item`] read after that; `tid` the thread's index (as for
/// [`histogram_tile`]).
#[inline(always)]
unsafe fn gather_tile(p: &StepParams, tid: u32, pos: u32, row: u32, tile: u32, input: TileItem) {
    // SAFETY (whole block, block-uniform branches): the row's gathered keys (positions below
    // GATHER) and its tile masses; shared slots from the layout.
    unsafe {
        let r = input.r;
        let job = &r.job;
        let x = process_raw8(p, &r.row, tile, input.raw);
        // Keys are built only for the tokens staged below (eight held keys were 16 registers).
        let base = tile * TILE_TOKENS + tid * TOKENS_PER_THREAD;
        if job.band != NONE {
            gather_band_tile(p, tid, pos, base, x, job);
            return;
        }
        let (first_band, last_band) = classified_bands(&r);
        // The sure bands' mass, as stage 1 recorded it: a thread per band of the tile.
        let mut sure = if job.mass_ok != 0 { recorded_band_mass(p, row, tile, tid, r.mc, first_band) } else { 0 };
        // The keys to classify, packed: each warp stages those of four tokens a lane, and its
        // lanes classify them 32 at a time. A token-by-token test alone saved nothing, as a warp
        // classified every token slot any of its lanes needed.
        let lane = tid & 31;
        let lanes_before = (1u32 << lane) - 1;
        let stage = G_STAGE + (tid / 32) * G_STAGE_WARP_BYTES;
        let (mut take, mut taken) = (0u32, [0u64; 8]);
        let mut classify_half = |half: usize| {
            let mut staged = 0u32;
            each_n::<4, _>(|i| {
                let j = half * 4 + i;
                // A ceiling and two compares: most tokens are in no band worth classifying.
                let band = r.mc - soft_ceil(x[j]);
                let needed = x[j] > f32::NEG_INFINITY && band >= first_band && band <= last_band;
                let votes = ballot(FULL_MASK, needed);
                if needed {
                    st_shared_u64(smem(stage + (staged + (votes & lanes_before).count_ones()) * 8), sort_key(x[j], base + j as u32));
                }
                staged += votes.count_ones();
            });
            sync_warp(FULL_MASK);
            each_n::<4, _>(|i| {
                let at = i as u32 * 32 + lane;
                if i as u32 * 32 < staged && at < staged {
                    let key = ld_shared_u64(smem(stage + at * 8));
                    let (bin, w) = classify(key, r.floor, r.mc);
                    if bin < job.sure_end {
                        sure += w;
                    } else if bin != NONE && (bin == job.bin_k || (job.bin_p_lo <= bin && bin <= job.bin_p_hi)) {
                        take |= 1 << (half * 4 + i);
                        taken[half * 4 + i] = key;
                    }
                }
            });
            // The next half restages over these keys.
            sync_warp(FULL_MASK);
        };
        classify_half(0);
        classify_half(1);
        // One global atomic per block reserves the tile's run of the list.
        let (before, total) = block_exclusive_scan_u32(take.count_ones());
        if tid == 0 && total > 0 {
            st_shared_u32(smem(X_BASE), atom_add_global_u32(&raw mut (*job_ptr(p, pos)).gathered, total));
        }
        let sure = block_sum_u128_to_warp0(sure);
        let mut at = if total > 0 { ld_shared_u32(smem(X_BASE)) } else { 0 } + before;
        let out = gathered_keys(p, pos);
        each8(|j| {
            if take & (1 << j) != 0 {
                if at < GATHER {
                    out.add(at as usize).write(taken[j]);
                }
                at += 1;
            }
        });
        if tid == 0 {
            let m = tile_masses(p, pos).add(tile as usize * 2);
            m.write(sure as u64);
            m.add(1).write((sure >> 64) as u64);
        }
        // X_BASE is read above before the next item's thread 0 can pass this barrier.
        sync_threads();
    }
}

/// Band mode's gather: stores the tile's keys of the boundary bin, tested by their values
/// alone (`exact_bins` wrote the tile's sure mass). Each warp reserves its own run of the list
/// (a global atomic for a warp with keys to store), so an item has no barrier and no shared
/// memory: the keys' order does not matter (`exact_finish` sorts them), and the warps run on
/// to their next item at their own pace.
///
/// # Safety
/// As for [`gather_tile`], for a row in band mode; `base` is the thread's first token and `x`
/// its processed values. The whole warp calls it.
#[inline(always)]
unsafe fn gather_band_tile(p: &StepParams, tid: u32, pos: u32, base: u32, x: [f32; 8], job: &ExactJob) {
    // SAFETY (whole warp): the row's job counter and gathered keys (positions below GATHER).
    unsafe {
        let (lo, hi) = (f32::from_bits(job.gather_lo), f32::from_bits(job.gather_hi));
        let mut take = 0u32;
        each8(|j| take |= ((x[j] >= lo && x[j] <= hi) as u32) << j);
        if !vote_any(FULL_MASK, take != 0) {
            return;
        }
        let n = take.count_ones();
        let mut at = reserve_keys(p, pos, tid & 31, n);
        let out = gathered_keys(p, pos);
        each8(|j| {
            if take & (1 << j) != 0 {
                if at < GATHER {
                    out.add(at as usize).write(sort_key(x[j], base + j as u32));
                }
                at += 1;
            }
        });
    }
}

/// Reserves a warp's run of the row's gathered-key list for `n` keys from this lane (one
/// global atomic, by lane 31) and returns where this lane's first key goes.
///
/// # Safety
/// The whole warp calls it; `pos` has scratch; `lane` is this thread's lane.
#[inline(always)]
unsafe fn reserve_keys(p: &StepParams, pos: u32, lane: u32, n: u32) -> u32 {
    // SAFETY (whole warp): the row's job counter.
    unsafe {
        let through = warp_inclusive_scan::<u32>(n);
        let mut warp_base = 0;
        if lane == 31 {
            warp_base = atom_add_global_u32(&raw mut (*job_ptr(p, pos)).gathered, through);
        }
        shfl_idx_u32(FULL_MASK, warp_base, 31) + through - n
    }
}

// ---------------------------------------------------------------------------------------------
// 4. The finish, and the single-block pass for the other listed rows.

/// Split pass, step 4, and the single-block pass: blocks take the listed rows in turn. A split
/// row is decided from its gathered keys (`finish_split`); a row flagged for the single-block
/// pass (by stage 2, or by the split pass when the row's boundary bins held more keys than it
/// gathers) runs `sampler::exact_single`. One kernel for both, so that they cost a step one
/// place in its chain of launches (`sample_exact`, the single-block pass's own kernel after
/// this one, was a fifth launch until session 16).
///
/// # Safety
/// Launch with `SAMPLER_THREADS` threads, any grid, and `SAMPLER_SHARED_BYTES` of dynamic shared
/// memory, after `exact_gather` of the same step on the same stream.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn exact_finish(p: StepParams) {
    // SAFETY: forwarded.
    unsafe { exact_finish_body(&p) }
}

/// [`exact_finish`] built for two 512-thread blocks per SM (64 registers, with spills within the
/// PTX check's allowance: 4224 bytes a thread, session 27): the host
/// launches it for batches of more rows than SMs (`abi::rows_two_per_sm`), whose listed rows
/// one block per SM would finish in two waves. A row's finish is a latency chain on one block,
/// so two of them share an SM well.
///
/// # Safety
/// As for [`exact_finish`].
#[no_mangle]
pub unsafe extern "ptx-kernel" fn exact_finish_two_per_sm(p: StepParams) {
    // SAFETY: forwarded.
    unsafe { exact_finish_body(&p) }
}

/// The body of both finishing entry points.
///
/// # Safety
/// As for [`exact_finish`].
#[inline(always)]
unsafe fn exact_finish_body(p: &StepParams) {
    let p = *p;
    // SAFETY: a wait, no access; everything below follows it.
    unsafe { follow_previous_kernel() };
    if block_dim_x() != THREADS {
        return;
    }
    // SAFETY: list reads below the listed count, flag reads of rows below the active count
    // (flags of rows past it are stale: stage 2 clears only active rows); finish_split and
    // exact_single are whole-block bodies, for a split row with scratch and a flagged row.
    unsafe {
        // The reads in turn: issued together as in `exact_bins` (`for_each_split_row`), they
        // made flat top-p 0.95 at B = 1 1.6 µs slower (session 23, run 4), and the two-per-SM
        // build spill.
        let mut pos = block_idx_x();
        let (n, split) = listed(&p);
        let active = active_rows(&p);
        while pos < n {
            let row = listed_row(&p, pos);
            if row < active {
                let flag = flag_of(&p, row);
                if flag == EXACT_SPLIT && pos < split {
                    finish_split(&p, pos, row);
                    // The next row may be a single-block one, whose set-up writes shared
                    // memory this row's last reads use.
                    sync_threads();
                } else if flag == EXACT_SINGLE {
                    exact_single_out_of_line(p, row);
                    sync_threads();
                }
            }
            pos += grid_dim_x();
        }
    }
}

/// [`exact_single`] for `exact_finish`, not inlined. Inlined, the single-block pass took the
/// 64-register build's own spills to 4224 bytes a thread (1128 without it), though a split row
/// never runs it. (The kernel's code is as large: ptxas puts the called function's code in the
/// kernel's section, 689 KB against 674.) The split rows' finish took as long either way under
/// Nsight (flat top-p 0.95, B = 256: 34.2-34.6 against 33.9 µs): the spills were not what it
/// waits for. Steps measured 0.991-0.997× the time at B = 1 and 0.997-1.003× at B ≥ 64
/// (session 38). `sample_rows_quiet` keeps the pass inlined: out of line there, its common
/// path rose from 122 to 127 registers and flat top-p 0.95 B = 1 took 1.007× the time.
///
/// # Safety
/// As for [`exact_single`]; the whole block calls it with the same arguments.
#[inline(never)]
unsafe extern "C" fn exact_single_out_of_line(p: StepParams, row: u32) {
    // SAFETY: forwarded.
    unsafe { exact_single(&p, row) }
}

// ---------------------------------------------------------------------------------------------
// 5. The whole exact pass in one launch.

/// The exact pass as one launch, opted into with the host's `ExactPassLaunch::OneLaunch` for
/// steps that seldom list a row: five idle launches in a chain cost more than one. (A step that
/// lists rows is slower this way: ARCHITECTURE.md, "Why".) Blocks take items from
/// a queue in order: every split row's histogram tiles, then its gather tiles, then every listed
/// row once for the single-block pass. The block whose histogram tile is a row's last chooses
/// the row's bins; the block whose gather tile is its last finishes it. An item waits only for
/// items earlier in the queue, which running blocks hold, so the queue cannot deadlock however
/// few blocks are resident.
///
/// # Safety
/// Launch with `SAMPLER_THREADS` threads, any grid, and `EXACT_HIST_SHARED_BYTES` of dynamic
/// shared memory, after `sample_rows` of the same step on the same stream.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn exact_tail(p: StepParams) {
    // SAFETY: a wait, no access; everything below follows it.
    unsafe { follow_previous_kernel() };
    if block_dim_x() != THREADS || p.tiles == 0 {
        return;
    }
    let tid = thread_idx_x();
    // SAFETY (whole block; every branch depends on the item, which is block-uniform): list,
    // flag and job reads of listed positions; the queue word is the list's second; the bodies'
    // contracts as each branch states.
    unsafe {
        let (n, split) = listed(&p);
        if n == 0 {
            return;
        }
        let tile_items = split * p.tiles;
        let items = 2 * tile_items + n;
        let queue = (p.exact_list as *mut u32).add(1);
        clear_histogram();
        loop {
            if tid == 0 {
                st_shared_u32(smem(X_ITEM), atom_add_global_u32(queue, 1));
            }
            sync_threads();
            let item = ld_shared_u32(smem(X_ITEM));
            // Every thread has the item before thread 0 takes the next.
            sync_threads();
            if item >= items {
                break;
            }
            if item < tile_items {
                let (pos, tile) = (item / p.tiles, item % p.tiles);
                let row = listed_row(&p, pos);
                // A split row's flag changes only when its last histogram tile has arrived.
                if row < p.rows && flag_of(&p, row) == EXACT_SPLIT {
                    histogram_tile(&p, tid, pos, tile, tile_item::<false>(&p, pos, row, tile));
                    if block_arrive(tiles_done(&p, pos), p.tiles) {
                        choose_bins::<true, 8, 2>(&p, pos, row, split_row(&p, pos, row));
                        // Its fraction sums overlay the shared histogram.
                        clear_histogram();
                    }
                }
            } else if item < 2 * tile_items {
                let (pos, tile) = ((item - tile_items) / p.tiles, (item - tile_items) % p.tiles);
                let row = listed_row(&p, pos);
                if row < p.rows && split_now(&p, row) {
                    wait_for_bins(&p, pos);
                    // Still split: the bins did not send the row to the single-block pass.
                    if flag_of(&p, row) == EXACT_SPLIT {
                        gather_tile(&p, tid, pos, row, tile, tile_item::<false>(&p, pos, row, tile));
                        if block_arrive(tiles_done(&p, pos), bins_ready(&p) + p.tiles) {
                            finish_split(&p, pos, row);
                            sync_threads();
                        }
                    }
                }
            } else {
                let row = listed_row(&p, item - 2 * tile_items);
                if row < p.rows {
                    if split_now(&p, row) {
                        wait_for_bins(&p, item - 2 * tile_items);
                    }
                    if row < active_rows(&p) && flag_of(&p, row) == EXACT_SINGLE {
                        exact_single(&p, row);
                        sync_threads();
                    }
                }
            }
        }
    }
}

/// Whether `row` is flagged for the split pass, as thread 0 reads it, in every thread: another
/// block's `choose_bins` may change the flag while the block reads it.
///
/// # Safety
/// The whole block calls it; `row < rows`.
#[inline(always)]
unsafe fn split_now(p: &StepParams, row: u32) -> bool {
    // SAFETY: one flag read; the barrier is the whole block's.
    unsafe { sync_threads_or(thread_idx_x() == 0 && flag_of(p, row) == EXACT_SPLIT) }
}

/// Waits until the bins of the split row at list position `pos` are chosen (or the row was
/// sent to the single-block pass); the row's job and flag are then final for this step.
///
/// # Safety
/// The whole block calls it; the row's histogram tiles are earlier in `exact_tail`'s queue.
#[inline(always)]
unsafe fn wait_for_bins(p: &StepParams, pos: u32) {
    // SAFETY: thread 0 polls the job's counter alone; the fence and the barrier hand what
    // `choose_bins` wrote before its release to the whole block.
    unsafe {
        if thread_idx_x() == 0 {
            while ld_relaxed_gpu_u32(tiles_done(p, pos)) < bins_ready(p) {
                nanosleep(64);
            }
            fence_acq_rel_gpu();
        }
        sync_threads();
    }
}

/// Broadcasts a u64 and a u128 from the one thread that passes `Some`.
///
/// # Safety
/// The whole block calls it; at most one thread passes `Some` (else the slots hold zeros).
#[inline(always)]
pub(crate) unsafe fn broadcast_key_mass(v: Option<(u64, u128)>) -> (u64, u128) {
    // SAFETY: broadcast slots of the layout; the barriers order the writes and the reads.
    unsafe {
        if thread_idx_x() == 0 {
            st_shared_u64(smem(X_KEY), 0);
            st_shared_u64(smem(X_MASS), 0);
            st_shared_u64(smem(X_MASS + 8), 0);
        }
        sync_threads();
        if let Some((key, mass)) = v {
            st_shared_u64(smem(X_KEY), key);
            st_shared_u64(smem(X_MASS), mass as u64);
            st_shared_u64(smem(X_MASS + 8), (mass >> 64) as u64);
        }
        sync_threads();
        let out = (
            ld_shared_u64(smem(X_KEY)),
            ld_shared_u128(smem(X_MASS)),
        );
        sync_threads();
        out
    }
}

/// What a row's boundary bins leave to decide on its gathered keys (those of bin `bin_k` and of
/// the top-p bins from `bin_p_lo`, sorted, largest first).
#[derive(Clone, Copy)]
pub(crate) struct Cut {
    /// The bound before top-k (min-p's floor), and the mass of the keys at or above it.
    pub(crate) floor: u64,
    pub(crate) z_m: u128,
    /// Top-k: the `k1`-th key is in `bin_k` (`NONE`: top-k keeps every key ≥ `floor`), after
    /// `count_before_k` keys of mass `mass_before_k` in earlier bins.
    pub(crate) bin_k: u32,
    pub(crate) k1: u32,
    pub(crate) count_before_k: u32,
    pub(crate) mass_before_k: u128,
    /// Top-p: the keys of bins before `bin_p_lo` are kept for sure.
    pub(crate) bin_p_lo: u32,
}

/// Decides top-k, then top-p, on a row's sorted gathered keys, with the integer tests of the
/// reference: the kept floor and the kept mass. This thread holds positions `first ..
/// first + held` (`held ≤ N`) as `keys[j]`, their bins `bins[j]` (`NONE` past the list and
/// from `held` on) and weights `weight(j)`;
/// `mass_before_p()` is the mass of the bins before `bin_p_lo` (read only with top-p on).
/// A kept mass of 0 means that no key reached `p·Z1`, which the bins rule out (a kept set
/// weighs more: it holds the row's largest key). Not an `Option`: with one, `exact_tail`
/// spilled 72 bytes more. The split pass's finish (2 or 8 keys a thread) and verification's
/// binned selection (4) both decide with it.
///
/// # Safety
/// The whole block calls it; the broadcast slots `X_KEY` .. `X_MASS` and the reduction slots
/// are free.
#[inline(always)]
pub(crate) unsafe fn decide_gathered<const N: usize, W: Fn(usize) -> u128, P: Fn() -> u128>(
    keys: &[u64; N],
    bins: &[u32; N],
    first: u32,
    held: u32,
    cut: Cut,
    top_p: f32,
    weight: W,
    mass_before_p: P,
) -> (u64, u128) {
    // SAFETY (whole block): uniform branches; the block reductions and broadcasts are called by
    // every thread.
    unsafe {
        // Top-k: the k1-th key of the row is in bin_k, after the gathered keys of earlier bins.
        let (floor1, z1) = if cut.bin_k != NONE {
            let mut earlier = 0u32;
            each_n::<N, _>(|j| earlier += (bins[j] < cut.bin_k) as u32);
            let at = block_sum_u32(earlier) + (cut.k1 - cut.count_before_k) - 1;
            let mut mine = None;
            each_n::<N, _>(|j| {
                if (j as u32) < held && first + j as u32 == at {
                    mine = Some((keys[j], 0));
                }
            });
            let (floor1, _) = broadcast_key_mass(mine);
            let mut part = 0u128;
            each_n::<N, _>(|j| {
                if bins[j] == cut.bin_k && keys[j] >= floor1 {
                    part += weight(j);
                }
            });
            (floor1, cut.mass_before_k + block_sum_u128(part))
        } else {
            (cut.floor, cut.z_m)
        };
        if top_p_disabled(top_p) {
            return (floor1, z1);
        }

        // Top-p: the first kept-so-far key whose running mass reaches p·Z1.
        let p24 = top_p_units(top_p);
        let eligible = |j: usize| bins[j] != NONE && bins[j] >= cut.bin_p_lo && keys[j] >= floor1;
        let mut run = 0u128;
        each_n::<N, _>(|j| {
            if eligible(j) {
                run += weight(j);
            }
        });
        let (before, _) = block_exclusive_scan_u128(run);
        let mut cum = mass_before_p() + before;
        let (mut hit, mut hit_mass) = (NONE, 0u128);
        each_n::<N, _>(|j| {
            let w = if eligible(j) { weight(j) } else { 0 };
            cum += w;
            if w > 0 && hit == NONE && top_p_reached(cum, z1, p24) {
                hit = first + j as u32;
                hit_mass = cum;
            }
        });
        let winner = block_min_u32(hit);
        let mut mine = None;
        each_n::<N, _>(|j| {
            if (j as u32) < held && first + j as u32 == winner {
                mine = Some((keys[j], hit_mass));
            }
        });
        broadcast_key_mass(mine)
    }
}

/// `finish_split`'s decision on the row's `n` gathered keys, sorted at `F_KEYS`, with `N`
/// positions a thread (`N ≥ run_per_thread(n)`): the kept floor and kept mass, and when the
/// mass is not 0 the kept gathered keys' mass added per tile to `F_TILE_LO` / `F_TILE_HI`.
///
/// # Safety
/// As for `finish_split`, after the sort; `F_TILE_LO` / `F_TILE_HI` hold the tiles' sure masses
/// (stored before a barrier).
#[inline(always)]
unsafe fn decide_sorted<const N: usize>(r: &SplitRow, n: u32) -> (u64, u128) {
    let tid = thread_idx_x();
    let job = r.job;
    let s = &r.settings;
    // SAFETY (whole block, uniform branches): the sorted keys below `n` and the tile slots
    // below `tiles`; shared slots from the layout.
    unsafe {
        // Each thread holds as few keys as the list allows (one for up to 512): the weights
        // below are recomputed per key, and a thread's keys are a serial chain of calls that
        // the rest of the block waited for at the next barrier (8 a thread before session 23).
        let held = run_per_thread(n);
        let first = tid * held;
        // The first key's weight is kept (every key's, up to 512 keys: each is read three times
        // below); the others' are recomputed where needed: eight u128 per thread would not fit
        // the registers.
        let mut keys = [0u64; N];
        let mut bins = [NONE; N];
        let mut first_weight = 0u128;
        each_n::<N, _>(|j| {
            if (j as u32) < held && first + (j as u32) < n {
                keys[j] = ld_shared_u64(smem(F_KEYS + (first + j as u32) * 8));
                let c = classify_once(keys[j], r.floor, r.mc);
                bins[j] = c.bin;
                if j == 0 {
                    first_weight = c.weight;
                }
            }
        });
        let weight = |j: usize| if j == 0 { first_weight } else { classify_once(keys[j], r.floor, r.mc).weight };
        let cut = Cut {
            floor: r.floor,
            z_m: join(job.z_m),
            bin_k: job.bin_k,
            k1: job.k1,
            count_before_k: job.count_before_k,
            mass_before_k: join(job.mass_before_k),
            bin_p_lo: job.bin_p_lo,
        };
        let (kept_floor, z_kept) = decide_gathered(&keys, &bins, first, held, cut, s.top_p, weight, || join(job.mass_before_p));
        if z_kept == 0 {
            return (kept_floor, 0);
        }

        // Kept mass per tile: the sure bins' (the caller stored them before its first barrier)
        // plus the kept gathered keys.
        each_n::<N, _>(|j| {
            let w = if bins[j] != NONE && bins[j] >= job.sure_end && keys[j] >= kept_floor { weight(j) } else { 0 };
            if w > 0 {
                let t = key_index(keys[j]) / TILE_TOKENS;
                atom_add_shared_u128(smem(F_TILE_LO + t * 8), smem(F_TILE_HI + t * 8), w);
            }
        });
        sync_threads();
        (kept_floor, z_kept)
    }
}

/// # Safety
/// The whole block calls it for a split row whose gather is done.
#[inline(always)]
unsafe fn finish_split(p: &StepParams, pos: u32, row: u32) {
    // SAFETY: a split row's position, its job written by the kernels before.
    let r = unsafe { split_row(p, pos, row) };
    let tid = thread_idx_x();
    // SAFETY (whole block, uniform branches): the row's gathered keys (< GATHER) and tile masses
    // (< tiles); shared slots from the layout.
    unsafe {
        let job = r.job;
        let s = &r.settings;
        let sum = Summary {
            max_key: job.max_key,
            valid: 0,
            infinite: 0,
            mc: r.mc,
            z: join(job.z),
            mass_ok: job.mass_ok != 0,
            duplicate_bias: false,
        };

        // The gathered keys, sorted (largest first). The tile's sure mass (into `F_TILE`, where
        // the decision adds the kept gathered keys) and the draw's seed and step are read with
        // them: after the decision they were two more round trips in the row's chain.
        let n = if job.gathered < GATHER { job.gathered } else { GATHER };
        let padded = pow2_at_least(n);
        let src = gathered_keys(p, pos);
        let sure = if tid < p.tiles {
            let m = tile_masses(p, pos).add(tid as usize * 2);
            (m.read_volatile(), m.add(1).read_volatile())
        } else {
            (0, 0)
        };
        // Thread 0's alone, through shared memory: held in every thread's registers across the
        // sort, they made the two-per-SM build spill 72 B more.
        let draw_in = if tid == 0 { draw_inputs(p, s.slot) } else { (0, 0) };
        let mut i = tid;
        while i < padded {
            st_shared_u64(smem(F_KEYS + i * 8), if i < n { src.add(i as usize).read_volatile() } else { 0 });
            i += THREADS;
        }
        if tid < p.tiles {
            st_shared_u64(smem(F_TILE_LO + tid * 8), sure.0);
            st_shared_u64(smem(F_TILE_HI + tid * 8), sure.1);
        }
        if tid == 0 {
            st_shared_u64(smem(F_DRAW), draw_in.0);
            st_shared_u64(smem(F_DRAW + 8), draw_in.1);
        }
        sync_threads();
        block_sort_desc_at(F_KEYS, padded);
        // Up to 1024 keys (a flat row's 640 at V = 128256) are two a thread at most: arrays of
        // two through the decision and the tile masses. With eight, the two-per-SM build
        // stored and reloaded all eight around each loop over them (session 53).
        let (kept_floor, z_kept) = if n <= 2 * THREADS { decide_sorted::<2>(&r, n) } else { decide_sorted::<8>(&r, n) };
        if z_kept == 0 {
            // The bins guarantee a hit; a status beats a wrong token if that ever fails.
            finish(p, row, s.slot, NO_TOKEN, STATUS_NO_VALID_TOKEN, f32::NAN);
            return;
        }
        let u = draw_target(z_kept, draw_of((ld_shared_u64(smem(F_DRAW)), ld_shared_u64(smem(F_DRAW + 8)))));
        let kept = if tid < p.tiles { (ld_shared_u64(smem(F_TILE_HI + tid * 8)) as u128) << 64 | ld_shared_u64(smem(F_TILE_LO + tid * 8)) as u128 } else { 0 };
        // The scan's barriers put this before the finding thread's writes.
        if tid == 0 {
            st_shared_u32(smem(X_TILE), NONE);
        }
        let (before, _) = block_exclusive_scan_u128(kept);
        // At most one thread finds the tile; it writes the tile and the rest of the draw, and
        // one barrier hands both to the block. Nothing writes those slots again before the
        // barrier that ends the row (`exact_finish_body`, `exact_tail`).
        if tid < p.tiles && kept > 0 && before <= u && u < before + kept {
            st_shared_u32(smem(X_TILE), tid);
            let rest = u - before;
            st_shared_u64(smem(X_MASS), rest as u64);
            st_shared_u64(smem(X_MASS + 8), (rest >> 64) as u64);
        }
        sync_threads();
        let tile = ld_shared_u32(smem(X_TILE));
        let rest = ld_shared_u128(smem(X_MASS));
        if tile == NONE {
            finish(p, row, s.slot, NO_TOKEN, STATUS_NO_VALID_TOKEN, f32::NAN);
            return;
        }
        let key = walk_tile(p, &r.row, &sum, tile, rest, kept_floor);
        let lp = if s.flags & ROW_WANT_LOGPROB != 0 { sum.logprob_of(key, ln_mass(sum.z)) } else { f32::NAN };
        finish_chosen(p, row, s.slot, key, lp);
    }
}
