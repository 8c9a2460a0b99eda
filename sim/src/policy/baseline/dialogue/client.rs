//! One dialogue client (`DialogueChannel`), its channel stack end to end.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::balanced::Tracker;
use super::java::JavaRandom;
use super::limiter::{Ciad, Level, Verdict};
use super::pin::Pin;
use super::Outcome;
use crate::policy::{Reply, ServerId};

/// A queue holds at most this many requests; a request that finds it full fails at once (`QueuedChannel`'s
/// `maxQueueSize`).
pub const MAX_QUEUE: usize = 100_000;

/// dialogue's three strategies in its own simulation report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// `CONCURRENCY_LIMITER_ROUND_ROBIN`: BALANCED node selection with host and endpoint limiters.
    Balanced,
    /// `CONCURRENCY_LIMITER_PIN_UNTIL_ERROR`: PIN_UNTIL_ERROR with host and endpoint limiters.
    PinUntilError,
    /// `UNLIMITED_ROUND_ROBIN`: BALANCED with the client's limiters disabled.
    Unlimited,
}

impl Strategy {
    fn limited(self) -> bool {
        self != Strategy::Unlimited
    }
}

/// What the client asks of the simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Send an attempt of request `req` to `server` now; hand `token` back with its completion.
    Send {
        /// The request.
        req: usize,
        /// Where to.
        server: ServerId,
        /// The client's number for the attempt.
        token: u64,
    },
    /// Request `req` is over: its final reply, or `None` when the client failed it itself (a full queue, no
    /// URIs).
    Finish {
        /// The request.
        req: usize,
        /// Its final reply.
        reply: Option<Reply>,
    },
    /// Call [`wake`](DialogueClient::wake) for request `req` at `at` (a retry's backoff is over).
    Wake {
        /// When.
        at: u64,
        /// The request.
        req: usize,
    },
}

/// The retry rule the client's `RetryingChannel` applies (the scenario's).
pub trait Retry {
    /// Try number `tries` of a request ended with `reply`: the delay before the next try, or `None` to end
    /// the request with this reply. A per-request jitter is drawn from `java`, dialogue's shared generator.
    fn after(&mut self, reply: Reply, tries: u32, now: u64, java: &mut JavaRandom) -> Option<u64>;
}

/// How a host was chosen, and what its completion must release (dialogue's callbacks on the response future,
/// above the endpoint stage).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Up {
    host: usize,
    /// The host limiter's permit snapshot (limited strategies).
    host_permit: Option<u32>,
    /// Counted in the BALANCED tracker's in-flight requests.
    tracked: bool,
    /// PIN_UNTIL_ERROR: the pin position the request was sent at.
    pin_at: Option<usize>,
    /// A sticky session's permit snapshot.
    sticky: Option<u32>,
    /// Came out of a queue (rather than its fast path): its completion answers the caller before the queue
    /// is drained, where the fast path drains first (the order of dialogue's future listeners).
    via_queue: bool,
}

/// One attempt on the wire.
#[derive(Clone, Copy, Debug)]
struct Attempt {
    req: usize,
    up: Up,
    /// The endpoint limiter's permit snapshot (limited strategies).
    endpoint_permit: Option<u32>,
    /// Came out of the endpoint queue rather than its fast path.
    via_stage_queue: bool,
}

/// A request the client holds.
#[derive(Clone, Copy, Debug)]
struct Req {
    generation: usize,
    endpoint: usize,
    session: Option<usize>,
    /// Attempts sent so far.
    tries: u32,
    /// A sticky session's first call, whose response pins the session.
    token: bool,
    /// A sticky session's pinned host (dialogue's `STICKY` request attachment).
    target: Option<usize>,
}

/// Per host and endpoint: dialogue's per-endpoint `QueuedChannel` over its endpoint-level limiter.
#[derive(Clone, Debug)]
struct Stage {
    limiter: Ciad,
    queue: VecDeque<(usize, Up)>,
}

#[derive(Clone, Debug)]
struct Host {
    /// The host-level limiter (limited strategies).
    limiter: Option<Ciad>,
    /// One stage per endpoint (limited strategies).
    stages: Vec<Stage>,
}

#[derive(Clone, Debug)]
enum Selection {
    /// No URIs: every request fails (`ZeroUriNodeSelectionChannel`).
    Zero,
    /// One URI: no strategy at all.
    Single,
    Balanced(Tracker),
    Pin(Pin),
}

/// One `DialogueChannel`: built for one URI list, kept until the requests sent through it are done.
#[derive(Clone, Debug)]
struct Channel {
    servers: Vec<ServerId>,
    selection: Selection,
    hosts: Vec<Host>,
    /// The multi-host `QueuedChannel`.
    queue: VecDeque<usize>,
}

impl Channel {
    fn new(
        servers: Vec<ServerId>,
        strategy: Strategy,
        endpoints: usize,
        now: u64,
        java: &mut JavaRandom,
    ) -> Self {
        let n = servers.len();
        let selection = match (n, strategy) {
            (0, _) => Selection::Zero,
            (1, _) => Selection::Single,
            (_, Strategy::PinUntilError) => Selection::Pin(Pin::new(n, now, java)),
            _ => Selection::Balanced(Tracker::new(n, now)),
        };
        let limited = strategy.limited();
        let host = Host {
            limiter: limited.then(|| Ciad::new(Level::Host)),
            stages: if limited {
                vec![
                    Stage {
                        limiter: Ciad::new(Level::Endpoint),
                        queue: VecDeque::new(),
                    };
                    endpoints.max(1)
                ]
            } else {
                Vec::new()
            },
        };
        Channel {
            servers,
            selection,
            hosts: vec![host; n],
            queue: VecDeque::new(),
        }
    }
}

/// A sticky session (`StickyChannel2`): its router, its own limiter and queue in front of the channel's
/// node selection.
#[derive(Clone, Debug)]
struct Session {
    /// The host the session is pinned to, from its first successful call's response.
    target: Option<usize>,
    /// The call in flight that will pin the session.
    token_call: Option<usize>,
    /// Requests waiting for that call to end.
    waiting: Vec<usize>,
    limiter: Ciad,
    queue: VecDeque<usize>,
}

/// What a queue's delegate did with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Admit {
    Sent,
    Refused,
    /// Failed at once (no URIs).
    Failed,
}

/// Which queue a request waits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum QueueRef {
    Main(usize),
    Session(usize),
}

/// One dialogue client: a `DialogueChannel` with its whole stack (see the [module](super) table), or a set
/// of sticky sessions sharing one.
///
/// A request enters through [`submit`](Self::submit) and the simulation answers each [`Effect::Send`] with
/// [`complete`](Self::complete); the client replies with more effects. Everything random comes from the
/// `java` generator the caller passes, which dialogue's simulation shares between every client; draws
/// happen in dialogue's order (the PIN_UNTIL_ERROR shuffle and jitter when a channel is built, a shuffle per
/// BALANCED pick, a jitter per retry).
///
/// The flow of one request, outermost first:
///
/// 1. A sticky session's router sends its first request with a request for a sticky token and holds every
///    later request until that one ends; then it sends them, in order, straight to the host that answered
///    (a response of any status pins the session; an exception lets the next held request try again).
/// 2. The retry rule (the scenario's) decides, after each failed try, whether and when to try again; a
///    retry re-enters at step 3.
/// 3. The queue (the channel's, or a sticky session's own): a request goes straight to step 4 only when the
///    queue is empty; otherwise, or if step 4 refuses it, it joins the back, and the queue is drained in
///    order, head first and stopping at the first refusal, whenever one of the queue's requests completes.
///    A sticky session first takes a permit from its own limiter (every response a success), bypassing
///    the host limit when it is its only request in flight, and drops that permit when step 4 refuses.
/// 4. Node selection (BALANCED's walk, or the pin, or the only host) asks the host limiter; the first host
///    that admits the request gets it.
/// 5. The host's stage for the request's endpoint: the endpoint limiter sends it now if the stage's queue
///    is empty and there is room, else it waits in the stage's queue (holding its host permit and counting
///    as in flight for the score), drained whenever an attempt of that stage completes.
///
/// A completion releases the permits in dialogue's listener order: endpoint limiter, the stage's drain (when
/// the attempt took the fast path), host limiter, score or pin, sticky permit, then the queue's drain and
/// the retry decision (drain first on the fast path, retry first for a request that came out of the
/// queue), and last the stage's drain for an attempt that came out of the stage's queue.
///
/// When the server list changes, the next request builds a new channel (dialogue's `RefreshingChannel`):
/// fresh scores, pins, limiters and queues. Requests already in an older channel finish there, retries
/// included. Sticky sessions never reload, as dialogue's non-reloading sticky channels. A server in lame
/// duck (not a dialogue concept) is left out of node selection.
#[derive(Clone, Debug)]
pub struct DialogueClient {
    strategy: Strategy,
    endpoints: usize,
    channels: Vec<Channel>,
    /// The server list the next channel is built from, when it differs from the newest channel's.
    pending: Option<Vec<ServerId>>,
    draining: BTreeSet<ServerId>,
    sessions: Vec<Session>,
    requests: BTreeMap<usize, Req>,
    attempts: BTreeMap<u64, Attempt>,
    next_token: u64,
}

impl DialogueClient {
    /// A client of `endpoints` endpoints over `servers` (in the client's URI order), its channel built at its
    /// first request.
    pub fn new(strategy: Strategy, endpoints: usize, servers: &[ServerId]) -> Self {
        DialogueClient {
            strategy,
            endpoints: endpoints.max(1),
            channels: Vec::new(),
            pending: Some(servers.to_vec()),
            draining: BTreeSet::new(),
            sessions: Vec::new(),
            requests: BTreeMap::new(),
            attempts: BTreeMap::new(),
            next_token: 0,
        }
    }

    /// A client whose one channel, built now, serves `sessions` sticky sessions (dialogue's
    /// `stickyChannels()` of a non-reloading `DialogueChannel`).
    pub fn sticky(
        strategy: Strategy,
        endpoints: usize,
        servers: &[ServerId],
        sessions: usize,
        now: u64,
        java: &mut JavaRandom,
    ) -> Self {
        let mut c = DialogueClient::new(strategy, endpoints, servers);
        c.pending = None;
        c.channels.push(Channel::new(
            servers.to_vec(),
            strategy,
            c.endpoints,
            now,
            java,
        ));
        c.sessions = (0..sessions)
            .map(|_| Session {
                target: None,
                token_call: None,
                waiting: Vec::new(),
                limiter: Ciad::new(Level::Sticky),
                queue: VecDeque::new(),
            })
            .collect();
        c
    }

    /// Attempts on the wire.
    pub fn in_flight(&self) -> usize {
        self.attempts.len()
    }

    /// Requests the client holds (queued, waiting, backing off or on the wire).
    pub fn open_requests(&self) -> usize {
        self.requests.len()
    }

    /// The server list is now `servers` (in the client's URI order): the next request builds a new channel if
    /// the set changed. Sticky clients keep theirs.
    pub fn set_servers(&mut self, servers: &[ServerId]) {
        if !self.sessions.is_empty() {
            return;
        }
        let current = self
            .pending
            .as_ref()
            .or(self.channels.last().map(|c| &c.servers));
        let same = current.is_some_and(|c| {
            c.iter().collect::<BTreeSet<_>>() == servers.iter().collect::<BTreeSet<_>>()
        });
        if !same {
            self.pending = Some(servers.to_vec());
        }
    }

    /// Lame duck on or off for `server`.
    pub fn set_draining(&mut self, server: ServerId, draining: bool) {
        if draining {
            self.draining.insert(server);
        } else {
            self.draining.remove(&server);
        }
    }

    /// Request `req` of `endpoint` arrives (in sticky session `session`, for a sticky client).
    #[allow(clippy::too_many_arguments)]
    pub fn submit(
        &mut self,
        req: usize,
        endpoint: usize,
        session: Option<usize>,
        now: u64,
        java: &mut JavaRandom,
        retry: &mut dyn Retry,
        fx: &mut Vec<Effect>,
    ) {
        let session = session
            .filter(|_| !self.sessions.is_empty())
            .map(|s| s.min(self.sessions.len() - 1));
        if let Some(servers) = self.pending.take() {
            let ch = Channel::new(servers, self.strategy, self.endpoints, now, java);
            self.channels.push(ch);
        }
        self.requests.insert(
            req,
            Req {
                generation: self.channels.len() - 1,
                endpoint: endpoint.min(self.endpoints - 1),
                session,
                tries: 0,
                token: false,
                target: None,
            },
        );
        self.route(req, now, java, retry, fx);
    }

    /// Attempt `token` ended with `reply`.
    pub fn complete(
        &mut self,
        token: u64,
        reply: Reply,
        now: u64,
        java: &mut JavaRandom,
        retry: &mut dyn Retry,
        fx: &mut Vec<Effect>,
    ) {
        let Some(at) = self.attempts.remove(&token) else {
            return;
        };
        let Some(&req) = self.requests.get(&at.req) else {
            return;
        };
        let outcome = Outcome::of(reply);
        let (g, h, e) = (req.generation, at.up.host, req.endpoint);
        if let Some(p) = at.endpoint_permit {
            self.channels[g].hosts[h].stages[e]
                .limiter
                .release(p, outcome);
            if !at.via_stage_queue {
                self.drain_stage(g, h, e, fx);
            }
        }
        self.upstream(at.req, at.up, outcome, Some(reply), now, java, retry, fx);
        if at.endpoint_permit.is_some() && at.via_stage_queue {
            self.drain_stage(g, h, e, fx);
        }
    }

    /// Request `req`'s backoff is over: it tries again.
    pub fn wake(
        &mut self,
        req: usize,
        now: u64,
        java: &mut JavaRandom,
        retry: &mut dyn Retry,
        fx: &mut Vec<Effect>,
    ) {
        if self.requests.contains_key(&req) {
            self.enqueue(req, now, java, retry, fx);
        }
    }

    /// The sticky router, or straight on.
    fn route(
        &mut self,
        r: usize,
        now: u64,
        java: &mut JavaRandom,
        retry: &mut dyn Retry,
        fx: &mut Vec<Effect>,
    ) {
        let Some(s) = self.requests[&r].session else {
            return self.enqueue(r, now, java, retry, fx);
        };
        let session = &mut self.sessions[s];
        let req = self.requests.get_mut(&r).expect("routed requests are held");
        if let Some(t) = session.target {
            req.target = Some(t);
        } else if session.token_call.is_none() {
            session.token_call = Some(r);
            req.token = true;
        } else {
            session.waiting.push(r);
            return;
        }
        self.enqueue(r, now, java, retry, fx);
    }

    fn queue_of(&self, r: usize) -> QueueRef {
        let req = &self.requests[&r];
        match req.session {
            Some(s) => QueueRef::Session(s),
            None => QueueRef::Main(req.generation),
        }
    }

    fn queue(&mut self, q: QueueRef) -> &mut VecDeque<usize> {
        match q {
            QueueRef::Main(g) => &mut self.channels[g].queue,
            QueueRef::Session(s) => &mut self.sessions[s].queue,
        }
    }

    /// `QueuedChannel.maybeExecute`: the fast path only when the queue is empty.
    fn enqueue(
        &mut self,
        r: usize,
        now: u64,
        java: &mut JavaRandom,
        retry: &mut dyn Retry,
        fx: &mut Vec<Effect>,
    ) {
        let q = self.queue_of(r);
        if self.queue(q).is_empty() {
            match self.admit(r, false, now, java, fx) {
                Admit::Sent => return,
                Admit::Failed => return self.fail(r, now, java, retry, fx),
                Admit::Refused => {}
            }
        }
        if self.queue(q).len() >= MAX_QUEUE {
            return self.fail(r, now, java, retry, fx);
        }
        self.queue(q).push_back(r);
        self.drain(q, now, java, retry, fx);
    }

    /// `QueuedChannel.schedule`: sends from the head until one is refused.
    fn drain(
        &mut self,
        q: QueueRef,
        now: u64,
        java: &mut JavaRandom,
        retry: &mut dyn Retry,
        fx: &mut Vec<Effect>,
    ) {
        while let Some(&r) = self.queue(q).front() {
            match self.admit(r, true, now, java, fx) {
                Admit::Sent => {
                    self.queue(q).pop_front();
                }
                Admit::Failed => {
                    self.queue(q).pop_front();
                    self.fail(r, now, java, retry, fx);
                }
                Admit::Refused => break,
            }
        }
    }

    /// The queue's delegate: a sticky session's limiter, then node selection.
    fn admit(
        &mut self,
        r: usize,
        via_queue: bool,
        now: u64,
        java: &mut JavaRandom,
        fx: &mut Vec<Effect>,
    ) -> Admit {
        let up = Up {
            host: 0,
            host_permit: None,
            tracked: false,
            pin_at: None,
            sticky: None,
            via_queue,
        };
        let Some(s) = self.requests[&r].session else {
            return self.select(r, false, up, now, java, fx);
        };
        let Some(permit) = self.sessions[s].limiter.acquire(true) else {
            return Admit::Refused;
        };
        // dialogue's `isOnlyInFlight`: the session's only request bypasses the host limit.
        let up = Up {
            sticky: Some(permit),
            ..up
        };
        let admitted = self.select(r, permit == 1, up, now, java, fx);
        match admitted {
            Admit::Sent => {}
            Admit::Refused => self.sessions[s]
                .limiter
                .release_as(permit, Verdict::Dropped),
            Admit::Failed => self.sessions[s].limiter.release(permit, Outcome::Failed),
        }
        admitted
    }

    /// Node selection and the host limiter; an admitted request goes on to its endpoint stage.
    fn select(
        &mut self,
        r: usize,
        bypass: bool,
        up: Up,
        now: u64,
        java: &mut JavaRandom,
        fx: &mut Vec<Effect>,
    ) -> Admit {
        let req = self.requests[&r];
        let draining = &self.draining;
        let ch = &mut self.channels[req.generation];
        let Channel {
            servers,
            selection,
            hosts,
            ..
        } = ch;
        let mut permit = None;
        let mut host_admits = |h: usize| match &mut hosts[h].limiter {
            Some(l) => l.acquire(!bypass).map(|p| permit = Some(p)).is_some(),
            None => true,
        };
        let mut up = up;
        let chosen = if let Some(h) = req.target {
            // A sticky request goes straight to its host's channel (dialogue's `BalancedChannel`, which still
            // counts it, or the pin's host channel, which does not move the pin).
            match selection {
                Selection::Balanced(t) => {
                    t.start(h);
                    let ok = host_admits(h);
                    if !ok {
                        t.undo(h);
                    }
                    up.tracked = true;
                    ok.then_some(h)
                }
                _ => host_admits(h).then_some(h),
            }
        } else {
            match selection {
                Selection::Zero => return Admit::Failed,
                Selection::Single => {
                    (!draining.contains(&servers[0]) && host_admits(0)).then_some(0)
                }
                Selection::Balanced(t) => {
                    let candidates: Vec<usize> = (0..servers.len())
                        .filter(|&h| !draining.contains(&servers[h]))
                        .collect();
                    up.tracked = true;
                    t.select(&candidates, now, java, &mut host_admits)
                }
                Selection::Pin(p) => match p.current(now, java, |h| draining.contains(&servers[h]))
                {
                    Some((at, h)) => {
                        up.pin_at = Some(at);
                        host_admits(h).then_some(h)
                    }
                    None => None,
                },
            }
        };
        let Some(h) = chosen else {
            return Admit::Refused;
        };
        up.host = h;
        up.host_permit = permit;
        self.stage(r, up, fx);
        Admit::Sent
    }

    /// The endpoint stage: straight through the endpoint limiter when its queue is empty and there is room,
    /// else into its queue.
    fn stage(&mut self, r: usize, up: Up, fx: &mut Vec<Effect>) {
        if !self.strategy.limited() {
            return self.send(r, up, None, false, fx);
        }
        let req = self.requests[&r];
        let st = &mut self.channels[req.generation].hosts[up.host].stages[req.endpoint];
        if st.queue.is_empty() {
            if let Some(p) = st.limiter.acquire(true) {
                return self.send(r, up, Some(p), false, fx);
            }
        }
        st.queue.push_back((r, up));
        self.drain_stage(req.generation, up.host, req.endpoint, fx);
    }

    /// The endpoint queue's `schedule`.
    fn drain_stage(&mut self, g: usize, h: usize, e: usize, fx: &mut Vec<Effect>) {
        loop {
            let st = &mut self.channels[g].hosts[h].stages[e];
            let Some(&(r, up)) = st.queue.front() else {
                return;
            };
            let Some(p) = st.limiter.acquire(true) else {
                return;
            };
            st.queue.pop_front();
            self.send(r, up, Some(p), true, fx);
        }
    }

    fn send(
        &mut self,
        r: usize,
        up: Up,
        endpoint_permit: Option<u32>,
        via_stage_queue: bool,
        fx: &mut Vec<Effect>,
    ) {
        let req = self.requests.get_mut(&r).expect("sent requests are held");
        req.tries += 1;
        let token = self.next_token;
        self.next_token += 1;
        self.attempts.insert(
            token,
            Attempt {
                req: r,
                up,
                endpoint_permit,
                via_stage_queue,
            },
        );
        let server = self.channels[req.generation].servers[up.host];
        fx.push(Effect::Send {
            req: r,
            server,
            token,
        });
    }

    /// The callbacks above the endpoint stage, in dialogue's order.
    #[allow(clippy::too_many_arguments)]
    fn upstream(
        &mut self,
        r: usize,
        up: Up,
        outcome: Outcome,
        reply: Option<Reply>,
        now: u64,
        java: &mut JavaRandom,
        retry: &mut dyn Retry,
        fx: &mut Vec<Effect>,
    ) {
        let req = self.requests[&r];
        let ch = &mut self.channels[req.generation];
        if let (Some(p), Some(l)) = (up.host_permit, &mut ch.hosts[up.host].limiter) {
            l.release(p, outcome);
        }
        match &mut ch.selection {
            Selection::Balanced(t) if up.tracked => t.complete(up.host, outcome, now),
            Selection::Pin(p) => {
                if let Some(at) = up.pin_at {
                    p.complete(at, outcome);
                }
            }
            _ => {}
        }
        if let (Some(p), Some(s)) = (up.sticky, req.session) {
            self.sessions[s].limiter.release(p, outcome);
        }
        let q = self.queue_of(r);
        if up.via_queue {
            self.retrying(r, outcome, reply, up.host, now, java, retry, fx);
            self.drain(q, now, java, retry, fx);
        } else {
            self.drain(q, now, java, retry, fx);
            self.retrying(r, outcome, reply, up.host, now, java, retry, fx);
        }
    }

    /// A request failed inside the client before reaching a host (no URIs, a full queue).
    fn fail(
        &mut self,
        r: usize,
        now: u64,
        java: &mut JavaRandom,
        retry: &mut dyn Retry,
        fx: &mut Vec<Effect>,
    ) {
        self.retrying(r, Outcome::Failed, None, 0, now, java, retry, fx);
    }

    /// `RetryingChannel`: retry after the rule's delay (at once for a zero delay), or end the request.
    #[allow(clippy::too_many_arguments)]
    fn retrying(
        &mut self,
        r: usize,
        outcome: Outcome,
        reply: Option<Reply>,
        host: usize,
        now: u64,
        java: &mut JavaRandom,
        retry: &mut dyn Retry,
        fx: &mut Vec<Effect>,
    ) {
        let tries = self.requests[&r].tries;
        if let Some(reply) = reply {
            match retry.after(reply, tries, now, java) {
                Some(0) => return self.enqueue(r, now, java, retry, fx),
                Some(delay) => {
                    fx.push(Effect::Wake {
                        at: now.saturating_add(delay),
                        req: r,
                    });
                    return;
                }
                None => {}
            }
        }
        let req = self
            .requests
            .remove(&r)
            .expect("finished requests are held");
        fx.push(Effect::Finish { req: r, reply });
        // The sticky router learns how its token call ended: any response pins the session; then the held
        // requests go, in order.
        if let (true, Some(s)) = (req.token, req.session) {
            let session = &mut self.sessions[s];
            session.token_call = None;
            if matches!(outcome, Outcome::Response(_)) && session.target.is_none() {
                session.target = Some(host);
            }
            for w in std::mem::take(&mut session.waiting) {
                self.route(w, now, java, retry, fx);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Never retries.
    struct NoRetry;

    impl Retry for NoRetry {
        fn after(&mut self, _: Reply, _: u32, _: u64, _: &mut JavaRandom) -> Option<u64> {
            None
        }
    }

    /// dialogue's RetryingChannel for a POST: 308/429/503 and resets, up to 4 retries, 250 ms slot.
    struct Dialogue;

    impl Retry for Dialogue {
        fn after(
            &mut self,
            reply: Reply,
            tries: u32,
            _: u64,
            java: &mut JavaRandom,
        ) -> Option<u64> {
            let retried = matches!(reply, Reply::Status(308 | 429 | 503) | Reply::Refused);
            (retried && tries <= 4).then(|| {
                (250e6 * java.next_double() * f64::from(1u32 << (tries - 1))).round() as u64
            })
        }
    }

    fn sends(fx: &[Effect]) -> Vec<(usize, ServerId, u64)> {
        fx.iter()
            .filter_map(|e| match *e {
                Effect::Send { req, server, token } => Some((req, server, token)),
                _ => None,
            })
            .collect()
    }

    fn finished(fx: &[Effect]) -> Vec<(usize, Option<Reply>)> {
        fx.iter()
            .filter_map(|e| match *e {
                Effect::Finish { req, reply } => Some((req, reply)),
                _ => None,
            })
            .collect()
    }

    /// Submits `(request, session)` pairs at time 0, endpoint 0, without retries.
    fn submit_in_sessions(
        c: &mut DialogueClient,
        java: &mut JavaRandom,
        fx: &mut Vec<Effect>,
        requests: &[(usize, usize)],
    ) {
        for &(r, session) in requests {
            c.submit(r, 0, Some(session), 0, java, &mut NoRetry, fx);
        }
    }

    fn endpoint_limit(c: &DialogueClient, server: ServerId, endpoint: usize) -> f64 {
        let ch = c.channels.last().unwrap();
        let h = ch.servers.iter().position(|&s| s == server).unwrap();
        ch.hosts[h].stages[endpoint].limiter.limit()
    }

    fn host_limit(c: &DialogueClient, server: ServerId) -> f64 {
        let ch = c.channels.last().unwrap();
        let h = ch.servers.iter().position(|&s| s == server).unwrap();
        ch.hosts[h].limiter.unwrap().limit()
    }

    /// A 500 and a 429 cut the endpoint limiter and leave the host limiter alone; a 503 does the opposite.
    #[test]
    fn the_endpoint_limiter_drops_on_429_and_500_and_the_host_limiter_on_503() {
        let mut java = JavaRandom::new(1);
        let mut c = DialogueClient::new(Strategy::Balanced, 2, &[7]);
        let mut fx = Vec::new();
        let token = |c: &mut DialogueClient, req, endpoint, fx: &mut Vec<Effect>| {
            fx.clear();
            c.submit(
                req,
                endpoint,
                None,
                0,
                &mut JavaRandom::new(1),
                &mut NoRetry,
                fx,
            );
            sends(fx)[0].2
        };
        let t = token(&mut c, 0, 0, &mut fx);
        c.complete(t, Reply::Status(500), 1, &mut java, &mut NoRetry, &mut fx);
        assert_eq!((endpoint_limit(&c, 7, 0), host_limit(&c, 7)), (18.0, 20.0));
        let t = token(&mut c, 1, 0, &mut fx);
        c.complete(t, Reply::Status(429), 2, &mut java, &mut NoRetry, &mut fx);
        assert_eq!((endpoint_limit(&c, 7, 0), host_limit(&c, 7)), (16.0, 20.0));
        // The other endpoint's limiter is its own.
        assert_eq!(endpoint_limit(&c, 7, 1), 20.0);
        let t = token(&mut c, 2, 1, &mut fx);
        c.complete(t, Reply::Status(503), 3, &mut java, &mut NoRetry, &mut fx);
        assert_eq!((endpoint_limit(&c, 7, 1), host_limit(&c, 7)), (20.0, 18.0));
        let t = token(&mut c, 3, 1, &mut fx);
        c.complete(t, Reply::Refused, 4, &mut java, &mut NoRetry, &mut fx);
        assert_eq!((endpoint_limit(&c, 7, 1), host_limit(&c, 7)), (20.0, 16.0));
        assert_eq!((c.in_flight(), c.open_requests()), (0, 0));
    }

    /// With the endpoint limit cut to 1, a second request waits in the endpoint's queue (holding its host
    /// permit) and is sent when the first one's response completes; unlimited, both go at once.
    #[test]
    fn a_request_queued_at_the_endpoint_goes_when_a_response_completes() {
        let mut java = JavaRandom::new(2);
        let mut c = DialogueClient::new(Strategy::Balanced, 1, &[3]);
        let mut fx = Vec::new();
        // Fourteen 500s bring the endpoint limit from 20 to 1.
        for r in 0..14 {
            fx.clear();
            c.submit(r, 0, None, 0, &mut java, &mut NoRetry, &mut fx);
            let t = sends(&fx)[0].2;
            c.complete(t, Reply::Status(500), 0, &mut java, &mut NoRetry, &mut fx);
        }
        assert_eq!(endpoint_limit(&c, 3, 0), 1.0);
        fx.clear();
        c.submit(100, 0, None, 5, &mut java, &mut NoRetry, &mut fx);
        c.submit(101, 0, None, 5, &mut java, &mut NoRetry, &mut fx);
        assert_eq!(sends(&fx), [(100, 3, 14)], "101 waits at the endpoint");
        let ch = c.channels.last().unwrap();
        assert_eq!(
            ch.hosts[0].limiter.unwrap().in_flight(),
            2,
            "both hold a host permit"
        );
        assert!(ch.queue.is_empty(), "the multi-host queue is empty");
        fx.clear();
        c.complete(14, Reply::Status(200), 9, &mut java, &mut NoRetry, &mut fx);
        assert_eq!(sends(&fx), [(101, 3, 15)]);
        assert_eq!(finished(&fx), [(100, Some(Reply::Status(200)))]);

        let mut u = DialogueClient::new(Strategy::Unlimited, 1, &[3]);
        fx.clear();
        for r in 0..30 {
            u.submit(r, 0, None, 0, &mut java, &mut NoRetry, &mut fx);
        }
        assert_eq!(sends(&fx).len(), 30, "no limiter holds anything back");
    }

    /// A full host limiter keeps requests in the multi-host queue; a completion drains it head first, and
    /// a new request joins the back of a non-empty queue instead of jumping it.
    #[test]
    fn the_multi_host_queue_is_fifo_and_drained_by_completions() {
        let mut java = JavaRandom::new(3);
        let mut c = DialogueClient::new(Strategy::Balanced, 1, &[0, 1]);
        let mut fx = Vec::new();
        for r in 0..40 {
            c.submit(r, 0, None, 0, &mut java, &mut NoRetry, &mut fx);
        }
        assert_eq!(sends(&fx).len(), 40, "two hosts, twenty each");
        fx.clear();
        c.submit(40, 0, None, 0, &mut java, &mut NoRetry, &mut fx);
        c.submit(41, 0, None, 0, &mut java, &mut NoRetry, &mut fx);
        assert!(fx.is_empty());
        assert_eq!(c.channels[0].queue, [40, 41]);
        c.complete(5, Reply::Status(200), 1, &mut java, &mut NoRetry, &mut fx);
        let sent = sends(&fx);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].0, 40, "the head goes first");
        fx.clear();
        c.submit(42, 0, None, 2, &mut java, &mut NoRetry, &mut fx);
        assert_eq!(c.channels[0].queue, [41, 42]);
    }

    /// The shared generator is drawn in dialogue's order: a PIN_UNTIL_ERROR channel shuffles and draws its
    /// jitter when its first request arrives; each BALANCED pick shuffles; each retry draws one jitter.
    #[test]
    fn the_shared_generator_is_drawn_in_dialogues_order() {
        let mut java = JavaRandom::new(3_218_974_678);
        let mut reference = java.clone();
        let mut fx = Vec::new();
        let mut pin = DialogueClient::new(Strategy::PinUntilError, 1, &[10, 11, 12]);
        assert_eq!(java, reference, "nothing drawn before the first request");
        pin.submit(0, 0, None, 0, &mut java, &mut Dialogue, &mut fx);
        let mut order = [10, 11, 12];
        reference.shuffle(&mut order);
        reference.next_int_below(60);
        assert_eq!(sends(&fx), [(0, order[0], 0)]);
        assert_eq!(java, reference);
        // A 503 retries after round(250 ms · U) with U the next double; the pin moved on.
        fx.clear();
        pin.complete(0, Reply::Status(503), 1, &mut java, &mut Dialogue, &mut fx);
        let u = reference.next_double();
        assert_eq!(
            fx,
            [Effect::Wake {
                at: 1 + (250e6 * u).round() as u64,
                req: 0
            }]
        );
        fx.clear();
        pin.wake(0, 2, &mut java, &mut Dialogue, &mut fx);
        assert_eq!(sends(&fx), [(0, order[1], 1)]);
        assert_eq!(java, reference, "the pin itself draws nothing per request");
        // BALANCED: one shuffle of the three hosts per pick (two draws), ties kept in shuffled order.
        let mut balanced = DialogueClient::new(Strategy::Balanced, 1, &[10, 11, 12]);
        fx.clear();
        balanced.submit(0, 0, None, 0, &mut java, &mut Dialogue, &mut fx);
        let mut order = [10, 11, 12];
        reference.shuffle(&mut order);
        assert_eq!(sends(&fx), [(0, order[0], 0)]);
        assert_eq!(java, reference);
    }

    /// A sticky session sends its first request alone, holds the others until it is answered, then sends
    /// them to the host that answered; each session has its own limiter and queue.
    #[test]
    fn sticky_sessions_pin_follow_ups_to_the_first_answer() {
        let mut java = JavaRandom::new(4);
        let mut fx = Vec::new();
        let mut c = DialogueClient::sticky(Strategy::Balanced, 1, &[0, 1], 2, 0, &mut java);
        submit_in_sessions(
            &mut c,
            &mut java,
            &mut fx,
            &[(0, 0), (1, 0), (2, 0), (3, 1)],
        );
        let sent = sends(&fx);
        assert_eq!(sent.len(), 2, "one token call per session: {sent:?}");
        assert_eq!((sent[0].0, sent[1].0), (0, 3));
        let host = sent[0].1;
        assert_eq!(c.sessions[0].waiting, [1, 2]);
        // A 429 is still a response: it pins the session, and the held requests follow to that host.
        fx.clear();
        c.complete(
            sent[0].2,
            Reply::Status(429),
            1,
            &mut java,
            &mut NoRetry,
            &mut fx,
        );
        let follow = sends(&fx);
        assert_eq!(
            follow.iter().map(|s| (s.0, s.1)).collect::<Vec<_>>(),
            [(1, host), (2, host)]
        );
        assert_eq!(finished(&fx), [(0, Some(Reply::Status(429)))]);
        assert_eq!(
            c.sessions[0].target.map(|h| c.channels[0].servers[h]),
            Some(host)
        );
        // The session's limiter counts every response as a success; it is the session's own.
        assert_eq!(c.sessions[0].limiter.in_flight(), 2);
        assert_eq!(c.sessions[1].limiter.in_flight(), 1);
    }

    /// A session whose token call fails with an exception stays unpinned; its next held request becomes the
    /// token call.
    #[test]
    fn a_failed_token_call_passes_the_token_on() {
        let mut java = JavaRandom::new(5);
        let mut fx = Vec::new();
        let mut c = DialogueClient::sticky(Strategy::Balanced, 1, &[0, 1], 1, 0, &mut java);
        submit_in_sessions(&mut c, &mut java, &mut fx, &[(0, 0), (1, 0), (2, 0)]);
        fx.clear();
        c.complete(0, Reply::Refused, 1, &mut java, &mut NoRetry, &mut fx);
        assert_eq!(sends(&fx).iter().map(|s| s.0).collect::<Vec<_>>(), [1]);
        assert_eq!(c.sessions[0].target, None);
        assert_eq!(c.sessions[0].token_call, Some(1));
        assert_eq!(c.sessions[0].waiting, [2]);
    }

    /// A new server list builds a new channel at the next request; the old one keeps serving its own.
    #[test]
    fn a_new_server_list_builds_a_new_channel_at_the_next_request() {
        let mut java = JavaRandom::new(6);
        let mut fx = Vec::new();
        let mut c = DialogueClient::new(Strategy::Balanced, 1, &[0, 1]);
        c.submit(0, 0, None, 0, &mut java, &mut NoRetry, &mut fx);
        c.set_servers(&[1, 0]);
        assert!(c.pending.is_none(), "same set, other order: kept");
        c.set_servers(&[0, 1, 2]);
        assert_eq!(c.channels.len(), 1, "built lazily");
        c.submit(1, 0, None, 1, &mut java, &mut NoRetry, &mut fx);
        assert_eq!(c.channels.len(), 2);
        c.complete(0, Reply::Status(500), 2, &mut java, &mut NoRetry, &mut fx);
        let Selection::Balanced(t) = &mut c.channels[1].selection else {
            panic!()
        };
        assert_eq!((0..3).map(|h| t.host(h).reservoir.get(2)).sum::<f64>(), 0.0);
        assert_eq!(c.in_flight(), 1);
    }
}
