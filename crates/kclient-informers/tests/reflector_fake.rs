//! The reflector against kclient-fake over real HTTP, through the typed and the dynamic
//! clients' own `ListerWatcher`s, with its fault injection: dropped and stalled watches,
//! compaction (410), error storms, latency, changes during a relist, and a server restart.
//!
//! Every scenario runs reflector → RealFIFO → `process_deltas` → indexer, as an informer
//! does, and ends with the same two checks: the indexer equals the server's state (read
//! directly from it), and each object's notifications make sense in order (an add only for
//! an absent object, an update or a delete only for a present one).

use crate::fake_support;

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fake_support::{change, configmaps, rest, seed};
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::{
    process_deltas, Indexer, Indexers, KeyFunc, Notification, PopError, ProcessError, Queue,
    RealFifo, RealFifoOptions, Reflector, ReflectorOptions, DEFAULT_MIN_WATCH_TIMEOUT,
    WATCH_DEADLINE_GRACE,
};
use kclient_core::{
    DeletedObject, ListOptions, ListerWatcher, ObjectList, Resource, ResourceExt, WatchStream,
};
use kclient_fake::{Failure, FakeApiServer};
use kclient_typed::{Clientset, ResourceClient};
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Counts the lists and watches a lister-watcher is asked for.
#[derive(Clone)]
struct Counting<L> {
    inner: L,
    lists: Arc<AtomicUsize>,
    watches: Arc<AtomicUsize>,
}

impl<L> Counting<L> {
    fn new(inner: L) -> Self {
        Self {
            inner,
            lists: Arc::default(),
            watches: Arc::default(),
        }
    }
}

impl<K, L: ListerWatcher<K>> ListerWatcher<K> for Counting<L> {
    type Error = L::Error;

    fn list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ObjectList<K>, L::Error>> + Send {
        self.lists.fetch_add(1, Ordering::SeqCst);
        self.inner.list(options)
    }

    fn watch(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<WatchStream<K, L::Error>, L::Error>> + Send {
        self.watches.fetch_add(1, Ordering::SeqCst);
        self.inner.watch(options)
    }
}

fn client_for(server: &FakeApiServer) -> Clientset {
    Clientset::from_client(rest(server))
}

/// A running reflector → RealFIFO → indexer pipeline, with each object's notifications.
struct Pipeline<L: ListerWatcher<ConfigMap>> {
    indexer: Indexer<ConfigMap>,
    history: Arc<Mutex<BTreeMap<String, Vec<String>>>>,
    progress: Arc<Notify>,
    reflector: Arc<Reflector<ConfigMap, L, Arc<RealFifo<ConfigMap>>>>,
    stop: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl<L> Pipeline<L>
where
    L: ListerWatcher<ConfigMap> + Clone + 'static,
{
    fn start(lw: L, options: ReflectorOptions<ConfigMap>) -> Self {
        let indexer = Indexer::new(
            KeyFunc::deletion_handling_meta_namespace(),
            Indexers::namespace(),
        );
        let fifo = Arc::new(RealFifo::new(RealFifoOptions::default()));
        let reflector = Arc::new(Reflector::new(lw, Arc::clone(&fifo), options));
        let history: Arc<Mutex<BTreeMap<String, Vec<String>>>> = Arc::default();
        let progress = Arc::new(Notify::new());
        let stop = CancellationToken::new();
        let run = tokio::spawn({
            let (r, s) = (Arc::clone(&reflector), stop.clone());
            async move { r.run(s).await }
        });
        let consume = tokio::spawn({
            let (indexer, history, progress, stop) = (
                indexer.clone(),
                Arc::clone(&history),
                Arc::clone(&progress),
                stop.clone(),
            );
            async move {
                loop {
                    let popped = tokio::select! {
                        _ = stop.cancelled() => return,
                        popped = fifo.pop(|deltas, initial| {
                            process_deltas(&indexer, deltas, initial, |n| record(&history, n))
                                .map_err(|e| ProcessError::Failed(e.into()))
                        }) => popped,
                    };
                    if let Err(PopError::Closed) = popped {
                        return;
                    }
                    progress.notify_waiters();
                }
            }
        });
        Self {
            indexer,
            history,
            progress,
            reflector,
            stop,
            tasks: vec![run, consume],
        }
    }

    /// The indexer's objects as name → (resourceVersion, value).
    fn cached(&self) -> BTreeMap<String, (String, String)> {
        state(self.indexer.list().iter().map(|o| o.as_ref().clone()))
    }

    /// Waits (on the pipeline's progress, with a tick of tokio time as a fallback) until the
    /// indexer holds exactly what `server` holds.
    async fn until_in_sync_with(&self, server: &FakeApiServer) {
        for _ in 0..3000 {
            if self.cached() == state(server.list::<ConfigMap>(Some("default"))) {
                self.check_histories();
                return;
            }
            tokio::select! {
                _ = self.progress.notified() => {}
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
        panic!(
            "never in sync: cached {:?}, server {:?}",
            self.cached(),
            state(server.list::<ConfigMap>(Some("default")))
        );
    }

    /// Each object's notifications in order: add only when absent, update and delete only
    /// when present.
    fn check_histories(&self) {
        for (key, events) in self.history.lock().iter() {
            let mut present = false;
            for event in events {
                let ok = match event.split(' ').next() {
                    Some("add") => !present,
                    Some("update") | Some("delete") | Some("tombstone") => present,
                    _ => false,
                };
                assert!(ok, "{key}: {event} out of order in {events:?}");
                present = event.starts_with("add") || event.starts_with("update");
            }
        }
    }

    fn history_of(&self, key: &str) -> Vec<String> {
        self.history.lock().get(key).cloned().unwrap_or_default()
    }

    async fn stop(self) {
        self.stop.cancel();
        for task in self.tasks {
            task.await.unwrap();
        }
    }
}

fn state(objects: impl IntoIterator<Item = ConfigMap>) -> BTreeMap<String, (String, String)> {
    objects
        .into_iter()
        .map(|o| {
            let v = o
                .data
                .as_ref()
                .and_then(|d| d.get("v"))
                .cloned()
                .unwrap_or_default();
            (
                o.name_any().to_owned(),
                (o.resource_version().unwrap_or_default().to_owned(), v),
            )
        })
        .collect()
}

fn record(history: &Mutex<BTreeMap<String, Vec<String>>>, n: Notification<ConfigMap>) {
    let (key, entry) = match n {
        Notification::Add { obj, .. } => (
            key_of(obj.as_ref()),
            format!("add {}", obj.resource_version().unwrap_or_default()),
        ),
        Notification::Update { new, .. } => (
            key_of(new.as_ref()),
            format!("update {}", new.resource_version().unwrap_or_default()),
        ),
        Notification::Delete(DeletedObject::Object(o)) => (key_of(o.as_ref()), "delete".to_owned()),
        Notification::Delete(DeletedObject::Tombstone(t)) => {
            (t.key.clone(), "tombstone".to_owned())
        }
    };
    history.lock().entry(key).or_default().push(entry);
}

fn key_of<K: Resource>(o: &K) -> String {
    kclient_core::meta_namespace_key(o)
}

fn typed(server: &FakeApiServer) -> Counting<ResourceClient<ConfigMap>> {
    Counting::new(client_for(server).core_v1().config_maps("default"))
}

fn list_watch() -> ReflectorOptions<ConfigMap> {
    ReflectorOptions::default().use_watch_list(false)
}

/// A dropped watch is resumed from the last resourceVersion: no relist, nothing lost.
#[tokio::test(start_paused = true)]
async fn dropped_watches_resume_without_a_relist() {
    let server = FakeApiServer::builder().start().await.unwrap();
    seed(&server, "a", "1");
    let lw = typed(&server);
    let p = Pipeline::start(lw.clone(), list_watch());
    p.until_in_sync_with(&server).await;
    for round in 0..3 {
        server.faults().drop_watches();
        change(&server, "a", &format!("r{round}"));
        seed(&server, &format!("new-{round}"), "x");
        p.until_in_sync_with(&server).await;
    }
    assert_eq!(lw.lists.load(Ordering::SeqCst), 1, "never relisted");
    assert!(lw.watches.load(Ordering::SeqCst) >= 2);
    p.stop().await;
}

/// A compaction ends the open watch with a 410: the reflector relists at its last
/// resourceVersion and nothing is lost, changes made meanwhile included.
#[tokio::test(start_paused = true)]
async fn compaction_forces_a_relist_and_loses_nothing() {
    let server = FakeApiServer::builder().start().await.unwrap();
    for name in ["a", "b", "c"] {
        seed(&server, name, "1");
    }
    let lw = typed(&server);
    let p = Pipeline::start(lw.clone(), list_watch());
    p.until_in_sync_with(&server).await;
    server.faults().stall_watches();
    change(&server, "a", "2");
    server.remove(&configmaps(), "default", "b").unwrap();
    seed(&server, "d", "1");
    server.faults().compact_history();
    server.faults().resume_watches();
    p.until_in_sync_with(&server).await;
    assert!(
        lw.lists.load(Ordering::SeqCst) >= 2,
        "relisted after the 410"
    );
    let b = p.history_of("default/b");
    assert_eq!(
        b.last().map(String::as_str),
        Some("tombstone"),
        "b vanished during the outage: {b:?}"
    );
    assert!(!p.reflector.is_last_sync_resource_version_unavailable());
    p.stop().await;
}

/// Deletions during an outage (every request failing, the history compacted) arrive as
/// `DeletedFinalStateUnknown` once the server is back.
#[tokio::test(start_paused = true)]
async fn deletions_during_an_outage_arrive_as_tombstones() {
    let server = FakeApiServer::builder().start().await.unwrap();
    for name in ["keep", "gone"] {
        seed(&server, name, "1");
    }
    let p = Pipeline::start(typed(&server), list_watch());
    p.until_in_sync_with(&server).await;
    server.faults().fail_next(5, Failure::status(503));
    server.faults().drop_watches();
    server.remove(&configmaps(), "default", "gone").unwrap();
    server.faults().compact_history();
    p.until_in_sync_with(&server).await;
    let gone = p.history_of("default/gone");
    assert_eq!(gone.len(), 2, "{gone:?}");
    assert!(gone[0].starts_with("add"));
    assert_eq!(gone[1], "tombstone");
    p.stop().await;
}

/// Storms of 429, 500 and 503 are ridden out with backoff: few requests, then in sync.
#[tokio::test(start_paused = true)]
async fn error_storms_back_off_without_a_hot_loop() {
    for code in [429, 500, 503] {
        let server = FakeApiServer::builder().start().await.unwrap();
        seed(&server, "a", "1");
        server.faults().fail_next(200, Failure::status(code));
        let lw = typed(&server);
        let p = Pipeline::start(lw.clone(), list_watch());
        tokio::time::sleep(Duration::from_secs(120)).await;
        let attempts = lw.lists.load(Ordering::SeqCst) + lw.watches.load(Ordering::SeqCst);
        // Two minutes of backoff (0.8 s doubling to 30 s, jitter up to ×2) allow about
        // eight attempts; a hot loop would make thousands.
        assert!(attempts <= 12, "{code}: {attempts} attempts in two minutes");
        server.faults().clear_failures();
        p.until_in_sync_with(&server).await;
        p.stop().await;
    }
}

/// Latency and stalled watches delay events but lose none.
#[tokio::test(start_paused = true)]
async fn latency_and_stalled_watches_lose_nothing() {
    let server = FakeApiServer::builder().start().await.unwrap();
    seed(&server, "a", "1");
    server.faults().set_latency(Duration::from_secs(2));
    let p = Pipeline::start(typed(&server), list_watch());
    p.until_in_sync_with(&server).await;
    server.faults().stall_watches();
    change(&server, "a", "2");
    seed(&server, "b", "1");
    assert_ne!(p.cached(), state(server.list::<ConfigMap>(Some("default"))));
    server.faults().resume_watches();
    p.until_in_sync_with(&server).await;
    p.stop().await;
}

/// Issue 29: a watch kclient-fake leaves open and silent past its `timeoutSeconds`
/// (`hang_watches`, a broken server or proxy): the reflector ends it at its client-side
/// deadline and watches again from where it was, so the changes made meanwhile arrive,
/// without a relist.
#[tokio::test(start_paused = true)]
async fn a_hung_watch_is_watched_again_at_its_deadline_without_a_relist() {
    let server = FakeApiServer::builder().start().await.unwrap();
    seed(&server, "a", "1");
    let lw = typed(&server);
    let p = Pipeline::start(lw.clone(), list_watch());
    p.until_in_sync_with(&server).await;
    server.faults().hang_watches();
    change(&server, "a", "2");
    seed(&server, "b", "1");
    // Past the latest deadline a watch can have: 10 minutes and the grace.
    tokio::time::advance(2 * DEFAULT_MIN_WATCH_TIMEOUT + WATCH_DEADLINE_GRACE).await;
    p.until_in_sync_with(&server).await;
    assert_eq!(lw.lists.load(Ordering::SeqCst), 1, "never relisted");
    assert_eq!(lw.watches.load(Ordering::SeqCst), 2);
    p.stop().await;
}

/// Objects created, changed and deleted while a (slow) relist is in flight end up right.
#[tokio::test(start_paused = true)]
async fn changes_during_a_relist_end_up_right() {
    let server = FakeApiServer::builder().start().await.unwrap();
    for i in 0..20 {
        seed(&server, &format!("cm-{i:02}"), "1");
    }
    let lw = typed(&server);
    let p = Pipeline::start(lw.clone(), list_watch());
    p.until_in_sync_with(&server).await;
    server.faults().set_latency(Duration::from_secs(5));
    server.faults().compact_history();
    // The relist is now on its way (and slow): change the world under it.
    tokio::time::sleep(Duration::from_secs(3)).await;
    change(&server, "cm-00", "2");
    server.remove(&configmaps(), "default", "cm-01").unwrap();
    seed(&server, "cm-new", "1");
    server.faults().set_latency(Duration::ZERO);
    p.until_in_sync_with(&server).await;
    assert!(lw.lists.load(Ordering::SeqCst) >= 2);
    p.stop().await;
}

/// The server restarts on the same port, restored at later resourceVersions, with some
/// objects changed or gone: the reflector's resumed watch is too old there, so it relists
/// and the cache follows the new server.
#[tokio::test(start_paused = true)]
async fn a_server_restart_at_later_resource_versions_is_followed() {
    let first = FakeApiServer::builder().start().await.unwrap();
    let port = first.address().port();
    for name in ["a", "b", "c"] {
        seed(&first, name, "1");
    }
    let lw = typed(&first);
    let p = Pipeline::start(lw.clone(), list_watch());
    p.until_in_sync_with(&first).await;
    let last = first.resource_version();
    first.shutdown().await;

    let second = FakeApiServer::builder()
        .port(port)
        .start_resource_version(last + 1000)
        .start()
        .await
        .unwrap();
    seed(&second, "a", "2");
    seed(&second, "c", "1");
    seed(&second, "d", "1");
    p.until_in_sync_with(&second).await;
    assert!(
        lw.lists.load(Ordering::SeqCst) >= 2,
        "relisted on the new server"
    );
    assert_eq!(
        p.history_of("default/b").last().map(String::as_str),
        Some("tombstone")
    );
    p.stop().await;
}

/// Streaming lists against the fake: one watch serves the initial state and what follows.
#[tokio::test(start_paused = true)]
async fn streaming_list_serves_the_initial_state_and_the_changes() {
    let server = FakeApiServer::builder().start().await.unwrap();
    seed(&server, "a", "1");
    seed(&server, "b", "1");
    let lw = typed(&server);
    let p = Pipeline::start(lw.clone(), ReflectorOptions::default());
    p.until_in_sync_with(&server).await;
    change(&server, "a", "2");
    server.remove(&configmaps(), "default", "b").unwrap();
    p.until_in_sync_with(&server).await;
    assert_eq!(lw.lists.load(Ordering::SeqCst), 0, "no list at all");
    assert_eq!(
        lw.watches.load(Ordering::SeqCst),
        1,
        "one watch for everything"
    );
    // A compaction ends it; the streaming list resumes.
    server.faults().compact_history();
    seed(&server, "c", "1");
    p.until_in_sync_with(&server).await;
    assert_eq!(lw.lists.load(Ordering::SeqCst), 0);
    p.stop().await;
}

/// The dynamic client's lister-watcher works the same.
#[tokio::test(start_paused = true)]
async fn the_dynamic_client_reflects_too() {
    use kclient_core::DynamicObject;
    let server = FakeApiServer::builder().start().await.unwrap();
    seed(&server, "a", "1");
    let dynamic = kclient_dynamic::DynamicClient::new(rest(&server));
    let ar = ConfigMap::api_resource(&());
    let lw = dynamic.resource(ar.clone()).namespace("default");
    let store = kclient_cache::new_store(KeyFunc::<DynamicObject>::meta_namespace());
    let reflector = Arc::new(Reflector::new_with(
        lw,
        store.clone(),
        ReflectorOptions::default(),
        &ar,
    ));
    let stop = CancellationToken::new();
    let run = tokio::spawn({
        let (r, s) = (Arc::clone(&reflector), stop.clone());
        async move { r.run(s).await }
    });
    seed(&server, "b", "1");
    for _ in 0..3000 {
        if store.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut keys = store.list_keys();
    keys.sort();
    assert_eq!(keys, ["default/a", "default/b"]);
    stop.cancel();
    run.await.unwrap();
}
