//! client-go's workqueue for Rust: the queue between a controller's event handlers and its
//! workers.
//!
//! Informer event handlers should do almost nothing: they turn an event into a key
//! (`"namespace/name"`) and add it to a work queue. Workers take keys from the queue, read
//! the current object from the cache and reconcile it. The queue makes that safe and cheap:
//! a key added many times is processed once, a key is never processed by two workers at
//! once, a key that changes while it is being processed is processed again afterwards, and
//! failures are retried with backoff.
//!
//! The crate has the three layers of client-go's `util/workqueue` (v0.35), with the same
//! semantics and names in Rust spelling:
//!
//! * [`WorkQueue`]: `add`, `get`, `done`, `len`, `shut_down`, `shut_down_with_drain`,
//!   `shutting_down`, and a non-blocking `try_get`;
//! * [`DelayingQueue`]: plus `add_after`;
//! * [`RateLimitingQueue`]: plus `add_rate_limited`, `forget`, `num_requeues`, paced by a
//!   [`TypedRateLimiter`] from [`rate_limiter`] (usually [`default_controller_rate_limiter`]).
//!
//! Beside them, controller-runtime's [`PriorityQueue`] (its controllers' default queue): one
//! entry per item, the highest priority and the soonest ready time winning when an item is
//! added twice, the highest priority handed out first. kclient-controller's controllers use
//! it.
//!
//! Code generic over a queue uses the traits of these layers, [`QueueInterface`],
//! [`DelayingInterface`] and [`RateLimitingInterface`] (client-go's `TypedInterface`,
//! `TypedDelayingInterface` and `TypedRateLimitingInterface`); each queue implements the
//! traits of its layer and of the layers below. The order in which waiting items are handed
//! out is the [`QueueStorage`]'s, first in, first out unless
//! [`WorkQueueConfig::storage`] supplies another (client-go's `TypedQueueConfig.Queue`, for a
//! priority queue for instance).
//!
//! Any `T: Clone + Eq + Hash + Send + Sync + 'static` can be an item. Queues are cheap handles
//! (an `Arc` inside): clone one into every event handler and worker. `get` is `async`; the
//! other operations are plain methods that never wait. Delays use `tokio::time`, so tests can
//! run them on tokio's paused clock. Queues with a name can report client-go's metrics
//! through a [`MetricsProvider`](metrics::MetricsProvider) (with a ready-made Prometheus
//! provider behind the `prometheus` feature).
//!
//! # The dirty/processing model
//!
//! A queue keeps three collections: the **queue** (an ordered list of items waiting for a
//! worker), the **dirty** set (items that need processing) and the **processing** set (items
//! a worker holds). An item moves through them like this:
//!
//! ```text
//!               add                      get                        done
//!   (absent) --------> dirty + queue -----------> processing ---------------> (absent)
//!                        ^    |                       |
//!                        |    | add: no-op            | add: mark dirty (not queued)
//!                        |    v (already dirty)       v
//!                        |  (unchanged)          processing + dirty
//!                        |                            |
//!                        '----------------------------'
//!                                     done: back into the queue
//! ```
//!
//! The invariants (client-go's `Typed` comments): every item in the queue is dirty and not
//! processing; the processing set never meets the queue; so no item is queued twice, and no
//! item is handed to two workers at once. [`WorkQueue::len`] counts only the queue. After
//! [`WorkQueue::shut_down`], adds are ignored but queued items are still handed out, and `get`
//! returns `None` once the queue is empty.
//!
//! Delayed items ([`DelayingQueue::add_after`]) wait in a separate min-heap indexed by item
//! (the earliest ready time wins for duplicates) and enter the queue through the ordinary
//! `add` when they are due.
//!
//! # Example
//!
//! A worker pool with retries, as in client-go's workqueue example (see also
//! `examples/workqueue.rs`):
//!
//! The examples use the paths a program depending on the `kclient` facade writes
//! (`kclient::workqueue::…`); one depending on kclient-workqueue alone writes `kclient_workqueue::…`.
//!
//! ```
//! # mod kclient { pub mod workqueue { pub use ::kclient_workqueue::*; } } // the facade's paths
//! use kclient::workqueue::{default_controller_rate_limiter, RateLimitingQueue, RateLimitingQueueConfig};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
//! let queue = RateLimitingQueue::with_config(
//!     default_controller_rate_limiter(),
//!     RateLimitingQueueConfig::new().name("example"),
//! );
//!
//! // Event handlers add keys; duplicates collapse into one.
//! for key in ["default/a", "default/b", "default/a"] {
//!     queue.add(key.to_string());
//! }
//! assert_eq!(queue.len(), 2);
//!
//! // Two workers. "default/b" fails once and is retried after a backoff.
//! let mut workers = Vec::new();
//! for _ in 0..2 {
//!     let queue = queue.clone();
//!     workers.push(tokio::spawn(async move {
//!         let mut processed = Vec::new();
//!         while let Some(key) = queue.get().await {
//!             let failed = key == "default/b" && queue.num_requeues(&key) == 0;
//!             if failed {
//!                 queue.add_rate_limited(key.clone());
//!             } else {
//!                 queue.forget(&key);
//!                 processed.push(key.clone());
//!             }
//!             queue.done(&key);
//!         }
//!         processed
//!     }));
//! }
//! // Give the retry time to happen (the paused clock makes this instant), then stop the
//! // workers: they finish what is queued and their `get` returns `None`.
//! tokio::time::sleep(std::time::Duration::from_secs(1)).await;
//! queue.shut_down();
//! let mut processed: Vec<String> = Vec::new();
//! for worker in workers {
//!     processed.extend(worker.await.unwrap());
//! }
//! processed.sort();
//! assert_eq!(processed, ["default/a", "default/b"]);
//! # }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

// First: the macro it defines is used by the queue modules below.
#[macro_use]
mod queue_config;

mod delay_heap;
mod delaying_queue;
mod interface;
pub mod metrics;
mod parallelizer;
mod priority_queue;
#[cfg(feature = "prometheus")]
pub mod prometheus;
mod queue;
pub mod rate_limiter;
mod rate_limiting_queue;
mod storage;

pub use delaying_queue::{DelayingQueue, DelayingQueueConfig};
pub use interface::{DelayingInterface, QueueInterface, RateLimitingInterface};
pub use parallelizer::{parallelize_until, ParallelizeOptions};
pub use priority_queue::{AddOpts, PriorityQueue, PriorityQueueConfig};
pub use queue::{TryGetError, WorkQueue, WorkQueueConfig};
pub use rate_limiter::{
    default_controller_rate_limiter, default_item_based_rate_limiter, TypedRateLimiter,
};
pub use rate_limiting_queue::{RateLimitingQueue, RateLimitingQueueConfig};
pub use storage::{FifoStorage, QueueStorage};

/// The hash map used for per-item bookkeeping: std's map with foldhash's per-instance
/// randomly seeded hasher, several times faster than SipHash on short keys.
pub(crate) type ItemMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
