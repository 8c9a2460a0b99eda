//! Writes the report and charts of a few scenarios, every policy, to look at the charts without running the
//! whole report: `cargo run --release -p weir-lb-sim --example charts -- DIR black_hole capacity_blip`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use weir_sim::{output::report, policy::registry, scenarios};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next().map(PathBuf::from) else {
        eprintln!("usage: charts DIR SCENARIO...");
        return ExitCode::from(2);
    };
    let names: Vec<String> = args.collect();
    let chosen: Vec<_> = scenarios::all()
        .into_iter()
        .filter(|s| names.contains(&s.name))
        .collect();
    if chosen.len() != names.len() {
        eprintln!("charts: a scenario is unknown (see weir-sim --list)");
        return ExitCode::from(2);
    }
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let report = report::run(chosen, registry::all(), threads);
    let started = Instant::now();
    if let Err(e) = report.write(&dir, true) {
        eprintln!("charts: {e}");
        return ExitCode::FAILURE;
    }
    println!(
        "{} written in {:.2} s",
        dir.join("charts").display(),
        started.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}
