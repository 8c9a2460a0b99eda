//! Puts the board's memory map where cortex-m-rt's `link.x` looks for `memory.x`, and links with
//! `link.x`, so that a plain `cargo build --target ...` (which `cargo xtask embedded` runs from the
//! repository root, where this crate's `.cargo/config.toml` does not apply) links a bootable image.

use std::env;
use std::fs;
use std::path::PathBuf;

fn main() {
    let target = env::var("TARGET").unwrap_or_default();
    let memory = match target.as_str() {
        // Cortex-M4F: QEMU's mps2-an386.
        "thumbv7em-none-eabihf" => "memory/mps2-an386.x",
        // Cortex-M0: QEMU's microbit (nRF51822).
        "thumbv6m-none-eabi" => "memory/microbit.x",
        other => panic!(
            "weir-embedded has a board for thumbv7em-none-eabihf (mps2-an386) and thumbv6m-none-eabi \
             (microbit), not for `{other}`: add its memory map under memory/ and a line here"
        ),
    };
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::copy(memory, out.join("memory.x")).expect("copy the board's memory map");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed={memory}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-link-arg=-Tlink.x");
    // The sections need no page alignment in the image (cortex-m-rt's advice for small flash).
    println!("cargo:rustc-link-arg=--nmagic");
}
