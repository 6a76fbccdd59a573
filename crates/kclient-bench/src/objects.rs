//! The objects every client reads, and the harness's helpers around them: the manifest
//! `kclient-fake-apiserver --load` serves (kclient-fake's deterministic realistic Pods, and
//! the ConfigMaps of the watch scenario), seeding and cleaning a namespace of a real cluster,
//! and the writer of the watch scenario.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kclient_core::{CreateOptions, DeleteOptions, ListOptions, ObjectList, Patch, PatchOptions};
use kclient_typed::ResourceClient;
use serde_json::{json, Value};

use crate::args::Options;
use crate::watch::unix_nanos;
use crate::Error;

/// The annotation the writer sets to the time of each update (Unix nanoseconds).
pub(crate) const WRITTEN_AT: &str = "bench.kclient.io/written-at";

fn config_map(namespace: &str, i: usize) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": format!("cm-{i}"), "namespace": namespace, "labels": {"app": "bench"}},
           "data": {"key": "value", "index": i.to_string()}})
}

/// The controller scenario's primary ConfigMap `p-<i>` (1 KB of data) and the Secret `o-<i>`
/// it owns (1 KB of base64 data, a controller owner reference; the uid is made up: owner
/// references are matched by group, kind and name, and nothing deletes the owner).
fn owner_and_owned(namespace: &str, i: usize) -> [Value; 2] {
    let filler = "x".repeat(1024);
    // 768 bytes of `x`, base64-encoded: 1,024 characters.
    let encoded = "eHh4".repeat(256);
    [
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": format!("p-{i}"), "namespace": namespace, "labels": {"app": "bench-controller"}},
               "data": {"settings": filler}}),
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": format!("o-{i}"), "namespace": namespace, "labels": {"app": "bench-controller"},
                            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": format!("p-{i}"),
                                                 "uid": format!("00000000-0000-0000-0000-{i:012}"),
                                                 "controller": true, "blockOwnerDeletion": true}]},
               "type": "Opaque",
               "data": {"token": encoded}}),
    ]
}

/// `manifest`: a List of `--count` realistic Pods (with managedFields, in kclient-fake's ten
/// namespaces), `--objects` ConfigMaps in `--namespace`, and `--owned` ConfigMaps owning a
/// Secret each in `--owned-namespace`, written item by item.
pub(crate) fn write_manifest(o: &Options) -> Result<(), Error> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(&o.path)?);
    out.write_all(br#"{"apiVersion":"v1","kind":"List","items":["#)?;
    let pods = (0..o.count).map(|i| kclient_fake::samples::realistic_pod(i, true));
    let config_maps = (0..o.objects).map(|i| config_map(&o.namespace, i));
    let owned = (0..o.owned).flat_map(|i| owner_and_owned(&o.owned_namespace, i));
    for (n, item) in pods.chain(config_maps).chain(owned).enumerate() {
        if n > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut out, &item)?;
    }
    out.write_all(b"]}")?;
    out.flush()?;
    Ok(())
}

/// Runs `f(i)` for `i` in `0..n` on `concurrency` tasks.
pub(crate) async fn for_each_concurrently<F, Fut>(
    n: usize,
    concurrency: usize,
    f: F,
) -> Result<(), Error>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), Error>> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let f = Arc::new(f);
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (next, f) = (Arc::clone(&next), Arc::clone(&f));
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return Ok::<(), Error>(());
                    }
                    f(i).await?;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok(())
}

/// `seed`: creates `--namespace` on a real cluster, `--count` of the same Pods there and
/// `--objects` ConfigMaps. The Pods lose what a create cannot set (status, managedFields: the
/// server records its own), their node and their owner: kube-controller-manager would delete
/// them during the run (the Pod GC a Pod bound to a node that does not exist, the garbage
/// collector one whose owner does not exist).
/// kclient-fake's realistic Pod `i` in `namespace`, as a client creates one: without the
/// status, the owner (no ReplicaSet exists) and the node (the scheduler's to set).
pub(crate) fn creatable_pod(i: usize, namespace: &str) -> Value {
    let mut pod = kclient_fake::samples::realistic_pod(i, false);
    pod["metadata"]["namespace"] = json!(namespace);
    if let Some(o) = pod.as_object_mut() {
        o.remove("status");
    }
    if let Some(meta) = pod["metadata"].as_object_mut() {
        meta.remove("ownerReferences");
    }
    if let Some(spec) = pod["spec"].as_object_mut() {
        spec.remove("nodeName");
    }
    pod
}

pub(crate) async fn seed(o: &Options) -> Result<Value, Error> {
    let clientset = o.clientset()?;
    let namespaces = ResourceClient::<Namespace>::cluster_scoped(clientset.rest_client().clone());
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": o.namespace}}))?;
    namespaces
        .create(&namespace, &CreateOptions::default())
        .await?;
    let start = Instant::now();
    let pods = clientset.namespaced::<Pod>(&o.namespace);
    let ns = o.namespace.clone();
    for_each_concurrently(o.count, o.concurrency, move |i| {
        let pods = pods.clone();
        let pod = creatable_pod(i, &ns);
        async move {
            let pod: Pod = serde_json::from_value(pod)?;
            pods.create(&pod, &CreateOptions::default()).await?;
            Ok(())
        }
    })
    .await?;
    let config_maps = clientset.namespaced::<ConfigMap>(&o.namespace);
    let ns = o.namespace.clone();
    for_each_concurrently(o.objects, o.concurrency, move |i| {
        let config_maps = config_maps.clone();
        let cm = config_map(&ns, i);
        async move {
            let cm: ConfigMap = serde_json::from_value(cm)?;
            config_maps.create(&cm, &CreateOptions::default()).await?;
            Ok(())
        }
    })
    .await?;
    Ok(json!({"pods": o.count, "config_maps": o.objects, "seconds": start.elapsed().as_secs_f64()}))
}

/// `write`: `--count` merge patches over the `--objects` ConfigMaps of `--namespace`, in
/// turn, from `--concurrency` tasks, each stamping the ConfigMap with the time of the write.
pub(crate) async fn write(o: &Options) -> Result<Value, Error> {
    let config_maps = o.clientset()?.namespaced::<ConfigMap>(&o.namespace);
    let objects = o.objects.max(1);
    let start = Instant::now();
    for_each_concurrently(o.count, o.concurrency, move |i| {
        let config_maps = config_maps.clone();
        async move {
            let patch =
                json!({"metadata": {"annotations": {WRITTEN_AT: unix_nanos().to_string()}}});
            config_maps
                .patch(
                    &format!("cm-{}", i % objects),
                    &Patch::Merge(patch),
                    &PatchOptions::default(),
                )
                .await?;
            Ok(())
        }
    })
    .await?;
    let seconds = start.elapsed().as_secs_f64();
    Ok(json!({"writes": o.count, "seconds": seconds, "writes_per_s": o.count as f64 / seconds}))
}

/// `cleanup`: deletes the Pods of `--namespace` at once (grace period 0: no kubelet will
/// confirm them) and then the namespace.
pub(crate) async fn cleanup(o: &Options) -> Result<(), Error> {
    let clientset = o.clientset()?;
    let now = DeleteOptions {
        grace_period_seconds: Some(0),
        ..DeleteOptions::default()
    };
    let _: kclient_core::DeleteResponse<ObjectList<Pod>> = clientset
        .namespaced::<Pod>(&o.namespace)
        .delete_collection(&now, &ListOptions::default())
        .await?;
    ResourceClient::<Namespace>::cluster_scoped(clientset.rest_client().clone())
        .delete(&o.namespace, &DeleteOptions::default())
        .await?;
    Ok(())
}
