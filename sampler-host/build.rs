//! Builds the device crate into PTX and puts it in OUT_DIR, where `src/ptx.rs` embeds it.
//!
//! `SAMPLER_KERNELS_PTX=/path/to/file.ptx` skips the device build and embeds that file instead
//! (for machines without the nightly toolchain). `SAMPLER_SM` picks the SM target (sm_90).
//!
//! `SAMPLER_KERNELS_CUBIN=/path/to/file.cubin` also embeds that cubin, which the host loads
//! instead of having the driver compile the PTX (about a minute on a machine whose driver
//! cache does not hold it). It must be the one ptxas assembled from `SAMPLER_KERNELS_PTX`: it
//! is refused without it, and unless the file beside it (`<cubin>.source`, which the PTX check
//! writes) names that PTX; `cargo xtask bundle` passes both. Without it the cubin embedded is
//! empty and the host loads the PTX.

#[path = "ptx_build.rs"]
mod ptx_build;

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=ptx_build.rs");
    println!("cargo:rerun-if-changed=../sampler-kernels/src");
    println!("cargo:rerun-if-changed=../sampler-kernels/Cargo.toml");
    println!("cargo:rerun-if-env-changed=SAMPLER_KERNELS_PTX");
    println!("cargo:rerun-if-env-changed=SAMPLER_SM");
    println!("cargo:rerun-if-env-changed=SAMPLER_KERNELS_CUBIN");
    for var in ["SAMPLER_KERNELS_PTX", "SAMPLER_KERNELS_CUBIN"] {
        // The files named, not only the variables: `cargo xtask bundle` names the same paths
        // with new contents after a kernel change.
        if let Some(path) = std::env::var_os(var) {
            println!("cargo:rerun-if-changed={}", PathBuf::from(path).display());
        }
    }
    if let Some(cubin) = std::env::var_os("SAMPLER_KERNELS_CUBIN") {
        println!("cargo:rerun-if-changed={}", ptx_build::cubin_source_path(&PathBuf::from(cubin)).display());
    }

    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("sampler_kernels.ptx");
    let result = match std::env::var_os("SAMPLER_KERNELS_PTX") {
        Some(prebuilt) => std::fs::copy(&prebuilt, &out)
            .map(|_| ())
            .map_err(|e| format!("SAMPLER_KERNELS_PTX={}: {e}", PathBuf::from(&prebuilt).display())),
        None => {
            let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
            let workspace = manifest_dir.parent().map(PathBuf::from).unwrap_or_default();
            let sm = std::env::var("SAMPLER_SM").unwrap_or_else(|_| ptx_build::DEFAULT_SM.to_string());
            let target_dir = workspace.join("target/ptx").join(&sm);
            ptx_build::build_ptx(&workspace, &target_dir, &sm)
                .and_then(|ptx| std::fs::copy(&ptx, &out).map(|_| ()).map_err(|e| e.to_string()))
        }
    };
    // The module's target (`.target sm_90`), for the host to load the cubin on that SM alone.
    let result = result.and_then(|()| {
        let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
        let target = text
            .lines()
            .find_map(|l| l.trim().strip_prefix(".target "))
            .map(|t| t.split([',', ' ']).next().unwrap_or_default().to_string())
            .ok_or_else(|| format!("{}: no .target line", out.display()))?;
        println!("cargo:rustc-env=SAMPLER_MODULE_TARGET={target}");
        Ok(())
    });
    let cubin_out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("sampler_kernels.cubin");
    let result = result.and_then(|()| match (std::env::var_os("SAMPLER_KERNELS_CUBIN"), std::env::var_os("SAMPLER_KERNELS_PTX")) {
        (Some(cubin), Some(ptx)) => {
            let cubin = PathBuf::from(cubin);
            let named = format!("SAMPLER_KERNELS_CUBIN={}", cubin.display());
            let source_path = ptx_build::cubin_source_path(&cubin);
            let source = std::fs::read_to_string(&source_path).map_err(|e| {
                format!("{named}: {}: {e} (the PTX check writes it beside the cubin, naming the PTX it assembled)", source_path.display())
            })?;
            let ptx_bytes = std::fs::read(&ptx).map_err(|e| format!("SAMPLER_KERNELS_PTX={}: {e}", PathBuf::from(&ptx).display()))?;
            ptx_build::check_cubin_source(&ptx_bytes, &source).map_err(|e| format!("{named}: {e}"))?;
            std::fs::copy(&cubin, &cubin_out).map(|_| ()).map_err(|e| format!("{named}: {e}"))
        }
        (Some(_), None) => Err("SAMPLER_KERNELS_CUBIN needs SAMPLER_KERNELS_PTX, the PTX it was assembled from".to_string()),
        (None, _) => std::fs::write(&cubin_out, []).map_err(|e| format!("{}: {e}", cubin_out.display())),
    });
    if let Err(message) = result {
        // A build script reports failure through its exit status; the message is what cargo shows.
        eprintln!("error: cannot build the sampler's kernels: {message}");
        std::process::exit(1);
    }
}
