//! The hot path: one acquire + release pair, weir against the plain Mutex baseline of the same algorithm
//! ([`weir_benches::MutexBalancer`]), for 3, 16 and 64 nodes.
//!
//! Benchmark ids: `acquire_release/weir/{n}` and `acquire_release/mutex/{n}`; criterion writes each one's
//! estimates to `target/criterion/acquire_release/{weir,mutex}/{n}/new/estimates.json`. One iteration is one
//! pair.
//!
//! The workload is the same for both: a ring of [`OUTSTANDING`] leases (each iteration acquires one and
//! releases the oldest), virtual time advancing [`STEP_NS`] per pair (buckets rotate every 5000 pairs),
//! and mixed outcomes: every tenth node (node 0, 10, 20, ...) fails 30% of its calls, the others always
//! succeed, so the nodes' weights differ. Decisions and outcomes come from seeded generators. With 8 leases
//! outstanding and a limit of 100 per node an acquire can never be refused; one that is panics.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use fastrand::Rng;
use std::time::Duration;
use weir::{Balancer, Config, HeapBalancer, Lease, Outcome};
use weir_benches::MutexBalancer;

/// Leases held at once.
const OUTSTANDING: usize = 8;
/// Virtual time per acquire + release pair: 1 ms.
const STEP_NS: u64 = 1_000_000;
/// Failure probability of a failing node.
const FAIL_P: f64 = 0.3;

/// Generators, clock and failure profile shared by both workloads.
struct Driver {
    pick: Rng,
    outcome: Rng,
    now: u64,
    failing: Vec<bool>,
}

impl Driver {
    fn new(n: usize) -> Self {
        Driver {
            pick: Rng::with_seed(0x5EED_0001),
            outcome: Rng::with_seed(0x5EED_0002),
            now: 1,
            failing: (0..n).map(|i| i % 10 == 0).collect(),
        }
    }

    fn tick(&mut self) -> u64 {
        self.now += STEP_NS;
        self.now
    }

    /// Whether a call to `node` succeeds.
    fn succeeds(&mut self, node: usize) -> bool {
        !(self.failing[node] && self.outcome.f64() < FAIL_P)
    }
}

/// weir with the default configuration over nodes `0..n`.
struct WeirLoad {
    balancer: HeapBalancer,
    ring: [Option<Lease>; OUTSTANDING],
    next: usize,
    d: Driver,
}

impl WeirLoad {
    fn new(n: usize) -> Self {
        let balancer = Balancer::with_capacity(n, Config::default()).expect("valid config");
        for id in 0..n as u64 {
            balancer.add(id).expect("capacity for every node");
        }
        let mut load = WeirLoad {
            balancer,
            ring: Default::default(),
            next: 0,
            d: Driver::new(n),
        };
        for slot in 0..OUTSTANDING {
            let lease = load.acquire();
            load.ring[slot] = Some(lease);
        }
        load
    }

    #[inline]
    fn acquire(&mut self) -> Lease {
        match self.balancer.acquire(self.d.now, &mut self.d.pick) {
            Ok(lease) => lease,
            Err(e) => panic!(
                "weir refused an acquire ({e:?}) with {OUTSTANDING} leases outstanding and a limit of 100"
            ),
        }
    }

    /// One acquire + release pair.
    #[inline]
    fn step(&mut self) {
        let now = self.d.tick();
        let lease = self.acquire();
        let old = self.ring[self.next]
            .replace(lease)
            .expect("the ring is always full");
        self.next = (self.next + 1) % OUTSTANDING;
        let outcome = if self.d.succeeds(old.node_id() as usize) {
            Outcome::Success
        } else {
            Outcome::Failure
        };
        self.balancer
            .release(old, outcome, now)
            .expect("weir rejected a valid release");
    }
}

/// The Mutex baseline over nodes `0..n`.
struct MutexLoad {
    balancer: MutexBalancer,
    ring: [usize; OUTSTANDING],
    next: usize,
    d: Driver,
}

impl MutexLoad {
    fn new(n: usize) -> Self {
        let mut load = MutexLoad {
            balancer: MutexBalancer::new(n),
            ring: [0; OUTSTANDING],
            next: 0,
            d: Driver::new(n),
        };
        for slot in 0..OUTSTANDING {
            load.ring[slot] = load.acquire();
        }
        load
    }

    #[inline]
    fn acquire(&mut self) -> usize {
        match self.balancer.acquire(self.d.now, &mut self.d.pick) {
            Some((node, _)) => node,
            None => panic!(
                "the mutex baseline refused an acquire with {OUTSTANDING} leases outstanding and a limit of 100"
            ),
        }
    }

    /// One acquire + release pair.
    #[inline]
    fn step(&mut self) {
        let now = self.d.tick();
        let node = self.acquire();
        let old = std::mem::replace(&mut self.ring[self.next], node);
        self.next = (self.next + 1) % OUTSTANDING;
        let success = self.d.succeeds(old);
        self.balancer.release(old, success, now);
    }
}

fn acquire_release(c: &mut Criterion) {
    let mut group = c.benchmark_group("acquire_release");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30)
        .throughput(Throughput::Elements(1));
    for n in [3usize, 16, 64] {
        let mut weir = WeirLoad::new(n);
        group.bench_function(BenchmarkId::new("weir", n), |b| b.iter(|| weir.step()));
        let mut mutex = MutexLoad::new(n);
        group.bench_function(BenchmarkId::new("mutex", n), |b| b.iter(|| mutex.step()));
    }
    group.finish();
}

criterion_group!(benches, acquire_release);
criterion_main!(benches);
