//! Metrics hooks for the cache: store size, FIFO depth, pops and processing latency.
//!
//! A store or FIFO built without metrics does no metrics work at all (not even reading the
//! clock). Give one a [`CacheMetrics`] and it reports after each change:
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_cache::{CacheMetrics, Indexer, Indexers, KeyFunc, ThreadSafeStore};
//!
//! #[derive(Default)]
//! struct Size(AtomicUsize);
//! impl CacheMetrics for Size {
//!     fn store_size(&self, items: usize) { self.0.store(items, Ordering::Relaxed); }
//! }
//!
//! let size = Arc::new(Size::default());
//! let store = ThreadSafeStore::new(Indexers::namespace()).with_metrics(size.clone());
//! let indexer = Indexer::<Pod>::from_store(KeyFunc::meta_namespace(), store);
//! let mut pod = Pod::default();
//! pod.metadata.name = Some("a".into());
//! indexer.add(Arc::new(pod)).unwrap();
//! assert_eq!(size.0.load(Ordering::Relaxed), 1);
//! ```

use std::time::Duration;

/// Receives the cache's measurements. Every method has an empty default, so an
/// implementation overrides only what it records. Calls come from the thread that made the
/// change, after the store's or queue's lock is released; they should be quick.
pub trait CacheMetrics: Send + Sync {
    /// The number of objects in a store, after a change.
    fn store_size(&self, _items: usize) {}
    /// The number of queued entries in a FIFO (keys for DeltaFIFO, deltas for RealFIFO),
    /// after a change.
    fn fifo_depth(&self, _depth: usize) {}
    /// A pop handed `deltas` deltas to its process function.
    fn popped(&self, _deltas: usize) {}
    /// How long a pop's process function ran.
    fn process_latency(&self, _elapsed: Duration) {}
    /// The latest resourceVersion a store has seen, after each change that sets it (client-go
    /// 1.37's `store_resource_version` gauge, set from
    /// [`ThreadSafeStore::last_store_sync_resource_version`](crate::ThreadSafeStore::last_store_sync_resource_version)).
    /// [`resource_version_for_metrics`] gives the number client-go's gauge shows.
    fn store_resource_version(&self, _resource_version: &str) {}
}

/// A resourceVersion as a gauge value (client-go's `parseRVForMetricsWithTruncation`): its
/// last 15 digits as an integer, so that it stays below 2^53 and exact in a float; `None`
/// for an empty or non-numeric resourceVersion (client-go then leaves the gauge as it was).
pub fn resource_version_for_metrics(resource_version: &str) -> Option<i64> {
    if resource_version.is_empty() {
        return None;
    }
    let tail = resource_version
        .char_indices()
        .rev()
        .nth(14)
        .map_or(resource_version, |(i, _)| &resource_version[i..]);
    tail.parse().ok()
}

/// Receives a reflector's measurements (client-go's reflector metrics). Every method has an
/// empty default.
pub trait ReflectorMetrics: Send + Sync {
    /// A list (or streaming list) completed with `items` objects in `elapsed`.
    fn list(&self, _items: usize, _elapsed: Duration) {}
    /// A list that was not the reflector's first.
    fn relist(&self) {}
    /// A watch started delivering events.
    fn watch(&self) {}
    /// The resourceVersion the reflector has reached.
    fn last_resource_version(&self, _resource_version: &str) {}
}

/// Hooks for an informer's handlers and store (client-go 1.36's informer metrics: queued
/// items, processing latency, store resourceVersion). Every method has a no-op default;
/// `informer` is the informer's name, `handler` the handler's.
pub trait InformerMetrics: Send + Sync {
    /// Notifications queued for a handler or being handled, after each change.
    fn handler_queue_depth(&self, _informer: &str, _handler: &str, _depth: usize) {}
    /// How long one handler call took.
    fn handler_latency(&self, _informer: &str, _handler: &str, _elapsed: Duration) {}
    /// A handler call panicked (the notification was skipped).
    fn handler_panicked(&self, _informer: &str, _handler: &str) {}
    /// The resourceVersion of the newest object the store took.
    fn store_resource_version(&self, _informer: &str, _resource_version: &str) {}
}
