//! [`WithMaxWaitRateLimiter`]: another limiter's delay, capped.

use std::time::Duration;

use super::TypedRateLimiter;

/// Wraps a limiter and caps its delays at `max_delay`, so that no item waits too long
/// (client-go's `TypedWithMaxWaitRateLimiter`). `forget` and `num_requeues` pass through.
///
/// ```
/// use std::time::Duration;
/// use kclient_workqueue::rate_limiter::{
///     ItemExponentialFailureRateLimiter, TypedRateLimiter, WithMaxWaitRateLimiter,
/// };
///
/// let inner = ItemExponentialFailureRateLimiter::new(Duration::from_secs(1), Duration::from_secs(3600));
/// let limiter = WithMaxWaitRateLimiter::new(inner, Duration::from_secs(3));
/// assert_eq!(limiter.when(&"key"), Duration::from_secs(1));
/// assert_eq!(limiter.when(&"key"), Duration::from_secs(2));
/// assert_eq!(limiter.when(&"key"), Duration::from_secs(3));
/// assert_eq!(limiter.num_requeues(&"key"), 3);
/// ```
#[derive(Debug, Clone)]
pub struct WithMaxWaitRateLimiter<R> {
    limiter: R,
    max_delay: Duration,
}

impl<R> WithMaxWaitRateLimiter<R> {
    /// `limiter` with every delay capped at `max_delay`.
    pub fn new(limiter: R, max_delay: Duration) -> Self {
        Self { limiter, max_delay }
    }

    /// The cap.
    pub fn max_delay(&self) -> Duration {
        self.max_delay
    }

    /// The wrapped limiter.
    pub fn inner(&self) -> &R {
        &self.limiter
    }
}

impl<T, R: TypedRateLimiter<T>> TypedRateLimiter<T> for WithMaxWaitRateLimiter<R> {
    fn when(&self, item: &T) -> Duration {
        self.limiter.when(item).min(self.max_delay)
    }

    fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.limiter.num_requeues(item)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// client-go's test helper: `base` for the first `threshold` calls overall, then `max`.
    struct StepRateLimiter {
        count: AtomicUsize,
        threshold: usize,
        base: Duration,
        max: Duration,
    }

    impl TypedRateLimiter<usize> for StepRateLimiter {
        fn when(&self, _: &usize) -> Duration {
            if self.count.fetch_add(1, Ordering::SeqCst) < self.threshold {
                self.base
            } else {
                self.max
            }
        }
        fn forget(&self, _: &usize) {}
        fn num_requeues(&self, _: &usize) -> usize {
            0
        }
    }

    /// client-go's TestWithMaxWaitRateLimiter.
    #[test]
    fn caps_the_inner_delay() {
        let step = StepRateLimiter {
            count: AtomicUsize::new(0),
            threshold: 100,
            base: Duration::from_millis(5),
            max: Duration::from_secs(1000),
        };
        let limiter = WithMaxWaitRateLimiter::new(step, Duration::from_secs(500));
        assert_eq!(limiter.max_delay(), Duration::from_secs(500));
        for i in 0..100 {
            assert_eq!(limiter.when(&i), Duration::from_millis(5));
        }
        for i in 100..200 {
            assert_eq!(limiter.when(&i), Duration::from_secs(500));
        }
        assert_eq!(limiter.inner().count.load(Ordering::SeqCst), 200);
        assert_eq!(limiter.num_requeues(&1), 0);
        limiter.forget(&1);
    }
}
