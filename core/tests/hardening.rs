//! Four ways safe code could once corrupt or degrade a balancer silently, each with the case that showed it:
//! a lease released into a balancer that did not grant it, a release dated far in the future, two balancers
//! built over the same slots, and costs that grew with the capacity instead of the members.

mod common;

use weir::balance::{
    ConfigError, EwmaHealth, RawLease, Rejected, ReleaseError, Waiting, Weighted, WeightedHealth,
};
use weir::limit::{FixedLimit, LimitAlgorithm};
use weir::{Balancer, Config, HeapBalancer, Lease, NodeSlot, Outcome, Rng};

const SEC: u64 = 1_000_000_000;

fn fixed(limit: u32) -> Config {
    Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit }),
        ..Config::cascade()
    }
}

/// Everything a refused release must leave as it was.
fn state<S: AsRef<[NodeSlot]>, W: Waiting>(
    b: &Balancer<S, W>,
    now: u64,
) -> (weir::balance::Stats, Vec<weir::balance::NodeSnapshot>) {
    (b.stats(), b.nodes(now).collect())
}

// 1. A lease is bound to the balancer that granted it.

#[test]
fn a_lease_from_another_balancer_is_refused_and_changes_nothing() {
    let a = HeapBalancer::with_capacity(1, fixed(1)).unwrap();
    let b = HeapBalancer::with_capacity(1, fixed(1)).unwrap();
    a.add(1).unwrap();
    b.add(1).unwrap(); // the same id in the same slot, as in the report
    let mut rng = Rng::with_seed(1);
    let theirs = a.acquire(0, &mut rng).unwrap();
    let mine = b.acquire(0, &mut rng).unwrap();
    let before = state(&b, 10);

    assert_eq!(
        b.release(theirs, Outcome::Success, 10),
        Err(ReleaseError::InvalidLease)
    );
    assert_eq!(
        state(&b, 10),
        before,
        "a foreign lease changed the balancer"
    );
    // B's limit of 1 holds: its own lease is still the one in flight.
    assert_eq!(b.acquire(10, &mut rng), Err(Rejected::AllBusy));
    assert_eq!(b.release(mine, Outcome::Success, 10), Ok(()));
    assert_eq!(b.stats().released(Outcome::Success), 1);
    // A's lease was consumed by the refused release: A still counts it in flight.
    assert_eq!(a.stats().in_flight, 1);
}

#[test]
fn a_foreign_lease_for_a_node_the_balancer_lacks_is_invalid_not_stale() {
    let a = HeapBalancer::with_capacity(2, Config::cascade()).unwrap();
    let b = HeapBalancer::with_capacity(2, Config::cascade()).unwrap();
    a.add(1).unwrap();
    b.add(2).unwrap();
    let theirs = a.acquire(0, &mut Rng::with_seed(1)).unwrap();
    let before = state(&b, 10);
    assert_eq!(
        b.release(theirs, Outcome::Failure, 10),
        Err(ReleaseError::InvalidLease)
    );
    assert_eq!(state(&b, 10), before);
    assert_eq!(b.stats().released_stale, 0);
}

#[test]
fn raw_leases_are_checked_field_by_field() {
    let b = HeapBalancer::with_capacity(2, fixed(1)).unwrap();
    let other = HeapBalancer::with_capacity(2, fixed(1)).unwrap();
    b.add(1).unwrap();
    b.add(2).unwrap();
    other.add(1).unwrap();
    let mut rng = Rng::with_seed(4);
    let raw = b.acquire(0, &mut rng).unwrap().into_raw();
    let foreign = other.acquire(0, &mut rng).unwrap().into_raw();
    let before = state(&b, 10);
    let forged = [
        // A real slot and generation, another id (its neighbour's).
        RawLease {
            id: 3 - raw.id,
            ..raw
        },
        RawLease {
            generation: raw.generation.wrapping_add(1),
            ..raw
        },
        RawLease { slot: 7, ..raw },
        RawLease {
            balancer: raw.balancer.wrapping_add(1),
            ..raw
        },
        RawLease { balancer: 0, ..raw },
        // Another balancer's lease through the raw-parts path the bindings use.
        foreign,
        RawLease {
            id: 0,
            start: 0,
            slot: 0,
            inflight: 0,
            generation: 0,
            balancer: 0,
        },
    ];
    for f in forged {
        for outcome in Outcome::ALL {
            assert_eq!(
                b.release(Lease::from_raw(f), outcome, 10),
                Err(ReleaseError::InvalidLease),
                "{f:?}"
            );
        }
    }
    assert_eq!(
        state(&b, 10),
        before,
        "a forged raw lease changed the balancer"
    );
    assert_eq!(
        b.release(Lease::from_raw(raw), Outcome::Success, 10),
        Ok(())
    );
    // Twice: refused.
    assert_eq!(
        b.release(Lease::from_raw(raw), Outcome::Success, 10),
        Err(ReleaseError::InvalidLease)
    );
    assert_eq!(b.stats().acquired, 1);
}

#[test]
fn a_lease_outlives_its_balancer_harmlessly() {
    static SLOTS: [NodeSlot; 2] = [const { NodeSlot::new() }; 2];
    let first = Balancer::new(&SLOTS[..], Config::cascade()).unwrap();
    first.add(1).unwrap();
    let old = first.acquire(0, &mut Rng::with_seed(1)).unwrap().into_raw();
    drop(first);
    let second = Balancer::new(&SLOTS[..], Config::cascade()).unwrap();
    second.add(1).unwrap();
    let mine = second.acquire(0, &mut Rng::with_seed(1)).unwrap();
    assert_eq!(
        second.release(Lease::from_raw(old), Outcome::Failure, 5),
        Err(ReleaseError::InvalidLease)
    );
    assert_eq!(second.stats().in_flight, 1);
    second.release(mine, Outcome::Success, 5).unwrap();
    assert_eq!(second.node(1, 5).unwrap().window_finished, 1);
}

// 2. One release with a far-future `now` cannot silence a node.

/// Two nodes with a history of successes; one release of node `victim` dated at `wild`; then sane traffic
/// for 60,000 picks over ten minutes, all successes. Returns the victim's share of those picks and its
/// snapshot at the end.
fn after_one_wild_release(health: WeightedHealth, wild: u64) -> (f64, weir::balance::NodeSnapshot) {
    let b = HeapBalancer::with_capacity(
        2,
        common::weighted(Weighted {
            health,
            ..Weighted::CASCADE
        }),
    )
    .unwrap();
    b.add(1).unwrap();
    b.add(2).unwrap();
    let mut rng = Rng::with_seed(9);
    let mut now = 1_000 * SEC;
    for _ in 0..200 {
        let l = b.acquire(now, &mut rng).unwrap();
        b.release(l, Outcome::Success, now + 1_000_000).unwrap();
        now += SEC / 20;
    }
    let victim = common::lease_on(&b, 1, now, &mut rng);
    b.release(victim, Outcome::Failure, wild).unwrap();
    let mut picks = 0u32;
    for _ in 0..60_000 {
        now += 10_000_000; // 100 per second, ten minutes
        let l = b.acquire(now, &mut rng).unwrap();
        picks += u32::from(l.node_id() == 1);
        b.release(l, Outcome::Success, now + 1_000_000).unwrap();
    }
    (f64::from(picks) / 60_000.0, b.node(1, now).unwrap())
}

#[test]
fn a_far_future_release_does_not_silence_a_node() {
    for health in [
        WeightedHealth::BUCKETS,
        WeightedHealth::Ewma(EwmaHealth { half_life: 20 }),
    ] {
        for wild in [u64::MAX, u64::MAX / 2, 1_000 * SEC + 3 * 86_400 * SEC] {
            let (share, node) = after_one_wild_release(health, wild);
            // It received 0 of 60,000 picks before; with a healthy peer and the same successes it must
            // carry about half of the traffic.
            assert!(
                (0.4..0.6).contains(&share),
                "{health:?} {wild}: share {share}, {node:?}"
            );
            assert!(node.success_rate > 0.999, "{health:?} {wild}: {node:?}");
            if let WeightedHealth::Buckets(_) = health {
                // The window ages: ten minutes later only the last 30 s of outcomes are in it.
                assert!(node.window_finished < 3_000, "{node:?}");
                assert_eq!(
                    (node.window_finished, node.sticky_finished),
                    (node.window_succeeded, 0)
                );
            }
        }
    }
}

#[test]
fn a_far_future_release_keeps_the_nodes_earlier_successes_and_is_dated_at_the_horizon() {
    let b = HeapBalancer::with_capacity(1, Config::cascade()).unwrap();
    b.add(1).unwrap();
    let mut rng = Rng::with_seed(2);
    let t = 100 * SEC;
    for _ in 0..3 {
        let l = b.acquire(t, &mut rng).unwrap();
        b.release(l, Outcome::Success, t).unwrap();
    }
    let l = b.acquire(t, &mut rng).unwrap();
    b.release(l, Outcome::Failure, u64::MAX).unwrap();
    // The failure is dated at the end of the epoch after the clock's (epoch 20, from 100 s): epoch 21,
    // where the successes of epoch 20 weigh 1/3 each. Nothing was erased.
    let n = b.node(1, t).unwrap();
    assert_eq!((n.window_finished, n.window_succeeded), (4, 3), "{n:?}");
    assert_eq!(n.success_rate, (3.0 / 3.0) / (1.0 + 3.0 / 3.0), "{n:?}");
    // The window goes on ageing: a sane acquire and release ten minutes later see only themselves.
    let later = 700 * SEC;
    let l = b.acquire(later, &mut rng).unwrap();
    b.release(l, Outcome::Success, later).unwrap();
    let n = b.node(1, later).unwrap();
    assert_eq!(
        (n.window_finished, n.window_succeeded, n.success_rate),
        (1, 1, 1.0),
        "{n:?}"
    );
}

#[test]
fn the_horizon_dates_long_calls_of_an_idle_balancer() {
    // A call that outlasts the horizon while nothing else is acquired is dated at it: its RTT as the
    // limiter sees it is cut there too (documented on `release`).
    let b = HeapBalancer::with_capacity(1, Config::cascade()).unwrap();
    b.add(1).unwrap();
    let l = b.acquire(7 * SEC, &mut Rng::with_seed(1)).unwrap();
    b.release(l, Outcome::Success, 500 * SEC).unwrap();
    // Dated at the end of epoch 2 (the clock's epoch is 1, from 7 s): in the window up to epoch 7.
    assert_eq!(b.node(1, 39 * SEC).unwrap().window_finished, 1);
    assert_eq!(b.node(1, 40 * SEC).unwrap().sticky_finished, 1);
}

// 3. Storage serves one balancer at a time.

#[test]
fn two_balancers_cannot_share_static_slots() {
    static SLOTS: [NodeSlot; 4] = [const { NodeSlot::new() }; 4];
    let first = Balancer::new(&SLOTS[..], Config::cascade()).unwrap();
    first.add(1).unwrap();
    let l = first.acquire(0, &mut Rng::with_seed(1)).unwrap();
    for part in [&SLOTS[..], &SLOTS[1..], &SLOTS[3..]] {
        assert_eq!(
            Balancer::new(part, Config::cascade()).err(),
            Some(ConfigError::SlotsInUse)
        );
    }
    // The refused constructions reset nothing: the first balancer's node, lease and stats are intact.
    assert_eq!(first.nodes(0).map(|n| n.id).collect::<Vec<_>>(), [1]);
    assert_eq!(first.stats().in_flight, 1);
    first.release(l, Outcome::Success, 1).unwrap();
    assert_eq!(first.node(1, 1).unwrap().window_finished, 1);
    drop(first);
    // Given back on drop, whole: a new balancer gets every slot, reset.
    let second = Balancer::new(&SLOTS[..], Config::cascade()).unwrap();
    assert_eq!(second.nodes(0).count(), 0);
    assert_eq!(second.stats(), weir::balance::Stats::default());
}

#[test]
fn a_refused_claim_gives_back_the_slots_it_took() {
    static SLOTS: [NodeSlot; 4] = [const { NodeSlot::new() }; 4];
    let tail = Balancer::new(&SLOTS[2..], Config::cascade()).unwrap();
    // Claims slots 0 and 1, then finds slot 2 taken: it must give 0 and 1 back.
    assert_eq!(
        Balancer::new(&SLOTS[..], Config::cascade()).err(),
        Some(ConfigError::SlotsInUse)
    );
    let head = Balancer::new(&SLOTS[..2], Config::cascade()).unwrap();
    assert_eq!((head.capacity(), tail.capacity()), (2, 2));
}

// 4. Costs follow the members, not the capacity.

#[test]
fn scans_cover_the_slots_in_use_only() {
    let b = HeapBalancer::with_capacity(65_536, Config::cascade()).unwrap();
    assert_eq!(b.slots_in_use(), 0);
    for id in 1..=3 {
        b.add(id).unwrap();
    }
    assert_eq!(b.slots_in_use(), 3);
    // Churn: 100 more, then all but the first three removed, newest first and oldest first.
    for id in 4..=103 {
        b.add(id).unwrap();
    }
    assert_eq!(b.slots_in_use(), 103);
    for id in (54..=103).rev() {
        b.remove(id).unwrap();
    }
    assert_eq!(b.slots_in_use(), 53);
    for id in 4..=53 {
        b.remove(id).unwrap();
    }
    assert_eq!(
        b.slots_in_use(),
        3,
        "the span shrinks as the top slots empty"
    );

    // A removed node's leases keep its slot in the span until the last one is released.
    let mut rng = Rng::with_seed(3);
    let leases: Vec<Lease> = (0..30).map(|_| b.acquire(0, &mut rng).unwrap()).collect();
    b.remove(3).unwrap();
    assert_eq!(b.slots_in_use(), 3);
    let mut stale = 0;
    for l in leases {
        if l.node_id() == 3 {
            stale += 1;
        }
        let _ = b.release(l, Outcome::Success, 1);
    }
    assert!(stale > 0);
    assert_eq!(b.slots_in_use(), 2);

    // A hole below the top is refilled first: adds take the lowest free slot.
    b.add(10).unwrap(); // slot 2
    b.remove(1).unwrap(); // slot 0 becomes a hole
    assert_eq!(b.slots_in_use(), 3);
    b.add(11).unwrap(); // slot 0
    assert_eq!(b.slots_in_use(), 3);
    let ids: Vec<u64> = b.nodes(0).map(|n| n.id).collect();
    assert_eq!(ids, [11, 2, 10]);
}

#[test]
fn a_large_capacity_makes_the_same_decisions_as_a_small_one() {
    // Same members, same calls, same generator: the same picks at capacity 3 and 65,536.
    let small = HeapBalancer::with_capacity(3, Config::cascade()).unwrap();
    let large = HeapBalancer::with_capacity(65_536, Config::cascade()).unwrap();
    for b in [&small, &large] {
        for id in [1, 2, 3] {
            b.add(id).unwrap();
        }
    }
    let (mut r1, mut r2) = (Rng::with_seed(5), Rng::with_seed(5));
    for i in 0..5_000u64 {
        let now = i * 10_000_000;
        let (a, b) = (
            small.acquire(now, &mut r1).unwrap(),
            large.acquire(now, &mut r2).unwrap(),
        );
        assert_eq!(a.node_id(), b.node_id());
        let outcome = if a.node_id() == 2 && i % 3 == 0 {
            Outcome::Failure
        } else {
            Outcome::Success
        };
        small.release(a, outcome, now + 1).unwrap();
        large.release(b, outcome, now + 1).unwrap();
    }
    assert_eq!(small.stats(), large.stats());
}
