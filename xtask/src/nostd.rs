//! `cargo xtask nostd`: the core without `std` for bare-metal and microcontroller targets, each rustup
//! target installed first.

use crate::process::cargo;
use crate::tools::ensure_target;

/// 64-bit bare-metal targets: native 64-bit atomics, so the core is truly lock-free there.
const LOCK_FREE_TARGETS: [&str; 2] = ["aarch64-unknown-none", "riscv64gc-unknown-none-elf"];
/// 32-bit microcontrollers: 64-bit atomics through the `critical-section` feature.
const CRITICAL_SECTION_TARGETS: [&str; 2] = ["thumbv7em-none-eabihf", "thumbv6m-none-eabi"];

/// Builds the core with every algorithm and without `std` for each target: natively lock-free on the
/// 64-bit ones, through `critical-section` on the microcontrollers; a target rustup cannot add is
/// skipped, loudly.
pub(crate) fn nostd() {
    for (targets, features) in [
        (LOCK_FREE_TARGETS, "algorithms"),
        (CRITICAL_SECTION_TARGETS, "critical-section,algorithms"),
    ] {
        for target in targets {
            if ensure_target(target) {
                cargo(&[
                    "build",
                    "-p",
                    "weir-lb",
                    "--no-default-features",
                    "--features",
                    features,
                    "--target",
                    target,
                ]);
            }
        }
    }
}
