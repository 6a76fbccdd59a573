//! Triggers that are not informers, on tokio's paused clock: kube-rs's `reconcile_on` (a
//! stream of keys) and `reconcile_all_on` (every cached object), and a watch added to a
//! running controller (controller-runtime's `Controller.Watch` after `Start`).

use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kclient_cache::SharedInformerFactory;
use kclient_controller::{Controller, ControllerStopped};
use kclient_core::{CancellationToken, ObjectKey, ResourceExt};

use crate::support::{config_map, secret, Count, Probe, Sources};

async fn settle() {
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// kube-rs's `reconcile_on`: each key from the stream is reconciled; a key without an
/// object is not; the stream's end stops nothing.
#[tokio::test(start_paused = true)]
async fn reconcile_on_reconciles_the_keys_of_a_stream() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "a", &[]));
    sources.config_maps.add(config_map("default", "b", &[]));
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let (wake, keys) = mpsc::unbounded::<ObjectKey>();
    let probe = Arc::new(Probe::default());
    let controller = Controller::<ConfigMap, _>::new("config-maps", &factory).reconcile_on(keys);
    let stop = CancellationToken::new();
    let task = tokio::spawn(controller.run(Count::new(&probe), stop.clone()));
    settle().await;
    assert_eq!((probe.count("default/a"), probe.count("default/b")), (1, 1));
    wake.unbounded_send(ObjectKey::namespaced("default", "a"))
        .unwrap();
    wake.unbounded_send(ObjectKey::namespaced("default", "gone"))
        .unwrap();
    settle().await;
    assert_eq!((probe.count("default/a"), probe.count("default/b")), (2, 1));
    assert_eq!(probe.count("default/gone"), 0);
    drop(wake);
    settle().await;
    sources.config_maps.add(config_map("default", "c", &[]));
    settle().await;
    assert_eq!(
        probe.count("default/c"),
        1,
        "still running after the stream ended"
    );
    stop.cancel();
    task.await.unwrap().unwrap();
    factory.shutdown().await;
}

/// kube-rs's `reconcile_all_on`: every object in the cache, on each item.
#[tokio::test(start_paused = true)]
async fn reconcile_all_on_reconciles_every_cached_object() {
    let sources = Sources::default();
    for name in ["a", "b", "c"] {
        sources.config_maps.add(config_map("default", name, &[]));
    }
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let (tick, ticks) = mpsc::unbounded::<()>();
    let probe = Arc::new(Probe::default());
    let controller =
        Controller::<ConfigMap, _>::new("config-maps", &factory).reconcile_all_on(ticks);
    let stop = CancellationToken::new();
    let task = tokio::spawn(controller.run(Count::new(&probe), stop.clone()));
    settle().await;
    assert_eq!(probe.total(), 3);
    tick.unbounded_send(()).unwrap();
    settle().await;
    assert_eq!(probe.total(), 6);
    for name in ["a", "b", "c"] {
        assert_eq!(probe.count(&format!("default/{name}")), 2);
    }
    stop.cancel();
    task.await.unwrap().unwrap();
    factory.shutdown().await;
}

/// controller-runtime's `Watch` on a started controller: the new informer starts, its
/// initial list and later events map to keys; after the run, adding fails.
#[tokio::test(start_paused = true)]
async fn a_watch_added_to_a_running_controller_starts_and_maps() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("default", "web", &[]));
    sources
        .secrets
        .add(secret("default", "web-creds", &[("app", "web")]));
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let probe = Arc::new(Probe::default());
    let controller = Controller::<ConfigMap, _>::new("config-maps", &factory);
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let task = tokio::spawn(controller.run(Count::new(&probe), stop.clone()));
    settle().await;
    assert_eq!(probe.count("default/web"), 1);

    handle
        .watches(|s: &Secret| {
            s.labels()
                .get("app")
                .map(|app| ObjectKey::namespaced(s.namespace().unwrap_or_default(), app.clone()))
        })
        .unwrap();
    settle().await;
    assert_eq!(
        probe.count("default/web"),
        2,
        "the Secret's initial list maps"
    );
    sources
        .secrets
        .add(secret("default", "web-tls", &[("app", "web")]));
    settle().await;
    assert_eq!(probe.count("default/web"), 3);

    stop.cancel();
    task.await.unwrap().unwrap();
    assert_eq!(handle.owns::<Secret>(), Err(ControllerStopped));
    factory.shutdown().await;
}
