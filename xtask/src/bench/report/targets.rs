//! The "Targets" section: each goal at 16 nodes with its value and verdict, from criterion and from the
//! interleaved cross-check.

use super::super::{CASCADE, DEFAULT, DEFAULT_FIXED};
use super::data::{div, opt, verdict, worst, Data};
use super::{slot, Slot};

/// A target's value and verdict, as shown.
type Cell = (String, String);

/// A row: the target, then its criterion and interleaved cells.
type Row = (String, Cell, Cell);

pub(super) fn targets(d: &Data) -> Vec<Slot> {
    let rows = [
        one_pair(d),
        baselines(d),
        added_node(d),
        threads(d),
        limiters(d),
    ]
    .concat();
    let lines: Vec<String> = rows
        .into_iter()
        .map(|(a, (b, c), (e, f))| format!("| {a} | {b} | {c} | {e} | {f} |"))
        .collect();
    vec![slot("targets", lines.join("\n"))]
}

/// The cell of a value that meets its target at or below it.
fn at_most(v: Option<f64>, target: f64, unit: &str, f: impl Fn(f64) -> String) -> Cell {
    (opt(v, f), verdict(v, target, true, unit))
}

/// The cell of a value that meets its target at or above it.
fn at_least(v: Option<f64>, target: f64, unit: &str, f: impl Fn(f64) -> String) -> Cell {
    (opt(v, f), verdict(v, target, false, unit))
}

/// An interleaved cell that has no measure.
fn dash() -> Cell {
    ("—".to_string(), String::new())
}

fn x2(x: f64) -> String {
    format!("{x:.2}x")
}

fn ns1(x: f64) -> String {
    format!("{x:.1} ns")
}

fn ns2(x: f64) -> String {
    format!("{x:.2} ns")
}

/// One pair's cost: time, instructions, against the cascade, through the C ABI.
fn one_pair(d: &Data) -> Vec<Row> {
    let (t16, s16) = (d.pair(DEFAULT, 16), d.pair(CASCADE, 16));
    let rust = d.ns("c_abi/rust/16");
    vec![
        (
            "new default: time per pair ≤ 45 ns".into(),
            at_most(t16, 45.0, " ns", ns1),
            at_most(d.interleaved_p10(DEFAULT, 16), 45.0, " ns", ns1),
        ),
        (
            "new default: instructions per pair ≤ 700 (valgrind)".into(),
            at_most(d.instr(DEFAULT, 16), 700.0, "", |x| format!("{x:.0}")),
            dash(),
        ),
        (
            "new default pair ≤ 1.1x the cascade's pair (same run)".into(),
            at_most(div(t16, s16), 1.1, "x", x2),
            at_most(d.interleaved("weir-default.16.vs_cascade"), 1.1, "x", x2),
        ),
        (
            "the same with Fixed(100) instead of CIAD ≤ 1.1x the cascade's pair (where the cost comes from)".into(),
            at_most(div(d.pair(DEFAULT_FIXED, 16), s16), 1.1, "x", x2),
            at_most(d.interleaved("weir-default-fixed.16.vs_cascade"), 1.1, "x", x2),
        ),
        (
            "C pair ≤ 1.1x the Rust pair (`weir_balancer_acquire_with_rng` + `weir_balancer_release` through libweir.so, new default, same run)".into(),
            at_most(div(d.ns("c_abi/c-rng/16"), rust), 1.1, "x", x2),
            at_most(d.fact("c_abi.c-rng.vs_rust"), 1.1, "x", x2),
        ),
        (
            "the same with `weir_balancer_acquire` (the library's per-thread generator) ≤ 1.1x the Rust pair".into(),
            at_most(div(d.ns("c_abi/c-thread-rng/16"), rust), 1.1, "x", x2),
            at_most(d.fact("c_abi.c-thread-rng.vs_rust"), 1.1, "x", x2),
        ),
    ]
}

/// Sparse capacity, and the baselines.
fn baselines(d: &Data) -> Vec<Row> {
    let (t16, s16) = (d.pair(DEFAULT, 16), d.pair(CASCADE, 16));
    let mutex16 = d.pair("mutex", 16);
    // Scans cover the slots in use: three members cost the same in 3 slots as in 65,536.
    let sparse = |base: &str| {
        div(
            d.ns(&format!("capacity/{base}-3/65536")),
            d.ns(&format!("capacity/{base}-3/3")),
        )
    };
    vec![
        (
            "new default: 3 members at capacity 65,536 ≤ 1.5x capacity 3".into(),
            at_most(sparse("default"), 1.5, "x", x2),
            at_most(d.interleaved("sparse-default.3.vs_default"), 1.5, "x", x2),
        ),
        (
            "cascade: 3 members at capacity 65,536 ≤ 1.5x capacity 3".into(),
            at_most(sparse("cascade"), 1.5, "x", x2),
            at_most(d.interleaved("sparse-cascade.3.vs_cascade"), 1.5, "x", x2),
        ),
        (
            "new default: ≥ 3x faster than the Mutex baseline".into(),
            at_least(div(mutex16, t16), 3.0, "x", x2),
            at_least(d.interleaved("mutex.16.vs_default"), 3.0, "x", x2),
        ),
        (
            "cascade: ≥ 3x faster than the Mutex baseline (the same algorithm)".into(),
            at_least(div(mutex16, s16), 3.0, "x", x2),
            at_least(d.interleaved("mutex.16.vs_cascade"), 3.0, "x", x2),
        ),
        (
            "new default: ≥ 10x faster than tower Balance + PeakEwma".into(),
            at_least(div(d.pair("tower-peak-ewma", 16), t16), 10.0, "x", x2),
            at_least(
                d.interleaved("tower-peak-ewma.16.vs_default"),
                10.0,
                "x",
                x2,
            ),
        ),
    ]
}

/// What an added node costs either configuration, in time and in instructions.
fn added_node(d: &Data) -> Vec<Row> {
    let instructions = |x: f64| format!("{x:.1}");
    [("new default", DEFAULT), ("cascade", CASCADE)]
        .into_iter()
        .flat_map(|(label, name)| {
            [
                (
                    format!("{label}: ≤ 1 ns per added node (16 → 64)"),
                    at_most(d.pair_per_node(name), 1.0, " ns", ns2),
                    at_most(d.interleaved_per_node(name), 1.0, " ns", ns2),
                ),
                (
                    format!("{label}: ≤ 17 instructions per added node (16 → 64, valgrind)"),
                    at_most(d.instr_per_node(name), 17.0, "", instructions),
                    dash(),
                ),
            ]
        })
        .collect()
}

/// Two threads on one balancer, and allocations.
fn threads(d: &Data) -> Vec<Row> {
    let transfers = d.transfers(d.two_threads("default"), d.pair(DEFAULT, 16));
    let mut transfers = at_most(transfers, 5.0, "", |x| format!("{x:.1}"));
    if let (Some(o), None) = (d.one_transfer(), d.readable_transfer()) {
        transfers.1 = format!(
            "unreadable in this run: one transfer measured {o:.0} ns, so the two threads did not run at \
             once"
        );
    }
    let weir_allocs =
        d.t.iter()
            .filter(|(k, _)| {
                k.starts_with("allocations.weir-")
                    || k.starts_with("allocations.limiter-")
                    || k.starts_with("allocations.sparse-")
            })
            .filter_map(|(_, v)| v.parse::<f64>().ok())
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    vec![
        (
            "new default, 2 threads: ≤ 5 cache-line transfers per pair".into(),
            transfers,
            dash(),
        ),
        (
            "new default, 2 threads: ≥ 2x faster than the Mutex baseline".into(),
            at_least(
                div(d.two_threads("mutex"), d.two_threads("default")),
                2.0,
                "x",
                x2,
            ),
            dash(),
        ),
        (
            "zero allocations per pair (both configurations, the weighted family's every draw and success-rate model, every limiter on both)".into(),
            at_most(weir_allocs, 0.0, "", |x| format!("{x:.3}")),
            dash(),
        ),
    ]
}

/// What the worst limiter adds over a fixed limit, on either configuration.
fn limiters(d: &Data) -> Vec<Row> {
    let cell = |v: Option<(&str, f64)>| {
        let shown = v.map_or("—".into(), |(l, v)| {
            format!("{v:+.1} ns ({l}, the worst)")
        });
        (shown, verdict(v.map(|x| x.1), 10.0, true, " ns"))
    };
    vec![
        (
            "new default: each limiter adds ≤ 10 ns over Fixed".into(),
            cell(worst(|l| d.over_fixed("default", l))),
            cell(worst(|l| d.interleaved_over_fixed("default", l))),
        ),
        (
            "cascade: each limiter adds ≤ 10 ns over Fixed".into(),
            cell(worst(|l| d.over_fixed("cascade", l))),
            cell(worst(|l| d.interleaved_over_fixed("cascade", l))),
        ),
    ]
}
