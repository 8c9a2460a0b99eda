//! The scenario's membership actions: a server added, removed or put in lame duck, and what each client's
//! balancer (or dialogue's client) is told.

use super::{Engine, Stack};
use crate::model::{Action, Scenario};
use crate::policy::baseline::dialogue;
use crate::policy::{Refusal, ServerId};

impl Engine<'_> {
    /// The servers client `c` may use now: its subset, minus servers not present.
    pub(super) fn visible(&self, c: usize) -> Vec<ServerId> {
        self.clients[c]
            .servers
            .iter()
            .copied()
            .filter(|&s| self.servers[s].present)
            .collect()
    }

    /// After a membership change of client `c`: a waiting client's queue is drained (a node may have come
    /// into rotation, as the core's waiting acquire does); the other clients wait for a completion.
    fn membership_drain(&mut self, c: usize) {
        if let Stack::Balancer { policy, .. } = &self.clients[c].stack {
            if matches!(policy.on_refusal(), Refusal::Wait { .. }) {
                self.drain(c);
            }
        }
    }

    /// Scenario action `i` is due.
    pub(super) fn act(&mut self, i: usize) {
        let (_, action) = self.s.actions[i];
        match action {
            Action::Add(s) | Action::Remove(s) => {
                self.servers[s].present = matches!(action, Action::Add(_));
                for c in 0..self.clients.len() {
                    if self.clients[c].servers.contains(&s) {
                        let list = self.visible(c);
                        match &mut self.clients[c].stack {
                            Stack::Balancer { policy, .. } => policy.set_servers(&list, self.now),
                            Stack::Dialogue(d) => d.set_servers(&uri_order(self.s, &list)),
                        }
                        self.membership_drain(c);
                    }
                }
            }
            Action::Drain(s, on) => {
                self.servers[s].draining = on;
                for c in 0..self.clients.len() {
                    let cl = &mut self.clients[c];
                    if cl.servers.contains(&s) {
                        match &mut cl.stack {
                            Stack::Balancer { policy, .. } => policy.set_draining(s, on, self.now),
                            Stack::Dialogue(d) => d.set_draining(s, on),
                        }
                        self.membership_drain(c);
                    }
                }
            }
        }
    }
}

/// A dialogue client's URI list: `servers` in the order a `java.util.HashMap` keyed by their names
/// iterates them (dialogue's simulation builds each client's URIs from such a map).
pub(super) fn uri_order(s: &Scenario, servers: &[ServerId]) -> Vec<ServerId> {
    let names: Vec<&str> = servers
        .iter()
        .map(|&i| s.servers[i].name.as_str())
        .collect();
    dialogue::java::hash_map_order(&names)
        .into_iter()
        .map(|i| servers[i])
        .collect()
}
