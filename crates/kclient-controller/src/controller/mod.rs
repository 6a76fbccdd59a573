//! [`Controller`]: the builder of a controller and its run (handlers, caches, workers,
//! shutdown).

mod handle;
mod run;

use std::fmt;
use std::sync::Arc;

use kclient_cache::{InformerSynced, SharedIndexInformer, SharedInformerFactory};
use kclient_core::{
    ApiResource, CancellationToken, DynamicListerWatcherFor, GroupResource, ListerWatcherFor,
    ObjectKey, PartialObjectMetadata, Resource,
};
use kclient_tools::events::{EventBroadcaster, EventRecorder};
use kclient_workqueue::rate_limiter::TypedRateLimiter;
use tokio::sync::mpsc;

pub use handle::{ControllerHandle, ControllerStopped};
pub(crate) use run::{Leadership, RunEnv};

use crate::config::ControllerConfig;
use crate::consistency::LastSyncRvGetter;
use crate::error::ControllerError;
use crate::metrics::ControllerMetrics;
use crate::predicate::{Object, Predicate};
use crate::reconciler::Reconciler;
use crate::source::{register_mapped, register_trigger, EventFilter, Filters, OwnerType, Source};

/// Reconciles objects of one type `K`, keyed by namespace and name, on the shared informers
/// of a [`SharedInformerFactory`] (kube-rs's `Controller`, controller-runtime's
/// `builder.ControllerManagedBy`, on client-go's model). Built on a factory over a client `C`
/// (kclient-typed's `Clientset`, or any [`ListerWatcherFor`] each watched type), then
/// [`run`](Self::run) with a [`Reconciler`], or added to a [`Manager`](crate::Manager).
///
/// The pieces are client-go's: the factory's one informer per type (shared with every
/// other controller and handler of the process), event handlers that turn events into keys,
/// a [`PriorityQueue`](kclient_workqueue::PriorityQueue) of keys (controller-runtime's default queue: one entry per key, the
/// sooner of an event and a waiting requeue wins, the initial list and unchanged resyncs at
/// [`LOW_PRIORITY`](crate::LOW_PRIORITY) behind real changes), and workers that read the
/// object from the lister and reconcile it:
///
/// ```text
///  K informer ----add/update/delete------------------------> key of the object -----.
///  O informer (owns)  ---- controller owner reference of kind K --> owner's key ----+--> PriorityQueue -----> N workers --> Reconciler
///  W informer (watches) -- mapper(&W) ----------------------> keys -----------------'       (one key at a time)      (object from the lister)
/// ```
///
/// * [`owns::<O>()`](Self::owns): a change to an `O` whose controller owner reference
///   names a `K` (same group and kind) queues that `K`;
///   [`owns_metadata::<O>()`](Self::owns_metadata) the same, caching only the `O`s' metadata;
/// * [`watches::<W>(mapper)`](Self::watches): a change to a `W` queues the keys `mapper`
///   gives;
/// * [`with_predicate`](Self::with_predicate), [`owns_with`](Self::owns_with),
///   [`watches_with`](Self::watches_with): [`Predicate`]s that filter update events;
/// * [`with_config`](Self::with_config): workers and timeouts ([`ControllerConfig`]);
///   [`rate_limiter`](Self::rate_limiter), [`metrics`](Self::metrics),
///   [`record_events`](Self::record_events).
///
/// Every informer is asked of the factory when the controller is built, so the factory
/// starts them all, and a type watched by several controllers is watched once.
///
/// `K` is a statically typed resource ([`new`](Self::new)), or one known only at run time
/// ([`for_resource`](Self::for_resource): a [`DynamicObject`](kclient_core::DynamicObject)
/// or [`PartialObjectMetadata`] controller, a custom resource's say).
///
/// ```no_run
/// use std::sync::Arc;
/// use std::time::Duration;
/// use k8s_openapi::api::apps::v1::Deployment;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kclient_cache::SharedInformerFactory;
/// use kclient_controller::{Action, Controller, ReconcileContext, Reconciler};
/// use kclient_core::CancellationToken;
/// use kclient_typed::Clientset;
///
/// struct Settings;
///
/// impl Reconciler<Deployment> for Settings {
///     type Error = kclient_typed::Error;
///     async fn reconcile(&self, d: Arc<Deployment>, ctx: &ReconcileContext) -> Result<Action, Self::Error> {
///         // ... make the Deployment's ConfigMap what it should be ...
///         Ok(Action::await_change())
///     }
/// }
///
/// # async fn run(clientset: Clientset) -> Result<(), kclient_controller::ControllerError> {
/// let factory = SharedInformerFactory::new(clientset, Duration::ZERO);
/// let shutdown = CancellationToken::new();
/// Controller::<Deployment, _>::new("settings", &factory)
///     .owns::<ConfigMap>()
///     .run(Settings, shutdown)
///     .await
/// # }
/// ```
pub struct Controller<K, C> {
    name: Arc<str>,
    factory: SharedInformerFactory<C>,
    primary: SharedIndexInformer<K>,
    /// `K` as owner references name it.
    owner: OwnerType,
    predicate: Option<Predicate<K>>,
    event_filter: EventFilter,
    sources: Vec<Source>,
    informers: Vec<(String, InformerSynced)>,
    config: ControllerConfig,
    rate_limiter: Option<Box<dyn TypedRateLimiter<ObjectKey>>>,
    metrics: Option<ControllerMetrics>,
    recorder: Option<EventRecorder>,
    /// Sources added by a [`ControllerHandle`] (its sender's clones), for the run.
    late_sources: mpsc::UnboundedReceiver<WatchSource>,
    late_sender: mpsc::UnboundedSender<WatchSource>,
    /// The stores of the primary, owned and watched types, for the stale-cache checks.
    consistency_stores: Vec<(GroupResource, Arc<dyn LastSyncRvGetter>)>,
    /// Whether reconciles wait for the caches to catch up with recorded writes.
    stale_consistency: bool,
}

impl<K, C> fmt::Debug for Controller<K, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field(
                "informers",
                &self.informers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<K, C> Controller<K, C>
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Default,
    C: ListerWatcherFor<K> + Send + Sync + 'static,
{
    /// A controller named `name` (its queue's name, the `controller` label of its metrics,
    /// the component of its Events) reconciling the `K`s of `factory`'s informer.
    pub fn new(name: impl Into<String>, factory: &SharedInformerFactory<C>) -> Self {
        let dt = K::DynamicType::default();
        let owner = OwnerType::of::<K>(&dt);
        let resource = group_resource(&K::api_resource(&dt));
        Self::on(
            name.into(),
            factory,
            factory.informer::<K>(),
            owner,
            resource,
        )
    }
}

impl<K, C> Controller<K, C>
where
    K: Resource<DynamicType = ApiResource> + Clone + Send + Sync + 'static,
    C: DynamicListerWatcherFor<K> + Send + Sync + 'static,
{
    /// A controller named `name` reconciling the objects of a resource known only at run
    /// time, `resource` (from discovery's `RestMapper`, or a custom resource's definition),
    /// on `factory`'s informer of it (kube-rs's `Controller::new_with` with its dynamic
    /// type): `K` is [`DynamicObject`](kclient_core::DynamicObject) for whole objects, or
    /// [`PartialObjectMetadata`] for a controller that needs only their metadata
    /// (controller-runtime's `For` with `OnlyMetadata`). A factory over kclient-typed's
    /// `Clientset` serves both, besides its typed informers.
    ///
    /// Owner references name the resource by `resource`'s group and kind, so
    /// [`owns`](Self::owns) maps the objects a `K` controls to it as for a typed primary.
    ///
    /// ```no_run
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kclient_cache::SharedInformerFactory;
    /// use kclient_controller::{Action, Controller, ReconcileContext, Reconciler};
    /// use kclient_core::{ApiResource, CancellationToken, DynamicObject, GroupVersionKind};
    /// use kclient_typed::Clientset;
    ///
    /// struct CronTabs;
    ///
    /// impl Reconciler<DynamicObject> for CronTabs {
    ///     type Error = kclient_typed::Error;
    ///     async fn reconcile(&self, ct: Arc<DynamicObject>, ctx: &ReconcileContext) -> Result<Action, Self::Error> {
    ///         println!("{} runs at {}", ctx.key(), ct.data["spec"]["cronSpec"]);
    ///         Ok(Action::await_change())
    ///     }
    /// }
    ///
    /// # async fn run(clientset: Clientset) -> Result<(), kclient_controller::ControllerError> {
    /// let crontabs = ApiResource::from_gvk_with_plural(
    ///     &GroupVersionKind::new("stable.example.com", "v1", "CronTab"),
    ///     "crontabs",
    ///     true,
    /// );
    /// let factory = SharedInformerFactory::new(clientset, Duration::ZERO);
    /// Controller::<DynamicObject, _>::for_resource("crontabs", &factory, &crontabs)
    ///     .owns::<ConfigMap>()
    ///     .run(CronTabs, CancellationToken::new())
    ///     .await
    /// # }
    /// ```
    pub fn for_resource(
        name: impl Into<String>,
        factory: &SharedInformerFactory<C>,
        resource: &ApiResource,
    ) -> Self {
        let informer = factory.for_resource::<K>(resource).into_informer();
        Self::on(
            name.into(),
            factory,
            informer,
            OwnerType::of::<K>(resource),
            group_resource(resource),
        )
    }
}

impl<K, C> Controller<K, C>
where
    K: Resource + Clone + Send + Sync + 'static,
    C: Send + Sync + 'static,
{
    /// A controller of the objects of `primary`, which owner references name as `owner`.
    fn on(
        name: String,
        factory: &SharedInformerFactory<C>,
        primary: SharedIndexInformer<K>,
        owner: OwnerType,
        resource: GroupResource,
    ) -> Self {
        let (late_sender, late_sources) = mpsc::unbounded_channel();
        let primary_store: Arc<dyn LastSyncRvGetter> = Arc::new(primary.get_indexer().clone());
        Self {
            consistency_stores: vec![(resource, primary_store)],
            stale_consistency: true,
            name: name.into(),
            factory: factory.clone(),
            informers: vec![(primary.name().to_owned(), primary.synced())],
            primary,
            owner,
            predicate: None,
            event_filter: None,
            sources: Vec::new(),
            config: ControllerConfig::default(),
            rate_limiter: None,
            metrics: None,
            recorder: None,
            late_sources,
            late_sender,
        }
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The shared informer of `K` (its lister reads what the reconciles read).
    pub fn informer(&self) -> &SharedIndexInformer<K> {
        &self.primary
    }

    /// Workers and timeouts (the default: one worker, controller-runtime's timeouts).
    #[must_use]
    pub fn with_config(mut self, config: ControllerConfig) -> Self {
        self.config = config;
        self
    }

    /// Filters the events of `K` that queue a reconcile (controller-runtime's `For` with
    /// `WithPredicates`); several predicates must all pass. The ready-made update filters
    /// ([`generation_changed`](crate::predicate::generation_changed) …) let adds and deletes
    /// pass.
    #[must_use]
    pub fn with_predicate(mut self, predicate: Predicate<K>) -> Self {
        self.predicate = Some(match self.predicate.take() {
            Some(earlier) => earlier.and(predicate),
            None => predicate,
        });
        self
    }

    /// Filters the events of every type this controller watches — `K`, owned and watched
    /// types — by their metadata (controller-runtime's `WithEventFilter`); several filters
    /// must all pass, and each source's own predicates apply too.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use k8s_openapi::api::apps::v1::Deployment;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kclient_cache::SharedInformerFactory;
    /// use kclient_controller::predicate::label_selector;
    /// use kclient_controller::Controller;
    /// # fn build(clientset: kclient_typed::Clientset) {
    /// # let factory = SharedInformerFactory::new(clientset, Duration::ZERO);
    /// // Only objects of this shard's tenant, whatever their type.
    /// let controller = Controller::<Deployment, _>::new("web", &factory)
    ///     .owns::<ConfigMap>()
    ///     .with_event_filter(label_selector("tenant=blue".parse().unwrap()));
    /// # let _ = controller; }
    /// ```
    #[must_use]
    pub fn with_event_filter(mut self, filter: Predicate<dyn Object>) -> Self {
        self.event_filter = Some(match self.event_filter.take() {
            Some(earlier) => earlier.and(filter),
            None => filter,
        });
        self
    }

    /// Reconciles the owner when an object it controls changes: an `O` whose controller
    /// owner reference (`controller: true`) names a `K` by group and kind (any version)
    /// queues that `K` — on the `O`'s add, update (the owner before and after) and delete.
    /// Set the reference with [`set_controller_reference`](crate::owner::set_controller_reference).
    #[must_use]
    pub fn owns<O>(self) -> Self
    where
        O: Resource + Clone + Send + Sync + 'static,
        O::DynamicType: Default,
        C: ListerWatcherFor<O>,
    {
        self.owns_with(OwnsOptions::new())
    }

    /// [`owns`](Self::owns) as `options` say: the events of `O` filtered by a predicate
    /// (a [`Predicate`] converts into options), or every owner reference to a `K` matched
    /// rather than the controller's only ([`OwnsOptions::match_every_owner`]).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use k8s_openapi::api::apps::v1::Deployment;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kclient_cache::SharedInformerFactory;
    /// use kclient_controller::predicate::generation_changed;
    /// use kclient_controller::{Controller, OwnsOptions};
    /// # fn build(clientset: kclient_typed::Clientset) {
    /// # let factory = SharedInformerFactory::new(clientset, Duration::ZERO);
    /// let controller = Controller::<Deployment, _>::new("web", &factory)
    ///     .owns_with::<ConfigMap>(generation_changed())
    ///     .owns_with::<k8s_openapi::api::core::v1::Secret>(OwnsOptions::new().match_every_owner());
    /// # let _ = controller; }
    /// ```
    #[must_use]
    pub fn owns_with<O>(self, options: impl Into<OwnsOptions<O>>) -> Self
    where
        O: Resource + Clone + Send + Sync + 'static,
        O::DynamicType: Default,
        C: ListerWatcherFor<O>,
    {
        let informer = self.factory.informer::<O>();
        let resource = group_resource(&O::api_resource(&O::DynamicType::default()));
        self.owned_on(informer, resource, options.into())
    }

    /// [`owns`](Self::owns), caching only the metadata of the `O`s: the owned objects'
    /// [`PartialObjectMetadata`] — names, labels, annotations, owner references,
    /// resourceVersions — from the factory's metadata informer of `O`'s resource (shared
    /// with every other metadata reader of it on this factory), never their spec, data or
    /// status (controller-runtime's `Owns(&O{}, builder.OnlyMetadata)`). The factory's client
    /// must make metadata lister-watchers ([`DynamicListerWatcherFor`]`<PartialObjectMetadata>`):
    /// kclient-typed's `Clientset` does.
    ///
    /// The trade-off: the cache holds a few hundred bytes per owned object instead of the
    /// whole object, and the API server sends (and kclient decodes) only that, so the owned
    /// informer syncs sooner and costs less — but a reconcile can read only the owned objects'
    /// metadata from the cache (the informer's lister, by namespace and name). Use it when
    /// the reconcile does not read what the owned objects hold (it writes them whole with a
    /// server-side apply, or only needs to know they exist and who owns them); use
    /// [`owns`](Self::owns) when it compares their content with what it wants. An owned
    /// type that is also cached whole on the same factory (another controller's `owns`, a
    /// lister) is then watched twice, whole and as metadata.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use k8s_openapi::api::apps::v1::Deployment;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kclient_cache::SharedInformerFactory;
    /// # use kclient_controller::Controller;
    /// # fn build(clientset: kclient_typed::Clientset) {
    /// let factory = SharedInformerFactory::new(clientset, Duration::ZERO);
    /// let controller = Controller::<Deployment, _>::new("settings", &factory)
    ///     .owns_metadata::<ConfigMap>();
    /// # let _ = controller; }
    /// ```
    #[must_use]
    pub fn owns_metadata<O>(self) -> Self
    where
        O: Resource,
        O::DynamicType: Default,
        C: DynamicListerWatcherFor<PartialObjectMetadata>,
    {
        self.owns_metadata_with::<O>(OwnsOptions::new())
    }

    /// [`owns_metadata`](Self::owns_metadata) as `options` say (see
    /// [`owns_with`](Self::owns_with)).
    #[must_use]
    pub fn owns_metadata_with<O>(
        self,
        options: impl Into<OwnsOptions<PartialObjectMetadata>>,
    ) -> Self
    where
        O: Resource,
        O::DynamicType: Default,
        C: DynamicListerWatcherFor<PartialObjectMetadata>,
    {
        let resource = O::api_resource(&O::DynamicType::default());
        let informer = self
            .factory
            .for_resource::<PartialObjectMetadata>(&resource)
            .into_informer();
        self.owned_on(informer, group_resource(&resource), options.into())
    }

    /// Queues the owners that are `K`s of each object of `informer`: its controller, or
    /// every one.
    fn owned_on<O>(
        self,
        informer: SharedIndexInformer<O>,
        resource: GroupResource,
        options: OwnsOptions<O>,
    ) -> Self
    where
        O: Resource + Clone + Send + Sync + 'static,
    {
        let owner = self.owner.clone();
        let OwnsOptions {
            predicate,
            match_every_owner,
        } = options;
        let watch = if match_every_owner {
            let mapper = move |obj: &O| owner.owner_keys(obj);
            WatchSource::mapped(&self.name, &informer, resource, mapper, predicate)
        } else {
            let mapper = move |obj: &O| owner.controller_key(obj);
            WatchSource::mapped(&self.name, &informer, resource, mapper, predicate)
        };
        self.watching(&informer, watch)
    }

    /// Reconciles the keys `mapper` gives for a changed `W` (controller-runtime's
    /// `Watches` with `EnqueueRequestsFromMapFunc`, kube-rs's `watches`): on the `W`'s add,
    /// update (the keys of the object before and after) and delete (of its last known
    /// state). `mapper` runs on the informer's handler task: keep it quick (read listers,
    /// never call the API server).
    #[must_use]
    pub fn watches<W, I>(self, mapper: impl Fn(&W) -> I + Send + Sync + 'static) -> Self
    where
        W: Resource + Clone + Send + Sync + 'static,
        W::DynamicType: Default,
        C: ListerWatcherFor<W>,
        I: IntoIterator<Item = ObjectKey>,
    {
        self.watches_with(mapper, None)
    }

    /// [`watches`](Self::watches), with the updates of `W` filtered by `predicate` (a
    /// [`Predicate`], or `None` for none).
    #[must_use]
    pub fn watches_with<W, I>(
        self,
        mapper: impl Fn(&W) -> I + Send + Sync + 'static,
        predicate: impl Into<Option<Predicate<W>>>,
    ) -> Self
    where
        W: Resource + Clone + Send + Sync + 'static,
        W::DynamicType: Default,
        C: ListerWatcherFor<W>,
        I: IntoIterator<Item = ObjectKey>,
    {
        let informer = self.factory.informer::<W>();
        let resource = group_resource(&W::api_resource(&W::DynamicType::default()));
        let watch = WatchSource::mapped(&self.name, &informer, resource, mapper, predicate.into());
        self.watching(&informer, watch)
    }

    /// Adds `watch`, of `informer`, whose sync the controller waits for.
    fn watching<W>(mut self, informer: &SharedIndexInformer<W>, watch: WatchSource) -> Self
    where
        W: Resource + Clone + Send + Sync + 'static,
    {
        self.informers
            .push((informer.name().to_owned(), informer.synced()));
        self.consistency_stores.push((watch.resource, watch.store));
        self.sources.push(watch.source);
        self
    }

    /// Reconciles the key of each item of `trigger`, a stream that is not an informer — a
    /// channel of keys from elsewhere in the program, say (kube-rs's `reconcile_on`,
    /// controller-runtime's `source.Channel`). A key whose object is not in the cache is not
    /// reconciled (unless the reconciler handles deletions). Keys queued before the caches
    /// synced wait for them.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use k8s_openapi::api::apps::v1::Deployment;
    /// # use kclient_cache::SharedInformerFactory;
    /// # use kclient_controller::Controller;
    /// # use kclient_core::ObjectKey;
    /// # fn build(clientset: kclient_typed::Clientset) {
    /// # let factory = SharedInformerFactory::new(clientset, Duration::ZERO);
    /// let (wake, keys) = futures::channel::mpsc::unbounded::<ObjectKey>();
    /// let controller = Controller::<Deployment, _>::new("web", &factory).reconcile_on(keys);
    /// // Elsewhere: an external system changed; reconcile what depends on it.
    /// wake.unbounded_send(ObjectKey::namespaced("prod", "web")).unwrap();
    /// # let _ = controller; }
    /// ```
    #[must_use]
    pub fn reconcile_on<S>(mut self, trigger: S) -> Self
    where
        S: futures::Stream<Item = ObjectKey> + Send + 'static,
    {
        self.sources.push(Box::new(move |queue, _| {
            Ok(register_trigger(trigger, queue, |key| vec![key]))
        }));
        self
    }

    /// Reconciles every object in the cache on each item of `trigger` (kube-rs's
    /// `reconcile_all_on`): a configuration all objects depend on changed, a timer.
    #[must_use]
    pub fn reconcile_all_on<S>(mut self, trigger: S) -> Self
    where
        S: futures::Stream<Item = ()> + Send + 'static,
    {
        let cache = self.primary.get_indexer().clone();
        self.sources.push(Box::new(move |queue, _| {
            Ok(register_trigger(trigger, queue, move |()| {
                (cache.list_keys().iter())
                    .filter_map(|key| key.parse::<ObjectKey>().ok())
                    .collect()
            }))
        }));
        self
    }

    /// The rate limiter of the controller's queue: how long a key waits after
    /// [`Action::requeue_rate_limited`](crate::Action::requeue_rate_limited) (the default,
    /// client-go's `default_controller_rate_limiter`: per-key exponential backoff from 5 ms
    /// to 1000 s, and 10 qps / burst 100 overall).
    #[must_use]
    pub fn rate_limiter(mut self, limiter: impl TypedRateLimiter<ObjectKey> + 'static) -> Self {
        self.rate_limiter = Some(Box::new(limiter));
        self
    }

    /// Reports controller-runtime's controller and workqueue metrics to `metrics`' registry.
    #[must_use]
    pub fn metrics(mut self, metrics: ControllerMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Gives the reconciles an Event recorder bound to this controller (its name is the
    /// Events' source component): [`ReconcileContext::recorder`](crate::ReconcileContext::recorder).
    #[must_use]
    pub fn record_events(mut self, broadcaster: &EventBroadcaster) -> Self {
        self.recorder = Some(broadcaster.new_recorder(&self.name, ""));
        self
    }

    /// Whether a reconcile first waits for the caches to catch up with the writes the
    /// reconciler recorded for its key ([`ReconcileContext::wrote`](crate::ReconcileContext::wrote);
    /// KEP-5647's stale-controller handling, see the crate docs' "Stale caches" section). On
    /// by default, as kube-controller-manager's `StaleControllerConsistency*` gates are in
    /// 1.37 (beta, default on); it changes nothing for a reconciler that records no writes.
    /// `false` turns the checks off (the gates' off position): recorded writes are ignored.
    #[must_use]
    pub fn stale_controller_consistency(mut self, enabled: bool) -> Self {
        self.stale_consistency = enabled;
        self
    }

    pub(crate) fn has_metrics(&self) -> bool {
        self.metrics.is_some()
    }

    pub(crate) fn has_recorder(&self) -> bool {
        self.recorder.is_some()
    }

    /// The controller's configuration.
    pub(crate) fn config(&self) -> &ControllerConfig {
        &self.config
    }

    /// The informers this controller reads, by name, and their sync handles.
    pub(crate) fn informer_syncs(&self) -> &[(String, InformerSynced)] {
        &self.informers
    }

    /// Runs the controller until `shutdown` fires: starts the factory's informers (all of
    /// them, for every controller built on it; starting is idempotent, and they stop when
    /// `shutdown` fires), registers the controller's handlers, waits for the caches
    /// ([`ControllerConfig::cache_sync_timeout`]), and runs [`ControllerConfig::workers`] workers. When
    /// `shutdown` fires no new reconcile starts, and the ones in flight get
    /// [`ControllerConfig::graceful_shutdown_timeout`] to finish.
    ///
    /// Runs several controllers, leader election, probes and metrics: see
    /// [`Manager`](crate::Manager).
    pub async fn run<R: Reconciler<K>>(
        self,
        reconciler: R,
        shutdown: CancellationToken,
    ) -> Result<(), ControllerError> {
        self.factory.start(&shutdown);
        self.run_in(reconciler, RunEnv::standalone(shutdown)).await
    }
}

/// A watch of another informer's objects, mapped to the keys to reconcile: its handler,
/// and the store the stale-cache checks read for its resource. The builder adds its parts to
/// the controller; a [`ControllerHandle`] sends it to the running controller.
pub(crate) struct WatchSource {
    pub(crate) source: Source,
    pub(crate) resource: GroupResource,
    pub(crate) store: Arc<dyn LastSyncRvGetter>,
}

impl WatchSource {
    /// The watch queueing the keys `mapper` gives for each object of `informer` (of
    /// `resource`) whose event passes `predicate`, as a handler named after `controller`
    /// and the informer.
    fn mapped<W, I>(
        controller: &str,
        informer: &SharedIndexInformer<W>,
        resource: GroupResource,
        mapper: impl Fn(&W) -> I + Send + Sync + 'static,
        predicate: Option<Predicate<W>>,
    ) -> Self
    where
        W: Resource + Clone + Send + Sync + 'static,
        I: IntoIterator<Item = ObjectKey>,
    {
        let handler_name = format!("{controller}/{}", informer.name());
        let store = Arc::new(informer.get_indexer().clone());
        let informer = informer.clone();
        let source: Source = Box::new(move |queue, event_filter| {
            let filters = Filters::new(predicate, event_filter);
            register_mapped(&informer, handler_name, queue, mapper, filters)
        });
        WatchSource {
            source,
            resource,
            store,
        }
    }
}

/// The group-resource the consistency checks know a resource by.
fn group_resource(resource: &ApiResource) -> GroupResource {
    GroupResource::new(resource.group.clone(), resource.plural.clone())
}

/// How [`Controller::owns_with`] maps an owned `O` to the `K`s to reconcile
/// (controller-runtime's `Owns` options).
#[derive(Debug)]
pub struct OwnsOptions<O> {
    predicate: Option<Predicate<O>>,
    match_every_owner: bool,
}

impl<O> Default for OwnsOptions<O> {
    fn default() -> Self {
        Self {
            predicate: None,
            match_every_owner: false,
        }
    }
}

impl<O: 'static> OwnsOptions<O> {
    /// The controller owner only, every event.
    pub fn new() -> Self {
        Self::default()
    }

    /// Filters the events of `O` by `predicate` (several must all pass).
    #[must_use]
    pub fn predicate(mut self, predicate: Predicate<O>) -> Self {
        self.predicate = Some(match self.predicate.take() {
            Some(earlier) => earlier.and(predicate),
            None => predicate,
        });
        self
    }

    /// Queues every owner named by the object's owner references that is a `K` (group and
    /// kind), not only its controller (controller-runtime's `builder.MatchEveryOwner`).
    #[must_use]
    pub fn match_every_owner(mut self) -> Self {
        self.match_every_owner = true;
        self
    }
}

impl<O: 'static> From<Predicate<O>> for OwnsOptions<O> {
    fn from(predicate: Predicate<O>) -> Self {
        Self::new().predicate(predicate)
    }
}
