//! The table of inner services, keyed two ways: by the discovery key (for `Insert` and `Remove`, off the
//! hot path) and by weir node id (for `call`, on it).
//!
//! A node id is `generation << 32 | index`: the index is the entry's place in a vector, so finding the
//! service of a lease is one bounds-checked index and one comparison, no hashing. Every insertion takes a
//! new generation, so a key inserted again (tower's `Insert` of a key it has replaces the service) gets a
//! new weir node: leases of the old one release as stale, and the old service's history never passes to
//! the new one.

use std::collections::HashMap;
use std::hash::Hash;

/// One inner service and what the balance knows of it.
pub(crate) struct Node<K, S> {
    pub(crate) key: K,
    pub(crate) id: u64,
    pub(crate) service: S,
    /// Its `poll_ready` was `Pending` the last time it was asked: out of weir's rotation (lame duck)
    /// until it is ready again.
    pub(crate) unready: bool,
    /// The application put it into lame duck ([`Balance::set_lame_duck`](crate::Balance::set_lame_duck)).
    pub(crate) lame_duck: bool,
}

impl<K, S> Node<K, S> {
    /// Whether weir should keep it out of rotation.
    pub(crate) fn out_of_rotation(&self) -> bool {
        self.unready || self.lame_duck
    }
}

/// The services by node id and by key.
pub(crate) struct Nodes<K, S> {
    entries: Vec<Option<Node<K, S>>>,
    free: Vec<u32>,
    by_key: HashMap<K, u64>,
    generation: u32,
    /// Ids of the nodes whose service was not ready: polled at each `poll_ready` until they are.
    pub(crate) unready: Vec<u64>,
}

fn index(id: u64) -> usize {
    // The low 32 bits: always within the vector's u32-indexed range.
    (id & u64::from(u32::MAX)) as usize
}

impl<K: Hash + Eq + Clone, S> Nodes<K, S> {
    pub(crate) fn new() -> Self {
        Nodes {
            entries: Vec::new(),
            free: Vec::new(),
            by_key: HashMap::new(),
            generation: 0,
            unready: Vec::new(),
        }
    }

    /// The node a lease was granted for, if it is still here.
    #[inline]
    pub(crate) fn get_mut(&mut self, id: u64) -> Option<&mut Node<K, S>> {
        self.entries
            .get_mut(index(id))
            .and_then(Option::as_mut)
            .filter(|n| n.id == id)
    }

    /// The node of `id`, if it is still here.
    pub(crate) fn get(&self, id: u64) -> Option<&Node<K, S>> {
        self.entries
            .get(index(id))
            .and_then(Option::as_ref)
            .filter(|n| n.id == id)
    }

    /// The id of a key.
    pub(crate) fn id_of(&self, key: &K) -> Option<u64> {
        self.by_key.get(key).copied()
    }

    /// Every node.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Node<K, S>> {
        self.entries.iter().flatten()
    }

    /// Stores `service` under `key` with a new id (the caller has removed any node of that key) and
    /// returns the id.
    pub(crate) fn insert(&mut self, key: K, service: S) -> u64 {
        self.generation = self.generation.wrapping_add(1);
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                self.entries.push(None);
                // A balancer has at most 65,536 slots, so the table never nears u32::MAX entries.
                (self.entries.len() - 1) as u32
            }
        };
        let id = u64::from(self.generation) << 32 | u64::from(i);
        self.by_key.insert(key.clone(), id);
        if let Some(e) = self.entries.get_mut(i as usize) {
            *e = Some(Node {
                key,
                id,
                service,
                unready: false,
                lame_duck: false,
            });
        }
        id
    }

    /// Takes the node `id` out of the table (the service is dropped with it).
    pub(crate) fn remove(&mut self, id: u64) -> Option<Node<K, S>> {
        let node = self.entries.get_mut(index(id))?.take_if(|n| n.id == id)?;
        self.by_key.remove(&node.key);
        self.free.push(index(id) as u32);
        self.unready.retain(|&u| u != id);
        Some(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_never_reused_and_find_their_node() {
        let mut nodes = Nodes::new();
        let a = nodes.insert("a", 1);
        let b = nodes.insert("b", 2);
        assert_eq!(nodes.get_mut(a).map(|n| n.service), Some(1));
        assert_eq!(nodes.remove(a).map(|n| n.key), Some("a"));
        assert!(nodes.get_mut(a).is_none());
        assert!(nodes.remove(a).is_none());
        // The slot is reused, the id is not: the old id finds nothing.
        let a2 = nodes.insert("a", 3);
        assert_eq!(index(a2), index(a));
        assert_ne!(a2, a);
        assert!(nodes.get_mut(a).is_none());
        assert_eq!(nodes.id_of(&"a"), Some(a2));
        assert_eq!(nodes.id_of(&"b"), Some(b));
        assert_eq!(nodes.iter().count(), 2);
        assert!(nodes.get_mut(u64::MAX).is_none());
    }
}
