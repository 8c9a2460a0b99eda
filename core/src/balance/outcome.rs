//! What happened to a call, as the balancer learns it.

use core::fmt;

/// The result of one call to a node, reported with [`Balancer::release`](crate::balance::Balancer::release).
///
/// | outcome    | health                      | limiter                        |
/// |------------|-----------------------------|--------------------------------|
/// | `Success`  | +1 finished, +1 succeeded   | RTT sample                     |
/// | `Failure`  | +1 finished                 | ignored                        |
/// | `Dropped`  | +1 finished                 | sample marked dropped (backs off) |
/// | `Ignored`  | untouched                   | ignored                        |
///
/// ```
/// use weir::Outcome;
/// assert_eq!(Outcome::from_http_status(200), Ok(Outcome::Success));
/// assert_eq!(Outcome::from_http_status(503), Ok(Outcome::Dropped));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Outcome {
    /// The node answered as it should.
    Success = 0,
    /// A real error of the node: a 5xx, connection refused or reset.
    Failure = 1,
    /// Timeout or overload: 429, 503, 504, a deadline hit. Counts against health and makes loss-based
    /// limiters back off.
    Dropped = 2,
    /// Not the node's fault (most 4xx, a cancelled call): recorded nowhere but the outcome counters.
    Ignored = 3,
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
    /// All four outcomes, in the order of their numeric codes.
    pub const ALL: [Outcome; 4] = [
        Outcome::Success,
        Outcome::Failure,
        Outcome::Dropped,
        Outcome::Ignored,
    ];

    /// Maps an HTTP response status to an outcome:
    ///
    /// | status                     | outcome   | why |
    /// |----------------------------|-----------|-----|
    /// | 100–399                    | `Success` | the node answered |
    /// | 429, 503, 504              | `Dropped` | overload or timeout: back off |
    /// | other 400–499              | `Ignored` | the caller's fault, not the node's |
    /// | other 500–599              | `Failure` | a real error of the node |
    ///
    /// ```
    /// use weir::{balance::InvalidStatus, Outcome};
    /// assert_eq!(Outcome::from_http_status(404), Ok(Outcome::Ignored));
    /// assert_eq!(Outcome::from_http_status(429), Ok(Outcome::Dropped));
    /// assert_eq!(Outcome::from_http_status(502), Ok(Outcome::Failure));
    /// assert_eq!(Outcome::from_http_status(99), Err(InvalidStatus(99)));
    /// ```
    pub const fn from_http_status(status: u16) -> Result<Outcome, InvalidStatus> {
        match status {
            100..=399 => Ok(Outcome::Success),
            429 | 503 | 504 => Ok(Outcome::Dropped),
            400..=499 => Ok(Outcome::Ignored),
            500..=599 => Ok(Outcome::Failure),
            _ => Err(InvalidStatus(status)),
        }
    }

    /// The outcome with this numeric code (`Outcome::X as u8`), for bindings and trace files.
    ///
    /// ```
    /// assert_eq!(weir::Outcome::from_code(2), Some(weir::Outcome::Dropped));
    /// assert_eq!(weir::Outcome::from_code(4), None);
    /// ```
    pub const fn from_code(code: u8) -> Option<Outcome> {
        match code {
            0 => Some(Outcome::Success),
            1 => Some(Outcome::Failure),
            2 => Some(Outcome::Dropped),
            3 => Some(Outcome::Ignored),
            _ => None,
        }
    }

    /// Whether this outcome updates the node's health.
    pub const fn counts_for_health(self) -> bool {
        !matches!(self, Outcome::Ignored)
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
                429 | 503 | 504 => Ok(Outcome::Dropped),
                400..=428 | 430..=499 => Ok(Outcome::Ignored),
                500..=502 | 505..=599 => Ok(Outcome::Failure),
                _ => Err(InvalidStatus(s)),
            };
            assert_eq!(got, want, "status {s}");
        }
    }

    #[test]
    fn codes_round_trip() {
        for o in Outcome::ALL {
            assert_eq!(Outcome::from_code(o as u8), Some(o));
        }
        assert_eq!(Outcome::from_code(200), None);
    }
}
