//! The one entry point for everything beyond `cargo build`:
//!
//! - `cargo xtask ci`: every check CI runs, failing on the first error: formatting, clippy with warnings
//!   denied, all tests, the `no_std` builds for bare-metal and microcontroller targets, the published
//!   crates with the declared MSRV (`msrv`), the firmware example under QEMU (`embedded`), the loom
//!   models, the READMEs' examples (as doc tests), the failover example, the C example (`c-example`),
//!   the installed C library (`dist-c --check`), the Python package (`py`, and its wheel and sdist: `wheel --test`), weir-lb-tower (its tonic
//!   feature, its hyper example, and that example's `/metrics` scraped by a real Prometheus: `prometheus`), the packages as crates.io gets them (`publish-check`) and the API docs
//!   (warnings denied).
//! - `cargo xtask doc-paths`: every `.rs` file that a comment names exists (see `doc_paths.rs`); `ci`
//!   runs it first.
//! - `cargo xtask sim`: the main job: every simulator scenario with every policy (release build), a summary
//!   table on stdout and the report, CSVs and charts in `target/sim/` (arguments go to `weir-sim`);
//!   `cargo xtask sim --scenarios DIR`: the same for the scenario files `DIR/*.toml` (see `sim/README.md`).
//! - `cargo xtask bench`: the criterion benchmarks (weir, its baselines, floors, limiters, threads),
//!   then `benches/RESULTS.md`; `cargo xtask bench --instructions`: the valgrind instruction counts,
//!   then `benches/RESULTS.md` (see `bench.rs`).
//! - `cargo xtask ctest`: the C ABI's C and C++ test programs under ASan/UBSan, the header alone as C99,
//!   C11 and C++17, and `weir-lb-ffi`'s tests (see `ctest.rs`); `cargo xtask header` regenerates
//!   `include/weir.h`.
//! - `cargo xtask c-example`: the C example client over three local servers, checked (see `example.rs`).
//! - `cargo xtask prometheus`: the hyper example's `/metrics` scraped by a real Prometheus server and read
//!   back through its query API: the failing node's failures counted, its share falling (see
//!   `prometheus.rs`).
//! - `cargo xtask dist-c --prefix DIR`: installs the C header, libraries and `weir.pc` into DIR;
//!   `--check` installs into a temporary prefix and builds the example against it (see `dist.rs`).
//! - `cargo xtask fuzz [--seconds N] [--stable]`: the fuzz target over the C ABI for N seconds (default
//!   60): cargo-fuzz where nightly and cargo-fuzz are installed, the stable driver otherwise (see
//!   `fuzz.rs`).
//! - `cargo xtask py`: the Python package in its own venv: lint, `pip install ./py`, pytest, stubtest,
//!   `mypy --strict`; `cargo xtask wheel`: the abi3 wheel and the sdist, checked (`--test`, which `ci`
//!   runs: the wheel tested in a fresh venv with no Rust, the sdist built by pip); `cargo xtask
//!   bench-py`: the Python timings, then the "Python" section of `benches/RESULTS.md` (see `py.rs`).
//! - `cargo xtask embedded`: the firmware example on QEMU's Cortex-M4F and Cortex-M0 boards, checked, and
//!   the table of flash, RAM and instructions it costs; `--bless` writes the table into the firmware
//!   guide, `examples/embedded/README.md` (see `embedded.rs`).
//! - `cargo xtask publish-check`: the published crates (`weir-lb`, `weir-lb-ffi`, `weir-lb-tower`)
//!   packaged and built together as crates.io gets them, with their licences (see `publish.rs`).
//! - `cargo xtask msrv`: the published crates built with the toolchain `rust-version` names (see
//!   `msrv.rs`).
//!
//! `cargo xtask --help` lists the commands, `cargo xtask CMD --help` prints one's usage; an argument a
//! command does not take fails before anything runs (see `cli.rs`).

mod bench;
mod cli;
mod ctest;
mod dist;
mod doc_paths;
mod embedded;
mod example;
mod fuzz;
mod msrv;
mod prometheus;
mod publish;
mod py;
mod tools;

use cli::{Job, Parsed};
use std::env;
use std::path::{Path, PathBuf};
use std::process::{exit, Command};
use std::time::Instant;

/// 64-bit bare-metal targets: native 64-bit atomics, so the core is truly lock-free there.
const LOCK_FREE_TARGETS: [&str; 2] = ["aarch64-unknown-none", "riscv64gc-unknown-none-elf"];
/// 32-bit microcontrollers: 64-bit atomics through the `critical-section` feature.
const CRITICAL_SECTION_TARGETS: [&str; 2] = ["thumbv7em-none-eabihf", "thumbv6m-none-eabi"];
/// The algorithm selections that core/README.md documents, beside `algorithms` (all of them): the
/// default's (`Config::default()`), the seeds' (`Config::cascade()`), and one of each other health model
/// and limiter family. `cargo xtask ci` lints each on its own.
const FEATURE_SETS: [&str; 4] = [
    "decay,ciad",
    "buckets,fixed",
    "ewma,aimd",
    "decay,vegas,gradient,gradient2,windowed",
];

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
        Job::Ci => ci(),
        Job::DocPaths => doc_paths::doc_paths(),
        Job::Bench(mode) => bench::bench(mode),
        Job::Fuzz(args) => fuzz::fuzz(args),
        Job::Sim(args) => sim(&args),
        Job::Nostd => nostd(),
        Job::Loom => loom(),
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
        Job::BenchPy => py::bench_py(),
        Job::Embedded { bless } => embedded::embedded(bless),
        Job::PublishCheck => publish::publish_check(),
        Job::Msrv => msrv::msrv(),
    }
}

fn workspace_root() -> PathBuf {
    let manifest = env::var("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from("xtask"));
    manifest
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn fail(msg: &str) -> ! {
    eprintln!("xtask: FAILED: {msg}");
    exit(1);
}

/// The output of `cargo metadata --format-version 1 --no-deps` (the workspace's packages and its target
/// directory).
pub(crate) fn cargo_metadata() -> String {
    let out = Command::new("cargo")
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run cargo metadata: {e}")));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The cargo target directory (it may be moved by `CARGO_TARGET_DIR` or a config file).
pub(crate) fn target_dir() -> PathBuf {
    metadata_target_dir(&cargo_metadata())
        .unwrap_or_else(|| fail("cargo metadata gave no target_directory"))
}

/// `target_directory` of `cargo metadata --format-version 1` output; `None` when the output is not
/// JSON (cargo failed) or lacks it.
pub(crate) fn metadata_target_dir(json: &str) -> Option<PathBuf> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    v["target_directory"].as_str().map(PathBuf::from)
}

/// Runs a command, echoing it, and stops everything on failure.
fn run(program: &str, args: &[&str], envs: &[(&str, &str)]) {
    let shown = format!("{program} {}", args.join(" "));
    let prefix: String = envs.iter().map(|(k, v)| format!("{k}={v} ")).collect();
    eprintln!("\n==> {prefix}{shown}");
    let start = Instant::now();
    let status = Command::new(program)
        .args(args)
        .envs(envs.iter().copied())
        .status()
        .unwrap_or_else(|e| fail(&format!("cannot start `{shown}`: {e}")));
    if !status.success() {
        fail(&format!("`{prefix}{shown}` exited with {status}"));
    }
    eprintln!("    ok in {:.1} s", start.elapsed().as_secs_f64());
}

fn cargo(args: &[&str]) {
    run("cargo", args, &[]);
}

fn ci() {
    let start = Instant::now();
    // First: it takes well under a second and needs no build.
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
    nostd();
    msrv::msrv();
    embedded::embedded(false);
    loom();
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
    sim(&[]);
    eprintln!(
        "\nxtask: ci passed in {:.0} s",
        start.elapsed().as_secs_f64()
    );
}

/// The simulator's full report (release build), with `extra` arguments passed to `weir-sim` (checked by
/// `cli`); `--scenarios
/// DIR` becomes a `--scenario-file` for every `*.toml` in DIR.
fn sim(extra: &[String]) {
    let extra = scenario_files(extra).unwrap_or_else(|e| fail(&e));
    let mut args = vec!["run", "--release", "--quiet", "-p", "weir-lb-sim", "--"];
    if !extra.iter().any(|a| a == "--out") {
        args.extend(["--out", "target/sim"]);
    }
    args.extend(extra.iter().map(String::as_str));
    cargo(&args);
}

/// `args` with each `--scenarios DIR` replaced by `--scenario-file F` for every `*.toml` file F in DIR, in
/// sorted order (not recursive).
fn scenario_files(args: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a != "--scenarios" {
            out.push(a.clone());
            continue;
        }
        let dir = it.next().ok_or("--scenarios needs a directory")?;
        let entries = std::fs::read_dir(dir)
            .map_err(|e| format!("--scenarios {dir}: cannot read it: {e}"))?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "toml"))
            .collect();
        if files.is_empty() {
            return Err(format!("--scenarios {dir}: no *.toml file there"));
        }
        files.sort();
        for f in files {
            out.push("--scenario-file".into());
            out.push(f.display().to_string());
        }
    }
    Ok(out)
}

/// Installs a rustup target if rustup is there; false (with a loud line) if it cannot be had.
fn ensure_target(target: &str) -> bool {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    match installed {
        Ok(out)
            if String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.trim() == target) =>
        {
            true
        }
        Ok(_) => {
            let ok = Command::new("rustup")
                .args(["target", "add", target])
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                eprintln!("\n!!!!! SKIPPED: no_std build for {target}: `rustup target add {target}` failed !!!!!");
            }
            ok
        }
        Err(e) => {
            eprintln!(
                "\n!!!!! SKIPPED: no_std build for {target}: rustup not available ({e}) !!!!!"
            );
            false
        }
    }
}

fn nostd() {
    for target in LOCK_FREE_TARGETS {
        if ensure_target(target) {
            cargo(&[
                "build",
                "-p",
                "weir-lb",
                "--no-default-features",
                "--features",
                "algorithms",
                "--target",
                target,
            ]);
        }
    }
    for target in CRITICAL_SECTION_TARGETS {
        if ensure_target(target) {
            cargo(&[
                "build",
                "-p",
                "weir-lb",
                "--no-default-features",
                "--features",
                "critical-section,algorithms",
                "--target",
                target,
            ]);
        }
    }
}

fn loom() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_dir_from_metadata() {
        let metadata = r#"{"packages":[{"name":"xtask","targets":[{"name":"xtask"}]}],"workspace_members":[],"target_directory":"/work/weir/target","version":1,"workspace_root":"/work/weir"}"#;
        assert_eq!(
            metadata_target_dir(metadata),
            Some(PathBuf::from("/work/weir/target"))
        );
        // Escapes are decoded.
        assert_eq!(
            metadata_target_dir(r#"{"target_directory":"C:\\weir \"x\"\\target"}"#),
            Some(PathBuf::from(r#"C:\weir "x"\target"#))
        );
        assert_eq!(metadata_target_dir(r#"{"workspace_root":"/w"}"#), None);
        assert_eq!(
            metadata_target_dir("error: could not find Cargo.toml"),
            None
        );
    }

    #[test]
    fn scenarios_dir_becomes_one_scenario_file_per_toml_in_order() {
        let dir = std::env::temp_dir().join(format!("xtask-sim-scenarios-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("nested.toml")).unwrap();
        for f in ["b.toml", "a.toml", "notes.md", "c.toml.bak"] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let d = dir.display().to_string();
        let got = scenario_files(&args(&["--threads", "2", "--scenarios", &d, "--no-charts"]));
        let a = dir.join("a.toml").display().to_string();
        let b = dir.join("b.toml").display().to_string();
        assert_eq!(
            got,
            Ok(args(&[
                "--threads",
                "2",
                "--scenario-file",
                &a,
                "--scenario-file",
                &b,
                "--no-charts"
            ]))
        );
        // Without --scenarios, the arguments pass as they are (so `cargo xtask sim` is unchanged).
        assert_eq!(scenario_files(&[]), Ok(vec![]));
        assert_eq!(
            scenario_files(&args(&["--out", "x"])),
            Ok(args(&["--out", "x"]))
        );
        assert_eq!(
            scenario_files(&args(&["--scenarios"])),
            Err("--scenarios needs a directory".into())
        );
        let empty = dir.join("nested.toml");
        let e = scenario_files(&args(&["--scenarios", &empty.display().to_string()])).unwrap_err();
        assert!(e.ends_with("no *.toml file there"), "{e}");
        let e = scenario_files(&args(&[
            "--scenarios",
            &dir.join("nope").display().to_string(),
        ]))
        .unwrap_err();
        assert!(e.contains("cannot read it"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
