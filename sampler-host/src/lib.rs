//! sampler-host: the sonic sampler's host side.
//!
//! The sonic sampler does all of LLM token sampling for a batch whose requests each carry their
//! own settings: grammar bitmask, repetition/frequency/presence penalties, logit bias,
//! temperature, min-p, top-k, top-p, greedy or seeded random choice. Two backends compute the
//! same function, token for token (docs/SEMANTICS.md is the contract):
//!
//! - [`reference::CpuReference`]: the CPU reference backend; it defines what every kernel must
//!   compute and serves where there is no GPU.
//! - the GPU sampler on CUDA, loaded dynamically through cudarc ([`cuda`]), running the PTX that
//!   `build.rs` builds from `sampler-kernels` and embeds in this crate.
//!
//! Both sit behind [`backend::Backend`], so a caller can swap one for the other.
//!
//! Top-k alone (the k largest logits and their indices per row) is a separate API:
//! [`topk::top_k`] on the CPU defines it, [`gpu_topk::GpuTopK`] computes it on the GPU.
//!
//! Error handling: every fallible function returns [`Error`]; nothing here unwraps or panics
//! on bad input.

pub mod backend;
pub mod cuda;
pub mod error;
pub mod gpu;
pub mod gpu_topk;
pub mod logits;
pub mod logits_file;
pub mod ptx;
pub mod reference;
pub mod settings;
pub mod state;
pub mod topk;
pub mod verify;

pub use error::{Error, Field, Result};
/// Speculative verification on the GPU ([`gpu::verify::GpuVerifier`]).
pub use gpu::verify as gpu_verify;

/// A generator for a unit test, seeded from the clock so that each run draws fresh inputs; the
/// seed is printed with `test`'s name, so a failure can be replayed by seeding it again.
#[cfg(test)]
pub(crate) fn test_rng(test: &str) -> rand_xoshiro::Xoshiro256PlusPlus {
    use rand_xoshiro::rand_core::SeedableRng;
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(7, |d| d.as_nanos() as u64);
    eprintln!("{test} seed {seed}");
    rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed)
}

// A serving engine builds a sampler and its graphs on one thread and may drive them from
// another (its GPU worker): these must stay `Send`. A field that is not fails the build here.
const _: () = {
    const fn send<T: Send>() {}
    send::<gpu::GpuSampler>();
    send::<gpu::StepGraph>();
    send::<gpu_verify::GpuVerifier>();
    send::<gpu_verify::VerifyGraph>();
    send::<gpu_topk::GpuTopK>();
    send::<gpu_topk::TopKGraph>();
    send::<reference::CpuReference>();
};
