//! `Balancer::acquire_excluding` through the public API, for every draw: a retry never goes to a node
//! it names while another has room; it falls back to the ordinary acquire, with the same draws, when
//! none other can take it; an empty or unknown exclusion changes nothing.

use weir::{
    balance::{Algorithm, Draw, Rejected, Weighted, WeightedHealth},
    limit::{FixedLimit, LimitAlgorithm},
    Balancer, Config, HeapBalancer, Outcome, Rng,
};

fn configs(limit: u32) -> [Config; 4] {
    let fixed = LimitAlgorithm::Fixed(FixedLimit { limit });
    let cascade = |draw, health| Config {
        algorithm: Algorithm::Weighted(Weighted {
            health,
            draw,
            ..Weighted::CASCADE
        }),
        limit: fixed,
        ..Config::cascade()
    };
    [
        Config {
            limit: fixed,
            ..Config::default()
        },
        cascade(Draw::Cascade, WeightedHealth::BUCKETS),
        cascade(Draw::CascadeApprox, WeightedHealth::BUCKETS),
        cascade(Draw::WeightedPick, WeightedHealth::EWMA),
    ]
}

fn balancer(nodes: u64, config: Config) -> HeapBalancer {
    let b = Balancer::with_capacity(nodes as usize, config).unwrap();
    for id in 1..=nodes {
        b.add(id).unwrap();
    }
    b
}

/// While another node has room, the excluded ones are never chosen, even when they are the best; the
/// others are all reached.
#[test]
fn a_retry_goes_elsewhere_while_another_has_room() {
    for config in configs(100) {
        let b = balancer(4, config);
        let mut rng = Rng::with_seed(11);
        // Node 1 the best: the others fail now and then.
        for t in 0..40u64 {
            for _ in 2..=4 {
                let l = b.acquire_excluding(t, &mut rng, &[1, 9, 9]).unwrap();
                b.release(l, Outcome::Failure, t + 1).unwrap();
            }
        }
        let mut seen = [0u32; 5];
        let mut held = Vec::new();
        for i in 0..90 {
            let l = b.acquire_excluding(100, &mut rng, &[1, 3]).unwrap();
            seen[l.node_id() as usize] += 1;
            if i % 3 == 0 {
                held.push(l);
            } else {
                b.release(l, Outcome::Success, 101).unwrap();
            }
        }
        assert_eq!(
            (seen[1], seen[3]),
            (0, 0),
            "{:?}: {seen:?}",
            config.algorithm
        );
        assert!(
            seen[2] > 0 && seen[4] > 0,
            "{:?}: {seen:?}",
            config.algorithm
        );
        for l in held {
            b.release(l, Outcome::Success, 102).unwrap();
        }
    }
}

/// With every other node full, the retry goes to a node it tried; with every node full, `AllBusy`,
/// counted once.
#[test]
fn back_to_a_tried_node_only_when_no_other_can() {
    for config in configs(1) {
        let b = balancer(3, config);
        let mut rng = Rng::with_seed(5);
        let two = b.acquire_excluding(0, &mut rng, &[1, 3]).unwrap();
        let three = b.acquire_excluding(0, &mut rng, &[1, 2]).unwrap();
        assert_eq!((two.node_id(), three.node_id()), (2, 3));
        let one = b.acquire_excluding(0, &mut rng, &[1]).unwrap();
        assert_eq!(one.node_id(), 1, "{:?}", config.algorithm);
        assert_eq!(
            b.acquire_excluding(0, &mut rng, &[1]).err(),
            Some(Rejected::AllBusy)
        );
        assert_eq!(b.stats().rejected_all_busy, 1);
        for l in [one, two, three] {
            b.release(l, Outcome::Success, 1).unwrap();
        }
    }
}

/// Everything excluded, nothing excluded, or only ids that are not members: the ordinary acquire's
/// decision from the same draws.
#[test]
fn all_none_or_unknown_excluded_is_the_ordinary_acquire() {
    for config in configs(100) {
        for exclude in [&[][..], &[1, 2, 3, 4, 5][..], &[42, u64::MAX][..]] {
            let (a, b) = (balancer(5, config), balancer(5, config));
            let mut ra = Rng::with_seed(3);
            let mut rb = Rng::with_seed(3);
            for t in 0..200u64 {
                let la = a.acquire(t, &mut ra).unwrap();
                let lb = b.acquire_excluding(t, &mut rb, exclude).unwrap();
                assert_eq!(
                    la.node_id(),
                    lb.node_id(),
                    "{:?} {exclude:?}",
                    config.algorithm
                );
                let o = if la.node_id() == 2 {
                    Outcome::Failure
                } else {
                    Outcome::Success
                };
                a.release(la, o, t + 1).unwrap();
                b.release(lb, o, t + 1).unwrap();
            }
            assert_eq!(ra.u64(..), rb.u64(..), "the same draws");
        }
    }
    let empty = HeapBalancer::with_capacity(2, Config::default()).unwrap();
    let mut rng = Rng::with_seed(1);
    assert_eq!(
        empty.acquire_excluding(0, &mut rng, &[1]).err(),
        Some(Rejected::NoActiveNodes)
    );
    assert_eq!(empty.stats().rejected_no_active, 1);
}

/// The decision is a function of the state and the draws: two balancers fed alike decide alike.
#[test]
fn deterministic() {
    for config in configs(3) {
        let (a, b) = (balancer(6, config), balancer(6, config));
        let (mut ra, mut rb) = (Rng::with_seed(9), Rng::with_seed(9));
        let mut held = Vec::new();
        for t in 0..300u64 {
            let ex = [t % 6 + 1, (t * 7) % 6 + 1];
            let la = a.acquire_excluding(t, &mut ra, &ex);
            let lb = b.acquire_excluding(t, &mut rb, &ex);
            assert_eq!(
                la.as_ref().map(|l| l.node_id()),
                lb.as_ref().map(|l| l.node_id())
            );
            if let (Ok(la), Ok(lb)) = (la, lb) {
                held.push((la, lb));
            }
            if t % 2 == 0 {
                if let Some((la, lb)) = held.pop() {
                    let o = if t % 5 == 0 {
                        Outcome::Failure
                    } else {
                        Outcome::Success
                    };
                    a.release(la, o, t).unwrap();
                    b.release(lb, o, t).unwrap();
                }
            }
        }
    }
}
