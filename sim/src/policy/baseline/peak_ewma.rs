//! Power of two choices over peak-EWMA costs.

use weir::Rng;

use super::members::Members;
use crate::policy::{Balance, Completion, Pick, Refusal, ServerId};

/// [`PeakEwmaP2c`]'s parameters (tower makes both required constructor arguments; these defaults are the
/// values of tower's example and of Linkerd).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeakEwmaConfig {
    /// The estimate a server starts with, before any answer (default 30 ms).
    pub default_rtt_ns: u64,
    /// The decay time constant τ (default 10 s; half-life τ·ln 2 ≈ 6.9 s).
    pub decay_ns: u64,
}

impl Default for PeakEwmaConfig {
    /// 30 ms and 10 s.
    fn default() -> Self {
        PeakEwmaConfig {
            default_rtt_ns: 30_000_000,
            decay_ns: 10_000_000_000,
        }
    }
}

/// One server's peak-EWMA round-trip estimate (tower's `RttEstimate`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RttEstimate {
    /// Nanoseconds.
    rtt_ns: f64,
    /// When it was last updated (by a sample or by a read).
    update_at: u64,
}

impl RttEstimate {
    fn new(rtt_ns: f64, now: u64) -> Self {
        RttEstimate {
            rtt_ns,
            update_at: now,
        }
    }

    /// Feeds one sample: a sample above the estimate replaces it (the peak); otherwise the estimate moves
    /// toward the sample by the weight of the time elapsed since the last update, `1 − e^(−Δt/τ)`.
    fn update(&mut self, sample_ns: f64, now: u64, decay_ns: f64) -> f64 {
        self.rtt_ns = if self.rtt_ns < sample_ns {
            sample_ns
        } else {
            let elapsed = now.saturating_sub(self.update_at) as f64;
            let decay = (-elapsed / decay_ns).exp();
            self.rtt_ns * decay + sample_ns * (1.0 - decay)
        };
        self.update_at = now;
        self.rtt_ns
    }

    /// Reads the estimate as tower's `load()` does: by feeding a zero sample, so the estimate decays toward 0
    /// with the time since the last update (and the read counts as an update).
    fn read(&mut self, now: u64, decay_ns: f64) -> f64 {
        self.update(0.0, now, decay_ns)
    }
}

/// tower's [`p2c::Balance`][p2c] over [`PeakEwma`][peak] loads (tower 0.5.3; the same algorithm as
/// [Linkerd2-proxy's `P2cPool`][linkerd] over tower's `PeakEwma`, and [Finagle's `P2CPeakEwma`][finagle]).
///
/// A pick draws two distinct servers uniformly among those not in lame duck (tower's Floyd sampling) and
/// takes the one with the lower cost `rtt_estimate × (pending + 1)`, the first drawn on a tie; with a single
/// server it takes it without reading its load (as tower does). `pending` is this client's attempts in flight
/// to the server.
///
/// The estimate follows tower exactly. A server starts at [`default_rtt_ns`](PeakEwmaConfig::default_rtt_ns).
/// Every completion feeds its round-trip time `r` after `Δt` since the estimate's last update: if
/// `r > est` then `est = r`, else `est = est·e^(−Δt/τ) + r·(1 − e^(−Δt/τ))`. Reading the cost also mutates the
/// estimate: tower's `load()` feeds a zero sample, so `est = est·e^(−Δt/τ)` and the read resets `Δt`. Only
/// the two servers a pick draws are read. An idle server's estimate therefore decays toward zero, which makes
/// it attractive again (tower's answer to starving new or recovered servers).
///
/// Samples come from every completion, failures and refused connections included, because tower never looks
/// at the response: a server that fails fast gets a low estimate and draws more traffic. That is the
/// *sinkholing* the [SRE book] warns of (ch. 20), which Linkerd reports of this very balancer
/// ([linkerd2-proxy#4537]), kept on purpose: this is the baseline as the field ships it.
/// A timed-out attempt's sample is the time until the client gave up (tower's handle is dropped then).
/// It refuses only when no server can be used, and then fails fast.
///
/// [p2c]: https://github.com/tower-rs/tower/blob/4b0a6b0e688bd177eb2c9c97f5268dd9703c66fc/tower/src/balance/p2c/service.rs
/// [peak]: https://github.com/tower-rs/tower/blob/4b0a6b0e688bd177eb2c9c97f5268dd9703c66fc/tower/src/load/peak_ewma.rs
/// [linkerd]: https://github.com/linkerd/linkerd2-proxy/blob/29637b64f6cebedaf15bfbf516818d7a28a4d5a6/linkerd/pool/p2c/src/lib.rs
/// [finagle]: https://github.com/twitter/finagle/blob/4feb34cb949918c572a6152327212e062527bd62/finagle-core/src/main/scala/com/twitter/finagle/loadbalancer/p2c/P2CPeakEwma.scala
/// [SRE book]: https://sre.google/sre-book/load-balancing-datacenter/
/// [linkerd2-proxy#4537]: https://github.com/linkerd/linkerd2-proxy/pull/4537
#[derive(Debug)]
pub struct PeakEwmaP2c {
    default_rtt_ns: f64,
    decay_ns: f64,
    members: Members<RttEstimate>,
}

impl PeakEwmaP2c {
    /// tower's P2C with peak EWMA, 30 ms default RTT and 10 s decay (`seed` is unused: the draws come from the
    /// `rng` passed to [`pick`](Balance::pick)).
    pub fn new(seed: u64) -> Self {
        Self::with_config(seed, PeakEwmaConfig::default())
    }

    /// With `config` (a decay of 0 is taken as 1 ns).
    pub fn with_config(_seed: u64, config: PeakEwmaConfig) -> Self {
        PeakEwmaP2c {
            default_rtt_ns: config.default_rtt_ns as f64,
            decay_ns: config.decay_ns.max(1) as f64,
            members: Members::new(),
        }
    }

    /// Attempts picked and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.members.in_flight()
    }

    /// The cost tower's `load()` would return for the server at `index` now (decaying its estimate).
    fn cost(&mut self, index: usize, now: u64) -> f64 {
        let decay_ns = self.decay_ns;
        let node = &mut self.members.nodes_mut()[index];
        node.state.read(now, decay_ns) * f64::from(node.inflight + 1)
    }
}

impl Balance for PeakEwmaP2c {
    fn pick(&mut self, now: u64, rng: &mut Rng) -> Option<Pick> {
        let usable = self.members.usable();
        let index = match usable.len() {
            0 => return None,
            1 => usable[0],
            len => {
                // Floyd's sampling of two distinct indices, as tower's `sample_floyd2`.
                let b = rng.usize(..len);
                let a = match rng.usize(..len - 1) {
                    a if a == b => len - 1,
                    a => a,
                };
                let (a, b) = (usable[a], usable[b]);
                if self.cost(a, now) <= self.cost(b, now) {
                    a
                } else {
                    b
                }
            }
        };
        Some(self.members.start(index, ()))
    }

    fn complete(&mut self, pick: Pick, done: &Completion, now: u64) {
        if let Some((index, ())) = self.members.finish(pick.tag) {
            let decay_ns = self.decay_ns;
            self.members.nodes_mut()[index]
                .state
                .update(done.rtt_ns as f64, now, decay_ns);
        }
    }

    fn set_servers(&mut self, servers: &[ServerId], now: u64) {
        let rtt = self.default_rtt_ns;
        self.members.set(servers, |_| RttEstimate::new(rtt, now));
    }

    fn set_draining(&mut self, server: ServerId, draining: bool, _now: u64) {
        self.members.set_draining(server, draining);
    }

    /// tower's `Balance` is not ready while no endpoint is (`poll_ready` stays pending until discovery or
    /// readiness changes): the request waits.
    fn on_refusal(&self) -> Refusal {
        Refusal::Queue
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Reply;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    fn done(reply: Reply, rtt_ns: u64) -> Completion {
        Completion {
            reply,
            rtt_ns,
            report: None,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6 * b.abs().max(1.0)
    }

    #[test]
    fn estimate_jumps_to_peaks_and_decays_with_the_exact_formula() {
        let tau = 10.0 * S as f64;
        let mut e = RttEstimate::new(30.0 * MS as f64, 0);
        // A higher sample replaces the estimate whatever the time.
        assert_eq!(e.update(100.0 * MS as f64, S, tau), 100.0 * MS as f64);
        // A lower one 1 s later: 100·e^(−0.1) + 10·(1 − e^(−0.1)) = 91.4354 ms.
        let est = e.update(10.0 * MS as f64, 2 * S, tau);
        assert!(close(est, 91.435_367_6e6), "{est}");
        // A read 1 s later decays toward 0: 91.4354·e^(−0.1) = 82.7341 ms, and resets the clock.
        let read = e.read(3 * S, tau);
        assert!(close(read, 82.734_142_0e6), "{read}");
        assert_eq!(e.update_at, 3 * S);
        // Two reads compose: after 10 s more, e^(−1) of it.
        let later = e.read(13 * S, tau);
        assert!(close(later, 82.734_142_0e6 * (-1.0f64).exp()), "{later}");
    }

    #[test]
    fn cost_is_estimate_times_pending_plus_one_and_decays_on_read() {
        let mut rng = Rng::with_seed(2);
        let mut p = PeakEwmaP2c::new(0);
        p.set_servers(&[7], 0);
        let a = p.pick(0, &mut rng).unwrap();
        let _b = p.pick(0, &mut rng).unwrap();
        p.complete(a, &done(Reply::Status(200), 200 * MS), S);
        // One still pending, estimate 200 ms (the peak) read 1 s after it was set.
        let cost = p.cost(0, 2 * S);
        assert!(close(cost, 2.0 * 200e6 * (-0.1f64).exp()), "{cost}");
    }

    #[test]
    fn picks_the_lower_cost_and_a_slow_server_gets_less() {
        let mut rng = Rng::with_seed(3);
        let mut p = PeakEwmaP2c::new(0);
        p.set_servers(&[0, 1], 0);
        // Server 1 answered slowly once: estimate 500 ms against 30 ms.
        p.members.nodes_mut()[1].state = RttEstimate::new(500.0 * MS as f64, 0);
        assert_eq!(p.pick(MS, &mut rng).unwrap().server, 0);

        // Three servers, one ten times slower than the others: one attempt every 10 ms, each answered after
        // its server's latency.
        let mut p = PeakEwmaP2c::new(0);
        p.set_servers(&[0, 1, 2], 0);
        let latency = [20 * MS, 20 * MS, 200 * MS];
        let mut pending: Vec<(u64, Pick)> = Vec::new();
        let mut counts = [0u32; 3];
        for t in 0..3000u64 {
            let now = t * 10 * MS;
            pending.sort_by_key(|&(at, _)| std::cmp::Reverse(at));
            while pending.last().is_some_and(|&(at, _)| at <= now) {
                let (at, pick) = pending.pop().unwrap();
                p.complete(pick, &done(Reply::Status(200), latency[pick.server]), at);
            }
            let pick = p.pick(now, &mut rng).unwrap();
            counts[pick.server] += 1;
            pending.push((now + latency[pick.server], pick));
        }
        assert!(counts[2] * 4 < counts[0].min(counts[1]), "{counts:?}");
    }

    #[test]
    fn failures_feed_samples_too_so_a_fast_failing_server_attracts_traffic() {
        let mut rng = Rng::with_seed(4);
        let mut p = PeakEwmaP2c::new(0);
        p.set_servers(&[0, 1], 0);
        let mut counts = [0u32; 2];
        for t in 0..1000u64 {
            let now = t * 10 * MS;
            let pick = p.pick(now, &mut rng).unwrap();
            counts[pick.server] += 1;
            // Server 0 answers 200 in 50 ms, server 1 fails with 503 in 1 ms.
            let (reply, rtt) = match pick.server {
                0 => (Reply::Status(200), 50 * MS),
                _ => (Reply::Status(503), MS),
            };
            p.complete(pick, &done(reply, rtt), now + rtt);
        }
        assert!(counts[1] > 9 * counts[0], "{counts:?}");
        assert_eq!(p.in_flight(), 0);
    }

    #[test]
    fn draws_are_distinct_and_uniform() {
        let mut rng = Rng::with_seed(5);
        let mut p = PeakEwmaP2c::new(0);
        p.set_servers(&[0, 1, 2, 3], 0);
        p.set_draining(3, true, 0);
        let mut counts = [0u32; 4];
        // All estimates equal and nothing pending: the first draw always wins, so picks are uniform.
        for _ in 0..30_000 {
            let pick = p.pick(0, &mut rng).unwrap();
            counts[pick.server] += 1;
            p.complete(pick, &done(Reply::Status(200), 0), 0);
        }
        assert_eq!(counts[3], 0);
        for &c in &counts[..3] {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
    }
}
