//! The seam between callers and samplers: a batch in, one [`RowOutput`] per row out.
//!
//! A backend owns its request table (the GPU one keeps it in device memory), so adding,
//! resetting, updating and dropping requests go through the trait too. Every backend computes
//! the function in docs/SEMANTICS.md; the CPU reference and the GPU sampler are interchangeable.

use std::collections::HashSet;

use sampler_kernels::logit::bitmask_words;

use crate::error::{Error, Field, Result};
use crate::logits::HostLogits;
use crate::settings::SamplingParams;
use crate::state::RequestTable;

/// One row of a batch: which request it belongs to and its optional grammar bitmask
/// (XGrammar layout, at least `ceil(vocab / 32)` words; extra words are ignored).
#[derive(Clone, Copy, Debug)]
pub struct BatchRow<'a> {
    pub request: u64,
    pub bitmask: Option<&'a [i32]>,
    /// The row's bitmask is row `i` of a bitmask already on the GPU, for row `i` of the batch
    /// (`GpuSampler::upload_step_with_bitmask`). Only the GPU's device-level API takes such
    /// rows; `Backend::sample` refuses them, and a row may not have both kinds.
    pub device_bitmask: bool,
}

impl<'a> BatchRow<'a> {
    pub fn new(request: u64) -> Self {
        Self {
            request,
            bitmask: None,
            device_bitmask: false,
        }
    }
    pub fn with_bitmask(request: u64, bitmask: &'a [i32]) -> Self {
        Self {
            request,
            bitmask: Some(bitmask),
            device_bitmask: false,
        }
    }
    /// A row whose bitmask is its row of the device bitmask given with the upload.
    pub fn with_device_bitmask(request: u64) -> Self {
        Self {
            request,
            bitmask: None,
            device_bitmask: true,
        }
    }
}

/// One decoding step: logits row `i` belongs to `rows[i]`.
#[derive(Clone, Debug)]
pub struct Batch<'a> {
    pub logits: HostLogits<'a>,
    pub rows: Vec<BatchRow<'a>>,
}

/// What the sampler emits for one row.
#[derive(Clone, Debug, PartialEq)]
pub struct RowOutput {
    /// Chosen token, or -1 when `status != STATUS_OK`.
    pub token: i32,
    /// One of `sampler_kernels::status::STATUS_*`.
    pub status: u32,
    /// Natural-log probability of `token` (when the request asked for logprobs).
    pub logprob: Option<f32>,
    /// Top `top_logprobs` tokens of the processed distribution, best first.
    pub top_logprobs: Vec<(u32, f32)>,
}

/// A sampler. Implementations: [`crate::reference::CpuReference`], and the GPU sampler.
pub trait Backend {
    /// Short name for logs ("cpu-reference", "cuda").
    fn name(&self) -> &'static str;
    /// Vocabulary size fixed at creation.
    fn vocab(&self) -> usize;
    /// Most rows one batch may have.
    fn max_batch(&self) -> usize;
    /// Registers a request (validated; prompt ids feed the repetition penalty).
    fn add_request(&mut self, id: u64, params: SamplingParams, prompt: &[u32]) -> Result<()>;
    /// Clears a request's output history and step counter, with a new prompt.
    fn reset_request(&mut self, id: u64, prompt: &[u32]) -> Result<()>;
    /// Replaces a request's settings, keeping its history and step.
    fn update_request(&mut self, id: u64, params: SamplingParams) -> Result<()>;
    /// Forgets a request.
    fn drop_request(&mut self, id: u64) -> Result<()>;
    /// Philox step counter of a request (how many samples it has taken).
    fn request_step(&self, id: u64) -> Result<u64>;
    /// Samples every row of `batch` and advances each request's state.
    /// On error nothing has been sampled and no state has changed.
    fn sample(&mut self, batch: &Batch<'_>) -> Result<Vec<RowOutput>>;
}

/// Checks a batch against a table before anything runs: capacity, shape, vocab, registered
/// and distinct requests, bitmask lengths. Shared by every backend.
pub fn validate_batch(batch: &Batch<'_>, table: &RequestTable, max_batch: usize) -> Result<()> {
    let rows = batch.rows.len();
    if rows > max_batch {
        return Err(Error::CapacityExceeded {
            what: "batch rows",
            requested: rows,
            capacity: max_batch,
        });
    }
    if batch.logits.rows() != rows {
        return Err(Error::InvalidSetting {
            request: None,
            field: Field::Logits,
            reason: format!("{} logits rows for {rows} batch rows", batch.logits.rows()),
        });
    }
    let vocab = table.vocab();
    if batch.logits.vocab() != vocab {
        return Err(Error::InvalidSetting {
            request: None,
            field: Field::Logits,
            reason: format!(
                "logits vocab {} differs from the sampler's {vocab}",
                batch.logits.vocab()
            ),
        });
    }
    let words = bitmask_words(vocab as u32) as usize;
    let mut ids = HashSet::with_capacity(rows);
    for r in &batch.rows {
        if table.get(r.request).is_none() {
            return Err(Error::UnknownRequest { request: r.request });
        }
        if !ids.insert(r.request) {
            // Two rows of one request in one step would race on its penalty state.
            return Err(Error::DuplicateRequest { request: r.request });
        }
        if r.device_bitmask {
            // `sample` takes its rows from the host; a device bitmask needs the device-level API.
            return Err(Error::InvalidSetting {
                request: Some(r.request),
                field: Field::Bitmask,
                reason: "a device bitmask row needs GpuSampler::upload_step_with_bitmask; this call takes host bitmasks only".into(),
            });
        }
        if let Some(m) = r.bitmask {
            if m.len() < words {
                return Err(Error::InvalidSetting {
                    request: Some(r.request),
                    field: Field::Bitmask,
                    reason: format!("{} words given, vocab {vocab} needs {words}", m.len()),
                });
            }
        }
    }
    Ok(())
}
