//! Checks on the built PTX, run by `cargo xtask test`:
//! - every entry point assembles for the target with ptxas (from the pinned PyPI package
//!   nvidia-cuda-nvcc, so CI needs no CUDA install);
//! - no spills and no stack frame (local memory is slow and hides runtime-indexed arrays);
//! - no `.extern .func` (an unresolved call into `core`: the module would not load);
//! - no `fma` (a fused multiply-add would round differently from the CPU reference).
//!
//! It prints a table of registers and shared memory per kernel.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The pinned wheel that carries ptxas.
const PTXAS_WHEEL: &str = "nvidia-cuda-nvcc==13.0.88";

/// `PTXAS` if set, else the ptxas inside the pip package `nvidia-cuda-nvcc`.
fn find_ptxas() -> Result<PathBuf> {
    if let Some(path) = std::env::var_os("PTXAS") {
        return Ok(PathBuf::from(path));
    }
    let probe = Command::new("python3")
        .args(["-c", "import nvidia, os; print('\\n'.join(os.path.join(p, 'cu13', 'bin', 'ptxas') for p in nvidia.__path__))"])
        .output();
    if let Ok(out) = probe {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let path = PathBuf::from(line.trim());
            if path.is_file() {
                return Ok(path);
            }
        }
    }
    bail!("ptxas not found. Install it with `python3 -m pip install {PTXAS_WHEEL}` or set PTXAS=/path/to/ptxas")
}

#[derive(Default, Debug)]
struct KernelReport {
    name: String,
    registers: u32,
    stack_bytes: u32,
    spill_stores: u32,
    spill_loads: u32,
    static_smem: u32,
    barriers: u32,
}

fn number_before(line: &str, suffix: &str) -> Option<u32> {
    let end = line.find(suffix)?;
    line[..end].split(|c: char| !c.is_ascii_digit()).rfind(|s| !s.is_empty())?.parse().ok()
}

fn parse_ptxas(log: &str) -> Vec<KernelReport> {
    let mut reports: Vec<KernelReport> = Vec::new();
    for line in log.lines() {
        if let Some(start) = line.find("Compiling entry function '") {
            let rest = &line[start + 26..];
            let name = rest.split('\'').next().unwrap_or_default().to_string();
            reports.push(KernelReport { name, ..Default::default() });
            continue;
        }
        let Some(current) = reports.last_mut() else { continue };
        if line.contains("stack frame") {
            current.stack_bytes = number_before(line, " bytes stack frame").unwrap_or(0);
            current.spill_stores = number_before(line, " bytes spill stores").unwrap_or(0);
            current.spill_loads = number_before(line, " bytes spill loads").unwrap_or(0);
        }
        if line.contains("Used ") && line.contains("registers") {
            current.registers = number_before(line, " registers").unwrap_or(0);
            current.barriers = number_before(line, " barriers").unwrap_or(0);
            current.static_smem = number_before(line, " bytes smem").unwrap_or(0);
        }
    }
    reports
}

/// Assembles `ptx` for `sm`, checks it, and prints the resource table.
pub fn check(ptx: &Path, sm: &str) -> Result<()> {
    let text = std::fs::read_to_string(ptx).with_context(|| format!("reading {}", ptx.display()))?;
    let mut problems = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        if code.contains(".extern .func") {
            problems.push(format!("line {}: call into an unresolved function: {}", n + 1, line.trim()));
        }
        if code.contains(".local") {
            problems.push(format!("line {}: local memory (stack frame): {}", n + 1, line.trim()));
        }
        if code.trim_start().starts_with("fma.") {
            problems.push(format!("line {}: fused multiply-add breaks CPU/GPU equality: {}", n + 1, line.trim()));
        }
    }
    let entries: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix(".visible .entry ").or_else(|| l.trim().strip_prefix(".entry ")))
        .map(|l| l.split('(').next().unwrap_or_default().trim())
        .collect();
    if entries.is_empty() {
        problems.push("no entry point in the module".to_string());
    }

    let ptxas = find_ptxas()?;
    let cubin = ptx.with_extension("cubin");
    let output = Command::new(&ptxas)
        .arg(format!("-arch={sm}"))
        .args(["-v", "--warn-on-spills", "--warn-on-local-memory-usage"])
        .arg(ptx)
        .arg("-o")
        .arg(&cubin)
        .output()
        .with_context(|| format!("running {}", ptxas.display()))?;
    let log = String::from_utf8_lossy(&output.stderr).into_owned() + &String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!("ptxas rejected {}:\n{log}", ptx.display());
    }
    let reports = parse_ptxas(&log);
    for entry in &entries {
        if !reports.iter().any(|r| r.name == *entry) {
            problems.push(format!("ptxas did not report entry point {entry}"));
        }
    }
    println!("PTX check for {sm}: {} ({} entry points), ptxas {}", ptx.display(), entries.len(), ptxas.display());
    println!("| kernel | registers | stack B | spill st B | spill ld B | static smem B | barriers |");
    println!("|---|---|---|---|---|---|---|");
    for r in &reports {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            r.name, r.registers, r.stack_bytes, r.spill_stores, r.spill_loads, r.static_smem, r.barriers
        );
        if r.stack_bytes > 0 || r.spill_stores > 0 || r.spill_loads > 0 {
            problems.push(format!("{}: stack frame or spills", r.name));
        }
    }
    if !problems.is_empty() {
        bail!("PTX check failed:\n  {}", problems.join("\n  "));
    }
    println!("PTX check passed: no spills, no stack frame, no extern calls, no fma");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ptxas_verbose_output() {
        let log = "ptxas info    : Compiling entry function 'k1' for 'sm_90'\n\
                   ptxas info    : Function properties for k1\n    \
                   8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
                   ptxas info    : Used 31 registers, used 1 barriers, 1024 bytes smem\n";
        let r = parse_ptxas(log);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].registers, r[0].stack_bytes, r[0].spill_stores, r[0].spill_loads), (31, 8, 4, 12));
        assert_eq!((r[0].static_smem, r[0].barriers), (1024, 1));
    }
}
