//! Health checks (`Balancer::due_check`, `Balancer::report_check`): the outcomes of real calls take a
//! node out, and a check the application sends brings it back, so a node that stays broken costs the
//! callers no call, and a node that recovers is called again within a period whatever the call rate.

mod common;
use std::sync::{Arc, Barrier};

use common::load::Load;
use weir::balance::CheckError;
use weir::{Balancer, Config, Outcome, Rng};

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000 * MS;
/// The checks' quiet period: HAProxy's default interval between checks.
const QUIET: u64 = 2 * SEC;

/// Node 3 answers every call with a fast 500 from 5 s to 25 s.
fn broken(t: u64) -> bool {
    (5 * SEC..25 * SEC).contains(&t)
}

/// Nodes 1, 2 and 3 under `Config::default()`, 10 calls a second of 10 ms until 45 s, node 3 failing
/// while [`broken`]. With `checks`, a checker looks for a node due every 100 ms (between calls) and
/// answers its check at once: healthy unless the node is broken. Returns the load and the times of the
/// checks sent.
fn run(checks: bool) -> (Load, Vec<u64>) {
    let mut l = Load::new(&[1, 2, 3], Config::default(), 5);
    let mut sent = Vec::new();
    for step in 1..=450 {
        let t = step * 100 * MS;
        l.run_until(t, 100 * MS, |id, t, _| {
            Some(if id == 3 && broken(t) {
                (MS, Outcome::Failure)
            } else {
                (10 * MS, Outcome::Success)
            })
        });
        if !checks {
            continue;
        }
        if let Some(id) = l.b.due_check(t, QUIET) {
            assert_eq!(id, 3, "only node 3 ever fails");
            sent.push(t);
            l.b.report_check(id, !broken(t), t).unwrap();
        }
    }
    (l, sent)
}

#[test]
fn checks_bring_a_recovered_node_back_and_spend_no_call_on_it_while_broken() {
    let (with, sent) = run(true);
    let (without, _) = run(false);
    let first_back = with.picks.iter().find(|p| p.1 == 3 && p.0 >= 25 * SEC);
    eprintln!(
        "checks at {:?} s; node 3 back at {:?}; per second after: {:?}",
        sent.iter().map(|&t| t as f64 / 1e9).collect::<Vec<_>>(),
        first_back.map(|p| p.0 as f64 / 1e9),
        with.per_second(3, 25 * SEC, 20)
    );
    // While broken, once learnt: no caller's call, one check per period.
    assert_eq!(with.picks_of(3, 7 * SEC, 25 * SEC), 0);
    let during = sent.iter().filter(|&&t| broken(t)).count();
    assert!((7..=10).contains(&during), "{during} checks while broken");
    // Back within a period of its recovery, with its share (a third) from then on.
    let back = first_back.expect("node 3 called again").0;
    assert!(back <= 25 * SEC + QUIET + 200 * MS, "back at {back}");
    let share =
        with.picks_of(3, 30 * SEC, 45 * SEC) as f64 / with.picks_in(30 * SEC, 45 * SEC) as f64;
    assert!(share >= 0.9 / 3.0, "share {share}");
    // Without checks the default leaves it out for the rest of the run.
    assert_eq!(without.picks_of(3, 25 * SEC, 45 * SEC), 0);
    // The calls the others took are the same up to the fault: checks change nothing before.
    assert_eq!(
        with.picks
            .iter()
            .take_while(|p| p.0 < 5 * SEC)
            .collect::<Vec<_>>(),
        without
            .picks
            .iter()
            .take_while(|p| p.0 < 5 * SEC)
            .collect::<Vec<_>>()
    );
}

type Heap = Balancer<Box<[weir::NodeSlot]>, weir::rt::Waiters>;

/// A call to node `id` at `t` that fails (the other node's calls, until `id` is picked, succeed).
fn fail_on(b: &Heap, id: u64, t: u64, rng: &mut Rng) {
    let lease = loop {
        let l = b.acquire(t, rng).unwrap();
        if l.node_id() == id {
            break l;
        }
        b.release(l, Outcome::Success, t).unwrap();
    };
    b.release(lease, Outcome::Failure, t).unwrap();
}

/// Node 1 of a two-node default balancer failed once at 1 s; nothing else happened.
fn one_failed() -> Heap {
    let b = Balancer::with_capacity(2, Config::default()).unwrap();
    b.add(1).unwrap();
    b.add(2).unwrap();
    fail_on(&b, 1, SEC, &mut Rng::with_seed(1));
    b
}

/// The first time from `from`, in steps of 100 ms, at which node 1 is named for a check.
fn next_due(b: &Heap, from: u64) -> u64 {
    (0..2_000)
        .map(|k| from + k * 100 * MS)
        .find(|&t| b.due_check(t, QUIET) == Some(1))
        .expect("node 1 due within 200 s")
}

#[test]
fn a_node_that_fails_soon_after_each_readmission_waits_twice_as_long_each_time() {
    let b = one_failed();
    let mut rng = Rng::with_seed(2);
    let mut failed_at = SEC;
    let mut waits = Vec::new();
    for _ in 0..8 {
        let due = next_due(&b, failed_at);
        waits.push((due - failed_at) / (100 * MS));
        b.report_check(1, true, due).unwrap();
        // Readmitted, and failing again half a second later: a relapse.
        failed_at = due + 500 * MS;
        fail_on(&b, 1, failed_at, &mut rng);
    }
    // In tenths of a second: 2 s, then doubled at each relapse up to 2^6 times (128 s).
    assert_eq!(waits, [20, 40, 80, 160, 320, 640, 1280, 1280]);
    // Readmitted, and well for longer than the failure half-life (30 s): a recovery, and the next
    // fault is checked after 2 s again.
    let due = next_due(&b, failed_at);
    b.report_check(1, true, due).unwrap();
    let later = due + 31 * SEC;
    fail_on(&b, 1, later, &mut rng);
    assert_eq!(next_due(&b, later) - later, QUIET);
    // A failed check is no relapse without a readmission: the node waits 2 s again.
    let t = next_due(&b, later);
    b.report_check(1, false, t).unwrap();
    assert_eq!(next_due(&b, t) - t, QUIET);
}

#[test]
fn a_checker_on_its_own_timer_sees_time_pass_without_calls() {
    let b = one_failed();
    // No acquire since 1 s: due_check moves the clock itself.
    assert_eq!(b.due_check(2 * SEC, QUIET), None);
    assert_eq!(b.due_check(3 * SEC + 100 * MS, QUIET), Some(1));
    assert_eq!(b.due_check(3 * SEC + 200 * MS, QUIET), None);
    assert_eq!(b.due_check(5 * SEC + 200 * MS, QUIET), Some(1));
    // A quiet beyond what a counter's age can tell is never met; 0 names the node at every call.
    assert_eq!(b.due_check(6 * SEC, u64::MAX), None);
    assert_eq!(b.due_check(6 * SEC, 1 << 51), None);
    assert_eq!(b.due_check(6 * SEC, 0), Some(1));
    assert_eq!(b.due_check(6 * SEC, 0), Some(1));
}

#[test]
fn a_refused_report_changes_nothing() {
    let b = one_failed();
    let before = (b.stats(), b.nodes(2 * SEC).collect::<Vec<_>>());
    assert_eq!(
        b.report_check(3, true, 2 * SEC),
        Err(CheckError::UnknownId(3))
    );
    assert_eq!(before, (b.stats(), b.nodes(2 * SEC).collect::<Vec<_>>()));
    // A failed check is one more failure, and no call: the statistics do not move.
    b.report_check(1, false, 2 * SEC).unwrap();
    assert_eq!(b.stats(), before.0);
    let n = b.node(1, 2 * SEC).unwrap();
    assert!(n.failures > before.1[0].failures + 0.9, "{n:?}");
    b.report_check(1, true, 2 * SEC).unwrap();
    let n = b.node(1, 2 * SEC).unwrap();
    assert_eq!((n.failures, n.penalty), (0.0, 0.0));
    // The weighted family keeps no penalty to forgive: refused, whatever the answer.
    let cascade = Balancer::with_capacity(1, Config::cascade()).unwrap();
    cascade.add(1).unwrap();
    for healthy in [true, false] {
        assert_eq!(
            cascade.report_check(1, healthy, SEC),
            Err(CheckError::NotLowestScore)
        );
    }
    assert_eq!(cascade.due_check(SEC, 0), None);
}

#[test]
fn of_many_checkers_at_once_one_is_handed_the_node() {
    let b = Arc::new(one_failed());
    const THREADS: usize = 8;
    for round in 0..40u64 {
        let now = 3 * SEC + round * (QUIET + 100 * MS);
        let barrier = Arc::new(Barrier::new(THREADS));
        let named: usize = (0..THREADS)
            .map(|_| {
                let (b, barrier) = (b.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    b.due_check(now, QUIET)
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|h| h.join().unwrap())
            .inspect(|got| assert!(matches!(got, None | Some(1)), "{got:?}"))
            .filter(Option::is_some)
            .count();
        assert_eq!(named, 1, "round {round}");
    }
}
