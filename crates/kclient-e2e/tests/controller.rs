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
