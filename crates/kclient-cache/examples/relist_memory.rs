//! Memory on relist: the peak RSS of a relist of N Pods against the steady state, measured
//! in this process while `kclient-fake-apiserver` serves the Pods from another one.
//!
//! ```sh
//! cargo build --release -p kclient-fake --features apiserver --bin kclient-fake-apiserver
//! cargo build --release -p kclient-cache --example relist_memory
//! for mode in list stream; do for objects in copy reuse; do
//!   target/release/examples/relist_memory target/release/kclient-fake-apiserver 100000 $mode $objects
//! done; done
//! ```
//!
//! The pipeline is an informer's: reflector → RealFIFO → `process_deltas` → indexer. After the
//! initial sync the resident set is the steady state; then the high-water mark is reset
//! (`/proc/self/clear_refs`) and the reflector relists once: by a list (`list`) or a
//! streaming list (`stream`), with (`reuse`) or without (`copy`) `with_known_objects`. One
//! measurement per process, since freed memory stays with the allocator. Linux only.

use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kclient_cache::{
    process_deltas, Indexer, Indexers, KeyFunc, ProcessError, Queue, RealFifo, RealFifoOptions,
    Reflector, ReflectorOptions,
};
use kclient_rest::Config;
use kclient_typed::Clientset;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A Pod as a Deployment's ReplicaSet makes it, with a scheduled, running status: about
/// 2.5 KB of JSON.
fn pod(i: usize) -> serde_json::Value {
    let app = format!("app-{}", i % 100);
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("{app}-7d9f8b6c5d-{i:06}"), "namespace": format!("ns-{}", i % 10),
            "labels": {"app": app, "pod-template-hash": "7d9f8b6c5d", "tier": "backend"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-20T10:00:00Z"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-7d9f8b6c5d"),
                                 "uid": "0b7c6d2e-1f3a-4b5c-9d8e-7f6a5b4c3d2e", "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {
            "containers": [{
                "name": "server", "image": "registry.example.com/team/server:1.27.3",
                "args": ["--port=8080", "--log-level=info"],
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "MODE", "value": "production"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10},
                "volumeMounts": [{"name": "config", "mountPath": "/etc/server"}]
            }],
            "volumes": [{"name": "config", "configMap": {"name": format!("{app}-config")}}],
            "nodeName": format!("node-{}", i % 1000), "serviceAccountName": "default"
        },
        "status": {
            "phase": "Running", "podIP": format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255),
            "hostIP": "192.168.1.10", "startTime": "2026-11-20T10:00:05Z", "qosClass": "Burstable",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-20T10:00:15Z"},
                           {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-20T10:00:01Z"}],
            "containerStatuses": [{"name": "server", "ready": true, "restartCount": 0, "started": true,
                                   "image": "registry.example.com/team/server:1.27.3",
                                   "imageID": "registry.example.com/team/server@sha256:3f1e0c8c2a",
                                   "containerID": format!("containerd://{i:064x}"),
                                   "state": {"running": {"startedAt": "2026-11-20T10:00:10Z"}}}]
        }
    })
}

/// Writes a `List` of `count` Pods to `path`, a Pod at a time.
fn write_manifest(path: &std::path::Path, count: usize) -> Result<(), Box<dyn std::error::Error>> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    out.write_all(br#"{"apiVersion":"v1","kind":"List","items":["#)?;
    for i in 0..count {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut out, &pod(i))?;
    }
    out.write_all(b"]}")?;
    out.flush()?;
    Ok(())
}

/// A line of `/proc/self/status`, in bytes.
fn status_kib(field: &str) -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| {
            l.strip_prefix(field)?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse()
                .ok()
        })
        .unwrap_or(0)
        * 1024
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("--write-manifest") {
        let path = args.nth(1).ok_or("a path")?;
        let count: usize = args.next().ok_or("a count")?.parse()?;
        return write_manifest(std::path::Path::new(&path), count);
    }
    let binary = args
        .next()
        .unwrap_or_else(|| "target/release/kclient-fake-apiserver".into());
    let count: usize = args
        .next()
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(100_000);
    let streaming = args.next().as_deref() == Some("stream");
    let reuse = args.next().as_deref() == Some("reuse");

    eprintln!("RSS at start: {:.0} MiB", mib(status_kib("VmRSS:")));
    let dir = tempfile::tempdir()?;
    let manifest = dir.path().join("pods.json");
    // Another process writes the manifest, so that its allocations do not stay with this one.
    let status = Command::new(std::env::current_exe()?)
        .arg("--write-manifest")
        .arg(&manifest)
        .arg(count.to_string())
        .status()?;
    if !status.success() {
        return Err("writing the manifest failed".into());
    }
    eprintln!(
        "RSS after writing the manifest: {:.0} MiB",
        mib(status_kib("VmRSS:"))
    );
    let kubeconfig = dir.path().join("kubeconfig");
    let _server = Server(
        Command::new(&binary)
            .arg("--load")
            .arg(&manifest)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {binary}: {e}"))?,
    );
    let started = Instant::now();
    while !kubeconfig.exists() {
        if started.elapsed() > Duration::from_secs(300) {
            return Err("the fake API server did not start".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut config = Config::from_kubeconfig_file(&kubeconfig)?;
    config.qps = None;
    let pods = Clientset::new(config)?.all_namespaces::<Pod>();

    {
        let indexer = Indexer::new(
            KeyFunc::deletion_handling_meta_namespace(),
            Indexers::<Pod>::namespace(),
        );
        let fifo = Arc::new(RealFifo::new(RealFifoOptions::default()));
        let mut reflector = Reflector::new(
            pods.clone(),
            Arc::clone(&fifo),
            ReflectorOptions {
                use_watch_list: streaming,
                ..ReflectorOptions::default()
            },
        );
        if reuse {
            reflector = reflector.with_known_objects(indexer.clone());
        }
        let reflector = Arc::new(reflector);
        let processed = Arc::new(AtomicUsize::new(0));
        let consumer = tokio::spawn({
            let (fifo, indexer, processed) =
                (Arc::clone(&fifo), indexer.clone(), Arc::clone(&processed));
            async move {
                while fifo
                    .pop(|deltas, initial| {
                        process_deltas(&indexer, deltas, initial, |_| {})
                            .map_err(|e| ProcessError::Failed(e.into()))
                    })
                    .await
                    .is_ok()
                {
                    processed.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        let baseline = status_kib("VmRSS:");

        // The initial list, then the steady state.
        let first = CancellationToken::new();
        let run = tokio::spawn({
            let (r, c) = (Arc::clone(&reflector), first.clone());
            async move { r.list_and_watch(&c).await }
        });
        while !(fifo.has_synced() && processed.load(Ordering::SeqCst) > 0 && indexer.len() == count)
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        first.cancel();
        run.await??;
        let steady = status_kib("VmRSS:");

        // One relist, with the high-water mark reset first.
        std::fs::write("/proc/self/clear_refs", "5")?;
        let pops = processed.load(Ordering::SeqCst);
        let relist_started = Instant::now();
        let second = CancellationToken::new();
        let run = tokio::spawn({
            let (r, c) = (Arc::clone(&reflector), second.clone());
            async move { r.list_and_watch(&c).await }
        });
        while processed.load(Ordering::SeqCst) == pops {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let relist_time = relist_started.elapsed();
        let peak = status_kib("VmHWM:");
        second.cancel();
        run.await??;
        fifo.close();
        consumer.await?;

        let cache = steady.saturating_sub(baseline);
        let relist = peak.saturating_sub(baseline);
        println!(
            "{count} Pods, {}, {}: RSS before {:.0} MiB, steady {:.0} (cache {:.0}), relist peak {:.0} (cache {:.0}): peak/steady {:.2} for the cache, {:.2} for the process; relist {:.2} s",
            if streaming { "streaming list" } else { "list" },
            if reuse { "reusing unchanged objects" } else { "copying every object" },
            mib(baseline),
            mib(steady),
            mib(cache),
            mib(peak),
            mib(relist),
            relist as f64 / cache.max(1) as f64,
            peak as f64 / steady.max(1) as f64,
            relist_time.as_secs_f64(),
        );
        drop(indexer);
    }
    Ok(())
}
