//! [`ReflectorOptions`]: everything a [`Reflector`](crate::Reflector) is configured with,
//! given once, at construction (client-go's `ReflectorOptions`, the reflector's public
//! fields and what its controller's `Config` sets on it).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kclient_core::backoff::ExponentialBackoffManager;
use kclient_core::GroupVersionKind;

use super::errors::{WatchError, WatchErrorHandler};
use crate::indexer::Indexer;
use crate::metrics::ReflectorMetrics;
use crate::representation::ObjectCodec;
use crate::transform::TransformFunc;
#[cfg(doc)]
use crate::{store::Store, watch_deadline::watch_with_deadline, WATCH_DEADLINE_GRACE};

/// client-go's `defaultMinWatchTimeout`: watches last a random time in `[5 min, 10 min)`.
pub const DEFAULT_MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// client-go's switch for the watch-list data-consistency detector
/// ([`ReflectorOptions::check_watch_list_consistency`]).
pub const WATCH_LIST_CONSISTENCY_DETECTOR_ENV: &str = "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR";

/// Decides at each resync tick whether to resync (client-go's `ShouldResyncFunc`).
pub type ShouldResyncFunc = Arc<dyn Fn() -> bool + Send + Sync>;

/// How a [`Reflector`](crate::Reflector) is configured (client-go's `ReflectorOptions`, the
/// reflector's public fields and what its controller's `Config` gives it), fixed when the
/// reflector is made. Non-exhaustive, so that an option added later is not a breaking
/// change: start from [`Default`] and set what differs, with the setters
/// (`ReflectorOptions::default().use_watch_list(false)`) or by assigning the public fields.
#[non_exhaustive]
pub struct ReflectorOptions<K> {
    /// The name in logs; the type description when `None`.
    pub name: Option<String>,
    /// What is reflected, for logs and errors; when `None`, as client-go describes it
    /// (`getTypeDescriptionFromObject`): the group-version-kind (`mygroup/v1, Kind=MyKind`,
    /// `/v1, Kind=Pod`), or the Rust type's name when the kind is unknown (client-go names
    /// typed objects by their Go type, `*v1.Pod`, and unstructured ones by their GVK).
    pub type_description: Option<String>,
    /// How often to call the store's `resync` while watching; zero never does.
    pub resync_period: Duration,
    /// Asked at each resync tick whether to call the store's `resync` (client-go's
    /// `ShouldResync`; the shared informer asks whether any handler is due); always when
    /// `None`.
    pub should_resync: Option<ShouldResyncFunc>,
    /// Raises the minimum watch timeout above [`DEFAULT_MIN_WATCH_TIMEOUT`]; lower values are
    /// ignored (client-go's `MinWatchTimeout`).
    pub min_watch_timeout: Duration,
    /// The page size of lists (client-go's `WatchListPageSize`); 0 leaves it to the rules in
    /// the [reflector's docs](crate::reflector).
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
    /// Called with the error that ended a run (client-go's `WatchErrorHandler`, which the
    /// informer's `SetWatchErrorHandler` sets); [`default_watch_error_handler`] when `None`.
    ///
    /// [`default_watch_error_handler`]: crate::default_watch_error_handler
    pub watch_error_handler: Option<WatchErrorHandler>,
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
    /// Applied to every object the reflector receives before it reaches the store (as a
    /// FIFO's transformer would; give it to one of the two, not both). Needed with
    /// [`known_objects`](Self::known_objects), so that a reused cached object is not
    /// transformed again. A transform that strips managedFields lets lists and watches skip
    /// them while decoding.
    pub transform: Option<TransformFunc<K>>,
    /// What the consumer already holds (the informer passes its indexer), for relists to
    /// reuse: a listed object whose key and resourceVersion match a cached one is replaced by
    /// the cached `Arc` as its page arrives, so an unchanged object is never held twice and
    /// a relist costs little more memory than the objects that changed (client-go#1377).
    /// Objects with equal resourceVersions are equal: the server moves it on every write.
    pub known_objects: Option<Indexer<K>>,
    /// Holds each list's objects encoded by this codec from the moment its page arrives until
    /// the store's content is replaced ([`Store::replace_encoded`]), so that a list never has
    /// every object decoded at once: what a compact informer asks (the objects are
    /// transformed, keyed `namespace/name` and encoded one by one). Relists then do not reuse
    /// the consumer's objects ([`known_objects`](Self::known_objects)): reading them would
    /// decode them. Streaming lists' initial events are kept encoded the same way.
    pub encoded_lists: Option<ObjectCodec<K>>,
}

impl<K> Default for ReflectorOptions<K> {
    fn default() -> Self {
        Self {
            name: None,
            type_description: None,
            resync_period: Duration::ZERO,
            should_resync: None,
            min_watch_timeout: DEFAULT_MIN_WATCH_TIMEOUT,
            watch_list_page_size: 0,
            max_internal_error_retry_duration: Duration::ZERO,
            watch_idle_timeout: None,
            use_watch_list: true,
            backoff: ExponentialBackoffManager::default(),
            watch_error_handler: None,
            expected_gvk: None,
            metrics: None,
            compact_objects: true,
            check_watch_list_consistency: std::env::var(WATCH_LIST_CONSISTENCY_DETECTOR_ENV)
                .is_ok_and(|v| v == "true"),
            transform: None,
            known_objects: None,
            encoded_lists: None,
        }
    }
}

impl<K> Clone for ReflectorOptions<K> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            type_description: self.type_description.clone(),
            resync_period: self.resync_period,
            should_resync: self.should_resync.clone(),
            min_watch_timeout: self.min_watch_timeout,
            watch_list_page_size: self.watch_list_page_size,
            max_internal_error_retry_duration: self.max_internal_error_retry_duration,
            watch_idle_timeout: self.watch_idle_timeout,
            use_watch_list: self.use_watch_list,
            backoff: self.backoff.clone(),
            watch_error_handler: self.watch_error_handler.clone(),
            expected_gvk: self.expected_gvk.clone(),
            metrics: self.metrics.clone(),
            compact_objects: self.compact_objects,
            check_watch_list_consistency: self.check_watch_list_consistency,
            transform: self.transform.clone(),
            known_objects: self.known_objects.clone(),
            encoded_lists: self.encoded_lists.clone(),
        }
    }
}

impl<K> fmt::Debug for ReflectorOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorOptions")
            .field("name", &self.name)
            .field("type_description", &self.type_description)
            .field("resync_period", &self.resync_period)
            .field("min_watch_timeout", &self.min_watch_timeout)
            .field("watch_list_page_size", &self.watch_list_page_size)
            .field("use_watch_list", &self.use_watch_list)
            .field("transform", &self.transform.is_some())
            .field("known_objects", &self.known_objects.is_some())
            .field("encoded_lists", &self.encoded_lists.is_some())
            .finish_non_exhaustive()
    }
}

impl<K> ReflectorOptions<K> {
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

    /// Sets [`should_resync`](Self::should_resync).
    pub fn should_resync(
        mut self,
        should_resync: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Self {
        self.should_resync = Some(Arc::new(should_resync));
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

    /// Sets [`watch_error_handler`](Self::watch_error_handler).
    pub fn watch_error_handler(
        mut self,
        handler: impl Fn(&str, &dyn WatchError) + Send + Sync + 'static,
    ) -> Self {
        self.watch_error_handler = Some(Arc::new(handler));
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

    /// Sets [`transform`](Self::transform).
    pub fn transform(mut self, transform: TransformFunc<K>) -> Self {
        self.transform = Some(transform);
        self
    }

    /// Sets [`known_objects`](Self::known_objects).
    pub fn known_objects(mut self, known: Indexer<K>) -> Self {
        self.known_objects = Some(known);
        self
    }

    /// Sets [`encoded_lists`](Self::encoded_lists).
    pub fn encoded_lists(mut self, codec: ObjectCodec<K>) -> Self {
        self.encoded_lists = Some(codec);
        self
    }
}
