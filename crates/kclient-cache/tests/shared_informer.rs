//! SharedIndexInformer, its listeners and handler registrations, against the in-memory
//! FakeControllerSource: what client-go's shared_informer_test.go and
//! processor_listener_test.go cover, and the informer behaviours of seed-semantics section 3
//! by name. Timing runs on tokio's paused clock; waiting for handlers yields to the runtime
//! and never sleeps.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{start_informer as start, until};
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::testing::FakeControllerSource;
use kclient_cache::{
    wait_for_cache_sync, wait_for_named_cache_sync, EnqueueObjectKey, FifoKind, HandlerOptions,
    Indexers, InformerError, InformerSynced, ResourceEventHandler, ResourceEventHandlerFuncs,
    ResourceEventHandlerRegistration, SharedIndexInformer, SharedIndexInformerOptions,
    TransformFunc,
};
use kclient_core::{ApiError, DeletedObject, ResourceExt};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

fn cm(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.name = Some(name.into());
    cm
}

fn cm_with(name: &str, value: &str) -> ConfigMap {
    let mut cm = cm(name);
    cm.data = Some([("v".to_string(), value.to_string())].into());
    cm
}

/// A handler recording what it is told, as `add ns/a initial`, `update ns/a 3->4`, `delete
/// ns/a` (or `delete-tombstone ns/a`).
#[derive(Default)]
struct TestListener {
    events: Mutex<Vec<String>>,
}

impl TestListener {
    fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.events.lock())
    }

    /// What it was told, sorted (the cache hands out whole lists in no particular order).
    fn take_sorted(&self) -> Vec<String> {
        let mut events = self.take();
        events.sort();
        events
    }

    fn count(&self) -> usize {
        self.events.lock().len()
    }
}

fn key(o: &ConfigMap) -> String {
    format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any())
}

impl ResourceEventHandler<ConfigMap> for TestListener {
    fn on_add(&self, obj: &Arc<ConfigMap>, initial: bool) {
        let tag = if initial { " initial" } else { "" };
        self.events.lock().push(format!("add {}{tag}", key(obj)));
    }

    fn on_update(&self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        self.events.lock().push(format!(
            "update {} {}->{}",
            key(new),
            old.resource_version().unwrap_or(""),
            new.resource_version().unwrap_or("")
        ));
    }

    fn on_delete(&self, obj: &DeletedObject<ConfigMap>) {
        let line = match obj {
            DeletedObject::Object(o) => format!("delete {}", key(o)),
            DeletedObject::Tombstone(t) => format!("delete-tombstone {}", t.key),
        };
        self.events.lock().push(line);
    }
}

/// Lets every task run until it waits.
async fn settle() {
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
}

fn informer(
    source: &FakeControllerSource<ConfigMap>,
    resync: Duration,
) -> SharedIndexInformer<ConfigMap> {
    SharedIndexInformer::new(
        source.clone(),
        SharedIndexInformerOptions::default()
            .resync_period(resync)
            .indexers(Indexers::namespace()),
    )
}

async fn synced(cancel: &CancellationToken, of: &[InformerSynced]) {
    assert!(
        tokio::time::timeout(Duration::from_secs(60), wait_for_cache_sync(cancel, of))
            .await
            .expect("synced in time"),
        "synced before cancellation"
    );
}

fn two_objects() -> FakeControllerSource<ConfigMap> {
    let source = FakeControllerSource::new();
    source.add(cm("pod1"));
    source.add(cm("pod2"));
    source
}

/// client-go's TestListenerResyncPeriods, and seed-semantics 3.2: sync notifications go
/// only to the listeners that are due, each on its own period.
#[tokio::test(start_paused = true)]
async fn sync_notifications_go_only_to_listeners_that_are_due() {
    let source = two_objects();
    let informer = informer(&source, Duration::from_secs(1));
    let listeners: Vec<_> = (1..=3).map(|_| TestListener::new()).collect();
    let registrations: Vec<_> = listeners
        .iter()
        .zip(1..)
        .map(|(l, secs)| {
            informer
                .add_event_handler_with_resync_period(Arc::clone(l), Duration::from_secs(secs))
                .unwrap()
        })
        .collect();
    let (cancel, task) = start(&informer);
    let all: Vec<_> = registrations.iter().map(|r| r.synced()).collect();
    synced(&cancel, &all).await;
    for l in &listeners {
        assert_eq!(
            l.take_sorted(),
            ["add ns/pod1 initial", "add ns/pod2 initial"]
        );
    }

    // A resync redelivers the cached objects as updates with old and new the same (pod1 is
    // at resourceVersion 1, pod2 at 2).
    let both = vec![
        "update ns/pod1 1->1".to_string(),
        "update ns/pod2 2->2".to_string(),
    ];

    for (second, due) in [
        (1, [true, false, false]),
        (2, [true, true, false]),
        (3, [true, false, true]),
    ] {
        tokio::time::advance(Duration::from_secs(1)).await;
        for (l, due) in listeners.iter().zip(due) {
            if due {
                until(&format!("resync at {second}s"), || l.count() == 2).await;
            }
        }
        settle().await;
        for (i, (l, due)) in listeners.iter().zip(due).enumerate() {
            let got = l.take_sorted();
            if due {
                assert_eq!(got, both, "listener {} at {second}s", i + 1);
            } else {
                assert!(
                    got.is_empty(),
                    "listener {} at {second}s got {got:?}",
                    i + 1
                );
            }
        }
    }
    cancel.cancel();
    task.await.unwrap();
}

/// client-go's TestResyncCheckPeriod: before the start, the informer checks as often as its
/// most frequent handler asks, and every handler's period follows; after the start a shorter
/// period is raised to the check period. Periods below one second are raised to it.
#[tokio::test(start_paused = true)]
async fn resync_check_period_follows_the_handlers() {
    let source = FakeControllerSource::<ConfigMap>::new();
    let informer = informer(&source, Duration::from_secs(12 * 3600));
    let period = |r: &ResourceEventHandlerRegistration<ConfigMap>| r.resync_period();
    let l1 = informer
        .add_event_handler_with_resync_period(TestListener::new(), Duration::ZERO)
        .unwrap();
    assert_eq!(
        informer.resync_check_period(),
        Duration::from_secs(12 * 3600)
    );
    assert_eq!(period(&l1), Duration::ZERO);

    let l2 = informer
        .add_event_handler_with_resync_period(TestListener::new(), Duration::from_secs(60))
        .unwrap();
    assert_eq!(informer.resync_check_period(), Duration::from_secs(60));
    assert_eq!(
        (period(&l1), period(&l2)),
        (Duration::ZERO, Duration::from_secs(60))
    );

    let l3 = informer
        .add_event_handler_with_resync_period(TestListener::new(), Duration::from_secs(55))
        .unwrap();
    assert_eq!(informer.resync_check_period(), Duration::from_secs(55));
    assert_eq!(period(&l3), Duration::from_secs(55));

    let l4 = informer
        .add_event_handler_with_resync_period(TestListener::new(), Duration::from_secs(5))
        .unwrap();
    assert_eq!(informer.resync_check_period(), Duration::from_secs(5));
    assert_eq!(
        [&l1, &l2, &l3, &l4].map(period),
        [0, 60, 55, 5].map(Duration::from_secs)
    );

    // Below the minimum: one second.
    let l5 = informer
        .add_event_handler_with_resync_period(TestListener::new(), Duration::from_millis(10))
        .unwrap();
    assert_eq!(period(&l5), Duration::from_secs(1));
    assert_eq!(informer.resync_check_period(), Duration::from_secs(1));

    // After the start the check period is fixed: a shorter request is raised to it.
    let (cancel, task) = start(&informer);
    synced(&cancel, &[informer.synced()]).await;
    let informer2 = self::informer(&source, Duration::from_secs(10));
    let (cancel2, task2) = start(&informer2);
    synced(&cancel2, &[informer2.synced()]).await;
    let late = informer2
        .add_event_handler_with_resync_period(TestListener::new(), Duration::from_secs(2))
        .unwrap();
    assert_eq!(period(&late), Duration::from_secs(10));
    assert_eq!(informer2.resync_check_period(), Duration::from_secs(10));
    cancel.cancel();
    cancel2.cancel();
    task.await.unwrap();
    task2.await.unwrap();
}

/// client-go's TestAddWhileActive and seed-semantics 3.14: a handler added to a running
/// informer first gets every cached object as an add (in the initial list), then the
/// changes, never one twice; its registration syncs once it has handled the replay.
#[tokio::test(start_paused = true)]
async fn late_add_event_handler_replays_the_cache_as_adds() {
    let source = two_objects();
    let informer = informer(&source, Duration::ZERO);
    let first = TestListener::new();
    informer.add_event_handler(Arc::clone(&first)).unwrap();
    let (cancel, task) = start(&informer);
    synced(&cancel, &[informer.synced()]).await;

    let late = TestListener::new();
    let registration = informer.add_event_handler(Arc::clone(&late)).unwrap();
    synced(&cancel, &[registration.synced()]).await;
    let mut replayed = late.take();
    replayed.sort();
    assert_eq!(replayed, ["add ns/pod1 initial", "add ns/pod2 initial"]);

    source.add(cm("pod3"));
    until("both see pod3", || late.count() == 1 && first.count() == 3).await;
    assert_eq!(late.take(), ["add ns/pod3"]);
    cancel.cancel();
    task.await.unwrap();
}

/// client-go's TestAddOnStoppedSharedInformer and TestRemoveOnStoppedSharedInformer, and
/// seed-semantics 3.14's second half (client-go ≥ 1.26 returns the error).
#[tokio::test(start_paused = true)]
async fn adding_to_a_stopped_informer_fails_and_removing_does_nothing() {
    let source = two_objects();
    let informer = informer(&source, Duration::ZERO);
    let registration = informer.add_event_handler(TestListener::new()).unwrap();
    assert!(!informer.is_started() && !informer.is_stopped());
    let (cancel, task) = start(&informer);
    synced(&cancel, &[informer.synced()]).await;
    assert!(informer.is_started() && !informer.is_stopped());
    cancel.cancel();
    task.await.unwrap();
    assert!(informer.is_stopped());

    let err = informer.add_event_handler(TestListener::new()).unwrap_err();
    assert!(matches!(err, InformerError::Stopped { .. }), "{err}");
    assert!(err.to_string().contains("because it has stopped already"));
    informer.remove_event_handler(&registration).unwrap();
    assert!(registration.is_removed());
}

/// client-go's TestRemoveWhileActive, TestSharedInformerMultipleRegistration,
/// TestRemovingRemovedSharedInformer and TestSharedInformerRemoveForeignHandler.
#[tokio::test(start_paused = true)]
async fn removing_handlers() {
    let source = two_objects();
    let informer = informer(&source, Duration::ZERO);
    let other = self::informer(&source, Duration::ZERO);
    let listener = TestListener::new();
    let one = informer.add_event_handler(Arc::clone(&listener)).unwrap();
    let two = informer.add_event_handler(Arc::clone(&listener)).unwrap();
    let foreign = other.add_event_handler(TestListener::new()).unwrap();
    assert_eq!(informer.handler_count(), 2);
    let (cancel, task) = start(&informer);
    synced(&cancel, &[one.synced(), two.synced()]).await;
    assert_eq!(listener.take().len(), 4, "registered twice, told twice");

    // A foreign registration is not removed from this informer, nor from its own.
    informer.remove_event_handler(&foreign).unwrap();
    assert_eq!(informer.handler_count(), 2);
    assert!(!foreign.is_removed());

    informer.remove_event_handler(&one).unwrap();
    assert_eq!(informer.handler_count(), 1);
    source.add(cm("pod3"));
    until("the remaining registration", || listener.count() == 1).await;
    settle().await;
    assert_eq!(listener.take(), ["add ns/pod3"]);

    // Removing again is a no-op; removing the last one silences the handler.
    informer.remove_event_handler(&one).unwrap();
    informer.remove_event_handler(&two).unwrap();
    assert_eq!(informer.handler_count(), 0);
    source.add(cm("pod4"));
    until("the cache has pod4", || informer.get_store().len() == 4).await;
    settle().await;
    assert!(listener.take().is_empty());
    cancel.cancel();
    task.await.unwrap();
}

/// client-go's TestStateSharedInformer and TestAddOnStoppedSharedInformer (v0.30+ rules):
/// indexers can be added before the start and while running — built over what is cached —
/// but not after a stop; the transform and the watch-error handler only before the start.
#[tokio::test(start_paused = true)]
#[allow(deprecated)] // client-go's `SetTransform` and `SetWatchErrorHandler`, kept deprecated
async fn add_indexers_until_stopped_and_set_transform_only_before_the_start() {
    let source = two_objects();
    let informer = informer(&source, Duration::ZERO);
    let by_name = Indexers::new().with("by-name", |o: &ConfigMap| {
        Ok(vec![o.name_any().to_string()])
    });
    informer.add_indexers(by_name).unwrap();
    let clash = Indexers::new().with("by-name", |o: &ConfigMap| {
        Ok(vec![o.name_any().to_string()])
    });
    assert!(matches!(
        informer.add_indexers(clash),
        Err(InformerError::Index(_))
    ));
    let (cancel, task) = start(&informer);
    synced(&cancel, &[informer.synced()]).await;
    assert_eq!(
        informer
            .get_indexer()
            .by_index("by-name", "pod2")
            .unwrap()
            .len(),
        1
    );
    let late = Indexers::new().with("late", |o: &ConfigMap| Ok(vec![o.name_any().to_string()]));
    informer.add_indexers(late).unwrap();
    assert_eq!(
        informer
            .get_indexer()
            .by_index("late", "pod1")
            .unwrap()
            .len(),
        1,
        "an index added while running covers the objects already cached"
    );
    assert!(matches!(
        informer.set_transform(TransformFunc::strip_managed_fields()),
        Err(InformerError::AlreadyStarted)
    ));
    assert!(matches!(
        informer.set_watch_error_handler(|_, _| {}),
        Err(InformerError::AlreadyStarted)
    ));
    cancel.cancel();
    task.await.unwrap();
    let after = Indexers::new().with("after", |o: &ConfigMap| Ok(vec![o.name_any().to_string()]));
    assert!(matches!(
        informer.add_indexers(after),
        Err(InformerError::IndexersAfterStop)
    ));
}

/// client-go's TestSharedInformerTransformer: the transform runs before the cache and the
/// handlers see anything.
#[tokio::test(start_paused = true)]
async fn the_transform_applies_before_the_cache_and_the_handlers() {
    let source = FakeControllerSource::new();
    source.add(cm_with("pod1", "lower"));
    let informer = SharedIndexInformer::new(
        source.clone(),
        SharedIndexInformerOptions::default()
            .indexers(Indexers::namespace())
            .transform(TransformFunc::new(|o: &mut ConfigMap| {
                if let Some(data) = o.data.as_mut() {
                    for v in data.values_mut() {
                        *v = v.to_uppercase();
                    }
                }
                Ok(())
            })),
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    informer
        .add_event_handler(ResourceEventHandlerFuncs::new().add_func(
            move |o: &Arc<ConfigMap>, _| {
                record.lock().push(o.data.as_ref().unwrap()["v"].clone());
            },
        ))
        .unwrap();
    let (cancel, task) = start(&informer);
    synced(&cancel, &[informer.synced()]).await;
    source.add(cm_with("pod2", "second"));
    until("pod2 handled", || seen.lock().len() == 2).await;
    assert_eq!(*seen.lock(), ["LOWER", "SECOND"]);
    let cached = informer.lister().namespaced("ns").get("pod2").unwrap();
    assert_eq!(cached.data.as_ref().unwrap()["v"], "SECOND");
    cancel.cancel();
    task.await.unwrap();
}

/// Every FIFO an informer can run on in this build.
fn fifo_kinds() -> Vec<FifoKind> {
    #[allow(unused_mut)] // without the feature, there is only one
    let mut kinds = vec![FifoKind::Real];
    #[cfg(feature = "informer-delta-fifo")]
    kinds.push(FifoKind::Delta);
    kinds
}

/// client-go's TestSharedInformerWatchDisruption: while the watch is down objects change;
/// the informer resumes from its last resourceVersion, every handler sees the changes, and
/// the cache equals the source.
#[tokio::test(start_paused = true)]
async fn watch_disruption_loses_nothing() {
    for fifo in fifo_kinds() {
        let source = two_objects();
        let informer = SharedIndexInformer::new(
            source.clone(),
            SharedIndexInformerOptions::default().fifo(fifo),
        );
        let listener = TestListener::new();
        informer.add_event_handler(Arc::clone(&listener)).unwrap();
        let (cancel, task) = start(&informer);
        synced(&cancel, &[informer.synced()]).await;
        listener.take();

        source.reset_watch();
        source.modify_drop_watch(cm_with("pod1", "changed"));
        source.delete_drop_watch(cm("pod2"));
        source.add_drop_watch(cm("pod3"));
        // The reflector backs off after the closed watch; let the clock move.
        tokio::time::advance(Duration::from_secs(2)).await;
        until("the cache caught up", || {
            informer.get_store().len() == 2 && informer.get_store().get_by_key("ns/pod3").is_some()
        })
        .await;
        until("the handler caught up", || listener.count() >= 3).await;
        let mut events = listener.take();
        events.sort();
        assert!(
            events.contains(&"add ns/pod3".to_string()),
            "{fifo:?}: {events:?}"
        );
        assert!(
            events.iter().any(|e| e.starts_with("update ns/pod1")),
            "{fifo:?}: {events:?}"
        );
        assert!(
            events
                .iter()
                .any(|e| e.starts_with("delete") && e.ends_with("ns/pod2")),
            "{fifo:?}: {events:?}"
        );
        let mut cached: Vec<_> = informer.get_store().list().iter().map(|o| key(o)).collect();
        cached.sort();
        assert_eq!(cached, ["ns/pod1", "ns/pod3"]);
        assert_eq!(
            informer.last_sync_resource_version(),
            source.resource_version()
        );
        cancel.cancel();
        task.await.unwrap();
    }
}

/// client-go's TestSharedInformerErrorHandling: a failed list reaches the watch-error
/// handler, and the informer recovers.
#[tokio::test(start_paused = true)]
async fn list_errors_reach_the_watch_error_handler() {
    let source = two_objects();
    source.fail_next_list(ApiError::internal_error("Access Denied"));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&errors);
    let informer = SharedIndexInformer::new(
        source.clone(),
        SharedIndexInformerOptions::default()
            .reflector_options(kclient_cache::ReflectorOptions::default().use_watch_list(false))
            .watch_error_handler(move |_, err| record.lock().push(err.to_string())),
    );
    let (cancel, task) = start(&informer);
    synced(&cancel, &[informer.synced()]).await;
    let errors = errors.lock().clone();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("Access Denied"), "{errors:?}");
    assert_eq!(informer.get_store().len(), 2);
    cancel.cancel();
    task.await.unwrap();
}

/// A handler that panics is caught and logged; it goes on with the next notification, the
/// other handlers and the informer are unaffected.
#[tokio::test(start_paused = true)]
async fn a_panicking_handler_never_kills_the_informer() {
    let source = two_objects();
    let informer = informer(&source, Duration::ZERO);
    let handled = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&handled);
    let panicky = informer
        .add_event_handler(ResourceEventHandlerFuncs::new().add_func(
            move |o: &Arc<ConfigMap>, _| {
                if o.name_any() == "pod1" {
                    panic!("handler bug");
                }
                count.fetch_add(1, Ordering::SeqCst);
            },
        ))
        .unwrap();
    let calm = TestListener::new();
    informer.add_event_handler(Arc::clone(&calm)).unwrap();
    let (cancel, task) = start(&informer);
    synced(&cancel, &[panicky.synced()]).await;
    source.add(cm("pod3"));
    until("pod3 reached both", || {
        handled.load(Ordering::SeqCst) == 2 && calm.count() == 3
    })
    .await;
    assert_eq!(panicky.panics(), 1);
    assert_eq!(panicky.handled(), 3);
    assert!(!informer.is_stopped());
    cancel.cancel();
    task.await.unwrap();
}

/// `is_in_initial_list` is true for the first list's objects, false afterwards; an
/// informer syncs on an empty list too.
#[tokio::test(start_paused = true)]
async fn is_in_initial_list_marks_the_first_list_only() {
    let source = FakeControllerSource::new();
    let informer = informer(&source, Duration::ZERO);
    let listener = TestListener::new();
    let registration = informer.add_event_handler(Arc::clone(&listener)).unwrap();
    let (cancel, task) = start(&informer);
    synced(&cancel, &[informer.synced(), registration.synced()]).await;
    source.add(cm("later"));
    until("later", || listener.count() == 1).await;
    assert_eq!(listener.take(), ["add ns/later"]);
    cancel.cancel();
    task.await.unwrap();
}

/// A registration syncs only once its own handler has handled the initial list: the
/// informer can be synced while a slow handler is still behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_syncs_when_its_handler_has_handled_the_initial_list() {
    let source = two_objects();
    let informer = informer(&source, Duration::ZERO);
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let slow = informer
        .add_event_handler(ResourceEventHandlerFuncs::new().add_func(
            move |_: &Arc<ConfigMap>, _| {
                gate.lock().recv().unwrap();
            },
        ))
        .unwrap();
    let (cancel, task) = start(&informer);
    synced(&cancel, &[informer.synced()]).await;
    assert!(!slow.has_synced());
    assert_eq!(slow.pending(), 2);
    release.send(()).unwrap();
    release.send(()).unwrap();
    synced(&cancel, &[slow.synced()]).await;
    assert_eq!(slow.pending(), 0);
    cancel.cancel();
    task.await.unwrap();
}

/// Seed-semantics 3.13: handlers never block distribution. One handler is stuck; the
/// others and the cache go on; the stuck one catches up, in order, when released.
#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_slow_handler_delays_only_itself() {
    let source = FakeControllerSource::new();
    let informer = informer(&source, Duration::ZERO);
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let gate = Mutex::new(Some(gate));
    let stuck_seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&stuck_seen);
    let stuck = informer
        .add_event_handler(ResourceEventHandlerFuncs::new().add_func(
            move |o: &Arc<ConfigMap>, _| {
                if let Some(gate) = gate.lock().take() {
                    gate.recv().unwrap();
                }
                record.lock().push(o.name_any().to_string());
            },
        ))
        .unwrap();
    let fast = TestListener::new();
    informer.add_event_handler(Arc::clone(&fast)).unwrap();
    let (cancel, task) = start(&informer);
    synced(&cancel, &[informer.synced()]).await;
    for i in 0..100 {
        source.add(cm(&format!("o{i:03}")));
    }
    let wait = async {
        while fast.count() < 100 || informer.get_store().len() < 100 {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .expect("the fast handler and the cache went on");
    assert!(stuck_seen.lock().is_empty());
    assert!(stuck.pending() >= 99);
    release.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(30), async {
        while stuck_seen.lock().len() < 100 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the stuck handler caught up");
    let names = stuck_seen.lock().clone();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "in order");
    cancel.cancel();
    task.await.unwrap();
}

/// With a bound, a stuck handler holds the informer back instead of growing its queue:
/// the FIFO keeps what the handler cannot take yet, and nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_bounded_handler_holds_the_informer_back_and_loses_nothing() {
    let source = FakeControllerSource::new();
    let informer = informer(&source, Duration::ZERO);
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let gate = Mutex::new(Some(gate));
    let seen = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&seen);
    let bounded = informer
        .add_event_handler_with_options(
            ResourceEventHandlerFuncs::new().add_func(move |_: &Arc<ConfigMap>, _| {
                if let Some(gate) = gate.lock().take() {
                    gate.recv().unwrap();
                }
                count.fetch_add(1, Ordering::SeqCst);
            }),
            HandlerOptions {
                name: Some("bounded".into()),
                max_pending: Some(5),
                ..HandlerOptions::default()
            },
        )
        .unwrap();
    assert_eq!(bounded.name(), "bounded");
    let (cancel, task) = start(&informer);
    synced(&cancel, &[informer.synced()]).await;
    for i in 0..50 {
        source.add(cm(&format!("o{i:03}")));
    }
    tokio::time::timeout(Duration::from_secs(30), async {
        while bounded.pending() < 5 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();
    // Give the informer every chance to run ahead.
    for _ in 0..1000 {
        tokio::task::yield_now().await;
    }
    let cached = informer.get_store().len();
    assert!(cached < 50, "the informer waited (cached {cached})");
    // Waiting for room before each pop, with pops of at most the bound (5), the queue
    // stays under twice the bound.
    assert!(bounded.pending() < 10, "pending {}", bounded.pending());
    release.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(30), async {
        while seen.load(Ordering::SeqCst) < 50 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("everything delivered");
    assert_eq!(informer.get_store().len(), 50);
    cancel.cancel();
    task.await.unwrap();
}

/// Seed-semantics 3.32: the informer stops its reflector and cache first, its handlers
/// strictly after; once `run` returns, no watch is open and no handler is called again.
#[tokio::test(start_paused = true)]
async fn stop_ordering_reflector_first_then_handlers() {
    let source = two_objects();
    let informer = informer(&source, Duration::ZERO);
    let listener = TestListener::new();
    let registration = informer.add_event_handler(Arc::clone(&listener)).unwrap();
    let (cancel, task) = start(&informer);
    synced(&cancel, &[registration.synced()]).await;
    assert_eq!(source.open_watches(), 1);
    cancel.cancel();
    task.await.unwrap();
    assert_eq!(source.open_watches(), 0);
    assert!(registration.is_removed(), "the listener was stopped");
    source.add(cm("after"));
    settle().await;
    assert_eq!(listener.take().len(), 2, "nothing after the stop");
}

/// A second run returns at once; the first goes on.
#[tokio::test(start_paused = true)]
async fn running_twice_is_refused() {
    let source = two_objects();
    let informer = informer(&source, Duration::ZERO);
    let (cancel, task) = start(&informer);
    synced(&cancel, &[informer.synced()]).await;
    informer.run(cancel.clone()).await;
    assert!(!informer.is_stopped());
    cancel.cancel();
    task.await.unwrap();
}

/// client-go's WaitForCacheSync: false when cancelled first; a polled function works too.
#[tokio::test(start_paused = true)]
async fn wait_for_cache_sync_returns_false_when_cancelled() {
    let source = two_objects();
    let informer = informer(&source, Duration::ZERO);
    let cancel = CancellationToken::new();
    cancel.cancel();
    assert!(!wait_for_cache_sync(&cancel, &[informer.synced()]).await);
    assert!(!wait_for_named_cache_sync("test", &cancel, &[informer.synced()]).await);

    let flag = Arc::new(AtomicUsize::new(0));
    let polled = {
        let flag = Arc::clone(&flag);
        InformerSynced::from_fn(move || flag.fetch_add(1, Ordering::SeqCst) >= 3)
    };
    let live = CancellationToken::new();
    assert!(wait_for_named_cache_sync("test", &live, &[polled]).await);
    assert!(flag.load(Ordering::SeqCst) >= 4);
}

/// Seed-semantics 3.11 at the informer level: an `Added` for a cached object (a relist
/// that finds it changed) is an update with the cached object as old.
#[tokio::test(start_paused = true)]
async fn a_relisted_change_is_an_update_from_the_cached_object() {
    let source = two_objects();
    let informer = informer(&source, Duration::ZERO);
    let listener = TestListener::new();
    informer.add_event_handler(Arc::clone(&listener)).unwrap();
    let (cancel, task) = start(&informer);
    synced(&cancel, &[informer.synced()]).await;
    listener.take();
    // A change the watch never sees, then a forced relist (the next list after a 410).
    // (reset_watch flushes the source's change log, as client-go's fake does: the re-watch
    // from resourceVersion 2 gets a 410 and the informer relists.)
    source.modify_drop_watch(cm_with("pod1", "x"));
    source.reset_watch();
    // The backoff before the relist: time moves in small steps so that it passes however
    // late the reflector starts its sleep.
    for _ in 0..100 {
        if listener.count() >= 2 {
            break;
        }
        tokio::time::advance(Duration::from_millis(100)).await;
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
    }
    until("the relist", || listener.count() >= 2).await;
    assert_eq!(source.list_calls(), 2);
    // The unchanged object is replayed too: a handler with no resync period of its own is
    // among the syncing listeners (client-go's processor adds every listener to both sets).
    assert_eq!(
        listener.take(),
        ["update ns/pod1 1->3", "update ns/pod2 2->2"]
    );
    cancel.cancel();
    task.await.unwrap();
}

/// EnqueueObjectKey: one sink gets the key of every add, update and delete — a deletion the
/// informer learnt of from a relist (a tombstone) included — and `filter_updates` drops the
/// updates it rejects, never adds or deletes.
#[tokio::test(start_paused = true)]
async fn enqueue_object_key_feeds_every_event_tombstones_included() {
    for fifo in fifo_kinds() {
        let source = two_objects();
        let informer = SharedIndexInformer::new(
            source.clone(),
            SharedIndexInformerOptions::default().fifo(fifo),
        );
        let keys = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&keys);
        informer
            .add_event_handler(EnqueueObjectKey::new(move |key| sink.lock().push(key)))
            .unwrap();
        let (cancel, task) = start(&informer);
        synced(&cancel, &[informer.synced()]).await;
        until("both adds", || keys.lock().len() == 2).await;
        let mut added = std::mem::take(&mut *keys.lock());
        added.sort();
        assert_eq!(added, ["ns/pod1", "ns/pod2"], "{fifo:?}");

        source.modify(cm_with("pod1", "changed"));
        until("the update", || keys.lock().len() == 1).await;
        // A deletion the watch never told: the relist's tombstone carries the key.
        source.reset_watch();
        source.delete_drop_watch(cm("pod2"));
        tokio::time::advance(Duration::from_secs(2)).await;
        until("the delete", || {
            keys.lock().contains(&"ns/pod2".to_string())
        })
        .await;
        let seen = std::mem::take(&mut *keys.lock());
        assert_eq!(
            seen.first().map(String::as_str),
            Some("ns/pod1"),
            "{fifo:?}"
        );
        assert_eq!(seen.last().map(String::as_str), Some("ns/pod2"), "{fifo:?}");
        cancel.cancel();
        task.await.unwrap();
    }
}

#[test]
fn enqueue_object_key_filters_updates_only() {
    let keys = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&keys);
    let handler = EnqueueObjectKey::new(move |key| sink.lock().push(key))
        .filter_updates(|old: &ConfigMap, new: &ConfigMap| old.data != new.data);
    let (a, b) = (Arc::new(cm_with("x", "1")), Arc::new(cm_with("x", "2")));
    handler.on_update(&a, &a);
    assert!(
        keys.lock().is_empty(),
        "a resync with the same data is dropped"
    );
    handler.on_update(&a, &b);
    handler.on_add(&a, false);
    handler.on_delete(&DeletedObject::Object(Arc::clone(&a)));
    handler.on_delete(&DeletedObject::Tombstone(
        kclient_core::DeletedFinalStateUnknown {
            key: "ns/gone".into(),
            obj: None,
        },
    ));
    assert_eq!(*keys.lock(), ["ns/x", "ns/x", "ns/x", "ns/gone"]);
    let mut cluster_scoped = ConfigMap::default();
    cluster_scoped.metadata.name = Some("global".into());
    handler.on_add(&Arc::new(cluster_scoped), true);
    assert_eq!(keys.lock().last().map(String::as_str), Some("global"));
}
