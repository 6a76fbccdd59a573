//! `write-bodies`: what the API server pays to read a write's body in JSON and in protobuf —
//! the measure behind kclient's choice of JSON request bodies (`docs/design/protobuf.md`).
//! Rounds of `--count` creates of realistic Pods (kclient-fake's samples), one round with JSON
//! bodies, the next with protobuf bodies, `--repeat` pairs; every answer is asked in protobuf.
//! Each round's Pods are deleted after it. Reported per encoding: the median wall time of a
//! round and, when the server runs on this machine (a `kube-apiserver` process is found in
//! `/proc`), the median of its CPU time over the round.

use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kclient_core::{DeleteOptions, GroupVersion};
use kclient_rest::{RestClient, PROTOBUF_ACCEPT, PROTOBUF_MEDIA_TYPE};
use serde_json::{json, Value};

use crate::args::Options;
use crate::objects::{creatable_pod, for_each_concurrently};
use crate::proc_stats::{cpu_time_of, median};
use crate::Error;

/// The `/proc/<pid>/stat` of a local kube-apiserver, if one runs.
fn apiserver_stat() -> Option<String> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let comm = std::fs::read_to_string(entry.path().join("comm")).ok()?;
            (comm.trim() == "kube-apiserver")
                .then(|| entry.path().join("stat").to_string_lossy().into_owned())
        })
}

/// A creatable Pod named `name`, with only a name, a namespace and labels in its metadata.
fn pod(namespace: &str, name: &str, i: usize) -> Result<Pod, Error> {
    let mut pod = creatable_pod(i, namespace);
    if let Some(meta) = pod["metadata"].as_object_mut() {
        meta.insert("name".into(), json!(name));
        meta.remove("annotations");
    }
    Ok(serde_json::from_value(pod)?)
}

async fn round(o: &Options, rest: &RestClient, protobuf: bool, tag: String) -> Result<f64, Error> {
    let codec = kclient_protobuf::registry::codec::<Pod>().ok_or("no Pod codec")?;
    let (rest_c, ns) = (rest.clone(), o.namespace.clone());
    let start = Instant::now();
    for_each_concurrently(o.count, o.concurrency, move |i| {
        let (rest, ns) = (rest_c.clone(), ns.clone());
        let name = format!("{tag}-{i}");
        async move {
            let pod = pod(&ns, &name, i)?;
            let (content_type, body) = if protobuf {
                (PROTOBUF_MEDIA_TYPE, codec.encode_body(&pod))
            } else {
                ("application/json", serde_json::to_vec(&pod)?)
            };
            rest.post()
                .group_version(&GroupVersion::new("", "v1"))
                .namespace(ns)
                .resource("pods")
                .header("Content-Type", content_type)
                .header("Accept", PROTOBUF_ACCEPT)
                .body(body)
                .send()
                .await?;
            Ok(())
        }
    })
    .await?;
    Ok(start.elapsed().as_secs_f64())
}

pub(crate) async fn run(o: &Options) -> Result<Value, Error> {
    let rest = o.clientset()?.rest_client().clone();
    let stat = apiserver_stat();
    let (mut wall, mut cpu) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    for r in 0..o.repeat {
        for (slot, protobuf) in [(0, false), (1, true)] {
            let tag = format!("wb-{}-{r}", if protobuf { "pb" } else { "js" });
            let before = stat.as_deref().map(cpu_time_of);
            wall[slot].push(round(o, &rest, protobuf, tag.clone()).await?);
            if let (Some(path), Some(before)) = (stat.as_deref(), before) {
                cpu[slot].push((cpu_time_of(path) - before).as_secs_f64());
            }
            delete_round(o, &rest, &tag).await?;
        }
    }
    let per = |v: &[f64]| (!v.is_empty()).then(|| median(v));
    Ok(json!({
        "count": o.count, "repeat": o.repeat, "concurrency": o.concurrency,
        "json_wall_s": per(&wall[0]), "protobuf_wall_s": per(&wall[1]),
        "json_server_cpu_s": per(&cpu[0]), "protobuf_server_cpu_s": per(&cpu[1]),
    }))
}

/// Deletes a round's Pods (at once: no grace period).
async fn delete_round(o: &Options, rest: &RestClient, tag: &str) -> Result<(), Error> {
    let pods = kclient_typed::ResourceClient::<Pod>::namespaced(rest.clone(), &o.namespace);
    let tag = tag.to_owned();
    for_each_concurrently(o.count, o.concurrency, move |i| {
        let (pods, name) = (pods.clone(), format!("{tag}-{i}"));
        async move {
            let options = DeleteOptions::default().grace_period_seconds(0);
            pods.delete(&name, &options).await?;
            Ok(())
        }
    })
    .await
}
