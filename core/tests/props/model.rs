//! The exact single-threaded model of a balancer that the properties check the core against: its
//! membership, slots, in-flight counts, limits, clock and health, as the documentation states them.

use crate::common::conservation::Tally;
use std::collections::BTreeMap;
use std::sync::Arc;
use weir::balance::{
    Algorithm, BucketHealth, EwmaHealth, LowestScore, MembershipError, ReleaseError, Weighted,
    WeightedHealth,
};
use weir::limit::{Limit, LimitState, Sample, MAX_LIMIT};
use weir::{Config, Lease, Outcome};

/// What the model knows of one node's health.
#[derive(Clone, Debug)]
enum HealthState {
    /// Outcomes by epoch (finished, succeeded), and the newest epoch written.
    Buckets {
        data: BTreeMap<u64, (u64, u64)>,
        newest: Option<u64>,
    },
    /// The average and whether any outcome was recorded.
    Ewma { avg: f64, has_data: bool },
    /// The lowest-score family's two counter words, exactly as the core keeps them (see [`decay`]),
    /// whether any outcome was recorded, and the penalty cached for the acquire scan at the node's last
    /// refresh.
    Lowest {
        successes: u64,
        failures: u64,
        has_data: bool,
        cached: f32,
    },
}

/// The lowest-score family's counters' arithmetic as `core/src/balance/lowest/decay.rs` documents it: a
/// counter word is an `f32` value and the 32-bit tick (2^20 ns) it was written at; read at a later tick
/// it is the value times `2^(-age / half-life)`, and below 2^-20 it reads 0; a record decays the value to
/// its own tick and adds its amount (a record dated before the stored tick adds undecayed at that tick).
pub mod decay {
    pub const TICK_NS: u64 = 1 << 20;
    pub const SETTLED: f64 = 1.0 / (1u64 << 20) as f64;
    const P_MAX: f64 = 4_294_967_296.0;

    /// A configuration's decay constants.
    #[derive(Clone, Copy, Debug)]
    pub struct Params {
        /// Half-lives per tick, successes and failures.
        pub s: f64,
        pub f: f64,
        pub dropped: f64,
        pub throttled: f64,
        pub client_error: f64,
        pub per_failure: f64,
        pub per_doubling: f64,
        /// What a success leaves of the failures: `1 - forgiveness`.
        pub keep: f64,
        /// The clock epoch (a quarter of the shorter half-life) in ticks: failures last written longer
        /// ago than this go whole with a success.
        pub quiet: u32,
    }

    /// Whether the word `w` was last written more than `ticks` before tick `at` (a tick after `at`
    /// reads as age 0).
    pub fn older_than(w: u64, at: u32, ticks: u32) -> bool {
        let age = at.wrapping_sub(w as u32);
        age <= i32::MAX as u32 && age > ticks
    }

    pub fn tick(now: u64) -> u32 {
        (now >> 20) as u32
    }

    fn unpack(w: u64) -> (f32, u32) {
        (f32::from_bits((w >> 32) as u32), w as u32)
    }

    fn pack(v: f32, t: u32) -> u64 {
        (u64::from(v.to_bits()) << 32) | u64::from(t)
    }

    fn age(from: u32, to: u32) -> u32 {
        let a = to.wrapping_sub(from);
        if a > i32::MAX as u32 {
            0
        } else {
            a
        }
    }

    pub fn read(w: u64, at: u32, per_tick: f64) -> f64 {
        let (v, t) = unpack(w);
        let v = f64::from(v) * (-(f64::from(age(t, at)) * per_tick)).exp2();
        if v < SETTLED {
            0.0
        } else {
            v
        }
    }

    pub fn added(w: u64, at: u32, amount: f64, per_tick: f64) -> u64 {
        if w == 0 {
            return pack(amount as f32, at);
        }
        let (_, t) = unpack(w);
        let a = age(t, at);
        let value = read(w, at, per_tick) + amount;
        pack((value as f32).min(f32::MAX), if a == 0 { t } else { at })
    }

    pub fn penalty(f: f64, s: f64, k: &Params) -> f64 {
        if f == 0.0 {
            return 0.0;
        }
        (k.per_failure * f + k.per_doubling * (1.0 + f / (s + 1.0)).log2()).min(P_MAX)
    }

    /// A cached penalty in the key's fixed point (16 fractional bits, rounded down).
    pub fn fixed(p: f32) -> u64 {
        (f64::from(p) * 65_536.0) as u64
    }
}

/// The weighted family's parameters, if the configuration's algorithm is of that family.
pub fn weighted_params(config: &Config) -> Option<Weighted> {
    match config.algorithm {
        Algorithm::Weighted(w) => Some(w),
        Algorithm::LowestScore(_) => None,
    }
}

/// The lowest-score family's counter constants, if the configuration's algorithm is of that family.
pub fn decay_params(config: &Config) -> Option<decay::Params> {
    match config.algorithm {
        Algorithm::LowestScore(LowestScore {
            success_half_life_ns,
            failure_half_life_ns,
            dropped_cost,
            throttled_cost,
            client_error_cost,
            penalty,
            ratio_penalty,
            // Probes draw from the generator: the strategies keep them off, so the model's picks hold.
            probe_fraction: _,
            forgiveness,
            // Timed probes pick a node the model's lowest score would not: the strategies keep them off.
            probe_after_ns: _,
            // The strategies keep the slowness term off (the model's scores read no RTT).
            slow_ratio: _,
        }) => Some(decay::Params {
            s: decay::TICK_NS as f64 / success_half_life_ns as f64,
            f: decay::TICK_NS as f64 / failure_half_life_ns as f64,
            dropped: f64::from(dropped_cost),
            throttled: f64::from(throttled_cost),
            client_error: f64::from(client_error_cost),
            per_failure: f64::from(penalty),
            per_doubling: f64::from(ratio_penalty),
            keep: 1.0 - f64::from(forgiveness),
            quiet: (success_half_life_ns.min(failure_half_life_ns) / 4 / decay::TICK_NS) as u32,
        }),
        Algorithm::Weighted(_) => None,
    }
}

/// The lowest-score family's (successes, failures, penalty) of a member at `now`.
pub fn decayed(k: &decay::Params, m: &Member, now: u64) -> (f64, f64, f64) {
    let HealthState::Lowest {
        successes,
        failures,
        ..
    } = m.health
    else {
        return (0.0, 0.0, 0.0);
    };
    let at = decay::tick(now);
    let (s, f) = (
        decay::read(successes, at, k.s),
        decay::read(failures, at, k.f),
    );
    (s, f, decay::penalty(f, s, k))
}

#[derive(Clone, Debug)]
pub struct Member {
    /// Incarnation: a fresh number per successful add.
    pub inc: u64,
    pub lame: bool,
    pub in_flight: u32,
    pub limit: u32,
    /// Leases released to this incarnation, by outcome code.
    pub released: [u64; 6],
    /// The limit algorithm's state (shared only by clones of this member; the model never clones one).
    limit_state: Arc<LimitState>,
    health: HealthState,
}

/// The exact single-threaded model of a balancer.
pub struct Model {
    pub config: Config,
    capacity: usize,
    pub members: BTreeMap<u64, Member>,
    /// Removed incarnations with leases still out, and how many.
    draining: BTreeMap<u64, u32>,
    next_inc: u64,
    pub tally: Tally,
    /// The balancer's clock: the start of the epoch of the acquire that last moved it.
    clock: AcquireClock,
    /// Which incarnation holds each slot (a member, or a removed one with leases out): adds take the
    /// lowest free slot, so the scans' span is one past the highest held slot.
    slots: Vec<Option<u64>>,
}

/// The balancer's clock as its documentation states it: epochs of the bucket width (or
/// `CLOCK_EPOCH_NS`); it starts at epoch 0; an acquire moves it to the acquire's own epoch unless `now`
/// lies in `[start - width, start + width)`; a release is dated no later than the last nanosecond of the
/// epoch after the clock's.
struct AcquireClock {
    width: u64,
    start: u64,
}

impl AcquireClock {
    fn new(config: &Config) -> AcquireClock {
        let width = match config.algorithm {
            Algorithm::Weighted(Weighted { health, .. }) => match health {
                WeightedHealth::Buckets(BucketHealth { width_ns, .. }) => width_ns,
                WeightedHealth::Ewma(_) => weir::balance::CLOCK_EPOCH_NS,
            },
            // A quarter of the shorter half-life.
            Algorithm::LowestScore(LowestScore {
                success_half_life_ns,
                failure_half_life_ns,
                ..
            }) => success_half_life_ns.min(failure_half_life_ns) / 4,
        };
        AcquireClock { width, start: 0 }
    }

    /// Moves the clock for an acquire at `now`; returns the start it replaced if it moved (a rotation).
    fn acquire(&mut self, now: u64) -> Option<u64> {
        if now < self.start.saturating_sub(self.width)
            || now >= self.start.saturating_add(self.width)
        {
            let seen = self.start;
            self.start = (now / self.width)
                .min(u64::MAX - 1)
                .saturating_mul(self.width);
            return (self.start != seen).then_some(seen);
        }
        None
    }

    fn date(&self, t: u64) -> u64 {
        t.min(self.start.saturating_add(self.width.saturating_mul(2) - 1))
    }
}

impl Model {
    pub fn new(config: Config, capacity: usize) -> Model {
        Model {
            config,
            capacity,
            members: BTreeMap::new(),
            draining: BTreeMap::new(),
            next_inc: 0,
            tally: Tally::default(),
            clock: AcquireClock::new(&config),
            slots: vec![None; capacity],
        }
    }

    fn free(&mut self, inc: u64) {
        for s in &mut self.slots {
            if *s == Some(inc) {
                *s = None;
            }
        }
    }

    /// How many slots the scans read: one past the highest slot held.
    pub fn span(&self) -> usize {
        self.slots
            .iter()
            .rposition(Option::is_some)
            .map_or(0, |i| i + 1)
    }

    pub fn active(&self) -> u32 {
        self.members.values().filter(|m| !m.lame).count() as u32
    }

    pub fn add(&mut self, id: u64) -> Result<(), MembershipError> {
        if self.members.contains_key(&id) {
            return Err(MembershipError::DuplicateId(id));
        }
        if self.members.len() + self.draining.len() >= self.capacity {
            return Err(MembershipError::CapacityFull {
                capacity: self.capacity,
            });
        }
        let health = match self.config.algorithm {
            Algorithm::Weighted(Weighted { health, .. }) => match health {
                WeightedHealth::Buckets(_) => HealthState::Buckets {
                    data: BTreeMap::new(),
                    newest: None,
                },
                WeightedHealth::Ewma(_) => HealthState::Ewma {
                    avg: 1.0,
                    has_data: false,
                },
            },
            Algorithm::LowestScore(_) => HealthState::Lowest {
                successes: 0,
                failures: 0,
                has_data: false,
                cached: 0.0,
            },
        };
        self.next_inc += 1;
        let free = self
            .slots
            .iter()
            .position(Option::is_none)
            .expect("a free slot");
        self.slots[free] = Some(self.next_inc);
        let limit_state = Arc::new(LimitState::new());
        self.config.limit.reset(&limit_state);
        self.members.insert(
            id,
            Member {
                inc: self.next_inc,
                lame: false,
                in_flight: 0,
                limit: self.config.limit.initial_limit(),
                released: [0; 6],
                limit_state,
                health,
            },
        );
        // A node came into rotation: every cached penalty is read again, at the clock's start.
        self.refresh_all(self.clock.start);
        Ok(())
    }

    /// The lowest-score family's refresh of a member's cached penalty, read at `at` (0 for a lame duck).
    fn refresh(&mut self, id: u64, at: u64) {
        let Some(k) = decay_params(&self.config) else {
            return;
        };
        let m = self.members.get_mut(&id).unwrap();
        let p = if m.lame {
            0.0
        } else {
            decayed(&k, m, at).2 as f32
        };
        if let HealthState::Lowest { cached, .. } = &mut m.health {
            *cached = p;
        }
    }

    /// A membership change that moves a node into or out of rotation refreshes every member.
    fn refresh_all(&mut self, at: u64) {
        let ids: Vec<u64> = self.members.keys().copied().collect();
        for id in ids {
            self.refresh(id, at);
        }
    }

    /// An acquire at `now`: moves the clock, and in the lowest-score family a rotation settles every
    /// member's counters (a word that reads 0 is written back as 0; after a silence of 2^31 ticks every
    /// word is) and refreshes every cached penalty at `now`.
    pub fn acquire_clock(&mut self, now: u64) {
        let Some(seen) = self.clock.acquire(now) else {
            return;
        };
        let Some(k) = decay_params(&self.config) else {
            return;
        };
        let reach = self.clock.width.saturating_mul(2) - 1;
        let forget = now.saturating_sub(seen.saturating_add(reach)) >= (1u64 << 31) << 20;
        let at = decay::tick(now);
        for m in self.members.values_mut() {
            if let HealthState::Lowest {
                successes,
                failures,
                ..
            } = &mut m.health
            {
                for (w, per_tick) in [(successes, k.s), (failures, k.f)] {
                    if *w != 0 && (forget || decay::read(*w, at, per_tick) == 0.0) {
                        *w = 0;
                    }
                }
            }
        }
        self.refresh_all(now);
    }

    pub fn remove(&mut self, id: u64) -> Result<(), MembershipError> {
        let m = self
            .members
            .remove(&id)
            .ok_or(MembershipError::UnknownId(id))?;
        if m.in_flight > 0 {
            self.draining.insert(m.inc, m.in_flight);
        } else {
            self.free(m.inc);
        }
        if !m.lame {
            self.refresh_all(self.clock.start);
        }
        Ok(())
    }

    pub fn lame_duck(&mut self, id: u64, lame: bool) -> Result<(), MembershipError> {
        let m = self
            .members
            .get_mut(&id)
            .ok_or(MembershipError::UnknownId(id))?;
        if m.lame != lame {
            m.lame = lame;
            self.refresh_all(self.clock.start);
        }
        Ok(())
    }

    /// Records a release of a lease of incarnation `inc`; returns the expected answer.
    pub fn release(
        &mut self,
        lease: &Lease,
        inc: u64,
        outcome: Outcome,
        t: u64,
    ) -> Result<(), ReleaseError> {
        let id = lease.node_id();
        let config = self.config;
        let t = self.clock.date(t);
        let start = self.clock.start;
        match self.members.get_mut(&id).filter(|m| m.inc == inc) {
            Some(m) => {
                m.in_flight -= 1;
                m.released[outcome as usize] += 1;
                let mut refresh = false;
                if let (
                    Some(k),
                    HealthState::Lowest {
                        successes,
                        failures,
                        has_data,
                        ..
                    },
                ) = (decay_params(&config), &mut m.health)
                {
                    let (failure, amount) = match outcome {
                        Outcome::Success => (false, 1.0),
                        Outcome::Failure => (true, 1.0),
                        Outcome::Dropped => (true, k.dropped),
                        Outcome::Throttled => (true, k.throttled),
                        Outcome::ClientError => (true, k.client_error),
                        Outcome::Ignored => (false, 0.0),
                    };
                    if outcome != Outcome::Ignored {
                        if failure {
                            *failures = decay::added(*failures, decay::tick(t), amount, k.f);
                        } else {
                            *successes = decay::added(*successes, decay::tick(t), amount, k.s);
                        }
                        // Forgiveness: a success of a call sent no earlier than the failures' last
                        // write keeps `keep` of them, read at its tick, or none once what it keeps
                        // weighs less than one call in flight, or once they were last written more
                        // than an epoch before the call was sent. The call was sent at the lease's
                        // acquire, or at the release's date if that is earlier.
                        let forgives =
                            outcome == Outcome::Success && k.keep < 1.0 && *failures != 0;
                        let sent = decay::tick(lease.acquired_at().min(t));
                        let written_after = {
                            let a = (*failures as u32).wrapping_sub(sent);
                            a <= i32::MAX as u32 && a > 0
                        };
                        if forgives && !written_after {
                            let at = decay::tick(t);
                            let v = decay::read(*failures, at, k.f);
                            let s = decay::read(*successes, at, k.s);
                            *failures = if decay::older_than(*failures, sent, k.quiet)
                                || decay::penalty(v * k.keep, s, &k) < 1.0
                            {
                                0
                            } else {
                                decay::added(*failures, at, v * k.keep - v, k.f)
                            };
                        }
                        *has_data = true;
                        // A success leaves the cached penalty to the next rotation; one that forgave
                        // refreshes, even where it emptied the counter.
                        refresh = failure || forgives;
                    }
                } else if outcome.as_cascade() != Outcome::Ignored {
                    let success = outcome == Outcome::Success;
                    let health = weighted_params(&config).map(|w| w.health);
                    match (&mut m.health, health) {
                        (
                            HealthState::Buckets { data, newest },
                            Some(WeightedHealth::Buckets(BucketHealth { width_ns, .. })),
                        ) => {
                            let epoch = (t / width_ns).max(newest.unwrap_or(0));
                            *newest = Some(epoch);
                            let b = data.entry(epoch).or_insert((0, 0));
                            b.0 += 1;
                            b.1 += u64::from(success);
                        }
                        (
                            HealthState::Ewma { avg, has_data },
                            Some(WeightedHealth::Ewma(EwmaHealth { half_life })),
                        ) => {
                            let alpha = 1.0 - (-1.0 / f64::from(half_life)).exp2();
                            let target = if success { 1.0 } else { 0.0 };
                            *avg += alpha * (target - *avg);
                            *has_data = true;
                        }
                        _ => unreachable!(),
                    }
                }
                // What the limiter is told (each family's `limit_reading`): in the lowest-score family a
                // drop on `Failure` and `Dropped`, a success on `Success` and `ClientError`, nothing on
                // `Throttled`; in the weighted family the outcome as the cascade reads it (`as_cascade`).
                let reading = if decay_params(&config).is_some() {
                    match outcome {
                        Outcome::Success | Outcome::ClientError => Some(false),
                        Outcome::Failure | Outcome::Dropped => Some(true),
                        Outcome::Throttled | Outcome::Ignored => None,
                    }
                } else {
                    match outcome.as_cascade() {
                        Outcome::Success => Some(false),
                        Outcome::Dropped => Some(true),
                        _ => None,
                    }
                };
                if let Some(dropped) = reading {
                    let sample = Sample {
                        rtt_ns: t.saturating_sub(lease.acquired_at()),
                        inflight: lease.inflight_at_acquire(),
                        dropped,
                        now_ns: t,
                        load: None,
                        failed: false,
                    };
                    // The balancer's release passes no random bits (0).
                    m.limit = config
                        .limit
                        .update(&m.limit_state, &sample, 0)
                        .min(MAX_LIMIT);
                }
                self.tally.released[outcome as usize] += 1;
                if refresh {
                    // Read at the later of the release's date and the clock's start.
                    self.refresh(id, t.max(start));
                }
                Ok(())
            }
            None => {
                let left = self.draining.get_mut(&inc).expect("a draining incarnation");
                *left -= 1;
                if *left == 0 {
                    self.draining.remove(&inc);
                    self.free(inc);
                }
                self.tally.stale += 1;
                Err(ReleaseError::NodeRemoved { id })
            }
        }
    }

    /// The expected (success rate, window, sticky, has_data) of a member at `now`.
    pub fn health_at(&self, m: &Member, now: u64) -> (f64, (u64, u64), (u64, u64), bool) {
        // The recovery floor, which only the weighted family has.
        let floor = weighted_params(&self.config).map_or(0.0, |w| w.floor)
            / f64::from(self.active().max(1));
        let health = weighted_params(&self.config).map(|w| w.health);
        match (&m.health, health) {
            (HealthState::Ewma { avg, has_data }, _) => (avg.max(floor), (0, 0), (0, 0), *has_data),
            (HealthState::Lowest { has_data, .. }, _) => {
                let (s, f, _) = decayed(&decay_params(&self.config).unwrap(), m, now);
                let rate = if s + f > 0.0 { s / (s + f) } else { 1.0 };
                (rate, (0, 0), (0, 0), *has_data)
            }
            (HealthState::Buckets { newest: None, .. }, _) => (1.0, (0, 0), (0, 0), false),
            (
                HealthState::Buckets {
                    data,
                    newest: Some(newest),
                },
                Some(WeightedHealth::Buckets(BucketHealth {
                    count,
                    width_ns,
                    decay,
                })),
            ) => {
                let now_epoch = (now / width_ns).max(*newest);
                let (mut num, mut den, mut wf, mut ws) = (0.0, 0.0, 0, 0);
                for (&e, &(f, s)) in data.range(now_epoch.saturating_sub(count as u64 - 1)..) {
                    let a = 1.0 / decay.powi((newest - e) as i32);
                    num += a * s as f64;
                    den += a * f as f64;
                    wf += f;
                    ws += s;
                }
                if wf > 0 {
                    (num / den, (wf, ws), (0, 0), true)
                } else {
                    let (f, s) = data[newest];
                    ((s as f64 / f as f64).max(floor), (0, 0), (f, s), true)
                }
            }
            _ => unreachable!(),
        }
    }
}

/// What the lowest-score family (`Algorithm::LowestScore`) may answer from the model's keys: the nodes it
/// may pick, and whether it may refuse with `AllBusy` (it must refuse when the list is empty). A key is
/// `in_flight * 2^16 + ⌊P * 2^16⌋` with `P` the penalty cached at the node's last refresh; the least key
/// among the active nodes with room wins (any of them on a tie); the acquire is refused when no node
/// has room, or when a full node keys no higher than that least key and the least key is more than
/// twice the highest such node's, each counted at least 6 in flight. The model's cached penalty may differ from the
/// core's in the last bits (see `near`), so keys within a few units of a decision's boundary allow either
/// answer.
pub fn lowest_score_may(model: &Model) -> (Vec<u64>, bool) {
    struct Key {
        id: u64,
        key: u64,
        /// The penalty part of the key.
        pen: u64,
        room: bool,
        tol: u64,
    }
    let keys: Vec<Key> = model
        .members
        .iter()
        .filter(|(_, m)| !m.lame)
        .map(|(&id, m)| {
            let HealthState::Lowest { cached, .. } = m.health else {
                unreachable!()
            };
            Key {
                id,
                key: (u64::from(m.in_flight) << 16) + decay::fixed(cached),
                pen: decay::fixed(cached),
                room: m.in_flight < m.limit,
                tol: 2 + (f64::from(cached) * 65_536.0 * 1e-6) as u64,
            }
        })
        .collect();
    let Some(best) = keys.iter().filter(|k| k.room).min_by_key(|k| k.key) else {
        return (Vec::new(), true);
    };
    let (best, best_tol) = (best.key, best.tol);
    let allowed: Vec<u64> = keys
        .iter()
        .filter(|k| k.room && k.key <= best + k.tol + best_tol)
        .map(|k| k.id)
        .collect();
    let full: Vec<&Key> = keys.iter().filter(|k| !k.room).collect();
    let floor = 6 << 16;
    let threshold = full
        .iter()
        .map(|k| k.key)
        .filter(|&k| k <= best)
        .map(|k| k.max(floor))
        .max();
    // The rule refuses only a best node with a penalty: one busier than a full node by its calls alone
    // is taken. Where the nodes tied at the best key differ in that, or a penalty is within the
    // tolerance of 0, either answer is the core's to give.
    let best_pens: Vec<u64> = keys
        .iter()
        .filter(|k| k.room && k.key == best)
        .map(|k| k.pen)
        .collect();
    let penalised = best_pens.iter().all(|&p| p != 0);
    let unsure = best_pens.iter().any(|&p| p != 0 && p <= best_tol)
        || !penalised && best_pens.iter().any(|&p| p != 0);
    let past = threshold.is_some_and(|t| best > 2 * t);
    let refuse = past && penalised;
    let boundary = past && unsure
        || full.iter().any(|h| {
            h.key.abs_diff(best) <= h.tol + best_tol
                || best.abs_diff(2 * h.key.max(floor)) <= 2 * h.tol + best_tol
        });
    match (refuse, boundary) {
        (true, false) => (Vec::new(), true),
        (false, false) => (allowed, false),
        (_, true) => (allowed, true),
    }
}
