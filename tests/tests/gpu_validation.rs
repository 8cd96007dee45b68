//! Issue 7's bad-input list, item by item, against every backend present: each bad setting or
//! input gives its typed error naming the right field (or capacity), before anything runs, and
//! leaves the backend's state as it was. The CPU reference always runs; the GPU sampler runs
//! too when a CUDA device is present (else prints SKIP), and adds the checks of device logits
//! (dtype, stride, length, context) and device bitmasks that only exist there.
//!
//! Until session 60 this file was an integration test of `sampler-host`, which `cargo xtask
//! bundle` does not carry to the GPU machine, so its GPU tests had never run on one; here it is
//! one of the bundle's test binaries.

use sampler_host::backend::{Backend, Batch, BatchRow};
use sampler_host::cuda::GpuDevice;
use sampler_host::gpu::{DeviceBitmask, DeviceLogits, GpuSampler, GpuSamplerConfig};
use sampler_host::logits::{HostLogits, LogitsData, LogitsDtype};
use sampler_host::reference::CpuReference;
use sampler_host::settings::SamplingParams;
use sampler_host::{Error, Field};
use sampler_tests::gpu_or_skip;

const VOCAB: usize = 100; // not a multiple of 32: 4 mask words
const MAX_BATCH: usize = 3;

fn field<T>(r: sampler_host::Result<T>) -> Field {
    match r {
        Err(Error::InvalidSetting { field, .. }) => field,
        Err(e) => panic!("expected an invalid-setting error, got {e}"),
        Ok(_) => panic!("expected an invalid-setting error, got Ok"),
    }
}

/// Runs the whole list against `b`, which must be empty, for `VOCAB` tokens and `MAX_BATCH` rows.
fn bad_inputs_are_refused(b: &mut dyn Backend) {
    let d = SamplingParams::default;
    let nan = f32::NAN;
    let bad_settings: Vec<(SamplingParams, Field)> = vec![
        (d().with_temperature(-1.0), Field::Temperature),
        (d().with_temperature(nan), Field::Temperature),
        (d().with_temperature(f32::INFINITY), Field::Temperature),
        (d().with_top_p(0.0), Field::TopP),
        (d().with_top_p(1.5), Field::TopP),
        (d().with_top_p(nan), Field::TopP),
        (d().with_min_p(-0.5), Field::MinP),
        (d().with_min_p(2.0), Field::MinP),
        (d().with_min_p(nan), Field::MinP),
        (d().with_penalties(0.0, 0.0, 0.0), Field::RepetitionPenalty),
        (d().with_penalties(nan, 0.0, 0.0), Field::RepetitionPenalty),
        (d().with_penalties(1.0, nan, 0.0), Field::FrequencyPenalty),
        (d().with_penalties(1.0, f32::INFINITY, 0.0), Field::FrequencyPenalty),
        (d().with_penalties(1.0, 0.0, nan), Field::PresencePenalty),
        (d().with_logit_bias(vec![(VOCAB as u32, 1.0)]), Field::LogitBias),
        (d().with_logit_bias(vec![(u32::MAX, 1.0)]), Field::LogitBias),
        (d().with_logit_bias(vec![(5, nan)]), Field::LogitBias),
        (d().with_logit_bias(vec![(5, 1.0), (5, 2.0)]), Field::LogitBias),
        (d().with_logprobs(21), Field::TopLogprobs),
    ];
    for (p, want) in &bad_settings {
        assert_eq!(field(b.add_request(1, p.clone(), &[])), *want, "add {p:?}");
        assert!(matches!(b.request_step(1), Err(Error::UnknownRequest { request: 1 })), "{p:?} was added");
    }
    assert_eq!(field(b.add_request(1, d(), &[3, VOCAB as u32])), Field::PromptTokens);
    assert!(matches!(b.request_step(1), Err(Error::UnknownRequest { request: 1 })));

    for r in 0..4 {
        b.add_request(r, SamplingParams::random(1.0, r).with_penalties(1.2, 0.1, 0.1), &[1, 2])
            .expect("valid request");
    }
    for (p, want) in &bad_settings {
        assert_eq!(field(b.update_request(0, p.clone())), *want, "update {p:?}");
    }
    assert_eq!(field(b.reset_request(0, &[VOCAB as u32 + 7])), Field::PromptTokens);

    let data: Vec<f32> = (0..4 * VOCAB).map(|i| ((i * 37) % 101) as f32 / 10.0).collect();
    let logits = |rows: usize| HostLogits::f32(&data, rows, VOCAB).expect("logits");
    let short_mask = vec![-1i32; 3];
    let batches: Vec<(Batch<'_>, &str)> = vec![
        (Batch { logits: logits(4), rows: (0..4).map(BatchRow::new).collect() }, "capacity"),
        (Batch { logits: logits(2), rows: vec![BatchRow::new(0), BatchRow::with_bitmask(1, &short_mask)] }, "mask"),
        // `sample` takes host rows: a row whose mask is on the device is refused.
        (Batch { logits: logits(2), rows: vec![BatchRow::new(0), BatchRow::with_device_bitmask(1)] }, "mask"),
        (Batch { logits: logits(2), rows: vec![BatchRow::new(0)] }, "rows"),
        (
            Batch { logits: HostLogits::f32(&data, 2, VOCAB - 1).expect("logits"), rows: vec![BatchRow::new(0), BatchRow::new(1)] },
            "vocab",
        ),
        (Batch { logits: logits(1), rows: vec![BatchRow::new(9)] }, "unknown"),
        (Batch { logits: logits(2), rows: vec![BatchRow::new(2), BatchRow::new(2)] }, "duplicate"),
    ];
    for (batch, what) in &batches {
        match (*what, b.sample(batch)) {
            ("capacity", Err(Error::CapacityExceeded { requested: 4, capacity: MAX_BATCH, .. })) => {}
            ("mask", Err(Error::InvalidSetting { field: Field::Bitmask, request: Some(1), .. })) => {}
            ("rows" | "vocab", Err(Error::InvalidSetting { field: Field::Logits, .. })) => {}
            ("unknown", Err(Error::UnknownRequest { request: 9 })) => {}
            ("duplicate", Err(Error::DuplicateRequest { request: 2 })) => {}
            (w, r) => panic!("{w}: unexpected {r:?}"),
        }
    }
    // Host logits whose stride or length do not match never become a view.
    assert_eq!(field(HostLogits::new(LogitsData::F32(&data), 2, VOCAB, VOCAB - 1)), Field::Logits);
    assert_eq!(field(HostLogits::new(LogitsData::F32(&data), 5, VOCAB, VOCAB)), Field::Logits);
    assert_eq!(field(HostLogits::new(LogitsData::F32(&data), 2, VOCAB, usize::MAX / 2)), Field::Logits);

    // Nothing above touched any request: one valid step finds every counter at 0.
    for r in 0..4 {
        assert_eq!(b.request_step(r).expect("step"), 0, "request {r} moved");
    }
    let out = b.sample(&Batch { logits: logits(3), rows: (0..3).map(BatchRow::new).collect() }).expect("valid batch");
    assert_eq!(out.len(), 3);
    for r in 0..3 {
        assert_eq!(b.request_step(r).expect("step"), 1);
    }
}

#[test]
fn cpu_reference_refuses_bad_inputs() {
    let mut b = CpuReference::new(VOCAB, MAX_BATCH).expect("backend");
    bad_inputs_are_refused(&mut b);
}

/// A second device, for the cross-context checks (`None` on a one-GPU machine).
fn second_gpu() -> Option<GpuDevice> {
    match GpuDevice::open(1) {
        Ok(d) => Some(d),
        Err(Error::NoCudaDevice { .. }) => None,
        Err(e) => panic!("opening CUDA device 1: {e}"),
    }
}

#[test]
fn gpu_sampler_refuses_bad_inputs() {
    let Some(device) = gpu_or_skip("gpu_sampler_refuses_bad_inputs") else { return };
    let mut b = GpuSampler::new(device, GpuSamplerConfig::new(VOCAB, MAX_BATCH)).expect("sampler");
    bad_inputs_are_refused(&mut b);
}

/// A GPU sampler of `VOCAB` tokens and `MAX_BATCH` rows holding random requests `0..n`, and its
/// stream (`None`: no GPU, skipped).
fn sampler_with_requests(test: &str, n: u64) -> Option<(GpuSampler, std::sync::Arc<cudarc::driver::CudaStream>)> {
    let device = gpu_or_skip(test)?;
    let stream = device.stream().clone();
    let mut s = GpuSampler::new(device, GpuSamplerConfig::new(VOCAB, MAX_BATCH)).expect("sampler");
    for r in 0..n {
        s.add_request(r, SamplingParams::random(1.0, r), &[]).expect("add");
    }
    Some((s, stream))
}

#[test]
fn gpu_sampler_refuses_bad_device_logits() {
    let Some((mut s, stream)) = sampler_with_requests("gpu_sampler_refuses_bad_device_logits", 2) else { return };
    s.upload_step(&[BatchRow::new(0), BatchRow::new(1)]).expect("upload");
    let f32s = stream.alloc_zeros::<f32>(2 * VOCAB).expect("alloc");
    let halves = stream.alloc_zeros::<u16>(2 * VOCAB).expect("alloc");
    let cases = [
        (DeviceLogits::f32(&f32s, 1, VOCAB), "fewer rows than uploaded"),
        (DeviceLogits::f32(&f32s, 2, VOCAB - 1), "stride below the vocab"),
        (DeviceLogits::f32(&f32s, 2, VOCAB + 1), "too short for the stride"),
        (DeviceLogits::f32(&f32s, 2, usize::MAX / 2 + 1), "stride overflows"),
        (DeviceLogits::half_bits(&halves, LogitsDtype::F32, 2, VOCAB), "f32 over 16-bit data"),
    ];
    for (logits, what) in &cases {
        assert_eq!(field(s.enqueue_step(logits)), Field::Logits, "{what}");
        // SAFETY: the capture is refused before anything is recorded.
        assert_eq!(field(unsafe { s.capture_step(logits, 2) }), Field::Logits, "capture: {what}");
    }
    // SAFETY: refused before anything is recorded.
    let too_many = unsafe { s.capture_step(&DeviceLogits::f32(&f32s, 2, VOCAB), MAX_BATCH + 1) };
    assert!(matches!(too_many, Err(Error::CapacityExceeded { .. })));
    // A buffer of another device's context.
    if let Some(other) = second_gpu() {
        let foreign = other.stream().alloc_zeros::<f32>(2 * VOCAB).expect("alloc");
        assert_eq!(field(s.enqueue_step(&DeviceLogits::f32(&foreign, 2, VOCAB))), Field::Logits);
    } else {
        println!("SKIP cross-context check (one CUDA device)");
    }
    // None of it moved a request; valid logits then sample.
    assert_eq!(s.request_step(0).expect("step"), 0);
    s.enqueue_step(&DeviceLogits::f32(&f32s, 2, VOCAB)).expect("valid logits");
    assert_eq!(s.read_outputs().expect("outputs").len(), 2);
    assert_eq!(s.request_step(0).expect("step"), 1);
    let bf16s = DeviceLogits::half_bits(&halves, LogitsDtype::Bf16, 2, VOCAB);
    s.upload_step(&[BatchRow::new(0), BatchRow::new(1)]).expect("upload");
    s.enqueue_step(&bf16s).expect("valid bf16 logits");
    assert_eq!(s.read_outputs().expect("outputs").len(), 2);
}

/// Device bitmasks: every way to get one wrong is a typed error naming the bitmask, before
/// anything is copied, and leaves the last upload as it was.
#[test]
fn gpu_sampler_refuses_bad_device_bitmasks() {
    let Some((mut s, stream)) = sampler_with_requests("gpu_sampler_refuses_bad_device_bitmasks", 3) else { return };
    let words = VOCAB.div_ceil(32);
    let masks = stream.alloc_zeros::<i32>(3 * (words + 1)).expect("alloc");
    let host_mask = vec![-1i32; words];
    let f32s = stream.alloc_zeros::<f32>(3 * VOCAB).expect("alloc");
    s.upload_step(&[BatchRow::new(0), BatchRow::new(1)]).expect("upload");
    let dev = BatchRow::with_device_bitmask;
    let both = BatchRow { device_bitmask: true, ..BatchRow::with_bitmask(1, &host_mask) };
    assert_eq!(field(s.upload_step(&[BatchRow::new(0), dev(1), BatchRow::new(2)])), Field::Bitmask, "no device bitmask given");
    let good = DeviceBitmask::new(&masks, 3, words);
    let cases: Vec<(Vec<BatchRow>, DeviceBitmask, &str)> = vec![
        (vec![BatchRow::new(0), BatchRow::with_bitmask(1, &host_mask), dev(2)], good, "host and device masks in one step"),
        (vec![BatchRow::new(0), both, BatchRow::new(2)], good, "both on one row"),
        (vec![dev(0), dev(1), dev(2)], DeviceBitmask::new(&masks, 3, words - 1), "stride below the row"),
        (vec![dev(0), dev(1), dev(2)], DeviceBitmask::new(&masks, 2, words), "fewer rows than the last device row"),
        (vec![dev(0), dev(1), dev(2)], DeviceBitmask::new(&masks, 3, words + 2), "too short for the stride"),
        (vec![dev(0), dev(1), dev(2)], DeviceBitmask::new(&masks, 3, usize::MAX / 2), "stride overflows"),
    ];
    for (rows, mask, what) in &cases {
        assert_eq!(field(s.upload_step_with_bitmask(rows, mask)), Field::Bitmask, "{what}");
    }
    if let Some(other) = second_gpu() {
        let foreign = other.stream().alloc_zeros::<i32>(3 * words).expect("alloc");
        let refused = s.upload_step_with_bitmask(&[dev(0)], &DeviceBitmask::new(&foreign, 1, words));
        assert_eq!(field(refused), Field::Bitmask, "another context's buffer");
    } else {
        println!("SKIP cross-context check (one CUDA device)");
    }
    // The two-row upload still stands; a valid device upload then samples three rows.
    s.enqueue_step(&DeviceLogits::f32(&f32s, 3, VOCAB)).expect("step");
    assert_eq!(s.read_outputs().expect("outputs").len(), 2);
    s.upload_step_with_bitmask(&[BatchRow::new(0), dev(1), BatchRow::new(2)], &DeviceBitmask::new(&masks, 3, words + 1)).expect("valid");
    s.enqueue_step(&DeviceLogits::f32(&f32s, 3, VOCAB)).expect("step");
    let out = s.read_outputs().expect("outputs");
    assert_eq!(out.len(), 3);
    // Row 1's device mask is all zeros: no token is allowed there, and only there.
    assert_eq!(out.iter().map(|o| o.status == sampler_kernels::status::STATUS_OK).collect::<Vec<_>>(), [true, false, true]);
}
