//! The queue interfaces: [`QueueInterface`], [`DelayingInterface`] and
//! [`RateLimitingInterface`] (client-go's `TypedInterface`, `TypedDelayingInterface` and
//! `TypedRateLimitingInterface`), for code that works on any queue of a layer or above.
//!
//! Each trait is implemented by its queue and by the queues built on it: a function taking
//! `impl QueueInterface<T>` takes a [`WorkQueue`], a [`DelayingQueue`] or a
//! [`RateLimitingQueue`]; one taking `impl DelayingInterface<T>` takes the last two. The
//! queues keep their inherent methods, so calling them needs no import of these traits.
//!
//! The traits are for generic code (`Q: RateLimitingInterface<T>`): `get` and
//! `shut_down_with_drain` return `Send` futures, so a generic worker can be spawned on a
//! multi-threaded runtime. They are not object-safe; a `dyn` queue is not needed when every
//! queue is a cheap, cloneable handle.
//!
//! ```
//! use kclient_workqueue::{
//!     default_controller_rate_limiter, DelayingQueue, QueueInterface, RateLimitingQueue,
//! };
//!
//! /// A worker that runs on any queue: processes every key until the queue shuts down.
//! async fn drain<Q: QueueInterface<String>>(queue: &Q) -> Vec<String> {
//!     let mut seen = Vec::new();
//!     while let Some(key) = queue.get().await {
//!         seen.push(key.clone());
//!         queue.done(&key);
//!     }
//!     seen
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let delaying = DelayingQueue::new();
//! let rate_limited = RateLimitingQueue::new(default_controller_rate_limiter());
//! for key in ["default/a", "default/b"] {
//!     delaying.add(key.to_string());
//!     rate_limited.add(key.to_string());
//! }
//! delaying.shut_down();
//! rate_limited.shut_down();
//! assert_eq!(drain(&delaying).await, drain(&rate_limited).await);
//! # }
//! ```

use std::future::Future;
use std::hash::Hash;
use std::time::Duration;

use crate::delaying_queue::DelayingQueue;
use crate::queue::{TryGetError, WorkQueue};
use crate::rate_limiting_queue::RateLimitingQueue;

/// A work queue: fair, stingy, with the dirty/processing rules (client-go's
/// `TypedInterface`). See [`WorkQueue`] for the exact semantics of each method.
pub trait QueueInterface<T>: Send + Sync {
    /// Marks `item` as needing processing; see [`WorkQueue::add`].
    fn add(&self, item: T);

    /// The number of items waiting to be handed out; see [`WorkQueue::len`].
    fn len(&self) -> usize;

    /// Whether no item is waiting to be handed out.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits for the next item, or `None` once shut down and empty; see [`WorkQueue::get`].
    fn get(&self) -> impl Future<Output = Option<T>> + Send;

    /// Takes the next item if one is waiting, without waiting; see [`WorkQueue::try_get`].
    ///
    /// # Errors
    ///
    /// [`TryGetError::Empty`] when nothing is waiting, [`TryGetError::ShutDown`] when the
    /// queue is shut down and empty.
    fn try_get(&self) -> Result<T, TryGetError>;

    /// Marks `item` as finished; see [`WorkQueue::done`].
    fn done(&self, item: &T);

    /// Stops the queue; see [`WorkQueue::shut_down`].
    fn shut_down(&self);

    /// Stops the queue and waits for the items being processed; see
    /// [`WorkQueue::shut_down_with_drain`].
    fn shut_down_with_drain(&self) -> impl Future<Output = ()> + Send;

    /// Whether the queue is shutting down; see [`WorkQueue::shutting_down`].
    fn shutting_down(&self) -> bool;
}

/// A work queue that can also add an item after a delay (client-go's
/// `TypedDelayingInterface`). See [`DelayingQueue`].
pub trait DelayingInterface<T>: QueueInterface<T> {
    /// Adds `item` once `delay` has passed; see [`DelayingQueue::add_after`].
    fn add_after(&self, item: T, delay: Duration);
}

/// A delaying work queue whose retries are paced by a rate limiter (client-go's
/// `TypedRateLimitingInterface`). See [`RateLimitingQueue`].
pub trait RateLimitingInterface<T>: DelayingInterface<T> {
    /// Adds `item` after the rate limiter's delay; see
    /// [`RateLimitingQueue::add_rate_limited`].
    fn add_rate_limited(&self, item: T);

    /// Clears `item`'s failure history; see [`RateLimitingQueue::forget`].
    fn forget(&self, item: &T);

    /// How many failures the rate limiter has recorded for `item`; see
    /// [`RateLimitingQueue::num_requeues`].
    fn num_requeues(&self, item: &T) -> usize;
}

/// Implements [`QueueInterface`] for a queue type by its inherent methods of the same names.
macro_rules! queue_interface_by_inherent_methods {
    ($queue:ident) => {
        impl<T: Clone + Eq + Hash + Send + Sync + 'static> QueueInterface<T> for $queue<T> {
            fn add(&self, item: T) {
                $queue::add(self, item);
            }

            fn len(&self) -> usize {
                $queue::len(self)
            }

            fn get(&self) -> impl Future<Output = Option<T>> + Send {
                $queue::get(self)
            }

            fn try_get(&self) -> Result<T, TryGetError> {
                $queue::try_get(self)
            }

            fn done(&self, item: &T) {
                $queue::done(self, item);
            }

            fn shut_down(&self) {
                $queue::shut_down(self);
            }

            fn shut_down_with_drain(&self) -> impl Future<Output = ()> + Send {
                $queue::shut_down_with_drain(self)
            }

            fn shutting_down(&self) -> bool {
                $queue::shutting_down(self)
            }
        }
    };
}

queue_interface_by_inherent_methods!(WorkQueue);
queue_interface_by_inherent_methods!(DelayingQueue);
queue_interface_by_inherent_methods!(RateLimitingQueue);

impl<T: Clone + Eq + Hash + Send + Sync + 'static> DelayingInterface<T> for DelayingQueue<T> {
    fn add_after(&self, item: T, delay: Duration) {
        DelayingQueue::add_after(self, item, delay);
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> DelayingInterface<T> for RateLimitingQueue<T> {
    fn add_after(&self, item: T, delay: Duration) {
        RateLimitingQueue::add_after(self, item, delay);
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> RateLimitingInterface<T>
    for RateLimitingQueue<T>
{
    fn add_rate_limited(&self, item: T) {
        RateLimitingQueue::add_rate_limited(self, item);
    }

    fn forget(&self, item: &T) {
        RateLimitingQueue::forget(self, item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        RateLimitingQueue::num_requeues(self, item)
    }
}
