//! Per-request sampling settings and their validation.
//!
//! Validation happens on the host before anything runs and returns a typed
//! [`Error::InvalidSetting`] naming the field; nothing panics on bad values.

use crate::error::{Error, Field, Result};
use sampler_kernels::logit::LogitParams;

/// Most top logprobs a request may ask for.
pub const MAX_TOP_LOGPROBS: u32 = 20;

/// What one request wants from the sampler. See docs/SEMANTICS.md for the exact meaning.
#[derive(Clone, Debug, PartialEq)]
pub struct SamplingParams {
    /// 0 = greedy; otherwise logits are divided by it. Finite, `>= 0`.
    pub temperature: f32,
    /// Keep the `top_k` best tokens; 0 disables.
    pub top_k: u32,
    /// Nucleus mass in (0, 1]; 1 disables.
    pub top_p: f32,
    /// Keep tokens with probability `>= min_p * p_max`, in [0, 1]; 0 disables.
    pub min_p: f32,
    /// Divides positive / multiplies negative logits of seen tokens; `> 0`, 1 disables.
    pub repetition_penalty: f32,
    /// Subtracted once per output occurrence.
    pub frequency_penalty: f32,
    /// Subtracted once for any output occurrence.
    pub presence_penalty: f32,
    /// Additive bias per token id; ids unique and `< vocab`, values finite.
    pub logit_bias: Vec<(u32, f32)>,
    /// Seed of this request's Philox key.
    pub seed: u64,
    /// Return the chosen token's logprob.
    pub logprobs: bool,
    /// Return this many top logprobs (`<= 20`).
    pub top_logprobs: u32,
}

impl Default for SamplingParams {
    /// Plain random sampling at temperature 1, no truncation, neutral penalties, seed 0.
    fn default() -> Self {
        Self {
            temperature: 1.0,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            repetition_penalty: 1.0,
            frequency_penalty: 0.0,
            presence_penalty: 0.0,
            logit_bias: Vec::new(),
            seed: 0,
            logprobs: false,
            top_logprobs: 0,
        }
    }
}

fn invalid(request: Option<u64>, field: Field, reason: String) -> Error {
    Error::InvalidSetting {
        request,
        field,
        reason,
    }
}

impl SamplingParams {
    /// Greedy decoding (temperature 0), everything else neutral.
    pub fn greedy() -> Self {
        Self {
            temperature: 0.0,
            ..Self::default()
        }
    }

    /// Random sampling at `temperature` with `seed`.
    pub fn random(temperature: f32, seed: u64) -> Self {
        Self {
            temperature,
            seed,
            ..Self::default()
        }
    }

    pub fn with_temperature(mut self, t: f32) -> Self {
        self.temperature = t;
        self
    }
    pub fn with_top_k(mut self, k: u32) -> Self {
        self.top_k = k;
        self
    }
    pub fn with_top_p(mut self, p: f32) -> Self {
        self.top_p = p;
        self
    }
    pub fn with_min_p(mut self, m: f32) -> Self {
        self.min_p = m;
        self
    }
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }
    /// Repetition, frequency and presence penalties at once.
    pub fn with_penalties(mut self, repetition: f32, frequency: f32, presence: f32) -> Self {
        self.repetition_penalty = repetition;
        self.frequency_penalty = frequency;
        self.presence_penalty = presence;
        self
    }
    pub fn with_logit_bias(mut self, bias: Vec<(u32, f32)>) -> Self {
        self.logit_bias = bias;
        self
    }
    /// Ask for the chosen token's logprob and `top_n` top logprobs.
    pub fn with_logprobs(mut self, top_n: u32) -> Self {
        self.logprobs = true;
        self.top_logprobs = top_n;
        self
    }

    /// True for greedy (temperature 0) requests.
    pub fn is_greedy(&self) -> bool {
        self.temperature == 0.0
    }

    /// The prologue's view of these settings.
    pub fn logit_params(&self) -> LogitParams {
        LogitParams {
            repetition: self.repetition_penalty,
            frequency: self.frequency_penalty,
            presence: self.presence_penalty,
            temperature: self.temperature,
        }
    }

    /// Checks every rule of docs/SEMANTICS.md §5 against a vocabulary of `vocab` tokens.
    /// `request` only labels the error.
    pub fn validate(&self, vocab: usize, request: Option<u64>) -> Result<()> {
        let t = self.temperature;
        if !t.is_finite() || t < 0.0 {
            return Err(invalid(
                request,
                Field::Temperature,
                format!("{t} is not a finite value >= 0"),
            ));
        }
        let p = self.top_p;
        if !(p > 0.0 && p <= 1.0) {
            return Err(invalid(
                request,
                Field::TopP,
                format!("{p} is not in (0, 1]"),
            ));
        }
        let m = self.min_p;
        if !(0.0..=1.0).contains(&m) {
            return Err(invalid(
                request,
                Field::MinP,
                format!("{m} is not in [0, 1]"),
            ));
        }
        let r = self.repetition_penalty;
        if !r.is_finite() || r <= 0.0 {
            return Err(invalid(
                request,
                Field::RepetitionPenalty,
                format!("{r} is not a finite value > 0"),
            ));
        }
        if !self.frequency_penalty.is_finite() {
            let f = self.frequency_penalty;
            return Err(invalid(
                request,
                Field::FrequencyPenalty,
                format!("{f} is not finite"),
            ));
        }
        if !self.presence_penalty.is_finite() {
            let f = self.presence_penalty;
            return Err(invalid(
                request,
                Field::PresencePenalty,
                format!("{f} is not finite"),
            ));
        }
        if self.top_logprobs > MAX_TOP_LOGPROBS {
            let n = self.top_logprobs;
            return Err(invalid(
                request,
                Field::TopLogprobs,
                format!("{n} exceeds {MAX_TOP_LOGPROBS}"),
            ));
        }
        let mut ids: Vec<u32> = Vec::with_capacity(self.logit_bias.len());
        for &(id, v) in &self.logit_bias {
            if id as usize >= vocab {
                return Err(invalid(
                    request,
                    Field::LogitBias,
                    format!("token {id} is outside the vocab of {vocab}"),
                ));
            }
            if !v.is_finite() {
                return Err(invalid(
                    request,
                    Field::LogitBias,
                    format!("bias {v} for token {id} is not finite"),
                ));
            }
            ids.push(id);
        }
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            let id = w[0];
            return Err(invalid(
                request,
                Field::LogitBias,
                format!("token {id} appears twice"),
            ));
        }
        Ok(())
    }
}

/// Checks prompt token ids against the vocabulary.
pub fn validate_prompt(prompt: &[u32], vocab: usize, request: Option<u64>) -> Result<()> {
    match prompt.iter().find(|&&t| t as usize >= vocab) {
        Some(&t) => Err(invalid(
            request,
            Field::PromptTokens,
            format!("token {t} is outside the vocab of {vocab}"),
        )),
        None => Ok(()),
    }
}
