//! [`BucketRateLimiter`]: one token bucket shared by all items.

use std::fmt;
use std::time::Duration;

use kclient_rate::TokenBucket;

use super::TypedRateLimiter;

/// The delay that means "never" (Go's `rate.InfDuration`: the largest signed 64-bit count of
/// nanoseconds, about 292 years). [`BucketRateLimiter`] answers it when it can never grant a
/// token (a burst of 0, or a rate of 0 once the initial burst is spent).
/// kclient-rate's `INF_DURATION`, re-exported under its client-go place.
pub use kclient_rate::INF_DURATION;

/// An overall token bucket: `qps` tokens per second, holding at most `burst`, starting full
/// (client-go's `TypedBucketRateLimiter` over Go's `rate.NewLimiter(qps, burst)`).
///
/// Each [`when`](TypedRateLimiter::when) **reserves** one token, whatever the item, and returns
/// how long until that token is available: zero while the bucket has tokens, then growing by
/// `1/qps` per call as the bucket goes into debt. This is Go's `Limiter.Reserve().Delay()`,
/// arithmetic included: the bucket is kclient-rate's [`TokenBucket`], the one kclient-rest's
/// client-side throttle also uses. [`forget`](TypedRateLimiter::forget) does nothing and
/// [`num_requeues`](TypedRateLimiter::num_requeues) is always 0: the bucket keeps no per-item
/// state.
///
/// A rate of `f64::INFINITY` never delays. A rate that is zero, negative or NaN refills
/// nothing (Go treats every rate `<= 0` alike). Time is `tokio::time`, so a paused test clock
/// drives it.
///
/// ```
/// use std::time::Duration;
/// use kclient_workqueue::rate_limiter::{BucketRateLimiter, TypedRateLimiter};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let bucket = BucketRateLimiter::new(10.0, 2);
/// assert_eq!(bucket.when(&"a"), Duration::ZERO);
/// assert_eq!(bucket.when(&"b"), Duration::ZERO);
/// assert_eq!(bucket.when(&"c"), Duration::from_millis(100));
/// assert_eq!(bucket.when(&"d"), Duration::from_millis(200));
/// # }
/// ```
pub struct BucketRateLimiter {
    bucket: TokenBucket,
}

impl fmt::Debug for BucketRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("BucketRateLimiter")
            .field(&self.bucket)
            .finish()
    }
}

impl BucketRateLimiter {
    /// A full bucket of `burst` tokens refilled at `qps` tokens per second.
    pub fn new(qps: f64, burst: usize) -> Self {
        Self {
            bucket: TokenBucket::new(qps, burst),
        }
    }

    /// The refill rate in tokens per second (0 for a rate that was zero, negative or NaN).
    pub fn qps(&self) -> f64 {
        self.bucket.qps()
    }

    /// The bucket's capacity.
    pub fn burst(&self) -> usize {
        self.bucket.burst()
    }
}

impl<T> TypedRateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.bucket.reserve()
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> usize {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rate 1/s, burst 1: every call after the first goes one second further into debt, and
    /// the item plays no part.
    #[tokio::test(start_paused = true)]
    async fn reserves_a_token_per_call() {
        let bucket = BucketRateLimiter::new(1.0, 1);
        assert_eq!(
            TypedRateLimiter::<&str>::when(&bucket, &"one"),
            Duration::ZERO
        );
        assert_eq!(
            TypedRateLimiter::<&str>::when(&bucket, &"two"),
            Duration::from_secs(1)
        );
        assert_eq!(
            TypedRateLimiter::<&str>::when(&bucket, &"three"),
            Duration::from_secs(2)
        );
        assert_eq!(
            TypedRateLimiter::<&str>::when(&bucket, &"three"),
            Duration::from_secs(3)
        );
        assert_eq!(TypedRateLimiter::<&str>::num_requeues(&bucket, &"three"), 0);
        TypedRateLimiter::<&str>::forget(&bucket, &"three");
        assert_eq!(
            TypedRateLimiter::<&str>::when(&bucket, &"three"),
            Duration::from_secs(4)
        );
    }
}
