//! The report of a small scenario is byte-identical from run to run (whatever the thread count) and matches
//! the committed golden file. After an intended change, regenerate it with
//! `WEIR_SIM_BLESS=1 cargo test -p weir-lb-sim --test golden` and review the diff.

use std::path::Path;

use weir_sim::{output::report, policy::registry, scenarios};

fn render(threads: usize) -> String {
    let r = report::run(
        vec![scenarios::short_outage_on_one_node()],
        registry::all(),
        threads,
    );
    format!("{}\n{}", r.markdown(true), r.results_csv())
}

#[test]
fn a_small_report_is_byte_identical_and_matches_the_golden_file() {
    let first = render(1);
    assert_eq!(first, render(2), "the thread count changed the report");
    assert_eq!(first, render(1), "two runs differ");
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/short_outage_on_one_node.md");
    if std::env::var_os("WEIR_SIM_BLESS").is_some() {
        std::fs::write(&path, &first).unwrap();
    }
    let golden = std::fs::read_to_string(&path).unwrap_or_default();
    if first != golden {
        let diff = first
            .lines()
            .zip(golden.lines())
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .map(|(i, (a, b))| format!("line {}:\n  now:    {a}\n  golden: {b}", i + 1))
            .unwrap_or_else(|| "one is a prefix of the other".into());
        panic!("the report differs from {}: {diff}", path.display());
    }
}
