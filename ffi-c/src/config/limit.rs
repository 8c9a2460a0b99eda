//! Limit algorithms: the `WEIR_LIMIT_*` tags and their parts' kinds, `weir_limit` with every
//! algorithm's parameters, the `weir_limit_*_default()` fillers, and the conversions to and from the
//! core's [`LimitAlgorithm`]. The windowed limit wraps the algorithm its `inner` tag names, with that
//! algorithm's parameters taken from the same `weir_limit`.

use super::unknown;
use crate::boundary::Error;
use weir_core::limit::{
    AimdLimit, CiadLimit, FixedLimit, Gradient2Limit, GradientLimit, InnerAlgorithm, KneeLimit,
    LimitAlgorithm, QueueSize, SampleWindow, VegasLimit, VegasStep, VegasThreshold, WindowedLimit,
};

/// Limit algorithm (a `weir_limit`'s `algorithm`, or a windowed limit's `inner`): one of the
/// `WEIR_LIMIT_*` values.
#[allow(non_camel_case_types)]
pub type weir_limit_algorithm = u32;
/// A constant cap (`weir_limit.fixed`).
pub const WEIR_LIMIT_FIXED: weir_limit_algorithm = 0;
/// Netflix's AIMD (`weir_limit.aimd`).
pub const WEIR_LIMIT_AIMD: weir_limit_algorithm = 1;
/// Netflix's Vegas (`weir_limit.vegas`).
pub const WEIR_LIMIT_VEGAS: weir_limit_algorithm = 2;
/// Netflix's Gradient, v1 (`weir_limit.gradient`).
pub const WEIR_LIMIT_GRADIENT: weir_limit_algorithm = 3;
/// Netflix's Gradient2 (`weir_limit.gradient2`).
pub const WEIR_LIMIT_GRADIENT2: weir_limit_algorithm = 4;
/// dialogue's CIAD (`weir_limit.ciad`).
pub const WEIR_LIMIT_CIAD: weir_limit_algorithm = 5;
/// Netflix's windowed wrapper around the algorithm named by `weir_limit.windowed.inner`.
pub const WEIR_LIMIT_WINDOWED: weir_limit_algorithm = 6;
/// weir's knee limit (`weir_limit.knee`); numbered after the wrapper, since a published value
/// never changes.
pub const WEIR_LIMIT_KNEE: weir_limit_algorithm = 7;

/// How a Vegas threshold depends on the limit (`weir_vegas_threshold.kind`).
#[allow(non_camel_case_types)]
pub type weir_vegas_threshold_kind = u32;
/// The threshold is `value`.
pub const WEIR_VEGAS_THRESHOLD_CONSTANT: weir_vegas_threshold_kind = 0;
/// The threshold is `value * LOG10(limit)` (Java's integer LOG10).
pub const WEIR_VEGAS_THRESHOLD_LOG10: weir_vegas_threshold_kind = 1;

/// How Vegas steps its estimate (`weir_vegas_step.kind`).
#[allow(non_camel_case_types)]
pub type weir_vegas_step_kind = u32;
/// By `LOG10(estimate)` (Java's default).
pub const WEIR_VEGAS_STEP_LOG10: weir_vegas_step_kind = 0;
/// Multiplied (increase) or divided (decrease) by `factor`.
pub const WEIR_VEGAS_STEP_FACTOR: weir_vegas_step_kind = 1;

/// How a gradient limit's queue allowance depends on the limit (`weir_queue_size.kind`).
#[allow(non_camel_case_types)]
pub type weir_queue_size_kind = u32;
/// The allowance is `value`.
pub const WEIR_QUEUE_SIZE_CONSTANT: weir_queue_size_kind = 0;
/// The allowance is `max(value, SQRT(limit))`.
pub const WEIR_QUEUE_SIZE_SQRT: weir_queue_size_kind = 1;

/// Which RTT a window reports (`weir_sample_window.kind`).
#[allow(non_camel_case_types)]
pub type weir_sample_window_kind = u32;
/// The average RTT of the window (Netflix's default).
pub const WEIR_SAMPLE_WINDOW_AVERAGE: weir_sample_window_kind = 0;
/// The `percentile` RTT of the window's first `capacity` samples.
pub const WEIR_SAMPLE_WINDOW_PERCENTILE: weir_sample_window_kind = 1;

/// A fixed limit (default 100).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_fixed_limit {
    /// The cap; at most 2^24 - 1 (0 admits nothing).
    pub limit: u32,
}

/// AIMD (Netflix's defaults: 20, 20, 200, 0.9, 5 s).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_aimd_limit {
    /// The limit a fresh node starts with; within [min_limit, max_limit].
    pub initial_limit: u32,
    /// The lowest limit.
    pub min_limit: u32,
    /// The highest limit; at most 2^24 - 1.
    pub max_limit: u32,
    /// Multiplier on a drop or timeout; in [0.5, 1).
    pub backoff_ratio: f64,
    /// A success slower than this counts as a drop, ns; at least 1.
    pub timeout_ns: u64,
}

/// A Vegas threshold (alpha, beta, threshold).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_vegas_threshold {
    /// `WEIR_VEGAS_THRESHOLD_CONSTANT` or `WEIR_VEGAS_THRESHOLD_LOG10`.
    pub kind: weir_vegas_threshold_kind,
    /// The constant, or the multiplier of LOG10(limit).
    pub value: u32,
}

/// A Vegas step (increase, decrease).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_vegas_step {
    /// `WEIR_VEGAS_STEP_LOG10` or `WEIR_VEGAS_STEP_FACTOR`.
    pub kind: weir_vegas_step_kind,
    /// The factor (`WEIR_VEGAS_STEP_FACTOR` only); finite, > 0.
    pub factor: f64,
}

/// Vegas (Netflix's defaults).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_vegas_limit {
    /// The limit a fresh node starts with; within [1, max_limit].
    pub initial_limit: u32,
    /// The highest limit; at most 2^24 - 1.
    pub max_limit: u32,
    /// Weight of a new estimate; in [0, 1].
    pub smoothing: f64,
    /// Probe for a new no-load RTT every `probe_multiplier * limit` samples (jittered); at least 1.
    pub probe_multiplier: u32,
    /// Queue below which the limit grows fast.
    pub alpha: weir_vegas_threshold,
    /// Queue above which the limit shrinks.
    pub beta: weir_vegas_threshold,
    /// Queue below which the limit grows slowly.
    pub threshold: weir_vegas_threshold,
    /// How the limit grows.
    pub increase: weir_vegas_step,
    /// How the limit shrinks.
    pub decrease: weir_vegas_step,
    /// Whether a drop's RTT may lower the no-load RTT (Java's behaviour: true).
    pub baseline_from_drops: bool,
}

/// A gradient limit's queue allowance.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_queue_size {
    /// `WEIR_QUEUE_SIZE_CONSTANT` or `WEIR_QUEUE_SIZE_SQRT`.
    pub kind: weir_queue_size_kind,
    /// The constant, or the smallest allowance under SQRT; at most 2^24 - 1.
    pub value: u32,
}

/// Gradient, v1 (Netflix's defaults).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_gradient_limit {
    /// The limit a fresh node starts with; within [min_limit, max_limit].
    pub initial_limit: u32,
    /// The lowest limit.
    pub min_limit: u32,
    /// The highest limit; at most 2^24 - 1.
    pub max_limit: u32,
    /// Weight of a new estimate; in [0, 1].
    pub smoothing: f64,
    /// The queue allowance.
    pub queue_size: weir_queue_size,
    /// RTT ratio tolerated before the limit shrinks; finite, >= 1.
    pub rtt_tolerance: f64,
    /// Whether the limit probes for a new minimum RTT (every `probe_interval` samples).
    pub probe: bool,
    /// Samples between probes when `probe`; 1 ..= 2^30.
    pub probe_interval: u32,
    /// Multiplier on a drop; in [0.5, 1].
    pub backoff_ratio: f64,
}

/// Gradient2 (Netflix's defaults).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_gradient2_limit {
    /// The limit a fresh node starts with; within [min_limit, max_limit].
    pub initial_limit: u32,
    /// The lowest limit.
    pub min_limit: u32,
    /// The highest limit; at most 2^24 - 1.
    pub max_limit: u32,
    /// Weight of a new estimate; in [0, 1].
    pub smoothing: f64,
    /// The queue allowance.
    pub queue_size: weir_queue_size,
    /// Samples in the long-term RTT average; at least 1.
    pub long_window: u32,
    /// RTT ratio tolerated before the limit shrinks; finite, >= 1.
    pub rtt_tolerance: f64,
    /// Whether a drop multiplies the limit by `drop_backoff` (off in Java).
    pub drop_backoff_enabled: bool,
    /// Multiplier on a drop when enabled; in [0.5, 1).
    pub drop_backoff: f64,
}

/// CIAD (dialogue's: 20, 1, 10^6, 0.9; the balancer default turns `fast_start` on).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_ciad_limit {
    /// The limit a fresh node starts with; within [min_limit, max_limit].
    pub initial_limit: u32,
    /// The lowest limit; at least 1.
    pub min_limit: u32,
    /// The highest limit; at most 2^24 - 1.
    pub max_limit: u32,
    /// Multiplier on a drop; in [0.5, 1).
    pub backoff_ratio: f64,
    /// Grow by one per success until the first drop (slow start).
    pub fast_start: bool,
    /// 0 (off, the default), or a factor >= 1: a success counts as a drop while the node's smoothed
    /// RTT exceeds this many times its baseline (the limit then finds the node's latency knee).
    pub rtt_tolerance: f64,
}

/// Knee (weir's: 20, 1, 1000, 0.9, knee 2, hold 1.75, armed for 60 s): the limit of a node whose call
/// took more than `knee` times its no-load RTT, or whose smoothed RTT is past that while the call is
/// past `hold` times, is cut to what was in flight less 0.1 (an overload's drop cuts it to
/// `backoff_ratio` times what was in flight); it holds while the smoothed ratio is between `hold` and
/// `knee`, and grows below `hold`, by less the nearer it is. An error (`WEIR_OUTCOME_FAILURE`) cuts it
/// by CIAD's `floor(backoff_ratio x limit)` step, tapered alike. Every client of a server sees its
/// RTT, so they all cut together. The latency is read so only within `armed_for_ns` of the node's
/// last drop; outside it the limit moves on drops alone.
/// A release with the server's load report (`weir_balancer_release_loaded`) is read in place of the
/// latency, under the same arm: a utilization above 1 counts as past the knee, above `hold / knee` as
/// in the hold band.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_knee_limit {
    /// The limit a fresh node starts with; within [min_limit, max_limit].
    pub initial_limit: u32,
    /// The lowest limit; at least 1.
    pub min_limit: u32,
    /// The highest limit; at most 2^24 - 1.
    pub max_limit: u32,
    /// Multiplier of a cut, and the fraction of the limit a success must find in flight to grow it; in
    /// [0.5, 1).
    pub backoff_ratio: f64,
    /// The ratio of smoothed RTT to no-load RTT above which a success cuts the limit; finite, >= 1.
    pub knee: f64,
    /// The ratio at or below which a success may grow the limit (between it and `knee` the limit
    /// holds); finite, >= 1 and <= knee.
    pub hold: f64,
    /// How long after the node's last drop its latency is read as load, ns (60 s by default; kept to
    /// ticks of 2^30 ns, about a second); at most 1000 s. Outside it a success grows the limit as one
    /// below `hold` does and only drops cut it, as CIAD's do: a latency that rose while the node still
    /// answers every call (a farther zone, a server that queues but serves all it is sent) is not an
    /// overload. 0 reads the latency always.
    pub armed_for_ns: u64,
}

/// Which RTT a windowed limit reports per window.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_sample_window {
    /// `WEIR_SAMPLE_WINDOW_AVERAGE` or `WEIR_SAMPLE_WINDOW_PERCENTILE`.
    pub kind: weir_sample_window_kind,
    /// The percentile (`WEIR_SAMPLE_WINDOW_PERCENTILE` only); in (0, 1).
    pub percentile: f64,
    /// Samples kept per window (`WEIR_SAMPLE_WINDOW_PERCENTILE` only); 1 ..= 10, >= min_samples.
    pub capacity: u32,
}

/// The windowed wrapper (Netflix's defaults: 1 s windows, 10 samples, 100 µs, average, around Vegas).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_windowed_limit {
    /// The wrapped algorithm, any `WEIR_LIMIT_*` but `WEIR_LIMIT_WINDOWED`; its parameters are the ones
    /// of the same name in the enclosing `weir_limit`.
    pub inner: weir_limit_algorithm,
    /// Shortest window, ns.
    pub min_window_ns: u64,
    /// Longest window, ns; 1 <= min_window_ns <= max_window_ns <= 1000 s.
    pub max_window_ns: u64,
    /// A window closes only with at least this many samples; at least 1.
    pub min_samples: u32,
    /// RTTs below this are ignored, ns.
    pub min_rtt_threshold_ns: u64,
    /// What the window reports.
    pub window: weir_sample_window,
}

/// A per-node concurrency limit: `algorithm` says which parameter set is used.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_limit {
    /// One of the `WEIR_LIMIT_*` values.
    pub algorithm: weir_limit_algorithm,
    /// `WEIR_LIMIT_FIXED`'s parameters.
    pub fixed: weir_fixed_limit,
    /// `WEIR_LIMIT_AIMD`'s parameters.
    pub aimd: weir_aimd_limit,
    /// `WEIR_LIMIT_VEGAS`'s parameters.
    pub vegas: weir_vegas_limit,
    /// `WEIR_LIMIT_GRADIENT`'s parameters.
    pub gradient: weir_gradient_limit,
    /// `WEIR_LIMIT_GRADIENT2`'s parameters.
    pub gradient2: weir_gradient2_limit,
    /// `WEIR_LIMIT_CIAD`'s parameters.
    pub ciad: weir_ciad_limit,
    /// `WEIR_LIMIT_KNEE`'s parameters.
    pub knee: weir_knee_limit,
    /// `WEIR_LIMIT_WINDOWED`'s parameters (the inner algorithm's are above).
    pub windowed: weir_windowed_limit,
}

fn threshold_to_c(t: VegasThreshold) -> weir_vegas_threshold {
    match t {
        VegasThreshold::Constant(value) => weir_vegas_threshold {
            kind: WEIR_VEGAS_THRESHOLD_CONSTANT,
            value,
        },
        VegasThreshold::Log10(value) => weir_vegas_threshold {
            kind: WEIR_VEGAS_THRESHOLD_LOG10,
            value,
        },
    }
}

fn step_to_c(s: VegasStep) -> weir_vegas_step {
    match s {
        VegasStep::Log10 => weir_vegas_step {
            kind: WEIR_VEGAS_STEP_LOG10,
            factor: 1.0,
        },
        VegasStep::Factor(factor) => weir_vegas_step {
            kind: WEIR_VEGAS_STEP_FACTOR,
            factor,
        },
    }
}

fn queue_to_c(q: QueueSize) -> weir_queue_size {
    match q {
        QueueSize::Constant(value) => weir_queue_size {
            kind: WEIR_QUEUE_SIZE_CONSTANT,
            value,
        },
        QueueSize::Sqrt { min } => weir_queue_size {
            kind: WEIR_QUEUE_SIZE_SQRT,
            value: min,
        },
    }
}

fn vegas_to_c(v: VegasLimit) -> weir_vegas_limit {
    weir_vegas_limit {
        initial_limit: v.initial_limit,
        max_limit: v.max_limit,
        smoothing: v.smoothing,
        probe_multiplier: v.probe_multiplier,
        alpha: threshold_to_c(v.alpha),
        beta: threshold_to_c(v.beta),
        threshold: threshold_to_c(v.threshold),
        increase: step_to_c(v.increase),
        decrease: step_to_c(v.decrease),
        baseline_from_drops: v.baseline_from_drops,
    }
}

fn gradient_to_c(g: GradientLimit) -> weir_gradient_limit {
    weir_gradient_limit {
        initial_limit: g.initial_limit,
        min_limit: g.min_limit,
        max_limit: g.max_limit,
        smoothing: g.smoothing,
        queue_size: queue_to_c(g.queue_size),
        rtt_tolerance: g.rtt_tolerance,
        probe: g.probe_interval.is_some(),
        probe_interval: g
            .probe_interval
            .or(GradientLimit::default().probe_interval)
            .unwrap_or(1000),
        backoff_ratio: g.backoff_ratio,
    }
}

fn gradient2_to_c(g: Gradient2Limit) -> weir_gradient2_limit {
    weir_gradient2_limit {
        initial_limit: g.initial_limit,
        min_limit: g.min_limit,
        max_limit: g.max_limit,
        smoothing: g.smoothing,
        queue_size: queue_to_c(g.queue_size),
        long_window: g.long_window,
        rtt_tolerance: g.rtt_tolerance,
        drop_backoff_enabled: g.drop_backoff.is_some(),
        // The value a caller who turns the option on most likely wants: CIAD's and AIMD's ratio.
        drop_backoff: g.drop_backoff.unwrap_or(0.9),
    }
}

fn aimd_to_c(a: AimdLimit) -> weir_aimd_limit {
    weir_aimd_limit {
        initial_limit: a.initial_limit,
        min_limit: a.min_limit,
        max_limit: a.max_limit,
        backoff_ratio: a.backoff_ratio,
        timeout_ns: a.timeout_ns,
    }
}

fn ciad_to_c(c: CiadLimit) -> weir_ciad_limit {
    weir_ciad_limit {
        initial_limit: c.initial_limit,
        min_limit: c.min_limit,
        max_limit: c.max_limit,
        backoff_ratio: c.backoff_ratio,
        fast_start: c.fast_start,
        rtt_tolerance: c.rtt_tolerance,
    }
}

fn knee_to_c(k: KneeLimit) -> weir_knee_limit {
    weir_knee_limit {
        initial_limit: k.initial_limit,
        min_limit: k.min_limit,
        max_limit: k.max_limit,
        backoff_ratio: k.backoff_ratio,
        knee: k.knee,
        hold: k.hold,
        armed_for_ns: k.armed_for_ns,
    }
}

fn window_to_c(w: SampleWindow) -> weir_sample_window {
    match w {
        SampleWindow::Average => weir_sample_window {
            kind: WEIR_SAMPLE_WINDOW_AVERAGE,
            percentile: 0.9,
            capacity: 100,
        },
        SampleWindow::Percentile {
            percentile,
            capacity,
        } => weir_sample_window {
            kind: WEIR_SAMPLE_WINDOW_PERCENTILE,
            percentile,
            capacity,
        },
    }
}

/// Every algorithm's defaults, with `algorithm` chosen.
fn limit_defaults(algorithm: weir_limit_algorithm) -> weir_limit {
    let w = WindowedLimit::default();
    weir_limit {
        algorithm,
        fixed: weir_fixed_limit {
            limit: FixedLimit::default().limit,
        },
        aimd: aimd_to_c(AimdLimit::default()),
        vegas: vegas_to_c(VegasLimit::default()),
        gradient: gradient_to_c(GradientLimit::default()),
        gradient2: gradient2_to_c(Gradient2Limit::default()),
        ciad: ciad_to_c(CiadLimit::default()),
        knee: knee_to_c(KneeLimit::default()),
        windowed: weir_windowed_limit {
            inner: match w.inner {
                InnerAlgorithm::Vegas(_) => WEIR_LIMIT_VEGAS,
                _ => unreachable!("Netflix's windowed limit wraps Vegas by default"),
            },
            min_window_ns: w.min_window_ns,
            max_window_ns: w.max_window_ns,
            min_samples: w.min_samples,
            min_rtt_threshold_ns: w.min_rtt_threshold_ns,
            window: window_to_c(w.window),
        },
    }
}

/// The C form of a core limit: the chosen algorithm's parameters over every other one's defaults.
pub(super) fn limit_to_c(limit: LimitAlgorithm) -> weir_limit {
    let mut c = limit_defaults(WEIR_LIMIT_FIXED);
    let inner_to_c = |c: &mut weir_limit, inner: InnerAlgorithm| match inner {
        InnerAlgorithm::Fixed(f) => {
            c.fixed.limit = f.limit;
            WEIR_LIMIT_FIXED
        }
        InnerAlgorithm::Aimd(a) => {
            c.aimd = aimd_to_c(a);
            WEIR_LIMIT_AIMD
        }
        InnerAlgorithm::Vegas(v) => {
            c.vegas = vegas_to_c(v);
            WEIR_LIMIT_VEGAS
        }
        InnerAlgorithm::Gradient(g) => {
            c.gradient = gradient_to_c(g);
            WEIR_LIMIT_GRADIENT
        }
        InnerAlgorithm::Gradient2(g) => {
            c.gradient2 = gradient2_to_c(g);
            WEIR_LIMIT_GRADIENT2
        }
        InnerAlgorithm::Ciad(x) => {
            c.ciad = ciad_to_c(x);
            WEIR_LIMIT_CIAD
        }
        InnerAlgorithm::Knee(k) => {
            c.knee = knee_to_c(k);
            WEIR_LIMIT_KNEE
        }
    };
    c.algorithm = match limit {
        LimitAlgorithm::Fixed(f) => inner_to_c(&mut c, InnerAlgorithm::Fixed(f)),
        LimitAlgorithm::Aimd(a) => inner_to_c(&mut c, InnerAlgorithm::Aimd(a)),
        LimitAlgorithm::Vegas(v) => inner_to_c(&mut c, InnerAlgorithm::Vegas(v)),
        LimitAlgorithm::Gradient(g) => inner_to_c(&mut c, InnerAlgorithm::Gradient(g)),
        LimitAlgorithm::Gradient2(g) => inner_to_c(&mut c, InnerAlgorithm::Gradient2(g)),
        LimitAlgorithm::Ciad(x) => inner_to_c(&mut c, InnerAlgorithm::Ciad(x)),
        LimitAlgorithm::Knee(k) => inner_to_c(&mut c, InnerAlgorithm::Knee(k)),
        LimitAlgorithm::Windowed(w) => {
            c.windowed = weir_windowed_limit {
                inner: inner_to_c(&mut c, w.inner),
                min_window_ns: w.min_window_ns,
                max_window_ns: w.max_window_ns,
                min_samples: w.min_samples,
                min_rtt_threshold_ns: w.min_rtt_threshold_ns,
                window: window_to_c(w.window),
            };
            WEIR_LIMIT_WINDOWED
        } // The core's enum is exhaustive today; a new algorithm must be added here and to the header.
    };
    c
}

fn threshold_from_c(field: &str, t: weir_vegas_threshold) -> Result<VegasThreshold, Error> {
    match t.kind {
        WEIR_VEGAS_THRESHOLD_CONSTANT => Ok(VegasThreshold::Constant(t.value)),
        WEIR_VEGAS_THRESHOLD_LOG10 => Ok(VegasThreshold::Log10(t.value)),
        k => Err(unknown(
            field,
            k,
            "WEIR_VEGAS_THRESHOLD_CONSTANT (0), WEIR_VEGAS_THRESHOLD_LOG10 (1)",
        )),
    }
}

fn step_from_c(field: &str, s: weir_vegas_step) -> Result<VegasStep, Error> {
    match s.kind {
        WEIR_VEGAS_STEP_LOG10 => Ok(VegasStep::Log10),
        WEIR_VEGAS_STEP_FACTOR => Ok(VegasStep::Factor(s.factor)),
        k => Err(unknown(
            field,
            k,
            "WEIR_VEGAS_STEP_LOG10 (0), WEIR_VEGAS_STEP_FACTOR (1)",
        )),
    }
}

fn queue_from_c(field: &str, q: weir_queue_size) -> Result<QueueSize, Error> {
    match q.kind {
        WEIR_QUEUE_SIZE_CONSTANT => Ok(QueueSize::Constant(q.value)),
        WEIR_QUEUE_SIZE_SQRT => Ok(QueueSize::Sqrt { min: q.value }),
        k => Err(unknown(
            field,
            k,
            "WEIR_QUEUE_SIZE_CONSTANT (0), WEIR_QUEUE_SIZE_SQRT (1)",
        )),
    }
}

/// The algorithm `algorithm` names, with its parameters from `c` (any but the windowed wrapper).
fn inner_from_c(
    field: &str,
    algorithm: weir_limit_algorithm,
    c: &weir_limit,
) -> Result<InnerAlgorithm, Error> {
    Ok(match algorithm {
        WEIR_LIMIT_FIXED => InnerAlgorithm::Fixed(FixedLimit {
            limit: c.fixed.limit,
        }),
        WEIR_LIMIT_AIMD => InnerAlgorithm::Aimd(AimdLimit {
            initial_limit: c.aimd.initial_limit,
            min_limit: c.aimd.min_limit,
            max_limit: c.aimd.max_limit,
            backoff_ratio: c.aimd.backoff_ratio,
            timeout_ns: c.aimd.timeout_ns,
        }),
        WEIR_LIMIT_VEGAS => {
            let v = &c.vegas;
            InnerAlgorithm::Vegas(VegasLimit {
                initial_limit: v.initial_limit,
                max_limit: v.max_limit,
                smoothing: v.smoothing,
                probe_multiplier: v.probe_multiplier,
                alpha: threshold_from_c("limit.vegas.alpha.kind", v.alpha)?,
                beta: threshold_from_c("limit.vegas.beta.kind", v.beta)?,
                threshold: threshold_from_c("limit.vegas.threshold.kind", v.threshold)?,
                increase: step_from_c("limit.vegas.increase.kind", v.increase)?,
                decrease: step_from_c("limit.vegas.decrease.kind", v.decrease)?,
                baseline_from_drops: v.baseline_from_drops,
            })
        }
        WEIR_LIMIT_GRADIENT => {
            let g = &c.gradient;
            InnerAlgorithm::Gradient(GradientLimit {
                initial_limit: g.initial_limit,
                min_limit: g.min_limit,
                max_limit: g.max_limit,
                smoothing: g.smoothing,
                queue_size: queue_from_c("limit.gradient.queue_size.kind", g.queue_size)?,
                rtt_tolerance: g.rtt_tolerance,
                probe_interval: g.probe.then_some(g.probe_interval),
                backoff_ratio: g.backoff_ratio,
            })
        }
        WEIR_LIMIT_GRADIENT2 => {
            let g = &c.gradient2;
            InnerAlgorithm::Gradient2(Gradient2Limit {
                initial_limit: g.initial_limit,
                min_limit: g.min_limit,
                max_limit: g.max_limit,
                smoothing: g.smoothing,
                queue_size: queue_from_c("limit.gradient2.queue_size.kind", g.queue_size)?,
                long_window: g.long_window,
                rtt_tolerance: g.rtt_tolerance,
                drop_backoff: g.drop_backoff_enabled.then_some(g.drop_backoff),
            })
        }
        WEIR_LIMIT_CIAD => InnerAlgorithm::Ciad(CiadLimit {
            initial_limit: c.ciad.initial_limit,
            min_limit: c.ciad.min_limit,
            max_limit: c.ciad.max_limit,
            backoff_ratio: c.ciad.backoff_ratio,
            fast_start: c.ciad.fast_start,
            rtt_tolerance: c.ciad.rtt_tolerance,
        }),
        WEIR_LIMIT_KNEE => InnerAlgorithm::Knee(KneeLimit {
            initial_limit: c.knee.initial_limit,
            min_limit: c.knee.min_limit,
            max_limit: c.knee.max_limit,
            backoff_ratio: c.knee.backoff_ratio,
            knee: c.knee.knee,
            hold: c.knee.hold,
            armed_for_ns: c.knee.armed_for_ns,
        }),
        k => {
            return Err(unknown(
                field,
                k,
                "WEIR_LIMIT_FIXED (0), WEIR_LIMIT_AIMD (1), WEIR_LIMIT_VEGAS (2), \
                 WEIR_LIMIT_GRADIENT (3), WEIR_LIMIT_GRADIENT2 (4), WEIR_LIMIT_CIAD (5), \
                 WEIR_LIMIT_KNEE (7)",
            ))
        }
    })
}

/// The core limit a C one describes (validated with the whole configuration); an unknown tag is
/// `WEIR_ERR_INVALID_ARGUMENT`, naming its field.
pub(super) fn limit_from_c(c: &weir_limit) -> Result<LimitAlgorithm, Error> {
    if c.algorithm > WEIR_LIMIT_KNEE {
        return Err(unknown(
            "limit.algorithm",
            c.algorithm,
            "WEIR_LIMIT_FIXED (0) .. WEIR_LIMIT_KNEE (7)",
        ));
    }
    if c.algorithm != WEIR_LIMIT_WINDOWED {
        return inner_from_c("limit.algorithm", c.algorithm, c).map(LimitAlgorithm::from);
    }
    let w = &c.windowed;
    Ok(LimitAlgorithm::Windowed(WindowedLimit {
        inner: inner_from_c("limit.windowed.inner", w.inner, c)?,
        min_window_ns: w.min_window_ns,
        max_window_ns: w.max_window_ns,
        min_samples: w.min_samples,
        min_rtt_threshold_ns: w.min_rtt_threshold_ns,
        window: match w.window.kind {
            WEIR_SAMPLE_WINDOW_AVERAGE => SampleWindow::Average,
            WEIR_SAMPLE_WINDOW_PERCENTILE => SampleWindow::Percentile {
                percentile: w.window.percentile,
                capacity: w.window.capacity,
            },
            k => {
                return Err(unknown(
                    "limit.windowed.window.kind",
                    k,
                    "WEIR_SAMPLE_WINDOW_AVERAGE (0), WEIR_SAMPLE_WINDOW_PERCENTILE (1)",
                ))
            }
        },
    }))
}

/// A fixed limit of 100 (every other algorithm's parameters at their defaults too).
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_limit_fixed_default() -> weir_limit {
    limit_defaults(WEIR_LIMIT_FIXED)
}

/// AIMD with Netflix's defaults.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_limit_aimd_default() -> weir_limit {
    limit_defaults(WEIR_LIMIT_AIMD)
}

/// Vegas with Netflix's defaults.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_limit_vegas_default() -> weir_limit {
    limit_defaults(WEIR_LIMIT_VEGAS)
}

/// Gradient (v1) with Netflix's defaults.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_limit_gradient_default() -> weir_limit {
    limit_defaults(WEIR_LIMIT_GRADIENT)
}

/// Gradient2 with Netflix's defaults.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_limit_gradient2_default() -> weir_limit {
    limit_defaults(WEIR_LIMIT_GRADIENT2)
}

/// CIAD with dialogue's defaults (`fast_start` off; the balancer default turns it on).
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_limit_ciad_default() -> weir_limit {
    limit_defaults(WEIR_LIMIT_CIAD)
}

/// The knee limit with weir's defaults.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_limit_knee_default() -> weir_limit {
    limit_defaults(WEIR_LIMIT_KNEE)
}

/// The windowed wrapper with Netflix's defaults, around Vegas (set `windowed.inner` and that
/// algorithm's parameters to wrap another).
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_limit_windowed_default() -> weir_limit {
    limit_defaults(WEIR_LIMIT_WINDOWED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_limit_default_is_the_cores_and_round_trips() {
        let cases = [
            (
                weir_limit_fixed_default(),
                LimitAlgorithm::Fixed(FixedLimit::default()),
            ),
            (
                weir_limit_aimd_default(),
                LimitAlgorithm::Aimd(AimdLimit::default()),
            ),
            (
                weir_limit_vegas_default(),
                LimitAlgorithm::Vegas(VegasLimit::default()),
            ),
            (
                weir_limit_gradient_default(),
                LimitAlgorithm::Gradient(GradientLimit::default()),
            ),
            (
                weir_limit_gradient2_default(),
                LimitAlgorithm::Gradient2(Gradient2Limit::default()),
            ),
            (
                weir_limit_ciad_default(),
                LimitAlgorithm::Ciad(CiadLimit::default()),
            ),
            (
                weir_limit_knee_default(),
                LimitAlgorithm::Knee(KneeLimit::default()),
            ),
            (
                weir_limit_windowed_default(),
                LimitAlgorithm::Windowed(WindowedLimit::default()),
            ),
        ];
        for (c, core) in cases {
            assert_eq!(limit_from_c(&c).unwrap(), core);
            assert_eq!(limit_from_c(&limit_to_c(core)).unwrap(), core);
        }
        // Every inner algorithm of the wrapper, with non-default options on.
        for inner in [
            InnerAlgorithm::Fixed(FixedLimit { limit: 7 }),
            InnerAlgorithm::Aimd(AimdLimit::default()),
            InnerAlgorithm::Vegas(VegasLimit {
                increase: VegasStep::Factor(1.5),
                alpha: VegasThreshold::Constant(3),
                ..VegasLimit::default()
            }),
            InnerAlgorithm::Gradient(GradientLimit {
                probe_interval: None,
                queue_size: QueueSize::Constant(9),
                ..GradientLimit::default()
            }),
            InnerAlgorithm::Gradient2(Gradient2Limit {
                drop_backoff: Some(0.7),
                queue_size: QueueSize::Sqrt { min: 2 },
                ..Gradient2Limit::default()
            }),
            InnerAlgorithm::Ciad(CiadLimit {
                fast_start: true,
                rtt_tolerance: 2.5,
                ..CiadLimit::default()
            }),
            InnerAlgorithm::Knee(KneeLimit {
                backoff_ratio: 0.75,
                knee: 1.5,
                hold: 1.25,
                armed_for_ns: 0,
                ..KneeLimit::default()
            }),
        ] {
            let core = LimitAlgorithm::Windowed(WindowedLimit {
                inner,
                window: SampleWindow::Percentile {
                    percentile: 0.99,
                    capacity: 50,
                },
                ..WindowedLimit::default()
            });
            assert_eq!(limit_from_c(&limit_to_c(core)).unwrap(), core);
        }
    }

    /// Each knee field lands in its own core field (a round trip alone would not see two swapped in
    /// both directions), at the top level and wrapped.
    #[test]
    fn knee_fields_are_the_cores_by_name() {
        let mut c = weir_limit_knee_default();
        c.knee = weir_knee_limit {
            initial_limit: 5,
            min_limit: 2,
            max_limit: 40,
            backoff_ratio: 0.6,
            knee: 3.5,
            hold: 1.5,
            armed_for_ns: 7_000_000_000,
        };
        let core = KneeLimit {
            initial_limit: 5,
            min_limit: 2,
            max_limit: 40,
            backoff_ratio: 0.6,
            knee: 3.5,
            hold: 1.5,
            armed_for_ns: 7_000_000_000,
        };
        assert_eq!(limit_from_c(&c).unwrap(), LimitAlgorithm::Knee(core));
        assert_eq!(limit_to_c(LimitAlgorithm::Knee(core)).knee, c.knee);
        c.algorithm = WEIR_LIMIT_WINDOWED;
        c.windowed.inner = WEIR_LIMIT_KNEE;
        match limit_from_c(&c).unwrap() {
            LimitAlgorithm::Windowed(w) => assert_eq!(w.inner, InnerAlgorithm::Knee(core)),
            other => panic!("not windowed: {other:?}"),
        }
        // The next value after the knee is no algorithm, at the top level or wrapped.
        c.windowed.inner = WEIR_LIMIT_KNEE + 1;
        assert!(limit_from_c(&c).is_err());
        c.algorithm = WEIR_LIMIT_KNEE + 1;
        assert!(limit_from_c(&c).is_err());
    }
}
