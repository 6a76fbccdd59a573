//! The reflector against scripted in-memory lister-watchers on tokio's paused clock: the
//! cases of client-go's `reflector_test.go` and `reflector_watchlist_test.go`, written anew
//! against this API, and the reflector behaviours of seed-semantics §3 by name.

use crate::common;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use common::obj;
use futures::channel::mpsc;
use futures::stream::{self, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::{
    new_store, Indexer, KeyFunc, ListWatch, Reflector, ReflectorError, ReflectorMetrics,
    ReflectorOptions, Store, StoreError, TransformFunc, WatchError, WATCH_DEADLINE_GRACE,
};
use kclient_core::{
    options::ResourceVersionMatch, ApiError, ApiStatus, Bookmark, DeletedObject, ListOptions,
    ObjectList, PagerError, Status, WatchEvent, WatchStream, INITIAL_EVENTS_END_ANNOTATION,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// An error that can also be a refused connection (client-go's `ECONNREFUSED`).
#[derive(Debug, thiserror::Error)]
enum TestError {
    #[error(transparent)]
    Api(Box<ApiError>),
    #[error("connection refused")]
    ConnectionRefused,
}

impl From<ApiError> for TestError {
    fn from(e: ApiError) -> Self {
        Self::Api(Box::new(e))
    }
}

impl From<PagerError> for TestError {
    fn from(e: PagerError) -> Self {
        Self::Api(Box::new(e.into()))
    }
}

impl ApiStatus for TestError {
    fn api_status(&self) -> Option<&Status> {
        match self {
            Self::Api(e) => e.api_status(),
            Self::ConnectionRefused => None,
        }
    }

    fn is_connection_refused(&self) -> bool {
        matches!(self, Self::ConnectionRefused)
    }
}

type Event = Result<WatchEvent<ConfigMap>, TestError>;

/// What one watch call answers.
enum WatchAnswer {
    /// These events, then the stream ends.
    Events(Vec<Event>),
    /// Events sent by the test through a channel; ends when the sender is dropped.
    Channel(mpsc::UnboundedReceiver<Event>),
    /// The call fails.
    Fail(TestError),
}

/// A scripted lister-watcher: answers are taken in order; with none left, a list answers
/// an empty list at resourceVersion "100" and a watch stays open without events. Every
/// call's options are recorded.
#[derive(Default)]
struct Script {
    lists: VecDeque<Result<ObjectList<ConfigMap>, TestError>>,
    watches: VecDeque<WatchAnswer>,
    list_calls: Vec<ListOptions>,
    watch_calls: Vec<ListOptions>,
}

#[derive(Clone, Default)]
struct Fake(Arc<Mutex<Script>>);

impl Fake {
    fn list(&self, answer: Result<ObjectList<ConfigMap>, TestError>) -> &Self {
        self.0.lock().lists.push_back(answer);
        self
    }

    fn watch(&self, answer: WatchAnswer) -> &Self {
        self.0.lock().watches.push_back(answer);
        self
    }

    /// A watch whose events the test sends.
    fn watch_channel(&self) -> mpsc::UnboundedSender<Event> {
        let (tx, rx) = mpsc::unbounded();
        self.watch(WatchAnswer::Channel(rx));
        tx
    }

    fn list_calls(&self) -> Vec<ListOptions> {
        self.0.lock().list_calls.clone()
    }

    fn watch_calls(&self) -> Vec<ListOptions> {
        self.0.lock().watch_calls.clone()
    }

    fn lister_watcher(&self) -> ListWatch<ConfigMap, TestError> {
        let (l, w) = (self.clone(), self.clone());
        ListWatch::new(
            move |o: ListOptions| {
                let mut s = l.0.lock();
                s.list_calls.push(o);
                let answer = s
                    .lists
                    .pop_front()
                    .unwrap_or_else(|| Ok(ObjectList::new(vec![], "100")));
                async move { answer }
            },
            move |o: ListOptions| {
                let mut s = w.0.lock();
                s.watch_calls.push(o);
                let answer = s.watches.pop_front();
                async move {
                    let stream: WatchStream<ConfigMap, TestError> = match answer {
                        None => stream::pending().boxed(),
                        Some(WatchAnswer::Events(events)) => stream::iter(events).boxed(),
                        Some(WatchAnswer::Channel(rx)) => rx.boxed(),
                        Some(WatchAnswer::Fail(e)) => return Err(e),
                    };
                    Ok(stream)
                }
            },
        )
    }
}

/// A store that records every call as text.
#[derive(Clone, Default)]
struct Recorder {
    calls: Arc<Mutex<Vec<String>>>,
    fail_resync: Arc<Mutex<bool>>,
    /// Records `update_resource_version` too (client-go's `ResourceVersionUpdater`).
    updates_resource_version: bool,
    /// Records `bookmark` too (client-go's `ReflectorBookmarkStore`).
    takes_bookmarks: bool,
}

fn name_v(o: &ConfigMap) -> String {
    format!(
        "{}={}",
        o.metadata.name.as_deref().unwrap_or(""),
        common::val(o)
    )
}

impl Store<ConfigMap> for Recorder {
    fn add(&self, obj: Arc<ConfigMap>) -> Result<(), StoreError> {
        self.calls.lock().push(format!("add {}", name_v(&obj)));
        Ok(())
    }
    fn update(&self, obj: Arc<ConfigMap>) -> Result<(), StoreError> {
        self.calls.lock().push(format!("update {}", name_v(&obj)));
        Ok(())
    }
    fn delete(&self, obj: DeletedObject<ConfigMap>) -> Result<(), StoreError> {
        let o = obj.last_known().expect("an object");
        self.calls.lock().push(format!("delete {}", name_v(o)));
        Ok(())
    }
    fn replace(&self, list: Vec<Arc<ConfigMap>>, rv: &str) -> Result<(), StoreError> {
        let items: Vec<String> = list.iter().map(|o| name_v(o)).collect();
        self.calls
            .lock()
            .push(format!("replace [{}] rv={rv}", items.join(" ")));
        Ok(())
    }
    fn resync(&self) -> Result<(), StoreError> {
        self.calls.lock().push("resync".into());
        if *self.fail_resync.lock() {
            return Err(StoreError::Key(kclient_cache::KeyFuncError::described(
                "x",
                "resync refused",
            )));
        }
        Ok(())
    }
    fn list_keys(&self) -> Vec<String> {
        Vec::new()
    }
    fn update_resource_version(&self, rv: &str) {
        if self.updates_resource_version {
            self.calls.lock().push(format!("rv {rv}"));
        }
    }
    fn bookmark(&self, rv: &str) {
        if self.takes_bookmarks {
            self.calls.lock().push(format!("bookmark {rv}"));
        }
    }
}

impl Recorder {
    fn calls(&self) -> Vec<String> {
        self.calls.lock().clone()
    }
}

/// An object at a resourceVersion.
fn at(name: &str, v: i64, rv: &str) -> ConfigMap {
    let mut o = ConfigMap::clone(&obj(name, v));
    o.metadata.resource_version = Some(rv.into());
    o
}

fn list_of(items: Vec<ConfigMap>, rv: &str) -> Result<ObjectList<ConfigMap>, TestError> {
    Ok(ObjectList::new(items, rv))
}

fn bookmark(rv: &str, initial_events_end: bool) -> Event {
    let mut annotations = std::collections::BTreeMap::new();
    if initial_events_end {
        annotations.insert(
            INITIAL_EVENTS_END_ANNOTATION.to_string(),
            "true".to_string(),
        );
    }
    Ok(WatchEvent::Bookmark(Bookmark {
        resource_version: rv.into(),
        annotations,
    }))
}

fn status_of(e: ApiError) -> Status {
    e.api_status().expect("an API error has a status").clone()
}

fn gone() -> TestError {
    TestError::from(ApiError::resource_expired(
        "too old resource version: 1 (5)",
    ))
}

fn too_many_requests() -> TestError {
    TestError::from(ApiError::too_many_requests("slow down", 1))
}

fn list_watch_options<K>() -> ReflectorOptions<K> {
    ReflectorOptions::default().use_watch_list(false)
}

type TestReflector = Reflector<ConfigMap, ListWatch<ConfigMap, TestError>, Recorder>;

/// Starts `reflector.run` in a task.
fn start(reflector: &Arc<TestReflector>) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let stop = CancellationToken::new();
    let handle = tokio::spawn({
        let (r, s) = (Arc::clone(reflector), stop.clone());
        async move { r.run(s).await }
    });
    (stop, handle)
}

/// Lets the spawned tasks run until they wait on something (the clock is paused).
async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

fn reflector(fake: &Fake, options: ReflectorOptions<ConfigMap>) -> (Arc<TestReflector>, Recorder) {
    let store = Recorder::default();
    let r = Arc::new(Reflector::new(
        fake.lister_watcher(),
        store.clone(),
        options,
    ));
    (r, store)
}

/// seed-semantics §3.17: the first list asks for "0" (the watch cache) with page size 500;
/// the watch starts at the list's resourceVersion with bookmarks and a timeout in
/// [5 min, 10 min).
#[tokio::test(start_paused = true)]
async fn first_list_reads_at_resource_version_0_then_watches_from_the_list() {
    let fake = Fake::default();
    fake.list(list_of(vec![at("a", 1, "10")], "10"));
    let (r, store) = reflector(&fake, list_watch_options());
    let (stop, handle) = start(&r);
    settle().await;

    let lists = fake.list_calls();
    assert_eq!(lists.len(), 1);
    assert_eq!(lists[0].resource_version.as_deref(), Some("0"));
    assert_eq!(lists[0].limit, Some(500));
    let watches = fake.watch_calls();
    assert_eq!(watches.len(), 1);
    assert_eq!(watches[0].resource_version.as_deref(), Some("10"));
    assert!(watches[0].allow_watch_bookmarks);
    let timeout = watches[0].timeout_seconds.unwrap();
    assert!((300..600).contains(&timeout), "{timeout}");
    assert_eq!(store.calls(), ["replace [a=1] rv=10"]);
    assert_eq!(r.last_sync_resource_version(), "10");
    stop.cancel();
    handle.await.unwrap();
}

/// A transform that drops managedFields lets every list, streaming list and watch ask for
/// objects decoded without them (`omit_managed_fields`); any other transform, or none, does
/// not.
#[tokio::test(start_paused = true)]
async fn a_transform_that_strips_managed_fields_asks_for_objects_decoded_without_them() {
    let custom = TransformFunc::<ConfigMap>::new(|cm: &mut ConfigMap| {
        cm.data = None;
        Ok(())
    });
    for (transform, omit) in [
        (None, false),
        (Some(custom.clone()), false),
        (Some(TransformFunc::strip_managed_fields()), true),
        (Some(custom.also_strip_managed_fields()), true),
    ] {
        for use_watch_list in [false, true] {
            let fake = Fake::default();
            fake.list(list_of(vec![at("a", 1, "10")], "10"));
            let store = Recorder::default();
            let mut options = ReflectorOptions::default().use_watch_list(use_watch_list);
            if let Some(t) = &transform {
                options = options.transform(t.clone());
            }
            let r = Arc::new(Reflector::new(
                fake.lister_watcher(),
                store.clone(),
                options,
            ));
            let (stop, handle) = start(&r);
            settle().await;
            let calls: Vec<ListOptions> = fake
                .list_calls()
                .into_iter()
                .chain(fake.watch_calls())
                .collect();
            assert!(!calls.is_empty());
            for call in calls {
                assert_eq!(call.omit_managed_fields, omit, "{call:?}");
            }
            stop.cancel();
            handle.await.unwrap();
        }
    }
}

/// client-go's `TestWatchTimeout`: `min_watch_timeout` can only raise the timeout.
#[tokio::test(start_paused = true)]
async fn watch_timeout_is_random_in_5_to_10_minutes_and_min_watch_timeout_only_raises_it() {
    for (min, range) in [
        (Duration::from_secs(60), 300..600),
        (Duration::from_secs(20 * 60), 1200..2400),
    ] {
        let fake = Fake::default();
        let (r, _) = reflector(&fake, list_watch_options().min_watch_timeout(min));
        let (stop, handle) = start(&r);
        settle().await;
        let timeout = fake.watch_calls()[0].timeout_seconds.unwrap();
        assert!(range.contains(&timeout), "{timeout} for {min:?}");
        stop.cancel();
        handle.await.unwrap();
    }
}

/// seed-semantics §3.17: every event moves the resourceVersion, bookmarks included (and they
/// change nothing in the store); events go to the store by type.
#[tokio::test(start_paused = true)]
async fn resource_version_advances_on_every_event_including_bookmarks() {
    let fake = Fake::default();
    fake.list(list_of(vec![], "10"));
    let tx = fake.watch_channel();
    let (r, store) = reflector(&fake, list_watch_options());
    let (stop, handle) = start(&r);
    settle().await;
    tx.unbounded_send(Ok(WatchEvent::Added(at("a", 1, "11"))))
        .unwrap();
    tx.unbounded_send(Ok(WatchEvent::Modified(at("a", 2, "12"))))
        .unwrap();
    tx.unbounded_send(bookmark("15", false)).unwrap();
    settle().await;
    assert_eq!(r.last_sync_resource_version(), "15");
    tx.unbounded_send(Ok(WatchEvent::Deleted(at("a", 2, "16"))))
        .unwrap();
    settle().await;
    assert_eq!(r.last_sync_resource_version(), "16");
    assert_eq!(
        store.calls(),
        ["replace [] rv=10", "add a=1", "update a=2", "delete a=2"]
    );
    stop.cancel();
    handle.await.unwrap();
}

/// seed-semantics §3.18: a watch that ends normally is resumed from the last
/// resourceVersion, without a relist.
#[tokio::test(start_paused = true)]
async fn normal_watch_close_rewatches_from_the_last_rv_without_relisting() {
    let fake = Fake::default();
    fake.list(list_of(vec![], "10"));
    let tx = fake.watch_channel();
    let (r, store) = reflector(&fake, list_watch_options());
    let (stop, handle) = start(&r);
    settle().await;
    tx.unbounded_send(Ok(WatchEvent::Added(at("a", 1, "11"))))
        .unwrap();
    tokio::time::advance(Duration::from_secs(2)).await;
    drop(tx); // the server's timeout
    settle().await;
    assert_eq!(fake.list_calls().len(), 1, "no relist");
    let watches = fake.watch_calls();
    assert_eq!(watches.len(), 2);
    assert_eq!(watches[1].resource_version.as_deref(), Some("11"));
    assert_eq!(store.calls(), ["replace [] rv=10", "add a=1"]);
    stop.cancel();
    handle.await.unwrap();
}

/// Issue 29: a server (or proxy) that answers the watch and then sends nothing, ignoring
/// `timeoutSeconds`: the reflector ends the watch itself [`WATCH_DEADLINE_GRACE`] after the
/// timeout it asked for, and watches again from the last resourceVersion, without a relist
/// and without an error.
#[tokio::test(start_paused = true)]
async fn a_silent_watch_ends_at_its_deadline_and_rewatches_without_relisting() {
    let fake = Fake::default();
    fake.list(list_of(vec![], "10"));
    let tx = fake.watch_channel();
    let errors = Arc::new(Mutex::new(Vec::new()));
    let (r, store) = reflector(
        &fake,
        list_watch_options().watch_error_handler({
            let errors = Arc::clone(&errors);
            move |_, e| errors.lock().push(e.to_string())
        }),
    );
    let (stop, handle) = start(&r);
    settle().await;
    tx.unbounded_send(Ok(WatchEvent::Added(at("a", 1, "11"))))
        .unwrap();
    settle().await;
    // From here on the server is silent, and keeps the watch open (`tx` lives on).
    let timeout = Duration::from_secs(fake.watch_calls()[0].timeout_seconds.unwrap() as u64);
    let deadline = timeout + WATCH_DEADLINE_GRACE;
    tokio::time::advance(deadline - Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(
        fake.watch_calls().len(),
        1,
        "still waiting before the deadline"
    );
    tokio::time::advance(Duration::from_secs(1)).await;
    settle().await;
    let watches = fake.watch_calls();
    assert_eq!(watches.len(), 2, "watched again at the deadline");
    assert_eq!(watches[1].resource_version.as_deref(), Some("11"));
    assert_eq!(fake.list_calls().len(), 1, "no relist");
    assert!(errors.lock().is_empty(), "{:?}", errors.lock());
    assert_eq!(store.calls(), ["replace [] rv=10", "add a=1"]);
    drop(tx);
    stop.cancel();
    handle.await.unwrap();
}

/// Issue 29: a silent server that never even answers the watch request is given up on at
/// the same deadline.
#[tokio::test(start_paused = true)]
async fn a_watch_request_never_answered_ends_at_its_deadline() {
    let requests = Arc::new(Mutex::new(Vec::<ListOptions>::new()));
    let lw =
        ListWatch::<ConfigMap, TestError>::new(|_: ListOptions| async { list_of(vec![], "10") }, {
            let requests = Arc::clone(&requests);
            move |o: ListOptions| {
                requests.lock().push(o);
                futures::future::pending()
            }
        });
    let r = Arc::new(Reflector::new(
        lw,
        Recorder::default(),
        list_watch_options(),
    ));
    let stop = CancellationToken::new();
    let handle = tokio::spawn({
        let (r, stop) = (Arc::clone(&r), stop.clone());
        async move { r.run(stop).await }
    });
    settle().await;
    let timeout = requests.lock()[0].timeout_seconds.unwrap() as u64;
    tokio::time::advance(Duration::from_secs(timeout) + WATCH_DEADLINE_GRACE).await;
    settle().await;
    let watches = requests.lock().clone();
    assert_eq!(watches.len(), 2);
    assert_eq!(watches[1].resource_version.as_deref(), Some("10"));
    stop.cancel();
    handle.await.unwrap();
}

/// Issue 29: with an idle timeout, a watch that brings nothing — no event, no bookmark — for
/// that long is ended and watched again; each event or bookmark restarts the period.
#[tokio::test(start_paused = true)]
async fn the_idle_timeout_ends_a_watch_that_brings_nothing() {
    let idle = Duration::from_secs(120);
    let fake = Fake::default();
    fake.list(list_of(vec![], "10"));
    let tx = fake.watch_channel();
    let (r, _) = reflector(&fake, list_watch_options().watch_idle_timeout(idle));
    let (stop, handle) = start(&r);
    settle().await;
    tokio::time::advance(Duration::from_secs(100)).await;
    tx.unbounded_send(bookmark("12", false)).unwrap();
    settle().await;
    tokio::time::advance(idle - Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(
        fake.watch_calls().len(),
        1,
        "the bookmark restarted the period"
    );
    tokio::time::advance(Duration::from_secs(1)).await;
    settle().await;
    let watches = fake.watch_calls();
    assert_eq!(watches.len(), 2);
    assert_eq!(watches[1].resource_version.as_deref(), Some("12"));
    assert_eq!(fake.list_calls().len(), 1, "no relist");
    drop(tx);
    stop.cancel();
    handle.await.unwrap();
}

/// client-go's `ResourceVersionUpdater`: a store that opts in is told the resourceVersion of
/// every watch event the reflector writes and of every bookmark, after the write; a list's
/// comes with its replace (client-go reflector.go, `watchHandler`).
#[tokio::test(start_paused = true)]
async fn a_store_is_told_every_resource_version_the_watch_brings() {
    let fake = Fake::default();
    fake.list(list_of(vec![at("a", 1, "10")], "10"));
    fake.watch(WatchAnswer::Events(vec![
        Ok(WatchEvent::Added(at("b", 1, "11"))),
        bookmark("12", false),
        Ok(WatchEvent::Modified(at("b", 2, "13"))),
        Ok(WatchEvent::Deleted(at("a", 1, "14"))),
    ]));
    let store = Recorder {
        updates_resource_version: true,
        ..Recorder::default()
    };
    let r = Arc::new(Reflector::new(
        fake.lister_watcher(),
        store.clone(),
        list_watch_options(),
    ));
    let (stop, handle) = start(&r);
    settle().await;
    assert_eq!(
        store.calls()[..8],
        [
            "replace [a=1] rv=10",
            "add b=1",
            "rv 11",
            "rv 12",
            "update b=2",
            "rv 13",
            "delete a=1",
            "rv 14"
        ]
    );
    stop.cancel();
    handle.await.unwrap();
}

/// client-go 1.37's reflector.go `watchHandler` (~line 1058): a watch BOOKMARK is handed to a
/// store that takes bookmarks (`ReflectorBookmarkStore.Bookmark`), in order with the objects,
/// before the resourceVersion is recorded; objects are not (their resourceVersion comes with
/// them).
#[tokio::test(start_paused = true)]
async fn a_watch_bookmark_reaches_the_store_in_order() {
    let fake = Fake::default();
    fake.list(list_of(vec![at("a", 1, "10")], "10"));
    fake.watch(WatchAnswer::Events(vec![
        Ok(WatchEvent::Added(at("b", 1, "11"))),
        bookmark("12", false),
        Ok(WatchEvent::Modified(at("b", 2, "13"))),
        bookmark("14", false),
    ]));
    let store = Recorder {
        takes_bookmarks: true,
        ..Recorder::default()
    };
    let r = Arc::new(Reflector::new(
        fake.lister_watcher(),
        store.clone(),
        list_watch_options(),
    ));
    let (stop, handle) = start(&r);
    settle().await;
    assert_eq!(
        store.calls()[..5],
        [
            "replace [a=1] rv=10",
            "add b=1",
            "bookmark 12",
            "update b=2",
            "bookmark 14"
        ]
    );
    stop.cancel();
    handle.await.unwrap();
}

/// seed-semantics §3.17: a 410 on the watch relists at the last resourceVersion, not at "".
#[tokio::test(start_paused = true)]
async fn watch_gone_relists_at_the_last_resource_version() {
    let fake = Fake::default();
    fake.list(list_of(vec![], "10"));
    fake.watch(WatchAnswer::Events(vec![
        Ok(WatchEvent::Added(at("a", 1, "11"))),
        Ok(WatchEvent::Error(status_of(ApiError::resource_expired(
            "too old",
        )))),
    ]));
    fake.list(list_of(vec![at("a", 1, "11")], "20"));
    let (r, store) = reflector(&fake, list_watch_options());
    let (stop, handle) = start(&r);
    settle().await;
    tokio::time::advance(Duration::from_secs(2)).await; // the backoff between runs
    settle().await;
    let lists = fake.list_calls();
    assert_eq!(lists.len(), 2);
    assert_eq!(lists[1].resource_version.as_deref(), Some("11"));
    assert_eq!(
        lists[1].limit, None,
        "no paging at a specific resourceVersion"
    );
    assert!(!r.is_last_sync_resource_version_unavailable());
    assert_eq!(
        store.calls(),
        ["replace [] rv=10", "add a=1", "replace [a=1] rv=20"]
    );
    assert_eq!(
        fake.watch_calls()[1].resource_version.as_deref(),
        Some("20")
    );
    stop.cancel();
    handle.await.unwrap();
}

/// seed-semantics §3.17 and client-go's `TestReflectorExpiredExactResourceVersion` /
/// `TestReflectorFullListIfTooLarge`: a list refused as expired or too large is retried at
/// once at "" (a quorum read), and the flag clears after a successful list.
#[tokio::test(start_paused = true)]
async fn list_gone_or_too_large_retries_at_once_with_an_empty_resource_version() {
    for refusal in [
        gone(),
        TestError::from(ApiError::too_large_resource_version(20, 10, 1)),
    ] {
        let fake = Fake::default();
        fake.list(Err(refusal));
        fake.list(list_of(vec![at("a", 1, "30")], "30"));
        let (r, store) = reflector(&fake, list_watch_options());
        let (stop, handle) = start(&r);
        settle().await;
        let lists = fake.list_calls();
        assert_eq!(lists.len(), 2);
        assert_eq!(lists[0].resource_version.as_deref(), Some("0"));
        assert_eq!(lists[1].resource_version.as_deref(), Some(""));
        assert_eq!(lists[1].limit, Some(500), "a quorum read is paged");
        assert!(!r.is_last_sync_resource_version_unavailable());
        assert_eq!(store.calls(), ["replace [a=1] rv=30"]);
        stop.cancel();
        handle.await.unwrap();
    }
}

/// seed-semantics §3.18 and client-go's `TestNoRelistOnTooManyRequests` /
/// `TestReflectorListAndWatchInitConnBackoff`: a 429 or a refused connection re-watches after
/// a backoff, without relisting.
#[tokio::test(start_paused = true)]
async fn connection_refused_and_429_rewatch_after_backoff_without_relisting() {
    let fake = Fake::default();
    fake.list(list_of(vec![], "10"));
    fake.watch(WatchAnswer::Fail(TestError::ConnectionRefused));
    fake.watch(WatchAnswer::Fail(too_many_requests()));
    fake.watch(WatchAnswer::Events(vec![Err(too_many_requests())]));
    let (r, _) = reflector(&fake, list_watch_options());
    let (stop, handle) = start(&r);
    settle().await;
    assert_eq!(fake.watch_calls().len(), 1, "waiting out the first backoff");
    // Backoffs of [0.8, 1.6), [1.6, 3.2), [3.2, 6.4) seconds.
    tokio::time::advance(Duration::from_millis(1600)).await;
    settle().await;
    assert_eq!(fake.watch_calls().len(), 2);
    tokio::time::advance(Duration::from_millis(3200)).await;
    settle().await;
    assert_eq!(fake.watch_calls().len(), 3);
    tokio::time::advance(Duration::from_millis(6400)).await;
    settle().await;
    assert_eq!(fake.watch_calls().len(), 4);
    assert_eq!(fake.list_calls().len(), 1, "never relisted");
    assert!(fake
        .watch_calls()
        .iter()
        .all(|w| w.resource_version.as_deref() == Some("10")));
    stop.cancel();
    handle.await.unwrap();
}

/// seed-semantics §3.18: a watch that closes within a second with no event is an error:
/// relist after the backoff.
#[tokio::test(start_paused = true)]
async fn very_short_watch_is_an_error_and_relists() {
    let fake = Fake::default();
    fake.list(list_of(vec![], "10"));
    fake.watch(WatchAnswer::Events(vec![]));
    let (r, _) = reflector(&fake, list_watch_options());
    let (stop, handle) = start(&r);
    settle().await;
    assert_eq!(fake.list_calls().len(), 1);
    tokio::time::advance(Duration::from_millis(1600)).await;
    settle().await;
    assert_eq!(
        fake.list_calls().len(),
        2,
        "relisted after the very short watch"
    );
    stop.cancel();
    handle.await.unwrap();
}

/// seed-semantics §3.19 and client-go's `TestReflectorWatchListPageSize`,
/// `TestReflectorNotPaginatingNotConsistentReads`,
/// `TestReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled`.
#[tokio::test(start_paused = true)]
async fn paging_rules() {
    // An explicit page size wins, even at a specific resourceVersion.
    let fake = Fake::default();
    fake.list(list_of(vec![], "10"));
    fake.watch(WatchAnswer::Events(vec![Err(gone())]));
    let (r, _) = reflector(&fake, list_watch_options().watch_list_page_size(4));
    let (stop, handle) = start(&r);
    settle().await;
    tokio::time::advance(Duration::from_secs(2)).await;
    settle().await;
    let lists = fake.list_calls();
    assert_eq!(lists[0].limit, Some(4));
    assert_eq!(lists[1].resource_version.as_deref(), Some("10"));
    assert_eq!(lists[1].limit, Some(4));
    stop.cancel();
    handle.await.unwrap();

    // A server that paginated the "0" list has no watch cache: keep paging at specific RVs.
    let fake = Fake::default();
    let mut first_page = ObjectList::new(vec![at("a", 1, "10")], "10");
    first_page.metadata.continue_ = Some("next".into());
    fake.list(Ok(first_page));
    fake.list(list_of(vec![at("b", 1, "10")], "10"));
    fake.watch(WatchAnswer::Events(vec![Err(gone())]));
    let (r, store) = reflector(&fake, list_watch_options());
    let (stop, handle) = start(&r);
    settle().await;
    tokio::time::advance(Duration::from_secs(2)).await;
    settle().await;
    let lists = fake.list_calls();
    assert_eq!(lists[1].continue_token.as_deref(), Some("next"));
    assert_eq!(
        lists[1].resource_version, None,
        "continuation pages carry no RV"
    );
    assert_eq!(lists[2].resource_version.as_deref(), Some("10"));
    assert_eq!(lists[2].limit, Some(500));
    assert_eq!(store.calls()[0], "replace [a=1 b=1] rv=10");
    stop.cancel();
    handle.await.unwrap();
}

/// seed-semantics §3.19 and client-go's `TestReflectorFullListIfExpired`: an expired continue
/// token falls back to one full list at the original resourceVersion.
#[tokio::test(start_paused = true)]
async fn expired_continue_token_falls_back_to_one_full_list() {
    let fake = Fake::default();
    let mut first_page = ObjectList::new(vec![at("a", 1, "10")], "10");
    first_page.metadata.continue_ = Some("next".into());
    fake.list(Ok(first_page));
    fake.list(Err(gone()));
    fake.list(list_of(vec![at("a", 1, "10"), at("b", 1, "10")], "10"));
    let (r, store) = reflector(&fake, list_watch_options());
    let (stop, handle) = start(&r);
    settle().await;
    let lists = fake.list_calls();
    assert_eq!(lists.len(), 3);
    assert_eq!(lists[2].resource_version.as_deref(), Some("0"));
    assert_eq!(lists[2].limit, None);
    assert_eq!(lists[2].continue_token, None);
    assert_eq!(store.calls(), ["replace [a=1 b=1] rv=10"]);
    stop.cancel();
    handle.await.unwrap();
}

/// Issue 29: a server that hands out the same continue token forever. The list fails at the
/// second page with the pager's typed error (not 600 pages and hundreds of MiB later), and
/// the reflector backs off and lists again, as after any failed list, until the server
/// behaves.
#[tokio::test(start_paused = true)]
async fn a_list_repeating_its_continue_token_fails_and_relists_after_a_backoff() {
    let fake = Fake::default();
    for _ in 0..6 {
        let mut page = ObjectList::new(vec![at("a", 1, "10")], "10");
        page.metadata.continue_ = Some("again".into());
        fake.list(Ok(page));
    }
    let errors = Arc::new(Mutex::new(Vec::new()));
    let handler = {
        let errors = Arc::clone(&errors);
        move |_: &str, e: &dyn WatchError| {
            let e = e.reflector_error::<TestError>().expect("a reflector error");
            let ReflectorError::Pager { source, .. } = e else {
                panic!("not the pager's list error: {e}");
            };
            let repeated = PagerError::RepeatedContinueToken {
                page: 2,
                first_seen: 1,
            };
            assert_eq!(source.to_string(), repeated.to_string());
            assert!(
                !e.is_resource_expired() && !e.is_gone(),
                "no fallback to \"\""
            );
            errors.lock().push(e.to_string());
        }
    };
    let (r, store) = reflector(&fake, list_watch_options().watch_error_handler(handler));
    let (stop, handle) = start(&r);
    settle().await;
    assert_eq!(
        fake.list_calls().len(),
        2,
        "the second page repeats the token"
    );
    assert_eq!(errors.lock().len(), 1);
    // The backoff's first wait is at least 0.8 s: no hot loop.
    tokio::time::advance(Duration::from_millis(790)).await;
    settle().await;
    assert_eq!(fake.list_calls().len(), 2);
    for _ in 0..20 {
        tokio::time::advance(Duration::from_secs(1)).await;
        settle().await;
    }
    let lists = fake.list_calls();
    assert_eq!(errors.lock().len(), 3, "{:?}", errors.lock());
    assert_eq!(
        lists.len(),
        7,
        "three failed lists of two pages, then one that works"
    );
    assert!(lists.iter().step_by(2).all(|o| o.continue_token.is_none()));
    assert_eq!(lists[1].continue_token.as_deref(), Some("again"));
    assert_eq!(store.calls(), ["replace [] rv=100"]);
    stop.cancel();
    handle.await.unwrap();
}

/// client-go's `TestRetryInternalError`: internal errors re-watch without a relist within
/// the retry window; past it, relist.
#[tokio::test(start_paused = true)]
async fn internal_errors_are_retried_within_the_window() {
    let internal = || {
        Ok(WatchEvent::Error(status_of(ApiError::internal_error(
            "etcd hiccup",
        ))))
    };
    for (window, relists) in [(Duration::ZERO, true), (Duration::from_secs(30), false)] {
        let fake = Fake::default();
        fake.list(list_of(vec![], "10"));
        fake.watch(WatchAnswer::Events(vec![
            Ok(WatchEvent::Added(at("a", 1, "11"))),
            internal(),
        ]));
        let (r, _) = reflector(
            &fake,
            list_watch_options().max_internal_error_retry_duration(window),
        );
        let (stop, handle) = start(&r);
        settle().await;
        tokio::time::advance(Duration::from_secs(2)).await;
        settle().await;
        assert_eq!(fake.list_calls().len() > 1, relists, "window {window:?}");
        assert_eq!(
            fake.watch_calls()[1].resource_version.as_deref(),
            Some(if relists { "100" } else { "11" })
        );
        stop.cancel();
        handle.await.unwrap();
    }
}

/// seed-semantics §3.21: failing runs back off 0.8 s → 30 s (jitter up to ×2), never a hot
/// loop: count the lists a dead server gets in ten minutes.
#[tokio::test(start_paused = true)]
async fn failing_lists_back_off_exponentially_without_a_hot_loop() {
    let fake = Fake::default();
    for _ in 0..1000 {
        fake.list(Err(TestError::ConnectionRefused));
    }
    let (r, _) = reflector(&fake, list_watch_options());
    let (stop, handle) = start(&r);
    for _ in 0..600 {
        tokio::time::advance(Duration::from_secs(1)).await;
        settle().await;
    }
    let lists = fake.list_calls().len();
    // Waits 0.8+1.6+3.2+6.4+12.8+25.6 ≈ 50 s at least, then [30, 60) s each: at most
    // 7 + 550/30 ≈ 25 lists, at least 7 + 550/60 ≈ 16.
    assert!((14..=27).contains(&lists), "{lists} lists in 10 minutes");
    stop.cancel();
    handle.await.unwrap();
}

/// seed-semantics §3.21: the resync timer calls the store's resync while watching, only when
/// `should_resync` agrees; a failing resync ends the run (a relist follows).
#[tokio::test(start_paused = true)]
async fn resync_ticks_call_the_store_and_a_failure_ends_the_run() {
    let fake = Fake::default();
    fake.list(list_of(vec![], "10"));
    let allow = Arc::new(Mutex::new(false));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let (r, store) = reflector(
        &fake,
        list_watch_options()
            .resync_period(Duration::from_secs(30))
            .should_resync({
                let allow = Arc::clone(&allow);
                move || *allow.lock()
            })
            .watch_error_handler({
                let errors = Arc::clone(&errors);
                move |_, e| errors.lock().push(e.to_string())
            }),
    );
    let (stop, handle) = start(&r);
    settle().await;
    tokio::time::advance(Duration::from_secs(31)).await;
    settle().await;
    assert_eq!(store.calls(), ["replace [] rv=10"], "should_resync said no");
    *allow.lock() = true;
    tokio::time::advance(Duration::from_secs(30)).await;
    settle().await;
    assert_eq!(store.calls(), ["replace [] rv=10", "resync"]);

    *store.fail_resync.lock() = true;
    tokio::time::advance(Duration::from_secs(30)).await;
    settle().await;
    // client-go's TestReflectorResync: "error from Resync is not propagated up" — the run
    // ends (and relists) without an error for the handler.
    assert!(errors.lock().is_empty(), "{:?}", errors.lock());
    tokio::time::advance(Duration::from_secs(2)).await;
    settle().await;
    assert_eq!(
        fake.list_calls().len(),
        2,
        "relisted after the failed resync"
    );
    stop.cancel();
    handle.await.unwrap();
}

/// The watch-error handler gets what ended a run; the list's error is typed.
#[tokio::test(start_paused = true)]
async fn watch_error_handler_receives_run_errors() {
    let fake = Fake::default();
    fake.list(Err(TestError::from(ApiError::forbidden(
        &kclient_core::GroupResource::new("", "configmaps"),
        "",
        "no",
    ))));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let (r, _) = reflector(
        &fake,
        list_watch_options().watch_error_handler({
            let errors = Arc::clone(&errors);
            move |name, e| {
                let e = e.reflector_error::<TestError>().expect("a reflector error");
                assert!(e.is_forbidden());
                errors.lock().push(format!("{name}: {e}"))
            }
        }),
    );
    let (stop, handle) = start(&r);
    settle().await;
    assert_eq!(errors.lock().len(), 1);
    assert!(
        errors.lock()[0].starts_with("/v1, Kind=ConfigMap: failed to list /v1, Kind=ConfigMap"),
        "{:?}",
        errors.lock()
    );
    stop.cancel();
    handle.await.unwrap();
}

/// seed-semantics §3.20: the list phase is cancellable: a stop during a list returns.
#[tokio::test(start_paused = true)]
async fn stop_during_a_list_returns_promptly() {
    let lw = ListWatch::<ConfigMap, TestError>::new(
        |_: ListOptions| futures::future::pending(),
        |_: ListOptions| futures::future::pending(),
    );
    let r = Arc::new(Reflector::new(
        lw,
        Recorder::default(),
        list_watch_options(),
    ));
    let stop = CancellationToken::new();
    let handle = tokio::spawn({
        let (r, s) = (Arc::clone(&r), stop.clone());
        async move { r.run(s).await }
    });
    settle().await;
    stop.cancel();
    handle.await.unwrap();
    assert_eq!(r.last_sync_resource_version(), "");
}

/// seed-semantics §3.20: objects of another kind are skipped, not fatal (dynamic objects);
/// the expected kind is the one set in the options, or by default the reflector's resource's
/// (client-go's `expectedGVK` of an unstructured expected type).
#[tokio::test(start_paused = true)]
async fn unexpected_kinds_are_skipped() {
    for explicit in [true, false] {
        unexpected_kinds_are_skipped_with(explicit).await;
    }
}

async fn unexpected_kinds_are_skipped_with(explicit: bool) {
    use kclient_core::{ApiResource, DynamicObject, GroupVersionKind};
    let widgets = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::new("example.com", "v1", "Widget"),
        "widgets",
        true,
    );
    let gadgets = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::new("example.com", "v1", "Gadget"),
        "gadgets",
        true,
    );
    let (tx, rx) = mpsc::unbounded::<Result<WatchEvent<DynamicObject>, TestError>>();
    let rx = Arc::new(Mutex::new(Some(rx)));
    let lw = ListWatch::<DynamicObject, TestError>::new(
        |_: ListOptions| async { Ok(ObjectList::new(vec![], "1")) },
        move |_: ListOptions| {
            let rx = rx.lock().take();
            async move {
                Ok(match rx {
                    Some(rx) => rx.boxed(),
                    None => stream::pending().boxed(),
                })
            }
        },
    );
    let store = new_store(KeyFunc::<DynamicObject>::meta_namespace());
    let r = Arc::new(Reflector::new_with(
        lw,
        store.clone(),
        if explicit {
            list_watch_options().expected_gvk(widgets.gvk())
        } else {
            list_watch_options()
        },
        &widgets,
    ));
    let stop = CancellationToken::new();
    let handle = tokio::spawn({
        let (r, s) = (Arc::clone(&r), stop.clone());
        async move { r.run(s).await }
    });
    settle().await;
    let mut wrong = DynamicObject::new("g", &gadgets);
    wrong.metadata.resource_version = Some("2".into());
    let mut right = DynamicObject::new("w", &widgets);
    right.metadata.resource_version = Some("3".into());
    tx.unbounded_send(Ok(WatchEvent::Added(wrong))).unwrap();
    tx.unbounded_send(Ok(WatchEvent::Added(right))).unwrap();
    settle().await;
    assert_eq!(store.list_keys(), ["w"]);
    assert_eq!(r.last_sync_resource_version(), "3");
    stop.cancel();
    handle.await.unwrap();
}

/// A streaming list skips Table objects (`meta.k8s.io/v1` and `v1beta1`) among its initial
/// events: they are no objects of the resource (client-go skips them too).
#[tokio::test(start_paused = true)]
async fn a_streaming_list_skips_table_objects() {
    use kclient_core::{ApiResource, DynamicObject, GroupVersionKind, TypeMeta};
    let widgets = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::new("example.com", "v1", "Widget"),
        "widgets",
        true,
    );
    let table = |name: &str, version: &str| {
        let mut t = DynamicObject::new(name, &widgets);
        t.types = Some(TypeMeta {
            api_version: format!("meta.k8s.io/{version}"),
            kind: "Table".into(),
        });
        t
    };
    let events: Vec<Result<WatchEvent<DynamicObject>, TestError>> = vec![
        Ok(WatchEvent::Added(table("t1", "v1"))),
        Ok(WatchEvent::Added(DynamicObject::new("w", &widgets))),
        Ok(WatchEvent::Added(table("t2", "v1beta1"))),
        Ok(WatchEvent::Bookmark(Bookmark {
            resource_version: "5".into(),
            annotations: [(
                INITIAL_EVENTS_END_ANNOTATION.to_string(),
                "true".to_string(),
            )]
            .into(),
        })),
    ];
    let events = Arc::new(Mutex::new(Some(events)));
    let lw = ListWatch::<DynamicObject, TestError>::new(
        |_: ListOptions| async { Ok(ObjectList::new(vec![], "1")) },
        move |_: ListOptions| {
            let events = events.lock().take();
            async move {
                Ok(match events {
                    Some(events) => stream::iter(events).chain(stream::pending()).boxed(),
                    None => stream::pending().boxed(),
                })
            }
        },
    );
    let store = new_store(KeyFunc::<DynamicObject>::meta_namespace());
    let r = Arc::new(Reflector::new_with(
        lw,
        store.clone(),
        ReflectorOptions::default().use_watch_list(true),
        &widgets,
    ));
    let stop = CancellationToken::new();
    let handle = tokio::spawn({
        let (r, s) = (Arc::clone(&r), stop.clone());
        async move { r.run(s).await }
    });
    settle().await;
    assert_eq!(store.list_keys(), ["w"]);
    assert_eq!(r.last_sync_resource_version(), "5");
    stop.cancel();
    handle.await.unwrap();
}

/// A reflector whose streaming list brings `a@1` and `b@2` at resourceVersion 5, and whose
/// list answers `listed`; it records the list calls' options.
fn streaming_then(
    listed: Vec<ConfigMap>,
) -> (
    ListWatch<ConfigMap, TestError>,
    Arc<Mutex<Vec<ListOptions>>>,
) {
    let lists = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&lists);
    let lw = ListWatch::<ConfigMap, TestError>::new(
        move |options: ListOptions| {
            recorded.lock().push(options);
            let listed = listed.clone();
            async move { Ok(ObjectList::new(listed, "5")) }
        },
        |_: ListOptions| async {
            let events = vec![
                Ok(WatchEvent::Added(at("a", 1, "1"))),
                Ok(WatchEvent::Added(at("b", 1, "2"))),
                bookmark("5", true),
            ];
            Ok(stream::iter(events).chain(stream::pending()).boxed())
        },
    );
    (lw, lists)
}

/// client-go's watch-list data-consistency detector (reflector_data_consistency_detector.go,
/// `KUBE_WATCHLIST_INCONSISTENCY_DETECTOR`): after a streaming list the reflector lists at its
/// resourceVersion, `Exact`, and compares; the same objects pass.
#[tokio::test(start_paused = true)]
async fn the_consistency_check_lists_at_the_streaming_lists_resource_version() {
    let (lw, lists) = streaming_then(vec![at("b", 1, "2"), at("a", 1, "1")]);
    let store = Recorder::default();
    let r = Reflector::new(
        lw,
        store.clone(),
        ReflectorOptions::default()
            .use_watch_list(true)
            .check_watch_list_consistency(true),
    );
    let stop = CancellationToken::new();
    let run = r.list_and_watch(&stop);
    tokio::select! {
        _ = run => panic!("the run ended"),
        _ = async { for _ in 0..50 { tokio::task::yield_now().await } } => {}
    }
    let lists = lists.lock().clone();
    assert_eq!(lists.len(), 1);
    assert_eq!(lists[0].resource_version.as_deref(), Some("5"));
    assert_eq!(
        lists[0].resource_version_match,
        Some(kclient_core::options::ResourceVersionMatch::Exact)
    );
    assert_eq!(store.calls(), ["replace [a=1 b=1] rv=5"]);
}

/// A difference between the streaming list and the list is a panic, as in client-go.
#[tokio::test(start_paused = true)]
#[should_panic(expected = "data inconsistency detected")]
async fn the_consistency_check_panics_on_a_difference() {
    let (lw, _) = streaming_then(vec![at("a", 1, "1"), at("b", 2, "3")]);
    let r = Reflector::new(
        lw,
        Recorder::default(),
        ReflectorOptions::default()
            .use_watch_list(true)
            .check_watch_list_consistency(true),
    );
    let _ = r.list_and_watch(&CancellationToken::new()).await;
}

/// A broken watch stream (an undecodable frame) ends the run; the next run relists.
#[tokio::test(start_paused = true)]
async fn broken_watch_stream_relists() {
    let fake = Fake::default();
    fake.list(list_of(vec![], "10"));
    fake.watch(WatchAnswer::Events(vec![
        Ok(WatchEvent::Added(at("a", 1, "11"))),
        Err(TestError::from(ApiError::internal_error("malformed frame"))),
    ]));
    let (r, _) = reflector(&fake, list_watch_options());
    let (stop, handle) = start(&r);
    settle().await;
    tokio::time::advance(Duration::from_secs(2)).await;
    settle().await;
    let lists = fake.list_calls();
    assert_eq!(lists.len(), 2);
    assert_eq!(lists[1].resource_version.as_deref(), Some("11"));
    stop.cancel();
    handle.await.unwrap();
}

// ---------------------------------------------------------------- streaming lists (watch-list)

fn streaming_request(o: &ListOptions) -> bool {
    o.send_initial_events == Some(true)
        && o.resource_version_match == Some(ResourceVersionMatch::NotOlderThan)
        && o.allow_watch_bookmarks
}

/// client-go's `TestWatchList` ("prove that the reflector is synced after receiving a
/// bookmark event"): the initial events fill a temporary store, the closing bookmark
/// replaces the store once, and the same watch goes on.
#[tokio::test(start_paused = true)]
async fn streaming_list_replaces_once_at_the_closing_bookmark_and_keeps_watching() {
    let fake = Fake::default();
    let tx = fake.watch_channel();
    let (r, store) = reflector(&fake, ReflectorOptions::default());
    let (stop, handle) = start(&r);
    settle().await;
    let first = &fake.watch_calls()[0];
    assert!(streaming_request(first), "{first:?}");
    assert_eq!(first.resource_version.as_deref(), Some(""));

    tx.unbounded_send(Ok(WatchEvent::Added(at("a", 1, "5"))))
        .unwrap();
    tx.unbounded_send(Ok(WatchEvent::Added(at("b", 1, "6"))))
        .unwrap();
    // Updates and deletes during streaming go to the temporary store.
    tx.unbounded_send(Ok(WatchEvent::Modified(at("a", 2, "7"))))
        .unwrap();
    tx.unbounded_send(Ok(WatchEvent::Deleted(at("b", 1, "8"))))
        .unwrap();
    tx.unbounded_send(bookmark("8", false)).unwrap();
    settle().await;
    assert!(
        store.calls().is_empty(),
        "not synced before the closing bookmark"
    );
    tx.unbounded_send(bookmark("9", true)).unwrap();
    settle().await;
    assert_eq!(store.calls(), ["replace [a=2] rv=9"]);
    assert_eq!(r.last_sync_resource_version(), "9");

    tx.unbounded_send(Ok(WatchEvent::Added(at("c", 1, "10"))))
        .unwrap();
    settle().await;
    assert_eq!(store.calls(), ["replace [a=2] rv=9", "add c=1"]);
    assert_eq!(fake.watch_calls().len(), 1, "the same watch goes on");
    assert!(fake.list_calls().is_empty(), "no list at all");
    stop.cancel();
    handle.await.unwrap();
}

/// client-go's "the reflector can fall back to old LIST/WATCH semantics when a server
/// doesn't support streaming": a refused streaming list means list+watch.
#[tokio::test(start_paused = true)]
async fn refused_streaming_list_falls_back_to_list_and_watch() {
    let fake = Fake::default();
    fake.watch(WatchAnswer::Fail(TestError::from(ApiError::bad_request(
        "sendInitialEvents is forbidden for watch",
    ))));
    fake.list(list_of(vec![at("a", 1, "10")], "10"));
    let (r, store) = reflector(&fake, ReflectorOptions::default());
    let (stop, handle) = start(&r);
    settle().await;
    assert_eq!(fake.list_calls().len(), 1);
    let watches = fake.watch_calls();
    assert_eq!(watches.len(), 2);
    assert!(streaming_request(&watches[0]));
    assert!(!streaming_request(&watches[1]));
    assert_eq!(watches[1].resource_version.as_deref(), Some("10"));
    assert_eq!(store.calls(), ["replace [a=1] rv=10"]);
    stop.cancel();
    handle.await.unwrap();
}

/// client-go's "check if stopping a watcher before sync results in creating a new
/// watch-list request": a stream that ends before the closing bookmark starts over, with
/// nothing of it in the store.
#[tokio::test(start_paused = true)]
async fn streaming_list_closed_before_its_bookmark_starts_over() {
    let fake = Fake::default();
    fake.watch(WatchAnswer::Events(vec![Ok(WatchEvent::Added(at(
        "a", 1, "5",
    )))]));
    let tx = fake.watch_channel();
    let (r, store) = reflector(&fake, ReflectorOptions::default());
    let (stop, handle) = start(&r);
    settle().await;
    let watches = fake.watch_calls();
    assert_eq!(watches.len(), 2);
    assert!(streaming_request(&watches[1]));
    tx.unbounded_send(Ok(WatchEvent::Added(at("b", 1, "6"))))
        .unwrap();
    tx.unbounded_send(bookmark("6", true)).unwrap();
    settle().await;
    assert_eq!(
        store.calls(),
        ["replace [b=1] rv=6"],
        "nothing of the first attempt"
    );
    stop.cancel();
    handle.await.unwrap();
}

/// Issue 29: a streaming list whose server goes silent before the closing bookmark (and
/// ignores `timeoutSeconds`) never syncs unless the client ends it: at its deadline it starts
/// over, as one the server closed early does, without a list.
#[tokio::test(start_paused = true)]
async fn a_silent_streaming_list_starts_over_at_its_deadline() {
    let fake = Fake::default();
    let silent = fake.watch_channel();
    let tx = fake.watch_channel();
    let (r, store) = reflector(&fake, ReflectorOptions::default());
    let (stop, handle) = start(&r);
    settle().await;
    silent
        .unbounded_send(Ok(WatchEvent::Added(at("a", 1, "5"))))
        .unwrap();
    settle().await;
    let first = fake.watch_calls()[0].clone();
    assert!(streaming_request(&first));
    let timeout = Duration::from_secs(first.timeout_seconds.unwrap() as u64);
    tokio::time::advance(timeout + WATCH_DEADLINE_GRACE - Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(fake.watch_calls().len(), 1);
    tokio::time::advance(Duration::from_secs(1)).await;
    settle().await;
    let watches = fake.watch_calls();
    assert_eq!(watches.len(), 2, "the streaming list started over");
    assert!(streaming_request(&watches[1]));
    assert!(fake.list_calls().is_empty(), "no fallback to a list");
    tx.unbounded_send(Ok(WatchEvent::Added(at("b", 1, "6"))))
        .unwrap();
    tx.unbounded_send(bookmark("6", true)).unwrap();
    settle().await;
    assert_eq!(
        store.calls(),
        ["replace [b=1] rv=6"],
        "nothing of the silent attempt"
    );
    drop((silent, tx));
    stop.cancel();
    handle.await.unwrap();
}

/// client-go's "checks if the reflector retries 429": a 429 on the streaming list backs off
/// and streams again.
#[tokio::test(start_paused = true)]
async fn streaming_list_429_backs_off_and_retries() {
    let fake = Fake::default();
    fake.watch(WatchAnswer::Fail(too_many_requests()));
    let tx = fake.watch_channel();
    let (r, store) = reflector(&fake, ReflectorOptions::default());
    let (stop, handle) = start(&r);
    settle().await;
    assert_eq!(fake.watch_calls().len(), 1);
    tokio::time::advance(Duration::from_millis(1600)).await;
    settle().await;
    assert_eq!(fake.watch_calls().len(), 2);
    assert!(streaming_request(&fake.watch_calls()[1]));
    assert!(fake.list_calls().is_empty());
    tx.unbounded_send(bookmark("3", true)).unwrap();
    settle().await;
    assert_eq!(store.calls(), ["replace [] rv=3"]);
    stop.cancel();
    handle.await.unwrap();
}

/// client-go's "prove that the reflector is checking the value of the initialEventsEnd
/// annotation": a bookmark without it does not end the initial events.
#[tokio::test(start_paused = true)]
async fn only_the_annotated_bookmark_ends_the_initial_events() {
    let fake = Fake::default();
    let tx = fake.watch_channel();
    let (r, store) = reflector(&fake, ReflectorOptions::default());
    let (stop, handle) = start(&r);
    settle().await;
    let mut not_the_end = Bookmark {
        resource_version: "4".into(),
        annotations: Default::default(),
    };
    not_the_end
        .annotations
        .insert(INITIAL_EVENTS_END_ANNOTATION.into(), "false".into());
    tx.unbounded_send(Ok(WatchEvent::Bookmark(not_the_end)))
        .unwrap();
    settle().await;
    assert!(store.calls().is_empty());
    tx.unbounded_send(bookmark("5", true)).unwrap();
    settle().await;
    assert_eq!(store.calls(), ["replace [] rv=5"]);
    stop.cancel();
    handle.await.unwrap();
}

/// client-go's "expiring an established watcher results in returning an error from the
/// reflector" and seed-semantics §3.17: after a 410 the next streaming list starts at the
/// last resourceVersion; a 410 on the streaming list itself retries from "".
#[tokio::test(start_paused = true)]
async fn streaming_list_after_gone_restarts_from_the_last_then_the_empty_resource_version() {
    let fake = Fake::default();
    fake.watch(WatchAnswer::Events(vec![
        bookmark("5", true),
        Ok(WatchEvent::Added(at("a", 1, "6"))),
        Err(gone()),
    ]));
    fake.watch(WatchAnswer::Fail(gone()));
    let tx = fake.watch_channel();
    let (r, store) = reflector(&fake, ReflectorOptions::default());
    let (stop, handle) = start(&r);
    settle().await;
    tokio::time::advance(Duration::from_secs(2)).await;
    settle().await;
    let watches = fake.watch_calls();
    assert_eq!(watches.len(), 3, "{watches:?}");
    assert_eq!(watches[1].resource_version.as_deref(), Some("6"));
    assert_eq!(watches[2].resource_version.as_deref(), Some(""));
    assert!(r.is_last_sync_resource_version_unavailable());
    tx.unbounded_send(bookmark("9", true)).unwrap();
    settle().await;
    assert!(!r.is_last_sync_resource_version_unavailable());
    assert_eq!(
        store.calls(),
        ["replace [] rv=5", "add a=1", "replace [] rv=9"]
    );
    stop.cancel();
    handle.await.unwrap();
}

/// The reflector into a real indexer: what the store holds after a list and a watch.
#[tokio::test(start_paused = true)]
async fn reflects_into_an_indexer() {
    let fake = Fake::default();
    fake.list(list_of(vec![at("a", 1, "10"), at("b", 1, "10")], "10"));
    let tx = fake.watch_channel();
    let indexer: Indexer<ConfigMap> = new_store(KeyFunc::deletion_handling_meta_namespace());
    let r = Arc::new(Reflector::new(
        fake.lister_watcher(),
        indexer.clone(),
        list_watch_options(),
    ));
    let stop = CancellationToken::new();
    let handle = tokio::spawn({
        let (r, s) = (Arc::clone(&r), stop.clone());
        async move { r.run(s).await }
    });
    settle().await;
    tx.unbounded_send(Ok(WatchEvent::Deleted(at("a", 1, "11"))))
        .unwrap();
    tx.unbounded_send(Ok(WatchEvent::Added(at("c", 1, "12"))))
        .unwrap();
    settle().await;
    let mut keys = indexer.list_keys();
    keys.sort();
    assert_eq!(keys, ["b", "c"]);
    stop.cancel();
    handle.await.unwrap();
}

/// `compact_objects` (the default): what the store holds is a copy of each listed or watched
/// object with exact capacities, not the decoded object with the spare room decoding left
/// in its `Vec`s; equal either way. Off, the received object is stored as it is.
#[tokio::test(start_paused = true)]
async fn listed_and_watched_objects_are_stored_compacted() {
    fn roomy(name: &str, rv: &str) -> ConfigMap {
        let mut cm = at(name, 1, rv);
        let mut finalizers = Vec::with_capacity(16);
        finalizers.push("example.com/keep".to_owned());
        cm.metadata.finalizers = Some(finalizers);
        cm
    }
    let capacity = |indexer: &Indexer<ConfigMap>, key: &str| {
        let cm = indexer.get_by_key(key).unwrap();
        assert_eq!(
            cm.metadata.finalizers.as_deref(),
            Some(&["example.com/keep".to_owned()][..])
        );
        cm.metadata.finalizers.as_ref().unwrap().capacity()
    };
    for (compact, expected) in [(true, 1), (false, 16)] {
        let fake = Fake::default();
        fake.list(list_of(vec![roomy("a", "10")], "10"));
        let tx = fake.watch_channel();
        let indexer: Indexer<ConfigMap> = new_store(KeyFunc::deletion_handling_meta_namespace());
        let r = Arc::new(Reflector::new(
            fake.lister_watcher(),
            indexer.clone(),
            list_watch_options().compact_objects(compact),
        ));
        let stop = CancellationToken::new();
        let handle = tokio::spawn({
            let (r, s) = (Arc::clone(&r), stop.clone());
            async move { r.run(s).await }
        });
        settle().await;
        tx.unbounded_send(Ok(WatchEvent::Added(roomy("b", "11"))))
            .unwrap();
        settle().await;
        assert_eq!(
            capacity(&indexer, "a"),
            expected,
            "listed, compact: {compact}"
        );
        assert_eq!(
            capacity(&indexer, "b"),
            expected,
            "watched, compact: {compact}"
        );
        stop.cancel();
        handle.await.unwrap();
    }
}

#[derive(Default)]
struct Counted {
    lists: Mutex<Vec<usize>>,
    relists: Mutex<usize>,
    watches: Mutex<usize>,
    rv: Mutex<String>,
}

impl ReflectorMetrics for Counted {
    fn list(&self, items: usize, _: Duration) {
        self.lists.lock().push(items);
    }
    fn relist(&self) {
        *self.relists.lock() += 1;
    }
    fn watch(&self) {
        *self.watches.lock() += 1;
    }
    fn last_resource_version(&self, rv: &str) {
        *self.rv.lock() = rv.to_owned();
    }
}

#[tokio::test(start_paused = true)]
async fn metrics_count_lists_relists_watches_and_the_resource_version() {
    let fake = Fake::default();
    fake.list(list_of(vec![at("a", 1, "10")], "10"));
    fake.watch(WatchAnswer::Events(vec![
        Ok(WatchEvent::Added(at("b", 1, "11"))),
        Err(gone()),
    ]));
    fake.list(list_of(vec![at("a", 1, "10"), at("b", 1, "11")], "12"));
    let metrics = Arc::new(Counted::default());
    let (r, _) = reflector(&fake, list_watch_options().metrics(metrics.clone()));
    let (stop, handle) = start(&r);
    settle().await;
    tokio::time::advance(Duration::from_secs(2)).await;
    settle().await;
    assert_eq!(*metrics.lists.lock(), [1, 2]);
    assert_eq!(*metrics.relists.lock(), 1);
    assert_eq!(*metrics.watches.lock(), 2);
    assert_eq!(*metrics.rv.lock(), "12");
    stop.cancel();
    handle.await.unwrap();
}

/// A relist after a 410 logs one warning, not one per retry: the watch's 410 warns once, the
/// list's own 410 and its retry at "" add nothing, and nothing is logged as an error.
#[tokio::test(start_paused = true)]
async fn relist_after_gone_logs_one_warning_not_one_per_retry() {
    let trace = kclient_testkit::trace::capture();

    let fake = Fake::default();
    fake.list(list_of(vec![], "10"));
    fake.watch(WatchAnswer::Events(vec![Ok(WatchEvent::Error(status_of(
        ApiError::resource_expired("too old"),
    )))]));
    fake.list(Err(gone()));
    fake.list(list_of(vec![], "20"));
    let (r, store) = reflector(&fake, list_watch_options());
    let (stop, handle) = start(&r);
    settle().await;
    tokio::time::advance(Duration::from_secs(2)).await;
    settle().await;
    assert_eq!(store.calls(), ["replace [] rv=10", "replace [] rv=20"]);
    assert_eq!(fake.list_calls().len(), 3);
    let events = trace.events();
    let at = |level| -> Vec<_> { events.iter().filter(|e| e.level == level).collect() };
    let (warnings, errors) = (at(tracing::Level::WARN), at(tracing::Level::ERROR));
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(errors.is_empty(), "{errors:?}");
    stop.cancel();
    handle.await.unwrap();
}

/// Memory on relist (client-go#1377): with the consumer's indexer as known objects, an
/// unchanged object of a relist is the cached `Arc` itself, not a second copy.
#[tokio::test(start_paused = true)]
async fn relists_reuse_unchanged_cached_objects() {
    let fake = Fake::default();
    fake.list(list_of(vec![at("a", 1, "10"), at("b", 1, "11")], "11"));
    fake.watch(WatchAnswer::Events(vec![Err(gone())]));
    fake.list(list_of(vec![at("a", 1, "10"), at("b", 2, "12")], "12"));
    let indexer: Indexer<ConfigMap> = new_store(KeyFunc::deletion_handling_meta_namespace());
    let r = Arc::new(Reflector::new(
        fake.lister_watcher(),
        indexer.clone(),
        list_watch_options().known_objects(indexer.clone()),
    ));
    let stop = CancellationToken::new();
    let handle = tokio::spawn({
        let (r, s) = (Arc::clone(&r), stop.clone());
        async move { r.run(s).await }
    });
    settle().await;
    let a_before = indexer.get_by_key("a").unwrap();
    let b_before = indexer.get_by_key("b").unwrap();
    tokio::time::advance(Duration::from_secs(2)).await;
    settle().await;
    assert_eq!(fake.list_calls().len(), 2);
    assert!(
        Arc::ptr_eq(&indexer.get_by_key("a").unwrap(), &a_before),
        "a unchanged: reused"
    );
    let b_after = indexer.get_by_key("b").unwrap();
    assert!(!Arc::ptr_eq(&b_after, &b_before));
    assert_eq!(common::val(&b_after), 2);
    stop.cancel();
    handle.await.unwrap();
}

/// A reflector's transformer applies to listed and watched objects, once; reused cached
/// objects are not transformed again.
#[tokio::test(start_paused = true)]
async fn the_reflector_transforms_what_it_receives_once() {
    let fake = Fake::default();
    fake.list(list_of(vec![at("a", 1, "10")], "10"));
    let tx = fake.watch_channel();
    let indexer: Indexer<ConfigMap> = new_store(KeyFunc::deletion_handling_meta_namespace());
    let mark = kclient_cache::TransformFunc::new(|cm: &mut ConfigMap| {
        let n: i64 = cm
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("t"))
            .map_or(0, |v| v.parse().unwrap());
        cm.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("t".into(), (n + 1).to_string());
        Ok(())
    });
    let r = Arc::new(Reflector::new(
        fake.lister_watcher(),
        indexer.clone(),
        list_watch_options()
            .transform(mark)
            .known_objects(indexer.clone()),
    ));
    let stop = CancellationToken::new();
    let handle = tokio::spawn({
        let (r, s) = (Arc::clone(&r), stop.clone());
        async move { r.run(s).await }
    });
    settle().await;
    tx.unbounded_send(Ok(WatchEvent::Added(at("b", 1, "11"))))
        .unwrap();
    settle().await;
    let t = |key: &str| {
        indexer
            .get_by_key(key)
            .unwrap()
            .metadata
            .labels
            .as_ref()
            .unwrap()["t"]
            .clone()
    };
    assert_eq!(t("a"), "1");
    assert_eq!(t("b"), "1");
    stop.cancel();
    handle.await.unwrap();
}

/// client-go's `getTypeDescriptionFromObject` (`reflector.go`): the group-version-kind as
/// apimachinery displays it (`mygroup/v1, Kind=MyKind`, never `mygroup/v1/MyKind`), the Rust
/// type's name when the kind is unknown (never `/`), or what the options say.
#[test]
fn the_type_description_follows_client_go() {
    use kclient_cache::testing::FakeControllerSource;
    use kclient_core::{ApiResource, DynamicObject, GroupVersionKind};

    let dynamic = |gvk: GroupVersionKind| {
        let resource = ApiResource::from_gvk_with_plural(&gvk, "things", true);
        Reflector::new_with(
            FakeControllerSource::<DynamicObject>::new(),
            new_store(KeyFunc::<DynamicObject>::meta_namespace()),
            ReflectorOptions::default(),
            &resource,
        )
        .type_description()
        .to_owned()
    };
    assert_eq!(
        dynamic(GroupVersionKind::new("mygroup", "v1", "MyKind")),
        "mygroup/v1, Kind=MyKind"
    );
    assert_eq!(
        dynamic(GroupVersionKind::new("", "", "")),
        std::any::type_name::<DynamicObject>()
    );
    let typed = Reflector::new(
        FakeControllerSource::<ConfigMap>::new(),
        new_store(KeyFunc::<ConfigMap>::meta_namespace()),
        ReflectorOptions::default(),
    );
    assert_eq!(typed.type_description(), "/v1, Kind=ConfigMap");
    let named = Reflector::new(
        FakeControllerSource::<ConfigMap>::new(),
        new_store(KeyFunc::<ConfigMap>::meta_namespace()),
        ReflectorOptions::default().type_description("*v1.ConfigMap"),
    );
    assert_eq!(named.type_description(), "*v1.ConfigMap");
}
