//! A request through weir-tower's `Balance` against tower 0.5's `Balance` with `PeakEwma` and with
//! `PendingRequests`, over the same always-ready services, in one run.
//!
//! One iteration is one request as a tower caller makes it: `poll_ready`, `call`, and the completion of
//! the oldest of [`OUTSTANDING`] response futures in flight (the pair of `tower_load`, which drives the
//! two tower baselines exactly as `hot_path`'s `pair/tower-*` ids do). No runtime: a no-op waker, and
//! every service is always ready, so nothing ever waits.
//!
//! - `tower-service/weir-tower/{n}`: `weir_tower::Balance` with `Config::default()` over `n` services
//!   (a fixed list, `ByResult`: every response is a success), no waiting; its pair reads the monotonic
//!   clock twice (acquire and release), as tower's `PeakEwma` reads it (four times: two loads, the
//!   call's start and its end);
//! - `tower-service/tower-peak-ewma/{n}`, `tower-service/tower-pending/{n}`: tower's p2c `Balance` over
//!   a `ServiceList` of `n` services wrapped in `PeakEwma` (linkerd's defaults) or `PendingRequests`.
//!
//! Goal: weir-tower's request at least 3x cheaper than `Balance<PeakEwma>`'s.
//!
//! After criterion, an interleaved cross-check: the three workloads alternate in short rounds, each
//! round timed, and each ratio is the median over rounds of the per-round ratio. A shared machine's load
//! moves criterion's medians (each benchmark has its own window), not a ratio measured round by round.
//! Its results are `weir-bench-fact:` lines.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tower::Service;
use weir::Config;
use weir_benches::{Workload, OUTSTANDING};
use weir_tower::{Balance, Builder, ByResult, Fixed, ResponseFuture};

mod tower_load;

use tower_load::Backend;

type WeirTower = Balance<Fixed<usize, Backend>, ByResult>;
type Call = ResponseFuture<<Backend as Service<()>>::Future, ByResult>;

/// weir-tower's balance under the pair workload.
struct WeirTowerLoad {
    balance: WeirTower,
    ring: Vec<Option<Call>>,
    next: usize,
}

impl WeirTowerLoad {
    fn new(n: usize) -> Self {
        let balance = Builder::new(Config::default())
            .classify(ByResult)
            .wait(Duration::ZERO)
            .build_list((0..n).map(|i| (i, Backend)))
            .expect("a valid configuration");
        let mut load = WeirTowerLoad {
            balance,
            ring: Vec::with_capacity(OUTSTANDING),
            next: 0,
        };
        for _ in 0..OUTSTANDING {
            let call = load.call();
            load.ring.push(Some(call));
        }
        load
    }

    /// `poll_ready` + `call`; panics if weir refuses (it never does: 8 calls in flight over `n` nodes
    /// with room for 20 each).
    #[inline]
    fn call(&mut self) -> Call {
        let mut cx = Context::from_waker(Waker::noop());
        match self.balance.poll_ready(&mut cx) {
            Poll::Ready(Ok(())) => {}
            other => panic!("weir-tower was not ready over always-ready services: {other:?}"),
        }
        self.balance.call(())
    }
}

impl Workload for WeirTowerLoad {
    #[inline]
    fn pair(&mut self) {
        let call = self.call();
        let Some(mut old) = self.ring.get_mut(self.next).and_then(|f| f.replace(call)) else {
            panic!("the ring of calls is always full");
        };
        self.next = (self.next + 1) % OUTSTANDING;
        let mut cx = Context::from_waker(Waker::noop());
        match Pin::new(&mut old).poll(&mut cx) {
            Poll::Ready(Ok(())) => {}
            other => panic!("an always-ready backend's response did not complete: {other:?}"),
        }
    }
}

fn tower_service(c: &mut Criterion) {
    let mut g = c.benchmark_group("tower-service");
    g.throughput(Throughput::Elements(1));
    for n in [3, 16, 64] {
        let mut weir = WeirTowerLoad::new(n);
        g.bench_function(BenchmarkId::new("weir-tower", n), |b| {
            b.iter(|| weir.pair())
        });
        let stats = weir.balance.balancer().stats();
        assert_eq!(stats.in_flight, OUTSTANDING as u64, "{stats:?}");
        assert_eq!(stats.rejected_all_busy + stats.rejected_no_active, 0);
        let mut ewma = tower_load::peak_ewma(n);
        g.bench_function(BenchmarkId::new("tower-peak-ewma", n), |b| {
            b.iter(|| ewma.pair())
        });
        let mut pending = tower_load::pending_requests(n);
        g.bench_function(BenchmarkId::new("tower-pending", n), |b| {
            b.iter(|| pending.pair())
        });
    }
    g.finish();
}

/// Rounds of the interleaved cross-check, and pairs per workload per round (about 1 to 5 ms).
const ROUNDS: usize = 150;
const ROUND_PAIRS: u32 = 10_000;

/// Nanoseconds per pair over one round of `w`.
fn round<W: Workload>(w: &mut W) -> f64 {
    let start = Instant::now();
    for _ in 0..ROUND_PAIRS {
        w.pair();
    }
    start.elapsed().as_nanos() as f64 / f64::from(ROUND_PAIRS)
}

/// The `q` quantile (0 to 1) of `v`.
fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len().saturating_sub(1)) as f64 * q) as usize;
    v.get(i).copied().unwrap_or(f64::NAN)
}

/// The interleaved rounds: per node count, each ratio is the median over rounds of the two workloads'
/// times in the same round; each time is the 10th percentile over rounds (the rounds no neighbour
/// disturbed), as in `pairs interleave`.
fn interleaved(_: &mut Criterion) {
    for n in [3, 16, 64] {
        let mut weir = WeirTowerLoad::new(n);
        let mut ewma = tower_load::peak_ewma(n);
        let mut pending = tower_load::pending_requests(n);
        let mut times = [vec![], vec![], vec![]];
        let (mut vs_ewma, mut vs_pending) = (vec![], vec![]);
        for _ in 0..ROUNDS {
            let w = round(&mut weir);
            let e = round(&mut ewma);
            let p = round(&mut pending);
            for (t, v) in times.iter_mut().zip([w, e, p]) {
                t.push(v);
            }
            vs_ewma.push(e / w);
            vs_pending.push(p / w);
        }
        let fact = |key: &str, v: f64| println!("weir-bench-fact: tower_service.{n}.{key} {v:.2}");
        for (name, t) in ["weir_tower", "peak_ewma", "pending"].iter().zip(times) {
            fact(&format!("{name}_p10_ns"), quantile(t, 0.1));
        }
        fact("peak_ewma_over_weir_tower", quantile(vs_ewma, 0.5));
        fact("pending_over_weir_tower", quantile(vs_pending, 0.5));
    }
}

criterion_group! {
    name = benches;
    config = weir_benches::criterion_defaults();
    targets = tower_service, interleaved
}
criterion_main!(benches);
