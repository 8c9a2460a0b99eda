//! dialogue's `CautiousIncreaseAggressiveDecreaseConcurrencyLimiter` and the three ways it reads a reply
//! (`Behavior.HOST_LEVEL`, `ENDPOINT_LEVEL`, `STICKY`).

use super::Outcome;

/// The limit a fresh limiter starts with.
const INITIAL_LIMIT: f64 = 20.0;
/// The limit never goes below one request.
const MIN_LIMIT: f64 = 1.0;
/// Nor above a million.
const MAX_LIMIT: f64 = 1_000_000.0;
/// A drop multiplies the limit by this (then floors it); a success grows the limit only when the attempt was
/// admitted with at least this fraction of the limit in flight.
const BACKOFF_RATIO: f64 = 0.9;

/// Where a limiter sits, which decides what each reply does to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Per host, above the endpoint queues: 503, 308 and 501–599 drop (the host is in trouble), 429 and 500
    /// are ignored (one endpoint is busy, one request failed), an `IOException` (reset, timeout) drops, any
    /// other exception is ignored, everything else succeeds.
    Host,
    /// Per host and endpoint, below the endpoint's queue: 429 and 500 drop, 501–599 and every exception are
    /// ignored, everything else succeeds.
    Endpoint,
    /// Per sticky session: every response succeeds, every exception is ignored.
    Sticky,
}

/// What a limiter does with one released permit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The limit may grow.
    Success,
    /// The limit shrinks.
    Dropped,
    /// The limit stays.
    Ignore,
}

impl Level {
    /// How a limiter at this level reads `outcome`.
    pub fn verdict(self, outcome: Outcome) -> Verdict {
        match (self, outcome) {
            (Level::Host, Outcome::Response(429 | 500)) => Verdict::Ignore,
            (Level::Host, Outcome::Response(308 | 503 | 500..=599)) => Verdict::Dropped,
            (Level::Host, Outcome::Io { .. }) => Verdict::Dropped,
            (Level::Endpoint, Outcome::Response(429 | 500)) => Verdict::Dropped,
            (Level::Endpoint, Outcome::Response(500..=599)) => Verdict::Ignore,
            (_, Outcome::Response(_)) => Verdict::Success,
            (_, Outcome::Io { .. } | Outcome::Failed) => Verdict::Ignore,
        }
    }
}

/// dialogue's CIAD limiter ("cautious increase, aggressive decrease";
/// [`CautiousIncreaseAggressiveDecreaseConcurrencyLimiter`][source]).
///
/// Admits an attempt while fewer than `floor(limit)` are in flight, so a limit of 4.1 never lets a fifth one
/// through, and an idle limiter always admits one (the limit never drops below 1). A success raises the
/// limit by `1/limit`, but only when the attempt was admitted with at least `floor(0.9·limit)` in flight
/// (including itself): the limit grows only while the client actually uses it, and linearly in the number
/// of such successes rather than exponentially. A drop cuts it to `max(1, floor(0.9·limit))`; flooring makes
/// cuts near 1 real cuts instead of no-ops. An acquire that bypasses the limit (dialogue's
/// `DANGEROUS_BYPASS_LIMITS`, used by a sticky session's only request) is always admitted and counted.
///
/// [source]: https://github.com/palantir/dialogue/blob/381f98f7015a5fb3582f46b396002c9779739b0a/dialogue-core/src/main/java/com/palantir/dialogue/core/CautiousIncreaseAggressiveDecreaseConcurrencyLimiter.java
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ciad {
    level: Level,
    limit: f64,
    in_flight: u32,
}

impl Ciad {
    /// A fresh limiter at `level`: limit 20, nothing in flight.
    pub fn new(level: Level) -> Self {
        Ciad {
            level,
            limit: INITIAL_LIMIT,
            in_flight: 0,
        }
    }

    /// The current limit.
    pub fn limit(&self) -> f64 {
        self.limit
    }

    /// Permits handed out and not yet released.
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// A permit if there is room for a whole request (or always, with `enforce` off); returns the in-flight
    /// count including it, the permit's snapshot to hand back to [`release`](Self::release).
    pub fn acquire(&mut self, enforce: bool) -> Option<u32> {
        // `limit` is in [1, 1e6], so the cast is exact and at least 1.
        if enforce && self.in_flight >= self.limit as u32 {
            return None;
        }
        self.in_flight += 1;
        Some(self.in_flight)
    }

    /// Releases a permit whose snapshot was `snapshot`, as this limiter's level reads `outcome`.
    pub fn release(&mut self, snapshot: u32, outcome: Outcome) {
        self.release_as(snapshot, self.level.verdict(outcome));
    }

    /// Releases a permit with an explicit verdict (a sticky session drops its permit when the channel below
    /// refuses the request).
    pub fn release_as(&mut self, snapshot: u32, verdict: Verdict) {
        self.in_flight = self.in_flight.saturating_sub(1);
        match verdict {
            Verdict::Success => {
                if f64::from(snapshot) >= (self.limit * BACKOFF_RATIO).floor() {
                    self.limit = (self.limit + 1.0 / self.limit).min(MAX_LIMIT);
                }
            }
            Verdict::Dropped => self.limit = (self.limit * BACKOFF_RATIO).floor().max(MIN_LIMIT),
            Verdict::Ignore => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IO: Outcome = Outcome::Io { timeout: false };

    #[test]
    fn each_level_reads_replies_as_dialogue_does() {
        use Verdict::*;
        let r = Outcome::Response;
        let cases = [
            // (outcome, host, endpoint, sticky)
            (r(200), Success, Success, Success),
            (r(204), Success, Success, Success),
            (r(301), Success, Success, Success),
            (r(308), Dropped, Success, Success),
            (r(400), Success, Success, Success),
            (r(429), Ignore, Dropped, Success),
            (r(500), Ignore, Dropped, Success),
            (r(501), Dropped, Ignore, Success),
            (r(503), Dropped, Ignore, Success),
            (r(599), Dropped, Ignore, Success),
            (IO, Dropped, Ignore, Ignore),
            (Outcome::Io { timeout: true }, Dropped, Ignore, Ignore),
            (Outcome::Failed, Ignore, Ignore, Ignore),
        ];
        for (outcome, host, endpoint, sticky) in cases {
            assert_eq!(Level::Host.verdict(outcome), host, "{outcome:?}");
            assert_eq!(Level::Endpoint.verdict(outcome), endpoint, "{outcome:?}");
            assert_eq!(Level::Sticky.verdict(outcome), sticky, "{outcome:?}");
        }
    }

    #[test]
    fn admits_while_below_the_floor_of_the_limit() {
        let mut l = Ciad::new(Level::Host);
        for i in 1..=20 {
            assert_eq!(l.acquire(true), Some(i));
        }
        assert_eq!(l.acquire(true), None);
        // Bypassing admits past the limit and counts.
        assert_eq!(l.acquire(false), Some(21));
        l.release(21, Outcome::Response(429));
        l.release(20, Outcome::Response(429));
        assert_eq!(l.acquire(true), Some(20));
    }

    #[test]
    fn drops_cut_to_the_floor_of_nine_tenths_down_to_one() {
        let mut l = Ciad::new(Level::Endpoint);
        let mut seen = Vec::new();
        for _ in 0..16 {
            let s = l.acquire(true).unwrap();
            l.release(s, Outcome::Response(500));
            seen.push(l.limit());
        }
        assert_eq!(
            seen,
            [18.0, 16.0, 14.0, 12.0, 10.0, 9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 1.0, 1.0]
        );
        // At limit 1 an idle limiter still admits one attempt, and only one.
        assert_eq!(l.acquire(true), Some(1));
        assert_eq!(l.acquire(true), None);
    }

    #[test]
    fn successes_grow_by_one_over_limit_only_near_the_limit() {
        let mut l = Ciad::new(Level::Host);
        // Admitted alone: 1 < floor(0.9·20) = 18, no growth.
        let s = l.acquire(true).unwrap();
        l.release(s, Outcome::Response(200));
        assert_eq!(l.limit(), 20.0);
        // Admitted as the 18th: grows by 1/20.
        let permits: Vec<u32> = (0..18).map(|_| l.acquire(true).unwrap()).collect();
        assert_eq!(permits[17], 18);
        l.release(18, Outcome::Response(200));
        assert_eq!(l.limit(), 20.05);
        // The 17th does not (17 < 18), and a host-level 429 or 500 changes nothing.
        l.release(17, Outcome::Response(200));
        l.release(16, Outcome::Response(500));
        assert_eq!(l.limit(), 20.05);
        assert_eq!(l.in_flight(), 15);
        // The next growth is 1/20.05: linear in successes, not exponential.
        l.release(19, Outcome::Response(200));
        assert!((l.limit() - (20.05 + 1.0 / 20.05)).abs() < 1e-12);
        // Releasing more than was admitted does not underflow.
        for _ in 0..20 {
            l.release_as(1, Verdict::Ignore);
        }
        assert_eq!(l.in_flight(), 0);
    }
}
