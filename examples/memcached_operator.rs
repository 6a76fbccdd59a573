//! operator-sdk's memcached operator (its Go tutorial), on kclient: the API written as Rust
//! types, the CRD generated from them, and a controller on the reconcile runtime.
//!
//! * `Memcached` (`cache.example.com/v1alpha1`), from `#[derive(CustomResource)]`: a `size`
//!   the schema holds to 1..=5, a status with conditions and the names of the Pods;
//! * for each Memcached, a Deployment it owns, sized from the spec (a change to the
//!   Deployment reconciles its Memcached again);
//!   (`create_or_update`, controller-runtime's `controllerutil.CreateOrUpdate`);
//! * the status: the `Available` condition (`set_status_condition`, apimachinery's
//!   `meta.SetStatusCondition`: its time moves only when its status does) and the Pods' names;
//! * a finalizer: a Memcached being deleted gets a `Warning` Event before it goes;
//! * admission webhooks (kubebuilder's `webhook` scaffold): a defaulter filling in the port,
//!   a validator refusing a privileged port and warning about a single Pod.
//!
//! ```text
//! cargo run -p kclient --features fake,controller,derive,webhook --example memcached_operator
//! cargo run -p kclient --features fake,controller,derive,webhook --example memcached_operator -- --kubeconfig ~/.kube/config
//! ```
//!
//! Without a kubeconfig it runs a scripted scenario against kclient-fake (which has no
//! kubelet: the scenario plays one, making Pods ready; it calls the webhooks as
//! kube-apiserver does); with one it installs the CRD and runs until Ctrl-C in the namespace
//! given (`--namespace`, default `default`), with the webhooks when `--webhook-host` names
//! an address of this machine that the API server reaches (port 9443).

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
use kclient::core::{CancellationToken, CreateOptions, ListOptions};
use kclient::fake::FakeApiServer;
use kclient::prelude::*;
use kclient::rest::KubeconfigOptions;
use kclient::tools::crd::install_crd;
use kclient::tools::events::{new_broadcaster, object_reference, EventType};
use kclient::webhook::admission::{AdmissionContext, Warnings};
use kclient::webhook::certs::SelfSignedCertificates;
use kclient::webhook::{ClientConfig, CustomDefaulter, CustomValidator, Denial, WebhookServer};
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

// ---- The controller: from here to the webhooks, and `run`, the whole of it ----

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

// ---- The webhooks ----

/// Fills in and checks Memcacheds (kubebuilder's `webhook` scaffold for the type).
struct MemcachedWebhook;

impl CustomDefaulter<Memcached> for MemcachedWebhook {
    async fn default(&self, m: &mut Memcached, _: &AdmissionContext) -> Result<(), Denial> {
        m.spec.container_port.get_or_insert(DEFAULT_PORT);
        Ok(())
    }
}

impl MemcachedWebhook {
    /// Refuses a privileged port; warns about a single Pod.
    fn check(m: &Memcached) -> Result<Warnings, Denial> {
        if let Some(port) = m.spec.container_port.filter(|p| *p < 1024) {
            let message = format!("spec.containerPort {port} is privileged: use 1024 or above");
            return Err(Denial::forbidden(message));
        }
        let single = (m.spec.size == 1).then(|| "one memcached Pod has no redundancy".into());
        Ok(single.into_iter().collect())
    }
}

impl CustomValidator<Memcached> for MemcachedWebhook {
    async fn validate_create(
        &self,
        m: &Memcached,
        _: &AdmissionContext,
    ) -> Result<Warnings, Denial> {
        Self::check(m)
    }

    async fn validate_update(
        &self,
        _old: &Memcached,
        m: &Memcached,
        _: &AdmissionContext,
    ) -> Result<Warnings, Denial> {
        Self::check(m)
    }
}

/// Where the webhooks listen, and the address the API server reaches them at.
struct WebhookAt {
    bind: std::net::SocketAddr,
    host: std::net::IpAddr,
}

/// Starts the webhook server and registers its configurations; it runs until `cancel`.
async fn serve_webhooks(
    clientset: &Clientset,
    at: &WebhookAt,
    cancel: CancellationToken,
) -> Result<tokio::task::JoinHandle<Result<(), kclient::webhook::WebhookError>>, Error> {
    let certs = SelfSignedCertificates::generate(&["localhost"], &[at.host])?;
    let server = WebhookServer::builder()
        .defaulter::<Memcached, _>(MemcachedWebhook)
        .validator::<Memcached, _>(MemcachedWebhook)
        .bind(at.bind, certs.serving())
        .await?;
    let url = format!("https://{}:{}", at.host, server.local_addr()?.port());
    let reach = ClientConfig::url(url, &certs.ca_pem);
    let admission = clientset.admissionregistration_v1();
    let validating = server.validating_webhook_configuration("memcached-operator", &reach);
    create_or_update(
        &admission.validating_webhook_configurations(),
        validating.clone(),
        |c| {
            c.webhooks = validating.webhooks;
            Ok::<_, std::convert::Infallible>(())
        },
    )
    .await?;
    let mutating = server.mutating_webhook_configuration("memcached-operator", &reach);
    create_or_update(
        &admission.mutating_webhook_configurations(),
        mutating.clone(),
        |c| {
            c.webhooks = mutating.webhooks;
            Ok::<_, std::convert::Infallible>(())
        },
    )
    .await?;
    Ok(tokio::spawn(server.run(cancel)))
}

/// Runs the operator in `namespace`, with its webhooks if `webhooks` says where, until
/// `cancel` fires.
async fn run(
    clientset: Clientset,
    namespace: &str,
    webhooks: Option<WebhookAt>,
    cancel: CancellationToken,
) -> Result<(), Error> {
    install_crd(&clientset, &Memcached::crd(), Duration::from_secs(30)).await?;
    let serving = match &webhooks {
        Some(at) => Some(serve_webhooks(&clientset, at, cancel.clone()).await?),
        None => None,
    };
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
    if let Some(serving) = serving {
        serving.await??;
    }
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

/// What the scripted scenario saw (`main` prints it as it goes; the test reads it).
#[derive(Debug)]
#[cfg_attr(not(test), allow(dead_code))]
struct Seen {
    /// The port the defaulting webhook filled in.
    defaulted_port: Option<i32>,
    /// Why the validating webhook refused port 80.
    port_80_refused: String,
    /// The finalizer's Event.
    deleting_event: String,
}

/// The scripted scenario: a Memcached of 3 (its port defaulted by the webhook), its Pods
/// made ready, scaled to 2, a size the schema refuses, a port the webhook refuses, then
/// deleted (the finalizer's Event).
async fn scenario(server: &FakeApiServer) -> Result<Seen, Error> {
    let clientset = Clientset::new(server.config()?)?;
    let cancel = CancellationToken::new();
    let webhooks = WebhookAt {
        bind: "127.0.0.1:0".parse()?,
        host: "127.0.0.1".parse()?,
    };
    let operator = tokio::spawn(run(
        clientset.clone(),
        "default",
        Some(webhooks),
        cancel.clone(),
    ));
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
    // The webhooks are registered with the CRD: until then a create may go unchecked.
    eventually("the webhooks are called", || async {
        let port_80 = |size| {
            Memcached::new(
                "probe",
                MemcachedSpec {
                    size,
                    container_port: Some(80),
                },
            )
        };
        let refused = memcacheds
            .create(&port_80(1), &CreateOptions::default())
            .await
            .is_err();
        if !refused {
            memcacheds.delete("probe", &Default::default()).await?;
        }
        Ok(refused.then_some(()))
    })
    .await?;
    let created = memcacheds
        .create(&Memcached::new("cache", spec), &CreateOptions::default())
        .await?;
    println!(
        "Memcached cache created, its port defaulted to {:?}",
        created.spec.container_port
    );
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
    let port_80 = kclient::core::Patch::Merge(serde_json::json!({"spec": {"containerPort": 80}}));
    let refused = memcacheds
        .patch("cache", &port_80, &Default::default())
        .await
        .err();
    let port_80_refused = refused.map(|e| e.to_string()).unwrap_or_default();
    println!("port 80 refused: {port_80_refused}");

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
    Ok(Seen {
        defaulted_port: created.spec.container_port,
        port_80_refused,
        deleting_event: message,
    })
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
            let webhooks = flag("--webhook-host")
                .map(|host| {
                    Ok::<_, Error>(WebhookAt {
                        bind: "0.0.0.0:9443".parse()?,
                        host: host.parse()?,
                    })
                })
                .transpose()?;
            let clientset = Clientset::new(config)?;
            run(clientset, &namespace, webhooks, shutdown_on_signal()?).await?;
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
        let seen = scenario(&server).await?;
        assert_eq!(seen.defaulted_port, Some(11211));
        assert_eq!(
            seen.port_80_refused,
            "admission webhook \"validate.memcached.v1alpha1.cache.example.com\" denied the \
             request: spec.containerPort 80 is privileged: use 1024 or above (reason Forbidden, \
             code 403)"
        );
        assert_eq!(
            seen.deleting_event,
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
