//! A fixed-size least-recently-used map (the `k8s.io/utils/lru` cache the correlator's three
//! parts keep their records in).

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// A map holding at most `capacity` entries; adding one more evicts the entry used least
/// recently. Both [`get`](Lru::get) and [`add`](Lru::add) count as a use.
#[derive(Debug)]
pub(crate) struct Lru<K, V> {
    capacity: usize,
    entries: HashMap<K, (V, u64)>,
    by_use: BTreeMap<u64, K>,
    clock: u64,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    /// An empty cache for at most `capacity` entries (at least one).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            entries: HashMap::new(),
            by_use: BTreeMap::new(),
            clock: 0,
        }
    }

    fn touch(&mut self, key: &K) -> Option<&mut V> {
        let (_, used) = self.entries.get_mut(key)?;
        self.by_use.remove(used);
        self.clock += 1;
        *used = self.clock;
        self.by_use.insert(self.clock, key.clone());
        self.entries.get_mut(key).map(|(value, _)| value)
    }

    /// The value of `key`, marking it used.
    pub(crate) fn get(&mut self, key: &K) -> Option<&mut V> {
        self.touch(key)
    }

    /// Sets `key` to `value`, marking it used; evicts the least recently used entry when the
    /// cache is over capacity.
    pub(crate) fn add(&mut self, key: K, value: V) {
        if let Some(slot) = self.touch(&key) {
            *slot = value;
            return;
        }
        self.clock += 1;
        self.by_use.insert(self.clock, key.clone());
        self.entries.insert(key, (value, self.clock));
        if self.entries.len() > self.capacity {
            if let Some((_, oldest)) = self.by_use.pop_first() {
                self.entries.remove(&oldest);
            }
        }
    }

    /// How many entries there are.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_the_least_recently_used() {
        let mut lru = Lru::new(2);
        lru.add("a", 1);
        lru.add("b", 2);
        assert_eq!(lru.get(&"a"), Some(&mut 1)); // a is now the most recent
        lru.add("c", 3);
        assert_eq!(lru.len(), 2);
        assert_eq!(lru.get(&"b"), None, "b was the least recently used");
        lru.add("a", 10);
        assert_eq!(lru.get(&"a"), Some(&mut 10));
        assert_eq!(lru.get(&"c"), Some(&mut 3));
    }
}
