//! [`DelayingQueue`]: a [`WorkQueue`] that can also add an item after a delay (client-go's
//! `TypedDelayingInterface`).

use std::fmt;
use std::hash::Hash;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use crate::metrics::MetricsProvider;
use crate::queue::{WorkQueue, WorkQueueConfig};

/// Options for [`DelayingQueue::with_config`] (client-go's `TypedDelayingQueueConfig`).
pub struct DelayingQueueConfig<T> {
    /// The queue's name, used as the metrics label and in log events. An unnamed queue
    /// reports no metrics.
    pub name: String,
    /// The metrics provider for this queue; when `None`, the process-wide provider is used,
    /// if any.
    pub metrics_provider: Option<Arc<dyn MetricsProvider>>,
    /// An existing queue to add the delay to, instead of a new one. That queue keeps its
    /// own name, metrics and storage (its provider also makes the retries counter), and
    /// `name` and `metrics_provider` are then ignored. This is how a delaying queue gets a
    /// [`QueueStorage`](crate::QueueStorage) of its own, as in client-go.
    pub queue: Option<WorkQueue<T>>,
}

queue_config!(DelayingQueueConfig { queue }, Clone);

impl<T> DelayingQueueConfig<T> {
    /// An unnamed configuration without a metrics provider.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the delay to an existing queue instead of creating one.
    #[must_use]
    pub fn queue(mut self, queue: WorkQueue<T>) -> Self {
        self.queue = Some(queue);
        self
    }
}

/// A [`WorkQueue`] that can also add an item once a delay has passed (client-go's
/// `TypedDelayingInterface`), which is how a controller re-queues work after a failure
/// without a hot loop.
///
/// * [`add_after`](Self::add_after) with a zero delay adds at once.
/// * When the same item is delayed twice before it is due, the **earlier** ready time wins
///   (client-go's `insert`); a later one changes nothing.
/// * A delayed item enters the queue through the ordinary add, so dedup and the
///   dirty/processing rules apply to it when it becomes due.
/// * Waiting items are kept in a min-heap indexed by item, so 100k pending delays cost
///   O(log n) each, and a worker waiting in [`get`](WorkQueue::get) sleeps until exactly the next
///   ready time (re-checking at least every 10 s, client-go's heartbeat).
/// * After shut down, `add_after` is ignored and waiting items are dropped.
///
/// All timing uses `tokio::time`, so tests can drive it with tokio's paused clock. A `get`
/// that sleeps until a delayed item is due uses a tokio timer, so workers must run on a
/// runtime with the time driver enabled (as `#[tokio::main]` and `#[tokio::test]` do);
/// producers may call `add_after` from any thread.
///
/// A cheap handle, like [`WorkQueue`]: clone it freely.
pub struct DelayingQueue<T> {
    queue: WorkQueue<T>,
}

impl<T> Clone for DelayingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
        }
    }
}

impl<T> fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("DelayingQueue").field(&self.queue).finish()
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> Default for DelayingQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> DelayingQueue<T> {
    /// An unnamed delaying queue without metrics (client-go's `NewTypedDelayingQueue`).
    pub fn new() -> Self {
        Self::with_config(DelayingQueueConfig::default())
    }

    /// A delaying queue built from `config` (client-go's `NewTypedDelayingQueueWithConfig`).
    pub fn with_config(config: DelayingQueueConfig<T>) -> Self {
        let DelayingQueueConfig {
            name,
            metrics_provider,
            queue,
        } = config;
        let queue = queue.unwrap_or_else(|| {
            WorkQueue::with_config(WorkQueueConfig {
                name,
                metrics_provider,
                storage: None,
            })
        });
        queue.shared.enable_retries_metric();
        Self { queue }
    }

    /// Adds `item` to the queue once `delay` has passed (client-go's `AddAfter`).
    ///
    /// A zero delay adds at once. If the item is already waiting, the earlier ready time is
    /// kept. Ignored after shut down. Counts one retry in the metrics (unless shut down).
    pub fn add_after(&self, item: T, delay: Duration) {
        self.queue.shared.add_after(item, delay);
    }

    /// The plain [`WorkQueue`] handle under this delaying queue (same queue, same items).
    pub fn queue(&self) -> &WorkQueue<T> {
        &self.queue
    }
}

/// The [`WorkQueue`] methods (`add`, `get`, `done`, `len`, `shut_down`, ...) are the
/// delaying queue's own: it is that queue with a delay added, so it forwards them by
/// dereferencing rather than by restating each one. Delayed items count in `len`, `get` and
/// `try_get` once due; `shut_down` drops those not due yet.
impl<T> Deref for DelayingQueue<T> {
    type Target = WorkQueue<T>;

    fn deref(&self) -> &WorkQueue<T> {
        &self.queue
    }
}

impl<T> From<DelayingQueue<T>> for WorkQueue<T> {
    fn from(queue: DelayingQueue<T>) -> Self {
        queue.queue
    }
}
