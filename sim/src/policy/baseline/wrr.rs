//! Weighted round robin from backend load reports.

use weir::Rng;

use super::members::Members;
use crate::policy::{Balance, Completion, LoadReport, Pick, ServerId};

const SECOND: u64 = 1_000_000_000;
/// The scaled weight of the heaviest server.
const MAX_WEIGHT: u16 = u16::MAX;
/// The per-index offset of the stride scheduler (half of [`MAX_WEIGHT`]).
const OFFSET: u64 = MAX_WEIGHT as u64 / 2;

/// [`WeightedRoundRobin`]'s parameters: gRPC A58's, with its defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WrrConfig {
    /// A server's weight is ignored until its reports have been non-empty for this long (default 10 s).
    pub blackout_period_ns: u64,
    /// A weight not refreshed by a report for this long is dropped (default 3 min); the blackout then starts
    /// again with the next report.
    pub weight_expiration_period_ns: u64,
    /// How often the schedule is rebuilt from the weights (default 1 s; gRPC's minimum of 100 ms applies).
    pub weight_update_period_ns: u64,
    /// How much the error rate counts as utilization: `weight = qps / (utilization + eps/qps · penalty)`
    /// (default 1.0).
    pub error_utilization_penalty: f64,
}

impl Default for WrrConfig {
    /// Blackout 10 s, expiration 3 min, update period 1 s, penalty 1.0.
    fn default() -> Self {
        WrrConfig {
            blackout_period_ns: 10 * SECOND,
            weight_expiration_period_ns: 180 * SECOND,
            weight_update_period_ns: SECOND,
            error_utilization_penalty: 1.0,
        }
    }
}

/// One server's weight as its reports set it (grpc-go's `endpointWeight`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Weight {
    /// The weight computed from the last non-empty report.
    value: f64,
    /// Since when reports have been non-empty (the blackout's start).
    non_empty_since: Option<u64>,
    /// When the last non-empty report came.
    last_updated: Option<u64>,
}

impl Weight {
    /// Takes a report. An empty one (zero utilization or qps) is ignored, as gRPC does; so is one that is not
    /// a finite positive number, and an unusable error rate (negative, NaN, infinite) counts as zero.
    fn on_report(&mut self, report: &LoadReport, penalty: f64, now: u64) {
        let (utilization, qps) = (report.utilization, report.qps);
        if !(utilization.is_finite() && utilization > 0.0 && qps.is_finite() && qps > 0.0) {
            return;
        }
        let error_rate = if report.eps.is_finite() && report.eps > 0.0 {
            report.eps / qps
        } else {
            0.0
        };
        let value = qps / (utilization + error_rate * penalty);
        if !(value.is_finite() && value > 0.0) {
            return;
        }
        self.value = value;
        self.last_updated = Some(now);
        self.non_empty_since.get_or_insert(now);
    }

    /// The weight to schedule with now, 0 when unusable: never reported, expired (which also restarts the
    /// blackout), or still in blackout.
    fn usable(&mut self, now: u64, config: &WrrConfig) -> f64 {
        let Some(last) = self.last_updated else {
            return 0.0;
        };
        if now.saturating_sub(last) >= config.weight_expiration_period_ns {
            self.non_empty_since = None;
            return 0.0;
        }
        match self.non_empty_since {
            Some(since) if now.saturating_sub(since) >= config.blackout_period_ns => self.value,
            _ => 0.0,
        }
    }
}

/// gRPC's static stride scheduler: the server at `i` of `n` is taken for sequence number `s` when, with
/// `i = s mod n` and `gen = s div n`, `(w_i·gen + i·32767) mod 65535 ≥ 65535 − w_i`; otherwise the next `s` is
/// tried. Server `i` is thus taken `w_i` times per 65535 generations, spread evenly, and the `i·32767` offset
/// keeps equal-weight neighbours from skipping the same generations. `weights` must hold a 65535.
fn stride_next(weights: &[u16], sequence: &mut u32) -> usize {
    let n = weights.len() as u64;
    loop {
        let s = u64::from(*sequence);
        *sequence = sequence.wrapping_add(1);
        let index = s % n;
        let generation = s / n;
        let weight = u64::from(weights[index as usize]);
        let max = u64::from(MAX_WEIGHT);
        if (weight * generation + index * OFFSET) % max >= max - weight {
            return index as usize;
        }
    }
}

/// Weighted round robin from backend-reported load: gRPC's `weighted_round_robin` ([A58], with the static
/// stride scheduler of grpc-go and grpc-c++, [grpc-go's][stride]; also [Envoy's client-side WRR][envoy]) and
/// the [SRE book]'s "Weighted Round Robin" (ch. 20).
///
/// Each answer's [`LoadReport`] sets its server's weight `qps / (utilization + eps/qps · penalty)`: requests
/// served per unit of utilization, with errors counted as extra utilization so a server failing fast does
/// not look cheap. A weight counts only after the server's reports have been non-empty for the blackout
/// period (10 s), so one lucky report from a fresh server cannot pull all traffic, and it lapses after the
/// expiration period (3 min) without reports. Every update period (1 s) the schedule is rebuilt from the
/// weights, on the first pick that finds it due; it is also rebuilt at once when the set of servers not in
/// lame duck changes (gRPC builds a new picker on every subchannel state change). A server without a usable
/// weight gets the mean of the usable ones; with fewer than two usable weights, or when all scaled weights
/// are equal, the schedule is plain round robin. Weights are scaled so the largest is 65535 and picked with
/// the stride scheduler (see `stride_next`), whose sequence counter starts at a per-client random value drawn
/// from the seed (gRPC starts each picker at a random index).
///
/// Only servers not in lame duck are scheduled (gRPC schedules READY subchannels only). Leaving lame duck
/// restarts the server's blackout, as a subchannel becoming READY does in gRPC. Reports with zero, negative,
/// NaN or infinite utilization or qps are ignored. It refuses only when no server can be used, and then
/// fails fast.
///
/// [A58]: https://github.com/grpc/proposal/blob/master/A58-client-side-weighted-round-robin-lb-policy.md
/// [stride]: https://github.com/grpc/grpc-go/blob/dda86dbd9cecb8b35b58c73d507d81d67761205f/balancer/weightedroundrobin/scheduler.go
/// [envoy]: https://www.envoyproxy.io/docs/envoy/v1.37.0/api-v3/extensions/load_balancing_policies/client_side_weighted_round_robin/v3/client_side_weighted_round_robin.proto
/// [SRE book]: https://sre.google/sre-book/load-balancing-datacenter/
#[derive(Debug)]
pub struct WeightedRoundRobin {
    config: WrrConfig,
    members: Members<Weight>,
    /// The stride scheduler's sequence number.
    sequence: u32,
    /// Scaled weights, one per usable server in order; empty for round robin.
    schedule: Vec<u16>,
    /// Scratch: the raw weights during a rebuild.
    raw: Vec<f64>,
    /// When the schedule is due for a rebuild.
    next_update: u64,
}

impl WeightedRoundRobin {
    /// gRPC's weighted round robin with A58's defaults; `seed` sets the start of the sequence.
    pub fn new(seed: u64) -> Self {
        Self::with_config(seed, WrrConfig::default())
    }

    /// With `config` (the update period is at least 100 ms, as gRPC enforces).
    pub fn with_config(seed: u64, config: WrrConfig) -> Self {
        WeightedRoundRobin {
            config: WrrConfig {
                weight_update_period_ns: config.weight_update_period_ns.max(SECOND / 10),
                ..config
            },
            members: Members::new(),
            sequence: Rng::with_seed(seed).u32(..),
            schedule: Vec::new(),
            raw: Vec::new(),
            next_update: 0,
        }
    }

    /// Attempts picked and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.members.in_flight()
    }

    /// Rebuilds the schedule from the weights as of `now` (grpc-go's `newScheduler`).
    fn rebuild(&mut self, now: u64) {
        self.next_update = now.saturating_add(self.config.weight_update_period_ns);
        self.schedule.clear();
        self.raw.clear();
        let config = self.config;
        let (nodes, usable) = self.members.usable_nodes_mut();
        self.raw
            .extend(usable.iter().map(|&i| nodes[i].state.usable(now, &config)));
        let n = self.raw.len();
        let zeros = self.raw.iter().filter(|&&w| w == 0.0).count();
        if n < 2 || zeros >= n - 1 {
            return;
        }
        let sum: f64 = self.raw.iter().sum();
        let max = self.raw.iter().copied().fold(0.0, f64::max);
        let scale = f64::from(MAX_WEIGHT) / max;
        // Float-to-int `as` saturates; every scaled value is in [0, 65535] anyway.
        let mean = (scale * sum / (n - zeros) as f64).round() as u16;
        let mut all_equal = true;
        for &w in &self.raw {
            let scaled = if w == 0.0 {
                mean
            } else {
                let scaled = (scale * w).round() as u16;
                all_equal &= scaled == mean;
                scaled
            };
            self.schedule.push(scaled);
        }
        if all_equal {
            self.schedule.clear();
        }
    }
}

impl Balance for WeightedRoundRobin {
    fn pick(&mut self, now: u64, _rng: &mut Rng) -> Option<Pick> {
        if self.members.usable().is_empty() {
            return None;
        }
        if now >= self.next_update {
            self.rebuild(now);
        }
        let usable = self.members.usable();
        let slot = if self.schedule.len() == usable.len() {
            stride_next(&self.schedule, &mut self.sequence)
        } else {
            let slot = self.sequence as usize % usable.len();
            self.sequence = self.sequence.wrapping_add(1);
            slot
        };
        let index = usable[slot];
        Some(self.members.start(index, ()))
    }

    fn complete(&mut self, pick: Pick, done: &Completion, now: u64) {
        let (Some((index, ())), Some(report)) = (self.members.finish(pick.tag), done.report) else {
            return;
        };
        let penalty = self.config.error_utilization_penalty;
        self.members.nodes_mut()[index]
            .state
            .on_report(&report, penalty, now);
    }

    fn set_servers(&mut self, servers: &[ServerId], now: u64) {
        self.members.set(servers, |_| Weight::default());
        self.rebuild(now);
    }

    fn set_draining(&mut self, server: ServerId, draining: bool, now: u64) {
        if self.members.set_draining(server, draining) {
            if !draining {
                if let Some(i) = self.members.position(server) {
                    self.members.nodes_mut()[i].state.non_empty_since = None;
                }
            }
            self.rebuild(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Reply;

    const MS: u64 = 1_000_000;

    fn report(utilization: f64, qps: f64, eps: f64) -> Completion {
        Completion {
            reply: Reply::Status(200),
            rtt_ns: MS,
            report: Some(LoadReport {
                utilization,
                qps,
                eps,
            }),
        }
    }

    /// Picks `count` times, one every `step`, starting at `start`; each attempt is answered at once with its
    /// server's report (`None`: no report). Returns the picks per server.
    fn run(
        p: &mut WeightedRoundRobin,
        reports: &[Option<Completion>],
        start: u64,
        step: u64,
        count: u64,
    ) -> Vec<u32> {
        let mut rng = Rng::with_seed(0);
        let mut counts = vec![0; reports.len()];
        for k in 0..count {
            let now = start + k * step;
            let pick = p.pick(now, &mut rng).unwrap();
            counts[pick.server] += 1;
            let done = reports[pick.server].unwrap_or(Completion {
                report: None,
                ..report(0.0, 0.0, 0.0)
            });
            p.complete(pick, &done, now);
        }
        counts
    }

    #[test]
    fn stride_scheduler_matches_a_hand_worked_example() {
        // Raw weights 2 and 1 scale to 65535 and round(32767.5) = 32768.
        //   s=0: i=0 gen=0, w=65535 always taken.
        //   s=1: i=1 gen=0: (0 + 32767) mod 65535 = 32767 ≥ 65535 − 32768 = 32767 → taken.
        //   s=2: i=0.
        //   s=3: i=1 gen=1: (32768 + 32767) mod 65535 = 0 < 32767 → skipped.
        //   s=4: i=0.
        //   s=5: i=1 gen=2: (65536 + 32767) mod 65535 = 32768 → taken.
        //   s=6: i=0. s=7: i=1 gen=3: 131071 mod 65535 = 1 → skipped. s=8: i=0.
        let weights = [65535, 32768];
        let mut sequence = 0;
        let picks: Vec<usize> = (0..7)
            .map(|_| stride_next(&weights, &mut sequence))
            .collect();
        assert_eq!(picks, [0, 1, 0, 0, 1, 0, 0]);
        assert_eq!(sequence, 9);

        let mut p = WeightedRoundRobin::new(0);
        p.set_servers(&[0, 1], 0);
        p.members.nodes_mut()[0]
            .state
            .on_report(&report(0.5, 1.0, 0.0).report.unwrap(), 1.0, 0);
        p.members.nodes_mut()[1]
            .state
            .on_report(&report(1.0, 1.0, 0.0).report.unwrap(), 1.0, 0);
        p.rebuild(10 * SECOND);
        assert_eq!(p.schedule, weights);
    }

    #[test]
    fn shares_follow_the_weights_after_the_blackout() {
        // Equal qps, utilization 0.2 against 0.8: weights 500 and 125, 4:1.
        let mut p = WeightedRoundRobin::new(11);
        p.set_servers(&[0, 1], 0);
        let reports = [Some(report(0.2, 100.0, 0.0)), Some(report(0.8, 100.0, 0.0))];
        // During the blackout: plain round robin.
        let early = run(&mut p, &reports, 0, 10 * MS, 900);
        assert_eq!(early, [450, 450]);
        // The weights count from 10 s after the first report, from the first rebuild after that (≤ 11 s).
        let late = run(&mut p, &reports, 11 * SECOND, MS, 5000);
        let ratio = f64::from(late[0]) / f64::from(late[1]);
        assert!((ratio - 4.0).abs() < 0.1, "{late:?}");
        assert_eq!(p.schedule, [65535, 16384]);
    }

    #[test]
    fn errors_count_as_utilization() {
        let mut w = Weight::default();
        // 100 qps of which 50 errors at utilization 0.5: 100 / (0.5 + 0.5·1.0) = 100.
        w.on_report(&report(0.5, 100.0, 50.0).report.unwrap(), 1.0, 0);
        assert_eq!(w.value, 100.0);
        w.on_report(&report(0.5, 100.0, 50.0).report.unwrap(), 2.0, 0);
        assert_eq!(w.value, 100.0 / 1.5);
    }

    #[test]
    fn unweighted_servers_get_the_mean_and_fewer_than_two_weights_fall_back_to_round_robin() {
        let mut p = WeightedRoundRobin::new(1);
        p.set_servers(&[0, 1, 2], 0);
        // Only server 0 reports: one usable weight, round robin.
        let only_one = [Some(report(0.1, 100.0, 0.0)), None, None];
        run(&mut p, &only_one, 0, 10 * MS, 1200);
        let counts = run(&mut p, &only_one, 12 * SECOND, MS, 3000);
        assert_eq!(counts, [1000, 1000, 1000]);
        assert!(p.schedule.is_empty());

        // Servers 0 and 1 report (weights 500 and 125), server 2 does not: it gets the mean, 312.5.
        let mut p = WeightedRoundRobin::new(1);
        p.set_servers(&[0, 1, 2], 0);
        let two = [
            Some(report(0.2, 100.0, 0.0)),
            Some(report(0.8, 100.0, 0.0)),
            None,
        ];
        run(&mut p, &two, 0, 10 * MS, 1200);
        let counts = run(&mut p, &two, 12 * SECOND, MS, 9375);
        assert_eq!(p.schedule, [65535, 16384, 40959]);
        let expected = [5000.0, 1250.0, 3125.0];
        for (c, e) in counts.iter().zip(expected) {
            assert!((f64::from(*c) - e).abs() < 0.02 * e, "{counts:?}");
        }
    }

    #[test]
    fn weights_expire_and_the_blackout_starts_again() {
        let mut w = Weight::default();
        let config = WrrConfig::default();
        w.on_report(&report(0.5, 10.0, 0.0).report.unwrap(), 1.0, 0);
        assert_eq!(w.usable(9 * SECOND, &config), 0.0);
        assert_eq!(w.usable(10 * SECOND, &config), 20.0);
        assert_eq!(w.usable(180 * SECOND, &config), 0.0, "expired");
        assert_eq!(w.non_empty_since, None);
        w.on_report(&report(0.5, 10.0, 0.0).report.unwrap(), 1.0, 200 * SECOND);
        assert_eq!(w.usable(205 * SECOND, &config), 0.0, "in blackout again");
        assert_eq!(w.usable(210 * SECOND, &config), 20.0);
    }

    #[test]
    fn empty_and_broken_reports_are_ignored() {
        let mut w = Weight::default();
        for (u, q, e) in [
            (0.0, 10.0, 0.0),
            (0.5, 0.0, 0.0),
            (f64::NAN, 10.0, 0.0),
            (0.5, f64::INFINITY, 0.0),
            (-1.0, 10.0, 0.0),
        ] {
            w.on_report(&report(u, q, e).report.unwrap(), 1.0, 0);
            assert_eq!(w, Weight::default(), "{u} {q} {e}");
        }
        w.on_report(&report(0.5, 10.0, f64::NAN).report.unwrap(), 1.0, 0);
        assert_eq!(w.value, 20.0);
    }

    #[test]
    fn lame_ducks_are_not_scheduled_and_restart_their_blackout() {
        let mut p = WeightedRoundRobin::new(3);
        p.set_servers(&[0, 1, 2], 0);
        let reports = [
            Some(report(0.2, 100.0, 0.0)),
            Some(report(0.8, 100.0, 0.0)),
            Some(report(0.4, 100.0, 0.0)),
        ];
        run(&mut p, &reports, 0, 10 * MS, 1200);
        p.set_draining(2, true, 12 * SECOND);
        let counts = run(&mut p, &reports, 12 * SECOND, MS, 1000);
        assert_eq!(counts[2], 0);
        assert_eq!(p.schedule, [65535, 16384]);
        p.set_draining(2, false, 13 * SECOND);
        assert_eq!(p.members.nodes()[2].state.non_empty_since, None);
        // Back in the schedule at the mean weight until its blackout ends.
        assert_eq!(p.schedule, [65535, 16384, 40959]);
    }
}
