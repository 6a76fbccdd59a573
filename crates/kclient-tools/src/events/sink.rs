//! Where events are written: the [`EventSink`] trait (client-go's `EventSink`), its
//! implementation for the typed client, an in-memory [`MemorySink`], and the retry loop
//! both broadcasters write through.
//!
//! A write is tried at most [`MAX_TRIES_PER_EVENT`](super::MAX_TRIES_PER_EVENT) times. What is
//! retried follows client-go's `recordEvent`: an error that happened before a request was
//! made ([`SinkError::Invalid`]) or a refusal by the server ([`SinkError::Status`]) ends the
//! tries, a transport failure ([`SinkError::Client`]) is retried — except that this port
//! also retries the server's `429` and `5xx` answers (client-go gives up on every `Status`
//! error), since those say "not now" rather than "never".

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use kclient_core::{
    ApiError, ApiStatus, CreateOptions, GroupResource, Patch, PatchOptions, Resource, Status,
    UpdateOptions,
};
use kclient_typed::ResourceClient;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::broadcaster::MAX_TRIES_PER_EVENT;

/// The future a sink's write returns.
pub type SinkFuture<'a, E> = Pin<Box<dyn Future<Output = Result<E, SinkError>> + Send + 'a>>;

/// Stores events (client-go's `EventSink`): `E` is core/v1's `Event` for the
/// [`EventBroadcaster`](super::EventBroadcaster) and events.k8s.io/v1's for
/// [`EventsV1Broadcaster`](super::v1::EventsV1Broadcaster). A sink must write each event into
/// the event's own namespace.
///
/// A [`ResourceClient`] of either Event type is a sink (client-go's `EventSinkImpl`): pass
/// `clientset.core_v1().events("")` or `clientset.events_v1().events("")`.
pub trait EventSink<E>: Send + Sync + 'static {
    /// Creates `event`, returning it as stored.
    fn create<'a>(&'a self, event: &'a E) -> SinkFuture<'a, E>;
    /// Replaces `event`, returning it as stored.
    fn update<'a>(&'a self, event: &'a E) -> SinkFuture<'a, E>;
    /// Applies a strategic merge `patch` to the stored Event named like `event`.
    fn patch<'a>(&'a self, event: &'a E, patch: &'a Value) -> SinkFuture<'a, E>;
}

impl<E, S: EventSink<E> + ?Sized> EventSink<E> for Arc<S> {
    fn create<'a>(&'a self, event: &'a E) -> SinkFuture<'a, E> {
        (**self).create(event)
    }
    fn update<'a>(&'a self, event: &'a E) -> SinkFuture<'a, E> {
        (**self).update(event)
    }
    fn patch<'a>(&'a self, event: &'a E, patch: &'a Value) -> SinkFuture<'a, E> {
        (**self).patch(event, patch)
    }
}

/// Why a sink could not write an event.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SinkError {
    /// The request could not be made (client-go's `RequestConstructionError`): it would be
    /// made the same way again, so it is not retried.
    #[error("cannot make the event request: {0}")]
    Invalid(String),
    /// The server refused the write with a `Status`.
    #[error(transparent)]
    Status(Box<ApiError>),
    /// The request failed on its way (connection, TLS, timeout, an undecodable answer).
    #[error(transparent)]
    Client(Box<dyn std::error::Error + Send + Sync>),
}

impl ApiStatus for SinkError {
    fn api_status(&self) -> Option<&Status> {
        match self {
            SinkError::Status(e) => e.api_status(),
            _ => None,
        }
    }
}

impl From<ApiError> for SinkError {
    fn from(e: ApiError) -> Self {
        SinkError::Status(Box::new(e))
    }
}

impl From<kclient_typed::Error> for SinkError {
    fn from(e: kclient_typed::Error) -> Self {
        match e {
            kclient_typed::Error::Rest(kclient_rest::Error::Api(status)) => {
                SinkError::Status(status)
            }
            kclient_typed::Error::Rest(other) => SinkError::Client(Box::new(other)),
            invalid => SinkError::Invalid(invalid.to_string()),
        }
    }
}

impl SinkError {
    /// Whether another try may succeed: transport failures ([`SinkError::Client`]) and the
    /// server's `429` and `5xx` answers. Not an error that happened before a request was made
    /// ([`SinkError::Invalid`]) nor another refusal by the server.
    ///
    /// client-go's `recordEvent` gives up on every `Status` error; this port retries `429`
    /// and `5xx`, since those say "not now" rather than "never".
    pub fn is_retriable(&self) -> bool {
        match self {
            SinkError::Invalid(_) => false,
            SinkError::Status(e) => e.code() == 429 || e.code() >= 500,
            SinkError::Client(_) => true,
        }
    }
}

fn namespace_of<E: Resource>(event: &E, verb: &str) -> Result<String, SinkError> {
    event
        .meta()
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .ok_or_else(|| {
            SinkError::Invalid(format!("cannot {verb} an event with an empty namespace"))
        })
}

impl<E> EventSink<E> for ResourceClient<E>
where
    E: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    fn create<'a>(&'a self, event: &'a E) -> SinkFuture<'a, E> {
        Box::pin(async move {
            let client = self.within(namespace_of(event, "create")?);
            Ok(client.create(event, &CreateOptions::default()).await?)
        })
    }

    fn update<'a>(&'a self, event: &'a E) -> SinkFuture<'a, E> {
        Box::pin(async move {
            let client = self.within(namespace_of(event, "update")?);
            Ok(client.update(event, &UpdateOptions::default()).await?)
        })
    }

    fn patch<'a>(&'a self, event: &'a E, patch: &'a Value) -> SinkFuture<'a, E> {
        Box::pin(async move {
            let client = self.within(namespace_of(event, "patch")?);
            let name = event.meta().name.clone().unwrap_or_default();
            let patch = Patch::Strategic(patch);
            Ok(client
                .patch(&name, &patch, &PatchOptions::default())
                .await?)
        })
    }
}

/// One call a [`MemorySink`] served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkCall {
    /// A create of the named Event.
    Create(String),
    /// An update of the named Event.
    Update(String),
    /// A patch of the named Event.
    Patch(String),
}

/// An in-memory [`EventSink`] keeping Events by namespace and name, as an API server would
/// (create of an existing name: `AlreadyExists`; patch or update of a missing one:
/// `NotFound`; a patch is applied as a JSON merge patch, which is what a strategic merge
/// patch of an Event's scalar fields amounts to). For tests and examples; clones share the
/// store.
pub struct MemorySink<E> {
    state: Arc<Mutex<MemoryState<E>>>,
}

struct MemoryState<E> {
    events: BTreeMap<(String, String), E>,
    calls: Vec<SinkCall>,
    resource_version: u64,
}

impl<E> Clone for MemorySink<E> {
    fn clone(&self) -> Self {
        Self {
            state: self.state.clone(),
        }
    }
}

impl<E> fmt::Debug for MemorySink<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("MemorySink")
            .field("events", &state.events.len())
            .field("calls", &state.calls)
            .finish()
    }
}

impl<E> Default for MemorySink<E> {
    fn default() -> Self {
        Self {
            state: Arc::new(Mutex::new(MemoryState {
                events: BTreeMap::new(),
                calls: Vec::new(),
                resource_version: 0,
            })),
        }
    }
}

impl<E: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned> MemorySink<E> {
    /// An empty sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// The stored Events, by namespace and name.
    pub fn events(&self) -> Vec<E> {
        self.state.lock().events.values().cloned().collect()
    }

    /// Removes the stored Event `namespace/name` (as the server's Event TTL would), returning
    /// it.
    pub fn remove(&self, namespace: &str, name: &str) -> Option<E> {
        self.state
            .lock()
            .events
            .remove(&(namespace.to_owned(), name.to_owned()))
    }

    /// The calls served so far, in order.
    pub fn calls(&self) -> Vec<SinkCall> {
        self.state.lock().calls.clone()
    }

    fn key(event: &E) -> (String, String) {
        let meta = event.meta();
        (
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        )
    }

    fn events_resource() -> GroupResource {
        let resource = E::api_resource(&());
        GroupResource::new(resource.group, resource.plural)
    }

    fn store(state: &mut MemoryState<E>, mut event: E) -> E {
        state.resource_version += 1;
        event.meta_mut().resource_version = Some(state.resource_version.to_string());
        state.events.insert(Self::key(&event), event.clone());
        event
    }

    fn serve_create(&self, event: &E) -> Result<E, SinkError> {
        namespace_of(event, "create")?;
        let mut state = self.state.lock();
        let key = Self::key(event);
        state.calls.push(SinkCall::Create(key.1.clone()));
        if state.events.contains_key(&key) {
            return Err(ApiError::already_exists(&Self::events_resource(), &key.1).into());
        }
        Ok(Self::store(&mut state, event.clone()))
    }

    fn serve_update(&self, event: &E) -> Result<E, SinkError> {
        namespace_of(event, "update")?;
        let mut state = self.state.lock();
        let key = Self::key(event);
        state.calls.push(SinkCall::Update(key.1.clone()));
        if !state.events.contains_key(&key) {
            return Err(ApiError::not_found(&Self::events_resource(), &key.1).into());
        }
        Ok(Self::store(&mut state, event.clone()))
    }

    fn serve_patch(&self, event: &E, patch: &Value) -> Result<E, SinkError> {
        namespace_of(event, "patch")?;
        let mut state = self.state.lock();
        let key = Self::key(event);
        state.calls.push(SinkCall::Patch(key.1.clone()));
        let Some(stored) = state.events.get(&key) else {
            return Err(ApiError::not_found(&Self::events_resource(), &key.1).into());
        };
        let mut value =
            serde_json::to_value(stored).map_err(|e| SinkError::Invalid(e.to_string()))?;
        json_patch::merge(&mut value, patch);
        let patched: E = serde_json::from_value(value)
            .map_err(|e| SinkError::from(ApiError::bad_request(format!("invalid patch: {e}"))))?;
        Ok(Self::store(&mut state, patched))
    }
}

impl<E> EventSink<E> for MemorySink<E>
where
    E: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    fn create<'a>(&'a self, event: &'a E) -> SinkFuture<'a, E> {
        let result = self.serve_create(event);
        Box::pin(async move { result })
    }

    fn update<'a>(&'a self, event: &'a E) -> SinkFuture<'a, E> {
        let result = self.serve_update(event);
        Box::pin(async move { result })
    }

    fn patch<'a>(&'a self, event: &'a E, patch: &'a Value) -> SinkFuture<'a, E> {
        let result = self.serve_patch(event, patch);
        Box::pin(async move { result })
    }
}

/// The outcome of one write try.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Attempt<E> {
    /// Written; the Event as the server stored it.
    Written(E),
    /// Failed for good: not tried again.
    GiveUp,
    /// Failed in a way another try may fix.
    Retry,
}

/// Tries `attempt` until it is no longer [`Attempt::Retry`], at most
/// [`MAX_TRIES_PER_EVENT`] times, sleeping `delay(tries_so_far)` on tokio's clock between
/// tries (the caller races it with the watcher's stop). Returns the written Event, if any.
pub(crate) async fn write_with_retries<E, F, Fut>(
    mut delay: impl FnMut(u32) -> Duration,
    mut attempt: F,
) -> Option<E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Attempt<E>>,
{
    let mut tries = 0;
    loop {
        match attempt().await {
            Attempt::Written(event) => return Some(event),
            Attempt::GiveUp => return None,
            Attempt::Retry => {}
        }
        tries += 1;
        if tries >= MAX_TRIES_PER_EVENT {
            tracing::error!(tries, "unable to write event (retry limit exceeded!)");
            return None;
        }
        tokio::time::sleep(delay(tries)).await;
    }
}

/// What a failed write means for the next try (client-go's `recordEvent` switch, with
/// [`SinkError::is_retriable`]); `already_exists_retries` is the events.k8s.io/v1 rule for
/// a series whose create raced another.
pub(crate) fn after_failure<E>(error: &SinkError, already_exists_retries: bool) -> Attempt<E> {
    if error.is_already_exists() {
        if already_exists_retries {
            return Attempt::Retry;
        }
        tracing::debug!(%error, "server rejected event (will not retry!)");
        return Attempt::GiveUp;
    }
    if error.is_retriable() {
        tracing::warn!(%error, "unable to write event (may retry after sleeping)");
        Attempt::Retry
    } else {
        tracing::error!(%error, "server rejected event (will not retry!)");
        Attempt::GiveUp
    }
}

/// Patches the stored Event with `patch` when there is one, creating `event` (without a
/// resourceVersion) when there is none or the stored Event is gone (`404`) — the write both
/// broadcasters make.
pub(crate) async fn patch_or_create<E>(
    sink: &dyn EventSink<E>,
    event: &E,
    patch: Option<&Value>,
) -> Result<E, SinkError>
where
    E: Resource + Clone + 'static,
{
    if let Some(patch) = patch {
        match sink.patch(event, patch).await {
            Err(e) if e.status_code() == Some(404) => {}
            done => return done,
        }
    }
    let mut fresh = event.clone();
    fresh.meta_mut().resource_version = None;
    sink.create(&fresh).await
}
