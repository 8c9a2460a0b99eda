//! Random call sequences over the C ABI: the fuzzer's bytes are decoded into calls by
//! `weir_ffi::fuzz::run`, which checks the contract after every call and panics on a violation (a
//! crash for libFuzzer). `cargo xtask fuzz` runs it; `ffi-c/src/fuzz/mod.rs` says what is checked.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    weir_ffi::fuzz::run(data);
});
