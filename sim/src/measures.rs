//! The measures of recovery and herding, taken on a cell's per-second series against its scenario's
//! faults ([`Scenario::fault_windows`]):
//!
//! - **recovery**: after the last fault ends, the seconds until the fleet's success rate (1 s buckets, by
//!   the second a request arrived) is back within [`RECOVERY_POINTS`] of its level before the first fault
//!   and stays there for [`RECOVERY_HOLD`] seconds (or until the load ends); never, if not by then.
//!   Nothing to measure when a fault lasts until the load ends.
//! - **ramp-back**: for each server whose fault ended (a recovered node, or a node added later) and that
//!   then stays healthy for [`RAMP_HEALTHY`] seconds (or until the load ends, if that comes first: no other
//!   fault of it begins meanwhile), the seconds from the fault's end until the first of
//!   [`RAMP_HOLD`] consecutive seconds in each of which the server receives at least [`RAMP_SHARE`] of its
//!   fair share of the second's attempts (one over the servers in rotation); the slowest such server.
//!   Beside it, the *kept share*: the least, over those servers, of the share of the attempts each
//!   received over its healthy span (from the fault's end), over its fair share.
//! - **overload answers**: the 503 and 429 answers the policy's traffic drew from the servers.
//! - **peak concentration**: over the seconds in which every server is healthy (no fault window touches
//!   them) and enough attempts were sent to read a share ([`CONCENTRATION_MIN`] per server in rotation),
//!   the largest share of one second's attempts that one server received, over its fair share: 1.0 is a
//!   perfectly even spread, the number of servers is everything on one.

use crate::metrics::CellResult;
use crate::model::{Action, Scenario, SEC};

/// Recovered: within this many points of the level before the fault.
pub const RECOVERY_POINTS: f64 = 1.0;
/// ... for this many consecutive seconds.
pub const RECOVERY_HOLD: usize = 3;
/// Ramped back: at least this fraction of the fair share, in each of [`RAMP_HOLD`] consecutive seconds.
pub const RAMP_SHARE: f64 = 0.9;
/// ... for this many consecutive seconds.
pub const RAMP_HOLD: usize = 5;
/// A recovered server is measured only if it then stays healthy this long (or until the load ends).
pub const RAMP_HEALTHY: u64 = 30;
/// A second's concentration is read only with at least this many attempts per server in rotation.
pub const CONCENTRATION_MIN: u64 = 20;

/// A time to an event: `Some(seconds)`, or `None` for "never" (not by the end of the load).
pub type Seconds = Option<f64>;

/// One cell's recovery and herding measures (`None` where the scenario has nothing to measure).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Measures {
    /// Seconds to recover after the last fault; `None` when the scenario has no fault.
    pub recovery: Option<Seconds>,
    /// Seconds until the slowest recovered or new server holds its share; `None` when none recovers and
    /// stays healthy.
    pub ramp_back: Option<Seconds>,
    /// The least share a recovered or new server received over its healthy span, over its fair share;
    /// `None` when none recovers and stays healthy.
    pub kept_share: Option<f64>,
    /// 503 and 429 answers drawn.
    pub overload_answers: u64,
    /// Largest share of one healthy second over the fair share; `None` when no second qualifies.
    pub peak_concentration: Option<f64>,
}

impl Measures {
    /// The measures of `cell`, a run of `scenario`.
    pub fn of(scenario: &Scenario, cell: &CellResult) -> Measures {
        let faults = scenario.fault_windows();
        let load_end = scenario.load_end();
        // Whole seconds of load: a second is read only if the load covers it entirely.
        let seconds = (load_end / SEC) as usize;
        let fleet = &cell.fleet;
        // A fault that lasts until the load ends leaves nothing to recover within the run.
        let last_end = faults.iter().map(|f| f.to).max().filter(|&t| t < load_end);
        let recovery = last_end.map(|last_end| {
            let first_start = faults.iter().map(|f| f.from).min().unwrap_or(0);
            let before: Vec<f64> = (0..(first_start / SEC) as usize)
                .filter_map(|s| fleet.success_pct(s))
                .collect();
            let level = if before.is_empty() {
                100.0
            } else {
                before.iter().sum::<f64>() / before.len() as f64
            };
            let ok = |s: usize| {
                fleet
                    .success_pct(s)
                    .is_none_or(|p| p >= level - RECOVERY_POINTS)
            };
            let from = last_end.div_ceil(SEC) as usize;
            (from..seconds)
                .find(|&s| (s..(s + RECOVERY_HOLD).min(seconds)).all(ok))
                .map(|s| (s as f64 * SEC as f64 - last_end as f64).max(0.0) / SEC as f64)
        });
        let mut ramp_back: Option<Seconds> = None;
        let mut kept_share: Option<f64> = None;
        let total_at = |s: usize| -> u64 {
            cell.sent_per_second
                .iter()
                .map(|v| v.get(s).copied().unwrap_or(0))
                .sum()
        };
        for f in &faults {
            let Some(server) = f.server else { continue };
            if f.to >= load_end {
                // Still faulty when the load ends: nothing came back.
                continue;
            }
            // Healthy from the fault's end for `RAMP_HEALTHY` s, or until the load ends: no other fault of
            // this server starts in that span.
            let healthy_to = (f.to + RAMP_HEALTHY * SEC).min(load_end);
            if faults
                .iter()
                .any(|g| g.server == Some(server) && g.from >= f.to && g.from < healthy_to)
            {
                continue;
            }
            let sent = cell.sent_per_second.get(server);
            let mine = |s: usize| sent.and_then(|v| v.get(s)).copied().unwrap_or(0);
            let fair = |s: usize| 1.0 / in_rotation(scenario, s as u64 * SEC).max(1) as f64;
            let holds = |s: usize| {
                let total = total_at(s);
                total > 0 && mine(s) as f64 / total as f64 >= RAMP_SHARE * fair(s)
            };
            // Whole seconds from the fault's end to the end of the healthy span.
            let (from, to) = (
                f.to.div_ceil(SEC) as usize,
                ((healthy_to / SEC) as usize).min(seconds),
            );
            let back = (from..to).find(|&s| s + RAMP_HOLD <= to && (s..s + RAMP_HOLD).all(holds));
            let t = back.map(|s| (s as f64 * SEC as f64 - f.to as f64).max(0.0) / SEC as f64);
            ramp_back = Some(match (ramp_back, t) {
                (None, t) => t,
                (Some(None), _) | (_, None) => None,
                (Some(Some(a)), Some(b)) => Some(a.max(b)),
            });
            let (got, expected) = (from..to).fold((0.0, 0.0), |(g, e), s| {
                (g + mine(s) as f64, e + total_at(s) as f64 * fair(s))
            });
            if expected > 0.0 {
                let share = got / expected;
                kept_share = Some(kept_share.map_or(share, |k: f64| k.min(share)));
            }
        }
        let mut peak: Option<f64> = None;
        for s in 0..seconds {
            let (start, end) = (s as u64 * SEC, (s as u64 + 1) * SEC);
            if faults.iter().any(|f| f.from < end && f.to > start) {
                continue;
            }
            let n = in_rotation(scenario, start);
            let counts: Vec<u64> = cell
                .sent_per_second
                .iter()
                .map(|v| v.get(s).copied().unwrap_or(0))
                .collect();
            let total: u64 = counts.iter().sum();
            if n == 0 || total < CONCENTRATION_MIN * n as u64 {
                continue;
            }
            let max = counts.iter().copied().max().unwrap_or(0);
            let c = max as f64 * n as f64 / total as f64;
            peak = Some(peak.map_or(c, |p: f64| p.max(c)));
        }
        Measures {
            recovery,
            ramp_back,
            kept_share,
            overload_answers: cell.overload_answers,
            peak_concentration: peak,
        }
    }
}

/// The servers in rotation at `t`: present from the start or added, and not removed or draining.
pub fn in_rotation(scenario: &Scenario, t: u64) -> usize {
    let mut up: Vec<bool> = scenario.servers.iter().map(|s| s.present).collect();
    for &(at, action) in &scenario.actions {
        if at > t {
            continue;
        }
        let (i, on) = match action {
            Action::Add(i) | Action::Drain(i, false) => (i, true),
            Action::Remove(i) | Action::Drain(i, true) => (i, false),
        };
        if let Some(u) = up.get_mut(i) {
            *u = on;
        }
    }
    up.iter().filter(|&&u| u).count()
}

/// A time to an event as the tables show it: `1.5 s`, `never`, or `—` when there is nothing to measure.
pub fn seconds_text(v: Option<Seconds>) -> String {
    match v {
        None => "—".into(),
        Some(None) => "never".into(),
        Some(Some(s)) => format!("{s:.0} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::FleetSeries;
    use crate::model::{Behavior, ClientSpec, Fault, ServerSpec, MS};

    fn scenario(faults: Vec<Fault>) -> Scenario {
        Scenario {
            name: "t".into(),
            about: String::new(),
            servers: (0..4)
                .map(|i| ServerSpec::new(format!("s{i}"), Behavior::ok(MS)))
                .collect(),
            clients: ClientSpec::plain(1),
            arrivals: vec![crate::model::Arrivals::steady(1000.0, 20 * SEC)],
            actions: Vec::new(),
            abort: 30 * SEC,
            bucket: SEC,
            seed: 1,
            java: None,
            not_comparable: None,
            faults,
            at_capacity: true,
        }
    }

    /// A cell whose fleet succeeds `success[s]` % in second `s`, with the attempts per second given per
    /// server.
    fn cell(success: &[u64], sent: Vec<Vec<u64>>) -> CellResult {
        CellResult {
            fleet: FleetSeries {
                arrived: vec![100; success.len()],
                ended: vec![100; success.len()],
                succeeded: success.to_vec(),
                latency_ns: vec![0; success.len()],
            },
            sent_per_second: sent,
            overload_answers: 7,
            ..CellResult::default()
        }
    }

    #[test]
    fn recovery_waits_for_a_held_return_to_the_level_before() {
        let s = scenario(vec![Fault {
            server: Some(0),
            from: 5 * SEC,
            to: 8 * SEC,
        }]);
        // 100 % before; the fault; back at 11 s but a dip at 12 s; held from 13 s.
        let mut success = vec![100; 20];
        for (s, v) in [
            (5, 70),
            (6, 60),
            (7, 70),
            (8, 80),
            (9, 90),
            (10, 98),
            (12, 95),
        ] {
            success[s] = v;
        }
        let even = vec![vec![250; 20]; 4];
        let m = Measures::of(&s, &cell(&success, even));
        assert_eq!(m.recovery, Some(Some(5.0)), "13 s - 8 s");
        assert_eq!(m.overload_answers, 7);
        // Never back: the level stays 2 points down.
        let low: Vec<u64> = (0..20).map(|s| if s < 5 { 100 } else { 98 }).collect();
        let m = Measures::of(&s, &cell(&low, vec![vec![250; 20]; 4]));
        assert_eq!(m.recovery, Some(None));
        // A fault until the end of the load: nothing recovers within the run.
        let endless = scenario(vec![Fault {
            server: Some(0),
            from: 5 * SEC,
            to: 20 * SEC,
        }]);
        assert_eq!(
            Measures::of(&endless, &cell(&low, vec![vec![250; 20]; 4])).recovery,
            None
        );
        // No fault: nothing to measure.
        let m = Measures::of(
            &scenario(Vec::new()),
            &cell(&success, vec![vec![250; 20]; 4]),
        );
        assert_eq!((m.recovery, m.ramp_back), (None, None));
    }

    /// `sent[0]` given per second from 8 s (the fault's end), the other three servers sharing the rest of
    /// 1,000 attempts a second.
    fn recovering(from_8s: &[u64]) -> Vec<Vec<u64>> {
        let mut sent = vec![vec![250; 20]; 4];
        sent[0][5..8].fill(0);
        for (k, &v) in from_8s.iter().enumerate() {
            sent[0][8 + k] = v;
            for other in &mut sent[1..] {
                other[8 + k] = (1000 - v) / 3;
            }
        }
        sent
    }

    #[test]
    fn ramp_back_is_the_first_of_five_seconds_at_nine_tenths_of_the_fair_share() {
        let s = scenario(vec![Fault {
            server: Some(0),
            from: 5 * SEC,
            to: 8 * SEC,
        }]);
        // Nothing at 8 and 9 s, 150 of 999 at 10 s (0.6 of fair), then 225 (0.9) from 11 s on. The
        // load's whole seconds are 0..19 (its last arrival is just before 20 s).
        let mut back = vec![0, 0, 150];
        back.extend([225; 9]);
        let m = Measures::of(&s, &cell(&[100; 20], recovering(&back)));
        assert_eq!(m.ramp_back, Some(Some(3.0)), "11 s - 8 s");
        // The kept share over 8..19 s: (150 + 8 x 225) / (11 x 999 / 4).
        let kept = m.kept_share.unwrap();
        assert!(
            (kept - (150.0 + 8.0 * 225.0) / (11.0 * 249.75)).abs() < 1e-12,
            "{kept}"
        );
        // A dip below 0.9 at 13 s: the five seconds hold only from 14 s (14..19), 6 s after the end.
        let mut dip = back.clone();
        dip[5] = 200;
        let m = Measures::of(&s, &cell(&[100; 20], recovering(&dip)));
        assert_eq!(m.ramp_back, Some(Some(6.0)));
        // Another dip at 16 s: no five seconds in a row before the load ends.
        dip[8] = 200;
        let m = Measures::of(&s, &cell(&[100; 20], recovering(&dip)));
        assert_eq!(m.ramp_back, Some(None));
        // 0.8 of the share, which the old measure took as ramped back, is not.
        let m = Measures::of(&s, &cell(&[100; 20], recovering(&[200; 12])));
        assert_eq!(m.ramp_back, Some(None));
    }

    #[test]
    fn ramp_back_reads_only_a_server_that_stays_healthy() {
        // Server 0 fails again 9 s after its first fault ends, and gets nothing after its first fault
        // for good: that recovery is not measured; the last one, healthy until the load ends, is.
        let s = scenario(vec![
            Fault {
                server: Some(0),
                from: 2 * SEC,
                to: 3 * SEC,
            },
            Fault {
                server: Some(0),
                from: 12 * SEC,
                to: 13 * SEC,
            },
        ]);
        let mut sent = vec![vec![250; 20]; 4];
        sent[0][2..14].fill(0);
        for s in 2..14 {
            for other in &mut sent[1..] {
                other[s] = 1000 / 3;
            }
        }
        let m = Measures::of(&s, &cell(&[100; 20], sent));
        assert_eq!(m.ramp_back, Some(Some(1.0)), "14 s - 13 s");
    }

    #[test]
    fn concentration_reads_only_healthy_busy_seconds() {
        let s = scenario(vec![Fault {
            server: Some(0),
            from: 5 * SEC,
            to: 8 * SEC,
        }]);
        let mut sent = vec![vec![250; 20]; 4];
        // Everything on server 1 during the fault: not a healthy second, not counted.
        sent[1][5..8].fill(1000);
        // Too few attempts to read at 15 s.
        for v in &mut sent {
            v[15] = 1;
        }
        sent[2][15] = 50;
        // Half on one server at 3 s: twice its fair share.
        sent[3][3] = 500;
        for v in &mut sent[..3] {
            v[3] = 500 / 3;
        }
        let m = Measures::of(&s, &cell(&[100; 20], sent));
        let peak = m.peak_concentration.unwrap();
        assert!((peak - 500.0 * 4.0 / 998.0).abs() < 1e-9, "{peak}");
    }

    #[test]
    fn rotation_follows_the_actions() {
        let mut s = scenario(Vec::new());
        s.servers[3].present = false;
        s.actions = vec![
            (SEC, Action::Add(3)),
            (2 * SEC, Action::Drain(0, true)),
            (3 * SEC, Action::Remove(1)),
        ];
        let counts: Vec<usize> = (0..4).map(|t| in_rotation(&s, t * SEC)).collect();
        assert_eq!(counts, [3, 4, 3, 2]);
        assert_eq!(seconds_text(Some(Some(2.4))), "2 s");
        assert_eq!(seconds_text(Some(None)), "never");
        assert_eq!(seconds_text(None), "—");
    }
}
