//! The low-level Controller, `new_informer`/`new_indexer_informer` and the filtering
//! handler: what client-go's controller_test.go covers (the ExampleNew flow, the hammer
//! test's per-object consistency, updates in order, the transforming informer), plus a
//! stress test of a shared informer with eight handlers, one of them slow.

use crate::common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::until;
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::testing::FakeControllerSource;
use kclient_cache::{
    new_indexer_informer, new_informer, wait_for_cache_sync, FilteringResourceEventHandler,
    Indexers, ResourceEventHandler, ResourceEventHandlerFuncs, SharedIndexInformer,
    SharedIndexInformerOptions,
};
#[cfg(feature = "informer-delta-fifo")]
use kclient_cache::{
    DeltaFifo, DeltaFifoOptions, InformerController, InformerControllerConfig, ProcessError,
    ProcessFunc,
};
use kclient_core::{DeletedFinalStateUnknown, DeletedObject, ResourceExt};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

fn cm(name: &str, value: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.name = Some(name.into());
    cm.data = Some([("v".to_string(), value.to_string())].into());
    cm
}

fn value(o: &ConfigMap) -> String {
    o.data.as_ref().map(|d| d["v"].clone()).unwrap_or_default()
}

/// client-go's ExampleNew: a DeltaFIFO with the store as its known objects, a process
/// function applying deltas to the store; objects added, some deleted; the process sees
/// each once, and the store ends with the survivors (an informer's controller on a
/// DeltaFIFO, hence the `informer-delta-fifo` feature).
#[cfg(feature = "informer-delta-fifo")]
#[tokio::test(start_paused = true)]
async fn example_new_controller_processes_deltas_into_a_store() {
    let source = FakeControllerSource::new();
    let store =
        kclient_cache::new_store(kclient_cache::KeyFunc::deletion_handling_meta_namespace());
    let fifo = DeltaFifo::new(DeltaFifoOptions {
        known_objects: Some(Arc::new(store.clone())),
        ..DeltaFifoOptions::default()
    });
    let seen = Arc::new(Mutex::new(Vec::new()));
    let process: ProcessFunc<ConfigMap> = {
        let (store, seen) = (store.clone(), Arc::clone(&seen));
        Arc::new(move |deltas, _| {
            for delta in deltas {
                let newest = delta.clone();
                match &newest {
                    kclient_cache::Delta::Deleted(obj) => {
                        store
                            .delete(obj.clone())
                            .map_err(|e| ProcessError::Failed(e.into()))?;
                        seen.lock().push(format!(
                            "deleted {}",
                            kclient_core::deletion_handling_meta_namespace_key(obj)
                        ));
                    }
                    other => {
                        let obj = other.object().unwrap();
                        store
                            .update(Arc::clone(obj))
                            .map_err(|e| ProcessError::Failed(e.into()))?;
                        seen.lock()
                            .push(format!("{} {}", other.delta_type(), obj.name_any()));
                    }
                }
            }
            Ok(())
        })
    };
    let controller =
        InformerController::new(source.clone(), InformerControllerConfig::new(fifo, process));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (c, cancel) = (controller.clone(), cancel.clone());
        async move { c.run(cancel).await }
    });
    assert!(wait_for_cache_sync(&cancel, &[controller.synced()]).await);
    for i in 0..10 {
        source.add(cm(&format!("o{i}"), "1"));
    }
    for i in (0..10).step_by(2) {
        source.delete(cm(&format!("o{i}"), "1"));
    }
    until("every delete", || {
        seen.lock()
            .iter()
            .filter(|s| s.starts_with("deleted"))
            .count()
            == 5
    })
    .await;
    let mut left: Vec<_> = store
        .list()
        .iter()
        .map(|o| o.name_any().to_string())
        .collect();
    left.sort();
    assert_eq!(left, ["o1", "o3", "o5", "o7", "o9"]);
    assert_eq!(
        controller.last_sync_resource_version(),
        source.resource_version()
    );
    cancel.cancel();
    task.await.unwrap();
}

/// client-go's TestHammerController, shortened: random adds, updates and deletes with
/// watch resets; the single handler of `new_informer` sees each object's changes in a
/// consistent order and the store ends equal to the source.
#[tokio::test(start_paused = true)]
async fn hammer_controller_keeps_each_object_consistent() {
    let source = FakeControllerSource::new();
    let history: Arc<Mutex<BTreeMap<String, Vec<String>>>> = Arc::default();
    let record = |event: &'static str| {
        let history = Arc::clone(&history);
        move |key: String| {
            let mut h = history.lock();
            let events = h.entry(key.clone()).or_default();
            let present = matches!(events.last().map(String::as_str), Some("add" | "update"));
            let ok = if event == "add" { !present } else { present };
            assert!(ok, "{key}: {event} after {events:?}");
            events.push(event.to_owned());
        }
    };
    let (add, update, delete) = (record("add"), record("update"), record("delete"));
    let handler = ResourceEventHandlerFuncs::new()
        .add_func(move |o: &Arc<ConfigMap>, _| add(kclient_core::meta_namespace_key(o.as_ref())))
        .update_func(move |_, o: &Arc<ConfigMap>| {
            update(kclient_core::meta_namespace_key(o.as_ref()))
        })
        .delete_func(move |o: &DeletedObject<ConfigMap>| {
            delete(kclient_core::deletion_handling_meta_namespace_key(o))
        });
    let (store, controller) = new_informer(source.clone(), Duration::from_secs(1), handler);
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (c, cancel) = (controller.clone(), cancel.clone());
        async move { c.run(cancel).await }
    });
    assert!(wait_for_cache_sync(&cancel, &[controller.synced()]).await);
    let mut rng = fastrand::Rng::with_seed(7);
    let mut live: Vec<String> = Vec::new();
    for step in 0..2000 {
        let name = format!("o{}", rng.usize(..50));
        let exists = live.contains(&name);
        match rng.u8(..10) {
            0..=3 if !exists => {
                source.add(cm(&name, &step.to_string()));
                live.push(name);
            }
            0..=6 if exists => {
                source.modify(cm(&name, &step.to_string()));
            }
            7..=8 if exists => {
                source.delete(cm(&name, "gone"));
                live.retain(|n| n != &name);
            }
            9 => {
                source.reset_watch();
                tokio::time::advance(Duration::from_secs(2)).await;
            }
            _ => {}
        }
        if step % 50 == 0 {
            tokio::task::yield_now().await;
        }
    }
    tokio::time::advance(Duration::from_secs(2)).await;
    let expected: BTreeMap<String, String> = source
        .items()
        .iter()
        .map(|o| (o.name_any().to_string(), value(o)))
        .collect();
    until("the store caught up", || {
        let cached: BTreeMap<String, String> = store
            .list()
            .iter()
            .map(|o| (o.name_any().to_string(), value(o)))
            .collect();
        cached == expected
    })
    .await;
    cancel.cancel();
    task.await.unwrap();
}

/// client-go's TestUpdate: every update of an object reaches the handler once and in order.
#[tokio::test(start_paused = true)]
async fn updates_arrive_in_order() {
    let source = FakeControllerSource::new();
    let values = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&values);
    let (_, controller) = new_indexer_informer(
        source.clone(),
        Duration::ZERO,
        ResourceEventHandlerFuncs::new()
            .update_func(move |_, new: &Arc<ConfigMap>| record.lock().push(value(new))),
        Indexers::namespace(),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (c, cancel) = (controller.clone(), cancel.clone());
        async move { c.run(cancel).await }
    });
    assert!(wait_for_cache_sync(&cancel, &[controller.synced()]).await);
    source.add(cm("x", "0"));
    for v in 1..=100 {
        source.modify(cm("x", &v.to_string()));
    }
    until("every update", || values.lock().len() == 100).await;
    let expected: Vec<String> = (1..=100).map(|v| v.to_string()).collect();
    assert_eq!(*values.lock(), expected);
    cancel.cancel();
    task.await.unwrap();
}

/// A panic in `new_informer`'s handler is caught too: the controller goes on.
#[tokio::test(start_paused = true)]
async fn new_informer_survives_a_panicking_handler() {
    let source = FakeControllerSource::new();
    let adds = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&adds);
    let (store, controller) = new_informer(
        source.clone(),
        Duration::ZERO,
        ResourceEventHandlerFuncs::new().add_func(move |o: &Arc<ConfigMap>, _| {
            count.fetch_add(1, Ordering::SeqCst);
            assert_ne!(o.name_any(), "bad", "handler bug");
        }),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (c, cancel) = (controller.clone(), cancel.clone());
        async move { c.run(cancel).await }
    });
    source.add(cm("bad", "1"));
    source.add(cm("good", "1"));
    until("both handled", || adds.load(Ordering::SeqCst) == 2).await;
    assert_eq!(store.len(), 2);
    cancel.cancel();
    task.await.unwrap();
}

/// client-go's FilteringResourceEventHandler: updates crossing the filter become adds or
/// deletes; tombstones are judged by their last known object.
#[test]
fn filtering_handler_turns_crossing_updates_into_adds_and_deletes() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let (a, u, d) = (
        Arc::clone(&events),
        Arc::clone(&events),
        Arc::clone(&events),
    );
    let inner = ResourceEventHandlerFuncs::new()
        .add_func(move |o: &Arc<ConfigMap>, initial| {
            a.lock().push(format!("add {} {initial}", value(o)))
        })
        .update_func(move |o, n| u.lock().push(format!("update {}->{}", value(o), value(n))))
        .delete_func(move |o: &DeletedObject<ConfigMap>| {
            d.lock().push(format!(
                "delete {}",
                o.last_known().map(|o| value(o)).unwrap_or_default()
            ))
        });
    let handler =
        FilteringResourceEventHandler::new(|o: &ConfigMap| value(o).starts_with("in"), inner);
    let obj = |v: &str| Arc::new(cm("x", v));
    handler.on_add(&obj("in1"), true);
    handler.on_add(&obj("out1"), false);
    handler.on_update(&obj("in1"), &obj("in2"));
    handler.on_update(&obj("out1"), &obj("in3"));
    handler.on_update(&obj("in3"), &obj("out2"));
    handler.on_update(&obj("out2"), &obj("out3"));
    handler.on_delete(&DeletedObject::Object(obj("in4")));
    handler.on_delete(&DeletedObject::Object(obj("out4")));
    handler.on_delete(&DeletedObject::Tombstone(DeletedFinalStateUnknown {
        key: "ns/x".into(),
        obj: Some(obj("in5")),
    }));
    handler.on_delete(&DeletedObject::Tombstone(DeletedFinalStateUnknown {
        key: "ns/x".into(),
        obj: None,
    }));
    assert_eq!(
        *events.lock(),
        [
            "add in1 true",
            "update in1->in2",
            "add in3 false",
            "delete in3",
            "delete in4",
            "delete in5",
            "delete "
        ]
    );
}

/// The stress test of the issue: eight handlers, one deliberately slow, 100k events. The
/// fast handlers finish while the slow one is still far behind, nobody loses an event,
/// every handler sees each object's values in order, and the cache equals the source.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_handlers_one_slow_through_100k_events() {
    const OBJECTS: usize = 1000;
    const ROUNDS: usize = 100;
    let source = FakeControllerSource::new();
    let informer = SharedIndexInformer::new(source.clone(), SharedIndexInformerOptions::default());
    struct Counter {
        seen: AtomicUsize,
        last: Mutex<BTreeMap<String, usize>>,
        slow: bool,
    }
    impl ResourceEventHandler<ConfigMap> for Counter {
        fn on_add(&self, obj: &Arc<ConfigMap>, _: bool) {
            self.on_update(obj, obj);
        }
        fn on_update(&self, _: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
            if self.slow {
                std::thread::sleep(Duration::from_micros(50));
            }
            let v: usize = value(new).parse().unwrap();
            let mut last = self.last.lock();
            let previous = last.insert(new.name_any().to_string(), v);
            assert!(previous.is_none_or(|p| p < v), "in order");
            self.seen.fetch_add(1, Ordering::Relaxed);
        }
    }
    let handlers: Vec<Arc<Counter>> = (0..8)
        .map(|i| {
            Arc::new(Counter {
                seen: AtomicUsize::new(0),
                last: Mutex::default(),
                slow: i == 0,
            })
        })
        .collect();
    for h in &handlers {
        informer.add_event_handler(Arc::clone(h)).unwrap();
    }
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (i, cancel) = (informer.clone(), cancel.clone());
        async move { i.run(cancel).await }
    });
    assert!(wait_for_cache_sync(&cancel, &[informer.synced()]).await);
    for round in 0..ROUNDS {
        for o in 0..OBJECTS {
            let obj = cm(&format!("o{o:04}"), &round.to_string());
            if round == 0 {
                source.add(obj);
            } else {
                source.modify(obj);
            }
        }
    }
    let total = OBJECTS * ROUNDS;
    tokio::time::timeout(Duration::from_secs(300), async {
        while handlers[1..]
            .iter()
            .any(|h| h.seen.load(Ordering::Relaxed) < total)
        {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the fast handlers finished");
    let slow_when_fast_done = handlers[0].seen.load(Ordering::Relaxed);
    assert!(
        slow_when_fast_done < total,
        "the slow handler was still behind ({slow_when_fast_done} of {total})"
    );
    tokio::time::timeout(Duration::from_secs(300), async {
        while handlers[0].seen.load(Ordering::Relaxed) < total {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the slow handler caught up");
    for h in &handlers {
        assert_eq!(h.seen.load(Ordering::Relaxed), total, "no event lost");
    }
    assert_eq!(informer.get_store().len(), OBJECTS);
    assert!(informer
        .get_store()
        .list()
        .iter()
        .all(|o| value(o) == (ROUNDS - 1).to_string()));
    cancel.cancel();
    task.await.unwrap();
}
