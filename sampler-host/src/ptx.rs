//! The PTX module built from `sampler-kernels` by `build.rs`, embedded in the binary, and the
//! cubin ptxas assembled from it when the build was given one (`cargo xtask bundle`).
//!
//! Embedding keeps deployment to one file: a GPU machine needs the driver, not a toolchain.

/// The module text, for `cuModuleLoadData`.
pub const SAMPLER_PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/sampler_kernels.ptx"));

/// The same module assembled for [`SAMPLER_TARGET`] (an ELF image), or empty when the build
/// had none (`SAMPLER_KERNELS_CUBIN`, `build.rs`). On that SM the host loads it and the driver
/// compiles nothing; elsewhere it loads the PTX.
pub const SAMPLER_CUBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/sampler_kernels.cubin"));

/// The PTX's `.target` (`sm_90`): the SM [`SAMPLER_CUBIN`] is for.
pub const SAMPLER_TARGET: &str = env!("SAMPLER_MODULE_TARGET");

/// Whether [`SAMPLER_CUBIN`] runs on a device of compute capability `major.minor`: a cubin is
/// for one SM (an `sm_90a` one too runs on 9.0 alone).
pub fn cubin_runs_on(major: i32, minor: i32) -> bool {
    let sm = format!("sm_{major}{minor}");
    !SAMPLER_CUBIN.is_empty() && SAMPLER_TARGET.strip_prefix(sm.as_str()).is_some_and(|rest| rest.is_empty() || rest == "a")
}

/// Every entry point the host launches; module load checks that each one is present.
pub const ENTRY_POINTS: &[&str] =
    &[
        "demo_reduce_rows",
        "empty_kernel",
        "bench_copy",
        "bench_fill_logits",
        "sample_tiles",
        "sample_tiles_half",
        "sample_tiles_ring",
        "sample_tiles_greedy",
        "sample_tiles_greedy_pairs",
        "sample_tiles_mass",
        "sample_rows",
        "sample_rows_two_per_sm",
        "sample_rows_quiet",
        "sample_rows_quiet_two_per_sm",
        "exact_histogram",
        "exact_histogram_runs",
        "exact_bins",
        "exact_bins_two_per_sm",
        "exact_gather",
        "exact_gather_runs",
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
    use super::{cubin_runs_on, ENTRY_POINTS, SAMPLER_CUBIN, SAMPLER_PTX, SAMPLER_TARGET};

    /// The SM number of `sm_90` or `sm_90a`: 90.
    fn target_sm() -> u32 {
        SAMPLER_TARGET.trim_start_matches("sm_").trim_end_matches('a').parse().expect("sm_XY")
    }

    /// The target is the PTX's, and the cubin is tried on that SM alone.
    #[test]
    fn the_cubin_is_tried_on_the_modules_target_alone() {
        assert!(SAMPLER_PTX.lines().any(|l| l.trim() == format!(".target {SAMPLER_TARGET}")), "{SAMPLER_TARGET}");
        if SAMPLER_CUBIN.is_empty() {
            assert!(!cubin_runs_on(9, 0), "no cubin to run");
            return;
        }
        let sm = target_sm() as i32;
        assert!(cubin_runs_on(sm / 10, sm % 10));
        assert!(!cubin_runs_on(sm / 10, sm % 10 + 1) && !cubin_runs_on(sm / 10 + 1, sm % 10));
    }

    /// An embedded cubin is a CUDA ELF image (`e_machine` 190) for the PTX's SM, with every
    /// entry point's code section: a wrong file handed to the build fails here, not on a GPU.
    #[test]
    fn an_embedded_cubin_is_the_modules() {
        if SAMPLER_CUBIN.is_empty() {
            return;
        }
        assert_eq!(&SAMPLER_CUBIN[..4], b"\x7fELF", "not an ELF image");
        assert_eq!(u16::from_le_bytes([SAMPLER_CUBIN[18], SAMPLER_CUBIN[19]]), 190, "not a CUDA ELF image");
        // The SM is in e_flags: bits 8..16 from the ELF ABI version 8 on (ptxas 13), bits 0..8
        // before.
        let flags = u32::from_le_bytes([SAMPLER_CUBIN[48], SAMPLER_CUBIN[49], SAMPLER_CUBIN[50], SAMPLER_CUBIN[51]]);
        let elf_sm = if SAMPLER_CUBIN[8] >= 8 { (flags >> 8) & 0xff } else { flags & 0xff };
        assert_eq!(elf_sm, target_sm(), "the cubin is for another SM than the PTX's {SAMPLER_TARGET}");
        for name in ENTRY_POINTS {
            let section = format!(".text.{name}\0");
            assert!(SAMPLER_CUBIN.windows(section.len()).any(|w| w == section.as_bytes()), "no code for {name}");
        }
    }

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
