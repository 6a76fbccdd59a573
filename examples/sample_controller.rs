//! A controller in the shape of client-go's sample-controller: for every Deployment labelled
//! `config=managed`, it keeps a ConfigMap `<name>-settings` owned by the Deployment and
//! holding its replica count and image.
//!
//! * an informer factory with two informers (Deployments and ConfigMaps) and their listers;
//! * a custom index: ConfigMaps by the uid of their owning Deployment;
//! * event handlers that enqueue the Deployment's key, also for a change to a ConfigMap it
//!   owns (sample-controller's `handleObject`);
//! * a rate-limited workqueue and two workers, retrying a failed key at most five times;
//! * `wait_for_named_cache_sync` before the workers start, and a graceful shutdown (Ctrl-C,
//!   or the end of the scenario): the queue drains, the informers stop.
//!
//! ```text
//! cargo run -p kclient --features fake --example sample_controller             # kclient-fake, with a scripted scenario
//! cargo run -p kclient --features fake --example sample_controller -- --kubeconfig ~/.kube/config [--namespace NS]
//! ```
//!
//! Against a cluster it runs until Ctrl-C, in the namespace given (default `default`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kclient::cache::{wait_for_named_cache_sync, Indexers, Lister};
use kclient::core::{CancellationToken, CreateOptions, ListOptions, UpdateOptions};
use kclient::fake::FakeApiServer;
use kclient::prelude::*;
use kclient::rest::KubeconfigOptions;
use kclient::workqueue::{default_controller_rate_limiter, RateLimitingQueue};
use serde_json::json;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The label that puts a Deployment under this controller.
const MANAGED: (&str, &str) = ("config", "managed");
/// The index of ConfigMaps by their owning Deployment's uid.
const BY_OWNER: &str = "by-owner";
/// How many times a failing key is retried before it is dropped (client-go's example).
const MAX_RETRIES: usize = 5;

/// The controller: listers over the two caches, the queue, and the client for writes.
#[derive(Clone)]
struct Controller {
    clientset: Clientset,
    deployments: Lister<Deployment>,
    config_maps: Lister<ConfigMap>,
    config_map_index: kclient::cache::Indexer<ConfigMap>,
    queue: RateLimitingQueue<String>,
    reconciles: Arc<AtomicUsize>,
}

fn is_managed(d: &Deployment) -> bool {
    d.labels().get(MANAGED.0).map(String::as_str) == Some(MANAGED.1)
}

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

impl Controller {
    /// Builds the controller on `factory`'s informers and registers its handlers.
    fn new(
        clientset: Clientset,
        factory: &SharedInformerFactory<Clientset>,
    ) -> Result<Self, Error> {
        let deployment_informer = factory.apps_v1().deployments().informer();
        let config_map_informer = factory.core_v1().config_maps().informer();
        config_map_informer.add_indexers(Indexers::new().with(BY_OWNER, |cm: &ConfigMap| {
            Ok(cm
                .owner_references()
                .iter()
                .filter(|o| o.kind == "Deployment")
                .map(|o| o.uid.clone())
                .collect())
        }))?;
        let controller = Controller {
            clientset,
            deployments: deployment_informer.lister(),
            config_maps: config_map_informer.lister(),
            config_map_index: config_map_informer.get_indexer().clone(),
            queue: RateLimitingQueue::new(default_controller_rate_limiter()),
            reconciles: Arc::default(),
        };

        let (add, update) = (controller.clone(), controller.clone());
        deployment_informer.add_event_handler(
            ResourceEventHandlerFuncs::new()
                .add_func(move |d: &Arc<Deployment>, _| add.enqueue(d))
                .update_func(move |old: &Arc<Deployment>, new: &Arc<Deployment>| {
                    // A resync redelivers unchanged objects: nothing to do for them.
                    if old.resource_version() != new.resource_version() {
                        update.enqueue(new)
                    }
                }),
        )?;
        let (add, update, delete) = (controller.clone(), controller.clone(), controller.clone());
        config_map_informer.add_event_handler(
            ResourceEventHandlerFuncs::new()
                .add_func(move |cm: &Arc<ConfigMap>, _| add.handle_owned(cm))
                .update_func(move |_, cm: &Arc<ConfigMap>| update.handle_owned(cm))
                .delete_func(move |cm: &DeletedObject<ConfigMap>| {
                    // A tombstone carries the last state the cache knew.
                    if let Some(cm) = cm.last_known() {
                        delete.handle_owned(cm)
                    }
                }),
        )?;
        Ok(controller)
    }

    fn enqueue(&self, d: &Deployment) {
        if is_managed(d) {
            self.queue.add(kclient::core::meta_namespace_key(d));
        }
    }

    /// A ConfigMap changed: if a managed Deployment owns it, that Deployment is looked at
    /// again (sample-controller's `handleObject`).
    fn handle_owned(&self, cm: &ConfigMap) {
        let Some(owner) = cm
            .owner_references()
            .iter()
            .find(|o| o.kind == "Deployment")
        else {
            return;
        };
        let namespace = cm.namespace().unwrap_or_default();
        if let Ok(d) = self
            .deployments
            .namespaced(namespace)
            .get(owner.name.as_str())
        {
            self.enqueue(&d);
        }
    }

    /// Runs `workers` workers until the queue shuts down.
    async fn run_workers(&self, workers: usize) {
        let mut tasks = Vec::new();
        for _ in 0..workers {
            let controller = self.clone();
            tasks.push(tokio::spawn(async move {
                while let Some(key) = controller.queue.get().await {
                    let result = controller.sync(&key).await;
                    controller.handle_err(&key, result);
                    controller.queue.done(&key);
                }
            }));
        }
        for task in tasks {
            let _ = task.await;
        }
    }

    fn handle_err(&self, key: &String, result: Result<(), Error>) {
        match result {
            Ok(()) => self.queue.forget(key),
            Err(error) if self.queue.num_requeues(key) < MAX_RETRIES => {
                println!("  error syncing {key}: {error}; retrying");
                self.queue.add_rate_limited(key.clone());
            }
            Err(error) => {
                println!("  dropping {key} after {MAX_RETRIES} retries: {error}");
                self.queue.forget(key);
            }
        }
    }

    /// Makes the Deployment's ConfigMap what it should be.
    async fn sync(&self, key: &str) -> Result<(), Error> {
        self.reconciles.fetch_add(1, Ordering::SeqCst);
        let (namespace, name) = kclient::core::split_meta_namespace_key(key)?;
        let deployment = match self.deployments.namespaced(namespace).get(name) {
            Ok(d) => d,
            // Deleted: its ConfigMap goes with it (garbage collection of owned objects).
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let uid = deployment.uid().unwrap_or_default().to_owned();
        let data = desired_data(&deployment);
        let owned = self.config_map_index.by_index(BY_OWNER, &uid)?;
        let client = self.clientset.core_v1().config_maps(namespace);
        match owned.first() {
            Some(cm) if cm.data.as_ref() == Some(&data) => Ok(()),
            Some(cm) => {
                let mut updated = ConfigMap::clone(cm);
                updated.data = Some(data);
                client.update(&updated, &UpdateOptions::default()).await?;
                println!("  updated {namespace}/{}", cm.name_any());
                Ok(())
            }
            None => {
                let settings = format!("{name}-settings");
                if self
                    .config_maps
                    .namespaced(namespace)
                    .get(settings.as_str())
                    .is_ok()
                {
                    return Err(format!("{settings} exists and is not owned by {name}").into());
                }
                let mut cm = ConfigMap::default();
                cm.metadata.name = Some(settings.clone());
                cm.metadata.namespace = Some(namespace.to_owned());
                cm.metadata.owner_references = Some(vec![OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: "Deployment".into(),
                    name: name.to_owned(),
                    uid,
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]);
                cm.data = Some(data);
                client.create(&cm, &CreateOptions::default()).await?;
                println!("  created {namespace}/{settings}");
                Ok(())
            }
        }
    }
}

/// Starts the factory and the controller, runs until `cancel`, then shuts down gracefully:
/// the queue drains, the workers end, the informers stop. Returns the reconcile count.
async fn run(
    clientset: Clientset,
    namespace: &str,
    cancel: CancellationToken,
) -> Result<usize, Error> {
    let factory = SharedInformerFactory::builder(clientset.clone())
        .default_resync(Duration::from_secs(10 * 60))
        .namespace(namespace)
        .build();
    let controller = Controller::new(clientset, &factory)?;
    factory.start(&cancel);
    let synced = [
        factory.apps_v1().deployments().informer().synced(),
        factory.core_v1().config_maps().informer().synced(),
    ];
    if !wait_for_named_cache_sync("sample-controller", &cancel, &synced).await {
        return Err("caches did not sync".into());
    }
    let workers = tokio::spawn({
        let controller = controller.clone();
        async move { controller.run_workers(2).await }
    });
    cancel.cancelled().await;
    controller.queue.shut_down_with_drain().await;
    workers.await?;
    factory.shutdown().await;
    Ok(controller.reconciles.load(Ordering::SeqCst))
}

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
    let reconciles = controller.await??;
    println!(
        "The controller reconciled {reconciles} times and made {:?}",
        current.keys()
    );
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
            let cancel = CancellationToken::new();
            tokio::spawn({
                let cancel = cancel.clone();
                async move {
                    let _ = tokio::signal::ctrl_c().await;
                    println!("Shutting down...");
                    cancel.cancel();
                }
            });
            println!("Running in {namespace} until Ctrl-C");
            let reconciles = run(Clientset::new(config)?, &namespace, cancel).await?;
            println!("Reconciled {reconciles} times.");
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
