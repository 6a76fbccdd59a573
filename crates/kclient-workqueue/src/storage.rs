//! [`QueueStorage`]: where a [`WorkQueue`](crate::WorkQueue) keeps the items waiting for a worker
//! (client-go's `workqueue.Queue[T]`, supplied through `TypedQueueConfig.Queue`).
//!
//! The queue decides *whether* an item waits (the dirty/processing rules, dedup, shut down);
//! the storage decides *in which order* waiting items are handed out. The default,
//! [`FifoStorage`], hands them out in the order they were first added (client-go's
//! `DefaultQueue`). Another order, such as a priority queue, plugs in through
//! [`WorkQueueConfig::storage`](crate::WorkQueueConfig::storage):
//!
//! ```
//! use std::collections::BinaryHeap;
//! use std::cmp::Reverse;
//! use kclient_workqueue::{WorkQueue, WorkQueueConfig, QueueStorage};
//!
//! /// Lowest number first, whatever the order of the adds.
//! #[derive(Default)]
//! struct LowestFirst(BinaryHeap<Reverse<u32>>);
//!
//! impl QueueStorage<u32> for LowestFirst {
//!     fn push(&mut self, item: u32) {
//!         self.0.push(Reverse(item));
//!     }
//!     fn pop(&mut self) -> Option<u32> {
//!         self.0.pop().map(|Reverse(item)| item)
//!     }
//!     fn len(&self) -> usize {
//!         self.0.len()
//!     }
//! }
//!
//! let queue = WorkQueue::with_config(WorkQueueConfig::new().storage(LowestFirst::default()));
//! for n in [30, 10, 20, 10] {
//!     queue.add(n);
//! }
//! assert_eq!(queue.len(), 3, "the queue still dedups: 10 waits once");
//! assert_eq!(queue.try_get(), Ok(10));
//! assert_eq!(queue.try_get(), Ok(20));
//! ```

use std::collections::VecDeque;
use std::fmt;

/// The storage of the items waiting in a [`WorkQueue`](crate::WorkQueue) (client-go's
/// `workqueue.Queue[T]` interface).
///
/// The queue calls these methods under its lock, one at a time (client-go: "always called
/// from the same goroutine"), so they must be quick and must not call back into the queue.
/// The queue guarantees that it pushes an item only when that item is not already stored,
/// so the storage never holds duplicates; in return the storage must hand out every pushed
/// item exactly once, through [`pop`](Self::pop). An item it loses stays marked as waiting
/// and is never handed out; an item it hands out twice, or one it was never given, is
/// dropped by the queue with a warning.
pub trait QueueStorage<T>: Send {
    /// Stores a new waiting item (client-go's `Push`).
    fn push(&mut self, item: T);

    /// Takes the next item to hand out, or `None` when empty (client-go's `Pop`).
    fn pop(&mut self) -> Option<T>;

    /// How many items are stored (client-go's `Len`).
    fn len(&self) -> usize;

    /// Whether no item is stored.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `item`, already stored, was added again (client-go's `Touch`). A priority queue may
    /// re-rank it here; the default does nothing. Not called for an item that is being
    /// processed: that one is not stored, and is pushed again when its worker is done.
    fn touch(&mut self, item: &T) {
        let _ = item;
    }
}

/// The default storage: first added, first handed out (client-go's `DefaultQueue`).
pub struct FifoStorage<T> {
    items: VecDeque<T>,
}

impl<T> FifoStorage<T> {
    /// An empty FIFO.
    pub fn new() -> Self {
        Self {
            items: VecDeque::new(),
        }
    }
}

impl<T> Default for FifoStorage<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for FifoStorage<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FifoStorage")
            .field("len", &self.items.len())
            .finish()
    }
}

impl<T: Send> QueueStorage<T> for FifoStorage<T> {
    fn push(&mut self, item: T) {
        self.items.push_back(item);
    }

    fn pop(&mut self) -> Option<T> {
        self.items.pop_front()
    }

    fn len(&self) -> usize {
        self.items.len()
    }
}

/// What a queue's state holds: the FIFO inline (no virtual call on the hot path of the
/// default queue), or a storage the user supplied.
pub(crate) enum Storage<T> {
    /// The default, [`FifoStorage`]'s order.
    Fifo(VecDeque<T>),
    /// A storage from [`WorkQueueConfig::storage`](crate::WorkQueueConfig::storage).
    Custom(Box<dyn QueueStorage<T>>),
}

impl<T> Storage<T> {
    pub(crate) fn push(&mut self, item: T) {
        match self {
            Storage::Fifo(items) => items.push_back(item),
            Storage::Custom(storage) => storage.push(item),
        }
    }

    pub(crate) fn pop(&mut self) -> Option<T> {
        match self {
            Storage::Fifo(items) => items.pop_front(),
            Storage::Custom(storage) => storage.pop(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Storage::Fifo(items) => items.len(),
            Storage::Custom(storage) => storage.len(),
        }
    }

    pub(crate) fn touch(&mut self, item: &T) {
        if let Storage::Custom(storage) = self {
            storage.touch(item);
        }
    }

    /// The stored items in order, when the order is known without taking them out (the
    /// FIFO); for the invariant checks of the tests.
    #[cfg(test)]
    pub(crate) fn fifo_items(&self) -> Option<&VecDeque<T>> {
        match self {
            Storage::Fifo(items) => Some(items),
            Storage::Custom(_) => None,
        }
    }
}
