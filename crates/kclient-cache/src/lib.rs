//! kclient-cache: client-go's informer cache for Rust — shared informers and their factory,
//! event handlers, the reflector, the store and indexer, the two FIFOs and listers.
//!
//! ```text
//!  reflector --add/update/delete/replace/resync--> RealFifo (default) or DeltaFifo
//!                                                       |  pop (no lock held)
//!                                                       v
//!                                   process_deltas: Indexer first, then Notifications
//!                                                       |
//!                               Lister <-- Indexer      '--> one queue and task per handler
//! ```
//!
//! * [`SharedInformerFactory`]: one [`SharedIndexInformer`] per resource type, made on
//!   request through kclient-core's [`ListerWatcherFor`] (kclient-typed's `Clientset`;
//!   kclient-informers generates accessors such as `factory.core_v1().pods()`) or
//!   [`DynamicListerWatcherFor`] (`for_resource`, a [`GenericInformer`]: kclient-dynamic's
//!   `DynamicClient` for whole objects, its `MetadataClient` for metadata-only informers); `start`,
//!   `wait_for_cache_sync`, `shutdown`.
//! * [`SharedIndexInformer`]: one reflector and indexed cache fanned out to any number of
//!   [`ResourceEventHandler`]s ([`ResourceEventHandlerFuncs`] for closures,
//!   [`FilteringResourceEventHandler`], [`EnqueueObjectKey`] to feed a workqueue), each
//!   with its own queue and task, its own resync period, and a
//!   [`ResourceEventHandlerRegistration`] with `has_synced`.
//! * [`wait_for_cache_sync`]: waits for informers and registrations without polling.
//! * [`InformerController`] (client-go's `cache.Controller`), [`new_informer`],
//!   [`new_indexer_informer`]: the low-level engine and single-handler informers over a
//!   store of your own.
//! * [`Reflector`]: keeps a store equal to the server through any [`ListerWatcher`]
//!   (streaming lists or list+watch, client-go's recovery rules, backoff and resync), and
//!   [`ListWatch`] for custom sources; [`testing::FakeControllerSource`] for tests.
//!   [`watch_with_deadline`]: the client-side deadline every reflector watch gets
//!   (`timeoutSeconds` + [`WATCH_DEADLINE_GRACE`]), so a silent server cannot stall it.
//! * [`ThreadSafeStore`] and [`Indexer`]: objects as `Arc<K>` by key, with named
//!   [`Indexers`] (`by_index`, `index_keys`, `list_index_func_values`, `add_indexers`),
//!   atomic `replace`, reads that never wait for a replace; [`KeyFunc`]s (`meta_namespace`,
//!   `deletion_handling_meta_namespace`, or your own).
//! * [`DeltaFifo`] and [`RealFifo`]: client-go's two queues between the reflector and the
//!   cache (RealFIFO, every delta in order with batch pops, is the informers' default; an
//!   informer on a DeltaFIFO, [`FifoKind::Delta`](FifoKind), needs the `informer-delta-fifo`
//!   feature, in the default features).
//! * [`process_deltas()`]: what an informer does with popped deltas (indexer first, then
//!   add/update/delete [`Notification`]s).
//! * [`Lister`]: `list(selector)`, `namespaced(ns).get(name)`, `by_index`.
//! * [`TransformFunc`] (with `strip_managed_fields`), [`CacheMetrics`],
//!   [`ReflectorMetrics`] and [`InformerMetrics`] hooks.
//!
//! Every object is an `Arc<K>` from the moment it enters a FIFO: the store, every index,
//! every delta, notification and lister result share it, and no read clones an object.
//! No queue or store lock is held while user code runs (process functions, transforms,
//! index functions). The crate depends on `kclient-core` only: no HTTP.
//!
//! # Example
//!
//! The parts an informer is made of, by hand: a reflector's writes go through a FIFO into
//! an indexer; a lister reads it. (The [`shared_informer`] and [`factory`] modules show the
//! informer itself.)
//!
//! The examples use the paths a program depending on the `kclient` facade writes
//! (`kclient::cache::…`); one depending on kclient-cache alone writes `kclient_cache::…`.
//!
//! ```
//! # mod kclient { pub mod k8s_openapi { pub use ::k8s_openapi::*; } pub mod core { pub use ::kclient_core::*; } pub mod cache { pub use ::kclient_cache::*; } } // the facade's paths
//! use std::sync::Arc;
//! use kclient::k8s_openapi::api::core::v1::Pod;
//! use kclient::cache::{
//!     process_deltas, Indexer, Indexers, KeyFunc, Lister, Notification, Queue, RealFifo,
//!     RealFifoOptions,
//! };
//! use kclient::core::labels::Selector;
//!
//! fn pod(name: &str) -> Arc<Pod> {
//!     let mut pod = Pod::default();
//!     pod.metadata.namespace = Some("prod".into());
//!     pod.metadata.name = Some(name.into());
//!     Arc::new(pod)
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let indexer = Indexer::new(KeyFunc::deletion_handling_meta_namespace(), Indexers::<Pod>::namespace());
//! let fifo = RealFifo::new(RealFifoOptions::default());
//!
//! // What a reflector does: list, then watch.
//! fifo.replace(vec![pod("a"), pod("b")], "10").unwrap();
//! fifo.delete(pod("a")).unwrap();
//!
//! // What an informer does: pop, apply, notify.
//! let mut events = Vec::new();
//! while !fifo.is_empty() {
//!     fifo.pop(|deltas, initial| {
//!         process_deltas(&indexer, deltas, initial, |n| events.push(format!("{n:?}")))
//!             .map_err(|e| kclient::cache::ProcessError::Failed(e.into()))
//!     })
//!     .await
//!     .unwrap();
//! }
//! assert!(fifo.has_synced());
//! assert_eq!(events.len(), 3); // add a, add b, delete a
//!
//! let lister = Lister::<Pod>::new(indexer);
//! let names: Vec<_> = lister.list(&Selector::everything()).iter().map(|p| p.metadata.name.clone()).collect();
//! assert_eq!(names, [Some("b".to_string())]);
//! # }
//! ```
//!
//! [`DeletedFinalStateUnknown`]: kclient_core::DeletedFinalStateUnknown
//! [`ListerWatcher`]: kclient_core::ListerWatcher
//! [`ListerWatcherFor`]: kclient_core::ListerWatcherFor
//! [`DynamicListerWatcherFor`]: kclient_core::DynamicListerWatcherFor
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod announced;
pub mod backoff;
pub mod controller;
pub mod delta;
pub mod delta_fifo;
pub mod factory;
pub mod fifo;
pub mod generic_informer;
pub mod handler;
pub mod index;
pub mod indexer;
pub mod informer_queue;
mod initial_events;
mod intake;
pub mod key_func;
mod lane_pool;
pub mod list_watch;
mod listener;
pub mod lister;
pub mod metrics;
pub mod process_deltas;
mod processor;
pub mod queue;
pub mod real_fifo;
pub mod reflector;
pub mod representation;
pub mod shared_informer;
pub mod store;
mod store_key;
// Without the `compact` feature only the decoded representation is compiled in: the compact
// one's slot and its state are then unused.
#[cfg_attr(not(feature = "compact"), allow(dead_code))]
mod stored;
#[cfg(test)]
mod test_objects;
pub mod testing;
pub mod thread_safe_store;
pub mod transaction;
pub mod transform;
pub mod undelta_store;
pub mod wait;
pub mod watch_deadline;

pub use backoff::ExponentialBackoffManager;
pub use controller::{
    new_indexer_informer, new_informer, InformerController, InformerControllerConfig, ProcessFunc,
    WaitBeforePop,
};
#[allow(deprecated)]
pub use controller::{Controller, ControllerConfig};
pub use delta::{BookmarkInfo, Delta, DeltaType, Deltas, ReplacedAllInfo};
pub use delta_fifo::{DeltaFifo, DeltaFifoOptions};
pub use factory::{InformerSettings, SharedInformerFactory, SyncResult};
pub use fifo::Fifo;
pub use generic_informer::GenericInformer;
pub use handler::{
    EnqueueObjectKey, FilteringResourceEventHandler, ResourceEventHandler,
    ResourceEventHandlerFuncs,
};
pub use index::{
    index_func_to_key_func_adapter, meta_namespace_index_func, IndexError, IndexFunc,
    IndexFuncError, Indexers, NAMESPACE_INDEX,
};
pub use indexer::{new_store, Indexer};
pub use informer_queue::{FifoKind, InformerQueue};
pub use key_func::{deleted_object_key, KeyFunc, KeyFuncError};
pub use list_watch::ListWatch;
pub use lister::{list_all, list_all_by_namespace, Lister, NamespaceLister};
pub use metrics::{resource_version_for_metrics, CacheMetrics, InformerMetrics, ReflectorMetrics};
pub use process_deltas::{process_deltas, Notification};
pub use queue::{PopError, ProcessError, Queue};
pub use real_fifo::{RealFifo, RealFifoOptions, DEFAULT_BATCH_SIZE};
pub use reflector::{
    default_watch_error_handler, Reflector, ReflectorError, ReflectorOptions, ShouldResyncFunc,
    WatchError, WatchErrorHandler, DEFAULT_MIN_WATCH_TIMEOUT, WATCH_LIST_CONSISTENCY_DETECTOR_ENV,
};
pub use representation::{CacheRepresentation, EncodedList, ObjectCodec, DEFAULT_RECENTLY_DECODED};
pub use shared_informer::{
    HandlerOptions, InformerError, ResourceEventHandlerRegistration, SharedIndexInformer,
    SharedIndexInformerOptions, MINIMUM_RESYNC_PERIOD,
};
pub use store::{KeyListerGetter, Store, StoreError};
pub use thread_safe_store::ThreadSafeStore;
pub use transaction::{Transaction, TransactionError};
pub use transform::TransformFunc;
pub use undelta_store::UndeltaStore;
pub use wait::{
    wait_for_cache_sync, wait_for_named_cache_sync, InformerSynced, Synced, SYNCED_POLL_PERIOD,
};
pub use watch_deadline::{
    watch_deadline, watch_timeout_seconds, watch_with_deadline, WATCH_DEADLINE_GRACE,
};
