//! Waiting for room: a bounded FIFO of callers that wait for a lease (blocking or async).
//! (Skeleton: to be completed.)

use crate::balance::{Balancer, NodeSlot};
use crate::internal::sync::{AtomicU64, Ordering::*};

/// The balancer's queue of waiting callers.
#[derive(Debug)]
pub(crate) struct Waiters {
    count: AtomicU64,
    bound: u32,
}

impl Waiters {
    pub(crate) fn new(bound: u32) -> Self {
        Waiters {
            count: AtomicU64::new(0),
            bound,
        }
    }
}

impl<S: AsRef<[NodeSlot]>> Balancer<S> {
    /// Serves the waiting callers after a slot came free; one load when nobody waits.
    #[inline]
    pub(crate) fn wake_waiters(&self) {
        if self.waiters.count.load(SeqCst) == 0 {
            return;
        }
        let _ = self.waiters.bound;
    }
}
