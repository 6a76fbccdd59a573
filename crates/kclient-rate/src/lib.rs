//! kclient-rate: a token bucket (Go's `golang.org/x/time/rate.Limiter`), on tokio's clock —
//! the one implementation that kclient-rest's client-side throttle (client-go's
//! `flowcontrol.NewTokenBucketRateLimiter`, 5 QPS / burst 10 by default) and
//! kclient-workqueue's `BucketRateLimiter` (client-go's `BucketRateLimiter`) share, as both
//! of client-go's are the same `rate.Limiter`.
//!
//! Tokens refill at `qps` per second up to `burst`, and the bucket starts full. Taking a token
//! is a **reservation**: [`TokenBucket::reserve`] always takes one, going into debt when the
//! bucket is empty, and answers how long until that token is available (zero while tokens
//! are left, then `1/qps` more per call); [`TokenBucket::reserve_within`] takes one only if
//! it is available within a given wait, and [`TokenBucket::allow`] only if it is available
//! now. The arithmetic is Go's, floats included (a float token count refilled by elapsed
//! seconds times the rate, capped at the burst), so delays match client-go's to the
//! nanosecond.
//!
//! Time is `tokio::time::Instant`, so tests drive the bucket with tokio's paused clock. The
//! crate depends on no other kclient crate, so that the workqueue, which needs no Kubernetes
//! types, stays free of them.
//!
//! ```
//! use std::time::Duration;
//! use kclient_rate::TokenBucket;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
//! let bucket = TokenBucket::new(10.0, 2);
//! assert!(bucket.allow());
//! assert_eq!(bucket.reserve(), Duration::ZERO);
//! assert!(!bucket.allow(), "the burst is spent");
//! assert_eq!(bucket.reserve(), Duration::from_millis(100));
//! assert_eq!(bucket.reserve(), Duration::from_millis(200));
//! # }
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// The delay that means "never" (Go's `rate.InfDuration`: the largest signed 64-bit count of
/// nanoseconds, about 292 years). [`TokenBucket::reserve`] answers it when it can never grant
/// a token (a burst of 0, or a rate of 0 once the initial burst is spent).
pub const INF_DURATION: Duration = Duration::from_nanos(i64::MAX as u64);

/// A token bucket: `qps` tokens per second, holding at most `burst`, starting full (Go's
/// `rate.NewLimiter(qps, burst)`); see the [module documentation](self).
///
/// A rate of `f64::INFINITY` never delays. A rate that is zero, negative or NaN refills
/// nothing (Go treats every rate `<= 0` alike).
pub struct TokenBucket {
    limit: f64,
    burst: usize,
    state: Mutex<BucketState>,
}

#[derive(Debug)]
struct BucketState {
    tokens: f64,
    /// When `tokens` was last brought up to date; `None` is Go's zero time (long ago).
    last: Option<Instant>,
}

impl fmt::Debug for TokenBucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenBucket")
            .field("qps", &self.limit)
            .field("burst", &self.burst)
            .field("tokens", &self.state().tokens)
            .finish()
    }
}

impl TokenBucket {
    /// A full bucket of `burst` tokens refilled at `qps` tokens per second.
    pub fn new(qps: f64, burst: usize) -> Self {
        let limit = if qps > 0.0 { qps } else { 0.0 };
        Self {
            limit,
            burst,
            state: Mutex::new(BucketState {
                tokens: burst as f64,
                last: None,
            }),
        }
    }

    /// The refill rate in tokens per second (0 for a rate that was zero, negative or NaN).
    pub fn qps(&self) -> f64 {
        self.limit
    }

    /// The bucket's capacity.
    pub fn burst(&self) -> usize {
        self.burst
    }

    /// Takes a token if one is available now (Go's `Allow`).
    pub fn allow(&self) -> bool {
        self.reserve_within(Duration::ZERO).is_ok()
    }

    /// Reserves a token, going into debt if need be, and returns how long until it is
    /// available (Go's `Reserve().Delay()`); [`INF_DURATION`] when no token can ever be
    /// granted, and then nothing is taken.
    pub fn reserve(&self) -> Duration {
        self.reserve_at(Instant::now())
    }

    /// [`reserve`](Self::reserve) at `now` (Go's `ReserveN(now, 1).DelayFrom(now)`).
    pub fn reserve_at(&self, now: Instant) -> Duration {
        self.reserve_within_at(now, INF_DURATION)
            .unwrap_or(INF_DURATION)
    }

    /// Reserves a token if it is available within `max_wait`, and returns how long until it
    /// is (Go's `reserveN(now, 1, maxFutureReserve)`, what `Wait` does with a context
    /// deadline).
    ///
    /// # Errors
    ///
    /// When the token would come later than `max_wait`, nothing is taken and the error is
    /// how long until a token is available ([`INF_DURATION`] for never).
    pub fn reserve_within(&self, max_wait: Duration) -> Result<Duration, Duration> {
        self.reserve_within_at(Instant::now(), max_wait)
    }

    /// [`reserve_within`](Self::reserve_within) at `now`.
    ///
    /// # Errors
    ///
    /// As [`reserve_within`](Self::reserve_within).
    pub fn reserve_within_at(
        &self,
        now: Instant,
        max_wait: Duration,
    ) -> Result<Duration, Duration> {
        if self.limit == f64::INFINITY {
            return Ok(Duration::ZERO);
        }
        let mut state = self.state();
        // advance: bring the token count up to `now`, capped at the burst.
        let refill = match state.last {
            Some(last) => tokens_from_duration(self.limit, now.saturating_duration_since(last)),
            // Since Go's zero time: effectively infinite unless the rate is zero.
            None if self.limit > 0.0 => f64::INFINITY,
            None => 0.0,
        };
        let burst = self.burst as f64;
        let mut tokens = state.tokens + refill;
        if tokens > burst {
            tokens = burst;
        }
        tokens -= 1.0;
        let wait = if tokens < 0.0 {
            duration_from_tokens(self.limit, -tokens)
        } else {
            Duration::ZERO
        };
        // Go: ok := n <= burst && wait <= maxFutureReserve.
        if self.burst < 1 {
            return Err(INF_DURATION);
        }
        if wait > max_wait {
            return Err(wait);
        }
        state.last = Some(now);
        state.tokens = tokens;
        Ok(wait)
    }

    /// The state, also after a panic elsewhere while it was held: every update of it is a
    /// pair of plain stores, so it is never left half-written.
    fn state(&self) -> MutexGuard<'_, BucketState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Go's `Limit.tokensFromDuration`: seconds (as Go's `Duration.Seconds` computes them) times
/// the rate.
fn tokens_from_duration(limit: f64, elapsed: Duration) -> f64 {
    if limit <= 0.0 {
        return 0.0;
    }
    let seconds = elapsed.as_secs() as f64 + f64::from(elapsed.subsec_nanos()) / 1e9;
    seconds * limit
}

/// Go's `Limit.durationFromTokens`: `1e9 * (tokens / rate)` nanoseconds, truncated, with
/// "never" for a zero rate or a value past the `i64` range.
fn duration_from_tokens(limit: f64, tokens: f64) -> Duration {
    if limit <= 0.0 {
        return INF_DURATION;
    }
    let seconds = tokens / limit;
    let nanos = 1e9 * seconds;
    if nanos.is_nan() || nanos >= 9_223_372_036_854_775_808.0 {
        return INF_DURATION;
    }
    Duration::from_nanos(nanos as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[tokio::test(start_paused = true)]
    async fn refills_with_time_up_to_the_burst() {
        let bucket = TokenBucket::new(10.0, 3);
        for _ in 0..3 {
            assert_eq!(bucket.reserve_at(Instant::now()), Duration::ZERO);
        }
        assert_eq!(bucket.reserve_at(Instant::now()), ms(100));
        // Debt of 1 token; 250 ms refill 2.5 tokens: 1.5 left.
        tokio::time::advance(ms(250)).await;
        assert_eq!(bucket.reserve_at(Instant::now()), Duration::ZERO);
        assert_eq!(bucket.reserve_at(Instant::now()), ms(50));
        // A long pause refills only up to the burst.
        tokio::time::advance(Duration::from_secs(3600)).await;
        for _ in 0..3 {
            assert_eq!(bucket.reserve_at(Instant::now()), Duration::ZERO);
        }
        assert_eq!(bucket.reserve_at(Instant::now()), ms(100));
    }

    #[tokio::test(start_paused = true)]
    async fn infinite_rate_never_waits() {
        let bucket = TokenBucket::new(f64::INFINITY, 0);
        for _ in 0..1000 {
            assert_eq!(bucket.reserve_at(Instant::now()), Duration::ZERO);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn zero_rate_spends_the_burst_then_never() {
        for qps in [0.0, -5.0, f64::NAN] {
            let bucket = TokenBucket::new(qps, 2);
            assert_eq!(bucket.qps(), 0.0);
            assert_eq!(bucket.reserve_at(Instant::now()), Duration::ZERO);
            assert_eq!(bucket.reserve_at(Instant::now()), Duration::ZERO);
            assert_eq!(bucket.reserve_at(Instant::now()), INF_DURATION);
            tokio::time::advance(Duration::from_secs(100)).await;
            assert_eq!(bucket.reserve_at(Instant::now()), INF_DURATION);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn zero_burst_never_grants() {
        let bucket = TokenBucket::new(10.0, 0);
        assert_eq!(bucket.burst(), 0);
        assert_eq!(bucket.reserve_at(Instant::now()), INF_DURATION);
        assert_eq!(bucket.reserve_at(Instant::now()), INF_DURATION);
    }

    #[test]
    fn conversions_match_go() {
        assert_eq!(duration_from_tokens(10.0, 1.0), ms(100));
        assert_eq!(duration_from_tokens(10.0, 2.0), ms(200));
        assert_eq!(
            duration_from_tokens(3.0, 1.0),
            Duration::from_nanos(333_333_333)
        );
        assert_eq!(duration_from_tokens(1e-12, 1e12), INF_DURATION);
        assert_eq!(
            tokens_from_duration(10.0, Duration::from_millis(1500)),
            15.0
        );
        assert_eq!(tokens_from_duration(0.0, Duration::from_secs(1)), 0.0);
        assert_eq!(INF_DURATION.as_nanos(), 9_223_372_036_854_775_807);
    }

    /// A refused reservation takes nothing and says how long until a token comes.
    #[tokio::test(start_paused = true)]
    async fn reserve_within_refuses_without_taking() {
        let bucket = TokenBucket::new(1.0, 1);
        assert!(bucket.allow());
        assert!(!bucket.allow());
        assert_eq!(bucket.reserve_within(ms(500)), Err(Duration::from_secs(1)));
        assert_eq!(
            bucket.reserve_within(Duration::from_secs(1)),
            Ok(Duration::from_secs(1))
        );
        assert_eq!(bucket.reserve_within(ms(500)), Err(Duration::from_secs(2)));
        assert_eq!(
            TokenBucket::new(1.0, 0).reserve_within(INF_DURATION),
            Err(INF_DURATION)
        );
    }
}
