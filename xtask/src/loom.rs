//! `cargo xtask loom`: the core's loom models (release build, `--cfg loom`, in `target/loom`).

use crate::process::run;

/// Runs the loom models: each `loom*` test of the core, every interleaving up to three preemptions.
pub(crate) fn loom() {
    // A separate target directory: `--cfg loom` would otherwise rebuild everything the other steps built.
    run(
        "cargo",
        &[
            "test",
            "-p",
            "weir-lb",
            "--release",
            "--test",
            "loom",
            "--test",
            "loom_overload",
            "--test",
            "loom_limit",
            "--test",
            "loom_wait",
            "--test",
            "loom_decay",
        ],
        &[
            ("RUSTFLAGS", "--cfg loom"),
            ("CARGO_TARGET_DIR", "target/loom"),
            ("LOOM_MAX_PREEMPTIONS", "3"),
        ],
    );
}
