//! dialogue's BALANCED node selection.

use weir::Rng;

use super::aimd::{Aimd, HostVerdict};
use super::members::Members;
use crate::policy::{Balance, Completion, Pick, Refusal, Reply, ServerId};

/// What a server-side failure adds to the reservoir.
const FAILURE_WEIGHT: f64 = 10.0;
/// The reservoir decays in steps of this length: a 30 s half-life in 10 steps.
const DECAY_INTERVAL_NS: u64 = 3_000_000_000;
/// Steps per half-life.
const DECAYS_PER_HALF_LIFE: f64 = 10.0;
/// A candidate with more attempts in flight than this sets the give-up threshold.
const BUSY_IN_FLIGHT: i64 = 5;

/// dialogue's `CoarseExponentialDecayReservoir`: a sum of recent failure weights that is multiplied by
/// `0.5^(1/10)` once per whole 3 s interval elapsed, the intervals counted from the reservoir's creation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Reservoir {
    value: f64,
    /// The end of the last whole interval applied.
    last_decay: u64,
}

impl Reservoir {
    fn new(now: u64) -> Self {
        Reservoir {
            value: 0.0,
            last_decay: now,
        }
    }

    /// Applies the whole intervals elapsed since the last decay, as dialogue's catch-up does (the remainder
    /// carries over, so reading often or rarely gives the same value).
    fn decay(&mut self, now: u64) {
        let decays = now.saturating_sub(self.last_decay) / DECAY_INTERVAL_NS;
        if decays > 0 {
            self.last_decay += decays * DECAY_INTERVAL_NS;
            let factor = 0.5f64.powf(1.0 / DECAYS_PER_HALF_LIFE);
            self.value *= factor.powf(decays as f64);
        }
    }

    fn get(&mut self, now: u64) -> f64 {
        self.decay(now);
        self.value
    }

    fn add(&mut self, weight: f64, now: u64) {
        self.decay(now);
        self.value += weight;
    }
}

/// What a reply adds to the failure reservoir: 10 for any 5xx, 308 (retry elsewhere), a connection error or
/// a timeout (dialogue sees an `IOException`); 0.1 for a 4xx, 429 included (the endpoint is busy, not the
/// host bad; and healthy servers return a background rate of 4xx); nothing otherwise.
fn failure_weight(reply: Reply) -> f64 {
    match reply {
        Reply::Status(308 | 500..=599) | Reply::Refused | Reply::Timeout => FAILURE_WEIGHT,
        Reply::Status(400..=499) => FAILURE_WEIGHT / 100.0,
        Reply::Status(_) => 0.0,
    }
}

/// One host's state: its failure reservoir and its host-level limiter.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Host {
    reservoir: Reservoir,
    limiter: Aimd,
}

/// palantir/dialogue's `BALANCED` strategy (what its `ROUND_ROBIN` config means) with its per-host AIMD
/// limiter (shared/reference/load-balancers.md §1.2 and §1.3).
///
/// Every host has a score, `in-flight + round(reservoir)`: this client's attempts in flight plus its recent
/// failures, where a 5xx, 308, connection error or timeout adds 10 and a 4xx or 429 adds 0.1 to a reservoir
/// that halves every 30 s (in 10 steps of 3 s, see `Reservoir`). The score is an integer on purpose, so a
/// single 4xx's 0.1 disappears at once instead of breaking ties for minutes. The failure term is what keeps a
/// fast-failing host from sinkholing traffic (dialogue's `fast_503s_then_revert`).
///
/// A pick shuffles the hosts not in lame duck (with the `rng` passed to [`pick`](Balance::pick)), sorts them
/// by score, stably, and walks the list: with `giveUp` starting at +∞, a candidate whose score exceeds
/// `giveUp` ends the walk with no pick; a candidate with more than 5 in flight sets `giveUp = 2 × score`; the
/// first candidate whose limiter admits the attempt gets it. The give-up rule (dialogue #873) keeps the
/// request queued rather than send it to a much worse host just because a better, busy host's limiter is
/// full. dialogue increments the in-flight count before asking the limiter and undoes it on refusal; in this
/// single-threaded simulation nothing can observe the difference, so the count is taken on admission.
///
/// Each host's limiter is [`Aimd`] (host level: drops on 503, 308, 501–599, connection errors and timeouts;
/// ignores 429 and 500). When no host admits the attempt, [`on_refusal`](Balance::on_refusal) says
/// [`Refusal::Queue`]: dialogue keeps the request in its queue and retries it when an attempt completes.
/// With no servers at all it says [`Refusal::FailFast`], as dialogue's zero-URI channel fails requests.
///
/// A change in the set of servers rebuilds every host's state, as dialogue rebuilds its node-selection layer
/// on a URI change: scores and limits are forgotten, and attempts still in flight complete against nothing.
/// The same set in another order keeps everything. Lame duck is not a dialogue concept; a host in lame duck
/// is simply left out of the walk.
#[derive(Debug)]
pub struct Balanced {
    members: Members<Host, u32>,
    /// Scratch: the shuffled candidates.
    order: Vec<usize>,
    /// Scratch: (score, position in the shuffled order, in flight, index) per candidate.
    ranked: Vec<(i64, usize, i64, usize)>,
}

impl Balanced {
    /// dialogue's BALANCED (`seed` is unused: its only randomness, the shuffle, comes from the `rng` passed
    /// to [`pick`](Balance::pick)).
    pub fn new(_seed: u64) -> Self {
        Balanced {
            members: Members::new(),
            order: Vec::new(),
            ranked: Vec::new(),
        }
    }

    /// Attempts picked and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.members.in_flight()
    }
}

impl Balance for Balanced {
    fn pick(&mut self, now: u64, rng: &mut Rng) -> Option<Pick> {
        let (nodes, usable) = self.members.usable_nodes_mut();
        self.order.clear();
        self.order.extend_from_slice(usable);
        rng.shuffle(&mut self.order);
        self.ranked.clear();
        for (position, &index) in self.order.iter().enumerate() {
            let node = &mut nodes[index];
            let in_flight = i64::from(node.inflight);
            // Java's Math.round: halves up. Float-to-int `as` saturates like Ints.saturatedCast.
            let failures = (node.state.reservoir.get(now) + 0.5).floor() as i64;
            let score = in_flight.saturating_add(failures);
            self.ranked.push((score, position, in_flight, index));
        }
        // Sorting on (score, shuffled position) is the stable sort by score, without a merge buffer.
        self.ranked.sort_unstable();
        let mut give_up = i64::MAX;
        for &(score, _, in_flight, index) in &self.ranked {
            if score > give_up {
                return None;
            }
            if in_flight > BUSY_IN_FLIGHT {
                give_up = score.saturating_mul(2);
            }
            if let Some(snapshot) = nodes[index].state.limiter.try_acquire() {
                return Some(self.members.start(index, snapshot));
            }
        }
        None
    }

    fn complete(&mut self, pick: Pick, done: &Completion, now: u64) {
        let Some((index, snapshot)) = self.members.finish(pick.tag) else {
            return;
        };
        let host = &mut self.members.nodes_mut()[index].state;
        host.limiter.release(snapshot, HostVerdict::of(done.reply));
        let weight = failure_weight(done.reply);
        if weight > 0.0 {
            host.reservoir.add(weight, now);
        }
    }

    fn set_servers(&mut self, servers: &[ServerId], now: u64) {
        let keep = self.members.same_set(servers);
        self.members.set(servers, keep, |_| Host {
            reservoir: Reservoir::new(now),
            limiter: Aimd::new(),
        });
    }

    fn set_draining(&mut self, server: ServerId, draining: bool, _now: u64) {
        self.members.set_draining(server, draining);
    }

    fn on_refusal(&self) -> Refusal {
        self.members.queue_unless_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn done(reply: Reply) -> Completion {
        Completion {
            reply,
            rtt_ns: 1,
            report: None,
        }
    }

    fn host(p: &mut Balanced, server: ServerId) -> &mut Host {
        let index = p.members.position(server).unwrap();
        &mut p.members.nodes_mut()[index].state
    }

    #[test]
    fn failure_weights_follow_dialogue() {
        for (reply, weight) in [
            (Reply::Status(200), 0.0),
            (Reply::Status(302), 0.0),
            (Reply::Status(308), 10.0),
            (Reply::Status(400), 0.1),
            (Reply::Status(429), 0.1),
            (Reply::Status(500), 10.0),
            (Reply::Status(503), 10.0),
            (Reply::Refused, 10.0),
            (Reply::Timeout, 10.0),
        ] {
            assert_eq!(failure_weight(reply), weight, "{reply:?}");
        }
    }

    #[test]
    fn reservoir_halves_in_30_s_by_whole_3_s_steps() {
        let mut r = Reservoir::new(0);
        r.add(10.0, 1);
        assert_eq!(r.get(3 * S - 1), 10.0, "no whole interval yet");
        let one = r.get(3 * S);
        assert!((one - 10.0 * 0.5f64.powf(0.1)).abs() < 1e-12, "{one}");
        assert!((r.get(29 * S) - 10.0 * 0.5f64.powf(0.9)).abs() < 1e-12);
        let half = r.get(30 * S);
        assert!((half - 5.0).abs() < 1e-12, "{half}");
        // Reading rarely gives the same value as reading often.
        let mut rare = Reservoir::new(0);
        rare.add(10.0, 1);
        assert!((rare.get(30 * S + 5) - half).abs() < 1e-12);
        assert!((rare.get(60 * S) - 2.5).abs() < 1e-12);
    }

    #[test]
    fn skips_a_host_with_a_high_failure_score() {
        let mut rng = Rng::with_seed(1);
        let mut p = Balanced::new(0);
        p.set_servers(&[0, 1, 2], 0);
        // Drive one failure into server 1: pick until it is chosen, answer everything else with 200.
        loop {
            let pick = p.pick(0, &mut rng).unwrap();
            let failed = pick.server == 1;
            let reply = if failed {
                Reply::Status(500)
            } else {
                Reply::Status(200)
            };
            p.complete(pick, &done(reply), 0);
            if failed {
                break;
            }
        }
        // Score 10 against 0: the next ten attempts (held in flight) go to 0 and 2, five each.
        let mut counts = [0; 3];
        for _ in 0..10 {
            counts[p.pick(S, &mut rng).unwrap().server] += 1;
        }
        assert_eq!(counts, [5, 0, 5]);
        // 500 is ignored by the host limiter.
        assert_eq!(host(&mut p, 1).limiter.limit(), 20.0);
    }

    #[test]
    fn give_up_rule_keeps_the_request_queued() {
        let mut rng = Rng::with_seed(2);
        let mut p = Balanced::new(0);
        p.set_servers(&[0, 1], 0);
        // Server 0's limit is down to 6; server 1 has a failure score of 20.
        let h0 = host(&mut p, 0);
        for _ in 0..9 {
            let s = h0.limiter.try_acquire().unwrap();
            h0.limiter.release(s, HostVerdict::Dropped);
        }
        assert_eq!(h0.limiter.limit(), 6.0);
        host(&mut p, 1).reservoir.add(20.0, 0);
        for _ in 0..6 {
            assert_eq!(p.pick(0, &mut rng).unwrap().server, 0);
        }
        // Server 0: score 6, 6 in flight (> 5) → giveUp 12; its limiter refuses; server 1's 20 > 12 → none.
        assert_eq!(p.pick(0, &mut rng), None);
        assert_eq!(p.on_refusal(), Refusal::Queue);
        // With server 1's score at 12 (≤ 12) the walk goes on to it.
        host(&mut p, 1).reservoir.value = 12.0;
        assert_eq!(p.pick(0, &mut rng).unwrap().server, 1);
    }

    #[test]
    fn limiter_refusals_fall_through_to_the_next_host_then_queue() {
        let mut rng = Rng::with_seed(3);
        let mut p = Balanced::new(0);
        p.set_servers(&[0], 0);
        let picks: Vec<Pick> = (0..20).map(|_| p.pick(0, &mut rng).unwrap()).collect();
        assert_eq!(p.pick(0, &mut rng), None, "limit 20 reached");
        assert_eq!(p.on_refusal(), Refusal::Queue);
        // A 503 cuts the limit to 18: 19 in flight, still full.
        p.complete(picks[0], &done(Reply::Status(503)), 0);
        assert_eq!(host(&mut p, 0).limiter.limit(), 18.0);
        assert_eq!(p.pick(0, &mut rng), None);
        // No servers at all: fail fast.
        p.set_servers(&[], 0);
        assert_eq!(p.on_refusal(), Refusal::FailFast);
        for pick in &picks[1..] {
            p.complete(*pick, &done(Reply::Status(200)), 0);
        }
        assert_eq!(p.in_flight(), 0);
    }

    #[test]
    fn a_node_set_change_forgets_scores_and_limits() {
        let mut rng = Rng::with_seed(4);
        let mut p = Balanced::new(0);
        p.set_servers(&[0, 1], 0);
        host(&mut p, 0).reservoir.add(50.0, 0);
        let pick = p.pick(0, &mut rng).unwrap();
        assert_eq!(pick.server, 1);
        // Same set, other order: kept.
        p.set_servers(&[1, 0], S);
        assert_eq!(host(&mut p, 0).reservoir.get(S), 50.0);
        assert_eq!(
            p.members.nodes()[p.members.position(1).unwrap()].inflight,
            1
        );
        // A new server: everything fresh; the old attempt completes against nothing.
        p.set_servers(&[1, 0, 2], S);
        assert_eq!(host(&mut p, 0).reservoir.get(S), 0.0);
        p.complete(pick, &done(Reply::Status(503)), S);
        assert_eq!(host(&mut p, 1).reservoir.get(S), 0.0);
        assert_eq!(host(&mut p, 1).limiter.limit(), 20.0);
        assert_eq!(p.in_flight(), 0);
    }
}
