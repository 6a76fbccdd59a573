//! A controller in the shape of client-go's sample-controller, on kclient's reconcile runtime:
//! for every Deployment labelled `config=managed`, it keeps a ConfigMap `<name>-settings`
//! owned by the Deployment and holding its replica count and image.
//!
//! * a [`Controller`] of Deployments that `owns` ConfigMaps: a change to a ConfigMap whose
//!   controller owner reference names a Deployment reconciles that Deployment
//!   (sample-controller's `handleObject`), on one informer factory's shared informers;
//! * a [`Reconciler`] reading the ConfigMap from the lister and applying it (server-side
//!   apply) through the typed Clientset, made with its controller reference by
//!   [`new_controlled_by`];
//! * an error policy retrying a failed key with the workqueue's backoff at most five times;
//! * two workers, the caches waited for, a graceful shutdown (Ctrl-C, or the end of the
//!   scenario): no new reconcile, the ones in flight finish, the informers stop.
//!
//! ```text
//! cargo run -p kclient --features fake,controller --example sample_controller             # kclient-fake, with a scripted scenario
//! cargo run -p kclient --features fake,controller --example sample_controller -- --kubeconfig ~/.kube/config [--namespace NS]
//! ```
//!
//! Against a cluster it runs until Ctrl-C, in the namespace given (default `default`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kclient::cache::Lister;
use kclient::controller::owner::{is_controlled_by, new_controlled_by};
use kclient::controller::{self, shutdown_on_signal};
use kclient::core::{CancellationToken, CreateOptions, ListOptions};
use kclient::fake::FakeApiServer;
use kclient::prelude::*;
use kclient::rest::KubeconfigOptions;
use kclient::typed::ApplyOptions;
use serde_json::json;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The label that puts a Deployment under this controller.
const MANAGED: (&str, &str) = ("config", "managed");
/// How many times a failing key is retried before it is dropped (client-go's example).
const MAX_RETRIES: usize = 5;

/// What the ConfigMap of `d` should hold (read through JSON, which is the same for every
/// Kubernetes version k8s-openapi models).
fn desired_data(d: &Deployment) -> BTreeMap<String, String> {
    let value = serde_json::to_value(d).unwrap_or_default();
    let replicas = value["spec"]["replicas"].as_i64().unwrap_or(1);
    let image = value["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default();
    BTreeMap::from([
        ("replicas".to_string(), replicas.to_string()),
        ("image".to_string(), image.to_string()),
    ])
}

// ---- The controller: from here to `run`, the whole of it. ----

struct Settings {
    clientset: Clientset,
    config_maps: Lister<ConfigMap>,
}

impl Reconciler<Deployment> for Settings {
    type Error = Error;

    /// Makes the Deployment's ConfigMap what it should be (server-side apply).
    async fn reconcile(&self, d: Arc<Deployment>, _: &ReconcileContext) -> Result<Action, Error> {
        let namespace = d.namespace().unwrap_or_default();
        let settings = format!("{}-settings", d.name_any());
        let data = desired_data(&d);
        match self.config_maps.namespaced(namespace).get(&settings).ok() {
            _ if d.labels().get(MANAGED.0).is_none_or(|v| v != MANAGED.1) => {}
            Some(cm) if !is_controlled_by(&*cm, &*d) => {
                return Err(
                    format!("{settings} exists and is not owned by {}", d.name_any()).into(),
                )
            }
            Some(cm) if cm.data.as_ref() == Some(&data) => {}
            _ => {
                let mut cm: ConfigMap = new_controlled_by(&*d, &settings)?;
                cm.data = Some(data);
                let apply = ApplyOptions::new("sample-controller").force();
                let client = self.clientset.core_v1().config_maps(namespace);
                client.apply(&settings, &cm, &apply).await?;
            }
        }
        Ok(Action::await_change())
    }

    /// Retries a failed key with the workqueue's backoff, at most `MAX_RETRIES` times.
    fn error_policy(&self, error: &Error, ctx: &ReconcileContext) -> Action {
        println!("  error syncing {}: {error}", ctx.key());
        Action::requeue_rate_limited_up_to(ctx, MAX_RETRIES)
    }
}

/// Runs the controller in `namespace`, with two workers, until `cancel` fires.
async fn run(
    clientset: Clientset,
    namespace: &str,
    cancel: CancellationToken,
) -> Result<(), Error> {
    let factory = SharedInformerFactory::builder(clientset.clone())
        .namespace(namespace)
        .build();
    let settings = Settings {
        clientset,
        config_maps: factory.lister(),
    };
    Controller::<Deployment, _>::new("sample-controller", &factory)
        .owns::<ConfigMap>()
        .with_config(controller::ControllerConfig::default().workers(2))
        .run(settings, cancel)
        .await?;
    factory.shutdown().await;
    Ok(())
}

// ---- The rest: a scripted scenario against kclient-fake, and `main`. ----

fn deployment(name: &str, replicas: i32, managed: bool) -> Result<Deployment, Error> {
    let labels = if managed {
        json!({"app": name, MANAGED.0: MANAGED.1})
    } else {
        json!({"app": name})
    };
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}
            }
        }
    }))?)
}

/// The scripted scenario against kclient-fake: three Deployments (two managed), a scale.
/// Returns the ConfigMaps the controller made, by name, with their data.
async fn scenario(
    server: &FakeApiServer,
) -> Result<BTreeMap<String, BTreeMap<String, String>>, Error> {
    let clientset = Clientset::new(server.config()?)?;
    let cancel = CancellationToken::new();
    let controller = tokio::spawn(run(clientset.clone(), "default", cancel.clone()));
    let deployments = clientset.apps_v1().deployments("default");
    for (name, managed) in [("web", true), ("api", true), ("batch", false)] {
        deployments
            .create(&deployment(name, 1, managed)?, &CreateOptions::default())
            .await?;
    }
    deployments.scale_to("web", 3).await?;
    let config_maps = clientset.core_v1().config_maps("default");
    let want = |replicas: &str| {
        BTreeMap::from([
            ("image".to_string(), "nginx:1.27".to_string()),
            ("replicas".to_string(), replicas.to_string()),
        ])
    };
    let expected = BTreeMap::from([
        ("api-settings".to_string(), want("1")),
        ("web-settings".to_string(), want("3")),
    ]);
    let mut current = BTreeMap::new();
    for _ in 0..200 {
        current = config_maps
            .list(&ListOptions::default())
            .await?
            .items
            .into_iter()
            .map(|cm| (cm.name_any().to_owned(), cm.data.unwrap_or_default()))
            .collect();
        if current == expected {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cancel.cancel();
    controller.await??;
    println!("The controller made {:?}", current.keys());
    Ok(current)
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
            let cancel = shutdown_on_signal()?;
            println!("Running in {namespace} until Ctrl-C");
            run(Clientset::new(config)?, &namespace, cancel).await?;
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
    async fn the_sample_controller_keeps_configmaps_for_managed_deployments() -> Result<(), Error> {
        let server = FakeApiServer::builder().start().await?;
        let made = scenario(&server).await?;
        assert_eq!(
            made.keys().collect::<Vec<_>>(),
            ["api-settings", "web-settings"]
        );
        assert_eq!(made["web-settings"]["replicas"], "3");
        Ok(())
    }
}
