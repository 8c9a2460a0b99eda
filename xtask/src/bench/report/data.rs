//! What the report reads from the facts ([`Data`]: measures by benchmark id, and the measures derived
//! from them that several sections show) and how it writes numbers.

use super::super::facts::Facts;
use super::super::{CASCADE, DEFAULT_FIXED};
use super::LIMITERS;

/// A one-way transfer above this is the scheduler's doing, not the cache's (see
/// [`Data::readable_transfer`]).
const MAX_PLAUSIBLE_TRANSFER_NS: f64 = 1_000.0;

/// Reads facts by key: `t` the timing runs', `i` the instruction counts'.
pub(super) struct Data<'a> {
    pub(super) t: &'a Facts,
    pub(super) i: &'a Facts,
}

impl Data<'_> {
    /// The criterion median of benchmark `id`.
    pub(super) fn ns(&self, id: &str) -> Option<f64> {
        self.t.get(&format!("median.{id}"))?.parse().ok()
    }

    /// The criterion median of workload `name`'s pair with `n` nodes.
    pub(super) fn pair(&self, name: &str, n: usize) -> Option<f64> {
        self.ns(&format!("pair/{name}/{n}"))
    }

    /// Instructions per pair of workload `name` with `n` nodes.
    pub(super) fn instr(&self, name: &str, n: usize) -> Option<f64> {
        self.i.get(&format!("instr.{name}.{n}"))?.parse().ok()
    }

    /// A number the timing runs' benches reported.
    pub(super) fn fact(&self, key: &str) -> Option<f64> {
        self.t.get(key)?.parse().ok()
    }

    /// A fact of the interleaved cross-check (`pairs interleave`). Times from interleaved rounds are their
    /// 10th percentiles (the rounds no neighbour disturbed); ratios are medians over rounds of same-round
    /// ratios.
    pub(super) fn interleaved(&self, key: &str) -> Option<f64> {
        self.fact(&format!("interleaved.{key}"))
    }

    /// The interleaved time of workload `name`'s pair with `n` nodes.
    pub(super) fn interleaved_p10(&self, name: &str, n: usize) -> Option<f64> {
        self.interleaved(&format!("{name}.{n}.p10_ns"))
    }

    /// Callgrind's inclusive instructions per pair in `func`, for workload `name` with `n` nodes.
    pub(super) fn breakdown(&self, name: &str, n: usize, func: &str) -> Option<f64> {
        self.i
            .get(&format!("breakdown.{name}.{n}.{func}"))?
            .parse()
            .ok()
    }

    /// What one added node costs workload `name`'s pair from 16 to 64 nodes, in ns.
    pub(super) fn pair_per_node(&self, name: &str) -> Option<f64> {
        per_node(self.pair(name, 16), self.pair(name, 64))
    }

    /// The same in instructions.
    pub(super) fn instr_per_node(&self, name: &str) -> Option<f64> {
        per_node(self.instr(name, 16), self.instr(name, 64))
    }

    /// The same from the interleaved times.
    pub(super) fn interleaved_per_node(&self, name: &str) -> Option<f64> {
        per_node(
            self.interleaved_p10(name, 16),
            self.interleaved_p10(name, 64),
        )
    }

    /// What limiter `l` adds to configuration `base`'s pair over its fixed limit (criterion).
    pub(super) fn over_fixed(&self, base: &str, l: &str) -> Option<f64> {
        Some(
            self.ns(&format!("limiter/{base}-{l}/16"))?
                - self.ns(&format!("limiter/{base}-fixed/16"))?,
        )
    }

    /// The same from the interleaved times, over the configuration's own fixed-limit pair.
    pub(super) fn interleaved_over_fixed(&self, base: &str, l: &str) -> Option<f64> {
        if l == "fixed" {
            return Some(0.0);
        }
        let fixed = if base == "default" {
            DEFAULT_FIXED
        } else {
            CASCADE
        };
        Some(
            self.interleaved_p10(&format!("limiter-{base}-{l}"), 16)?
                - self.interleaved_p10(fixed, 16)?,
        )
    }

    /// The criterion median of two threads on one balancer of configuration `name`, per pair of the timed
    /// thread.
    pub(super) fn two_threads(&self, name: &str) -> Option<f64> {
        self.ns(&format!("threads/{name}-t2/16"))
    }

    /// One cache-line transfer between two cores: half the round trip's 10th percentile over batches.
    pub(super) fn one_transfer(&self) -> Option<f64> {
        self.fact("threads.round_trip.p10_ns").map(|rt| rt / 2.0)
    }

    /// [`Self::one_transfer`] when two-thread times can be read with it. A transfer between two running
    /// cores takes tens of nanoseconds; a "transfer" of microseconds means the two threads were not running
    /// at once (the machine was busy), and no pair can be read with it.
    pub(super) fn readable_transfer(&self) -> Option<f64> {
        self.one_transfer()
            .filter(|&o| o < MAX_PLAUSIBLE_TRANSFER_NS)
    }

    /// Cache-line transfers per pair: what the second thread adds to a pair, in transfers.
    pub(super) fn transfers(&self, two: Option<f64>, one: Option<f64>) -> Option<f64> {
        match (two, one, self.readable_transfer()) {
            (Some(t2), Some(t1), Some(ow)) if ow > 0.0 => Some((t2 - t1) / ow),
            _ => None,
        }
    }
}

/// `a / b`, when both are there and `b` is positive.
pub(super) fn div(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

/// The cost of one added node from 16 (`a`) to 64 (`b`) nodes.
pub(super) fn per_node(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    a.zip(b).map(|(a, b)| (b - a) / 48.0)
}

/// The limiter (other than fixed) for which `f` is largest, with that value.
pub(super) fn worst(f: impl Fn(&str) -> Option<f64>) -> Option<(&'static str, f64)> {
    LIMITERS[1..]
        .iter()
        .filter_map(|l| Some((*l, f(l)?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// Nanoseconds: no decimal from 100 up, one below, a dash when not measured.
pub(super) fn ns(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
        None => "—".into(),
    }
}

/// `v` formatted by `f`, or a dash when not measured.
pub(super) fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "—".into(), f)
}

/// A whole number, or a dash.
pub(super) fn count(v: Option<f64>) -> String {
    opt(v, |v| format!("{v:.0}"))
}

/// A difference, signed, with `decimals` decimals, or a dash.
pub(super) fn signed(v: Option<f64>, decimals: usize) -> String {
    opt(v, |x| format!("{x:+.decimals$}"))
}

/// A ratio as `1.23x`, or a dash.
pub(super) fn times(v: Option<f64>) -> String {
    opt(v, |x| format!("{x:.2}x"))
}

/// `weir / baseline` and how many times faster weir is.
pub(super) fn ratio(weir: Option<f64>, base: Option<f64>) -> String {
    match (weir, base) {
        (Some(w), Some(b)) if w > 0.0 && b > 0.0 => format!("{:.2} ({:.1}x)", w / b, b / w),
        _ => "—".into(),
    }
}

/// A target's verdict: `at_most` (lower is better) or not (higher is better).
pub(super) fn verdict(value: Option<f64>, target: f64, at_most: bool, unit: &str) -> String {
    let Some(v) = value else {
        return "not measured".into();
    };
    let met = if at_most { v <= target } else { v >= target };
    if met {
        "**met**".into()
    } else {
        let by = (v - target).abs();
        let pct = by / target * 100.0;
        format!("missed by {by:.1}{unit} ({pct:.0} %)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_the_tables_show_them() {
        assert_eq!(ns(Some(99.94)), "99.9");
        assert_eq!(ns(Some(100.0)), "100");
        assert_eq!(ns(None), "—");
        assert_eq!(signed(Some(2.0), 1), "+2.0");
        assert_eq!(signed(Some(-0.126), 2), "-0.13");
        assert_eq!(ratio(Some(50.0), Some(200.0)), "0.25 (4.0x)");
        assert_eq!(ratio(Some(0.0), Some(200.0)), "—");
        assert_eq!(verdict(Some(45.0), 45.0, true, " ns"), "**met**");
        assert_eq!(
            verdict(Some(50.0), 40.0, true, " ns"),
            "missed by 10.0 ns (25 %)"
        );
        assert_eq!(verdict(Some(2.5), 3.0, false, "x"), "missed by 0.5x (17 %)");
    }
}
