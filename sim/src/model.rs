//! What a scenario is made of: servers with time-varying behaviour, clients with their arrivals, timeouts
//! and retries, and membership changes. Plain data; [`crate::engine`] gives it life.

use crate::policy::ServerId;

/// One millisecond in virtual nanoseconds.
pub const MS: u64 = 1_000_000;
/// One second in virtual nanoseconds.
pub const SEC: u64 = 1_000_000_000;
/// One minute in virtual nanoseconds.
pub const MIN: u64 = 60 * SEC;

/// How long a server takes to answer a request. Every figure is scaled by the request's cost multiplier.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Latency {
    /// Always this long.
    Fixed(u64),
    /// dialogue's contention model: `base × (1 + active / capacity)` while `active <= capacity`, `5 × base`
    /// beyond, where `active` counts the requests in progress including this one (`linearResponseTime` in
    /// dialogue's [`SimulationServer`](https://github.com/palantir/dialogue/blob/381f98f7015a5fb3582f46b396002c9779739b0a/simulation/src/main/java/com/palantir/dialogue/core/SimulationServer.java)).
    Linear {
        /// Latency of a lone request (almost: `base × (1 + 1/capacity)`).
        base: u64,
        /// Requests in progress at which the latency has doubled.
        capacity: u32,
    },
    /// Uniform in `[low, high]`.
    Uniform {
        /// Shortest.
        low: u64,
        /// Longest.
        high: u64,
    },
    /// Log-normal with this median and shape `sigma` (a long right tail, like real services).
    LogNormal {
        /// Median latency.
        median: u64,
        /// Standard deviation of the latency's logarithm.
        sigma: f64,
    },
    /// Accepts the request and never answers (a black hole): only a client timeout ends the attempt.
    Never,
    /// A queueing server: `workers` requests are served at once, each for a log-normal service time with
    /// this `median` and shape `sigma` (0: always the median); the others wait in a FIFO queue, so that
    /// past `workers` in progress the latency grows with the queue. A request's latency is its wait plus
    /// its service.
    Queue {
        /// Requests served at once.
        workers: u32,
        /// Median service time.
        median: u64,
        /// Standard deviation of the service time's logarithm (0: fixed).
        sigma: f64,
    },
}

impl Latency {
    /// The requests in progress a server with this latency handles before its latency rises sharply: the
    /// contention model's `capacity`, the queue's `workers`; `None` for the models without one.
    pub fn capacity(&self) -> Option<u32> {
        match *self {
            Latency::Linear { capacity, .. } => Some(capacity),
            Latency::Queue { workers, .. } => Some(workers),
            _ => None,
        }
    }
}

/// The status a server answers with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StatusFn {
    /// Always this status.
    Fixed(u16),
    /// `code` with probability `p`, else 200 (the server's own seeded generator).
    ErrorRate {
        /// The error status.
        code: u16,
        /// Its probability, in [0, 1].
        p: f64,
    },
    /// `code` when more than `capacity` requests are in progress at completion (including this one),
    /// else 200: dialogue's `200UntilCapacity`, evaluated at completion time.
    AboveCapacity {
        /// The overload status.
        code: u16,
        /// Requests in progress the server handles well.
        capacity: u32,
    },
    /// The connection is refused at once (the process is down; clients see a reset, not a status).
    Refuse,
    /// A server-side rate limit, decided at completion (dialogue's `server_side_rate_limits`): 200 while the
    /// one-minute rate of a Codahale `Meter` of the server's accepted requests is below `per_sec` (the
    /// request is then marked in it), else 429. The meter's rate is Codahale's: an exponentially weighted
    /// average updated every 5 s from the marks of the last 5 s.
    OneMinuteRate {
        /// Accepted requests per second the server allows.
        per_sec: f64,
    },
}

/// A server's behaviour for one endpoint during one phase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Behavior {
    /// How long it takes.
    pub latency: Latency,
    /// What it answers.
    pub status: StatusFn,
}

impl Behavior {
    /// 200 after a fixed delay.
    pub const fn ok(latency: u64) -> Behavior {
        Behavior {
            latency: Latency::Fixed(latency),
            status: StatusFn::Fixed(200),
        }
    }

    /// `code` after a fixed delay.
    pub const fn status(code: u16, latency: u64) -> Behavior {
        Behavior {
            latency: Latency::Fixed(latency),
            status: StatusFn::Fixed(code),
        }
    }

    /// 200 with dialogue's linear contention latency.
    pub const fn linear(base: u64, capacity: u32) -> Behavior {
        Behavior {
            latency: Latency::Linear { base, capacity },
            status: StatusFn::Fixed(200),
        }
    }

    /// A server that refuses connections (down, fast-failing).
    pub const DOWN: Behavior = Behavior {
        latency: Latency::Fixed(0),
        status: StatusFn::Refuse,
    };

    /// The same latency with another status function.
    pub const fn with_status(self, status: StatusFn) -> Behavior {
        Behavior {
            latency: self.latency,
            status,
        }
    }
}

/// From `from` on, requests *arriving* at the server get `endpoints[e]` (requests of an endpoint past the
/// end get the last entry). dialogue's `.until(t)` cut-overs, as a list.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    /// Virtual time the phase starts.
    pub from: u64,
    /// Behaviour per endpoint.
    pub endpoints: Vec<Behavior>,
}

/// A crash under sustained overload: once more than `active_above` requests have been in progress for
/// `sustained` without a break, the server crashes: every request in progress ends with a reset connection,
/// new connections are refused, and it comes back empty `down_for` later.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Crash {
    /// In-progress requests the server survives.
    pub active_above: u32,
    /// How long it survives more.
    pub sustained: u64,
    /// How long it stays down.
    pub down_for: u64,
}

/// One backend.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerSpec {
    /// Name in the report and charts.
    pub name: String,
    /// Behaviour over time; the first phase starts at 0.
    pub phases: Vec<Phase>,
    /// Latency multiplier of this machine (1 = nominal; 2 = half as fast).
    pub slowness: f64,
    /// Crash rule, if the server can fall over.
    pub crash: Option<Crash>,
    /// Whether clients know the server from the start (else an [`Action::Add`] brings it in).
    pub present: bool,
    /// Load shedding: while at least this many requests are in progress, a new one is answered 503 at
    /// once, without service (a server protecting itself).
    pub shed_above: Option<u32>,
}

impl ServerSpec {
    /// A server that behaves as `b` for every endpoint from the start.
    pub fn new(name: impl Into<String>, b: Behavior) -> ServerSpec {
        ServerSpec {
            name: name.into(),
            phases: vec![Phase {
                from: 0,
                endpoints: vec![b],
            }],
            slowness: 1.0,
            crash: None,
            present: true,
            shed_above: None,
        }
    }

    /// From `from` on, behaves as `b` for every endpoint.
    pub fn then(mut self, from: u64, b: Behavior) -> ServerSpec {
        self.phases.push(Phase {
            from,
            endpoints: vec![b],
        });
        self
    }

    /// From `from` on, behaves as `endpoints[e]` for endpoint `e`.
    pub fn then_per_endpoint(mut self, from: u64, endpoints: Vec<Behavior>) -> ServerSpec {
        self.phases.push(Phase { from, endpoints });
        self
    }

    /// With a crash rule.
    pub fn crashing(mut self, crash: Crash) -> ServerSpec {
        self.crash = Some(crash);
        self
    }

    /// With a latency multiplier.
    pub fn slowness(mut self, slowness: f64) -> ServerSpec {
        self.slowness = slowness;
        self
    }

    /// Unknown to clients until an [`Action::Add`].
    pub fn absent(mut self) -> ServerSpec {
        self.present = false;
        self
    }

    /// Sheds (answers 503 at once) while `limit` requests are in progress.
    pub fn shedding(mut self, limit: u32) -> ServerSpec {
        self.shed_above = Some(limit);
        self
    }

    /// The behaviour for a request of `endpoint` arriving at `t`.
    pub fn behavior(&self, t: u64, endpoint: usize) -> &Behavior {
        let i = self
            .phases
            .partition_point(|p| p.from <= t)
            .saturating_sub(1);
        let endpoints = &self.phases[i].endpoints;
        &endpoints[endpoint.min(endpoints.len() - 1)]
    }
}

/// When requests arrive (all clients together; each request goes to a uniformly random client, as in
/// dialogue's simulator, unless the stream names one).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Arrivals {
    /// Time of the first request.
    pub start: u64,
    /// Number of requests.
    pub count: u64,
    /// Spacing between requests.
    pub spacing: Spacing,
    /// The client that sends every request of this stream (`None`: a random client per request).
    pub client: Option<usize>,
    /// Fraction of the stream's requests that are the caller's fault (the server answers them 404 in 1 ms).
    pub bad: f64,
    /// `(fraction, multiplier)`: that fraction of the requests costs `multiplier` times the normal latency
    /// (mixed-cost queries).
    pub heavy: Option<(f64, f64)>,
}

/// Spacing of a request stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Spacing {
    /// Exactly this many nanoseconds apart (dialogue).
    Fixed(u64),
    /// Exponentially distributed gaps with this mean (a Poisson process).
    Poisson(u64),
}

impl Arrivals {
    /// `rps` requests per second, evenly spaced, for `duration`, from 0 (dialogue's arrivals).
    pub fn steady(rps: f64, duration: u64) -> Arrivals {
        // dialogue's `Benchmark`: a whole-nanosecond interval, then `duration / interval` requests.
        let spacing = ((SEC as f64 / rps) as u64).max(1);
        Arrivals {
            start: 0,
            count: duration / spacing,
            spacing: Spacing::Fixed(spacing),
            client: None,
            bad: 0.0,
            heavy: None,
        }
    }

    /// A Poisson process of `rps` per second for `duration`, from 0.
    pub fn poisson(rps: f64, duration: u64) -> Arrivals {
        Arrivals {
            spacing: Spacing::Poisson((SEC as f64 / rps) as u64),
            ..Arrivals::steady(rps, duration)
        }
    }

    /// `count` requests `spacing` apart from `start`.
    pub fn burst(start: u64, count: u64, spacing: u64) -> Arrivals {
        Arrivals {
            start,
            count,
            spacing: Spacing::Fixed(spacing),
            client: None,
            bad: 0.0,
            heavy: None,
        }
    }
}

/// Retries after a failed try. The rule is the scenario's: every policy's client follows it (dialogue's
/// scenarios retry as dialogue's `RetryingChannel` does, for every client).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Retries {
    /// Retries per request at most.
    pub max: u32,
    /// The delay before each retry.
    pub backoff: RetryBackoff,
    /// The retry budget: weir's throttle, whose `retry_ratio` caps retries as a fraction of requests.
    pub budget: Option<weir::overload::ThrottleConfig>,
    /// Which replies are retried.
    pub on: RetryOn,
}

/// The delay before a retry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RetryBackoff {
    /// dialogue's `RetryingChannel`, per request: before retry `n`, `round(slot × U × 2^(n−1))` with `U`
    /// uniform in [0, 1) (full jitter, no cap: at most 4 retries make at most 8 slots), and none after a 308.
    /// dialogue draws `U` from its shared generator; other clients from their own.
    Exponential {
        /// The backoff slot (dialogue: 250 ms).
        slot: u64,
    },
    /// weir's responsive backoff, one per client, shared by its requests: it also comes down after
    /// successes.
    Responsive(weir::backoff::BackoffConfig),
}

/// Which failed tries a client retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryOn {
    /// dialogue's `RetryingChannel`: 308, 429 and 503 (QoS statuses), 500 only for a safe method (GET,
    /// HEAD, OPTIONS), a reset or refused connection (an `IOException`); not a read timeout, not another
    /// 5xx, not a 4xx.
    Dialogue {
        /// The endpoint's method is GET, HEAD or OPTIONS.
        safe_method: bool,
    },
    /// Every 5xx, 429, reset and timeout.
    Retryable,
}

impl Retries {
    /// Whether this rule retries `reply`.
    pub fn retries(&self, reply: crate::policy::Reply) -> bool {
        use crate::policy::Reply;
        match self.on {
            RetryOn::Retryable => reply.is_retryable(),
            RetryOn::Dialogue { safe_method } => match reply {
                Reply::Status(308 | 429 | 503) | Reply::Refused => true,
                Reply::Status(500) => safe_method,
                Reply::Status(_) | Reply::Timeout => false,
            },
        }
    }
}

/// How clients pick their subset of the servers (SRE ch. 20).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subsetting {
    /// Every client knows every server.
    None,
    /// weir's deterministic subsetting with subsets of this size.
    Deterministic(usize),
    /// A random subset of this size per client.
    Random(usize),
}

/// The clients of a scenario.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientSpec {
    /// Number of independent clients, each with its own balancer.
    pub count: usize,
    /// Endpoints each client calls: a request goes to a uniformly random (client, endpoint) pair, as in
    /// dialogue's simulation, and a client's balancer serves all its endpoints.
    pub endpoints: usize,
    /// The clients are sticky sessions of one client process (dialogue's `stickyChannels()` of one
    /// `DialogueChannel`): dialogue pins each session's requests to the host of its first answer, with a
    /// limiter and a queue per session; every other policy serves all sessions with one balancer.
    pub sticky: bool,
    /// A deadline per attempt, after which the client gives up on it (and reports a timeout).
    pub timeout: Option<u64>,
    /// A deadline per request, from its arrival: the user's deadline. It covers the whole request (time
    /// in any queue, every attempt and every retry's backoff), for every policy: when it passes, the
    /// request ends as a timeout, an attempt still open is abandoned (its balancer is told it timed out)
    /// and a queued one leaves its queue.
    pub deadline: Option<u64>,
    /// Retry rule, if any.
    pub retries: Option<Retries>,
    /// Subsetting.
    pub subset: Subsetting,
}

impl ClientSpec {
    /// `count` clients of one endpoint, no timeout, no retries, no subsetting.
    pub const fn plain(count: usize) -> ClientSpec {
        ClientSpec {
            count,
            endpoints: 1,
            sticky: false,
            timeout: None,
            deadline: None,
            retries: None,
            subset: Subsetting::None,
        }
    }
}

/// A membership change, applied to every client at its time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Clients learn of the server (it must not be present already).
    Add(ServerId),
    /// Clients forget the server; its requests in progress still finish.
    Remove(ServerId),
    /// Lame duck on or off: no new requests; those in progress finish.
    Drain(ServerId, bool),
}

/// A fault a scenario injects into one server from `from` to `to`: what the recovery and ramp-back
/// measures are taken after (see [`Scenario::fault_windows`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// The server, or `None` for a fault of the whole fleet (a load step).
    pub server: Option<ServerId>,
    /// When it starts.
    pub from: u64,
    /// When it ends.
    pub to: u64,
}

/// A named, documented failure scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Name (a command-line argument: lowercase with underscores).
    pub name: String,
    /// What it shows and where it comes from.
    pub about: String,
    /// The backends.
    pub servers: Vec<ServerSpec>,
    /// The clients.
    pub clients: ClientSpec,
    /// The request streams.
    pub arrivals: Vec<Arrivals>,
    /// Membership changes, by time.
    pub actions: Vec<(u64, Action)>,
    /// The run stops here even if requests are unfinished (they count as sent, not received).
    pub abort: u64,
    /// Width of the charts' time buckets.
    pub bucket: u64,
    /// Seed of every generator in the run.
    pub seed: u64,
    /// dialogue's scenarios: the seeds of its simulation's `java.util.Random` generators (see [`JavaSeeds`]).
    pub java: Option<JavaSeeds>,
    /// Why the policies cannot be compared on this scenario, if they cannot: the summary then gives no
    /// verdict.
    pub not_comparable: Option<String>,
    /// The faults the measures are taken after; empty: derived from the servers' phases and the
    /// membership actions (see [`Scenario::fault_windows`]).
    pub faults: Vec<Fault>,
    /// Whether the scenario belongs to the at-capacity family (its own table and goals in the report).
    pub at_capacity: bool,
}

/// The seeds of dialogue's simulation, whose generators a dialogue scenario reproduces draw for draw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JavaSeeds {
    /// The one generator every dialogue client draws its shuffles, pins and retry jitter from
    /// (`Simulation.random`, 3218974678).
    pub shared: i64,
    /// The generator that assigns each request to a (client, endpoint) pair with `nextInt(pairs)`
    /// (`Benchmark`, 21876781263).
    pub chooser: i64,
    /// The generator of each server's random errors (`respond500AtRate`: a `new Random(4)` per server,
    /// 500 when `nextDouble() <= p`).
    pub server: i64,
}

impl JavaSeeds {
    /// The seeds of dialogue's own report.
    pub const DIALOGUE: JavaSeeds = JavaSeeds {
        shared: 3_218_974_678,
        chooser: 21_876_781_263,
        server: 4,
    };
}

impl Scenario {
    /// The faults the recovery and ramp-back measures are taken after: [`Scenario::faults`] if it names
    /// any; else, per server, every stretch of phases that differ from its first phase, every drain, every
    /// removal until the server is added back, and the addition of a server absent at the start (a new
    /// node: a fault that ends when it joins). Crashes come from load and are not foreseen.
    pub fn fault_windows(&self) -> Vec<Fault> {
        if !self.faults.is_empty() {
            return self.faults.clone();
        }
        let end = self.load_end();
        let mut out = Vec::new();
        for (i, server) in self.servers.iter().enumerate() {
            let Some(first) = server.phases.first() else {
                continue;
            };
            let mut open: Option<u64> = None;
            for p in &server.phases[1..] {
                match (p.endpoints == first.endpoints, open) {
                    (false, None) => open = Some(p.from),
                    (true, Some(from)) => {
                        out.push(Fault {
                            server: Some(i),
                            from,
                            to: p.from,
                        });
                        open = None;
                    }
                    _ => {}
                }
            }
            if let Some(from) = open {
                out.push(Fault {
                    server: Some(i),
                    from,
                    to: end.max(from),
                });
            }
        }
        let mut away: Vec<Option<u64>> = vec![None; self.servers.len()];
        for &(t, action) in &self.actions {
            match action {
                Action::Remove(i) | Action::Drain(i, true) => {
                    if let Some(slot) = away.get_mut(i) {
                        slot.get_or_insert(t);
                    }
                }
                Action::Add(i) | Action::Drain(i, false) => {
                    let from = away.get_mut(i).and_then(Option::take);
                    let was_absent = matches!(action, Action::Add(_))
                        && self.servers.get(i).is_some_and(|s| !s.present);
                    if let Some(from) = from.or(was_absent.then_some(t)) {
                        out.push(Fault {
                            server: Some(i),
                            from,
                            to: t,
                        });
                    }
                }
            }
        }
        for (i, from) in away.into_iter().enumerate() {
            if let Some(from) = from {
                out.push(Fault {
                    server: Some(i),
                    from,
                    to: end.max(from),
                });
            }
        }
        out.sort_by_key(|f| (f.from, f.to, f.server));
        out
    }

    /// Utilization when healthy: the requests in progress on a server over its capacity (the contention
    /// model's `capacity`, the queue's `workers`), for the load offered from time 0 spread evenly over the
    /// servers present then, each in its first phase; the mean over those servers. `None` when the servers
    /// have no capacity or no load starts at 0.
    ///
    /// For the contention model (`latency = base × (1 + n / capacity)`) the requests in progress `n` solve
    /// `n = λ × base × (1 + n / capacity)` (Little's law), so `n = λ·base / (1 − λ·base / capacity)`; for the
    /// queue, the busy workers are `λ × mean service`, with the log-normal's mean `median × e^(σ²/2)`.
    pub fn healthy_utilization(&self) -> Option<f64> {
        let rate: f64 = self
            .arrivals
            .iter()
            .filter(|a| a.start == 0 && a.count > 1)
            .map(|a| match a.spacing {
                Spacing::Fixed(d) | Spacing::Poisson(d) => SEC as f64 / d.max(1) as f64,
            })
            .sum();
        let present: Vec<&ServerSpec> = self.servers.iter().filter(|s| s.present).collect();
        if rate == 0.0 || present.is_empty() {
            return None;
        }
        let per_server = rate / present.len() as f64 / SEC as f64;
        let mut sum = 0.0;
        for server in &present {
            let b = server.behavior(0, 0);
            let u = match b.latency {
                Latency::Linear { base, capacity } => {
                    let cap = f64::from(capacity.max(1));
                    let work = per_server * base as f64 * server.slowness;
                    if work >= cap {
                        return Some(f64::INFINITY);
                    }
                    work / (1.0 - work / cap) / cap
                }
                Latency::Queue {
                    workers,
                    median,
                    sigma,
                } => {
                    per_server * median as f64 * (sigma * sigma / 2.0).exp() * server.slowness
                        / f64::from(workers.max(1))
                }
                _ => return None,
            };
            sum += u;
        }
        Some(sum / present.len() as f64)
    }

    /// The last arrival time of any stream (the end of the offered load).
    pub fn load_end(&self) -> u64 {
        self.arrivals
            .iter()
            .map(|a| match a.spacing {
                Spacing::Fixed(d) => a.start + d * a.count.saturating_sub(1),
                Spacing::Poisson(d) => a.start + d * a.count,
            })
            .max()
            .unwrap_or(0)
    }

    /// Total requests offered.
    pub fn requests(&self) -> u64 {
        self.arrivals.iter().map(|a| a.count).sum()
    }

    /// The same scenario with every generator reseeded for run `k` (`k = 0` is the scenario itself): the
    /// report repeats each cell over several seeds so that a conclusion does not hang on one draw.
    pub fn reseeded(&self, k: u64) -> Scenario {
        if k == 0 {
            return self.clone();
        }
        let mut g =
            weir::subset::SplitMix64::new(self.seed ^ k.wrapping_mul(0xD1B5_4A32_D192_ED03));
        let mut s = self.clone();
        s.seed = g.next_u64();
        s.java = self.java.map(|_| JavaSeeds {
            shared: g.next_u64() as i64,
            chooser: g.next_u64() as i64,
            server: g.next_u64() as i64,
        });
        s
    }
}
