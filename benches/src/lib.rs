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
//! The configurations benchmarked are named here, so ids, RESULTS.md and the tests agree. Two bases:
//!
//! - **the new default**, [`Config::default()`] (benchmark name `weir-default`): the lowest-score family
//!   ([`Algorithm::LOWEST_SCORE`]), a CIAD limit with a fast start; and `weir-default-fixed`, the same
//!   with the cascade's fixed limit of 100 ([`default_fixed`]), which tells the limiter's cost from the
//!   rest;
//! - **the cascade**, [`Config::cascade()`] (`weir-cascade-buckets`): 6 buckets of 5 s, the weighted
//!   cascade, a fixed limit of 100; `weir-{draw}-{health}` swaps its draw and its success-rate model
//!   within the weighted family ([`config`]).
//!
//! ```
//! use weir::{balance::Draw, limit::LimitAlgorithm, Config};
//! let names: Vec<&str> = weir_benches::limiters().iter().map(|(n, _)| *n).collect();
//! assert_eq!(names, ["fixed", "aimd", "vegas", "gradient", "gradient2", "ciad", "knee", "windowed"]);
//! // The cascade's pair is `Config::cascade()` exactly; the default pair is `Config::default()` exactly.
//! assert_eq!(weir_benches::config(Draw::Cascade, weir_benches::HEALTHS[0].1), Config::cascade());
//! assert_eq!(weir_benches::bases()[0], ("default", Config::default()));
//! assert_eq!(weir_benches::bases()[1], ("cascade", Config::cascade()));
//! assert!(matches!(weir_benches::default_fixed().limit, LimitAlgorithm::Fixed(f) if f.limit == 100));
//! ```

pub mod floors;
pub mod mutex;
pub mod threads;
pub mod workload;

pub use floors::{Cas, PaddedScan};
pub use mutex::MutexBalancer;
pub use threads::{Crew, RoundTrip};
pub use workload::{Driver, DriverLoad, MutexLoad, WeirLoad, Workload, OUTSTANDING};

use criterion::Criterion;
use std::time::Duration;
use weir::{
    balance::Algorithm, balance::Draw, balance::EwmaHealth, balance::Weighted,
    balance::WeightedHealth, limit::AimdLimit, limit::CiadLimit, limit::FixedLimit,
    limit::Gradient2Limit, limit::GradientLimit, limit::KneeLimit, limit::LimitAlgorithm,
    limit::VegasLimit, limit::WindowedLimit, Config,
};

/// Criterion's settings for every criterion bench here (`hot_path`, `c_abi`, `tower_service`): one set, so
/// that the ratios RESULTS.md takes across benches compare like with like. They keep a full run (about 73
/// benchmarks) under 10 minutes on a 2-core machine; the command line (`--warm-up-time`,
/// `--measurement-time`, `--sample-size`, `--quick`) overrides them.
///
/// ```
/// use criterion::{criterion_group, Criterion};
/// fn nothing(_: &mut Criterion) {}
/// criterion_group! {
///     name = benches;
///     config = weir_benches::criterion_defaults();
///     targets = nothing
/// }
/// ```
pub fn criterion_defaults() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .sample_size(40)
}

/// Node counts of the hot-path benchmarks.
pub const NODE_COUNTS: [usize; 5] = [3, 16, 64, 256, FLEET];
/// The largest fleet benchmarked: only the new default, the cascade and the baselines run over it (the
/// other configurations' rows stop at 256).
pub const FLEET: usize = 1_024;

/// The capacity of the sparse workloads: the most slots a balancer can have ([`weir::balance::MAX_NODES`]).
pub const SPARSE_CAPACITY: usize = weir::balance::MAX_NODES;

/// The EWMA success-rate model benchmarked beside the cascade's buckets: a half-life of 20 outcomes.
pub const EWMA: WeightedHealth = WeightedHealth::Ewma(EwmaHealth { half_life: 20 });

/// The weighted family's draws, by benchmark name (the lowest-score family is benchmarked as the
/// default, see [`bases`]).
pub const DRAWS: [(&str, Draw); 3] = [
    ("cascade", Draw::Cascade),
    ("approx", Draw::CascadeApprox),
    ("pick", Draw::WeightedPick),
];

/// The weighted family's success-rate models, by benchmark name.
pub const HEALTHS: [(&str, WeightedHealth); 2] =
    [("buckets", WeightedHealth::BUCKETS), ("ewma", EWMA)];

/// Every limit algorithm with its defaults, by benchmark name (`Windowed` wraps the default Vegas).
pub fn limiters() -> [(&'static str, LimitAlgorithm); 8] {
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
        ("knee", LimitAlgorithm::Knee(KneeLimit::default())),
        (
            "windowed",
            LimitAlgorithm::Windowed(WindowedLimit::default()),
        ),
    ]
}

/// The config of benchmark `weir-{draw}-{health}`: the cascade ([`Config::cascade()`]) with that draw
/// and success-rate model.
pub fn config(draw: Draw, health: WeightedHealth) -> Config {
    Config {
        algorithm: Algorithm::Weighted(Weighted {
            health,
            draw,
            ..Weighted::CASCADE
        }),
        ..Config::cascade()
    }
}

/// The cascade's fixed limit (100 per node), which [`default_fixed`] puts into the new default.
pub fn cascade_limit() -> LimitAlgorithm {
    Config::cascade().limit
}

/// The new default with the cascade's fixed limit of 100 instead of its CIAD limit (benchmark name
/// `weir-default-fixed`): the default pair less what its limiter costs.
pub fn default_fixed() -> Config {
    Config {
        limit: cascade_limit(),
        ..Config::default()
    }
}

/// The two configurations that the limiter, capacity and multi-thread benchmarks run on, by name: the
/// new default ([`Config::default()`]) and the cascade ([`Config::cascade()`]).
pub fn bases() -> [(&'static str, Config); 2] {
    [
        ("default", Config::default()),
        ("cascade", Config::cascade()),
    ]
}

/// `base` with `limit` in place of its own: the config of benchmark `limiter/{base}-{limit}`.
pub fn with_limit(base: Config, limit: LimitAlgorithm) -> Config {
    Config { limit, ..base }
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
