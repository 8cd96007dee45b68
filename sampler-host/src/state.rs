//! Per-request state that lives with the sampler: settings, penalty history, Philox position.
//!
//! The CPU reference updates it itself after each step (step + 1; the emitted token counted),
//! so a serving engine only adds, resets, updates and drops requests. The GPU backends keep
//! their counts and steps in device memory, advanced by the kernels, and use this table for
//! settings and prompts only.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::settings::{validate_prompt, SamplingParams};

/// One request's state.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestState {
    /// Validated settings.
    pub params: SamplingParams,
    /// Distinct prompt token ids, sorted.
    pub prompt: Vec<u32>,
    /// Output token id → occurrences so far.
    pub output_counts: HashMap<u32, u32>,
    /// Philox step counter: how many samples this request has taken.
    pub step: u64,
}

impl RequestState {
    fn new(params: SamplingParams, prompt: &[u32]) -> Self {
        let mut p = prompt.to_vec();
        p.sort_unstable();
        p.dedup();
        Self {
            params,
            prompt: p,
            output_counts: HashMap::new(),
            step: 0,
        }
    }

    /// Occurrences of `token` in the output so far.
    pub fn count(&self, token: u32) -> u32 {
        self.output_counts.get(&token).copied().unwrap_or(0)
    }

    /// In the prompt or already emitted.
    pub fn seen(&self, token: u32) -> bool {
        self.count(token) > 0 || self.prompt.binary_search(&token).is_ok()
    }

    /// Bookkeeping after one sample: the step advances, an emitted token is counted.
    pub fn record(&mut self, token: i32) {
        self.step = self.step.wrapping_add(1);
        if let Ok(t) = u32::try_from(token) {
            let c = self.output_counts.entry(t).or_insert(0);
            *c = c.saturating_add(1);
        }
    }
}

/// All requests a backend holds, keyed by the caller's id.
#[derive(Clone, Debug, Default)]
pub struct RequestTable {
    vocab: usize,
    requests: HashMap<u64, RequestState>,
}

impl RequestTable {
    /// An empty table for a vocabulary of `vocab` tokens.
    pub fn new(vocab: usize) -> Self {
        Self {
            vocab,
            requests: HashMap::new(),
        }
    }

    pub fn vocab(&self) -> usize {
        self.vocab
    }

    pub fn len(&self) -> usize {
        self.requests.len()
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Registers a request after validating its settings and prompt.
    pub fn add(&mut self, id: u64, params: SamplingParams, prompt: &[u32]) -> Result<()> {
        if self.requests.contains_key(&id) {
            return Err(Error::DuplicateRequest { request: id });
        }
        params.validate(self.vocab, Some(id))?;
        validate_prompt(prompt, self.vocab, Some(id))?;
        self.requests.insert(id, RequestState::new(params, prompt));
        Ok(())
    }

    /// Clears the output history and step counter and installs a new prompt; settings stay.
    pub fn reset(&mut self, id: u64, prompt: &[u32]) -> Result<()> {
        validate_prompt(prompt, self.vocab, Some(id))?;
        let st = self
            .requests
            .get_mut(&id)
            .ok_or(Error::UnknownRequest { request: id })?;
        *st = RequestState::new(st.params.clone(), prompt);
        Ok(())
    }

    /// Replaces the settings; history and step stay.
    pub fn update_params(&mut self, id: u64, params: SamplingParams) -> Result<()> {
        params.validate(self.vocab, Some(id))?;
        let st = self
            .requests
            .get_mut(&id)
            .ok_or(Error::UnknownRequest { request: id })?;
        st.params = params;
        Ok(())
    }

    /// Forgets a request.
    pub fn drop_request(&mut self, id: u64) -> Result<()> {
        self.requests
            .remove(&id)
            .map(|_| ())
            .ok_or(Error::UnknownRequest { request: id })
    }

    pub fn get(&self, id: u64) -> Option<&RequestState> {
        self.requests.get(&id)
    }

    pub fn get_mut(&mut self, id: u64) -> Option<&mut RequestState> {
        self.requests.get_mut(&id)
    }
}
