//! The stage per host and endpoint: dialogue's per-endpoint `QueuedChannel` over its endpoint-level
//! `ConcurrencyLimitedChannel`, below node selection. A request its host admitted waits here, holding its
//! host permit and counted as in flight, until the endpoint limiter lets it go.

use std::collections::VecDeque;

use super::client::Up;
use super::limiter::Ciad;
use super::{DialogueClient, Effect};
use crate::policy::RequestId;

/// Per host and endpoint: dialogue's per-endpoint `QueuedChannel` over its endpoint-level limiter.
#[derive(Clone, Debug)]
pub(super) struct Stage {
    pub(super) limiter: Ciad,
    pub(super) queue: VecDeque<(RequestId, Up)>,
}

impl DialogueClient {
    /// The endpoint stage: straight through the endpoint limiter when its queue is empty and there is room,
    /// else into its queue.
    pub(super) fn stage(&mut self, r: RequestId, up: Up, fx: &mut Vec<Effect>) {
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
    pub(super) fn drain_stage(&mut self, g: usize, h: usize, e: usize, fx: &mut Vec<Effect>) {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::baseline::dialogue::testing::{finished, sends, NoRetry};
    use crate::policy::baseline::dialogue::{JavaRandom, Strategy};
    use crate::policy::{Reply, ServerId};

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
                RequestId(req),
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
            c.submit(RequestId(r), 0, None, 0, &mut java, &mut NoRetry, &mut fx);
            let t = sends(&fx)[0].2;
            c.complete(t, Reply::Status(500), 0, &mut java, &mut NoRetry, &mut fx);
        }
        assert_eq!(endpoint_limit(&c, 3, 0), 1.0);
        fx.clear();
        c.submit(RequestId(100), 0, None, 5, &mut java, &mut NoRetry, &mut fx);
        c.submit(RequestId(101), 0, None, 5, &mut java, &mut NoRetry, &mut fx);
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
            u.submit(RequestId(r), 0, None, 0, &mut java, &mut NoRetry, &mut fx);
        }
        assert_eq!(sends(&fx).len(), 30, "no limiter holds anything back");
    }
}
