//! The client side of the engine: a request arrives and is assigned to a client, asks that client's balancer
//! for a server (or waits in the engine's queue, with its deadline), and the client learns how each attempt
//! ended. dialogue's clients take the request whole and answer with [`Effect`]s, which [`Engine::apply`]
//! carries out.

use super::retry::DialogueRetry;
use super::{AttemptId, Engine, Ev, Request, Stack};
use crate::metrics::{RequestEnd, ServerSeries};
use crate::model::{Spacing, SEC};
use crate::policy::baseline::dialogue::Effect;
use crate::policy::{Completion, LoadReport, Pick, Refusal, Reply, RequestId};

impl Engine<'_> {
    /// The next request of `stream` arrives: it is assigned a client (and endpoint) and asks it for a
    /// server, and the stream's next arrival is drawn.
    pub(super) fn arrive(&mut self, stream: usize) {
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
        let r = RequestId(self.requests.len());
        self.requests.push(Request {
            client,
            endpoint,
            cost,
            bad,
            arrived: self.now,
            tries: 0,
            queued_at: 0,
            ended: false,
            attempt: None,
            tried: Vec::new(),
        });
        if let Some(d) = spec.deadline {
            self.at(self.now + d, Ev::Deadline(r));
        }
        self.oracle_sum += self.oracle(endpoint, bad);
        ServerSeries::bump(&mut self.out.fleet.arrived, (self.now / SEC) as usize);
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
    pub(super) fn apply(&mut self) {
        let fx = std::mem::take(&mut self.fx);
        for e in &fx {
            match *e {
                Effect::Send { req, server, token } => {
                    let pick = Pick {
                        server,
                        lease: None,
                        tag: token,
                    };
                    if self.requests[req].ended {
                        // Its caller gave up (the request's deadline): the call is cancelled before it
                        // reaches the server, and dialogue hears at once that it did not complete.
                        self.cancelled(req, pick);
                    } else {
                        self.send(req, pick);
                    }
                }
                Effect::Finish { req, .. } if self.requests[req].ended => {}
                Effect::Finish { req, reply } => match reply {
                    Some(reply) => self.end_request(req, reply.into(), reply.is_success()),
                    None => {
                        self.out.fail_fast += 1;
                        self.end_request(req, RequestEnd::Rejected, false);
                    }
                },
                Effect::Wake { at, req } => self.at(at, Ev::Retry(req)),
            }
        }
        let mut fx = fx;
        fx.clear();
        self.fx = fx;
    }

    /// Request `r`'s own deadline is due: if it is still open, it ends as a timeout. Its open attempt is
    /// abandoned (the balancer hears that it timed out, which frees its lease), a queued request leaves the
    /// queue, and a pending retry will not run.
    pub(super) fn deadline(&mut self, r: RequestId) {
        if self.requests[r].ended {
            return;
        }
        self.end_request(r, RequestEnd::Timeout, false);
        let c = self.requests[r].client;
        if let Stack::Balancer { queue, .. } = &mut self.clients[c].stack {
            if let Some(i) = queue.iter().position(|&q| q == r) {
                queue.remove(i);
            }
        }
        if let Some(a) = self.requests[r]
            .attempt
            .filter(|&a| self.attempts[a].client_open)
        {
            self.deliver(a, Reply::Timeout, None);
        } else if let Stack::Balancer { .. } = self.clients[c].stack {
            self.drain(c);
        }
    }

    /// An attempt of request `r`, which already ended, that dialogue's client sends after its caller gave
    /// up: it never reaches a server, and ends at once as a timeout for dialogue's client.
    fn cancelled(&mut self, r: RequestId, pick: Pick) {
        let a = AttemptId(self.attempts.len());
        self.attempts.push(super::Attempt {
            req: r,
            server: pick.server.min(self.servers.len() - 1),
            pick,
            sent: self.now,
            generation: 0,
            client_open: true,
            server_open: false,
            status: None,
            reached: false,
        });
        self.requests[r].attempt = Some(a);
        self.at(self.now, Ev::Timeout(a));
    }

    /// Request `r`'s deadline in the engine's queue is due.
    pub(super) fn queue_deadline(&mut self, r: RequestId) {
        let req = &self.requests[r];
        let deadline = req.queued_at + self.s.clients.timeout.unwrap_or(0);
        let Stack::Balancer { queue, .. } = &mut self.clients[req.client].stack else {
            return;
        };
        let i = queue.iter().position(|&q| q == r);
        // Only the deadline of its latest stay in the queue counts.
        if let Some(i) = i.filter(|_| deadline == self.now) {
            queue.remove(i);
            self.end_request(r, RequestEnd::Timeout, false);
        }
    }

    /// Request `r` (new, or retrying) asks its balancer for a server: sends, fails fast, or queues. A
    /// request joins the back of a non-empty queue rather than jump it. The client first sends the health
    /// check its balancer says is due, if one is.
    pub(super) fn attempt(&mut self, r: RequestId) {
        let c = self.requests[r].client;
        self.check_if_due(c);
        let client = &mut self.clients[c];
        let Stack::Balancer { policy, queue } = &mut client.stack else {
            return;
        };
        let tried = &self.requests[r].tried;
        let pick = if !queue.is_empty() {
            None
        } else if tried.is_empty() {
            policy.pick(self.now, &mut client.rng)
        } else {
            policy.pick_retry(self.now, &mut client.rng, tried)
        };
        match pick {
            Some(pick) => self.send(r, pick),
            None => match policy.on_refusal() {
                Refusal::FailFast => {
                    // A local refusal (see `fail_fast`).
                    self.fail_fast(r);
                }
                Refusal::Wait { max_waiters }
                    if policy.no_nodes() || queue.len() >= max_waiters =>
                {
                    // The waiting acquire's own refusals: nothing in rotation, or the queue is full.
                    self.fail_fast(r);
                }
                refusal @ (Refusal::Queue | Refusal::Wait { .. }) => {
                    queue.push_back(r);
                    self.requests[r].queued_at = self.now;
                    // The attempt deadline bounds a wait in the engine's queue; a waiting weir client
                    // waits until the request's own deadline (`deadline`), or until its standing queue
                    // sheds it (`shed`).
                    if let Some(t) = self.s.clients.timeout.filter(|_| refusal == Refusal::Queue) {
                        self.at(self.now + t, Ev::QueueDeadline(r));
                    }
                    self.drain(c);
                }
            },
        }
    }

    /// Request `r`'s try ends in the client itself, refused: a try like any other, retried (with
    /// backoff) when the client retries at all, as a caller treats a 503.
    fn fail_fast(&mut self, r: RequestId) {
        self.out.fail_fast += 1;
        self.requests[r].tries += 1;
        self.retry_or_end(r, None, RequestEnd::FailFast);
    }

    /// Sends queued requests of client `c` until its balancer refuses one: in order, except that a
    /// waiting weir client ([`Refusal::Wait`]) serves its newest request first while its queue stands,
    /// as weir's waiting acquire does (the oldest request has waited more than
    /// `weir::rt::STANDING_NS`), and then sheds the requests it passed over ([`Engine::shed`]).
    pub(super) fn drain(&mut self, c: usize) {
        loop {
            let client = &mut self.clients[c];
            let Stack::Balancer { policy, queue } = &mut client.stack else {
                return;
            };
            let Some(&oldest) = queue.front() else { return };
            let newest = matches!(policy.on_refusal(), Refusal::Wait { .. })
                && self.now.saturating_sub(self.requests[oldest].queued_at) > weir::rt::STANDING_NS;
            let q = match queue.back() {
                Some(&last) if newest => last,
                _ => oldest,
            };
            let tried = &self.requests[q].tried;
            let pick = if tried.is_empty() {
                policy.pick(self.now, &mut client.rng)
            } else {
                policy.pick_retry(self.now, &mut client.rng, tried)
            };
            let Some(pick) = pick else {
                return;
            };
            if newest {
                queue.pop_back();
            } else {
                queue.pop_front();
            }
            self.send(q, pick);
            if newest {
                self.shed(c, self.requests[q].queued_at);
            }
        }
    }

    /// Client `c`'s standing queue has just served the request queued at `served_at`, ahead of its
    /// oldest: as weir's waiting acquire does (`weir::rt::WaitError::Shed`), each waiting request with a
    /// deadline (the user's, [`ClientSpec::deadline`](crate::model::ClientSpec)) queued more than
    /// `weir::rt::STANDING_NS` before it leaves, answered as a fail-fast refusal is (retried when the
    /// client retries). A request with no deadline waits on.
    fn shed(&mut self, c: usize, served_at: u64) {
        if self.s.clients.deadline.is_none() {
            return;
        }
        let Stack::Balancer { queue, .. } = &mut self.clients[c].stack else {
            return;
        };
        let mut shed = Vec::new();
        while let Some(&r) = queue.front() {
            if served_at.saturating_sub(self.requests[r].queued_at) <= weir::rt::STANDING_NS {
                break;
            }
            queue.pop_front();
            shed.push(r);
        }
        for r in shed {
            self.fail_fast(r);
        }
    }

    /// The client learns how attempt `a` ended: tell its balancer, then retry, finish, and serve its queue
    /// (or hand it all to dialogue's client).
    pub(super) fn deliver(&mut self, a: AttemptId, reply: Reply, report: Option<LoadReport>) {
        let at = &mut self.attempts[a];
        if !at.client_open {
            return;
        }
        at.client_open = false;
        let (r, sid, pick, sent) = (at.req, at.server, at.pick, at.sent);
        if self.attempts[a].reached {
            let bucket = (self.now / self.out.bucket_ns) as usize;
            let series = &mut self.out.series[sid];
            ServerSeries::bump(&mut series.ended, bucket);
            if reply.is_success() {
                ServerSeries::bump(&mut series.succeeded, bucket);
            }
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
                    self.end_request(r, reply.into(), true);
                } else {
                    self.retry_or_end(r, Some(reply), reply.into());
                }
                // Every completion gives queued requests another chance, in order.
                self.drain(c);
            }
        }
    }

    /// Request `r` is over, ending as `end` (once: a request that ended at its deadline ignores later
    /// answers).
    pub(super) fn end_request(&mut self, r: RequestId, end: RequestEnd, success: bool) {
        if std::mem::replace(&mut self.requests[r].ended, true) {
            return;
        }
        self.out.received += 1;
        if success {
            self.out.succeeded += 1;
        }
        let arrived = self.requests[r].arrived;
        let latency = self.now - arrived;
        self.latencies.push(latency);
        let second = (arrived / SEC) as usize;
        let fleet = &mut self.out.fleet;
        ServerSeries::bump(&mut fleet.ended, second);
        if success {
            ServerSeries::bump(&mut fleet.succeeded, second);
        }
        if fleet.latency_ns.len() <= second {
            fleet.latency_ns.resize(second + 1, 0);
        }
        fleet.latency_ns[second] = fleet.latency_ns[second].saturating_add(latency);
        *self.out.codes.entry(end).or_insert(0) += 1;
    }
}
