//! The one entry point for everything beyond `cargo build`:
//!
//! - `cargo xtask ci`: every check CI runs, failing on the first error: formatting, clippy with warnings
//!   denied, all tests, the `no_std` builds for bare-metal and microcontroller targets, the published
//!   crates with the declared MSRV (`msrv`), the firmware example under QEMU (`embedded`), the loom
//!   models, the READMEs' examples (as doc tests), the failover example, the C example (`c-example`),
//!   the installed C library (`dist-c --check`), the README's install commands from a checkout
//!   (`install-check`), the Python package (`py`, and its wheel and sdist: `wheel --test`), weir-lb-tower
//!   (its tonic feature, its hyper example, and that example's `/metrics` scraped by a real Prometheus:
//!   `prometheus`), the packages as crates.io gets them (`publish-check`) and the API docs, warnings
//!   denied (see `ci.rs`).
//! - `cargo xtask doc-paths`: every `.rs` file and every module that a comment names exists (see
//!   `doc_paths/mod.rs`); `ci` runs it first.
//! - `cargo xtask sim`: the main job: every simulator scenario with every policy (release build), a summary
//!   table on stdout and the report, CSVs and charts in `target/sim/` (arguments go to `weir-sim`);
//!   `cargo xtask sim --scenarios DIR`: the same for the scenario files `DIR/*.toml` (see `sim/README.md`
//!   and `sim.rs`).
//! - `cargo xtask bench`: the criterion benchmarks (weir, its baselines, floors, limiters, threads),
//!   then `benches/RESULTS.md`; `cargo xtask bench --instructions`: the valgrind instruction counts,
//!   then `benches/RESULTS.md` (see `bench/mod.rs`).
//! - `cargo xtask ctest`: the C ABI's C and C++ test programs under ASan/UBSan, the header alone as C99,
//!   C11 and C++17, and `weir-lb-ffi`'s tests (see `ctest.rs`); `cargo xtask header` regenerates
//!   `include/weir.h`.
//! - `cargo xtask c-example`: the C example client over three local servers, checked (see `example.rs`).
//! - `cargo xtask prometheus`: the hyper example's `/metrics` scraped by a real Prometheus server and read
//!   back through its query API: the failing node's failures counted, its share falling (see
//!   `prometheus.rs`).
//! - `cargo xtask dist-c --prefix DIR`: installs the C header, libraries and `weir.pc` into DIR;
//!   `--check` installs into a temporary prefix and builds the example against it (see `dist/mod.rs`).
//! - `cargo xtask fuzz [--seconds N] [--stable]`: the fuzz target over the C ABI for N seconds (default
//!   60): cargo-fuzz where nightly and cargo-fuzz are installed, the stable driver otherwise (see
//!   `fuzz.rs`).
//! - `cargo xtask py`: the Python package in its own venv: lint, `pip install ./py`, pytest, stubtest,
//!   `mypy --strict`; `cargo xtask wheel`: the abi3 wheel and the sdist, checked (`--test`, which `ci`
//!   runs: the wheel tested in a fresh venv with no Rust, the sdist built by pip); `cargo xtask
//!   bench-py`: the Python timings, then the "Python" section of `benches/RESULTS.md` (see `py/mod.rs`).
//! - `cargo xtask install-check`: the install commands of the README and the guides are the ones CI runs,
//!   and `cargo add --path path/to/weir/core` builds in a scratch project (see `install.rs`).
//! - `cargo xtask embedded`: the firmware example on QEMU's Cortex-M4F and Cortex-M0 boards, checked, and
//!   the table of flash, RAM and instructions it costs; `--bless` writes the table into the firmware
//!   guide, `examples/embedded/README.md` (see `embedded/mod.rs`).
//! - `cargo xtask publish-check`: the published crates (`weir-lb`, `weir-lb-ffi`, `weir-lb-tower`)
//!   packaged and built together as crates.io gets them, with their licences (see `publish.rs`).
//! - `cargo xtask msrv`: the published crates built with the toolchain `rust-version` names (see
//!   `msrv.rs`).
//! - `cargo xtask nostd`: the core without `std` for the bare-metal and microcontroller targets (see
//!   `nostd.rs`); `cargo xtask loom`: the core's loom models (see `loom.rs`).
//!
//! `cargo xtask --help` lists the commands, `cargo xtask CMD --help` prints one's usage; an argument a
//! command does not take fails before anything runs (see `cli.rs`). This file only dispatches; what the
//! jobs share lives apart: running commands and failing in `process.rs`, the workspace's root and target
//! directory in `workspace.rs`, the programs and rustup targets a job installs in `tools.rs`.

mod bench;
mod ci;
mod cli;
mod ctest;
mod dist;
mod doc_paths;
mod embedded;
mod example;
mod fuzz;
mod install;
mod loom;
mod msrv;
mod nostd;
mod process;
mod prometheus;
mod publish;
mod py;
mod sim;
mod tools;
mod workspace;

use cli::{Job, Parsed};
use process::fail;
use std::env;
use std::process::exit;
use workspace::workspace_root;

fn main() {
    let args: Vec<String> = env::args().skip(1).collect();
    // Checked before anything else: help and usage errors build and run nothing.
    let job = match cli::parse(&args) {
        Ok(Parsed::List) => return println!("{}", cli::list()),
        Ok(Parsed::Help(usage)) => return println!("{usage}"),
        Ok(Parsed::Run(job)) => job,
        Err(wrong) => {
            eprintln!(
                "xtask: {}

{}",
                wrong.error, wrong.usage
            );
            exit(2);
        }
    };
    let root = workspace_root();
    env::set_current_dir(&root)
        .unwrap_or_else(|e| fail(&format!("cannot enter {}: {e}", root.display())));
    match job {
        Job::Ci => ci::ci(),
        Job::DocPaths => doc_paths::doc_paths(),
        Job::Bench(mode) => bench::bench(mode),
        Job::Fuzz(args) => fuzz::fuzz(args),
        Job::Sim(args) => sim::sim(&args),
        Job::Nostd => nostd::nostd(),
        Job::Loom => loom::loom(),
        Job::Ctest => ctest::ctest(),
        Job::Header => ctest::header(),
        Job::CExample => example::c_example(),
        Job::Prometheus => prometheus::prometheus(),
        Job::DistC(args) => dist::dist(&args),
        Job::Py => py::py(),
        Job::Wheel { test } => py::wheel(&if test {
            vec!["--test".into()]
        } else {
            Vec::new()
        }),
        Job::InstallCheck => install::install_check(),
        Job::BenchPy => py::bench_py(),
        Job::Embedded { bless } => embedded::embedded(bless),
        Job::PublishCheck => publish::publish_check(),
        Job::Msrv => msrv::msrv(),
    }
}
