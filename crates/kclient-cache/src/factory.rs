//! The informer factory (client-go's `SharedInformerFactory`, and the dynamic and metadata
//! ones): one shared informer per resource type, made on first request, started together,
//! waited for together, shut down together.
//!
//! The factory makes its lister-watchers through two small traits of kclient-core, so this
//! crate stays free of HTTP and the clients stay free of the cache:
//! [`ListerWatcherFor<K>`] for statically typed resources (kclient-typed's `Clientset`
//! implements it for every type) and [`DynamicListerWatcherFor`] for any resource described
//! at run time, as `DynamicObject` (kclient-dynamic's `DynamicClient`: client-go's
//! `dynamicinformer`) or as `PartialObjectMetadata` (its `MetadataClient`: client-go's
//! `metadatainformer`; kclient-typed's `Clientset` implements both as well, so one factory
//! over it serves all three); a test double can implement either. The generated typed accessors
//! (`factory.core_v1().pods()`) are kclient-informers'.
//!
//! client-go's rules, kept:
//! * **Lazy**: an informer exists once [`informer`](SharedInformerFactory::informer) (or a
//!   lister) asks for it, so ask before [`start`](SharedInformerFactory::start).
//! * **One per type**: asking twice gives the same informer. For another namespace or other
//!   list options, use another factory.
//! * `start` is idempotent and starts only informers not started yet; `wait_for_cache_sync`
//!   covers the started informers only; after [`shutdown`](SharedInformerFactory::shutdown)
//!   `start` does nothing.
//!
//! * **Options fixed at construction**: the namespace, the list-options tweak, resync
//!   periods, transforms and the name prefix are given to
//!   [`SharedInformerFactory::builder`] (client-go's `NewSharedInformerFactoryWithOptions`)
//!   and never change: every informer of a factory, and of its clones, is made with the
//!   same ones. (A setter on the factory itself would change them for clones too, and give
//!   one factory informers in two namespaces.)
//! * **No user code under the factory's lock**: the constructor given to
//!   [`informer_for`](SharedInformerFactory::informer_for) runs with the lock released, so
//!   it may ask the factory for other informers (each type is still made once: a second
//!   caller for the same type waits for the first).
//!
//! Unlike client-go, the factory strips `metadata.managedFields` from cached objects by
//! default (most controllers never read them, and they are a quarter of a Pod's memory):
//! the builder's [`keep_managed_fields`](SharedInformerFactoryBuilder::keep_managed_fields)
//! turns that off, and a transform set for a type replaces it for that type.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_cache::testing::FakeControllerSource;
//! use kclient_cache::SharedInformerFactory;
//! use kclient_core::{CancellationToken, ListerWatcherFor, TweakListOptions};
//!
//! // A test double: one FakeControllerSource of ConfigMaps.
//! #[derive(Clone)]
//! struct Source(FakeControllerSource<ConfigMap>);
//! impl ListerWatcherFor<ConfigMap> for Source {
//!     type ListerWatcher = FakeControllerSource<ConfigMap>;
//!     fn lister_watcher(&self, _ns: Option<&str>, _tweak: Option<TweakListOptions>) -> Self::ListerWatcher {
//!         self.0.clone()
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let factory = SharedInformerFactory::new(Source(FakeControllerSource::new()), std::time::Duration::ZERO);
//! let config_maps = factory.informer::<ConfigMap>();
//! let cancel = CancellationToken::new();
//! factory.start(&cancel);
//! let synced = factory.wait_for_cache_sync(&cancel).await;
//! assert!(synced.all_synced());
//! assert!(config_maps.lister().list(&Default::default()).is_empty());
//! factory.shutdown().await;
//! # }
//! ```

use std::any::{Any, TypeId};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use kclient_core::sharding::{Placement, ShardSelector, ShardedListWatch};
use kclient_core::{
    ApiResource, CancellationToken, DynamicListerWatcherFor, ListerWatcherFor, Resource,
    TweakListOptions,
};
#[cfg(doc)]
use kclient_core::{DynamicObject, PartialObjectMetadata};
use parking_lot::Mutex;
use tokio::task::JoinHandle;

use crate::generic_informer::GenericInformer;
use crate::index::Indexers;
use crate::lister::Lister;
use crate::representation::{CacheRepresentation, ObjectCodec, DEFAULT_RECENTLY_DECODED};
use crate::shared_informer::{SharedIndexInformer, SharedIndexInformerOptions};
use crate::transform::TransformFunc;
use crate::wait::wait_for_cache_sync;

/// Which informer: a static type, or a resource by group/version/resource and the type its
/// objects are held as.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum InformerKey {
    Typed(TypeId),
    Dynamic(TypeId, String),
}

/// What [`SharedInformerFactory::wait_for_cache_sync`] found: each started informer, by
/// name, and whether it synced (client-go's `SyncResult`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SyncResult {
    /// Informer name → synced.
    pub synced: BTreeMap<String, bool>,
}

impl SyncResult {
    /// Whether every informer synced.
    pub fn all_synced(&self) -> bool {
        self.synced.values().all(|s| *s)
    }

    /// The informers that did not sync.
    pub fn unsynced(&self) -> impl Iterator<Item = &str> {
        self.synced
            .iter()
            .filter(|(_, s)| !**s)
            .map(|(name, _)| name.as_str())
    }
}

/// A started informer, type-erased.
trait AnyInformer: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn name(&self) -> String;
    fn synced(&self) -> crate::wait::InformerSynced;
    fn cached(&self) -> usize;
    fn run(&self, cancel: CancellationToken) -> futures::future::BoxFuture<'static, ()>;
}

impl<K: Resource + Clone + Send + Sync + 'static> AnyInformer for SharedIndexInformer<K> {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn name(&self) -> String {
        SharedIndexInformer::name(self).to_owned()
    }

    fn synced(&self) -> crate::wait::InformerSynced {
        SharedIndexInformer::synced(self)
    }

    fn cached(&self) -> usize {
        self.get_store().len()
    }

    fn run(&self, cancel: CancellationToken) -> futures::future::BoxFuture<'static, ()> {
        let informer = self.clone();
        Box::pin(async move { informer.run(cancel).await })
    }
}

/// One informer of the factory: made once (the cell), started once (the task).
#[derive(Default)]
struct Slot {
    /// Set by the first request for the informer, outside the factory's lock; a concurrent
    /// request for the same informer waits for it.
    informer: Arc<OnceLock<Arc<dyn AnyInformer>>>,
    task: Option<JoinHandle<()>>,
}

/// What a factory gives its informers, fixed when it is built.
#[derive(Default)]
struct Options {
    namespace: Option<String>,
    tweak: Option<TweakListOptions>,
    shards: Option<ShardSelector>,
    /// The kinds placed in a shard by their controller's uid.
    owned: HashSet<TypeId>,
    default_resync: Duration,
    custom_resync: HashMap<TypeId, Duration>,
    transforms: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    keep_managed_fields: bool,
    informer_name: Option<String>,
    /// Built-in kinds are cached compact (protobuf) unless `representations` says otherwise.
    compact_built_in: bool,
    representations: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

/// One shared informer per resource type; see the [module docs](self). Cheap to clone:
/// clones share the informers and the options, which are fixed when the factory is built
/// ([`SharedInformerFactory::builder`]).
///
/// No method of a built factory changes its options — in particular none sets the
/// namespace, so one factory cannot hold informers of two namespaces:
///
/// ```compile_fail
/// # use kclient_cache::SharedInformerFactory;
/// # fn f<C: Send + Sync + 'static>(factory: SharedInformerFactory<C>) {
/// let other = factory.namespace("dev"); // no such method: the namespace is the builder's
/// # }
/// ```
pub struct SharedInformerFactory<C> {
    client: Arc<C>,
    options: Arc<Options>,
    informers: Arc<Mutex<HashMap<InformerKey, Slot>>>,
    shutdown: CancellationToken,
}

impl<C> Clone for SharedInformerFactory<C> {
    fn clone(&self) -> Self {
        Self {
            client: Arc::clone(&self.client),
            options: Arc::clone(&self.options),
            informers: Arc::clone(&self.informers),
            shutdown: self.shutdown.clone(),
        }
    }
}

impl<C> fmt::Debug for SharedInformerFactory<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let informers = self.informers.lock();
        f.debug_struct("SharedInformerFactory")
            .field("namespace", &self.options.namespace)
            .field("default_resync", &self.options.default_resync)
            .field(
                "informers",
                &informers
                    .values()
                    .filter_map(|slot| slot.informer.get().map(|i| i.name()))
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// Builds a [`SharedInformerFactory`] with its options, which the factory keeps unchanged
/// (client-go's `NewSharedInformerFactoryWithOptions` and its `SharedInformerOption`s).
///
/// ```
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
/// use kclient_cache::testing::FakeControllerSource;
/// use kclient_cache::{SharedInformerFactory, TransformFunc};
/// use kclient_core::{ListerWatcherFor, TweakListOptions};
///
/// #[derive(Clone, Default)]
/// struct Source(FakeControllerSource<ConfigMap>);
/// impl ListerWatcherFor<ConfigMap> for Source {
///     type ListerWatcher = FakeControllerSource<ConfigMap>;
///     fn lister_watcher(&self, _: Option<&str>, _: Option<TweakListOptions>) -> Self::ListerWatcher {
///         self.0.clone()
///     }
/// }
///
/// let factory = SharedInformerFactory::builder(Source::default())
///     .default_resync(Duration::from_secs(600))
///     .namespace("prod")
///     .tweak_list_options(|options| options.label_selector = Some("app=web".into()))
///     .custom_resync::<Secret>(Duration::from_secs(60))
///     .transform(TransformFunc::<ConfigMap>::new(|cm| {
///         cm.metadata.annotations = None;
///         Ok(())
///     }))
///     .informer_name("web-controller")
///     .build();
/// assert_eq!(factory.informer::<ConfigMap>().name(), "web-controller/v1/ConfigMap");
/// ```
pub struct SharedInformerFactoryBuilder<C> {
    client: C,
    options: Options,
}

impl<C> fmt::Debug for SharedInformerFactoryBuilder<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInformerFactoryBuilder")
            .field("namespace", &self.options.namespace)
            .field("default_resync", &self.options.default_resync)
            .field("keep_managed_fields", &self.options.keep_managed_fields)
            .field("informer_name", &self.options.informer_name)
            .finish_non_exhaustive()
    }
}

impl<C: Send + Sync + 'static> SharedInformerFactoryBuilder<C> {
    /// How often the informers resync (zero never, the default), unless set per type with
    /// [`custom_resync`](Self::custom_resync) (client-go's `defaultResync`).
    pub fn default_resync(mut self, resync: Duration) -> Self {
        self.options.default_resync = resync;
        self
    }

    /// Watches only `namespace` (client-go's `WithNamespace`); cluster-scoped resources are
    /// unaffected. The empty namespace means all namespaces, as does not calling this.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.options.namespace = Some(namespace.into()).filter(|n| !n.is_empty());
        self
    }

    /// Adjusts the options of every list and watch, typically with selectors (client-go's
    /// `WithTweakListOptions`).
    pub fn tweak_list_options(
        mut self,
        tweak: impl Fn(&mut kclient_core::ListOptions) + Send + Sync + 'static,
    ) -> Self {
        self.options.tweak = Some(Arc::new(tweak));
        self
    }

    /// Makes every informer list, watch and cache only the shard `selector` names (KEP-5866's
    /// `shardSelector`, see [`kclient_core::sharding`]): the server filters where it has the
    /// `ShardedListAndWatch` gate, the informers filter again in any case
    /// ([`ShardedListWatch`]), so that a server without the gate costs transfer, never
    /// correctness.
    pub fn shard_selector(mut self, selector: ShardSelector) -> Self {
        self.options.shards = Some(selector);
        self
    }

    /// Places the objects of `K` in the shard by their controller's uid rather than their
    /// own ([`Placement::ControllerOwner`]): for the kinds a sharded controller owns, so that
    /// each replica caches the children of its own objects. The server cannot select by
    /// owner, so `K`'s informer lists and watches all of `K` and keeps the shard's.
    pub fn shard_by_controller_owner<K: 'static>(mut self) -> Self {
        self.options.owned.insert(TypeId::of::<K>());
        self
    }

    /// The resync period of `K`'s informer (client-go's `WithCustomResyncConfig`).
    pub fn custom_resync<K: 'static>(mut self, resync: Duration) -> Self {
        self.options.custom_resync.insert(TypeId::of::<K>(), resync);
        self
    }

    /// The transform of `K`'s informer, instead of the default managedFields stripping
    /// (client-go's `WithTransform`, per type).
    pub fn transform<K: Send + Sync + 'static>(mut self, transform: TransformFunc<K>) -> Self {
        self.options
            .transforms
            .insert(TypeId::of::<K>(), Box::new(transform));
        self
    }

    /// Keeps `metadata.managedFields` in cached objects (the factory strips them by default).
    pub fn keep_managed_fields(mut self) -> Self {
        self.options.keep_managed_fields = true;
        self
    }

    /// Caches every built-in kind (and `PartialObjectMetadata`) in the compact
    /// representation: each object kept as its protobuf message and decoded when read (see
    /// [`CacheRepresentation`] for the trade-off). Other types — custom resources,
    /// `DynamicObject` — stay decoded unless [`representation`](Self::representation) says
    /// otherwise for their type (`ObjectCodec::json()` keeps any serde type compact). The
    /// protobuf codecs need this crate's `compact-protobuf` feature (the facade's, in its
    /// default features) and the kind's API group compiled in: without them built-in kinds
    /// stay decoded too, with a warning logged when the informer is made. (Without the
    /// `compact` feature, which `compact-protobuf` turns on, every kind stays decoded.)
    pub fn compact_cache(mut self) -> Self {
        self.options.compact_built_in = true;
        self
    }

    /// How `K`'s informer caches its objects (e.g. `CacheRepresentation::compact()` for a
    /// custom resource, kept as compact JSON), whatever [`compact_cache`](Self::compact_cache)
    /// says.
    pub fn representation<K: Send + Sync + 'static>(
        mut self,
        representation: CacheRepresentation<K>,
    ) -> Self {
        self.options
            .representations
            .insert(TypeId::of::<K>(), Box::new(representation));
        self
    }

    /// Prefixes every informer's name in logs and metrics (client-go's `WithInformerName`).
    pub fn informer_name(mut self, name: impl Into<String>) -> Self {
        self.options.informer_name = Some(name.into());
        self
    }

    /// The factory, with these options for good.
    pub fn build(self) -> SharedInformerFactory<C> {
        SharedInformerFactory {
            client: Arc::new(self.client),
            options: Arc::new(self.options),
            informers: Arc::new(Mutex::new(HashMap::new())),
            shutdown: CancellationToken::new(),
        }
    }
}

impl<C: Send + Sync + 'static> SharedInformerFactory<C> {
    /// A factory over `client` whose informers resync every `default_resync` (zero never),
    /// with no other option (client-go's `NewSharedInformerFactory`); the same as
    /// `SharedInformerFactory::builder(client).default_resync(default_resync).build()`.
    pub fn new(client: C, default_resync: Duration) -> Self {
        Self::builder(client).default_resync(default_resync).build()
    }

    /// A builder of a factory over `client`, for a namespace, a list-options tweak, resync
    /// periods or transforms per type, the managedFields policy or a name (client-go's
    /// `NewSharedInformerFactoryWithOptions`); see [`SharedInformerFactoryBuilder`].
    pub fn builder(client: C) -> SharedInformerFactoryBuilder<C> {
        SharedInformerFactoryBuilder {
            client,
            options: Options::default(),
        }
    }

    /// The client the informers are made from.
    pub fn client(&self) -> &C {
        &self.client
    }

    /// The informer of `K`, made on first request (client-go's typed `Informer()`), with the
    /// namespace index.
    pub fn informer<K>(&self) -> SharedIndexInformer<K>
    where
        K: Resource + Clone + Send + Sync + 'static,
        K::DynamicType: Default,
        C: ListerWatcherFor<K>,
    {
        self.informer_for::<K>(|client, options| {
            let namespace = options.namespace.clone();
            let lw = client.lister_watcher(namespace.as_deref(), options.tweak.clone());
            let lw = ShardedListWatch::placed(lw, options.shards.clone(), options.placement);
            SharedIndexInformer::new(lw, options.informer_options())
        })
    }

    /// A lister of `K` over its informer (made if needed).
    pub fn lister<K>(&self) -> Lister<K>
    where
        K: Resource + Clone + Send + Sync + 'static,
        K::DynamicType: Default,
        C: ListerWatcherFor<K>,
    {
        self.informer::<K>().lister()
    }

    /// The informer of `K` made by `make` on first request (client-go's `InformerFor`): for
    /// an informer with options of its own, still shared and started by the factory. `make`
    /// runs without the factory's lock held, so it may ask the factory for other informers;
    /// a concurrent request for `K` waits for it (it runs once), so it must not ask for
    /// `K`'s own informer, which it is making.
    pub fn informer_for<K>(
        &self,
        make: impl FnOnce(&C, &InformerSettings<K>) -> SharedIndexInformer<K>,
    ) -> SharedIndexInformer<K>
    where
        K: Resource + Clone + Send + Sync + 'static,
        K::DynamicType: Default,
    {
        let resource = K::api_resource(&Default::default());
        self.get_or_make(InformerKey::Typed(TypeId::of::<K>()), &resource, make)
    }

    /// The informer of any resource and a lister over it, made on first request
    /// (client-go's `ForResource` of `dynamicinformer` and `metadatainformer`, which gives a
    /// `GenericInformer`), with the namespace index. Its objects are what the client lists:
    /// [`DynamicObject`]s from a `DynamicClient`, [`PartialObjectMetadata`] from a
    /// `MetadataClient`. Asking again for the same group/version/resource gives the same
    /// informer. It takes an [`ApiResource`] rather than client-go's bare
    /// group/version/resource because the objects' kind and scope come from it (discovery's
    /// `RestMapper` turns a resource name into one).
    pub fn for_resource<K>(&self, resource: &ApiResource) -> GenericInformer<K>
    where
        K: Resource<DynamicType = ApiResource> + Clone + Send + Sync + 'static,
        C: DynamicListerWatcherFor<K>,
    {
        let key = InformerKey::Dynamic(TypeId::of::<K>(), resource.gvr().to_string());
        let informer = self.get_or_make(key, resource, |client, settings| {
            let lw = client.dynamic_lister_watcher(
                resource,
                settings.namespace.as_deref(),
                settings.tweak.clone(),
            );
            let lw = ShardedListWatch::placed(lw, settings.shards.clone(), settings.placement);
            SharedIndexInformer::new_with(lw, settings.informer_options(), resource)
        });
        GenericInformer::new(informer)
    }

    /// The informer under `key`, made by `make` with `resource`'s settings the first time.
    /// The factory's lock is held only to find (or add) the informer's slot: `make` runs
    /// after it is released.
    fn get_or_make<K: Resource + Clone + Send + Sync + 'static>(
        &self,
        key: InformerKey,
        resource: &ApiResource,
        make: impl FnOnce(&C, &InformerSettings<K>) -> SharedIndexInformer<K>,
    ) -> SharedIndexInformer<K> {
        let cell = Arc::clone(&self.informers.lock().entry(key).or_default().informer);
        let informer = cell.get_or_init(|| {
            let made = make(&self.client, &self.settings::<K>(resource));
            Arc::new(made) as Arc<dyn AnyInformer>
        });
        downcast::<K>(informer)
    }

    fn settings<K: Resource + Clone + 'static>(
        &self,
        resource: &ApiResource,
    ) -> InformerSettings<K> {
        let options = &self.options;
        let kind = TypeId::of::<K>();
        let transform = match options.transforms.get(&kind) {
            Some(t) => t.downcast_ref::<TransformFunc<K>>().cloned(),
            None if options.keep_managed_fields => None,
            None => Some(TransformFunc::strip_managed_fields()),
        };
        let representation = match options.representations.get(&kind) {
            Some(r) => r
                .downcast_ref::<CacheRepresentation<K>>()
                .cloned()
                .unwrap_or_default(),
            None if options.compact_built_in => match ObjectCodec::protobuf() {
                Some(codec) => CacheRepresentation::Compact {
                    codec,
                    recently_decoded: DEFAULT_RECENTLY_DECODED,
                },
                None => {
                    warn_no_protobuf_codec(resource);
                    CacheRepresentation::Decoded
                }
            },
            None => CacheRepresentation::Decoded,
        };
        let common = self.common_settings(kind, resource);
        InformerSettings {
            representation,
            namespace: common.namespace,
            tweak: common.tweak,
            shards: common.shards,
            placement: common.placement,
            resync: common.resync,
            transform,
            name: common.name,
        }
    }

    /// The settings of the informer of the type `kind` that do not depend on the type itself
    /// (compiled once, not once per kind).
    fn common_settings(&self, kind: TypeId, resource: &ApiResource) -> CommonSettings {
        let options = &self.options;
        let name = format!(
            "{}/{}",
            resource.group_version().api_version(),
            resource.kind
        );
        CommonSettings {
            namespace: options.namespace.clone(),
            tweak: options.tweak.clone(),
            shards: options.shards.clone(),
            placement: if options.owned.contains(&kind) {
                Placement::ControllerOwner
            } else {
                Placement::Object
            },
            resync: options
                .custom_resync
                .get(&kind)
                .copied()
                .unwrap_or(options.default_resync),
            name: match &options.informer_name {
                Some(prefix) => format!("{prefix}/{name}"),
                None => name,
            },
        }
    }

    /// Starts every informer not started yet, each until `cancel` fires or the factory
    /// shuts down (client-go's `Start` / `StartWithContext`). Idempotent; does nothing after
    /// [`shutdown`](Self::shutdown). Needs a tokio runtime.
    pub fn start(&self, cancel: &CancellationToken) {
        start_informers(&self.informers, &self.shutdown, cancel);
    }

    /// Waits until every started informer has synced, or `cancel` fires (client-go's
    /// `WaitForCacheSyncWithContext`): which synced, by name. Does not poll.
    pub async fn wait_for_cache_sync(&self, cancel: &CancellationToken) -> SyncResult {
        wait_for_started(&self.informers, cancel).await
    }

    /// How many objects each informer made so far holds in its cache now, by informer name.
    /// (A sharded replica reports their total as `kclient_shard_objects_cached`.)
    pub fn cached_objects(&self) -> BTreeMap<String, usize> {
        let informers: Vec<_> = self
            .informers
            .lock()
            .values()
            .filter_map(|s| s.informer.get().cloned())
            .collect();
        informers.iter().map(|i| (i.name(), i.cached())).collect()
    }

    /// Stops every informer and waits until all have stopped (client-go's `Shutdown`); a
    /// later [`start`](Self::start) does nothing.
    pub async fn shutdown(&self) {
        shut_down(&self.informers, &self.shutdown).await;
    }
}

// What the factory does with the informers it made does not depend on its client: these are
// not generic, so they are compiled once, here ("Compiled once" in docs/architecture.md).

/// [`SharedInformerFactory::start`].
fn start_informers(
    informers: &Mutex<HashMap<InformerKey, Slot>>,
    shutdown: &CancellationToken,
    cancel: &CancellationToken,
) {
    if shutdown.is_cancelled() {
        return;
    }
    let mut informers = informers.lock();
    for slot in informers.values_mut().filter(|s| s.task.is_none()) {
        // An informer still being made (by `informer_for` on another thread) is not
        // started: it did not exist when `start` was called.
        let Some(informer) = slot.informer.get() else {
            continue;
        };
        let token = shutdown.child_token();
        let user = cancel.clone();
        let run = informer.run(token.clone());
        slot.task = Some(tokio::spawn(async move {
            let stop = async {
                tokio::select! {
                    _ = user.cancelled() => token.cancel(),
                    _ = token.cancelled() => {}
                }
            };
            tokio::join!(run, stop);
        }));
    }
}

/// [`SharedInformerFactory::wait_for_cache_sync`].
fn wait_for_started<'a>(
    informers: &'a Mutex<HashMap<InformerKey, Slot>>,
    cancel: &'a CancellationToken,
) -> BoxFuture<'a, SyncResult> {
    Box::pin(async move {
        let started: Vec<_> = (informers.lock().values())
            .filter(|s| s.task.is_some())
            .filter_map(|s| s.informer.get().cloned())
            .collect();
        let mut result = SyncResult::default();
        for informer in started {
            let synced = wait_for_cache_sync(cancel, &[informer.synced()]).await;
            result.synced.insert(informer.name(), synced);
        }
        result
    })
}

/// [`SharedInformerFactory::shutdown`].
fn shut_down<'a>(
    informers: &'a Mutex<HashMap<InformerKey, Slot>>,
    shutdown: &'a CancellationToken,
) -> BoxFuture<'a, ()> {
    Box::pin(async move {
        shutdown.cancel();
        let tasks: Vec<_> = (informers.lock().values_mut())
            .filter_map(|s| s.task.take())
            .collect();
        for task in tasks {
            let _ = task.await;
        }
    })
}

fn downcast<K: Resource + Clone + Send + Sync + 'static>(
    informer: &Arc<dyn AnyInformer>,
) -> SharedIndexInformer<K> {
    informer
        .as_any()
        .downcast_ref::<SharedIndexInformer<K>>()
        .expect("an informer key always maps to the informer of its type")
        .clone()
}

/// What the factory would give an informer of `K`: handed to
/// [`SharedInformerFactory::informer_for`]'s constructor. Non-exhaustive: the factory may
/// hand over more in a later version.
#[non_exhaustive]
pub struct InformerSettings<K> {
    /// The factory's namespace, if any.
    pub namespace: Option<String>,
    /// The factory's list-options tweak, if any.
    pub tweak: Option<TweakListOptions>,
    /// The factory's shard, if any (an informer made by hand lists and watches it through a
    /// [`ShardedListWatch`]).
    pub shards: Option<ShardSelector>,
    /// What places `K`'s objects in the shard.
    pub placement: Placement,
    /// `K`'s resync period (custom, else the default).
    pub resync: Duration,
    /// `K`'s transform (the managedFields stripping unless turned off or replaced).
    pub transform: Option<TransformFunc<K>>,
    /// The informer's name.
    pub name: String,
    /// How `K`'s cache holds its objects.
    pub representation: CacheRepresentation<K>,
}

/// The part of [`InformerSettings`] that does not depend on the kind.
struct CommonSettings {
    namespace: Option<String>,
    tweak: Option<TweakListOptions>,
    shards: Option<ShardSelector>,
    placement: Placement,
    resync: Duration,
    name: String,
}

/// Logs that `resource`'s kind is cached decoded, the compact cache asked for having no
/// codec for it.
fn warn_no_protobuf_codec(resource: &ApiResource) {
    tracing::warn!(
        kind = %resource.kind,
        "compact_cache: no protobuf codec for this kind (not built in, its API \
         group not compiled, or kclient-cache without `compact-protobuf`): \
         cached decoded"
    );
}

impl<K> fmt::Debug for InformerSettings<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerSettings")
            .field("namespace", &self.namespace)
            .field("resync", &self.resync)
            .field("transform", &self.transform.is_some())
            .field("name", &self.name)
            .field("representation", &self.representation)
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Clone + 'static> InformerSettings<K> {
    /// The informer options these settings give: the namespace index, the resync period, the
    /// transform, the name and the cache's representation.
    pub fn informer_options(&self) -> SharedIndexInformerOptions<K> {
        SharedIndexInformerOptions::default()
            .name(self.name.clone())
            .resync_period(self.resync)
            .indexers(Indexers::namespace())
            .transform(self.transform.clone())
            .representation(self.representation.clone())
    }
}
