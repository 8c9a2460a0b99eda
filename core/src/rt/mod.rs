//! `std` conveniences: a monotonic clock, per-thread random generators, guards that release what they
//! hold, and heap-allocated slot storage. Nothing here is needed to use the core; it saves `std` users the
//! plumbing.
//!
//! | file | what |
//! |---|---|
//! | `clock.rs` | [`monotonic_now`], the `now` every core call takes |
//! | `rng.rs` | [`with_thread_rng`] and [`thread_seed`]: one generator per thread and balancer seed |
//! | `guard.rs` | [`LeaseGuard`], [`OwnedLeaseGuard`] and [`PromiseGuard`]: release on completion or drop |
//! | `heap.rs` | [`HeapBalancer`]: a balancer over a boxed slice of slots |

mod clock;
mod guard;
mod heap;
mod rng;
pub(crate) mod wait;

pub use clock::monotonic_now;
pub use guard::{LeaseGuard, OwnedLeaseGuard, PromiseGuard};
pub use heap::HeapBalancer;
pub use rng::{thread_seed, with_thread_rng};
