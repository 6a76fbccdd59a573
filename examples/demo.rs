//! The main demo, `cargo xtask demo`: a small controller built from kclient's layers, against
//! kclient-fake started in-process or, with a kubeconfig, a real cluster.
//!
//! 1. discovery: the server's version and resources, and kubectl-style names through the
//!    RestMapper;
//! 2. a controller: an informer factory caches the namespace's Deployments; its event
//!    handler feeds `namespace/name` keys into a rate-limited workqueue; a worker
//!    "reconciles" each key by reading the object from the lister, as a client-go
//!    controller does;
//! 3. the changes it reacts to: a Deployment created, updated, scaled through the scale
//!    subresource and deleted with the typed Clientset;
//! 4. the dynamic client listing what the namespace holds.
//!
//! ```text
//! cargo xtask demo                          # against kclient-fake
//! cargo xtask demo --kubeconfig ~/.kube/config
//! KUBECONFIG=~/.kube/config cargo xtask demo
//! ```
//!
//! Against a cluster it works in a namespace of its own, `kclient-demo-<random>`, deleted at
//! the end.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kclient::cache::CancellationToken;
use kclient::core::{CreateOptions, DeleteOptions, ListOptions, UpdateOptions};
use kclient::discovery::{Discovery, DiscoveryClient, RestMapper};
use kclient::fake::FakeApiServer;
use kclient::prelude::*;
use kclient::rest::KubeconfigOptions;
use kclient::workqueue::default_controller_rate_limiter;
use kclient::workqueue::RateLimitingQueue;
use serde_json::json;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Where the demo runs.
enum Target {
    /// `--kubeconfig <path>` (or `--kubeconfig=<path>`).
    Kubeconfig(PathBuf),
    /// `KUBECONFIG` is set: client-go's loading rules (it may list several files).
    Environment,
    /// kclient-fake, started here.
    Fake,
}

fn target_from_args() -> Result<Target, Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] if std::env::var_os("KUBECONFIG").is_some_and(|v| !v.is_empty()) => {
            Ok(Target::Environment)
        }
        [] => Ok(Target::Fake),
        [flag, path] if flag == "--kubeconfig" => Ok(Target::Kubeconfig(path.into())),
        [flag] if flag.starts_with("--kubeconfig=") => {
            Ok(Target::Kubeconfig(flag["--kubeconfig=".len()..].into()))
        }
        _ => {
            Err(format!("unexpected arguments {args:?} (usage: demo [--kubeconfig <path>])").into())
        }
    }
}

fn deployment(name: &str, image: &str) -> Result<Deployment, Error> {
    // JSON reads the same for every Kubernetes version k8s-openapi models.
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": image}]}
            }
        }
    }))?)
}

/// What the worker prints for a Deployment: replicas and image, read version-neutrally.
fn describe(d: &Deployment) -> String {
    let value = serde_json::to_value(d).unwrap_or_default();
    format!(
        "replicas={} image={}",
        value["spec"]["replicas"], value["spec"]["template"]["spec"]["containers"][0]["image"]
    )
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (_fake, config) = match target_from_args()? {
        Target::Kubeconfig(path) => {
            println!("Using the cluster of {}", path.display());
            let options = KubeconfigOptions {
                path: Some(path),
                ..Default::default()
            };
            (None, Config::from_kubeconfig(&options)?)
        }
        Target::Environment => {
            println!("Using the cluster of KUBECONFIG");
            (None, Config::infer()?)
        }
        Target::Fake => {
            let server = FakeApiServer::builder()
                .https()
                .token("demo")
                .start()
                .await?;
            println!(
                "Started kclient-fake at {} (pass --kubeconfig for a cluster)",
                server.url()
            );
            let config = server.config()?;
            (Some(server), config)
        }
    };
    let reconciles = run(config).await?;
    println!("The worker reconciled {reconciles} times. Done.");
    Ok(())
}

/// The demo against the server `config` reaches; returns how many times the worker
/// reconciled.
async fn run(config: Config) -> Result<usize, Error> {
    // 1. Discovery.
    let discovery = DiscoveryClient::for_config(&config)?;
    let version = discovery.server_version().await?;
    let all = discovery.groups_and_maybe_resources().await?;
    let resource_count: usize = all
        .resources
        .as_ref()
        .map(|r| r.values().map(|l| l.resources.len()).sum())
        .unwrap_or_default();
    println!(
        "Server {}: {} API groups, {} resources and subresources",
        version.git_version,
        all.groups.groups.len(),
        resource_count
    );
    let mapper = RestMapper::from_discovery(&discovery).await?;
    for name in ["deploy", "cm", "po"] {
        let mapping = mapper.find(name)?;
        println!("  {name:>6} -> {}", mapping.resource);
    }

    // A namespace of our own.
    let clientset = Clientset::new(config.clone())?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let namespace = format!("kclient-demo-{:05x}", nanos & 0xfffff);
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": namespace}}))?;
    clientset
        .core_v1()
        .namespaces()
        .create(&ns, &CreateOptions::default())
        .await?;
    println!("Created namespace {namespace}");

    // 2. The controller: informer -> handler -> workqueue -> worker reading the lister.
    let deployments = clientset.apps_v1().deployments(&namespace);
    let factory =
        SharedInformerFactory::new(clientset.clone(), Duration::ZERO).namespace(&namespace);
    let informer = factory.apps_v1().deployments().informer();
    let lister = factory.apps_v1().deployments().lister();
    let queue: RateLimitingQueue<String> =
        RateLimitingQueue::new(default_controller_rate_limiter());
    let enqueue = {
        let queue = queue.clone();
        move |d: &Deployment| queue.add(kclient::core::meta_namespace_key(d))
    };
    let (on_add, on_update, on_delete) = (enqueue.clone(), enqueue.clone(), queue.clone());
    informer.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .add_func(move |d: &Arc<Deployment>, _| on_add(d))
            .update_func(move |_, d: &Arc<Deployment>| on_update(d))
            .delete_func(move |d: &DeletedObject<Deployment>| {
                // A tombstone carries the key when the final state was missed.
                on_delete.add(kclient::core::deletion_handling_meta_namespace_key(d))
            }),
    )?;
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    if !factory.wait_for_cache_sync(&cancel).await.all_synced() {
        return Err("the Deployment cache did not sync".into());
    }
    println!(
        "Deployment informer synced ({} cached)",
        informer.get_store().len()
    );
    let worker = {
        let queue = queue.clone();
        let lister = lister.namespaced(&namespace);
        tokio::spawn(async move {
            let mut reconciles = 0usize;
            while let Some(key) = queue.get().await {
                let name = key.rsplit('/').next().unwrap_or_default().to_owned();
                match lister.get(&name) {
                    Ok(d) => println!("  reconcile {key}: {}", describe(&d)),
                    Err(e) if e.is_not_found() => println!("  reconcile {key}: gone"),
                    Err(error) => {
                        println!("  reconcile {key}: {error}; retrying");
                        queue.add_rate_limited(key.clone());
                        queue.done(&key);
                        continue;
                    }
                }
                reconciles += 1;
                queue.forget(&key);
                queue.done(&key);
            }
            reconciles
        })
    };

    // 3. The changes the controller sees.
    let settle = || tokio::time::sleep(Duration::from_millis(300));
    println!("Creating deployment web...");
    deployments
        .create(&deployment("web", "nginx:1.27")?, &CreateOptions::default())
        .await?;
    settle().await;
    println!("Updating its image...");
    loop {
        let current = deployments.get("web").await?;
        let mut value = serde_json::to_value(&current)?;
        value["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.28");
        match deployments
            .update(&serde_json::from_value(value)?, &UpdateOptions::default())
            .await
        {
            Err(e) if e.is_conflict() => continue,
            other => {
                other?;
                break;
            }
        }
    }
    settle().await;
    println!("Scaling it to 3 through the scale subresource...");
    deployments.scale_to("web", 3).await?;
    settle().await;

    // 4. The dynamic client, with a resource the RestMapper resolved.
    let dynamic = DynamicClient::new(RestClient::new(config.clone())?);
    let config_maps = dynamic
        .resource(mapper.find("cm")?.api_resource())
        .namespace(&namespace);
    let names: Vec<String> = config_maps
        .list(&ListOptions::default())
        .await?
        .items
        .iter()
        .map(|o| o.name_any().to_owned())
        .collect();
    println!("ConfigMaps in {namespace} (dynamic client): {names:?}");

    println!("Deleting deployment web...");
    deployments
        .delete("web", &DeleteOptions::background())
        .await?;
    settle().await;

    factory.shutdown().await;
    queue.shut_down();
    let reconciles = worker.await?;
    clientset
        .core_v1()
        .namespaces()
        .delete(&namespace, &DeleteOptions::default())
        .await?;
    println!("Deleted namespace {namespace}");
    Ok(reconciles)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_demo_runs_against_kclient_fake() -> Result<(), Error> {
        let server = FakeApiServer::builder()
            .https()
            .token("demo")
            .start()
            .await?;
        let reconciles = run(server.config()?).await?;
        // The workqueue collapses keys added while one is waiting, so the count depends on
        // timing; there is at least the creation's.
        assert!(reconciles >= 1, "{reconciles}");
        // The demo cleans up after itself.
        let namespaces = Clientset::new(server.config()?)?
            .core_v1()
            .namespaces()
            .list(&ListOptions::default())
            .await?;
        assert!(namespaces.items.iter().all(|n| !n
            .metadata
            .name
            .as_deref()
            .unwrap_or_default()
            .starts_with("kclient-demo-")));
        Ok(())
    }
}
