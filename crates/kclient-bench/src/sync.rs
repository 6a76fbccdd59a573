//! Scenarios 1, 4 and 6: an informer of Pods (or, with `--kind configmaps`, of ConfigMaps; with
//! `--kind pod-view`, of a projection of Pods) from start to synced (paged or streaming list,
//! managedFields kept or stripped, `--cache decoded` or `compact`): wall and CPU time, resident
//! set before and after, peak; then, with `--lookups`, `by_index` lookups over a custom index of
//! the synced Pods, with `--gets`, lister `get`s timed one by one (p50, p99), and with
//! `--settle S`, the resident set again S seconds after the sync. `--handlers N` adds N event
//! handlers (counting the adds they are told of) before the sync, and the result says when
//! they had all been told of every listed object (`handlers_wall_s`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kclient_cache::wait::wait_for_cache_sync;
use kclient_cache::{IndexFuncError, ResourceEventHandlerFuncs, SharedIndexInformer};
use kclient_core::{CancellationToken, ListerWatcherFor, ResourceExt};
use serde_json::{json, Value};

use crate::args::Options;
use crate::pod_view::PodView;
use crate::proc_stats::{cpu_time, reset_peak, status_bytes};
use crate::Error;

/// The custom index of the indexer scenario: Pods by node.
pub(crate) const BY_NODE: &str = "by-node";

pub(crate) async fn run(o: &Options) -> Result<Value, Error> {
    match o.kind.as_str() {
        "pods" => sync::<Pod>(o, Some(by_node)).await,
        "configmaps" => sync::<ConfigMap>(o, None).await,
        "pod-view" => sync::<PodView>(o, Some(PodView::node)).await,
        other => Err(format!("unknown kind {other:?}").into()),
    }
}

fn by_node(pod: &Pod) -> Result<Vec<String>, IndexFuncError> {
    Ok(pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .into_iter()
        .collect())
}

/// An index function of the lookups.
type IndexFn<K> = fn(&K) -> Result<Vec<String>, IndexFuncError>;

/// Syncs an informer of `K`; `index` is the custom index of the lookups (Pods only).
async fn sync<K>(o: &Options, index: Option<IndexFn<K>>) -> Result<Value, Error>
where
    K: kclient_core::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + Send
        + Sync
        + 'static,
{
    let factory = o.factory()?;
    let streaming = o.mode == "stream";
    let index = index.filter(|_| o.lookups > 0);
    let with_index = index.is_some();
    let informer = factory.informer_for::<K>(|client, settings| {
        let mut options = settings.informer_options();
        options.reflector_options.use_watch_list = streaming;
        if let Some(index) = index {
            options.indexers = options.indexers.with(BY_NODE, index);
        }
        SharedIndexInformer::new(
            client.lister_watcher(settings.namespace.as_deref(), settings.tweak.clone()),
            options,
        )
    });
    let told = Arc::new(AtomicUsize::new(0));
    let mut handlers_synced = Vec::new();
    for _ in 0..o.handlers {
        let told = Arc::clone(&told);
        let registration = informer.add_event_handler(
            ResourceEventHandlerFuncs::new().add_func(move |_, _| {
                told.fetch_add(1, Ordering::Relaxed);
            }),
        )?;
        handlers_synced.push(registration.synced());
    }
    if (o.cache == "compact") != informer.get_indexer().thread_safe_store().is_compact() {
        return Err(format!("--cache {}: the informer's cache is not that", o.cache).into());
    }
    let before = status_bytes("VmRSS:");
    reset_peak();
    let (start, cpu0) = (Instant::now(), cpu_time());
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    if !factory.wait_for_cache_sync(&cancel).await.all_synced() {
        return Err("the informer did not sync".into());
    }
    let (wall, cpu) = (start.elapsed(), cpu_time() - cpu0);
    // The handlers are told of the listed objects on their own threads, after the sync.
    if !wait_for_cache_sync(&cancel, &handlers_synced).await {
        return Err("the handlers did not sync".into());
    }
    let (handlers_wall, handlers_cpu) = (start.elapsed(), cpu_time() - cpu0);
    let (peak, after) = (status_bytes("VmHWM:"), status_bytes("VmRSS:"));
    let objects = informer.get_store().len();
    let mut result = json!({
        "objects": objects, "mode": o.mode, "managed_fields": o.managed_fields, "kind": o.kind,
        "wall_s": wall.as_secs_f64(), "cpu_s": cpu.as_secs_f64(),
        "rss_before": before, "rss_after": after, "rss_peak": peak,
        "handlers": o.handlers, "handlers_wall_s": handlers_wall.as_secs_f64(),
        "handlers_cpu_s": handlers_cpu.as_secs_f64(),
        "handlers_told": told.load(Ordering::Relaxed),
    });
    if with_index {
        let indexer = informer.get_indexer();
        let nodes: Vec<String> = (0..1000).map(|i| format!("node-{i}")).collect();
        let mut found = 0usize;
        let start = Instant::now();
        for i in 0..o.lookups {
            found += indexer.by_index(BY_NODE, &nodes[i % nodes.len()])?.len();
        }
        let took = start.elapsed().as_secs_f64();
        result["lookups"] = json!(o.lookups);
        result["lookups_per_s"] = json!(o.lookups as f64 / took);
        result["found_per_lookup"] = json!(found as f64 / o.lookups as f64);
    }
    if o.settle > 0 {
        // What the process holds once the allocator has had time to return what the sync
        // freed (the list's decoded objects in the compact representation).
        tokio::time::sleep(Duration::from_secs(o.settle)).await;
        result["rss_settled"] = json!(status_bytes("VmRSS:"));
        result["settle_s"] = json!(o.settle);
    }
    if o.gets > 0 {
        let (p50, p99) = get_latencies(&informer, o.gets)?;
        result["get_p50_us"] = json!(p50);
        result["get_p99_us"] = json!(p99);
    }
    factory.shutdown().await;
    Ok(result)
}

/// Times `gets` lister `get`s of cached objects (in a fixed shuffled order) one by one: the
/// p50 and p99 in microseconds.
fn get_latencies<K>(informer: &SharedIndexInformer<K>, gets: usize) -> Result<(f64, f64), Error>
where
    K: kclient_core::Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    let lister = informer.lister();
    let mut names: Vec<(String, String)> = informer
        .get_store()
        .list()
        .iter()
        .map(|o| {
            (
                o.namespace().unwrap_or_default().to_owned(),
                o.name_any().to_owned(),
            )
        })
        .collect();
    names.sort();
    if names.is_empty() {
        return Err("no object cached to get".into());
    }
    let mut latencies = Vec::with_capacity(gets);
    for i in 0..gets {
        // A prime stride walks the objects in a scattered order.
        let (namespace, name) = &names[(i * 7919) % names.len()];
        let start = Instant::now();
        let found = lister.namespaced(namespace.clone()).get(name);
        latencies.push(start.elapsed().as_secs_f64() * 1e6);
        found.map_err(|e| format!("{namespace}/{name}: {e}"))?;
    }
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
    Ok((at(0.50), at(0.99)))
}
