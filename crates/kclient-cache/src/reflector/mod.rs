//! [`Reflector`]: keeps a [`Store`] equal to the server's state of one resource, through
//! every failure a real cluster produces (client-go's `tools/cache.Reflector`, v0.35).
//!
//! It lists, replaces the store's content with the list, then watches from the list's
//! resourceVersion, writing every event into the store. The rules, each pinned by a test:
//!
//! * **Streaming lists first** (KEP-3157, client-go 1.35's `WatchListClient`, on by
//!   default): a watch with `sendInitialEvents=true`, `resourceVersionMatch=NotOlderThan` and
//!   bookmarks; events go to a temporary store until the bookmark annotated
//!   `k8s.io/initial-events-end`, then one `replace`, and the same watch goes on. A server
//!   that refuses (or any error but a retryable one) means a logged fallback to list+watch.
//! * **List**: the first asks for resourceVersion `"0"` (the watch cache), later ones for the
//!   last one seen; after a `410 Expired/Gone` or "too large resourceVersion" list error, at
//!   once again with `""` (a quorum read). Paged by 500 through [`ListPager`] (falling back
//!   to one full list if a continue token expires), except that paging is off for a
//!   resourceVersion other than `""` and `"0"` unless the server paginated a `"0"` list
//!   before (its watch cache is off). Items become `Arc<K>` page by page, and the next page
//!   is fetched while the current one decodes.
//! * **Watch**: bookmarks always requested; timeout uniform in `[5 min, 10 min)`
//!   ([`ReflectorOptions::min_watch_timeout`] can only raise it). Every event, bookmarks
//!   included, advances the resourceVersion. A normal close re-watches from there without a
//!   relist; so do a refused connection and a `429`, after a backoff.
//! * **Client-side watch deadline** (kclient's; client-go has none): a watch the server has
//!   not ended [`WATCH_DEADLINE_GRACE`] (30 s) after its `timeoutSeconds` — a server or proxy
//!   that answered and then went silent — is ended by the reflector as if the server had
//!   closed it, the wait for the response included ([`watch_with_deadline`]): a watch is
//!   re-watched from the last resourceVersion without a relist, a streaming list that has not
//!   reached its closing bookmark starts over, as one the server closed early does.
//!   [`ReflectorOptions::watch_idle_timeout`] (off by default) also ends a watch that
//!   delivers nothing for that long. A `410` (an HTTP
//!   error or an `ERROR` event) ends the run and the next list starts at the last
//!   resourceVersion. A watch that closes within a second with no event is an error. Internal
//!   errors are retried for [`ReflectorOptions::max_internal_error_retry_duration`].
//! * **Backoff** between runs and before re-watching: 800 ms doubling to 30 s, jitter 1.0,
//!   reset after 2 minutes without one (kclient-core's [`ExponentialBackoffManager`]), on
//!   tokio's clock.
//! * **Resync**: every [`ReflectorOptions::resync_period`] while watching, the store's
//!   `resync` if [`should_resync`](ReflectorOptions::should_resync) agrees; an error ends the
//!   run, logged, without reaching the watch-error handler (client-go does not pass it up).
//!
//! Errors that end a run go to the watch-error handler (client-go's
//! `DefaultWatchErrorHandler` logs them; see [`ReflectorOptions::watch_error_handler`]) and
//! the next run follows after the backoff. Everything is configured once, by the
//! [`ReflectorOptions`] the reflector is made with.
//!
//! ```
//! use std::sync::Arc;
//! use futures::stream::{self, StreamExt};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_cache::{new_store, KeyFunc, ListWatch, Reflector, ReflectorOptions};
//! use kclient_core::{ApiError, CancellationToken, ListOptions, ObjectList};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! let lw = ListWatch::<ConfigMap, ApiError>::new(
//!     move |_: ListOptions| { let cm = cm.clone(); async move { Ok(ObjectList::new(vec![cm], "5")) } },
//!     |_: ListOptions| async { Ok(stream::pending().boxed()) },
//! );
//! let store = new_store(KeyFunc::meta_namespace());
//! let options = ReflectorOptions::default().use_watch_list(false);
//! let reflector = Arc::new(Reflector::new(lw, store.clone(), options));
//! let stop = CancellationToken::new();
//! let running = tokio::spawn({
//!     let (reflector, stop) = (reflector.clone(), stop.clone());
//!     async move { reflector.run(stop).await }
//! });
//! while reflector.last_sync_resource_version().is_empty() {
//!     tokio::task::yield_now().await;
//! }
//! assert_eq!(reflector.last_sync_resource_version(), "5");
//! assert!(store.get_by_key("settings").is_some());
//! stop.cancel();
//! running.await.unwrap();
//! # }
//! ```
//!
//! # How it is built
//!
//! A run is a small state machine (the `phase` module, drawn in `docs/architecture.md`): a
//! pure transition function decides, from what the last step came to, whether to watch
//! again, back off, list instead, or end the run; the driver, [`Reflector::list_and_watch`],
//! performs the steps (`list`, `watch_list`, `watch`) and the decisions. The
//! resourceVersion rules (where to list, how to page) are pure too (`versions`). All the
//! state a reflector keeps between runs — the resourceVersions, the backoff, what it has
//! logged — is one struct behind one lock, never held across an await.
//!
//! The run knows nothing of the kind it reflects: it reaches the lister-watcher, the
//! admission of objects and the store through one trait object (the `io` module), which
//! lists, opens watches and writes each event's object as it is polled, and it sees the
//! lister-watcher's errors type-erased. So the run is not generic: its async state machines
//! are compiled once, in this crate, and a program caching three kinds compiles none of them
//! (issue 48; `docs/benchmarks.md`).
//!
//! [`ListPager`]: kclient_core::ListPager
//! [`ExponentialBackoffManager`]: kclient_core::backoff::ExponentialBackoffManager

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kclient_core::backoff::ExponentialBackoffManager;
use kclient_core::{CancellationToken, GroupVersionKind, ListerWatcher, Resource};
use parking_lot::Mutex;
use tokio::time::{sleep, Instant};
use tracing::Instrument;

use crate::indexer::Indexer;
use crate::metrics::ReflectorMetrics;
use crate::representation::ObjectCodec;
use crate::store::Store;
use crate::transform::TransformFunc;
use crate::watch_deadline::watch_timeout_seconds;
#[cfg(doc)]
use crate::watch_deadline::{watch_with_deadline, WATCH_DEADLINE_GRACE};

mod admit;
mod consistency;
mod errors;
mod io;
mod list;
mod options;
mod phase;
mod resync;
mod versions;
mod watch;
mod watch_list;

use errors::SourceError;
pub use errors::{default_watch_error_handler, ReflectorError, WatchError, WatchErrorHandler};
pub use options::{
    ReflectorOptions, ShouldResyncFunc, DEFAULT_MIN_WATCH_TIMEOUT,
    WATCH_LIST_CONSISTENCY_DETECTOR_ENV,
};

use admit::Admission;
use io::{EventSource, KindIo, Typed};
use phase::{Failure, Next, Outcome, Phase, Run, RunEnd};
use resync::Resync;
use versions::Versions;

/// Everything a reflector keeps between its steps and runs, in one place (client-go guards
/// its resourceVersion fields with one mutex too). Locked briefly, never across an await.
#[derive(Debug)]
struct State {
    versions: Versions,
    backoff: ExponentialBackoffManager,
    /// Whether a list has been reported to the metrics (the next one is a relist).
    listed_before: bool,
    /// Whether a refused streaming list has been logged at info level (later ones at debug).
    refusal_logged: bool,
}

/// Keeps a [`Store`] equal to the server's state of one resource; see the [module
/// docs](self).
pub struct Reflector<K, L: ListerWatcher<K>, S> {
    core: Core,
    io: Typed<K, L, S>,
}

/// The part of a reflector that knows nothing of its kind: its settings and state, and the
/// run (in this module and its siblings), which reaches the kind's code through
/// [`KindIo`] only — so that it is not generic, and compiled once, in this crate.
struct Core {
    name: String,
    type_description: String,
    resync_period: Duration,
    should_resync: Option<ShouldResyncFunc>,
    min_watch_timeout: Duration,
    watch_list_page_size: i64,
    max_internal_error_retry_duration: Duration,
    watch_idle_timeout: Option<Duration>,
    use_watch_list: bool,
    watch_error_handler: Option<WatchErrorHandler>,
    metrics: Option<Arc<dyn ReflectorMetrics>>,
    check_watch_list_consistency: bool,
    state: Mutex<State>,
}

impl<K, L: ListerWatcher<K>, S> fmt::Debug for Reflector<K, L, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("name", &self.core.name)
            .field("type_description", &self.core.type_description)
            .field(
                "last_sync_resource_version",
                &self.core.state.lock().versions.last_synced(),
            )
            .finish_non_exhaustive()
    }
}

impl<K, L, S> Reflector<K, L, S>
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Default,
    L: ListerWatcher<K> + Clone + 'static,
    S: Store<K>,
{
    /// A reflector of a statically typed `K` into `store`.
    pub fn new(lister_watcher: L, store: S, options: ReflectorOptions<K>) -> Self {
        Self::new_with(lister_watcher, store, options, &K::DynamicType::default())
    }
}

impl<K, L, S> Reflector<K, L, S>
where
    K: Resource + Clone + Send + Sync + 'static,
    L: ListerWatcher<K> + Clone + 'static,
    S: Store<K>,
{
    /// A reflector of `K` described at run time (a [`DynamicObject`] with its
    /// `ApiResource`) into `store`.
    ///
    /// [`DynamicObject`]: kclient_core::DynamicObject
    pub fn new_with(
        lister_watcher: L,
        store: S,
        options: ReflectorOptions<K>,
        dt: &K::DynamicType,
    ) -> Self {
        let resource = K::api_resource(dt);
        let gvk = (!resource.kind.is_empty()).then(|| resource.gvk());
        let type_description = options
            .type_description
            .unwrap_or_else(|| default_type_description::<K>(gvk.as_ref()));
        let name = options.name.unwrap_or_else(|| type_description.clone());
        Self {
            io: Typed {
                name: name.clone(),
                lister_watcher,
                store,
                admission: Admission::new(
                    options.transform,
                    options.known_objects,
                    options.encoded_lists,
                    options.compact_objects,
                ),
                expected_gvk: options.expected_gvk.or(gvk),
            },
            core: Core {
                name,
                type_description,
                resync_period: options.resync_period,
                should_resync: options.should_resync,
                min_watch_timeout: options.min_watch_timeout.max(DEFAULT_MIN_WATCH_TIMEOUT),
                watch_list_page_size: options.watch_list_page_size,
                max_internal_error_retry_duration: options.max_internal_error_retry_duration,
                watch_idle_timeout: options.watch_idle_timeout,
                use_watch_list: options.use_watch_list,
                watch_error_handler: options.watch_error_handler,
                metrics: options.metrics,
                check_watch_list_consistency: options.check_watch_list_consistency,
                state: Mutex::new(State {
                    versions: Versions::default(),
                    backoff: options.backoff,
                    listed_before: false,
                    refusal_logged: false,
                }),
            },
        }
    }

    /// The reflector's name.
    pub fn name(&self) -> &str {
        &self.core.name
    }

    /// What it reflects, for logs.
    pub fn type_description(&self) -> &str {
        &self.core.type_description
    }

    /// Sets [`ReflectorOptions::transform`] after the fact.
    #[deprecated(note = "give it to the reflector's options: `ReflectorOptions::transform`")]
    pub fn with_transformer(mut self, transformer: TransformFunc<K>) -> Self {
        self.io.admission.transform = Some(transformer);
        self
    }

    /// Sets [`ReflectorOptions::known_objects`] after the fact.
    #[deprecated(note = "give it to the reflector's options: `ReflectorOptions::known_objects`")]
    pub fn with_known_objects(mut self, known: Indexer<K>) -> Self {
        self.io.admission.known_objects = Some(known);
        self
    }

    /// Sets [`ReflectorOptions::encoded_lists`] after the fact.
    #[deprecated(note = "give it to the reflector's options: `ReflectorOptions::encoded_lists`")]
    pub fn with_encoded_lists(mut self, codec: ObjectCodec<K>) -> Self {
        self.io.admission.codec = Some(codec);
        self
    }

    /// The store it writes into.
    pub fn store(&self) -> &S {
        &self.io.store
    }

    /// The resourceVersion of the last list or watch event seen (client-go's
    /// `LastSyncResourceVersion`); empty before the first list.
    pub fn last_sync_resource_version(&self) -> String {
        self.core.last_sync_resource_version()
    }

    /// Whether the last list or watch with [`last_sync_resource_version`] was refused as
    /// expired or too large, so the next list reads at `""` (a quorum read).
    ///
    /// [`last_sync_resource_version`]: Self::last_sync_resource_version
    pub fn is_last_sync_resource_version_unavailable(&self) -> bool {
        self.core.state.lock().versions.is_unavailable()
    }

    /// Lists and watches until `cancel` fires, running the watch-error handler after each
    /// run that failed and backing off between runs (client-go's `Run`).
    pub async fn run(&self, cancel: CancellationToken) {
        self.core.run(&self.io, cancel).await
    }

    /// One run: a streaming list or a list, then watches until one ends in a way that
    /// needs a relist (client-go's `ListAndWatch`). `Ok` when cancelled, and when a watch
    /// ended the run (logged here, as client-go's `watch` does).
    pub async fn list_and_watch(
        &self,
        cancel: &CancellationToken,
    ) -> Result<(), ReflectorError<L::Error>> {
        let ran = self.core.list_and_watch_boxed(&self.io, cancel).await;
        ran.map_err(ReflectorError::into_source_type)
    }
}

impl Core {
    fn last_sync_resource_version(&self) -> String {
        self.state.lock().versions.last_synced().to_owned()
    }

    /// Records the resourceVersion of a list or a watch event, and tells the metrics.
    fn record_resource_version(&self, rv: &str) {
        self.state.lock().versions.record(rv);
        if let Some(m) = &self.metrics {
            m.last_resource_version(rv);
        }
    }

    fn watch_timeout_seconds(&self) -> i64 {
        watch_timeout_seconds(self.min_watch_timeout)
    }

    /// [`Reflector::run`]. Boxed here, as [`list_and_watch_boxed`](Self::list_and_watch_boxed)
    /// is: the run is not generic, and so is compiled once, in this crate ("Compiled once" in
    /// docs/architecture.md).
    fn run<'a>(&'a self, io: &'a dyn KindIo, cancel: CancellationToken) -> BoxFuture<'a, ()> {
        let span =
            tracing::info_span!("reflector", name = %self.name, resource = %self.type_description);
        Box::pin(self.run_loop(io, cancel).instrument(span))
    }

    async fn run_loop(&self, io: &dyn KindIo, cancel: CancellationToken) {
        tracing::debug!(reflector = %self.name, "starting reflector");
        loop {
            if cancel.is_cancelled() {
                break;
            }
            if let Err(err) = self.list_and_watch(io, &cancel).await {
                // The handler sees the lister-watcher's own error type.
                io.with_source_type(err, &|err| match &self.watch_error_handler {
                    Some(handler) => handler(&self.name, err),
                    None => default_watch_error_handler(&self.name, err),
                });
            }
            let wait = self.state.lock().backoff.next_backoff();
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = sleep(wait) => {}
            }
        }
        tracing::debug!(reflector = %self.name, "stopping reflector");
    }

    /// [`Reflector::list_and_watch`], boxed (see [`run`](Self::run)).
    fn list_and_watch_boxed<'a>(
        &'a self,
        io: &'a dyn KindIo,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<(), ReflectorError<SourceError>>> {
        Box::pin(self.list_and_watch(io, cancel))
    }

    /// [`Reflector::list_and_watch`].
    ///
    /// The driver of the run's state machine: it performs the step of the phase the run is
    /// in and hands what it came to to the transition function, which decides the next move.
    async fn list_and_watch<'a>(
        &self,
        io: &'a dyn KindIo,
        cancel: &CancellationToken,
    ) -> Result<(), ReflectorError<SourceError>> {
        let since = Instant::now();
        let mut run = Run::new(self.use_watch_list, self.max_internal_error_retry_duration);
        // Served from the end of the list on; the watch the streaming list leaves open.
        let mut resync = None::<Resync>;
        let mut carried: Option<Box<dyn EventSource<'a> + 'a>> = None;
        // What a wait within the phase came to (a cancellation, a failed resync).
        let mut interrupted = None;
        loop {
            let stepped = match interrupted.take() {
                Some(outcome) => outcome,
                None if cancel.is_cancelled() => return Ok(()),
                None => match run.phase() {
                    Phase::StreamingList => {
                        self.streaming_list(io, since, &mut carried, cancel).await
                    }
                    Phase::List => self.list(io, cancel).await,
                    Phase::Watch => {
                        let resync = resync.get_or_insert_with(|| Resync::new(self.resync_period));
                        self.watch(io, carried.take(), resync, cancel).await
                    }
                },
            };
            let (outcome, error) = match stepped {
                Ok(outcome) => (outcome, None),
                Err(err) => (outcome_of(&err), Some(err)),
            };
            if outcome == Outcome::Listed {
                tracing::debug!(reflector = %self.name, "caches populated");
            }
            let phase = run.phase();
            match run.next(outcome, Instant::now()) {
                Next::Enter(next) => {
                    if let (Phase::Watch, Some(err)) = (next, &error) {
                        tracing::debug!(reflector = %self.name, error = %err, "retrying watch after internal error");
                    }
                }
                Next::EnterAtQuorum(_) => self.state.lock().versions.forget(),
                Next::ListInstead => self.log_refusal(error.as_ref()),
                Next::BackOff(_) => {
                    if let Some(err) = &error {
                        tracing::debug!(reflector = %self.name, ?phase, error = %err, "backing off");
                    }
                    let wait = self.state.lock().backoff.next_backoff();
                    match self
                        .with_resync(io, resync.as_mut(), cancel, sleep(wait))
                        .await
                    {
                        Ok(Some(())) => {}
                        Ok(None) => interrupted = Some(Ok(Outcome::Cancelled)),
                        Err(err) => interrupted = Some(Err(err)),
                    }
                }
                Next::End(end) => return self.end_run(end, error),
                Next::Stop => return Ok(()),
            }
        }
    }

    /// Logs a streaming list the server refused: at info level the first time, at debug
    /// level after.
    fn log_refusal(&self, error: Option<&impl fmt::Display>) {
        let Some(err) = error else { return };
        if !std::mem::replace(&mut self.state.lock().refusal_logged, true) {
            tracing::info!(reflector = %self.name, error = %err, "streaming list refused; falling back to list and watch");
        } else {
            tracing::debug!(reflector = %self.name, error = %err, "streaming list refused; falling back to list and watch");
        }
    }

    /// How a run ends: with the error for the watch-error handler, or `Ok` after logging
    /// what ended a watch (client-go's `watch` logs and returns nil).
    fn end_run(
        &self,
        end: RunEnd,
        error: Option<ReflectorError<SourceError>>,
    ) -> Result<(), ReflectorError<SourceError>> {
        let Some(err) = error else { return Ok(()) };
        match end {
            RunEnd::Failed => return Err(err),
            // One warning per relist; the list's own retry at "" adds none.
            RunEnd::Expired => {
                tracing::warn!(reflector = %self.name, error = %err, "watch expired; relisting")
            }
            RunEnd::WatchFailed => {
                tracing::warn!(reflector = %self.name, error = %err, "watch ended with an error")
            }
            RunEnd::ResyncFailed => {
                let source: &dyn fmt::Display = match &err {
                    ReflectorError::Resync(source) => source,
                    other => other,
                };
                tracing::warn!(reflector = %self.name, error = %source, "resync failed; the watch ends and the reflector lists again");
            }
        }
        Ok(())
    }
}

/// What an error that ended a step says to the state machine.
fn outcome_of(err: &ReflectorError<SourceError>) -> Outcome {
    match err {
        ReflectorError::Resync(_) => Outcome::ResyncFailed,
        ReflectorError::Watch { .. } => Outcome::NotOpened(Failure::of(err)),
        _ => Outcome::Failed(Failure::of(err)),
    }
}

/// client-go's `getTypeDescriptionFromObject`: the group-version-kind (of a resource with a
/// kind) as apimachinery displays it (`mygroup/v1, Kind=MyKind`; `/v1, Kind=Pod` for the core
/// group), the Rust type's name otherwise (client-go's Go type name).
fn default_type_description<K>(gvk: Option<&GroupVersionKind>) -> String {
    match gvk {
        Some(gvk) => gvk.to_string(),
        None => std::any::type_name::<K>().to_owned(),
    }
}
