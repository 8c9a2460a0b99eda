//! The report's charts: a per-server and a fleet chart per scenario, linked from the report, drawn the same
//! bytes every time, and a black hole shown as what it is.

use std::path::PathBuf;

use weir_sim::output::chart::{encode, Stroke};
use weir_sim::output::{figures, report};
use weir_sim::{policy::registry, scenarios};

/// A small report: two short scenarios, weir's default and two baselines.
fn small() -> weir_sim::Report {
    let policies = registry::all()
        .into_iter()
        .filter(|p| p.default || ["dialogue-balanced", "round-robin"].contains(&p.name))
        .collect();
    report::run(
        vec![
            scenarios::black_hole(),
            scenarios::short_outage_on_one_node(),
        ],
        policies,
        2,
    )
}

#[test]
fn every_scenario_gets_both_charts_linked_from_the_report() {
    let report = small();
    let dir = std::env::temp_dir().join(format!("weir-sim-charts-{}", std::process::id()));
    report.write(&dir, true).unwrap();
    let markdown = std::fs::read_to_string(dir.join("report.md")).unwrap();
    for scenario in &report.scenarios {
        for file in [
            format!("{}.png", scenario.name),
            format!("{}-fleet.png", scenario.name),
        ] {
            let path: PathBuf = dir.join("charts").join(&file);
            let bytes = std::fs::read(&path).unwrap_or_default();
            assert!(
                bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
                "{} is not a PNG",
                path.display()
            );
            assert!(
                markdown.contains(&format!("(charts/{file})")),
                "report.md does not link {file}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn charts_render_the_same_bytes_twice() {
    let report = small();
    for s in 0..report.scenarios.len() {
        let servers = figures::servers(&report, s);
        assert!(encode(&servers).unwrap() == encode(&servers).unwrap());
        let fleet = figures::fleet(&report, s);
        assert!(encode(&fleet).unwrap() == encode(&fleet).unwrap());
    }
    let again = small();
    assert!(
        encode(&figures::fleet(&report, 0)).unwrap() == encode(&figures::fleet(&again, 0)).unwrap(),
        "two runs of the same report drew different fleet charts"
    );
}

#[test]
fn a_black_hole_reads_as_no_answers_not_as_an_ended_line() {
    let report = small();
    let figure = figures::servers(&report, 0);
    // Per policy: attempts/s, then success %; the black hole is the second server.
    let success = &figure.panels[1];
    let hole = success.lanes[1].spans.last().copied().unwrap();
    let end = figure.x_range.unwrap().1;
    assert!(
        hole.1 == end,
        "the black hole holds attempts to the end: its lane ends at {} of {end}",
        hole.1
    );
    let dashed: Vec<(f64, f64)> = success
        .series
        .iter()
        .filter(|s| s.stroke == Stroke::Dashed && s.color == success.lanes[1].color)
        .flat_map(|s| s.points.iter().copied())
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    // It stops answering 600 ms after turning into a black hole at 3 s, and is drawn at 0 % from there on.
    assert!(dashed.iter().all(|&(_, y)| y == 0.0));
    assert!(
        dashed.iter().any(|&(x, _)| (3.6..4.0).contains(&x)),
        "{dashed:?}"
    );
    assert!(dashed.iter().any(|&(x, _)| x == end), "{dashed:?}");
    // Its success line never reaches past the last bucket in which it answered.
    let line = success
        .series
        .iter()
        .find(|s| s.stroke == Stroke::Solid && s.color == success.lanes[1].color)
        .unwrap();
    let last = line
        .points
        .iter()
        .filter(|(_, y)| y.is_finite())
        .map(|&(x, _)| x)
        .fold(0.0, f64::max);
    assert!((3.5..4.0).contains(&last), "{last}");
}
