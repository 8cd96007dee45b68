//! The CPU reference backend: the executable form of docs/SEMANTICS.md.
//!
//! Straightforward on purpose (a dense prologue, one sort per row; a large batch's rows on
//! several threads, which changes nothing since rows are independent), but every decision —
//! processed logits, order keys, weights, min-p, top-p, the draw — goes through the shared
//! `sampler_kernels` functions that the GPU kernels run, so the two agree bit for bit.

use sampler_kernels::decide::{
    draw_target, min_p_threshold, top_p_disabled, top_p_reached, top_p_units,
};
use sampler_kernels::fixed::{soft_ceil, weight};
use sampler_kernels::keys::{key_index, key_value, sort_key};
use sampler_kernels::logit::{bitmask_allows, process_logit};
use sampler_kernels::philox::{random_u64, STREAM_TOKEN};
use sampler_kernels::status::{NO_TOKEN, STATUS_NO_VALID_TOKEN, STATUS_OK};

use crate::backend::{validate_batch, Backend, Batch, RowOutput};
use crate::error::{Error, Field, Result};
use crate::settings::SamplingParams;
use crate::state::{RequestState, RequestTable};

/// The CPU reference sampler. Holds its requests in a [`RequestTable`].
#[derive(Clone, Debug)]
pub struct CpuReference {
    table: RequestTable,
    max_batch: usize,
}

impl CpuReference {
    /// A sampler for `vocab` tokens and batches of up to `max_batch` rows.
    pub fn new(vocab: usize, max_batch: usize) -> Result<Self> {
        // The fixed-point mass bounds of docs/SEMANTICS.md hold up to 2^20 tokens.
        if vocab == 0 || vocab > sampler_kernels::abi::MAX_VOCAB as usize {
            return Err(Error::InvalidSetting {
                request: None,
                field: Field::Logits,
                reason: format!("vocab {vocab} is not in 1..=2^20"),
            });
        }
        Ok(Self {
            table: RequestTable::new(vocab),
            max_batch,
        })
    }

    /// The requests this backend holds.
    pub fn table(&self) -> &RequestTable {
        &self.table
    }

    /// Mutable access for the speculative verifier (`crate::verify`), which updates state too.
    pub(crate) fn table_mut(&mut self) -> &mut RequestTable {
        &mut self.table
    }
}

/// Processed logits `x` of one row (docs/SEMANTICS.md §2): the prologue applied to every
/// token with the request's penalty state and the row's bitmask.
pub fn process_row(raw: &[f32], state: &RequestState, bitmask: Option<&[i32]>) -> Vec<f32> {
    let v = raw.len();
    let mut counts = vec![0u32; v];
    let mut seen = vec![false; v];
    for &t in &state.prompt {
        if let Some(s) = seen.get_mut(t as usize) {
            *s = true;
        }
    }
    for (&t, &c) in &state.output_counts {
        if let (Some(s), Some(n)) = (seen.get_mut(t as usize), counts.get_mut(t as usize)) {
            *n = c;
            *s |= c > 0;
        }
    }
    let mut bias = vec![0.0f32; v];
    for &(t, b) in &state.params.logit_bias {
        if let Some(slot) = bias.get_mut(t as usize) {
            *slot = b;
        }
    }
    let lp = state.params.logit_params();
    raw.iter()
        .enumerate()
        .map(|(i, &r)| {
            let allowed = match bitmask {
                None => true,
                Some(m) => m.get(i >> 5).is_some_and(|&w| bitmask_allows(w, i as u32)),
            };
            process_logit(r, allowed, seen[i], counts[i], bias[i], &lp)
        })
        .collect()
}

/// Greedy choice: the largest (value, -index) key among tokens above `-inf`.
pub fn greedy_choice(x: &[f32]) -> Option<u32> {
    x.iter()
        .enumerate()
        .filter(|(_, &v)| v > f32::NEG_INFINITY)
        .map(|(i, &v)| sort_key(v, i as u32))
        .max()
        .map(key_index)
}

/// The truncated candidate set of a random row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeptSet {
    /// Kept tokens in (value desc, index asc) order.
    pub tokens: Vec<u32>,
    /// Weight of each kept token (fixed point; unit weights in an infinite row).
    pub weights: Vec<u128>,
    /// Sum of `weights`.
    pub total: u128,
    /// The row's maximum was `+inf`.
    pub infinite: bool,
}

/// min-p, top-k and top-p over processed logits `x` (docs/SEMANTICS.md §3–§4).
/// Empty when no token is above `-inf`.
pub fn kept_set(x: &[f32], params: &SamplingParams) -> KeptSet {
    let max = x
        .iter()
        .copied()
        .fold(f32::NEG_INFINITY, |a, b| if b > a { b } else { a });
    if max.is_nan() || max == f32::NEG_INFINITY {
        return KeptSet::default();
    }
    let infinite = max == f32::INFINITY;
    let mut keys: Vec<u64> = x
        .iter()
        .enumerate()
        .filter(|(_, &v)| {
            if infinite {
                v == f32::INFINITY
            } else {
                v > f32::NEG_INFINITY
            }
        })
        .map(|(i, &v)| sort_key(v, i as u32))
        .collect();
    keys.sort_unstable_by(|a, b| b.cmp(a));

    let thr = min_p_threshold(max, params.min_p);
    let mut n = keys.iter().take_while(|&&k| key_value(k) >= thr).count();
    if params.top_k > 0 {
        n = n.min(params.top_k as usize);
    }
    keys.truncate(n);

    let mc = soft_ceil(max);
    let weights: Vec<u128> = keys
        .iter()
        .map(|&k| {
            if infinite {
                1
            } else {
                weight(key_value(k), mc)
            }
        })
        .collect();
    let mut total: u128 = weights.iter().sum();

    if !top_p_disabled(params.top_p) {
        let p24 = top_p_units(params.top_p);
        let mut mass = 0u128;
        let mut keep = weights.len().min(1);
        for (i, &w) in weights.iter().enumerate() {
            mass += w;
            if top_p_reached(mass, total, p24) {
                keep = i + 1;
                break;
            }
        }
        keys.truncate(keep);
        total = weights.iter().take(keep).sum();
    }
    let tokens: Vec<u32> = keys.iter().map(|&k| key_index(k)).collect();
    let weights = weights.into_iter().take(tokens.len()).collect();
    KeptSet {
        tokens,
        weights,
        total,
        infinite,
    }
}

/// The kept tokens with their weights in token-index order: the order every draw walks.
pub fn kept_by_index(kept: &KeptSet) -> Vec<(u32, u128)> {
    let mut by_index: Vec<(u32, u128)> = kept
        .tokens
        .iter()
        .copied()
        .zip(kept.weights.iter().copied())
        .collect();
    by_index.sort_unstable_by_key(|&(t, _)| t);
    by_index
}

/// The draw: `u = floor(Z * r64 / 2^64)`, then the first kept token in index order whose
/// running weight sum exceeds `u`.
pub fn draw(kept: &KeptSet, r64: u64) -> Option<u32> {
    let by_index = kept_by_index(kept);
    let u = draw_target(kept.total, r64);
    let mut acc = 0u128;
    for (t, w) in by_index {
        acc += w;
        if acc > u {
            return Some(t);
        }
    }
    None
}

/// Natural-log softmax of `x` in f64, before truncation (docs/SEMANTICS.md §7).
pub fn logprobs(x: &[f32]) -> Vec<f64> {
    let max = x
        .iter()
        .copied()
        .fold(f32::NEG_INFINITY, |a, b| if b > a { b } else { a });
    if max == f32::INFINITY {
        let n = x.iter().filter(|&&v| v == f32::INFINITY).count() as f64;
        return x
            .iter()
            .map(|&v| {
                if v == f32::INFINITY {
                    -n.ln()
                } else {
                    f64::NEG_INFINITY
                }
            })
            .collect();
    }
    if max.is_nan() || max == f32::NEG_INFINITY {
        return vec![f64::NEG_INFINITY; x.len()];
    }
    let m = max as f64;
    let s: f64 = x.iter().map(|&v| ((v as f64) - m).exp()).sum();
    let ls = s.ln();
    x.iter().map(|&v| (v as f64) - m - ls).collect()
}

/// Samples one row without touching the request's state.
pub fn sample_row(raw: &[f32], state: &RequestState, bitmask: Option<&[i32]>) -> RowOutput {
    let params = &state.params;
    let x = process_row(raw, state, bitmask);
    let chosen = if params.is_greedy() {
        greedy_choice(&x)
    } else {
        let kept = kept_set(&x, params);
        if kept.tokens.is_empty() {
            None
        } else {
            draw(&kept, random_u64(params.seed, state.step, STREAM_TOKEN))
        }
    };
    let Some(token) = chosen else {
        return RowOutput {
            token: NO_TOKEN,
            status: STATUS_NO_VALID_TOKEN,
            logprob: None,
            top_logprobs: Vec::new(),
        };
    };
    let mut out = RowOutput {
        token: token as i32,
        status: STATUS_OK,
        logprob: None,
        top_logprobs: Vec::new(),
    };
    if params.logprobs || params.top_logprobs > 0 {
        let lp = logprobs(&x);
        if params.logprobs {
            out.logprob = lp.get(token as usize).map(|&v| v as f32);
        }
        // Only tokens that can be sampled (value above -inf) are listed.
        let mut keys: Vec<u64> = x
            .iter()
            .enumerate()
            .filter(|&(_, &v)| v > f32::NEG_INFINITY)
            .map(|(i, &v)| sort_key(v, i as u32))
            .collect();
        let n = (params.top_logprobs as usize).min(keys.len());
        if n > 0 {
            keys.select_nth_unstable_by(n - 1, |a, b| b.cmp(a));
            keys.truncate(n);
            keys.sort_unstable_by(|a, b| b.cmp(a));
            out.top_logprobs = keys
                .iter()
                .map(|&k| {
                    let t = key_index(k);
                    (
                        t,
                        lp.get(t as usize).map_or(f32::NEG_INFINITY, |&v| v as f32),
                    )
                })
                .collect();
        }
    }
    out
}

/// Tokens a thread of [`in_runs`] takes at least: below that, starting it costs more than its
/// rows (a 128256-token row takes about 16 ms).
const TOKENS_PER_THREAD: usize = 1 << 20;

/// `run(range)` over `0..items`, cut into runs of items, one a thread, as far as `tokens` (the
/// work of all the items) allows [`TOKENS_PER_THREAD`] a thread; the runs' outputs in item
/// order. For items that are independent, as rows are (each reads its own request's state,
/// which nothing writes until every row is done), the outputs are the one-thread outputs. The
/// GPU tests compare thousands of rows of up to 262144 tokens with this reference.
pub(crate) fn in_runs<T: Send, F>(items: usize, tokens: usize, run: F) -> Result<Vec<T>>
where
    F: Fn(std::ops::Range<usize>) -> Result<Vec<T>> + Sync,
{
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = cores.min(tokens / TOKENS_PER_THREAD).max(1);
    if threads == 1 || items < 2 {
        return run(0..items);
    }
    let per_thread = items.div_ceil(threads);
    let run = &run;
    std::thread::scope(|scope| {
        let runs: Vec<_> =
            (0..items).step_by(per_thread).map(|first| scope.spawn(move || run(first..(first + per_thread).min(items)))).collect();
        let mut outs = Vec::with_capacity(items);
        for handle in runs {
            // A panic in a run is the one-thread loop's panic, raised again here.
            outs.extend(handle.join().unwrap_or_else(|payload| std::panic::resume_unwind(payload))?);
        }
        Ok(outs)
    })
}

/// [`sample_row`] for every row of `batch`, in row order, large batches on several threads
/// ([`in_runs`]).
fn sample_rows(table: &RequestTable, batch: &Batch<'_>) -> Result<Vec<RowOutput>> {
    let rows = batch.rows.len();
    in_runs(rows, rows.saturating_mul(table.vocab()), |range| {
        let mut raw = Vec::with_capacity(table.vocab());
        range
            .map(|i| {
                let row = &batch.rows[i];
                let state = table.get(row.request).ok_or(Error::UnknownRequest { request: row.request })?;
                batch.logits.row_f32(i, &mut raw);
                Ok(sample_row(&raw, state, row.bitmask))
            })
            .collect()
    })
}

impl Backend for CpuReference {
    fn name(&self) -> &'static str {
        "cpu-reference"
    }

    fn vocab(&self) -> usize {
        self.table.vocab()
    }

    fn max_batch(&self) -> usize {
        self.max_batch
    }

    fn add_request(&mut self, id: u64, params: SamplingParams, prompt: &[u32]) -> Result<()> {
        self.table.add(id, params, prompt)
    }

    fn reset_request(&mut self, id: u64, prompt: &[u32]) -> Result<()> {
        self.table.reset(id, prompt)
    }

    fn update_request(&mut self, id: u64, params: SamplingParams) -> Result<()> {
        self.table.update_params(id, params)
    }

    fn drop_request(&mut self, id: u64) -> Result<()> {
        self.table.drop_request(id)
    }

    fn request_step(&self, id: u64) -> Result<u64> {
        self.table
            .get(id)
            .map(|s| s.step)
            .ok_or(Error::UnknownRequest { request: id })
    }

    fn sample(&mut self, batch: &Batch<'_>) -> Result<Vec<RowOutput>> {
        validate_batch(batch, &self.table, self.max_batch)?;
        let outs = sample_rows(&self.table, batch)?;
        // State changes only once every row is done, so an error above leaves none behind.
        for (row, out) in batch.rows.iter().zip(&outs) {
            if let Some(state) = self.table.get_mut(row.request) {
                state.record(out.token);
            }
        }
        Ok(outs)
    }
}
