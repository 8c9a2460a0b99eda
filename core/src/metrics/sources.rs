//! The writers: what each of the balancer, the shedder, the throttle and the backoff reports, read from
//! the same atomics their `stats` and snapshots read.

use super::*;
use crate::backoff::Backoff;
use crate::balance::{Balancer, NodeSlot, NodeSnapshot, NodeState, Outcome, Waiting};
use crate::overload::{Criticality, RetryBudget, Shedder, Throttle};

/// The label value of each outcome, by its code.
const OUTCOME_LABELS: [&str; 6] = [
    "success",
    "failure",
    "dropped",
    "ignored",
    "throttled",
    "client_error",
];

/// Reads one per-node family's value from a snapshot.
type NodeValue = fn(&NodeSnapshot) -> Value;

impl<S: AsRef<[NodeSlot]>, Q: Waiting> Balancer<S, Q> {
    /// Writes the balancer's metrics and its members' at `now` (the families of
    /// [`FAMILIES`](crate::metrics::FAMILIES) up to `node_failures`; see `docs/metrics.md`) in the
    /// Prometheus text format. `names` writes a node's `node` label value from its id, unescaped (the
    /// writer escapes it): [`node_id_name`](crate::metrics::node_id_name) writes the id in decimal.
    ///
    /// Lock-free and allocation-free: it reads what [`stats`](Self::stats) and [`nodes`](Self::nodes)
    /// read. A format that [`MetricsFormat::check`] refuses writes nothing and returns `fmt::Error`, as
    /// does an error from `out` or `names` (the text written until then stays in `out`).
    ///
    /// ```
    /// use weir::metrics::MetricsFormat;
    /// use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
    ///
    /// let b = Balancer::new([const { NodeSlot::new() }; 2], Config::default()).unwrap();
    /// b.add(1).unwrap();
    /// let lease = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
    /// b.release(lease, Outcome::Failure, 10).unwrap();
    ///
    /// let name = |id: u64, out: &mut dyn core::fmt::Write| write!(out, "backend-{id}");
    /// let mut text = String::new();
    /// b.write_metrics(&mut text, &MetricsFormat::default(), &name, 10).unwrap();
    /// assert!(text.contains("weir_released_total{outcome=\"failure\"} 1\n"));
    /// assert!(text.contains("weir_node_penalty{node=\"backend-1\"} 26.0\n"));
    /// ```
    pub fn write_metrics<W: Write + ?Sized>(
        &self,
        out: &mut W,
        format: &MetricsFormat<'_>,
        names: &dyn Fn(u64, &mut dyn Write) -> fmt::Result,
        now: u64,
    ) -> fmt::Result {
        let mut t = Text::new(out, format)?;
        let st = self.stats();
        t.single(&ACQUIRED, Value::Int(st.acquired))?;
        t.each(
            &REJECTED,
            &[
                ("all_busy", Value::Int(st.rejected_all_busy)),
                ("no_active", Value::Int(st.rejected_no_active)),
            ],
        )?;
        t.header(&RELEASED)?;
        for (o, label) in Outcome::ALL.iter().zip(OUTCOME_LABELS) {
            t.sample(&RELEASED, None, Some(label), Value::Int(st.released(*o)))?;
        }
        t.single(&RELEASED_STALE, Value::Int(st.released_stale))?;
        t.single(&IN_FLIGHT, Value::Int(st.in_flight))?;
        t.each(
            &NODES,
            &[
                ("active", Value::Int(st.active_nodes.into())),
                ("lame_duck", Value::Int(st.lame_duck_nodes.into())),
            ],
        )?;
        t.single(&WAITS, Value::Int(st.waits))?;
        t.each(
            &WAITS_ENDED,
            &[
                ("granted", Value::Int(st.waits_granted)),
                ("timed_out", Value::Int(st.waits_timed_out)),
                ("cancelled", Value::Int(st.waits_cancelled)),
            ],
        )?;
        t.single(&WAITING, Value::Int(st.waiting))?;

        t.header(&NODE_STATE)?;
        for n in self.nodes(now) {
            let active = n.state == NodeState::Active;
            let node = Some((n.id, names));
            t.sample(&NODE_STATE, node, Some("active"), Value::Int(active.into()))?;
            t.sample(
                &NODE_STATE,
                node,
                Some("lame_duck"),
                Value::Int((!active).into()),
            )?;
        }
        let per_node: [(&Family, NodeValue); 7] = [
            (&NODE_IN_FLIGHT, |n| Value::Int(n.in_flight.into())),
            (&NODE_LIMIT, |n| Value::Int(n.limit.into())),
            (&NODE_PENALTY, |n| Value::Float(n.penalty)),
            (&NODE_SUCCESS_RATE, |n| Value::Float(n.success_rate)),
            (&NODE_WEIGHT, |n| Value::Float(n.weight)),
            (&NODE_SUCCESSES, |n| Value::Float(n.successes)),
            (&NODE_FAILURES, |n| Value::Float(n.failures)),
        ];
        for (f, value) in per_node {
            t.header(f)?;
            for n in self.nodes(now) {
                t.sample(f, Some((n.id, names)), None, value(&n))?;
            }
        }
        t.header(&NODE_RELEASED)?;
        for n in self.nodes(now) {
            for (o, label) in Outcome::ALL.iter().zip(OUTCOME_LABELS) {
                let count = Value::Int(n.released(*o));
                t.sample(&NODE_RELEASED, Some((n.id, names)), Some(label), count)?;
            }
        }
        Ok(())
    }
}

impl Shedder {
    /// Writes the shedder's metrics at `now` (the `shedder_*` families; see `docs/metrics.md`) in the
    /// Prometheus text format. `cpu` is the CPU usage in millicpu the caller passes to
    /// [`allow`](Self::allow) (the shedder keeps none), written as a ratio. Lock-free, allocation-free;
    /// a refused format writes nothing and returns `fmt::Error`.
    ///
    /// ```
    /// use weir::metrics::MetricsFormat;
    /// let s = weir::Shedder::new(weir::overload::ShedderConfig::default()).unwrap();
    /// let p = s.allow(300, 0).unwrap();
    /// s.success(p, 1_000_000).unwrap();
    /// let mut text = String::new();
    /// s.write_metrics(&mut text, &MetricsFormat::default(), 300, 1_000_000).unwrap();
    /// assert!(text.contains("weir_shedder_completed_total{result=\"success\"} 1\n"));
    /// assert!(text.contains("weir_shedder_cpu_usage_ratio 0.3\n"));
    /// ```
    pub fn write_metrics<W: Write + ?Sized>(
        &self,
        out: &mut W,
        format: &MetricsFormat<'_>,
        cpu: u32,
        now: u64,
    ) -> fmt::Result {
        let mut t = Text::new(out, format)?;
        let st = self.stats(now);
        t.single(&SHEDDER_ALLOWED, Value::Int(st.allowed))?;
        t.single(&SHEDDER_DROPPED, Value::Int(st.dropped))?;
        t.each(
            &SHEDDER_COMPLETED,
            &[
                ("success", Value::Int(st.succeeded)),
                ("failure", Value::Int(st.failed)),
            ],
        )?;
        t.single(&SHEDDER_IN_FLIGHT, Value::Int(st.in_flight))?;
        t.single(&SHEDDER_IN_FLIGHT_AVERAGE, Value::Float(st.avg_in_flight))?;
        t.single(&SHEDDER_MAX_FLIGHT, Value::Float(st.max_flight))?;
        // One correctly rounded division: the same double on every platform.
        let ratio = f64::from(cpu.min(1000)) / 1000.0;
        t.single(&SHEDDER_CPU, Value::Float(ratio))
    }
}

impl Throttle {
    /// Writes the throttle's metrics at `now` (the `throttle_*` families, by criticality; see
    /// `docs/metrics.md`) in the Prometheus text format. Lock-free, allocation-free; a refused format
    /// writes nothing and returns `fmt::Error`.
    ///
    /// ```
    /// use weir::metrics::MetricsFormat;
    /// use weir::overload::{Criticality, ThrottleConfig};
    /// let t = weir::Throttle::new(ThrottleConfig::default()).unwrap();
    /// t.allow(Criticality::Critical, 0, &mut weir::Rng::with_seed(1)).unwrap();
    /// t.accepted(Criticality::Critical, 0);
    /// let mut text = String::new();
    /// t.write_metrics(&mut text, &MetricsFormat::default(), 0).unwrap();
    /// assert!(text.contains("weir_throttle_requests_total{criticality=\"CRITICAL\"} 1\n"));
    /// assert!(text.contains("weir_throttle_rejection_probability{criticality=\"CRITICAL\"} 0.0\n"));
    /// ```
    pub fn write_metrics<W: Write + ?Sized>(
        &self,
        out: &mut W,
        format: &MetricsFormat<'_>,
        now: u64,
    ) -> fmt::Result {
        let mut t = Text::new(out, format)?;
        let st = self.stats(now);
        let per = [
            (&THROTTLE_REQUESTS, st.total_requests),
            (&THROTTLE_ACCEPTS, st.total_accepts),
            (&THROTTLE_REJECTED, st.total_throttled),
        ];
        for (f, counts) in per {
            t.header(f)?;
            for c in Criticality::ALL {
                let v = counts.get(c as usize).copied().unwrap_or(0);
                t.sample(f, None, Some(c.name()), Value::Int(v))?;
            }
        }
        t.single(&THROTTLE_RETRIES, Value::Int(st.total_retries))?;
        t.single(
            &THROTTLE_RETRIES_DENIED,
            Value::Int(st.total_retries_denied),
        )?;
        t.header(&THROTTLE_PROBABILITY)?;
        for c in Criticality::ALL {
            let p = self.probability(c, now);
            t.sample(&THROTTLE_PROBABILITY, None, Some(c.name()), Value::Float(p))?;
        }
        Ok(())
    }
}

impl RetryBudget {
    /// Writes the retry budget's metrics at `now` (the `retry_budget_*` families; see
    /// `docs/metrics.md`) in the Prometheus text format. Lock-free, allocation-free; a refused format
    /// writes nothing and returns `fmt::Error`.
    ///
    /// ```
    /// use weir::metrics::MetricsFormat;
    /// let b = weir::RetryBudget::new(Default::default()).unwrap();
    /// b.request(0);
    /// b.try_retry(0).unwrap();
    /// let mut text = String::new();
    /// b.write_metrics(&mut text, &MetricsFormat::default(), 0).unwrap();
    /// assert!(text.contains("\nweir_retry_budget_requests_total 1\n"));
    /// assert!(text.contains("\nweir_retry_budget_retries_total 1\n"));
    /// assert!(text.contains("\nweir_retry_budget_available 100\n")); // 0.2 x 1 + 100, less 1, up
    /// ```
    pub fn write_metrics<W: Write + ?Sized>(
        &self,
        out: &mut W,
        format: &MetricsFormat<'_>,
        now: u64,
    ) -> fmt::Result {
        let mut t = Text::new(out, format)?;
        let st = self.stats(now);
        t.single(&RETRY_BUDGET_REQUESTS, Value::Int(st.requests))?;
        t.single(&RETRY_BUDGET_RETRIES, Value::Int(st.retries))?;
        t.single(&RETRY_BUDGET_DENIED, Value::Int(st.denied))?;
        t.single(&RETRY_BUDGET_AVAILABLE, Value::Int(st.available))
    }
}

impl Backoff {
    /// Writes the backoff's metrics (the `backoff_*` families; see `docs/metrics.md`) in the Prometheus
    /// text format. The backoff has no clock, so `now` is unused; it is taken so that every writer has
    /// the same shape. Lock-free, allocation-free; a refused format writes nothing and returns
    /// `fmt::Error`.
    ///
    /// ```
    /// use weir::backoff::{BackoffConfig, Jitter};
    /// use weir::metrics::MetricsFormat;
    /// let config = BackoffConfig { initial_ns: 250_000_000, jitter: Jitter::None, ..BackoffConfig::default() };
    /// let b = weir::Backoff::new(config).unwrap();
    /// b.on_failure(&mut weir::Rng::with_seed(1));
    /// let mut text = String::new();
    /// b.write_metrics(&mut text, &MetricsFormat { prefix: "", labels: &[] }, 0).unwrap();
    /// assert!(text.contains("\nbackoff_delay_seconds 0.25\n"));
    /// assert!(text.contains("backoff_steps_total{direction=\"up\"} 1\n"));
    /// ```
    pub fn write_metrics<W: Write + ?Sized>(
        &self,
        out: &mut W,
        format: &MetricsFormat<'_>,
        now: u64,
    ) -> fmt::Result {
        let _ = now;
        let mut t = Text::new(out, format)?;
        let st = self.stats();
        t.single(&BACKOFF_DELAY, seconds(self.interval_ns()))?;
        t.single(&BACKOFF_INVOCATIONS, Value::Int(st.invocations))?;
        t.each(
            &BACKOFF_STEPS,
            &[
                ("up", Value::Int(st.went_up)),
                ("down", Value::Int(st.went_down)),
            ],
        )?;
        t.single(&BACKOFF_SLEEPS, Value::Int(st.slept))?;
        t.single(&BACKOFF_SLEEP_SECONDS, seconds(st.sleep_ns))
    }
}

/// Nanoseconds as seconds: one conversion and one correctly rounded division, the same double everywhere.
fn seconds(ns: u64) -> Value {
    Value::Float(ns as f64 / 1e9)
}
