//! Metrics in the Prometheus text exposition format (0.0.4, which OpenMetrics parsers also read),
//! written into any [`core::fmt::Write`]: no allocation, no lock, no `std`.
//!
//! One metric set, defined once here ([`FAMILIES`]) and documented in one table (`docs/metrics.md`,
//! checked against [`FAMILIES`] by a test): per node, per balancer, and for the overload tools. Every
//! surface writes it through this module (the C ABI's `weir_balancer_write_metrics`, Python's
//! `Balancer.metrics_text()`, weir-tower), so all of them print the same names with the same values for
//! the same state.
//!
//! | writer | families |
//! |---|---|
//! | [`Balancer::write_metrics`](crate::Balancer::write_metrics) | the balancer's (`acquired_total` … `waiting`) and the nodes' (`node_*`) |
//! | [`Shedder::write_metrics`](crate::Shedder::write_metrics) | `shedder_*` |
//! | [`Throttle::write_metrics`](crate::Throttle::write_metrics) | `throttle_*` |
//! | [`RetryBudget::write_metrics`](crate::RetryBudget::write_metrics) | `retry_budget_*` |
//! | [`Backoff::write_metrics`](crate::Backoff::write_metrics) | `backoff_*` |
//!
//! Reading metrics is reading the same atomics [`Balancer::stats`](crate::Balancer::stats) and
//! [`Balancer::nodes`](crate::Balancer::nodes) read, with plain loads: it never takes a lock (the wait
//! counters included), never writes to the state the hot path touches, and costs the hot path nothing but
//! the cache lines it shares for a moment. Each family is read when it is written, so under traffic two
//! families may come from instants a few microseconds apart, as two calls to `stats` would.
//!
//! ```
//! use weir::metrics::{node_id_name, MetricsFormat};
//! use weir::{Balancer, Config, NodeSlot};
//!
//! let b = Balancer::new([const { NodeSlot::new() }; 2], Config::default()).unwrap();
//! b.add(7).unwrap();
//! let format = MetricsFormat { prefix: "weir", labels: &[("service", "orders")] };
//! let mut text = String::new();
//! b.write_metrics(&mut text, &format, &node_id_name, 0).unwrap();
//! assert!(text.contains("# TYPE weir_node_in_flight gauge\n"));
//! assert!(text.contains("weir_node_limit{service=\"orders\",node=\"7\"} 20\n"));
//! ```

mod sources;

use core::fmt::{self, Write};

/// How to write: the metric name prefix and the constant labels.
///
/// ```
/// use weir::metrics::MetricsFormat;
/// let f = MetricsFormat::default();
/// assert_eq!((f.prefix, f.labels.len()), ("weir", 0));
/// assert!(MetricsFormat { prefix: "", labels: &[("service", "orders")] }.check().is_ok());
/// ```
#[derive(Clone, Copy, Debug)]
pub struct MetricsFormat<'a> {
    /// Prepended to every metric name with an underscore: `"weir"` gives `weir_node_in_flight`, `""` gives
    /// `node_in_flight`. Empty, or `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    pub prefix: &'a str,
    /// Constant labels on every sample, e.g. `&[("service", "orders")]`. Names are
    /// `[a-zA-Z_][a-zA-Z0-9_]*`, not `__`-prefixed, distinct, and none of the names the writers use
    /// themselves ([`RESERVED_LABELS`]); values are any text (escaped when written).
    pub labels: &'a [(&'a str, &'a str)],
}

impl Default for MetricsFormat<'_> {
    fn default() -> Self {
        MetricsFormat {
            prefix: "weir",
            labels: &[],
        }
    }
}

/// The label names the writers put on samples themselves; a constant label may not take one.
pub const RESERVED_LABELS: [&str; 7] = [
    "node",
    "cause",
    "outcome",
    "state",
    "result",
    "criticality",
    "direction",
];

/// Why a [`MetricsFormat`] was refused. Nothing is written with a refused format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricsError {
    /// The prefix is not empty and not `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    Prefix,
    /// The constant label at this index has a name that is not `[a-zA-Z_][a-zA-Z0-9_]*`, or starts with
    /// `__` (reserved by Prometheus).
    LabelName(usize),
    /// The constant label at this index has a name the writers use ([`RESERVED_LABELS`]).
    ReservedLabel(usize),
    /// The constant label at this index has the name of an earlier one.
    DuplicateLabel(usize),
}

impl fmt::Display for MetricsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetricsError::Prefix => f.write_str(
                "metric prefix: must be empty or match [a-zA-Z_:][a-zA-Z0-9_:]*",
            ),
            MetricsError::LabelName(i) => write!(
                f,
                "constant label {i}: the name must match [a-zA-Z_][a-zA-Z0-9_]* and not start with __"
            ),
            MetricsError::ReservedLabel(i) => write!(
                f,
                "constant label {i}: the name is one the metrics use themselves (node, cause, outcome, \
                 state, result, criticality, direction)"
            ),
            MetricsError::DuplicateLabel(i) => {
                write!(f, "constant label {i}: the name is given twice")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for MetricsError {}

impl MetricsFormat<'_> {
    /// Checks the prefix and the constant labels' names; every writer calls it first and writes nothing
    /// with a refused format (it returns `fmt::Error`), so a surface that wants to say why calls it
    /// itself.
    ///
    /// ```
    /// use weir::metrics::{MetricsError, MetricsFormat};
    /// let bad = MetricsFormat { prefix: "9lives", labels: &[] };
    /// assert_eq!(bad.check(), Err(MetricsError::Prefix));
    /// let bad = MetricsFormat { prefix: "weir", labels: &[("zone", "a"), ("node", "b")] };
    /// assert_eq!(bad.check(), Err(MetricsError::ReservedLabel(1)));
    /// ```
    pub fn check(&self) -> Result<(), MetricsError> {
        if !self.prefix.is_empty() && !is_name(self.prefix, true) {
            return Err(MetricsError::Prefix);
        }
        for (i, (name, _)) in self.labels.iter().enumerate() {
            if !is_name(name, false) || name.starts_with("__") {
                return Err(MetricsError::LabelName(i));
            }
            if RESERVED_LABELS.contains(name) {
                return Err(MetricsError::ReservedLabel(i));
            }
            if self.labels[..i].iter().any(|(earlier, _)| earlier == name) {
                return Err(MetricsError::DuplicateLabel(i));
            }
        }
        Ok(())
    }
}

/// `[a-zA-Z_][a-zA-Z0-9_]*`, with `:` allowed too in metric names.
fn is_name(s: &str, colon: bool) -> bool {
    let ok = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || (colon && c == b':');
    match s.as_bytes() {
        [first, rest @ ..] => !first.is_ascii_digit() && ok(*first) && rest.iter().all(|&c| ok(c)),
        [] => false,
    }
}

/// Writes a node's id in decimal: the default node name.
///
/// ```
/// let mut s = String::new();
/// weir::metrics::node_id_name(42, &mut s).unwrap();
/// assert_eq!(s, "42");
/// ```
pub fn node_id_name(id: u64, out: &mut dyn Write) -> fmt::Result {
    write!(out, "{id}")
}

/// A metric's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    /// Only goes up (from 0 when its owner was built); the name ends in `_total`.
    Counter,
    /// Goes up and down.
    Gauge,
}

impl MetricKind {
    /// The word of the `# TYPE` line.
    ///
    /// ```
    /// assert_eq!(weir::metrics::MetricKind::Counter.name(), "counter");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
        }
    }
}

/// One metric family: its name (without the prefix), type, labels (besides the constant ones), meaning
/// and unit. [`FAMILIES`] holds them all; `docs/metrics.md` is their table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Family {
    /// The name without the prefix; a counter's ends in `_total`.
    pub name: &'static str,
    /// Counter or gauge.
    pub kind: MetricKind,
    /// The labels each sample carries besides the constant ones, in order.
    pub labels: &'static [&'static str],
    /// The `# HELP` text.
    pub help: &'static str,
    /// The unit of the value.
    pub unit: &'static str,
}

const fn family(
    name: &'static str,
    kind: MetricKind,
    labels: &'static [&'static str],
    help: &'static str,
    unit: &'static str,
) -> Family {
    Family {
        name,
        kind,
        labels,
        help,
        unit,
    }
}

use MetricKind::{Counter, Gauge};

pub(crate) const ACQUIRED: Family =
    family("acquired_total", Counter, &[], "Leases granted.", "leases");
pub(crate) const REJECTED: Family = family(
    "rejected_total",
    Counter,
    &["cause"],
    "Acquires answered with no lease: all_busy (every active node at its limit, or a wait gave up), no_active (no node in rotation).",
    "acquires",
);
pub(crate) const RELEASED: Family = family(
    "released_total",
    Counter,
    &["outcome"],
    "Leases released to a live node, by outcome (success, failure, dropped, ignored, throttled, client_error).",
    "leases",
);
pub(crate) const RELEASED_STALE: Family = family(
    "released_stale_total",
    Counter,
    &[],
    "Leases released after their node was removed.",
    "leases",
);
pub(crate) const IN_FLIGHT: Family =
    family("in_flight", Gauge, &[], "Leases in flight now.", "leases");
pub(crate) const NODES: Family = family(
    "nodes",
    Gauge,
    &["state"],
    "Members by state: active (in rotation) or lame_duck (no new leases).",
    "nodes",
);
pub(crate) const WAITS: Family = family(
    "waits_total",
    Counter,
    &[],
    "Waiting acquires that found no room and queued (std's waiting acquires; 0 without them).",
    "waits",
);
pub(crate) const WAITS_ENDED: Family = family(
    "waits_ended_total",
    Counter,
    &["result"],
    "Waits that ended: granted (handed a lease), timed_out (deadline passed), cancelled (the caller stopped waiting).",
    "waits",
);
pub(crate) const WAITING: Family = family(
    "waiting",
    Gauge,
    &[],
    "Callers waiting for room now.",
    "callers",
);
pub(crate) const NODE_STATE: Family = family(
    "node_state",
    Gauge,
    &["node", "state"],
    "1 for the member's state (active or lame_duck), 0 for the other; a removed node has no samples.",
    "boolean",
);
pub(crate) const NODE_IN_FLIGHT: Family = family(
    "node_in_flight",
    Gauge,
    &["node"],
    "Leases in flight on the node.",
    "leases",
);
pub(crate) const NODE_LIMIT: Family = family(
    "node_limit",
    Gauge,
    &["node"],
    "The node's concurrency limit.",
    "leases",
);
pub(crate) const NODE_PENALTY: Family = family(
    "node_penalty",
    Gauge,
    &["node"],
    "The decay model's failure penalty; the node's score is in_flight + penalty (0 under the buckets and ewma models).",
    "leases",
);
pub(crate) const NODE_SUCCESS_RATE: Family = family(
    "node_success_rate",
    Gauge,
    &["node"],
    "The node's success rate: the buckets' or the average's estimate with the recovery floor, or S / (S + F) of the decay model's counters (1 with no data).",
    "ratio",
);
pub(crate) const NODE_WEIGHT: Family = family(
    "node_weight",
    Gauge,
    &["node"],
    "success_rate ^ weight_exponent: what the weighted policies draw by.",
    "ratio",
);
pub(crate) const NODE_SUCCESSES: Family = family(
    "node_successes",
    Gauge,
    &["node"],
    "The decay model's time-decayed success counter (0 under the other models).",
    "requests",
);
pub(crate) const NODE_FAILURES: Family = family(
    "node_failures",
    Gauge,
    &["node"],
    "The decay model's time-decayed failure counter (0 under the other models).",
    "requests",
);
pub(crate) const NODE_RELEASED: Family = family(
    "node_released_total",
    Counter,
    &["node", "outcome"],
    "Leases released to the node while it was a member, by outcome (as released_total), counted from the node's add: a node added again starts at 0.",
    "leases",
);
pub(crate) const SHEDDER_ALLOWED: Family = family(
    "shedder_allowed_total",
    Counter,
    &[],
    "Requests the shedder admitted.",
    "requests",
);
pub(crate) const SHEDDER_DROPPED: Family = family(
    "shedder_dropped_total",
    Counter,
    &[],
    "Requests the shedder dropped (overloaded).",
    "requests",
);
pub(crate) const SHEDDER_COMPLETED: Family = family(
    "shedder_completed_total",
    Counter,
    &["result"],
    "Admitted requests completed: success or failure.",
    "requests",
);
pub(crate) const SHEDDER_IN_FLIGHT: Family = family(
    "shedder_in_flight",
    Gauge,
    &[],
    "Admitted requests not yet completed.",
    "requests",
);
pub(crate) const SHEDDER_IN_FLIGHT_AVERAGE: Family = family(
    "shedder_in_flight_average",
    Gauge,
    &[],
    "The moving average of requests in flight.",
    "requests",
);
pub(crate) const SHEDDER_MAX_FLIGHT: Family = family(
    "shedder_max_flight",
    Gauge,
    &[],
    "The in-flight bound from the window (max passes x min response time), before the CPU factor.",
    "requests",
);
pub(crate) const SHEDDER_CPU: Family = family(
    "shedder_cpu_usage_ratio",
    Gauge,
    &[],
    "The CPU usage the caller passed (millicpu / 1000).",
    "ratio",
);
pub(crate) const THROTTLE_REQUESTS: Family = family(
    "throttle_requests_total",
    Counter,
    &["criticality"],
    "Requests the throttle counted (local rejections and retries included), by criticality.",
    "requests",
);
pub(crate) const THROTTLE_ACCEPTS: Family = family(
    "throttle_accepts_total",
    Counter,
    &["criticality"],
    "Requests the backend accepted, by criticality.",
    "requests",
);
pub(crate) const THROTTLE_REJECTED: Family = family(
    "throttle_rejected_total",
    Counter,
    &["criticality"],
    "Requests rejected locally by the throttle, by criticality.",
    "requests",
);
pub(crate) const THROTTLE_RETRIES: Family = family(
    "throttle_retries_total",
    Counter,
    &[],
    "Retries the retry budget admitted.",
    "requests",
);
pub(crate) const THROTTLE_RETRIES_DENIED: Family = family(
    "throttle_retries_denied_total",
    Counter,
    &[],
    "Retries the retry budget refused.",
    "requests",
);
pub(crate) const THROTTLE_PROBABILITY: Family = family(
    "throttle_rejection_probability",
    Gauge,
    &["criticality"],
    "The current local rejection probability, by criticality.",
    "ratio",
);
pub(crate) const RETRY_BUDGET_REQUESTS: Family = family(
    "retry_budget_requests_total",
    Counter,
    &[],
    "Requests the retry budget counted (first tries).",
    "requests",
);
pub(crate) const RETRY_BUDGET_RETRIES: Family = family(
    "retry_budget_retries_total",
    Counter,
    &[],
    "Retries the retry budget admitted.",
    "requests",
);
pub(crate) const RETRY_BUDGET_DENIED: Family = family(
    "retry_budget_denied_total",
    Counter,
    &[],
    "Retries the retry budget refused.",
    "requests",
);
pub(crate) const RETRY_BUDGET_AVAILABLE: Family = family(
    "retry_budget_available",
    Gauge,
    &[],
    "Retries the budget's window admits now, before the next request.",
    "requests",
);
pub(crate) const BACKOFF_DELAY: Family = family(
    "backoff_delay_seconds",
    Gauge,
    &[],
    "The backoff's current interval (0: not backing off).",
    "seconds",
);
pub(crate) const BACKOFF_INVOCATIONS: Family = family(
    "backoff_invocations_total",
    Counter,
    &[],
    "Failures and successes reported to the backoff.",
    "calls",
);
pub(crate) const BACKOFF_STEPS: Family = family(
    "backoff_steps_total",
    Counter,
    &["direction"],
    "Steps of the interval: up (a failure) or down (after a run of successes).",
    "steps",
);
pub(crate) const BACKOFF_SLEEPS: Family = family(
    "backoff_sleeps_total",
    Counter,
    &[],
    "Delays handed out to sleep, zero delays included.",
    "delays",
);
pub(crate) const BACKOFF_SLEEP_SECONDS: Family = family(
    "backoff_sleep_seconds_total",
    Counter,
    &[],
    "The sum of the delays handed out.",
    "seconds",
);

/// Every metric family, in the order the writers write them: the balancer's, the nodes', the shedder's,
/// the throttle's, the retry budget's, the backoff's.
///
/// ```
/// use weir::metrics::{MetricKind, FAMILIES};
/// assert!(FAMILIES.iter().all(|f| (f.kind == MetricKind::Counter) == f.name.ends_with("_total")));
/// ```
pub const FAMILIES: [Family; 40] = [
    ACQUIRED,
    REJECTED,
    RELEASED,
    RELEASED_STALE,
    IN_FLIGHT,
    NODES,
    WAITS,
    WAITS_ENDED,
    WAITING,
    NODE_STATE,
    NODE_IN_FLIGHT,
    NODE_LIMIT,
    NODE_PENALTY,
    NODE_SUCCESS_RATE,
    NODE_WEIGHT,
    NODE_SUCCESSES,
    NODE_FAILURES,
    NODE_RELEASED,
    SHEDDER_ALLOWED,
    SHEDDER_DROPPED,
    SHEDDER_COMPLETED,
    SHEDDER_IN_FLIGHT,
    SHEDDER_IN_FLIGHT_AVERAGE,
    SHEDDER_MAX_FLIGHT,
    SHEDDER_CPU,
    THROTTLE_REQUESTS,
    THROTTLE_ACCEPTS,
    THROTTLE_REJECTED,
    THROTTLE_RETRIES,
    THROTTLE_RETRIES_DENIED,
    THROTTLE_PROBABILITY,
    RETRY_BUDGET_REQUESTS,
    RETRY_BUDGET_RETRIES,
    RETRY_BUDGET_DENIED,
    RETRY_BUDGET_AVAILABLE,
    BACKOFF_DELAY,
    BACKOFF_INVOCATIONS,
    BACKOFF_STEPS,
    BACKOFF_SLEEPS,
    BACKOFF_SLEEP_SECONDS,
];

/// Writes the table of [`FAMILIES`] in Markdown, the one `docs/metrics.md` holds (a test compares them).
///
/// ```
/// let mut table = String::new();
/// weir::metrics::write_table(&mut table).unwrap();
/// assert!(table.contains("| `node_in_flight` | gauge | `node` |"));
/// ```
pub fn write_table(out: &mut dyn Write) -> fmt::Result {
    out.write_str("| name | type | labels | meaning | unit |\n|---|---|---|---|---|\n")?;
    for f in &FAMILIES {
        write!(out, "| `{}` | {} | ", f.name, f.kind.name())?;
        for (i, l) in f.labels.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(out, "{sep}`{l}`")?;
        }
        writeln!(out, " | {} | {} |", f.help, f.unit)?;
    }
    Ok(())
}

/// A sample's value.
#[derive(Clone, Copy)]
pub(crate) enum Value {
    Int(u64),
    Float(f64),
}

/// Writes label values escaped as the exposition format wants (`\` `"` and newline), on the fly.
struct Escaped<'a, W: Write + ?Sized>(&'a mut W);

impl<W: Write + ?Sized> Write for Escaped<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let mut rest = s;
        while let Some(i) = rest.find(['\\', '"', '\n']) {
            let (plain, tail) = rest.split_at(i);
            self.0.write_str(plain)?;
            let (special, tail) = tail.split_at(1);
            self.0.write_str(match special {
                "\\" => "\\\\",
                "\"" => "\\\"",
                _ => "\\n",
            })?;
            rest = tail;
        }
        self.0.write_str(rest)
    }
}

/// The node-name callback the balancer's writer takes.
pub(crate) type Names<'n> = &'n dyn Fn(u64, &mut dyn Write) -> fmt::Result;

/// One writing: the output and the format, checked once.
pub(crate) struct Text<'o, 'f, W: Write + ?Sized> {
    out: &'o mut W,
    format: &'f MetricsFormat<'f>,
}

impl<'o, 'f, W: Write + ?Sized> Text<'o, 'f, W> {
    /// Refuses a bad format before anything is written.
    pub(crate) fn new(out: &'o mut W, format: &'f MetricsFormat<'f>) -> Result<Self, fmt::Error> {
        format.check().map_err(|_| fmt::Error)?;
        Ok(Text { out, format })
    }

    fn name(&mut self, f: &Family) -> fmt::Result {
        if !self.format.prefix.is_empty() {
            self.out.write_str(self.format.prefix)?;
            self.out.write_char('_')?;
        }
        self.out.write_str(f.name)
    }

    /// The `# HELP` and `# TYPE` lines of a family.
    pub(crate) fn header(&mut self, f: &Family) -> fmt::Result {
        self.out.write_str("# HELP ")?;
        self.name(f)?;
        // The help texts hold no backslash or newline, the two characters HELP would escape.
        write!(self.out, " {}\n# TYPE ", f.help)?;
        self.name(f)?;
        writeln!(self.out, " {}", f.kind.name())
    }

    /// One sample: the constant labels, then the node's (if `node`), then the family's own (if `label`).
    pub(crate) fn sample(
        &mut self,
        f: &Family,
        node: Option<(u64, Names<'_>)>,
        label: Option<&str>,
        value: Value,
    ) -> fmt::Result {
        self.name(f)?;
        let mut sep = '{';
        for (k, v) in self.format.labels {
            write!(self.out, "{sep}{k}=\"")?;
            Escaped(&mut *self.out).write_str(v)?;
            self.out.write_char('"')?;
            sep = ',';
        }
        if let Some((id, names)) = node {
            write!(self.out, "{sep}node=\"")?;
            names(id, &mut Escaped(&mut *self.out))?;
            self.out.write_char('"')?;
            sep = ',';
        }
        if let (Some(v), Some(k)) = (label, f.labels.last()) {
            write!(self.out, "{sep}{k}=\"")?;
            Escaped(&mut *self.out).write_str(v)?;
            self.out.write_char('"')?;
            sep = ',';
        }
        if sep == ',' {
            self.out.write_char('}')?;
        }
        match value {
            Value::Int(v) => writeln!(self.out, " {v}"),
            Value::Float(v) if v.is_nan() => self.out.write_str(" NaN\n"),
            Value::Float(v) if v.is_infinite() => {
                self.out
                    .write_str(if v > 0.0 { " +Inf\n" } else { " -Inf\n" })
            }
            // The shortest decimal that reads back as the same double (as the trace files write them).
            Value::Float(v) => writeln!(self.out, " {v:?}"),
        }
    }

    /// A family with one unlabelled sample.
    pub(crate) fn single(&mut self, f: &Family, value: Value) -> fmt::Result {
        self.header(f)?;
        self.sample(f, None, None, value)
    }

    /// A family with one sample per value of its label.
    pub(crate) fn each(&mut self, f: &Family, samples: &[(&str, Value)]) -> fmt::Result {
        self.header(f)?;
        for (label, value) in samples {
            self.sample(f, None, Some(label), *value)?;
        }
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
