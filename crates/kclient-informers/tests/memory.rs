//! What a compact informer's sync holds at its peak, counted by a tracking global allocator
//! (so this file is a test binary of its own, with one test: nothing else may allocate while
//! it measures). Against kclient-fake over HTTP, which serves the Pods as protobuf in pages.
//!
//! A decoded cache's sync holds every listed object decoded (that is its cache); a compact
//! one must never do so — its reflector keeps each page's objects encoded as they arrive and
//! the cache adopts them one by one — or the process keeps the decoded peak's memory after
//! the sync (issue 27, `docs/benchmarks.md`).

use std::alloc::System;

use cap::Cap;
use k8s_openapi::api::core::v1::Pod;
use kclient_cache::SharedInformerFactory;
use kclient_core::CancellationToken;
use kclient_fake::{samples, FakeApiServer};
use kclient_rest::{Config, RestClient};
use kclient_typed::Clientset;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

const PODS: usize = 3000;

/// Syncs an informer of every Pod, returns the bytes it allocated at its peak above what was
/// allocated before, and what it holds once synced.
async fn sync(server: &FakeApiServer, compact: bool) -> (usize, usize) {
    let mut config = Config::new(server.url());
    config.qps = None;
    let clientset = Clientset::from_client(RestClient::new(config).unwrap());
    let mut builder = SharedInformerFactory::builder(clientset);
    if compact {
        builder = builder.compact_cache();
    }
    let factory = builder.build();
    let informer = factory.informer::<Pod>();
    let before = ALLOCATOR.allocated();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    assert!(factory.wait_for_cache_sync(&cancel).await.all_synced());
    assert_eq!(informer.get_store().len(), PODS);
    let held = ALLOCATOR.allocated().saturating_sub(before);
    let peak = ALLOCATOR.max_allocated().saturating_sub(before);
    assert_eq!(
        informer.get_store().thread_safe_store().is_compact(),
        compact
    );
    factory.shutdown().await;
    (peak, held)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compact_informer_never_holds_every_listed_object_decoded() {
    let server = FakeApiServer::builder().start().await.unwrap();
    for i in 0..PODS {
        server.seed(samples::realistic_pod(i, true)).unwrap();
    }
    // A first sync warms the server up (what it builds on its first list stays allocated).
    // Then the compact sync: the allocator's peak only grows, so the decoded sync's peak,
    // taken last, is its own.
    sync(&server, true).await;
    let (compact_peak, compact_held) = sync(&server, true).await;
    let (decoded_peak, decoded_held) = sync(&server, false).await;
    println!(
        "{PODS} Pods: compact peak {} held {}, decoded peak {} held {} (bytes per Pod)",
        compact_peak / PODS,
        compact_held / PODS,
        decoded_peak / PODS,
        decoded_held / PODS
    );
    // A decoded Pod with managedFields stripped is ~10 KB of allocations, its protobuf ~2.5 KB.
    assert!(
        compact_held * 3 < decoded_held,
        "the compact cache holds {compact_held} bytes, the decoded one {decoded_held}"
    );
    assert!(
        compact_peak * 2 < decoded_peak,
        "the compact sync peaked at {compact_peak} bytes, the decoded one at {decoded_peak}: \
         the list was held decoded"
    );
}
