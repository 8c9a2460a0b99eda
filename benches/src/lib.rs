//! The weir benchmark suite's library: the workloads, the baselines written for the benchmarks, the floors
//! and the multi-thread harness. The criterion benchmark (`benches/hot_path.rs`) and the instruction
//! counter (`benches/pairs.rs`, run under valgrind by `cargo xtask bench --instructions`) both drive
//! these, so the time and the instruction count of a benchmark id measure the same code.
//!
//! - [`workload`]: one *pair* (acquire + release) with a window of leases, mixed outcomes, virtual time;
//!   [`WeirLoad`], [`MutexLoad`], [`DriverLoad`] (the harness alone).
//! - [`mutex`]: [`MutexBalancer`], weir's algorithm behind one `Mutex<Vec<..>>` (a baseline, not product).
//! - [`floors`]: what no balancer can beat on this machine: one uncontended CAS, a padded scan of `n`
//!   atomics, one random draw.
//! - [`threads`]: several threads on one balancer ([`Crew`]) and the core-to-core round trip
//!   ([`RoundTrip`]) that makes a multi-thread result readable.
//!
//! The configurations benchmarked are named here, so ids, RESULTS.md and the tests agree.
//!
//! ```
//! let names: Vec<&str> = weir_benches::limiters().iter().map(|(n, _)| *n).collect();
//! assert_eq!(names, ["fixed", "aimd", "vegas", "gradient", "gradient2", "ciad", "windowed"]);
//! ```

pub mod floors;
pub mod mutex;
pub mod threads;
pub mod workload;

pub use floors::{Cas, PaddedScan};
pub use mutex::MutexBalancer;
pub use threads::{Crew, RoundTrip};
pub use workload::{Driver, DriverLoad, MutexLoad, WeirLoad, Workload, OUTSTANDING};

use weir::{
    balance::HealthModel, balance::Policy, limit::AimdLimit, limit::CiadLimit, limit::FixedLimit,
    limit::Gradient2Limit, limit::GradientLimit, limit::LimitAlgorithm, limit::VegasLimit,
    limit::WindowedLimit, Config,
};

/// Node counts of the hot-path benchmarks.
pub const NODE_COUNTS: [usize; 4] = [3, 16, 64, 256];

/// The capacity of the sparse workloads: the most slots a balancer can have ([`weir::balance::MAX_NODES`]).
pub const SPARSE_CAPACITY: usize = weir::balance::MAX_NODES;

/// The EWMA health model benchmarked beside the default buckets: a half-life of 20 outcomes.
pub const EWMA: HealthModel = HealthModel::Ewma { half_life: 20 };

/// The selection policies, by benchmark name.
pub const POLICIES: [(&str, Policy); 3] = [
    ("cascade", Policy::Cascade),
    ("approx", Policy::CascadeApprox),
    ("pick", Policy::WeightedPick),
];

/// The health models, by benchmark name.
pub const HEALTHS: [(&str, HealthModel); 2] =
    [("buckets", HealthModel::SEED_BUCKETS), ("ewma", EWMA)];

/// Every limit algorithm with its defaults, by benchmark name (`Windowed` wraps the default Vegas).
pub fn limiters() -> [(&'static str, LimitAlgorithm); 7] {
    [
        ("fixed", LimitAlgorithm::Fixed(FixedLimit::default())),
        ("aimd", LimitAlgorithm::Aimd(AimdLimit::default())),
        ("vegas", LimitAlgorithm::Vegas(VegasLimit::default())),
        (
            "gradient",
            LimitAlgorithm::Gradient(GradientLimit::default()),
        ),
        (
            "gradient2",
            LimitAlgorithm::Gradient2(Gradient2Limit::default()),
        ),
        ("ciad", LimitAlgorithm::Ciad(CiadLimit::default())),
        (
            "windowed",
            LimitAlgorithm::Windowed(WindowedLimit::default()),
        ),
    ]
}

/// The config of benchmark `weir-{policy}-{health}`: the defaults with that policy and health model.
pub fn config(policy: Policy, health: HealthModel) -> Config {
    Config {
        policy,
        health,
        ..Config::default()
    }
}

/// Bytes of one node slot and of a weir balancer with `n` slots (the struct plus its boxed slots, the
/// only allocation).
///
/// ```
/// let (slot, total) = weir_benches::weir_memory(64);
/// assert_eq!(slot % 128, 0);
/// assert!(total > 64 * slot);
/// ```
pub fn weir_memory(n: usize) -> (usize, usize) {
    let slot = std::mem::size_of::<weir::NodeSlot>();
    (slot, std::mem::size_of::<weir::HeapBalancer>() + n * slot)
}
