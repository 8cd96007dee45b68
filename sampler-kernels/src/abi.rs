//! The one ABI module: `#[repr(C)]` parameter structs that the host writes and the kernels read.
//!
//! Every struct here is passed by value as the single parameter of its kernel, so its layout
//! *is* the launch ABI. Size and alignment are pinned by `const` asserts that compile on both
//! targets: a field added on one side without the other fails the build, not a launch.
//! Device pointers travel as `u64` so the struct means the same on the host and the GPU.

/// Parameters of `demo_reduce_rows`: one block per row, exact `u32` sum and max per row.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DemoReduceParams {
    /// Device pointer to `rows * row_stride` `u32` values, 16-byte aligned.
    pub input: u64,
    /// Device pointer to `rows * 2` `u32`: `[sum, max]` per row.
    pub output: u64,
    /// Elements per row that take part.
    pub row_len: u32,
    /// Distance between row starts, in elements; a multiple of 4 so rows stay 16-byte aligned.
    pub row_stride: u32,
    /// Number of rows; the grid must have exactly this many blocks.
    pub rows: u32,
    /// Keeps the size a multiple of 8 on both targets.
    pub _pad: u32,
}

const _: () = assert!(core::mem::size_of::<DemoReduceParams>() == 32);
const _: () = assert!(core::mem::align_of::<DemoReduceParams>() == 8);

/// Threads per block of `demo_reduce_rows`; the kernel's shared scratch is sized for it.
pub const DEMO_BLOCK_THREADS: u32 = 256;
/// Dynamic shared memory `demo_reduce_rows` needs: one `[sum, max]` pair per warp.
pub const DEMO_SHARED_BYTES: u32 = (DEMO_BLOCK_THREADS / 32) * 8;

// ---------------------------------------------------------------------------------------------
// The sampler step: seven kernels (`sample_tiles`, `sample_tiles_mass`, `sample_rows`,
// `exact_histogram`, `exact_bins`, `exact_gather`, `exact_finish`), or four with `exact_tail`
// for the last four, share one parameter struct, `StepParams`, and read per-row settings from
// device memory. A greedy step is one kernel, `sample_tiles_greedy`.

/// Threads per block of every sampler kernel.
pub const SAMPLER_THREADS: u32 = 512;
/// Tokens each thread of a tile handles (two 16-byte loads of f32, one of bf16/f16).
pub const TOKENS_PER_THREAD: u32 = 8;
/// Tokens per vocab tile: one stage-1 block, one chunk of the exact pass.
pub const TILE_TOKENS: u32 = SAMPLER_THREADS * TOKENS_PER_THREAD;
/// Candidates each tile keeps for stage 2, in key order.
pub const TILE_CANDIDATES: usize = 32;
/// Mass bands per tile: offsets 0..=36 below the tile's ceiling (docs/SEMANTICS.md).
pub const MASS_BANDS: usize = 37;
/// Largest merged candidate list stage 2 sorts in shared memory; longer rows take the exact pass.
pub const MERGE_CAPACITY: u32 = 2048;
/// Largest vocabulary: the fixed-point mass bounds of docs/SEMANTICS.md hold up to 2^20 tokens.
pub const MAX_VOCAB: u32 = 1 << 20;
/// Most tiles a row may have (stage 2 scans tile masses with one thread per tile).
pub const MAX_TILES: u32 = MAX_VOCAB / TILE_TOKENS;
const _: () = assert!(MAX_TILES <= SAMPLER_THREADS);
/// Most top log-probabilities a row may ask for.
pub const MAX_TOP_LOGPROBS: u32 = 20;

/// Logit element types, as `StepParams::dtype`.
pub const DTYPE_F32: u32 = 0;
pub const DTYPE_BF16: u32 = 1;
pub const DTYPE_F16: u32 = 2;

/// `RowSettings::flags`: the row has a grammar bitmask row.
pub const ROW_HAS_BITMASK: u32 = 1 << 0;
/// `RowSettings::flags`: write the chosen token's log-probability.
pub const ROW_WANT_LOGPROB: u32 = 1 << 1;
/// `RowSettings::flags`: bits 8..16 hold the number of top log-probabilities (≤ 20).
pub const ROW_TOP_LOGPROBS_SHIFT: u32 = 8;

/// One batch row's settings, in device memory, rewritten by the host before each step (one
/// copy for the whole batch) or by the caller directly. The kernels check every field they use
/// and answer garbage with `STATUS_INVALID_SETTINGS` for that row alone.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RowSettings {
    pub temperature: f32,
    pub top_p: f32,
    pub min_p: f32,
    pub repetition_penalty: f32,
    pub frequency_penalty: f32,
    pub presence_penalty: f32,
    /// 0 disables top-k.
    pub top_k: u32,
    /// Request slot: row of the penalty counts, seed and step arrays.
    pub slot: u32,
    /// First logit-bias entry of this row in the step's bias arrays.
    pub bias_offset: u32,
    /// Number of logit-bias entries (token ids distinct, checked by the host).
    pub bias_len: u32,
    /// `ROW_*` flags.
    pub flags: u32,
    pub _pad: u32,
}

const _: () = assert!(core::mem::size_of::<RowSettings>() == 48);
const _: () = assert!(core::mem::align_of::<RowSettings>() == 4);

/// What stage 1 leaves for stage 2 about one (row, tile).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TileRecord {
    /// The tile's largest packed keys, largest first; 0 pads. `candidates[0]` is the tile max
    /// (greedy rows without log-probabilities get that one only).
    pub candidates: [u64; TILE_CANDIDATES],
    /// `band_mass[d]`: Σ frac_weight over the tile's tokens whose ceiling is `band_ceiling - d`.
    pub band_mass: [u64; MASS_BANDS],
    /// `soft_ceil` of the tile's largest value (meaningful under `TILE_HAS_MASS`).
    pub band_ceiling: f32,
    /// Tokens with a processed value above -inf.
    pub valid: u32,
    /// Tokens whose processed value is +inf.
    pub infinite: u32,
    /// `TILE_*` flags: whether `band_mass` was computed, and whether the tile met a duplicate bias id.
    pub flags: u32,
}

const _: () = assert!(core::mem::size_of::<TileRecord>() == 8 * (TILE_CANDIDATES + MASS_BANDS) + 16);
const _: () = assert!(core::mem::align_of::<TileRecord>() == 8);

/// `TileRecord::flags`: `band_mass` was computed (rows that need the row mass).
pub const TILE_HAS_MASS: u32 = 1 << 0;
/// `TileRecord::flags`: a token of the tile has two bias entries (device-written garbage).
pub const TILE_DUPLICATE_BIAS: u32 = 1 << 1;

/// `StepParams::slot_flags`: stage 2 found the request's last step *wide*, a top-p row whose
/// nucleus no merge of the tile lists could hold (`decide::top_p_within`). Stage 1 then skips
/// the lists of the request's next top-p row (`sampler::lists_skipped`). A hint: the tokens
/// are the same either way.
pub const SLOT_WIDE: u32 = 1 << 0;

/// The parameter of all three sampler kernels. Pointers are device addresses.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepParams {
    /// Logits, `rows` rows of `vocab` elements of `dtype`, rows `row_stride` elements apart.
    pub logits: u64,
    pub row_stride: u64,
    /// `u32` in device memory: rows active in this step (≤ `rows`); the rest of the grid idles.
    pub active_rows: u64,
    /// `RowSettings[rows]`, 16-byte aligned (kernels read each entry as three 16-byte loads).
    pub settings: u64,
    /// `u32[1 + rows]`, written by the host with the settings: how many rows need the row mass
    /// (`decide::needs_row_mass`), then their indices, ascending. `sample_tiles_mass` scans the
    /// listed rows' tiles alone. A list may hold more rows (every row, after a raw write of
    /// settings): the kernel tests each listed row again.
    pub mass_rows: u64,
    /// `u32[1 + rows]`, written by the host beside `mass_rows`: how many rows need no row mass,
    /// then their indices, ascending. When the two stage-1 kernels run side by side
    /// (`overlap_stage1`) and `tile_split` is 1, `sample_tiles_ring` gives its warps to the
    /// listed rows' tiles alone, two a tile where they fit (`listed_scan_split`); otherwise the
    /// list is not read. Like `mass_rows`, it may hold more rows (every row, after a raw write
    /// of settings).
    pub scan_rows: u64,
    /// Grammar bitmask, `i32[rows][bitmask_words]`; rows without `ROW_HAS_BITMASK` ignore it.
    pub bitmask: u64,
    /// Step bias arrays: `u32` token ids and `f32` values.
    pub bias_tokens: u64,
    pub bias_values: u64,
    /// Penalty state: `u32[slots][counts_stride]`, bit 31 = seen in the prompt, bits 0..31 = output count.
    pub counts: u64,
    /// Per slot `u64` seed and step counter.
    pub seeds: u64,
    pub steps: u64,
    /// `u32[slots]` of `SLOT_*` flags that stage 2 leaves for the request's next step, or 0
    /// (no flags: every row builds the lists its settings call for).
    pub slot_flags: u64,
    /// `TileRecord[rows][tiles]`.
    pub records: u64,
    /// `u32[rows]`: how stage 2 left the row to the exact pass (`EXACT_*`; 0 = it did not).
    pub exact_flags: u64,
    /// `u32[EXACT_LIST_HEAD + rows]`: how many rows stage 2 left to the exact pass, how many
    /// items `exact_tail` has handed out, how many of the split rows are not warp rows
    /// (`EXACT_LIST_BLOCK_ROWS`), then the rows' indices (in no particular order). Stage 1
    /// clears the three counts.
    pub exact_list: u64,
    /// Scratch of the split exact pass, per list position below `exact_slots`: `ExactJob[slots]`,
    /// histogram counts `u32[slots][EXACT_BINS]` and fraction sums `u64[slots][EXACT_BINS]`
    /// (zero between steps), gathered keys `u64[slots][EXACT_GATHER_KEYS]`, and the mass of each
    /// tile's surely kept keys, `u64[slots][tiles][2]` (low, high halves). In band mode
    /// (`ExactJob::band`) the histogram is per tile instead: `u64[slots][tiles][EXACT_SUB_BINS]`,
    /// each the two words of a shared-memory bin (low: count and high fraction bits; high: low
    /// fraction bits), every tile's written by `exact_histogram` before `exact_bins` reads them.
    pub exact_jobs: u64,
    pub exact_counts: u64,
    pub exact_sums: u64,
    pub exact_keys: u64,
    pub exact_tile_mass: u64,
    pub exact_tile_bins: u64,
    /// Warp rows' band codes, `u8[slots][tiles · TILE_TOKENS]`: `exact_histogram_runs` writes
    /// each token's sub-bin of the boundary band (a byte of at least `EXACT_SUB_BINS` outside
    /// it), and `exact_gather_runs` reads them instead of the logits, then the logits of the
    /// boundary sub-bin's tokens alone.
    pub exact_codes: u64,
    /// Outputs: `i32[rows]` tokens, `u32[rows]` status, `f32[rows]` log-probabilities,
    /// `i32[rows][20]` and `f32[rows][20]` top log-probabilities.
    pub out_tokens: u64,
    pub out_status: u64,
    pub out_logprobs: u64,
    pub out_top_tokens: u64,
    pub out_top_logprobs: u64,
    /// `u32[rows]`, zero between steps: in a greedy step (`sample_tiles_greedy` or
    /// `sample_tiles_greedy_pairs`), the tile records of the row written so far; the warp that
    /// counts the last one finishes the row and zeroes its count.
    pub row_arrivals: u64,
    pub dtype: u32,
    pub vocab: u32,
    pub rows: u32,
    pub tiles: u32,
    pub bitmask_words: u32,
    pub bias_capacity: u32,
    pub slots: u32,
    pub counts_stride: u32,
    /// List positions the split exact pass has scratch for (≤ `EXACT_SLOTS_MAX`).
    pub exact_slots: u32,
    /// Warps of `sample_tiles` per (row, tile): 1, 2, 4 or 8 (`scan_split`); any other value
    /// scans with one.
    pub tile_split: u32,
    /// Nonzero: `sample_tiles` lets `sample_tiles_mass` launch at its start, so that the two
    /// stage-1 kernels run side by side (the host sets it for grids of up to six waves,
    /// `overlap_stage1`).
    pub overlap_stage1: u32,
    /// `sample_tiles` warps the GPU holds at once (the host's occupancy count, the fewer of its
    /// two builds'): the bound `listed_scan_split` keeps a listed grid's warps under.
    pub scan_resident_warps: u32,
}

const _: () = assert!(core::mem::size_of::<StepParams>() == 29 * 8 + 12 * 4);
const _: () = assert!(core::mem::align_of::<StepParams>() == 8);

/// Bytes of dynamic shared memory `sample_rows`, `exact_bins`, `exact_gather` and `exact_finish`
/// are launched with.
pub const SAMPLER_SHARED_BYTES: u32 = 40 * 1024;

// The split exact pass (`exact.rs`). Most rows stage 2 cannot decide from the tile lists are
// finished by four kernels: a mass histogram of the row over many blocks, a per-row choice of
// the histogram bins that hold its top-k and top-p boundaries, a second pass over many blocks
// that gathers the keys of those bins and sums the rest per tile, and a per-row finish.

/// `exact_flags` values.
/// The single-block exact pass finishes the row (rows the split pass cannot take).
pub const EXACT_SINGLE: u32 = 1;
/// The split exact pass finishes the row.
pub const EXACT_SPLIT: u32 = 2;
/// Words before the row indices in `StepParams::exact_list`: the listed count,
/// `exact_tail`'s queue, and the count of split rows that are not warp rows.
pub const EXACT_LIST_HEAD: u32 = 3;
/// The word of `StepParams::exact_list` that counts the split rows that are not *warp rows*
/// (band mode without logit bias). While it is 0, `exact_histogram_runs` and
/// `exact_gather_runs` take the rows a warp per run of rounds instead of a block per tile, when
/// the step has enough rounds ([`warp_row_run`]).
pub const EXACT_LIST_BLOCK_ROWS: u32 = 2;

/// Whether a split row is a *warp row*: in band mode (its `ExactJob::band`, `$band`, is a band,
/// not `u32::MAX`) and without logit bias (`RowSettings::bias_len`, `$bias_len`). Stage 2 counts
/// the split rows that are not (`EXACT_LIST_BLOCK_ROWS`), and the warp-run path takes only those
/// that are: one definition, so the count and the path agree. A macro, not a function: as a
/// function it changed the SASS of the measured `_runs` builds (session 30). Device code only.
#[cfg(target_arch = "nvptx64")]
macro_rules! is_warp_row {
    ($band:expr, $bias_len:expr) => {
        $band != u32::MAX && $bias_len == 0
    };
}
#[cfg(target_arch = "nvptx64")]
pub(crate) use is_warp_row;
/// Histogram bins per mass band (1/128 nat wide): a bin of a flat 262144-token row holds
/// about 1,700 tokens, so the boundary bins fit `EXACT_GATHER_KEYS`.
pub const EXACT_SUB_BINS: u32 = crate::fixed::EXACT_SUB_BINS;
/// Bins of a row (`fixed::exact_bin`): 37 bands × `EXACT_SUB_BINS`, then one for the tokens that
/// weigh nothing.
pub const EXACT_BINS: u32 = crate::fixed::EXACT_ZERO_BIN + 1;
const _: () = assert!(EXACT_BINS == MASS_BANDS as u32 * EXACT_SUB_BINS + 1);
/// Keys of the boundary bins a row may gather; a row with more takes the single-block pass.
pub const EXACT_GATHER_KEYS: u32 = 4096;
/// Rows per step the split pass takes (its scratch is per row); the rest take the single-block pass.
pub const EXACT_SLOTS_MAX: u32 = 256;
/// Dynamic shared memory of `exact_histogram` and `exact_tail`: the sampler map up to its sort buffer (the bias
/// table of the prologue), then two `u32` per bin (the count packed with the fraction sum's
/// high bits, and its low bits).
pub const EXACT_HIST_SHARED_BYTES: u32 = (22528 + 2 * EXACT_BINS * 4).next_multiple_of(1024);

/// One row's state in the split exact pass. Stage 2 writes the first part; `exact_bins` the
/// rest. u128 values are split into (low, high) u64 halves: u128 alignment differs between the
/// host and the device.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExactJob {
    /// The row's largest key.
    pub max_key: u64,
    /// The row mass Z (all valid tokens), when `mass_ok`: log-probabilities need it.
    pub z: [u64; 2],
    pub row: u32,
    pub mass_ok: u32,
    /// Mass of the keys ≥ the min-p floor (`exact_bins` on).
    pub z_m: [u64; 2],
    /// Count and mass of the keys in bins before `bin_k`.
    pub mass_before_k: [u64; 2],
    /// Mass of the keys in bins before `bin_p_lo`.
    pub mass_before_p: [u64; 2],
    /// Surviving count after min-p and top-k.
    pub k1: u32,
    pub count_before_k: u32,
    /// Bin of the k1-th key, `u32::MAX` when top-k keeps every survivor of min-p.
    pub bin_k: u32,
    /// Bins the top-p boundary can fall in (`u32::MAX` with top-p off).
    pub bin_p_lo: u32,
    pub bin_p_hi: u32,
    /// Keys in bins before this one are kept for sure.
    pub sure_end: u32,
    /// Keys `exact_gather` stored.
    pub gathered: u32,
    /// `exact_tail`'s arrivals: the histogram tiles count it up to `tiles`, the chosen bins set
    /// it to `tiles + 1`, and the gather tiles count on from there.
    pub tiles_done: u32,
    /// Band mode (stage 2 on): the row band (`mc − ceil(x)`) where the top-p boundary lies,
    /// `u32::MAX` for a row the split pass bins whole. A row with top-p but no min-p and no
    /// effective top-k keeps every key of the bands before it, so only this band is binned,
    /// per tile (`StepParams::exact_tile_bins`).
    pub band: u32,
    /// Band mode (`exact_bins` on): the bounds, as f32 bits, of the values in the boundary bin,
    /// the only tokens `exact_gather` stores.
    pub gather_lo: u32,
    pub gather_hi: u32,
    pub _pad: u32,
    /// Band mode (stage 2 on): the mass of the bands before `band`.
    pub mass_before_band: [u64; 2],
}

const _: () = assert!(core::mem::size_of::<ExactJob>() == 8 * 11 + 4 * 14);
const _: () = assert!(core::mem::align_of::<ExactJob>() == 8);

/// Stage 1 is two kernels over the same grid of (row, tile) warps, each skipping the other's
/// rows: `sample_tiles` for rows that need no row mass, `sample_tiles_mass` for the others
/// (whose band sums take shared memory the rest should not pay for in occupancy). Each warp
/// scans one (row, tile) on its own, with no block barrier.
pub const SCAN_WARPS: u32 = 8;
/// Threads per `sample_tiles` block.
pub const SCAN_THREADS: u32 = SCAN_WARPS * 32;
/// Shared memory of one scanning warp: the candidate buffer (288 keys), and the tile's bias
/// bitmap (128 words) and list (64 entries).
pub const SCAN_WARP_SHARED_BYTES: u32 = 288 * 8 + 128 * 4 + 64 * 8;
/// Dynamic shared memory of `sample_tiles`.
pub const SCAN_SHARED_BYTES: u32 = SCAN_WARPS * SCAN_WARP_SHARED_BYTES;
/// Shared memory of one `sample_tiles_ring` warp: [`SCAN_WARP_SHARED_BYTES`], then its ring of
/// [`MASS_RING_ROUNDS`] rounds of logits (8 f32 a lane each, or 8 half-width values in the
/// first half; `tiles::ring_fetch`).
pub const SCAN_RING_WARP_SHARED_BYTES: u32 = SCAN_WARP_SHARED_BYTES + MASS_RING_ROUNDS * 8 * 32 * 4;
/// Dynamic shared memory of `sample_tiles_ring` (58 KiB, over the default 48 KiB a launch may
/// ask, which the host raises): three blocks fit an SM of the H200 (227 KiB), as many as
/// `sample_tiles`' 80 registers allow.
pub const SCAN_RING_SHARED_BYTES: u32 = SCAN_WARPS * SCAN_RING_WARP_SHARED_BYTES;
const _: () = assert!(SCAN_RING_SHARED_BYTES == 58 * 1024);
/// Warps of `sample_tiles` per (row, tile) for a grid of `items` (row, tile) pairs on a GPU
/// that holds `resident` of its warps at once (the host asks the occupancy calculator): the
/// most of 8, 4, 2, 1 that keeps every warp resident. A lone warp scans its
/// 16 rounds one after another, so small batches leave the GPU idle and wait on that chain;
/// split, each warp scans 16 / split rounds and the first merges the others' results (the
/// same record: exact top 32, summed counts). Large batches fill the GPU with one warp per
/// tile, where the merge would only add work.
pub const fn scan_split(items: u32, resident: u32) -> u32 {
    let mut split = SCAN_WARPS;
    while split > 1 && items as u64 * split as u64 > resident as u64 {
        split /= 2;
    }
    split
}
/// Tiles each warp of a greedy step scans, one after the other, on a grid of `items`
/// (row, tile) pairs that `scan_split` gives one warp a tile: 2 (`sample_tiles_greedy_pairs`)
/// where the two-tile warps still number twice what the GPU holds (`resident`), else 1
/// (`sample_tiles_greedy`). A warp's fixed costs (its first loads' wait, the settings, the
/// arrival's fence and atomic) then come once per two tiles, and its logits stream on across
/// the boundary. Measured (session 49): bf16 (8 KB tiles) 0.89–0.96× the time where the pairs
/// were 2.6 or more waves of resident warps, but 1.02–1.03× where they were 1.3–1.5 (a longer
/// chain per warp, fewer warps to even out the last wave); f32 (16 KB) 0.97–1.00× at 2.6 waves
/// and more.
pub const fn greedy_span(items: u32, tiles: u32, split: u32, resident: u32) -> u32 {
    if split == 1 && tiles > 1 && items as u64 >= 4 * resident as u64 {
        2
    } else {
        1
    }
}
/// Spans of `span` tiles a row of `tiles` tiles has (its last may hold fewer). One tile a
/// span is `tiles` without a division: the kernels' span is a run-time select.
#[inline(always)]
const fn spans_per_row(tiles: u32, span: u32) -> u32 {
    if span > 1 { tiles.div_ceil(span) } else { tiles }
}
/// The (row, first tile) of span `g` of a greedy grid whose warps scan `span` tiles each
/// (`greedy_span`): a row's spans are consecutive.
#[inline(always)]
pub const fn greedy_span_item(g: u32, tiles: u32, span: u32) -> (u32, u32) {
    let spans = spans_per_row(tiles, span);
    (g / spans, g % spans * span)
}
/// Warps a greedy grid of `rows` rows takes at `span` tiles a warp (one part a tile): what the
/// host launches `sample_tiles_greedy_pairs` with.
pub const fn greedy_spans(rows: u32, tiles: u32, span: u32) -> u32 {
    rows * spans_per_row(tiles, span)
}
/// Whether `sample_tiles_ring` takes the rows `StepParams::scan_rows` lists instead of every
/// row: beside the mass scan (`overlap_stage1`), on a grid of one warp a tile, the one split
/// `listed_scan_split` can raise. The host launches such a grid with every warp the GPU holds;
/// the kernel reads the list only then, and only in the ring build (one wave, `one_wave`):
/// `sample_tiles` and `sample_tiles_half` beside the mass scan on grids of several waves scan
/// every row, a mass row's warps exiting.
#[inline(always)]
pub const fn lists_scan_rows(overlap_stage1: u32, tile_split: u32) -> bool {
    overlap_stage1 != 0 && tile_split == 1
}
/// Warps of `sample_tiles` per (row, tile) when it scans only the `items` (row, tile) pairs of
/// the rows `StepParams::scan_rows` lists, on a grid of `launched` warps, on a GPU that holds
/// `resident` of them, where the host's split for every row is `split` (`scan_split`): two
/// when the host's is one and twice the items fit both bounds, else the host's. In a mixed
/// step about half the rows are the mass scan's, and their warps in `sample_tiles` would only
/// exit; listed, the other rows' tiles take those warps, and each warp's chain of 16 rounds
/// halves. One step only, the one measured to pay (session 41, on the H200: heterogeneous
/// B = 64 0.926–0.958× the time at V ≥ 128256); from four warps a tile to eight (V = 32000)
/// measured 1.004–1.025×, and two to four was not measured.
pub const fn listed_scan_split(items: u32, launched: u32, resident: u32, split: u32) -> u32 {
    let cap = if launched < resident { launched } else { resident };
    match split {
        2 | 4 | 8 => split,
        _ if items as u64 * 2 <= cap as u64 => 2,
        _ => 1,
    }
}
/// Whether `sample_tiles` lets `sample_tiles_mass` start beside it (`StepParams::overlap_stage1`)
/// for `rows` rows whose `items` (row, tile) pairs it scans `split` warps each, on a GPU that
/// holds `resident` of its warps: for grids of up to `OVERLAP_STAGE1_WAVES` waves, and for two
/// rows or more (one row has work in one of the two kernels only, and running them together
/// measured 5 µs slower for a mass row at B = 1). Until session 50 one wave only, after
/// session 8 measured heterogeneous B = 1024 6% slower beside a grid of twelve waves.
pub const fn overlap_stage1(rows: u32, items: u32, split: u32, resident: u32) -> bool {
    rows >= 2 && items as u64 * split as u64 <= OVERLAP_STAGE1_WAVES as u64 * resident as u64
}
/// The most waves of `sample_tiles` warps beside which `sample_tiles_mass` starts
/// (`overlap_stage1`). On the H200 (session 50, run 2, heterogeneous steps against one wave):
/// 1.3 waves (V = 262144, B = 64) 0.965× the time, 2.6 (V = 128256, B = 256; V = 32000,
/// B = 1024) 0.975× and 0.949×, 3.1 (V = 151936, B = 256) 0.956×, 5.2 (V = 262144, B = 256)
/// 0.987–0.992×; a bound of 3 gave the same where it applied. Grids of ten waves (V = 128256,
/// B = 1024) stay apart: not measured since session 8.
pub const OVERLAP_STAGE1_WAVES: u32 = 6;
/// Whether a `sample_tiles` grid of `items` (row, tile) pairs scanned `split` warps each is one
/// wave on a GPU that holds `resident` of its warps: every warp resident at once. Such a grid
/// runs as `sample_tiles_ring` (the host takes `resident` as the fewer of both builds'). In it
/// each warp's own lookahead is what hides its loads, and the ring keeps three rounds in flight
/// for every row (on the H200, session 36: top-k 50 + top-p 0.972–0.988× the time at B ≤ 64,
/// bf16 B = 64 0.916×); in a grid of several waves other warps hide them, and the ring's copies
/// and waits measured slower (top-k 50 at B = 1024 1.008×).
pub const fn one_wave(items: u32, split: u32, resident: u32) -> bool {
    items as u64 * split as u64 <= resident as u64
}
/// Whether stage 2 runs as `sample_rows_two_per_sm` (two 512-thread blocks per SM, 64
/// registers) rather than `sample_rows` (one per SM) for `rows` rows on `sms` SMs, and the
/// exact pass's `exact_bins` and finish as their `_two_per_sm` builds for `rows` rows that
/// stage 2 may list (the host's count from the settings): when one block per SM leaves rows
/// for a second wave. On the H200 the two-per-SM stage 2 measured 1.09–1.11× faster for
/// top-k + top-p at B = 256 and 1024, and 4% slower at B = 1 and 2% at B = 64, where every row
/// fits one wave anyway. Chosen for the exact row kernels by the listable rows, not the batch,
/// heterogeneous B = 256 steps (about a third of their rows listable) took 0.968–0.986× the
/// time, and steps whose every row may be listed are unchanged (session 51).
pub const fn rows_two_per_sm(rows: u32, sms: u32) -> bool {
    rows > sms
}

/// Tokens in a *round* of a warp item: 32 lanes of `TOKENS_PER_THREAD`.
pub const WARP_ROUND_TOKENS: u32 = 32 * TOKENS_PER_THREAD;
/// Rounds in a tile of `TILE_TOKENS`.
pub const TILE_ROUNDS: u32 = TILE_TOKENS / WARP_ROUND_TOKENS;

/// How `exact_histogram` and `exact_gather` take a step whose `split_rows` split rows are all
/// warp rows (`EXACT_LIST_BLOCK_ROWS` is 0), for rows of `tiles` tiles and `warps` warps in
/// their launch: `Some(run)` gives warp `w` the rounds `w · run .. (w + 1) · run` of the rows'
/// rounds in a row (`tiles · TILE_ROUNDS` a row), so every warp but the last has the same
/// share; `None`, with fewer than 4 rounds a warp, takes them a block per tile.
///
/// A run is rounded up to 4, 8 or a multiple of 16 when that adds at most 2 rounds: its items
/// then never cross a tile (a quarter, a half or whole tiles), and an item costs a warp two
/// round trips of reads before its first round. Session 28's cut of each tile into 1, 2 or 4 parts left warps with
/// two items where the tiles did not fill the grid evenly (V = 151936, B = 64: 4864 parts for
/// 4224 warps); unrounded runs (session 29, run 4) were 2% slower than those parts at
/// V = 128256, B = 64, where a run of 7 rounds often crossed a tile.
pub const fn warp_row_run(split_rows: u32, tiles: u32, warps: u32) -> Option<u32> {
    let rounds = (split_rows as u64 * tiles as u64).saturating_mul(TILE_ROUNDS as u64);
    if warps == 0 || rounds < 4 * warps as u64 {
        return None;
    }
    let run = rounds.div_ceil(warps as u64);
    let aligned = if run <= 4 {
        4
    } else if run <= 8 {
        8
    } else {
        run.div_ceil(TILE_ROUNDS as u64).saturating_mul(TILE_ROUNDS as u64)
    };
    let run = if aligned.saturating_sub(run) <= 2 { aligned } else { run };
    Some(if run > u32::MAX as u64 { u32::MAX } else { run as u32 })
}

/// Item `(position, tile)` of a split exact-pass kernel moved on by a grid of `grid` blocks
/// (items are `position · tiles + tile`), given `(grid / tiles, grid % tiles)` as `step`:
/// without a division per item (`exact::for_each_split_tile`). `tile < tiles`.
#[inline(always)]
pub const fn step_split_item((pos, tile): (u32, u32), (step_pos, step_tile): (u32, u32), tiles: u32) -> (u32, u32) {
    let tile = tile + step_tile;
    if tile >= tiles {
        (pos + step_pos + 1, tile - tiles)
    } else {
        (pos + step_pos, tile)
    }
}

/// Warps per `sample_tiles_mass` block.
pub const MASS_SCAN_WARPS: u32 = 4;
/// Threads per `sample_tiles_mass` block.
pub const MASS_SCAN_THREADS: u32 = MASS_SCAN_WARPS * 32;
/// Rounds of logits a mass-scanning warp holds in shared memory (`tiles::ring_fetch`): the
/// round it scans and the three requested after it.
pub const MASS_RING_ROUNDS: u32 = 4;
/// Shared memory of one mass-scanning warp: lane-private `u32` band sums and a discard row
/// ((37 + 1) × 32 × 4 bytes), then what a `sample_tiles` warp has, then a round's tempered
/// values (8 × 32 × 4 bytes), then the ring of [`MASS_RING_ROUNDS`] rounds of logits (8 f32 a
/// lane each, or 8 half-width values in the first half).
pub const MASS_SCAN_WARP_SHARED_BYTES: u32 =
    (MASS_BANDS as u32 + 1) * 32 * 4 + SCAN_WARP_SHARED_BYTES + 8 * 32 * 4 + MASS_RING_ROUNDS * 8 * 32 * 4;
/// Dynamic shared memory of `sample_tiles_mass` (52 KiB): four blocks still fit an SM of the
/// H200 (227 KiB), which the kernel's 128 registers allow anyway.
pub const MASS_SCAN_SHARED_BYTES: u32 = MASS_SCAN_WARPS * MASS_SCAN_WARP_SHARED_BYTES;
const _: () = assert!(MASS_SCAN_SHARED_BYTES == 52 * 1024);
/// What a part of a split mass tile costs besides its rounds, in rounds, in `mass_split`'s
/// model. Chosen, not fitted: on the H200 a 4-way split at heterogeneous B = 64 (about one
/// tile of 16 rounds per warp unsplit) measured 10% slower, and any figure of 2 or more keeps
/// that case whole; 4 leaves a margin. B = 1 and 8 still split 4 ways under it.
pub const MASS_PART_OVERHEAD_ROUNDS: u32 = 4;
/// Warps of `sample_tiles_mass` per (row, tile) for `items` (row, tile) pairs of its own rows
/// over `warps` persistent warps: 1, 2 or 4 (the warps of a block), whichever finishes first
/// when each warp takes `ceil(items · split / warps)` parts of 16 / split rounds, plus
/// `MASS_PART_OVERHEAD_ROUNDS` for a part's set-up (its first loads wait on memory) and merge
/// (ties go to fewer parts). A tile scanned by one warp is a chain of 16 rounds: at small
/// batches that chain, not the work, was the kernel's time.
pub const fn mass_split(items: u32, warps: u32) -> u32 {
    if items == 0 || warps == 0 {
        return 1;
    }
    let (mut best, mut best_cost) = (1u32, u64::MAX);
    let mut split = 1u32;
    while split <= MASS_SCAN_WARPS {
        let waves = (items as u64 * split as u64).div_ceil(warps as u64);
        let cost = waves * ((TILE_TOKENS / 256) as u64 / split as u64 + MASS_PART_OVERHEAD_ROUNDS as u64);
        if cost < best_cost {
            best = split;
            best_cost = cost;
        }
        split *= 2;
    }
    best
}

// ---------------------------------------------------------------------------------------------
// Benchmark helpers: a copy kernel (the bandwidth ceiling) and a logits generator, so the
// benchmark fills gigabytes on the GPU instead of the host.

/// Parameters of `bench_copy`: `words4` 16-byte words from `src` to `dst`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyParams {
    pub src: u64,
    pub dst: u64,
    pub words4: u64,
}

const _: () = assert!(core::mem::size_of::<CopyParams>() == 24);
const _: () = assert!(core::mem::align_of::<CopyParams>() == 8);

/// Row shapes `bench_fill_logits` draws.
pub const FILL_PEAKED: u32 = 0;
pub const FILL_FLAT: u32 = 1;
/// `FILL_PEAKED` with about 60 more boosted tokens among the row's first `TILE_TOKENS` ids: a
/// frequency-ordered vocabulary puts a row's likely tokens at low ids, so one tile holds most
/// of its best keys (more than a tile list's 32 of a top 50).
pub const FILL_CROWDED: u32 = 2;

/// Parameters of `bench_fill_logits`: `rows × vocab` logits (row stride `row_stride`) of
/// `dtype` (`DTYPE_F32` or `DTYPE_BF16`), drawn from Philox keyed by `seed`: approximately N(0, 2) with about 20 tokens per
/// row boosted by +8..+14 (`FILL_PEAKED`; `FILL_CROWDED` adds about 60 in the first tile), or
/// N(0, 0.5) (`FILL_FLAT`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FillParams {
    pub out: u64,
    pub seed: u64,
    pub row_stride: u64,
    pub rows: u32,
    pub vocab: u32,
    pub dtype: u32,
    pub shape: u32,
}

const _: () = assert!(core::mem::size_of::<FillParams>() == 40);
const _: () = assert!(core::mem::align_of::<FillParams>() == 8);

// ---------------------------------------------------------------------------------------------
// Top-k alone (`topk_chunks`, `topk_merge`; docs/SEMANTICS.md §11): for each row, the k largest
// logits and their indices in key order. Stage 1 keeps each (row, chunk)'s top k; stage 2
// merges a row's chunk lists. With one chunk per row, stage 1 writes the outputs itself.

/// Threads per block of both top-k kernels.
pub const TOPK_THREADS: u32 = 512;
/// Elements a top-k block takes per iteration: 8 per thread (two 16-byte loads of f32, one of
/// bf16/f16, or eight keys in the merge).
pub const TOPK_ITER: u32 = TOPK_THREADS * 8;
/// Largest k the top-k API accepts.
pub const TOPK_MAX_K: u32 = 1024;
/// Keys the candidate buffer holds: a full list of `TOPK_MAX_K` plus one iteration's worst case,
/// so an iteration can always append every survivor before the block selects.
pub const TOPK_BUFFER: u32 = TOPK_MAX_K + TOPK_ITER;
/// Bytes of dynamic shared memory of each top-k kernel: 2 KiB of slots and histogram, then the
/// candidate buffer. Below 48 KiB, so no opt-in attribute is needed.
pub const TOPK_SHARED_BYTES: u32 = 2048 + TOPK_BUFFER * 8;
const _: () = assert!(TOPK_SHARED_BYTES <= 48 * 1024);
/// Most keys stage 2 reads per row (chunks × record stride); bounds the chunk count for large k.
pub const TOPK_MERGE_KEYS: u32 = 16384;

/// The parameter of both top-k kernels. Pointers are device addresses.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TopKParams {
    /// Logits, `rows` rows of `vocab` elements of `dtype`, rows `row_stride` elements apart.
    pub logits: u64,
    pub row_stride: u64,
    /// Chunk lists, `u64[rows][chunks][record_stride]` packed keys, 0 pads (unused when `chunks == 1`).
    pub records: u64,
    /// Outputs, `f32[rows][k]` values and `i32[rows][k]` token indices, in key order.
    pub out_values: u64,
    pub out_indices: u64,
    pub dtype: u32,
    pub vocab: u32,
    pub rows: u32,
    /// 1..=TOPK_MAX_K, at most `vocab`.
    pub k: u32,
    /// Chunks per row: the x extent of stage 1's grid.
    pub chunks: u32,
    /// Tokens per chunk, a multiple of `TOPK_ITER`; `chunks * chunk_len >= vocab`.
    pub chunk_len: u32,
    /// Keys per chunk record: `k` rounded up to a multiple of 8 (64-byte aligned records).
    pub record_stride: u32,
    pub _pad: u32,
}

const _: () = assert!(core::mem::size_of::<TopKParams>() == 5 * 8 + 8 * 4);
const _: () = assert!(core::mem::align_of::<TopKParams>() == 8);
// Speculative verification (docs/SEMANTICS.md §10): `verify_rows` (one block per target row)
// decides each row, `verify_chains` (one thread per request) walks each request's chain and
// advances its state. Both take `VerifyParams` and read per-request settings from device memory.

/// Least draft capacity a GPU verifier is created with.
pub const VERIFY_MIN_DRAFTS: u32 = 8;
/// Most drafts per request on the GPU: a request's drafts are staged in shared memory.
pub const VERIFY_MAX_DRAFTS: u32 = 64;
/// `VerifySettings::q_first` of a request without draft-probability rows (one-hot `q`).
pub const VERIFY_ONE_HOT: u32 = u32::MAX;
/// Threads per block of `verify_chains` (one request per thread).
pub const VERIFY_CHAIN_THREADS: u32 = 128;
/// Bytes of `VerifyParams::group_scratch` per `verify_rows` block: the block's share of a
/// group reduction (up to eight u64 words) and of a radix histogram (256 bins of three u64),
/// each in two alternating halves; then a bin histogram (`u32` counts and `u64` fraction sums,
/// `EXACT_BINS` each) where a group's first block collects the group's (zero between calls).
pub const VERIFY_BLOCK_SCRATCH_BYTES: u32 = 128 + 2 * 256 * 24 + (EXACT_BINS * 4).next_multiple_of(8) + EXACT_BINS * 8;
/// Dynamic shared memory of a `verify_rows` block: the sampler map, whose sort area and what
/// follows it hold the bin histogram of the selection (a tile's packed parts and the row's
/// counts and sums). The kernel runs one 512-thread block per SM (128 registers), so it costs
/// no occupancy.
pub const VERIFY_ROWS_SHARED_BYTES: u32 = (22528 + 3 * EXACT_BINS * 4 + 4 + EXACT_BINS * 8).next_multiple_of(1024);
/// Tokens of a verification chunk: one warp's part of a tile (32 lanes × `TOKENS_PER_THREAD`),
/// the unit of `VerifyParams::chunk_max`.
pub const VERIFY_CHUNK_TOKENS: u32 = 32 * TOKENS_PER_THREAD;
/// Chunks per tile: one per warp of a 512-thread block.
pub const VERIFY_CHUNKS_PER_TILE: u32 = TILE_TOKENS / VERIFY_CHUNK_TOKENS;
const _: () = assert!(VERIFY_CHUNKS_PER_TILE * 32 == SAMPLER_THREADS);
/// Bytes of the head of a target row's scratch: the group's barrier counter, the two
/// selections' gather counters, the draw's count of summed tiles, in a request's first row the
/// request's rejection word and the flag that it is decided, in row 0 the call's two hand-out
/// counters, and the group's counts of blocks that saw the chain stopped and that read the bin
/// histogram back (`u32` each, zero between calls; 16-byte units, which `verify_chains`
/// clears).
pub const VERIFY_ROW_HEAD_BYTES: u32 = 48;

/// Words of a verification call's header (`VerifyParams::header`), and the index of the one
/// that counts its random requests.
pub const VERIFY_HEADER_WORDS: u32 = 8;
pub const VERIFY_HEADER_RANDOM: u32 = 4;
/// Bytes of `VerifyParams::row_scratch` per target row: the head, two generations of per-tile
/// draw sums (`U256[MAX_TILES]` each), the selections' gather list (`u64[MERGE_CAPACITY]`),
/// then the row's draw plan (80 bytes: kept floor, masses, summary, draft side, the draw's
/// random word).
pub const VERIFY_ROW_SCRATCH_BYTES: u32 = VERIFY_ROW_HEAD_BYTES + 2 * MAX_TILES * 32 + MERGE_CAPACITY * 8 + 80;

/// One request of a verification call, in device memory (one host copy per call).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VerifySettings {
    /// The request's sampling settings, as for a plain step. `ROW_HAS_BITMASK`: each of its
    /// target rows has a bitmask row (bitmask row index = target row index).
    pub row: RowSettings,
    /// Draft tokens `n` (≤ `VerifyParams::max_drafts`).
    pub drafts: u32,
    /// First target row (logits row) of the request; it owns rows `first_row ..= first_row + n`.
    pub first_row: u32,
    /// First draft-probability row, or `VERIFY_ONE_HOT`.
    pub q_first: u32,
    pub _pad: u32,
}

const _: () = assert!(core::mem::size_of::<VerifySettings>() == 64);
const _: () = assert!(core::mem::align_of::<VerifySettings>() == 4);

/// What `verify_rows` decides about one target row `j` of a request, for `verify_chains`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VerifyRowResult {
    /// The token the chain emits if it stops at this row (residual, bonus or greedy argmax);
    /// -1 without a valid token, and on a pending row that `verify_draws` did not draw (a row
    /// past where its chain stops, which `verify_chains` never reads). A row that
    /// `verify_rows` skipped (past a rejection it already knew) keeps an older call's entry,
    /// which nothing reads either.
    pub token: i32,
    /// `STATUS_*` of the row.
    pub status: u32,
    /// 1 when draft `d_j` is accepted (never at `j = n`).
    pub accept: u32,
    /// Log-probabilities of `d_j` and of `token` under the row (NaN when not asked for).
    pub logprob_draft: f32,
    pub logprob_token: f32,
    /// 1 when the row's token is left to `verify_draws` (which draws it only where the chain
    /// stops); `token` is -1 until then. The draw leaves it set, so that every block of
    /// `verify_draws` finds the same drawing rows, however late it looks.
    pub pending: u32,
    pub _pad: [u32; 2],
}

const _: () = assert!(core::mem::size_of::<VerifyRowResult>() == 32);
const _: () = assert!(core::mem::align_of::<VerifyRowResult>() == 4);

/// The parameter of `verify_rows` and `verify_chains`. Pointers are device addresses.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerifyParams {
    /// Target logits: `rows` rows of `vocab` elements of `dtype`, `row_stride` elements apart.
    pub logits: u64,
    pub row_stride: u64,
    /// Draft probabilities: `q_rows` f32 rows of `vocab`, `q_stride` elements apart (0: none).
    pub q: u64,
    pub q_stride: u64,
    /// `u32[VERIFY_HEADER_WORDS]`: active requests, active target rows (the rest of each grid
    /// idles), draft-probability rows, the rows `verify_rows` skipped (zero when uploaded; a
    /// diagnostic the host can read back), the random requests (`verify::group_shape`), and
    /// zeros.
    pub header: u64,
    /// `VerifySettings[requests]`, 16-byte aligned.
    pub settings: u64,
    /// `u32[rows][2]`: (request, position) of each target row.
    pub row_map: u64,
    /// `u32[rows]`: the target rows in the order `verify_rows` takes them when they outnumber
    /// half its grid (whole rows from a counter, or groups of blocks in turn:
    /// `verify::group_shape`), position-major: every request's row `j` before any row `j + 1`.
    /// So a row past its request's first rejection is mostly taken once that rejection is
    /// known, and skipped, while rows of long chains still run side by side.
    pub row_order: u64,
    /// `u32[requests][max_drafts]`: the draft tokens of each request.
    pub drafts: u64,
    /// Grammar bitmask, `i32[rows][bitmask_words]`.
    pub bitmask: u64,
    /// Bias arrays of the call: `u32` token ids and `f32` values.
    pub bias_tokens: u64,
    pub bias_values: u64,
    /// Penalty state, seeds and steps of the sampler (as `StepParams`).
    pub counts: u64,
    pub seeds: u64,
    pub steps: u64,
    /// `VerifyRowResult[rows]`: scratch between the two kernels.
    pub row_results: u64,
    /// Processed values of every target row, `f32[rows][tiles * TILE_TOKENS]`: written by the
    /// first pass over a tile, read by every later pass (so the prologue runs once per token).
    /// Greedy rows without log-probabilities have no later pass and write none.
    pub cache: u64,
    /// `u32[rows][tiles * VERIFY_CHUNKS_PER_TILE]`: for each chunk of a cached row, the value
    /// half (`key >> 32`) of its largest key, 0 when it has none. Written with the cache; a draw
    /// skips every chunk whose largest key is under its kept floor.
    pub chunk_max: u64,
    /// `VERIFY_BLOCK_SCRATCH_BYTES` per `verify_rows` block (the grid's size).
    pub group_scratch: u64,
    /// `VERIFY_ROW_SCRATCH_BYTES` per target row, 16-byte aligned. The barrier counters are zero
    /// between calls: `verify_chains` clears what `verify_rows` counted.
    pub row_scratch: u64,
    /// Outputs: `i32[requests][max_drafts + 1]` tokens, `u32[requests]` accepted and status,
    /// `f32[requests][max_drafts + 1]` log-probabilities.
    pub out_tokens: u64,
    pub out_accepted: u64,
    pub out_status: u64,
    pub out_logprobs: u64,
    pub dtype: u32,
    pub vocab: u32,
    /// Target rows of the call (≤ the row results' capacity); `verify_rows` runs a fixed,
    /// co-resident grid over them.
    pub rows: u32,
    /// Request capacity (settings, drafts and outputs hold this many).
    pub requests: u32,
    pub max_drafts: u32,
    pub q_rows: u32,
    pub tiles: u32,
    pub bitmask_words: u32,
    pub bias_capacity: u32,
    pub slots: u32,
    pub counts_stride: u32,
    pub _pad: u32,
    /// `u64`, kept across calls: of the last call's requests with drafts, those whose chain
    /// stopped at its first draft (low half) and those that accepted one or more (high half).
    /// `verify_draws` zeroes it and `verify_chains` counts into it; the next call's
    /// `verify_rows` reads it to choose how its blocks share the rows
    /// (`verify::chains_stop_early`, `verify::group_shape`). Zero at creation.
    pub chain_stats: u64,
}

const _: () = assert!(core::mem::size_of::<VerifyParams>() == 25 * 8 + 12 * 4);
const _: () = assert!(core::mem::align_of::<VerifyParams>() == 8);

#[cfg(test)]
mod tests {
    use super::*;

    /// `step_split_item` gives the item `grid` further on that a division gives.
    #[test]
    fn split_items_step_as_the_division_does() {
        for tiles in [1u32, 7, 8, 32, 38, 64] {
            for grid in [1u32, 5, 31, 32, 33, 132, 264, 1000] {
                let step = (grid / tiles, grid % tiles);
                for start in 0..grid.min(3 * tiles + 5) {
                    let mut at = (start / tiles, start % tiles);
                    let mut item = start;
                    for _ in 0..50 {
                        at = step_split_item(at, step, tiles);
                        item += grid;
                        assert_eq!(at, (item / tiles, item % tiles), "tiles {tiles} grid {grid} start {start}");
                    }
                }
            }
        }
    }

    /// `warp_row_run` on the H200's grid (264 blocks of 16 warps): a block per tile for small
    /// steps; else runs that cover every round once with no warp more than one run, rounded
    /// to whole tiles or tile halves and quarters when that costs at most 2 rounds.
    #[test]
    fn warp_row_runs_share_the_rounds_evenly() {
        let warps = 264 * 16;
        assert_eq!(warp_row_run(1, 32, 32 * 16), None); // B = 1, V = 128256: 32 blocks
        assert_eq!(warp_row_run(8, 32, warps), None);
        assert_eq!(warp_row_run(57, 32, warps), Some(8)); // 6.9 rounds a warp: half tiles
        assert_eq!(warp_row_run(64, 38, warps), Some(10)); // V = 151936: 9.2, crossing tiles
        assert_eq!(warp_row_run(256, 32, warps), Some(32)); // 31.03: two whole tiles
        assert_eq!(warp_row_run(230, 32, warps), Some(28)); // 27.9: 32 would add 4
        for &(rows, tiles) in &[(34u32, 32u32), (57, 32), (64, 38), (120, 13), (257, 64), (1000, 8), (256, MAX_TILES)] {
            let rounds = rows as u64 * tiles as u64 * TILE_ROUNDS as u64;
            let Some(run) = warp_row_run(rows, tiles, warps) else {
                assert!(rounds < 4 * warps as u64, "{rows} rows of {tiles} tiles: no run for {rounds} rounds");
                continue;
            };
            let (run, even) = (run as u64, rounds.div_ceil(warps as u64));
            // Every round has a warp; rounding added at most 2 rounds to the even share.
            assert!(run >= 4 && run * warps as u64 >= rounds, "{rows} rows of {tiles} tiles: run {run} for {rounds} rounds");
            assert!(run >= even && run <= even + 2, "{rows} rows of {tiles} tiles: run {run}, even share {even}");
            if run != even {
                assert!(run == 4 || run == 8 || run % TILE_ROUNDS as u64 == 0, "{rows} rows of {tiles} tiles: rounded to {run}");
            }
        }
        assert_eq!(warp_row_run(0, 32, warps), None);
        assert_eq!(warp_row_run(5, 32, 0), None);
        assert_eq!(warp_row_run(u32::MAX, u32::MAX, 1), Some(u32::MAX));
    }

    /// `greedy_span` pairs tiles only on grids of one warp a tile that pairs still fill, and
    /// the host's grid with the kernel's mapping counts every (row, tile) once.
    #[test]
    fn greedy_spans_cover_every_tile_once() {
        let resident = 3168;
        // V = 128256 (32 tiles): B = 1024 pairs, B = 256 (8192 items: 1.3 waves of pairs) does
        // not; V = 262144 (64 tiles) B = 256 does.
        assert_eq!(greedy_span(1024 * 32, 32, 1, resident), 2);
        assert_eq!(greedy_span(256 * 32, 32, 1, resident), 1);
        assert_eq!(greedy_span(256 * 64, 64, 1, resident), 2);
        assert_eq!(greedy_span(8 * 32, 32, scan_split(8 * 32, resident), resident), 1);
        assert_eq!(greedy_span(u32::MAX, 1, 1, resident), 1);
        for &(rows, tiles) in &[(257u32, 13u32), (1024, 13), (1024, 32), (512, 38), (256, 64), (3, 1), (4096, 8)] {
            let split = scan_split(rows * tiles, resident);
            let span = greedy_span(rows * tiles, tiles, split, resident);
            if split > 1 {
                assert_eq!(span, 1, "{rows} rows of {tiles} tiles split {split}");
                continue;
            }
            let mut seen = std::vec![0u8; (rows * tiles) as usize];
            for g in 0..greedy_spans(rows, tiles, span) {
                let (row, first) = greedy_span_item(g, tiles, span);
                assert!(row < rows && first < tiles, "span {g} of {rows} rows of {tiles} tiles");
                for tile in first..(first + span).min(tiles) {
                    seen[(row * tiles + tile) as usize] += 1;
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "{rows} rows of {tiles} tiles, span {span}");
        }
    }

    /// `scan_split` keeps every warp resident, splits as far as that allows, and gives one
    /// warp per tile once the grid alone fills the GPU.
    #[test]
    fn scan_split_fills_the_gpu_without_a_second_wave() {
        for resident in [8u32, 24, 168, 1584, 3168, 3456] {
            let mut last = SCAN_WARPS;
            for items in 1..=2 * resident + 3 {
                let split = scan_split(items, resident);
                assert!(matches!(split, 1 | 2 | 4 | 8), "resident {resident} items {items}: {split}");
                assert!(split <= last, "not monotone at resident {resident} items {items}");
                last = split;
                if split > 1 {
                    assert!(items * split <= resident, "second wave at resident {resident} items {items}");
                }
                if split < SCAN_WARPS {
                    assert!(items * split * 2 > resident, "split {split} not the largest at resident {resident} items {items}");
                }
            }
        }
        // B = 1 at V = 128256 on an H200 (32 tiles; 132 SMs × 24 warps): 8 warps per tile;
        // B = 64 fills it.
        assert_eq!(scan_split(32, 3168), 8);
        assert_eq!(scan_split(64 * 32, 3168), 1);
        assert_eq!(scan_split(u32::MAX, 3168), 1);
        assert_eq!(scan_split(1, 0), 1);
    }

    /// `one_wave` holds for exactly the grids whose warps, split as `scan_split` says, are all
    /// resident at once (so `sample_tiles_ring` takes them): one row's grid always (split or
    /// not), a grid past one wave never, at any residency.
    #[test]
    fn one_wave_grids_are_those_scan_split_keeps_resident() {
        for resident in [8u32, 24, 168, 1584, 3168, 3456] {
            for items in 1..=2 * resident + 3 {
                let split = scan_split(items, resident);
                assert_eq!(one_wave(items, split, resident), items <= resident, "resident {resident} items {items}");
            }
        }
        // The batches measured on the H200 (3168 resident warps; V = 128256: 32 tiles, V =
        // 151936: 38): the ring up to B = 64, `sample_tiles` from B = 256.
        let ring = |rows: u32, tiles: u32| one_wave(rows * tiles, scan_split(rows * tiles, 3168), 3168);
        assert!(ring(1, 32) && ring(8, 32) && ring(64, 32) && ring(64, 38));
        assert!(!ring(256, 32) && !ring(1024, 32));
        assert!(!one_wave(u32::MAX, 8, u32::MAX));
    }

    /// A listed grid never has more warps than its launch or the GPU holds, keeps the host's
    /// split, and goes from one warp a tile to two where that fits (heterogeneous B = 64).
    #[test]
    fn listed_scan_split_fits_the_launch_and_the_gpu() {
        let resident = 3168; // an H200: 132 SMs × 24 warps
        for tiles in [1u32, 8, 32, 38, 64] {
            for rows in 1..=300u32 {
                let split = scan_split(rows * tiles, resident);
                for launched in [(rows * tiles * split).div_ceil(SCAN_WARPS) * SCAN_WARPS, resident] {
                    assert_eq!(listed_scan_split(rows * tiles, launched, resident, split) == split, split > 1 || rows * tiles * 2 > launched.min(resident));
                    for listed in 0..=rows {
                        let parts = listed_scan_split(listed * tiles, launched, resident, split);
                        let case = (tiles, rows, listed, launched, parts);
                        assert!(parts == split || (split == 1 && parts == 2), "{case:?}");
                        assert!(parts == split || listed * tiles * parts <= launched.min(resident), "{case:?}: past a bound");
                        assert!(parts > split || split > 1 || listed * tiles * 2 > launched.min(resident), "{case:?}: stopped short");
                    }
                }
            }
        }
        // Heterogeneous B = 64 at V = 128256 (32 tiles): one warp a tile for every row would
        // be 2048 warps; the host launches every resident warp beside the mass scan, so up to
        // 49 listed rows get two a tile.
        assert_eq!(listed_scan_split(32 * 32, 2048, resident, 1), 2);
        assert_eq!(listed_scan_split(34 * 32, 2048, resident, 1), 1);
        assert_eq!(listed_scan_split(34 * 32, resident, resident, 1), 2);
        assert_eq!(listed_scan_split(49 * 32, resident, resident, 1), 2);
        assert_eq!(listed_scan_split(50 * 32, resident, resident, 1), 1);
        assert_eq!(listed_scan_split(8 * 32, resident, resident, 1), 2);
        // V = 32000 (8 tiles), B = 64: the host's four stay four.
        assert_eq!(listed_scan_split(30 * 8, 2048, resident, 4), 4);
        // Garbage split values scan with one warp, as `tile_part` reads them.
        assert_eq!(listed_scan_split(100, 100, resident, 3), 1);
    }

    /// The stage-1 kernels run side by side for two rows or more, up to six waves of warps.
    #[test]
    fn stage1_overlaps_up_to_six_waves_of_two_rows_or_more() {
        let resident = 3168; // an H200: 132 SMs × 24 warps
        let case = |rows: u32, tiles: u32| {
            let split = scan_split(rows * tiles, resident);
            overlap_stage1(rows, rows * tiles, split, resident)
        };
        // The batches measured on the H200 (V = 128256: 32 tiles; V = 151936: 38).
        assert!(!case(1, 32));
        assert!(case(8, 32));
        assert!(case(64, 38)); // 2432 warps
        assert!(case(256, 32)); // 2.6 waves
        assert!(case(256, 38)); // 3.1 waves
        assert!(case(256, 64)); // 5.2 waves
        assert!(!case(1024, 32)); // 10.3 waves
        assert!(!case(1024, 38));
        // The last batch whose one-warp-per-tile grid is six waves: 500 · 38 = 19000 ≤ 19008.
        assert!(case(500, 38));
        assert!(!case(501, 38));
        // Monotone in the batch: once the grid is past six waves it stays past, whatever split
        // `scan_split` picks on the way.
        for tiles in [8u32, 32, 38, 64] {
            let mut was_on = true;
            for rows in 2..2000u32 {
                let on = case(rows, tiles);
                assert!(was_on || !on, "tiles {tiles}: on again at rows {rows}");
                was_on = on;
            }
        }
    }

    /// `mass_split` splits small grids four ways, leaves grids that fill the GPU whole, and
    /// never picks a split that takes longer by its own measure than one warp per tile.
    #[test]
    fn mass_split_shortens_the_chain_of_small_grids() {
        let warps = 132 * 4 * MASS_SCAN_WARPS; // the H200 launch: 4 blocks per SM
        assert_eq!(mass_split(32, 32 * MASS_SCAN_WARPS), 4); // B = 1 at V = 128256: a block per tile
        assert_eq!(mass_split(8 * 38, warps), 4);
        assert_eq!(mass_split(32 * 38, warps), 1); // B = 64, half its rows on the mass path
        assert_eq!(mass_split(512 * 38, warps), 1);
        assert_eq!(mass_split(0, warps), 1);
        assert_eq!(mass_split(5, 0), 1);
        let rounds = (TILE_TOKENS / 256) as u64;
        for items in (1..40_000u32).step_by(37) {
            let split = mass_split(items, warps);
            assert!(matches!(split, 1 | 2 | 4), "items {items}: {split}");
            let cost = |s: u64| (items as u64 * s).div_ceil(warps as u64) * (rounds / s + MASS_PART_OVERHEAD_ROUNDS as u64);
            assert!(cost(split as u64) <= cost(1), "items {items}: split {split}");
            // Independent of the model's figures: a grid that fits in one wave even split 4 ways
            // is split 4 ways, and one that fills the warps twice over is not split.
            if items * 4 <= warps {
                assert_eq!(split, 4, "items {items}");
            }
            if items >= 2 * warps {
                assert_eq!(split, 1, "items {items}");
            }
        }
    }
}
