//! operator-sdk's memcached operator (its Go tutorial), on kclient: the API written as Rust
//! types, the CRD generated from them, and a controller on the reconcile runtime.
//!
//! * `Memcached` (`cache.example.com/v1alpha1`), from `#[derive(CustomResource)]`: a `size`
//!   the schema holds to 1..=5, a status with conditions and the names of the Pods;
//! * for each Memcached, a Deployment it owns, sized from the spec (a change to the
//!   Deployment reconciles its Memcached again);
//! * the status: `Available` (the Pods ready) or `Progressing`, and the Pods' names;
//! * a finalizer: a Memcached being deleted gets a `Warning` Event before it goes.
//!
//! ```text
//! cargo run -p kclient --features fake,controller,derive --example memcached_operator
//! cargo run -p kclient --features fake,controller,derive --example memcached_operator -- --kubeconfig ~/.kube/config
//! ```
//!
//! Without a kubeconfig it runs a scripted scenario against kclient-fake (which has no
//! kubelet: the scenario plays one, making Pods ready); with one it installs the CRD and runs
//! until Ctrl-C in the namespace given (`--namespace`, default `default`).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, ContainerPort, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kclient::cache::Lister;
use kclient::controller::finalizer::{finalizer, FinalizerEvent};
use kclient::controller::owner::new_controlled_by;
use kclient::controller::{self, shutdown_on_signal};
use kclient::core::{CancellationToken, CreateOptions, ListOptions};
use kclient::fake::FakeApiServer;
use kclient::prelude::*;
use kclient::rest::KubeconfigOptions;
use kclient::tools::crd::install_crd;
use kclient::tools::events::{new_broadcaster, object_reference, EventType};
use kclient::typed::ApplyOptions;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

type Error = Box<dyn std::error::Error + Send + Sync>;

// ---- The API ----

/// MemcachedSpec defines the desired state of Memcached.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "cache.example.com",
    version = "v1alpha1",
    kind = "Memcached",
    namespaced
)]
#[kube(status = "MemcachedStatus", shortname = "mc")]
#[kube(printcolumn(name = "Size", type = "integer", json_path = ".spec.size"))]
#[serde(rename_all = "camelCase")]
pub struct MemcachedSpec {
    /// The number of memcached Pods.
    #[schemars(range(min = 1, max = 5))]
    pub size: i32,
    /// The port memcached listens on (11211 if not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_port: Option<i32>,
}

/// MemcachedStatus defines the observed state of Memcached.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemcachedStatus {
    /// `Available`: whether the Pods are ready.
    #[serde(default)]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The names of the memcached Pods.
    #[serde(default)]
    pub nodes: Vec<String>,
}

// ---- The controller: from here to `run`, the whole of it ----

const FINALIZER: &str = "cache.example.com/finalizer";

struct Operator {
    clientset: Clientset,
    pods: Lister<Pod>,
}

/// The Pods' labels, and the Deployment's selector.
fn labels(m: &Memcached) -> std::collections::BTreeMap<String, String> {
    [
        ("app.kubernetes.io/name", "memcached"),
        ("app.kubernetes.io/instance", m.name_any()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// The Deployment `m` wants.
fn deployment(m: &Memcached) -> kclient::Result<Deployment> {
    let mut d: Deployment = new_controlled_by(m, m.name_any())?;
    let port = m.spec.container_port.unwrap_or(11211);
    d.spec = DeploymentSpec {
        replicas: Some(m.spec.size),
        selector: LabelSelector {
            match_labels: Some(labels(m)),
            ..Default::default()
        },
        template: PodTemplateSpec {
            metadata: Some(
                kclient::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                    labels: Some(labels(m)),
                    ..Default::default()
                },
            ),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "memcached".into(),
                    image: Some("memcached:1.6.26-alpine".into()),
                    command: Some(vec!["memcached".into(), "--port".into(), port.to_string()]),
                    ports: Some(vec![ContainerPort {
                        container_port: port,
                        ..Default::default()
                    }]),
                    ..Default::default()
                }],
                ..Default::default()
            }),
        },
        ..Default::default()
    };
    Ok(d)
}

/// The status the Deployment `d` and the Pods show.
fn status(m: &Memcached, d: &Deployment, pods: Vec<String>) -> MemcachedStatus {
    let ready = d
        .status
        .as_ref()
        .and_then(|s| s.ready_replicas)
        .unwrap_or(0);
    let (state, reason, message) = if ready == m.spec.size {
        ("True", "Ready", format!("{ready} Pods are ready"))
    } else {
        (
            "False",
            "Progressing",
            format!("{ready} of {} Pods are ready", m.spec.size),
        )
    };
    let old = m
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Available"));
    let condition = Condition {
        type_: "Available".into(),
        status: state.into(),
        reason: reason.into(),
        message,
        observed_generation: m.metadata.generation,
        // The time only moves when the status does (meta.SetStatusCondition's rule).
        last_transition_time: match old {
            Some(c) if c.status == state => c.last_transition_time.clone(),
            _ => Time(jiff_now()),
        },
    };
    MemcachedStatus {
        conditions: vec![condition],
        nodes: pods,
    }
}

fn jiff_now() -> kclient::k8s_openapi::jiff::Timestamp {
    kclient::k8s_openapi::jiff::Timestamp::now()
}

impl Operator {
    /// Makes the Deployment and the status match `m`.
    async fn apply(&self, m: &Memcached) -> kclient::Result<Action> {
        let namespace = m.namespace().unwrap_or_default();
        let apply = ApplyOptions::new("memcached-operator").force();
        let d = self
            .clientset
            .apps_v1()
            .deployments(namespace)
            .apply(m.name_any(), &deployment(m)?, &apply)
            .await?;
        let selector = kclient::core::labels::Selector::from_set(labels(m))?;
        let pods = self.pods.namespaced(namespace).list(&selector);
        let mut pods: Vec<String> = pods.iter().map(|p| p.name_any().to_owned()).collect();
        pods.sort();
        let status = status(m, &d, pods);
        if m.status.as_ref() != Some(&status) {
            let patch = serde_json::json!({"status": status});
            let memcacheds = self.clientset.namespaced::<Memcached>(namespace);
            memcacheds
                .patch_status(
                    m.name_any(),
                    &kclient::core::Patch::Merge(patch),
                    &Default::default(),
                )
                .await?;
        }
        Ok(Action::requeue(Duration::from_secs(60)))
    }
}

impl Reconciler<Memcached> for Operator {
    type Error = kclient::Error;

    async fn reconcile(
        &self,
        m: Arc<Memcached>,
        ctx: &ReconcileContext,
    ) -> kclient::Result<Action> {
        let memcacheds = self
            .clientset
            .namespaced::<Memcached>(m.namespace().unwrap_or_default());
        let outcome = finalizer(&memcacheds, FINALIZER, m, |event| async move {
            match event {
                FinalizerEvent::Apply(m) => self.apply(&m).await,
                FinalizerEvent::Cleanup(m) => {
                    // What operator-sdk's tutorial does before it lets a Memcached go.
                    if let Some(recorder) = ctx.recorder() {
                        recorder.eventf(
                            &object_reference(&*m),
                            EventType::Warning,
                            "Deleting",
                            format_args!(
                                "Custom Resource {} is being deleted from the namespace {}",
                                m.name_any(),
                                m.namespace().unwrap_or_default()
                            ),
                        );
                    }
                    Ok(Action::await_change())
                }
            }
        });
        Ok(outcome.await?)
    }
}

/// Runs the operator in `namespace` until `cancel` fires.
async fn run(
    clientset: Clientset,
    namespace: &str,
    cancel: CancellationToken,
) -> Result<(), Error> {
    install_crd(&clientset, &Memcached::crd(), Duration::from_secs(30)).await?;
    let factory = SharedInformerFactory::builder(clientset.clone())
        .namespace(namespace)
        .build();
    let events = new_broadcaster();
    events.start_recording_to_sink(clientset.core_v1().events(""))?;
    let operator = Operator {
        clientset,
        pods: factory.lister(),
    };
    Controller::<Memcached, _>::new("memcached-operator", &factory)
        .owns::<Deployment>()
        .record_events(&events)
        .with_config(controller::Config::default().workers(2))
        .run(operator, cancel)
        .await?;
    factory.shutdown().await;
    events.shutdown().await;
    Ok(())
}

// ---- The rest: a scripted scenario against kclient-fake, and `main` ----

/// Waits (at most 10 s) until `check` finds what it looks for, and returns it.
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<T>, Error>>,
{
    for _ in 0..200 {
        if let Some(found) = check().await? {
            return Ok(found);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!("timed out waiting until {what}").into())
}

/// Plays the kubelet for the Deployment of `name`: `ready` Pods, and its status.
async fn make_pods_ready(clientset: &Clientset, name: &str, ready: i32) -> Result<(), Error> {
    let pods = clientset.core_v1().pods("default");
    for i in 0..ready {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("{name}-{i}"), "labels": {
                "app.kubernetes.io/name": "memcached", "app.kubernetes.io/instance": name}},
            "spec": {"containers": [{"name": "memcached", "image": "memcached:1.6.26-alpine"}]},
        }))?;
        pods.create(&pod, &CreateOptions::default()).await?;
    }
    let status = serde_json::json!({"status": {"replicas": ready, "readyReplicas": ready}});
    let deployments = clientset.apps_v1().deployments("default");
    deployments
        .patch_status(
            name,
            &kclient::core::Patch::Merge(status),
            &Default::default(),
        )
        .await?;
    Ok(())
}

/// The scripted scenario: a Memcached of 3, its Pods made ready, scaled to 2, a size the
/// schema refuses, then deleted (the finalizer's Event). Returns the Event's message.
async fn scenario(server: &FakeApiServer) -> Result<String, Error> {
    let clientset = Clientset::new(server.config()?)?;
    let cancel = CancellationToken::new();
    let operator = tokio::spawn(run(clientset.clone(), "default", cancel.clone()));
    let memcacheds = clientset.namespaced::<Memcached>("default");
    let deployments = clientset.apps_v1().deployments("default");
    eventually("the CRD is served", || async {
        Ok(memcacheds.list(&ListOptions::default()).await.ok())
    })
    .await?;
    let spec = MemcachedSpec {
        size: 3,
        container_port: None,
    };
    memcacheds
        .create(&Memcached::new("cache", spec), &CreateOptions::default())
        .await?;
    let replicas = |d: Option<Deployment>| d.and_then(|d| d.spec.replicas);
    eventually("a Deployment of 3", || async {
        Ok((replicas(deployments.get_opt("cache").await?) == Some(3)).then_some(()))
    })
    .await?;
    make_pods_ready(&clientset, "cache", 3).await?;
    let available = |m: Memcached| {
        let s = m.status.unwrap_or_default();
        (s.conditions.first().map(|c| c.status.clone()), s.nodes)
    };
    eventually("Available, with its Pods", || async {
        let (state, nodes) = available(memcacheds.get("cache").await?);
        Ok(
            (state.as_deref() == Some("True") && nodes == ["cache-0", "cache-1", "cache-2"])
                .then_some(()),
        )
    })
    .await?;
    println!("Memcached cache: Available, Pods cache-0, cache-1, cache-2");

    let patch =
        |size: i32| kclient::core::Patch::Merge(serde_json::json!({"spec": {"size": size}}));
    memcacheds
        .patch("cache", &patch(2), &Default::default())
        .await?;
    eventually("the Deployment scaled to 2", || async {
        Ok((replicas(deployments.get_opt("cache").await?) == Some(2)).then_some(()))
    })
    .await?;
    let refused = memcacheds
        .patch("cache", &patch(6), &Default::default())
        .await
        .err();
    let refusal = refused.map(|e| e.to_string()).unwrap_or_default();
    println!("size 6 refused: {refusal}");

    memcacheds.delete("cache", &Default::default()).await?;
    eventually("the Memcached is gone", || async {
        Ok(memcacheds.get_opt("cache").await?.is_none().then_some(()))
    })
    .await?;
    let events = clientset.core_v1().events("default");
    let message = eventually("the Deleting Event", || async {
        let list = events.list(&ListOptions::default()).await?;
        Ok(list
            .items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("Deleting"))
            .and_then(|e| e.message))
    })
    .await?;
    println!("Event: {message}");
    cancel.cancel();
    operator.await??;
    Ok(message)
}

#[tokio::main]
async fn main() -> Result<(), ErrorReport> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    match flag("--kubeconfig") {
        Some(path) => {
            let config = Config::from_kubeconfig(&KubeconfigOptions {
                path: Some(path.into()),
                ..Default::default()
            })?;
            let namespace = flag("--namespace").unwrap_or_else(|| "default".into());
            println!("Running in {namespace} until Ctrl-C");
            run(Clientset::new(config)?, &namespace, shutdown_on_signal()?).await?;
        }
        None => {
            let server = FakeApiServer::builder().start().await?;
            println!(
                "Started kclient-fake at {} (pass --kubeconfig for a cluster)",
                server.url()
            );
            scenario(&server).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_memcached_operator_runs_its_lifecycle_against_kclient_fake() -> Result<(), Error> {
        let server = FakeApiServer::builder().start().await?;
        let message = scenario(&server).await?;
        assert_eq!(
            message,
            "Custom Resource cache is being deleted from the namespace default"
        );
        Ok(())
    }

    #[test]
    fn the_crd_holds_the_size_to_1_to_5() {
        let crd = serde_json::to_value(Memcached::crd()).unwrap();
        let size = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]["size"];
        assert_eq!(
            (size["minimum"].as_f64(), size["maximum"].as_f64()),
            (Some(1.0), Some(5.0))
        );
    }
}
