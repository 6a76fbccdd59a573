//! Polling a condition until it holds, is cancelled or times out (client-go's
//! `wait.PollUntilContextCancel` and `wait.PollUntilContextTimeout`), on tokio's clock.
//!
//! The condition runs every `interval` on a fixed schedule (the time it takes counts in the
//! interval; after a run longer than the interval, one missed tick fires at once and the rest
//! are dropped, as with client-go's Go ticker, which buffers one tick), first at once when
//! `immediate`. Cancellation is checked before every run, so a condition never
//! runs after its token fired.
//!
//! ```
//! use std::time::Duration;
//! use kclient_tools::wait::{poll_until_timeout, PollError};
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
//! let mut checks = 0;
//! let outcome = poll_until_timeout(&CancellationToken::new(), Duration::from_secs(1), Duration::from_secs(10), true, || {
//!     checks += 1;
//!     let ready = checks == 3;
//!     async move { Ok::<_, std::convert::Infallible>(ready) }
//! })
//! .await;
//! assert!(outcome.is_ok());
//! assert_eq!(checks, 3); // at 0 s, 1 s and 2 s
//! # }
//! ```

use std::future::Future;
use std::time::Duration;

use tokio::time::{interval_at, Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

/// Why polling stopped without the condition holding.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PollError<E> {
    /// The token was cancelled (Go's `context.Canceled`).
    #[error("polling was cancelled")]
    Cancelled,
    /// The timeout passed (Go's `context.DeadlineExceeded`).
    #[error("timed out waiting for the condition")]
    Timeout,
    /// The condition failed.
    #[error(transparent)]
    Failed(E),
}

/// Runs `condition` every `interval` (first at once when `immediate`) until it returns
/// `Ok(true)` or an error, or `cancel` fires (client-go's `PollUntilContextCancel`).
pub async fn poll_until_cancelled<E, F, Fut>(
    cancel: &CancellationToken,
    interval: Duration,
    immediate: bool,
    condition: F,
) -> Result<(), PollError<E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool, E>>,
{
    poll(cancel, None, interval, immediate, condition).await
}

/// [`poll_until_cancelled`], also giving up with [`PollError::Timeout`] after `timeout`
/// (client-go's `PollUntilContextTimeout`).
pub async fn poll_until_timeout<E, F, Fut>(
    cancel: &CancellationToken,
    interval: Duration,
    timeout: Duration,
    immediate: bool,
    condition: F,
) -> Result<(), PollError<E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool, E>>,
{
    let deadline = Instant::now().checked_add(timeout);
    poll(cancel, deadline, interval, immediate, condition).await
}

async fn poll<E, F, Fut>(
    cancel: &CancellationToken,
    deadline: Option<Instant>,
    interval: Duration,
    immediate: bool,
    mut condition: F,
) -> Result<(), PollError<E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool, E>>,
{
    let start = Instant::now();
    let first_tick = start.checked_add(interval).unwrap_or(start);
    let mut ticks = interval_at(first_tick, interval.max(Duration::from_nanos(1)));
    ticks.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let stopped = |now: Instant| -> Option<PollError<E>> {
        if cancel.is_cancelled() {
            Some(PollError::Cancelled)
        } else if deadline.is_some_and(|d| now >= d) {
            Some(PollError::Timeout)
        } else {
            None
        }
    };
    if immediate {
        if let Some(stop) = stopped(Instant::now()) {
            return Err(stop);
        }
        if condition().await.map_err(PollError::Failed)? {
            return Ok(());
        }
    }
    loop {
        let timeout = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(PollError::Cancelled),
            _ = timeout => return Err(PollError::Timeout),
            _ = ticks.tick() => {}
        }
        // A tick can win the race with a cancellation or the deadline: check them again,
        // so that the condition never runs after either.
        if let Some(stop) = stopped(Instant::now()) {
            return Err(stop);
        }
        if condition().await.map_err(PollError::Failed)? {
            return Ok(());
        }
    }
}
