//! The balancer's clock: the epoch its acquires have reached, which dates releases and paces the
//! rotation of the nodes' cached values.
//!
//! The core reads no clock: every call brings its `now`. The balancer keeps, in one word, the first
//! nanosecond of the epoch its cached values were last rotated to (the *rotation word*). Acquires move it
//! (`due`, then the balancer's rotation claims the move with `claim`); releases read it to date
//! themselves no later than a moment after the newest acquire (`horizon`); the nodes' refreshes read it
//! to take their readings no earlier than the rotation (`Health::refresh`). An epoch's width is the
//! algorithm's (`Algorithm::clock_ns`): the bucket width of the cascade's window, a quarter of the
//! shorter half-life of the lowest-score family's counters.

use crate::error::ConfigError;
use crate::internal::div::Divisor;
use crate::internal::sync::{AtomicU64, Ordering::*};

/// The clock: the rotation word and the epoch's width.
#[derive(Debug)]
pub(crate) struct Clock {
    /// The first nanosecond of the epoch the cached values were last rotated to. Read by every acquire,
    /// written once per epoch.
    rotation: AtomicU64,
    /// The epoch's width, for `now / width` without a division instruction.
    width: Divisor,
    width_ns: u64,
    /// How far past the clock's epoch start a release is dated at the latest: to the last nanosecond of
    /// the epoch after the clock's, `2 * width - 1` (see [`Balancer::release`](crate::Balancer::release)).
    reach: u64,
}

impl Clock {
    /// What [`new`](Self::new) replaces once the configuration is checked: epochs of 1 ns.
    pub(crate) fn unset() -> Clock {
        Clock {
            rotation: AtomicU64::new(0),
            width: Divisor::ONE,
            width_ns: 1,
            reach: 1,
        }
    }

    /// A clock with epochs of `width_ns`, at epoch 0; `width_ns` at least 1 (the algorithm's checks
    /// ensure it).
    pub(crate) fn new(width_ns: u64) -> Result<Clock, ConfigError> {
        Ok(Clock {
            rotation: AtomicU64::new(0),
            width: Divisor::new(width_ns).ok_or(ConfigError::BucketWidth)?,
            width_ns,
            reach: width_ns.saturating_mul(2) - 1,
        })
    }

    /// The rotation word, which the nodes' refreshes read (see `health.rs`).
    #[inline]
    pub(crate) fn word(&self) -> &AtomicU64 {
        &self.rotation
    }

    /// The rotation word read now, if an acquire at `now` must move the clock: `now` outside
    /// `[start - width, start + width)`. The cached values are kept for one epoch, `[start, start +
    /// width)`; an acquire up to one epoch earlier trusts them too, so that a thread whose clock reading
    /// is up to one epoch older than another's does not rotate them back (see `Balancer::rotate`).
    #[inline]
    pub(crate) fn due(&self, now: u64) -> Option<u64> {
        // Relaxed: a rotation publishes through the caches it refreshes (see `Balancer::rotate`); this
        // load only decides whether one is due.
        let start = self.rotation.load(Relaxed);
        let due =
            now >= start.saturating_add(self.width_ns) || now < start.saturating_sub(self.width_ns);
        due.then_some(start)
    }

    /// Moves the clock from `seen` (what [`due`](Self::due) read) to the epoch of `now`; returns the
    /// new epoch's number, or `None` when there is nothing to do: the epoch is `seen`'s, or another
    /// acquire moved the clock first.
    #[inline]
    pub(crate) fn claim(&self, now: u64, seen: u64) -> Option<u64> {
        let epoch = self.width.epoch(now);
        // `epoch * width <= now`: the product cannot overflow.
        let start = epoch.saturating_mul(self.width_ns);
        // AcqRel: orders the refreshes that follow after the claim, and the claim after the rotation it
        // replaces.
        if start == seen
            || self
                .rotation
                .compare_exchange(seen, start, AcqRel, Relaxed)
                .is_err()
        {
            return None;
        }
        Some(epoch)
    }

    /// The latest `now` a release is dated at while the rotation word is `rotation`: the end of the epoch
    /// after the rotation's (see [`Balancer::release`](crate::Balancer::release)).
    #[inline]
    pub(crate) fn horizon(&self, rotation: u64) -> u64 {
        rotation.saturating_add(self.reach)
    }

    /// [`horizon`](Self::horizon) of the rotation word as it is now.
    #[inline]
    pub(crate) fn horizon_now(&self) -> u64 {
        // Relaxed: the clock is an estimate; a release that reads an older rotation dates itself no
        // later than that rotation allowed, at most one epoch earlier than the newest would.
        self.horizon(self.rotation.load(Relaxed))
    }
}
