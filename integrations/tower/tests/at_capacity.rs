//! weir-tower at capacity on real sockets (issue 41's eighth goal): four hyper backends on 127.0.0.1, each
//! with a fixed capacity as a real server has (4 workers, each request holding one for 10 ms; 8 requests
//! waiting for a worker, 503 at once above that: 400 requests a second), and an open-loop client at 60 %
//! of the fleet's capacity (960 requests a second, each sent at its time whatever the calls in flight are
//! doing, each with a 1 s deadline), through weir-tower and hyper-util's client. Two scenarios, each with
//! two configurations: `Config::default()`, and the knee limit with probation (what the simulator calls
//! `weir-knee-probation`: `KneeLimit` in place of CIAD, `probe_fraction` 0.01, `forgiveness` 0.5).
//!
//! - **Fault and recovery**: after 2 s, backend 0 answers 500 to everything, at once, for 3 s, then is
//!   healthy for the 10 s left; its load moves to the other three (80 % of their capacity). The goals:
//!   the fleet's success (in windows of 250 ms, by the calls' arrival) is back within 1 point of its
//!   level before the fault within 2 s of the fault's end, and stays there 2 s; and the recovered backend
//!   *ramps back*: it receives at least 90 % of its fair share (a quarter) of the requests in each of 5
//!   consecutive seconds, the first of them within 5 s of its recovery (issue 41's and the simulator's
//!   ramp-back). The knee limit with probation meets both (its probes find the recovered backend, and a
//!   success a clock epoch after its last failure forgives them); the default's figures are printed: it
//!   recovers the fleet's success, but its recovered backend mostly stays out while its failures fade
//!   (30 s half-life): no ramp-back
//!   within the run in 15 of 23 runs here (it came back more often when other work loaded the CPU).
//! - **A slow backend**: backend 3's service takes 20 times as long (200 ms: 20 requests a second), the
//!   load the same 960 requests a second (60 % of the four's nominal capacity, 80 % of the three healthy
//!   ones'). The goal: the p99 latency of every call (from its arrival to its answer, errors included)
//!   within 2x of the p99 of the calls the healthy backends answered. Without the slowness term neither
//!   configuration meets it (the slow backend takes about its whole capacity, 2.1 % of the calls, so the
//!   p99 is its 200 ms, about 12x the healthy backends'): that test is ignored with the figure, and what
//!   holds is asserted, that the slow backend is not flooded and the calls succeed. With
//!   `LowestScore::slow_ratio` 2 (`slow`, and `knee-probation-slow`) both meet it: the slow backend takes
//!   0 % to 0.2 % of the calls and the p99 is the healthy backends' (16.8 / 16.8 ms and 15.3 / 15.1 ms in
//!   a release run here).
//!
//! Each run prints its figures, one line of a table. The runs are one after another (a lock serializes
//! this file's tests: they would share the CPU), each bounded at 30 s. The assertions are about shares
//! and success over windows of the scenario's timeline, never about speed.

#[allow(
    dead_code,
    reason = "the fixed-behaviour servers and the Discover channel are for tests/http.rs"
)]
mod support;

use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::limited::{serve_limited, Capacity, Limited};
use support::{get, node_of, Node};
use tokio::task::JoinSet;
use tower::{Service, ServiceExt};
use weir::balance::Algorithm;
use weir::limit::{KneeLimit, LimitAlgorithm};
use weir::Config;
use weir_tower::{Builder, Error};

/// Backends in each scenario.
const BACKENDS: usize = 4;
/// A healthy backend's capacity: 400 requests a second.
const HEALTHY: Capacity = Capacity {
    workers: 4,
    queue: 8,
    service: Duration::from_millis(10),
};
/// How many times slower the slow backend's service is.
const SLOWDOWN: u32 = 20;
/// The load, as a fraction of the fleet's nominal capacity (every backend healthy).
const LOAD: f64 = 0.6;
/// Each request's deadline (its wait for room in weir included).
const DEADLINE: Duration = Duration::from_secs(1);
/// The fleet's success is read in windows of this length, by the requests' arrival.
const WINDOW: Duration = Duration::from_millis(250);

/// Fault and recovery: healthy, then backend 0 answers 500 for `FAULT`, then healthy for `AFTER`.
const WARM_UP: Duration = Duration::from_secs(2);
const FAULT: Duration = Duration::from_secs(3);
const AFTER: Duration = Duration::from_secs(10);

/// A slow backend: the calls of the first `SLOW_WARM_UP` are not measured.
const SLOW_WARM_UP: Duration = Duration::from_secs(1);
const SLOW_MEASURED: Duration = Duration::from_secs(4);

/// The goals (issue 41's eighth).
const SUCCESS_BACK_WITHIN: Duration = Duration::from_secs(2);
const SUCCESS_HOLDS: Duration = Duration::from_secs(2);
const RAMP_BACK_WITHIN: Duration = Duration::from_secs(5);
const RAMP_BACK_SECONDS: u32 = 5;
const RAMP_BACK_SHARE: f64 = 0.9;
const P99_WITHIN: f64 = 2.0;

/// The simulator's `weir-knee-probation`: the knee limit, probes to 1 % of the acquires, each success
/// halving its node's failures.
fn knee_probation() -> Config {
    let mut config = Config {
        limit: LimitAlgorithm::Knee(KneeLimit::default()),
        ..Config::default()
    };
    let Algorithm::LowestScore(lowest) = &mut config.algorithm else {
        unreachable!("the default's algorithm is the lowest-score family");
    };
    lowest.probe_fraction = 0.01;
    lowest.forgiveness = 0.5;
    config
}

/// `config` with the slowness term (`LowestScore::slow_ratio` 2).
fn slow(mut config: Config) -> Config {
    let Algorithm::LowestScore(lowest) = &mut config.algorithm else {
        unreachable!("the default's algorithm is the lowest-score family");
    };
    lowest.slow_ratio = 2.0;
    config
}

/// The configurations measured, by name.
fn config(name: &str) -> Config {
    match name {
        "default" => Config::default(),
        "knee-probation" => knee_probation(),
        "slow" => slow(Config::default()),
        "knee-probation-slow" => slow(knee_probation()),
        _ => unreachable!("{name}"),
    }
}

/// Runs `body` on a 2-worker runtime of its own, after any other test of this file has finished (they
/// would share the CPU), failing rather than hanging past 30 s.
fn serial<T>(body: impl Future<Output = T>) -> T {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // The timer is made inside the runtime, which it needs.
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(30), body).await })
        .expect("the scenario finishes within 30 s (else something hangs)")
}

/// How a call ended, as the client saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Answer {
    /// A response with this status, from this backend.
    Status(u16, usize),
    /// weir refused it (nothing was sent).
    Refused,
    /// Its deadline passed.
    Deadline,
    /// The client's call failed (a connection error).
    Failed,
}

/// One call: when it was due (from the run's start), how long it took from then, how it ended.
#[derive(Clone, Copy, Debug)]
struct Call {
    due: Duration,
    latency: Duration,
    answer: Answer,
}

impl Call {
    fn succeeded(&self) -> bool {
        matches!(self.answer, Answer::Status(200, _))
    }
}

/// The backend named in a response's `x-node` header.
fn backend_of<B>(response: &http::Response<B>) -> usize {
    let name = node_of(response);
    name.strip_prefix('b')
        .and_then(|i| i.parse().ok())
        .unwrap_or_else(|| panic!("an answer from an unknown backend {name:?}"))
}

const NAMES: [&str; BACKENDS] = ["b0", "b1", "b2", "b3"];

/// A run's record: every call, and when each backend received its requests (from the run's start).
struct Run {
    calls: Vec<Call>,
    received: Vec<Vec<Duration>>,
    /// The most a call was sent after it was due (the generator's lag, weir's wait for room included).
    lag: Duration,
}

/// Sends requests through a weir-tower balance over `backends`, open loop at `rate` a second for
/// `length` from `start`: each at its time whatever the calls in flight are doing, each its own task.
/// A wait for room in `poll_ready` (one at a time, as a `Service`'s is) holds back the requests due
/// after it; each call's latency counts from its time.
async fn drive(
    config: Config,
    backends: &[Limited],
    start: Instant,
    length: Duration,
    rate: f64,
) -> Run {
    let nodes = backends
        .iter()
        .zip(NAMES)
        .map(|(b, n)| (n, Node::new(b.addr)));
    let mut balance = Builder::new(config)
        .deadline(DEADLINE)
        .build_list(nodes)
        .unwrap();
    let mut calls = JoinSet::new();
    let mut done = Vec::new();
    let mut lag = Duration::ZERO;
    let mut issued = 0;
    for i in 0u32.. {
        let due = Duration::from_secs_f64(f64::from(i) / rate);
        if due >= length {
            break;
        }
        let at = start + due;
        tokio::time::sleep_until(at.into()).await;
        let call = balance.ready().await.unwrap().call(get());
        issued += 1;
        lag = lag.max(at.elapsed());
        calls.spawn(async move {
            let answer = match call.await {
                Ok(r) => Answer::Status(r.status().as_u16(), backend_of(&r)),
                Err(Error::Refused(_)) => Answer::Refused,
                Err(Error::DeadlinePassed) => Answer::Deadline,
                Err(_) => Answer::Failed,
            };
            Call {
                due,
                latency: at.elapsed(),
                answer,
            }
        });
        while let Some(call) = calls.try_join_next() {
            done.push(call.unwrap());
        }
    }
    while let Some(call) = calls.join_next().await {
        done.push(call.unwrap());
    }
    assert_eq!(done.len(), issued, "every call is answered");
    let stats = balance.balancer().stats();
    assert_eq!(stats.in_flight, 0, "every lease came back: {stats:?}");
    done.sort_by_key(|c| c.due);
    let received = backends
        .iter()
        .map(|b| {
            b.arrivals()
                .iter()
                .map(|t| t.saturating_duration_since(start))
                .collect()
        })
        .collect();
    Run {
        calls: done,
        received,
        lag,
    }
}

/// The load in requests a second: `LOAD` of four healthy backends' capacity.
fn rate() -> f64 {
    LOAD * HEALTHY.per_second() * BACKENDS as f64
}

/// The fraction of `calls` that succeeded (1 if there are none).
fn success<'a>(calls: impl IntoIterator<Item = &'a Call>) -> f64 {
    let (mut ok, mut all) = (0u32, 0u32);
    for call in calls {
        ok += u32::from(call.succeeded());
        all += 1;
    }
    if all == 0 {
        1.0
    } else {
        f64::from(ok) / f64::from(all)
    }
}

/// The calls due in `[from, to)`.
fn due_in(calls: &[Call], from: Duration, to: Duration) -> impl Iterator<Item = &Call> {
    calls.iter().filter(move |c| c.due >= from && c.due < to)
}

/// How many of `times` fall in `[from, to)`.
fn count_in(times: &[Duration], from: Duration, to: Duration) -> usize {
    times.iter().filter(|t| **t >= from && **t < to).count()
}

/// Backend `i`'s share of the requests the backends received in `[from, to)`.
fn share(received: &[Vec<Duration>], i: usize, from: Duration, to: Duration) -> f64 {
    let all: usize = received.iter().map(|r| count_in(r, from, to)).sum();
    count_in(&received[i], from, to) as f64 / all.max(1) as f64
}

/// The 99th percentile of `latencies`.
fn p99(mut latencies: Vec<Duration>) -> Duration {
    latencies.sort();
    let rank = (latencies.len() * 99).div_ceil(100).max(1);
    latencies[rank - 1]
}

/// The figures of a fault-and-recovery run.
#[derive(Debug)]
struct Recovery {
    /// Success before the fault (from 0.5 s: the connections are set up), during it, and after it.
    before: f64,
    during: f64,
    after: f64,
    /// From the fault's end until the fleet's success is back within 1 point of `before`, in every
    /// window for `SUCCESS_HOLDS`; `None` if not within the run.
    success_back: Option<Duration>,
    /// From the recovery until the first of `RAMP_BACK_SECONDS` consecutive seconds in each of which the
    /// recovered backend received `RAMP_BACK_SHARE` of its fair share or more (searched in steps of
    /// `WINDOW`); `None` if not within the run.
    ramp_back: Option<Duration>,
    /// The recovered backend's share of the requests from its recovery to the end, over its fair share.
    kept: f64,
    /// The 500s the failing backend answered: the fault was seen.
    failures: usize,
    lag: Duration,
}

async fn fault_and_recovery(config: Config) -> Recovery {
    let mut backends = Vec::new();
    for name in NAMES {
        backends.push(serve_limited(name, HEALTHY).await);
    }
    let start = Instant::now();
    let (fault, end) = (WARM_UP + FAULT, WARM_UP + FAULT + AFTER);
    let switch = backends[0].clone();
    let fault_task = tokio::spawn(async move {
        tokio::time::sleep_until((start + WARM_UP).into()).await;
        switch.fail(true);
        tokio::time::sleep_until((start + fault).into()).await;
        switch.fail(false);
    });
    let run = drive(config, &backends, start, end, rate()).await;
    fault_task.await.unwrap();

    let calls = &run.calls;
    let before = success(due_in(calls, Duration::from_millis(500), WARM_UP));
    let back = before - 0.01;
    let windows_held = (SUCCESS_HOLDS.as_nanos() / WINDOW.as_nanos()) as u32;
    let success_back = (0u32..)
        .map(|k| fault + WINDOW * k)
        .take_while(|t| *t + SUCCESS_HOLDS <= end)
        .find(|t| {
            (0..windows_held).all(|w| {
                let from = *t + WINDOW * w;
                success(due_in(calls, from, from + WINDOW)) >= back
            })
        })
        .map(|t| t - fault);
    let fair = 1.0 / BACKENDS as f64;
    let second = Duration::from_secs(1);
    let ramp_back = (0u32..)
        .map(|k| fault + WINDOW * k)
        .take_while(|t| *t + second * RAMP_BACK_SECONDS <= end)
        .find(|t| {
            (0..RAMP_BACK_SECONDS).all(|s| {
                let from = *t + second * s;
                share(&run.received, 0, from, from + second) >= RAMP_BACK_SHARE * fair
            })
        })
        .map(|t| t - fault);
    Recovery {
        before,
        during: success(due_in(calls, WARM_UP, fault)),
        after: success(due_in(calls, fault, end)),
        success_back,
        ramp_back,
        kept: share(&run.received, 0, fault, end) / fair,
        failures: calls
            .iter()
            .filter(|c| c.answer == Answer::Status(500, 0))
            .count(),
        lag: run.lag,
    }
}

/// The figures of a slow-backend run (its calls after `SLOW_WARM_UP`).
#[derive(Debug)]
struct SlowBackend {
    /// The p99 latency of every call, and of the calls the healthy backends answered.
    p99: Duration,
    healthy_p99: Duration,
    /// The slow backend's share of the requests the backends received, and the 503s it answered.
    slow_share: f64,
    slow_shed: u64,
    success: f64,
    lag: Duration,
}

impl SlowBackend {
    fn ratio(&self) -> f64 {
        self.p99.as_secs_f64() / self.healthy_p99.as_secs_f64()
    }
}

/// The slow backend is the last.
const SLOW: usize = BACKENDS - 1;

/// The slow backend's capacity: 20 requests a second.
fn slow_capacity() -> Capacity {
    Capacity {
        service: HEALTHY.service * SLOWDOWN,
        ..HEALTHY
    }
}

async fn slow_backend(config: Config) -> SlowBackend {
    let mut backends = Vec::new();
    for (i, name) in NAMES.into_iter().enumerate() {
        let capacity = if i == SLOW { slow_capacity() } else { HEALTHY };
        backends.push(serve_limited(name, capacity).await);
    }
    let start = Instant::now();
    let end = SLOW_WARM_UP + SLOW_MEASURED;
    let run = drive(config, &backends, start, end, rate()).await;
    let measured: Vec<&Call> = due_in(&run.calls, SLOW_WARM_UP, end).collect();
    let healthy = measured
        .iter()
        .filter(|c| matches!(c.answer, Answer::Status(_, b) if b != SLOW))
        .map(|c| c.latency)
        .collect();
    SlowBackend {
        p99: p99(measured.iter().map(|c| c.latency).collect()),
        healthy_p99: p99(healthy),
        slow_share: share(&run.received, SLOW, SLOW_WARM_UP, end),
        slow_shed: backends[SLOW].shed(),
        success: success(measured.iter().copied()),
        lag: run.lag,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn secs(d: Option<Duration>) -> String {
    d.map_or_else(
        || "never".to_owned(),
        |d| format!("{:.2} s", d.as_secs_f64()),
    )
}

fn print_recovery(name: &str, r: &Recovery) {
    eprintln!(
        "| {name} | fault and recovery | success before {:.2} % during {:.2} % after {:.2} % \
         | success back {} | ramp-back {} | kept {:.2} of its share | {} 500s | lag {} |",
        r.before * 100.0,
        r.during * 100.0,
        r.after * 100.0,
        secs(r.success_back),
        secs(r.ramp_back),
        r.kept,
        r.failures,
        ms(r.lag),
    );
}

fn print_slow(name: &str, s: &SlowBackend) {
    eprintln!(
        "| {name} | slow backend | p99 {} / healthy {} = {:.2}x | slow share {:.2} % ({} 503s) \
         | success {:.2} % | lag {} |",
        ms(s.p99),
        ms(s.healthy_p99),
        s.ratio(),
        s.slow_share * 100.0,
        s.slow_shed,
        s.success * 100.0,
        ms(s.lag),
    );
}

/// Issue 41's goals for a fault and recovery.
fn assert_recovery_goals(r: &Recovery) {
    assert!(
        r.success_back.is_some_and(|t| t <= SUCCESS_BACK_WITHIN),
        "the fleet's success is back within 2 s of the fault's end: {r:?}"
    );
    assert!(
        r.ramp_back.is_some_and(|t| t <= RAMP_BACK_WITHIN),
        "the recovered backend ramps back within 5 s: {r:?}"
    );
}

/// What holds with a slow backend, for either configuration: it is not flooded (round robin would send
/// it a quarter of the calls, 12 times what it serves, and most of them would be shed: about 77 % of all
/// calls would succeed). Every call succeeds in a quiet run; the bound on success leaves room for a CI
/// machine whose other work starves the test's two threads (98.5 % in a run here at a load average of
/// 6 on two cores, the calls late at the client, not shed).
fn assert_slow_backend_is_not_flooded(s: &SlowBackend) {
    let capacity_share = slow_capacity().per_second() / rate();
    assert!(
        s.slow_share > 0.0,
        "the slow backend is still called: {s:?}"
    );
    assert!(
        s.slow_share < 2.0 * capacity_share,
        "the slow backend gets no more than twice what it can serve ({:.2} %): {s:?}",
        capacity_share * 100.0
    );
    assert!(s.success >= 0.95, "{s:?}");
}

/// A fault-and-recovery run with the configuration `name`, its figures printed.
fn recovery_with(name: &str) -> Recovery {
    let r = serial(fault_and_recovery(config(name)));
    print_recovery(name, &r);
    assert!(r.failures > 0, "the fault was seen: {r:?}");
    r
}

/// A slow-backend run with the configuration `name`, its figures printed.
fn slow_backend_with(name: &str) -> SlowBackend {
    let s = serial(slow_backend(config(name)));
    print_slow(name, &s);
    s
}

#[test]
fn knee_probation_recovers_the_fleet_and_ramps_the_backend_back() {
    assert_recovery_goals(&recovery_with("knee-probation"));
}

/// The default's figures, for comparison; it mostly misses the ramp-back goal (its recovered backend
/// stays out while its failures fade, with a 30 s half-life), so only the run itself is checked.
#[test]
fn the_default_through_a_fault_and_recovery() {
    recovery_with("default");
}

#[test]
fn knee_probation_with_a_slow_backend() {
    assert_slow_backend_is_not_flooded(&slow_backend_with("knee-probation"));
}

#[test]
fn the_default_with_a_slow_backend() {
    assert_slow_backend_is_not_flooded(&slow_backend_with("default"));
}

/// Issue 41's p99 goal with the slowness term: the slow backend, 20 times slower, is read as such after
/// its first success, and takes a call only while the healthy ones hold 20 times its calls in flight.
#[test]
fn the_slowness_term_keeps_the_p99_within_2x_with_a_slow_backend() {
    for name in ["slow", "knee-probation-slow"] {
        let s = slow_backend_with(name);
        assert!(
            s.ratio() <= P99_WITHIN,
            "{name}: the p99 of every call within 2x of the healthy backends': {s:?}"
        );
        assert!(s.success >= 0.95, "{name}: {s:?}");
    }
}

/// Issue 41's p99 goal, which no configuration without the slowness term meets: the slow backend serves as much as it can, so
/// over 1 % of the calls wait its 200 ms service.
#[test]
#[ignore = "not met: the fleet's p99 is typically 12x the healthy backends' (205 ms / 17.6 ms in a release \
            run; 4x to 14x over 12 runs of each configuration), the slow backend taking 2.1 % of the \
            calls, its whole capacity"]
fn knee_probation_keeps_the_p99_within_2x_with_a_slow_backend() {
    let s = slow_backend_with("knee-probation");
    assert!(
        s.ratio() <= P99_WITHIN,
        "the p99 of every call within 2x of the healthy backends': {s:?}"
    );
}
