//! A server's own report of its load, sent with an answer.

use core::fmt;

/// How loaded a server says it is, read from its answer: its *utilization*, the calls it has in progress
/// over the most it serves well (its knee), so 1 is at the knee and above 1 past it. Kept in thousandths
/// (`1000` is 1.0), from 0 to [`ServerLoad::MAX_PERMILLE`].
///
/// Servers send it as gRPC's ORCA load reports do (`application_utilization` or `cpu_utilization` in
/// the `endpoint-load-metrics` trailer), or as a header of their own. Every client of a server reads the
/// same report, so a client that joins a loaded fleet learns where the server's knee is from its first
/// answer, where its latency alone would teach it a no-load RTT that is already loaded. Released with
/// [`Balancer::release_loaded`](crate::Balancer::release_loaded); the [`KneeLimit`](super::KneeLimit)
/// reads it in place of the latency, every other limiter ignores it.
///
/// ```
/// use weir::limit::{InvalidLoad, ServerLoad};
/// assert_eq!(ServerLoad::from_utilization(0.875).map(ServerLoad::permille), Ok(875));
/// assert_eq!(ServerLoad::from_permille(1_200).map(ServerLoad::utilization), Ok(1.2));
/// assert_eq!(ServerLoad::from_utilization(f64::NAN), Err(InvalidLoad::NotFinite));
/// assert_eq!(ServerLoad::from_utilization(-0.5), Err(InvalidLoad::Negative));
/// assert_eq!(ServerLoad::from_utilization(5_000.0), Err(InvalidLoad::TooHigh));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerLoad(u32);

/// Why a reported load was refused (nothing is recorded with it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InvalidLoad {
    /// NaN or infinite.
    NotFinite,
    /// Below 0.
    Negative,
    /// Above [`ServerLoad::MAX_UTILIZATION`].
    TooHigh,
}

impl fmt::Display for InvalidLoad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InvalidLoad::NotFinite => "a server load must be a finite number",
            InvalidLoad::Negative => "a server load must not be negative",
            InvalidLoad::TooHigh => "a server load must be at most 1000 (a utilization of 1000x)",
        })
    }
}

#[cfg(feature = "std")]
impl std::error::Error for InvalidLoad {}

impl ServerLoad {
    /// The highest utilization a report may give: 1,000 times the knee, far beyond any server that
    /// still answers.
    pub const MAX_UTILIZATION: f64 = 1_000.0;
    /// [`MAX_UTILIZATION`](Self::MAX_UTILIZATION) in thousandths.
    pub const MAX_PERMILLE: u32 = 1_000_000;
    /// A server at its knee (utilization 1).
    pub const AT_KNEE: ServerLoad = ServerLoad(1_000);

    /// A utilization in thousandths (`1000` is at the knee).
    pub const fn from_permille(permille: u32) -> Result<ServerLoad, InvalidLoad> {
        if permille > Self::MAX_PERMILLE {
            Err(InvalidLoad::TooHigh)
        } else {
            Ok(ServerLoad(permille))
        }
    }

    /// A utilization as a fraction (`1.0` is at the knee), rounded to the nearest thousandth.
    pub fn from_utilization(utilization: f64) -> Result<ServerLoad, InvalidLoad> {
        if !utilization.is_finite() {
            Err(InvalidLoad::NotFinite)
        } else if utilization < 0.0 {
            Err(InvalidLoad::Negative)
        } else if utilization > Self::MAX_UTILIZATION {
            Err(InvalidLoad::TooHigh)
        } else {
            // In [0, 1e6 + 0.5]: the cast cannot saturate.
            Ok(ServerLoad((utilization * 1_000.0 + 0.5) as u32))
        }
    }

    /// The utilization in thousandths.
    pub const fn permille(self) -> u32 {
        self.0
    }

    /// The utilization as a fraction.
    pub fn utilization(self) -> f64 {
        f64::from(self.0) / 1_000.0
    }
}
