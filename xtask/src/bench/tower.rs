//! The weir-tower part of `cargo xtask bench`: the run of `benches/benches/tower_service.rs` (weir-tower's
//! `Balance` against tower's `Balance` with `PeakEwma` and `PendingRequests`, criterion then interleaved
//! rounds) and the values of its section of `benches/RESULTS.md` (its prose is in `report/template.md`).

use super::facts::Facts;
use super::report::{slot, Slot};

/// The bench target.
pub(super) const BENCH: &str = "tower_service";

/// Node counts the bench measures.
const NODES: [usize; 3] = [3, 16, 64];

/// The goal: weir-tower's request at least this many times cheaper than `Balance<PeakEwma>`'s.
const GOAL: f64 = 3.0;

fn num(t: &Facts, key: &str) -> Option<f64> {
    t.get(key)?.parse().ok()
}

/// A fact of the interleaved rounds with `n` services.
fn fact(t: &Facts, n: usize, key: &str) -> Option<f64> {
    num(t, &format!("tower_service.{n}.{key}"))
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

/// The slots of its section of the report, from the run's criterion medians
/// (`median.tower-service/..`) and facts (`tower_service.{n}.*`).
pub(super) fn slots(t: &Facts) -> Vec<Slot> {
    let p10 = |name: &str| {
        NODES
            .iter()
            .map(|&n| cell(fact(t, n, &format!("{name}_p10_ns")), |v| format!("{v:.0}")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    vec![
        slot("tower_goal", GOAL.to_string()),
        slot("tower", rows(t)),
        slot("tower_p10_weir_tower", p10("weir_tower")),
        slot("tower_p10_peak_ewma", p10("peak_ewma")),
        slot("tower_p10_pending", p10("pending")),
    ]
}

/// The table's rows, one per node count.
fn rows(t: &Facts) -> String {
    let median = |name: &str, n: usize| num(t, &format!("median.tower-service/{name}/{n}"));
    let row = |n: usize| {
        let (weir, ewma, pending) = (
            median("weir-tower", n),
            median("tower-peak-ewma", n),
            median("tower-pending", n),
        );
        let over = |base: Option<f64>| match (base, weir) {
            (Some(b), Some(w)) if w > 0.0 => Some(b / w),
            _ => None,
        };
        let interleaved = fact(t, n, "peak_ewma_over_weir_tower");
        let worst = match (over(ewma), interleaved) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        format!(
            "| {n} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(weir, |v| format!("{v:.0}")),
            cell(ewma, |v| format!("{v:.0}")),
            cell(pending, |v| format!("{v:.0}")),
            cell(over(ewma), times),
            cell(interleaved, times),
            verdict(worst),
            cell(over(pending), times),
            cell(fact(t, n, "pending_over_weir_tower"), times),
        )
    };
    NODES.map(row).join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slots_read_medians_and_facts() {
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
        let slots = slots(&t);
        let value = |name: &str| {
            slots
                .iter()
                .find(|(n, _)| *n == name)
                .and_then(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        assert_eq!(
            value("tower"),
            "| 3 | — | — | — | — | — | not measured | — | — |\n\
             | 16 | 100 | 350 | 150 | 3.50x | 2.90x | missed | 1.50x | — |\n\
             | 64 | — | — | — | — | — | not measured | — | — |"
        );
        assert_eq!(value("tower_p10_weir_tower"), "—, 90, —");
        assert_eq!(value("tower_goal"), "3");
    }
}
