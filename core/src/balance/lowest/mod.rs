//! The lowest-score family ([`LowestScore`], the default's): each call goes to the node with room whose
//! score, `in_flight + penalty`, is lowest, ties uniformly at random, with dialogue's give-up rule. The
//! penalty, in calls in flight, comes from two time-decayed counters per node, successes and failures.
//! The in-flight term moves calls off a slow or black-holed node as its calls pile up; the penalty moves
//! them off a failing one, and fades as its failures decay.
//!
//! | file | what |
//! |---|---|
//! | here | [`LowestScore`] (the parameters), its runtime form, how the family reads an outcome (the counters and the limiter), the cached penalty, the clock's rotation of the penalties |
//! | `decay.rs` | the decayed counters and the penalty they give |
//! | `scan.rs` | the lowest-score scans: every member, or above 64 a sample of 16 |
//!
//! The family caches each node's penalty in its health words (`balance/health.rs`): the `f32` penalty in
//! the cache word, and in fixed point with `P_FRACTION` fractional bits in the scan word (`word.rs`), so
//! that a scan reads two words per node, the control word and the scan word, and nothing else.

mod decay;
#[cfg(feature = "slow")]
mod pace;
mod scan;

pub(crate) use decay::{Halving, Penalty};
#[cfg(feature = "probation")]
pub(crate) use scan::probe;
pub(crate) use scan::{lowest, lowest_excluding, lowest_fast, SAMPLE_ABOVE};

use crate::balance::algorithm::Choice;
use crate::balance::health::{Family, Health, Scope, View};
use crate::balance::outcome::Outcome;
use crate::balance::slot::NodeSlot;
use crate::balance::word;
use crate::error::ConfigError;
#[cfg(feature = "slow")]
use crate::internal::sync::AtomicU64;
#[cfg(feature = "probation")]
use crate::internal::sync::Ordering::{Acquire, Relaxed};

/// The lowest-score family's parameters: two time-decayed counters per node, successes and failures, the
/// failure penalty they give, and the score `in_flight + penalty` each call is sent by (see the module docs
/// of `lowest`, and `decay.rs` for the counters).
///
/// A counter read `t` ns after its last write is its value times `2^(-t / half_life)`. The node's
/// penalty, in in-flight requests, is `penalty * F + ratio_penalty * log2(1 + F / (S + 1))`, and each
/// call goes to the node with room whose `in_flight + penalty` is lowest. The `log2` is weir's own,
/// within 4e-15 of the exact value where `F < S + 1` (and within `2^-48` plus half an ulp of the result
/// anywhere), exact at powers of two, with the same bits on every target.
///
/// Counting in time rather than in outcomes is what moves traffic off a node that starts failing at
/// once even at a few requests per second, and what brings a recovered node back as its failures
/// fade: a failure's weight halves every `failure_half_life_ns` (30 s), a success's every
/// `success_half_life_ns` (1 s).
///
/// Outcomes weigh as what they say: a health signal (`Failure`: a 500, a reset or refused connection)
/// is a whole failure and moves traffic away; a load signal (`Dropped`: a 503, 504 or timeout, and
/// `Throttled`: a 429) a tenth of one, while the node's limit backs off on a drop, so that a node that
/// sheds a share of its calls keeps its traffic and a dead node among such nodes loses its own.
///
/// ```
/// use core::time::Duration;
/// use weir::balance::{Algorithm, LowestScore};
/// let slow = LowestScore::with_half_lives(Duration::from_secs(2), Duration::from_secs(120));
/// assert_eq!(slow, LowestScore { success_half_life_ns: 2_000_000_000, failure_half_life_ns: 120_000_000_000, ..LowestScore::DEFAULT });
/// let config = weir::Config { algorithm: Algorithm::LowestScore(slow), ..weir::Config::default() };
/// assert!(config.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LowestScore {
    /// Half-life of the success counter in nanoseconds (default 1 s); 1 ms ..= 1 hour.
    pub success_half_life_ns: u64,
    /// Half-life of the failure counter in nanoseconds (default 30 s); 1 ms ..= 1 hour.
    pub failure_half_life_ns: u64,
    /// What a `Dropped` outcome (503, 504, a timeout) adds to the failures (default 0.1, as
    /// `throttled_cost`); finite, in [0, 1].
    ///
    /// A 503 or a timeout is a load signal: the node is busy, not broken, and its limiter backs off on
    /// each drop; the penalty, which moves traffic away, is for health signals (a 500, a reset or refused
    /// connection, a whole failure each). At 1 a drop counts as a whole failure too, and where healthy
    /// nodes answer a share of their calls with 503 (a fleet near its capacity, a server that sheds to
    /// protect itself), their drops weigh as much as a dead node's failures: the penalty then balances
    /// counts, not rates, and a node failing every call keeps about the noise rate's share of a healthy
    /// node's calls (with two nodes shedding 5 %: 2.0 % of all calls at 10 calls/s, 4.8 % at 100,000).
    /// At the default 0.1 it keeps under 0.5 % at every rate from 10 to 100,000 calls/s, with 2 % or 5 %
    /// noise (`core/tests/noise.rs`). A node that times out every call still loses its traffic: each
    /// timeout adds a tenth of a failure, the ratio term grows with its failures over its successes, and
    /// each timeout cuts its limit. 1 suits servers whose 503 means down rather than busy.
    pub dropped_cost: f32,
    /// What a `Throttled` outcome (429) adds to the failures (default 0.1); finite, in [0, 1].
    pub throttled_cost: f32,
    /// What a `ClientError` outcome (another 4xx) adds to the failures (default 0.01): a node that
    /// answers 400 to everything is broken, and must still lose its traffic. Finite, in [0, 1].
    pub client_error_cost: f32,
    /// Penalty per recent failure, in in-flight requests (default 10); finite, in [0, 10^6].
    pub penalty: f32,
    /// Penalty per doubling of failures over successes (default 16); finite, in [0, 10^6].
    pub ratio_penalty: f32,
    /// Probation, the calls that find out whether an avoided node has recovered (default 0, none;
    /// finite, in [0, 1]): the fraction of acquires whose first try is a member with room drawn
    /// uniformly at random instead of the lowest score. A node that failed is avoided while its penalty
    /// lasts, so without them nothing tells it has recovered before its failures fade (30 s half-life);
    /// with them it gets a trickle of real calls. A probe draws up to 8 slots to find a member; if that
    /// member is full, or none of the draws holds one, the acquire goes on as usual (a full member is
    /// not drawn again, so that while the healthy nodes are full the probes do not all fall on the one
    /// node with room, a broken one). 0.01 sends a hundredth of the
    /// calls to a random member, so a dead node costs about `0.01 / n` of the calls it would fail.
    /// Probes take numbers from the acquire's generator; at 0 none is taken, so the decisions are the
    /// same as without the field.
    ///
    /// Needs the `probation` feature (in `algorithms`, so in every default, C and Python build).
    #[cfg(feature = "probation")]
    pub probe_fraction: f32,
    /// What each success takes from its node's failures (default 0, nothing; finite, in [0, 1]), if its
    /// call was sent after the failures were last written (the calls in flight when a node starts to
    /// fail still succeed, and tell nothing of it since): 0.5 halves them, so a node that answers well
    /// again is forgiven within a few calls instead of over the failure half-life, while a node that
    /// keeps failing is not (its successes are few). Once what a success would leave weighs less than
    /// one call in flight, it takes all of it: at light load any penalty loses to an idle peer, and
    /// halving alone would need some 20 successes to reach 0. It also takes all of them where the
    /// node's failures were last written (by a failure, or by forgiveness) more than a clock epoch
    /// before the call was sent (a quarter of the shorter half-life, 250 ms by default): a node avoided
    /// since its last failure hears only probes, and one that answers a probe well at least an epoch
    /// after it last failed has recovered, as Finagle's and Linkerd's probation read one request; a
    /// node that keeps failing writes its counter with each failure, so its rare successes only halve
    /// it. With `probe_fraction`, a recovered node earns its traffic back by answering, not by waiting.
    ///
    /// Needs the `probation` feature.
    #[cfg(feature = "probation")]
    pub forgiveness: f32,
    /// Timed probes (default 0, off; else 1 ms ..= 1 hour): a member that carries a penalty, has no call
    /// in flight and has not failed for this long is tried again, as a node marked dead is after nginx's
    /// `fail_timeout` or Finagle's first mark-dead period (5 s). The acquire that runs the clock's
    /// rotation (the first of each epoch, a quarter of the shorter half-life) tries such a member first,
    /// if it has room: one per rotation, the one longest without a failure, among the slots the rotation
    /// refreshes. The other acquires decide as without the field, and pay nothing for it. A probe that
    /// fails writes the failures again, so the node waits another `probe_after_ns`; with `forgiveness`,
    /// one that succeeds takes all of them (it was sent an epoch or more after the last failure), and the
    /// node is back.
    ///
    /// What it buys, and what it costs, do not depend on the call rate, as the `probe_fraction`'s do: a
    /// client that sends a few calls per second hears of a recovered node within about `probe_after_ns`
    /// (with `probe_fraction` alone, only after some `n / probe_fraction` calls), and a node that stays
    /// broken costs each client one call per `probe_after_ns`.
    ///
    /// ```
    /// use weir::balance::{Algorithm, LowestScore};
    /// use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
    /// const S: u64 = 1_000_000_000;
    /// let lowest = LowestScore { probe_after_ns: 2 * S, forgiveness: 0.5, ..LowestScore::DEFAULT };
    /// let config = Config { algorithm: Algorithm::LowestScore(lowest), ..Config::default() };
    /// let b = Balancer::new([const { NodeSlot::new() }; 2], config).unwrap();
    /// b.add(1).unwrap();
    /// b.add(2).unwrap();
    /// let mut rng = Rng::with_seed(1);
    /// // Node 1 fails a call at 1 s.
    /// let (x, y) = (b.acquire(S, &mut rng).unwrap(), b.acquire(S, &mut rng).unwrap());
    /// let (one, two) = if x.node_id() == 1 { (x, y) } else { (y, x) };
    /// b.release(one, Outcome::Failure, S).unwrap();
    /// b.release(two, Outcome::Success, S).unwrap();
    /// // At 2 s it is avoided; at 3.5 s, quiet for 2 s, it is the next acquire's first try.
    /// let lease = b.acquire(2 * S, &mut rng).unwrap();
    /// assert_eq!(lease.node_id(), 2);
    /// b.release(lease, Outcome::Success, 2 * S).unwrap();
    /// let probe = b.acquire(3 * S + S / 2, &mut rng).unwrap();
    /// assert_eq!(probe.node_id(), 1);
    /// // Its success takes the failures away: the node is back.
    /// b.release(probe, Outcome::Success, 3 * S + S / 2).unwrap();
    /// assert_eq!(b.node(1, 3 * S + S / 2).unwrap().penalty, 0.0);
    /// ```
    ///
    /// Needs the `probation` feature. Validation: `ConfigError::Probation`.
    #[cfg(feature = "probation")]
    pub probe_after_ns: u64,
    /// Slow nodes (default 0, off; else finite, in [1, 64]): a node whose recent successes took at least
    /// this many times as long as the fastest node's counts each of its calls in flight that many times
    /// over (in steps of a quarter), so that a node five times slower takes a call only when its peers
    /// have about five times its calls in flight: the peak-EWMA cost of tower and Finagle,
    /// `(in_flight + 1) * latency`, over the fastest node's latency. Below the ratio a node scores
    /// `in_flight + penalty` as without it: nodes of one kind differ in latency by their load and by
    /// chance, and ranking them by it herds the calls onto whichever answered fastest. Each node's latency is an
    /// average of its successes' RTTs (each moves it a quarter of the way); the fastest is taken at each
    /// clock epoch; the ratio beyond 1 fades at the failure half-life while the node gets no calls, as a
    /// failure would, so a slow node is tried again now and then, and kept out while it stays slow. 2
    /// reads a node as slow once it takes twice the fastest's time: among three peers with 0.1 to 1.5
    /// calls in flight each, a node five times slower then gets at most 0.01 % of the calls, and with 5 to
    /// 20 each 1.1 % to 1.2 %, against 6 % to 20 % without it (`core/tests/slow.rs`). Validation:
    /// `ConfigError::Penalty`.
    ///
    /// Needs the `slow` feature (in `algorithms`, so in every default, C and Python build).
    #[cfg(feature = "slow")]
    pub slow_ratio: f32,
}

impl LowestScore {
    /// The defaults: successes halve every second, failures every 30 s; a 500 costs a whole failure, a
    /// 503, a timeout or a 429 0.1 of one, another 4xx 0.01; penalty 10 per failure plus 16 per doubling
    /// of failures over successes.
    pub const DEFAULT: LowestScore = LowestScore {
        success_half_life_ns: 1_000_000_000,
        failure_half_life_ns: 30_000_000_000,
        dropped_cost: 0.1,
        throttled_cost: 0.1,
        client_error_cost: 0.01,
        penalty: 10.0,
        ratio_penalty: 16.0,
        #[cfg(feature = "probation")]
        probe_fraction: 0.0,
        #[cfg(feature = "probation")]
        forgiveness: 0.0,
        #[cfg(feature = "probation")]
        probe_after_ns: 0,
        #[cfg(feature = "slow")]
        slow_ratio: 0.0,
    };

    /// [`LowestScore::DEFAULT`] with other half-lives, given as [`Duration`]s (saturating at `u64::MAX`
    /// ns; validation checks the range).
    ///
    /// [`Duration`]: core::time::Duration
    #[must_use]
    pub const fn with_half_lives(
        success: core::time::Duration,
        failure: core::time::Duration,
    ) -> LowestScore {
        LowestScore {
            success_half_life_ns: crate::internal::time::saturating_ns(success),
            failure_half_life_ns: crate::internal::time::saturating_ns(failure),
            ..LowestScore::DEFAULT
        }
    }

    /// Checks every field and computes the runtime form into `out`, in place: the decay tables are the
    /// balancer's largest part, and every move of a returned value is one more copy of them on the
    /// stack (on a Cortex-M0 those copies added up to kilobytes in `Balancer::new`).
    pub(crate) fn prepare_into(&self, out: &mut Prepared) -> Result<(), ConfigError> {
        if !HALF_LIFE_NS.contains(&self.success_half_life_ns)
            || !HALF_LIFE_NS.contains(&self.failure_half_life_ns)
        {
            return Err(ConfigError::DecayHalfLife);
        }
        // NaN is in no range.
        let cost = |c: f32| (0.0..=1.0).contains(&c);
        if !(cost(self.dropped_cost) && cost(self.throttled_cost) && cost(self.client_error_cost)) {
            return Err(ConfigError::OutcomeCost);
        }
        let coefficient = |c: f32| (0.0..=1e6).contains(&c);
        if !(coefficient(self.penalty) && coefficient(self.ratio_penalty)) {
            return Err(ConfigError::Penalty);
        }
        #[cfg(feature = "probation")]
        if !(cost(self.probe_fraction)
            && cost(self.forgiveness)
            && (self.probe_after_ns == 0 || HALF_LIFE_NS.contains(&self.probe_after_ns)))
        {
            return Err(ConfigError::Probation);
        }
        #[cfg(feature = "slow")]
        if !(self.slow_ratio == 0.0 || (1.0..=64.0).contains(&self.slow_ratio)) {
            return Err(ConfigError::Penalty);
        }
        out.success.fill(self.success_half_life_ns);
        #[cfg(feature = "slow")]
        {
            out.slow = f64::from(self.slow_ratio);
        }
        out.failure.fill(self.failure_half_life_ns);
        out.dropped = f64::from(self.dropped_cost);
        out.throttled = f64::from(self.throttled_cost);
        out.client_error = f64::from(self.client_error_cost);
        out.penalty = Penalty {
            per_failure: f64::from(self.penalty),
            per_doubling: f64::from(self.ratio_penalty),
        };
        #[cfg(feature = "probation")]
        {
            // In [0, 2^32]: a draw below it probes (exact at 0 and 1).
            out.probe = (f64::from(self.probe_fraction) * PROBE_ONE as f64) as u64;
            out.keep = 1.0 - f64::from(self.forgiveness);
            // At most an hour over 4 in ticks of about 1 ms: within u32.
            out.quiet = (self.clock_ns() >> decay::TICK_SHIFT) as u32;
            // At most an hour in ticks (3.4 million): within u32; at least 1 when on.
            out.probe_after = (self.probe_after_ns >> decay::TICK_SHIFT)
                .max(u64::from(self.probe_after_ns != 0)) as u32;
            // At most an hour in ticks, as above.
            out.relapse = (self.failure_half_life_ns >> decay::TICK_SHIFT) as u32;
        }
        Ok(())
    }

    /// The balancer's clock epoch under this model: a quarter of the shorter half-life. The rotation
    /// recomputes every penalty this often, so a cached penalty is never more than 16 % (2^(1/4)) away
    /// from its decayed value.
    pub(crate) fn clock_ns(&self) -> u64 {
        self.success_half_life_ns.min(self.failure_half_life_ns) / 4
    }
}

impl Default for LowestScore {
    /// [`LowestScore::DEFAULT`].
    fn default() -> Self {
        LowestScore::DEFAULT
    }
}

/// The half-lives: 1 ms ..= 1 hour.
const HALF_LIFE_NS: core::ops::RangeInclusive<u64> = 1_000_000..=3_600_000_000_000;

/// The model's runtime form: the decay tables and the costs as `f64`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    pub(crate) success: Halving,
    pub(crate) failure: Halving,
    pub(crate) dropped: f64,
    pub(crate) throttled: f64,
    pub(crate) client_error: f64,
    pub(crate) penalty: Penalty,
    /// `LowestScore::slow_ratio` (0: off).
    #[cfg(feature = "slow")]
    pub(crate) slow: f64,
    /// `LowestScore::probe_fraction` in units of 2^-32 (0: no probes, and no draw).
    #[cfg(feature = "probation")]
    pub(crate) probe: u64,
    /// What a success leaves of its node's failures: `1 - forgiveness` (1: all, and no write).
    #[cfg(feature = "probation")]
    pub(crate) keep: f64,
    /// The clock epoch in counter ticks: a success forgives the whole of failures last written longer
    /// ago than this.
    #[cfg(feature = "probation")]
    pub(crate) quiet: u32,
    /// `LowestScore::probe_after_ns` in counter ticks (0: no timed probes).
    #[cfg(feature = "probation")]
    pub(crate) probe_after: u32,
    /// The failure half-life in counter ticks: a node that fails again within it of a health check's
    /// readmission relapsed, and waits twice as long before it is due for a check again (see
    /// `Health::note_relapse`).
    #[cfg(feature = "probation")]
    pub(crate) relapse: u32,
}

/// How many ticks the failures of `s` have been quiet at `now`, if it is a member a timed probe or a
/// health check may take: in service, with no call in flight, and avoided (a penalty). Its control word
/// is loaded with `order`.
#[cfg(feature = "probation")]
fn avoided_quiet(s: &NodeSlot, now: u64, order: crate::internal::sync::Ordering) -> Option<u32> {
    let c = s.ctl.load(order);
    if word::state(c) != word::ACTIVE || word::inflight(c) != 0 || scan::penalty_units(s) == 0 {
        return None;
    }
    s.health.failures_quiet_for(now)
}

/// The most relapses a health check's quiet is doubled for: 2^6 times the quiet asked.
#[cfg(feature = "probation")]
pub(crate) const MAX_RELAPSES: u32 = 6;

/// `Prepared::probe` of a fraction of 1.
#[cfg(feature = "probation")]
pub(crate) const PROBE_ONE: u64 = 1 << 32;

impl Prepared {
    /// What [`LowestScore::prepare_into`] overwrites: every field.
    pub(crate) const UNPREPARED: Prepared = Prepared {
        success: Halving::UNPREPARED,
        failure: Halving::UNPREPARED,
        dropped: 0.0,
        throttled: 0.0,
        client_error: 0.0,
        penalty: Penalty {
            per_failure: 0.0,
            per_doubling: 0.0,
        },
        #[cfg(feature = "slow")]
        slow: 0.0,
        #[cfg(feature = "probation")]
        probe: 0,
        #[cfg(feature = "probation")]
        keep: 1.0,
        #[cfg(feature = "probation")]
        quiet: 0,
        #[cfg(feature = "probation")]
        probe_after: 0,
        #[cfg(feature = "probation")]
        relapse: 0,
    };

    /// What the limiter is told of `outcome`: a drop on `Failure` and `Dropped`, as dialogue's endpoint
    /// limiter does on a 500; a success sample on `Success` and `ClientError` (the node answered);
    /// nothing on `Throttled` (a 429 asks to try elsewhere; backing off on it starves a node that
    /// rate-limits fairly) and `Ignored`.
    #[inline]
    pub(crate) fn limit_reading(outcome: Outcome) -> Option<bool> {
        use Outcome::*;
        match outcome {
            Success | ClientError => Some(false),
            Failure | Dropped => Some(true),
            Throttled | Ignored => None,
        }
    }

    /// The first try over the scan words ([`lowest_fast`]), with the slowness code read only where the
    /// term is on (see `scan.rs`, `fast_key`).
    #[inline]
    pub(crate) fn choose_fast(&self, slots: &[NodeSlot], rng: &mut fastrand::Rng) -> Choice {
        #[cfg(feature = "slow")]
        if self.slow != 0.0 {
            return lowest_fast::<true>(slots, rng);
        }
        lowest_fast::<false>(slots, rng)
    }

    /// The clock's rotation to `now` (see `Balancer::rotate`): the counters of the slots due, settled,
    /// then their penalties refreshed by `refresh`. Releases are dated no later than the horizon of the
    /// rotation they read (`horizon`, the previous rotation's), so after a silence of 2^31 ticks every
    /// counter is older than its tick can tell (see `decay.rs`): then every counter is forgotten.
    #[inline]
    pub(crate) fn rotate(
        &self,
        used: &[NodeSlot],
        now: u64,
        horizon: u64,
        epoch: u64,
        #[cfg(feature = "slow")] fastest: &AtomicU64,
        refresh: impl Fn(&NodeSlot),
    ) {
        let forget = now.saturating_sub(horizon) >= (1u64 << 31) << decay::TICK_SHIFT;
        let part = if forget { used } else { rotated(used, epoch) };
        #[cfg(feature = "slow")]
        if self.slow != 0.0 {
            pace::rotate_reference(part, core::ptr::eq(part.as_ptr(), used.as_ptr()), fastest);
        }
        for s in part {
            s.health.settle_counters(now, self, forget);
            refresh(s);
        }
    }
}

#[cfg(feature = "probation")]
impl Prepared {
    /// Timed probes ([`LowestScore::probe_after_ns`], `probe_after` ticks, above 0): among the slots
    /// the rotation of `epoch` refreshed (all of them up to [`ROTATED`], a part in turn above), the
    /// member that carries a penalty, has no call in flight and whose failures were last written at
    /// least `probe_after` ticks before `now`, the longest ago of them (the first on a tie): the slot the
    /// acquire that ran the rotation tries first. Deterministic: no draw. A probe that fails writes the
    /// failures again, and the node waits its time once more; while the probe is in flight, the node has
    /// a call in flight and is not due.
    ///
    /// Relaxed (the control words): the acquire admits the slot with a compare-and-swap that reads its
    /// state and room afresh; a reading a moment old names what a rotation a moment earlier would have.
    pub(crate) fn due(&self, used: &[NodeSlot], now: u64, epoch: u64) -> Option<usize> {
        let mut longest: Option<(u32, usize)> = None;
        let part = rotated_range(used.len(), epoch);
        let start = part.start;
        for (k, s) in used.get(part).unwrap_or_default().iter().enumerate() {
            let Some(quiet) = avoided_quiet(s, now, Relaxed) else {
                continue;
            };
            if quiet >= self.probe_after && longest.is_none_or(|(q, _)| quiet > q) {
                longest = Some((quiet, start + k));
            }
        }
        longest.map(|(_, i)| i)
    }

    /// Health checks (`Balancer::due_check`): over every slot in `used`, the member that a timed probe
    /// would take with a period of `quiet_ns` (`quiet` ticks, rounded down) (in service, a penalty, no call in flight, failures
    /// last written `quiet` ticks ago or more, the longest ago first, the first on a tie), claimed for
    /// the check ([`Health::claim_check`]): its failures are dated `now` again, so neither another
    /// check nor a timed probe takes it for `quiet` more ticks. `None` if no member is due, or if what
    /// was due changed under the claim (a failure landed, another caller claimed it): the next call
    /// looks again.
    ///
    /// A node that relapsed after its last readmissions (failed again within the failure half-life of
    /// a healthy check, `Health::relapses`) waits `quiet` doubled once per relapse, at most
    /// [`MAX_RELAPSES`] times: a node that fails a call in two, or whose checks do not represent its
    /// calls, is let back ever more rarely (2, 4, 8, ... 128 s with a quiet of 2 s), as Finagle's and
    /// Envoy's ejection times grow, while a node that recovers for good after one fault is back within
    /// `quiet`.
    ///
    /// Acquire (the control words): the caller reads the slot's id after its state.
    pub(crate) fn due_check(&self, used: &[NodeSlot], now: u64, quiet_ns: u64) -> Option<usize> {
        let base = quiet_ns >> decay::TICK_SHIFT;
        let mut longest: Option<(u32, u32, usize)> = None;
        for (i, s) in used.iter().enumerate() {
            let Some(q) = avoided_quiet(s, now, Acquire) else {
                continue;
            };
            // `base` is below 2^44: doubled at most `MAX_RELAPSES` times, it stays within u64. Ages
            // above 2^31 ticks read as 0 (see `decay.rs`): a longer quiet is never met.
            let quiet = base << s.health.relapses().min(MAX_RELAPSES);
            let Some(quiet) = u32::try_from(quiet).ok().filter(|&q| q <= i32::MAX as u32) else {
                continue;
            };
            if q >= quiet && longest.is_none_or(|(l, _, _)| q > l) {
                longest = Some((q, quiet, i));
            }
        }
        let (_, quiet, i) = longest?;
        used.get(i)?
            .health
            .claim_check(now, quiet, self)
            .then_some(i)
    }

    /// A health check's answer for `h` at `now` (`Balancer::report_check`): healthy forgives every
    /// failure, failed records one, as a call's `Failure` would (so the node waits its period again).
    /// The caller refreshes the penalty.
    pub(crate) fn report_check(&self, h: &Health, healthy: bool, now: u64) {
        if healthy {
            h.readmit(now);
            h.forgive_all();
        } else {
            h.record_decay(self, now, Outcome::Failure, now);
        }
    }
}

impl Family for Prepared {
    /// Records `outcome` as the family reads it (see [`LowestScore`]): a success adds 1 to the
    /// successes; `Failure` 1 to the failures, `Dropped`, `Throttled` and `ClientError` their costs;
    /// `Ignored` nothing.
    #[inline(always)]
    fn record(&self, h: &Health, now: u64, outcome: Outcome) -> bool {
        h.record_decay(self, now, outcome, now)
    }

    /// The penalty, and its fixed point for the scan word.
    #[inline]
    #[cfg(feature = "slow")]
    fn reading(&self, h: &Health, at: u64, scope: Scope<'_>) -> (f32, u64) {
        let pen = h.decayed(at, self).2 as f32;
        let code = if self.slow != 0.0 {
            h.slowness(self, at, scope.fastest)
        } else {
            0
        };
        (pen, word::lowest_units(word::fixed(pen), code))
    }

    /// The penalty, and its fixed point for the scan word (without the `slow` feature, no slowness code).
    #[inline]
    #[cfg(not(feature = "slow"))]
    fn reading(&self, h: &Health, at: u64, _: Scope<'_>) -> (f32, u64) {
        let pen = h.decayed(at, self).2 as f32;
        (pen, word::fixed(pen))
    }

    fn view(&self, h: &Health, now: u64) -> View {
        h.view_decay(self, now)
    }

    /// [`SCAN_ABSENT`](word::SCAN_ABSENT), above every key, so that the fast scan, which reads no state,
    /// passes the slot over.
    #[inline]
    fn absent_units(&self) -> u64 {
        word::SCAN_ABSENT
    }

    /// Both counters start empty.
    fn first_word(&self) -> u64 {
        0
    }
}

/// Slots a rotation refreshes at most: a balancer of at most this many slots has every slot refreshed by
/// every rotation. The same bound as the scan's sample, so a balancer of at most 64 slots works and
/// decides exactly as before both.
pub(crate) const ROTATED: usize = SAMPLE_ABOVE;

/// The slots that the rotation of clock epoch `epoch` refreshes: all of them in a balancer of at most
/// [`ROTATED`] slots; in a larger one, one of `w` parts of at most [`ROTATED`] consecutive slots in turn
/// (`w` the least power of two that makes them small enough, the part the epoch's low bits name), so
/// that a rotation's work does not grow with the balancer. Each slot is then refreshed at least every
/// `w` epochs by the rotations (16 epochs, 4 s by default, at 1,024 slots), and by each of its own
/// releases that records a failure or follows one: what waits longer is only the fading of an idle
/// node's penalty, which moves in steps `w` epochs apart.
#[inline]
fn rotated(used: &[NodeSlot], epoch: u64) -> &[NodeSlot] {
    // Checked slicing: the last parts may be short or empty.
    used.get(rotated_range(used.len(), epoch))
        .unwrap_or_default()
}

/// Where [`rotated`]'s part lies among `len` slots.
fn rotated_range(len: usize, epoch: u64) -> core::ops::Range<usize> {
    if len <= ROTATED {
        return 0..len;
    }
    let parts = len.div_ceil(ROTATED).next_power_of_two();
    // `parts` is a power of two: a shift, and a mask for the epoch's part.
    let size = (len + parts - 1) >> parts.trailing_zeros();
    let start = (epoch & (parts as u64 - 1)) as usize * size;
    start..len.min(start + size)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    /// Over `parts` consecutive epochs (any `parts` of them), the rotations' parts cover every slot
    /// exactly once, each part at most [`ROTATED`] slots; at most [`ROTATED`] slots, every rotation
    /// covers all.
    #[test]
    fn rotations_cover_every_slot_in_turn() {
        for n in [0usize, 1, 63, 64, 65, 100, 128, 129, 1_000, 1_024, 4_097] {
            let slots: Vec<NodeSlot> = (0..n).map(|_| NodeSlot::new()).collect();
            let parts = n.div_ceil(ROTATED).next_power_of_two().max(1);
            for first in [0u64, 5, 1 << 40] {
                let mut seen = std::vec![0u32; n];
                for epoch in first..first + parts as u64 {
                    let part = rotated(&slots, epoch);
                    assert!(part.len() <= ROTATED || n <= ROTATED, "n {n}");
                    for s in part {
                        let at = (s as *const NodeSlot as usize - slots.as_ptr() as usize)
                            / core::mem::size_of::<NodeSlot>();
                        seen[at] += 1;
                    }
                }
                assert!(seen.iter().all(|&c| c == 1), "n {n}, from epoch {first}");
            }
        }
    }
}
