//! The balancer's configuration as small frozen classes with keyword parameters and the core's defaults:
//! health models (`Decay`, `Buckets`, `Ewma`), limit algorithms (`Fixed`, `Aimd`, `Vegas`, `Gradient`,
//! `Gradient2`, `Ciad`, `Windowed`) and their parts (`Log10`, `Sqrt`, `Percentile`). Each constructor checks
//! its values with the core's own validation and raises `ValueError` or `TypeError` naming the parameter.
//! Durations are float seconds (or `datetime.timedelta`), as everywhere in the package.
//!
//! | file | what |
//! |---|---|
//! | `health.rs` | `Decay`, `Buckets`, `Ewma` |
//! | `parts.rs` | `Log10`, `Sqrt`, `Percentile`: the parts some limit algorithms take |
//! | `limit.rs` | `Fixed`, `Aimd`, `Vegas`, `Gradient`, `Gradient2`, `Ciad`, `Windowed` |
//! | here | the refused-configuration message, the argument readers, the policy |

mod health;
mod limit;
mod parts;

pub use health::{health_from, health_to};
pub use limit::{limit_from, limit_to};

use crate::convert::{float, int_in};
use health::{Buckets, Decay, Ewma};
use limit::{Aimd, Ciad, Fixed, Gradient, Gradient2, Vegas, Windowed};
use parts::{Log10, Percentile, Sqrt};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use weir::balance::{ConfigError, Policy};
use weir::limit::MAX_LIMIT;

/// Registers the configuration classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Decay>()?;
    m.add_class::<Buckets>()?;
    m.add_class::<Ewma>()?;
    m.add_class::<Fixed>()?;
    m.add_class::<Aimd>()?;
    m.add_class::<Vegas>()?;
    m.add_class::<Gradient>()?;
    m.add_class::<Gradient2>()?;
    m.add_class::<Ciad>()?;
    m.add_class::<Windowed>()?;
    m.add_class::<Log10>()?;
    m.add_class::<Sqrt>()?;
    m.add_class::<Percentile>()?;
    Ok(())
}

/// A refused configuration as a `ValueError` that names the Python parameter (`what` is the class).
pub fn config_error(e: ConfigError, what: &str) -> PyErr {
    let rule = match e {
        ConfigError::Capacity => "capacity must be between 1 and MAX_NODES (65536)",
        ConfigError::BucketCount => "count must be between 1 and 8",
        ConfigError::BucketWidth => "width must be at least 1 ns",
        ConfigError::Decay => "decay must be finite and >= 1",
        ConfigError::Floor => "floor must be finite and in (0, 1]",
        ConfigError::WeightExponent => "weight_exponent must be finite and in (0, 64]",
        ConfigError::HalfLife => "half_life must be at least 1 outcome",
        ConfigError::LimitRange => {
            "the limits must satisfy min_limit <= initial_limit <= max_limit <= MAX_LIMIT \
             (Vegas: min_limit is 1; Ciad: min_limit >= 1; Fixed: limit <= MAX_LIMIT)"
        }
        ConfigError::BackoffRatio => {
            "backoff_ratio must be in [0.5, 1.0) ([0.5, 1.0] for Gradient; drop_backoff for Gradient2)"
        }
        ConfigError::Timeout => "timeout must be at least 1 ns",
        ConfigError::Smoothing => "smoothing must be in [0, 1]",
        ConfigError::RttTolerance => "rtt_tolerance must be finite and >= 1",
        ConfigError::ProbeInterval => "probe_interval must be between 1 and 2**30 (or None)",
        ConfigError::ProbeMultiplier => "probe_multiplier must be at least 1",
        ConfigError::VegasStep => "increase/decrease factors must be finite and > 0",
        ConfigError::QueueSize => "queue_size must be <= MAX_LIMIT",
        ConfigError::LongWindow => "long_window must be at least 1",
        ConfigError::WindowTime => {
            "min_window and max_window must satisfy 1 ns <= min_window <= max_window <= 1000 s"
        }
        ConfigError::WindowSamples => {
            "min_samples must be at least 1, and at most the percentile window's capacity"
        }
        ConfigError::Percentile => {
            "percentile must be in (0, 1) and capacity between 1 and 10"
        }
        ConfigError::MaxWaiters => "max_waiters must be at most MAX_WAITERS (2**20)",
        ConfigError::DecayHalfLife => {
            "success_half_life and failure_half_life must be between 1 ms and 1 hour"
        }
        ConfigError::OutcomeCost => {
            "dropped_cost, throttled_cost and client_error_cost must be finite and in [0, 1]"
        }
        ConfigError::Penalty => "penalty and ratio_penalty must be finite and in [0, 1e6]",
        ConfigError::ModelPolicy => {
            "policy LOWEST_SCORE goes with health Decay; the weighted policies need Buckets or Ewma"
        }
        _ => return PyValueError::new_err(format!("{what}: {e}")),
    };
    PyValueError::new_err(format!("{what}: {rule}"))
}

pub(super) fn u32_arg(v: &Bound<'_, PyAny>, name: &str) -> PyResult<u32> {
    Ok(int_in(v, name, 0, u64::from(u32::MAX))? as u32)
}

pub(super) fn limit_arg(v: &Bound<'_, PyAny>, name: &str) -> PyResult<u32> {
    Ok(int_in(v, name, 0, u64::from(MAX_LIMIT))? as u32)
}

pub(super) fn f32_arg(v: &Bound<'_, PyAny>, name: &str) -> PyResult<f32> {
    let f = float(v, name)?;
    if !f.is_finite() || f.abs() > f64::from(f32::MAX) {
        return Err(PyValueError::new_err(format!(
            "{name} must be finite, got {f}"
        )));
    }
    Ok(f as f32)
}

/// An `f32` parameter as the float a Python user wrote: its shortest decimal, read back as an `f64`
/// (`0.1`, not `0.10000000149011612`).
pub(super) fn f32_shown(x: f32) -> f64 {
    format!("{x:?}").parse().unwrap_or(f64::from(x))
}

pub(super) fn fmt_f(x: f64) -> String {
    format!("{x:?}")
}

pub(super) fn hash_str(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// The policy behind a Python value: a `weir.Policy` member or its string value.
pub fn policy_from(v: &Bound<'_, PyAny>) -> PyResult<Policy> {
    let s = if let Ok(s) = v.cast::<PyString>() {
        s.to_string()
    } else {
        match v
            .getattr("value")
            .ok()
            .and_then(|x| x.extract::<String>().ok())
        {
            Some(s) => s,
            None => {
                return Err(PyTypeError::new_err(format!(
                    "policy must be a weir.Policy, not {}",
                    v.get_type().name()?
                )))
            }
        }
    };
    Ok(match s.as_str() {
        "lowest_score" => Policy::LowestScore,
        "cascade" => Policy::Cascade,
        "cascade_approx" => Policy::CascadeApprox,
        "weighted_pick" => Policy::WeightedPick,
        other => {
            return Err(PyValueError::new_err(format!(
                "policy must be one of 'lowest_score', 'cascade', 'cascade_approx', 'weighted_pick', got {other:?}"
            )))
        }
    })
}

/// The string value of a policy (`weir.Policy(value)` in Python).
pub fn policy_name(p: Policy) -> &'static str {
    match p {
        Policy::LowestScore => "lowest_score",
        Policy::Cascade => "cascade",
        Policy::CascadeApprox => "cascade_approx",
        Policy::WeightedPick => "weighted_pick",
    }
}
