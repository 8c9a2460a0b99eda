//! `cargo xtask bench`: the benchmark suite of `benches/` and its report, `benches/RESULTS.md`.
//!
//! - `cargo xtask bench [CRITERION ARGS..]`: the criterion run (`hot_path`: weir, its baselines and
//!   floors, limiters, threads; then `tower_service`: weir-tower against tower's `Balance`, see `tower.rs`;
//!   then `metrics`: the pair with a scrape every 10 ms against none, see `metrics.rs`),
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
//!
//! By job: `timing.rs` runs the criterion benches, `instructions.rs` counts instructions under valgrind,
//! `facts.rs` is what both save (and the machine they ran on), `report/mod.rs` writes RESULTS.md from it
//! (its prose is the template `report/template.md`), `tower.rs` is weir-tower's bench and section, and
//! `metrics.rs` the scrape's.

mod facts;
mod instructions;
mod metrics;
mod report;
mod timing;
mod tower;

use crate::process::fail;
use crate::workspace::target_dir;
use facts::{load, INSTRUCTIONS, TIMING};
use std::fs;
use std::path::Path;

/// The new default's pair (`Config::default()`) and the cascade's (`Config::cascade()`), by workload name.
const DEFAULT: &str = "weir-default";
const DEFAULT_FIXED: &str = "weir-default-fixed";
const CASCADE: &str = "weir-cascade-buckets";

pub(crate) const USAGE: &str = "\
usage: cargo xtask bench [CRITERION ARGS..]   the criterion benches, allocations, interleaved rounds
       cargo xtask bench --instructions       valgrind instruction counts
       cargo xtask bench --c-abi              the C ABI's pairs alone
       cargo xtask bench --report             nothing run: RESULTS.md from the saved facts
Each saves its facts under <target>/weir-bench/, then rewrites benches/RESULTS.md. CRITERION ARGS go to
each criterion bench: a filter and criterion 0.8's options (--warm-up-time 0.5 --measurement-time 1,
--sample-size N, --save-baseline NAME, ...); criterion's own help:
cargo bench -p weir-lb-benches --bench hot_path -- --help";

/// What `cargo xtask bench` runs.
#[derive(Debug, PartialEq)]
pub(crate) enum Mode {
    /// The criterion benches, each with these arguments.
    Time(Vec<String>),
    Instructions,
    CAbi,
    /// Only RESULTS.md, from the saved facts.
    Report,
}

/// criterion 0.8's options that take a value (`Criterion::configure_from_args`), short forms included.
const CRITERION_VALUED: [&str; 20] = [
    "--color",
    "--colour",
    "-c",
    "--save-baseline",
    "-s",
    "--baseline",
    "-b",
    "--baseline-lenient",
    "--load-baseline",
    "--format",
    "--profile-time",
    "--sample-size",
    "--warm-up-time",
    "--measurement-time",
    "--nresamples",
    "--noise-threshold",
    "--confidence-level",
    "--significance-level",
    "--plotting-backend",
    "--output-format",
];
/// criterion 0.8's switches.
const CRITERION_FLAGS: [&str; 10] = [
    "--verbose",
    "-v",
    "--quiet",
    "--noplot",
    "-n",
    "--discard-baseline",
    "--list",
    "--ignored",
    "--exact",
    "--quick",
];

/// Checks `cargo xtask bench`'s arguments: one of `--instructions`, `--c-abi`, `--report` alone, or
/// criterion's arguments (at most one filter, options as criterion 0.8 takes them), so that a typo fails
/// before the benches are built.
pub(crate) fn parse(args: &[String]) -> Result<Mode, String> {
    let mut modes = Vec::new();
    let mut criterion: Vec<String> = Vec::new();
    let mut filter: Option<&str> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        match a.as_str() {
            "--instructions" => modes.push((a, Mode::Instructions)),
            "--c-abi" => modes.push((a, Mode::CAbi)),
            "--report" => modes.push((a, Mode::Report)),
            f if CRITERION_FLAGS.contains(&f) => criterion.push(a.clone()),
            o if CRITERION_VALUED.contains(&o) => {
                let value = it.next().ok_or(format!("{o} needs a value"))?;
                criterion.extend([a.clone(), value.clone()]);
            }
            _ if name.starts_with("--") && CRITERION_VALUED.contains(&name) => {
                criterion.push(a.clone())
            }
            o if o.starts_with('-') => return Err(format!("unknown argument {o:?}")),
            o => match filter {
                None => {
                    filter = Some(o);
                    criterion.push(a.clone());
                }
                Some(f) => return Err(format!("one filter at most: {f:?}, then {o:?}")),
            },
        }
    }
    match (modes.pop(), modes.first(), criterion.first()) {
        (None, _, _) => Ok(Mode::Time(criterion)),
        (Some((_, mode)), None, None) => Ok(mode),
        (Some((flag, _)), None, Some(c)) => {
            Err(format!("{flag} takes no criterion arguments, got {c:?}"))
        }
        (Some((flag, _)), Some((other, _)), _) => {
            Err(format!("{other} and {flag} exclude each other"))
        }
    }
}

pub(crate) fn bench(mode: Mode) {
    let target = target_dir();
    let out = target.join("weir-bench");
    fs::create_dir_all(&out)
        .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", out.display())));
    match mode {
        // Only rewrites RESULTS.md from the saved data (after a change to this report).
        Mode::Report => {}
        Mode::CAbi => timing::c_abi_only(&target, &out),
        Mode::Instructions => instructions::count(&out),
        Mode::Time(criterion) => {
            let args: Vec<&str> = criterion.iter().map(String::as_str).collect();
            timing::time(&target, &out, &args);
        }
    }
    let results = Path::new("benches/RESULTS.md");
    // The Python section is `cargo xtask bench-py`'s: carried over as it is.
    let text = report::results(
        &fs::read_to_string(results).unwrap_or_default(),
        &load(&out.join(TIMING)),
        &load(&out.join(INSTRUCTIONS)),
    );
    fs::write(results, text)
        .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", results.display())));
    eprintln!("\nxtask: wrote {}", results.display());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(v: &[&str]) -> Result<Mode, String> {
        parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn criterion_arguments_pass_and_typos_fail() {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse_str(&[]), Ok(Mode::Time(vec![])));
        let run = [
            "pair/weir-default",
            "--warm-up-time",
            "0.5",
            "--measurement-time=1",
            "-n",
            "--save-baseline",
            "main",
        ];
        assert_eq!(parse_str(&run), Ok(Mode::Time(strings(&run))));
        assert_eq!(parse_str(&["--instructions"]), Ok(Mode::Instructions));
        assert_eq!(parse_str(&["--c-abi"]), Ok(Mode::CAbi));
        assert_eq!(parse_str(&["--report"]), Ok(Mode::Report));
        for (args, error) in [
            (
                &["--warmup-time", "1"][..],
                "unknown argument \"--warmup-time\"",
            ),
            (&["--measurement-time"], "--measurement-time needs a value"),
            (&["a", "b"], "one filter at most: \"a\", then \"b\""),
            (
                &["--instructions", "pair"],
                "--instructions takes no criterion arguments, got \"pair\"",
            ),
            (
                &["--report", "--c-abi"],
                "--report and --c-abi exclude each other",
            ),
            (&["--verbose=1"], "unknown argument \"--verbose=1\""),
        ] {
            assert_eq!(parse_str(args), Err(error.to_string()), "{args:?}");
        }
    }
}
