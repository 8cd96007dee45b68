//! Philox-4x32-10, the counter-based generator behind every random choice.
//!
//! A draw is a pure function of (request seed, step counter, stream id): no generator state
//! lives anywhere, no noise buffer is pre-drawn, and a row's randomness cannot depend on the
//! other rows of the batch or on its position. Host and device run this same code.

/// Multiplier applied to counter word 0 in each round.
pub const PHILOX_M0: u32 = 0xD251_1F53;
/// Multiplier applied to counter word 2 in each round.
pub const PHILOX_M1: u32 = 0xCD9E_8D57;
/// Weyl increment of key word 0 between rounds.
pub const PHILOX_W0: u32 = 0x9E37_79B9;
/// Weyl increment of key word 1 between rounds.
pub const PHILOX_W1: u32 = 0xBB67_AE85;

/// Stream of the token choice.
pub const STREAM_TOKEN: u32 = 0;
/// Reserved for speculative verification (acceptance test).
pub const STREAM_SPEC_ACCEPT: u32 = 1;
/// Reserved for speculative verification (residual draw).
pub const STREAM_SPEC_RESIDUAL: u32 = 2;

#[inline(always)]
fn mulhilo(a: u32, b: u32) -> (u32, u32) {
    let p = (a as u64) * (b as u64);
    (p as u32, (p >> 32) as u32)
}

#[inline(always)]
fn round(c: [u32; 4], k: [u32; 2]) -> [u32; 4] {
    let (lo0, hi0) = mulhilo(PHILOX_M0, c[0]);
    let (lo1, hi1) = mulhilo(PHILOX_M1, c[2]);
    [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0]
}

/// Philox-4x32 with 10 rounds (Salmon et al., SC'11), as in Random123.
#[inline(always)]
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let mut c = counter;
    let mut k = key;
    c = round(c, k);
    let mut i = 1;
    while i < 10 {
        k = [k[0].wrapping_add(PHILOX_W0), k[1].wrapping_add(PHILOX_W1)];
        c = round(c, k);
        i += 1;
    }
    c
}

/// The 64 random bits of draw (`seed`, `step`, `stream`):
/// key = seed split lo/hi, counter = [step lo, step hi, stream, 0], output words 0 and 1.
#[inline(always)]
pub fn random_u64(seed: u64, step: u64, stream: u32) -> u64 {
    let out = philox4x32_10(
        [step as u32, (step >> 32) as u32, stream, 0],
        [seed as u32, (seed >> 32) as u32],
    );
    out[0] as u64 | (out[1] as u64) << 32
}

/// The 64 random bits at `position` of draw (`seed`, `step`, `stream`): as [`random_u64`]
/// with `position` in counter word 3, so `random_u64_at(s, t, k, 0) == random_u64(s, t, k)`.
/// Speculative verification draws one number per draft position from one step.
#[inline(always)]
pub fn random_u64_at(seed: u64, step: u64, stream: u32, position: u32) -> u64 {
    let out = philox4x32_10(
        [step as u32, (step >> 32) as u32, stream, position],
        [seed as u32, (seed >> 32) as u32],
    );
    out[0] as u64 | (out[1] as u64) << 32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers_random123() {
        assert_eq!(
            philox4x32_10([0; 4], [0; 2]),
            [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0]
            ),
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
        );
    }

    #[test]
    fn streams_and_steps_differ() {
        let a = random_u64(42, 7, STREAM_TOKEN);
        assert_ne!(a, random_u64(42, 7, STREAM_SPEC_ACCEPT));
        assert_ne!(a, random_u64(42, 8, STREAM_TOKEN));
        assert_ne!(a, random_u64(43, 7, STREAM_TOKEN));
        assert_eq!(a, random_u64(42, 7, STREAM_TOKEN));
    }

    #[test]
    fn positions_extend_the_plain_draw() {
        for stream in [STREAM_TOKEN, STREAM_SPEC_ACCEPT, STREAM_SPEC_RESIDUAL] {
            assert_eq!(random_u64_at(9, 3, stream, 0), random_u64(9, 3, stream));
            assert_ne!(random_u64_at(9, 3, stream, 1), random_u64(9, 3, stream));
        }
        assert_ne!(
            random_u64_at(9, 3, STREAM_SPEC_ACCEPT, 2),
            random_u64_at(9, 3, STREAM_SPEC_ACCEPT, 3)
        );
    }
}
