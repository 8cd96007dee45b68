//! `sonic-bench`: the benchmark binary that travels in the bundle (`run.sh bench`).
//!
//! It measures, in one run on the GPU: the device-to-device copy bandwidth (the ceiling every
//! result is compared with), a graph-replayed empty kernel (the launch floor), and the demo
//! reduction kernel's read bandwidth over rotating buffers (so nothing is timed from L2).
//! Timing is CUDA events around graph replays; the median and the spread over many replays are
//! reported. Results go to `--out DIR` as JSON and markdown.

use std::fmt::Write as _;
use std::path::PathBuf;

use cudarc::driver::{CudaGraph, CudaStream};
use sampler_host::cuda::GpuDevice;
use sampler_tests::{fresh_rng, random_u32s};

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

struct Timing {
    median_us: f64,
    p10_us: f64,
    p90_us: f64,
}

/// Times `replays` launches of each graph in turn (rotating), one event pair per launch.
fn time_graphs(stream: &CudaStream, graphs: &[CudaGraph], warmup: usize, replays: usize) -> BenchResult<Timing> {
    let ctx = stream.context();
    for i in 0..warmup {
        graphs[i % graphs.len()].launch()?;
    }
    stream.synchronize()?;
    let mut samples = Vec::with_capacity(replays);
    let start = ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?;
    let end = ctx.new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?;
    for i in 0..replays {
        start.record(stream)?;
        graphs[i % graphs.len()].launch()?;
        end.record(stream)?;
        end.synchronize()?;
        samples.push(start.elapsed_ms(&end)? as f64 * 1000.0);
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Ok(Timing { median_us: at(0.5), p10_us: at(0.1), p90_us: at(0.9) })
}

fn main() -> BenchResult<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out_dir = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("bench-out"));
    let gpu = GpuDevice::open(0)?;
    let stream = gpu.stream().clone();
    let name = gpu.name()?;
    let replays = if quick { 100 } else { 300 };
    let mut rng = fresh_rng("sonic-bench");
    let mut rows_md = String::new();
    let mut rows_json = Vec::new();

    // Ceiling 1: device-to-device copy, 1 GiB, bytes read + written.
    let copy_bytes = 1usize << 30;
    let src = stream.clone_htod(&random_u32s(&mut rng, copy_bytes / 4))?;
    let mut dst = stream.alloc_zeros::<u32>(copy_bytes / 4)?;
    let copy_graph = gpu.capture(|| {
        stream.memcpy_dtod(&src, &mut dst).map_err(|e| sampler_host::Error::Cuda { op: "copy", detail: e.to_string() })
    })?;
    let copy = time_graphs(&stream, std::slice::from_ref(&copy_graph), 5, replays.min(100))?;
    let copy_gbs = 2.0 * copy_bytes as f64 / (copy.median_us * 1e3);
    drop((src, dst));

    // Ceiling 2: graph-replayed empty kernel.
    let empty_graph = gpu.capture(|| gpu.empty_kernel())?;
    let empty = time_graphs(&stream, std::slice::from_ref(&empty_graph), 20, replays)?;

    let mut record = |what: &str, t: &Timing, bytes: f64| {
        let gbs = if bytes > 0.0 { bytes / (t.median_us * 1e3) } else { 0.0 };
        let frac = if bytes > 0.0 { gbs / copy_gbs } else { 0.0 };
        let _ = writeln!(
            rows_md,
            "| {what} | {:.2} | {:.2} – {:.2} | {:.0} | {:.1}% |",
            t.median_us, t.p10_us, t.p90_us, gbs, frac * 100.0
        );
        rows_json.push(format!(
            "{{\"case\":\"{what}\",\"median_us\":{:.3},\"p10_us\":{:.3},\"p90_us\":{:.3},\"gb_per_s\":{:.1},\"copy_fraction\":{:.4}}}",
            t.median_us, t.p10_us, t.p90_us, gbs, frac
        ));
    };
    record("device-to-device copy, 1 GiB (read + write)", &copy, 2.0 * copy_bytes as f64);
    record("empty kernel, graph replay", &empty, 0.0);

    // The demo reduction over rotating buffer sets (each 256 MiB, 4 sets > L2 by far).
    let (rows, row_len) = if quick { (1024usize, 32000usize) } else { (1024, 65536) };
    let sets = 4;
    let mut inputs = Vec::new();
    let mut outputs = Vec::new();
    for _ in 0..sets {
        inputs.push(stream.clone_htod(&random_u32s(&mut rng, rows * row_len))?);
        outputs.push(stream.alloc_zeros::<u32>(rows * 2)?);
    }
    let mut graphs = Vec::new();
    for (input, output) in inputs.iter().zip(outputs.iter_mut()) {
        graphs.push(gpu.capture(|| gpu.demo_reduce_rows(input, output, row_len as u32, row_len as u32, rows as u32))?);
    }
    let demo = time_graphs(&stream, &graphs, 10, replays)?;
    record(&format!("demo_reduce_rows {rows}×{row_len} u32"), &demo, (rows * row_len * 4) as f64);

    std::fs::create_dir_all(&out_dir)?;
    let md = format!(
        "# sonic-bench on {name}\n\nCUDA events around each graph replay; median and 10th–90th percentile over {replays} replays after warm-up. \
         GB/s counts the bytes that must move; the fraction is of the copy bandwidth measured in this run.\n\n\
         | case | median µs | p10 – p90 µs | GB/s | of copy BW |\n|---|---|---|---|---|\n{rows_md}"
    );
    std::fs::write(out_dir.join("bench.md"), &md)?;
    std::fs::write(
        out_dir.join("bench.json"),
        format!("{{\"device\":\"{name}\",\"replays\":{replays},\"results\":[{}]}}\n", rows_json.join(",")),
    )?;
    println!("{md}");
    Ok(())
}
