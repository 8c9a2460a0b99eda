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
//!
//! By job: `timing.rs` runs the criterion benches, `instructions.rs` counts instructions under valgrind,
//! `facts.rs` is what both save (and the machine they ran on), `report.rs` writes RESULTS.md from it
//! (its prose is the template `report/template.md`), and `tower.rs` is weir-tower's bench and section.

mod facts;
mod instructions;
mod report;
mod timing;
mod tower;

use super::{fail, target_dir};
use facts::{load, INSTRUCTIONS, TIMING};
use std::fs;
use std::path::Path;

/// The new default's pair (`Config::default()`) and the seeds' (`Config::seeds()`), by workload name.
const DEFAULT: &str = "weir-default";
const DEFAULT_FIXED: &str = "weir-default-fixed";
const SEEDS: &str = "weir-cascade-buckets";

const USAGE: &str = "\
usage: cargo xtask bench [CRITERION ARGS..]   the criterion benches, allocations, interleaved rounds
       cargo xtask bench --instructions       valgrind instruction counts
       cargo xtask bench --c-abi              the C ABI's pairs alone
       cargo xtask bench --report             nothing run: RESULTS.md from the saved facts
Each saves its facts under <target>/weir-bench/, then rewrites benches/RESULTS.md. CRITERION ARGS go to
each criterion bench (a filter, --warm-up-time 0.5 --measurement-time 1, ...); criterion's own options:
cargo bench -p weir-lb-benches --bench hot_path -- --help";

pub(crate) fn bench(args: &[String]) {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("{USAGE}");
        return;
    }
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
        timing::c_abi_only(&target, &out);
    } else if instructions {
        if !rest.is_empty() {
            fail("--instructions takes no criterion arguments");
        }
        instructions::count(&out);
    } else {
        timing::time(&target, &out, &rest);
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
