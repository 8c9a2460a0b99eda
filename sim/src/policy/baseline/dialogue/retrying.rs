//! dialogue's `RetryingChannel`: after each failed try, the scenario's retry rule ([`Retry`]) decides whether
//! and when the request tries again; a request that does not is over.

use super::java::JavaRandom;
use super::{DialogueClient, Effect, Outcome};
use crate::policy::{Reply, RequestId};

/// The retry rule the client's `RetryingChannel` applies (the scenario's).
pub trait Retry {
    /// Try number `tries` of a request ended with `reply`: the delay before the next try, or `None` to end
    /// the request with this reply. A per-request jitter is drawn from `java`, dialogue's shared generator.
    fn after(&mut self, reply: Reply, tries: u32, now: u64, java: &mut JavaRandom) -> Option<u64>;
}

impl DialogueClient {
    /// Request `req`'s backoff is over: it tries again.
    pub fn wake(
        &mut self,
        req: RequestId,
        now: u64,
        java: &mut JavaRandom,
        retry: &mut dyn Retry,
        fx: &mut Vec<Effect>,
    ) {
        if self.requests.contains_key(&req) {
            self.enqueue(req, now, java, retry, fx);
        }
    }

    /// A request failed inside the client before reaching a host (no URIs, a full queue).
    pub(super) fn fail(
        &mut self,
        r: RequestId,
        now: u64,
        java: &mut JavaRandom,
        retry: &mut dyn Retry,
        fx: &mut Vec<Effect>,
    ) {
        self.retrying(r, Outcome::Failed, None, 0, now, java, retry, fx);
    }

    /// `RetryingChannel`: retry after the rule's delay (at once for a zero delay), or end the request.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn retrying(
        &mut self,
        r: RequestId,
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
            self.token_call_ended(s, outcome, host, now, java, retry, fx);
        }
    }
}
