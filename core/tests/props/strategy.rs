//! The inputs of the properties: random configurations (every algorithm, each family with its
//! parameters, and every limit algorithm the model follows) and random call sequences.

use proptest::prelude::*;
use proptest::sample::Index;
use weir::balance::{
    Algorithm, BucketHealth, Draw, EwmaHealth, LowestScore, Weighted, WeightedHealth,
};
use weir::{
    limit::AimdLimit, limit::CiadLimit, limit::FixedLimit, limit::Gradient2Limit,
    limit::LimitAlgorithm, Config, Outcome,
};

/// Ids are drawn from `1..=POOL`, more than the largest capacity.
const POOL: u64 = 6;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// `now` only moves forward (by steps of any magnitude); releases may still be dated before their
    /// acquire.
    Monotone,
    /// Every call gets an arbitrary `now`, anywhere in `u64`.
    Arbitrary,
}

#[derive(Clone, Debug)]
pub enum Op {
    Add(u64),
    Remove(u64),
    LameDuck(u64, bool),
    Acquire(u64),
    Release {
        pick: Index,
        outcome: Outcome,
        t: u64,
        /// Date the release before its acquire.
        early: bool,
    },
}

fn time() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..10_000,
        0u64..100_000_000_000,
        any::<u64>(),
        (u64::MAX - 10_000)..=u64::MAX,
    ]
}

pub fn op() -> impl Strategy<Value = Op> {
    ops(5, 5)
}

/// Calls with acquires and releases in the proportion `acquire : release`.
pub fn ops(acquire: u32, release: u32) -> impl Strategy<Value = Op> {
    let id = 1..=POOL;
    prop_oneof![
        2 => id.clone().prop_map(Op::Add),
        1 => id.clone().prop_map(Op::Remove),
        1 => (id, any::<bool>()).prop_map(|(id, l)| Op::LameDuck(id, l)),
        acquire => time().prop_map(Op::Acquire),
        release => (any::<Index>(), 0u8..6, time(), prop::bool::weighted(0.2)).prop_map(
            |(pick, o, t, early)| Op::Release {
                pick,
                outcome: Outcome::from_code(o).unwrap(),
                t,
                early,
            }
        ),
    ]
}

/// How the weighted family measures a success rate: a bucket window of any shape, or an average.
fn weighted_health() -> impl Strategy<Value = WeightedHealth> {
    prop_oneof![
        (
            1usize..=8,
            prop_oneof![
                Just(1u64),
                Just(7),
                Just(1_000),
                Just(1_000_000),
                Just(5_000_000_000)
            ],
            prop_oneof![Just(1.0), Just(1.5), Just(3.0), Just(1e6)],
        )
            .prop_map(
                |(count, width_ns, decay)| WeightedHealth::Buckets(BucketHealth {
                    count,
                    width_ns,
                    decay
                })
            ),
        (1u32..=64).prop_map(|half_life| WeightedHealth::Ewma(EwmaHealth { half_life })),
    ]
}

/// The weighted family with any success-rate measure, any draw, a weight exponent from 0.5 to the
/// largest (64) and a recovery floor from 1e-300 to the largest (1).
fn weighted() -> impl Strategy<Value = Weighted> {
    (
        weighted_health(),
        prop_oneof![
            Just(Draw::Cascade),
            Just(Draw::CascadeApprox),
            Just(Draw::WeightedPick)
        ],
        prop_oneof![Just(0.5), Just(1.0), Just(2.5), Just(3.0), Just(64.0)],
        prop_oneof![Just(1e-4), Just(1e-300), Just(0.5), Just(1.0)],
    )
        .prop_map(|(health, draw, weight_exponent, floor)| Weighted {
            health,
            draw,
            weight_exponent,
            floor,
        })
}

/// The lowest-score family with varied half-lives (1 ms to an hour, some whole numbers of ticks), outcome
/// costs and penalty coefficients (the default's, `LowestScore::DEFAULT`'s 10 and 16, and others; 0
/// included, where every key is the in-flight count alone).
fn lowest_score() -> impl Strategy<Value = LowestScore> {
    let LowestScore {
        penalty,
        ratio_penalty,
        ..
    } = LowestScore::DEFAULT;
    let half_life = prop_oneof![
        Just(1_000_000u64),
        Just(7_000_000),
        Just(1 << 30),
        Just(1_000_000_000),
        Just(30_000_000_000),
        Just(3_600_000_000_000),
    ];
    let cost = prop_oneof![Just(0.1f32), Just(0.01), Just(0.0), Just(1.0), Just(0.37)];
    let coefficient = prop_oneof![
        Just(penalty),
        Just(ratio_penalty),
        Just(8.0f32),
        Just(0.0),
        Just(0.5),
        Just(1e6)
    ];
    let forgiveness = prop_oneof![Just(0.0f32), Just(0.5), Just(1.0), Just(0.3)];
    prop_oneof![
        1 => Just(LowestScore::DEFAULT),
        3 => (half_life.clone(), half_life, cost.clone(), cost.clone(), cost, coefficient.clone(), coefficient, forgiveness).prop_map(
            |(s, f, dropped_cost, throttled_cost, client_error_cost, penalty, ratio_penalty, forgiveness)| LowestScore {
                success_half_life_ns: s,
                failure_half_life_ns: f,
                dropped_cost,
                throttled_cost,
                client_error_cost,
                penalty,
                ratio_penalty,
                // Probes draw from the acquire's generator, which the model does not follow: off here
                // (the scan's tests and a trace file cover them).
                probe_fraction: 0.0,
                forgiveness,
                // Timed probes try a penalised node first, which the model's lowest score does not
                // follow: off here (`core/tests/probation.rs` and a trace file cover them).
                probe_after_ns: 0,
                // The slowness term reads RTTs, which the model's scores leave out: off here (the
                // family's unit tests, `core/tests/slow.rs` and a trace file cover it).
                slow_ratio: 0.0,
            }
        ),
    ]
}

/// Every algorithm: the weighted family (a bucket window or an average, each draw) two times in three,
/// the lowest-score family one time in three.
fn algorithm() -> impl Strategy<Value = Algorithm> {
    prop_oneof![
        2 => weighted().prop_map(Algorithm::Weighted),
        1 => lowest_score().prop_map(Algorithm::LowestScore),
    ]
}

fn limit() -> impl Strategy<Value = LimitAlgorithm> {
    prop_oneof![
        (0u32..=3).prop_map(|limit| LimitAlgorithm::Fixed(FixedLimit { limit })),
        (
            0u32..=2,
            0u32..=2,
            0u32..=2,
            prop_oneof![Just(0.5), Just(0.9)],
            1u64..=1_000_000
        )
            .prop_map(|(min_limit, up, extra, backoff_ratio, timeout_ns)| {
                // min_limit <= initial_limit <= max_limit, as validation requires.
                LimitAlgorithm::Aimd(AimdLimit {
                    initial_limit: min_limit + up,
                    min_limit,
                    max_limit: min_limit + up + extra,
                    backoff_ratio,
                    timeout_ns,
                })
            }),
        // Limiters whose update draws no random bits (the model feeds 0; the balancer derives its own).
        (1u32..=2, 0u32..=2, 0u32..=2, any::<bool>()).prop_map(
            |(min_limit, up, extra, fast_start)| {
                LimitAlgorithm::Ciad(CiadLimit {
                    initial_limit: min_limit + up,
                    min_limit,
                    max_limit: min_limit + up + extra,
                    fast_start,
                    ..CiadLimit::default()
                })
            }
        ),
        (1u32..=2, 0u32..=2, 0u32..=2).prop_map(|(min_limit, up, extra)| {
            LimitAlgorithm::Gradient2(Gradient2Limit {
                initial_limit: min_limit + up,
                min_limit,
                max_limit: min_limit + up + extra,
                ..Gradient2Limit::default()
            })
        }),
    ]
}

pub fn config() -> impl Strategy<Value = Config> {
    (algorithm(), limit(), any::<u64>()).prop_map(|(algorithm, limit, seed)| Config {
        algorithm,
        limit,
        seed,
        ..Config::cascade()
    })
}

/// Lowest-score configurations that reach the give-up rule: fixed limits above 5, so that a full node
/// can be heavy, besides the adaptive limits.
pub fn lowest_score_config() -> impl Strategy<Value = Config> {
    (
        lowest_score(),
        prop_oneof![
            2 => (6u32..=8).prop_map(|limit| LimitAlgorithm::Fixed(FixedLimit { limit })),
            1 => limit(),
            1 => Just(Config::default().limit),
        ],
        any::<u64>(),
    )
        .prop_map(|(lowest, limit, seed)| Config {
            algorithm: Algorithm::LowestScore(lowest),
            limit,
            seed,
            ..Config::default()
        })
}
