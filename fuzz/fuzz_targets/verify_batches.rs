//! cargo-fuzz target `verify_batches`: see `sampler_fuzz::verify_batches` for what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sampler_fuzz::verify_batches(data));
