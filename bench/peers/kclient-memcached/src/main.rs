//! operator-sdk's memcached operator (its Go tutorial) on kclient, as a user's project: the
//! peer of bench/peers/kube-rs-memcached for issue 48's build-time and binary-size
//! comparison. The controller is examples/memcached_operator.rs's, without its webhooks and
//! its scripted run on kclient-fake.
//!
//! ```text
//! cargo run   # against the current kubeconfig context's cluster (or in-cluster), until Ctrl-C
//! ```

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, ContainerPort, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use kclient::cache::Lister;
use kclient::controller::conditions::{new_condition, set_status_condition};
use kclient::controller::finalizer::{finalizer, FinalizerEvent};
use kclient::controller::owner::set_controller_reference;
use kclient::controller::{self, create_or_update, shutdown_on_signal};
use kclient::core::CancellationToken;
use kclient::prelude::*;
use kclient::tools::crd::install_crd;
use kclient::tools::events::{new_broadcaster, object_reference, EventType};
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

// ---- The controller ----

const FINALIZER: &str = "cache.example.com/finalizer";
const DEFAULT_PORT: i32 = 11211;

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

/// The memcached container of the Pods.
fn container(m: &Memcached) -> Container {
    let port = m.spec.container_port.unwrap_or(DEFAULT_PORT);
    Container {
        name: "memcached".into(),
        image: Some("memcached:1.6.26-alpine".into()),
        command: Some(vec!["memcached".into(), "--port".into(), port.to_string()]),
        ports: Some(vec![ContainerPort {
            container_port: port,
            ..Default::default()
        }]),
        ..Default::default()
    }
}

/// Makes `d` what `m` wants: owned by `m`, `size` replicas of the memcached container. Only
/// these fields are set, so what the API server defaults in the rest is left alone and an
/// unchanged Deployment is not written.
fn shape(m: &Memcached, d: &mut Deployment) -> kclient::Result<()> {
    set_controller_reference(m, d)?;
    let spec = &mut d.spec;
    if spec.selector.match_labels.is_none() {
        // A new Deployment (its selector cannot change later).
        spec.selector.match_labels = Some(labels(m));
        spec.template.metadata = Some(ObjectMeta {
            labels: Some(labels(m)),
            ..Default::default()
        });
    }
    spec.replicas = Some(m.spec.size);
    let pod = spec.template.spec.get_or_insert_with(PodSpec::default);
    let wanted = container(m);
    match pod.containers.iter_mut().find(|c| c.name == wanted.name) {
        Some(c) => {
            c.image = wanted.image;
            c.command = wanted.command;
            c.ports = wanted.ports;
        }
        None => pod.containers.push(wanted),
    }
    Ok(())
}

/// The `Available` condition the Deployment `d` shows.
fn available(m: &Memcached, d: &Deployment) -> Condition {
    let ready = d
        .status
        .as_ref()
        .and_then(|s| s.ready_replicas)
        .unwrap_or(0);
    let size = m.spec.size;
    let condition = if ready == size {
        new_condition(
            "Available",
            "True",
            "Ready",
            &format!("{ready} Pods are ready"),
        )
    } else {
        let message = format!("{ready} of {size} Pods are ready");
        new_condition("Available", "False", "Progressing", &message)
    };
    Condition {
        observed_generation: m.metadata.generation,
        ..condition
    }
}

impl Operator {
    /// Makes the Deployment and the status match `m`.
    async fn apply(&self, m: &Memcached) -> kclient::Result<Action> {
        let namespace = m.namespace().unwrap_or_default();
        let deployments = self.clientset.apps_v1().deployments(namespace);
        let mut d = Deployment::default();
        d.metadata.name = Some(m.name_any().to_owned());
        d.metadata.namespace = Some(namespace.to_owned());
        let (d, _) = create_or_update(&deployments, d, |d| shape(m, d)).await?;

        let selector = kclient::core::labels::Selector::from_set(labels(m))?;
        let mut pods: Vec<String> = (self.pods.namespaced(namespace).list(&selector).iter())
            .map(|p| p.name_any().to_owned())
            .collect();
        pods.sort();
        let mut status = m.status.clone().unwrap_or_default();
        let changed = set_status_condition(&mut status.conditions, available(m, &d));
        if changed || status.nodes != pods {
            status.nodes = pods;
            let patch = kclient::core::Patch::Merge(serde_json::json!({"status": status}));
            let memcacheds = self.clientset.namespaced::<Memcached>(namespace);
            memcacheds
                .patch_status(m.name_any(), &patch, &Default::default())
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

/// Installs the CRD and runs the operator in `namespace` until `cancel` fires.
async fn run(clientset: Clientset, namespace: &str, cancel: CancellationToken) -> Result<(), Error> {
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
        .with_config(controller::ControllerConfig::default().workers(2))
        .run(operator, cancel)
        .await?;
    factory.shutdown().await;
    events.shutdown().await;
    Ok(())
}

// ---- main ----

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = Config::infer()?;
    let namespace = std::env::var("NAMESPACE").unwrap_or_else(|_| "default".into());
    println!("Running in {namespace} until Ctrl-C");
    run(Clientset::new(config)?, &namespace, shutdown_on_signal()?).await
}
