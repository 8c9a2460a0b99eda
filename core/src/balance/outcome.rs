//! What happened to a call, as the balancer learns it.

use core::fmt;

/// The result of one call to a node, reported with [`Balancer::release`](crate::balance::Balancer::release).
///
/// What each outcome does depends on the algorithm family (see [`Algorithm`](crate::balance::Algorithm)
/// for the health side):
///
/// | outcome       | `LowestScore` (the default) | `Weighted` (the cascade) | limiter, `LowestScore` | limiter, `Weighted` |
/// |---------------|---------------------------|-------------------------------|------------------------|------------------------|
/// | `Success`     | successes + 1             | +1 finished, +1 succeeded     | success sample (RTT)   | success sample (RTT)   |
/// | `Failure`     | failures + 1              | +1 finished                   | drop (backs off)¹      | ignored                |
/// | `Dropped`     | failures + 1              | +1 finished                   | drop (backs off)       | drop (backs off)       |
/// | `Throttled`   | failures + 0.1            | +1 finished (as `Dropped`)    | ignored                | drop (as `Dropped`)    |
/// | `ClientError` | failures + 0.01           | untouched (as `Ignored`)      | success sample (RTT)   | ignored (as `Ignored`) |
/// | `Ignored`     | untouched                 | untouched                     | ignored                | ignored                |
///
/// ¹ marked [`failed`](crate::limit::Sample::failed): the knee limit cuts from its limit, as CIAD does,
/// not to what was in flight, since an error is no measure of the node's capacity.
///
/// In the weighted family `Throttled` is exactly `Dropped` and `ClientError` exactly `Ignored`, so
/// [`Config::cascade()`](crate::Config::cascade) decides as the original cascade does whichever one a
/// caller reports.
///
/// ```
/// use weir::Outcome;
/// assert_eq!(Outcome::from_http_status(200), Ok(Outcome::Success));
/// assert_eq!(Outcome::from_http_status(503), Ok(Outcome::Dropped));
/// assert_eq!(Outcome::from_http_status(429), Ok(Outcome::Throttled));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Outcome {
    /// The node answered as it should.
    Success = 0,
    /// A real error of the node: a 5xx, connection refused or reset.
    Failure = 1,
    /// Timeout or overload: 503, 504, a deadline hit. Makes the limiter back off; the default model counts
    /// it as a tenth of a failure (a busy node, not a broken one: `LowestScore::dropped_cost`).
    Dropped = 2,
    /// Not the node's fault and not the caller's to report (a cancelled call): recorded nowhere but the
    /// outcome counters.
    Ignored = 3,
    /// The node is busy and said so: a 429. Not a broken node, so the default model counts it as a tenth
    /// of a failure and its limiter does not back off on it; the weighted family reads it as `Dropped`.
    Throttled = 4,
    /// The node refused the request as the caller's fault: another 4xx. A node that answers 4xx to
    /// everything is broken, so the default model counts it as a hundredth of a failure; the weighted
    /// family reads it as `Ignored`.
    ClientError = 5,
}

/// An HTTP status outside 100..=599.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InvalidStatus(pub u16);

impl fmt::Display for InvalidStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not an HTTP status code (100..=599)", self.0)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for InvalidStatus {}

impl Outcome {
    /// Every outcome, in the order of their numeric codes.
    pub const ALL: [Outcome; 6] = [
        Outcome::Success,
        Outcome::Failure,
        Outcome::Dropped,
        Outcome::Ignored,
        Outcome::Throttled,
        Outcome::ClientError,
    ];

    /// The outcome of a call that timed out (a deadline passed, a read or connect timeout):
    /// [`Outcome::Dropped`], which counts against the node and makes the limiter back off. What
    /// `rt::LeaseGuard::within` (feature `std`) records when its timer wins; without `std`, what a
    /// caller with its own timer reports when the timer wins.
    ///
    /// ```
    /// assert_eq!(weir::Outcome::TIMEOUT, weir::Outcome::Dropped);
    /// ```
    pub const TIMEOUT: Outcome = Outcome::Dropped;

    /// The outcome of a call the caller cancelled (it stopped waiting for the answer, for its own
    /// reasons): [`Outcome::Ignored`], nothing learnt about the node. What a dropped guard of
    /// `rt` (feature `std`) records before its deadline.
    ///
    /// ```
    /// assert_eq!(weir::Outcome::CANCELLED, weir::Outcome::Ignored);
    /// ```
    pub const CANCELLED: Outcome = Outcome::Ignored;

    /// Maps an HTTP response status to an outcome:
    ///
    /// | status                     | outcome   | why |
    /// |----------------------------|-----------|-----|
    /// | 100–399                    | `Success`     | the node answered |
    /// | 429                        | `Throttled`   | the node is busy: try another |
    /// | 503, 504                   | `Dropped`     | overload or timeout: back off |
    /// | other 400–499              | `ClientError` | the caller's fault, or a broken node |
    /// | other 500–599              | `Failure`     | a real error of the node |
    ///
    /// Under [`Config::cascade()`](crate::Config::cascade) this is the original cascade's table: 429 acts
    /// as `Dropped`, another 4xx as `Ignored`.
    ///
    /// ```
    /// use weir::{balance::InvalidStatus, Outcome};
    /// assert_eq!(Outcome::from_http_status(404), Ok(Outcome::ClientError));
    /// assert_eq!(Outcome::from_http_status(429), Ok(Outcome::Throttled));
    /// assert_eq!(Outcome::from_http_status(502), Ok(Outcome::Failure));
    /// assert_eq!(Outcome::from_http_status(99), Err(InvalidStatus(99)));
    /// ```
    pub const fn from_http_status(status: u16) -> Result<Outcome, InvalidStatus> {
        match status {
            100..=399 => Ok(Outcome::Success),
            429 => Ok(Outcome::Throttled),
            503 | 504 => Ok(Outcome::Dropped),
            400..=499 => Ok(Outcome::ClientError),
            500..=599 => Ok(Outcome::Failure),
            _ => Err(InvalidStatus(status)),
        }
    }

    /// Whether a call that ended with this outcome may be tried again, on another node: `Failure` (an
    /// error of the node: a 5xx, a refused or reset connection), `Dropped` (a timeout, 503, 504) and
    /// `Throttled` (a 429: busy, try another). Never `Success`, `ClientError` (the request's own fault:
    /// it would fail anywhere) or `Ignored` (the caller gave up). Whether a retry is *safe* (an
    /// idempotent request) and *affordable* (a retry budget such as
    /// [`RetryBudget`](crate::overload::RetryBudget)) is the caller's to decide; this is the one
    /// definition the integrations share (C `weir_outcome_is_retryable`, Python `Outcome.is_retryable`).
    ///
    /// ```
    /// use weir::Outcome;
    /// let retryable: Vec<Outcome> = Outcome::ALL.into_iter().filter(|o| o.is_retryable()).collect();
    /// assert_eq!(retryable, [Outcome::Failure, Outcome::Dropped, Outcome::Throttled]);
    /// ```
    pub const fn is_retryable(self) -> bool {
        matches!(
            self,
            Outcome::Failure | Outcome::Dropped | Outcome::Throttled
        )
    }

    /// The outcome with this numeric code (`Outcome::X as u8`), for bindings and trace files.
    ///
    /// ```
    /// assert_eq!(weir::Outcome::from_code(2), Some(weir::Outcome::Dropped));
    /// assert_eq!(weir::Outcome::from_code(5), Some(weir::Outcome::ClientError));
    /// assert_eq!(weir::Outcome::from_code(6), None);
    /// ```
    pub const fn from_code(code: u8) -> Option<Outcome> {
        match code {
            0 => Some(Outcome::Success),
            1 => Some(Outcome::Failure),
            2 => Some(Outcome::Dropped),
            3 => Some(Outcome::Ignored),
            4 => Some(Outcome::Throttled),
            5 => Some(Outcome::ClientError),
            _ => None,
        }
    }

    /// The outcome as the original cascade reads it (the weighted family): `Throttled` is `Dropped`,
    /// `ClientError` is `Ignored`, the others are themselves.
    ///
    /// ```
    /// use weir::Outcome;
    /// assert_eq!(Outcome::Throttled.as_cascade(), Outcome::Dropped);
    /// assert_eq!(Outcome::ClientError.as_cascade(), Outcome::Ignored);
    /// assert_eq!(Outcome::Failure.as_cascade(), Outcome::Failure);
    /// ```
    pub const fn as_cascade(self) -> Outcome {
        match self {
            Outcome::Throttled => Outcome::Dropped,
            Outcome::ClientError => Outcome::Ignored,
            o => o,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_table_is_exact() {
        for s in 0u16..=1000 {
            let got = Outcome::from_http_status(s);
            let want = match s {
                100..=399 => Ok(Outcome::Success),
                429 => Ok(Outcome::Throttled),
                503 | 504 => Ok(Outcome::Dropped),
                400..=428 | 430..=499 => Ok(Outcome::ClientError),
                500..=502 | 505..=599 => Ok(Outcome::Failure),
                _ => Err(InvalidStatus(s)),
            };
            assert_eq!(got, want, "status {s}");
        }
    }

    #[test]
    fn timeout_and_cancelled_name_their_outcomes_without_std() {
        assert_eq!(Outcome::TIMEOUT as u8, 2);
        assert_eq!(Outcome::CANCELLED as u8, 3);
        assert_eq!(
            Outcome::from_code(Outcome::TIMEOUT as u8),
            Some(Outcome::Dropped)
        );
        assert_eq!(
            Outcome::from_code(Outcome::CANCELLED as u8),
            Some(Outcome::Ignored)
        );
    }

    #[test]
    fn codes_round_trip() {
        for o in Outcome::ALL {
            assert_eq!(Outcome::from_code(o as u8), Some(o));
        }
        assert_eq!(Outcome::from_code(200), None);
    }
}
