//! Health checks: a balancer client's policy names a server to check ([`Balance::due_check`]), the engine
//! answers the check from what the server is doing when it arrives, and the policy hears the answer
//! ([`Balance::check_answered`]) after the check's time.
//!
//! A check is the application's own request to the server's health endpoint, not a caller's call: it takes
//! no worker, joins no queue, and counts as no attempt, request, server answer or busy time. It reads the
//! server's state (whether it is up, present, its calls in progress, its rate meter) and changes none of
//! it. Its random draws come from one generator of the engine's own, so a row that sends checks draws
//! its calls' latencies and errors as its twin without checks does.
//!
//! | the server at the check's arrival | the answer | after |
//! |---|---|---|
//! | down, not present (removed), or refusing connections | unhealthy | at once |
//! | shedding (`shed_above`, with that many calls in progress) | unhealthy | at once |
//! | answering nothing ([`Latency::Never`](crate::model::Latency::Never), a black hole) | unhealthy | [`CHECK_TIMEOUT`] |
//! | [`StatusFn::Fixed`] | healthy iff the status is 2xx | at once |
//! | [`StatusFn::ErrorRate`] | the error status with its probability (else 200): healthy iff 2xx | at once |
//! | [`StatusFn::AboveCapacity`] | unhealthy iff more calls are in progress than the capacity | at once |
//! | [`StatusFn::OneMinuteRate`] | unhealthy iff the meter's rate is at the limit or over | at once |
//!
//! A health endpoint does no work, and the engine's network is instant: a server that answers at all
//! answers a check at once, whatever its calls' service time (the first endpoint's behaviour for the
//! phase gives the status). So a server whose calls take long by design (dialogue's 200 s nodes) or that
//! slowed down is not failed by its checks; the slowness of its calls is the balancer's to see.
//!
//! [`Balance::due_check`]: crate::policy::Balance::due_check
//! [`Balance::check_answered`]: crate::policy::Balance::check_answered

use super::{Engine, Ev, Stack};
use crate::model::{Latency, StatusFn, SEC};
use crate::policy::ServerId;

/// How long a client waits for a check's answer before it counts the check as failed: 1 s, the order of
/// the check timeouts Envoy's and HAProxy's configurations usually give (not tuned).
pub const CHECK_TIMEOUT: u64 = SEC;

impl Engine<'_> {
    /// Before a try of a request of client `c`: if its policy names a server due for a check, the client
    /// sends it one, whose answer reaches the policy as [`Ev::CheckDone`].
    pub(super) fn check_if_due(&mut self, c: usize) {
        let Stack::Balancer { policy, .. } = &mut self.clients[c].stack else {
            return;
        };
        let Some(server) = policy.due_check(self.now) else {
            return;
        };
        self.out.checks += 1;
        let (healthy, after) = self.check_answer(server);
        self.at(
            self.now + after,
            Ev::CheckDone {
                client: c,
                server,
                healthy,
            },
        );
    }

    /// A check's answer reaches client `c`'s policy (even where its list no longer has the server).
    pub(super) fn check_done(&mut self, c: usize, server: ServerId, healthy: bool) {
        if let Stack::Balancer { policy, .. } = &mut self.clients[c].stack {
            policy.check_answered(server, healthy, self.now);
        }
    }

    /// The answer of a check of `sid` arriving now, and how long after now it comes (see the module's
    /// table). A server the scenario does not have answers as a removed one.
    fn check_answer(&mut self, sid: ServerId) -> (bool, u64) {
        let (Some(server), Some(spec)) = (self.servers.get(sid), self.s.servers.get(sid)) else {
            return (false, 0);
        };
        let b = spec.behavior(self.now, 0);
        let shed = spec.shed_above.is_some_and(|limit| server.active >= limit);
        if server.down || !server.present || b.status == StatusFn::Refuse || shed {
            return (false, 0);
        }
        if b.latency == Latency::Never {
            return (false, CHECK_TIMEOUT);
        }
        let rng = &mut self.check_rng;
        let success = |code: u16| (200..300).contains(&code);
        let healthy = match b.status {
            StatusFn::Fixed(code) => success(code),
            StatusFn::ErrorRate { code, p } => rng.f64() >= p || success(code),
            StatusFn::AboveCapacity { capacity, .. } => server.active <= capacity,
            // A copy: reading the meter catches up its ticks, which is the server's to do.
            StatusFn::OneMinuteRate { per_sec } => {
                let mut meter = server.meter;
                meter.rate(self.now) < per_sec
            }
            StatusFn::Refuse => false,
        };
        (healthy, 0)
    }
}
