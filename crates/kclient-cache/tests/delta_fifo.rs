//! DeltaFIFO: the cases of client-go's `delta_fifo_test.go`, written anew against this API,
//! and each DeltaFIFO behaviour of seed-semantics §3 under its own name.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{describe_all, known, obj, pop, pop_initial, val};
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::{
    process_deltas, CacheMetrics, Delta, DeltaFifo, DeltaFifoOptions, DeltaType, Deltas, Indexer,
    Indexers, KeyFunc, KeyListerGetter, PopError, ProcessError, Queue, TransformFunc,
};
use kclient_core::{DeletedFinalStateUnknown, DeletedObject};

fn fifo() -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(DeltaFifoOptions::default())
}

fn fifo_knowing(items: &[(&str, i64)]) -> DeltaFifo<ConfigMap> {
    DeltaFifo::new(DeltaFifoOptions {
        known_objects: Some(known(items)),
        ..DeltaFifoOptions::default()
    })
}

#[tokio::test]
async fn basic_add_then_pop_in_order() {
    let f = fifo();
    for i in 0..10 {
        f.add(obj(&format!("a{i}"), i)).unwrap();
    }
    for i in 0..10 {
        assert_eq!(pop(&f).await, [format!("Added a{i}={i}")]);
    }
    assert!(f.is_empty());
}

#[tokio::test]
async fn add_update_accumulates_in_one_deltas() {
    let f = fifo();
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("foo", 12)).unwrap();
    f.delete(obj("foo", 15)).unwrap();
    assert_eq!(f.list_keys(), ["foo"]);
    assert_eq!(
        pop(&f).await,
        ["Added foo=10", "Updated foo=12", "Deleted foo=15"]
    );
    assert!(f.get_by_key("foo").is_none());
}

/// seed-semantics §3.3: `Delete(old)` then `Replace([new])` pops `[Deleted old, Sync new]`
/// (the `willObjectBeDeletedLocked` skip was client-go bug #83810).
#[tokio::test]
async fn do_not_drop_sync_after_a_queued_delete() {
    let f = fifo_knowing(&[("foo", 1)]);
    f.delete(obj("foo", 1)).unwrap();
    f.replace(vec![obj("foo", 2)], "").unwrap();
    assert_eq!(pop(&f).await, ["Deleted foo=1", "Sync foo=2"]);
}

/// seed-semantics §3.4: index 0 is the oldest delta, the last is the newest.
#[tokio::test]
async fn deltas_oldest_is_first_and_newest_is_last() {
    let f = fifo();
    f.add(obj("foo", 1)).unwrap();
    f.update(obj("foo", 2)).unwrap();
    let deltas = f.get_by_key("foo").unwrap();
    assert_eq!(deltas.oldest().unwrap().delta_type(), DeltaType::Added);
    assert_eq!(val(deltas.newest().unwrap().object().unwrap()), 2);
    assert!(Deltas::<ConfigMap>::new().oldest().is_none());
    assert!(Deltas::<ConfigMap>::new().newest().is_none());
}

/// seed-semantics §3.5: only two trailing deletions merge; the non-tombstone is kept.
#[tokio::test]
async fn dedup_merges_only_two_trailing_deletions() {
    let f = fifo_knowing(&[("foo", 1)]);
    // Two real deletions: the older is kept.
    f.delete(obj("foo", 1)).unwrap();
    f.delete(obj("foo", 2)).unwrap();
    assert_eq!(
        describe_all(&f.get_by_key("foo").unwrap()),
        ["Deleted foo=1"]
    );
    // A tombstone then a real deletion: the real one replaces the tombstone.
    let tombstone = DeletedFinalStateUnknown {
        key: "bar".into(),
        obj: None,
    };
    let g = fifo_knowing(&[("bar", 1)]);
    g.delete(tombstone).unwrap();
    g.delete(obj("bar", 3)).unwrap();
    assert_eq!(
        describe_all(&g.get_by_key("bar").unwrap()),
        ["Deleted bar=3"]
    );
    // Adds, updates and syncs never merge.
    let h = fifo();
    h.add(obj("baz", 1)).unwrap();
    h.add(obj("baz", 1)).unwrap();
    h.update(obj("baz", 1)).unwrap();
    h.update(obj("baz", 1)).unwrap();
    assert_eq!(h.get_by_key("baz").unwrap().len(), 4);
}

/// seed-semantics §3.6 (client-go's `TestDeltaFIFO_detectLineJumpers`).
#[tokio::test]
async fn queue_order_is_by_first_insertion_of_the_key() {
    let f = fifo();
    f.add(obj("foo", 10)).unwrap();
    f.add(obj("bar", 1)).unwrap();
    f.add(obj("foo", 11)).unwrap();
    f.add(obj("foo", 13)).unwrap();
    f.add(obj("zab", 30)).unwrap();
    assert_eq!(pop(&f).await.last().unwrap(), "Added foo=13");
    f.add(obj("foo", 14)).unwrap(); // foo does not jump back in line
    assert_eq!(pop(&f).await, ["Added bar=1"]);
    assert_eq!(pop(&f).await, ["Added zab=30"]);
    assert_eq!(pop(&f).await, ["Added foo=14"]);
}

/// seed-semantics §3.7 and client-go's `TestDeltaFIFO_ReplaceMakesDeletions`.
#[tokio::test]
async fn replace_makes_deletions() {
    let known_three = [("foo", 5), ("bar", 6), ("baz", 7)];

    // A pre-existing Delete.
    let f = fifo_knowing(&known_three);
    f.delete(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 5)], "0").unwrap();
    assert_eq!(pop(&f).await, ["Deleted baz=10"]);
    assert_eq!(pop(&f).await, ["Sync foo=5"]);
    assert_eq!(pop(&f).await, ["Deleted tombstone bar=6"]);

    // An Add instead.
    let f = fifo_knowing(&known_three);
    f.add(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 5)], "0").unwrap();
    assert_eq!(pop(&f).await, ["Added baz=10", "Deleted tombstone baz=10"]);
    assert_eq!(pop(&f).await, ["Sync foo=5"]);
    assert_eq!(pop(&f).await, ["Deleted tombstone bar=6"]);

    // Deleted and recreated in the queue, then deleted by a Replace: the newest queued
    // object goes into the tombstone.
    let f = fifo_knowing(&known_three);
    f.delete(obj("bar", 6)).unwrap();
    f.add(obj("bar", 100)).unwrap();
    f.replace(vec![obj("foo", 5)], "0").unwrap();
    assert_eq!(
        pop(&f).await,
        [
            "Deleted bar=6",
            "Added bar=100",
            "Deleted tombstone bar=100"
        ]
    );
    assert_eq!(pop(&f).await, ["Sync foo=5"]);
    assert_eq!(pop(&f).await, ["Deleted tombstone baz=7"]);

    // Synced first: the deletion uses the latest version.
    let f = fifo_knowing(&known_three);
    f.replace(vec![obj("bar", 100), obj("foo", 5)], "0")
        .unwrap();
    f.replace(vec![obj("foo", 5)], "0").unwrap();
    assert_eq!(pop(&f).await, ["Sync bar=100", "Deleted tombstone bar=100"]);
    assert_eq!(pop(&f).await, ["Sync foo=5", "Sync foo=5"]);
    assert_eq!(pop(&f).await, ["Deleted tombstone baz=7"]);

    // Without known objects: diffed against the queue only.
    let f = fifo();
    f.add(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 5)], "0").unwrap();
    assert_eq!(pop(&f).await, ["Added baz=10", "Deleted tombstone baz=10"]);
    assert_eq!(pop(&f).await, ["Sync foo=5"]);
    assert!(f.is_empty());
}

#[tokio::test]
async fn replace_makes_deletions_replaced() {
    let f = DeltaFifo::new(DeltaFifoOptions {
        known_objects: Some(known(&[("foo", 5), ("bar", 6), ("baz", 7)])),
        emit_delta_type_replaced: true,
        ..DeltaFifoOptions::default()
    });
    f.delete(obj("baz", 10)).unwrap();
    f.replace(vec![obj("foo", 6)], "0").unwrap();
    assert_eq!(pop(&f).await, ["Deleted baz=10"]);
    assert_eq!(pop(&f).await, ["Replaced foo=6"]);
    assert_eq!(pop(&f).await, ["Deleted tombstone bar=6"]);
}

/// client-go's `TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue`, with and
/// without known objects.
#[tokio::test]
async fn replace_makes_deletions_for_objects_only_in_queue() {
    type Ops = fn(&DeltaFifo<ConfigMap>);
    let cases: [(&str, Ops, bool, &[&str]); 6] = [
        (
            "added object is deleted on replace",
            |f| {
                f.add(obj("foo", 2)).unwrap();
                f.replace(vec![], "0").unwrap();
            },
            false,
            &["Added foo=2", "Deleted tombstone foo=2"],
        ),
        (
            "replaced object has a single delete",
            |f| {
                f.add(obj("foo", 2)).unwrap();
                f.replace(vec![obj("foo", 2)], "0").unwrap();
                f.replace(vec![], "0").unwrap();
            },
            true,
            &["Added foo=2", "Replaced foo=2", "Deleted tombstone foo=2"],
        ),
        (
            "deleted object has a single delete",
            |f| {
                f.add(obj("foo", 2)).unwrap();
                f.delete(obj("foo", 2)).unwrap();
                f.replace(vec![], "0").unwrap();
            },
            false,
            &["Added foo=2", "Deleted foo=2"],
        ),
        (
            "synced objects have a single delete",
            |f| {
                f.add(obj("foo", 2)).unwrap();
                f.replace(vec![obj("foo", 2)], "0").unwrap();
                f.replace(vec![obj("foo", 2)], "0").unwrap();
                f.replace(vec![], "0").unwrap();
            },
            false,
            &[
                "Added foo=2",
                "Sync foo=2",
                "Sync foo=2",
                "Deleted tombstone foo=2",
            ],
        ),
        (
            "added object has a single delete on several replaces",
            |f| {
                f.add(obj("foo", 2)).unwrap();
                f.replace(vec![], "0").unwrap();
                f.replace(vec![], "1").unwrap();
            },
            false,
            &["Added foo=2", "Deleted tombstone foo=2"],
        ),
        (
            "added, deleted and added again is deleted",
            |f| {
                f.add(obj("foo", 2)).unwrap();
                f.delete(obj("foo", 2)).unwrap();
                f.add(obj("foo", 3)).unwrap();
                f.replace(vec![], "0").unwrap();
            },
            false,
            &[
                "Added foo=2",
                "Deleted foo=2",
                "Added foo=3",
                "Deleted tombstone foo=3",
            ],
        ),
    ];
    for (name, ops, replaced, expected) in cases {
        for known_objects in [Some(known(&[])), None] {
            let f = DeltaFifo::new(DeltaFifoOptions {
                known_objects: known_objects.clone(),
                emit_delta_type_replaced: replaced,
                ..DeltaFifoOptions::default()
            });
            ops(&f);
            assert_eq!(pop(&f).await, expected, "{name}");
            assert!(f.is_empty(), "{name}: nothing else queued");
        }
    }
}

#[tokio::test]
async fn replace_delta_type_is_sync_unless_replaced_is_asked_for() {
    let f = fifo();
    f.add(obj("foo", 5)).unwrap();
    f.replace(vec![obj("foo", 6)], "0").unwrap();
    assert_eq!(pop(&f).await, ["Added foo=5", "Sync foo=6"]);
    let f = DeltaFifo::new(DeltaFifoOptions {
        emit_delta_type_replaced: true,
        ..DeltaFifoOptions::default()
    });
    f.add(obj("foo", 5)).unwrap();
    f.replace(vec![obj("foo", 6)], "0").unwrap();
    assert_eq!(pop(&f).await, ["Added foo=5", "Replaced foo=6"]);
}

#[tokio::test]
async fn enqueueing_with_and_without_a_lister() {
    let f = fifo();
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("bar", 15)).unwrap();
    // Not queued and not known: ignored.
    f.delete(obj("baz", 20)).unwrap();
    assert_eq!(pop(&f).await, ["Added foo=10"]);
    assert_eq!(pop(&f).await, ["Updated bar=15"]);
    assert!(f.is_empty());

    let f = fifo_knowing(&[("foo", 5), ("bar", 6), ("baz", 7)]);
    f.add(obj("foo", 10)).unwrap();
    f.update(obj("bar", 15)).unwrap();
    // Known: queued.
    f.delete(obj("baz", 20)).unwrap();
    assert_eq!(pop(&f).await, ["Added foo=10"]);
    assert_eq!(pop(&f).await, ["Updated bar=15"]);
    assert_eq!(pop(&f).await, ["Deleted baz=20"]);
    assert!(f.is_empty());
}

/// seed-semantics §3.10: a delete for a key neither queued nor known is ignored.
#[tokio::test]
async fn delete_of_unknown_key_is_ignored() {
    let f = fifo_knowing(&[("known", 1)]);
    f.delete(obj("unknown", 1)).unwrap();
    assert!(f.is_empty());
    // It still counts as populating the queue, as in client-go.
    assert!(f.has_synced());
    f.delete(obj("known", 1)).unwrap();
    assert_eq!(pop(&f).await, ["Deleted known=1"]);
}

#[tokio::test]
async fn delete_existing_non_propagated() {
    let f = fifo_knowing(&[]);
    f.add(obj("foo", 5)).unwrap();
    f.delete(obj("foo", 6)).unwrap();
    assert_eq!(
        describe_all(&f.get_by_key("foo").unwrap()),
        ["Added foo=5", "Deleted foo=6"]
    );
}

/// seed-semantics §3.1: a resync replays the known objects as `Sync` deltas (no server
/// involved) and skips keys with queued deltas.
#[tokio::test]
async fn resync_replays_known_objects_and_skips_queued_keys() {
    let f = fifo_knowing(&[("foo", 5)]);
    f.resync().unwrap();
    assert_eq!(describe_all(&f.get_by_key("foo").unwrap()), ["Sync foo=5"]);

    // client-go's TestDeltaFIFO_UpdateResyncRace.
    let f = fifo_knowing(&[("foo", 5)]);
    f.update(obj("foo", 6)).unwrap();
    f.resync().unwrap();
    assert_eq!(pop(&f).await, ["Updated foo=6"]);
    assert!(f.is_empty());

    // client-go's TestDeltaFIFO_ResyncNonExisting.
    let f = fifo_knowing(&[("foo", 5)]);
    f.delete(obj("foo", 10)).unwrap();
    f.resync().unwrap();
    assert_eq!(
        describe_all(&f.get_by_key("foo").unwrap()),
        ["Deleted foo=10"]
    );

    // Without known objects, a resync does nothing.
    let f = fifo();
    f.resync().unwrap();
    assert!(f.is_empty());
}

/// seed-semantics §3.8 and client-go's `TestDeltaFIFO_HasSynced`.
#[tokio::test]
async fn has_synced_counts_the_first_replace_popped_not_enqueued() {
    let f = fifo();
    assert!(!f.has_synced());

    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    assert!(f.has_synced(), "an add before any replace syncs");

    let f = fifo();
    f.replace(vec![], "0").unwrap();
    assert!(f.has_synced(), "an empty initial list syncs at once");

    let f = fifo();
    f.replace(vec![obj("a", 1), obj("b", 2)], "0").unwrap();
    assert!(!f.has_synced(), "enqueued is not synced");
    pop(&f).await;
    assert!(!f.has_synced());
    pop(&f).await;
    assert!(f.has_synced());

    // Duplicate keys in one list count once.
    let f = fifo();
    f.replace(vec![obj("a", 1), obj("a", 2)], "0").unwrap();
    pop(&f).await;
    assert!(f.has_synced());

    // A second replace does not move the goal: only the first list's keys count.
    let f = fifo();
    f.replace(vec![obj("a", 1)], "0").unwrap();
    f.replace(vec![obj("a", 1), obj("b", 1), obj("c", 1)], "0")
        .unwrap();
    assert_eq!(pop(&f).await, ["Sync a=1", "Sync a=1"]);
    assert!(f.has_synced(), "b and c came with the second list");
    assert_eq!(f.len(), 2);
}

/// client-go's `TestDeltaFIFO_HasSyncedCorrectOnDeletion`: the tombstones of the first
/// replace count, and everything popped before the sync is in the initial list.
#[tokio::test]
async fn has_synced_correct_on_deletion() {
    let f = fifo_knowing(&[("foo", 5), ("bar", 6), ("baz", 7)]);
    f.replace(vec![obj("foo", 5)], "0").unwrap();
    for expected in [
        "Sync foo=5",
        "Deleted tombstone bar=6",
        "Deleted tombstone baz=7",
    ] {
        assert!(!f.has_synced());
        let (deltas, initial) = pop_initial(&f).await;
        assert_eq!(deltas, [expected]);
        assert!(initial, "{expected} is in the initial list");
    }
    assert!(f.has_synced());
    f.add(obj("new", 1)).unwrap();
    let (_, initial) = pop_initial(&f).await;
    assert!(!initial);
}

/// Not synced while the last initial item is still being processed: `has_synced` implies
/// the whole initial list is in the consumer's store (client-go holds the lock for this).
#[tokio::test]
async fn has_synced_only_after_the_last_initial_item_is_processed() {
    let f = fifo();
    f.replace(vec![obj("a", 1)], "0").unwrap();
    f.pop(|_, initial| {
        assert!(initial);
        assert!(!f.has_synced(), "not synced during processing");
        Ok(())
    })
    .await
    .unwrap();
    assert!(f.has_synced());
}

#[tokio::test]
async fn add_replace_leaves_one_key() {
    let f = fifo();
    f.add(obj("foo", 10)).unwrap();
    f.replace(vec![obj("foo", 15)], "0").unwrap();
    assert_eq!(pop(&f).await, ["Added foo=10", "Sync foo=15"]);
    assert!(f.get(&obj("foo", 0)).unwrap().is_none());
    assert!(f.is_empty());
}

/// client-go's `TestDeltaFIFO_transformer`: every object from the server is transformed
/// once; tombstones and syncs are not transformed again.
#[tokio::test]
async fn transformer_runs_once_per_object_and_never_on_tombstones() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let mark = TransformFunc::new(move |cm: &mut ConfigMap| {
        counted.fetch_add(1, Ordering::SeqCst);
        let xfrm = cm.metadata.annotations.get_or_insert_with(Default::default);
        let n: u32 = xfrm.get("xfrm").map_or(0, |v| v.parse().unwrap());
        xfrm.insert("xfrm".into(), (n + 1).to_string());
        Ok(())
    });
    let f = DeltaFifo::new(DeltaFifoOptions {
        transformer: Some(mark),
        ..DeltaFifoOptions::default()
    });
    f.add(obj("foo", 10)).unwrap();
    f.add(obj("bar", 11)).unwrap();
    f.update(obj("foo", 12)).unwrap();
    f.delete(obj("foo", 15)).unwrap();
    f.replace(vec![], "").unwrap();
    f.add(obj("bar", 16)).unwrap();
    f.replace(vec![], "").unwrap();
    assert_eq!(f.list_keys(), ["foo", "bar"]);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        5,
        "five objects came from the server"
    );

    let xfrm = |cm: &ConfigMap| cm.metadata.annotations.as_ref().unwrap()["xfrm"].clone();
    let foo = f.pop(|_, _| Ok(())).await.unwrap();
    let newest = foo.newest().unwrap();
    assert_eq!(common::describe(newest), "Deleted foo=15");
    assert_eq!(xfrm(newest.object().unwrap()), "1");
    let bar = f.pop(|_, _| Ok(())).await.unwrap();
    let newest = bar.newest().unwrap();
    assert_eq!(common::describe(newest), "Deleted tombstone bar=16");
    assert_eq!(xfrm(newest.object().unwrap()), "1");
}

#[tokio::test]
async fn transformer_error_is_typed_and_queues_nothing() {
    let f = DeltaFifo::new(DeltaFifoOptions {
        transformer: Some(TransformFunc::new(|_: &mut ConfigMap| Err("no".into()))),
        ..DeltaFifoOptions::default()
    });
    let err = f.add(obj("foo", 1)).unwrap_err();
    assert_eq!(err.to_string(), "couldn't transform object foo: no");
    assert!(f.is_empty());
}

#[tokio::test]
async fn key_of_unwraps_tombstones() {
    let f = fifo();
    assert_eq!(f.key_of(&Delta::Added(obj("foo", 1))).unwrap(), "foo");
    let tombstone = Delta::Deleted(DeletedObject::Tombstone(DeletedFinalStateUnknown {
        key: "ns/gone".into(),
        obj: None,
    }));
    assert_eq!(f.key_of(&tombstone).unwrap(), "ns/gone");
    assert!(f.key_of(&Delta::SyncAll).is_err());
}

#[tokio::test]
async fn key_function_errors_are_typed() {
    let f = DeltaFifo::new(DeltaFifoOptions {
        key_function: Some(KeyFunc::new(|cm: &ConfigMap| {
            Err(kclient_cache::KeyFuncError::new(cm, "no key today"))
        })),
        ..DeltaFifoOptions::default()
    });
    let err = f.add(obj("foo", 1)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "couldn't create key for object foo: no key today"
    );
    assert!(f.replace(vec![obj("foo", 1)], "0").is_err());
    assert!(f.is_empty());
}

/// seed-semantics §3.9: a closed FIFO drains, then reports closed; a waiting pop wakes.
#[tokio::test(start_paused = true)]
async fn closed_fifo_drains_before_reporting_closed() {
    let f = Arc::new(fifo());
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 2)).unwrap();
    f.close();
    assert!(f.is_closed());
    assert_eq!(pop(&*f).await, ["Added a=1"]);
    assert_eq!(pop(&*f).await, ["Added b=2"]);
    assert!(matches!(f.pop(|_, _| Ok(())).await, Err(PopError::Closed)));

    // A pop waiting on an empty FIFO is woken by close.
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

/// A waiting pop wakes when something is added.
#[tokio::test(start_paused = true)]
async fn pop_waits_for_an_add() {
    let f = Arc::new(fifo());
    let waiter = tokio::spawn({
        let f = Arc::clone(&f);
        async move { describe_all(&f.pop(|_, _| Ok(())).await.unwrap()) }
    });
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    f.add(obj("late", 1)).unwrap();
    assert_eq!(waiter.await.unwrap(), ["Added late=1"]);
}

/// seed-semantics §3.9 (requeue): `Requeue` puts the deltas back only if nothing newer was
/// queued for the key meanwhile; `Failed` drops them.
#[tokio::test]
async fn requeue_puts_deltas_back_unless_newer_were_queued() {
    let f = fifo();
    f.add(obj("foo", 1)).unwrap();
    let err = f
        .pop(|_, _| Err(ProcessError::Requeue("try again".into())))
        .await
        .unwrap_err();
    assert!(matches!(err, PopError::Process { requeued: true, .. }));
    assert_eq!(
        err.to_string(),
        "processing popped deltas failed (requeued): try again"
    );
    assert_eq!(pop(&f).await, ["Added foo=1"]);

    // Newer deltas queued during processing win.
    f.add(obj("bar", 1)).unwrap();
    let err = f
        .pop(|_, _| {
            f.update(obj("bar", 2)).unwrap();
            Err(ProcessError::Requeue("again".into()))
        })
        .await
        .unwrap_err();
    assert!(matches!(err, PopError::Process { .. }));
    assert_eq!(pop(&f).await, ["Updated bar=2"]);

    f.add(obj("baz", 1)).unwrap();
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
    assert!(f.is_empty(), "a failed pop drops its deltas");

    // add_if_not_present directly.
    f.add(obj("q", 1)).unwrap();
    f.add_if_not_present(Deltas::from(vec![Delta::Added(obj("q", 0))]))
        .unwrap();
    assert_eq!(pop(&f).await, ["Added q=1"]);
    f.add_if_not_present(Deltas::from(vec![Delta::Added(obj("q", 0))]))
        .unwrap();
    assert_eq!(pop(&f).await, ["Added q=0"]);
}

/// The process function runs without the FIFO's lock: it can call back into the FIFO (with
/// client-go's locked pop this would deadlock).
#[tokio::test]
async fn process_runs_without_the_fifo_lock() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.pop(|_, _| {
        f.add(obj("b", 2)).unwrap();
        assert_eq!(f.len(), 1);
        assert!(f.has_synced());
        assert_eq!(f.list_keys(), ["b"]);
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(pop(&f).await, ["Added b=2"]);
}

/// While a key is processed outside the lock, a replace, a delete and a resync see it as the
/// indexer will have it: no missed deletion, no duplicate, exactly as under client-go's lock.
#[tokio::test]
async fn replace_delete_and_resync_during_processing_see_the_processed_state() {
    let indexer = Indexer::new(
        KeyFunc::deletion_handling_meta_namespace(),
        Indexers::<ConfigMap>::new(),
    );
    let known: Arc<dyn KeyListerGetter<ConfigMap>> = Arc::new(indexer.clone());
    let f = DeltaFifo::new(DeltaFifoOptions {
        known_objects: Some(known),
        emit_delta_type_replaced: true,
        ..DeltaFifoOptions::default()
    });
    let apply = |deltas: &[Delta<ConfigMap>]| {
        process_deltas(&indexer, deltas, false, |_| {}).unwrap();
    };

    // "a" is being added when a relist no longer has it: a tombstone must follow.
    f.add(obj("a", 1)).unwrap();
    f.pop(|deltas, _| {
        f.replace(vec![], "5").unwrap();
        apply(deltas);
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(f.list_keys(), ["a"], "the relist queued a tombstone for a");
    let tombstone = f
        .pop(|deltas, _| {
            apply(deltas);
            Ok(())
        })
        .await
        .unwrap();
    assert_eq!(describe_all(&tombstone), ["Deleted tombstone a=1"]);
    assert!(indexer.is_empty());

    // "b" is being deleted: a delete arriving meanwhile is ignored, a relist makes no
    // tombstone for it, and a resync replays nothing for it.
    indexer.add(obj("b", 1)).unwrap();
    f.delete(obj("b", 1)).unwrap();
    f.pop(|deltas, _| {
        f.delete(obj("b", 1)).unwrap();
        f.replace(vec![], "6").unwrap();
        f.resync().unwrap();
        apply(deltas);
        Ok(())
    })
    .await
    .unwrap();
    assert!(f.is_empty(), "nothing queued for b: {:?}", f.list_keys());

    // "c" is being updated: a resync replays the new state.
    indexer.add(obj("c", 1)).unwrap();
    f.update(obj("c", 2)).unwrap();
    f.pop(|deltas, _| {
        f.resync().unwrap();
        apply(deltas);
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(pop(&f).await, ["Sync c=2"]);
}

#[derive(Default)]
struct Recorded {
    depth: AtomicUsize,
    popped: AtomicUsize,
    latencies: AtomicUsize,
}

impl CacheMetrics for Recorded {
    fn fifo_depth(&self, depth: usize) {
        self.depth.store(depth, Ordering::SeqCst);
    }
    fn popped(&self, deltas: usize) {
        self.popped.fetch_add(deltas, Ordering::SeqCst);
    }
    fn process_latency(&self, _: Duration) {
        self.latencies.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn metrics_report_depth_pops_and_latency() {
    let metrics = Arc::new(Recorded::default());
    let f = DeltaFifo::new(DeltaFifoOptions {
        metrics: Some(metrics.clone()),
        ..DeltaFifoOptions::default()
    });
    f.add(obj("a", 1)).unwrap();
    f.update(obj("a", 2)).unwrap();
    f.add(obj("b", 1)).unwrap();
    assert_eq!(metrics.depth.load(Ordering::SeqCst), 2);
    pop(&f).await;
    assert_eq!(metrics.depth.load(Ordering::SeqCst), 1);
    assert_eq!(metrics.popped.load(Ordering::SeqCst), 2);
    assert_eq!(metrics.latencies.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn list_and_get_show_the_queue() {
    let f = fifo();
    f.add(obj("a", 1)).unwrap();
    f.add(obj("b", 1)).unwrap();
    f.update(obj("a", 2)).unwrap();
    let listed: Vec<i64> = f.list().iter().map(|o| val(o)).collect();
    assert_eq!(listed, [2, 1]);
    assert_eq!(f.get(&obj("a", 0)).unwrap().unwrap().len(), 2);
    assert_eq!(
        format!("{:?}", f.get_by_key("a").unwrap()),
        "[Added, Updated]"
    );
}
