//! dialogue's BALANCED node selection: `BalancedScoreTracker`, its `CoarseExponentialDecayReservoir`, and
//! the walk of `BalancedNodeSelectionStrategyChannel`.

use super::java::JavaRandom;
use super::Outcome;

/// What a server-side failure adds to the reservoir.
const FAILURE_WEIGHT: f64 = 10.0;
/// The reservoir decays in steps of this length: a 30 s half-life in 10 steps.
const DECAY_INTERVAL_NS: u64 = 3_000_000_000;
/// Steps per half-life.
const DECAYS_PER_HALF_LIFE: f64 = 10.0;
/// A candidate with more requests in flight than this sets the give-up threshold.
const INFLIGHT_COMPARISON_THRESHOLD: i32 = 5;
/// ... at this multiple of its score.
const UNHEALTHY_SCORE_MULTIPLIER: i32 = 2;

/// dialogue's `CoarseExponentialDecayReservoir`: a sum of recent failure weights that is multiplied by
/// `0.5^(1/10)` once per whole 3 s interval elapsed, the intervals counted from the reservoir's creation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reservoir {
    value: f64,
    /// The end of the last whole interval applied.
    last_decay: u64,
}

impl Reservoir {
    /// Empty, its intervals counted from `now`.
    pub fn new(now: u64) -> Self {
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
            self.value *= factor.powi(decays.min(i32::MAX as u64) as i32);
        }
    }

    /// The decayed value at `now`.
    pub fn get(&mut self, now: u64) -> f64 {
        self.decay(now);
        self.value
    }

    /// Adds `weight` at `now`.
    pub fn add(&mut self, weight: f64, now: u64) {
        self.decay(now);
        self.value += weight;
    }
}

/// What an outcome adds to a host's failure reservoir (`ChannelScoreInfo.onSuccess/onFailure`): 10 for any
/// 5xx and for 308 (a QoS status other than 429), 0.1 for a 4xx (429 included: the endpoint is busy, not the
/// host bad; and healthy servers answer a background rate of 4xx), 10 for any exception, nothing otherwise.
pub fn failure_weight(outcome: Outcome) -> f64 {
    match outcome {
        Outcome::Response(308 | 500..=599) => FAILURE_WEIGHT,
        Outcome::Response(400..=499) => FAILURE_WEIGHT / 100.0,
        Outcome::Response(_) => 0.0,
        Outcome::Io { .. } | Outcome::Failed => FAILURE_WEIGHT,
    }
}

/// One host's score inputs: this client's requests to it in flight (including those waiting in its
/// endpoint queues) and its failure reservoir.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Score {
    /// Requests admitted and not completed.
    pub inflight: i32,
    /// Recent failures.
    pub reservoir: Reservoir,
}

/// The score tracker of one client's node-selection layer.
#[derive(Clone, Debug, PartialEq)]
pub struct Tracker {
    hosts: Vec<Score>,
    /// Scratch: (score, position in the shuffled order, in flight, host).
    ranked: Vec<(i32, usize, i32, usize)>,
    /// Scratch: the shuffled hosts.
    order: Vec<usize>,
}

impl Tracker {
    /// `hosts` fresh scores, their reservoirs counted from `now`.
    pub fn new(hosts: usize, now: u64) -> Self {
        Tracker {
            hosts: vec![
                Score {
                    inflight: 0,
                    reservoir: Reservoir::new(now),
                };
                hosts
            ],
            ranked: Vec::new(),
            order: Vec::new(),
        }
    }

    /// Host `h`'s score inputs.
    pub fn host(&mut self, h: usize) -> &mut Score {
        &mut self.hosts[h]
    }

    /// `score = inflight + round(reservoir)`, Java's `Math.round` (halves up) and saturating cast.
    fn score(&mut self, h: usize, now: u64) -> (i32, i32) {
        let s = &mut self.hosts[h];
        let failures = (s.reservoir.get(now) + 0.5).floor() as i32;
        (s.inflight.saturating_add(failures), s.inflight)
    }

    /// One pick: shuffles `candidates` with the client's generator, sorts them by score (stably, so the
    /// shuffle breaks ties) and walks the list: with a give-up threshold starting at `i32::MAX`, a candidate
    /// scoring above it ends the walk with no pick (the request stays queued rather than go to a far worse
    /// host); one with more than 5 in flight sets the threshold to twice its score; each candidate counts
    /// the request in flight, then `admit(host)` asks its host channel, and a refusal undoes the count.
    /// Returns the host that admitted it.
    pub fn select(
        &mut self,
        candidates: &[usize],
        now: u64,
        java: &mut JavaRandom,
        mut admit: impl FnMut(usize) -> bool,
    ) -> Option<usize> {
        self.order.clear();
        self.order.extend_from_slice(candidates);
        java.shuffle(&mut self.order);
        let mut ranked = std::mem::take(&mut self.ranked);
        ranked.clear();
        for position in 0..self.order.len() {
            let h = self.order[position];
            let (score, inflight) = self.score(h, now);
            ranked.push((score, position, inflight, h));
        }
        // Sorting on (score, shuffled position) is the stable sort by score.
        ranked.sort_unstable();
        let mut give_up = i32::MAX;
        let mut chosen = None;
        for &(score, _, inflight, h) in &ranked {
            if score > give_up {
                break;
            }
            if inflight > INFLIGHT_COMPARISON_THRESHOLD {
                give_up = score.saturating_mul(UNHEALTHY_SCORE_MULTIPLIER);
            }
            self.hosts[h].inflight += 1;
            if admit(h) {
                chosen = Some(h);
                break;
            }
            self.hosts[h].inflight -= 1;
        }
        self.ranked = ranked;
        chosen
    }

    /// A request admitted by host `h` completed with `outcome`.
    pub fn complete(&mut self, h: usize, outcome: Outcome, now: u64) {
        let s = &mut self.hosts[h];
        s.inflight -= 1;
        let weight = failure_weight(outcome);
        if weight > 0.0 {
            s.reservoir.add(weight, now);
        }
    }

    /// A sticky request sent straight to host `h` (dialogue's `BalancedChannel` still counts it).
    pub fn start(&mut self, h: usize) {
        self.hosts[h].inflight += 1;
    }

    /// Undoes [`start`](Self::start) when the host refused.
    pub fn undo(&mut self, h: usize) {
        self.hosts[h].inflight -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn failure_weights_follow_dialogue() {
        for (outcome, weight) in [
            (Outcome::Response(200), 0.0),
            (Outcome::Response(302), 0.0),
            (Outcome::Response(308), 10.0),
            (Outcome::Response(400), 0.1),
            (Outcome::Response(429), 0.1),
            (Outcome::Response(500), 10.0),
            (Outcome::Response(503), 10.0),
            (Outcome::Io { timeout: false }, 10.0),
            (Outcome::Io { timeout: true }, 10.0),
            (Outcome::Failed, 10.0),
        ] {
            assert_eq!(failure_weight(outcome), weight, "{outcome:?}");
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

    /// The shuffle draws from the shared generator exactly as `Collections.shuffle` does (two draws for
    /// three hosts), ties keep the shuffled order, and the lowest score wins.
    #[test]
    fn ties_follow_the_shuffle_and_the_lowest_score_wins() {
        let mut t = Tracker::new(3, 0);
        let mut java = JavaRandom::new(7);
        let mut reference = JavaRandom::new(7);
        let mut order = [0, 1, 2];
        reference.shuffle(&mut order);
        let first = t.select(&[0, 1, 2], 0, &mut java, |_| true);
        assert_eq!(first, Some(order[0]));
        assert_eq!(java, reference, "one shuffle, nothing else drawn");
        // Host order[0] now has one in flight: the next pick goes elsewhere.
        let second = t.select(&[0, 1, 2], 0, &mut java, |_| true).unwrap();
        assert_ne!(second, order[0]);
        // A failure (10) outweighs in-flight requests: host 1 takes every pick while it has fewer than 10.
        let mut t = Tracker::new(2, 0);
        t.host(0).reservoir.add(10.0, 0);
        for _ in 0..10 {
            assert_eq!(t.select(&[0, 1], 0, &mut java, |_| true), Some(1));
        }
        // At 11 in flight host 0 (score 10) is better.
        t.host(1).inflight += 1;
        assert_eq!(t.select(&[0, 1], 0, &mut java, |_| true), Some(0));
    }

    #[test]
    fn the_give_up_rule_refuses_rather_than_go_to_a_far_worse_host() {
        let mut java = JavaRandom::new(1);
        let mut t = Tracker::new(2, 0);
        // Host 0: 6 in flight (> 5) and full; host 1: a failure score of 13.
        t.host(0).inflight = 6;
        t.host(1).reservoir.add(13.0, 0);
        let mut asked = Vec::new();
        let got = t.select(&[0, 1], 0, &mut java, |h| {
            asked.push(h);
            false
        });
        // Score 6 sets give-up at 12; 13 > 12 ends the walk without asking host 1.
        assert_eq!((got, asked), (None, vec![0]));
        assert_eq!(t.host(0).inflight, 6, "the refused count was undone");
        // At 12 (not above) the walk goes on to host 1.
        let mut t = Tracker::new(2, 0);
        t.host(0).inflight = 6;
        t.host(1).reservoir.add(12.0, 0);
        assert_eq!(t.select(&[0, 1], 0, &mut java, |h| h == 1), Some(1));
        assert_eq!(t.host(1).inflight, 1);
        // With 5 in flight (not more than 5) there is no threshold at all.
        let mut t = Tracker::new(2, 0);
        t.host(0).inflight = 5;
        t.host(1).reservoir.add(1000.0, 0);
        assert_eq!(t.select(&[0, 1], 0, &mut java, |h| h == 1), Some(1));
    }

    #[test]
    fn completions_count_down_and_weigh_failures() {
        let mut java = JavaRandom::new(3);
        let mut t = Tracker::new(2, 0);
        let h = t.select(&[0, 1], 0, &mut java, |_| true).unwrap();
        t.complete(h, Outcome::Response(503), S);
        assert_eq!(t.host(h).inflight, 0);
        assert_eq!(t.host(h).reservoir.get(S), 10.0);
        t.start(h);
        t.complete(h, Outcome::Response(429), S);
        assert!((t.host(h).reservoir.get(S) - 10.1).abs() < 1e-12);
    }
}
