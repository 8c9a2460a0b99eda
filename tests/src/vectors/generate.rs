//! The generator of `tests/vectors/*.trace`: seeded random operation scripts, a seeded script of calls
//! with RTTs by node, and hand-written scripts of edge cases, run on the real core, which supplies every
//! expected value.
//!
//! A random script decides each operation from its own generator (seeded per file) and from the state the
//! balancer reports (which leases are held, who is a member), so every operation is meaningful; the
//! balancer's generator is the trace's, untouched by the script. The latency script releases each call
//! when its RTT, drawn for its node, has passed, so that a slow node reads as slow. The edge script
//! states the answer each of its operations must get, and generation panics if the core answers
//! otherwise, so a file never silently stops covering the case it is named for.

use super::{Answer, ErrorKind, Exclude, Item, Lines, Op, Runner, Step, Trace};
use weir::balance::{
    Algorithm, BucketHealth, Draw, EwmaHealth, LowestScore, NodeState, Weighted, WeightedHealth,
};
use weir::limit::{
    AimdLimit, CiadLimit, FixedLimit, Gradient2Limit, GradientLimit, InnerAlgorithm, KneeLimit,
    LimitAlgorithm, QueueSize, SampleWindow, VegasLimit, VegasStep, VegasThreshold, WindowedLimit,
};
use weir::{Config, Outcome, Rng};

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
/// Every trace starts at this time (1000 s), so that dating a release a little before an acquire never
/// needs a negative time.
const START: u64 = 1_000 * S;

/// One trace file: its name, what it covers, its balancer and its script.
#[derive(Clone, Debug)]
pub struct Spec {
    /// The file is `<name>.trace`.
    pub name: &'static str,
    /// What the file covers (written as its header comment).
    pub about: &'static str,
    /// The balancer's configuration.
    pub config: Config,
    /// The balancer's capacity.
    pub capacity: usize,
    /// How its operations are chosen.
    pub script: Script,
}

/// How a trace's operations are chosen.
#[derive(Clone, Copy, Debug)]
pub enum Script {
    /// Seeded random operations.
    Random(Random),
    /// The hand-written edge cases (errors, membership changes), with this generator seed.
    Edges {
        /// The seed of the trace's generator.
        seed: u64,
    },
    /// The hand-written retries elsewhere (`acquire_excluding`), with this generator seed.
    RetryElsewhere {
        /// The seed of the trace's generator.
        seed: u64,
    },
    /// Calls that each take an RTT drawn for their node, one node's several times as long.
    Latency(Latency),
    /// The hand-written health checks (`due_check`, `report_check`), with this generator seed.
    Checks {
        /// The seed of the trace's generator.
        seed: u64,
    },
}

/// The parameters of a random script.
#[derive(Clone, Copy, Debug)]
pub struct Random {
    /// Seed of the script's own generator (which operation comes next).
    pub script: u64,
    /// Seed of the trace's generator (the balancer's draws).
    pub seed: u64,
    /// Steps in the file.
    pub steps: usize,
    /// Members at the start (the first ids of the pool).
    pub initial: usize,
    /// The script adds nodes only while there are fewer members than this.
    pub max_members: usize,
    /// The script releases instead of acquiring while it holds this many leases.
    pub max_held: usize,
    /// Largest time step between two operations.
    pub tick_ns: u64,
    /// Largest rare jump in time (1 step in 100), which lets windows age and counters decay.
    pub jump_ns: u64,
    /// Whether half the releases carry a server load report.
    pub loads: Loads,
}

/// The server load reports of a random script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loads {
    /// None.
    None,
    /// Half the releases carry one (`release_loaded`), from idle to half past the knee, the knee's own
    /// thresholds among them.
    Reported,
    /// The same reports drawn but withheld (every release plain): the same script as `Reported`, for a
    /// test that the reports move the limits.
    Withheld,
}

/// The parameters of a latency script: a fixed membership of healthy nodes, acquires at random
/// intervals, and each lease released when its call is due.
#[derive(Clone, Copy, Debug)]
pub struct Latency {
    /// Seed of the script's own generator (intervals, RTTs, outcomes).
    pub script: u64,
    /// Seed of the trace's generator (the balancer's draws).
    pub seed: u64,
    /// Steps in the file.
    pub steps: usize,
    /// The members (the first ids of the pool).
    pub members: usize,
    /// The script waits for a call to end instead of acquiring while it holds this many leases.
    pub max_held: usize,
    /// Largest time step between two operations.
    pub tick_ns: u64,
    /// The range of a call's RTT, nanoseconds, drawn at its acquire.
    pub rtt_ns: (u64, u64),
    /// The slow node: its calls' RTTs are `times` as long.
    pub slow: u64,
    /// How many times as long the slow node's calls take.
    pub times: u64,
}

/// The node ids the scripts use: small ones, and the extremes of `u64`.
const POOL: [u64; 8] = [1, 2, 3, 4, 5, 6, 1 << 40, u64::MAX];

/// Every trace file, in the order the README lists them.
pub fn specs() -> Vec<Spec> {
    let random = |script: u64, steps: usize, capacity: usize, max_held: usize| Random {
        script,
        seed: script ^ 0x5EED,
        steps,
        initial: 3,
        max_members: capacity.min(5),
        max_held,
        tick_ns: 20 * MS,
        jump_ns: 20 * S,
        loads: Loads::None,
    };
    let fixed2 = LimitAlgorithm::Fixed(FixedLimit { limit: 2 });
    // The weighted family over the average, with the cascade's floor.
    let ewma = |half_life, draw, weight_exponent| {
        Algorithm::Weighted(Weighted {
            health: WeightedHealth::Ewma(EwmaHealth { half_life }),
            draw,
            weight_exponent,
            ..Weighted::CASCADE
        })
    };
    vec![
        Spec {
            name: "default",
            about: "Config::default(): the lowest-score family, CIAD (fast start) limit.",
            config: Config::default(),
            capacity: 6,
            script: Script::Random(Random {
                max_held: 40,
                ..random(1, 700, 6, 40)
            }),
        },
        Spec {
            name: "cascade",
            about: "Config::cascade(): the weighted family, Buckets health (6 x 5 s, decay 3), Cascade, \
                    Fixed(100) limit.",
            config: Config::cascade(),
            capacity: 6,
            script: Script::Random(random(2, 600, 6, 12)),
        },
        Spec {
            name: "decay-lowest-score-aimd",
            about: "The lowest-score family with short half-lives and other costs, AIMD limit (min 1, \
                    40 ms timeout).",
            config: Config {
                algorithm: Algorithm::LowestScore(LowestScore {
                    success_half_life_ns: 200 * MS,
                    failure_half_life_ns: 2 * S,
                    dropped_cost: 0.5,
                    throttled_cost: 0.25,
                    client_error_cost: 0.05,
                    penalty: 8.0,
                    ratio_penalty: 12.5,
                    probe_fraction: 0.0,
                    forgiveness: 0.0,
                    probe_after_ns: 0,
                    slow_ratio: 0.0,
                }),
                limit: LimitAlgorithm::Aimd(AimdLimit {
                    initial_limit: 6,
                    min_limit: 1,
                    max_limit: 12,
                    backoff_ratio: 0.75,
                    timeout_ns: 40 * MS,
                }),
                seed: 11,
                ..Config::default()
            },
            capacity: 6,
            script: Script::Random(random(3, 600, 6, 24)),
        },
        Spec {
            name: "decay-lowest-score-knee",
            about: "The default's family with a knee limit (knee 1.5, hold 1.25, ratio 0.75, 4 in 1..12, \
                    armed for 5 s after a drop): the random RTTs read as cuts, holds and growth on a \
                    node that dropped a call in the last 5 s, as growth alone on the others, and drops \
                    cut to what was in flight and arm the node. Half the releases carry the server's \
                    load report (release_loaded), which an armed node reads in place of the latency.",
            config: Config {
                limit: LimitAlgorithm::Knee(KneeLimit {
                    initial_limit: 4,
                    min_limit: 1,
                    max_limit: 12,
                    backoff_ratio: 0.75,
                    knee: 1.5,
                    hold: 1.25,
                    // Shorter than the default's minute, so that within the file's 50 s the
                    // nodes that drop calls are armed, lose the arm across the script's jumps in time
                    // and are armed again, while the ones that never drop grow past their knee.
                    armed_for_ns: 5 * S,
                }),
                seed: 13,
                ..Config::default()
            },
            capacity: 5,
            script: Script::Random(Random {
                loads: Loads::Reported,
                ..random(13, 600, 5, 20)
            }),
        },
        Spec {
            name: "decay-lowest-score-probation",
            about: "The default's family with probation: a fifth of the acquires probe a random member, \
                    if it has room (probe_fraction 0.2, so that 600 steps hold many), a penalised member \
                    quiet for 2 s with no call in flight is the next acquire's first try (probe_after_ns, \
                    met after the script's jumps in time), each success takes 0.5 of its node's failures \
                    away (forgiveness 0.5); CIAD limit with fast start.",
            config: Config {
                algorithm: Algorithm::LowestScore(LowestScore {
                    probe_fraction: 0.2,
                    forgiveness: 0.5,
                    probe_after_ns: 2 * S,
                    ..LowestScore::DEFAULT
                }),
                seed: 17,
                ..Config::default()
            },
            capacity: 6,
            script: Script::Random(random(17, 600, 6, 24)),
        },
        Spec {
            name: "decay-lowest-score-slow",
            about: "The default's family with the slowness term (slow_ratio 2), CIAD limit with fast \
                    start: four members, calls of 20 to 60 ms, node 1's eight times as long, so that \
                    its calls in flight count several times over once its RTTs read twice the fastest \
                    node's.",
            config: Config {
                algorithm: Algorithm::LowestScore(LowestScore {
                    slow_ratio: 2.0,
                    ..LowestScore::DEFAULT
                }),
                seed: 19,
                ..Config::default()
            },
            capacity: 4,
            script: Script::Latency(Latency {
                script: 19,
                seed: 19 ^ 0x5EED,
                steps: 300,
                members: 4,
                max_held: 24,
                tick_ns: 8 * MS,
                rtt_ns: (20 * MS, 60 * MS),
                slow: 1,
                times: 8,
            }),
        },
        Spec {
            name: "buckets-cascade-approx-gradient2",
            about: "Buckets health (4 x 100 ms, decay 2), CascadeApprox, Gradient2 limit with drop \
                    back-off, weight exponent 2.5, floor 0.01.",
            config: Config {
                algorithm: Algorithm::Weighted(Weighted {
                    health: WeightedHealth::Buckets(BucketHealth {
                        count: 4,
                        width_ns: 100 * MS,
                        decay: 2.0,
                    }),
                    draw: Draw::CascadeApprox,
                    weight_exponent: 2.5,
                    floor: 0.01,
                }),
                limit: LimitAlgorithm::Gradient2(Gradient2Limit {
                    initial_limit: 6,
                    min_limit: 2,
                    max_limit: 16,
                    smoothing: 0.5,
                    queue_size: QueueSize::Constant(2),
                    long_window: 20,
                    rtt_tolerance: 1.5,
                    drop_backoff: Some(0.8),
                }),
                seed: 12,
                ..Config::cascade()
            },
            capacity: 6,
            script: Script::Random(random(4, 600, 6, 24)),
        },
        Spec {
            name: "buckets-weighted-pick-vegas",
            about: "Buckets health (8 x 50 ms, decay 1.5), WeightedPick, Vegas limit probing often (its \
                    jitter draws from Config::seed), factor steps, baseline not from drops.",
            config: Config {
                algorithm: Algorithm::Weighted(Weighted {
                    health: WeightedHealth::Buckets(BucketHealth {
                        count: 8,
                        width_ns: 50 * MS,
                        decay: 1.5,
                    }),
                    draw: Draw::WeightedPick,
                    ..Weighted::CASCADE
                }),
                limit: LimitAlgorithm::Vegas(VegasLimit {
                    initial_limit: 6,
                    max_limit: 24,
                    smoothing: 0.5,
                    probe_multiplier: 1,
                    alpha: VegasThreshold::Constant(2),
                    beta: VegasThreshold::Log10(4),
                    threshold: VegasThreshold::Constant(1),
                    increase: VegasStep::Factor(1.25),
                    decrease: VegasStep::Log10,
                    baseline_from_drops: false,
                }),
                seed: 0xDEAD_BEEF,
                ..Config::cascade()
            },
            capacity: 6,
            script: Script::Random(random(5, 600, 6, 30)),
        },
        Spec {
            name: "ewma-cascade-gradient",
            about: "Ewma health (half-life 10 outcomes), Cascade, Gradient limit probing every 8..16 \
                    samples (its countdown draws from Config::seed), square-root queue.",
            config: Config {
                algorithm: ewma(10, Draw::Cascade, 3.0),
                limit: LimitAlgorithm::Gradient(GradientLimit {
                    initial_limit: 8,
                    min_limit: 2,
                    max_limit: 30,
                    smoothing: 0.2,
                    queue_size: QueueSize::Sqrt { min: 2 },
                    rtt_tolerance: 1.25,
                    probe_interval: Some(8),
                    backoff_ratio: 0.8,
                }),
                seed: 7,
                ..Config::cascade()
            },
            capacity: 6,
            script: Script::Random(random(6, 600, 6, 30)),
        },
        Spec {
            name: "ewma-cascade-approx-ciad",
            about: "Ewma health (half-life 5 outcomes), CascadeApprox, CIAD limit without fast start, \
                    small limits so that acquires find every node busy, and an RTT tolerance of 1.5 so \
                    that slow successes count as drops.",
            config: Config {
                algorithm: ewma(5, Draw::CascadeApprox, 3.0),
                limit: LimitAlgorithm::Ciad(CiadLimit {
                    initial_limit: 4,
                    min_limit: 1,
                    max_limit: 16,
                    backoff_ratio: 0.7,
                    fast_start: false,
                    rtt_tolerance: 1.5,
                }),
                ..Config::cascade()
            },
            capacity: 5,
            script: Script::Random(random(7, 600, 5, 20)),
        },
        Spec {
            name: "ewma-weighted-pick-windowed",
            about: "Ewma health (half-life 20 outcomes), WeightedPick, weight exponent 1, a windowed \
                    Vegas limit (10..50 ms windows, p75 of up to 8 samples).",
            config: Config {
                algorithm: ewma(20, Draw::WeightedPick, 1.0),
                limit: LimitAlgorithm::Windowed(WindowedLimit {
                    inner: InnerAlgorithm::Vegas(VegasLimit {
                        initial_limit: 6,
                        max_limit: 30,
                        probe_multiplier: 2,
                        ..VegasLimit::default()
                    }),
                    min_window_ns: 10 * MS,
                    max_window_ns: 50 * MS,
                    min_samples: 2,
                    min_rtt_threshold_ns: MS,
                    window: SampleWindow::Percentile {
                        percentile: 0.75,
                        capacity: 8,
                    },
                }),
                max_waiters: 0,
                seed: 42,
            },
            capacity: 6,
            script: Script::Random(random(8, 600, 6, 30)),
        },
        Spec {
            name: "edges-decay",
            about: "Edge cases and every error under the lowest-score family (Config::default() with \
                    Fixed(2)).",
            config: Config {
                limit: fixed2,
                ..Config::default()
            },
            capacity: 4,
            script: Script::Edges { seed: 1 },
        },
        Spec {
            name: "edges-buckets",
            about: "Edge cases and every error under the weighted family's Buckets/Cascade \
                    (Config::cascade() with Fixed(2)).",
            config: Config {
                limit: fixed2,
                ..Config::cascade()
            },
            capacity: 4,
            script: Script::Edges { seed: 2 },
        },
        Spec {
            name: "edges-ewma",
            about: "Edge cases and every error under Ewma/WeightedPick with Fixed(2).",
            config: Config {
                algorithm: ewma(3, Draw::WeightedPick, 3.0),
                limit: fixed2,
                ..Config::cascade()
            },
            capacity: 4,
            script: Script::Edges { seed: 3 },
        },
        Spec {
            name: "decay-lowest-score-checks",
            about: "Health checks under Config::default(): a node that failed is named for a check once \
                    quiet for the period (2 s) and not again within it, a failed check records a failure \
                    and dates it, a healthy one forgives the node, which takes calls again; a node in \
                    lame duck or with a call in flight is not named; a node that fails again soon after \
                    its readmission waits twice the period.",
            config: Config::default(),
            capacity: 4,
            script: Script::Checks { seed: 23 },
        },
        Spec {
            name: "retry-elsewhere",
            about: "Retries elsewhere (acquire_excluding) under Config::default() with Fixed(2): a failing \
                    node's requests retried on the others, the fallback to a tried node when no other has \
                    room, every node tried, unknown ids, nothing excluded.",
            config: Config {
                limit: fixed2,
                ..Config::default()
            },
            capacity: 4,
            script: Script::RetryElsewhere { seed: 4 },
        },
    ]
}

/// Runs `spec`'s script on the real core and records every answer and snapshot.
///
/// # Panics
/// If the edge script gets an answer other than the one it states.
pub fn generate(spec: &Spec) -> Trace {
    let seed = match spec.script {
        Script::Random(r) => r.seed,
        Script::Edges { seed } | Script::RetryElsewhere { seed } | Script::Checks { seed } => seed,
        Script::Latency(l) => l.seed,
    };
    let trace = Trace {
        about: spec.about.split('\n').map(str::to_string).collect(),
        config: spec.config,
        capacity: spec.capacity,
        seed,
        items: Vec::new(),
    };
    let mut g = Gen {
        runner: Runner::new(&trace),
        trace,
        t: START,
        acquires: 0,
    };
    match spec.script {
        Script::Random(r) => random(&mut g, &r),
        Script::Edges { .. } => edges(&mut g),
        Script::RetryElsewhere { .. } => retry_elsewhere(&mut g),
        Script::Latency(l) => latency(&mut g, &l),
        Script::Checks { .. } => checks(&mut g),
    }
    g.trace
}

/// A trace being recorded.
struct Gen {
    runner: Runner,
    trace: Trace,
    t: u64,
    acquires: u32,
}

impl Gen {
    fn step(&mut self, op: Op) -> Answer {
        let answer = self
            .runner
            .apply(self.t, op)
            .unwrap_or_else(|e| panic!("generator: {e}"));
        self.trace.items.push(Item::Step(Step {
            t: self.t,
            op,
            answer,
            nodes: self.runner.nodes(self.t),
            stats: self.runner.stats(),
            lines: Lines::default(),
        }));
        answer
    }

    /// An acquire; the lease's number, if one was granted.
    fn acquire(&mut self) -> (u32, Answer) {
        self.acquires += 1;
        let k = self.acquires;
        (k, self.step(Op::Acquire { lease: k }))
    }

    fn reseed(&mut self, seed: u64) {
        self.runner.reseed(seed);
        self.trace.items.push(Item::Reseed(seed));
    }

    fn members(&self) -> Vec<(u64, NodeState)> {
        self.runner
            .nodes(self.t)
            .iter()
            .map(|n| (n.id, n.state))
            .collect()
    }

    fn steps(&self) -> usize {
        self.trace
            .items
            .iter()
            .filter(|i| matches!(i, Item::Step(_)))
            .count()
    }
}

/// The load report of a release under `loads`: drawn for half of them unless there are none, and sent
/// if `Reported`.
fn report(loads: Loads, s: &mut Rng) -> Option<u32> {
    let drawn = (loads != Loads::None && s.bool()).then(|| load(s))?;
    (loads == Loads::Reported).then_some(drawn)
}

/// A server's load report in thousandths: one in eight at a threshold of the knee trace's limit (its
/// hold band starts above 833, 1.25 / 1.5 of the knee, and its knee is above 1000), the others from
/// idle to half past the knee.
fn load(s: &mut Rng) -> u32 {
    match s.u32(..8) {
        0 => [833, 834, 1_000, 1_001][s.usize(..4)],
        _ => s.u32(..=1_500),
    }
}

/// A healthy node's outcome for a roll `r` in 0..100: mostly successes, a failure in 50.
fn healthy(r: u32) -> Outcome {
    match r {
        0..94 => Outcome::Success,
        94..96 => Outcome::Ignored,
        96..98 => Outcome::ClientError,
        _ => Outcome::Failure,
    }
}

/// The outcome a node's call gets: each id has a character (healthy, flaky, failing then recovered,
/// throttling), so that the health models have something to tell apart.
fn outcome(id: u64, late: bool, s: &mut Rng) -> Outcome {
    use Outcome::*;
    let r = s.u32(..100);
    match id % 4 {
        1 => healthy(r),
        2 => match r {
            0..60 => Success,
            60..75 => Failure,
            75..85 => Dropped,
            85..95 => Throttled,
            _ => ClientError,
        },
        3 if !late => match r {
            0..25 => Success,
            25..70 => Failure,
            70..90 => Dropped,
            _ => Ignored,
        },
        3 => healthy(r),
        _ => match r {
            0..70 => Success,
            70..90 => Throttled,
            90..95 => ClientError,
            _ => Dropped,
        },
    }
}

fn random(g: &mut Gen, r: &Random) {
    let mut s = Rng::with_seed(r.script);
    for &id in &POOL[..r.initial] {
        assert_eq!(g.step(Op::Add { id }), Answer::Ok);
    }
    // Leases held (number, node) and leases released once (number).
    let mut held: Vec<(u32, u64)> = Vec::new();
    let mut released: Vec<(u32, u64)> = Vec::new();
    while g.steps() < r.steps {
        g.t += s.u64(..=r.tick_ns);
        if s.u32(..100) == 0 {
            g.t += s.u64(r.jump_ns / 2..=r.jump_ns);
        }
        let late = g.steps() > r.steps / 2;
        let members = g.members();
        let roll = s.u32(..1000);
        let must_release = held.len() >= r.max_held;
        match roll {
            _ if must_release || (450..880).contains(&roll) && !held.is_empty() => {
                let (k, id) = held.swap_remove(s.usize(..held.len()));
                let o = outcome(id, late, &mut s);
                let load = report(r.loads, &mut s);
                g.step(Op::Release {
                    lease: k,
                    outcome: o,
                    load,
                });
                released.push((k, id));
            }
            // Only a lease whose node holds no other lease: the core cannot tell a raw lease released
            // twice from another lease of the same node still in flight (it accepts it and frees that
            // lease's slot), so the files stay within what the core promises.
            880..900
                if released
                    .iter()
                    .any(|&(_, id)| held.iter().all(|h| h.1 != id)) =>
            {
                let free: Vec<u32> = released
                    .iter()
                    .filter(|&&(_, id)| held.iter().all(|h| h.1 != id))
                    .map(|&(k, _)| k)
                    .collect();
                let k = free[s.usize(..free.len())];
                let o = Outcome::ALL[s.usize(..6)];
                let load = report(r.loads, &mut s);
                assert_eq!(
                    g.step(Op::Release {
                        lease: k,
                        outcome: o,
                        load,
                    }),
                    Answer::Err(ErrorKind::InvalidLease)
                );
            }
            900..930 => {
                let (id, on) = match members.get(s.usize(..members.len().max(1))) {
                    Some(&(id, st)) if s.u32(..10) > 0 => (id, st == NodeState::Active),
                    _ => (999, s.bool()),
                };
                g.step(Op::LameDuck { id, on });
            }
            930..955 => {
                let id = match members.get(s.usize(..members.len().max(1))) {
                    Some(&(id, _)) if members.len() > 2 && s.u32(..10) > 0 => id,
                    _ => 998,
                };
                g.step(Op::Remove { id });
            }
            955..995 => {
                let absent: Vec<u64> = POOL
                    .iter()
                    .copied()
                    .filter(|id| !members.iter().any(|m| m.0 == *id))
                    .collect();
                let id = if members.len() < r.max_members && !absent.is_empty() && s.u32(..8) > 0 {
                    absent[s.usize(..absent.len())]
                } else if let Some(&(id, _)) = members.get(s.usize(..members.len().max(1))) {
                    id
                } else {
                    POOL[0]
                };
                g.step(Op::Add { id });
            }
            995.. => {
                g.reseed(s.u64(..));
            }
            _ => {
                if let (k, Answer::Node(id)) = g.acquire() {
                    held.push((k, id));
                }
            }
        }
    }
}

/// Runs a latency script (see [`Latency`]): an acquire at each step unless a call in flight is due or
/// `max_held` are, then the earliest due released, at its end if that is later.
fn latency(g: &mut Gen, l: &Latency) {
    let mut s = Rng::with_seed(l.script);
    for &id in &POOL[..l.members] {
        assert_eq!(g.step(Op::Add { id }), Answer::Ok);
    }
    // Leases in flight: (when the call ends, number).
    let mut held: Vec<(u64, u32)> = Vec::new();
    while g.steps() < l.steps {
        g.t += s.u64(..=l.tick_ns);
        let due = held
            .iter()
            .enumerate()
            .min_by_key(|(_, h)| h.0)
            .map(|(i, h)| (i, h.0));
        match due {
            Some((i, end)) if end <= g.t || held.len() >= l.max_held => {
                g.t = g.t.max(end);
                let (_, k) = held.swap_remove(i);
                let o = healthy(s.u32(..100));
                assert_eq!(
                    g.step(Op::Release {
                        lease: k,
                        outcome: o,
                        load: None,
                    }),
                    Answer::Ok
                );
            }
            _ => {
                if let (k, Answer::Node(id)) = g.acquire() {
                    let rtt = s.u64(l.rtt_ns.0..=l.rtt_ns.1);
                    let rtt = if id == l.slow { rtt * l.times } else { rtt };
                    held.push((g.t + rtt, k));
                }
            }
        }
    }
}

/// What an edge-case step must answer.
#[derive(Clone, Copy)]
enum Want {
    Is(Answer),
    AnyNode,
}

use ErrorKind::*;
use Want::*;

const OK: Want = Is(Answer::Ok);

fn err(k: ErrorKind) -> Want {
    Is(Answer::Err(k))
}

impl Gen {
    fn check(&mut self, op: Op, want: Want) -> Answer {
        self.t += MS;
        let got = self.step(op);
        match want {
            Is(a) => assert_eq!(got, a, "edge script, {op:?}"),
            AnyNode => assert!(
                matches!(got, Answer::Node(_)),
                "edge script, {op:?}: {got:?}"
            ),
        }
        got
    }

    /// An acquire that must answer `want`; the lease's number and node.
    #[track_caller]
    fn take(&mut self, want: Want) -> (u32, u64) {
        self.t += MS;
        let (k, got) = self.acquire();
        expect(k, got, want)
    }

    /// `report_check(id, healthy)`, which must answer `want`.
    fn report(&mut self, id: u64, healthy: bool, want: Want) {
        self.check(Op::ReportCheck { id, healthy }, want);
    }

    fn release(&mut self, k: u32, outcome: Outcome, want: Want) {
        self.check(
            Op::Release {
                lease: k,
                outcome,
                load: None,
            },
            want,
        );
    }

    /// An acquire that may be refused by the give-up rule (`AllBusy`): the lease and its node if granted.
    fn try_take(&mut self) -> Option<(u32, u64)> {
        self.t += MS;
        let (k, got) = self.acquire();
        match got {
            Answer::Node(id) => Some((k, id)),
            Answer::Err(AllBusy) => None,
            other => panic!("script, acquire L{k}: {other:?}"),
        }
    }

    /// `take`, excluding `ids`.
    fn retry(&mut self, ids: &[u64], want: Want) -> (u32, u64) {
        self.t += MS;
        self.acquires += 1;
        let k = self.acquires;
        let exclude = Exclude::new(ids);
        let got = self.step(Op::AcquireExcluding { lease: k, exclude });
        expect(k, got, want)
    }
}

/// Acquire `L<k>`'s answer `got`, checked against `want`; the lease and its node (0 if refused).
#[track_caller]
fn expect(k: u32, got: Answer, want: Want) -> (u32, u64) {
    match want {
        Is(a) => assert_eq!(
            got,
            a,
            "script, acquire L{k} at {}",
            std::panic::Location::caller()
        ),
        AnyNode => assert!(
            matches!(got, Answer::Node(_)),
            "script, acquire L{k}: {got:?}"
        ),
    }
    (k, if let Answer::Node(id) = got { id } else { 0 })
}

/// Retries elsewhere under `Fixed(2)` with capacity 4: node 1 fails every call, and each of its
/// requests is retried excluding it.
fn retry_elsewhere(g: &mut Gen) {
    let max = u64::MAX;
    g.retry(&[1], err(NoActiveNodes));
    for id in [1, 2, 3] {
        g.check(Op::Add { id }, OK);
    }
    let mut retried = 0;
    for _ in 0..24 {
        let (k, id) = g.take(AnyNode);
        if id == 1 {
            g.release(k, Outcome::Failure, OK);
            let (r, other) = g.retry(&[1], AnyNode);
            assert_ne!(
                other, 1,
                "retry script: a retry went back to the failing node"
            );
            g.release(r, Outcome::Success, OK);
            retried += 1;
        } else {
            g.release(k, Outcome::Success, OK);
        }
    }
    assert!(retried > 0, "retry script: node 1 was never chosen");
    // Nodes 2 and 3 full. Node 1 has room, but it failed every call: far worse than twice a full node's
    // score (counted at least 6 in flight), so the give-up rule refuses it, tried or not.
    let mut held: Vec<(u32, u64)> = (0..4).map(|_| g.retry(&[1], AnyNode)).collect();
    assert!(held.iter().all(|&(_, id)| id != 1));
    g.retry(&[1, 2], err(AllBusy));
    g.retry(&[1], err(AllBusy));
    g.take(err(AllBusy));
    // One of node 2's leases back: a retry that tried node 2 goes back to it, the only node with room
    // that the give-up rule lets pass.
    let on2 = held
        .iter()
        .position(|h| h.1 == 2)
        .expect("node 2 holds a lease");
    let (k, _) = held.remove(on2);
    g.release(k, Outcome::Success, OK);
    let (back, _) = g.retry(&[2], Is(Answer::Node(2)));
    g.retry(&[2], err(AllBusy));
    held.push((back, 2));
    for (k, _) in held {
        g.release(k, Outcome::Success, OK);
    }
    // Every node tried, only unknown ids, or nothing excluded: the ordinary acquire.
    for ids in [
        &[3, 2, 1][..],
        &[42, max][..],
        &[][..],
        &[2, 2, 2, 2, 2, 2, 2, 2][..],
    ] {
        for _ in 0..4 {
            let (k, _) = g.retry(ids, AnyNode);
            g.release(k, Outcome::Success, OK);
        }
    }
    // A lame duck is no candidate, excluded or not.
    g.check(Op::LameDuck { id: 2, on: true }, OK);
    let (k, id) = g.retry(&[3], Is(Answer::Node(1)));
    assert_eq!(id, 1);
    g.release(k, Outcome::Success, OK);
    g.check(Op::Remove { id: 1 }, OK);
    g.check(Op::Remove { id: 3 }, OK);
    g.retry(&[3], err(NoActiveNodes));
}

/// Every error, and the membership changes around leases in flight. Under `Fixed(2)` with capacity 4.
fn edges(g: &mut Gen) {
    let max = u64::MAX;
    // Nothing to acquire from; nothing to remove or lame-duck.
    g.take(err(NoActiveNodes));
    g.check(Op::Remove { id: 1 }, err(UnknownId));
    g.check(Op::LameDuck { id: 1, on: true }, err(UnknownId));
    // Members 1, 0 and u64::MAX: ids are any u64.
    g.check(Op::Add { id: 1 }, OK);
    g.check(Op::Add { id: 1 }, err(DuplicateId));
    g.check(Op::Add { id: 0 }, OK);
    g.check(Op::Add { id: max }, OK);
    // A lease released twice: the second is refused and changes nothing (while its node holds no other
    // lease; see `random`).
    let (k, _) = g.take(AnyNode);
    g.release(k, Outcome::Success, OK);
    g.release(k, Outcome::Success, err(InvalidLease));
    g.release(k, Outcome::Failure, err(InvalidLease));
    // Three nodes at limit 2: six leases, then every node is busy.
    let mut held: Vec<(u32, u64)> = (0..6).map(|_| g.take(AnyNode)).collect();
    g.take(err(AllBusy));
    g.take(err(AllBusy));
    let (k, _) = held.remove(0);
    g.release(k, Outcome::Success, OK);
    held.push(g.take(AnyNode));
    g.take(err(AllBusy));
    // Lame duck: idempotent; a lame duck's leases finish and are recorded.
    g.check(Op::LameDuck { id: 0, on: true }, OK);
    g.check(Op::LameDuck { id: 0, on: true }, OK);
    let on0 = held
        .iter()
        .position(|h| h.1 == 0)
        .expect("node 0 holds a lease");
    let (k, _) = held.remove(on0);
    g.release(k, Outcome::Failure, OK);
    g.take(err(AllBusy));
    g.check(Op::LameDuck { id: 1, on: true }, OK);
    g.check(Op::LameDuck { id: max, on: true }, OK);
    g.take(err(NoActiveNodes));
    g.check(Op::LameDuck { id: 0, on: false }, OK);
    held.push(g.take(Is(Answer::Node(0))));
    g.check(Op::LameDuck { id: 1, on: false }, OK);
    g.check(Op::LameDuck { id: max, on: false }, OK);
    // Every outcome on live nodes.
    for o in [
        Outcome::Dropped,
        Outcome::Ignored,
        Outcome::Throttled,
        Outcome::ClientError,
    ] {
        let (k, _) = held.remove(0);
        g.release(k, o, OK);
        held.push(g.take(AnyNode));
    }
    // Node 1 leaves with its leases in flight: they come back as node_removed, once.
    g.check(Op::Remove { id: 1 }, OK);
    g.check(Op::Remove { id: 1 }, err(UnknownId));
    g.check(Op::LameDuck { id: 1, on: false }, err(UnknownId));
    let mut stale: Vec<u32> = held.iter().filter(|h| h.1 == 1).map(|h| h.0).collect();
    held.retain(|h| h.1 != 1);
    assert!(stale.len() == 2, "node 1 was full when removed");
    let first = stale.pop().expect("two");
    g.release(first, Outcome::Success, err(NodeRemoved));
    // Re-added while a lease of the old node 1 is in flight: a new slot, a fresh node.
    g.check(Op::Add { id: 1 }, OK);
    g.check(Op::Add { id: 5 }, err(CapacityFull));
    let last = stale.pop().expect("one left");
    g.release(last, Outcome::Failure, err(NodeRemoved));
    // The old slot is free: taken by node 5. Both stale leases are spent.
    g.check(Op::Add { id: 5 }, OK);
    g.release(first, Outcome::Success, err(InvalidLease));
    g.release(last, Outcome::Dropped, err(InvalidLease));
    g.check(Op::Add { id: 6 }, err(CapacityFull));
    g.check(Op::Add { id: 5 }, err(DuplicateId));
    // The new node 1 takes traffic.
    for _ in 0..4 {
        let h = g.take(AnyNode);
        held.push(h);
    }
    // A release dated a day ahead: the balancer dates it no later than the end of the next clock epoch.
    let (k, _) = held.remove(0);
    let t = g.t;
    g.t += 86_400 * S;
    g.release(k, Outcome::Success, OK);
    g.t = t;
    // Everything back, with every outcome in turn.
    let mut i = 0;
    while let Some((k, _)) = held.pop() {
        g.release(k, Outcome::ALL[i % 6], OK);
        i += 1;
        if i % 3 == 0 {
            // The nodes with room are those just released, one of them after a failure or a drop: the
            // give-up rule may refuse it when it is the best with room.
            if let Some(h) = g.try_take() {
                held.insert(0, h);
            }
            if i > 12 && !held.is_empty() {
                // Stop refilling: drain.
                let (k, _) = held.remove(0);
                g.release(k, Outcome::Success, OK);
            }
        }
        if i > 20 {
            break;
        }
    }
    while let Some((k, _)) = held.pop() {
        g.release(k, Outcome::Success, OK);
    }
    // Everyone leaves, one with a lease in flight.
    let (k, id) = g.take(AnyNode);
    for m in [0, 1, 5, max] {
        g.check(Op::Remove { id: m }, OK);
    }
    assert!([0, 1, 5, max].contains(&id));
    g.take(err(NoActiveNodes));
    g.release(k, Outcome::Success, err(NodeRemoved));
    g.take(err(NoActiveNodes));
    // A new generator, a new member.
    g.reseed(99);
    g.check(Op::Add { id: 7 }, OK);
    let (k, _) = g.take(Is(Answer::Node(7)));
    g.release(k, Outcome::Success, OK);
    // Health checks: an unknown id is refused in every family; the weighted family takes none.
    let lowest = matches!(g.trace.config.algorithm, Algorithm::LowestScore(_));
    let taken = |ok: Want| if lowest { ok } else { err(NotLowestScore) };
    g.check(Op::DueCheck { quiet_ns: 0 }, Is(Answer::Nothing));
    g.report(42, true, err(UnknownId));
    g.report(7, false, taken(OK));
    // A failed check is a failure: with no quiet asked, node 7 is due at once, and again.
    let named = if lowest {
        Answer::Node(7)
    } else {
        Answer::Nothing
    };
    g.check(Op::DueCheck { quiet_ns: 0 }, Is(named));
    g.check(Op::DueCheck { quiet_ns: 0 }, Is(named));
    // A quiet longer than any counter's age is never met.
    g.check(Op::DueCheck { quiet_ns: max }, Is(Answer::Nothing));
    g.report(7, true, taken(OK));
    g.check(Op::DueCheck { quiet_ns: 0 }, Is(Answer::Nothing));
}

/// Health checks under the default (capacity 4): node 2 fails every call; it is named for a check once
/// its failures have been quiet for 2 s, then not again within 2 s; a failed check keeps it out, a
/// healthy one brings it back. Nodes in lame duck or with a call in flight are not named. A node that
/// fails again soon after its readmission waits twice the period.
fn checks(g: &mut Gen) {
    const QUIET: u64 = 2 * S;
    let due = |g: &mut Gen, want: Answer| g.check(Op::DueCheck { quiet_ns: QUIET }, Is(want));
    for id in [1, 2, 3] {
        g.check(Op::Add { id }, OK);
    }
    let mut failed = 0;
    for _ in 0..30 {
        g.t += 10 * MS;
        let (k, id) = g.take(AnyNode);
        failed += u32::from(id == 2);
        let o = if id == 2 {
            Outcome::Failure
        } else {
            Outcome::Success
        };
        g.release(k, o, OK);
    }
    assert!(failed > 0, "checks script: node 2 was never called");
    // Clean nodes are never named; node 2 only once quiet for the period.
    due(g, Answer::Nothing);
    g.t += S;
    due(g, Answer::Nothing);
    g.t += S + S / 2;
    due(g, Answer::Node(2));
    // Named: not again within the period, whoever asks.
    due(g, Answer::Nothing);
    // The check failed: a failure, dated now, so node 2 waits another period.
    g.report(2, false, OK);
    g.t += S;
    due(g, Answer::Nothing);
    g.t += S + S / 10;
    due(g, Answer::Node(2));
    // The next check answers well: node 2 is forgiven and takes calls as any idle node.
    g.report(2, true, OK);
    due(g, Answer::Nothing);
    let mut back = 0;
    for _ in 0..30 {
        g.t += 10 * MS;
        let (k, id) = g.take(AnyNode);
        back += u32::from(id == 2);
        g.release(k, Outcome::Success, OK);
    }
    assert!(back > 0, "checks script: node 2 did not come back");
    // Node 3 fails with a second call in flight: while it holds that call, or is in lame duck, it is
    // not named.
    let (mut on3, mut others) = (Vec::new(), Vec::new());
    while on3.len() < 2 {
        let (k, id) = g.take(AnyNode);
        if id == 3 {
            on3.push(k)
        } else {
            others.push(k)
        }
    }
    for k in others {
        g.release(k, Outcome::Success, OK);
    }
    g.release(on3[0], Outcome::Failure, OK);
    let held = on3[1];
    g.t += 3 * S;
    due(g, Answer::Nothing);
    g.release(held, Outcome::Failure, OK);
    g.t += 3 * S;
    g.check(Op::LameDuck { id: 3, on: true }, OK);
    due(g, Answer::Nothing);
    g.check(Op::LameDuck { id: 3, on: false }, OK);
    due(g, Answer::Node(3));
    // A checker on its own timer may report any member, named or not, in lame duck too.
    g.check(Op::LameDuck { id: 1, on: true }, OK);
    g.report(1, false, OK);
    g.check(Op::LameDuck { id: 1, on: false }, OK);
    g.report(3, true, OK);
    g.report(4, true, err(UnknownId));
    // Node 3 was readmitted by its check: a failure soon after is a relapse, and it waits twice the
    // period before its next check.
    let k = loop {
        let (k, id) = g.take(AnyNode);
        if id == 3 {
            break k;
        }
        g.release(k, Outcome::Success, OK);
    };
    g.release(k, Outcome::Failure, OK);
    g.t += QUIET + S / 2;
    // Node 1's failed check is 2 s old: it is due (and answers well), node 3 is not.
    due(g, Answer::Node(1));
    g.report(1, true, OK);
    due(g, Answer::Nothing);
    g.t += QUIET;
    due(g, Answer::Node(3));
}
