//! The default over a large fleet (more than 64 members): the first try compares a random sample of 16,
//! and the clock's rotation refreshes the cached penalties of 64 members in turn (see
//! `Algorithm::LowestScore`). What must still hold: a failing node gets no call while its penalty is high,
//! its penalty still fades in the cache that the scans read, and a fleet of equal nodes shares the calls.

mod common;

use weir::{Config, HeapBalancer, Lease, Outcome, Rng};

const MS: u64 = 1_000_000;

fn fleet(n: u64) -> HeapBalancer {
    let b = HeapBalancer::with_capacity(n as usize, Config::default()).unwrap();
    for id in 0..n {
        b.add(id).unwrap();
    }
    b
}

/// Node 7 fails once at 0 s; every other node holds one call for the whole run, so each scores 1 in
/// flight. Calls then come every millisecond, each released at once with a success. Node 7 is taken
/// again once its cached penalty (26 after one failure: 10 for the failure, 16 for its ratio) fades
/// below 1: at 151 s among 64 nodes, whose rotation refreshes every penalty every 250 ms epoch. Among
/// 1,024, where the rotation refreshes node 7's every 16th epoch (every 4 s), that comes at most those
/// 4 s later, never earlier.
#[test]
fn a_penalty_fades_in_the_cache_of_a_large_fleet() {
    let mut backs = Vec::new();
    for n in [64u64, 1_024] {
        let b = fleet(n);
        let mut rng = Rng::with_seed(3);
        let mut now = MS;
        // The failure: node 7's first call.
        let first = common::lease_on(&b, 7, now, &mut rng);
        b.release(first, Outcome::Failure, now).unwrap();
        // One call held on every other node.
        let mut held: Vec<Lease> = Vec::new();
        while held.len() < n as usize - 1 {
            let l = b.acquire(now, &mut rng).unwrap();
            assert_ne!(l.node_id(), 7, "{n} nodes: node 7 right after its failure");
            held.push(l);
        }
        let back = loop {
            now += MS;
            let l = b.acquire(now, &mut rng).unwrap();
            let id = l.node_id();
            b.release(l, Outcome::Success, now).unwrap();
            if id == 7 {
                break now;
            }
            assert!(now < 300_000 * MS, "{n} nodes: node 7 never came back");
        };
        backs.push(back as f64 / 1e9);
        for l in held {
            b.release(l, Outcome::Success, now).unwrap();
        }
    }
    let (exact, large) = (backs[0], backs[1]);
    assert!(
        (140.0..=160.0).contains(&exact),
        "64 nodes: node 7 back at {exact:.1} s"
    );
    assert!(
        (exact..=exact + 4.0).contains(&large),
        "1,024 nodes: node 7 back at {large:.1} s, 64 nodes at {exact:.1} s"
    );
}

/// Idle equal nodes: over 1,024 nodes, 102,400 calls released at once spread within 2x of the fair
/// share on every node, as the full scan's uniform tie-break spreads them at 64.
#[test]
fn a_large_fleet_shares_the_calls() {
    let b = fleet(1_024);
    let mut rng = Rng::with_seed(8);
    let mut count = vec![0u32; 1_024];
    for k in 0..102_400u64 {
        let l = b.acquire(k * 10_000, &mut rng).unwrap();
        count[l.node_id() as usize] += 1;
        b.release(l, Outcome::Success, k * 10_000 + 5_000).unwrap();
    }
    let (lo, hi) = (count.iter().min().unwrap(), count.iter().max().unwrap());
    assert!(*lo >= 50 && *hi <= 200, "min {lo}, max {hi} of a fair 100");
}

/// A zone of the fleet failing: nodes 0..512 (added first, so in consecutive slots) fail every call.
/// Once each has failed, none of them gets another call while the other half has room.
#[test]
fn a_failing_half_gets_nothing_once_known() {
    let b = fleet(1_024);
    let mut rng = Rng::with_seed(4);
    let mut now = MS;
    let mut failed = vec![false; 512];
    let mut failing_calls_after = 0;
    for _ in 0..50_000 {
        now += 100_000;
        let l = b.acquire(now, &mut rng).unwrap();
        let id = l.node_id() as usize;
        let outcome = if id < 512 {
            Outcome::Failure
        } else {
            Outcome::Success
        };
        if id < 512 {
            if failed.iter().all(|&f| f) {
                failing_calls_after += 1;
            }
            failed[id] = true;
        }
        b.release(l, outcome, now).unwrap();
    }
    assert!(failed.iter().all(|&f| f), "some failing node never tried");
    assert_eq!(failing_calls_after, 0);
}
