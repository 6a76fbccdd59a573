//! The reflector's backoff (apimachinery's `ExponentialBackoffManager` as client-go's
//! reflector configures it) and its internal-error retry window (`RetryWithDeadline`).
//!
//! Both read tokio's clock, so tests drive them with a paused clock.

use std::time::Duration;

use tokio::time::Instant;

/// Exponential backoff with jitter that resets after a quiet period (apimachinery's
/// `ExponentialBackoffManager`, named so apart from kclient-tools' `retry::RetryBackoff`,
/// client-go's `wait.Backoff` parameters, and its per-key `flowcontrol::Backoff`): client-go's reflector
/// uses 800 ms doubling to a 30 s cap, jitter 1.0 (each wait is uniform in `[d, 2d)`, so
/// `[30 s, 60 s)` at the cap: about 0.22 requests per second against a sick server), and a
/// reset once 2 minutes pass without a backoff.
#[derive(Debug, Clone)]
pub struct ExponentialBackoffManager {
    initial: Duration,
    cap: Duration,
    reset_after: Duration,
    factor: f64,
    jitter: f64,
    /// The next step's base duration.
    next: Duration,
    /// Whether the base reached the cap (no more growth).
    capped: bool,
    last_backoff_start: Option<Instant>,
}

impl Default for ExponentialBackoffManager {
    /// client-go's reflector backoff: 800 ms, ×2, cap 30 s, jitter 1.0, reset after 2 min.
    fn default() -> Self {
        Self::new(
            Duration::from_millis(800),
            Duration::from_secs(30),
            Duration::from_secs(120),
            2.0,
            1.0,
        )
    }
}

impl ExponentialBackoffManager {
    /// A backoff starting at `initial`, multiplied by `factor` per step up to `cap`, each
    /// wait stretched by up to `jitter` times itself, and reset once `reset_after` passes
    /// without a backoff.
    pub fn new(
        initial: Duration,
        cap: Duration,
        reset_after: Duration,
        factor: f64,
        jitter: f64,
    ) -> Self {
        Self {
            initial,
            cap,
            reset_after,
            factor,
            jitter,
            next: initial,
            capped: false,
            last_backoff_start: None,
        }
    }

    /// The next wait (apimachinery's `Backoff().C()` duration): resets first if the last
    /// backoff started more than `reset_after` ago.
    pub fn next_backoff(&mut self) -> Duration {
        let now = Instant::now();
        if self
            .last_backoff_start
            .is_none_or(|last| now.saturating_duration_since(last) > self.reset_after)
        {
            self.next = self.initial;
            self.capped = false;
        }
        self.last_backoff_start = Some(now);
        let base = self.next;
        if !self.capped && self.factor != 0.0 {
            let grown = Duration::try_from_secs_f64(self.next.as_secs_f64() * self.factor.max(0.0))
                .unwrap_or(Duration::MAX);
            if grown > self.cap {
                self.next = self.cap;
                self.capped = true;
            } else {
                self.next = grown;
            }
        }
        jittered(base, self.jitter)
    }
}

/// `d` plus up to `factor × d`, uniformly (apimachinery's `wait.Jitter`).
pub(crate) fn jittered(d: Duration, factor: f64) -> Duration {
    if factor <= 0.0 {
        return d;
    }
    d.saturating_add(
        Duration::try_from_secs_f64(d.as_secs_f64() * fastrand::f64() * factor)
            .unwrap_or(Duration::MAX),
    )
}

/// client-go's `RetryWithDeadline` for the reflector's internal errors: retries are allowed
/// while the first error of a run is at most `max_retry_duration` old; a run ends when no
/// retryable error came for `min_reset_period` (client-go: 1 minute). A zero
/// `max_retry_duration` (client-go's default) never retries.
#[derive(Debug, Clone)]
pub(crate) struct RetryWithDeadline {
    max_retry_duration: Duration,
    min_reset_period: Duration,
    first_error: Option<Instant>,
    last_error: Option<Instant>,
}

impl RetryWithDeadline {
    pub(crate) fn new(max_retry_duration: Duration, min_reset_period: Duration) -> Self {
        Self {
            max_retry_duration,
            min_reset_period,
            first_error: None,
            last_error: None,
        }
    }

    /// Records the outcome of a watch: only retryable errors count.
    pub(crate) fn after(&mut self, retryable: bool) {
        if !retryable {
            return;
        }
        let now = Instant::now();
        if self
            .last_error
            .is_none_or(|last| now.saturating_duration_since(last) >= self.min_reset_period)
        {
            self.first_error = None;
            self.last_error = None;
        }
        self.first_error.get_or_insert(now);
        self.last_error = Some(now);
    }

    /// Whether the error just recorded may be retried.
    pub(crate) fn should_retry(&mut self) -> bool {
        if self.max_retry_duration.is_zero() {
            return false;
        }
        let now = Instant::now();
        let first = self.first_error.unwrap_or(now);
        if now.saturating_duration_since(first) <= self.max_retry_duration {
            return true;
        }
        self.first_error = None;
        self.last_error = None;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn within(d: Duration, lo_ms: u64, hi_ms: u64) -> bool {
        d >= Duration::from_millis(lo_ms) && d < Duration::from_millis(hi_ms)
    }

    #[tokio::test(start_paused = true)]
    async fn reflector_backoff_doubles_to_the_cap_with_jitter_and_resets() {
        let mut b = ExponentialBackoffManager::default();
        for (lo, hi) in [
            (800, 1600),
            (1600, 3200),
            (3200, 6400),
            (6400, 12800),
            (12800, 25600),
            (25600, 51200),
            (30000, 60000),
            (30000, 60000),
        ] {
            let d = b.next_backoff();
            assert!(within(d, lo, hi), "{d:?} not in [{lo}, {hi}) ms");
            tokio::time::advance(Duration::from_secs(1)).await;
        }
        // Two minutes without a backoff: back to the start.
        tokio::time::advance(Duration::from_secs(121)).await;
        assert!(within(b.next_backoff(), 800, 1600));
    }

    #[test]
    fn no_jitter_is_exact() {
        assert_eq!(
            jittered(Duration::from_secs(3), 0.0),
            Duration::from_secs(3)
        );
        for _ in 0..100 {
            let d = jittered(Duration::from_secs(1), 1.0);
            assert!(d >= Duration::from_secs(1) && d < Duration::from_secs(2));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn internal_error_retries_end_at_the_deadline() {
        let mut never = RetryWithDeadline::new(Duration::ZERO, Duration::from_secs(60));
        never.after(true);
        assert!(!never.should_retry());

        let mut r = RetryWithDeadline::new(Duration::from_secs(30), Duration::from_secs(60));
        r.after(true);
        assert!(r.should_retry());
        tokio::time::advance(Duration::from_secs(20)).await;
        r.after(true);
        assert!(r.should_retry());
        tokio::time::advance(Duration::from_secs(20)).await;
        r.after(true);
        assert!(!r.should_retry(), "40 s since the first error");
        // A minute without errors starts a new run.
        r.after(true);
        tokio::time::advance(Duration::from_secs(61)).await;
        r.after(true);
        assert!(r.should_retry());
        // Other errors do not count.
        r.after(false);
        assert!(r.should_retry());
    }
}
