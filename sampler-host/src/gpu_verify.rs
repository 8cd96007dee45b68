//! Speculative verification on the GPU: [`GpuVerifier`], the [`Verifier`] of docs/SEMANTICS.md
//! §10 running `verify_rows`, `verify_draws` and `verify_chains` (sampler-kernels/src/spec.rs).
//!
//! A `GpuVerifier` wraps a [`GpuSampler`] and shares its request table and device state
//! (penalty counts, seeds, steps), so a request can alternate plain steps and verification
//! calls. It allocates its own buffers once, for `max_batch` requests of up to `max_drafts`
//! drafts each. A call uploads one buffer (header, per-request settings, the target-row map,
//! drafts, bias entries, bitmask rows) with one copy, then enqueues three kernels that neither
//! allocate nor synchronize, so they can be captured in a CUDA graph and replayed for any
//! batch that fits the capture.
//!
//! `verify_rows` and `verify_draws` are cooperative launches of fixed, co-resident grids
//! (blocks per SM by the occupancy calculator, times the SMs): with few target rows, the
//! blocks of a row meet at device-scope barriers, which is only safe when every block runs at
//! once. `verify_draws` runs the one draw each request's chain needs, between the two. Its scratch (a
//! processed-value cache as large as f32 target logits, per-block and per-row words) is
//! allocated here with the rest.
//!
//! A child module of `gpu` so that it can use the sampler's buffers without widening
//! `GpuSampler`'s API.

use std::marker::PhantomData;

use cudarc::driver::{CudaFunction, CudaSlice, CudaView, LaunchConfig, PushKernelArg};
use sampler_kernels::abi::{
    VerifyParams, VerifySettings, ROW_HAS_BITMASK, ROW_WANT_LOGPROB, SAMPLER_SHARED_BYTES, SAMPLER_THREADS,
    TILE_TOKENS, VERIFY_BLOCK_SCRATCH_BYTES, VERIFY_HEADER_RANDOM, VERIFY_HEADER_WORDS, VERIFY_CHAIN_THREADS, VERIFY_MAX_DRAFTS, VERIFY_MIN_DRAFTS, VERIFY_ONE_HOT, VERIFY_ROWS_SHARED_BYTES,
    VERIFY_CHUNK_TOKENS, VERIFY_ROW_SCRATCH_BYTES,
};
use sampler_kernels::status::STATUS_INVALID_SETTINGS;

use super::{as_bytes, copy_device_bitmask, device_address, reads_device_bitmask, device_address_mut, row_settings, dtype_bytes, dtype_code, DeviceBitmask, DeviceLogits, GpuSampler};
use crate::backend::{Backend, Batch, RowOutput};
use crate::cuda::{cuda_err, GpuDevice, KernelParams, OwnedGraph, PinnedReadback};
use crate::error::{Error, Field, Result};
use crate::logits::{strided_span, HostLogits, LogitsData};
use crate::settings::SamplingParams;
use crate::verify::{validate_verify_batch, Verifier, VerifyBatch, VerifyOutput};

// SAFETY: `VerifyParams` is a `#[repr(C)]` struct of u64/u32 device addresses and sizes from the
// ABI module, whose size and alignment are asserted there.
unsafe impl cudarc::driver::DeviceRepr for KernelParams<VerifyParams> {}

/// Draft-probability rows that live on the device: `rows` f32 rows of the vocab, `row_stride`
/// elements apart. Request `r` with draft probabilities owns rows `q_first(r) .. q_first(r) + n_r`,
/// where `q_first(r)` is the sum of `n_s` over the earlier requests that have them.
#[derive(Clone, Copy, Debug)]
pub struct DraftProbs<'a> {
    ptr: u64,
    rows: usize,
    row_stride: usize,
    elements: usize,
    context: Option<usize>,
    _borrow: PhantomData<&'a ()>,
}

impl<'a> DraftProbs<'a> {
    /// f32 rows of a device buffer.
    pub fn f32(slice: &'a CudaSlice<f32>, rows: usize, row_stride: usize) -> Self {
        Self {
            ptr: device_address(slice),
            rows,
            row_stride,
            elements: slice.len(),
            context: Some(slice.context().cu_ctx() as usize),
            _borrow: PhantomData,
        }
    }
}

/// One request of a device-level verification call. Its target logits rows are the next
/// `drafts.len() + 1` rows of the call's logits (ragged, in request order).
#[derive(Clone, Copy, Debug)]
pub struct DeviceVerifyRequest<'a> {
    /// The caller's request id (registered with the sampler).
    pub request: u64,
    /// Draft tokens `d_0..d_{n-1}` (`n ≤ max_drafts`; 0 allowed).
    pub drafts: &'a [u32],
    /// The request has `n` rows in the call's [`DraftProbs`]; otherwise `q` is one-hot.
    pub has_draft_probs: bool,
    /// Grammar bitmask of every target row: `n + 1` rows of `ceil(vocab / 32)` words.
    pub bitmask: Option<&'a [i32]>,
    /// The target rows' bitmasks are their rows of the call's device bitmask, which has a row
    /// for every target row, as the logits do ([`GpuVerifier::upload_verify_with_bitmask`]);
    /// not with `bitmask`.
    pub device_bitmask: bool,
}

/// Offsets inside the per-call upload buffer.
#[derive(Clone, Copy, Debug)]
struct VerifyLayout {
    settings: usize,
    row_map: usize,
    row_order: usize,
    drafts: usize,
    bias_tokens: usize,
    bias_values: usize,
    bitmask: usize,
}

impl VerifyLayout {
    fn new(max_batch: usize, max_rows: usize, max_drafts: usize, max_bias: usize, words: usize) -> (Self, usize) {
        let settings = VERIFY_HEADER_WORDS as usize * 4;
        let row_map = settings + max_batch * std::mem::size_of::<VerifySettings>();
        let row_order = row_map + max_rows * 8;
        let drafts = row_order + max_rows * 4;
        let bias_tokens = drafts + max_batch * max_drafts * 4;
        let bias_values = bias_tokens + max_bias * 4;
        let bitmask = (bias_values + max_bias * 4).next_multiple_of(16);
        let total = bitmask + max_rows * words * 4;
        (Self { settings, row_map, row_order, drafts, bias_tokens, bias_values, bitmask }, total)
    }
}

/// Where each output array sits in `GpuVerifier::out_words`, in words, for `requests`
/// requests of `width` (max drafts + 1) token slots: the accepted counts and statuses first,
/// then the tokens, so that one copy from word 0 reads all three for the first `n` requests
/// ([`Self::read_len`]) where three copies were three host round trips.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct OutputWords {
    requests: usize,
    width: usize,
}

impl OutputWords {
    fn accepted(&self) -> std::ops::Range<usize> {
        0..self.requests
    }

    fn status(&self) -> std::ops::Range<usize> {
        self.requests..2 * self.requests
    }

    /// `i32[requests][width]` bits.
    fn tokens(&self) -> std::ops::Range<usize> {
        2 * self.requests..2 * self.requests + self.requests * self.width
    }

    fn total(&self) -> usize {
        self.tokens().end
    }

    /// Words from word 0 that hold every output of the first `n ≤ requests` requests.
    fn read_len(&self, n: usize) -> usize {
        self.tokens().start + n * self.width
    }
}

/// A verification call's outputs in device memory ([`GpuVerifier::device_outputs`]): request
/// `i` of the last upload is entry `i` of `accepted` and `status`, and row `i` of `tokens`.
#[derive(Debug)]
#[non_exhaustive]
pub struct VerifyDeviceOutputs<'a> {
    /// `i32[max_batch][width]`: each request's emitted tokens (its accepted drafts, then the
    /// correction or bonus token), padded with −1.
    pub tokens: CudaView<'a, i32>,
    /// Token slots a request: `max_drafts + 1`.
    pub width: usize,
    /// `u32[max_batch]`: each request's accepted drafts.
    pub accepted: CudaView<'a, u32>,
    /// `u32[max_batch]`: each request's status (`sampler_kernels::status`).
    pub status: CudaView<'a, u32>,
}

/// A verification call captured in a CUDA graph, for up to `rows` target rows and `q_rows`
/// draft-probability rows.
pub struct VerifyGraph {
    graph: OwnedGraph,
    rows: usize,
    q_rows: usize,
}

impl VerifyGraph {
    /// Target rows the graph was captured for.
    pub fn rows(&self) -> usize {
        self.rows
    }
}

/// What the last upload holds about each request.
#[derive(Clone, Copy, Debug)]
struct Uploaded {
    drafts: usize,
    want_logprobs: bool,
}

/// A call's outputs as copied to the host, request `i` at index `i` of `accepted` and
/// `status` and at row `i` of `tokens` and `logprobs` (`width` entries a row; `logprobs` empty
/// when no request asked for them).
struct HostVerifyOutputs<'a> {
    accepted: &'a [u32],
    status: &'a [u32],
    /// `i32` bits, −1 padding.
    tokens: &'a [u32],
    logprobs: &'a [f32],
    width: usize,
}

/// Writes one [`VerifyOutput`] a request of `uploaded` into `outs`, reusing its entries and
/// their vectors, and drops the entries past them. A request's row is its `drafts + 1` token
/// slots; its log-probabilities are those of its emitted tokens, when it asked.
fn fill_verify_outputs(uploaded: &[Uploaded], read: &HostVerifyOutputs<'_>, outs: &mut Vec<VerifyOutput>) {
    outs.truncate(uploaded.len());
    for (i, u) in uploaded.iter().enumerate() {
        let start = i * read.width;
        let row = read.tokens.get(start..start + u.drafts + 1).unwrap_or(&[]);
        let emitted = row.iter().take_while(|&&t| t as i32 >= 0).count();
        let logprobs = if u.want_logprobs { read.logprobs.get(start..start + emitted).unwrap_or(&[]) } else { &[] };
        let accepted = read.accepted.get(i).copied().unwrap_or(0) as usize;
        let status = read.status.get(i).copied().unwrap_or(STATUS_INVALID_SETTINGS);
        if outs.len() <= i {
            outs.push(VerifyOutput { accepted: 0, tokens: Vec::with_capacity(row.len()), status, logprobs: Vec::new(), top_logprobs: Vec::new() });
        }
        let Some(o) = outs.get_mut(i) else { return };
        (o.accepted, o.status) = (accepted, status);
        o.tokens.clear();
        o.tokens.extend(row.iter().map(|&w| w as i32));
        o.logprobs.clear();
        o.logprobs.extend_from_slice(logprobs);
        // GPU verification reports no top log-probabilities (refused at upload).
        o.top_logprobs.clear();
    }
}

/// Speculative verification on the GPU. See the module documentation.
pub struct GpuVerifier {
    sampler: GpuSampler,
    max_drafts: usize,
    max_rows: usize,
    layout: VerifyLayout,
    rows_fn: CudaFunction,
    draws_fn: CudaFunction,
    chains_fn: CudaFunction,
    staging: Vec<u8>,
    upload: CudaSlice<u8>,
    row_results: CudaSlice<u8>,
    /// `verify_rows`' processed-value cache, per-block and per-row scratch (module docs).
    cache: CudaSlice<f32>,
    /// The largest key of each 256-token chunk of the cache (`VerifyParams::chunk_max`).
    chunk_max: CudaSlice<u32>,
    group_scratch: CudaSlice<u8>,
    row_scratch: CudaSlice<u8>,
    /// The last call's chains (`VerifyParams::chain_stats`), kept across calls.
    chain_stats: CudaSlice<u64>,
    /// Blocks of the cooperative `verify_rows` and `verify_draws` grids.
    rows_grid: u32,
    draws_grid: u32,
    /// Accepted counts, statuses and tokens in one allocation (`OutputWords`), so that
    /// `read_verify_outputs` reads them with one copy.
    out_words: CudaSlice<u32>,
    out_layout: OutputWords,
    out_logprobs: CudaSlice<f32>,
    /// Pinned host copies of `out_words` and `out_logprobs`: both copies are queued before the
    /// first wait, which alone waits for the call.
    readback_words: PinnedReadback<u32>,
    readback_logprobs: PinnedReadback<f32>,
    /// Device copies of host logits and draft probabilities for [`Verifier::verify`], grown on
    /// demand (outside any capture).
    logits_staging: Option<CudaSlice<u8>>,
    q_staging: Option<CudaSlice<f32>>,
    uploaded: Vec<Uploaded>,
    uploaded_rows: usize,
    uploaded_q_rows: usize,
}

/// Blocks of a cooperative grid of `function` (512 threads, `shared_bytes` of dynamic shared
/// memory): as many as can run at once, by the occupancy calculator.
fn cooperative_grid(gpu: &GpuDevice, function: &CudaFunction, shared_bytes: u32) -> Result<u32> {
    super::resident_blocks(gpu, function, SAMPLER_THREADS, shared_bytes, "sizing a verification grid")
}

impl GpuVerifier {
    /// A verifier over `sampler` for requests of up to `max_drafts` drafts (8 to 64), with
    /// every buffer allocated now.
    pub fn new(sampler: GpuSampler, max_drafts: usize) -> Result<Self> {
        if !(VERIFY_MIN_DRAFTS as usize..=VERIFY_MAX_DRAFTS as usize).contains(&max_drafts) {
            return Err(Error::CapacityExceeded { what: "draft capacity (8..=64)", requested: max_drafts, capacity: VERIFY_MAX_DRAFTS as usize });
        }
        let max_batch = sampler.config.max_batch;
        let max_rows = max_batch * (max_drafts + 1);
        if max_rows > u32::MAX as usize / 2 {
            return Err(Error::CapacityExceeded { what: "verification rows", requested: max_rows, capacity: u32::MAX as usize / 2 });
        }
        let (layout, total) =
            VerifyLayout::new(max_batch, max_rows, max_drafts, sampler.config.max_bias_entries.max(1), sampler.bitmask_words);
        let stream = sampler.gpu.stream().clone();
        let alloc = cuda_err("allocating verification memory");
        let width = max_batch * (max_drafts + 1);
        let out_layout = OutputWords { requests: max_batch, width: max_drafts + 1 };
        let rows_fn = super::function_with_shared(&sampler.gpu, "verify_rows", VERIFY_ROWS_SHARED_BYTES)?;
        let rows_grid = cooperative_grid(&sampler.gpu, &rows_fn, VERIFY_ROWS_SHARED_BYTES)?;
        let draws_fn = sampler.gpu.function("verify_draws")?;
        let draws_grid = cooperative_grid(&sampler.gpu, &draws_fn, SAMPLER_SHARED_BYTES)?;
        let cache_len = max_rows * sampler.tiles as usize * TILE_TOKENS as usize;
        let verifier = Self {
            rows_fn,
            draws_fn,
            chains_fn: sampler.gpu.function("verify_chains")?,
            staging: vec![0u8; total],
            upload: stream.alloc_zeros::<u8>(total).map_err(alloc)?,
            row_results: stream.alloc_zeros::<u8>(max_rows * 32).map_err(cuda_err("allocating verification rows"))?,
            cache: stream.alloc_zeros::<f32>(cache_len).map_err(cuda_err("allocating verification scratch"))?,
            chunk_max: stream
                .alloc_zeros::<u32>(cache_len / VERIFY_CHUNK_TOKENS as usize)
                .map_err(cuda_err("allocating verification scratch"))?,
            group_scratch: stream.alloc_zeros::<u8>(rows_grid as usize * VERIFY_BLOCK_SCRATCH_BYTES as usize).map_err(cuda_err("allocating verification scratch"))?,
            row_scratch: stream.alloc_zeros::<u8>(max_rows * VERIFY_ROW_SCRATCH_BYTES as usize).map_err(cuda_err("allocating verification scratch"))?,
            chain_stats: stream.alloc_zeros::<u64>(1).map_err(cuda_err("allocating verification scratch"))?,
            rows_grid,
            draws_grid,
            out_words: stream.alloc_zeros::<u32>(out_layout.total()).map_err(cuda_err("allocating verification outputs"))?,
            out_layout,
            out_logprobs: stream.alloc_zeros::<f32>(width).map_err(cuda_err("allocating verification outputs"))?,
            readback_words: PinnedReadback::new(sampler.gpu.context(), out_layout.total(), "allocating the pinned verification readback")?,
            readback_logprobs: PinnedReadback::new(sampler.gpu.context(), width, "allocating the pinned verification readback")?,
            logits_staging: None,
            q_staging: None,
            sampler,
            max_drafts,
            max_rows,
            layout,
            uploaded: Vec::new(),
            uploaded_rows: 0,
            uploaded_q_rows: 0,
        };
        verifier.sampler.gpu.synchronize()?;
        Ok(verifier)
    }

    /// The sampler underneath (requests, plain steps).
    pub fn sampler(&self) -> &GpuSampler {
        &self.sampler
    }

    /// Mutable access to the sampler underneath.
    pub fn sampler_mut(&mut self) -> &mut GpuSampler {
        &mut self.sampler
    }

    /// Gives the sampler back.
    pub fn into_sampler(self) -> GpuSampler {
        self.sampler
    }

    /// The device the verifier runs on.
    pub fn device(&self) -> &GpuDevice {
        &self.sampler.gpu
    }

    /// Most target rows one call may have: `max_batch · (max_drafts + 1)`.
    pub fn max_rows(&self) -> usize {
        self.max_rows
    }

    /// Target rows of the last upload (`Σ (n_r + 1)`).
    pub fn uploaded_rows(&self) -> usize {
        self.uploaded_rows
    }

    /// Draft-probability rows the last upload needs.
    pub fn uploaded_q_rows(&self) -> usize {
        self.uploaded_q_rows
    }

    /// Builds and uploads one call's settings, row map, drafts, bias entries and bitmask rows,
    /// in one copy. Validates everything first; on error nothing is uploaded. Requests with a
    /// device bitmask need [`Self::upload_verify_with_bitmask`].
    pub fn upload_verify(&mut self, requests: &[DeviceVerifyRequest<'_>]) -> Result<()> {
        self.upload(requests, None)
    }

    /// [`Self::upload_verify`] for a call whose bitmasks are already on the device: the target
    /// rows of requests with `device_bitmask` take their rows of `bitmask` (row `i` for target
    /// row `i`, as the logits are laid out), copied on the sampler's stream with the settings,
    /// as [`GpuSampler::upload_step_with_bitmask`] does. A call takes its bitmasks from the host
    /// or from the device, not both. Nothing is uploaded on error.
    pub fn upload_verify_with_bitmask(&mut self, requests: &[DeviceVerifyRequest<'_>], bitmask: &DeviceBitmask<'_>) -> Result<()> {
        self.upload(requests, Some(bitmask))
    }

    fn upload(&mut self, requests: &[DeviceVerifyRequest<'_>], device_bitmask: Option<&DeviceBitmask<'_>>) -> Result<()> {
        let max_batch = self.sampler.config.max_batch;
        if requests.len() > max_batch {
            return Err(Error::CapacityExceeded { what: "verify requests", requested: requests.len(), capacity: max_batch });
        }
        let vocab = self.sampler.config.vocab;
        let words = self.sampler.bitmask_words;
        // A request named twice has its slot taken twice, as in a step's upload.
        let marks = &mut self.sampler.slot_marks;
        marks.begin();
        let mut settings = Vec::with_capacity(requests.len());
        let mut row_map: Vec<u32> = Vec::new();
        let mut bias_tokens = Vec::new();
        let mut bias_values = Vec::new();
        let mut uploaded = Vec::with_capacity(requests.len());
        let (mut rows, mut q_rows, mut mask_rows) = (0usize, 0usize, 0usize);
        // Target rows up to the last one that reads the device bitmask: the copy's height.
        let mut device_mask_rows = 0usize;
        for (r, req) in requests.iter().enumerate() {
            let id = req.request;
            let state = self.sampler.table.get(id).ok_or(Error::UnknownRequest { request: id })?;
            let slot = self.sampler.slots.get(&id).copied().ok_or(Error::UnknownRequest { request: id })?;
            if !marks.take(slot) {
                return Err(Error::DuplicateRequest { request: id });
            }
            let p: &SamplingParams = &state.params;
            let n = req.drafts.len();
            if n > self.max_drafts {
                return Err(Error::CapacityExceeded { what: "draft tokens", requested: n, capacity: self.max_drafts });
            }
            if let Some(&t) = req.drafts.iter().find(|&&t| t as usize >= vocab) {
                return Err(Error::InvalidSetting {
                    request: Some(id),
                    field: Field::DraftTokens,
                    reason: format!("draft token {t} is outside the vocab of {vocab}"),
                });
            }
            if p.top_logprobs > 0 {
                return Err(Error::InvalidSetting {
                    request: Some(id),
                    field: Field::TopLogprobs,
                    reason: "GPU verification reports the chosen tokens' logprobs, not top logprobs".into(),
                });
            }
            let mut flags = 0;
            let bitmask_error = |reason: &str| Error::InvalidSetting { request: Some(id), field: Field::Bitmask, reason: reason.into() };
            if reads_device_bitmask(req.bitmask.is_some(), req.device_bitmask, device_bitmask.is_some()).map_err(bitmask_error)? {
                flags |= ROW_HAS_BITMASK;
                device_mask_rows = rows + n + 1;
            }
            if let Some(mask) = req.bitmask {
                let need = (n + 1) * words;
                if mask.len() < need {
                    return Err(Error::InvalidSetting {
                        request: Some(id),
                        field: Field::Bitmask,
                        reason: format!("{} words given, {} rows of vocab {vocab} need {need}", mask.len(), n + 1),
                    });
                }
                flags |= ROW_HAS_BITMASK;
            }
            if p.logprobs {
                flags |= ROW_WANT_LOGPROB;
            }
            settings.push(VerifySettings {
                row: row_settings(p, slot, bias_tokens.len(), flags),
                drafts: n as u32,
                first_row: rows as u32,
                // A request without drafts reads no q row, whatever the caller passed.
                q_first: if req.has_draft_probs && n > 0 { q_rows as u32 } else { VERIFY_ONE_HOT },
                _pad: 0,
            });
            for &(t, v) in &p.logit_bias {
                bias_tokens.push(t);
                bias_values.push(v);
            }
            for j in 0..=n {
                row_map.extend_from_slice(&[r as u32, j as u32]);
            }
            if req.bitmask.is_some() {
                mask_rows = rows + n + 1;
            }
            rows += n + 1;
            if req.has_draft_probs {
                q_rows += n;
            }
            uploaded.push(Uploaded { drafts: n, want_logprobs: p.logprobs });
        }
        let max_bias = self.sampler.config.max_bias_entries;
        if bias_tokens.len() > max_bias {
            return Err(Error::CapacityExceeded {
                what: "logit-bias entries in one call",
                requested: bias_tokens.len(),
                capacity: max_bias,
            });
        }
        if let Some(mask) = device_bitmask {
            self.sampler.check_device_bitmask(mask, device_mask_rows)?;
        }
        let l = self.layout;
        let staging = &mut self.staging;
        let put = |staging: &mut Vec<u8>, at: usize, bytes: &[u8]| staging[at..at + bytes.len()].copy_from_slice(bytes);
        let mut header = [0u32; VERIFY_HEADER_WORDS as usize];
        header[..4].copy_from_slice(&[requests.len() as u32, rows as u32, q_rows as u32, 0]);
        header[VERIFY_HEADER_RANDOM as usize] = settings.iter().filter(|s| s.row.temperature != 0.0).count() as u32;
        put(staging, 0, as_bytes(&header));
        put(staging, l.settings, as_bytes(&settings));
        put(staging, l.row_map, as_bytes(&row_map));
        put(staging, l.row_order, as_bytes(&position_major_rows(&settings)));
        for (r, req) in requests.iter().enumerate() {
            put(staging, l.drafts + r * self.max_drafts * 4, as_bytes(req.drafts));
        }
        put(staging, l.bias_tokens, as_bytes(&bias_tokens));
        put(staging, l.bias_values, as_bytes(&bias_values));
        for (req, s) in requests.iter().zip(&settings) {
            if let Some(mask) = req.bitmask {
                let n = (s.drafts as usize + 1) * words;
                put(staging, l.bitmask + s.first_row as usize * words * 4, as_bytes(&mask[..n]));
            }
        }
        let used = if mask_rows > 0 { l.bitmask + mask_rows * words * 4 } else { l.bitmask };
        let stream = self.sampler.gpu.stream().clone();
        // The device rows first: a copy the driver refuses then changes nothing.
        if let (Some(mask), true) = (device_bitmask, device_mask_rows > 0) {
            let region = device_address_mut(&mut self.upload) + l.bitmask as u64;
            // SAFETY: `check_device_bitmask` checked `mask` for these rows; the upload's bitmask
            // region holds `max_rows ≥ device_mask_rows` rows of `words` words (each request has
            // at most `max_drafts + 1` target rows).
            unsafe { copy_device_bitmask(&self.sampler.gpu, region, mask, words, device_mask_rows) }?;
        }
        stream
            .memcpy_htod(&self.staging[..used], &mut self.upload.slice_mut(0..used))
            .map_err(cuda_err("uploading the verification settings"))?;
        self.uploaded = uploaded;
        self.uploaded_rows = rows;
        self.uploaded_q_rows = q_rows;
        Ok(())
    }

    fn check_inputs(&self, logits: &DeviceLogits<'_>, q: Option<&DraftProbs<'_>>, rows: usize, q_rows: usize) -> Result<()> {
        let invalid = |field, reason: String| Error::InvalidSetting { request: None, field, reason };
        let vocab = self.sampler.config.vocab;
        if rows > self.max_rows {
            return Err(Error::CapacityExceeded { what: "verification rows", requested: rows, capacity: self.max_rows });
        }
        let own = self.sampler.gpu.context().cu_ctx() as usize;
        if logits.rows < rows {
            return Err(invalid(Field::Logits, format!("{} logits rows for {rows} target rows", logits.rows)));
        }
        if logits.context.is_some_and(|c| c != own) {
            return Err(invalid(Field::Logits, "the logits buffer belongs to another CUDA context".into()));
        }
        if logits.element_bytes != dtype_bytes(logits.dtype) {
            return Err(invalid(Field::Logits, format!("dtype {:?} over {}-byte elements", logits.dtype, logits.element_bytes)));
        }
        if logits.row_stride < vocab {
            return Err(invalid(Field::Logits, format!("row stride {} is below the vocab {vocab}", logits.row_stride)));
        }
        let covers = |rows: usize, stride: usize, elements: usize| strided_span(rows, vocab, stride).is_some_and(|n| n <= elements);
        if !covers(rows, logits.row_stride, logits.elements) {
            return Err(invalid(Field::Logits, format!("{} elements cannot hold {rows} rows of stride {}", logits.elements, logits.row_stride)));
        }
        match q {
            None if q_rows > 0 => Err(invalid(Field::DraftTokens, format!("{q_rows} draft-probability rows needed, none given"))),
            None => Ok(()),
            Some(q) => {
                if q.rows < q_rows || q.row_stride < vocab || !covers(q.rows, q.row_stride, q.elements) {
                    return Err(invalid(
                        Field::DraftTokens,
                        format!("{} draft-probability rows (stride {}, {} elements) for {q_rows} needed", q.rows, q.row_stride, q.elements),
                    ));
                }
                if q.context.is_some_and(|c| c != own) {
                    return Err(invalid(Field::DraftTokens, "the draft-probability buffer belongs to another CUDA context".into()));
                }
                if u32::try_from(q.rows).is_err() {
                    return Err(invalid(Field::DraftTokens, format!("{} draft-probability rows", q.rows)));
                }
                Ok(())
            }
        }
    }

    fn params(&mut self, logits: &DeviceLogits<'_>, q: Option<&DraftProbs<'_>>, rows: usize) -> VerifyParams {
        let l = self.layout;
        let upload = device_address_mut(&mut self.upload);
        let out_words = device_address_mut(&mut self.out_words);
        let s = &mut self.sampler;
        VerifyParams {
            logits: logits.ptr,
            row_stride: logits.row_stride as u64,
            q: q.map_or(0, |q| q.ptr),
            q_stride: q.map_or(0, |q| q.row_stride as u64),
            header: upload,
            settings: upload + l.settings as u64,
            row_map: upload + l.row_map as u64,
            row_order: upload + l.row_order as u64,
            drafts: upload + l.drafts as u64,
            bitmask: upload + l.bitmask as u64,
            bias_tokens: upload + l.bias_tokens as u64,
            bias_values: upload + l.bias_values as u64,
            counts: device_address_mut(&mut s.counts),
            seeds: device_address_mut(&mut s.seeds),
            steps: device_address_mut(&mut s.steps),
            row_results: device_address_mut(&mut self.row_results),
            cache: device_address_mut(&mut self.cache),
            chunk_max: device_address_mut(&mut self.chunk_max),
            group_scratch: device_address_mut(&mut self.group_scratch),
            row_scratch: device_address_mut(&mut self.row_scratch),
            chain_stats: device_address_mut(&mut self.chain_stats),
            out_tokens: out_words + 4 * self.out_layout.tokens().start as u64,
            out_accepted: out_words + 4 * self.out_layout.accepted().start as u64,
            out_status: out_words + 4 * self.out_layout.status().start as u64,
            out_logprobs: device_address_mut(&mut self.out_logprobs),
            dtype: dtype_code(logits.dtype),
            vocab: s.config.vocab as u32,
            rows: rows as u32,
            requests: s.config.max_batch as u32,
            max_drafts: self.max_drafts as u32,
            q_rows: q.map_or(0, |q| q.rows as u32),
            tiles: s.tiles,
            bitmask_words: s.bitmask_words as u32,
            bias_capacity: s.config.max_bias_entries.max(1) as u32,
            slots: s.config.max_requests as u32,
            counts_stride: s.counts_stride as u32,
            _pad: 0,
        }
    }

    /// Enqueues the three kernels for a grid of `rows` target rows. Nothing here synchronizes or
    /// allocates.
    fn enqueue(&mut self, logits: &DeviceLogits<'_>, q: Option<&DraftProbs<'_>>, rows: usize) -> Result<()> {
        if rows == 0 {
            return Ok(());
        }
        let params = KernelParams(self.params(logits, q, rows));
        let stream = self.sampler.gpu.stream().clone();
        let rows_cfg = LaunchConfig {
            grid_dim: (self.rows_grid, 1, 1),
            block_dim: (SAMPLER_THREADS, 1, 1),
            shared_mem_bytes: VERIFY_ROWS_SHARED_BYTES,
        };
        let draws_cfg =
            LaunchConfig { grid_dim: (self.draws_grid, 1, 1), shared_mem_bytes: SAMPLER_SHARED_BYTES, ..rows_cfg };
        let chain_blocks = (self.sampler.config.max_batch as u32).div_ceil(VERIFY_CHAIN_THREADS);
        let chains_cfg =
            LaunchConfig { grid_dim: (chain_blocks, 1, 1), block_dim: (VERIFY_CHAIN_THREADS, 1, 1), shared_mem_bytes: 0 };
        // SAFETY (both launches): `VerifyParams` matches the kernels' parameter by the ABI
        // module; every pointer addresses a buffer allocated for max_batch requests, max_rows
        // target rows (rows ≤ max_rows was checked), max_requests slots, the vocab's tiles and
        // the rows grid, or the caller's logits and draft probabilities, checked against rows,
        // stride and length; grid, block and shared-memory sizes are the ones the kernels
        // document: the verify_rows and verify_draws grids are what the occupancy calculator
        // lets run at once, and their launches are cooperative, so their group barriers cannot
        // wait on an unscheduled block.
        unsafe {
            let mut rows_launch = stream.launch_builder(&self.rows_fn);
            rows_launch.arg(&params);
            rows_launch.launch_cooperative(rows_cfg).map_err(cuda_err("launching verify_rows"))?;
            let mut draws_launch = stream.launch_builder(&self.draws_fn);
            draws_launch.arg(&params);
            draws_launch.launch_cooperative(draws_cfg).map_err(cuda_err("launching verify_draws"))?;
            let mut chains_launch = stream.launch_builder(&self.chains_fn);
            chains_launch.arg(&params);
            chains_launch.launch(chains_cfg).map_err(cuda_err("launching verify_chains"))?;
        }
        Ok(())
    }

    /// Enqueues one verification call on device logits (`Σ (n_r + 1)` ragged rows) and, when a
    /// request has them, device draft probabilities, with the settings of the last
    /// [`Self::upload_verify`].
    pub fn enqueue_verify(&mut self, logits: &DeviceLogits<'_>, q: Option<&DraftProbs<'_>>) -> Result<()> {
        let (rows, q_rows) = (self.uploaded_rows, self.uploaded_q_rows);
        self.check_inputs(logits, q, rows, q_rows)?;
        self.enqueue(logits, q, rows)
    }

    /// Captures a verification call for up to `rows` target rows into a CUDA graph. Replays use
    /// the logits, draft probabilities, settings, seeds and penalty state current at replay time.
    ///
    /// # Safety
    /// The graph keeps the device addresses of `logits` and `q`. The caller keeps that memory
    /// allocated, with at least the shapes given here, for as long as it replays the graph.
    pub unsafe fn capture_verify(&mut self, logits: &DeviceLogits<'_>, q: Option<&DraftProbs<'_>>, rows: usize) -> Result<VerifyGraph> {
        let q_rows = q.map_or(0, |q| q.rows);
        self.check_inputs(logits, q, rows, q_rows)?;
        let stream = self.sampler.gpu.stream().clone();
        stream
            .begin_capture(cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(cuda_err("beginning stream capture"))?;
        let enqueued = self.enqueue(logits, q, rows);
        let ended = stream.end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0));
        enqueued?;
        let graph = ended
            .map_err(cuda_err("ending stream capture"))?
            .ok_or(Error::Cuda { op: "ending stream capture", detail: "the capture recorded no work".into() })?;
        Ok(VerifyGraph { graph: graph.into(), rows, q_rows })
    }

    /// Enqueues one replay of `graph` for the last upload, which must fit the capture.
    pub fn replay(&mut self, graph: &VerifyGraph) -> Result<()> {
        if self.uploaded_rows > graph.rows {
            return Err(Error::CapacityExceeded { what: "target rows uploaded for this graph", requested: self.uploaded_rows, capacity: graph.rows });
        }
        if self.uploaded_q_rows > graph.q_rows {
            return Err(Error::CapacityExceeded {
                what: "draft-probability rows uploaded for this graph",
                requested: self.uploaded_q_rows,
                capacity: graph.q_rows,
            });
        }
        graph.graph.launch().map_err(cuda_err("replaying the verification graph"))
    }

    /// Waits for the call and reads every request's outputs.
    ///
    /// Allocates the outputs it returns; [`Self::read_verify_outputs_into`] reuses a caller's.
    pub fn read_verify_outputs(&mut self) -> Result<Vec<VerifyOutput>> {
        let mut outs = Vec::new();
        self.read_verify_outputs_into(&mut outs)?;
        Ok(outs)
    }

    /// Waits for the call and reads every request's outputs into `outs`, one entry a request,
    /// in upload order. Entries and their vectors are overwritten in place, so a `Vec` kept
    /// from call to call stops allocating; entries past the batch are dropped.
    pub fn read_verify_outputs_into(&mut self, outs: &mut Vec<VerifyOutput>) -> Result<()> {
        let n = self.uploaded.len();
        let width = self.max_drafts + 1;
        let stream = self.sampler.gpu.stream().clone();
        const READ_OP: &str = "reading the verification outputs";
        let out = self.out_layout;
        // The log-probabilities only when a request asked for them; both copies are queued
        // before the first wait.
        let wants_logprobs = self.uploaded.iter().any(|u| u.want_logprobs);
        self.readback_words.queue(&stream, &self.out_words.slice(0..out.read_len(n)), READ_OP)?;
        if wants_logprobs {
            self.readback_logprobs.queue(&stream, &self.out_logprobs.slice(0..n * width), READ_OP)?;
        }
        let words = self.readback_words.read(READ_OP)?;
        let read = HostVerifyOutputs {
            accepted: &words[out.accepted()],
            status: &words[out.status()],
            tokens: &words[out.tokens().start..],
            logprobs: if wants_logprobs { self.readback_logprobs.read(READ_OP)? } else { &[] },
            width,
        };
        // Penalty counts and step counters advanced on the device: the host keeps no copy.
        fill_verify_outputs(&self.uploaded, &read, outs);
        Ok(())
    }

    /// The outputs of verification calls in device memory, for work that consumes them without
    /// a host round trip (the next forward pass's input ids and positions).
    ///
    /// As with [`GpuSampler::device_outputs`]: the arrays hold `max_batch` requests at addresses
    /// fixed for the verifier's life; entries `0..requests` of the last upload hold that call's
    /// outputs once its work on the sampler's stream is done (consume them in that stream's
    /// order, or after an event recorded on it); entries past them are stale. The request state
    /// on the device advances with the call; [`Self::read_verify_outputs`] only reads.
    pub fn device_outputs(&self) -> Result<VerifyDeviceOutputs<'_>> {
        let out = self.out_layout;
        // SAFETY: every u32 bit pattern is a valid i32, and `verify_chains` writes tokens as i32 bits.
        let tokens = unsafe { self.out_words.slice(out.tokens()).transmute::<i32>(out.tokens().len()) }.ok_or(Error::Cuda {
            op: "viewing the verification outputs",
            detail: format!("{} token words not allocated", out.tokens().len()),
        })?;
        Ok(VerifyDeviceOutputs {
            tokens,
            width: out.width,
            accepted: self.out_words.slice(out.accepted()),
            status: self.out_words.slice(out.status()),
        })
    }

    /// Blocks of `verify_rows`' grid (what the device holds at once). A call of more target
    /// rows than half of this, or one after a call whose chains mostly stopped at their first
    /// draft, has blocks or groups take rows in turn, skipping rows past a known stop
    /// (`sampler_kernels::verify::group_shape`); otherwise each row gets a group of blocks.
    pub fn rows_grid(&self) -> usize {
        self.rows_grid as usize
    }

    /// Waits for the stream, then reads how many target rows the last call's `verify_rows`
    /// skipped because an earlier row of their request had already stopped the chain (a
    /// diagnostic: the outputs are the same whatever it is). It counts from the last upload,
    /// so a graph replayed twice without a new upload adds both replays.
    pub fn skipped_rows(&self) -> Result<u32> {
        let stream = self.sampler.gpu.stream().clone();
        let header = stream.clone_dtoh(&self.upload.slice(12..16)).map_err(cuda_err("reading the verification header"))?;
        Ok(u32::from_le_bytes([header[0], header[1], header[2], header[3]]))
    }

    /// Waits for the stream, then reads what the last call's chains did, as the next call's
    /// `verify_rows` will read it to choose its layout (`VerifyParams::chain_stats`): of its
    /// requests with drafts, how many stopped at their first draft, and how many accepted one
    /// or more. Zeros before the first call. A diagnostic: the outputs do not depend on it.
    pub fn last_chains(&self) -> Result<(u32, u32)> {
        let stream = self.sampler.gpu.stream().clone();
        let stats = stream.clone_dtoh(&self.chain_stats).map_err(cuda_err("reading the verification chain counts"))?;
        let word = stats.first().copied().unwrap_or(0);
        Ok((word as u32, (word >> 32) as u32))
    }

    /// Copies host logits into the staging buffer (packed, stride = vocab), growing it first.
    fn stage_logits(&mut self, logits: &HostLogits<'_>) -> Result<DeviceLogits<'static>> {
        let (rows, vocab) = (logits.rows(), self.sampler.config.vocab);
        let elem = dtype_bytes(logits.dtype());
        let compact: &[u8] = match logits.data() {
            LogitsData::F32(d) => as_bytes(d),
            LogitsData::Bf16(d) => as_bytes(d),
            LogitsData::F16(d) => as_bytes(d),
        };
        let stride = logits.row_stride() * elem;
        let mut packed = Vec::with_capacity(rows * vocab * elem);
        for r in 0..rows {
            let row = compact.get(r * stride..r * stride + vocab * elem).ok_or(Error::InvalidSetting {
                request: None,
                field: Field::Logits,
                reason: format!("logits row {r} is outside the data"),
            })?;
            packed.extend_from_slice(row);
        }
        let stream = self.sampler.gpu.stream().clone();
        let need = packed.len().max(16);
        if self.logits_staging.as_ref().is_none_or(|s| s.len() < need) {
            self.logits_staging = Some(stream.alloc_zeros::<u8>(need).map_err(cuda_err("allocating the logits staging buffer"))?);
        }
        let buffer = self.logits_staging.as_mut().ok_or(Error::Cuda { op: "staging logits", detail: "no buffer".into() })?;
        if !packed.is_empty() {
            stream.memcpy_htod(&packed, &mut buffer.slice_mut(0..packed.len())).map_err(cuda_err("uploading logits"))?;
        }
        let ptr = device_address_mut(buffer);
        let mut view = DeviceLogits::from_parts(ptr, logits.dtype(), rows, vocab, rows * vocab);
        view.context = None;
        Ok(view)
    }

    /// Copies the requests' draft-probability rows, in request order, into the q staging buffer.
    fn stage_q(&mut self, batch: &VerifyBatch<'_>) -> Result<Option<DraftProbs<'static>>> {
        let vocab = self.sampler.config.vocab;
        let rows: Vec<f32> = batch.requests.iter().filter_map(|r| r.draft_probs).flatten().copied().collect();
        if rows.is_empty() {
            return Ok(None);
        }
        let stream = self.sampler.gpu.stream().clone();
        if self.q_staging.as_ref().is_none_or(|s| s.len() < rows.len()) {
            self.q_staging = Some(stream.alloc_zeros::<f32>(rows.len()).map_err(cuda_err("allocating the draft staging buffer"))?);
        }
        let buffer = self.q_staging.as_mut().ok_or(Error::Cuda { op: "staging draft probabilities", detail: "no buffer".into() })?;
        stream.memcpy_htod(&rows, &mut buffer.slice_mut(0..rows.len())).map_err(cuda_err("uploading draft probabilities"))?;
        let ptr = device_address_mut(buffer);
        let n = rows.len() / vocab;
        Ok(Some(DraftProbs { ptr, rows: n, row_stride: vocab, elements: rows.len(), context: None, _borrow: PhantomData }))
    }
}

/// The call's target rows position-major (`VerifyParams::row_order`): every request's row `j`
/// before any request's row `j + 1`, requests in call order within a position.
fn position_major_rows(settings: &[VerifySettings]) -> Vec<u32> {
    let rows: usize = settings.iter().map(|s| s.drafts as usize + 1).sum();
    let deepest = settings.iter().map(|s| s.drafts).max().unwrap_or(0);
    let mut order = Vec::with_capacity(rows);
    for j in 0..=deepest {
        order.extend(settings.iter().filter(|s| j <= s.drafts).map(|s| s.first_row + j));
    }
    order
}

impl Verifier for GpuVerifier {
    fn max_drafts(&self) -> usize {
        self.max_drafts
    }

    fn verify(&mut self, batch: &VerifyBatch<'_>) -> Result<Vec<VerifyOutput>> {
        validate_verify_batch(batch, &self.sampler.table, self.sampler.config.max_batch, self.max_drafts)?;
        let requests: Vec<DeviceVerifyRequest<'_>> = batch
            .requests
            .iter()
            .map(|r| DeviceVerifyRequest {
                request: r.request,
                drafts: r.drafts,
                has_draft_probs: r.draft_probs.is_some(),
                bitmask: r.bitmask,
                device_bitmask: false,
            })
            .collect();
        self.upload_verify(&requests)?;
        let logits = self.stage_logits(&batch.logits)?;
        let q = self.stage_q(batch)?;
        self.enqueue_verify(&logits, q.as_ref())?;
        self.read_verify_outputs()
    }
}

/// The verifier is also a plain sampler: requests are managed, and single steps run, through the
/// sampler underneath.
impl Backend for GpuVerifier {
    fn name(&self) -> &'static str {
        "cuda"
    }
    fn vocab(&self) -> usize {
        self.sampler.vocab()
    }
    fn max_batch(&self) -> usize {
        self.sampler.max_batch()
    }
    fn add_request(&mut self, id: u64, params: SamplingParams, prompt: &[u32]) -> Result<()> {
        self.sampler.add_request(id, params, prompt)
    }
    fn reset_request(&mut self, id: u64, prompt: &[u32]) -> Result<()> {
        self.sampler.reset_request(id, prompt)
    }
    fn update_request(&mut self, id: u64, params: SamplingParams) -> Result<()> {
        self.sampler.update_request(id, params)
    }
    fn drop_request(&mut self, id: u64) -> Result<()> {
        self.sampler.drop_request(id)
    }
    fn request_step(&self, id: u64) -> Result<u64> {
        self.sampler.request_step(id)
    }
    fn sample(&mut self, batch: &Batch<'_>) -> Result<Vec<RowOutput>> {
        self.sampler.sample(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_xoshiro::rand_core::Rng;
    use sampler_kernels::status::{STATUS_NO_VALID_TOKEN, STATUS_OK};

    /// `fill_verify_outputs` gives each request its `drafts + 1` token slots, its accepted
    /// count and status, and the log-probabilities of its emitted tokens when it asked (the
    /// read before session 63, restated), into a fresh `Vec` and into one left dirty by larger
    /// and smaller earlier calls alike.
    #[test]
    fn verify_outputs_are_the_requests_read_whatever_the_vector_held() {
        let mut rng = crate::test_rng("verify outputs");
        let mut dirty = Vec::new();
        for (n, max_drafts) in [(128usize, 8usize), (3, 8), (1, 0), (32, 7), (128, 8), (0, 8)] {
            let width = max_drafts + 1;
            let uploaded: Vec<Uploaded> = (0..n)
                .map(|_| Uploaded { drafts: rng.next_u32() as usize % width, want_logprobs: rng.next_u32().is_multiple_of(2) })
                .collect();
            let status: Vec<u32> = (0..n).map(|_| [STATUS_OK, STATUS_OK, STATUS_NO_VALID_TOKEN, STATUS_INVALID_SETTINGS][rng.next_u32() as usize % 4]).collect();
            let accepted: Vec<u32> = uploaded.iter().map(|u| rng.next_u32() % (u.drafts as u32 + 1)).collect();
            // Each row: its emitted tokens, then −1 to the end of the row.
            let mut tokens = vec![u32::MAX; n * width];
            for (i, u) in uploaded.iter().enumerate() {
                let emitted = rng.next_u32() as usize % (u.drafts + 2);
                for t in &mut tokens[i * width..i * width + emitted] {
                    *t = rng.next_u32() % 128_256;
                }
            }
            let logprobs: Vec<f32> = (0..n * width).map(|_| (rng.next_u32() % 10_000) as f32 * -1e-3).collect();
            let read = HostVerifyOutputs { accepted: &accepted, status: &status, tokens: &tokens, logprobs: &logprobs, width };
            let expected: Vec<VerifyOutput> = uploaded
                .iter()
                .enumerate()
                .map(|(i, u)| {
                    let row: Vec<i32> = tokens[i * width..i * width + u.drafts + 1].iter().map(|&w| w as i32).collect();
                    let emitted = row.iter().take_while(|&&t| t >= 0).count();
                    let logprobs = if u.want_logprobs { logprobs[i * width..i * width + emitted].to_vec() } else { Vec::new() };
                    VerifyOutput { accepted: accepted[i] as usize, tokens: row, status: status[i], logprobs, top_logprobs: Vec::new() }
                })
                .collect();
            let mut fresh = Vec::new();
            fill_verify_outputs(&uploaded, &read, &mut fresh);
            assert_eq!(fresh, expected, "{n} requests into a fresh vector");
            fill_verify_outputs(&uploaded, &read, &mut dirty);
            assert_eq!(dirty, expected, "{n} requests into a reused vector");
        }
    }

    /// The three arrays tile the allocation without overlap, each as long as its kind needs,
    /// and one read of `read_len(n)` words from 0 holds the first `n` requests of each.
    #[test]
    fn output_words_tile_the_allocation_and_one_read_covers_n_requests() {
        for (requests, width) in [(1usize, 9usize), (3, 9), (257, 65), (64, 17)] {
            let out = OutputWords { requests, width };
            let arrays = [out.accepted(), out.status(), out.tokens()];
            assert_eq!(arrays.clone().map(|a| a.len()), [requests, requests, requests * width]);
            let mut owner = vec![None; out.total()];
            for (k, a) in arrays.iter().enumerate() {
                for w in a.clone() {
                    assert_eq!(owner[w].replace(k), None, "word {w} in two arrays ({requests} × {width})");
                }
            }
            assert!(owner.iter().all(Option::is_some), "a word of no array ({requests} × {width})");
            for n in [0, 1, requests / 2, requests] {
                let len = out.read_len(n);
                assert!(len <= out.total());
                assert!(out.accepted().start + n <= len && out.status().start + n <= len);
                assert!(out.tokens().start + n * width <= len);
            }
        }
    }

    /// Every row once; positions never decrease along the order; within a position, requests
    /// keep call order.
    #[test]
    fn position_major_rows_visit_every_row_once_by_position() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        for requests in [0usize, 1, 3, 17, 257] {
            let mut settings = Vec::new();
            // (position, request) of every row, by row.
            let mut place = Vec::new();
            for r in 0..requests {
                let drafts = next(VERIFY_MAX_DRAFTS as u64 + 1) as u32 % 9;
                settings.push(VerifySettings { drafts, first_row: place.len() as u32, ..Default::default() });
                place.extend((0..=drafts).map(|j| (j, r)));
            }
            let order = position_major_rows(&settings);
            assert_eq!(order.len(), place.len());
            let mut seen = vec![false; place.len()];
            let mut last = (0u32, 0usize);
            for &row in &order {
                assert!(!std::mem::replace(&mut seen[row as usize], true), "row {row} twice");
                let here = place[row as usize];
                assert!(here >= last, "requests {requests}: row {row} at {here:?} after {last:?}");
                last = here;
            }
        }
    }
}
