//! Loom models of the default algorithm (`Algorithm::LOWEST_SCORE`, the lowest-score family over its
//! time-decayed counters, with the CIAD limit: `Config::default()`), through the public API only.
//!
//! Run with `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p weir-lb --release --test
//! loom_decay`.
//!
//! Each model races releases of leases on node 1 (and, in one, an acquire that rotates the balancer's
//! clock). Node 2 is node 1's twin: the same outcomes at the same times, recorded sequentially before the
//! race. After the join:
//! - no update is lost: node 1's decayed counters are exactly the sums of the amounts recorded, and equal
//!   to its twin's;
//! - the penalty the acquire path uses (the cached one, which `NodeSnapshot` does not show) is the one
//!   computed from the final counters: with both nodes idle, the lowest-score family sees a tie exactly
//!   when the two cached penalties are equal in the key's fixed point, and then picks each node for some
//!   seeds. A failure refreshes the cache at once, so where only failures race the twins tie at once: a
//!   cache that missed one (a penalty of 0 where a failure should have made it 26) or that kept a
//!   reading older than the rotation breaks the tie, and every seed picks the same node. A success
//!   reaches the cache at the next rotation (see `balance/lowest/decay.rs`), so where one races the
//!   twins must tie from the next epoch on.
//!
//! The expected penalties are derived from the lowest-score family's default constants as
//! `LowestScore::DEFAULT` holds them (`penalty` a = 10, `ratio_penalty` b = 16, half-lives 1 s and 30 s);
//! the numbers in the comments are those of these defaults.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use weir::{balance::LowestScore, balance::Stats, Balancer, Config, Lease, NodeSlot, Outcome, Rng};

type B = Balancer<Vec<NodeSlot>>;

/// The first nanosecond of the default clock's second epoch (a quarter of the 1 s success half-life).
const EPOCH: u64 = 250_000_000;

/// The decay counters' tick, 2^20 ns.
const TICK: u64 = 1 << 20;

/// The lowest-score family's default (penalty per failure, penalty per doubling, success half-life in
/// ns, failure half-life in ns): (10, 16, 1 s, 30 s).
const K: (f64, f64, f64, f64) = {
    let LowestScore {
        penalty,
        ratio_penalty,
        success_half_life_ns,
        failure_half_life_ns,
        ..
    } = LowestScore::DEFAULT;
    (
        penalty as f64,
        ratio_penalty as f64,
        success_half_life_ns as f64,
        failure_half_life_ns as f64,
    )
};

/// The lowest-score family's default penalty: `a F + b log2(1 + F / (S + 1))`.
fn penalty(s: f64, f: f64) -> f64 {
    if f == 0.0 {
        return 0.0;
    }
    K.0 * f + K.1 * (1.0 + f / (s + 1.0)).log2()
}

/// Counters recorded at 0, read at `now`: each decayed by its half-life over the whole ticks elapsed.
fn decayed(s: f64, f: f64, now: u64) -> (f64, f64) {
    let ticks = (now / TICK * TICK) as f64;
    (s * (-(ticks / K.2)).exp2(), f * (-(ticks / K.3)).exp2())
}

fn model(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemptions);
    builder.max_branches = 100_000;
    builder.check(f);
}

fn assert_conserved(st: &Stats) {
    assert_eq!(
        st.acquired,
        st.released_total() + st.released_stale + st.in_flight,
        "{st:?}"
    );
}

/// A lease on node `id` at `now` (the other node in lame duck for the acquire).
fn lease_on(b: &B, id: u64, now: u64) -> Lease {
    let other = 3 - id;
    b.set_lame_duck(other, true).unwrap();
    let l = b.acquire(now, &mut Rng::with_seed(id)).unwrap();
    assert_eq!(l.node_id(), id);
    b.set_lame_duck(other, false).unwrap();
    l
}

/// A two-node `Config::default()` balancer where both nodes have recorded `prefill` at time 0 and node 2
/// has recorded `racing` too, sequentially; node 1 has one lease in flight per entry of `racing`, acquired
/// at 0.
fn setup(prefill: &[Outcome], racing: &[Outcome]) -> (Arc<B>, Vec<Lease>) {
    let b =
        Arc::new(Balancer::new(vec![NodeSlot::new(), NodeSlot::new()], Config::default()).unwrap());
    b.add(1).unwrap();
    b.add(2).unwrap();
    for &o in prefill {
        for id in [1, 2] {
            let l = lease_on(&b, id, 0);
            b.release(l, o, 0).unwrap();
        }
    }
    for &o in racing {
        let l = lease_on(&b, 2, 0);
        b.release(l, o, 0).unwrap();
    }
    let leases = racing.iter().map(|_| lease_on(&b, 1, 0)).collect();
    (b, leases)
}

/// Releases `leases[0]` with `outcomes[0]` from the main thread and each other one from its own thread,
/// all at time 0, while `extra` (if any) runs on one more thread; returns what `extra` returned.
fn race(
    b: &Arc<B>,
    mut leases: Vec<Lease>,
    outcomes: &[Outcome],
    extra: Option<fn(&B) -> Lease>,
) -> Option<Lease> {
    let mut handles = Vec::new();
    for (l, &o) in leases.drain(1..).zip(&outcomes[1..]) {
        let b = b.clone();
        handles.push(thread::spawn(move || b.release(l, o, 0)));
    }
    let extra = extra.map(|f| {
        let b = b.clone();
        thread::spawn(move || f(&b))
    });
    assert_eq!(b.release(leases.pop().unwrap(), outcomes[0], 0), Ok(()));
    for h in handles {
        assert_eq!(h.join().unwrap(), Ok(()));
    }
    extra.map(|h| h.join().unwrap())
}

/// After the race: counters, conservation, and the tie of the twins' cached penalties: at `now` where
/// no success raced, and in any case from the next epoch (`now + EPOCH`, whose first acquire rotates).
/// `want` is node 1's (successes, failures, penalty) at 0.
fn check(b: &B, prefill: &[Outcome], racing: &[Outcome], now: u64, want: (f64, f64, f64)) {
    let st = b.stats();
    assert_conserved(&st);
    assert_eq!(st.in_flight, 0);
    // Each prefill outcome twice, each racing one twice (node 1 and its twin); the rotating acquire's
    // lease, if any, went back as Ignored.
    for o in [Outcome::Success, Outcome::Failure] {
        let count = |v: &[Outcome]| v.iter().filter(|&&x| x == o).count() as u64;
        assert_eq!(
            st.released(o),
            2 * (count(prefill) + count(racing)),
            "{o:?}: {st:?}"
        );
    }
    // No lost update: the sums at 0, exactly, and the twin's.
    let reading = |id, t| {
        let n = b.node(id, t).unwrap();
        assert_eq!(n.in_flight, 0);
        (n.successes, n.failures, n.penalty)
    };
    let one = reading(1, 0);
    assert_eq!((one.0, one.1), (want.0, want.1), "{one:?}");
    assert!((one.2 - want.2).abs() < 1e-9, "{one:?}");
    assert_eq!(one, reading(2, 0));
    assert_eq!(reading(1, now), reading(2, now));
    if !racing.contains(&Outcome::Success) {
        assert_tie(b, now, want.2);
    }
    assert_tie(b, now + EPOCH, want.2);
}

/// The twins' cached penalties tie at `now`: both nodes are picked, each for some seeds.
fn assert_tie(b: &B, now: u64, want: f64) {
    let mut picked = [false; 2];
    for seed in 0..4 {
        let l = b.acquire(now, &mut Rng::with_seed(seed)).unwrap();
        picked[l.node_id() as usize - 1] = true;
        b.release(l, Outcome::Ignored, now).unwrap();
    }
    assert_eq!(
        picked,
        [true, true],
        "the twins' cached penalties differ at {now}: node 1's missed a record (P at 0 should be {want})"
    );
}

/// A success and a failure race on node 1, which had a failure before: S = 1, F = 2,
/// P = 2 a + b log2(1 + 2 / 2) = 36 (a cache that missed the success: 2 a + b log2(3) = 45.36; one that
/// missed the failure: a + b log2(1.5) = 19.36). The failure refreshes the cached penalty, with the
/// success or without it as the order falls, and the next rotation's reading includes both.
#[test]
fn decay_success_races_failure() {
    model(3, || {
        let prefill = [Outcome::Failure];
        for racing in [
            [Outcome::Success, Outcome::Failure],
            [Outcome::Failure, Outcome::Success],
        ] {
            let (b, leases) = setup(&prefill, &racing);
            race(&b, leases, &racing, None);
            check(&b, &prefill, &racing, 0, (1.0, 2.0, penalty(1.0, 2.0)));
        }
    });
}

/// As above on a node with no failures yet: S = 1, F = 1, P = a + b log2(1.5) = 19.36 (a cache that
/// missed the success: a + b = 26). Under loom the record has a `SeqCst` fence between its counter
/// write and its loads, standing in for the store-buffering guarantee of `SeqCst` *accesses* that
/// forgiveness relies on (loom models `SeqCst` accesses as `AcqRel`; see loom's README, "Unsupported
/// features"), as `rt::queue` does.
#[test]
fn decay_success_races_failure_on_a_clean_node() {
    model(3, || {
        let racing = [Outcome::Success, Outcome::Failure];
        let (b, leases) = setup(&[], &racing);
        race(&b, leases, &racing, None);
        check(&b, &[], &racing, 0, (1.0, 1.0, penalty(1.0, 1.0)));
    });
}

/// Two failures on node 1 at the same instant: F = 2, P = 2 a + b log2(3) = 45.36 (one lost: 26).
#[test]
fn decay_two_failures() {
    model(3, || {
        let racing = [Outcome::Failure, Outcome::Failure];
        let (b, leases) = setup(&[], &racing);
        race(&b, leases, &racing, None);
        check(&b, &[], &racing, 0, (0.0, 2.0, penalty(0.0, 2.0)));
    });
}

/// One failure on node 1 dated 0 races an acquire at 250 ms, the first of the clock's second epoch, which
/// rotates: it settles and refreshes every node's cached penalty at 250 ms. The release reads its
/// penalty at the later of its own time and the rotation's, so whatever the order node 1's cache ends at
/// the penalty of its final counters read at 250 ms, as its twin's does (the rotation refreshed node 2
/// too): a release that stored a reading taken at 0 after the rotation's would break the tie. The
/// acquire's lease is released (`Ignored`) after the join.
#[test]
fn decay_rotation_races_a_release() {
    model(3, || {
        let racing = [Outcome::Failure];
        let (b, leases) = setup(&[], &racing);
        let rotate: fn(&B) -> Lease = |b| b.acquire(EPOCH, &mut Rng::with_seed(3)).unwrap();
        let l = race(&b, leases, &racing, Some(rotate)).unwrap();
        b.release(l, Outcome::Ignored, EPOCH).unwrap();
        check(&b, &[], &racing, EPOCH, (0.0, 1.0, penalty(0.0, 1.0)));
        // Read at 250 ms (238 ticks): F = 2^(-238 * 2^20 / 30e9) = 0.99426,
        // P = a F + b log2(1 + F) = 25.876.
        let (s, f) = decayed(0.0, 1.0, EPOCH);
        let n = b.node(1, EPOCH).unwrap();
        assert!((n.failures - f).abs() < 1e-9, "{n:?} vs {f}");
        assert!((n.penalty - penalty(s, f)).abs() < 1e-9, "{n:?}");
    });
}

/// Three threads: as above with a success and a failure racing the rotation on a node that had a
/// failure before.
/// One preemption, any thread, any point: with two the state space takes minutes.
#[test]
fn decay_rotation_races_releases() {
    model(1, || {
        let (prefill, racing) = ([Outcome::Failure], [Outcome::Success, Outcome::Failure]);
        let (b, leases) = setup(&prefill, &racing);
        let rotate: fn(&B) -> Lease = |b| b.acquire(EPOCH, &mut Rng::with_seed(3)).unwrap();
        let l = race(&b, leases, &racing, Some(rotate)).unwrap();
        b.release(l, Outcome::Ignored, EPOCH).unwrap();
        check(&b, &prefill, &racing, EPOCH, (1.0, 2.0, penalty(1.0, 2.0)));
        // Read at 250 ms (238 ticks): both counters decayed, and the penalty with them (successes
        // halve 30 times faster, so it rose: S = 0.8412, F = 1.9885,
        // P = 19.885 + 16 log2(1 + 1.9885 / 1.8412) = 36.79, from 36).
        let (s, f) = decayed(1.0, 2.0, EPOCH);
        let n = b.node(1, EPOCH).unwrap();
        assert!(
            (n.successes - s).abs() < 1e-9 && (n.failures - f).abs() < 1e-9,
            "{n:?}"
        );
        assert!((n.penalty - penalty(s, f)).abs() < 1e-9, "{n:?}");
        assert!(n.penalty > penalty(1.0, 2.0), "{n:?}");
    });
}

/// Two drops on node 1 at the same instant under the CIAD limit: the limiter's state goes 20 -> 18 -> 16
/// (each sample applies once, by compare-and-swap), and the limit published in the node's control word
/// must end at 16, as the twin's does. `Balancer::release` reads the limiter's state inside the control
/// word's compare-and-swap, and loads the control word with `Acquire` (`fetch_update(SeqCst, Acquire,
/// ..)`): when one release's compare-and-swap lands on the other's write, its load read that write, so
/// the other's update of the limiter's state happens-before its read, and "of two racing releases the one
/// that lands last publishes a limit at least as new as the other's". (With `Relaxed` loads, as before,
/// the last release could read the state from before the other's update and publish 18 over 16.)
#[test]
fn racing_drops_publish_the_newest_limit() {
    model(3, || {
        let racing = [Outcome::Failure, Outcome::Failure];
        let (b, leases) = setup(&[], &racing);
        race(&b, leases, &racing, None);
        assert_eq!(b.node(2, 0).unwrap().limit, 16);
        let published = b.node(1, 0).unwrap().limit;
        // The state itself is right: the next sampled release (a success below the increase threshold,
        // which leaves the state as it is) republishes 16.
        let l = lease_on(&b, 1, 0);
        b.release(l, Outcome::Success, 0).unwrap();
        assert_eq!(b.node(1, 0).unwrap().limit, 16);
        assert_eq!(
            published, 16,
            "published a limit older than the limiter's state"
        );
    });
}

/// Forgiveness (`LowestScore::forgiveness` 0.5) racing a failure on a node with one failure: each
/// success's halving is one compare-and-swap on the failure counter, as each failure's addition is, so
/// the result is one of the two serial orders, never a lost write: success first, 1 / 2 + 1 = 1.5;
/// failure first, (1 + 1) / 2 = 1 (a lost failure would leave 0.5, a lost halving 2).
#[test]
fn decay_forgiveness_races_failure() {
    model(3, || {
        let config = Config {
            algorithm: weir::balance::Algorithm::LowestScore(LowestScore {
                forgiveness: 0.5,
                ..LowestScore::DEFAULT
            }),
            ..Config::default()
        };
        let b = Arc::new(Balancer::new(vec![NodeSlot::new(), NodeSlot::new()], config).unwrap());
        b.add(1).unwrap();
        b.add(2).unwrap();
        let first = lease_on(&b, 1, 0);
        b.release(first, Outcome::Failure, 0).unwrap();
        let (ok, failed) = (lease_on(&b, 1, 0), lease_on(&b, 1, 0));
        let b2 = b.clone();
        let t = thread::spawn(move || b2.release(ok, Outcome::Success, 0));
        assert_eq!(b.release(failed, Outcome::Failure, 0), Ok(()));
        assert_eq!(t.join().unwrap(), Ok(()));
        assert_conserved(&b.stats());
        let n = b.node(1, 0).unwrap();
        assert!(n.failures == 1.5 || n.failures == 1.0, "{n:?}");
        // The penalty read is the formula's of those counters.
        assert!(
            (n.penalty - penalty(n.successes, n.failures)).abs() < 1e-9,
            "{n:?}"
        );
    });
}

/// Two checkers ask at once for a node due for a health check: node 1 failed at 0 and has been quiet
/// for the period, so it is due, and exactly one of them is handed it (the claim is one
/// compare-and-swap of its failure counter).
#[test]
fn decay_checkers_race_for_a_due_node() {
    const QUIET: u64 = 2_000_000_000;
    model(3, || {
        let (b, _) = setup(&[], &[]);
        let l = lease_on(&b, 1, 0);
        b.release(l, Outcome::Failure, 0).unwrap();
        // The clock moved to 3 s by an acquire before the race (node 2's: node 1 is avoided).
        let l = b
            .acquire(3 * 1_000_000_000, &mut Rng::with_seed(0))
            .unwrap();
        assert_eq!(l.node_id(), 2);
        b.release(l, Outcome::Ignored, 3 * 1_000_000_000).unwrap();
        let b2 = b.clone();
        let t = thread::spawn(move || b2.due_check(3 * 1_000_000_000, QUIET));
        let mine = b.due_check(3 * 1_000_000_000, QUIET);
        let theirs = t.join().unwrap();
        let mut got = [mine, theirs];
        got.sort();
        assert_eq!(got, [None, Some(1)]);
    });
}

/// A healthy check's report races a failure on node 1, which had failed before. Either order is
/// right: forgiven then failed (F = 1) or failed then forgiven (F = 0); the cached penalty must be the
/// one of the final counters. Node 2 is brought to the same counters afterwards, sequentially, and the
/// twins' cached penalties must tie (both picked, each for some seeds).
#[test]
fn decay_healthy_check_races_failure() {
    model(3, || {
        let (b, mut leases) = setup(&[Outcome::Failure], &[Outcome::Failure]);
        // `setup` recorded node 2's racing failure already: forgive it, to replay node 1's order below.
        b.report_check(2, true, 0).unwrap();
        let b2 = b.clone();
        let t = thread::spawn(move || b2.report_check(1, true, 0));
        assert_eq!(
            b.release(leases.pop().unwrap(), Outcome::Failure, 0),
            Ok(())
        );
        assert_eq!(t.join().unwrap(), Ok(()));
        let f = b.node(1, 0).unwrap().failures;
        assert!(f == 0.0 || f == 1.0, "{f}");
        if f == 1.0 {
            let l = lease_on(&b, 2, 0);
            b.release(l, Outcome::Failure, 0).unwrap();
        }
        let (one, two) = (b.node(1, 0).unwrap(), b.node(2, 0).unwrap());
        assert_eq!((one.successes, one.failures), (two.successes, two.failures));
        let mut picked = [false; 2];
        for seed in 0..4 {
            let l = b.acquire(0, &mut Rng::with_seed(seed)).unwrap();
            picked[l.node_id() as usize - 1] = true;
            b.release(l, Outcome::Ignored, 0).unwrap();
        }
        assert_eq!(
            picked,
            [true, true],
            "node 1's cached penalty missed F = {f}"
        );
    });
}
