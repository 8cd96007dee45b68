//! The sampler step on the GPU (device only): stage 2, and the helpers every stage shares.
//!
//! 1. Stage 1 (`tiles.rs`), one warp per (row, vocab tile): reads the tile once, applies the
//!    whole prologue and leaves a `TileRecord`: the tile's 32 largest packed keys, its valid and
//!    +inf counts, and — for rows that need mass — the exact fixed-point mass per band.
//! 2. `sample_rows`, one block per row: greedy rows take the largest key (in a greedy step,
//!    `finish_greedy_row` does it for the stage-1 warp that sees the row's records complete,
//!    with the same outputs). Random rows merge the tile lists, sort them, and decide min-p,
//!    top-k and top-p exactly on the merged prefix that is provably complete; rows without
//!    truncation sample by walking the tile masses and re-reading one tile. A row whose
//!    decision needs tokens outside the lists goes on the exact-pass list, or, in a quiet step
//!    (`sample_rows_quiet`, no exact pass launched), is finished by the same block with
//!    `exact_single`.
//! 3. The exact pass (`exact.rs`): the split pass over many blocks for most listed rows, and
//!    `exact_single` here — every pass over the row in one block — for the rest.
//!
//! Every decision goes through the shared functions of `keys`, `fixed`, `decide` and `philox`,
//! on integers or on f32 values computed exactly as the CPU reference computes them.
//! No kernel allocates, and no kernel waits on the host.

use crate::abi::*;
use crate::block::*;
use crate::decide::{
    draw_target, lists_skippable, min_p_floor, min_p_threshold, settings_valid, stage2_always_decides, top_p_disabled, top_p_reached, top_p_units,
    top_p_within,
};
use crate::fixed::{band_scale, bands_usable, row_band_of, soft_ceil, weight};
use crate::intrinsics::*;
use crate::keys::{key_index, key_value, sort_key};
use crate::logit::{process_untempered_with, temper_by, temper_scale, widen_bf16, widen_f16, LogitParams};
use crate::logprob::{infinite_row_logprob, ln_mass, token_logprob};
use crate::philox::{random_u64, STREAM_TOKEN};
use crate::status::{NO_TOKEN, STATUS_INVALID_SETTINGS, STATUS_NO_VALID_TOKEN, STATUS_OK};

const CANDIDATES: u32 = TILE_CANDIDATES as u32;
/// Band index of tokens that add no mass (in no band), for warp aggregation.
const NO_BAND: u32 = u32::MAX;
const RECORD_BYTES: u64 = core::mem::size_of::<TileRecord>() as u64;
/// Byte offset of a record's four `u32` after its keys and bands (`band_ceiling`, `valid`,
/// `infinite`, `flags`): stage 1 writes them, stage 2 and the greedy finish read them.
pub(crate) const RECORD_TAIL: u64 = core::mem::offset_of!(TileRecord, band_ceiling) as u64;

// Broadcast slots inside SM_RESULT.
const RES_SELECT: u32 = SM_RESULT;
const RES_COUNTER: u32 = SM_RESULT + 64;
const RES_U128: u32 = SM_RESULT + 96;
const RES_TOKEN: u32 = SM_RESULT + 128;

// ---------------------------------------------------------------------------------------------
// Rows: settings, validity, addresses.

#[derive(Clone, Copy)]
pub(crate) struct Row {
    pub(crate) index: u32,
    pub(crate) settings: RowSettings,
    pub(crate) params: LogitParams,
    /// Byte address of the row's first logit.
    pub(crate) logits: u64,
    /// The row start is 16-byte aligned, so whole tiles load with 16-byte vectors.
    pub(crate) vector_ok: bool,
    /// Byte address of the slot's penalty counts, 0 when the row has no penalty.
    pub(crate) counts: u64,
    /// Byte address of the row's bitmask words, 0 when the row has no mask.
    pub(crate) bitmask: u64,
}

#[inline(always)]
pub(crate) unsafe fn active_rows(p: &StepParams) -> u32 {
    // SAFETY: `active_rows` points to one u32 the host wrote before the launch.
    let active = unsafe { (p.active_rows as *const u32).read() };
    if active < p.rows {
        active
    } else {
        p.rows
    }
}

/// A row's settings, as three 16-byte loads issued together (field by field, LLVM interleaves
/// the loads with the validity checks and pays a round trip per check).
///
/// # Safety
/// `row < rows`, and `settings` holds `rows` entries 16-byte aligned (the upload buffer is).
#[inline(always)]
pub(crate) unsafe fn read_settings(p: &StepParams, row: u32) -> RowSettings {
    const _: () = assert!(core::mem::size_of::<RowSettings>() == 48);
    let at = (p.settings + row as u64 * 48) as *const u32;
    // SAFETY: 48 readable bytes at a 16-byte aligned address (caller), not written during a step.
    let (a, b, c) = unsafe { (ld_global_nc_v4_u32(at), ld_global_nc_v4_u32(at.add(4)), ld_global_nc_v4_u32(at.add(8))) };
    RowSettings {
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
    }
}

#[inline(always)]
pub(crate) fn top_n(s: &RowSettings) -> u32 {
    crate::decide::top_logprobs(s.flags)
}

/// Whether stage 2 reads the row's candidate lists. It does not for a greedy row, nor for a
/// random row with no top-k, top-p or min-p, when neither wants top log-probabilities: those
/// take the tile maxima and the band masses alone. Stage 1 then keeps only each tile's largest
/// key (`candidates[0]`); both stages decide it with this one function.
#[inline(always)]
pub(crate) fn needs_candidates(s: &RowSettings) -> bool {
    let truncated = s.top_k != 0 || !top_p_disabled(s.top_p) || s.min_p > 0.0 || s.min_p.is_nan();
    top_n(s) > 0 || (s.temperature != 0.0 && truncated)
}

/// Whether stage 1 keeps only each tile's largest key for a row whose settings call for lists
/// (`needs_candidates`): its request's last step was wide (`SLOT_WIDE`) and its settings allow
/// it (`decide::lists_skippable`). Stage 2 asks the same before it rewrites the flag, so both
/// stages of a step get the same answer (a request has one row a step; rows that share a slot,
/// possible only in settings written straight to device memory, race on its counts already).
///
/// # Safety
/// `s.slot < p.slots` (`row_addressable`); in stage 2, before the row's `set_slot_flags`.
#[inline(always)]
pub(crate) unsafe fn lists_skipped(p: &StepParams, s: &RowSettings) -> bool {
    // SAFETY: slot < slots entries of the flags; a plain load, as stage 2 writes them.
    p.slot_flags != 0 && lists_skippable(s) && unsafe { (p.slot_flags as *const u32).add(s.slot as usize).read() } & SLOT_WIDE != 0
}

/// The fields that guard memory accesses are in range (stage 1 reads nothing otherwise).
#[inline(always)]
pub(crate) fn row_addressable(p: &StepParams, s: &RowSettings) -> bool {
    s.slot < p.slots
        && s.bias_offset <= p.bias_capacity
        && s.bias_len <= p.bias_capacity - s.bias_offset
        && (s.flags & ROW_HAS_BITMASK == 0 || p.bitmask != 0)
}

/// Validity of everything but the bias ids.
#[inline(always)]
fn settings_in_range(p: &StepParams, s: &RowSettings) -> bool {
    row_addressable(p, s)
        && settings_valid(
            s.temperature,
            s.top_p,
            s.min_p,
            s.repetition_penalty,
            s.frequency_penalty,
            s.presence_penalty,
        )
        && top_n(s) <= MAX_TOP_LOGPROBS
}

/// How many of the row's bias ids from `first` in steps of `step` are outside the vocab.
///
/// # Safety
/// `row_addressable(p, s)` holds.
#[inline(always)]
unsafe fn bad_bias_ids(p: &StepParams, s: &RowSettings, first: u32, step: u32) -> u32 {
    let mut bad = 0u32;
    let mut i = first;
    while i < s.bias_len {
        // SAFETY: bias_offset + i < bias_offset + bias_len ≤ bias_capacity (row_addressable).
        let token = unsafe { (p.bias_tokens as *const u32).add((s.bias_offset + i) as usize).read() };
        bad += (token >= p.vocab) as u32;
        i += step;
    }
    bad
}

/// Whole-row validity, bias ids included. Called by the whole block.
#[inline(always)]
unsafe fn row_valid(p: &StepParams, s: &RowSettings) -> bool {
    let basic = settings_in_range(p, s);
    // SAFETY: row_addressable holds when basic does.
    let bad = if basic { unsafe { bad_bias_ids(p, s, thread_idx_x(), SAMPLER_THREADS) } } else { 0 };
    // SAFETY: the whole block calls this function together.
    basic && unsafe { block_sum_u32(bad) } == 0
}

/// Byte address of a row's first logit, and whether whole tiles of it load as 16-byte vectors.
/// Depends on no setting, so stage 1 can start the loads before it reads any.
#[inline(always)]
pub(crate) fn row_logits(p: &StepParams, index: u32) -> (u64, bool) {
    let element: u64 = if p.dtype == DTYPE_F32 { 4 } else { 2 };
    let logits = p.logits + index as u64 * p.row_stride * element;
    (logits, logits % 16 == 0)
}

#[inline(always)]
pub(crate) fn row_setup(p: &StepParams, index: u32, settings: RowSettings) -> Row {
    let penalties = settings.repetition_penalty != 1.0
        || settings.frequency_penalty != 0.0
        || settings.presence_penalty != 0.0;
    let (logits, vector_ok) = row_logits(p, index);
    Row {
        index,
        settings,
        params: LogitParams {
            repetition: settings.repetition_penalty,
            frequency: settings.frequency_penalty,
            presence: settings.presence_penalty,
            temperature: settings.temperature,
        },
        logits,
        vector_ok,
        counts: if penalties { p.counts + settings.slot as u64 * p.counts_stride as u64 * 4 } else { 0 },
        bitmask: if settings.flags & ROW_HAS_BITMASK != 0 {
            p.bitmask + index as u64 * p.bitmask_words as u64 * 4
        } else {
            0
        },
    }
}

// ---------------------------------------------------------------------------------------------
// The prologue over one tile.

#[inline(always)]
fn widen_pair(word: u32, dtype: u32) -> (f32, f32) {
    if dtype == DTYPE_BF16 {
        (widen_bf16(word as u16), widen_bf16((word >> 16) as u16))
    } else {
        (widen_f16(word as u16), widen_f16((word >> 16) as u16))
    }
}

/// Raw logits of this thread's 8 tokens starting at `base`; tokens past the vocab read as NaN
/// (which the prologue turns into -inf).
#[inline(always)]
pub(crate) unsafe fn load_raw8(p: &StepParams, logits: u64, vector_ok: bool, base: u32) -> [f32; 8] {
    let mut raw = [f32::NAN; 8];
    if base >= p.vocab {
        return raw;
    }
    if vector_ok && base + 8 <= p.vocab {
        if p.dtype == DTYPE_F32 {
            let ptr = (logits + base as u64 * 4) as *const u32;
            // SAFETY: 8 tokens inside the row; 16-byte aligned (row start aligned, base % 8 == 0).
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

/// Raw logit of token `t` of the row of `dtype` elements at `logits`, widened from bf16 or f16.
///
/// # Safety
/// `t` lies inside the row.
#[inline(always)]
pub(crate) unsafe fn load_raw1(dtype: u32, logits: u64, t: u32) -> f32 {
    // SAFETY: token t lies inside the row.
    unsafe {
        if dtype == DTYPE_F32 {
            ((logits + t as u64 * 4) as *const f32).read()
        } else {
            let bits = ((logits + t as u64 * 2) as *const u16).read();
            if dtype == DTYPE_BF16 {
                widen_bf16(bits)
            } else {
                widen_f16(bits)
            }
        }
    }
}

/// Processed values of this thread's 8 tokens of tile `tile`: the prologue of SEMANTICS.md.
///
/// # Safety
/// The whole block calls it together with the same `tile` (the bias table needs barriers).
#[inline(always)]
pub(crate) unsafe fn process8(p: &StepParams, r: &Row, tile: u32) -> [f32; 8] {
    let base = tile * TILE_TOKENS + thread_idx_x() * TOKENS_PER_THREAD;
    // SAFETY: the row exists (row < rows) and base..base+8 is clipped to the vocab.
    let raw = unsafe { load_raw8(p, r.logits, r.vector_ok, base) };
    // SAFETY: forwarded (whole block, same tile).
    unsafe { process_raw8(p, r, tile, raw) }
}

/// [`process8`] on raw logits the caller already loaded.
///
/// # Safety
/// As for [`process8`]; `raw` holds this thread's 8 tokens of `tile`.
#[inline(always)]
pub(crate) unsafe fn process_raw8(p: &StepParams, r: &Row, tile: u32, raw: [f32; 8]) -> [f32; 8] {
    let tid = thread_idx_x();
    let tile_start = tile * TILE_TOKENS;
    let base = tile_start + tid * TOKENS_PER_THREAD;
    let has_bias = r.settings.bias_len > 0;
    // SAFETY (whole block): the bias table lives at SM_BIAS, TILE_TOKENS f32; the barrier before
    // clearing keeps earlier readers safe, the one after scattering publishes it.
    unsafe {
        if has_bias {
            sync_threads();
            each8(|j| {
                st_shared_u32(smem(SM_BIAS + (tid * TOKENS_PER_THREAD + j as u32) * 4), 0);
            });
            sync_threads();
            let mut i = tid;
            while i < r.settings.bias_len {
                let entry = (r.settings.bias_offset + i) as usize;
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
    let bias = |j: usize| {
        // SAFETY: this thread's own slot of the bias table.
        f32::from_bits(unsafe { ld_shared_u32(smem(SM_BIAS + (tid * TOKENS_PER_THREAD + j as u32) * 4)) })
    };
    // SAFETY: base..base+8 are this thread's tokens of a row of `p`.
    unsafe { prologue8(p, r, base, raw, has_bias, bias) }
}

/// The prologue and the temperature of the 8 tokens from `base` (`base % 8 == 0`), loaded as
/// `raw` (NaN past the vocab). `bias(j)` is token `base + j`'s bias, asked only with
/// `has_bias`. Thread-local: [`process_raw8`] builds the bias table with the block first, and
/// rows without bias take it directly (the split pass's warp items).
///
/// # Safety
/// `r` is a row of `p`; `base` is below the vocab or the tokens are past it (then nothing is
/// read for them).
#[inline(always)]
pub(crate) unsafe fn prologue8<B: Fn(usize) -> f32>(p: &StepParams, r: &Row, base: u32, raw: [f32; 8], has_bias: bool, bias: B) -> [f32; 8] {
    // A row with no bias, bitmask or penalty: two or three instructions a token, not the whole
    // prologue (the exact pass and the walks read every token of a row through here).
    // `temper_by` at the row's scale is `temper` on the prologue's values (`logit`'s tests).
    let scale = temper_scale(r.params.temperature);
    if !has_bias && r.bitmask == 0 && r.counts == 0 {
        return plain8(&raw, scale);
    }
    let inverse_repetition = 1.0 / r.params.repetition;
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
    }
    // No test against the vocab here: a token past it reads as NaN, which the prologue turns
    // into -inf, so the eight tokens' prologues are one straight run.
    let mask_bits = mask_word >> (base & 31);
    let mut x = [f32::NEG_INFINITY; 8];
    each8(|j| {
        let allowed = (mask_bits >> j) & 1 == 1;
        let bias = if has_bias { bias(j) } else { 0.0 };
        let c = counts[j];
        let y = process_untempered_with(raw[j], allowed, c != 0, c & 0x7fff_ffff, bias, &r.params, || inverse_repetition);
        x[j] = temper_by(y, scale);
    });
    x
}

/// What [`prologue1`] needs of one token: its raw logit, whether the row's bitmask allows it,
/// and its penalty count word.
#[derive(Clone, Copy)]
pub(crate) struct Prologue1Inputs {
    raw: f32,
    allowed: bool,
    count: u32,
}

impl Prologue1Inputs {
    /// Inputs of no token, for lanes with none to process.
    pub(crate) const NONE: Self = Self { raw: f32::NAN, allowed: true, count: 0 };
}

/// Token `token`'s inputs of the prologue, its reads issued together: the logit, the bitmask
/// word (rows with a bitmask) and the count (rows with penalties).
///
/// # Safety
/// `r` is a row of `p` and `token < vocab`.
#[inline(always)]
pub(crate) unsafe fn prologue1_inputs(p: &StepParams, r: &Row, token: u32) -> Prologue1Inputs {
    // SAFETY: token < vocab lies inside the row, its mask word inside the row's bitmask words,
    // its count inside the slot's counts row (counts_stride ≥ vocab).
    unsafe {
        let raw = load_raw1(p.dtype, r.logits, token);
        let word = if r.bitmask != 0 { ((r.bitmask + (token / 32) as u64 * 4) as *const u32).read() } else { u32::MAX };
        let count = if r.counts != 0 { ((r.counts + token as u64 * 4) as *const u32).read() } else { 0 };
        Prologue1Inputs { raw, allowed: (word >> (token & 31)) & 1 == 1, count }
    }
}

/// [`prologue8`]'s value for one token of a row without logit bias, from its
/// [`prologue1_inputs`]: the same functions on the same inputs, so the same bits.
#[inline(always)]
pub(crate) fn prologue1(r: &Row, input: Prologue1Inputs) -> f32 {
    let scale = temper_scale(r.params.temperature);
    if r.bitmask == 0 && r.counts == 0 {
        return temper_by(input.raw, scale);
    }
    let inverse_repetition = 1.0 / r.params.repetition;
    let c = input.count;
    let y = process_untempered_with(input.raw, input.allowed, c != 0, c & 0x7fff_ffff, 0.0, &r.params, || inverse_repetition);
    temper_by(y, scale)
}

/// [`process8`] for a row with no bias, bitmask or penalty: NaN (and so every token past the
/// vocab, which [`load_raw8`] reads as NaN) becomes -inf, then the temperature by the row's
/// `temper_scale`, which equals `temper` on these values (`logit::temper_by` does the plain
/// prologue's work itself: `logit`'s tests). Verification's first pass takes it too.
#[inline(always)]
pub(crate) fn plain8(raw: &[f32; 8], scale: f32) -> [f32; 8] {
    let mut x = [f32::NEG_INFINITY; 8];
    each8(|j| x[j] = temper_by(raw[j], scale));
    x
}

#[inline(always)]
pub(crate) fn keys8(x: &[f32; 8], base: u32) -> [u64; 8] {
    let mut k = [0u64; 8];
    each8(|j| {
        if x[j] > f32::NEG_INFINITY {
            k[j] = sort_key(x[j], base + j as u32);
        }
    });
    k
}

#[inline(always)]
pub(crate) fn record_ptr(p: &StepParams, row: u32, tile: u32) -> u64 {
    p.records + (row as u64 * p.tiles as u64 + tile as u64) * RECORD_BYTES
}

// ---------------------------------------------------------------------------------------------
// Row summaries, shared by stages 2 and 3.

#[derive(Clone, Copy)]
struct TileView {
    rec: u64,
}

impl TileView {
    #[inline(always)]
    unsafe fn candidate(&self, i: u32) -> u64 {
        // SAFETY: i < TILE_CANDIDATES (callers), inside this record.
        unsafe { (self.rec as *const u64).add(i as usize).read() }
    }
    #[inline(always)]
    unsafe fn tail(&self, i: usize) -> u32 {
        // SAFETY: the four u32 after candidates and bands.
        unsafe { ((self.rec + RECORD_TAIL) as *const u32).add(i).read() }
    }
    #[inline(always)]
    unsafe fn ceiling(&self) -> f32 {
        // SAFETY: forwarded.
        f32::from_bits(unsafe { self.tail(0) })
    }
    #[inline(always)]
    unsafe fn valid(&self) -> u32 {
        // SAFETY: forwarded.
        unsafe { self.tail(1) }
    }
    #[inline(always)]
    unsafe fn infinite(&self) -> u32 {
        // SAFETY: forwarded.
        unsafe { self.tail(2) }
    }
    #[inline(always)]
    unsafe fn has_mass(&self) -> bool {
        // SAFETY: forwarded.
        (unsafe { self.tail(3) }) & TILE_HAS_MASS != 0
    }
    /// `candidates[0]` and `flags`, by volatile loads: for a reader in the kernel that wrote
    /// them, whose L1 may hold an older line.
    #[inline(always)]
    unsafe fn fresh_head(&self) -> (u64, u32) {
        // SAFETY: forwarded; the first u64 and the last u32 of this record.
        unsafe {
            let tail = (self.rec + RECORD_TAIL) as *const u32;
            ((self.rec as *const u64).read_volatile(), tail.add(3).read_volatile())
        }
    }
    #[inline(always)]
    unsafe fn duplicate_bias(&self) -> bool {
        // SAFETY: forwarded.
        (unsafe { self.tail(3) }) & TILE_DUPLICATE_BIAS != 0
    }
    /// Band `d`'s fraction sum as stage 1 wrote it (meaningful when the tile has valid tokens).
    #[inline(always)]
    unsafe fn band_sum(&self, d: u32) -> u64 {
        // SAFETY: forwarded; d < MASS_BANDS, inside this record.
        unsafe { ((self.rec + 8 * TILE_CANDIDATES as u64) as *const u64).add(d as usize).read() }
    }
    /// Band `d`'s exact share of the row mass: band_mass[d] · E[mc − (ceiling − d)].
    #[inline(always)]
    unsafe fn band(&self, d: u32, mc: f32) -> u128 {
        // SAFETY: forwarded; d < MASS_BANDS.
        unsafe {
            if self.valid() == 0 {
                return 0;
            }
            let s = self.band_sum(d);
            if s == 0 {
                0
            } else {
                band_share(s, self.ceiling(), d, mc)
            }
        }
    }
}

#[inline(always)]
fn tile_view(p: &StepParams, row: u32, tile: u32) -> TileView {
    TileView { rec: record_ptr(p, row, tile) }
}

/// The mass stage 1 recorded in `tile`'s band `d` if that band is one of the row bands
/// (`mc − ceil(x)`) below `end`, else 0: exact, as [`Summary`]'s row mass adds it. Needs the
/// row's band masses (`Summary::mass_ok`).
///
/// # Safety
/// `row < rows`, `tile < tiles`, and stage 1 of this step wrote the record.
#[inline(always)]
pub(crate) unsafe fn recorded_band_mass(p: &StepParams, row: u32, tile: u32, d: u32, mc: f32, end: f32) -> u128 {
    // SAFETY: forwarded.
    recorded_band_share(unsafe { recorded_band_words(p, row, tile, d) }, d, mc, end)
}

/// The words [`recorded_band_mass`] reads from `tile`'s record: band `d`'s fraction sum (band
/// 0's for `d` past the bands), the valid count and the ceiling. Requested together, the sum
/// even when it is not used: tested first, the count and ceiling held the sum's load back a
/// round trip to L2.
///
/// # Safety
/// As for [`recorded_band_mass`].
#[inline(always)]
pub(crate) unsafe fn recorded_band_words(p: &StepParams, row: u32, tile: u32, d: u32) -> (u64, u32, f32) {
    let v = tile_view(p, row, tile);
    // SAFETY: forwarded; the sum read is of a band below MASS_BANDS.
    unsafe { (v.band_sum(if d < MASS_BANDS as u32 { d } else { 0 }), v.valid(), v.ceiling()) }
}

/// [`recorded_band_mass`] of the words [`recorded_band_words`] read.
#[inline(always)]
pub(crate) fn recorded_band_share((sum, valid, ceiling): (u64, u32, f32), d: u32, mc: f32, end: f32) -> u128 {
    if d >= MASS_BANDS as u32 || valid == 0 || sum == 0 || mc - (ceiling - d as f32) >= end {
        return 0;
    }
    band_share(sum, ceiling, d, mc)
}

/// The row-mass share of a tile band of fraction sum `sum` ([`TileView::band`]): `sum` times
/// the band scale of the tile's band `d` under its `ceiling`, in a row of ceiling `mc`.
#[inline(always)]
fn band_share(sum: u64, ceiling: f32, d: u32, mc: f32) -> u128 {
    sum as u128 * band_scale(ceiling - d as f32, mc) as u128
}

#[derive(Clone, Copy)]
pub(crate) struct Summary {
    pub(crate) max_key: u64,
    pub(crate) valid: u32,
    pub(crate) infinite: u32,
    /// soft_ceil of the row max (finite rows).
    pub(crate) mc: f32,
    /// Exact row mass (finite rows: Σ W; infinite rows: the +inf count), when `mass_ok`.
    pub(crate) z: u128,
    pub(crate) mass_ok: bool,
    /// Stage 1 met a token with two bias entries (possible only in settings written straight
    /// to device memory; the host refuses them): the row is refused, not raced over.
    pub(crate) duplicate_bias: bool,
}

impl Summary {
    #[inline(always)]
    pub(crate) fn infinite_row(&self) -> bool {
        self.infinite > 0
    }
    #[inline(always)]
    pub(crate) fn weight_of(&self, key: u64) -> u128 {
        key_weight_inline(key, self.mc, self.infinite)
    }
    /// [`Self::weight_of`] through one out-of-line copy, for stage 2's once-a-row loops: inlined,
    /// each of their positions was about 80 instructions fetched cold (a lone row's block is
    /// bound by instruction fetches). Per-token passes over a whole row keep `weight_of`.
    #[inline(always)]
    pub(crate) fn weight_of_once(&self, key: u64) -> u128 {
        key_weight(key, self.mc, self.infinite)
    }
    #[inline(always)]
    pub(crate) fn logprob_of(&self, key: u64, ln_z: f64) -> f32 {
        if key == 0 {
            f32::NEG_INFINITY
        } else if self.infinite_row() {
            infinite_row_logprob(key_value(key), self.infinite)
        } else {
            token_logprob(key_value(key), self.mc, ln_z)
        }
    }
}

/// [`Summary::weight_of`] of a row with `mc` and `infinite`, not inlined: one copy for stage
/// 2's and verification's once-a-row loops ([`Summary::weight_of_once`]). The C ABI keeps the
/// `u128` result in `.param` space.
#[inline(never)]
pub(crate) extern "C" fn key_weight(key: u64, mc: f32, infinite: u32) -> u128 {
    key_weight_inline(key, mc, infinite)
}

/// `W` of a key in a row with `mc` and `infinite` (+inf count): unit weights for the +inf
/// tokens of an infinite row, 0 for key 0. Stage 2's and verification's `Summary::weight_of`.
#[inline(always)]
pub(crate) fn key_weight_inline(key: u64, mc: f32, infinite: u32) -> u128 {
    let x = key_value(key);
    if key == 0 {
        0
    } else if infinite > 0 {
        (x == f32::INFINITY) as u128
    } else {
        weight(x, mc)
    }
}

/// The row's maximum key, valid, `+inf` and missing-mass counts, and whether a tile met a
/// duplicate bias entry, from its tile records' heads: a thread a tile, two block reductions
/// (four barriers).
///
/// # Safety
/// The whole block calls it together; stage 1 has written the row's records.
#[inline(always)]
unsafe fn fold_heads_by_block(p: &StepParams, row: u32) -> (u64, u32, u32, u32, bool) {
    let (mut max_key, mut valid, mut infinite, mut missing, mut duplicate) = (0u64, 0u32, 0u32, 0u32, 0u32);
    let mut t = thread_idx_x();
    // SAFETY (whole block): tiles < tiles of this row's records.
    unsafe {
        while t < p.tiles {
            let v = tile_view(p, row, t);
            let k = v.candidate(0);
            max_key = if k > max_key { k } else { max_key };
            valid += v.valid();
            infinite += v.infinite();
            missing += (v.valid() > 0 && !v.has_mass()) as u32;
            duplicate += v.duplicate_bias() as u32;
            t += SAMPLER_THREADS;
        }
        let max_key = block_max_u64(max_key);
        // Three counts (each ≤ 2^20) in one reduction.
        let counts = block_sum_u128(
            valid as u128 | (infinite as u128) << 32 | (missing as u128) << 64 | (duplicate as u128) << 96,
        );
        (max_key, counts as u32, (counts >> 32) as u32, (counts >> 64) as u32, (counts >> 96) != 0)
    }
}

/// [`fold_heads_by_block`]'s values, folded by every warp itself, a tile a lane per turn: no
/// barrier. Only the builds of one block per SM take it: at 64 registers it spilled the
/// summary (`sample_rows_two_per_sm` 402 → 878 B). Its tile loop repeats the block's: with
/// one helper for both, ptxas spilled 16 B more in `sample_rows_quiet_two_per_sm`.
///
/// # Safety
/// All 32 lanes of the warp call it together; stage 1 has written the row's records.
#[inline(always)]
unsafe fn fold_heads_by_warp(p: &StepParams, row: u32) -> (u64, u32, u32, u32, bool) {
    let (mut max_key, mut valid, mut infinite, mut missing, mut duplicate) = (0u64, 0u32, 0u32, 0u32, 0u32);
    let mut t = lane_id();
    // SAFETY (whole warp): tiles < tiles of this row's records; the counts are each ≤ 2^20.
    unsafe {
        while t < p.tiles {
            let v = tile_view(p, row, t);
            let k = v.candidate(0);
            max_key = if k > max_key { k } else { max_key };
            valid += v.valid();
            infinite += v.infinite();
            missing += (v.valid() > 0 && !v.has_mass()) as u32;
            duplicate += v.duplicate_bias() as u32;
            t += 32;
        }
        let counts = (redux_add_sync(FULL_MASK, valid), redux_add_sync(FULL_MASK, infinite), redux_add_sync(FULL_MASK, missing));
        (warp_max_u64(max_key), counts.0, counts.1, counts.2, redux_add_sync(FULL_MASK, duplicate) != 0)
    }
}

/// Folds the row's tile records: their heads by every warp itself (`WARP_FOLD`, the builds of
/// one block per SM) or by the block, then the row mass (a block reduction).
///
/// # Safety
/// The whole block calls it together; stage 1 has written the row's records.
#[inline(always)]
unsafe fn summarize<const WARP_FOLD: bool>(p: &StepParams, row: u32) -> Summary {
    const BANDS: u32 = MASS_BANDS as u32;
    let tid = thread_idx_x();
    // SAFETY (whole block, each warp converged): tiles < tiles of this row's records.
    unsafe {
        let (max_key, valid, infinite, missing, duplicate_bias) = if WARP_FOLD { fold_heads_by_warp(p, row) } else { fold_heads_by_block(p, row) };
        let mut s = Summary { max_key, valid, infinite, mc: 0.0, z: 0, mass_ok: false, duplicate_bias };
        if max_key == 0 {
            return s;
        }
        if infinite > 0 {
            s.z = infinite as u128;
            s.mass_ok = true;
            return s;
        }
        s.mc = soft_ceil(key_value(max_key));
        if missing == 0 && bands_usable(s.mc) {
            // One (tile, band) pair per thread: the loads are independent, so they overlap.
            let mut part = 0u128;
            let mut i = tid;
            while i < p.tiles * BANDS {
                let v = tile_view(p, row, i / BANDS);
                part += v.band(i % BANDS, s.mc);
                i += SAMPLER_THREADS;
            }
            s.z = block_sum_u128(part);
            s.mass_ok = true;
        }
        s
    }
}

/// Writes a row's outputs and advances its request state (thread 0 only).
#[inline(always)]
pub(crate) unsafe fn finish(p: &StepParams, row: u32, slot: u32, token: i32, status: u32, logprob: f32) {
    if thread_idx_x() == 0 {
        // SAFETY: forwarded.
        unsafe { write_outcome(p, row, slot, token, status, logprob) };
    }
}

/// [`finish`]'s writes, by the calling thread alone.
///
/// # Safety
/// `row < rows`; `slot < slots` and `token < vocab` unless the status is
/// `STATUS_INVALID_SETTINGS`; one thread per row and step.
#[inline(always)]
unsafe fn write_outcome(p: &StepParams, row: u32, slot: u32, token: i32, status: u32, logprob: f32) {
    // SAFETY: row < rows, slot < slots (validated), token < vocab ≤ counts_stride.
    unsafe {
        (p.out_tokens as *mut i32).add(row as usize).write(token);
        (p.out_status as *mut u32).add(row as usize).write(status);
        (p.out_logprobs as *mut f32).add(row as usize).write(logprob);
        if status == STATUS_INVALID_SETTINGS {
            return; // a row the kernels refused leaves its request untouched
        }
        if token >= 0 {
            let c = (p.counts as *mut u32).add(slot as usize * p.counts_stride as usize + token as usize);
            // `logit::saturating_count_add(old, 1)` written as a skipped store: its select made
            // `sample_rows_quiet_two_per_sm` spill 60 B more (ptxas, session 39).
            let old = c.read();
            if old & 0x7fff_ffff != 0x7fff_ffff {
                c.write(old + 1);
            }
        }
        let step = (p.steps as *mut u64).add(slot as usize);
        step.write(step.read().wrapping_add(1));
    }
}

/// [`finish`] for a walk's result: the chosen key, or 0 when the walk found nothing (which the
/// integer arithmetic rules out, but a status beats a wrong token).
#[inline(always)]
pub(crate) unsafe fn finish_chosen(p: &StepParams, row: u32, slot: u32, key: u64, logprob: f32) {
    // SAFETY: forwarded.
    unsafe {
        if key != 0 {
            finish(p, row, slot, key_index(key) as i32, STATUS_OK, logprob);
        } else {
            finish(p, row, slot, NO_TOKEN, STATUS_NO_VALID_TOKEN, f32::NAN);
        }
    }
}

/// Fills a row's top-logprob outputs from `SM_SORT` positions `0..n_sorted` (thread i < 20
/// writes entry i; entries past `n` or past the list get token -1 and -inf).
#[inline(always)]
unsafe fn write_top(p: &StepParams, row: u32, n: u32, n_sorted: u32, sum: &Summary, ln_z: f64) {
    let i = thread_idx_x();
    if i >= MAX_TOP_LOGPROBS {
        return;
    }
    // SAFETY: i < 20 entries of this row; SM_SORT position i < 2048.
    unsafe {
        let (mut token, mut lp) = (NO_TOKEN, f32::NEG_INFINITY);
        if i < n && i < n_sorted {
            let key = ld_shared_u64(smem(SM_SORT + i * 8));
            if key != 0 {
                token = key_index(key) as i32;
                lp = sum.logprob_of(key, ln_z);
            }
        }
        write_top_entry(p, row, i, token, lp);
    }
}

/// Top-logprob entry `i` (< `MAX_TOP_LOGPROBS`) of `row`.
///
/// # Safety
/// `row < rows`, `i < MAX_TOP_LOGPROBS`.
#[inline(always)]
unsafe fn write_top_entry(p: &StepParams, row: u32, i: u32, token: i32, lp: f32) {
    let at = (row * MAX_TOP_LOGPROBS + i) as usize;
    // SAFETY: at < rows · MAX_TOP_LOGPROBS entries of both arrays.
    unsafe {
        (p.out_top_tokens as *mut i32).add(at).write(token);
        (p.out_top_logprobs as *mut f32).add(at).write(lp);
    }
}

/// Leaves the row to the exact pass: appends it to the list, for the split pass when that pass
/// can finish it (a finite random row whose top log-probabilities, if any, are written) and has
/// scratch left, else for the single-block pass. A split row with top-p, no min-p and no
/// effective top-k also gets its boundary band ([`boundary_band`]: the split pass's band mode).
/// The whole block calls it; thread 0 writes.
#[inline(always)]
unsafe fn flag_exact(p: &StepParams, row: u32, s: &RowSettings, sum: &Summary, top_written: bool) {
    let want_lp = s.flags & ROW_WANT_LOGPROB != 0;
    let splittable = s.temperature > 0.0
        && sum.max_key != 0
        && !sum.infinite_row()
        && bands_usable(sum.mc)
        && (top_written || top_n(s) == 0)
        && (sum.mass_ok || !want_lp);
    // Every key of the bands before the boundary's is kept: K1 is the whole row.
    let band_mode = splittable && top_p_alone(s, sum);
    let bounds = if band_mode {
        // SAFETY: the whole block is here (the test is block-uniform), with a finite row whose
        // band masses add up to `sum.z`, after `summarize`.
        unsafe { boundary_band(p, row, sum.mc, sum.z as u64, (sum.z >> 64) as u64, s.top_p) }
    } else {
        BandBoundary { mass_before: 0, band: u32::MAX }
    };
    if thread_idx_x() != 0 {
        return;
    }
    // SAFETY: the list holds EXACT_LIST_HEAD + rows u32 and stage 1 cleared its count; a row is flagged at most
    // once per step, so pos < rows (checked all the same); row < rows; pos < exact_slots jobs.
    unsafe {
        let list = p.exact_list as *mut u32;
        let pos = atom_add_global_u32(list, 1);
        if pos < p.rows {
            list.add((EXACT_LIST_HEAD + pos) as usize).write(row);
        }
        let split = splittable && pos < p.exact_slots && pos < p.rows;
        (p.exact_flags as *mut u32).add(row as usize).write(if split { EXACT_SPLIT } else { EXACT_SINGLE });
        if split && !is_warp_row!(bounds.band, s.bias_len) {
            // Not a warp row: the histogram and the gather take the step's rows a block per tile.
            red_add_global_u32(list.add(EXACT_LIST_BLOCK_ROWS as usize), 1);
        }
        if split {
            let z = if sum.mass_ok { sum.z } else { 0 };
            (p.exact_jobs as *mut ExactJob).add(pos as usize).write(ExactJob {
                max_key: sum.max_key,
                z: [z as u64, (z >> 64) as u64],
                row,
                mass_ok: sum.mass_ok as u32,
                band: bounds.band,
                mass_before_band: [bounds.mass_before as u64, (bounds.mass_before >> 64) as u64],
                ..ExactJob::default()
            });
        }
    }
}

/// Is top-p the row's only truncation, over a row mass it has (no min-p, no top-k that keeps
/// fewer than every valid token)? Then its kept set is the shortest prefix of the key order
/// whose mass reaches `p·Z`.
#[inline(always)]
fn top_p_alone(s: &RowSettings, sum: &Summary) -> bool {
    sum.mass_ok && !top_p_disabled(s.top_p) && !(s.min_p > 0.0) && (s.top_k == 0 || s.top_k >= sum.valid)
}

/// [`boundary_band`]'s result (`#[repr(C)]`: under the C ABI it comes back in `.param` space,
/// not through local memory).
#[repr(C)]
#[derive(Clone, Copy)]
struct BandBoundary {
    /// The mass of the bands before `band`.
    mass_before: u128,
    /// `u32::MAX`: no band mode.
    band: u32,
}

/// Shared slots of the row's fraction sums per row band (`u64[MASS_BANDS]`): stage 2 clears them
/// as its row starts ([`clear_row_band_sums`]) and [`boundary_band`] adds them up. Nothing in
/// stage 2 writes there in between (the bias table begins after them), so the clear needs no
/// barrier of its own.
const ROW_BAND_SUMS: u32 = SM_BAND;
const _: () = assert!(ROW_BAND_SUMS + MASS_BANDS as u32 * 8 <= SM_BIAS);

/// Zeroes `ROW_BAND_SUMS` (threads below `MASS_BANDS`), before `summarize`, whose row-mass
/// reduction's barriers order it before `boundary_band`'s adds: a row takes band mode only with
/// that mass (`top_p_alone`).
///
/// # Safety
/// The whole block calls it, past a barrier since any earlier read of `ROW_BAND_SUMS` (stage 2
/// calls it once, as its row starts).
#[inline(always)]
unsafe fn clear_row_band_sums() {
    let tid = thread_idx_x();
    if tid < MASS_BANDS as u32 {
        // SAFETY: a slot below MASS_BANDS of ROW_BAND_SUMS.
        unsafe { st_shared_u64(smem(ROW_BAND_SUMS + tid * 8), 0) };
    }
}

/// The masses of the row bands `lane` and `lane + 32` (0 past the last band): the band's
/// fraction sum at `ROW_BAND_SUMS` times its `E`, in a row of ceiling `mc`.
///
/// # Safety
/// `boundary_band` filled `ROW_BAND_SUMS` for this row, behind a barrier.
#[inline(always)]
unsafe fn lane_band_masses(mc: f32) -> (u128, u128) {
    const BANDS: u32 = MASS_BANDS as u32;
    let lane = lane_id();
    let mass = |b: u32| {
        if b < BANDS {
            // SAFETY: a slot below MASS_BANDS of ROW_BAND_SUMS.
            let sum = unsafe { ld_shared_u64(smem(ROW_BAND_SUMS + b * 8)) };
            sum as u128 * band_scale(mc - b as f32, mc) as u128
        } else {
            0
        }
    };
    (mass(lane), mass(lane + 32))
}

/// The row band (`mc − ceil(x)`) where the running mass of stage 1's band sums, in band order
/// (the key order: a band's keys are all larger than the next band's), first reaches `p·Z`,
/// and the mass of the bands before it. The tiles' sums are added up per row band
/// ([`fixed::row_band_of`]) into `ROW_BAND_SUMS`, which stage 2 cleared; behind one
/// barrier every warp then scans the 37 band masses itself, two a lane (until session 54, a
/// block scan, a block minimum and a broadcast: six barriers more, and two before the adds).
/// Out of line: it runs only for rows left to the exact pass, and stage 2's hot path should not
/// fetch it.
///
/// # Safety
/// The whole block calls it after `clear_row_band_sums` and `summarize`, for a finite row with
/// usable bands, ceiling `mc` and band masses (`Summary::mass_ok`) adding up to
/// `z_hi · 2^64 + z_lo`; stage 1 wrote the row's records.
#[inline(never)]
unsafe extern "C" fn boundary_band(p: &StepParams, row: u32, mc: f32, z_lo: u64, z_hi: u64, top_p: f32) -> BandBoundary {
    const BANDS: u32 = MASS_BANDS as u32;
    let mut i = thread_idx_x();
    // SAFETY (whole block): records of the row's tiles; slots below MASS_BANDS of
    // ROW_BAND_SUMS; the barrier orders the adds before the reads; each warp converged.
    unsafe {
        // A thread per (tile, band) pair, as `summarize` reads them: every tile's share of a
        // row band is its fraction sum times that band's `E`, so the sums add up per row band
        // first (u64: at most 2^20 tokens of 2^23). A warp per row band summed the tiles' u128
        // shares across its lanes (session 22: band rows took `sample_rows` from 30 to 35 µs at
        // flat B = 256).
        while i < p.tiles * BANDS {
            let (t, d) = (i / BANDS, i % BANDS);
            let v = tile_view(p, row, t);
            let (sum, valid, ceiling) = (v.band_sum(d), v.valid(), v.ceiling());
            let b = row_band_of(mc, ceiling, d);
            if valid > 0 && sum != 0 && b < BANDS {
                atom_add_shared_u64(smem(ROW_BAND_SUMS + b * 8), sum);
            }
            i += SAMPLER_THREADS;
        }
        sync_threads();
        let (first, second) = lane_band_masses(mc);
        // Bands 0..32 in lane order, then bands 32..37 after all of them.
        let first_incl = warp_inclusive_scan(first);
        let second_incl = warp_inclusive_scan(second).wrapping_add(shfl_idx_u128(first_incl, 31));
        let total = shfl_idx_u128(second_incl, 31);
        let (first_before, second_before) = (first_incl - first, second_incl - second);
        let p24 = top_p_units(top_p);
        let hit = |own: u128, before: u128| own != 0 && !top_p_reached(before, total, p24) && top_p_reached(before + own, total, p24);
        let (first_hits, second_hits) = (ballot(FULL_MASK, hit(first, first_before)), ballot(FULL_MASK, hit(second, second_before)));
        // Bands 32..37 cannot hold the boundary for V ≤ `MAX_VOCAB`: with the row's top token in
        // band 0, they weigh at most V·e^-31 of Z (3.6·10^-8 at 2^20 tokens), short of the
        // 2^-24 that a top-p below 1 leaves; so no test reaches the second branch.
        let (band, mass_before) = if first_hits != 0 {
            (first_hits.trailing_zeros(), shfl_idx_u128(first_before, first_hits.trailing_zeros()))
        } else if second_hits != 0 {
            (32 + second_hits.trailing_zeros(), shfl_idx_u128(second_before, second_hits.trailing_zeros()))
        } else {
            (u32::MAX, 0)
        };
        // The same sums as the row mass's (`fixed::row_band_of`), so equal; if not, the row is
        // binned whole.
        if total == (z_hi as u128) << 64 | z_lo as u128 && band != u32::MAX {
            BandBoundary { mass_before, band }
        } else {
            BandBoundary { mass_before: 0, band: u32::MAX }
        }
    }
}

#[inline(always)]
pub(crate) unsafe fn draw(p: &StepParams, slot: u32) -> u64 {
    // SAFETY: forwarded.
    draw_of(unsafe { draw_inputs(p, slot) })
}

/// [`draw`]'s loads alone (the request's seed and step), for a caller that issues them beside
/// others and computes the draw later with [`draw_of`].
///
/// # Safety
/// `slot < slots` (validated).
#[inline(always)]
pub(crate) unsafe fn draw_inputs(p: &StepParams, slot: u32) -> (u64, u64) {
    // SAFETY: slot < slots.
    unsafe { ((p.seeds as *const u64).add(slot as usize).read(), (p.steps as *const u64).add(slot as usize).read()) }
}

/// The draw of [`draw_inputs`]' seed and step.
#[inline(always)]
pub(crate) fn draw_of((seed, step): (u64, u64)) -> u64 {
    random_u64(seed, step, STREAM_TOKEN)
}

/// Stores a u128 for the whole block (from one thread) and returns it to everyone.
///
/// # Safety
/// The whole block calls it together; exactly one thread passes `Some`.
#[inline(always)]
unsafe fn broadcast_u128(v: Option<u128>) -> u128 {
    // SAFETY: RES_U128 is a 16-byte slot of the map; barriers order the write and the reads.
    unsafe {
        if let Some(v) = v {
            st_shared_u64(smem(RES_U128), v as u64);
            st_shared_u64(smem(RES_U128 + 8), (v >> 64) as u64);
        }
        sync_threads();
        let out = ((ld_shared_u64(smem(RES_U128 + 8)) as u128) << 64) | ld_shared_u64(smem(RES_U128)) as u128;
        sync_threads();
        out
    }
}

/// Samples uniformly in mass among every valid token of the row (no truncation), by walking
/// the tile masses in index order and re-reading the one tile where `u` falls.
///
/// # Safety
/// The whole block calls it together; `sum.mass_ok` holds; `SM_SORT` is free.
#[inline(always)]
unsafe fn walk_whole_row(p: &StepParams, r: &Row, sum: &Summary, u: u128) -> u64 {
    let tid = thread_idx_x();
    let (warp, lane) = (tid / 32, tid % 32);
    // SAFETY (whole block): tiles ≤ MAX_TILES = one per thread, and MAX_TILES u128 fit SM_SORT's
    // 2048 u64; slots from the map.
    unsafe {
        // A tile's mass by one warp, its lanes over the bands: their loads overlap. (One thread
        // per tile walking its 37 bands was most of a random row's stage 2.)
        let mut t = warp;
        while t < p.tiles {
            let v = tile_view(p, r.index, t);
            let mut part = 0u128;
            if sum.infinite_row() {
                if lane == 0 {
                    part = v.infinite() as u128;
                }
            } else {
                let mut d = lane;
                while d < MASS_BANDS as u32 {
                    part += v.band(d, sum.mc);
                    d += 32;
                }
            }
            let total = warp_sum_u128(part);
            if lane == 0 {
                st_shared_u64(smem(SM_SORT + t * 16), total as u64);
                st_shared_u64(smem(SM_SORT + t * 16 + 8), (total >> 64) as u64);
            }
            t += SAMPLER_THREADS / 32;
        }
        sync_threads();
        let mass = if tid < p.tiles { ld_shared_u128(smem(SM_SORT + tid * 16)) } else { 0 };
        let (before, _) = block_exclusive_scan_u128(mass);
        if tid == 0 {
            st_shared_u32(smem(RES_TOKEN), u32::MAX);
        }
        sync_threads();
        if tid < p.tiles && before <= u && u < before + mass {
            st_shared_u32(smem(RES_TOKEN), tid);
            st_shared_u64(smem(RES_U128), (u - before) as u64);
            st_shared_u64(smem(RES_U128 + 8), ((u - before) >> 64) as u64);
        }
        sync_threads();
        let tile = ld_shared_u32(smem(RES_TOKEN));
        let rest = ((ld_shared_u64(smem(RES_U128 + 8)) as u128) << 64) | ld_shared_u64(smem(RES_U128)) as u128;
        sync_threads();
        if tile == u32::MAX {
            return 0;
        }
        walk_tile(p, r, sum, tile, rest, 0)
    }
}

/// Index-order walk inside one tile over tokens with key ≥ `floor`: the token where the running
/// mass passes `u`, or -1 when the tile's kept mass is ≤ `u`.
///
/// # Safety
/// The whole block calls it together with the same arguments.
#[inline(always)]
pub(crate) unsafe fn walk_tile(p: &StepParams, r: &Row, sum: &Summary, tile: u32, u: u128, floor: u64) -> u64 {
    let tid = thread_idx_x();
    let base = tile * TILE_TOKENS + tid * TOKENS_PER_THREAD;
    // SAFETY (whole block): process8 and the scan are called uniformly.
    unsafe {
        let x = process8(p, r, tile);
        let keys = keys8(&x, base);
        let mut w = [0u128; 8];
        let mut mine = 0u128;
        each8(|j| {
            if keys[j] != 0 && keys[j] >= floor {
                w[j] = sum.weight_of_once(keys[j]);
            }
            mine += w[j];
        });
        let (before, _) = block_exclusive_scan_u128(mine);
        if tid == 0 {
            st_shared_u64(smem(RES_TOKEN), 0);
        }
        sync_threads();
        let mut run = before;
        each8(|j| {
            if w[j] > 0 && run <= u && u < run + w[j] {
                st_shared_u64(smem(RES_TOKEN), keys[j]);
            }
            run += w[j];
        });
        sync_threads();
        let key = ld_shared_u64(smem(RES_TOKEN));
        sync_threads();
        key
    }
}

// ---------------------------------------------------------------------------------------------
// Stage 2.

/// The first `n` keys of `SM_SORT` (sorted, largest first) as this thread's `held`
/// positions `held·tid ..` (stage 2: [`run_per_thread`]`(n)`, one a thread up to 512 keys),
/// with their inclusive prefix masses over the whole list (0 past `n`). Entries `q ≥ held`
/// are not the thread's: callers test `q < held` before they read one. Spread thinly, each
/// thread's weights are a chain of one call, not of `OWN` in a few threads that the rest of
/// the block waited for at the scan's barrier (the longest wait of a top-k 50 row's stage 2,
/// session 52's source counters).
///
/// # Safety
/// The whole block calls it together, with `held` ≤ `OWN` and `SAMPLER_THREADS · held ≥ n`.
#[inline(always)]
unsafe fn sorted_prefix_masses(n: u32, held: u32, sum: &Summary) -> ([u64; OWN], [u128; OWN]) {
    let first = thread_idx_x() * held;
    let mut keys = [0u64; OWN];
    let mut prefix = [0u128; OWN];
    let mut run = 0u128;
    each_own(|q| {
        let i = first + q as u32;
        if (q as u32) < held && i < n {
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

/// Tile-list positions whose keys bound the k-th largest key of the row from below: 0, 1, 3,
/// 7, 15 and 31 ([`level_position`]).
const LEVELS: u32 = 6;

/// List position `2^level − 1` of [`LEVELS`], computed: as a table in global memory, each
/// lookup waited for a cold line (session 55).
#[inline(always)]
fn level_position(level: u32) -> u32 {
    (1u32 << (level % LEVELS)) - 1
}

/// A lower bound on the row's `k`-th largest key from the tile lists alone (0 when none is
/// found): if `m` tiles have their `(i+1)`-th key ≥ `z`, at least `m·(i+1)` keys are ≥ `z`; so
/// for `m = ceil(k / (i+1))` the `m`-th largest `(i+1)`-th key is such a `z`. The best level
/// keeps the merge near `k` keys instead of every key above the lists' common floor.
///
/// # Safety
/// The whole block calls it together; `SM_SORT` is free (it holds 6 × tiles keys here).
#[inline(always)]
unsafe fn kth_key_floor(p: &StepParams, row: u32, k: u32) -> u64 {
    let tid = thread_idx_x();
    // SAFETY (whole block): record reads in bounds; 6 · tiles ≤ 6 · 256 keys fit SM_SORT's 2048.
    unsafe {
        let mut i = tid;
        while i < LEVELS * p.tiles {
            let (level, t) = (i / p.tiles, i % p.tiles);
            let at = level_position(level);
            let v = tile_view(p, row, t);
            let key = if v.valid() > at { v.candidate(at) } else { 0 };
            st_shared_u64(smem(SM_SORT + i * 8), key);
            i += SAMPLER_THREADS;
        }
        sync_threads();
        // One thread per (level, tile) ranks that tile's key among the level's keys (one warp
        // walking every level was the longest wait of a top-k row's stage 2).
        let mut floor = 0u64;
        let mut i = tid;
        while i < LEVELS * p.tiles {
            let level = i / p.tiles;
            let m = k.div_ceil(level_position(level) + 1);
            let mine = ld_shared_u64(smem(SM_SORT + i * 8));
            if m <= p.tiles && mine != 0 {
                // Keys are unique, so exactly one tile has rank m - 1.
                let mut above = 0u32;
                let mut t = 0;
                while t < p.tiles {
                    above += (ld_shared_u64(smem(SM_SORT + (level * p.tiles + t) * 8)) > mine) as u32;
                    t += 1;
                }
                if above + 1 == m && mine > floor {
                    floor = mine;
                }
            }
            i += SAMPLER_THREADS;
        }
        block_max_u64(floor)
    }
}

/// Sorts the `$n` keys the block stored at `SM_SORT`, largest first, after zeros up to the next
/// power of two (the sort's length, the macro's value): zero is below every key, so the keys
/// stay first. `$tid` is the thread's index. Both are read more than once, so callers pass
/// plain values, not expressions with effects. A macro, not an inlined function: the function
/// changed the register allocation of the kernels around it (`exact_single`'s 64-register
/// frame 88 B larger, ptxas).
///
/// Safety: used inside an unsafe block that the whole thread block reaches together, with
/// `$n ≤ MERGE_CAPACITY` keys at `SM_SORT`.
macro_rules! pad_and_sort {
    ($n:expr, $tid:expr) => {{
        let padded = pow2_at_least($n);
        let mut i = $n + $tid;
        while i < padded {
            st_shared_u64(smem(SM_SORT + i * 8), 0);
            i += SAMPLER_THREADS;
        }
        sync_threads();
        block_sort_desc(padded);
        padded
    }};
}

/// Merges the tile lists: every key ≥ the largest "last candidate" of a full list, which is
/// exactly the first `n` keys of the row in order; with `k_hint > 0`, only those that can be
/// among the first `k_hint` (`kth_key_floor`). When that prefix is shorter than a `k_hint` up to
/// `SELDOM_LISTED_TOP_K`, one tile's list cut it short: the row's best keys crowd into that
/// tile, as a vocabulary ordered by frequency puts likely tokens at low ids. [`merge_crowded`]
/// then re-reads such tiles whole, so the row is decided here instead of listed. Leaves the
/// keys sorted, largest first, in `SM_SORT` (padded with 0 to a power of two). Returns
/// `(n, complete, padded)` (complete: every valid key of the row is there), or `None` when more
/// than `MERGE_CAPACITY` keys qualify.
///
/// # Safety
/// The whole block calls it together, for a row whose settings are valid.
#[inline(always)]
unsafe fn merge_candidates(p: &StepParams, r: &Row, k_hint: u32) -> Option<(u32, bool, u32)> {
    let tid = thread_idx_x();
    // SAFETY (whole block): record reads in bounds; SM_SORT holds MERGE_CAPACITY keys.
    unsafe {
        let mut tau = 0u64;
        let mut t = tid;
        while t < p.tiles {
            let v = tile_view(p, r.index, t);
            if v.valid() > CANDIDATES {
                let last = v.candidate(CANDIDATES - 1);
                tau = if last > tau { last } else { tau };
            }
            t += SAMPLER_THREADS;
        }
        let tau = block_max_u64(tau);
        let tau_k = if k_hint > 0 { kth_key_floor(p, r.index, k_hint) } else { 0 };
        let mut lower = if tau_k > tau { tau_k } else { tau };
        let mut n = gather_list_keys(p, r.index, lower);
        // Short of k with tau above the k-th key's floor: a list stopped early (crowding).
        if n < k_hint && k_hint <= crate::decide::SELDOM_LISTED_TOP_K && tau > tau_k {
            let merged = merge_crowded(*p, *r, k_hint, tau, tau_k);
            (n, lower) = ((merged >> 64) as u32, merged as u64);
        }
        if n > MERGE_CAPACITY {
            return None;
        }
        Some((n, lower == 0, pad_and_sort!(n, tid)))
    }
}

/// Appends `key` to the merge at `SM_SORT` when it is a key (not 0) ≥ `lower`: the next slot
/// from `RES_COUNTER`, stored only below `MERGE_CAPACITY` (the count goes on, so the caller
/// sees an overflow). Both gathers of the merge append through it.
///
/// # Safety
/// `RES_COUNTER` was zeroed before a barrier that every appending thread has passed.
#[inline(always)]
unsafe fn append_merge_key(key: u64, lower: u64) {
    if key != 0 && key >= lower {
        // SAFETY: a shared counter and a slot below MERGE_CAPACITY of SM_SORT.
        unsafe {
            let pos = atom_add_shared_u32(smem(RES_COUNTER), 1);
            if pos < MERGE_CAPACITY {
                st_shared_u64(smem(SM_SORT + pos * 8), key);
            }
        }
    }
}

/// Gathers into `SM_SORT` (unsorted) every key ≥ `lower` of the row's tile lists. Returns how
/// many there are; only the first `MERGE_CAPACITY` are stored.
///
/// # Safety
/// The whole block calls it together with the same arguments.
#[inline(always)]
unsafe fn gather_list_keys(p: &StepParams, row: u32, lower: u64) -> u32 {
    let tid = thread_idx_x();
    // SAFETY (whole block): record reads in bounds; stores only below MERGE_CAPACITY.
    unsafe {
        if tid == 0 {
            st_shared_u32(smem(RES_COUNTER), 0);
        }
        sync_threads();
        let total = p.tiles * CANDIDATES;
        // Two keys a round, both loaded before either is appended: the shared atomic between
        // them kept the second load from being issued early (a round trip to L2 each).
        let mut i = tid;
        while i < total {
            let next = i + SAMPLER_THREADS;
            let key = tile_view(p, row, i / CANDIDATES).candidate(i % CANDIDATES);
            let other = if next < total { tile_view(p, row, next / CANDIDATES).candidate(next % CANDIDATES) } else { 0 };
            append_merge_key(key, lower);
            append_merge_key(other, lower);
            i += 2 * SAMPLER_THREADS;
        }
        sync_threads();
        let n = ld_shared_u32(smem(RES_COUNTER));
        sync_threads();
        n
    }
}

/// Each tile's full-list floor for [`merge_crowded`]: the last key of a list that stopped at
/// 32 keys (its tile holds more valid tokens), 0 for a list that holds its whole tile.
const LIST_FLOORS: u32 = SM_HIST_LO;
const _: () = assert!(SM_HIST_LO + MAX_TILES * 8 <= SM_HIST_HI);

/// How many crowded tiles [`merge_crowded`] re-reads at most. After `j` re-reads the merge
/// holds at least `32·(j+1)` keys (each re-read tile's 32 list keys and the next full list's),
/// or every key down to the `k`-th's floor; so 3 settle every top-k up to `SELDOM_LISTED_TOP_K`.
const CROWDED_TILES_READ: u32 = 3;
const _: () = assert!(CANDIDATES * (CROWDED_TILES_READ + 1) >= crate::decide::SELDOM_LISTED_TOP_K);

/// The merge of a row whose tile lists stop short of `k_hint` keys (`tau`, the largest list
/// floor, lies above `tau_k`, the `k`-th key's floor): re-reads whole the tile whose list floor
/// is `tau` and lowers the merge's floor to the next list's (or to `tau_k`); while the merge is
/// still short, the next tile too, up to [`CROWDED_TILES_READ`]. Each round gathers afresh.
/// Returns the count of merged keys (as [`gather_list_keys`]) in the high 64 bits, their floor
/// in the low ones. Not inlined: stage 2 runs it only for crowded rows, and inlined it took
/// registers from the common path (`sample_rows_quiet` 122 → 126), whose top-k 50 steps then
/// ran 1.04–1.09× as long on the H200 (session 27).
///
/// # Safety
/// The whole block calls it together with the same arguments, for a row whose settings are
/// valid; `SM_SORT` and `LIST_FLOORS` are free.
#[inline(never)]
// Both sides are this crate's code, built together: `Row` needs no C layout to cross.
#[allow(improper_ctypes_definitions)]
unsafe extern "C" fn merge_crowded(p: StepParams, r: Row, k_hint: u32, tau: u64, tau_k: u64) -> u128 {
    let (p, r) = (&p, &r);
    let tid = thread_idx_x();
    // SAFETY (whole block): tiles ≤ MAX_TILES ≤ threads, so one thread a tile fills
    // LIST_FLOORS; the first block_max's barriers publish it.
    unsafe {
        let mine = if tid < p.tiles {
            let v = tile_view(p, r.index, tid);
            let floor = if v.valid() > CANDIDATES { v.candidate(CANDIDATES - 1) } else { 0 };
            st_shared_u64(smem(LIST_FLOORS + tid * 8), floor);
            floor
        } else {
            0
        };
        let (mut cut, mut reads) = (tau, 0);
        loop {
            // The tiles whose floor is ≥ cut are re-read; the merge's floor is the next one's.
            let next = block_max_u64(if mine < cut { mine } else { 0 });
            let lower = if tau_k > next { tau_k } else { next };
            let n = gather_keys_rereading(p, r, lower, cut);
            reads += 1;
            if n > MERGE_CAPACITY || n >= k_hint || next <= tau_k || reads == CROWDED_TILES_READ {
                return ((n as u128) << 64) | lower as u128;
            }
            cut = next;
        }
    }
}

/// [`gather_list_keys`], but the tiles whose list floor (`LIST_FLOORS`) is ≥ `cut` are read
/// whole instead of through their lists. The caller picks `lower` at or above every list floor
/// below `cut`, so each list read holds all of its tile's keys ≥ `lower`.
///
/// # Safety
/// The whole block calls it together with the same arguments; `LIST_FLOORS` is filled.
#[inline(always)]
unsafe fn gather_keys_rereading(p: &StepParams, r: &Row, lower: u64, cut: u64) -> u32 {
    let tid = thread_idx_x();
    let reread = |floor: u64| floor != 0 && floor >= cut;
    // SAFETY (whole block): record reads in bounds; stores only below MERGE_CAPACITY; the loop
    // over re-read tiles is uniform (every thread reads the same LIST_FLOORS after a barrier),
    // as process8 needs.
    unsafe {
        if tid == 0 {
            st_shared_u32(smem(RES_COUNTER), 0);
        }
        sync_threads();
        let total = p.tiles * CANDIDATES;
        let mut i = tid;
        while i < total {
            let tile = i / CANDIDATES;
            if !reread(ld_shared_u64(smem(LIST_FLOORS + tile * 8))) {
                append_merge_key(tile_view(p, r.index, tile).candidate(i % CANDIDATES), lower);
            }
            i += SAMPLER_THREADS;
        }
        let mut tile = 0;
        while tile < p.tiles {
            if reread(ld_shared_u64(smem(LIST_FLOORS + tile * 8))) {
                let keys = keys8(&process8(p, r, tile), tile * TILE_TOKENS + tid * TOKENS_PER_THREAD);
                each8(|j| append_merge_key(keys[j], lower));
            }
            tile += 1;
        }
        sync_threads();
        let n = ld_shared_u32(smem(RES_COUNTER));
        sync_threads();
        n
    }
}

/// Stage 2: one block per row; see the module header. Built at up to 128 registers (one
/// 512-thread block per SM, no spills): the host launches it for batches of one wave. A row it
/// cannot decide goes on the exact-pass list.
///
/// # Safety
/// Launch with grid `(rows)`, `SAMPLER_THREADS` threads and `SAMPLER_SHARED_BYTES` of dynamic
/// shared memory, after `sample_tiles` of the same step on the same stream.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn sample_rows(p: StepParams) {
    // SAFETY: forwarded.
    unsafe { sample_rows_body::<false, true>(&p) };
}

/// [`sample_rows`] built for two 512-thread blocks per SM (64 registers, with spills within the
/// PTX check's allowance): the host launches it for batches of more rows than SMs
/// (`abi::rows_two_per_sm`).
///
/// # Safety
/// As for [`sample_rows`].
#[no_mangle]
pub unsafe extern "ptx-kernel" fn sample_rows_two_per_sm(p: StepParams) {
    // SAFETY: forwarded.
    unsafe { sample_rows_body::<false, false>(&p) };
}

/// Stage 2 for a step that launches no exact pass (a quiet step, whose rows stage 2 seldom
/// leaves undecided: the host's `ExactPassLaunch::BySettings`): a row it cannot decide is
/// finished by the same block with the single-block pass ([`exact_single`]), so that an idle
/// exact pass costs no launch. Otherwise [`sample_rows`].
///
/// # Safety
/// As for [`sample_rows`]; no exact-pass kernel may follow it in the step.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn sample_rows_quiet(p: StepParams) {
    // SAFETY: forwarded.
    unsafe { sample_rows_finishing::<true>(&p) }
}

/// [`sample_rows_quiet`] built for two 512-thread blocks per SM, as [`sample_rows_two_per_sm`].
///
/// # Safety
/// As for [`sample_rows_quiet`].
#[no_mangle]
pub unsafe extern "ptx-kernel" fn sample_rows_quiet_two_per_sm(p: StepParams) {
    // SAFETY: forwarded.
    unsafe { sample_rows_finishing::<false>(&p) }
}

/// The quiet builds' body: stage 2, then the single-block pass for a row it left undecided.
///
/// # Safety
/// As for [`sample_rows_quiet`].
#[inline(always)]
unsafe fn sample_rows_finishing<const ONE_PER_SM: bool>(p: &StepParams) {
    // SAFETY: the body's answer is block-uniform, so the whole block runs the pass, on a row
    // below the active count that the body validated and flagged.
    unsafe {
        if sample_rows_body::<true, ONE_PER_SM>(p) {
            // The pass reuses shared memory that stage 2's last reads used.
            sync_threads();
            exact_single(p, block_idx_x());
        }
    }
}

/// A row stage 2 cannot decide: on the exact-pass list ([`flag_exact`]; returns false), or, in
/// a quiet step's stage 2 (`FINISHES`), flagged for the single-block pass (the flag is what the
/// host's `exact_paths_last_step` counts) and returned as true for the entry point to finish:
/// one call site keeps one copy of that pass in the kernel (one per site was 3.7 MB of SASS).
///
/// # Safety
/// The whole block calls it together, as it would call [`flag_exact`].
#[inline(always)]
unsafe fn leave_undecided<const FINISHES: bool>(p: &StepParams, row: u32, s: &RowSettings, sum: &Summary, top_written: bool) -> bool {
    // SAFETY: the whole block is here; row < rows.
    unsafe {
        if FINISHES {
            if thread_idx_x() == 0 {
                (p.exact_flags as *mut u32).add(row as usize).write(EXACT_SINGLE);
            }
        } else {
            flag_exact(p, row, s, sum, top_written);
        }
    }
    FINISHES
}

/// Asks this SM's L1 for the lines of `fixed::BAND_SCALES` (thread 0, a `prefetch.global.L1`
/// per line: the 296-byte table spans at most four) as stage 2 starts, before its wait for
/// stage 1. Stage 2 looks the table up a few round trips later; cold, each first lookup waited
/// for DRAM, 9% of a lone flat top-p row's `sample_rows` samples (session 55, run 4). A hint:
/// no register, no wait. With every thread of every row kernel asking (the exact pass's and
/// verification's too: session 55, run 5), steps of 8 to 256 rows that run the exact pass took
/// 1.07-1.19x the time and verification 1.03-1.06x; not isolated (each block's 16 warps asked
/// for the same four lines).
#[inline(always)]
fn prefetch_band_scales() {
    if thread_idx_x() == 0 {
        // SAFETY: prefetch_band_scales_lines' addresses lie inside the static.
        unsafe { prefetch_band_scales_lines() };
    }
}

/// The body of the stage-2 entry points; `FINISHES`: [`sample_rows_quiet`]'s. Returns whether
/// the row is left undecided for the caller to finish (block-uniform; never without
/// `FINISHES`).
///
/// # Safety
/// As for [`sample_rows`].
#[inline(always)]
unsafe fn sample_rows_body<const FINISHES: bool, const ONE_PER_SM: bool>(p: &StepParams) -> bool {
    let p = *p;
    prefetch_band_scales();
    // SAFETY: a wait, no access; everything below follows it.
    unsafe { follow_previous_kernel() };
    let row = block_idx_x();
    // SAFETY: one u32 read.
    if block_dim_x() != SAMPLER_THREADS || row >= unsafe { active_rows(&p) } {
        return false;
    }
    let tid = thread_idx_x();
    // SAFETY: row < rows.
    let s = unsafe { read_settings(&p, row) };
    // SAFETY (whole block from here on, all branches uniform): every helper is called by the
    // whole block; reads and writes stay inside the buffers StepParams describes.
    unsafe {
        flag_exact_clear(&p, row);
        // What stage 1 did with the row's lists, read by every thread before `row_valid`'s
        // barriers, after which thread 0 rewrites the flag (`summarize` has none of its own in
        // the builds of one block per SM, whose warps fold the tile heads themselves). A quiet
        // step's parameters carry no flags (the host's choice), so its builds leave them out:
        // in their 64-register build they spilled 1 KB more.
        let skipped = !FINISHES && row_addressable(&p, &s) && lists_skipped(&p, &s);
        if !row_valid(&p, &s) {
            finish(&p, row, 0, NO_TOKEN, STATUS_INVALID_SETTINGS, f32::NAN);
            write_top(&p, row, 0, 0, &empty_summary(), 0.0);
            return false;
        }
        let r = row_setup(&p, row, s);
        if !FINISHES {
            // For `boundary_band`, which adds to them with no barrier before: the row mass's
            // block reduction in `summarize` orders this clear (band mode needs that mass). The
            // quiet builds never call it; with the clear in `summarize`, their two-per-SM build
            // took untruncated rows at B = 256 1.02× the time.
            clear_row_band_sums();
        }
        let sum = summarize::<ONE_PER_SM>(&p, row);
        let n_top = top_n(&s);
        let want_lp = s.flags & ROW_WANT_LOGPROB != 0;
        if sum.duplicate_bias {
            finish(&p, row, 0, NO_TOKEN, STATUS_INVALID_SETTINGS, f32::NAN);
            write_top(&p, row, 0, 0, &empty_summary(), 0.0);
            return false;
        }
        if sum.max_key == 0 {
            finish(&p, row, s.slot, NO_TOKEN, STATUS_NO_VALID_TOKEN, f32::NAN);
            write_top(&p, row, 0, 0, &sum, 0.0);
            return false;
        }
        let greedy = s.temperature == 0.0;
        // Stage 1 computes the row mass only for rows that may need it (log-probabilities, or
        // no top-k); a decision below that needs it anyway sends the row to the exact pass.
        if (want_lp || n_top > 0) && !sum.mass_ok {
            return leave_undecided::<FINISHES>(&p, row, &s, &sum, false);
        }
        let ln_z = if sum.infinite_row() || !sum.mass_ok { 0.0 } else { ln_mass(sum.z) };
        let lp_of = |key: u64| if want_lp { sum.logprob_of(key, ln_z) } else { f32::NAN };
        if greedy && n_top == 0 {
            finish(&p, row, s.slot, key_index(sum.max_key) as i32, STATUS_OK, lp_of(sum.max_key));
            return false;
        }
        // A top-p row whose nucleus no merge of the lists could hold (most flat rows) goes to the
        // exact pass now: the merge and its sort would only find that out. Such a row is *wide*:
        // its request's next step skips the lists (`lists_skipped`), and a row whose lists
        // stage 1 skipped goes to the exact pass too, whatever its width.
        let wide = n_top == 0 && top_p_alone(&s, &sum) && !top_p_within(p.tiles * CANDIDATES, sum.z, top_p_units(s.top_p));
        if !FINISHES {
            // After the barriers: a write as the row started raced with other warps' reads of
            // `skipped` (synccheck's scheduling showed it: the warps disagreed, and the row took
            // a merge of lists stage 1 had skipped).
            set_slot_flags(&p, &s, if wide { SLOT_WIDE } else { 0 });
        }
        if wide || skipped {
            write_top(&p, row, 0, 0, &sum, ln_z);
            return leave_undecided::<FINISHES>(&p, row, &s, &sum, true);
        }
        // The merge needs only the keys that can be among the first top_k (and top-logprob) ones.
        let k_hint = if greedy {
            n_top
        } else if s.top_k > 0 {
            if s.top_k > n_top { s.top_k } else { n_top }
        } else {
            0
        };
        // A row without lists (random, nothing truncated, no top log-probabilities) keeps every
        // valid token: with an empty prefix, the steps below go to the walk over tile masses.
        let merged = if needs_candidates(&s) { merge_candidates(&p, &r, k_hint) } else { Some((0, false, 0)) };
        let Some((n_s, complete, _)) = merged else {
            return leave_undecided::<FINISHES>(&p, row, &s, &sum, false);
        };
        write_top(&p, row, n_top, n_s, &sum, ln_z);
        if greedy {
            finish(&p, row, s.slot, key_index(sum.max_key) as i32, STATUS_OK, lp_of(sum.max_key));
            return false;
        }
        // Random and nothing truncated: every valid token is kept (kept = valid > n_s = 0), and
        // the row walks the tile masses below without the prefix's scan and reductions.
        let untruncated = !needs_candidates(&s);

        // Weights and inclusive prefix masses of the merged list; thread t owns positions
        // held·t .. held·t + held, and `owned(q)` says whether its entry `q` is one of them.
        let held = run_per_thread(n_s);
        let first = tid * held;
        let owned = |q: usize| (q as u32) < held;
        let (keys, prefix) = if untruncated { ([0; OWN], [0; OWN]) } else { sorted_prefix_masses(n_s, held, &sum) };

        let kept = if untruncated {
            sum.valid
        } else {
            // min-p and top-k: both keep a prefix of the order.
            let max_value = key_value(sum.max_key);
            let min_p_on = s.min_p > 0.0;
            let threshold = min_p_threshold(max_value, s.min_p);
            let mut above = 0u32;
            each_own(|q| {
                above += (owned(q) && first + (q as u32) < n_s && key_value(keys[q]) >= threshold) as u32;
            });
            let c_m = block_sum_u32(above);
            let min_p_known = !min_p_on || c_m < n_s || complete;
            let l_m = if min_p_on { c_m } else { sum.valid };
            let k_eff = if s.top_k == 0 || s.top_k > sum.valid { sum.valid } else { s.top_k };
            if !min_p_known && k_eff > n_s {
                return leave_undecided::<FINISHES>(&p, row, &s, &sum, true);
            }
            let l1 = if min_p_known && l_m < k_eff { l_m } else { k_eff };
            let z1 = if l1 <= n_s {
                let mut mine = None;
                each_own(|q| {
                    if owned(q) && first + q as u32 + 1 == l1 {
                        mine = Some(prefix[q]);
                    }
                });
                broadcast_u128(mine)
            } else if l1 == sum.valid && sum.mass_ok {
                sum.z
            } else {
                return leave_undecided::<FINISHES>(&p, row, &s, &sum, true);
            };

            // top-p: the first position whose prefix mass reaches p·Z1.
            if top_p_disabled(s.top_p) {
                l1
            } else {
                let p24 = top_p_units(s.top_p);
                let limit = if l1 < n_s { l1 } else { n_s };
                let mut hit = u32::MAX;
                each_own(|q| {
                    let i = first + q as u32;
                    if owned(q) && i < limit && hit == u32::MAX && top_p_reached(prefix[q], z1, p24) {
                        hit = i;
                    }
                });
                let hit = block_min_u32(hit);
                if hit == u32::MAX {
                    return leave_undecided::<FINISHES>(&p, row, &s, &sum, true);
                }
                hit + 1
            }
        };

        if kept > n_s && !sum.mass_ok {
            return leave_undecided::<FINISHES>(&p, row, &s, &sum, true);
        }
        let r64 = draw(&p, s.slot);
        let key = if kept <= n_s {
            let mut mine = None;
            each_own(|q| {
                if owned(q) && first + q as u32 + 1 == kept {
                    mine = Some(prefix[q]);
                }
            });
            let z_kept = broadcast_u128(mine);
            let u = draw_target(z_kept, r64);
            // Re-key the kept prefix by index (ascending), carrying the value bits; only that
            // prefix (padded to a power of two) is sorted again. The owned positions cover
            // pow2_at_least(n_s) ≥ kept_padded.
            let kept_padded = pow2_at_least(kept);
            each_own(|q| {
                let i = first + q as u32;
                let rekeyed = if owned(q) && i < kept {
                    !(((key_index(keys[q]) as u64) << 32) | key_value(keys[q]).to_bits() as u64)
                } else {
                    0
                };
                if owned(q) && i < kept_padded {
                    st_shared_u64(smem(SM_SORT + i * 8), rekeyed);
                }
            });
            sync_threads();
            block_sort_desc(kept_padded);
            // The kept keys spread as thinly again: one weight call a thread up to 512.
            let held_kept = run_per_thread(kept);
            let first_kept = tid * held_kept;
            let mut w = [0u128; OWN];
            let mut idx = [0u32; OWN];
            let mut value = [0f32; OWN];
            let mut mine = 0u128;
            each_own(|q| {
                let i = first_kept + q as u32;
                if (q as u32) < held_kept && i < kept {
                    let k = !ld_shared_u64(smem(SM_SORT + i * 8));
                    idx[q] = (k >> 32) as u32;
                    value[q] = f32::from_bits(k as u32);
                    w[q] = sum.weight_of_once(sort_key(value[q], idx[q]));
                }
                mine += w[q];
            });
            let (before, _) = block_exclusive_scan_u128(mine);
            if tid == 0 {
                st_shared_u64(smem(RES_TOKEN), 0);
            }
            sync_threads();
            let mut run = before;
            each_own(|q| {
                if w[q] > 0 && run <= u && u < run + w[q] {
                    st_shared_u64(smem(RES_TOKEN), sort_key(value[q], idx[q]));
                }
                run += w[q];
            });
            sync_threads();
            let key = ld_shared_u64(smem(RES_TOKEN));
            sync_threads();
            key
        } else {
            // Everything valid is kept (kept == valid > n_s): walk the tile masses.
            walk_whole_row(&p, &r, &sum, draw_target(sum.z, r64))
        };
        finish_chosen(&p, row, s.slot, key, if want_lp { sum.logprob_of(key, ln_z) } else { f32::NAN });
        false
    }
}

/// Sets the flags stage 2 leaves for the request's next step (`StepParams::slot_flags`; thread
/// 0): `SLOT_WIDE` for a wide row, 0 for another that reaches the test (rows that end earlier
/// leave them as they were: a hint). Stage 1 is done with them, and every thread of the block
/// has read them (`lists_skipped`) before a barrier that precedes the write. Not in a quiet
/// step (`sample_rows_body`).
#[inline(always)]
unsafe fn set_slot_flags(p: &StepParams, s: &RowSettings, flags: u32) {
    if p.slot_flags != 0 && s.slot < p.slots && thread_idx_x() == 0 {
        // SAFETY: slot < slots entries.
        unsafe { (p.slot_flags as *mut u32).add(s.slot as usize).write(flags) };
    }
}

/// Clears the row's exact-pass flag (thread 0), so a stale flag never survives a replay.
#[inline(always)]
unsafe fn flag_exact_clear(p: &StepParams, row: u32) {
    if thread_idx_x() == 0 {
        // SAFETY: row < rows.
        unsafe { (p.exact_flags as *mut u32).add(row as usize).write(0) };
    }
}

/// `sample_rows_body` for one row that stage 2 always decides (`decide::stage2_always_decides`)
/// in a greedy step, by the one stage-1 warp that saw all of the row's tile records written
/// (`tiles::arrive`): the same outputs, status and state update, in the same cases, with the
/// warp's lanes where the block's threads were (bias ids, tiles, top-logprob entries). A row
/// that is not such (the host never puts one in a greedy step) is refused like invalid settings.
///
/// # Safety
/// All 32 lanes call it together, after an acquire that makes every record of the row visible;
/// `row < active rows`; the records are read with volatile loads (no stale L1 line).
#[inline(always)]
pub(crate) unsafe fn finish_greedy_row(p: &StepParams, row: u32, s: &RowSettings) {
    let lane = lane_id();
    // SAFETY (whole warp, uniform branches): reads of this row's records and bias ids; writes of
    // this row's outputs by lane 0 (entries by lanes < 20).
    unsafe {
        if lane == 0 {
            (p.exact_flags as *mut u32).add(row as usize).write(0);
        }
        let basic = settings_in_range(p, s) && stage2_always_decides(s.temperature, s.flags);
        let bad = if basic { bad_bias_ids(p, s, lane, 32) } else { 0 };
        let (mut max_key, mut duplicate) = (0u64, false);
        if basic {
            let mut t = lane;
            while t < p.tiles {
                let (key, flags) = tile_view(p, row, t).fresh_head();
                max_key = if key > max_key { key } else { max_key };
                duplicate |= flags & TILE_DUPLICATE_BIAS != 0;
                t += 32;
            }
        }
        let mut x = 16;
        while x > 0 {
            let other = shfl_xor_u64(FULL_MASK, max_key, x);
            max_key = if other > max_key { other } else { max_key };
            x >>= 1;
        }
        let refused = !basic || ballot(FULL_MASK, bad != 0 || duplicate) != 0;
        if refused || max_key == 0 {
            if lane == 0 {
                if refused {
                    write_outcome(p, row, 0, NO_TOKEN, STATUS_INVALID_SETTINGS, f32::NAN);
                } else {
                    write_outcome(p, row, s.slot, NO_TOKEN, STATUS_NO_VALID_TOKEN, f32::NAN);
                }
            }
            if lane < MAX_TOP_LOGPROBS {
                write_top_entry(p, row, lane, NO_TOKEN, f32::NEG_INFINITY);
            }
        } else if lane == 0 {
            write_outcome(p, row, s.slot, key_index(max_key) as i32, STATUS_OK, f32::NAN);
        }
    }
}

#[inline(always)]
fn empty_summary() -> Summary {
    Summary { max_key: 0, valid: 0, infinite: 0, mc: 0.0, z: 0, mass_ok: false, duplicate_bias: false }
}

// ---------------------------------------------------------------------------------------------
// Stage 3: the exact pass.

/// What a whole-row selection found: keys ≥ `lower` are selected; `mass` is theirs.
#[derive(Clone, Copy)]
struct Selected {
    lower: u64,
    mass: u128,
}

/// Calls `f(tile, keys)` with this thread's 8 keys of every tile of the row (0 where invalid),
/// tile by tile; the next tile's logits are requested before this one is processed, so a pass
/// over the row waits for memory once, not once per tile.
///
/// # Safety
/// The whole block calls it together with the same arguments.
#[inline(always)]
unsafe fn for_each_tile<F: FnMut(u32, [u64; 8])>(p: &StepParams, r: &Row, mut f: F) {
    let first = thread_idx_x() * TOKENS_PER_THREAD;
    // SAFETY: the row exists; load_raw8 clips to the vocab.
    let mut raw = unsafe { load_raw8(p, r.logits, r.vector_ok, first) };
    let mut tile = 0;
    while tile < p.tiles {
        let base = tile * TILE_TOKENS + first;
        // SAFETY: as above (a tile past the last reads nothing).
        let next = unsafe { load_raw8(p, r.logits, r.vector_ok, base + TILE_TOKENS) };
        // SAFETY: uniform call by the whole block.
        let x = unsafe { process_raw8(p, r, tile, raw) };
        f(tile, keys8(&x, base));
        raw = next;
        tile += 1;
    }
}

/// Calls `f(key)` for every valid key of the row with key ≥ `floor`, each thread for its own
/// tokens, tile by tile.
///
/// # Safety
/// The whole block calls it together with the same arguments.
#[inline(always)]
unsafe fn for_each_key<F: FnMut(u64)>(p: &StepParams, r: &Row, floor: u64, mut f: F) {
    // SAFETY: forwarded.
    unsafe {
        for_each_tile(
            p,
            r,
            #[inline(always)]
            |_, keys| {
                each8(|j| {
                    if keys[j] != 0 && keys[j] >= floor {
                        f(keys[j]);
                    }
                })
            },
        )
    }
}

/// Like [`for_each_key`], but calls `f` for every one of the thread's 8 slots of every tile,
/// with key 0 where there is no valid key ≥ `floor`, so warps stay converged for warp-wide
/// instructions inside `f`.
///
/// # Safety
/// The whole block calls it together with the same arguments.
#[inline(always)]
unsafe fn for_each_key_all<F: FnMut(u64)>(p: &StepParams, r: &Row, floor: u64, mut f: F) {
    // SAFETY: forwarded.
    unsafe {
        for_each_tile(
            p,
            r,
            #[inline(always)]
            |_, keys| each8(|j| f(if keys[j] != 0 && keys[j] >= floor { keys[j] } else { 0 })),
        )
    }
}

/// Count and mass of the row's keys ≥ `floor`.
#[inline(always)]
unsafe fn count_mass_from(p: &StepParams, r: &Row, sum: &Summary, floor: u64) -> (u32, u128) {
    let (mut count, mut mass) = (0u32, 0u128);
    // SAFETY: uniform call by the whole block.
    unsafe {
        for_each_key(p, r, floor, |key| {
            count += 1;
            mass += sum.weight_of(key);
        });
        (block_sum_u32(count), block_sum_u128(mass))
    }
}

/// What a selection stops at: the first position whose running count reaches `k`, or whose
/// running mass reaches `p24 / 2^24` of `total`.
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

/// Exact selection over the whole row, in key order among keys ≥ `floor`: the shortest prefix
/// that reaches `target`. MSD radix on 8-bit digits with count and mass histograms until the
/// bucket holding the boundary fits in `SM_SORT`, then a sort of that bucket.
///
/// # Safety
/// The whole block calls it together; the target is reachable by the keys ≥ `floor`.
#[inline(always)]
unsafe fn select_exact(p: &StepParams, r: &Row, sum: &Summary, floor: u64, target: Target) -> Selected {
    let tid = thread_idx_x();
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
            for_each_key_all(p, r, floor, #[inline(always)] |key| {
                // Every lane comes here (key 0 for none), so the warp can aggregate: lanes with
                // the same digit add their count and mass once (64-bit shared atomics are CAS
                // loops on Hopper, and flat rows put most tokens in one digit).
                let counted = key != 0 && in_bucket(key, prefix, level);
                let digit = if counted { ((key >> shift) & 255) as u32 } else { NO_BAND };
                let w = if counted { sum.weight_of(key) } else { 0 };
                let peers = match_any_sync(FULL_MASK, digit);
                // W <= 2^75 (< 2^84): four 21-bit limbs, each summed over at most 32 lanes without overflow.
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
                    ((ld_shared_u64(smem(SM_HIST_HI + d * 8)) as u128) << 64)
                        | ld_shared_u64(smem(SM_HIST_LO + d * 8)) as u128,
                )
            } else {
                (0, 0)
            };
            let (c_before, _) = block_exclusive_scan_u32(h);
            let (m_before, _) = block_exclusive_scan_u128(m);
            if tid == 0 {
                // Fallback if rounding ever left the target unreached: the last digit.
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
            // Everything above the chosen digit is inside the selection.
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
        if tid == 0 {
            st_shared_u32(smem(RES_COUNTER), 0);
        }
        sync_threads();
        for_each_key(p, r, floor, |key| {
            if in_bucket(key, prefix, level) {
                let pos = atom_add_shared_u32(smem(RES_COUNTER), 1);
                if pos < MERGE_CAPACITY {
                    st_shared_u64(smem(SM_SORT + pos * 8), key);
                }
            }
        });
        sync_threads();
        let n = ld_shared_u32(smem(RES_COUNTER));
        let n = if n < MERGE_CAPACITY { n } else { MERGE_CAPACITY };
        sync_threads();
        pad_and_sort!(n, tid);
        // `OWN` a thread, as before stage 2 spread its lists (every entry is the thread's): this
        // pass is seldom run, and the thin spread cost its inlining kernels 40–264 B more spills
        // (ptxas, session 52).
        let held = OWN as u32;
        let first = tid * held;
        let (keys, prefix_mass) = sorted_prefix_masses(n, held, sum);
        let mut hit = u32::MAX;
        each_own(|q| {
            let i = first + q as u32;
            if i < n && hit == u32::MAX && target.reached(acc_count + i + 1, acc_mass + prefix_mass[q]) {
                hit = i;
            }
        });
        let hit = block_min_u32(hit);
        let hit = if hit == u32::MAX { if n > 0 { n - 1 } else { 0 } } else { hit };
        let mut mine = None;
        each_own(|q| {
            if first + q as u32 == hit {
                mine = Some(acc_mass + prefix_mass[q]);
                st_shared_u64(smem(RES_SELECT + 16), keys[q]);
            }
        });
        let mass = broadcast_u128(mine);
        let lower = ld_shared_u64(smem(RES_SELECT + 16));
        sync_threads();
        Selected { lower, mass }
    }
}

/// The single-block exact pass: finishes a flagged row exactly from its logits, with one block
/// doing every pass over the row (`exact::exact_finish` calls it for the rows the split pass
/// does not take: infinite rows, rows without band masses, rows past the split scratch).
///
/// # Safety
/// The whole block calls it together; `row < rows` was flagged by stage 2 of this step.
#[inline(always)]
pub(crate) unsafe fn exact_single(p: &StepParams, row: u32) {
    // SAFETY: as in stage 2; stage 2 validated this row before flagging it.
    unsafe {
        let s = read_settings(p, row);
        let r = row_setup(&p, row, s);
        let mut sum = summarize::<false>(&p, row);
        if !sum.mass_ok {
            // Bands were not usable (huge ceilings): take the mass token by token.
            let (_, z) = count_mass_from(&p, &r, &sum, 1);
            sum.z = z;
            sum.mass_ok = true;
        }
        let ln_z = if sum.infinite_row() { 0.0 } else { ln_mass(sum.z) };
        let want_lp = s.flags & ROW_WANT_LOGPROB != 0;
        let n_top = top_n(&s);
        if n_top > 0 {
            let k = if n_top < sum.valid { n_top } else { sum.valid };
            let top = select_exact(&p, &r, &sum, 1, Target::Count(k));
            if tid_zero() {
                st_shared_u32(smem(RES_COUNTER), 0);
            }
            sync_threads();
            for_each_key(&p, &r, top.lower, |key| {
                let pos = atom_add_shared_u32(smem(RES_COUNTER), 1);
                if pos < MAX_TOP_LOGPROBS {
                    st_shared_u64(smem(SM_SORT + pos * 8), key);
                }
            });
            sync_threads();
            let n = ld_shared_u32(smem(RES_COUNTER));
            let n = if n < MAX_TOP_LOGPROBS { n } else { MAX_TOP_LOGPROBS };
            sync_threads();
            let mut i = n + thread_idx_x();
            while i < 32 {
                st_shared_u64(smem(SM_SORT + i * 8), 0);
                i += SAMPLER_THREADS;
            }
            sync_threads();
            block_sort_desc(32);
            write_top(&p, row, n_top, n, &sum, ln_z);
        }
        let lp_of = |key: u64| if want_lp { sum.logprob_of(key, ln_z) } else { f32::NAN };
        if s.temperature == 0.0 {
            finish(&p, row, s.slot, key_index(sum.max_key) as i32, STATUS_OK, lp_of(sum.max_key));
            return;
        }
        // K1 = keys ≥ floor1: min-p is a key bound; top-k a count selection on top of it.
        let floor_m = min_p_floor(sum.max_key, s.min_p);
        let (n_m, z_m) = if floor_m == 1 { (sum.valid, sum.z) } else { count_mass_from(&p, &r, &sum, floor_m) };
        let k1 = if s.top_k == 0 || s.top_k > n_m { n_m } else { s.top_k };
        let (floor1, z1) = if k1 < n_m {
            let sel = select_exact(&p, &r, &sum, floor_m, Target::Count(k1));
            (sel.lower, sel.mass)
        } else {
            (floor_m, z_m)
        };
        let (kept_floor, z_kept) = if top_p_disabled(s.top_p) {
            (floor1, z1)
        } else {
            let sel = select_exact(&p, &r, &sum, floor1, Target::Mass { total: z1, p24: top_p_units(s.top_p) });
            (sel.lower, sel.mass)
        };
        let u = draw_target(z_kept, draw(&p, s.slot));
        // Index-order walk over the kept keys, tile by tile.
        let mut acc = 0u128;
        let mut key = 0u64;
        let mut tile = 0;
        let first = thread_idx_x() * TOKENS_PER_THREAD;
        let mut raw = load_raw8(&p, r.logits, r.vector_ok, first);
        while tile < p.tiles {
            let base = tile * TILE_TOKENS + first;
            // The next tile's logits are requested before this one's sum waits on a barrier.
            let next = load_raw8(&p, r.logits, r.vector_ok, base + TILE_TOKENS);
            let x = process_raw8(&p, &r, tile, raw);
            let keys = keys8(&x, base);
            raw = next;
            let mut mine = 0u128;
            each8(|j| {
                if keys[j] != 0 && keys[j] >= kept_floor {
                    mine += sum.weight_of(keys[j]);
                }
            });
            let m = block_sum_u128(mine);
            if u < acc + m {
                key = walk_tile(&p, &r, &sum, tile, u - acc, kept_floor);
                break;
            }
            acc += m;
            tile += 1;
        }
        finish_chosen(&p, row, s.slot, key, lp_of(key));
    }
}

#[inline(always)]
fn tid_zero() -> bool {
    thread_idx_x() == 0
}
