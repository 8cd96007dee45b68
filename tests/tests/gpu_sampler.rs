//! GPU sampler against the CPU reference: token for token, on fresh random rows with mixed
//! settings, every vocab size, batch size and dtype the contract names, peaked and flat rows
//! (the latter force the exact pass), strided device logits, graph replays and edge rows.
//! Any mismatch fails. Under `SONIC_SANITIZE=1` the same cases run with fewer rows, steps and
//! replays (`sized`).

use rand_xoshiro::rand_core::Rng;
use sampler_host::backend::{Backend, Batch, BatchRow};
use sampler_host::gpu::{DeviceBitmask, DeviceLogits, ExactPassLaunch, ExactPassOrder, GpuSampler, GpuSamplerConfig, StepExactPass, OVERLAP_FIRST_MIN_LISTABLE, StepGraph, StepKernels};
use cudarc::driver::{CudaContext, CudaSlice};
use sampler_host::cuda::GpuDevice;
use sampler_host::logits::{HostLogits, LogitsDtype};
use sampler_host::reference::CpuReference;
use sampler_host::settings::SamplingParams;
use sampler_tests::{
    TypedRows, RowShape, bitmask_row, compare_outputs as compare, pitched_mask_words, random_masks, random_rows, rows_with_masks, below, fresh_rng, gpu_or_skip, logit_row, mixed_params,
    normal, prompt, sized, unit,
};


struct Pair {
    gpu: GpuSampler,
    cpu: CpuReference,
}

impl Pair {
    fn new(test: &str, rng: &mut impl Rng, vocab: usize, batch: usize) -> Option<Self> {
        Self::with_exact_pass(test, rng, vocab, batch, ExactPassLaunch::default())
    }

    fn with_exact_pass(test: &str, rng: &mut impl Rng, vocab: usize, batch: usize, exact_pass: ExactPassLaunch) -> Option<Self> {
        let config = GpuSamplerConfig { exact_pass, ..GpuSamplerConfig::new(vocab, batch) };
        Some(Self::on_device(gpu_or_skip(test)?, config, rng))
    }

    /// A GPU sampler on `device` and the reference, with the same `batch` requests of mixed
    /// settings and prompts.
    fn on_device(device: GpuDevice, config: GpuSamplerConfig, rng: &mut impl Rng) -> Self {
        let (vocab, batch) = (config.vocab, config.max_batch);
        let gpu = GpuSampler::new(device, config).expect("gpu sampler");
        let cpu = CpuReference::new(vocab, batch).expect("cpu reference");
        let mut pair = Pair { gpu, cpu };
        for id in 0..batch as u64 {
            let params = mixed_params(rng, vocab);
            let prompt = prompt(rng, vocab);
            pair.gpu.add_request(id, params.clone(), &prompt).expect("gpu add");
            pair.cpu.add_request(id, params, &prompt).expect("cpu add");
        }
        pair
    }

    fn step(&mut self, batch: &Batch<'_>, label: &str) -> usize {
        let gpu = self.gpu.sample(batch).expect("gpu sample");
        let cpu = self.cpu.sample(batch).expect("cpu sample");
        let mut mismatches = 0;
        for (i, (g, c)) in gpu.iter().zip(&cpu).enumerate() {
            if let Some(diff) = compare(g, c) {
                mismatches += 1;
                if mismatches <= 5 {
                    let params = self.cpu.table().get(batch.rows[i].request).map(|s| s.params.clone());
                    eprintln!("{label} row {i}: {diff}; params {params:?}");
                }
            }
        }
        mismatches
    }
}

/// Logits rows on the device in one dtype, `rows` rows `stride` apart: the f32 buffer holds
/// them, or the 16-bit one does and the other is a placeholder.
struct DeviceRows {
    dtype: LogitsDtype,
    rows: usize,
    stride: usize,
    f32s: CudaSlice<f32>,
    halves: CudaSlice<u16>,
}

impl DeviceRows {
    fn new(gpu: &GpuSampler, dtype: LogitsDtype, rows: usize, vocab: usize, stride: usize) -> Self {
        let stream = gpu.device().stream();
        let len = (rows - 1) * stride + vocab;
        let (f32_len, half_len) = if dtype == LogitsDtype::F32 { (len, 1) } else { (1, len) };
        Self {
            dtype,
            rows,
            stride,
            f32s: stream.alloc_zeros::<f32>(f32_len).expect("alloc"),
            halves: stream.alloc_zeros::<u16>(half_len).expect("alloc"),
        }
    }

    fn view(&self) -> DeviceLogits<'_> {
        match self.dtype {
            LogitsDtype::F32 => DeviceLogits::f32(&self.f32s, self.rows, self.stride),
            _ => DeviceLogits::half_bits(&self.halves, self.dtype, self.rows, self.stride),
        }
    }

    /// Copies `logits` (of this dtype and shape) in, on the stream of `gpu`.
    fn write(&mut self, gpu: &GpuSampler, logits: &TypedRows) {
        let stream = gpu.device().stream();
        match self.dtype {
            LogitsDtype::F32 => stream.memcpy_htod(&logits.f32s, &mut self.f32s).expect("copy"),
            LogitsDtype::Bf16 | LogitsDtype::F16 => stream.memcpy_htod(&logits.bits(), &mut self.halves).expect("copy"),
        }
    }

    /// A step over every row, captured after an upload of every request without a mask:
    /// replays read whatever the buffers and the last upload hold then.
    ///
    /// # Safety
    /// As for `GpuSampler::capture_step`: these buffers outlive every replay of the graph.
    unsafe fn capture(&self, gpu: &mut GpuSampler) -> StepGraph {
        let rows: Vec<BatchRow> = (0..self.rows as u64).map(BatchRow::new).collect();
        gpu.upload_step(&rows).expect("upload");
        // SAFETY: the caller's.
        unsafe { gpu.capture_step(&self.view(), self.rows) }.expect("capture")
    }
}

#[test]
fn gpu_smoke_small_batch() {
    let mut rng = fresh_rng("gpu_smoke_small_batch");
    let (vocab, batch) = (10_000usize, 4usize);
    let Some(device) = gpu_or_skip("gpu_smoke_small_batch") else { return };
    let mut gpu = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
    let mut cpu = CpuReference::new(vocab, batch).expect("cpu reference");
    let settings = [
        SamplingParams::greedy(),
        SamplingParams::random(0.8, 7).with_top_k(40),
        SamplingParams::random(1.0, 8).with_top_p(0.9),
        SamplingParams::random(1.0, 9),
    ];
    for (id, params) in settings.iter().enumerate() {
        gpu.add_request(id as u64, params.clone(), &[]).expect("add");
        cpu.add_request(id as u64, params.clone(), &[]).expect("add");
    }
    let values = random_rows(&mut rng, batch, vocab, vocab);
    let logits = TypedRows::new(LogitsDtype::F32, values);
    let rows: Vec<BatchRow> = (0..batch as u64).map(BatchRow::new).collect();
    let b = Batch { logits: logits.host(batch, vocab, vocab), rows };
    eprintln!("smoke: sampling");
    let g = gpu.sample(&b).expect("gpu");
    let c = cpu.sample(&b).expect("cpu");
    eprintln!("smoke: gpu {:?}", g.iter().map(|r| r.token).collect::<Vec<_>>());
    eprintln!("smoke: cpu {:?}", c.iter().map(|r| r.token).collect::<Vec<_>>());
    for (i, (g, c)) in g.iter().zip(&c).enumerate() {
        assert_eq!(compare(g, c), None, "row {i}");
    }
}

#[test]
fn gpu_tokens_equal_reference_on_mixed_batches() {
    const TEST: &str = "gpu_tokens_equal_reference_on_mixed_batches";
    let mut rng = fresh_rng(TEST);
    let full = [
        (32_000usize, 64usize, LogitsDtype::F32),
        (50_257, 257, LogitsDtype::Bf16),
        (50_257, 3, LogitsDtype::F16),
        (128_256, 64, LogitsDtype::F32),
        (151_936, 257, LogitsDtype::Bf16),
        (151_936, 3, LogitsDtype::F32),
        (151_936, 64, LogitsDtype::F16),
        (262_144, 1, LogitsDtype::F32),
        (262_144, 3, LogitsDtype::Bf16),
        // f16 on a grid of more warps than the GPU holds at once (13 tiles × 257 rows on the
        // H200's 3168): `sample_tiles_half`'s f16 loops, greedy rows' among them, which no
        // other case reaches (smaller grids run the ring build).
        (50_257, 257, LogitsDtype::F16),
    ];
    // The same vocabularies and dtypes with fewer rows. 300 rows of 32000 are 2400 (row, tile)
    // warps, more than the persistent mass kernel's 4 blocks × 4 warps per SM take in one round
    // on the H200 (2112), so its multi-round loop still runs, as in the full B = 257 cases.
    let reduced = [
        (32_000usize, 300usize, LogitsDtype::F32),
        (50_257, 16, LogitsDtype::Bf16),
        (50_257, 3, LogitsDtype::F16),
        (128_256, 8, LogitsDtype::F32),
        (151_936, 16, LogitsDtype::Bf16),
        (151_936, 3, LogitsDtype::F32),
        (151_936, 8, LogitsDtype::F16),
        (262_144, 1, LogitsDtype::F32),
        (262_144, 3, LogitsDtype::Bf16),
    ];
    let cases = sized(&full[..], &reduced[..]);
    let (mut rows_checked, mut total_mismatches, mut exact_rows) = (0usize, 0usize, 0usize);
    for &(vocab, batch, dtype) in cases {
        let Some(mut pair) = Pair::new(TEST, &mut rng, vocab, batch) else { return };
        for step in 0..sized(3, 1) {
            let values = random_rows(&mut rng, batch, vocab, vocab);
            let logits = TypedRows::new(dtype, values);
            let masks = random_masks(&mut rng, batch, vocab);
            let rows = (0..batch)
                .map(|r| match &masks[r] {
                    Some(m) => BatchRow::with_bitmask(r as u64, m),
                    None => BatchRow::new(r as u64),
                })
                .collect();
            let b = Batch { logits: logits.host(batch, vocab, vocab), rows };
            let label = format!("V={vocab} B={batch} {dtype:?} step {step}");
            eprintln!("running {label}");
            total_mismatches += pair.step(&b, &label);
            exact_rows += pair.gpu.exact_rows_last_step().expect("flags");
            rows_checked += batch;
        }
    }
    eprintln!("compared {rows_checked} rows: {total_mismatches} mismatches, {exact_rows} rows took the exact pass");
    assert_eq!(total_mismatches, 0);
    assert!(exact_rows > 0, "flat rows must exercise the exact pass");
}

/// Rows that must take the exact pass, through both of its paths: flat rows with wide nuclei,
/// large top-k, min-p and log-probabilities (the split pass: top-p alone in band mode, the rest
/// binned whole), and rows of equal logits whose boundary bin holds the whole row, which the
/// split pass hands to the single-block pass (in either mode). Every token must be the
/// reference's, and each path must have run, both with the exact pass in one launch
/// (`exact_tail`) and in four; the case of more rows than SMs must have taken the two-per-SM
/// builds, and only it.
#[test]
fn gpu_exact_pass_paths_equal_reference() {
    const TEST: &str = "gpu_exact_pass_paths_equal_reference";
    for launch in [ExactPassLaunch::OneLaunch, ExactPassLaunch::FourLaunches] {
        exact_pass_paths_equal_reference(TEST, launch);
    }
}

fn exact_pass_paths_equal_reference(test: &str, launch: ExactPassLaunch) {
    let mut rng = fresh_rng(&format!("{test} {launch:?}"));
    let (mut split_rows, mut band_rows, mut single_rows, mut mismatches) = (0usize, 0usize, 0usize, 0usize);
    let (mut two_per_sm_steps, mut one_per_sm_steps, mut exact_two_per_sm_steps) = (0usize, 0usize, 0usize);
    let steps = sized(2, 1);
    let Some(device) = gpu_or_skip(test) else { return };
    let sms = device.sm_count().expect("SM count") as usize;
    drop(device);
    // More rows than SMs in the last two cases (160 on the H200's 132): the host then launches
    // the two-per-SM build of stage 2; fewer in the others. In the third every row may be
    // listed, so `exact_bins` and the finish run two per SM too; in the fourth most rows are
    // small top-k ones, which stage 2 decides (`decide::stage2_seldom_lists`), and those
    // kernels run one per SM.
    let cases = [
        (151_936usize, sized(48usize, 12).min(sms), LogitsDtype::F32, false),
        (50_257, sized(21, 7).min(sms), LogitsDtype::Bf16, false),
        (32_000, sms + sized(28, 8), LogitsDtype::F16, false),
        (32_000, sms + sized(28, 8), LogitsDtype::F32, true),
    ];
    for &(vocab, batch, dtype, mostly_small_top_k) in &cases {
        let Some(device) = gpu_or_skip(test) else { return };
        let config = GpuSamplerConfig { exact_pass: launch, ..GpuSamplerConfig::new(vocab, batch) };
        let mut gpu = GpuSampler::new(device, config).expect("gpu sampler");
        let mut cpu = CpuReference::new(vocab, batch).expect("cpu reference");
        let mut values = Vec::with_capacity(batch * vocab);
        for id in 0..batch {
            let seed = rng.next_u64();
            let t = 0.6 + unit(&mut rng) as f32 * 0.8;
            let params = match id % 7 {
                0 => SamplingParams::random(1.0, seed).with_top_p(0.95),
                2.. if mostly_small_top_k => SamplingParams::random(t, seed).with_top_k(1 + below(&mut rng, 128) as u32),
                1 => SamplingParams::random(t, seed).with_top_k(129 + below(&mut rng, 4000) as u32).with_top_p(0.5 + 0.49 * unit(&mut rng) as f32),
                2 => SamplingParams::random(t, seed).with_min_p(0.01 + 0.1 * unit(&mut rng) as f32),
                3 => SamplingParams::random(t, seed).with_top_k(3000).with_logprobs(5),
                // Band mode's too-full boundary bin, and the whole-row histogram's.
                4 if id % 14 == 11 => SamplingParams::random(t, seed).with_top_p(0.9),
                4 => SamplingParams::random(t, seed).with_top_k(2000).with_top_p(0.9),
                5 => SamplingParams::random(t, seed).with_top_p(0.99).with_min_p(0.05).with_logprobs(0),
                _ => SamplingParams::random(t, seed).with_top_k(5000),
            };
            let params = if below(&mut rng, 2) == 0 { params.with_penalties(1.2, 0.3, 0.1) } else { params };
            let prompt = prompt(&mut rng, vocab);
            gpu.add_request(id as u64, params.clone(), &prompt).expect("gpu add");
            cpu.add_request(id as u64, params, &prompt).expect("cpu add");
            if id % 7 == 4 {
                // Equal logits: every key is in one bin, far more than the split pass gathers.
                let level = normal(&mut rng, 1.0);
                values.extend(std::iter::repeat_n(level, vocab));
            } else {
                values.extend(logit_row(&mut rng, RowShape::Flat, vocab));
            }
        }
        let logits = TypedRows::new(dtype, values);
        for step in 0..steps {
            let rows: Vec<BatchRow> = (0..batch as u64).map(BatchRow::new).collect();
            let b = Batch { logits: logits.host(batch, vocab, vocab), rows };
            let g = gpu.sample(&b).expect("gpu sample");
            let c = cpu.sample(&b).expect("cpu sample");
            for (i, (g, c)) in g.iter().zip(&c).enumerate() {
                if let Some(diff) = compare(g, c) {
                    mismatches += 1;
                    eprintln!("{launch:?} V={vocab} {dtype:?} step {step} row {i} (kind {}): {diff}", i % 7);
                }
            }
            if gpu.last_step_two_per_sm() {
                two_per_sm_steps += 1;
            } else {
                one_per_sm_steps += 1;
            }
            exact_two_per_sm_steps += usize::from(gpu.last_step_exact_two_per_sm());
            let (split, single) = gpu.exact_paths_last_step().expect("flags");
            let band = gpu.exact_band_rows_last_step().expect("jobs");
            eprintln!("{launch:?} V={vocab} {dtype:?} step {step}: {split} rows split ({band} in band mode), {single} single-block");
            split_rows += split;
            band_rows += band;
            single_rows += single;
        }
    }
    assert_eq!(mismatches, 0, "{launch:?}");
    assert!(band_rows > 0, "{launch:?}: the split exact pass never ran in band mode");
    assert!(split_rows > band_rows, "{launch:?}: the split exact pass never binned a whole row");
    assert!(single_rows > 0, "{launch:?}: the single-block exact pass never ran");
    assert_eq!((one_per_sm_steps, two_per_sm_steps), (2 * steps, 2 * steps), "{launch:?}: stage 2's steps of one and of two blocks per SM");
    // One launch has no `exact_bins` or finish of its own.
    let expect_exact_two = if launch == ExactPassLaunch::FourLaunches { steps } else { 0 };
    assert_eq!(exact_two_per_sm_steps, expect_exact_two, "{launch:?}: steps whose exact_bins and finish ran two per SM");
}

/// Steps whose split rows are all in band mode without logit bias ("warp rows"):
/// `exact_histogram_runs` and `exact_gather_runs` give each warp a run of rounds once the step
/// has enough (`abi::warp_row_run`: runs inside a tile and runs across tiles here, and a block
/// per tile at B = 1 and 3), with penalties and bitmasks on some rows, half-width and unaligned
/// rows (V = 50257 packs rows at odd offsets) and a partial last tile. Two more cases add a row
/// with a logit bias to a step large enough for warp runs, which must take the step's rows a
/// block per tile (the warp path skips a biased row): the host launches the plain builds for
/// such a step, and with the `_runs` builds forced (`set_exact_warp_runs_by_batch`) their block
/// path must do it. The run each step took is the host's reading of the device's list head
/// (`exact_warp_run_last_step`); the tokens are the check.
#[test]
fn gpu_band_rows_taken_in_warp_runs_equal_reference() {
    const TEST: &str = "gpu_band_rows_taken_in_warp_runs_equal_reference";
    let mut rng = fresh_rng(TEST);
    let cases = [
        (151_936usize, 1usize, LogitsDtype::F32, false, false),
        (50_257, 3, LogitsDtype::Bf16, false, false),
        (128_256, 64, LogitsDtype::F16, false, false),
        (50_257, 120, LogitsDtype::Bf16, false, false),
        (128_256, sized(257, 200), LogitsDtype::F32, false, false),
        // Rows enough for warp runs but for the biased row: the plain builds, then the `_runs`
        // builds' block path.
        (50_257, sized(120, 100), LogitsDtype::F32, true, false),
        (50_257, sized(120, 100), LogitsDtype::F32, true, true),
    ];
    let (mut mismatches, mut rows_run, mut band_rows, mut block_steps) = (0usize, 0usize, 0usize, 0usize);
    let mut runs_seen = Vec::new();
    for &(vocab, batch, dtype, with_bias, runs_by_batch) in &cases {
        let Some(device) = gpu_or_skip(TEST) else { return };
        let mut gpu = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
        gpu.set_exact_warp_runs_by_batch(runs_by_batch);
        let mut cpu = CpuReference::new(vocab, batch).expect("cpu reference");
        for id in 0..batch {
            let t = 0.8 + unit(&mut rng) as f32 * 0.5;
            let params = SamplingParams::random(t, rng.next_u64()).with_top_p(0.8 + 0.19 * unit(&mut rng) as f32);
            let params = if below(&mut rng, 3) == 0 { params.with_penalties(1.1, 0.2, 0.1) } else { params };
            let params = if with_bias && id == batch / 2 { params.with_logit_bias(vec![(7, 0.5), (vocab as u32 - 1, -1.0)]) } else { params };
            let prompt = prompt(&mut rng, vocab);
            gpu.add_request(id as u64, params.clone(), &prompt).expect("gpu add");
            cpu.add_request(id as u64, params, &prompt).expect("cpu add");
        }
        for step in 0..sized(2, 1) {
            let values: Vec<f32> = (0..batch).flat_map(|_| logit_row(&mut rng, RowShape::Flat, vocab)).collect();
            let logits = TypedRows::new(dtype, values);
            let mut masks = random_masks(&mut rng, batch, vocab);
            if with_bias {
                // The biased row must reach the split pass: a mask of a few tokens would let
                // it fit the candidate lists (session 29: a reduced-size run under memcheck).
                masks[batch / 2] = None;
            }
            let b = Batch { logits: logits.host(batch, vocab, vocab), rows: rows_with_masks(&masks) };
            let g = gpu.sample(&b).expect("gpu sample");
            let c = cpu.sample(&b).expect("cpu sample");
            for (i, (g, c)) in g.iter().zip(&c).enumerate() {
                if let Some(diff) = compare(g, c) {
                    mismatches += 1;
                    eprintln!("V={vocab} B={batch} {dtype:?} step {step} row {i}: {diff}");
                }
            }
            let (split, _) = gpu.exact_paths_last_step().expect("flags");
            let band = gpu.exact_band_rows_last_step().expect("jobs");
            let (block, run) = gpu.exact_warp_run_last_step().expect("list");
            eprintln!("V={vocab} B={batch} {dtype:?} step {step}: {split} rows split, {band} in band mode, {block} block rows, run {run:?}");
            // Every split row is a top-p row without min-p or top-k: band mode, a warp row
            // unless it has a bias.
            assert_eq!(band, split, "V={vocab} B={batch}: a split row not in band mode");
            if with_bias {
                assert!(block <= 1, "V={vocab} B={batch}: {block} block rows, only the biased row may be one");
                // The host's choice: the plain builds for a step with a biased row listable,
                // unless forced (then the `_runs` builds' block path takes a step that lists it).
                assert_eq!(gpu.last_step_exact_warp_runs(), runs_by_batch, "V={vocab} B={batch}: the tile builds launched");
                block_steps += block as usize;
            } else {
                assert_eq!(block, 0, "V={vocab} B={batch}: block rows in a step of warp rows");
            }
            runs_seen.push(run);
            rows_run += batch;
            band_rows += band;
        }
    }
    assert_eq!(mismatches, 0);
    // Flat rows at these top-p values pass the tile lists: most rows reach the split pass.
    assert!(band_rows * 2 > rows_run, "only {band_rows} of {rows_run} rows took the split pass in band mode");
    assert!(block_steps > 0, "the biased row never sent a step's rows to a block per tile");
    // A block per tile; runs that end inside a tile (several warps add to it); runs longer than
    // a tile (a warp stores a whole tile and moves to the next, or the next row).
    assert!(runs_seen.contains(&None), "no step took its rows a block per tile (saw {runs_seen:?})");
    assert!(runs_seen.iter().any(|r| r.is_some_and(|r| r < 16)), "no run shorter than a tile (saw {runs_seen:?})");
    assert!(runs_seen.iter().any(|r| r.is_some_and(|r| r > 16)), "no run longer than a tile (saw {runs_seen:?})");
}

/// Strided device logits and graph replays; and the outputs on the device
/// (`GpuSampler::device_outputs`) equal what `read_outputs` reads, copied by a consumer graph
/// replayed after the step with no host read between.
#[test]
fn gpu_strided_device_logits_and_graph_replay_equal_reference() {
    const TEST: &str = "gpu_strided_device_logits_and_graph_replay_equal_reference";
    let mut rng = fresh_rng(TEST);
    // The second case replays the exact pass in one launch, whose queue each step must reset.
    for &(vocab, batch, stride, dtype, exact_pass) in &[
        (50_257usize, sized(64usize, 16), 50_260usize, LogitsDtype::F32, ExactPassLaunch::FourLaunches),
        (151_936, 3, 151_939, LogitsDtype::Bf16, ExactPassLaunch::OneLaunch),
    ] {
        let Some(mut pair) = Pair::with_exact_pass(TEST, &mut rng, vocab, batch, exact_pass) else { return };
        let stream = pair.gpu.device().stream().clone();
        let mut device_rows = DeviceRows::new(&pair.gpu, dtype, batch, vocab, stride);
        // Capture once, before any logits exist.
        // SAFETY: `device_rows` lives until the end of this loop iteration, after every replay.
        let graph = unsafe { device_rows.capture(&mut pair.gpu) };
        // The caller's next-step buffers, filled on the device from the step's outputs by a
        // graph of its own replayed after the step in stream order: no host read between.
        let mut next_tokens = stream.alloc_zeros::<i32>(batch).expect("alloc");
        let mut next_status = stream.alloc_zeros::<u32>(batch).expect("alloc");
        let consumer = {
            let outs = pair.gpu.device_outputs().expect("device outputs");
            let copy_err = |e: cudarc::driver::DriverError| sampler_host::Error::Cuda { op: "copying the outputs", detail: e.to_string() };
            pair.gpu
                .device()
                .capture(|| {
                    stream.memcpy_dtod(&outs.tokens.slice(0..batch), &mut next_tokens).map_err(copy_err)?;
                    stream.memcpy_dtod(&outs.status.slice(0..batch), &mut next_status).map_err(copy_err)
                })
                .expect("capture the consumer")
        };
        let mut mismatches = 0;
        for replay in 0..sized(4, 2) {
            // New settings for some requests, new logits, new masks.
            for id in 0..batch as u64 {
                if below(&mut rng, 3) == 0 {
                    let params: SamplingParams = mixed_params(&mut rng, vocab);
                    pair.gpu.update_request(id, params.clone()).expect("update");
                    pair.cpu.update_request(id, params).expect("update");
                }
            }
            let values = random_rows(&mut rng, batch, vocab, stride);
            let logits = TypedRows::new(dtype, values);
            device_rows.write(&pair.gpu, &logits);
            let masks = random_masks(&mut rng, batch, vocab);
            let rows: Vec<BatchRow> = (0..batch)
                .map(|r| match &masks[r] {
                    Some(m) => BatchRow::with_bitmask(r as u64, m),
                    None => BatchRow::new(r as u64),
                })
                .collect();
            // Poisoned, so that a copy that did not run (or read stale rows) shows.
            stream.memcpy_htod(&vec![i32::MIN; batch], &mut next_tokens).expect("poison");
            stream.memcpy_htod(&vec![u32::MAX; batch], &mut next_status).expect("poison");
            pair.gpu.upload_step(&rows).expect("upload");
            pair.gpu.replay(&graph).expect("replay");
            consumer.launch().expect("replay the consumer");
            let gpu = pair.gpu.read_outputs().expect("outputs");
            let copied = (stream.clone_dtoh(&next_tokens).expect("read"), stream.clone_dtoh(&next_status).expect("read"));
            let read: (Vec<i32>, Vec<u32>) = (gpu.iter().map(|o| o.token).collect(), gpu.iter().map(|o| o.status).collect());
            assert_eq!(copied, read, "V={vocab} replay {replay}: device outputs copied on the device differ from read_outputs");
            let b = Batch { logits: logits.host(batch, vocab, stride), rows };
            let cpu = pair.cpu.sample(&b).expect("cpu");
            for (i, (g, c)) in gpu.iter().zip(&cpu).enumerate() {
                if let Some(diff) = compare(g, c) {
                    mismatches += 1;
                    eprintln!("V={vocab} stride {stride} replay {replay} row {i}: {diff}");
                }
            }
        }
        assert_eq!(mismatches, 0, "graph replays differ from the reference");
    }
}

/// Bitmasks already on the device (`upload_step_with_bitmask`, `BatchRow::with_device_bitmask`)
/// give the reference's tokens for the same masks given from the host, through one captured
/// graph whose steps take their masks from the device and from the host in turn. Every device
/// step has a masked first row and an unmasked last one (the copy then stops short of the
/// batch). The device rows of unmasked rows are all zeros (no token allowed), so an unmasked
/// row below a masked one that read its device row would fail. One case has padded rows (a
/// pitched copy), one dense rows.
#[test]
fn gpu_device_bitmask_rows_equal_reference() {
    const TEST: &str = "gpu_device_bitmask_rows_equal_reference";
    let mut rng = fresh_rng(TEST);
    for &(vocab, batch, pad, dtype) in &[(50_257usize, sized(64usize, 16), 5usize, LogitsDtype::F32), (151_936, 3, 0, LogitsDtype::Bf16)] {
        let Some(mut pair) = Pair::new(TEST, &mut rng, vocab, batch) else { return };
        let stream = pair.gpu.device().stream().clone();
        let stride = vocab.div_ceil(32) + pad;
        let mut masks_dev = stream.alloc_zeros::<i32>(batch * stride).expect("alloc");
        let mut logits_dev = DeviceRows::new(&pair.gpu, dtype, batch, vocab, vocab);
        // SAFETY: `logits_dev` lives until the end of this loop iteration, after every replay.
        let graph = unsafe { logits_dev.capture(&mut pair.gpu) };
        let (mut mismatches, mut device_rows) = (0, 0);
        for step in 0..sized(4, 2) {
            let logits = TypedRows::new(dtype, random_rows(&mut rng, batch, vocab, vocab));
            logits_dev.write(&pair.gpu, &logits);
            let mut masks = random_masks(&mut rng, batch, vocab);
            let on_device = step % 2 == 0;
            if on_device {
                // Random masks alone leave a batch of three unmasked one step in five, or all
                // masked, so these two rows are set.
                if masks[0].is_none() {
                    masks[0] = Some(bitmask_row(&mut rng, vocab, 0.5));
                }
                masks[batch - 1] = None;
                let mask_rows: Vec<Option<&[i32]>> = masks.iter().map(Option::as_deref).collect();
                stream.memcpy_htod(&pitched_mask_words(&mask_rows, stride), &mut masks_dev).expect("masks to the device");
                let rows: Vec<BatchRow> =
                    masks.iter().enumerate().map(|(r, m)| if m.is_some() { BatchRow::with_device_bitmask(r as u64) } else { BatchRow::new(r as u64) }).collect();
                device_rows += masks.iter().filter(|m| m.is_some()).count();
                pair.gpu.upload_step_with_bitmask(&rows, &DeviceBitmask::new(&masks_dev, batch, stride)).expect("upload");
            } else {
                pair.gpu.upload_step(&rows_with_masks(&masks)).expect("upload");
            }
            pair.gpu.replay(&graph).expect("replay");
            let gpu = pair.gpu.read_outputs().expect("outputs");
            let cpu = pair.cpu.sample(&Batch { logits: logits.host(batch, vocab, vocab), rows: rows_with_masks(&masks) }).expect("cpu");
            for (i, (g, c)) in gpu.iter().zip(&cpu).enumerate() {
                if let Some(diff) = compare(g, c) {
                    mismatches += 1;
                    eprintln!("V={vocab} step {step} (masks on the device: {on_device}) row {i}: {diff}");
                }
            }
        }
        eprintln!("V={vocab} B={batch}: {device_rows} rows took their mask from the device");
        assert_eq!(mismatches, 0, "device bitmask steps differ from the reference");
    }
}

/// Steps queued back to back with no host read or wait between them, as an engine that keeps
/// its tokens on the device runs them: each step's upload goes out of pinned staging while
/// earlier steps still run, the request state lives on the device alone, and each step's tokens
/// are copied into a device array. Read once at the end, every step's tokens are the
/// reference's. The host runs ahead of the GPU, so an upload that overwrote staging still being
/// copied would give a step another step's settings or masks.
#[test]
fn gpu_pipelined_steps_without_host_reads_equal_reference() {
    const TEST: &str = "gpu_pipelined_steps_without_host_reads_equal_reference";
    let mut rng = fresh_rng(TEST);
    let (vocab, batch, steps) = (50_257usize, sized(64usize, 16), sized(8usize, 4));
    let Some(mut pair) = Pair::new(TEST, &mut rng, vocab, batch) else { return };
    let stream = pair.gpu.device().stream().clone();
    // Every step's logits on the device, and its masks, before the first step is queued.
    let values: Vec<Vec<f32>> = (0..steps).map(|_| random_rows(&mut rng, batch, vocab, vocab)).collect();
    let masks: Vec<Vec<Option<Vec<i32>>>> = (0..steps).map(|_| random_masks(&mut rng, batch, vocab)).collect();
    let logits_dev: Vec<CudaSlice<f32>> = values.iter().map(|v| stream.clone_htod(v).expect("logits to the device")).collect();
    let mut tokens_dev = stream.alloc_zeros::<i32>(steps * batch).expect("alloc");
    pair.gpu.device().synchronize().expect("sync");
    for (k, logits) in logits_dev.iter().enumerate() {
        pair.gpu.upload_step(&rows_with_masks(&masks[k])).expect("upload");
        pair.gpu.enqueue_step(&DeviceLogits::f32(logits, batch, vocab)).expect("step");
        let outs = pair.gpu.device_outputs().expect("device outputs");
        stream.memcpy_dtod(&outs.tokens.slice(0..batch), &mut tokens_dev.slice_mut(k * batch..(k + 1) * batch)).expect("tokens");
    }
    let tokens = stream.clone_dtoh(&tokens_dev).expect("read");
    let mut mismatches = 0;
    for k in 0..steps {
        let b = Batch { logits: HostLogits::f32(&values[k], batch, vocab).expect("host logits"), rows: rows_with_masks(&masks[k]) };
        let cpu = pair.cpu.sample(&b).expect("cpu");
        for (i, c) in cpu.iter().enumerate() {
            if tokens[k * batch + i] != c.token {
                mismatches += 1;
                eprintln!("step {k} row {i}: token gpu {} cpu {}", tokens[k * batch + i], c.token);
            }
        }
    }
    assert_eq!(mismatches, 0, "steps queued without host reads differ from the reference");
}

/// A sampler on the caller's stream (`GpuDevice::on_stream`), in a context with tracking off and
/// two streams: each step's logits are written on that stream by a device copy (the caller's
/// forward pass), the step's graph replays after it and a copy of the tokens into the caller's
/// buffer follows, with no event or host read between; the tokens equal the reference's and
/// the copy equals `read_outputs`. Every other step reads nothing back but that copy, whose
/// tokens must still be the reference's. The steps run on a thread other than the one that built
/// the sampler and captured its graph. A context that tracks events is refused before anything
/// runs.
#[test]
fn gpu_sampler_on_the_callers_stream_equals_reference() {
    const TEST: &str = "gpu_sampler_on_the_callers_stream_equals_reference";
    let Some(_probe) = gpu_or_skip(TEST) else { return };
    let tracked = CudaContext::new(0).expect("context");
    let refused = GpuDevice::on_stream(tracked.default_stream());
    assert!(
        matches!(refused, Err(sampler_host::Error::InvalidSetting { field: sampler_host::Field::Stream, .. })),
        "a stream whose context tracks events must be refused"
    );
    let ctx = CudaContext::new(0).expect("context");
    // SAFETY: this wrapper of the context has no slice or stream yet.
    unsafe { ctx.disable_event_tracking() };
    let engine = ctx.new_stream().expect("stream");
    let _second = ctx.new_stream().expect("stream");
    let mut rng = fresh_rng(TEST);
    let (vocab, batch) = (151_936usize, sized(257usize, 17));
    let device = GpuDevice::on_stream(engine.clone()).expect("the caller's stream");
    let Pair { mut gpu, mut cpu } = Pair::on_device(device, GpuSamplerConfig::new(vocab, batch), &mut rng);
    let mut forward_out = engine.alloc_zeros::<f32>(batch * vocab).expect("alloc");
    let mut logits = engine.alloc_zeros::<f32>(batch * vocab).expect("alloc");
    let mut next_tokens = engine.alloc_zeros::<i32>(batch).expect("alloc");
    let graph = {
        let rows: Vec<BatchRow> = (0..batch as u64).map(BatchRow::new).collect();
        gpu.upload_step(&rows).expect("upload");
        // SAFETY: `logits` moves to the worker with the graph and outlives its last replay.
        unsafe { gpu.capture_step(&DeviceLogits::f32(&logits, batch, vocab), batch) }.expect("capture")
    };
    // The engine's GPU worker drives the steps: the sampler and its graph move to that thread.
    let worker = std::thread::spawn(move || {
        let mut mismatches = 0;
        for step in 0..sized(4, 3) {
            let values = random_rows(&mut rng, batch, vocab, vocab);
            let masks = random_masks(&mut rng, batch, vocab);
            let rows = rows_with_masks(&masks);
            engine.memcpy_htod(&values, &mut forward_out).expect("forward output");
            engine.memcpy_htod(&vec![i32::MIN; batch], &mut next_tokens).expect("poison");
            gpu.upload_step(&rows).expect("upload");
            // The caller's last write of the logits, then the step, then its consumer: one stream.
            engine.memcpy_dtod(&forward_out, &mut logits).expect("logits");
            gpu.replay(&graph).expect("replay");
            {
                let outs = gpu.device_outputs().expect("device outputs");
                engine.memcpy_dtod(&outs.tokens.slice(0..batch), &mut next_tokens).expect("tokens");
            }
            let c = cpu.sample(&Batch { logits: HostLogits::f32(&values, batch, vocab).expect("host logits"), rows }).expect("cpu");
            // Every other step reads nothing back but the copy: the device alone carries the
            // request state to the next step, as for an engine that never calls read_outputs.
            let g = if step % 2 == 0 { Some(gpu.read_outputs().expect("outputs")) } else { None };
            let copied = engine.clone_dtoh(&next_tokens).expect("read");
            if let Some(g) = &g {
                assert_eq!(copied, g.iter().map(|o| o.token).collect::<Vec<_>>(), "step {step}: the copied tokens differ from read_outputs");
                for (i, (g, c)) in g.iter().zip(&c).enumerate() {
                    if let Some(diff) = compare(g, c) {
                        mismatches += 1;
                        eprintln!("step {step} row {i}: {diff}");
                    }
                }
            } else {
                for (i, (&t, c)) in copied.iter().zip(&c).enumerate() {
                    if t != c.token {
                        mismatches += 1;
                        eprintln!("step {step} row {i} (not read back): token gpu {t} cpu {}", c.token);
                    }
                }
            }
        }
        mismatches
    });
    let mismatches = worker.join().expect("the worker thread");
    assert_eq!(mismatches, 0, "steps on the caller's stream differ from the reference");
}

#[test]
fn gpu_graph_replays_listing_rows_or_not_equal_reference() {
    const TEST: &str = "gpu_graph_replays_listing_rows_or_not_equal_reference";
    let mut rng = fresh_rng(TEST);
    // One graph, replays that alternate between steps that list no row for the exact pass,
    // steps that list every row and steps that list some: what one replay leaves in the
    // exact pass's scratch and queue must not reach the next. Each step replays the graph its
    // rows call for (`StepKernels`): greedy rows alone `sample_tiles_greedy` alone, no flat
    // row the step without the mass scan, rows that all need the mass the step without
    // `sample_tiles`, else every kernel; under `BySettings`, no exact-pass
    // launch when no row is flat top-p (kind 4's top-k 100 rows of equal logits are left
    // undecided all the same: such a quiet step's stage 2 finishes them). Each launch order of
    // the pass; then eager steps of each kind.
    for &(vocab, batch, dtype, exact_pass, exact_pass_order) in &[
        (151_936usize, 4usize, LogitsDtype::F16, ExactPassLaunch::BySettings, ExactPassOrder::FirstSerial),
        // More rows than the H200's SMs: the two-per-SM builds of stage 2, the quiet one too.
        (32_000, sized(150, 6), LogitsDtype::F32, ExactPassLaunch::BySettings, ExactPassOrder::FirstSerial),
        (50_257, 3, LogitsDtype::F32, ExactPassLaunch::FourLaunches, ExactPassOrder::FirstSerial),
        (151_936, 5, LogitsDtype::Bf16, ExactPassLaunch::OneLaunch, ExactPassOrder::FirstSerial),
        (50_257, 3, LogitsDtype::F16, ExactPassLaunch::FourLaunches, ExactPassOrder::Overlapped),
        (128_256, 3, LogitsDtype::F32, ExactPassLaunch::FourLaunches, ExactPassOrder::Serial),
        // 64 rows, at most one a SM: `ByRows` (the default) overlaps the pass's first launch
        // when the listable (flat) rows are many.
        (50_257, 64, LogitsDtype::F32, ExactPassLaunch::BySettings, ExactPassOrder::ByRows),
    ] {
        let Some(device) = gpu_or_skip(TEST) else { return };
        let sms = device.sm_count().expect("SM count") as usize;
        let config = GpuSamplerConfig { exact_pass, exact_pass_order, ..GpuSamplerConfig::new(vocab, batch) };
        let mut gpu = GpuSampler::new(device, config).expect("gpu sampler");
        let mut cpu = CpuReference::new(vocab, batch).expect("cpu reference");
        for id in 0..batch as u64 {
            let prompt = prompt(&mut rng, vocab);
            let params = SamplingParams::greedy();
            gpu.add_request(id, params.clone(), &prompt).expect("gpu add");
            cpu.add_request(id, params, &prompt).expect("cpu add");
        }
        let stream = gpu.device().stream().clone();
        let mut dev_f32 = stream.alloc_zeros::<f32>(if dtype == LogitsDtype::F32 { batch * vocab } else { 1 }).expect("alloc");
        let mut dev_u16 = stream.alloc_zeros::<u16>(if dtype == LogitsDtype::F32 { 1 } else { batch * vocab }).expect("alloc");
        let rows: Vec<BatchRow> = (0..batch as u64).map(BatchRow::new).collect();
        let graph = {
            let view = match dtype {
                LogitsDtype::F32 => DeviceLogits::f32(&dev_f32, batch, vocab),
                _ => DeviceLogits::half_bits(&dev_u16, dtype, batch, vocab),
            };
            gpu.upload_step(&rows).expect("upload");
            // SAFETY: both buffers outlive every replay of this iteration.
            unsafe { gpu.capture_step(&view, batch) }.expect("capture")
        };
        let mut mismatches = 0;
        // 0: no row listed, 1: every row, 2: a random subset (at least one), 3: greedy rows alone,
        // 4: top-k 100 rows of equal logits listed (at least one), no flat top-p row; 5: quiet
        // rows that need the row mass (untruncated, greedy with log-probabilities; at least one)
        // and maybe top-k 50 rows, none listed.
        for (replay, &kind) in [3u32, 1, 0, 4, 3, 5, 2, 1, 3, 0, 4, 5, 2].iter().enumerate() {
            let chosen = below(&mut rng, batch as u64) as usize;
            let mut values = Vec::with_capacity(batch * vocab);
            let mut expect_listed = 0;
            let mut flat_rows = 0;
            let mut mass_rows = 0;
            // Kind 0 may draw greedy rows alone too; the switch follows the rows, not the kind.
            let mut all_greedy = true;
            for id in 0..batch {
                let wide = kind == 1 || (kind == 2 && (id == chosen || below(&mut rng, 3) == 0));
                let equal = kind == 4 && (id == chosen || below(&mut rng, 3) == 0);
                let seed = rng.next_u64();
                // A flat row at T 1 and top-p 0.95 keeps thousands of tokens: stage 2 lists it.
                // So does a top-k 100 row of equal logits: its merge holds tile 0's 32 keys, and
                // the re-read of that crowded tile finds all 4096 above the next list's floor.
                // Greedy and top-k 50 rows are decided in stage 2.
                let params = if wide {
                    expect_listed += 1;
                    flat_rows += 1;
                    mass_rows += 1;
                    SamplingParams::random(1.0, seed).with_top_p(0.95)
                } else if equal {
                    expect_listed += 1;
                    SamplingParams::random(0.7, seed).with_top_k(100)
                } else if kind == 5 {
                    // Untruncated rows are drawn from the tile masses, greedy rows with
                    // log-probabilities take the maximum: stage 2 decides both.
                    match if id == chosen { 0 } else { below(&mut rng, 3) } {
                        0 => {
                            mass_rows += 1;
                            SamplingParams::random(1.0, seed)
                        }
                        1 => {
                            mass_rows += 1;
                            SamplingParams::greedy().with_logprobs(3)
                        }
                        _ => SamplingParams::random(0.7, seed).with_top_k(50),
                    }
                } else if kind == 3 || below(&mut rng, 2) == 0 {
                    SamplingParams::greedy()
                } else {
                    SamplingParams::random(0.7, seed).with_top_k(50)
                };
                all_greedy &= params.temperature == 0.0 && !params.logprobs;
                gpu.update_request(id as u64, params.clone()).expect("update");
                cpu.update_request(id as u64, params).expect("update");
                if equal {
                    values.extend(std::iter::repeat_n(normal(&mut rng, 1.0), vocab));
                } else {
                    values.extend(logit_row(&mut rng, if wide { RowShape::Flat } else { RowShape::Peaked }, vocab));
                }
            }
            let logits = TypedRows::new(dtype, values);
            match dtype {
                LogitsDtype::F32 => stream.memcpy_htod(&logits.f32s, &mut dev_f32).expect("copy"),
                LogitsDtype::Bf16 | LogitsDtype::F16 => stream.memcpy_htod(&logits.bits(), &mut dev_u16).expect("copy"),
            }
            gpu.upload_step(&rows).expect("upload");
            gpu.replay(&graph).expect("replay");
            // Flat top-p rows need the row mass; greedy and top-k 50 rows do not.
            let expect_kernels = if all_greedy {
                StepKernels::Greedy
            } else if mass_rows == batch {
                StepKernels::MassScanOnly
            } else if mass_rows > 0 {
                StepKernels::All
            } else {
                StepKernels::NoMassScan
            };
            assert_eq!(graph.last_replay_kernels(), Some(expect_kernels), "V={vocab} replay {replay}: the graph replayed");
            let expect_exact = match (expect_kernels, exact_pass) {
                (StepKernels::Greedy, _) => None,
                (_, ExactPassLaunch::BySettings) if flat_rows == 0 => Some(StepExactPass::InStageTwo),
                (_, ExactPassLaunch::OneLaunch) => Some(StepExactPass::OneLaunch),
                _ => Some(StepExactPass::FourLaunches),
            };
            assert_eq!(graph.last_replay_exact_pass(), expect_exact, "V={vocab} replay {replay}: the exact pass replayed");
            // `exact_bins` and the finish two per SM when the rows stage 2 may list (the flat
            // ones: every request's settings are new, so none counts as undecided last step)
            // outnumber the SMs: at B = 150 when every row is flat, not when a third is.
            let expect_exact_two = expect_exact == Some(StepExactPass::FourLaunches) && flat_rows > sms;
            assert_eq!(graph.last_replay_exact_two_per_sm(), expect_exact_two, "V={vocab} replay {replay}: the exact row kernels' builds");
            // Under `ByRows` the first launch overlaps stage 2 where the flat rows (the listable
            // ones) number at least OVERLAP_FIRST_MIN_LISTABLE and the grid is one row a SM or
            // less: at B = 64 when every row is flat, not when a third is.
            let launches_exact = matches!(expect_exact, Some(StepExactPass::FourLaunches | StepExactPass::OneLaunch));
            let expect_first_overlapped = launches_exact
                && match exact_pass_order {
                    ExactPassOrder::Overlapped => true,
                    ExactPassOrder::FirstSerial | ExactPassOrder::Serial => false,
                    ExactPassOrder::ByRows => flat_rows >= OVERLAP_FIRST_MIN_LISTABLE as usize && batch <= sms,
                };
            assert_eq!(
                graph.last_replay_exact_first_overlapped(),
                expect_first_overlapped,
                "V={vocab} replay {replay}: the exact pass's first launch order ({flat_rows} flat rows)"
            );
            let g = gpu.read_outputs().expect("outputs");
            let listed_now = gpu.exact_rows_last_step().expect("flags");
            assert_eq!(listed_now, expect_listed, "V={vocab} replay {replay}: rows listed");
            let b = Batch { logits: logits.host(batch, vocab, vocab), rows: rows.clone() };
            let c = cpu.sample(&b).expect("cpu sample");
            for (i, (g, c)) in g.iter().zip(&c).enumerate() {
                if let Some(diff) = compare(g, c) {
                    mismatches += 1;
                    eprintln!("V={vocab} {dtype:?} {exact_pass:?} {exact_pass_order:?} replay {replay} (kind {kind}) row {i}: {diff}");
                }
            }
        }
        assert_eq!(mismatches, 0, "{exact_pass:?}, {exact_pass_order:?}: graph replays differ from the reference");
        // Eager steps: greedy rows alone (no exact pass launched), flat top-p rows, and top-k
        // 100 rows of equal logits (a quiet step that lists every row).
        for kind in ["greedy", "flat", "greedy", "equal"] {
            let mut values = Vec::with_capacity(batch * vocab);
            for id in 0..batch as u64 {
                let seed = rng.next_u64();
                let params = match kind {
                    "flat" => SamplingParams::random(1.0, seed).with_top_p(0.95),
                    "equal" => SamplingParams::random(0.7, seed).with_top_k(100),
                    _ => SamplingParams::greedy(),
                };
                gpu.update_request(id, params.clone()).expect("update");
                cpu.update_request(id, params).expect("update");
                if kind == "equal" {
                    values.extend(std::iter::repeat_n(normal(&mut rng, 1.0), vocab));
                } else {
                    values.extend(logit_row(&mut rng, if kind == "flat" { RowShape::Flat } else { RowShape::Peaked }, vocab));
                }
            }
            let logits = TypedRows::new(dtype, values);
            let b = Batch { logits: logits.host(batch, vocab, vocab), rows: rows.clone() };
            let (g, c) = (gpu.sample(&b).expect("gpu sample"), cpu.sample(&b).expect("cpu sample"));
            assert_eq!(gpu.exact_rows_last_step().expect("flags"), if kind == "greedy" { 0 } else { batch }, "eager {kind} rows listed");
            if kind == "equal" && exact_pass == ExactPassLaunch::BySettings {
                assert_eq!(gpu.last_step_exact_pass(), Some(StepExactPass::InStageTwo), "eager {kind} step");
            }
            for (i, (g, c)) in g.iter().zip(&c).enumerate() {
                assert!(compare(g, c).is_none(), "eager {kind} step row {i}: {:?}", compare(g, c));
            }
        }
        // The same requests again, settings unchanged: each was left undecided in its last
        // step, so under `BySettings` this step is busy (the split pass, four launches).
        let mut values = Vec::with_capacity(batch * vocab);
        for _ in 0..batch {
            values.extend(std::iter::repeat_n(normal(&mut rng, 1.0), vocab));
        }
        let logits = TypedRows::new(dtype, values);
        let b = Batch { logits: logits.host(batch, vocab, vocab), rows: rows.clone() };
        let (g, c) = (gpu.sample(&b).expect("gpu sample"), cpu.sample(&b).expect("cpu sample"));
        assert_eq!(gpu.exact_rows_last_step().expect("flags"), batch, "eager repeated rows listed");
        if exact_pass == ExactPassLaunch::BySettings {
            assert_eq!(gpu.last_step_exact_pass(), Some(StepExactPass::FourLaunches), "eager repeated step");
        }
        for (i, (g, c)) in g.iter().zip(&c).enumerate() {
            assert!(compare(g, c).is_none(), "eager repeated step row {i}: {:?}", compare(g, c));
        }
    }
}

#[test]
fn gpu_edge_rows_equal_reference_and_do_not_disturb_neighbours() {
    const TEST: &str = "gpu_edge_rows_equal_reference_and_do_not_disturb_neighbours";
    let mut rng = fresh_rng(TEST);
    let vocab = 50_257;
    let batch = 12;
    let Some(mut pair) = Pair::new(TEST, &mut rng, vocab, batch) else { return };
    let mut values = random_rows(&mut rng, batch, vocab, vocab);
    let row = |r: usize| r * vocab..(r + 1) * vocab;
    values[row(0)].fill(f32::NAN);
    values[row(1)].fill(f32::NEG_INFINITY);
    let t = below(&mut rng, vocab as u64) as usize;
    values[vocab * 2 + t] = f32::INFINITY;
    for _ in 0..5 {
        let t = below(&mut rng, vocab as u64) as usize;
        values[vocab * 3 + t] = f32::INFINITY;
    }
    for v in &mut values[row(4)] {
        *v = if *v > 0.0 { 3e38 } else { -3e38 };
    }
    for v in &mut values[row(5)] {
        *v *= 1e-39; // denormals
    }
    let everything_masked = vec![0i32; vocab.div_ceil(32)];
    let logits = TypedRows::new(LogitsDtype::F32, values.clone());
    let rows: Vec<BatchRow> = (0..batch)
        .map(|r| if r == 6 { BatchRow::with_bitmask(r as u64, &everything_masked) } else { BatchRow::new(r as u64) })
        .collect();
    let b = Batch { logits: logits.host(batch, vocab, vocab), rows: rows.clone() };
    let mut mismatches = pair.step(&b, "edge rows");
    // The same rows one at a time, from fresh requests with the same settings and state, give
    // the same tokens as inside the batch; alone, with the exact pass in one launch.
    let Some(mut single) = Pair::with_exact_pass(TEST, &mut rng, vocab, 1, ExactPassLaunch::OneLaunch) else { return };
    let together = pair.cpu.table().clone();
    for r in 0..batch {
        let state = together.get(r as u64).expect("request").clone();
        single.gpu.drop_request(0).expect("drop");
        single.cpu.drop_request(0).expect("drop");
        let prompt: Vec<u32> = state.prompt.clone();
        single.gpu.add_request(0, state.params.clone(), &prompt).expect("add");
        single.cpu.add_request(0, state.params.clone(), &prompt).expect("add");
        let one = TypedRows::new(LogitsDtype::F32, values[row(r)].to_vec());
        let mask_rows = if r == 6 { vec![BatchRow::with_bitmask(0, &everything_masked)] } else { vec![BatchRow::new(0)] };
        let b1 = Batch { logits: one.host(1, vocab, vocab), rows: mask_rows };
        mismatches += single.step(&b1, &format!("edge row {r} alone"));
    }
    assert_eq!(mismatches, 0);
    let cpu_again = {
        let mut fresh = CpuReference::new(vocab, batch).expect("cpu");
        for r in 0..batch as u64 {
            let s = together.get(r).expect("request");
            fresh.add_request(r, s.params.clone(), &s.prompt).expect("add");
        }
        fresh.sample(&b).expect("sample")
    };
    assert_eq!(cpu_again[0].status, sampler_kernels::status::STATUS_NO_VALID_TOKEN);
    assert_eq!(cpu_again[1].status, sampler_kernels::status::STATUS_NO_VALID_TOKEN);
    assert_eq!(cpu_again[6].status, sampler_kernels::status::STATUS_NO_VALID_TOKEN);
    assert_eq!(cpu_again[2].token as usize, t_of_single_inf(&values[row(2)]));
}

fn t_of_single_inf(row: &[f32]) -> usize {
    row.iter().position(|&v| v == f32::INFINITY).expect("one +inf")
}

/// Greedy steps (every row greedy without log-probabilities) are `sample_tiles_greedy` alone:
/// the warp that counts a row's last tile record finishes the row. Every output and the penalty state
/// must be the reference's over several steps, eager and replayed, at awkward sizes, with
/// every prologue feature, rows that allow no token and rows of NaN and +inf; replays switch
/// between greedy and mixed steps of one captured step, and a greedy step may activate fewer
/// rows than the graph has. A count the finishing warp failed to clear would leave the next step's rows
/// unfinished (stale tokens and state).
#[test]
fn gpu_greedy_steps_in_one_launch_equal_reference() {
    const TEST: &str = "gpu_greedy_steps_in_one_launch_equal_reference";
    let mut rng = fresh_rng(TEST);
    let full = [
        (151_936usize, 257usize, LogitsDtype::F32),
        (50_257, 3, LogitsDtype::Bf16),
        (128_256, 1, LogitsDtype::F16),
        (262_144, 64, LogitsDtype::F32),
        // Half-width rows whose warps scan several pairs of rounds (`scan_max_pairs`): an odd
        // vocab (seven rows in eight not 16-byte aligned, loaded token by token) with tiles
        // split two ways, and aligned rows with a tile a warp.
        (50_257, 64, LogitsDtype::Bf16),
        (32_000, 257, LogitsDtype::F16),
        // Grids whose warps scan two tiles each (`sample_tiles_greedy_pairs`): aligned bf16
        // rows of 32 tiles, unaligned f16 rows of 13 (each row's last span one tile), f32.
        (128_256, 512, LogitsDtype::Bf16),
        (50_257, 1024, LogitsDtype::F16),
        (262_144, 256, LogitsDtype::F32),
    ];
    let reduced = [
        (151_936usize, 9usize, LogitsDtype::F32),
        (50_257, 3, LogitsDtype::Bf16),
        (128_256, 1, LogitsDtype::F16),
        (50_257, 64, LogitsDtype::Bf16),
    ];
    let greedy_params = |rng: &mut _, vocab| {
        let mut p = mixed_params(rng, vocab);
        p.temperature = 0.0;
        p.logprobs = false;
        p.top_logprobs = 0;
        p
    };
    fn as_rows(rows: &[(u64, Option<Vec<i32>>)]) -> Vec<BatchRow<'_>> {
        rows.iter().map(|(id, m)| match m { Some(m) => BatchRow::with_bitmask(*id, m), None => BatchRow::new(*id) }).collect()
    }
    let mut mismatches = 0;
    for &(vocab, batch, dtype) in sized(&full[..], &reduced[..]) {
        let Some(device) = gpu_or_skip(TEST) else { return };
        let mut gpu = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
        let mut cpu = CpuReference::new(vocab, batch).expect("cpu reference");
        for id in 0..batch as u64 {
            let (params, prompt) = (greedy_params(&mut rng, vocab), prompt(&mut rng, vocab));
            gpu.add_request(id, params.clone(), &prompt).expect("gpu add");
            cpu.add_request(id, params, &prompt).expect("cpu add");
        }
        let nothing_allowed = vec![0i32; vocab.div_ceil(32)];
        // Random rows, masks as the mixed test's; from three rows on, the first row has one
        // +inf, the last is NaN and the middle one allows nothing (a lone row stays ordinary,
        // so its argmax is a real one).
        let edge_rows = batch >= 3;
        let step_input = |rng: &mut _| {
            let mut values = random_rows(rng, batch, vocab, vocab);
            if edge_rows {
                values[(batch - 1) * vocab..].fill(f32::NAN);
                values[below(rng, vocab as u64) as usize] = f32::INFINITY;
            }
            (values, random_masks(rng, batch, vocab))
        };
        let batch_rows = |masks: &[Option<Vec<i32>>], active: usize| -> Vec<(u64, Option<Vec<i32>>)> {
            (0..active)
                .map(|r| (r as u64, if edge_rows && r == batch / 2 { Some(nothing_allowed.clone()) } else { masks[r].clone() }))
                .collect()
        };
        let mut check = |g: &[sampler_host::backend::RowOutput], c: &[sampler_host::backend::RowOutput], label: &str| {
            assert_eq!(g.len(), c.len(), "{label}: rows");
            for (i, (g, c)) in g.iter().zip(c).enumerate() {
                if let Some(diff) = compare(g, c) {
                    mismatches += 1;
                    eprintln!("V={vocab} B={batch} {dtype:?} {label} row {i}: {diff}");
                }
            }
        };
        // Eager greedy steps.
        for step in 0..sized(3, 2) {
            let (values, masks) = step_input(&mut rng);
            let logits = TypedRows::new(dtype, values);
            let owned = batch_rows(&masks, batch);
            let b = Batch { logits: logits.host(batch, vocab, vocab), rows: as_rows(&owned) };
            let (g, c) = (gpu.sample(&b).expect("gpu sample"), cpu.sample(&b).expect("cpu sample"));
            check(&g, &c, &format!("eager step {step}"));
        }
        // Replays of one graph: greedy, mixed (one row random, top-k 50), greedy with half the
        // rows active, greedy.
        let stream = gpu.device().stream().clone();
        let mut dev_f32 = stream.alloc_zeros::<f32>(if dtype == LogitsDtype::F32 { batch * vocab } else { 1 }).expect("alloc");
        let mut dev_u16 = stream.alloc_zeros::<u16>(if dtype == LogitsDtype::F32 { 1 } else { batch * vocab }).expect("alloc");
        let all_rows: Vec<BatchRow> = (0..batch as u64).map(BatchRow::new).collect();
        gpu.upload_step(&all_rows).expect("upload");
        let view = match dtype {
            LogitsDtype::F32 => DeviceLogits::f32(&dev_f32, batch, vocab),
            _ => DeviceLogits::half_bits(&dev_u16, dtype, batch, vocab),
        };
        // SAFETY: both buffers outlive every replay below.
        let graph = unsafe { gpu.capture_step(&view, batch) }.expect("capture");
        for (replay, &(mixed, active)) in [(false, batch), (true, batch), (false, batch.div_ceil(2)), (false, batch)].iter().enumerate() {
            let random_row = below(&mut rng, batch as u64);
            for id in 0..batch as u64 {
                let params = if mixed && id == random_row {
                    SamplingParams::random(0.8, rng.next_u64()).with_top_k(50)
                } else {
                    greedy_params(&mut rng, vocab)
                };
                gpu.update_request(id, params.clone()).expect("update");
                cpu.update_request(id, params).expect("update");
            }
            let (values, masks) = step_input(&mut rng);
            let logits = TypedRows::new(dtype, values);
            match dtype {
                LogitsDtype::F32 => stream.memcpy_htod(&logits.f32s, &mut dev_f32).expect("copy"),
                LogitsDtype::Bf16 | LogitsDtype::F16 => stream.memcpy_htod(&logits.bits(), &mut dev_u16).expect("copy"),
            }
            let owned = batch_rows(&masks, active);
            gpu.upload_step(&as_rows(&owned)).expect("upload");
            gpu.replay(&graph).expect("replay");
            // The random row has top-k: no row needs the row mass.
            let expect_kernels = if mixed { StepKernels::NoMassScan } else { StepKernels::Greedy };
            assert_eq!(graph.last_replay_kernels(), Some(expect_kernels), "replay {replay}: the graph replayed");
            let g = gpu.read_outputs().expect("outputs");
            let b = Batch { logits: logits.host(active, vocab, vocab), rows: as_rows(&owned) };
            let c = cpu.sample(&b).expect("cpu sample");
            check(&g, &c, &format!("replay {replay} (mixed {mixed}, {active} active)"));
        }
    }
    assert_eq!(mismatches, 0, "greedy steps differ from the reference");
}

/// Whether the tile lists alone leave a top-`k` row short: some tile's list stops at its 32nd
/// key (its tile holds more tokens) above the row's `k`-th key, so fewer than `k` keys lie at
/// or above the largest such stop (stage 2's provably complete prefix). Raw values order the
/// keys as the processed ones do for a row without penalties, bias or mask (positive T), up to
/// ties that tempering makes.
fn tile_lists_fall_short(row: &[f32], k: usize) -> bool {
    const TILE: usize = 4096;
    const LIST: usize = 32;
    let key = |i: usize| (row[i], std::cmp::Reverse(i));
    let above = |a: (f32, std::cmp::Reverse<usize>), b: (f32, std::cmp::Reverse<usize>)| a.0 > b.0 || (a.0 == b.0 && a.1 > b.1);
    let mut stop: Option<usize> = None;
    for start in (0..row.len()).step_by(TILE) {
        let mut ids: Vec<usize> = (start..(start + TILE).min(row.len())).collect();
        if ids.len() <= LIST {
            continue;
        }
        ids.sort_by(|&a, &b| if above(key(a), key(b)) { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater });
        let last = ids[LIST - 1];
        if stop.is_none_or(|s| above(key(last), key(s))) {
            stop = Some(last);
        }
    }
    stop.is_some_and(|s| (0..row.len()).filter(|&i| i == s || above(key(i), key(s))).count() < k)
}

/// N(0, 2), then 33 to `k` + 32 boosted tokens (+8..+14) in one tile, up to 32 in each of up to
/// two more, and up to 20 elsewhere: a row whose best tokens crowd into few tiles.
fn crowded_row(rng: &mut impl Rng, vocab: usize, k: usize) -> Vec<f32> {
    let tiles = vocab.div_ceil(4096) as u64;
    let mut row: Vec<f32> = (0..vocab).map(|_| normal(rng, 2.0)).collect();
    for crowded in 0..1 + below(rng, 3) {
        let start = below(rng, tiles) as usize * 4096;
        let width = (vocab - start).min(4096) as u64;
        let boosted = if crowded == 0 { 33 + below(rng, k as u64) } else { below(rng, 33) };
        for _ in 0..boosted {
            row[start + below(rng, width) as usize] += 8.0 + 6.0 * unit(rng) as f32;
        }
    }
    for _ in 0..below(rng, 21) {
        row[below(rng, vocab as u64) as usize] += 8.0 + 6.0 * unit(rng) as f32;
    }
    row
}

#[test]
fn gpu_crowded_top_k_rows_are_decided_in_stage_two() {
    const TEST: &str = "gpu_crowded_top_k_rows_are_decided_in_stage_two";
    let mut rng = fresh_rng(TEST);
    // Rows whose best tokens crowd into few tiles, as a vocabulary ordered by frequency
    // puts likely tokens at low ids: more than a tile list's 32 of the row's top k lie in one
    // tile, so the lists' merged prefix is shorter than k. Stage 2 re-reads the crowded tiles
    // and decides every such row with top-k up to 128 itself: a quiet step lists none. Rows
    // with penalties, a logit bias or a grammar bitmask too.
    let cases = [
        (151_936usize, 3usize, LogitsDtype::F32),
        (50_257, sized(257, 9), LogitsDtype::F32),
        (128_256, sized(64, 5), LogitsDtype::Bf16),
    ];
    let (mut mismatches, mut short_rows, mut judged_rows) = (0usize, 0usize, 0usize);
    for &(vocab, batch, dtype) in &cases {
        let Some(device) = gpu_or_skip(TEST) else { return };
        let mut gpu = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
        let mut cpu = CpuReference::new(vocab, batch).expect("cpu reference");
        for step in 0..sized(3, 1) {
            let mut values = Vec::with_capacity(batch * vocab);
            let mut judged = Vec::new();
            let mut masks: Vec<Option<Vec<i32>>> = Vec::new();
            for id in 0..batch as u64 {
                let k = 33 + below(&mut rng, 96) as u32;
                let t = 0.5 + unit(&mut rng) as f32;
                let mut params = SamplingParams::random(t, rng.next_u64()).with_top_k(k);
                match below(&mut rng, 4) {
                    0 => params = params.with_top_p(0.5 + 0.49 * unit(&mut rng) as f32),
                    1 => params = params.with_min_p(0.001 + 0.05 * unit(&mut rng) as f32),
                    2 => params = params.with_logprobs(below(&mut rng, 6) as u32),
                    _ => {}
                }
                // Half the rows get one prologue feature: the re-read applies it as stage 1 did.
                let feature = below(&mut rng, 6);
                if feature == 0 {
                    params = params.with_penalties(1.1, 0.2, 0.1);
                } else if feature == 1 {
                    let bias = (0..1 + below(&mut rng, 40)).map(|_| (below(&mut rng, vocab as u64) as u32, (unit(&mut rng) as f32 - 0.5) * 20.0));
                    let mut bias: Vec<(u32, f32)> = bias.collect();
                    bias.sort_by_key(|b| b.0);
                    bias.dedup_by_key(|b| b.0);
                    params = params.with_logit_bias(bias);
                }
                masks.push((feature == 2).then(|| bitmask_row(&mut rng, vocab, 0.8)));
                let prompt = if feature == 0 { prompt(&mut rng, vocab) } else { Vec::new() };
                if step == 0 {
                    gpu.add_request(id, params.clone(), &prompt).expect("gpu add");
                    cpu.add_request(id, params, &prompt).expect("cpu add");
                } else {
                    gpu.update_request(id, params.clone()).expect("update");
                    cpu.update_request(id, params).expect("update");
                }
                let row = crowded_row(&mut rng, vocab, k as usize);
                if feature > 2 {
                    judged.push((values.len(), k as usize));
                }
                values.extend(row);
            }
            let logits = TypedRows::new(dtype, values);
            for &(at, k) in &judged {
                let row: Vec<f32> = match dtype {
                    LogitsDtype::F32 => logits.f32s[at..at + vocab].to_vec(),
                    _ => logits.bf16s[at..at + vocab].iter().map(|v| v.to_f32()).collect(),
                };
                judged_rows += 1;
                short_rows += tile_lists_fall_short(&row, k) as usize;
            }
            let b = Batch { logits: logits.host(batch, vocab, vocab), rows: rows_with_masks(&masks) };
            let (g, c) = (gpu.sample(&b).expect("gpu sample"), cpu.sample(&b).expect("cpu sample"));
            assert_eq!(gpu.last_step_exact_pass(), Some(StepExactPass::InStageTwo), "V={vocab} step {step}: a quiet step");
            assert_eq!(gpu.exact_rows_last_step().expect("flags"), 0, "V={vocab} B={batch} step {step}: rows left undecided");
            for (i, (g, c)) in g.iter().zip(&c).enumerate() {
                if let Some(diff) = compare(g, c) {
                    mismatches += 1;
                    eprintln!("V={vocab} B={batch} {dtype:?} step {step} row {i}: {diff}");
                }
            }
        }
    }
    assert_eq!(mismatches, 0, "crowded rows differ from the reference");
    // The rows must be crowded for the test to mean anything: most must be short of k in the
    // lists (at the sanitizer's few rows, at least one).
    let enough = if judged_rows >= 40 { 2 * short_rows > judged_rows } else { short_rows > 0 };
    assert!(enough, "only {short_rows} of {judged_rows} rows were short of their top-k in the tile lists");
}

/// Stage 2 spreads its sorted merge over the block as thinly as runs of a power of two allow
/// (`block::run_per_thread`: one key a thread up to 512, two up to 1024, four up to 2048) for
/// the prefix masses, the decisions and the re-keyed walk. Peaked rows with top-k on both sides
/// of those bounds, some with top-p or top log-probabilities too, at vocabularies whose tile
/// lists hold 1216 and 2048 keys: every token must be the reference's, and stage 2 must have
/// decided rows with top-k over 512 and over 1024 itself (its merge holds at least `k` keys
/// when it decides a top-k row, so such rows took runs of two and four; most rows take one).
#[test]
fn gpu_merged_lists_of_every_spread_equal_reference() {
    const TEST: &str = "gpu_merged_lists_of_every_spread_equal_reference";
    let mut rng = fresh_rng(TEST);
    const TOP_K: [u32; 10] = [40, 300, 511, 512, 513, 600, 1000, 1024, 1025, 1100];
    let cases = [(262_144usize, sized(20usize, 10usize), LogitsDtype::F32), (151_936, sized(10, 5), LogitsDtype::Bf16)];
    let (mut mismatches, mut decided_two, mut decided_four) = (0usize, 0usize, 0usize);
    for &(vocab, batch, dtype) in &cases {
        let Some(device) = gpu_or_skip(TEST) else { return };
        let mut gpu = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
        let mut cpu = CpuReference::new(vocab, batch).expect("cpu reference");
        for step in 0..sized(3, 2) {
            let mut ks = Vec::with_capacity(batch);
            for id in 0..batch as u64 {
                let k = TOP_K[(id as usize + step) % TOP_K.len()];
                let t = 0.5 + unit(&mut rng) as f32;
                let mut params = SamplingParams::random(t, rng.next_u64()).with_top_k(k);
                match below(&mut rng, 3) {
                    0 => params = params.with_top_p(0.5 + 0.49 * unit(&mut rng) as f32),
                    1 => params = params.with_logprobs(below(&mut rng, 6) as u32),
                    _ => {}
                }
                if step == 0 {
                    gpu.add_request(id, params.clone(), &[]).expect("gpu add");
                    cpu.add_request(id, params, &[]).expect("cpu add");
                } else {
                    gpu.update_request(id, params.clone()).expect("update");
                    cpu.update_request(id, params).expect("update");
                }
                ks.push(k);
            }
            let values: Vec<f32> = (0..batch).flat_map(|_| logit_row(&mut rng, RowShape::Peaked, vocab)).collect();
            let logits = TypedRows::new(dtype, values);
            let rows: Vec<BatchRow> = (0..batch as u64).map(BatchRow::new).collect();
            let b = Batch { logits: logits.host(batch, vocab, vocab), rows };
            let (g, c) = (gpu.sample(&b).expect("gpu sample"), cpu.sample(&b).expect("cpu sample"));
            // A busy step: in a quiet one, stage 2 finishes an undecided row itself with the
            // single-block pass, and its flag would not tell that row from a decided one.
            assert_ne!(gpu.last_step_exact_pass(), Some(StepExactPass::InStageTwo), "V={vocab} step {step}: a quiet step");
            let listed = gpu.rows_left_to_exact_pass_last_step().expect("flags");
            for (i, (g, c)) in g.iter().zip(&c).enumerate() {
                if let Some(diff) = compare(g, c) {
                    mismatches += 1;
                    eprintln!("V={vocab} {dtype:?} step {step} row {i} (top-k {}): {diff}", ks[i]);
                }
                if !listed[i] {
                    decided_two += (ks[i] > 512) as usize;
                    decided_four += (ks[i] > 1024) as usize;
                }
            }
        }
    }
    eprintln!("stage 2 decided {decided_two} rows of top-k over 512, {decided_four} over 1024");
    assert_eq!(mismatches, 0, "rows differ from the reference");
    assert!(decided_four > 0, "no row of top-k over 1024 was decided in stage 2");
    assert!(decided_two > decided_four, "no row of top-k in 513..=1024 was decided in stage 2");
}

/// The split finish decides on arrays of two keys a thread up to 1024 gathered keys and of
/// eight above (`exact::decide_sorted`). Flat top-p rows gather a few hundred keys; rows whose
/// top-p boundary falls among 1500 to 3500 tied tokens (bf16 rows tie like this) gather them all;
/// min-p and top-k rows bin whole. Every token must be the reference's, and the split pass must
/// have finished rows on both sides of 1024 gathered keys.
#[test]
fn gpu_split_finish_of_few_and_many_gathered_keys_equal_reference() {
    const TEST: &str = "gpu_split_finish_of_few_and_many_gathered_keys_equal_reference";
    let mut rng = fresh_rng(TEST);
    let cases = [(151_936usize, sized(9usize, 3usize), LogitsDtype::F32), (50_257, sized(7, 3), LogitsDtype::Bf16)];
    let (mut mismatches, mut few, mut many) = (0usize, 0usize, 0usize);
    for &(vocab, batch, dtype) in &cases {
        let Some(device) = gpu_or_skip(TEST) else { return };
        let mut gpu = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
        let mut cpu = CpuReference::new(vocab, batch).expect("cpu reference");
        for id in 0..batch as u64 {
            let seed = rng.next_u64();
            let params = match id % 3 {
                0 => SamplingParams::random(1.0, seed).with_top_p(0.95),
                1 => SamplingParams::random(1.0, seed).with_top_p(0.3 + 0.5 * unit(&mut rng) as f32),
                _ if id % 2 == 0 => SamplingParams::random(0.8, seed).with_top_p(0.9).with_min_p(0.02),
                _ => SamplingParams::random(0.8, seed).with_top_k(2000).with_top_p(0.9),
            };
            gpu.add_request(id, params.clone(), &[]).expect("gpu add");
            cpu.add_request(id, params, &[]).expect("cpu add");
        }
        for step in 0..2 {
            let mut values = Vec::with_capacity(batch * vocab);
            for id in 0..batch {
                if id % 3 == 1 {
                    // Tied tokens at one level, the rest at least 8 nats below it: top-p's
                    // boundary falls among the tied ones, which all share one sub-bin.
                    let level = normal(&mut rng, 1.0);
                    let tied = 1500 + below(&mut rng, 2000) as usize;
                    let mut row: Vec<f32> = (0..vocab).map(|_| level - 8.0 - normal(&mut rng, 1.0).abs()).collect();
                    for _ in 0..tied {
                        let at = below(&mut rng, vocab as u64) as usize;
                        row[at] = level;
                    }
                    values.extend(row);
                } else {
                    values.extend(logit_row(&mut rng, RowShape::Flat, vocab));
                }
            }
            let logits = TypedRows::new(dtype, values);
            let rows: Vec<BatchRow> = (0..batch as u64).map(BatchRow::new).collect();
            let b = Batch { logits: logits.host(batch, vocab, vocab), rows };
            let (g, c) = (gpu.sample(&b).expect("gpu sample"), cpu.sample(&b).expect("cpu sample"));
            assert_ne!(gpu.last_step_exact_pass(), Some(StepExactPass::InStageTwo), "V={vocab} step {step}: a quiet step");
            for (i, (g, c)) in g.iter().zip(&c).enumerate() {
                if let Some(diff) = compare(g, c) {
                    mismatches += 1;
                    eprintln!("V={vocab} {dtype:?} step {step} row {i} (kind {}): {diff}", i % 3);
                }
            }
            let gathered = gpu.exact_gathered_keys_last_step().expect("jobs");
            eprintln!("V={vocab} {dtype:?} step {step}: split rows gathered {gathered:?}");
            few += gathered.iter().filter(|&&n| n <= 1024).count();
            many += gathered.iter().filter(|&&n| n > 1024).count();
        }
    }
    assert_eq!(mismatches, 0, "rows differ from the reference");
    assert!(few > 0, "no split row gathered up to 1024 keys");
    assert!(many > 0, "no split row gathered more than 1024 keys");
}

/// A top-p row whose request's last step was wide skips its candidate lists and goes to the
/// exact pass (`GpuSamplerConfig::skip_lists_after_wide_step`): the same tokens as the CPU
/// reference and as a sampler that builds every list, whether the rows stay flat or turn
/// peaked. Rows are flat, then peaked twice, then flat twice, each step with fresh bitmasks.
/// Skipping can only add rows to the exact pass; the first peaked step is the one a flat step
/// mispredicts, so it lists more rows than the sampler without the skip; the second finds the
/// flags cleared by the first and lists about as many. Top-k and min-p rows never skip.
#[test]
fn gpu_lists_skipped_after_a_wide_step_equal_reference() {
    const TEST: &str = "gpu_lists_skipped_after_a_wide_step_equal_reference";
    let mut rng = fresh_rng(TEST);
    let cases = [(128_256usize, 64usize, LogitsDtype::F32), (50_257, 3, LogitsDtype::Bf16), (151_936, sized(257, 40), LogitsDtype::F16)];
    let shapes = [RowShape::Flat, RowShape::Peaked, RowShape::Peaked, RowShape::Flat, RowShape::Flat];
    let (mut mismatches, mut differ) = (0usize, 0usize);
    let mut extra = [0usize; 5];
    for &(vocab, batch, dtype) in &cases {
        let Some(device) = gpu_or_skip(TEST) else { return };
        let mut skip = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
        let Some(device) = gpu_or_skip(TEST) else { return };
        let config = GpuSamplerConfig { skip_lists_after_wide_step: false, ..GpuSamplerConfig::new(vocab, batch) };
        let mut build = GpuSampler::new(device, config).expect("gpu sampler");
        let mut cpu = CpuReference::new(vocab, batch).expect("cpu reference");
        for id in 0..batch as u64 {
            let t = 0.7 + unit(&mut rng) as f32 * 0.5;
            let params = SamplingParams::random(t, rng.next_u64()).with_top_p(0.8 + 0.15 * unit(&mut rng) as f32);
            let params = match below(&mut rng, 8) {
                0 => params.with_top_k(50),
                1 => params.with_min_p(0.05),
                2 => params.with_penalties(1.1, 0.2, 0.1),
                3 => params.with_logit_bias(vec![(5, 1.5), (vocab as u32 / 2, -2.0)]),
                _ => params,
            };
            let prompt = prompt(&mut rng, vocab);
            for backend in [&mut skip as &mut dyn Backend, &mut build, &mut cpu] {
                backend.add_request(id, params.clone(), &prompt).expect("add");
            }
        }
        for (step, &shape) in shapes.iter().enumerate() {
            let values: Vec<f32> = (0..batch).flat_map(|_| logit_row(&mut rng, shape, vocab)).collect();
            let logits = TypedRows::new(dtype, values);
            let masks = random_masks(&mut rng, batch, vocab);
            let b = Batch { logits: logits.host(batch, vocab, vocab), rows: rows_with_masks(&masks) };
            let s = skip.sample(&b).expect("gpu sample");
            let l = build.sample(&b).expect("gpu sample");
            let c = cpu.sample(&b).expect("cpu sample");
            for (i, ((s, l), c)) in s.iter().zip(&l).zip(&c).enumerate() {
                if let Some(diff) = compare(s, c) {
                    mismatches += 1;
                    eprintln!("V={vocab} B={batch} {dtype:?} step {step} row {i}: {diff} (lists built every step: {})", l.token);
                }
                differ += (s.token != l.token || s.status != l.status) as usize;
            }
            let (split, single) = skip.exact_paths_last_step().expect("flags");
            let (split_b, single_b) = build.exact_paths_last_step().expect("flags");
            let (listed, listed_b) = (split + single, split_b + single_b);
            eprintln!("V={vocab} B={batch} {dtype:?} step {step} {shape:?}: {listed} rows listed with the skip, {listed_b} without");
            assert!(listed >= listed_b, "V={vocab} B={batch} step {step}: {listed} < {listed_b}");
            if step == 0 {
                assert_eq!(listed, listed_b, "V={vocab} B={batch}: the first step has no flags to act on");
            }
            extra[step] += listed - listed_b;
        }
    }
    assert_eq!(mismatches, 0);
    assert_eq!(differ, 0, "the two GPU samplers disagree");
    // Every flat top-p row is wide; most of them decide from their lists once peaked. A flag
    // set by a flat step is cleared by the step after (peaked rows are not wide), so the second
    // peaked step lists far fewer extra rows (a few flat rows, with a fresh mask of a few tokens,
    // can be extra in the last step).
    eprintln!("rows listed beyond the sampler without the skip, per step: {extra:?}");
    assert!(extra[1] > 0, "no row skipped its lists after a wide step");
    assert!(extra[2] * 4 < extra[1], "the flags were not cleared after a narrow step: {extra:?}");
}
