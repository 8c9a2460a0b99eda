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

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use weir::{
    overload::Criticality, overload::ThrottleConfig, subset::SplitMix64, Backoff, Rng, Throttle,
};

use crate::metrics::{quantile, CellResult, ServerSeries};
use crate::model::{Action, Latency, Scenario, Spacing, StatusFn, Subsetting, MS};
use crate::policy::{Balance, Completion, LoadReport, Pick, Refusal, Reply, ServerId};

/// Builds client `client`'s policy; `seed` is that client's own seed.
pub type MakePolicy<'a> = &'a dyn Fn(usize, u64) -> Box<dyn Balance>;

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
    /// Rate limiter's average of accepted requests per second, and when it was last decayed.
    limited_rate: f64,
    limited_at: u64,
    /// Reported answers and errors per second, and when they were last decayed.
    qps: f64,
    eps: f64,
    rates_at: u64,
    capacity: f64,
    present: bool,
    draining: bool,
}

struct Client {
    policy: Box<dyn Balance>,
    rng: Rng,
    servers: Vec<ServerId>,
    queue: VecDeque<usize>,
    backoff: Option<Backoff>,
    budget: Option<Throttle>,
}

struct Request {
    client: usize,
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

/// Runs `scenario` with every client's balancer built by `make`, and returns the figures.
pub fn run(scenario: &Scenario, make: MakePolicy<'_>) -> CellResult {
    Engine::new(scenario, make).run()
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
    /// Requests still to come per stream, and the stream's generator.
    streams: Vec<(u64, Rng)>,
    latencies: Vec<u64>,
    oracle_sum: f64,
    out: CellResult,
}

impl<'s> Engine<'s> {
    fn new(s: &'s Scenario, make: MakePolicy<'_>) -> Self {
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
                limited_rate: 0.0,
                limited_at: 0,
                qps: 0.0,
                eps: 0.0,
                rates_at: 0,
                capacity: nominal_capacity(spec),
                present: spec.present,
                draining: false,
            })
            .collect();
        let all: Vec<ServerId> = (0..s.servers.len()).collect();
        let mut scratch = all.clone();
        let mut subset_rng = Rng::with_seed(derive(s.seed, 2, 0));
        let clients = (0..s.clients.count)
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
                let retries = s.clients.retries;
                Client {
                    policy: make(c, derive(s.seed, 3, c as u64)),
                    rng: Rng::with_seed(derive(s.seed, 4, c as u64)),
                    servers: known,
                    queue: VecDeque::new(),
                    backoff: retries.and_then(|r| Backoff::new(r.backoff).ok()),
                    budget: retries.and_then(|r| r.budget).and_then(|b| {
                        Throttle::new(ThrottleConfig {
                            max_rejection: 0.0,
                            ..b
                        })
                        .ok()
                    }),
                }
            })
            .collect();
        let streams = s
            .arrivals
            .iter()
            .enumerate()
            .map(|(i, a)| (a.count, Rng::with_seed(derive(s.seed, 5, i as u64))))
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

    fn run(mut self) -> CellResult {
        for c in 0..self.clients.len() {
            let list = self.visible(c);
            self.clients[c].policy.set_servers(&list, 0);
        }
        for (i, a) in self.s.arrivals.iter().enumerate() {
            if a.count > 0 {
                self.at(a.start, Ev::Arrive(i));
            }
        }
        for (i, (t, _)) in self.s.actions.iter().enumerate() {
            self.at(*t, Ev::Act(i));
        }
        while let Some(e) = self.queue.pop() {
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
                Ev::Retry(r) => self.attempt(r),
                Ev::QueueDeadline(r) => {
                    let req = &self.requests[r];
                    let deadline = req.queued_at + self.s.clients.timeout.unwrap_or(0);
                    let queue = &mut self.clients[req.client].queue;
                    let i = queue.iter().position(|&q| q == r);
                    // Only the deadline of its latest stay in the queue counts.
                    if let Some(i) = i.filter(|_| deadline == self.now) {
                        queue.remove(i);
                        self.end_request(r, "timeout".into(), false);
                    }
                }
                Ev::CrashCheck(s, crossing) => self.crash_check(s, crossing),
                Ev::Recover(s) => {
                    self.servers[s].down = false;
                }
                Ev::Act(i) => self.act(i),
            }
        }
        self.finish()
    }

    /// The endpoint client `c` calls (dialogue's client x endpoint pairs).
    fn endpoint(&self, c: usize) -> usize {
        c % self.s.clients.endpoints.max(1)
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
        let a = self.s.arrivals[stream];
        let (left, rng) = &mut self.streams[stream];
        *left -= 1;
        let client = match a.client {
            Some(c) => c.min(self.clients.len() - 1),
            None => rng.usize(..self.clients.len()),
        };
        let bad = a.bad > 0.0 && rng.f64() < a.bad;
        let cost = match a.heavy {
            Some((fraction, multiplier)) if rng.f64() < fraction => multiplier,
            _ => 1.0,
        };
        if *left > 0 {
            let gap = match a.spacing {
                Spacing::Fixed(d) => d,
                Spacing::Poisson(mean) => (-(1.0 - rng.f64()).ln() * mean as f64) as u64,
            };
            self.at(self.now + gap, Ev::Arrive(stream));
        }
        let r = self.requests.len();
        self.requests.push(Request {
            client,
            cost,
            bad,
            arrived: self.now,
            tries: 0,
            queued_at: 0,
        });
        self.oracle_sum += self.oracle(client, bad);
        let cl = &mut self.clients[client];
        if let Some(t) = &cl.budget {
            // Counts the request for the retry budget; throttling itself is off (max_rejection 0).
            let _ = t.allow(Criticality::Critical, self.now, &mut cl.rng);
        }
        self.attempt(r);
    }

    /// The chance that the best server for this request answers 2xx within the deadline, load ignored,
    /// over all the attempts the client may make.
    fn oracle(&self, client: usize, bad: bool) -> f64 {
        if bad {
            return 0.0;
        }
        let endpoint = self.endpoint(client);
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

    /// Asks request `r`'s client for a server and sends an attempt, or fails fast, or queues.
    fn attempt(&mut self, r: usize) {
        let c = self.requests[r].client;
        let client = &mut self.clients[c];
        match client.policy.pick(self.now, &mut client.rng) {
            Some(pick) => self.send(r, pick),
            None => match client.policy.on_refusal() {
                Refusal::FailFast => {
                    // A local refusal is a try like any other: retried (with backoff) when the client
                    // retries at all, as a caller treats a 503.
                    self.out.fail_fast += 1;
                    self.requests[r].tries += 1;
                    self.retry_or_end(r, true, "failfast".into());
                }
                Refusal::Queue => {
                    client.queue.push_back(r);
                    self.requests[r].queued_at = self.now;
                    if let Some(t) = self.s.clients.timeout {
                        self.at(self.now + t, Ev::QueueDeadline(r));
                    }
                }
            },
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
        let b = spec.behavior(self.now, self.endpoint(req.client));
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
            if let StatusFn::RateLimit { per_sec, tau } = b.status {
                let dt = self.now.saturating_sub(server.limited_at) as f64;
                let tau = tau.max(1) as f64;
                server.limited_rate *= (-dt / tau).exp();
                server.limited_at = self.now;
                if server.limited_rate < per_sec {
                    server.limited_rate += 1e9 / tau;
                    attempt.status = Some(200);
                } else {
                    attempt.status = Some(429);
                }
            }
            let scale = req.cost * spec.slowness;
            let d = match b.latency {
                Latency::Fixed(d) => Some(d as f64),
                Latency::Linear { base, capacity } => {
                    let cap = f64::from(capacity.max(1));
                    let active = f64::from(server.active);
                    Some(if active <= cap {
                        base as f64 * (1.0 + active / cap)
                    } else {
                        5.0 * base as f64
                    })
                }
                Latency::Uniform { low, high } => {
                    Some(low as f64 + server.rng.f64() * high.saturating_sub(low) as f64)
                }
                Latency::LogNormal { median, sigma } => {
                    Some(median as f64 * (sigma * normal(&mut server.rng)).exp())
                }
                Latency::Never => None,
            };
            d.map(|d| (d * scale).min(u64::MAX as f64 / 4.0) as u64)
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
        let endpoint = self.endpoint(self.requests[at.req].client);
        let server = &mut self.servers[sid];
        if !at.server_open || at.generation != server.generation {
            return;
        }
        let code = match at.status {
            Some(code) => code,
            None => match self.s.servers[sid].behavior(at.sent, endpoint).status {
                StatusFn::Fixed(code) => code,
                StatusFn::ErrorRate { code, p } => {
                    if server.rng.f64() < p {
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
                StatusFn::RateLimit { .. } | StatusFn::Refuse => 200,
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
        let open = at.client_open;
        self.crossed(sid);
        if open {
            self.deliver(a, Reply::Status(code), Some(report));
        }
    }

    /// The client learns how attempt `a` ended: tell its policy, then retry, finish, and serve its queue.
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
        client.policy.complete(pick, &done, self.now);
        if reply.is_success() {
            if let Some(b) = &client.backoff {
                b.on_success(&mut client.rng);
            }
            self.end_request(r, reply_name(reply), true);
        } else {
            let allowed = reply.is_retryable()
                && self
                    .s
                    .clients
                    .retries
                    .is_some_and(|rule| rule.retries(reply));
            self.retry_or_end(r, allowed, reply_name(reply));
        }
        // dialogue's queue: every completion gives queued requests another chance, in order.
        while let Some(&q) = self.clients[c].queue.front() {
            let client = &mut self.clients[c];
            let Some(pick) = client.policy.pick(self.now, &mut client.rng) else {
                break;
            };
            client.queue.pop_front();
            self.send(q, pick);
        }
    }

    /// After a failed try of request `r` (an answer, or a refusal by the policy): backs off and retries if
    /// `allowed` by the rule, the request has tries left and the budget agrees; else ends it with `code`.
    fn retry_or_end(&mut self, r: usize, allowed: bool, code: String) {
        let c = self.requests[r].client;
        let client = &mut self.clients[c];
        if let Some(b) = &client.backoff {
            let delay = b.on_failure(&mut client.rng).ns;
            let max = self.s.clients.retries.map_or(0, |rule| rule.max);
            // The budget is asked only for a retry the rule allows (asking counts the retry).
            if allowed
                && self.requests[r].tries <= max
                && client.budget.as_ref().is_none_or(|t| {
                    t.allow_retry(Criticality::Critical, self.now, &mut client.rng)
                        .is_ok()
                })
            {
                self.at(self.now + delay, Ev::Retry(r));
                return;
            }
        }
        self.end_request(r, code, false);
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
                        self.clients[c].policy.set_servers(&list, self.now);
                    }
                }
            }
            Action::Drain(s, on) => {
                self.servers[s].draining = on;
                for c in &mut self.clients {
                    if c.servers.contains(&s) {
                        c.policy.set_draining(s, on, self.now);
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
        for at in &self.attempts {
            if at.server_open {
                self.out.server_busy_ns += u128::from(end.saturating_sub(at.sent));
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
