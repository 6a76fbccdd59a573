//! The reflector end to end, on every available target (the real kube-apiserver when
//! `KCLIENT_E2E_KUBECONFIG` is set, and always a fresh kclient-fake): with streaming lists on
//! and off, a second client writing while it runs, and a `410` forced by a watch from a
//! resourceVersion older than the server's history. Each run ends with the cache equal to a
//! fresh list and each object's notifications in a consistent order.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::{
    process_deltas, Indexer, Indexers, KeyFunc, Notification, ProcessError, Queue, RealFifo,
    RealFifoOptions, Reflector, ReflectorOptions,
};
use kclient_core::{
    CreateOptions, DeleteOptions, DeletedObject, ListOptions, ListerWatcher, ObjectList,
    ResourceExt, WatchStream,
};
use kclient_e2e::scenarios::Namespace;
use kclient_e2e::Target;
use kclient_typed::{Clientset, ResourceClient};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// The typed client, except that its first plain watch starts at resourceVersion "1", which
/// every server's history has left behind: the watch answers `410`, and the reflector must
/// relist. It also counts lists.
#[derive(Clone)]
struct FirstWatchTooOld {
    inner: ResourceClient<ConfigMap>,
    forced: Arc<AtomicBool>,
    lists: Arc<AtomicUsize>,
}

impl ListerWatcher<ConfigMap> for FirstWatchTooOld {
    type Error = kclient_typed::Error;

    fn list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ObjectList<ConfigMap>, Self::Error>> + Send {
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list(options)
    }

    fn watch(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<WatchStream<ConfigMap, Self::Error>, Self::Error>> + Send {
        let mut options = options.clone();
        if options.send_initial_events.is_none() && !self.forced.swap(true, Ordering::SeqCst) {
            options.resource_version = Some("1".into());
        }
        let inner = self.inner.clone();
        async move { inner.watch(&options).await }
    }
}

fn config_map(name: &str, value: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.data = Some(BTreeMap::from([("v".to_string(), value.to_string())]));
    cm
}

/// Name → value of the test's ConfigMaps. kube-controller-manager adds `kube-root-ca.crt`
/// to every namespace of a real cluster, at a moment of its choosing: it is left out.
fn state<'a>(objects: impl IntoIterator<Item = &'a ConfigMap>) -> BTreeMap<String, String> {
    objects
        .into_iter()
        .filter(|o| o.name_any() != "kube-root-ca.crt")
        .map(|o| {
            let v = o
                .data
                .as_ref()
                .and_then(|d| d.get("v"))
                .cloned()
                .unwrap_or_default();
            (o.name_any().to_owned(), v)
        })
        .collect()
}

/// Polls (the real server is on real time) until the cache equals a fresh list.
async fn until_in_sync(
    indexer: &Indexer<ConfigMap>,
    client: &ResourceClient<ConfigMap>,
) -> Result<BTreeMap<String, String>> {
    let mut last = (BTreeMap::new(), BTreeMap::new());
    for _ in 0..300 {
        let server = client.list(&ListOptions::default()).await?;
        let wanted = state(&server.items);
        let cached = state(indexer.list().iter().map(|o| o.as_ref()));
        if wanted == cached {
            return Ok(cached);
        }
        last = (cached, wanted);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!(
        "cache never matched the server: cached {:?}, server {:?}",
        last.0,
        last.1
    )
}

async fn reflect(target: &Target, streaming: bool) -> Result<()> {
    let api = target.client()?;
    let ns = Namespace::create(
        &api,
        if streaming {
            "reflector-stream"
        } else {
            "reflector-list"
        },
    )
    .await?;
    let clientset = Clientset::new(target.config.clone())?;
    let client = clientset.core_v1().config_maps(&ns.name);
    for name in ["a", "b", "c"] {
        client
            .create(&config_map(name, "1"), &CreateOptions::default())
            .await?;
    }

    let lw = FirstWatchTooOld {
        inner: client.clone(),
        forced: Arc::new(AtomicBool::new(streaming)),
        lists: Arc::default(),
    };
    let indexer = Indexer::new(
        KeyFunc::deletion_handling_meta_namespace(),
        Indexers::namespace(),
    );
    let fifo = Arc::new(RealFifo::new(RealFifoOptions::default()));
    let reflector = Arc::new(Reflector::new(
        lw.clone(),
        Arc::clone(&fifo),
        ReflectorOptions::default().use_watch_list(streaming),
    ));
    let history: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (r, s) = (Arc::clone(&reflector), stop.clone());
        async move { r.run(s).await }
    });
    let consume = tokio::spawn({
        let (fifo, indexer, history, stop) = (
            Arc::clone(&fifo),
            indexer.clone(),
            Arc::clone(&history),
            stop.clone(),
        );
        async move {
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = fifo.pop(|deltas, initial| {
                        process_deltas(&indexer, deltas, initial, |n| {
                            let entry = match n {
                                Notification::Add { obj, .. } => (obj.name_any().to_owned(), "add"),
                                Notification::Update { new, .. } => (new.name_any().to_owned(), "update"),
                                Notification::Delete(DeletedObject::Object(o)) => (o.name_any().to_owned(), "delete"),
                                Notification::Delete(DeletedObject::Tombstone(t)) => {
                                    (t.key.rsplit('/').next().unwrap_or_default().to_owned(), "tombstone")
                                }
                            };
                            history.lock().push((entry.0, entry.1.to_owned()));
                        })
                        .map_err(|e| ProcessError::Failed(e.into()))
                    }) => {}
                }
            }
        }
    });

    let outcome = async {
        let initial = until_in_sync(&indexer, &client).await?;
        ensure!(initial.len() == 3, "the initial list: {initial:?}");
        ensure!(
            fifo.has_synced(),
            "synced after the initial list was processed"
        );

        // A second client writes while the reflector runs.
        client
            .create(&config_map("d", "1"), &CreateOptions::default())
            .await?;
        let mut b = client.get("b").await?;
        b.data = Some(BTreeMap::from([("v".to_string(), "2".to_string())]));
        client.update(&b, &Default::default()).await?;
        client.delete("c", &DeleteOptions::default()).await?;
        let after = until_in_sync(&indexer, &client).await?;
        ensure!(
            after
                == BTreeMap::from([
                    ("a".into(), "1".into()),
                    ("b".into(), "2".into()),
                    ("d".into(), "1".into())
                ]),
            "after the writes: {after:?}"
        );

        // Each object's notifications in a consistent order.
        let mut present: BTreeMap<String, bool> = BTreeMap::new();
        for (name, what) in history.lock().iter() {
            let was = present.get(name).copied().unwrap_or(false);
            let ok = match what.as_str() {
                "add" => !was,
                _ => was,
            };
            ensure!(ok, "{name}: {what} out of order in {:?}", history.lock());
            present.insert(name.clone(), what == "add" || what == "update");
        }
        if !streaming {
            ensure!(
                lw.lists.load(Ordering::SeqCst) >= 2,
                "the watch from resourceVersion 1 got 410 and forced a relist"
            );
        }
        Ok(())
    }
    .await;

    stop.cancel();
    run.await.context("reflector task")?;
    consume.await.context("consumer task")?;
    ns.delete().await?;
    outcome
}

async fn everywhere(streaming: bool) -> Result<()> {
    let targets = Target::available().await?;
    let mut failures = Vec::new();
    for target in &targets {
        if let Err(e) = reflect(target, streaming).await {
            failures.push(format!("against {}: {e:#}", target.kind));
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("; "));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflector_list_and_watch_with_a_forced_410() -> Result<()> {
    everywhere(false).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflector_streaming_list() -> Result<()> {
    everywhere(true).await
}
