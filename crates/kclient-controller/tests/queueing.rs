//! The controller's queue as controller-runtime's priority queue and kube-rs's scheduler
//! have it, on tokio's paused clock: an event replaces a waiting requeue, the initial list
//! queues at low priority behind real changes, and a reconcile chooses its requeue's
//! priority.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::SharedInformerFactory;
use kclient_controller::{Action, Controller, ReconcileContext, Reconciler};
use kclient_core::{CancellationToken, ResourceExt};
use parking_lot::Mutex;

use crate::support::{config_map, Sources};

/// A reconciler that records the names it reconciles and answers with `act(name, call)`
/// (`call` counts this name's reconciles from 0), after sleeping `busy(name, call)`.
struct Recording<A, B> {
    order: Arc<Mutex<Vec<String>>>,
    calls: Arc<Mutex<std::collections::HashMap<String, usize>>>,
    act: A,
    busy: B,
}

impl<A, B> Recording<A, B>
where
    A: Fn(&str, usize) -> Action + Send + Sync + 'static,
    B: Fn(&str, usize) -> Duration + Send + Sync + 'static,
{
    fn new(act: A, busy: B) -> (Self, Arc<Mutex<Vec<String>>>) {
        let order = Arc::new(Mutex::new(Vec::new()));
        (
            Self {
                order: Arc::clone(&order),
                calls: Arc::default(),
                act,
                busy,
            },
            order,
        )
    }
}

impl<A, B> Reconciler<ConfigMap> for Recording<A, B>
where
    A: Fn(&str, usize) -> Action + Send + Sync + 'static,
    B: Fn(&str, usize) -> Duration + Send + Sync + 'static,
{
    type Error = std::convert::Infallible;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        _: &ReconcileContext,
    ) -> Result<Action, Self::Error> {
        let name = cm.name_any().to_owned();
        let call = {
            let mut calls = self.calls.lock();
            let n = calls.entry(name.clone()).or_default();
            *n += 1;
            *n - 1
        };
        self.order.lock().push(name.clone());
        tokio::time::sleep((self.busy)(&name, call)).await;
        Ok((self.act)(&name, call))
    }
}

/// Runs a one-worker ConfigMap controller on `sources` until the returned token fires.
fn run<R: Reconciler<ConfigMap>>(sources: &Sources, reconciler: R) -> CancellationToken {
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let controller = Controller::new("config-maps", &factory);
    let shutdown = CancellationToken::new();
    tokio::spawn(controller.run(reconciler, shutdown.clone()));
    shutdown
}

/// kube-rs's scheduler keeps one entry per object and the sooner wins; controller-runtime's
/// priority queue "retains the lowest after duration": an update handled while a
/// `requeue(10s)` waits consumes the requeue, which does not fire afterwards.
#[tokio::test(start_paused = true)]
async fn an_event_replaces_a_waiting_requeue() {
    let sources = Sources::default();
    let a = sources.config_maps.add(config_map("default", "a", &[]));
    let (reconciler, order) = Recording::new(
        |_, call| {
            if call == 0 {
                Action::requeue(Duration::from_secs(10))
            } else {
                Action::await_change()
            }
        },
        |_, _| Duration::ZERO,
    );
    let stop = run(&sources, reconciler);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(*order.lock(), ["a"]);
    let mut changed = a.clone();
    changed.data = Some([("k".to_owned(), "v".to_owned())].into());
    sources.config_maps.modify(changed);
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(
        *order.lock(),
        ["a", "a"],
        "the requeue fired after the event"
    );
    stop.cancel();
}

/// controller-runtime's `handler.LowPriority` for the initial list
/// (`designs/priorityqueue.md`): while the startup backlog drains, a real change is served
/// before the keys of the initial list still waiting.
#[tokio::test(start_paused = true)]
async fn a_change_overtakes_the_initial_list() {
    let sources = Sources::default();
    let mut objects = Vec::new();
    for name in ["a", "b", "c", "d", "e"] {
        objects.push(sources.config_maps.add(config_map("default", name, &[])));
    }
    let (reconciler, order) = Recording::new(
        |_, _| Action::await_change(),
        |name, _| {
            if name == "a" {
                Duration::from_secs(5)
            } else {
                Duration::ZERO
            }
        },
    );
    let stop = run(&sources, reconciler);
    // "a" is being reconciled (for five seconds); "e" changes meanwhile.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(*order.lock(), ["a"]);
    let mut changed = objects[4].clone();
    changed.data = Some([("k".to_owned(), "v".to_owned())].into());
    sources.config_maps.modify(changed);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(*order.lock(), ["a", "e", "b", "c", "d"]);
    stop.cancel();
}

/// controller-runtime's `Result.Priority`: a requeue is at the priority the key was handed
/// out with (here the initial list's low one), unless the reconcile sets another.
#[tokio::test(start_paused = true)]
async fn a_reconcile_chooses_its_requeue_priority() {
    for (priority, expected) in [
        (None, ["a", "b", "c", "a"]),
        (Some(0), ["a", "a", "b", "c"]),
    ] {
        let sources = Sources::default();
        for name in ["a", "b", "c"] {
            sources.config_maps.add(config_map("default", name, &[]));
        }
        let requeued = Arc::new(AtomicUsize::new(0));
        let (reconciler, order) = Recording::new(
            {
                let requeued = Arc::clone(&requeued);
                move |name, _| {
                    if name == "a" && requeued.fetch_add(1, Ordering::SeqCst) == 0 {
                        let again = Action::requeue(Duration::ZERO);
                        priority.map_or(again, |p| again.with_priority(p))
                    } else {
                        Action::await_change()
                    }
                }
            },
            |_, _| Duration::ZERO,
        );
        let stop = run(&sources, reconciler);
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(*order.lock(), expected, "priority {priority:?}");
        stop.cancel();
    }
}
