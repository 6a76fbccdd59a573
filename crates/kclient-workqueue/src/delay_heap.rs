//! The waiting room of a [`DelayingQueue`](crate::DelayingQueue): items that were handed to
//! `add_after` and are not due yet.
//!
//! It is a binary min-heap ordered by ready time, plus an index from item to heap entry, so
//! that a second `add_after` for a waiting item finds its entry in O(1) and moves it in
//! O(log n) instead of scanning (client-go's `waitForPriorityQueue` plus its
//! `waitingEntryByData` map). Entries live in an arena and remember their heap position, so
//! that sifting never has to hash an item.
//!
//! Ties between equal ready times are broken by a sequence number: entries due at the same
//! instant leave in the order in which their ready time was set.

use std::hash::Hash;

use tokio::time::Instant;

use crate::ItemMap;

/// One heap slot: the ordering key and the arena entry it stands for.
#[derive(Debug, Clone, Copy)]
struct Slot {
    ready_at: Instant,
    seq: u64,
    entry: usize,
}

impl Slot {
    fn before(&self, other: &Slot) -> bool {
        (self.ready_at, self.seq) < (other.ready_at, other.seq)
    }
}

/// One waiting item and where its slot currently sits in the heap.
#[derive(Debug)]
struct Entry<T> {
    item: T,
    heap_pos: usize,
}

/// A min-heap of waiting items keyed by ready time, with one entry per distinct item.
#[derive(Debug)]
pub(crate) struct DelayHeap<T> {
    heap: Vec<Slot>,
    entries: Vec<Option<Entry<T>>>,
    free: Vec<usize>,
    index: ItemMap<T, usize>,
    next_seq: u64,
}

impl<T> Default for DelayHeap<T> {
    fn default() -> Self {
        Self {
            heap: Vec::new(),
            entries: Vec::new(),
            free: Vec::new(),
            index: ItemMap::default(),
            next_seq: 0,
        }
    }
}

impl<T> DelayHeap<T> {
    /// The number of waiting items.
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is waiting.
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// The ready time of the item that is due first.
    pub(crate) fn next_ready_at(&self) -> Option<Instant> {
        self.heap.first().map(|slot| slot.ready_at)
    }
}

impl<T: Clone + Eq + Hash> DelayHeap<T> {
    /// The ready time recorded for `item`, if it is waiting.
    #[cfg(test)]
    pub(crate) fn ready_at_of(&self, item: &T) -> Option<Instant> {
        let entry = *self.index.get(item)?;
        let pos = self.entries[entry].as_ref()?.heap_pos;
        Some(self.heap[pos].ready_at)
    }

    /// Makes `item` wait until `ready_at`. If it is already waiting, the earlier of the two
    /// ready times is kept (client-go's `insert`). Returns whether the heap's first ready time
    /// moved earlier (or the heap was empty), which is when sleepers must re-arm their timers.
    pub(crate) fn insert(&mut self, item: T, ready_at: Instant) -> bool {
        let head_before = self.next_ready_at();
        if let Some(&entry) = self.index.get(&item) {
            let Some(pos) = self.entries[entry].as_ref().map(|e| e.heap_pos) else {
                return false;
            };
            if ready_at < self.heap[pos].ready_at {
                let seq = self.take_seq();
                self.heap[pos].ready_at = ready_at;
                self.heap[pos].seq = seq;
                self.sift_up(pos);
            }
        } else {
            let seq = self.take_seq();
            let pos = self.heap.len();
            let entry = Entry {
                item: item.clone(),
                heap_pos: pos,
            };
            let id = match self.free.pop() {
                Some(id) => {
                    self.entries[id] = Some(entry);
                    id
                }
                None => {
                    self.entries.push(Some(entry));
                    self.entries.len() - 1
                }
            };
            self.index.insert(item, id);
            self.heap.push(Slot {
                ready_at,
                seq,
                entry: id,
            });
            self.sift_up(pos);
        }
        match head_before {
            None => true,
            Some(before) => self
                .next_ready_at()
                .is_some_and(|now_first| now_first < before),
        }
    }

    /// Removes and returns the first item if its ready time is not after `now`, with that
    /// ready time.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<(T, Instant)> {
        let first = *self.heap.first()?;
        if first.ready_at > now {
            return None;
        }
        let last = self.heap.pop()?;
        if !self.heap.is_empty() {
            self.heap[0] = last;
            self.sift_down(0);
        }
        let entry = self.entries[first.entry].take()?;
        self.free.push(first.entry);
        self.index.remove(&entry.item);
        Some((entry.item, first.ready_at))
    }

    /// Forgets every waiting item and releases the memory they used.
    pub(crate) fn clear(&mut self) {
        *self = Self::default();
    }

    fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        seq
    }

    /// Puts `slot` at heap position `pos` and tells its entry.
    fn place(&mut self, pos: usize, slot: Slot) {
        self.heap[pos] = slot;
        if let Some(entry) = self.entries[slot.entry].as_mut() {
            entry.heap_pos = pos;
        }
    }

    /// Moves the slot at `pos` towards the root until its parent is not after it. Parents
    /// slide down into the hole, so each level costs one move, not a swap.
    fn sift_up(&mut self, mut pos: usize) {
        let slot = self.heap[pos];
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if !slot.before(&self.heap[parent]) {
                break;
            }
            let moved = self.heap[parent];
            self.place(pos, moved);
            pos = parent;
        }
        self.place(pos, slot);
    }

    /// Moves the slot at `pos` towards the leaves until no child is before it.
    fn sift_down(&mut self, mut pos: usize) {
        let slot = self.heap[pos];
        let len = self.heap.len();
        loop {
            let left = 2 * pos + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child = if right < len && self.heap[right].before(&self.heap[left]) {
                right
            } else {
                left
            };
            if !self.heap[child].before(&slot) {
                break;
            }
            let moved = self.heap[child];
            self.place(pos, moved);
            pos = child;
        }
        self.place(pos, slot);
    }

    /// Checks the heap order and the index against each other (tests only).
    #[cfg(test)]
    fn assert_consistent(&self) {
        assert_eq!(self.index.len(), self.heap.len());
        for (pos, slot) in self.heap.iter().enumerate() {
            if pos > 0 {
                let parent = (pos - 1) / 2;
                assert!(
                    !slot.before(&self.heap[parent]),
                    "heap order broken at {pos}"
                );
            }
            let entry = self.entries[slot.entry].as_ref().expect("live entry");
            assert_eq!(entry.heap_pos, pos);
            assert_eq!(self.index.get(&entry.item), Some(&slot.entry));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::Duration;

    use super::*;

    fn at(base: Instant, ms: u64) -> Instant {
        base + Duration::from_millis(ms)
    }

    #[test]
    fn pops_in_ready_order_and_only_when_due() {
        let base = Instant::now();
        let mut heap = DelayHeap::default();
        heap.insert("c", at(base, 30));
        heap.insert("a", at(base, 10));
        heap.insert("b", at(base, 20));
        heap.assert_consistent();
        assert_eq!(heap.pop_due(at(base, 5)), None);
        assert_eq!(heap.pop_due(at(base, 25)), Some(("a", at(base, 10))));
        assert_eq!(heap.pop_due(at(base, 25)), Some(("b", at(base, 20))));
        assert_eq!(heap.pop_due(at(base, 25)), None);
        assert_eq!(heap.pop_due(at(base, 30)), Some(("c", at(base, 30))));
        assert!(heap.is_empty());
        heap.assert_consistent();
    }

    #[test]
    fn duplicate_keeps_the_earliest_ready_time() {
        let base = Instant::now();
        let mut heap = DelayHeap::default();
        assert!(heap.insert("x", at(base, 50)));
        assert!(
            !heap.insert("x", at(base, 80)),
            "a later time changes nothing"
        );
        assert_eq!(heap.ready_at_of(&"x"), Some(at(base, 50)));
        assert!(
            heap.insert("x", at(base, 20)),
            "an earlier time moves the head"
        );
        assert_eq!(heap.ready_at_of(&"x"), Some(at(base, 20)));
        assert_eq!(heap.len(), 1);
        heap.assert_consistent();
    }

    #[test]
    fn equal_ready_times_leave_in_insertion_order() {
        let base = Instant::now();
        let mut heap = DelayHeap::default();
        for i in 0..100u32 {
            heap.insert(i, at(base, 10));
        }
        let popped: Vec<u32> =
            std::iter::from_fn(|| heap.pop_due(at(base, 10)).map(|p| p.0)).collect();
        assert_eq!(popped, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn head_change_is_reported() {
        let base = Instant::now();
        let mut heap = DelayHeap::default();
        assert!(heap.insert(1, at(base, 100)));
        assert!(!heap.insert(2, at(base, 200)));
        assert!(heap.insert(3, at(base, 50)));
        assert!(!heap.insert(2, at(base, 60)));
        assert_eq!(heap.next_ready_at(), Some(at(base, 50)));
    }

    #[test]
    fn clear_forgets_everything() {
        let base = Instant::now();
        let mut heap = DelayHeap::default();
        heap.insert(1, at(base, 1));
        heap.insert(2, at(base, 2));
        heap.clear();
        assert!(heap.is_empty());
        assert_eq!(heap.next_ready_at(), None);
        assert_eq!(heap.pop_due(at(base, 10)), None);
        heap.insert(1, at(base, 3));
        heap.assert_consistent();
        assert_eq!(heap.len(), 1);
    }

    /// A random mix of inserts (new and duplicate, earlier and later) and pops, checked against
    /// a plain map model after every step.
    #[test]
    fn matches_a_model_under_random_operations() {
        let base = Instant::now();
        let mut heap = DelayHeap::default();
        let mut model: HashMap<u32, u64> = HashMap::new();
        let mut now_ms = 0u64;
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for step in 0..20_000 {
            let roll = next() % 10;
            if roll < 6 {
                let item = (next() % 500) as u32;
                let ready = now_ms + 1 + next() % 1_000;
                heap.insert(item, at(base, ready));
                let slot = model.entry(item).or_insert(ready);
                *slot = (*slot).min(ready);
            } else {
                now_ms += next() % 50;
                let now = at(base, now_ms);
                while let Some((item, ready)) = heap.pop_due(now) {
                    let expected = model.remove(&item).expect("popped item was waiting");
                    assert_eq!(at(base, expected), ready);
                    assert!(ready <= now);
                }
                assert!(
                    model.values().all(|&r| r > now_ms),
                    "a due item stayed behind"
                );
            }
            assert_eq!(heap.len(), model.len());
            if step % 1_000 == 0 {
                heap.assert_consistent();
            }
        }
        heap.assert_consistent();
    }
}
