//! The resync timer of a run's watch phase (client-go's `resyncChan` and the goroutine that
//! calls the store's `Resync`), and the waits that serve it.

use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use kclient_core::CancellationToken;
use tokio::time::{sleep_until, Instant};

use super::errors::ReflectorError;
use super::errors::SourceError;
use super::io::KindIo;
use super::Core;

/// The resync timer: from the end of a run's list to the end of the run.
pub(super) struct Resync {
    period: Duration,
    next: Option<Instant>,
}

impl Resync {
    pub(super) fn new(period: Duration) -> Self {
        let mut resync = Self { period, next: None };
        resync.rearm();
        resync
    }

    /// Completes when a resync is due; never without a period.
    async fn due(&self) {
        match self.next {
            Some(at) => sleep_until(at).await,
            None => std::future::pending().await,
        }
    }

    /// The next tick; none without a period, or with one too long for the clock.
    fn rearm(&mut self) {
        self.next = if self.period.is_zero() {
            None
        } else {
            Instant::now().checked_add(self.period)
        };
    }
}

impl Core {
    /// Runs `work` until it completes (`Some`) or `cancel` fires (`None`), serving the resync
    /// ticks meanwhile when a timer runs: each calls the store's `resync` if
    /// [`should_resync`](crate::ReflectorOptions::should_resync) agrees, and a failure ends
    /// the wait with [`ReflectorError::Resync`].
    pub(super) async fn with_resync<T>(
        &self,
        io: &dyn KindIo,
        resync: Option<&mut Resync>,
        cancel: &CancellationToken,
        work: impl Future<Output = T>,
    ) -> Result<Option<T>, ReflectorError<SourceError>> {
        let mut work = pin!(work);
        let Some(resync) = resync else {
            return Ok(tokio::select! {
                _ = cancel.cancelled() => None,
                out = &mut work => Some(out),
            });
        };
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return Ok(None),
                out = &mut work => return Ok(Some(out)),
                _ = resync.due() => {
                    if self.should_resync.as_ref().is_none_or(|f| f()) {
                        tracing::debug!(reflector = %self.name, "forcing resync");
                        io.resync().map_err(ReflectorError::Resync)?;
                    }
                    resync.rearm();
                }
            }
        }
    }
}
