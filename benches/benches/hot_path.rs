//! The hot path: acquire + release pairs of weir against its baselines and floors, in one run.
//!
//! One iteration is one pair of the workload in `weir_benches::workload` (a window of 8 leases, scripted
//! virtual time, mixed outcomes, per-node failure rates so weights differ; any refused acquire panics).
//! Benchmark ids (criterion writes each one's estimates to `<target>/criterion/<id>/new/estimates.json`).
//! Two configurations run throughout (see `weir_benches`): *default* is `Config::default()` (the
//! lowest-score family, CIAD limit with a fast start), *cascade* is `Config::cascade()` (6 buckets of
//! 5 s, weighted cascade, fixed limit 100).
//!
//! - `pair/weir-default/{3,16,64,256,1024}`: the new default; `pair/weir-default-fixed/{n}`: the same with
//!   the cascade's fixed limit of 100 instead of CIAD (what the limiter costs);
//! - `pair/weir-{cascade,approx,pick}-{buckets,ewma}/{n}`: the cascade with each of the weighted family's
//!   draws and success-rate models (`weir-cascade-buckets` is `Config::cascade()` itself); over 1,024
//!   nodes only the new default, the cascade and the baselines run;
//! - `pair/mutex/{n}`: the cascade behind one `Mutex<Vec<..>>` (`weir_benches::MutexBalancer`);
//! - `pair/tower-peak-ewma/{n}`, `pair/tower-pending/{n}`: tower 0.5 `Balance` (p2c) with `PeakEwma` or
//!   `PendingRequests` over `n` always-ready services (see `tower_load`);
//! - `capacity/{default,cascade}-3/{3,65536}`: each configuration's pair over 3 members in a balancer of 3
//!   slots and of 65,536;
//! - `limiter/{default,cascade}-{fixed,aimd,vegas,gradient,gradient2,ciad,knee,windowed}/16`: each
//!   configuration's pair with each limit algorithm at its defaults (so `default-ciad` is dialogue's CIAD
//!   without the default's fast start), fed RTTs from the virtual clock;
//! - `floor/cas`, `floor/fastrand`, `floor/driver`, `floor/scan/{n}`: one uncontended compare-and-swap,
//!   one random draw, the workload's own bookkeeping without a balancer, one scan of `n` padded atomics;
//! - `threads/round-trip`: one core-to-core round trip (ping-pong on one padded word);
//!   `threads/{default,cascade}-t{k}/16`, `threads/mutex-t{k}/16`: `k` threads on one balancer, the time
//!   per pair of one thread (k = 2, and 4, 8, 16 where the machine has that many cores).
//!
//! Lines starting with `weir-bench-fact:` are read by `cargo xtask bench` (memory, the helpers' times).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use weir::Config;
use weir_benches::{
    bases, config, default_fixed, limiters, weir_memory, with_limit, Cas, Crew, DriverLoad,
    MutexBalancer, MutexLoad, PaddedScan, RoundTrip, WeirLoad, Workload, DRAWS, FLEET, HEALTHS,
    NODE_COUNTS, SPARSE_CAPACITY,
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
        bench(
            &mut g,
            "weir-default",
            n,
            &mut WeirLoad::new(n, Config::default()),
        );
        if n == FLEET {
            bench(
                &mut g,
                "weir-cascade-buckets",
                n,
                &mut WeirLoad::new(n, Config::cascade()),
            );
        } else {
            bench(
                &mut g,
                "weir-default-fixed",
                n,
                &mut WeirLoad::new(n, default_fixed()),
            );
            for (dn, draw) in DRAWS {
                for (hn, health) in HEALTHS {
                    let mut w = WeirLoad::new(n, config(draw, health));
                    bench(&mut g, &format!("weir-{dn}-{hn}"), n, &mut w);
                }
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

/// The same three members in a balancer of 3 slots and of [`SPARSE_CAPACITY`], under each configuration:
/// scans cover the slots in use, so the two must cost the same (target: within 1.5x).
fn capacity(c: &mut Criterion) {
    let mut g = c.benchmark_group("capacity");
    g.throughput(Throughput::Elements(1));
    for (base, config) in bases() {
        for cap in [3, SPARSE_CAPACITY] {
            let mut w = WeirLoad::sparse(3, cap, config);
            g.bench_function(BenchmarkId::new(format!("{base}-3"), cap), |b| {
                b.iter(|| w.pair())
            });
        }
    }
    g.finish();
}

/// Each configuration's pair with each limit algorithm.
fn limiter(c: &mut Criterion) {
    let mut g = c.benchmark_group("limiter");
    g.throughput(Throughput::Elements(1));
    for (base, config) in bases() {
        for (name, limit) in limiters() {
            let mut w = WeirLoad::new(N, with_limit(config, limit));
            bench(&mut g, &format!("{base}-{name}"), N, &mut w);
        }
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
        for (base, config) in bases() {
            let balancer = Arc::new({
                let b = weir::Balancer::with_capacity(N, config).expect("valid config");
                for id in 0..N as u64 {
                    b.add(id).expect("capacity");
                }
                b
            });
            let name = format!("{base}-t{k}");
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
        }

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

criterion_group! {
    name = benches;
    config = weir_benches::criterion_defaults();
    targets = memory, pair, capacity, limiter, floor, threads
}
criterion_main!(benches);
