//! The crate's one error type. Every fallible public function returns [`Error`].
//!
//! Variants name the request and the field at fault where there is one, so a serving engine can
//! reject one request without guessing. Nothing in this crate panics on bad input.

use std::fmt;

/// Which setting or input a validation error is about.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Temperature,
    TopK,
    TopP,
    MinP,
    RepetitionPenalty,
    FrequencyPenalty,
    PresencePenalty,
    LogitBias,
    PromptTokens,
    Bitmask,
    TopLogprobs,
    Logits,
    DraftTokens,
    /// The CUDA stream a sampler is asked to share (`GpuDevice::on_stream`).
    Stream,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Field::Temperature => "temperature",
            Field::TopK => "top_k",
            Field::TopP => "top_p",
            Field::MinP => "min_p",
            Field::RepetitionPenalty => "repetition_penalty",
            Field::FrequencyPenalty => "frequency_penalty",
            Field::PresencePenalty => "presence_penalty",
            Field::LogitBias => "logit_bias",
            Field::PromptTokens => "prompt_tokens",
            Field::Bitmask => "bitmask",
            Field::TopLogprobs => "top_logprobs",
            Field::Logits => "logits",
            Field::DraftTokens => "draft_tokens",
            Field::Stream => "stream",
        };
        f.write_str(name)
    }
}

/// Everything that can go wrong, from bad settings to a missing GPU.
#[non_exhaustive]
#[derive(Debug)]
pub enum Error {
    /// A setting or input failed validation. `request` is the caller's request id when the
    /// error belongs to one request.
    InvalidSetting { request: Option<u64>, field: Field, reason: String },
    /// A batch, vocab or draft count is larger than the capacity fixed at creation.
    CapacityExceeded { what: &'static str, requested: usize, capacity: usize },
    /// A request id that the sampler does not hold (or already holds, for `add`).
    UnknownRequest { request: u64 },
    /// A request id that is already registered.
    DuplicateRequest { request: u64 },
    /// No CUDA driver could be loaded, or it reports no device.
    NoCudaDevice { detail: String },
    /// A CUDA driver call failed; `op` names what was being done.
    Cuda { op: &'static str, detail: String },
    /// The embedded PTX (or the one supplied at build time) failed to load.
    ModuleLoad { detail: String },
    /// Reading an input file (logits for the demo) failed.
    Input { path: String, detail: String },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidSetting { request: Some(id), field, reason } => {
                write!(f, "request {id}: invalid {field}: {reason}")
            }
            Error::InvalidSetting { request: None, field, reason } => write!(f, "invalid {field}: {reason}"),
            Error::CapacityExceeded { what, requested, capacity } => {
                write!(f, "{what} of {requested} exceeds the capacity of {capacity} fixed at creation")
            }
            Error::UnknownRequest { request } => write!(f, "request {request} is not registered"),
            Error::DuplicateRequest { request } => write!(f, "request {request} is already registered"),
            Error::NoCudaDevice { detail } => write!(f, "no CUDA device: {detail}"),
            Error::Cuda { op, detail } => write!(f, "CUDA error while {op}: {detail}"),
            Error::ModuleLoad { detail } => write!(f, "could not load the sampler's PTX module: {detail}"),
            Error::Input { path, detail } => write!(f, "cannot read {path}: {detail}"),
        }
    }
}

impl std::error::Error for Error {}

/// Shorthand used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
