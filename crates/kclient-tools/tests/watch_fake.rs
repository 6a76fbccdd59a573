//! The watch utilities against kclient-fake with fault injection: `until_with_sync` survives
//! dropped watches and a compaction (a relist), `RetryWatcher` neither replays nor skips an
//! event across dropped watches, `deployment_available` waits for a status written later.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_core::{GroupResource, ListOptions, WatchEvent};
use kclient_fake::FakeApiServer;
use kclient_rest::{Config, RestClient};
use kclient_tools::watch::{
    condition, conditions, until_with_sync, Condition, Precondition, RetryWatcher,
};
use kclient_typed::Clientset;
use serde_json::json;
use tokio::sync::oneshot;

fn clientset(server: &FakeApiServer) -> Clientset {
    let mut config = Config::new(server.url());
    config.qps = None;
    Clientset::from_client(RestClient::new(config).unwrap())
}

fn configmaps() -> GroupResource {
    GroupResource::new("", "configmaps")
}

fn seed(server: &FakeApiServer, name: &str, value: &str) {
    server
        .seed(json!({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": name, "namespace": "default"},
                     "data": {"v": value}}))
        .unwrap();
}

fn change(server: &FakeApiServer, name: &str, value: &str) {
    server
        .modify(&configmaps(), "default", name, |o| {
            o["data"]["v"] = json!(value)
        })
        .unwrap();
}

fn value_of(cm: &ConfigMap) -> &str {
    cm.data
        .as_ref()
        .and_then(|d| d.get("v"))
        .map_or("", String::as_str)
}

/// Met when ConfigMap `a` holds `v = want`.
fn a_holds(want: &'static str) -> Condition<ConfigMap> {
    conditions::named(
        "default",
        "a",
        condition(move |e: &WatchEvent<Arc<ConfigMap>>| {
            Ok(e.object().is_some_and(|cm| value_of(cm) == want))
        }),
    )
}

/// A precondition that says when the cache has synced, and lets the wait go on.
fn signal_synced(synced: oneshot::Sender<usize>) -> Precondition<ConfigMap> {
    Box::new(move |indexer| {
        let _ = synced.send(indexer.list().len());
        Ok(false)
    })
}

#[tokio::test(start_paused = true)]
async fn until_with_sync_survives_dropped_watches_and_a_compaction() {
    let server = FakeApiServer::builder().start().await.unwrap();
    seed(&server, "a", "1");
    seed(&server, "b", "1");
    let config_maps = clientset(&server).core_v1().config_maps("default");
    let (synced, on_sync) = oneshot::channel();
    let (first_met, on_first_met) = oneshot::channel();
    let mut first_met = Some(first_met);
    let mut holds_2 = a_holds("2");
    // The first condition says when it is met, so that the second fault comes after it.
    let signalling: Condition<ConfigMap> = condition(move |e| {
        let met = holds_2(e)?;
        if met {
            first_met.take().map(|s| s.send(()));
        }
        Ok(met)
    });
    let wait = tokio::spawn(until_with_sync(
        config_maps,
        Some(signal_synced(synced)),
        [signalling, a_holds("4")],
    ));
    assert_eq!(
        on_sync.await.unwrap(),
        2,
        "the precondition sees the synced cache"
    );

    // Dropped watches: the informer resumes; the first condition is met.
    server.faults().drop_watches();
    change(&server, "a", "2");
    on_first_met.await.unwrap();
    // A compaction while the watch stalls: a 410 and a relist; `a` went 3 → 4 unseen by
    // any watch, and the relist delivers 4.
    server.faults().stall_watches();
    change(&server, "a", "3");
    change(&server, "b", "2");
    change(&server, "a", "4");
    server.faults().compact_history();
    server.faults().resume_watches();

    // (A bound on the paused clock, so that a regression fails instead of hanging.)
    let last = tokio::time::timeout(std::time::Duration::from_secs(600), wait)
        .await
        .expect("the wait ends")
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        matches!(&last, WatchEvent::Modified(cm) if value_of(cm) == "4"),
        "{last:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn until_with_sync_ends_at_once_when_the_precondition_holds() {
    let server = FakeApiServer::builder().start().await.unwrap();
    seed(&server, "a", "1");
    let config_maps = clientset(&server).core_v1().config_maps("default");
    // `kubectl wait --for=delete` on an object already gone: nothing to wait for.
    let gone: Precondition<ConfigMap> =
        Box::new(|indexer| Ok(indexer.get_by_key("default/gone").is_none()));
    let result = until_with_sync(config_maps.clone(), Some(gone), [conditions::deleted()]).await;
    assert!(result.unwrap().is_none());

    let failing: Precondition<ConfigMap> = Box::new(|_| Err("cannot tell".into()));
    let result = until_with_sync(config_maps, Some(failing), [conditions::deleted()]).await;
    assert!(result.unwrap_err().to_string().contains("cannot tell"));
}

#[tokio::test(start_paused = true)]
async fn a_retry_watcher_neither_replays_nor_skips_across_dropped_watches() {
    let server = Arc::new(FakeApiServer::builder().start().await.unwrap());
    seed(&server, "a", "0");
    let config_maps = clientset(&server).core_v1().config_maps("default");
    let start = config_maps.list(&ListOptions::default()).await.unwrap();
    let mut watcher = RetryWatcher::new(start.resource_version().unwrap(), config_maps).unwrap();
    let writer = {
        let server = Arc::clone(&server);
        tokio::spawn(async move {
            for i in 1..=30 {
                change(&server, "a", &i.to_string());
                if i % 7 == 0 {
                    server.faults().drop_watches();
                }
                tokio::task::yield_now().await;
            }
        })
    };
    let mut values = Vec::new();
    while values.len() < 30 {
        match watcher.next().await.unwrap() {
            WatchEvent::Modified(cm) => values.push(value_of(&cm).parse::<u32>().unwrap()),
            other => panic!("unexpected {other:?}"),
        }
    }
    writer.await.unwrap();
    assert_eq!(
        values,
        (1..=30).collect::<Vec<_>>(),
        "each change once, in order"
    );
}

#[tokio::test(start_paused = true)]
async fn deployment_available_waits_for_the_status_of_the_latest_generation() {
    let server = FakeApiServer::builder().start().await.unwrap();
    let clientset = clientset(&server);
    let deployments = clientset.apps_v1().deployments("default");
    let web: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))
    .unwrap();
    let web = deployments.create(&web, &Default::default()).await.unwrap();
    let wait = tokio::spawn(until_with_sync(
        deployments.clone(),
        None,
        [conditions::named(
            "default",
            "web",
            conditions::deployment_available(),
        )],
    ));
    // A status for an older generation says Available: not enough.
    let mut status = web.clone();
    status.status = Some(
        serde_json::from_value(json!({
            "observedGeneration": 0, "replicas": 2, "availableReplicas": 2,
            "conditions": [{"type": "Available", "status": "True"}]
        }))
        .unwrap(),
    );
    let stale = deployments
        .update_status(&status, &Default::default())
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(5)).await; // paused clock: everything idles
    assert!(
        !wait.is_finished(),
        "a status of an older generation does not count"
    );
    // The controller catches up.
    let mut status = stale;
    status.status.as_mut().unwrap().observed_generation = web.metadata.generation;
    deployments
        .update_status(&status, &Default::default())
        .await
        .unwrap();
    let last = wait.await.unwrap().unwrap().unwrap();
    let WatchEvent::Modified(done) = last else {
        panic!("{last:?}")
    };
    assert_eq!(
        done.status.as_ref().unwrap().observed_generation,
        web.metadata.generation
    );
}

/// Issue 29: a `RetryWatcher` whose watch kclient-fake hangs (open and silent past its
/// `timeoutSeconds`, `hang_watches`: a broken server or proxy) ends it at its client-side
/// deadline and watches again from the last delivered resourceVersion, so the change made
/// meanwhile arrives: over plain HTTP/1.1, and over HTTPS, where ALPN picks HTTP/2.
#[tokio::test(start_paused = true)]
async fn a_retry_watcher_recovers_from_a_hung_watch_over_http1_and_http2() {
    for https in [false, true] {
        let builder = FakeApiServer::builder();
        let builder = if https { builder.https() } else { builder };
        let server = builder.start().await.unwrap();
        seed(&server, "a", "1");
        let rest = RestClient::new(server.config().unwrap()).unwrap();
        let config_maps = Clientset::from_client(rest)
            .core_v1()
            .config_maps("default");
        let from = server.resource_version().to_string();
        let mut watcher = RetryWatcher::new(&from, config_maps).unwrap();
        change(&server, "a", "2");
        let first = watcher.next().await.unwrap();
        assert_eq!(first.object().map(value_of), Some("2"));

        server.faults().hang_watches();
        change(&server, "a", "3");
        // (A bound on the paused clock past any deadline, so that a regression fails.)
        let next = tokio::time::timeout(std::time::Duration::from_secs(3600), watcher.next())
            .await
            .expect("the hung watch was given up on")
            .unwrap();
        assert_eq!(next.object().map(value_of), Some("3"), "https: {https}");
    }
}
