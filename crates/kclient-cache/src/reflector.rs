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
//!   reset after 2 minutes without one ([`ExponentialBackoffManager`]), on tokio's clock.
//! * **Resync**: every [`ReflectorOptions::resync_period`] while watching, the store's
//!   `resync` if [`should_resync`](Reflector::set_should_resync) agrees; an error ends the
//!   run, logged, without reaching the watch-error handler (client-go does not pass it up).
//!
//! Errors that end a run go to the watch-error handler (client-go's
//! `DefaultWatchErrorHandler` logs them; see [`Reflector::set_watch_error_handler`]) and the
//! next run follows after the backoff.
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
//! [`ListPager`]: kclient_core::ListPager

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kclient_core::options::ResourceVersionMatch;
use kclient_core::{
    ApiError, ApiStatus, CancellationToken, DynamicObject, GroupVersionKind, ListOptions,
    ListPager, ListerWatcher, PagedListError, PagerError, Resource, ResourceExt, Status,
    WatchEvent, WatchStream, DEFAULT_PAGE_SIZE,
};
use parking_lot::Mutex;
use tokio::time::{sleep, sleep_until, Instant};
use tracing::Instrument;

use crate::backoff::{ExponentialBackoffManager, RetryWithDeadline};
use crate::indexer::Indexer;
use crate::initial_events::InitialEvents;
use crate::metrics::ReflectorMetrics;
use crate::representation::{EncodedList, Listed, ObjectCodec};
use crate::store::{Store, StoreError};
use crate::transform::{transform, TransformFunc};
#[cfg(doc)]
use crate::watch_deadline::WATCH_DEADLINE_GRACE;
use crate::watch_deadline::{watch_timeout_seconds, watch_with_deadline};

/// client-go's `defaultMinWatchTimeout`: watches last a random time in `[5 min, 10 min)`.
pub const DEFAULT_MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// A list slower than this is logged as a warning (client-go's trace threshold).
const SLOW_LIST: Duration = Duration::from_secs(10);

/// How often a streaming list without its closing bookmark is reported.
const INITIAL_EVENTS_END_WARNING: Duration = Duration::from_secs(10);

/// What the data-consistency check compares of an object: key, uid, resourceVersion.
type Identity = (String, String, String);

fn identity<K: Resource>(obj: &K) -> Identity {
    (
        kclient_core::meta_namespace_key(obj),
        obj.meta().uid.clone().unwrap_or_default(),
        obj.meta().resource_version.clone().unwrap_or_default(),
    )
}

/// One list: its resourceVersion, whether it came in pages, its objects (or the first
/// error admitting one).
struct Listing<K> {
    resource_version: String,
    paginated: bool,
    items: Result<Listed<K>, StoreError>,
}

/// How a [`Reflector`] is configured (client-go's `ReflectorOptions` and its public fields).
/// Non-exhaustive, so that an option added later is not a breaking change: start from
/// [`Default`] and set what differs, with the setters
/// (`ReflectorOptions::default().use_watch_list(false)`) or by assigning the public fields.
#[non_exhaustive]
pub struct ReflectorOptions {
    /// The name in logs; the type description when `None`.
    pub name: Option<String>,
    /// What is reflected, for logs and errors; when `None`, as client-go describes it
    /// (`getTypeDescriptionFromObject`): the group-version-kind (`mygroup/v1, Kind=MyKind`,
    /// `/v1, Kind=Pod`), or the Rust type's name when the kind is unknown (client-go names
    /// typed objects by their Go type, `*v1.Pod`, and unstructured ones by their GVK).
    pub type_description: Option<String>,
    /// How often to call the store's `resync` while watching; zero never does.
    pub resync_period: Duration,
    /// Raises the minimum watch timeout above [`DEFAULT_MIN_WATCH_TIMEOUT`]; lower values are
    /// ignored (client-go's `MinWatchTimeout`).
    pub min_watch_timeout: Duration,
    /// The page size of lists (client-go's `WatchListPageSize`); 0 leaves it to the rules in
    /// the module docs.
    pub watch_list_page_size: i64,
    /// How long internal errors (500) ending a watch are retried by re-watching rather than
    /// relisting; zero (the default) never retries.
    pub max_internal_error_retry_duration: Duration,
    /// Ends a watch (or a streaming list) that delivers nothing — no event, no bookmark —
    /// for this long, and watches again from the last resourceVersion (kclient's, off by
    /// default). Every watch also ends at its client-side deadline, [`WATCH_DEADLINE_GRACE`]
    /// after its `timeoutSeconds` ([`watch_with_deadline`]); this ends a silent one sooner.
    /// Only for servers known to send bookmarks: kube-apiserver sends one about every minute
    /// to a watch served from its watch cache, none from a resource whose cache is off, so
    /// keep it well above a minute (3 minutes, say).
    pub watch_idle_timeout: Option<Duration>,
    /// Start with a streaming list (client-go 1.35's `WatchListClient` default); a server
    /// that refuses it is listed instead.
    pub use_watch_list: bool,
    /// The backoff between runs and before re-watching.
    pub backoff: ExponentialBackoffManager,
    /// For dynamic objects: watch events of another group/version/kind are skipped (logged),
    /// not stored. When `None`, the reflector's resource's GVK (client-go's `expectedGVK`
    /// taken from an unstructured expected type), so a dynamic informer of widgets stores only
    /// widgets; typed objects are never checked.
    pub expected_gvk: Option<GroupVersionKind>,
    /// Receives lists, watches, relists, items per list and the last resourceVersion.
    pub metrics: Option<Arc<dyn ReflectorMetrics>>,
    /// Store each received object with exact capacities (on by default; not in client-go,
    /// whose decoder has no such waste). Decoding fills each `Vec` by pushing, and a `Vec`'s
    /// first push reserves room for four elements (for elements up to 1 KiB), so a Pod
    /// decoded by serde carries some 4 KB of spare capacity. Types with a protobuf codec
    /// (built-in kinds, `PartialObjectMetadata`) are fitted in place — their protobuf decoder
    /// already fits as it decodes, so this only walks them; other types are stored as a copy,
    /// which has exact capacities. Done once per received object, after the transform: at
    /// 100k Pods it cut the resident memory per cached Pod by 23% (`docs/benchmarks.md`).
    pub compact_objects: bool,
    /// After each streaming list, list again at its resourceVersion (`Exact`) and compare the
    /// two — keys, uids, resourceVersions — panicking on a difference (client-go's watch-list
    /// data-consistency detector, a test aid). Defaults to whether the environment variable
    /// [`WATCH_LIST_CONSISTENCY_DETECTOR_ENV`] is `true`, as in client-go.
    pub check_watch_list_consistency: bool,
}

/// client-go's switch for the watch-list data-consistency detector
/// ([`ReflectorOptions::check_watch_list_consistency`]).
pub const WATCH_LIST_CONSISTENCY_DETECTOR_ENV: &str = "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR";

impl Default for ReflectorOptions {
    fn default() -> Self {
        Self {
            name: None,
            type_description: None,
            resync_period: Duration::ZERO,
            min_watch_timeout: DEFAULT_MIN_WATCH_TIMEOUT,
            watch_list_page_size: 0,
            max_internal_error_retry_duration: Duration::ZERO,
            watch_idle_timeout: None,
            use_watch_list: true,
            backoff: ExponentialBackoffManager::default(),
            expected_gvk: None,
            metrics: None,
            compact_objects: true,
            check_watch_list_consistency: std::env::var(WATCH_LIST_CONSISTENCY_DETECTOR_ENV)
                .is_ok_and(|v| v == "true"),
        }
    }
}

impl ReflectorOptions {
    /// Sets [`name`](Self::name).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets [`type_description`](Self::type_description).
    pub fn type_description(mut self, description: impl Into<String>) -> Self {
        self.type_description = Some(description.into());
        self
    }

    /// Sets [`resync_period`](Self::resync_period).
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = period;
        self
    }

    /// Sets [`min_watch_timeout`](Self::min_watch_timeout).
    pub fn min_watch_timeout(mut self, timeout: Duration) -> Self {
        self.min_watch_timeout = timeout;
        self
    }

    /// Sets [`watch_list_page_size`](Self::watch_list_page_size).
    pub fn watch_list_page_size(mut self, size: i64) -> Self {
        self.watch_list_page_size = size;
        self
    }

    /// Sets [`max_internal_error_retry_duration`](Self::max_internal_error_retry_duration).
    pub fn max_internal_error_retry_duration(mut self, duration: Duration) -> Self {
        self.max_internal_error_retry_duration = duration;
        self
    }

    /// Sets [`watch_idle_timeout`](Self::watch_idle_timeout).
    pub fn watch_idle_timeout(mut self, timeout: Duration) -> Self {
        self.watch_idle_timeout = Some(timeout);
        self
    }

    /// Sets [`use_watch_list`](Self::use_watch_list).
    pub fn use_watch_list(mut self, use_watch_list: bool) -> Self {
        self.use_watch_list = use_watch_list;
        self
    }

    /// Sets [`backoff`](Self::backoff).
    pub fn backoff(mut self, backoff: ExponentialBackoffManager) -> Self {
        self.backoff = backoff;
        self
    }

    /// Sets [`expected_gvk`](Self::expected_gvk).
    pub fn expected_gvk(mut self, gvk: GroupVersionKind) -> Self {
        self.expected_gvk = Some(gvk);
        self
    }

    /// Sets [`metrics`](Self::metrics).
    pub fn metrics(mut self, metrics: Arc<dyn ReflectorMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Sets [`check_watch_list_consistency`](Self::check_watch_list_consistency).
    pub fn check_watch_list_consistency(mut self, check: bool) -> Self {
        self.check_watch_list_consistency = check;
        self
    }

    /// Sets [`compact_objects`](Self::compact_objects).
    pub fn compact_objects(mut self, compact: bool) -> Self {
        self.compact_objects = compact;
        self
    }
}

/// Why a run of the reflector (a list and its watches) ended.
#[derive(Debug, thiserror::Error)]
pub enum ReflectorError<E> {
    /// The list failed (after the retry with resourceVersion `""` where that applies).
    #[error("failed to list {what}: {source}")]
    List {
        /// What was listed.
        what: String,
        /// The lister's error.
        source: E,
    },
    /// A watch could not be started.
    #[error("failed to watch {what}: {source}")]
    Watch {
        /// What was watched.
        what: String,
        /// The watcher's error.
        source: E,
    },
    /// The server ended a watch with an `ERROR` event.
    #[error("watch of {what} ended with an error: {status}")]
    WatchEvent {
        /// What was watched.
        what: String,
        /// The error the event carried.
        status: Box<ApiError>,
    },
    /// The list was abandoned by the pager although the server answered every page (a
    /// continue token seen twice): kclient-core's [`PagerError`].
    #[error("failed to list {what}: {source}")]
    Pager {
        /// What was listed.
        what: String,
        /// Why the pager gave up.
        source: PagerError,
    },
    /// The watch stream itself failed (a broken connection, an undecodable frame).
    #[error("watch stream of {what} failed: {source}")]
    WatchStream {
        /// What was watched.
        what: String,
        /// The stream's error.
        source: E,
    },
    /// A watch closed within a second without any event (client-go's `VeryShortWatchError`).
    #[error("very short watch: {name}: Unexpected watch close - watch lasted less than a second and no items received")]
    VeryShortWatch {
        /// The reflector's name.
        name: String,
    },
    /// The store refused a list's content.
    #[error("unable to sync list result: {0}")]
    Store(StoreError),
    /// The store's resync failed. It ends the watch phase; [`Reflector::list_and_watch`] logs
    /// it and returns `Ok`, as client-go's reflector does not pass it up.
    #[error("resync failed: {0}")]
    Resync(StoreError),
}

impl<E: ApiStatus> ApiStatus for ReflectorError<E> {
    fn api_status(&self) -> Option<&Status> {
        match self {
            Self::List { source, .. }
            | Self::Watch { source, .. }
            | Self::WatchStream { source, .. } => source.api_status(),
            Self::WatchEvent { status, .. } => status.api_status(),
            Self::Pager { .. } | Self::VeryShortWatch { .. } | Self::Store(_) | Self::Resync(_) => {
                None
            }
        }
    }

    fn is_connection_refused(&self) -> bool {
        match self {
            Self::List { source, .. }
            | Self::Watch { source, .. }
            | Self::WatchStream { source, .. } => source.is_connection_refused(),
            _ => false,
        }
    }
}

/// client-go's `isExpiredError`: `410 Expired` or `410 Gone`.
fn is_expired(e: &impl ApiStatus) -> bool {
    e.is_resource_expired() || e.is_gone()
}

/// client-go's `isWatchErrorRetriable`: a refused connection or a `429` re-watch after a
/// backoff rather than relist.
fn is_retriable_watch_error(e: &impl ApiStatus) -> bool {
    e.is_connection_refused() || e.is_too_many_requests()
}

type WatchErrorHandler<E> = dyn Fn(&str, &ReflectorError<E>) + Send + Sync;
type ShouldResync = dyn Fn() -> bool + Send + Sync;

/// The reflector's resourceVersion bookkeeping (client-go guards it with one mutex too).
#[derive(Debug, Default)]
struct RvState {
    last_sync_resource_version: String,
    is_last_sync_resource_version_unavailable: bool,
    paginated_result: bool,
}

/// How a watch ended.
enum WatchEnd<K, E> {
    /// The stream ended.
    Closed,
    /// The initial-events-end bookmark arrived; the watch goes on.
    InitialEventsEnd(WatchStream<K, E>),
}

/// Keeps a [`Store`] equal to the server's state of one resource; see the [module
/// docs](self).
pub struct Reflector<K, L: ListerWatcher<K>, S> {
    name: String,
    type_description: String,
    lister_watcher: L,
    store: S,
    resync_period: Duration,
    min_watch_timeout: Duration,
    watch_list_page_size: i64,
    max_internal_error_retry_duration: Duration,
    watch_idle_timeout: Option<Duration>,
    use_watch_list: bool,
    expected_gvk: Option<GroupVersionKind>,
    metrics: Option<Arc<dyn ReflectorMetrics>>,
    compaction: Compaction<K>,
    check_watch_list_consistency: bool,
    backoff: Mutex<ExponentialBackoffManager>,
    state: Mutex<RvState>,
    watch_error_handler: Mutex<Option<Arc<WatchErrorHandler<L::Error>>>>,
    should_resync: Mutex<Option<Arc<ShouldResync>>>,
    watch_list_refusal_logged: AtomicBool,
    listed_before: AtomicBool,
    transformer: Option<TransformFunc<K>>,
    known_objects: Option<Indexer<K>>,
    list_codec: Option<ObjectCodec<K>>,
    _kind: std::marker::PhantomData<fn() -> K>,
}

/// How a received object gets exact capacities ([`ReflectorOptions::compact_objects`]).
enum Compaction<K> {
    /// Stored as received.
    Keep,
    /// Fitted in place by its protobuf codec's walk.
    Fit(fn(&mut K)),
    /// Stored as a copy (a type without a codec).
    Copy,
}

impl<K: Clone + 'static> Compaction<K> {
    fn new(compact_objects: bool) -> Self {
        match (compact_objects, kclient_protobuf::registry::codec::<K>()) {
            (false, _) => Compaction::Keep,
            (true, Some(codec)) => Compaction::Fit(codec.fitter()),
            (true, None) => Compaction::Copy,
        }
    }

    fn apply(&self, mut obj: Arc<K>) -> Arc<K> {
        match self {
            Compaction::Keep => obj,
            Compaction::Fit(fit) => {
                // The object was just made (and transformed): the `Arc` is its only owner.
                fit(Arc::make_mut(&mut obj));
                obj
            }
            Compaction::Copy => Arc::new(K::clone(&obj)),
        }
    }
}

impl<K, L: ListerWatcher<K>, S> fmt::Debug for Reflector<K, L, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("name", &self.name)
            .field("type_description", &self.type_description)
            .field(
                "last_sync_resource_version",
                &self.state.lock().last_sync_resource_version,
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
    pub fn new(lister_watcher: L, store: S, options: ReflectorOptions) -> Self {
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
    pub fn new_with(
        lister_watcher: L,
        store: S,
        options: ReflectorOptions,
        dt: &K::DynamicType,
    ) -> Self {
        let resource = K::api_resource(dt);
        let gvk = (!resource.kind.is_empty()).then(|| resource.gvk());
        let type_description = options
            .type_description
            .unwrap_or_else(|| default_type_description::<K>(gvk.as_ref()));
        Self {
            name: options.name.unwrap_or_else(|| type_description.clone()),
            type_description,
            lister_watcher,
            store,
            resync_period: options.resync_period,
            min_watch_timeout: options.min_watch_timeout.max(DEFAULT_MIN_WATCH_TIMEOUT),
            watch_list_page_size: options.watch_list_page_size,
            max_internal_error_retry_duration: options.max_internal_error_retry_duration,
            watch_idle_timeout: options.watch_idle_timeout,
            use_watch_list: options.use_watch_list,
            expected_gvk: options.expected_gvk.or(gvk),
            metrics: options.metrics,
            compaction: Compaction::new(options.compact_objects),
            check_watch_list_consistency: options.check_watch_list_consistency,
            backoff: Mutex::new(options.backoff),
            state: Mutex::new(RvState::default()),
            watch_error_handler: Mutex::new(None),
            should_resync: Mutex::new(None),
            watch_list_refusal_logged: AtomicBool::new(false),
            listed_before: AtomicBool::new(false),
            transformer: None,
            list_codec: None,
            known_objects: None,
            _kind: std::marker::PhantomData,
        }
    }

    /// The reflector's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What it reflects, for logs.
    pub fn type_description(&self) -> &str {
        &self.type_description
    }

    /// Transforms every object the reflector receives before it reaches the store (as a
    /// FIFO's transformer would; give it to one of the two, not both). Needed with
    /// [`with_known_objects`](Self::with_known_objects), so that a reused cached object is
    /// not transformed again.
    pub fn with_transformer(mut self, transformer: TransformFunc<K>) -> Self {
        self.transformer = Some(transformer);
        self
    }

    /// Lets relists reuse what the consumer already holds (the informer passes its
    /// indexer): a listed object whose key and resourceVersion match a cached one is
    /// replaced by the cached `Arc` as its page arrives, so an unchanged object is never
    /// held twice and a relist costs little more memory than the objects that changed
    /// (client-go#1377). Objects with equal resourceVersions are equal: the server moves it
    /// on every write.
    pub fn with_known_objects(mut self, known: Indexer<K>) -> Self {
        self.known_objects = Some(known);
        self
    }

    /// Holds each list's objects encoded by `codec` from the moment its page arrives until
    /// the store's content is replaced ([`Store::replace_encoded`]), so that a list never has
    /// every object decoded at once: what a compact informer asks (the objects are
    /// transformed, keyed `namespace/name` and encoded one by one). Relists then do not reuse
    /// the consumer's objects ([`with_known_objects`](Self::with_known_objects)): reading them
    /// would decode them. Streaming lists' initial events are kept encoded the same way.
    pub fn with_encoded_lists(mut self, codec: ObjectCodec<K>) -> Self {
        self.list_codec = Some(codec);
        self
    }

    /// The store it writes into.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The resourceVersion of the last list or watch event seen (client-go's
    /// `LastSyncResourceVersion`); empty before the first list.
    pub fn last_sync_resource_version(&self) -> String {
        self.state.lock().last_sync_resource_version.clone()
    }

    /// Whether the last list or watch with [`last_sync_resource_version`] was refused as
    /// expired or too large, so the next list reads at `""` (a quorum read).
    ///
    /// [`last_sync_resource_version`]: Self::last_sync_resource_version
    pub fn is_last_sync_resource_version_unavailable(&self) -> bool {
        self.state.lock().is_last_sync_resource_version_unavailable
    }

    /// Replaces the handler called with the error that ended a run (client-go's
    /// `SetWatchErrorHandler`). The default, [`default_watch_error_handler`], logs it.
    pub fn set_watch_error_handler(
        &self,
        handler: impl Fn(&str, &ReflectorError<L::Error>) + Send + Sync + 'static,
    ) {
        *self.watch_error_handler.lock() = Some(Arc::new(handler));
    }

    /// Sets the check each resync tick makes before calling the store's `resync` (client-go's
    /// `ShouldResync`; the shared informer asks whether any handler is due).
    pub fn set_should_resync(&self, should_resync: impl Fn() -> bool + Send + Sync + 'static) {
        *self.should_resync.lock() = Some(Arc::new(should_resync));
    }

    fn set_last_sync_resource_version(&self, rv: &str) {
        self.state.lock().last_sync_resource_version = rv.to_owned();
        if let Some(m) = &self.metrics {
            m.last_resource_version(rv);
        }
    }

    fn set_unavailable(&self, unavailable: bool) {
        self.state.lock().is_last_sync_resource_version_unavailable = unavailable;
    }

    /// client-go's `relistResourceVersion`: `""` after an expired/too-large error, `"0"` for
    /// the first list, else the last resourceVersion seen.
    fn relist_resource_version(&self) -> String {
        let state = self.state.lock();
        if state.is_last_sync_resource_version_unavailable {
            String::new()
        } else if state.last_sync_resource_version.is_empty() {
            "0".to_owned()
        } else {
            state.last_sync_resource_version.clone()
        }
    }

    /// client-go's `rewatchResourceVersion`: where a streaming list starts.
    fn rewatch_resource_version(&self) -> String {
        let state = self.state.lock();
        if state.is_last_sync_resource_version_unavailable {
            String::new()
        } else {
            state.last_sync_resource_version.clone()
        }
    }

    fn watch_timeout_seconds(&self) -> i64 {
        watch_timeout_seconds(self.min_watch_timeout)
    }

    /// Starts a watch bounded by its client-side deadline and the idle timeout
    /// ([`watch_with_deadline`]).
    async fn start_watch(
        &self,
        options: &ListOptions,
    ) -> Result<WatchStream<K, L::Error>, L::Error> {
        watch_with_deadline(&self.lister_watcher, options, self.watch_idle_timeout).await
    }

    /// Lists and watches until `cancel` fires, running the watch-error handler after each
    /// run that failed and backing off between runs (client-go's `Run`).
    pub async fn run(&self, cancel: CancellationToken) {
        let span =
            tracing::info_span!("reflector", name = %self.name, resource = %self.type_description);
        self.run_loop(cancel).instrument(span).await
    }

    async fn run_loop(&self, cancel: CancellationToken) {
        tracing::debug!(reflector = %self.name, "starting reflector");
        loop {
            if cancel.is_cancelled() {
                break;
            }
            if let Err(err) = self.list_and_watch(&cancel).await {
                let handler = self.watch_error_handler.lock().clone();
                match handler {
                    Some(handler) => handler(&self.name, &err),
                    None => default_watch_error_handler(&self.name, &err),
                }
            }
            let wait = self.backoff.lock().next_backoff();
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = sleep(wait) => {}
            }
        }
        tracing::debug!(reflector = %self.name, "stopping reflector");
    }

    /// One run: a streaming list or a list, then watches until one ends in a way that
    /// needs a relist (client-go's `ListAndWatch`). `Ok` when cancelled.
    pub async fn list_and_watch(
        &self,
        cancel: &CancellationToken,
    ) -> Result<(), ReflectorError<L::Error>> {
        let mut watch = None;
        if self.use_watch_list {
            match self.watch_list(cancel).await {
                Ok(None) => return Ok(()),
                Ok(Some(stream)) => watch = Some(stream),
                Err(err) => {
                    if !self.watch_list_refusal_logged.swap(true, Ordering::Relaxed) {
                        tracing::info!(reflector = %self.name, error = %err, "streaming list refused; falling back to list and watch");
                    } else {
                        tracing::debug!(reflector = %self.name, error = %err, "streaming list refused; falling back to list and watch");
                    }
                }
            }
        }
        if watch.is_none() {
            self.list(cancel).await?;
            if cancel.is_cancelled() {
                return Ok(());
            }
        }
        tracing::debug!(reflector = %self.name, "caches populated");
        match self.watch_with_resync(watch, cancel).await {
            // client-go's `watch` logs what ended it and returns nil: a failed resync ends the
            // run without reaching the watch-error handler ("error from Resync is not
            // propagated up"), and the next run relists.
            Err(ReflectorError::Resync(err)) => {
                tracing::warn!(reflector = %self.name, error = %err, "resync failed; the watch ends and the reflector lists again");
                Ok(())
            }
            ended => ended,
        }
    }

    /// Lists at the relist resourceVersion (again at `""` after an expired or too-large
    /// error), then replaces the store's content.
    async fn list(&self, cancel: &CancellationToken) -> Result<(), ReflectorError<L::Error>> {
        let started = Instant::now();
        let requested = self.relist_resource_version();
        let listing = async {
            match self.list_at(&requested).await {
                Err(e) if is_expired(&e) || e.is_too_large_resource_version() => {
                    self.set_unavailable(true);
                    let retry_at = self.relist_resource_version();
                    tracing::debug!(reflector = %self.name, error = %e, "list at resourceVersion {requested:?} refused; listing at {retry_at:?}");
                    self.list_at(&retry_at).await.map(|l| (l, retry_at))
                }
                other => other.map(|l| (l, requested.clone())),
            }
        };
        let result = tokio::select! {
            _ = cancel.cancelled() => return Ok(()),
            result = listing => result,
        };
        let elapsed = started.elapsed();
        if elapsed > SLOW_LIST {
            tracing::warn!(reflector = %self.name, ?elapsed, "slow list");
        }
        let what = self.type_description.clone();
        let (listing, listed_at) = result.map_err(|e| match e {
            PagedListError::Lister(source) => ReflectorError::List { what, source },
            PagedListError::Pager(source) => ReflectorError::Pager { what, source },
        })?;
        if listed_at == "0" && listing.paginated {
            self.state.lock().paginated_result = true;
        }
        self.set_unavailable(false);
        let listed = listing.items.map_err(ReflectorError::Store)?;
        self.sync_with(listed, &listing.resource_version, elapsed)
    }

    /// Tells the metrics about a list of `len` objects.
    fn report_list(&self, len: usize, elapsed: Duration) {
        if let Some(m) = &self.metrics {
            m.list(len, elapsed);
            if self.listed_before.swap(true, Ordering::Relaxed) {
                m.relist();
            }
        }
    }

    /// Replaces the store's content with a list's (or a streaming list's) objects and
    /// records its resourceVersion (client-go's `syncWith`), reporting the list.
    fn sync_with(
        &self,
        listed: Listed<K>,
        resource_version: &str,
        elapsed: Duration,
    ) -> Result<(), ReflectorError<L::Error>> {
        match listed {
            Listed::Decoded(items) => {
                self.report_list(items.len(), elapsed);
                self.store.replace(items, resource_version)
            }
            Listed::Encoded(list) => {
                self.report_list(list.len(), elapsed);
                self.store.replace_encoded(list, resource_version)
            }
        }
        .map_err(ReflectorError::Store)?;
        self.set_last_sync_resource_version(resource_version);
        Ok(())
    }

    /// One list at `resource_version`, paged by client-go's rules, each item admitted
    /// ([`admit`](Self::admit), or encoded with [`with_encoded_lists`](Self::with_encoded_lists))
    /// as its page arrives.
    async fn list_at(
        &self,
        resource_version: &str,
    ) -> Result<Listing<K>, PagedListError<L::Error>> {
        let page_size = if self.watch_list_page_size != 0 {
            self.watch_list_page_size
        } else if self.state.lock().paginated_result {
            DEFAULT_PAGE_SIZE
        } else if !resource_version.is_empty() && resource_version != "0" {
            // Unpaged, so the watch cache can serve it (it ignores limits only for "0").
            0
        } else {
            DEFAULT_PAGE_SIZE
        };
        let options = ListOptions::default()
            .resource_version(resource_version)
            .omit_managed_fields(self.omit_managed_fields());
        let pager = ListPager::new(self.lister_watcher.clone()).page_size(page_size);
        let Some(codec) = &self.list_codec else {
            let paged = pager.list_map(&options, |obj| self.admit(obj)).await?;
            return Ok(Listing {
                resource_version: paged.list.resource_version().unwrap_or_default().to_owned(),
                paginated: paged.paginated,
                items: paged
                    .list
                    .items
                    .into_iter()
                    .collect::<Result<_, _>>()
                    .map(Listed::Decoded),
            });
        };
        let encoded = parking_lot::Mutex::new(EncodedList::new(codec.clone()));
        let paged = pager
            .list_map(&options, |obj| self.admit_encoded(obj, &encoded))
            .await?;
        Ok(Listing {
            resource_version: paged.list.resource_version().unwrap_or_default().to_owned(),
            paginated: paged.paginated,
            items: paged
                .list
                .items
                .into_iter()
                .collect::<Result<(), StoreError>>()
                .map(|()| Listed::Encoded(encoded.into_inner())),
        })
    }

    /// [`admit`](Self::admit) for an encoded list: the object transformed, then keyed and
    /// appended to `list` encoded (and dropped).
    fn admit_encoded(
        &self,
        obj: K,
        list: &parking_lot::Mutex<EncodedList<K>>,
    ) -> Result<(), StoreError> {
        let obj = transform(self.transformer.as_ref(), Arc::new(obj))?;
        let key = kclient_core::meta_namespace_key(&*obj);
        list.lock().push(key, &obj).map_err(StoreError::Codec)
    }

    /// Whether the transform drops managedFields, so lists and watches may skip them while
    /// decoding.
    fn omit_managed_fields(&self) -> bool {
        self.transformer
            .as_ref()
            .is_some_and(TransformFunc::strips_managed_fields)
    }

    /// What a listed or watched object becomes in the store: the cached `Arc` if the
    /// consumer holds the same version, else the object, transformed (and compacted, see
    /// [`ReflectorOptions::compact_objects`]).
    fn admit(&self, obj: K) -> Result<Arc<K>, StoreError> {
        if let Some(known) = &self.known_objects {
            if let Some(cached) = Self::cached_same_version(known, &obj) {
                return Ok(cached);
            }
        }
        let obj = transform(self.transformer.as_ref(), Arc::new(obj))?;
        Ok(self.compaction.apply(obj))
    }

    fn cached_same_version(known: &Indexer<K>, obj: &K) -> Option<Arc<K>> {
        // The first sync's objects are all new: no key to compute for each of them.
        if known.is_empty() {
            return None;
        }
        let rv = obj.resource_version().filter(|rv| !rv.is_empty())?;
        let key = known.key_func().key(obj).ok()?;
        let cached = known.get_by_key(&key)?;
        (cached.resource_version() == Some(rv)).then_some(cached)
    }

    /// A streaming list (client-go's `watchList`): `Ok(None)` when cancelled, the watch to
    /// go on with once the initial events are in the store.
    async fn watch_list(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Option<WatchStream<K, L::Error>>, ReflectorError<L::Error>> {
        let started = Instant::now();
        loop {
            if cancel.is_cancelled() {
                return Ok(None);
            }
            let options = ListOptions::default()
                .resource_version(self.rewatch_resource_version())
                .resource_version_match(ResourceVersionMatch::NotOlderThan)
                .send_initial_events(true)
                .allow_watch_bookmarks(true)
                .timeout_seconds(self.watch_timeout_seconds())
                .omit_managed_fields(self.omit_managed_fields());
            let initial = InitialEvents::<K>::new(self.list_codec.clone());
            let watch_started = Instant::now();
            let opened = tokio::select! {
                _ = cancel.cancelled() => return Ok(None),
                opened = self.start_watch(&options) => opened,
            };
            let mut stream = match opened {
                Ok(stream) => stream,
                Err(source) => {
                    let err = ReflectorError::Watch {
                        what: self.type_description.clone(),
                        source,
                    };
                    if self.retry_watch_list(&err, cancel).await? {
                        continue;
                    }
                    return Err(err);
                }
            };
            let mut resource_version = String::new();
            let ended = self
                .handle_watch(
                    &mut stream,
                    &initial,
                    watch_started,
                    cancel,
                    true,
                    &mut |rv| resource_version = rv.to_owned(),
                )
                .await;
            match ended {
                Ok(None) => return Ok(None),
                Ok(Some(WatchEnd::InitialEventsEnd(stream))) => {
                    let elapsed = started.elapsed();
                    if elapsed > SLOW_LIST {
                        tracing::warn!(reflector = %self.name, ?elapsed, "slow streaming list");
                    }
                    self.set_unavailable(false);
                    let listed = initial.into_listed();
                    if self.check_watch_list_consistency {
                        self.check_consistency(&listed, &resource_version, cancel)
                            .await;
                    }
                    self.sync_with(listed, &resource_version, elapsed)?;
                    return Ok(Some(stream));
                }
                // Closed before the bookmark: start over with a clean temporary store.
                Ok(Some(WatchEnd::Closed)) => continue,
                Err(err) => {
                    if self.retry_watch_list(&err, cancel).await? {
                        continue;
                    }
                    return Err(err);
                }
            }
        }
    }

    /// client-go's watch-list data-consistency detector: lists at `resource_version`
    /// (`Exact`, retried every second until it works or `cancel` fires) and panics if what
    /// the server lists differs from what the streaming list gathered.
    async fn check_consistency(
        &self,
        listed: &Listed<K>,
        resource_version: &str,
        cancel: &CancellationToken,
    ) {
        tracing::warn!(reflector = %self.name, "the watch-list data consistency check is on: an additional list call to the API server");
        let mut gathered: Vec<Identity> = match listed {
            Listed::Decoded(objects) => objects.iter().map(|o| identity(&**o)).collect(),
            Listed::Encoded(list) => (0..list.len())
                .filter_map(|i| list.decode(i)?.ok())
                .map(|o| identity(&o))
                .collect(),
        };
        let options = ListOptions::default()
            .resource_version(resource_version)
            .resource_version_match(ResourceVersionMatch::Exact);
        let listed = loop {
            let pager = ListPager::new(self.lister_watcher.clone()).page_size(DEFAULT_PAGE_SIZE);
            match pager.list_map(&options, |o| identity(&o)).await {
                Ok(paged) => break paged.list.items,
                Err(err) => {
                    tracing::error!(reflector = %self.name, error = %err, "failed to list for the data consistency check; retrying");
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        _ = sleep(Duration::from_secs(1)) => {}
                    }
                }
            }
        };
        let mut listed = listed;
        gathered.sort();
        listed.sort();
        if gathered != listed {
            tracing::info!(reflector = %self.name, streamed = ?gathered, listed = ?listed, "what the streaming list gathered differs from a list at its resourceVersion");
            panic!("data inconsistency detected for {}, panicking!", self.name);
        }
    }

    /// Whether a streaming list should be tried again after `err` (client-go's
    /// `isErrorRetriableWithSideEffectsFn`): after a backoff for a refused connection or a
    /// `429`; at once from `""` for an expired or too-large resourceVersion.
    async fn retry_watch_list(
        &self,
        err: &ReflectorError<L::Error>,
        cancel: &CancellationToken,
    ) -> Result<bool, ReflectorError<L::Error>> {
        if is_retriable_watch_error(err) {
            tracing::debug!(reflector = %self.name, error = %err, "streaming list failed; backing off");
            let wait = self.backoff.lock().next_backoff();
            tokio::select! {
                _ = cancel.cancelled() => {}
                _ = sleep(wait) => {}
            }
            return Ok(true);
        }
        if is_expired(err) || err.is_too_large_resource_version() {
            self.set_unavailable(true);
            return Ok(true);
        }
        Ok(false)
    }

    /// The watch phase (client-go's `watchWithResync` and `watch`): re-watches after normal
    /// closes, refused connections, `429`s and (within their window) internal errors, and
    /// returns when a relist is needed, with the resync timer running throughout.
    async fn watch_with_resync(
        &self,
        mut watch: Option<WatchStream<K, L::Error>>,
        cancel: &CancellationToken,
    ) -> Result<(), ReflectorError<L::Error>> {
        let mut resync = Resync::new(self.resync_period);
        let mut retry = RetryWithDeadline::new(
            self.max_internal_error_retry_duration,
            Duration::from_secs(60),
        );
        loop {
            if cancel.is_cancelled() {
                return Ok(());
            }
            let started = Instant::now();
            let mut stream = match watch.take() {
                Some(stream) => stream,
                None => {
                    let options = ListOptions::default()
                        .resource_version(self.last_sync_resource_version())
                        .timeout_seconds(self.watch_timeout_seconds())
                        .allow_watch_bookmarks(true)
                        .omit_managed_fields(self.omit_managed_fields());
                    let opened = self
                        .with_resync(&mut resync, cancel, self.start_watch(&options))
                        .await?;
                    let Some(opened) = opened else {
                        return Ok(());
                    };
                    match opened {
                        Ok(stream) => stream,
                        Err(source) if is_retriable_watch_error(&source) => {
                            tracing::debug!(reflector = %self.name, error = %source, "watch failed; backing off");
                            if !self.back_off(&mut resync, cancel).await? {
                                return Ok(());
                            }
                            continue;
                        }
                        Err(source) => {
                            return Err(ReflectorError::Watch {
                                what: self.type_description.clone(),
                                source,
                            })
                        }
                    }
                }
            };
            if let Some(m) = &self.metrics {
                m.watch();
            }
            let mut record_rv = |rv: &str| self.set_last_sync_resource_version(rv);
            let handled = self.handle_watch(
                &mut stream,
                &self.store,
                started,
                cancel,
                false,
                &mut record_rv,
            );
            let ended = self.with_resync(&mut resync, cancel, handled).await?;
            let err = match ended {
                None | Some(Ok(None)) => return Ok(()),
                Some(Ok(Some(_))) => {
                    retry.after(false);
                    continue;
                }
                Some(Err(err)) => err,
            };
            retry.after(err.is_internal_error());
            if is_expired(&err) {
                // The next list asks for the last resourceVersion seen: a list at an RV returns
                // data at least that fresh, so a 410 on the watch is no reason for "". One
                // warning per relist; the list's own retry at "" adds none.
                tracing::warn!(reflector = %self.name, error = %err, "watch expired; relisting");
            } else if err.is_too_many_requests() {
                tracing::debug!(reflector = %self.name, "watch returned 429; backing off");
                if !self.back_off(&mut resync, cancel).await? {
                    return Ok(());
                }
                continue;
            } else if err.is_internal_error() && retry.should_retry() {
                tracing::debug!(reflector = %self.name, error = %err, "retrying watch after internal error");
                continue;
            } else {
                tracing::warn!(reflector = %self.name, error = %err, "watch ended with an error");
            }
            return Ok(());
        }
    }

    /// Waits for the backoff, resyncing meanwhile; `false` when cancelled.
    async fn back_off(
        &self,
        resync: &mut Resync,
        cancel: &CancellationToken,
    ) -> Result<bool, ReflectorError<L::Error>> {
        let wait = self.backoff.lock().next_backoff();
        Ok(self
            .with_resync(resync, cancel, sleep(wait))
            .await?
            .is_some())
    }

    /// Runs `work` while serving resync ticks; `None` when cancelled. A failed resync ends
    /// the watch phase with [`ReflectorError::Resync`].
    async fn with_resync<T>(
        &self,
        resync: &mut Resync,
        cancel: &CancellationToken,
        work: impl Future<Output = T>,
    ) -> Result<Option<T>, ReflectorError<L::Error>> {
        let mut work = pin!(work);
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return Ok(None),
                out = &mut work => return Ok(Some(out)),
                _ = resync.due() => {
                    let should = self.should_resync.lock().clone();
                    if should.is_none_or(|f| f()) {
                        tracing::debug!(reflector = %self.name, "forcing resync");
                        self.store.resync().map_err(ReflectorError::Resync)?;
                    }
                    resync.rearm();
                }
            }
        }
    }

    /// Consumes one watch into `store` (client-go's `handleAnyWatch`). Returns `Ok(None)`
    /// when cancelled, how the watch ended otherwise; `set_rv` gets every event's
    /// resourceVersion. With `until_initial_events_end`, returns as soon as the streaming
    /// list's closing bookmark arrives, handing back the still-open stream.
    async fn handle_watch<T: Store<K>>(
        &self,
        stream: &mut WatchStream<K, L::Error>,
        store: &T,
        started: Instant,
        cancel: &CancellationToken,
        until_initial_events_end: bool,
        set_rv: &mut (dyn FnMut(&str) + Send),
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
            let mut initial_events_end = false;
            let resource_version = match event {
                WatchEvent::Error(status) => {
                    return Err(ReflectorError::WatchEvent {
                        what: self.type_description.clone(),
                        status: Box::new(ApiError::from(status)),
                    })
                }
                WatchEvent::Added(obj) | WatchEvent::Modified(obj) | WatchEvent::Deleted(obj)
                    if !self.expected(&obj) =>
                {
                    continue;
                }
                WatchEvent::Added(obj) => self.write(store, obj, Write::Add),
                WatchEvent::Modified(obj) => self.write(store, obj, Write::Update),
                WatchEvent::Deleted(obj) => self.write(store, obj, Write::Delete),
                WatchEvent::Bookmark(bookmark) => {
                    initial_events_end = bookmark.is_initial_events_end();
                    bookmark.resource_version
                }
            };
            set_rv(&resource_version);
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

    /// Writes one watched object into `store` (admitted as a listed one is); a failure is
    /// logged, not fatal, as in client-go. Returns the object's resourceVersion.
    fn write<T: Store<K>>(&self, store: &T, obj: K, write: Write) -> String {
        let rv = obj.resource_version().unwrap_or_default().to_owned();
        let written = self.admit(obj).and_then(|obj| match write {
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

/// client-go's `DefaultWatchErrorHandler`: an expired watch at debug level (it is routine),
/// everything else as an error.
pub fn default_watch_error_handler<E: std::error::Error + ApiStatus>(
    name: &str,
    err: &ReflectorError<E>,
) {
    if is_expired(err) {
        tracing::debug!(reflector = %name, error = %err, "watch closed");
    } else {
        tracing::error!(reflector = %name, error = %err, "failed to watch");
    }
}

/// What a watch event does to the store.
#[derive(Debug, Clone, Copy)]
enum Write {
    Add,
    Update,
    Delete,
}

/// The resync timer of one watch phase (client-go's `resyncChan`).
struct Resync {
    period: Duration,
    next: Option<Instant>,
}

impl Resync {
    fn new(period: Duration) -> Self {
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

/// client-go's `getTypeDescriptionFromObject`: the group-version-kind (of a resource with a
/// kind) as apimachinery displays it (`mygroup/v1, Kind=MyKind`; `/v1, Kind=Pod` for the core
/// group), the Rust type's name otherwise (client-go's Go type name).
fn default_type_description<K>(gvk: Option<&GroupVersionKind>) -> String {
    match gvk {
        Some(gvk) => gvk.to_string(),
        None => std::any::type_name::<K>().to_owned(),
    }
}
