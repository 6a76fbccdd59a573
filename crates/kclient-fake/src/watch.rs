//! Watches: a stream of newline-delimited JSON events, or of length-prefixed protobuf
//! `WatchEvent`s where the request negotiates protobuf ([`crate::protobuf::watch_frame`]), as
//! kube-apiserver's watch cache sends them.
//!
//! - Starting point: `resourceVersion` `""`/`"0"` send the current objects as `ADDED` first;
//!   `N` resumes after `N` if the history still has it, otherwise the stream carries one
//!   `ERROR` event, `410 Expired` `too old resource version: N (M)`, and ends.
//! - `sendInitialEvents=true` (streaming list) sends the current objects as `ADDED`, then,
//!   with `allowWatchBookmarks`, a `BOOKMARK` annotated `k8s.io/initial-events-end: "true"`.
//! - Selectors are applied to both states of a change: an object that stops matching arrives
//!   as `DELETED` (its previous state at the event's resourceVersion), one that starts
//!   matching as `ADDED`.
//! - `allowWatchBookmarks` adds a `BOOKMARK` every bookmark period (tokio's clock), and one
//!   two seconds before the watch's timeout ends it.
//! - `timeoutSeconds` (or the server's default) ends the stream cleanly.
//! - `Accept: …;as=PartialObjectMetadata;g=meta.k8s.io;v=v1` turns every event's object
//!   (bookmarks included) into its `PartialObjectMetadata`; `ERROR` events keep their
//!   `Status`. Asking for `PartialObjectMetadataList` ends the watch at its first object,
//!   unsent, as the server fails to encode it (see [`crate::negotiate`]); so does an object
//!   that has no protobuf form in a protobuf watch (a value k8s-openapi cannot read).
//!
//! Every watcher reads the shared event history when the store's resourceVersion moves (a
//! `tokio::sync::watch` wakes them): one write is fanned out without copying the object or
//! scanning the store.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::stream;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use kclient_core::{ApiError, INITIAL_EVENTS_END_ANNOTATION};
use serde_json::json;
use tokio::time::Instant;

use crate::catalogue::ResourceInfo;
use crate::errors::status_json;
use crate::negotiate::{partial_object, Conversion, Wire};
use crate::protobuf;
use crate::registry::needs_version_rewrite;
use crate::response::Body;
use crate::selectors::Predicate;
use crate::state::Shared;
use crate::store::{EventType, StoreEvent, StoreState, StoredObject};

/// Where a watch starts.
#[derive(Debug, Clone)]
pub enum Start {
    /// Send the current objects as `ADDED` first (then an initial-events-end bookmark if
    /// `end_bookmark`), and continue from the snapshot.
    Initial {
        /// Send the `k8s.io/initial-events-end` bookmark after the initial objects.
        end_bookmark: bool,
    },
    /// Continue after this resourceVersion.
    After(u64),
    /// Continue from the current resourceVersion.
    Now,
}

/// A watch to serve.
#[derive(Debug, Clone)]
pub struct WatchSpec {
    /// The resource.
    pub info: Arc<ResourceInfo>,
    /// The namespace, if the watch is namespaced.
    pub namespace: Option<String>,
    /// The selectors.
    pub predicate: Predicate,
    /// The starting point.
    pub start: Start,
    /// Whether periodic bookmarks are sent.
    pub bookmarks: bool,
    /// When the stream ends.
    pub timeout: Duration,
    /// What each event's object is turned into (a Table watch sends the objects).
    pub conversion: Conversion,
    /// What the events are written in.
    pub wire: Wire,
}

/// One JSON watch frame, newline-terminated.
fn frame(event_type: &str, object: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(object.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(event_type.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(object);
    out.extend_from_slice(b"}\n");
    out.freeze()
}

/// The frame of an object event, the object converted as the watch asks; `None` when the
/// conversion cannot be encoded (a `PartialObjectMetadataList` of one object), which ends
/// the watch.
fn object_frame(spec: &WatchSpec, event_type: &str, obj: &StoredObject) -> Option<Bytes> {
    if let (Wire::Protobuf(codec), Conversion::None | Conversion::Table) =
        (spec.wire, spec.conversion)
    {
        // The stored object's message, kept with it: an event fanned out to many watchers is
        // encoded once.
        let body = protobuf::require(codec).and_then(|codec| {
            let message = protobuf::stored_message(codec, &spec.info, obj)?;
            Ok(protobuf::body(codec.api_version(), codec.kind(), &message))
        });
        return protobuf_frame(event_type, body);
    }
    match spec.conversion {
        Conversion::Metadata(_) | Conversion::MetadataList(_) => {
            value_frame(spec, event_type, &obj.value)
        }
        Conversion::None | Conversion::Table if needs_version_rewrite(&spec.info, &obj.value) => {
            value_frame(spec, event_type, &obj.value)
        }
        Conversion::None | Conversion::Table => Some(frame(event_type, &obj.json)),
    }
}

/// The frame of an event carrying `value` (served in the watched version), converted as the
/// watch asks; `None` as [`object_frame`].
fn value_frame(spec: &WatchSpec, event_type: &str, value: &serde_json::Value) -> Option<Bytes> {
    if let Wire::Protobuf(codec) = spec.wire {
        let body = match spec.conversion {
            Conversion::Metadata(version) => protobuf::partial_object(value, version),
            Conversion::MetadataList(_) => return None,
            Conversion::None | Conversion::Table => protobuf::require(codec).and_then(|codec| {
                protobuf::object(codec, &crate::registry::for_version(&spec.info, value))
            }),
        };
        return protobuf_frame(event_type, body);
    }
    let object = match spec.conversion {
        Conversion::Metadata(version) => partial_object(value, version),
        Conversion::MetadataList(_) => return None,
        Conversion::None | Conversion::Table => {
            let object = crate::registry::for_version(&spec.info, value);
            serde_json::to_vec(&object).unwrap_or_default()
        }
    };
    Some(frame(event_type, &object))
}

/// The protobuf frame of an event whose object's body is `body`; `None` (the watch ends, as
/// kube-apiserver's does when it cannot encode an event) when there is none.
fn protobuf_frame(event_type: &str, body: Result<Vec<u8>, ApiError>) -> Option<Bytes> {
    match body {
        Ok(body) => Some(protobuf::watch_frame(event_type, &body)),
        Err(e) => {
            tracing::warn!("kclient-fake: ending a protobuf watch: {}", e.message());
            None
        }
    }
}

/// The `ERROR` frame for `err`, in the watch's wire.
pub fn error_frame(wire: Wire, err: &ApiError) -> Bytes {
    let status = status_json(&err.status);
    match wire {
        Wire::Protobuf(_) => protobuf::watch_frame("ERROR", &protobuf::status(&status)),
        Wire::Json => frame("ERROR", &serde_json::to_vec(&status).unwrap_or_default()),
    }
}

/// A `BOOKMARK` at `rv`, converted as the watch asks (a `PartialObjectMetadata` bookmark has
/// no `creationTimestamp`); `None` as [`object_frame`].
fn bookmark_frame(spec: &WatchSpec, rv: u64, initial_end: bool) -> Option<Bytes> {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if initial_end {
        metadata["annotations"] = json!({INITIAL_EVENTS_END_ANNOTATION: "true"});
    }
    if let Wire::Protobuf(codec) = spec.wire {
        // An object of the watched kind with only this metadata (Go writes the rest as the
        // zero values of its non-pointer fields, as the codec does).
        let body = match spec.conversion {
            Conversion::Metadata(version) => {
                protobuf::partial_object(&json!({"metadata": metadata}), version)
            }
            Conversion::MetadataList(_) => return None,
            Conversion::None | Conversion::Table => protobuf::require(codec)
                .and_then(|codec| protobuf::object(codec, &json!({"metadata": metadata}))),
        };
        return protobuf_frame("BOOKMARK", body);
    }
    let object = match spec.conversion {
        Conversion::Metadata(version) => partial_object(&json!({"metadata": metadata}), version),
        Conversion::MetadataList(_) => return None,
        Conversion::None | Conversion::Table => {
            metadata["creationTimestamp"] = serde_json::Value::Null;
            let info: &ResourceInfo = &spec.info;
            let object = json!({"kind": info.kind(), "apiVersion": info.api_version(), "metadata": metadata});
            serde_json::to_vec(&object).unwrap_or_default()
        }
    };
    Some(frame("BOOKMARK", &object))
}

/// A frame to send, or an event whose object the CRD's conversion webhook must convert
/// first.
enum Queued {
    /// Ready.
    Frame(Bytes),
    /// `object` (stored), to convert to the watched version, then send as `event_type`.
    Convert {
        event_type: &'static str,
        object: serde_json::Value,
    },
}

/// Whether `value` goes through the CRD's conversion webhook before it is sent (the watch
/// is of another version than the stored one, and sends objects).
fn needs_webhook(spec: &WatchSpec, value: &serde_json::Value) -> bool {
    spec.info.conversion_webhook.is_some()
        && matches!(spec.conversion, Conversion::None | Conversion::Table)
        && needs_version_rewrite(&spec.info, value)
}

struct WatchState {
    shared: Arc<Shared>,
    spec: WatchSpec,
    queue: VecDeque<Queued>,
    next_rv: u64,
    rx: tokio::sync::watch::Receiver<u64>,
    drop_rx: tokio::sync::watch::Receiver<u64>,
    stall_rx: tokio::sync::watch::Receiver<bool>,
    hang_rx: tokio::sync::watch::Receiver<u64>,
    bookmark_at: Option<Instant>,
    deadline: Instant,
    done: bool,
    /// Hung by [`Faults::hang_watches`](crate::Faults::hang_watches): nothing more is sent,
    /// the deadline is ignored, only a drop ends it.
    hung: bool,
}

impl WatchState {
    fn in_scope(&self, e: &StoreEvent) -> bool {
        e.resource == self.spec.info.group_resource()
            && self
                .spec
                .namespace
                .as_deref()
                .is_none_or(|ns| e.namespace == ns)
    }

    /// Queues a frame, or ends the watch where a frame cannot be encoded.
    fn push(&mut self, frame: Option<Bytes>) {
        match frame {
            Some(f) => self.queue.push_back(Queued::Frame(f)),
            None => self.done = true,
        }
    }

    /// Queues an event of `object`: its frame, or the object to convert first.
    fn push_object(&mut self, event_type: &'static str, object: &StoredObject) {
        if needs_webhook(&self.spec, &object.value) {
            self.queue.push_back(Queued::Convert {
                event_type,
                object: object.value.clone(),
            });
        } else {
            let frame = object_frame(&self.spec, event_type, object);
            self.push(frame);
        }
    }

    fn push_event(&mut self, e: &StoreEvent) {
        if self.done || !self.in_scope(e) {
            return;
        }
        let p = &self.spec.predicate;
        match e.event_type {
            EventType::Added if p.matches(&e.object.value) => self.push_object("ADDED", &e.object),
            EventType::Deleted if p.matches(&e.object.value) => {
                self.push_object("DELETED", &e.object)
            }
            EventType::Added | EventType::Deleted => {}
            EventType::Modified => {
                let now = p.matches(&e.object.value);
                let before = e.prev.as_ref().is_some_and(|prev| p.matches(&prev.value));
                match (before, now, &e.prev) {
                    (true, true, _) => self.push_object("MODIFIED", &e.object),
                    (false, true, _) => self.push_object("ADDED", &e.object),
                    (true, false, Some(prev)) => {
                        let mut last = prev.value.clone();
                        crate::store::set_resource_version(&mut last, e.rv);
                        if needs_webhook(&self.spec, &last) {
                            self.queue.push_back(Queued::Convert {
                                event_type: "DELETED",
                                object: last,
                            });
                        } else {
                            let frame = value_frame(&self.spec, "DELETED", &last);
                            self.push(frame);
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// Moves the queue forward from the history.
    fn catch_up(&mut self) {
        let (events, current) = {
            let state = self.shared.registry.store.read();
            (state.events_after(self.next_rv), state.current_rv())
        };
        match events {
            Ok(events) => {
                for e in &events {
                    self.push_event(e);
                }
                self.next_rv = self.next_rv.max(current);
            }
            Err(c) => {
                let err = ApiError::resource_expired(format!(
                    "too old resource version: {} ({})",
                    self.next_rv, c.compacted
                ));
                self.queue
                    .push_back(Queued::Frame(error_frame(self.spec.wire, &err)));
                self.done = true;
            }
        }
    }

    async fn next_frame(&mut self) -> Option<Bytes> {
        loop {
            if self.hung || self.hang_rx.has_changed().unwrap_or(false) {
                self.hung = true;
                let _ = self.drop_rx.changed().await;
                return None;
            }
            if *self.stall_rx.borrow() && !self.done {
                tokio::select! {
                    r = self.stall_rx.changed() => { if r.is_err() { return None; } }
                    _ = self.drop_rx.changed() => { return None; }
                    _ = self.hang_rx.changed() => { self.hung = true; }
                    _ = tokio::time::sleep_until(self.deadline) => { return None; }
                }
                continue;
            }
            match self.queue.pop_front() {
                Some(Queued::Frame(f)) => return Some(f),
                Some(Queued::Convert { event_type, object }) => {
                    match self
                        .shared
                        .registry
                        .convert_one(&self.spec.info, object)
                        .await
                    {
                        Ok(converted) => return value_frame(&self.spec, event_type, &converted),
                        Err(e) => {
                            // The server cannot encode the event: the watch ends there.
                            tracing::warn!("kclient-fake: ending a watch: {}", e.message());
                            return None;
                        }
                    }
                }
                None => {}
            }
            if self.done {
                return None;
            }
            self.catch_up();
            if !self.queue.is_empty() || self.done {
                continue;
            }
            let bookmark_at = self.bookmark_at;
            tokio::select! {
                r = self.rx.changed() => { if r.is_err() { self.done = true; } }
                _ = self.drop_rx.changed() => { return None; }
                _ = self.hang_rx.changed() => { self.hung = true; }
                _ = tokio::time::sleep_until(self.deadline) => { return None; }
                _ = async {
                    match bookmark_at {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                } => {
                    self.catch_up();
                    if !self.done {
                        let bookmark = bookmark_frame(&self.spec, self.next_rv, false);
                        self.push(bookmark);
                    }
                    self.bookmark_at = next_bookmark(
                        Instant::now(),
                        self.shared.settings.bookmark_interval,
                        self.deadline,
                    );
                }
            }
        }
    }
}

/// The response body streaming `spec`'s events. Validation and the initial snapshot happen
/// here, synchronously, so the first frames are consistent with the history that follows.
pub fn stream(shared: Arc<Shared>, spec: WatchSpec) -> Body {
    let (queue, done, next_rv) = opening(&shared.registry.store.read(), &spec);
    let now = Instant::now();
    let deadline = later(now, spec.timeout);
    let bookmark_at = spec
        .bookmarks
        .then(|| next_bookmark(now, shared.settings.bookmark_interval, deadline))
        .flatten();
    let mut drop_rx = shared.faults.drop_watches.subscribe();
    drop_rx.mark_unchanged();
    let mut hang_rx = shared.faults.hang_watches.subscribe();
    hang_rx.mark_unchanged();
    let state = WatchState {
        rx: shared.registry.store.subscribe(),
        drop_rx,
        stall_rx: shared.faults.stall_watches.subscribe(),
        hang_rx,
        hung: false,
        deadline,
        shared,
        spec,
        queue,
        next_rv,
        bookmark_at,
        done,
    };
    let s = stream::unfold(state, |mut st| async move {
        let f = st.next_frame().await?;
        Some((Ok::<_, Infallible>(Frame::data(f)), st))
    });
    StreamBody::new(s).boxed_unsync()
}

/// How a watch opens, read from the store at once: the frames it starts with (the initial
/// events of a streaming list and their bookmark, or an expired resourceVersion's error),
/// whether it ends after them, and the resourceVersion its events follow.
fn opening(state: &StoreState, spec: &WatchSpec) -> (VecDeque<Queued>, bool, u64) {
    let mut queue = VecDeque::new();
    let current = state.current_rv();
    match &spec.start {
        Start::Initial { end_bookmark } => {
            let gr = spec.info.group_resource();
            let objects = state
                .range(&gr, spec.namespace.as_deref(), None)
                .filter(|(_, obj)| spec.predicate.matches(&obj.value));
            let frames = objects
                .map(|(_, obj)| {
                    if needs_webhook(spec, &obj.value) {
                        Some(Queued::Convert {
                            event_type: "ADDED",
                            object: obj.value.clone(),
                        })
                    } else {
                        object_frame(spec, "ADDED", obj).map(Queued::Frame)
                    }
                })
                .chain(
                    end_bookmark.then(|| bookmark_frame(spec, current, true).map(Queued::Frame)),
                );
            // A frame that cannot be encoded ends the watch there.
            for f in frames {
                match f {
                    Some(f) => queue.push_back(f),
                    None => return (queue, true, current),
                }
            }
            (queue, false, current)
        }
        Start::Now => (queue, false, current),
        Start::After(rv) => {
            let mut done = false;
            if *rv < state.compacted_rv() {
                let err = ApiError::resource_expired(format!(
                    "too old resource version: {rv} ({})",
                    state.compacted_rv()
                ));
                queue.push_back(Queued::Frame(error_frame(spec.wire, &err)));
                done = true;
            }
            (queue, done, *rv)
        }
    }
}

/// How long before its deadline a watch gets its last bookmark.
const PRE_TIMEOUT_BOOKMARK: Duration = Duration::from_secs(2);

/// When the next bookmark is due, as kube-apiserver's cache watchers compute it: one bookmark
/// `period` from `now`, or two seconds before the watch's deadline if that comes first (so a
/// client learns the latest resourceVersion before the server ends the watch); none once that
/// moment has passed.
fn next_bookmark(now: Instant, period: Duration, deadline: Instant) -> Option<Instant> {
    let at = later(now, period).min(deadline.checked_sub(PRE_TIMEOUT_BOOKMARK)?);
    (at > now).then_some(at)
}

/// A century: what "later" means when a duration is beyond what the clock can add (a
/// `timeoutSeconds` of 2⁶³−1, say). Never reached by a watch.
const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);

/// `now + d`, or [`FAR_FUTURE`] from now when `d` does not fit the clock (instead of a panic).
fn later(now: Instant, d: Duration) -> Instant {
    now.checked_add(d)
        .or_else(|| now.checked_add(FAR_FUTURE))
        .unwrap_or(now)
}

/// Parses a watch's starting point from its options.
pub fn start_of(
    resource_version: &str,
    send_initial_events: Option<bool>,
    bookmarks: bool,
) -> Result<Start, ApiError> {
    let rv = crate::query::parse_rv(resource_version)?;
    Ok(match (send_initial_events, rv) {
        (Some(true), _) => Start::Initial {
            end_bookmark: bookmarks,
        },
        (Some(false), None | Some(0)) => Start::Now,
        (None, None | Some(0)) => Start::Initial {
            end_bookmark: false,
        },
        (_, Some(n)) => Start::After(n),
    })
}
