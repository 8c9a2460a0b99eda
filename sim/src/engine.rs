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
//! (a FIFO queue when the policy says [`Refusal::Queue`], the scenario's retries, deadlines on queued
//! requests), or dialogue's whole client ([`DialogueClient`]), which keeps its own queues and limiters.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use weir::{
    overload::Criticality, overload::ThrottleConfig, subset::SplitMix64, Backoff, Rng, Throttle,
};

use crate::metrics::{quantile, CellResult, ServerSeries};
use crate::model::{
    Action, JavaSeeds, Latency, Retries, RetryBackoff, Scenario, Spacing, StatusFn, Subsetting, MS,
};
use crate::policy::baseline::dialogue::{self, DialogueClient, Effect, JavaRandom, Strategy};
use crate::policy::{Balance, Completion, LoadReport, Pick, Refusal, Reply, ServerId};

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

/// Utilization is reported against this many concurrent requests when the server's latency model names
/// no capacity (fixed latencies: a thread pool of 100, the SRE flow-control figure).
const DEFAULT_CAPACITY: f64 = 100.0;
/// Time constant of the qps/eps rates servers report.
const REPORT_TAU_NS: f64 = 1e9;
/// The answer to a request that is the caller's fault.
const BAD_REQUEST: (u16, u64) = (404, MS);

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
    ServerDone(usize),
    /// A refused connection reaches the client.
    Refused(usize),
    /// An attempt's deadline.
    Timeout(usize),
    /// A request's retry is due.
    Retry(usize),
    /// A queued request's deadline: if it is still queued, it ends as a timeout.
    QueueDeadline(usize),
    /// Has the server been over its crash threshold since `.1`-th crossing?
    CrashCheck(ServerId, u64),
    /// The server is back up.
    Recover(ServerId),
    /// Scenario action `.0`.
    Act(usize),
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
    /// Reported answers and errors per second, and when they were last decayed.
    qps: f64,
    eps: f64,
    rates_at: u64,
    capacity: f64,
    present: bool,
    draining: bool,
}

/// A client's retry state: the scenario's rule, its responsive backoff (if the rule uses one) and its
/// retry budget.
struct Retrier {
    rule: Option<Retries>,
    backoff: Option<Backoff>,
    budget: Option<Throttle>,
}

impl Retrier {
    fn new(rule: Option<Retries>) -> Self {
        Retrier {
            rule,
            backoff: rule.and_then(|r| match r.backoff {
                RetryBackoff::Responsive(c) => Backoff::new(c).ok(),
                RetryBackoff::Exponential { .. } => None,
            }),
            budget: rule.and_then(|r| r.budget).and_then(|b| {
                // Counts requests and retries; throttling itself is off (max_rejection 0).
                Throttle::new(ThrottleConfig {
                    max_rejection: 0.0,
                    ..b
                })
                .ok()
            }),
        }
    }

    /// A new request: the budget counts it.
    fn request(&mut self, now: u64, rng: &mut Rng) {
        if let Some(t) = &self.budget {
            let _ = t.allow(Criticality::Critical, now, rng);
        }
    }

    /// A try succeeded: the responsive backoff comes down.
    fn success(&mut self, rng: &mut Rng) {
        if let Some(b) = &self.backoff {
            b.on_success(rng);
        }
    }

    /// Try number `tries` failed with `reply` (`None`: the policy refused it, which a caller retries as a
    /// 503 when it retries at all): the delay before the retry, or `None` to give up. `draw` gives the
    /// per-request jitter.
    fn after_failure(
        &mut self,
        reply: Option<Reply>,
        tries: u32,
        now: u64,
        rng: &mut Rng,
        draw: &mut dyn FnMut(&mut Rng) -> f64,
    ) -> Option<u64> {
        let rule = self.rule?;
        let allowed = reply.is_none_or(|r| rule.retries(r));
        // The responsive backoff hears of every failure, retried or not.
        let responsive = self.backoff.as_ref().map(|b| b.on_failure(rng).ns);
        // The budget is asked only for a retry the rule allows (asking counts the retry).
        let go = allowed
            && tries <= rule.max
            && self
                .budget
                .as_ref()
                .is_none_or(|t| t.allow_retry(Criticality::Critical, now, rng).is_ok());
        if !go {
            return None;
        }
        match rule.backoff {
            RetryBackoff::Responsive(_) => responsive,
            RetryBackoff::Exponential { .. } if reply == Some(Reply::Status(308)) => Some(0),
            RetryBackoff::Exponential { slot } => {
                let slots = f64::from(1u32 << tries.clamp(1, 31).saturating_sub(1));
                Some((slot as f64 * draw(rng) * slots).round() as u64)
            }
        }
    }
}

/// The scenario's retry rule as dialogue's client asks it, its jitter from dialogue's shared generator.
struct DialogueRetry<'a> {
    retrier: &'a mut Retrier,
    rng: &'a mut Rng,
}

impl dialogue::Retry for DialogueRetry<'_> {
    fn after(&mut self, reply: Reply, tries: u32, now: u64, java: &mut JavaRandom) -> Option<u64> {
        if reply.is_success() {
            self.retrier.success(self.rng);
            return None;
        }
        self.retrier
            .after_failure(Some(reply), tries, now, self.rng, &mut |_| {
                java.next_double()
            })
    }
}

enum Stack {
    /// A balancer, with the FIFO queue this engine keeps when it says [`Refusal::Queue`].
    Balancer {
        policy: Box<dyn Balance>,
        queue: VecDeque<usize>,
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
}

struct Attempt {
    req: usize,
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
}

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
    servers: Vec<Server>,
    clients: Vec<Client>,
    requests: Vec<Request>,
    attempts: Vec<Attempt>,
    streams: Vec<Stream>,
    /// An arrival is in the event queue.
    arrival_queued: bool,
    /// The time of the last arrival put in the event queue.
    last_arrival: u64,
    /// dialogue's scenarios: the generator that assigns requests to (client, endpoint) pairs.
    chooser: Option<JavaRandom>,
    /// The generator every dialogue client shares.
    java: JavaRandom,
    fx: Vec<Effect>,
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
                Client {
                    stack,
                    rng: Rng::with_seed(derive(s.seed, 4, c as u64)),
                    servers: known,
                    retrier: Retrier::new(s.clients.retries),
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
            servers,
            clients,
            requests: Vec::new(),
            attempts: Vec::new(),
            streams,
            arrival_queued: false,
            last_arrival: 0,
            chooser: s.java.map(|j| JavaRandom::new(j.chooser)),
            java,
            fx: Vec::new(),
            latencies: Vec::new(),
            oracle_sum: 0.0,
            out: CellResult {
                sent: s.requests(),
                per_server_attempts: vec![0; n],
                series: vec![ServerSeries::default(); n],
                bucket_ns: s.bucket.max(1),
                ..CellResult::default()
            },
        }
    }

    fn at(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.queue.push(Entry {
            at,
            seq: self.seq,
            ev,
        });
    }

    /// Puts the next request in the event queue once every event up to the previous request's time has run
    /// (dialogue's `Benchmark`: schedule request k, run the clock to its time, schedule request k+1). Streams
    /// are merged by time, the earlier-listed first on ties.
    fn queue_next_arrival(&mut self) {
        if self.arrival_queued || self.queue.peek().is_some_and(|e| e.at <= self.last_arrival) {
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
            let Some(e) = self.queue.pop() else { break };
            if e.at > self.s.abort {
                break;
            }
            self.now = e.at;
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
                Ev::CrashCheck(s, crossing) => self.crash_check(s, crossing),
                Ev::Recover(s) => {
                    self.servers[s].down = false;
                }
                Ev::Act(i) => self.act(i),
            }
        }
        self.finish()
    }

    /// The servers client `c` may use now: its subset, minus servers not present.
    fn visible(&self, c: usize) -> Vec<ServerId> {
        self.clients[c]
            .servers
            .iter()
            .copied()
            .filter(|&s| self.servers[s].present)
            .collect()
    }

    fn arrive(&mut self, stream: usize) {
        self.arrival_queued = false;
        let a = self.s.arrivals[stream];
        let spec = self.s.clients;
        let st = &mut self.streams[stream];
        st.left -= 1;
        // dialogue's (client, endpoint) pairs, client-major; a sticky client's pairs are its sessions.
        let callers = spec.count.max(1);
        let endpoints = spec.endpoints.max(1);
        let pair = match (a.client, &mut self.chooser) {
            (Some(c), _) => c.min(callers - 1) * endpoints,
            (None, Some(chooser)) => chooser.next_int_below((callers * endpoints) as i32) as usize,
            (None, None) => st.rng.usize(..callers * endpoints),
        };
        let (caller, endpoint) = (pair / endpoints, pair % endpoints);
        let (client, session) = if spec.sticky {
            (0, Some(caller))
        } else {
            (caller, None)
        };
        let bad = a.bad > 0.0 && st.rng.f64() < a.bad;
        let cost = match a.heavy {
            Some((fraction, multiplier)) if st.rng.f64() < fraction => multiplier,
            _ => 1.0,
        };
        if st.left > 0 {
            let gap = match a.spacing {
                Spacing::Fixed(d) => d,
                Spacing::Poisson(mean) => (-(1.0 - st.rng.f64()).ln() * mean as f64) as u64,
            };
            st.next_at = self.now + gap;
        }
        let r = self.requests.len();
        self.requests.push(Request {
            client,
            endpoint,
            cost,
            bad,
            arrived: self.now,
            tries: 0,
            queued_at: 0,
        });
        self.oracle_sum += self.oracle(endpoint, bad);
        let cl = &mut self.clients[client];
        cl.retrier.request(self.now, &mut cl.rng);
        match &mut cl.stack {
            Stack::Balancer { .. } => self.attempt(r),
            Stack::Dialogue(d) => {
                let mut retry = DialogueRetry {
                    retrier: &mut cl.retrier,
                    rng: &mut cl.rng,
                };
                d.submit(
                    r,
                    endpoint,
                    session,
                    self.now,
                    &mut self.java,
                    &mut retry,
                    &mut self.fx,
                );
                self.apply();
            }
        }
    }

    /// Carries out what a dialogue client asked for.
    fn apply(&mut self) {
        let fx = std::mem::take(&mut self.fx);
        for e in &fx {
            match *e {
                Effect::Send { req, server, token } => self.send(
                    req,
                    Pick {
                        server,
                        lease: None,
                        tag: token,
                    },
                ),
                Effect::Finish { req, reply } => match reply {
                    Some(reply) => self.end_request(req, reply_name(reply), reply.is_success()),
                    None => {
                        self.out.fail_fast += 1;
                        self.end_request(req, "rejected".into(), false);
                    }
                },
                Effect::Wake { at, req } => self.at(at, Ev::Retry(req)),
            }
        }
        let mut fx = fx;
        fx.clear();
        self.fx = fx;
    }

    /// Request `r`'s retry is due.
    fn retry(&mut self, r: usize) {
        let cl = &mut self.clients[self.requests[r].client];
        match &mut cl.stack {
            Stack::Balancer { .. } => self.attempt(r),
            Stack::Dialogue(d) => {
                let mut retry = DialogueRetry {
                    retrier: &mut cl.retrier,
                    rng: &mut cl.rng,
                };
                d.wake(r, self.now, &mut self.java, &mut retry, &mut self.fx);
                self.apply();
            }
        }
    }

    fn queue_deadline(&mut self, r: usize) {
        let req = &self.requests[r];
        let deadline = req.queued_at + self.s.clients.timeout.unwrap_or(0);
        let Stack::Balancer { queue, .. } = &mut self.clients[req.client].stack else {
            return;
        };
        let i = queue.iter().position(|&q| q == r);
        // Only the deadline of its latest stay in the queue counts.
        if let Some(i) = i.filter(|_| deadline == self.now) {
            queue.remove(i);
            self.end_request(r, "timeout".into(), false);
        }
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

    /// Request `r` (new, or retrying) asks its balancer for a server: sends, fails fast, or queues. A
    /// request joins the back of a non-empty queue rather than jump it.
    fn attempt(&mut self, r: usize) {
        let c = self.requests[r].client;
        let client = &mut self.clients[c];
        let Stack::Balancer { policy, queue } = &mut client.stack else {
            return;
        };
        let pick = if queue.is_empty() {
            policy.pick(self.now, &mut client.rng)
        } else {
            None
        };
        match pick {
            Some(pick) => self.send(r, pick),
            None => match policy.on_refusal() {
                Refusal::FailFast => {
                    // A local refusal is a try like any other: retried (with backoff) when the client
                    // retries at all, as a caller treats a 503.
                    self.out.fail_fast += 1;
                    self.requests[r].tries += 1;
                    self.retry_or_end(r, None, "failfast".into());
                }
                Refusal::Wait { max_waiters }
                    if policy.no_nodes() || queue.len() >= max_waiters =>
                {
                    // The waiting acquire's own refusals: nothing in rotation, or the queue is full.
                    self.out.fail_fast += 1;
                    self.requests[r].tries += 1;
                    self.retry_or_end(r, None, "failfast".into());
                }
                refusal @ (Refusal::Queue | Refusal::Wait { .. }) => {
                    queue.push_back(r);
                    self.requests[r].queued_at = self.now;
                    // The attempt deadline bounds a wait in the engine's queue; a waiting weir client
                    // waits as dialogue's queue does, with no deadline of its own.
                    if let Some(t) = self.s.clients.timeout.filter(|_| refusal == Refusal::Queue) {
                        self.at(self.now + t, Ev::QueueDeadline(r));
                    }
                    self.drain(c);
                }
            },
        }
    }

    /// After a membership change of client `c`: a waiting client's queue is drained (a node may have come
    /// into rotation, as the core's waiting acquire does); the other clients wait for a completion.
    fn membership_drain(&mut self, c: usize) {
        if let Stack::Balancer { policy, .. } = &self.clients[c].stack {
            if matches!(policy.on_refusal(), Refusal::Wait { .. }) {
                self.drain(c);
            }
        }
    }

    /// Sends queued requests of client `c` in order until its balancer refuses one.
    fn drain(&mut self, c: usize) {
        loop {
            let client = &mut self.clients[c];
            let Stack::Balancer { policy, queue } = &mut client.stack else {
                return;
            };
            let Some(&q) = queue.front() else { return };
            let Some(pick) = policy.pick(self.now, &mut client.rng) else {
                return;
            };
            queue.pop_front();
            self.send(q, pick);
        }
    }

    fn send(&mut self, r: usize, pick: Pick) {
        let a = self.attempts.len();
        let sid = pick.server.min(self.servers.len() - 1);
        self.requests[r].tries += 1;
        self.out.server_attempts += 1;
        self.out.per_server_attempts[sid] += 1;
        let bucket = (self.now / self.out.bucket_ns) as usize;
        ServerSeries::bump(&mut self.out.series[sid].sent, bucket);
        let req = &self.requests[r];
        let spec = &self.s.servers[sid];
        let b = spec.behavior(self.now, req.endpoint);
        let refused = !req.bad && b.status == StatusFn::Refuse;
        let server = &mut self.servers[sid];
        let mut attempt = Attempt {
            req: r,
            server: sid,
            pick,
            sent: self.now,
            generation: server.generation,
            client_open: true,
            server_open: !(server.down || refused),
            status: None,
        };
        if server.down || refused {
            self.attempts.push(attempt);
            self.at(self.now, Ev::Refused(a));
            return;
        }
        server.active += 1;
        let latency = if req.bad {
            attempt.status = Some(BAD_REQUEST.0);
            Some(BAD_REQUEST.1)
        } else {
            let scale = req.cost * spec.slowness;
            let d = match b.latency {
                Latency::Fixed(d) => Some(d),
                Latency::Linear { base, capacity } => {
                    // dialogue's integer arithmetic: `base + base·active/capacity`, `5·base` beyond.
                    let cap = u64::from(capacity.max(1));
                    let active = u64::from(server.active);
                    Some(if active <= cap {
                        base.saturating_add(base.saturating_mul(active) / cap)
                    } else {
                        base.saturating_mul(5)
                    })
                }
                Latency::Uniform { low, high } => {
                    Some((low as f64 + server.rng.f64() * high.saturating_sub(low) as f64) as u64)
                }
                Latency::LogNormal { median, sigma } => {
                    Some((median as f64 * (sigma * normal(&mut server.rng)).exp()) as u64)
                }
                Latency::Never => None,
            };
            d.map(|d| {
                if scale == 1.0 {
                    d
                } else {
                    (d as f64 * scale).min(u64::MAX as f64 / 4.0) as u64
                }
            })
        };
        self.attempts.push(attempt);
        if let Some(d) = latency {
            self.at(self.now + d, Ev::ServerDone(a));
        }
        if let Some(t) = self.s.clients.timeout {
            self.at(self.now + t, Ev::Timeout(a));
        }
        self.crossed(sid);
    }

    /// Tracks the server's crash threshold after its load changed.
    fn crossed(&mut self, sid: ServerId) {
        let Some(crash) = self.s.servers[sid].crash else {
            return;
        };
        let server = &mut self.servers[sid];
        let over = server.active > crash.active_above;
        match (over, server.over_since) {
            (true, None) => {
                server.over_since = Some(self.now);
                server.crossing += 1;
                let crossing = server.crossing;
                self.at(self.now + crash.sustained, Ev::CrashCheck(sid, crossing));
            }
            (false, Some(_)) => {
                server.over_since = None;
                server.crossing += 1;
            }
            _ => {}
        }
    }

    fn crash_check(&mut self, sid: ServerId, crossing: u64) {
        let server = &mut self.servers[sid];
        if server.crossing != crossing || server.over_since.is_none() || server.down {
            return;
        }
        let Some(crash) = self.s.servers[sid].crash else {
            return;
        };
        server.down = true;
        server.generation += 1;
        server.active = 0;
        server.over_since = None;
        server.crossing += 1;
        self.at(self.now + crash.down_for, Ev::Recover(sid));
        // Every attempt the server held ends with a reset connection.
        let mut reset = Vec::new();
        for (a, at) in self.attempts.iter_mut().enumerate() {
            if at.server == sid && at.server_open {
                at.server_open = false;
                self.out.server_busy_ns += u128::from(self.now - at.sent);
                if at.client_open {
                    reset.push(a);
                }
            }
        }
        for a in reset {
            self.deliver(a, Reply::Refused, None);
        }
    }

    fn server_done(&mut self, a: usize) {
        let at = &self.attempts[a];
        let sid = at.server;
        let endpoint = self.requests[at.req].endpoint;
        let server = &mut self.servers[sid];
        if !at.server_open || at.generation != server.generation {
            return;
        }
        let code = match at.status {
            Some(code) => code,
            None => match self.s.servers[sid].behavior(at.sent, endpoint).status {
                StatusFn::Fixed(code) => code,
                StatusFn::ErrorRate { code, p } => {
                    // dialogue's `respond500AtRate`: `nextDouble() <= p` from the server's own Random.
                    let error = match &mut server.java {
                        Some(java) => java.next_double() <= p,
                        None => server.rng.f64() < p,
                    };
                    if error {
                        code
                    } else {
                        200
                    }
                }
                StatusFn::AboveCapacity { code, capacity } => {
                    if server.active > capacity {
                        code
                    } else {
                        200
                    }
                }
                StatusFn::OneMinuteRate { per_sec } => {
                    if server.meter.rate(self.now) < per_sec {
                        server.meter.mark(self.now);
                        200
                    } else {
                        429
                    }
                }
                StatusFn::Refuse => 200,
            },
        };
        let utilization = f64::from(server.active) / server.capacity;
        server.active -= 1;
        let dt = self.now.saturating_sub(server.rates_at) as f64;
        let decay = (-dt / REPORT_TAU_NS).exp();
        server.qps = server.qps * decay + 1e9 / REPORT_TAU_NS;
        server.eps = server.eps * decay
            + if code >= 500 || code == 429 {
                1e9 / REPORT_TAU_NS
            } else {
                0.0
            };
        server.rates_at = self.now;
        let report = LoadReport {
            utilization,
            qps: server.qps,
            eps: server.eps,
        };
        let at = &mut self.attempts[a];
        at.server_open = false;
        self.out.server_busy_ns += u128::from(self.now - at.sent);
        self.out.server_answers += 1;
        let open = at.client_open;
        self.crossed(sid);
        if open {
            self.deliver(a, Reply::Status(code), Some(report));
        }
    }

    /// The client learns how attempt `a` ended: tell its balancer, then retry, finish, and serve its queue
    /// (or hand it all to dialogue's client).
    fn deliver(&mut self, a: usize, reply: Reply, report: Option<LoadReport>) {
        let at = &mut self.attempts[a];
        at.client_open = false;
        let (r, sid, pick, sent) = (at.req, at.server, at.pick, at.sent);
        let bucket = (self.now / self.out.bucket_ns) as usize;
        let series = &mut self.out.series[sid];
        ServerSeries::bump(&mut series.ended, bucket);
        if reply.is_success() {
            ServerSeries::bump(&mut series.succeeded, bucket);
        }
        let c = self.requests[r].client;
        let done = Completion {
            reply,
            rtt_ns: self.now - sent,
            report,
        };
        let client = &mut self.clients[c];
        match &mut client.stack {
            Stack::Dialogue(d) => {
                let mut retry = DialogueRetry {
                    retrier: &mut client.retrier,
                    rng: &mut client.rng,
                };
                d.complete(
                    pick.tag,
                    reply,
                    self.now,
                    &mut self.java,
                    &mut retry,
                    &mut self.fx,
                );
                self.apply();
            }
            Stack::Balancer { policy, .. } => {
                policy.complete(pick, &done, self.now);
                if reply.is_success() {
                    client.retrier.success(&mut client.rng);
                    self.end_request(r, reply_name(reply), true);
                } else {
                    self.retry_or_end(r, Some(reply), reply_name(reply));
                }
                // Every completion gives queued requests another chance, in order.
                self.drain(c);
            }
        }
    }

    /// After a failed try of request `r` (an answer, or `None`: a refusal by the balancer): retries after
    /// the rule's delay, or ends it with `code`.
    fn retry_or_end(&mut self, r: usize, reply: Option<Reply>, code: String) {
        let tries = self.requests[r].tries;
        let client = &mut self.clients[self.requests[r].client];
        let delay =
            client
                .retrier
                .after_failure(reply, tries, self.now, &mut client.rng, &mut |rng| {
                    rng.f64()
                });
        match delay {
            Some(delay) => self.at(self.now + delay, Ev::Retry(r)),
            None => self.end_request(r, code, false),
        }
    }

    fn end_request(&mut self, r: usize, code: String, success: bool) {
        self.out.received += 1;
        if success {
            self.out.succeeded += 1;
        }
        self.latencies.push(self.now - self.requests[r].arrived);
        *self.out.codes.entry(code).or_insert(0) += 1;
    }

    fn act(&mut self, i: usize) {
        let (_, action) = self.s.actions[i];
        match action {
            Action::Add(s) | Action::Remove(s) => {
                self.servers[s].present = matches!(action, Action::Add(_));
                for c in 0..self.clients.len() {
                    if self.clients[c].servers.contains(&s) {
                        let list = self.visible(c);
                        match &mut self.clients[c].stack {
                            Stack::Balancer { policy, .. } => policy.set_servers(&list, self.now),
                            Stack::Dialogue(d) => d.set_servers(&uri_order(self.s, &list)),
                        }
                        self.membership_drain(c);
                    }
                }
            }
            Action::Drain(s, on) => {
                self.servers[s].draining = on;
                for c in 0..self.clients.len() {
                    let cl = &mut self.clients[c];
                    if cl.servers.contains(&s) {
                        match &mut cl.stack {
                            Stack::Balancer { policy, .. } => policy.set_draining(s, on, self.now),
                            Stack::Dialogue(d) => d.set_draining(s, on),
                        }
                        self.membership_drain(c);
                    }
                }
            }
        }
    }

    fn finish(mut self) -> CellResult {
        let unfinished = self.out.sent - self.out.received;
        // Requests still open ran until the abort time; the servers held their attempts until then.
        let end = if unfinished > 0 {
            self.s.abort
        } else {
            self.now
        };
        self.out.server_held_ns = self.out.server_busy_ns;
        for at in &self.attempts {
            if at.server_open {
                self.out.server_held_ns += u128::from(end.saturating_sub(at.sent));
            }
        }
        if unfinished > 0 {
            self.out.codes.insert("unfinished".into(), unfinished);
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

/// A dialogue client's URI list: `servers` in the order a `java.util.HashMap` keyed by their names
/// iterates them (dialogue's simulation builds each client's URIs from such a map).
fn uri_order(s: &Scenario, servers: &[ServerId]) -> Vec<ServerId> {
    let names: Vec<&str> = servers
        .iter()
        .map(|&i| s.servers[i].name.as_str())
        .collect();
    dialogue::java::hash_map_order(&names)
        .into_iter()
        .map(|i| servers[i])
        .collect()
}

/// Codahale's `Meter`, its one-minute rate only: marks are counted, and every whole 5 s tick since the
/// last one (caught up when the meter is next read or marked) folds the tick's count, as a rate, into an
/// exponentially weighted average with `alpha = 1 − e^(−5/60)`; the first tick sets the average outright.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct OneMinuteRate {
    /// Per nanosecond.
    rate: f64,
    initialized: bool,
    uncounted: u64,
    last_tick: u64,
}

impl OneMinuteRate {
    const TICK_NS: u64 = 5_000_000_000;

    fn tick_if_necessary(&mut self, now: u64) {
        let age = now.saturating_sub(self.last_tick);
        if age <= Self::TICK_NS {
            return;
        }
        self.last_tick = now - age % Self::TICK_NS;
        let alpha = 1.0 - (-5.0f64 / 60.0).exp();
        for _ in 0..age / Self::TICK_NS {
            let instant = self.uncounted as f64 / Self::TICK_NS as f64;
            self.uncounted = 0;
            if self.initialized {
                self.rate += alpha * (instant - self.rate);
            } else {
                self.rate = instant;
                self.initialized = true;
            }
            if self.rate == 0.0 && self.initialized {
                // Every further tick leaves it at zero.
                break;
            }
        }
    }

    /// The one-minute rate, per second, at `now`.
    fn rate(&mut self, now: u64) -> f64 {
        self.tick_if_necessary(now);
        self.rate * 1e9
    }

    fn mark(&mut self, now: u64) {
        self.tick_if_necessary(now);
        self.uncounted += 1;
    }
}

/// A standard normal draw (Box-Muller, one of the pair).
fn normal(rng: &mut Rng) -> f64 {
    let u = 1.0 - rng.f64();
    let v = rng.f64();
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// The concurrency a server's utilization is reported against: its latency model's capacity, else its
/// overload status's, else its crash threshold's, else [`DEFAULT_CAPACITY`].
fn nominal_capacity(spec: &crate::model::ServerSpec) -> f64 {
    let b = spec.behavior(0, 0);
    let c = match (b.latency, b.status, spec.crash) {
        (Latency::Linear { capacity, .. }, _, _) => f64::from(capacity),
        (_, StatusFn::AboveCapacity { capacity, .. }, _) => f64::from(capacity),
        (_, _, Some(c)) => f64::from(c.active_above),
        _ => DEFAULT_CAPACITY,
    };
    c.max(1.0)
}

fn reply_name(reply: Reply) -> String {
    match reply {
        Reply::Status(s) => s.to_string(),
        Reply::Refused => "reset".into(),
        Reply::Timeout => "timeout".into(),
    }
}
