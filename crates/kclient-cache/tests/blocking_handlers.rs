//! Handlers that block (a synchronous HTTP call, a lock held elsewhere, a `std::thread::sleep`)
//! on a multi-thread runtime: each listener's calls run on the process's handler threads, so a
//! blocked handler delays only its own listener — not the runtime's workers, not the other
//! handlers of its informer, not other informers (client-go gives every listener a
//! goroutine). An adversarial run found two blocking handlers stalling every informer of a
//! 2-worker runtime.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::testing::FakeControllerSource;
use kclient_cache::{ResourceEventHandlerFuncs, SharedIndexInformer, SharedIndexInformerOptions};
use tokio_util::sync::CancellationToken;

use crate::common::obj;

const UPDATES: i64 = 200;

/// A handler that blocks its thread on its first update until the test releases it, saying
/// so on `blocked` first.
fn blocking_handler(
    gate: Arc<parking_lot::Mutex<mpsc::Receiver<()>>>,
    blocked: tokio::sync::mpsc::UnboundedSender<()>,
) -> ResourceEventHandlerFuncs<ConfigMap> {
    let first = AtomicBool::new(true);
    ResourceEventHandlerFuncs::new().update_func(move |_, _| {
        if first.swap(false, Ordering::SeqCst) {
            let _ = blocked.send(());
            let _ = gate.lock().recv();
        }
    })
}

/// A handler that reports when it has seen every update.
fn counting_handler(
    done: tokio::sync::mpsc::UnboundedSender<&'static str>,
    name: &'static str,
) -> ResourceEventHandlerFuncs<ConfigMap> {
    let seen = AtomicUsize::new(0);
    ResourceEventHandlerFuncs::new().update_func(move |_, _| {
        if seen.fetch_add(1, Ordering::SeqCst) + 1 == UPDATES as usize {
            let _ = done.send(name);
        }
    })
}

/// Two informers on a runtime of two workers, each with a handler that blocks (together
/// they would hold both workers) and a healthy one: once both blocking handlers are blocked
/// (on the first update), the healthy handlers still see every update, while the blocked
/// ones are still blocked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_handler_delays_only_its_own_listener() {
    let (release, gate) = mpsc::channel::<()>();
    let gate = Arc::new(parking_lot::Mutex::new(gate));
    let (blocked_tx, mut blocked_rx) = tokio::sync::mpsc::unbounded_channel();
    let released = Arc::new(AtomicBool::new(false));
    // Bounds a regression (a hang) without deciding the outcome: the outcome is whether
    // the healthy handlers finished before the blocked ones were released.
    let watchdog = {
        let (release, released) = (release.clone(), released.clone());
        std::thread::spawn(move || {
            std::thread::park_timeout(Duration::from_secs(60));
            released.store(true, Ordering::SeqCst);
            for _ in 0..2 {
                let _ = release.send(());
            }
        })
    };

    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let mut sources = Vec::new();
    let mut runs = Vec::new();
    for name in ["first", "second"] {
        let source = FakeControllerSource::<ConfigMap>::new();
        source.add((*obj("a", 0)).clone());
        let informer =
            SharedIndexInformer::new(source.clone(), SharedIndexInformerOptions::default());
        informer
            .add_event_handler(blocking_handler(gate.clone(), blocked_tx.clone()))
            .unwrap();
        informer
            .add_event_handler(counting_handler(done_tx.clone(), name))
            .unwrap();
        runs.push(tokio::spawn({
            let (informer, cancel) = (informer.clone(), cancel.clone());
            async move { informer.run(cancel).await }
        }));
        assert!(
            kclient_cache::wait_for_cache_sync(&cancel, &[informer.synced()]).await,
            "synced"
        );
        sources.push(source);
    }
    let update_all = |v: i64| {
        for source in &sources {
            source.modify((*obj("a", v)).clone());
        }
    };
    // The first update blocks both blocking handlers; the rest come once they are blocked
    // (a blocker that is never called fails the test rather than hanging it).
    update_all(1);
    for _ in 0..2 {
        tokio::time::timeout(Duration::from_secs(120), blocked_rx.recv())
            .await
            .expect("both blocking handlers are called")
            .unwrap();
    }
    assert!(
        !released.load(Ordering::SeqCst),
        "both blocking handlers were called before the watchdog released them"
    );
    for v in 2..=UPDATES {
        update_all(v);
    }
    let mut finished = vec![done_rx.recv().await.unwrap(), done_rx.recv().await.unwrap()];
    finished.sort();
    assert_eq!(finished, ["first", "second"]);
    assert!(
        !released.load(Ordering::SeqCst),
        "the healthy handlers finished while the blocking ones were still blocked"
    );

    watchdog.thread().unpark();
    watchdog.join().unwrap();
    cancel.cancel();
    for run in runs {
        run.await.unwrap();
    }
}

/// A handler declared non-blocking (`ResourceEventHandlerFuncs::non_blocking`, like
/// `EnqueueObjectKey` and the reconcile runtime's handlers) is called by its listener's
/// task, on one of the runtime's workers; a handler that may block (the default) on the
/// process's handler threads (`kclient-lanes`), never on a worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_blocking_handler_is_called_by_its_listeners_task() {
    let source = FakeControllerSource::<ConfigMap>::new();
    source.add((*obj("a", 0)).clone());
    let informer = SharedIndexInformer::new(source.clone(), SharedIndexInformerOptions::default());
    let (seen_tx, mut seen_rx) = tokio::sync::mpsc::unbounded_channel();
    for non_blocking in [true, false] {
        let seen_tx = seen_tx.clone();
        let handler = ResourceEventHandlerFuncs::new().update_func(move |_, _| {
            let thread = std::thread::current().name().unwrap_or_default().to_owned();
            let _ = seen_tx.send((non_blocking, thread));
        });
        let handler = if non_blocking {
            handler.non_blocking()
        } else {
            handler
        };
        informer.add_event_handler(handler).unwrap();
    }
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    assert!(kclient_cache::wait_for_cache_sync(&cancel, &[informer.synced()]).await);
    source.modify((*obj("a", 1)).clone());
    let mut threads = Vec::new();
    for _ in 0..2 {
        threads.push(seen_rx.recv().await.unwrap());
    }
    threads.sort();
    assert!(!threads[0].0);
    assert_eq!(threads[0].1, "kclient-lanes", "{threads:?}");
    assert!(threads[1].0);
    assert_ne!(
        threads[1].1, "kclient-lanes",
        "a runtime worker: {threads:?}"
    );
    cancel.cancel();
    run.await.unwrap();
}

/// Whether a handler may block passes through the wrappers that hold it.
#[test]
fn may_block_passes_through_wrappers() {
    use kclient_cache::{EnqueueObjectKey, FilteringResourceEventHandler, ResourceEventHandler};
    let blocking = ResourceEventHandlerFuncs::<ConfigMap>::new();
    let quick = ResourceEventHandlerFuncs::<ConfigMap>::new().non_blocking();
    assert!(blocking.may_block());
    assert!(!quick.may_block());
    assert!(!Arc::new(quick.clone()).may_block());
    let boxed: Box<dyn ResourceEventHandler<ConfigMap>> = Box::new(quick.clone());
    assert!(!boxed.may_block());
    assert!(!FilteringResourceEventHandler::new(|_: &ConfigMap| true, quick).may_block());
    assert!(FilteringResourceEventHandler::new(|_: &ConfigMap| true, blocking).may_block());
    assert!(!EnqueueObjectKey::<ConfigMap>::new(|_| {}).may_block());
}
