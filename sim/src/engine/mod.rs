//! The deterministic discrete-event engine.
//!
//! One virtual clock in nanoseconds, one event queue ordered by (time, sequence number), and seeded
//! generators derived from the scenario's seed for everything random: which client a request goes to,
//! Poisson gaps, latency draws, server error draws, each client's balancer. Nothing reads the wall clock or
//! iterates a hash map, so the same scenario, policy and seed give the same figures, bit for bit.
//!
//! The network is instant: an attempt reaches its server at the time it is sent and the answer reaches the
//! client at the time the server finishes. A client-side deadline ends an attempt early for the client; the
//! server still works on it (and counts the time as busy).
//!
//! Requests are scheduled as dialogue's `Benchmark` schedules them: request k joins the event queue only
//! once every event up to request k−1's time has run, so among events of one instant a request comes after
//! everything scheduled before its predecessor was sent. dialogue's scenarios also reproduce its
//! generators ([`JavaSeeds`]): the request-to-client assignment, the servers' random errors, and the one
//! generator its clients share.
//!
//! A client is one of two kinds ([`Clients`]): a [`Balance`] policy with this engine's client around it
//! (a FIFO queue when the policy says [`Refusal::Queue`](crate::policy::Refusal::Queue), the scenario's
//! retries, deadlines on queued requests), or dialogue's whole client ([`DialogueClient`]), which keeps its
//! own queues and limiters.
//!
//! A balancer client also sends the health checks its policy asks for ([`Balance::due_check`], asked once
//! per try of a request, before the pick). A check is answered from the server's behaviour when it arrives,
//! takes no worker and joins no queue, changes no server state, and is no attempt, request, answer or busy
//! time in the figures ([`CellResult::checks`] counts them); its answer, after the server's no-load time
//! (at once when the server refuses, at [`CHECK_TIMEOUT`] when it would not answer by then), goes to the
//! policy ([`Balance::check_answered`]). Its draws come from a generator of its own, so a row that checks
//! draws its calls as its twin without checks does, as far as their calls go the same way (see
//! `check.rs`).
//!
//! | file | holds |
//! |---|---|
//! | `mod.rs` | the state every side shares, the event queue and its loop, the oracle, the final figures |
//! | `client.rs` | arrivals, picks, the engine's queue and its deadlines, answers reaching the client |
//! | `retry.rs` | the scenario's retry rule: backoff, retry budget, retries coming due |
//! | `server.rs` | admission, service time, crashes, the status at completion, load reports |
//! | `check.rs` | health checks: the answer and time of a check from the server's behaviour at its arrival |
//! | `membership.rs` | the scenario's actions (servers added, removed, drained) and what each client sees |

mod check;
mod client;
mod membership;
mod retry;
mod server;

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::ops::{Index, IndexMut};

use weir::{subset::SplitMix64, Rng};

pub use self::check::CHECK_TIMEOUT;
use self::membership::uri_order;
use self::retry::Retrier;
use self::server::{nominal_capacity, OneMinuteRate};
use crate::metrics::{quantile, CellResult, RequestEnd, ServerSeries};
use crate::model::{JavaSeeds, Latency, Scenario, StatusFn, Subsetting};
use crate::policy::baseline::dialogue::{DialogueClient, Effect, JavaRandom, Strategy};
use crate::policy::{Balance, Pick, Reply, RequestId, ServerId};

/// Builds client `client`'s policy; `seed` is that client's own seed.
pub type MakePolicy<'a> = &'a dyn Fn(usize, u64) -> Box<dyn Balance>;

/// How a run's clients are built.
#[derive(Clone, Copy)]
pub enum Clients<'a> {
    /// A balancer per client, in this engine's client.
    Balancer(MakePolicy<'a>),
    /// dialogue's client with this strategy.
    Dialogue(Strategy),
}

/// Derives an independent seed for `(stream, index)` from the scenario's seed.
fn derive(seed: u64, stream: u64, index: u64) -> u64 {
    let mut g = SplitMix64::new(seed ^ stream.wrapping_mul(0xA24B_AED4_963E_E407));
    g.next_u64();
    let mut h = SplitMix64::new(g.next_u64() ^ index.wrapping_mul(0x9FB2_1C65_1E98_DF25));
    h.next_u64()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    /// The next request of stream `.0`.
    Arrive(usize),
    /// A server finished an attempt.
    ServerDone(AttemptId),
    /// A refused connection reaches the client.
    Refused(AttemptId),
    /// An attempt's deadline.
    Timeout(AttemptId),
    /// A request's retry is due.
    Retry(RequestId),
    /// A queued request's deadline: if it is still queued, it ends as a timeout.
    QueueDeadline(RequestId),
    /// A request's own deadline (the user's, [`ClientSpec::deadline`](crate::model::ClientSpec)): if it
    /// is still open, it ends as a timeout wherever it is.
    Deadline(RequestId),
    /// Has the server been over its crash threshold since `.1`-th crossing?
    CrashCheck(ServerId, u64),
    /// The server is back up.
    Recover(ServerId),
    /// Scenario action `.0`.
    Act(usize),
    /// A health check's answer reaches its client.
    CheckDone {
        /// The client that sent it.
        client: usize,
        /// The server it checked.
        server: ServerId,
        /// Its answer.
        healthy: bool,
    },
}

#[derive(PartialEq, Eq)]
struct Entry {
    at: u64,
    seq: u64,
    ev: Ev,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap and the earliest event must come out first.
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

struct Server {
    active: u32,
    down: bool,
    /// Bumped at every crash: attempts of an older generation were reset.
    generation: u64,
    /// Bumped whenever the server crosses its crash threshold in either direction.
    crossing: u64,
    over_since: Option<u64>,
    rng: Rng,
    /// dialogue's scenarios: the server's `java.util.Random` for its random errors.
    java: Option<JavaRandom>,
    /// The meter of a server-side rate limit.
    meter: OneMinuteRate,
    /// The queue model's workers: when each becomes free (only those busy past the last arrival).
    workers: BinaryHeap<std::cmp::Reverse<u64>>,
    /// Reported answers and errors per second, and when they were last decayed.
    qps: f64,
    eps: f64,
    rates_at: u64,
    capacity: f64,
    present: bool,
    draining: bool,
}

enum Stack {
    /// A balancer, with the FIFO queue this engine keeps when it says [`Refusal::Queue`].
    Balancer {
        policy: Box<dyn Balance>,
        queue: VecDeque<RequestId>,
    },
    Dialogue(DialogueClient),
}

struct Client {
    stack: Stack,
    rng: Rng,
    /// The client's subset of the servers.
    servers: Vec<ServerId>,
    retrier: Retrier,
}

struct Request {
    client: usize,
    endpoint: usize,
    cost: f64,
    bad: bool,
    arrived: u64,
    /// Attempts sent plus refusals by the policy.
    tries: u32,
    /// When the request last entered its client's queue.
    queued_at: u64,
    /// Its final answer is known (later answers to it are the server's wasted work).
    ended: bool,
    /// Its latest attempt.
    attempt: Option<AttemptId>,
    /// The servers its attempts went to, in order.
    tried: Vec<ServerId>,
}

struct Attempt {
    req: RequestId,
    server: ServerId,
    pick: Pick,
    sent: u64,
    generation: u64,
    /// The client still waits for this attempt.
    client_open: bool,
    /// The server still holds it.
    server_open: bool,
    /// A status decided at arrival (rate limit, bad request), else decided at completion.
    status: Option<u16>,
    /// It was sent to its server (not cancelled before, see `Engine::cancelled`).
    reached: bool,
}

/// An attempt's number in a run: the order it was made in (sent, or cancelled before it was sent: see
/// `Engine::cancelled`), from 0. The engine keeps its attempts in that order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct AttemptId(usize);

/// The engine's records, read by their ids: an id is its record's position in the engine's `Vec`.
macro_rules! by_id {
    ($id:ty => $record:ty) => {
        impl Index<$id> for Vec<$record> {
            type Output = $record;
            fn index(&self, id: $id) -> &$record {
                &self[id.0]
            }
        }

        impl IndexMut<$id> for Vec<$record> {
            fn index_mut(&mut self, id: $id) -> &mut $record {
                &mut self[id.0]
            }
        }
    };
}

by_id!(RequestId => Request);
by_id!(AttemptId => Attempt);

/// One request stream: requests still to come, when the next one is due, and its generator.
struct Stream {
    left: u64,
    next_at: u64,
    rng: Rng,
}

/// Runs `scenario` with every client's balancer built by `make`, and returns the figures.
pub fn run(scenario: &Scenario, make: MakePolicy<'_>) -> CellResult {
    Engine::new(scenario, Clients::Balancer(make)).run()
}

/// Runs `scenario` with `clients`.
pub fn run_with(scenario: &Scenario, clients: Clients<'_>) -> CellResult {
    Engine::new(scenario, clients).run()
}

struct Engine<'s> {
    s: &'s Scenario,
    now: u64,
    seq: u64,
    queue: BinaryHeap<Entry>,
    /// Events whose delay is the same for every request, so that they come due in the order they were
    /// scheduled: attempt timeouts and request deadlines. Each lane is kept in (time, sequence) order
    /// outside the heap, which then holds only the events of varying delay; the loop takes the earliest
    /// of the heap's top and the lanes' fronts, so the order is exactly the heap's alone.
    lanes: [VecDeque<Entry>; 2],
    servers: Vec<Server>,
    clients: Vec<Client>,
    requests: Vec<Request>,
    attempts: Vec<Attempt>,
    streams: Vec<Stream>,
    /// An arrival is in the event queue.
    arrival_queued: bool,
    /// The time of the last arrival put in the event queue.
    last_arrival: u64,
    /// The time of the latest event other than a check's answer: the run's end once every request has
    /// ended (a check's answer does not extend the run).
    until: u64,
    /// dialogue's scenarios: the generator that assigns requests to (client, endpoint) pairs.
    chooser: Option<JavaRandom>,
    /// The generator every dialogue client shares.
    java: JavaRandom,
    fx: Vec<Effect>,
    /// The health checks' generator (see `check.rs`), its own so that checks leave every other draw as
    /// it was.
    check_rng: Rng,
    latencies: Vec<u64>,
    oracle_sum: f64,
    out: CellResult,
}

impl<'s> Engine<'s> {
    fn new(s: &'s Scenario, kind: Clients<'_>) -> Self {
        let servers: Vec<Server> = s
            .servers
            .iter()
            .enumerate()
            .map(|(i, spec)| Server {
                active: 0,
                down: false,
                generation: 0,
                crossing: 0,
                over_since: None,
                rng: Rng::with_seed(derive(s.seed, 1, i as u64)),
                java: s.java.map(|j| JavaRandom::new(j.server)),
                meter: OneMinuteRate::default(),
                workers: BinaryHeap::new(),
                qps: 0.0,
                eps: 0.0,
                rates_at: 0,
                capacity: nominal_capacity(spec),
                present: spec.present,
                draining: false,
            })
            .collect();
        let java_seeds = s.java.unwrap_or(JavaSeeds {
            shared: derive(s.seed, 6, 0) as i64,
            chooser: 0,
            server: 0,
        });
        let mut java = JavaRandom::new(java_seeds.shared);
        let all: Vec<ServerId> = (0..s.servers.len()).collect();
        let mut scratch = all.clone();
        let mut subset_rng = Rng::with_seed(derive(s.seed, 2, 0));
        let count = if s.clients.sticky { 1 } else { s.clients.count };
        let clients = (0..count)
            .map(|c| {
                let known = match s.clients.subset {
                    Subsetting::None => all.clone(),
                    Subsetting::Deterministic(k) => {
                        weir::subset::deterministic_subset(&all, c as u64, k, &mut scratch)
                            .map(<[_]>::to_vec)
                            .unwrap_or_else(|_| all.clone())
                    }
                    Subsetting::Random(k) => {
                        weir::subset::random_subset(&all, k, &mut subset_rng, &mut scratch)
                            .map(<[_]>::to_vec)
                            .unwrap_or_else(|_| all.clone())
                    }
                };
                let stack = match kind {
                    Clients::Balancer(make) => Stack::Balancer {
                        policy: make(c, derive(s.seed, 3, c as u64)),
                        queue: VecDeque::new(),
                    },
                    Clients::Dialogue(strategy) => {
                        let present: Vec<ServerId> = known
                            .iter()
                            .copied()
                            .filter(|&i| s.servers[i].present)
                            .collect();
                        let uris = uri_order(s, &present);
                        let endpoints = s.clients.endpoints;
                        Stack::Dialogue(if s.clients.sticky {
                            DialogueClient::sticky(
                                strategy,
                                endpoints,
                                &uris,
                                s.clients.count,
                                0,
                                &mut java,
                            )
                        } else {
                            DialogueClient::new(strategy, endpoints, &uris)
                        })
                    }
                };
                let plan = match &stack {
                    Stack::Balancer { policy, .. } => policy.retry_plan(s.clients.retries),
                    Stack::Dialogue(_) => crate::policy::RetryPlan {
                        rule: s.clients.retries,
                        budget: None,
                    },
                };
                Client {
                    stack,
                    rng: Rng::with_seed(derive(s.seed, 4, c as u64)),
                    servers: known,
                    retrier: Retrier::new(plan),
                }
            })
            .collect();
        let streams = s
            .arrivals
            .iter()
            .enumerate()
            .map(|(i, a)| Stream {
                left: a.count,
                next_at: a.start,
                rng: Rng::with_seed(derive(s.seed, 5, i as u64)),
            })
            .collect();
        let n = s.servers.len();
        Engine {
            s,
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            lanes: [VecDeque::new(), VecDeque::new()],
            servers,
            clients,
            requests: Vec::new(),
            attempts: Vec::new(),
            streams,
            arrival_queued: false,
            last_arrival: 0,
            until: 0,
            chooser: s.java.map(|j| JavaRandom::new(j.chooser)),
            java,
            fx: Vec::new(),
            check_rng: Rng::with_seed(derive(s.seed, 7, 0)),
            latencies: Vec::new(),
            oracle_sum: 0.0,
            out: CellResult {
                sent: s.requests(),
                per_server_attempts: vec![0; n],
                series: vec![ServerSeries::default(); n],
                sent_per_second: vec![Vec::new(); n],
                bucket_ns: s.bucket.max(1),
                ..CellResult::default()
            },
        }
    }

    /// Schedules `ev` at `at`, after every event already scheduled for that instant.
    fn at(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        let e = Entry {
            at,
            seq: self.seq,
            ev,
        };
        let lane = match ev {
            Ev::Timeout(_) => Some(0),
            Ev::Deadline(_) => Some(1),
            _ => None,
        };
        match lane.map(|l| &mut self.lanes[l]) {
            // A lane takes an event only in order (a later sequence number, so only its time can break it).
            Some(lane) if lane.back().is_none_or(|b| b.at <= at) => lane.push_back(e),
            _ => self.queue.push(e),
        }
    }

    /// The earliest event scheduled: where it is (`None`: the heap; `Some(l)`: lane `l`) and its time.
    fn earliest(&self) -> Option<(Option<usize>, u64)> {
        let mut best = self.queue.peek().map(|e| (None, e.at, e.seq));
        for (l, lane) in self.lanes.iter().enumerate() {
            if let Some(e) = lane.front() {
                if best.is_none_or(|(_, at, seq)| (e.at, e.seq) < (at, seq)) {
                    best = Some((Some(l), e.at, e.seq));
                }
            }
        }
        best.map(|(l, at, _)| (l, at))
    }

    /// Takes the earliest event scheduled.
    fn next_event(&mut self) -> Option<Entry> {
        match self.earliest()?.0 {
            None => self.queue.pop(),
            Some(l) => self.lanes[l].pop_front(),
        }
    }

    /// Puts the next request in the event queue once every event up to the previous request's time has run
    /// (dialogue's `Benchmark`: schedule request k, run the clock to its time, schedule request k+1). Streams
    /// are merged by time, the earlier-listed first on ties.
    fn queue_next_arrival(&mut self) {
        if self.arrival_queued
            || self
                .earliest()
                .is_some_and(|(_, at)| at <= self.last_arrival)
        {
            return;
        }
        let next = (0..self.streams.len())
            .filter(|&i| self.streams[i].left > 0)
            .min_by_key(|&i| (self.streams[i].next_at, i));
        if let Some(i) = next {
            let at = self.streams[i].next_at;
            self.at(at, Ev::Arrive(i));
            self.arrival_queued = true;
            self.last_arrival = at;
        }
    }

    /// Plays the scenario until the event queue is empty or the abort time.
    fn run(mut self) -> CellResult {
        for c in 0..self.clients.len() {
            let list = self.visible(c);
            if let Stack::Balancer { policy, .. } = &mut self.clients[c].stack {
                policy.set_servers(&list, 0);
            }
        }
        for (i, (t, _)) in self.s.actions.iter().enumerate() {
            self.at(*t, Ev::Act(i));
        }
        loop {
            self.queue_next_arrival();
            let Some(e) = self.next_event() else { break };
            if e.at > self.s.abort {
                break;
            }
            self.now = e.at;
            if !matches!(e.ev, Ev::CheckDone { .. }) {
                self.until = e.at;
            }
            match e.ev {
                Ev::Arrive(i) => self.arrive(i),
                Ev::ServerDone(a) => self.server_done(a),
                Ev::Refused(a) => self.deliver(a, Reply::Refused, None),
                Ev::Timeout(a) => {
                    if self.attempts[a].client_open {
                        self.deliver(a, Reply::Timeout, None);
                    }
                }
                Ev::Retry(r) => self.retry(r),
                Ev::QueueDeadline(r) => self.queue_deadline(r),
                Ev::Deadline(r) => self.deadline(r),
                Ev::CrashCheck(s, crossing) => self.crash_check(s, crossing),
                Ev::Recover(s) => {
                    self.servers[s].down = false;
                }
                Ev::Act(i) => self.act(i),
                Ev::CheckDone {
                    client,
                    server,
                    healthy,
                } => self.check_done(client, server, healthy),
            }
        }
        self.finish()
    }

    /// The chance that the best server for this request answers 2xx within the deadline, load ignored,
    /// over all the attempts the client may make.
    fn oracle(&self, endpoint: usize, bad: bool) -> f64 {
        if bad {
            return 0.0;
        }
        let deadline = self.s.clients.timeout.unwrap_or(u64::MAX);
        let best = self
            .servers
            .iter()
            .zip(&self.s.servers)
            .filter(|(st, _)| st.present && !st.draining)
            .map(|(_, spec)| {
                let b = spec.behavior(self.now, endpoint);
                let fastest = match b.latency {
                    Latency::Fixed(d) => d as f64,
                    Latency::Linear { base, capacity } => {
                        base as f64 * (1.0 + 1.0 / f64::from(capacity.max(1)))
                    }
                    Latency::Uniform { low, .. } => low as f64,
                    Latency::LogNormal { .. } => 0.0,
                    Latency::Never => f64::INFINITY,
                    Latency::Queue { median, sigma, .. } => {
                        if sigma == 0.0 {
                            median as f64
                        } else {
                            0.0
                        }
                    }
                } * spec.slowness;
                if fastest > deadline as f64 {
                    return 0.0;
                }
                match b.status {
                    StatusFn::Fixed(code) => f64::from(u8::from((200..300).contains(&code))),
                    StatusFn::Refuse => 0.0,
                    StatusFn::ErrorRate { code, p } if !(200..300).contains(&code) => 1.0 - p,
                    _ => 1.0,
                }
            })
            .fold(0.0, f64::max);
        let tries = 1 + self.s.clients.retries.map_or(0, |r| r.max);
        1.0 - (1.0 - best).powi(tries as i32)
    }

    /// The cell's figures once the run is over.
    fn finish(mut self) -> CellResult {
        let unfinished = self.out.sent - self.out.received;
        // Requests still open ran until the abort time; the servers held their attempts until then.
        let end = if unfinished > 0 {
            self.s.abort
        } else {
            self.until
        };
        self.out.server_held_ns = self.out.server_busy_ns;
        for at in &self.attempts {
            if at.server_open {
                self.out.server_held_ns += u128::from(end.saturating_sub(at.sent));
            }
        }
        if unfinished > 0 {
            self.out.codes.insert(RequestEnd::Unfinished, unfinished);
        }
        let n = self.latencies.len();
        if n > 0 {
            let sum: u128 = self.latencies.iter().map(|&l| u128::from(l)).sum();
            self.out.client_mean_ns = sum as f64 / n as f64;
            self.out.client_p99_ns = quantile(&mut self.latencies, 0.99);
        }
        let sent = self.out.sent.max(1) as f64;
        self.out.oracle_pct = (1000.0 * self.oracle_sum / sent).round() / 10.0;
        self.out.end_ns = end;
        let buckets = (end / self.out.bucket_ns + 1) as usize;
        for s in &mut self.out.series {
            for v in [&mut s.sent, &mut s.ended, &mut s.succeeded] {
                v.resize(buckets.max(v.len()), 0);
            }
        }
        self.out
    }
}
