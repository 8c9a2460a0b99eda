//! `Policy::LowestScore` and the decay model through the public API, exactly: in-flight counts and
//! failures are driven so that every node's key is known, and each acquire's answer is checked against
//! the rule the documentation states.
//!
//! The rule (see `policy.rs`): a node's key is `in_flight * 2^16 + ⌊P * 2^16⌋`, with `P` the decay model's
//! penalty `10 F + 8 log2(1 + F / (S + 1))` as cached (an `f32`) at the node's last release or the last
//! rotation; the lowest key among the active nodes with room wins, ties uniformly at random; the acquire is
//! refused with `AllBusy` if a full node with more than 5 in flight scores no more than that best key and
//! the best key is more than twice the highest such full node's score.
//!
//! Times: the decay counters are dated in ticks of 2^20 ns, the balancer's clock in epochs of a quarter of
//! the shorter half-life (250 ms by default). Everything that must not decay happens at `now = 0`, where
//! the balancer's clock starts, so every cached penalty is the undecayed one.

use weir::{
    balance::HealthModel, balance::Rejected, limit::FixedLimit, limit::LimitAlgorithm, Balancer,
    Config, HeapBalancer, Lease, Outcome, Rng,
};

/// 2^20 ns: the decay counters' tick.
const TICK: u64 = 1 << 20;
const SEC: u64 = 1_000_000_000;
/// Fixed-point unit of a key: one request in flight.
const UNIT: u64 = 1 << 16;

/// The default configuration with a fixed limit, so that in-flight counts and fullness are exact.
fn fixed(limit: u32) -> Config {
    Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit }),
        ..Config::default()
    }
}

fn balancer(nodes: u64, config: Config) -> HeapBalancer {
    let b = Balancer::with_capacity(nodes as usize, config).unwrap();
    for id in 1..=nodes {
        b.add(id).unwrap();
    }
    b
}

/// A lease on node `id` at `now`: every other node is put in lame duck for the acquire.
fn lease_on(b: &HeapBalancer, id: u64, now: u64, rng: &mut Rng) -> Lease {
    let others: Vec<u64> = b.nodes(now).map(|n| n.id).filter(|&o| o != id).collect();
    for &o in &others {
        b.set_lame_duck(o, true).unwrap();
    }
    let l = b.acquire(now, rng).unwrap();
    assert_eq!(l.node_id(), id);
    for &o in &others {
        b.set_lame_duck(o, false).unwrap();
    }
    l
}

/// Records `outcomes` on node `id`, each acquired and released at `now`.
fn record(b: &HeapBalancer, id: u64, now: u64, outcomes: &[Outcome]) {
    let mut rng = Rng::with_seed(id);
    for &o in outcomes {
        let l = lease_on(b, id, now, &mut rng);
        b.release(l, o, now).unwrap();
    }
}

/// The penalty as the documentation states it, in `f64`.
fn penalty(f: f64, s: f64) -> f64 {
    if f == 0.0 {
        return 0.0;
    }
    10.0 * f + 8.0 * (1.0 + f / (s + 1.0)).log2()
}

/// A penalty in the key's fixed point: cached as an `f32`, then `⌊P * 2^16⌋`.
fn fixed_point(p: f64) -> u64 {
    (f64::from(p as f32) * UNIT as f64) as u64
}

/// Relative closeness for values the core computes with `libm` and the test with `std` (the two may
/// differ in the last bit of `exp2` and `log2`).
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-13 * a.abs().max(b.abs())
}

/// The key of every active node of `b` at `now`, from its snapshot (`None` for a lame duck), and whether
/// it has room: valid when every cached penalty was computed at `now` (everything at one instant).
fn keys(b: &HeapBalancer, now: u64) -> Vec<(u64, u64, bool, u32)> {
    b.nodes(now)
        .filter(|n| n.state == weir::balance::NodeState::Active)
        .map(|n| {
            (
                n.id,
                u64::from(n.in_flight) * UNIT + fixed_point(n.penalty),
                n.in_flight < n.limit,
                n.in_flight,
            )
        })
        .collect()
}

/// What an acquire must answer, from the keys: the set of node ids it may pick, or the refusal.
fn expected(keys: &[(u64, u64, bool, u32)]) -> Result<Vec<u64>, Rejected> {
    if keys.is_empty() {
        return Err(Rejected::NoActiveNodes);
    }
    let Some(best) = keys.iter().filter(|k| k.2).map(|k| k.1).min() else {
        return Err(Rejected::AllBusy);
    };
    let threshold = keys
        .iter()
        .filter(|k| !k.2 && k.3 > 5 && k.1 <= best)
        .map(|k| k.1)
        .max();
    if let Some(t) = threshold {
        if best > 2 * t {
            return Err(Rejected::AllBusy);
        }
    }
    Ok(keys
        .iter()
        .filter(|k| k.2 && k.1 == best)
        .map(|k| k.0)
        .collect())
}

#[test]
fn snapshot_penalty_is_the_formula_for_exact_sequences() {
    let b = balancer(6, fixed(100));
    // At one instant, no decay: the counters are the sums of the amounts, each stored as an `f32`.
    record(&b, 1, 0, &[Outcome::Failure]);
    record(
        &b,
        2,
        0,
        &[Outcome::Failure, Outcome::Dropped, Outcome::Failure],
    );
    record(&b, 3, 0, &[Outcome::Success, Outcome::Failure]);
    record(&b, 4, 0, &[Outcome::Throttled]);
    record(
        &b,
        5,
        0,
        &[Outcome::ClientError, Outcome::Ignored, Outcome::Success],
    );
    record(
        &b,
        6,
        0,
        &[Outcome::Success, Outcome::Success, Outcome::Ignored],
    );
    let want: [(u64, f64, f64, f64); 6] = [
        // (id, F, S, P): 10 F + 8 log2(1 + F / (S + 1)).
        (1, 1.0, 0.0, 18.0),
        (2, 3.0, 0.0, 46.0),
        (3, 1.0, 1.0, 10.0 + 8.0 * 1.5f64.log2()),
        (4, f64::from(0.1f32), 0.0, penalty(f64::from(0.1f32), 0.0)),
        (5, f64::from(0.01f32), 1.0, penalty(f64::from(0.01f32), 1.0)),
        (6, 0.0, 2.0, 0.0),
    ];
    for (id, f, s, p) in want {
        let n = b.node(id, 0).unwrap();
        assert_eq!((n.failures, n.successes), (f, s), "{n:?}");
        assert!(close(n.penalty, p), "node {id}: {} vs {p}", n.penalty);
        assert!(n.has_data);
        // The success rate of the decay model is S / (S + F).
        let rate = if s + f > 0.0 { s / (s + f) } else { 1.0 };
        assert_eq!(n.success_rate, rate, "{n:?}");
    }
    // The exact ones, bit for bit (log2 of 2 and 4 is exact in any libm).
    assert_eq!(b.node(1, 0).unwrap().penalty, 18.0);
    assert_eq!(b.node(2, 0).unwrap().penalty, 46.0);
    // A 429 costs a tenth of a 500 and a 4xx a hundredth.
    let p = |id| b.node(id, 0).unwrap().penalty;
    assert!(p(4) < p(1) / 5.0 && p(5) < p(4) / 5.0);
    // A node with no data has penalty 0 and is fully trusted.
    let fresh = balancer(1, fixed(1));
    let n = fresh.node(1, 0).unwrap();
    assert_eq!(
        (
            n.failures,
            n.successes,
            n.penalty,
            n.success_rate,
            n.has_data
        ),
        (0.0, 0.0, 0.0, 1.0, false)
    );
}

#[test]
fn counters_decay_by_half_lives_in_ticks() {
    // The default: failures halve every 30 s, successes every second, counted in whole ticks of 2^20 ns.
    let b = balancer(2, fixed(100));
    record(&b, 1, 0, &[Outcome::Failure, Outcome::Success]);
    // 30 s is 28,610.23 ticks: read at 30 s the age is 28,610 ticks, a hair under one half-life.
    let at = 30 * SEC;
    let age = (at / TICK) as f64;
    assert_eq!(age, 28_610.0);
    let n = b.node(1, at).unwrap();
    let f = (-(age * TICK as f64 / 30e9)).exp2();
    assert!(close(n.failures, f), "{} vs {f}", n.failures);
    // The halving itself, within one tick's worth of decay: a tick is 2^20 / 30e9 = 3.5e-5 half-lives,
    // so |F / F0 - 1/2| <= (2^(3.5e-5) - 1) / 2 = 1.21e-5.
    let tick_bound = 0.5 * ((TICK as f64 / 30e9).exp2() - 1.0);
    assert!((n.failures - 0.5).abs() <= tick_bound, "{n:?}");
    assert!(tick_bound < 1.22e-5);
    // Successes at 30 s have halved 30 times: 2^-30 is below 2^-20, so they read as exactly 0.
    assert_eq!(n.successes, 0.0);
    assert!(close(n.penalty, penalty(n.failures, 0.0)));
    // At 1 s (953 ticks): successes halved once, within a tick (2^20 / 1e9 = 1e-3 half-lives).
    let n = b.node(1, SEC).unwrap();
    let s = (-((SEC / TICK) as f64 * TICK as f64 / 1e9)).exp2();
    assert!(close(n.successes, s), "{} vs {s}", n.successes);
    assert!((n.successes - 0.5).abs() <= 0.5 * ((TICK as f64 / 1e9).exp2() - 1.0));
    // 20 failure half-lives: 2^-20 still reads (the cut-off is "below 2^-20"); a tick later it is 0.
    let twenty = (20.0 * 30e9 / TICK as f64).ceil() as u64 * TICK;
    assert!(b.node(1, twenty - 2 * TICK).unwrap().failures > 0.0);
    let late = b.node(1, twenty + TICK).unwrap();
    assert_eq!((late.failures, late.penalty), (0.0, 0.0), "{late:?}");

    // Half-lives that are whole numbers of ticks halve exactly: 2^15 ticks for failures, 2^10 for
    // successes.
    let (hf, hs) = (TICK << 15, TICK << 10);
    let config = Config {
        health: HealthModel::Decay {
            success_half_life_ns: hs,
            failure_half_life_ns: hf,
            throttled_cost: 0.1,
            client_error_cost: 0.01,
            penalty: 10.0,
            ratio_penalty: 8.0,
        },
        ..fixed(100)
    };
    let b = balancer(2, config);
    record(&b, 1, 0, &[Outcome::Failure, Outcome::Failure]);
    record(&b, 1, 0, &[Outcome::Success; 4]);
    let at = |t: u64| {
        let n = b.node(1, t).unwrap();
        (n.failures, n.successes, n.penalty)
    };
    let (f, s, p) = at(0);
    assert_eq!((f, s), (2.0, 4.0));
    assert!(close(p, 20.0 + 8.0 * 1.4f64.log2()), "{p}");
    // One success half-life is 1/32 of a failure half-life.
    let (f, s, p) = at(hs);
    assert!(close(f, 2.0 * (-(1.0 / 32.0f64)).exp2()), "{f}");
    assert_eq!(s, 2.0);
    assert!(close(p, penalty(f, 2.0)), "{p}");
    assert_eq!(at(hf).0, 1.0);
    assert_eq!(at(2 * hf).0, 0.5);
    assert_eq!(at(3 * hs).1, 0.5);
    assert_eq!(at(hf), (1.0, 0.0, 18.0));
    // A record one half-life later adds to the decayed value: 1 + 1 = 2 at hf. The clock that dates
    // releases moves with acquires, so the lease is acquired at hf too.
    record(&b, 1, hf, &[Outcome::Failure]);
    assert_eq!(at(hf).0, 2.0);
    assert_eq!(at(2 * hf).0, 1.0);
    // A release dated before the counter's tick adds its amount undecayed, at that tick.
    let mut rng = Rng::with_seed(9);
    let l = lease_on(&b, 1, hf, &mut rng);
    b.release(l, Outcome::Throttled, 0).unwrap();
    assert_eq!(at(hf).0, f64::from(2.0f32 + 0.1f32));
    assert_eq!(at(2 * hf).0, f64::from(2.0f32 + 0.1f32) / 2.0);
}

/// The acquire path uses the decayed penalty: the rotation (the first acquire of each 250 ms epoch)
/// recomputes every cached penalty at its `now`. Node 1 has one lease in flight and no failures (key
/// `1.0`); node 2 has nothing in flight and one failure at 0 (key `P(t) = 10 F + 8 log2(1 + F)`,
/// `F = 2^(-ticks(t) / 28,610.23)`). Node 2 wins exactly when `P(t) < 1`: from `F < 0.04699`, about
/// `30 s * log2(1 / 0.04699) = 132.3 s` after its failure.
#[test]
fn cached_penalty_decays_with_the_rotation() {
    let b = balancer(2, fixed(100));
    let mut rng = Rng::with_seed(1);
    let held = lease_on(&b, 1, 0, &mut rng);
    record(&b, 2, 0, &[Outcome::Failure]);
    let mut crossed = None;
    for s in 100..=160u64 {
        // One probe per second: each is the first acquire of its epoch, so it rotates at `t`.
        let t = s * SEC;
        let f = (-((t / TICK) as f64 * TICK as f64 / 30e9)).exp2();
        let p = penalty(f, 0.0);
        let n = b.node(2, t).unwrap();
        assert!(close(n.penalty, p), "{t}: {} vs {p}", n.penalty);
        let want = if fixed_point(p) < UNIT { 2 } else { 1 };
        for seed in 0..4 {
            let l = b.acquire(t, &mut Rng::with_seed(seed)).unwrap();
            assert_eq!(l.node_id(), want, "at {s} s: P = {p}");
            b.release(l, Outcome::Ignored, t).unwrap();
        }
        if want == 2 && crossed.is_none() {
            crossed = Some(s);
        }
    }
    assert_eq!(crossed, Some(133), "P(132 s) > 1 > P(133 s)");
    b.release(held, Outcome::Success, 160 * SEC).unwrap();
}

#[test]
fn lowest_key_wins() {
    // Keys at now = 0 (no decay): node 1: 2 in flight, no failures: 2.0. Node 2: nothing in flight, one
    // failure: 18.0. Node 3: one in flight and one 4xx: 1 + 0.1 + 8 log2(1.01) = 1.2148. Node 4: one in
    // flight and one 429: 1 + 1 + 8 log2(1.1) = 3.1000 (a penalty of 2.1).
    let b = balancer(4, fixed(10));
    let mut rng = Rng::with_seed(3);
    record(&b, 2, 0, &[Outcome::Failure]);
    record(&b, 3, 0, &[Outcome::ClientError]);
    record(&b, 4, 0, &[Outcome::Throttled]);
    let mut held = vec![
        lease_on(&b, 1, 0, &mut rng),
        lease_on(&b, 1, 0, &mut rng),
        lease_on(&b, 3, 0, &mut rng),
        lease_on(&b, 4, 0, &mut rng),
    ];
    let k = keys(&b, 0);
    let p3 = penalty(f64::from(0.01f32), 0.0);
    let p4 = penalty(f64::from(0.1f32), 0.0);
    assert_eq!(
        k,
        vec![
            (1, 2 * UNIT, true, 2),
            (2, 18 * UNIT, true, 0),
            (3, UNIT + fixed_point(p3), true, 1),
            (4, UNIT + fixed_point(p4), true, 1),
        ]
    );
    assert_eq!(fixed_point(p3), 14_079, "{p3}");
    // Node 3 wins whatever the draw.
    for seed in 0..64 {
        let l = b.acquire(0, &mut Rng::with_seed(seed)).unwrap();
        assert_eq!(l.node_id(), 3);
        b.release(l, Outcome::Ignored, 0).unwrap();
    }
    // Holding every lease granted, the picks follow the keys exactly until every node is full: each
    // answer is the lowest key (one of the lowest on a tie), then AllBusy.
    let mut picks = Vec::new();
    loop {
        let want = expected(&keys(&b, 0));
        match b.acquire(0, &mut rng) {
            Ok(l) => {
                let ids = want.expect("a lease where the rule refuses");
                assert!(
                    ids.contains(&l.node_id()),
                    "{:?} not in {ids:?}",
                    l.node_id()
                );
                picks.push(l.node_id());
                held.push(l);
            }
            Err(e) => {
                assert_eq!(Err(e), want);
                break;
            }
        }
    }
    // Nodes 1, 3 and 4 fill up first (8 + 9 + 9 = 26 picks: at 9 in flight their keys are at most
    // 11.1, below node 2's 18). Then node 2 takes calls at keys 18, 19, ..., 24, while the give-up
    // threshold is twice the highest full heavy node's score, node 4's 10 + 2.1: 24.2. At 25 it refuses.
    assert_eq!(picks.len(), 33, "{picks:?}");
    assert_eq!(picks.iter().position(|&id| id == 2), Some(26), "{picks:?}");
    assert_eq!(picks[26..], [2; 7]);
    let n2 = b.node(2, 0).unwrap();
    assert_eq!(
        (n2.in_flight, n2.limit),
        (7, 10),
        "refused with room: the give-up rule"
    );
    assert_eq!(b.stats().rejected_all_busy, 1);
    for l in held {
        b.release(l, Outcome::Ignored, 0).unwrap();
    }
    // Every node in lame duck: NoActiveNodes.
    for id in 1..=4 {
        b.set_lame_duck(id, true).unwrap();
    }
    assert_eq!(b.acquire(0, &mut rng).err(), Some(Rejected::NoActiveNodes));
}

/// Counts picks of `draws` acquires (each released as `Ignored` at once) per node id.
fn draw_counts(b: &HeapBalancer, nodes: u64, draws: u64, seed: u64) -> Vec<u64> {
    let mut rng = Rng::with_seed(seed);
    let mut counts = vec![0u64; nodes as usize + 1];
    for _ in 0..draws {
        let l = b.acquire(0, &mut rng).unwrap();
        counts[l.node_id() as usize] += 1;
        b.release(l, Outcome::Ignored, 0).unwrap();
    }
    counts
}

fn chi_square(counts: &[u64], expected: f64) -> f64 {
    counts
        .iter()
        .map(|&c| (c as f64 - expected).powi(2) / expected)
        .sum()
}

#[test]
fn ties_are_uniform() {
    // Three fresh nodes tie at key 0: 30,000 draws, each node within 3 % of 10,000 (the standard
    // deviation is 82), and the chi-square statistic (2 degrees of freedom) below 13.8 (p = 0.001).
    let b = balancer(3, Config::default());
    let c = draw_counts(&b, 3, 30_000, 11);
    for &n in &c[1..] {
        assert!((9_700..=10_300).contains(&n), "{c:?}");
    }
    assert!(chi_square(&c[1..], 10_000.0) < 13.8, "{c:?}");

    // Three of four tie, the fourth has a penalty (a 4xx): it never wins, the three share evenly.
    let b = balancer(4, Config::default());
    record(&b, 2, 0, &[Outcome::ClientError]);
    let c = draw_counts(&b, 4, 30_000, 12);
    assert_eq!(c[2], 0, "{c:?}");
    for id in [1, 3, 4] {
        assert!((9_700..=10_300).contains(&c[id]), "{c:?}");
    }

    // 70 nodes: the scan buffers 64 keys and reads the rest again. All tie: 70,000 draws, 1,000 each
    // expected (standard deviation 31.4); the chi-square (69 degrees of freedom, mean 69, standard
    // deviation 11.7) below 130.
    let b = balancer(70, Config::default());
    let c = draw_counts(&b, 70, 70_000, 13);
    for &n in &c[1..] {
        assert!((850..=1_150).contains(&n), "{c:?}");
    }
    assert!(chi_square(&c[1..], 1_000.0) < 130.0, "{c:?}");
    // Two ties only, one inside the buffer and one beyond it (nodes 4 and 68; the others have a 4xx).
    for id in (1..=70).filter(|&id| id != 4 && id != 68) {
        record(&b, id, 0, &[Outcome::ClientError]);
    }
    let c = draw_counts(&b, 70, 20_000, 14);
    assert_eq!(c[4] + c[68], 20_000, "{c:?}");
    assert!((9_700..=10_300).contains(&c[4]), "{c:?}");
}

/// Node 2 ("heavy", with room for none) holds `heavy` leases under a fixed limit of `heavy`, after the
/// outcomes `heavy_outcomes`; node 1 holds `light` leases after `light_outcomes`. Returns the balancer,
/// with the leases held.
fn give_up_case(
    heavy: u32,
    heavy_outcomes: &[Outcome],
    light: u32,
    light_outcomes: &[Outcome],
) -> (HeapBalancer, Vec<Lease>) {
    let b = balancer(2, fixed(heavy));
    let mut rng = Rng::with_seed(5);
    record(&b, 1, 0, light_outcomes);
    record(&b, 2, 0, heavy_outcomes);
    let mut held: Vec<Lease> = (0..heavy).map(|_| lease_on(&b, 2, 0, &mut rng)).collect();
    held.extend((0..light).map(|_| lease_on(&b, 1, 0, &mut rng)));
    (b, held)
}

fn release_all(b: &HeapBalancer, held: Vec<Lease>) {
    for l in held {
        b.release(l, Outcome::Ignored, 0).unwrap();
    }
}

fn answer(b: &HeapBalancer) -> Result<u64, Rejected> {
    let mut answers = (0..16).map(|seed| {
        let r = b.acquire(0, &mut Rng::with_seed(seed));
        r.map(|l| {
            let id = l.node_id();
            b.release(l, Outcome::Ignored, 0).unwrap();
            id
        })
    });
    let first = answers.next().unwrap();
    // One node with room: the answer cannot depend on the draw.
    assert!(answers.all(|a| a == first));
    first
}

#[test]
fn give_up_rule_refuses_above_twice_the_heavy_score_not_at_equality() {
    let f = [Outcome::Failure];
    // Heavy node: 9 in flight, full, no penalty: score 9.0. Best with room: node 1, nothing in flight,
    // one failure: 18.0 = 2 x 9.0. At equality the rule does not refuse.
    let (b, held) = give_up_case(9, &[], 0, &f);
    assert_eq!(
        keys(&b, 0),
        vec![(1, 18 * UNIT, true, 0), (2, 9 * UNIT, false, 9)]
    );
    assert_eq!(answer(&b), Ok(1));
    assert_eq!(b.stats().rejected_all_busy, 0);
    release_all(&b, held);
    // One more in flight on node 1: 19.0 > 18.0. Refused.
    let (b, held) = give_up_case(9, &[], 1, &f);
    assert_eq!(answer(&b), Err(Rejected::AllBusy));
    assert_eq!(b.stats().rejected_all_busy, 16);
    release_all(&b, held);
    // A hair above: node 1 with a failure and a 4xx, 18.157 > 18.0. Refused.
    let (b, held) = give_up_case(9, &[], 0, &[Outcome::Failure, Outcome::ClientError]);
    let p = b.node(1, 0).unwrap().penalty;
    assert!(p > 18.0 && p < 18.2, "{p}");
    assert_eq!(answer(&b), Err(Rejected::AllBusy));
    release_all(&b, held);
    // A hair below the other way: the heavy node has a 4xx's penalty too, so twice its score is
    // 18 + 2 x 0.2148: node 1 at 18.0 is taken.
    let (b, held) = give_up_case(9, &[Outcome::ClientError], 0, &f);
    assert_eq!(answer(&b), Ok(1));
    release_all(&b, held);
    // Limit 6: heavy score 6.0, best 18.0 > 12.0. Refused.
    let (b, held) = give_up_case(6, &[], 0, &f);
    assert_eq!(answer(&b), Err(Rejected::AllBusy));
    release_all(&b, held);
    // Limit 5: a full node with 5 in flight is not heavy (more than 5 are needed): no give-up.
    let (b, held) = give_up_case(5, &[], 0, &f);
    assert_eq!(answer(&b), Ok(1));
    release_all(&b, held);
    // A heavy full node that scores more than the best node with room does not count: 9 + 18 > 18.
    let (b, held) = give_up_case(9, &f, 0, &f);
    assert_eq!(keys(&b, 0)[1], (2, 27 * UNIT, false, 9));
    assert_eq!(answer(&b), Ok(1));
    release_all(&b, held);
}

#[test]
fn give_up_threshold_is_the_highest_qualifying_heavy_node() {
    // Nodes 1 and 2 are heavy and full (limit 9): node 1 with 9 in flight and a 4xx's penalty (9.2148),
    // node 2 with 9 in flight (9.0); node 3 has room and a failure, with k in flight. Both heavy nodes
    // score no more than node 3, the higher one sets the threshold: 2 x 9.2148 = 18.43.
    for (k, outcomes, want) in [
        // 18.0 <= 18.43: taken.
        (0, vec![Outcome::Failure], Ok(3)),
        // 18.157 <= 18.43: taken (node 2's threshold alone, 18.0, would refuse it).
        (0, vec![Outcome::Failure, Outcome::ClientError], Ok(3)),
        // 19.0 > 18.43: refused.
        (1, vec![Outcome::Failure], Err(Rejected::AllBusy)),
    ] {
        let b = balancer(3, fixed(9));
        let mut rng = Rng::with_seed(8);
        record(&b, 1, 0, &[Outcome::ClientError]);
        record(&b, 3, 0, &outcomes);
        let mut held: Vec<Lease> = Vec::new();
        for id in [1, 2] {
            held.extend((0..9).map(|_| lease_on(&b, id, 0, &mut rng)));
        }
        held.extend((0..k).map(|_| lease_on(&b, 3, 0, &mut rng)));
        let ks = keys(&b, 0);
        assert_eq!(expected(&ks), want.map(|id| vec![id]), "{ks:?}");
        assert_eq!(answer(&b), want, "{ks:?}");
        for l in held {
            b.release(l, Outcome::Ignored, 0).unwrap();
        }
    }
}
