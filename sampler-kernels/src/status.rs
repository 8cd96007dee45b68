//! Per-row status codes, written by the GPU and the CPU reference alike.

/// A token was chosen.
pub const STATUS_OK: u32 = 0;
/// Nothing can be sampled: every token is masked out, NaN or -inf. The token is -1.
pub const STATUS_NO_VALID_TOKEN: u32 = 1;
/// The device found garbage settings (the host API validates before launch, so the CPU
/// reference never emits this). The token is -1.
pub const STATUS_INVALID_SETTINGS: u32 = 2;

/// Token id written for rows that are not [`STATUS_OK`].
pub const NO_TOKEN: i32 = -1;
