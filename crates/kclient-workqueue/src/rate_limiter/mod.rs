//! Rate limiters: how long a failed item waits before it is retried (client-go's
//! `default_rate_limiters.go`).
//!
//! A [`TypedRateLimiter`] answers [`when`](TypedRateLimiter::when) an item may be retried. Asking is
//! not free: `when` **records a failure** (or, for the token bucket, reserves a token), so it
//! must be called once per retry, which is what
//! [`RateLimitingQueue::add_rate_limited`](crate::RateLimitingQueue::add_rate_limited) does.
//! [`forget`](TypedRateLimiter::forget) clears an item's history once it succeeded or was given
//! up on.
//!
//! | limiter | delay for the n-th failure (n from 1) |
//! |---|---|
//! | [`ItemExponentialFailureRateLimiter`] | `base * 2^(n-1)`, capped at `max` |
//! | [`ItemFastSlowRateLimiter`] | `fast` while `n <= max_fast_attempts`, then `slow` |
//! | [`BucketRateLimiter`] | one overall token bucket for all items (`qps`, `burst`) |
//! | [`MaxOfRateLimiter`] | the largest delay of several limiters |
//! | [`WithMaxWaitRateLimiter`] | another limiter's delay, capped |
//!
//! [`default_controller_rate_limiter`] is what most controllers use: the larger of a per-item
//! exponential backoff from 5 ms to 1000 s and an overall bucket of 10 qps with a burst of 100.

mod bucket;
mod exponential;
mod failures;
mod fast_slow;
mod max_of;
mod with_max_wait;

use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

pub use bucket::{BucketRateLimiter, INF_DURATION};
pub use exponential::ItemExponentialFailureRateLimiter;
pub use fast_slow::ItemFastSlowRateLimiter;
pub use max_of::MaxOfRateLimiter;
pub use with_max_wait::WithMaxWaitRateLimiter;

/// Decides how long an item waits before it is retried (client-go's
/// `workqueue.TypedRateLimiter`; kclient-rest's `RateLimiter` is the other one, client-go's
/// client-side `flowcontrol.RateLimiter`).
///
/// Implementations are shared by all workers of a queue, hence `Send + Sync`.
pub trait TypedRateLimiter<T>: Send + Sync {
    /// How long `item` should wait before its next attempt. Records a failure for the item
    /// (or consumes capacity), so each call counts.
    fn when(&self, item: &T) -> Duration;

    /// Stops tracking `item`: its failures are forgotten, whether it finally succeeded or
    /// was given up on.
    fn forget(&self, item: &T);

    /// How many failures are recorded for `item`.
    fn num_requeues(&self, item: &T) -> usize;
}

/// Implements [`TypedRateLimiter`] for a smart pointer by the limiter it points to.
macro_rules! rate_limiter_through_pointer {
    ($($pointer:ident),*) => {$(
        impl<T, R: TypedRateLimiter<T> + ?Sized> TypedRateLimiter<T> for $pointer<R> {
            fn when(&self, item: &T) -> Duration {
                (**self).when(item)
            }
            fn forget(&self, item: &T) {
                (**self).forget(item);
            }
            fn num_requeues(&self, item: &T) -> usize {
                (**self).num_requeues(item)
            }
        }
    )*};
}

rate_limiter_through_pointer!(Box, Arc);

/// The rate limiter client-go's controllers use (`DefaultTypedControllerRateLimiter`): the
/// larger of a per-item exponential backoff (5 ms, 10 ms, 20 ms, … capped at 1000 s) and an
/// overall token bucket of 10 qps with a burst of 100, which only limits the speed of retries
/// across all items.
pub fn default_controller_rate_limiter<T>() -> MaxOfRateLimiter<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(BucketRateLimiter::new(10.0, 100)),
    ])
}

/// A per-item exponential backoff from 1 ms to 1000 s (client-go's
/// `DefaultTypedItemBasedRateLimiter`).
pub fn default_item_based_rate_limiter<T>() -> ItemExponentialFailureRateLimiter<T>
where
    T: Clone + Eq + Hash + Send + Sync,
{
    ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[tokio::test(start_paused = true)]
    async fn default_controller_limiter_per_item_side_is_5ms_doubling_to_1000s() {
        let limiter = default_controller_rate_limiter::<&str>();
        let mut got = Vec::new();
        for _ in 0..20 {
            got.push(limiter.when(&"a"));
        }
        let mut expected: Vec<Duration> = (0..18).map(|k| ms(5) * (1 << k)).collect();
        assert_eq!(expected[17], Duration::from_millis(655_360));
        expected.push(Duration::from_secs(1000));
        expected.push(Duration::from_secs(1000));
        assert_eq!(got, expected);
        assert_eq!(limiter.num_requeues(&"a"), 20);
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
        assert_eq!(limiter.when(&"a"), ms(5));
    }

    #[tokio::test(start_paused = true)]
    async fn default_controller_limiter_overall_side_is_10_qps_burst_100() {
        let limiter = default_controller_rate_limiter::<u32>();
        for item in 0..100 {
            assert_eq!(limiter.when(&item), ms(5), "burst of 100 tokens");
        }
        assert_eq!(limiter.when(&100), ms(100));
        assert_eq!(limiter.when(&101), ms(200));
        assert_eq!(limiter.when(&102), ms(300));
        // One second refills 10 tokens: 3 repay the debt, 7 are free.
        tokio::time::advance(Duration::from_secs(1)).await;
        for item in 200..207 {
            assert_eq!(limiter.when(&item), ms(5));
        }
        assert_eq!(limiter.when(&207), ms(100));
        // Requeues are the larger count of the two: the bucket always says 0.
        assert_eq!(limiter.num_requeues(&207), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn default_item_based_limiter_is_1ms_doubling_to_1000s() {
        let limiter = default_item_based_rate_limiter::<&str>();
        assert_eq!(limiter.base_delay(), ms(1));
        assert_eq!(limiter.max_delay(), Duration::from_secs(1000));
        let got: Vec<Duration> = (0..4).map(|_| limiter.when(&"x")).collect();
        assert_eq!(got, [ms(1), ms(2), ms(4), ms(8)]);
        for _ in 0..6 {
            limiter.when(&"x");
        }
        assert_eq!(limiter.when(&"x"), ms(1024));
        for _ in 0..9 {
            limiter.when(&"x");
        }
        // 1 ms * 2^20 = 1048.576 s > 1000 s.
        assert_eq!(limiter.when(&"x"), Duration::from_secs(1000));
    }

    #[test]
    fn smart_pointers_delegate() {
        let boxed: Box<dyn TypedRateLimiter<u8>> =
            Box::new(ItemFastSlowRateLimiter::new(ms(1), ms(9), 1));
        let shared: Arc<dyn TypedRateLimiter<u8>> = Arc::new(boxed);
        assert_eq!(shared.when(&1), ms(1));
        assert_eq!(shared.when(&1), ms(9));
        assert_eq!(shared.num_requeues(&1), 2);
        shared.forget(&1);
        assert_eq!(shared.num_requeues(&1), 0);
    }
}
