//! dialogue's `StickyEndpointChannels2`: a sticky session's router (its first request asks for a sticky
//! token, later ones wait for that call to end and then follow it to the host that answered), its
//! `StickyConcurrencyLimitedChannel`, and its own queue in front of the channel's node selection.

use std::collections::VecDeque;

use super::client::{Channel, Up};
use super::java::JavaRandom;
use super::limiter::{Ciad, Level, Verdict};
use super::queued::Admit;
use super::retrying::Retry;
use super::{DialogueClient, Effect, Outcome, Strategy};
use crate::policy::{RequestId, ServerId};

/// A sticky session (`StickyChannel2`): its router, its own limiter and queue in front of the channel's
/// node selection.
#[derive(Clone, Debug)]
pub(super) struct Session {
    /// The host the session is pinned to, from its first successful call's response.
    pub(super) target: Option<usize>,
    /// The call in flight that will pin the session.
    pub(super) token_call: Option<RequestId>,
    /// Requests waiting for that call to end.
    pub(super) waiting: Vec<RequestId>,
    pub(super) limiter: Ciad,
    pub(super) queue: VecDeque<RequestId>,
}

impl DialogueClient {
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

    /// The sticky router, or straight on.
    pub(super) fn route(
        &mut self,
        r: RequestId,
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

    /// The queue's delegate: a sticky session's limiter, then node selection.
    pub(super) fn admit(
        &mut self,
        r: RequestId,
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

    /// Session `s`'s token call ended after trying `host` (as [`retrying`](Self::retrying) reports it): any
    /// response pins the session to that host; then the requests it held go, in order.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn token_call_ended(
        &mut self,
        s: usize,
        outcome: Outcome,
        host: usize,
        now: u64,
        java: &mut JavaRandom,
        retry: &mut dyn Retry,
        fx: &mut Vec<Effect>,
    ) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::baseline::dialogue::testing::{finished, sends, NoRetry};
    use crate::policy::Reply;

    /// Submits `(request, session)` pairs at time 0, endpoint 0, without retries.
    fn submit_in_sessions(
        c: &mut DialogueClient,
        java: &mut JavaRandom,
        fx: &mut Vec<Effect>,
        requests: &[(usize, usize)],
    ) {
        for &(r, session) in requests {
            c.submit(RequestId(r), 0, Some(session), 0, java, &mut NoRetry, fx);
        }
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
        assert_eq!(c.sessions[0].waiting, [RequestId(1), RequestId(2)]);
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
        assert_eq!(c.sessions[0].token_call, Some(RequestId(1)));
        assert_eq!(c.sessions[0].waiting, [RequestId(2)]);
    }
}
