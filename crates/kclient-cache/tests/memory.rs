//! Memory per cached object: the bytes the store, the key and the indices allocate per
//! object beyond the object itself, counted by a tracking global allocator (so this file
//! holds a single test: nothing else may allocate while it measures).
//!
//! `cargo test -p kclient-cache --release --test memory -- --nocapture` prints the figures.

use std::alloc::System;
use std::sync::Arc;

use cap::Cap;
use k8s_openapi::api::core::v1::Pod;
use kclient_cache::{Indexer, Indexers, KeyFunc};

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// Pods named like a Deployment's: `namespace-N/web-000123-5d8f7c9b4-x2k8q`, 38-byte keys.
fn pods(n: usize) -> Vec<Arc<Pod>> {
    (0..n)
        .map(|i| {
            let mut pod = Pod::default();
            pod.metadata.namespace = Some(format!("namespace-{}", i % 10));
            pod.metadata.name = Some(format!("web-{i:06}-5d8f7c9b4-x2k8q"));
            Arc::new(pod)
        })
        .collect()
}

/// Bytes allocated per object by filling an indexer with `objects`.
fn overhead(objects: &[Arc<Pod>], indexers: Indexers<Pod>) -> f64 {
    let before = ALLOCATOR.allocated();
    let indexer = Indexer::new(KeyFunc::meta_namespace(), indexers);
    for pod in objects {
        indexer.add(Arc::clone(pod)).unwrap();
    }
    let per_object = (ALLOCATOR.allocated() - before) as f64 / objects.len() as f64;
    drop(indexer);
    per_object
}

#[test]
fn a_cached_object_costs_about_100_bytes_beyond_itself() {
    for n in [10_000, 100_000] {
        let objects = pods(n);
        let plain = overhead(&objects, Indexers::new());
        let namespaced = overhead(&objects, Indexers::namespace());
        println!(
            "{n:>7} pods: {plain:6.1} bytes per object, {namespaced:6.1} with the namespace index"
        );
        if n == 100_000 {
            assert!(plain < 100.0, "{plain} bytes per object without indices");
            // An index entry is a key and the object's `Arc` (16 bytes in a hash table at
            // most 7/8 full), so that a lookup by index needs no lookup by key.
            assert!(
                namespaced < 120.0,
                "{namespaced} bytes per object with the namespace index"
            );
        }
    }
}
