//! Limiters inside a balancer: a node whose latency grows under load gets its limit cut by the
//! latency-based algorithms (Vegas, Gradient2, CIAD with an RTT tolerance), and the cascade moves the
//! traffic it can no longer take to the other nodes.
//!
//! A deterministic simulation on a virtual clock: three nodes, open-loop arrivals (1 request every 2 ms
//! for the first 2 s, then 3 per millisecond), every call succeeds. Nodes 2 and 3 answer in 10 ms whatever
//! their load. Node 1 is a server that queues: a call that arrives with `k` calls in flight (itself
//! included) takes `10 ms * (1 + k / 10)`: 10 ms idle, 30 ms (three times slower) at 20 in flight, and
//! slower still beyond. With a fixed limit the three nodes share the load evenly (their health is
//! equal) and node 1's calls are slow; with Vegas or Gradient2 node 1's limit falls, it fills up, and the
//! cascade sends the overflow to nodes 2 and 3.
#![cfg(all(feature = "std", not(loom)))]

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use weir::{
    limit::CiadLimit, limit::FixedLimit, limit::Gradient2Limit, limit::LimitAlgorithm,
    limit::VegasLimit, Balancer, Config, HeapBalancer, Lease, Outcome, Rng,
};

const MS: u64 = 1_000_000;
/// Simulated time.
const DURATION_MS: u64 = 20_000;
/// Picks are counted from here on (after the limits settled).
const MEASURE_FROM_MS: u64 = 10_000;

/// What a run saw: picks per node after `MEASURE_FROM_MS`, final limits, and how many of node 1's
/// measured calls took 20 ms or more (two or more times its idle latency).
#[derive(Debug)]
struct Run {
    picks: [u64; 3],
    limits: [u32; 3],
    slow_on_1: u64,
    refused: u64,
}

/// Runs the simulation until `end_ms`, counting picks from `measure_from_ms`; `rtt_1(t_ms, k)` is node 1's
/// latency for a call arriving at `t_ms` with `k` calls in flight.
fn run_with(
    limit: LimitAlgorithm,
    end_ms: u64,
    measure_from_ms: u64,
    rtt_1: impl Fn(u64, u32) -> u64,
) -> Run {
    let b: HeapBalancer = Balancer::with_capacity(
        3,
        Config {
            limit,
            ..Config::cascade()
        },
    )
    .unwrap();
    for id in 1..=3 {
        b.add(id).unwrap();
    }
    let mut rng = Rng::with_seed(7);
    // Leases in flight, by completion time (then by an arrival counter, so the order is total).
    let mut inflight: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
    let mut leases: std::collections::HashMap<u64, Lease> = std::collections::HashMap::new();
    let mut seq = 0u64;
    let mut out = Run {
        picks: [0; 3],
        limits: [0; 3],
        slow_on_1: 0,
        refused: 0,
    };
    for t in 1..=end_ms {
        let now = t * MS;
        while let Some(&Reverse((done, k))) = inflight.peek() {
            if done > now {
                break;
            }
            inflight.pop();
            let lease = leases.remove(&k).unwrap();
            b.release(lease, Outcome::Success, done).unwrap();
        }
        let arrivals = if t <= 2_000 { u64::from(t % 2 == 0) } else { 3 };
        for _ in 0..arrivals {
            let Ok(lease) = b.acquire(now, &mut rng) else {
                out.refused += 1;
                continue;
            };
            let id = lease.node_id();
            let rtt = if id == 1 {
                rtt_1(t, lease.inflight_at_acquire())
            } else {
                10 * MS
            };
            let slow = rtt >= 20 * MS;
            if t >= measure_from_ms {
                out.picks[id as usize - 1] += 1;
                out.slow_on_1 += u64::from(slow);
            }
            seq += 1;
            inflight.push(Reverse((now + rtt, seq)));
            leases.insert(seq, lease);
        }
    }
    for id in 1..=3u64 {
        out.limits[id as usize - 1] = b.node(id, end_ms * MS).unwrap().limit;
    }
    out
}

/// The queueing server: `10 ms * (1 + k / 10)` for node 1.
fn run(limit: LimitAlgorithm) -> Run {
    run_with(limit, DURATION_MS, MEASURE_FROM_MS, |_, k| {
        10 * MS + MS * u64::from(k)
    })
}

/// Node 1's share of the measured picks.
fn share_of_1(r: &Run) -> f64 {
    r.picks[0] as f64 / r.picks.iter().sum::<u64>() as f64
}

#[test]
fn fixed_limit_keeps_sending_to_the_slow_node() {
    let r = run(LimitAlgorithm::Fixed(FixedLimit::default()));
    eprintln!("fixed: {r:?}, node 1's share {:.3}", share_of_1(&r));
    // Equal health: node 1 takes its share until its queue reaches the cap of 100 in flight (110 ms per
    // call), and nearly all of its calls are slow.
    assert!(share_of_1(&r) > 0.29, "{r:?}");
    assert!(r.slow_on_1 * 100 > r.picks[0] * 99, "{r:?}");
    assert_eq!(r.limits, [100, 100, 100]);
    assert_eq!(r.refused, 0);
}

/// `from` is node 1's limit before the slowdown took effect.
fn assert_moves_traffic(name: &str, r: &Run, from: u32) {
    eprintln!("{name}: {r:?}, node 1's share {:.3}", share_of_1(r));
    // Node 1's limit was cut below where it was and below both healthy nodes'.
    assert!(r.limits[0] < from, "{name}: {r:?}");
    assert!(r.limits[0] < r.limits[1].min(r.limits[2]), "{name}: {r:?}");
    // The cascade moved traffic away from it: well under a third of the picks.
    assert!(share_of_1(r) < 0.25, "{name}: {r:?}");
    assert_eq!(
        r.refused, 0,
        "{name}: the other nodes had room for everything"
    );
}

#[test]
fn vegas_cuts_the_slow_node_and_the_cascade_moves_traffic() {
    let vegas = VegasLimit::default();
    let r = run(LimitAlgorithm::Vegas(vegas));
    assert_moves_traffic("vegas", &r, vegas.initial_limit);
}

/// CIAD reads only loss, so a node that slows without refusing keeps growing its limit; with an RTT
/// tolerance of 2 a success counts as a drop once node 1's smoothed RTT is twice its baseline (about 10
/// in flight here), so its limit stops at its knee and the cascade sends the rest elsewhere.
#[test]
fn ciad_with_an_rtt_tolerance_cuts_the_slow_node_and_the_cascade_moves_traffic() {
    let loss_only = CiadLimit::default();
    let r = run(LimitAlgorithm::Ciad(loss_only));
    eprintln!(
        "ciad, loss only: {r:?}, node 1's share {:.3}",
        share_of_1(&r)
    );
    assert!(r.limits[0] > 100 && share_of_1(&r) > 0.29, "{r:?}");
    assert_eq!(r.slow_on_1, r.picks[0], "{r:?}");
    let tolerant = CiadLimit {
        rtt_tolerance: 2.0,
        ..loss_only
    };
    let r = run(LimitAlgorithm::Ciad(tolerant));
    assert_moves_traffic("ciad, rtt tolerance 2", &r, tolerant.initial_limit);
    // It saws around the knee (10 in flight, where a call takes twice the idle 10 ms), as CIAD saws
    // below a loss threshold: cut by a tenth per slow success, grown by 1/L per full one.
    assert!((5..=12).contains(&r.limits[0]), "{r:?}");
}

/// Gradient2 compares the recent latency with its own long-term average, so it reacts to a *change*:
/// node 1 answers in 10 ms for 8 s, then three times slower (30 ms) under the same load. Its limit is cut
/// at once (to its minimum of 20 within about ten samples) and the cascade moves traffic in the 150 ms
/// that follow. Within a few hundred samples the long-term average catches up with the new latency and
/// the limit grows back, and under a load that grows slowly it never cuts: Netflix's Gradient2 measures
/// change, not level (Vegas, above, measures level).
#[test]
fn gradient2_cuts_the_slow_node_and_the_cascade_moves_traffic() {
    let g2 = Gradient2Limit::default();
    let before = run_with(LimitAlgorithm::Gradient2(g2), 8_000, 6_000, |_, _| 10 * MS);
    eprintln!("gradient2 before the change: {before:?}");
    assert!((share_of_1(&before) - 1.0 / 3.0).abs() < 0.02, "{before:?}");
    let r = run_with(LimitAlgorithm::Gradient2(g2), 8_150, 8_010, |t, _| {
        if t < 8_000 {
            10 * MS
        } else {
            30 * MS
        }
    });
    assert_moves_traffic("gradient2", &r, before.limits[0]);
}

/// A balancer of one node (id 1) with a fixed limit of 10.
fn one_node_limited_to_10() -> HeapBalancer {
    let b: HeapBalancer = Balancer::with_capacity(
        1,
        Config {
            limit: LimitAlgorithm::Fixed(FixedLimit { limit: 10 }),
            ..Config::cascade()
        },
    )
    .unwrap();
    b.add(1).unwrap();
    b
}

/// Netflix `SimpleLimiterTest` (FixedLimit 10) against a one-node balancer: ten acquires succeed, the
/// eleventh is refused with 10 in flight; releasing one leaves 9, and the next acquire succeeds.
/// (Netflix's bypass predicate has no counterpart: weir has no request classes.)
#[test]
fn netflix_simple_limiter_vector() {
    let b = one_node_limited_to_10();
    let mut rng = Rng::with_seed(1);
    let mut held: Vec<Lease> = (0..10).map(|_| b.acquire(0, &mut rng).unwrap()).collect();
    assert_eq!(
        b.acquire(0, &mut rng),
        Err(weir::balance::Rejected::AllBusy)
    );
    assert_eq!(b.node(1, 0).unwrap().in_flight, 10);
    b.release(held.pop().unwrap(), Outcome::Success, 1).unwrap();
    assert_eq!(b.node(1, 1).unwrap().in_flight, 9);
    held.push(b.acquire(1, &mut rng).unwrap());
    assert_eq!(b.node(1, 1).unwrap().in_flight, 10);
}

/// Netflix `SimpleLimiterTest`'s concurrent case, scaled to this machine: 8 threads x 5,000 attempts on a
/// limit of 10. Every attempt is either admitted or refused, and no more than 10 leases are ever held at
/// once (counted outside the balancer).
#[test]
fn netflix_simple_limiter_concurrent_vector() {
    use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
    let b = one_node_limited_to_10();
    let (held, max_held, admitted, refused) = (
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
    );
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let (b, held, max_held, admitted, refused) =
                (&b, &held, &max_held, &admitted, &refused);
            s.spawn(move || {
                let mut rng = Rng::with_seed(t);
                for i in 0..5_000u64 {
                    match b.acquire(i, &mut rng) {
                        Ok(lease) => {
                            let now_held = held.fetch_add(1, SeqCst) + 1;
                            max_held.fetch_max(now_held, SeqCst);
                            admitted.fetch_add(1, SeqCst);
                            std::hint::spin_loop();
                            held.fetch_sub(1, SeqCst);
                            b.release(lease, Outcome::Success, i + 1).unwrap();
                        }
                        Err(e) => {
                            assert_eq!(e, weir::balance::Rejected::AllBusy);
                            refused.fetch_add(1, SeqCst);
                        }
                    }
                }
            });
        }
    });
    assert!(max_held.load(SeqCst) <= 10, "{}", max_held.load(SeqCst));
    assert_eq!(admitted.load(SeqCst) + refused.load(SeqCst), 40_000);
    assert_eq!(b.stats().released(Outcome::Success), admitted.load(SeqCst));
    assert_eq!(b.node(1, 0).unwrap().in_flight, 0);
}

/// A limit whose initial value lies outside its own bounds is refused when the balancer is built (not
/// clamped, not started out of bounds), also inside the windowed wrapper; the edges are accepted.
#[test]
fn out_of_bounds_initial_limit_is_refused_at_construction() {
    use weir::balance::ConfigError;
    use weir::limit::{AimdLimit, InnerAlgorithm, WindowedLimit, MAX_LIMIT};
    let build = |limit: LimitAlgorithm| {
        let config = Config {
            limit,
            ..Config::cascade()
        };
        let built = HeapBalancer::with_capacity(1, config).map(|_| ());
        assert_eq!(built, config.validate(), "{limit:?}");
        built
    };
    let aimd = |initial_limit| AimdLimit {
        initial_limit,
        max_limit: 200,
        ..AimdLimit::default()
    };
    // Each algorithm's rule is tested with the algorithm; here, the balancer refuses what they refuse.
    let refused = [
        LimitAlgorithm::Fixed(FixedLimit {
            limit: MAX_LIMIT + 1,
        }),
        LimitAlgorithm::Aimd(aimd(500)),
        LimitAlgorithm::Aimd(aimd(19)),
        LimitAlgorithm::Vegas(VegasLimit {
            initial_limit: 0,
            ..VegasLimit::default()
        }),
        LimitAlgorithm::Windowed(WindowedLimit {
            inner: InnerAlgorithm::Aimd(aimd(500)),
            ..WindowedLimit::default()
        }),
    ];
    for limit in refused {
        let e = build(limit).unwrap_err();
        assert_eq!(e, ConfigError::LimitRange, "{limit:?}");
        assert!(
            e.to_string()
                .contains("min_limit <= initial_limit <= max_limit"),
            "{e}"
        );
    }
    for limit in [
        LimitAlgorithm::Aimd(aimd(20)),
        LimitAlgorithm::Aimd(aimd(200)),
        LimitAlgorithm::Windowed(WindowedLimit {
            inner: InnerAlgorithm::Aimd(aimd(200)),
            ..WindowedLimit::default()
        }),
        LimitAlgorithm::Vegas(VegasLimit {
            initial_limit: 1,
            ..VegasLimit::default()
        }),
        LimitAlgorithm::default(),
    ] {
        assert_eq!(build(limit), Ok(()), "{limit:?}");
    }
}
