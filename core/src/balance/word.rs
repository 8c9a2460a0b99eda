//! The words the acquire scan reads, one per node each: the control word (admission's state) and the scan
//! word (the algorithm's cached value as an integer). Both formats live here, below the families, the
//! slot and the scans that read and write them.
//!
//! # The control word
//! `in_flight` (24 bits) | `limit` (24 bits) | `generation` (13 bits) | `state` (3 bits): everything
//! admission must see at once. A lease is granted by one compare-and-swap that increments `in_flight`
//! only while the state is active and `in_flight < limit`, so a limit is never overshot. A slot is reused
//! for a new node only once every lease of its previous occupant has been released (`in_flight == 0`), so
//! a late release can never touch the counters of the new occupant; the generation additionally rejects
//! leases forged through the raw-parts interface of the bindings.
//!
//! # The scan word
//! The family's cached value in a form the scan adds with one integer instruction: in the weighted
//! family the node's weight in units of `2^-UNIT_SHIFT` (see [`units_of`]), in the lowest-score family
//! its penalty in fixed point with [`P_FRACTION`] fractional bits (see [`fixed`]), and [`SCAN_ABSENT`]
//! for a slot without an active node in the lowest-score family, so that its fast scan, which reads no
//! state, passes it over.

pub(crate) const INFLIGHT_BITS: u32 = 24;
pub(crate) const FIELD_MASK: u64 = (1 << INFLIGHT_BITS) - 1;
const LIMIT_SHIFT: u32 = 24;
const GEN_SHIFT: u32 = 48;
pub(crate) const GEN_MASK: u64 = (1 << 13) - 1;
const STATE_SHIFT: u32 = 61;

/// Slot states. Only the adder that claimed a slot moves it out of `CLAIMED`, `REGISTERING` or `KILLED`,
/// except that a competing adder of the same id may move `REGISTERING` to `KILLED`.
pub(crate) const VACANT: u64 = 0;
pub(crate) const CLAIMED: u64 = 1;
pub(crate) const REGISTERING: u64 = 2;
pub(crate) const KILLED: u64 = 3;
pub(crate) const ACTIVE: u64 = 4;
pub(crate) const LAME_DUCK: u64 = 5;

#[inline]
pub(crate) const fn inflight(c: u64) -> u64 {
    c & FIELD_MASK
}
#[inline]
pub(crate) const fn limit(c: u64) -> u64 {
    (c >> LIMIT_SHIFT) & FIELD_MASK
}
#[inline]
pub(crate) const fn generation(c: u64) -> u64 {
    (c >> GEN_SHIFT) & GEN_MASK
}
#[inline]
pub(crate) const fn state(c: u64) -> u64 {
    c >> STATE_SHIFT
}
#[inline]
pub(crate) const fn is_member(c: u64) -> bool {
    matches!(state(c), ACTIVE | LAME_DUCK)
}
#[inline]
pub(crate) const fn pack(state: u64, generation: u64, limit: u64, inflight: u64) -> u64 {
    (state << STATE_SHIFT)
        | ((generation & GEN_MASK) << GEN_SHIFT)
        | ((limit & FIELD_MASK) << LIMIT_SHIFT)
        | (inflight & FIELD_MASK)
}
#[inline]
pub(crate) const fn with_state(c: u64, s: u64) -> u64 {
    (c & !(0b111 << STATE_SHIFT)) | (s << STATE_SHIFT)
}
#[inline]
pub(crate) const fn with_limit(c: u64, l: u64) -> u64 {
    (c & !(FIELD_MASK << LIMIT_SHIFT)) | ((l & FIELD_MASK) << LIMIT_SHIFT)
}

/// Scan units per unit of weight, as a power of two: a weight of 1.0 is `2^46` units, so the units of
/// [`MAX_NODES`](crate::balance::MAX_NODES) nodes sum to at most `2^62` and never overflow (checked
/// where both are known, in `config.rs`).
pub(crate) const UNIT_SHIFT: u32 = 46;

/// A weight in scan units (`weight * 2^UNIT_SHIFT`, rounded down; weights lie in [0, 1]).
#[cfg_attr(not(any(feature = "buckets", feature = "ewma")), allow(dead_code))]
#[inline]
pub(crate) fn units_of(weight: f32) -> u64 {
    // Exact: an `f32` times a power of two is exact in `f64`, and at most `2^46` converts exactly.
    (f64::from(weight) * (1u64 << UNIT_SHIFT) as f64) as u64
}

/// Fractional bits of a penalty in the scan word.
#[cfg_attr(not(feature = "decay"), allow(dead_code))]
pub(crate) const P_FRACTION: u32 = 16;
/// The largest penalty the scan word holds (`2^32` in-flight requests' worth): a larger one is kept at it.
#[cfg_attr(not(feature = "decay"), allow(dead_code))]
pub(crate) const P_MAX: f64 = 4_294_967_296.0;

/// A penalty in the scan word's fixed point, rounded down (a penalty below `2^-16` is 0, so nodes whose
/// failures have nearly faded tie with clean ones again).
#[cfg_attr(not(feature = "decay"), allow(dead_code))]
#[inline]
pub(crate) fn fixed(p: f32) -> u64 {
    // Exact: `p <= 2^32`, so `p * 2^16 <= 2^48` converts exactly.
    (f64::from(p) * f64::from(1u32 << P_FRACTION)) as u64
}

/// The lowest-score family's slowness code in the scan word: bits 49..56, above the penalty (below 2^49,
/// see [`lowest_units`]). A node's calls in flight count `1 + code / 4` times each in its score (see
/// `lowest/pace.rs`); code 0, the node is not slow, and the score is `in_flight + penalty` exactly.
#[cfg(feature = "slow")]
pub(crate) const SLOW_SHIFT: u32 = 49;
/// The slowness code's bits in the scan word.
#[cfg(feature = "slow")]
pub(crate) const SLOW_BITS: u64 = 0xFF << SLOW_SHIFT;
/// One step of the slowness code, in the fixed point of a score: a quarter of a call in flight.
#[cfg(feature = "slow")]
pub(crate) const SLOW_STEP: u32 = P_FRACTION - 2;

/// The lowest-score family's scan word of an active node: its penalty in fixed point (`fixed`) and its
/// slowness code. A node whose calls count `m = 1 + code / 4` times scores `(in_flight + 1) * m - 1 +
/// penalty` (the cost that tower's and Finagle's peak EWMA give, `(in_flight + 1) * latency`, over the
/// fastest node's latency, less 1 so that a node that is not slow scores `in_flight + penalty`): the
/// `m - 1` is added here, the product by [`score`].
#[cfg(feature = "slow")]
#[inline]
pub(crate) fn lowest_units(penalty: u64, code: u64) -> u64 {
    // Below 2^49: a penalty of at most 2^48 plus at most 255 * 2^14.
    (penalty + (code << SLOW_STEP)) | (code << SLOW_SHIFT)
}

/// A node's score in the lowest-score family, in fixed point: `in_flight * m` plus the scan word's
/// penalty part (see [`lowest_units`]), with `m` in fixed point from its slowness code. Below 2^50 for
/// every active node (`in_flight < 2^24`, `m < 2^22`); the absent scan word, which holds no code, keeps
/// its key above every other.
#[cfg(feature = "slow")]
#[inline(always)]
pub(crate) fn score(inflight: u64, units: u64) -> u64 {
    let code = (units & SLOW_BITS) >> SLOW_SHIFT;
    inflight * ((1 << P_FRACTION) + (code << SLOW_STEP)) + (units & !SLOW_BITS)
}

/// [`score`] without the `slow` feature, where no scan word holds a slowness code: `in_flight *
/// 2^P_FRACTION` plus the scan word's penalty.
#[cfg(not(feature = "slow"))]
#[cfg_attr(not(feature = "decay"), allow(dead_code))]
#[inline(always)]
pub(crate) fn score(inflight: u64, units: u64) -> u64 {
    (inflight << P_FRACTION) + units
}

/// The scan word of a slot without an active node in the lowest-score family: above every score its
/// scans form (`in_flight * 2^P_FRACTION + penalty`, below `2^49`) and above their flags (see
/// `lowest/scan.rs`), so that its fast scan passes the slot over without reading its state.
#[cfg_attr(not(feature = "decay"), allow(dead_code))]
pub(crate) const SCAN_ABSENT: u64 = 1 << 62;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn control_word_round_trips() {
        let c = pack(ACTIVE, 0x1ABC, 200, 17);
        assert_eq!(
            (state(c), generation(c), limit(c), inflight(c)),
            (ACTIVE, 0x1ABC, 200, 17)
        );
        let c = with_limit(with_state(c, LAME_DUCK), FIELD_MASK);
        assert_eq!(
            (state(c), generation(c), limit(c), inflight(c)),
            (LAME_DUCK, 0x1ABC, FIELD_MASK, 17)
        );
        assert!(is_member(c) && !is_member(with_state(c, VACANT)));
    }

    #[test]
    fn scan_units_are_the_weight_rounded_down() {
        assert_eq!(units_of(1.0), 1 << UNIT_SHIFT);
        assert_eq!(units_of(0.0), 0);
        assert_eq!(units_of(0.5), 1 << (UNIT_SHIFT - 1));
        // A weight below one unit is 0 units; the draw then uses the exact weights (see
        // `weighted/draw.rs`).
        assert_eq!(units_of(1e-15), 0);
        let w = 0.123_456_79f32;
        assert_eq!(units_of(w), (f64::from(w) * 2f64.powi(46)).floor() as u64);
    }

    #[test]
    #[cfg(feature = "slow")]
    fn a_slow_nodes_calls_count_as_its_code_says() {
        let one = 1u64 << P_FRACTION;
        // Code 0: `in_flight + penalty`, as without the term.
        assert_eq!(score(3, lowest_units(one / 2, 0)), 3 * one + one / 2);
        // Code 16, five times: `(in_flight + 1) * 5 - 1 + penalty`.
        for inflight in [0, 1, 7] {
            assert_eq!(
                score(inflight, lowest_units(one, 16)),
                ((inflight + 1) * 5 - 1) * one + one
            );
        }
        // The largest code and penalty stay below the scans' flags, and the absent word above them.
        assert!(score(FIELD_MASK, lowest_units(1 << 48, 0xFF)) < 1 << 50);
        assert!(score(FIELD_MASK, SCAN_ABSENT) >= SCAN_ABSENT);
    }

    #[test]
    fn penalties_in_fixed_point() {
        assert_eq!(fixed(1.5), 3 << (P_FRACTION - 1));
        assert_eq!(fixed(1e-6), 0);
        assert_eq!(fixed(P_MAX as f32), 1 << 48);
    }
}
