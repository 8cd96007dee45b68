//! `cargo xtask`: the project's automation, in Rust so it needs nothing but cargo.
//!
//! - `ptx [--sm sm_90]`        build the device crate to PTX (same recipe as sampler-host's build.rs)
//! - `ptx-check [--sm sm_90]`  build, then assemble every entry point with ptxas and check it
//! - `test`                    ptx-check, every workspace test, `cargo doc` (warnings fail),
//!   then each fuzz target for 10 s
//!   (the README's test command)
//! - `fuzz [--seconds N]`      each cargo-fuzz target in fuzz/ for N seconds (60); fails on a crash
//! - `bundle`                  GPU test binaries + benchmark + PTX + run script, for a GPU machine;
//! - `SONIC_FLASHINFER=1 … bundle` also builds the FlashInfer peer harness with nvcc (optional);
//!   `SONIC_FLASHINFER_CAKE=1` also FlashInfer's cake-sampling module and its peer script
//! - `bench [--quick]`         bundle, then run the benchmark here (needs a GPU)
//! - `soak [--quick] [ARGS]`   bundle, then the sonic-soak reliability run here (needs a GPU)
//! - `profile CELL [OUT]`      bundle, then Nsight Compute on one benchmark cell here (needs a GPU and ncu)
//! - `plot --in DIR`           PNG plots and plots.md from benchmark JSON
//! - `report DIR [--out FILE]` markdown: our time next to each peer's, with "not supported" /
//!   "not run", from DIR's sonic-bench.json, torch-peers.json, flashinfer-peers.json and
//!   cake-peers.json

#[path = "../../sampler-host/ptx_build.rs"]
mod ptx_build;
mod plot;
mod ptx_check;
mod report;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd.status().with_context(|| format!("could not start {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(())
}

fn sm_arg(args: &[String]) -> String {
    args.iter()
        .position(|a| a == "--sm")
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| ptx_build::DEFAULT_SM.to_string())
}

/// Builds the PTX into `target/ptx/<sm>` (the directory build.rs uses, so the two share a cache).
fn build_ptx(sm: &str) -> Result<PathBuf> {
    let root = workspace_root();
    let ptx = ptx_build::build_ptx(&root, &root.join("target/ptx").join(sm), sm).map_err(anyhow::Error::msg)?;
    let out = root.join("target/ptx").join(format!("sampler_kernels.{sm}.ptx"));
    std::fs::copy(&ptx, &out).with_context(|| format!("copying {}", ptx.display()))?;
    Ok(out)
}

/// The workspace's test directories outside `sampler-tests`, whose binaries `bundle` does not
/// carry to the GPU machine.
const UNBUNDLED_TEST_DIRS: &[&str] = &["sampler-host/tests", "sampler-kernels/tests"];

/// Fails when a test outside `sampler-tests` opens a GPU: there it prints SKIP in CI and never
/// runs on one, since `bundle` carries only `sampler-tests`' binaries. The GPU sampler's
/// bad-input tests sat in `sampler-host/tests` so from when they were written (139ea452) to
/// session 60, and never ran on a GPU.
fn check_gpu_tests_bundled(root: &Path) -> Result<()> {
    let mut files = Vec::new();
    for dir in UNBUNDLED_TEST_DIRS {
        rust_files(&root.join(dir), &mut files)?;
    }
    for file in files {
        let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        if text.contains("GpuDevice::open") || text.contains("GpuDevice::on_stream") {
            bail!("{} opens a GPU, but `cargo xtask bundle` carries only sampler-tests' test binaries: move the test to tests/tests/", file.display());
        }
    }
    Ok(())
}

/// Every `.rs` file under `dir` (none when it does not exist).
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

fn cmd_test() -> Result<()> {
    check_gpu_tests_bundled(&workspace_root())?;
    let ptx = build_ptx(ptx_build::DEFAULT_SM)?;
    let cubin = ptx_check::check(&ptx, ptx_build::DEFAULT_SM)?;
    // Built as `bundle` builds them, with the cubin embedded, so that the tests of the embedded
    // cubin (`sampler_host::ptx`) run here too.
    let env = [("SAMPLER_KERNELS_PTX", ptx.as_path()), ("SAMPLER_KERNELS_CUBIN", cubin.as_path())];
    let (passed, failed) = cargo_test_counted(&env)?;
    // The API documentation users read: a broken or private link fails the run.
    run(cargo().current_dir(workspace_root()).envs(env).env("RUSTDOCFLAGS", "-D warnings").args(["doc", "--no-deps", "--workspace"]))?;
    cmd_fuzz(TEST_FUZZ_SECONDS)?;
    println!("xtask test: PTX checks, every workspace test, the documentation and the fuzz targets passed");
    // One closing line over every libtest binary, so a reader of the log sees the total.
    println!("{passed} passed, {failed} failed");
    Ok(())
}

/// `(passed, failed)` from a libtest summary line such as
/// `test result: ok. 19 passed; 0 failed; 0 ignored; ...`.
fn parse_test_result(line: &str) -> Option<(u64, u64)> {
    let rest = line.strip_prefix("test result: ")?;
    let count = |word: &str| {
        rest.split(';')
            .find_map(|part| part.trim().strip_suffix(word).and_then(|n| n.rsplit(' ').next()?.parse::<u64>().ok()))
            .unwrap_or(0)
    };
    Some((count(" passed"), count(" failed")))
}

/// `cargo test --workspace`, echoing its output as it comes and adding up libtest's
/// `test result:` lines. Fails when cargo does.
fn cargo_test_counted(env: &[(&str, &Path)]) -> Result<(u64, u64)> {
    use std::io::{BufRead, BufReader, Write};
    let mut child = cargo()
        .current_dir(workspace_root())
        .envs(env.iter().copied())
        .args(["test", "--workspace"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("could not start cargo test")?;
    let (mut passed, mut failed) = (0u64, 0u64);
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines() {
            let line = line?;
            println!("{line}");
            let _ = std::io::stdout().flush();
            if let Some((p, f)) = parse_test_result(&line) {
                passed += p;
                failed += f;
            }
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("cargo test failed: {status} ({passed} passed, {failed} failed)");
    }
    Ok((passed, failed))
}

/// The cargo-fuzz targets in fuzz/fuzz_targets/.
const FUZZ_TARGETS: &[&str] = &["settings_validation", "reference_rows", "keys_and_sort", "verify_batches", "logits_files"];
/// Seconds per fuzz target in `cargo xtask test`: a smoke run, not a campaign.
const TEST_FUZZ_SECONDS: u64 = 10;
/// The cargo-fuzz release known to build with the pinned nightly (.ci/run installs the same).
const CARGO_FUZZ_INSTALL: &str = "cargo install cargo-fuzz --version 0.13.2 --locked";

/// Runs each fuzz target for `seconds` (libFuzzer's -max_total_time); a crash fails the run and
/// leaves its input under fuzz/artifacts/. Installs nothing.
fn cmd_fuzz(seconds: u64) -> Result<()> {
    let root = workspace_root();
    let installed = cargo().current_dir(&root).args(["fuzz", "--version"]).output();
    if !matches!(&installed, Ok(o) if o.status.success()) {
        bail!("cargo-fuzz is not installed. Install it with:\n    {CARGO_FUZZ_INSTALL}");
    }
    let fuzz = |sub: &str| {
        let mut cmd = cargo();
        cmd.current_dir(&root).args(["fuzz", sub, "--fuzz-dir", "fuzz"]);
        // Sanitizer-instrumented builds must not share the main build's artifacts.
        if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
            cmd.arg("--target-dir").arg(PathBuf::from(dir).join("fuzz"));
        }
        cmd
    };
    run(&mut fuzz("build"))?;
    for &target in FUZZ_TARGETS {
        println!("xtask fuzz: {target} for {seconds} s");
        // -timeout: one input taking 10 s is a hang, not a slow input (they take milliseconds).
        run(fuzz("run").args([target, "--", format!("-max_total_time={seconds}").as_str(), "-timeout=10"]))
            .with_context(|| format!("fuzz target {target} failed; the input is under fuzz/artifacts/{target}/"))?;
    }
    println!("xtask fuzz: {} targets, {seconds} s each, no crash", FUZZ_TARGETS.len());
    Ok(())
}

/// Test executables that `cargo test --no-run --message-format=json` reports for a package.
/// Builds `package`'s test binaries (release) with `env` set, and returns the integration
/// tests' executables.
fn test_executables(package: &str, env: &[(&str, &Path)]) -> Result<Vec<PathBuf>> {
    let output = cargo()
        .current_dir(workspace_root())
        .envs(env.iter().copied())
        .args(["test", "--release", "--no-run", "--message-format=json", "-p", package])
        .output()
        .context("cargo test --no-run")?;
    if !output.status.success() {
        bail!("building the test binaries failed:\n{}", String::from_utf8_lossy(&output.stderr));
    }
    let mut executables = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        // Integration-test targets only: unit-test harnesses of the lib and bins hold no GPU test.
        let is_test_build = message["profile"]["test"].as_bool() == Some(true);
        let is_test_target = message["target"]["kind"].as_array().is_some_and(|k| k.iter().any(|v| v == "test"));
        if let (true, true, Some(exe)) = (is_test_build, is_test_target, message["executable"].as_str()) {
            executables.push(PathBuf::from(exe));
        }
    }
    Ok(executables)
}

const RUN_SCRIPT: &str = include_str!("bundle_run.sh");

fn cmd_bundle() -> Result<PathBuf> {
    let root = workspace_root();
    check_gpu_tests_bundled(&root)?;
    let bundle = root.join("bundle");
    if bundle.exists() {
        std::fs::remove_dir_all(&bundle)?;
    }
    std::fs::create_dir_all(bundle.join("tests"))?;
    let ptx = build_ptx(ptx_build::DEFAULT_SM)?;
    let cubin = ptx_check::check(&ptx, ptx_build::DEFAULT_SM)?;
    std::fs::copy(&ptx, bundle.join("sampler_kernels.ptx"))?;
    // Every binary embeds this PTX and the cubin ptxas assembled from it, so the GPU machine's
    // driver compiles nothing: compiling the PTX took about a minute of each device call per
    // build (session 28, `sampler-host/build.rs`).
    let embed = [("SAMPLER_KERNELS_PTX", ptx.as_path()), ("SAMPLER_KERNELS_CUBIN", cubin.as_path())];
    for exe in test_executables("sampler-tests", &embed)? {
        let name = exe.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // Drop cargo's hash suffix so the script and the results name tests plainly.
        let plain = name.rsplit_once('-').map(|(stem, _)| stem.to_string()).unwrap_or(name);
        std::fs::copy(&exe, bundle.join("tests").join(plain))?;
    }
    run(cargo().current_dir(&root).envs(embed).args(["build", "--release", "-p", "sampler-tests", "--bin", "sonic-bench", "--bin", "sonic-soak"]))?;
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"));
    std::fs::copy(target.join("release/sonic-bench"), bundle.join("sonic-bench"))?;
    std::fs::copy(target.join("release/sonic-soak"), bundle.join("sonic-soak"))?;
    // The PyTorch peers run next to our benchmark on the GPU machine.
    std::fs::create_dir_all(bundle.join("peers"))?;
    std::fs::copy(root.join("bench/peers/torch_peers.py"), bundle.join("peers/torch_peers.py"))?;
    bundle_flashinfer(&root, &bundle)?;
    let script = bundle.join("run.sh");
    std::fs::write(&script, RUN_SCRIPT)?;
    run(Command::new("chmod").arg("+x").arg(&script))?;
    let size = dir_size(&bundle)?;
    println!("bundle: {} ({:.1} MB)", bundle.display(), size as f64 / 1e6);
    // A device run carries 64 MiB: the repository's tracked files and what it is given
    // together. Every binary embeds the PTX (9 MB) and the cubin (6 MB; gzip takes a binary to
    // about 3.5 MB); the optional FlashInfer peer adds 13 MB and the cake payload 4 MB. The
    // whole bundle no longer fits, so a device run carries the parts it needs, gzipped. A
    // note, not an error: `bench`, `soak` and `profile` use the bundle in place on a GPU
    // machine.
    const CARRY: u64 = 64 << 20;
    let repo = tracked_size(&root)?;
    if size + repo > CARRY {
        println!(
            "bundle: with the repository's {:.1} MB it is over the 64 MiB a device run carries; \
             carry the parts a run needs, gzipped",
            repo as f64 / 1e6
        );
    }
    Ok(bundle)
}

/// Bytes of the files git tracks under `root` (what a device run carries besides the bundle).
fn tracked_size(root: &Path) -> Result<u64> {
    let out = Command::new("git").current_dir(root).args(["ls-files", "-z"]).output().context("listing tracked files")?;
    if !out.status.success() {
        bail!("git ls-files failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let mut total = 0;
    for name in out.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        // A tracked file deleted in the working tree does not travel.
        if let Ok(meta) = std::fs::metadata(root.join(String::from_utf8_lossy(name).as_ref())) {
            total += meta.len();
        }
    }
    Ok(total)
}

/// Optional: the FlashInfer peer harness (bench/peers/flashinfer), built only with
/// SONIC_FLASHINFER=1. Its build script fetches the pinned flashinfer-python wheel and a pinned
/// CUDA 13.0 nvcc from PyPI into the ignored .flashinfer/ cache and compiles for sm_90.
/// With SONIC_FLASHINFER_CAKE=1, also FlashInfer's cake-sampling module, compiled here ahead of
/// time (build_cake.sh: tens of minutes the first time, cached in .flashinfer/cake-work after),
/// packed into peers/cake.tar.gz (~4 MB), with the peer script that runs it (`run.sh cake`).
fn bundle_flashinfer(root: &Path, bundle: &Path) -> Result<()> {
    let on = |var: &str| std::env::var(var).as_deref() == Ok("1");
    if on("SONIC_FLASHINFER") {
        run(Command::new("bash")
            .arg(root.join("bench/peers/flashinfer/build.sh"))
            .arg(bundle.join("peers/flashinfer_peers"))
            .arg(root.join(".flashinfer")))
        .context("building the FlashInfer peer harness")?;
    } else {
        println!("bundle: FlashInfer peer harness skipped (set SONIC_FLASHINFER=1 to build it)");
    }
    if on("SONIC_FLASHINFER_CAKE") {
        run(Command::new("bash")
            .arg(root.join("bench/peers/flashinfer/build_cake.sh"))
            .arg(bundle.join("peers/cake.tar.gz"))
            .arg(root.join(".flashinfer")))
        .context("building FlashInfer's cake-sampling module")?;
        std::fs::copy(root.join("bench/peers/cake_peer.py"), bundle.join("peers/cake_peer.py"))?;
        std::fs::copy(root.join("bench/peers/flashinfer/cake_shim.py"), bundle.join("peers/cake_shim.py"))?;
    } else {
        println!("bundle: FlashInfer cake sampling skipped (set SONIC_FLASHINFER_CAKE=1 to build it)");
    }
    Ok(())
}

fn dir_size(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() { dir_size(&entry.path())? } else { meta.len() };
    }
    Ok(total)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ptx") => {
            let path = build_ptx(&sm_arg(&args))?;
            println!("{}", path.display());
        }
        Some("ptx-check") => {
            let sm = sm_arg(&args);
            let path = build_ptx(&sm)?;
            ptx_check::check(&path, &sm)?;
        }
        Some("test") => cmd_test()?,
        Some("fuzz") => {
            let seconds = match args.iter().position(|a| a == "--seconds") {
                None => 60,
                Some(i) => args
                    .get(i + 1)
                    .and_then(|s| s.parse::<u64>().ok())
                    .filter(|&n| n > 0)
                    .context("--seconds needs a positive whole number")?,
            };
            cmd_fuzz(seconds)?;
        }
        Some("bundle") => {
            cmd_bundle()?;
        }
        Some("plot") => plot::run(&args[1..])?,
        Some("report") => report::run(&args[1..])?,
        Some("bench") => {
            let bundle = cmd_bundle()?;
            let mut cmd = Command::new(bundle.join("run.sh"));
            cmd.arg("bench");
            if args.iter().any(|a| a == "--quick") {
                cmd.arg("--quick");
            }
            run(&mut cmd)?;
        }
        Some("soak") => {
            // Everything after `soak` goes to sonic-soak as it is (--quick, --seconds N, --out DIR, ...).
            let bundle = cmd_bundle()?;
            run(Command::new(bundle.join("run.sh")).arg("soak").args(&args[1..]))?;
        }
        Some("profile") => {
            let bundle = cmd_bundle()?;
            let cell = args.get(1).cloned().unwrap_or_else(|| "heterogeneous:f32:151936:64".to_string());
            let out = args.get(2).cloned().unwrap_or_else(|| "profile-out".to_string());
            run(Command::new(bundle.join("run.sh")).args(["profile", &cell, &out]))?;
        }
        _ => {
            eprintln!("usage: cargo xtask <ptx|ptx-check|test|fuzz|bundle|bench|soak|profile|plot|report> [--sm sm_90] [--quick] [--seconds N]");
            std::process::exit(2);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::check_gpu_tests_bundled;
    use super::ptx_build::add_entry_directives;

    /// A test that opens a GPU outside `sampler-tests` fails the check; one that does not, or
    /// a tree without those directories, passes.
    #[test]
    fn gpu_tests_outside_the_bundle_are_refused() {
        let root = std::env::temp_dir().join(format!("xtask-gpu-tests-{}", std::process::id()));
        let dir = root.join("sampler-host/tests/common");
        std::fs::create_dir_all(&dir).expect("temp dir");
        assert!(check_gpu_tests_bundled(&root.join("absent")).is_ok());
        std::fs::write(dir.join("mod.rs"), "fn cpu_only() {}").expect("write");
        assert!(check_gpu_tests_bundled(&root).is_ok());
        std::fs::write(dir.join("gpu.rs"), "let d = GpuDevice::open(0);").expect("write");
        let refused = check_gpu_tests_bundled(&root);
        std::fs::remove_dir_all(&root).expect("clean up");
        assert!(refused.is_err_and(|e| e.to_string().contains("gpu.rs")));
    }

    #[test]
    fn libtest_summaries_are_counted() {
        let line = "test result: FAILED. 19 passed; 2 failed; 0 ignored; 0 measured; 3 filtered out; finished in 1.02s";
        assert_eq!(super::parse_test_result(line), Some((19, 2)));
        assert_eq!(super::parse_test_result("running 3 tests"), None);
    }

    #[test]
    fn entry_directives_go_between_parameters_and_body() {
        use super::ptx_build::ENTRY_DIRECTIVES;
        // Every entry the table names, plus one it does not.
        let mut ptx = String::from(".visible .entry other(\n\t.param .u64 a\n)\n{\n\tret;\n}\n");
        for (entry, _) in ENTRY_DIRECTIVES {
            ptx.push_str(&format!(".visible .entry {entry}(\n\t.param .u64 p\n)\n{{\n\tret;\n}}\n"));
        }
        let tuned = add_entry_directives(&ptx).expect("tuned");
        for (entry, directives) in ENTRY_DIRECTIVES {
            assert!(tuned.contains(&format!(".entry {entry}(\n\t.param .u64 p\n)\n{directives}\n{{")), "{entry}");
        }
        assert!(tuned.contains(".entry sample_tiles(\n\t.param .u64 p\n)\n.maxntid 256, 1, 1\n.minnctapersm 3\n{"));
        assert!(tuned.contains(".entry sample_tiles_mass(\n\t.param .u64 p\n)\n.maxntid 128, 1, 1\n.minnctapersm 4\n{"));
        assert!(tuned.contains(".entry verify_rows(\n\t.param .u64 p\n)\n.maxntid 512, 1, 1\n{"));
        assert!(tuned.contains(".entry other(\n\t.param .u64 a\n)\n{"));
        // A table entry missing from the PTX is an error, not a silent skip.
        assert!(add_entry_directives(".visible .entry other(\n)\n{\n}\n").is_err());
    }

    /// A stand-in for `sonic-bench`: logs its name to `order.log`, then writes a result for
    /// every `--only` cell with the median `$1` (what `run.sh ab` reads), or fails with `fail`.
    const FAKE_BENCH: &str = r#"#!/usr/bin/env bash
median="$1"; shift
only=""; out=""
while [ $# -gt 0 ]; do case "$1" in --only) only="$2"; shift 2 ;; --out) out="$2"; shift 2 ;; *) shift ;; esac; done
echo "$(basename "$0")" >> "$(dirname "$0")/order.log"
[ "$median" = fail ] && exit 3
mkdir -p "$out"; rows=""
IFS=, read -ra cells <<< "$only"
for c in "${cells[@]}"; do
  IFS=: read -r w d v b <<< "$c"
  # Builds whose median is below 10 time their uploads too (as sonic-bench from session 63).
  upload=""; [ "$median" -lt 10 ] && upload=",\"upload_us\":$((median * 3))"
  rows="$rows${rows:+,}{\"workload\":\"$w\",\"dtype\":\"$d\",\"vocab\":$v,\"batch\":$b,\"median_us\":$median,\"read_us\":$((median / 2))$upload}"
done
echo "{\"results\":[$rows]}" > "$out/sonic-bench.json"
"#;

    /// `run.sh ab`: the builds alternate round by round, the table has each build's mean
    /// median and its ratio to the first (and the same of their output reads and, where two
    /// builds time them, their uploads), a failing run fails the command and leaves its cells
    /// out, and one build is refused. Runs the script with bash and python3, as the GPU
    /// machine does.
    #[test]
    fn run_script_ab_alternates_builds_and_tables_their_ratios() {
        let dir = std::env::temp_dir().join(format!("xtask-ab-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("run.sh"), super::RUN_SCRIPT).expect("run.sh");
        for (name, median) in [("old", "10"), ("new", "8"), ("newer", "4"), ("bad", "fail")] {
            let script = FAKE_BENCH.replacen("median=\"$1\"; shift", &format!("median={median}"), 1);
            std::fs::write(dir.join(name), script).expect("fake bench");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        let ab = |out: &str, builds: &[&str]| {
            let mut cmd = std::process::Command::new("bash");
            cmd.current_dir(&dir).args(["run.sh", "ab", out, "greedy:f32:128256:1,topk50_topp09_t07:bf16:32000:64", "2"]);
            for b in builds {
                cmd.arg(format!("{b}=./{b}"));
            }
            cmd.output().expect("bash runs")
        };

        let run = ab("two", &["old", "new"]);
        assert_eq!(run.status.code(), Some(0), "{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
        let order = std::fs::read_to_string(dir.join("order.log")).expect("order");
        assert_eq!(order.split_whitespace().collect::<Vec<_>>(), ["old", "new", "old", "new"]);
        let table = std::fs::read_to_string(dir.join("two/ab-table.txt")).expect("table");
        assert!(table.contains("| workload | dtype | V | B | old µs | new µs | new/old |"), "{table}");
        assert!(table.contains("| greedy | f32 | 128256 | 1 | 10.00 | 8.00 | 0.800 |"), "{table}");
        assert!(table.contains("| topk50_topp09_t07 | bf16 | 32000 | 64 | 10.00 | 8.00 | 0.800 |"), "{table}");
        // The builds time their output reads too: a second table of those.
        let reads = table.split("read_us").nth(1).unwrap_or_default();
        assert!(reads.contains("| workload | dtype | V | B | old read µs | new read µs | new/old |"), "{table}");
        assert!(reads.contains("| greedy | f32 | 128256 | 1 | 5.00 | 4.00 | 0.800 |"), "{table}");
        // Only one build times its uploads: no upload table.
        assert!(!table.contains("upload_us"), "{table}");
        let run = ab("uploads", &["new", "newer"]);
        assert_eq!(run.status.code(), Some(0), "{}{}", String::from_utf8_lossy(&run.stdout), String::from_utf8_lossy(&run.stderr));
        let table = std::fs::read_to_string(dir.join("uploads/ab-table.txt")).expect("table");
        let uploads = table.split("upload_us").nth(1).unwrap_or_default();
        assert!(uploads.contains("| workload | dtype | V | B | new upload µs | newer upload µs | newer/new |"), "{table}");
        assert!(uploads.contains("| greedy | f32 | 128256 | 1 | 24.00 | 12.00 | 0.500 |"), "{table}");

        let failed = ab("failed", &["old", "bad"]);
        assert_eq!(failed.status.code(), Some(1));
        let table = std::fs::read_to_string(dir.join("failed/ab-table.txt")).expect("table");
        assert!(!table.contains("| greedy |"), "{table}");

        assert_eq!(ab("one", &["old"]).status.code(), Some(2));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
