//! The workload every hot-path benchmark runs: one *pair* is one acquire and one release, with a window
//! of [`OUTSTANDING`] leases in flight, virtual time advancing, mixed outcomes and nodes whose weights
//! differ.
//!
//! - **Window**: a ring of [`OUTSTANDING`] leases. Each pair acquires one lease and releases the oldest,
//!   so every node sees real in-flight counts and every limiter real RTTs (release time minus acquire
//!   time, from the virtual clock: about 8 ms).
//! - **Time**: each pair advances the virtual clock by a scripted step of 0.5 to 1.5 ms (1 ms on
//!   average), so 5 s buckets rotate every ~5,000 pairs and RTTs vary.
//! - **Outcomes**: node `i` fails with probability [`FAIL_RATES`]`[i % 5]` (30 %, 5 %, 1 %, 1 %, 0 %);
//!   half of its failures are `Dropped` (timeouts: the limiters back off), half `Failure`. So the nodes'
//!   success rates, and their weights (`rate³`: 0.34, 0.86, 0.97, 0.97, 1.0), differ.
//! - **Determinism**: the steps and outcome rolls come from a seeded script of [`SCRIPT_LEN`] entries
//!   computed once, so a pair spends its time in the balancer, not in the workload's own random draws;
//!   the balancer's draws come from its own seeded generator.
//!
//! Setup asserts that every lease is granted: a pair panics if an acquire is refused (a benchmark of
//! refusals would measure the wrong thing). Under the cascade's fixed limit of 100 a refusal would be a
//! bug; the new default's CIAD limit starts at 20 and backs off on timeouts, and the lowest-score family
//! may give up on a node much worse than a full one, so there the tests below check that the workload,
//! as benchmarked, is never refused. [`Driver::floor`] is the workload alone, without a balancer: the
//! harness cost included in every pair.
//!
//! The workload reports `Success`, `Failure` and `Dropped` only, as it did before the outcomes
//! `Throttled` and `ClientError` existed, so that the cascade's figures stay comparable across runs.
//!
//! How the two configurations meet it: the cascade's weighted draw spreads calls by weight, so every
//! node, failing ones included, keeps getting calls; the new default's lowest score sends each call to
//! the node with room whose `in_flight + penalty` is lowest, so once a node has failed (a penalty of 10
//! per recent failure, fading with a 30 s half-life) the clean nodes (every fifth) take nearly every
//! call, and most releases are successes on nodes without failures.
//!
//! ```
//! use weir_benches::{Workload, WeirLoad};
//! for config in [weir::Config::default(), weir::Config::cascade()] {
//!     let mut w = WeirLoad::new(16, config);
//!     for _ in 0..1_000 {
//!         w.pair();
//!     }
//!     assert_eq!(w.balancer().stats().in_flight, 8);
//! }
//! ```

use crate::MutexBalancer;
use fastrand::Rng;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use weir::{Balancer, Config, HeapBalancer, Lease, Outcome};

/// Leases held at once by one workload (one thread).
pub const OUTSTANDING: usize = 8;
/// Entries in the precomputed script of time steps and outcome rolls (a power of two).
pub const SCRIPT_LEN: usize = 4096;
/// Failure probability of node `i` is `FAIL_RATES[i % 5]`.
pub const FAIL_RATES: [f64; 5] = [0.30, 0.05, 0.01, 0.01, 0.0];
/// Shortest and longest virtual-time step per pair, in nanoseconds.
pub const STEP_NS: (u64, u64) = (500_000, 1_500_000);
/// Rolls are drawn in `0..ROLL_SCALE`.
const ROLL_SCALE: u32 = 1 << 20;
/// Pairs between two clock synchronisations of workloads that share a balancer.
const SYNC_EVERY: u64 = 256;

/// One iteration of a benchmark: an acquire + release pair.
pub trait Workload {
    /// Runs one acquire + release pair.
    fn pair(&mut self);
}

/// Time steps and outcome rolls, computed once from a seed.
#[derive(Debug)]
struct Script {
    steps: Box<[u64; SCRIPT_LEN]>,
    rolls: Box<[u32; SCRIPT_LEN]>,
}

impl Script {
    fn new(seed: u64) -> Self {
        let mut rng = Rng::with_seed(seed);
        let mut steps = Box::new([0; SCRIPT_LEN]);
        let mut rolls = Box::new([0; SCRIPT_LEN]);
        for (s, r) in steps.iter_mut().zip(rolls.iter_mut()) {
            *s = rng.u64(STEP_NS.0..STEP_NS.1);
            *r = rng.u32(..ROLL_SCALE);
        }
        Script { steps, rolls }
    }
}

/// The workload's clock, outcome script and failure profile: everything but the balancer.
#[derive(Debug)]
pub struct Driver {
    now: u64,
    k: usize,
    pairs: u64,
    script: Script,
    /// Per node: a roll below `dropped[i]` is `Dropped`, below `failed[i]` is `Failure`.
    dropped: Box<[u32]>,
    failed: Box<[u32]>,
    /// The clock shared by the workloads of one balancer in the multi-thread benchmarks.
    shared: Option<Arc<AtomicU64>>,
}

impl Driver {
    /// A driver for nodes `0..n` whose script comes from `seed`.
    pub fn new(n: usize, seed: u64) -> Self {
        let threshold = |i: usize, share: f64| {
            (FAIL_RATES[i % FAIL_RATES.len()] * share * f64::from(ROLL_SCALE)) as u32
        };
        Driver {
            now: 1,
            k: 0,
            pairs: 0,
            script: Script::new(seed),
            dropped: (0..n).map(|i| threshold(i, 0.5)).collect(),
            failed: (0..n).map(|i| threshold(i, 1.0)).collect(),
            shared: None,
        }
    }

    /// Makes this driver keep its clock within [`SYNC_EVERY`] pairs of the other drivers sharing `clock`:
    /// every [`SYNC_EVERY`] pairs it moves to the latest time any of them has reached. Without this the
    /// threads' virtual clocks would drift apart and fight over the balancer's bucket epoch.
    pub fn share_clock(&mut self, clock: Arc<AtomicU64>) {
        self.shared = Some(clock);
    }

    /// The current virtual time.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Advances the clock by the next scripted step and returns the new time.
    #[inline]
    pub fn tick(&mut self) -> u64 {
        self.k = (self.k + 1) & (SCRIPT_LEN - 1);
        self.now += self.script.steps[self.k];
        self.pairs += 1;
        if self.pairs % SYNC_EVERY == 0 {
            if let Some(clock) = &self.shared {
                // Relaxed: the value is only a time; no other memory is published through it.
                self.now = self.now.max(clock.fetch_max(self.now, Relaxed));
            }
        }
        self.now
    }

    /// The outcome of the call to `node` that ends at this tick.
    #[inline]
    pub fn outcome(&self, node: usize) -> Outcome {
        let roll = self.script.rolls[self.k];
        match (self.dropped.get(node), self.failed.get(node)) {
            (Some(&d), _) if roll < d => Outcome::Dropped,
            (_, Some(&f)) if roll < f => Outcome::Failure,
            _ => Outcome::Success,
        }
    }

    /// The workload alone: the driver's part of a pair (a tick, an outcome and the ring's bookkeeping)
    /// without a balancer. Returns the outcome so the caller can keep it alive with `black_box`.
    #[inline]
    pub fn floor(&mut self, ring: &mut [usize; OUTSTANDING], next: &mut usize) -> Outcome {
        self.tick();
        let picked = self.k & 15;
        let old = std::mem::replace(&mut ring[*next], picked);
        *next = (*next + 1) % OUTSTANDING;
        self.outcome(old)
    }
}

/// The driver alone, as a [`Workload`]: the harness's own cost per pair.
#[derive(Debug)]
pub struct DriverLoad {
    d: Driver,
    ring: [usize; OUTSTANDING],
    next: usize,
}

impl DriverLoad {
    /// The driver of an `n`-node workload.
    pub fn new(n: usize) -> Self {
        DriverLoad {
            d: Driver::new(n, SEED),
            ring: [0; OUTSTANDING],
            next: 0,
        }
    }
}

impl Workload for DriverLoad {
    #[inline]
    fn pair(&mut self) {
        std::hint::black_box(self.d.floor(&mut self.ring, &mut self.next));
    }
}

/// The script seed of the first workload on a balancer; further threads use `SEED + thread`.
pub const SEED: u64 = 0x5EED_0001;

/// weir over nodes `0..n`.
#[derive(Debug)]
pub struct WeirLoad {
    balancer: Arc<HeapBalancer>,
    ring: [Option<Lease>; OUTSTANDING],
    next: usize,
    rng: Rng,
    d: Driver,
}

impl WeirLoad {
    /// A balancer with `config` over nodes `0..n`, and its workload with [`OUTSTANDING`] leases out.
    ///
    /// # Panics
    /// If `config` is invalid or an acquire is refused.
    pub fn new(n: usize, config: Config) -> Self {
        let balancer = Balancer::with_capacity(n, config).expect("a valid benchmark config");
        for id in 0..n as u64 {
            balancer.add(id).expect("capacity for every node");
        }
        Self::on(Arc::new(balancer), 0)
    }

    /// [`WeirLoad::new`] with `n` members in a balancer of `capacity` slots: what a large capacity costs
    /// when few of its slots are used (the members take the lowest slots).
    ///
    /// # Panics
    /// If `config` is invalid, `n > capacity`, or an acquire is refused.
    pub fn sparse(n: usize, capacity: usize, config: Config) -> Self {
        let balancer = Balancer::with_capacity(capacity, config).expect("a valid benchmark config");
        for id in 0..n as u64 {
            balancer.add(id).expect("capacity for every node");
        }
        Self::on(Arc::new(balancer), 0)
    }

    /// Another workload (thread number `thread`) on a shared balancer over its members, nodes `0..n`.
    ///
    /// # Panics
    /// If an acquire is refused.
    pub fn on(balancer: Arc<HeapBalancer>, thread: u64) -> Self {
        let n = balancer.stats().active_nodes as usize;
        let mut load = WeirLoad {
            balancer,
            ring: [const { None }; OUTSTANDING],
            next: 0,
            rng: Rng::with_seed(SEED ^ (thread << 32)),
            d: Driver::new(n, SEED + thread),
        };
        for slot in 0..OUTSTANDING {
            let now = load.d.tick();
            load.ring[slot] = Some(load.acquire(now));
        }
        load
    }

    /// The balancer under load.
    pub fn balancer(&self) -> &Arc<HeapBalancer> {
        &self.balancer
    }

    /// The workload's driver (for sharing its clock).
    pub fn driver_mut(&mut self) -> &mut Driver {
        &mut self.d
    }

    #[inline]
    fn acquire(&mut self, now: u64) -> Lease {
        match self.balancer.acquire(now, &mut self.rng) {
            Ok(lease) => lease,
            Err(e) => panic!(
                "weir refused an acquire ({e:?}) with {OUTSTANDING} leases outstanding per thread: \
                 the benchmark must measure grants"
            ),
        }
    }

    /// Releases every outstanding lease as a success (the end of a run: nothing is left in flight).
    pub fn drain(&mut self) {
        let now = self.d.tick();
        for lease in self.ring.iter_mut().filter_map(Option::take) {
            self.balancer
                .release(lease, Outcome::Success, now)
                .expect("weir rejected a valid release");
        }
    }
}

impl Workload for WeirLoad {
    #[inline]
    fn pair(&mut self) {
        let now = self.d.tick();
        let lease = self.acquire(now);
        let Some(old) = self.ring[self.next].replace(lease) else {
            panic!("the ring of leases is always full");
        };
        self.next = (self.next + 1) % OUTSTANDING;
        let outcome = self.d.outcome(old.node_id() as usize);
        if let Err(e) = self.balancer.release(old, outcome, now) {
            panic!("weir rejected a valid release: {e:?}");
        }
    }
}

/// The [`MutexBalancer`] baseline over nodes `0..n`.
#[derive(Debug)]
pub struct MutexLoad {
    balancer: Arc<MutexBalancer>,
    ring: [usize; OUTSTANDING],
    next: usize,
    rng: Rng,
    d: Driver,
}

impl MutexLoad {
    /// A baseline balancer over nodes `0..n` and its workload with [`OUTSTANDING`] calls out.
    ///
    /// # Panics
    /// If an acquire is refused.
    pub fn new(n: usize) -> Self {
        Self::on(Arc::new(MutexBalancer::new(n)), n, 0)
    }

    /// Another workload (thread number `thread`) on a shared baseline over nodes `0..n`.
    ///
    /// # Panics
    /// If an acquire is refused.
    pub fn on(balancer: Arc<MutexBalancer>, n: usize, thread: u64) -> Self {
        let mut load = MutexLoad {
            balancer,
            ring: [0; OUTSTANDING],
            next: 0,
            rng: Rng::with_seed(SEED ^ (thread << 32)),
            d: Driver::new(n, SEED + thread),
        };
        for slot in 0..OUTSTANDING {
            let now = load.d.tick();
            load.ring[slot] = load.acquire(now);
        }
        load
    }

    /// The balancer under load.
    pub fn balancer(&self) -> &Arc<MutexBalancer> {
        &self.balancer
    }

    /// The workload's driver (for sharing its clock).
    pub fn driver_mut(&mut self) -> &mut Driver {
        &mut self.d
    }

    #[inline]
    fn acquire(&mut self, now: u64) -> usize {
        match self.balancer.acquire(now, &mut self.rng) {
            Some((node, _)) => node,
            None => panic!(
                "the Mutex baseline refused an acquire with {OUTSTANDING} calls outstanding per thread"
            ),
        }
    }
}

impl Workload for MutexLoad {
    #[inline]
    fn pair(&mut self) {
        let now = self.d.tick();
        let node = self.acquire(now);
        let old = std::mem::replace(&mut self.ring[self.next], node);
        self.next = (self.next + 1) % OUTSTANDING;
        let success = self.d.outcome(old) == Outcome::Success;
        self.balancer.release(old, success, now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_follow_the_failure_profile() {
        let mut d = Driver::new(5, SEED);
        let mut counts = [[0u32; 3]; 5];
        for _ in 0..SCRIPT_LEN * 10 {
            d.tick();
            for (node, c) in counts.iter_mut().enumerate() {
                c[d.outcome(node) as usize] += 1;
            }
        }
        let total = (SCRIPT_LEN * 10) as f64;
        for (node, c) in counts.iter().enumerate() {
            let failed = f64::from(c[1] + c[2]) / total;
            assert!(
                (failed - FAIL_RATES[node]).abs() < 0.02,
                "node {node}: {c:?}"
            );
        }
        // Node 0 both fails and drops; node 4 never fails.
        assert!(counts[0][1] > 1_000 && counts[0][2] > 1_000);
        assert_eq!(counts[4][0], SCRIPT_LEN as u32 * 10);
    }

    #[test]
    fn time_advances_by_the_scripted_steps() {
        let mut d = Driver::new(3, SEED);
        let start = d.now();
        for _ in 0..SCRIPT_LEN {
            d.tick();
        }
        let mean = (d.now() - start) / SCRIPT_LEN as u64;
        assert!((950_000..1_050_000).contains(&mean), "mean step {mean} ns");
    }

    #[test]
    fn shared_clocks_stay_together() {
        let clock = Arc::new(AtomicU64::new(0));
        let (mut fast, mut slow) = (Driver::new(3, 1), Driver::new(3, 2));
        fast.share_clock(clock.clone());
        slow.share_clock(clock);
        for _ in 0..10 {
            for _ in 0..3 * SYNC_EVERY {
                fast.tick();
            }
            for _ in 0..SYNC_EVERY {
                slow.tick();
            }
            // The slow driver jumps to the fast one's time at its synchronisation point (the fast one
            // published its time at its own last tick, a multiple of SYNC_EVERY).
            assert!(slow.now() >= fast.now(), "{} < {}", slow.now(), fast.now());
        }
    }

    /// Runs `pairs` pairs of `config` over `n` nodes, drains, and checks that nothing was refused and
    /// that the counters are conserved exactly; returns the workload.
    fn run_clean(n: usize, config: Config, pairs: u64, what: &str) -> WeirLoad {
        let mut w = WeirLoad::new(n, config);
        for _ in 0..pairs {
            w.pair();
        }
        w.drain();
        let st = w.balancer().stats();
        assert_eq!(st.in_flight, 0, "{what}");
        assert_eq!(st.acquired, pairs + OUTSTANDING as u64, "{what}");
        assert_eq!(st.released_total(), st.acquired, "{what}");
        assert_eq!(st.rejected_all_busy + st.rejected_no_active, 0, "{what}");
        w
    }

    /// Every configuration of the weighted family the benchmarks run (each draw and success-rate model,
    /// each limiter): no refusal (a pair would panic), weights differ, and afterwards the counters are
    /// conserved exactly.
    #[test]
    fn every_weighted_config_runs_without_refusals() {
        for (dn, draw) in crate::DRAWS {
            for (hn, health) in crate::HEALTHS {
                for (name, limit) in crate::limiters() {
                    let what = format!("{dn}-{hn} {name}");
                    let config = crate::with_limit(crate::config(draw, health), limit);
                    let w = run_clean(16, config, 20_000, &what);
                    let now = w.d.now();
                    let weights: Vec<f64> = w.balancer().nodes(now).map(|n| n.weight).collect();
                    assert!(weights[0] < 0.6 && weights[4] > 0.9, "{what}: {weights:?}");
                    assert!(
                        w.balancer().stats().released(Outcome::Dropped) > 100,
                        "{what}"
                    );
                }
            }
        }
    }

    /// The new default, with each limiter and at every benchmarked node count (its CIAD limit can fall
    /// to 1 on a failing node, and the lowest score concentrates calls): never refused. Failing nodes
    /// carry a penalty, clean ones none.
    ///
    /// Except the knee limit over 3 nodes, which the benchmarks never run (`limiter/default-knee` is
    /// benchmarked over 16): it starts at 20, but the workload's drops cut each node to 0.9 of its
    /// calls in flight and arm its knee, and within the first hundred pairs the three limits come to 8
    /// in all (1, 5 and 2 at the 105th acquire), less than the window's 8 leases plus the one being
    /// acquired. That is the limiter doing what it says, not a benchmark bug.
    #[test]
    fn every_default_config_runs_without_refusals() {
        let mut configs = vec![
            ("default".to_string(), Config::default()),
            ("default-fixed".to_string(), crate::default_fixed()),
        ];
        for (name, limit) in crate::limiters() {
            configs.push((
                format!("default-{name}"),
                crate::with_limit(Config::default(), limit),
            ));
        }
        for (name, config) in configs {
            for n in crate::NODE_COUNTS {
                if name == "default-knee" && n == 3 {
                    continue;
                }
                let what = format!("{name} over {n} nodes");
                let w = run_clean(n, config, 20_000, &what);
                let st = w.balancer().stats();
                assert!(st.released(Outcome::Failure) > 0, "{what}");
                assert!(st.released(Outcome::Dropped) > 0, "{what}");
                let now = w.d.now();
                let penalties: Vec<f64> = w.balancer().nodes(now).map(|s| s.penalty).collect();
                // Node 4 (and every fifth) never fails.
                assert!(
                    penalties[0] > 0.0 && penalties.get(4).is_none_or(|&p| p == 0.0),
                    "{what}: {penalties:?}"
                );
            }
        }
        // The sparse workload, as benchmarked.
        let mut w = WeirLoad::sparse(3, crate::SPARSE_CAPACITY, Config::default());
        for _ in 0..20_000 {
            w.pair();
        }
        assert_eq!(w.balancer().stats().rejected_all_busy, 0);
    }

    #[test]
    fn mutex_workload_keeps_its_window() {
        let mut w = MutexLoad::new(16);
        for _ in 0..20_000 {
            w.pair();
        }
        let now = w.d.now();
        // The failing node 0 learned its rate; node 4 never fails.
        assert!((w.balancer().success_rate(0, now) - 0.7).abs() < 0.1);
        assert_eq!(w.balancer().success_rate(4, now), 1.0);
    }
}
