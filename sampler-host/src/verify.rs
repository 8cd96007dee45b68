//! Speculative verification, multi-step mode: the CPU reference of docs/SEMANTICS.md §10.
//!
//! A request brings `n` draft tokens and `n + 1` target logits rows; the verifier accepts a
//! prefix of the drafts and emits one more token (the residual draw at the first rejection, or
//! a bonus token after the last draft). Every decision goes through the shared pure functions
//! of `sampler_kernels::verify` (exact 256-bit integer arithmetic), so a GPU kernel can match
//! it bit for bit. Kept apart from [`Backend`]: [`Verifier`] is the seam, implemented by
//! [`CpuReference`] here and by `gpu_verify::GpuVerifier` on the GPU.

use std::collections::HashSet;

use sampler_kernels::logit::bitmask_words;
use sampler_kernels::philox::{
    random_u64_at, STREAM_SPEC_ACCEPT, STREAM_SPEC_RESIDUAL, STREAM_TOKEN,
};
use sampler_kernels::status::{NO_TOKEN, STATUS_NO_VALID_TOKEN, STATUS_OK};
use sampler_kernels::verify::{
    draft_prob_valid, draft_units, residual_target, residual_weight, spec_accept, U256,
};

use crate::backend::Backend;
use crate::error::{Error, Field, Result};
use crate::logits::HostLogits;
use crate::reference::{
    draw, greedy_choice, in_runs, kept_set, logprobs, process_row, CpuReference, KeptSet,
};
use crate::state::{RequestState, RequestTable};

/// Most draft tokens one request may bring to the CPU reference.
pub const MAX_DRAFTS: usize = 64;

/// One request of a verification batch.
#[derive(Clone, Copy, Debug)]
pub struct VerifyRequest<'a> {
    /// The caller's request id (registered with the backend).
    pub request: u64,
    /// Draft tokens `d_0..d_{n-1}`; `n = 0` is allowed (then verification is one plain sample).
    pub drafts: &'a [u32],
    /// Draft distributions `q_j`, `n` dense rows of `vocab` f32 values in `[0, 1]` (each row
    /// normalised by its own sum). `None`: `q_j` is one-hot at `d_j` (greedy / n-gram drafters).
    pub draft_probs: Option<&'a [f32]>,
    /// Grammar bitmask of every target row: `n + 1` rows of `ceil(vocab / 32)` words.
    pub bitmask: Option<&'a [i32]>,
}

impl<'a> VerifyRequest<'a> {
    /// Drafts without probabilities (one-hot `q`) and without a bitmask.
    pub fn new(request: u64, drafts: &'a [u32]) -> Self {
        Self {
            request,
            drafts,
            draft_probs: None,
            bitmask: None,
        }
    }
    pub fn with_draft_probs(mut self, q: &'a [f32]) -> Self {
        self.draft_probs = Some(q);
        self
    }
    pub fn with_bitmask(mut self, m: &'a [i32]) -> Self {
        self.bitmask = Some(m);
        self
    }
}

/// One verification call. Logits are ragged: request `r` owns rows
/// `offsets[r] .. offsets[r] + n_r + 1` with `offsets[r] = Σ_{s<r} (n_s + 1)`.
#[derive(Clone, Debug)]
pub struct VerifyBatch<'a> {
    pub logits: HostLogits<'a>,
    pub requests: Vec<VerifyRequest<'a>>,
}

impl VerifyBatch<'_> {
    /// Cumulative row offsets, one per request plus the total at the end.
    pub fn row_offsets(&self) -> Vec<usize> {
        let mut out = Vec::with_capacity(self.requests.len() + 1);
        let mut acc = 0usize;
        out.push(0);
        for r in &self.requests {
            acc = acc.saturating_add(r.drafts.len().saturating_add(1));
            out.push(acc);
        }
        out
    }
}

/// What verification emits for one request.
#[derive(Clone, Debug, PartialEq)]
pub struct VerifyOutput {
    /// Drafts accepted (a prefix of the drafts).
    pub accepted: usize,
    /// `n + 1` entries: the emitted tokens (accepted drafts, then the residual or bonus token),
    /// then `-1` padding.
    pub tokens: Vec<i32>,
    /// `STATUS_OK`, or `STATUS_NO_VALID_TOKEN` when a target row reached by the chain had no
    /// valid token (then only the drafts accepted before it are emitted).
    pub status: u32,
    /// Logprob of each emitted token under its position's target distribution, when asked.
    pub logprobs: Vec<f32>,
    /// Top logprobs of each emitted token's position, when asked.
    pub top_logprobs: Vec<Vec<(u32, f32)>>,
}

impl VerifyOutput {
    /// The emitted tokens (without padding).
    pub fn emitted(&self) -> &[i32] {
        let n = self.tokens.iter().take_while(|&&t| t >= 0).count();
        self.tokens.get(..n).unwrap_or(&[])
    }
}

/// A backend that can verify speculative drafts (docs/SEMANTICS.md §10). Separate from
/// [`Backend`]: the CPU reference and `gpu_verify::GpuVerifier` implement it.
pub trait Verifier {
    /// Most drafts one request may bring.
    fn max_drafts(&self) -> usize;
    /// Verifies every request of `batch` and advances each request's state (step + 1, emitted
    /// tokens counted). On error nothing has been verified and no state has changed.
    fn verify(&mut self, batch: &VerifyBatch<'_>) -> Result<Vec<VerifyOutput>>;
}

/// The draft distribution `q_j` of one position in fixed point: `q_i / Q`.
#[derive(Clone, Debug, PartialEq)]
pub enum DraftDist {
    /// `q = 1` at the draft token, 0 elsewhere (`Q = 1`).
    OneHot(u32),
    /// `units[i] = trunc(q_i · 2^63)`, `total = Σ units > 0`.
    Row { units: Vec<u64>, total: u128 },
}

impl DraftDist {
    /// Fixed-point row of f32 probabilities (validated by [`validate_verify_batch`]).
    pub fn from_probs(q: &[f32]) -> Self {
        let units: Vec<u64> = q.iter().map(|&v| draft_units(v)).collect();
        let total = units.iter().map(|&u| u as u128).sum();
        DraftDist::Row { units, total }
    }

    /// `q` units of `token`.
    pub fn units(&self, token: u32) -> u64 {
        match self {
            DraftDist::OneHot(d) => (*d == token) as u64,
            DraftDist::Row { units, .. } => units.get(token as usize).copied().unwrap_or(0),
        }
    }

    /// `Q`.
    pub fn total(&self) -> u128 {
        match self {
            DraftDist::OneHot(_) => 1,
            DraftDist::Row { total, .. } => *total,
        }
    }
}

/// Weight of `token` in the kept set (0 outside it).
pub fn kept_weight(kept: &KeptSet, token: u32) -> u128 {
    kept.tokens
        .iter()
        .position(|&t| t == token)
        .and_then(|i| kept.weights.get(i).copied())
        .unwrap_or(0)
}

/// The acceptance test of draft `d` against the kept set with the draw `r64`.
pub fn accept_draft(kept: &KeptSet, q: &DraftDist, d: u32, r64: u64) -> bool {
    spec_accept(kept_weight(kept, d), kept.total, q.units(d), q.total(), r64)
}

/// The residual draw: weights `max(0, W_i·Q − q_i·Z)` over the kept set, walked in index
/// order, first running sum above `floor(R · r64 / 2^64)`. If the residual is empty (`p == q`
/// exactly, so a rejection had probability 0) it falls back to the plain draw from `p`.
pub fn residual_draw(kept: &KeptSet, q: &DraftDist, r64: u64) -> Option<u32> {
    let by_index = crate::reference::kept_by_index(kept);
    let (z, qt) = (kept.total, q.total());
    let res: Vec<(u32, U256)> = by_index
        .iter()
        .map(|&(t, w)| (t, residual_weight(w, z, q.units(t), qt)))
        .collect();
    let total = res.iter().fold(U256::ZERO, |a, &(_, r)| a.wrapping_add(r));
    if total.is_zero() {
        return draw(kept, r64);
    }
    let u = residual_target(total, r64);
    let mut acc = U256::ZERO;
    for (t, r) in res {
        acc = acc.wrapping_add(r);
        if acc > u {
            return Some(t);
        }
    }
    None
}

/// Top `n` logprobs of a processed row, best first, among tokens above `-inf` (as in `sample`).
fn top_logprobs(x: &[f32], lp: &[f64], n: usize) -> Vec<(u32, f32)> {
    let mut order: Vec<u32> = (0..x.len() as u32)
        .filter(|&i| x.get(i as usize).is_some_and(|&v| v > f32::NEG_INFINITY))
        .collect();
    let key = |i: &u32| {
        let v = x.get(*i as usize).copied().unwrap_or(f32::NEG_INFINITY);
        sampler_kernels::keys::sort_key(v, *i)
    };
    order.sort_unstable_by_key(|i| std::cmp::Reverse(key(i)));
    order
        .into_iter()
        .take(n)
        .map(|t| {
            (
                t,
                lp.get(t as usize).map_or(f32::NEG_INFINITY, |&v| v as f32),
            )
        })
        .collect()
}

/// Verifies one request without touching its state. `first_row` is its first logits row.
pub fn verify_request(
    logits: &HostLogits<'_>,
    first_row: usize,
    req: &VerifyRequest<'_>,
    state: &RequestState,
) -> VerifyOutput {
    let params = &state.params;
    let vocab = logits.vocab();
    let words = bitmask_words(vocab as u32) as usize;
    let n = req.drafts.len();
    let (seed, step) = (params.seed, state.step);
    // Position j sees d_0..d_{j-1} as output on top of the real history.
    let mut chain = state.clone();
    let mut raw = Vec::with_capacity(vocab);
    let mut emitted: Vec<(u32, Vec<f32>)> = Vec::with_capacity(n + 1);
    let mut accepted = 0usize;
    let mut status = STATUS_OK;
    for j in 0..=n {
        logits.row_f32(first_row + j, &mut raw);
        let mask = req.bitmask.and_then(|m| m.get(j * words..(j + 1) * words));
        let x = process_row(&raw, &chain, mask);
        let pos = j as u32;
        let draft = req.drafts.get(j).copied();
        let (token, accept) = if params.is_greedy() {
            match greedy_choice(&x) {
                Some(g) => (Some(g), draft == Some(g)),
                None => (None, false),
            }
        } else {
            let kept = kept_set(&x, params);
            if kept.tokens.is_empty() {
                (None, false)
            } else if let Some(d) = draft {
                let q = match req.draft_probs {
                    None => DraftDist::OneHot(d),
                    Some(all) => {
                        DraftDist::from_probs(all.get(j * vocab..(j + 1) * vocab).unwrap_or(&[]))
                    }
                };
                if accept_draft(
                    &kept,
                    &q,
                    d,
                    random_u64_at(seed, step, STREAM_SPEC_ACCEPT, pos),
                ) {
                    (Some(d), true)
                } else {
                    let r64 = random_u64_at(seed, step, STREAM_SPEC_RESIDUAL, pos);
                    (residual_draw(&kept, &q, r64), false)
                }
            } else {
                // Bonus token: the single-step draw, stream 0 at position n (so n = 0 is `sample`).
                (
                    draw(&kept, random_u64_at(seed, step, STREAM_TOKEN, pos)),
                    false,
                )
            }
        };
        let Some(t) = token else {
            status = STATUS_NO_VALID_TOKEN;
            break;
        };
        emitted.push((t, x));
        if !accept {
            break;
        }
        accepted += 1;
        let c = chain.output_counts.entry(t).or_insert(0);
        *c = c.saturating_add(1);
    }

    let mut tokens: Vec<i32> = emitted.iter().map(|(t, _)| *t as i32).collect();
    tokens.resize(n + 1, NO_TOKEN);
    let mut out = VerifyOutput {
        accepted,
        tokens,
        status,
        logprobs: Vec::new(),
        top_logprobs: Vec::new(),
    };
    if params.logprobs || params.top_logprobs > 0 {
        for (t, x) in &emitted {
            let lp = logprobs(x);
            if params.logprobs {
                out.logprobs
                    .push(lp.get(*t as usize).map_or(f32::NEG_INFINITY, |&v| v as f32));
            }
            if params.top_logprobs > 0 {
                out.top_logprobs
                    .push(top_logprobs(x, &lp, params.top_logprobs as usize));
            }
        }
    }
    out
}

fn invalid(request: Option<u64>, field: Field, reason: String) -> Error {
    Error::InvalidSetting {
        request,
        field,
        reason,
    }
}

/// Checks a verification batch before anything runs: capacities, shape and vocab, registered
/// and distinct requests, draft ids, draft-probability rows, bitmask lengths.
pub fn validate_verify_batch(
    batch: &VerifyBatch<'_>,
    table: &RequestTable,
    max_batch: usize,
    max_drafts: usize,
) -> Result<()> {
    let count = batch.requests.len();
    if count > max_batch {
        return Err(Error::CapacityExceeded {
            what: "verify requests",
            requested: count,
            capacity: max_batch,
        });
    }
    let vocab = table.vocab();
    if batch.logits.vocab() != vocab {
        return Err(invalid(
            None,
            Field::Logits,
            format!(
                "logits vocab {} differs from the sampler's {vocab}",
                batch.logits.vocab()
            ),
        ));
    }
    let words = bitmask_words(vocab as u32) as usize;
    let mut ids = HashSet::with_capacity(count);
    let mut rows = 0usize;
    for r in &batch.requests {
        let id = r.request;
        if table.get(id).is_none() {
            return Err(Error::UnknownRequest { request: id });
        }
        if !ids.insert(id) {
            return Err(Error::DuplicateRequest { request: id });
        }
        let n = r.drafts.len();
        if n > max_drafts {
            return Err(Error::CapacityExceeded {
                what: "draft tokens",
                requested: n,
                capacity: max_drafts,
            });
        }
        rows += n + 1;
        if let Some(&t) = r.drafts.iter().find(|&&t| t as usize >= vocab) {
            return Err(invalid(
                Some(id),
                Field::DraftTokens,
                format!("draft token {t} is outside the vocab of {vocab}"),
            ));
        }
        if let Some(q) = r.draft_probs {
            if q.len() != n * vocab {
                return Err(invalid(
                    Some(id),
                    Field::DraftTokens,
                    format!(
                        "{} draft probabilities given, {n} rows × {vocab} need {}",
                        q.len(),
                        n * vocab
                    ),
                ));
            }
            for (j, row) in q.chunks(vocab).enumerate() {
                if let Some((i, v)) = row.iter().enumerate().find(|(_, &v)| !draft_prob_valid(v)) {
                    return Err(invalid(
                        Some(id),
                        Field::DraftTokens,
                        format!("draft probability {v} (row {j}, token {i}) is not in [0, 1]"),
                    ));
                }
                if row.iter().all(|&v| draft_units(v) == 0) {
                    return Err(invalid(
                        Some(id),
                        Field::DraftTokens,
                        format!("draft probability row {j} has no mass (every value < 2^-63)"),
                    ));
                }
            }
        }
        if let Some(m) = r.bitmask {
            let need = (n + 1) * words;
            if m.len() < need {
                return Err(invalid(
                    Some(id),
                    Field::Bitmask,
                    format!(
                        "{} words given, {} rows of vocab {vocab} need {need}",
                        m.len(),
                        n + 1
                    ),
                ));
            }
        }
    }
    if batch.logits.rows() != rows {
        return Err(invalid(
            None,
            Field::Logits,
            format!(
                "{} logits rows for {rows} target rows (Σ drafts + 1)",
                batch.logits.rows()
            ),
        ));
    }
    Ok(())
}

impl Verifier for CpuReference {
    fn max_drafts(&self) -> usize {
        MAX_DRAFTS
    }

    fn verify(&mut self, batch: &VerifyBatch<'_>) -> Result<Vec<VerifyOutput>> {
        validate_verify_batch(batch, self.table(), self.max_batch(), MAX_DRAFTS)?;
        let offsets = batch.row_offsets();
        let table = self.table();
        // Requests are independent until the state update below: large calls on several
        // threads, in request order.
        let tokens = batch.logits.rows().saturating_mul(table.vocab());
        let outs = in_runs(batch.requests.len(), tokens, |range| {
            range
                .map(|i| {
                    let r = &batch.requests[i];
                    let state = table.get(r.request).ok_or(Error::UnknownRequest { request: r.request })?;
                    Ok(verify_request(&batch.logits, offsets[i], r, state))
                })
                .collect()
        })?;
        // State changes only once every request is done: one step per call, emitted tokens
        // counted (rejected drafts leave no trace).
        for (r, out) in batch.requests.iter().zip(&outs) {
            if let Some(state) = self.table_mut().get_mut(r.request) {
                for &t in out.emitted() {
                    let c = state.output_counts.entry(t as u32).or_insert(0);
                    *c = c.saturating_add(1);
                }
                state.step = state.step.wrapping_add(1);
            }
        }
        Ok(outs)
    }
}
