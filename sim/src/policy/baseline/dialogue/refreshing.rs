//! dialogue's `RefreshingChannel` (its simulation's `RefreshingChannelFactory`): when the server list
//! changes, the next request builds a new `DialogueChannel`, a new generation of this client's channels, with
//! fresh scores, pins, limiters and queues. Requests already in an older generation finish there, retries
//! included.

use std::collections::BTreeSet;

use super::client::Channel;
use super::java::JavaRandom;
use super::DialogueClient;
use crate::policy::ServerId;

impl DialogueClient {
    /// The generation a new request joins: the newest channel, built first if the server list changed since.
    pub(super) fn refresh(&mut self, now: u64, java: &mut JavaRandom) -> usize {
        if let Some(servers) = self.pending.take() {
            let ch = Channel::new(servers, self.strategy, self.endpoints, now, java);
            self.channels.push(ch);
        }
        self.channels.len() - 1
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::baseline::dialogue::client::Selection;
    use crate::policy::baseline::dialogue::testing::NoRetry;
    use crate::policy::baseline::dialogue::Strategy;
    use crate::policy::{Reply, RequestId};

    /// A new server list builds a new channel at the next request; the old one keeps serving its own.
    #[test]
    fn a_new_server_list_builds_a_new_channel_at_the_next_request() {
        let mut java = JavaRandom::new(6);
        let mut fx = Vec::new();
        let mut c = DialogueClient::new(Strategy::Balanced, 1, &[0, 1]);
        c.submit(RequestId(0), 0, None, 0, &mut java, &mut NoRetry, &mut fx);
        c.set_servers(&[1, 0]);
        assert!(c.pending.is_none(), "same set, other order: kept");
        c.set_servers(&[0, 1, 2]);
        assert_eq!(c.channels.len(), 1, "built lazily");
        c.submit(RequestId(1), 0, None, 1, &mut java, &mut NoRetry, &mut fx);
        assert_eq!(c.channels.len(), 2);
        c.complete(0, Reply::Status(500), 2, &mut java, &mut NoRetry, &mut fx);
        let Selection::Balanced(t) = &mut c.channels[1].selection else {
            panic!()
        };
        assert_eq!((0..3).map(|h| t.host(h).reservoir.get(2)).sum::<f64>(), 0.0);
        assert_eq!(c.in_flight(), 1);
    }
}
