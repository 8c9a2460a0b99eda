//! `weir-sim`: runs the simulator's scenarios and writes the report.
//!
//! ```text
//! weir-sim [--out DIR] [--threads N] [--no-charts]      every scenario x every policy -> DIR (target/sim)
//! weir-sim --scenario-file F [--scenario-file F ...]    the scenarios of these files x every policy -> DIR
//! weir-sim --scenario NAME [--policy NAME]              one scenario (one cell), printed
//! weir-sim --list                                       the scenarios and policies
//! ```
//!
//! `--policy NAME` runs one policy instead of all; with `--scenario-file` (or none) the report is still
//! written. A scenario file is TOML (see `sim/README.md`); `cargo xtask sim --scenarios DIR` runs every
//! `*.toml` in DIR.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use weir_sim::{file, output::report, policy::registry, scenarios};

struct Args {
    out: PathBuf,
    threads: usize,
    charts: bool,
    scenario: Option<String>,
    files: Vec<PathBuf>,
    policy: Option<String>,
    list: bool,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        out: PathBuf::from("target/sim"),
        threads: std::thread::available_parallelism().map_or(1, usize::from),
        charts: true,
        scenario: None,
        files: Vec::new(),
        policy: None,
        list: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |what: &str| it.next().ok_or(format!("{a} needs {what}"));
        match a.as_str() {
            "--out" => args.out = PathBuf::from(value("a directory")?),
            "--threads" => {
                args.threads = value("a number")?
                    .parse()
                    .map_err(|_| "--threads needs a whole number".to_string())?
            }
            "--no-charts" => args.charts = false,
            "--scenario" => args.scenario = Some(value("a scenario name")?),
            "--scenario-file" => args.files.push(PathBuf::from(value("a file")?)),
            "--policy" => args.policy = Some(value("a policy name")?),
            "--list" => args.list = true,
            // No error: main prints the usage alone.
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.scenario.is_some() && !args.files.is_empty() {
        return Err(
            "--scenario names a built-in scenario: use it or --scenario-file, not both".into(),
        );
    }
    Ok(args)
}

const USAGE: &str = "usage: weir-sim [--out DIR] [--threads N] [--no-charts] [--policy NAME]
       weir-sim --scenario-file F [--scenario-file F ...] [--out DIR] [--threads N] [--no-charts] [--policy NAME]
       weir-sim --scenario NAME [--policy NAME]
       weir-sim --list
A scenario file describes servers, clients, load and failures in TOML: see sim/README.md.";

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        // Asked for: the usage on stdout, and success.
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("weir-sim: {e}");
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    if args.list {
        println!("scenarios:");
        for s in scenarios::all() {
            println!("  {:34} {}", s.name, s.about);
        }
        println!("policies:");
        for p in registry::all() {
            println!("  {:34} {}", p.name, p.description());
        }
        return ExitCode::SUCCESS;
    }
    let all_scenarios = if args.files.is_empty() {
        scenarios::all()
    } else {
        match file::load_all(&args.files) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("weir-sim: {e}");
                return ExitCode::from(2);
            }
        }
    };
    let chosen_scenarios = match &args.scenario {
        None => all_scenarios,
        Some(name) => match all_scenarios.into_iter().find(|s| s.name == *name) {
            Some(s) => vec![s],
            None => {
                eprintln!("weir-sim: no scenario {name} (see --list)");
                return ExitCode::from(2);
            }
        },
    };
    let chosen_policies = match &args.policy {
        None => registry::all(),
        Some(name) => match registry::find(name) {
            Some(p) => vec![p],
            None => {
                eprintln!("weir-sim: no policy {name} (see --list)");
                return ExitCode::from(2);
            }
        },
    };
    let started = Instant::now();
    let one = args.scenario.is_some();
    let report = report::run(chosen_scenarios, chosen_policies, args.threads);
    let ran = started.elapsed();
    if one {
        print!("{}", report.markdown(false));
    } else {
        print!("{}", report.summary());
        if let Err(e) = report.write(&args.out, args.charts) {
            eprintln!("weir-sim: writing the report: {e}");
            return ExitCode::FAILURE;
        }
        println!(
            "\nreport: {} (simulated in {:.1} s, written in {:.1} s, {} threads)",
            args.out.join("report.md").display(),
            ran.as_secs_f64(),
            (started.elapsed() - ran).as_secs_f64(),
            args.threads
        );
    }
    ExitCode::SUCCESS
}
