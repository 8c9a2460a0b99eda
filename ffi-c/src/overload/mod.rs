//! Overload protection: the server's shedder (with its promises), the CPU sampler that feeds it, and the
//! client's adaptive throttle (per criticality, with a retry budget) and the retry budget shared by a
//! balancer's callers.
//!
//! | file | what |
//! |---|---|
//! | `shedder.rs` | `weir_shedder`, its configuration, promises and statistics |
//! | `cpu.rs` | `weir_cpu_sampler`: the process's CPU usage from cgroups or `/proc/stat` |
//! | `throttle.rs` | `weir_throttle`, its criticalities, retry verdicts and statistics |
//! | `retry_budget.rs` | `weir_retry_budget`, its configuration and statistics |
//! | here | the window's bucket bound |

// The header lists items in module order: the shedder, then the sampler that feeds it, then the
// throttle, then the retry budget. (rustfmt sorts adjacent `mod` lines: the blank lines keep this order.)
mod shedder;

mod cpu;

mod throttle;

mod retry_budget;

pub use cpu::*;
pub use retry_budget::*;
pub use shedder::*;
pub use throttle::*;

use weir_core::overload::MAX_WINDOW_BUCKETS;

/// The most buckets a shedder's or throttle's rolling window may have.
pub const WEIR_MAX_WINDOW_BUCKETS: u32 = 128;
const _: () = assert!(WEIR_MAX_WINDOW_BUCKETS as usize == MAX_WINDOW_BUCKETS);
