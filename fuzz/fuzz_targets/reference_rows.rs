//! cargo-fuzz target `reference_rows`: see `sampler_fuzz::reference_rows` for what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sampler_fuzz::reference_rows(data));
