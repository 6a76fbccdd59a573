//! The watch: opening one from the last resourceVersion (client-go's `watch`), and consuming
//! a watch stream into a store (client-go's `handleAnyWatch`), for the watch phase and for a
//! streaming list's initial events alike.

use std::future::poll_fn;
use std::time::Duration;

use kclient_core::{ApiError, CancellationToken, ListOptions};
use tokio::time::{sleep_until, Instant};

use super::errors::ReflectorError;
use super::errors::SourceError;
use super::io::{EventSource, KindIo, Step};
use super::phase::Outcome;
use super::resync::Resync;
use super::Core;

/// How often a streaming list without its closing bookmark is reported.
const INITIAL_EVENTS_END_WARNING: Duration = Duration::from_secs(10);

/// How a watch stream ended, when it did without an error.
pub(super) enum WatchEnd {
    /// The stream ended.
    Closed,
    /// The initial-events-end bookmark arrived; the watch goes on.
    InitialEventsEnd,
}

impl Core {
    /// The watch phase's step: a watch from the last resourceVersion (or the one a streaming
    /// list left open, `carried`), consumed into the store until it ends, the resync timer
    /// served throughout. [`Outcome::Closed`] when it ends normally.
    pub(super) async fn watch<'a>(
        &self,
        io: &'a dyn KindIo,
        carried: Option<Box<dyn EventSource<'a> + 'a>>,
        resync: &mut Resync,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ReflectorError<SourceError>> {
        let started = Instant::now();
        let mut source = match carried {
            Some(source) => source,
            None => {
                let options = ListOptions::default()
                    .resource_version(self.last_sync_resource_version())
                    .timeout_seconds(self.watch_timeout_seconds())
                    .allow_watch_bookmarks(true)
                    .omit_managed_fields(io.omits_managed_fields());
                let opened = io.watch(options, self.watch_idle_timeout, false);
                match self.with_resync(io, Some(resync), cancel, opened).await? {
                    None => return Ok(Outcome::Cancelled),
                    Some(opened) => opened.map_err(|source| ReflectorError::Watch {
                        what: self.type_description.clone(),
                        source,
                    })?,
                }
            }
        };
        if let Some(m) = &self.metrics {
            m.watch();
        }
        let mut record = |rv: &str| self.record_resource_version(rv);
        let consumed = self.consume(&mut *source, started, cancel, false, &mut record);
        Ok(
            match self.with_resync(io, Some(resync), cancel, consumed).await? {
                None | Some(Ok(None)) => Outcome::Cancelled,
                Some(Ok(Some(_))) => Outcome::Closed,
                Some(Err(err)) => return Err(err),
            },
        )
    }

    /// Consumes one watch (its objects written where `source` writes them). Returns
    /// `Ok(None)` when cancelled, how the watch ended otherwise; `record` gets every event's
    /// resourceVersion. With `until_initial_events_end`, returns as soon as the streaming
    /// list's closing bookmark arrives, leaving the stream open.
    pub(super) async fn consume<'a>(
        &self,
        source: &mut (dyn EventSource<'a> + 'a),
        started: Instant,
        cancel: &CancellationToken,
        until_initial_events_end: bool,
        record: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Option<WatchEnd>, ReflectorError<SourceError>> {
        let mut events = 0usize;
        let mut last_event = None::<Instant>;
        let mut warn_at = until_initial_events_end.then(|| started + INITIAL_EVENTS_END_WARNING);
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => return Ok(None),
                next = poll_fn(|cx| source.poll_step(cx)) => next,
                _ = sleep_until(warn_at.unwrap_or_else(Instant::now)), if warn_at.is_some() => {
                    self.warn_missing_initial_events_end(started, last_event);
                    warn_at = Some(Instant::now() + INITIAL_EVENTS_END_WARNING);
                    continue;
                }
            };
            let (resource_version, initial_events_end) = match next {
                None => break,
                Some(Step::Failed(source)) => {
                    return Err(ReflectorError::WatchStream {
                        what: self.type_description.clone(),
                        source,
                    })
                }
                Some(Step::Error(status)) => {
                    return Err(ReflectorError::WatchEvent {
                        what: self.type_description.clone(),
                        status: Box::new(ApiError::from(status)),
                    })
                }
                Some(Step::Skipped) => continue,
                Some(Step::Written(resource_version)) => (resource_version, false),
                Some(Step::Bookmark {
                    resource_version,
                    initial_events_end,
                }) => (resource_version, initial_events_end),
            };
            record(&resource_version);
            source.update_resource_version(&resource_version);
            events += 1;
            last_event = Some(Instant::now());
            if until_initial_events_end && initial_events_end {
                tracing::debug!(reflector = %self.name, events, elapsed = ?started.elapsed(), "initial events received");
                return Ok(Some(WatchEnd::InitialEventsEnd));
            }
        }
        if started.elapsed() < Duration::from_secs(1) && events == 0 {
            return Err(ReflectorError::VeryShortWatch {
                name: self.name.clone(),
            });
        }
        tracing::debug!(reflector = %self.name, events, "watch closed");
        Ok(Some(WatchEnd::Closed))
    }

    fn warn_missing_initial_events_end(&self, started: Instant, last_event: Option<Instant>) {
        match last_event {
            None => tracing::warn!(
                reflector = %self.name,
                waited = ?started.elapsed(),
                "awaiting the bookmark that ends a streaming list's initial events; no events received yet"
            ),
            Some(last) if last.elapsed() >= INITIAL_EVENTS_END_WARNING => tracing::warn!(
                reflector = %self.name,
                since_last_event = ?last.elapsed(),
                "no bookmark ending the streaming list's initial events yet"
            ),
            Some(_) => {}
        }
    }
}
