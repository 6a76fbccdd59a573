//! [`BucketRateLimiter`]: one token bucket shared by all items.

use std::fmt;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::TypedRateLimiter;

/// The delay that means "never" (Go's `rate.InfDuration`: the largest signed 64-bit count of
/// nanoseconds, about 292 years). [`BucketRateLimiter`] answers it when it can never grant a
/// token (a burst of 0, or a rate of 0 once the initial burst is spent).
pub const INF_DURATION: Duration = Duration::from_nanos(i64::MAX as u64);

/// An overall token bucket: `qps` tokens per second, holding at most `burst`, starting full
/// (client-go's `TypedBucketRateLimiter` over Go's `rate.NewLimiter(qps, burst)`).
///
/// Each [`when`](TypedRateLimiter::when) **reserves** one token, whatever the item, and returns
/// how long until that token is available: zero while the bucket has tokens, then growing by
/// `1/qps` per call as the bucket goes into debt. This is Go's `Limiter.Reserve().Delay()`,
/// arithmetic included (a float token count, refilled by elapsed seconds times the rate,
/// capped at the burst). [`forget`](TypedRateLimiter::forget) does nothing and
/// [`num_requeues`](TypedRateLimiter::num_requeues) is always 0: the bucket keeps no per-item
/// state.
///
/// A rate of `f64::INFINITY` never delays. A rate that is zero, negative or NaN refills
/// nothing (Go treats every rate `<= 0` alike).
///
/// The bucket is written here rather than taken from `governor`: governor's GCRA refuses a
/// request it cannot serve instead of reserving the token ahead of time, so two quick
/// refusals would both answer "wait 100 ms" where client-go answers 100 ms and then 200 ms.
/// Time is `tokio::time`, so a paused test clock drives it.
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

impl fmt::Debug for BucketRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BucketRateLimiter")
            .field("qps", &self.limit)
            .field("burst", &self.burst)
            .field("tokens", &self.state.lock().tokens)
            .finish()
    }
}

impl BucketRateLimiter {
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

    /// Reserves one token at `now` and returns how long until it is available (Go's
    /// `reserveN(now, 1, InfDuration)` followed by `DelayFrom(now)`).
    fn reserve(&self, now: Instant) -> Duration {
        if self.limit == f64::INFINITY {
            return Duration::ZERO;
        }
        let mut state = self.state.lock();
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
        // Go: ok := n <= burst && wait <= maxFutureReserve (InfDuration for Reserve).
        if self.burst < 1 || wait > INF_DURATION {
            return INF_DURATION;
        }
        state.last = Some(now);
        state.tokens = tokens;
        wait
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

impl<T> TypedRateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.reserve(Instant::now())
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> usize {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

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

    #[tokio::test(start_paused = true)]
    async fn refills_with_time_up_to_the_burst() {
        let bucket = BucketRateLimiter::new(10.0, 3);
        for _ in 0..3 {
            assert_eq!(bucket.reserve(Instant::now()), Duration::ZERO);
        }
        assert_eq!(bucket.reserve(Instant::now()), ms(100));
        // Debt of 1 token; 250 ms refill 2.5 tokens: 1.5 left.
        tokio::time::advance(ms(250)).await;
        assert_eq!(bucket.reserve(Instant::now()), Duration::ZERO);
        assert_eq!(bucket.reserve(Instant::now()), ms(50));
        // A long pause refills only up to the burst.
        tokio::time::advance(Duration::from_secs(3600)).await;
        for _ in 0..3 {
            assert_eq!(bucket.reserve(Instant::now()), Duration::ZERO);
        }
        assert_eq!(bucket.reserve(Instant::now()), ms(100));
    }

    #[tokio::test(start_paused = true)]
    async fn infinite_rate_never_waits() {
        let bucket = BucketRateLimiter::new(f64::INFINITY, 0);
        for _ in 0..1000 {
            assert_eq!(bucket.reserve(Instant::now()), Duration::ZERO);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn zero_rate_spends_the_burst_then_never() {
        for qps in [0.0, -5.0, f64::NAN] {
            let bucket = BucketRateLimiter::new(qps, 2);
            assert_eq!(bucket.qps(), 0.0);
            assert_eq!(bucket.reserve(Instant::now()), Duration::ZERO);
            assert_eq!(bucket.reserve(Instant::now()), Duration::ZERO);
            assert_eq!(bucket.reserve(Instant::now()), INF_DURATION);
            tokio::time::advance(Duration::from_secs(100)).await;
            assert_eq!(bucket.reserve(Instant::now()), INF_DURATION);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn zero_burst_never_grants() {
        let bucket = BucketRateLimiter::new(10.0, 0);
        assert_eq!(bucket.burst(), 0);
        assert_eq!(bucket.reserve(Instant::now()), INF_DURATION);
        assert_eq!(bucket.reserve(Instant::now()), INF_DURATION);
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
}
