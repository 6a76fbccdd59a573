//! KEP-5647's store resourceVersion (client-go 1.37): `LastStoreSyncResourceVersion` and
//! `Bookmark` on the thread-safe store and the indexer, the RealFIFO's Bookmark delta applied
//! in order, and an informer's store agreeing with what its handlers were told. Ports of
//! client-go's thread_safe_store_test.go `TestThreadSafeStoreRV` and controller_test.go
//! `TestStoreResourceVersion`/`TestStoreResourceVersionWithNonMetaTransform`.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{start_informer as start, until};
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::testing::FakeControllerSource;
use kclient_cache::{
    process_deltas, resource_version_for_metrics, wait_for_cache_sync, BookmarkInfo, CacheMetrics,
    Delta, DeltaType, Indexer, Indexers, KeyFunc, Queue, RealFifo, RealFifoOptions,
    ResourceEventHandlerFuncs, SharedIndexInformer, SharedIndexInformerOptions, Store,
    ThreadSafeStore, TransformFunc,
};
use kclient_core::{DeletedObject, ResourceExt};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

fn at(name: &str, rv: &str) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.name = Some(name.into());
    if !rv.is_empty() {
        cm.metadata.resource_version = Some(rv.into());
    }
    Arc::new(cm)
}

/// client-go's thread_safe_store_test.go `TestThreadSafeStoreRV`, case by case. client-go's
/// "non-meta object" (a string) has no Rust counterpart: the same rule applies to an object
/// without a resourceVersion.
#[test]
fn thread_safe_store_rv() {
    // Initial state.
    let store = ThreadSafeStore::<ConfigMap>::new(Indexers::default());
    assert_eq!(store.last_store_sync_resource_version(), "");

    // Add, Update and Delete.
    let store = ThreadSafeStore::<ConfigMap>::new(Indexers::default());
    store.add_object("key1", at("a", "10")).unwrap();
    assert_eq!(store.last_store_sync_resource_version(), "10");
    store.add_object("key3", at("c", "10")).unwrap();
    assert_eq!(store.last_store_sync_resource_version(), "10");
    store.add_object("key4", at("d", "20")).unwrap();
    assert_eq!(store.last_store_sync_resource_version(), "20");
    store.delete_with_object("key4", &at("d", "30")).unwrap();
    assert_eq!(store.last_store_sync_resource_version(), "30");
    store.add_object("key5", at("e", "")).unwrap();
    assert_eq!(
        store.last_store_sync_resource_version(),
        "30",
        "an object without a resourceVersion leaves it"
    );
    store.add_object("key6", at("f", "40")).unwrap();
    assert_eq!(store.last_store_sync_resource_version(), "40");
    store.delete("key6").unwrap();
    assert_eq!(
        store.last_store_sync_resource_version(),
        "40",
        "a delete without an object leaves it"
    );
    let results = store.transaction_objects(vec![
        ("key9".into(), Some(at("i", "40"))),
        ("key10".into(), Some(at("j", "30"))),
        ("key11".into(), Some(at("k", "50"))),
    ]);
    assert!(results.iter().all(Result::is_ok));
    assert_eq!(
        store.last_store_sync_resource_version(),
        "50",
        "a transaction records its last object's"
    );

    // Replace.
    let store = ThreadSafeStore::<ConfigMap>::new(Indexers::default());
    store.add_object("key1", at("a", "10")).unwrap();
    assert_eq!(store.last_store_sync_resource_version(), "10");
    store
        .replace_with_resource_version(
            [
                ("key3".to_owned(), at("c", "40")),
                ("key2".to_owned(), at("b", "30")),
            ],
            "50",
        )
        .unwrap();
    assert_eq!(store.last_store_sync_resource_version(), "50");

    // Delete.
    let store = ThreadSafeStore::<ConfigMap>::new(Indexers::default());
    store.add_object("key1", at("a", "10")).unwrap();
    store.delete_with_object("key1", &at("a", "20")).unwrap();
    assert_eq!(store.last_store_sync_resource_version(), "20");

    // Bookmark (consistency_test.go drives the store with it).
    store.bookmark("25");
    assert_eq!(store.last_store_sync_resource_version(), "25");
}

/// The same rules through the [`Indexer`] and the [`Store`] trait (client-go's `cache` struct
/// forwards `LastStoreSyncResourceVersion` and `Bookmark` to its `threadSafeMap`): a tombstone
/// carries no resourceVersion to record; a store that does not track answers `""`.
#[test]
fn indexer_store_rv() {
    let indexer = Indexer::new(
        KeyFunc::deletion_handling_meta_namespace(),
        Indexers::<ConfigMap>::namespace(),
    );
    Store::add(&indexer, at("a", "10")).unwrap();
    assert_eq!(Store::last_store_sync_resource_version(&indexer), "10");
    Store::replace(&indexer, vec![at("a", "10"), at("b", "12")], "15").unwrap();
    assert_eq!(indexer.last_store_sync_resource_version(), "15");
    Store::bookmark(&indexer, "17");
    assert_eq!(indexer.last_store_sync_resource_version(), "17");
    let tombstone = DeletedObject::Tombstone(kclient_core::DeletedFinalStateUnknown {
        key: "ns/b".into(),
        obj: Some(at("b", "99")),
    });
    indexer.delete(tombstone).unwrap();
    assert_eq!(indexer.last_store_sync_resource_version(), "17");
    indexer.delete(at("a", "18")).unwrap();
    assert_eq!(indexer.last_store_sync_resource_version(), "18");

    let fifo = RealFifo::<ConfigMap>::new(RealFifoOptions::default());
    assert_eq!(Store::last_store_sync_resource_version(&fifo), "");
}

/// client-go's the_real_fifo.go `Bookmark` (a Bookmark delta with a `BookmarkInfo`, not
/// `batchable`, so it pops alone and ends the batch before it) and controller.go
/// `processDeltas` (~line 870: a Bookmark delta calls `clientState.Bookmark`): the store's
/// resourceVersion moves in step with the deltas handed out, never ahead of them.
#[tokio::test]
async fn real_fifo_bookmark_is_applied_in_order() {
    let fifo = RealFifo::<ConfigMap>::new(RealFifoOptions::default());
    let indexer = Indexer::new(
        KeyFunc::deletion_handling_meta_namespace(),
        Indexers::<ConfigMap>::namespace(),
    );
    fifo.add(at("a", "10")).unwrap();
    fifo.add(at("b", "11")).unwrap();
    Store::bookmark(&fifo, "20");
    fifo.update(at("a", "21")).unwrap();

    let mut seen = Vec::new();
    for _ in 0..3 {
        let popped = fifo
            .pop(|deltas, initial| {
                process_deltas(&indexer, deltas, initial, |_| {}).unwrap();
                Ok(())
            })
            .await
            .unwrap();
        seen.push((
            popped.iter().map(|d| d.delta_type()).collect::<Vec<_>>(),
            indexer.last_store_sync_resource_version(),
        ));
    }
    assert_eq!(
        seen,
        [
            (vec![DeltaType::Added, DeltaType::Added], "11".to_owned()),
            (vec![DeltaType::Bookmark], "20".to_owned()),
            (vec![DeltaType::Updated], "21".to_owned()),
        ]
    );
    assert!(Delta::<ConfigMap>::Bookmark(BookmarkInfo {
        resource_version: "20".into()
    })
    .object()
    .is_none());
    assert_eq!(DeltaType::Bookmark.to_string(), "Bookmark");
}

#[derive(Default)]
struct Gauge(Mutex<Vec<String>>);

impl CacheMetrics for Gauge {
    fn store_resource_version(&self, resource_version: &str) {
        self.0.lock().push(resource_version.to_owned());
    }
}

/// client-go's thread_safe_store.go `storeResourceVersion` gauge, set on every write that
/// records a resourceVersion, with `parseRVForMetricsWithTruncation`'s value (the last 15
/// digits; nothing for an empty or non-numeric one).
#[test]
fn store_resource_version_metric() {
    let gauge = Arc::new(Gauge::default());
    let store = ThreadSafeStore::<ConfigMap>::new(Indexers::default()).with_metrics(gauge.clone());
    store.add_object("a", at("a", "7")).unwrap();
    store.bookmark("9");
    store
        .replace_with_resource_version([("b".to_owned(), at("b", "8"))], "12")
        .unwrap();
    assert_eq!(*gauge.0.lock(), ["7", "9", "12"]);

    assert_eq!(resource_version_for_metrics("12345"), Some(12345));
    assert_eq!(
        resource_version_for_metrics("99912345678901234567"),
        Some(345_678_901_234_567),
        "truncated to the last 15 digits"
    );
    assert_eq!(resource_version_for_metrics(""), None);
    assert_eq!(resource_version_for_metrics("abc"), None);
}

/// Records `(action, key, resourceVersion)` for every notification.
type History = Arc<Mutex<Vec<(String, String, String)>>>;

fn recorded(informer: &SharedIndexInformer<ConfigMap>) -> History {
    let history: History = Arc::default();
    let (a, u, d) = (history.clone(), history.clone(), history.clone());
    let rv = |o: &ConfigMap| o.resource_version().unwrap_or_default().to_owned();
    informer
        .add_event_handler(
            ResourceEventHandlerFuncs::new()
                .add_func(move |o: &Arc<ConfigMap>, _| {
                    a.lock()
                        .push(("add".into(), o.name_any().to_owned(), rv(o)));
                })
                .update_func(move |_, o: &Arc<ConfigMap>| {
                    u.lock()
                        .push(("update".into(), o.name_any().to_owned(), rv(o)));
                })
                .delete_func(move |o: &DeletedObject<ConfigMap>| {
                    let o = o.last_known().expect("an object");
                    d.lock()
                        .push(("delete".into(), o.name_any().to_owned(), rv(o)));
                }),
        )
        .unwrap();
    history
}

async fn synced(cancel: &CancellationToken, informer: &SharedIndexInformer<ConfigMap>) {
    assert!(tokio::time::timeout(
        Duration::from_secs(60),
        wait_for_cache_sync(cancel, &[informer.synced()])
    )
    .await
    .expect("synced in time"));
}

fn cm(name: &str, label: Option<&str>) -> ConfigMap {
    let mut cm = ConfigMap::clone(&at(name, ""));
    if let Some(v) = label {
        cm.metadata.labels = Some([("foo".to_owned(), v.to_owned())].into());
    }
    cm
}

/// client-go's controller_test.go `TestStoreResourceVersion`: after each event a handler got,
/// the store's `LastStoreSyncResourceVersion` is that event's resourceVersion.
#[tokio::test(start_paused = true)]
async fn store_resource_version_follows_the_handled_events() {
    let source = FakeControllerSource::new();
    source.add(cm("pod-1", None));
    let informer = SharedIndexInformer::new(source.clone(), SharedIndexInformerOptions::default());
    let history = recorded(&informer);
    let (cancel, task) = start(&informer);
    synced(&cancel, &informer).await;
    until("the initial add", || history.lock().len() == 1).await;
    assert_eq!(history.lock()[0].0, "add");
    assert_eq!(
        informer.get_indexer().last_store_sync_resource_version(),
        source.resource_version(),
        "the list's resourceVersion"
    );

    history.lock().clear();
    source.modify(cm("pod-1", Some("bar")));
    until("the update", || history.lock().len() == 1).await;
    let (action, _, rv) = history.lock()[0].clone();
    assert_eq!(action, "update");
    assert_eq!(
        informer.get_indexer().last_store_sync_resource_version(),
        rv
    );

    history.lock().clear();
    source.delete(cm("pod-1", None));
    until("the delete", || history.lock().len() == 1).await;
    let (action, _, rv) = history.lock()[0].clone();
    assert_eq!(action, "delete");
    assert_eq!(
        informer.get_indexer().last_store_sync_resource_version(),
        rv
    );
    cancel.cancel();
    task.await.unwrap();
}

/// client-go's controller_test.go `TestStoreResourceVersionWithNonMetaTransform`: with a
/// transform that takes the resourceVersion away, an update leaves the store's at the
/// list's, and a relist moves it to the new list's.
#[tokio::test(start_paused = true)]
async fn store_resource_version_with_a_transform_that_drops_it() {
    let source = FakeControllerSource::new();
    source.add(cm("pod-1", None));
    let informer = SharedIndexInformer::new(
        source.clone(),
        SharedIndexInformerOptions::default().transform(TransformFunc::new(|o: &mut ConfigMap| {
            o.metadata.resource_version = None;
            Ok(())
        })),
    );
    let history = recorded(&informer);
    let (cancel, task) = start(&informer);
    synced(&cancel, &informer).await;
    until("the initial add", || history.lock().len() == 1).await;
    let replace_rv = informer.get_indexer().last_store_sync_resource_version();
    assert_eq!(replace_rv, source.resource_version());

    history.lock().clear();
    source.modify(cm("pod-1", Some("bar")));
    until("the update", || history.lock().len() == 1).await;
    assert_eq!(
        informer.get_indexer().last_store_sync_resource_version(),
        replace_rv,
        "an object without a resourceVersion leaves it"
    );

    history.lock().clear();
    source.modify_drop_watch(cm("pod-1", Some("bar2")));
    source.reset_watch();
    // The relist comes after the reflector's backoff: let the paused clock run.
    for _ in 0..600 {
        if !history.lock().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(history.lock().len(), 1, "the relist's update");
    assert_eq!(
        informer.get_indexer().last_store_sync_resource_version(),
        source.resource_version(),
        "the relist's resourceVersion"
    );
    assert_eq!(source.resource_version(), "3");
    cancel.cancel();
    task.await.unwrap();
}
