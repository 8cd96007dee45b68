//! GPU speculative verification against the CPU reference (docs/SEMANTICS.md §10): the same
//! `accepted`, tokens and status per request, bit for bit, and logprobs within 1e-3, on fresh
//! random heterogeneous batches: greedy and random requests, 0 to 8 drafts, with and without
//! draft-probability rows, every prologue feature on and off, vocab 32000, 128256 and 151936,
//! peaked and flat rows; eager calls through `Verifier::verify` and graph replays through the
//! device-level API. Drafts are drawn so that chains are accepted, partly accepted and
//! rejected at once; a CPU-only test checks that the generator gives that variety, so the
//! comparison is not trivially met. Under `SONIC_SANITIZE=1` the GPU tests run smaller batches
//! and fewer calls and replays (`sized`), with the same checks, coverage included.

use half::bf16;
use rand_xoshiro::rand_core::Rng;
use sampler_host::backend::{Backend, Batch, BatchRow};
use sampler_host::gpu::{DeviceBitmask, DeviceLogits, GpuSampler, GpuSamplerConfig};
use sampler_host::gpu_verify::{DeviceVerifyRequest, DraftProbs, GpuVerifier};
use sampler_host::logits::HostLogits;
use sampler_host::reference::{greedy_choice, process_row, CpuReference};
use sampler_host::settings::SamplingParams;
use sampler_host::verify::{Verifier, VerifyBatch, VerifyOutput, VerifyRequest};
use sampler_kernels::abi::TILE_TOKENS;
use sampler_kernels::verify::{chains_stop_early, group_shape};
use sampler_tests::{
    below, bitmask_row, compare_outputs, compare_verify_outputs, draft_q_row, fresh_rng, gpu_or_skip, logit_row, mixed_params, pitched_mask_words, prompt, sample_weights,
    sized, unit, RowShape,
};

/// Draft capacity of the verifiers under test.
const MAX_DRAFTS: usize = 8;

/// One request of a generated call.
struct ReqData {
    id: u64,
    drafts: Vec<u32>,
    q: Option<Vec<f32>>,
    mask: Option<Vec<i32>>,
}

/// One generated verification call: ragged logits rows and the requests.
struct Call {
    logits: Vec<f32>,
    rows: usize,
    requests: Vec<ReqData>,
}

impl Call {
    fn batch(&self, vocab: usize) -> VerifyBatch<'_> {
        VerifyBatch {
            logits: HostLogits::f32(&self.logits, self.rows, vocab).expect("host logits"),
            requests: self
                .requests
                .iter()
                .map(|r| VerifyRequest {
                    request: r.id,
                    drafts: &r.drafts,
                    draft_probs: r.q.as_deref(),
                    bitmask: r.mask.as_deref(),
                })
                .collect(),
        }
    }

    /// Draft-probability rows of every request that has them, in request order.
    fn q_rows(&self) -> Vec<f32> {
        self.requests.iter().filter_map(|r| r.q.as_deref()).flatten().copied().collect()
    }
}

/// Settings for verification: every feature of `mixed_params` except top logprobs (the GPU
/// verifier reports the chosen tokens' logprobs only).
fn verify_params(rng: &mut impl Rng, vocab: usize) -> SamplingParams {
    let mut p = mixed_params(rng, vocab);
    p.top_logprobs = 0;
    p
}

/// A fresh call for `ids`: 0..=max_n drafts each, peaked and flat rows, a third of the requests
/// masked (rarely a fully masked row), half of the random requests with q rows. Drafts follow
/// the target (argmax of the processed row with the chain's penalty state), the drafter's q, or
/// are uniform, so chains stop anywhere.
fn make_call(rng: &mut impl Rng, cpu: &CpuReference, ids: &[u64], vocab: usize, max_n: usize) -> Call {
    let words = vocab.div_ceil(32);
    let mut logits = Vec::new();
    let mut requests = Vec::new();
    let mut rows = 0;
    for &id in ids {
        let state = cpu.table().get(id).expect("registered");
        let greedy = state.params.is_greedy();
        let n = below(rng, max_n as u64 + 1) as usize;
        let masked = below(rng, 3) == 0;
        let with_q = !greedy && below(rng, 2) == 0 || greedy && below(rng, 6) == 0;
        let mut chain = state.clone();
        let (mut drafts, mut q, mut mask) = (Vec::new(), Vec::new(), Vec::new());
        for j in 0..=n {
            let shape = if below(rng, 10) < 7 { RowShape::Peaked } else { RowShape::Flat };
            let raw = logit_row(rng, shape, vocab);
            let m = if masked {
                match below(rng, 20) {
                    0 => vec![0i32; words],
                    1 => bitmask_row(rng, vocab, 0.001),
                    _ => {
                        let allow = 0.5 + 0.49 * unit(rng);
                        bitmask_row(rng, vocab, allow)
                    }
                }
            } else {
                Vec::new()
            };
            let x = process_row(&raw, &chain, masked.then_some(&m[..]));
            logits.extend_from_slice(&raw);
            mask.extend_from_slice(&m);
            if j == n {
                break;
            }
            let d = next_draft(rng, &x, with_q, vocab, &mut drafts, &mut q);
            let c = chain.output_counts.entry(d).or_insert(0);
            *c += 1;
        }
        rows += n + 1;
        requests.push(ReqData { id, drafts, q: with_q.then_some(q), mask: masked.then_some(mask) });
    }
    Call { logits, rows, requests }
}

/// The next draft of a chain whose target row is processed into `x`, appended to `drafts`
/// (and its q row to `q` when the request has them): the target's argmax, a draw from the
/// drafter's q, or a uniform token, so that chains are accepted, partly accepted and rejected.
fn next_draft(rng: &mut impl Rng, x: &[f32], with_q: bool, vocab: usize, drafts: &mut Vec<u32>, q: &mut Vec<f32>) -> u32 {
    let qr = with_q.then(|| draft_q_row(rng, x));
    let d = match below(rng, 8) {
        0..=4 => greedy_choice(x).unwrap_or_else(|| below(rng, vocab as u64) as u32),
        5 | 6 if qr.is_some() => sample_weights(rng, qr.as_deref().unwrap_or(&[])),
        _ => below(rng, vocab as u64) as u32,
    };
    drafts.push(d);
    if let Some(qr) = qr {
        q.extend_from_slice(&qr);
    }
    d
}

/// Registers `count` requests with mixed settings and prompts on every backend given.
fn register(rng: &mut impl Rng, vocab: usize, count: usize, backends: &mut [&mut dyn Backend]) -> Vec<u64> {
    for id in 0..count as u64 {
        let params = verify_params(rng, vocab);
        let prompt = prompt(rng, vocab);
        for b in backends.iter_mut() {
            b.add_request(id, params.clone(), &prompt).expect("add request");
        }
    }
    (0..count as u64).collect()
}

/// What a run of calls covered, so a test can insist that the comparison was not trivial.
#[derive(Default)]
struct Coverage {
    requests: usize,
    full_chains: usize,
    rejected: usize,
    accepted_drafts: usize,
    no_valid: usize,
    distinct_accepted: std::collections::BTreeSet<usize>,
}

impl Coverage {
    fn add(&mut self, call: &Call, outs: &[VerifyOutput]) {
        for (r, o) in call.requests.iter().zip(outs) {
            self.requests += 1;
            self.accepted_drafts += o.accepted;
            self.distinct_accepted.insert(o.accepted);
            if o.status != 0 {
                self.no_valid += 1;
            } else if o.accepted == r.drafts.len() {
                self.full_chains += 1;
            } else {
                self.rejected += 1;
            }
        }
    }

    fn assert_nontrivial(&self, label: &str) {
        eprintln!(
            "{label}: {} requests, {} full chains, {} rejected, {} drafts accepted, {} no-valid, accepted counts {:?}",
            self.requests, self.full_chains, self.rejected, self.accepted_drafts, self.no_valid, self.distinct_accepted
        );
        assert!(self.full_chains > 0 && self.rejected > 0, "{label}: chains neither all accepted nor all rejected");
        assert!(self.distinct_accepted.len() >= 3, "{label}: accepted counts barely vary");
    }
}

/// Compares one call on both sides; returns the number of mismatching requests.
fn check(label: &str, call: &Call, gpu: &[VerifyOutput], cpu: &[VerifyOutput], params: impl Fn(u64) -> String) -> usize {
    assert_eq!(gpu.len(), cpu.len(), "{label}: output count");
    let mut bad = 0;
    for (i, (g, c)) in gpu.iter().zip(cpu).enumerate() {
        if let Some(diff) = compare_verify_outputs(g, c) {
            bad += 1;
            if bad <= 5 {
                let r = &call.requests[i];
                eprintln!(
                    "{label} request {i} (n {}, q {}, mask {}): {diff}; drafts {:?}; {}",
                    r.drafts.len(),
                    r.q.is_some(),
                    r.mask.is_some(),
                    r.drafts,
                    params(r.id)
                );
            }
        }
    }
    bad
}

/// The CPU side alone: the generator must give varied chains, or the GPU comparison would
/// prove little; and a call of uniform drafts (`make_layout_call`) must stop at least three in
/// four chains at their first draft, so that the call after it waits for its chains' first rows
/// (`chains_stop_early`): the condition under which the two skip tests' lower bound on skipped
/// rows applies, which they get from such a first call. Runs without a GPU.
#[test]
fn generated_calls_give_varied_chains() {
    let mut rng = fresh_rng("generated_calls_give_varied_chains");
    let vocab = 4096;
    let mut cpu = CpuReference::new(vocab, 64).expect("cpu");
    let ids = register(&mut rng, vocab, 64, &mut [&mut cpu]);
    let mut cov = Coverage::default();
    for c in 0..3 {
        let call = make_call(&mut rng, &cpu, &ids, vocab, MAX_DRAFTS);
        let outs = cpu.verify(&call.batch(vocab)).expect("cpu verify");
        cov.add(&call, &outs);
        let uniform = make_layout_call(&mut rng, &cpu, &ids, vocab, false);
        let outs = cpu.verify(&uniform.batch(vocab)).expect("cpu verify");
        let (stopped, ran) = chains_counted(&uniform, &outs);
        assert!(chains_stop_early(stopped as u64 | (ran as u64) << 32), "uniform call {c}: {stopped} chains stopped at their first draft, {ran} ran on");
    }
    cov.assert_nontrivial("generator");
}

/// Heterogeneous batches through `Verifier::verify`, several calls in a row (penalty state and
/// steps carry over), then one plain step to check the state both sides left behind.
#[test]
fn gpu_verify_equals_reference_on_heterogeneous_batches() {
    const TEST: &str = "gpu_verify_equals_reference_on_heterogeneous_batches";
    let mut rng = fresh_rng(TEST);
    let mut total_bad = 0;
    let mut cov = Coverage::default();
    let full = [(32_000usize, 24usize, 4usize), (128_256, 12, 3), (151_936, 12, 3)];
    let reduced = [(32_000usize, 12usize, 3usize), (128_256, 6, 2), (151_936, 6, 2)];
    for &(vocab, batch, calls) in &sized(full, reduced) {
        let Some(device) = gpu_or_skip(TEST) else { return };
        let sampler = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
        let mut gpu = GpuVerifier::new(sampler, MAX_DRAFTS).expect("gpu verifier");
        let mut cpu = CpuReference::new(vocab, batch).expect("cpu");
        let ids = register(&mut rng, vocab, batch, &mut [&mut gpu, &mut cpu]);
        for c in 0..calls {
            // A random subset of the requests, in random order, each call.
            let mut subset: Vec<u64> = ids.iter().copied().filter(|_| below(&mut rng, 5) != 0).collect();
            for i in (1..subset.len()).rev() {
                subset.swap(i, below(&mut rng, i as u64 + 1) as usize);
            }
            let call = make_call(&mut rng, &cpu, &subset, vocab, MAX_DRAFTS);
            let batch_v = call.batch(vocab);
            let g = gpu.verify(&batch_v).expect("gpu verify");
            let c_out = cpu.verify(&batch_v).expect("cpu verify");
            let label = format!("V={vocab} call {c}");
            let params = |id: u64| format!("{:?}", cpu.table().get(id).map(|s| &s.params));
            total_bad += check(&label, &call, &g, &c_out, params);
            cov.add(&call, &c_out);
            for &id in &subset {
                assert_eq!(gpu.request_step(id).expect("step"), cpu.request_step(id).expect("step"), "{label}: step of {id}");
            }
        }
        // A plain step after verification reads the device counts the chains left.
        let rows: Vec<f32> = (0..batch).flat_map(|_| logit_row(&mut rng, RowShape::Peaked, vocab)).collect();
        let b = Batch { logits: HostLogits::f32(&rows, batch, vocab).expect("logits"), rows: ids.iter().map(|&id| BatchRow::new(id)).collect() };
        let g = gpu.sample(&b).expect("gpu sample");
        let c = cpu.sample(&b).expect("cpu sample");
        for (i, (g, c)) in g.iter().zip(&c).enumerate() {
            if let Some(diff) = compare_outputs(g, c) {
                total_bad += 1;
                eprintln!("V={vocab} plain step after verification, row {i}: {diff}");
            }
        }
    }
    cov.assert_nontrivial(TEST);
    assert_eq!(total_bad, 0, "{total_bad} requests differ from the reference");
}

/// The last call's chains as `GpuVerifier::last_chains` reads them (stopped at the first
/// draft, ran past it), and whether they make this call's rows wait
/// (`verify::chains_stop_early` of the same word the kernel reads).
fn last_chains_and_wait(gpu: &GpuVerifier) -> ((u32, u32), bool) {
    let (stopped, ran) = gpu.last_chains().expect("last chains");
    ((stopped, ran), chains_stop_early(stopped as u64 | (ran as u64) << 32))
}

/// Rows no chain reaches: those past each request's first row that did not accept its draft.
fn rows_past_stops(call: &Call, outs: &[VerifyOutput]) -> usize {
    call.requests.iter().zip(outs).map(|(r, o)| r.drafts.len() - o.accepted.min(r.drafts.len())).sum()
}

/// Rows that a wait for the first row must drop: the rows after a chain's first row when the
/// chain stops there (no draft accepted), and how many of them are among the first `n` items
/// of the call's position-major order, which a grid hands out before any row can wait (block
/// `b`, or group `i`, starts with item `b` or `i`). Where rows wait (`verify_rows` after a call
/// whose chains mostly stopped at their first draft), the call skips at least the first count
/// less the second.
fn rows_after_first_stops(call: &Call, outs: &[VerifyOutput], n: usize) -> (usize, usize) {
    let deepest = call.requests.iter().map(|r| r.drafts.len()).max().unwrap_or(0);
    let order = (0..=deepest).flat_map(|j| call.requests.iter().zip(outs).filter(move |(r, _)| j <= r.drafts.len()).map(move |(_, o)| j > 0 && o.accepted == 0));
    let all = call.requests.iter().zip(outs).filter(|(_, o)| o.accepted == 0).map(|(r, _)| r.drafts.len()).sum();
    (all, order.take(n).filter(|&after| after).count())
}

/// The call's chains as `verify_chains` counts them into `chain_stats`: requests with drafts
/// that stopped at their first draft (none accepted, a row error included), and those that ran
/// past it.
fn chains_counted(call: &Call, outs: &[VerifyOutput]) -> (u32, u32) {
    let with_drafts = || call.requests.iter().zip(outs).filter(|(r, _)| !r.drafts.is_empty());
    let stopped = with_drafts().filter(|(_, o)| o.accepted == 0).count() as u32;
    (stopped, with_drafts().count() as u32 - stopped)
}

/// More target rows than `verify_rows` has blocks: each block takes whole rows in turn,
/// position-major, and drops a row once an earlier row of its request is known to stop the
/// chain. The outputs must still equal the reference; every skipped row must lie past its
/// chain's stop; and at full size (about ten rows per block, most chains stopping early) rows
/// must have been skipped. Under the sanitizer (about two rows per block, and its own timing)
/// the skip count is only bounded, over one mixed call. At full size a call of uniform drafts
/// comes first (`make_layout_call`: every chain stops at its first draft), so that the mixed
/// call after it waits for its chains' first rows and its skips have a lower bound: mixed calls
/// alone stop about 0.7 chains for each that runs on, never the three `chains_stop_early` needs
/// (0 of 12 seeds on the CPU reference, session 59). `last_chains` must count what the
/// reference's outputs show.
#[test]
fn gpu_verify_whole_row_blocks_skip_rows_past_a_rejection() {
    const TEST: &str = "gpu_verify_whole_row_blocks_skip_rows_past_a_rejection";
    let mut rng = fresh_rng(TEST);
    let vocab = 32_000usize;
    let batch = sized(257usize, 64);
    let expect_skips = sized(true, false);
    let Some(device) = gpu_or_skip(TEST) else { return };
    let sampler = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
    let mut gpu = GpuVerifier::new(sampler, MAX_DRAFTS).expect("gpu verifier");
    let mut cpu = CpuReference::new(vocab, batch).expect("cpu");
    let ids = register(&mut rng, vocab, batch, &mut [&mut gpu, &mut cpu]);
    let (mut total_bad, mut bounded, mut expected) = (0, 0, (0u32, 0u32));
    let mut cov = Coverage::default();
    // true: a call of uniform drafts (`make_layout_call`), false: a mixed call.
    let calls: &[bool] = sized(&[true, false, false][..], &[false][..]);
    for (c, &uniform) in calls.iter().enumerate() {
        let call = if uniform { make_layout_call(&mut rng, &cpu, &ids, vocab, false) } else { make_call(&mut rng, &cpu, &ids, vocab, MAX_DRAFTS) };
        assert!(call.rows > gpu.rows_grid(), "call {c}: {} rows for a grid of {}", call.rows, gpu.rows_grid());
        let (last, waits) = last_chains_and_wait(&gpu);
        assert_eq!(last, expected, "call {c}: the last call's chains (stopped at the first draft, ran past it)");
        let batch_v = call.batch(vocab);
        let g = gpu.verify(&batch_v).expect("gpu verify");
        let skipped = gpu.skipped_rows().expect("skipped rows") as usize;
        let c_out = cpu.verify(&batch_v).expect("cpu verify");
        let unread = rows_past_stops(&call, &c_out);
        let (after_first, early) = rows_after_first_stops(&call, &c_out, gpu.rows_grid());
        eprintln!("call {c} ({}): {} rows, {skipped} skipped, {unread} past a stop ({after_first} after a first-row stop, {early} of them handed out at once), rows wait: {waits}", if uniform { "uniform drafts" } else { "mixed" }, call.rows);
        assert!(!expect_skips || skipped > 0, "call {c}: no row skipped of {unread} rows past a stop");
        assert!(skipped <= unread, "call {c}: {skipped} rows skipped, only {unread} lie past a stop");
        // (At full size only: the sanitizer's slow rows may outlast a wait's bound.)
        assert!(!expect_skips || !waits || skipped + early >= after_first, "call {c}: rows wait, yet {skipped} rows skipped of {after_first} after a first-row stop ({early} handed out at once)");
        bounded += (waits && !uniform && after_first > early) as usize;
        total_bad += check(&format!("call {c}"), &call, &g, &c_out, |id| format!("{:?}", cpu.table().get(id).map(|s| &s.params)));
        cov.add(&call, &c_out);
        expected = chains_counted(&call, &c_out);
    }
    assert!(!expect_skips || bounded >= 1, "no mixed call waited with rows after a first-row stop to skip");
    cov.assert_nontrivial(TEST);
    assert_eq!(total_bad, 0, "{total_bad} requests differ from the reference");
}

/// More target rows than half of `verify_rows`' grid, from at most half as many requests as
/// it has blocks, at least half of them random: groups of blocks take the rows in turn,
/// position-major, and a group drops a row when it finds, as it takes it, after its first pass
/// or (a top-k or top-p row) after its bin histogram, that an earlier row of the request
/// already stopped the chain. The
/// outputs must equal the reference, every skipped row must lie past its chain's stop, and at
/// full size rows must have been skipped (the sanitizer's timing only bounds the count). At
/// full size a call of uniform drafts comes first, so that the mixed call after it waits for
/// its chains' first rows, and the skips of a call that waits have a lower bound (as in
/// `gpu_verify_whole_row_blocks_skip_rows_past_a_rejection`; mixed calls alone never wait).
#[test]
fn gpu_verify_row_groups_take_rows_in_turn() {
    const TEST: &str = "gpu_verify_row_groups_take_rows_in_turn";
    let mut rng = fresh_rng(TEST);
    let vocab = sized(128_256usize, 32_000);
    let batch = 24usize;
    let expect_skips = sized(true, false);
    let Some(device) = gpu_or_skip(TEST) else { return };
    let sampler = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
    let mut gpu = GpuVerifier::new(sampler, MAX_DRAFTS).expect("gpu verifier");
    let mut cpu = CpuReference::new(vocab, batch).expect("cpu");
    let registered = register(&mut rng, vocab, batch, &mut [&mut gpu, &mut cpu]);
    // Groups take rows in turn only when at least half of the requests are random.
    let greedy = |id: &u64| cpu.table().get(*id).is_some_and(|s| s.params.is_greedy());
    let random = registered.iter().filter(|id| !greedy(id)).count();
    let ids: Vec<u64> = registered.iter().filter(|id| !greedy(id)).chain(registered.iter().filter(|id| greedy(id)).take(random)).copied().collect();
    let grid = gpu.rows_grid() as u32;
    let tiles = vocab.div_ceil(sampler_kernels::abi::TILE_TOKENS as usize) as u32;
    let (mut total_bad, mut skipped_total, mut bounded, mut expected) = (0, 0, 0, (0u32, 0u32));
    let mut cov = Coverage::default();
    // true: a call of uniform drafts (`make_layout_call`), false: a mixed call.
    let calls: &[bool] = sized(&[true, false, false, false][..], &[false][..]);
    for (c, &uniform) in calls.iter().enumerate() {
        let call = if uniform { make_layout_call(&mut rng, &cpu, &ids, vocab, false) } else { make_call(&mut rng, &cpu, &ids, vocab, MAX_DRAFTS) };
        let (last, early) = last_chains_and_wait(&gpu);
        assert_eq!(last, expected, "call {c}: the last call's chains (stopped at the first draft, ran past it)");
        let shape = sampler_kernels::verify::group_shape(grid, 0, call.rows as u32, ids.len() as u32, random as u32, tiles, early);
        assert!(shape.size > 1 && shape.stride > 0, "call {c}: {} rows, {} requests, grid {grid}: {shape:?}", call.rows, ids.len());
        let batch_v = call.batch(vocab);
        let g = gpu.verify(&batch_v).expect("gpu verify");
        let skipped = gpu.skipped_rows().expect("skipped rows") as usize;
        let c_out = cpu.verify(&batch_v).expect("cpu verify");
        let unread = rows_past_stops(&call, &c_out);
        let (after_first, first) = rows_after_first_stops(&call, &c_out, shape.stride as usize);
        eprintln!("call {c} ({}): {} rows in groups of {}, {skipped} skipped, {unread} past a stop ({after_first} after a first-row stop, {first} of them handed out at once), rows wait: {early}", if uniform { "uniform drafts" } else { "mixed" }, call.rows, shape.size);
        assert!(skipped <= unread, "call {c}: {skipped} rows skipped, only {unread} lie past a stop");
        assert!(!expect_skips || !early || skipped + first >= after_first, "call {c}: rows wait, yet {skipped} rows skipped of {after_first} after a first-row stop ({first} handed out at once)");
        bounded += (early && !uniform && after_first > first) as usize;
        skipped_total += skipped;
        total_bad += check(&format!("call {c}"), &call, &g, &c_out, |id| format!("{:?}", cpu.table().get(id).map(|s| &s.params)));
        cov.add(&call, &c_out);
        expected = chains_counted(&call, &c_out);
    }
    assert!(!expect_skips || skipped_total > 0, "no row skipped in any call");
    assert!(!expect_skips || bounded >= 1, "no mixed call waited with rows after a first-row stop to skip");
    cov.assert_nontrivial(TEST);
    assert_eq!(total_bad, 0, "{total_bad} requests differ from the reference");
}

/// Drafts for `ids` (4 to 7 each) on peaked rows: uniform random tokens without q rows, which
/// a chain rejects at once, or (`accepted`) tokens drawn from q rows near each processed row,
/// which it mostly accepts. The chain's penalty state counts its earlier drafts.
fn make_layout_call(rng: &mut impl Rng, cpu: &CpuReference, ids: &[u64], vocab: usize, accepted: bool) -> Call {
    let (mut logits, mut requests, mut rows) = (Vec::new(), Vec::new(), 0);
    for &id in ids {
        let mut chain = cpu.table().get(id).expect("registered").clone();
        let n = 4 + below(rng, 4) as usize;
        let (mut drafts, mut q) = (Vec::new(), Vec::new());
        for j in 0..=n {
            let raw = logit_row(rng, RowShape::Peaked, vocab);
            let x = process_row(&raw, &chain, None);
            logits.extend_from_slice(&raw);
            if j == n {
                break;
            }
            let d = if accepted {
                let qr = draft_q_row(rng, &x);
                let d = sample_weights(rng, &qr);
                q.extend_from_slice(&qr);
                d
            } else {
                below(rng, vocab as u64) as u32
            };
            drafts.push(d);
            *chain.output_counts.entry(d).or_insert(0) += 1;
        }
        rows += n + 1;
        requests.push(ReqData { id, drafts, q: accepted.then_some(q), mask: None });
    }
    Call { logits, rows, requests }
}

/// Registers requests `0..batch` on both backends with `verify_params`' settings, a greedy
/// draw turned random (T 0.7, its own seed): the layouts that follow the last call's chains
/// need at least half the requests random. Returns the ids.
fn register_random(rng: &mut impl Rng, vocab: usize, batch: usize, gpu: &mut GpuVerifier, cpu: &mut CpuReference) -> Vec<u64> {
    for id in 0..batch as u64 {
        let mut params = verify_params(rng, vocab);
        if params.is_greedy() {
            params.temperature = 0.7;
            params.seed = rng.next_u64();
        }
        let prompt = prompt(rng, vocab);
        for b in [&mut *gpu as &mut dyn Backend, &mut *cpu] {
            b.add_request(id, params.clone(), &prompt).expect("add request");
        }
    }
    (0..batch as u64).collect()
}

/// `verify_rows`' layout follows the last call's chains (`verify::chains_stop_early`). Eight
/// random requests with mixed settings, 40 to 64 rows (at most half the grid, at most 3 blocks
/// a row in one round against 13 a request: `verify::IN_TURN_GAIN`): a call after
/// one whose chains stopped at their first draft (uniform random drafts) has its rows taken by
/// groups in turn, a call after one whose drafts were mostly accepted (drawn from q rows near
/// the target) takes one round. Calls: rejected, rejected, accepted, rejected, so the
/// in-turn layout also meets chains that run on. `last_chains` must count what the
/// reference's outputs show, the layouts it implies must include both, and every call's
/// outputs must equal the reference.
#[test]
fn gpu_verify_layout_follows_the_last_calls_chains() {
    const TEST: &str = "gpu_verify_layout_follows_the_last_calls_chains";
    let mut rng = fresh_rng(TEST);
    let (vocab, batch) = (50_257usize, 8usize);
    let Some(device) = gpu_or_skip(TEST) else { return };
    let sampler = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
    let mut gpu = GpuVerifier::new(sampler, MAX_DRAFTS).expect("gpu verifier");
    let mut cpu = CpuReference::new(vocab, batch).expect("cpu");
    let ids = register_random(&mut rng, vocab, batch, &mut gpu, &mut cpu);
    let (grid, tiles) = (gpu.rows_grid() as u32, vocab.div_ceil(TILE_TOKENS as usize) as u32);
    let mut expected = (0u32, 0u32);
    let (mut in_turn, mut one_round, mut bounded, mut total_bad) = (0, 0, 0, 0);
    for (c, accepted) in [false, false, true, false].into_iter().enumerate() {
        let call = make_layout_call(&mut rng, &cpu, &ids, vocab, accepted);
        let (last, early) = last_chains_and_wait(&gpu);
        assert_eq!(last, expected, "call {c}: the last call's chains (stopped at the first draft, ran past it)");
        let shape = group_shape(grid, 0, call.rows as u32, batch as u32, batch as u32, tiles, early);
        assert!(call.rows as u32 * 2 <= grid && shape.size > 1, "call {c}: {} rows on {grid} blocks: {shape:?}", call.rows);
        if shape.stride > 0 {
            in_turn += 1;
        } else {
            one_round += 1;
        }
        let batch_v = call.batch(vocab);
        let g = gpu.verify(&batch_v).expect("gpu verify");
        let skipped = gpu.skipped_rows().expect("skipped rows") as usize;
        let c_out = cpu.verify(&batch_v).expect("cpu verify");
        eprintln!("call {c} (drafts {}): {} rows, last chains {last:?}, groups of {} {}, {skipped} skipped", if accepted { "accepted" } else { "rejected" }, call.rows, shape.size, if shape.stride > 0 { "in turn" } else { "in one round" });
        // Groups in turn wait for their chains' first rows (the layout needs `early`): every
        // row after a first-row stop is dropped but those the groups start with.
        let unread = rows_past_stops(&call, &c_out);
        let (after_first, first) = if shape.stride > 0 { rows_after_first_stops(&call, &c_out, shape.stride as usize) } else { (0, 0) };
        assert!(skipped <= unread && (sized(false, true) || skipped + first >= after_first), "call {c}: {skipped} rows skipped of {unread} past a stop ({after_first} after a first-row stop, {first} of them handed out at once)");
        bounded += (after_first > first) as usize;
        total_bad += check(&format!("call {c}"), &call, &g, &c_out, |id| format!("{:?}", cpu.table().get(id).map(|s| &s.params)));
        assert!(c_out.iter().all(|o| o.status == 0), "call {c}: a request without a valid token");
        expected = chains_counted(&call, &c_out);
    }
    assert_eq!(gpu.last_chains().expect("last chains"), expected, "after the last call");
    assert!(in_turn > 0 && one_round > 0, "layouts: {in_turn} calls in turn, {one_round} in one round");
    assert!(bounded > 0, "no call in turn had rows after a first-row stop to skip");
    assert_eq!(total_bad, 0, "{total_bad} requests differ from the reference");
}

/// Blocks alone (more requests than the grid has blocks) wait for their chains' first rows
/// after a call whose chains mostly stopped at their first draft. Random requests; calls
/// rejected, rejected, accepted, rejected (`make_layout_call`): in calls 1 and 2 the rows
/// wait, so every row after a first-row stop is dropped but those the blocks start with (none
/// here: the grid's first items are every request's first row), and in call 2 the chains run
/// on while rows wait. Every call's outputs must equal the reference.
#[test]
fn gpu_verify_whole_row_blocks_wait_for_first_rows() {
    const TEST: &str = "gpu_verify_whole_row_blocks_wait_for_first_rows";
    let mut rng = fresh_rng(TEST);
    let (vocab, batch) = (sized(32_000usize, 8_000), sized(257usize, 140));
    let Some(device) = gpu_or_skip(TEST) else { return };
    let sampler = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
    let mut gpu = GpuVerifier::new(sampler, MAX_DRAFTS).expect("gpu verifier");
    let mut cpu = CpuReference::new(vocab, batch).expect("cpu");
    let ids = register_random(&mut rng, vocab, batch, &mut gpu, &mut cpu);
    let (grid, tiles) = (gpu.rows_grid() as u32, vocab.div_ceil(TILE_TOKENS as usize) as u32);
    assert!(batch as u32 > grid, "{batch} requests for a grid of {grid}");
    let (mut waited, mut waited_on_running_chains, mut bounded, mut total_bad) = (0, 0, 0, 0);
    for (c, accepted) in [false, false, true, false].into_iter().enumerate() {
        let call = make_layout_call(&mut rng, &cpu, &ids, vocab, accepted);
        let (last, waits) = last_chains_and_wait(&gpu);
        let shape = group_shape(grid, 0, call.rows as u32, batch as u32, batch as u32, tiles, waits);
        assert_eq!(shape.size, 1, "call {c}: {} rows on {grid} blocks: {shape:?}", call.rows);
        let batch_v = call.batch(vocab);
        let g = gpu.verify(&batch_v).expect("gpu verify");
        let skipped = gpu.skipped_rows().expect("skipped rows") as usize;
        let c_out = cpu.verify(&batch_v).expect("cpu verify");
        let unread = rows_past_stops(&call, &c_out);
        let (after_first, first) = rows_after_first_stops(&call, &c_out, grid as usize);
        let run_on = c_out.iter().filter(|o| o.accepted > 0).count();
        eprintln!("call {c} (drafts {}): {} rows, last chains {:?}, rows wait: {waits}, {skipped} skipped of {unread} past a stop ({after_first} after a first-row stop, {first} of them handed out at once), {run_on} chains ran on", if accepted { "accepted" } else { "rejected" }, call.rows, last);
        assert!(skipped <= unread, "call {c}: {skipped} rows skipped, only {unread} lie past a stop");
        if waits {
            waited += 1;
            waited_on_running_chains += (run_on > 0) as usize;
            // Calls whose lower bound below says something (rows to skip beyond the first items).
            bounded += (after_first > first) as usize;
            // (At full size only: the sanitizer's slow rows may outlast a wait's bound.)
            assert!(sized(false, true) || skipped + first >= after_first, "call {c}: rows wait, yet {skipped} rows skipped of {after_first} after a first-row stop ({first} handed out at once)");
        }
        total_bad += check(&format!("call {c}"), &call, &g, &c_out, |id| format!("{:?}", cpu.table().get(id).map(|s| &s.params)));
    }
    assert!(waited >= 2 && waited_on_running_chains >= 1, "{waited} calls waited, {waited_on_running_chains} of them on chains that ran on");
    assert!(bounded >= 1, "no call that waited had rows after a first-row stop to skip");
    assert_eq!(total_bad, 0, "{total_bad} requests differ from the reference");
}

/// More requests than `verify_draws` lists at once (a window of 4096 requests, the bias table's
/// shared memory): every block lists the drawing rows window by window and takes items across
/// windows from one counter. Small rows (two tiles) keep the call cheap; the draws of the
/// second window's requests must equal the reference like the first's.
#[test]
fn gpu_verify_draws_more_requests_than_one_list_window() {
    const TEST: &str = "gpu_verify_draws_more_requests_than_one_list_window";
    let mut rng = fresh_rng(TEST);
    let vocab = 8_000usize;
    let batch = 4_200usize;
    let Some(device) = gpu_or_skip(TEST) else { return };
    let sampler = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
    let mut gpu = GpuVerifier::new(sampler, MAX_DRAFTS).expect("gpu verifier");
    let mut cpu = CpuReference::new(vocab, batch).expect("cpu");
    let ids = register(&mut rng, vocab, batch, &mut [&mut gpu, &mut cpu]);
    let call = make_call(&mut rng, &cpu, &ids, vocab, 2);
    let batch_v = call.batch(vocab);
    let g = gpu.verify(&batch_v).expect("gpu verify");
    let c_out = cpu.verify(&batch_v).expect("cpu verify");
    let mut cov = Coverage::default();
    cov.add(&call, &c_out);
    cov.assert_nontrivial(TEST);
    // Requests past the first window that stop at a row left to a draw (a random request that
    // rejects, or reaches its bonus row): the path this test is for.
    let late_draws = call.requests.iter().zip(&c_out).skip(4096).filter(|(r, o)| o.status == 0 && !cpu.table().get(r.id).is_some_and(|s| s.params.is_greedy())).count();
    assert!(late_draws > 0, "no request past the first window draws");
    let bad = check("call", &call, &g, &c_out, |id| format!("{:?}", cpu.table().get(id).map(|s| &s.params)));
    assert_eq!(bad, 0, "{bad} requests differ from the reference");
}

/// Greedy and plain random requests (some with top-k) with long accepted chains and zero-draft
/// requests: the bonus path and the all-accepted path on every vocab size, f32 and bf16 logits.
#[test]
fn gpu_verify_full_chains_and_zero_drafts() {
    const TEST: &str = "gpu_verify_full_chains_and_zero_drafts";
    let mut rng = fresh_rng(TEST);
    let mut total_bad = 0;
    for &vocab in &[32_000usize, 128_256, 151_936] {
        let Some(device) = gpu_or_skip(TEST) else { return };
        // Reduced: 6 requests still hold greedy and random, with and without top-k, with and
        // without drafts.
        let batch = sized(8, 6);
        let sampler = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
        let mut gpu = GpuVerifier::new(sampler, MAX_DRAFTS).expect("gpu verifier");
        let mut cpu = CpuReference::new(vocab, batch).expect("cpu");
        for id in 0..batch as u64 {
            let params = if id % 2 == 0 {
                SamplingParams::greedy()
            } else {
                SamplingParams::random(0.5 + unit(&mut rng) as f32, rng.next_u64()).with_top_k(if id % 4 == 1 { 50 } else { 0 })
            };
            gpu.add_request(id, params.clone(), &[]).expect("add");
            cpu.add_request(id, params, &[]).expect("add");
        }
        let ids: Vec<u64> = (0..batch as u64).collect();
        for c in 0..2 {
            let mut call = make_call(&mut rng, &cpu, &ids, vocab, MAX_DRAFTS);
            // Requests 0 and 1 bring no drafts at all: verification is one plain sample.
            let mut offset = 0;
            for r in &mut call.requests {
                let n = r.drafts.len();
                if r.id < 2 && n > 0 {
                    call.logits.drain((offset + 1) * vocab..(offset + n + 1) * vocab);
                    r.drafts.clear();
                    r.q = None;
                    r.mask = r.mask.as_ref().map(|m| m[..vocab.div_ceil(32)].to_vec());
                }
                offset += r.drafts.len() + 1;
            }
            call.rows = offset;
            // The second call's logits are bf16 (widened exactly on both sides).
            let halves: Vec<bf16> = call.logits.iter().map(|&v| bf16::from_f32(v)).collect();
            let mut batch_v = call.batch(vocab);
            if c == 1 {
                batch_v.logits = HostLogits::bf16(&halves, call.rows, vocab).expect("bf16 logits");
            }
            let g = gpu.verify(&batch_v).expect("gpu verify");
            let c_out = cpu.verify(&batch_v).expect("cpu verify");
            let label = format!("V={vocab} call {c}{}", if c == 1 { " bf16" } else { "" });
            total_bad += check(&label, &call, &g, &c_out, |id| format!("request {id}"));
        }
    }
    assert_eq!(total_bad, 0, "{total_bad} requests differ from the reference");
}

/// Chains that emit one token again and again: every target row of a request the same row,
/// whose token `t` stands far above the rest, each draft `t`, so every draft is accepted and the
/// bonus is `t` too. `verify_chains` counts each distinct token of eight rows once, with its
/// multiplicity, so chains of 0 to 8 drafts (one crossing a batch of eight rows) must leave the
/// reference's penalty state. A plain step after the call reads it: each row holds the repeated
/// token and a rival 0.15 above the token's penalized value, so one count too few (0.3 less
/// penalty) makes the token win, and one too many moves the rival's log-probability by about
/// 0.1, far past the tolerance.
#[test]
fn gpu_verify_repeated_tokens_are_counted_each_time() {
    const TEST: &str = "gpu_verify_repeated_tokens_are_counted_each_time";
    let mut rng = fresh_rng(TEST);
    let (vocab, batch) = (32_000usize, MAX_DRAFTS + 1);
    let Some(device) = gpu_or_skip(TEST) else { return };
    let sampler = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
    let mut gpu = GpuVerifier::new(sampler, MAX_DRAFTS).expect("gpu verifier");
    let mut cpu = CpuReference::new(vocab, batch).expect("cpu");
    let mut params = SamplingParams::greedy();
    (params.repetition_penalty, params.frequency_penalty, params.presence_penalty) = (1.2, 0.3, 0.1);
    params.logprobs = true;
    let (mut logits, mut requests, mut chosen) = (Vec::new(), Vec::new(), Vec::new());
    for id in 0..batch {
        gpu.add_request(id as u64, params.clone(), &[]).expect("add");
        cpu.add_request(id as u64, params.clone(), &[]).expect("add");
        // 40 / 1.2 less eight counts' penalties stays above a peaked row's other values.
        let t = below(&mut rng, vocab as u64) as u32;
        let mut row = logit_row(&mut rng, RowShape::Peaked, vocab);
        row[t as usize] = 40.0;
        for _ in 0..=id {
            logits.extend_from_slice(&row);
        }
        requests.push(ReqData { id: id as u64, drafts: vec![t; id], q: None, mask: None });
        chosen.push(t);
    }
    let rows = logits.len() / vocab;
    let call = Call { logits, rows, requests };
    let batch_v = call.batch(vocab);
    let g = gpu.verify(&batch_v).expect("gpu verify");
    let c_out = cpu.verify(&batch_v).expect("cpu verify");
    for (id, o) in c_out.iter().enumerate() {
        assert_eq!(o.accepted, id, "request {id}: the reference did not accept every draft");
    }
    let mut total_bad = check("call", &call, &g, &c_out, |id| format!("request {id}"));
    // The token at 32 (26.6 less its penalties), and a rival (never emitted, so unpenalized)
    // 0.15 above its penalized value under the reference's counts. Every other value is held a
    // whole unit below the token's: a peaked row's token boosted twice reached 24.3, above the
    // penalized 23.9 of the request with eight drafts (SONIC_TEST_SEED=1796216908477607026), and
    // the reference picked it instead of the rival.
    let mut next = Vec::new();
    let mut rivals = Vec::new();
    for (id, &t) in chosen.iter().enumerate() {
        let mut row = logit_row(&mut rng, RowShape::Peaked, vocab);
        row[t as usize] = 32.0;
        let state = cpu.table().get(id as u64).expect("registered");
        let penalized = process_row(&row, state, None)[t as usize];
        for (j, v) in row.iter_mut().enumerate() {
            if j != t as usize {
                *v = v.min(penalized - 1.0);
            }
        }
        let rival = (t as usize + 1 + below(&mut rng, vocab as u64 - 1) as usize) % vocab;
        row[rival] = penalized + 0.15;
        next.extend_from_slice(&row);
        rivals.push(rival as i32);
    }
    let b = Batch { logits: HostLogits::f32(&next, batch, vocab).expect("logits"), rows: (0..batch as u64).map(BatchRow::new).collect() };
    let gs = gpu.sample(&b).expect("gpu sample");
    let cs = cpu.sample(&b).expect("cpu sample");
    for (i, (g, c)) in gs.iter().zip(&cs).enumerate() {
        assert_eq!(c.token, rivals[i], "request {i}: the reference did not pick the rival");
        if let Some(diff) = compare_outputs(g, c) {
            total_bad += 1;
            eprintln!("plain step after verification, request {i}: {diff}");
        }
    }
    assert_eq!(total_bad, 0, "{total_bad} requests differ from the reference");
}

/// A row for [`gpu_verify_plain_rows_with_special_values`]: peaked, flat, peaked with one to
/// three `+inf` tokens (an infinite row), or peaked around ±2·10^7 or ±6·10^6, where the mass
/// bands are unusable (`|ceiling| ≥ 2^22`) and the mass is added token by token. Tempered at
/// 0.7 to 1.3, the first stay at or above `2^23`, where f32 values are integers, and the
/// second lie mostly between `2^22` and `2^23`, where they are halves (the log-probabilities
/// there were a few tenths of a nat low until session 46, when `soft_ceil` became `ceil` for
/// every finite value).
fn special_row(rng: &mut impl Rng, vocab: usize) -> Vec<f32> {
    match below(rng, 6) {
        0 => logit_row(rng, RowShape::Flat, vocab),
        1 => {
            let mut row = logit_row(rng, RowShape::Peaked, vocab);
            for _ in 0..1 + below(rng, 3) {
                row[below(rng, vocab as u64) as usize] = f32::INFINITY;
            }
            row
        }
        2 => {
            let centre = [2.0e7, -2.0e7, 6.0e6, -6.0e6][below(rng, 4) as usize];
            logit_row(rng, RowShape::Peaked, vocab).iter().map(|&v| centre + v).collect()
        }
        _ => logit_row(rng, RowShape::Peaked, vocab),
    }
}

/// A call of plain requests (no penalty, bias or mask: rows whose prologue is only the
/// temperature) over [`special_row`]s: drafts follow the target's argmax, the drafter's q or
/// are uniform; half the requests have q rows. `half_rows` counts the requests that want
/// log-probabilities and whose first row (always decided) has its processed maximum between
/// `2^22` and `2^23` in magnitude, where f32 values are halves.
fn make_plain_call(rng: &mut impl Rng, cpu: &CpuReference, ids: &[u64], vocab: usize, max_n: usize, half_rows: &mut usize) -> Call {
    let mut logits = Vec::new();
    let mut requests = Vec::new();
    let mut rows = 0;
    for &id in ids {
        let state = cpu.table().get(id).expect("registered");
        let n = below(rng, max_n as u64 + 1) as usize;
        let with_q = !state.params.is_greedy() && below(rng, 2) == 0;
        let (mut drafts, mut q) = (Vec::new(), Vec::new());
        for j in 0..=n {
            let raw = special_row(rng, vocab);
            let x = process_row(&raw, state, None);
            if j == 0 && state.params.logprobs {
                let top = x.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
                let peak = if top.is_finite() { top.abs() } else { 0.0 };
                *half_rows += (4_194_304.0..8_388_608.0).contains(&peak) as usize;
            }
            logits.extend_from_slice(&raw);
            if j == n {
                break;
            }
            next_draft(rng, &x, with_q, vocab, &mut drafts, &mut q);
        }
        rows += n + 1;
        requests.push(ReqData { id, drafts, q: with_q.then_some(q), mask: None });
    }
    Call { logits, rows, requests }
}

/// Plain random requests that truncate nothing, and greedy ones with log-probabilities, over
/// peaked, flat, infinite and huge rows: a finite row with usable bands adds up its mass in
/// its first pass (band sums under running ceilings), an infinite row or one whose bands are
/// unusable adds it token by token (`count_masses`), and a row where the chain stops draws
/// from the cache (`verify_draws`). Temperatures 0.7, 1 and 1.3; f32 and bf16 logits; every
/// layout of `verify_rows` (`verify::group_shape`): one-round groups (3 requests), groups
/// taking rows in turn (24) and blocks alone (96), each asserted at full size, as are first
/// rows with log-probabilities whose values are halves (between `2^22` and `2^23`). The
/// outputs must equal the reference, and chains must both stop early (draws) and run to the
/// end.
#[test]
fn gpu_verify_plain_rows_with_special_values() {
    const TEST: &str = "gpu_verify_plain_rows_with_special_values";
    let mut rng = fresh_rng(TEST);
    let mut total_bad = 0;
    let mut cov = Coverage::default();
    let cases = sized([(50_257usize, 3usize), (32_000, 96), (151_936, 24)], [(50_257, 3), (32_000, 72), (151_936, 4)]);
    // Calls seen per layout: one-round groups, groups taking rows in turn, blocks alone.
    let mut layouts = [0usize; 3];
    let mut half_rows = 0;
    for &(vocab, batch) in &cases {
        let Some(device) = gpu_or_skip(TEST) else { return };
        let sampler = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
        let mut gpu = GpuVerifier::new(sampler, MAX_DRAFTS).expect("gpu verifier");
        let mut cpu = CpuReference::new(vocab, batch).expect("cpu");
        for id in 0..batch as u64 {
            let mut params = match below(&mut rng, 8) {
                0 => SamplingParams::greedy(),
                k => SamplingParams::random([0.7, 1.0, 1.3][k as usize % 3], rng.next_u64()),
            };
            params.logprobs = params.is_greedy() || below(&mut rng, 3) == 0;
            let prompt = prompt(&mut rng, vocab);
            for b in [&mut gpu as &mut dyn Backend, &mut cpu] {
                b.add_request(id, params.clone(), &prompt).expect("add request");
            }
        }
        let ids: Vec<u64> = (0..batch as u64).collect();
        for c in 0..sized(3, 2) {
            let call = make_plain_call(&mut rng, &cpu, &ids, vocab, MAX_DRAFTS, &mut half_rows);
            let mut batch_v = call.batch(vocab);
            // Every second call's logits are bf16 (widened exactly on both sides).
            let halves: Vec<bf16> = call.logits.iter().map(|&v| bf16::from_f32(v)).collect();
            if c % 2 == 1 {
                batch_v.logits = HostLogits::bf16(&halves, call.rows, vocab).expect("bf16 logits");
            }
            let random = call.requests.iter().filter(|r| cpu.table().get(r.id).is_some_and(|s| !s.params.is_greedy())).count();
            let tiles = vocab.div_ceil(TILE_TOKENS as usize) as u32;
            let (_, early) = last_chains_and_wait(&gpu);
            let shape = group_shape(gpu.rows_grid() as u32, 0, call.rows as u32, call.requests.len() as u32, random as u32, tiles, early);
            layouts[if shape.size == 1 { 2 } else if shape.stride > 0 { 1 } else { 0 }] += 1;
            let g = gpu.verify(&batch_v).expect("gpu verify");
            let c_out = cpu.verify(&batch_v).expect("cpu verify");
            let label = format!("V={vocab} B={batch} call {c}{}", if c % 2 == 1 { " bf16" } else { "" });
            total_bad += check(&label, &call, &g, &c_out, |id| format!("{:?}", cpu.table().get(id).map(|s| &s.params)));
            cov.add(&call, &c_out);
        }
    }
    eprintln!("{TEST}: calls per layout (one round, in turn, alone): {layouts:?}; first rows of halves with log-probabilities: {half_rows}");
    assert!(!sized(true, false) || layouts.iter().all(|&n| n > 0), "layouts not all run: {layouts:?}");
    assert!(!sized(true, false) || half_rows > 0, "no first row between 2^22 and 2^23 with log-probabilities");
    cov.assert_nontrivial(TEST);
    assert_eq!(total_bad, 0, "{total_bad} requests differ from the reference");
}

/// The device-level API in a CUDA graph: captured once for the largest call, replayed with new
/// logits, new draft rows, new drafts, new request subsets and advancing seeds/steps; and the
/// outputs on the device (`GpuVerifier::device_outputs`) equal what `read_verify_outputs` reads,
/// copied by a consumer graph replayed after the call with no host read between; every other
/// call takes its bitmasks from the device (`upload_verify_with_bitmask`).
#[test]
fn gpu_verify_graph_replays_equal_reference() {
    const TEST: &str = "gpu_verify_graph_replays_equal_reference";
    let mut rng = fresh_rng(TEST);
    let (vocab, batch) = (32_000usize, sized(16usize, 12));
    let Some(device) = gpu_or_skip(TEST) else { return };
    let sampler = GpuSampler::new(device, GpuSamplerConfig::new(vocab, batch)).expect("gpu sampler");
    let mut gpu = GpuVerifier::new(sampler, MAX_DRAFTS).expect("gpu verifier");
    let mut cpu = CpuReference::new(vocab, batch).expect("cpu");
    let ids = register(&mut rng, vocab, batch, &mut [&mut gpu, &mut cpu]);
    let max_rows = gpu.max_rows();
    let stream = gpu.device().stream().clone();
    let mut logits_dev = stream.alloc_zeros::<f32>(max_rows * vocab).expect("alloc logits");
    let mut q_dev = stream.alloc_zeros::<f32>(batch * MAX_DRAFTS * vocab).expect("alloc q");
    // Capture with an empty upload: the graph reads the header at replay time.
    gpu.upload_verify(&[]).expect("empty upload");
    // SAFETY: both buffers live until the end of the test, after the last replay.
    let graph = unsafe {
        gpu.capture_verify(
            &DeviceLogits::f32(&logits_dev, max_rows, vocab),
            Some(&DraftProbs::f32(&q_dev, batch * MAX_DRAFTS, vocab)),
            max_rows,
        )
    }
    .expect("capture");
    // The caller's next-step buffers, filled on the device from the call's outputs by a graph
    // of its own replayed after the call in stream order: no host read between.
    let width = MAX_DRAFTS + 1;
    let mut next_tokens = stream.alloc_zeros::<i32>(batch * width).expect("alloc");
    let mut next_accepted = stream.alloc_zeros::<u32>(batch).expect("alloc");
    let mut next_status = stream.alloc_zeros::<u32>(batch).expect("alloc");
    let consumer = {
        let outs = gpu.device_outputs().expect("device outputs");
        assert_eq!(outs.width, width);
        let copy_err = |e: cudarc::driver::DriverError| sampler_host::Error::Cuda { op: "copying the outputs", detail: e.to_string() };
        gpu.device()
            .capture(|| {
                stream.memcpy_dtod(&outs.tokens.slice(0..batch * width), &mut next_tokens).map_err(copy_err)?;
                stream.memcpy_dtod(&outs.accepted.slice(0..batch), &mut next_accepted).map_err(copy_err)?;
                stream.memcpy_dtod(&outs.status.slice(0..batch), &mut next_status).map_err(copy_err)
            })
            .expect("capture the consumer")
    };
    let mask_words = vocab.div_ceil(32);
    let mask_stride = mask_words + 3;
    let mut masks_dev = stream.alloc_zeros::<i32>(max_rows * mask_stride).expect("alloc masks");
    let mut device_mask_rows = 0;
    let mut total_bad = 0;
    let mut cov = Coverage::default();
    for replay in 0..sized(6, 4) {
        let subset: Vec<u64> = ids.iter().copied().filter(|_| below(&mut rng, 4) != 0).collect();
        let call = make_call(&mut rng, &cpu, &subset, vocab, MAX_DRAFTS);
        stream.memcpy_htod(&call.logits, &mut logits_dev.slice_mut(0..call.logits.len())).expect("logits to device");
        let q = call.q_rows();
        if !q.is_empty() {
            stream.memcpy_htod(&q, &mut q_dev.slice_mut(0..q.len())).expect("q to device");
        }
        // Every other call takes its bitmasks from a device buffer of padded rows, one for
        // each target row; the rows of requests without a mask are all zeros (no token
        // allowed), so a row that read one it did not ask for would differ.
        let on_device = replay % 2 == 0;
        let requests: Vec<DeviceVerifyRequest<'_>> = call
            .requests
            .iter()
            .map(|r| DeviceVerifyRequest {
                request: r.id,
                drafts: &r.drafts,
                has_draft_probs: r.q.is_some(),
                bitmask: if on_device { None } else { r.mask.as_deref() },
                device_bitmask: on_device && r.mask.is_some(),
            })
            .collect();
        if on_device {
            // Target row by target row, as the logits are laid out.
            let rows: Vec<Option<&[i32]>> = call
                .requests
                .iter()
                .flat_map(|r| (0..=r.drafts.len()).map(move |j| r.mask.as_deref().map(|m| &m[j * mask_words..(j + 1) * mask_words])))
                .collect();
            device_mask_rows += rows.iter().filter(|m| m.is_some()).count();
            let words = pitched_mask_words(&rows, mask_stride);
            stream.memcpy_htod(&words, &mut masks_dev.slice_mut(..words.len())).expect("masks to the device");
        }
        // Poisoned, so that a copy that did not run (or read stale requests) shows.
        stream.memcpy_htod(&vec![i32::MIN; batch * width], &mut next_tokens).expect("poison");
        stream.memcpy_htod(&vec![u32::MAX; batch], &mut next_accepted).expect("poison");
        stream.memcpy_htod(&vec![u32::MAX; batch], &mut next_status).expect("poison");
        if on_device {
            gpu.upload_verify_with_bitmask(&requests, &DeviceBitmask::new(&masks_dev, max_rows, mask_stride)).expect("upload");
        } else {
            gpu.upload_verify(&requests).expect("upload");
        }
        gpu.replay(&graph).expect("replay");
        consumer.launch().expect("replay the consumer");
        let g = gpu.read_verify_outputs().expect("read");
        let tokens = stream.clone_dtoh(&next_tokens).expect("read");
        let accepted = stream.clone_dtoh(&next_accepted).expect("read");
        let status = stream.clone_dtoh(&next_status).expect("read");
        for (i, out) in g.iter().enumerate() {
            // Each request's slots: its emitted tokens, then −1 to the width.
            let mut slots = out.tokens.clone();
            slots.resize(width, -1);
            let copied = (&tokens[i * width..(i + 1) * width], accepted[i] as usize, status[i]);
            assert_eq!(copied, (&slots[..], out.accepted, out.status), "replay {replay} request {i}: device outputs differ from read_verify_outputs");
        }
        let c_out = cpu.verify(&call.batch(vocab)).expect("cpu verify");
        let label = format!("replay {replay}");
        total_bad += check(&label, &call, &g, &c_out, |id| format!("request {id}"));
        cov.add(&call, &c_out);
    }
    cov.assert_nontrivial(TEST);
    eprintln!("{device_mask_rows} target rows took their bitmask from the device");
    assert!(device_mask_rows > 0, "no target row took a device bitmask");
    assert_eq!(total_bad, 0, "{total_bad} requests differ from the reference");
}

/// Bad calls are typed errors and change nothing; a request that asks for top logprobs is refused
/// (the GPU verifier does not report them); so are device bitmasks that cannot be read, and a
/// request named twice in one upload.
#[test]
fn gpu_verify_rejects_bad_calls() {
    const TEST: &str = "gpu_verify_rejects_bad_calls";
    let vocab = 1000;
    let Some(device) = gpu_or_skip(TEST) else { return };
    let sampler = GpuSampler::new(device, GpuSamplerConfig::new(vocab, 4)).expect("gpu sampler");
    assert!(GpuVerifier::new(sampler, 4).is_err(), "a draft capacity below 8 is refused");
    let Some(device) = gpu_or_skip(TEST) else { return };
    let sampler = GpuSampler::new(device, GpuSamplerConfig::new(vocab, 4)).expect("gpu sampler");
    let mut gpu = GpuVerifier::new(sampler, 8).expect("gpu verifier");
    gpu.add_request(1, SamplingParams::random(1.0, 5), &[]).expect("add");
    gpu.add_request(2, SamplingParams::random(1.0, 6).with_logprobs(3), &[]).expect("add");
    let logits = vec![0.5f32; 3 * vocab];
    let drafts = [3u32, 4];
    let too_many = [1u32; 9];
    let bad_token = [vocab as u32];
    let cases: Vec<(&str, VerifyBatch<'_>)> = vec![
        ("unknown request", VerifyBatch { logits: HostLogits::f32(&logits, 3, vocab).expect("l"), requests: vec![VerifyRequest::new(9, &drafts)] }),
        ("row count", VerifyBatch { logits: HostLogits::f32(&logits, 2, vocab).expect("l"), requests: vec![VerifyRequest::new(1, &drafts)] }),
        ("draft capacity", VerifyBatch { logits: HostLogits::f32(&logits, 3, vocab).expect("l"), requests: vec![VerifyRequest::new(1, &too_many)] }),
        ("draft id", VerifyBatch { logits: HostLogits::f32(&logits, 2, vocab).expect("l"), requests: vec![VerifyRequest::new(1, &bad_token)] }),
        ("top logprobs", VerifyBatch { logits: HostLogits::f32(&logits, 3, vocab).expect("l"), requests: vec![VerifyRequest::new(2, &drafts)] }),
    ];
    for (what, b) in &cases {
        assert!(gpu.verify(b).is_err(), "{what}: accepted");
        assert_eq!(gpu.request_step(1).expect("step"), 0, "{what}: state changed");
    }
    // Device bitmasks: a request that asks for one without it, one with both kinds, a call
    // with both kinds, and a buffer of too few rows are refused, naming the bitmask.
    let words = vocab.div_ceil(32);
    let stream = gpu.device().stream().clone();
    let masks = stream.alloc_zeros::<i32>(3 * words).expect("alloc");
    let host_mask = vec![-1i32; 3 * words];
    let host = &host_mask[..];
    fn req(bitmask: Option<&[i32]>, device_bitmask: bool) -> DeviceVerifyRequest<'_> {
        DeviceVerifyRequest { request: 1, drafts: &[3, 4], has_draft_probs: false, bitmask, device_bitmask }
    }
    let refused = |r: sampler_host::Result<()>| matches!(r, Err(sampler_host::Error::InvalidSetting { field: sampler_host::Field::Bitmask, .. }));
    assert!(refused(gpu.upload_verify(&[req(None, true)])), "a device request without a device bitmask");
    assert!(refused(gpu.upload_verify_with_bitmask(&[req(Some(host), true)], &DeviceBitmask::new(&masks, 3, words))), "both kinds on one request");
    assert!(refused(gpu.upload_verify_with_bitmask(&[req(Some(host), false)], &DeviceBitmask::new(&masks, 3, words))), "a host mask in a device call");
    assert!(refused(gpu.upload_verify_with_bitmask(&[req(None, true)], &DeviceBitmask::new(&masks, 2, words))), "two rows for three target rows");
    // A request named twice is refused at upload too (the slot marks steps use), and the good
    // call below shows it left no slot taken.
    let twice = gpu.upload_verify(&[req(None, false), req(None, false)]);
    assert!(matches!(twice, Err(sampler_host::Error::DuplicateRequest { request: 1 })), "a request named twice: {twice:?}");
    assert_eq!(gpu.request_step(1).expect("step"), 0, "a refused upload changed state");
    let ok = VerifyBatch { logits: HostLogits::f32(&logits, 3, vocab).expect("l"), requests: vec![VerifyRequest::new(1, &drafts)] };
    let out = gpu.verify(&ok).expect("a good call after bad ones");
    assert_eq!(out.len(), 1);
    assert_eq!(gpu.request_step(1).expect("step"), 1);
}
