//! Overload protection under threads: several workers hammer one shared [`Backoff`], [`Shedder`] or
//! [`Throttle`]; afterwards every counter must equal what the callers counted, exactly. Also: none of
//! their hot paths, nor subsetting, allocates (a counting global allocator counts each thread's calls).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Barrier;
use std::thread;
use weir::{
    backoff::BackoffConfig, backoff::BackoffStats, backoff::Jitter, backoff::Step,
    backoff::MAX_BACKOFF_NS, overload::Criticality, overload::Promise, overload::RetryBudget,
    overload::RetryBudgetConfig, overload::RetryDenied, overload::ShedderConfig,
    overload::ThrottleConfig, subset::deterministic_subset, subset::random_subset, Backoff, Rng,
    Shedder, Throttle,
};
use weir_alloc_counter::{count, CountingAlloc};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000 * MS;
/// Calls per worker.
const CALLS: u64 = 50_000;
/// Calls per worker on the throttle (each sums its 120-bucket window: slower in debug builds).
const THROTTLE_CALLS: u64 = 20_000;

fn workers() -> usize {
    thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4)) + 1
}

/// Runs `f(worker, rng)` on `workers()` threads started together and returns their results.
fn hammer<T: Send>(f: impl Fn(u64, &mut Rng) -> T + Sync) -> Vec<T> {
    let n = workers();
    let start = Barrier::new(n);
    thread::scope(|s| {
        let handles: Vec<_> = (0..n as u64)
            .map(|w| {
                let (f, start) = (&f, &start);
                s.spawn(move || {
                    let mut rng = Rng::with_seed(0xB0FF + w);
                    start.wait();
                    f(w, &mut rng)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn shared_backoff_keeps_exact_metrics() {
    for jitter in [
        Jitter::default(),
        Jitter::None,
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
    ] {
        let config = BackoffConfig {
            initial_ns: 1_000,
            max_ns: 1_000_000,
            up_multiplier: 2.0,
            down_multiplier: 0.5,
            down_threshold: 3,
            jitter,
        };
        let b = Backoff::new(config).unwrap();
        let tallies = hammer(|_, rng| {
            let mut t = BackoffStats::default();
            for _ in 0..CALLS {
                // Mostly successes, so the interval keeps rising and falling back to 0.
                let d = if rng.u32(0..4) == 0 {
                    b.on_failure(rng)
                } else {
                    b.on_success(rng)
                };
                t.invocations += 1;
                match d.step {
                    Step::Up => t.went_up += 1,
                    Step::Down => t.went_down += 1,
                    Step::Hold | Step::Idle => {}
                }
                if d.step != Step::Idle {
                    t.slept += 1;
                    t.sleep_ns += d.ns;
                    assert!(d.ns <= config.max_ns);
                } else {
                    assert_eq!(d.ns, 0);
                }
            }
            t
        });
        let mut want = BackoffStats::default();
        for t in &tallies {
            want.invocations += t.invocations;
            want.went_up += t.went_up;
            want.went_down += t.went_down;
            want.slept += t.slept;
            want.sleep_ns += t.sleep_ns;
        }
        assert_eq!(b.stats(), want, "{jitter:?}");
        assert_eq!(want.invocations, CALLS * workers() as u64);
        assert!(want.went_down > 0 && want.went_up > 0, "{want:?}");
        assert!(b.interval_ns() <= config.max_ns);
    }
}

#[test]
fn shared_shedder_conserves_requests() {
    let s = Shedder::new(ShedderConfig {
        window_ns: 50 * MS,
        buckets: 5,
        cpu_threshold: 500,
        ..ShedderConfig::default()
    })
    .unwrap();
    let tallies = hammer(|w, rng| {
        let (mut allowed, mut dropped, mut ok, mut failed) = (0u64, 0u64, 0u64, 0u64);
        let mut held: Vec<Promise> = Vec::new();
        // Per-thread clocks that drift apart (1 ms steps on average, jittered), so windows of 10 ms buckets
        // rotate under contention and some `now`s are older than the newest bucket; clocks further apart
        // than the 50 ms window make it jump back and forth (thousands of rewinds racing the others).
        let mut now = w * 3 * MS;
        for _ in 0..CALLS {
            now += rng.u64(0..2 * MS);
            match s.allow(rng.u32(0..1000), now) {
                Ok(p) => {
                    allowed += 1;
                    held.push(p);
                }
                Err(e) => {
                    dropped += 1;
                    assert!(e.limit >= 0.1 && e.in_flight as f64 > e.limit);
                }
            }
            if held.len() > 8 || (!held.is_empty() && rng.bool()) {
                let p = held.swap_remove(rng.usize(0..held.len()));
                if rng.u32(0..10) == 0 {
                    s.failure(p).unwrap();
                    failed += 1;
                } else {
                    s.success(p, now + rng.u64(0..MS)).unwrap();
                    ok += 1;
                }
            }
        }
        for p in held {
            s.success(p, now).unwrap();
            ok += 1;
        }
        (allowed, dropped, ok, failed)
    });
    let st = s.stats(u64::MAX);
    let sum = |f: fn(&(u64, u64, u64, u64)) -> u64| tallies.iter().map(f).sum::<u64>();
    assert_eq!(st.allowed, sum(|t| t.0), "{st:?}");
    assert_eq!(st.dropped, sum(|t| t.1), "{st:?}");
    assert_eq!(st.succeeded, sum(|t| t.2), "{st:?}");
    assert_eq!(st.failed, sum(|t| t.3), "{st:?}");
    assert_eq!(st.in_flight, 0, "{st:?}");
    assert_eq!(st.allowed + st.dropped, CALLS * workers() as u64);
    assert!(st.dropped > 0, "the load never tripped the shedder: {st:?}");
    assert!(
        st.avg_in_flight.is_finite() && st.avg_in_flight >= 0.0,
        "{st:?}"
    );
    // A completion with nothing in flight is refused, never counted.
    let p = s.allow(0, 0).unwrap();
    let raw = p.into_raw();
    s.failure(Promise::from_raw(raw)).unwrap();
    assert!(s.failure(Promise::from_raw(raw)).is_err());
    assert_eq!(s.stats(0).in_flight, 0);
}

#[test]
fn shared_throttle_loses_no_update_across_rotations() {
    // A 120 s window of 1 s buckets; the workers' clocks cover 0..60 s, so buckets rotate constantly under
    // contention while nothing leaves the window: the window must hold every request and accept.
    let t = Throttle::new(ThrottleConfig::default()).unwrap();
    let tallies = hammer(|w, rng| {
        let mut req = [0u64; 4];
        let mut acc = [0u64; 4];
        let mut thr = [0u64; 4];
        let (mut retries, mut denied) = (0u64, 0u64);
        let mut now = w * 7 * MS;
        for _ in 0..THROTTLE_CALLS {
            now = (now + rng.u64(0..5 * MS)).min(59 * SEC);
            let c = Criticality::ALL[rng.usize(0..4)];
            let i = c as usize;
            let r = if rng.u32(0..20) == 0 {
                match t.allow_retry(c, now, rng) {
                    Ok(()) => {
                        retries += 1;
                        Ok(())
                    }
                    Err(RetryDenied::Budget { .. }) => {
                        denied += 1;
                        continue;
                    }
                    Err(RetryDenied::Throttled(e)) => Err(e),
                    Err(other) => panic!("a retry refused for an unknown reason: {other}"),
                }
            } else {
                t.allow(c, now, rng)
            };
            req[i] += 1;
            match r {
                // The backend accepts about half: throttling starts, more for lower criticalities.
                Ok(()) if rng.bool() => {
                    t.accepted(c, now);
                    acc[i] += 1;
                }
                Ok(()) => {}
                Err(e) => {
                    assert_eq!(e.criticality, c);
                    thr[i] += 1;
                }
            }
        }
        (req, acc, thr, retries, denied)
    });
    let st = t.stats(60 * SEC);
    let mut req = [0u64; 4];
    let mut acc = [0u64; 4];
    let mut thr = [0u64; 4];
    for (r, a, th, _, _) in &tallies {
        for i in 0..4 {
            req[i] += r[i];
            acc[i] += a[i];
            thr[i] += th[i];
        }
    }
    assert_eq!(st.total_requests, req);
    assert_eq!(st.total_accepts, acc);
    assert_eq!(st.total_throttled, thr);
    assert_eq!(st.window_requests, req, "a request was lost in a rotation");
    assert_eq!(st.window_accepts, acc, "an accept was lost in a rotation");
    assert_eq!(st.total_retries, tallies.iter().map(|t| t.3).sum::<u64>());
    assert_eq!(st.window_retries, st.total_retries);
    assert_eq!(
        st.total_retries_denied,
        tallies.iter().map(|t| t.4).sum::<u64>()
    );
    assert!(
        thr[3] > thr[0],
        "SHEDDABLE must be throttled more than CRITICAL_PLUS: {thr:?}"
    );
}

#[test]
fn shared_windows_recover_from_wild_nows() {
    // The workers share one sane clock (50 µs per call, a few µs apart), but every 500th call of each takes
    // a wild `now`: u64::MAX, three days ahead, or 0 (a jump back of 1000 s). Both windows (1 s of 100 ms
    // buckets) jump forward and back under contention while the others write and read. The totals stay
    // exact, and after the workers are done one window of sane traffic reads exactly as it does on a
    // shedder and a throttle that never saw the workers at all.
    const BASE: u64 = 1_000 * SEC;
    let shedder = || {
        Shedder::new(ShedderConfig {
            window_ns: SEC,
            buckets: 10,
            cpu_threshold: 500,
            ..ShedderConfig::default()
        })
        .unwrap()
    };
    let throttle = || {
        Throttle::new(ThrottleConfig {
            window_ns: SEC,
            buckets: 10,
            ..ThrottleConfig::default()
        })
        .unwrap()
    };
    let (s, t) = (shedder(), throttle());
    let tallies = hammer(|w, rng| {
        // Shedder: allowed, dropped, succeeded, failed; throttle: requests and accepts per criticality.
        let (mut shed, mut req, mut acc) = ([0u64; 4], [0u64; 4], [0u64; 4]);
        for i in 0..THROTTLE_CALLS {
            let now = match (i % 500, (i / 500 + w) % 3) {
                (499, 0) => u64::MAX,
                (499, 1) => BASE + 3 * 86_400 * SEC,
                (499, _) => 0,
                _ => BASE + i * 50_000 + w * 3_000,
            };
            match s.allow(rng.u32(0..1000), now) {
                Ok(p) if rng.bool() => {
                    s.success(p, now.saturating_add(rng.u64(0..MS))).unwrap();
                    shed[0] += 1;
                    shed[2] += 1;
                }
                Ok(p) => {
                    s.failure(p).unwrap();
                    shed[0] += 1;
                    shed[3] += 1;
                }
                Err(_) => shed[1] += 1,
            }
            let c = Criticality::ALL[rng.usize(0..4)];
            req[c as usize] += 1;
            if t.allow(c, now, rng).is_ok() && rng.bool() {
                t.accepted(c, now);
                acc[c as usize] += 1;
            }
        }
        [shed, req, acc]
    });
    let total =
        |k: usize| -> [u64; 4] { std::array::from_fn(|i| tallies.iter().map(|t| t[k][i]).sum()) };
    let st = s.stats(BASE);
    assert_eq!([st.allowed, st.dropped, st.succeeded, st.failed], total(0));
    assert_eq!(st.in_flight, 0);
    let tt = t.stats(BASE);
    assert_eq!((tt.total_requests, tt.total_accepts), (total(1), total(2)));
    // One window of sane traffic, 10 s after the workers' sane times, against twins that never saw them.
    let (s_twin, t_twin) = (shedder(), throttle());
    let mut rng = Rng::with_seed(7);
    for k in 0..15u64 {
        let at = BASE + 10 * SEC + k * 100 * MS;
        if k < 10 {
            for sh in [&s, &s_twin] {
                for _ in 0..(5 + k % 4) {
                    let p = sh.allow(0, at - (2 + k % 3) * MS).unwrap();
                    sh.success(p, at).unwrap();
                }
            }
            for th in [&t, &t_twin] {
                for i in 0..(10 + k % 5) {
                    let c = Criticality::ALL[(i % 4) as usize];
                    let _ = th.allow(c, at, &mut rng);
                    if i % 3 == 0 {
                        th.accepted(c, at);
                    }
                }
            }
        }
        let (a, b) = (s.stats(at), s_twin.stats(at));
        assert_eq!(
            (a.max_pass, a.min_rt_ms, a.max_flight),
            (b.max_pass, b.min_rt_ms, b.max_flight),
            "shedder at {k}"
        );
        let (a, b) = (t.stats(at), t_twin.stats(at));
        assert_eq!(
            (a.window_requests, a.window_accepts, a.window_retries),
            (b.window_requests, b.window_accepts, b.window_retries),
            "throttle at {k}"
        );
        for c in Criticality::ALL {
            assert_eq!(t.probability(c, at), t_twin.probability(c, at));
        }
    }
}

#[test]
fn shared_retry_budget_counts_exactly_and_holds_its_bound() {
    // 20 % of the requests and 10 a second over a 1 s window of 10 buckets. The workers share one clock
    // (as callers of one process do), which each call moves on by 0..40 us, so it covers about 3 s and
    // buckets rotate while they race. Each worker counts a request, and for one request in three (a
    // failed first try) asks for a retry, twice at most.
    let config = RetryBudgetConfig {
        ratio: 0.2,
        per_second: 10.0,
        ..RetryBudgetConfig::default()
    }
    .window(std::time::Duration::from_secs(1));
    let b = RetryBudget::new(config).unwrap();
    let clock = AtomicU64::new(0);
    let step = 2 * 3 * SEC / (CALLS * workers() as u64);
    let tallies = hammer(|_, rng| {
        let (mut requests, mut admitted, mut denied) = (0u64, 0u64, 0u64);
        for _ in 0..CALLS {
            // Relaxed: a clock reading; only its value matters.
            let now = clock.fetch_add(rng.u64(0..step), Relaxed);
            b.request(now);
            requests += 1;
            if rng.u32(0..3) != 0 {
                continue;
            }
            for _ in 0..2 {
                match b.try_retry(now) {
                    Ok(()) => admitted += 1,
                    Err(e) => {
                        denied += 1;
                        // The refusal says what it saw: at or over the budget for what it counted.
                        assert!(e.retries as f64 >= 0.2 * e.requests as f64 + 10.0, "{e:?}");
                        break;
                    }
                }
            }
        }
        (requests, admitted, denied)
    });
    let sum = |f: fn(&(u64, u64, u64)) -> u64| tallies.iter().map(f).sum::<u64>();
    let st = b.stats(u64::MAX);
    assert_eq!(st.requests, sum(|t| t.0), "{st:?}");
    assert_eq!(st.retries, sum(|t| t.1), "{st:?}");
    assert_eq!(st.denied, sum(|t| t.2), "{st:?}");
    assert_eq!(st.requests, CALLS * workers() as u64);
    // One request in three fails and wants up to two retries: about 67 % of the requests, far over the
    // budget, so the budget refused many, and what it admitted stays near 20 % + 10 a second: over the
    // 3 s the clock covers, at most 20 % of all requests and the floor of each of about 4 windows, plus
    // the overshoot of checks that raced another's admission (at most one per worker per race; a
    // generous 1 % of the calls here).
    assert!(
        st.denied > st.retries / 4,
        "the budget never refused: {st:?}"
    );
    let bound = 0.2 * st.requests as f64 + 10.0 * 4.0 + (workers() as u64 * CALLS / 100) as f64;
    assert!(
        (st.retries as f64) <= bound,
        "{} retries over {bound}: {st:?}",
        st.retries
    );
    assert!(
        st.retries as f64 >= 0.15 * st.requests as f64,
        "the budget admitted far less than it allows: {st:?}"
    );
}

#[test]
fn hot_paths_do_not_allocate() {
    let shedder = Shedder::new(ShedderConfig {
        window_ns: 10 * MS,
        buckets: 10,
        cpu_threshold: 100,
        ..ShedderConfig::default()
    })
    .unwrap();
    let throttle = Throttle::new(ThrottleConfig {
        window_ns: 10 * MS,
        buckets: 10,
        ..ThrottleConfig::default()
    })
    .unwrap();
    let backoff = Backoff::new(BackoffConfig {
        initial_ns: 10,
        max_ns: MAX_BACKOFF_NS,
        ..BackoffConfig::default()
    })
    .unwrap();
    let backends: Vec<u64> = (0..300).collect();
    let mut scratch = vec![0u64; 300];
    let mut rng = Rng::with_seed(1);
    let ((), n) = count(|| {
        let mut held = [None, None, None, None];
        for i in 0..20_000u64 {
            let now = i * 10_000; // the windows rotate every 100 calls
            let slot = (i % 4) as usize;
            if let Some(p) = held[slot].take() {
                if i % 3 == 0 {
                    shedder.failure(p).unwrap();
                } else {
                    shedder.success(p, now).unwrap();
                }
            }
            held[slot] = shedder.allow((i % 1000) as u32, now).ok();
            let c = Criticality::ALL[(i % 4) as usize];
            if throttle.allow(c, now, &mut rng).is_ok() && i % 2 == 0 {
                throttle.accepted(c, now);
            }
            let _ = throttle.allow_retry(c, now, &mut rng);
            if i % 5 == 0 {
                backoff.on_failure(&mut rng);
            } else {
                backoff.on_success(&mut rng);
            }
            let _ = shedder.stats(now);
            let _ = throttle.stats(now);
            let _ = backoff.stats();
            if i % 100 == 0 {
                deterministic_subset(&backends, i, 10, &mut scratch).unwrap();
                random_subset(&backends, 30, &mut rng, &mut scratch).unwrap();
            }
        }
        for p in held.into_iter().flatten() {
            shedder.failure(p).unwrap();
        }
        // The drop path, at the clock's last time (a `now` of 0 here would be a jump back of 20 windows,
        // which reads a fresh window): 10 in flight and a risen average against the window's limit at
        // full CPU (a tenth of 67 passes of 1 ms per bucket: 6.7).
        let end = 20_000 * 10_000;
        let mut held = [const { None }; 20];
        for h in held.iter_mut() {
            *h = shedder.allow(0, end).ok();
        }
        for p in held[..10].iter_mut().filter_map(Option::take) {
            shedder.failure(p).unwrap();
        }
        assert!(shedder.allow(1000, end).is_err());
        for p in held.iter_mut().filter_map(Option::take) {
            shedder.failure(p).unwrap();
        }
    });
    assert_eq!(n, 0, "allocations on the overload hot paths");
    assert!(shedder.stats(0).dropped > 0);
}
