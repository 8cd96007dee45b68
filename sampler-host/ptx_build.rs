//! Builds `sampler-kernels` into PTX with rustc's NVPTX backend, in a nested cargo.
//!
//! Shared, source for source, by `sampler-host/build.rs` (so a plain `cargo build` embeds the
//! PTX) and by `cargo xtask ptx` (through `#[path]`), so there is one recipe:
//!
//! `cargo +<pinned nightly> rustc --release --target nvptx64-nvidia-cuda -Zbuild-std=core -- --emit=asm`
//! with `RUSTFLAGS=-Zunstable-options -Cpanic=immediate-abort -Ctarget-cpu=<sm>`.
//!
//! The nested cargo gets a scrubbed environment: inherited RUSTFLAGS, RUSTC_WRAPPER, the outer
//! build's CARGO_* variables or a target dir would change or break the device build.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Performance directives added to entry points after rustc emits the PTX (rustc has no
/// attribute for them). `sample_tiles` keeps three 256-thread blocks per SM (80 registers), and
/// so do `sample_tiles_greedy`, its greedy-step build (and `sample_tiles_greedy_pairs`, that
/// build with two tiles a warp), `sample_tiles_ring`, its ring build, and
/// `sample_tiles_half`, its build for bf16 and f16 logits;
/// `sample_tiles_mass` four 128-thread blocks per SM (128 registers; five, at 96, spilled and
/// measured slower in session 7); `topk_chunks` streams the logits with two 512-thread blocks
/// per SM (64); `verify_rows` must fit one 512-thread block (128); `sample_rows_two_per_sm` and
/// `sample_rows_quiet_two_per_sm` two (64),
/// `exact_gather` two (64), and `exact_bins_two_per_sm` and `exact_finish_two_per_sm` two (64). The
/// PTX check then proves ptxas met each budget without spilling, or within the allowance it
/// lists with its reason.
pub const ENTRY_DIRECTIVES: &[(&str, &str)] = &[
    ("sample_tiles", ".maxntid 256, 1, 1\n.minnctapersm 3"),
    ("sample_tiles_greedy", ".maxntid 256, 1, 1\n.minnctapersm 3"),
    ("sample_tiles_greedy_pairs", ".maxntid 256, 1, 1\n.minnctapersm 3"),
    ("sample_tiles_ring", ".maxntid 256, 1, 1\n.minnctapersm 3"),
    ("sample_tiles_half", ".maxntid 256, 1, 1\n.minnctapersm 3"),
    ("sample_tiles_mass", ".maxntid 128, 1, 1\n.minnctapersm 4"),
    ("topk_chunks", ".maxntid 512, 1, 1\n.minnctapersm 2"),
    // 512 threads must fit the SM's 64K registers: ptxas keeps verify_rows at ≤ 128 (it would
    // take more unasked, and the launch would then fail for lack of registers).
    ("verify_rows", ".maxntid 512, 1, 1"),
    ("verify_draws", ".maxntid 512, 1, 1"),
    // The same bound for the 512-thread sampler kernels (one block per SM at most otherwise).
    // `sample_rows_two_per_sm`, the same body two per SM: 64 registers and 384 bytes of
    // spills, measured 1.11× faster for top-k + top-p at B = 1024 and 4% slower at B = 1
    // (xtask/src/ptx_check.rs); the host picks it for batches of more rows than SMs.
    ("sample_rows", ".maxntid 512, 1, 1"),
    ("sample_rows_two_per_sm", ".maxntid 512, 1, 1\n.minnctapersm 2"),
    // Their builds for quiet steps, which also hold the single-block exact pass.
    ("sample_rows_quiet", ".maxntid 512, 1, 1"),
    ("sample_rows_quiet_two_per_sm", ".maxntid 512, 1, 1\n.minnctapersm 2"),
    ("exact_histogram", ".maxntid 512, 1, 1"),
    ("exact_histogram_runs", ".maxntid 512, 1, 1"),
    ("exact_bins", ".maxntid 512, 1, 1"),
    // Two per SM for batches of more rows than SMs, as the finish (session 28).
    ("exact_bins_two_per_sm", ".maxntid 512, 1, 1\n.minnctapersm 2"),
    // Two per SM (64 registers), as it always ran: with band mode's body, ptxas alone chose 64
    // and spilled, or 88 (one block per SM).
    ("exact_gather", ".maxntid 512, 1, 1\n.minnctapersm 2"),
    ("exact_gather_runs", ".maxntid 512, 1, 1\n.minnctapersm 2"),
    ("exact_finish", ".maxntid 512, 1, 1"),
    // Two per SM for batches of more rows than SMs: 64 registers. Session 23 read "no spills";
    // the PTX check misread ptxas then, and it spills (`SPILL_ALLOWANCE`, session 27).
    ("exact_finish_two_per_sm", ".maxntid 512, 1, 1\n.minnctapersm 2"),
    ("exact_tail", ".maxntid 512, 1, 1"),
];

/// Inserts [`ENTRY_DIRECTIVES`] between each named entry's parameter list and its body.
pub fn add_entry_directives(ptx: &str) -> Result<String, String> {
    let mut out = ptx.to_string();
    for (entry, directives) in ENTRY_DIRECTIVES {
        let head = format!(".entry {entry}(");
        let start = out.find(&head).ok_or_else(|| format!("entry point {entry} not found in the PTX"))?;
        let close = out[start..].find("\n)").ok_or_else(|| format!("no parameter list end for {entry}"))? + start + 2;
        out.insert_str(close + 1, &format!("{directives}\n"));
    }
    Ok(out)
}

/// The SM target used when none is asked for.
pub const DEFAULT_SM: &str = "sm_90";

/// The file beside a cubin that names the PTX it was assembled from (`<cubin>.source`): the
/// PTX check writes it when ptxas assembles, and `build.rs` refuses a cubin whose file does
/// not name the PTX it embeds beside it, so that a cubin left from an older PTX never ships
/// with a newer one.
pub fn cubin_source_path(cubin: &Path) -> PathBuf {
    let mut name = cubin.as_os_str().to_owned();
    name.push(".source");
    PathBuf::from(name)
}

/// What [`cubin_source_path`] holds for PTX text `ptx`: its length and 64-bit FNV-1a hash. It
/// tells a stale cubin from the right one; it is no defence against a forged file.
pub fn ptx_fingerprint(ptx: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in ptx {
        hash ^= byte as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("ptx fnv1a64 {hash:016x} bytes {}", ptx.len())
}

/// Whether a cubin's source file (its text, `source`) names the PTX text `ptx`.
// `build.rs` calls it; xtask, which includes this file too, only writes source files.
#[allow(dead_code)]
pub fn check_cubin_source(ptx: &[u8], source: &str) -> Result<(), String> {
    let want = ptx_fingerprint(ptx);
    if source.trim() == want {
        Ok(())
    } else {
        Err(format!(
            "the cubin was assembled from another PTX ({}) than the one given with it ({want}); \
             assemble it again (`cargo xtask ptx-check` writes the cubin and its source file)",
            source.trim()
        ))
    }
}

/// Variables passed through to the nested cargo; everything else is dropped.
const KEPT_ENV: &[&str] = &["PATH", "HOME", "CARGO_HOME", "RUSTUP_HOME", "TMPDIR", "USER", "CARGO_NET_OFFLINE"];

/// The pinned toolchain: the `channel` of the workspace's rust-toolchain.toml.
pub fn toolchain(workspace_root: &Path) -> String {
    std::fs::read_to_string(workspace_root.join("rust-toolchain.toml"))
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.trim().strip_prefix("channel").map(|r| r.trim_start_matches([' ', '=']).trim().trim_matches('"').to_string()))
        })
        .unwrap_or_else(|| "nightly".to_string())
}

/// A scrubbed command for `tool` (cargo or rustc) of `toolchain`.
fn pinned(tool: &str, toolchain: &str) -> Command {
    let mut cmd = Command::new(tool);
    cmd.env_clear();
    for key in KEPT_ENV {
        if let Some(value) = std::env::var_os(key) {
            cmd.env(key, value);
        }
    }
    cmd.arg(format!("+{toolchain}"));
    cmd
}

/// Checks that the pinned nightly toolchain and its rust-src component are installed, and
/// says how to install whichever is missing.
pub fn check_toolchain(toolchain: &str) -> Result<(), String> {
    let install = format!("rustup toolchain install {toolchain} --profile minimal --component rust-src");
    let output = pinned("rustc", toolchain).args(["--print", "sysroot"]).output().map_err(|e| {
        format!("could not run `rustc +{toolchain}` ({e}). The device crate needs rustup with that toolchain: `{install}`")
    })?;
    if !output.status.success() {
        return Err(format!(
            "`rustc +{toolchain} --print sysroot` failed: {}\nInstall the toolchain: `{install}`",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let sysroot = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    let core_src = sysroot.join("lib/rustlib/src/rust/library/core/Cargo.toml");
    if !core_src.exists() {
        return Err(format!(
            "the toolchain at {} has no rust-src component, which -Zbuild-std=core needs.\n\
             Install it: `rustup component add rust-src --toolchain {toolchain}`\n\
             (or point SAMPLER_KERNELS_PTX at a prebuilt PTX file)",
            sysroot.display()
        ));
    }
    Ok(())
}

/// Builds the device crate for `sm` (for example `sm_90`) under `target_dir` and returns the
/// path of the PTX file rustc wrote.
pub fn build_ptx(workspace_root: &Path, target_dir: &Path, sm: &str) -> Result<PathBuf, String> {
    if !sm.starts_with("sm_") || !sm[3..].chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(format!("`{sm}` is not an SM target such as sm_90"));
    }
    let toolchain = toolchain(workspace_root);
    check_toolchain(&toolchain)?;
    let manifest = workspace_root.join("sampler-kernels/Cargo.toml");
    let status = pinned("cargo", &toolchain)
        .args(["rustc", "--release", "--quiet", "--lib", "--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core"])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .args(["--", "--emit=asm"])
        .env("RUSTFLAGS", format!("-Zunstable-options -Cpanic=immediate-abort -Ctarget-cpu={sm}"))
        .status()
        .map_err(|e| format!("could not start the nested cargo for the device crate: {e}"))?;
    if !status.success() {
        return Err(format!("the device crate failed to build for {sm} ({status})"));
    }
    let raw = newest_ptx(target_dir)?;
    let text = std::fs::read_to_string(&raw).map_err(|e| format!("reading {}: {e}", raw.display()))?;
    let tuned = raw.with_extension("tuned.ptx");
    std::fs::write(&tuned, add_entry_directives(&text)?).map_err(|e| format!("writing {}: {e}", tuned.display()))?;
    Ok(tuned)
}

/// rustc names the file after the crate hash and cargo versions differ in where they keep it,
/// and stale hashes can linger: take the newest `sampler_kernels-*.s` anywhere under `dir`.
fn newest_ptx(dir: &Path) -> Result<PathBuf, String> {
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            if !(name.starts_with("sampler_kernels-") && name.ends_with(".s")) {
                continue;
            }
            let modified = entry.metadata().and_then(|m| m.modified()).map_err(|e| e.to_string())?;
            if best.as_ref().is_none_or(|(t, _)| modified > *t) {
                best = Some((modified, path));
            }
        }
    }
    best.map(|(_, p)| p).ok_or_else(|| format!("no sampler_kernels-*.s under {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::{check_cubin_source, cubin_source_path, ptx_fingerprint};
    use std::path::Path;

    /// A cubin's source file accepts its own PTX and refuses one that differs in a single byte
    /// or in length, as a PTX rebuilt after a kernel change does.
    #[test]
    fn a_cubin_source_names_its_ptx_alone() {
        let ptx = b".version 8.8\n.target sm_90\n.address_size 64\n.visible .entry k(\n)\n{\n\tret;\n}\n".to_vec();
        let source = ptx_fingerprint(&ptx);
        assert_eq!(check_cubin_source(&ptx, &format!("{source}\n")), Ok(()));
        let mut edited = ptx.clone();
        let at = edited.len() / 2;
        edited[at] ^= 1;
        assert!(check_cubin_source(&edited, &source).is_err());
        let mut longer = ptx.clone();
        longer.push(b'\n');
        assert!(check_cubin_source(&longer, &source).is_err());
        assert!(check_cubin_source(&ptx, "").is_err());
        assert_eq!(cubin_source_path(Path::new("/t/k.cubin")), Path::new("/t/k.cubin.source"));
    }
}
