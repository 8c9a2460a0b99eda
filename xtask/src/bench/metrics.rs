//! The metrics part of `cargo xtask bench`: the run of `benches/benches/metrics.rs` (the new default's
//! pair with a thread scraping the balancer's metrics every 10 ms, against the same pair with that thread
//! idle: criterion, then interleaved rounds) and the values of its row in `benches/RESULTS.md` (its prose
//! is in `report/template.md`).

use super::facts::Facts;
use super::report::{slot, Slot};

/// The bench target.
pub(super) const BENCH: &str = "metrics";

fn num(t: &Facts, key: &str) -> Option<f64> {
    t.get(key)?.parse().ok()
}

fn cell(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "—".into(), f)
}

/// The slots of its section of the report, from the run's criterion medians (`median.metrics/..`) and
/// facts (`metrics.*`).
pub(super) fn slots(t: &Facts) -> Vec<Slot> {
    let (none, scrape) = (
        num(t, "median.metrics/none/16"),
        num(t, "median.metrics/scrape-10ms/16"),
    );
    let ratio = match (none, scrape) {
        (Some(n), Some(s)) if n > 0.0 => Some(s / n),
        _ => None,
    };
    let fact = |key: &str| num(t, &format!("metrics.{key}"));
    let row = format!(
        "| 16 | {} | {} | {} | {} | {} | {} | {} | {} |",
        cell(none, |v| format!("{v:.0}")),
        cell(scrape, |v| format!("{v:.0}")),
        cell(ratio, |v| format!("{v:.2}x")),
        cell(fact("none_p10_ns"), |v| format!("{v:.0}")),
        cell(fact("scrape_p10_ns"), |v| format!("{v:.0}")),
        cell(fact("scrape_over_none"), |v| format!("{v:.2}x")),
        cell(fact("scrape_us"), |v| format!("{v:.0}")),
        cell(fact("scrape_bytes"), |v| format!("{v:.0}")),
    );
    vec![slot("metrics", row)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_row_reads_medians_and_facts() {
        let mut t = Facts::new();
        for (k, v) in [
            ("median.metrics/none/16", "100.0"),
            ("median.metrics/scrape-10ms/16", "103.0"),
            ("metrics.scrape_over_none", "1.01"),
            ("metrics.scrape_us", "73.26"),
        ] {
            t.insert(k.into(), v.into());
        }
        assert_eq!(
            slots(&t),
            vec![(
                "metrics",
                Some("| 16 | 100 | 103 | 1.03x | — | — | 1.01x | 73 | — |".to_string())
            )]
        );
        assert_eq!(
            slots(&Facts::new())[0].1.as_deref(),
            Some("| 16 | — | — | — | — | — | — | — | — |")
        );
    }
}
