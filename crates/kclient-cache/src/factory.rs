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
//! `metadatainformer`); a test double can implement either. The generated typed accessors
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
//! Unlike client-go, the factory strips `metadata.managedFields` from cached objects by
//! default (most controllers never read them, and they are a quarter of a Pod's memory):
//! [`keep_managed_fields`](SharedInformerFactory::keep_managed_fields) turns that off, and a
//! transform set for a type replaces it for that type.
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
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kclient_core::{
    ApiResource, CancellationToken, DynamicListerWatcherFor, ListerWatcherFor, Resource,
    TweakListOptions,
};
#[cfg(doc)]
use kclient_core::{DynamicObject, PartialObjectMetadata};
use parking_lot::Mutex;
use tokio::task::JoinHandle;

use crate::index::Indexers;
use crate::lister::Lister;
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

    fn run(&self, cancel: CancellationToken) -> futures::future::BoxFuture<'static, ()> {
        let informer = self.clone();
        Box::pin(async move { informer.run(cancel).await })
    }
}

struct Entry {
    informer: Arc<dyn AnyInformer>,
    task: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Options {
    namespace: Option<String>,
    tweak: Option<TweakListOptions>,
    default_resync: Duration,
    custom_resync: HashMap<TypeId, Duration>,
    transforms: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    keep_managed_fields: bool,
    informer_name: Option<String>,
}

/// One shared informer per resource type; see the [module docs](self). Cheap to clone:
/// clones share the informers.
pub struct SharedInformerFactory<C> {
    client: Arc<C>,
    options: Arc<Mutex<Options>>,
    informers: Arc<Mutex<HashMap<InformerKey, Entry>>>,
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
        let options = self.options.lock();
        f.debug_struct("SharedInformerFactory")
            .field("namespace", &options.namespace)
            .field("default_resync", &options.default_resync)
            .field(
                "informers",
                &informers
                    .values()
                    .map(|e| e.informer.name())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl<C: Send + Sync + 'static> SharedInformerFactory<C> {
    /// A factory over `client` whose informers resync every `default_resync` (zero never)
    /// (client-go's `NewSharedInformerFactory`).
    pub fn new(client: C, default_resync: Duration) -> Self {
        Self {
            client: Arc::new(client),
            options: Arc::new(Mutex::new(Options {
                default_resync,
                ..Options::default()
            })),
            informers: Arc::new(Mutex::new(HashMap::new())),
            shutdown: CancellationToken::new(),
        }
    }

    /// Watches only `namespace` (client-go's `WithNamespace`); cluster-scoped resources are
    /// unaffected. Set it before asking for informers.
    pub fn namespace(self, namespace: impl Into<String>) -> Self {
        self.options.lock().namespace = Some(namespace.into()).filter(|n| !n.is_empty());
        self
    }

    /// Adjusts the options of every list and watch, typically with selectors (client-go's
    /// `WithTweakListOptions`).
    pub fn tweak_list_options(
        self,
        tweak: impl Fn(&mut kclient_core::ListOptions) + Send + Sync + 'static,
    ) -> Self {
        self.options.lock().tweak = Some(Arc::new(tweak));
        self
    }

    /// The resync period of `K`'s informer (client-go's `WithCustomResyncConfig`).
    pub fn custom_resync<K: 'static>(self, resync: Duration) -> Self {
        self.options
            .lock()
            .custom_resync
            .insert(TypeId::of::<K>(), resync);
        self
    }

    /// The transform of `K`'s informer, instead of the default managedFields stripping
    /// (client-go's `WithTransform`, per type).
    pub fn transform<K: Send + Sync + 'static>(self, transform: TransformFunc<K>) -> Self {
        self.options
            .lock()
            .transforms
            .insert(TypeId::of::<K>(), Box::new(transform));
        self
    }

    /// Keeps `metadata.managedFields` in cached objects (the factory strips them by default).
    pub fn keep_managed_fields(self) -> Self {
        self.options.lock().keep_managed_fields = true;
        self
    }

    /// Prefixes every informer's name in logs and metrics (client-go's `WithInformerName`).
    pub fn informer_name(self, name: impl Into<String>) -> Self {
        self.options.lock().informer_name = Some(name.into());
        self
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
    /// runs under the factory's lock: it must not call back into the factory.
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

    /// The informer of any resource, made on first request (client-go's `ForResource` of
    /// `dynamicinformer` and `metadatainformer`), with the namespace index. Its objects are
    /// what the client lists: [`DynamicObject`]s from a `DynamicClient`,
    /// [`PartialObjectMetadata`] from a `MetadataClient`. Asking again for the same
    /// group/version/resource gives the same informer.
    pub fn for_resource<K>(&self, resource: &ApiResource) -> SharedIndexInformer<K>
    where
        K: Resource<DynamicType = ApiResource> + Clone + Send + Sync + 'static,
        C: DynamicListerWatcherFor<K>,
    {
        let key = InformerKey::Dynamic(TypeId::of::<K>(), resource.gvr().to_string());
        self.get_or_make(key, resource, |client, settings| {
            let lw = client.dynamic_lister_watcher(
                resource,
                settings.namespace.as_deref(),
                settings.tweak.clone(),
            );
            SharedIndexInformer::new_with(lw, settings.informer_options(), resource)
        })
    }

    /// The informer under `key`, made by `make` with `resource`'s settings the first time.
    fn get_or_make<K: Resource + Clone + Send + Sync + 'static>(
        &self,
        key: InformerKey,
        resource: &ApiResource,
        make: impl FnOnce(&C, &InformerSettings<K>) -> SharedIndexInformer<K>,
    ) -> SharedIndexInformer<K> {
        let mut informers = self.informers.lock();
        if let Some(found) = informers.get(&key) {
            return downcast::<K>(found);
        }
        let informer = make(&self.client, &self.settings::<K>(resource));
        informers.insert(
            key,
            Entry {
                informer: Arc::new(informer.clone()),
                task: None,
            },
        );
        informer
    }

    fn settings<K: Resource + Clone + 'static>(
        &self,
        resource: &ApiResource,
    ) -> InformerSettings<K> {
        let options = self.options.lock();
        let transform = match options.transforms.get(&TypeId::of::<K>()) {
            Some(t) => t.downcast_ref::<TransformFunc<K>>().cloned(),
            None if options.keep_managed_fields => None,
            None => Some(TransformFunc::strip_managed_fields()),
        };
        let kind = format!(
            "{}/{}",
            resource.group_version().api_version(),
            resource.kind
        );
        InformerSettings {
            namespace: options.namespace.clone(),
            tweak: options.tweak.clone(),
            resync: options
                .custom_resync
                .get(&TypeId::of::<K>())
                .copied()
                .unwrap_or(options.default_resync),
            transform,
            name: match &options.informer_name {
                Some(prefix) => format!("{prefix}/{kind}"),
                None => kind,
            },
        }
    }

    /// Starts every informer not started yet, each until `cancel` fires or the factory
    /// shuts down (client-go's `Start` / `StartWithContext`). Idempotent; does nothing after
    /// [`shutdown`](Self::shutdown). Needs a tokio runtime.
    pub fn start(&self, cancel: &CancellationToken) {
        if self.shutdown.is_cancelled() {
            return;
        }
        let mut informers = self.informers.lock();
        for entry in informers.values_mut().filter(|e| e.task.is_none()) {
            let token = self.shutdown.child_token();
            let user = cancel.clone();
            let run = entry.informer.run(token.clone());
            entry.task = Some(tokio::spawn(async move {
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

    /// Waits until every started informer has synced, or `cancel` fires (client-go's
    /// `WaitForCacheSyncWithContext`): which synced, by name. Does not poll.
    pub async fn wait_for_cache_sync(&self, cancel: &CancellationToken) -> SyncResult {
        let started: Vec<_> = self
            .informers
            .lock()
            .values()
            .filter(|e| e.task.is_some())
            .map(|e| Arc::clone(&e.informer))
            .collect();
        let mut result = SyncResult::default();
        for informer in started {
            let synced = wait_for_cache_sync(cancel, &[informer.synced()]).await;
            result.synced.insert(informer.name(), synced);
        }
        result
    }

    /// Stops every informer and waits until all have stopped (client-go's `Shutdown`); a
    /// later [`start`](Self::start) does nothing.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        let tasks: Vec<_> = self
            .informers
            .lock()
            .values_mut()
            .filter_map(|e| e.task.take())
            .collect();
        for task in tasks {
            let _ = task.await;
        }
    }
}

fn downcast<K: Resource + Clone + Send + Sync + 'static>(entry: &Entry) -> SharedIndexInformer<K> {
    entry
        .informer
        .as_any()
        .downcast_ref::<SharedIndexInformer<K>>()
        .expect("an informer key always maps to the informer of its type")
        .clone()
}

/// What the factory would give an informer of `K`: handed to
/// [`SharedInformerFactory::informer_for`]'s constructor.
pub struct InformerSettings<K> {
    /// The factory's namespace, if any.
    pub namespace: Option<String>,
    /// The factory's list-options tweak, if any.
    pub tweak: Option<TweakListOptions>,
    /// `K`'s resync period (custom, else the default).
    pub resync: Duration,
    /// `K`'s transform (the managedFields stripping unless turned off or replaced).
    pub transform: Option<TransformFunc<K>>,
    /// The informer's name.
    pub name: String,
}

impl<K> fmt::Debug for InformerSettings<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerSettings")
            .field("namespace", &self.namespace)
            .field("resync", &self.resync)
            .field("transform", &self.transform.is_some())
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Clone + 'static> InformerSettings<K> {
    /// The informer options these settings give: the namespace index, the resync period, the
    /// transform and the name.
    pub fn informer_options(&self) -> SharedIndexInformerOptions<K> {
        SharedIndexInformerOptions {
            name: Some(self.name.clone()),
            resync_period: self.resync,
            indexers: Indexers::namespace(),
            transform: self.transform.clone(),
            ..SharedIndexInformerOptions::default()
        }
    }
}
