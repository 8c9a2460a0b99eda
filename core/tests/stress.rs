//! Multi-thread stress: workers hammer one balancer with acquire/release pairs (all four outcomes, a few
//! leases held at once and released in random order, per-thread virtual clocks that drift apart) while a
//! membership thread adds, removes and lame-ducks nodes. Afterwards every balancer counter must equal what
//! the callers counted, exactly, and nothing may be left in flight (DESIGN.md invariant 2).

mod common;
use common::conservation::{assert_conserved, check_snapshot, Tally};
use common::weighted;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use weir::balance::{BucketHealth, Draw, EwmaHealth, Weighted, WeightedHealth};
use weir::{
    balance::MembershipError, balance::ReleaseError, limit::AimdLimit, limit::FixedLimit,
    limit::LimitAlgorithm, Balancer, Config, HeapBalancer, Lease, Outcome, Rng,
};

const CAPACITY: usize = 16;
/// Node ids are drawn from `1..=POOL`: more ids than slots, so that adds can find the balancer full.
const POOL: u64 = 24;
/// Acquire/release pairs per test, over all workers.
const PAIRS: u64 = 1_000_000;
/// With full churn, workers keep going past `PAIRS` until the membership thread has taken this many
/// steps, so that the coverage checks (every membership answer seen, a lease outliving its node) do not
/// depend on how fast the workers are compared with the membership thread. (Lame-duck-only runs stop at
/// `PAIRS`: their window must hold every outcome, so their clocks must not run further.)
const MIN_CHURN_STEPS: u64 = 1_000;
const MS: u64 = 1_000_000;

fn workers() -> usize {
    thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4))
}

/// What the membership thread does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Churn {
    /// Adds, removes and lame-ducks ids from the whole pool.
    Full,
    /// Only toggles lame duck on the initial members (plus refused adds and removes): no node ever loses
    /// its history, so its window totals can be checked against every outcome reported.
    LameDuckOnly,
}

#[derive(Clone, Copy, Debug)]
struct Spec {
    config: Config,
    churn: Churn,
    /// Leases a worker holds at most at once.
    max_held: usize,
    /// The most leases a node may ever have admitted at once (the lease's `inflight_at_acquire`).
    max_inflight: u32,
}

impl Spec {
    fn new(config: Config) -> Spec {
        let max_inflight = match config.limit {
            LimitAlgorithm::Fixed(f) => f.limit,
            LimitAlgorithm::Aimd(a) => a.max_limit.max(a.initial_limit),
            LimitAlgorithm::Ciad(c) => c.max_limit.max(c.initial_limit),
            // Algorithms these stress specs do not use: no tighter bound claimed.
            _ => weir::limit::MAX_LIMIT,
        };
        Spec {
            config,
            churn: Churn::Full,
            max_held: 4,
            max_inflight,
        }
    }
}

/// What the membership thread saw.
#[derive(Debug, Default)]
struct ChurnReport {
    added: u64,
    duplicate: u64,
    capacity_full: u64,
    removed: u64,
    unknown: u64,
    lame_ducked: u64,
    all_lame_phases: u64,
}

/// A worker's tally plus its per-node health outcomes (`[finished, succeeded]` by id) and final clock.
struct WorkerReport {
    tally: Tally,
    health: Vec<[u64; 2]>,
    now: u64,
}

/// The outcome of a call to node `id`: ids divisible by 4 fail most of the time, the others mostly succeed;
/// every outcome occurs on every node.
fn outcome_for(id: u64, rng: &mut Rng) -> Outcome {
    let r = rng.u32(..100);
    let (ok, fail, drop) = if id % 4 == 0 {
        (20, 50, 15)
    } else {
        (85, 5, 5)
    };
    if r < ok {
        Outcome::Success
    } else if r < ok + fail {
        Outcome::Failure
    } else if r < ok + fail + drop {
        Outcome::Dropped
    } else {
        // The rest, spread over the three outcomes left.
        [Outcome::Ignored, Outcome::Throttled, Outcome::ClientError][r as usize % 3]
    }
}

fn worker(
    b: &HeapBalancer,
    spec: &Spec,
    seed: u64,
    t: usize,
    pairs: u64,
    churn_steps: &AtomicU64,
) -> WorkerReport {
    let mut rng = Rng::with_seed(seed ^ (t as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    // Each thread's clock starts a few milliseconds apart and advances by its own random steps (~100 µs
    // per step on average), so releases of one thread land in buckets older than another's.
    let mut now = 1 + t as u64 * 3 * MS;
    let mut held: Vec<Lease> = Vec::with_capacity(spec.max_held);
    let mut tally = Tally::default();
    let mut health = vec![[0u64; 2]; POOL as usize + 1];
    let mut want = rng.usize(1..=spec.max_held);
    let mut release = |lease: Lease, now: u64, rng: &mut Rng, tally: &mut Tally| {
        let id = lease.node_id();
        let outcome = outcome_for(id, rng);
        let r = tally.released(outcome, id, b.release(lease, outcome, now));
        assert_ne!(r, Err(ReleaseError::InvalidLease), "a Rust lease refused");
        if r.is_ok() && outcome.as_cascade() != Outcome::Ignored {
            health[id as usize][0] += 1;
            health[id as usize][1] += u64::from(outcome == Outcome::Success);
        }
    };
    let min_steps = if spec.churn == Churn::Full {
        MIN_CHURN_STEPS
    } else {
        0
    };
    while tally.releases() < pairs || churn_steps.load(Ordering::Relaxed) < min_steps {
        now += rng.u64(50_000..150_000);
        if held.len() < want {
            match tally.acquired(b.acquire(now, &mut rng)) {
                Ok(lease) => {
                    assert!((1..=POOL).contains(&lease.node_id()), "{lease:?}");
                    assert_eq!(lease.acquired_at(), now);
                    let inflight = lease.inflight_at_acquire();
                    assert!(
                        (1..=spec.max_inflight).contains(&inflight),
                        "admitted past the limit: {lease:?}"
                    );
                    held.push(lease);
                }
                // Fall back to releasing, or wait for the membership thread.
                Err(_) => want = held.len(),
            }
        } else if held.is_empty() {
            want = rng.usize(1..=spec.max_held);
        } else {
            let lease = held.swap_remove(rng.usize(..held.len()));
            release(lease, now, &mut rng, &mut tally);
            if rng.u32(..4) == 0 {
                want = rng.usize(1..=spec.max_held);
            }
        }
    }
    for lease in held {
        now += rng.u64(50_000..150_000);
        release(lease, now, &mut rng, &mut tally);
    }
    WorkerReport { tally, health, now }
}

/// The membership thread: random changes checked against its own model of membership (it is the only
/// writer, so the answer to each call is known, except whether an add finds a draining slot).
fn churn(
    b: &HeapBalancer,
    spec: &Spec,
    seed: u64,
    initial: &[u64],
    done: &AtomicBool,
    steps: &AtomicU64,
) -> ChurnReport {
    let mut rng = Rng::with_seed(seed ^ 0xC0FF_EE00);
    let mut report = ChurnReport::default();
    // None: not a member; Some(lame_duck).
    let mut model: Vec<Option<bool>> = vec![None; POOL as usize + 1];
    for &id in initial {
        model[id as usize] = Some(false);
    }
    let mut step = 0u64;
    while !done.load(Ordering::Acquire) {
        step += 1;
        steps.store(step, Ordering::Relaxed);
        let members = model.iter().filter(|m| m.is_some()).count();
        let id = rng.u64(1..=POOL);
        let member = model[id as usize];
        let op = rng.u32(..100);
        if spec.churn == Churn::Full && op < 35 {
            match b.add(id) {
                Ok(()) => {
                    assert_eq!(member, None, "added id {id} twice");
                    assert!(members < CAPACITY);
                    model[id as usize] = Some(false);
                    report.added += 1;
                }
                Err(MembershipError::DuplicateId(got)) => {
                    assert_eq!((got, member.is_some()), (id, true), "DuplicateId");
                    report.duplicate += 1;
                }
                Err(MembershipError::CapacityFull { capacity }) => {
                    assert_eq!(capacity, CAPACITY);
                    assert_eq!(
                        member, None,
                        "CapacityFull for a member: should be DuplicateId"
                    );
                    report.capacity_full += 1;
                }
                Err(e) => panic!("add({id}): {e:?}"),
            }
        } else if spec.churn == Churn::Full && op < 60 {
            match b.remove(id) {
                Ok(()) => {
                    assert!(member.is_some(), "removed non-member {id}");
                    model[id as usize] = None;
                    report.removed += 1;
                }
                Err(MembershipError::UnknownId(got)) => {
                    assert_eq!((got, member), (id, None), "UnknownId");
                    report.unknown += 1;
                }
                Err(e) => panic!("remove({id}): {e:?}"),
            }
        } else if spec.churn == Churn::LameDuckOnly && op < 10 {
            // Refused membership changes must not disturb anything.
            if member.is_some() {
                assert_eq!(b.add(id), Err(MembershipError::DuplicateId(id)));
                report.duplicate += 1;
            } else {
                assert_eq!(b.remove(id), Err(MembershipError::UnknownId(id)));
                report.unknown += 1;
            }
        } else {
            let lame = op % 2 == 0;
            match b.set_lame_duck(id, lame) {
                Ok(()) => {
                    assert!(member.is_some(), "lame-ducked non-member {id}");
                    model[id as usize] = Some(lame);
                    report.lame_ducked += 1;
                }
                Err(MembershipError::UnknownId(got)) => {
                    assert_eq!((got, member), (id, None), "UnknownId");
                    report.unknown += 1;
                }
                Err(e) => panic!("set_lame_duck({id}): {e:?}"),
            }
        }
        // Now and then every member goes lame duck for a moment: workers must see NoActiveNodes. The
        // first phase is at step 1, so that a run always has one however fast the workers finish.
        if step % 512 == 1 {
            let ids: Vec<u64> = (1..=POOL)
                .filter(|&i| model[i as usize].is_some())
                .collect();
            for &i in &ids {
                b.set_lame_duck(i, true).unwrap();
            }
            thread::yield_now();
            for &i in &ids {
                b.set_lame_duck(i, model[i as usize] == Some(true)).unwrap();
            }
            report.all_lame_phases += 1;
        }
        let st = b.stats();
        let active = model.iter().filter(|m| **m == Some(false)).count() as u32;
        let lame = model.iter().filter(|m| **m == Some(true)).count() as u32;
        assert_eq!(
            (st.active_nodes, st.lame_duck_nodes),
            (active, lame),
            "membership counts after step {step}"
        );
        if step % 64 == 0 {
            let mut seen = 0;
            for n in b.nodes(step * MS) {
                check_snapshot(&n);
                let want = if model[n.id as usize] == Some(true) {
                    weir::balance::NodeState::LameDuck
                } else {
                    weir::balance::NodeState::Active
                };
                assert_eq!(n.state, want, "{n:?}");
                if let LimitAlgorithm::Fixed(f) = spec.config.limit {
                    assert_eq!(n.limit, f.limit, "{n:?}");
                    assert!(n.in_flight <= n.limit, "{n:?}");
                }
                seen += 1;
            }
            assert_eq!(seen, active + lame);
        }
        thread::yield_now();
    }
    report
}

/// Runs one stress test and checks conservation exactly; returns the totals for scenario checks.
fn run(spec: Spec, seed: u64) -> (Tally, ChurnReport) {
    let b = Balancer::with_capacity(CAPACITY, spec.config).unwrap();
    let initial: Vec<u64> = (1..=10).collect();
    for &id in &initial {
        b.add(id).unwrap();
    }
    let n = workers();
    let per_worker = PAIRS.div_ceil(n as u64);
    let done = AtomicBool::new(false);
    let churn_steps = AtomicU64::new(0);
    let started = std::time::Instant::now();
    let (reports, churn) = thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|t| {
                let (b, spec, steps) = (&b, &spec, &churn_steps);
                s.spawn(move || worker(b, spec, seed, t, per_worker, steps))
            })
            .collect();
        let churner = s.spawn(|| churn(&b, &spec, seed, &initial, &done, &churn_steps));
        let reports: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        // Stop the membership thread before propagating a worker's panic, or the scope never ends.
        done.store(true, Ordering::Release);
        let churn = churner.join();
        let reports: Vec<WorkerReport> = reports
            .into_iter()
            .map(|r| r.unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect();
        (
            reports,
            churn.unwrap_or_else(|e| std::panic::resume_unwind(e)),
        )
    });
    let mut tally = Tally::default();
    for r in &reports {
        tally.merge(&r.tally);
    }
    let now = reports.iter().map(|r| r.now).max().unwrap_or(0);
    assert!(tally.releases() >= PAIRS, "{tally:?}");
    assert_conserved(&b, &tally, now);
    if spec.churn == Churn::LameDuckOnly {
        // No node ever left, and the window is wide enough to hold every outcome: its totals must be
        // exactly the outcomes reported on it.
        for node in b.nodes(now) {
            let mut want = [0u64; 2];
            for r in &reports {
                want[0] += r.health[node.id as usize][0];
                want[1] += r.health[node.id as usize][1];
            }
            assert_eq!(
                [node.window_finished, node.window_succeeded],
                want,
                "window totals of node {}: {node:?}",
                node.id
            );
        }
    }
    eprintln!(
        "stress {:?}/{:?}: {n} workers, {:.2?}: {tally:?} {churn:?}",
        spec.config.algorithm,
        spec.config.limit,
        started.elapsed()
    );
    (tally, churn)
}

/// The scenario did exercise every membership answer.
fn assert_full_churn(tally: &Tally, churn: &ChurnReport) {
    assert!(
        churn.added > 0 && churn.removed > 0 && churn.lame_ducked > 0,
        "{churn:?}"
    );
    assert!(churn.duplicate > 0 && churn.unknown > 0, "{churn:?}");
    assert!(
        churn.capacity_full > 0,
        "never found the balancer full: {churn:?}"
    );
    assert!(tally.stale > 0, "no lease outlived its node: {tally:?}");
    for (k, &r) in tally.released.iter().enumerate() {
        assert!(r > 0, "outcome {k} never released: {tally:?}");
    }
}

static SEED: AtomicU64 = AtomicU64::new(0x5EED_0001);

fn seed() -> u64 {
    // Different seeds per test, the same on every run.
    SEED.fetch_add(0x1_0000, Ordering::Relaxed)
}

#[test]
fn conserves_counters_under_churn_default_config() {
    let (tally, churn) = run(Spec::new(Config::cascade()), seed());
    assert_full_churn(&tally, &churn);
    assert!(churn.all_lame_phases > 0);
}

#[test]
fn conserves_counters_under_churn_new_default() {
    // `Config::default()`: decayed health, lowest score with its give-up rule, CIAD with a fast start.
    let spec = Spec {
        max_held: 6,
        ..Spec::new(Config::default())
    };
    let (tally, churn) = run(spec, seed());
    assert_full_churn(&tally, &churn);
    assert!(churn.all_lame_phases > 0);
}

#[test]
fn conserves_counters_with_fixed_limit_two() {
    let config = Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit: 2 }),
        ..weighted(Weighted {
            health: WeightedHealth::Buckets(BucketHealth {
                count: 4,
                width_ns: 2 * MS,
                decay: 2.0,
            }),
            ..Weighted::CASCADE
        })
    };
    let spec = Spec {
        max_held: 12,
        ..Spec::new(config)
    };
    let (tally, churn) = run(spec, seed());
    assert_full_churn(&tally, &churn);
    assert!(
        tally.rejected_all_busy > tally.acquired / 100,
        "the scenario should run into AllBusy often: {tally:?}"
    );
}

#[test]
fn conserves_counters_with_aimd_limit() {
    let config = Config {
        limit: LimitAlgorithm::Aimd(AimdLimit {
            initial_limit: 4,
            min_limit: 1,
            max_limit: 8,
            backoff_ratio: 0.5,
            // Releases come 50-600 µs after their acquire: the slow ones count as drops.
            timeout_ns: 300_000,
        }),
        ..weighted(Weighted {
            health: WeightedHealth::Buckets(BucketHealth {
                count: 6,
                width_ns: 10 * MS,
                decay: 3.0,
            }),
            ..Weighted::CASCADE
        })
    };
    let spec = Spec {
        max_held: 8,
        ..Spec::new(config)
    };
    let (tally, churn) = run(spec, seed());
    assert_full_churn(&tally, &churn);
    assert!(tally.rejected_all_busy > 0, "{tally:?}");
}

#[test]
fn conserves_counters_with_cascade_approx_and_ewma() {
    let config = weighted(Weighted {
        health: WeightedHealth::Ewma(EwmaHealth { half_life: 20 }),
        draw: Draw::CascadeApprox,
        ..Weighted::CASCADE
    });
    let (tally, churn) = run(Spec::new(config), seed());
    assert_full_churn(&tally, &churn);
}

#[test]
fn conserves_counters_with_weighted_pick() {
    let config = Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit: 3 }),
        ..weighted(Weighted {
            health: WeightedHealth::Buckets(BucketHealth {
                count: 3,
                width_ns: MS,
                decay: 1.5,
            }),
            draw: Draw::WeightedPick,
            ..Weighted::CASCADE
        })
    };
    let spec = Spec {
        max_held: 6,
        ..Spec::new(config)
    };
    let (tally, churn) = run(spec, seed());
    assert_full_churn(&tally, &churn);
}

#[test]
fn window_totals_equal_outcomes_under_concurrent_rotation() {
    // 8 buckets of 30 s: each worker's clock covers ~100 s / workers, so the window rotates while workers
    // race on it, but no outcome ever leaves it.
    let config = weighted(Weighted {
        health: WeightedHealth::Buckets(BucketHealth {
            count: 8,
            width_ns: 30_000 * MS,
            decay: 3.0,
        }),
        ..Weighted::CASCADE
    });
    let spec = Spec {
        churn: Churn::LameDuckOnly,
        ..Spec::new(config)
    };
    let (tally, churn) = run(spec, seed());
    assert_eq!(tally.stale, 0);
    assert!(churn.lame_ducked > 0 && churn.duplicate > 0 && churn.unknown > 0);
}

/// The conservation check itself, on one acquire/release pair: the callers' tally and the balancer's
/// counters agree.
#[test]
fn one_pair_is_conserved() {
    let b = Balancer::with_capacity(4, Config::cascade()).unwrap();
    b.add(7).unwrap();
    let mut rng = Rng::with_seed(1);
    let mut tally = Tally::default();
    let lease = tally.acquired(b.acquire(10, &mut rng)).unwrap();
    tally
        .released(
            Outcome::Success,
            lease.node_id(),
            b.release(lease, Outcome::Success, 20),
        )
        .unwrap();
    assert_conserved(&b, &tally, 20);
}
