//! Allocation counting: after construction, no hot-path call allocates (DESIGN.md invariant 1). A counting
//! global allocator counts each thread's allocations; every workload below must make exactly zero.

use weir::balance::{
    Algorithm, BucketHealth, Draw, EwmaHealth, LowestScore, Weighted, WeightedHealth,
};
use weir::{
    balance::MembershipError, balance::Rejected, limit::AimdLimit, limit::FixedLimit,
    limit::LimitAlgorithm, Balancer, Config, HeapBalancer, Lease, Outcome, Rng,
};
use weir_alloc_counter::{count, CountingAlloc};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const NODES: u64 = 4;
const PAIRS: u64 = 10_000;
/// More leases held at once than a fixed limit of 1 admits on `NODES` nodes: AllBusy happens.
const HELD: usize = 6;

fn configs() -> Vec<Config> {
    let healths = [
        WeightedHealth::BUCKETS,
        // Narrow buckets: the window rotates every few calls, so advances, clears, the sticky bucket and
        // the cache's slow path all run inside the counted region.
        WeightedHealth::Buckets(BucketHealth {
            count: 3,
            width_ns: 100_000,
            decay: 2.0,
        }),
        WeightedHealth::Ewma(EwmaHealth { half_life: 10 }),
    ];
    let limits = [
        LimitAlgorithm::Fixed(FixedLimit { limit: 1 }),
        LimitAlgorithm::Aimd(AimdLimit {
            initial_limit: 1,
            min_limit: 1,
            max_limit: 3,
            backoff_ratio: 0.5,
            timeout_ns: 100_000,
        }),
    ];
    let mut out = Vec::new();
    for draw in [Draw::Cascade, Draw::CascadeApprox, Draw::WeightedPick] {
        for health in healths {
            for limit in limits {
                out.push(Config {
                    algorithm: Algorithm::Weighted(Weighted {
                        health,
                        draw,
                        weight_exponent: if draw == Draw::CascadeApprox {
                            2.5 // the `pow` path instead of repeated multiplication
                        } else {
                            3.0
                        },
                        ..Weighted::CASCADE
                    }),
                    limit,
                    ..Config::cascade()
                });
            }
        }
    }
    // The default algorithm (the lowest-score family): the default itself, and narrow half-lives (1 ms
    // and 3 ms: the clock's epoch is 250 µs, so rotations recompute every penalty every few calls, and
    // counters fade below 2^-20 and are settled to zero within the counted region), with each kind of
    // limit. The narrow one keeps the default's penalty coefficients and has probation and the slowness
    // term on.
    let LowestScore {
        penalty,
        ratio_penalty,
        ..
    } = LowestScore::DEFAULT;
    let narrow = Algorithm::LowestScore(LowestScore {
        success_half_life_ns: 1_000_000,
        failure_half_life_ns: 3_000_000,
        dropped_cost: 0.75,
        throttled_cost: 0.5,
        client_error_cost: 0.25,
        penalty,
        ratio_penalty,
        // Probation on: probes, timed probes and forgiveness allocate nothing either.
        probe_fraction: 0.05,
        forgiveness: 0.5,
        probe_after_ns: 5_000_000,
        // The slowness term on: the latency estimates and the rotation's reference allocate nothing.
        slow_ratio: 2.0,
    });
    out.push(Config::default());
    for limit in limits.into_iter().chain([Config::default().limit]) {
        for algorithm in [Algorithm::LOWEST_SCORE, narrow] {
            out.push(Config {
                algorithm,
                limit,
                ..Config::default()
            });
        }
    }
    out.push(Config::cascade());
    out
}

/// A `now` 60 days later (more than the 2^31 ticks of 2^20 ns that the decay counters' timestamps
/// tell apart): the rotation forgets every counter. Then a few calls at the new time.
fn leap(b: &HeapBalancer, rng: &mut Rng, now: &mut u64) -> u64 {
    *now += 60 * 86_400 * 1_000_000_000;
    let mut leases = 0;
    for o in Outcome::ALL {
        if let Ok(lease) = b.acquire(*now, rng) {
            leases += 1;
            let _ = b.release(lease, o, *now + 1_000);
        }
    }
    leases
}

/// Acquires and releases `PAIRS` times with every outcome, up to `HELD` leases at once, plus membership
/// changes (with leases outstanding, so releases go stale), refused changes, rejections, and reads.
/// Returns a checksum so that nothing is optimised away and the workload provably did something.
fn workload(b: &HeapBalancer, rng: &mut Rng, now: &mut u64) -> (u64, [u64; 4]) {
    let mut held: [Option<Lease>; HELD] = [const { None }; HELD];
    let mut seen = [0u64; 4]; // leases, rejections, stale releases, snapshot reads
    for i in 0..PAIRS {
        *now += rng.u64(10_000..60_000);
        let k = rng.usize(..HELD);
        match held[k].take() {
            Some(lease) => {
                let outcome = Outcome::ALL[rng.usize(..Outcome::ALL.len())];
                let id = lease.node_id();
                // A node that fails half the time, so weights differ and some reach zero.
                let outcome = if id % 3 == 0 && rng.bool() {
                    Outcome::Failure
                } else {
                    outcome
                };
                if b.release(lease, outcome, *now).is_err() {
                    seen[2] += 1;
                }
            }
            None => match b.acquire(*now, rng) {
                Ok(lease) => {
                    seen[0] += 1;
                    held[k] = Some(lease);
                }
                Err(_) => seen[1] += 1,
            },
        }
        match i % 1000 {
            // Remove a node while it may have leases in flight, then bring it back.
            100 => b.remove(1 + i / 1000 % NODES).unwrap(),
            600 => b.add(1 + i / 1000 % NODES).unwrap(),
            // Lame duck everything for a moment: NoActiveNodes.
            700 => {
                for id in 1..=NODES {
                    b.set_lame_duck(id, true).unwrap();
                }
                assert_eq!(b.acquire(*now, rng).err(), Some(Rejected::NoActiveNodes));
                for id in 1..=NODES {
                    b.set_lame_duck(id, false).unwrap();
                }
            }
            // Refused changes are values too.
            800 => {
                assert_eq!(b.add(1), Err(MembershipError::DuplicateId(1)));
                assert_eq!(b.remove(999), Err(MembershipError::UnknownId(999)));
                assert_eq!(
                    b.set_lame_duck(999, true),
                    Err(MembershipError::UnknownId(999))
                );
            }
            900 => {
                let st = b.stats();
                seen[3] += st.acquired;
                for n in b.nodes(*now) {
                    seen[3] += u64::from(n.in_flight) + n.success_rate.to_bits() % 7;
                }
                if let Some(n) = b.node(2, *now) {
                    seen[3] += n.window_finished;
                }
            }
            _ => {}
        }
    }
    for lease in held.into_iter().flatten() {
        let _ = b.release(lease, Outcome::Success, *now);
    }
    (seen.iter().sum(), seen)
}

fn balancer(config: Config) -> HeapBalancer {
    let b = Balancer::with_capacity(16, config).unwrap();
    for id in 1..=NODES {
        b.add(id).unwrap();
    }
    b
}

#[test]
fn counting_allocator_counts() {
    let (v, n) = count(|| vec![0u8; 64]);
    assert_eq!(
        (v.len(), n),
        (64, 1),
        "the counter must see a Vec allocation"
    );
}

#[test]
fn hot_paths_allocate_nothing_for_every_policy_health_and_limit() {
    for config in configs() {
        let b = balancer(config);
        let mut rng = Rng::with_seed(17);
        let mut now = 1_000_000;
        // Warm up outside the counted region (nothing should need it, but the claim is about steady state).
        workload(&b, &mut rng, &mut now);
        let ((_, seen), n) = count(|| {
            let r = workload(&b, &mut rng, &mut now);
            assert!(leap(&b, &mut rng, &mut now) > 0);
            r
        });
        assert_eq!(n, 0, "{n} allocations in {PAIRS} pairs with {config:?}");
        assert!(
            seen[0] > PAIRS / 10,
            "too few leases: {seen:?} with {config:?}"
        );
        assert!(seen[3] > 0, "{seen:?}");
        let st = b.stats();
        assert_eq!(st.in_flight, 0, "{st:?}");
        assert!(st.released_stale > 0, "no stale release exercised: {st:?}");
        // A fixed limit of 1 on 4 nodes with up to 6 leases held (not the cascade's limit of 100).
        if matches!(config.limit, LimitAlgorithm::Fixed(FixedLimit { limit: 1 })) {
            assert!(st.rejected_all_busy > 0, "no AllBusy exercised: {st:?}");
        }
        assert!(st.rejected_no_active > 0, "{st:?}");
    }
}

#[test]
fn construction_is_the_only_allocation() {
    for config in [Config::cascade(), Config::default()] {
        // `with_capacity` allocates the slots once; `Balancer::new` over a caller's array allocates
        // nothing.
        let (b, n) = count(|| Balancer::with_capacity(4, config).unwrap());
        assert_eq!(n, 1, "with_capacity should allocate the slot array once");
        drop(b);
        let (b, n) = count(|| Balancer::new([const { weir::NodeSlot::new() }; 4], config).unwrap());
        assert_eq!(n, 0);
        let ((), n) = count(|| {
            b.add(1).unwrap();
            let mut rng = Rng::with_seed(1);
            let lease = b.acquire(5, &mut rng).unwrap();
            b.release(lease, Outcome::Dropped, 9).unwrap();
        });
        assert_eq!(n, 0);
    }
}

#[test]
fn lease_guard_allocates_only_on_the_first_call_of_a_thread() {
    for config in [Config::cascade(), Config::default()] {
        lease_guard_case(config);
    }
}

fn lease_guard_case(config: Config) {
    let b = balancer(Config { seed: 99, ..config });
    // The first call may create this thread's generator for seed 99.
    let (r, first) = count(|| b.acquire_guard().map(|g| g.complete(Outcome::Success)));
    assert_eq!(r, Ok(Ok(())));
    assert!(first <= 1, "{first} allocations for the first guard");
    let (ids, n) = count(|| {
        let mut ids = 0u64;
        for i in 0..PAIRS {
            let g = b.acquire_guard().unwrap();
            ids += g.node_id();
            match i % 3 {
                0 => g.complete(Outcome::Success).unwrap(),
                1 => g.complete(Outcome::Failure).unwrap(),
                _ => drop(g), // released as Ignored
            }
        }
        ids
    });
    assert_eq!(n, 0, "{n} allocations in {PAIRS} guarded calls");
    assert!(ids >= PAIRS);
    let st = b.stats();
    assert_eq!(st.in_flight, 0);
    assert_eq!(st.released(Outcome::Ignored), PAIRS / 3);
}

#[test]
fn keyed_acquires_and_releases_allocate_nothing() {
    let keyed = weir::rt::Keyed::with_capacity(4, Config::default()).unwrap();
    for port in 80..84u16 {
        keyed.add(format!("10.0.0.1:{port}")).unwrap();
    }
    // The first call may create this thread's generator.
    keyed.acquire().unwrap().complete(Outcome::Success).unwrap();
    let (bytes, n) = count(|| {
        let mut bytes = 0;
        for i in 0..PAIRS {
            let g = keyed.acquire().unwrap();
            bytes += g.key().len();
            match i % 3 {
                0 => g.complete(Outcome::Success).unwrap(),
                1 => g.complete(Outcome::Failure).unwrap(),
                _ => drop(g),
            }
        }
        bytes
    });
    assert_eq!(n, 0, "{n} allocations in {PAIRS} keyed calls");
    assert_eq!(bytes, PAIRS as usize * "10.0.0.1:80".len());
    assert_eq!(keyed.balancer().stats().in_flight, 0);
}

/// A `fmt::Write` into a fixed buffer: what a `no_std` caller writes metrics into.
struct Fixed {
    buf: [u8; 16_384],
    len: usize,
}

impl core::fmt::Write for Fixed {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len + s.len();
        let room = self.buf.get_mut(self.len..end).ok_or(core::fmt::Error)?;
        room.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

#[test]
fn writing_metrics_allocates_nothing() {
    use weir::metrics::{node_id_name, MetricsFormat};
    let b = HeapBalancer::with_capacity(4, Config::default()).unwrap();
    let shedder = weir::Shedder::new(Default::default()).unwrap();
    let throttle = weir::Throttle::new(Default::default()).unwrap();
    let backoff = weir::Backoff::new(Default::default()).unwrap();
    for id in 1..=3 {
        b.add(id).unwrap();
    }
    let lease = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
    b.release(lease, Outcome::Failure, 10).unwrap();
    let mut out = Box::new(Fixed {
        buf: [0; 16_384],
        len: 0,
    });
    let format = MetricsFormat {
        prefix: "weir",
        labels: &[("service", "a \"b\"\n")],
    };
    let (r, n) = count(|| {
        b.write_metrics(&mut *out, &format, &node_id_name, 20)?;
        shedder.write_metrics(&mut *out, &format, 500, 20)?;
        throttle.write_metrics(&mut *out, &format, 20)?;
        backoff.write_metrics(&mut *out, &format, 20)
    });
    assert_eq!((r, n), (Ok(()), 0));
    let text = core::str::from_utf8(&out.buf[..out.len]).unwrap();
    assert!(
        text.contains("weir_released_total{service=\"a \\\"b\\\"\\n\",outcome=\"failure\"} 1\n")
    );
    assert!(text.ends_with("weir_backoff_sleep_seconds_total{service=\"a \\\"b\\\"\\n\"} 0.0\n"));
}
