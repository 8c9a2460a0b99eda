//! Virtual-time load for the default's scenario tests: requests at a fixed spacing, each released when
//! its call ends, every pick recorded.

use weir::{Balancer, Config, HeapBalancer, Outcome, Rng};

const SEC: u64 = 1_000_000_000;

/// What happens to one call: released `after` ns after its acquire with `outcome`, or never (`None`: a
/// black hole, the lease stays in flight).
pub type Call = Option<(u64, Outcome)>;

/// Virtual-time load with calls in flight at once: one request every `every` ns; each lease is released
/// when its call ends (releases due at or before an acquire's time go first, in time order, each dated at
/// its own end).
pub struct Load {
    pub b: HeapBalancer,
    pub rng: Rng,
    pub now: u64,
    /// Calls in flight: (end, sequence, lease, outcome).
    pub pending: Vec<(u64, u64, weir::Lease, Outcome)>,
    pub seq: u64,
    /// Black-holed leases, never released.
    pub lost: Vec<weir::Lease>,
    /// Every pick: (acquire time, node id, in flight on that node at admission).
    pub picks: Vec<(u64, u64, u32)>,
    /// Acquires refused by [`run_until_refusing`](Self::run_until_refusing).
    pub refused: u64,
}

impl Load {
    pub fn new(ids: &[u64], config: Config, seed: u64) -> Load {
        let b = Balancer::with_capacity(8, config).unwrap();
        for &id in ids {
            b.add(id).unwrap();
        }
        Load {
            b,
            rng: Rng::with_seed(seed),
            now: 0,
            pending: Vec::new(),
            seq: 0,
            lost: Vec::new(),
            picks: Vec::new(),
            refused: 0,
        }
    }

    /// Releases every call that ended at or before `t`, in order.
    pub fn settle(&mut self, t: u64) {
        self.pending.sort_by_key(|p| (p.0, p.1));
        let due = self.pending.partition_point(|p| p.0 <= t);
        for (end, _, lease, outcome) in self.pending.drain(..due) {
            self.b.release(lease, outcome, end).unwrap();
        }
    }

    /// Runs requests `every` ns apart until `until`; `call(id, t, rng)` says what the call acquired at `t`
    /// on node `id` does. Every acquire must be granted.
    pub fn run_until(
        &mut self,
        until: u64,
        every: u64,
        call: impl FnMut(u64, u64, &mut Rng) -> Call,
    ) {
        self.run(until, every, call, false);
    }

    /// As [`run_until`](Self::run_until), but a refused acquire (every node full) is counted in
    /// `refused` and its request is not sent.
    pub fn run_until_refusing(
        &mut self,
        until: u64,
        every: u64,
        call: impl FnMut(u64, u64, &mut Rng) -> Call,
    ) {
        self.run(until, every, call, true);
    }

    fn run(
        &mut self,
        until: u64,
        every: u64,
        mut call: impl FnMut(u64, u64, &mut Rng) -> Call,
        refusals: bool,
    ) {
        while self.now + every <= until {
            self.now += every;
            let t = self.now;
            self.settle(t);
            let lease = match self.b.acquire(t, &mut self.rng) {
                Ok(lease) => lease,
                Err(_) if refusals => {
                    self.refused += 1;
                    continue;
                }
                Err(e) => panic!("a lease: {e:?}"),
            };
            let id = lease.node_id();
            self.picks.push((t, id, lease.inflight_at_acquire()));
            match call(id, t, &mut self.rng) {
                Some((after, outcome)) => {
                    self.seq += 1;
                    self.pending.push((t + after, self.seq, lease, outcome));
                }
                None => self.lost.push(lease),
            }
        }
    }

    /// Picks of node `id` acquired in `[from, to)`.
    pub fn picks_of(&self, id: u64, from: u64, to: u64) -> u64 {
        self.picks
            .iter()
            .filter(|p| p.1 == id && (from..to).contains(&p.0))
            .count() as u64
    }

    /// All picks acquired in `[from, to)`.
    pub fn picks_in(&self, from: u64, to: u64) -> u64 {
        self.picks
            .iter()
            .filter(|p| (from..to).contains(&p.0))
            .count() as u64
    }

    /// Picks of node `id` per second from `from`, for `secs` seconds.
    pub fn per_second(&self, id: u64, from: u64, secs: u64) -> Vec<u64> {
        (0..secs)
            .map(|s| self.picks_of(id, from + s * SEC, from + (s + 1) * SEC))
            .collect()
    }

    pub fn snap(&self, id: u64) -> weir::balance::NodeSnapshot {
        self.b.node(id, self.now).unwrap()
    }
}
