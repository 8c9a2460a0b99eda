//! A limit at the server's knee, shared by every client of the server through its latency.
//!
//! Loss-based limits (AIMD, CIAD) let each client of a shared server grow until the server refuses:
//! that is its cliff. A server that is contended (its threads, locks or disks fight each other) loses
//! throughput past its *knee*, long before the cliff: every call holds its slot longer, fewer calls
//! finish per second, and a fleet pushed past the knee by a fault can stay there after the fault
//! ends, since the load that arrives no longer fits in what the slowed server serves. No client sees
//! the other clients' load, but all of them see the same latency. So each client caps its calls to a
//! node by that node's smoothed RTT over its no-load RTT, its *ratio*:
//!
//! - a call slower than [`knee`](KneeLimit::knee) times the no-load RTT (2: it queued as long as it
//!   was served), or a ratio above the knee: the limit falls to what was in flight when the call was
//!   sent, if it was above it, and then by `1 - backoff_ratio` (0.1), on every such call. A window of
//!   `limit` calls past the knee so takes about one multiplicative cut of `backoff_ratio` per round
//!   trip, as TCP's congestion avoidance does per window, without a clock: a cut on each call would
//!   take one per call for as long as the smoothed RTT lags behind (some 16 calls), far below the
//!   knee, and leave the server idle while the limits grow back. Every client of the server eases
//!   together, the server's in-flight falls below its knee, its throughput comes back, and the backlog
//!   drains: the way out of the high state.
//!
//!   The call's own RTT counts, not only the average: one call that slow says the server was past its
//!   knee when it served it, where the smoothed RTT says so some 16 calls later. Meanwhile every client
//!   below `hold` grows by about one call per round trip, so a fleet of clients overshoots together
//!   by far more than the band between `hold` and the knee, and a server whose latency jumps at its
//!   knee (a cliff, as a contended one's does) falls into its high state before any of them cuts. In
//!   the simulator's at-capacity family (`sim/README.md`) reading the call lifted the worst case from
//!   84.6 to 88.9 %, and changed none of the 40 lightly loaded scenarios by more than 0.3 points. A
//!   slow call below the knee does not hold or stop growth: only the average does, so a node whose
//!   latency has a long tail keeps its limit.
//!
//!   The average past the knee eases only while the call itself is past the hold band: a call back
//!   below the band says the server has drained below it, whatever the lagging average still says,
//!   and it holds instead. The cliff's few slow calls lift a client's smoothed RTT past the knee for
//!   some 16 calls after the server has drained, and each of them eased the limit again, which took
//!   a client with few calls in flight far below its share: on `capacity_contended_step` the
//!   servers' calls in progress swung between about 20 and 45 around a knee of 40. Holding there
//!   raised the at-capacity family's worst case without load reports from 90.8 to 92.0 %
//!   (`weir-knee-probation`, that scenario) and moved none of the 40 lightly loaded ones.
//! - a drop (a timeout or an overload answer, as the balancer feeds the limiter one): the limit falls to
//!   `backoff_ratio x min(limit, in flight)` at once, as CIAD's does, so a limit far above what was in
//!   flight falls to what was.
//! - the node's own error (a drop with [`Sample::failed`], the lowest-score family's
//!   [`Outcome::Failure`](crate::balance::Outcome::Failure): a 500, a reset): CIAD's cut,
//!   `floor(backoff_ratio x limit)`, tapered as below. An error says nothing of how many calls the
//!   node can serve, so what was in flight when it came is no measure to cut to: a node that fails
//!   one endpoint of two answers an error every other call, and the overload's cut held its limit
//!   near 1 while the other endpoint's calls waited in the client. In the simulator this brought the knee's client
//!   mean back to the default's where every node fails part of its calls
//!   (`one_endpoint_dies_on_each_server` 6.3 to 4.4 s; `all_nodes_500` 4.1 to 3.0 s, where the
//!   overload's cut had kept calls waiting in the client through the outage, 80.9 % success against
//!   73.7) and moved none of the at-capacity family by more than a point. It arms the knee as a drop
//!   does: a proxy in front of a dead node answers errors, and without the arm its clients' knees
//!   stayed unread (`capacity_proxies_dead_node` 97.9 to 85.0 %). Its cut tapers as growth does
//!   (below): by the room left below the hold band at the node's latency as its last success left
//!   it, whole at the no-load RTT. Where a node's errors are background noise, its limit settles
//!   where its errors' cuts and its successes' growth balance; tapering one and not the other moves
//!   that point, and tapered growth alone left the contended survivors of
//!   `capacity_proxies_dead_node` (2 % errors each, at a ratio near the hold) limits that starved
//!   them (93.4 % against 96.2 before the taper, 97.8 with both).
//! - ratio between [`hold`](KneeLimit::hold) (1.75) and the knee: the limit holds. The band keeps a
//!   server that sits at its knee from cutting and growing on alternate calls.
//! - ratio below `hold`: a success that found the node nearly full (in flight at least
//!   `backoff_ratio x limit`) raises the limit by 1 until the node's first cut (a slow start, doubling per
//!   round trip) and after it by `1 / limit` (about 1 per round trip) times the room left below the
//!   hold band, `(hold - ratio) / (hold - 1)`: the whole step at no load, half of it halfway to `hold`.
//!   The smoothed RTT says what the server held some 16 calls ago, and every client of the server grows
//!   at once: ten clients that each add a call per round trip add ten per round trip to the server,
//!   and the forty or so they add while the average catches up carry a contended server through the
//!   band and past its knee before any of them holds. Tapered, the fleet's growth slows as the band
//!   nears, the way Vegas and Gradient scale theirs by the latency they read. In the simulator this
//!   raised the at-capacity family's worst case without load reports from 88.8 to 90.8 %
//!   (`weir-knee-probation`: `capacity_contended_step` 88.8 to 90.8, `capacity_clients_join` 90.8 to
//!   94.6), with the error's cut tapered alike (above), and moved no lightly loaded scenario by more
//!   than half a point. A server's load report carries no such lag, and below the band a success that
//!   read one grows by the whole step.
//!
//! - armed by a drop: the latency is read as load (the two rules that ease past the knee, and the hold
//!   band) only within [`armed_for_ns`](KneeLimit::armed_for_ns) (60 s) of the node's last drop; outside
//!   it a success grows the limit as one below `hold` does, and only drops cut it, as CIAD's do. A
//!   latency that rises while the node answers every call in time is not always an overload: a
//!   server whose zone moved farther away, or one that queues but still serves all it is sent
//!   (dialogue's contention model, whose calls take five times as long past its capacity but all
//!   complete), serves less, not more, under a limit cut to its knee. A server that is past its knee
//!   for good drops calls, by its own refusals or by its clients' deadlines, and the first drop arms
//!   its clients' knees for the minute after. In the simulator this kept the at-capacity family's
//!   worst case within a point (88.9 to 88.2 % with probation) and lifted `cascading_failure` from
//!   89.9 to 100 % and `cross_az` from 94.2 to 100 % (no drop there: a zone 10 times farther, and
//!   servers that still serve all they are sent at 250 ms); 0 reads the latency always.
//! - a server's own load report, where its answer carries one
//!   ([`Balancer::release_loaded`](crate::Balancer::release_loaded), a [`ServerLoad`](super::ServerLoad)):
//!   read in place of the latency, under the same arm. Its utilization is the server's calls in progress
//!   over what it serves at its knee, so a utilization above 1 eases as a ratio above the knee does and one
//!   above `hold / knee` (0.875) holds. Every client of the server reads the same report, whenever it
//!   joined: a client that starts while the fleet is loaded learns a no-load RTT that is already loaded
//!   (at 70 % of a contended server's capacity, some 1.7 times the true one), and its latency knee lies
//!   past the server's cliff, where the report puts it at the cliff. In the simulator, with servers that
//!   report (as `grpc-wrr` reads them) and with probation, the at-capacity family's worst case rose from
//!   88.5 to 95.3 % (`capacity_clients_join` 88.5 to 98.3), and no lightly loaded scenario's success
//!   moved. Under the arm, as the latency is: a server whose report says it is past its nominal
//!   capacity but that serves every call in time (dialogue's fixed-latency servers, reported against a
//!   pool of 100) is not cut, which cost `black_hole` 1.1 points when the report was read always.
//!
//! The smoothed RTT moves 1/16 of the way to each success's RTT (drops and zero RTTs are not service
//! times and are not read). The no-load RTT (the *baseline*) is the lowest smoothed RTT once it has seen
//! 16 calls, so one lucky call is not the baseline; it drifts up towards a higher smoothed RTT over
//! [`KNEE_BASELINE_DRIFT_NS`] (about 4.6 minutes), slowly enough that an overload of several seconds
//! still reads as one, and fast enough that a node that stays slower (a new deploy, a farther zone) is
//! its own new normal within minutes. CIAD's opt-in [`rtt_tolerance`](super::CiadLimit::rtt_tolerance)
//! reads the same ratio with a baseline that drifts in seconds, and only as a drop: it finds the knee
//! but cannot hold a server below it through a lasting overload.
//!
//! What it cannot see without a load report: a client that starts while its servers are already loaded
//! learns a baseline above the no-load RTT, and its knee lies further out than the other clients'. The
//! clients that were there first still cut, and a drop cuts a newcomer's limit as anyone's.
//!
//! State: word 0 holds the limit in fixed point (`limit x 2^16`, bits 39..0), with bit 63 set after the
//! node's first cut, bit 62 set by a drop and bits 61..40 the drop's tick (2^30 ns), so the limit, the
//! end of the slow start and the arm change together in one compare-and-swap and each sample applies to
//! the limit exactly once. Words 1 and 2 hold the smoothed RTT and the baseline (`rtt.rs`); they change
//! in their own compare-and-swaps, so a sample that interleaves with another may read a ratio one
//! sample older, which moves the moment of a cut by one sample and never takes the limit out of its
//! bounds. Integers throughout (no `f64` per call beyond reading the parameters), for microcontrollers
//! without an FPU.
//!
//! `core/tests/knee.rs` runs independent clients against one contended server: after a 3 s stall at
//! 60 % load the knee limits drain it where CIAD's stay past the knee for good, and through a step to
//! 130 % of what it serves at its knee they keep it serving five sixths of that where CIAD's let it
//! collapse below a third. Its clients wait for every call there, so it reads the latency always
//! (`armed_for_ns` 0); it runs each case again with clients that give up after 1 s, against the
//! default: their timeouts arm the knee, which does as well, while CIAD with the same deadline drains
//! from the stall too (its timeouts cut it) but still collapses through the step.

use super::rtt::{self, Tracker, TICK_SHIFT};
use super::{check_limits, check_tolerance, Limit, LimitState, Sample, MAX_LIMIT};
use crate::error::ConfigError;

/// How long (2^38 ns, about 4.6 minutes) a [`KneeLimit`]'s baseline takes to catch up with a smoothed
/// RTT above it (see the module docs).
pub const KNEE_BASELINE_DRIFT_NS: u64 = TRACKER.drift_ticks << TICK_SHIFT;

const TRACKER: Tracker = Tracker {
    drift_ticks: 1 << 18,
    warmup: rtt::RTT_SMOOTHING,
};

/// Bit 63 of word 0: the node has been cut at least once (its slow start is over).
const CUT: u64 = 1 << 63;
/// Bit 62 of word 0: the node has dropped a call, at the tick in [`ARM_BITS`].
const DROPPED: u64 = 1 << 62;
/// Where word 0 keeps the tick of the node's last drop: 22 bits from bit 40.
const ARM_SHIFT: u32 = 40;
/// The drop tick's bits, shifted down.
const ARM_MASK: u64 = (1 << 22) - 1;
/// The drop tick's bits and the drop flag in word 0.
const ARM_BITS: u64 = DROPPED | (ARM_MASK << ARM_SHIFT);
/// A drop tick is `now_ns >> ARM_TICK` (2^30 ns, about 1.07 s), so the 22 bits wrap after some 52
/// days: a node whose last drop is that old reads as armed again for at most `armed_for_ns`, and only
/// if nothing wrote its limit in between (a write after the arm has passed clears it).
const ARM_TICK: u32 = 30;
/// The longest [`KneeLimit::armed_for_ns`]: 1,000 s.
pub const KNEE_MAX_ARMED_NS: u64 = 1_000_000_000_000;
/// Fractional bits of the fixed-point limit.
const FRAC: u32 = 16;
const ONE: u64 = 1 << FRAC;
/// The limit's bits in word 0.
const LIMIT_MASK: u64 = (1 << 40) - 1;

/// Knee limit parameters (see the module docs). Defaults: initial 20, min 1, max 1,000, ratio 0.9,
/// knee 2, hold 1.75, armed for 60 s after a drop.
///
/// ```
/// use weir::limit::{KneeLimit, Limit, LimitState, Sample};
/// let knee = KneeLimit::default();
/// let state = LimitState::new();
/// knee.reset(&state);
/// let ok = |rtt_ms: u64, inflight: u32| Sample { rtt_ns: rtt_ms * 1_000_000, inflight, dropped: false, now_ns: 0, load: None, failed: false };
/// // Full calls at 10 ms: +1 each (the slow start), the first 16 of them teaching the baseline.
/// let grown: Vec<u32> = (0..20).map(|_| knee.update(&state, &ok(10, knee.limit(&state)), 0)).collect();
/// assert_eq!(grown[19], 40);
/// // The server slows to 60 ms while 12 are in flight, six times its baseline, but it has dropped no
/// // call: its latency is not read as load (a farther zone, a server that still serves all it is
/// // sent), and 12 in flight is too few to grow a limit of 40.
/// assert_eq!(knee.update(&state, &ok(60, 12), 0), 40);
/// // A drop cuts at once, to 0.9 x min(limit, in flight) = 10.8, and arms the knee for 60 s:
/// let drop = Sample { dropped: true, ..ok(60, 12) };
/// assert_eq!(knee.update(&state, &drop, 0), 10);
/// // From then each call past twice the baseline eases the limit to what was in flight less 0.1, the
/// // first from 10.8 to 10 - 0.1 = 9.9, each next by 0.1.
/// let eased: Vec<u32> = (0..11).map(|_| knee.update(&state, &ok(60, 10), 0)).collect();
/// assert_eq!(eased, [9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 8]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KneeLimit {
    /// The limit of a fresh node: `min_limit <= initial_limit <= max_limit`, or
    /// [`validate`](Limit::validate) refuses it with [`ConfigError::LimitRange`].
    pub initial_limit: u32,
    /// The limit never goes below this; at least 1.
    pub min_limit: u32,
    /// The limit never goes above this; at most [`MAX_LIMIT`].
    pub max_limit: u32,
    /// The factor of a drop's cut (and `1 -` it the step down of a call past the knee), and the
    /// fraction of the limit in flight that a success must have seen to raise the limit; in [0.5, 1.0),
    /// or [`ConfigError::BackoffRatio`].
    pub backoff_ratio: f64,
    /// The ratio of smoothed RTT to baseline above which a success brings the limit down; finite and
    /// at least 1, or [`ConfigError::RttTolerance`].
    pub knee: f64,
    /// The ratio at or below which a success may raise the limit (between it and `knee` the limit
    /// holds); finite, at least 1 and at most `knee`, or [`ConfigError::RttTolerance`].
    pub hold: f64,
    /// How long after the node's last drop its latency is read as load (ns; default 60 s; at most
    /// [`KNEE_MAX_ARMED_NS`], or [`ConfigError::WindowTime`]). Outside it a success grows the limit
    /// as one below `hold` does and only drops cut it, as CIAD's do: a latency that rose while the node
    /// still answers every call (a farther zone, a server that queues but still serves all it is sent)
    /// is not an overload. 0 reads the
    /// latency always. Kept to about a second (ticks of 2^30 ns).
    pub armed_for_ns: u64,
}

impl Default for KneeLimit {
    fn default() -> Self {
        KneeLimit {
            initial_limit: 20,
            min_limit: 1,
            max_limit: 1_000,
            backoff_ratio: 0.9,
            knee: 2.0,
            hold: 1.75,
            armed_for_ns: 60_000_000_000,
        }
    }
}

/// What one sample does to the limit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Step {
    /// A drop: a multiplicative cut from what was in flight.
    Drop,
    /// The node's own error: CIAD's cut, from the limit, scaled by `n / 256`.
    Error(u64),
    /// Past the knee: a step down of `1 - backoff_ratio`.
    Ease,
    Hold,
    /// A growth, scaled by `n / 256`.
    Grow(u64),
}

impl KneeLimit {
    /// The step `sample` calls for; feeds its RTT to the tracker when it is a success's.
    #[inline]
    fn step(&self, state: &LimitState, sample: &Sample) -> Step {
        if sample.dropped {
            return if sample.failed {
                Step::Error(self.room(rtt::current(state)))
            } else {
                Step::Drop
            };
        }
        if sample.rtt_ns == 0 {
            return Step::Grow(256);
        }
        let reading = TRACKER.observe(state, sample);
        if let Some(load) = sample.load {
            // The server's own report, in place of the latency: utilization 1 is the knee, so a
            // utilization `u` reads as a ratio of `u x knee` (the hold band from `hold / knee`).
            let p = u64::from(load.permille());
            return if p > 1_000 {
                Step::Ease
            } else if p * rtt::fixed_ratio(self.knee) > 1_000 * rtt::fixed_ratio(self.hold) {
                Step::Hold
            } else {
                Step::Grow(256)
            };
        }
        // The call itself past the knee, or the average past it while the call is past the hold band
        // (see the module docs).
        if reading.rtt_above(sample.rtt_ns, self.knee)
            || (reading.above(self.knee) && reading.rtt_above(sample.rtt_ns, self.hold))
        {
            Step::Ease
        } else if reading.above(self.hold) {
            Step::Hold
        } else {
            Step::Grow(self.room(reading))
        }
    }

    /// The room left below the hold band, in 1/256 (see [`grade`]); the whole of it without a
    /// baseline (the warm-up).
    #[inline]
    fn room(&self, reading: rtt::Reading) -> u64 {
        reading
            .ratio()
            .map_or(256, |r| grade(r, rtt::fixed_ratio(self.hold)))
    }

    /// Whether word 0 `w` reads the latency at `tick` (a drop tick, see [`ARM_TICK`]): always with
    /// `armed_for_ns` 0, else within `armed_for_ns` (rounded up to whole ticks) of the node's last drop.
    /// A tick before the drop's (a caller's clock that went back) is far in modular terms: not armed.
    #[inline]
    fn armed(&self, w: u64, tick: u64) -> bool {
        self.armed_for_ns == 0
            || (w & DROPPED != 0
                && (tick.wrapping_sub(w >> ARM_SHIFT) & ARM_MASK)
                    < self.armed_for_ns.div_ceil(1 << ARM_TICK))
    }

    /// The next limit word after `step` from `w` at `tick`, or `None` for no change. `b` is the backoff
    /// ratio in fixed point; `l < 2^40` and `b < 2^16`, so no product overflows.
    #[inline]
    fn next(&self, w: u64, step: Step, inflight: u32, b: u64, tick: u64) -> Option<u64> {
        // Unarmed, a success past the knee or in the hold band grows as one below it does, and the
        // write clears the last drop's tick; armed, every write keeps it.
        let (step, arm) = if self.armed(w, tick) {
            (step, w & ARM_BITS)
        } else if matches!(step, Step::Drop | Step::Error(_)) {
            (step, 0)
        } else {
            (Step::Grow(256), 0)
        };
        let (l, cut) = (w & LIMIT_MASK, (w & CUT) | arm);
        let (min, max) = (
            u64::from(self.min_limit.max(1)) << FRAC,
            u64::from(self.max_limit.min(MAX_LIMIT)) << FRAC,
        );
        let next = match step {
            Step::Hold => return None,
            Step::Drop => {
                let base = l.min(u64::from(inflight) << FRAC);
                let at = DROPPED | (tick << ARM_SHIFT);
                return Some(CUT | at | ((base * b) >> FRAC).clamp(min, max.max(min)));
            }
            Step::Error(g) => {
                // dialogue's floor: a cut from a limit below 10 still takes a whole call.
                let at = DROPPED | (tick << ARM_SHIFT);
                let floored = ((l * b) >> FRAC) & !(ONE - 1);
                let next = l - (((l - floored.min(l)) * g) >> 8);
                return Some(CUT | at | next.clamp(min, max.max(min)));
            }
            Step::Ease => {
                let base = l.min(u64::from(inflight) << FRAC);
                return Some(cut | CUT | base.saturating_sub(ONE - b).clamp(min, max.max(min)));
            }
            Step::Grow(g) if u64::from(inflight) >= (l * b) >> (2 * FRAC) => {
                let inc = if cut & CUT != 0 {
                    ((ONE << FRAC) / l.max(ONE) * g.max(1)) >> 8
                } else {
                    ONE
                };
                (l + inc).clamp(min, max.max(min))
            }
            Step::Grow(_) => return None,
        };
        Some(cut | next)
    }

    /// The exact fixed-point limit (tests).
    #[cfg(test)]
    fn exact(state: &LimitState) -> f64 {
        (state.load(0) & LIMIT_MASK) as f64 / ONE as f64
    }
}

/// The growth's scale, in 1/256: 1 at a ratio `r` of 1 (no load), falling to 0 at the hold `h`
/// (both in 1/256).
#[inline]
fn grade(r: u64, h: u64) -> u64 {
    if h <= 256 {
        return 256;
    }
    (h.saturating_sub(r) * 256 / (h - 256)).min(256)
}

/// The published limit of a word 0.
#[inline]
fn publish(w: u64) -> u32 {
    (((w & LIMIT_MASK) >> FRAC) as u32).min(MAX_LIMIT)
}

impl Limit for KneeLimit {
    fn initial_limit(&self) -> u32 {
        self.initial_limit
    }

    fn validate(&self) -> Result<(), ConfigError> {
        check_limits(self.initial_limit, self.min_limit, self.max_limit)?;
        if self.min_limit == 0 {
            return Err(ConfigError::LimitRange);
        }
        // Written so that NaN fails too.
        if !(self.backoff_ratio >= 0.5 && self.backoff_ratio < 1.0) {
            return Err(ConfigError::BackoffRatio);
        }
        check_tolerance(self.knee)?;
        check_tolerance(self.hold)?;
        if self.hold > self.knee {
            return Err(ConfigError::RttTolerance);
        }
        if self.armed_for_ns > KNEE_MAX_ARMED_NS {
            return Err(ConfigError::WindowTime);
        }
        Ok(())
    }

    fn reset(&self, state: &LimitState) {
        state.store(0, u64::from(self.initial_limit.min(MAX_LIMIT)) << FRAC);
        rtt::reset(state);
    }

    #[inline]
    fn update(&self, state: &LimitState, sample: &Sample, _random: u64) -> u32 {
        let step = self.step(state, sample);
        // Rounded up, so that 0.9 x 10 is 9 and not 8.9999; in [2^15, 2^16] for a valid ratio, and at
        // most 2^16 (no cut) for any other.
        let scaled = self.backoff_ratio * ONE as f64;
        let b = (scaled as u64)
            .saturating_add(u64::from(scaled > (scaled as u64) as f64))
            .min(ONE);
        let tick = (sample.now_ns >> ARM_TICK) & ARM_MASK;
        let mut after = 0;
        let r = state.update(0, |w| {
            after = self.next(w, step, sample.inflight, b, tick)?;
            Some(after)
        });
        publish(r.map_or_else(|w| w, |_| after))
    }

    fn limit(&self, state: &LimitState) -> u32 {
        publish(state.load(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limit::MAX_LIMIT;
    use crate::limit::{tests::check_start_rule, InnerAlgorithm, ServerLoad};

    const MS: u64 = 1_000_000;

    fn ok(rtt_ms: u64, inflight: u32, at_ms: u64) -> Sample {
        Sample {
            rtt_ns: rtt_ms * MS,
            inflight,
            dropped: false,
            now_ns: at_ms * MS,
            load: None,
            failed: false,
        }
    }

    /// The limit these tests were written for: a fresh node's limit 8, the latency read always (no
    /// drop needed to arm it).
    fn always() -> KneeLimit {
        KneeLimit {
            initial_limit: 8,
            armed_for_ns: 0,
            ..KneeLimit::default()
        }
    }

    fn fresh(k: KneeLimit) -> LimitState {
        let st = LimitState::new();
        k.reset(&st);
        st
    }

    /// The default limit after 32 full calls at 10 ms (at 0..32 ms): the baseline is 10 ms and the
    /// limit 40.
    fn at_10ms() -> (KneeLimit, LimitState) {
        let k = always();
        let st = fresh(k);
        for i in 0..32 {
            k.update(&st, &ok(10, k.limit(&st), i), 0);
        }
        (k, st)
    }

    #[test]
    fn a_drop_cuts_to_the_ratio_of_what_was_in_flight() {
        let k = KneeLimit {
            initial_limit: 40,
            ..always()
        };
        let st = fresh(k);
        let drop = Sample {
            dropped: true,
            ..ok(5, 10, 0)
        };
        // 0.9 x min(40, 10) = 9, not 36: the limit was far above what the node really held.
        assert_eq!(k.update(&st, &drop, 0), 9);
        assert!((KneeLimit::exact(&st) - 9.0).abs() < 1e-3);
        // A drop with more in flight than the limit cuts from the limit.
        assert_eq!(
            k.update(
                &st,
                &Sample {
                    inflight: 50,
                    ..drop
                },
                0
            ),
            8
        );
        // Down to the floor, never below.
        for _ in 0..40 {
            k.update(&st, &drop, 0);
        }
        assert_eq!(k.limit(&st), 1);
        assert_eq!(KneeLimit::exact(&st), 1.0);
        // A drop's RTT is not the node's service time: the RTT words are untouched.
        assert_eq!((st.load(1), st.load(2)), (0, 0));
    }

    #[test]
    fn an_error_cuts_from_the_limit_with_the_floor_and_arms_the_knee() {
        let k = KneeLimit {
            initial_limit: 40,
            ..KneeLimit::default()
        };
        let st = fresh(k);
        let error = Sample {
            dropped: true,
            failed: true,
            ..ok(5, 2, 0)
        };
        // floor(0.9 x 40) = 36, however few were in flight (an overload would cut to 0.9 x 2).
        assert_eq!(k.update(&st, &error, 0), 36);
        assert_eq!(KneeLimit::exact(&st), 36.0);
        // floor(0.9 x 36) = floor(32.4) = 32: the floor takes a whole call off each time.
        assert_eq!(k.update(&st, &error, 0), 32);
        assert_eq!(KneeLimit::exact(&st), 32.0);
        // Small limits keep falling by one a cut: floor(0.9 x 5) = 4, and to min, never below.
        for _ in 0..40 {
            k.update(&st, &error, 0);
        }
        assert_eq!(KneeLimit::exact(&st), 1.0);
        // The error armed the knee: a call past twice the baseline now eases (the first 16 teach
        // the baseline at 5 ms, at a fill too low to grow the limit).
        let k = KneeLimit {
            initial_limit: 40,
            ..KneeLimit::default()
        };
        let learnt = || {
            let st = fresh(k);
            for _ in 0..16 {
                k.update(&st, &ok(5, 1, 0), 0);
            }
            st
        };
        assert_eq!(
            k.update(&learnt(), &ok(50, 30, 0), 0),
            40,
            "not armed: no ease"
        );
        let st = learnt();
        // At the baseline's latency (a ratio of 1) the cut is whole.
        k.update(&st, &error, 0);
        assert_eq!(k.limit(&st), 36);
        assert_eq!(
            k.update(&st, &ok(50, 30, 0), 0),
            29,
            "armed: eased to 30 - 0.1"
        );
    }

    #[test]
    fn slow_start_until_the_first_cut_then_one_per_round_trip() {
        let k = always();
        let st = fresh(k);
        // Full successes: +1 each from 8.
        for i in 0..10 {
            let l = k.limit(&st);
            assert_eq!(k.update(&st, &ok(10, l, i), 0), l + 1);
        }
        assert_eq!(k.limit(&st), 18);
        // Not full (in flight below floor(0.9 x 18) = 16): nothing changes.
        assert_eq!(k.update(&st, &ok(10, 15, 10), 0), 18);
        // A drop ends the slow start: 0.9 x 18 = 16.2, then +1/16.2 per full success.
        let drop = Sample {
            dropped: true,
            ..ok(10, 18, 11)
        };
        assert_eq!(k.update(&st, &drop, 0), 16);
        k.update(&st, &ok(10, 16, 12), 0);
        let after = KneeLimit::exact(&st);
        assert!((after - (16.2 + 1.0 / 16.2)).abs() < 1e-3, "{after}");
    }

    #[test]
    fn the_hold_band_neither_cuts_nor_grows() {
        let (k, st) = at_10ms();
        let l = k.limit(&st);
        assert_eq!(l, 40);
        // Calls at 19 ms: the smoothed RTT climbs towards 1.9x, growing the limit until it passes 1.75x
        // and holding it from then on, through the hold band (1.75-2).
        let mut held = None;
        let mut seen_hold = 0;
        for i in 0..200 {
            let before = k.limit(&st);
            let after = k.update(&st, &ok(19, before, 32 + i), 0);
            let r = st.load(1) & ((1 << 40) - 1);
            if r * 4 > 7 * 10 * MS {
                seen_hold += 1;
                assert_eq!(after, *held.get_or_insert(before));
            } else {
                assert_eq!(after, before + 1);
            }
        }
        assert!(seen_hold > 150 && held > Some(l), "{seen_hold} {held:?}");
    }

    #[test]
    fn growth_tapers_to_nothing_at_the_hold_band_on_the_latency_alone() {
        let (k, st) = at_10ms();
        // A drop ends the slow start: 0.9 x 20 = 18.
        let drop = Sample {
            dropped: true,
            ..ok(10, 20, 32)
        };
        assert_eq!(k.update(&st, &drop, 0), 18);
        // Full calls at 10 ms (a ratio of 1): 1/limit each, the whole step.
        let before = KneeLimit::exact(&st);
        k.update(&st, &ok(10, 18, 33), 0);
        assert!((KneeLimit::exact(&st) - (before + 1.0 / before)).abs() < 1e-4);
        // Calls at 13.75 ms, once the smoothed RTT has reached them, are a ratio of 1.375: halfway
        // from 1 to the hold (1.75), so half the step.
        for i in 0..200 {
            k.update(&st, &ok(13, 1, 34 + i), 0);
            k.update(
                &st,
                &Sample {
                    rtt_ns: 14_500_000,
                    ..ok(14, 1, 34 + i)
                },
                0,
            );
        }
        let r = st.load(1) & ((1 << 40) - 1);
        assert!((13_700_000..13_800_000).contains(&r), "{r}");
        let before = KneeLimit::exact(&st);
        let l = k.limit(&st);
        k.update(
            &st,
            &Sample {
                rtt_ns: 13_750_000,
                ..ok(14, l, 300)
            },
            0,
        );
        let step = KneeLimit::exact(&st) - before;
        assert!(
            (step - 0.5 / before).abs() < 0.02 / before,
            "{step} against {}",
            0.5 / before
        );
        // A server's report carries no lag: below the band it grows by the whole step, whatever the
        // latency says.
        let before = KneeLimit::exact(&st);
        let report = Sample {
            load: Some(ServerLoad::from_permille(800).unwrap()),
            rtt_ns: 13_750_000,
            ..ok(14, l, 301)
        };
        k.update(&st, &report, 0);
        assert!((KneeLimit::exact(&st) - (before + 1.0 / before)).abs() < 1e-4);
        // An error's cut tapers with the growth: half of CIAD's (from the limit to the floor of 0.9
        // of it) at this ratio, so a node's background errors and its successes balance where they
        // did at any latency.
        let before = KneeLimit::exact(&st);
        let error = Sample {
            dropped: true,
            failed: true,
            ..ok(14, l, 302)
        };
        k.update(&st, &error, 0);
        let whole = before - (before * 0.9).floor();
        let cut = before - KneeLimit::exact(&st);
        assert!(
            (cut - whole / 2.0).abs() < 0.02 * whole,
            "{cut} against {whole} / 2"
        );
        // An overload's drop is a load signal and cuts whole: 0.9 x min(limit, in flight).
        let drop = Sample {
            dropped: true,
            ..ok(14, 10, 303)
        };
        assert_eq!(k.update(&st, &drop, 0), 9);
    }

    #[test]
    fn the_average_past_the_knee_eases_only_while_the_call_is_past_the_hold_band() {
        let (k, st) = at_10ms();
        // Five calls at 100 ms (each past the knee on its own) lift the smoothed RTT to about 34 ms,
        // past twice the 10 ms baseline.
        for i in 0..5 {
            k.update(&st, &ok(100, 30, 32 + i), 0);
        }
        assert!(st.load(1) & ((1 << 40) - 1) > 20 * MS);
        // A call at 12 ms, below the hold band (17.5 ms): the server has drained, the average lags;
        // the limit holds.
        let before = KneeLimit::exact(&st);
        k.update(&st, &ok(12, 30, 40), 0);
        assert_eq!(KneeLimit::exact(&st), before);
        // A call at 18 ms, in the band, with the average still past the knee: it eases.
        assert!(st.load(1) & ((1 << 40) - 1) > 20 * MS);
        k.update(&st, &ok(18, 30, 41), 0);
        assert!(KneeLimit::exact(&st) < before);
    }

    #[test]
    fn one_call_past_the_knee_eases_before_the_average_does() {
        let (k, st) = at_10ms();
        assert_eq!(k.limit(&st), 40);
        // One call of 25 ms while 30 were in flight: past twice the baseline on its own, though it moves
        // the smoothed RTT only to 10.9 ms. The limit falls to the 30 in flight, less 0.1.
        assert_eq!(k.update(&st, &ok(25, 30, 32), 0), 29);
        assert!((KneeLimit::exact(&st) - 29.9).abs() < 1e-3);
        // The next call at 10 ms grows it again, past the slow start by 1/29.9 scaled by the room
        // left below the hold band: the smoothed RTT is 10.88 ms, a ratio of 278/256 against a hold
        // of 448/256, so (448 - 278) / (448 - 256) = 226/256 of it.
        k.update(&st, &ok(10, 30, 33), 0);
        assert!((KneeLimit::exact(&st) - (29.9 + 226.0 / 256.0 / 29.9)).abs() < 2e-4);
        // A call of 19 ms, in the hold band on its own, neither holds nor cuts: the average decides.
        let before = KneeLimit::exact(&st);
        k.update(&st, &ok(19, 30, 34), 0);
        assert!(KneeLimit::exact(&st) > before);
        // An RTT beyond what the tracker keeps reads as the largest it keeps, and still eases.
        let huge = Sample {
            rtt_ns: u64::MAX,
            ..ok(0, 20, 35)
        };
        assert_eq!(k.update(&st, &huge, 0), 19);
    }

    #[test]
    fn a_lasting_overload_keeps_cutting_where_ciad_forgives_it() {
        use crate::limit::CiadLimit;
        let k = always();
        let st = fresh(k);
        let ciad = CiadLimit {
            rtt_tolerance: 2.0,
            fast_start: true,
            ..CiadLimit::default()
        };
        let cst = LimitState::new();
        ciad.reset(&cst);
        // 10 s at 10 ms, one call per ms, then 20 s at 50 ms: the server stuck past its knee.
        let mut t = 0;
        while t < 10_000 {
            k.update(&st, &ok(10, k.limit(&st), t), 0);
            ciad.update(&cst, &ok(10, ciad.limit(&cst), t), 0);
            t += 1;
        }
        let mut knee_high = 0;
        let mut ciad_high = 0;
        while t < 30_000 {
            k.update(&st, &ok(50, k.limit(&st), t), 0);
            ciad.update(&cst, &ok(50, ciad.limit(&cst), t), 0);
            if t >= 20_000 {
                knee_high = knee_high.max(k.limit(&st));
                ciad_high = ciad_high.max(ciad.limit(&cst));
            }
            t += 1;
        }
        // The knee limit stays at its floor for the whole overload; CIAD's baseline has drifted up
        // to the overload's latency within seconds and its limit grows again.
        assert_eq!(knee_high, 1);
        assert!(ciad_high > 20, "{ciad_high}");
    }

    #[test]
    fn a_node_that_stays_slower_becomes_its_own_normal_within_minutes() {
        let k = always();
        let st = fresh(k);
        for i in 0..100 {
            k.update(&st, &ok(10, k.limit(&st), i), 0);
        }
        // From here the node answers in 30 ms, one call per 100 ms, so one at a time (a slower deploy).
        let mut floored = None;
        let mut grows_again = None;
        for i in 1..6_000u64 {
            let at = 100 + i * 100;
            let l = k.update(&st, &ok(30, 1, at), 0);
            match (floored, grows_again) {
                (None, _) if l == 1 => floored = Some(at),
                (Some(_), None) if l > 1 => grows_again = Some(at),
                _ => {}
            }
        }
        // It cuts to the floor within seconds, and grows again once the baseline has drifted past 30 ms
        // over 1.75: 10 + 20 (1 - e^(-t / 275 s)) > 17.1 ms from t = 121 s.
        assert!(floored < Some(5_000), "{floored:?}");
        let again = grows_again.expect("the slower node is its own normal within the run");
        assert!((90_000..200_000).contains(&again), "{again}");
    }

    #[test]
    fn zero_rtts_grow_without_touching_the_rtt_words() {
        let k = always();
        let st = fresh(k);
        assert_eq!(k.update(&st, &ok(0, 8, 0), 0), 9);
        assert_eq!((st.load(1), st.load(2)), (0, 0));
    }

    #[test]
    fn the_limit_stays_within_bounds_at_the_edges() {
        let k = KneeLimit {
            initial_limit: MAX_LIMIT,
            min_limit: MAX_LIMIT,
            max_limit: MAX_LIMIT,
            ..always()
        };
        let st = fresh(k);
        assert_eq!(k.update(&st, &ok(1, u32::MAX, 0), 0), MAX_LIMIT);
        let drop = Sample {
            dropped: true,
            ..ok(1, 0, 1)
        };
        assert_eq!(k.update(&st, &drop, 0), MAX_LIMIT);
        // An unvalidated backoff ratio still gives a limit within bounds.
        for b in [f64::NAN, -1.0, 2.0, f64::INFINITY] {
            let k = KneeLimit {
                backoff_ratio: b,
                ..always()
            };
            let st = fresh(k);
            for s in [ok(1, 8, 0), drop] {
                assert!((1..=1_000).contains(&k.update(&st, &s, 0)), "{b}");
            }
        }
    }

    #[test]
    fn refuses_an_initial_limit_outside_min_max() {
        let d = InnerAlgorithm::Knee(KneeLimit::default());
        check_start_rule(d, &[(1, 1_000), (5, 10), (5, 5), (1, MAX_LIMIT)]);
    }

    #[test]
    fn rejects_bad_parameters() {
        let base = KneeLimit::default();
        assert_eq!(base.validate(), Ok(()));
        for bad in [
            KneeLimit {
                min_limit: 0,
                ..base
            },
            KneeLimit {
                initial_limit: 0,
                ..base
            },
            KneeLimit {
                max_limit: 1 << 24,
                ..base
            },
        ] {
            assert_eq!(bad.validate(), Err(ConfigError::LimitRange), "{bad:?}");
        }
        for r in [f64::NAN, 1.0, 0.49, f64::INFINITY] {
            let bad = KneeLimit {
                backoff_ratio: r,
                ..base
            };
            assert_eq!(bad.validate(), Err(ConfigError::BackoffRatio));
        }
        for (knee, hold) in [
            (f64::NAN, 1.5),
            (0.5, 0.5),
            (f64::INFINITY, 1.5),
            (2.0, f64::NAN),
            (2.0, 0.9),
            (2.0, 2.5),
        ] {
            let bad = KneeLimit { knee, hold, ..base };
            assert_eq!(
                bad.validate(),
                Err(ConfigError::RttTolerance),
                "{knee} {hold}"
            );
        }
        for (knee, hold) in [(1.0, 1.0), (2.0, 2.0), (3.0, 1.0)] {
            assert_eq!(KneeLimit { knee, hold, ..base }.validate(), Ok(()));
        }
        for (armed_for_ns, ok) in [
            (0, true),
            (1, true),
            (KNEE_MAX_ARMED_NS, true),
            (KNEE_MAX_ARMED_NS + 1, false),
            (u64::MAX, false),
        ] {
            let k = KneeLimit {
                armed_for_ns,
                ..base
            };
            let want = if ok {
                Ok(())
            } else {
                Err(ConfigError::WindowTime)
            };
            assert_eq!(k.validate(), want, "{armed_for_ns}");
        }
    }

    /// 32 full calls at 10 ms (at 0..32 ms) under the defaults: the baseline is 10 ms and the limit 52.
    fn default_at_10ms() -> (KneeLimit, LimitState) {
        let k = KneeLimit::default();
        let st = fresh(k);
        for i in 0..32 {
            k.update(&st, &ok(10, k.limit(&st), i), 0);
        }
        assert_eq!(k.limit(&st), 52);
        (k, st)
    }

    #[test]
    fn without_a_drop_a_slower_node_grows_as_one_below_the_knee() {
        let (k, st) = default_at_10ms();
        // Full calls at 60 ms, six times the baseline, and no drop: each grows the limit by 1 (the slow
        // start is not over), where an armed knee would ease on every one of them.
        for i in 0..20 {
            let l = k.limit(&st);
            assert_eq!(k.update(&st, &ok(60, l, 32 + i), 0), l + 1);
        }
        // The same calls with the latency read always: the first falls to what was in flight.
        let k0 = always();
        let st0 = fresh(k0);
        for i in 0..32 {
            k0.update(&st0, &ok(10, k0.limit(&st0), i), 0);
        }
        let l = k0.limit(&st0);
        assert_eq!(k0.update(&st0, &ok(60, l, 32), 0), l - 1);
    }

    #[test]
    fn a_drop_arms_the_knee_for_armed_for_ns_and_a_write_after_clears_it() {
        let (k, st) = default_at_10ms();
        const SEC: u64 = 1_000_000_000;
        let at = |s: u64| s * SEC / MS;
        let drop = Sample {
            dropped: true,
            ..ok(10, 30, at(10))
        };
        // 0.9 x 30 = 27, and the drop's tick kept beside the limit.
        assert_eq!(k.update(&st, &drop, 0), 27);
        assert_ne!(st.load(0) & ARM_BITS, 0);
        // 50 s later the knee still reads the latency: a slow call eases to what was in flight, less 0.1.
        assert_eq!(k.update(&st, &ok(60, 20, at(60)), 0), 19);
        // 61 s after the drop (past 60 s rounded up to 56 ticks of 2^30 ns) it no longer does: the
        // slow full call grows the limit (past the first cut, by 1/limit), and the write clears the
        // drop's tick.
        let before = KneeLimit::exact(&st);
        k.update(&st, &ok(60, 19, at(71)), 0);
        assert!(KneeLimit::exact(&st) > before);
        assert_eq!(st.load(0) & ARM_BITS, 0);
        assert_ne!(st.load(0) & CUT, 0);
        // A caller's clock that went back before the drop reads as far from it: not armed.
        let drop_late = Sample {
            dropped: true,
            ..ok(10, 20, at(100))
        };
        k.update(&st, &drop_late, 0);
        let before = KneeLimit::exact(&st);
        k.update(&st, &ok(60, 18, at(90)), 0);
        assert!(KneeLimit::exact(&st) > before);
    }

    #[test]
    fn an_armed_knee_reads_the_servers_report_in_place_of_the_latency() {
        let (k, st) = default_at_10ms();
        const SEC: u64 = 1_000_000_000;
        let at = |s: u64| s * SEC / MS;
        let loaded = |rtt_ms: u64, inflight: u32, at_ms: u64, permille: u32| Sample {
            load: Some(ServerLoad::from_permille(permille).unwrap()),
            ..ok(rtt_ms, inflight, at_ms)
        };
        // Unarmed, a report past the knee is not read: the full call grows the limit.
        let l = k.limit(&st);
        assert_eq!(k.update(&st, &loaded(10, l, at(1), 1_500), 0), l + 1);
        let drop = Sample {
            dropped: true,
            ..ok(10, 30, at(10))
        };
        assert_eq!(k.update(&st, &drop, 0), 27);
        // Armed: a call at the baseline's RTT whose server says it is past its knee (above 1000)
        // eases to what was in flight, less 0.1 (27 - 0.1 = 26.9).
        assert_eq!(k.update(&st, &loaded(10, 30, at(11), 1_001), 0), 26);
        // At the knee itself (1000: the comparison is strict, as the ratio's) or in the band above
        // hold / knee (875: above 875), it holds, though the call's RTT is six times the baseline.
        for (rtt, p) in [(10, 1_000), (60, 876), (60, 1_000)] {
            let before = KneeLimit::exact(&st);
            k.update(&st, &loaded(rtt, 30, at(12), p), 0);
            assert_eq!(KneeLimit::exact(&st), before, "{rtt} ms at {p}");
        }
        // Below the band it grows, though the call's RTT is past the latency's knee.
        let before = KneeLimit::exact(&st);
        k.update(&st, &loaded(60, 30, at(13), 875), 0);
        assert!(KneeLimit::exact(&st) > before);
        // A drop with a report is a drop: 0.9 x min(limit, in flight).
        let drop_loaded = Sample {
            dropped: true,
            ..loaded(10, 10, at(14), 0)
        };
        assert_eq!(k.update(&st, &drop_loaded, 0), 9);
    }
}
