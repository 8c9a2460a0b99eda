//! `cargo xtask bench --instructions`: the instructions of each workload's pair, counted under valgrind
//! (cachegrind), and callgrind's breakdown of the two configurations' pairs by function; saved in
//! [`INSTRUCTIONS`]. Without valgrind it says SKIPPED, loudly, and the report keeps the last counts.

use super::facts::{machine, save, shell, Facts, INSTRUCTIONS};
use super::{CASCADE, DEFAULT};
use crate::process::{fail, run};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Pairs of the two runs whose instruction counts are subtracted.
pub(super) const SHORT_RUN: u64 = 20_000;
pub(super) const LONG_RUN: u64 = 120_000;

/// The workloads counted under valgrind, with their node counts.
const COUNTED: &[(&str, usize)] = &[
    ("weir-default", 3),
    ("weir-default", 16),
    ("weir-default", 64),
    ("weir-default", 256),
    ("weir-default-fixed", 3),
    ("weir-default-fixed", 16),
    ("weir-default-fixed", 64),
    ("weir-default-fixed", 256),
    ("weir-cascade-buckets", 3),
    ("weir-cascade-buckets", 16),
    ("weir-cascade-buckets", 64),
    ("weir-cascade-buckets", 256),
    ("weir-cascade-ewma", 16),
    ("weir-approx-buckets", 16),
    ("weir-approx-ewma", 16),
    ("weir-pick-buckets", 16),
    ("weir-pick-ewma", 16),
    ("mutex", 16),
    ("mutex", 64),
    ("tower-peak-ewma", 16),
    ("tower-pending", 16),
    ("limiter-default-fixed", 16),
    ("limiter-default-aimd", 16),
    ("limiter-default-vegas", 16),
    ("limiter-default-gradient", 16),
    ("limiter-default-gradient2", 16),
    ("limiter-default-ciad", 16),
    ("limiter-default-knee", 16),
    ("limiter-default-windowed", 16),
    ("limiter-cascade-fixed", 16),
    ("limiter-cascade-aimd", 16),
    ("limiter-cascade-vegas", 16),
    ("limiter-cascade-gradient", 16),
    ("limiter-cascade-gradient2", 16),
    ("limiter-cascade-ciad", 16),
    ("limiter-cascade-knee", 16),
    ("limiter-cascade-windowed", 16),
    ("driver", 16),
    ("cas", 16),
    ("fastrand", 16),
    ("scan", 16),
];

/// The pairs whose instructions callgrind breaks down, at 16 and 64 nodes (so the breakdown also shows
/// what each added node costs, and where).
pub(super) const BROKEN_DOWN: [&str; 2] = [DEFAULT, CASCADE];
const BREAKDOWN_NODES: [usize; 2] = [16, 64];

/// Functions of weir's pair whose inclusive instruction counts the breakdown shows (a function that a
/// configuration does not call is shown as a dash): the symbol, a short name, what it is.
pub(super) const BREAKDOWN: &[(&str, &str, &str)] = &[
    (
        "weir::balance::balancer::Balancer<S,W>::acquire",
        "Balancer::acquire",
        "acquire",
    ),
    (
        "weir::balance::algorithm::Prepared::choose_fast",
        "Prepared::choose_fast",
        "acquire: the first choice (scan + pick)",
    ),
    (
        "weir::balance::lowest::scan::lowest",
        "lowest::scan::lowest",
        "of which the lowest score (key scan, ties, pick)",
    ),
    (
        "weir::balance::balancer::Balancer<S,W>::rotate",
        "Balancer::rotate",
        "acquire: the clock's rotation, every node refreshed once per clock epoch (250 ms under \
         the lowest-score family, 5 s under buckets; here every 250 or 5,000 pairs), amortised",
    ),
    (
        "weir::balance::balancer::Balancer<S,W>::release",
        "Balancer::release",
        "release",
    ),
    (
        "weir::balance::health::Health::record",
        "Health::record",
        "release: the health record (with its refresh)",
    ),
    // `Health::refresh` is inlined into its callers: it retries `try_refresh`, which stays a function.
    (
        "weir::balance::health::Health::try_refresh",
        "Health::try_refresh",
        "the cached weight or penalty recomputed (by releases and rotations)",
    ),
    (
        "<weir::limit::LimitAlgorithm as weir::limit::Limit>::update",
        "LimitAlgorithm::update",
        "release: the limiter's update (none under a fixed limit)",
    ),
];

/// The executable of the `pairs` bench among the lines of `cargo --message-format=json`: the first
/// `compiler-artifact` of a target named `pairs` whose `executable` is a path (cargo reports `null` for
/// artifacts that are not run). Lines that are not JSON, such as a build script's output, are skipped.
fn pairs_executable_in(messages: &str) -> Option<String> {
    messages.lines().find_map(|line| {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        if v["reason"] != "compiler-artifact" || v["target"]["name"] != "pairs" {
            return None;
        }
        v["executable"].as_str().map(str::to_string)
    })
}

/// The `pairs` bench executable, built.
fn pairs_executable() -> String {
    eprintln!("\n==> cargo bench -p weir-lb-benches --bench pairs --no-run --message-format=json");
    let out = Command::new("cargo")
        .args([
            "bench",
            "-p",
            "weir-lb-benches",
            "--bench",
            "pairs",
            "--no-run",
            "--message-format=json",
        ])
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot build the pairs bench: {e}")));
    if !out.status.success() {
        fail("building the pairs bench failed");
    }
    pairs_executable_in(&String::from_utf8_lossy(&out.stdout))
        .unwrap_or_else(|| fail("cargo did not report the pairs executable"))
}

/// Instructions executed by `pairs run name n count` under cachegrind.
fn instructions(exe: &str, name: &str, n: usize, count: u64) -> Option<u64> {
    let out = Command::new("valgrind")
        .args([
            "--tool=cachegrind",
            "--cache-sim=no",
            "--cachegrind-out-file=/dev/null",
            exe,
            "run",
            name,
            &n.to_string(),
            &count.to_string(),
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .find(|l| l.contains("I refs:") || l.contains("I   refs:"))?
        .rsplit(':')
        .next()?
        .trim()
        .replace(',', "")
        .parse()
        .ok()
}

/// Every [`COUNTED`] workload's instructions per pair, then the [`breakdown`], saved in [`INSTRUCTIONS`].
pub(super) fn count(out: &Path) {
    if shell("valgrind", &["--version"]).is_none() {
        eprintln!(
            "\n!!!!! SKIPPED: instruction counts: valgrind is not installed (apt-get install valgrind); \
             RESULTS.md keeps the counts of the last run that had it !!!!!\n"
        );
        return;
    }
    let t0 = Instant::now();
    let exe = pairs_executable();
    let mut facts = machine();
    facts.insert(
        "meta.valgrind".into(),
        shell("valgrind", &["--version"]).unwrap_or_default(),
    );
    eprintln!(
        "\n==> valgrind --tool=cachegrind: ({LONG_RUN} - {SHORT_RUN}) pairs of each workload"
    );
    println!("\n| workload | nodes | instructions per pair |\n|---|---:|---:|");
    for &(name, n) in COUNTED {
        let short = instructions(&exe, name, n, SHORT_RUN);
        let long = instructions(&exe, name, n, LONG_RUN);
        match (short, long) {
            (Some(s), Some(l)) => {
                let per = (l as f64 - s as f64) / (LONG_RUN - SHORT_RUN) as f64;
                println!("| {name} | {n} | {per:.0} |");
                facts.insert(format!("instr.{name}.{n}"), format!("{per:.1}"));
            }
            _ => eprintln!("xtask: valgrind failed on {name} with {n} nodes"),
        }
    }
    breakdown(&exe, out, &mut facts);
    facts.insert(
        "meta.wall_s".into(),
        format!("{:.0}", t0.elapsed().as_secs_f64()),
    );
    facts.insert(
        "meta.command".into(),
        "cargo xtask bench --instructions".into(),
    );
    save(&out.join(INSTRUCTIONS), &facts);
}

/// Where each configuration's pair spends its instructions: callgrind's inclusive counts per pair, as
/// facts `breakdown.{workload}.{nodes}.{function}`.
fn breakdown(exe: &str, out: &Path, facts: &mut Facts) {
    let pairs = 100_000u64;
    for name in BROKEN_DOWN {
        for n in BREAKDOWN_NODES {
            let file = out.join(format!("callgrind.{name}.{n}.out"));
            let file_arg = format!("--callgrind-out-file={}", file.display());
            run(
                "valgrind",
                &[
                    "--tool=callgrind",
                    "--quiet",
                    &file_arg,
                    exe,
                    "run",
                    name,
                    &n.to_string(),
                    &pairs.to_string(),
                ],
                &[],
            );
            let Some(text) = shell(
                "callgrind_annotate",
                &[
                    "--inclusive=yes",
                    "--threshold=100",
                    &file.to_string_lossy(),
                ],
            ) else {
                eprintln!("xtask: callgrind_annotate failed; no breakdown of {name} at {n}");
                continue;
            };
            for (func, count) in inclusive_counts(&text) {
                facts.insert(
                    format!("breakdown.{name}.{n}.{func}"),
                    format!("{:.1}", count as f64 / pairs as f64),
                );
            }
        }
    }
}

/// The inclusive count of each [`BREAKDOWN`] function in `callgrind_annotate --inclusive=yes` output.
/// callgrind_annotate also lists the parts of a function inlined from other source files (iterators,
/// atomics, ...) as entries of their own, and a generic function instantiated in the bench may appear
/// twice under its own file (by the relative and by the absolute path); the largest entry is the
/// function's whole inclusive count.
fn inclusive_counts(text: &str) -> Vec<(&'static str, u64)> {
    BREAKDOWN
        .iter()
        .filter_map(|(func, _, _)| {
            let best = text
                .lines()
                .filter(|l| l.contains(&format!(":{func} [")) || l.ends_with(&format!(":{func}")))
                .filter_map(|l| {
                    l.split_whitespace()
                        .next()?
                        .replace(',', "")
                        .parse::<u64>()
                        .ok()
                })
                .max()?;
            Some((*func, best))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_executable_is_the_bench_artifacts() {
        let messages = [
            "not json",
            r#"{"reason":"compiler-artifact","package_id":"path+file:///w/benches#weir-lb-benches@0.1.0","target":{"kind":["lib"],"name":"weir_benches"},"executable":null,"fresh":true}"#,
            r#"{"reason":"compiler-message","target":{"kind":["bench"],"name":"pairs"},"message":{"rendered":"warning: \"executable\":\"/nope\""}}"#,
            r#"{"reason":"compiler-artifact","target":{"kind":["bench"],"name":"pairs"},"executable":null,"fresh":false}"#,
            r#"{"reason":"compiler-artifact","target":{"kind":["bench"],"name":"hot_path"},"executable":"/w/target/release/deps/hot_path-1","fresh":false}"#,
            r#"{"reason":"compiler-artifact","target":{"kind":["bench"],"name":"pairs"},"executable":"/w/target/release/deps/pairs-2","fresh":false}"#,
            r#"{"reason":"build-finished","success":true}"#,
        ]
        .join("\n");
        assert_eq!(
            pairs_executable_in(&messages).as_deref(),
            Some("/w/target/release/deps/pairs-2")
        );
        let without = messages
            .lines()
            .filter(|l| !l.contains("pairs-2"))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(pairs_executable_in(&without), None);
    }

    #[test]
    fn inclusive_counts_take_each_functions_own_entry() {
        let text = "\
87,296,442 (100.0%)  PROGRAM TOTALS
40,944,413 (46.90%)  /w/core/src/balance/balancer.rs:weir::balance::balancer::Balancer<S,W>::acquire
37,444,931 (42.89%)  core/src/balance/balancer.rs:weir::balance::balancer::Balancer<S,W>::acquire [/w/pairs]
30,322,881 (34.74%)  /w/core/src/balance/algorithm.rs:weir::balance::algorithm::Prepared::choose_fast
17,882,776 (20.49%)  core/src/balance/lowest/scan.rs:weir::balance::algorithm::Prepared::choose_fast
 3,210,823 ( 3.68%)  /rustc/x/library/core/src/slice/mod.rs:weir::balance::algorithm::Prepared::choose_fast
 5,000,000 ( 4.00%)  core/src/balance/lowest/scan.rs:weir::balance::lowest::scan::lowest_in [/w/pairs]
202,953,122 (75.58%)  => core/src/balance/algorithm.rs:weir::balance::algorithm::Prepared::choose_fast (100,008x)
 1,340,376 ( 1.54%)  core/src/balance/health.rs:weir::balance::health::Health::try_refresh [/w/pairs]
 8,200,218 ( 9.39%)  /w/core/src/limit/mod.rs:<weir::limit::LimitAlgorithm as weir::limit::Limit>::update";
        let got = inclusive_counts(text);
        assert_eq!(
            got,
            [
                (
                    "weir::balance::balancer::Balancer<S,W>::acquire",
                    40_944_413
                ),
                (
                    "weir::balance::algorithm::Prepared::choose_fast",
                    30_322_881
                ),
                ("weir::balance::health::Health::try_refresh", 1_340_376),
                (
                    "<weir::limit::LimitAlgorithm as weir::limit::Limit>::update",
                    8_200_218
                ),
            ]
        );
    }
}
