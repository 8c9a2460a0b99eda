//! The inputs of the properties: random configurations (every health model, policy and limit algorithm
//! the model follows) and random call sequences.

use proptest::prelude::*;
use proptest::sample::Index;
use weir::balance::{BucketHealth, DecayHealth, EwmaHealth};
use weir::{
    balance::HealthModel, balance::Policy, limit::AimdLimit, limit::CiadLimit, limit::FixedLimit,
    limit::Gradient2Limit, limit::LimitAlgorithm, Config, Outcome,
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

fn health() -> impl Strategy<Value = HealthModel> {
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
                |(count, width_ns, decay)| HealthModel::Buckets(BucketHealth {
                    count,
                    width_ns,
                    decay
                })
            ),
        (1u32..=64).prop_map(|half_life| HealthModel::Ewma(EwmaHealth { half_life })),
        decay_health(),
    ]
}

/// The default model with varied half-lives (1 ms to an hour, some whole numbers of ticks), outcome costs
/// and penalty coefficients (the default's, `HealthModel::DECAY`'s 10 and 16, and others; 0 included,
/// where every key is the in-flight count alone).
fn decay_health() -> impl Strategy<Value = HealthModel> {
    let HealthModel::Decay(DecayHealth {
        penalty,
        ratio_penalty,
        ..
    }) = HealthModel::DECAY
    else {
        unreachable!("the default model is the decay model")
    };
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
    prop_oneof![
        1 => Just(HealthModel::DECAY),
        3 => (half_life.clone(), half_life, cost.clone(), cost.clone(), cost, coefficient.clone(), coefficient).prop_map(
            |(s, f, dropped_cost, throttled_cost, client_error_cost, penalty, ratio_penalty)| HealthModel::Decay(DecayHealth {
                success_half_life_ns: s,
                failure_half_life_ns: f,
                dropped_cost,
                throttled_cost,
                client_error_cost,
                penalty,
                ratio_penalty,
            })
        ),
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
    (
        prop_oneof![
            Just(Policy::Cascade),
            Just(Policy::CascadeApprox),
            Just(Policy::WeightedPick)
        ],
        health(),
        limit(),
        prop_oneof![Just(0.5), Just(1.0), Just(2.5), Just(3.0), Just(64.0)],
        prop_oneof![Just(1e-4), Just(1e-300), Just(0.5), Just(1.0)],
        any::<u64>(),
    )
        .prop_map(
            |(policy, health, limit, weight_exponent, floor, seed)| Config {
                health,
                weight_exponent,
                floor,
                // The decay model goes with the lowest score, and only with it (`ConfigError::ModelPolicy`).
                policy: if matches!(health, HealthModel::Decay(_)) {
                    Policy::LowestScore
                } else {
                    policy
                },
                limit,
                seed: seed,
                ..Config::cascade()
            },
        )
}

/// Default-model configurations that reach the give-up rule: fixed limits above 5, so that a full node
/// can be heavy, besides the adaptive limits.
pub fn decay_config() -> impl Strategy<Value = Config> {
    (
        decay_health(),
        prop_oneof![
            2 => (6u32..=8).prop_map(|limit| LimitAlgorithm::Fixed(FixedLimit { limit })),
            1 => limit(),
            1 => Just(Config::default().limit),
        ],
        any::<u64>(),
    )
        .prop_map(|(health, limit, seed)| Config {
            health,
            limit,
            seed: seed,
            ..Config::default()
        })
}
