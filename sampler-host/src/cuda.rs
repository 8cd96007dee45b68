//! CUDA through cudarc: driver loading, context, the sampler's one stream, and its module.
//!
//! The driver is loaded at run time (cudarc's dynamic loading), so this crate builds and its
//! CPU tests run where no CUDA is installed; asking for a GPU there returns
//! [`Error::NoCudaDevice`].
//!
//! Streams and graph capture: cudarc records an event on every `CudaSlice` use when a context
//! has several streams, and those events break stream capture
//! (CUDA_ERROR_STREAM_CAPTURE_ISOLATION). The sampler therefore turns event tracking off for
//! its context and does every step on one stream: by default one it owns, ordered with the
//! caller's streams by the caller, through events, as with any CUDA library; or the caller's
//! own stream (`GpuDevice::on_stream`), whose context must have tracking off already.

use std::sync::Arc;

use cudarc::driver::{
    sys, CudaContext, CudaEvent, CudaFunction, CudaGraph, CudaModule, CudaSlice, CudaStream, CudaView, DeviceRepr, LaunchConfig,
    PinnedHostSlice, PushKernelArg, ValidAsZeroBits,
};
use cudarc::nvrtc::Ptx;

use crate::error::{Error, Field, Result};
use crate::ptx::{cubin_runs_on, ENTRY_POINTS, SAMPLER_CUBIN, SAMPLER_PTX};
use sampler_kernels::abi::{CopyParams, DemoReduceParams, FillParams, DEMO_BLOCK_THREADS, DEMO_SHARED_BYTES, DTYPE_F32};

/// A kernel parameter struct from `sampler_kernels::abi`, passed by value.
///
/// The newtype exists because cudarc's `DeviceRepr` and the ABI structs both live in other
/// crates; the wrapper is `repr(transparent)`, so the bytes launched are the struct's.
#[repr(transparent)]
#[derive(Clone, Copy, Debug)]
pub struct KernelParams<T>(pub T);

// SAFETY: every T used here is a `#[repr(C)]` struct of plain integers from the ABI module,
// with no padding the device reads and no host pointers; its layout is asserted there.
unsafe impl DeviceRepr for KernelParams<DemoReduceParams> {}
// SAFETY: as above.
unsafe impl DeviceRepr for KernelParams<CopyParams> {}
// SAFETY: as above.
unsafe impl DeviceRepr for KernelParams<FillParams> {}

/// Maps a driver error to ours, naming what was being done.
pub(crate) fn cuda_err(op: &'static str) -> impl FnOnce(cudarc::driver::DriverError) -> Error {
    move |e| Error::Cuda { op, detail: e.to_string() }
}

/// Pinned host memory that one device array is copied into for the host to read. A read of
/// several arrays queues every copy before it waits on any: only the first wait blocks on the
/// step, where `clone_dtoh` into pageable memory is a synchronous round trip per array.
pub(crate) struct PinnedReadback<T> {
    buffer: PinnedHostSlice<T>,
    /// Recorded on the stream after the last queued copy. cudarc records the pinned buffer's
    /// own event only in a context that tracks events, which the sampler's does not: waiting
    /// on that one returned before the copy had run (zeros read, session 62, run 2).
    copied: CudaEvent,
    /// Elements the last queued copy wrote.
    queued: usize,
}

impl<T: DeviceRepr + ValidAsZeroBits> PinnedReadback<T> {
    /// Room for `len` elements (at least one), zeroed.
    pub(crate) fn new(ctx: &Arc<CudaContext>, len: usize, what: &'static str) -> Result<Self> {
        let len = len.max(1);
        // SAFETY: the contents start unset; they are zeroed below, through a raw pointer,
        // before any reference to them exists.
        let mut buffer = unsafe { ctx.alloc_pinned::<T>(len) }.map_err(cuda_err(what))?;
        let ptr = buffer.as_mut_ptr().map_err(cuda_err(what))?;
        // SAFETY: `ptr` starts `len` elements of host memory this buffer owns, and all-zero bytes
        // are a valid `T` (`ValidAsZeroBits`).
        unsafe { std::ptr::write_bytes(ptr, 0, len) };
        let copied = ctx.new_event(None).map_err(cuda_err(what))?;
        Ok(Self { buffer, copied, queued: 0 })
    }

    /// Queues the copy of `src` into the buffer on `stream`. A source longer than the buffer is
    /// an error, not a shorter copy.
    pub(crate) fn queue(&mut self, stream: &Arc<CudaStream>, src: &CudaView<'_, T>, what: &'static str) -> Result<()> {
        if src.len() > self.buffer.len() {
            return Err(Error::CapacityExceeded { what: "pinned readback elements", requested: src.len(), capacity: self.buffer.len() });
        }
        stream.memcpy_dtoh(src, &mut self.buffer).map_err(cuda_err(what))?;
        self.copied.record(stream).map_err(cuda_err(what))?;
        self.queued = src.len();
        Ok(())
    }

    /// Waits for the last queued copy (and so for everything before it on its stream) and
    /// returns what it wrote.
    pub(crate) fn read(&self, what: &'static str) -> Result<&[T]> {
        self.copied.synchronize().map_err(cuda_err(what))?;
        let all = self.buffer.as_slice().map_err(cuda_err(what))?;
        Ok(all.get(..self.queued).unwrap_or(all))
    }
}

/// A captured graph that one thread at a time owns and launches. cudarc's `CudaGraph` holds raw
/// driver handles and so is not `Send`; this makes the sampler's graph types `Send`, so that a
/// serving engine can build a sampler and its graphs on one thread and drive them from another.
pub(crate) struct OwnedGraph(CudaGraph);

// SAFETY: a graph's handles are not tied to the thread that made them: `CudaGraph::launch` binds
// the context to the calling thread first, and destroying them needs no current context. The
// driver forbids concurrent use of one graph, which `Send` without `Sync` rules out: one thread
// at a time holds the wrapper, and no `&OwnedGraph` crosses threads.
unsafe impl Send for OwnedGraph {}

impl From<CudaGraph> for OwnedGraph {
    fn from(graph: CudaGraph) -> Self {
        Self(graph)
    }
}

impl OwnedGraph {
    /// Launches the graph on the stream it was captured from.
    pub(crate) fn launch(&self) -> std::result::Result<(), cudarc::driver::DriverError> {
        self.0.launch()
    }
}

/// How a kernel of a multi-kernel sequence waits for the one before it on the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LaunchOrder {
    /// The ordinary stream order: the kernel is launched once the previous work completed.
    Serial,
    /// Programmatic dependent launch (`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`):
    /// the kernel may be scheduled once every block of the previous kernel called
    /// `griddepcontrol.launch_dependents`, so its launch overlaps that kernel's tail; it orders
    /// its own accesses with `griddepcontrol.wait`. Stream capture keeps it as a programmatic
    /// edge, so graph replays overlap the same way.
    Overlapped,
}

/// Launches `function` with one by-value parameter struct, through `cuLaunchKernelEx`, with
/// the order `order` asks for.
///
/// # Safety
/// As for any launch: `params` is the kernel's whole parameter list, with the layout the
/// kernel reads; every pointer in it is valid for what the kernel accesses under `config`.
/// With [`LaunchOrder::Overlapped`], the kernel executes `griddepcontrol.wait` before it reads
/// anything the previous kernel writes and before it writes anything that kernel reads or
/// writes, and (so that order stays transitive) before it exits.
pub(crate) unsafe fn launch_ordered<T>(
    stream: &CudaStream,
    function: &CudaFunction,
    config: LaunchConfig,
    params: &KernelParams<T>,
    order: LaunchOrder,
) -> std::result::Result<(), cudarc::driver::DriverError>
where
    KernelParams<T>: DeviceRepr,
{
    stream.context().bind_to_thread()?;
    // SAFETY: a plain-data union; the field written is the one the attribute id names.
    let mut attribute: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attribute.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute.value.programmaticStreamSerializationAllowed = 1;
    let overlapped = order == LaunchOrder::Overlapped;
    let launch = sys::CUlaunchConfig {
        gridDimX: config.grid_dim.0,
        gridDimY: config.grid_dim.1,
        gridDimZ: config.grid_dim.2,
        blockDimX: config.block_dim.0,
        blockDimY: config.block_dim.1,
        blockDimZ: config.block_dim.2,
        sharedMemBytes: config.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: if overlapped { &mut attribute } else { std::ptr::null_mut() },
        numAttrs: overlapped as u32,
    };
    let mut args = [params as *const KernelParams<T> as *mut std::ffi::c_void];
    // SAFETY: the config and the attribute live across the call; `args` holds one pointer to
    // the parameter struct, which the driver copies before returning; the rest is the
    // caller's (above).
    unsafe { sys::cuLaunchKernelEx(&launch, function.cu_function(), args.as_mut_ptr(), std::ptr::null_mut()).result() }
}

/// Number of CUDA devices, or [`Error::NoCudaDevice`] when there is no driver or no device.
pub fn device_count() -> Result<usize> {
    // SAFETY: only probes whether the driver library can be opened; loads no symbol.
    let present = unsafe { cudarc::driver::sys::is_culib_present() };
    if !present {
        return Err(Error::NoCudaDevice { detail: "the CUDA driver library (libcuda.so) was not found".into() });
    }
    match CudaContext::device_count() {
        Ok(n) if n > 0 => Ok(n as usize),
        Ok(_) => Err(Error::NoCudaDevice { detail: "the driver reports 0 devices".into() }),
        Err(e) => Err(Error::NoCudaDevice { detail: e.to_string() }),
    }
}

/// Which image of the sampler's module a [`GpuDevice`] loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ModuleImage {
    /// The embedded cubin (`ptx::SAMPLER_CUBIN`): nothing for the driver to compile.
    Cubin,
    /// The embedded PTX, which the driver compiles on first load (about a minute for this
    /// module, then cached by the driver on that machine).
    Ptx,
}

/// One GPU as the sampler uses it: a context without event tracking, one stream (its own, or
/// the caller's: [`Self::on_stream`]), the module.
pub struct GpuDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    image: ModuleImage,
}

impl GpuDevice {
    /// Opens device `ordinal`, creates the sampler's stream and loads the module: the embedded
    /// cubin when the build has one for this device's SM (unless `SONIC_LOAD_PTX=1`), else, or
    /// if the driver refuses it, the embedded PTX. Either way every entry point must be there.
    pub fn open(ordinal: usize) -> Result<Self> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(Error::NoCudaDevice { detail: format!("device {ordinal} asked for, {count} present") });
        }
        let ctx = CudaContext::new(ordinal).map_err(cuda_err("creating the context"))?;
        // SAFETY: no slice or stream of this context exists yet, so no tracked event is pending.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().map_err(cuda_err("creating the stream"))?;
        let (module, image) = load_module(&ctx)?;
        Ok(Self { ctx, stream, module, image })
    }

    /// Uses the caller's `stream`, and its context, for every launch and copy: a serving engine's
    /// forward pass and the sampling that follows are then in one stream order, with no event
    /// between them, and the tokens of [`crate::gpu::GpuSampler::device_outputs`] can feed the
    /// next forward pass in that order. Loads the module as [`Self::open`] does.
    ///
    /// The context must have event tracking off (`CudaContext::disable_event_tracking`, called
    /// before it allocates the buffers the sampler shares): once a context has several streams,
    /// cudarc records an event on every use of a tracked slice, and those events break stream
    /// capture. With tracking on, this returns [`Error::InvalidSetting`] for [`Field::Stream`].
    pub fn on_stream(stream: Arc<CudaStream>) -> Result<Self> {
        let ctx = stream.context().clone();
        if ctx.is_event_tracking() {
            return Err(Error::InvalidSetting {
                request: None,
                field: Field::Stream,
                reason: "its context tracks events (CudaContext::disable_event_tracking turns that off); \
                         tracked slices break stream capture once the context has several streams"
                    .into(),
            });
        }
        let (module, image) = load_module(&ctx)?;
        Ok(Self { ctx, stream, module, image })
    }

    /// Which image of the module was loaded.
    pub fn module_image(&self) -> ModuleImage {
        self.image
    }

    /// The context (event tracking off).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream every launch of this device goes to.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The device's name, as the driver reports it.
    pub fn name(&self) -> Result<String> {
        self.ctx.name().map_err(cuda_err("reading the device name"))
    }

    /// Streaming multiprocessors on the device.
    pub fn sm_count(&self) -> Result<u32> {
        self.ctx
            .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map(|n| n.max(1) as u32)
            .map_err(cuda_err("reading the SM count"))
    }

    /// An entry point of the sampler's module.
    pub fn function(&self, name: &str) -> Result<CudaFunction> {
        self.module.load_function(name).map_err(|e| Error::ModuleLoad { detail: format!("entry point {name}: {e}") })
    }

    /// Waits for the stream. Never called inside a capture region.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(cuda_err("synchronizing the stream"))
    }

    /// Records the work that `enqueue` puts on this device's stream into a CUDA graph.
    ///
    /// `enqueue` must only launch kernels and copy between device buffers: anything that
    /// synchronizes would invalidate the capture, and the driver would report it.
    pub fn capture<F>(&self, enqueue: F) -> Result<CudaGraph>
    where
        F: FnOnce() -> Result<()>,
    {
        self.stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(cuda_err("beginning stream capture"))?;
        let enqueued = enqueue();
        let ended = self.stream.end_capture(sys::CUgraphInstantiate_flags(0));
        enqueued?;
        match ended.map_err(cuda_err("ending stream capture"))? {
            Some(graph) => Ok(graph),
            None => Err(Error::Cuda { op: "ending stream capture", detail: "the capture recorded no work".into() }),
        }
    }

    /// Enqueues `empty_kernel` (one block of one thread): the launch-overhead floor.
    pub fn empty_kernel(&self) -> Result<()> {
        let function = self.function("empty_kernel")?;
        let config = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: the kernel takes no parameters and touches no memory.
        unsafe { self.stream.launch_builder(&function).launch(config) }.map_err(cuda_err("launching empty_kernel"))?;
        Ok(())
    }

    /// Enqueues `bench_copy`: `src` to `dst`, 16 bytes per thread step (the benchmark's
    /// bandwidth ceiling). Copies `min(len)` bytes rounded down to 16.
    pub fn bench_copy<T>(&self, src: &CudaSlice<T>, dst: &mut CudaSlice<T>) -> Result<()> {
        let function = self.function("bench_copy")?;
        let words4 = (src.len().min(dst.len()) * std::mem::size_of::<T>() / 16) as u64;
        let (src_ptr, _g1) = cudarc::driver::DevicePtr::device_ptr(src, &self.stream);
        let (dst_ptr, _g2) = cudarc::driver::DevicePtrMut::device_ptr_mut(dst, &self.stream);
        let params = KernelParams(CopyParams { src: src_ptr, dst: dst_ptr, words4 });
        let blocks = self.sm_count()? * 8;
        let config = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let mut launch = self.stream.launch_builder(&function);
        launch.arg(&params);
        // SAFETY: cudarc allocations are 256-byte aligned; the kernel touches words4 16-byte
        // words of each buffer, both at least that long; the buffers are distinct allocations.
        unsafe { launch.launch(config) }.map_err(cuda_err("launching bench_copy"))?;
        Ok(())
    }

    /// Enqueues `bench_fill_logits` into `out`: `rows × vocab` logits of `dtype` (`T` must be
    /// `f32` for `DTYPE_F32`, `u16` otherwise) with row stride `row_stride`.
    #[allow(clippy::too_many_arguments)]
    pub fn fill_logits<T: cudarc::driver::DeviceRepr>(
        &self,
        out: &mut CudaSlice<T>,
        dtype: u32,
        rows: usize,
        vocab: usize,
        row_stride: usize,
        seed: u64,
        shape: u32,
    ) -> Result<()> {
        let invalid = |reason: String| Error::InvalidSetting { request: None, field: crate::Field::Logits, reason };
        if dtype != DTYPE_F32 && dtype != sampler_kernels::abi::DTYPE_BF16 {
            return Err(invalid(format!("bench_fill_logits writes f32 or bf16, not dtype {dtype}")));
        }
        let element = if dtype == DTYPE_F32 { 4 } else { 2 };
        if std::mem::size_of::<T>() != element {
            return Err(invalid(format!("element of {} bytes for dtype {dtype}", std::mem::size_of::<T>())));
        }
        if rows == 0 || vocab == 0 || row_stride < vocab || (rows - 1) * row_stride + vocab > out.len() {
            return Err(invalid(format!("{rows} rows of {vocab} (stride {row_stride}) do not fit {} elements", out.len())));
        }
        let function = self.function("bench_fill_logits")?;
        let (out_ptr, _g) = cudarc::driver::DevicePtrMut::device_ptr_mut(out, &self.stream);
        let params = KernelParams(FillParams {
            out: out_ptr,
            seed,
            row_stride: row_stride as u64,
            rows: rows as u32,
            vocab: vocab as u32,
            dtype,
            shape,
        });
        let config = LaunchConfig { grid_dim: (self.sm_count()? * 16, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let mut launch = self.stream.launch_builder(&function);
        launch.arg(&params);
        // SAFETY: the kernel writes rows × vocab elements at stride row_stride, checked above
        // against the buffer length and element size.
        unsafe { launch.launch(config) }.map_err(cuda_err("launching bench_fill_logits"))?;
        Ok(())
    }

    /// Enqueues `demo_reduce_rows`: for each of `rows` rows of `row_len` values (rows
    /// `row_stride` apart), writes `[wrapping sum, max]` into `output`.
    pub fn demo_reduce_rows(
        &self,
        input: &CudaSlice<u32>,
        output: &mut CudaSlice<u32>,
        row_len: u32,
        row_stride: u32,
        rows: u32,
    ) -> Result<()> {
        let invalid = |reason: String| Error::InvalidSetting { request: None, field: crate::Field::Logits, reason };
        if !row_stride.is_multiple_of(4) || row_len > row_stride {
            return Err(invalid(format!("row_stride {row_stride} must be a multiple of 4 and ≥ row_len {row_len}")));
        }
        if (rows as usize) * (row_stride as usize) > input.len() || (rows as usize) * 2 > output.len() {
            return Err(invalid(format!("{rows} rows of stride {row_stride} do not fit the buffers")));
        }
        if rows == 0 {
            return Ok(());
        }
        let function = self.function("demo_reduce_rows")?;
        let (input_ptr, _input_guard) = cudarc::driver::DevicePtr::device_ptr(input, &self.stream);
        let (output_ptr, _output_guard) = cudarc::driver::DevicePtrMut::device_ptr_mut(output, &self.stream);
        let params = KernelParams(DemoReduceParams { input: input_ptr, output: output_ptr, row_len, row_stride, rows, _pad: 0 });
        let config = LaunchConfig {
            grid_dim: (rows, 1, 1),
            block_dim: (DEMO_BLOCK_THREADS, 1, 1),
            shared_mem_bytes: DEMO_SHARED_BYTES,
        };
        let mut launch = self.stream.launch_builder(&function);
        launch.arg(&params);
        // SAFETY: the parameter struct matches the kernel's by the ABI module; the grid has
        // `rows` blocks of DEMO_BLOCK_THREADS with DEMO_SHARED_BYTES of shared memory, as the
        // kernel requires; bounds, stride and alignment (cudarc allocations are 256-byte
        // aligned, the stride is a multiple of 4) were checked above; both buffers outlive the
        // launch because the caller holds them and the stream orders later frees.
        unsafe { launch.launch(config) }.map_err(cuda_err("launching demo_reduce_rows"))?;
        Ok(())
    }
}

/// Loads the sampler's module into `ctx`: the embedded cubin when the build has one for the
/// device's SM (unless `SONIC_LOAD_PTX=1`), else, or if the driver refuses it, the embedded PTX.
/// Either way every entry point must be there.
fn load_module(ctx: &Arc<CudaContext>) -> Result<(Arc<CudaModule>, ModuleImage)> {
    let (major, minor) = ctx.compute_capability().map_err(cuda_err("reading the compute capability"))?;
    let want_ptx = std::env::var("SONIC_LOAD_PTX").is_ok_and(|v| v == "1");
    let cubin = if cubin_runs_on(major, minor) && !want_ptx {
        // A refused cubin (a driver too old for its ELF ABI, say) leaves the PTX to load.
        ctx.load_module(Ptx::from_binary(SAMPLER_CUBIN.to_vec()))
            .ok()
            .filter(|module| ENTRY_POINTS.iter().all(|name| module.load_function(name).is_ok()))
    } else {
        None
    };
    let (module, image) = match cubin {
        Some(module) => (module, ModuleImage::Cubin),
        None => {
            let module = ctx
                .load_module(Ptx::from_src(SAMPLER_PTX))
                .map_err(|e| Error::ModuleLoad { detail: e.to_string() })?;
            for name in ENTRY_POINTS {
                module
                    .load_function(name)
                    .map_err(|e| Error::ModuleLoad { detail: format!("entry point {name}: {e}") })?;
            }
            (module, ModuleImage::Ptx)
        }
    };
    Ok((module, image))
}
