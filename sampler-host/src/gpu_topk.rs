//! Top-k alone on the GPU: `GpuTopK`, the host side of `sampler_kernels::topk`.
//!
//! For each row of device logits, the k largest values and their indices, in key order,
//! equal bit for bit to [`crate::topk::top_k`] (docs/SEMANTICS.md §11). One or two kernels on
//! the device's stream: `topk_chunks` over (chunk, row) blocks, then `topk_merge` per row when
//! a row was split into several chunks. The split depends on the row count, so a small batch
//! still fills the GPU; it is chosen at enqueue time, on the host, from the shapes alone.
//!
//! Everything is allocated in [`GpuTopK::new`] for the capacity fixed there (rows, vocab,
//! largest k). An enqueue allocates nothing and does not synchronize, so it can be captured
//! in a CUDA graph ([`GpuTopK::capture`]) and replayed on new logits.

use cudarc::driver::{CudaFunction, CudaSlice, DevicePtrMut, LaunchConfig, PushKernelArg};
use sampler_kernels::abi::{
    TopKParams, DTYPE_BF16, DTYPE_F16, DTYPE_F32, TOPK_SHARED_BYTES, TOPK_THREADS,
};
use sampler_kernels::topk::{geometry, record_stride, TopKGeometry};

use crate::cuda::{cuda_err, GpuDevice, KernelParams, OwnedGraph, PinnedReadback};
use crate::error::{Error, Field, Result};
use crate::gpu::DeviceLogits;
use crate::logits::{strided_span, LogitsDtype};
use crate::topk::{check_k, TopK};

// SAFETY: `TopKParams` is a `#[repr(C)]` struct of u64/u32 device addresses and sizes from the
// ABI module, whose size and alignment are asserted there.
unsafe impl cudarc::driver::DeviceRepr for KernelParams<TopKParams> {}

/// Most rows: the y extent of `topk_chunks`' grid.
const MAX_ROWS: usize = 65_535;

fn address_mut<T>(slice: &mut CudaSlice<T>) -> u64 {
    let stream = slice.stream().clone();
    let (ptr, _guard) = slice.device_ptr_mut(&stream);
    ptr
}

fn dtype_code(dtype: LogitsDtype) -> (u32, usize) {
    match dtype {
        LogitsDtype::F32 => (DTYPE_F32, 4),
        LogitsDtype::Bf16 => (DTYPE_BF16, 2),
        LogitsDtype::F16 => (DTYPE_F16, 2),
    }
}

/// A top-k captured in a CUDA graph: replaying it computes the top `k` of `rows` rows of the
/// logits it was captured with, whatever they hold at replay time.
pub struct TopKGraph {
    graph: OwnedGraph,
    rows: usize,
    k: usize,
}

impl TopKGraph {
    /// Rows the graph computes.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The k it was captured with.
    pub fn k(&self) -> usize {
        self.k
    }
}

/// Exact top-k on the GPU. See the module documentation.
pub struct GpuTopK {
    gpu: GpuDevice,
    max_rows: usize,
    vocab: usize,
    max_k: usize,
    /// Blocks worth launching at once (4 per SM): the chunk split aims at this many.
    target_blocks: u32,
    stage_chunks: CudaFunction,
    stage_merge: CudaFunction,
    /// Chunk records, `u64[rows][chunks][record_stride]`.
    records: CudaSlice<u64>,
    values: CudaSlice<f32>,
    indices: CudaSlice<i32>,
    /// (rows, k) of the last enqueue or replay: what [`Self::read`] returns.
    last: Option<(usize, usize)>,
    /// Pinned host copies of `values` and `indices` for [`Self::read_into`], made by the first
    /// read that needs them and remade larger by a larger one, not at creation: a top-k of up to
    /// 65535 rows of k 1024 would pin half a gigabyte that a caller of `read` never uses.
    readback: Option<TopKReadback>,
}

/// `GpuTopK::read_into`'s pinned buffers, each of `capacity` elements.
struct TopKReadback {
    values: PinnedReadback<f32>,
    indices: PinnedReadback<i32>,
    capacity: usize,
}

impl GpuTopK {
    /// Allocates everything for up to `max_rows` rows of `vocab` logits and any k up to `max_k`
    /// (at most `TOPK_MAX_K` = 1024 and at most `vocab`).
    pub fn new(gpu: GpuDevice, max_rows: usize, vocab: usize, max_k: usize) -> Result<Self> {
        check_k(max_k, vocab)?;
        if max_rows == 0 || max_rows > MAX_ROWS {
            return Err(Error::CapacityExceeded { what: "top-k rows", requested: max_rows, capacity: MAX_ROWS });
        }
        let target_blocks = gpu.sm_count()?.saturating_mul(4);
        // rows × chunks <= target + rows for every row count (see `geometry`), records included.
        let record_keys = (target_blocks as usize + max_rows) * record_stride(max_k as u32) as usize;
        let stream = gpu.stream().clone();
        let topk = Self {
            stage_chunks: gpu.function("topk_chunks")?,
            stage_merge: gpu.function("topk_merge")?,
            records: stream.alloc_zeros::<u64>(record_keys).map_err(cuda_err("allocating top-k records"))?,
            values: stream.alloc_zeros::<f32>(max_rows * max_k).map_err(cuda_err("allocating top-k outputs"))?,
            indices: stream.alloc_zeros::<i32>(max_rows * max_k).map_err(cuda_err("allocating top-k outputs"))?,
            gpu,
            max_rows,
            vocab,
            max_k,
            target_blocks,
            last: None,
            readback: None,
        };
        topk.gpu.synchronize()?;
        Ok(topk)
    }

    /// The device this runs on; launches go to its stream.
    pub fn device(&self) -> &GpuDevice {
        &self.gpu
    }

    /// (max rows, vocab, max k) fixed at creation.
    pub fn capacity(&self) -> (usize, usize, usize) {
        (self.max_rows, self.vocab, self.max_k)
    }

    /// How `rows` rows are split into chunks for `k` (one chunk per row: no merge kernel).
    pub fn geometry(&self, rows: usize, k: usize) -> TopKGeometry {
        geometry(rows as u32, self.vocab as u32, k as u32, self.target_blocks)
    }

    /// Device outputs of the last enqueue: `f32[rows][k]` values, row-major, in key order.
    pub fn values(&self) -> &CudaSlice<f32> {
        &self.values
    }

    /// Device outputs of the last enqueue: `i32[rows][k]` token indices, matching [`Self::values`].
    pub fn indices(&self) -> &CudaSlice<i32> {
        &self.indices
    }

    fn check(&self, logits: &DeviceLogits<'_>, k: usize) -> Result<()> {
        let invalid = |reason: String| Error::InvalidSetting { request: None, field: Field::Logits, reason };
        if k == 0 || k > self.max_k {
            return Err(Error::InvalidSetting {
                request: None,
                field: Field::TopK,
                reason: format!("k {k} is not in 1..={} (the max_k given at creation)", self.max_k),
            });
        }
        let rows = logits.rows();
        if rows > self.max_rows {
            return Err(Error::CapacityExceeded { what: "top-k rows", requested: rows, capacity: self.max_rows });
        }
        if let Some(context) = logits.context() {
            let own = self.gpu.context().cu_ctx() as usize;
            if context != own {
                return Err(invalid(format!("the logits buffer belongs to CUDA context {context:#x}, not {own:#x}")));
            }
        }
        let (_, bytes) = dtype_code(logits.logits_dtype());
        if logits.element_bytes() != bytes {
            return Err(invalid(format!(
                "dtype {:?} needs {bytes}-byte elements, the buffer holds {}-byte ones",
                logits.logits_dtype(),
                logits.element_bytes()
            )));
        }
        if logits.row_stride() < self.vocab {
            return Err(invalid(format!("row stride {} is below the vocab {}", logits.row_stride(), self.vocab)));
        }
        if strided_span(rows, self.vocab, logits.row_stride()).is_none_or(|n| n > logits.elements()) {
            return Err(invalid(format!("{} elements cannot hold {rows} rows of stride {}", logits.elements(), logits.row_stride())));
        }
        Ok(())
    }

    /// Enqueues the top `k` of every row of `logits` on the device's stream. Allocates nothing
    /// and does not wait; [`Self::read`] (or the caller's own stream ordering) waits.
    pub fn enqueue(&mut self, logits: &DeviceLogits<'_>, k: usize) -> Result<()> {
        self.check(logits, k)?;
        self.launch(logits, k)?;
        self.last = Some((logits.rows(), k));
        Ok(())
    }

    fn launch(&mut self, logits: &DeviceLogits<'_>, k: usize) -> Result<()> {
        let rows = logits.rows();
        if rows == 0 {
            return Ok(());
        }
        let g = self.geometry(rows, k);
        let stride = record_stride(k as u32);
        let needed = rows * g.chunks as usize * stride as usize;
        if g.chunks > 1 && needed > self.records.len() {
            // Cannot happen for k <= max_k (see `new`); refuse rather than write past the buffer.
            return Err(Error::CapacityExceeded { what: "top-k chunk records", requested: needed, capacity: self.records.len() });
        }
        let (dtype, _) = dtype_code(logits.logits_dtype());
        let params = KernelParams(TopKParams {
            logits: logits.device_ptr(),
            row_stride: logits.row_stride() as u64,
            records: address_mut(&mut self.records),
            out_values: address_mut(&mut self.values),
            out_indices: address_mut(&mut self.indices),
            dtype,
            vocab: self.vocab as u32,
            rows: rows as u32,
            k: k as u32,
            chunks: g.chunks,
            chunk_len: g.chunk_len,
            record_stride: stride,
            _pad: 0,
        });
        let stream = self.gpu.stream().clone();
        let block = (TOPK_THREADS, 1, 1);
        let chunks_cfg =
            LaunchConfig { grid_dim: (g.chunks, rows as u32, 1), block_dim: block, shared_mem_bytes: TOPK_SHARED_BYTES };
        let mut launch = stream.launch_builder(&self.stage_chunks);
        launch.arg(&params);
        // SAFETY: `TopKParams` matches the kernel's parameter by the ABI module; the logits were
        // checked against rows, stride, dtype and length; records hold rows × chunks × stride
        // keys (checked above) and the outputs max_rows × max_k >= rows × k entries; the grid,
        // block and shared-memory size are the ones the kernel documents.
        unsafe { launch.launch(chunks_cfg) }.map_err(cuda_err("launching topk_chunks"))?;
        if g.chunks > 1 {
            let merge_cfg =
                LaunchConfig { grid_dim: (rows as u32, 1, 1), block_dim: block, shared_mem_bytes: TOPK_SHARED_BYTES };
            let mut launch = stream.launch_builder(&self.stage_merge);
            launch.arg(&params);
            // SAFETY: as above; it runs after `topk_chunks` on the same stream, which wrote
            // every record it reads.
            unsafe { launch.launch(merge_cfg) }.map_err(cuda_err("launching topk_merge"))?;
        }
        Ok(())
    }

    /// Captures the top `k` of `logits` (all its rows) into a CUDA graph.
    ///
    /// # Safety
    /// The graph keeps the logits' device address. The caller keeps that memory allocated,
    /// with at least this shape, for as long as it replays the graph.
    pub unsafe fn capture(&mut self, logits: &DeviceLogits<'_>, k: usize) -> Result<TopKGraph> {
        self.check(logits, k)?;
        let stream = self.gpu.stream().clone();
        stream
            .begin_capture(cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(cuda_err("beginning stream capture"))?;
        let enqueued = self.launch(logits, k);
        let ended = stream.end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0));
        enqueued?;
        let graph = ended
            .map_err(cuda_err("ending stream capture"))?
            .ok_or(Error::Cuda { op: "ending stream capture", detail: "the capture recorded no work".into() })?;
        Ok(TopKGraph { graph: graph.into(), rows: logits.rows(), k })
    }

    /// Enqueues one replay of `graph`; [`Self::read`] then returns its outputs.
    pub fn replay(&mut self, graph: &TopKGraph) -> Result<()> {
        graph.graph.launch().map_err(cuda_err("replaying the top-k graph"))?;
        self.last = Some((graph.rows, graph.k));
        Ok(())
    }

    /// Waits for the last enqueue or replay and reads its outputs.
    pub fn read(&self) -> Result<TopK> {
        let Some((rows, k)) = self.last else {
            return Err(Error::InvalidSetting { request: None, field: Field::TopK, reason: "nothing was enqueued".into() });
        };
        let n = rows * k;
        if n == 0 {
            return Ok(TopK { rows, k, values: Vec::new(), indices: Vec::new() });
        }
        let stream = self.gpu.stream().clone();
        let values = stream.clone_dtoh(&self.values.slice(0..n)).map_err(cuda_err("reading top-k values"))?;
        let indices = stream.clone_dtoh(&self.indices.slice(0..n)).map_err(cuda_err("reading top-k indices"))?;
        stream.synchronize().map_err(cuda_err("synchronizing the stream"))?;
        Ok(TopK { rows, k, values, indices })
    }

    /// Waits for the last enqueue or replay and reads its outputs into `out`, reusing its
    /// vectors. Both copies go into pinned memory and are queued before one wait, where
    /// [`Self::read`] makes two synchronous copies into new vectors. The pinned buffers are
    /// allocated by the first call that needs them (and again by a larger one), so time a
    /// steady state after a first read of the largest shape. On error `out` is unchanged.
    pub fn read_into(&mut self, out: &mut TopK) -> Result<()> {
        const OP: &str = "reading top-k outputs";
        let Some((rows, k)) = self.last else {
            return Err(Error::InvalidSetting { request: None, field: Field::TopK, reason: "nothing was enqueued".into() });
        };
        let n = rows * k;
        if n > 0 {
            if self.readback.as_ref().is_none_or(|r| r.capacity < n) {
                let ctx = self.gpu.context();
                let values = PinnedReadback::new(ctx, n, "allocating the pinned top-k readback")?;
                let indices = PinnedReadback::new(ctx, n, "allocating the pinned top-k readback")?;
                self.readback = Some(TopKReadback { values, indices, capacity: n });
            }
            let Some(readback) = self.readback.as_mut() else {
                return Err(Error::Cuda { op: OP, detail: "no pinned readback".into() });
            };
            let stream = self.gpu.stream().clone();
            readback.values.queue(&stream, &self.values.slice(0..n), OP)?;
            readback.indices.queue(&stream, &self.indices.slice(0..n), OP)?;
            let (values, indices) = (readback.values.read(OP)?, readback.indices.read(OP)?);
            out.values.clear();
            out.values.extend_from_slice(values);
            out.indices.clear();
            out.indices.extend_from_slice(indices);
        } else {
            out.values.clear();
            out.indices.clear();
        }
        (out.rows, out.k) = (rows, k);
        Ok(())
    }
}
