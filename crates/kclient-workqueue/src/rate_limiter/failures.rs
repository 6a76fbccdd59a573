//! [`FailureCounts`]: how many times each item has failed, the state of the per-item rate
//! limiters.

use std::hash::Hash;

use parking_lot::Mutex;

use crate::ItemMap;

/// Each item's failure count (client-go's `failures map[T]int` of the per-item limiters),
/// behind one lock: [`ItemExponentialFailureRateLimiter`](super::ItemExponentialFailureRateLimiter)
/// and [`ItemFastSlowRateLimiter`](super::ItemFastSlowRateLimiter) differ only in the delay
/// they compute from it.
pub(crate) struct FailureCounts<T> {
    counts: Mutex<ItemMap<T, usize>>,
}

impl<T> Default for FailureCounts<T> {
    fn default() -> Self {
        Self {
            counts: Mutex::new(ItemMap::default()),
        }
    }
}

impl<T> FailureCounts<T> {
    /// How many items have a failure recorded.
    pub(crate) fn tracked_items(&self) -> usize {
        self.counts.lock().len()
    }
}

impl<T: Clone + Eq + Hash> FailureCounts<T> {
    /// Records one more failure of `item` and returns its count, this one included (1 for a
    /// first failure). Saturates rather than overflowing.
    pub(crate) fn record(&self, item: &T) -> usize {
        let mut counts = self.counts.lock();
        match counts.get_mut(item) {
            Some(count) => {
                *count = count.saturating_add(1);
                *count
            }
            None => {
                counts.insert(item.clone(), 1);
                1
            }
        }
    }

    /// Forgets `item`'s failures.
    pub(crate) fn forget(&self, item: &T) {
        self.counts.lock().remove(item);
    }

    /// How many failures are recorded for `item`.
    pub(crate) fn count(&self, item: &T) -> usize {
        self.counts.lock().get(item).copied().unwrap_or(0)
    }
}
