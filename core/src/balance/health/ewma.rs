//! The seed author's later variant: one exponentially weighted success average per node.

use super::{Health, View};
use crate::internal::sync::Ordering::*;

impl Health {
    /// Moves the average toward the outcome by `alpha` (one compare-and-swap, so exact under concurrency).
    pub(super) fn record_ewma(&self, alpha: f64, success: bool) {
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
    pub(super) fn view_ewma(&self) -> View {
        View {
            // Relaxed: a standalone statistic.
            rate: f64::from_bits(self.ring[0].load(Relaxed)),
            floored: true,
            newest: 0,
            window: (0, 0),
            sticky: (0, 0),
            has_data: self.last.load(Relaxed) != 0,
            decayed: (0.0, 0.0, 0.0),
        }
    }
}
