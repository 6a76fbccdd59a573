//! [`RetryWatcher`]: a watch that resumes from the last resourceVersion it delivered.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::stream::{BoxStream, Stream, StreamExt};
#[cfg(doc)]
use kclient_cache::WATCH_DEADLINE_GRACE;
use kclient_cache::{watch_timeout_seconds, watch_with_deadline, DEFAULT_MIN_WATCH_TIMEOUT};
use kclient_core::{
    ApiError, ApiStatus, ListOptions, ListerWatcher, Resource, ResourceExt, Status, WatchEvent,
    WatchStream,
};
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

/// The least time between the starts of two watches (client-go's `minRestartDelay`, 1 s), so
/// that a server closing watches at once is not hammered.
pub const MIN_RESTART_DELAY: Duration = Duration::from_secs(1);

/// Why a [`RetryWatcher`] cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RetryWatcherError {
    /// `""` and `"0"` mean "any recent state" to the server, so a watch from them may replay
    /// or skip events: a retry watcher needs a resourceVersion the server actually gave out
    /// (from a list or a get).
    #[error("initial resourceVersion {0:?} is not supported: watch from a resourceVersion the server returned")]
    UnsupportedResourceVersion(String),
}

/// A watch that re-watches from the last resourceVersion it delivered, so that it never
/// replays or skips an event (client-go's `RetryWatcher`). It is a [`Stream`] of events;
/// bookmarks move the resourceVersion but are not delivered.
///
/// What ends a watch and what happens then, as in client-go:
/// * the server closes it, the connection breaks, the watch request fails (refused, a
///   timeout, a 5xx, a 429), or the server leaves it open past its `timeoutSeconds` plus
///   [`WATCH_DEADLINE_GRACE`] (the client-side deadline, below): watch again from the last
///   resourceVersion, at least [`MIN_RESTART_DELAY`] after the previous start, and after the
///   `retryAfterSeconds` of an error event;
/// * a `410 Gone` (the resourceVersion is too old: events were compacted away): the error is
///   delivered as a [`WatchEvent::Error`] and the stream ends — the caller must list again
///   (or use [`until_with_sync`](super::until_with_sync), which does);
/// * `401`/`403` on the watch request: delivered as an error event, and the stream ends;
/// * an object without a resourceVersion: an internal error event, and the stream ends.
///
/// Two differences from client-go, on purpose: a `410` answer to the watch *request* (rather
/// than as an event in the watch) also ends the stream with the error; client-go retries it
/// every second forever, although it cannot succeed. And each watch asks for a
/// `timeoutSeconds`, uniform in 5–10 minutes as the reflector's
/// ([`watch_timeout_seconds`] of [`DEFAULT_MIN_WATCH_TIMEOUT`]), and is ended by the client
/// [`WATCH_DEADLINE_GRACE`] after it ([`watch_with_deadline`]): a server or proxy that
/// answers a watch and then goes silent, ignoring the timeout, would otherwise stall the
/// watcher forever. client-go's asks for no timeout (the server picks 30–60 minutes) and has
/// no client-side deadline.
///
/// [`stop`](Self::stop) (or dropping it) ends the stream; so does cancelling the token given
/// to [`with_cancel`](Self::with_cancel).
pub struct RetryWatcher<K> {
    events: BoxStream<'static, WatchEvent<K>>,
    stop: CancellationToken,
}

impl<K> RetryWatcher<K>
where
    K: Resource + Send + 'static,
{
    /// Watches from `initial_resource_version` (neither `""` nor `"0"`) through
    /// `lister_watcher` (client-go's `NewRetryWatcherWithContext`).
    pub fn new<L>(
        initial_resource_version: &str,
        lister_watcher: L,
    ) -> Result<Self, RetryWatcherError>
    where
        L: ListerWatcher<K> + 'static,
    {
        Self::with_cancel(
            initial_resource_version,
            lister_watcher,
            CancellationToken::new(),
        )
    }

    /// [`new`](Self::new), also ending when `cancel` is cancelled.
    pub fn with_cancel<L>(
        initial_resource_version: &str,
        lister_watcher: L,
        cancel: CancellationToken,
    ) -> Result<Self, RetryWatcherError>
    where
        L: ListerWatcher<K> + 'static,
    {
        if matches!(initial_resource_version, "" | "0") {
            return Err(RetryWatcherError::UnsupportedResourceVersion(
                initial_resource_version.to_owned(),
            ));
        }
        let stop = cancel.child_token();
        let state = State {
            lister_watcher: Arc::new(lister_watcher),
            last_resource_version: initial_resource_version.to_owned(),
            watch: None,
            next_start: Instant::now(),
            stop: stop.clone(),
            done: false,
        };
        let events = futures::stream::unfold(state, |mut state| async move {
            let event = state.next_event().await?;
            Some((event, state))
        })
        .boxed();
        Ok(Self { events, stop })
    }

    /// The resourceVersion a restarted watch would start from is not exposed by client-go
    /// either; what is delivered is the events. Ends the stream (client-go's `Stop`).
    pub fn stop(&self) {
        self.stop.cancel();
    }
}

impl<K> Stream for RetryWatcher<K> {
    type Item = WatchEvent<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.events.poll_next_unpin(cx)
    }
}

impl<K> Drop for RetryWatcher<K> {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl<K> fmt::Debug for RetryWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryWatcher")
            .field("stopped", &self.stop.is_cancelled())
            .finish_non_exhaustive()
    }
}

struct State<K, L: ListerWatcher<K>> {
    lister_watcher: Arc<L>,
    last_resource_version: String,
    watch: Option<WatchStream<K, L::Error>>,
    /// When the next watch may start: at least the minimum restart delay after the last
    /// start, and after a server-requested retry delay.
    next_start: Instant,
    stop: CancellationToken,
    done: bool,
}

impl<K, L> State<K, L>
where
    K: Resource + Send + 'static,
    L: ListerWatcher<K>,
{
    /// The next event to deliver, or `None` when the stream ends.
    async fn next_event(&mut self) -> Option<WatchEvent<K>> {
        loop {
            if self.done || self.stop.is_cancelled() {
                return None;
            }
            let Some(watch) = &mut self.watch else {
                match self.start().await? {
                    Ok(watch) => self.watch = Some(watch),
                    Err(terminal) => {
                        self.done = true;
                        return Some(terminal);
                    }
                }
                continue;
            };
            let next = tokio::select! {
                biased;
                _ = self.stop.cancelled() => return None,
                next = watch.next() => next,
            };
            match next {
                None => {
                    tracing::debug!(resource_version = %self.last_resource_version, "watch closed, re-creating it");
                    self.watch = None;
                }
                Some(Err(e)) => {
                    tracing::debug!(error = %e, resource_version = %self.last_resource_version, "watch broke, re-creating it");
                    self.watch = None;
                }
                Some(Ok(WatchEvent::Error(status))) => match status.code {
                    410 => {
                        self.done = true;
                        return Some(WatchEvent::Error(status));
                    }
                    _ => {
                        // 500, 504 and anything else: watch again, after the delay the
                        // server asked for.
                        let retry_after = status
                            .details
                            .as_ref()
                            .map_or(0, |d| d.retry_after_seconds.max(0));
                        tracing::debug!(code = status.code, message = %status.message, retry_after, "watch error event, re-creating the watch");
                        self.watch = None;
                        self.next_start = self
                            .next_start
                            .max(Instant::now() + Duration::from_secs(retry_after as u64));
                    }
                },
                Some(Ok(event)) => {
                    // Objects and bookmarks: both move the resourceVersion; only objects
                    // are delivered.
                    let Some(resource_version) = event
                        .resource_version()
                        .filter(|rv| !rv.is_empty())
                        .map(str::to_owned)
                    else {
                        let what = event.object().map_or("a bookmark".to_owned(), |o| {
                            format!("object {:?}", o.name_any())
                        });
                        return Some(self.end_with(no_resource_version(&what)));
                    };
                    self.last_resource_version = resource_version;
                    if !matches!(event, WatchEvent::Bookmark(_)) {
                        return Some(event);
                    }
                }
            }
        }
    }

    /// Starts a watch from the last resourceVersion once the restart delay has passed, with
    /// its client-side deadline:
    /// `None` if stopped meanwhile, `Some(Err(event))` for an error that ends the stream.
    async fn start(&mut self) -> Option<Result<WatchStream<K, L::Error>, WatchEvent<K>>> {
        loop {
            tokio::select! {
                biased;
                _ = self.stop.cancelled() => return None,
                _ = sleep_until(self.next_start) => {}
            }
            self.next_start = Instant::now() + MIN_RESTART_DELAY;
            let options = ListOptions::default()
                .resource_version(self.last_resource_version.clone())
                .allow_watch_bookmarks(true)
                .timeout_seconds(watch_timeout_seconds(DEFAULT_MIN_WATCH_TIMEOUT));
            let result = tokio::select! {
                biased;
                _ = self.stop.cancelled() => return None,
                result = watch_with_deadline(&*self.lister_watcher, &options, None) => result,
            };
            match result {
                Ok(watch) => return Some(Ok(watch)),
                Err(e) if e.is_forbidden() || e.is_unauthorized() => {
                    tracing::error!(error = %e, "watch failed: ensure the client has valid credentials and watch permissions on the resource");
                    return Some(Err(WatchEvent::Error(status_of(&e))));
                }
                Err(e) if e.is_gone() || e.is_resource_expired() => {
                    tracing::info!(error = %e, resource_version = %self.last_resource_version, "watch failed: the resourceVersion is gone");
                    return Some(Err(WatchEvent::Error(status_of(&e))));
                }
                Err(e) => {
                    tracing::debug!(error = %e, "watch failed, retrying");
                }
            }
        }
    }

    fn end_with(&mut self, status: Status) -> WatchEvent<K> {
        self.done = true;
        WatchEvent::Error(status)
    }
}

/// The `Status` of a failed request, as an error event carries it.
fn status_of<E: ApiStatus + fmt::Display>(e: &E) -> Status {
    e.api_status().cloned().unwrap_or_else(|| {
        let mut status = ApiError::internal_error(&e.to_string()).status;
        if let Some(code) = e.status_code() {
            status.code = code;
        }
        status
    })
}

/// The internal error for an event the watcher cannot resume after.
fn no_resource_version(what: &str) -> Status {
    ApiError::internal_error(&format!(
        "retry watcher: {what} has no resourceVersion to resume from"
    ))
    .status
}
