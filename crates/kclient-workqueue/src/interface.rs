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
use crate::priority_queue::PriorityQueue;
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

/// Implements one of the interfaces for a queue type by the inherent methods of the same
/// names of `$base`, reached from the queue by `$to_base`: the queues that hold their own
/// state ([`WorkQueue`], [`PriorityQueue`]) are their own base; the queues built on a lower
/// layer (a [`DelayingQueue`] on its [`WorkQueue`], a [`RateLimitingQueue`] on its
/// [`DelayingQueue`]) forward to it, as their inherent methods do by dereferencing to it.
/// Each interface method is so written once, here.
macro_rules! interface_by_inherent_methods {
    (QueueInterface for $queue:ident => $base:ident by |$q:ident| $to_base:expr) => {
        impl<T: Clone + Eq + Hash + Send + Sync + 'static> QueueInterface<T> for $queue<T> {
            fn add(&self, item: T) {
                let $q = self;
                $base::add($to_base, item);
            }

            fn len(&self) -> usize {
                let $q = self;
                $base::len($to_base)
            }

            fn get(&self) -> impl Future<Output = Option<T>> + Send {
                let $q = self;
                $base::get($to_base)
            }

            fn try_get(&self) -> Result<T, TryGetError> {
                let $q = self;
                $base::try_get($to_base)
            }

            fn done(&self, item: &T) {
                let $q = self;
                $base::done($to_base, item);
            }

            fn shut_down(&self) {
                let $q = self;
                $base::shut_down($to_base);
            }

            fn shut_down_with_drain(&self) -> impl Future<Output = ()> + Send {
                let $q = self;
                $base::shut_down_with_drain($to_base)
            }

            fn shutting_down(&self) -> bool {
                let $q = self;
                $base::shutting_down($to_base)
            }
        }
    };
    (DelayingInterface for $queue:ident => $base:ident by |$q:ident| $to_base:expr) => {
        impl<T: Clone + Eq + Hash + Send + Sync + 'static> DelayingInterface<T> for $queue<T> {
            fn add_after(&self, item: T, delay: Duration) {
                let $q = self;
                $base::add_after($to_base, item, delay);
            }
        }
    };
    (RateLimitingInterface for $queue:ident) => {
        impl<T: Clone + Eq + Hash + Send + Sync + 'static> RateLimitingInterface<T> for $queue<T> {
            fn add_rate_limited(&self, item: T) {
                $queue::add_rate_limited(self, item);
            }

            fn forget(&self, item: &T) {
                $queue::forget(self, item);
            }

            fn num_requeues(&self, item: &T) -> usize {
                $queue::num_requeues(self, item)
            }
        }
    };
}

interface_by_inherent_methods!(QueueInterface for WorkQueue => WorkQueue by |q| q);
interface_by_inherent_methods!(QueueInterface for DelayingQueue => WorkQueue by |q| q.queue());
interface_by_inherent_methods!(QueueInterface for RateLimitingQueue => WorkQueue by |q| q.queue());
interface_by_inherent_methods!(QueueInterface for PriorityQueue => PriorityQueue by |q| q);
interface_by_inherent_methods!(DelayingInterface for DelayingQueue => DelayingQueue by |q| q);
interface_by_inherent_methods!(
    DelayingInterface for RateLimitingQueue => DelayingQueue by |q| q.delaying_queue()
);
interface_by_inherent_methods!(DelayingInterface for PriorityQueue => PriorityQueue by |q| q);
interface_by_inherent_methods!(RateLimitingInterface for RateLimitingQueue);
interface_by_inherent_methods!(RateLimitingInterface for PriorityQueue);
