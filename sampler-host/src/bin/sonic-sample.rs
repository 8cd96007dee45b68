//! Demo: sample tokens from a logits file (.npy or .safetensors) with settings from the
//! command line, and print the tokens and the time per step.
//!
//! ```text
//! sonic-sample <file.npy|file.safetensors> [--tensor NAME] [--temperature T] [--top-k K]
//!     [--top-p P] [--min-p M] [--repetition-penalty R] [--frequency-penalty F]
//!     [--presence-penalty P] [--seed S] [--steps N] [--backend auto|cpu|gpu]
//! ```
//! The array is `rows × vocab` (or one row) of f32, bf16 or f16. Every row is one request;
//! each step samples all rows again from the same logits, so penalties accumulate.
//!
//! `--backend auto` (the default) runs on CUDA device 0 when there is one and on the CPU
//! reference when there is no CUDA device; `gpu` insists on the device (and exits non-zero
//! without one); `cpu` always runs the reference. Both give the same tokens.

use std::fmt;
use std::time::Instant;

use sampler_host::backend::{Backend, Batch, BatchRow};
use sampler_host::cuda::GpuDevice;
use sampler_host::gpu::{GpuSampler, GpuSamplerConfig};
use sampler_host::logits_file::LogitsFile;
use sampler_host::reference::CpuReference;
use sampler_host::settings::SamplingParams;
use sampler_host::Error;

const USAGE: &str =
    "usage: sonic-sample <file.npy|file.safetensors> [--tensor NAME] [--temperature T] \
[--top-k K] [--top-p P] [--min-p M] [--repetition-penalty R] [--frequency-penalty F] \
[--presence-penalty P] [--seed S] [--steps N] [--backend auto|cpu|gpu]";

#[derive(Debug)]
struct DemoError(String);

impl fmt::Display for DemoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<sampler_host::Error> for DemoError {
    fn from(e: sampler_host::Error) -> Self {
        DemoError(e.to_string())
    }
}

fn err<T>(msg: impl Into<String>) -> Result<T, DemoError> {
    Err(DemoError(msg.into()))
}

/// Writes one line to stdout. A closed pipe (`sonic-sample ... | head`) ends the program
/// quietly instead of panicking as `println!` would; other write errors are reported.
fn out(line: fmt::Arguments<'_>) -> Result<(), DemoError> {
    use std::io::Write;
    match writeln!(std::io::stdout().lock(), "{line}") {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => err(format!("writing to stdout: {e}")),
    }
}

/// `println!` through [`out`], returning early with its error.
macro_rules! say {
    ($($arg:tt)*) => {
        out(format_args!($($arg)*))?
    };
}

#[derive(Clone, Copy, PartialEq)]
enum BackendChoice {
    Auto,
    Cpu,
    Gpu,
}

struct Args {
    path: String,
    tensor: Option<String>,
    params: SamplingParams,
    steps: usize,
    backend: BackendChoice,
}

fn parse_num<T: std::str::FromStr>(flag: &str, v: Option<String>) -> Result<T, DemoError> {
    let Some(v) = v else {
        return err(format!("{flag} needs a value"));
    };
    v.parse()
        .map_err(|_| DemoError(format!("{flag}: cannot parse {v:?}")))
}

fn parse_args() -> Result<Args, DemoError> {
    let mut it = std::env::args().skip(1);
    let mut path = None;
    let mut args = Args {
        path: String::new(),
        tensor: None,
        params: SamplingParams::default(),
        steps: 1,
        backend: BackendChoice::Auto,
    };
    while let Some(a) = it.next() {
        let p = &mut args.params;
        match a.as_str() {
            "-h" | "--help" => return err(USAGE),
            "--tensor" => args.tensor = Some(parse_num(&a, it.next())?),
            "--temperature" => p.temperature = parse_num(&a, it.next())?,
            "--top-k" => p.top_k = parse_num(&a, it.next())?,
            "--top-p" => p.top_p = parse_num(&a, it.next())?,
            "--min-p" => p.min_p = parse_num(&a, it.next())?,
            "--repetition-penalty" => p.repetition_penalty = parse_num(&a, it.next())?,
            "--frequency-penalty" => p.frequency_penalty = parse_num(&a, it.next())?,
            "--presence-penalty" => p.presence_penalty = parse_num(&a, it.next())?,
            "--seed" => p.seed = parse_num(&a, it.next())?,
            "--steps" => args.steps = parse_num(&a, it.next())?,
            "--backend" => {
                let v: String = parse_num(&a, it.next())?;
                args.backend = match v.as_str() {
                    "auto" => BackendChoice::Auto,
                    "cpu" => BackendChoice::Cpu,
                    "gpu" => BackendChoice::Gpu,
                    _ => return err(format!("--backend: expected auto, cpu or gpu, got {v:?}")),
                };
            }
            s if s.starts_with("--") => return err(format!("unknown option {s}\n{USAGE}")),
            _ if path.is_none() => path = Some(a),
            _ => return err(format!("unexpected argument {a:?}\n{USAGE}")),
        }
    }
    match path {
        Some(p) => args.path = p,
        None => return err(USAGE),
    }
    Ok(args)
}

/// The backend the demo runs on, and a one-line reason for the choice.
///
/// `gpu` opens CUDA device 0 and fails with the driver's error if it cannot; `auto` does the
/// same but falls back to the CPU reference when there is no CUDA device at all (no driver,
/// or no GPU). Any other GPU failure (module load, allocation, ...) is reported, not hidden.
fn make_backend(
    choice: BackendChoice,
    vocab: usize,
    rows: usize,
) -> Result<(Box<dyn Backend>, String), DemoError> {
    let rows = rows.max(1);
    let cpu =
        || -> Result<Box<dyn Backend>, DemoError> { Ok(Box::new(CpuReference::new(vocab, rows)?)) };
    match choice {
        BackendChoice::Cpu => Ok((cpu()?, "--backend cpu".to_string())),
        BackendChoice::Gpu => {
            let (backend, name) = gpu_backend(vocab, rows).map_err(|e| match e {
                Error::NoCudaDevice { .. } => DemoError(format!(
                    "{e} (--backend gpu needs one; try --backend cpu or auto)"
                )),
                other => DemoError::from(other),
            })?;
            Ok((backend, format!("--backend gpu, device 0: {name}")))
        }
        BackendChoice::Auto => match gpu_backend(vocab, rows) {
            Ok((backend, name)) => Ok((backend, format!("auto: CUDA device 0, {name}"))),
            Err(Error::NoCudaDevice { detail }) => Ok((
                cpu()?,
                format!("auto fell back to the CPU: no CUDA device: {detail}"),
            )),
            Err(other) => Err(DemoError(format!(
                "a CUDA device is present but the GPU sampler failed: {other}"
            ))),
        },
    }
}

/// Opens CUDA device 0 and builds a GPU sampler for `rows × vocab` on it.
fn gpu_backend(vocab: usize, rows: usize) -> Result<(Box<dyn Backend>, String), Error> {
    let device = GpuDevice::open(0)?;
    let name = device.name()?;
    let sampler = GpuSampler::new(device, GpuSamplerConfig::new(vocab, rows))?;
    Ok((Box::new(sampler), name))
}

fn run() -> Result<(), DemoError> {
    let args = parse_args()?;
    let loaded = LogitsFile::read(&args.path, args.tensor.as_deref())?;
    let (rows, vocab) = (loaded.rows, loaded.vocab);
    let logits = loaded.host()?;
    let (mut backend, why) = make_backend(args.backend, vocab, rows)?;
    say!("backend {} ({why})", backend.name());
    for r in 0..rows as u64 {
        let params = args
            .params
            .clone()
            .with_seed(args.params.seed.wrapping_add(r));
        backend.add_request(r, params, &[])?;
    }
    let batch = Batch {
        logits,
        rows: (0..rows as u64).map(BatchRow::new).collect(),
    };
    say!(
        "{}: {rows} rows × vocab {vocab} ({:?}), backend {}, {} steps",
        args.path,
        logits.dtype(),
        backend.name(),
        args.steps
    );
    let mut tokens = vec![Vec::with_capacity(args.steps); rows];
    let mut times = Vec::with_capacity(args.steps);
    for _ in 0..args.steps {
        let t0 = Instant::now();
        let outs = backend.sample(&batch)?;
        times.push(t0.elapsed());
        for (row, o) in tokens.iter_mut().zip(outs) {
            row.push(o.token);
        }
    }
    for (r, t) in tokens.iter().enumerate() {
        say!("row {r}: {t:?}");
    }
    for (s, t) in times.iter().enumerate() {
        say!("step {s}: {:.3} ms", t.as_secs_f64() * 1e3);
    }
    if !times.is_empty() {
        let total: f64 = times.iter().map(|t| t.as_secs_f64()).sum();
        say!(
            "mean {:.3} ms per step ({:.3} ms per row)",
            total * 1e3 / times.len() as f64,
            total * 1e3 / (times.len() * rows.max(1)) as f64
        );
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("sonic-sample: {e}");
        std::process::exit(2);
    }
}
