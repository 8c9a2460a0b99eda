//! No sinkhole: a node that fails every call, fast, must not draw the calls that wait for room.
//!
//! Tried as a new user would (issue 27, goal 6): `Fixed(4)`, 20 threads waiting with `acquire_wait`,
//! nodes 1 and 2 answer in 2 ms, node 3 fails in 200 us. A waiter is served whenever a slot comes free,
//! and the failing node frees its slots ten times as often as the healthy ones: if a waiter takes any
//! node with room, the failing one draws most of the calls (73 % of 4,000 before the fix, where
//! `Fixed(6)` gave 0.1 %: the give-up rule, which sends a caller to wait for a much better full node
//! rather than take a much worse one with room, counted only full nodes with more than 5 in flight).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};
use weir::limit::{FixedLimit, LimitAlgorithm};
use weir::{Config, HeapBalancer, Outcome};

/// Runs `calls` calls from `threads` waiting threads over nodes 1, 2 (2 ms, success) and 3 (200 us,
/// failure) with a fixed limit of `limit`; returns the calls node 3 got.
fn failing_share(limit: u32, threads: usize, calls: u64) -> (u64, u64) {
    let config = Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit }),
        ..Config::default()
    };
    let b = HeapBalancer::with_capacity(3, config).unwrap();
    for id in 1..=3 {
        b.add(id).unwrap();
    }
    let (left, to_failing) = (AtomicU64::new(calls), AtomicU64::new(0));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while left
                    .fetch_update(Relaxed, Relaxed, |n| n.checked_sub(1))
                    .is_ok()
                {
                    let deadline = Instant::now() + Duration::from_secs(10);
                    let lease = b.acquire_wait(deadline).expect("room within 10 s");
                    if lease.node_id() == 3 {
                        to_failing.fetch_add(1, Relaxed);
                        std::thread::sleep(Duration::from_micros(200));
                        lease.complete(Outcome::Failure).unwrap();
                    } else {
                        std::thread::sleep(Duration::from_millis(2));
                        lease.complete(Outcome::Success).unwrap();
                    }
                }
            });
        }
    });
    assert_eq!(b.stats().in_flight, 0);
    (to_failing.load(Relaxed), calls)
}

#[test]
fn a_failing_node_draws_few_waiters_at_a_low_fixed_limit() {
    // Fewer calls at the lowest limits, whose healthy nodes serve fewer at once.
    for (limit, calls) in [(1, 1_000), (2, 2_000), (4, 4_000)] {
        let (failing, calls) = failing_share(limit, 20, calls);
        eprintln!("Fixed({limit}), 20 waiters: the failing node got {failing} of {calls} calls");
        assert!(
            failing * 20 <= calls,
            "Fixed({limit}), 20 waiters: the failing node got {failing} of {calls} calls"
        );
    }
}

#[test]
fn a_failing_node_draws_few_waiters_at_a_higher_fixed_limit() {
    let (failing, calls) = failing_share(6, 20, 4_000);
    eprintln!("Fixed(6), 20 waiters: the failing node got {failing} of {calls} calls");
    assert!(failing * 20 <= calls, "Fixed(6): {failing} of {calls}");
}
