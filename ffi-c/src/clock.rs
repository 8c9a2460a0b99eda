//! The library's clock: the monotonic nanoseconds every `now_ns` and `deadline_ns` may come from.

use crate::boundary::guard_value;
use weir_core::rt::monotonic_now;

/// Monotonic nanoseconds since the first call in this process (the core's clock, the one
/// `weir_balancer_acquire_wait` uses).
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub extern "C" fn weir_now_ns() -> u64 {
    guard_value(0, monotonic_now)
}
