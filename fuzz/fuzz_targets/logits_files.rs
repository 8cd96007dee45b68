//! cargo-fuzz target `logits_files`: see `sampler_fuzz::logits_files` for what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sampler_fuzz::logits_files(data));
