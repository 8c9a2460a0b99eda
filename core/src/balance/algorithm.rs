//! The algorithm families and the one place that dispatches to them.
//!
//! | family | room | what a node's cached value is | how a call's node is chosen |
//! |---|---|---|---|
//! | [`Algorithm::LowestScore`] (the default's) | `lowest/` | a failure penalty, in calls in flight | the node with room whose `in_flight + penalty` is lowest |
//! | [`Algorithm::Weighted`] ([the cascade's](crate#vocabulary)) | `weighted/` | a weight, `success_rate ^ exponent` | a weighted random draw among the nodes with room |
//!
//! A family owns everything it decides: its parameters and their checks, how it reads an [`Outcome`] (its
//! health record and what its limiter is told), the value it caches per node, how the clock's rotation
//! ages it, and its scans. The balancer asks this file, and this file asks the configured family: no
//! other file matches on the family, and the families know nothing of each other.

use crate::balance::error::Rejected;
use crate::balance::health::{Family, Health, Scope, View};
#[cfg(feature = "decay")]
use crate::balance::lowest::{self, LowestScore};
use crate::balance::outcome::Outcome;
use crate::balance::slot::NodeSlot;
#[cfg(any(feature = "buckets", feature = "ewma"))]
use crate::balance::weighted::{self, Weighted};
use crate::error::ConfigError;
#[cfg(feature = "slow")]
use crate::internal::sync::AtomicU64;
use fastrand::Rng;

/// The algorithm a balancer decides by: a family, with its parameters. A family's parameters hold only
/// what it reads, so every value of this type is a whole algorithm; [`Config::validate`] checks the
/// parameters' ranges.
///
/// ```
/// use weir::balance::{Algorithm, Draw, LowestScore, Weighted, WeightedHealth};
/// assert_eq!(Algorithm::default(), Algorithm::LowestScore(LowestScore::DEFAULT));
/// let pick = Algorithm::Weighted(Weighted { health: WeightedHealth::EWMA, draw: Draw::WeightedPick, ..Weighted::CASCADE });
/// let config = weir::Config { algorithm: pick, ..weir::Config::default() };
/// assert!(config.validate().is_ok());
/// ```
///
/// How each family reads an [`Outcome`]:
///
/// | outcome       | `LowestScore` (its counters) | `Weighted` (the cascade's success rate) |
/// |---------------|-------------------|--------------------------------|
/// | `Success`     | successes + 1     | a success                      |
/// | `Failure`     | failures + 1      | a failure                      |
/// | `Dropped`     | failures + `dropped_cost` (0.1) | a failure        |
/// | `Throttled`   | failures + `throttled_cost` (0.1) | a failure (as `Dropped`) |
/// | `ClientError` | failures + `client_error_cost` (0.01) | nothing (as `Ignored`) |
/// | `Ignored`     | nothing           | nothing                        |
///
/// [`Config::validate`]: crate::Config::validate
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Algorithm {
    /// The default: each call goes to the node with room whose score, `in_flight` plus a failure penalty
    /// from two time-decayed counters, is lowest, with dialogue's give-up rule (see [`LowestScore`]).
    ///
    /// Give-up rule (dialogue's): if a full node with more than 5 calls in flight scores no more than the
    /// best node with room, and the best node with room scores more than twice the highest such full
    /// node, the acquire is refused ([`Rejected::AllBusy`]) rather than sent to a node that much worse:
    /// with a waiting acquire, it waits for the better node to have room. Only a node with room that
    /// carries a penalty (or a slowness code) is refused so: one that scores more by its calls in flight
    /// alone is busier, not worse.
    ///
    /// Large fleets: above 64 members, the first try of an acquire compares 16 members drawn at random
    /// (the power of d choices, as P2C is the power of two) instead of every member, and takes the best
    /// of them only if it has room and scores at most 12 (where the give-up rule never refuses); else
    /// every member is compared, as above. The clock's rotation then refreshes the cached penalties of
    /// 64 members in turn per epoch instead of every member's. So an acquire's cost stops growing with
    /// the fleet, and a node scoring above 12 (one with a recent failure) is taken only when every
    /// member is compared. At 64 members and fewer the decisions are exactly those described above.
    #[cfg(feature = "decay")]
    LowestScore(LowestScore),
    /// [The original cascade](crate#vocabulary) and its variants: a success rate per node, a weight
    /// `success_rate ^ weight_exponent`, and a weighted random draw among the nodes with room (see
    /// [`Weighted`]).
    #[cfg(any(feature = "buckets", feature = "ewma"))]
    Weighted(Weighted),
}

impl Algorithm {
    /// The default algorithm: [`Algorithm::LowestScore`] with [`LowestScore::DEFAULT`].
    #[cfg(feature = "decay")]
    pub const LOWEST_SCORE: Algorithm = Algorithm::LowestScore(LowestScore::DEFAULT);

    /// [The cascade](crate#vocabulary) exactly: [`Algorithm::Weighted`] with [`Weighted::CASCADE`].
    #[cfg(feature = "buckets")]
    pub const CASCADE: Algorithm = Algorithm::Weighted(Weighted::CASCADE);

    /// The runtime form that [`prepare_into`](Self::prepare_into) overwrites.
    pub(crate) fn unprepared(&self) -> Prepared {
        match self {
            #[cfg(feature = "decay")]
            Algorithm::LowestScore(_) => Prepared::Lowest(lowest::Prepared::UNPREPARED),
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Algorithm::Weighted(w) => Prepared::Weighted(w.unprepared()),
        }
    }

    /// Checks the family's parameters and writes its runtime form into `out`, in place (see
    /// `LowestScore::prepare_into`).
    pub(crate) fn prepare_into(&self, out: &mut Prepared) -> Result<(), ConfigError> {
        match (self, out) {
            #[cfg(feature = "decay")]
            (Algorithm::LowestScore(l), Prepared::Lowest(p)) => l.prepare_into(p),
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            (Algorithm::Weighted(w), Prepared::Weighted(p)) => w.prepare_into(p),
            // Another family's form (never from `unprepared`): replaced by this family's, then prepared.
            #[cfg(all(feature = "decay", any(feature = "buckets", feature = "ewma")))]
            (this, out) => {
                *out = this.unprepared();
                this.prepare_into(out)
            }
        }
    }

    /// The width of the balancer's clock epoch under this algorithm (see `clock.rs`).
    pub(crate) fn clock_ns(&self) -> u64 {
        match self {
            #[cfg(feature = "decay")]
            Algorithm::LowestScore(l) => l.clock_ns(),
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Algorithm::Weighted(w) => w.clock_ns(),
        }
    }
}

#[cfg(feature = "decay")]
impl Default for Algorithm {
    /// [`Algorithm::LOWEST_SCORE`], the default configuration's algorithm.
    fn default() -> Self {
        Algorithm::LOWEST_SCORE
    }
}

/// The configured family's runtime form.
// The lowest-score family's factor tables make it the large variant; one `Prepared` lives in each
// balancer, and the core cannot box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug)]
pub(crate) enum Prepared {
    #[cfg(any(feature = "buckets", feature = "ewma"))]
    Weighted(weighted::Prepared),
    #[cfg(feature = "decay")]
    Lowest(lowest::Prepared),
}

/// What a scan found to try next.
pub(crate) enum Choice {
    Try(usize),
    Reject(Rejected),
}

impl Prepared {
    /// Records `outcome` on `h` and refreshes its cached value ([`Health::record`] with the configured
    /// family). Not generic: one copy, compiled here with the families' code. The balancer is generic over
    /// its storage and compiled where it is used; called from there, the generic `Health::record` would
    /// reach the families' private helpers across crates, where they cannot be inlined.
    #[cfg_attr(not(feature = "decay"), allow(unused_variables))]
    pub(crate) fn record_outcome(
        &self,
        h: &Health,
        now: u64,
        outcome: Outcome,
        rtt_ns: u64,
        scope: Scope<'_>,
    ) {
        match self {
            // The slowness term: a success's RTT goes into the node's estimate, and a change of its
            // slowness code refreshes the scan word as a change of penalty does. Forgiveness reads when
            // the call was sent (`now - rtt_ns`): a call sent before the node's last failure does not
            // forgive it.
            #[cfg(feature = "slow")]
            Prepared::Lowest(p) if p.slow != 0.0 => {
                let moved =
                    outcome == Outcome::Success && h.note_rtt(p, now, rtt_ns, scope.fastest);
                if h.record_decay(p, now, outcome, now.saturating_sub(rtt_ns)) || moved {
                    h.refresh(self, now, scope);
                }
            }
            // Without the term, its own arm: testing `slow` inside one arm cost every release of the
            // default some 7 instructions (894 against 887 per pair at 3 nodes).
            #[cfg(feature = "decay")]
            Prepared::Lowest(p) => {
                if h.record_decay(p, now, outcome, now.saturating_sub(rtt_ns)) {
                    h.refresh(self, now, scope);
                }
            }
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            _ => h.record(self, now, outcome, scope),
        }
    }

    /// Recomputes `h`'s cached value ([`Health::refresh`] with the configured family); not generic, as
    /// [`record_outcome`](Self::record_outcome).
    pub(crate) fn refresh_cache(&self, h: &Health, now: u64, scope: Scope<'_>) {
        h.refresh(self, now, scope);
    }

    /// What the limiter is told of `outcome`: a sample marked dropped (`Some(true)`), a success sample
    /// (`Some(false)`), or nothing; each family says which (see [`Outcome`]).
    #[inline]
    pub(crate) fn limit_reading(&self, outcome: Outcome) -> Option<bool> {
        match self {
            #[cfg(feature = "decay")]
            Prepared::Lowest(_) => lowest::Prepared::limit_reading(outcome),
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Prepared::Weighted(_) => weighted::Prepared::limit_reading(outcome),
        }
    }

    /// The first choice of an acquire, over what the scan words alone say (one load per node); the node
    /// it names may turn out to be full, and the acquire then goes on with [`choose`](Self::choose).
    pub(crate) fn choose_fast(&self, slots: &[NodeSlot], rng: &mut Rng) -> Choice {
        match self {
            // Probation: with that chance, a probe first (see `lowest::probe`).
            #[cfg(feature = "probation")]
            Prepared::Lowest(l) => {
                if l.probe != 0 {
                    if let Some(i) = lowest::probe(slots, rng, l.probe) {
                        return Choice::Try(i);
                    }
                }
                l.choose_fast(slots, rng)
            }
            #[cfg(all(feature = "decay", not(feature = "probation")))]
            Prepared::Lowest(l) => l.choose_fast(slots, rng),
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Prepared::Weighted(w) => w.choose_fast(slots, rng),
        }
    }

    /// Picks the node to try among the nodes with room, or the reason to fail fast.
    pub(crate) fn choose(&self, slots: &[NodeSlot], rng: &mut Rng) -> Choice {
        match self {
            #[cfg(feature = "decay")]
            Prepared::Lowest(_) => lowest::lowest(slots, rng),
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Prepared::Weighted(w) => w.choose(slots, rng),
        }
    }

    /// [`choose`](Self::choose) over the nodes that `skip` does not name, which count as absent: the
    /// family's full rules (no first choice over the scan words), for an acquire that retries elsewhere.
    /// A separate path, so the plain acquire's scans read no exclusion at all.
    pub(crate) fn choose_excluding(
        &self,
        slots: &[NodeSlot],
        rng: &mut Rng,
        skip: impl Fn(&NodeSlot) -> bool,
    ) -> Choice {
        match self {
            #[cfg(feature = "decay")]
            Prepared::Lowest(_) => lowest::lowest_excluding(slots, rng, skip),
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Prepared::Weighted(w) => w.choose_excluding(slots, rng, skip),
        }
    }

    /// Timed probes (the lowest-score family's `probe_after_ns`): the slot the acquire that ran the
    /// rotation of `epoch` tries first, among those the rotation refreshed (see `lowest::Prepared::due`).
    #[cfg(feature = "probation")]
    #[inline]
    pub(crate) fn due(&self, used: &[NodeSlot], now: u64, epoch: u64) -> Option<usize> {
        match self {
            Prepared::Lowest(p) if p.probe_after != 0 => p.due(used, now, epoch),
            _ => None,
        }
    }

    /// Health checks (see `Balancer::due_check`): the slot due for one, claimed; only the lowest-score
    /// family names any.
    #[cfg(feature = "probation")]
    pub(crate) fn due_check(&self, used: &[NodeSlot], now: u64, quiet_ns: u64) -> Option<usize> {
        match self {
            #[cfg(feature = "decay")]
            Prepared::Lowest(p) => p.due_check(used, now, quiet_ns),
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Prepared::Weighted(_) => None,
        }
    }

    /// A health check's answer (see `Balancer::report_check`), recorded and the cached value refreshed;
    /// false (nothing done) in a family that takes no checks.
    #[cfg(feature = "probation")]
    pub(crate) fn report_check(
        &self,
        h: &Health,
        healthy: bool,
        now: u64,
        scope: Scope<'_>,
    ) -> bool {
        match self {
            #[cfg(feature = "decay")]
            Prepared::Lowest(p) => {
                p.report_check(h, healthy, now);
                h.refresh(self, now, scope);
                true
            }
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Prepared::Weighted(_) => false,
        }
    }

    /// The clock's rotation to `now`, with `horizon` the latest date a release could have had under the
    /// rotation it replaces and `epoch` the new clock epoch: the family ages what it caches, and calls
    /// `refresh` on each slot whose cached value must be recomputed.
    #[cfg_attr(not(feature = "decay"), allow(unused_variables))]
    pub(crate) fn rotate(
        &self,
        used: &[NodeSlot],
        now: u64,
        horizon: u64,
        epoch: u64,
        #[cfg(feature = "slow")] fastest: &AtomicU64,
        refresh: impl Fn(&NodeSlot),
    ) {
        match self {
            #[cfg(feature = "slow")]
            Prepared::Lowest(p) => p.rotate(used, now, horizon, epoch, fastest, refresh),
            #[cfg(all(feature = "decay", not(feature = "slow")))]
            Prepared::Lowest(p) => p.rotate(used, now, horizon, epoch, refresh),
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Prepared::Weighted(w) => w.rotate(used, refresh),
        }
    }

    /// The weighted family's recovery floor weight with `active` nodes in rotation, kept in the
    /// balancer's active word; 0 under the lowest-score family, which has no floor.
    #[cfg_attr(
        not(any(feature = "buckets", feature = "ewma")),
        allow(unused_variables)
    )]
    pub(crate) fn floor_weight(&self, active: u32) -> f32 {
        match self {
            #[cfg(feature = "decay")]
            Prepared::Lowest(_) => 0.0,
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Prepared::Weighted(w) => w.floor_weight(active),
        }
    }

    /// The success rate a snapshot reports for a reading: floored where the family floors it (the
    /// weighted family's sticky and average rates), at `floor / active` nodes.
    #[cfg_attr(
        not(any(feature = "buckets", feature = "ewma")),
        allow(unused_variables)
    )]
    pub(crate) fn reported_rate(&self, v: &View, active: u32) -> f64 {
        match self {
            #[cfg(feature = "decay")]
            Prepared::Lowest(_) => v.rate,
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Prepared::Weighted(w) => w.reported_rate(v, active),
        }
    }

    /// A snapshot's weight for a reported success rate: what the weighted family draws by,
    /// `rate ^ weight_exponent`; under the lowest-score family, which draws by no weight, `rate³` (the
    /// cascade's weight of the same rate).
    pub(crate) fn reported_weight(&self, rate: f64) -> f64 {
        match self {
            #[cfg(feature = "decay")]
            Prepared::Lowest(_) => rate * rate * rate,
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Prepared::Weighted(w) => w.weight.of(rate),
        }
    }
}

impl Family for Prepared {
    #[inline(always)]
    fn record(&self, h: &Health, now: u64, outcome: Outcome) -> bool {
        match self {
            #[cfg(feature = "decay")]
            Prepared::Lowest(p) => p.record(h, now, outcome),
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Prepared::Weighted(w) => w.record(h, now, outcome),
        }
    }

    #[inline]
    fn reading(&self, h: &Health, at: u64, scope: Scope<'_>) -> (f32, u64) {
        match self {
            #[cfg(feature = "decay")]
            Prepared::Lowest(p) => p.reading(h, at, scope),
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Prepared::Weighted(w) => w.reading(h, at, scope),
        }
    }

    fn view(&self, h: &Health, now: u64) -> View {
        match self {
            #[cfg(feature = "decay")]
            Prepared::Lowest(p) => p.view(h, now),
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Prepared::Weighted(w) => w.view(h, now),
        }
    }

    #[inline]
    fn absent_units(&self) -> u64 {
        match self {
            #[cfg(feature = "decay")]
            Prepared::Lowest(p) => p.absent_units(),
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Prepared::Weighted(w) => w.absent_units(),
        }
    }

    fn first_word(&self) -> u64 {
        match self {
            #[cfg(feature = "decay")]
            Prepared::Lowest(p) => p.first_word(),
            #[cfg(any(feature = "buckets", feature = "ewma"))]
            Prepared::Weighted(w) => w.first_word(),
        }
    }
}
