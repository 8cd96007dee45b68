//! GPU infrastructure test: a Rust kernel (16-byte loads, warp shuffles, dynamic shared memory,
//! barriers) runs on fresh random rows and must match the host exactly, eagerly and replayed
//! from a CUDA graph with new inputs; and the module loaded is the cubin where the build has one
//! for this GPU.

use sampler_kernels::demo::{row_max, row_sum};
use sampler_host::cuda::ModuleImage;
use sampler_tests::{fresh_rng, gpu_or_skip, random_u32s};

fn expected(host: &[u32], rows: usize, row_len: usize, stride: usize) -> Vec<u32> {
    (0..rows)
        .flat_map(|r| {
            let row = &host[r * stride..r * stride + row_len];
            [row_sum(row), row_max(row)]
        })
        .collect()
}

#[test]
fn demo_kernel_matches_host_eager_and_in_graph() {
    let Some(gpu) = gpu_or_skip("demo_kernel_matches_host_eager_and_in_graph") else { return };
    let mut rng = fresh_rng("demo_kernel");
    let stream = gpu.stream().clone();
    // Awkward sizes: 257 rows, vocab-sized rows not a multiple of 4, stride padded to 4.
    for &(rows, row_len) in &[(257usize, 50257usize), (3, 151936), (1, 7)] {
        let stride = row_len.div_ceil(4) * 4;
        let host = random_u32s(&mut rng, rows * stride);
        let input = stream.clone_htod(&host).expect("upload");
        let mut output = stream.alloc_zeros::<u32>(rows * 2).expect("alloc");
        gpu.demo_reduce_rows(&input, &mut output, row_len as u32, stride as u32, rows as u32).expect("launch");
        let got = stream.clone_dtoh(&output).expect("download");
        assert_eq!(got, expected(&host, rows, row_len, stride), "eager launch, rows {rows} len {row_len}");
    }

    // Capture once, then replay with new contents in the same buffers.
    let (rows, row_len) = (64usize, 32003usize);
    let stride = row_len.div_ceil(4) * 4;
    let mut input = stream.clone_htod(&random_u32s(&mut rng, rows * stride)).expect("upload");
    let mut output = stream.alloc_zeros::<u32>(rows * 2).expect("alloc");
    let graph = gpu
        .capture(|| gpu.demo_reduce_rows(&input, &mut output, row_len as u32, stride as u32, rows as u32))
        .expect("capture");
    for replay in 0..3 {
        let host = random_u32s(&mut rng, rows * stride);
        stream.memcpy_htod(&host, &mut input).expect("refill");
        stream.memset_zeros(&mut output).expect("poison");
        graph.launch().expect("replay");
        let got = stream.clone_dtoh(&output).expect("download");
        assert_eq!(got, expected(&host, rows, row_len, stride), "graph replay {replay}");
    }
}

#[test]
fn no_device_is_a_clean_error_or_a_working_device() {
    // Without a GPU this must be NoCudaDevice (not a panic from the loader); with one, it opens.
    match sampler_host::cuda::GpuDevice::open(0) {
        Ok(gpu) => assert!(!gpu.name().expect("name").is_empty()),
        Err(sampler_host::Error::NoCudaDevice { .. }) => {}
        Err(other) => panic!("unexpected error: {other}"),
    }
    // An ordinal past the last device is refused the same way everywhere.
    assert!(matches!(sampler_host::cuda::GpuDevice::open(4096), Err(sampler_host::Error::NoCudaDevice { .. })));
}

/// A build with a cubin for this GPU's SM loads it (the driver compiles nothing; `cargo xtask
/// bundle` embeds one for sm_90); any other build or GPU loads the PTX. Either way every entry
/// point is there (`GpuDevice::open` checks) and the other GPU tests run on it.
#[test]
fn module_is_the_cubin_where_it_runs() {
    let Some(gpu) = gpu_or_skip("module_is_the_cubin_where_it_runs") else { return };
    let (major, minor) = gpu.context().compute_capability().expect("compute capability");
    let forced_ptx = std::env::var("SONIC_LOAD_PTX").is_ok_and(|v| v == "1");
    let want = if sampler_host::ptx::cubin_runs_on(major, minor) && !forced_ptx { ModuleImage::Cubin } else { ModuleImage::Ptx };
    eprintln!(
        "sm_{major}{minor}, cubin of {} bytes for {}: loaded {:?}",
        sampler_host::ptx::SAMPLER_CUBIN.len(),
        sampler_host::ptx::SAMPLER_TARGET,
        gpu.module_image()
    );
    assert_eq!(gpu.module_image(), want);
}
