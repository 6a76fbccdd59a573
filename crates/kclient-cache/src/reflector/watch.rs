//! The watch: opening one from the last resourceVersion (client-go's `watch`), and consuming
//! a watch stream into a store (client-go's `handleAnyWatch`), for the watch phase and for a
//! streaming list's initial events alike.

use std::any::Any;
use std::time::Duration;

use futures::StreamExt;
use kclient_core::{
    ApiError, CancellationToken, DynamicObject, GroupVersionKind, ListOptions, ListerWatcher,
    Resource, ResourceExt, WatchEvent, WatchStream,
};
use tokio::time::{sleep_until, Instant};

use super::errors::ReflectorError;
use super::phase::Outcome;
use super::resync::Resync;
use super::Reflector;
use crate::store::Store;

/// How often a streaming list without its closing bookmark is reported.
const INITIAL_EVENTS_END_WARNING: Duration = Duration::from_secs(10);

/// How a watch stream ended, when it did without an error.
pub(super) enum WatchEnd<K, E> {
    /// The stream ended.
    Closed,
    /// The initial-events-end bookmark arrived; the watch goes on.
    InitialEventsEnd(WatchStream<K, E>),
}

/// What a watch event does to the store.
#[derive(Debug, Clone, Copy)]
enum Write {
    Add,
    Update,
    Delete,
}

impl<K, L, S> Reflector<K, L, S>
where
    K: Resource + Clone + Send + Sync + 'static,
    L: ListerWatcher<K> + Clone + 'static,
    S: Store<K>,
{
    /// The watch phase's step: a watch from the last resourceVersion (or the one a streaming
    /// list left open, `carried`), consumed into the store until it ends, the resync timer
    /// served throughout. [`Outcome::Closed`] when it ends normally.
    pub(super) async fn watch(
        &self,
        carried: Option<WatchStream<K, L::Error>>,
        resync: &mut Resync,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ReflectorError<L::Error>> {
        let started = Instant::now();
        let mut stream = match carried {
            Some(stream) => stream,
            None => {
                let options = ListOptions::default()
                    .resource_version(self.last_sync_resource_version())
                    .timeout_seconds(self.watch_timeout_seconds())
                    .allow_watch_bookmarks(true)
                    .omit_managed_fields(self.admission.omits_managed_fields());
                let opened = self
                    .with_resync(Some(resync), cancel, self.start_watch(&options))
                    .await?;
                match opened {
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
        let consumed = self.consume(
            &mut stream,
            &self.store,
            started,
            cancel,
            false,
            &mut record,
        );
        Ok(
            match self.with_resync(Some(resync), cancel, consumed).await? {
                None | Some(Ok(None)) => Outcome::Cancelled,
                Some(Ok(Some(_))) => Outcome::Closed,
                Some(Err(err)) => return Err(err),
            },
        )
    }

    /// Consumes one watch into `store`. Returns `Ok(None)` when cancelled, how the watch
    /// ended otherwise; `record` gets every event's resourceVersion. With
    /// `until_initial_events_end`, returns as soon as the streaming list's closing bookmark
    /// arrives, handing back the still-open stream.
    pub(super) async fn consume<T: Store<K>>(
        &self,
        stream: &mut WatchStream<K, L::Error>,
        store: &T,
        started: Instant,
        cancel: &CancellationToken,
        until_initial_events_end: bool,
        record: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Option<WatchEnd<K, L::Error>>, ReflectorError<L::Error>> {
        let mut events = 0usize;
        let mut last_event = None::<Instant>;
        let mut warn_at = until_initial_events_end.then(|| started + INITIAL_EVENTS_END_WARNING);
        loop {
            let next = tokio::select! {
                _ = cancel.cancelled() => return Ok(None),
                next = stream.next() => next,
                _ = sleep_until(warn_at.unwrap_or_else(Instant::now)), if warn_at.is_some() => {
                    self.warn_missing_initial_events_end(started, last_event);
                    warn_at = Some(Instant::now() + INITIAL_EVENTS_END_WARNING);
                    continue;
                }
            };
            let event = match next {
                None => break,
                Some(Err(source)) => {
                    return Err(ReflectorError::WatchStream {
                        what: self.type_description.clone(),
                        source,
                    })
                }
                Some(Ok(event)) => event,
            };
            // Matched here rather than in a function of its own: a `WatchEvent` holds its
            // object inline, and passing it on would copy it once more per event (measured:
            // 15% of the watch path with Pods).
            let (resource_version, initial_events_end) = match event {
                WatchEvent::Error(status) => return Err(self.event_error(status)),
                WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj)
                    if !self.expected(&obj) =>
                {
                    continue;
                }
                WatchEvent::Added(obj) => (self.write(store, obj, Write::Add), false),
                WatchEvent::Modified(obj) => (self.write(store, obj, Write::Update), false),
                WatchEvent::Deleted(obj) => (self.write(store, obj, Write::Delete), false),
                WatchEvent::Bookmark(bookmark) => {
                    let end = bookmark.is_initial_events_end();
                    // client-go's reflector hands a bookmark to a store that takes them
                    // (`ReflectorBookmarkStore`): a RealFIFO queues it for the informer's store.
                    store.bookmark(&bookmark.resource_version);
                    (bookmark.resource_version, end)
                }
            };
            record(&resource_version);
            store.update_resource_version(&resource_version);
            events += 1;
            last_event = Some(Instant::now());
            if until_initial_events_end && initial_events_end {
                let stream = std::mem::replace(stream, futures::stream::empty().boxed());
                tracing::debug!(reflector = %self.name, events, elapsed = ?started.elapsed(), "initial events received");
                return Ok(Some(WatchEnd::InitialEventsEnd(stream)));
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

    /// The error an `ERROR` event ends the watch with.
    fn event_error(&self, status: kclient_core::Status) -> ReflectorError<L::Error> {
        ReflectorError::WatchEvent {
            what: self.type_description.clone(),
            status: Box::new(ApiError::from(status)),
        }
    }

    /// Writes one watched object into `store` (admitted as a listed one is); a failure is
    /// logged, not fatal, as in client-go. Returns the object's resourceVersion.
    fn write<T: Store<K>>(&self, store: &T, obj: K, write: Write) -> String {
        let rv = obj.resource_version().unwrap_or_default().to_owned();
        let written = self.admission.admit(obj).and_then(|obj| match write {
            Write::Add => store.add(obj),
            Write::Update => store.update(obj),
            Write::Delete => store.delete(obj.into()),
        });
        if let Err(e) = written {
            tracing::error!(reflector = %self.name, error = %e, ?write, "unable to write a watch event's object to the store");
        }
        rv
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

    /// Whether a watched object is of the expected kind (only dynamic objects can differ).
    fn expected(&self, obj: &K) -> bool {
        let any = obj as &dyn Any;
        let types = any
            .downcast_ref::<DynamicObject>()
            .and_then(|o| o.types.as_ref())
            .or_else(|| {
                any.downcast_ref::<kclient_core::PartialObjectMetadata>()
                    .and_then(|o| o.types.as_ref())
            });
        // A server asked for tables answers with Table objects: they are no objects of the
        // resource and never reach the store (client-go skips them too).
        if types.is_some_and(|t| {
            t.kind == "Table"
                && matches!(
                    t.api_version.as_str(),
                    "meta.k8s.io/v1" | "meta.k8s.io/v1beta1"
                )
        }) {
            tracing::debug!(reflector = %self.name, "a Table object in the watch; skipped");
            return false;
        }
        let Some(expected) = &self.expected_gvk else {
            return true;
        };
        let Some(dynamic) = any.downcast_ref::<DynamicObject>() else {
            return true;
        };
        let actual = dynamic
            .types
            .as_ref()
            .and_then(|t| GroupVersionKind::from_api_version_kind(&t.api_version, &t.kind).ok());
        if actual.as_ref() == Some(expected) {
            return true;
        }
        tracing::error!(reflector = %self.name, expected = ?expected, actual = ?actual, "unexpected watch event object kind; skipped");
        false
    }
}
