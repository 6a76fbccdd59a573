//! The Manager: leader election on an in-memory lock and the paused clock (a lost lease
//! stops the reconciles at once and ends the run; a graceful shutdown as leader finishes the
//! reconciles in flight while still renewing, then releases; a replica that never leads never
//! reconciles; with a graceful leader transition, a lost lease makes the replica a follower
//! that leads on where it left off), and against kclient-fake in real time: two replicas with warm caches, one
//! reconciling, the other taking over on release without listing again; the probes and the
//! metrics endpoint.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kclient_cache::SharedInformerFactory;
use kclient_controller::{
    Action, Controller, ControllerConfig, Manager, ManagerError, ReconcileContext, Reconciler,
};
use kclient_core::{ApiError, CancellationToken, CreateOptions, GroupResource, ResourceExt};
use kclient_fake::{Failure, FakeApiServer};
use kclient_tools::events::{new_broadcaster, object_reference, EventType, MemorySink};
use kclient_tools::leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElectionRecord, LeaseLock, Lock, VersionedRecord,
};
use kclient_typed::Clientset;
use parking_lot::Mutex;
use tokio::time::Instant;

use crate::support::{
    clientset, config_map, eventually, eventually_async, http_get, Count, Counting, Probe, Sources,
};

/// An in-memory election store shared by the candidates' locks, with a switch that fails
/// every call.
#[derive(Clone, Default)]
struct Store {
    record: Arc<Mutex<Option<(LeaderElectionRecord, u64)>>>,
    failing: Arc<AtomicBool>,
}

impl Store {
    fn lock(&self, identity: &str) -> MemoryLock {
        MemoryLock {
            store: self.clone(),
            identity: identity.to_owned(),
            seen: Arc::new(AtomicU64::new(0)),
        }
    }

    fn holder(&self) -> Option<String> {
        self.record
            .lock()
            .as_ref()
            .map(|(r, _)| r.holder_identity.clone())
    }

    fn version(&self) -> u64 {
        self.record.lock().as_ref().map_or(0, |(_, v)| *v)
    }
}

struct MemoryLock {
    store: Store,
    identity: String,
    seen: Arc<AtomicU64>,
}

fn leases() -> GroupResource {
    GroupResource::new("coordination.k8s.io", "leases")
}

impl Lock for MemoryLock {
    type Error = ApiError;

    async fn get(&self) -> Result<VersionedRecord, ApiError> {
        if self.store.failing.load(Ordering::SeqCst) {
            return Err(ApiError::internal_error("the store is down"));
        }
        let record = self.store.record.lock().clone();
        let (record, version) = record.ok_or_else(|| ApiError::not_found(&leases(), "lease"))?;
        self.seen.store(version, Ordering::SeqCst);
        Ok(VersionedRecord {
            record,
            version: version.to_string(),
        })
    }

    async fn create(&self, record: LeaderElectionRecord) -> Result<(), ApiError> {
        if self.store.failing.load(Ordering::SeqCst) {
            return Err(ApiError::internal_error("the store is down"));
        }
        let mut stored = self.store.record.lock();
        if stored.is_some() {
            return Err(ApiError::already_exists(&leases(), "lease"));
        }
        *stored = Some((record, 1));
        self.seen.store(1, Ordering::SeqCst);
        Ok(())
    }

    async fn update(&self, record: LeaderElectionRecord) -> Result<(), ApiError> {
        if self.store.failing.load(Ordering::SeqCst) {
            return Err(ApiError::internal_error("the store is down"));
        }
        let mut stored = self.store.record.lock();
        let current = stored.as_ref().map_or(0, |(_, v)| *v);
        if current != self.seen.load(Ordering::SeqCst) {
            return Err(ApiError::conflict(&leases(), "lease", "written meanwhile"));
        }
        *stored = Some((record, current + 1));
        self.seen.store(current + 1, Ordering::SeqCst);
        Ok(())
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        "memory/lease".into()
    }
}

/// Reconciles ConfigMaps: `slow` takes `slow_for`; records whether it still led at the end.
struct Work {
    probe: Arc<Probe>,
    slow_for: Duration,
    finished: Arc<AtomicUsize>,
    led_at_the_end: Arc<Mutex<Vec<bool>>>,
}

impl Work {
    fn new(probe: &Arc<Probe>, slow_for: Duration) -> Self {
        Self {
            probe: Arc::clone(probe),
            slow_for,
            finished: Arc::default(),
            led_at_the_end: Arc::default(),
        }
    }
}

impl Reconciler<ConfigMap> for Work {
    type Error = std::convert::Infallible;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        ctx: &ReconcileContext,
    ) -> Result<Action, Self::Error> {
        let _running = self
            .probe
            .begin(ctx.key(), ctx.retries(), cm.resource_version());
        if cm.name_any() == "slow" {
            tokio::time::sleep(self.slow_for).await;
            self.led_at_the_end.lock().push(ctx.is_leader());
            self.finished.fetch_add(1, Ordering::SeqCst);
        }
        Ok(Action::await_change())
    }
}

fn election(store: &Store, identity: &str) -> LeaderElectionConfig<MemoryLock> {
    LeaderElectionConfig {
        release_on_cancel: true,
        name: "test".into(),
        ..LeaderElectionConfig::new(store.lock(identity), LeaderCallbacks::new())
    }
}

/// A manager of one ConfigMap controller (two workers) on `sources`, under `store`'s
/// election as `identity`.
fn replica(
    sources: &Sources,
    store: &Store,
    identity: &str,
    work: Work,
) -> (Manager, SharedInformerFactory<Sources>) {
    replica_with(sources, store, identity, work, false)
}

/// [`replica`], following after a lost lease when `follow` (a graceful leader transition).
fn replica_with(
    sources: &Sources,
    store: &Store,
    identity: &str,
    work: Work,
    follow: bool,
) -> (Manager, SharedInformerFactory<Sources>) {
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let mut manager = Manager::builder(&factory)
        .leader_election(election(store, identity))
        .graceful_leader_transition(follow)
        .build()
        .unwrap();
    let controller =
        Controller::<ConfigMap, _>::new("config-maps", &factory).with_config(ControllerConfig {
            workers: 2,
            ..ControllerConfig::default()
        });
    manager.add(controller, work);
    (manager, factory)
}

#[tokio::test(start_paused = true)]
async fn a_lost_lease_stops_the_reconciles_at_once_and_ends_the_run() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "a", &[]));
    sources.config_maps.add(config_map("default", "slow", &[]));
    let store = Store::default();
    let probe = Arc::new(Probe::default());
    let work = Work::new(&probe, Duration::from_secs(600));
    let finished = Arc::clone(&work.finished);
    let (manager, _factory) = replica(&sources, &store, "a", work);
    let shutdown = CancellationToken::new();
    let run = tokio::spawn(manager.run(shutdown.clone()));
    assert!(eventually(Duration::from_secs(10), || probe.count("default/slow") == 1).await);
    assert_eq!(store.holder().as_deref(), Some("a"));

    store.failing.store(true, Ordering::SeqCst);
    let failed_at = Instant::now();
    let outcome = run.await.unwrap();
    assert!(
        matches!(outcome, Err(ManagerError::LeaderElectionLost)),
        "{outcome:?}"
    );
    // The last successful renewal started at most a retry period (2 s) before the failures;
    // leadership ends at the renew deadline (10 s) after it.
    assert!(
        failed_at.elapsed() <= Duration::from_secs(10),
        "{:?}",
        failed_at.elapsed()
    );
    assert_eq!(
        finished.load(Ordering::SeqCst),
        0,
        "the reconcile in flight was dropped"
    );
    assert!(probe.overlaps().is_empty());
    // A change after the loss is not reconciled: nothing runs any more.
    let reconciles = probe.total();
    sources.config_maps.add(config_map("default", "later", &[]));
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(probe.total(), reconciles);
}

#[tokio::test(start_paused = true)]
async fn a_graceful_shutdown_while_leading_finishes_the_reconciles_in_flight_then_releases() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "slow", &[]));
    let store = Store::default();
    let probe = Arc::new(Probe::default());
    let work = Work::new(&probe, Duration::from_secs(25));
    let (finished, led) = (Arc::clone(&work.finished), Arc::clone(&work.led_at_the_end));
    let (manager, _factory) = replica(&sources, &store, "a", work);
    let shutdown = CancellationToken::new();
    let run = tokio::spawn(manager.run(shutdown.clone()));
    assert!(eventually(Duration::from_secs(10), || probe.count("default/slow") == 1).await);
    let version = store.version();
    shutdown.cancel();
    tokio::time::sleep(Duration::from_secs(12)).await;
    assert_eq!(
        store.holder().as_deref(),
        Some("a"),
        "still held while reconciles finish"
    );
    assert!(store.version() > version, "and renewed meanwhile");
    run.await.unwrap().unwrap();
    assert_eq!(finished.load(Ordering::SeqCst), 1);
    assert_eq!(*led.lock(), [true], "the reconcile still led at its end");
    assert_eq!(store.holder().as_deref(), Some(""), "released after");
}

#[tokio::test(start_paused = true)]
async fn a_replica_that_never_leads_keeps_warm_caches_never_reconciles_and_stops_when_told() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "a", &[]));
    let store = Store::default();
    let (leader_probe, follower_probe) = (Arc::new(Probe::default()), Arc::new(Probe::default()));
    let (leader, _leader_factory) = replica(
        &sources,
        &store,
        "a",
        Work::new(&leader_probe, Duration::ZERO),
    );
    let (stop_leader, stop_follower) = (CancellationToken::new(), CancellationToken::new());
    let leading = tokio::spawn(leader.run(stop_leader.clone()));
    assert!(
        eventually(Duration::from_secs(10), || leader_probe.count("default/a")
            == 1)
        .await
    );
    let (follower, follower_factory) = replica(
        &sources,
        &store,
        "b",
        Work::new(&follower_probe, Duration::ZERO),
    );
    let following = tokio::spawn(follower.run(stop_follower.clone()));
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(follower_probe.total(), 0);
    let cached = follower_factory
        .informer::<ConfigMap>()
        .lister()
        .list(&Default::default());
    assert_eq!(cached.len(), 1, "the follower's cache is warm");
    stop_follower.cancel();
    following.await.unwrap().unwrap();
    assert_eq!(follower_probe.total(), 0);
    assert_eq!(store.holder().as_deref(), Some("a"));
    stop_leader.cancel();
    leading.await.unwrap().unwrap();
}

const LIMIT: Duration = Duration::from_secs(30);

/// One replica against kclient-fake: its client (counting its informers' requests), its
/// probe, its manager's run and shutdown token, its probe endpoint.
struct Replica {
    client: Counting<Clientset>,
    probe: Arc<Probe>,
    shutdown: CancellationToken,
    run: tokio::task::JoinHandle<Result<(), ManagerError>>,
    health: std::net::SocketAddr,
}

fn start_replica(server: &FakeApiServer, identity: &str) -> Replica {
    let client = Counting::new(clientset(server));
    let lock = LeaseLock::from_clientset(&client.client, "default", "replicas", identity);
    let factory = SharedInformerFactory::new(client.clone(), Duration::ZERO);
    let mut manager = Manager::builder(&factory)
        .health_probe_bind_address("127.0.0.1:0".parse().unwrap())
        .leader_election(LeaderElectionConfig {
            lease_duration: Duration::from_secs(3),
            renew_deadline: Duration::from_secs(2),
            retry_period: Duration::from_millis(300),
            release_on_cancel: true,
            ..LeaderElectionConfig::new(lock, LeaderCallbacks::new())
        })
        .build()
        .unwrap();
    let probe = Arc::new(Probe::default());
    manager.add(
        Controller::<ConfigMap, _>::new("config-maps", &factory),
        Count::<ConfigMap>::new(&probe),
    );
    let health = manager.health_probe_address().unwrap();
    let shutdown = CancellationToken::new();
    let run = tokio::spawn(manager.run(shutdown.clone()));
    Replica {
        client,
        probe,
        shutdown,
        run,
        health,
    }
}

async fn ready(replica: &Replica) -> bool {
    http_get(replica.health, "/readyz")
        .await
        .is_ok_and(|(status, _)| status == 200)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_warm_their_caches_one_reconciles_and_the_other_takes_over_without_listing_again(
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let server = FakeApiServer::builder().start().await?;
    let config_maps = clientset(&server).core_v1().config_maps("default");
    for name in ["a", "b", "c"] {
        config_maps
            .create(&config_map("default", name, &[]), &CreateOptions::default())
            .await?;
    }
    let replicas = [start_replica(&server, "one"), start_replica(&server, "two")];
    let mut both_ready = false;
    for _ in 0..(LIMIT.as_millis() / 50) {
        if ready(&replicas[0]).await && ready(&replicas[1]).await {
            both_ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(both_ready, "both replicas' caches synced");
    assert!(eventually(LIMIT, || replicas.iter().any(|r| r.probe.total() == 3)).await);
    let leader = replicas.iter().position(|r| r.probe.total() == 3).unwrap();
    let follower = 1 - leader;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        replicas[follower].probe.total(),
        0,
        "only the leader reconciles"
    );

    let [first, second] = replicas;
    let (leader, follower) = if leader == 0 {
        (first, second)
    } else {
        (second, first)
    };
    leader.shutdown.cancel();
    leader.run.await??;
    // Released: the follower leads at its next attempt and reconciles every cached object.
    assert!(eventually(LIMIT, || follower.probe.total() == 3).await);
    config_maps
        .create(&config_map("default", "d", &[]), &CreateOptions::default())
        .await?;
    assert!(eventually(LIMIT, || follower.probe.count("default/d") == 1).await);
    assert_eq!(
        (follower.client.lists("ConfigMap"), follower.client.watches("ConfigMap")),
        (0, 1),
        "the follower's cache was warm: one (streaming) watch from its start, no list on taking over"
    );
    follower.shutdown.cancel();
    follower.run.await??;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probes_and_the_metrics_endpoint(
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let server = FakeApiServer::builder().start().await?;
    let clientset = clientset(&server);
    clientset
        .core_v1()
        .config_maps("default")
        .create(&config_map("default", "a", &[]), &CreateOptions::default())
        .await?;
    // The informer cannot list at first: not ready.
    server
        .faults()
        .fail_next(1_000, Failure::status(503).message("not yet"));
    let factory = SharedInformerFactory::new(clientset.clone(), Duration::ZERO);
    let mut manager = Manager::builder(&factory)
        .health_probe_bind_address("127.0.0.1:0".parse()?)
        .metrics_bind_address("127.0.0.1:0".parse()?)
        .build()?;
    let probe = Arc::new(Probe::default());
    manager.add(
        Controller::<ConfigMap, _>::new("config-maps", &factory),
        Count::<ConfigMap>::new(&probe),
    );
    let (health, metrics) = (
        manager.health_probe_address().unwrap(),
        manager.metrics_address().unwrap(),
    );
    let shutdown = CancellationToken::new();
    let run = tokio::spawn(manager.run(shutdown.clone()));
    assert_eq!(http_get(health, "/healthz").await?, (200, "ok".to_string()));
    let (status, body) = http_get(health, "/readyz").await?;
    assert_eq!(
        (status, body.as_str()),
        (
            500,
            "[-]informer-sync failed: reason withheld\nhealthz check failed\n"
        )
    );
    let (status, body) = http_get(health, "/readyz/informer-sync").await?;
    assert_eq!(
        (status, body.as_str()),
        (
            500,
            "internal server error: caches not synced: v1/ConfigMap\n"
        )
    );
    assert_eq!(http_get(health, "/nothing").await?.0, 404);

    server.faults().clear_failures();
    assert!(eventually(LIMIT, || probe.count("default/a") == 1).await);
    assert_eq!(http_get(health, "/readyz").await?, (200, "ok".to_string()));
    let (status, text) = http_get(metrics, "/metrics").await?;
    assert_eq!(status, 200);
    for line in [
        r#"controller_runtime_reconcile_total{controller="config-maps",result="success"} 1"#,
        r#"controller_runtime_max_concurrent_reconciles{controller="config-maps"} 1"#,
        r#"workqueue_adds_total{name="config-maps",controller="config-maps"} 1"#,
        "# EOF",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }

    shutdown.cancel();
    run.await??;
    assert!(
        tokio::net::TcpStream::connect(health).await.is_err(),
        "the probe endpoint is closed after the run"
    );
    Ok(())
}

#[test]
fn an_endpoint_address_in_use_fails_the_build() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let factory = SharedInformerFactory::new(Sources::default(), Duration::ZERO);
        let built = Manager::builder(&factory)
            .metrics_bind_address(address)
            .build();
        assert!(
            matches!(built, Err(ManagerError::Bind { endpoint: "metrics", address: a, .. }) if a == address),
            "{built:?}"
        );
    });
}

#[test]
fn a_leader_election_configuration_is_checked_when_the_manager_is_built() {
    let factory = SharedInformerFactory::new(Sources::default(), Duration::ZERO);
    let store = Store::default();
    let built = Manager::builder(&factory)
        .leader_election(LeaderElectionConfig {
            lease_duration: Duration::from_secs(5),
            renew_deadline: Duration::from_secs(10),
            ..election(&store, "a")
        })
        .build();
    assert!(
        matches!(built, Err(ManagerError::LeaderElection(_))),
        "{built:?}"
    );
}

/// Records an Event about each ConfigMap it reconciles.
struct Announce;

impl Reconciler<ConfigMap> for Announce {
    type Error = std::convert::Infallible;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        ctx: &ReconcileContext,
    ) -> Result<Action, Self::Error> {
        let recorder = ctx
            .recorder()
            .expect("the manager's broadcaster gave a recorder");
        recorder.event(
            &object_reference(cm.as_ref()),
            EventType::Normal,
            "Seen",
            "reconciled",
        );
        Ok(Action::await_change())
    }
}

#[tokio::test(start_paused = true)]
async fn controllers_record_events_as_themselves_and_new_leaders_are_reported() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "a", &[]));
    let store = Store::default();
    let broadcaster = new_broadcaster();
    let sink = MemorySink::new();
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    let leaders = Arc::new(Mutex::new(Vec::new()));
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let mut manager = Manager::builder(&factory)
        .leader_election(election(&store, "a"))
        .on_new_leader({
            let leaders = Arc::clone(&leaders);
            move |leader| leaders.lock().push(leader.to_owned())
        })
        .event_broadcaster(broadcaster.clone())
        .build()
        .unwrap();
    manager.add(
        Controller::<ConfigMap, _>::new("announcer", &factory),
        Announce,
    );
    let shutdown = CancellationToken::new();
    let run = tokio::spawn(manager.run(shutdown.clone()));
    assert!(eventually(Duration::from_secs(10), || !sink.events().is_empty()).await);
    let events: Vec<Event> = sink.events();
    assert_eq!(events.len(), 1);
    let source = events[0].source.clone().unwrap_or_default();
    assert_eq!(source.component.as_deref(), Some("announcer"));
    assert_eq!(events[0].reason.as_deref(), Some("Seen"));
    assert_eq!(events[0].involved_object.name.as_deref(), Some("a"));
    shutdown.cancel();
    run.await.unwrap().unwrap();
    broadcaster.shutdown().await;
    assert_eq!(leaders.lock().first().map(String::as_str), Some("a"));
}

/// A runnable (a webhook server, say) runs in every replica, leader or not, from the start
/// until the manager stops; one that fails stops the manager, which says which.
#[tokio::test(start_paused = true)]
async fn runnables_run_in_every_replica_and_one_that_fails_stops_the_manager() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "a", &[]));
    let store = Store::default();
    let leader_probe = Arc::new(Probe::default());
    let (leader, _leader_factory) = replica(
        &sources,
        &store,
        "a",
        Work::new(&leader_probe, Duration::ZERO),
    );
    let stop_leader = CancellationToken::new();
    let leading = tokio::spawn(leader.run(stop_leader.clone()));
    assert!(
        eventually(Duration::from_secs(10), || leader_probe.count("default/a")
            == 1)
        .await
    );
    let probe = Arc::new(Probe::default());
    let (mut follower, _factory) =
        replica(&sources, &store, "b", Work::new(&probe, Duration::ZERO));
    let (started, stopped) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (started_in, stopped_in) = (Arc::clone(&started), Arc::clone(&stopped));
    follower.add_runnable("server", move |stop: CancellationToken| async move {
        started_in.store(true, Ordering::SeqCst);
        stop.cancelled().await;
        stopped_in.store(true, Ordering::SeqCst);
        Ok::<(), std::io::Error>(())
    });
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(follower.run(shutdown.clone()));
    assert!(eventually(Duration::from_secs(10), || started.load(Ordering::SeqCst)).await);
    assert_eq!(probe.total(), 0, "not leading, yet the runnable runs");
    shutdown.cancel();
    running.await.unwrap().unwrap();
    assert!(stopped.load(Ordering::SeqCst), "stopped with the manager");
    stop_leader.cancel();
    leading.await.unwrap().unwrap();

    let (mut manager, _factory) = replica(
        &sources,
        &Store::default(),
        "c",
        Work::new(&probe, Duration::ZERO),
    );
    manager.add_runnable("broken", |_stop| async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        Err::<(), _>(std::io::Error::other("the port went away"))
    });
    let ended = tokio::time::timeout(
        Duration::from_secs(60),
        manager.run(CancellationToken::new()),
    )
    .await
    .expect("the manager stopped");
    match ended {
        Err(ManagerError::Runnable { name, source }) => {
            assert_eq!(
                (name.as_str(), source.to_string().as_str()),
                ("broken", "the port went away")
            );
        }
        other => panic!("{other:?}"),
    }
}

/// controller-runtime's `GracefulShutdownTimeout` for runnables: one that ignores the stop
/// is dropped after the timeout and named in the error; with a zero timeout the manager
/// does not wait, and it is no error.
#[tokio::test(start_paused = true)]
async fn runnables_get_the_graceful_shutdown_timeout_and_zero_does_not_wait() {
    for timeout in [Duration::from_secs(5), Duration::ZERO] {
        let sources = Sources::default();
        let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
        let mut manager = Manager::builder(&factory)
            .graceful_shutdown_timeout(timeout)
            .build()
            .unwrap();
        let (started, started_in) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let flag = Arc::clone(&started_in);
        manager.add_runnable("stubborn", move |_stop: CancellationToken| async move {
            flag.store(true, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok::<(), std::io::Error>(())
        });
        let _ = started;
        let shutdown = CancellationToken::new();
        let running = tokio::spawn(manager.run(shutdown.clone()));
        assert!(eventually(Duration::from_secs(5), || started_in.load(Ordering::SeqCst)).await);
        let stopping = Instant::now();
        shutdown.cancel();
        let ended = running.await.unwrap();
        assert_eq!(stopping.elapsed(), timeout);
        if timeout.is_zero() {
            ended.unwrap();
        } else {
            match ended {
                Err(ManagerError::ShutdownTimedOut {
                    runnables,
                    timeout: t,
                }) => {
                    assert_eq!((runnables, t), (vec!["stubborn".to_owned()], timeout));
                }
                other => panic!("{other:?}"),
            }
        }
        factory.shutdown().await;
    }
}

/// controller-runtime's `AddHealthzCheck` and `AddReadyzCheck`: the checks are served in
/// the aggregate and at their own paths; a name is taken once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_readiness_checks_of_ones_own(
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let sources = Sources::default();
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let mut manager = Manager::builder(&factory)
        .health_probe_bind_address("127.0.0.1:0".parse()?)
        .build()?;
    let warm = Arc::new(AtomicBool::new(false));
    let warm_in = Arc::clone(&warm);
    manager.add_readyz_check("warm", move || {
        if warm_in.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err("still warming up")
        }
    })?;
    manager.add_healthz_check("ping", || Ok::<(), std::io::Error>(()))?;
    let taken = manager.add_readyz_check("informer-sync", || Ok::<(), std::io::Error>(()));
    assert_eq!(
        taken.unwrap_err().to_string(),
        "a readyz check named \"informer-sync\" already exists"
    );
    let health = manager.health_probe_address().unwrap();
    let shutdown = CancellationToken::new();
    let run = tokio::spawn(manager.run(shutdown.clone()));
    assert_eq!(
        http_get(health, "/healthz?verbose").await?,
        (200, "[+]ping ok\nhealthz check passed\n".to_string())
    );
    assert!(
        eventually_async(LIMIT, || async {
            let ready = http_get(health, "/readyz/informer-sync").await;
            ready.is_ok_and(|(status, _)| status == 200)
        })
        .await
    );
    assert_eq!(
        http_get(health, "/readyz").await?,
        (
            500,
            "[+]informer-sync ok\n[-]warm failed: reason withheld\nhealthz check failed\n"
                .to_string()
        )
    );
    assert_eq!(
        http_get(health, "/readyz/warm").await?,
        (500, "internal server error: still warming up\n".to_string())
    );
    assert_eq!(
        http_get(health, "/readyz?exclude=warm").await?,
        (200, "ok".to_string())
    );
    warm.store(true, Ordering::SeqCst);
    assert_eq!(http_get(health, "/readyz").await?, (200, "ok".to_string()));
    assert_eq!(http_get(health, "/readyz/nothing").await?.0, 404);
    shutdown.cancel();
    run.await??;
    factory.shutdown().await;
    Ok(())
}

/// controller-runtime's `EnableWarmup`: a follower's warm controller fills its queue
/// before it leads (its workers wait), a cold one registers nothing until then; on
/// takeover both reconcile, neither before.
#[tokio::test(start_paused = true)]
async fn a_warm_follower_queues_before_it_leads_and_reconciles_only_after() {
    for warm in [false, true] {
        let sources = Sources::default();
        sources.config_maps.add(config_map("default", "a", &[]));
        let store = Store::default();
        let leader_probe = Arc::new(Probe::default());
        let (leader, _leader_factory) = replica(
            &sources,
            &store,
            "a",
            Work::new(&leader_probe, Duration::ZERO),
        );
        let stop_leader = CancellationToken::new();
        let leading = tokio::spawn(leader.run(stop_leader.clone()));
        assert!(
            eventually(Duration::from_secs(10), || leader_probe.count("default/a")
                == 1)
            .await
        );

        let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
        let mut follower = Manager::builder(&factory)
            .leader_election(election(&store, "b"))
            .build()
            .unwrap();
        let mut registry = prometheus_client::registry::Registry::default();
        let metrics = kclient_controller::ControllerMetrics::new(&mut registry);
        let probe = Arc::new(Probe::default());
        follower.add(
            Controller::<ConfigMap, _>::new("config-maps", &factory)
                .metrics(metrics)
                .with_config(ControllerConfig::default().warm_up(warm)),
            Work::new(&probe, Duration::ZERO),
        );
        let stop_follower = CancellationToken::new();
        let following = tokio::spawn(follower.run(stop_follower.clone()));
        tokio::time::sleep(Duration::from_secs(30)).await;
        let adds = || {
            let mut text = String::new();
            prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
            text.lines()
                .find(|l| l.starts_with("workqueue_adds_total{name=\"config-maps\""))
                .map(|l| l.rsplit(' ').next().unwrap().to_owned())
        };
        assert_eq!(probe.total(), 0, "a follower never reconciles");
        assert_eq!(
            adds(),
            warm.then(|| "1".to_owned()),
            "warm: queued before leading"
        );

        // The leader steps down (releasing): the follower takes over and reconciles.
        stop_leader.cancel();
        leading.await.unwrap().unwrap();
        assert!(eventually(Duration::from_secs(30), || probe.count("default/a") == 1).await);
        assert_eq!(store.holder().as_deref(), Some("b"));
        stop_follower.cancel();
        following.await.unwrap().unwrap();
        factory.shutdown().await;
    }
}

/// KEP-5366's graceful leader transition (kube-controller-manager's
/// `ControllerManagerReleaseLeaderElectionLockOnExit`, `cmd/kube-controller-manager/app/
/// controllermanager.go`: a lost election no longer exits the process): the lease lost, the
/// reconcile in flight is dropped at once but the run goes on as a follower, queueing and
/// not reconciling; leading again, the dropped key and what changed meanwhile are
/// reconciled; the token still ends the run, releasing.
#[tokio::test(start_paused = true)]
async fn a_graceful_leader_transition_follows_after_a_lost_lease_and_leads_on_where_it_left_off() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "slow", &[]));
    let store = Store::default();
    let probe = Arc::new(Probe::default());
    let work = Work::new(&probe, Duration::from_secs(600));
    let finished = Arc::clone(&work.finished);
    let (manager, _factory) = replica_with(&sources, &store, "a", work, true);
    let shutdown = CancellationToken::new();
    let mut run = tokio::spawn(manager.run(shutdown.clone()));
    assert!(eventually(Duration::from_secs(10), || probe.count("default/slow") == 1).await);

    // The lease cannot be renewed: leadership ends at the renew deadline, the run does not.
    store.failing.store(true, Ordering::SeqCst);
    let ended = tokio::time::timeout(Duration::from_secs(60), &mut run).await;
    assert!(ended.is_err(), "the run went on: {ended:?}");
    assert_eq!(
        finished.load(Ordering::SeqCst),
        0,
        "the reconcile in flight was dropped"
    );
    sources.config_maps.add(config_map("default", "later", &[]));
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        probe.count("default/later"),
        0,
        "a follower does not reconcile"
    );

    // The lease can be had again: this replica leads on.
    store.failing.store(false, Ordering::SeqCst);
    assert!(
        eventually(Duration::from_secs(30), || probe.count("default/later")
            == 1)
        .await
    );
    assert!(
        eventually(Duration::from_secs(30), || probe.count("default/slow") == 2).await,
        "the dropped key was given back to the queue"
    );
    assert_eq!(store.holder().as_deref(), Some("a"));
    assert!(probe.overlaps().is_empty());

    shutdown.cancel();
    // The slow reconcile (600 s) is past the graceful shutdown timeout (30 s by default).
    let outcome = run.await.unwrap();
    assert!(
        matches!(&outcome, Err(ManagerError::Controllers(errors))
            if matches!(errors[..], [kclient_controller::ControllerError::ShutdownTimedOut { in_flight: 1, .. }])),
        "{outcome:?}"
    );
    assert_eq!(
        store.holder().as_deref(),
        Some(""),
        "released on the way out"
    );
}

/// Taken over by another replica, a following replica waits, and takes the lease back
/// once that one releases it.
#[tokio::test(start_paused = true)]
async fn a_graceful_leader_transition_gives_way_to_a_new_holder_and_takes_over_after_it() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "a", &[]));
    let store = Store::default();
    let probe = Arc::new(Probe::default());
    let (manager, _factory) = replica_with(
        &sources,
        &store,
        "a",
        Work::new(&probe, Duration::ZERO),
        true,
    );
    let shutdown = CancellationToken::new();
    let mut run = tokio::spawn(manager.run(shutdown.clone()));
    assert!(eventually(Duration::from_secs(10), || probe.count("default/a") == 1).await);

    // Another candidate writes itself into the lease (as after a partition).
    {
        let mut stored = store.record.lock();
        let (record, version) = stored.as_mut().unwrap();
        record.holder_identity = "b".into();
        *version += 1;
    }
    // "a" sees it at its next renewal (2 s), and would take the lease again only after "b"
    // had not renewed it for a lease duration (15 s): look before.
    let ended = tokio::time::timeout(Duration::from_secs(5), &mut run).await;
    assert!(ended.is_err(), "the run went on: {ended:?}");
    sources.config_maps.add(config_map("default", "b", &[]));
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(probe.count("default/b"), 0, "a follower does not reconcile");
    assert_eq!(
        store.holder().as_deref(),
        Some("b"),
        "and does not take the lease early"
    );

    // "b" releases: "a" leads again and reconciles what it queued meanwhile.
    {
        let mut stored = store.record.lock();
        let (record, version) = stored.as_mut().unwrap();
        record.holder_identity = String::new();
        *version += 1;
    }
    assert!(eventually(Duration::from_secs(30), || probe.count("default/b") == 1).await);
    assert_eq!(store.holder().as_deref(), Some("a"));
    assert_eq!(
        probe.count("default/a"),
        1,
        "no reconcile again for what did not change"
    );
    shutdown.cancel();
    run.await.unwrap().unwrap();
}
