//! [`RateLimiter`]: the client-side token bucket (client-go's
//! `flowcontrol.NewTokenBucketRateLimiter`), kclient-rate's [`TokenBucket`].
//!
//! One limiter is shared by every request of a [`RestClient`](crate::RestClient) and of all its
//! clones, so a whole clientset spends one budget of `qps` requests per second with bursts of
//! `burst`. Time comes from tokio's clock, so tests can drive it with a paused clock.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kclient_rate::TokenBucket;

use crate::config::ConfigError;

/// A token bucket: `qps` tokens per second, at most `burst` saved up. Cheap to clone; clones
/// share the bucket.
///
/// ```
/// use kclient_rest::RateLimiter;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let limiter = RateLimiter::new(5.0, 2).unwrap();
/// assert!(limiter.try_acquire());
/// assert!(limiter.try_acquire());
/// assert!(!limiter.try_acquire(), "the burst is spent");
/// let waited = limiter.acquire().await;
/// assert_eq!(waited, std::time::Duration::from_millis(200), "one token per 1/5 s");
/// # });
/// ```
#[derive(Clone)]
pub struct RateLimiter {
    bucket: Arc<TokenBucket>,
    qps: f32,
    burst: u32,
}

impl fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiter")
            .field("qps", &self.qps)
            .field("burst", &self.burst)
            .finish()
    }
}

/// The limiter could not grant a token before a deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WouldExceedDeadline {
    pub(crate) wait: Duration,
    pub(crate) remaining: Duration,
}

impl RateLimiter {
    /// A bucket refilled with `qps` tokens per second (fractions allowed) holding at most
    /// `burst` (at least 1). A `qps` that is not positive and finite is an error: rate
    /// limiting is turned off by not having a limiter.
    pub fn new(qps: f32, burst: u32) -> Result<Self, ConfigError> {
        if !(qps.is_finite() && qps > 0.0) {
            return Err(ConfigError::Invalid(format!(
                "a rate limiter needs a positive qps, not {qps}"
            )));
        }
        let burst = burst.max(1);
        Ok(Self {
            bucket: Arc::new(TokenBucket::new(f64::from(qps), burst as usize)),
            qps,
            burst,
        })
    }

    /// Tokens per second.
    pub fn qps(&self) -> f32 {
        self.qps
    }

    /// The most tokens saved up.
    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// Whether two handles share one bucket.
    pub fn shares_bucket_with(&self, other: &RateLimiter) -> bool {
        Arc::ptr_eq(&self.bucket, &other.bucket)
    }

    /// Takes a token if one is available now.
    pub fn try_acquire(&self) -> bool {
        self.bucket.allow()
    }

    /// Waits for a token and takes it; returns how long it waited.
    pub async fn acquire(&self) -> Duration {
        match self.acquire_before(None).await {
            Ok(waited) => waited,
            // Without a deadline the wait cannot exceed it.
            Err(e) => e.wait,
        }
    }

    /// Waits for a token, unless the wait would pass `deadline` (then fails at once, as
    /// `rate.Limiter.Wait` does with a context deadline).
    ///
    /// It takes the token only once it is there, rather than reserving it ahead and sleeping
    /// as Go's `Wait` does: a request future dropped while it waits then spends nothing,
    /// where Go's `Wait` has to cancel its reservation.
    pub(crate) async fn acquire_before(
        &self,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<Duration, WouldExceedDeadline> {
        let start = tokio::time::Instant::now();
        loop {
            match self.bucket.reserve_within(Duration::ZERO) {
                Ok(_) => return Ok(start.elapsed()),
                Err(wait) => {
                    let now = tokio::time::Instant::now();
                    // A wait rounded down to nothing still has to let the clock move.
                    let wait = wait.max(Duration::from_nanos(1));
                    if let Some(deadline) = deadline {
                        let remaining = deadline.saturating_duration_since(now);
                        if wait > remaining {
                            return Err(WouldExceedDeadline { wait, remaining });
                        }
                    }
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_runtime::paused;

    #[test]
    fn burst_then_steady_rate() {
        paused().block_on(async {
            let limiter = RateLimiter::new(5.0, 10).unwrap();
            for i in 0..10 {
                assert_eq!(
                    limiter.acquire().await,
                    Duration::ZERO,
                    "token {i} is in the burst"
                );
            }
            let start = tokio::time::Instant::now();
            for _ in 0..5 {
                assert_eq!(limiter.acquire().await, Duration::from_millis(200));
            }
            assert_eq!(start.elapsed(), Duration::from_secs(1));
        });
    }

    #[test]
    fn fractional_qps() {
        paused().block_on(async {
            let limiter = RateLimiter::new(0.5, 1).unwrap();
            assert_eq!(limiter.acquire().await, Duration::ZERO);
            assert_eq!(limiter.acquire().await, Duration::from_secs(2));
        });
    }

    #[test]
    fn tokens_refill_while_idle() {
        paused().block_on(async {
            let limiter = RateLimiter::new(10.0, 3).unwrap();
            for _ in 0..3 {
                assert!(limiter.try_acquire());
            }
            assert!(!limiter.try_acquire());
            tokio::time::advance(Duration::from_millis(300)).await;
            for _ in 0..3 {
                assert!(limiter.try_acquire());
            }
            assert!(!limiter.try_acquire(), "never more than the burst");
        });
    }

    #[test]
    fn deadline_fails_fast() {
        paused().block_on(async {
            let limiter = RateLimiter::new(1.0, 1).unwrap();
            assert!(limiter.try_acquire());
            let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
            let err = limiter.acquire_before(Some(deadline)).await.unwrap_err();
            assert_eq!(err.wait, Duration::from_secs(1));
            assert_eq!(err.remaining, Duration::from_millis(500));
            assert_eq!(
                tokio::time::Instant::now() + Duration::from_millis(500),
                deadline,
                "no time passed"
            );
        });
    }

    #[test]
    fn clones_share_the_bucket() {
        paused().block_on(async {
            let a = RateLimiter::new(1.0, 2).unwrap();
            let b = a.clone();
            assert!(a.shares_bucket_with(&b));
            assert!(a.try_acquire());
            assert!(b.try_acquire());
            assert!(!a.try_acquire());
            assert!(!RateLimiter::new(1.0, 2).unwrap().shares_bucket_with(&a));
        });
    }

    #[test]
    fn invalid_qps_is_rejected() {
        for qps in [0.0, -1.0, f32::NAN, f32::INFINITY] {
            assert!(RateLimiter::new(qps, 1).is_err(), "{qps}");
        }
        let l = RateLimiter::new(1.0, 0).unwrap();
        assert_eq!(l.burst(), 1, "a burst of zero would never grant a token");
        assert!(format!("{l:?}").contains("qps"));
    }
}
