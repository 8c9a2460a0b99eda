//! The original cascade's scenarios as deterministic tests: a fake clock, a seeded generator, and fake
//! nodes whose behaviour is a function of time. Each asserts numbers.

mod common;
use common::load::{Call, Load};
use common::{f_at_penalty_one, penalty, weighted, K};
use std::collections::BTreeMap;
use weir::{
    balance::BucketHealth, balance::Draw, balance::EwmaHealth, balance::Rejected,
    balance::Weighted, balance::WeightedHealth, limit::AimdLimit, limit::FixedLimit,
    limit::LimitAlgorithm, Balancer, Config, HeapBalancer, Outcome, Rng,
};

const MS: u64 = 1_000_000;

/// The original cascade with another draw.
fn cascade(draw: Draw) -> Config {
    weighted(Weighted {
        draw,
        ..Weighted::CASCADE
    })
}

/// Drives a balancer with one request every `dt`, each answered after 1 ms with the outcome `behave` gives.
struct Driver {
    b: HeapBalancer,
    rng: Rng,
    now: u64,
}

impl Driver {
    fn new(ids: &[u64], config: Config) -> Driver {
        let b = Balancer::with_capacity(8, config).unwrap();
        for &id in ids {
            b.add(id).unwrap();
        }
        Driver {
            b,
            rng: Rng::with_seed(0x5EED),
            now: 0,
        }
    }

    /// Runs `n` requests `dt` apart and returns the picks per node id.
    fn run(
        &mut self,
        n: usize,
        dt: u64,
        mut behave: impl FnMut(u64, &mut Rng) -> Outcome,
    ) -> BTreeMap<u64, u64> {
        let mut picks = BTreeMap::new();
        for _ in 0..n {
            self.now += dt;
            let lease = self.b.acquire(self.now, &mut self.rng).expect("a lease");
            let id = lease.node_id();
            *picks.entry(id).or_insert(0) += 1;
            let outcome = behave(id, &mut self.rng);
            self.b.release(lease, outcome, self.now + MS).unwrap();
        }
        picks
    }

    fn rate(&self, id: u64) -> f64 {
        self.b.node(id, self.now).unwrap().success_rate
    }
}

fn share(picks: &BTreeMap<u64, u64>, id: u64) -> f64 {
    let total: u64 = picks.values().sum();
    *picks.get(&id).unwrap_or(&0) as f64 / total as f64
}

fn ok_unless(bad: u64) -> impl FnMut(u64, &mut Rng) -> Outcome {
    move |id, _| {
        if id == bad {
            Outcome::Failure
        } else {
            Outcome::Success
        }
    }
}

#[test]
fn always_failing_node_gets_under_one_percent_once_window_fills() {
    for draw in [Draw::Cascade, Draw::CascadeApprox, Draw::WeightedPick] {
        let mut d = Driver::new(&[1, 2, 3], cascade(draw));
        // 30 s at 1,000 requests per second fills the 6 x 5 s window.
        let warm = d.run(30_000, MS, ok_unless(3));
        let after = d.run(30_000, MS, ok_unless(3));
        assert!(
            share(&warm, 3) < 0.01,
            "{draw:?}: warm-up share {}",
            share(&warm, 3)
        );
        assert_eq!(
            share(&after, 3),
            0.0,
            "{draw:?}: a node with 0% in the window has weight 0"
        );
        // Never picked again, its window has aged out: the sticky bucket keeps 0%, floored at 0.0001 / 3.
        assert_eq!(d.rate(3), 0.0001 / 3.0);
        assert!((share(&after, 1) - 0.5).abs() < 0.02, "{draw:?}: {after:?}");
    }
}

#[test]
fn failing_node_takes_traffic_when_healthy_nodes_are_full() {
    let config = Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit: 5 }),
        ..Config::cascade()
    };
    let mut d = Driver::new(&[1, 2, 3], config);
    d.run(10_000, MS, ok_unless(3));
    assert_eq!(d.rate(3), 0.0);
    // Hold leases until the healthy nodes are at their limit: the next ones fall back to node 3.
    let mut held = Vec::new();
    for _ in 0..10 {
        held.push(d.b.acquire(d.now, &mut d.rng).unwrap());
    }
    assert!(held.iter().all(|l| l.node_id() != 3), "healthy nodes first");
    let fallback: Vec<_> = (0..5)
        .map(|_| d.b.acquire(d.now, &mut d.rng).unwrap())
        .collect();
    assert!(fallback.iter().all(|l| l.node_id() == 3));
    // Everything full: fail fast.
    assert_eq!(d.b.acquire(d.now, &mut d.rng), Err(Rejected::AllBusy));
    assert_eq!(d.b.stats().rejected_all_busy, 1);
    // WeightedPick has no cascade: with the healthy nodes full it fails fast instead of using node 3.
    let config = Config {
        algorithm: cascade(Draw::WeightedPick).algorithm,
        ..config
    };
    let mut w = Driver::new(&[1, 2, 3], config);
    w.run(10_000, MS, ok_unless(3));
    let held: Vec<_> = (0..10)
        .map(|_| w.b.acquire(w.now, &mut w.rng).unwrap())
        .collect();
    assert!(held.iter().all(|l| l.node_id() != 3));
    assert_eq!(w.b.acquire(w.now, &mut w.rng), Err(Rejected::AllBusy));
    for l in held.into_iter().chain(fallback) {
        let _ = d.b.release(l, Outcome::Success, d.now);
    }
}

#[test]
fn equally_failing_nodes_share_evenly() {
    // All at 50%: equal weights.
    let mut d = Driver::new(&[1, 2, 3], Config::cascade());
    d.run(20_000, MS, |_, rng| {
        if rng.bool() {
            Outcome::Success
        } else {
            Outcome::Failure
        }
    });
    let picks = d.run(30_000, MS, |_, rng| {
        if rng.bool() {
            Outcome::Success
        } else {
            Outcome::Failure
        }
    });
    for id in [1, 2, 3] {
        assert!((share(&picks, id) - 1.0 / 3.0).abs() < 0.03, "{picks:?}");
    }
    // All at 0%: every weight is zero and the cascade spreads uniformly.
    let mut d = Driver::new(&[1, 2, 3], Config::cascade());
    let picks = d.run(30_000, MS, |_, _| Outcome::Failure);
    for id in [1, 2, 3] {
        assert!((share(&picks, id) - 1.0 / 3.0).abs() < 0.02, "{picks:?}");
        assert_eq!(d.rate(id), 0.0);
    }
}

#[test]
fn combination_half_failing_then_others_hard_down() {
    let mut d = Driver::new(&[1, 2, 3], Config::cascade());
    let mut flip = false;
    let mut phase1 = |id: u64, _: &mut Rng| {
        if id == 3 {
            flip = !flip;
            if flip {
                Outcome::Success
            } else {
                Outcome::Failure
            }
        } else {
            Outcome::Success
        }
    };
    d.run(30_000, MS, &mut phase1);
    let picks = d.run(120_000, MS, &mut phase1);
    // Node 3 at 50%: weight 0.125 against 1.0 + 1.0, so 0.125 / 2.125 = 5.9% of picks.
    let expected = 0.125 / 2.125;
    assert!(
        (share(&picks, 3) - expected).abs() < 0.006,
        "share {} vs {expected}",
        share(&picks, 3)
    );
    assert!((d.rate(3) - 0.5).abs() < 0.05, "rate {}", d.rate(3));
    // Then nodes 1 and 2 go hard down: node 3 takes the majority within a few seconds.
    let mut phase2 = |id: u64, _: &mut Rng| {
        if id == 3 {
            flip = !flip;
            if flip {
                Outcome::Success
            } else {
                Outcome::Failure
            }
        } else {
            Outcome::Failure
        }
    };
    let shares: Vec<f64> = (0..8)
        .map(|_| share(&d.run(2_500, MS, &mut phase2), 3))
        .collect();
    eprintln!("node 3 share per 2.5 s after the others went down: {shares:?}");
    assert!(shares.windows(2).all(|w| w[1] >= w[0] - 0.02), "{shares:?}");
    assert!(
        shares[0] > expected * 2.0 && shares[2] > 0.5 && shares[7] > 0.95,
        "{shares:?}"
    );
    // Once the whole 30 s window holds only their failures, node 3 takes essentially everything.
    d.run(10_000, MS, &mut phase2);
    let settled = d.run(10_000, MS, &mut phase2);
    assert!(share(&settled, 3) > 0.99, "{settled:?}");
}

#[test]
fn recovery_through_sticky_floor_after_window_ages_out() {
    let mut d = Driver::new(
        &[1, 2],
        Config {
            limit: LimitAlgorithm::Fixed(FixedLimit { limit: 3 }),
            ..Config::cascade()
        },
    );
    d.run(10_000, MS, ok_unless(2));
    assert_eq!(d.rate(2), 0.0);
    let snap = d.b.node(2, d.now).unwrap();
    assert_eq!(snap.weight, 0.0);
    // 30 s later, with node 2 never picked, its window has aged out: its sticky bucket keeps 0%, floored at
    // 0.0001 / 2 active nodes, so its weight is small but no longer zero.
    d.run(31_000, MS, ok_unless(2));
    let snap = d.b.node(2, d.now).unwrap();
    assert_eq!((snap.window_finished, snap.sticky_succeeded), (0, 0));
    assert!(snap.sticky_finished > 0);
    assert_eq!(snap.success_rate, 0.0001 / 2.0);
    // rate^3 by two multiplications, as the core computes it (`powi` may round differently once
    // constant-folded in a release build).
    let floor = 0.0001f64 / 2.0;
    assert_eq!(snap.weight, floor * floor * floor);
    // Node 1 at its limit: the cascade tries node 2, which has recovered; one success makes it fully trusted.
    let held: Vec<_> = (0..3)
        .map(|_| d.b.acquire(d.now, &mut d.rng).unwrap())
        .collect();
    assert!(held.iter().all(|l| l.node_id() == 1));
    let probe = d.b.acquire(d.now, &mut d.rng).unwrap();
    assert_eq!(probe.node_id(), 2);
    d.b.release(probe, Outcome::Success, d.now + MS).unwrap();
    for l in held {
        d.b.release(l, Outcome::Success, d.now + MS).unwrap();
    }
    assert_eq!(d.rate(2), 1.0);
    let picks = d.run(20_000, MS, |_, _| Outcome::Success);
    assert!((share(&picks, 2) - 0.5).abs() < 0.03, "{picks:?}");

    // With a generous floor and a linear weight, the floor alone brings a recovered node back at a high
    // request rate, without any node being full.
    let config = weighted(Weighted {
        floor: 0.2,
        weight_exponent: 1.0,
        ..Weighted::CASCADE
    });
    let mut d = Driver::new(&[1, 2], config);
    d.run(10_000, MS, ok_unless(2));
    // While it stays down, each time its window ages out the floor (0.1, weight 0.1) sends it a few probes,
    // which fail and take it out again.
    let down = d.run(60_000, MS, ok_unless(2));
    assert!(share(&down, 2) > 0.0 && share(&down, 2) < 0.01, "{down:?}");
    // Once it is up again, a probe succeeds and it is back in rotation within one window.
    let up = d.run(40_000, MS, |_, _| Outcome::Success);
    let last = d.run(5_000, MS, |_, _| Outcome::Success);
    assert!(
        share(&up, 2) > 0.1 && (share(&last, 2) - 0.5).abs() < 0.05,
        "{up:?} {last:?}"
    );
}

#[test]
fn newly_added_node_is_competitive_at_once() {
    let mut d = Driver::new(&[1, 2], Config::cascade());
    // Nodes 1 and 2 at 90%: weight 0.729 each.
    let mut k = 0u32;
    let mut ninety = move |_: u64, _: &mut Rng| {
        k += 1;
        if k % 10 == 0 {
            Outcome::Failure
        } else {
            Outcome::Success
        }
    };
    d.run(30_000, MS, &mut ninety);
    d.b.add(3).unwrap();
    let snap = d.b.node(3, d.now).unwrap();
    assert_eq!(
        (snap.success_rate, snap.weight, snap.has_data),
        (1.0, 1.0, false)
    );
    // Its weight 1.0 against 0.729 + 0.729: 40.7% of the picks from the first request on.
    let first = d.run(300, MS, |_, _| Outcome::Success);
    let expected = 1.0 / (1.0 + 2.0 * 0.729);
    assert!(
        (share(&first, 3) - expected).abs() < 0.08,
        "{first:?} vs {expected}"
    );
    // Replacing a node by configuration: remove 1, add 4; 4 starts trusted too.
    d.b.remove(1).unwrap();
    d.b.add(4).unwrap();
    let picks = d.run(3_000, MS, |_, _| Outcome::Success);
    assert!(
        share(&picks, 4) > 0.25 && !picks.contains_key(&1),
        "{picks:?}"
    );
}

#[test]
fn ignored_outcomes_leave_health_untouched() {
    let mut d = Driver::new(&[1, 2], Config::cascade());
    d.run(1_000, MS, |id, _| {
        if id == 1 {
            Outcome::Failure
        } else {
            Outcome::Success
        }
    });
    let before: Vec<_> = d.b.nodes(d.now).collect();
    d.run(5_000, 0, |_, _| Outcome::Ignored);
    let after: Vec<_> = d.b.nodes(d.now).collect();
    // Only the counts of ignored releases moved.
    let ignored = |v: &[weir::balance::NodeSnapshot]| -> u64 {
        v.iter().map(|n| n.released(Outcome::Ignored)).sum()
    };
    assert_eq!((ignored(&before), ignored(&after)), (0, 5_000));
    let health = |v: Vec<weir::balance::NodeSnapshot>| -> Vec<_> {
        v.into_iter()
            .map(|n| weir::balance::NodeSnapshot {
                by_outcome: [0; 6],
                ..n
            })
            .collect()
    };
    assert_eq!(health(before), health(after));
    assert_eq!(d.b.stats().released(Outcome::Ignored), 5_000);
}

#[test]
fn aimd_backs_off_on_drops_and_caps_in_flight() {
    let aimd = AimdLimit {
        initial_limit: 20,
        min_limit: 2,
        max_limit: 50,
        ..AimdLimit::default()
    };
    let config = Config {
        limit: LimitAlgorithm::Aimd(aimd),
        ..Config::cascade()
    };
    let mut d = Driver::new(&[1], config);
    d.run(10, MS, |_, _| Outcome::Dropped);
    // 20 -> 18 -> 16 -> 14 -> 12 -> 10 -> 9 -> 8 -> 7 -> 6 -> 5 (trunc(L * 0.9) each time).
    assert_eq!(d.b.node(1, d.now).unwrap().limit, 5);
    let held: Vec<_> = (0..5)
        .map(|_| d.b.acquire(d.now, &mut d.rng).unwrap())
        .collect();
    assert_eq!(d.b.acquire(d.now, &mut d.rng), Err(Rejected::AllBusy));
    // A success raises the limit by one when the in-flight count at its admission was at least half the
    // limit: admitted at 1..=5 in flight, released in order: 1*2 < 5, 2*2 < 5, 3*2 >= 5 -> 6, 4*2 >= 6 -> 7,
    // 5*2 >= 7 -> 8.
    for l in held {
        d.b.release(l, Outcome::Success, d.now + MS).unwrap();
    }
    assert_eq!(d.b.node(1, d.now).unwrap().limit, 8);
}

#[test]
fn lame_duck_and_removal() {
    let mut d = Driver::new(&[1, 2], Config::cascade());
    let held = d.b.acquire(d.now, &mut d.rng).unwrap();
    let held_id = held.node_id();
    d.b.set_lame_duck(held_id, true).unwrap();
    let picks = d.run(100, MS, |_, _| Outcome::Success);
    assert!(!picks.contains_key(&held_id));
    // A lame duck's lease finishes normally and is recorded.
    d.b.release(held, Outcome::Failure, d.now).unwrap();
    assert_eq!(d.b.node(held_id, d.now).unwrap().window_finished, 1);
    d.b.set_lame_duck(held_id, false).unwrap();
    let other = if held_id == 1 { 2 } else { 1 };
    d.b.remove(other).unwrap();
    let picks = d.run(10, MS, |_, _| Outcome::Success);
    assert_eq!(picks.get(&held_id), Some(&10));
    d.b.remove(held_id).unwrap();
    assert_eq!(d.b.acquire(d.now, &mut d.rng), Err(Rejected::NoActiveNodes));
    assert_eq!(d.b.stats().rejected_no_active, 1);
}

#[test]
fn a_node_added_into_a_recycled_slot_counts_its_outcomes_from_zero() {
    let b = Balancer::new([const { weir::NodeSlot::new() }; 1], Config::default()).unwrap();
    let mut rng = Rng::with_seed(7);
    b.add(1).unwrap();
    for (k, outcome) in [
        Outcome::Failure,
        Outcome::Failure,
        Outcome::Success,
        Outcome::Throttled,
    ]
    .into_iter()
    .enumerate()
    {
        let lease = b.acquire(k as u64, &mut rng).unwrap();
        b.release(lease, outcome, k as u64 + 1).unwrap();
    }
    let a = b.node(1, 10).unwrap();
    assert_eq!(a.by_outcome, [1, 2, 0, 0, 1, 0]);
    assert_eq!(a.released(Outcome::Failure), 2);
    // Node 1 leaves with a lease in flight; its slot is reused only once that lease is back (stale).
    let late = b.acquire(10, &mut rng).unwrap();
    b.remove(1).unwrap();
    assert!(
        b.add(2).is_err(),
        "the only slot still drains node 1's lease"
    );
    assert!(b.release(late, Outcome::Failure, 11).is_err());
    b.add(2).unwrap();
    let fresh = b.node(2, 11).unwrap();
    assert_eq!(fresh.by_outcome, [0; 6]);
    for o in Outcome::ALL {
        assert_eq!(fresh.released(o), 0, "{o:?}");
    }
    // The balancer's counters still hold node 1's releases (and the late one as stale).
    let st = b.stats();
    assert_eq!(
        (
            st.released(Outcome::Failure),
            st.released(Outcome::Success),
            st.released(Outcome::Throttled)
        ),
        (2, 1, 1)
    );
    assert_eq!(st.released_stale, 1);
    // Node 2 counts its own.
    let lease = b.acquire(12, &mut rng).unwrap();
    b.release(lease, Outcome::Failure, 13).unwrap();
    assert_eq!(b.node(2, 13).unwrap().by_outcome, [0, 1, 0, 0, 0, 0]);
    assert_eq!(b.stats().released(Outcome::Failure), 3);
}

// ---------------------------------------------------------------------------------------------------------
// The new default, `Config::default()`: time-decayed health, lowest score, CIAD limit.
// ---------------------------------------------------------------------------------------------------------

const SEC: u64 = 1_000_000_000;

/// The default failure half-life, in seconds.
const FAIL_HALF: f64 = K.hf as f64 / SEC as f64;

fn fails_if(bad: u64, outcome: Outcome, latency: u64) -> impl FnMut(u64, u64, &mut Rng) -> Call {
    move |id, _, _| Some((latency, if id == bad { outcome } else { Outcome::Success }))
}

#[test]
fn default_failing_node_loses_its_traffic_within_one_second() {
    // 10 requests per second over 3 nodes, each answered in 1 ms: nothing is in flight at an acquire, so
    // every key is the node's penalty alone and healthy nodes tie at 0. After the switch node 3 fails
    // every call: its first failure makes its penalty a + b log2(1 + 1 / (S + 1)) >= a = 10, above the
    // healthy nodes' 0, and it stays above 0 for far longer than this test runs (20 failure
    // half-lives). So it gets exactly one call after the switch: the one that fails, which at a third of
    // 10 per second comes within the first second for each of these seeds.
    for seed in 0..6 {
        let mut l = Load::new(&[1, 2, 3], Config::default(), seed);
        l.run_until(10 * SEC, 100 * MS, |_, _, _| Some((MS, Outcome::Success)));
        let before = l.picks_of(3, 0, 10 * SEC + 1);
        assert!((20..=47).contains(&before), "seed {seed}: {before} of 100");
        let switch = l.now + 1;
        l.run_until(30 * SEC, 100 * MS, fails_if(3, Outcome::Failure, MS));
        let per_second = l.per_second(3, switch, 20);
        assert_eq!(per_second[0], 1, "seed {seed}: {per_second:?}");
        assert_eq!(
            per_second.iter().sum::<u64>(),
            1,
            "seed {seed}: {per_second:?}"
        );
        // Nodes 1 and 2 took the other 199, shared evenly.
        let one = l.picks_of(1, switch, 30 * SEC + 1);
        assert_eq!(one + l.picks_of(2, switch, 30 * SEC + 1), 199);
        assert!((70..=130).contains(&one), "seed {seed}: {one}");
        // Its failure counter is that one failure, decayed for the ticks since it was released; its
        // successes have decayed to nothing; its penalty is the formula's.
        let (t_fail, _, _) = *l.picks.iter().find(|p| p.0 >= switch && p.1 == 3).unwrap();
        let ticks = ((l.now >> 20) - ((t_fail + MS) >> 20)) as f64;
        let f = (-(ticks * (1u64 << 20) as f64 / (FAIL_HALF * SEC as f64))).exp2();
        let n = l.snap(3);
        assert!((n.failures - f).abs() < 1e-12, "seed {seed}: {n:?} vs {f}");
        assert!(n.successes < 1e-5, "{n:?}");
        assert!(
            (n.penalty - penalty(n.failures, n.successes)).abs() < 1e-9,
            "{n:?}"
        );
        // At least a + b log2(1 + F) (less a hair for S < 1e-5) with F the failure decayed for at
        // most the 20 s since the switch: F >= 2^(-20 / 30) = 0.63, P >= 17.58 (11.94 with
        // `ratio_penalty` 8).
        let f_min = (-(20.0 / FAIL_HALF)).exp2();
        assert!(n.penalty > penalty(f_min, 1e-5), "{n:?}");
        // The failure backed its limiter off (CIAD: 20 -> floor(20 * 0.9) = 18); the others' stay at 20.
        assert_eq!((n.limit, l.snap(1).limit, l.snap(2).limit), (18, 20, 20));
    }
}

#[test]
fn default_black_holed_node_stops_receiving_once_its_calls_pile_up() {
    // 1,000 requests per second, answered in 2..=8 ms (5 ms on average) by nodes 1 and 2: about 5 calls
    // in flight between them. From 1 s on, node 3 never answers: its leases stay in flight, and its key
    // is its in-flight count. It takes calls only while its in-flight count is no higher than the lower
    // of the two others, so it stops at a few, within a few tens of milliseconds.
    for seed in 0..6 {
        let mut l = Load::new(&[1, 2, 3], Config::default(), seed);
        let healthy = |rng: &mut Rng| Some((rng.u64(2 * MS..=8 * MS), Outcome::Success));
        l.run_until(SEC, MS, |_, _, rng| healthy(rng));
        let hole = l.now + 1;
        l.run_until(
            11 * SEC,
            MS,
            |id, _, rng| if id == 3 { None } else { healthy(rng) },
        );
        let picks: Vec<(u64, u64, u32)> = l
            .picks
            .iter()
            .copied()
            .filter(|p| p.0 >= hole && p.1 == 3)
            .collect();
        let n = l.snap(3);
        // Every call it took is still in flight (the calls before the hole were answered).
        assert_eq!(u64::from(n.in_flight), picks.len() as u64);
        assert_eq!(l.lost.len(), picks.len());
        assert!((3..=5).contains(&n.in_flight), "seed {seed}: {picks:?}");
        // All of them within the first 100 ms of 10 s.
        assert!(
            picks.iter().all(|p| p.0 < hole + 100 * MS),
            "seed {seed}: {picks:?}"
        );
        // None in the 9.9 s after: once 3 of its lost calls were in flight, at most 2 more came.
        assert_eq!(l.picks_of(3, hole + 100 * MS, 11 * SEC + 1), 0);
        // The healthy nodes never had more than 5 in flight at an admission, and took all the rest.
        let others: Vec<u32> = l
            .picks
            .iter()
            .filter(|p| p.0 >= hole && p.1 != 3)
            .map(|p| p.2)
            .collect();
        assert!(others.iter().all(|&k| k <= 5), "seed {seed}");
        assert_eq!(others.len() + picks.len(), 10_000);
        // No penalty: a call that never ends records nothing.
        assert_eq!((n.failures, n.penalty), (0.0, 0.0));
    }
}

#[test]
fn default_recovered_node_regains_traffic_as_its_failures_decay() {
    // 100 requests per second, each answered in exactly 40 ms: at every acquire 3 calls are in flight.
    // While node 3 is out, nodes 1 and 2 share them 1 + 2 or 2 + 1, so the best healthy key is 1 in
    // flight: node 3 (nothing in flight) is taken again once its penalty is below 1.
    //
    // Node 3 fails every call acquired in [10 s, 20 s) and succeeds afterwards. Its first failure takes
    // it out (penalty >= a = 10), so it fails only the calls it had taken before that failure's
    // release: its failure count F0 at the end of the phase. From then on no call reaches it, so its
    // successes decay to 0 and its penalty is P(t) = a F + b log2(1 + F) with F = F0 2^(-t / 30 s).
    // P < 1 needs F < F* = 0.030546 (bisection below): at t* = 20 s + 30 s * log2(F(20 s) / F*),
    // 30 s * log2(1 / F*) = 150.99 s after a single failure (with `ratio_penalty` 8: F* = 0.04699,
    // 132.34 s). The rotation recomputes the cached penalty every 250 ms, and the acquires fall on the
    // epochs' first nanosecond, so node 3 is back within 250 ms after t*.
    //
    // Back with penalty below 1 but above 0, node 3 loses every tie on in-flight counts: it gets 25 % of
    // the calls (the healthy nodes 37.5 % each) until its penalty rounds to 0 in the key's fixed point
    // (below 2^-16). With S of about 36 (25 calls per second, successes halving every second:
    // 25 / ln 2), P is about (a + b / (37 ln 2)) F = 10.62 F, so that takes F < 1.44e-6:
    // 30 s * log2(1 / 1.44e-6) = 582 s after the failure (581 s with 8), at about 592 s. From then on
    // the three nodes tie and share a third each.
    let f_star = f_at_penalty_one();
    assert!((penalty(f_star, 0.0) - 1.0).abs() < 1e-9, "{f_star}");
    // Seconds from a failure to P < 1, and to P < 2^-16 at S = 36 (see above).
    let after = FAIL_HALF * (1.0 / f_star).log2();
    let s = 25.0 * (K.hs as f64 / SEC as f64) / core::f64::consts::LN_2;
    let fade = FAIL_HALF * ((K.a + K.b / ((s + 1.0) * core::f64::consts::LN_2)) * 65_536.0).log2();
    // The windows measured below: 25 % from 10 s after t* (about 171 s) to 550 s, a third from 620 s;
    // the failure is at about 10 s.
    assert!(
        10.2 + after + 10.0 < 550.0 && 550.0 + 10.0 < 10.0 + fade && 10.2 + fade + 10.0 < 620.0
    );
    for seed in 0..3 {
        let mut l = Load::new(&[1, 2, 3], Config::default(), seed);
        let call = |id: u64, t: u64, _: &mut Rng| {
            let failing = id == 3 && (10 * SEC..20 * SEC).contains(&t);
            Some((
                40 * MS,
                if failing {
                    Outcome::Failure
                } else {
                    Outcome::Success
                },
            ))
        };
        l.run_until(20 * SEC, 10 * MS, call);
        // One failure, in the first 100 ms of the phase: at 20 s it has decayed by about 2^(-1/3).
        assert_eq!(l.picks_of(3, 10 * SEC, 20 * SEC), 1, "seed {seed}");
        let last_fail = l.picks.iter().rfind(|p| p.1 == 3).unwrap().0;
        assert!(last_fail < 10 * SEC + 100 * MS, "seed {seed}: out at once");
        // Released 40 ms after its acquire in [10 s, 10.1 s): 9.86..9.96 s before 20 s, give or take
        // the 1.05 ms ticks the counters are dated in.
        let f0 = l.snap(3).failures;
        let decayed = |secs: f64| (-(secs / FAIL_HALF)).exp2();
        assert!(
            (decayed(9.97)..=decayed(9.85)).contains(&f0),
            "seed {seed}: {f0}"
        );
        let t_star = 20 * SEC + (FAIL_HALF * (f0 / f_star).log2() * SEC as f64) as u64;
        l.run_until(700 * SEC, 10 * MS, call);
        // Penalised: not one call from its last failure to t*.
        assert_eq!(l.picks_of(3, last_fail + 1, t_star), 0, "seed {seed}");
        // Healthy nodes had exactly 1 call in flight before each admission meanwhile (2 with it).
        assert!(l
            .picks
            .iter()
            .filter(|p| (30 * SEC..t_star).contains(&p.0))
            .all(|p| p.2 == 2));
        // Back within one rotation epoch of t*.
        let back = l
            .picks
            .iter()
            .find(|p| p.1 == 3 && p.0 > last_fail)
            .unwrap()
            .0;
        assert!(
            (t_star..=t_star + 250 * MS).contains(&back),
            "seed {seed}: back at {back}, t* = {t_star}"
        );
        // That is 150.99 s after the failure's release at 10.04..10.14 s, then up to 250 ms to the
        // next rotation: at 161.02..161.38 s (at 142.25..142.75 s with `ratio_penalty` 8).
        let secs = |s: f64| (s * SEC as f64) as u64;
        assert!(
            (secs(10.03 + after)..secs(10.15 + after + 0.25)).contains(&back),
            "seed {seed}: {back}"
        );
        // 25 % while its penalty is positive.
        let from = t_star + 10 * SEC;
        let share = l.picks_of(3, from, 550 * SEC) as f64 / l.picks_in(from, 550 * SEC) as f64;
        assert!((share - 0.25).abs() < 0.01, "seed {seed}: {share}");
        // A third once it has faded.
        let share =
            l.picks_of(3, 620 * SEC, 700 * SEC) as f64 / l.picks_in(620 * SEC, 700 * SEC) as f64;
        assert!((share - 1.0 / 3.0).abs() < 0.01, "seed {seed}: {share}");
        assert_eq!(l.snap(3).penalty, 0.0);
    }
}

#[test]
fn default_throttled_costs_less_than_failure_and_client_errors_still_count() {
    // One call to each of three fresh nodes at 0 (three leases held at once take one node each), answered
    // 429, 500 and 400: failures + 0.1, + 1 and + 0.01 (as `f32`), no successes, so P = a F + b log2(1 + F).
    let b = Balancer::with_capacity(3, Config::default()).unwrap();
    for id in 1..=3 {
        b.add(id).unwrap();
    }
    let mut rng = Rng::with_seed(4);
    let leases: Vec<_> = (0..3).map(|_| b.acquire(0, &mut rng).unwrap()).collect();
    let answer = |id| [Outcome::Throttled, Outcome::Failure, Outcome::ClientError][id as usize - 1];
    for l in leases {
        let o = answer(l.node_id());
        b.release(l, o, MS).unwrap();
    }
    let n: Vec<_> = (1..=3).map(|id| b.node(id, MS).unwrap()).collect();
    let f = [f64::from(K.throttled), 1.0, f64::from(K.client_error)];
    for (n, f) in n.iter().zip(f) {
        assert_eq!((n.failures, n.successes), (f, 0.0), "{n:?}");
        assert!((n.penalty - penalty(f, 0.0)).abs() < 1e-12, "{n:?}");
    }
    // A 500: a + b = 26, exactly. A 429: 1 + 16 log2(1.1) = 3.2001; a 400: 0.1 + 16 log2(1.01) = 0.3297
    // (with `ratio_penalty` 8: 18, 2.1000 and 0.2148). Each more than five times the next.
    assert_eq!(n[1].penalty, K.a + K.b);
    assert!(n[1].penalty > 5.0 * n[0].penalty && n[0].penalty > 5.0 * n[2].penalty);
    // The limiter: a 500 backs off (20 -> 18); a 429 is not fed to it; a 400 is a success sample taken
    // with 1 in flight, below floor(20 * 0.9), which leaves the limit as it is.
    assert_eq!([n[0].limit, n[1].limit, n[2].limit], [20, 18, 20]);
    // Ten 429s weigh what one 500 does (to f32 rounding), ten 500s far more.
    let b = Balancer::with_capacity(2, Config::default()).unwrap();
    b.add(1).unwrap();
    b.add(2).unwrap();
    for _ in 0..10 {
        for (id, other, o) in [(1, 2, Outcome::Throttled), (2, 1, Outcome::Failure)] {
            // The other node in lame duck: the call goes to this one.
            b.set_lame_duck(other, true).unwrap();
            let l = b.acquire(MS, &mut rng).unwrap();
            assert_eq!(l.node_id(), id);
            b.release(l, o, MS).unwrap();
            b.set_lame_duck(other, false).unwrap();
        }
    }
    let (t, f) = (b.node(1, MS).unwrap(), b.node(2, MS).unwrap());
    assert!(
        (t.failures - 1.0).abs() < 1e-6 && f.failures == 10.0,
        "{t:?} {f:?}"
    );
    // Ten 429s: about a + b = 26. Ten 500s: 10 a + b log2(11) = 155.35.
    assert!((t.penalty - (K.a + K.b)).abs() < 1e-5, "{t:?}");
    assert!(
        (f.penalty - (10.0 * K.a + K.b * 11f64.log2())).abs() < 1e-9,
        "{f:?}"
    );
}

/// What the default algorithm implies for a node that gains `cost` failures per call and no successes, and
/// is taken whenever its cached penalty is below 1 and only then (one call at a time, each released 40 ms
/// after it was taken; the rotation refreshes the penalty every 250 ms): the calls it takes at the start,
/// and the bounds on the calls it takes in [10 s, 120 s).
///
/// At the start it takes calls until its penalty reaches 1: `k` calls, the least with
/// `P(k cost) >= 1`, all within the first second. Their failures then decay to `F*` (penalty 1) at a
/// crossing time `C1` in `30 s * log2(k cost / F*) + [0, 1 s]`. After each crossing `C_i` it is taken
/// within 250 ms, at `T_i = C_i + d_i` (`d_i` in [0, 250 ms]), and its failure, recorded 40 ms later,
/// puts `F` at `F* 2^(-(d_i + 40 ms) / 30 s) + cost`, which decays to `F*` at
/// `C_{i+1} = C_i + g(d_i + 40 ms)`, `g(x) = 30 s * log2(1 + cost 2^(x / 30 s) / F*)`. So
/// `T_n` lies in `[C1 + (n - 1) g(0), C1 + (n - 1) g(290 ms) + 250 ms]`.
fn returns(cost: f32) -> (u64, core::ops::RangeInclusive<u64>) {
    let f_star = f_at_penalty_one();
    let (mut k, mut f) = (0, 0.0f32);
    while penalty(f64::from(f), 0.0) < 1.0 {
        k += 1;
        f += cost;
    }
    let g = |x: f64| FAIL_HALF * (1.0 + f64::from(cost) * (x / FAIL_HALF).exp2() / f_star).log2();
    let c1 = FAIL_HALF * (f64::from(f) / f_star).log2();
    // And a tick or so either way.
    let (c1_lo, c1_hi) = (c1 - 0.01, c1 + 1.01);
    // The returns all fall after 10 s (and the start's calls before 1 s).
    assert!(c1_lo >= 10.0, "{c1_lo}");
    let count = |t: &dyn Fn(u64) -> f64| (1..).take_while(|&n| t(n) < 120.0).count() as u64;
    let fewest = count(&|n| c1_hi + (n - 1) as f64 * g(0.29) + 0.25);
    let most = count(&|n| c1_lo + (n - 1) as f64 * g(0.0));
    (k, fewest..=most)
}

#[test]
fn default_node_answering_4xx_to_everything_loses_its_traffic() {
    // As in the recovery test: 100 requests per second, 40 ms each, so node 3 takes calls while its
    // penalty is below 1 (see `returns`). Answering 400 to everything it gains 0.01 failures per call and
    // no successes: P = a F + b log2(1 + F) passes 1 at F* = 0.030546, after 4 calls (F = 0.03:
    // P = 0.982; F = 0.04: P = 1.305). Those decay back below F* at about 11.7 s (30 s * log2(0.04 / F*));
    // then each call puts F at about F* + 0.01, which takes 30 s * log2(1 + 0.01 / F*) = 12.26 s to decay
    // back below F* (plus up to 250 ms to the next rotation): 9 calls in [10 s, 120 s), at about 12 s,
    // 24.3 s, ..., 110 s. A 429 costs 0.1: the first call gives P = 3.2, back below 1 after
    // 30 s * log2(0.1 / F*) = 51.3 s, then one call every 30 s * log2(1 + 0.1 / F*) = 62.9 s: at about
    // 51.5 s and 114.5 s. A 500: one call, then none for 30 s * log2(1 / F*) = 151 s.
    // (With `ratio_penalty` 8, F* was 0.04699: 5 calls then 13 for 400s, 8.35 s apart; 1 then 2 for
    // 429s, 49.4 s apart; 1 then none for 500s.)
    let f_star = f_at_penalty_one();
    let mut calls = Vec::new();
    for outcome in [Outcome::ClientError, Outcome::Throttled, Outcome::Failure] {
        let cost = match outcome {
            Outcome::ClientError => K.client_error,
            Outcome::Throttled => K.throttled,
            _ => 1.0,
        };
        let (start, between) = returns(cost);
        let mut l = Load::new(&[1, 2, 3], Config::default(), 1);
        l.run_until(120 * SEC, 10 * MS, fails_if(3, outcome, 40 * MS));
        let first = l.picks_of(3, 0, SEC);
        let later = l.picks_of(3, 10 * SEC, 120 * SEC);
        let n = l.snap(3);
        assert_eq!(n.successes, 0.0);
        // The model above: the start's calls, none until the first return, then within the bounds.
        assert_eq!(first, start, "{outcome:?}: {n:?}");
        assert_eq!(l.picks_of(3, SEC, 10 * SEC), 0, "{outcome:?}");
        // The bounds are tight here: the fewest and the most calls they allow are equal.
        assert_eq!(between.start(), between.end(), "{outcome:?}");
        assert!(
            between.contains(&later),
            "{outcome:?}: {later} not in {between:?}"
        );
        calls.push((first, later, n.penalty));
        if outcome == Outcome::ClientError {
            // Its share fell from a third to 0.1 %.
            assert!(later as f64 / l.picks_in(10 * SEC, 120 * SEC) as f64 <= 0.0015);
            // Hovering just around P = 1: F is at least F* decayed for the 290 ms from a crossing to
            // the release of the call it brings, and at most F* + 0.01 (0.99..1.31).
            let (lo, hi) = (
                penalty(f_star * (-(0.29 / FAIL_HALF)).exp2(), 0.0),
                penalty(f_star + f64::from(cost), 0.0),
            );
            assert!((lo..=hi).contains(&n.penalty), "{n:?}");
        }
    }
    // 400: 4 calls, then 9; 429: 1 call, then at about 51.5 s and 114.5 s; 500: 1 call, then none.
    assert_eq!(
        calls.iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(),
        [(4, 9), (1, 2), (1, 0)]
    );
}

/// One step of a random trace: what the caller does, drawn once so that two runs see the same steps.
#[derive(Clone, Copy, Debug)]
enum Step {
    Acquire,
    /// Releases the held lease at this index (modulo the number held), with this outcome.
    Release(usize, Outcome),
    LameDuck(u64, bool),
}

fn random_trace(seed: u64, n: usize) -> Vec<(u64, Step)> {
    let mut rng = Rng::with_seed(seed);
    let mut t = 0;
    (0..n)
        .map(|_| {
            t += rng.u64(..400 * MS);
            let step = match rng.u32(..20) {
                0..=8 => Step::Acquire,
                9 => Step::LameDuck(rng.u64(1..=4), rng.bool()),
                _ => Step::Release(rng.usize(..64), Outcome::ALL[rng.usize(..6)]),
            };
            (t, step)
        })
        .collect()
}

/// Runs `trace` under `config`, reporting each outcome through `map`; returns everything observable:
/// each acquire's answer, and every snapshot after each step.
fn replay(
    config: Config,
    trace: &[(u64, Step)],
    map: impl Fn(Outcome) -> Outcome,
) -> (
    Vec<Result<u64, Rejected>>,
    Vec<Vec<weir::balance::NodeSnapshot>>,
    weir::balance::Stats,
) {
    let b = Balancer::with_capacity(4, config).unwrap();
    for id in 1..=4 {
        b.add(id).unwrap();
    }
    let mut rng = Rng::with_seed(77);
    let (mut held, mut picks, mut snaps) = (Vec::new(), Vec::new(), Vec::new());
    for &(t, step) in trace {
        match step {
            Step::Acquire => {
                let r = b.acquire(t, &mut rng);
                picks.push(r.as_ref().map(|l| l.node_id()).map_err(|e| *e));
                if let Ok(l) = r {
                    held.push(l);
                }
            }
            Step::Release(i, o) if !held.is_empty() => {
                let l = held.swap_remove(i % held.len());
                b.release(l, map(o), t).unwrap();
            }
            Step::Release(..) => {}
            Step::LameDuck(id, on) => b.set_lame_duck(id, on).unwrap(),
        }
        // The nodes' state, without their counts of each outcome (which the mapping moves).
        snaps.push(
            b.nodes(t)
                .map(|n| weir::balance::NodeSnapshot {
                    by_outcome: [0; 6],
                    ..n
                })
                .collect(),
        );
    }
    (picks, snaps, b.stats())
}

#[test]
fn cascade_reads_throttled_as_dropped_and_client_error_as_ignored() {
    let aimd = LimitAlgorithm::Aimd(AimdLimit {
        initial_limit: 4,
        min_limit: 1,
        max_limit: 8,
        ..AimdLimit::default()
    });
    let configs = [
        Config::cascade(),
        // Limiters and windows that the mapping reaches: AIMD backs off on drops; a narrow window.
        Config {
            limit: aimd,
            ..Config::cascade()
        },
        Config {
            limit: aimd,
            ..weighted(Weighted {
                health: WeightedHealth::Buckets(BucketHealth {
                    count: 3,
                    width_ns: 500 * MS,
                    decay: 2.0,
                }),
                draw: Draw::WeightedPick,
                ..Weighted::CASCADE
            })
        },
        Config {
            limit: LimitAlgorithm::Fixed(FixedLimit { limit: 3 }),
            ..weighted(Weighted {
                health: WeightedHealth::Ewma(EwmaHealth { half_life: 4 }),
                draw: Draw::CascadeApprox,
                ..Weighted::CASCADE
            })
        },
    ];
    for (k, config) in configs.into_iter().enumerate() {
        let trace = random_trace(k as u64, 5_000);
        let raw = replay(config, &trace, |o| o);
        let mapped = replay(config, &trace, Outcome::as_cascade);
        assert_eq!(raw.0, mapped.0, "config {k}: picks");
        assert_eq!(raw.1, mapped.1, "config {k}: snapshots");
        // The trace did reach every outcome, and the limits moved where they can.
        let (r, m) = (raw.2, mapped.2);
        assert!(Outcome::ALL.iter().all(|&o| r.released(o) > 100), "{r:?}");
        assert_eq!(
            m.released(Outcome::Throttled) + m.released(Outcome::ClientError),
            0
        );
        assert_eq!(
            m.released(Outcome::Dropped),
            r.released(Outcome::Dropped) + r.released(Outcome::Throttled)
        );
        assert_eq!(
            m.released(Outcome::Ignored),
            r.released(Outcome::Ignored) + r.released(Outcome::ClientError)
        );
        assert_eq!(
            (r.acquired, r.rejected_all_busy, r.rejected_no_active),
            (m.acquired, m.rejected_all_busy, m.rejected_no_active)
        );
        if k > 0 {
            assert!(r.rejected_all_busy > 0, "config {k}: {r:?}");
        }
    }
    // Not vacuous: under the lowest-score family the same two traces differ (a 429 is a tenth of a drop).
    let config = Config::default();
    let trace = random_trace(9, 2_000);
    let raw = replay(config, &trace, |o| o);
    let mapped = replay(config, &trace, Outcome::as_cascade);
    assert_ne!(raw.1, mapped.1);
}
