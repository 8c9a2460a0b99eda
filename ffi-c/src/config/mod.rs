//! The configuration as plain C structs: a tag plus every variant's parameters side by side (no unions,
//! so a C program sets fields without casts), the `*_default()` fillers, and the conversion to the
//! core's [`Config`], which validates every value.
//!
//! A tagged struct carries every variant's parameters, not only the chosen one's: switching the tag of a
//! struct that came from a filler gives that variant's defaults.
//!
//! | file | what |
//! |---|---|
//! | `algorithm.rs` | `weir_algorithm`: the lowest-score and weighted families, `weir_lowest_score` |
//! | `weighted.rs` | `weir_weighted`: the weighted family's success-rate models (`weir_health`) and draws |
//! | `limit.rs` | `weir_limit`: fixed, AIMD, Vegas, Gradient, Gradient2, CIAD, knee and the windowed wrapper |
//! | `error.rs` | the core's refusals in the header's words (field paths, ranges as the header states them) |
//! | here | `weir_config`, the presets, the conversion of the whole and the refused-tag message |

// The header lists items in module order: `weir_config` and its presets first, then the algorithm
// families, the weighted family's parts, then the limits. rustfmt sorts adjacent `mod` lines, so a
// blank line keeps this order.
mod algorithm;
mod weighted;

mod error;
mod limit;

pub use algorithm::*;
pub(crate) use error::config_error;
pub use limit::*;
pub use weighted::*;

use crate::boundary::{weir_status, Error, WEIR_ERR_INVALID_ARGUMENT};
use weir_core::Config;

/// Everything a balancer is built from. Start from `weir_config_default()` (the algorithm that wins in
/// weir's simulator) or `weir_config_cascade()` (the original cascade exactly) and change fields.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_config {
    /// The algorithm: a family and its parameters.
    pub algorithm: weir_algorithm,
    /// The per-node concurrency limit.
    pub limit: weir_limit,
    /// The most callers that may wait in `weir_balancer_acquire_wait` at once; at most 2^20; 0 turns
    /// waiting off.
    pub max_waiters: u32,
    /// Seed of the library's per-thread generators (`weir_balancer_acquire`) and of the limit
    /// algorithms' probe jitter.
    pub seed: u64,
}

/// The C form of a core configuration.
pub(crate) fn config_to_c(config: &Config) -> weir_config {
    weir_config {
        algorithm: algorithm_to_c(config.algorithm),
        limit: limit_to_c(config.limit),
        max_waiters: config.max_waiters,
        seed: config.seed,
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
    let config = Config {
        algorithm: algorithm_from_c(&c.algorithm)?,
        limit: limit_from_c(&c.limit)?,
        max_waiters: c.max_waiters,
        seed: c.seed,
    };
    config.validate().map_err(|e| config_error(e, c))?;
    Ok(config)
}

/// The default configuration: the lowest-score family over time-decayed counters, a CIAD limit with a
/// fast start, 1,024 waiters (the core's `Config::default()`).
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_config_default() -> weir_config {
    config_to_c(&Config::default())
}

/// The original cascade exactly: the weighted family with 6 buckets of 5 s and decay 3, weights
/// `rate^3` and the weighted random cascade, and a fixed limit of 100 (the core's `Config::cascade()`).
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
        let weighted = |c: &mut weir_config| c.algorithm.family = WEIR_ALGORITHM_WEIGHTED;
        let cases: [Case; 13] = [
            (
                |c| c.algorithm.family = 2,
                WEIR_ERR_INVALID_ARGUMENT,
                "algorithm.family: 2 is not one of",
            ),
            (
                |c| {
                    c.algorithm.family = WEIR_ALGORITHM_WEIGHTED;
                    c.algorithm.weighted.health.model = 9;
                },
                WEIR_ERR_INVALID_ARGUMENT,
                "algorithm.weighted.health.model: 9",
            ),
            (
                |c| {
                    c.algorithm.family = WEIR_ALGORITHM_WEIGHTED;
                    c.algorithm.weighted.draw = 3;
                },
                WEIR_ERR_INVALID_ARGUMENT,
                "algorithm.weighted.draw: 3",
            ),
            (
                |c| c.limit.algorithm = WEIR_LIMIT_KNEE + 1,
                WEIR_ERR_INVALID_ARGUMENT,
                "limit.algorithm: 8 is not one of WEIR_LIMIT_FIXED (0) .. WEIR_LIMIT_KNEE (7)",
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
                    c.limit.algorithm = WEIR_LIMIT_WINDOWED;
                    c.limit.windowed.inner = WEIR_LIMIT_KNEE + 1;
                },
                WEIR_ERR_INVALID_ARGUMENT,
                "limit.windowed.inner: 8",
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
                |c| {
                    c.algorithm.family = WEIR_ALGORITHM_WEIGHTED;
                    c.algorithm.weighted.weight_exponent = f64::NAN;
                },
                WEIR_ERR_INVALID_CONFIG,
                "algorithm.weighted.weight_exponent",
            ),
            (
                |c| c.algorithm.lowest_score.penalty = -1.0,
                WEIR_ERR_INVALID_CONFIG,
                "algorithm.lowest_score.penalty",
            ),
            (
                |c| c.algorithm.lowest_score.forgiveness = 1.5,
                WEIR_ERR_INVALID_CONFIG,
                "algorithm.lowest_score.probe_fraction and forgiveness",
            ),
            (
                |c| c.algorithm.lowest_score.probe_after_ns = 1,
                WEIR_ERR_INVALID_CONFIG,
                "probe_after_ns 0 or between 1 ms and 1 hour",
            ),
            (
                |c| c.algorithm.lowest_score.slow_ratio = -1.0,
                WEIR_ERR_INVALID_CONFIG,
                "algorithm.lowest_score.penalty and ratio_penalty must be finite and in [0, 1e6], \
                 slow_ratio 0 or in [1, 64]",
            ),
            (
                |c| c.max_waiters = (1 << 20) + 1,
                WEIR_ERR_INVALID_CONFIG,
                "max_waiters",
            ),
        ];
        for (change, status, text) in cases {
            let mut c = weir_config_default();
            change(&mut c);
            let e = config_from_c(&c).unwrap_err();
            assert_eq!(e.status, status, "{}", e.message);
            assert!(e.message.contains(text), "{:?} lacks {text:?}", e.message);
        }
        // Every family goes with every draw and model: nothing left to refuse between them.
        for model in [WEIR_HEALTH_BUCKETS, WEIR_HEALTH_EWMA] {
            for draw in [
                WEIR_DRAW_CASCADE,
                WEIR_DRAW_CASCADE_APPROX,
                WEIR_DRAW_WEIGHTED_PICK,
            ] {
                let mut c = weir_config_default();
                weighted(&mut c);
                c.algorithm.weighted.health.model = model;
                c.algorithm.weighted.draw = draw;
                assert!(config_from_c(&c).is_ok(), "{model} {draw}");
            }
        }
        // The family not chosen is not read: junk in its parameters and tags is ignored.
        let mut c = weir_config_default();
        c.algorithm.weighted.health.model = u32::MAX;
        c.algorithm.weighted.draw = u32::MAX;
        c.algorithm.weighted.floor = f64::NAN;
        assert_eq!(config_from_c(&c), Ok(Config::default()));
        let mut c = weir_config_cascade();
        c.algorithm.lowest_score.success_half_life_ns = 0;
        c.algorithm.lowest_score.probe_fraction = f32::NAN;
        c.algorithm.lowest_score.probe_after_ns = u64::MAX;
        c.algorithm.lowest_score.slow_ratio = 0.5;
        assert_eq!(config_from_c(&c), Ok(Config::cascade()));
    }
}
