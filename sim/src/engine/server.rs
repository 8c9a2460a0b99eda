//! The server side of the engine: an attempt is admitted or refused, takes its service time from the
//! server's latency model for the phase it arrives in, may push the server over its crash threshold, and
//! gets its status at completion, where the server also reports its load.

use std::cmp::Reverse;

use weir::Rng;

use super::{Attempt, AttemptId, Engine, Ev};
use crate::metrics::ServerSeries;
use crate::model::{Latency, StatusFn, MS, SEC};
use crate::policy::{LoadReport, Pick, Reply, RequestId, ServerId};

/// Utilization is reported against this many concurrent requests when the server's latency model names
/// no capacity (fixed latencies: a thread pool of 100, the SRE flow-control figure).
const DEFAULT_CAPACITY: f64 = 100.0;
/// Time constant of the qps/eps rates servers report.
const REPORT_TAU_NS: f64 = 1e9;
/// The answer to a request that is the caller's fault.
const BAD_REQUEST: (u16, u64) = (404, MS);
/// The answer of a server that sheds a request.
const SHED: u16 = 503;

impl Engine<'_> {
    /// An attempt of request `r` reaches the server `pick` names: refused at once (the server is down or
    /// refuses connections), or admitted, with its completion scheduled after its service time.
    pub(super) fn send(&mut self, r: RequestId, pick: Pick) {
        let a = AttemptId(self.attempts.len());
        let sid = pick.server.min(self.servers.len() - 1);
        self.requests[r].tries += 1;
        self.requests[r].attempt = Some(a);
        self.requests[r].tried.push(sid);
        self.out.server_attempts += 1;
        self.out.per_server_attempts[sid] += 1;
        let bucket = (self.now / self.out.bucket_ns) as usize;
        ServerSeries::bump(&mut self.out.series[sid].sent, bucket);
        ServerSeries::bump(
            &mut self.out.sent_per_second[sid],
            (self.now / SEC) as usize,
        );
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
            reached: true,
        };
        if server.down || refused {
            self.attempts.push(attempt);
            self.at(self.now, Ev::Refused(a));
            return;
        }
        let shed = spec.shed_above.is_some_and(|limit| server.active >= limit);
        server.active += 1;
        let latency = if req.bad {
            attempt.status = Some(BAD_REQUEST.0);
            Some(BAD_REQUEST.1)
        } else if shed {
            // Shed at once: no service, no worker, no queue.
            attempt.status = Some(SHED);
            Some(0)
        } else {
            let scale = req.cost * spec.slowness;
            let d =
                service_time(b.latency, server.active, &mut server.rng).map(|d| scaled(d, scale));
            match (b.latency, d) {
                // The service starts when a worker is free: FIFO, so the earliest free worker.
                (Latency::Queue { workers, .. }, Some(service)) => {
                    let free = &mut server.workers;
                    let start = if free.len() < workers.max(1) as usize {
                        self.now
                    } else {
                        free.pop().map_or(self.now, |Reverse(t)| t.max(self.now))
                    };
                    let done = start.saturating_add(service);
                    free.push(Reverse(done));
                    Some(done - self.now)
                }
                _ => d,
            }
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

    /// The server crashes if it stayed over its crash threshold since that crossing.
    pub(super) fn crash_check(&mut self, sid: ServerId, crossing: u64) {
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
        server.workers.clear();
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
                    reset.push(AttemptId(a));
                }
            }
        }
        for a in reset {
            self.deliver(a, Reply::Refused, None);
        }
    }

    /// The server finishes attempt `a` (unless a crash reset it): its status, its load report, and the answer
    /// to the client if the client still waits.
    pub(super) fn server_done(&mut self, a: AttemptId) {
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
        if code == 503 || code == 429 {
            self.out.overload_answers += 1;
        }
        let open = at.client_open;
        self.crossed(sid);
        if open {
            self.deliver(a, Reply::Status(code), Some(report));
        }
    }
}

/// Codahale's `Meter`, its one-minute rate only: marks are counted, and every whole 5 s tick since the
/// last one (caught up when the meter is next read or marked) folds the tick's count, as a rate, into an
/// exponentially weighted average with `alpha = 1 − e^(−5/60)`; the first tick sets the average outright.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct OneMinuteRate {
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
    pub(super) fn rate(&mut self, now: u64) -> f64 {
        self.tick_if_necessary(now);
        self.rate * 1e9
    }

    fn mark(&mut self, now: u64) {
        self.tick_if_necessary(now);
        self.uncounted += 1;
    }
}

/// The service time of a call under `latency` with `active` calls in progress (itself included), before
/// any queueing and scaling; `None` for a server that never answers. The draws come from `rng`.
fn service_time(latency: Latency, active: u32, rng: &mut Rng) -> Option<u64> {
    match latency {
        Latency::Fixed(d) => Some(d),
        Latency::Linear { base, capacity } => {
            // dialogue's integer arithmetic: `base + base·active/capacity`, `5·base` beyond.
            let cap = u64::from(capacity.max(1));
            let active = u64::from(active);
            Some(if active <= cap {
                base.saturating_add(base.saturating_mul(active) / cap)
            } else {
                base.saturating_mul(5)
            })
        }
        Latency::Uniform { low, high } => {
            Some((low as f64 + rng.f64() * high.saturating_sub(low) as f64) as u64)
        }
        Latency::LogNormal { median, sigma } => {
            Some((median as f64 * (sigma * normal(rng)).exp()) as u64)
        }
        Latency::Never => None,
        Latency::Queue { median, sigma, .. } => Some(if sigma == 0.0 {
            median
        } else {
            (median as f64 * (sigma * normal(rng)).exp()) as u64
        }),
    }
}

/// A service time `d` times `scale`, capped so that `now + d` cannot overflow: a log-normal draw with a
/// wide `sigma` (a scenario file may give any) saturates to u64::MAX.
fn scaled(d: u64, scale: f64) -> u64 {
    if scale == 1.0 {
        d.min(u64::MAX / 4)
    } else {
        (d as f64 * scale).min(u64::MAX as f64 / 4.0) as u64
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
pub(super) fn nominal_capacity(spec: &crate::model::ServerSpec) -> f64 {
    let b = spec.behavior(0, 0);
    let c = match (b.latency, b.status, spec.crash) {
        (
            Latency::Linear { capacity, .. }
            | Latency::Queue {
                workers: capacity, ..
            },
            _,
            _,
        ) => f64::from(capacity),
        (_, StatusFn::AboveCapacity { capacity, .. }, _) => f64::from(capacity),
        (_, _, Some(c)) => f64::from(c.active_above),
        _ => DEFAULT_CAPACITY,
    };
    c.max(1.0)
}
