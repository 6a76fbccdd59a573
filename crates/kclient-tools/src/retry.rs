//! Retrying an operation with exponential backoff (client-go's `util/retry` and
//! `wait.Backoff`/`wait.ExponentialBackoff`), on tokio's clock.
//!
//! * [`RetryBackoff`]: client-go's `wait.Backoff` — `duration`, `factor`, `jitter`, `steps`,
//!   `cap` — with its exact stepping rules, and [`DEFAULT_RETRY`] / [`DEFAULT_BACKOFF`].
//! * [`exponential_backoff`]: runs a condition up to `steps` times, sleeping a step between
//!   tries; [`WaitError::Timeout`] when it never held.
//! * [`on_error`] and [`retry_on_conflict`]: run an operation again while its error is
//!   retriable (a `409 Conflict` for the latter), returning the last error when the steps
//!   run out — the read-modify-write loop of every controller that updates objects.
//!
//! ```
//! use kclient_core::{ApiError, GroupResource};
//! use kclient_tools::retry::{retry_on_conflict, DEFAULT_RETRY};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let mut tries = 0;
//! let result = retry_on_conflict(DEFAULT_RETRY, || {
//!     tries += 1;
//!     let outcome = if tries < 3 {
//!         Err(ApiError::conflict(&GroupResource::new("apps", "deployments"), "web", "modified"))
//!     } else {
//!         Ok(tries)
//!     };
//!     async move { outcome }
//! })
//! .await;
//! assert_eq!(result.unwrap(), 3);
//! # }
//! ```

use std::future::Future;
use std::time::Duration;

use kclient_core::ApiStatus;

/// How to back off between tries (client-go's `wait.Backoff`; named so apart from the
/// per-key [`flowcontrol::Backoff`](crate::flowcontrol::Backoff) and kclient-cache's
/// reflector `ExponentialBackoffManager`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryBackoff {
    /// The first wait.
    pub duration: Duration,
    /// Each wait is the previous one times this (0 or 1: constant).
    pub factor: f64,
    /// Each wait is lengthened by a random part of at most `jitter` times itself.
    pub jitter: f64,
    /// How many tries (and so `steps - 1` waits) [`exponential_backoff`] makes.
    pub steps: u32,
    /// No wait grows beyond this (zero: no cap); reaching it ends the growth and the steps.
    pub cap: Duration,
}

/// client-go's `retry.DefaultRetry`: 5 tries, 10 ms apart with 10% jitter — for conflicts,
/// where another try soon usually succeeds.
pub const DEFAULT_RETRY: RetryBackoff = RetryBackoff {
    duration: Duration::from_millis(10),
    factor: 1.0,
    jitter: 0.1,
    steps: 5,
    cap: Duration::ZERO,
};

/// client-go's `retry.DefaultBackoff`: 4 tries, 10 ms then ×5 each time (10, 50, 250 ms),
/// 10% jitter — for errors that take longer to clear.
pub const DEFAULT_BACKOFF: RetryBackoff = RetryBackoff {
    duration: Duration::from_millis(10),
    factor: 5.0,
    jitter: 0.1,
    steps: 4,
    cap: Duration::ZERO,
};

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

/// `d` times `factor`, saturating instead of overflowing.
fn scale(d: Duration, factor: f64) -> Duration {
    Duration::try_from_secs_f64(d.as_secs_f64() * factor).unwrap_or(Duration::MAX)
}

/// `d` plus a random part of at most `max_factor` times `d` (client-go's `wait.Jitter`; a
/// factor of 0 or less means 1).
pub fn jitter(d: Duration, max_factor: f64) -> Duration {
    if max_factor <= 0.0 {
        return d;
    }
    d.saturating_add(scale(d, fastrand::f64() * max_factor))
}

/// Why [`exponential_backoff`] or a retry gave up.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum WaitError<E> {
    /// The condition never held within the steps (client-go's `ErrWaitTimeout`).
    #[error("timed out waiting for the condition")]
    Timeout,
    /// The condition failed.
    #[error(transparent)]
    Failed(E),
}

/// Checks `condition` until it returns `Ok(true)`, at most `backoff.steps` times, waiting
/// `backoff.step()` between checks (client-go's `wait.ExponentialBackoff`). An `Err` ends
/// it at once.
pub async fn exponential_backoff<E, F, Fut>(
    mut backoff: RetryBackoff,
    mut condition: F,
) -> Result<(), WaitError<E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool, E>>,
{
    while backoff.steps > 0 {
        if condition().await.map_err(WaitError::Failed)? {
            return Ok(());
        }
        if backoff.steps == 1 {
            break;
        }
        tokio::time::sleep(backoff.step()).await;
    }
    Err(WaitError::Timeout)
}

/// Runs `operation` until it succeeds, again after a backoff step while `retriable` says
/// its error is worth another try (client-go's `retry.OnError`). Returns the first error
/// that is not retriable, or the last retriable one once the steps run out.
pub async fn on_error<T, E, F, Fut>(
    backoff: RetryBackoff,
    retriable: impl Fn(&E) -> bool,
    mut operation: F,
) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    // The loop of `exponential_backoff`, keeping the last retriable error to return.
    let mut backoff = backoff;
    let mut last = None;
    while backoff.steps > 0 {
        match operation().await {
            Ok(value) => return Ok(value),
            Err(e) if retriable(&e) => last = Some(e),
            Err(e) => return Err(e),
        }
        if backoff.steps == 1 {
            break;
        }
        tokio::time::sleep(backoff.step()).await;
    }
    match last {
        Some(e) => Err(e),
        // A backoff without steps: one try. (client-go's `OnError` then returns success
        // without running the operation at all.)
        None => operation().await,
    }
}

/// [`on_error`] retrying `409 Conflict` errors only (client-go's `retry.RetryOnConflict`):
/// wrap the whole read-modify-write so that each try reads the object afresh.
pub async fn retry_on_conflict<T, E, F, Fut>(backoff: RetryBackoff, operation: F) -> Result<T, E>
where
    E: ApiStatus,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    on_error(backoff, |e: &E| e.is_conflict(), operation).await
}
