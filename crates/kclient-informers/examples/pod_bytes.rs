//! Where the bytes of a cached Pod go: a counting allocator (the `cap` crate) measures what
//! decoding kclient-fake's realistic Pod allocates, in total and part by part, with and
//! without managedFields, next to the inline size of the structs — and what its
//! `PartialObjectMetadata` (a metadata informer's cached object) allocates.
//!
//! ```sh
//! cargo run --release -p kclient-informers --example pod_bytes
//! ```

use std::alloc::System;

use cap::Cap;
use k8s_openapi::api::core::v1::{Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};
use kclient_core::PartialObjectMetadata;
use serde::de::DeserializeOwned;
use serde_json::Value;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// Heap bytes held by `count` values decoded from `json(i)`, per value (the values are kept
/// alive while measuring, as a cache keeps them).
fn heap_per_value<T: DeserializeOwned>(count: usize, json: impl Fn(usize) -> Value) -> usize {
    let inputs: Vec<String> = (0..count).map(|i| json(i).to_string()).collect();
    let before = ALLOCATOR.allocated();
    let values: Vec<T> = inputs
        .iter()
        .map(|s| serde_json::from_str(s).expect("decodes"))
        .collect();
    let after = ALLOCATOR.allocated();
    // The Vec holding the values is the caller's slot, not the value's heap.
    let slots = values.capacity() * std::mem::size_of::<T>();
    drop(values);
    (after - before).saturating_sub(slots) / count
}

fn main() {
    const N: usize = 2000;
    let pod = |i, managed| kclient_fake::samples::realistic_pod(i, managed);
    let part = |name: &'static str| move |i| pod(i, true)[name].clone();
    let json_bytes = pod(1, true).to_string().len();
    let managed_json = pod(1, true)["metadata"]["managedFields"].to_string().len();

    let whole = heap_per_value::<Pod>(N, |i| pod(i, true));
    let stripped = heap_per_value::<Pod>(N, |i| pod(i, false));
    let metadata = heap_per_value::<ObjectMeta>(N, part("metadata"));
    let managed = heap_per_value::<Vec<ManagedFieldsEntry>>(N, |i| {
        pod(i, true)["metadata"]["managedFields"].clone()
    });
    let spec = heap_per_value::<PodSpec>(N, part("spec"));
    // What the server sends a metadata client: the type and the metadata.
    let partial = |i, managed| {
        serde_json::json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                           "metadata": pod(i, managed)["metadata"]})
    };
    let partial_json = partial(1, true).to_string().len();
    let partial_kept = heap_per_value::<PartialObjectMetadata>(N, |i| partial(i, true));
    let partial_stripped = heap_per_value::<PartialObjectMetadata>(N, |i| partial(i, false));
    let status = heap_per_value::<PodStatus>(N, part("status"));

    let inline = std::mem::size_of::<Pod>();
    println!("realistic Pod: {json_bytes} bytes of JSON ({managed_json} of them managedFields)");
    println!("| part | heap bytes per Pod | inline bytes |");
    println!("|---|---|---|");
    println!("| whole Pod, managedFields kept | {whole} | {inline} |");
    println!("| whole Pod, no managedFields | {stripped} | {inline} |");
    println!(
        "| metadata (with managedFields) | {metadata} | {} |",
        std::mem::size_of::<ObjectMeta>()
    );
    println!("| of which managedFields | {managed} | - |");
    println!("| spec | {spec} | {} |", std::mem::size_of::<PodSpec>());
    println!(
        "| status | {status} | {} |",
        std::mem::size_of::<PodStatus>()
    );
    println!(
        "| cached Pod as `Arc<Pod>` (heap + inline + Arc counts), no managedFields | {} | - |",
        stripped + inline + 16
    );
    let partial_inline = std::mem::size_of::<PartialObjectMetadata>();
    println!("its PartialObjectMetadata: {partial_json} bytes of JSON");
    println!("| PartialObjectMetadata, managedFields kept | {partial_kept} | {partial_inline} |");
    println!("| PartialObjectMetadata, no managedFields | {partial_stripped} | {partial_inline} |");
    println!(
        "| cached as `Arc<PartialObjectMetadata>`, no managedFields | {} | - |",
        partial_stripped + partial_inline + 16
    );
}
