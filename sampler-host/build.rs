//! Builds the device crate into PTX and puts it in OUT_DIR, where `src/ptx.rs` embeds it.
//!
//! `SAMPLER_KERNELS_PTX=/path/to/file.ptx` skips the device build and embeds that file instead
//! (for machines without the nightly toolchain). `SAMPLER_SM` picks the SM target (sm_90).

#[path = "ptx_build.rs"]
mod ptx_build;

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=ptx_build.rs");
    println!("cargo:rerun-if-changed=../sampler-kernels/src");
    println!("cargo:rerun-if-changed=../sampler-kernels/Cargo.toml");
    println!("cargo:rerun-if-env-changed=SAMPLER_KERNELS_PTX");
    println!("cargo:rerun-if-env-changed=SAMPLER_SM");

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
    if let Err(message) = result {
        // A build script reports failure through its exit status; the message is what cargo shows.
        eprintln!("error: cannot build the sampler's PTX: {message}");
        std::process::exit(1);
    }
}
