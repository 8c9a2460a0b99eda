//! dialogue's host-level concurrency limiter, shared by [`Balanced`](super::Balanced) and
//! [`PinUntilError`](super::PinUntilError).

use crate::policy::Reply;

/// The limit a fresh host starts with.
const INITIAL_LIMIT: f64 = 20.0;
/// The limit never goes below one request.
const MIN_LIMIT: f64 = 1.0;
/// Nor above a million.
const MAX_LIMIT: f64 = 1_000_000.0;
/// A drop multiplies the limit by this (then floors it); a success grows the limit only when the attempt was
/// admitted with at least this fraction of the limit in flight.
const BACKOFF_RATIO: f64 = 0.9;

/// What a host-level limiter makes of one reply (dialogue's `Behavior.HOST_LEVEL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostVerdict {
    /// The host handled it: the limit may grow.
    Success,
    /// The host is in trouble: the limit shrinks.
    Dropped,
    /// Says nothing about the host (429 is about one endpoint, 500 about one request): the limit stays.
    Ignore,
}

impl HostVerdict {
    /// Classifies a reply: 503, 308 and 501–599 drop, as do connection errors and timeouts (dialogue sees an
    /// `IOException`); 429 and 500 are ignored; everything else (2xx, other 3xx, 4xx) is a success.
    pub fn of(reply: Reply) -> Self {
        match reply {
            Reply::Status(429 | 500) => HostVerdict::Ignore,
            Reply::Status(308 | 501..=599) => HostVerdict::Dropped,
            Reply::Status(_) => HostVerdict::Success,
            Reply::Refused | Reply::Timeout => HostVerdict::Dropped,
        }
    }
}

/// dialogue's `CautiousIncreaseAggressiveDecreaseConcurrencyLimiter` in its host-level form
/// (shared/reference/load-balancers.md §1.3).
///
/// Admits an attempt while fewer than `floor(limit)` are in flight, so a limit of 4.1 never lets a fifth one
/// through, and an idle host always admits one (the limit never drops below 1). A success raises the limit by
/// `1/limit`, but only when the attempt was admitted with at least `floor(0.9·limit)` in flight (including
/// itself): the limit grows only while the client actually uses it, and linearly in the number of such
/// successes rather than exponentially. A drop cuts it to `max(1, floor(0.9·limit))`; flooring makes cuts near 1
/// real cuts instead of no-ops.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aimd {
    limit: f64,
    in_flight: u32,
}

impl Default for Aimd {
    fn default() -> Self {
        Aimd::new()
    }
}

impl Aimd {
    /// A fresh limiter: limit 20, nothing in flight.
    pub fn new() -> Self {
        Aimd {
            limit: INITIAL_LIMIT,
            in_flight: 0,
        }
    }

    /// The current limit.
    pub fn limit(&self) -> f64 {
        self.limit
    }

    /// Attempts admitted and not yet released.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Admits one more attempt if there is room for a whole one; returns the in-flight count including it
    /// (pass it back to [`release`](Self::release)).
    pub fn try_acquire(&mut self) -> Option<u32> {
        // `limit` is in [1, 1e6], so the cast is exact and at least 1.
        if self.in_flight >= self.limit as u32 {
            return None;
        }
        self.in_flight += 1;
        Some(self.in_flight)
    }

    /// The end of an attempt admitted with `in_flight_at_acquire`, as the host's reply classifies it.
    pub fn release(&mut self, in_flight_at_acquire: u32, verdict: HostVerdict) {
        self.in_flight = self.in_flight.saturating_sub(1);
        match verdict {
            HostVerdict::Success => {
                if f64::from(in_flight_at_acquire) >= (self.limit * BACKOFF_RATIO).floor() {
                    self.limit = (self.limit + 1.0 / self.limit).min(MAX_LIMIT);
                }
            }
            HostVerdict::Dropped => {
                self.limit = (self.limit * BACKOFF_RATIO).floor().max(MIN_LIMIT)
            }
            HostVerdict::Ignore => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_is_host_level() {
        use HostVerdict::*;
        let cases = [
            (Reply::Status(200), Success),
            (Reply::Status(204), Success),
            (Reply::Status(301), Success),
            (Reply::Status(308), Dropped),
            (Reply::Status(400), Success),
            (Reply::Status(429), Ignore),
            (Reply::Status(500), Ignore),
            (Reply::Status(501), Dropped),
            (Reply::Status(503), Dropped),
            (Reply::Status(599), Dropped),
            (Reply::Refused, Dropped),
            (Reply::Timeout, Dropped),
        ];
        for (reply, verdict) in cases {
            assert_eq!(HostVerdict::of(reply), verdict, "{reply:?}");
        }
    }

    #[test]
    fn admits_while_below_the_floor_of_the_limit() {
        let mut l = Aimd::new();
        for i in 1..=20 {
            assert_eq!(l.try_acquire(), Some(i));
        }
        assert_eq!(l.try_acquire(), None);
        assert_eq!(l.in_flight(), 20);
        l.release(20, HostVerdict::Ignore);
        assert_eq!(l.try_acquire(), Some(20));
    }

    #[test]
    fn drops_cut_to_the_floor_of_nine_tenths_down_to_one() {
        let mut l = Aimd::new();
        let mut seen = Vec::new();
        for _ in 0..30 {
            let s = l.try_acquire().unwrap();
            l.release(s, HostVerdict::Dropped);
            seen.push(l.limit());
        }
        assert_eq!(
            seen[..12],
            [18.0, 16.0, 14.0, 12.0, 10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0]
        );
        assert_eq!(
            seen[12..],
            [
                2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0,
                1.0, 1.0
            ]
        );
        // At limit 1 an idle host still admits one attempt, and only one.
        assert_eq!(l.try_acquire(), Some(1));
        assert_eq!(l.try_acquire(), None);
    }

    #[test]
    fn successes_grow_by_one_over_limit_only_near_the_limit() {
        let mut l = Aimd::new();
        // Admitted alone: 1 < floor(0.9·20) = 18, no growth.
        let s = l.try_acquire().unwrap();
        l.release(s, HostVerdict::Success);
        assert_eq!(l.limit(), 20.0);
        // Admitted as the 18th: grows by 1/20.
        let permits: Vec<u32> = (0..18).map(|_| l.try_acquire().unwrap()).collect();
        assert_eq!(permits[17], 18);
        l.release(18, HostVerdict::Success);
        assert_eq!(l.limit(), 20.05);
        // The 17th does not (17 < 18), and 429/500 change nothing.
        l.release(17, HostVerdict::Success);
        l.release(16, HostVerdict::Ignore);
        assert_eq!(l.limit(), 20.05);
        assert_eq!(l.in_flight(), 15);
        // The next growth is 1/20.05: linear in successes, not exponential.
        l.release(19, HostVerdict::Success);
        assert!((l.limit() - (20.05 + 1.0 / 20.05)).abs() < 1e-12);
        // Releasing more than was admitted does not underflow.
        for _ in 0..20 {
            l.release(1, HostVerdict::Ignore);
        }
        assert_eq!(l.in_flight(), 0);
    }
}
