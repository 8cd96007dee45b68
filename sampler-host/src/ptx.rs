//! The PTX module built from `sampler-kernels` by `build.rs`, embedded in the binary.
//!
//! Embedding keeps deployment to one file: a GPU machine needs the driver, not a toolchain.

/// The module text, for `cuModuleLoadData`.
pub const SAMPLER_PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/sampler_kernels.ptx"));

/// Every entry point the host launches; module load checks that each one is present.
pub const ENTRY_POINTS: &[&str] =
    &[
        "demo_reduce_rows",
        "empty_kernel",
        "bench_copy",
        "bench_fill_logits",
        "sample_tiles",
        "sample_tiles_mass",
        "sample_rows",
        "sample_rows_two_per_sm",
        "exact_histogram",
        "exact_bins",
        "exact_gather",
        "exact_finish",
        "exact_finish_two_per_sm",
        "exact_tail",
        "topk_chunks",
        "topk_merge",
        "verify_rows",
        "verify_draws",
        "verify_chains",
    ];
