//! The service's error: why weir refused a call ([`Refused`]), or what failed beneath it; and why a
//! health check's answer was refused ([`CheckError`]).

use std::fmt;
use tower::BoxError;
use weir::balance::{ConfigError, MembershipError, Rejected};
use weir::rt::WaitError;

/// Why weir granted no lease for a request: its call fails with [`Error::Refused`] and sends nothing
/// (`poll_ready` is ready all the same, so the balance stays usable: see [`Balance`](crate::Balance)).
/// Each is a decision, not a fault: answer your own caller (a 503, a `RESOURCE_EXHAUSTED`), or retry
/// later.
///
/// ```
/// use weir_tower::Refused;
/// assert_eq!(Refused::Timeout.to_string(), "no node had room before the wait's deadline");
/// // The core's answers to a wait, as the service gives them:
/// use weir::rt::WaitError;
/// assert_eq!(Refused::from(WaitError::Timeout), Refused::Timeout);
/// assert_eq!(Refused::from(WaitError::Shed), Refused::Shed);
/// assert_eq!(
///     Refused::from(WaitError::QueueFull { max_waiters: 4 }),
///     Refused::QueueFull { max_waiters: 4 }
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Refused {
    /// Every node in rotation is at its concurrency limit and waiting is off (a wait of zero).
    AllBusy,
    /// No node had room and the balancer's queue of waiting callers was full
    /// ([`Config::max_waiters`](weir::Config::max_waiters); 0 turns waiting off).
    QueueFull {
        /// The balancer's bound on waiting callers.
        max_waiters: u32,
    },
    /// No node had room before the wait's deadline ([`Builder::wait`](crate::Builder::wait)).
    Timeout,
    /// No node had room, and the core's queue of waiting requests stood: it served newer requests first
    /// once this one had waited more than 100 ms, and answered it then, before the wait's deadline
    /// (`weir::rt::WaitError::Shed`). An overload answer, as [`Refused::AllBusy`] is. Only a queue
    /// shared by several callers sheds: behind one `Buffer`, a balance has one waiting request at most.
    Shed,
    /// No node is in rotation (none discovered, all removed or in lame duck), and none is only
    /// waiting for its service to become ready.
    NoActiveNodes,
    /// No node had room and waiting for one needs a timer, but this thread runs no tokio runtime with its
    /// time driver enabled (`Runtime::new`, `#[tokio::main]`, or a builder with `enable_time`); set the
    /// wait to zero ([`Builder::wait`](crate::Builder::wait)) to fail fast without a runtime.
    NoTimer,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refused::AllBusy => f.write_str("every node is at its concurrency limit"),
            Refused::QueueFull { max_waiters } => write!(
                f,
                "no node has room and the queue of {max_waiters} waiting callers is full"
            ),
            Refused::Timeout => f.write_str("no node had room before the wait's deadline"),
            Refused::Shed => f.write_str(
                "no node had room, and the queue stood and served newer requests first: answered before the wait's deadline",
            ),
            Refused::NoActiveNodes => f.write_str("no node is in rotation"),
            Refused::NoTimer => f.write_str(
                "no node has room, and waiting needs a tokio runtime with its time driver on this thread",
            ),
        }
    }
}

impl std::error::Error for Refused {}

impl From<Rejected> for Refused {
    fn from(r: Rejected) -> Self {
        match r {
            Rejected::NoActiveNodes => Refused::NoActiveNodes,
            // `Rejected` is non-exhaustive: anything else the core adds is a refusal for room.
            _ => Refused::AllBusy,
        }
    }
}

impl From<WaitError> for Refused {
    fn from(e: WaitError) -> Self {
        match e {
            WaitError::QueueFull { max_waiters } => Refused::QueueFull { max_waiters },
            WaitError::NoActiveNodes => Refused::NoActiveNodes,
            WaitError::Shed => Refused::Shed,
            // Timeout, and anything the core adds later: the wait ended without a lease.
            _ => Refused::Timeout,
        }
    }
}

/// Why [`Checks::report`](crate::Checks::report) recorded nothing: the balancer's state is as it was.
///
/// ```
/// use weir_tower::CheckError;
/// assert_eq!(CheckError::UnknownKey.to_string(), "no node has this key");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CheckError {
    /// No member has this key: it never joined, or it left (discovery removed it, or its service
    /// failed), perhaps while its check was under way. The answer is moot: drop it.
    UnknownKey,
    /// The balancer's algorithm is not the lowest-score family's (`Config::cascade()`, the weighted
    /// family), which alone keeps the penalties a check forgives
    /// ([`weir::balance::CheckError::NotLowestScore`]); under it no node is ever due either.
    NotLowestScore,
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::UnknownKey => f.write_str("no node has this key"),
            CheckError::NotLowestScore => {
                f.write_str("health checks are read by the lowest-score family only")
            }
        }
    }
}

impl std::error::Error for CheckError {}

impl From<weir::balance::CheckError> for CheckError {
    fn from(e: weir::balance::CheckError) -> Self {
        match e {
            // The key's node left between the lookup of its id and the report.
            weir::balance::CheckError::UnknownId(_) => CheckError::UnknownKey,
            // NotLowestScore, and anything the core adds later: the core keeps nothing to record.
            _ => CheckError::NotLowestScore,
        }
    }
}

/// The error of [`Balance`](crate::Balance) (its `poll_ready`, for discovery and membership, and its
/// response futures) and of its builder.
///
/// ```
/// use weir_tower::{Error, Refused};
/// let e = Error::Refused(Refused::AllBusy);
/// assert_eq!(e.refused(), Some(Refused::AllBusy));
/// assert_eq!(e.to_string(), "weir refused the call: every node is at its concurrency limit");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// weir granted no lease (from the response future of the call that `poll_ready` admitted: a
    /// refusal is that request's answer, never an error of `poll_ready`). Nothing was sent. Behind a
    /// `tower::buffer::Buffer` the error comes boxed: `e.downcast_ref::<weir_tower::Error>()`.
    Refused(Refused),
    /// The inner service's call failed (from the response future); its lease was released with the
    /// outcome the classifier gave this error.
    Inner(BoxError),
    /// The `Discover` stream failed (from `poll_ready`).
    Discover(BoxError),
    /// A discovered service could not join (from `poll_ready` or the builder): every slot is taken
    /// ([`Builder::capacity`](crate::Builder::capacity)).
    Membership(MembershipError),
    /// The core's configuration or the capacity was refused (from the builder).
    Config(ConfigError),
    /// `call` came without a successful `poll_ready` before it (tower's contract): nothing was sent.
    NotReady,
    /// The request's deadline ([`Builder::deadline`](crate::Builder::deadline)) passed before an answer
    /// came (from the response future): the call in flight was dropped and its lease released as
    /// `Dropped` (`Outcome::TIMEOUT`), a timeout that counts against its node. (When the wait for room
    /// in `poll_ready` took the whole deadline and a lease came only as it passed, nothing was sent and
    /// the lease went back as `Ignored`.)
    DeadlinePassed,
    /// The call has a deadline ([`Builder::deadline`](crate::Builder::deadline)), and timing it needs a
    /// tokio runtime with its time driver on the thread that polls the response future (from the
    /// response future, at its first poll that finds the call unanswered): the call was dropped and its
    /// lease released as `Ignored`.
    NoTimer,
}

impl Error {
    /// The refusal, if weir refused.
    pub fn refused(&self) -> Option<Refused> {
        match self {
            Error::Refused(r) => Some(*r),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Refused(r) => write!(f, "weir refused the call: {r}"),
            Error::Inner(e) => write!(f, "the balanced service failed: {e}"),
            Error::Discover(e) => write!(f, "service discovery failed: {e}"),
            Error::Membership(e) => write!(f, "a discovered service could not join: {e}"),
            Error::Config(e) => write!(f, "invalid balancer configuration: {e}"),
            Error::NotReady => f.write_str("call without a successful poll_ready before it"),
            Error::DeadlinePassed => {
                f.write_str("the call's deadline passed before the balanced service answered")
            }
            Error::NoTimer => f.write_str(
                "the call has a deadline, and timing it needs a tokio runtime with its time driver on this thread",
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Refused(r) => Some(r),
            Error::Inner(e) | Error::Discover(e) => Some(&**e),
            Error::Membership(e) => Some(e),
            Error::Config(e) => Some(e),
            Error::NotReady | Error::DeadlinePassed | Error::NoTimer => None,
        }
    }
}
