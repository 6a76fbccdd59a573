//! The reconcile loop's semantics on in-memory sources and tokio's paused clock: objects
//! read from the lister when the key is processed, deleted objects only for a reconciler
//! that asks, requeues, per-key backoff and the error policy, panics, predicates, owned and
//! watched objects, the cache sync timeout, graceful shutdown, the tracing span, metrics.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kclient_cache::SharedInformerFactory;
use kclient_controller::owner::set_controller_reference;
use kclient_controller::predicate::generation_changed;
use kclient_controller::{
    Action, Controller, ControllerConfig, ControllerError, ControllerMetrics, ReconcileContext,
    Reconciler,
};
use kclient_core::{
    ApiError, CancellationToken, DynamicObject, GroupResource, ObjectKey, PartialObjectMetadata,
    Resource, ResourceExt,
};
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::support::{config_map, crontabs, deployment, eventually, secret, Count, Probe, Sources};

/// A reconcile's error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Failed(String);

/// What a test reconciler does for one call.
type Act = Arc<
    dyn Fn(
            Arc<ConfigMap>,
            ReconcileContext,
        ) -> futures::future::BoxFuture<'static, Result<Action, Failed>>
        + Send
        + Sync,
>;

/// The keys `reconcile_deleted` saw, with the resourceVersion of the last known state.
type Deletions = Arc<Mutex<Vec<(String, Option<String>)>>>;

/// A reconciler of ConfigMaps that records each call in a probe and does what `act` says.
#[derive(Clone)]
struct Scripted {
    probe: Arc<Probe>,
    act: Act,
    /// Gives up on a key after this many retries (the default policy otherwise).
    give_up_after: Option<usize>,
    deleted: Option<Deletions>,
}

impl Scripted {
    fn new(
        probe: &Arc<Probe>,
        act: impl Fn(
                Arc<ConfigMap>,
                ReconcileContext,
            ) -> futures::future::BoxFuture<'static, Result<Action, Failed>>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        Self {
            probe: Arc::clone(probe),
            act: Arc::new(act),
            give_up_after: None,
            deleted: None,
        }
    }

    fn done(probe: &Arc<Probe>) -> Self {
        Self::new(probe, |_, _| Box::pin(async { Ok(Action::await_change()) }))
    }
}

impl Reconciler<ConfigMap> for Scripted {
    type Error = Failed;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        ctx: &ReconcileContext,
    ) -> Result<Action, Failed> {
        let _running = self
            .probe
            .begin(ctx.key(), ctx.retries(), cm.resource_version());
        (self.act)(cm, ctx.clone()).await
    }

    fn error_policy(&self, _error: &Failed, ctx: &ReconcileContext) -> Action {
        match self.give_up_after {
            Some(limit) => Action::requeue_rate_limited_up_to(ctx, limit),
            None => Action::requeue_rate_limited(),
        }
    }

    async fn reconcile_deleted(
        &self,
        last_known: Option<Arc<ConfigMap>>,
        ctx: &ReconcileContext,
    ) -> Result<Action, Failed> {
        if let Some(deleted) = &self.deleted {
            deleted.lock().push((
                ctx.key().to_string(),
                last_known.and_then(|cm| cm.resource_version().map(str::to_owned)),
            ));
        }
        Ok(Action::await_change())
    }
}

struct Running {
    factory: SharedInformerFactory<Sources>,
    shutdown: CancellationToken,
    task: JoinHandle<Result<(), ControllerError>>,
}

impl Running {
    async fn stop(self) -> Result<(), ControllerError> {
        self.shutdown.cancel();
        let outcome = self.task.await.expect("the controller's task");
        self.factory.shutdown().await;
        outcome
    }
}

/// Starts a ConfigMap controller on `sources` with `config` and `reconciler`.
fn start(sources: &Sources, config: ControllerConfig, reconciler: Scripted) -> Running {
    start_with(sources, |c| c.with_config(config), reconciler)
}

fn start_with(
    sources: &Sources,
    build: impl FnOnce(Controller<ConfigMap, Sources>) -> Controller<ConfigMap, Sources>,
    reconciler: Scripted,
) -> Running {
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let controller = build(Controller::new("config-maps", &factory));
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(controller.run(reconciler, shutdown.clone()));
    Running {
        factory,
        shutdown,
        task,
    }
}

fn key(name: &str) -> String {
    format!("default/{name}")
}

/// Lets everything runnable run (the paused clock moves on only when all is idle).
async fn settle() {
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[tokio::test(start_paused = true)]
async fn the_object_is_read_from_the_lister_when_its_key_is_processed() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "a", &[]));
    sources
        .config_maps
        .add(config_map("default", "b", &[("v", "1")]));
    let probe = Arc::new(Probe::default());
    let gate = Arc::new(Notify::new());
    let reconciler = Scripted::new(&probe, {
        let gate = Arc::clone(&gate);
        move |cm, _| {
            let gate = Arc::clone(&gate);
            Box::pin(async move {
                if cm.name_any() == "a" {
                    gate.notified().await;
                }
                Ok(Action::await_change())
            })
        }
    });
    let running = start(&sources, ControllerConfig::default(), reconciler);
    assert!(eventually(Duration::from_secs(5), || probe.count(&key("a")) == 1).await);
    // The one worker is busy with a; b is queued from the initial list. b changes twice.
    let b = sources
        .config_maps
        .modify(config_map("default", "b", &[("v", "2")]));
    let b = sources.config_maps.modify(ConfigMap {
        data: Some([("v".to_string(), "3".to_string())].into()),
        ..b
    });
    let lister = running.factory.informer::<ConfigMap>().lister();
    assert!(
        eventually(Duration::from_secs(5), || lister
            .namespaced("default")
            .get("b")
            .is_ok_and(
                |cached| cached.resource_version() == b.resource_version()
            ))
        .await
    );
    assert_eq!(probe.count(&key("b")), 0);
    gate.notify_one();
    settle().await;
    let seen = probe.seen_of(&key("b"));
    assert_eq!(seen.len(), 1, "three events, one reconcile: {seen:?}");
    assert_eq!(
        seen[0].resource_version.as_deref(),
        b.resource_version(),
        "the newest state, read at reconcile time"
    );
    running.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_deleted_object_is_not_reconciled_unless_the_reconciler_asks() {
    let sources = Sources::default();
    let a = sources.config_maps.add(config_map("default", "a", &[]));
    let probe = Arc::new(Probe::default());
    let running = start(
        &sources,
        ControllerConfig::default(),
        Scripted::done(&probe),
    );
    settle().await;
    assert_eq!(probe.count(&key("a")), 1);
    sources.config_maps.delete(a);
    settle().await;
    assert_eq!(
        probe.count(&key("a")),
        1,
        "no reconcile for the deleted object"
    );
    running.stop().await.unwrap();

    // Asking: reconcile_deleted gets the last state the deletion carried, once.
    let sources = Sources::default();
    let a = sources.config_maps.add(config_map("default", "a", &[]));
    let deleted = Arc::new(Mutex::new(Vec::new()));
    let probe = Arc::new(Probe::default());
    let reconciler = Scripted {
        deleted: Some(Arc::clone(&deleted)),
        ..Scripted::done(&probe)
    };
    let running = start(&sources, ControllerConfig::default(), reconciler);
    settle().await;
    let a = sources.config_maps.modify(ConfigMap {
        data: Some([("last".to_string(), "words".to_string())].into()),
        ..a
    });
    let gone = sources.config_maps.delete(a);
    settle().await;
    assert_eq!(
        *deleted.lock(),
        [(key("a"), gone.resource_version().map(str::to_owned))],
        "the state the deletion carried"
    );
    assert!(
        probe.count(&key("a")) <= 2,
        "the update may or may not be seen before the delete"
    );
    running.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn requeue_after_reconciles_again_without_an_event_and_await_change_does_not() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "poll", &[]));
    let probe = Arc::new(Probe::default());
    let calls = Arc::new(AtomicUsize::new(0));
    let reconciler = Scripted::new(&probe, {
        let calls = Arc::clone(&calls);
        move |_, _| {
            let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
            Box::pin(async move {
                Ok(if first {
                    Action::requeue(Duration::from_secs(10))
                } else {
                    Action::await_change()
                })
            })
        }
    });
    let running = start(&sources, ControllerConfig::default(), reconciler);
    tokio::time::sleep(Duration::from_secs(600)).await;
    let seen = probe.seen_of(&key("poll"));
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[1].at - seen[0].at, Duration::from_secs(10));
    assert_eq!(seen[1].retries, 0, "a success with requeue forgets");
    running.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn failures_back_off_per_key_exponentially_and_a_success_forgets_them() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "flaky", &[]));
    sources.config_maps.add(config_map("default", "fine", &[]));
    let probe = Arc::new(Probe::default());
    let failures = Arc::new(AtomicUsize::new(0));
    let reconciler = Scripted::new(&probe, {
        let failures = Arc::clone(&failures);
        move |cm, _| {
            let fail = cm.name_any() == "flaky" && failures.fetch_add(1, Ordering::SeqCst) < 3;
            Box::pin(async move {
                if fail {
                    Err(Failed("the world is not ready".into()))
                } else {
                    Ok(Action::await_change())
                }
            })
        }
    });
    let running = start(&sources, ControllerConfig::default(), reconciler);
    settle().await;
    let seen = probe.seen_of(&key("flaky"));
    let retries: Vec<usize> = seen.iter().map(|s| s.retries).collect();
    assert_eq!(retries, [0, 1, 2, 3]);
    let gaps: Vec<Duration> = seen.windows(2).map(|w| w[1].at - w[0].at).collect();
    // client-go's default controller limiter: 5 ms doubling per failure of the key.
    assert_eq!(
        gaps,
        [
            Duration::from_millis(5),
            Duration::from_millis(10),
            Duration::from_millis(20)
        ]
    );
    assert_eq!(probe.count(&key("fine")), 1, "other keys are not held back");
    // The success forgot the failures: the next change starts at retry 0.
    sources
        .config_maps
        .modify(config_map("default", "flaky", &[("v", "2")]));
    settle().await;
    assert_eq!(probe.seen_of(&key("flaky")).last().unwrap().retries, 0);
    running.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_error_policy_can_give_up_until_the_next_event() {
    let sources = Sources::default();
    sources
        .config_maps
        .add(config_map("default", "broken", &[]));
    let probe = Arc::new(Probe::default());
    let reconciler = Scripted {
        give_up_after: Some(2),
        ..Scripted::new(&probe, |_, _| {
            Box::pin(async { Err(Failed("always".into())) })
        })
    };
    let running = start(&sources, ControllerConfig::default(), reconciler);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    let retries: Vec<usize> = probe
        .seen_of(&key("broken"))
        .iter()
        .map(|s| s.retries)
        .collect();
    assert_eq!(retries, [0, 1, 2], "given up after two retries");
    sources
        .config_maps
        .modify(config_map("default", "broken", &[("v", "2")]));
    settle().await;
    let retries: Vec<usize> = probe
        .seen_of(&key("broken"))
        .iter()
        .map(|s| s.retries)
        .collect();
    assert_eq!(&retries[3..], [0, 1, 2], "the next event starts afresh");
    running.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_panicking_reconcile_is_an_error_and_the_worker_lives_on() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "a", &[]));
    sources.config_maps.add(config_map("default", "b", &[]));
    let probe = Arc::new(Probe::default());
    let panicked = Arc::new(AtomicUsize::new(0));
    let reconciler = Scripted::new(&probe, {
        let panicked = Arc::clone(&panicked);
        move |cm, _| {
            let panic = cm.name_any() == "a" && panicked.fetch_add(1, Ordering::SeqCst) == 0;
            Box::pin(async move {
                assert!(!panic, "a reconcile that panics");
                Ok(Action::await_change())
            })
        }
    });
    let metrics_registry = &mut prometheus_client::registry::Registry::default();
    let metrics = ControllerMetrics::new(metrics_registry);
    let running = start_with(&sources, |c| c.metrics(metrics), reconciler);
    settle().await;
    let retries: Vec<usize> = probe.seen_of(&key("a")).iter().map(|s| s.retries).collect();
    assert_eq!(retries, [0, 1], "retried with backoff");
    assert_eq!(probe.count(&key("b")), 1, "the one worker went on");
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, metrics_registry).unwrap();
    assert!(
        text.contains(r#"controller_runtime_reconcile_panics_total{controller="config-maps"} 1"#),
        "{text}"
    );
    running.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn predicates_filter_updates_of_the_primary_but_not_adds() {
    let sources = Sources::default();
    let mut cm = config_map("default", "spec", &[]);
    cm.metadata.generation = Some(1);
    let cm = sources.config_maps.add(cm);
    let probe = Arc::new(Probe::default());
    let running = start_with(
        &sources,
        |c| c.with_predicate(generation_changed()),
        Scripted::done(&probe),
    );
    settle().await;
    assert_eq!(probe.count(&key("spec")), 1, "the add passes");
    // A metadata-only change: same generation.
    let mut relabelled = cm.clone();
    relabelled.metadata.labels = Some([("tier".to_string(), "web".to_string())].into());
    let relabelled = sources.config_maps.modify(relabelled);
    settle().await;
    assert_eq!(probe.count(&key("spec")), 1, "filtered");
    let mut bumped = relabelled;
    bumped.metadata.generation = Some(2);
    sources.config_maps.modify(bumped);
    settle().await;
    assert_eq!(probe.count(&key("spec")), 2);
    running.stop().await.unwrap();
}

/// A Deployment reconciler that records which Deployments it saw.
struct Owners(Arc<Probe>);

impl Reconciler<Deployment> for Owners {
    type Error = Failed;

    async fn reconcile(
        &self,
        d: Arc<Deployment>,
        ctx: &ReconcileContext,
    ) -> Result<Action, Failed> {
        let _running = self.0.begin(ctx.key(), ctx.retries(), d.resource_version());
        Ok(Action::await_change())
    }
}

#[tokio::test(start_paused = true)]
async fn owned_objects_queue_their_controller_owner_and_watched_ones_their_mapped_keys() {
    let sources = Sources::default();
    let mut web = deployment("default", "web", 1);
    web.metadata.uid = Some("web-uid".into());
    let web = sources.deployments.add(web);
    let mut api = deployment("default", "api", 1);
    api.metadata.uid = Some("api-uid".into());
    let api = sources.deployments.add(api);
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let probe = Arc::new(Probe::default());
    // Secrets name the Deployment they configure in a label.
    let controller = Controller::<Deployment, _>::new("deployments", &factory)
        .owns::<ConfigMap>()
        .watches(|s: &Secret| {
            s.labels()
                .get("deployment")
                .map(|d| ObjectKey::namespaced(s.namespace().unwrap_or_default(), d.clone()))
        });
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(controller.run(Owners(Arc::clone(&probe)), shutdown.clone()));
    settle().await;
    assert_eq!(
        (probe.count("default/web"), probe.count("default/api")),
        (1, 1)
    );

    // An owned ConfigMap: its add, update and delete each queue web.
    let mut owned = config_map("default", "web-settings", &[]);
    set_controller_reference(&web, &mut owned).unwrap();
    let owned = sources.config_maps.add(owned);
    settle().await;
    assert_eq!(probe.count("default/web"), 2);
    let owned = sources.config_maps.modify(ConfigMap {
        data: Some([("edited".to_string(), "by hand".to_string())].into()),
        ..owned
    });
    settle().await;
    assert_eq!(probe.count("default/web"), 3);
    sources.config_maps.delete(owned);
    settle().await;
    assert_eq!(probe.count("default/web"), 4);
    // Not the controller: a plain owner reference to api does not map.
    let mut referenced = config_map("default", "shared", &[]);
    referenced.metadata.owner_references = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "api".into(),
            uid: "api-uid".into(),
            controller: None,
            block_owner_deletion: None,
        },
    ]);
    sources.config_maps.add(referenced);
    settle().await;
    assert_eq!(probe.count("default/api"), 1);

    // A watched Secret moving from api to web queues both.
    let s = sources
        .secrets
        .add(secret("default", "creds", &[("deployment", "api")]));
    settle().await;
    assert_eq!(probe.count("default/api"), 2);
    sources.secrets.modify(Secret {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            labels: Some([("deployment".to_string(), "web".to_string())].into()),
            ..s.metadata.clone()
        },
        ..s
    });
    settle().await;
    assert_eq!(
        (probe.count("default/web"), probe.count("default/api")),
        (5, 3)
    );
    // A key for an object that does not exist: not reconciled.
    sources
        .secrets
        .add(secret("default", "orphan", &[("deployment", "gone")]));
    settle().await;
    assert_eq!(probe.count("default/gone"), 0);
    let _ = api;
    shutdown.cancel();
    task.await.unwrap().unwrap();
    factory.shutdown().await;
}

/// `owns_metadata`: the owned objects come from the factory's metadata informer of their
/// resource — one, however many controllers and other readers ask for it — and their add,
/// update and delete queue their controller owner as `owns` does; `owns_metadata_with`'s
/// predicate filters their updates.
#[tokio::test(start_paused = true)]
async fn owned_objects_cached_as_metadata_queue_their_controller_owner() {
    let sources = Sources::default();
    let mut web = deployment("default", "web", 1);
    web.metadata.uid = Some("web-uid".into());
    let web = sources.deployments.add(web);
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let (every, labelled) = (Arc::new(Probe::default()), Arc::new(Probe::default()));
    let all_updates =
        Controller::<Deployment, _>::new("every", &factory).owns_metadata::<ConfigMap>();
    let label_updates = Controller::<Deployment, _>::new("labelled", &factory)
        .owns_metadata_with::<ConfigMap>(kclient_controller::predicate::labels_changed());
    // Another reader of the ConfigMaps' metadata on the same factory.
    let metadata = factory.for_resource::<PartialObjectMetadata>(&ConfigMap::api_resource(&()));
    assert_eq!(
        *sources.asked.lock(),
        ["metadata configmaps"],
        "one informer"
    );
    let shutdown = CancellationToken::new();
    let tasks = [
        tokio::spawn(all_updates.run(Owners(Arc::clone(&every)), shutdown.clone())),
        tokio::spawn(label_updates.run(Owners(Arc::clone(&labelled)), shutdown.clone())),
    ];
    settle().await;
    let counts = || (every.count("default/web"), labelled.count("default/web"));
    assert_eq!(counts(), (1, 1));

    let mut owned = config_map("default", "web-settings", &[]);
    set_controller_reference(&web, &mut owned).unwrap();
    let owned = sources
        .config_map_metadata
        .add(PartialObjectMetadata::from_resource(&owned));
    settle().await;
    assert_eq!(counts(), (2, 2), "an add always passes");
    assert!(metadata.lister().get("default/web-settings").is_ok());
    let mut annotated = owned;
    annotated.metadata.annotations = Some([("note".to_string(), "x".to_string())].into());
    let annotated = sources.config_map_metadata.modify(annotated);
    settle().await;
    assert_eq!(counts(), (3, 2), "not a label change");
    let mut relabelled = annotated;
    relabelled.metadata.labels = Some([("tier".to_string(), "web".to_string())].into());
    let relabelled = sources.config_map_metadata.modify(relabelled);
    settle().await;
    assert_eq!(counts(), (4, 3));
    sources.config_map_metadata.delete(relabelled);
    settle().await;
    assert_eq!(counts(), (5, 4), "a delete always passes");
    // A plain owner reference (not the controller) maps to nothing.
    let mut referenced =
        PartialObjectMetadata::from_resource(&config_map("default", "shared", &[]));
    let mut reference = kclient_controller::owner::controller_of(&owned_by(&web))
        .unwrap()
        .clone();
    reference.controller = None;
    referenced.metadata.owner_references = Some(vec![reference]);
    sources.config_map_metadata.add(referenced);
    settle().await;
    assert_eq!(counts(), (5, 4));
    assert!(every.overlaps().is_empty());
    shutdown.cancel();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    factory.shutdown().await;
}

/// A ConfigMap controlled by `owner`.
fn owned_by(owner: &Deployment) -> ConfigMap {
    let mut cm = config_map("default", "owned", &[]);
    set_controller_reference(owner, &mut cm).unwrap();
    cm
}

/// A controller of a resource known only at run time (`for_resource`, over
/// `DynamicObject`): its objects are reconciled from the factory's dynamic informer, deleted
/// ones are not, and the objects they control map to them by the resource's group and kind.
#[tokio::test(start_paused = true)]
async fn a_controller_of_a_resource_known_at_run_time_reconciles_dynamic_objects() {
    let sources = Sources::default();
    let crontab = |name: &str| {
        let mut ct = DynamicObject::new(name, &crontabs()).within("default");
        ct.metadata.uid = Some(format!("{name}-uid"));
        ct.data = serde_json::json!({"spec": {"cronSpec": "* * * * */5"}});
        ct
    };
    let nightly = sources.crontabs.add(crontab("nightly"));
    sources.crontabs.add(crontab("hourly"));
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let probe = Arc::new(Probe::default());
    let controller =
        Controller::<DynamicObject, _>::for_resource("crontabs", &factory, &crontabs())
            .owns::<ConfigMap>();
    assert_eq!(*sources.asked.lock(), ["objects crontabs"]);
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(controller.run(Count::new(&probe), shutdown.clone()));
    settle().await;
    assert_eq!(
        (
            probe.count("default/nightly"),
            probe.count("default/hourly")
        ),
        (1, 1)
    );

    // A ConfigMap the CronTab controls queues it; one controlled by a Deployment of the same
    // name does not.
    let mut owned = config_map("default", "nightly-job", &[]);
    kclient_controller::owner::set_controller_reference_with(
        &nightly,
        &crontabs(),
        &mut owned,
        &(),
    )
    .unwrap();
    sources.config_maps.add(owned);
    let mut impostor = deployment("default", "nightly", 1);
    impostor.metadata.uid = Some("deployment-uid".into());
    let mut other = config_map("default", "other", &[]);
    set_controller_reference(&impostor, &mut other).unwrap();
    sources.config_maps.add(other);
    settle().await;
    assert_eq!(probe.count("default/nightly"), 2);

    let mut changed = nightly.clone();
    changed.data["spec"]["cronSpec"] = serde_json::json!("0 0 * * *");
    let changed = sources.crontabs.modify(changed);
    settle().await;
    let seen = probe.seen_of("default/nightly");
    assert_eq!(seen.len(), 3);
    assert_eq!(
        seen[2].resource_version.as_deref(),
        changed.metadata.resource_version.as_deref(),
        "read from the cache"
    );
    sources.crontabs.delete(changed);
    settle().await;
    assert_eq!(probe.count("default/nightly"), 3, "deleted: not reconciled");
    shutdown.cancel();
    task.await.unwrap().unwrap();
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn caches_that_never_sync_fail_the_run_after_the_cache_sync_timeout() {
    let sources = Sources::default();
    sources.config_maps.set_list_error(Some(ApiError::forbidden(
        &GroupResource::new("", "configmaps"),
        "",
        "no permission",
    )));
    let probe = Arc::new(Probe::default());
    let started = Instant::now();
    let running = start(
        &sources,
        ControllerConfig {
            cache_sync_timeout: Duration::from_secs(30),
            ..ControllerConfig::default()
        },
        Scripted::done(&probe),
    );
    let Running { factory, task, .. } = running;
    match task.await.unwrap() {
        Err(ControllerError::CacheSyncTimeout {
            unsynced, timeout, ..
        }) => {
            assert_eq!(unsynced, ["v1/ConfigMap"]);
            assert_eq!(timeout, Duration::from_secs(30));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(started.elapsed(), Duration::from_secs(30));
    factory.shutdown().await;
}

/// A reconcile of `slow` that takes `took`; others return at once.
fn slow_reconciler(probe: &Arc<Probe>, took: Duration, finished: &Arc<AtomicUsize>) -> Scripted {
    let finished = Arc::clone(finished);
    Scripted::new(probe, move |cm, _| {
        let finished = Arc::clone(&finished);
        Box::pin(async move {
            if cm.name_any() == "slow" {
                tokio::time::sleep(took).await;
                finished.fetch_add(1, Ordering::SeqCst);
            }
            Ok(Action::await_change())
        })
    })
}

#[tokio::test(start_paused = true)]
async fn a_graceful_shutdown_lets_reconciles_in_flight_finish_and_starts_no_new_one() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "slow", &[]));
    let probe = Arc::new(Probe::default());
    let finished = Arc::new(AtomicUsize::new(0));
    let reconciler = slow_reconciler(&probe, Duration::from_secs(20), &finished);
    let running = start(&sources, ControllerConfig::default(), reconciler);
    assert!(eventually(Duration::from_secs(5), || probe.count(&key("slow")) == 1).await);
    // Queued behind it (one worker): never started once the shutdown began.
    sources
        .config_maps
        .add(config_map("default", "queued", &[]));
    settle().await;
    let stopping = Instant::now();
    running.stop().await.unwrap();
    assert_eq!(
        finished.load(Ordering::SeqCst),
        1,
        "the reconcile in flight finished"
    );
    assert!(stopping.elapsed() >= Duration::from_secs(18));
    assert_eq!(probe.count(&key("queued")), 0);
}

#[tokio::test(start_paused = true)]
async fn reconciles_past_the_graceful_shutdown_timeout_are_dropped() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "slow", &[]));
    let probe = Arc::new(Probe::default());
    let finished = Arc::new(AtomicUsize::new(0));
    let reconciler = slow_reconciler(&probe, Duration::from_secs(600), &finished);
    let running = start(
        &sources,
        ControllerConfig {
            graceful_shutdown_timeout: Duration::from_secs(5),
            ..ControllerConfig::default()
        },
        reconciler,
    );
    assert!(eventually(Duration::from_secs(5), || probe.count(&key("slow")) == 1).await);
    let stopping = Instant::now();
    match running.stop().await {
        Err(ControllerError::ShutdownTimedOut {
            in_flight, timeout, ..
        }) => {
            assert_eq!((in_flight, timeout), (1, Duration::from_secs(5)));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(stopping.elapsed(), Duration::from_secs(5));
    assert_eq!(finished.load(Ordering::SeqCst), 0);
    assert!(probe.overlaps().is_empty());
    // The dropped reconcile's guard ran: nothing is recorded as running.
    assert_eq!(probe.most_at_once(), 1);
}

/// controller-runtime's `GracefulShutdownTimeout: 0`: do not wait, and no error.
#[tokio::test(start_paused = true)]
async fn a_zero_graceful_shutdown_timeout_drops_the_reconciles_at_once_without_an_error() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "slow", &[]));
    let probe = Arc::new(Probe::default());
    let finished = Arc::new(AtomicUsize::new(0));
    let reconciler = slow_reconciler(&probe, Duration::from_secs(600), &finished);
    let config = ControllerConfig::default().graceful_shutdown_timeout(Duration::ZERO);
    let running = start(&sources, config, reconciler);
    assert!(eventually(Duration::from_secs(5), || probe.count(&key("slow")) == 1).await);
    let stopping = Instant::now();
    running.stop().await.unwrap();
    assert_eq!(stopping.elapsed(), Duration::ZERO);
    assert_eq!(finished.load(Ordering::SeqCst), 0);
}

/// controller-runtime's `ReconciliationTimeout` ("should count reconcile timeouts"): a
/// reconcile past the limit is dropped, counted as a timeout and an error, and its key
/// retried with the backoff; one within the limit is not.
#[tokio::test(start_paused = true)]
async fn a_reconcile_past_the_reconcile_timeout_is_dropped_counted_and_retried() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "slow", &[]));
    sources.config_maps.add(config_map("default", "quick", &[]));
    let probe = Arc::new(Probe::default());
    let finished = Arc::new(AtomicUsize::new(0));
    let reconciler = slow_reconciler(&probe, Duration::from_secs(60), &finished);
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = ControllerMetrics::new(&mut registry);
    let running = start_with(
        &sources,
        |c| {
            c.metrics(metrics).with_config(
                ControllerConfig::default()
                    .workers(2)
                    .reconcile_timeout(Duration::from_secs(10)),
            )
        },
        reconciler,
    );
    tokio::time::sleep(Duration::from_secs(15)).await;
    let slow = probe.seen_of(&key("slow"));
    assert_eq!(slow.len(), 2, "retried after the timeout: {slow:?}");
    assert_eq!(slow[1].at - slow[0].at, Duration::from_millis(10_005));
    assert_eq!(slow[1].retries, 1);
    assert_eq!(finished.load(Ordering::SeqCst), 0);
    assert_eq!(probe.count(&key("quick")), 1);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for line in [
        r#"controller_runtime_reconcile_timeouts_total{controller="config-maps"} 1"#,
        r#"controller_runtime_reconcile_errors_total{controller="config-maps"} 1"#,
        r#"controller_runtime_reconcile_total{controller="config-maps",result="success"} 1"#,
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    running.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn metrics_count_results_with_controller_runtimes_names() {
    let sources = Sources::default();
    for name in ["ok", "later", "bad"] {
        sources.config_maps.add(config_map("default", name, &[]));
    }
    let probe = Arc::new(Probe::default());
    let reconciler = Scripted {
        give_up_after: Some(0),
        ..Scripted::new(&probe, |cm, _| {
            Box::pin(async move {
                match cm.name_any() {
                    "later" => Ok(Action::requeue(Duration::from_secs(3600))),
                    "bad" => Err(Failed("bad".into())),
                    _ => Ok(Action::await_change()),
                }
            })
        })
    };
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = ControllerMetrics::new(&mut registry);
    let running = start_with(
        &sources,
        |c| {
            c.metrics(metrics).with_config(ControllerConfig {
                workers: 3,
                ..ControllerConfig::default()
            })
        },
        reconciler,
    );
    settle().await;
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for line in [
        r#"controller_runtime_reconcile_total{controller="config-maps",result="success"} 1"#,
        r#"controller_runtime_reconcile_total{controller="config-maps",result="requeue_after"} 1"#,
        r#"controller_runtime_reconcile_total{controller="config-maps",result="error"} 1"#,
        r#"controller_runtime_reconcile_total{controller="config-maps",result="requeue"} 0"#,
        r#"controller_runtime_reconcile_errors_total{controller="config-maps"} 1"#,
        r#"controller_runtime_reconcile_panics_total{controller="config-maps"} 0"#,
        r#"controller_runtime_reconcile_time_seconds_count{controller="config-maps"} 3"#,
        r#"controller_runtime_max_concurrent_reconciles{controller="config-maps"} 3"#,
        r#"controller_runtime_active_workers{controller="config-maps"} 0"#,
        r#"workqueue_adds_total{name="config-maps",controller="config-maps"} 3"#,
        // The initial list's keys, at low priority (controller-runtime's priority label).
        r#"workqueue_depth{name="config-maps",controller="config-maps",priority="-100"} 0"#,
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    running.stop().await.unwrap();
}

#[test]
fn each_reconcile_runs_in_a_span_with_its_key_and_attempt() {
    let trace = kclient_testkit::trace::capture();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let sources = Sources::default();
        sources.config_maps.add(config_map("prod", "web", &[]));
        let probe = Arc::new(Probe::default());
        let failures = Arc::new(AtomicUsize::new(0));
        let reconciler = Scripted::new(&probe, move |_, _| {
            let fail = failures.fetch_add(1, Ordering::SeqCst) == 0;
            Box::pin(async move {
                if fail {
                    Err(Failed("once".into()))
                } else {
                    Ok(Action::await_change())
                }
            })
        });
        let running = start(&sources, ControllerConfig::default(), reconciler);
        settle().await;
        running.stop().await.unwrap();
    });
    let spans: Vec<_> = trace
        .spans()
        .into_iter()
        .filter(|span| span.name == "reconcile")
        .map(|span| span.fields)
        .collect();
    let expect = |attempt: &str| {
        vec![
            ("controller", "config-maps".to_string()),
            ("key", "prod/web".to_string()),
            ("attempt", attempt.to_string()),
        ]
    };
    assert_eq!(spans, [expect("0"), expect("1")]);
}

/// Keys that requeue themselves at once, reconciles that never await: the workers always find
/// work, and must still give their thread back (tokio's cooperative budget), or the informer
/// and every other task on it would starve. On a current-thread runtime, so a starving worker
/// would stop everything: the runtime runs on a thread of its own, and the test waits for it
/// with a bound.
#[test]
fn workers_that_always_find_work_do_not_starve_the_runtime() {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let sources = Sources::default();
            for i in 0..10 {
                sources
                    .config_maps
                    .add(config_map("default", &format!("busy-{i}"), &[]));
            }
            let probe = Arc::new(Probe::default());
            let reconciler = Scripted::new(&probe, |_, _| {
                Box::pin(async { Ok(Action::requeue(Duration::ZERO)) })
            });
            let running = start(
                &sources,
                ControllerConfig {
                    workers: 2,
                    ..ControllerConfig::default()
                },
                reconciler,
            );
            // This task runs only if the workers yield; so do the informer's, which deliver
            // the object added now.
            while probe.total() < 10_000 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            sources.config_maps.add(config_map("default", "late", &[]));
            while probe.count(&key("late")) == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            running.stop().await.unwrap();
        });
        let _ = done.send(());
    });
    finished
        .recv_timeout(Duration::from_secs(60))
        .expect("the workers gave the runtime back");
}

#[tokio::test(start_paused = true)]
async fn the_rate_limiter_paces_backoff_and_rate_limited_requeues_and_a_fixed_requeue_keeps_the_failures(
) {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "paced", &[]));
    let probe = Arc::new(Probe::default());
    let calls = Arc::new(AtomicUsize::new(0));
    // Fails twice (the default policy: the limiter's backoff), then succeeds asking for a
    // rate-limited requeue, then fails once more with a fixed requeue, then settles.
    let reconciler = Scripted::new(&probe, {
        let calls = Arc::clone(&calls);
        move |_, _| {
            let call = calls.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                match call {
                    0 | 1 => Err(Failed("not yet".into())),
                    2 => Ok(Action::requeue_rate_limited()),
                    3 => Err(Failed("fixed".into())),
                    _ => Ok(Action::await_change()),
                }
            })
        }
    });
    struct FixedRetry(Scripted);
    impl Reconciler<ConfigMap> for FixedRetry {
        type Error = Failed;
        async fn reconcile(
            &self,
            cm: Arc<ConfigMap>,
            ctx: &ReconcileContext,
        ) -> Result<Action, Failed> {
            self.0.reconcile(cm, ctx).await
        }
        fn error_policy(&self, error: &Failed, _: &ReconcileContext) -> Action {
            match error.0.as_str() {
                "fixed" => Action::requeue(Duration::from_secs(30)),
                _ => Action::requeue_rate_limited(),
            }
        }
    }
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let limiter = kclient_workqueue::rate_limiter::ItemExponentialFailureRateLimiter::new(
        Duration::from_secs(1),
        Duration::from_secs(60),
    );
    let controller = Controller::<ConfigMap, _>::new("paced", &factory).rate_limiter(limiter);
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(controller.run(FixedRetry(reconciler), shutdown.clone()));
    tokio::time::sleep(Duration::from_secs(600)).await;
    let seen = probe.seen_of(&key("paced"));
    let gaps: Vec<Duration> = seen.windows(2).map(|w| w[1].at - w[0].at).collect();
    let retries: Vec<usize> = seen.iter().map(|s| s.retries).collect();
    // 1 s, 2 s: the custom limiter's backoff; 4 s: a rate-limited requeue after a success
    // counts as one more; 30 s: the fixed requeue, which does not forget the failures.
    assert_eq!(
        gaps,
        [
            Duration::from_secs(1),
            Duration::from_secs(2),
            Duration::from_secs(4),
            Duration::from_secs(30)
        ]
    );
    assert_eq!(retries, [0, 1, 2, 3, 3]);
    shutdown.cancel();
    task.await.unwrap().unwrap();
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn predicates_filter_the_updates_of_owned_and_watched_objects() {
    let sources = Sources::default();
    let mut web = deployment("default", "web", 1);
    web.metadata.uid = Some("web-uid".into());
    let web = sources.deployments.add(web);
    let mut owned = config_map("default", "web-settings", &[]);
    set_controller_reference(&web, &mut owned).unwrap();
    let owned = sources.config_maps.add(owned);
    let watched = sources
        .secrets
        .add(secret("default", "creds", &[("deployment", "web")]));
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let probe = Arc::new(Probe::default());
    let controller = Controller::<Deployment, _>::new("filtered", &factory)
        .owns_with::<ConfigMap>(kclient_controller::predicate::labels_changed())
        .watches_with(
            |s: &Secret| {
                Some(ObjectKey::namespaced(
                    "default",
                    s.labels()["deployment"].clone(),
                ))
            },
            kclient_controller::predicate::annotations_changed(),
        );
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(controller.run(Owners(Arc::clone(&probe)), shutdown.clone()));
    settle().await;
    let initial = probe.count("default/web");
    // Data changes: filtered out on both.
    let owned = sources.config_maps.modify(ConfigMap {
        data: Some([("v".to_string(), "2".to_string())].into()),
        ..owned
    });
    let mut changed = watched.clone();
    changed.data = Some([("token".to_string(), k8s_openapi::ByteString(b"x".to_vec()))].into());
    let watched = sources.secrets.modify(changed);
    settle().await;
    assert_eq!(probe.count("default/web"), initial);
    // A label on the owned object, an annotation on the watched one: both pass.
    let mut relabelled = owned;
    relabelled.metadata.labels = Some([("tier".to_string(), "web".to_string())].into());
    sources.config_maps.modify(relabelled);
    settle().await;
    assert_eq!(probe.count("default/web"), initial + 1);
    let mut annotated = watched;
    annotated.metadata.annotations = Some([("note".to_string(), "rotated".to_string())].into());
    sources.secrets.modify(annotated);
    settle().await;
    assert_eq!(probe.count("default/web"), initial + 2);
    shutdown.cancel();
    task.await.unwrap().unwrap();
    factory.shutdown().await;
}
