//! Sharded replicas (`sharded::run_sharded`) against kclient-fake with the
//! `ShardedListAndWatch` gate, in real time with short leases: replicas joining and leaving
//! divide the reconciles of a namespace's ConfigMaps, every object is reconciled, and a
//! witness shared by the replicas sees no key reconciled by two of them at once.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::SharedInformerFactory;
use kclient_controller::sharded::{run_sharded, ShardedMetrics, ShardedOptions};
use kclient_controller::{Action, Controller, Manager, ManagerError, ReconcileContext, Reconciler};
use kclient_core::{CancellationToken, CreateOptions};
use kclient_fake::FakeApiServer;
use kclient_tools::events::{new_broadcaster, EventBroadcaster, MemorySink};
use kclient_tools::sharding::{ShardRing, ShardRingConfig};
use kclient_typed::Clientset;
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use tokio::task::JoinHandle;

use crate::support::{clientset, config_map, eventually};

/// Which replica reconciles which key now, which reconciled each key, and overlaps.
#[derive(Default)]
struct Witness {
    running: Mutex<BTreeMap<String, String>>,
    done: Mutex<BTreeMap<String, BTreeSet<String>>>,
    overlaps: Mutex<Vec<String>>,
}

struct Recorder {
    replica: String,
    witness: Arc<Witness>,
}

impl Reconciler<ConfigMap> for Recorder {
    type Error = kclient_typed::Error;

    async fn reconcile(
        &self,
        _: Arc<ConfigMap>,
        ctx: &ReconcileContext,
    ) -> Result<Action, Self::Error> {
        let key = ctx.key().name.clone();
        if let Some(other) = self
            .witness
            .running
            .lock()
            .insert(key.clone(), self.replica.clone())
        {
            self.witness
                .overlaps
                .lock()
                .push(format!("{key}: {} started while {other} ran", self.replica));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.witness.running.lock().remove(&key);
        self.witness
            .done
            .lock()
            .entry(key)
            .or_default()
            .insert(self.replica.clone());
        Ok(Action::await_change())
    }
}

struct Replica {
    shutdown: CancellationToken,
    task: JoinHandle<Result<(), ManagerError>>,
    metrics: ShardedMetrics,
    registry: Registry,
}

fn replica(
    server: &FakeApiServer,
    witness: &Arc<Witness>,
    name: &str,
    events: &EventBroadcaster,
) -> Replica {
    let clientset: Clientset = clientset(server);
    let mut config = ShardRingConfig::new("default", "sharded-test", name);
    config.lease_duration = Duration::from_secs(6);
    config.renew_deadline = Duration::from_secs(4);
    config.retry_period = Duration::from_millis(500);
    let ring = Arc::new(ShardRing::new(&clientset, config).unwrap());
    let shutdown = CancellationToken::new();
    let mut registry = Registry::default();
    let metrics = ShardedMetrics::registered(&mut registry);
    let (witness, name) = (witness.clone(), name.to_owned());
    let task = tokio::spawn(run_sharded(
        ring,
        shutdown.clone(),
        ShardedOptions::default()
            .metrics(metrics.clone())
            .events(events.new_recorder("sharded-test", &name)),
        move |held| {
            let mut factory = SharedInformerFactory::builder(clientset.clone()).namespace("work");
            if let Some(selector) = held.selector() {
                factory = factory.shard_selector(selector);
            }
            let factory = factory.build();
            let mut manager = Manager::builder(&factory).build()?;
            let recorder = Recorder {
                replica: name.clone(),
                witness: witness.clone(),
            };
            manager.add(
                Controller::<ConfigMap, _>::new("record", &factory),
                recorder,
            );
            Ok(manager)
        },
    ));
    Replica {
        shutdown,
        task,
        metrics,
        registry,
    }
}

/// A replica's metrics as Prometheus would scrape them.
fn scrape(replica: &Replica) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &replica.registry).unwrap();
    text
}

async fn create(clientset: &Clientset, names: impl Iterator<Item = String>) {
    let config_maps = clientset.core_v1().config_maps("work");
    for name in names {
        config_maps
            .create(
                &config_map("work", &name, &[("k", "v")]),
                &CreateOptions::default(),
            )
            .await
            .unwrap();
    }
}

/// Whether every one of `names` was reconciled, and which replicas did.
fn reconciled(witness: &Witness, names: &[String]) -> Option<BTreeSet<String>> {
    let done = witness.done.lock();
    names
        .iter()
        .all(|n| done.contains_key(n))
        .then(|| names.iter().flat_map(|n| done[n].clone()).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_divide_the_reconciles_and_never_overlap() {
    let server = FakeApiServer::builder()
        .sharded_list_and_watch(true)
        .start()
        .await
        .unwrap();
    let admin = clientset(&server);
    server
        .seed(serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "work"}}))
        .unwrap();
    let witness = Arc::new(Witness::default());
    let first: Vec<String> = (0..60).map(|i| format!("first-{i}")).collect();
    create(&admin, first.iter().cloned()).await;

    let broadcaster = new_broadcaster();
    let sink = MemorySink::new();
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    let a = replica(&server, &witness, "a", &broadcaster);
    let b = replica(&server, &witness, "b", &broadcaster);
    let both = || reconciled(&witness, &first).is_some_and(|by| by.len() == 2);
    assert!(
        eventually(Duration::from_secs(60), both).await,
        "two replicas: {:?}",
        reconciled(&witness, &first)
    );

    // A third joins; what is created next is divided between the three.
    let c = replica(&server, &witness, "c", &broadcaster);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let second: Vec<String> = (0..60).map(|i| format!("second-{i}")).collect();
    create(&admin, second.iter().cloned()).await;
    let three = || reconciled(&witness, &second).is_some_and(|by| by.contains("c"));
    assert!(
        eventually(Duration::from_secs(60), three).await,
        "three replicas: {:?}",
        reconciled(&witness, &second)
    );

    // One leaves: everything created afterwards is reconciled by the others.
    b.shutdown.cancel();
    b.task.await.unwrap().unwrap();
    let third: Vec<String> = (0..40).map(|i| format!("third-{i}")).collect();
    create(&admin, third.iter().cloned()).await;
    let without_b =
        || reconciled(&witness, &third).is_some_and(|by| by.iter().all(|r| r == "a" || r == "c"));
    assert!(
        eventually(Duration::from_secs(60), without_b).await,
        "after b left: {:?}",
        reconciled(&witness, &third)
    );

    // The two left cache the namespace between them, each object once, and say so.
    let cached = || a.metrics.objects_cached() + c.metrics.objects_cached();
    assert!(
        eventually(Duration::from_secs(30), || cached() == 160).await,
        "a and c cache {} of 160",
        cached()
    );
    let text = scrape(&a);
    for line in [
        format!(
            "kclient_shard_objects_cached {}",
            a.metrics.objects_cached()
        ),
        "kclient_shard_slots 16".to_string(),
    ] {
        assert!(text.contains(&line), "{line} not in:\n{text}");
    }
    assert!(text.contains("kclient_shard_handovers_total "), "{text}");
    assert!(
        text.contains("kclient_shard_handover_seconds_count "),
        "{text}"
    );

    for replica in [a, c] {
        replica.shutdown.cancel();
        replica.task.await.unwrap().unwrap();
    }
    let overlaps = witness.overlaps.lock().clone();
    assert!(overlaps.is_empty(), "{overlaps:#?}");
    // Each replica said on its member Lease when its holding changed.
    broadcaster.shutdown().await;
    let rebalanced: BTreeSet<String> = sink
        .events()
        .iter()
        .filter(|e| e.reason.as_deref() == Some("ShardsRebalanced"))
        .filter_map(|e| e.involved_object.name.clone())
        .collect();
    let leases = ["a", "b", "c"].map(|r| format!("sharded-test-member-{r}"));
    assert_eq!(rebalanced, leases.into_iter().collect());
}
