//! Exponential backoff with jitter (apimachinery's `wait.Backoff`, `wait.Jitter` and
//! `ExponentialBackoffManager`), on tokio's clock: the one implementation that the reflector
//! (kclient-cache) and the retry helpers, per-key backoff, leader election and event
//! broadcasters (kclient-tools) share.
//!
//! * [`jitter`]: a duration lengthened by a random part of itself.
//! * [`RetryBackoff`]: client-go's `wait.Backoff` and its `Step`: a wait that grows by a
//!   factor up to a cap, for a number of steps.
//! * [`ExponentialBackoffManager`]: a [`RetryBackoff`] that starts over once a quiet period
//!   has passed without a backoff (apimachinery's `NewExponentialBackoffManager`, what
//!   client-go's reflector waits with between runs).
//!
//! Not here, on purpose: kclient-workqueue's `ItemExponentialFailureRateLimiter` (client-go's
//! per-item rate limiter: a delay computed from an item's failure count, `base × 2ⁿ` capped,
//! in exact integer arithmetic and without jitter, a different rule with its own pinned
//! arithmetic), and kclient-tools' per-key `flowcontrol::Backoff` (a map of keys that
//! expire, client-go's `flowcontrol.Backoff`), which takes its jitter from here.
//!
//! ```
//! use std::time::Duration;
//! use kclient_core::backoff::RetryBackoff;
//!
//! let mut backoff = RetryBackoff {
//!     duration: Duration::from_secs(1),
//!     factor: 2.0,
//!     jitter: 0.0,
//!     steps: 10,
//!     cap: Duration::from_secs(5),
//! };
//! let waits: Vec<u64> = (0..5).map(|_| backoff.step().as_secs()).collect();
//! assert_eq!(waits, [1, 2, 4, 5, 5]);
//! ```

use std::time::Duration;

use tokio::time::Instant;

/// `d` plus a random part of at most `max_factor` times `d`, uniformly (apimachinery's
/// `wait.Jitter`). A factor of zero or less adds nothing (Go's `Jitter` takes 1.0 then, but
/// its callers, `Backoff.Step` first, pass a jitter only when it is positive). Saturates
/// instead of overflowing.
pub fn jitter(d: Duration, max_factor: f64) -> Duration {
    if max_factor <= 0.0 {
        return d;
    }
    d.saturating_add(scale(d, fastrand::f64() * max_factor))
}

/// `d` times `factor`, saturating: `Duration::MAX` beyond it, zero for a negative (or NaN)
/// product, where Go's arithmetic gives a negative duration, which waits no time.
fn scale(d: Duration, factor: f64) -> Duration {
    let seconds = d.as_secs_f64() * factor;
    if seconds.is_nan() || seconds <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
}

/// How to back off between tries (client-go's `wait.Backoff`; named so apart from
/// kclient-tools' per-key `flowcontrol::Backoff`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryBackoff {
    /// The first wait.
    pub duration: Duration,
    /// Each wait is the previous one times this (0 or 1: constant).
    pub factor: f64,
    /// Each wait is lengthened by a random part of at most `jitter` times itself.
    pub jitter: f64,
    /// How many steps grow the wait (for kclient-tools' `exponential_backoff`, how many
    /// tries, and so `steps - 1` waits).
    pub steps: u32,
    /// No wait grows beyond this (zero: no cap); reaching it ends the growth and the steps.
    pub cap: Duration,
}

impl RetryBackoff {
    /// The next wait, advancing the backoff (client-go's `Backoff.Step`): with steps left,
    /// returns the current duration (jittered) and grows it by `factor` up to `cap` (reaching
    /// the cap ends the steps); with none left, returns the current duration, jittered.
    pub fn step(&mut self) -> Duration {
        if self.steps < 1 {
            return jitter(self.duration, self.jitter);
        }
        self.steps -= 1;
        let duration = self.duration;
        if self.factor != 0.0 {
            self.duration = scale(self.duration, self.factor);
            if !self.cap.is_zero() && self.duration > self.cap {
                self.duration = self.cap;
                self.steps = 0;
            }
        }
        jitter(duration, self.jitter)
    }
}

/// Exponential backoff with jitter that starts over after a quiet period (apimachinery's
/// `ExponentialBackoffManager`: a [`RetryBackoff`] with unbounded steps, reset when more
/// than `reset_after` passed since the last backoff started). Its [`Default`] is what
/// client-go's reflector uses: 800 ms doubling to a 30 s cap, jitter 1.0 (each wait uniform
/// in `[d, 2d)`, so `[30 s, 60 s)` at the cap: about 0.22 requests per second against a sick
/// server), and a reset once 2 minutes pass without a backoff.
#[derive(Debug, Clone)]
pub struct ExponentialBackoffManager {
    initial: Duration,
    reset_after: Duration,
    backoff: RetryBackoff,
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
    /// A backoff starting at `initial`, multiplied by `factor` per step up to `cap` (zero:
    /// no cap, as apimachinery's), each wait stretched by up to `jitter` times itself, and
    /// reset once `reset_after` passes without a backoff.
    pub fn new(
        initial: Duration,
        cap: Duration,
        reset_after: Duration,
        factor: f64,
        jitter: f64,
    ) -> Self {
        Self {
            initial,
            reset_after,
            backoff: Self::fresh(initial, cap, factor, jitter),
            last_backoff_start: None,
        }
    }

    /// apimachinery's: as many steps as it takes (its `math.MaxInt32`).
    fn fresh(initial: Duration, cap: Duration, factor: f64, jitter: f64) -> RetryBackoff {
        RetryBackoff {
            duration: initial,
            factor,
            jitter,
            steps: u32::MAX,
            cap,
        }
    }

    /// The next wait (apimachinery's `Backoff().C()` duration), read on tokio's clock: starts
    /// over first if the last backoff started more than `reset_after` ago.
    pub fn next_backoff(&mut self) -> Duration {
        let now = Instant::now();
        if self
            .last_backoff_start
            .is_none_or(|last| now.saturating_duration_since(last) > self.reset_after)
        {
            let RetryBackoff {
                factor,
                jitter,
                cap,
                ..
            } = self.backoff;
            self.backoff = Self::fresh(self.initial, cap, factor, jitter);
        }
        self.last_backoff_start = Some(now);
        self.backoff.step()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn within(d: Duration, lo_ms: u64, hi_ms: u64) -> bool {
        d >= Duration::from_millis(lo_ms) && d < Duration::from_millis(hi_ms)
    }

    /// seed-semantics §3.21: 0.8 s doubling to 30 s, jitter 1.0, reset after 2 minutes.
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
    fn no_jitter_is_exact_and_jitter_stays_within_its_factor() {
        assert_eq!(jitter(Duration::from_secs(3), 0.0), Duration::from_secs(3));
        assert_eq!(jitter(Duration::from_secs(3), -1.0), Duration::from_secs(3));
        for _ in 0..100 {
            let d = jitter(Duration::from_secs(1), 1.0);
            assert!(d >= Duration::from_secs(1) && d < Duration::from_secs(2));
        }
    }

    #[test]
    fn scaling_saturates_both_ways() {
        assert_eq!(scale(Duration::MAX, 10.0), Duration::MAX);
        assert_eq!(scale(Duration::from_secs(1), -2.0), Duration::ZERO);
        assert_eq!(scale(Duration::from_secs(1), f64::NAN), Duration::ZERO);
        assert_eq!(scale(Duration::from_secs(2), 1.5), Duration::from_secs(3));
    }

    /// A constant backoff (factor 0) never grows; a manager without a cap keeps doubling.
    #[tokio::test(start_paused = true)]
    async fn constant_and_uncapped_backoffs() {
        let mut constant = ExponentialBackoffManager::new(
            Duration::from_secs(1),
            Duration::ZERO,
            Duration::MAX,
            0.0,
            0.0,
        );
        for _ in 0..3 {
            assert_eq!(constant.next_backoff(), Duration::from_secs(1));
        }
        let mut uncapped = ExponentialBackoffManager::new(
            Duration::from_secs(1),
            Duration::ZERO,
            Duration::MAX,
            2.0,
            0.0,
        );
        let waits: Vec<u64> = (0..5).map(|_| uncapped.next_backoff().as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16]);
    }
}
