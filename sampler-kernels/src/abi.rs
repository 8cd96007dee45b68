//! The one ABI module: `#[repr(C)]` parameter structs that the host writes and the kernels read.
//!
//! Every struct here is passed by value as the single parameter of its kernel, so its layout
//! *is* the launch ABI. Size and alignment are pinned by `const` asserts that compile on both
//! targets: a field added on one side without the other fails the build, not a launch.
//! Device pointers travel as `u64` so the struct means the same on the host and the GPU.

/// Parameters of `demo_reduce_rows`: one block per row, exact `u32` sum and max per row.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DemoReduceParams {
    /// Device pointer to `rows * row_stride` `u32` values, 16-byte aligned.
    pub input: u64,
    /// Device pointer to `rows * 2` `u32`: `[sum, max]` per row.
    pub output: u64,
    /// Elements per row that take part.
    pub row_len: u32,
    /// Distance between row starts, in elements; a multiple of 4 so rows stay 16-byte aligned.
    pub row_stride: u32,
    /// Number of rows; the grid must have exactly this many blocks.
    pub rows: u32,
    /// Keeps the size a multiple of 8 on both targets.
    pub _pad: u32,
}

const _: () = assert!(core::mem::size_of::<DemoReduceParams>() == 32);
const _: () = assert!(core::mem::align_of::<DemoReduceParams>() == 8);

/// Threads per block of `demo_reduce_rows`; the kernel's shared scratch is sized for it.
pub const DEMO_BLOCK_THREADS: u32 = 256;
/// Dynamic shared memory `demo_reduce_rows` needs: one `[sum, max]` pair per warp.
pub const DEMO_SHARED_BYTES: u32 = (DEMO_BLOCK_THREADS / 32) * 8;
