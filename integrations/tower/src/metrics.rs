//! [`Metrics`]: a balance's metrics in Prometheus' text format, readable from any task or thread while
//! the [`Balance`](crate::Balance) itself is owned by the client.
//!
//! The numbers are the core's ([`weir::metrics`]): the same atomics a snapshot reads, so a scrape never
//! blocks or slows a call. Nodes are named by their keys' `Display` (`node="backend-a"`); the handle keeps
//! its own table of those names, written when membership changes (off the hot path: `call` and the
//! response future never touch it, see [`members`](crate::members)) and read one name at a time while a
//! scrape writes its lines.

use crate::members::Members;
use std::fmt;
use std::sync::Arc;
use weir::metrics::{node_id_name, MetricsFormat};
use weir::rt::monotonic_now;
use weir::{Backoff, HeapBalancer, RetryBudget};

/// A cheap, cloneable reader of a balance's metrics, from
/// [`Balance::metrics`](crate::Balance::metrics): `Send`, `Sync` and `'static`, so an HTTP handler task
/// can hold one and scrape while the balance serves requests elsewhere. Writing costs the calls nothing
/// (it reads the balancer's atomics); clones share everything.
///
/// ```
/// # use weir_tower::{Builder, ByResult};
/// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
/// let mut balance = Builder::new(weir::Config::default()).classify(ByResult).build_list([("a", svc)]).unwrap();
/// let metrics = balance.metrics();
/// let text = metrics.to_string(); // or metrics.write(&mut out, &format)
/// assert!(text.contains("weir_node_in_flight{node=\"a\"} 0\n"), "{text}");
/// ```
#[derive(Clone)]
pub struct Metrics {
    balancer: Arc<HeapBalancer>,
    names: Arc<Members<String>>,
    budget: Option<Arc<RetryBudget>>,
    backoff: Option<Arc<Backoff>>,
}

impl Metrics {
    pub(crate) fn new(
        balancer: Arc<HeapBalancer>,
        names: Arc<Members<String>>,
        budget: Option<Arc<RetryBudget>>,
        backoff: Option<Arc<Backoff>>,
    ) -> Self {
        Metrics {
            balancer,
            names,
            budget,
            backoff,
        }
    }

    /// Writes the balance's metrics to `out` in Prometheus' text format (0.0.4), with `format`'s prefix
    /// and constant labels: per node (named by its key), its state, calls in flight, limit, success rate
    /// and health counters; for the balancer, its leases granted and released by outcome, refusals and
    /// waits (`docs/metrics.md` lists the families); with retries
    /// ([`Builder::retry`](crate::Builder::retry)), the retry budget's `retry_budget_*` families and
    /// the backoff's `backoff_*` (a budget shared by several balances is written by each). An error
    /// when `out` fails, or when the core refuses `format` (a prefix or label name Prometheus cannot
    /// take: [`MetricsFormat::check`] says why; nothing is written then).
    ///
    /// ```
    /// # use weir_tower::{Builder, ByResult};
    /// use weir::metrics::MetricsFormat;
    /// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
    /// let mut balance = Builder::new(weir::Config::default()).classify(ByResult).build_list([("a", svc)]).unwrap();
    /// let metrics = balance.metrics();
    /// let format = MetricsFormat { prefix: "api", labels: &[("zone", "eu")] };
    /// let mut text = String::new();
    /// metrics.write(&mut text, &format).unwrap();
    /// assert!(text.contains("api_node_limit{"), "{text}");
    /// assert!(text.contains("node=\"a\""), "{text}");
    /// ```
    pub fn write<W: fmt::Write + ?Sized>(
        &self,
        out: &mut W,
        format: &MetricsFormat<'_>,
    ) -> fmt::Result {
        // A node the balance does not know (one added on the balancer directly) is named by its id.
        let names = |id: u64, w: &mut dyn fmt::Write| {
            self.names.with(id, |name| match name {
                Some(name) => w.write_str(name),
                None => node_id_name(id, w),
            })
        };
        let now = monotonic_now();
        self.balancer.write_metrics(out, format, &names, now)?;
        write_retry_metrics(
            out,
            format,
            self.budget.as_deref(),
            self.backoff.as_deref(),
            now,
        )
    }
}

impl fmt::Display for Metrics {
    /// The metrics with the default format (prefix `weir`, no constant labels).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, &MetricsFormat::default())
    }
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics")
            .field("nodes", &self.names.len())
            .finish_non_exhaustive()
    }
}

/// The retries' families, where the balance retries: the budget's, then the backoff's.
pub(crate) fn write_retry_metrics<W: fmt::Write + ?Sized>(
    out: &mut W,
    format: &MetricsFormat<'_>,
    budget: Option<&RetryBudget>,
    backoff: Option<&Backoff>,
    now: u64,
) -> fmt::Result {
    if let Some(budget) = budget {
        budget.write_metrics(out, format, now)?;
    }
    if let Some(backoff) = backoff {
        backoff.write_metrics(out, format, now)?;
    }
    Ok(())
}
