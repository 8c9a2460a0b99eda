//! What a Prometheus scrape costs the hot path: the new default's pair (`Config::default()`, 16 nodes,
//! the workload of `hot_path`) with another thread writing the balancer's metrics every 10 ms, against
//! the same pair with that thread idle, in one run.
//!
//! The scraper writes `Balancer::write_metrics` (every family, every node, names by id) into one `String`
//! it reuses, as a `/metrics` handler does; it reads the atomics the pair writes, so what it can cost the
//! pair is cache lines moving to its core and back. Between scrapes it sleeps. While idle it wakes every
//! 10 ms too and writes nothing, so both benchmarks have the same threads.
//!
//! - `metrics/none/16`: the pair, the scraper idle;
//! - `metrics/scrape-10ms/16`: the pair, the scraper writing every 10 ms.
//!
//! After criterion, an interleaved cross-check: the two alternate in rounds of about 50 ms (each round
//! spans about five scrapes), each round timed; the ratio is the median over round pairs of the
//! per-round ratio, each time the 10th percentile over rounds. Its results, with the scrape's own time
//! and size, are `weir-bench-fact:` lines (`metrics.*`).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};
use weir::metrics::{node_id_name, MetricsFormat};
use weir::{Config, HeapBalancer};
use weir_benches::{WeirLoad, Workload};

const N: usize = 16;
/// The scrape interval.
const EVERY: Duration = Duration::from_millis(10);

/// The thread that scrapes the balancer every [`EVERY`] while `active`.
struct Scraper {
    active: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    /// The workload's virtual time, for the metrics' `now` (set between batches, never per pair).
    clock: Arc<AtomicU64>,
    /// Each scrape's time in nanoseconds, and the last scrape's size in bytes.
    times: Arc<Mutex<(Vec<u64>, usize)>>,
    thread: Option<JoinHandle<()>>,
}

impl Scraper {
    fn start(balancer: Arc<HeapBalancer>) -> Self {
        let active = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let clock = Arc::new(AtomicU64::new(0));
        let times = Arc::new(Mutex::new((Vec::new(), 0)));
        let thread = {
            let (active, stop, clock, times) = (
                Arc::clone(&active),
                Arc::clone(&stop),
                Arc::clone(&clock),
                Arc::clone(&times),
            );
            thread::spawn(move || {
                let mut out = String::with_capacity(16 * 1024);
                let format = MetricsFormat::default();
                // Relaxed throughout: flags and a time, publishing no other memory.
                while !stop.load(Relaxed) {
                    thread::sleep(EVERY);
                    if !active.load(Relaxed) {
                        continue;
                    }
                    out.clear();
                    let t = Instant::now();
                    let written = balancer.write_metrics(
                        &mut out,
                        &format,
                        &node_id_name,
                        clock.load(Relaxed),
                    );
                    let ns = t.elapsed().as_nanos() as u64;
                    assert!(written.is_ok(), "the default format is valid");
                    black_box(&out);
                    if let Ok(mut times) = times.lock() {
                        times.0.push(ns);
                        times.1 = out.len();
                    }
                }
            })
        };
        Scraper {
            active,
            stop,
            clock,
            times,
            thread: Some(thread),
        }
    }

    fn set(&self, active: bool) {
        self.active.store(active, Relaxed);
    }
}

impl Drop for Scraper {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `pairs` pairs of `w`, timed, the scraper's clock set to the workload's first.
fn batch(w: &mut WeirLoad, scraper: &Scraper, pairs: u64) -> Duration {
    scraper.clock.store(w.driver_mut().now(), Relaxed);
    let start = Instant::now();
    for _ in 0..pairs {
        w.pair();
    }
    start.elapsed()
}

fn metrics(c: &mut Criterion) {
    let mut w = WeirLoad::new(N, Config::default());
    let scraper = Scraper::start(Arc::clone(w.balancer()));
    let mut g = c.benchmark_group("metrics");
    g.throughput(Throughput::Elements(1));
    for (name, active) in [("none", false), ("scrape-10ms", true)] {
        scraper.set(active);
        g.bench_function(BenchmarkId::new(name, N), |b| {
            b.iter_custom(|iters| batch(&mut w, &scraper, iters))
        });
    }
    g.finish();
    scraper.set(false);
}

/// Rounds of the interleaved cross-check per variant, and the length of one.
const ROUNDS: usize = 40;
const ROUND: Duration = Duration::from_millis(50);

/// The `q` quantile (0 to 1) of `v`.
fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len().saturating_sub(1)) as f64 * q) as usize;
    v.get(i).copied().unwrap_or(f64::NAN)
}

/// Nanoseconds per pair over one round of about [`ROUND`], in batches of 10,000 pairs.
fn round(w: &mut WeirLoad, scraper: &Scraper) -> f64 {
    let (mut pairs, mut spent) = (0u64, Duration::ZERO);
    while spent < ROUND {
        spent += batch(w, scraper, 10_000);
        pairs += 10_000;
    }
    spent.as_nanos() as f64 / pairs as f64
}

fn interleaved(_: &mut Criterion) {
    let mut w = WeirLoad::new(N, Config::default());
    let scraper = Scraper::start(Arc::clone(w.balancer()));
    let (mut none, mut scrape, mut ratio) = (vec![], vec![], vec![]);
    for _ in 0..ROUNDS {
        scraper.set(false);
        let a = round(&mut w, &scraper);
        scraper.set(true);
        let b = round(&mut w, &scraper);
        none.push(a);
        scrape.push(b);
        ratio.push(b / a);
    }
    scraper.set(false);
    let fact = |key: &str, v: f64| println!("weir-bench-fact: metrics.{key} {v:.2}");
    fact("none_p10_ns", quantile(none, 0.1));
    fact("scrape_p10_ns", quantile(scrape, 0.1));
    fact("scrape_over_none", quantile(ratio, 0.5));
    let (times, bytes) = scraper
        .times
        .lock()
        .map(|t| (t.0.clone(), t.1))
        .unwrap_or_default();
    fact("scrapes", times.len() as f64);
    fact(
        "scrape_us",
        quantile(times.iter().map(|&ns| ns as f64 / 1e3).collect(), 0.5),
    );
    fact("scrape_bytes", bytes as f64);
}

criterion_group! {
    name = benches;
    config = weir_benches::criterion_defaults();
    targets = metrics, interleaved
}
criterion_main!(benches);
