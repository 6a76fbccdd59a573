//! [`ItemFastSlowRateLimiter`]: a few quick retries, then slow ones.

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use super::failures::FailureCounts;
use super::TypedRateLimiter;

/// Retries an item quickly for its first `max_fast_attempts` failures, then slowly
/// (client-go's `TypedItemFastSlowRateLimiter`).
///
/// The failure being recorded counts: the n-th call of [`when`](TypedRateLimiter::when) for an
/// item (n from 1) returns `fast_delay` while `n <= max_fast_attempts`. (One of the seed
/// articles says "<"; client-go uses "<=".)
///
/// ```
/// use std::time::Duration;
/// use kclient_workqueue::rate_limiter::{ItemFastSlowRateLimiter, TypedRateLimiter};
///
/// let fast = Duration::from_millis(5);
/// let slow = Duration::from_secs(10);
/// let limiter = ItemFastSlowRateLimiter::new(fast, slow, 2);
/// assert_eq!(limiter.when(&"key"), fast);
/// assert_eq!(limiter.when(&"key"), fast);
/// assert_eq!(limiter.when(&"key"), slow);
/// ```
pub struct ItemFastSlowRateLimiter<T> {
    failures: FailureCounts<T>,
    max_fast_attempts: usize,
    fast_delay: Duration,
    slow_delay: Duration,
}

impl<T> fmt::Debug for ItemFastSlowRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlowRateLimiter")
            .field("fast_delay", &self.fast_delay)
            .field("slow_delay", &self.slow_delay)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .field("tracked_items", &self.failures.tracked_items())
            .finish()
    }
}

impl<T: Clone + Eq + Hash> ItemFastSlowRateLimiter<T> {
    /// A limiter answering `fast_delay` for the first `max_fast_attempts` failures of an item
    /// and `slow_delay` after that (client-go's argument order).
    pub fn new(fast_delay: Duration, slow_delay: Duration, max_fast_attempts: usize) -> Self {
        Self {
            failures: FailureCounts::default(),
            max_fast_attempts,
            fast_delay,
            slow_delay,
        }
    }
}

impl<T: Clone + Eq + Hash + Send + Sync> TypedRateLimiter<T> for ItemFastSlowRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        if self.failures.record(item) <= self.max_fast_attempts {
            self.fast_delay
        } else {
            self.slow_delay
        }
    }

    fn forget(&self, item: &T) {
        self.failures.forget(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.failures.count(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// client-go's TestItemFastSlowRateLimiter.
    #[test]
    fn fast_while_failures_at_most_max_fast_attempts() {
        let fast = Duration::from_millis(5);
        let slow = Duration::from_secs(10);
        let limiter = ItemFastSlowRateLimiter::new(fast, slow, 3);
        assert_eq!(limiter.when(&"one"), fast);
        assert_eq!(limiter.when(&"one"), fast);
        assert_eq!(
            limiter.when(&"one"),
            fast,
            "the third failure is still fast (<=)"
        );
        assert_eq!(limiter.when(&"one"), slow);
        assert_eq!(limiter.when(&"one"), slow);
        assert_eq!(limiter.num_requeues(&"one"), 5);
        assert_eq!(limiter.when(&"two"), fast);
        assert_eq!(limiter.when(&"two"), fast);
        assert_eq!(limiter.num_requeues(&"two"), 2);
        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), fast);
    }

    #[test]
    fn zero_fast_attempts_is_always_slow() {
        let limiter =
            ItemFastSlowRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1), 0);
        assert_eq!(limiter.when(&7), Duration::from_secs(1));
        assert_eq!(limiter.num_requeues(&7), 1);
    }
}
