//! Determinism: a request's tokens depend only on its own logits, settings, seed and step —
//! not on the batch size, its position, or the other rows — and are identical run to run.

mod common;

use sampler_host::backend::{Backend, Batch, BatchRow, RowOutput};
use sampler_host::logits::HostLogits;
use sampler_host::reference::CpuReference;
use sampler_host::settings::SamplingParams;

const TARGET: u64 = 1_000_000;

struct Other {
    params: SamplingParams,
    prompt: Vec<u32>,
    mask: Option<Vec<i32>>,
    row: Vec<f32>,
}

/// Runs `steps` steps of a batch of `size` rows with the target request at `pos` and random
/// other rows around it; returns the target's outputs.
#[allow(clippy::too_many_arguments)]
fn run(
    rng: &mut common::TestRng,
    size: usize,
    pos: usize,
    steps: usize,
    params: &SamplingParams,
    prompt: &[u32],
    mask: &[i32],
    row: &[f32],
) -> Vec<RowOutput> {
    let vocab = row.len();
    let others: Vec<Other> = (0..size - 1)
        .map(|_| {
            let mut r = rng.llm_row(vocab);
            if rng.below(8) == 0 {
                r.iter_mut().for_each(|v| *v = f32::NAN);
            }
            Other {
                params: rng.params(vocab),
                prompt: (0..rng.below(20)).map(|_| rng.token(vocab)).collect(),
                mask: if rng.below(3) == 0 {
                    Some(rng.bitmask(vocab, 0.5))
                } else {
                    None
                },
                row: r,
            }
        })
        .collect();
    let mut b = CpuReference::new(vocab, size).expect("backend");
    b.add_request(TARGET, params.clone(), prompt)
        .expect("add target");
    for (i, o) in others.iter().enumerate() {
        b.add_request(i as u64, o.params.clone(), &o.prompt)
            .expect("add other");
    }
    let mut data = Vec::with_capacity(size * vocab);
    let mut rows = Vec::with_capacity(size);
    let mut it = others.iter().enumerate();
    for slot in 0..size {
        if slot == pos {
            data.extend_from_slice(row);
            rows.push(BatchRow::with_bitmask(TARGET, mask));
        } else if let Some((i, o)) = it.next() {
            data.extend_from_slice(&o.row);
            rows.push(BatchRow {
                request: i as u64,
                bitmask: o.mask.as_deref(),
                device_bitmask: false,
            });
        }
    }
    let batch = Batch {
        logits: HostLogits::f32(&data, size, vocab).expect("logits"),
        rows,
    };
    (0..steps)
        .map(|_| b.sample(&batch).expect("sample").remove(pos))
        .collect()
}

fn check(vocab: usize, sizes: &[usize], steps: usize, test: &str) {
    let mut rng = common::rng(test);
    let row = rng.llm_row(vocab);
    let mut params = rng.params(vocab);
    params.temperature = 0.9;
    params.top_k = 0;
    params.top_p = 0.97;
    params.repetition_penalty = 1.3;
    params.presence_penalty = 0.5;
    params = params.with_logprobs(3);
    let prompt: Vec<u32> = (0..30).map(|_| rng.token(vocab)).collect();
    let mask = rng.bitmask(vocab, 0.9);
    let alone = run(&mut rng, 1, 0, steps, &params, &prompt, &mask, &row);
    assert_eq!(
        alone,
        run(&mut rng, 1, 0, steps, &params, &prompt, &mask, &row),
        "run to run"
    );
    for &size in sizes {
        for pos in [0, size - 1, rng.below(size as u64) as usize] {
            let got = run(&mut rng, size, pos, steps, &params, &prompt, &mask, &row);
            assert_eq!(got, alone, "batch of {size}, position {pos}");
        }
    }
    // The greedy variant too.
    let g = params.clone().with_temperature(0.0);
    let alone = run(&mut rng, 1, 0, steps, &g, &prompt, &mask, &row);
    assert_eq!(
        run(
            &mut rng,
            sizes[0],
            sizes[0] / 2,
            steps,
            &g,
            &prompt,
            &mask,
            &row
        ),
        alone
    );
}

#[test]
fn independent_of_batch_small_vocab() {
    check(1_031, &[3, 64, 257], 3, "independent_of_batch_small_vocab");
}

#[test]
fn independent_of_batch_gpt2_vocab() {
    check(50_257, &[3, 16], 2, "independent_of_batch_gpt2_vocab");
}

#[test]
fn independent_of_batch_qwen_vocab() {
    check(151_936, &[3], 2, "independent_of_batch_qwen_vocab");
}

/// A batch large enough to be split among threads (`reference::sample_rows`: at least 2^20
/// tokens a thread) gives every row the outputs it gets alone, step after step, with mixed
/// settings, penalties and bitmasks: the runs keep row order and read only their rows' state.
#[test]
fn rows_split_among_threads_equal_rows_alone() {
    let mut rng = common::rng("rows_split_among_threads_equal_rows_alone");
    let (vocab, size, steps) = (50_257usize, 47usize, 2);
    let requests: Vec<Other> = (0..size)
        .map(|_| Other {
            params: rng.params(vocab),
            prompt: (0..rng.below(20)).map(|_| rng.token(vocab)).collect(),
            mask: if rng.below(3) == 0 { Some(rng.bitmask(vocab, 0.5)) } else { None },
            row: rng.llm_row(vocab),
        })
        .collect();
    let mut together = CpuReference::new(vocab, size).expect("backend");
    for (i, o) in requests.iter().enumerate() {
        together.add_request(i as u64, o.params.clone(), &o.prompt).expect("add");
    }
    let data: Vec<f32> = requests.iter().flat_map(|o| o.row.iter().copied()).collect();
    let rows: Vec<BatchRow> = (0..size).map(|i| BatchRow { request: i as u64, bitmask: requests[i].mask.as_deref(), device_bitmask: false }).collect();
    let batch = Batch { logits: HostLogits::f32(&data, size, vocab).expect("logits"), rows };
    let batched: Vec<Vec<RowOutput>> = (0..steps).map(|_| together.sample(&batch).expect("sample")).collect();
    for (i, o) in requests.iter().enumerate() {
        let mut alone = CpuReference::new(vocab, 1).expect("backend");
        alone.add_request(i as u64, o.params.clone(), &o.prompt).expect("add");
        let one = Batch {
            logits: HostLogits::f32(&o.row, 1, vocab).expect("logits"),
            rows: vec![BatchRow { request: i as u64, bitmask: o.mask.as_deref(), device_bitmask: false }],
        };
        for (step, outs) in batched.iter().enumerate() {
            assert_eq!(alone.sample(&one).expect("sample")[0], outs[i], "row {i}, step {step}");
        }
    }
    // The rows are not all alike, so a run that read a neighbour's row would be seen.
    let tokens: std::collections::HashSet<i32> = batched[0].iter().map(|o| o.token).collect();
    assert!(tokens.len() > size / 2, "only {} distinct tokens in {size} rows", tokens.len());
}
