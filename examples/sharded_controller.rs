//! A sharded controller: replicas of one program divide a namespace's ConfigMaps between them
//! (`kclient::controller::sharded::run_sharded` on a `kclient::tools::sharding::ShardRing`),
//! each caching and reconciling only the slots it holds. The controller writes the replica's
//! identity into `data.replica` of every ConfigMap labelled `sharded-example=managed`, so the
//! division can be watched:
//!
//! ```text
//! kubectl get configmaps -l sharded-example=managed -o custom-columns=NAME:.metadata.name,REPLICA:.data.replica
//! kubectl get leases -l sharding.kclient.dev/ring=sharded-example
//! ```
//!
//! ```text
//! # kclient-fake in-process (with the ShardedListAndWatch gate), scripted: three replicas
//! # divide 90 ConfigMaps, one leaves, the other two take its share over
//! cargo run -p kclient --features fake,tools,controller --example sharded_controller
//!
//! # a cluster (kube-apiserver 1.36+ with --feature-gates=ShardedListAndWatch=true; without
//! # it every replica lists everything and keeps its share): one replica per terminal
//! cargo run -p kclient --features fake,tools,controller --example sharded_controller -- --kubeconfig ~/.kube/config --id a
//! ```
//!
//! Options: `--namespace NS` (default `default`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kclient::controller::sharded::{run_sharded, ShardedOptions};
use kclient::controller::ManagerError;
use kclient::core::{CreateOptions, Patch, PatchOptions};
use kclient::fake::FakeApiServer;
use kclient::prelude::*;
use kclient::rest::KubeconfigOptions;
use kclient::tools::sharding::{ShardRing, ShardRingConfig};
use serde_json::json;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The label that puts a ConfigMap under the controller.
const MANAGED: (&str, &str) = ("sharded-example", "managed");
/// The ring's name.
const RING: &str = "sharded-example";

/// Writes the replica's identity into the ConfigMap.
struct Stamp {
    identity: String,
    clientset: Clientset,
}

impl Reconciler<ConfigMap> for Stamp {
    type Error = kclient::typed::Error;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        ctx: &ReconcileContext,
    ) -> Result<Action, Self::Error> {
        let stamped = cm.data.as_ref().and_then(|d| d.get("replica"));
        if stamped != Some(&self.identity) {
            let namespace = ctx.key().namespace.as_deref().unwrap_or_default();
            let patch = Patch::Merge(json!({"data": {"replica": self.identity}}));
            self.clientset
                .core_v1()
                .config_maps(namespace)
                .patch(&ctx.key().name, &patch, &PatchOptions::default())
                .await?;
        }
        Ok(Action::await_change())
    }
}

/// One replica: a ring member running a manager for each of its holdings, until `shutdown`.
async fn replica(
    clientset: Clientset,
    namespace: String,
    identity: String,
    ring_config: impl FnOnce(ShardRingConfig) -> ShardRingConfig,
    shutdown: CancellationToken,
) -> Result<(), Error> {
    let config = ring_config(ShardRingConfig::new(&namespace, RING, &identity));
    let ring = Arc::new(ShardRing::new(&clientset, config)?);
    run_sharded(ring, shutdown, ShardedOptions::default(), |held| {
        println!("{identity}: holding slots {:?}", held.slots);
        let mut factory = SharedInformerFactory::builder(clientset.clone())
            .namespace(&namespace)
            .tweak_list_options(|o| {
                o.label_selector = Some(format!("{}={}", MANAGED.0, MANAGED.1))
            });
        if let Some(selector) = held.selector() {
            factory = factory.shard_selector(selector);
        }
        let factory = factory.build();
        let mut manager = Manager::builder(&factory)
            .graceful_shutdown_timeout(Duration::from_secs(2))
            .build()?;
        let stamp = Stamp {
            identity: identity.clone(),
            clientset: clientset.clone(),
        };
        manager.add(Controller::<ConfigMap, _>::new("stamp", &factory), stamp);
        Ok::<_, ManagerError>(manager)
    })
    .await?;
    Ok(())
}

/// How many managed ConfigMaps each replica's identity is written in.
async fn stamps(clientset: &Clientset, namespace: &str) -> Result<BTreeMap<String, usize>, Error> {
    let list = clientset
        .core_v1()
        .config_maps(namespace)
        .list(&kclient::core::ListOptions::default().labels(format!("{}={}", MANAGED.0, MANAGED.1)))
        .await?;
    let mut counts = BTreeMap::new();
    for cm in &list.items {
        let who = cm
            .data
            .as_ref()
            .and_then(|d| d.get("replica"))
            .cloned()
            .unwrap_or_default();
        *counts.entry(who).or_insert(0) += 1;
    }
    Ok(counts)
}

/// Polls until `done` says yes (a minute at most).
async fn until(
    clientset: &Clientset,
    namespace: &str,
    done: impl Fn(&BTreeMap<String, usize>) -> bool,
) -> Result<BTreeMap<String, usize>, Error> {
    for _ in 0..600 {
        let counts = stamps(clientset, namespace).await?;
        if done(&counts) {
            return Ok(counts);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("not done: {:?}", stamps(clientset, namespace).await?).into())
}

/// The scripted run on kclient-fake: three replicas divide 90 ConfigMaps, then b leaves and
/// a and c take its share over. What each replica stamped, before and after.
async fn scenario(server: &FakeApiServer) -> Result<[BTreeMap<String, usize>; 2], Error> {
    let admin = Clientset::new(server.config()?)?;
    for i in 0..90 {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("settings-{i}"));
        cm.metadata.labels = Some([(MANAGED.0.to_owned(), MANAGED.1.to_owned())].into());
        admin
            .core_v1()
            .config_maps("default")
            .create(&cm, &CreateOptions::default())
            .await?;
    }
    let short = |mut config: ShardRingConfig| {
        config.lease_duration = Duration::from_secs(6);
        config.renew_deadline = Duration::from_secs(4);
        config.retry_period = Duration::from_millis(500);
        config
    };
    let mut replicas = BTreeMap::new();
    for id in ["a", "b", "c"] {
        let shutdown = CancellationToken::new();
        let clientset = Clientset::new(server.config()?)?;
        let task = tokio::spawn(replica(
            clientset,
            "default".into(),
            id.into(),
            short,
            shutdown.clone(),
        ));
        replicas.insert(id, (shutdown, task));
    }
    let all = |c: &BTreeMap<String, usize>| c.len() == 3 && !c.contains_key("");
    let three = until(&admin, "default", all).await?;
    println!("three replicas: {three:?}");

    let (shutdown, task) = replicas.remove("b").ok_or("no b")?;
    shutdown.cancel();
    task.await??;
    let without_b = |c: &BTreeMap<String, usize>| c.keys().all(|k| k == "a" || k == "c");
    let two = until(&admin, "default", without_b).await?;
    println!("after b left: {two:?}");

    for (_, (shutdown, task)) in replicas {
        shutdown.cancel();
        task.await??;
    }
    Ok([three, two])
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
            let config = kclient::rest::Config::from_kubeconfig(&KubeconfigOptions {
                path: Some(path.into()),
                ..Default::default()
            })?;
            let identity =
                flag("--id").unwrap_or_else(|| format!("replica-{}", std::process::id()));
            let namespace = flag("--namespace").unwrap_or_else(|| "default".into());
            let shutdown = CancellationToken::new();
            tokio::spawn({
                let shutdown = shutdown.clone();
                async move {
                    let _ = tokio::signal::ctrl_c().await;
                    println!("Leaving the ring (Ctrl-C)...");
                    shutdown.cancel();
                }
            });
            println!("Until Ctrl-C.");
            replica(
                Clientset::new(config)?,
                namespace,
                identity,
                |c| c,
                shutdown,
            )
            .await?;
        }
        None => {
            let server = FakeApiServer::builder()
                .sharded_list_and_watch(true)
                .start()
                .await?;
            scenario(&server).await?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn three_replicas_divide_the_work_and_two_take_over_the_third_share() -> Result<(), Error>
    {
        let server = FakeApiServer::builder()
            .sharded_list_and_watch(true)
            .start()
            .await?;
        let [three, two] = scenario(&server).await?;
        assert_eq!(three.values().sum::<usize>(), 90);
        assert!(three.values().all(|n| *n > 0), "{three:?}");
        assert_eq!(two.values().sum::<usize>(), 90);
        Ok(())
    }
}
