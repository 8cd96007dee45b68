//! `sonic-soak`: a long run of the GPU sampler the way a serving engine drives it (`run.sh soak`).
//!
//! ```text
//! sonic-soak [--seconds N] [--replays N] [--check-every K] [--check-rows R] [--verify-every M] [--exact-pass settings|one|four] [--quick] [--out DIR]
//! ```
//!
//! One `GpuSampler` (capacity 256 rows, V = 151936; its exact pass launched as the settings
//! call for per step, or always in one or in four with `--exact-pass one|four`) and one CUDA
//! graph captured for 256 rows.
//! Every replay: some requests are dropped, added, reset or given new settings and seeds; a new
//! batch of 1..=256 rows is drawn from the live requests in a random order (so rows move between
//! requests and slots are reused); new logits are generated on the GPU (`fill_logits`: peaked,
//! crowded into the first tile, or flat); the
//! settings are uploaded and the graph replayed for the active rows. Every row's outputs are
//! checked for the cheap invariants (status 0 or 1, token in range and allowed by its bitmask,
//! logprobs present as asked), and folded into a host model of every request's state.
//!
//! An engine's device-side calls are mixed in. Half the steps that mask rows take the masks
//! from a pitched device buffer (`upload_step_with_bitmask`; the rows that ask for none are all
//! zeros there, which allow no token, so a row that read one would lose its token). Every
//! third step's tokens and statuses are also copied out of `device_outputs` on the device and
//! compared with the read ones. Half the verification calls that mask requests take their
//! masks from the device too (`upload_verify_with_bitmask`). Steps and verification calls read
//! their outputs with `read_outputs_into` and `read_verify_outputs_into`, each into one vector
//! kept for the whole run, so every read reuses entries a batch of another size left.
//!
//! Every K replays the step is checked against the CPU reference: R rows of the logits are copied
//! back and `reference::sample_row` is run with the model's state from before the step; their
//! device step counters are read back too. Every other check runs that step eagerly
//! (`enqueue_step`) instead of replaying the graph, so both paths are compared with the reference
//! over the same stream of state.
//!
//! Every M-th replay (none with M = 0) is a speculative-verification call instead
//! (`GpuVerifier` over the same sampler and requests): up to 16 live requests without top
//! log-probabilities, 0 to 7 drafts each (a row's argmax, a draw from its draft probabilities,
//! or a random token, so chains stop anywhere), draft-probability rows for some, bitmasks for
//! some, target rows generated on the GPU; eager or a graph replay, alternating. Every output is
//! checked for its invariants (status, accepted drafts returned as drafted, tokens in range and
//! allowed) and folded into the model (emitted tokens counted, one step); as often as the steps
//! are checked, one of the call's requests is verified again by `verify::verify_request` from the
//! model's state before the call, and its device step counter is compared.
//!
//! Device memory in use (`mem_get_info`) and host RSS (`/proc/self/statm`) are sampled after a
//! warm-up and at the end; growth beyond a small slack fails the run. Results go to
//! `--out DIR/sonic-soak.json`; a summary table is printed. Any mismatch, broken invariant, CUDA
//! error or leak exits non-zero.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use cudarc::driver::CudaSlice;
use rand_xoshiro::rand_core::Rng;
use sampler_host::backend::{Backend, BatchRow, RowOutput};
use sampler_host::cuda::GpuDevice;
use sampler_host::gpu::{DeviceBitmask, DeviceLogits, ExactPassLaunch, GpuSampler, GpuSamplerConfig};
use sampler_host::gpu_verify::{DeviceVerifyRequest, DraftProbs, GpuVerifier, VerifyGraph};
use sampler_host::logits::HostLogits;
use sampler_host::reference::sample_row;
use sampler_host::state::{RequestState, RequestTable};
use sampler_host::verify::{verify_request, VerifyOutput, VerifyRequest};
use sampler_kernels::abi::{DTYPE_F32, FILL_CROWDED, FILL_FLAT, FILL_PEAKED};
use sampler_kernels::logit::bitmask_allows;
use sampler_kernels::status::{NO_TOKEN, STATUS_NO_VALID_TOKEN, STATUS_OK};
use sampler_tests::{
    compare_outputs as compare, compare_verify_outputs, below, bitmask_row, draft_q_row, first_argmax, fresh_rng, mixed_params, pitched_mask_words, prompt,
    sample_weights,
};

type SoakResult<T> = Result<T, Box<dyn std::error::Error>>;

const VOCAB: usize = 151_936;
const CAPACITY: usize = 256;
/// Live requests are kept between these bounds (the sampler holds 4 × 256 slots).
const MIN_LIVE: usize = CAPACITY + 16;
const MAX_LIVE: usize = 640;
/// Longest a request lives, in replays (bounds the host state of each request).
const MAX_LIFETIME: u64 = 1500;
/// Replays before the memory baseline is taken: lazy driver and allocator growth has settled
/// and the request population has turned over once (≥ `MAX_LIFETIME`).
const WARMUP_REPLAYS: u64 = 2000;
/// A first baseline, used when the run ends before `WARMUP_REPLAYS` (first graph launches and
/// the first checks are behind it).
const EARLY_BASELINE_REPLAYS: u64 = 20;
/// Growth allowed between the baseline and the end.
const DEVICE_SLACK_BYTES: i64 = 8 << 20;
const RSS_SLACK_BYTES: i64 = 48 << 20;
/// Verification calls: the verifier's draft capacity (its minimum), and at most this many
/// requests of at most `VERIFY_DRAFTS_MAX` drafts, so a call's rows fit the logits buffer.
const VERIFY_CAPACITY_DRAFTS: usize = 8;
const VERIFY_REQUESTS_MAX: usize = 16;
const VERIFY_DRAFTS_MAX: u64 = 7;
/// Draft-probability rows a call may use (the q buffer's rows).
const VERIFY_Q_ROWS: usize = 64;
const _: () = assert!(VERIFY_REQUESTS_MAX * (VERIFY_DRAFTS_MAX as usize + 1) <= CAPACITY);
/// Details printed for at most this many failures; the run stops after `MAX_FAILURES`.
const PRINT_FAILURES: usize = 20;
/// Words between device bitmask rows: a row's words and some padding, so the upload takes the
/// pitched copy.
const DEVICE_MASK_STRIDE: usize = VOCAB.div_ceil(32) + 5;
const MAX_FAILURES: usize = 100;

struct Options {
    seconds: u64,
    replays: u64,
    check_every: u64,
    check_rows: usize,
    verify_every: u64,
    exact_pass: ExactPassLaunch,
    out: PathBuf,
}

fn parse_options() -> SoakResult<Options> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| -> SoakResult<Option<u64>> {
        match args.iter().position(|a| a == flag) {
            None => Ok(None),
            Some(i) => match args.get(i + 1).and_then(|v| v.parse::<u64>().ok()).filter(|&n| n > 0) {
                Some(n) => Ok(Some(n)),
                None => Err(format!("{flag} needs a positive whole number").into()),
            },
        }
    };
    let known = ["--seconds", "--replays", "--check-every", "--check-rows", "--verify-every", "--exact-pass", "--out", "--quick"];
    let mut i = 0;
    while i < args.len() {
        if !known.contains(&args[i].as_str()) {
            return Err(format!(
                "unknown argument {:?}\nusage: sonic-soak [--seconds N] [--replays N] [--check-every K] [--check-rows R] [--verify-every M] [--exact-pass settings|one|four] [--quick] [--out DIR]",
                args[i]
            )
            .into());
        }
        i += if args[i] == "--quick" { 1 } else { 2 };
    }
    let quick = args.iter().any(|a| a == "--quick");
    let out = match args.iter().position(|a| a == "--out") {
        None => PathBuf::from("soak-out"),
        Some(i) => args.get(i + 1).map(PathBuf::from).ok_or("--out needs a directory")?,
    };
    let exact_pass = match args.iter().position(|a| a == "--exact-pass").map(|i| args.get(i + 1).map(String::as_str)) {
        None | Some(Some("settings")) => ExactPassLaunch::BySettings,
        Some(Some("four")) => ExactPassLaunch::FourLaunches,
        Some(Some("one")) => ExactPassLaunch::OneLaunch,
        Some(other) => return Err(format!("--exact-pass takes settings, one or four, not {other:?}").into()),
    };
    Ok(Options {
        seconds: value("--seconds")?.unwrap_or(if quick { 20 } else { 600 }),
        replays: value("--replays")?.unwrap_or(1_000_000),
        check_every: value("--check-every")?.unwrap_or(if quick { 50 } else { 100 }),
        check_rows: value("--check-rows")?.unwrap_or(4) as usize,
        verify_every: value("--verify-every")?.unwrap_or(10),
        exact_pass,
        out,
    })
}

/// Resident set size of this process, in bytes.
fn host_rss() -> SoakResult<i64> {
    let statm = std::fs::read_to_string("/proc/self/statm")?;
    let pages: i64 = statm.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or("unreadable /proc/self/statm")?;
    // 4 KiB pages on the x86-64 and arm64 GPU hosts this runs on.
    Ok(pages * 4096)
}

/// Device memory in use (total - free), in bytes.
fn device_used(gpu: &GpuDevice) -> SoakResult<i64> {
    let (free, total) = gpu.context().mem_get_info()?;
    Ok(total as i64 - free as i64)
}

#[derive(Default)]
struct Counters {
    replays: u64,
    eager_steps: u64,
    checks: u64,
    rows_sampled: u64,
    rows_checked: u64,
    status_ok: u64,
    status_no_valid: u64,
    masked_rows: u64,
    device_mask_steps: u64,
    device_masked_rows: u64,
    device_output_reads: u64,
    verify_device_mask_calls: u64,
    adds: u64,
    drops: u64,
    resets: u64,
    updates: u64,
    verify_calls: u64,
    verify_requests: u64,
    verify_rows: u64,
    drafts_accepted: u64,
    verify_no_valid: u64,
    verify_checked: u64,
    batch_sizes: HashMap<usize, u64>,
    failures: Vec<String>,
    failure_count: usize,
}

impl Counters {
    fn fail(&mut self, what: String) {
        self.failure_count += 1;
        if self.failures.len() < PRINT_FAILURES {
            eprintln!("FAIL: {what}");
            self.failures.push(what);
        }
    }
}


/// The invariants every output row must satisfy, whatever the logits.
fn check_invariants(out: &RowOutput, state: &RequestState, mask: Option<&[i32]>) -> Option<String> {
    match out.status {
        STATUS_OK => {
            if out.token < 0 || out.token as usize >= VOCAB {
                return Some(format!("status 0 with token {}", out.token));
            }
            let t = out.token as u32;
            if let Some(m) = mask {
                if !bitmask_allows(m[(t >> 5) as usize], t) {
                    return Some(format!("token {t} is masked out"));
                }
            }
            if state.params.logprobs != out.logprob.is_some() {
                return Some(format!("logprob {:?} with logprobs={}", out.logprob, state.params.logprobs));
            }
            if out.top_logprobs.len() > state.params.top_logprobs as usize {
                return Some(format!("{} top logprobs for {} asked", out.top_logprobs.len(), state.params.top_logprobs));
            }
            None
        }
        STATUS_NO_VALID_TOKEN if out.token == NO_TOKEN && out.logprob.is_none() && out.top_logprobs.is_empty() => None,
        _ => Some(format!("status {} token {} (settings are valid; only 0 or 1 may appear)", out.status, out.token)),
    }
}

struct Soak {
    /// The sampler, wrapped for verification calls (`sampler_mut` for steps).
    gpu: GpuVerifier,
    model: RequestTable,
    /// Live request ids and the replay after which each is dropped.
    live: Vec<(u64, u64)>,
    next_id: u64,
    counters: Counters,
}

impl Soak {
    fn add(&mut self, rng: &mut impl Rng, replay: u64) -> SoakResult<()> {
        let id = self.next_id;
        self.next_id += 1;
        let params = mixed_params(rng, VOCAB);
        let prompt = prompt(rng, VOCAB);
        self.gpu.add_request(id, params.clone(), &prompt)?;
        self.model.add(id, params, &prompt)?;
        self.live.push((id, replay + 50 + below(rng, MAX_LIFETIME - 50)));
        self.counters.adds += 1;
        Ok(())
    }

    fn drop_at(&mut self, index: usize) -> SoakResult<()> {
        let (id, _) = self.live.swap_remove(index);
        self.gpu.drop_request(id)?;
        self.model.drop_request(id)?;
        self.counters.drops += 1;
        Ok(())
    }

    /// Request churn before a replay: expiries, random drops and adds, resets, new settings.
    fn churn(&mut self, rng: &mut impl Rng, replay: u64) -> SoakResult<()> {
        let mut i = 0;
        while i < self.live.len() {
            if self.live[i].1 <= replay && self.live.len() > MIN_LIVE {
                self.drop_at(i)?;
            } else {
                i += 1;
            }
        }
        for _ in 0..below(rng, 4) {
            if self.live.len() > MIN_LIVE {
                let at = below(rng, self.live.len() as u64) as usize;
                self.drop_at(at)?;
            }
        }
        let adds = below(rng, 4) + (self.live.len() < MIN_LIVE) as u64 * (MIN_LIVE - self.live.len()) as u64;
        for _ in 0..adds {
            if self.live.len() < MAX_LIVE {
                self.add(rng, replay)?;
            }
        }
        for _ in 0..below(rng, 5) {
            let id = self.live[below(rng, self.live.len() as u64) as usize].0;
            let params = mixed_params(rng, VOCAB);
            self.gpu.update_request(id, params.clone())?;
            self.model.update_params(id, params)?;
            self.counters.updates += 1;
        }
        if below(rng, 8) == 0 {
            let id = self.live[below(rng, self.live.len() as u64) as usize].0;
            let prompt = prompt(rng, VOCAB);
            self.gpu.reset_request(id, &prompt)?;
            self.model.reset(id, &prompt)?;
            self.counters.resets += 1;
        }
        Ok(())
    }
}

fn batch_size(rng: &mut impl Rng) -> usize {
    match below(rng, 20) {
        0..=9 => 1 + below(rng, CAPACITY as u64) as usize,
        10..=13 => CAPACITY,
        14..=16 => 1 + below(rng, 8) as usize,
        _ => CAPACITY - 56 + below(rng, 57) as usize,
    }
}

struct Memory {
    device: i64,
    rss: i64,
}

fn memory(gpu: &GpuDevice) -> SoakResult<Memory> {
    Ok(Memory { device: device_used(gpu)?, rss: host_rss()? })
}

fn mib(bytes: i64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

fn run(options: &Options, report: &mut Report) -> SoakResult<()> {
    let device = GpuDevice::open(0)?;
    report.device = device.name()?;
    let mut rng = fresh_rng("sonic-soak");
    let stream = device.stream().clone();
    let mut logits: CudaSlice<f32> = stream.alloc_zeros::<f32>(CAPACITY * VOCAB)?;
    let sampler = GpuSampler::new(device, GpuSamplerConfig { exact_pass: options.exact_pass, ..GpuSamplerConfig::new(VOCAB, CAPACITY) })?;
    let gpu = GpuVerifier::new(sampler, VERIFY_CAPACITY_DRAFTS)?;
    let mut soak = Soak { gpu, model: RequestTable::new(VOCAB), live: Vec::new(), next_id: 0, counters: Counters::default() };
    // The counters reach the report whether the run ends normally or on an error.
    let outcome = drive(options, report, &mut soak, &mut rng, &mut logits);
    report.live_at_end = soak.live.len();
    report.counters = std::mem::take(&mut soak.counters);
    outcome
}

/// The soak itself, after the sampler exists.
fn drive(
    options: &Options,
    report: &mut Report,
    soak: &mut Soak,
    rng: &mut rand_xoshiro::Xoshiro256PlusPlus,
    logits: &mut CudaSlice<f32>,
) -> SoakResult<()> {
    let stream = soak.gpu.device().stream().clone();
    for _ in 0..MIN_LIVE + 64 {
        soak.add(rng, 0)?;
    }
    // A few grammar bitmasks, from permissive to all but empty, and one that allows nothing.
    let mut masks: Vec<Vec<i32>> = [0.9, 0.5, 0.1, 0.01, 0.0005].iter().map(|&a| bitmask_row(rng, VOCAB, a)).collect();
    masks.push(vec![0; VOCAB.div_ceil(32)]);
    let mut device_masks: CudaSlice<i32> = stream.alloc_zeros::<i32>(CAPACITY * DEVICE_MASK_STRIDE)?;
    let mut device_tokens: CudaSlice<i32> = stream.alloc_zeros::<i32>(CAPACITY)?;
    let mut device_status: CudaSlice<u32> = stream.alloc_zeros::<u32>(CAPACITY)?;
    // Kept across the run, as an engine keeps them.
    let (mut step_outputs, mut verify_outputs) = (Vec::new(), Vec::new());

    let first: Vec<BatchRow> = soak.live[..CAPACITY].iter().map(|&(id, _)| BatchRow::new(id)).collect();
    soak.gpu.sampler_mut().upload_step(&first)?;
    // SAFETY: `logits` is allocated for CAPACITY rows and outlives this function (it belongs to
    // `run`), so it outlives the graph and every replay.
    let graph = unsafe { soak.gpu.sampler_mut().capture_step(&DeviceLogits::f32(logits, CAPACITY, VOCAB), CAPACITY) }?;
    // The verification graph, captured after one upload for every target row the logits
    // buffer holds and every q row.
    let mut q_buf: CudaSlice<f32> = stream.alloc_zeros::<f32>(VERIFY_Q_ROWS * VOCAB)?;
    let no_drafts = [0u32; 0];
    let plain = soak.live.iter().map(|&(id, _)| id).find(|id| soak.model.get(*id).is_some_and(|s| s.params.top_logprobs == 0)).ok_or("no live request without top log-probabilities")?;
    soak.gpu.upload_verify(&[DeviceVerifyRequest { request: plain, drafts: &no_drafts, has_draft_probs: false, bitmask: None, device_bitmask: false }])?;
    // SAFETY: `logits` (above) and `q_buf` (dropped after the graph, at the end of this
    // function) outlive every replay, with these shapes.
    let verify_graph =
        unsafe { soak.gpu.capture_verify(&DeviceLogits::f32(logits, CAPACITY, VOCAB), Some(&DraftProbs::f32(&q_buf, VERIFY_Q_ROWS, VOCAB)), CAPACITY) }?;
    soak.gpu.device().synchronize()?;
    let start_memory = memory(soak.gpu.device())?;
    report.start = Some((start_memory.device, start_memory.rss));

    let started = Instant::now();
    let deadline = started + Duration::from_secs(options.seconds);
    let mut last_progress = started;
    let (mut early, mut baseline): (Option<Memory>, Option<Memory>) = (None, None);
    let mut replay: u64 = 0;
    while replay < options.replays && Instant::now() < deadline && soak.counters.failure_count < MAX_FAILURES {
        replay += 1;
        soak.churn(rng, replay)?;
        // Halfway between multiples of M, so the steps checked every K replays stay steps.
        if options.verify_every > 0 && replay % options.verify_every == options.verify_every / 2 {
            // As often as the steps are checked, by replay count.
            let check = (replay / options.verify_every).is_multiple_of((options.check_every / options.verify_every).max(1));
            verify_call(soak, rng, replay, logits, &mut q_buf, &verify_graph, &masks, &mut device_masks, check, &mut verify_outputs)?;
            continue;
        }

        // The batch: b distinct live requests in a random order, some with bitmasks.
        let b = batch_size(rng).min(soak.live.len());
        for i in 0..b {
            let j = i + below(rng, (soak.live.len() - i) as u64) as usize;
            soak.live.swap(i, j);
        }
        let ids: Vec<u64> = soak.live[..b].iter().map(|&(id, _)| id).collect();
        let row_masks: Vec<Option<usize>> =
            (0..b).map(|_| (below(rng, 10) == 0).then(|| below(rng, masks.len() as u64) as usize)).collect();
        let masks_on_device = row_masks.iter().any(Option::is_some) && below(rng, 2) == 0;
        let rows: Vec<BatchRow> = ids
            .iter()
            .zip(&row_masks)
            .map(|(&id, m)| match m {
                Some(_) if masks_on_device => BatchRow::with_device_bitmask(id),
                Some(m) => BatchRow::with_bitmask(id, &masks[*m]),
                None => BatchRow::new(id),
            })
            .collect();

        // Crowded steps put a top-k row's best tokens in the first tile (stage 2 re-reads it).
        let shape = match below(rng, 100) {
            0..70 => FILL_PEAKED,
            70..85 => FILL_CROWDED,
            _ => FILL_FLAT,
        };
        soak.gpu.device().fill_logits(logits, DTYPE_F32, b, VOCAB, VOCAB, rng.next_u64(), shape)?;
        if masks_on_device {
            let mask_rows: Vec<Option<&[i32]>> = row_masks.iter().map(|m| m.map(|m| masks[m].as_slice())).collect();
            stream.memcpy_htod(&pitched_mask_words(&mask_rows, DEVICE_MASK_STRIDE), &mut device_masks.slice_mut(..b * DEVICE_MASK_STRIDE))?;
            soak.gpu.sampler_mut().upload_step_with_bitmask(&rows, &DeviceBitmask::new(&device_masks, b, DEVICE_MASK_STRIDE))?;
            soak.counters.device_mask_steps += 1;
            soak.counters.device_masked_rows += row_masks.iter().filter(|m| m.is_some()).count() as u64;
        } else {
            soak.gpu.sampler_mut().upload_step(&rows)?;
        }

        let check = replay.is_multiple_of(options.check_every);
        let eager = check && (replay / options.check_every).is_multiple_of(2);
        // The states the step starts from, for the rows the reference will redo.
        let check_rows: Vec<usize> = if check {
            let mut picked: Vec<usize> = (0..options.check_rows.min(b)).map(|_| below(rng, b as u64) as usize).collect();
            picked.push(b - 1);
            picked.sort_unstable();
            picked.dedup();
            picked
        } else {
            Vec::new()
        };
        let before: Vec<RequestState> =
            check_rows.iter().map(|&r| soak.model.get(ids[r]).cloned().ok_or("model lost a request")).collect::<Result<_, _>>()?;

        if eager {
            soak.gpu.sampler_mut().enqueue_step(&DeviceLogits::f32(logits, b, VOCAB))?;
            soak.counters.eager_steps += 1;
        } else {
            soak.gpu.sampler_mut().replay(&graph)?;
        }
        // An engine's next step reads the tokens where the step left them, in stream order.
        let from_device = replay.is_multiple_of(3);
        if from_device {
            let outs = soak.gpu.sampler_mut().device_outputs()?;
            stream.memcpy_dtod(&outs.tokens.slice(..b), &mut device_tokens.slice_mut(..b))?;
            stream.memcpy_dtod(&outs.status.slice(..b), &mut device_status.slice_mut(..b))?;
        }
        soak.gpu.sampler_mut().read_outputs_into(&mut step_outputs)?;
        let out = &step_outputs;
        soak.counters.replays += 1;
        *soak.counters.batch_sizes.entry(b).or_insert(0) += 1;
        if out.len() != b {
            soak.counters.fail(format!("replay {replay}: {} outputs for {b} rows", out.len()));
            continue;
        }
        if from_device {
            let tokens = stream.clone_dtoh(&device_tokens.slice(..b))?;
            let status = stream.clone_dtoh(&device_status.slice(..b))?;
            soak.counters.device_output_reads += 1;
            if let Some(r) = (0..b).find(|&r| tokens[r] != out[r].token || status[r] != out[r].status) {
                soak.counters.fail(format!(
                    "replay {replay} row {r} of {b}: device outputs token {} status {}, read token {} status {}",
                    tokens[r], status[r], out[r].token, out[r].status
                ));
            }
        }
        for (r, o) in out.iter().enumerate() {
            let mask = row_masks[r].map(|m| masks[m].as_slice());
            let state = soak.model.get_mut(ids[r]).ok_or("model lost a request")?;
            if let Some(what) = check_invariants(o, state, mask) {
                let params = state.params.clone();
                soak.counters.fail(format!("replay {replay} row {r} of {b} (request {}): {what}; params {params:?}", ids[r]));
            }
            state.record(o.token);
            soak.counters.rows_sampled += 1;
            soak.counters.masked_rows += mask.is_some() as u64;
            match o.status {
                STATUS_OK => soak.counters.status_ok += 1,
                STATUS_NO_VALID_TOKEN => soak.counters.status_no_valid += 1,
                _ => {}
            }
        }

        if check {
            soak.counters.checks += 1;
            let mode = if eager { "eager" } else { "replay" };
            for (&r, state) in check_rows.iter().zip(&before) {
                let raw = stream.clone_dtoh(&logits.slice(r * VOCAB..(r + 1) * VOCAB))?;
                let mask = row_masks[r].map(|m| masks[m].as_slice());
                let expected = sample_row(&raw, state, mask);
                if let Some(diff) = compare(&out[r], &expected) {
                    soak.counters.fail(format!(
                        "replay {replay} ({mode}) row {r} of {b} (request {}): {diff}; params {:?}; step {}",
                        ids[r], state.params, state.step
                    ));
                }
                let device_step = soak.gpu.request_step(ids[r])?;
                let model_step = soak.model.get(ids[r]).map(|s| s.step).unwrap_or(u64::MAX);
                if device_step != model_step {
                    soak.counters.fail(format!(
                        "replay {replay} ({mode}) request {}: device step {device_step}, host model {model_step}",
                        ids[r]
                    ));
                }
                soak.counters.rows_checked += 1;
            }
        }

        if replay == EARLY_BASELINE_REPLAYS {
            soak.gpu.device().synchronize()?;
            early = Some(memory(soak.gpu.device())?);
        }
        if replay == WARMUP_REPLAYS {
            soak.gpu.device().synchronize()?;
            baseline = Some(memory(soak.gpu.device())?);
        }
        if last_progress.elapsed() >= Duration::from_secs(30) {
            last_progress = Instant::now();
            let m = memory(soak.gpu.device())?;
            println!(
                "sonic-soak: {:.0} s, {replay} replays ({:.0}/s), {} rows checked, {} failures, device {:.1} MiB, rss {:.1} MiB",
                started.elapsed().as_secs_f64(),
                replay as f64 / started.elapsed().as_secs_f64(),
                soak.counters.rows_checked,
                soak.counters.failure_count,
                mib(m.device),
                mib(m.rss)
            );
        }
    }
    soak.gpu.device().synchronize()?;
    report.elapsed_s = started.elapsed().as_secs_f64();
    let end = memory(soak.gpu.device())?;
    report.end = Some((end.device, end.rss));
    // Without enough replays for the warm-up, compare with an earlier point (a stricter test).
    let base = baseline.or(early).unwrap_or(start_memory);
    report.baseline = Some((base.device, base.rss));
    let device_growth = end.device - base.device;
    let rss_growth = end.rss - base.rss;
    if device_growth > DEVICE_SLACK_BYTES {
        soak.counters.fail(format!("device memory in use grew by {:.1} MiB (slack {:.0} MiB)", mib(device_growth), mib(DEVICE_SLACK_BYTES)));
    }
    if rss_growth > RSS_SLACK_BYTES {
        soak.counters.fail(format!("host RSS grew by {:.1} MiB (slack {:.0} MiB)", mib(rss_growth), mib(RSS_SLACK_BYTES)));
    }
    if soak.counters.checks == 0 {
        soak.counters.fail(format!("no step was checked against the reference ({replay} replays, --check-every {})", options.check_every));
    }
    // A tenth of the rows ask for masks, so nearly every step has one: fifty steps without a
    // device mask mean the mix above is broken.
    if soak.counters.replays >= 50 && (soak.counters.device_mask_steps == 0 || soak.counters.device_output_reads == 0) {
        soak.counters.fail(format!(
            "{} replays, {} with device bitmasks, {} with device outputs read",
            soak.counters.replays, soak.counters.device_mask_steps, soak.counters.device_output_reads
        ));
    }
    if soak.counters.verify_calls > 0 && soak.counters.verify_checked == 0 {
        soak.counters.fail(format!("no verification call was checked against the reference ({} calls)", soak.counters.verify_calls));
    }
    drop(graph);
    drop(verify_graph);
    drop(q_buf);
    Ok(())
}

/// The invariants every verification output must satisfy, whatever the logits.
fn check_verify_invariants(out: &VerifyOutput, drafts: &[u32], mask: Option<&[i32]>, want_logprobs: bool) -> Option<String> {
    let n = drafts.len();
    let emitted = out.emitted();
    if out.tokens.len() != n + 1 || out.accepted > n {
        return Some(format!("{} tokens and {} accepted for {n} drafts", out.tokens.len(), out.accepted));
    }
    match out.status {
        STATUS_OK if emitted.len() == out.accepted + 1 => {}
        STATUS_NO_VALID_TOKEN if emitted.len() == out.accepted => {}
        _ => return Some(format!("status {} with {} emitted and {} accepted", out.status, emitted.len(), out.accepted)),
    }
    if out.tokens[emitted.len()..].iter().any(|&t| t != NO_TOKEN) {
        return Some(format!("tokens after the chain's end: {:?}", out.tokens));
    }
    if emitted.iter().zip(drafts).take(out.accepted).any(|(&t, &d)| t != d as i32) {
        return Some(format!("accepted tokens {:?} are not the drafts {drafts:?}", &emitted[..out.accepted]));
    }
    let words = VOCAB.div_ceil(32);
    for (j, &t) in emitted.iter().enumerate() {
        if t < 0 || t as usize >= VOCAB {
            return Some(format!("token {t} at position {j}"));
        }
        if let Some(m) = mask {
            if !bitmask_allows(m[j * words + (t as usize >> 5)], t as u32) {
                return Some(format!("token {t} at position {j} is masked out"));
            }
        }
    }
    if want_logprobs && out.logprobs.len() != emitted.len() || !want_logprobs && !out.logprobs.is_empty() {
        return Some(format!("{} logprobs for {} emitted tokens (asked: {want_logprobs})", out.logprobs.len(), emitted.len()));
    }
    None
}

/// One verification call in place of a step (see the module docs). Drafts need the target rows,
/// so they are read back before the upload; so is every draft-probability row, made on the host.
#[allow(clippy::too_many_arguments)]
fn verify_call(
    soak: &mut Soak,
    rng: &mut rand_xoshiro::Xoshiro256PlusPlus,
    replay: u64,
    logits: &mut CudaSlice<f32>,
    q_buf: &mut CudaSlice<f32>,
    graph: &VerifyGraph,
    masks: &[Vec<i32>],
    device_masks: &mut CudaSlice<i32>,
    check: bool,
    outs: &mut Vec<VerifyOutput>,
) -> SoakResult<()> {
    let stream = soak.gpu.device().stream().clone();
    // Requests without top log-probabilities (the GPU verifier reports the chosen tokens' only).
    let mut eligible: Vec<u64> =
        soak.live.iter().map(|&(id, _)| id).filter(|id| soak.model.get(*id).is_some_and(|s| s.params.top_logprobs == 0)).collect();
    if eligible.is_empty() {
        return Ok(());
    }
    let k = (1 + below(rng, VERIFY_REQUESTS_MAX as u64) as usize).min(eligible.len());
    for i in 0..k {
        let j = i + below(rng, (eligible.len() - i) as u64) as usize;
        eligible.swap(i, j);
    }
    let ids: Vec<u64> = eligible[..k].to_vec();
    let drafts_n: Vec<usize> = ids.iter().map(|_| below(rng, VERIFY_DRAFTS_MAX + 1) as usize).collect();
    let rows: usize = drafts_n.iter().map(|n| n + 1).sum();
    let shape = if below(rng, 100) < 85 { FILL_PEAKED } else { FILL_FLAT };
    soak.gpu.device().fill_logits(logits, DTYPE_F32, rows, VOCAB, VOCAB, rng.next_u64(), shape)?;
    let host = stream.clone_dtoh(&logits.slice(0..rows * VOCAB))?;

    // Drafts: the row's argmax, a draw from the request's q row, or a random token.
    let words = VOCAB.div_ceil(32);
    let mut drafts: Vec<Vec<u32>> = Vec::new();
    let mut q_rows: Vec<Option<Vec<f32>>> = Vec::new();
    let mut bitmasks: Vec<Option<Vec<i32>>> = Vec::new();
    let (mut first, mut q_used) = (0usize, 0usize);
    for &n in &drafts_n {
        let with_q = n > 0 && q_used + n <= VERIFY_Q_ROWS && below(rng, 3) == 0;
        let mask = (below(rng, 10) == 0).then(|| below(rng, masks.len() as u64) as usize);
        let (mut d, mut q) = (Vec::with_capacity(n), Vec::new());
        for j in 0..n {
            let row = &host[(first + j) * VOCAB..(first + j + 1) * VOCAB];
            let qr = with_q.then(|| draft_q_row(rng, row));
            d.push(match (below(rng, 10), &qr) {
                (0..=5, _) => first_argmax(row),
                (6..=7, Some(qr)) => sample_weights(rng, qr),
                _ => below(rng, VOCAB as u64) as u32,
            });
            if let Some(qr) = qr {
                q.extend_from_slice(&qr);
            }
        }
        if with_q {
            stream.memcpy_htod(&q, &mut q_buf.slice_mut(q_used * VOCAB..(q_used + n) * VOCAB))?;
            q_used += n;
        }
        drafts.push(d);
        q_rows.push(with_q.then_some(q));
        bitmasks.push(mask.map(|m| masks[m].iter().copied().cycle().take((n + 1) * words).collect()));
        first += n + 1;
    }
    // Half the calls with masks take them from the device, one padded row per target row laid
    // out as the logits are (zeros, which allow nothing, for requests without a mask).
    let on_device = bitmasks.iter().any(Option::is_some) && below(rng, 2) == 0;
    let requests: Vec<DeviceVerifyRequest> = ids
        .iter()
        .enumerate()
        .map(|(r, &id)| DeviceVerifyRequest {
            request: id,
            drafts: &drafts[r],
            has_draft_probs: q_rows[r].is_some(),
            bitmask: if on_device { None } else { bitmasks[r].as_deref() },
            device_bitmask: on_device && bitmasks[r].is_some(),
        })
        .collect();
    if on_device {
        // Target row by target row, as the logits are laid out.
        let target_masks: Vec<Option<&[i32]>> = bitmasks
            .iter()
            .zip(&drafts)
            .flat_map(|(mask, d)| (0..=d.len()).map(move |j| mask.as_deref().map(|m| &m[j * words..(j + 1) * words])))
            .collect();
        stream.memcpy_htod(&pitched_mask_words(&target_masks, DEVICE_MASK_STRIDE), &mut device_masks.slice_mut(..rows * DEVICE_MASK_STRIDE))?;
        soak.gpu.upload_verify_with_bitmask(&requests, &DeviceBitmask::new(&*device_masks, rows, DEVICE_MASK_STRIDE))?;
        soak.counters.verify_device_mask_calls += 1;
    } else {
        soak.gpu.upload_verify(&requests)?;
    }
    // The states the call starts from, for the request the reference will redo.
    let checked = check.then(|| below(rng, k as u64) as usize);
    let before = checked.and_then(|r| soak.model.get(ids[r]).cloned());
    if soak.counters.verify_calls.is_multiple_of(2) {
        soak.gpu.enqueue_verify(&DeviceLogits::f32(&*logits, CAPACITY, VOCAB), Some(&DraftProbs::f32(&*q_buf, VERIFY_Q_ROWS, VOCAB)))?;
    } else {
        soak.gpu.replay(graph)?;
    }
    soak.gpu.read_verify_outputs_into(outs)?;
    soak.counters.verify_calls += 1;
    soak.counters.verify_rows += rows as u64;
    if outs.len() != k {
        soak.counters.fail(format!("replay {replay}: {} verification outputs for {k} requests", outs.len()));
        return Ok(());
    }
    for (r, out) in outs.iter().enumerate() {
        let state = soak.model.get_mut(ids[r]).ok_or("model lost a request")?;
        if let Some(what) = check_verify_invariants(out, &drafts[r], bitmasks[r].as_deref(), state.params.logprobs) {
            let params = state.params.clone();
            soak.counters.fail(format!("replay {replay} verification request {r} of {k} (id {}): {what}; params {params:?}", ids[r]));
        }
        for &t in out.emitted() {
            let c = state.output_counts.entry(t as u32).or_insert(0);
            *c = c.saturating_add(1);
        }
        state.step = state.step.wrapping_add(1);
        soak.counters.verify_requests += 1;
        soak.counters.drafts_accepted += out.accepted as u64;
        soak.counters.verify_no_valid += (out.status == STATUS_NO_VALID_TOKEN) as u64;
    }
    if let (Some(r), Some(state)) = (checked, before) {
        let offset: usize = drafts_n[..r].iter().map(|n| n + 1).sum();
        let host_logits = HostLogits::f32(&host, rows, VOCAB)?;
        let req = VerifyRequest { request: ids[r], drafts: &drafts[r], draft_probs: q_rows[r].as_deref(), bitmask: bitmasks[r].as_deref() };
        let expected = verify_request(&host_logits, offset, &req, &state);
        if let Some(diff) = compare_verify_outputs(&outs[r], &expected) {
            soak.counters.fail(format!(
                "replay {replay} verification request {r} of {k} (id {}, {} drafts): {diff}; params {:?}; step {}",
                ids[r],
                drafts[r].len(),
                state.params,
                state.step
            ));
        }
        let device_step = soak.gpu.request_step(ids[r])?;
        if device_step != state.step.wrapping_add(1) {
            soak.counters.fail(format!("replay {replay} verification request {}: device step {device_step}, expected {}", ids[r], state.step.wrapping_add(1)));
        }
        soak.counters.verify_checked += 1;
    }
    Ok(())
}

#[derive(Default)]
struct Report {
    device: String,
    elapsed_s: f64,
    start: Option<(i64, i64)>,
    baseline: Option<(i64, i64)>,
    end: Option<(i64, i64)>,
    live_at_end: usize,
    counters: Counters,
    error: Option<String>,
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn write_report(options: &Options, report: &Report, passed: bool) -> SoakResult<()> {
    let c = &report.counters;
    let mem = |m: Option<(i64, i64)>| match m {
        Some((d, r)) => format!("{{\"device_used_bytes\":{d},\"host_rss_bytes\":{r}}}"),
        None => "null".into(),
    };
    let mut sizes: Vec<(usize, u64)> = c.batch_sizes.iter().map(|(&k, &v)| (k, v)).collect();
    sizes.sort_unstable();
    let distinct_sizes = sizes.len();
    let failures: Vec<String> = c.failures.iter().map(|f| json_string(f)).collect();
    let json = format!(
        "{{\"producer\":\"sonic-soak\",\"passed\":{passed},\"device\":{},\"vocab\":{VOCAB},\"capacity\":{CAPACITY},\"exact_pass\":\"{:?}\",\
         \"seconds_limit\":{},\"replays_limit\":{},\"check_every\":{},\"check_rows\":{},\"elapsed_s\":{:.2},\
         \"replays\":{},\"eager_steps\":{},\"checks\":{},\"rows_sampled\":{},\"rows_checked\":{},\"status_ok\":{},\
         \"status_no_valid_token\":{},\"masked_rows\":{},\"device_mask_steps\":{},\"device_masked_rows\":{},\"device_output_reads\":{},\"verify_device_mask_calls\":{},\"adds\":{},\"drops\":{},\"resets\":{},\"updates\":{},\
         \"verify_every\":{},\"verify_calls\":{},\"verify_requests\":{},\"verify_rows\":{},\"drafts_accepted\":{},\
         \"verify_no_valid_token\":{},\"verify_checked\":{},\"distinct_batch_sizes\":{distinct_sizes},\"live_requests_at_end\":{},\"memory\":{{\"start\":{},\"baseline\":{},\"end\":{},\
         \"device_slack_bytes\":{DEVICE_SLACK_BYTES},\"rss_slack_bytes\":{RSS_SLACK_BYTES}}},\"failure_count\":{},\
         \"failures\":[{}],\"error\":{}}}\n",
        json_string(&report.device),
        options.exact_pass,
        options.seconds,
        options.replays,
        options.check_every,
        options.check_rows,
        report.elapsed_s,
        c.replays,
        c.eager_steps,
        c.checks,
        c.rows_sampled,
        c.rows_checked,
        c.status_ok,
        c.status_no_valid,
        c.masked_rows,
        c.device_mask_steps,
        c.device_masked_rows,
        c.device_output_reads,
        c.verify_device_mask_calls,
        c.adds,
        c.drops,
        c.resets,
        c.updates,
        options.verify_every,
        c.verify_calls,
        c.verify_requests,
        c.verify_rows,
        c.drafts_accepted,
        c.verify_no_valid,
        c.verify_checked,
        report.live_at_end,
        mem(report.start),
        mem(report.baseline),
        mem(report.end),
        c.failure_count,
        failures.join(","),
        report.error.as_deref().map_or("null".into(), json_string),
    );
    std::fs::create_dir_all(&options.out)?;
    std::fs::write(options.out.join("sonic-soak.json"), json)?;

    let mem_row = |name: &str, m: Option<(i64, i64)>| match m {
        Some((d, r)) => format!("| {name} | {:.1} | {:.1} |\n", mib(d), mib(r)),
        None => format!("| {name} | - | - |\n"),
    };
    let rate = if report.elapsed_s > 0.0 { c.replays as f64 / report.elapsed_s } else { 0.0 };
    let mut table = format!(
        "## sonic-soak on {} — {}\n\n| quantity | value |\n|---|---|\n\
         | exact pass | {:?} |\n| elapsed | {:.1} s |\n| replays (graph + eager) | {} ({:.0}/s) |\n| eager steps | {} |\n\
         | reference checks | {} ({} rows) |\n| rows sampled | {} (ok {}, no valid token {}, masked {}) |\n\
         | steps with device bitmasks | {} ({} masked rows) |\n| steps whose device outputs were read | {} |\n\
         | verification calls (every {} replays) | {} ({} requests, {} target rows, {} drafts accepted, {} without a valid token) |\n\
         | verification requests checked against the reference | {} |\n\
         | verification calls with device bitmasks | {} |\n\
         | distinct batch sizes | {} |\n| requests added / dropped / reset / updated | {} / {} / {} / {} |\n\
         | failures | {} |\n\n| memory | device in use MiB | host RSS MiB |\n|---|---|---|\n",
        report.device,
        if passed { "PASSED" } else { "FAILED" },
        options.exact_pass,
        report.elapsed_s,
        c.replays,
        rate,
        c.eager_steps,
        c.checks,
        c.rows_checked,
        c.rows_sampled,
        c.status_ok,
        c.status_no_valid,
        c.masked_rows,
        c.device_mask_steps,
        c.device_masked_rows,
        c.device_output_reads,
        options.verify_every,
        c.verify_calls,
        c.verify_requests,
        c.verify_rows,
        c.drafts_accepted,
        c.verify_no_valid,
        c.verify_checked,
        c.verify_device_mask_calls,
        distinct_sizes,
        c.adds,
        c.drops,
        c.resets,
        c.updates,
        c.failure_count,
    );
    table.push_str(&mem_row("start", report.start));
    table.push_str(&mem_row(&format!("baseline (after {WARMUP_REPLAYS} replays, else {EARLY_BASELINE_REPLAYS})"), report.baseline));
    table.push_str(&mem_row("end", report.end));
    if let Some(e) = &report.error {
        table.push_str(&format!("\nerror: {e}\n"));
    }
    println!("{table}");
    Ok(())
}

fn main() {
    let options = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("sonic-soak: {e}");
            std::process::exit(2);
        }
    };
    let mut report = Report::default();
    if let Err(e) = run(&options, &mut report) {
        eprintln!("sonic-soak: error: {e}");
        report.error = Some(e.to_string());
    }
    let passed = report.error.is_none() && report.counters.failure_count == 0;
    if let Err(e) = write_report(&options, &report, passed) {
        eprintln!("sonic-soak: writing the report: {e}");
        std::process::exit(1);
    }
    if !passed {
        eprintln!("sonic-soak: FAILED");
        std::process::exit(1);
    }
    println!("sonic-soak: passed");
}
