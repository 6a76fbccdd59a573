//! [`Manager`]: several controllers on one informer factory, with leader election, probes,
//! metrics and graceful shutdown.

mod election;
mod endpoints;

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kclient_cache::{InformerSynced, SharedInformerFactory};
use kclient_core::{BoxError, CancellationToken, Resource};
use kclient_tools::events::EventBroadcaster;
use kclient_tools::leaderelection::{
    HealthzAdaptor, LeaderCallbacks, LeaderElectionConfig, LeaderElectionConfigError,
    LeaderElector, Lock,
};
use parking_lot::Mutex;
use prometheus_client::registry::Registry;

use self::election::{leader_callbacks, run_elected, spawn_warm, Election, Phase};
use self::endpoints::{built_in_checks, checker, metrics_routes, probe_routes, spawn_server};
use crate::config::{DEFAULT_CACHE_SYNC_TIMEOUT, DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT};
use crate::controller::{Controller, Leadership, RunEnv};
use crate::error::ControllerError;
use crate::health::{CheckError, Checks};
use crate::metrics::ControllerMetrics;
use crate::reconciler::Reconciler;

/// Why a [`Manager`] could not be built or ended badly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManagerError {
    /// An endpoint's address could not be bound.
    #[error("cannot listen on {address} for the {endpoint} endpoint: {source}")]
    Bind {
        /// Which endpoint: `health probe` or `metrics`.
        endpoint: &'static str,
        /// The address.
        address: SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The leader election's configuration was refused.
    #[error("leader election: {0}")]
    LeaderElection(#[from] LeaderElectionConfigError),
    /// The caches did not sync within the manager's cache sync timeout.
    #[error("caches did not sync within {timeout:?}: {}", unsynced.join(", "))]
    CacheSyncTimeout {
        /// The informers that had not synced.
        unsynced: Vec<String>,
        /// The timeout.
        timeout: Duration,
    },
    /// This replica led and lost the lease (its renewals failed or another holder took
    /// it): the controllers stopped at once. Exit, and let the replica restart.
    #[error("leader election lost")]
    LeaderElectionLost,
    /// Controllers ended with errors (their graceful shutdown timed out, say).
    #[error("{} controller(s) failed: {}", .0.len(), .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Controllers(Vec<ControllerError>),
    /// Runnables ([`Manager::add_runnable`]) were still running at the end of the
    /// manager's graceful shutdown timeout: they were dropped.
    #[error("runnables still running after the graceful shutdown timeout of {timeout:?}: {}", runnables.join(", "))]
    ShutdownTimedOut {
        /// Their names.
        runnables: Vec<String>,
        /// The timeout.
        timeout: Duration,
    },
    /// A runnable ([`Manager::add_runnable`]) failed: the manager stopped the others.
    #[error("{name} failed: {source}")]
    Runnable {
        /// The runnable's name.
        name: String,
        /// Its error.
        #[source]
        source: BoxError,
    },
}

/// A runnable as the manager keeps it: started with the token that stops it.
type Service =
    Box<dyn FnOnce(CancellationToken) -> BoxFuture<'static, Result<(), BoxError>> + Send>;

/// A controller bound to its reconciler, as the manager keeps it.
trait Runnable: Send {
    /// Whether its queue, handlers and caches start before leadership
    /// ([`ControllerConfig::warm_up`](crate::ControllerConfig::warm_up)).
    fn warms_up(&self) -> bool;
    fn run(self: Box<Self>, env: RunEnv) -> BoxFuture<'static, Result<(), ControllerError>>;
}

struct Bound<K, C, R> {
    controller: Controller<K, C>,
    reconciler: R,
}

impl<K, C, R> Runnable for Bound<K, C, R>
where
    K: Resource + Clone + Send + Sync + 'static,
    C: Send + Sync + 'static,
    R: Reconciler<K>,
{
    fn warms_up(&self) -> bool {
        self.controller.config().warm_up
    }

    fn run(self: Box<Self>, env: RunEnv) -> BoxFuture<'static, Result<(), ControllerError>> {
        let Bound {
            controller,
            reconciler,
        } = *self;
        Box::pin(controller.run_in(reconciler, env))
    }
}

/// The manager's factory, without its client type.
trait Informers: Send + Sync {
    fn start(&self, cancel: &CancellationToken);
    fn shutdown(&self) -> BoxFuture<'_, ()>;
    fn cached_objects(&self) -> usize;
}

impl<C: Send + Sync + 'static> Informers for SharedInformerFactory<C> {
    fn start(&self, cancel: &CancellationToken) {
        SharedInformerFactory::start(self, cancel);
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(SharedInformerFactory::shutdown(self))
    }

    fn cached_objects(&self) -> usize {
        SharedInformerFactory::cached_objects(self).values().sum()
    }
}

/// What the manager and its leader callbacks share.
struct Shared {
    /// Fires with the token given to `run`: stop gracefully.
    stop: CancellationToken,
    controllers: Mutex<Option<Vec<Box<dyn Runnable>>>>,
    syncs: Mutex<Vec<(String, InformerSynced)>>,
    phase: Mutex<Phase>,
    errors: Mutex<Vec<ControllerError>>,
    /// This replica's leadership, once it leads; what warm controllers wait for.
    leadership: tokio::sync::watch::Sender<Option<Leadership>>,
    /// Fires when the warm controllers' runs have ended.
    warm_done: CancellationToken,
    /// A lost leadership makes this replica a follower again instead of ending the run
    /// ([`ManagerBuilder::graceful_leader_transition`]).
    follow: bool,
}

impl Shared {
    /// Every controller not taken yet.
    fn take_controllers(&self) -> Vec<Box<dyn Runnable>> {
        self.controllers.lock().take().unwrap_or_default()
    }

    /// The controllers that warm up; the others stay.
    fn take_warm(&self) -> Vec<Box<dyn Runnable>> {
        let mut controllers = self.controllers.lock();
        let Some(all) = controllers.as_mut() else {
            return Vec::new();
        };
        let (warm, cold) = std::mem::take(all)
            .into_iter()
            .partition(|c| self.follow || c.warms_up());
        *all = cold;
        warm
    }

    /// How a controller runs under the election: its workers wait for the leadership.
    fn elected_env(&self) -> RunEnv {
        RunEnv {
            stop: self.stop.clone(),
            leadership: Some(self.leadership.subscribe()),
            follow: self.follow,
        }
    }

    /// The informers of every controller that have not synced yet.
    fn unsynced(&self) -> Vec<String> {
        let mut unsynced: Vec<String> = self
            .syncs
            .lock()
            .iter()
            .filter(|(_, synced)| !synced.has_synced())
            .map(|(name, _)| name.clone())
            .collect();
        unsynced.sort();
        unsynced.dedup();
        unsynced
    }
}

/// Runs `controllers` in `env`, all at once; the errors of those that failed.
async fn run_controllers(
    controllers: Vec<Box<dyn Runnable>>,
    env: impl Fn() -> RunEnv,
) -> Vec<ControllerError> {
    let runs = controllers
        .into_iter()
        .map(|controller| controller.run(env()));
    futures::future::join_all(runs)
        .await
        .into_iter()
        .filter_map(Result::err)
        .collect()
}

/// Makes the elector once the manager's callbacks exist.
type MakeElection =
    Box<dyn FnOnce(LeaderCallbacks) -> Result<Arc<dyn Election>, LeaderElectionConfigError>>;

/// Builds a [`Manager`] (made by [`Manager::builder`]).
pub struct ManagerBuilder {
    informers: Arc<dyn Informers>,
    health_probe_address: Option<SocketAddr>,
    metrics_address: Option<SocketAddr>,
    registry: Option<Registry>,
    election: Option<MakeElection>,
    watch_dog: Option<HealthzAdaptor>,
    on_new_leader: Option<NewLeader>,
    broadcaster: Option<EventBroadcaster>,
    cache_sync_timeout: Duration,
    graceful_shutdown_timeout: Duration,
    graceful_leader_transition: bool,
}

/// What is called with each leader the election observes.
type NewLeader = Arc<dyn Fn(&str) + Send + Sync>;

impl fmt::Debug for ManagerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManagerBuilder")
            .field("health_probe_address", &self.health_probe_address)
            .field("metrics_address", &self.metrics_address)
            .field("leader_election", &self.election.is_some())
            .field("cache_sync_timeout", &self.cache_sync_timeout)
            .field(
                "graceful_leader_transition",
                &self.graceful_leader_transition,
            )
            .finish_non_exhaustive()
    }
}

impl ManagerBuilder {
    /// Serves `/healthz` and `/readyz` on `address` (controller-runtime's
    /// `HealthProbeBindAddress`; port 0 picks a free port, see
    /// [`Manager::health_probe_address`]).
    #[must_use]
    pub fn health_probe_bind_address(mut self, address: SocketAddr) -> Self {
        self.health_probe_address = Some(address);
        self
    }

    /// Serves `/metrics` on `address` (controller-runtime's `Metrics.BindAddress`; port 0
    /// picks a free port, see [`Manager::metrics_address`]), and reports every controller's
    /// metrics ([`ControllerMetrics`]).
    #[must_use]
    pub fn metrics_bind_address(mut self, address: SocketAddr) -> Self {
        self.metrics_address = Some(address);
        self
    }

    /// The registry `/metrics` serves, with metrics of your own registered in it; the
    /// controllers' metrics are added to it. A fresh one by default.
    #[must_use]
    pub fn metrics_registry(mut self, registry: Registry) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Runs the controllers only while this replica leads the election `config` describes
    /// (its lock, durations, `release_on_cancel` and `name`). Its callbacks are the
    /// manager's: any set in `config` are replaced (see
    /// [`on_new_leader`](Self::on_new_leader)). Its `watch_dog`, if set, is the `/healthz`
    /// check.
    #[must_use]
    pub fn leader_election<L: Lock + 'static>(mut self, config: LeaderElectionConfig<L>) -> Self {
        self.watch_dog = config.watch_dog.clone();
        self.election = Some(Box::new(move |callbacks| {
            let elector = LeaderElector::new(LeaderElectionConfig {
                callbacks,
                ..config
            })?;
            Ok(Arc::new(elector) as Arc<dyn Election>)
        }));
        self
    }

    /// On a lost leadership, becomes a follower again instead of ending the run (KEP-5366's
    /// graceful leader transition, which kube-controller-manager takes up from Kubernetes
    /// 1.36; off by default, as controller-runtime exits). The reconciles in flight are
    /// dropped at once as ever, and their keys go back to the queue; every controller then
    /// warms up ([`ControllerConfig::warm_up`](crate::ControllerConfig::warm_up)): its
    /// handlers keep queueing while this replica follows, its caches stay warm, and it
    /// stands for election again at once. Leading again, the workers resume on the same
    /// queue: what changed while following is reconciled, nothing is listed again.
    /// [`Manager::run`] then ends only when its token fires (or a controller fails), never
    /// with [`ManagerError::LeaderElectionLost`].
    ///
    /// Use it where a restart is costly (large caches); keep the default where a process
    /// that lost its lease should start clean. Either way, the leader's writes must stay safe
    /// on their own (see [`LeaderToken`](kclient_tools::leaderelection::LeaderToken)).
    #[must_use]
    pub fn graceful_leader_transition(mut self, follow: bool) -> Self {
        self.graceful_leader_transition = follow;
        self
    }

    /// Calls `f` with the holder's identity whenever the election observes a new one, and
    /// with `""` when the lease is seen released (kclient-tools'
    /// [`LeaderCallbacks::on_new_leader`], which the manager's own callbacks replace). Quick:
    /// it runs on the elector's task.
    #[must_use]
    pub fn on_new_leader(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_new_leader = Some(Arc::new(f));
        self
    }

    /// Gives every controller added without a recorder of its own an Event recorder bound
    /// to its name ([`ReconcileContext::recorder`](crate::ReconcileContext::recorder)).
    #[must_use]
    pub fn event_broadcaster(mut self, broadcaster: EventBroadcaster) -> Self {
        self.broadcaster = Some(broadcaster);
        self
    }

    /// How long [`Manager::run`] waits for the caches before it fails (two minutes by
    /// default, controller-runtime's `CacheSyncTimeout`).
    #[must_use]
    pub fn cache_sync_timeout(mut self, timeout: Duration) -> Self {
        self.cache_sync_timeout = timeout;
        self
    }

    /// How long [`Manager::run`] waits, once stopped, for the runnables
    /// ([`Manager::add_runnable`]) to end (30 s by default, controller-runtime's
    /// `GracefulShutdownTimeout`); those still running then are dropped and the run fails
    /// with [`ManagerError::ShutdownTimedOut`]. Zero does not wait: they are dropped at once,
    /// without an error. Each controller has its own
    /// ([`ControllerConfig::graceful_shutdown_timeout`](crate::ControllerConfig::graceful_shutdown_timeout)).
    #[must_use]
    pub fn graceful_shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.graceful_shutdown_timeout = timeout;
        self
    }

    /// The manager: binds the endpoints' addresses and checks the election's configuration
    /// now, so that a wrong one fails here.
    pub fn build(self) -> Result<Manager, ManagerError> {
        let bind = |endpoint, address| {
            let listener = std::net::TcpListener::bind(address)
                .and_then(|l| l.set_nonblocking(true).map(|()| l))
                .map_err(|source| ManagerError::Bind {
                    endpoint,
                    address,
                    source,
                })?;
            Ok::<_, ManagerError>(listener)
        };
        let health_probe = self
            .health_probe_address
            .map(|address| bind("health probe", address))
            .transpose()?;
        let metrics_listener = self
            .metrics_address
            .map(|address| bind("metrics", address))
            .transpose()?;
        let (registry, metrics) = match metrics_listener {
            Some(_) => {
                let mut registry = self.registry.unwrap_or_default();
                let metrics = ControllerMetrics::new(&mut registry);
                (Some(Arc::new(registry)), Some(metrics))
            }
            None => (None, None),
        };
        let shared = Arc::new(Shared {
            stop: CancellationToken::new(),
            controllers: Mutex::new(Some(Vec::new())),
            syncs: Mutex::new(Vec::new()),
            phase: Mutex::new(Phase::Candidate),
            errors: Mutex::new(Vec::new()),
            leadership: tokio::sync::watch::channel(None).0,
            warm_done: CancellationToken::new(),
            follow: self.graceful_leader_transition && self.election.is_some(),
        });
        let on_new_leader = self.on_new_leader;
        let election = self
            .election
            .map(|make| make(leader_callbacks(&shared, on_new_leader)))
            .transpose()?;
        let (healthz, readyz) = built_in_checks(&shared, self.watch_dog);
        Ok(Manager {
            informers: self.informers,
            health_probe,
            metrics_listener,
            registry,
            metrics,
            election,
            broadcaster: self.broadcaster,
            cache_sync_timeout: self.cache_sync_timeout,
            graceful_shutdown_timeout: self.graceful_shutdown_timeout,
            services: Vec::new(),
            healthz,
            readyz,
            shared,
        })
    }
}

/// Runs several controllers on one [`SharedInformerFactory`], with leader
/// election, health and readiness probes, Prometheus metrics and graceful shutdown
/// (controller-runtime's `manager.Manager`).
///
/// ```text
///  every replica:   factory (one informer per type) --> caches warm --> /readyz 200
///                   /healthz, /metrics
///  the leader only: controllers' handlers + workers --> reconciles
/// ```
///
/// * **Caches in every replica, reconciles in the leader.** The factory's informers start at
///   once in every replica, so a replica that takes over has warm caches. With
///   [`leader_election`](ManagerBuilder::leader_election), the controllers (their handlers,
///   queues and workers) run only while this replica leads, and each worker asks the leader
///   token ([`LeaderToken::is_leader`](kclient_tools::leaderelection::LeaderToken::is_leader),
///   which reads the clock against the renew deadline) right before each reconcile.
///   Leadership lost: the reconciles in flight are dropped at once, and
///   [`run`](Manager::run) returns [`ManagerError::LeaderElectionLost`] (exit and let the
///   replica restart, as controller-runtime does) — or, with
///   [`graceful_leader_transition`](ManagerBuilder::graceful_leader_transition), the
///   replica follows again with its queues and caches kept, and leads on where it left off.
/// * **Probes** ([`health_probe_bind_address`](ManagerBuilder::health_probe_bind_address)):
///   `/healthz` and `/readyz` run their named checks in controller-runtime's format
///   ([`health`](crate::health)): `/healthz`'s `leaderElection` (the election config's
///   `watch_dog`, when set), `/readyz`'s `informer-sync` (every controller's caches synced;
///   `/readyz/informer-sync` names the informers still syncing), and those added with
///   [`add_healthz_check`](Manager::add_healthz_check) and
///   [`add_readyz_check`](Manager::add_readyz_check).
/// * **Metrics** ([`metrics_bind_address`](ManagerBuilder::metrics_bind_address)):
///   `/metrics` in the OpenMetrics text format, with controller-runtime's controller and
///   workqueue metrics ([`ControllerMetrics`]) and whatever else the registry given to
///   [`metrics_registry`](ManagerBuilder::metrics_registry) holds.
/// * **Graceful shutdown**: when the token given to [`run`](Manager::run) fires
///   ([`shutdown_on_signal`](crate::shutdown_on_signal) fires one on SIGTERM or Ctrl-C), no
///   new reconcile starts, the ones in flight get their controller's
///   [`graceful_shutdown_timeout`](crate::ControllerConfig::graceful_shutdown_timeout) — still as the
///   leader: the lease is released only after they finished — and the runnables get the
///   manager's [`graceful_shutdown_timeout`](ManagerBuilder::graceful_shutdown_timeout); then
///   the informers and the endpoints stop. A zero timeout does not wait.
///
/// ```no_run
/// use std::sync::Arc;
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kclient_cache::SharedInformerFactory;
/// use kclient_controller::{shutdown_on_signal, Action, Controller, Manager, ReconcileContext, Reconciler};
/// use kclient_tools::leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaseLock};
/// use kclient_typed::Clientset;
///
/// struct Noop;
/// impl Reconciler<ConfigMap> for Noop {
///     type Error = std::convert::Infallible;
///     async fn reconcile(&self, _: Arc<ConfigMap>, _: &ReconcileContext) -> Result<Action, Self::Error> {
///         Ok(Action::await_change())
///     }
/// }
///
/// # async fn run(clientset: Clientset) -> Result<(), Box<dyn std::error::Error>> {
/// let factory = SharedInformerFactory::new(clientset.clone(), Duration::ZERO);
/// let lock = LeaseLock::from_clientset(&clientset, "kube-system", "my-operator", "replica-1");
/// let mut manager = Manager::builder(&factory)
///     .health_probe_bind_address("0.0.0.0:8081".parse()?)
///     .metrics_bind_address("0.0.0.0:8080".parse()?)
///     .leader_election(LeaderElectionConfig::new(lock, LeaderCallbacks::new()))
///     .build()?;
/// manager.add(Controller::<ConfigMap, _>::new("config-maps", &factory), Noop);
/// manager.run(shutdown_on_signal()?).await?;
/// # Ok(()) }
/// ```
pub struct Manager {
    informers: Arc<dyn Informers>,
    health_probe: Option<std::net::TcpListener>,
    metrics_listener: Option<std::net::TcpListener>,
    registry: Option<Arc<Registry>>,
    metrics: Option<ControllerMetrics>,
    election: Option<Arc<dyn Election>>,
    broadcaster: Option<EventBroadcaster>,
    cache_sync_timeout: Duration,
    graceful_shutdown_timeout: Duration,
    services: Vec<(String, Service)>,
    healthz: Checks,
    readyz: Checks,
    shared: Arc<Shared>,
}

impl fmt::Debug for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Manager")
            .field("health_probe_address", &self.health_probe_address())
            .field("metrics_address", &self.metrics_address())
            .field("leader_election", &self.election.is_some())
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// A builder of a manager whose controllers share `factory` (build every controller on
    /// this factory: each type is then watched once for all of them).
    pub fn builder<C: Send + Sync + 'static>(factory: &SharedInformerFactory<C>) -> ManagerBuilder {
        ManagerBuilder {
            informers: Arc::new(factory.clone()),
            health_probe_address: None,
            metrics_address: None,
            registry: None,
            election: None,
            watch_dog: None,
            on_new_leader: None,
            broadcaster: None,
            cache_sync_timeout: DEFAULT_CACHE_SYNC_TIMEOUT,
            graceful_shutdown_timeout: DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT,
            graceful_leader_transition: false,
        }
    }

    /// Adds a controller with its reconciler. It reports to the manager's metrics and
    /// records Events through the manager's broadcaster, unless it was given its own.
    pub fn add<K, C, R>(&mut self, mut controller: Controller<K, C>, reconciler: R)
    where
        K: Resource + Clone + Send + Sync + 'static,
        C: Send + Sync + 'static,
        R: Reconciler<K>,
    {
        if let (Some(metrics), false) = (&self.metrics, controller.has_metrics()) {
            controller = controller.metrics(metrics.clone());
        }
        if let (Some(broadcaster), false) = (&self.broadcaster, controller.has_recorder()) {
            controller = controller.record_events(broadcaster);
        }
        self.shared
            .syncs
            .lock()
            .extend(controller.informer_syncs().iter().cloned());
        if let Some(controllers) = self.shared.controllers.lock().as_mut() {
            controllers.push(Box::new(Bound {
                controller,
                reconciler,
            }));
        }
    }

    /// Adds a runnable: work that runs in every replica, leader or not, from the start of
    /// [`run`](Self::run) until the manager stops (controller-runtime's `Add` of a runnable
    /// that needs no leader election — a webhook server, which must answer in whichever
    /// replica the API server reaches). `run` gets the token that fires when the manager
    /// stops; if it fails, the manager stops everything and returns
    /// [`ManagerError::Runnable`].
    ///
    /// ```no_run
    /// # async fn demo(mut manager: kclient_controller::Manager, server: kclient_webhook_stub::Server) {
    /// manager.add_runnable("webhook server", move |stop| server.run(stop));
    /// # }
    /// # mod kclient_webhook_stub { pub struct Server; impl Server { pub async fn run(self, _: kclient_core::CancellationToken) -> Result<(), std::io::Error> { Ok(()) } } }
    /// ```
    pub fn add_runnable<F, Fut, E>(&mut self, name: impl Into<String>, run: F)
    where
        F: FnOnce(CancellationToken) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<(), E>> + Send + 'static,
        E: Into<BoxError>,
    {
        let service: Service = Box::new(move |stop| {
            let running = run(stop);
            Box::pin(async move { running.await.map_err(Into::into) })
        });
        self.services.push((name.into(), service));
    }

    /// Adds a check to `/healthz` (controller-runtime's `AddHealthzCheck`): the liveness
    /// probe fails while it fails. Built in: `leaderElection` (the election's `watch_dog`,
    /// when set). See [`health`](crate::health) for what the endpoint answers.
    ///
    /// # Errors
    ///
    /// [`CheckError`] when the name is taken or is not a path segment.
    ///
    /// ```no_run
    /// # fn demo(mut manager: kclient_controller::Manager, pool: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Result<(), kclient_controller::health::CheckError> {
    /// manager.add_healthz_check("connection-pool", move || {
    ///     if pool.load(std::sync::atomic::Ordering::Relaxed) { Ok(()) } else { Err("the pool is exhausted") }
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn add_healthz_check<E: Into<BoxError>>(
        &mut self,
        name: impl Into<String>,
        check: impl Fn() -> Result<(), E> + Send + Sync + 'static,
    ) -> Result<(), CheckError> {
        self.healthz.add("healthz", name, checker(check))
    }

    /// Adds a check to `/readyz` (controller-runtime's `AddReadyzCheck`): the readiness
    /// probe fails while it fails. Built in: `informer-sync` (every controller's caches
    /// synced).
    ///
    /// # Errors
    ///
    /// [`CheckError`] when the name is taken or is not a path segment.
    pub fn add_readyz_check<E: Into<BoxError>>(
        &mut self,
        name: impl Into<String>,
        check: impl Fn() -> Result<(), E> + Send + Sync + 'static,
    ) -> Result<(), CheckError> {
        self.readyz.add("readyz", name, checker(check))
    }

    /// Counts the objects the manager's informers cache, whenever it is called (also after
    /// the manager was moved into [`run`](Self::run)).
    pub(crate) fn cached_objects_counter(&self) -> impl Fn() -> usize + Send + Sync + 'static {
        let informers = Arc::clone(&self.informers);
        move || informers.cached_objects()
    }

    /// Where `/healthz` and `/readyz` are served, if they are.
    pub fn health_probe_address(&self) -> Option<SocketAddr> {
        self.health_probe.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// Where `/metrics` is served, if it is.
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.metrics_listener
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    /// Runs until `shutdown` fires (see [`shutdown_on_signal`](crate::shutdown_on_signal)):
    /// starts the informers and the endpoints, waits for the caches, then runs the
    /// controllers — at once, or while this replica leads. When `shutdown` fires the
    /// controllers stop gracefully (each within its graceful shutdown timeout), then the
    /// lease is released (with `release_on_cancel`), the informers and the endpoints stop.
    pub async fn run(self, shutdown: CancellationToken) -> Result<(), ManagerError> {
        let Manager {
            informers,
            health_probe,
            metrics_listener,
            registry,
            metrics: _,
            election,
            broadcaster: _,
            cache_sync_timeout,
            graceful_shutdown_timeout,
            services,
            healthz,
            readyz,
            shared,
        } = self;
        let link = tokio::spawn({
            let stop = shared.stop.clone();
            async move {
                shutdown.cancelled().await;
                stop.cancel();
            }
        });
        let informers_stop = CancellationToken::new();
        informers.start(&informers_stop);
        let servers_stop = CancellationToken::new();
        let mut servers = Vec::new();
        if let Some(listener) = health_probe {
            servers.push(spawn_server(
                listener,
                probe_routes(healthz, readyz),
                &servers_stop,
            ));
        }
        if let (Some(listener), Some(registry)) = (metrics_listener, registry) {
            servers.push(spawn_server(
                listener,
                metrics_routes(registry),
                &servers_stop,
            ));
        }

        let services_stop = CancellationToken::new();
        let failed = Arc::new(Mutex::new(None));
        let services = start_services(services, &services_stop, &shared.stop, &failed);

        let outcome = run_with_caches(&shared, election, cache_sync_timeout).await;

        services_stop.cancel();
        let unfinished = stop_services(services, graceful_shutdown_timeout).await;
        informers_stop.cancel();
        informers.shutdown().await;
        servers_stop.cancel();
        for server in servers {
            let _ = server.await;
        }
        link.abort();
        let failure = failed.lock().take();
        match (failure, unfinished) {
            (Some(error), _) => Err(error),
            (None, unfinished) if !unfinished.is_empty() => Err(ManagerError::ShutdownTimedOut {
                runnables: unfinished,
                timeout: graceful_shutdown_timeout,
            }),
            (None, _) => outcome,
        }
    }
}

/// Waits up to `timeout` for the runnables to end (they were told to stop); drops those
/// still running then, and names them (none when the timeout is zero: not waiting was
/// asked for).
async fn stop_services(
    services: Vec<(String, tokio::task::JoinHandle<()>)>,
    timeout: Duration,
) -> Vec<String> {
    let mut unfinished = Vec::new();
    let deadline = tokio::time::Instant::now() + timeout;
    for (name, mut service) in services {
        if timeout.is_zero() {
            service.abort();
            let _ = service.await;
            continue;
        }
        if tokio::time::timeout_at(deadline, &mut service)
            .await
            .is_err()
        {
            tracing::error!(runnable = %name, ?timeout, "a runnable did not end within the graceful shutdown timeout: dropped");
            service.abort();
            let _ = service.await;
            unfinished.push(name);
        }
    }
    unfinished
}

/// Starts every runnable with a token that fires at `stop_services`; the first that fails
/// is kept in `failed` and stops the manager (`stop_manager`).
fn start_services(
    services: Vec<(String, Service)>,
    stop_services: &CancellationToken,
    stop_manager: &CancellationToken,
    failed: &Arc<Mutex<Option<ManagerError>>>,
) -> Vec<(String, tokio::task::JoinHandle<()>)> {
    services
        .into_iter()
        .map(|(name, service)| {
            let running = service(stop_services.clone());
            let (stop_manager, failed) = (stop_manager.clone(), Arc::clone(failed));
            let task_name = name.clone();
            let task = tokio::spawn(async move {
                let name = task_name;
                if let Err(source) = running.await {
                    tracing::error!(runnable = %name, error = %source, "a runnable failed; stopping the manager");
                    failed
                        .lock()
                        .get_or_insert(ManagerError::Runnable { name, source });
                    stop_manager.cancel();
                }
            });
            (name, task)
        })
        .collect()
}

/// Runs the controllers — under the election, if any — once the caches synced (those that
/// warm up: from the start, their workers waiting for leadership); what the run ended with.
async fn run_with_caches(
    shared: &Arc<Shared>,
    election: Option<Arc<dyn Election>>,
    cache_sync_timeout: Duration,
) -> Result<(), ManagerError> {
    let leave = CancellationToken::new();
    let warm = election.as_ref().map(|_| spawn_warm(shared, &leave));
    let outcome = async {
        wait_for_caches(shared, cache_sync_timeout).await?;
        match election {
            None => run_standalone(shared).await,
            Some(elector) => run_elected(shared, elector.as_ref(), leave).await?,
        }
        let errors = std::mem::take(&mut *shared.errors.lock());
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ManagerError::Controllers(errors))
        }
    }
    .await;
    if let Some(warm) = warm {
        // The run is over: warm controllers still waiting for leadership stop too.
        shared.stop.cancel();
        let _ = warm.await;
    }
    outcome
}

/// The manager's wait for every controller's informers: `Err` at the timeout, `Ok` once
/// synced or when stopped first.
async fn wait_for_caches(shared: &Shared, timeout: Duration) -> Result<(), ManagerError> {
    let syncs: Vec<InformerSynced> = shared.syncs.lock().iter().map(|(_, s)| s.clone()).collect();
    let waited = tokio::time::timeout(
        timeout,
        kclient_cache::wait_for_named_cache_sync("manager", &shared.stop, &syncs),
    )
    .await;
    match waited {
        Ok(_) => Ok(()),
        Err(_) => Err(ManagerError::CacheSyncTimeout {
            unsynced: shared.unsynced(),
            timeout,
        }),
    }
}

/// Without an election: every controller at once, until stopped.
async fn run_standalone(shared: &Shared) {
    if shared.stop.is_cancelled() {
        return;
    }
    let controllers = shared.take_controllers();
    let errors = run_controllers(controllers, || RunEnv::standalone(shared.stop.clone())).await;
    if errors.is_empty() {
        // Controllers end only when stopped, or when there are none: a manager of runnables
        // alone runs until it is stopped too.
        shared.stop.cancelled().await;
    }
    shared.errors.lock().extend(errors);
}
