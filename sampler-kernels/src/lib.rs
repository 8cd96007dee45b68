//! Device code of the sonic sampler, and the pure functions it shares with the host.
//!
//! One crate, two targets:
//! - `nvptx64-nvidia-cuda`: rustc's NVPTX backend turns this crate into the PTX module that
//!   `sampler-host` embeds. Entry points live in `tiles`, `sampler`, `exact`, `spec`,
//!   `kernels` and [`topk`]; the PTX they need that Rust has no words for lives in `intrinsics`
//!   (all but `topk` are built for nvptx alone, so the host's documentation has no page for them).
//! - the host: everything that is not an entry point or an intrinsic compiles for the CPU too,
//!   so the CPU reference backend runs the *same* functions and unit tests run under `cargo test`.
//!
//! Order of the modules follows the data: [`abi`] (parameter structs shared with the host),
//! pure helpers, then entry points.
//!
//! Rules that keep this crate loadable and deterministic (checked by `cargo xtask test`):
//! - no panic can be reached on the device: the PTX build uses `panic=immediate-abort`, and the
//!   PTX check rejects any `.extern .func` (a call into `core` that the module could not resolve);
//! - no contracted multiply-add: rustc never contracts `a * b + c`, and the PTX check rejects
//!   `fma` outside inline assembly, so the only fused operation is the explicit
//!   [`fixed::fused_mul_add`], which rounds once on both sides; every step rounds alike;
//! - no kernel allocates.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, asm_experimental_arch))]
// `fixed::fused_mul_add` on the host: `fmaf32`, the exact fused multiply-add `core` has.
#![cfg_attr(not(target_arch = "nvptx64"), feature(core_intrinsics), allow(internal_features))]
#![deny(unsafe_op_in_unsafe_fn)]

#[cfg(test)]
extern crate std;

pub mod abi;
pub mod decide;
pub mod fixed;
pub mod keys;
pub mod logit;
pub mod logprob;
pub mod philox;
pub mod status;
pub mod topk;
pub mod verify;

#[cfg(target_arch = "nvptx64")]
pub mod block;
#[cfg(target_arch = "nvptx64")]
pub mod exact;
#[cfg(target_arch = "nvptx64")]
pub mod intrinsics;
#[cfg(target_arch = "nvptx64")]
pub mod kernels;
#[cfg(target_arch = "nvptx64")]
pub mod sampler;
#[cfg(target_arch = "nvptx64")]
pub mod spec;
#[cfg(target_arch = "nvptx64")]
pub mod tiles;

/// Reductions the demo kernel computes, written once so the host test states the same thing.
pub mod demo {
    /// Wrapping sum of a row of `u32`: exact, so the device result must equal the host's.
    #[inline]
    pub fn row_sum(row: &[u32]) -> u32 {
        row.iter().fold(0u32, |acc, &v| acc.wrapping_add(v))
    }

    /// Largest element of a row (0 for an empty row).
    #[inline]
    pub fn row_max(row: &[u32]) -> u32 {
        row.iter().copied().max().unwrap_or(0)
    }
}
