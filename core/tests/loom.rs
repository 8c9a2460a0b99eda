//! Loom models of the core's lock-free protocols, through the public API only.
//!
//! Run with `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p weir-lb --release --test loom`.
//!
//! Every model builds a tiny balancer (one or two slots) inside its `loom::model` closure, races a few
//! operations, and after the join asserts the exact state that some sequential order of those operations
//! would leave: no outcome lost, no lease lost, counters conserved.
//!
//! The success rate is measured by the cascade's bucket window with `count: 2, width_ns: 10, decay: 3`:
//! epoch = `now / 10`, a bucket of age 1 weighs 1/3, and a bucket leaves the window once the newest epoch
//! is 2 past it. In the cascade's semantics an outcome recorded at an epoch older than the node's newest
//! goes into the newest bucket, an outcome at an epoch that left the window is no longer visible while the
//! window holds data, and the sticky bucket (the newest bucket that left the window) is shown only when
//! the window is empty.
#![cfg(loom)]

use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::sync::Arc;
use loom::thread;
use weir::{
    balance::Algorithm, balance::BucketHealth, balance::MembershipError, balance::Rejected,
    balance::ReleaseError, balance::Stats, balance::Weighted, balance::WeightedHealth,
    limit::FixedLimit, limit::LimitAlgorithm, Balancer, Config, NodeSlot, Outcome, Rng,
};

type B = Balancer<Vec<NodeSlot>>;

/// Bucket width in nanoseconds.
const W: u64 = 10;
/// The recovery floor of `Config::cascade()`.
const FLOOR: f64 = 0.0001;
/// Weight of a bucket of age 1 (`decay^-1`).
const THIRD: f64 = 1.0 / 3.0;

/// The cascade over the narrow window, with the weighted family's parameters otherwise `w`'s.
fn weighted(w: Weighted, limit: u32) -> Config {
    Config {
        algorithm: Algorithm::Weighted(Weighted {
            health: WeightedHealth::Buckets(BucketHealth {
                count: 2,
                width_ns: W,
                decay: 3.0,
            }),
            ..w
        }),
        limit: LimitAlgorithm::Fixed(FixedLimit { limit }),
        ..Config::cascade()
    }
}

fn config(limit: u32) -> Config {
    weighted(Weighted::CASCADE, limit)
}

fn balancer(slots: usize, limit: u32) -> B {
    Balancer::new(
        (0..slots).map(|_| NodeSlot::new()).collect::<Vec<_>>(),
        config(limit),
    )
    .unwrap()
}

fn model(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemptions);
    builder.max_branches = 100_000;
    builder.check(f);
}

fn assert_conserved(st: &Stats) {
    let released: u64 = st.released_total();
    assert_eq!(
        st.acquired,
        released + st.released_stale + st.in_flight,
        "{st:?}"
    );
}

/// What the health of node `id` shows at `now`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Seen {
    window: (u64, u64),
    sticky: (u64, u64),
    rate: f64,
}

fn seen(b: &B, id: u64, now: u64) -> Seen {
    let s = b.node(id, now).expect("a member");
    assert!(s.has_data);
    assert_eq!(s.in_flight, 0);
    Seen {
        window: (s.window_finished, s.window_succeeded),
        sticky: (s.sticky_finished, s.sticky_succeeded),
        rate: s.success_rate,
    }
}

fn win(f: u64, s: u64, rate: f64) -> Seen {
    Seen {
        window: (f, s),
        sticky: (0, 0),
        rate,
    }
}

/// A sticky reading with `active` members in rotation: the rate is floored at `floor / active`.
fn sticky(f: u64, s: u64, active: u32) -> Seen {
    Seen {
        window: (0, 0),
        sticky: (f, s),
        rate: (s as f64 / f as f64).max(FLOOR / f64::from(active)),
    }
}

/// Races releases of leases on node 1 of a two-slot balancer (node 2 is fresh and idle): `prefill` is
/// acquired and released first, sequentially, each at its time; then `racing[0]` from the model's main
/// thread and each other entry from its own thread. Returns the balancer after the join.
fn race_releases(prefill: &[(Outcome, u64)], racing: &[(Outcome, u64)]) -> Arc<B> {
    let b = Arc::new(balancer(2, 100));
    b.add(1).unwrap();
    let mut rng = Rng::with_seed(1);
    // Each lease is acquired at the time it is released at, or for the racing ones at the latest of
    // theirs: a release is dated no later than the epoch after the acquires' clock, so the clock must
    // have reached the releases' epochs for them to land where the models say.
    let mut lease = |now| {
        let l = b.acquire(now, &mut rng).unwrap();
        assert_eq!(l.node_id(), 1);
        l
    };
    for &(o, now) in prefill {
        let l = lease(now);
        b.release(l, o, now).unwrap();
    }
    let latest = racing.iter().map(|r| r.1).max().unwrap_or(0);
    let mut leases: Vec<_> = racing.iter().map(|_| lease(latest)).collect();
    b.add(2).unwrap();
    let mut handles = Vec::new();
    for (&(o, now), l) in racing[1..].iter().zip(leases.drain(1..)) {
        let b = b.clone();
        handles.push(thread::spawn(move || b.release(l, o, now)));
    }
    let (o, now) = racing[0];
    let first = b.release(leases.pop().unwrap(), o, now);
    assert_eq!(first, Ok(()));
    for h in handles {
        assert_eq!(h.join().unwrap(), Ok(()));
    }
    let st = b.stats();
    assert_conserved(&st);
    assert_eq!(st.in_flight, 0);
    assert_eq!(st.released_stale, 0);
    assert_eq!(st.acquired, (prefill.len() + racing.len()) as u64);
    for o in [
        Outcome::Success,
        Outcome::Failure,
        Outcome::Dropped,
        Outcome::Ignored,
    ] {
        let n = prefill.iter().chain(racing).filter(|r| r.0 == o).count() as u64;
        assert_eq!(st.released(o), n, "{o:?}");
    }
    b
}

/// The health readings of node 1 at each of `times` must be one of `allowed` (one entry per sequential
/// order of the racing releases that gives a distinct result).
fn assert_one_of(b: &B, times: &[u64], allowed: &[&[Seen]]) {
    let got: Vec<Seen> = times.iter().map(|&t| seen(b, 1, t)).collect();
    assert!(
        allowed.iter().any(|a| *a == &got[..]),
        "node 1 at {times:?}: {got:?}, expected one of {allowed:#?}"
    );
}

/// Checks that the cached weight acquire uses agrees with the node's health at `now`: node 1's weight is
/// its snapshot's (`rate^exponent` of the floored rate, stored as `f32`), node 2 is fresh (weight 1). With
/// the cascade's draw (`Draw::Cascade`) and both nodes below their limit, the first draw sums the nodes' scan
/// units (`⌊f32 weight * 2^46⌋`) and draws one integer `t` below the sum: node 1 (slot 0) is picked exactly
/// when `t < units1`. A stale scan word or cache (one that missed a racing write, rotation or floor change)
/// picks differently for some seed: the 32 seeds' first draws, as fractions of the sum, leave no gap wider
/// than 0.12 in [0, 1), so weights whose pick thresholds `w / (w + 1)` differ by more than that are told
/// apart.
fn assert_cache_fresh(b: &B, now: u64) {
    const UNIT: f64 = (1u64 << 46) as f64;
    let s1 = b.node(1, now).unwrap();
    let units1 = (s1.weight as f32 as f64 * UNIT) as u64;
    for seed in 0..32 {
        let mut rng = Rng::with_seed(seed);
        let t = rng.clone().u64(..units1 + UNIT as u64);
        let want = if t < units1 { 1 } else { 2 };
        let l = b.acquire(now, &mut rng).unwrap();
        assert_eq!(
            l.node_id(),
            want,
            "seed {seed}: weight of node 1 {}, units {units1}, draw {t}",
            s1.weight
        );
        b.release(l, Outcome::Ignored, now).unwrap();
    }
    assert_conserved(&b.stats());
}

/// Model 1a: a success in epoch 0 races a failure in epoch 1 (adjacent epochs, different buckets).
/// Both are always in the window; the success is weighted 1/3 if it was recorded first, or lands in the
/// newest bucket (epoch 1) if the failure advanced the node first.
#[test]
fn bucket_rotation_adjacent_epochs() {
    model(3, || {
        let b = race_releases(&[], &[(Outcome::Success, 5), (Outcome::Failure, 15)]);
        // At 35 (epoch 3) epoch 1 has left the window: the sticky bucket is epoch 1.
        let times = [15, 35];
        let success_first: &[Seen] = &[win(2, 1, THIRD / (THIRD + 1.0)), sticky(1, 0, 2)];
        let failure_first: &[Seen] = &[win(2, 1, 0.5), sticky(2, 1, 2)];
        assert_one_of(&b, &times, &[success_first, failure_first]);
        assert_cache_fresh(&b, 15);
    });
}

/// Model 1b: a success in epoch 0 races a failure in epoch 2, which maps to the same bucket (2 % 2 == 0)
/// and ages epoch 0 out. Success first: the failure replaces it (window 1 finished, 0 succeeded). Failure
/// first: the late success goes into the newest bucket (2, 1).
#[test]
fn bucket_rotation_same_bucket_next_lap() {
    model(3, || {
        let b = race_releases(&[], &[(Outcome::Success, 5), (Outcome::Failure, 25)]);
        let times = [25, 45];
        let success_first: &[Seen] = &[win(1, 0, 0.0), sticky(1, 0, 2)];
        let failure_first: &[Seen] = &[win(2, 1, 0.5), sticky(2, 1, 2)];
        assert_one_of(&b, &times, &[success_first, failure_first]);
        assert_cache_fresh(&b, 25);
    });
}

/// Model 1c: as 1b, but the node already has data in epoch 0, so the racing epoch-0 success takes the
/// "not newer than `last`" path (record into the newest bucket) instead of advancing.
#[test]
fn bucket_rotation_same_bucket_existing_newest() {
    model(3, || {
        let b = race_releases(
            &[(Outcome::Success, 0)],
            &[(Outcome::Success, 5), (Outcome::Failure, 25)],
        );
        let times = [25, 45];
        let success_first: &[Seen] = &[win(1, 0, 0.0), sticky(1, 0, 2)];
        let failure_first: &[Seen] = &[win(2, 1, 0.5), sticky(2, 1, 2)];
        assert_one_of(&b, &times, &[success_first, failure_first]);
        assert_cache_fresh(&b, 25);
    });
}

/// Model 1d: two successes in epoch 0 race a failure in epoch 5 (the advance clears epoch 0, in the other
/// bucket). Each success either precedes the failure (then it has aged out and is invisible while the
/// window holds epoch 5) or follows it (then it is in the epoch 5 bucket). `k` successes after: window
/// `(1 + k, k)`; at epoch 7 the same counts are the sticky bucket. Three writers are explored with one
/// preemption (any thread, any point): with two the state space takes over ten minutes on two cores, and
/// the two-writer models above cover the same protocol with up to three.
#[test]
fn bucket_rotation_far_advance_three_writers() {
    model(1, || {
        let b = race_releases(
            &[],
            &[
                (Outcome::Success, 5),
                (Outcome::Success, 7),
                (Outcome::Failure, 55),
            ],
        );
        let times = [55, 75];
        let k0: &[Seen] = &[win(1, 0, 0.0), sticky(1, 0, 2)];
        let k1: &[Seen] = &[win(2, 1, 0.5), sticky(2, 1, 2)];
        let k2: &[Seen] = &[win(3, 2, 2.0 / 3.0), sticky(3, 2, 2)];
        assert_one_of(&b, &times, &[k0, k1, k2]);
        assert_cache_fresh(&b, 55);
    });
}

/// Model 1e: three writers in adjacent epochs: two in epoch 0 and one in epoch 1. All three are always in
/// the window; `k` of the two successes stay in epoch 0 (weight 1/3), the rest land in epoch 1. One
/// preemption, as in model 1d.
#[test]
fn bucket_rotation_adjacent_three_writers() {
    model(1, || {
        let b = race_releases(
            &[],
            &[
                (Outcome::Success, 5),
                (Outcome::Success, 7),
                (Outcome::Failure, 15),
            ],
        );
        let times = [15, 35];
        let rate = |k: u64| {
            let num = THIRD * k as f64 + (2 - k) as f64;
            let den = THIRD * k as f64 + (3 - k) as f64;
            num / den
        };
        let k0: &[Seen] = &[win(3, 2, rate(0)), sticky(3, 2, 2)];
        let k1: &[Seen] = &[win(3, 2, rate(1)), sticky(2, 1, 2)];
        let k2: &[Seen] = &[win(3, 2, rate(2)), sticky(1, 0, 2)];
        assert_one_of(&b, &times, &[k0, k1, k2]);
        assert_cache_fresh(&b, 15);
    });
}

/// Model 1f: a rotation races a release dated before it. Node 1 has a success in epoch 0 and one in
/// epoch 1; an acquire at 25 rotates the caches to epoch 2 (epoch 0 leaves the window) while a failure
/// dated 5 is recorded into the newest bucket (epoch 1). Whatever the order, node 1's window at 25 is
/// epoch 1 alone, (2, 1), and its cached weight must say so: a release that read the window at its own
/// `now` and stored after the rotation would bring epoch 0 back.
#[test]
fn rotation_races_late_release() {
    model(3, || {
        let b = Arc::new(balancer(2, 100));
        b.add(1).unwrap();
        let mut rng = Rng::with_seed(1);
        for now in [5, 15] {
            let l = b.acquire(0, &mut rng).unwrap();
            b.release(l, Outcome::Success, now).unwrap();
        }
        let late = b.acquire(0, &mut rng).unwrap();
        b.add(2).unwrap();
        let t = {
            let b = b.clone();
            thread::spawn(move || b.release(late, Outcome::Failure, 5))
        };
        let l = b.acquire(25, &mut Rng::with_seed(2)).unwrap();
        b.release(l, Outcome::Ignored, 25).unwrap();
        assert_eq!(t.join().unwrap(), Ok(()));
        assert_one_of(&b, &[25], &[&[win(2, 1, 0.5)]]);
        assert_cache_fresh(&b, 25);
    });
}

/// Model 1g: a membership change races a release whose reading is floored. With a floor of 1.0 and an
/// exponent of 1, node 1's sticky rate 0 is floored at `1 / active_nodes`: 1.0 alone, 0.5 once node 2 is
/// in. The release (a failure dated in epoch 0, read at the rotation's epoch 2, so sticky) races `add(2)`;
/// afterwards node 1's cached weight must be 0.5 whatever the order: a release that read the old floor
/// and stored after the add's refresh would keep 1.0.
#[test]
fn membership_change_races_floored_release() {
    model(2, || {
        let config = weighted(
            Weighted {
                floor: 1.0,
                weight_exponent: 1.0,
                ..Weighted::CASCADE
            },
            100,
        );
        let b = Arc::new(Balancer::new(vec![NodeSlot::new(), NodeSlot::new()], config).unwrap());
        b.add(1).unwrap();
        let mut rng = Rng::with_seed(1);
        let l = b.acquire(0, &mut rng).unwrap();
        b.release(l, Outcome::Failure, 5).unwrap();
        let late = b.acquire(25, &mut rng).unwrap();
        let t = {
            let b = b.clone();
            thread::spawn(move || b.release(late, Outcome::Failure, 5))
        };
        b.add(2).unwrap();
        assert_eq!(t.join().unwrap(), Ok(()));
        let s1 = b.node(1, 25).unwrap();
        assert_eq!((s1.sticky_finished, s1.sticky_succeeded), (2, 0), "{s1:?}");
        assert_eq!(s1.weight, 0.5);
        assert_cache_fresh(&b, 25);
    });
}

/// Model 2: admission racing release on a node with a fixed limit of 1. The main thread's first lease is
/// released by thread A while thread B and the main thread each try to acquire (and release) one more.
/// Every successful acquire must be the only lease in flight (checked with an external holder count and
/// with the node's own in-flight count); a refusal is `AllBusy`; afterwards everything is conserved and
/// every success is in the window.
#[test]
fn admission_races_release() {
    model(3, || {
        let b = Arc::new(balancer(1, 1));
        b.add(1).unwrap();
        let first = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
        let holders = Arc::new(AtomicUsize::new(1));

        let try_once = |b: &B, holders: &AtomicUsize, seed: u64, now: u64| -> bool {
            match b.acquire(now, &mut Rng::with_seed(seed)) {
                Ok(l) => {
                    assert_eq!(
                        holders.fetch_add(1, SeqCst),
                        0,
                        "two leases under a limit of 1"
                    );
                    assert_eq!(l.inflight_at_acquire(), 1);
                    let s = b.node(1, now).unwrap();
                    assert_eq!((s.in_flight, s.limit), (1, 1));
                    assert_eq!(b.stats().in_flight, 1);
                    holders.fetch_sub(1, SeqCst);
                    b.release(l, Outcome::Success, now + 1).unwrap();
                    true
                }
                Err(e) => {
                    assert_eq!(e, Rejected::AllBusy);
                    false
                }
            }
        };

        let a = {
            let (b, holders) = (b.clone(), holders.clone());
            thread::spawn(move || {
                holders.fetch_sub(1, SeqCst);
                b.release(first, Outcome::Success, 10)
            })
        };
        let tb = {
            let (b, holders) = (b.clone(), holders.clone());
            thread::spawn(move || try_once(&b, &holders, 2, 3))
        };
        let main_ok = try_once(&b, &holders, 3, 5);
        assert_eq!(a.join().unwrap(), Ok(()));
        let b_ok = tb.join().unwrap();

        let granted = u64::from(main_ok) + u64::from(b_ok);
        let st = b.stats();
        assert_conserved(&st);
        assert_eq!(st.in_flight, 0);
        assert_eq!(st.acquired, 1 + granted);
        assert_eq!(st.released(Outcome::Success), 1 + granted);
        assert_eq!(st.rejected_all_busy, 2 - granted);
        assert_eq!(st.rejected_no_active, 0);
        // Every success (epochs 0 and 1) is in the window at 10.
        let s = b.node(1, 10).unwrap();
        assert_eq!((s.in_flight, s.limit), (0, 1));
        assert_eq!(
            (s.window_finished, s.window_succeeded),
            (1 + granted, 1 + granted)
        );
        // The node has room again.
        let l = b.acquire(10, &mut Rng::with_seed(4)).unwrap();
        b.release(l, Outcome::Ignored, 10).unwrap();
    });
}

/// Model 3a: two threads add the same id to a two-slot balancer. Exactly one succeeds, the other gets
/// `DuplicateId`; exactly one member has the id; the loser's slot is vacant again (a third id fits); the
/// active count behind the recovery floor counts the winner once.
#[test]
fn concurrent_add_same_id() {
    model(3, || {
        let b = Arc::new(balancer(2, 100));
        let t = {
            let b = b.clone();
            thread::spawn(move || b.add(7))
        };
        let mine = b.add(7);
        let theirs = t.join().unwrap();
        let mut results = [mine, theirs];
        results.sort_by_key(|r| r.is_err());
        assert_eq!(results, [Ok(()), Err(MembershipError::DuplicateId(7))]);

        assert_eq!(b.nodes(0).filter(|n| n.id == 7).count(), 1);
        assert_eq!(b.nodes(0).count(), 1);
        let st = b.stats();
        assert_eq!((st.active_nodes, st.lame_duck_nodes), (1, 0));
        assert_eq!(b.add(7), Err(MembershipError::DuplicateId(7)));

        // The floor is `floor / active`: one failure at epoch 0, read at epoch 5 (sticky, floored).
        let l = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
        assert_eq!(l.node_id(), 7);
        b.release(l, Outcome::Failure, 0).unwrap();
        assert_eq!(b.node(7, 50).unwrap().success_rate, FLOOR / 1.0);
        // The loser's slot is free again.
        assert_eq!(b.add(8), Ok(()));
        assert_eq!(b.node(7, 50).unwrap().success_rate, FLOOR / 2.0);
        assert_eq!(b.stats().active_nodes, 2);
        assert_conserved(&b.stats());
    });
}

/// Model 3b: a release races `remove` of its node followed by an `add` of a new id into the only slot.
/// The release returns `Ok` (it came first) or `NodeRemoved`; the add succeeds only once the slot is
/// drained (else `CapacityFull`); the new occupant never sees the old node's outcome; counters conserved.
#[test]
fn remove_races_release() {
    model(3, || {
        let b = Arc::new(balancer(1, 100));
        b.add(1).unwrap();
        let l = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
        let t = {
            let b = b.clone();
            thread::spawn(move || b.release(l, Outcome::Failure, 5))
        };
        assert_eq!(b.remove(1), Ok(()));
        let added = b.add(2);
        let released = t.join().unwrap();

        assert!(
            matches!(released, Ok(()) | Err(ReleaseError::NodeRemoved { id: 1 })),
            "{released:?}"
        );
        match added {
            Ok(()) => {}
            Err(MembershipError::CapacityFull { capacity: 1 }) => b.add(2).unwrap(),
            Err(e) => panic!("add: {e:?}"),
        }
        let st = b.stats();
        assert_conserved(&st);
        assert_eq!(st.in_flight, 0);
        assert_eq!(st.acquired, 1);
        let live = u64::from(released.is_ok());
        assert_eq!(st.released(Outcome::Failure), live);
        assert_eq!(st.released_stale, 1 - live);
        assert_eq!((st.active_nodes, st.lame_duck_nodes), (1, 0));

        assert!(b.node(1, 5).is_none());
        let s = b.node(2, 5).unwrap();
        assert!(
            !s.has_data,
            "the removed node's outcome leaked into its successor: {s:?}"
        );
        assert_eq!((s.window_finished, s.sticky_finished), (0, 0));
        assert_eq!((s.in_flight, s.limit, s.success_rate), (0, 100, 1.0));
        let l = b.acquire(6, &mut Rng::with_seed(2)).unwrap();
        assert_eq!(l.node_id(), 2);
        b.release(l, Outcome::Success, 7).unwrap();
        assert_eq!(b.node(2, 7).unwrap().window_finished, 1);
    });
}

/// Model 3c: the span the scans read shrinks while an add claims a slot inside it. Thread A removes the
/// node in slot 1 (its shrink finds slot 1, and perhaps slot 0, free); the main thread removes the node
/// in slot 0 and adds a new one, which takes slot 0. However the shrinks and the claim interleave, the
/// span ends exactly one past slot 0, and the new node is seen and served (a shrink computed before the
/// claim must not land after it: the span word's version).
#[test]
fn shrink_races_add() {
    model(2, || {
        let b = Arc::new(balancer(2, 100));
        b.add(1).unwrap();
        b.add(2).unwrap();
        let t = {
            let b = b.clone();
            thread::spawn(move || b.remove(2))
        };
        b.remove(1).unwrap();
        b.add(3).unwrap();
        t.join().unwrap().unwrap();

        assert_eq!(b.slots_in_use(), 1);
        assert_eq!(b.nodes(0).map(|n| n.id).collect::<Vec<_>>(), [3]);
        let l = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
        assert_eq!(l.node_id(), 3);
        b.release(l, Outcome::Success, 1).unwrap();
        let st = b.stats();
        assert_conserved(&st);
        assert_eq!((st.active_nodes, st.released(Outcome::Success)), (1, 1));
    });
}

/// An acquire whose scan races a member's replacement: node 2 in slot 1, slot 0 free; another thread adds
/// node 3 (into slot 0, which the scan may have passed) and then removes node 2 (from slot 1, which the
/// scan may not have reached). A member is in rotation at every instant, so the acquire never answers
/// `NoActiveNodes`: a scan that saw neither node reads the active count, which holds node 3 once it is
/// published, and scans again (`Balancer::missed_a_member`).
#[test]
fn acquire_races_a_replacement() {
    model(2, || {
        let b = Arc::new(balancer(2, 100));
        b.add(1).unwrap();
        b.add(2).unwrap();
        b.remove(1).unwrap();
        let t = {
            let b = b.clone();
            thread::spawn(move || {
                b.add(3).unwrap();
                b.remove(2).unwrap();
            })
        };
        let got = b.acquire(0, &mut Rng::with_seed(1));
        t.join().unwrap();
        let l = got.expect("a member is in rotation at every instant");
        assert!([2, 3].contains(&l.node_id()));
        // Node 2 may have been removed while its lease was out: a stale release then.
        let _ = b.release(l, Outcome::Success, 1);
        let st = b.stats();
        assert_conserved(&st);
        assert_eq!((st.active_nodes, st.in_flight), (1, 0));
    });
}
