//! [`MaxOfRateLimiter`]: the worst case of several limiters.

use std::fmt;
use std::time::Duration;

use super::TypedRateLimiter;

/// Asks every limiter and answers the largest delay (client-go's `TypedMaxOfRateLimiter`).
///
/// [`when`](TypedRateLimiter::when) calls `when` on **every** limiter, so each records the failure;
/// [`num_requeues`](TypedRateLimiter::num_requeues) is the largest count; [`forget`](TypedRateLimiter::forget)
/// forgets in all of them. With no limiters the delay and the count are 0.
///
/// As client-go notes, combined with a token bucket the burst can appear to be exceeded:
/// items that another limiter delays longer still took a token each.
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn TypedRateLimiter<T>>>,
}

impl<T> fmt::Debug for MaxOfRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOfRateLimiter")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

impl<T> Default for MaxOfRateLimiter<T> {
    fn default() -> Self {
        Self {
            limiters: Vec::new(),
        }
    }
}

impl<T> MaxOfRateLimiter<T> {
    /// The worst case of `limiters`.
    pub fn new(limiters: Vec<Box<dyn TypedRateLimiter<T>>>) -> Self {
        Self { limiters }
    }

    /// Adds one more limiter.
    #[must_use]
    pub fn with(mut self, limiter: impl TypedRateLimiter<T> + 'static) -> Self {
        self.limiters.push(Box::new(limiter));
        self
    }

    /// How many limiters are combined.
    pub fn len(&self) -> usize {
        self.limiters.len()
    }

    /// Whether no limiter is combined (every delay is then 0).
    pub fn is_empty(&self) -> bool {
        self.limiters.is_empty()
    }
}

impl<T> TypedRateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|limiter| limiter.when(item))
            .fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, item: &T) {
        for limiter in &self.limiters {
            limiter.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.limiters
            .iter()
            .map(|limiter| limiter.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rate_limiter::{ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter};

    /// client-go's TestMaxOfRateLimiter.
    #[test]
    fn takes_the_largest_delay_and_count() {
        let ms = Duration::from_millis;
        let limiter = MaxOfRateLimiter::default()
            .with(ItemFastSlowRateLimiter::new(
                ms(5),
                Duration::from_secs(3),
                3,
            ))
            .with(ItemExponentialFailureRateLimiter::new(
                ms(1),
                Duration::from_secs(1),
            ));
        assert_eq!(limiter.len(), 2);
        assert_eq!(limiter.when(&"one"), ms(5));
        assert_eq!(limiter.when(&"one"), ms(5));
        assert_eq!(limiter.when(&"one"), ms(5));
        assert_eq!(limiter.when(&"one"), Duration::from_secs(3));
        assert_eq!(limiter.when(&"one"), Duration::from_secs(3));
        assert_eq!(limiter.num_requeues(&"one"), 5);
        assert_eq!(limiter.when(&"two"), ms(5));
        assert_eq!(limiter.when(&"two"), ms(5));
        assert_eq!(limiter.num_requeues(&"two"), 2);
        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), ms(5));
    }

    #[test]
    fn every_limiter_records_the_failure() {
        let ms = Duration::from_millis;
        // The exponential limiter loses the comparison every time but still counts.
        let limiter = MaxOfRateLimiter::new(vec![
            Box::new(ItemFastSlowRateLimiter::new(
                Duration::from_secs(9),
                Duration::from_secs(9),
                0,
            )),
            Box::new(ItemExponentialFailureRateLimiter::new(ms(1), ms(100))),
        ]);
        for _ in 0..4 {
            assert_eq!(limiter.when(&1), Duration::from_secs(9));
        }
        assert_eq!(limiter.num_requeues(&1), 4);
    }

    #[test]
    fn empty_answers_zero() {
        let limiter = MaxOfRateLimiter::<u8>::default();
        assert!(limiter.is_empty());
        assert_eq!(limiter.when(&1), Duration::ZERO);
        assert_eq!(limiter.num_requeues(&1), 0);
        limiter.forget(&1);
    }
}
