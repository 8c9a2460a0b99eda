//! The process's monotonic clock, in the nanoseconds the core takes.

use std::sync::OnceLock;
use std::time::Instant;

/// Monotonic nanoseconds since the first call in this process: the `now` every core call takes.
///
/// ```
/// let a = weir::rt::monotonic_now();
/// let b = weir::rt::monotonic_now();
/// assert!(b >= a);
/// ```
pub fn monotonic_now() -> u64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let origin = *ORIGIN.get_or_init(Instant::now);
    u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
}
