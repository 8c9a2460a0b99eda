//! `LowestScore`: the lowest-score family's parameters (the default algorithm's).

use super::{check_algorithm, config_error, f32_arg, f32_shown, fmt_f, hash_str};
use crate::convert::{duration_ns, secs};
use pyo3::prelude::*;
use weir::balance::{Algorithm, ConfigError, LowestScore as Params};

/// The default algorithm: each call goes to the node with room whose score, its calls in flight plus a
/// failure penalty from two time-decayed counters (successes and failures), is lowest.
///
/// GIL: immutable; safe to share between threads.
#[pyclass(frozen, module = "weir")]
pub struct LowestScore {
    pub(super) params: Params,
}

#[pymethods]
impl LowestScore {
    #[new]
    #[pyo3(signature = (*, success_half_life=None, failure_half_life=None, dropped_cost=None, throttled_cost=None, client_error_cost=None, penalty=None, ratio_penalty=None, probe_fraction=None, forgiveness=None, probe_after=None, slow_ratio=None), text_signature = "(*, success_half_life=1.0, failure_half_life=30.0, dropped_cost=0.1, throttled_cost=0.1, client_error_cost=0.01, penalty=10.0, ratio_penalty=16.0, probe_fraction=0.0, forgiveness=0.0, probe_after=0.0, slow_ratio=0.0)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        success_half_life: Option<&Bound<'_, PyAny>>,
        failure_half_life: Option<&Bound<'_, PyAny>>,
        dropped_cost: Option<&Bound<'_, PyAny>>,
        throttled_cost: Option<&Bound<'_, PyAny>>,
        client_error_cost: Option<&Bound<'_, PyAny>>,
        penalty: Option<&Bound<'_, PyAny>>,
        ratio_penalty: Option<&Bound<'_, PyAny>>,
        probe_fraction: Option<&Bound<'_, PyAny>>,
        forgiveness: Option<&Bound<'_, PyAny>>,
        probe_after: Option<&Bound<'_, PyAny>>,
        slow_ratio: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut p = Params::DEFAULT;
        if let Some(v) = success_half_life {
            p.success_half_life_ns = duration_ns(v, "success_half_life")?;
        }
        if let Some(v) = failure_half_life {
            p.failure_half_life_ns = duration_ns(v, "failure_half_life")?;
        }
        if let Some(v) = dropped_cost {
            p.dropped_cost = f32_arg(v, "dropped_cost")?;
        }
        if let Some(v) = throttled_cost {
            p.throttled_cost = f32_arg(v, "throttled_cost")?;
        }
        if let Some(v) = client_error_cost {
            p.client_error_cost = f32_arg(v, "client_error_cost")?;
        }
        if let Some(v) = penalty {
            p.penalty = f32_arg(v, "penalty")?;
        }
        if let Some(v) = ratio_penalty {
            p.ratio_penalty = f32_arg(v, "ratio_penalty")?;
        }
        if let Some(v) = probe_fraction {
            p.probe_fraction = f32_arg(v, "probe_fraction")?;
        }
        if let Some(v) = forgiveness {
            p.forgiveness = f32_arg(v, "forgiveness")?;
        }
        if let Some(v) = probe_after {
            p.probe_after_ns = duration_ns(v, "probe_after")?;
            // A positive float below half a nanosecond rounds to 0, which is "off": refused as the core
            // refuses any other value under 1 ms, not turned off in silence.
            if p.probe_after_ns == 0 && v.extract::<f64>().is_ok_and(|s| s > 0.0) {
                return Err(config_error(ConfigError::Probation, "LowestScore"));
            }
        }
        if let Some(v) = slow_ratio {
            p.slow_ratio = f32_arg(v, "slow_ratio")?;
        }
        check_algorithm(Algorithm::LowestScore(p), "LowestScore")?;
        Ok(LowestScore { params: p })
    }

    /// Seconds after which a success counts half (default 1.0).
    #[getter]
    fn success_half_life(&self) -> f64 {
        secs(self.params.success_half_life_ns)
    }
    /// Seconds after which a failure counts half (default 30.0).
    #[getter]
    fn failure_half_life(&self) -> f64 {
        secs(self.params.failure_half_life_ns)
    }
    /// What a DROPPED outcome (503, 504, a timeout) adds to the failures (default 1.0: a whole
    /// failure; 0.1 reads a node that sheds as busy rather than broken).
    #[getter]
    fn dropped_cost(&self) -> f64 {
        f32_shown(self.params.dropped_cost)
    }
    /// What a THROTTLED outcome (429) adds to the failures (default 0.1).
    #[getter]
    fn throttled_cost(&self) -> f64 {
        f32_shown(self.params.throttled_cost)
    }
    /// What a CLIENT_ERROR outcome (another 4xx) adds to the failures (default 0.01).
    #[getter]
    fn client_error_cost(&self) -> f64 {
        f32_shown(self.params.client_error_cost)
    }
    /// Penalty per recent failure, in in-flight requests (default 10).
    #[getter]
    fn penalty(&self) -> f64 {
        f32_shown(self.params.penalty)
    }
    /// Penalty per doubling of failures over successes (default 16).
    #[getter]
    fn ratio_penalty(&self) -> f64 {
        f32_shown(self.params.ratio_penalty)
    }
    /// Probation: the fraction of acquires whose first try is a member with room drawn at random instead
    /// of the lowest score, so that an avoided node gets a trickle of calls that tell whether it has
    /// recovered (default 0.0, none; 0.01 sends a hundredth of the calls to a random member).
    #[getter]
    fn probe_fraction(&self) -> f64 {
        f32_shown(self.params.probe_fraction)
    }
    /// The fraction of its node's failures each success takes away (default 0.0, nothing; 0.5 halves
    /// them, so a node that answers well again is forgiven within a few calls, not over the failure
    /// half-life); all of them where they were last written more than a clock epoch before (250 ms by
    /// default), as after a probe answered well by a node avoided since its last failure.
    #[getter]
    fn forgiveness(&self) -> f64 {
        f32_shown(self.params.forgiveness)
    }
    /// Timed probes (default 0.0, off; else 0.001 to 3600 seconds): a member that carries a penalty, has
    /// no call in flight and has not failed for this long is the next acquire's first try (one at a time,
    /// chosen at the clock's rotation, every 250 ms by default), as nginx tries a node again after its
    /// `fail_timeout`. A failed probe makes the node wait as long again; with `forgiveness`, a successful
    /// one takes all its failures. Unlike `probe_fraction`'s, its cost and delay do not depend on the call
    /// rate: a recovered node is heard of within about `probe_after`, and a broken one costs a call per
    /// `probe_after`.
    #[getter]
    fn probe_after(&self) -> f64 {
        secs(self.params.probe_after_ns)
    }
    /// Slow nodes (default 0.0, off; else in [1, 64]): a node whose recent successes took at least this
    /// many times as long as the fastest node's counts each of its calls in flight that many times over,
    /// so a node five times slower takes a call only when its peers have about five times its calls in
    /// flight; below the ratio a node scores as without it. Its latency is an average of its successes'
    /// RTTs, and the ratio beyond 1 fades at the failure half-life while it gets no calls, so a slow node
    /// is tried again now and then (2 reads a node as slow once it takes twice the fastest's time).
    #[getter]
    fn slow_ratio(&self) -> f64 {
        f32_shown(self.params.slow_ratio)
    }
    fn __repr__(&self) -> String {
        format!(
            "LowestScore(success_half_life={}, failure_half_life={}, dropped_cost={}, throttled_cost={}, client_error_cost={}, penalty={}, ratio_penalty={}, probe_fraction={}, forgiveness={}, probe_after={}, slow_ratio={})",
            fmt_f(self.success_half_life()),
            fmt_f(self.failure_half_life()),
            fmt_f(self.dropped_cost()),
            fmt_f(self.throttled_cost()),
            fmt_f(self.client_error_cost()),
            fmt_f(self.penalty()),
            fmt_f(self.ratio_penalty()),
            fmt_f(self.probe_fraction()),
            fmt_f(self.forgiveness()),
            fmt_f(self.probe_after()),
            fmt_f(self.slow_ratio())
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<LowestScore>()
            .is_ok_and(|o| o.get().params == self.params)
    }
    fn __hash__(&self) -> u64 {
        hash_str(&self.__repr__())
    }
}
