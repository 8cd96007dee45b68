//! The GPU sampler: device state, the per-step upload, the step of up to seven kernels (each
//! kernel after the first launched overlapped with its predecessor,
//! `GpuSamplerConfig::overlap_kernels`, but the exact pass's first, `ExactPassOrder`), graph
//! capture, and the [`Backend`] implementation. A greedy step (every row greedy without
//! log-probabilities, `decide::stage2_always_decides`) is one kernel, `sample_tiles_greedy`
//! (`sample_tiles_greedy_pairs`, two tiles a warp, on large grids: `abi::greedy_span`), which
//! finishes its rows; a step with no row that needs the row mass leaves
//! `sample_tiles_mass` out, and one whose rows all need it `sample_tiles` ([`StepKernels`]),
//! which runs as its ring build, `sample_tiles_ring`, when its grid is one wave
//! (`abi::one_wave`), and otherwise as `sample_tiles_half` for bf16 and f16 logits; a quiet
//! step (`decide::stage2_seldom_lists` for every row) launches no exact pass under
//! `ExactPassLaunch::BySettings` ([`StepExactPass`]). The exact pass's builds follow the rows
//! stage 2 may list, counted from the settings (`ExactBuilds::choose`).
//! A captured step is a graph of each case, and a replay launches the one the upload calls for.
//!
//! Memory is allocated once, in [`GpuSampler::new`], for the capacity fixed there (rows per
//! step, live requests, vocab, bias entries per step). A step allocates nothing and never
//! synchronizes until the caller reads the outputs, so it can be captured in a CUDA graph.
//!
//! Per step the host writes one contiguous upload buffer (header with the active row count,
//! per-row settings, the rows `sample_tiles_mass` scans (`decide::needs_row_mass`), bias
//! entries, bitmask rows) with one copy; penalty counts, seeds and step
//! counters stay on the device and the kernels advance them.

use std::cell::Cell;
use std::collections::HashMap;
use std::marker::PhantomData;

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaGraph, CudaSlice, CudaStream, CudaView, DevicePtr, DevicePtrMut, LaunchConfig, PinnedHostSlice,
};
use sampler_kernels::abi::{
    ExactJob, RowSettings, StepParams, TileRecord, DTYPE_BF16, DTYPE_F16, DTYPE_F32, EXACT_BINS, EXACT_GATHER_KEYS,
    EXACT_HIST_SHARED_BYTES, EXACT_SINGLE, EXACT_SLOTS_MAX, EXACT_SPLIT, EXACT_SUB_BINS, MAX_TOP_LOGPROBS,
    MAX_VOCAB, ROW_HAS_BITMASK, ROW_TOP_LOGPROBS_SHIFT, ROW_WANT_LOGPROB, SAMPLER_SHARED_BYTES, SAMPLER_THREADS,
    MASS_SCAN_SHARED_BYTES, MASS_SCAN_THREADS, SCAN_RING_SHARED_BYTES, SCAN_SHARED_BYTES, SCAN_THREADS, SCAN_WARPS,
    TILE_TOKENS, greedy_span, greedy_spans, overlap_stage1, lists_scan_rows, rows_two_per_sm, one_wave, scan_split, warp_row_run, EXACT_LIST_BLOCK_ROWS, EXACT_LIST_HEAD,
};
use sampler_kernels::decide::{may_be_warp_row, needs_row_mass, stage2_always_decides, stage2_seldom_lists};
use sampler_kernels::logit::bitmask_words;
use sampler_kernels::status::STATUS_OK;

use crate::backend::{validate_batch, Backend, Batch, BatchRow, RowOutput};
use crate::cuda::{cuda_err, launch_ordered, GpuDevice, KernelParams, LaunchOrder, OwnedGraph, PinnedReadback};
use crate::error::{Error, Field, Result};
use crate::logits::{strided_span, LogitsData, LogitsDtype};
use crate::settings::SamplingParams;
use crate::state::RequestTable;

// SAFETY: `StepParams` is a `#[repr(C)]` struct of u64/u32 device addresses and sizes from the
// ABI module, whose size and alignment are asserted there.
unsafe impl cudarc::driver::DeviceRepr for KernelParams<StepParams> {}

/// Capacity of a [`GpuSampler`], fixed at creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuSamplerConfig {
    /// Vocabulary size of every step.
    pub vocab: usize,
    /// Most rows one step may have.
    pub max_batch: usize,
    /// Most requests registered at once (each holds a row of penalty counts on the device).
    pub max_requests: usize,
    /// Most logit-bias entries over all rows of one step.
    pub max_bias_entries: usize,
    /// Launch every kernel of a step after the first with programmatic dependent launch
    /// (Hopper's `griddepcontrol`; the kernels are built for sm_90), so that each kernel's
    /// launch overlaps the previous one's tail. Off gives the plain stream order, which the
    /// benchmark compares against (`sonic-bench --serial-launches`).
    pub overlap_kernels: bool,
    /// How the exact pass is launched ([`ExactPassLaunch`]; `sonic-bench --exact-pass
    /// settings|one|four` compares them).
    pub exact_pass: ExactPassLaunch,
    /// Which of the exact pass's launches overlap their predecessor (with `overlap_kernels`).
    pub exact_pass_order: ExactPassOrder,
    /// Let a top-p row skip stage 1's candidate lists when its request's last step was *wide*:
    /// a nucleus no merge of the lists could hold, which stage 2 learns from the row mass and
    /// then leaves to the exact pass (`decide::lists_skippable`, `abi::SLOT_WIDE`). Such a row
    /// goes straight to the exact pass. The tokens are the same either way; what changes is the
    /// cost: a request whose rows stay wide (flat logits, as at T 1 with p 0.95) saves the lists,
    /// and one that turns narrow pays one exact pass it would not have needed. On by default;
    /// off, every row builds the lists its settings call for (`sonic-bench --no-skip-lists`).
    pub skip_lists_after_wide_step: bool,
}

/// Which of the exact pass's launches are overlapped (`sonic-bench --exact-order` compares
/// them). All give the same tokens; on the H200 a step is faster when the pass's first kernel
/// is overlapped with `sample_rows` where many rows may take the pass and stage 2 leaves SMs
/// idle, and in stream order otherwise; an idle pass is a little faster when its later kernels
/// are overlapped (ARCHITECTURE.md, "Launch order").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExactPassOrder {
    /// Every one, like the stages.
    Overlapped,
    /// All but the first, which waits for stage 2 in stream order.
    FirstSerial,
    /// None: the exact pass runs in plain stream order.
    Serial,
    /// All but the first, and the first too when a launch of at most one row a SM (stage 2's
    /// blocks leave SMs idle) has at least [`OVERLAP_FIRST_MIN_LISTABLE`] rows that stage 2
    /// may list, counted from the settings ([`ExactPassOrder::first_overlapped`]). A captured
    /// step holds a graph of each order its rows allow, and a replay takes the one its
    /// upload's settings call for.
    #[default]
    ByRows,
}

/// Fewest rows stage 2 may list for which [`ExactPassOrder::ByRows`] overlaps the exact pass's
/// first kernel with `sample_rows`. Measured on the H200, overlapped against stream order, on
/// top-p 0.95 steps whose every row may be listed: at 40 to 128 rows 0.958–0.994× the time, at
/// 16 and 32 rows 1.002–1.011× (session 62, bench/results/h200-2026-12-05-s62/, runs 1 and 2);
/// at 1 and 8 rows 1.02–1.03× (sessions 61 and 62). Heterogeneous steps of 16 to 128 rows,
/// about a third of whose rows may be listed, took 1.000–1.020× overlapped: keyed on the batch
/// instead (session 61's rule, from 64 rows), their 64-row step was 0.8% slower.
pub const OVERLAP_FIRST_MIN_LISTABLE: u32 = 40;

impl ExactPassOrder {
    /// Whether the exact pass's first kernel is launched overlapped with `sample_rows`, for a
    /// launch of `rows` rows, `listable` of which stage 2 may list, on a GPU of `sms` SMs.
    /// Under `ByRows`: from [`OVERLAP_FIRST_MIN_LISTABLE`] listable rows, on grids of up to one
    /// row a SM, where stage 2's blocks leave SMs on which the first kernel's blocks can be
    /// placed before stage 2 ends (past that, stage 2 runs two blocks an SM and the order
    /// measured within 0.6% either way). The rule is monotone in `listable`, which the graphs
    /// a captured step holds rely on.
    pub fn first_overlapped(self, listable: u32, rows: u32, sms: u32) -> bool {
        match self {
            Self::Overlapped => true,
            Self::FirstSerial | Self::Serial => false,
            Self::ByRows => rows <= sms && listable.min(rows) >= OVERLAP_FIRST_MIN_LISTABLE,
        }
    }
}

/// How a step launches its exact pass (the rows stage 2 leaves undecided). All give the same
/// tokens; they differ in what an idle and a busy pass cost (H200, bench/results/h200-2026-11-30-s10/
/// and h200-2026-12-01-s26/).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExactPassLaunch {
    /// Per step, from the uploaded settings. A *quiet* step, every row one that stage 2
    /// seldom leaves undecided (`decide::stage2_seldom_lists`: greedy, top-k up to 128, or no
    /// truncation), launches no exact pass: its stage 2 (`sample_rows_quiet`) finishes a row it
    /// cannot decide itself, with the single-block pass, so that an idle pass costs nothing and
    /// a listed row costs that block more time. Other steps (top-p or min-p rows without a
    /// small top-k, which flat logits list) take [`Self::FourLaunches`], and so does a step
    /// with a request whose row was left undecided in its last step (read by `read_outputs`),
    /// so that logits that defeat the prediction pay the single-block pass once, not every
    /// step.
    #[default]
    BySettings,
    /// `exact_histogram`, `exact_bins`, `exact_gather` and `exact_finish` (which also runs the
    /// single-block pass): the tile kernels run two blocks per SM. Each launch costs its place
    /// in the chain of a step even when no row is listed (1–2 µs each), unless every row is
    /// greedy without log-probabilities (then the step has no exact pass).
    FourLaunches,
    /// `exact_tail` alone: one launch, one 512-thread block per SM, every phase's items from
    /// one queue. Against the four launches, 0.92–0.96× the time in quiet steps and 1.22–1.32×
    /// in steps that list rows (session 26, run 1); `BySettings` does better in quiet steps
    /// and keeps the four in the others. For comparisons, and for deployments whose rows rarely
    /// leave stage 2 undecided (steps of greedy rows without log-probabilities skip the exact
    /// pass either way).
    OneLaunch,
}

impl GpuSamplerConfig {
    /// A configuration with room for `max_batch` rows, four times as many live requests, and
    /// 1024 bias entries per row on average.
    pub fn new(vocab: usize, max_batch: usize) -> Self {
        Self {
            vocab,
            max_batch,
            max_requests: max_batch.saturating_mul(4),
            max_bias_entries: max_batch.saturating_mul(1024),
            overlap_kernels: true,
            exact_pass: ExactPassLaunch::BySettings,
            exact_pass_order: ExactPassOrder::ByRows,
            skip_lists_after_wide_step: true,
        }
    }
}

/// Logits that already live on the device: `rows` rows of `vocab` elements, `row_stride`
/// elements apart. Borrowing the slice keeps it alive as long as this view (and a graph
/// captured with it) exists.
#[derive(Clone, Copy, Debug)]
pub struct DeviceLogits<'a> {
    ptr: u64,
    dtype: LogitsDtype,
    rows: usize,
    row_stride: usize,
    elements: usize,
    /// Bytes per element of the buffer itself, checked against `dtype`.
    element_bytes: usize,
    /// `CUcontext` of the buffer, as an address; `None` for the sampler's own staging buffer.
    context: Option<usize>,
    _borrow: PhantomData<&'a ()>,
}

impl<'a> DeviceLogits<'a> {
    /// f32 logits.
    pub fn f32(slice: &'a CudaSlice<f32>, rows: usize, row_stride: usize) -> Self {
        Self::from_slice(slice, LogitsDtype::F32, rows, row_stride)
    }

    /// bf16 or f16 logits held as their 16-bit patterns. `dtype` must be `Bf16` or `F16`;
    /// [`GpuSampler::enqueue_step`] refuses `F32` over 16-bit data.
    pub fn half_bits(slice: &'a CudaSlice<u16>, dtype: LogitsDtype, rows: usize, row_stride: usize) -> Self {
        Self::from_slice(slice, dtype, rows, row_stride)
    }

    fn from_slice<T>(slice: &'a CudaSlice<T>, dtype: LogitsDtype, rows: usize, row_stride: usize) -> Self {
        Self {
            element_bytes: std::mem::size_of::<T>(),
            context: Some(slice.context().cu_ctx() as usize),
            ..Self::from_parts(device_address(slice), dtype, rows, row_stride, slice.len())
        }
    }

    fn from_parts(ptr: u64, dtype: LogitsDtype, rows: usize, row_stride: usize, elements: usize) -> Self {
        let element_bytes = dtype_bytes(dtype);
        Self { ptr, dtype, rows, row_stride, elements, element_bytes, context: None, _borrow: PhantomData }
    }
}

/// Grammar bitmask rows that already live on the device, for
/// [`GpuSampler::upload_step_with_bitmask`]: `rows` rows of XGrammar words (bit `t % 32` of word
/// `t / 32` set: token `t` allowed), `row_stride` words apart, at least `ceil(vocab / 32)`. Row
/// `i` belongs to batch row `i`; only rows that ask for it ([`BatchRow::with_device_bitmask`])
/// read it.
#[derive(Clone, Copy, Debug)]
pub struct DeviceBitmask<'a> {
    ptr: u64,
    rows: usize,
    row_stride: usize,
    elements: usize,
    context: usize,
    _borrow: PhantomData<&'a ()>,
}

impl<'a> DeviceBitmask<'a> {
    /// The first `rows` rows of `slice`, `row_stride` words apart.
    pub fn new(slice: &'a CudaSlice<i32>, rows: usize, row_stride: usize) -> Self {
        Self {
            ptr: device_address(slice),
            rows,
            row_stride,
            elements: slice.len(),
            context: slice.context().cu_ctx() as usize,
            _borrow: PhantomData,
        }
    }
}

/// Read access for the crate's other device-level APIs (`gpu_topk`), which validate and launch
/// on the same views.
impl DeviceLogits<'_> {
    pub(crate) fn device_ptr(&self) -> u64 {
        self.ptr
    }
    pub(crate) fn logits_dtype(&self) -> LogitsDtype {
        self.dtype
    }
    pub(crate) fn rows(&self) -> usize {
        self.rows
    }
    pub(crate) fn row_stride(&self) -> usize {
        self.row_stride
    }
    pub(crate) fn elements(&self) -> usize {
        self.elements
    }
    pub(crate) fn element_bytes(&self) -> usize {
        self.element_bytes
    }
    pub(crate) fn context(&self) -> Option<usize> {
        self.context
    }
}

/// Whether a batch row (or a verification request) reads its rows of the device bitmask, or
/// why its bitmasks cannot be taken: `host`, it brings host masks; `device`, it asks for the
/// device bitmask; `given`, the upload has one. A step or call takes its masks from one side.
pub(crate) fn reads_device_bitmask(host: bool, device: bool, given: bool) -> std::result::Result<bool, &'static str> {
    match (host, device, given) {
        (true, true, _) => Err("host bitmasks and the device bitmask asked for at once"),
        (false, true, false) => Err("the device bitmask asked for, and none given (upload_step_with_bitmask, upload_verify_with_bitmask)"),
        (true, false, true) => Err("host bitmasks in an upload that takes its bitmasks from the device"),
        (_, device, _) => Ok(device),
    }
}

/// Enqueues on `gpu`'s stream the copy of rows `0..rows` of `mask` (`words` words of each) to
/// `dst`, `words` words a row: one linear copy for dense rows, a pitched one otherwise.
///
/// # Safety
/// `mask` passed [`GpuSampler::check_device_bitmask`] for `rows` rows (its context, stride and
/// length), and `dst` addresses `rows · words` words of device memory in that context that
/// nothing else reads or writes between this call and the work after it on the stream.
pub(crate) unsafe fn copy_device_bitmask(gpu: &GpuDevice, dst: u64, mask: &DeviceBitmask<'_>, words: usize, rows: usize) -> Result<()> {
    use cudarc::driver::sys::{CUmemorytype, CUDA_MEMCPY2D};
    let row_bytes = words * 4;
    let stream = gpu.stream();
    gpu.context().bind_to_thread().map_err(cuda_err("copying the device bitmask"))?;
    let copied = if mask.row_stride == words || rows == 1 {
        // Dense rows (or one row, whose stride no check bounds): one linear copy, with no pitch
        // for the driver to refuse.
        // SAFETY: the caller's conditions; the rows are contiguous, `row_bytes · rows` bytes.
        unsafe { cudarc::driver::result::memcpy_dtod_async(dst, mask.ptr, row_bytes * rows, stream.cu_stream()) }
    } else {
        // Every field spelled out: the memory-type enum has no zero value to default to.
        let copy = CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
            srcHost: std::ptr::null(),
            srcDevice: mask.ptr,
            srcArray: std::ptr::null_mut(),
            srcPitch: mask.row_stride * 4,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
            dstHost: std::ptr::null_mut(),
            dstDevice: dst,
            dstArray: std::ptr::null_mut(),
            dstPitch: row_bytes,
            WidthInBytes: row_bytes,
            Height: rows,
        };
        // SAFETY: the caller's conditions; `copy` describes exactly those rows and lives across
        // the call, which copies the struct before returning.
        unsafe { cudarc::driver::sys::cuMemcpy2DAsync_v2(&copy, stream.cu_stream()).result() }
    };
    copied.map_err(cuda_err("copying the device bitmask"))
}

fn device_address<T>(slice: &CudaSlice<T>) -> u64 {
    let stream = slice.stream().clone();
    let (ptr, _guard) = slice.device_ptr(&stream);
    ptr
}

fn device_address_mut<T>(slice: &mut CudaSlice<T>) -> u64 {
    let stream = slice.stream().clone();
    let (ptr, _guard) = slice.device_ptr_mut(&stream);
    ptr
}

fn dtype_code(dtype: LogitsDtype) -> u32 {
    match dtype {
        LogitsDtype::F32 => DTYPE_F32,
        LogitsDtype::Bf16 => DTYPE_BF16,
        LogitsDtype::F16 => DTYPE_F16,
    }
}

fn dtype_bytes(dtype: LogitsDtype) -> usize {
    match dtype {
        LogitsDtype::F32 => 4,
        LogitsDtype::Bf16 | LogitsDtype::F16 => 2,
    }
}

/// Views a slice of plain numbers as bytes.
fn as_bytes<T: Copy>(values: &[T]) -> &[u8] {
    // SAFETY: callers pass f32, u16-backed half types, u32 and ABI structs: plain data with no
    // padding read as meaningful; the byte view covers exactly the slice's memory.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values)) }
}

/// Offsets inside the per-step upload buffer.
#[derive(Clone, Copy, Debug)]
struct UploadLayout {
    settings: usize,
    /// `u32[1 + max_batch]`: `StepParams::mass_rows`.
    mass_rows: usize,
    /// `u32[1 + max_batch]`: `StepParams::scan_rows`.
    scan_rows: usize,
    bias_tokens: usize,
    bias_values: usize,
    bitmask: usize,
    total: usize,
}

impl UploadLayout {
    fn new(max_batch: usize, max_bias: usize, bitmask_words: usize) -> Self {
        let settings = 16;
        let mass_rows = settings + max_batch * std::mem::size_of::<RowSettings>();
        let scan_rows = mass_rows + (1 + max_batch) * 4;
        let bias_tokens = scan_rows + (1 + max_batch) * 4;
        let bias_values = bias_tokens + max_bias * 4;
        let bitmask = (bias_values + max_bias * 4).next_multiple_of(16);
        let total = bitmask + max_batch * bitmask_words * 4;
        Self { settings, mass_rows, scan_rows, bias_tokens, bias_values, bitmask, total }
    }
}

/// How one step runs its exact pass: [`ExactPassLaunch`] resolved for the step. Not API: the
/// GPU tests check `BySettings`' choice with it.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepExactPass {
    FourLaunches,
    OneLaunch,
    /// No exact-pass launch: `sample_rows_quiet` finishes the rows it cannot decide.
    InStageTwo,
}

/// Which kernels a step launches, from what the host knows of its rows' settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StepKernels {
    /// Every kernel: stage 1 (both kernels), stage 2 and the exact pass.
    All,
    /// No row needs the row mass (`decide::needs_row_mass`): the same without
    /// `sample_tiles_mass`, which would have nothing to scan.
    NoMassScan,
    /// Every row needs the row mass: the same without `sample_tiles`, whose every warp would
    /// find its row left to `sample_tiles_mass`.
    MassScanOnly,
    /// A greedy step, every row one that `decide::stage2_always_decides`: `sample_tiles_greedy`
    /// alone, which finishes the rows.
    Greedy,
}

/// What the host plans for a step from its rows' settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StepPlan {
    kernels: StepKernels,
    /// Every row is one stage 2 seldom leaves undecided (`decide::stage2_seldom_lists`):
    /// `ExactPassLaunch::BySettings` launches no exact pass ([`StepExactPass::InStageTwo`]).
    quiet: bool,
    /// Rows stage 2 may list for the exact pass: those `decide::stage2_seldom_lists` does not
    /// expect it to decide, and those of requests it left undecided last step. Their number
    /// picks the builds of `exact_bins` and the finish ([`GpuSampler::exact_builds`]).
    listable: u32,
    /// The listable rows that cannot be warp rows (`decide::may_be_warp_row`). With one, the
    /// step's split rows take a block per tile, and the plain builds of `exact_histogram` and
    /// `exact_gather` do that faster than the `_runs` ones.
    block_listable: u32,
}

/// The builds a four-launch exact pass takes, and how its first launch waits
/// ([`GpuSampler::exact_builds`]); all false for a step without an exact pass, and the builds
/// false for one launch, which has none of these kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ExactBuilds {
    /// `exact_bins_two_per_sm` and `exact_finish_two_per_sm`.
    two_per_sm: bool,
    /// `exact_histogram_runs` and `exact_gather_runs`, which also take warp rows a warp per run.
    warp_runs: bool,
    /// The pass's first kernel is launched overlapped with `sample_rows`
    /// ([`ExactPassOrder::first_overlapped`]).
    first_overlapped: bool,
}

impl ExactBuilds {
    /// The builds of a step whose exact pass runs as `exact` (only four launches have these
    /// kernels), with `listable` rows stage 2 may list, `block_listable` of them no warp rows,
    /// on a grid of `rows` rows and a GPU of `sms` SMs; `runs_fit`: the grid is large enough
    /// for warp runs (`GpuSampler::takes_warp_runs`).
    /// - `exact_bins` and the finish two per SM when the listable rows outnumber the SMs
    ///   (`abi::rows_two_per_sm` of them, not of the batch: those kernels take listed rows
    ///   alone; session 51: heterogeneous B = 256 0.968–0.986×);
    /// - the `_runs` tile builds when every listable row may be a warp row: with a block row
    ///   among the split rows, every split row takes a block per tile, which the plain builds
    ///   do faster (session 51: heterogeneous B = 64 0.962×).
    /// - the first launch overlapped as `order` says for the listable rows.
    fn choose(exact: StepExactPass, order: ExactPassOrder, listable: u32, block_listable: u32, rows: u32, sms: u32, runs_fit: bool) -> Self {
        let first_overlapped = exact != StepExactPass::InStageTwo && order.first_overlapped(listable, rows, sms);
        if exact != StepExactPass::FourLaunches {
            return Self { first_overlapped, ..Self::default() };
        }
        Self { two_per_sm: rows_two_per_sm(listable.min(rows), sms), warp_runs: runs_fit && block_listable == 0, first_overlapped }
    }

    /// Every build [`Self::choose`] gives for some settings under the same `exact`, `order`,
    /// `rows`, `sms` and `runs_fit`: a captured step holds a graph for each. Each field is
    /// monotone in the listable rows (and `warp_runs` in the block rows among them), so the
    /// choices for the fewest and the widest settings bound it.
    fn possible(exact: StepExactPass, order: ExactPassOrder, rows: u32, sms: u32, runs_fit: bool) -> Vec<Self> {
        let fewest = Self::choose(exact, order, 0, rows, rows, sms, runs_fit);
        let widest = Self::choose(exact, order, rows, 0, rows, sms, runs_fit);
        let either = |a: bool, b: bool| if a == b { vec![a] } else { vec![false, true] };
        let mut out = Vec::new();
        for two_per_sm in either(fewest.two_per_sm, widest.two_per_sm) {
            for warp_runs in either(fewest.warp_runs, widest.warp_runs) {
                for first_overlapped in either(fewest.first_overlapped, widest.first_overlapped) {
                    out.push(Self { two_per_sm, warp_runs, first_overlapped });
                }
            }
        }
        out
    }
}

/// The plan for a step of these rows, the rows `sample_tiles_mass` scans
/// (`decide::needs_row_mass`, ascending), and the others, which `sample_tiles` scans: one walk
/// over the settings. `undecided[i]`: row `i`'s request was left undecided by stage 2 in its
/// last step, which makes the step busy (below, `GpuSampler::undecided`).
fn plan_step(settings: &[RowSettings], undecided: &[bool], vocab: u32) -> (StepPlan, Vec<u32>, Vec<u32>) {
    let mut all_greedy = true;
    let (mut listable, mut block_listable) = (0u32, 0u32);
    let mut mass_rows = Vec::new();
    let mut scan_rows = Vec::new();
    for (i, s) in settings.iter().enumerate() {
        all_greedy &= stage2_always_decides(s.temperature, s.flags);
        let may_be_listed = !stage2_seldom_lists(s) || undecided.get(i).copied().unwrap_or(false);
        listable += u32::from(may_be_listed);
        block_listable += u32::from(may_be_listed && !may_be_warp_row(s, vocab));
        if needs_row_mass(s) {
            mass_rows.push(i as u32);
        } else {
            scan_rows.push(i as u32);
        }
    }
    let kernels = if all_greedy {
        StepKernels::Greedy
    } else if mass_rows.is_empty() {
        StepKernels::NoMassScan
    } else if mass_rows.len() == settings.len() {
        StepKernels::MassScanOnly
    } else {
        StepKernels::All
    };
    (StepPlan { kernels, quiet: listable == 0, listable, block_listable }, mass_rows, scan_rows)
}

/// A step's outputs in device memory ([`GpuSampler::device_outputs`]): row `i` of the last
/// upload is entry `i` of each array.
#[derive(Debug)]
#[non_exhaustive]
pub struct DeviceOutputs<'a> {
    /// `i32[max_batch]`: each row's token, −1 where it has none (its status says why).
    pub tokens: CudaView<'a, i32>,
    /// `u32[max_batch]`: each row's status (`sampler_kernels::status`), `STATUS_OK` with a token.
    pub status: CudaView<'a, u32>,
}

/// A step captured in CUDA graphs, one per [`StepKernels`], way to run the exact pass, and
/// `ExactBuilds` (six disabled kernel nodes still cost about 3 µs of a replay: session 18,
/// so each case is a graph of its own). Replaying it
/// samples `rows` rows of the logits it was captured with (whose contents may change between
/// replays), with the settings of the last [`GpuSampler::upload_step`].
pub struct StepGraph {
    /// Every (kernels, exact pass, its builds) a replay may need (`None`: a greedy step, which
    /// has no exact pass).
    graphs: Vec<(StepKernels, Option<StepExactPass>, ExactBuilds, OwnedGraph)>,
    rows: usize,
    /// The graph the last replay launched (`None` before the first): its kernels, how it
    /// runs the exact pass (`None` for a greedy step, which has none), and with which builds.
    last: Cell<Option<(StepKernels, Option<StepExactPass>, ExactBuilds)>>,
}

impl StepGraph {

    /// Rows the graph was captured for (an upload may activate fewer).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The graph the last replay launched (`None` before the first replay). Not API: the GPU
    /// tests check the choice with it.
    #[doc(hidden)]
    pub fn last_replay_kernels(&self) -> Option<StepKernels> {
        self.last.get().map(|(kernels, _, _)| kernels)
    }

    /// How the last replay ran the exact pass (`None` before the first replay and for a greedy
    /// step). Not API: the GPU tests check `ExactPassLaunch::BySettings`' choice with it.
    #[doc(hidden)]
    pub fn last_replay_exact_pass(&self) -> Option<StepExactPass> {
        self.last.get().and_then(|(_, exact, _)| exact)
    }

    /// Whether the last replay launched `exact_bins` and the finish as their two-per-SM builds
    /// (false before the first replay). Not API: for the GPU tests.
    #[doc(hidden)]
    pub fn last_replay_exact_two_per_sm(&self) -> bool {
        self.last.get().is_some_and(|(_, _, builds)| builds.two_per_sm)
    }

    /// Whether the last replay launched the exact pass's first kernel overlapped with
    /// `sample_rows` (false before the first replay and for a step without an exact pass). Not
    /// API: for the GPU tests.
    #[doc(hidden)]
    pub fn last_replay_exact_first_overlapped(&self) -> bool {
        self.last.get().is_some_and(|(_, _, builds)| builds.first_overlapped)
    }
}

/// Pinned host copies of a step's outputs (`GpuSampler::read_outputs`), each sized for
/// `max_batch` rows.
struct OutputReadback {
    words: PinnedReadback<u32>,
    logprobs: PinnedReadback<f32>,
    top_tokens: PinnedReadback<i32>,
    top_logprobs: PinnedReadback<f32>,
}

impl OutputReadback {
    fn new(ctx: &Arc<CudaContext>, max_batch: usize) -> Result<Self> {
        const OP: &str = "allocating the pinned output readback";
        let top = max_batch * MAX_TOP_LOGPROBS as usize;
        Ok(Self {
            words: PinnedReadback::new(ctx, ROW_WORD_ARRAYS * max_batch, OP)?,
            logprobs: PinnedReadback::new(ctx, max_batch, OP)?,
            top_tokens: PinnedReadback::new(ctx, top, OP)?,
            top_logprobs: PinnedReadback::new(ctx, top, OP)?,
        })
    }
}

/// One row of an upload, as its read needs it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct UploadedRow {
    /// The request's state slot (`RowSettings::slot`).
    slot: u32,
    want_logprob: bool,
    /// Top log-probabilities asked for, at most `MAX_TOP_LOGPROBS`.
    top_logprobs: u32,
}

/// What `PreparedRows::fill` checks an upload's rows against.
#[derive(Clone, Copy, Debug)]
struct UploadLimits {
    vocab: usize,
    bitmask_words: usize,
    max_bias_entries: usize,
    /// The upload takes its bitmasks from a device buffer (`upload_step_with_bitmask`).
    device_bitmask: bool,
}

/// Slot marks that refuse a request named twice in one upload without hashing (its slot is
/// its own): slot `s` is taken in the current upload when `marks[s] == upload`.
#[derive(Clone, Debug)]
struct SlotMarks {
    marks: Vec<u32>,
    upload: u32,
}

impl SlotMarks {
    fn new(slots: usize) -> Self {
        Self { marks: vec![0; slots], upload: 0 }
    }

    /// Starts an upload with no slot taken. Marks are cleared only when the count wraps.
    fn begin(&mut self) {
        self.upload = self.upload.wrapping_add(1);
        if self.upload == 0 {
            self.marks.fill(0);
            self.upload = 1;
        }
    }

    /// Takes `slot` for this upload; false when it was taken already (or is no slot).
    fn take(&mut self, slot: u32) -> bool {
        match self.marks.get_mut(slot as usize) {
            Some(mark) if *mark != self.upload => {
                *mark = self.upload;
                true
            }
            _ => false,
        }
    }
}

/// A request's `RowSettings`: its settings `p`, its state slot, where its bias entries start
/// among the step's (or call's), and its `ROW_*` flags. Steps and verification calls both lay
/// a request out for the kernels here.
pub(crate) fn row_settings(p: &SamplingParams, slot: u32, bias_offset: usize, flags: u32) -> RowSettings {
    RowSettings {
        temperature: p.temperature,
        top_p: p.top_p,
        min_p: p.min_p,
        repetition_penalty: p.repetition_penalty,
        frequency_penalty: p.frequency_penalty,
        presence_penalty: p.presence_penalty,
        top_k: p.top_k,
        slot,
        bias_offset: bias_offset as u32,
        bias_len: p.logit_bias.len() as u32,
        flags,
        _pad: 0,
    }
}

/// The host half of an upload: each row's `RowSettings`, the step's logit-bias entries in row
/// order, what the read needs of each row, and the heights of the two bitmask copies.
#[derive(Clone, Debug, Default)]
struct PreparedRows {
    settings: Vec<RowSettings>,
    bias_tokens: Vec<u32>,
    bias_values: Vec<f32>,
    uploaded: Vec<UploadedRow>,
    /// Rows up to the last one with a host bitmask: the staged bitmask's height.
    mask_rows: usize,
    /// Rows up to the last one that reads the device bitmask: the copy's height.
    device_mask_rows: usize,
}

impl PreparedRows {
    /// Checks `rows` against the request table and `limits` and refills `self` from them, in
    /// place. The first row that fails gives the error, and the step's bias count is checked
    /// after every row; on error `self` holds a partial upload, which nothing copies.
    fn fill(&mut self, rows: &[BatchRow<'_>], table: &RequestTable, slots: &HashMap<u64, u32>, marks: &mut SlotMarks, limits: UploadLimits) -> Result<()> {
        self.settings.clear();
        self.bias_tokens.clear();
        self.bias_values.clear();
        self.uploaded.clear();
        (self.mask_rows, self.device_mask_rows) = (0, 0);
        marks.begin();
        for (i, row) in rows.iter().enumerate() {
            let unknown = || Error::UnknownRequest { request: row.request };
            let state = table.get(row.request).ok_or_else(unknown)?;
            let slot = slots.get(&row.request).copied().ok_or_else(unknown)?;
            if !marks.take(slot) {
                return Err(Error::DuplicateRequest { request: row.request });
            }
            let p: &SamplingParams = &state.params;
            let mut flags = 0;
            let bitmask_error = |reason: &str| Error::InvalidSetting { request: Some(row.request), field: Field::Bitmask, reason: reason.into() };
            if reads_device_bitmask(row.bitmask.is_some(), row.device_bitmask, limits.device_bitmask).map_err(bitmask_error)? {
                flags |= ROW_HAS_BITMASK;
                self.device_mask_rows = i + 1;
            }
            if let Some(mask) = row.bitmask {
                if mask.len() < limits.bitmask_words {
                    return Err(Error::InvalidSetting {
                        request: Some(row.request),
                        field: Field::Bitmask,
                        reason: format!("{} words given, vocab {} needs {}", mask.len(), limits.vocab, limits.bitmask_words),
                    });
                }
                flags |= ROW_HAS_BITMASK;
                self.mask_rows = i + 1;
            }
            if p.logprobs {
                flags |= ROW_WANT_LOGPROB;
            }
            flags |= p.top_logprobs << ROW_TOP_LOGPROBS_SHIFT;
            self.settings.push(row_settings(p, slot, self.bias_tokens.len(), flags));
            for &(t, v) in &p.logit_bias {
                self.bias_tokens.push(t);
                self.bias_values.push(v);
            }
            self.uploaded.push(UploadedRow { slot, want_logprob: p.logprobs, top_logprobs: p.top_logprobs });
        }
        if self.bias_tokens.len() > limits.max_bias_entries {
            return Err(Error::CapacityExceeded {
                what: "logit-bias entries in one step",
                requested: self.bias_tokens.len(),
                capacity: limits.max_bias_entries,
            });
        }
        Ok(())
    }
}

/// A step's outputs as copied to the host, row `i` at index `i`: token (`i32` bits) and status
/// words, log-probability (empty when no row asked for one), and `top_stride` top-logprob
/// entries a row, best first, token −1 past the last (empty when no row asked for any).
struct HostStepOutputs<'a> {
    tokens: &'a [u32],
    status: &'a [u32],
    logprobs: &'a [f32],
    top_tokens: &'a [i32],
    top_logprobs: &'a [f32],
    top_stride: usize,
}

/// Writes one [`RowOutput`] a row of `uploaded` into `out`, reusing its entries and their
/// vectors, and drops the entries past them. A row without `STATUS_OK` gets its token (−1)
/// and status alone.
fn fill_row_outputs(uploaded: &[UploadedRow], read: &HostStepOutputs<'_>, out: &mut Vec<RowOutput>) {
    out.truncate(uploaded.len());
    let rows = uploaded.iter().zip(read.tokens.iter().zip(read.status));
    for (i, (row, (&token, &status))) in rows.enumerate() {
        let ok = status == STATUS_OK;
        let logprob = if ok && row.want_logprob { read.logprobs.get(i).copied() } else { None };
        let top = if ok { (row.top_logprobs as usize).min(read.top_stride) } else { 0 };
        let span = i * read.top_stride..i * read.top_stride + top;
        let top_tokens = read.top_tokens.get(span.clone()).unwrap_or(&[]);
        let top_logprobs = read.top_logprobs.get(span).unwrap_or(&[]);
        // −1 pads a row whose support is narrower than its count.
        let entries = top_tokens.iter().zip(top_logprobs).filter(|&(&t, _)| t >= 0).map(|(&t, &lp)| (t as u32, lp));
        // The token's `i32` bits: -1 (no token) stays -1.
        let token = token as i32;
        match out.get_mut(i) {
            Some(row) => {
                (row.token, row.status, row.logprob) = (token, status, logprob);
                row.top_logprobs.clear();
                row.top_logprobs.extend(entries);
            }
            None => {
                let mut top_logprobs = Vec::with_capacity(top);
                top_logprobs.extend(entries);
                out.push(RowOutput { token, status, logprob, top_logprobs });
            }
        }
    }
}

/// The arrays of `GpuSampler::row_words`, `max_batch` words each, in order.
const ROW_TOKENS: usize = 0;
const ROW_STATUS: usize = 1;
const ROW_FLAGS: usize = 2;
const ROW_WORD_ARRAYS: usize = 3;

/// The GPU sampler. See the module documentation.
pub struct GpuSampler {
    gpu: GpuDevice,
    config: GpuSamplerConfig,
    tiles: u32,
    counts_stride: usize,
    bitmask_words: usize,
    layout: UploadLayout,
    stage_tiles: CudaFunction,
    /// `sample_tiles` for bf16 and f16 logits (raw words held ahead, widened in their round).
    stage_tiles_half: CudaFunction,
    /// `sample_tiles` with its logits in a shared-memory ring, for one-wave grids
    /// (`abi::one_wave`).
    stage_tiles_ring: CudaFunction,
    stage_tiles_greedy: CudaFunction,
    /// `sample_tiles_greedy` with two tiles a warp (`abi::greedy_span`).
    stage_tiles_greedy_pairs: CudaFunction,
    stage_tiles_mass: CudaFunction,
    /// `sample_tiles` warps the device holds at once (occupancy calculator × SMs; the fewer of
    /// `sample_tiles`' and `sample_tiles_ring`'s, the same on an H200): what `scan_split` may
    /// fill.
    scan_resident_warps: u32,
    /// Blocks of the persistent `sample_tiles_mass` grid: as many as run at once (occupancy
    /// calculator × SMs; four per SM on an H200).
    mass_scan_blocks: u32,
    stage_rows: CudaFunction,
    /// The same stage 2 built for two blocks per SM, for batches of more rows than SMs.
    stage_rows_two_per_sm: CudaFunction,
    /// The two stage-2 builds for quiet steps, which finish their undecided rows themselves.
    stage_rows_quiet: CudaFunction,
    stage_rows_quiet_two_per_sm: CudaFunction,
    /// SMs of the device (`abi::rows_two_per_sm`).
    sm_count: u32,
    exact_histogram: CudaFunction,
    /// `exact_histogram` and `exact_gather` with the warp-row path, for steps of enough rows to
    /// take it whose listable rows may all be warp rows (`GpuSampler::exact_builds`).
    exact_histogram_runs: CudaFunction,
    exact_gather_runs: CudaFunction,
    exact_bins: CudaFunction,
    /// The same body two per SM, for steps that may list more rows than SMs
    /// (`abi::rows_two_per_sm`).
    exact_bins_two_per_sm: CudaFunction,
    exact_gather: CudaFunction,
    exact_finish: CudaFunction,
    /// The same body two per SM, for steps that may list more rows than SMs
    /// (`abi::rows_two_per_sm`).
    exact_finish_two_per_sm: CudaFunction,
    /// The whole exact pass in one launch (`ExactPassLaunch::OneLaunch`).
    exact_tail: CudaFunction,
    /// Blocks of `exact_tail`: as many as run at once (one per SM on an H200: registers).
    exact_tail_blocks: u32,
    /// Blocks of the exact-pass kernels, which take their rows and tiles in turn.
    exact_blocks: u32,
    /// List positions with split-exact-pass scratch: `min(max_batch, EXACT_SLOTS_MAX)`.
    exact_slots: u32,
    table: RequestTable,
    slots: HashMap<u64, u32>,
    free_slots: Vec<u32>,
    /// Host staging of the upload buffer: two pinned buffers, used in turn.
    staging: PinnedStaging,
    upload: CudaSlice<u8>,
    counts: CudaSlice<u32>,
    seeds: CudaSlice<u64>,
    steps: CudaSlice<u64>,
    /// `StepParams::slot_flags` (`SLOT_*`), written by stage 2, cleared with the slot.
    slot_flags: CudaSlice<u32>,
    records: CudaSlice<u8>,
    /// Each row's token (`i32` bits), status and exact-pass flag, as three arrays of `max_batch`
    /// words in one allocation (`StepParams::out_tokens`, `out_status`, `exact_flags`), so that
    /// `read_outputs` reads all three with one copy, not three.
    row_words: CudaSlice<u32>,
    /// `StepParams::row_arrivals`: zero between steps.
    row_arrivals: CudaSlice<u32>,
    exact_list: CudaSlice<u32>,
    exact_jobs: CudaSlice<u8>,
    exact_counts: CudaSlice<u32>,
    exact_sums: CudaSlice<u64>,
    exact_keys: CudaSlice<u64>,
    exact_tile_mass: CudaSlice<u64>,
    exact_tile_bins: CudaSlice<u64>,
    /// Warp rows' band codes, a byte a token of each split position (`StepParams::exact_codes`).
    exact_codes: CudaSlice<u8>,
    out_logprobs: CudaSlice<f32>,
    out_top_tokens: CudaSlice<i32>,
    out_top_logprobs: CudaSlice<f32>,
    /// Where `read_outputs` copies `row_words`, `out_logprobs`, `out_top_tokens` and
    /// `out_top_logprobs`: every copy a read needs is queued before the first wait, which alone
    /// waits for the step.
    readback: OutputReadback,
    /// Device copy of host logits for [`Backend::sample`].
    logits_staging: CudaSlice<u8>,
    /// Rows of the last upload: their slots and the outputs they asked for.
    uploaded: Vec<UploadedRow>,
    /// The host half of the next upload, checked before anything is copied; its vectors are
    /// reused from upload to upload.
    prepared: PreparedRows,
    /// Which slots the upload being prepared has taken (a request named twice is refused).
    slot_marks: SlotMarks,
    /// The kernels the last upload's step needs, and whether it is quiet: eager steps launch
    /// them, and replays launch their graph. `All`, not quiet, after a raw write of settings,
    /// which the host cannot see.
    step_plan: StepPlan,
    /// How the last eager step ran its exact pass (`None` before the first and for a greedy
    /// step); a test hook.
    last_eager_exact: Option<StepExactPass>,
    /// Whether the last launch sequence enqueued (an eager step, or the last graph captured)
    /// took the two-per-SM builds (`abi::rows_two_per_sm`); a test hook.
    last_two_per_sm: bool,
    /// The exact-pass builds it took ([`Self::exact_builds`]); a test hook.
    last_exact_builds: ExactBuilds,
    /// Test hook: launch the `_runs` tile builds whenever the batch is large enough, whatever
    /// the listable rows, as before session 51 (their block path is then what takes a step
    /// with a block row).
    warp_runs_by_batch: bool,
    /// Per slot: stage 2 left its request's row undecided in the last step whose outputs were
    /// read (`read_outputs` reads the rows' exact-pass flags under `BySettings`, after a step that
    /// is not greedy). Such a request's next step is not quiet: a row whose logits defeat the
    /// prediction (a top-k row of thousands of equal values, which overflows stage 2's merge;
    /// crowded tiles no longer do, since stage 2 re-reads them) takes the split pass after its
    /// first miss, not the single-block pass every step. New settings, a reset or a drop forget
    /// it.
    slot_undecided: Vec<bool>,
}

/// The host side of a step's upload: two pinned buffers, used in turn, each with an event
/// recorded after the copy out of it. An upload from pageable memory may wait for the stream
/// (the driver stages it through pinned memory of its own), which would hold the host until
/// the last step is done; from pinned memory the copy is queued and the host goes on. Writing
/// a buffer waits only for the copy out of it two uploads ago.
struct PinnedStaging {
    buffers: [PinnedHostSlice<u8>; 2],
    /// Recorded on the stream after the copy out of the buffer of the same index.
    copied: [CudaEvent; 2],
    /// The buffer the next upload writes.
    next: usize,
}

impl PinnedStaging {
    fn new(ctx: &Arc<CudaContext>, bytes: usize) -> Result<Self> {
        let alloc = || {
            let len = bytes.max(1);
            // SAFETY: the contents start unset; they are zeroed below, through a raw pointer,
            // before any reference to them exists.
            let mut buffer = unsafe { ctx.alloc_pinned::<u8>(len) }.map_err(cuda_err("allocating the pinned upload staging"))?;
            let ptr = buffer.as_mut_ptr().map_err(cuda_err("allocating the pinned upload staging"))?;
            // SAFETY: `ptr` starts `len` bytes of host memory this buffer owns.
            unsafe { std::ptr::write_bytes(ptr, 0, len) };
            Ok(buffer)
        };
        let event = || ctx.new_event(None).map_err(cuda_err("creating the upload staging events"));
        Ok(Self { buffers: [alloc()?, alloc()?], copied: [event()?, event()?], next: 0 })
    }

    /// The buffer the next upload writes, once the copy out of it two uploads ago is done.
    fn next_buffer(&mut self) -> Result<&mut [u8]> {
        let i = self.next;
        self.copied[i].synchronize().map_err(cuda_err("waiting for an earlier upload's copy"))?;
        self.buffers[i].as_mut_slice().map_err(cuda_err("writing the pinned upload staging"))
    }

    /// Queues the copy of the first `bytes` of the buffer `next_buffer` gave to `dst` on
    /// `stream`, records its event, and hands the next upload the other buffer. More bytes than
    /// the buffer holds is an error, not a shorter copy: the device would read stale settings.
    ///
    /// # Safety
    /// `dst` addresses at least `bytes` bytes of device memory that nothing else writes before
    /// the copy has run in `stream`'s order.
    unsafe fn copy_out(&mut self, dst: u64, bytes: usize, stream: &CudaStream) -> Result<()> {
        const OP: &str = "uploading the step settings";
        let i = self.next;
        let src = self.buffers[i].as_slice().map_err(cuda_err(OP))?;
        let src = src.get(..bytes).ok_or(Error::CapacityExceeded { what: "upload staging bytes", requested: bytes, capacity: src.len() })?;
        stream.context().bind_to_thread().map_err(cuda_err(OP))?;
        // SAFETY: `src` is pinned host memory that stays untouched until `copied[i]` completes
        // (`next_buffer` waits for it, and `Drop` does); `dst` is the caller's.
        unsafe { cudarc::driver::result::memcpy_htod_async(dst, src, stream.cu_stream()) }.map_err(cuda_err(OP))?;
        self.copied[i].record(stream).map_err(cuda_err(OP))?;
        self.next = 1 - i;
        Ok(())
    }
}

impl Drop for PinnedStaging {
    /// The pinned buffers are freed after this: no queued copy may still read them.
    fn drop(&mut self) {
        for event in &self.copied {
            // A failure here is the context's, and nothing is left to do about it in a drop.
            let _ = event.synchronize();
        }
    }
}

/// Entry point `name`, allowed `bytes` of dynamic shared memory per block (above the 48 KiB a
/// launch gets by default).
fn function_with_shared(gpu: &GpuDevice, name: &'static str, bytes: u32) -> Result<CudaFunction> {
    let function = gpu.function(name)?;
    function
        .set_attribute(
            cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )
        .map_err(|e| Error::Cuda { op: "raising a kernel's shared-memory limit", detail: format!("{name}: {e}") })?;
    Ok(function)
}

/// Blocks of `function` (with `threads` threads and `shared_bytes` of dynamic shared memory)
/// the whole device runs at once, by the occupancy calculator.
fn resident_blocks(gpu: &GpuDevice, function: &CudaFunction, threads: u32, shared_bytes: u32, what: &'static str) -> Result<u32> {
    let per_sm = function
        .occupancy_max_active_blocks_per_multiprocessor(threads, shared_bytes as usize, None)
        .map_err(cuda_err(what))?;
    if per_sm == 0 {
        return Err(Error::Cuda { op: what, detail: "no block fits a multiprocessor".into() });
    }
    Ok(per_sm * gpu.sm_count()?)
}

impl GpuSampler {
    /// Allocates everything a step will need, once.
    pub fn new(gpu: GpuDevice, config: GpuSamplerConfig) -> Result<Self> {
        let capacity = |what: &'static str, requested: usize, limit: usize| {
            if requested == 0 || requested > limit {
                Err(Error::CapacityExceeded { what, requested, capacity: limit })
            } else {
                Ok(())
            }
        };
        capacity("vocab", config.vocab, MAX_VOCAB as usize)?;
        capacity("batch rows", config.max_batch, 65_535)?;
        capacity("requests", config.max_requests, u32::MAX as usize)?;
        let tiles = config.vocab.div_ceil(TILE_TOKENS as usize) as u32;
        let counts_stride = config.vocab.next_multiple_of(8);
        let words = bitmask_words(config.vocab as u32) as usize;
        let layout = UploadLayout::new(config.max_batch, config.max_bias_entries.max(1), words);
        let stream = gpu.stream().clone();
        let alloc_err = cuda_err("allocating sampler memory");
        let b = config.max_batch;
        // Its 52 KiB (with the logits ring) are over the default 48 KiB limit, which this
        // raises.
        let stage_tiles_mass = function_with_shared(&gpu, "sample_tiles_mass", MASS_SCAN_SHARED_BYTES)?;
        // Its bin table too.
        let exact_histogram = function_with_shared(&gpu, "exact_histogram", EXACT_HIST_SHARED_BYTES)?;
        let exact_histogram_runs = function_with_shared(&gpu, "exact_histogram_runs", EXACT_HIST_SHARED_BYTES)?;
        let exact_tail = function_with_shared(&gpu, "exact_tail", EXACT_HIST_SHARED_BYTES)?;
        let exact_tail_blocks =
            resident_blocks(&gpu, &exact_tail, SAMPLER_THREADS, EXACT_HIST_SHARED_BYTES, "reading exact_tail's occupancy")?;
        let sm_count = gpu.sm_count()?.max(1);
        let exact_slots = b.min(EXACT_SLOTS_MAX as usize);
        let stage_tiles = gpu.function("sample_tiles")?;
        let stage_tiles_half = gpu.function("sample_tiles_half")?;
        let stage_tiles_ring = function_with_shared(&gpu, "sample_tiles_ring", SCAN_RING_SHARED_BYTES)?;
        let scan_resident_warps = resident_blocks(&gpu, &stage_tiles, SCAN_THREADS, SCAN_SHARED_BYTES, "reading sample_tiles' occupancy")?
            .min(resident_blocks(&gpu, &stage_tiles_half, SCAN_THREADS, SCAN_SHARED_BYTES, "reading sample_tiles_half's occupancy")?)
            .min(resident_blocks(&gpu, &stage_tiles_ring, SCAN_THREADS, SCAN_RING_SHARED_BYTES, "reading sample_tiles_ring's occupancy")?)
            * SCAN_WARPS;
        // Persistent: as many blocks as fit at once (four per SM on an H200: registers).
        let mass_scan_blocks =
            resident_blocks(&gpu, &stage_tiles_mass, MASS_SCAN_THREADS, MASS_SCAN_SHARED_BYTES, "reading sample_tiles_mass' occupancy")?;
        let sampler = Self {
            stage_tiles,
            stage_tiles_half,
            stage_tiles_ring,
            stage_tiles_greedy: gpu.function("sample_tiles_greedy")?,
            stage_tiles_greedy_pairs: gpu.function("sample_tiles_greedy_pairs")?,
            stage_tiles_mass,
            scan_resident_warps,
            mass_scan_blocks,
            stage_rows: gpu.function("sample_rows")?,
            stage_rows_two_per_sm: gpu.function("sample_rows_two_per_sm")?,
            stage_rows_quiet: gpu.function("sample_rows_quiet")?,
            stage_rows_quiet_two_per_sm: gpu.function("sample_rows_quiet_two_per_sm")?,
            sm_count,
            exact_histogram,
            exact_histogram_runs,
            exact_gather_runs: gpu.function("exact_gather_runs")?,
            exact_bins: gpu.function("exact_bins")?,
            exact_bins_two_per_sm: gpu.function("exact_bins_two_per_sm")?,
            exact_gather: gpu.function("exact_gather")?,
            exact_finish: gpu.function("exact_finish")?,
            exact_finish_two_per_sm: gpu.function("exact_finish_two_per_sm")?,
            exact_tail,
            exact_tail_blocks,
            exact_blocks: sm_count * 2,
            exact_slots: exact_slots as u32,
            table: RequestTable::new(config.vocab),
            slots: HashMap::new(),
            free_slots: (0..config.max_requests as u32).rev().collect(),
            staging: PinnedStaging::new(gpu.context(), layout.total)?,
            upload: stream.alloc_zeros::<u8>(layout.total).map_err(alloc_err)?,
            counts: stream.alloc_zeros::<u32>(config.max_requests * counts_stride).map_err(cuda_err("allocating penalty counts"))?,
            seeds: stream.alloc_zeros::<u64>(config.max_requests).map_err(cuda_err("allocating seeds"))?,
            steps: stream.alloc_zeros::<u64>(config.max_requests).map_err(cuda_err("allocating steps"))?,
            slot_flags: stream.alloc_zeros::<u32>(config.max_requests).map_err(cuda_err("allocating slot flags"))?,
            records: stream
                .alloc_zeros::<u8>(b * tiles as usize * std::mem::size_of::<TileRecord>())
                .map_err(cuda_err("allocating tile records"))?,
            row_words: stream.alloc_zeros::<u32>(ROW_WORD_ARRAYS * b).map_err(cuda_err("allocating outputs"))?,
            row_arrivals: stream.alloc_zeros::<u32>(b).map_err(cuda_err("allocating the row arrival counts"))?,
            exact_list: stream.alloc_zeros::<u32>(EXACT_LIST_HEAD as usize + b).map_err(cuda_err("allocating the exact-pass list"))?,
            exact_jobs: stream
                .alloc_zeros::<u8>(exact_slots * std::mem::size_of::<ExactJob>())
                .map_err(cuda_err("allocating the exact-pass jobs"))?,
            // The histograms must start at zero; `choose_bins` clears each after use.
            exact_counts: stream
                .alloc_zeros::<u32>(exact_slots * EXACT_BINS as usize)
                .map_err(cuda_err("allocating the exact-pass histograms"))?,
            exact_sums: stream
                .alloc_zeros::<u64>(exact_slots * EXACT_BINS as usize)
                .map_err(cuda_err("allocating the exact-pass histograms"))?,
            exact_keys: stream
                .alloc_zeros::<u64>(exact_slots * EXACT_GATHER_KEYS as usize)
                .map_err(cuda_err("allocating the exact-pass key lists"))?,
            exact_tile_mass: stream
                .alloc_zeros::<u64>(exact_slots * tiles as usize * 2)
                .map_err(cuda_err("allocating the exact-pass tile masses"))?,
            exact_tile_bins: stream
                .alloc_zeros::<u64>(exact_slots * tiles as usize * EXACT_SUB_BINS as usize)
                .map_err(cuda_err("allocating the exact-pass tile histograms"))?,
            exact_codes: stream
                .alloc_zeros::<u8>(exact_slots * tiles as usize * TILE_TOKENS as usize)
                .map_err(cuda_err("allocating the exact-pass band codes"))?,
            out_logprobs: stream.alloc_zeros::<f32>(b).map_err(cuda_err("allocating outputs"))?,
            out_top_tokens: stream
                .alloc_zeros::<i32>(b * MAX_TOP_LOGPROBS as usize)
                .map_err(cuda_err("allocating outputs"))?,
            out_top_logprobs: stream
                .alloc_zeros::<f32>(b * MAX_TOP_LOGPROBS as usize)
                .map_err(cuda_err("allocating outputs"))?,
            readback: OutputReadback::new(gpu.context(), b)?,
            logits_staging: stream
                .alloc_zeros::<u8>(b * config.vocab * 4)
                .map_err(cuda_err("allocating the logits staging buffer"))?,
            gpu,
            config,
            tiles,
            counts_stride,
            bitmask_words: words,
            layout,
            uploaded: Vec::new(),
            prepared: PreparedRows::default(),
            slot_marks: SlotMarks::new(config.max_requests),
            step_plan: StepPlan { kernels: StepKernels::All, quiet: false, listable: config.max_batch as u32, block_listable: config.max_batch as u32 },
            last_eager_exact: None,
            last_two_per_sm: false,
            last_exact_builds: ExactBuilds::default(),
            warp_runs_by_batch: false,
            slot_undecided: vec![false; config.max_requests],
        };
        sampler.gpu.synchronize()?;
        Ok(sampler)
    }

    /// The device this sampler runs on.
    pub fn device(&self) -> &GpuDevice {
        &self.gpu
    }

    /// Capacity fixed at creation.
    pub fn config(&self) -> GpuSamplerConfig {
        self.config
    }

    fn slot_of(&self, id: u64) -> Result<u32> {
        self.slots.get(&id).copied().ok_or(Error::UnknownRequest { request: id })
    }

    /// New settings, a reset or a drop: the slot's last step no longer predicts its next.
    fn forget_undecided(&mut self, slot: u32) {
        if let Some(undecided) = self.slot_undecided.get_mut(slot as usize) {
            *undecided = false;
        }
    }

    /// Writes a slot's penalty row (prompt bits, zero counts), seed and step. Synchronous: this
    /// is request management, outside any step.
    fn write_slot(&mut self, slot: u32, prompt: &[u32], seed: u64) -> Result<()> {
        let mut row = vec![0u32; self.counts_stride];
        for &t in prompt {
            if let Some(c) = row.get_mut(t as usize) {
                *c = 0x8000_0000;
            }
        }
        let stream = self.gpu.stream().clone();
        let start = slot as usize * self.counts_stride;
        let mut counts = self.counts.slice_mut(start..start + self.counts_stride);
        stream.memcpy_htod(&row, &mut counts).map_err(cuda_err("writing penalty counts"))?;
        let s = slot as usize;
        stream.memcpy_htod(&[seed], &mut self.seeds.slice_mut(s..s + 1)).map_err(cuda_err("writing a seed"))?;
        stream.memcpy_htod(&[0u64], &mut self.steps.slice_mut(s..s + 1)).map_err(cuda_err("writing a step"))?;
        stream.memcpy_htod(&[0u32], &mut self.slot_flags.slice_mut(s..s + 1)).map_err(cuda_err("clearing slot flags"))?;
        self.gpu.synchronize()
    }

    /// Builds and uploads one step's settings, bias entries and bitmask rows, in one copy.
    /// `rows[i]` is the request of logits row `i`. Validates everything first; on error
    /// nothing is uploaded. Rows with a device bitmask need [`Self::upload_step_with_bitmask`].
    pub fn upload_step(&mut self, rows: &[BatchRow<'_>]) -> Result<()> {
        self.upload(rows, None)
    }

    /// [`Self::upload_step`] for a step whose bitmasks are already on the device: rows made with
    /// [`BatchRow::with_device_bitmask`] take their row of `bitmask`, copied on the sampler's
    /// stream with the settings (one device-to-device copy, no host round trip). So the
    /// caller's writes of `bitmask` must come before this call in that stream's order (or
    /// behind an event it waits for), and the buffer must stay allocated and unwritten until the
    /// copy has run in that order (the step that follows it does). A step takes its
    /// bitmasks from the host or from the device, not both: a row with a host bitmask is
    /// refused here. Nothing is uploaded on error.
    pub fn upload_step_with_bitmask(&mut self, rows: &[BatchRow<'_>], bitmask: &DeviceBitmask<'_>) -> Result<()> {
        self.upload(rows, Some(bitmask))
    }

    /// The checks a device bitmask passes before anything is copied: the sampler's context, a
    /// stride of whole rows, and rows `0..rows` inside the buffer (the step's batch rows or a
    /// verification call's target rows, up to the last one that reads it).
    pub(crate) fn check_device_bitmask(&self, bitmask: &DeviceBitmask<'_>, rows: usize) -> Result<()> {
        let invalid = |reason: String| Error::InvalidSetting { request: None, field: Field::Bitmask, reason };
        let own = self.gpu.context().cu_ctx() as usize;
        if bitmask.context != own {
            return Err(invalid(format!("the device bitmask belongs to CUDA context {:#x}, not the sampler's {own:#x}", bitmask.context)));
        }
        if bitmask.row_stride < self.bitmask_words {
            return Err(invalid(format!("row stride {} words is below the {} words vocab {} needs", bitmask.row_stride, self.bitmask_words, self.config.vocab)));
        }
        if bitmask.rows < rows {
            return Err(invalid(format!("{} device bitmask rows, and row {} reads one", bitmask.rows, rows - 1)));
        }
        // Checked: a wrapped product would pass the length test and let the copy read past the buffer.
        if strided_span(rows, self.bitmask_words, bitmask.row_stride).is_none_or(|n| n > bitmask.elements) {
            return Err(invalid(format!("{} words cannot hold {rows} rows of stride {}", bitmask.elements, bitmask.row_stride)));
        }
        Ok(())
    }

    fn upload(&mut self, rows: &[BatchRow<'_>], device_bitmask: Option<&DeviceBitmask<'_>>) -> Result<()> {
        if rows.len() > self.config.max_batch {
            return Err(Error::CapacityExceeded { what: "batch rows", requested: rows.len(), capacity: self.config.max_batch });
        }
        let limits = UploadLimits {
            vocab: self.config.vocab,
            bitmask_words: self.bitmask_words,
            max_bias_entries: self.config.max_bias_entries,
            device_bitmask: device_bitmask.is_some(),
        };
        self.prepared.fill(rows, &self.table, &self.slots, &mut self.slot_marks, limits)?;
        let PreparedRows { settings, bias_tokens, bias_values, uploaded, mask_rows, device_mask_rows } = &self.prepared;
        let (mask_rows, device_mask_rows) = (*mask_rows, *device_mask_rows);
        if let Some(mask) = device_bitmask {
            self.check_device_bitmask(mask, device_mask_rows)?;
        }
        let l = self.layout;
        let staging = self.staging.next_buffer()?;
        staging[0..4].copy_from_slice(&(rows.len() as u32).to_le_bytes());
        let put = |staging: &mut [u8], at: usize, bytes: &[u8]| staging[at..at + bytes.len()].copy_from_slice(bytes);
        put(staging, l.settings, as_bytes(settings));
        // The rows each stage-1 kernel scans, so that its warps share out their tiles alone.
        let undecided: Vec<bool> = uploaded.iter().map(|u| self.slot_undecided.get(u.slot as usize).copied().unwrap_or(false)).collect();
        let (step_plan, mass_rows, scan_rows) = plan_step(settings, &undecided, self.config.vocab as u32);
        put(staging, l.mass_rows, &(mass_rows.len() as u32).to_le_bytes());
        put(staging, l.mass_rows + 4, as_bytes(&mass_rows));
        put(staging, l.scan_rows, &(scan_rows.len() as u32).to_le_bytes());
        put(staging, l.scan_rows + 4, as_bytes(&scan_rows));
        put(staging, l.bias_tokens, as_bytes(bias_tokens));
        put(staging, l.bias_values, as_bytes(bias_values));
        let words = self.bitmask_words;
        for (i, row) in rows.iter().enumerate() {
            if let Some(mask) = row.bitmask {
                put(staging, l.bitmask + i * words * 4, as_bytes(&mask[..words]));
            }
        }
        let used = if mask_rows > 0 { l.bitmask + mask_rows * words * 4 } else { l.bitmask };
        let stream = self.gpu.stream().clone();
        // The device rows first: a copy the driver refuses (a pitch, say) then changes nothing.
        if let (Some(mask), true) = (device_bitmask, device_mask_rows > 0) {
            let region = device_address_mut(&mut self.upload) + l.bitmask as u64;
            // SAFETY: `check_device_bitmask` checked `mask` for these rows; the upload's bitmask
            // region holds `max_batch ≥ device_mask_rows` rows of `words` words.
            unsafe { copy_device_bitmask(&self.gpu, region, mask, words, device_mask_rows) }?;
        }
        let upload = device_address_mut(&mut self.upload);
        // SAFETY: `upload` holds `layout.total ≥ used` bytes, which only this sampler's stream
        // touches, in order.
        unsafe { self.staging.copy_out(upload, used, &stream) }?;
        // The last upload's rows become the scratch the next one fills.
        std::mem::swap(&mut self.uploaded, &mut self.prepared.uploaded);
        self.step_plan = step_plan;
        Ok(())
    }

    /// The step's parameters; `kernels` says which kernels read them (`overlap_stage1` only
    /// where `sample_tiles_mass` follows `sample_tiles`).
    fn step_params(&mut self, logits: &DeviceLogits<'_>, rows: usize, kernels: StepKernels, exact: StepExactPass) -> StepParams {
        let l = self.layout;
        let upload = device_address_mut(&mut self.upload);
        let row_words = device_address_mut(&mut self.row_words);
        // The row-word arrays the kernels write, each `max_batch` u32 into `row_words`.
        let [exact_flags, out_tokens, out_status] = [ROW_FLAGS, ROW_TOKENS, ROW_STATUS].map(|array| row_words + 4 * self.row_array(array).start as u64);
        let tile_split = scan_split(rows as u32 * self.tiles, self.scan_resident_warps);
        StepParams {
            logits: logits.ptr,
            row_stride: logits.row_stride as u64,
            active_rows: upload,
            settings: upload + l.settings as u64,
            mass_rows: upload + l.mass_rows as u64,
            scan_rows: upload + l.scan_rows as u64,
            bitmask: upload + l.bitmask as u64,
            bias_tokens: upload + l.bias_tokens as u64,
            bias_values: upload + l.bias_values as u64,
            counts: device_address_mut(&mut self.counts),
            seeds: device_address_mut(&mut self.seeds),
            steps: device_address_mut(&mut self.steps),
            // A quiet step neither skips lists nor leaves flags: none of its rows may skip
            // (`decide::lists_skippable`), and its stage 2 finishes a listed row slowly.
            slot_flags: if self.config.skip_lists_after_wide_step && exact != StepExactPass::InStageTwo {
                device_address_mut(&mut self.slot_flags)
            } else {
                0
            },
            records: device_address_mut(&mut self.records),
            exact_flags,
            row_arrivals: device_address_mut(&mut self.row_arrivals),
            exact_list: device_address_mut(&mut self.exact_list),
            exact_jobs: device_address_mut(&mut self.exact_jobs),
            exact_counts: device_address_mut(&mut self.exact_counts),
            exact_sums: device_address_mut(&mut self.exact_sums),
            exact_keys: device_address_mut(&mut self.exact_keys),
            exact_tile_mass: device_address_mut(&mut self.exact_tile_mass),
            exact_tile_bins: device_address_mut(&mut self.exact_tile_bins),
            exact_codes: device_address_mut(&mut self.exact_codes),
            out_tokens,
            out_status,
            out_logprobs: device_address_mut(&mut self.out_logprobs),
            out_top_tokens: device_address_mut(&mut self.out_top_tokens),
            out_top_logprobs: device_address_mut(&mut self.out_top_logprobs),
            dtype: dtype_code(logits.dtype),
            vocab: self.config.vocab as u32,
            rows: rows as u32,
            tiles: self.tiles,
            bitmask_words: self.bitmask_words as u32,
            bias_capacity: self.config.max_bias_entries.max(1) as u32,
            slots: self.config.max_requests as u32,
            counts_stride: self.counts_stride as u32,
            exact_slots: self.exact_slots,
            tile_split,
            overlap_stage1: (self.config.overlap_kernels
                && kernels == StepKernels::All
                && overlap_stage1(rows as u32, rows as u32 * self.tiles, tile_split, self.scan_resident_warps))
                as u32,
            scan_resident_warps: self.scan_resident_warps,
        }
    }

    fn check_logits(&self, logits: &DeviceLogits<'_>, rows: usize) -> Result<()> {
        let invalid = |reason: String| Error::InvalidSetting { request: None, field: Field::Logits, reason };
        if rows > self.config.max_batch {
            return Err(Error::CapacityExceeded { what: "batch rows", requested: rows, capacity: self.config.max_batch });
        }
        if logits.rows < rows {
            return Err(invalid(format!("{} logits rows for {rows} batch rows", logits.rows)));
        }
        if let Some(context) = logits.context {
            let own = self.gpu.context().cu_ctx() as usize;
            if context != own {
                // Its device address means nothing (or another buffer) in this sampler's context.
                return Err(invalid(format!(
                    "the logits buffer belongs to CUDA context {context:#x} (device {}), not the sampler's {own:#x}",
                    self.gpu.context().ordinal()
                )));
            }
        }
        if logits.element_bytes != dtype_bytes(logits.dtype) {
            return Err(invalid(format!(
                "dtype {:?} needs {}-byte elements, the buffer holds {}-byte ones",
                logits.dtype,
                dtype_bytes(logits.dtype),
                logits.element_bytes
            )));
        }
        if logits.row_stride < self.config.vocab {
            return Err(invalid(format!("row stride {} is below the vocab {}", logits.row_stride, self.config.vocab)));
        }
        if strided_span(rows, self.config.vocab, logits.row_stride).is_none_or(|n| n > logits.elements) {
            return Err(invalid(format!("{} elements cannot hold {rows} rows of stride {}", logits.elements, logits.row_stride)));
        }
        Ok(())
    }

    /// How a step runs its exact pass: the configured launches, or under `BySettings` none
    /// for a `quiet` step and four for another.
    fn exact_launch(&self, quiet: bool) -> StepExactPass {
        match self.config.exact_pass {
            ExactPassLaunch::BySettings if quiet => StepExactPass::InStageTwo,
            ExactPassLaunch::BySettings | ExactPassLaunch::FourLaunches => StepExactPass::FourLaunches,
            ExactPassLaunch::OneLaunch => StepExactPass::OneLaunch,
        }
    }

    /// Enqueues the kernels of one step for `rows` grid rows (the upload says how many are
    /// active): stage 1 (two), stage 2, and the exact pass (one or four launches in the order
    /// [`ExactPassOrder`] says, or none, with stage 2's quiet build, as `exact` says), as
    /// `kernels` says: without `sample_tiles_mass`, or `sample_tiles_greedy` alone, which
    /// finishes the rows; the exact pass's kernels in the `builds` given. Nothing here
    /// synchronizes or allocates.
    fn enqueue(&mut self, logits: &DeviceLogits<'_>, rows: usize, kernels: StepKernels, exact: StepExactPass, builds: ExactBuilds) -> Result<()> {
        if rows == 0 {
            return Ok(());
        }
        self.last_two_per_sm = rows_two_per_sm(rows as u32, self.sm_count);
        self.last_exact_builds = builds;
        let params = KernelParams(self.step_params(logits, rows, kernels, exact));
        let stream = self.gpu.stream().clone();
        let block = (SAMPLER_THREADS, 1, 1);
        // One warp per (row, tile) in each stage-1 kernel, `sample_tiles` split further for small
        // grids (the split the parameters carry); rows · tiles ≤ 65535 · 256, and times 8 only
        // when that is below the resident warps, fit a u32.
        let warps = rows as u32 * self.tiles;
        let tiles_cfg = LaunchConfig {
            grid_dim: ((warps * params.0.tile_split).div_ceil(SCAN_WARPS), 1, 1),
            block_dim: (SCAN_THREADS, 1, 1),
            shared_mem_bytes: SCAN_SHARED_BYTES,
        };
        // The same grid, with the ring's shared memory, when it is one wave. Beside the mass
        // scan, where it takes the listed rows alone (a grid of one warp a tile), as many blocks
        // as the GPU holds: `listed_scan_split` gives the listed tiles two warps where the launch
        // allows, and a grid sized for every row allowed it up to half a mixed step's rows (32
        // of 64: about half the heterogeneous rows need the mass). Warps past them exit at once.
        let (stage_tiles, stage_tiles_cfg) = if one_wave(warps, params.0.tile_split, self.scan_resident_warps) {
            let blocks = if lists_scan_rows(params.0.overlap_stage1, params.0.tile_split) { tiles_cfg.grid_dim.0.max(self.scan_resident_warps / SCAN_WARPS) } else { tiles_cfg.grid_dim.0 };
            (&self.stage_tiles_ring, LaunchConfig { grid_dim: (blocks, 1, 1), shared_mem_bytes: SCAN_RING_SHARED_BYTES, ..tiles_cfg })
        } else if logits.dtype == LogitsDtype::F32 {
            (&self.stage_tiles, tiles_cfg)
        } else {
            (&self.stage_tiles_half, tiles_cfg)
        };
        // Persistent: at most the blocks that fit at once. A block per item when they are
        // fewer, so that the kernel can give each tile all four warps of a block
        // (`abi::mass_split`; it decides from the grid it gets).
        let mass_cfg = LaunchConfig {
            grid_dim: (warps.min(self.mass_scan_blocks), 1, 1),
            block_dim: (MASS_SCAN_THREADS, 1, 1),
            shared_mem_bytes: MASS_SCAN_SHARED_BYTES,
        };
        let rows_cfg = LaunchConfig { grid_dim: (rows as u32, 1, 1), block_dim: block, shared_mem_bytes: SAMPLER_SHARED_BYTES };
        // The exact pass takes its listed rows (and their tiles) in turn over a fixed grid, so a
        // step that lists none pays a few idle blocks, not one per row and tile. The per-row
        // kernels get no more blocks than rows with scratch: idle blocks past them only
        // lengthen the launch (128 registers: a second wave of 132 above one row per SM).
        let exact_cfg = |shared_mem_bytes, items: u32| LaunchConfig {
            grid_dim: (self.exact_grid(items), 1, 1),
            block_dim: block,
            shared_mem_bytes,
        };
        let split_rows = (rows as u32).min(self.exact_slots);
        let two_per_sm = self.last_two_per_sm;
        let exact_bins = if builds.two_per_sm { &self.exact_bins_two_per_sm } else { &self.exact_bins };
        let (exact_histogram, exact_gather) = if builds.warp_runs {
            (&self.exact_histogram_runs, &self.exact_gather_runs)
        } else {
            (&self.exact_histogram, &self.exact_gather)
        };
        let stage_rows = match (exact, two_per_sm) {
            (StepExactPass::InStageTwo, true) => &self.stage_rows_quiet_two_per_sm,
            (StepExactPass::InStageTwo, false) => &self.stage_rows_quiet,
            (_, true) => &self.stage_rows_two_per_sm,
            (_, false) => &self.stage_rows,
        };
        let exact_finish = if builds.two_per_sm { &self.exact_finish_two_per_sm } else { &self.exact_finish };
        // The first kernel waits for the upload (and the previous step) in stream order; each
        // later one may overlap its predecessor's tail: all of them call
        // `griddepcontrol.wait` before touching what an earlier kernel of the step wrote.
        let later = if self.config.overlap_kernels { LaunchOrder::Overlapped } else { LaunchOrder::Serial };
        // Every item of the one-launch queue is a (row, tile) twice or a row once.
        let tail_cfg = LaunchConfig {
            grid_dim: (self.exact_tail_blocks.min(2 * warps + rows as u32), 1, 1),
            block_dim: block,
            shared_mem_bytes: EXACT_HIST_SHARED_BYTES,
        };
        let stages = [
            (stage_tiles, stage_tiles_cfg, "launching sample_tiles"),
            (&self.stage_tiles_mass, mass_cfg, "launching sample_tiles_mass"),
            (stage_rows, rows_cfg, "launching sample_rows"),
        ];
        let exact_pass_one = [(&self.exact_tail, tail_cfg, "launching exact_tail")];
        let exact_pass_four = [
            (exact_histogram, exact_cfg(EXACT_HIST_SHARED_BYTES, warps), "launching exact_histogram"),
            (exact_bins, exact_cfg(SAMPLER_SHARED_BYTES, split_rows), "launching exact_bins"),
            (exact_gather, exact_cfg(SAMPLER_SHARED_BYTES, warps), "launching exact_gather"),
            // Split rows and the single-block pass's rows, which may be any listed row.
            (exact_finish, exact_cfg(SAMPLER_SHARED_BYTES, rows as u32), "launching exact_finish"),
        ];
        let exact_pass: &[_] = match exact {
            StepExactPass::OneLaunch => &exact_pass_one,
            StepExactPass::FourLaunches => &exact_pass_four,
            StepExactPass::InStageTwo => &[],
        };
        let exact_order = |j: usize| match self.config.exact_pass_order {
            ExactPassOrder::Serial => LaunchOrder::Serial,
            _ if j > 0 || builds.first_overlapped => later,
            _ => LaunchOrder::Serial,
        };
        let no_mass_scan = [stages[0], stages[2]];
        let mass_scan_only = [stages[1], stages[2]];
        // Large grids give each warp two tiles (`abi::greedy_span`: split one).
        let span = greedy_span(warps, self.tiles, params.0.tile_split, self.scan_resident_warps);
        let greedy_step = if span == 2 {
            let cfg = LaunchConfig { grid_dim: (greedy_spans(rows as u32, self.tiles, span).div_ceil(SCAN_WARPS), 1, 1), ..tiles_cfg };
            [(&self.stage_tiles_greedy_pairs, cfg, "launching sample_tiles_greedy_pairs")]
        } else {
            [(&self.stage_tiles_greedy, tiles_cfg, "launching sample_tiles_greedy")]
        };
        let (stages, exact_pass): (&[_], &[_]) = match kernels {
            StepKernels::All => (&stages, exact_pass),
            StepKernels::NoMassScan => (&no_mass_scan, exact_pass),
            StepKernels::MassScanOnly => (&mass_scan_only, exact_pass),
            StepKernels::Greedy => (&greedy_step, &[]),
        };
        let launches = stages.iter().map(|l| (l, later)).chain(exact_pass.iter().enumerate().map(|(j, l)| (l, exact_order(j))));
        for (index, (&(function, config, what), order)) in launches.enumerate() {
            let order = if index == 0 { LaunchOrder::Serial } else { order };
            // SAFETY: `StepParams` matches the kernels' parameter by the ABI module; every
            // pointer in it addresses a buffer this sampler allocated for `max_batch` rows,
            // `max_requests` slots and the vocab (rows ≤ max_batch was checked), or the caller's
            // logits, checked against rows, stride and length; the grid and block shapes and
            // the shared-memory size are the ones the kernels document; every kernel after the
            // first waits with `griddepcontrol.wait` as `launch_ordered` requires.
            unsafe { launch_ordered(&stream, function, config, &params, order) }.map_err(cuda_err(what))?;
        }
        Ok(())
    }

    /// Enqueues one step on device logits with the settings of the last [`Self::upload_step`].
    pub fn enqueue_step(&mut self, logits: &DeviceLogits<'_>) -> Result<()> {
        let rows = self.uploaded.len();
        self.check_logits(logits, rows)?;
        let plan = self.step_plan;
        let exact = self.exact_launch(plan.quiet);
        self.enqueue(logits, rows, plan.kernels, exact, self.exact_builds(exact, &plan, rows as u32))?;
        self.last_eager_exact = if plan.kernels == StepKernels::Greedy { None } else { Some(exact) };
        Ok(())
    }

    /// How the last eager step ([`Self::enqueue_step`]) ran its exact pass (`None` before the
    /// first and for a greedy step). Not API: the GPU tests check the choice with it.
    #[doc(hidden)]
    pub fn last_step_exact_pass(&self) -> Option<StepExactPass> {
        self.last_eager_exact
    }

    /// Whether the last launch sequence enqueued (an eager step, or the last graph captured)
    /// took the two-per-SM builds of stage 2: more rows than the device has SMs. Not API: the
    /// GPU tests check that a case meant for them ran them.
    #[doc(hidden)]
    pub fn last_step_two_per_sm(&self) -> bool {
        self.last_two_per_sm
    }

    /// Whether the last launch sequence enqueued took the two-per-SM builds of `exact_bins`
    /// and the finish ([`Self::exact_builds`]). Not API: for the GPU tests.
    #[doc(hidden)]
    pub fn last_step_exact_two_per_sm(&self) -> bool {
        self.last_exact_builds.two_per_sm
    }

    /// Whether the last launch sequence enqueued took the `_runs` builds of `exact_histogram`
    /// and `exact_gather` ([`Self::exact_builds`]). Not API: for the GPU tests.
    #[doc(hidden)]
    pub fn last_step_exact_warp_runs(&self) -> bool {
        self.last_exact_builds.warp_runs
    }

    /// Test hook: launch the `_runs` builds of `exact_histogram` and `exact_gather` whenever
    /// the batch is large enough for warp runs, whatever the settings (so that their block
    /// path takes the steps with a block row, which the host now gives the plain builds).
    #[doc(hidden)]
    pub fn set_exact_warp_runs_by_batch(&mut self, on: bool) {
        self.warp_runs_by_batch = on;
    }

    /// The builds of a step of `rows` grid rows whose exact pass runs as `exact`, from its
    /// `plan` ([`ExactBuilds::choose`]). The test hook `warp_runs_by_batch` counts no block row.
    fn exact_builds(&self, exact: StepExactPass, plan: &StepPlan, rows: u32) -> ExactBuilds {
        let block_listable = if self.warp_runs_by_batch { 0 } else { plan.block_listable };
        ExactBuilds::choose(exact, self.config.exact_pass_order, plan.listable, block_listable, rows, self.sm_count, self.takes_warp_runs(rows))
    }

    /// Captures a step for up to `rows` rows of `logits` into CUDA graphs, one per
    /// [`StepKernels`], under `ExactPassLaunch::BySettings` [`StepExactPass`], and for four
    /// exact-pass launches each build of its kernels, and each order of its first launch, the
    /// rows' settings may call for (`exact_builds`: four to sixteen graphs). Replays use the logits' contents,
    /// settings, seeds and penalty state current at replay time.
    ///
    /// # Safety
    /// The graph keeps the logits' device address. The caller keeps that memory allocated,
    /// with at least the shape given here, for as long as it replays the graph (the borrow in
    /// `DeviceLogits` ends with this call, so that the caller can write new logits between
    /// replays).
    pub unsafe fn capture_step(&mut self, logits: &DeviceLogits<'_>, rows: usize) -> Result<StepGraph> {
        self.check_logits(logits, rows)?;
        let (busy, quiet) = (self.exact_launch(false), self.exact_launch(true));
        let mut graphs = Vec::new();
        for kernels in [StepKernels::All, StepKernels::NoMassScan, StepKernels::MassScanOnly] {
            for exact in if quiet == busy { vec![busy] } else { vec![busy, quiet] } {
                for builds in ExactBuilds::possible(exact, self.config.exact_pass_order, rows as u32, self.sm_count, self.takes_warp_runs(rows as u32)) {
                    graphs.push((kernels, Some(exact), builds, self.capture(logits, rows, kernels, exact, builds)?.into()));
                }
            }
        }
        let none = ExactBuilds::default();
        graphs.push((StepKernels::Greedy, None, none, self.capture(logits, rows, StepKernels::Greedy, busy, none)?.into()));
        Ok(StepGraph { graphs, rows, last: Cell::new(None) })
    }

    /// One captured graph of [`Self::enqueue`]'s launches.
    fn capture(&mut self, logits: &DeviceLogits<'_>, rows: usize, kernels: StepKernels, exact: StepExactPass, builds: ExactBuilds) -> Result<CudaGraph> {
        let gpu_stream = self.gpu.stream().clone();
        gpu_stream
            .begin_capture(cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(cuda_err("beginning stream capture"))?;
        let enqueued = self.enqueue(logits, rows, kernels, exact, builds);
        let ended = gpu_stream.end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0));
        enqueued?;
        ended
            .map_err(cuda_err("ending stream capture"))?
            .ok_or(Error::Cuda { op: "ending stream capture", detail: "the capture recorded no work".into() })
    }

    /// Enqueues one replay of `graph` for the rows of the last [`Self::upload_step`], which must
    /// not be more than the graph was captured for (the kernels would leave the rest unsampled).
    pub fn replay(&mut self, graph: &StepGraph) -> Result<()> {
        if self.uploaded.len() > graph.rows {
            return Err(Error::CapacityExceeded { what: "rows uploaded for this graph", requested: self.uploaded.len(), capacity: graph.rows });
        }
        let plan = self.step_plan;
        let StepPlan { kernels, quiet, .. } = plan;
        let exact = if kernels == StepKernels::Greedy { None } else { Some(self.exact_launch(quiet)) };
        // The builds for the graph's rows, as its capture saw them: the grid is the graph's.
        // At most its rows are listable (checked above), so it holds every build this asks for.
        let builds = exact.map_or(ExactBuilds::default(), |e| self.exact_builds(e, &plan, graph.rows as u32));
        let chosen = graph
            .graphs
            .iter()
            .find(|(k, e, b, _)| (*k, *e, *b) == (kernels, exact, builds))
            .ok_or(Error::Cuda { op: "replaying the step graph", detail: format!("no graph captured for {kernels:?}, {exact:?}, {builds:?}") })?;
        chosen.3.launch().map_err(cuda_err("replaying the step graph"))?;
        graph.last.set(Some((kernels, exact, builds)));
        Ok(())
    }

    /// Waits for the step and reads the outputs of the rows of the last upload.
    ///
    /// Allocates the rows it returns; [`Self::read_outputs_into`] reuses a caller's.
    pub fn read_outputs(&mut self) -> Result<Vec<RowOutput>> {
        let mut out = Vec::new();
        self.read_outputs_into(&mut out)?;
        Ok(out)
    }

    /// Waits for the step and reads the outputs of the rows of the last upload into `out`,
    /// one entry a row, in upload order.
    ///
    /// `out`'s entries, and their `top_logprobs` vectors, are overwritten in place: an engine
    /// that keeps one `Vec` from step to step stops allocating here once it has held its
    /// largest batch, with the most top log-probabilities at each position. Entries past the
    /// batch are dropped.
    pub fn read_outputs_into(&mut self, out: &mut Vec<RowOutput>) -> Result<()> {
        let n = self.uploaded.len();
        let stream = self.gpu.stream().clone();
        const READ_OP: &str = "reading the outputs";
        // `undecided` steers only `BySettings`, and a greedy step leaves no row undecided: the
        // flags are read only where they can change a plan.
        let track = self.config.exact_pass == ExactPassLaunch::BySettings && self.step_plan.kernels != StepKernels::Greedy;
        // Tokens, status and (when tracked) the flags in one copy: the arrays up to the last
        // one read, its first `n` words.
        let last = self.row_array(if track { ROW_FLAGS } else { ROW_STATUS });
        let (token_words, status_words) = (self.row_array(ROW_TOKENS), self.row_array(ROW_STATUS));
        // The log-probability arrays only when a row asked for them (a row's entries are read
        // below only then). Every copy is queued before the first wait.
        let wants_logprob = self.uploaded.iter().any(|row| row.want_logprob);
        let wants_top = self.uploaded.iter().any(|row| row.top_logprobs > 0);
        let top_stride = MAX_TOP_LOGPROBS as usize;
        let rb = &mut self.readback;
        rb.words.queue(&stream, &self.row_words.slice(0..last.end), READ_OP)?;
        if wants_logprob {
            rb.logprobs.queue(&stream, &self.out_logprobs.slice(0..n), READ_OP)?;
        }
        if wants_top {
            rb.top_tokens.queue(&stream, &self.out_top_tokens.slice(0..n * top_stride), READ_OP)?;
            rb.top_logprobs.queue(&stream, &self.out_top_logprobs.slice(0..n * top_stride), READ_OP)?;
        }
        let rb = &self.readback;
        let words = rb.words.read(READ_OP)?;
        let read = HostStepOutputs {
            tokens: &words[token_words],
            status: &words[status_words],
            logprobs: if wants_logprob { rb.logprobs.read(READ_OP)? } else { &[] },
            top_tokens: if wants_top { rb.top_tokens.read(READ_OP)? } else { &[] },
            top_logprobs: if wants_top { rb.top_logprobs.read(READ_OP)? } else { &[] },
            top_stride,
        };
        fill_row_outputs(&self.uploaded, &read, out);
        // Penalty counts and step counters advanced on the device; the host keeps only the
        // exact-pass hint.
        if track {
            for (row, &flag) in self.uploaded.iter().zip(&words[last]) {
                if let Some(undecided) = self.slot_undecided.get_mut(row.slot as usize) {
                    *undecided = flag != 0;
                }
            }
        }
        Ok(())
    }

    /// The step outputs in device memory, for work that consumes them without a host round
    /// trip: the next forward pass's input ids, or a copy to pinned memory read later.
    ///
    /// The arrays hold `max_batch` entries at addresses fixed for the sampler's life, so a
    /// graph captured over them stays valid from step to step. Entries `0..rows` of the last
    /// upload hold that step's outputs once its work on the sampler's stream is done: enqueue
    /// the consumer on that stream after the step (in stream order, or in the same capture),
    /// or on another stream after an event recorded on it. Entries past them are stale.
    ///
    /// The request state (penalty counts, step counters) lives on the device and advances with
    /// the step itself. Only [`Self::read_outputs`] keeps the hint that steers later launch
    /// plans (which requests' rows the exact pass finished): a caller that reads nothing back
    /// gets the same tokens, and a request whose rows keep needing the exact pass may take
    /// stage 2's slower in-block finish instead.
    pub fn device_outputs(&self) -> Result<DeviceOutputs<'_>> {
        let b = self.config.max_batch;
        let words = self.row_words.slice(ROW_TOKENS * b..(ROW_TOKENS + 1) * b);
        // SAFETY: every u32 bit pattern is a valid i32, and the kernels write tokens as i32 bits.
        let tokens = unsafe { words.transmute::<i32>(b) }
            .ok_or(Error::Cuda { op: "viewing the step outputs", detail: format!("{b} token words not allocated") })?;
        Ok(DeviceOutputs { tokens, status: self.row_words.slice(ROW_STATUS * b..(ROW_STATUS + 1) * b) })
    }

    /// Test hook: overwrites entry `row` (< `max_batch`) of the uploaded `RowSettings` in device
    /// memory with `raw` (the struct's 12 words, in field order), as a caller writing straight
    /// into device memory would; the next step or replay reads it. Enqueued on the sampler's
    /// stream after the last [`Self::upload_step`]. Not API: the reliability tests use it to feed
    /// garbage settings to the kernels, which must answer `STATUS_INVALID_SETTINGS` for that row.
    #[doc(hidden)]
    pub fn write_raw_settings(&mut self, row: usize, raw: [u32; 12]) -> Result<()> {
        const _: () = assert!(std::mem::size_of::<[u32; 12]>() == std::mem::size_of::<RowSettings>());
        if row >= self.config.max_batch {
            return Err(Error::CapacityExceeded { what: "batch rows", requested: row + 1, capacity: self.config.max_batch });
        }
        let at = self.layout.settings + row * std::mem::size_of::<RowSettings>();
        // The host no longer knows the row's settings: every kernel runs (not a greedy step),
        // and both stage-1 kernels are handed every row (each tests each row itself).
        self.step_plan = StepPlan { kernels: StepKernels::All, quiet: false, listable: self.config.max_batch as u32, block_listable: self.config.max_batch as u32 };
        let every_row: Vec<u32> = std::iter::once(self.config.max_batch as u32).chain(0..self.config.max_batch as u32).collect();
        let stream = self.gpu.stream().clone();
        for list in [self.layout.mass_rows, self.layout.scan_rows] {
            stream
                .memcpy_htod(as_bytes(&every_row), &mut self.upload.slice_mut(list..list + 4 * every_row.len()))
                .map_err(cuda_err("writing the stage-1 row lists"))?;
        }
        stream
            .memcpy_htod(as_bytes(&raw), &mut self.upload.slice_mut(at..at + std::mem::size_of::<RowSettings>()))
            .map_err(cuda_err("writing raw row settings"))
    }

    /// Test hook: overwrites bias entry `entry` (< `max_bias_entries`) of the uploaded step in
    /// device memory with `(token, value_bits)`, after the last [`Self::upload_step`], as a
    /// caller writing straight into device memory would. Not API: the reliability tests use it
    /// to plant duplicate bias ids, which the kernels must refuse per row.
    #[doc(hidden)]
    pub fn write_raw_bias(&mut self, entry: usize, token: u32, value_bits: u32) -> Result<()> {
        let capacity = self.config.max_bias_entries.max(1);
        if entry >= capacity {
            return Err(Error::CapacityExceeded { what: "bias entries", requested: entry + 1, capacity });
        }
        let stream = self.gpu.stream().clone();
        for (base, word) in [(self.layout.bias_tokens, token), (self.layout.bias_values, value_bits)] {
            let at = base + entry * 4;
            stream
                .memcpy_htod(as_bytes(&[word]), &mut self.upload.slice_mut(at..at + 4))
                .map_err(cuda_err("writing a raw bias entry"))?;
        }
        Ok(())
    }

    /// How many rows of the last step the exact pass finished (stage 2 could not decide them
    /// from the tile lists). Synchronous; for tests and the benchmark.
    pub fn exact_rows_last_step(&self) -> Result<usize> {
        let (split, single) = self.exact_paths_last_step()?;
        Ok(split + single)
    }

    /// Of the rows of the last step the exact pass finished, how many the split pass took and
    /// how many the single-block pass (the rest: infinite rows, too-full boundary bins, ...).
    /// Synchronous; for tests and the benchmark.
    pub fn exact_paths_last_step(&self) -> Result<(usize, usize)> {
        let flags = self.exact_flags_last_step()?;
        let count = |kind: u32| flags.iter().filter(|&&f| f == kind).count();
        Ok((count(EXACT_SPLIT), count(EXACT_SINGLE)))
    }

    /// The words of `row_words` array `array` (`ROW_*`) that hold the last upload's rows.
    fn row_array(&self, array: usize) -> std::ops::Range<usize> {
        let first = array * self.config.max_batch;
        first..first + self.uploaded.len()
    }

    /// Which rows of the last step stage 2 left to the exact pass, in batch order. Synchronous;
    /// not API: the GPU tests check that rows meant for stage 2 were decided there.
    #[doc(hidden)]
    pub fn rows_left_to_exact_pass_last_step(&self) -> Result<Vec<bool>> {
        Ok(self.exact_flags_last_step()?.into_iter().map(|f| f != 0).collect())
    }

    /// The last step's rows' exact-pass flags (`EXACT_*`, 0 for a row stage 2 decided).
    fn exact_flags_last_step(&self) -> Result<Vec<u32>> {
        self.gpu.stream().clone_dtoh(&self.row_words.slice(self.row_array(ROW_FLAGS))).map_err(cuda_err("reading the exact-pass flags"))
    }

    /// Of the rows of the last step the split pass took, how many it took in band mode
    /// (`ExactJob::band`: top-p without min-p or an effective top-k, only the boundary band
    /// binned). Synchronous; for tests.
    pub fn exact_band_rows_last_step(&self) -> Result<usize> {
        Ok(self.split_job_words_last_step(std::mem::offset_of!(ExactJob, band))?.into_iter().filter(|&b| b != u32::MAX).count())
    }

    /// The gathered key counts (`ExactJob::gathered`) of the rows of the last step the split pass
    /// took, in list order. Synchronous; for tests (`exact_finish` decides on arrays of two keys
    /// a thread up to 1024 keys, and of eight above).
    #[doc(hidden)]
    pub fn exact_gathered_keys_last_step(&self) -> Result<Vec<u32>> {
        self.split_job_words_last_step(std::mem::offset_of!(ExactJob, gathered))
    }

    /// The `u32` at byte `offset` of the job of each row of the last step the split pass took
    /// (listed, with scratch, flagged `EXACT_SPLIT`), in list order.
    fn split_job_words_last_step(&self, offset: usize) -> Result<Vec<u32>> {
        let n = self.uploaded.len();
        let flags = self.exact_flags_last_step()?;
        let stream = self.gpu.stream();
        let list = stream
            .clone_dtoh(&self.exact_list.slice(0..EXACT_LIST_HEAD as usize + n))
            .map_err(cuda_err("reading the exact-pass list"))?;
        let jobs = stream.clone_dtoh(&self.exact_jobs).map_err(cuda_err("reading the exact-pass jobs"))?;
        let listed = (list[0] as usize).min(n).min(self.exact_slots as usize);
        let job_bytes = std::mem::size_of::<ExactJob>();
        let split = |pos: usize| flags.get(list[EXACT_LIST_HEAD as usize + pos] as usize) == Some(&EXACT_SPLIT);
        Ok((0..listed)
            .filter(|&pos| split(pos))
            .filter_map(|pos| {
                let at = pos * job_bytes + offset;
                jobs.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            })
            .collect())
    }

    /// Blocks `enqueue` gives an exact-pass kernel that takes `items` items in turn.
    fn exact_grid(&self, items: u32) -> u32 {
        self.exact_blocks.min(items)
    }

    /// Warps in the grid `enqueue` gives `exact_histogram` and `exact_gather` (an item per row
    /// and tile) for `rows` rows: the grid the kernels' `abi::warp_row_run` sees.
    fn exact_grid_warps(&self, rows: u32) -> u32 {
        self.exact_grid(rows.saturating_mul(self.tiles)) * (SAMPLER_THREADS / 32)
    }

    /// Whether a step of `rows` rows is large enough for the `_runs` builds of
    /// `exact_histogram` and `exact_gather`: when its split rows, all of them warp rows, would
    /// be enough for warp runs (`abi::warp_row_run`). The kernels decide from the step's split
    /// rows themselves; [`Self::exact_builds`] also asks the settings.
    fn takes_warp_runs(&self, rows: u32) -> bool {
        warp_row_run(rows.min(self.exact_slots), self.tiles, self.exact_grid_warps(rows)).is_some()
    }

    /// How `exact_histogram` and `exact_gather` took the last step's split rows: how many of
    /// them were not warp rows (band mode without logit bias), and the rounds each warp took
    /// (`abi::warp_row_run` on the step's split rows and the grid those kernels had), `None`
    /// when they took the rows a block per tile. Synchronous; for tests.
    pub fn exact_warp_run_last_step(&self) -> Result<(u32, Option<u32>)> {
        let head = self
            .gpu
            .stream()
            .clone_dtoh(&self.exact_list.slice(0..EXACT_LIST_HEAD as usize))
            .map_err(cuda_err("reading the exact-pass list"))?;
        let rows = self.uploaded.len() as u32;
        let split = head.first().copied().unwrap_or(0).min(rows).min(self.exact_slots);
        let block_rows = head.get(EXACT_LIST_BLOCK_ROWS as usize).copied().unwrap_or(0);
        let run = if block_rows == 0 && self.last_exact_builds.warp_runs {
            warp_row_run(split, self.tiles, self.exact_grid_warps(rows))
        } else {
            None
        };
        Ok((block_rows, run))
    }

    fn stage_host_logits(&mut self, batch: &Batch<'_>) -> Result<DeviceLogits<'static>> {
        let logits = &batch.logits;
        let rows = batch.rows.len();
        let vocab = self.config.vocab;
        let elem = dtype_bytes(logits.dtype());
        let bytes: Vec<u8>;
        let compact: &[u8] = match logits.data() {
            LogitsData::F32(d) => as_bytes(d),
            LogitsData::Bf16(d) => as_bytes(d),
            LogitsData::F16(d) => as_bytes(d),
        };
        // Copy rows as they are when the stride equals the vocab; otherwise pack them.
        let src: &[u8] = if logits.row_stride() == vocab {
            &compact[..rows * vocab * elem]
        } else {
            let stride = logits.row_stride() * elem;
            bytes = (0..rows).flat_map(|r| compact[r * stride..r * stride + vocab * elem].iter().copied()).collect();
            &bytes
        };
        let stream = self.gpu.stream().clone();
        if !src.is_empty() {
            stream
                .memcpy_htod(src, &mut self.logits_staging.slice_mut(0..src.len()))
                .map_err(cuda_err("uploading logits"))?;
        }
        let ptr = device_address_mut(&mut self.logits_staging);
        Ok(DeviceLogits::from_parts(ptr, logits.dtype(), rows, vocab, rows * vocab))
    }
}

impl Backend for GpuSampler {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn vocab(&self) -> usize {
        self.config.vocab
    }

    fn max_batch(&self) -> usize {
        self.config.max_batch
    }

    fn add_request(&mut self, id: u64, params: SamplingParams, prompt: &[u32]) -> Result<()> {
        if self.slots.contains_key(&id) {
            return Err(Error::DuplicateRequest { request: id });
        }
        let Some(&slot) = self.free_slots.last() else {
            return Err(Error::CapacityExceeded { what: "requests", requested: self.slots.len() + 1, capacity: self.config.max_requests });
        };
        let seed = params.seed;
        self.table.add(id, params, prompt)?;
        if let Err(e) = self.write_slot(slot, prompt, seed) {
            let _ = self.table.drop_request(id);
            return Err(e);
        }
        self.free_slots.pop();
        self.slots.insert(id, slot);
        Ok(())
    }

    fn reset_request(&mut self, id: u64, prompt: &[u32]) -> Result<()> {
        let slot = self.slot_of(id)?;
        self.table.reset(id, prompt)?;
        self.forget_undecided(slot);
        let seed = self.table.get(id).map(|s| s.params.seed).unwrap_or(0);
        self.write_slot(slot, prompt, seed)
    }

    fn update_request(&mut self, id: u64, params: SamplingParams) -> Result<()> {
        let slot = self.slot_of(id)?;
        let seed = params.seed;
        self.table.update_params(id, params)?;
        self.forget_undecided(slot);
        let s = slot as usize;
        let stream = self.gpu.stream().clone();
        stream.memcpy_htod(&[seed], &mut self.seeds.slice_mut(s..s + 1)).map_err(cuda_err("writing a seed"))?;
        // New settings: the last step's width no longer predicts anything.
        stream.memcpy_htod(&[0u32], &mut self.slot_flags.slice_mut(s..s + 1)).map_err(cuda_err("clearing slot flags"))?;
        self.gpu.synchronize()
    }

    fn drop_request(&mut self, id: u64) -> Result<()> {
        let slot = self.slot_of(id)?;
        self.table.drop_request(id)?;
        self.forget_undecided(slot);
        self.slots.remove(&id);
        self.free_slots.push(slot);
        Ok(())
    }

    fn request_step(&self, id: u64) -> Result<u64> {
        let slot = self.slot_of(id)? as usize;
        let stream = self.gpu.stream().clone();
        let step = stream.clone_dtoh(&self.steps.slice(slot..slot + 1)).map_err(cuda_err("reading a step counter"))?;
        step.first().copied().ok_or(Error::Cuda { op: "reading a step counter", detail: "empty read".into() })
    }

    fn sample(&mut self, batch: &Batch<'_>) -> Result<Vec<RowOutput>> {
        validate_batch(batch, &self.table, self.config.max_batch)?;
        self.upload_step(&batch.rows)?;
        let logits = self.stage_host_logits(batch)?;
        self.enqueue_step(&logits)?;
        self.read_outputs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_xoshiro::rand_core::Rng;
    use sampler_kernels::status::{STATUS_INVALID_SETTINGS, STATUS_NO_VALID_TOKEN};

    /// `fill_row_outputs` gives each row what the read copied, indexed directly (the read
    /// before session 63, restated), into a fresh `Vec` and into one left dirty by a larger and
    /// by a smaller earlier batch alike: reuse leaks nothing from earlier rows.
    #[test]
    fn row_outputs_are_the_rows_read_whatever_the_vector_held() {
        let mut rng = crate::test_rng("row outputs");
        let stride = MAX_TOP_LOGPROBS as usize;
        let mut dirty = Vec::new();
        for n in [257usize, 3, 1, 64, 257, 0, 5] {
            let uploaded: Vec<UploadedRow> = (0..n)
                .map(|_| UploadedRow {
                    slot: rng.next_u32(),
                    want_logprob: rng.next_u32().is_multiple_of(2),
                    top_logprobs: if rng.next_u32().is_multiple_of(3) { 0 } else { rng.next_u32() % (stride as u32 + 1) },
                })
                .collect();
            let status: Vec<u32> = (0..n).map(|_| [STATUS_OK, STATUS_OK, STATUS_OK, STATUS_NO_VALID_TOKEN, STATUS_INVALID_SETTINGS][rng.next_u32() as usize % 5]).collect();
            let tokens: Vec<u32> = status.iter().map(|&s| if s == STATUS_OK { rng.next_u32() % 151_936 } else { u32::MAX }).collect();
            let logprobs: Vec<f32> = (0..n).map(|_| (rng.next_u32() % 10_000) as f32 * -1e-3).collect();
            // Rows narrower than their count pad with −1.
            let top_tokens: Vec<i32> = (0..n * stride).map(|_| if rng.next_u32().is_multiple_of(7) { -1 } else { (rng.next_u32() % 151_936) as i32 }).collect();
            let top_logprobs: Vec<f32> = (0..n * stride).map(|_| (rng.next_u32() % 10_000) as f32 * -1e-3).collect();
            let read = HostStepOutputs { tokens: &tokens, status: &status, logprobs: &logprobs, top_tokens: &top_tokens, top_logprobs: &top_logprobs, top_stride: stride };
            let expected: Vec<RowOutput> = (0..n)
                .map(|i| {
                    let UploadedRow { want_logprob, top_logprobs: top, .. } = uploaded[i];
                    let ok = status[i] == STATUS_OK;
                    let mut row = RowOutput { token: tokens[i] as i32, status: status[i], logprob: None, top_logprobs: Vec::new() };
                    if ok {
                        row.logprob = want_logprob.then_some(logprobs[i]);
                        for j in 0..top as usize {
                            if top_tokens[i * stride + j] >= 0 {
                                row.top_logprobs.push((top_tokens[i * stride + j] as u32, top_logprobs[i * stride + j]));
                            }
                        }
                    }
                    row
                })
                .collect();
            let mut fresh = Vec::new();
            fill_row_outputs(&uploaded, &read, &mut fresh);
            assert_eq!(fresh, expected, "{n} rows into a fresh vector");
            fill_row_outputs(&uploaded, &read, &mut dirty);
            assert_eq!(dirty, expected, "{n} rows into a reused vector");
        }
        // Without the optional arrays (no row asked), no row gets a logprob or top entries.
        let uploaded = [UploadedRow { slot: 1, want_logprob: false, top_logprobs: 0 }, UploadedRow { slot: 2, want_logprob: false, top_logprobs: 0 }];
        let read = HostStepOutputs { tokens: &[5, u32::MAX], status: &[STATUS_OK, STATUS_NO_VALID_TOKEN], logprobs: &[], top_tokens: &[], top_logprobs: &[], top_stride: stride };
        fill_row_outputs(&uploaded, &read, &mut dirty);
        let bare = |token, status| RowOutput { token, status, logprob: None, top_logprobs: Vec::new() };
        assert_eq!(dirty, [bare(5, STATUS_OK), bare(-1, STATUS_NO_VALID_TOKEN)]);
    }

    /// A request table of `n` requests (ids `1000 + 7i`, slots a permutation of `0..n`) with
    /// settings drawn at random: bias lists of 0–40 entries, logprobs and top-logprobs or not.
    fn drawn_requests(rng: &mut impl Rng, n: usize, vocab: usize) -> (RequestTable, HashMap<u64, u32>, Vec<u64>) {
        let mut table = RequestTable::new(vocab);
        let ids: Vec<u64> = (0..n as u64).map(|i| 1000 + 7 * i).collect();
        let mut slots: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            slots.swap(i, rng.next_u32() as usize % (i + 1));
        }
        for &id in &ids {
            let mut params = SamplingParams::random(0.5 + (rng.next_u32() % 100) as f32 * 0.01, rng.next_u64())
                .with_top_k(rng.next_u32() % 5000)
                .with_top_p(0.5 + (rng.next_u32() % 50) as f32 * 0.01)
                .with_penalties(1.1, 0.2, 0.3);
            let bias_len = [0, 0, 1, 3, 40][rng.next_u32() as usize % 5];
            let mut bias_ids: Vec<u32> = (0..bias_len).map(|_| rng.next_u32() % vocab as u32).collect();
            bias_ids.sort_unstable();
            bias_ids.dedup();
            params = params.with_logit_bias(bias_ids.iter().map(|&t| (t, (t % 7) as f32 - 3.0)).collect());
            if rng.next_u32().is_multiple_of(2) {
                params = params.with_logprobs(rng.next_u32() % (MAX_TOP_LOGPROBS + 1));
            }
            table.add(id, params, &[]).expect("drawn settings are valid");
        }
        (table, ids.iter().copied().zip(slots).collect(), ids)
    }

    /// `PreparedRows::fill` turns each row into its request's settings, slot, bias entries (in
    /// row order, at consecutive offsets) and read needs, and measures the two bitmask heights;
    /// refilled in place, a smaller batch after a larger one leaves nothing of it behind.
    #[test]
    fn prepared_rows_are_the_rows_requests_in_row_order() {
        let mut rng = crate::test_rng("prepared rows");
        let vocab = 50_257;
        let words = bitmask_words(vocab as u32) as usize;
        let (table, slots, ids) = drawn_requests(&mut rng, 300, vocab);
        let mask = vec![-1i32; words];
        let limits = UploadLimits { vocab, bitmask_words: words, max_bias_entries: 300 * 40, device_bitmask: false };
        let mut marks = SlotMarks::new(300);
        let mut prepared = PreparedRows::default();
        for n in [257usize, 3, 1, 257, 64] {
            // `n` distinct requests in a random order, about a third of them masked.
            let mut picked = ids.clone();
            for i in (1..picked.len()).rev() {
                picked.swap(i, rng.next_u32() as usize % (i + 1));
            }
            picked.truncate(n);
            let masked: Vec<bool> = (0..n).map(|_| rng.next_u32().is_multiple_of(3)).collect();
            let rows: Vec<BatchRow<'_>> =
                picked.iter().zip(&masked).map(|(&id, &m)| if m { BatchRow::with_bitmask(id, &mask) } else { BatchRow::new(id) }).collect();
            prepared.fill(&rows, &table, &slots, &mut marks, limits).expect("a valid batch");
            assert_eq!(prepared.settings.len(), n);
            assert_eq!(prepared.uploaded.len(), n);
            assert_eq!(prepared.mask_rows, masked.iter().rposition(|&m| m).map_or(0, |i| i + 1), "{n} rows");
            assert_eq!(prepared.device_mask_rows, 0);
            let mut offset = 0;
            for (i, (&id, s)) in picked.iter().zip(&prepared.settings).enumerate() {
                let p = &table.get(id).expect("drawn").params;
                let (bias_offset, bias_len) = (s.bias_offset as usize, s.bias_len as usize);
                assert_eq!((s.slot, bias_offset, bias_len), (slots[&id], offset, p.logit_bias.len()), "row {i} of {n}");
                assert_eq!((s.temperature, s.top_p, s.top_k), (p.temperature, p.top_p, p.top_k), "row {i} of {n}");
                let bias: Vec<(u32, f32)> = prepared.bias_tokens[offset..offset + bias_len]
                    .iter()
                    .copied()
                    .zip(prepared.bias_values[offset..offset + bias_len].iter().copied())
                    .collect();
                assert_eq!(bias, p.logit_bias, "row {i} of {n}");
                offset += bias_len;
                assert_eq!(s.flags & ROW_HAS_BITMASK != 0, masked[i]);
                assert_eq!(s.flags & ROW_WANT_LOGPROB != 0, p.logprobs);
                assert_eq!(s.flags >> ROW_TOP_LOGPROBS_SHIFT, p.top_logprobs);
                assert_eq!(prepared.uploaded[i], UploadedRow { slot: slots[&id], want_logprob: p.logprobs, top_logprobs: p.top_logprobs });
            }
            assert_eq!(prepared.bias_tokens.len(), offset);
            assert_eq!(prepared.bias_values.len(), offset);
        }
        // Device bitmask rows: their height, and host rows refused beside them.
        let device = UploadLimits { device_bitmask: true, ..limits };
        let rows = [BatchRow::with_device_bitmask(ids[0]), BatchRow::new(ids[1]), BatchRow::with_device_bitmask(ids[2]), BatchRow::new(ids[3])];
        prepared.fill(&rows, &table, &slots, &mut marks, device).expect("device rows");
        assert_eq!((prepared.mask_rows, prepared.device_mask_rows), (0, 3));
    }

    /// Every refusal of `PreparedRows::fill`, with the first failing row's error; and after a
    /// refused upload the same rows pass, even across the mark count's wrap.
    #[test]
    fn prepared_rows_refuse_bad_batches_by_their_first_bad_row() {
        let mut rng = crate::test_rng("refused rows");
        let vocab = 151_936;
        let words = bitmask_words(vocab as u32) as usize;
        let (table, slots, ids) = drawn_requests(&mut rng, 40, vocab);
        let limits = UploadLimits { vocab, bitmask_words: words, max_bias_entries: 40 * 40, device_bitmask: false };
        let mut marks = SlotMarks::new(40);
        let mut prepared = PreparedRows::default();
        let (short, full) = (vec![-1i32; words - 1], vec![-1i32; words]);
        let plain: Vec<BatchRow<'_>> = ids.iter().map(|&id| BatchRow::new(id)).collect();
        let bias_total: usize = ids.iter().map(|&id| table.get(id).map_or(0, |s| s.params.logit_bias.len())).sum();
        let with = |at: usize, row: BatchRow<'static>| -> Vec<BatchRow<'static>> {
            let mut rows = plain.clone();
            rows.insert(at, row);
            rows
        };
        let at = 1 + rng.next_u32() as usize % 38;
        let cases: Vec<(&str, Vec<BatchRow<'_>>, UploadLimits)> = vec![
            ("unknown request", with(at, BatchRow::new(5)), limits),
            ("request twice", with(at, BatchRow::new(ids[rng.next_u32() as usize % at])), limits),
            ("short host bitmask", { let mut r = plain.clone(); r[at] = BatchRow::with_bitmask(ids[at], &short); r }, limits),
            ("device row, no device bitmask", { let mut r = plain.clone(); r[at] = BatchRow::with_device_bitmask(ids[at]); r }, limits),
            ("host row in a device upload", { let mut r = plain.clone(); r[at] = BatchRow::with_bitmask(ids[at], &full); r }, UploadLimits { device_bitmask: true, ..limits }),
            ("bias over capacity", plain.clone(), UploadLimits { max_bias_entries: bias_total.saturating_sub(1), ..limits }),
            // The first bad row wins over the step's bias count.
            ("request twice, bias over", with(at, BatchRow::new(ids[0])), UploadLimits { max_bias_entries: 0, ..limits }),
        ];
        for (what, rows, case_limits) in cases {
            let refused = prepared.fill(&rows, &table, &slots, &mut marks, case_limits);
            let right = match (what, &refused) {
                ("unknown request", Err(Error::UnknownRequest { request: 5 })) => true,
                ("request twice" | "request twice, bias over", Err(Error::DuplicateRequest { .. })) => true,
                ("short host bitmask" | "device row, no device bitmask" | "host row in a device upload", Err(Error::InvalidSetting { field: Field::Bitmask, request, .. })) => {
                    *request == Some(ids[at])
                }
                ("bias over capacity", Err(Error::CapacityExceeded { requested, .. })) => *requested == bias_total,
                _ => false,
            };
            assert!(right, "{what} (row {at}): {refused:?}");
            // A refused upload leaves no slot taken for the next.
            prepared.fill(&plain, &table, &slots, &mut marks, limits).unwrap_or_else(|e| panic!("after {what}: {e}"));
        }
        // Across the wrap of the marks' upload count: the first upload after it takes slots
        // that the first upload of all (count 1) marked, and no slot is taken twice falsely.
        let (first, second) = plain.split_at(20);
        let mut marks = SlotMarks::new(40);
        prepared.fill(first, &table, &slots, &mut marks, limits).expect("count 1");
        marks.upload = u32::MAX - 1;
        prepared.fill(second, &table, &slots, &mut marks, limits).expect("count u32::MAX");
        prepared.fill(first, &table, &slots, &mut marks, limits).expect("no false duplicate across the wrap");
        assert_eq!(marks.upload, 1, "the count wrapped");
        for _ in 0..3 {
            assert!(matches!(prepared.fill(&with(at, BatchRow::new(ids[0])), &table, &slots, &mut marks, limits), Err(Error::DuplicateRequest { .. })));
            prepared.fill(&plain, &table, &slots, &mut marks, limits).expect("after the wrap");
        }
    }

    /// `ByRows` overlaps the exact pass's first launch only on grids of up to one row a SM with
    /// at least `OVERLAP_FIRST_MIN_LISTABLE` rows stage 2 may list; the fixed orders ignore both.
    #[test]
    fn exact_pass_first_launch_overlaps_by_listable_rows() {
        let sms = 132;
        // (listable, rows, overlapped)
        let expected = [
            (1, 1, false),
            (8, 8, false),
            (32, 32, false),
            (39, 39, false),
            (40, 40, true),
            (48, 64, true),
            (21, 64, false),
            (39, 132, false),
            (100, 100, true),
            (132, 132, true),
            (133, 133, false),
            (64, 133, false),
            (256, 256, false),
            (1024, 1024, false),
            // More listable rows than the grid's (raw settings: every row) count as the grid's.
            (1024, 39, false),
            (1024, 64, true),
        ];
        for (listable, rows, overlapped) in expected {
            assert_eq!(ExactPassOrder::ByRows.first_overlapped(listable, rows, sms), overlapped, "{listable} of {rows} rows");
            assert!(ExactPassOrder::Overlapped.first_overlapped(listable, rows, sms));
            assert!(!ExactPassOrder::FirstSerial.first_overlapped(listable, rows, sms));
            assert!(!ExactPassOrder::Serial.first_overlapped(listable, rows, sms));
        }
        // A GPU of fewer SMs than the threshold never overlaps it; one of as many only at one
        // row a SM.
        assert!(!ExactPassOrder::ByRows.first_overlapped(48, 48, 40));
        assert!(ExactPassOrder::ByRows.first_overlapped(40, 40, 40));
        assert_eq!(ExactPassOrder::default(), ExactPassOrder::ByRows);
    }

    /// Every combination: a row reads the device bitmask exactly when it asks for it and the
    /// upload has one, and a row with host masks may neither ask for it nor sit in such an upload.
    #[test]
    fn device_bitmask_rows_are_taken_from_one_side() {
        for host in [false, true] {
            for device in [false, true] {
                for given in [false, true] {
                    let got = reads_device_bitmask(host, device, given);
                    let refused = (host && device) || (device && !given) || (host && given);
                    assert_eq!(got.is_err(), refused, "host {host} device {device} given {given}");
                    if let Ok(reads) = got {
                        assert_eq!(reads, device && given);
                    }
                }
            }
        }
    }

    fn row(temperature: f32, top_k: u32, flags: u32) -> RowSettings {
        RowSettings { temperature, top_p: 1.0, repetition_penalty: 1.0, top_k, flags, ..RowSettings::default() }
    }

    /// Each kernel set, and the two stage-1 row lists, from the rows' settings: greedy rows alone (with
    /// penalties' fields or not) are a greedy step; a greedy row wanting log-probabilities, or a
    /// random row without top-k, needs the mass scan; top-k rows among greedy ones do not; rows
    /// that all need it skip `sample_tiles`. A
    /// step is quiet while every row is greedy, small top-k or untruncated; one top-p row or
    /// one large top-k row makes it busy, and the listable count is how many such rows it has.
    #[test]
    fn plan_step_picks_the_kernels_the_rows_need() {
        let greedy = row(0.0, 0, 0);
        let greedy_lp = row(0.0, 0, ROW_WANT_LOGPROB);
        let greedy_top = row(0.0, 0, 3 << ROW_TOP_LOGPROBS_SHIFT);
        let top_k = row(0.7, 50, 0);
        let wide_top_k = row(0.7, 4000, 0);
        let full = row(1.0, 0, 0);
        let top_p = RowSettings { top_p: 0.9, ..full };
        // `listable`: the rows stage 2 may list (not small top-k, greedy or untruncated, or
        // undecided last step); the step is quiet when there are none. `block`: those of them
        // that cannot be warp rows (a top-k under the vocab, greedy, bias).
        let plan = |kernels, listable, block_listable| StepPlan { kernels, quiet: listable == 0, listable, block_listable };
        let step = |rows: &[RowSettings], undecided: &[bool]| plan_step(rows, undecided, 32_000);
        let biased_top_p = RowSettings { bias_len: 2, ..top_p };
        assert_eq!(step(&[greedy, greedy, greedy], &[]), (plan(StepKernels::Greedy, 0, 0), vec![], vec![0, 1, 2]));
        assert_eq!(step(&[greedy, top_k, greedy], &[]), (plan(StepKernels::NoMassScan, 0, 0), vec![], vec![0, 1, 2]));
        assert_eq!(step(&[greedy, wide_top_k, top_k], &[]), (plan(StepKernels::NoMassScan, 1, 1), vec![], vec![0, 1, 2]));
        assert_eq!(step(&[top_k, greedy_lp, greedy, full], &[]), (plan(StepKernels::All, 0, 0), vec![1, 3], vec![0, 2]));
        assert_eq!(step(&[top_k, greedy_lp, top_p, full], &[]), (plan(StepKernels::All, 1, 0), vec![1, 2, 3], vec![0]));
        assert_eq!(step(&[greedy_top, greedy], &[]), (plan(StepKernels::All, 0, 0), vec![0], vec![1]));
        assert_eq!(step(&[full], &[]), (plan(StepKernels::MassScanOnly, 0, 0), vec![0], vec![]));
        assert_eq!(step(&[top_p, greedy_lp, full], &[]), (plan(StepKernels::MassScanOnly, 1, 0), vec![0, 1, 2], vec![]));
        assert_eq!(step(&[top_p, wide_top_k, top_p, top_k], &[]), (plan(StepKernels::All, 3, 1), vec![0, 2], vec![1, 3]));
        assert_eq!(step(&[top_p, biased_top_p], &[]), (plan(StepKernels::MassScanOnly, 2, 1), vec![0, 1], vec![]));
        // A row left undecided in its request's last step makes the step busy, whatever its
        // settings, and counts as listable once; the other rows' do not count.
        assert_eq!(step(&[greedy, top_k], &[false, true]), (plan(StepKernels::NoMassScan, 1, 1), vec![], vec![0, 1]));
        assert_eq!(step(&[greedy, top_k], &[false, false]), (plan(StepKernels::NoMassScan, 0, 0), vec![], vec![0, 1]));
        assert_eq!(step(&[greedy, greedy], &[true, true]), (plan(StepKernels::Greedy, 2, 2), vec![], vec![0, 1]));
        assert_eq!(step(&[top_p, greedy], &[true, false]), (plan(StepKernels::All, 1, 0), vec![0], vec![1]));
    }

    /// The exact pass's builds on an H200 (132 SMs): a mixed batch of 256 rows, about a third
    /// listable and some of those no warp rows, takes both plain builds; flat top-p rows, all
    /// listable warp rows, the two-per-SM and `_runs` ones; only four launches have any. Every
    /// choice is one a captured step holds a graph for.
    #[test]
    fn exact_builds_follow_the_listable_rows() {
        let (four, sms, by_rows) = (StepExactPass::FourLaunches, 132, ExactPassOrder::ByRows);
        let b = |two_per_sm, warp_runs| ExactBuilds { two_per_sm, warp_runs, first_overlapped: false };
        let overlapped = |b: ExactBuilds| ExactBuilds { first_overlapped: true, ..b };
        assert_eq!(ExactBuilds::choose(four, by_rows, 95, 40, 256, sms, true), b(false, false));
        assert_eq!(ExactBuilds::choose(four, by_rows, 256, 0, 256, sms, true), b(true, true));
        assert_eq!(ExactBuilds::choose(four, by_rows, 133, 1, 256, sms, true), b(true, false));
        assert_eq!(ExactBuilds::choose(four, by_rows, 132, 0, 256, sms, true), b(false, true));
        assert_eq!(ExactBuilds::choose(four, by_rows, 256, 0, 256, sms, false), b(true, false));
        // More listable rows than the grid's (raw settings: every row) count as the grid's.
        assert_eq!(ExactBuilds::choose(four, by_rows, 1024, 1024, 100, sms, true), overlapped(b(false, false)));
        // A mixed batch of 64 rows, a third listable, keeps the first launch in stream order;
        // flat top-p rows, all listable, overlap it.
        assert_eq!(ExactBuilds::choose(four, by_rows, 21, 5, 64, sms, true), b(false, false));
        assert_eq!(ExactBuilds::choose(four, by_rows, 64, 0, 64, sms, true), overlapped(b(false, true)));
        assert_eq!(ExactBuilds::choose(StepExactPass::OneLaunch, by_rows, 64, 0, 64, sms, true), overlapped(ExactBuilds::default()));
        assert_eq!(ExactBuilds::choose(StepExactPass::InStageTwo, ExactPassOrder::Overlapped, 64, 0, 64, sms, true), ExactBuilds::default());
        for order in [by_rows, ExactPassOrder::Overlapped, ExactPassOrder::FirstSerial, ExactPassOrder::Serial] {
            assert_eq!(ExactBuilds::choose(StepExactPass::InStageTwo, order, 256, 0, 256, sms, true), ExactBuilds::default());
            assert_eq!(ExactBuilds::possible(StepExactPass::InStageTwo, order, 256, sms, true), vec![ExactBuilds::default()]);
        }
        assert_eq!(ExactBuilds::possible(StepExactPass::OneLaunch, by_rows, 256, sms, true), vec![ExactBuilds::default()]);
        assert_eq!(ExactBuilds::possible(StepExactPass::OneLaunch, by_rows, 64, sms, true), vec![ExactBuilds::default(), overlapped(ExactBuilds::default())]);
        assert_eq!(ExactBuilds::possible(four, by_rows, 256, sms, true).len(), 4);
        assert_eq!(
            ExactBuilds::possible(four, by_rows, 100, sms, true),
            vec![b(false, false), overlapped(b(false, false)), b(false, true), overlapped(b(false, true))]
        );
        assert_eq!(ExactBuilds::possible(four, ExactPassOrder::Overlapped, 100, sms, true), vec![overlapped(b(false, false)), overlapped(b(false, true))]);
        assert_eq!(ExactBuilds::possible(four, by_rows, 39, sms, false), vec![b(false, false)]);
        for order in [by_rows, ExactPassOrder::Overlapped, ExactPassOrder::FirstSerial, ExactPassOrder::Serial] {
            for exact in [four, StepExactPass::OneLaunch, StepExactPass::InStageTwo] {
                for rows in [1u32, 3, 39, 40, 64, 132, 133, 257] {
                    for runs_fit in [false, true] {
                        let possible = ExactBuilds::possible(exact, order, rows, sms, runs_fit);
                        for listable in 0..=rows {
                            for block_listable in [0, 1, listable] {
                                let chosen = ExactBuilds::choose(exact, order, listable, block_listable.min(listable), rows, sms, runs_fit);
                                assert!(possible.contains(&chosen), "{chosen:?} for {listable} of {rows} rows ({order:?}, {exact:?}): no graph");
                            }
                        }
                    }
                }
            }
        }
    }
}

// Speculative verification on the GPU (docs/SEMANTICS.md §10) lives in its own file; a child
// module so that it can use the sampler's device buffers and request table.
#[path = "gpu_verify.rs"]
pub mod verify;
