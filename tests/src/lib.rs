//! Shared helpers of the integration tests: GPU discovery with a visible SKIP, and fresh
//! random inputs.
//!
//! GPU tests call [`gpu_or_skip`]. Without a device they print `SKIP (no CUDA device)` on the
//! real stderr (libtest's capture would hide a `println!`) and return `None`; with
//! `REQUIRE_GPU=1` they panic instead, so the bundle's run on a GPU machine cannot pass by
//! skipping.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use rand_xoshiro::rand_core::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use sampler_host::cuda::GpuDevice;
use sampler_host::Error;

/// Opens GPU 0, or reports a skip (or a failure under `REQUIRE_GPU=1`) when there is none.
pub fn gpu_or_skip(test: &str) -> Option<GpuDevice> {
    match GpuDevice::open(0) {
        Ok(device) => Some(device),
        Err(Error::NoCudaDevice { detail }) => {
            if std::env::var("REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("{test}: REQUIRE_GPU=1 but no CUDA device: {detail}");
            }
            let _ = writeln!(std::io::stderr(), "SKIP (no CUDA device): {test}");
            None
        }
        Err(other) => panic!("{test}: GPU present but unusable: {other}"),
    }
}

/// A generator seeded from the clock, with the seed printed so a failure can be replayed by
/// setting `TEST_SEED`.
pub fn fresh_rng(test: &str) -> Xoshiro256PlusPlus {
    let seed = std::env::var("TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0x5eed)
    });
    let _ = writeln!(std::io::stderr(), "{test}: TEST_SEED={seed}");
    Xoshiro256PlusPlus::seed_from_u64(seed)
}

/// `n` random `u32`, none forced to zero.
pub fn random_u32s(rng: &mut impl Rng, n: usize) -> Vec<u32> {
    (0..n).map(|_| rng.next_u32()).collect()
}
