//! `cargo xtask ci`: every check CI runs, in order, failing on the first error (the list is in
//! `main.rs`'s docs and in `cargo xtask ci --help`).

use crate::process::{cargo, run};
use crate::{
    ctest, dist, doc_paths, embedded, example, install, loom, msrv, nostd, prometheus, publish, py,
    sim,
};
use std::time::Instant;

/// The algorithm selections that core/README.md documents, beside `algorithms` (all of them): the
/// default's (`Config::default()`), the cascade's (`Config::cascade()`), and one of each other health model
/// and limiter family, and the default's with the slowness term (`slow`). `cargo xtask ci` lints each on
/// its own.
const FEATURE_SETS: [&str; 6] = [
    "decay,ciad",
    "buckets,fixed",
    "ewma,aimd",
    "decay,vegas,gradient,gradient2,windowed",
    "decay,knee",
    "decay,slow,ciad",
];

/// Runs every check, in CI's order; the first failure stops it.
pub(crate) fn ci() {
    let start = Instant::now();
    // First: it takes about a second and builds nothing.
    doc_paths::doc_paths();
    cargo(&["fmt", "--all", "--check"]);
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]);
    // The no_std core with every algorithm, then each selection a firmware may name instead
    // (core/README.md, "Feature flags and targets"): each builds on its own, lint-free (the `#[cfg]`'d
    // matches included).
    for features in ["algorithms"].iter().chain(&FEATURE_SETS) {
        cargo(&[
            "clippy",
            "-p",
            "weir-lb",
            "--no-default-features",
            "--features",
            features,
            "--",
            "-D",
            "warnings",
        ]);
    }
    cargo(&["test", "--workspace"]);
    ctest::ctest();
    cargo(&[
        "test",
        "-p",
        "weir-lb",
        "--no-default-features",
        "--features",
        "algorithms",
        "--lib",
    ]);
    nostd::nostd();
    msrv::msrv();
    embedded::embedded(false);
    loom::loom();
    cargo(&["run", "--quiet", "-p", "weir-lb", "--example", "failover"]);
    // weir-lb-tower's optional tonic and hyper features (the workspace runs build it without), and its
    // hyper example.
    cargo(&[
        "clippy",
        "-p",
        "weir-lb-tower",
        "--all-targets",
        "--features",
        "tonic,hyper",
        "--",
        "-D",
        "warnings",
    ]);
    cargo(&[
        "test",
        "-p",
        "weir-lb-tower",
        "--features",
        "tonic,hyper",
        "--lib",
    ]);
    cargo(&[
        "run",
        "--quiet",
        "-p",
        "weir-lb-tower",
        "--example",
        "hyper",
    ]);
    prometheus::prometheus();
    example::c_example();
    dist::check();
    // The README's install commands from a checkout: the Rust one here, `pip install ./py` in `py`, the
    // wheel's in `wheel --test` (see `install.rs`).
    install::install_check();
    py::py();
    py::wheel(&["--test".into()]);
    publish::publish_check();
    // The API docs, with broken intra-doc links as errors.
    run(
        "cargo",
        &[
            "doc",
            "-p",
            "weir-lb",
            "-p",
            "weir-lb-tower",
            "-p",
            "weir-lb-sim",
            "--no-deps",
        ],
        &[("RUSTDOCFLAGS", "-D warnings")],
    );
    sim::sim(&[]);
    eprintln!(
        "\nxtask: ci passed in {:.0} s",
        start.elapsed().as_secs_f64()
    );
}
