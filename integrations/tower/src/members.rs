//! The members as a balance's handles see them: a table by node id that the balance writes on each
//! membership change once a handle asked for it, and that the handles read from any task. [`Metrics`]
//! reads the members' names (their keys' `Display`), [`Checks`] their keys.
//!
//! Off the hot path: `call` and the response futures never touch a table; the balance takes its lock on
//! membership changes, a handle once per node it reads.
//!
//! [`Metrics`]: crate::Metrics
//! [`Checks`]: crate::Checks

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// A value per member, by node id, shared by a balance and its handles.
pub(crate) struct Members<V> {
    /// A `Mutex`, not on the hot path (see the module docs).
    by_id: Mutex<HashMap<u64, V>>,
}

impl<V> Default for Members<V> {
    fn default() -> Self {
        Members {
            by_id: Mutex::new(HashMap::new()),
        }
    }
}

impl<V> Members<V> {
    fn lock(&self) -> MutexGuard<'_, HashMap<u64, V>> {
        // Only the balance changes the map, with plain map operations; a panic while a reader holds the
        // lock (in a key's `Clone` or `PartialEq`, a name's writer) leaves the map as it was, so a
        // poisoned lock still holds a consistent map.
        self.by_id.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn insert(&self, id: u64, value: V) {
        self.lock().insert(id, value);
    }

    fn remove(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// How many members the table holds.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// `read` of node `id`'s value, or of `None` for a node the balance does not know (one added on the
    /// balancer directly, or one that left).
    pub(crate) fn with<T>(&self, id: u64, read: impl FnOnce(Option<&V>) -> T) -> T {
        read(self.lock().get(&id))
    }

    /// The id of a member whose value is `value`: a scan of the table, made by a handle once per
    /// question, never by a call.
    pub(crate) fn id_of(&self, value: &V) -> Option<u64>
    where
        V: PartialEq,
    {
        self.lock()
            .iter()
            .find_map(|(&id, v)| (v == value).then_some(id))
    }
}

/// A table the balance keeps for its handles, and how a member's key becomes its value there.
pub(crate) struct Mirror<K, V> {
    pub(crate) table: Arc<Members<V>>,
    of: fn(&K) -> V,
}

impl<K, V> Mirror<K, V> {
    /// A table of the members `now` holds, kept by the balance from then on.
    fn new<'a>(now: impl Iterator<Item = (u64, &'a K)>, of: fn(&K) -> V) -> Self
    where
        K: 'a,
    {
        let table = Arc::new(Members::default());
        for (id, key) in now {
            table.insert(id, of(key));
        }
        Mirror { table, of }
    }
}

/// The tables a balance keeps for its handles: each is made when the first handle that reads it is
/// asked for, and every later handle of that kind shares it.
pub(crate) struct Mirrors<K> {
    /// The members' names, for [`Metrics`](crate::Metrics).
    names: Option<Mirror<K, String>>,
    /// The members' keys, for [`Checks`](crate::Checks).
    keys: Option<Mirror<K, K>>,
}

impl<K> Default for Mirrors<K> {
    fn default() -> Self {
        Mirrors {
            names: None,
            keys: None,
        }
    }
}

impl<K> Mirrors<K> {
    /// The table of names, made of the members `now` holds (each key's `Display`) if it is the first.
    pub(crate) fn names<'a>(
        &mut self,
        now: impl Iterator<Item = (u64, &'a K)>,
    ) -> Arc<Members<String>>
    where
        K: std::fmt::Display + 'a,
    {
        let mirror = self
            .names
            .get_or_insert_with(|| Mirror::new(now, |key: &K| key.to_string()));
        Arc::clone(&mirror.table)
    }

    /// The table of keys, made of the members `now` holds if it is the first.
    pub(crate) fn keys<'a>(&mut self, now: impl Iterator<Item = (u64, &'a K)>) -> Arc<Members<K>>
    where
        K: Clone + 'a,
    {
        let mirror = self.keys.get_or_insert_with(|| Mirror::new(now, K::clone));
        Arc::clone(&mirror.table)
    }

    /// Node `id` joined under `key`.
    pub(crate) fn insert(&self, id: u64, key: &K) {
        if let Some(m) = &self.names {
            m.table.insert(id, (m.of)(key));
        }
        if let Some(m) = &self.keys {
            m.table.insert(id, (m.of)(key));
        }
    }

    /// Node `id` left.
    pub(crate) fn remove(&self, id: u64) {
        if let Some(m) = &self.names {
            m.table.remove(id);
        }
        if let Some(m) = &self.keys {
            m.table.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_made_of_the_members_and_follow_them() {
        let mut mirrors: Mirrors<&str> = Mirrors::default();
        mirrors.insert(1, &"a"); // no table yet: nothing to keep
        let names = mirrors.names([(1, &"a")].into_iter());
        mirrors.insert(2, &"b");
        let keys = mirrors.keys([(1, &"a"), (2, &"b")].into_iter());
        // A second handle shares the table, whatever it is told of the members.
        assert!(Arc::ptr_eq(&keys, &mirrors.keys(std::iter::empty())));
        mirrors.remove(1);
        mirrors.insert(3, &"c");
        assert_eq!(names.len(), 2);
        assert_eq!(names.with(2, |n| n.cloned()), Some("b".to_owned()));
        assert_eq!(names.with(1, |n| n.cloned()), None);
        assert_eq!(keys.with(3, |k| k.copied()), Some("c"));
        assert_eq!(keys.id_of(&"b"), Some(2));
        assert_eq!(keys.id_of(&"a"), None);
    }
}
