//! A metadata-only controller: it counts Pods per value of a label (`app` by default)
//! without ever reading a Pod's spec or status.
//!
//! * a `MetadataClient` and a metadata informer factory (client-go's `metadata` and
//!   `metadatainformer`): the informer lists and watches Pods as `PartialObjectMetadata`
//!   (`Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`), so its cache
//!   holds names, labels and owners — about a tenth of a whole Pod — and the factory strips
//!   their managedFields too;
//! * an index of the cached metadata by the label's value, read by the worker;
//! * event handlers that enqueue the label values a change touches (both values when a Pod
//!   is relabelled, the last known one when it is deleted, tombstones included);
//! * a rate-limited workqueue whose worker recounts one value from the index.
//!
//! ```text
//! cargo run -p kclient --features fake --example metadata_pod_counter             # kclient-fake, with a scripted scenario
//! cargo run -p kclient --features fake --example metadata_pod_counter -- --kubeconfig ~/.kube/config [--namespace NS] [--label KEY]
//! ```
//!
//! Against a cluster it watches every namespace (or `--namespace`) and prints each count as
//! it changes, until Ctrl-C.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kclient::cache::{wait_for_named_cache_sync, Indexer, Indexers};
use kclient::core::{
    CancellationToken, CreateOptions, DeleteOptions, PartialObjectMetadata, Patch, PatchOptions,
};
use kclient::dynamic::MetadataClient;
use kclient::fake::FakeApiServer;
use kclient::prelude::*;
use kclient::rest::KubeconfigOptions;
use kclient::workqueue::{default_controller_rate_limiter, RateLimitingQueue};
use serde_json::json;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The index of cached Pods by the value of the counted label.
const BY_VALUE: &str = "by-label-value";

/// Label value → number of Pods carrying it, shared between the worker and its readers, who
/// can wait for a state without polling.
#[derive(Clone)]
struct Counts(tokio::sync::watch::Sender<BTreeMap<String, usize>>);

impl Default for Counts {
    fn default() -> Self {
        Self(tokio::sync::watch::Sender::new(BTreeMap::new()))
    }
}

impl Counts {
    /// Records `count` Pods for `value` (none: the value is forgotten); whether it changed.
    fn set(&self, value: &str, count: usize) -> bool {
        self.0.send_if_modified(|counts| {
            let before = match count {
                0 => counts.remove(value),
                n => counts.insert(value.to_owned(), n),
            };
            before != Some(count).filter(|n| *n > 0)
        })
    }

    /// A copy of the counts.
    fn snapshot(&self) -> BTreeMap<String, usize> {
        self.0.borrow().clone()
    }

    /// Waits until the counts are `expected`.
    async fn until(&self, expected: &BTreeMap<String, usize>) {
        let mut changes = self.0.subscribe();
        // The sender lives as long as `self`: waiting cannot fail.
        let _ = changes.wait_for(|counts| counts == expected).await;
    }
}

/// The controller: the index over the metadata cache, the queue of label values to recount,
/// and the counts.
#[derive(Clone)]
struct PodCounter {
    index: Indexer<PartialObjectMetadata>,
    queue: RateLimitingQueue<String>,
    counts: Counts,
}

impl PodCounter {
    /// Registers the index and the handlers on the Pod metadata informer of `factory`.
    fn new(factory: &SharedInformerFactory<MetadataClient>, label: &str) -> Result<Self, Error> {
        let informer = factory
            .for_resource::<PartialObjectMetadata>(&Pod::api_resource(&()))
            .into_informer();
        let key = label.to_owned();
        informer.add_indexers(Indexers::new().with(
            BY_VALUE,
            move |pod: &PartialObjectMetadata| {
                Ok(pod.labels().get(&key).cloned().into_iter().collect())
            },
        ))?;
        let counter = PodCounter {
            index: informer.get_indexer().clone(),
            queue: RateLimitingQueue::new(default_controller_rate_limiter()),
            counts: Counts::default(),
        };
        let value = {
            let label = label.to_owned();
            move |pod: &PartialObjectMetadata| pod.labels().get(&label).cloned()
        };
        let (add, update, delete) = (counter.clone(), counter.clone(), counter.clone());
        let (on_add, on_update, on_delete) = (value.clone(), value.clone(), value);
        informer.add_event_handler(
            ResourceEventHandlerFuncs::new()
                .add_func(move |pod: &Arc<PartialObjectMetadata>, _| add.enqueue(on_add(pod)))
                .update_func(move |old: &Arc<PartialObjectMetadata>, new| {
                    let (before, after) = (on_update(old), on_update(new));
                    if before != after {
                        update.enqueue(before);
                        update.enqueue(after);
                    }
                })
                .delete_func(move |pod: &DeletedObject<PartialObjectMetadata>| {
                    // A tombstone carries the last state the cache knew.
                    if let Some(pod) = pod.last_known() {
                        delete.enqueue(on_delete(pod))
                    }
                }),
        )?;
        Ok(counter)
    }

    fn enqueue(&self, value: Option<String>) {
        if let Some(value) = value {
            self.queue.add(value);
        }
    }

    /// Recounts one label value from the index.
    fn recount(&self, value: &str) -> Result<(), Error> {
        let count = self.index.by_index(BY_VALUE, value)?.len();
        if self.counts.set(value, count) {
            println!("  {value}: {count} Pod(s)");
        }
        Ok(())
    }

    /// Works the queue until it shuts down.
    async fn run_worker(&self) {
        while let Some(value) = self.queue.get().await {
            match self.recount(&value) {
                Ok(()) => self.queue.forget(&value),
                Err(error) => {
                    println!("  recounting {value}: {error}; retrying");
                    self.queue.add_rate_limited(value.clone());
                }
            }
            self.queue.done(&value);
        }
    }
}

/// Runs the counter until `cancel`, then shuts down gracefully. Returns the counts.
async fn run(
    client: MetadataClient,
    namespace: Option<&str>,
    label: &str,
    cancel: CancellationToken,
    started: tokio::sync::oneshot::Sender<Counts>,
) -> Result<BTreeMap<String, usize>, Error> {
    let mut builder = SharedInformerFactory::builder(client);
    if let Some(namespace) = namespace {
        builder = builder.namespace(namespace);
    }
    let factory = builder.build();
    let counter = PodCounter::new(&factory, label)?;
    factory.start(&cancel);
    let pods = factory
        .for_resource::<PartialObjectMetadata>(&Pod::api_resource(&()))
        .into_informer();
    if !wait_for_named_cache_sync("metadata-pod-counter", &cancel, &[pods.synced()]).await {
        return Err("the Pod metadata cache did not sync".into());
    }
    let _ = started.send(counter.counts.clone());
    let worker = tokio::spawn({
        let counter = counter.clone();
        async move { counter.run_worker().await }
    });
    cancel.cancelled().await;
    counter.queue.shut_down_with_drain().await;
    worker.await?;
    factory.shutdown().await;
    Ok(counter.counts.snapshot())
}

fn pod(name: &str, app: Option<&str>) -> Result<Pod, Error> {
    let labels = app.map(|app| json!({"app": app})).unwrap_or(json!({}));
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}
    }))?)
}

/// The scripted scenario against kclient-fake: six Pods, one relabelled, one deleted.
/// Returns the final counts.
async fn scenario(server: &FakeApiServer) -> Result<BTreeMap<String, usize>, Error> {
    let config = server.config()?;
    let pods = Clientset::new(config.clone())?.core_v1().pods("default");
    for (name, app) in [("web-1", "web"), ("web-2", "web"), ("api-1", "api")] {
        pods.create(&pod(name, Some(app))?, &CreateOptions::default())
            .await?;
    }
    let cancel = CancellationToken::new();
    let (started, synced) = tokio::sync::oneshot::channel();
    let counter = tokio::spawn({
        let (client, cancel) = (MetadataClient::for_config(config)?, cancel.clone());
        async move { run(client, Some("default"), "app", cancel, started).await }
    });
    let counts = synced.await?;
    // Changes while it runs.
    for (name, app) in [
        ("web-3", Some("web")),
        ("api-2", Some("api")),
        ("loner", None),
    ] {
        pods.create(&pod(name, app)?, &CreateOptions::default())
            .await?;
    }
    pods.patch(
        "web-3",
        &Patch::Merge(json!({"metadata": {"labels": {"app": "api"}}})),
        &PatchOptions::default(),
    )
    .await?;
    pods.delete("web-1", &DeleteOptions::default()).await?;
    let expected = BTreeMap::from([("api".to_string(), 3), ("web".to_string(), 1)]);
    if tokio::time::timeout(Duration::from_secs(30), counts.until(&expected))
        .await
        .is_err()
    {
        println!("Still not {expected:?} after 30 s");
    }
    cancel.cancel();
    let counts = counter.await??;
    println!("Pods per app: {counts:?}");
    Ok(counts)
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
            let namespace = flag("--namespace");
            let label = flag("--label").unwrap_or_else(|| "app".into());
            let cancel = CancellationToken::new();
            tokio::spawn({
                let cancel = cancel.clone();
                async move {
                    let _ = tokio::signal::ctrl_c().await;
                    println!("Shutting down...");
                    cancel.cancel();
                }
            });
            println!(
                "Counting Pods per {label} in {} until Ctrl-C",
                namespace.as_deref().unwrap_or("every namespace")
            );
            let (started, _) = tokio::sync::oneshot::channel();
            let client = MetadataClient::for_config(config)?;
            let counts = run(client, namespace.as_deref(), &label, cancel, started).await?;
            println!("Pods per {label}: {counts:?}");
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
    async fn the_counter_follows_pods_through_relabels_and_deletions() -> Result<(), Error> {
        let server = FakeApiServer::builder().start().await?;
        let counts = scenario(&server).await?;
        assert_eq!(
            counts,
            BTreeMap::from([("api".to_string(), 3), ("web".to_string(), 1)])
        );
        Ok(())
    }

    #[test]
    fn counts_record_changes_and_forget_empty_values() {
        let counts = Counts::default();
        assert!(counts.set("web", 2));
        assert!(!counts.set("web", 2), "no change");
        assert!(counts.set("web", 0));
        assert!(!counts.set("web", 0), "already forgotten");
        assert!(counts.snapshot().is_empty());
    }
}
