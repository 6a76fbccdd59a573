//! [`RateLimitingQueue`]: a [`DelayingQueue`] that asks a [`TypedRateLimiter`] how long to delay
//! a retry (client-go's `TypedRateLimitingInterface`).

use std::fmt;
use std::hash::Hash;
use std::ops::Deref;
use std::sync::Arc;

use crate::delaying_queue::{DelayingQueue, DelayingQueueConfig};
use crate::metrics::MetricsProvider;
use crate::rate_limiter::TypedRateLimiter;

/// Options for [`RateLimitingQueue::with_config`] (client-go's
/// `TypedRateLimitingQueueConfig`).
pub struct RateLimitingQueueConfig<T> {
    /// The queue's name, used as the metrics label and in log events. An unnamed queue
    /// reports no metrics.
    pub name: String,
    /// The metrics provider for this queue; when `None`, the process-wide provider is used,
    /// if any.
    pub metrics_provider: Option<Arc<dyn MetricsProvider>>,
    /// An existing delaying queue to rate-limit, instead of a new one. `name` and
    /// `metrics_provider` are then ignored.
    pub delaying_queue: Option<DelayingQueue<T>>,
}

queue_config!(RateLimitingQueueConfig { delaying_queue }, Clone);

impl<T> RateLimitingQueueConfig<T> {
    /// An unnamed configuration without a metrics provider.
    pub fn new() -> Self {
        Self::default()
    }

    /// Rate-limits an existing delaying queue instead of creating one.
    #[must_use]
    pub fn delaying_queue(mut self, queue: DelayingQueue<T>) -> Self {
        self.delaying_queue = Some(queue);
        self
    }
}

/// A [`DelayingQueue`] whose retries are paced by a [`TypedRateLimiter`] (client-go's
/// `TypedRateLimitingInterface`): the queue a controller's workers use.
///
/// The worker protocol, as in client-go:
///
/// * [`get`](crate::WorkQueue::get) an item; process it;
/// * on success, [`forget`](Self::forget) it (its failure history is cleared);
/// * on a failure worth retrying, [`add_rate_limited`](Self::add_rate_limited) it (it comes
///   back after the limiter's delay); after too many failures
///   ([`num_requeues`](Self::num_requeues)), `forget` it and give up;
/// * in every case, [`done`](crate::WorkQueue::done) it: `forget` does **not** release the item, only
///   `done` does, and an item never marked done is never handed out again.
///
/// ```
/// use kclient_workqueue::{default_controller_rate_limiter, RateLimitingQueue, RateLimitingQueueConfig};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let queue = RateLimitingQueue::with_config(
///     default_controller_rate_limiter(),
///     RateLimitingQueueConfig::new().name("pods"),
/// );
/// queue.add("default/web-0".to_string());
///
/// let key = queue.get().await.unwrap();
/// // The first attempt fails: retry after the limiter's delay (5 ms here).
/// queue.add_rate_limited(key.clone());
/// queue.done(&key);
///
/// let key = queue.get().await.unwrap(); // about 5 ms later
/// assert_eq!(queue.num_requeues(&key), 1);
/// // This attempt succeeds.
/// queue.forget(&key);
/// queue.done(&key);
/// # }
/// ```
///
/// A cheap handle, like [`WorkQueue`](crate::WorkQueue): clone it freely; the clones share the queue and the
/// limiter.
pub struct RateLimitingQueue<T> {
    queue: DelayingQueue<T>,
    rate_limiter: Arc<dyn TypedRateLimiter<T>>,
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            rate_limiter: Arc::clone(&self.rate_limiter),
        }
    }
}

impl<T> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RateLimitingQueue")
            .field(&self.queue)
            .finish()
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> RateLimitingQueue<T> {
    /// An unnamed rate-limiting queue without metrics (client-go's
    /// `NewTypedRateLimitingQueue`). Remember to `forget` items, or the limiter tracks their
    /// failures forever.
    pub fn new(rate_limiter: impl TypedRateLimiter<T> + 'static) -> Self {
        Self::with_config(rate_limiter, RateLimitingQueueConfig::default())
    }

    /// A rate-limiting queue built from `config` (client-go's
    /// `NewTypedRateLimitingQueueWithConfig`).
    pub fn with_config(
        rate_limiter: impl TypedRateLimiter<T> + 'static,
        config: RateLimitingQueueConfig<T>,
    ) -> Self {
        let RateLimitingQueueConfig {
            name,
            metrics_provider,
            delaying_queue,
        } = config;
        let queue = delaying_queue.unwrap_or_else(|| {
            DelayingQueue::with_config(DelayingQueueConfig {
                name,
                metrics_provider,
                queue: None,
            })
        });
        Self {
            queue,
            rate_limiter: Arc::new(rate_limiter),
        }
    }

    /// Adds `item` after the delay the rate limiter gives it (client-go's `AddRateLimited`).
    /// The limiter is asked even after shut down (so it records the failure), then the add
    /// is ignored, as in client-go.
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.rate_limiter.when(&item);
        self.queue.add_after(item, delay);
    }

    /// Clears `item`'s failure history in the rate limiter (client-go's `Forget`). It does
    /// **not** take the item out of the queue, and it does not replace [`done`](crate::WorkQueue::done).
    pub fn forget(&self, item: &T) {
        self.rate_limiter.forget(item);
    }

    /// How many failures the rate limiter has recorded for `item` (client-go's
    /// `NumRequeues`).
    pub fn num_requeues(&self, item: &T) -> usize {
        self.rate_limiter.num_requeues(item)
    }

    /// The rate limiter.
    pub fn rate_limiter(&self) -> &dyn TypedRateLimiter<T> {
        &*self.rate_limiter
    }

    /// The [`DelayingQueue`] handle under this queue (same queue, same items).
    pub fn delaying_queue(&self) -> &DelayingQueue<T> {
        &self.queue
    }
}

/// The [`DelayingQueue`] methods (`add_after`) and, through it, the [`WorkQueue`](crate::WorkQueue) ones
/// (`add`, `get`, `done`, `len`, `shut_down`, `queue`, ...) are the rate-limiting queue's own:
/// it is that queue with a rate limiter added, so it forwards them by dereferencing rather
/// than by restating each one. Rate-limited retries count in `len`, `get` and `try_get` once
/// due.
impl<T> Deref for RateLimitingQueue<T> {
    type Target = DelayingQueue<T>;

    fn deref(&self) -> &DelayingQueue<T> {
        &self.queue
    }
}
