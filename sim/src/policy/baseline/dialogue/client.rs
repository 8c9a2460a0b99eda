//! One dialogue client (`DialogueChannel`): what a request and an attempt are, node selection
//! (`NodeSelectionStrategyChannel`) with the host-level limiter, the attempts on the wire, and the order in
//! which a completion's callbacks run. The other classes of the stack have a file each (see the
//! [module](super) table).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::balanced::Tracker;
use super::java::JavaRandom;
use super::limiter::{Ciad, Level};
use super::pin::Pin;
use super::queued::Admit;
use super::retrying::Retry;
use super::stage::Stage;
use super::sticky::Session;
use super::Outcome;
use crate::policy::{Reply, RequestId, ServerId};

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
    pub(super) fn limited(self) -> bool {
        self != Strategy::Unlimited
    }
}

/// What the client asks of the simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Send an attempt of request `req` to `server` now; hand `token` back with its completion.
    Send {
        /// The request.
        req: RequestId,
        /// Where to.
        server: ServerId,
        /// The client's number for the attempt.
        token: u64,
    },
    /// Request `req` is over: its final reply, or `None` when the client failed it itself (a full queue, no
    /// URIs).
    Finish {
        /// The request.
        req: RequestId,
        /// Its final reply.
        reply: Option<Reply>,
    },
    /// Call [`wake`](DialogueClient::wake) for request `req` at `at` (a retry's backoff is over).
    Wake {
        /// When.
        at: u64,
        /// The request.
        req: RequestId,
    },
}

/// How a host was chosen, and what its completion must release (dialogue's callbacks on the response future,
/// above the endpoint stage).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Up {
    pub(super) host: usize,
    /// The host limiter's permit snapshot (limited strategies).
    pub(super) host_permit: Option<u32>,
    /// Counted in the BALANCED tracker's in-flight requests.
    pub(super) tracked: bool,
    /// PIN_UNTIL_ERROR: the pin position the request was sent at.
    pub(super) pin_at: Option<usize>,
    /// A sticky session's permit snapshot.
    pub(super) sticky: Option<u32>,
    /// Came out of a queue (rather than its fast path): its completion answers the caller before the queue
    /// is drained, where the fast path drains first (the order of dialogue's future listeners).
    pub(super) via_queue: bool,
}

/// One attempt on the wire.
#[derive(Clone, Copy, Debug)]
struct Attempt {
    req: RequestId,
    up: Up,
    /// The endpoint limiter's permit snapshot (limited strategies).
    endpoint_permit: Option<u32>,
    /// Came out of the endpoint queue rather than its fast path.
    via_stage_queue: bool,
}

/// A request the client holds.
#[derive(Clone, Copy, Debug)]
pub(super) struct Req {
    pub(super) generation: usize,
    pub(super) endpoint: usize,
    pub(super) session: Option<usize>,
    /// Attempts sent so far.
    pub(super) tries: u32,
    /// A sticky session's first call, whose response pins the session.
    pub(super) token: bool,
    /// A sticky session's pinned host (dialogue's `STICKY` request attachment).
    pub(super) target: Option<usize>,
}

#[derive(Clone, Debug)]
pub(super) struct Host {
    /// The host-level limiter (limited strategies).
    pub(super) limiter: Option<Ciad>,
    /// One stage per endpoint (limited strategies).
    pub(super) stages: Vec<Stage>,
}

#[derive(Clone, Debug)]
pub(super) enum Selection {
    /// No URIs: every request fails (`ZeroUriNodeSelectionChannel`).
    Zero,
    /// One URI: no strategy at all.
    Single,
    Balanced(Tracker),
    Pin(Pin),
}

/// One `DialogueChannel`: built for one URI list, kept until the requests sent through it are done.
#[derive(Clone, Debug)]
pub(super) struct Channel {
    pub(super) servers: Vec<ServerId>,
    pub(super) selection: Selection,
    pub(super) hosts: Vec<Host>,
    /// The multi-host `QueuedChannel`.
    pub(super) queue: VecDeque<RequestId>,
}

impl Channel {
    pub(super) fn new(
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
    pub(super) strategy: Strategy,
    pub(super) endpoints: usize,
    pub(super) channels: Vec<Channel>,
    /// The server list the next channel is built from, when it differs from the newest channel's.
    pub(super) pending: Option<Vec<ServerId>>,
    draining: BTreeSet<ServerId>,
    pub(super) sessions: Vec<Session>,
    pub(super) requests: BTreeMap<RequestId, Req>,
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

    /// Attempts on the wire.
    pub fn in_flight(&self) -> usize {
        self.attempts.len()
    }

    /// Requests the client holds (queued, waiting, backing off or on the wire).
    pub fn open_requests(&self) -> usize {
        self.requests.len()
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
        req: RequestId,
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
        let generation = self.refresh(now, java);
        self.requests.insert(
            req,
            Req {
                generation,
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

    /// Node selection and the host limiter; an admitted request goes on to its endpoint stage.
    pub(super) fn select(
        &mut self,
        r: RequestId,
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

    pub(super) fn send(
        &mut self,
        r: RequestId,
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
        r: RequestId,
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::baseline::dialogue::testing::sends;

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

    /// The shared generator is drawn in dialogue's order: a PIN_UNTIL_ERROR channel shuffles and draws its
    /// jitter when its first request arrives; each BALANCED pick shuffles; each retry draws one jitter.
    #[test]
    fn the_shared_generator_is_drawn_in_dialogues_order() {
        let mut java = JavaRandom::new(3_218_974_678);
        let mut reference = java.clone();
        let mut fx = Vec::new();
        let mut pin = DialogueClient::new(Strategy::PinUntilError, 1, &[10, 11, 12]);
        assert_eq!(java, reference, "nothing drawn before the first request");
        pin.submit(RequestId(0), 0, None, 0, &mut java, &mut Dialogue, &mut fx);
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
                req: RequestId(0)
            }]
        );
        fx.clear();
        pin.wake(RequestId(0), 2, &mut java, &mut Dialogue, &mut fx);
        assert_eq!(sends(&fx), [(0, order[1], 1)]);
        assert_eq!(java, reference, "the pin itself draws nothing per request");
        // BALANCED: one shuffle of the three hosts per pick (two draws), ties kept in shuffled order.
        let mut balanced = DialogueClient::new(Strategy::Balanced, 1, &[10, 11, 12]);
        fx.clear();
        balanced.submit(RequestId(0), 0, None, 0, &mut java, &mut Dialogue, &mut fx);
        let mut order = [10, 11, 12];
        reference.shuffle(&mut order);
        assert_eq!(sends(&fx), [(0, order[0], 0)]);
        assert_eq!(java, reference);
    }
}
