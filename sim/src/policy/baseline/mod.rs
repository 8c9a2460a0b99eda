//! The field's balancers, each implemented from the public source its type's documentation cites.
//!
//! | policy | from | signal |
//! |---|---|---|
//! | [`RoundRobin`] | SRE book ch. 20 | none |
//! | [`RandomPick`] | SRE book ch. 20, dialogue's random selection | none |
//! | [`LeastLoaded`] | SRE book ch. 20 (least-loaded round robin, optionally counting errors) | this client's in-flight requests (+ recent errors) |
//! | [`PeakEwmaP2c`] | tower, Linkerd, Finagle | peak-EWMA latency × in-flight |
//! | [`WeightedRoundRobin`] | gRPC A58, Envoy, SRE book | backend load reports |
//! | [`dialogue`] | palantir/dialogue's whole client: BALANCED, PIN_UNTIL_ERROR, unlimited | in-flight + decaying failures, or errors; host and endpoint CIAD limiters and queues |
//!
//! Conventions shared by all of them:
//!
//! [`dialogue`] is not a [`Balance`](crate::policy::Balance) policy but a whole client (dialogue keeps
//! requests in queues and limiters of its own); the engine drives it directly. The conventions below are
//! the other baselines'.
//!
//! * Every policy is built with `new(seed)`. Randomness needed outside a pick (a starting offset, an initial
//!   shuffle, a jitter) comes from a generator seeded with `seed`, so each client differs and runs repeat;
//!   randomness during a pick comes from the `rng` passed to [`pick`](crate::policy::Balance::pick).
//! * Per-server state follows [`set_servers`](crate::policy::Balance::set_servers): a server that stays keeps
//!   it, one that leaves loses it, a new one starts as its reference says. Duplicates in the list are
//!   ignored after the first.
//! * A server in lame duck ([`set_draining`](crate::policy::Balance::set_draining)) gets no new attempt; a
//!   lame-duck call for a server not in the list is ignored.
//! * Each attempt is remembered until its completion, under the tag its [`Pick`](crate::policy::Pick)
//!   carries, with the state it was sent under. If that state is gone (the server left), the completion only
//!   ends the attempt. A completion with an unknown tag is ignored. `in_flight()` on each policy counts the attempts not yet completed.
//! * A policy returns `None` from a pick only when no server can be used; no call sequence panics.

pub mod dialogue;
pub mod least_loaded;
mod members;
pub mod peak_ewma;
pub mod random;
pub mod round_robin;
pub mod wrr;

pub use least_loaded::{LeastLoaded, LeastLoadedConfig};
pub use peak_ewma::{PeakEwmaConfig, PeakEwmaP2c};
pub use random::RandomPick;
pub use round_robin::RoundRobin;
pub use wrr::{WeightedRoundRobin, WrrConfig};

#[cfg(test)]
mod tests {
    use weir::Rng;

    use super::*;
    use crate::policy::{Balance, Completion, LoadReport, Pick, Reply, ServerId};

    /// A policy under test with its in-flight count.
    trait Probe: Balance {
        fn in_flight(&self) -> usize;
    }

    macro_rules! probe {
        ($($t:ty),*) => {$(
            impl Probe for $t {
                fn in_flight(&self) -> usize {
                    <$t>::in_flight(self)
                }
            }
        )*};
    }
    probe!(
        RoundRobin,
        RandomPick,
        LeastLoaded,
        PeakEwmaP2c,
        WeightedRoundRobin
    );

    fn all(seed: u64) -> Vec<(&'static str, Box<dyn Probe>)> {
        vec![
            ("RoundRobin", Box::new(RoundRobin::new(seed))),
            ("RandomPick", Box::new(RandomPick::new(seed))),
            ("LeastLoaded", Box::new(LeastLoaded::new(seed))),
            (
                "LeastLoaded+errors",
                Box::new(LeastLoaded::counting_errors(seed)),
            ),
            ("PeakEwmaP2c", Box::new(PeakEwmaP2c::new(seed))),
            (
                "WeightedRoundRobin",
                Box::new(WeightedRoundRobin::new(seed)),
            ),
        ]
    }

    fn random_reply(rng: &mut Rng) -> Reply {
        match rng.usize(..8) {
            0 => Reply::Refused,
            1 => Reply::Timeout,
            2 => Reply::Status(rng.u16(..)),
            3 => Reply::Status([429, 500, 503, 308, 404][rng.usize(..5)]),
            _ => Reply::Status(200),
        }
    }

    fn random_f64(rng: &mut Rng) -> f64 {
        match rng.usize(..6) {
            0 => 0.0,
            1 => f64::NAN,
            2 => f64::INFINITY,
            3 => -rng.f64(),
            _ => rng.f64() * 100.0,
        }
    }

    /// Random call sequences: lists (empty, with duplicates, with servers coming back), lame ducks for known
    /// and unknown servers, completions in random order and for servers never picked, time that jumps and
    /// goes backwards, broken load reports. Nothing panics, and once every attempt has completed nothing is
    /// in flight.
    #[test]
    fn every_policy_survives_random_call_sequences() {
        for seed in 0..40u64 {
            for (name, mut p) in all(seed) {
                let mut rng = Rng::with_seed(seed * 1000 + 17);
                let mut now = 0u64;
                let mut outstanding: Vec<Pick> = Vec::new();
                let mut picks = 0;
                p.set_servers(&[], now);
                for _ in 0..3000 {
                    now = match rng.usize(..20) {
                        0 => now.saturating_sub(rng.u64(..1_000_000)),
                        1 => now.saturating_add(rng.u64(..1_000_000_000_000)),
                        _ => now.saturating_add(rng.u64(..50_000_000)),
                    };
                    match rng.usize(..20) {
                        0 => {
                            let len = rng.usize(..7);
                            let servers: Vec<ServerId> =
                                (0..len).map(|_| rng.usize(..10)).collect();
                            p.set_servers(&servers, now);
                        }
                        1 => {
                            let server = rng.usize(..12);
                            p.set_draining(server, rng.bool(), now);
                        }
                        2 => {
                            let fake = Pick {
                                server: rng.usize(..12),
                                lease: None,
                                tag: u64::MAX - rng.u64(..1000),
                            };
                            if !outstanding.contains(&fake) {
                                p.complete(fake, &done(&mut rng), now);
                            }
                        }
                        3..=9 if !outstanding.is_empty() => {
                            let pick = outstanding.swap_remove(rng.usize(..outstanding.len()));
                            p.complete(pick, &done(&mut rng), now);
                        }
                        _ => {
                            if let Some(pick) = p.pick(now, &mut rng) {
                                outstanding.push(pick);
                                picks += 1;
                            }
                            let _ = p.on_refusal();
                        }
                    }
                    assert_eq!(p.in_flight(), outstanding.len(), "{name} seed {seed}");
                }
                for pick in outstanding.drain(..) {
                    p.complete(pick, &done(&mut rng), now);
                }
                assert_eq!(p.in_flight(), 0, "{name} seed {seed}");
                assert!(picks > 100, "{name} seed {seed}: only {picks} picks");
            }
        }
    }

    fn done(rng: &mut Rng) -> Completion {
        let report = rng.bool().then(|| LoadReport {
            utilization: random_f64(rng),
            qps: random_f64(rng),
            eps: random_f64(rng),
        });
        Completion {
            reply: random_reply(rng),
            rtt_ns: if rng.usize(..10) == 0 {
                u64::MAX
            } else {
                rng.u64(..2_000_000_000)
            },
            report,
        }
    }

    /// After a server leaves and comes back, attempts sent before still complete without disturbing its fresh
    /// state's in-flight count, for every policy.
    #[test]
    fn attempts_to_a_departed_server_end_cleanly() {
        for (name, mut p) in all(3) {
            let mut rng = Rng::with_seed(5);
            p.set_servers(&[4], 0);
            let old = p.pick(0, &mut rng).unwrap();
            p.set_servers(&[], 1);
            assert_eq!(p.pick(1, &mut rng), None, "{name}");
            p.set_servers(&[4], 2);
            let new = p.pick(2, &mut rng).unwrap();
            assert_eq!((old.server, new.server), (4, 4), "{name}");
            p.complete(
                old,
                &Completion {
                    reply: Reply::Status(200),
                    rtt_ns: 1,
                    report: None,
                },
                3,
            );
            assert_eq!(p.in_flight(), 1, "{name}");
            p.complete(
                new,
                &Completion {
                    reply: Reply::Status(200),
                    rtt_ns: 1,
                    report: None,
                },
                4,
            );
            assert_eq!(p.in_flight(), 0, "{name}");
        }
    }
}
