//! The bookkeeping every baseline shares: the client's server list with one policy state per server, the
//! lame-duck flags, and the attempts still in flight.
//!
//! A real client keeps per-attempt context in the attempt itself (tower's `Handle` holds an `Arc` to the
//! endpoint's estimate, dialogue's callback closes over the channel object and the permit). Here each attempt
//! gets a record under a tag that travels in its [`Pick`](crate::policy::Pick) and comes back with its
//! completion, so a completion finds exactly its own record whatever order the server answers in.
//!
//! Each record names the *epoch* of the state it was sent under. A server that leaves the list loses its
//! state; if it comes back it gets a fresh state with a new epoch, and the completions of attempts sent
//! before are then matched with no state at all (in the real clients they land on the dropped object).

use std::collections::BTreeMap;

use weir::Rng;

use crate::policy::{Pick, ServerId};

/// One server of the client's list and the policy's state for it.
#[derive(Debug)]
pub(crate) struct Node<S> {
    /// The server.
    pub(crate) id: ServerId,
    /// Lame duck: no new attempts.
    pub(crate) draining: bool,
    /// Attempts sent under this state that have not completed (this client's active requests to the server).
    pub(crate) inflight: u32,
    /// Which state the attempts belong to (see the module comment).
    epoch: u64,
    /// The policy's own per-server state.
    pub(crate) state: S,
}

/// The client's servers in order, with a state `S` per server and a record `T` per attempt in flight.
#[derive(Debug)]
pub(crate) struct Members<S, T = ()> {
    nodes: Vec<Node<S>>,
    /// Indices into `nodes` of the servers that are not draining, in list order.
    usable: Vec<usize>,
    /// The attempts in flight by tag: (server, epoch, record).
    outstanding: BTreeMap<u64, (ServerId, u64, T)>,
    next_epoch: u64,
    next_tag: u64,
}

impl<S, T: Copy> Members<S, T> {
    /// No servers yet.
    pub(crate) fn new() -> Self {
        Members {
            nodes: Vec::new(),
            usable: Vec::new(),
            outstanding: BTreeMap::new(),
            next_epoch: 0,
            next_tag: 0,
        }
    }

    /// The servers in the current order.
    pub(crate) fn nodes(&self) -> &[Node<S>] {
        &self.nodes
    }

    /// The servers in the current order, mutably (their states; membership changes go through `set`).
    pub(crate) fn nodes_mut(&mut self) -> &mut [Node<S>] {
        &mut self.nodes
    }

    /// Indices (into [`nodes`](Self::nodes)) of the servers that may get new attempts, in order.
    pub(crate) fn usable(&self) -> &[usize] {
        &self.usable
    }

    /// The servers mutably together with the usable indices (for a pass over the usable servers' states).
    pub(crate) fn usable_nodes_mut(&mut self) -> (&mut [Node<S>], &[usize]) {
        (&mut self.nodes, &self.usable)
    }

    /// Where `id` is in the current order.
    pub(crate) fn position(&self, id: ServerId) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == id)
    }

    /// Makes `servers` the list (duplicates after the first ignored). A server that stays keeps its state,
    /// in-flight count and lame-duck flag; for every new server `fresh` makes a new state, and it starts
    /// serving.
    pub(crate) fn set(&mut self, servers: &[ServerId], mut fresh: impl FnMut(ServerId) -> S) {
        let mut old: Vec<Option<Node<S>>> = self.nodes.drain(..).map(Some).collect();
        for &id in servers {
            if self.nodes.iter().any(|n| n.id == id) {
                continue;
            }
            let prev = old
                .iter_mut()
                .find(|n| n.as_ref().is_some_and(|n| n.id == id))
                .and_then(Option::take);
            let node = prev.unwrap_or_else(|| {
                let epoch = self.next_epoch;
                self.next_epoch += 1;
                Node {
                    id,
                    draining: false,
                    inflight: 0,
                    epoch,
                    state: fresh(id),
                }
            });
            self.nodes.push(node);
        }
        self.refresh_usable();
    }

    /// Sets `id`'s lame-duck flag; returns whether anything changed (false for a server not in the list).
    pub(crate) fn set_draining(&mut self, id: ServerId, draining: bool) -> bool {
        match self.nodes.iter_mut().find(|n| n.id == id) {
            Some(node) if node.draining != draining => {
                node.draining = draining;
                self.refresh_usable();
                true
            }
            _ => false,
        }
    }

    /// Records an attempt sent to the server at `index` (which must be valid), with `record` for its end, and
    /// returns the attempt's [`Pick`], whose tag finds the record again.
    pub(crate) fn start(&mut self, index: usize, record: T) -> Pick {
        let node = &mut self.nodes[index];
        node.inflight += 1;
        let tag = self.next_tag;
        self.next_tag += 1;
        self.outstanding.insert(tag, (node.id, node.epoch, record));
        Pick {
            server: node.id,
            lease: None,
            tag,
        }
    }

    /// Matches the end of attempt `tag` with its record: the index of the server whose state it was sent
    /// under, with the record, or `None` when that state is gone (the server left) or no attempt of that tag is in flight.
    pub(crate) fn finish(&mut self, tag: u64) -> Option<(usize, T)> {
        let (id, epoch, record) = self.outstanding.remove(&tag)?;
        let index = self
            .nodes
            .iter()
            .position(|n| n.id == id && n.epoch == epoch)?;
        let node = &mut self.nodes[index];
        node.inflight = node.inflight.saturating_sub(1);
        Some((index, record))
    }

    /// Attempts picked and not completed, to any server (including those that left).
    pub(crate) fn in_flight(&self) -> usize {
        self.outstanding.len()
    }

    fn refresh_usable(&mut self) {
        self.usable.clear();
        let usable = self.nodes.iter().enumerate().filter(|(_, n)| !n.draining);
        self.usable.extend(usable.map(|(i, _)| i));
    }
}

/// A round-robin position in a client's list that survives list changes: each client starts at its own
/// random offset (drawn from its seed, so a fleet does not all start at the first server), and after a change
/// the cycle goes on after the server picked last if it is still there.
#[derive(Debug)]
pub(crate) struct Cursor {
    /// Index of the next server to try.
    pub(crate) next: usize,
    /// The server picked last.
    last: Option<ServerId>,
    /// The seed's random start, applied to the first non-empty list.
    offset: Option<u64>,
}

impl Cursor {
    /// A cursor whose start is drawn from `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Cursor {
            next: 0,
            last: None,
            offset: Some(Rng::with_seed(seed).u64(..)),
        }
    }

    /// The first server index in cycle order from the cursor that `ok` accepts; the cursor moves past it.
    pub(crate) fn advance<S>(
        &mut self,
        nodes: &[Node<S>],
        ok: impl Fn(usize) -> bool,
    ) -> Option<usize> {
        let n = nodes.len();
        let index = (0..n).map(|k| (self.next + k) % n).find(|&i| ok(i))?;
        self.next = (index + 1) % n;
        self.last = Some(nodes[index].id);
        Some(index)
    }

    /// Re-places the cursor after the list became `members`' current one.
    pub(crate) fn reset<S, T: Copy>(&mut self, members: &Members<S, T>) {
        let n = members.nodes().len();
        if n == 0 {
            self.next = 0;
            return;
        }
        self.next = match (self.offset, self.last.and_then(|s| members.position(s))) {
            (Some(offset), _) => {
                self.offset = None;
                (offset % n as u64) as usize
            }
            (None, Some(last)) => (last + 1) % n,
            (None, None) => self.next % n,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_stay_leave_and_return_fresh() {
        let mut m: Members<u32> = Members::new();
        m.set(&[1, 2, 2, 3], |id| id as u32 * 10);
        assert_eq!(
            m.nodes().iter().map(|n| n.id).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        m.nodes_mut()[1].state = 99;
        let old = [m.start(1, ()).tag, m.start(1, ()).tag];
        assert!(m.set_draining(2, true));
        assert!(!m.set_draining(2, true));
        assert!(!m.set_draining(7, true));
        assert_eq!(m.usable(), [0, 2]);
        // 2 stays: same state, same in-flight count, still draining.
        m.set(&[3, 2], |_| 0);
        assert_eq!(m.nodes()[1].state, 99);
        assert_eq!(m.nodes()[1].inflight, 2);
        assert_eq!(m.usable(), [0]);
        // 2 leaves and returns: fresh state; its old attempts complete against nothing.
        m.set(&[3], |_| 0);
        m.set(&[3, 2], |_| 5);
        assert_eq!((m.nodes()[1].state, m.nodes()[1].inflight), (5, 0));
        assert!(!m.nodes()[1].draining);
        assert_eq!(m.in_flight(), 2);
        assert_eq!(m.finish(old[0]), None);
        let new = m.start(1, ()).tag;
        assert_eq!(
            m.finish(new),
            Some((1, ())),
            "its own record, not the older stale one"
        );
        assert_eq!(m.finish(new), None, "a tag ends once");
        assert_eq!(m.finish(old[1]), None);
        assert_eq!(m.in_flight(), 0);
    }
}
