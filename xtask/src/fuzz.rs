//! `cargo xtask fuzz [--seconds N] [--stable]`: the fuzz target over the C ABI (`ffi-c/src/fuzz/mod.rs`)
//! for about N seconds (default 60), then how many executions it made and what it found.
//!
//! With a nightly toolchain and cargo-fuzz installed (`cargo install cargo-fuzz`) it runs libFuzzer on
//! `ffi-c/fuzz` (target `c_abi`); otherwise, or with `--stable`, the stable driver: the `#[ignore]`d
//! test `for_a_while` of `ffi-c/src/fuzz/mod.rs` in release, which runs seeded random sequences through the
//! same interpreter. It says which one ran. Nothing here is part of `cargo xtask ci`: CI never needs nightly
//! (the stable driver's short test runs in `cargo test`).

use crate::process::{fail, run};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const FUZZ_DIR: &str = "ffi-c/fuzz";
const TARGET: &str = "c_abi";

pub(crate) const USAGE: &str = "\
usage: cargo xtask fuzz [--seconds N] [--stable]
The fuzz target over the C ABI for about N seconds (60): libFuzzer through cargo-fuzz where nightly and
cargo-fuzz are installed, the stable driver otherwise or with --stable; then the executions and findings.";

/// `cargo xtask fuzz`'s arguments.
#[derive(Debug, PartialEq)]
pub(crate) struct Args {
    pub(crate) seconds: u64,
    pub(crate) stable: bool,
}

pub(crate) fn parse(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args {
        seconds: 60,
        stable: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                parsed.seconds = it
                    .next()
                    .and_then(|s| s.parse().ok())
                    .ok_or("--seconds takes a whole number of seconds")?;
            }
            "--stable" => parsed.stable = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(parsed)
}

pub(crate) fn fuzz(Args { seconds, stable }: Args) {
    match (stable, cargo_fuzz()) {
        (false, Ok(version)) => {
            eprintln!("xtask: fuzzing with cargo-fuzz (libFuzzer) for {seconds} s: {version}");
            libfuzzer(seconds);
        }
        (true, _) => stable_driver(seconds, "--stable"),
        (false, Err(why)) => stable_driver(seconds, &why),
    }
}

/// cargo-fuzz's version, or why it cannot be used.
fn cargo_fuzz() -> Result<String, String> {
    let ok = |args: &[&str]| {
        Command::new("cargo")
            .args(args)
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let nightly = ok(&["+nightly", "--version"]).ok_or("no nightly toolchain")?;
    let fuzz = ok(&["+nightly", "fuzz", "--version"])
        .ok_or("cargo-fuzz is not installed (`cargo install cargo-fuzz`)")?;
    Ok(format!("{fuzz}, {nightly}"))
}

fn stable_driver(seconds: u64, why: &str) {
    eprintln!("xtask: fuzzing with the stable driver for {seconds} s ({why})");
    let secs = seconds.to_string();
    run(
        "cargo",
        &[
            "test",
            "--release",
            "-p",
            "weir-lb-ffi",
            "--lib",
            "fuzz::tests::for_a_while",
            "--",
            "--ignored",
            "--exact",
            "--nocapture",
        ],
        &[("WEIR_FUZZ_SECONDS", &secs)],
    );
}

/// Runs libFuzzer, echoing its output, and reports its executions and findings from it.
fn libfuzzer(seconds: u64) {
    let time = format!("-max_total_time={seconds}");
    let args = [
        "+nightly",
        "fuzz",
        "run",
        "--fuzz-dir",
        FUZZ_DIR,
        TARGET,
        "--",
        &time,
        "-print_final_stats=1",
    ];
    eprintln!("\n==> cargo {}", args.join(" "));
    let mut child = Command::new("cargo")
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| fail(&format!("cannot start cargo fuzz: {e}")));
    let mut runs = None;
    let mut artifacts = Vec::new();
    if let Some(err) = child.stderr.take() {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            eprintln!("{line}");
            // libFuzzer's final statistics: `stat::number_of_executed_units: N`.
            if let Some(n) = line.strip_prefix("stat::number_of_executed_units:") {
                runs = n.trim().parse::<u64>().ok();
            }
            if let Some(path) = line.split("Test unit written to ").nth(1) {
                artifacts.push(path.trim().to_string());
            }
        }
    }
    let status = child
        .wait()
        .unwrap_or_else(|e| fail(&format!("cargo fuzz did not finish: {e}")));
    let runs = runs.map_or("?".into(), |r| r.to_string());
    eprintln!(
        "\nxtask: cargo-fuzz: {runs} executions in about {seconds} s; findings: {}",
        artifacts.len()
    );
    for a in &artifacts {
        eprintln!(
            "xtask: finding: {a} (replay: cargo +nightly fuzz run --fuzz-dir {FUZZ_DIR} {TARGET} {a})"
        );
    }
    if !status.success() {
        fail(&format!("cargo fuzz exited with {status}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_stable_only() {
        let parse_str = |v: &[&str]| parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(
            parse_str(&[]),
            Ok(Args {
                seconds: 60,
                stable: false
            })
        );
        assert_eq!(
            parse_str(&["--stable", "--seconds", "5"]),
            Ok(Args {
                seconds: 5,
                stable: true
            })
        );
        let whole = Err("--seconds takes a whole number of seconds".to_string());
        assert_eq!(parse_str(&["--seconds", "1.5"]), whole);
        assert_eq!(parse_str(&["--seconds"]), whole);
        assert_eq!(
            parse_str(&["--secs", "5"]),
            Err("unknown argument \"--secs\"".to_string())
        );
    }
}
