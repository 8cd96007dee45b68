//! `sonic-bench`: the benchmark binary that travels in the bundle (`run.sh bench`).
//!
//! One run measures, on the GPU it finds:
//! - the ceilings: device-to-device copy bandwidth (the driver's memcpy and our 16-byte copy
//!   kernel; the faster is the reference) and a graph-replayed empty kernel;
//! - the sampler step (one to seven kernels, captured in a CUDA graph) over a grid of vocab sizes,
//!   batch sizes, dtypes and workloads, with LLM-like logits generated on the GPU;
//! - top-k alone (`topk128`: `GpuTopK`, k = 128, values and indices) on the same grid, the line
//!   to set against torch.topk and FlashInfer's top-k (bench/peers/).
//!
//! Timing: CUDA events around each graph replay, after warm-up; a 256 MB buffer is rewritten
//! before every replay (outside the events) and two logits buffer sets alternate, so nothing is
//! timed from L2. Median and 10th–90th percentiles over the replays. GB/s counts the bytes a
//! step must move: the logits once, the bitmask rows, and the penalty counts of rows with
//! penalties. Results go to `--out DIR` as `sonic-bench.json` and `sonic-bench.md`.
//!
//! Options: `--quick` (a subset in well under a minute), `--only CELL[,CELL..]`
//! (`workload:dtype:V:B`), `--replays N`, `--date D`, `--serial-launches` (the step's kernels
//! in plain stream order instead of overlapped launches, for an A/B), `--exact-pass one|four`
//! (the exact pass always in one launch, `exact_tail`, or always in four, instead of the
//! default `settings`, which picks per step, for an A/B),
//! `--exact-order by-rows|overlapped|first-serial|serial` (which exact-pass launches overlap their
//! predecessor; by-rows is the default, for an A/B), `--no-skip-lists` (every top-p row
//! builds its candidate lists, even when its request's last step was wide:
//! `GpuSamplerConfig::skip_lists_after_wide_step` off, for an A/B), `--warm-l2` (no rewrite
//! between replays: the cells run with their code, settings and, where they fit, logits in
//! L2, which measures what the eviction costs; the ceilings are timed as usual), and
//! `--logits FILE` (`.npy` or
//! `.safetensors`, `rows × V` saved from a real model): the file's rows replace the generated
//! ones, tiled over each batch, at the file's V.

use std::fmt::Write as _;
use std::path::PathBuf;

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream};
use rand_xoshiro::rand_core::Rng;
use sampler_host::backend::Backend;
use sampler_host::cuda::GpuDevice;
use sampler_host::gpu::{DeviceLogits, ExactPassLaunch, ExactPassOrder, GpuSampler, GpuSamplerConfig, StepGraph, OVERLAP_FIRST_MIN_LISTABLE};
use sampler_host::gpu_topk::{GpuTopK, TopKGraph};
use sampler_host::logits::LogitsDtype;
use sampler_host::logits_file::LogitsFile;
use sampler_host::topk::TopK;
use sampler_host::settings::SamplingParams;
use sampler_kernels::abi::{DTYPE_BF16, DTYPE_F32, FILL_CROWDED, FILL_FLAT, FILL_PEAKED};
use rand_xoshiro::rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use sampler_tests::{below, bitmask_row, mixed_params, rows_with_masks, unit};

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

// The speculative-verification workloads live in their own file.
#[path = "../verify_bench.rs"]
mod verify_bench;

const FLUSH_BYTES: usize = 256 << 20;

#[derive(Clone, Copy, Debug)]
struct Timing {
    median_us: f64,
    p10_us: f64,
    p90_us: f64,
}

fn timing(mut samples: Vec<f64>) -> Timing {
    samples.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Timing { median_us: at(0.5), p10_us: at(0.1), p90_us: at(0.9) }
}

fn events(stream: &CudaStream, n: usize) -> BenchResult<Vec<CudaEvent>> {
    let ctx = stream.context();
    (0..n)
        .map(|_| Ok(ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?))
        .collect()
}

/// What stands between two timed replays: a rewrite of a buffer larger than L2 (the default,
/// as a model's forward pass between two sampling steps evicts the sampler's code and data), or
/// nothing (`--warm-l2`, to measure what the eviction costs a cell).
struct L2Flush {
    buffer: CudaSlice<u8>,
    before_each_replay: bool,
}

/// Times `replays` runs of `launch(i)`, each preceded (outside the timed region) by `flush`'s
/// rewrite when it has one, with one event pair per run and a single synchronization at the end.
fn time_replays<F>(stream: &std::sync::Arc<CudaStream>, flush: &mut L2Flush, warmup: usize, replays: usize, mut launch: F) -> BenchResult<Timing>
where
    F: FnMut(usize) -> BenchResult<()>,
{
    for i in 0..warmup {
        launch(i)?;
    }
    stream.synchronize()?;
    let starts = events(stream, replays)?;
    let ends = events(stream, replays)?;
    for i in 0..replays {
        if flush.before_each_replay {
            stream.memset_zeros(&mut flush.buffer)?;
        }
        starts[i].record(stream)?;
        launch(i)?;
        ends[i].record(stream)?;
    }
    stream.synchronize()?;
    let samples = starts
        .iter()
        .zip(&ends)
        .map(|(s, e)| s.elapsed_ms(e).map(|ms| ms as f64 * 1000.0))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(timing(samples))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Workload {
    Greedy,
    TopK50TopP09T07,
    Heterogeneous,
    PeakedTopP095,
    FlatTopP095,
    /// T 1 with no truncation on `FlatTopP095`'s rows (`rows_from`), decided by stage 2 (mass
    /// scan, no exact pass): the fast path the exact pass is measured against.
    FlatFull,
    /// T 1 with no truncation: what a serving engine runs by default (every row needs its mass).
    RandomFull,
    /// Top-k alone, k = 128, values and indices (`GpuTopK`), no sampling.
    TopK128,
    /// `TopK50TopP09T07`'s settings on rows whose best tokens crowd into the first tile
    /// (`FILL_CROWDED`): more than a tile list's 32 of a row's top 50 lie there.
    CrowdedTopK50,
    /// `FlatTopP095`'s settings on flat rows in one logits set and peaked rows in the other, so
    /// that every replay's rows differ in shape from the step before: the worst case for
    /// skipping the lists after a wide step (`GpuSamplerConfig::skip_lists_after_wide_step`).
    AlternatingTopP095,
}

/// The k of the `topk128` workload (the peers use the same).
const TOPK_BENCH_K: usize = 128;

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Workload::Greedy => "greedy",
            Workload::TopK50TopP09T07 => "topk50_topp09_t07",
            Workload::Heterogeneous => "heterogeneous",
            Workload::PeakedTopP095 => "peaked_topp095",
            Workload::FlatTopP095 => "flat_topp095",
            Workload::FlatFull => "flat_full",
            Workload::RandomFull => "random_full",
            Workload::TopK128 => "topk128",
            Workload::CrowdedTopK50 => "crowded_topk50",
            Workload::AlternatingTopP095 => "alternating_topp095",
        }
    }
    /// The workload whose cell key seeds this one's generator (rows, settings' seeds): itself,
    /// but `FlatFull` draws `FlatTopP095`'s, so that the two time the same rows (both draw one
    /// seed per row before the logits).
    fn rows_from(self) -> Workload {
        if self == Workload::FlatFull {
            Workload::FlatTopP095
        } else {
            self
        }
    }
    /// The logits shape of set `set` (0 or 1) of the cell.
    fn shape(self, set: u64) -> u32 {
        if matches!(self, Workload::FlatTopP095 | Workload::FlatFull) || (self == Workload::AlternatingTopP095 && set == 0) {
            FILL_FLAT
        } else if self == Workload::CrowdedTopK50 {
            FILL_CROWDED
        } else {
            FILL_PEAKED
        }
    }
    fn params(self, rng: &mut impl Rng, vocab: usize) -> SamplingParams {
        let seed = rng.next_u64();
        match self {
            Workload::Greedy | Workload::TopK128 => SamplingParams::greedy(),
            Workload::TopK50TopP09T07 | Workload::CrowdedTopK50 => SamplingParams::random(0.7, seed).with_top_k(50).with_top_p(0.9),
            Workload::Heterogeneous => mixed_params(rng, vocab),
            Workload::PeakedTopP095 | Workload::FlatTopP095 | Workload::AlternatingTopP095 => {
                SamplingParams::random(1.0, seed).with_top_p(0.95)
            }
            Workload::RandomFull | Workload::FlatFull => SamplingParams::random(1.0, seed),
        }
    }
}

struct Cell {
    workload: Workload,
    dtype: LogitsDtype,
    batch: usize,
    vocab: usize,
}

struct Measured {
    timing: Timing,
    bytes: f64,
    exact_rows: usize,
    /// Of those, the rows the single-block exact pass took.
    exact_single_rows: usize,
    /// Host wall time of reading a finished step's outputs (`read_outputs_into`,
    /// `GpuTopK::read_into`).
    read: Timing,
    /// Host wall time of uploading the step's settings (`upload_step`); none for top-k alone,
    /// which uploads nothing.
    upload: Option<Timing>,
}

/// Reads and uploads timed per cell (`time_host_work`).
const READS: usize = 100;

/// What `time_host_work`'s closure is asked to do.
#[derive(Clone, Copy)]
enum HostPhase {
    /// Enqueue step `i`.
    Step(usize),
    /// The host work timed: read the finished step's outputs, or upload the next step.
    Timed,
}

/// Host wall time of work done after a step has finished (`f(HostPhase::Timed)`, after
/// `f(HostPhase::Step(i))` and a stream sync): a read's copies and waits, or an upload's
/// checks, staging and queued copy, what a serving loop pays each step besides the step itself.
/// Wall clock, not CUDA events: the cost is on the host.
fn time_host_work(stream: &CudaStream, mut f: impl FnMut(HostPhase) -> BenchResult<()>) -> BenchResult<Timing> {
    let mut samples = Vec::with_capacity(READS);
    for i in 0..READS + 5 {
        f(HostPhase::Step(i))?;
        stream.synchronize()?;
        let start = std::time::Instant::now();
        f(HostPhase::Timed)?;
        if i >= 5 {
            samples.push(start.elapsed().as_secs_f64() * 1e6);
        }
    }
    Ok(timing(samples))
}

enum LogitsSet {
    F32(CudaSlice<f32>),
    Half(CudaSlice<u16>),
}

impl LogitsSet {
    fn view(&self, dtype: LogitsDtype, rows: usize, vocab: usize) -> DeviceLogits<'_> {
        match self {
            LogitsSet::F32(s) => DeviceLogits::f32(s, rows, vocab),
            LogitsSet::Half(s) => DeviceLogits::half_bits(s, dtype, rows, vocab),
        }
    }
}

/// The `topk128` cell: `GpuTopK` captured in a graph per logits set, the same timing as a step.
fn run_topk_cell(cell: &Cell, flush: &mut L2Flush, replays: usize, rng: &mut impl Rng, file: Option<&LogitsFile>) -> BenchResult<Measured> {
    let (vocab, batch) = (cell.vocab, cell.batch);
    let mut topk = GpuTopK::new(GpuDevice::open(0)?, batch, vocab, TOPK_BENCH_K)?;
    let stream = topk.device().stream().clone();
    let sets = fill_sets(topk.device(), &stream, cell, rng, file)?;
    let mut graphs: Vec<TopKGraph> = Vec::new();
    for set in &sets {
        // SAFETY: the logits sets live until the end of this function, after the last replay.
        graphs.push(unsafe { topk.capture(&set.view(cell.dtype, batch, vocab), TOPK_BENCH_K) }?);
    }
    let timing = time_replays(&stream, flush, 10, replays, |i| Ok(topk.replay(&graphs[i % graphs.len()])?))?;
    // Into one output kept across reads; the warm-up reads allocate its pinned buffers.
    let mut outputs = TopK { rows: 0, k: 0, values: Vec::new(), indices: Vec::new() };
    let read = time_host_work(&stream, |phase| {
        match phase {
            HostPhase::Step(i) => topk.replay(&graphs[i % graphs.len()])?,
            HostPhase::Timed => topk.read_into(std::hint::black_box(&mut outputs))?,
        }
        Ok(())
    })?;
    let element = if cell.dtype == LogitsDtype::F32 { 4 } else { 2 };
    Ok(Measured { timing, bytes: (batch * vocab * element) as f64, exact_rows: 0, exact_single_rows: 0, read, upload: None })
}

/// Two logits sets of the cell's shape (replays alternate between them): generated on the GPU,
/// or, with a logits file, two consecutive stretches of its rows.
fn fill_sets(
    gpu: &GpuDevice,
    stream: &std::sync::Arc<CudaStream>,
    cell: &Cell,
    rng: &mut impl Rng,
    file: Option<&LogitsFile>,
) -> BenchResult<Vec<LogitsSet>> {
    let (vocab, batch) = (cell.vocab, cell.batch);
    let elements = batch * vocab;
    let mut sets = Vec::new();
    for set in 0..2u64 {
        let seed = rng.next_u64() ^ set;
        let real = file.map(|f| file_rows(f, set as usize * batch, batch));
        let logits = match (cell.dtype, real) {
            (LogitsDtype::F32, Some(values)) => LogitsSet::F32(stream.clone_htod(&values)?),
            (_, Some(values)) => {
                let bits: Vec<u16> = values.iter().map(|&v| half::bf16::from_f32(v).to_bits()).collect();
                LogitsSet::Half(stream.clone_htod(&bits)?)
            }
            (LogitsDtype::F32, None) => {
                let mut s = stream.alloc_zeros::<f32>(elements)?;
                gpu.fill_logits(&mut s, DTYPE_F32, batch, vocab, vocab, seed, cell.workload.shape(set))?;
                LogitsSet::F32(s)
            }
            (_, None) => {
                let mut s = stream.alloc_zeros::<u16>(elements)?;
                gpu.fill_logits(&mut s, DTYPE_BF16, batch, vocab, vocab, seed, cell.workload.shape(set))?;
                LogitsSet::Half(s)
            }
        };
        sets.push(logits);
    }
    Ok(sets)
}

/// `batch` rows of `file`, starting at row `first` and wrapping, widened to f32 and packed.
fn file_rows(file: &LogitsFile, first: usize, batch: usize) -> Vec<f32> {
    let (mut all, mut row) = (Vec::with_capacity(batch * file.vocab), Vec::new());
    for i in 0..batch {
        file.row_f32(first + i, &mut row);
        all.extend_from_slice(&row);
    }
    all
}

/// How the measured step is launched (the A/B options).
#[derive(Clone, Copy)]
struct StepLaunch {
    overlap_kernels: bool,
    exact_pass: ExactPassLaunch,
    exact_pass_order: ExactPassOrder,
    skip_lists_after_wide_step: bool,
}

fn run_cell(
    cell: &Cell,
    flush: &mut L2Flush,
    replays: usize,
    rng: &mut impl Rng,
    file: Option<&LogitsFile>,
    launch: StepLaunch,
) -> BenchResult<Measured> {
    if cell.workload == Workload::TopK128 {
        return run_topk_cell(cell, flush, replays, rng, file);
    }
    let (vocab, batch) = (cell.vocab, cell.batch);
    let config = GpuSamplerConfig {
        vocab,
        max_batch: batch,
        max_requests: batch,
        max_bias_entries: batch * 32,
        overlap_kernels: launch.overlap_kernels,
        exact_pass: launch.exact_pass,
        exact_pass_order: launch.exact_pass_order,
        skip_lists_after_wide_step: launch.skip_lists_after_wide_step,
    };
    let mut sampler = GpuSampler::new(GpuDevice::open(0)?, config)?;
    let words = vocab.div_ceil(32);
    let mut penalty_rows = 0usize;
    for r in 0..batch {
        let params = cell.workload.params(rng, vocab);
        if params.repetition_penalty != 1.0 || params.frequency_penalty != 0.0 || params.presence_penalty != 0.0 {
            penalty_rows += 1;
        }
        let prompt: Vec<u32> = if cell.workload == Workload::Heterogeneous {
            (0..100).map(|_| below(rng, vocab as u64) as u32).collect()
        } else {
            Vec::new()
        };
        sampler.add_request(r as u64, params, &prompt)?;
    }
    let masks: Vec<Option<Vec<i32>>> = (0..batch)
        .map(|_| {
            if cell.workload == Workload::Heterogeneous && below(rng, 10) < 3 {
                let allow = 0.5 + 0.49 * unit(rng);
                Some(bitmask_row(rng, vocab, allow))
            } else {
                None
            }
        })
        .collect();
    let mask_rows = masks.iter().filter(|m| m.is_some()).count();
    let rows = rows_with_masks(&masks);

    let stream = sampler.device().stream().clone();
    let elements = batch * vocab;
    let sets = fill_sets(sampler.device(), &stream, cell, rng, file)?;
    sampler.upload_step(&rows)?;
    let mut graphs: Vec<StepGraph> = Vec::new();
    for set in &sets {
        // SAFETY: the logits sets live until the end of this function, after the last replay.
        graphs.push(unsafe { sampler.capture_step(&set.view(cell.dtype, batch, vocab), batch) }?);
    }
    let timing = time_replays(&stream, flush, 10, replays, |i| Ok(sampler.replay(&graphs[i % graphs.len()])?))?;
    let (split, exact_single_rows) = sampler.exact_paths_last_step()?;
    let exact_rows = split + exact_single_rows;
    // Into one vector kept across reads, as a serving loop keeps it. No upload follows here,
    // so the replays keep their rows and settings.
    let mut outputs = Vec::with_capacity(batch);
    let read = time_host_work(&stream, |phase| {
        match phase {
            HostPhase::Step(i) => sampler.replay(&graphs[i % graphs.len()])?,
            HostPhase::Timed => sampler.read_outputs_into(std::hint::black_box(&mut outputs))?,
        }
        Ok(())
    })?;
    // The same rows again: each upload writes what the replays already read.
    let upload = time_host_work(&stream, |phase| {
        match phase {
            HostPhase::Step(i) => sampler.replay(&graphs[i % graphs.len()])?,
            HostPhase::Timed => sampler.upload_step(std::hint::black_box(&rows))?,
        }
        Ok(())
    })?;
    let element = if cell.dtype == LogitsDtype::F32 { 4 } else { 2 };
    let bytes = (elements * element + mask_rows * words * 4 + penalty_rows * vocab * 4) as f64;
    Ok(Measured { timing, bytes, exact_rows, exact_single_rows, read, upload: Some(upload) })
}

/// A cell's upload time for the tables, "–" where it uploads nothing.
fn upload_text(m: &Measured, unit: &str) -> String {
    m.upload.map_or_else(|| "–".to_string(), |u| format!("{:.1}{unit}", u.median_us))
}

/// Every sampling workload, for parsing cell names.
const WORKLOADS: [Workload; 10] = [
    Workload::Greedy,
    Workload::TopK50TopP09T07,
    Workload::Heterogeneous,
    Workload::PeakedTopP095,
    Workload::FlatTopP095,
    Workload::FlatFull,
    Workload::RandomFull,
    Workload::TopK128,
    Workload::CrowdedTopK50,
    Workload::AlternatingTopP095,
];

/// The parts of a cell name, `workload:dtype:vocab:batch` (`--only`), with a vocab and a batch
/// of at least one; shared with `verify_bench::parse_cell`.
fn split_cell_name(name: &str) -> Option<(&str, &str, usize, usize)> {
    let mut parts = name.split(':');
    let (w, d, v, b) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let (vocab, batch) = (v.parse().ok()?, b.parse().ok()?);
    (parts.next().is_none() && vocab > 0 && batch > 0).then_some((w, d, vocab, batch))
}

/// The sampling cell `workload:dtype:vocab:batch` names, if it names one.
fn parse_cell(name: &str) -> Option<Cell> {
    let (w, d, vocab, batch) = split_cell_name(name)?;
    let workload = WORKLOADS.into_iter().find(|x| x.name() == w)?;
    let dtype = [LogitsDtype::F32, LogitsDtype::Bf16, LogitsDtype::F16].into_iter().find(|&x| dtype_name(x) == d)?;
    Some(Cell { workload, dtype, batch, vocab })
}

fn dtype_name(d: LogitsDtype) -> &'static str {
    match d {
        LogitsDtype::F32 => "f32",
        LogitsDtype::Bf16 => "bf16",
        LogitsDtype::F16 => "f16",
    }
}

fn main() -> BenchResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let serial = args.iter().any(|a| a == "--serial-launches");
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let exact_pass = match value("--exact-pass").as_deref() {
        None | Some("settings") => ExactPassLaunch::BySettings,
        Some("four") => ExactPassLaunch::FourLaunches,
        Some("one") => ExactPassLaunch::OneLaunch,
        Some(other) => return Err(format!("--exact-pass takes settings, one or four, not {other}").into()),
    };
    let exact_pass_order = match value("--exact-order").as_deref() {
        Some("overlapped") => ExactPassOrder::Overlapped,
        Some("first-serial") => ExactPassOrder::FirstSerial,
        Some("serial") => ExactPassOrder::Serial,
        None | Some("by-rows") => ExactPassOrder::ByRows,
        Some(other) => return Err(format!("--exact-order takes by-rows, overlapped, first-serial or serial, not {other}").into()),
    };
    let skip_lists = !args.iter().any(|a| a == "--no-skip-lists");
    let warm_l2 = args.iter().any(|a| a == "--warm-l2");
    let launch = StepLaunch { overlap_kernels: !serial, exact_pass, exact_pass_order, skip_lists_after_wide_step: skip_lists };
    let out_dir = value("--out").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("bench-out"));
    let replays: usize = value("--replays").and_then(|v| v.parse().ok()).unwrap_or(200).max(100);
    let gpu = GpuDevice::open(0)?;
    let stream = gpu.stream().clone();
    let device_name = gpu.name()?;
    // Each cell draws its settings and logits seeds from its own generator, seeded by the cell,
    // so a cell measures the same rows whatever else runs (`--only`) and from run to run
    // (the heterogeneous B = 1 cell is one random row: it moved 45 ↔ 106 µs between runs).
    let base_seed: u64 = std::env::var("SONIC_BENCH_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed);
    let cell_rng = |key: String| {
        // FNV-1a of the cell's name, mixed with the base seed.
        let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3));
        Xoshiro256PlusPlus::seed_from_u64(base_seed ^ hash)
    };
    eprintln!("sonic-bench: SONIC_BENCH_SEED={base_seed} (per-cell generators), module loaded from {:?}", gpu.module_image());
    // The copy ceilings and the empty graph are timed after a flush whatever `--warm-l2` says.
    let mut flush = L2Flush { buffer: stream.alloc_zeros::<u8>(FLUSH_BYTES)?, before_each_replay: true };

    // Ceilings: 1 GiB copies (bytes read + written), and the empty kernel.
    let copy_bytes = 1usize << 30;
    let mut src = stream.alloc_zeros::<f32>(copy_bytes / 4)?;
    let mut dst = stream.alloc_zeros::<f32>(copy_bytes / 4)?;
    gpu.fill_logits(&mut src, DTYPE_F32, copy_bytes / 4 / 32_768, 32_768, 32_768, 1, FILL_PEAKED)?;
    let memcpy_graph = gpu.capture(|| {
        stream.memcpy_dtod(&src, &mut dst).map_err(|e| sampler_host::Error::Cuda { op: "copy", detail: e.to_string() })
    })?;
    let memcpy = time_replays(&stream, &mut flush, 3, 100, |_| Ok(memcpy_graph.launch()?))?;
    let kernel_graph = gpu.capture(|| gpu.bench_copy(&src, &mut dst))?;
    let kernel_copy = time_replays(&stream, &mut flush, 3, 100, |_| Ok(kernel_graph.launch()?))?;
    let memcpy_gbs = 2.0 * copy_bytes as f64 / (memcpy.median_us * 1e3);
    let kernel_gbs = 2.0 * copy_bytes as f64 / (kernel_copy.median_us * 1e3);
    let copy_gbs = memcpy_gbs.max(kernel_gbs);
    drop((src, dst));
    let empty_graph = gpu.capture(|| gpu.empty_kernel())?;
    let empty = time_replays(&stream, &mut flush, 10, replays, |_| Ok(empty_graph.launch()?))?;
    eprintln!("ceilings: memcpy {memcpy_gbs:.0} GB/s, copy kernel {kernel_gbs:.0} GB/s, empty graph {:.2} µs", empty.median_us);
    flush.before_each_replay = !warm_l2;

    // `--logits FILE` (.npy or .safetensors, rows × vocab): rows saved from a real model replace
    // the generated ones; the grid keeps the file's vocab, and drops the cells that need
    // generated rows (the exact-pass comparison, verification).
    let file = match value("--logits") {
        Some(path) => Some(LogitsFile::read(&path, None)?),
        None => None,
    };
    let file_vocab = file.as_ref().map(|f| [f.vocab]);
    let mut cells = Vec::new();
    let (vocabs, batches, dtypes): (&[usize], &[usize], &[LogitsDtype]) = if let Some(v) = &file_vocab {
        (v, if quick { &[1, 64] } else { &[1, 8, 64, 256, 1024] }, &[LogitsDtype::F32, LogitsDtype::Bf16])
    } else if quick {
        (&[128_256], &[1, 64], &[LogitsDtype::F32])
    } else {
        (&[32_000, 128_256, 151_936, 262_144], &[1, 8, 64, 256, 1024], &[LogitsDtype::F32, LogitsDtype::Bf16])
    };
    for &vocab in vocabs {
        for &batch in batches {
            for &dtype in dtypes {
                for workload in [Workload::Greedy, Workload::TopK50TopP09T07, Workload::Heterogeneous, Workload::RandomFull, Workload::TopK128] {
                    cells.push(Cell { workload, dtype, batch, vocab });
                }
            }
        }
    }
    let exact_vocabs: &[usize] = if file.is_some() {
        &[] // the exact-pass cells need generated peaked and flat rows
    } else if quick {
        &[128_256]
    } else {
        &[128_256, 151_936]
    };
    let exact_batches: &[usize] = if quick { &[64] } else { &[1, 64, 256] };
    for &vocab in exact_vocabs {
        for &batch in exact_batches {
            for workload in [
                Workload::PeakedTopP095,
                Workload::FlatTopP095,
                Workload::FlatFull,
                Workload::AlternatingTopP095,
                Workload::CrowdedTopK50,
            ] {
                cells.push(Cell { workload, dtype: LogitsDtype::F32, batch, vocab });
            }
        }
    }

    // `--only workload:dtype:vocab:batch[,...]` runs those cells alone, in the order named (profiling
    // under ncu, A/Bs). A sampling cell outside the grid is built from its name, so that any
    // batch size can be measured (the launch rules change at row counts the grid skips).
    if let Some(only) = value("--only") {
        let mut named = Vec::new();
        for name in only.split(',') {
            if let Some(cell) = parse_cell(name) {
                named.push(cell);
            } else if verify_bench::parse_cell(name).is_none() {
                return Err(format!("--only: {name} names no cell (workload:dtype:vocab:batch)").into());
            }
        }
        cells = named;
    }
    let mut json_rows = Vec::new();
    let mut md_rows = String::new();
    let mut results = Vec::new();
    for cell in &cells {
        let key = format!("{}:{}:{}:{}", cell.workload.rows_from().name(), dtype_name(cell.dtype), cell.vocab, cell.batch);
        let m = match run_cell(cell, &mut flush, replays, &mut cell_rng(key), file.as_ref(), launch) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("{} {} V={} B={}: error {e}", cell.workload.name(), dtype_name(cell.dtype), cell.vocab, cell.batch);
                continue;
            }
        };
        let gbs = m.bytes / (m.timing.median_us * 1e3);
        let frac = gbs / copy_gbs;
        let t = m.timing;
        eprintln!(
            "{:>18} {:>4} V={:>6} B={:>4}: {:>9.2} µs  {:>6.0} GB/s  {:>5.1}% of copy  exact rows {}  read {:.1} µs  upload {}",
            cell.workload.name(),
            dtype_name(cell.dtype),
            cell.vocab,
            cell.batch,
            t.median_us,
            gbs,
            frac * 100.0,
            m.exact_rows,
            m.read.median_us,
            upload_text(&m, " µs")
        );
        let _ = writeln!(
            md_rows,
            "| {} | {} | {} | {} | {:.2} | {:.2} – {:.2} | {:.0} | {:.1}% | {} | {:.1} | {} |",
            cell.workload.name(),
            dtype_name(cell.dtype),
            cell.vocab,
            cell.batch,
            t.median_us,
            t.p10_us,
            t.p90_us,
            gbs,
            frac * 100.0,
            if m.exact_single_rows > 0 { format!("{} ({})", m.exact_rows, m.exact_single_rows) } else { m.exact_rows.to_string() },
            m.read.median_us,
            upload_text(&m, "")
        );
        json_rows.push(format!(
            "{{\"impl\":\"sonic\",\"workload\":\"{}\",\"dtype\":\"{}\",\"batch\":{},\"vocab\":{},\"median_us\":{:.3},\"p10_us\":{:.3},\"p90_us\":{:.3},\"bytes\":{},\"gb_per_s\":{:.1},\"copy_fraction\":{:.4},\"exact_rows\":{},\"exact_single_rows\":{},\"read_us\":{:.2},{}\"note\":\"\"}}",
            cell.workload.name(), dtype_name(cell.dtype), cell.batch, cell.vocab, t.median_us, t.p10_us, t.p90_us, m.bytes, gbs, frac, m.exact_rows, m.exact_single_rows, m.read.median_us,
            m.upload.map(|u| format!("\"upload_us\":{:.2},", u.median_us)).unwrap_or_default()
        ));
        results.push((cell.workload, cell.vocab, cell.batch, t.median_us));
    }

    // Speculative verification (verify_bench.rs): its own cells and table, the same JSON rows.
    let mut verify_md = String::new();
    // Verification cells draw their own logits; with `--logits` only the file's rows are timed.
    let mut verify_cells = if file.is_some() { Vec::new() } else { verify_bench::cells(quick) };
    if let Some(only) = value("--only") {
        verify_cells = if file.is_some() { Vec::new() } else { only.split(',').filter_map(verify_bench::parse_cell).collect() };
    }
    for cell in &verify_cells {
        let name = cell.workload.name();
        let m = match verify_bench::run_verify_cell(cell, &mut flush, replays, &mut cell_rng(format!("{name}:f32:{}:{}", cell.vocab, cell.batch))) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("{name} f32 V={} B={}: error {e}", cell.vocab, cell.batch);
                continue;
            }
        };
        let t = m.timing;
        let gbs = m.bytes / (t.median_us * 1e3);
        let frac = gbs / copy_gbs;
        eprintln!(
            "{name:>18}  f32 V={:>6} B={:>4}: {:>9.2} µs  {gbs:>6.0} GB/s  {:>5.1}% of copy  target rows {} skipped {}",
            cell.vocab,
            cell.batch,
            t.median_us,
            frac * 100.0,
            m.rows,
            m.skipped
        );
        let _ = writeln!(
            verify_md,
            "| {name} | f32 | {} | {} | {} | {} | {:.2} | {:.2} – {:.2} | {gbs:.0} | {:.1}% |",
            cell.vocab,
            cell.batch,
            m.rows,
            m.skipped,
            t.median_us,
            t.p10_us,
            t.p90_us,
            frac * 100.0
        );
        json_rows.push(format!(
            "{{\"impl\":\"sonic\",\"workload\":\"{name}\",\"dtype\":\"f32\",\"batch\":{},\"vocab\":{},\"median_us\":{:.3},\"p10_us\":{:.3},\"p90_us\":{:.3},\"bytes\":{},\"gb_per_s\":{gbs:.1},\"copy_fraction\":{frac:.4},\"exact_rows\":0,\"skipped_rows\":{},\"note\":\"target rows {}\"}}",
            cell.batch, cell.vocab, t.median_us, t.p10_us, t.p90_us, m.bytes, m.skipped, m.rows
        ));
    }

    // The exact pass against the fast path on the same flat rows (T 1, no truncation: the mass
    // scan and stage 2, no exact pass), and the peaked rows for reference.
    let mut exact_md = String::new();
    let time_of = |w: Workload, v: usize, b: usize| results.iter().find(|r| r.0 == w && r.1 == v && r.2 == b).map(|r| r.3);
    for &(_, v, b, t_flat) in results.iter().filter(|r| r.0 == Workload::FlatTopP095) {
        let cell = |t: Option<f64>| t.map_or("not run".to_string(), |t| format!("{t:.2}"));
        let ratio = time_of(Workload::FlatFull, v, b).map_or("–".to_string(), |t_fast| format!("{:.2}×", t_flat / t_fast));
        let _ = writeln!(
            exact_md,
            "| {v} | {b} | {} | {t_flat:.2} | {ratio} | {} | {} |",
            cell(time_of(Workload::FlatFull, v, b)),
            cell(time_of(Workload::PeakedTopP095, v, b)),
            cell(time_of(Workload::AlternatingTopP095, v, b))
        );
    }

    std::fs::create_dir_all(&out_dir)?;
    let date = value("--date").unwrap_or_default();
    let source = match (&file, value("--logits")) {
        (Some(f), Some(path)) => format!(
            "**Logits: {} rows of V = {} read from `{path}`** (saved from a real model; each cell tiles them over its \
             batch, two stretches alternating), not the generated rows described below.\n\n",
            f.rows, f.vocab
        ),
        _ => String::new(),
    };
    let md = format!(
        "# sonic-bench on {device_name}\n\n{source}\
         Each figure: CUDA events around one graph replay of the whole step ({kernels}, {launches}), median and \
         10th–90th percentile of {replays} replays after 10 warm-up replays. {l2_note} Logits are \
         generated on the GPU: peaked rows are ≈N(0, 2) with about 20 tokens boosted by +8..+14; flat rows ≈N(0, 0.5). \
         Each cell's settings and logits seeds come from a generator seeded by the cell and SONIC_BENCH_SEED \
         ({base_seed} here), so a cell measures the same rows in every run. \
         GB/s counts the bytes a step must move (logits once, bitmask rows, penalty counts of rows with penalties); \
         the fraction is of the copy bandwidth measured in this run. \"exact rows\" is how many rows of the last \
         replay the exact pass finished (in parentheses: how many of them the single-block pass took, when any). \
         \"read µs\" is the host's wall time to read a finished step's outputs (`read_outputs_into`, into a vector kept \
         across reads; `GpuTopK::read_into` for topk128), median of {READS} reads, each after a replay and a stream sync: the copies and their waits. \
         \"upload µs\" likewise times `upload_step` of the cell's rows (settings, bias entries, host bitmask rows \
         staged and one copy queued), median of {READS}; topk128 uploads nothing.\n\n\
         Ceilings in this run: driver memcpy {memcpy_gbs:.0} GB/s, 16-byte copy kernel {kernel_gbs:.0} GB/s \
         (reference: {copy_gbs:.0} GB/s, read + write), graph-replayed empty kernel {:.2} µs.\n\n\
         Workloads: greedy; topk50_topp09_t07 (top-k 50, top-p 0.9, T 0.7); heterogeneous (per row a random mix of \
         greedy, top-k up to 4128, top-p, min-p, penalties with 100 prompt tokens, logit bias, and a grammar bitmask \
         on 30% of rows); random_full (T 1, no truncation); peaked_topp095 / flat_topp095 (T 1, top-p 0.95; flat rows force the exact pass); \
         flat_full (T 1, no truncation, on flat_topp095's rows and seeds: decided by stage 2, never the exact pass); \
         alternating_topp095 (T 1, top-p 0.95; flat rows in one logits set, peaked in the other, so each step's rows \
         differ in shape from the last); \
         crowded_topk50 (topk50_topp09_t07's settings on peaked rows with about 60 more boosted tokens among the \
         first 4096 ids, as a vocabulary ordered by frequency puts a row's likely tokens at low ids: one tile holds \
         more than its list's 32 of a row's 50 best); \
         topk128 (top-k alone: the 128 largest logits and their indices per row, sorted, exact; no sampling; \
         compare with torch.topk and FlashInfer's top-k in the peer files).\n\n\
         | workload | dtype | V | B | median µs | p10 – p90 µs | GB/s | of copy BW | exact rows | read µs | upload µs |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n{md_rows}\n\
         ## Exact pass against the fast path (f32, T 1, per step, the same flat rows)\n\n\
         The fast path is `flat_full`: the same rows with no truncation, which stage 2 decides from the mass \
         scan (no exact pass). `flat_topp095` adds top-p 0.95, whose nucleus never fits the candidate lists, so \
         every row also takes the exact pass. Peaked rows with top-p 0.95 for reference: at T 1 many of their \
         nuclei pass the lists too (their count is in the table above). Lists after a wide step: {skip_lists_note}. \
         alternating_topp095 has flat rows in one logits set and peaked rows in the other, so every replay's rows \
         differ in shape from the last step's: the cost when the last step predicts the wrong shape.\n\n\
         | V | B | fast path (flat_full) µs | exact pass (flat_topp095) µs | ratio | peaked_topp095 µs | alternating_topp095 µs |\n|---|---|---|---|---|---|---|\n{exact_md}",
        empty.median_us,
        l2_note = if warm_l2 {
            "**Warm L2 (--warm-l2): nothing is rewritten between replays**, so code, settings and, where two \
             logits buffers fit, logits are timed from L2: what the flush costs, not a serving step."
        } else {
            "A 256 MB buffer is rewritten before every replay (outside the events) and two logits buffers \
             alternate, so nothing is timed from L2."
        },
        skip_lists_note = if skip_lists {
            "skipped (the default): a top-p row whose request's last step was wide (its nucleus beyond any merge of the \
             lists) keeps each tile's largest key alone and goes to the exact pass; the replays before the timed ones \
             make that hold from the first timed one"
        } else {
            "built for every top-p row: --no-skip-lists"
        },
        launches = match (serial, exact_pass_order) {
            (true, _) => "in plain stream order: --serial-launches".to_string(),
            (false, ExactPassOrder::Overlapped) => "each after the first launched overlapped with its predecessor: --exact-order overlapped".to_string(),
            (false, ExactPassOrder::FirstSerial) => "each after the first launched overlapped with its predecessor, but the exact pass's first, which waits for stage 2 in stream order: --exact-order first-serial".to_string(),
            (false, ExactPassOrder::ByRows) => format!(
                "each after the first launched overlapped with its predecessor, but the exact pass's first, which waits for stage 2 in stream order unless at least {OVERLAP_FIRST_MIN_LISTABLE} rows may be listed for the exact pass (by their settings) and there is at most one row a SM"
            ),
            (false, ExactPassOrder::Serial) => "the stages' launches overlapped, the exact pass's in plain stream order: --exact-order serial".to_string(),
        },
        kernels = match exact_pass {
            ExactPassLaunch::OneLaunch => "four kernels (three when no row or every row needs the row mass; one, sample_tiles_greedy (sample_tiles_greedy_pairs on large grids), for greedy rows alone; each its own graph): the exact pass in one launch, --exact-pass one",
            ExactPassLaunch::FourLaunches => "seven kernels (six when no row or every row needs the row mass; one, sample_tiles_greedy (sample_tiles_greedy_pairs on large grids), for greedy rows alone; each its own graph): the exact pass in four launches, --exact-pass four",
            ExactPassLaunch::BySettings => "seven kernels, or three when every row is greedy, top-k up to 128 or untruncated (no exact-pass launch: sample_rows_quiet finishes any row it cannot decide); one fewer when no row needs the row mass (no sample_tiles_mass) or when every row does (no sample_tiles); one, sample_tiles_greedy (sample_tiles_greedy_pairs on large grids), for greedy rows alone; each its own graph",
        },
    );
    let md = if verify_md.is_empty() {
        md
    } else {
        format!(
            "{md}\n## Speculative verification (f32, three kernels per call: verify_rows, verify_draws, verify_chains, graph-replayed)\n\n\
             verify_uniform: B requests × 4 drafts, T 1, full draft-probability rows. verify_hetero: per request a random \
             mix of greedy and random settings (top-k, top-p, min-p, penalties with 100 prompt tokens, logit bias), \
             0–7 drafts, q rows on half of the random requests, a bitmask on 30% of the requests. In both, drafts \
             are uniform random tokens: in verify_hetero nearly every request with drafts stops at its first draft \
             (a random request then runs one residual draw); in verify_uniform a draft is accepted about half the \
             time (p and q both spread over the vocabulary), so chains stop anywhere. verify_accepted: B greedy \
             requests × 4 drafts, each the argmax of its target row, so every draft is accepted. verify_accept70: the same, each draft the argmax with \
             probability 0.7, else a random token. verify_sampled: B random requests (T 1) × 4 drafts, each q \
             row 0.7 · p + 0.3 · noise of its own target row and each draft sampled from it, so chains stop \
             anywhere (a residual draw where they stop, a bonus draw where they do not). \"skipped\": target rows that verify_rows dropped in one \
             replay because an earlier row of their request had already stopped the chain (only when the call has \
             more rows than half the grid has blocks: blocks holding whole rows, or groups taking rows in turn). GB/s counts target logits, \
             q rows, bitmask rows, and penalty counts once per target row with penalties.\n\n\
             | workload | dtype | V | B | target rows | skipped | median µs | p10 – p90 µs | GB/s | of copy BW |\n\
             |---|---|---|---|---|---|---|---|---|---|\n{verify_md}"
        )
    };
    std::fs::write(out_dir.join("sonic-bench.md"), &md)?;
    let json = format!(
        "{{\"producer\":\"sonic-bench\",\"device\":\"{device_name}\",\"date\":\"{date}\",\"replays\":{replays},\"warm_l2\":{warm_l2},\
         \"ceilings\":{{\"copy_gbs\":{copy_gbs:.1},\"copy_memcpy_gbs\":{memcpy_gbs:.1},\"copy_kernel_gbs\":{kernel_gbs:.1},\"empty_graph_us\":{:.3}}},\
         \"results\":[{}]}}\n",
        empty.median_us,
        json_rows.join(",")
    );
    std::fs::write(out_dir.join("sonic-bench.json"), json)?;
    println!("{md}");
    Ok(())
}


#[cfg(test)]
mod tests {
    use super::*;

    /// `--only` names: any batch, sampling and verification cells alike; a wrong part count, a
    /// zero size, an unknown workload or dtype names no cell.
    #[test]
    fn cell_names_parse_outside_the_grid() {
        let cell = parse_cell("flat_topp095:bf16:128256:44").map(|c| (c.workload, c.dtype, c.vocab, c.batch));
        assert_eq!(cell, Some((Workload::FlatTopP095, LogitsDtype::Bf16, 128_256, 44)));
        let verify = verify_bench::parse_cell("verify_hetero:f32:151936:17").map(|c| (c.workload, c.vocab, c.batch));
        assert_eq!(verify, Some((verify_bench::VerifyWorkload::Hetero, 151_936, 17)));
        for bad in ["greedy:f32:128256", "greedy:f32:128256:1:2", "greedy:f32:0:1", "greedy:f32:128256:0", "greedy:f64:128256:1", "nope:f32:128256:1"] {
            assert!(parse_cell(bad).is_none(), "{bad}");
        }
        assert!(verify_bench::parse_cell("verify_hetero:bf16:128256:8").is_none());
        assert!(parse_cell("verify_hetero:f32:128256:8").is_none());
    }
}
