//! The shared informer (client-go's `SharedIndexInformer`): one reflector and one indexed
//! cache per resource, fanned out to any number of handlers.
//!
//! ```text
//!  Reflector --> RealFifo / DeltaFifo --pop--> indexer updated, then notifications
//!                                                 |-> listener 1 queue -> handler 1 task
//!                                                 '-> listener n queue -> handler n task
//! ```
//!
//! * The cache is always updated before a handler hears of the change, and each handler
//!   sees its notifications in order, one at a time, on its own task: a slow handler
//!   delays only itself, and no handler ever runs under a lock of the informer's.
//! * A handler added to a running informer first receives every cached object as an add
//!   (`is_in_initial_list` true) — registered and replayed while distribution is paused, so
//!   it misses nothing and sees nothing twice. Adding a handler to a stopped informer is an
//!   error.
//! * Resync: each handler may ask for its own period (at least one second; a handler added
//!   after start cannot resync faster than the informer checks). A resync notification (an
//!   update with the same resourceVersion) goes only to the handlers that are due.
//! * [`has_synced`](SharedIndexInformer::has_synced) is true once the first list has been
//!   applied to the cache; a registration's
//!   [`has_synced`](ResourceEventHandlerRegistration::has_synced) once its handler has also
//!   handled every object of that list.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_cache::testing::FakeControllerSource;
//! use kclient_cache::{ResourceEventHandlerFuncs, SharedIndexInformer, SharedIndexInformerOptions};
//! use kclient_core::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let source = FakeControllerSource::new();
//! let mut cm = ConfigMap::default();
//! cm.metadata.namespace = Some("default".into());
//! cm.metadata.name = Some("settings".into());
//! source.add(cm);
//!
//! let informer = SharedIndexInformer::new(source, SharedIndexInformerOptions::default());
//! let registration = informer
//!     .add_event_handler(ResourceEventHandlerFuncs::new().add_func(|cm: &Arc<ConfigMap>, initial| {
//!         println!("{:?} (initial list: {initial})", cm.metadata.name);
//!     }))
//!     .unwrap();
//!
//! let cancel = CancellationToken::new();
//! let run = tokio::spawn({
//!     let (informer, cancel) = (informer.clone(), cancel.clone());
//!     async move { informer.run(cancel).await }
//! });
//! assert!(kclient_cache::wait_for_cache_sync(&cancel, &[informer.synced(), registration.synced()]).await);
//! assert!(informer.lister().namespaced("default").get("settings").is_ok());
//! cancel.cancel();
//! run.await.unwrap();
//! assert!(informer.is_stopped());
//! # }
//! ```

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use kclient_core::{CancellationToken, ListerWatcher, Resource, ResourceExt};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::announced::{Announced, Queued};
use crate::controller::{InformerController, InformerControllerConfig, ProcessFunc, WaitBeforePop};
use crate::delta::Delta;
#[cfg(feature = "informer-delta-fifo")]
use crate::delta_fifo::{DeltaFifo, DeltaFifoOptions};
use crate::handler::ResourceEventHandler;
use crate::index::{IndexError, Indexers};
use crate::indexer::Indexer;
use crate::informer_queue::{FifoKind, InformerQueue};
use crate::key_func::KeyFunc;
use crate::listener::{kind_handler, Listener};
use crate::lister::Lister;
use crate::metrics::{CacheMetrics, InformerMetrics};
use crate::process_deltas::{process_deltas_for, Notification};
use crate::processor::{determine_resync_period, Processor};
use crate::queue::{ProcessError, Queue};
use crate::real_fifo::{RealFifo, RealFifoOptions, DEFAULT_BATCH_SIZE};
use crate::reflector::{ReflectorOptions, WatchError, WatchErrorHandler};
use crate::representation::CacheRepresentation;
use crate::thread_safe_store::ThreadSafeStore;
use crate::transform::TransformFunc;
use crate::wait::{InformerSynced, Synced};

/// The shortest resync period a handler can have (client-go's `minimumResyncPeriod`).
pub const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// Why the informer refused a change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InformerError {
    /// The informer has started: it can no longer take this change.
    #[error("informer has already started")]
    AlreadyStarted,
    /// The informer has stopped: a handler added now would never be called.
    #[error("handler {handler} was not added to shared informer because it has stopped already")]
    Stopped {
        /// The handler's name.
        handler: String,
    },
    /// The informer has stopped: indexers added now would never be kept up to date.
    #[error("indexer was not added because it has stopped already")]
    IndexersAfterStop,
    /// The indexer refused the indexers.
    #[error(transparent)]
    Index(#[from] IndexError),
}

/// How a [`SharedIndexInformer`] is built, fixed when it is made (as the factory's options
/// are). Non-exhaustive, so that an option added later is not a breaking change: start from
/// [`Default`] and set what differs, with the setters
/// (`SharedIndexInformerOptions::default().resync_period(d).indexers(i)`) or by assigning
/// the public fields.
#[non_exhaustive]
pub struct SharedIndexInformerOptions<K> {
    /// The informer's name in logs and metrics (client-go's `WithInformerName`); the
    /// resource's `apiVersion/Kind` when `None`.
    pub name: Option<String>,
    /// The resync period of handlers that do not give their own (client-go's
    /// `defaultEventHandlerResyncPeriod`); zero never resyncs.
    pub resync_period: Duration,
    /// The cache's indices; the namespace index is usual.
    pub indexers: Indexers<K>,
    /// Which FIFO sits between the reflector and the cache.
    pub fifo: FifoKind,
    /// Applied to every object before it is queued and cached (client-go's `SetTransform`).
    /// A transform must be idempotent (a relist can hand it objects it has seen); see
    /// [`TransformFunc::strip_managed_fields`].
    pub transform: Option<TransformFunc<K>>,
    /// Called with the error of each failed reflector run (client-go's
    /// `SetWatchErrorHandler`); logged when `None`.
    pub watch_error_handler: Option<WatchErrorHandler>,
    /// The reflector's options. The informer sets some of them itself: the resync period
    /// (its check period) and check, the known objects (its cache), the encoded lists (a
    /// compact cache's codec), and the transform and watch-error handler when given above.
    pub reflector_options: ReflectorOptions<K>,
    /// Handler queue depths and latencies, handler panics, store resourceVersion.
    pub metrics: Option<Arc<dyn InformerMetrics>>,
    /// The FIFO's depth, pops and processing latency.
    pub fifo_metrics: Option<Arc<dyn CacheMetrics>>,
    /// How the cache holds its objects: decoded (the default) or compact.
    pub representation: CacheRepresentation<K>,
}

impl<K> Default for SharedIndexInformerOptions<K> {
    fn default() -> Self {
        Self {
            name: None,
            resync_period: Duration::ZERO,
            indexers: Indexers::new(),
            fifo: FifoKind::default(),
            transform: None,
            watch_error_handler: None,
            reflector_options: ReflectorOptions::default(),
            metrics: None,
            fifo_metrics: None,
            representation: CacheRepresentation::Decoded,
        }
    }
}

impl<K> SharedIndexInformerOptions<K> {
    /// Sets [`name`](Self::name).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets [`resync_period`](Self::resync_period).
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = period;
        self
    }

    /// Sets [`indexers`](Self::indexers).
    pub fn indexers(mut self, indexers: Indexers<K>) -> Self {
        self.indexers = indexers;
        self
    }

    /// Sets [`fifo`](Self::fifo).
    pub fn fifo(mut self, fifo: FifoKind) -> Self {
        self.fifo = fifo;
        self
    }

    /// Sets [`transform`](Self::transform) (`None` for none).
    pub fn transform(mut self, transform: impl Into<Option<TransformFunc<K>>>) -> Self {
        self.transform = transform.into();
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

    /// Sets [`reflector_options`](Self::reflector_options).
    pub fn reflector_options(mut self, options: ReflectorOptions<K>) -> Self {
        self.reflector_options = options;
        self
    }

    /// Sets [`metrics`](Self::metrics).
    pub fn metrics(mut self, metrics: Arc<dyn InformerMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Sets [`fifo_metrics`](Self::fifo_metrics).
    pub fn fifo_metrics(mut self, metrics: Arc<dyn CacheMetrics>) -> Self {
        self.fifo_metrics = Some(metrics);
        self
    }

    /// Sets [`representation`](Self::representation).
    pub fn representation(mut self, representation: CacheRepresentation<K>) -> Self {
        self.representation = representation;
        self
    }
}

impl<K> fmt::Debug for SharedIndexInformerOptions<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedIndexInformerOptions")
            .field("name", &self.name)
            .field("resync_period", &self.resync_period)
            .field("fifo", &self.fifo)
            .field("transform", &self.transform.is_some())
            .field("watch_error_handler", &self.watch_error_handler.is_some())
            .field("representation", &self.representation)
            .finish_non_exhaustive()
    }
}

/// How one handler is added (client-go's `HandlerOptions`): start from [`Default`] and set
/// what differs, with the setters (`HandlerOptions::default().name("web")`) or the public
/// fields, as the informer's own options.
#[derive(Debug, Clone, Default)]
pub struct HandlerOptions {
    /// The handler's name in logs and metrics; its type name when `None`.
    pub name: Option<String>,
    /// Its resync period; the informer's default when `None`. Zero never resyncs; anything
    /// shorter than [`MINIMUM_RESYNC_PERIOD`] is raised to it.
    pub resync_period: Option<Duration>,
    /// Bounds the handler's queue. Unbounded (`None`) is client-go's behaviour: a stalled
    /// handler grows its queue without limit. With a bound, when this handler has that
    /// many notifications pending the informer stops taking deltas from its FIFO until the
    /// handler catches up. One pop can go past the bound: the informer pops at most the
    /// smallest bound of the handlers registered before it started, but a relist's whole
    /// replace is one pop, and a handler bounded after the start may see a batch of up to
    /// [`DEFAULT_BATCH_SIZE`] deltas past its bound. Chosen over dropping
    /// notifications: a handler never misses an event, and the pressure moves back to the
    /// FIFO and the watch (whose server ends a slow watch, and a relist then compacts the
    /// backlog to the current state). The cost is that every handler of the informer waits
    /// for the slowest bounded one.
    pub max_pending: Option<usize>,
}

impl HandlerOptions {
    /// Sets [`name`](Self::name).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets [`resync_period`](Self::resync_period).
    pub fn resync_period(mut self, period: Duration) -> Self {
        self.resync_period = Some(period);
        self
    }

    /// Sets [`max_pending`](Self::max_pending).
    pub fn max_pending(mut self, max_pending: usize) -> Self {
        self.max_pending = Some(max_pending);
        self
    }
}

struct State<K> {
    started: bool,
    stopped: bool,
    resync_check_period: Duration,
    default_resync_period: Duration,
    /// What the start consumes; `None` once started.
    setup: Option<Setup<K>>,
    controller: Option<InformerController<K>>,
}

/// The options the informer's controller and reflector are made with at the start.
struct Setup<K> {
    fifo: FifoKind,
    fifo_metrics: Option<Arc<dyn CacheMetrics>>,
    reflector_options: ReflectorOptions<K>,
}

type MakeController<K> =
    Box<dyn Fn(InformerControllerConfig<K>) -> InformerController<K> + Send + Sync>;

struct Inner<K> {
    name: Arc<str>,
    indexer: Indexer<K>,
    processor: Arc<Processor>,
    make_controller: MakeController<K>,
    state: Mutex<State<K>>,
    /// Held while deltas are applied and distributed, and while a late handler joins.
    block_deltas: Arc<Mutex<()>>,
    next_listener_id: AtomicU64,
    stopped: AtomicBool,
    started_notify: Notify,
    metrics: Option<Arc<dyn InformerMetrics>>,
    dynamic_lister: Box<dyn Fn(Indexer<K>) -> Lister<K> + Send + Sync>,
}

/// One reflector and indexed cache shared by many handlers; see the [module docs](self).
/// Cheap to clone: clones share the informer.
pub struct SharedIndexInformer<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for SharedIndexInformer<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock();
        f.debug_struct("SharedIndexInformer")
            .field("name", &self.inner.name)
            .field("started", &state.started)
            .field("stopped", &state.stopped)
            .field("cached", &self.inner.indexer.len())
            .finish_non_exhaustive()
    }
}

impl<K> SharedIndexInformer<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// An informer over a statically typed resource (client-go's `NewSharedIndexInformer`).
    pub fn new<L>(lister_watcher: L, options: SharedIndexInformerOptions<K>) -> Self
    where
        K::DynamicType: Default,
        L: ListerWatcher<K> + Clone + 'static,
    {
        Self::new_with(lister_watcher, options, &K::DynamicType::default())
    }

    /// An informer over a resource described at run time (a `DynamicObject` with its
    /// `ApiResource`).
    pub fn new_with<L>(
        lister_watcher: L,
        options: SharedIndexInformerOptions<K>,
        dt: &K::DynamicType,
    ) -> Self
    where
        L: ListerWatcher<K> + Clone + 'static,
    {
        let name: Arc<str> = match options.name {
            Some(name) => name.into(),
            None => {
                let resource = K::api_resource(dt);
                format!(
                    "{}/{}",
                    resource.group_version().api_version(),
                    resource.kind
                )
                .into()
            }
        };
        let make_dt = dt.clone();
        let make_controller: MakeController<K> = Box::new(move |config| {
            InformerController::new_with(lister_watcher.clone(), config, &make_dt)
        });
        let lister_dt = dt.clone();
        let mut reflector_options = options.reflector_options;
        if reflector_options.name.is_none() {
            reflector_options.name = Some(name.to_string());
        }
        // A compact cache's lists stay encoded, in the cache's own codec, until stored
        // (without the `compact` feature the store keeps objects decoded: so do the lists).
        reflector_options.encoded_lists = match &options.representation {
            CacheRepresentation::Compact { codec, .. } if cfg!(feature = "compact") => {
                Some(codec.clone())
            }
            _ => None,
        };
        if let Some(transform) = options.transform {
            reflector_options.transform = Some(transform);
        }
        if let Some(handler) = options.watch_error_handler {
            reflector_options.watch_error_handler = Some(handler);
        }
        Self {
            inner: Arc::new(Inner {
                name,
                indexer: Indexer::from_store(
                    KeyFunc::deletion_handling_meta_namespace(),
                    ThreadSafeStore::with_representation(options.indexers, options.representation),
                ),
                processor: Arc::new(Processor::new()),
                make_controller,
                state: Mutex::new(State {
                    started: false,
                    stopped: false,
                    resync_check_period: options.resync_period,
                    default_resync_period: options.resync_period,
                    setup: Some(Setup {
                        fifo: options.fifo,
                        fifo_metrics: options.fifo_metrics,
                        reflector_options,
                    }),
                    controller: None,
                }),
                block_deltas: Arc::new(Mutex::new(())),
                next_listener_id: AtomicU64::new(1),
                stopped: AtomicBool::new(false),
                started_notify: Notify::new(),
                metrics: options.metrics,
                dynamic_lister: Box::new(move |indexer| Lister::new_with(indexer, &lister_dt)),
            }),
        }
    }

    /// The informer's name (logs, metrics).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Adds a handler with the informer's default resync period (client-go's
    /// `AddEventHandler`).
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler<K> + 'static,
    ) -> Result<ResourceEventHandlerRegistration<K>, InformerError> {
        self.add_event_handler_with_options(handler, HandlerOptions::default())
    }

    /// Adds a handler with its own resync period (client-go's
    /// `AddEventHandlerWithResyncPeriod`).
    pub fn add_event_handler_with_resync_period(
        &self,
        handler: impl ResourceEventHandler<K> + 'static,
        resync_period: Duration,
    ) -> Result<ResourceEventHandlerRegistration<K>, InformerError> {
        self.add_event_handler_with_options(
            handler,
            HandlerOptions::default().resync_period(resync_period),
        )
    }

    /// Adds a handler (client-go's `AddEventHandlerWithOptions`). On a running informer the
    /// handler first receives every cached object as an add; on a stopped one this fails.
    pub fn add_event_handler_with_options<H: ResourceEventHandler<K> + 'static>(
        &self,
        handler: H,
        options: HandlerOptions,
    ) -> Result<ResourceEventHandlerRegistration<K>, InformerError> {
        let inner = &self.inner;
        let name = options
            .name
            .unwrap_or_else(|| std::any::type_name::<H>().to_owned());
        let mut state = inner.state.lock();
        if state.stopped {
            return Err(InformerError::Stopped { handler: name });
        }
        let resync = handler_resync_period(
            &name,
            options.resync_period.unwrap_or(state.default_resync_period),
            state.started,
            &mut state.resync_check_period,
            &inner.processor,
        );
        let listener = Arc::new(Listener::new(
            inner.next_listener_id.fetch_add(1, Ordering::Relaxed),
            name,
            Arc::clone(&inner.name),
            kind_handler::<K>(Arc::new(handler)),
            resync,
            determine_resync_period("", resync, state.resync_check_period),
            options.max_pending,
            inner.metrics.clone(),
        ));
        if state.started {
            let _paused = inner.block_deltas.lock();
            inner.processor.add_listener(Arc::clone(&listener));
            for obj in inner.indexer.list() {
                listener.add(Queued::new(Announced::Ready(Notification::Add {
                    obj,
                    is_in_initial_list: true,
                })));
            }
        } else {
            inner.processor.add_listener(Arc::clone(&listener));
        }
        Ok(ResourceEventHandlerRegistration {
            informer: self.clone(),
            listener,
        })
    }

    /// Removes a handler: it gets nothing more, and what was queued for it is dropped
    /// (client-go's `RemoveEventHandler`). Removing a registration that is already removed,
    /// or that belongs to another informer, does nothing (as in client-go); so does removing
    /// from a stopped informer.
    pub fn remove_event_handler(
        &self,
        registration: &ResourceEventHandlerRegistration<K>,
    ) -> Result<(), InformerError> {
        if Arc::ptr_eq(&registration.informer.inner, &self.inner) {
            self.inner
                .processor
                .remove_listener(registration.listener.id);
        }
        Ok(())
    }

    /// Sets the transform applied to every object before it is queued and cached (client-go's
    /// `SetTransform`); only before the informer starts.
    #[deprecated(
        note = "give it when the informer is made: `SharedIndexInformerOptions::transform`"
    )]
    pub fn set_transform(&self, transform: TransformFunc<K>) -> Result<(), InformerError> {
        self.before_start(|options| options.transform = Some(transform))
    }

    /// Sets what is done with the error of each failed reflector run (client-go's
    /// `SetWatchErrorHandler`); only before the informer starts.
    #[deprecated(
        note = "give it when the informer is made: `SharedIndexInformerOptions::watch_error_handler`"
    )]
    pub fn set_watch_error_handler(
        &self,
        handler: impl Fn(&str, &dyn WatchError) + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        self.before_start(|options| options.watch_error_handler = Some(Arc::new(handler)))
    }

    /// Changes the reflector's options the start has not consumed yet.
    fn before_start(
        &self,
        change: impl FnOnce(&mut ReflectorOptions<K>),
    ) -> Result<(), InformerError> {
        let mut state = self.inner.state.lock();
        let setup = state.setup.as_mut().ok_or(InformerError::AlreadyStarted)?;
        change(&mut setup.reflector_options);
        Ok(())
    }

    /// Adds indices to the cache (client-go's `AddIndexers`, with its rule since v0.30): before
    /// or while the informer runs — the new indices are built over the objects already cached,
    /// under the cache's write lock, and kept from then on — but not once it has stopped
    /// ([`InformerError::IndexersAfterStop`]); the indexer refuses a name already taken.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), InformerError> {
        let state = self.inner.state.lock();
        if state.stopped {
            return Err(InformerError::IndexersAfterStop);
        }
        self.inner.indexer.add_indexers(indexers)?;
        Ok(())
    }

    /// The cache (client-go's `GetStore`): read it, never write it.
    pub fn get_store(&self) -> &Indexer<K> {
        &self.inner.indexer
    }

    /// The cache with its indices (client-go's `GetIndexer`): read it, never write it.
    pub fn get_indexer(&self) -> &Indexer<K> {
        &self.inner.indexer
    }

    /// A lister over the cache.
    pub fn lister(&self) -> Lister<K> {
        (self.inner.dynamic_lister)(self.inner.indexer.clone())
    }

    /// Whether the first list has been applied to the cache (client-go's `HasSynced`).
    pub fn has_synced(&self) -> bool {
        self.inner
            .state
            .lock()
            .controller
            .as_ref()
            .is_some_and(InformerController::has_synced)
    }

    /// A handle for [`wait_for_cache_sync`](crate::wait_for_cache_sync).
    pub fn synced(&self) -> InformerSynced {
        InformerSynced::new(self.clone())
    }

    /// The resourceVersion the reflector last synced to ("" before it ran).
    pub fn last_sync_resource_version(&self) -> String {
        self.inner
            .state
            .lock()
            .controller
            .as_ref()
            .map(InformerController::last_sync_resource_version)
            .unwrap_or_default()
    }

    /// Whether the informer has stopped (its run has returned).
    pub fn is_stopped(&self) -> bool {
        self.inner.stopped.load(Ordering::Acquire)
    }

    /// Whether the informer has been started.
    pub fn is_started(&self) -> bool {
        self.inner.state.lock().started
    }

    /// How often the reflector checks whether a handler is due for a resync: the shortest
    /// handler period asked for before the start (client-go's `resyncCheckPeriod`).
    pub fn resync_check_period(&self) -> Duration {
        self.inner.state.lock().resync_check_period
    }

    /// How many handlers are registered.
    pub fn handler_count(&self) -> usize {
        self.inner.processor.listeners().len()
    }

    /// Runs the informer until `cancel` fires: the reflector and the cache first, the
    /// handlers' tasks strictly after (client-go's order), then returns. A second run logs a
    /// warning and returns at once.
    pub async fn run(&self, cancel: CancellationToken) {
        let inner = &self.inner;
        let controller = {
            let mut state = inner.state.lock();
            // The setup is there until the first start takes it.
            let Some(setup) = state.setup.take() else {
                tracing::warn!(informer = %inner.name, "the shared informer has already been started; running it again is not allowed");
                return;
            };
            state.started = true;
            // A pop hands over at most the smallest handler bound, so that a bounded
            // handler's queue stays under twice its bound.
            let batch_size = inner
                .processor
                .listeners()
                .iter()
                .filter_map(|l| l.max_pending())
                .fold(DEFAULT_BATCH_SIZE, usize::min);
            let queue: InformerQueue<K> = match setup.fifo {
                FifoKind::Real => RealFifo::new(RealFifoOptions {
                    metrics: setup.fifo_metrics.clone(),
                    batch_size,
                    ..RealFifoOptions::default()
                })
                .into(),
                #[cfg(feature = "informer-delta-fifo")]
                FifoKind::Delta => DeltaFifo::new(DeltaFifoOptions {
                    known_objects: Some(Arc::new(inner.indexer.clone())),
                    emit_delta_type_replaced: true,
                    metrics: setup.fifo_metrics.clone(),
                    ..DeltaFifoOptions::default()
                })
                .into(),
            };
            let processor = Arc::clone(&inner.processor);
            let reflector_options = setup
                .reflector_options
                .resync_period(state.resync_check_period)
                .should_resync(move || processor.should_resync())
                .known_objects(inner.indexer.clone());
            let config = InformerControllerConfig::new(queue, self.process_func())
                .wait_before_pop(self.wait_for_bounded_handlers())
                .reflector_options(reflector_options);
            let controller = (inner.make_controller)(config);
            state.controller = Some(controller.clone());
            controller
        };
        inner.started_notify.notify_waiters();
        inner.processor.run();
        controller.run(cancel).await;
        inner.state.lock().stopped = true;
        inner.processor.stop().await;
        inner.stopped.store(true, Ordering::Release);
    }

    /// Applies popped deltas to the cache and hands the notifications to the handlers, with
    /// late handlers kept out meanwhile (client-go's `HandleDeltas`).
    fn process_func(&self) -> ProcessFunc<K> {
        let indexer = self.inner.indexer.clone();
        let processor = Arc::clone(&self.inner.processor);
        let block_deltas = Arc::clone(&self.inner.block_deltas);
        let metrics = self.inner.metrics.clone();
        let name = Arc::clone(&self.inner.name);
        Arc::new(move |deltas: &[Delta<K>], is_in_initial_list| {
            let _paused = block_deltas.lock();
            let listened = !processor.listeners().is_empty();
            process_deltas_for(
                &indexer,
                deltas,
                is_in_initial_list,
                listened,
                |notification| {
                    // An update that did not change the resourceVersion comes from a resync
                    // (or a relist that found the object unchanged): only due handlers get it.
                    let is_sync = notification.is_sync();
                    processor.distribute(|| Queued::new(notification), is_sync);
                },
            )
            .map_err(|e| ProcessError::Failed(e.into()))?;
            if let Some(m) = &metrics {
                if let Some(rv) = deltas.last().and_then(newest_resource_version) {
                    m.store_resource_version(&name, rv);
                }
            }
            Ok(())
        })
    }

    /// Before each pop: waits until every bounded handler has room.
    fn wait_for_bounded_handlers(&self) -> WaitBeforePop {
        let processor = Arc::clone(&self.inner.processor);
        Arc::new(move || {
            let listeners = processor.full_listeners();
            async move {
                for listener in listeners {
                    listener.wait_for_room().await;
                }
            }
            .boxed()
        })
    }
}

/// The resync period a handler that asked for `asked` runs with (client-go's adjustments in
/// `AddEventHandlerWithOptions`): at least a second, and at least the informer's check period
/// once it has started; before the start, a shorter period shortens the check period
/// (`check`) instead.
fn handler_resync_period(
    name: &str,
    asked: Duration,
    started: bool,
    check: &mut Duration,
    processor: &Processor,
) -> Duration {
    let mut resync = asked;
    if resync.is_zero() {
        return resync;
    }
    if resync < MINIMUM_RESYNC_PERIOD {
        tracing::warn!(handler = %name, ?resync, "resync period is too small; changing it to the minimum of 1s");
        resync = MINIMUM_RESYNC_PERIOD;
    }
    if resync < *check {
        if started {
            tracing::warn!(
                handler = %name,
                ?resync,
                check = ?*check,
                "resync period is smaller than the informer's resync check period and the informer has already started; changing it to the check period"
            );
            resync = *check;
        } else {
            // The informer resyncs as often as its most frequent handler asks.
            *check = resync;
            processor.resync_check_period_changed(resync);
        }
    }
    resync
}

fn newest_resource_version<K: Resource>(delta: &Delta<K>) -> Option<&str> {
    match delta {
        Delta::ReplacedAll(info) => Some(info.resource_version.as_str()),
        Delta::Bookmark(info) => Some(info.resource_version.as_str()),
        other => other.object().and_then(|o| o.resource_version()),
    }
}

impl<K> Synced for SharedIndexInformer<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    fn has_synced(&self) -> bool {
        SharedIndexInformer::has_synced(self)
    }

    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        async move {
            // The controller exists once the informer runs; until then, wait for it.
            loop {
                let mut started = std::pin::pin!(self.inner.started_notify.notified());
                started.as_mut().enable();
                let controller = self.inner.state.lock().controller.clone();
                if let Some(controller) = controller {
                    return controller.queue().wait_synced().await;
                }
                started.await;
            }
        }
        .boxed()
    }
}

/// A handler added to a [`SharedIndexInformer`] (client-go's
/// `ResourceEventHandlerRegistration`): whether it has synced, its queue, and the handle to
/// remove it with. Cheap to clone.
pub struct ResourceEventHandlerRegistration<K> {
    informer: SharedIndexInformer<K>,
    listener: Arc<Listener>,
}

impl<K> Clone for ResourceEventHandlerRegistration<K> {
    fn clone(&self) -> Self {
        Self {
            informer: self.informer.clone(),
            listener: Arc::clone(&self.listener),
        }
    }
}

impl<K> fmt::Debug for ResourceEventHandlerRegistration<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceEventHandlerRegistration")
            .field("handler", &self.listener.name)
            .field("informer", &self.informer.inner.name)
            .finish_non_exhaustive()
    }
}

impl<K> ResourceEventHandlerRegistration<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// The handler's name.
    pub fn name(&self) -> &str {
        &self.listener.name
    }

    /// Whether the informer has synced and this handler has handled every object of the
    /// initial list (or, added late, every cached object replayed to it).
    pub fn has_synced(&self) -> bool {
        self.informer.has_synced() && self.listener.initial_list_handled()
    }

    /// A handle for [`wait_for_cache_sync`](crate::wait_for_cache_sync).
    pub fn synced(&self) -> InformerSynced {
        InformerSynced::new(self.clone())
    }

    /// Notifications queued for the handler or being handled: how far behind it is.
    pub fn pending(&self) -> usize {
        self.listener.pending()
    }

    /// Notifications handled so far (including those whose handler call panicked).
    pub fn handled(&self) -> u64 {
        self.listener.handled()
    }

    /// Handler calls that panicked.
    pub fn panics(&self) -> u64 {
        self.listener.panics()
    }

    /// The resync period the handler runs with (after client-go's adjustments).
    pub fn resync_period(&self) -> Duration {
        self.listener.resync_period()
    }

    /// Whether the handler has been removed or its informer has stopped.
    pub fn is_removed(&self) -> bool {
        self.listener.is_closed()
    }
}

impl<K> Synced for ResourceEventHandlerRegistration<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    fn has_synced(&self) -> bool {
        ResourceEventHandlerRegistration::has_synced(self)
    }

    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        async move {
            loop {
                self.informer.synced().wait().await;
                self.listener.wait_initial_list_handled().await;
                if self.has_synced() {
                    return;
                }
            }
        }
        .boxed()
    }
}
