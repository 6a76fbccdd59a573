//! The low-level informer engine, [`InformerController`] (client-go's `cache.Controller`,
//! `cache.New(Config)`): a reflector fills a FIFO, and a loop pops it into a process
//! function. Not a controller in the operator sense (that is kclient-controller's
//! `Controller`, hence the name): the glue between the two halves of an informer.
//!
//! [`new_informer`] and [`new_indexer_informer`] build the simplest informer on it: one
//! handler, called synchronously from the pop loop, and a store of your own. Shared
//! informers ([`SharedIndexInformer`](crate::SharedIndexInformer)) run on an
//! `InformerController` too.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_cache::testing::FakeControllerSource;
//! use kclient_cache::{new_informer, ResourceEventHandlerFuncs};
//! use kclient_core::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let source = FakeControllerSource::<ConfigMap>::new();
//! let handler = ResourceEventHandlerFuncs::new().add_func(|cm: &Arc<ConfigMap>, _| {
//!     println!("{:?}", cm.metadata.name);
//! });
//! let (store, controller) = new_informer(source, std::time::Duration::ZERO, handler);
//! let cancel = CancellationToken::new();
//! let run = tokio::spawn({
//!     let (controller, cancel) = (controller.clone(), cancel.clone());
//!     async move { controller.run(cancel).await }
//! });
//! assert!(kclient_cache::wait_for_cache_sync(&cancel, &[controller.synced()]).await);
//! assert!(store.is_empty());
//! cancel.cancel();
//! run.await.unwrap();
//! # }
//! ```

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use kclient_core::{CancellationToken, ListerWatcher, Resource};

use crate::delta::Delta;
use crate::handler::{dispatch, ResourceEventHandler};
use crate::index::Indexers;
use crate::indexer::Indexer;
use crate::informer_queue::InformerQueue;
use crate::key_func::KeyFunc;
use crate::process_deltas::process_deltas;
use crate::queue::{PopError, ProcessError, Queue};
use crate::real_fifo::{RealFifo, RealFifoOptions};
use crate::reflector::{Reflector, ReflectorOptions};
use crate::wait::{InformerSynced, Synced};

// The watch-error handler's types and the resync check's, where this module has always had
// them: they are the reflector's options' (`ReflectorOptions`).
pub use crate::reflector::{ShouldResyncFunc, WatchError, WatchErrorHandler};

/// What the pop loop does with each popped batch: the deltas (oldest first) and whether they
/// belong to the initial list.
pub type ProcessFunc<K> = Arc<dyn Fn(&[Delta<K>], bool) -> Result<(), ProcessError> + Send + Sync>;

/// Awaited before each pop, to hold the loop back (a shared informer waits there for its
/// bounded handlers to have room).
pub type WaitBeforePop = Arc<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>;

/// How an [`InformerController`] is put together (client-go's `cache.Config`): the queue,
/// the process function and the pop loop's settings; everything about the reflector — the
/// resync period and check (client-go's `FullResyncPeriod`, `ShouldResync`), the
/// watch-error handler, the transform, known objects, encoded lists — in
/// [`reflector_options`](Self::reflector_options).
pub struct InformerControllerConfig<K> {
    /// The FIFO the reflector fills and the loop pops.
    pub queue: InformerQueue<K>,
    /// Runs on every popped batch.
    pub process: ProcessFunc<K>,
    /// Put deltas whose processing failed back into the queue (client-go's
    /// `RetryOnError`; informers leave it off, so failed deltas are dropped and logged).
    pub retry_on_error: bool,
    /// Awaited before each pop; pops at once when `None`.
    pub wait_before_pop: Option<WaitBeforePop>,
    /// The reflector's options.
    pub reflector_options: ReflectorOptions<K>,
}

/// The former name of [`InformerControllerConfig`] (client-go's `cache.Config`).
#[deprecated(note = "renamed `InformerControllerConfig`, as `Controller` is `InformerController`")]
pub type ControllerConfig<K> = InformerControllerConfig<K>;

impl<K> InformerControllerConfig<K> {
    /// A configuration with everything but the queue and the process function at its
    /// default.
    pub fn new(queue: impl Into<InformerQueue<K>>, process: ProcessFunc<K>) -> Self {
        Self {
            queue: queue.into(),
            process,
            retry_on_error: false,
            wait_before_pop: None,
            reflector_options: ReflectorOptions::default(),
        }
    }

    /// Sets [`retry_on_error`](Self::retry_on_error).
    pub fn retry_on_error(mut self, retry: bool) -> Self {
        self.retry_on_error = retry;
        self
    }

    /// Sets [`wait_before_pop`](Self::wait_before_pop).
    pub fn wait_before_pop(mut self, wait: WaitBeforePop) -> Self {
        self.wait_before_pop = Some(wait);
        self
    }

    /// Sets [`reflector_options`](Self::reflector_options).
    pub fn reflector_options(mut self, options: ReflectorOptions<K>) -> Self {
        self.reflector_options = options;
        self
    }
}

/// A reflector with its lister-watcher's type erased.
trait ErasedReflector: Send + Sync {
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, ()>;
    fn last_sync_resource_version(&self) -> String;
    fn is_last_sync_resource_version_unavailable(&self) -> bool;
}

impl<K, L> ErasedReflector for Reflector<K, L, InformerQueue<K>>
where
    K: Resource + Clone + Send + Sync + 'static,
    L: ListerWatcher<K> + Clone + 'static,
{
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, ()> {
        Reflector::run(self, cancel).boxed()
    }

    fn last_sync_resource_version(&self) -> String {
        Reflector::last_sync_resource_version(self)
    }

    fn is_last_sync_resource_version_unavailable(&self) -> bool {
        Reflector::is_last_sync_resource_version_unavailable(self)
    }
}

struct Inner<K> {
    queue: InformerQueue<K>,
    reflector: Box<dyn ErasedReflector>,
    process: ProcessFunc<K>,
    retry_on_error: bool,
    wait_before_pop: Option<WaitBeforePop>,
    started: AtomicBool,
}

/// A reflector feeding a FIFO and a loop popping it into a process function (client-go's
/// `cache.Controller`; named apart from kclient-controller's reconcile `Controller`). Cheap
/// to clone; see the [module docs](self).
pub struct InformerController<K> {
    inner: Arc<Inner<K>>,
}

/// The former name of [`InformerController`] (client-go's `cache.Controller`), which
/// kclient-controller's reconcile `Controller` shared.
#[deprecated(note = "renamed `InformerController`, apart from kclient-controller's `Controller`")]
pub type Controller<K> = InformerController<K>;

impl<K> Clone for InformerController<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> fmt::Debug for InformerController<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerController")
            .field("queue", &self.inner.queue)
            .field(
                "last_sync_resource_version",
                &self.inner.reflector.last_sync_resource_version(),
            )
            .finish_non_exhaustive()
    }
}

impl<K> InformerController<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    /// A controller over a statically typed resource (client-go's `cache.New`).
    pub fn new<L>(lister_watcher: L, config: InformerControllerConfig<K>) -> Self
    where
        K::DynamicType: Default,
        L: ListerWatcher<K> + Clone + 'static,
    {
        Self::new_with(lister_watcher, config, &K::DynamicType::default())
    }

    /// A controller over a resource described at run time (a `DynamicObject` and its
    /// `ApiResource`).
    pub fn new_with<L>(
        lister_watcher: L,
        config: InformerControllerConfig<K>,
        dt: &K::DynamicType,
    ) -> Self
    where
        L: ListerWatcher<K> + Clone + 'static,
    {
        let reflector = Reflector::new_with(
            lister_watcher,
            config.queue.clone(),
            config.reflector_options,
            dt,
        );
        Self {
            inner: Arc::new(Inner {
                queue: config.queue,
                reflector: Box::new(reflector),
                process: config.process,
                retry_on_error: config.retry_on_error,
                wait_before_pop: config.wait_before_pop,
                started: AtomicBool::new(false),
            }),
        }
    }

    /// Runs the reflector and the pop loop until `cancel` fires; then closes the queue, lets
    /// the loop drain it, and returns once both have stopped. A second run logs a warning and
    /// returns at once.
    pub async fn run(&self, cancel: CancellationToken) {
        let inner = &*self.inner;
        run_until_cancelled(inner, inner.reflector.as_ref(), cancel).await
    }

    /// Whether the queue has delivered the first list (client-go's `HasSynced`).
    pub fn has_synced(&self) -> bool {
        self.inner.queue.has_synced()
    }

    /// A handle for [`wait_for_cache_sync`](crate::wait_for_cache_sync).
    pub fn synced(&self) -> InformerSynced {
        InformerSynced::new(self.clone())
    }

    /// The resourceVersion of the last list or watch event ("" before the first).
    pub fn last_sync_resource_version(&self) -> String {
        self.inner.reflector.last_sync_resource_version()
    }

    /// Whether the last list failed because its resourceVersion was too old or too new.
    pub fn is_last_sync_resource_version_unavailable(&self) -> bool {
        self.inner
            .reflector
            .is_last_sync_resource_version_unavailable()
    }

    /// The FIFO.
    pub fn queue(&self) -> &InformerQueue<K> {
        &self.inner.queue
    }
}

impl<K> Synced for InformerController<K>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    fn has_synced(&self) -> bool {
        InformerController::has_synced(self)
    }

    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        self.inner.queue.wait_synced().boxed()
    }
}

/// The pop loop's side that knows the kind: the queue and the process function. The run
/// itself ([`run_until_cancelled`]) is compiled once, not once per kind a program caches.
trait PopLoop: Send + Sync {
    /// Marks the run started; false if it already was.
    fn start(&self) -> bool;
    /// Waits for room before a pop, when asked to.
    fn wait_before_pop(&self) -> Option<BoxFuture<'static, ()>>;
    /// Pops one batch into the process function.
    fn pop_once(&self) -> BoxFuture<'_, Result<(), PopError>>;
    /// Closes the queue (the loop drains it, then stops).
    fn close(&self);
}

impl<K: Resource + Clone + Send + Sync + 'static> PopLoop for Inner<K> {
    fn start(&self) -> bool {
        !self.started.swap(true, Ordering::AcqRel)
    }

    fn wait_before_pop(&self) -> Option<BoxFuture<'static, ()>> {
        self.wait_before_pop.as_ref().map(|wait| wait())
    }

    fn pop_once(&self) -> BoxFuture<'_, Result<(), PopError>> {
        let process = |deltas: &[Delta<K>], initial: bool| match (self.process)(deltas, initial) {
            Err(ProcessError::Failed(e)) if self.retry_on_error => Err(ProcessError::Requeue(e)),
            other => other,
        };
        self.queue
            .pop(process)
            .map(|popped| popped.map(drop))
            .boxed()
    }

    fn close(&self) {
        self.queue.close();
    }
}

/// [`InformerController::run`]: the reflector and the pop loop until `cancel` fires, then the
/// queue closed and drained.
fn run_until_cancelled<'a>(
    pops: &'a dyn PopLoop,
    reflector: &'a dyn ErasedReflector,
    cancel: CancellationToken,
) -> BoxFuture<'a, ()> {
    async move {
        if !pops.start() {
            tracing::warn!("the controller was already run; running it again is not allowed");
            return;
        }
        let close_on_cancel = async {
            cancel.cancelled().await;
            pops.close();
        };
        tokio::join!(
            reflector.run(cancel.clone()),
            close_on_cancel,
            process_loop(pops),
        );
    }
    .boxed()
}

/// Pops until the queue is closed and empty (client-go's `processLoop`).
async fn process_loop(pops: &dyn PopLoop) {
    loop {
        if let Some(wait) = pops.wait_before_pop() {
            wait.await;
        }
        match pops.pop_once().await {
            Ok(()) => {}
            Err(PopError::Closed) => return,
            Err(err) => tracing::error!(error = %err, "processing popped deltas failed"),
        }
    }
}

/// An informer with one handler, called synchronously as deltas are popped, over a store of
/// its own (client-go's `NewInformer`), on a [`RealFifo`] (client-go's with
/// `InOrderInformers`, its default since 1.33: every delta in order). Use the store only to
/// read: changing it would make the notifications wrong. `resync_period` (non-zero)
/// redelivers every cached object as an update with old and new the same, that often; it does
/// not list again.
pub fn new_informer<K, L, H>(
    lister_watcher: L,
    resync_period: Duration,
    handler: H,
) -> (Indexer<K>, InformerController<K>)
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Default,
    L: ListerWatcher<K> + Clone + 'static,
    H: ResourceEventHandler<K> + 'static,
{
    new_indexer_informer(lister_watcher, resync_period, handler, Indexers::new())
}

/// [`new_informer`] with an indexer (client-go's `NewIndexerInformer`).
pub fn new_indexer_informer<K, L, H>(
    lister_watcher: L,
    resync_period: Duration,
    handler: H,
    indexers: Indexers<K>,
) -> (Indexer<K>, InformerController<K>)
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Default,
    L: ListerWatcher<K> + Clone + 'static,
    H: ResourceEventHandler<K> + 'static,
{
    let indexer = Indexer::new(KeyFunc::deletion_handling_meta_namespace(), indexers);
    let queue = RealFifo::new(RealFifoOptions::default());
    let store = indexer.clone();
    let process: ProcessFunc<K> = Arc::new(move |deltas, initial| {
        process_deltas(&store, deltas, initial, |n| {
            if let Err(panic) = dispatch(&handler, &n) {
                tracing::error!(%panic, "event handler panicked; the notification is skipped");
            }
        })
        .map_err(|e| ProcessError::Failed(e.into()))
    });
    let config = InformerControllerConfig::new(queue, process).reflector_options(
        ReflectorOptions::default()
            .resync_period(resync_period)
            .known_objects(indexer.clone()),
    );
    (indexer, InformerController::new(lister_watcher, config))
}
