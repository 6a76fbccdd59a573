//! Controllers against kclient-fake over real HTTP: a Deployment controller keeping owned
//! ConfigMaps (changes to them reach the owner); several controllers on one factory watching
//! each type once; every object converging through dropped watches, a compaction (410) and
//! 5xx storms with no two reconciles of one key at once; the finalizer helper.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kclient_cache::{Lister, SharedInformerFactory};
use kclient_controller::finalizer::{finalizer, FinalizerError, FinalizerEvent};
use kclient_controller::owner::{
    controller_of, is_controlled_by, new_controlled_by, set_controller_reference,
    set_controller_reference_with,
};
use kclient_controller::{Action, Controller, ControllerConfig, ReconcileContext, Reconciler};
use kclient_core::{
    ApiStatus, CancellationToken, CreateOptions, DeleteOptions, DynamicObject, GroupResource,
    ObjectKey, PartialObjectMetadata, Patch, PatchOptions, Resource, ResourceExt, UpdateOptions,
};
use kclient_fake::{Failure, FakeApiServer};
use kclient_typed::{ApplyOptions, Clientset};
use serde_json::json;

use crate::support::{
    clientset, config_map, crontabs, deployment, eventually, eventually_async, replicas, secret,
    Count, Counting, Probe,
};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const LIMIT: Duration = Duration::from_secs(30);

/// Keeps a ConfigMap `<name>-settings` owned by each Deployment, holding its replicas (the
/// shape of client-go's sample-controller).
struct Settings {
    clientset: Clientset,
    config_maps: Lister<ConfigMap>,
    probe: Arc<Probe>,
}

impl Reconciler<Deployment> for Settings {
    type Error = BoxError;

    async fn reconcile(
        &self,
        d: Arc<Deployment>,
        ctx: &ReconcileContext,
    ) -> Result<Action, BoxError> {
        let _running = self
            .probe
            .begin(ctx.key(), ctx.retries(), d.resource_version());
        let namespace = d.namespace().unwrap_or_default();
        let name = format!("{}-settings", d.name_any());
        let want = BTreeMap::from([("replicas".to_string(), replicas(&d).to_string())]);
        let client = self.clientset.core_v1().config_maps(namespace);
        match self.config_maps.namespaced(namespace).get(&name) {
            Ok(cm) if cm.data.as_ref() == Some(&want) => {}
            Ok(cm) => {
                let mut cm = ConfigMap::clone(&cm);
                cm.data = Some(want);
                client.update(&cm, &UpdateOptions::default()).await?;
            }
            Err(e) if e.is_not_found() => {
                let mut cm = config_map(namespace, &name, &[]);
                cm.data = Some(want);
                set_controller_reference(d.as_ref(), &mut cm)?;
                match client.create(&cm, &CreateOptions::default()).await {
                    Err(e) if e.is_already_exists() => {} // the cache will show it
                    other => drop(other?),
                }
            }
            Err(e) => return Err(e.into()),
        }
        Ok(Action::await_change())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_to_owned_objects_reach_their_owner() -> Result<(), BoxError> {
    let server = FakeApiServer::builder().start().await?;
    let clientset = clientset(&server);
    let factory = SharedInformerFactory::new(clientset.clone(), Duration::ZERO);
    let probe = Arc::new(Probe::default());
    let controller = Controller::<Deployment, _>::new("settings", &factory).owns::<ConfigMap>();
    let reconciler = Settings {
        clientset: clientset.clone(),
        config_maps: factory.lister::<ConfigMap>(),
        probe: Arc::clone(&probe),
    };
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(controller.run(reconciler, shutdown.clone()));

    let deployments = clientset.apps_v1().deployments("default");
    let config_maps = clientset.core_v1().config_maps("default");
    let web = deployments
        .create(&deployment("default", "web", 2), &CreateOptions::default())
        .await?;
    let settings = || async { config_maps.get_opt("web-settings").await.ok().flatten() };
    let has_replicas = |want: &'static str| {
        move |cm: Option<ConfigMap>| {
            cm.and_then(|cm| cm.data)
                .is_some_and(|d| d.get("replicas").map(String::as_str) == Some(want))
        }
    };
    assert!(eventually_async(LIMIT, || async { has_replicas("2")(settings().await) }).await);
    let made = settings().await.unwrap();
    let owner = controller_of(&made).unwrap();
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("Deployment", "web", web.uid().unwrap())
    );

    // Someone edits the owned ConfigMap: the owner is reconciled, which repairs it.
    let before = probe.count("default/web");
    let patch = Patch::Merge(json!({"data": {"replicas": "99"}}));
    config_maps
        .patch("web-settings", &patch, &PatchOptions::default())
        .await?;
    assert!(eventually_async(LIMIT, || async { has_replicas("2")(settings().await) }).await);
    assert!(probe.count("default/web") > before);
    // Someone deletes it: remade.
    config_maps
        .delete("web-settings", &DeleteOptions::default())
        .await?;
    assert!(
        eventually_async(LIMIT, || async {
            settings().await.is_some_and(|cm| cm.uid() != made.uid())
        })
        .await
    );
    // The owner changes: the ConfigMap follows.
    deployments.scale_to("web", 5).await?;
    assert!(eventually_async(LIMIT, || async { has_replicas("5")(settings().await) }).await);
    // The owner goes: kclient-fake's garbage collector takes the ConfigMap with it.
    deployments
        .delete("web", &DeleteOptions::background())
        .await?;
    assert!(eventually_async(LIMIT, || async { settings().await.is_none() }).await);

    assert!(probe.overlaps().is_empty());
    shutdown.cancel();
    running.await??;
    factory.shutdown().await;
    Ok(())
}

/// Keeps a ConfigMap `<name>-settings` owned by each Deployment by applying it whole
/// (server-side apply) on every reconcile: it never reads the owned ConfigMaps, so their
/// metadata is all a controller needs to cache of them.
struct AppliedSettings {
    clientset: Clientset,
    probe: Arc<Probe>,
}

impl Reconciler<Deployment> for AppliedSettings {
    type Error = BoxError;

    async fn reconcile(
        &self,
        d: Arc<Deployment>,
        ctx: &ReconcileContext,
    ) -> Result<Action, BoxError> {
        let _running = self
            .probe
            .begin(ctx.key(), ctx.retries(), d.resource_version());
        let name = format!("{}-settings", d.name_any());
        let mut cm: ConfigMap = new_controlled_by(d.as_ref(), &name)?;
        cm.data = Some(BTreeMap::from([(
            "replicas".to_string(),
            replicas(&d).to_string(),
        )]));
        self.clientset
            .core_v1()
            .config_maps(d.namespace().unwrap_or_default())
            .apply(&name, &cm, &ApplyOptions::new("settings").force())
            .await?;
        Ok(Action::await_change())
    }
}

/// Whether `cm` holds `replicas`.
fn holds_replicas(cm: Option<ConfigMap>, replicas: &str) -> bool {
    cm.and_then(|cm| cm.data)
        .is_some_and(|d| d.get("replicas").map(String::as_str) == Some(replicas))
}

/// `owns_metadata` against kclient-fake: the server sends the owned ConfigMaps' metadata
/// only; two controllers owning them share the factory's one metadata informer (one watch,
/// no cache of whole ConfigMaps); an edit or a deletion of an owned ConfigMap reaches its
/// owner, whose reconcile repairs it; the garbage collector takes it with the owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owned_objects_cached_as_metadata_reach_their_owner_through_one_metadata_watch(
) -> Result<(), BoxError> {
    let server = FakeApiServer::builder().start().await?;
    let client = Counting::new(clientset(&server));
    let typed = clientset(&server);
    let factory = SharedInformerFactory::new(client.clone(), Duration::ZERO);
    let (probe, audit) = (Arc::new(Probe::default()), Arc::new(Probe::default()));
    let shutdown = CancellationToken::new();
    let runs = [
        tokio::spawn(
            Controller::<Deployment, _>::new("settings", &factory)
                .owns_metadata::<ConfigMap>()
                .run(
                    AppliedSettings {
                        clientset: typed.clone(),
                        probe: Arc::clone(&probe),
                    },
                    shutdown.clone(),
                ),
        ),
        tokio::spawn(
            Controller::<Deployment, _>::new("audit", &factory)
                .owns_metadata::<ConfigMap>()
                .run(Count::<Deployment>::new(&audit), shutdown.clone()),
        ),
    ];

    let deployments = typed.apps_v1().deployments("default");
    let config_maps = typed.core_v1().config_maps("default");
    let web = deployments
        .create(&deployment("default", "web", 2), &CreateOptions::default())
        .await?;
    let settings = || async { config_maps.get_opt("web-settings").await.ok().flatten() };
    assert!(eventually_async(LIMIT, || async { holds_replicas(settings().await, "2") }).await);
    let cached = factory
        .for_resource::<PartialObjectMetadata>(&ConfigMap::api_resource(&()))
        .lister()
        .namespaced("default");
    assert!(
        eventually(LIMIT, || cached
            .get("web-settings")
            .is_ok_and(|m| is_controlled_by(&*m, &web)))
        .await
    );
    assert_eq!(client.lister_watchers("ConfigMap/PartialObjectMetadata"), 1);
    assert_eq!(client.watches("ConfigMap/PartialObjectMetadata"), 1);
    assert_eq!(
        client.lister_watchers("ConfigMap"),
        0,
        "no whole ConfigMaps"
    );

    // Someone edits the owned ConfigMap: both owners' controllers hear of it, and the
    // settings controller repairs it.
    let before = audit.count("default/web");
    let patch = Patch::Merge(json!({"data": {"replicas": "99"}}));
    config_maps
        .patch("web-settings", &patch, &PatchOptions::default())
        .await?;
    assert!(eventually_async(LIMIT, || async { holds_replicas(settings().await, "2") }).await);
    assert!(eventually(LIMIT, || audit.count("default/web") > before).await);
    // Someone deletes it: remade.
    let made = settings().await.unwrap();
    config_maps
        .delete("web-settings", &DeleteOptions::default())
        .await?;
    assert!(
        eventually_async(LIMIT, || async {
            settings().await.is_some_and(|cm| cm.uid() != made.uid())
        })
        .await
    );
    // The owner changes, then goes.
    deployments.scale_to("web", 5).await?;
    assert!(eventually_async(LIMIT, || async { holds_replicas(settings().await, "5") }).await);
    deployments
        .delete("web", &DeleteOptions::background())
        .await?;
    assert!(eventually_async(LIMIT, || async { settings().await.is_none() }).await);
    assert!(eventually(LIMIT, || cached.get("web-settings").is_err()).await);

    assert!(probe.overlaps().is_empty());
    shutdown.cancel();
    for run in runs {
        run.await??;
    }
    factory.shutdown().await;
    Ok(())
}

/// Keeps a ConfigMap `<name>-schedule` holding each CronTab's `spec.cronSpec`, controlled by
/// the CronTab: a controller of a custom resource known only at run time.
struct Schedules {
    clientset: Clientset,
    probe: Arc<Probe>,
}

impl Reconciler<DynamicObject> for Schedules {
    type Error = BoxError;

    async fn reconcile(
        &self,
        ct: Arc<DynamicObject>,
        ctx: &ReconcileContext,
    ) -> Result<Action, BoxError> {
        let _running = self
            .probe
            .begin(ctx.key(), ctx.retries(), ct.resource_version());
        let namespace = ct.namespace().unwrap_or_default();
        let name = format!("{}-schedule", ct.name_any());
        let spec = ct.data["spec"]["cronSpec"].as_str().unwrap_or_default();
        let mut cm = config_map(namespace, &name, &[("cronSpec", spec)]);
        set_controller_reference_with(ct.as_ref(), &crontabs(), &mut cm, &())?;
        self.clientset
            .core_v1()
            .config_maps(namespace)
            .apply(&name, &cm, &ApplyOptions::new("schedules").force())
            .await?;
        Ok(Action::await_change())
    }
}

/// A controller of CronTabs, a custom resource the program knows only at run time
/// (`for_resource` over `DynamicObject`, on a factory over the Clientset), owning
/// ConfigMaps (metadata only) against kclient-fake: each CronTab gets its ConfigMap, a
/// changed schedule and an edited ConfigMap reach the CronTab, the garbage collector takes
/// the ConfigMap with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_controller_of_a_custom_resource_known_at_run_time() -> Result<(), BoxError> {
    let server = FakeApiServer::builder().start().await?;
    server.seed(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {"group": "stable.example.com", "scope": "Namespaced",
                 "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))?;
    let typed = clientset(&server);
    let factory = SharedInformerFactory::new(typed.clone(), Duration::ZERO);
    let probe = Arc::new(Probe::default());
    let controller =
        Controller::<DynamicObject, _>::for_resource("schedules", &factory, &crontabs())
            .owns_metadata::<ConfigMap>();
    let shutdown = CancellationToken::new();
    let reconciler = Schedules {
        clientset: typed.clone(),
        probe: Arc::clone(&probe),
    };
    let running = tokio::spawn(controller.run(reconciler, shutdown.clone()));

    let crontabs_client = kclient_dynamic::DynamicClient::new(typed.rest_client().clone())
        .resource(crontabs())
        .namespace("default");
    let nightly = DynamicObject::new("nightly", &crontabs())
        .within("default")
        .data(json!({"spec": {"cronSpec": "0 3 * * *"}}));
    crontabs_client
        .create(&nightly, &CreateOptions::default())
        .await?;
    let config_maps = typed.core_v1().config_maps("default");
    let schedule = || async { config_maps.get_opt("nightly-schedule").await.ok().flatten() };
    let holds = |want: &'static str| {
        move |cm: Option<ConfigMap>| {
            cm.and_then(|cm| cm.data)
                .is_some_and(|d| d.get("cronSpec").map(String::as_str) == Some(want))
        }
    };
    assert!(eventually_async(LIMIT, || async { holds("0 3 * * *")(schedule().await) }).await);
    let made = schedule().await.unwrap();
    let owner = controller_of(&made).unwrap();
    assert_eq!(
        (owner.api_version.as_str(), owner.kind.as_str()),
        ("stable.example.com/v1", "CronTab")
    );

    // The schedule changes: the ConfigMap follows. The ConfigMap is edited: repaired.
    let patch = Patch::Merge(json!({"spec": {"cronSpec": "0 0 * * *"}}));
    crontabs_client
        .patch("nightly", &patch, &PatchOptions::default())
        .await?;
    assert!(eventually_async(LIMIT, || async { holds("0 0 * * *")(schedule().await) }).await);
    let patch = Patch::Merge(json!({"data": {"cronSpec": "never"}}));
    config_maps
        .patch("nightly-schedule", &patch, &PatchOptions::default())
        .await?;
    assert!(eventually_async(LIMIT, || async { holds("0 0 * * *")(schedule().await) }).await);
    // The CronTab goes: so does its ConfigMap.
    crontabs_client
        .delete("nightly", &DeleteOptions::background())
        .await?;
    assert!(eventually_async(LIMIT, || async { schedule().await.is_none() }).await);
    assert!(probe.overlaps().is_empty());
    shutdown.cancel();
    running.await??;
    factory.shutdown().await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controllers_sharing_a_factory_watch_each_type_once() -> Result<(), BoxError> {
    let server = FakeApiServer::builder().start().await?;
    let client = Counting::new(clientset(&server));
    let typed = clientset(&server);
    typed
        .core_v1()
        .config_maps("default")
        .create(
            &config_map("default", "settings", &[]),
            &CreateOptions::default(),
        )
        .await?;
    typed
        .core_v1()
        .secrets("default")
        .create(&secret("default", "creds", &[]), &CreateOptions::default())
        .await?;
    typed
        .apps_v1()
        .deployments("default")
        .create(&deployment("default", "web", 1), &CreateOptions::default())
        .await?;

    // Three controllers reading three types, each type by two or three of them.
    let factory = SharedInformerFactory::new(client.clone(), Duration::ZERO);
    let probes: Vec<Arc<Probe>> = (0..3).map(|_| Arc::new(Probe::default())).collect();
    let shutdown = CancellationToken::new();
    let deployments = Controller::<Deployment, _>::new("deployments", &factory)
        .owns::<ConfigMap>()
        .owns::<Secret>();
    let config_maps =
        Controller::<ConfigMap, _>::new("config-maps", &factory).watches(|s: &Secret| {
            Some(ObjectKey::namespaced(
                s.namespace().unwrap_or_default(),
                "settings",
            ))
        });
    let secrets = Controller::<Secret, _>::new("secrets", &factory).watches(|d: &Deployment| {
        Some(ObjectKey::namespaced(
            d.namespace().unwrap_or_default(),
            "creds",
        ))
    });
    let runs = vec![
        tokio::spawn(deployments.run(Count::<Deployment>::new(&probes[0]), shutdown.clone())),
        tokio::spawn(config_maps.run(Count::<ConfigMap>::new(&probes[1]), shutdown.clone())),
        tokio::spawn(secrets.run(Count::<Secret>::new(&probes[2]), shutdown.clone())),
    ];
    assert!(
        eventually(LIMIT, || {
            probes[0].count("default/web") >= 1
                && probes[1].count("default/settings") >= 1
                && probes[2].count("default/creds") >= 1
        })
        .await
    );
    for kind in ["ConfigMap", "Secret", "Deployment"] {
        assert_eq!(client.lister_watchers(kind), 1, "{kind}: one informer");
        // The first watch of each informer is a streaming list (sendInitialEvents), which
        // kclient-fake serves: one watch per type, no list.
        assert_eq!(client.watches(kind), 1, "{kind}: one watch");
        assert_eq!(client.lists(kind), 0, "{kind}: no list");
    }
    shutdown.cancel();
    for run in runs {
        run.await??;
    }
    factory.shutdown().await;
    Ok(())
}

/// Writes each ConfigMap's `data.v` into its annotation `observed`, counting reconciles.
struct Observe {
    clientset: Clientset,
    probe: Arc<Probe>,
}

impl Reconciler<ConfigMap> for Observe {
    type Error = kclient_typed::Error;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        ctx: &ReconcileContext,
    ) -> Result<Action, Self::Error> {
        let _running = self
            .probe
            .begin(ctx.key(), ctx.retries(), cm.resource_version());
        // Long enough for other keys' reconciles to overlap with this one.
        tokio::time::sleep(Duration::from_millis(5)).await;
        let v = cm
            .data
            .as_ref()
            .and_then(|d| d.get("v"))
            .cloned()
            .unwrap_or_default();
        if cm.annotations().get("observed") != Some(&v) {
            let patch = Patch::Merge(json!({"metadata": {"annotations": {"observed": v}}}));
            self.clientset
                .core_v1()
                .config_maps(cm.namespace().unwrap_or_default())
                .patch(cm.name_any(), &patch, &PatchOptions::default())
                .await?;
        }
        Ok(Action::await_change())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_object_converges_through_dropped_watches_a_compaction_and_5xx_storms(
) -> Result<(), BoxError> {
    const OBJECTS: usize = 40;
    let server = FakeApiServer::builder().start().await?;
    let clientset = clientset(&server);
    let config_maps = GroupResource::new("", "configmaps");
    for i in 0..OBJECTS {
        server.seed_typed(&config_map("default", &format!("cm-{i}"), &[("v", "0")]))?;
    }
    let factory = SharedInformerFactory::new(clientset.clone(), Duration::ZERO);
    let probe = Arc::new(Probe::default());
    let controller =
        Controller::<ConfigMap, _>::new("observe", &factory).with_config(ControllerConfig {
            workers: 4,
            ..ControllerConfig::default()
        });
    let shutdown = CancellationToken::new();
    let reconciler = Observe {
        clientset: clientset.clone(),
        probe: Arc::clone(&probe),
    };
    let running = tokio::spawn(controller.run(reconciler, shutdown.clone()));

    let converged = || {
        server.list::<ConfigMap>(Some("default")).iter().all(|cm| {
            let v = cm.data.as_ref().and_then(|d| d.get("v"));
            v.is_some() && cm.annotations().get("observed") == v
        })
    };
    let stuck = || -> Vec<String> {
        server
            .list::<ConfigMap>(Some("default"))
            .iter()
            .filter(|cm| {
                cm.data.as_ref().and_then(|d| d.get("v")) != cm.annotations().get("observed")
            })
            .map(|cm| cm.name_any().to_owned())
            .collect()
    };
    assert!(
        eventually(LIMIT, converged).await,
        "the initial list: {:?}",
        stuck()
    );
    let faults = server.faults();
    // Each fault, then a change of half the objects (made inside the server, so that the
    // faults meet the controller's requests only); then every object must converge.
    let script: [(&str, &dyn Fn()); 6] = [
        ("dropped watches", &|| faults.drop_watches()),
        ("a compaction (410)", &|| faults.compact_history()),
        ("a 503 storm", &|| {
            faults.fail_next(15, Failure::status(503).message("a storm"))
        }),
        ("dropped watches", &|| faults.drop_watches()),
        ("a 500 storm", &|| {
            faults.fail_next(15, Failure::status(500).message("a storm"))
        }),
        ("a compaction (410)", &|| faults.compact_history()),
    ];
    for (round, (fault, inject)) in script.iter().enumerate() {
        inject();
        for i in (0..OBJECTS).filter(|i| (i + round) % 2 == 0) {
            server.modify(&config_maps, "default", &format!("cm-{i}"), |cm| {
                cm["data"]["v"] = json!(round.to_string());
            })?;
        }
        assert!(
            eventually(LIMIT, converged).await,
            "after {fault}, not converged: {:?}",
            stuck()
        );
    }
    assert_eq!(server.list::<ConfigMap>(Some("default")).len(), OBJECTS);
    assert!(probe.overlaps().is_empty(), "{:?}", probe.overlaps());
    assert!(
        probe.most_at_once() > 1,
        "the four workers ran reconciles side by side"
    );
    assert!(
        probe.seen().iter().any(|s| s.retries > 0),
        "the storms failed some writes, which were retried with backoff"
    );
    shutdown.cancel();
    running.await??;
    factory.shutdown().await;
    Ok(())
}

/// Records in an external ledger (a shared list) what the finalizer helper did.
struct Ledger {
    clientset: Clientset,
    applied: Arc<AtomicUsize>,
    cleaned: Arc<AtomicUsize>,
}

const FINALIZER: &str = "kclient.io/ledger";

impl Reconciler<ConfigMap> for Ledger {
    type Error = FinalizerError<std::convert::Infallible>;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        _: &ReconcileContext,
    ) -> Result<Action, Self::Error> {
        let client = self.clientset.core_v1().config_maps("");
        finalizer(&client, FINALIZER, cm, |event| async {
            match event {
                FinalizerEvent::Apply(cm) => {
                    assert!(cm.finalizers().iter().any(|f| f == FINALIZER));
                    self.applied.fetch_add(1, Ordering::SeqCst);
                }
                FinalizerEvent::Cleanup(_) => {
                    self.cleaned.fetch_add(1, Ordering::SeqCst);
                }
            }
            Ok(Action::await_change())
        })
        .await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_finalizer_is_added_before_apply_and_cleanup_runs_once_before_the_object_goes(
) -> Result<(), BoxError> {
    let server = FakeApiServer::builder().start().await?;
    let clientset = clientset(&server);
    let factory = SharedInformerFactory::new(clientset.clone(), Duration::ZERO);
    let (applied, cleaned) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let reconciler = Ledger {
        clientset: clientset.clone(),
        applied: Arc::clone(&applied),
        cleaned: Arc::clone(&cleaned),
    };
    let shutdown = CancellationToken::new();
    let controller = Controller::<ConfigMap, _>::new("ledger", &factory);
    let running = tokio::spawn(controller.run(reconciler, shutdown.clone()));
    let config_maps = clientset.core_v1().config_maps("default");
    // Another controller's finalizer is there already, and is kept.
    let mut cm = config_map("default", "booked", &[]);
    cm.metadata.finalizers = Some(vec!["example.com/other".into()]);
    config_maps.create(&cm, &CreateOptions::default()).await?;
    assert!(eventually(LIMIT, || applied.load(Ordering::SeqCst) >= 1).await);
    let stored = config_maps.get("booked").await?;
    assert_eq!(stored.finalizers(), ["example.com/other", FINALIZER]);

    config_maps
        .delete("booked", &DeleteOptions::default())
        .await?;
    // Ours goes once the cleanup ran; the other controller's holds the object.
    assert!(
        eventually_async(LIMIT, || async {
            config_maps
                .get("booked")
                .await
                .is_ok_and(|cm| cm.finalizers() == ["example.com/other"])
        })
        .await
    );
    let patch = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    config_maps
        .patch("booked", &patch, &PatchOptions::default())
        .await?;
    assert!(
        eventually_async(LIMIT, || async {
            config_maps
                .get_opt("booked")
                .await
                .is_ok_and(|cm| cm.is_none())
        })
        .await
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(cleaned.load(Ordering::SeqCst), 1, "cleanup ran once");
    shutdown.cancel();
    running.await??;
    factory.shutdown().await;
    Ok(())
}

/// A reconcile from a cache that has not seen the finalizer's removal yet (the object
/// deleting, still carrying the finalizer) does not clean up again: the helper reads the
/// object live first. Seen on kube-apiserver, where the owned ConfigMap's deletion by the
/// garbage collector queued the owner again before its finalizer's removal reached the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_cleanup_does_not_run_again_from_a_stale_copy() -> Result<(), BoxError> {
    let server = FakeApiServer::builder().start().await?;
    let clientset = clientset(&server);
    let config_maps = clientset.core_v1().config_maps("default");
    let cleaned = Arc::new(AtomicUsize::new(0));
    let clean = |stale: &ConfigMap| {
        let cleaned = Arc::clone(&cleaned);
        finalizer(
            &config_maps,
            FINALIZER,
            Arc::new(stale.clone()),
            move |event| {
                if let FinalizerEvent::Cleanup(_) = event {
                    cleaned.fetch_add(1, Ordering::SeqCst);
                }
                async { Ok::<_, std::convert::Infallible>(Action::await_change()) }
            },
        )
    };
    for (name, others) in [("alone", vec![]), ("held", vec!["example.com/other"])] {
        cleaned.store(0, Ordering::SeqCst);
        let mut cm = config_map("default", name, &[]);
        let finalizers = others
            .iter()
            .map(|f| f.to_string())
            .chain([FINALIZER.to_string()]);
        cm.metadata.finalizers = Some(finalizers.collect());
        config_maps.create(&cm, &CreateOptions::default()).await?;
        config_maps.delete(name, &DeleteOptions::default()).await?;
        let stale = config_maps.get(name).await?;
        assert!(stale.is_being_deleted());

        assert_eq!(clean(&stale).await?, Action::await_change());
        assert_eq!(cleaned.load(Ordering::SeqCst), 1, "{name}: cleaned up");
        // The same stale copy again: the finalizer is gone from the server (with the object,
        // or from the object another finalizer holds), so nothing runs.
        assert_eq!(clean(&stale).await?, Action::await_change());
        assert_eq!(
            cleaned.load(Ordering::SeqCst),
            1,
            "{name}: not cleaned up twice"
        );
    }
    assert!(config_maps.get_opt("alone").await?.is_none());
    assert_eq!(
        config_maps.get("held").await?.finalizers(),
        ["example.com/other"]
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_finalizer_helper_retries_a_conflict_on_a_fresh_read() -> Result<(), BoxError> {
    let server = FakeApiServer::builder().start().await?;
    let clientset = clientset(&server);
    let config_maps = clientset.core_v1().config_maps("default");
    let stale = config_maps
        .create(
            &config_map("default", "raced", &[]),
            &CreateOptions::default(),
        )
        .await?;
    // Someone else writes after our copy was read: our first patch conflicts.
    let mut newer = stale.clone();
    newer.metadata.labels = Some([("edited".to_string(), "yes".to_string())].into());
    config_maps
        .update(&newer, &UpdateOptions::default())
        .await?;

    let applied_to = Arc::new(parking_lot::Mutex::new(None));
    let action = finalizer(&config_maps, FINALIZER, Arc::new(stale), |event| {
        let applied_to = Arc::clone(&applied_to);
        async move {
            if let FinalizerEvent::Apply(cm) = event {
                *applied_to.lock() = Some(cm.labels().clone());
            }
            Ok::<_, std::convert::Infallible>(Action::await_change())
        }
    })
    .await?;
    assert_eq!(action, Action::await_change());
    let stored = config_maps.get("raced").await?;
    assert_eq!(stored.finalizers(), [FINALIZER]);
    assert_eq!(
        stored.labels().get("edited").map(String::as_str),
        Some("yes"),
        "the other writer's change is kept"
    );
    assert_eq!(
        applied_to
            .lock()
            .clone()
            .and_then(|l| l.get("edited").cloned())
            .as_deref(),
        Some("yes"),
        "Apply got the object as written, not the stale copy"
    );

    // Deleting: removing the finalizer from a stale copy also conflicts, and is retried.
    config_maps
        .delete("raced", &DeleteOptions::default())
        .await?;
    let deleting = config_maps.get("raced").await?;
    let mut touched = deleting.clone();
    touched.metadata.labels = Some([("touched".to_string(), "yes".to_string())].into());
    config_maps
        .update(&touched, &UpdateOptions::default())
        .await?;
    let cleaned = Arc::new(AtomicUsize::new(0));
    finalizer(&config_maps, FINALIZER, Arc::new(deleting), |event| {
        let cleaned = Arc::clone(&cleaned);
        async move {
            if let FinalizerEvent::Cleanup(_) = event {
                cleaned.fetch_add(1, Ordering::SeqCst);
            }
            Ok::<_, std::convert::Infallible>(Action::await_change())
        }
    })
    .await?;
    assert_eq!(cleaned.load(Ordering::SeqCst), 1);
    assert!(
        config_maps.get_opt("raced").await?.is_none(),
        "gone with its last finalizer"
    );
    Ok(())
}
