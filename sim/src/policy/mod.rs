//! The interface between a simulated client and the balancing policy it uses.
//!
//! The simulation is single-threaded, so a policy is a plain `&mut self` object: one instance per client,
//! never shared. weir's policies reach the real core through [`policy::weir`](self::weir); the field's
//! baselines live in [`baseline`]; [`registry`] names them all.
//!
//! Inside this module `weir` is the child module [`policy::weir`](self::weir), so the core crate is
//! spelled `::weir`.

pub mod baseline;
pub mod registry;
pub mod weir;

use ::weir::{balance::RawLease, Rng};

/// A server's index in the scenario's server table (stable for the whole run).
pub type ServerId = usize;

/// A request's number in a run: the order it arrived in, from 0. The engine keeps its requests in that
/// order, and dialogue's client names the requests it holds by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub usize);

/// What came back for one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reply {
    /// The server answered with this HTTP status.
    Status(u16),
    /// The connection was refused or reset: the server is down (crashed) or was removed.
    Refused,
    /// The client's deadline passed before the answer (the server may still be working on it).
    Timeout,
}

impl Reply {
    /// A 2xx answer.
    pub fn is_success(self) -> bool {
        matches!(self, Reply::Status(200..=299))
    }

    /// Whether a client retries this reply (when its scenario retries at all): 5xx, 429, connection errors
    /// and timeouts; never a success or another 4xx (the caller's fault).
    pub fn is_retryable(self) -> bool {
        match self {
            Reply::Status(s) => s == 429 || s >= 500,
            Reply::Refused | Reply::Timeout => true,
        }
    }

    /// The outcome weir's core is told (DESIGN.md: timeouts and overload are `Dropped`, connection errors
    /// `Failure`, HTTP statuses through [`weir::Outcome::from_http_status`](::weir::Outcome::from_http_status)).
    pub fn outcome(self) -> ::weir::Outcome {
        match self {
            Reply::Status(s) => {
                ::weir::Outcome::from_http_status(s).unwrap_or(::weir::Outcome::Failure)
            }
            Reply::Refused => ::weir::Outcome::Failure,
            Reply::Timeout => ::weir::Outcome::Dropped,
        }
    }
}

/// The load a server reports with each answer (ORCA-style, as gRPC's weighted round robin consumes it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoadReport {
    /// Busy fraction of the server: requests in progress / capacity (may exceed 1 when overloaded).
    pub utilization: f64,
    /// Answers per second the server gave recently (all clients).
    pub qps: f64,
    /// Error answers (5xx and 429) per second recently (all clients).
    pub eps: f64,
}

/// The end of one attempt, as the client saw it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Completion {
    /// What came back.
    pub reply: Reply,
    /// Time from the attempt's send to this completion, in nanoseconds.
    pub rtt_ns: u64,
    /// The server's load report, when it answered (none for timeouts and refused connections).
    pub report: Option<LoadReport>,
}

/// One attempt a policy decided to make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pick {
    /// Where to send it.
    pub server: ServerId,
    /// weir's lease for the attempt (baselines leave it `None`).
    pub lease: Option<RawLease>,
    /// The policy's own number for the attempt, handed back unchanged with its completion (baselines find
    /// their per-attempt records by it; weir leaves it 0).
    pub tag: u64,
}

/// What a client does with a request its policy refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Fail it at once (weir's fail-fast).
    FailFast,
    /// Keep it in the client's FIFO queue and ask again whenever one of the client's attempts completes
    /// (dialogue's QueuedChannel).
    Queue,
    /// weir's waiting acquire (`Balancer::acquire_wait`): as [`Refusal::Queue`], but the queue holds at
    /// most `max_waiters` requests (one more fails fast), a request refused because no node is in rotation
    /// fails at once ([`Balance::no_nodes`]), a node coming into rotation also drains the queue, and the
    /// queue is served newest first while its oldest request has waited more than
    /// `weir::rt::STANDING_NS`, each such drain shedding the requests with a deadline that waited longer
    /// than that (`weir::rt::WaitError::Shed`, a fail-fast refusal to the client).
    Wait {
        /// The core's `Config::max_waiters`.
        max_waiters: usize,
    },
}

/// A client-side balancing policy.
///
/// Calls arrive in this order: [`set_servers`](Balance::set_servers) once before anything else, then any
/// interleaving of picks, completions (exactly one per pick, possibly after the server left the list),
/// membership changes and health checks (exactly one answer per check named, possibly after the server left
/// the list).
pub trait Balance {
    /// A new attempt: the server to send it to, or `None` when the policy refuses to send it now.
    fn pick(&mut self, now: u64, rng: &mut Rng) -> Option<Pick>;
    /// The end of an attempt `pick` returned.
    fn complete(&mut self, pick: Pick, done: &Completion, now: u64);
    /// The client's server list is now `servers` (all of it, in the client's order).
    fn set_servers(&mut self, servers: &[ServerId], now: u64);
    /// Lame duck on or off: a draining server gets no new attempts; those in flight finish normally.
    fn set_draining(&mut self, server: ServerId, draining: bool, now: u64);
    /// What the client does when [`pick`](Balance::pick) returns `None`.
    fn on_refusal(&self) -> Refusal {
        Refusal::FailFast
    }
    /// Whether the last refusal was for want of any node in rotation (weir's `Rejected::NoActiveNodes`).
    fn no_nodes(&self) -> bool {
        false
    }
    /// A retry of a request whose earlier attempts went to `tried` (in order, repeats possible): by
    /// default [`pick`](Balance::pick), as if it were new.
    fn pick_retry(&mut self, now: u64, rng: &mut Rng, tried: &[ServerId]) -> Option<Pick> {
        let _ = tried;
        self.pick(now, rng)
    }
    /// The retries this policy's client makes, given the scenario's rule: by default the scenario's
    /// rule, with its budget.
    fn retry_plan(&self, scenario: Option<crate::model::Retries>) -> RetryPlan {
        RetryPlan {
            rule: scenario,
            budget: None,
        }
    }
    /// A health check to send at `now`: the server the client should check, or `None` (by default, the
    /// policy sends no checks). The engine asks once per try of a request (its arrival and each retry),
    /// before the pick, and sends the check beside the request, not in its place; its answer comes back
    /// through [`check_answered`](Balance::check_answered). A check is not an attempt: it gets no
    /// [`complete`](Balance::complete), and no figure counts it as a request or an attempt.
    fn due_check(&mut self, now: u64) -> Option<ServerId> {
        let _ = now;
        None
    }
    /// The answer of the health check to `server` that [`due_check`](Balance::due_check) named: `healthy`
    /// or not, at `now` (once per check, possibly after the server left the client's list).
    fn check_answered(&mut self, server: ServerId, healthy: bool, now: u64) {
        let _ = (server, healthy, now);
    }
}

/// The retries a policy's client makes: a rule (which replies, how many, the delay, the scenario's
/// throttle budget) and weir's [`RetryBudget`](::weir::overload::RetryBudget), shared by the client's
/// requests, asked before every retry the rule allows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPlan {
    /// The rule; `None`: no retries.
    pub rule: Option<crate::model::Retries>,
    /// weir's retry budget, if any.
    pub budget: Option<::weir::overload::RetryBudgetConfig>,
}
