//! Helpers shared by the kclient-cache behaviour tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kclient_cache::{Delta, KeyListerGetter, ProcessError, Queue, SharedIndexInformer};
use kclient_core::{meta_namespace_key, DeletedObject};
use tokio_util::sync::CancellationToken;

/// A cluster-scoped-looking test object: name `name`, value `v` in its data (client-go's
/// `mkFifoObj(name, val)`).
pub fn obj(name: &str, v: i64) -> Arc<ConfigMap> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.data = Some(BTreeMap::from([("v".to_string(), v.to_string())]));
    Arc::new(cm)
}

/// The value of a test object.
pub fn val(cm: &ConfigMap) -> i64 {
    cm.data
        .as_ref()
        .and_then(|d| d.get("v"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

/// A pod in `ns` with the given labels.
pub fn pod(ns: &str, name: &str, labels: &[(&str, &str)]) -> Arc<Pod> {
    let mut pod = Pod::default();
    pod.metadata.namespace = Some(ns.into());
    pod.metadata.name = Some(name.into());
    if !labels.is_empty() {
        pod.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
    }
    Arc::new(pod)
}

/// A delta as text: `Added foo=10`, `Deleted tombstone bar=6`, `Deleted tombstone bar=?`.
pub fn describe(delta: &Delta<ConfigMap>) -> String {
    let t = delta.delta_type();
    match delta {
        Delta::Deleted(DeletedObject::Tombstone(ts)) => match &ts.obj {
            Some(o) => format!("{t} tombstone {}={}", ts.key, val(o)),
            None => format!("{t} tombstone {}=?", ts.key),
        },
        Delta::ReplacedAll(info) => format!(
            "{t} [{}] rv={}",
            info.objects
                .iter()
                .map(|o| format!("{}={}", meta_namespace_key(o.as_ref()), val(o)))
                .collect::<Vec<_>>()
                .join(" "),
            info.resource_version
        ),
        Delta::SyncAll => t.to_string(),
        other => {
            let o = other.object().expect("an object");
            format!("{t} {}={}", meta_namespace_key(o.as_ref()), val(o))
        }
    }
}

/// All deltas as text.
pub fn describe_all(deltas: &[Delta<ConfigMap>]) -> Vec<String> {
    deltas.iter().map(describe).collect()
}

/// Pops once with a process function that succeeds; the deltas as text.
pub async fn pop<Q: Queue<ConfigMap>>(q: &Q) -> Vec<String> {
    let deltas = q.pop(|_, _| Ok(())).await.expect("pop");
    describe_all(&deltas)
}

/// Pops once; the deltas as text and whether they were in the initial list.
pub async fn pop_initial<Q: Queue<ConfigMap>>(q: &Q) -> (Vec<String>, bool) {
    let mut initial = None;
    let deltas = q
        .pop(|_, i| {
            initial = Some(i);
            Ok::<(), ProcessError>(())
        })
        .await
        .expect("pop");
    (describe_all(&deltas), initial.expect("process ran"))
}

/// client-go's `literalListerGetter`: known objects from a fixed list.
pub struct Known(pub Vec<Arc<ConfigMap>>);

impl KeyListerGetter<ConfigMap> for Known {
    fn list_keys(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|o| meta_namespace_key(o.as_ref()))
            .collect()
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<ConfigMap>> {
        self.0
            .iter()
            .find(|o| meta_namespace_key(o.as_ref()) == key)
            .cloned()
    }
}

/// Known objects from `(name, value)` pairs, as an `Arc`.
pub fn known(items: &[(&str, i64)]) -> Arc<dyn KeyListerGetter<ConfigMap>> {
    Arc::new(Known(items.iter().map(|(n, v)| obj(n, *v)).collect()))
}

/// Yields to the runtime until `done` holds (handlers run on their own tasks); panics if it
/// never does. Yielding keeps the paused clock where it is.
pub async fn until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..20_000 {
        if done() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("never happened: {what}");
}

/// Runs `informer` in a task, until the token returned fires.
pub fn start_informer<K>(
    informer: &SharedIndexInformer<K>,
) -> (CancellationToken, tokio::task::JoinHandle<()>)
where
    K: kclient_core::Resource + Clone + Send + Sync + 'static,
{
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    (cancel, task)
}
