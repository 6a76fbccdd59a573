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

/// How to back off between tries (client-go's `wait.Backoff`) and `d` plus a random part of
/// it (`wait.Jitter`): kclient-core's, the one backoff of the workspace, which the reflector
/// uses too (see [`kclient_core::backoff`]).
pub use kclient_core::backoff::{jitter, RetryBackoff};

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
