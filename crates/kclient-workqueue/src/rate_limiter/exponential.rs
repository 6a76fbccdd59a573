//! [`ItemExponentialFailureRateLimiter`]: per-item exponential backoff.

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use super::failures::FailureCounts;
use super::TypedRateLimiter;

/// Per-item exponential backoff: the n-th failure of an item (n from 1) waits
/// `base_delay * 2^(n-1)`, capped at `max_delay` (client-go's
/// `TypedItemExponentialFailureRateLimiter`). Giving up after some number of failures is the
/// caller's business (see [`num_requeues`](TypedRateLimiter::num_requeues)).
///
/// The arithmetic is exact integer arithmetic on nanoseconds. Like client-go, a backoff that
/// does not fit in a signed 64-bit count of nanoseconds (about 292 years) returns
/// `max_delay`, so the doubling can never overflow, however many failures pile up.
///
/// ```
/// use std::time::Duration;
/// use kclient_workqueue::rate_limiter::{ItemExponentialFailureRateLimiter, TypedRateLimiter};
///
/// let limiter = ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(1));
/// assert_eq!(limiter.when(&"key"), Duration::from_millis(5));
/// assert_eq!(limiter.when(&"key"), Duration::from_millis(10));
/// assert_eq!(limiter.when(&"key"), Duration::from_millis(20));
/// assert_eq!(limiter.num_requeues(&"key"), 3);
/// limiter.forget(&"key");
/// assert_eq!(limiter.when(&"key"), Duration::from_millis(5));
/// ```
pub struct ItemExponentialFailureRateLimiter<T> {
    failures: FailureCounts<T>,
    base_delay: Duration,
    max_delay: Duration,
}

impl<T> fmt::Debug for ItemExponentialFailureRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialFailureRateLimiter")
            .field("base_delay", &self.base_delay)
            .field("max_delay", &self.max_delay)
            .field("tracked_items", &self.failures.tracked_items())
            .finish()
    }
}

impl<T: Clone + Eq + Hash> ItemExponentialFailureRateLimiter<T> {
    /// A limiter starting at `base_delay` and capped at `max_delay`.
    pub fn new(base_delay: Duration, max_delay: Duration) -> Self {
        Self {
            failures: FailureCounts::default(),
            base_delay,
            max_delay,
        }
    }

    /// The delay of an item's first failure.
    pub fn base_delay(&self) -> Duration {
        self.base_delay
    }

    /// The cap on any delay.
    pub fn max_delay(&self) -> Duration {
        self.max_delay
    }
}

/// `base * 2^exponent`, or `max` when that exceeds `max` or does not fit in an `i64` of
/// nanoseconds.
pub(crate) fn exponential_backoff(base: Duration, max: Duration, exponent: usize) -> Duration {
    const LIMIT: u128 = i64::MAX as u128;
    let base_nanos = base.as_nanos();
    if base_nanos == 0 {
        return Duration::ZERO.min(max);
    }
    let backoff = u32::try_from(exponent)
        .ok()
        .and_then(|exp| 1u128.checked_shl(exp))
        .and_then(|factor| base_nanos.checked_mul(factor))
        .filter(|&nanos| nanos <= LIMIT)
        .and_then(|nanos| u64::try_from(nanos).ok());
    match backoff {
        Some(nanos) => Duration::from_nanos(nanos).min(max),
        None => max,
    }
}

impl<T: Clone + Eq + Hash + Send + Sync> TypedRateLimiter<T>
    for ItemExponentialFailureRateLimiter<T>
{
    fn when(&self, item: &T) -> Duration {
        // The n-th failure waits base * 2^(n-1).
        let exponent = self.failures.record(item) - 1;
        exponential_backoff(self.base_delay, self.max_delay, exponent)
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

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn doubles_per_failure_and_caps() {
        let limiter = ItemExponentialFailureRateLimiter::new(ms(1), Duration::from_secs(1));
        let got: Vec<Duration> = (0..12).map(|_| limiter.when(&"one")).collect();
        let mut expected: Vec<Duration> = (0..10).map(|k| ms(1 << k)).collect();
        expected.push(Duration::from_secs(1)); // 1024 ms capped
        expected.push(Duration::from_secs(1));
        assert_eq!(got, expected);
        assert_eq!(limiter.num_requeues(&"one"), 12);
    }

    /// client-go's TestItemExponentialFailureRateLimiter.
    #[test]
    fn matches_client_go_test_sequence() {
        let limiter = ItemExponentialFailureRateLimiter::new(ms(1), Duration::from_secs(1));
        assert_eq!(limiter.when(&"one"), ms(1));
        assert_eq!(limiter.when(&"one"), ms(2));
        assert_eq!(limiter.when(&"one"), ms(4));
        assert_eq!(limiter.when(&"one"), ms(8));
        assert_eq!(limiter.when(&"one"), ms(16));
        assert_eq!(limiter.num_requeues(&"one"), 5);
        assert_eq!(limiter.when(&"two"), ms(1));
        assert_eq!(limiter.when(&"two"), ms(2));
        assert_eq!(limiter.num_requeues(&"two"), 2);
        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), ms(1));
    }

    /// client-go's TestItemExponentialFailureRateLimiterOverFlow.
    #[test]
    fn overflow_returns_the_cap() {
        let limiter = ItemExponentialFailureRateLimiter::new(ms(1), Duration::from_secs(1000));
        for _ in 0..5 {
            limiter.when(&"one");
        }
        assert_eq!(limiter.when(&"one"), ms(32));
        for _ in 0..1000 {
            limiter.when(&"overflow1");
        }
        assert_eq!(limiter.when(&"overflow1"), Duration::from_secs(1000));

        let hours = Duration::from_secs(3600);
        let limiter = ItemExponentialFailureRateLimiter::new(Duration::from_secs(60), 1000 * hours);
        for _ in 0..2 {
            limiter.when(&"two");
        }
        assert_eq!(limiter.when(&"two"), Duration::from_secs(4 * 60));
        for _ in 0..1000 {
            limiter.when(&"overflow2");
        }
        assert_eq!(limiter.when(&"overflow2"), 1000 * hours);
    }

    #[test]
    fn backoff_arithmetic_edges() {
        let max = Duration::MAX;
        // 1 ns * 2^62 fits in i64 nanoseconds; 2^63 does not, so the cap is returned.
        assert_eq!(
            exponential_backoff(Duration::from_nanos(1), max, 62),
            Duration::from_nanos(1 << 62)
        );
        assert_eq!(exponential_backoff(Duration::from_nanos(1), max, 63), max);
        assert_eq!(exponential_backoff(Duration::from_nanos(1), max, 127), max);
        assert_eq!(
            exponential_backoff(Duration::from_nanos(1), max, usize::MAX),
            max
        );
        assert_eq!(exponential_backoff(Duration::MAX, ms(7), 0), ms(7));
        assert_eq!(
            exponential_backoff(Duration::ZERO, ms(7), usize::MAX),
            Duration::ZERO
        );
        assert_eq!(exponential_backoff(ms(3), ms(7), 0), ms(3));
        assert_eq!(exponential_backoff(ms(3), ms(7), 1), ms(6));
        assert_eq!(exponential_backoff(ms(3), ms(7), 2), ms(7));
    }
}
