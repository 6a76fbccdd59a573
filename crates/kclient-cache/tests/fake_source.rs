//! `testing::FakeControllerSource` behaves as client-go's `FakeControllerSource`
//! (tools/cache/testing/fake_controller_source.go), so a ported client-go test gets the same
//! result: watches replay its change log, one from before the log is `410 Expired`, one from
//! the future an error; `reset_watch` closes watches and flushes the log; a list error stays
//! until cleared; streaming lists are refused unless asked for.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::testing::FakeControllerSource;
use kclient_cache::{SharedIndexInformer, SharedIndexInformerOptions};
use kclient_core::{ApiError, ListOptions, ListerWatcher, StatusReason, WatchEvent};
use tokio_util::sync::CancellationToken;

fn cm(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.name = Some(name.into());
    cm
}

fn from(rv: &str) -> ListOptions {
    ListOptions::default().resource_version(rv)
}

async fn watch_error(source: &FakeControllerSource<ConfigMap>, rv: &str) -> ApiError {
    match source.watch(&from(rv)).await {
        Ok(_) => panic!("a watch from {rv} opened"),
        Err(e) => e,
    }
}

#[tokio::test]
async fn watches_replay_the_change_log_and_refuse_what_it_no_longer_has() {
    let source = FakeControllerSource::<ConfigMap>::new();
    source.add(cm("a"));
    source.add(cm("b"));
    source.modify(cm("a"));
    // From resourceVersion 1: the changes after it.
    let mut watch = source.watch(&from("1")).await.unwrap();
    for expected in ["b@2", "a@3"] {
        let Some(Ok(WatchEvent::Added(o) | WatchEvent::Modified(o))) = watch.next().await else {
            panic!("no event")
        };
        let seen = format!(
            "{}@{}",
            o.metadata.name.unwrap(),
            o.metadata.resource_version.unwrap()
        );
        assert_eq!(seen, expected);
    }
    // A future resourceVersion is an error, not a hang.
    assert_eq!(watch_error(&source, "9").await.code(), 400);

    // reset_watch ends the open watches and flushes the log: resourceVersions before it
    // are gone (410 Expired, so an informer relists); from the current one it works.
    source.reset_watch();
    assert!(watch.next().await.is_none(), "the open watch ended");
    let expired = watch_error(&source, "2").await;
    assert_eq!(
        (expired.code(), expired.reason()),
        (410, &StatusReason::Expired)
    );
    assert!(source.watch(&from("3")).await.is_ok());
    source.add(cm("c"));
    assert_eq!(source.resource_version(), "4");
    assert!(source.watch(&from("3")).await.is_ok());
}

#[tokio::test]
async fn a_list_error_stays_until_cleared() {
    let source = FakeControllerSource::<ConfigMap>::new();
    source.fail_next_list(ApiError::too_many_requests("once", 1));
    source.set_list_error(Some(ApiError::internal_error("until cleared")));
    let first = source.list(&ListOptions::default()).await.unwrap_err();
    assert_eq!(first.code(), 429, "the queued one-shot error first");
    for _ in 0..3 {
        let err = source.list(&ListOptions::default()).await.unwrap_err();
        assert_eq!(err.code(), 500);
    }
    source.set_list_error(None);
    assert!(source.list(&ListOptions::default()).await.is_ok());
}

/// client-go's fake does not implement streaming lists, so informers on it list and then
/// watch; asked to, this one serves them.
#[tokio::test(start_paused = true)]
async fn streaming_lists_are_refused_unless_asked_for() {
    let source = FakeControllerSource::<ConfigMap>::new();
    source.add(cm("a"));
    let streaming = ListOptions::default().send_initial_events(true);
    assert_eq!(
        source.watch(&streaming).await.err().map(|e| e.code()),
        Some(400)
    );

    // An informer (streaming lists on by default) falls back to list and watch.
    let informer = SharedIndexInformer::new(source.clone(), SharedIndexInformerOptions::default());
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    tokio::time::timeout(Duration::from_secs(60), async {
        while !informer.has_synced() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the informer synced");
    assert_eq!(source.list_calls(), 1);
    assert_eq!(informer.get_store().len(), 1);
    cancel.cancel();
    task.await.unwrap();

    source.serve_streaming_lists(true);
    assert!(source.watch(&streaming).await.is_ok());
}
