//! Reliability of the GPU sampler (issue 7), beyond token-for-token agreement:
//!
//! - garbage written straight into the device-side `RowSettings` makes exactly those rows
//!   answer `STATUS_INVALID_SETTINGS` with token -1 and leaves their requests untouched, while
//!   every other row of the step still equals the CPU reference (compute-sanitizer memcheck
//!   runs this test too: the garbage must not make any kernel read or write out of bounds);
//! - a request's tokens do not depend on where in the batch it sits, nor on its neighbours;
//! - the same inputs through fresh samplers give bitwise identical outputs, eager or replayed.
//!
//! Edge logits under graph replay are covered in `gpu_sampler.rs`. Under `SONIC_SANITIZE=1`
//! the tests run fewer rows, rounds and batch sizes (`sized`), with the same checks.

use half::{bf16, f16};
use rand_xoshiro::rand_core::Rng;
use sampler_host::backend::{Backend, Batch, BatchRow, RowOutput};
use sampler_host::gpu::{DeviceLogits, GpuSampler, GpuSamplerConfig};
use sampler_host::logits::{HostLogits, LogitsData, LogitsDtype};
use sampler_host::reference::CpuReference;
use sampler_host::settings::SamplingParams;
use sampler_kernels::abi::{MAX_TOP_LOGPROBS, ROW_HAS_BITMASK, ROW_TOP_LOGPROBS_SHIFT, ROW_WANT_LOGPROB};
use sampler_kernels::decide::settings_valid;
use sampler_kernels::status::{NO_TOKEN, STATUS_INVALID_SETTINGS};
use sampler_tests::{compare_outputs as compare, random_masks, random_rows, below, fresh_rng, gpu_or_skip, logit_row, mixed_params, prompt, sized, unit, RowShape};


/// A row's outputs with every float as its bit pattern, for bitwise comparisons.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Bits {
    token: i32,
    status: u32,
    logprob: Option<u32>,
    top: Vec<(u32, u32)>,
}

fn bits(row: &RowOutput) -> Bits {
    Bits {
        token: row.token,
        status: row.status,
        logprob: row.logprob.map(f32::to_bits),
        top: row.top_logprobs.iter().map(|&(t, lp)| (t, lp.to_bits())).collect(),
    }
}

fn batch_rows<'a>(ids: &[u64], masks: &'a [Option<Vec<i32>>]) -> Vec<BatchRow<'a>> {
    ids.iter()
        .zip(masks)
        .map(|(&id, m)| match m {
            Some(m) => BatchRow::with_bitmask(id, m),
            None => BatchRow::new(id),
        })
        .collect()
}

fn host_f32(values: &[f32], rows: usize, vocab: usize) -> HostLogits<'_> {
    HostLogits::new(LogitsData::F32(values), rows, vocab, vocab).expect("host logits")
}

// ---------------------------------------------------------------------------------------------
// Garbage device-side settings.

/// What `sample_rows` accepts before it looks at the bias token ids (`row_addressable` and the
/// `settings_valid` / top-n checks of `row_valid` in sampler-kernels/src/sampler.rs). The
/// bitmask clause always holds: the sampler's bitmask pointer is never null.
fn device_accepts(raw: &[u32; 12], slots: u32, bias_capacity: u32) -> bool {
    let f = |i: usize| f32::from_bits(raw[i]);
    let (slot, offset, len, flags) = (raw[7], raw[8], raw[9], raw[10]);
    slot < slots
        && offset <= bias_capacity
        && len <= bias_capacity - offset
        && settings_valid(f(0), f(1), f(2), f(3), f(4), f(5))
        && (flags >> ROW_TOP_LOGPROBS_SHIFT) & 0xff <= MAX_TOP_LOGPROBS
}

/// Floats that break validation in some field, or pass it, at random.
fn odd_float(rng: &mut impl Rng) -> f32 {
    const ODD: [f32; 14] =
        [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0, 1.0, 0.5, -1.0, 1.5, 1e-45, 3e38, -3e38, 2.0, 1e-30];
    if below(rng, 4) == 0 {
        f32::from_bits(rng.next_u32())
    } else {
        ODD[below(rng, ODD.len() as u64) as usize]
    }
}

/// One entry of garbage settings, always refused by the device: random words; a plausible
/// entry with one field broken; or odd values everywhere. Garbage that happens to pass the
/// checks is broken on purpose, because its outcome would depend on stale bias entries and it
/// would advance (and count into) some other request's state.
fn garbage(rng: &mut impl Rng, slots: u32, bias_capacity: u32) -> [u32; 12] {
    let mut raw = [0u32; 12];
    match below(rng, 3) {
        0 => raw.iter_mut().for_each(|w| *w = rng.next_u32()),
        1 => {
            // Plausible and addressable (stage 1 processes the row), then one field broken.
            let base = RowSettingsWords {
                floats: [1.0, 1.0, 0.0, 1.0, 0.0, 0.0],
                top_k: below(rng, 100) as u32,
                slot: below(rng, slots as u64) as u32,
                bias_offset: 0,
                bias_len: 0,
                flags: if below(rng, 2) == 0 { ROW_WANT_LOGPROB } else { 0 },
            };
            raw = base.words();
            match below(rng, 14) {
                0 => raw[0] = [f32::NAN, -1.0, f32::INFINITY, -1e-30][below(rng, 4) as usize].to_bits(),
                1 => raw[1] = [0.0f32, 1.5, f32::NAN, -0.5][below(rng, 4) as usize].to_bits(),
                2 => raw[2] = [-0.1f32, 2.0, f32::NAN, f32::INFINITY][below(rng, 4) as usize].to_bits(),
                3 => raw[3] = [0.0f32, -1.0, f32::INFINITY, f32::NAN][below(rng, 4) as usize].to_bits(),
                4 => raw[4] = [f32::INFINITY, f32::NAN, f32::NEG_INFINITY][below(rng, 3) as usize].to_bits(),
                5 => raw[5] = [f32::INFINITY, f32::NAN, f32::NEG_INFINITY][below(rng, 3) as usize].to_bits(),
                6 => raw[7] = slots + below(rng, 1000) as u32,
                7 => raw[7] = u32::MAX,
                8 => {
                    raw[8] = bias_capacity + 1 + below(rng, 1000) as u32;
                    raw[9] = 1;
                }
                9 => {
                    // One entry past the end.
                    raw[8] = bias_capacity - 3;
                    raw[9] = 4;
                }
                10 => raw[9] = u32::MAX, // offset 0
                11 => {
                    // offset + len wraps to 0 in u32.
                    raw[8] = 1;
                    raw[9] = u32::MAX;
                }
                12 => raw[10] = (255 << ROW_TOP_LOGPROBS_SHIFT) | ROW_WANT_LOGPROB | ROW_HAS_BITMASK,
                _ => raw[10] = ((MAX_TOP_LOGPROBS + 1 + below(rng, 200) as u32) << ROW_TOP_LOGPROBS_SHIFT) | ROW_WANT_LOGPROB,
            }
        }
        _ => {
            for w in raw.iter_mut().take(6) {
                *w = odd_float(rng).to_bits();
            }
            raw[6] = [0, 1, u32::MAX, rng.next_u32()][below(rng, 4) as usize];
            raw[7] = [0, slots - 1, slots, u32::MAX, rng.next_u32()][below(rng, 5) as usize];
            raw[8] = [0, bias_capacity, bias_capacity + 1, u32::MAX, rng.next_u32()][below(rng, 5) as usize];
            raw[9] = [0, 1, bias_capacity, u32::MAX, rng.next_u32()][below(rng, 5) as usize];
            raw[10] = [0, 255 << ROW_TOP_LOGPROBS_SHIFT, rng.next_u32()][below(rng, 3) as usize];
            raw[11] = rng.next_u32();
        }
    }
    if device_accepts(&raw, slots, bias_capacity) {
        match below(rng, 3) {
            0 => raw[0] = f32::NAN.to_bits(),
            1 => raw[7] = u32::MAX,
            _ => raw[10] = (raw[10] & !(0xff << ROW_TOP_LOGPROBS_SHIFT)) | (255 << ROW_TOP_LOGPROBS_SHIFT),
        }
    }
    assert!(!device_accepts(&raw, slots, bias_capacity));
    raw
}

struct RowSettingsWords {
    floats: [f32; 6],
    top_k: u32,
    slot: u32,
    bias_offset: u32,
    bias_len: u32,
    flags: u32,
}

impl RowSettingsWords {
    fn words(&self) -> [u32; 12] {
        let mut w = [0u32; 12];
        for (i, f) in self.floats.iter().enumerate() {
            w[i] = f.to_bits();
        }
        w[6] = self.top_k;
        w[7] = self.slot;
        w[8] = self.bias_offset;
        w[9] = self.bias_len;
        w[10] = self.flags;
        w
    }
}

/// Host-only check of the generator above (runs without a GPU): nothing it makes passes the
/// device's checks, and the predicate accepts what the host would upload for valid settings.
#[test]
fn garbage_generator_is_always_refused() {
    let mut rng = fresh_rng("garbage_generator_is_always_refused");
    let (slots, capacity) = (256u32, 65_536u32);
    for _ in 0..100_000 {
        garbage(&mut rng, slots, capacity);
    }
    let valid = RowSettingsWords {
        floats: [0.7, 0.9, 0.05, 1.1, 0.2, -0.1],
        top_k: 50,
        slot: slots - 1,
        bias_offset: capacity - 30,
        bias_len: 30,
        flags: (MAX_TOP_LOGPROBS << ROW_TOP_LOGPROBS_SHIFT) | ROW_WANT_LOGPROB | ROW_HAS_BITMASK,
    };
    assert!(device_accepts(&valid.words(), slots, capacity));
}

#[test]
fn gpu_garbage_device_settings_fail_only_their_rows() {
    const TEST: &str = "gpu_garbage_device_settings_fail_only_their_rows";
    let mut rng = fresh_rng(TEST);
    // Reduced: 24 rows still leave good rows beside up to 19 garbage ones.
    let (vocab, batch) = (50_257usize, sized(64usize, 24));
    let Some(device) = gpu_or_skip(TEST) else { return };
    let config = GpuSamplerConfig::new(vocab, batch);
    let slots = config.max_requests as u32;
    let bias_capacity = config.max_bias_entries.max(1) as u32;
    let mut gpu = GpuSampler::new(device, config).expect("gpu sampler");
    let mut cpu = CpuReference::new(vocab, batch).expect("cpu reference");
    for id in 0..batch as u64 {
        let params = mixed_params(&mut rng, vocab);
        let prompt = prompt(&mut rng, vocab);
        gpu.add_request(id, params.clone(), &prompt).expect("gpu add");
        cpu.add_request(id, params, &prompt).expect("cpu add");
    }
    let stream = gpu.device().stream().clone();
    let mut dev = stream.alloc_zeros::<f32>(batch * vocab).expect("alloc logits");
    let ids: Vec<u64> = (0..batch as u64).collect();
    let no_masks: Vec<Option<Vec<i32>>> = vec![None; batch];
    gpu.upload_step(&batch_rows(&ids, &no_masks)).expect("upload");
    // SAFETY: `dev` outlives every replay of the graph (both live to the end of this test).
    let graph = unsafe { gpu.capture_step(&DeviceLogits::f32(&dev, batch, vocab), batch) }.expect("capture");

    let (mut garbage_rows, mut mismatches) = (0usize, 0usize);
    // Even rounds eager, odd rounds graph replays; reduced keeps two of each.
    for round in 0..sized(8, 4) {
        // Fresh settings for some requests, then a step with some rows' settings overwritten.
        for id in 0..batch as u64 {
            if below(&mut rng, 4) == 0 {
                let params = mixed_params(&mut rng, vocab);
                gpu.update_request(id, params.clone()).expect("update");
                cpu.update_request(id, params).expect("update");
            }
        }
        let values = random_rows(&mut rng, batch, vocab, vocab);
        stream.memcpy_htod(&values, &mut dev).expect("copy logits");
        let masks = random_masks(&mut rng, batch, vocab);
        // Rows in a random order, so garbage lands on different requests' rows each round.
        let mut order = ids.clone();
        for i in (1..order.len()).rev() {
            order.swap(i, below(&mut rng, i as u64 + 1) as usize);
        }
        gpu.upload_step(&batch_rows(&order, &masks)).expect("upload");
        let n_bad = 1 + below(&mut rng, 16) as usize;
        let mut bad = vec![false; batch];
        for _ in 0..n_bad {
            let r = below(&mut rng, batch as u64) as usize;
            let raw = garbage(&mut rng, slots, bias_capacity);
            gpu.write_raw_settings(r, raw).expect("write raw settings");
            bad[r] = true;
        }
        // A plausible row whose bias list names one token twice (only device writes can do
        // that): stage 1 must not race over it, and stage 2 must refuse the row.
        let r = below(&mut rng, batch as u64) as usize;
        let token = below(&mut rng, vocab as u64) as u32;
        let other = (token + 1 + below(&mut rng, vocab as u64 - 1) as u32) % vocab as u32;
        let first = bias_capacity as usize - 8;
        for (i, t) in [other, token, other.wrapping_add(1) % vocab as u32, token].into_iter().enumerate() {
            gpu.write_raw_bias(first + i, t, (1.5f32 + i as f32).to_bits()).expect("write raw bias");
        }
        let duplicated = RowSettingsWords {
            floats: [0.8, 0.95, 0.0, 1.0, 0.0, 0.0],
            top_k: 0,
            slot: below(&mut rng, slots as u64) as u32,
            bias_offset: first as u32,
            bias_len: 4,
            flags: 0,
        };
        gpu.write_raw_settings(r, duplicated.words()).expect("write raw settings");
        bad[r] = true;
        // Row 0 and the last row are the easiest to get wrong at the edges of the grid.
        if round == 0 {
            for r in [0, batch - 1] {
                gpu.write_raw_settings(r, garbage(&mut rng, slots, bias_capacity)).expect("write raw settings");
                bad[r] = true;
            }
        }
        let eager = round % 2 == 0;
        if eager {
            gpu.enqueue_step(&DeviceLogits::f32(&dev, batch, vocab)).expect("enqueue");
        } else {
            gpu.replay(&graph).expect("replay");
        }
        let out = gpu.read_outputs().expect("outputs");
        assert_eq!(out.len(), batch);

        // The reference samples only the good rows, in their own batch (batch composition does
        // not matter to the contract); refused rows leave their requests as they were.
        let good: Vec<usize> = (0..batch).filter(|&r| !bad[r]).collect();
        let mut good_values = Vec::with_capacity(good.len() * vocab);
        for &r in &good {
            good_values.extend_from_slice(&values[r * vocab..(r + 1) * vocab]);
        }
        let good_ids: Vec<u64> = good.iter().map(|&r| order[r]).collect();
        let good_masks: Vec<Option<Vec<i32>>> = good.iter().map(|&r| masks[r].clone()).collect();
        let expected = if good.is_empty() {
            Vec::new()
        } else {
            let b = Batch { logits: host_f32(&good_values, good.len(), vocab), rows: batch_rows(&good_ids, &good_masks) };
            cpu.sample(&b).expect("cpu sample")
        };
        let mode = if eager { "eager" } else { "replay" };
        for r in 0..batch {
            let g = &out[r];
            if bad[r] {
                garbage_rows += 1;
                if g.status != STATUS_INVALID_SETTINGS || g.token != NO_TOKEN || g.logprob.is_some() || !g.top_logprobs.is_empty() {
                    mismatches += 1;
                    eprintln!("round {round} ({mode}) garbage row {r}: {g:?}, expected status 2 and token -1");
                }
            } else {
                let at = good.iter().position(|&x| x == r).expect("good row");
                if let Some(diff) = compare(g, &expected[at]) {
                    mismatches += 1;
                    eprintln!("round {round} ({mode}) row {r} (request {}): {diff}", order[r]);
                }
            }
        }
        // The device's step counters: refused rows untouched, the others advanced by one. The
        // reference advanced exactly the good rows and never saw the refused ones, so its step
        // is the expected device step either way.
        for (r, &id) in order.iter().enumerate() {
            let device_step = gpu.request_step(id).expect("request step");
            let cpu_step = cpu.table().get(id).expect("request").step;
            if device_step != cpu_step {
                mismatches += 1;
                eprintln!("round {round} ({mode}) row {r} (request {id}, garbage {}): device step {device_step}, expected {cpu_step}", bad[r]);
            }
        }
    }
    eprintln!("{garbage_rows} garbage rows refused; {mismatches} mismatches");
    assert_eq!(mismatches, 0);
}

// ---------------------------------------------------------------------------------------------
// Batch-position determinism.

/// Samples `fixed` (request id `FIXED`) for `rows.len()` steps in a batch of `batch` rows at
/// position `positions[step]`, the other rows fresh random requests; returns its outputs.
fn fixed_request_in_batch(
    test: &str,
    rng: &mut impl Rng,
    vocab: usize,
    batch: usize,
    fixed: &(SamplingParams, Vec<u32>),
    rows: &[Vec<f32>],
    positions: &[usize],
) -> Option<Vec<RowOutput>> {
    const FIXED: u64 = 1 << 40;
    let device = gpu_or_skip(test)?;
    let mut gpu = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
    // The neighbours are added first, so the fixed request gets a different slot in each sampler.
    for id in 0..batch as u64 - 1 {
        gpu.add_request(id, mixed_params(rng, vocab), &prompt(rng, vocab)).expect("add");
    }
    gpu.add_request(FIXED, fixed.0.clone(), &fixed.1).expect("add fixed");
    let mut outputs = Vec::new();
    for (row, &pos) in rows.iter().zip(positions) {
        let mut values = random_rows(rng, batch, vocab, vocab);
        values[pos * vocab..(pos + 1) * vocab].copy_from_slice(row);
        let mut ids: Vec<u64> = (0..batch as u64 - 1).collect();
        for i in (1..ids.len()).rev() {
            ids.swap(i, below(rng, i as u64 + 1) as usize);
        }
        ids.insert(pos, FIXED);
        let mut masks = random_masks(rng, batch, vocab);
        masks[pos] = None;
        let b = Batch { logits: host_f32(&values, batch, vocab), rows: batch_rows(&ids, &masks) };
        let out = gpu.sample(&b).expect("gpu sample");
        outputs.push(out[pos].clone());
    }
    Some(outputs)
}

#[test]
fn gpu_batch_position_does_not_change_a_request() {
    const TEST: &str = "gpu_batch_position_does_not_change_a_request";
    if gpu_or_skip(TEST).is_none() {
        return;
    }
    let mut rng = fresh_rng(TEST);
    const STEPS: usize = 3;
    // (vocab, batch sizes): B = 1024 uses a small vocab to keep memory and time small. Reduced:
    // the request still moves between a batch of one and the last row of a batch of 160, whose
    // neighbours take every feature and the exact pass.
    let full: &[(usize, &[usize])] = &[(128_256, &[1, 64, 64]), (32_000, &[1, 1024])];
    let reduced: &[(usize, &[usize])] = &[(128_256, &[1, 8]), (32_000, &[1, 160])];
    for &(vocab, batches) in sized(full, reduced) {
        // One request with random settings, penalties always on, and a prompt, so the penalty
        // state carried from step to step matters.
        let mut params = mixed_params(&mut rng, 32_000);
        params.repetition_penalty = 0.8 + 0.7 * unit(&mut rng) as f32;
        params.frequency_penalty = unit(&mut rng) as f32 - 0.3;
        params.presence_penalty = unit(&mut rng) as f32 - 0.3;
        params.seed = rng.next_u64();
        let fixed = (params, prompt(&mut rng, 32_000));
        // Its rows: peaked (close to what penalties can flip) except one flat row.
        let rows: Vec<Vec<f32>> = (0..STEPS)
            .map(|s| logit_row(&mut rng, if s == 1 { RowShape::Flat } else { RowShape::Peaked }, vocab))
            .collect();

        let mut cpu = CpuReference::new(vocab, 1).expect("cpu");
        cpu.add_request(0, fixed.0.clone(), &fixed.1).expect("add");
        let expected: Vec<RowOutput> = rows
            .iter()
            .map(|row| {
                let b = Batch { logits: host_f32(row, 1, vocab), rows: vec![BatchRow::new(0)] };
                cpu.sample(&b).expect("cpu sample").remove(0)
            })
            .collect();

        let mut first: Option<(usize, Vec<Bits>)> = None;
        let mut mismatches = 0;
        for &batch in batches {
            let positions: Vec<usize> = (0..STEPS)
                .map(|s| match s {
                    0 if batch > 1 => batch - 1,
                    _ => below(&mut rng, batch as u64) as usize,
                })
                .collect();
            let Some(out) = fixed_request_in_batch(TEST, &mut rng, vocab, batch, &fixed, &rows, &positions) else { return };
            for (s, (g, c)) in out.iter().zip(&expected).enumerate() {
                if let Some(diff) = compare(g, c) {
                    mismatches += 1;
                    eprintln!("V={vocab} B={batch} step {s} at row {}: {diff}; params {:?}", positions[s], fixed.0);
                }
            }
            let b: Vec<Bits> = out.iter().map(bits).collect();
            match &first {
                None => first = Some((batch, b)),
                Some((batch0, b0)) => {
                    if *b0 != b {
                        mismatches += 1;
                        eprintln!("V={vocab}: outputs at B={batch} positions {positions:?} differ bitwise from B={batch0}: {b:?} vs {b0:?}");
                    }
                }
            }
        }
        eprintln!("V={vocab}: request sampled alone and in batches {batches:?}: tokens {:?}", expected.iter().map(|r| r.token).collect::<Vec<_>>());
        assert_eq!(mismatches, 0, "V={vocab}");
    }
}

// ---------------------------------------------------------------------------------------------
// Repeated runs.

/// One step's inputs: logits, bitmasks and the request of each row.
type StepInputs = (Vec<f32>, Vec<Option<Vec<i32>>>, Vec<u64>);

struct Inputs {
    requests: Vec<(SamplingParams, Vec<u32>)>,
    steps: Vec<StepInputs>,
}

/// Runs `inputs` through a fresh sampler, eagerly (`Backend::sample`) or replaying one graph
/// captured over a device buffer (with `dtype` logits); returns every row's outputs.
fn run_inputs(test: &str, inputs: &Inputs, vocab: usize, dtype: LogitsDtype, replay: bool) -> Option<Vec<Vec<RowOutput>>> {
    let batch = inputs.requests.len();
    let device = gpu_or_skip(test)?;
    let mut gpu = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
    for (id, (params, prompt)) in inputs.requests.iter().enumerate() {
        gpu.add_request(id as u64, params.clone(), prompt).expect("add");
    }
    let stream = gpu.device().stream().clone();
    let is_f32 = dtype == LogitsDtype::F32;
    let mut dev_f32 = stream.alloc_zeros::<f32>(if is_f32 { batch * vocab } else { 1 }).expect("alloc");
    let mut dev_u16 = stream.alloc_zeros::<u16>(if is_f32 { 1 } else { batch * vocab }).expect("alloc");
    let graph = if replay {
        let view = if is_f32 {
            DeviceLogits::f32(&dev_f32, batch, vocab)
        } else {
            DeviceLogits::half_bits(&dev_u16, dtype, batch, vocab)
        };
        let no_masks: Vec<Option<Vec<i32>>> = vec![None; batch];
        gpu.upload_step(&batch_rows(&inputs.steps[0].2, &no_masks)).expect("upload");
        // SAFETY: both buffers live until this function returns, after every replay.
        Some(unsafe { gpu.capture_step(&view, batch) }.expect("capture"))
    } else {
        None
    };
    let mut all = Vec::new();
    for (values, masks, ids) in &inputs.steps {
        let rows = batch_rows(ids, masks);
        let bf16s: Vec<u16> = values.iter().map(|&v| bf16::from_f32(v).to_bits()).collect();
        let f16s: Vec<u16> = values.iter().map(|&v| f16::from_f32(v).to_bits()).collect();
        let half = if dtype == LogitsDtype::Bf16 { &bf16s } else { &f16s };
        let out = match &graph {
            None => {
                let bf: Vec<bf16> = bf16s.iter().map(|&b| bf16::from_bits(b)).collect();
                let hf: Vec<f16> = f16s.iter().map(|&b| f16::from_bits(b)).collect();
                let data = match dtype {
                    LogitsDtype::F32 => LogitsData::F32(values),
                    LogitsDtype::Bf16 => LogitsData::Bf16(&bf),
                    LogitsDtype::F16 => LogitsData::F16(&hf),
                };
                let logits = HostLogits::new(data, batch, vocab, vocab).expect("host logits");
                gpu.sample(&Batch { logits, rows }).expect("gpu sample")
            }
            Some(graph) => {
                if is_f32 {
                    stream.memcpy_htod(values, &mut dev_f32).expect("copy");
                } else {
                    stream.memcpy_htod(half, &mut dev_u16).expect("copy");
                }
                gpu.upload_step(&rows).expect("upload");
                gpu.replay(graph).expect("replay");
                gpu.read_outputs().expect("outputs")
            }
        };
        all.push(out);
    }
    Some(all)
}

#[test]
fn gpu_repeated_runs_are_bitwise_identical() {
    const TEST: &str = "gpu_repeated_runs_are_bitwise_identical";
    let mut rng = fresh_rng(TEST);
    for &(vocab, batch, dtype) in &[(50_257usize, sized(64usize, 16), LogitsDtype::F32), (151_936, sized(16, 4), LogitsDtype::Bf16)] {
        let requests: Vec<(SamplingParams, Vec<u32>)> =
            (0..batch).map(|_| (mixed_params(&mut rng, vocab), prompt(&mut rng, vocab))).collect();
        let steps = (0..3)
            .map(|_| {
                let mut ids: Vec<u64> = (0..batch as u64).collect();
                for i in (1..ids.len()).rev() {
                    ids.swap(i, below(&mut rng, i as u64 + 1) as usize);
                }
                (random_rows(&mut rng, batch, vocab, vocab), random_masks(&mut rng, batch, vocab), ids)
            })
            .collect();
        let inputs = Inputs { requests, steps };
        let Some(a) = run_inputs(TEST, &inputs, vocab, dtype, false) else { return };
        let Some(b) = run_inputs(TEST, &inputs, vocab, dtype, false) else { return };
        let Some(c) = run_inputs(TEST, &inputs, vocab, dtype, true) else { return };
        let mut differences = 0;
        for (label, other) in [("second eager run", &b), ("graph replay run", &c)] {
            for (s, (x, y)) in a.iter().zip(other.iter()).enumerate() {
                for (r, (p, q)) in x.iter().zip(y).enumerate() {
                    if bits(p) != bits(q) {
                        differences += 1;
                        eprintln!("V={vocab} {dtype:?} step {s} row {r}: first run {p:?}, {label} {q:?}");
                    }
                }
            }
        }
        let ok_rows = a.iter().flatten().filter(|r| r.status == 0).count();
        eprintln!("V={vocab} B={batch} {dtype:?}: 3 runs × 3 steps, {ok_rows} rows with a token per run, {differences} differences");
        assert_eq!(differences, 0);
    }
}
