//! `cargo xtask bench`: the benchmark suite of `benches/` and its report, `benches/RESULTS.md`.
//!
//! - `cargo xtask bench [CRITERION ARGS..]`: the criterion run (`hot_path`: weir, its baselines and
//!   floors, limiters, threads; then `tower_service`: weir-tower against tower's `Balance`, see `tower.rs`),
//!   then the allocation count (`pairs allocations`) and the interleaved cross-check of the ratios
//!   (`pairs interleave`). The medians of every benchmark that this run
//!   measured, the bench's facts (memory, the helpers' times, the round trip's batch quantiles) and the
//!   machine are saved to `<target>/weir-bench/timing.txt`.
//! - `cargo xtask bench --instructions`: the instruction counts: each workload's pairs under valgrind
//!   (cachegrind), run twice with two pair counts so that construction cancels out, plus a callgrind
//!   breakdown of weir's default pair; saved to `<target>/weir-bench/instructions.txt`. Without valgrind
//!   it says SKIPPED, loudly, and goes on.
//!
//! - `cargo xtask bench --c-abi`: only the C ABI's pairs beside the Rust pair (`c_abi`, through
//!   `libweir.so` built with the `release-c` profile, as shipped); they replace the C ABI's figures in
//!   `timing.txt`. The full run includes them.
//!
//! Either then rewrites `benches/RESULTS.md` from the latest of both files: each section says which run
//! (commit, date, load) it comes from. Ratios are always taken within one run. `--report` only rewrites
//! it from the saved files.

mod tower;

use super::{fail, run, target_dir};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime};
use walkdir::WalkDir;

type Facts = BTreeMap<String, String>;

/// Pairs of the two runs whose instruction counts are subtracted.
const SHORT_RUN: u64 = 20_000;
const LONG_RUN: u64 = 120_000;

/// The new default's pair (`Config::default()`) and the seeds' (`Config::seeds()`), by workload name.
const DEFAULT: &str = "weir-default";
const DEFAULT_FIXED: &str = "weir-default-fixed";
const SEEDS: &str = "weir-cascade-buckets";

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
    ("limiter-default-windowed", 16),
    ("limiter-seeds-fixed", 16),
    ("limiter-seeds-aimd", 16),
    ("limiter-seeds-vegas", 16),
    ("limiter-seeds-gradient", 16),
    ("limiter-seeds-gradient2", 16),
    ("limiter-seeds-ciad", 16),
    ("limiter-seeds-windowed", 16),
    ("driver", 16),
    ("cas", 16),
    ("fastrand", 16),
    ("scan", 16),
];

/// The pairs whose instructions callgrind breaks down, at 16 and 64 nodes (so the breakdown also shows
/// what each added node costs, and where).
const BROKEN_DOWN: [&str; 2] = [DEFAULT, SEEDS];
const BREAKDOWN_NODES: [usize; 2] = [16, 64];

/// Functions of weir's pair whose inclusive instruction counts the breakdown shows (a function that a
/// configuration does not call is shown as a dash): the symbol, a short name, what it is.
const BREAKDOWN: &[(&str, &str, &str)] = &[
    (
        "weir::balance::balancer::Balancer<S>::acquire",
        "Balancer::acquire",
        "acquire",
    ),
    (
        "weir::balance::policy::choose_fast",
        "policy::choose_fast",
        "acquire: the first choice (scan + pick)",
    ),
    (
        "weir::balance::policy::lowest",
        "policy::lowest",
        "of which the lowest score (key scan, ties, pick)",
    ),
    (
        "weir::balance::balancer::Balancer<S>::rotate",
        "Balancer::rotate",
        "acquire: the clock's rotation, every node refreshed once per clock epoch (250 ms under \
         decay, 5 s under buckets; here every 250 or 5,000 pairs), amortised",
    ),
    (
        "weir::balance::balancer::Balancer<S>::release",
        "Balancer::release",
        "release",
    ),
    (
        "weir::balance::health::Health::record",
        "Health::record",
        "release: the health record (with its refresh)",
    ),
    (
        "weir::balance::health::Health::refresh",
        "Health::refresh",
        "the cached weight or penalty recomputed (by releases and rotations)",
    ),
    (
        "<weir::limit::LimitAlgorithm as weir::limit::Limit>::update",
        "LimitAlgorithm::update",
        "release: the limiter's update (none under a fixed limit)",
    ),
];

const LIMITERS: [&str; 7] = [
    "fixed",
    "aimd",
    "vegas",
    "gradient",
    "gradient2",
    "ciad",
    "windowed",
];
const NODES: [usize; 4] = [3, 16, 64, 256];
/// A one-way transfer above this is the scheduler's doing, not the cache's (see `results_md`).
const MAX_PLAUSIBLE_TRANSFER_NS: f64 = 1_000.0;

pub(crate) fn bench(args: &[String]) {
    let instructions = args.iter().any(|a| a == "--instructions");
    let report_only = args.iter().any(|a| a == "--report");
    let c_abi_alone = args.iter().any(|a| a == "--c-abi");
    let rest: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| *a != "--instructions" && *a != "--report" && *a != "--c-abi")
        .collect();
    let target = target_dir();
    let out = target.join("weir-bench");
    fs::create_dir_all(&out)
        .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", out.display())));
    if report_only {
        // Only rewrites RESULTS.md from the saved data (after a change to this report).
    } else if c_abi_alone {
        c_abi_only(&target, &out);
    } else if instructions {
        if !rest.is_empty() {
            fail("--instructions takes no criterion arguments");
        }
        count_instructions(&out);
    } else {
        time(&target, &out, &rest);
    }
    let results = Path::new("benches/RESULTS.md");
    let text = results_md(
        &load(&out.join("timing.txt")),
        &load(&out.join("instructions.txt")),
    );
    // The Python section is `cargo xtask bench-py`'s: carried over as it is.
    let text = keep_section(
        &fs::read_to_string(results).unwrap_or_default(),
        &text,
        PYTHON_SECTION,
    );
    fs::write(results, text)
        .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", results.display())));
    eprintln!("\nxtask: wrote {}", results.display());
}

/// The heading of the section `cargo xtask bench-py` writes into RESULTS.md (`py/bench/bench.py`).
const PYTHON_SECTION: &str = "## Python\n";

/// `new` with the section of `old` that starts with `heading` (up to the next `## ` heading), placed
/// before `new`'s "Commands" section (or at its end); `new` unchanged if `old` has no such section.
fn keep_section(old: &str, new: &str, heading: &str) -> String {
    let Some(start) = old.find(heading) else {
        return new.to_string();
    };
    let rest = &old[start + heading.len()..];
    let end = rest
        .find("\n## ")
        .map_or(old.len(), |i| start + heading.len() + i + 1);
    let section = old[start..end].trim_end();
    match new.find("\n## Commands") {
        Some(at) => format!("{}\n\n{section}\n{}", new[..at].trim_end(), &new[at..]),
        None => format!("{}\n\n{section}\n", new.trim_end()),
    }
}

/// The median's point estimate (ns) in one of criterion's `estimates.json`; `None` when the file is
/// not JSON or has no such number (a half-written file, another criterion format), so that the
/// benchmark is left out instead of the run failing.
fn median_estimate(json: &str) -> Option<f64> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    v["median"]["point_estimate"].as_f64()
}

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

fn shell(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The machine and the code, as facts.
fn machine() -> Facts {
    let mut f = Facts::new();
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or_else(
            || std::env::consts::ARCH.to_string(),
            |m| m.trim().to_string(),
        );
    f.insert("meta.cpu".into(), model);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    f.insert("meta.cores".into(), cores.to_string());
    let mem = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let kb: f64 = m.lines().next()?.split_whitespace().nth(1)?.parse().ok()?;
            Some(format!("{:.0} GiB", kb / 1024.0 / 1024.0))
        })
        .unwrap_or_else(|| "?".into());
    f.insert("meta.memory".into(), mem);
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|k| format!("Linux {}", k.trim()))
        .unwrap_or_else(|_| std::env::consts::OS.to_string());
    f.insert("meta.os".into(), kernel);
    f.insert(
        "meta.rustc".into(),
        shell("rustc", &["--version"]).unwrap_or_else(|| "?".into()),
    );
    let commit = shell("git", &["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "?".into());
    let dirty = shell(
        "git",
        &[
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            ".",
            ":!benches/RESULTS.md",
        ],
    )
    .is_some_and(|s| !s.is_empty());
    f.insert(
        "meta.commit".into(),
        format!(
            "{commit}{}",
            if dirty { " (with local changes)" } else { "" }
        ),
    );
    f.insert(
        "meta.date".into(),
        shell("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_else(|| "?".into()),
    );
    f.insert("meta.load_before".into(), load_average());
    f
}

fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// Runs a command, echoing its stdout, and returns the `weir-bench-fact:` lines as facts.
fn run_facts(program: &str, args: &[&str]) -> Facts {
    eprintln!("\n==> {program} {}", args.join(" "));
    let start = Instant::now();
    let mut child = Command::new(program)
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| fail(&format!("cannot start {program}: {e}")));
    let mut facts = Facts::new();
    if let Some(stdout) = child.stdout.take() {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            println!("{line}");
            if let Some(fact) = line.strip_prefix("weir-bench-fact: ") {
                if let Some((k, v)) = fact.split_once(' ') {
                    facts.insert(k.to_string(), v.to_string());
                }
            }
        }
    }
    let status = child
        .wait()
        .unwrap_or_else(|e| fail(&format!("{program} did not finish: {e}")));
    if !status.success() {
        fail(&format!(
            "`{program} {}` exited with {status}",
            args.join(" ")
        ));
    }
    eprintln!("    ok in {:.1} s", start.elapsed().as_secs_f64());
    facts
}

fn time(target: &Path, out: &Path, criterion_args: &[&str]) {
    let started = SystemTime::now();
    let t0 = Instant::now();
    let mut facts = machine();
    let mut args = vec!["bench", "-p", "weir-benches", "--bench", "hot_path"];
    if !criterion_args.is_empty() {
        args.push("--");
        args.extend_from_slice(criterion_args);
    }
    facts.extend(run_facts("cargo", &args));
    facts.extend(c_abi(target, criterion_args));
    let mut tower_args = vec!["bench", "-p", "weir-benches", "--bench", tower::BENCH];
    if !criterion_args.is_empty() {
        tower_args.push("--");
        tower_args.extend_from_slice(criterion_args);
    }
    facts.extend(run_facts("cargo", &tower_args));
    for mode in ["allocations", "interleave"] {
        facts.extend(run_facts(
            "cargo",
            &[
                "bench",
                "-p",
                "weir-benches",
                "--bench",
                "pairs",
                "--",
                mode,
            ],
        ));
    }
    facts.insert("meta.load_after".into(), load_average());
    facts.insert(
        "meta.wall_s".into(),
        format!("{:.0}", t0.elapsed().as_secs_f64()),
    );
    let mut command = "cargo xtask bench".to_string();
    for a in criterion_args {
        command.push(' ');
        command.push_str(a);
    }
    facts.insert("meta.command".into(), command);
    let found = medians(&target.join("criterion"), started, &mut facts);
    if found == 0 {
        fail("criterion wrote no estimates in this run");
    }
    save(&out.join("timing.txt"), &facts);
    eprintln!("xtask: {found} benchmark medians from this run");
}

/// The C ABI's pairs beside the Rust pair (`benches/benches/c_abi.rs`): builds `libweir` as shipped
/// (profile `release-c`, see the root Cargo.toml) and runs the bench with `WEIR_LIBWEIR` naming the
/// shared library, so it is called as C calls it.
fn c_abi(target: &Path, criterion_args: &[&str]) -> Facts {
    run(
        "cargo",
        &["build", "--profile", "release-c", "-p", "weir-ffi"],
        &[],
    );
    let lib = target.join("release-c").join(format!(
        "{}weir{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    // Inherited by the bench (edition 2021: `set_var` is safe; xtask is single-threaded here).
    std::env::set_var("WEIR_LIBWEIR", &lib);
    let mut args = vec!["bench", "-p", "weir-benches", "--bench", "c_abi"];
    if !criterion_args.is_empty() {
        args.push("--");
        args.extend_from_slice(criterion_args);
    }
    run_facts("cargo", &args)
}

/// `cargo xtask bench --c-abi`: only the C ABI's bench; its medians replace the C ABI's in the saved
/// timings (the rest of the file, and its run's description, stay those of the last full run; this run's own
/// description is saved under `c_abi.meta.*` and shown beside it).
fn c_abi_only(target: &Path, out: &Path) {
    let started = SystemTime::now();
    let clock = Instant::now();
    let path = out.join("timing.txt");
    let mut facts = load(&path);
    facts.retain(|k, _| !k.starts_with("median.c_abi/") && !k.starts_with(C_ABI_META));
    // This run's own description, beside the full run's.
    let mut own = machine();
    own.insert("meta.command".into(), "cargo xtask bench --c-abi".into());
    facts.extend(c_abi(target, &[]));
    own.insert("meta.load_after".into(), load_average());
    own.insert(
        "meta.wall_s".into(),
        format!("{:.0}", clock.elapsed().as_secs_f64()),
    );
    facts.extend(
        own.into_iter()
            .filter(|(k, _)| RUN_FACTS.contains(&k.as_str()))
            .map(|(k, v)| (format!("{C_ABI_META}{k}"), v)),
    );
    let mut fresh = Facts::new();
    medians(&target.join("criterion"), started, &mut fresh);
    let found = fresh
        .keys()
        .filter(|k| k.starts_with("median.c_abi/"))
        .count();
    if found == 0 {
        fail("the C ABI's bench wrote no estimates (is libweir.so built?)");
    }
    facts.extend(
        fresh
            .into_iter()
            .filter(|(k, _)| k.starts_with("median.c_abi/")),
    );
    save(&path, &facts);
    eprintln!("xtask: {found} C ABI medians from this run");
}

/// Adds `median.<id>` for every criterion benchmark whose estimates were written since `since`.
///
/// Criterion keeps `<id>/new/estimates.json` for each benchmark it has ever run (`<id>` may have several
/// levels: `pair/weir-cascade-buckets/16`); only those written by this run count, so a filtered run
/// does not pass off old medians as its own. Directories or files that cannot be read are skipped,
/// and symbolic links are followed (a loop is reported by walkdir as an error and skipped).
fn medians(dir: &Path, since: SystemTime, facts: &mut Facts) -> usize {
    let mut found = 0;
    for e in WalkDir::new(dir)
        .follow_links(true)
        .into_iter()
        .filter_map(Result::ok)
    {
        let p = e.path();
        if e.file_type().is_dir() || !p.ends_with("new/estimates.json") {
            continue;
        }
        let fresh = e
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .is_some_and(|t| t >= since);
        if !fresh {
            continue;
        }
        let (Some(id), Ok(text)) = (
            p.parent()
                .and_then(Path::parent)
                .and_then(|q| q.strip_prefix(dir).ok()),
            fs::read_to_string(p),
        ) else {
            continue;
        };
        if let Some(m) = median_estimate(&text) {
            let id = id.to_string_lossy().replace('\\', "/");
            facts.insert(format!("median.{id}"), format!("{m:.3}"));
            found += 1;
        }
    }
    found
}

fn save(path: &Path, facts: &Facts) {
    let text: String = facts.iter().map(|(k, v)| format!("{k}\t{v}\n")).collect();
    fs::write(path, text)
        .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", path.display())));
}

fn load(path: &Path) -> Facts {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The `pairs` bench executable, built.
fn pairs_executable() -> String {
    eprintln!("\n==> cargo bench -p weir-benches --bench pairs --no-run --message-format=json");
    let out = Command::new("cargo")
        .args([
            "bench",
            "-p",
            "weir-benches",
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

fn count_instructions(out: &Path) {
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
    save(&out.join("instructions.txt"), &facts);
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
/// atomics, ...) as entries of their own; the entry of the function's own file includes them and is
/// the largest.
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

/// Reads facts by key.
struct Data<'a> {
    t: &'a Facts,
    i: &'a Facts,
}

impl Data<'_> {
    fn ns(&self, id: &str) -> Option<f64> {
        self.t.get(&format!("median.{id}"))?.parse().ok()
    }
    fn pair(&self, name: &str, n: usize) -> Option<f64> {
        self.ns(&format!("pair/{name}/{n}"))
    }
    fn instr(&self, name: &str, n: usize) -> Option<f64> {
        self.i.get(&format!("instr.{name}.{n}"))?.parse().ok()
    }
    fn fact(&self, key: &str) -> Option<f64> {
        self.t.get(key)?.parse().ok()
    }
}

fn ns(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
        None => "—".into(),
    }
}

/// `v` formatted by `f`, or a dash when not measured.
fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "—".into(), f)
}

fn count(v: Option<f64>) -> String {
    v.map_or_else(|| "—".into(), |v| format!("{v:.0}"))
}

/// `weir / baseline` and how many times faster weir is.
fn ratio(weir: Option<f64>, base: Option<f64>) -> String {
    match (weir, base) {
        (Some(w), Some(b)) if w > 0.0 && b > 0.0 => format!("{:.2} ({:.1}x)", w / b, b / w),
        _ => "—".into(),
    }
}

/// A target's verdict: `at_most` (lower is better) or not (higher is better).
fn verdict(value: Option<f64>, target: f64, at_most: bool, unit: &str) -> String {
    let Some(v) = value else {
        return "not measured".into();
    };
    let met = if at_most { v <= target } else { v >= target };
    if met {
        "**met**".into()
    } else {
        let by = (v - target).abs();
        let pct = by / target * 100.0;
        format!("missed by {by:.1}{unit} ({pct:.0} %)")
    }
}

/// The prefix of the facts that describe a `--c-abi` run (`c_abi.meta.commit`, ...), when the C ABI's
/// figures come from one rather than from the full run.
const C_ABI_META: &str = "c_abi.";

/// The facts that describe one run (what `meta_line` shows), as against the machine's.
const RUN_FACTS: [&str; 6] = [
    "meta.command",
    "meta.commit",
    "meta.date",
    "meta.wall_s",
    "meta.load_before",
    "meta.load_after",
];

fn meta_line(f: &Facts, what: &str) -> String {
    meta_line_of(f, what, "")
}

/// [`meta_line`] of the facts under `prefix`.
fn meta_line_of(f: &Facts, what: &str, prefix: &str) -> String {
    let g = |k: &str| f.get(&format!("{prefix}{k}")).map_or("?", String::as_str);
    format!(
        "{what}: `{}` at commit {}, {}; {} s; load average {} before{}.",
        g("meta.command"),
        g("meta.commit"),
        g("meta.date"),
        g("meta.wall_s"),
        g("meta.load_before"),
        f.get(&format!("{prefix}meta.load_after"))
            .map_or(String::new(), |a| format!(", {a} after")),
    )
}

/// A target's value and verdict, as shown.
type Cell = (String, String);

fn results_md(t: &Facts, i: &Facts) -> String {
    let d = Data { t, i };
    let mut s = String::new();
    let w = &mut s;
    let t16 = d.pair(DEFAULT, 16);
    let s16 = d.pair(SEEDS, 16);
    let f16 = d.pair(DEFAULT_FIXED, 16);
    let i16 = d.instr(DEFAULT, 16);
    let _ = writeln!(w, "# weir benchmark results\n");
    let _ = writeln!(
        w,
        "Generated by `cargo xtask bench` (timings) and `cargo xtask bench --instructions` (valgrind \
         instruction counts); do not edit by hand. The benchmarks and their workload are described in \
         `benches/benches/hot_path.rs` and `benches/src/workload.rs`: one *pair* is one acquire and one \
         release with 8 leases outstanding, virtual time advancing about 1 ms per pair, nodes failing \
         30 %, 5 %, 1 %, 1 % and 0 % of calls (half of the failures are timeouts), so their health \
         differs. Times are criterion medians in nanoseconds per pair.\n"
    );
    let _ = writeln!(
        w,
        "Two configurations run throughout, and every table and target says which one it reads:\n\n\
         - **new default**, `Config::default()` (`weir-default`): time-decayed health \
         (`HealthModel::DECAY`), the lowest-score policy, a CIAD limit with a fast start. \
         **new default, Fixed(100)** (`weir-default-fixed`) is the same with the seeds' fixed limit of \
         100 instead of CIAD: the difference is what the adaptive limiter costs.\n\
         - **seeds**, `Config::seeds()` (`weir-cascade-buckets`): 6 buckets of 5 s, the weighted \
         cascade, a fixed limit of 100; `weir-{{policy}}-{{health}}` swaps its policy and health model.\n\n\
         Under this workload the lowest score sends nearly every call to the nodes that never fail \
         (every fifth) once the others have failed once (a penalty of 10 in-flight calls per recent \
         failure, fading with a 30 s half-life), where the seeds' cascade keeps spreading calls by \
         weight; both are what the configurations do, and every pair is granted.\n"
    );
    let _ = writeln!(
        w,
        "**Read the ratios, not the absolute times.** The development VM is small and shared (2 vCPUs, \
         other jobs running: see the load averages below); absolute times move by up to 2x between \
         runs, while ratios taken within one run move much less. Instruction counts are exact and \
         repeatable.\n"
    );
    let _ = writeln!(w, "- {}", meta_line(t, "Timings"));
    let _ = writeln!(w, "- {}", meta_line(i, "Instructions"));
    if t.contains_key(&format!("{C_ABI_META}meta.commit")) {
        let _ = writeln!(
            w,
            "- {}",
            meta_line_of(t, "The C ABI's pairs (since that run)", C_ABI_META)
        );
    }
    let g = |k: &str| t.get(k).or_else(|| i.get(k)).map_or("?", String::as_str);
    let _ = writeln!(
        w,
        "- Machine: {}, {} cores, {} memory, {}; {}.\n",
        g("meta.cpu"),
        g("meta.cores"),
        g("meta.memory"),
        g("meta.os"),
        g("meta.rustc")
    );

    // Targets.
    let div = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    // The cost of one added node from 16 to 64 nodes.
    let per_node = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| (b - a) / 48.0);
    let mutex16 = d.pair("mutex", 16);
    let tower16 = d.pair("tower-peak-ewma", 16);
    // Scans cover the slots in use: three members cost the same in 3 slots as in 65,536.
    let sparse = |base: &str| {
        div(
            d.ns(&format!("capacity/{base}-3/65536")),
            d.ns(&format!("capacity/{base}-3/3")),
        )
    };
    let pair_per_node = |name: &str| per_node(d.pair(name, 16), d.pair(name, 64));
    let instr_per_node = |name: &str| per_node(d.instr(name, 16), d.instr(name, 64));
    let one_way = d.fact("threads.round_trip.p10_ns").map(|rt| rt / 2.0);
    // A transfer between two running cores takes tens of nanoseconds; a "transfer" of microseconds means
    // the two threads were not running at once (the machine was busy), and no pair can be read with it.
    let readable = one_way.filter(|&o| o < MAX_PLAUSIBLE_TRANSFER_NS);
    let t2 = |name: &str| d.ns(&format!("threads/{name}-t2/16"));
    let transfers = |two: Option<f64>, one: Option<f64>| match (two, one, readable) {
        (Some(t2), Some(t1), Some(ow)) if ow > 0.0 => Some((t2 - t1) / ow),
        _ => None,
    };
    let weir_allocs = t
        .iter()
        .filter(|(k, _)| {
            k.starts_with("allocations.weir-")
                || k.starts_with("allocations.limiter-")
                || k.starts_with("allocations.sparse-")
        })
        .filter_map(|(_, v)| v.parse::<f64>().ok())
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    // The interleaved cross-check (`pairs interleave`). Times from interleaved rounds are their 10th
    // percentiles (the rounds no neighbour disturbed); ratios are medians over rounds of same-round
    // ratios.
    let il = |key: &str| d.fact(&format!("interleaved.{key}"));
    let il_p10 = |name: &str, n: usize| il(&format!("{name}.{n}.p10_ns"));
    let il_per_node = |name: &str| per_node(il_p10(name, 16), il_p10(name, 64));
    // Each limiter over its configuration's fixed-limit pair: criterion, and interleaved.
    let fixed_pair = |base: &str| {
        if base == "default" {
            DEFAULT_FIXED
        } else {
            SEEDS
        }
    };
    let over_fixed = |base: &str, l: &str| -> Option<f64> {
        Some(d.ns(&format!("limiter/{base}-{l}/16"))? - d.ns(&format!("limiter/{base}-fixed/16"))?)
    };
    let il_over_fixed = |base: &str, l: &str| -> Option<f64> {
        if l == "fixed" {
            return Some(0.0);
        }
        Some(il_p10(&format!("limiter-{base}-{l}"), 16)? - il_p10(fixed_pair(base), 16)?)
    };
    let worst = |f: &dyn Fn(&str) -> Option<f64>| {
        LIMITERS[1..]
            .iter()
            .filter_map(|l| Some((*l, f(l)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    };
    let _ = writeln!(w, "## Targets\n");
    let _ = writeln!(
        w,
        "Shown, never asserted in tests. N = 16 nodes, one thread; each row names its configuration. \
         *criterion*: the medians of the criterion run; *interleaved*: the cross-check of \
         `pairs interleave` in the same run, where the workloads alternate in rounds of 2 ms: each \
         ratio is the median over rounds of the two workloads' times in the same round (a neighbour's \
         load then falls on both sides of a ratio alike), each time the 10th percentile over rounds \
         (the rounds that no neighbour disturbed). The Mutex baseline is the seeds' algorithm, so \
         against it the seeds' row compares implementations and the new default's row compares both \
         implementation and algorithm.\n"
    );
    let _ = writeln!(
        w,
        "| target | criterion | verdict | interleaved | verdict |\n|---|---:|---|---:|---|"
    );
    let x2 = |x: f64| format!("{x:.2}x");
    let ns1 = |x: f64| format!("{x:.1} ns");
    let ns2 = |x: f64| format!("{x:.2} ns");
    let limiter_cell = |v: Option<(&str, f64)>| {
        v.map_or("—".into(), |(l, v)| {
            format!("{v:+.1} ns ({l}, the worst)")
        })
    };
    let dash = || -> Cell { ("—".to_string(), String::new()) };
    // A row: the cell and verdict of a value against a target.
    let cell =
        |v: Option<f64>, target: f64, at_most: bool, unit: &str, f: &dyn Fn(f64) -> String| {
            (opt(v, f), verdict(v, target, at_most, unit))
        };
    let unreadable = |v: (String, String)| match (one_way, readable) {
        (Some(o), None) => (
            v.0,
            format!(
                "unreadable in this run: one transfer measured {o:.0} ns, so the two threads did \
                 not run at once"
            ),
        ),
        _ => v,
    };
    let rows: Vec<(&str, Cell, Cell)> = vec![
        (
            "new default: time per pair ≤ 45 ns",
            cell(t16, 45.0, true, " ns", &ns1),
            cell(il_p10(DEFAULT, 16), 45.0, true, " ns", &ns1),
        ),
        (
            "new default: instructions per pair ≤ 700 (valgrind)",
            cell(i16, 700.0, true, "", &|x| format!("{x:.0}")),
            dash(),
        ),
        (
            "new default pair ≤ 1.1x the seeds' pair (same run)",
            cell(div(t16, s16), 1.1, true, "x", &x2),
            cell(il("weir-default.16.vs_seeds"), 1.1, true, "x", &x2),
        ),
        (
            "the same with Fixed(100) instead of CIAD ≤ 1.1x the seeds' pair (where the cost comes from)",
            cell(div(f16, s16), 1.1, true, "x", &x2),
            cell(il("weir-default-fixed.16.vs_seeds"), 1.1, true, "x", &x2),
        ),
        (
            "C pair ≤ 1.1x the Rust pair (`weir_balancer_acquire_with_rng` + `weir_balancer_release` through libweir.so, new default, same run)",
            cell(div(d.ns("c_abi/c-rng/16"), d.ns("c_abi/rust/16")), 1.1, true, "x", &x2),
            cell(d.fact("c_abi.c-rng.vs_rust"), 1.1, true, "x", &x2),
        ),
        (
            "the same with `weir_balancer_acquire` (the library's per-thread generator) ≤ 1.1x the Rust pair",
            cell(div(d.ns("c_abi/c-thread-rng/16"), d.ns("c_abi/rust/16")), 1.1, true, "x", &x2),
            cell(d.fact("c_abi.c-thread-rng.vs_rust"), 1.1, true, "x", &x2),
        ),
        (
            "new default: 3 members at capacity 65,536 ≤ 1.5x capacity 3",
            cell(sparse("default"), 1.5, true, "x", &x2),
            cell(il("sparse-default.3.vs_default"), 1.5, true, "x", &x2),
        ),
        (
            "seeds: 3 members at capacity 65,536 ≤ 1.5x capacity 3",
            cell(sparse("seeds"), 1.5, true, "x", &x2),
            cell(il("sparse-seeds.3.vs_seeds"), 1.5, true, "x", &x2),
        ),
        (
            "new default: ≥ 3x faster than the Mutex baseline",
            cell(div(mutex16, t16), 3.0, false, "x", &x2),
            cell(il("mutex.16.vs_default"), 3.0, false, "x", &x2),
        ),
        (
            "seeds: ≥ 3x faster than the Mutex baseline (the same algorithm)",
            cell(div(mutex16, s16), 3.0, false, "x", &x2),
            cell(il("mutex.16.vs_seeds"), 3.0, false, "x", &x2),
        ),
        (
            "new default: ≥ 10x faster than tower Balance + PeakEwma",
            cell(div(tower16, t16), 10.0, false, "x", &x2),
            cell(il("tower-peak-ewma.16.vs_default"), 10.0, false, "x", &x2),
        ),
        (
            "new default: ≤ 1 ns per added node (16 → 64)",
            cell(pair_per_node(DEFAULT), 1.0, true, " ns", &ns2),
            cell(il_per_node(DEFAULT), 1.0, true, " ns", &ns2),
        ),
        (
            "new default: ≤ 17 instructions per added node (16 → 64, valgrind)",
            cell(instr_per_node(DEFAULT), 17.0, true, "", &|x| format!("{x:.1}")),
            dash(),
        ),
        (
            "seeds: ≤ 1 ns per added node (16 → 64)",
            cell(pair_per_node(SEEDS), 1.0, true, " ns", &ns2),
            cell(il_per_node(SEEDS), 1.0, true, " ns", &ns2),
        ),
        (
            "seeds: ≤ 17 instructions per added node (16 → 64, valgrind)",
            cell(instr_per_node(SEEDS), 17.0, true, "", &|x| format!("{x:.1}")),
            dash(),
        ),
        (
            "new default, 2 threads: ≤ 5 cache-line transfers per pair",
            unreadable(cell(transfers(t2("default"), t16), 5.0, true, "", &|x| {
                format!("{x:.1}")
            })),
            dash(),
        ),
        (
            "new default, 2 threads: ≥ 2x faster than the Mutex baseline",
            cell(div(t2("mutex"), t2("default")), 2.0, false, "x", &x2),
            dash(),
        ),
        (
            "zero allocations per pair (both configurations, the seeds' every policy and health model, every limiter on both)",
            cell(weir_allocs, 0.0, true, "", &|x| format!("{x:.3}")),
            dash(),
        ),
        (
            "new default: each limiter adds ≤ 10 ns over Fixed",
            {
                let v = worst(&|l| over_fixed("default", l));
                (limiter_cell(v), verdict(v.map(|x| x.1), 10.0, true, " ns"))
            },
            {
                let v = worst(&|l| il_over_fixed("default", l));
                (limiter_cell(v), verdict(v.map(|x| x.1), 10.0, true, " ns"))
            },
        ),
        (
            "seeds: each limiter adds ≤ 10 ns over Fixed",
            {
                let v = worst(&|l| over_fixed("seeds", l));
                (limiter_cell(v), verdict(v.map(|x| x.1), 10.0, true, " ns"))
            },
            {
                let v = worst(&|l| il_over_fixed("seeds", l));
                (limiter_cell(v), verdict(v.map(|x| x.1), 10.0, true, " ns"))
            },
        ),
    ];
    for (a, (b, c), (e, f)) in rows {
        let _ = writeln!(w, "| {a} | {b} | {c} | {e} | {f} |");
    }

    // Where the new default's cost comes from.
    let _ = writeln!(w, "\n## The new default against the seeds\n");
    let _ = writeln!(
        w,
        "What each step from the seeds' configuration to the new default costs at 16 nodes, and per \
         added node from 16 to 64 (criterion medians of this run; valgrind instructions). The step \
         from the seeds to the new default with Fixed(100) is the health model and the policy (decay + \
         lowest score for buckets + cascade); the step from there to the new default is the CIAD \
         limit. Where the instructions go is in the callgrind breakdown below.\n"
    );
    let _ = writeln!(
        w,
        "| configuration | ns per pair | over the seeds | instructions per pair | over the seeds | ns per added node | instructions per added node |\n|---|---:|---:|---:|---:|---:|---:|"
    );
    for (label, name) in [
        ("seeds (`Config::seeds()`)", SEEDS),
        ("new default, Fixed(100)", DEFAULT_FIXED),
        ("new default (`Config::default()`)", DEFAULT),
    ] {
        let v = d.pair(name, 16);
        let iv = d.instr(name, 16);
        let _ = writeln!(
            w,
            "| {label} | {} | {} | {} | {} | {} | {} |",
            ns(v),
            opt(v.zip(s16).map(|(a, b)| a - b), |x| format!("{x:+.1}")),
            count(iv),
            opt(iv.zip(d.instr(SEEDS, 16)).map(|(a, b)| a - b), |x| {
                format!("{x:+.0}")
            }),
            opt(pair_per_node(name), |x| format!("{x:+.2}")),
            opt(instr_per_node(name), |x| format!("{x:+.1}")),
        );
    }

    // The C ABI.
    let _ = writeln!(w, "\n## The C ABI\n");
    let _ = writeln!(
        w,
        "`c_abi/{{rust,c-rng,c-thread-rng}}/16` (`benches/benches/c_abi.rs`): the new default's pair at 16 \
         nodes in Rust (`Balancer::acquire(now, &mut rng)` + `release`), and the same pair through \
         `libweir.so` as shipped (profile `release-c`: whole-program LTO), loaded with `dlopen` and \
         called through its symbols as a C program calls it: `weir_balancer_acquire_with_rng` (the caller's generator, seeded as the Rust pair's: the same \
         choices) or `weir_balancer_acquire` (the library's per-thread generator), then `weir_balancer_release`. \
         *criterion*: medians of one run, ratios over the Rust pair; *interleaved*: the three in \
         alternating rounds of 2 ms, each time the 10th percentile over rounds, each ratio the median \
         over rounds of the same-round ratio.\n"
    );
    let _ = writeln!(
        w,
        "| pair | criterion ns | over the Rust pair | interleaved ns | over the Rust pair |\n|---|---:|---:|---:|---:|"
    );
    let rust = d.ns("c_abi/rust/16");
    for (label, name) in [
        ("Rust: `Balancer::acquire` + `release`", "rust"),
        (
            "C: `weir_balancer_acquire_with_rng` + `weir_balancer_release`",
            "c-rng",
        ),
        (
            "C: `weir_balancer_acquire` + `weir_balancer_release`",
            "c-thread-rng",
        ),
    ] {
        let v = d.ns(&format!("c_abi/{name}/16"));
        let il_ratio = if name == "rust" {
            Some(1.0)
        } else {
            d.fact(&format!("c_abi.{name}.vs_rust"))
        };
        let _ = writeln!(
            w,
            "| {label} | {} | {} | {} | {} |",
            ns(v),
            opt(div(v, rust), |x| format!("{x:.2}x")),
            ns(d.fact(&format!("c_abi.{name}.p10_ns"))),
            opt(il_ratio, |x| format!("{x:.2}x")),
        );
    }

    // One pair, one thread.
    let _ = writeln!(w, "\n## One pair, one thread: weir against its baselines\n");
    let _ = writeln!(
        w,
        "`pair/{{weir-default,weir-cascade-buckets,mutex,tower-peak-ewma,tower-pending}}/N`: the new \
         default, the seeds, and the baselines. Ratios are the first over the second (in brackets: how \
         many times faster the first is). The Mutex baseline is the seeds' algorithm behind one \
         `Mutex<Vec<..>>` (`benches/src/mutex.rs`); tower is tower 0.5's p2c `Balance` over \
         always-ready services, which also reads the clock (PeakEwma) and allocates per call.\n"
    );
    let _ = writeln!(
        w,
        "| nodes | new default | seeds | Mutex<Vec> | tower PeakEwma | tower PendingRequests | default / seeds | default / Mutex | seeds / Mutex | default / PeakEwma | default / Pending |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for n in NODES {
        let (dv, sv) = (d.pair(DEFAULT, n), d.pair(SEEDS, n));
        let (m, p, q) = (
            d.pair("mutex", n),
            d.pair("tower-peak-ewma", n),
            d.pair("tower-pending", n),
        );
        let _ = writeln!(
            w,
            "| {n} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            ns(dv),
            ns(sv),
            ns(m),
            ns(p),
            ns(q),
            ratio(dv, sv),
            ratio(dv, m),
            ratio(sv, m),
            ratio(dv, p),
            ratio(dv, q)
        );
    }

    let il_row = |name: &str, n: usize| {
        let v = il_p10(name, n);
        let r = d.fact(&format!("interleaved.{name}.{n}.vs_default"));
        match (v, r) {
            (Some(v), Some(r)) if r > 0.0 => format!(
                "{} ns (new default / it {:.2}, {r:.1}x)",
                ns(Some(v)),
                1.0 / r
            ),
            (Some(v), _) => format!("{} ns", ns(Some(v))),
            _ => "—".into(),
        }
    };
    let _ = writeln!(
        w,
        "\nCross-check, interleaved rounds in the same run (10th percentile of the times, median of \
         the same-round ratios): 16 nodes: new default {}, seeds {}, Mutex {}, tower PeakEwma {}, \
         tower PendingRequests {}; 64 nodes: new default {}, seeds {}, Mutex {}; 3 nodes: new default \
         {}, seeds {}.",
        il_row(DEFAULT, 16),
        il_row(SEEDS, 16),
        il_row("mutex", 16),
        il_row("tower-peak-ewma", 16),
        il_row("tower-pending", 16),
        il_row(DEFAULT, 64),
        il_row(SEEDS, 64),
        il_row("mutex", 64),
        il_row(DEFAULT, 3),
        il_row(SEEDS, 3),
    );

    let _ = writeln!(w, "\n## weir: every configuration\n");
    let _ = writeln!(
        w,
        "`pair/weir-{{default,default-fixed}}/N` and `pair/weir-{{cascade,approx,pick}}-{{buckets,ewma}}/N`: \
         the new default, the same with Fixed(100), and the seeds' configuration with each of its \
         policies and health models (`cascade-buckets` is `Config::seeds()`; EWMA: half-life 20 \
         outcomes). The last row is the cost per added node from 16 to 64 nodes.\n"
    );
    let configs = [
        ("default", "new default"),
        ("default-fixed", "default, Fixed(100)"),
        ("cascade-buckets", "seeds: cascade-buckets"),
        ("cascade-ewma", "cascade-ewma"),
        ("approx-buckets", "approx-buckets"),
        ("approx-ewma", "approx-ewma"),
        ("pick-buckets", "pick-buckets"),
        ("pick-ewma", "pick-ewma"),
    ];
    let heads: Vec<&str> = configs.iter().map(|(_, h)| *h).collect();
    let _ = writeln!(w, "| nodes | {} |", heads.join(" | "));
    let _ = writeln!(w, "|---:|{}", "---:|".repeat(configs.len()));
    for n in NODES {
        let cells: Vec<String> = configs
            .iter()
            .map(|(c, _)| ns(d.pair(&format!("weir-{c}"), n)))
            .collect();
        let _ = writeln!(w, "| {n} | {} |", cells.join(" | "));
    }
    let per: Vec<String> = configs
        .iter()
        .map(|(c, _)| opt(pair_per_node(&format!("weir-{c}")), |x| format!("{x:+.2}")))
        .collect();
    let _ = writeln!(w, "| ns per node, 16 → 64 | {} |", per.join(" | "));

    let _ = writeln!(w, "\n## Limit algorithms (16 nodes)\n");
    let _ = writeln!(
        w,
        "`limiter/{{default,seeds}}-{{name}}/16`: each configuration's pair with each limit algorithm \
         at its defaults (Windowed wraps Vegas), fed each success's RTT from the virtual clock and \
         each timeout as a drop (the new default also feeds each `Failure` as a drop). `ciad` here is \
         dialogue's CIAD without the new default's fast start; `fixed` is Fixed(100), so the new \
         default's `fixed` row is the new default with Fixed(100).\n"
    );
    for (base, title) in [
        ("default", "On the new default's pair"),
        ("seeds", "On the seeds' pair"),
    ] {
        let _ = writeln!(w, "### {title}\n");
        let _ = writeln!(
            w,
            "| limiter | ns per pair | over Fixed | over Fixed, interleaved (p10) | instructions | over Fixed |\n|---|---:|---:|---:|---:|---:|"
        );
        let fixed_i = d.instr(&format!("limiter-{base}-fixed"), 16);
        for l in LIMITERS {
            let v = d.ns(&format!("limiter/{base}-{l}/16"));
            let iv = d.instr(&format!("limiter-{base}-{l}"), 16);
            let over_i = match (iv, fixed_i) {
                (Some(v), Some(f)) => format!("{:+.0}", v - f),
                _ => "—".into(),
            };
            let _ = writeln!(
                w,
                "| {l} | {} | {} | {} | {} | {over_i} |",
                ns(v),
                opt(over_fixed(base, l), |x| format!("{x:+.1}")),
                opt(il_over_fixed(base, l), |x| format!("{x:+.1}")),
                count(iv)
            );
        }
        let _ = writeln!(w);
    }

    let _ = writeln!(w, "## Floors\n");
    let _ = writeln!(
        w,
        "What no implementation on this machine can go below. A pair makes about five atomic \
         read-modify-writes, scans one word per node (the new default: two, its control word and its \
         penalty, on one cache line) and draws at most once; `driver` is the benchmark's own \
         bookkeeping per pair (script, ring, outcome), included in every pair above.\n"
    );
    let _ = writeln!(
        w,
        "| floor | ns | instructions |\n|---|---:|---:|\n| one uncontended CAS (`floor/cas`) | {} | {} |\n| one fastrand draw (`floor/fastrand`) | {} | {} |\n| the workload alone (`floor/driver`) | {} | {} |",
        ns(d.ns("floor/cas")),
        count(d.instr("cas", 16)),
        ns(d.ns("floor/fastrand")),
        count(d.instr("fastrand", 16)),
        ns(d.ns("floor/driver")),
        count(d.instr("driver", 16)),
    );
    for n in NODES {
        let _ = writeln!(
            w,
            "| padded scan of {n} atomics (`floor/scan/{n}`) | {} | {} |",
            ns(d.ns(&format!("floor/scan/{n}"))),
            if n == 16 {
                count(d.instr("scan", 16))
            } else {
                "".into()
            }
        );
    }
    if let (Some(c), Some(sc), Some(r), Some(dr), Some(dv), Some(sv)) = (
        d.ns("floor/cas"),
        d.ns("floor/scan/16"),
        d.ns("floor/fastrand"),
        d.ns("floor/driver"),
        t16,
        s16,
    ) {
        let floor = 5.0 * c + sc + r + dr;
        let _ = writeln!(
            w,
            "\nAt 16 nodes, five CAS + one scan + one draw + the driver = {floor:.1} ns: the floor of a \
             pair on this machine in this run; the new default's pair is {dv:.1} ns, {:.1} ns above \
             it; the seeds' is {sv:.1} ns, {:.1} ns above it.",
            dv - floor,
            sv - floor
        );
    }

    let _ = writeln!(w, "\n## Two threads on one balancer (16 nodes)\n");
    let _ = writeln!(
        w,
        "`threads/{{default,seeds,mutex}}-t2/16`: two threads run pairs on one shared balancer; the time \
         is one thread's time per pair (criterion's median). `threads/round-trip` is a ping-pong on \
         one padded word: one round trip is two cache-line transfers. The VM places the threads where \
         it likes and other jobs take cores, so the round trip is also taken as the 10th percentile of \
         {} batches of 1,000 round trips (the batches during which both threads held a core); one \
         transfer is half of that. Transfers per pair = (two-thread time − one-thread time) / one \
         transfer.\n",
        t.get("threads.round_trip.batches").map_or("?", String::as_str)
    );
    let cols = [("default", DEFAULT), ("seeds", SEEDS), ("mutex", "mutex")];
    let row = |label: &str, f: &dyn Fn(&str, &str) -> String| {
        let cells: Vec<String> = cols.iter().map(|(t, p)| f(t, p)).collect();
        format!("| {label} | {} |", cells.join(" | "))
    };
    let lines = [
        "| | new default | seeds | Mutex<Vec> |\n|---|---:|---:|---:|".to_string(),
        row("one thread, ns per pair", &|_, p| ns(d.pair(p, 16))),
        row("two threads, ns per pair of the timed thread", &|t, _| {
            ns(t2(t))
        }),
        row("two threads, ns per pair of the other thread", &|t, _| {
            ns(d.fact(&format!("threads.{t}-t2.16.helpers_ns")))
        }),
        row("extra ns per pair from sharing", &|t, p| {
            ns(t2(t).zip(d.pair(p, 16)).map(|(a, b)| a - b))
        }),
        row("cache-line transfers per pair", &|t, p| {
            opt(transfers(t2(t), d.pair(p, 16)), |x| format!("{x:.1}"))
        }),
        row("two threads: it / Mutex", &|t, _| {
            if t == "mutex" {
                String::new()
            } else {
                ratio(t2(t), t2("mutex"))
            }
        }),
    ];
    for l in lines {
        let _ = writeln!(w, "{l}");
    }
    let _ = writeln!(
        w,
        "\nRound trip: {} ns (criterion median), {} ns (10th percentile of batches), {} ns (median of \
         batches); one transfer: {} ns.",
        ns(d.ns("threads/round-trip")),
        ns(d.fact("threads.round_trip.p10_ns")),
        ns(d.fact("threads.round_trip.p50_ns")),
        ns(one_way)
    );
    for k in [4, 8, 16] {
        if let Some(v) = d.ns(&format!("threads/default-t{k}/16")) {
            let _ = writeln!(
                w,
                "\n{k} threads: new default {} ns per pair per thread, seeds {} ns, Mutex {} ns.",
                ns(Some(v)),
                ns(d.ns(&format!("threads/seeds-t{k}/16"))),
                ns(d.ns(&format!("threads/mutex-t{k}/16")))
            );
        }
    }

    let _ = writeln!(w, "\n## Instructions per pair (valgrind)\n");
    let _ = writeln!(
        w,
        "`cargo xtask bench --instructions`: each workload runs {SHORT_RUN} and {LONG_RUN} pairs under \
         cachegrind; the difference divided by {} is the instructions per pair (construction cancels \
         out; rotations and the workload's bookkeeping, `driver`, are included).\n",
        LONG_RUN - SHORT_RUN
    );
    let _ = writeln!(
        w,
        "| workload (16 nodes) | instructions per pair | new default / it |\n|---|---:|---:|"
    );
    for c in configs.iter().map(|(c, _)| format!("weir-{c}")).chain(
        ["mutex", "tower-peak-ewma", "tower-pending"]
            .iter()
            .map(|b| b.to_string()),
    ) {
        let r = if c == DEFAULT {
            String::new()
        } else {
            ratio(i16, d.instr(&c, 16))
        };
        let _ = writeln!(w, "| {c} | {} | {r} |", count(d.instr(&c, 16)));
    }
    let _ = writeln!(
        w,
        "\n| instructions per pair, nodes | 3 | 16 | 64 | 256 | per added node, 16 → 64 | per added node, 64 → 256 |\n|---|---:|---:|---:|---:|---:|---:|"
    );
    for (label, name) in [
        ("new default", DEFAULT),
        ("new default, Fixed(100)", DEFAULT_FIXED),
        ("seeds", SEEDS),
        ("Mutex<Vec> baseline", "mutex"),
    ] {
        let at = |n: usize| d.instr(name, n);
        let _ = writeln!(
            w,
            "| {label} | {} | {} | {} | {} | {} | {} |",
            count(at(3)),
            count(at(16)),
            count(at(64)),
            count(at(256)),
            opt(per_node(at(16), at(64)), |x| format!("{x:+.1}")),
            opt(at(64).zip(at(256)).map(|(a, b)| (b - a) / 192.0), |x| {
                format!("{x:+.1}")
            }),
        );
    }
    let bd = |name: &str, n: usize, func: &str| -> Option<f64> {
        i.get(&format!("breakdown.{name}.{n}.{func}"))?.parse().ok()
    };
    if BREAKDOWN
        .iter()
        .any(|(f, _, _)| bd(DEFAULT, 16, f).is_some())
    {
        let _ = writeln!(
            w,
            "\nWhere each pair spends them: callgrind's inclusive counts per pair (a part includes \
             what it calls, so the rows overlap), at 16 and 64 nodes, and what one added node costs \
             in each part.\n"
        );
        let _ = writeln!(
            w,
            "| part | function | new default, 16 | 64 | per added node | seeds, 16 | 64 | per added node |\n|---|---|---:|---:|---:|---:|---:|---:|"
        );
        for (func, short, label) in BREAKDOWN {
            let mut cells = Vec::new();
            for name in BROKEN_DOWN {
                let (a, b) = (bd(name, 16, func), bd(name, 64, func));
                cells.push(count(a));
                cells.push(count(b));
                cells.push(opt(per_node(a, b), |x| format!("{x:+.1}")));
            }
            let _ = writeln!(w, "| {label} | `{short}` | {} |", cells.join(" | "));
        }
    }

    let _ = writeln!(w, "\n## Memory and allocations\n");
    let _ = writeln!(
        w,
        "| | bytes per node | bytes for 64 nodes |\n|---|---:|---:|\n| weir (`NodeSlot`, cache-line padded; balancer + boxed slots; either configuration) | {} | {} |\n| Mutex<Vec> baseline (node; struct + vector) | {} | {} |",
        t.get("memory.weir.slot").map_or("?", String::as_str),
        t.get("memory.weir.balancer64").map_or("?", String::as_str),
        t.get("memory.mutex.node").map_or("?", String::as_str),
        t.get("memory.mutex.balancer64").map_or("?", String::as_str),
    );
    let _ = writeln!(
        w,
        "\nAllocations per pair (16 nodes, counted by a counting global allocator over 20,000 pairs in \
         `benches/benches/pairs.rs`; `tests/tests/alloc.rs` asserts zero for weir under every policy, \
         health model and limiter, with membership changes and rejections):\n"
    );
    let _ = writeln!(w, "| workload | allocations per pair |\n|---|---:|");
    for (k, v) in t.iter().filter(|(k, _)| k.starts_with("allocations.")) {
        let name = k.trim_start_matches("allocations.").trim_end_matches(".16");
        let _ = writeln!(w, "| {name} | {v} |");
    }

    w.push_str(&tower::section(t));
    let _ = writeln!(w, "\n## Commands\n");
    let _ = writeln!(
        w,
        "```sh\ncargo xtask bench                      # timings (about 8 minutes on 2 cores) + this file\n\
         cargo xtask bench --instructions       # valgrind instruction counts + this file\n\
         cargo xtask bench --c-abi              # only the C ABI's pairs (builds libweir.so) + this file\n\
         cargo xtask bench --warm-up-time 0.5 --measurement-time 1   # a quicker, noisier run\n\
         cargo bench -p weir-benches --bench hot_path -- 'pair/weir-default'  # criterion alone, filtered\n\
         cargo bench -p weir-benches --bench tower_service   # weir-tower against tower's Balance\n```"
    );
    s
}

#[cfg(test)]
mod tests {
    use super::keep_section;

    #[test]
    fn the_python_section_is_carried_over_before_the_commands() {
        let old = "# R\n\n## A\n\na\n\n## Python\n\npy 1\n\n## Commands\n\nc\n";
        let new = "# R\n\n## A\n\nb\n\n## Commands\n\nc\n";
        assert_eq!(
            keep_section(old, new, "## Python\n"),
            "# R\n\n## A\n\nb\n\n## Python\n\npy 1\n\n## Commands\n\nc\n"
        );
        // At the end of the old file, and without one: unchanged.
        let old = "# R\n\n## Python\n\npy 2\n";
        assert_eq!(
            keep_section(old, "# R\n", "## Python\n"),
            "# R\n\n## Python\n\npy 2\n"
        );
        assert_eq!(keep_section("# R\n", new, "## Python\n"), new);
    }

    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    /// The shape criterion 0.8 writes to `<id>/new/estimates.json` (one line, keys in this order).
    const ESTIMATES: &str = r#"{"mean":{"confidence_interval":{"confidence_level":0.95,"lower_bound":40.1,"upper_bound":42.9},"point_estimate":41.5,"standard_error":0.7},"median":{"confidence_interval":{"confidence_level":0.95,"lower_bound":122.9,"upper_bound":124.0},"point_estimate":123.4,"standard_error":1.0},"median_abs_dev":{"confidence_interval":{"confidence_level":0.95,"lower_bound":0.1,"upper_bound":0.3},"point_estimate":0.2,"standard_error":0.05},"slope":null,"std_dev":{"confidence_interval":{"confidence_level":0.95,"lower_bound":1.0,"upper_bound":2.0},"point_estimate":1.5,"standard_error":0.2}}"#;

    #[test]
    fn median_is_the_medians_point_estimate() {
        assert_eq!(median_estimate(ESTIMATES), Some(123.4));
        // Pretty-printed, with an integer estimate and the median first.
        let pretty = "{\n  \"median\": {\n    \"point_estimate\": 97,\n    \"standard_error\": 1.0\n  },\n  \"mean\": {\"point_estimate\": 5.0}\n}";
        assert_eq!(median_estimate(pretty), Some(97.0));
    }

    #[test]
    fn median_is_none_without_one() {
        assert_eq!(median_estimate(""), None);
        assert_eq!(median_estimate(&ESTIMATES[..ESTIMATES.len() / 2]), None);
        assert_eq!(median_estimate(r#"{"mean":{"point_estimate":1.0}}"#), None);
        assert_eq!(
            median_estimate(r#"{"median":{"point_estimate":null}}"#),
            None
        );
        assert_eq!(
            median_estimate(r#"{"median":{"point_estimate":"1.0"}}"#),
            None
        );
        // The median absolute deviation is not the median.
        assert_eq!(
            median_estimate(r#"{"median_abs_dev":{"point_estimate":0.2}}"#),
            None
        );
    }

    #[test]
    fn pairs_executable_is_the_bench_artifacts() {
        let messages = [
            "not json",
            r#"{"reason":"compiler-artifact","package_id":"path+file:///w/benches#weir-benches@0.1.0","target":{"kind":["lib"],"name":"weir_benches"},"executable":null,"fresh":true}"#,
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
106,229,256 (100.0%)  PROGRAM TOTALS
62,277,399 (58.63%)  core/src/balance/balancer.rs:weir::balance::balancer::Balancer<S>::acquire [/w/pairs]
48,528,000 (45.68%)  core/src/balance/policy.rs:weir::balance::policy::lowest [/w/pairs]
 7,000,000 ( 6.59%)  /rustc/x/library/core/src/iter/adapters/zip.rs:weir::balance::policy::lowest
 5,000,000 ( 4.00%)  core/src/balance/policy.rs:weir::balance::policy::lowest_in [/w/pairs]
202,953,122 (75.58%)  => core/src/balance/policy.rs:weir::balance::policy::lowest (100,008x)
 7,100,000 ( 6.68%)  core/src/limit/mod.rs:<weir::limit::LimitAlgorithm as weir::limit::Limit>::update [/w/pairs]";
        let got = inclusive_counts(text);
        assert_eq!(
            got,
            [
                ("weir::balance::balancer::Balancer<S>::acquire", 62_277_399),
                ("weir::balance::policy::lowest", 48_528_000),
                (
                    "<weir::limit::LimitAlgorithm as weir::limit::Limit>::update",
                    7_100_000
                ),
            ]
        );
    }

    #[test]
    fn medians_reads_the_new_estimates_of_every_level() {
        let dir = std::env::temp_dir().join(format!("xtask-medians-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let write = |rel: &str, text: &str| {
            let p = dir.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        };
        write("pair/weir-cascade-buckets/16/new/estimates.json", ESTIMATES);
        write(
            "pair/weir-cascade-buckets/16/base/estimates.json",
            &ESTIMATES.replace("123.4", "1.0"),
        );
        write(
            "floor/cas/new/estimates.json",
            r#"{"median":{"point_estimate":2.25}}"#,
        );
        write("floor/cas/change/estimates.json", ESTIMATES);
        write("floor/broken/new/estimates.json", "{");
        write("report/index.html", "<html>");

        let mut facts = Facts::new();
        assert_eq!(medians(&dir, UNIX_EPOCH, &mut facts), 2);
        let want: Facts = [
            ("median.floor/cas", "2.250"),
            ("median.pair/weir-cascade-buckets/16", "123.400"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(facts, want);

        // Nothing was written since an hour from now.
        let later = SystemTime::now() + Duration::from_secs(3600);
        assert_eq!(medians(&dir, later, &mut Facts::new()), 0);
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(medians(&dir, UNIX_EPOCH, &mut Facts::new()), 0);
    }
}
