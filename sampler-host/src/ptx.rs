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
        "sample_tiles_greedy",
        "sample_tiles_mass",
        "sample_rows",
        "sample_rows_two_per_sm",
        "sample_rows_quiet",
        "sample_rows_quiet_two_per_sm",
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

#[cfg(test)]
mod tests {
    use super::{ENTRY_POINTS, SAMPLER_PTX};

    /// The list is the module's entry points, no more and no fewer, so that module load checks
    /// every kernel the host may launch (`sample_tiles_greedy` was missing until session 26).
    #[test]
    fn entry_points_are_the_modules() {
        let mut in_module: Vec<&str> = SAMPLER_PTX
            .lines()
            .filter_map(|l| l.trim().strip_prefix(".visible .entry ").or_else(|| l.trim().strip_prefix(".entry ")))
            .filter_map(|rest| rest.split('(').next())
            .collect();
        let mut listed = ENTRY_POINTS.to_vec();
        in_module.sort_unstable();
        listed.sort_unstable();
        assert_eq!(in_module, listed);
    }
}
