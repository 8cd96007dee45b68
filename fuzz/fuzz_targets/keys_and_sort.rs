//! cargo-fuzz target `keys_and_sort`: see `sampler_fuzz::keys_and_sort` for what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sampler_fuzz::keys_and_sort(data));
