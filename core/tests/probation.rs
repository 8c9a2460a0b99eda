//! Probation (the at-capacity issue's ramp-back): a node that failed and then recovers gets its share
//! back only if something calls it and its answers count. `LowestScore::probe_fraction` sends a trickle
//! of calls to random members; `LowestScore::forgiveness` lets each success take part of the node's
//! failures away. Either alone leaves the recovered node out, as the default does, for minutes.

mod common;
use common::load::Load;
use weir::balance::{Algorithm, LowestScore};
use weir::{Config, Outcome};

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000 * MS;

/// Three nodes, 1,000 calls/s of 10 ms (about 3 in flight per node); node 3 answers every call with a
/// fast 500 from 5 s to 15 s.
/// Returns node 3's share of the calls per second from 15 s, for `secs` seconds, and its share during
/// its fault (from 6 s, once it is learnt).
fn recovered_share(probe_fraction: f32, forgiveness: f32, secs: u64) -> (Vec<f64>, f64) {
    let config = Config {
        algorithm: Algorithm::LowestScore(LowestScore {
            probe_fraction,
            forgiveness,
            ..LowestScore::DEFAULT
        }),
        ..Config::default()
    };
    let mut l = Load::new(&[1, 2, 3], config, 11);
    l.run_until((15 + secs) * SEC, MS, |id, t, _| {
        Some(match id {
            3 if (5 * SEC..15 * SEC).contains(&t) => (MS, Outcome::Failure),
            _ => (10 * MS, Outcome::Success),
        })
    });
    let share = |from: u64, to: u64| l.picks_of(3, from, to) as f64 / l.picks_in(from, to) as f64;
    let after = (0..secs)
        .map(|s| share((15 + s) * SEC, (16 + s) * SEC))
        .collect();
    (after, share(6 * SEC, 15 * SEC))
}

/// The first second from which node 3 held at least 90 % of its fair share (a third) for 5 seconds
/// running, if any.
fn ramped_back(per_second: &[f64]) -> Option<usize> {
    per_second
        .windows(5)
        .position(|w| w.iter().all(|&s| s >= 0.9 / 3.0))
}

#[test]
fn probes_and_forgiveness_bring_a_recovered_node_back_within_seconds() {
    let (after, during) = recovered_share(0.01, 0.5, 30);
    eprintln!("probes 1 %, forgiveness 0.5: {after:.2?}, during the fault {during:.4}");
    let at = ramped_back(&after).expect("ramped back within 30 s");
    assert!(at <= 10, "ramped back from {at} s after the recovery");
    // The probes' cost: while it failed, the node got about a third of the 1 % probes.
    assert!(during < 0.01, "{during}");
}

#[test]
fn either_alone_leaves_the_recovered_node_out_like_the_default() {
    for (probe, forgive) in [(0.0, 0.0), (0.01, 0.0), (0.0, 0.5)] {
        let (after, _) = recovered_share(probe, forgive, 30);
        eprintln!("probes {probe}, forgiveness {forgive}: {after:.2?}");
        assert_eq!(
            ramped_back(&after),
            None,
            "probes {probe}, forgiveness {forgive}"
        );
    }
}
