//! [The cascade's later variant](crate#vocabulary) ([`EwmaHealth`]): one exponentially weighted
//! success average per node.

use super::cascade_reading;
use crate::balance::health::{Health, View};
use crate::balance::outcome::Outcome;
use crate::error::ConfigError;
use crate::internal::sync::Ordering::*;

/// The balancer's clock epoch under the average model, which has no buckets of its own: the clock that
/// dates releases keeps epochs of this width, as the cascade's 5 s buckets would (see
/// [`Balancer::release`](crate::Balancer::release)).
pub const CLOCK_EPOCH_NS: u64 = 5_000_000_000;

/// [The cascade's later variant](crate#vocabulary): one exponentially weighted success average
/// per node (see [`WeightedHealth::Ewma`](super::WeightedHealth::Ewma)). Each outcome moves the average toward
/// 1 (success) or 0 (failure) by `1 - 2^(-1/half_life)`, so an outcome's influence halves every
/// `half_life` outcomes (like Finagle's success-rate EMA, the half-life is counted in outcomes, which
/// makes the average exact under concurrency: each outcome is one compare-and-swap). A fresh node starts
/// at 1.0; the rate is floored at `floor / active_nodes` so a node that failed completely keeps a slight
/// chance to show it recovered.
///
/// ```
/// use weir::balance::{Algorithm, Draw, EwmaHealth, Weighted, WeightedHealth};
/// assert_eq!(WeightedHealth::EWMA, WeightedHealth::Ewma(EwmaHealth { half_life: 32 }));
/// let pick = Weighted { health: WeightedHealth::EWMA, draw: Draw::WeightedPick, ..Weighted::CASCADE };
/// let config = weir::Config { algorithm: Algorithm::Weighted(pick), ..weir::Config::cascade() };
/// assert!(config.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EwmaHealth {
    /// Outcomes after which an outcome's influence has halved (at least 1).
    pub half_life: u32,
}

impl EwmaHealth {
    /// A half-life of 32 outcomes (the value the Python and C layers start from).
    pub const DEFAULT: EwmaHealth = EwmaHealth { half_life: 32 };

    /// Checks the half-life and computes the step.
    pub(crate) fn prepare_into(&self, out: &mut Prepared) -> Result<(), ConfigError> {
        if self.half_life == 0 {
            return Err(ConfigError::HalfLife);
        }
        out.alpha = 1.0 - libm::exp2(-1.0 / f64::from(self.half_life));
        Ok(())
    }

    #[cfg(test)]
    pub(crate) fn prepare(&self) -> Result<Prepared, ConfigError> {
        let mut p = Prepared { alpha: 0.0 };
        self.prepare_into(&mut p)?;
        Ok(p)
    }
}

impl Default for EwmaHealth {
    /// [`EwmaHealth::DEFAULT`].
    fn default() -> Self {
        EwmaHealth::DEFAULT
    }
}

/// The model's runtime form.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    /// Step toward each new outcome: `1 - 2^(-1/half_life)`.
    pub(crate) alpha: f64,
}

impl Health {
    /// Records `outcome` as the cascade reads it; returns whether the cached weight must be recomputed.
    #[inline(always)]
    pub(super) fn record_ewma(&self, e: &Prepared, outcome: Outcome) -> bool {
        let Some(success) = cascade_reading(outcome) else {
            return false;
        };
        self.step_ewma(e.alpha, success);
        true
    }

    /// Moves the average toward the outcome by `alpha` (one compare-and-swap, so exact under concurrency).
    #[inline]
    fn step_ewma(&self, alpha: f64, success: bool) {
        let target = if success { 1.0 } else { 0.0 };
        // Relaxed CAS: the average is a standalone statistic (see sync.rs).
        let _ = self.ring[0].fetch_update(Relaxed, Relaxed, |bits| {
            let avg = f64::from_bits(bits);
            Some((avg + alpha * (target - avg)).to_bits())
        });
        if self.last.load(Relaxed) == 0 {
            self.last.store(1, Relaxed);
        }
    }

    /// The average as a reading: always subject to the recovery floor.
    #[inline]
    pub(super) fn view_ewma(&self) -> View {
        View {
            // Relaxed: a standalone statistic.
            rate: f64::from_bits(self.ring[0].load(Relaxed)),
            floored: true,
            has_data: self.last.load(Relaxed) != 0,
            ..View::EMPTY
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::testing::*;
    use super::super::WeightedHealth;
    use super::*;

    #[test]
    fn ewma_moves_by_half_life() {
        let p = prepared(WeightedHealth::Ewma(EwmaHealth { half_life: 1 }));
        let h = Health::new();
        let words = Words::new(0, 0.0);
        h.reset(&p);
        assert_eq!(h.view(&p, 0).rate, 1.0);
        h.record(&p, 0, Outcome::Failure, words.scope());
        assert_eq!(h.view(&p, 0).rate, 0.5);
        h.record(&p, 0, Outcome::Failure, words.scope());
        assert_eq!(h.view(&p, 0).rate, 0.25);
        h.record(&p, 9, Outcome::Success, words.scope());
        assert_eq!(h.view(&p, 0).rate, 0.625);
        assert_eq!(h.cached(), 0.625f64.powi(3) as f32 as f64);
        // The average is floored: with a floor weight of 0.5 the scan weight is 0.5.
        h.refresh(&p, 9, Words::new(0, 0.5).scope());
        assert_eq!(h.cached(), 0.5);
    }

    #[test]
    fn step_from_half_life() {
        assert_eq!(EwmaHealth { half_life: 1 }.prepare().unwrap().alpha, 0.5);
        assert_eq!(
            EwmaHealth { half_life: 0 }.prepare().err(),
            Some(ConfigError::HalfLife)
        );
    }
}
