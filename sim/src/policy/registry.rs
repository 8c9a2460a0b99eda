//! The policies a report compares: weir's (the default marked) and the field's baselines.

use weir::balance::{Algorithm, Draw, Weighted, WeightedHealth};
use weir::limit::{AimdLimit, CiadLimit, Gradient2Limit, KneeLimit, LimitAlgorithm, VegasLimit};
use weir::Config;

use crate::policy::baseline::dialogue::Strategy;
use crate::policy::baseline::{
    LeastLoaded, PeakEwmaP2c, RandomPick, RoundRobin, WeightedRoundRobin,
};
use crate::policy::weir::WeirPolicy;
use crate::policy::{Balance, Refusal};

/// A policy as the report names it.
pub struct PolicyDef {
    /// Name (a command-line argument).
    pub name: &'static str,
    /// What its clients are built from, as a clause (no full stop; what a client does with a request it
    /// cannot send at once is [`refused`](Self::refused)'s to say): [`description`](Self::description)
    /// completes the sentence.
    pub about: &'static str,
    /// weir's default configuration.
    pub default: bool,
    /// How its clients are built.
    pub kind: Kind,
    /// What its client does with a request it cannot send at once.
    pub refused: Refusal,
}

impl PolicyDef {
    /// The policy in one sentence, as the report and `--list` give it: what it is built from, then what
    /// its client does with the requests it refuses.
    pub fn description(&self) -> String {
        format!(
            "{}; refused requests {}.",
            self.about,
            refused(self.refused)
        )
    }
}

/// What a client does with a request it cannot send at once, in words.
fn refused(r: Refusal) -> &'static str {
    match r {
        Refusal::FailFast => "fail at once",
        Refusal::Queue => "wait in the client's queue",
        Refusal::Wait { .. } => "wait in the core's bounded queue (acquire_wait)",
    }
}

/// How a policy's clients are built.
#[derive(Clone, Copy)]
pub enum Kind {
    /// A balancer in the engine's client: builds one client's instance for a scenario of `servers` servers,
    /// from the client's `seed`.
    Balancer(fn(servers: usize, seed: u64) -> Box<dyn Balance>),
    /// dialogue's whole client with this strategy.
    Dialogue(Strategy),
}

/// The original cascade preset with the weighted family's parameters changed by `change`.
fn cascade_with(change: fn(&mut Weighted)) -> Config {
    let mut w = Weighted::CASCADE;
    change(&mut w);
    Config {
        algorithm: Algorithm::Weighted(w),
        ..Config::cascade()
    }
}

fn weir(config: Config, servers: usize, seed: u64) -> Box<dyn Balance> {
    Box::new(WeirPolicy::new(Config { seed, ..config }, servers))
}

/// [`weir`], waiting for room (`acquire_wait`) instead of failing fast.
fn waiting(config: Config, servers: usize, seed: u64) -> Box<dyn Balance> {
    Box::new(WeirPolicy::waiting(Config { seed, ..config }, servers))
}

/// A waiting policy's refusals: they wait in the core's bounded queue, of the default's size.
fn default_queue() -> Refusal {
    Refusal::Wait {
        max_waiters: Config::default().max_waiters as usize,
    }
}

fn with_limit(limit: LimitAlgorithm) -> Config {
    Config {
        limit,
        ..Config::cascade()
    }
}

/// Every policy, weir's first, in report order.
pub fn all() -> Vec<PolicyDef> {
    vec![
        PolicyDef {
            name: "weir-lowest-score",
            about: "weir's default configuration: the lowest-score family over decayed success and failure \
                    counters, a CIAD limit with a fast start",
            default: true,
            kind: Kind::Balancer(|n, seed| waiting(Config::default(), n, seed)),
            refused: default_queue(),
        },
        PolicyDef {
            name: "weir-retry-elsewhere",
            about: "weir's default configuration, its retries sent to nodes the request has not tried \
                    (acquire_excluding) within weir's RetryBudget (20 % of requests + 10/s over 10 s) in place \
                    of the scenario's budget, by the scenario's retry rule or, where it has none, 3 retries of \
                    every 5xx, 429, reset and timeout after weir's Backoff (25 ms to 1 s)",
            default: false,
            kind: Kind::Balancer(|n, seed| {
                Box::new(WeirPolicy::retrying_elsewhere(
                    Config {
                        seed,
                        ..Config::default()
                    },
                    n,
                ))
            }),
            refused: default_queue(),
        },
        PolicyDef {
            name: "weir-rtt-tolerance",
            about: "weir's default configuration with CIAD's opt-in latency signal (rtt_tolerance 2: a \
                    success counts as a drop while the node's smoothed RTT is over twice its baseline)",
            default: false,
            kind: Kind::Balancer(|n, seed| waiting(rtt_tolerant(), n, seed)),
            refused: default_queue(),
        },
        PolicyDef {
            name: "weir-knee",
            about: "weir's default configuration with the knee limit in place of CIAD (KneeLimit: each \
                    node's calls capped where its smoothed RTT passes twice its slow-drifting no-load RTT, \
                    which every client of the server sees, within a minute of the node's last drop)",
            default: false,
            kind: Kind::Balancer(|n, seed| waiting(knee(), n, seed)),
            refused: default_queue(),
        },
        PolicyDef {
            name: "weir-knee-forgiving",
            about: "weir-knee with the lowest-score family's failure half-life at 2 s in place of 30 s (a \
                    node that failed is forgiven within seconds of answering well again)",
            default: false,
            kind: Kind::Balancer(|n, seed| waiting(knee_forgiving(), n, seed)),
            refused: default_queue(),
        },
        PolicyDef {
            name: "weir-knee-probation",
            about: "weir-knee with probation: a hundredth of the acquires try a random member \
                    (LowestScore::probe_fraction 0.01), and each success halves its node's failures \
                    (forgiveness 0.5), so a recovered node earns its share back by answering",
            default: false,
            kind: Kind::Balancer(|n, seed| waiting(knee_probation(), n, seed)),
            refused: default_queue(),
        },
        PolicyDef {
            name: "weir-knee-probation-load",
            about: "weir-knee-probation reading the servers' load reports: each answer's utilization \
                    (calls in progress over capacity, as ORCA reports it) is released with it \
                    (Balancer::release_loaded), and the knee limit reads it in place of the latency, \
                    under the same arm (past the knee above 1)",
            default: false,
            kind: Kind::Balancer(|n, seed| {
                Box::new(WeirPolicy::waiting(Config { seed, ..knee_probation() }, n).reading_load())
            }),
            refused: default_queue(),
        },
        PolicyDef {
            name: "weir-knee-probation-timed",
            about: "weir-knee-probation with timed probes (LowestScore::probe_after_ns 5 s, Finagle's first \
                    mark-dead period): a penalised node with no call in flight and no failure for 5 s is the \
                    next acquire's first try, so a client hears of a recovered node within seconds whatever \
                    its call rate, and a node that stays broken costs it one call per 5 s",
            default: false,
            kind: Kind::Balancer(|n, seed| waiting(timed(knee_probation()), n, seed)),
            refused: default_queue(),
        },
        PolicyDef {
            name: "weir-knee-probation-load-timed",
            about: "weir-knee-probation-load with the timed probes of weir-knee-probation-timed (5 s)",
            default: false,
            kind: Kind::Balancer(|n, seed| {
                Box::new(
                    WeirPolicy::waiting(Config { seed, ..timed(knee_probation()) }, n).reading_load(),
                )
            }),
            refused: default_queue(),
        },
        PolicyDef {
            name: "weir-checked",
            about: "weir's default configuration with health checks: before a call the client asks the \
                    balancer for a node it avoids that has been quiet for 2 s (HAProxy's default check \
                    interval) and sends that node a check (Balancer::due_check), whose answer forgives the \
                    node's failures or records one more (report_check), so a recovered node comes back \
                    without a caller's call spent on it",
            default: false,
            kind: Kind::Balancer(|n, seed| Box::new(checked(Config::default(), n, seed))),
            refused: default_queue(),
        },
        PolicyDef {
            name: "weir-knee-checked",
            about: "weir-knee with the health checks of weir-checked in place of probes (no drawn or timed \
                    probe), each success halving its node's failures (forgiveness 0.5)",
            default: false,
            kind: Kind::Balancer(|n, seed| Box::new(checked(knee_checked(), n, seed))),
            refused: default_queue(),
        },
        PolicyDef {
            name: "weir-knee-checked-load",
            about: "weir-knee-checked reading the servers' load reports, as weir-knee-probation-load does",
            default: false,
            kind: Kind::Balancer(|n, seed| {
                Box::new(checked(knee_checked(), n, seed).reading_load())
            }),
            refused: default_queue(),
        },
        PolicyDef {
            name: "weir-slow",
            about: "weir's default configuration with the slowness term (LowestScore::slow_ratio 2: a node \
                    whose successes take twice the fastest node's time or more counts its calls in flight \
                    that many times over)",
            default: false,
            kind: Kind::Balancer(|n, seed| waiting(slow(Config::default()), n, seed)),
            refused: default_queue(),
        },
        PolicyDef {
            name: "weir-knee-probation-slow",
            about: "weir-knee-probation with the slowness term of weir-slow",
            default: false,
            kind: Kind::Balancer(|n, seed| waiting(slow(knee_probation()), n, seed)),
            refused: default_queue(),
        },
        PolicyDef {
            name: "weir-lowest-score-failfast",
            about: "weir's default configuration through the plain acquire",
            default: false,
            kind: Kind::Balancer(|n, seed| weir(Config::default(), n, seed)),
            refused: Refusal::FailFast,
        },
        PolicyDef {
            name: "weir-cascade",
            about: "weir's original cascade preset: the weighted random Cascade (weights success rate³) over \
                    6x5 s success-rate buckets, a Fixed(100) limit",
            default: false,
            kind: Kind::Balancer(|n, seed| weir(Config::cascade(), n, seed)),
            refused: Refusal::FailFast,
        },
        PolicyDef {
            name: "weir-cascade-approx",
            about: "weir's original cascade preset with CascadeApprox (the gist's approximate shuffle) in \
                    place of the Cascade",
            default: false,
            kind: Kind::Balancer(|n, seed| {
                let c = cascade_with(|w| w.draw = Draw::CascadeApprox);
                weir(c, n, seed)
            }),
            refused: Refusal::FailFast,
        },
        PolicyDef {
            name: "weir-weighted-pick",
            about: "weir's original cascade preset with WeightedPick (one weighted pick among the nodes with \
                    room) in place of the Cascade",
            default: false,
            kind: Kind::Balancer(|n, seed| {
                let c = cascade_with(|w| w.draw = Draw::WeightedPick);
                weir(c, n, seed)
            }),
            refused: Refusal::FailFast,
        },
        PolicyDef {
            name: "weir-cascade-ewma",
            about: "weir's original cascade preset with EWMA health (half-life 32 outcomes) in place of the \
                    buckets",
            default: false,
            kind: Kind::Balancer(|n, seed| {
                let c = cascade_with(|w| w.health = WeightedHealth::EWMA);
                weir(c, n, seed)
            }),
            refused: Refusal::FailFast,
        },
        PolicyDef {
            name: "weir-weighted-pick-ewma",
            about: "weir's original cascade preset with WeightedPick and EWMA health (half-life 32 outcomes), \
                    its author's later variant",
            default: false,
            kind: Kind::Balancer(|n, seed| {
                let c = cascade_with(|w| {
                    w.draw = Draw::WeightedPick;
                    w.health = WeightedHealth::EWMA;
                });
                weir(c, n, seed)
            }),
            refused: Refusal::FailFast,
        },
        PolicyDef {
            name: "weir-cascade-aimd",
            about: "weir's original cascade preset with Netflix's AIMD limit in place of Fixed(100)",
            default: false,
            kind: Kind::Balancer(|n, seed| {
                weir(
                    with_limit(LimitAlgorithm::Aimd(AimdLimit::default())),
                    n,
                    seed,
                )
            }),
            refused: Refusal::FailFast,
        },
        PolicyDef {
            name: "weir-cascade-vegas",
            about: "weir's original cascade preset with Netflix's Vegas limit in place of Fixed(100)",
            default: false,
            kind: Kind::Balancer(|n, seed| {
                weir(
                    with_limit(LimitAlgorithm::Vegas(VegasLimit::default())),
                    n,
                    seed,
                )
            }),
            refused: Refusal::FailFast,
        },
        PolicyDef {
            name: "weir-cascade-gradient2",
            about: "weir's original cascade preset with Netflix's Gradient2 limit in place of Fixed(100)",
            default: false,
            kind: Kind::Balancer(|n, seed| {
                weir(
                    with_limit(LimitAlgorithm::Gradient2(Gradient2Limit::default())),
                    n,
                    seed,
                )
            }),
            refused: Refusal::FailFast,
        },
        PolicyDef {
            name: "weir-cascade-ciad",
            about: "weir's original cascade preset with dialogue's CIAD limit (no fast start) in place of \
                    Fixed(100)",
            default: false,
            kind: Kind::Balancer(|n, seed| {
                weir(
                    with_limit(LimitAlgorithm::Ciad(CiadLimit::default())),
                    n,
                    seed,
                )
            }),
            refused: Refusal::FailFast,
        },
        PolicyDef {
            name: "weir-cascade-queued",
            about: "weir's original cascade preset, as weir-cascade, its client asking weir again whenever \
                    one of its attempts completes (as dialogue's clients do)",
            default: false,
            kind: Kind::Balancer(|n, seed| {
                Box::new(WeirPolicy::queued(
                    Config {
                        seed,
                        ..Config::cascade()
                    },
                    n,
                ))
            }),
            refused: Refusal::Queue,
        },
        PolicyDef {
            name: "round-robin",
            about: "round robin from a per-client random offset (SRE ch. 20)",
            default: false,
            kind: Kind::Balancer(|_, seed| Box::new(RoundRobin::new(seed))),
            refused: Refusal::FailFast,
        },
        PolicyDef {
            name: "random",
            about: "uniform random choice",
            default: false,
            kind: Kind::Balancer(|_, seed| Box::new(RandomPick::new(seed))),
            refused: Refusal::FailFast,
        },
        PolicyDef {
            name: "least-loaded",
            about: "least-loaded round robin on this client's in-flight requests (SRE ch. 20)",
            default: false,
            kind: Kind::Balancer(|_, seed| Box::new(LeastLoaded::new(seed))),
            refused: Refusal::FailFast,
        },
        PolicyDef {
            name: "least-loaded-errors",
            about: "least-loaded round robin counting recent errors as active requests (SRE ch. 20)",
            default: false,
            kind: Kind::Balancer(|_, seed| Box::new(LeastLoaded::counting_errors(seed))),
            refused: Refusal::FailFast,
        },
        PolicyDef {
            name: "p2c-peak-ewma",
            about: "power of two choices on peak-EWMA latency x in-flight (tower, Linkerd, Finagle)",
            default: false,
            kind: Kind::Balancer(|_, seed| Box::new(PeakEwmaP2c::new(seed))),
            refused: Refusal::Queue,
        },
        PolicyDef {
            name: "grpc-wrr",
            about: "weighted round robin from backend-reported utilization, qps and errors (gRPC A58)",
            default: false,
            kind: Kind::Balancer(|_, seed| Box::new(WeightedRoundRobin::new(seed))),
            refused: Refusal::FailFast,
        },
        PolicyDef {
            name: "dialogue-balanced",
            about: "dialogue's client, BALANCED (CONCURRENCY_LIMITER_ROUND_ROBIN): in-flight + failure \
                    reservoir, host and endpoint CIAD limiters, multi-host and endpoint queues",
            default: false,
            kind: Kind::Dialogue(Strategy::Balanced),
            refused: Refusal::Queue,
        },
        PolicyDef {
            name: "dialogue-unlimited",
            about: "dialogue's client, BALANCED with its limiters disabled (UNLIMITED_ROUND_ROBIN): the \
                    scoring and give-up rule alone",
            default: false,
            kind: Kind::Dialogue(Strategy::Unlimited),
            refused: Refusal::Queue,
        },
        PolicyDef {
            name: "pin-until-error",
            about: "dialogue's client, PIN_UNTIL_ERROR (CONCURRENCY_LIMITER_PIN_UNTIL_ERROR): one node until \
                    it fails, host and endpoint CIAD limiters and queues",
            default: false,
            kind: Kind::Dialogue(Strategy::PinUntilError),
            refused: Refusal::Queue,
        },
    ]
}

/// The policy called `name`.
pub fn find(name: &str) -> Option<PolicyDef> {
    all().into_iter().find(|p| p.name == name)
}

/// `Config::default()` with CIAD's opt-in RTT tolerance of 2 (the default's limit is CIAD).
fn rtt_tolerant() -> Config {
    let mut c = Config::default();
    if let LimitAlgorithm::Ciad(limit) = &mut c.limit {
        limit.rtt_tolerance = 2.0;
    }
    c
}

/// `Config::default()` with the knee limit's defaults in place of CIAD.
fn knee() -> Config {
    Config {
        limit: LimitAlgorithm::Knee(KneeLimit::default()),
        ..Config::default()
    }
}

/// [`knee`] with the lowest-score family's failure half-life at 2 s.
fn knee_forgiving() -> Config {
    let mut c = knee();
    if let Algorithm::LowestScore(lowest) = &mut c.algorithm {
        lowest.failure_half_life_ns = 2_000_000_000;
    }
    c
}

/// [`knee`] with probation: probes to 1 % of the acquires, and each success halving the failures.
fn knee_probation() -> Config {
    let mut c = knee();
    if let Algorithm::LowestScore(lowest) = &mut c.algorithm {
        lowest.probe_fraction = 0.01;
        lowest.forgiveness = 0.5;
    }
    c
}

/// `c` with timed probes every 5 s (Finagle marks a node dead for 5 s at first; the ramp-back goal's
/// bound is 5 s).
fn timed(mut c: Config) -> Config {
    if let Algorithm::LowestScore(lowest) = &mut c.algorithm {
        lowest.probe_after_ns = 5_000_000_000;
    }
    c
}

/// How long a node the balancer avoids stays quiet before its client checks it: 2 s, HAProxy's default
/// check interval (`inter 2s`), not tuned.
pub const CHECK_QUIET_NS: u64 = 2_000_000_000;

/// [`waiting`]'s client sending health checks every [`CHECK_QUIET_NS`] to the nodes it avoids.
fn checked(config: Config, servers: usize, seed: u64) -> WeirPolicy {
    WeirPolicy::waiting(Config { seed, ..config }, servers).checking(CHECK_QUIET_NS)
}

/// [`knee`] with forgiveness (each success halves the failures) and no probe of either kind: a node it
/// avoids comes back by health checks alone.
fn knee_checked() -> Config {
    let mut c = knee();
    if let Algorithm::LowestScore(lowest) = &mut c.algorithm {
        lowest.probe_fraction = 0.0;
        lowest.probe_after_ns = 0;
        lowest.forgiveness = 0.5;
    }
    c
}

/// `c` with the slowness term at a ratio of 2.
fn slow(mut c: Config) -> Config {
    if let Algorithm::LowestScore(lowest) = &mut c.algorithm {
        lowest.slow_ratio = 2.0;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report lists each policy as one sentence: its clause and the refusal's, each said once, with
    /// one full stop at the end.
    #[test]
    fn every_description_is_one_sentence_with_no_clause_said_twice() {
        for p in all() {
            let d = p.description();
            // One full stop at the end, and none before that ends a sentence (one an abbreviation such as
            // "ch. 20" makes is not followed by a capital).
            let starts_a_sentence = d
                .split(". ")
                .skip(1)
                .any(|rest| rest.starts_with(char::is_uppercase));
            assert!(
                d.ends_with('.') && !d.ends_with("..") && !starts_a_sentence,
                "not one sentence: {d}"
            );
            // The refusal is the refused clause's to say, once.
            assert!(
                !["wait", "fail fast", "failing fast"]
                    .iter()
                    .any(|w| p.about.contains(w)),
                "{}: the about speaks of refusals: {}",
                p.name,
                p.about
            );
            let mut clauses: Vec<String> = d
                .trim_end_matches('.')
                .split([',', ';', ':', '(', ')'])
                .map(|c| c.trim().to_lowercase())
                .filter(|c| !c.is_empty())
                .collect();
            clauses.sort();
            let n = clauses.len();
            clauses.dedup();
            assert_eq!(clauses.len(), n, "a clause said twice: {d}");
        }
    }

    /// What the report says a row's client does with a refused request is what the client it builds does.
    #[test]
    fn every_rows_refusal_is_its_clients() {
        for p in all() {
            let built = match p.kind {
                Kind::Balancer(make) => make(4, 1).on_refusal(),
                // dialogue's client keeps every request it cannot send in its own queues.
                Kind::Dialogue(_) => Refusal::Queue,
            };
            assert_eq!(built, p.refused, "{}", p.name);
        }
    }
}
