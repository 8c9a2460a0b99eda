//! Metrics after a replayed trace: for every `tests/vectors/metrics/<name>.prom`, the trace
//! `tests/vectors/<name>.trace` is played on the core and `Balancer::write_metrics` must write that text
//! exactly, byte for byte, with the fixed format of `tests/vectors/metrics/README.md`. The C and Python
//! suites write the same text through their bindings and compare it with the same files, so the three
//! surfaces print the same names and values for the same state.
//!
//! `WEIR_BLESS=1 cargo test -p weir-lb-tests --test metrics_vectors` writes the files from the core
//! instead of comparing (for the traces listed in `TRACES`), and says so on stderr.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use weir::metrics::{node_id_name, MetricsFormat};
use weir_tests::vectors::{parse, Item, Runner};

/// The traces whose end state has a committed metrics text: one per algorithm family.
const TRACES: [&str; 2] = ["cascade", "default"];

/// The fixed format every surface writes with: the default prefix, and a constant label whose value
/// needs each of the three escapes.
const FORMAT: MetricsFormat<'static> = MetricsFormat {
    prefix: "weir",
    labels: &[("service", "or\"d\\ers\nEU")],
};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors")
}

/// Plays every operation of the trace `name` and writes the metrics at the last step's time.
fn metrics_after(name: &str) -> String {
    let path = dir().join(format!("{name}.trace"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let trace = parse(&text).unwrap_or_else(|e| panic!("{name}: {}", e.message));
    let mut runner = Runner::new(&trace);
    let mut last = 0;
    for item in &trace.items {
        match item {
            Item::Reseed(seed) => runner.reseed(*seed),
            Item::Step(s) => {
                runner.apply(s.t, s.op).expect("the trace replays");
                last = s.t;
            }
        }
    }
    let mut out = String::new();
    runner
        .balancer()
        .write_metrics(&mut out, &FORMAT, &node_id_name, last)
        .expect("the fixed format is valid");
    out
}

#[test]
fn metrics_after_a_replay_are_the_committed_text() {
    let bless = std::env::var_os("WEIR_BLESS").is_some_and(|v| v == "1");
    for name in TRACES {
        let got = metrics_after(name);
        let path = dir().join("metrics").join(format!("{name}.prom"));
        if bless {
            std::fs::write(&path, &got).expect("write the metrics text");
            let _ = writeln!(std::io::stderr(), "WEIR_BLESS=1: wrote {}", path.display());
            continue;
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (WEIR_BLESS=1 writes it)", path.display()));
        assert!(
            got == want,
            "{}: the core writes another text (WEIR_BLESS=1 rewrites it; review the diff):\n{got}",
            path.display()
        );
    }
    // Every committed text has its trace in TRACES: none is left unchecked.
    let mut committed: Vec<String> = std::fs::read_dir(dir().join("metrics"))
        .expect("tests/vectors/metrics exists")
        .filter_map(|e| {
            let p = e.expect("readable").path();
            (p.extension()? == "prom").then(|| p.file_stem()?.to_str().map(str::to_owned))?
        })
        .collect();
    committed.sort();
    assert_eq!(committed, TRACES.map(str::to_owned));
}

#[test]
fn the_text_has_what_the_state_has() {
    // Guard against blessing a text that says nothing: the end state of `default` has members, leases
    // released and the escaped constant label on every sample.
    let text = metrics_after("default");
    assert!(text.contains("weir_nodes{service=\"or\\\"d\\\\ers\\nEU\",state=\"active\"} "));
    let samples = text.lines().filter(|l| !l.starts_with('#'));
    assert!(samples
        .clone()
        .all(|l| l.starts_with("weir_") && l.contains("{service=\"or\\\"d\\\\ers\\nEU\"")));
    assert!(
        samples
            .filter(|l| l.starts_with("weir_node_limit{"))
            .count()
            > 0
    );
}
