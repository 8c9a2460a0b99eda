//! The scenario files under `sim/scenarios/` are the built-in scenarios written as files: each parses into
//! exactly its built-in twin, and one policy gives the same figures on both. And every TOML example of
//! `sim/README.md` is a scenario that parses.

use std::path::{Path, PathBuf};

use weir_sim::{file, output::report, policy::registry, scenarios, Scenario};

/// A file under `sim/scenarios/` and the built-in scenario it writes down.
type Twin = (&'static str, fn() -> Scenario);

/// Every file under `sim/scenarios/`, with its twin.
const TWINS: [Twin; 27] = [
    ("cascade/all_healthy.toml", scenarios::all_healthy),
    ("cascade/one_down_fast.toml", scenarios::one_down_fast),
    ("cascade/one_timing_out.toml", scenarios::one_timing_out),
    ("cascade/flaky.toml", scenarios::flaky),
    ("cascade/flapping_fast.toml", scenarios::flapping_fast),
    ("cascade/flapping_slow.toml", scenarios::flapping_slow),
    ("cascade/cpu_contention.toml", scenarios::cpu_contention),
    ("cascade/network_degraded.toml", scenarios::network_degraded),
    ("cascade/nodes_replaced.toml", scenarios::nodes_replaced),
    ("cascade/combination.toml", scenarios::combination),
    (
        "cascade/cascading_failure.toml",
        scenarios::cascading_failure,
    ),
    ("cascade/thundering_herd.toml", scenarios::thundering_herd),
    ("cascade/bad_caller_4xx.toml", scenarios::bad_caller_4xx),
    (
        "dialogue/simplest_possible_case.toml",
        scenarios::simplest_possible_case,
    ),
    (
        "dialogue/slowdown_and_error_thresholds.toml",
        scenarios::slowdown_and_error_thresholds,
    ),
    (
        "dialogue/slow_503s_then_revert.toml",
        scenarios::slow_503s_then_revert,
    ),
    (
        "dialogue/fast_503s_then_revert.toml",
        scenarios::fast_503s_then_revert,
    ),
    ("dialogue/black_hole.toml", scenarios::black_hole),
    (
        "dialogue/one_endpoint_dies_on_each_server.toml",
        scenarios::one_endpoint_dies_on_each_server,
    ),
    ("dialogue/live_reloading.toml", scenarios::live_reloading),
    (
        "dialogue/server_side_rate_limits.toml",
        scenarios::server_side_rate_limits,
    ),
    (
        "dialogue/sticky_steady_vs_bursty_client.toml",
        scenarios::sticky_steady_vs_bursty_client,
    ),
    ("at_capacity/capacity_blip.toml", scenarios::capacity_blip),
    (
        "at_capacity/capacity_two_of_four_failing.toml",
        scenarios::capacity_two_of_four_failing,
    ),
    (
        "at_capacity/capacity_load_step.toml",
        scenarios::capacity_load_step,
    ),
    (
        "field/finagle_cold_start.toml",
        scenarios::finagle_cold_start,
    ),
    (
        "field/tower_latency_spread.toml",
        scenarios::tower_latency_spread,
    ),
];

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

#[test]
fn every_file_is_its_built_in_twin() {
    for (path, twin) in TWINS {
        let from_file = file::load(&dir().join(path)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(from_file, twin(), "{path}");
    }
}

#[test]
fn one_policy_gives_the_same_figures_on_a_file_and_its_twin() {
    let policy = registry::find("round-robin").expect("a cheap policy");
    // Both sides of every pair on one thread each: the cells are independent.
    std::thread::scope(|scope| {
        let runs: Vec<_> = TWINS
            .iter()
            .map(|&(path, twin)| {
                let policy = &policy;
                scope.spawn(move || {
                    let from_file = file::load(&dir().join(path)).unwrap_or_else(|e| panic!("{e}"));
                    let a = report::run_cell(&from_file, policy);
                    let b = report::run_cell(&twin(), policy);
                    (path, a, b)
                })
            })
            .collect();
        for run in runs {
            let (path, a, b) = run.join().expect("a cell ran");
            assert!(a.sent > 0, "{path}: nothing ran");
            assert_eq!(a, b, "{path}");
        }
    });
}

/// Every `.toml` file under `dir`, recursively, sorted.
fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            out.extend(toml_files(&path));
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
    out.sort();
    out
}

#[test]
fn every_file_under_scenarios_has_a_twin_and_the_names_are_unique() {
    let files = toml_files(&dir());
    let listed: Vec<PathBuf> = TWINS.iter().map(|(p, _)| dir().join(p)).collect();
    for f in &files {
        assert!(listed.contains(f), "{} has no twin in TWINS", f.display());
    }
    assert_eq!(files.len(), TWINS.len());
    let loaded = file::load_all(&files).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.len(), files.len());
    // A second copy of a file is refused by its name.
    let twice = [files[0].clone(), files[0].clone()];
    let e = file::load_all(&twice).unwrap_err();
    assert!(e.message.contains("already read from"), "{e}");
    let text = std::fs::read_to_string(&files[0]).expect("the file");
    let name_line = text.lines().position(|l| l.starts_with("name = "));
    assert_eq!(
        (Some(e.line - 1), e.field.as_str()),
        (name_line, "name"),
        "{e}"
    );
}

/// The ```toml blocks of a markdown text, each with the line it starts on.
fn toml_blocks(markdown: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (i, line) in markdown.lines().enumerate() {
        match (&mut open, line.trim_end()) {
            (None, "```toml") => open = Some((i + 1, String::new())),
            (Some(_), "```") => out.extend(open.take()),
            (Some((_, text)), _) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(open.is_none(), "a ```toml block is not closed");
    out
}

#[test]
fn every_toml_example_of_the_readme_parses() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("sim/README.md");
    let blocks = toml_blocks(&readme);
    assert!(blocks.len() >= 5, "{} blocks", blocks.len());
    for (line, text) in blocks {
        if let Err(e) = file::parse(&text) {
            panic!("README.md block at line {line}: {e}");
        }
    }
}

#[test]
fn the_readme_mistakes_are_what_the_reader_says() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("sim/README.md");
    let (_, example) = toml_blocks(&readme).into_iter().next().expect("an example");
    let shown = readme
        .split("```text\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a text block after the example");
    let mistakes = [
        ("p = 0.8", "p = 1.5"),
        ("timeout = \"500ms\"", "timout = \"500ms\""),
        (
            "latency = { kind = \"linear\", base = \"25ms\", capacity = 40 }",
            "latency = { kind = \"linear\", base = \"25ms\" }",
        ),
    ];
    let mut said = String::new();
    for (from, to) in mistakes {
        assert!(example.contains(from), "{from}");
        let e = file::parse(&example.replacen(from, to, 1)).unwrap_err();
        said.push_str(&format!("my/checkout.toml:{e}\n"));
    }
    assert_eq!(said, shown);
}

#[test]
fn a_file_with_extreme_but_valid_values_runs() {
    // A log-normal with a huge sigma draws latencies past u64::MAX ns; the longest durations; a slot
    // at the limit of its retries; a request cost far above 1.
    let s = file::parse(
        r#"
        name = "extreme"
        abort = "1000h"
        bucket = "1h"
        [[servers]]
        name = "wide"
        latency = { kind = "log_normal", median = "100000h", sigma = 1000 }
        [[servers]]
        name = "crashing"
        latency = "1h"
        crash = { active_above = 0, sustained = "0s", down_for = "100000h" }
        [[servers]]
        name = "queue"
        latency = { kind = "queue", workers = 1, median = "100000h", sigma = 1000 }
        slowness = 1e300
        [clients]
        count = 3
        timeout = "100000h"
        deadline = "100000h"
        [clients.retries]
        max = 1
        on = "retryable"
        backoff = { kind = "exponential", slot = "100000h" }
        [[arrivals]]
        count = 50
        spacing = "1h"
        heavy = { fraction = 0.5, cost = 1e300 }
        "#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let policy = registry::find("round-robin").expect("a cheap policy");
    let c = report::run_cell(&s, &policy);
    assert_eq!(c.sent, 50);
}
