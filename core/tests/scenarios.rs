//! The seeds' scenarios as deterministic tests: a fake clock, a seeded generator, and fake nodes whose
//! behaviour is a function of time. Each asserts numbers.

use std::collections::BTreeMap;
use weir::{
    balance::Policy, balance::Rejected, limit::AimdLimit, limit::FixedLimit, limit::LimitAlgorithm,
    Balancer, Config, HeapBalancer, Outcome, Rng,
};

const MS: u64 = 1_000_000;

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
    for policy in [Policy::Cascade, Policy::CascadeApprox, Policy::WeightedPick] {
        let mut d = Driver::new(
            &[1, 2, 3],
            Config {
                policy,
                ..Config::seeds()
            },
        );
        // 30 s at 1,000 requests per second fills the 6 x 5 s window.
        let warm = d.run(30_000, MS, ok_unless(3));
        let after = d.run(30_000, MS, ok_unless(3));
        assert!(
            share(&warm, 3) < 0.01,
            "{policy:?}: warm-up share {}",
            share(&warm, 3)
        );
        assert_eq!(
            share(&after, 3),
            0.0,
            "{policy:?}: a node with 0% in the window has weight 0"
        );
        // Never picked again, its window has aged out: the sticky bucket keeps 0%, floored at 0.0001 / 3.
        assert_eq!(d.rate(3), 0.0001 / 3.0);
        assert!(
            (share(&after, 1) - 0.5).abs() < 0.02,
            "{policy:?}: {after:?}"
        );
    }
}

#[test]
fn failing_node_takes_traffic_when_healthy_nodes_are_full() {
    let config = Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit: 5 }),
        ..Config::seeds()
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
        policy: Policy::WeightedPick,
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
    let mut d = Driver::new(&[1, 2, 3], Config::seeds());
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
    let mut d = Driver::new(&[1, 2, 3], Config::seeds());
    let picks = d.run(30_000, MS, |_, _| Outcome::Failure);
    for id in [1, 2, 3] {
        assert!((share(&picks, id) - 1.0 / 3.0).abs() < 0.02, "{picks:?}");
        assert_eq!(d.rate(id), 0.0);
    }
}

#[test]
fn combination_half_failing_then_others_hard_down() {
    let mut d = Driver::new(&[1, 2, 3], Config::seeds());
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
            ..Config::seeds()
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
    let config = Config {
        floor: 0.2,
        weight_exponent: 1.0,
        ..Config::seeds()
    };
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
    let mut d = Driver::new(&[1, 2], Config::seeds());
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
    let mut d = Driver::new(&[1, 2], Config::seeds());
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
    assert_eq!(before, after);
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
        ..Config::seeds()
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
    let mut d = Driver::new(&[1, 2], Config::seeds());
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
