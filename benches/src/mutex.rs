//! The `Mutex<Vec<..>>` baseline.
//!
//! [`MutexBalancer`] is the algorithm of [the cascade](weir::Config::cascade) written the plain
//! way: every node's state in one `std::sync::Mutex<Vec<Node>>`, buckets rotated eagerly whenever a node
//! is touched, and every node's success rate and weight recomputed from its buckets on every acquire. It
//! makes the same decisions as [`weir::Balancer`] with [`weir::Config::cascade()`] (the unit tests below
//! check this against weir itself), so against the cascade's pair the benchmarks compare implementations,
//! not algorithms (against the new default, [`weir::Config::default()`], they compare both):
//!
//! - health: per node a window of [`BUCKET_COUNT`] buckets of [`BUCKET_WIDTH_NS`] each holding
//!   `(finished, succeeded)`, plus a sticky bucket that keeps the last bucket that left the window with data;
//! - success rate: `Σ 3^-age · succeeded / Σ 3^-age · finished` over the window (age 0 = the bucket of `now`);
//!   with an empty window but a sticky bucket, its rate floored at `0.0001 / active nodes`; with no data, 1.0;
//! - weight: `rate³`;
//! - selection: one weighted random pick among the nodes with `in_flight <` [`LIMIT`]; if none of them has a
//!   positive weight, a uniform pick among the zero-weight ones; if none has room, a refusal.
//!
//! ```
//! use weir_benches::MutexBalancer;
//! let balancer = MutexBalancer::new(3);
//! let mut rng = fastrand::Rng::with_seed(1);
//! let (node, in_flight) = balancer.acquire(1_000, &mut rng).unwrap();
//! assert!(node < 3 && in_flight == 1);
//! balancer.release(node, true, 2_000);
//! ```

use fastrand::Rng;
use std::sync::{Mutex, PoisonError};

/// Buckets in a node's window (the cascade's: 6).
pub const BUCKET_COUNT: usize = 6;
/// Width of one bucket in nanoseconds (the cascade's: 5 s).
pub const BUCKET_WIDTH_NS: u64 = 5_000_000_000;
/// Fixed per-node concurrency limit (the cascade's: 100).
pub const LIMIT: u32 = 100;
/// Recovery floor, divided by the number of active nodes (the cascade's: 0.0001).
pub const FLOOR: f64 = 0.0001;
/// Bucket weights by age: `3^-age`, newest first.
const AGE_WEIGHTS: [f64; BUCKET_COUNT] = [
    1.0,
    1.0 / 3.0,
    1.0 / 9.0,
    1.0 / 27.0,
    1.0 / 81.0,
    1.0 / 243.0,
];

/// Outcomes counted in one bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Bucket {
    finished: u64,
    succeeded: u64,
}

/// One backend node: its bucket window, sticky bucket and in-flight count.
#[derive(Clone, Debug, Default)]
struct Node {
    /// `buckets[age]`: `buckets[0]` is the bucket of epoch `epoch`, `buckets[1]` the one before, ...
    buckets: [Bucket; BUCKET_COUNT],
    /// Epoch (`now / BUCKET_WIDTH_NS`) of `buckets[0]`.
    epoch: u64,
    /// The last bucket that left the window with requests in it.
    sticky: Bucket,
    in_flight: u32,
    /// Scratch for one acquire: this node's weight, or a negative value when it has no room.
    scan: f64,
}

impl Node {
    /// Moves the window forward to the epoch of `now`. A `now` older than the window's is recorded into the
    /// newest bucket (clocks jitter; time never runs backwards here).
    fn rotate(&mut self, now: u64) {
        let epoch = now / BUCKET_WIDTH_NS;
        if epoch <= self.epoch {
            return;
        }
        let steps = (epoch - self.epoch).min(BUCKET_COUNT as u64);
        for _ in 0..steps {
            let oldest = self.buckets[BUCKET_COUNT - 1];
            if oldest.finished > 0 {
                self.sticky = oldest;
            }
            self.buckets.rotate_right(1);
            self.buckets[0] = Bucket::default();
        }
        self.epoch = epoch;
    }

    fn record(&mut self, now: u64, success: bool) {
        self.rotate(now);
        self.buckets[0].finished += 1;
        self.buckets[0].succeeded += u64::from(success);
    }

    /// The success rate at the window's current epoch, with the recovery floor `floor` applied to the sticky
    /// bucket's rate.
    fn success_rate(&self, floor: f64) -> f64 {
        let (mut num, mut den) = (0.0, 0.0);
        for (bucket, weight) in self.buckets.iter().zip(AGE_WEIGHTS) {
            num += weight * bucket.succeeded as f64;
            den += weight * bucket.finished as f64;
        }
        if den > 0.0 {
            num / den
        } else if self.sticky.finished > 0 {
            (self.sticky.succeeded as f64 / self.sticky.finished as f64).max(floor)
        } else {
            1.0
        }
    }
}

/// The weight of a node with this success rate: `rate³`.
fn weight_of(rate: f64) -> f64 {
    rate * rate * rate
}

/// The cascade (bucket health, `rate³` weights, weighted pick among nodes below a fixed limit
/// of 100) over nodes `0..n`, all state behind one mutex.
#[derive(Debug)]
pub struct MutexBalancer {
    nodes: Mutex<Vec<Node>>,
}

impl MutexBalancer {
    /// A balancer over `nodes` nodes, numbered `0..nodes`, all active and without data (fully trusted).
    ///
    /// # Panics
    /// If `nodes` is 0.
    pub fn new(nodes: usize) -> Self {
        assert!(nodes > 0, "a balancer needs at least one node");
        MutexBalancer {
            nodes: Mutex::new(vec![Node::default(); nodes]),
        }
    }

    /// Picks a node for one call at `now` (monotonic nanoseconds) and counts the call in flight there.
    /// Returns the node's index and its in-flight count including this call, or `None` when every node is
    /// at its limit.
    pub fn acquire(&self, now: u64, rng: &mut Rng) -> Option<(usize, u32)> {
        let mut nodes = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        let floor = FLOOR / nodes.len() as f64;
        let mut total = 0.0;
        let mut zero_with_room = 0u32;
        for node in nodes.iter_mut() {
            node.rotate(now);
            if node.in_flight < LIMIT {
                let weight = weight_of(node.success_rate(floor));
                node.scan = weight;
                total += weight;
                if weight == 0.0 {
                    zero_with_room += 1;
                }
            } else {
                node.scan = -1.0;
            }
        }
        let picked = if total > 0.0 {
            let target = rng.f64() * total;
            let mut acc = 0.0;
            let mut last = None;
            for (i, node) in nodes.iter().enumerate() {
                if node.scan > 0.0 {
                    acc += node.scan;
                    last = Some(i);
                    if acc > target {
                        break;
                    }
                }
            }
            last
        } else if zero_with_room > 0 {
            let k = rng.u32(..zero_with_room) as usize;
            nodes
                .iter()
                .enumerate()
                .filter(|(_, node)| node.scan == 0.0)
                .nth(k)
                .map(|(i, _)| i)
        } else {
            None
        }?;
        let node = &mut nodes[picked];
        node.in_flight += 1;
        Some((picked, node.in_flight))
    }

    /// Reports the outcome of a call to node `index` that ended at `now`, and ends it.
    ///
    /// # Panics
    /// If `index` is not a node or the node has no call in flight.
    pub fn release(&self, index: usize, success: bool, now: u64) {
        let mut nodes = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        let node = &mut nodes[index];
        assert!(node.in_flight > 0, "release without an acquire");
        node.record(now, success);
        node.in_flight -= 1;
    }

    /// Bytes this balancer occupies: the struct itself plus its vector of nodes (the only allocation).
    ///
    /// ```
    /// let b = weir_benches::MutexBalancer::new(64);
    /// assert!(b.memory_bytes() > 64 * 100);
    /// ```
    pub fn memory_bytes(&self) -> usize {
        let nodes = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::size_of::<Self>() + nodes.capacity() * std::mem::size_of::<Node>()
    }

    /// Node `index`'s success rate at `now`, with the recovery floor applied, as an acquire at `now` would
    /// see it. Read-only: the node's window is not moved.
    ///
    /// # Panics
    /// If `index` is not a node.
    pub fn success_rate(&self, index: usize, now: u64) -> f64 {
        let nodes = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        let floor = FLOOR / nodes.len() as f64;
        let mut node = nodes[index].clone();
        node.rotate(now);
        node.success_rate(floor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weir::{Balancer, Config, Outcome};

    const W: u64 = BUCKET_WIDTH_NS;

    #[test]
    fn failing_node_gets_few_picks() {
        let b = MutexBalancer::new(4);
        let mut rng = Rng::with_seed(7);
        let mut picks = [0u32; 4];
        for k in 0..40_000u64 {
            let now = k * 1_000_000;
            let (i, _) = b.acquire(now, &mut rng).unwrap();
            picks[i] += 1;
            // Node 0 fails every other call of its own: rate 0.5, weight 0.125 against 1.0 for the others.
            b.release(i, i != 0 || picks[0] % 2 == 1, now);
        }
        let share = f64::from(picks[0]) / 40_000.0;
        assert!(
            (0.02..0.08).contains(&share),
            "failing node got {share} of the picks: {picks:?}"
        );
        assert!((b.success_rate(0, 40_000_000_000) - 0.5).abs() < 0.05);
    }

    #[test]
    fn full_nodes_are_skipped_and_refused() {
        let b = MutexBalancer::new(2);
        let mut rng = Rng::with_seed(1);
        for _ in 0..2 * LIMIT {
            b.acquire(0, &mut rng).unwrap();
        }
        assert_eq!(b.acquire(0, &mut rng), None);
        b.release(1, false, 0);
        assert_eq!(b.acquire(0, &mut rng), Some((1, LIMIT)));
    }

    #[test]
    fn zero_weight_nodes_are_picked_uniformly_when_no_other() {
        let b = MutexBalancer::new(2);
        let mut rng = Rng::with_seed(3);
        {
            let mut nodes = b.nodes.lock().unwrap();
            for node in nodes.iter_mut() {
                node.record(0, false);
            }
        }
        let mut picks = [0u32; 2];
        for _ in 0..1_000 {
            let (i, _) = b.acquire(0, &mut rng).unwrap();
            picks[i] += 1;
            b.nodes.lock().unwrap()[i].in_flight -= 1;
        }
        assert!(picks.iter().all(|&p| p > 400), "{picks:?}");
    }

    /// A lease on node `id` of `weir` (nodes `0..n`): the others are lame ducks for the one acquire, so
    /// the choice is forced whatever the weights, and the active count (behind the floor) is restored.
    fn lease_on(weir: &weir::HeapBalancer, id: u64, now: u64, rng: &mut Rng) -> weir::Lease {
        let others = || (0..weir.capacity() as u64).filter(move |&o| o != id);
        for o in others() {
            weir.set_lame_duck(o, true).unwrap();
        }
        let lease = weir.acquire(now, rng).unwrap();
        for o in others() {
            weir.set_lame_duck(o, false).unwrap();
        }
        assert_eq!(lease.node_id(), id);
        lease
    }

    /// Drives weir (`Config::cascade()`) and the baseline through the same outcomes on the same nodes at the same
    /// times; their success rates agree at every step, through bucket rotation, the sticky bucket and its
    /// floor, and a `now` from the past.
    #[test]
    fn success_rates_match_weir() {
        const N: usize = 3;
        let weir = Balancer::with_capacity(N, Config::cascade()).unwrap();
        for id in 0..N as u64 {
            weir.add(id).unwrap();
        }
        let base = MutexBalancer::new(N);
        let mut rng = Rng::with_seed(11);
        let mut script = Rng::with_seed(12);
        let mut now = 0u64;
        for step in 0..3_000u32 {
            // Mostly small steps, sometimes a long gap (the window empties and the sticky bucket rules),
            // sometimes a `now` from the past.
            now = match script.u32(..100) {
                0 => now + script.u64(6 * W..20 * W),
                1 => now.saturating_sub(script.u64(..2 * W)),
                _ => now + script.u64(..W / 2),
            };
            let target = script.usize(..N);
            let success = script.f64() < [0.9, 0.4, 0.0][target];
            let lease = lease_on(&weir, target as u64, now, &mut rng);
            let outcome = if success {
                Outcome::Success
            } else {
                Outcome::Failure
            };
            weir.release(lease, outcome, now).unwrap();
            {
                let mut nodes = base.nodes.lock().unwrap();
                nodes[target].in_flight += 1;
            }
            base.release(target, success, now);
            let probe = now + script.u64(..8 * W);
            for (i, snap) in weir.nodes(probe).enumerate() {
                let ours = base.success_rate(i, probe);
                assert!(
                    (snap.success_rate - ours).abs() <= 1e-12,
                    "step {step}, node {i} at {probe}: weir {} vs baseline {ours}",
                    snap.success_rate
                );
            }
        }
    }

    /// With the same history and the same random generator, the baseline picks the same nodes as weir.
    #[test]
    fn decisions_match_weir() {
        const N: usize = 16;
        let weir = Balancer::with_capacity(N, Config::cascade()).unwrap();
        for id in 0..N as u64 {
            weir.add(id).unwrap();
        }
        let base = MutexBalancer::new(N);
        // Node i succeeds i times out of 16 in epoch 0 and 15 - i times in epoch 1 (node 0 and 15: weight 0).
        for i in 0..N {
            let mut nodes = base.nodes.lock().unwrap();
            for k in 0..N {
                nodes[i].record(0, k < i);
            }
            for k in 0..N {
                nodes[i].record(W, k + i < N - 1);
            }
        }
        let mut fill = Rng::with_seed(5);
        for i in 0..N as u64 {
            for (t, ok_count) in [(0, i as usize), (W, N - 1 - i as usize)] {
                for k in 0..N {
                    let lease = lease_on(&weir, i, t, &mut fill);
                    let outcome = if k < ok_count {
                        Outcome::Success
                    } else {
                        Outcome::Failure
                    };
                    weir.release(lease, outcome, t).unwrap();
                }
            }
        }
        let (mut rw, mut rb) = (Rng::with_seed(9), Rng::with_seed(9));
        let now = W + 1;
        let mut mismatches = 0;
        for _ in 0..10_000 {
            let lease = weir.acquire(now, &mut rw).unwrap();
            let (i, _) = base.acquire(now, &mut rb).unwrap();
            if lease.node_id() != i as u64 {
                mismatches += 1;
            }
            weir.release(lease, Outcome::Ignored, now).unwrap();
            base.nodes.lock().unwrap()[i].in_flight -= 1;
        }
        // weir caches weights as f32: a draw within ~1e-7 of a boundary may land on the neighbour.
        assert!(mismatches <= 10, "{mismatches} of 10000 decisions differ");
    }
}
