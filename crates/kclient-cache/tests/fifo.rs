//! `Fifo`, client-go's plain `FIFO`, against the cases of client-go's fifo_test.go.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::{Fifo, KeyFunc, PopError, ProcessError};

fn cm(name: &str, v: i64) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.data = Some([("v".to_owned(), v.to_string())].into());
    Arc::new(cm)
}

fn v(obj: &ConfigMap) -> String {
    format!(
        "{}={}",
        obj.metadata.name.as_deref().unwrap_or_default(),
        obj.data.as_ref().unwrap()["v"]
    )
}

async fn pop(fifo: &Fifo<ConfigMap>) -> String {
    v(&fifo.pop(|_, _| Ok(())).await.unwrap())
}

fn fifo() -> Fifo<ConfigMap> {
    Fifo::new(KeyFunc::meta_namespace())
}

/// `TestFIFO_addUpdate`: an update of a queued object replaces it in its place; it is popped
/// once, in its latest state; a deleted object is never popped.
#[tokio::test]
async fn updates_coalesce_and_deletes_remove() {
    let fifo = fifo();
    fifo.add(cm("foo", 10)).unwrap();
    fifo.add(cm("bar", 1)).unwrap();
    fifo.update(cm("foo", 15)).unwrap();
    fifo.add(cm("gone", 1)).unwrap();
    fifo.delete(cm("gone", 1)).unwrap();
    assert_eq!(fifo.len(), 2);
    assert_eq!(pop(&fifo).await, "foo=15");
    assert_eq!(pop(&fifo).await, "bar=1");
    assert!(fifo.is_empty());
    assert!(fifo.get_by_key("foo").is_none());
}

/// `TestFIFO_requeueOnPop`: a requeued object goes back, but not over a newer one
/// (`AddIfNotPresent`).
#[tokio::test]
async fn a_requeue_does_not_overwrite_a_newer_object() {
    let fifo = fifo();
    fifo.add(cm("foo", 10)).unwrap();
    let err = fifo
        .pop(|_, _| Err(ProcessError::Requeue("again".into())))
        .await
        .unwrap_err();
    assert!(matches!(err, PopError::Process { requeued: true, .. }));
    assert_eq!(v(&fifo.get_by_key("foo").unwrap()), "foo=10");
    // While foo=10 is being processed, foo=11 arrives: the requeue keeps foo=11.
    let fifo2 = Arc::new(fifo);
    let inner = Arc::clone(&fifo2);
    let _ = fifo2
        .pop(move |_, _| {
            inner.add(cm("foo", 11)).unwrap();
            Err(ProcessError::Requeue("again".into()))
        })
        .await;
    assert_eq!(v(&fifo2.get_by_key("foo").unwrap()), "foo=11");
    assert_eq!(fifo2.len(), 1);
}

/// `TestFIFO_addIfNotPresent` and `TestFIFO_detectLineJumpers`: a queued key keeps its
/// place whatever updates it; add-if-not-present leaves a queued object alone.
#[tokio::test]
async fn keys_keep_their_place() {
    let fifo = fifo();
    fifo.add(cm("foo", 10)).unwrap();
    fifo.add(cm("bar", 1)).unwrap();
    fifo.add(cm("foo", 11)).unwrap();
    fifo.add_if_not_present(cm("bar", 2)).unwrap();
    fifo.add_if_not_present(cm("baz", 1)).unwrap();
    assert_eq!(pop(&fifo).await, "foo=11");
    assert_eq!(pop(&fifo).await, "bar=1");
    assert_eq!(pop(&fifo).await, "baz=1");
}

/// `TestFIFO_HasSynced`: before any replace an add syncs; after the first replace, it syncs
/// once its objects have all been popped — and the pops are in the initial list until then.
#[tokio::test]
async fn has_synced_waits_for_the_first_replace_to_be_popped() {
    let fifo = fifo();
    assert!(!fifo.has_synced());
    fifo.replace(vec![cm("a", 1), cm("b", 1)], "1").unwrap();
    assert!(!fifo.has_synced());
    let mut initial = Vec::new();
    for _ in 0..2 {
        fifo.pop(|_, is_initial| {
            initial.push(is_initial);
            Ok(())
        })
        .await
        .unwrap();
    }
    assert_eq!(initial, [true, true]);
    assert!(fifo.has_synced());

    let other = Fifo::<ConfigMap>::new(KeyFunc::meta_namespace());
    other.add(cm("a", 1)).unwrap();
    assert!(other.has_synced(), "an add before any replace syncs");
}

/// `TestFIFO_resync` and close: a resync queues again what is held but not waiting; a closed
/// queue drains, then fails.
#[tokio::test]
async fn resync_requeues_and_a_closed_queue_drains_then_fails() {
    let fifo = fifo();
    fifo.replace(vec![cm("a", 1)], "1").unwrap();
    fifo.resync().unwrap();
    assert_eq!(fifo.len(), 1, "a queued key is not queued twice");
    fifo.close();
    assert!(fifo.is_closed());
    assert_eq!(pop(&fifo).await, "a=1");
    assert!(matches!(
        fifo.pop(|_, _| Ok(())).await,
        Err(PopError::Closed)
    ));
}
