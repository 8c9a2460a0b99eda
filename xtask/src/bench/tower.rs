//! The weir-tower part of `cargo xtask bench`: the run of `benches/benches/tower_service.rs` (weir-tower's
//! `Balance` against tower's `Balance` with `PeakEwma` and `PendingRequests`, criterion then interleaved
//! rounds) and its section of `benches/RESULTS.md`.

use super::Facts;
use std::fmt::Write as _;

/// The bench target.
pub(super) const BENCH: &str = "tower_service";

/// Node counts the bench measures.
const NODES: [usize; 3] = [3, 16, 64];

/// The goal: weir-tower's request at least this many times cheaper than `Balance<PeakEwma>`'s.
const GOAL: f64 = 3.0;

fn num(t: &Facts, key: &str) -> Option<f64> {
    t.get(key)?.parse().ok()
}

fn cell(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "—".into(), f)
}

fn times(v: f64) -> String {
    format!("{v:.2}x")
}

fn verdict(v: Option<f64>) -> &'static str {
    match v {
        Some(v) if v >= GOAL => "**met**",
        Some(_) => "missed",
        None => "not measured",
    }
}

/// The section, from the run's criterion medians (`median.tower-service/..`) and facts
/// (`tower_service.{n}.*`).
pub(super) fn section(t: &Facts) -> String {
    let mut w = String::new();
    let median = |name: &str, n: usize| num(t, &format!("median.tower-service/{name}/{n}"));
    let fact = |n: usize, key: &str| num(t, &format!("tower_service.{n}.{key}"));
    let _ = writeln!(w, "\n## weir-tower: a request through the tower service\n");
    let _ = writeln!(
        w,
        "One request is what a tower caller does: `poll_ready`, `call`, and the completion of the oldest of 8 \
         response futures in flight, over `n` always-ready services, without a runtime \
         (`benches/benches/tower_service.rs`). weir-tower is `weir_tower::Balance` with `Config::default()`; \
         tower is 0.5's p2c `Balance` over a `ServiceList`, with `PeakEwma` (linkerd's defaults) or \
         `PendingRequests`, driven exactly as `pair/tower-*` above. *criterion*: medians, ns per request; \
         *interleaved*: the three alternate in rounds of 10,000 requests, each ratio the median over rounds of \
         the per-round ratio, each time the 10th percentile over rounds. Goal: weir-tower's request at least \
         {GOAL}x cheaper than `Balance<PeakEwma>`'s.\n"
    );
    let _ = writeln!(
        w,
        "| n | weir-tower | PeakEwma | PendingRequests | PeakEwma / weir-tower, criterion | interleaved | goal | \
         PendingRequests / weir-tower, criterion | interleaved |\n|---:|---:|---:|---:|---:|---:|---|---:|---:|"
    );
    for n in NODES {
        let (weir, ewma, pending) = (
            median("weir-tower", n),
            median("tower-peak-ewma", n),
            median("tower-pending", n),
        );
        let over = |base: Option<f64>| match (base, weir) {
            (Some(b), Some(w)) if w > 0.0 => Some(b / w),
            _ => None,
        };
        let interleaved = fact(n, "peak_ewma_over_weir_tower");
        let worst = match (over(ewma), interleaved) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let _ = writeln!(
            w,
            "| {n} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(weir, |v| format!("{v:.0}")),
            cell(ewma, |v| format!("{v:.0}")),
            cell(pending, |v| format!("{v:.0}")),
            cell(over(ewma), times),
            cell(interleaved, times),
            verdict(worst),
            cell(over(pending), times),
            cell(fact(n, "pending_over_weir_tower"), times),
        );
    }
    let p10 = |name: &str| {
        NODES
            .iter()
            .map(|&n| cell(fact(n, &format!("{name}_p10_ns")), |v| format!("{v:.0}")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        w,
        "\nInterleaved 10th-percentile times (ns per request, n = 3, 16, 64): weir-tower {}; PeakEwma {}; \
         PendingRequests {}. The goal column is met when both measures reach it.\n",
        p10("weir_tower"),
        p10("peak_ewma"),
        p10("pending"),
    );
    let _ = writeln!(
        w,
        "weir-tower's request is weir's acquire and release plus two reads of the monotonic clock (tower's \
         `PeakEwma` reads it four times) and the service's plumbing. tower's p2c reads two services whatever \
         `n` is; weir's scan reads two words of every member (about 1 ns each, see \"per added node\" above), \
         so the edge narrows as `n` grows. `PendingRequests` (an `Arc` count per service, no clock) never learns \
         that a node fails. A request through weir-tower allocates nothing \
         (`integrations/tower/tests/alloc.rs`); tower's `Balance` allocates once."
    );
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_reads_medians_and_facts() {
        let mut t = Facts::new();
        for (k, v) in [
            ("median.tower-service/weir-tower/16", "100.0"),
            ("median.tower-service/tower-peak-ewma/16", "350.0"),
            ("median.tower-service/tower-pending/16", "150.0"),
            ("tower_service.16.peak_ewma_over_weir_tower", "2.9"),
            ("tower_service.16.weir_tower_p10_ns", "90.4"),
        ] {
            t.insert(k.into(), v.into());
        }
        let s = section(&t);
        assert!(
            s.contains("| 16 | 100 | 350 | 150 | 3.50x | 2.90x | missed | 1.50x | — |"),
            "{s}"
        );
        assert!(
            s.contains("| 3 | — | — | — | — | — | not measured | — | — |"),
            "{s}"
        );
        assert!(s.contains("weir-tower —, 90, —;"), "{s}");
    }
}
