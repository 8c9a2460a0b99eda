//! The facts of a run, the one thing the runs hand to the report: a map from key to value, saved one
//! `key<TAB>value` line each under `<target>/weir-bench/`: [`TIMING`] (`cargo xtask bench`, updated by
//! `--c-abi`) and [`INSTRUCTIONS`] (`--instructions`). Keys: `median.<criterion id>` (see
//! `timing::medians`), the `weir-bench-fact:` lines the benches print ([`run_facts`]), `instr.*` and
//! `breakdown.*` (see `instructions.rs`), and `meta.*`, the machine and the code ([`machine`]).

use crate::process::fail;
use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

pub(super) type Facts = BTreeMap<String, String>;

/// The file of the timing runs' facts, in `<target>/weir-bench/`.
pub(super) const TIMING: &str = "timing.txt";
/// The file of the instruction counts' facts, in `<target>/weir-bench/`.
pub(super) const INSTRUCTIONS: &str = "instructions.txt";

/// The prefix of the facts that describe a `--c-abi` run (`c_abi.meta.commit`, ...), when the C ABI's
/// figures come from one rather than from the full run.
pub(super) const C_ABI_META: &str = "c_abi.";

/// The facts that describe one run (what the report's line about a run shows), as against the machine's.
pub(super) const RUN_FACTS: [&str; 6] = [
    "meta.command",
    "meta.commit",
    "meta.date",
    "meta.wall_s",
    "meta.load_before",
    "meta.load_after",
];

pub(super) fn save(path: &Path, facts: &Facts) {
    let text: String = facts.iter().map(|(k, v)| format!("{k}\t{v}\n")).collect();
    fs::write(path, text)
        .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", path.display())));
}

/// The facts saved in `path`; none if it cannot be read (no run of that kind yet).
pub(super) fn load(path: &Path) -> Facts {
    parse(&fs::read_to_string(path).unwrap_or_default())
}

/// Facts from the text [`save`] writes; lines without a tab are skipped.
fn parse(text: &str) -> Facts {
    text.lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The trimmed stdout of a command that succeeded; `None` if it could not start or failed.
pub(super) fn shell(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The machine and the code, as facts.
pub(super) fn machine() -> Facts {
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

pub(super) fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// Runs a command, echoing its stdout, and returns the `weir-bench-fact:` lines as facts.
pub(super) fn run_facts(program: &str, args: &[&str]) -> Facts {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_facts_are_read_back_and_stray_lines_skipped() {
        let mut facts = Facts::new();
        facts.insert("meta.date".into(), "2026-11-24 02:40 UTC".into());
        facts.insert("median.pair/mutex/16".into(), "180.100".into());
        let path = std::env::temp_dir().join(format!("xtask-facts-{}", std::process::id()));
        save(&path, &facts);
        assert_eq!(load(&path), facts);
        let _ = fs::remove_file(&path);
        assert_eq!(load(&path), Facts::new());
        let text = "a\t1\nno tab here\nb\tx y\tz\n";
        let want: Facts = [("a", "1"), ("b", "x y\tz")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(parse(text), want);
    }
}
