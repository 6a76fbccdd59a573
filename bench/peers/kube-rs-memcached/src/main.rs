//! operator-sdk's memcached operator (its Go tutorial) on kube-rs 5.0: the peer of kclient's
//! `examples/memcached_operator.rs`, kept for docs/from-kube-rs.md's line counts.
//!
//! * `Memcached` (`cache.example.com/v1alpha1`), from `#[derive(CustomResource)]`: a `size`
//!   the schema holds to 1..=5, a status with conditions and the names of the Pods;
//! * for each Memcached, a Deployment it owns, sized from the spec (a change to the
//!   Deployment reconciles its Memcached again);
//! * the status: `Available` (the Pods ready) or `Progressing`, and the Pods' names;
//! * a finalizer: a Memcached being deleted gets a `Warning` Event before it goes.
//!
//! ```text
//! cargo run   # against the current kubeconfig context's cluster and namespace, until Ctrl-C
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, ContainerPort, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams};
use kube::core::Selector;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::finalizer::{self, finalizer};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher;
use kube::{Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
#[kube(printcolumn(name = "Size", type_ = "integer", json_path = ".spec.size"))]
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
const MANAGER: &str = "memcached-operator";

type Error = finalizer::Error<kube::Error>;

struct Context {
    client: Client,
    recorder: Recorder,
}

/// The Pods' labels, and the Deployment's selector.
fn labels(m: &Memcached) -> BTreeMap<String, String> {
    [
        ("app.kubernetes.io/name", "memcached".to_owned()),
        ("app.kubernetes.io/instance", m.name_any()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// The Deployment `m` wants.
fn deployment(m: &Memcached) -> Deployment {
    let port = m.spec.container_port.unwrap_or(11211);
    Deployment {
        metadata: ObjectMeta {
            name: Some(m.name_any()),
            namespace: m.namespace(),
            owner_references: m.controller_owner_ref(&()).map(|o| vec![o]),
            ..Default::default()
        },
        spec: DeploymentSpec {
            replicas: Some(m.spec.size),
            selector: LabelSelector {
                match_labels: Some(labels(m)),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels(m)),
                    ..Default::default()
                }),
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
        },
        ..Default::default()
    }
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
            _ => Time(Timestamp::now()),
        },
    };
    MemcachedStatus {
        conditions: vec![condition],
        nodes: pods,
    }
}

/// Makes the Deployment and the status match `m`.
async fn apply(m: &Memcached, ctx: &Context) -> kube::Result<Action> {
    let namespace = m.namespace().unwrap_or_default();
    let deployments: Api<Deployment> = Api::namespaced(ctx.client.clone(), &namespace);
    let apply = PatchParams::apply(MANAGER).force();
    let d = deployments
        .patch(&m.name_any(), &apply, &Patch::Apply(deployment(m)))
        .await?;
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
    let selector: Selector = labels(m).into_iter().collect();
    let pods = pods
        .list(&ListParams::default().labels_from(&selector))
        .await?;
    let mut pods: Vec<String> = pods.iter().map(|p| p.name_any()).collect();
    pods.sort();
    let status = status(m, &d, pods);
    if m.status.as_ref() != Some(&status) {
        let patch = Patch::Merge(serde_json::json!({"status": status}));
        let memcacheds: Api<Memcached> = Api::namespaced(ctx.client.clone(), &namespace);
        memcacheds
            .patch_status(&m.name_any(), &PatchParams::default(), &patch)
            .await?;
    }
    Ok(Action::requeue(Duration::from_secs(60)))
}

/// What operator-sdk's tutorial does before it lets a Memcached go.
async fn cleanup(m: &Memcached, ctx: &Context) -> kube::Result<Action> {
    let note = format!(
        "Custom Resource {} is being deleted from the namespace {}",
        m.name_any(),
        m.namespace().unwrap_or_default()
    );
    let event = Event {
        type_: EventType::Warning,
        reason: "Deleting".into(),
        note: Some(note),
        action: "Deleting".into(),
        secondary: None,
    };
    ctx.recorder.publish(&event, &m.object_ref(&())).await?;
    Ok(Action::await_change())
}

async fn reconcile(m: Arc<Memcached>, ctx: Arc<Context>) -> Result<Action, Error> {
    let memcacheds: Api<Memcached> =
        Api::namespaced(ctx.client.clone(), &m.namespace().unwrap_or_default());
    finalizer(&memcacheds, FINALIZER, m, |event| async move {
        match event {
            finalizer::Event::Apply(m) => apply(&m, &ctx).await,
            finalizer::Event::Cleanup(m) => cleanup(&m, &ctx).await,
        }
    })
    .await
}

fn error_policy(_m: Arc<Memcached>, _error: &Error, _ctx: Arc<Context>) -> Action {
    Action::requeue(Duration::from_secs(5))
}

/// Installs the CRD and runs the operator in the client's namespace until Ctrl-C.
async fn run(client: Client) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = Memcached::crd();
    let name = crd.name_any();
    crds.patch(
        &name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&crd),
    )
    .await?;
    let established = await_condition(crds, &name, conditions::is_crd_established());
    tokio::time::timeout(Duration::from_secs(30), established).await??;
    let context = Arc::new(Context {
        recorder: Recorder::new(client.clone(), MANAGER.into()),
        client: client.clone(),
    });
    let memcacheds: Api<Memcached> = Api::default_namespaced(client.clone());
    let deployments: Api<Deployment> = Api::default_namespaced(client);
    Controller::new(memcacheds, watcher::Config::default())
        .owns(deployments, watcher::Config::default())
        .with_config(controller::Config::default().concurrency(2))
        .shutdown_on_signal()
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            if let Err(error) = result {
                eprintln!("reconcile failed: {error}");
            }
        })
        .await;
    Ok(())
}

// ---- main ----

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let client = Client::try_default().await?;
    println!("Running in {} until Ctrl-C", client.default_namespace());
    run(client).await
}

// kclient's example also runs a scripted scenario (a Memcached created, its Pods made ready,
// scaled, a refused size, deleted) against kclient-fake, its in-process API server, and tests
// it with `cargo test`. kube-rs has no in-process API server (only a mocked tower Service
// whose requests and responses a test scripts one by one), so that part has no counterpart.
