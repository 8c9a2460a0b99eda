//! The weighted family's draws pick from exactly the distributions they claim: chi-square tests against the
//! weights (fixed seeds, so the tests are deterministic), including after limiters refuse.

use weir::{
    balance::Algorithm, balance::Draw, balance::Weighted, limit::FixedLimit, limit::LimitAlgorithm,
    Balancer, Config, HeapBalancer, Lease, Outcome, Rng,
};

/// Nodes 1..=4 with success rates 1, 0.5, 0.75 and 0 in one bucket: weights 1, 0.125, 0.421875, 0.
fn balancer(d: Draw, limit: u32) -> HeapBalancer {
    let config = Config {
        algorithm: Algorithm::Weighted(Weighted {
            draw: d,
            ..Weighted::CASCADE
        }),
        limit: LimitAlgorithm::Fixed(FixedLimit { limit }),
        ..Config::cascade()
    };
    let b = Balancer::with_capacity(4, config).unwrap();
    for id in 1..=4 {
        b.add(id).unwrap();
    }
    record(&b, 4, &[(1, 4, 0), (2, 2, 2), (3, 3, 1), (4, 0, 4)], 1);
    let w: Vec<f64> = (1..=4).map(|id| b.node(id, 0).unwrap().weight).collect();
    assert_eq!(w, vec![1.0, 0.125, 0.421875, 0.0]);
    b
}

/// Records exactly `(id, successes, failures)` on each node of `b` (ids `1..=nodes`), with the other nodes
/// in lame duck so the wanted one is picked.
fn record(b: &HeapBalancer, nodes: u64, outcomes: &[(u64, usize, usize)], seed: u64) {
    let mut rng = Rng::with_seed(seed);
    for &(id, ok, bad) in outcomes {
        for other in (1..=nodes).filter(|&o| o != id) {
            b.set_lame_duck(other, true).unwrap();
        }
        for o in std::iter::repeat_n(Outcome::Success, ok)
            .chain(std::iter::repeat_n(Outcome::Failure, bad))
        {
            let l = b.acquire(0, &mut rng).unwrap();
            assert_eq!(l.node_id(), id);
            b.release(l, o, 0).unwrap();
        }
        for other in (1..=nodes).filter(|&o| o != id) {
            b.set_lame_duck(other, false).unwrap();
        }
    }
}

/// Holds leases until node `id` is at its limit, releasing (as Ignored) every other lease drawn meanwhile.
fn fill(b: &HeapBalancer, id: u64, rng: &mut Rng) -> Vec<Lease> {
    let mut held = Vec::new();
    loop {
        let n = b.node(id, 0).unwrap();
        if n.in_flight == n.limit {
            return held;
        }
        let l = b.acquire(0, rng).unwrap();
        if l.node_id() == id {
            held.push(l);
        } else {
            b.release(l, Outcome::Ignored, 0).unwrap();
        }
    }
}

/// Draws `n` picks (each released at once as Ignored, which leaves health untouched) and returns counts.
fn draw(b: &HeapBalancer, n: usize, rng: &mut Rng) -> [u64; 4] {
    let mut counts = [0u64; 4];
    for _ in 0..n {
        let l = b.acquire(0, rng).unwrap();
        counts[(l.node_id() - 1) as usize] += 1;
        b.release(l, Outcome::Ignored, 0).unwrap();
    }
    counts
}

/// Pearson's chi-square of `counts` against probabilities `p` (cells with p = 0 must be empty).
fn chi_square(counts: &[u64; 4], p: [f64; 4]) -> f64 {
    let n: u64 = counts.iter().sum();
    let mut x2 = 0.0;
    for (c, p) in counts.iter().zip(p) {
        if p == 0.0 {
            assert_eq!(*c, 0, "a zero-probability node was picked: {counts:?}");
            continue;
        }
        let e = n as f64 * p;
        x2 += (*c as f64 - e).powi(2) / e;
    }
    x2
}

// Critical values of chi-square at p = 0.001: 2 degrees of freedom 13.82, 1 degree 10.83.
const CRIT_DF2: f64 = 13.82;
const CRIT_DF1: f64 = 10.83;

#[test]
fn cascade_draws_in_proportion_to_weight() {
    let b = balancer(Draw::Cascade, 100);
    let mut rng = Rng::with_seed(2);
    let counts = draw(&b, 200_000, &mut rng);
    let total = 1.0 + 0.125 + 0.421875;
    let x2 = chi_square(&counts, [1.0 / total, 0.125 / total, 0.421875 / total, 0.0]);
    assert!(x2 < CRIT_DF2, "chi-square {x2} for {counts:?}");
}

#[test]
fn cascade_after_refusals_is_sampling_without_replacement() {
    let b = balancer(Draw::Cascade, 2);
    let mut rng = Rng::with_seed(3);
    // Node 1 full: the walk continues in proportion to the remaining weights.
    let held = fill(&b, 1, &mut rng);
    let counts = draw(&b, 100_000, &mut rng);
    let rest = 0.125 + 0.421875;
    let x2 = chi_square(&counts, [0.0, 0.125 / rest, 0.421875 / rest, 0.0]);
    assert!(x2 < CRIT_DF1, "chi-square {x2} for {counts:?}");
    // Every positive-weight node full: the zero-weight node comes last, and takes the call.
    let held2 = fill(&b, 2, &mut rng);
    let held3 = fill(&b, 3, &mut rng);
    assert_eq!(draw(&b, 1_000, &mut rng), [0, 0, 0, 1_000]);
    for l in held.into_iter().chain(held2).chain(held3) {
        b.release(l, Outcome::Ignored, 0).unwrap();
    }
    assert_eq!(b.stats().in_flight, 0);
}

#[test]
fn weighted_pick_has_no_fallback_to_zero_weight() {
    let b = balancer(Draw::WeightedPick, 2);
    let mut rng = Rng::with_seed(4);
    let counts = draw(&b, 100_000, &mut rng);
    let total = 1.0 + 0.125 + 0.421875;
    assert!(chi_square(&counts, [1.0 / total, 0.125 / total, 0.421875 / total, 0.0]) < CRIT_DF2);
    let held: Vec<_> = [1, 2, 3]
        .iter()
        .flat_map(|&id| fill(&b, id, &mut rng))
        .collect();
    assert_eq!(
        b.acquire(0, &mut rng).err(),
        Some(weir::balance::Rejected::AllBusy)
    );
    for l in held {
        b.release(l, Outcome::Ignored, 0).unwrap();
    }
}

#[test]
fn cascade_approx_promotes_one_weighted_pick_then_walks_by_rate() {
    let b = balancer(Draw::CascadeApprox, 2);
    let mut rng = Rng::with_seed(5);
    let total = 1.0 + 0.125 + 0.421875;
    let counts = draw(&b, 100_000, &mut rng);
    assert!(chi_square(&counts, [1.0 / total, 0.125 / total, 0.421875 / total, 0.0]) < CRIT_DF2);
    // Node 1 full: when it is the promoted pick, the walk goes to the next highest rate (node 3), so node 3
    // gets its own share plus node 1's, and node 2 keeps only its own.
    let held = fill(&b, 1, &mut rng);
    let counts = draw(&b, 100_000, &mut rng);
    let x2 = chi_square(&counts, [0.0, 0.125 / total, (1.0 + 0.421875) / total, 0.0]);
    assert!(x2 < CRIT_DF1, "chi-square {x2} for {counts:?}");
    for l in held {
        b.release(l, Outcome::Ignored, 0).unwrap();
    }
}

#[test]
fn zero_weight_nodes_are_uniform_among_themselves() {
    // Every node at 0%: all weights zero, each draw spreads uniformly.
    for d in [Draw::Cascade, Draw::CascadeApprox, Draw::WeightedPick] {
        let b = Balancer::with_capacity(
            4,
            Config {
                algorithm: Algorithm::Weighted(Weighted {
                    draw: d,
                    ..Weighted::CASCADE
                }),
                ..Config::cascade()
            },
        )
        .unwrap();
        let mut rng = Rng::with_seed(6);
        for id in 1..=4 {
            b.add(id).unwrap();
        }
        for _ in 0..100 {
            let l = b.acquire(0, &mut rng).unwrap();
            b.release(l, Outcome::Failure, 0).unwrap();
        }
        assert!(b.nodes(0).all(|n| n.weight == 0.0 && n.has_data));
        let counts = draw(&b, 100_000, &mut rng);
        let x2 = chi_square(&counts, [0.25; 4]);
        assert!(x2 < 16.27, "{d:?}: chi-square {x2} for {counts:?}"); // 3 degrees of freedom
    }
}

/// Weights far below the integer draw's resolution (`2^-46`, where both round to 0 units) are drawn
/// exactly over their `f32` values: success rates 0.5 and 0.51 with exponent 50 give weights `2^-50` and
/// about `2^-48.6`, in the ratio `1.02^50 ≈ 2.69`. Treated as zero-weight nodes they would split evenly.
#[test]
fn tiny_weights_are_drawn_exactly() {
    let config = Config {
        algorithm: Algorithm::Weighted(Weighted {
            weight_exponent: 50.0,
            ..Weighted::CASCADE
        }),
        ..Config::cascade()
    };
    let b = Balancer::with_capacity(2, config).unwrap();
    b.add(1).unwrap();
    b.add(2).unwrap();
    record(&b, 2, &[(1, 1, 1), (2, 51, 49)], 5);
    let mut rng = Rng::with_seed(5);
    let (w1, w2) = (b.node(1, 0).unwrap().weight, b.node(2, 0).unwrap().weight);
    assert!(w1 < 1e-14 && w2 < 1e-14, "{w1} {w2}");
    let (w1, w2) = (w1 as f32 as f64, w2 as f32 as f64);
    let mut counts = [0u64; 4];
    for _ in 0..50_000 {
        let l = b.acquire(0, &mut rng).unwrap();
        counts[(l.node_id() - 1) as usize] += 1;
        b.release(l, Outcome::Ignored, 0).unwrap();
    }
    let x2 = chi_square(&counts, [w1 / (w1 + w2), w2 / (w1 + w2), 0.0, 0.0]);
    assert!(x2 < CRIT_DF1, "chi-square {x2} for {counts:?}");
}
