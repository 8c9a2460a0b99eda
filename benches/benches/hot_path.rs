//! The hot path: acquire + release pairs of weir against its baselines and floors, in one run.
//!
//! One iteration is one pair of the workload in `weir_benches::workload` (a window of 8 leases, scripted
//! virtual time, mixed outcomes, per-node failure rates so weights differ; any refused acquire panics).
//! Benchmark ids (criterion writes each one's estimates to `<target>/criterion/<id>/new/estimates.json`):
//!
//! - `pair/weir-{cascade,approx,pick}-{buckets,ewma}/{3,16,64,256}`: weir, each policy and health model;
//! - `pair/mutex/{n}`: the same algorithm behind one `Mutex<Vec<..>>` (`weir_benches::MutexBalancer`);
//! - `pair/tower-peak-ewma/{n}`, `pair/tower-pending/{n}`: tower 0.5 `Balance` (p2c) with `PeakEwma` or
//!   `PendingRequests` over `n` always-ready services (see `tower_load`);
//! - `capacity/weir-3/{3,65536}`: the default pair over 3 members in a balancer of 3 slots and of 65,536;
//! - `limiter/{fixed,aimd,vegas,gradient,gradient2,ciad,windowed}/16`: the default pair (cascade,
//!   buckets) with each limit algorithm at its defaults, fed RTTs from the virtual clock;
//! - `floor/cas`, `floor/fastrand`, `floor/driver`, `floor/scan/{n}`: one uncontended compare-and-swap,
//!   one random draw, the workload's own bookkeeping without a balancer, one scan of `n` padded atomics;
//! - `threads/round-trip`: one core-to-core round trip (ping-pong on one padded word);
//!   `threads/weir-t{k}/16`, `threads/mutex-t{k}/16`: `k` threads on one balancer, the time per pair of
//!   one thread (k = 2, and 4, 8, 16 where the machine has that many cores).
//!
//! Lines starting with `weir-bench-fact:` are read by `cargo xtask bench` (memory, the helpers' times).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use weir::Config;
use weir_benches::{
    config, limiters, weir_memory, Cas, Crew, DriverLoad, MutexBalancer, MutexLoad, PaddedScan,
    RoundTrip, WeirLoad, Workload, HEALTHS, NODE_COUNTS, POLICIES, SPARSE_CAPACITY,
};

mod tower_load;

/// Node count of the limiter and thread benchmarks.
const N: usize = 16;

fn fact(key: &str, value: impl std::fmt::Display) {
    println!("weir-bench-fact: {key} {value}");
}

/// Memory per node and per balancer, printed before the timings.
fn memory(_: &mut Criterion) {
    let (slot, total) = weir_memory(64);
    fact("memory.weir.slot", slot);
    fact("memory.weir.balancer64", total);
    let mutex = MutexBalancer::new(64).memory_bytes();
    fact("memory.mutex.node", mutex / 64);
    fact("memory.mutex.balancer64", mutex);
    fact(
        "cores",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    );
}

fn bench<W: Workload>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    n: usize,
    w: &mut W,
) {
    g.bench_function(BenchmarkId::new(name, n), |b| b.iter(|| w.pair()));
}

fn pair(c: &mut Criterion) {
    let mut g = c.benchmark_group("pair");
    g.throughput(Throughput::Elements(1));
    for n in NODE_COUNTS {
        for (pn, policy) in POLICIES {
            for (hn, health) in HEALTHS {
                let mut w = WeirLoad::new(n, config(policy, health));
                bench(&mut g, &format!("weir-{pn}-{hn}"), n, &mut w);
            }
        }
        bench(&mut g, "mutex", n, &mut MutexLoad::new(n));
        bench(&mut g, "tower-peak-ewma", n, &mut tower_load::peak_ewma(n));
        bench(
            &mut g,
            "tower-pending",
            n,
            &mut tower_load::pending_requests(n),
        );
    }
    g.finish();
}

/// The same three members in a balancer of 3 slots and of [`SPARSE_CAPACITY`]: scans cover the slots
/// in use, so the two must cost the same (target: within 1.5x).
fn capacity(c: &mut Criterion) {
    let mut g = c.benchmark_group("capacity");
    g.throughput(Throughput::Elements(1));
    for cap in [3, SPARSE_CAPACITY] {
        let mut w = WeirLoad::sparse(3, cap, Config::default());
        g.bench_function(BenchmarkId::new("weir-3", cap), |b| b.iter(|| w.pair()));
    }
    g.finish();
}

fn limiter(c: &mut Criterion) {
    let mut g = c.benchmark_group("limiter");
    g.throughput(Throughput::Elements(1));
    for (name, limit) in limiters() {
        let mut w = WeirLoad::new(
            N,
            Config {
                limit,
                ..Config::default()
            },
        );
        bench(&mut g, name, N, &mut w);
    }
    g.finish();
}

fn floor(c: &mut Criterion) {
    let mut g = c.benchmark_group("floor");
    let cas = Cas::default();
    g.bench_function("cas", |b| b.iter(|| cas.step()));
    let mut rng = fastrand::Rng::with_seed(1);
    g.bench_function("fastrand", |b| b.iter(|| rng.f64()));
    let mut driver = DriverLoad::new(N);
    g.bench_function("driver", |b| b.iter(|| driver.pair()));
    for n in NODE_COUNTS {
        let scan = PaddedScan::new(n);
        g.bench_function(BenchmarkId::new("scan", n), |b| {
            b.iter(|| black_box(&scan).sum())
        });
    }
    g.finish();
}

/// Thread counts of the multi-thread benchmarks: 2, then 4, 8 and 16 while the machine has the cores.
fn thread_counts() -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut counts = vec![2];
    counts.extend([4, 8, 16].into_iter().filter(|&k| k <= cores));
    counts
}

/// Builds `k` workloads on one shared balancer with one shared clock: the first is the timed one.
fn crew<W: Workload + Send + 'static>(
    k: usize,
    first: impl FnOnce() -> W,
    more: impl Fn(u64) -> W,
    clock: impl Fn(&mut W, Arc<AtomicU64>),
) -> Crew<W, W> {
    let shared = Arc::new(AtomicU64::new(0));
    let mut main = first();
    clock(&mut main, Arc::clone(&shared));
    let helpers = (1..k as u64)
        .map(|t| {
            let mut h = more(t);
            clock(&mut h, Arc::clone(&shared));
            h
        })
        .collect();
    Crew::new(main, helpers)
}

fn threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("threads");
    g.throughput(Throughput::Elements(1));
    let mut rt = RoundTrip::new();
    g.bench_function("round-trip", |b| b.iter_custom(|iters| rt.run(iters)));
    // Beside criterion's median: the quantiles of short batches, whose lowest are the batches during
    // which both threads really ran on two cores (see `RoundTrip::batches`).
    let batches = rt.batches(1_000, 20, Duration::from_millis(500));
    let q = |p: f64| batches[((batches.len() - 1) as f64 * p) as usize];
    fact("threads.round_trip.batches", batches.len());
    fact("threads.round_trip.p10_ns", format!("{:.2}", q(0.1)));
    fact("threads.round_trip.p50_ns", format!("{:.2}", q(0.5)));
    drop(rt);
    for k in thread_counts() {
        let balancer = Arc::new({
            let b = weir::Balancer::with_capacity(N, Config::default()).expect("valid config");
            for id in 0..N as u64 {
                b.add(id).expect("capacity");
            }
            b
        });
        let name = format!("weir-t{k}");
        let mut weir = crew(
            k,
            || WeirLoad::on(Arc::clone(&balancer), 0),
            |t| WeirLoad::on(Arc::clone(&balancer), t),
            |w, clock| w.driver_mut().share_clock(clock),
        );
        g.bench_function(BenchmarkId::new(&name, N), |b| {
            b.iter_custom(|iters| weir.run(iters))
        });
        if let Some(ns) = weir.helper_ns_per_pair() {
            fact(
                &format!("threads.{name}.{N}.helpers_ns"),
                format!("{ns:.2}"),
            );
        }
        drop(weir);

        let mutex = Arc::new(MutexBalancer::new(N));
        let name = format!("mutex-t{k}");
        let mut base = crew(
            k,
            || MutexLoad::on(Arc::clone(&mutex), N, 0),
            |t| MutexLoad::on(Arc::clone(&mutex), N, t),
            |w, clock| w.driver_mut().share_clock(clock),
        );
        g.bench_function(BenchmarkId::new(&name, N), |b| {
            b.iter_custom(|iters| base.run(iters))
        });
        if let Some(ns) = base.helper_ns_per_pair() {
            fact(
                &format!("threads.{name}.{N}.helpers_ns"),
                format!("{ns:.2}"),
            );
        }
    }
    g.finish();
}

/// Defaults that keep a full run (about 55 benchmarks) under 10 minutes on a 2-core machine; the
/// command line (`--warm-up-time`, `--measurement-time`, `--sample-size`, `--quick`) overrides them.
fn defaults() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .sample_size(40)
}

criterion_group! {
    name = benches;
    config = defaults();
    targets = memory, pair, capacity, limiter, floor, threads
}
criterion_main!(benches);
