//! The configuration as plain C structs: a tag plus every variant's parameters side by side (no unions,
//! so a C program sets fields without casts), the `*_default()` fillers, and the conversion to the
//! core's [`Config`], which validates every value.
//!
//! A tagged struct carries every variant's parameters, not only the chosen one's: switching the tag of a
//! struct that came from a filler gives that variant's defaults.
//!
//! | file | what |
//! |---|---|
//! | `health.rs` | `weir_health`: the decay, bucket and average models |
//! | `limit.rs` | `weir_limit`: fixed, AIMD, Vegas, Gradient, Gradient2, CIAD and the windowed wrapper |
//! | `error.rs` | the core's refusals in the header's words (field paths, ranges as the header states them) |
//! | here | `weir_config`, the policy, the conversion of the whole and the refused-tag message |

// The header lists items in module order: the policy and `weir_config` first, then the health models,
// then the limits.
mod error;
mod health;
mod limit;

pub(crate) use error::config_error;
pub use health::*;
pub use limit::*;

use crate::boundary::{weir_status, Error, WEIR_ERR_INVALID_ARGUMENT};
use weir_core::balance::Policy;
use weir_core::Config;

/// Selection policy (a `weir_config`'s `policy`): one of the `WEIR_POLICY_*` values.
#[allow(non_camel_case_types)]
pub type weir_policy = u32;
/// The default: the node with room whose in-flight count plus failure penalty is lowest (needs
/// `WEIR_HEALTH_DECAY`).
pub const WEIR_POLICY_LOWEST_SCORE: weir_policy = 0;
/// The seeds' weighted random fallback cascade (needs `WEIR_HEALTH_BUCKETS` or `WEIR_HEALTH_EWMA`).
pub const WEIR_POLICY_CASCADE: weir_policy = 1;
/// The gist's cheaper approximate cascade.
pub const WEIR_POLICY_CASCADE_APPROX: weir_policy = 2;
/// One weighted pick among the nodes with room (the seeds' later variant).
pub const WEIR_POLICY_WEIGHTED_PICK: weir_policy = 3;

/// Everything a balancer is built from. Start from `weir_config_default()` (the algorithm that wins in
/// weir's simulator) or `weir_config_cascade()` (the seeds' algorithm exactly) and change fields.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_config {
    /// The health model.
    pub health: weir_health,
    /// The weighted policies' weight = success rate ^ this; finite, in (0, 64].
    pub weight_exponent: f64,
    /// The weighted policies' recovery floor; finite, in (0, 1].
    pub floor: f64,
    /// One of the `WEIR_POLICY_*` values.
    pub policy: weir_policy,
    /// The per-node concurrency limit.
    pub limit: weir_limit,
    /// Seed of the library's per-thread generators (`weir_balancer_acquire`); not to be confused with
    /// `weir_config_cascade()`, the preset named after the seeds.
    pub seed: u64,
    /// The most callers that may wait in `weir_balancer_acquire_wait` at once; at most 2^20; 0 turns
    /// waiting off.
    pub max_waiters: u32,
}

/// The C form of a core configuration.
pub(crate) fn config_to_c(config: &Config) -> weir_config {
    weir_config {
        health: health_to_c(config.health),
        weight_exponent: config.weight_exponent,
        floor: config.floor,
        policy: match config.policy {
            Policy::LowestScore => WEIR_POLICY_LOWEST_SCORE,
            Policy::Cascade => WEIR_POLICY_CASCADE,
            Policy::CascadeApprox => WEIR_POLICY_CASCADE_APPROX,
            Policy::WeightedPick => WEIR_POLICY_WEIGHTED_PICK,
        },
        limit: limit_to_c(config.limit),
        seed: config.seed,
        max_waiters: config.max_waiters,
    }
}

fn unknown(field: &str, value: u32, choices: &str) -> Error {
    Error::new(
        WEIR_ERR_INVALID_ARGUMENT,
        format!("{field}: {value} is not one of {choices}"),
    )
}

/// The core configuration a C one describes, validated by the core: an unknown tag is
/// `WEIR_ERR_INVALID_ARGUMENT`, a value the core refuses `WEIR_ERR_INVALID_CONFIG`; either message names
/// the field.
pub(crate) fn config_from_c(c: &weir_config) -> Result<Config, Error> {
    let health = health_from_c(&c.health)?;
    let policy = match c.policy {
        WEIR_POLICY_LOWEST_SCORE => Policy::LowestScore,
        WEIR_POLICY_CASCADE => Policy::Cascade,
        WEIR_POLICY_CASCADE_APPROX => Policy::CascadeApprox,
        WEIR_POLICY_WEIGHTED_PICK => Policy::WeightedPick,
        k => {
            return Err(unknown(
                "policy",
                k,
                "WEIR_POLICY_LOWEST_SCORE (0), WEIR_POLICY_CASCADE (1), \
                 WEIR_POLICY_CASCADE_APPROX (2), WEIR_POLICY_WEIGHTED_PICK (3)",
            ))
        }
    };
    let config = Config {
        health,
        weight_exponent: c.weight_exponent,
        floor: c.floor,
        policy,
        limit: limit_from_c(&c.limit)?,
        seed: c.seed,
        max_waiters: c.max_waiters,
    };
    config.validate().map_err(|e| config_error(e, c))?;
    Ok(config)
}

/// The default configuration: time-decayed health, the lowest-score policy, a CIAD limit with a fast
/// start, 1,024 waiters (the core's `Config::default()`).
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_config_default() -> weir_config {
    config_to_c(&Config::default())
}

/// The seeds' algorithm exactly: 6 buckets of 5 s with decay 3, weights `rate^3`, the weighted cascade,
/// a fixed limit of 100 (the core's `Config::cascade()`).
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_config_cascade() -> weir_config {
    config_to_c(&Config::cascade())
}

/// Checks a configuration as `weir_balancer_new` would, without building anything: `WEIR_OK`,
/// `WEIR_ERR_NULL`, `WEIR_ERR_INVALID_ARGUMENT` (an unknown tag) or `WEIR_ERR_INVALID_CONFIG`; the
/// message (`weir_last_error_message`) names the field.
///
/// # Safety
/// `config` is NULL or points to a readable `weir_config`.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_config_validate(config: *const weir_config) -> weir_status {
    crate::boundary::guard(|| {
        // SAFETY: the caller's contract above.
        let config = unsafe { crate::boundary::arg(config, "config") }?;
        config_from_c(config).map(|_| ())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::WEIR_ERR_INVALID_CONFIG;

    #[test]
    fn presets_round_trip_exactly() {
        for config in [Config::default(), Config::cascade()] {
            assert_eq!(config_from_c(&config_to_c(&config)).unwrap(), config);
        }
        assert_eq!(
            config_from_c(&weir_config_default()).unwrap(),
            Config::default()
        );
        assert_eq!(
            config_from_c(&weir_config_cascade()).unwrap(),
            Config::cascade()
        );
    }

    #[test]
    fn unknown_tags_and_bad_values_name_their_field() {
        type Case = (fn(&mut weir_config), weir_status, &'static str);
        let cases: [Case; 8] = [
            (
                |c| c.policy = 4,
                WEIR_ERR_INVALID_ARGUMENT,
                "policy: 4 is not one of",
            ),
            (
                |c| c.health.model = 9,
                WEIR_ERR_INVALID_ARGUMENT,
                "health.model: 9",
            ),
            (
                |c| c.limit.algorithm = 7,
                WEIR_ERR_INVALID_ARGUMENT,
                "limit.algorithm: 7",
            ),
            (
                |c| {
                    c.limit.algorithm = WEIR_LIMIT_WINDOWED;
                    c.limit.windowed.inner = WEIR_LIMIT_WINDOWED;
                },
                WEIR_ERR_INVALID_ARGUMENT,
                "limit.windowed.inner: 6",
            ),
            (
                |c| {
                    c.limit.algorithm = WEIR_LIMIT_VEGAS;
                    c.limit.vegas.beta.kind = 2;
                },
                WEIR_ERR_INVALID_ARGUMENT,
                "limit.vegas.beta.kind: 2",
            ),
            (
                |c| c.weight_exponent = f64::NAN,
                WEIR_ERR_INVALID_CONFIG,
                "weight_exponent",
            ),
            (
                |c| c.max_waiters = (1 << 20) + 1,
                WEIR_ERR_INVALID_CONFIG,
                "max_waiters",
            ),
            (
                |c| c.policy = WEIR_POLICY_CASCADE,
                WEIR_ERR_INVALID_CONFIG,
                "WEIR_POLICY_LOWEST_SCORE",
            ),
        ];
        for (change, status, text) in cases {
            let mut c = weir_config_default();
            change(&mut c);
            let e = config_from_c(&c).unwrap_err();
            assert_eq!(e.status, status, "{}", e.message);
            assert!(e.message.contains(text), "{:?} lacks {text:?}", e.message);
        }
    }
}
