//! `reads-local`: a cache's reads alone, no server: `--count` of kclient-fake's realistic Pods
//! (managedFields kept or stripped, `--managed-fields`) in a `ThreadSafeStore` of the given
//! representation (`--cache decoded|compact`) with an index by node (100 Pods a node at 100k),
//! then `--gets` lister-style `get`s timed one by one (p50, p99) and `--lookups` `by_index`
//! lookups of one node's Pods (the median time of one). The figures of scenario 7 without the
//! sync in front of them, for working on the reads.

use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kclient_cache::{CacheRepresentation, Indexers, ThreadSafeStore};
use kclient_core::meta_namespace_key;
use serde_json::{json, Value};

use crate::args::Options;
use crate::proc_stats::median;
use crate::sync::BY_NODE;
use crate::Error;

pub(crate) fn run(o: &Options) -> Result<Value, Error> {
    let keep = match o.managed_fields.as_str() {
        "keep" => true,
        "strip" => false,
        other => return Err(format!("--managed-fields {other:?}: keep or strip").into()),
    };
    let representation = match o.cache.as_str() {
        "decoded" => CacheRepresentation::Decoded,
        "compact" => CacheRepresentation::compact(),
        other => return Err(format!("--cache {other:?}: decoded or compact").into()),
    };
    let indexers = Indexers::namespace().with(BY_NODE, |p: &Pod| {
        Ok(p.spec.iter().filter_map(|s| s.node_name.clone()).collect())
    });
    let store = ThreadSafeStore::with_representation(indexers, representation);
    let mut keys = Vec::with_capacity(o.count);
    for i in 0..o.count {
        let pod: Pod = serde_json::from_value(kclient_fake::samples::realistic_pod(i, keep))?;
        let key = meta_namespace_key(&pod);
        store.add(&key, Arc::new(pod))?;
        keys.push(key);
    }
    keys.sort();
    let mut result = json!({
        "objects": store.len(), "cache": o.cache, "managed_fields": o.managed_fields,
    });
    if o.gets > 0 && !keys.is_empty() {
        let mut latencies = Vec::with_capacity(o.gets);
        for i in 0..o.gets {
            // A prime stride walks the objects in a scattered order (as scenario 7's gets).
            let key = &keys[(i * 7919) % keys.len()];
            let start = Instant::now();
            let found = store.get(key);
            latencies.push(start.elapsed().as_secs_f64() * 1e6);
            found.ok_or_else(|| format!("{key} is not cached"))?;
        }
        latencies.sort_by(f64::total_cmp);
        let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q).round() as usize];
        result["get_p50_us"] = json!(at(0.50));
        result["get_p99_us"] = json!(at(0.99));
    }
    if o.lookups > 0 {
        let nodes = store.list_index_func_values(BY_NODE);
        let mut took = Vec::with_capacity(o.lookups);
        let mut found = 0;
        for i in 0..o.lookups {
            let start = Instant::now();
            let matches = store.by_index(BY_NODE, &nodes[(i * 7919) % nodes.len()])?;
            took.push(start.elapsed().as_secs_f64() * 1e3);
            found += matches.len();
        }
        result["by_index_ms"] = json!(median(&took));
        result["found_per_lookup"] = json!(found as f64 / o.lookups as f64);
    }
    Ok(result)
}
