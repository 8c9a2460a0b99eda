//! The knee limit against one contended server shared by independent clients.
//!
//! The server models what the simulator calls a contended server: up to its knee (`KNEE` calls in
//! progress) each call takes `BASE_MS`; past it the calls share a capacity that shrinks as they fight
//! (threads, locks, disks), so more in progress means fewer completions per second. It never refuses a
//! call, so a loss-based limit (CIAD) never sees a drop. Each client owns one limit state for the server,
//! as each client's balancer would, and sees nothing of the others but the latency every call gets.
//!
//! Two ways past the knee, each checked against CIAD on the same arrivals:
//! - a load step above what the server serves at its knee: CIAD lets in-flight grow to the sum of the
//!   clients' limits and the server's throughput collapses; the knee limits keep it near its knee,
//!   serving five sixths of its capacity;
//! - a 3 s stall at 60 % load (a pause, a failover): the calls that pile up leave the server past its
//!   knee, serving less than arrives, so under CIAD it never comes back (a metastable overload); the knee
//!   limits drain it within seconds.
//!
//! The default knee limit reads latency only within a minute of a drop (`armed_for_ns`), and this
//! server never refuses. So each case runs twice: with clients that wait as long as a call takes
//! (no drop ever), against a knee limit that reads latency always (`armed_for_ns: 0`); and with
//! clients that give up on a call after a 1 s deadline (a drop; the server still works on it), against
//! the default.

use weir::limit::{KneeLimit, Limit, LimitAlgorithm, LimitState, Sample};

const KNEE: f64 = 40.0;
const BASE_MS: f64 = 20.0;
/// Completions per second at the knee.
const CAPACITY: f64 = KNEE * 1_000.0 / BASE_MS;
const CLIENTS: usize = 10;
const STEP_NS: u64 = 250_000;
const S: u64 = 1_000_000_000;

/// Total completions per second with `n` calls in progress: linear up to the knee, then falling.
fn throughput(n: f64) -> f64 {
    if n <= KNEE {
        n * 1_000.0 / BASE_MS
    } else {
        CAPACITY / (1.0 + (n - KNEE) / KNEE)
    }
}

/// A small deterministic generator (xorshift64*), for Poisson arrivals.
struct Gen(u64);

impl Gen {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn gap_ns(&mut self, rate: f64) -> u64 {
        (-self.unit().ln() / rate * 1e9) as u64
    }
}

/// A call at the server, ordered by when it completes: the service every call in progress will have
/// received by then (processor sharing gives each the same), in units of 2^-32 of one call's mean work.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Call {
    done_at: std::cmp::Reverse<u64>,
    client: usize,
    sent_ns: u64,
    inflight: u32,
    id: u64,
}

const UNIT: f64 = (1u64 << 32) as f64;

/// What one run measured.
#[derive(Debug)]
struct Run {
    /// Completions per second over the last 5 s.
    goodput: f64,
    /// Mean calls in progress at the server over the last 5 s.
    in_progress: f64,
}

/// Runs `limit` in each of the clients for `end_s` seconds; `rate(t)` is the total offered rate (calls
/// per second) at `t` ns, and the server serves nothing while `stalled(t)`. With a `deadline_ns`, a
/// client gives up on a call that long after sending it: its limit reads a drop and the call leaves
/// its in-flight count, while the server works on it until done.
fn run(
    limit: LimitAlgorithm,
    end_s: u64,
    rate: impl Fn(u64) -> f64,
    stalled: impl Fn(u64) -> bool,
    deadline_ns: Option<u64>,
) -> Run {
    let states: Vec<LimitState> = (0..CLIENTS).map(|_| LimitState::new()).collect();
    for s in &states {
        limit.reset(s);
    }
    let mut inflight = [0u32; CLIENTS];
    let mut gen = Gen(0x9e37_79b9_7f4a_7c15);
    let mut next = [0u64; CLIENTS];
    let mut queue = std::collections::BinaryHeap::<Call>::new();
    // Calls in the order sent (send time, client, in flight at send, id), and the ids given up on.
    let mut sent = std::collections::VecDeque::<(u64, usize, u32, u64)>::new();
    let mut abandoned = std::collections::HashSet::<u64>::new();
    let mut ids = 0u64;
    // Service received by each call in progress since the start (processor sharing: all equal).
    let mut served = 0.0;
    let (mut done, mut sum_in_progress, mut steps) = (0u64, 0.0, 0u64);
    let measure_from = (end_s - 5) * S;
    let mut t = 0;
    while t < end_s * S {
        let per_client = rate(t) / CLIENTS as f64;
        for c in 0..CLIENTS {
            while next[c] <= t {
                next[c] += gen.gap_ns(per_client);
                if inflight[c] < limit.limit(&states[c]) {
                    inflight[c] += 1;
                    // Each call's work: 0.75 to 1.25 of the mean, so that calls sent together do not all
                    // complete together.
                    let work = 0.75 + 0.5 * gen.unit();
                    ids += 1;
                    queue.push(Call {
                        done_at: std::cmp::Reverse(((served + work) * UNIT) as u64),
                        client: c,
                        sent_ns: t,
                        inflight: inflight[c],
                        id: ids,
                    });
                    if deadline_ns.is_some() {
                        sent.push_back((t, c, inflight[c], ids));
                    }
                }
            }
        }
        let n = queue.len() as f64;
        if n > 0.0 && !stalled(t) {
            // A call's mean work is one unit, done in BASE_MS alone; with n in progress each gets
            // `throughput(n) / n` units per second.
            served += throughput(n) / n * (STEP_NS as f64 / 1e9);
        }
        while queue
            .peek()
            .is_some_and(|c| c.done_at.0 <= (served * UNIT) as u64)
        {
            let c = queue.pop().unwrap();
            if abandoned.remove(&c.id) {
                continue;
            }
            inflight[c.client] -= 1;
            let sample = Sample {
                rtt_ns: t - c.sent_ns,
                inflight: c.inflight,
                dropped: false,
                now_ns: t,
                load: None,
                failed: false,
            };
            limit.update(&states[c.client], &sample, 0);
            if t >= measure_from {
                done += 1;
            }
        }
        while let Some(&(at, c, n, id)) = sent.front() {
            if at + deadline_ns.unwrap_or(u64::MAX) > t {
                break;
            }
            sent.pop_front();
            if queue.iter().any(|q| q.id == id) {
                abandoned.insert(id);
                inflight[c] -= 1;
                let sample = Sample {
                    rtt_ns: t - at,
                    inflight: n,
                    dropped: true,
                    now_ns: t,
                    load: None,
                    failed: false,
                };
                limit.update(&states[c], &sample, 0);
            }
        }
        if t >= measure_from {
            sum_in_progress += queue.len() as f64;
            steps += 1;
        }
        t += STEP_NS;
    }
    Run {
        goodput: done as f64 / 5.0,
        in_progress: sum_in_progress / steps as f64,
    }
}

fn ciad() -> LimitAlgorithm {
    LimitAlgorithm::default()
}

/// The knee limit reading latency always, for clients that never give up on a call.
fn knee_always() -> LimitAlgorithm {
    LimitAlgorithm::Knee(KneeLimit {
        armed_for_ns: 0,
        ..KneeLimit::default()
    })
}

/// The default knee limit, for clients with a deadline: their first timeout arms it.
fn knee() -> LimitAlgorithm {
    LimitAlgorithm::Knee(KneeLimit::default())
}

const DEADLINE: Option<u64> = Some(S);

#[test]
fn the_model_server_serves_its_capacity_at_the_knee_and_less_past_it() {
    // One client, one call at a time: every call takes BASE_MS.
    assert_eq!(throughput(1.0), 50.0);
    assert_eq!(throughput(KNEE), CAPACITY);
    assert_eq!(throughput(2.0 * KNEE), CAPACITY / 2.0);
    // At 60 % nothing is past the knee: CIAD and the knee limit both carry the load.
    for (l, deadline) in [(ciad(), None), (knee_always(), None), (knee(), DEADLINE)] {
        let r = run(l, 20, |_| 0.6 * CAPACITY, |_| false, deadline);
        assert!(
            (r.goodput / (0.6 * CAPACITY) - 1.0).abs() < 0.05,
            "{l:?}: {r:?}"
        );
        assert!(r.in_progress < KNEE, "{l:?}: {r:?}");
    }
}

#[test]
fn independent_clients_hold_a_contended_server_at_its_knee_through_a_load_step() {
    // 60 % for 10 s, then 130 % of what the server serves at its knee.
    let rate = |t: u64| if t < 10 * S { 0.6 } else { 1.3 } * CAPACITY;
    let loss = run(ciad(), 30, rate, |_| false, None);
    // Loss only: the clients fill their limits (10 x 20), the server serves a tenth of its capacity.
    assert!(loss.in_progress > 6.0 * KNEE, "{loss:?}");
    assert!(loss.goodput < 0.3 * CAPACITY, "{loss:?}");
    // The knee limits keep the server near its knee, serving some five sixths of its capacity (83 %;
    // the average's ratio of 2 alone lies at 1.4 x KNEE in progress here, where it serves 70 %): each
    // call past the knee cuts before the smoothed RTTs catch up, so the clients overshoot little, and
    // they undershoot while the limits grow back. Reading only the average, they served 76 % at 1.17 x
    // KNEE in progress. With a deadline, the default knee limit reads the latency from the first
    // timeout on, and holds the server as well.
    for (l, deadline) in [(knee_always(), None), (knee(), DEADLINE)] {
        let latency = run(l, 30, rate, |_| false, deadline);
        assert!(latency.in_progress < 1.1 * KNEE, "{latency:?}");
        assert!(latency.goodput > 0.8 * CAPACITY, "{latency:?}");
    }
    // CIAD with the same deadline cuts on each timeout and grows back into the collapse: the server
    // serves 326 calls a second with 246 in progress, where the armed knee limit serves 1,650 with 44.
    let timed = run(ciad(), 30, rate, |_| false, DEADLINE);
    assert!(timed.goodput < 0.3 * CAPACITY, "{timed:?}");
}

#[test]
fn independent_clients_drain_a_contended_server_out_of_its_high_state() {
    // 60 % all along; the server stalls from 10 s to 13 s and the calls pile up to the clients' limits.
    let rate = |_| 0.6 * CAPACITY;
    let stall = |t: u64| (10 * S..13 * S).contains(&t);
    let loss = run(ciad(), 30, rate, stall, None);
    // Loss only, the pile-up never ends: the server, past its knee, serves less than arrives.
    assert!(loss.in_progress > 6.0 * KNEE, "{loss:?}");
    assert!(loss.goodput < 0.3 * CAPACITY, "{loss:?}");
    // The knee limits cut together, the server comes back below its knee and serves what arrives: with
    // the latency read always, and with the default armed by the stall's timeouts.
    for (l, deadline) in [(knee_always(), None), (knee(), DEADLINE)] {
        let latency = run(l, 30, rate, stall, deadline);
        assert!(latency.in_progress < KNEE, "{latency:?}");
        assert!(latency.goodput > 0.95 * 0.6 * CAPACITY, "{latency:?}");
    }
    // With the deadline, CIAD's timeouts cut it too, and it drains from the stall as well (1,193 calls
    // a second against 1,203): a stall's pile-up is a burst of drops. A lasting step is not (above).
    let timed = run(ciad(), 30, rate, stall, DEADLINE);
    assert!(timed.in_progress < KNEE, "{timed:?}");
}
