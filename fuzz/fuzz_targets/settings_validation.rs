//! cargo-fuzz target `settings_validation`: see `sampler_fuzz::settings_validation` for what is checked.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sampler_fuzz::settings_validation(data));
