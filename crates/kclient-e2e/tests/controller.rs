//! kclient-controller end to end, on every available target (the real kube-apiserver with
//! kube-controller-manager when `KCLIENT_E2E_KUBECONFIG` is set, and always a fresh
//! kclient-fake), and the two must agree: a Deployment-like controller keeps a ConfigMap per
//! Deployment, owned by it (a controller owner reference), behind a finalizer of its own.
//! Changes to the Deployment and to its ConfigMap (an edit, a deletion) are reconciled; when
//! the Deployment is deleted the finalizer's cleanup runs once, the finalizer goes, and the
//! garbage collector (kube-controller-manager's on the real server) removes the ConfigMap.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::{Lister, SharedInformerFactory};
use kclient_controller::finalizer::{finalizer, FinalizerError, FinalizerEvent};
use kclient_controller::owner::set_controller_reference;
use kclient_controller::{Action, Controller, ReconcileContext, Reconciler};
use kclient_core::{
    ApiStatus, CancellationToken, CreateOptions, DeleteOptions, ListOptions, Patch, PatchOptions,
    ResourceExt, UpdateOptions,
};
use kclient_e2e::scenarios::{run_everywhere, Namespace};
use kclient_e2e::{Target, Transcript};
use kclient_typed::Clientset;
use parking_lot::Mutex;
use serde_json::{json, Value};

/// The label on the ConfigMaps the controller makes (kube-controller-manager adds a
/// `kube-root-ca.crt` ConfigMap to every namespace, which the scenario leaves out).
const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "kclient-e2e-controller");
const FINALIZER: &str = "e2e.kclient.dev/settings";
/// How long the controller (and, on the real server, the garbage collector) may take.
const LIMIT: Duration = Duration::from_secs(60);

fn replicas(d: &Deployment) -> String {
    serde_json::to_value(d).unwrap_or_default()["spec"]["replicas"]
        .as_i64()
        .unwrap_or(1)
        .to_string()
}

/// Keeps `<name>-settings` for each Deployment, behind the finalizer; records its cleanups.
struct Settings {
    clientset: Clientset,
    config_maps: Lister<ConfigMap>,
    cleanups: Arc<Mutex<Vec<String>>>,
}

type Failure = FinalizerError<kclient_typed::Error>;

impl Settings {
    async fn apply(&self, d: &Deployment) -> Result<(), kclient_typed::Error> {
        let namespace = d.namespace().unwrap_or_default();
        let name = format!("{}-settings", d.name_any());
        let want = BTreeMap::from([("replicas".to_string(), replicas(d))]);
        let client = self.clientset.core_v1().config_maps(namespace);
        match self.config_maps.namespaced(namespace).get(&name) {
            Ok(cm) if cm.data.as_ref() == Some(&want) => Ok(()),
            Ok(cm) => {
                let mut cm = ConfigMap::clone(&cm);
                cm.data = Some(want);
                client
                    .update(&cm, &UpdateOptions::default())
                    .await
                    .map(drop)
            }
            Err(_) => {
                let mut cm = ConfigMap::default();
                cm.metadata.name = Some(name);
                cm.metadata.namespace = Some(namespace.to_owned());
                cm.metadata.labels =
                    Some([(MANAGED_BY.0.to_string(), MANAGED_BY.1.to_string())].into());
                cm.data = Some(want);
                set_controller_reference(d, &mut cm).expect("the Deployment is stored");
                match client.create(&cm, &CreateOptions::default()).await {
                    Err(e) if e.is_already_exists() => Ok(()), // the cache will show it
                    other => other.map(drop),
                }
            }
        }
    }
}

impl Reconciler<Deployment> for Settings {
    type Error = Failure;

    async fn reconcile(&self, d: Arc<Deployment>, _: &ReconcileContext) -> Result<Action, Failure> {
        let client = self.clientset.apps_v1().deployments("");
        finalizer(&client, FINALIZER, d, |event| async move {
            match event {
                FinalizerEvent::Apply(d) => self.apply(&d).await?,
                FinalizerEvent::Cleanup(d) => self.cleanups.lock().push(d.name_any().to_owned()),
            }
            Ok(Action::await_change())
        })
        .await
    }
}

fn deployment(name: &str, replicas: i32) -> Result<Deployment> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}
            }
        }
    }))?)
}

/// The managed ConfigMaps as the server has them: name → data, owner (kind, name,
/// controller, blockOwnerDeletion, whether its uid is the Deployment's), uid.
async fn managed(
    clientset: &Clientset,
    namespace: &str,
) -> Result<BTreeMap<String, (Value, String)>> {
    let deployments: BTreeMap<String, String> = clientset
        .apps_v1()
        .deployments(namespace)
        .list(&ListOptions::default())
        .await?
        .items
        .iter()
        .map(|d| {
            (
                d.name_any().to_owned(),
                d.uid().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let selector = format!("{}={}", MANAGED_BY.0, MANAGED_BY.1);
    let list = clientset
        .core_v1()
        .config_maps(namespace)
        .list(&ListOptions::default().labels(&selector))
        .await?;
    Ok(list
        .items
        .iter()
        .map(|cm| {
            let owners: Vec<Value> = cm
                .owner_references()
                .iter()
                .map(|o| {
                    json!({
                        "apiVersion": o.api_version,
                        "kind": o.kind,
                        "name": o.name,
                        "controller": o.controller,
                        "blockOwnerDeletion": o.block_owner_deletion,
                        "uidIsTheOwners": deployments.get(&o.name) == Some(&o.uid),
                    })
                })
                .collect();
            let observed = json!({"data": cm.data, "owners": owners});
            (
                cm.name_any().to_owned(),
                (observed, cm.uid().unwrap_or_default().to_owned()),
            )
        })
        .collect())
}

/// Waits until `condition` holds of the managed ConfigMaps (at most [`LIMIT`]); records them.
async fn until_managed(
    t: &mut Transcript,
    step: &str,
    clientset: &Clientset,
    namespace: &str,
    condition: impl Fn(&BTreeMap<String, (Value, String)>) -> bool,
) -> Result<BTreeMap<String, (Value, String)>> {
    let started = tokio::time::Instant::now();
    loop {
        let current = managed(clientset, namespace).await?;
        if condition(&current) {
            let observed: BTreeMap<&String, &Value> =
                current.iter().map(|(name, (v, _))| (name, v)).collect();
            t.record(step, serde_json::to_value(observed)?);
            return Ok(current);
        }
        if started.elapsed() > LIMIT {
            bail!("{step}: not reached within {LIMIT:?}; the ConfigMaps are {current:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn replicas_of(current: &BTreeMap<String, (Value, String)>, name: &str) -> Option<String> {
    current
        .get(name)
        .and_then(|(v, _)| v["data"]["replicas"].as_str())
        .map(str::to_owned)
}

async fn scenario(target: &Target) -> Result<Transcript> {
    let ns = Namespace::create(&target.client()?, "controller").await?;
    let outcome = run(target, &ns.name).await;
    ns.delete().await?;
    outcome
}

async fn run(target: &Target, namespace: &str) -> Result<Transcript> {
    let mut t = Transcript::new();
    let clientset = Clientset::new(target.config.clone())?;
    let factory = SharedInformerFactory::builder(clientset.clone())
        .namespace(namespace)
        .build();
    let cleanups = Arc::new(Mutex::new(Vec::new()));
    let settings = Settings {
        clientset: clientset.clone(),
        config_maps: factory.lister::<ConfigMap>(),
        cleanups: Arc::clone(&cleanups),
    };
    let controller = Controller::<Deployment, _>::new("e2e-settings", &factory).owns::<ConfigMap>();
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(controller.run(settings, shutdown.clone()));
    let outcome = steps(&mut t, &clientset, namespace, &cleanups).await;
    shutdown.cancel();
    running.await?.context("the controller's run")?;
    factory.shutdown().await;
    outcome.map(|()| t)
}

async fn steps(
    t: &mut Transcript,
    clientset: &Clientset,
    namespace: &str,
    cleanups: &Mutex<Vec<String>>,
) -> Result<()> {
    let deployments = clientset.apps_v1().deployments(namespace);
    let config_maps = clientset.core_v1().config_maps(namespace);
    for (name, replicas) in [("web", 2), ("api", 1)] {
        deployments
            .create(&deployment(name, replicas)?, &CreateOptions::default())
            .await?;
    }
    until_managed(
        t,
        "made, owned by their Deployments",
        clientset,
        namespace,
        |c| {
            replicas_of(c, "web-settings").as_deref() == Some("2")
                && replicas_of(c, "api-settings").as_deref() == Some("1")
        },
    )
    .await?;
    let finalizers: Vec<Vec<String>> = deployments
        .list(&ListOptions::default())
        .await?
        .items
        .iter()
        .map(|d| d.finalizers().to_vec())
        .collect();
    t.record("the Deployments' finalizers", json!(finalizers));

    deployments.scale_to("web", 3).await?;
    until_managed(t, "web scaled to 3", clientset, namespace, |c| {
        replicas_of(c, "web-settings").as_deref() == Some("3")
    })
    .await?;

    // Changes to an owned ConfigMap reach its owner.
    let patch = Patch::Merge(json!({"data": {"replicas": "99"}}));
    config_maps
        .patch("api-settings", &patch, &PatchOptions::default())
        .await?;
    until_managed(
        t,
        "api-settings edited by hand, repaired",
        clientset,
        namespace,
        |c| replicas_of(c, "api-settings").as_deref() == Some("1"),
    )
    .await?;
    let before = managed(clientset, namespace).await?;
    let old_uid = before.get("web-settings").map(|(_, uid)| uid.clone());
    config_maps
        .delete("web-settings", &DeleteOptions::default())
        .await?;
    until_managed(
        t,
        "web-settings deleted by hand, made again",
        clientset,
        namespace,
        |c| {
            c.get("web-settings")
                .is_some_and(|(_, uid)| Some(uid) != old_uid.as_ref())
        },
    )
    .await?;

    // The owner goes: the finalizer's cleanup, then the garbage collector.
    deployments
        .delete("api", &DeleteOptions::background())
        .await?;
    until_managed(
        t,
        "api deleted, its ConfigMap collected",
        clientset,
        namespace,
        |c| !c.contains_key("api-settings"),
    )
    .await?;
    let gone = deployments.get_opt("api").await?.is_none();
    ensure!(gone, "the api Deployment is still there");
    tokio::time::sleep(Duration::from_millis(500)).await;
    t.record("cleanups", json!(cleanups.lock().clone()));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_controller_owning_config_maps_agrees_on_both_servers() -> Result<()> {
    run_everywhere("controller", |t| Box::pin(scenario(t)), true).await
}

/// The custom resource of the helpers scenario: a size, and a status with conditions.
mod widgets {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
    use kclient_derive::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// A widget of some size.
    #[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "helpers.e2e.kclient.dev",
        version = "v1",
        kind = "Widget",
        namespaced
    )]
    #[kube(status = "WidgetStatus")]
    pub struct WidgetSpec {
        /// Its size.
        pub size: i32,
    }

    /// What was observed.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub struct WidgetStatus {
        /// Its conditions.
        #[serde(default)]
        pub conditions: Vec<Condition>,
    }
}

/// controller-runtime's `controllerutil` and apimachinery's `meta` helpers writing through
/// a server: `create_or_update` and `create_or_patch` (created, unchanged, updated; the
/// status written apart), status conditions (the transition time kept while the status
/// holds), finalizers added and removed around a delete, a plain owner reference the
/// garbage collector follows.
async fn helpers_scenario(target: &Target) -> Result<Transcript> {
    let ns = Namespace::create(&target.client()?, "helpers").await?;
    let outcome = helpers_steps(target, &ns.name).await;
    ns.delete().await?;
    outcome
}

async fn helpers_steps(target: &Target, namespace: &str) -> Result<Transcript> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    use kclient_controller::conditions::{
        find_status_condition, new_condition, set_status_condition_at,
    };
    use kclient_controller::finalizer::{add_finalizer, contains_finalizer, remove_finalizer};
    use kclient_controller::owner::{has_owner_reference, set_owner_reference};
    use kclient_controller::{create_or_patch, create_or_update};
    use kclient_core::crd::CustomResourceExt;
    use widgets::{Widget, WidgetSpec};

    let mut t = Transcript::new();
    let clientset = Clientset::new(target.config.clone())?;
    kclient_tools::crd::install_crd(&clientset, &Widget::crd(), LIMIT).await?;
    let config_maps = clientset.core_v1().config_maps(namespace);
    let widgets = clientset.namespaced::<Widget>(namespace);
    let named = |name: &str| {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.to_owned());
        cm.metadata.namespace = Some(namespace.to_owned());
        cm
    };
    let set = |value: &'static str| {
        move |cm: &mut ConfigMap| {
            cm.data
                .get_or_insert_default()
                .insert("k".into(), value.into());
            Ok::<(), std::convert::Infallible>(())
        }
    };
    for value in ["1", "1", "2"] {
        let (_, result) = create_or_update(&config_maps, named("updated"), set(value)).await?;
        t.record(
            format!("create_or_update k={value}"),
            json!(result.to_string()),
        );
        let (_, result) = create_or_patch(&config_maps, named("patched"), set(value)).await?;
        t.record(
            format!("create_or_patch k={value}"),
            json!(result.to_string()),
        );
    }

    // create_or_patch with a status: not written on create, then patched apart. Each step's
    // "now" is its own second, so that whether a transition time moved does not depend on
    // whether two writes fell in one second (the API's times have whole seconds).
    let available = |status: &str, reason: &str| new_condition("Available", status, reason, "");
    let widget = Widget::new("w", WidgetSpec { size: 1 });
    let with_status = |step: i64, status: &'static str, reason: &'static str| {
        move |w: &mut Widget| {
            w.spec.size = 2;
            let conditions = &mut w.status.get_or_insert_default().conditions;
            let now = Timestamp::from_second(1_800_000_000 + step).expect("a valid time");
            set_status_condition_at(conditions, available(status, reason), Time(now));
            Ok::<(), std::convert::Infallible>(())
        }
    };
    let (created, result) = create_or_patch(
        &widgets,
        widget.clone(),
        with_status(0, "False", "Starting"),
    )
    .await?;
    t.record(
        "widget created",
        json!([result.to_string(), created.status.is_some()]),
    );
    let mut transitions = Vec::new();
    for (step, (status, reason)) in (1..).zip([
        ("False", "Starting"),
        ("False", "Scaling"),
        ("False", "Scaling"),
        ("True", "Ready"),
    ]) {
        let (stored, result) =
            create_or_patch(&widgets, widget.clone(), with_status(step, status, reason)).await?;
        let conditions = stored.status.unwrap_or_default().conditions;
        let condition = find_status_condition(&conditions, "Available").context("no condition")?;
        transitions.push(condition.last_transition_time.clone());
        t.record(
            format!("widget {status}/{reason}"),
            json!([result.to_string(), condition.status, condition.reason]),
        );
    }
    t.record(
        "the transition time moved only with the status",
        json!([
            transitions[0] == transitions[1],
            transitions[1] == transitions[2],
            transitions[2] == transitions[3]
        ]),
    );

    // Finalizers around a delete.
    let mut held = config_maps.get("updated").await?;
    t.record("add_finalizer", json!(add_finalizer(&mut held, FINALIZER)));
    let held = config_maps.update(&held, &UpdateOptions::default()).await?;
    config_maps
        .delete("updated", &DeleteOptions::default())
        .await?;
    let mut terminating = config_maps.get("updated").await?;
    t.record(
        "terminating, still held",
        json!([
            terminating.metadata.deletion_timestamp.is_some(),
            contains_finalizer(&terminating, FINALIZER)
        ]),
    );
    let _ = held;
    t.record(
        "remove_finalizer",
        json!(remove_finalizer(&mut terminating, FINALIZER)),
    );
    config_maps
        .update(&terminating, &UpdateOptions::default())
        .await?;
    t.record(
        "gone",
        json!(config_maps.get_opt("updated").await?.is_none()),
    );

    // A plain owner reference: the garbage collector follows it.
    let owner = widgets.get("w").await?;
    let mut owned = config_maps.get("patched").await?;
    set_owner_reference(&owner, &mut owned)?;
    t.record(
        "has_owner_reference",
        json!(has_owner_reference(&owned, &owner)),
    );
    config_maps
        .update(&owned, &UpdateOptions::default())
        .await?;
    widgets.delete("w", &DeleteOptions::default()).await?;
    let deadline = tokio::time::Instant::now() + LIMIT;
    let collected = loop {
        if config_maps.get_opt("patched").await?.is_none() {
            break true;
        }
        if tokio::time::Instant::now() > deadline {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    t.record("the owned ConfigMap was collected", json!(collected));
    Ok(t)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_write_helpers_agree_on_both_servers() -> Result<()> {
    run_everywhere(
        "controller_helpers",
        |t| Box::pin(helpers_scenario(t)),
        true,
    )
    .await
}

/// client-go's `Extract<Kind>` on real managedFields: two appliers and an updater share a
/// Deployment, a third applier writes a Widget's status; what each applier applied is read
/// back from the stored objects, and changed and applied again under the same manager it
/// changes only its own fields.
async fn extract_scenario(target: &Target) -> Result<Transcript> {
    let ns = Namespace::create(&target.client()?, "extract").await?;
    let outcome = extract_steps(target, &ns.name).await;
    ns.delete().await?;
    outcome
}

async fn extract_steps(target: &Target, namespace: &str) -> Result<Transcript> {
    use kclient_core::crd::CustomResourceExt;
    use kclient_core::extract::{extract, extract_status};
    use kclient_typed::ApplyOptions;
    use widgets::Widget;

    let mut t = Transcript::new();
    let clientset = Clientset::new(target.config.clone())?;
    let deployments = clientset.apps_v1().deployments(namespace);
    let labels = json!({"app": "extract"});
    let owner_config = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10"}]}
            }
        }
    });
    deployments
        .apply("web", &owner_config, &ApplyOptions::new("e2e-owner"))
        .await?;
    let sidecar_config = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "annotations": {"sidecar": "on"}},
        "spec": {"template": {"spec": {"containers": [
            {"name": "sidecar", "image": "registry.k8s.io/pause:3.10"}
        ]}}}
    });
    deployments
        .apply("web", &sidecar_config, &ApplyOptions::new("e2e-sidecar"))
        .await?;
    let patch = Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}}));
    deployments
        .patch(
            "web",
            &patch,
            &PatchOptions {
                field_manager: Some("e2e-updater".into()),
                ..PatchOptions::default()
            },
        )
        .await?;
    let stored = deployments.get("web").await?;
    for manager in ["e2e-owner", "e2e-sidecar", "e2e-updater", "nobody"] {
        t.record(
            format!("extract {manager}"),
            shown(extract(&stored, manager)?, namespace),
        );
    }

    // Extract, change, apply again: the owner scales to 2 and changes nothing else.
    let mut intent = extract(&stored, "e2e-owner")?;
    intent["spec"]["replicas"] = json!(2);
    let reapplied = deployments
        .apply("web", &intent, &ApplyOptions::new("e2e-owner"))
        .await?;
    let spec = &reapplied.spec;
    let containers: Vec<_> = spec
        .template
        .spec
        .iter()
        .flat_map(|p| &p.containers)
        .map(|c| c.name.clone())
        .collect();
    t.record(
        "reapplied",
        json!({
            "replicas": spec.replicas,
            "containers": containers,
            "labels": reapplied.metadata.labels,
            "owner": shown(extract(&reapplied, "e2e-owner")?, namespace),
        }),
    );

    // The status subresource: a Widget's status applied by its own manager.
    let clientset = Clientset::new(target.config.clone())?;
    kclient_tools::crd::install_crd(&clientset, &Widget::crd(), LIMIT).await?;
    let widgets = clientset.namespaced::<Widget>(namespace);
    let widget = json!({
        "apiVersion": "helpers.e2e.kclient.dev/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": 1}
    });
    widgets
        .apply("w", &widget, &ApplyOptions::new("e2e-owner"))
        .await?;
    let status = json!({
        "apiVersion": "helpers.e2e.kclient.dev/v1", "kind": "Widget",
        "metadata": {"name": "w"},
        "status": {"conditions": [{
            "type": "Ready", "status": "True", "reason": "Up", "message": "up",
            "lastTransitionTime": "2026-01-01T00:00:00Z"
        }]}
    });
    let stored = widgets
        .apply_status("w", &status, &ApplyOptions::new("e2e-status"))
        .await?;
    t.record(
        "widget status",
        shown(extract_status(&stored, "e2e-status")?, namespace),
    );
    t.record(
        "widget main",
        shown(extract(&stored, "e2e-owner")?, namespace),
    );
    t.record(
        "widget status of the owner",
        shown(extract_status(&stored, "e2e-owner")?, namespace),
    );
    Ok(t)
}

/// `applied` with its namespace (a random name per run) shown as `<namespace>`.
fn shown(mut applied: Value, namespace: &str) -> Value {
    if applied["metadata"]["namespace"] == json!(namespace) {
        applied["metadata"]["namespace"] = json!("<namespace>");
    }
    applied
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extract_agrees_on_both_servers() -> Result<()> {
    run_everywhere("extract", |t| Box::pin(extract_scenario(t)), true).await
}

/// KEP-5647 on both servers: after each write (a create, an update, a delete) the informer's
/// store's `last_store_sync_resource_version` catches up with the written resourceVersion, and
/// a `ConsistencyStore` holding the write says so (kubernetes' consistency.go `EnsureReady`,
/// client-go's thread_safe_store.go `LastStoreSyncResourceVersion`). The resourceVersions
/// themselves differ between servers; what is recorded is how they compare.
async fn stale_scenario(target: &Target) -> Result<Transcript> {
    let ns = Namespace::create(&target.client()?, "stale").await?;
    let outcome = stale_steps(target, &ns.name).await;
    ns.delete().await?;
    outcome
}

async fn stale_steps(target: &Target, namespace: &str) -> Result<Transcript> {
    use kclient_controller::consistency::{ConsistencyStore, LastSyncRvGetter};
    use kclient_core::resource_version::compare_resource_version;
    use kclient_core::{GroupResource, ObjectKey};

    let mut t = Transcript::new();
    let clientset = Clientset::new(target.config.clone())?;
    let factory = SharedInformerFactory::builder(clientset.clone())
        .namespace(namespace)
        .build();
    let informer = factory.informer::<ConfigMap>();
    let shutdown = CancellationToken::new();
    factory.start(&shutdown);
    ensure!(
        kclient_cache::wait_for_cache_sync(&shutdown, &[informer.synced()]).await,
        "the ConfigMap cache did not sync"
    );
    let store = informer.get_indexer().clone();
    t.record(
        "after the list, the store has a resourceVersion",
        json!(!store.last_store_sync_resource_version().is_empty()),
    );
    let config_maps = GroupResource::new("", "configmaps");
    let consistency = ConsistencyStore::new([(
        config_maps.clone(),
        Arc::new(store.clone()) as Arc<dyn LastSyncRvGetter>,
    )]);
    let owner = ObjectKey::namespaced(namespace, "owner");
    let client = clientset.core_v1().config_maps(namespace);
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("written".into());
    cm.metadata.namespace = Some(namespace.into());
    let created = client.create(&cm, &CreateOptions::default()).await?;
    let mut changed = created.clone();
    changed.data = Some(BTreeMap::from([("k".to_owned(), "v".to_owned())]));
    let writes = [
        ("create", created),
        (
            "update",
            client.update(&changed, &UpdateOptions::default()).await?,
        ),
    ];
    let mut last_rv = String::new();
    for (what, written) in &writes {
        let rv = written.resource_version().unwrap_or_default().to_owned();
        consistency.wrote_at(&owner, "uid", &config_maps, &rv);
        let caught_up = eventually(|| {
            compare_resource_version(&store.last_store_sync_resource_version(), &rv)
                .is_ok_and(|o| o.is_ge())
        })
        .await;
        t.record(format!("{what}: the store caught up"), json!(caught_up));
        t.record(
            format!("{what}: ensure_ready"),
            json!(consistency.ensure_ready(&owner).is_ok()),
        );
        last_rv = rv;
    }
    client.delete("written", &DeleteOptions::default()).await?;
    let gone = eventually(|| {
        store.get_by_key(&format!("{namespace}/written")).is_none()
            && compare_resource_version(&store.last_store_sync_resource_version(), &last_rv)
                .is_ok_and(|o| o.is_gt())
    })
    .await;
    t.record("delete: the store moved past the update", json!(gone));
    shutdown.cancel();
    factory.shutdown().await;
    Ok(t)
}

/// Polls `condition` every 50 ms for at most [`LIMIT`].
async fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + LIMIT;
    while tokio::time::Instant::now() < deadline {
        if condition() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    condition()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_resource_version_follows_writes_on_both_servers() -> Result<()> {
    run_everywhere("stale", |t| Box::pin(stale_scenario(t)), true).await
}
