//! RealFIFO: the cases of client-go's `the_real_fifo_test.go` that apply to its atomic mode
//! (the one whose process function runs without the lock), written anew against this API.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{obj, pop, pop_initial};
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::{
    process_deltas, Indexer, Indexers, KeyFunc, PopError, ProcessError, Queue, RealFifo,
    RealFifoOptions, TransformFunc, DEFAULT_BATCH_SIZE,
};
use kclient_core::DeletedFinalStateUnknown;

fn fifo() -> RealFifo<ConfigMap> {
    RealFifo::new(RealFifoOptions::default())
}

fn fifo_batching(batch_size: usize) -> RealFifo<ConfigMap> {
    RealFifo::new(RealFifoOptions {
        batch_size,
        ..RealFifoOptions::default()
    })
}

#[test]
fn default_batch_size_is_client_gos() {
    assert_eq!(DEFAULT_BATCH_SIZE, 1000);
    assert_eq!(RealFifoOptions::<ConfigMap>::default().batch_size, 1000);
}

/// Every delta, in arrival order; nothing is merged (client-go's `TestRealFIFO_addUpdate`,
/// `TestRealFIFO_detectLineJumpers`).
#[tokio::test]
async fn every_delta_in_arrival_order_without_coalescing() {
    let f = fifo();
    f.add(obj("foo", 10)).unwrap();
    f.add(obj("bar", 1)).unwrap();
    f.update(obj("foo", 11)).unwrap();
    f.update(obj("foo", 13)).unwrap();
    f.add(obj("zab", 30)).unwrap();
    assert_eq!(pop(&f).await, ["Added foo=10", "Added bar=1"]);
    assert_eq!(pop(&f).await, ["Updated foo=11"]);
    assert_eq!(pop(&f).await, ["Updated foo=13", "Added zab=30"]);
    assert!(f.is_empty());
}

/// A delete is always queued: the consumer decides what it means (atomic mode needs no
/// known objects).
#[tokio::test]
async fn deletes_are_always_queued() {
    let f = fifo_batching(1);
    f.delete(obj("never-seen", 1)).unwrap();
    f.delete(DeletedFinalStateUnknown {
        key: "gone".into(),
        obj: None,
    })
    .unwrap();
    assert_eq!(pop(&f).await, ["Deleted never-seen=1"]);
    assert_eq!(pop(&f).await, ["Deleted tombstone gone=?"]);
}

/// A replace is one `ReplacedAll` delta, in order with the rest (client-go's
/// `TestRealFIFO_ReplaceAtomicPop`).
#[tokio::test]
async fn replace_is_one_atomic_delta_in_order() {
    let f = fifo();
    f.add(obj("foo", 10)).unwrap();
    f.replace(vec![obj("foo", 15)], "20").unwrap();
    f.update(obj("foo", 16)).unwrap();
    assert_eq!(pop(&f).await, ["Added foo=10"]);
    assert_eq!(pop(&f).await, ["ReplacedAll [foo=15] rv=20"]);
    assert_eq!(pop(&f).await, ["Updated foo=16"]);
    assert!(f.is_empty());
}

/// A resync is one `SyncAll` delta, alone in its pop (client-go's `TestRealFIFO_ResyncAtomic`).
#[tokio::test]
async fn resync_is_one_atomic_delta_alone_in_its_pop() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.resync().unwrap();
    f.add(obj("b", 1)).unwrap();
    assert_eq!(pop(&f).await, ["Added a=1"]);
    assert_eq!(pop(&f).await, ["SyncAll"]);
    assert_eq!(pop(&f).await, ["Added b=1"]);
}

/// client-go's `TestRealFIFO_PopMultipleDeltaInBatch`, for what a batch may hold.
#[tokio::test]
async fn batches_hold_distinct_keys_up_to_the_batch_size() {
    // Unique keys: one batch.
    let f = fifo();
    for name in ["o1", "o2", "o3"] {
        f.update(obj(name, 5)).unwrap();
    }
    assert_eq!(
        pop(&f).await,
        ["Updated o1=5", "Updated o2=5", "Updated o3=5"]
    );

    // A repeated key closes the batch, wherever it is.
    let f = fifo();
    for name in ["o1", "o2", "o2", "o3"] {
        f.update(obj(name, 5)).unwrap();
    }
    assert_eq!(pop(&f).await, ["Updated o1=5", "Updated o2=5"]);
    assert_eq!(pop(&f).await, ["Updated o2=5", "Updated o3=5"]);

    // The batch size caps it.
    let f = fifo_batching(2);
    for name in ["o1", "o2", "o3"] {
        f.update(obj(name, 5)).unwrap();
    }
    assert_eq!(pop(&f).await, ["Updated o1=5", "Updated o2=5"]);
    assert_eq!(pop(&f).await, ["Updated o3=5"]);

    // A whole-store delta is never batched with others.
    let f = fifo();
    f.update(obj("o1", 5)).unwrap();
    f.replace(vec![obj("o2", 5)], "7").unwrap();
    f.update(obj("o3", 5)).unwrap();
    assert_eq!(pop(&f).await, ["Updated o1=5"]);
    assert_eq!(pop(&f).await, ["ReplacedAll [o2=5] rv=7"]);
    assert_eq!(pop(&f).await, ["Updated o3=5"]);
}

/// seed-semantics §3.8 for RealFIFO (client-go's `TestRealFIFO_HasSynced`): synced once
/// everything up to the first replace has been popped and processed, or after an add that
/// came first.
#[tokio::test]
async fn has_synced_after_the_first_replace_is_processed() {
    let f = fifo();
    assert!(!f.has_synced());

    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    assert!(f.has_synced(), "an add before any replace syncs");

    let f = fifo();
    f.replace(vec![obj("a", 1), obj("b", 2)], "0").unwrap();
    f.update(obj("c", 1)).unwrap();
    assert!(!f.has_synced());
    f.pop(|_, initial| {
        assert!(initial);
        assert!(!f.has_synced(), "not while the list is being processed");
        Ok(())
    })
    .await
    .unwrap();
    assert!(f.has_synced());
    let (deltas, initial) = pop_initial(&f).await;
    assert_eq!(deltas, ["Updated c=1"]);
    assert!(!initial);

    // An empty list is still a delta to process: the consumer must empty its store.
    let f = fifo();
    f.replace(vec![], "0").unwrap();
    assert!(!f.has_synced());
    assert_eq!(pop(&f).await, ["ReplacedAll [] rv=0"]);
    assert!(f.has_synced());

    // A resync does not populate.
    let f = fifo();
    f.resync().unwrap();
    assert!(!f.has_synced());
}

/// seed-semantics §3.9 for RealFIFO: a closed queue drains, then reports closed; a waiting
/// pop wakes on close (client-go's `TestRealFIFO_PopShouldUnblockWhenClosed`).
#[tokio::test(start_paused = true)]
async fn closed_fifo_drains_then_reports_closed() {
    let f = Arc::new(fifo_batching(1));
    f.add(obj("a", 1)).unwrap();
    f.close();
    assert_eq!(pop(&*f).await, ["Added a=1"]);
    assert!(matches!(f.pop(|_, _| Ok(())).await, Err(PopError::Closed)));

    let g = Arc::new(fifo());
    let waiter = tokio::spawn({
        let g = Arc::clone(&g);
        async move { g.pop(|_, _| Ok(())).await }
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!waiter.is_finished());
    g.close();
    assert!(matches!(waiter.await.unwrap(), Err(PopError::Closed)));
}

/// A requeued batch goes back to the head of the queue, in order.
#[tokio::test]
async fn requeue_puts_the_batch_back_at_the_head_in_order() {
    let f = fifo_batching(2);
    for name in ["a", "b", "c"] {
        f.add(obj(name, 1)).unwrap();
    }
    let err = f
        .pop(|_, _| Err(ProcessError::Requeue("later".into())))
        .await
        .unwrap_err();
    assert!(matches!(err, PopError::Process { requeued: true, .. }));
    assert_eq!(pop(&f).await, ["Added a=1", "Added b=1"]);
    assert_eq!(pop(&f).await, ["Added c=1"]);

    f.add(obj("d", 1)).unwrap();
    let err = f
        .pop(|_, _| Err(ProcessError::Failed("broken".into())))
        .await
        .unwrap_err();
    assert!(matches!(
        err,
        PopError::Process {
            requeued: false,
            ..
        }
    ));
    assert!(f.is_empty());
}

/// The process function runs without the lock: a producer can add meanwhile.
#[tokio::test]
async fn process_runs_without_the_lock() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.pop(|_, _| {
        f.add(obj("b", 1)).unwrap();
        assert_eq!(f.len(), 1);
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(pop(&f).await, ["Added b=1"]);
}

/// client-go's `TestRealFIFO_transformer`: objects from the server are transformed once,
/// replaced lists included; tombstones are not.
#[tokio::test]
async fn transformer_applies_to_server_objects_only() {
    let mark = TransformFunc::new(|cm: &mut ConfigMap| {
        cm.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("t".into(), "1".into());
        Ok(())
    });
    let f = RealFifo::new(RealFifoOptions {
        transformer: Some(mark),
        batch_size: 1,
        ..RealFifoOptions::default()
    });
    f.add(obj("a", 1)).unwrap();
    f.replace(vec![obj("b", 1)], "3").unwrap();
    f.delete(DeletedFinalStateUnknown::<ConfigMap> {
        key: "c".into(),
        obj: Some(obj("c", 1)),
    })
    .unwrap();
    let marked = |cm: &ConfigMap| {
        cm.metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key("t"))
    };
    let a = f.pop(|_, _| Ok(())).await.unwrap();
    assert!(marked(a[0].object().unwrap()));
    let b = f.pop(|_, _| Ok(())).await.unwrap();
    let kclient_cache::Delta::ReplacedAll(info) = &b[0] else {
        panic!("expected ReplacedAll, got {b:?}");
    };
    assert!(marked(&info.objects[0]));
    let c = f.pop(|_, _| Ok(())).await.unwrap();
    assert!(
        !marked(c[0].object().unwrap()),
        "a tombstone's object is not transformed again"
    );
}

#[tokio::test]
async fn key_errors_are_refused_before_queueing() {
    let f = RealFifo::new(RealFifoOptions {
        key_function: Some(KeyFunc::new(|cm: &ConfigMap| {
            if cm.metadata.name.as_deref() == Some("bad") {
                Err(kclient_cache::KeyFuncError::new(cm, "unkeyable"))
            } else {
                Ok(cm.metadata.name.clone().unwrap_or_default())
            }
        })),
        ..RealFifoOptions::default()
    });
    assert!(f.add(obj("bad", 1)).is_err());
    assert!(f.replace(vec![obj("ok", 1), obj("bad", 1)], "1").is_err());
    assert!(f.is_empty(), "nothing of a refused replace is queued");
    assert!(!f.has_synced());
}

/// End to end with the consumer: a relist that no longer has an object makes a tombstone
/// with the cached object, and it comes in order with the watch's deltas.
#[tokio::test]
async fn relist_tombstones_are_made_in_order_by_the_consumer() {
    let indexer = Indexer::new(
        KeyFunc::deletion_handling_meta_namespace(),
        Indexers::<ConfigMap>::new(),
    );
    let f = fifo();
    f.replace(vec![obj("a", 1), obj("b", 1)], "1").unwrap();
    f.update(obj("a", 2)).unwrap();
    f.replace(vec![obj("b", 2)], "5").unwrap();
    f.add(obj("a", 3)).unwrap();

    let mut events = Vec::new();
    while !f.is_empty() {
        f.pop(|deltas, initial| {
            process_deltas(&indexer, deltas, initial, |n| events.push(format!("{n:?}")))
                .map_err(|e| ProcessError::Failed(e.into()))
        })
        .await
        .unwrap();
    }
    assert_eq!(
        events,
        [
            "Add { is_in_initial_list: true }",
            "Add { is_in_initial_list: true }",
            "Update { same: false }",
            "Delete(DeletedFinalStateUnknown \"a\")",
            "Update { same: false }",
            "Add { is_in_initial_list: false }",
        ]
    );
    let mut keys = indexer.list_keys();
    keys.sort();
    assert_eq!(keys, ["a", "b"]);
    assert_eq!(common::val(&indexer.get_by_key("a").unwrap()), 3);
}
