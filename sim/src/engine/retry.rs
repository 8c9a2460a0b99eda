//! The scenario's retry rule as the engine's clients and dialogue's apply it: the delay before each retry
//! (exponential with full jitter, or weir's responsive backoff), the retry budget, and retries coming due.

use weir::overload::{Criticality, RetryBudget, ThrottleConfig};
use weir::{Backoff, Rng, Throttle};

use super::{Engine, Ev, Stack};
use crate::metrics::RequestEnd;
use crate::model::{Retries, RetryBackoff};
use crate::policy::baseline::dialogue::{self, JavaRandom};
use crate::policy::{Reply, RequestId, RetryPlan};

/// A client's retry state: the scenario's rule, its responsive backoff (if the rule uses one) and its
/// retry budget.
pub(super) struct Retrier {
    rule: Option<Retries>,
    backoff: Option<Backoff>,
    budget: Option<Throttle>,
    /// weir's retry budget, when the policy brings one.
    shared: Option<RetryBudget>,
}

impl Retrier {
    pub(super) fn new(plan: RetryPlan) -> Self {
        let rule = plan.rule;
        Retrier {
            shared: plan.budget.and_then(|c| RetryBudget::new(c).ok()),
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
    pub(super) fn request(&mut self, now: u64, rng: &mut Rng) {
        if let Some(t) = &self.budget {
            let _ = t.allow(Criticality::Critical, now, rng);
        }
        if let Some(b) = &self.shared {
            b.request(now);
        }
    }

    /// A try succeeded: the responsive backoff comes down.
    pub(super) fn success(&mut self, rng: &mut Rng) {
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
                .is_none_or(|t| t.allow_retry(Criticality::Critical, now, rng).is_ok())
            && self
                .shared
                .as_ref()
                .is_none_or(|b| b.try_retry(now).is_ok());
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
pub(super) struct DialogueRetry<'a> {
    pub(super) retrier: &'a mut Retrier,
    pub(super) rng: &'a mut Rng,
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

impl Engine<'_> {
    /// Request `r`'s retry is due.
    pub(super) fn retry(&mut self, r: RequestId) {
        let cl = &mut self.clients[self.requests[r].client];
        match &mut cl.stack {
            // A request that ended at its deadline does not retry (dialogue's client is still woken, so
            // that it lets go of the request; what it sends is cancelled, see `apply`).
            Stack::Balancer { .. } if self.requests[r].ended => {}
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

    /// After a failed try of request `r` (an answer, or `None`: a refusal by the balancer): retries after
    /// the rule's delay, or ends it as `end`.
    pub(super) fn retry_or_end(&mut self, r: RequestId, reply: Option<Reply>, end: RequestEnd) {
        if self.requests[r].ended {
            return;
        }
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
            None => self.end_request(r, end, false),
        }
    }
}
