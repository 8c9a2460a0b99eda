//! `Duration` to the core's nanoseconds.

use core::time::Duration;

/// `d` in whole nanoseconds, saturating at `u64::MAX` (about 584 years): what the configuration
/// structs' `Duration` setters (`AimdLimit::timeout`, `ShedderConfig::window`, ...) store in their
/// `_ns` fields, which validation then checks as it checks any value written there.
#[inline]
pub(crate) const fn saturating_ns(d: Duration) -> u64 {
    let ns = d.as_nanos();
    if ns > u64::MAX as u128 {
        u64::MAX
    } else {
        ns as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_convert_to_whole_nanoseconds_saturating() {
        assert_eq!(saturating_ns(Duration::ZERO), 0);
        assert_eq!(saturating_ns(Duration::from_nanos(1)), 1);
        assert_eq!(saturating_ns(Duration::new(5, 7)), 5_000_000_007);
        assert_eq!(saturating_ns(Duration::from_nanos(u64::MAX)), u64::MAX);
        assert_eq!(
            saturating_ns(Duration::from_nanos(u64::MAX) + Duration::from_nanos(1)),
            u64::MAX
        );
        assert_eq!(saturating_ns(Duration::MAX), u64::MAX);
    }
}
