//! [`Checks`]: a handle for a health checker on its own task, which sends the application's health
//! request to the nodes the balance stopped calling and reports the answers.
//!
//! The outcomes of real calls (passive health) take a failing node out of rotation; a check brings it
//! back once it answers well, without spending any caller's call on a node that may still be broken
//! (HAProxy's `observe` with its checks, Envoy's outlier detection with active checks). The core decides
//! which node is due ([`Balancer::due_check`](weir::Balancer::due_check)) and what an answer does
//! ([`Balancer::report_check`](weir::Balancer::report_check)); the handle names nodes by key.

use crate::error::CheckError;
use crate::members::Members;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use weir::rt::monotonic_now;
use weir::HeapBalancer;

/// A cheap, cloneable handle for a health checker, from [`Balance::checks`](crate::Balance::checks):
/// it asks which node is due for a check ([`due`](Self::due)) and reports the answer
/// ([`report`](Self::report)), naming nodes by their keys. `Send`, `Sync` and `'static` when the key is
/// (`Send`, `'static`), so a checker task holds one while the balance serves requests elsewhere (behind a
/// `tower::buffer::Buffer`, say). It shares the balancer and a table of the members' keys that the
/// balance keeps as membership changes; neither `due` nor `report` touches the path a request takes
/// beyond the balancer's atomics.
///
/// A checker: every tenth of the quiet period, ask for due nodes, send each its health request (the
/// application's own: `GET /healthz` on the key's address, a gRPC health `Check`), and report the answer.
///
/// ```
/// use std::convert::Infallible;
/// use std::time::Duration;
/// use tower::{Service, ServiceExt};
/// use weir_tower::{Builder, ByResult};
///
/// /// The application's health request to a backend, with its own short timeout; a fake here.
/// async fn healthy(addr: &str) -> bool {
///     addr != "10.0.0.9:80"
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), weir_tower::Error> {
/// let backend = tower::service_fn(|()| async { Ok::<_, Infallible>(()) });
/// let mut balance = Builder::new(weir::Config::default())
///     .classify(ByResult)
///     .build_list([("10.0.0.1:80", backend.clone()), ("10.0.0.2:80", backend)])?;
/// let checks = balance.checks(); // before the balance goes behind a Buffer
/// let checker = tokio::spawn(async move {
///     const QUIET: Duration = Duration::from_secs(2); // HAProxy's default interval
///     let mut every = tokio::time::interval(QUIET / 10);
///     loop {
///         every.tick().await;
///         // Each due node once: naming one makes it wait QUIET before it is named again.
///         while let Some(addr) = checks.due(QUIET) {
///             let answer = healthy(addr).await;
///             // An error: the node left while its check was under way (or the weighted family).
///             let _ = checks.report(&addr, answer);
///         }
///     }
/// });
/// balance.ready().await?.call(()).await?; // serving meanwhile
/// checker.abort();
/// # Ok(())
/// # }
/// ```
pub struct Checks<K> {
    balancer: Arc<HeapBalancer>,
    keys: Arc<Members<K>>,
}

impl<K> Checks<K> {
    pub(crate) fn new(balancer: Arc<HeapBalancer>, keys: Arc<Members<K>>) -> Self {
        Checks { balancer, keys }
    }
}

impl<K: Clone + PartialEq> Checks<K> {
    /// The key of a node due for a health check, if one is: a member the balancer stopped calling for
    /// its failures (it carries a penalty), in rotation, with no call in flight, whose failures have been
    /// quiet for `quiet` (the longest quiet first). Naming it dates its failures now, so it is not named
    /// again for `quiet` more: send its check, and [`report`](Self::report) the answer (a failed check
    /// dates them again, so a node that stays broken is checked once per `quiet`).
    ///
    /// Ask on a timer (a tenth of `quiet` is plenty): each question reads every member's slot, and moves
    /// the balancer's clock as a call does, so nodes fall due while no call is made. `None` when no node
    /// is due, under the weighted family (`Config::cascade()`, which keeps no penalty to forgive), and
    /// for a due node the balance does not know (one added on the balancer directly). `quiet` is counted
    /// in the core's ticks of about 1.05 ms, rounded down.
    ///
    /// ```
    /// # use weir_tower::{Builder, ByResult};
    /// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
    /// use std::time::Duration;
    /// let mut balance = Builder::new(weir::Config::default()).classify(ByResult).build_list([("a", svc)]).unwrap();
    /// // Nothing failed: no node is avoided, none is due.
    /// assert_eq!(balance.checks().due(Duration::ZERO), None);
    /// ```
    pub fn due(&self, quiet: Duration) -> Option<K> {
        let quiet_ns = u64::try_from(quiet.as_nanos()).unwrap_or(u64::MAX);
        let id = self.balancer.due_check(monotonic_now(), quiet_ns)?;
        self.keys.with(id, |key| key.cloned())
    }

    /// Records the answer of the health check of the node of `key`: `healthy` forgives its failures,
    /// so it takes calls again at once as any idle node does (its limit grows back with its calls'
    /// successes); a failed check counts one more failure and dates its failures now, so it is due
    /// again `quiet` later. A check is not a call: no statistic counts it. Any member may be reported,
    /// named by [`due`](Self::due) or not.
    ///
    /// An error, and nothing recorded, when no member has `key` ([`CheckError::UnknownKey`]: it left,
    /// perhaps while its check was under way) and under the weighted family
    /// ([`CheckError::NotLowestScore`]). Finding the key's node is a scan of the members' keys, once per
    /// report.
    ///
    /// ```
    /// # use weir_tower::{Builder, ByResult};
    /// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
    /// use weir_tower::CheckError;
    /// let mut balance = Builder::new(weir::Config::default()).classify(ByResult).build_list([("a", svc)]).unwrap();
    /// let checks = balance.checks();
    /// checks.report(&"a", false).unwrap(); // a failed check: "a" is avoided
    /// assert!(balance.node(&"a").unwrap().penalty > 0.0);
    /// checks.report(&"a", true).unwrap(); // it answered well: forgiven
    /// assert_eq!(balance.node(&"a").unwrap().penalty, 0.0);
    /// assert_eq!(checks.report(&"b", true), Err(CheckError::UnknownKey));
    /// ```
    pub fn report(&self, key: &K, healthy: bool) -> Result<(), CheckError> {
        let id = self.keys.id_of(key).ok_or(CheckError::UnknownKey)?;
        self.balancer
            .report_check(id, healthy, monotonic_now())
            .map_err(CheckError::from)
    }
}

impl<K> Clone for Checks<K> {
    /// Another handle on the same balancer and table of keys (the key need not be `Clone` for this).
    fn clone(&self) -> Self {
        Checks {
            balancer: Arc::clone(&self.balancer),
            keys: Arc::clone(&self.keys),
        }
    }
}

impl<K> fmt::Debug for Checks<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Checks")
            .field("nodes", &self.keys.len())
            .finish_non_exhaustive()
    }
}
