//! Pluggable queue storage ([`QueueStorage`], client-go's `TypedQueueConfig.Queue`): the
//! storage orders the waiting items, the queue keeps its dirty/processing rules, and the
//! storage hears of re-adds through `touch` exactly when client-go calls `Touch`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kclient_workqueue::{
    DelayingQueue, DelayingQueueConfig, FifoStorage, QueueStorage, TryGetError, WorkQueue,
    WorkQueueConfig,
};
use parking_lot::Mutex;

/// A priority queue: the item with the highest priority first, ties in order of arrival.
/// Priorities are looked up in a shared table when an item is pushed or touched, so a test
/// can raise an item's priority and re-add it.
struct PriorityStorage {
    priorities: Arc<Mutex<HashMap<&'static str, u32>>>,
    heap: BinaryHeap<(u32, Reverse<u64>, &'static str)>,
    arrivals: u64,
}

impl PriorityStorage {
    fn new(priorities: Arc<Mutex<HashMap<&'static str, u32>>>) -> Self {
        Self {
            priorities,
            heap: BinaryHeap::new(),
            arrivals: 0,
        }
    }

    fn priority(&self, item: &'static str) -> u32 {
        self.priorities.lock().get(item).copied().unwrap_or(0)
    }
}

impl QueueStorage<&'static str> for PriorityStorage {
    fn push(&mut self, item: &'static str) {
        self.arrivals += 1;
        let priority = self.priority(item);
        self.heap.push((priority, Reverse(self.arrivals), item));
    }

    fn pop(&mut self) -> Option<&'static str> {
        self.heap.pop().map(|(_, _, item)| item)
    }

    fn len(&self) -> usize {
        self.heap.len()
    }

    /// Re-ranks the item with its current priority, keeping its place among equals.
    fn touch(&mut self, item: &&'static str) {
        let priority = self.priority(item);
        let entries = std::mem::take(&mut self.heap).into_vec();
        self.heap = entries
            .into_iter()
            .map(|(p, arrival, i)| {
                if i == *item {
                    (priority, arrival, i)
                } else {
                    (p, arrival, i)
                }
            })
            .collect();
    }
}

fn priorities(table: &[(&'static str, u32)]) -> Arc<Mutex<HashMap<&'static str, u32>>> {
    Arc::new(Mutex::new(table.iter().copied().collect()))
}

fn drain_now<T: Clone + Eq + std::hash::Hash + Send + Sync + 'static>(q: &WorkQueue<T>) -> Vec<T> {
    let mut out = Vec::new();
    while let Ok(item) = q.try_get() {
        q.done(&item);
        out.push(item);
    }
    out
}

#[tokio::test]
async fn a_priority_storage_orders_the_waiting_items() {
    let table = priorities(&[("low", 1), ("high", 10), ("mid", 5)]);
    let q = WorkQueue::with_config(WorkQueueConfig::new().storage(PriorityStorage::new(table)));
    for item in ["low", "mid", "high", "other"] {
        q.add(item);
    }
    assert_eq!(q.len(), 4, "len is the storage's");
    assert_eq!(drain_now(&q), ["high", "mid", "low", "other"]);
}

#[tokio::test]
async fn the_queue_still_dedups_and_keeps_an_item_from_two_workers() {
    let table = priorities(&[("a", 1), ("b", 2)]);
    let q = WorkQueue::with_config(WorkQueueConfig::new().storage(PriorityStorage::new(table)));
    q.add("a");
    q.add("a");
    q.add("b");
    assert_eq!(q.len(), 2, "a waits once");
    let b = q.get().await.unwrap();
    assert_eq!(b, "b");
    q.add("b");
    assert_eq!(q.len(), 1, "b is processing: marked dirty, not stored");
    assert_eq!(q.try_get(), Ok("a"));
    assert_eq!(
        q.try_get(),
        Err(TryGetError::Empty),
        "b is not handed to a second worker"
    );
    q.done(&b);
    assert_eq!(q.try_get(), Ok("b"), "stored again on done");
}

/// Records what the queue asks of its storage.
#[derive(Clone, Default)]
struct Recording {
    calls: Arc<Mutex<Vec<String>>>,
    inner: Arc<Mutex<FifoStorage<&'static str>>>,
}

impl QueueStorage<&'static str> for Recording {
    fn push(&mut self, item: &'static str) {
        self.calls.lock().push(format!("push {item}"));
        self.inner.lock().push(item);
    }

    fn pop(&mut self) -> Option<&'static str> {
        let item = self.inner.lock().pop();
        if let Some(item) = item {
            self.calls.lock().push(format!("pop {item}"));
        }
        item
    }

    fn len(&self) -> usize {
        self.inner.lock().len()
    }

    fn touch(&mut self, item: &&'static str) {
        self.calls.lock().push(format!("touch {item}"));
    }
}

#[tokio::test]
async fn touch_is_called_for_a_waiting_item_only() {
    // client-go's Add: Touch when the item is dirty and not processing; an add while
    // processing only marks it dirty, and Done pushes it again.
    let storage = Recording::default();
    let calls = Arc::clone(&storage.calls);
    let q = WorkQueue::with_config(WorkQueueConfig::new().storage(storage));
    q.add("a");
    q.add("a");
    let a = q.try_get().unwrap();
    q.add("a");
    q.add("a");
    q.done(&a);
    q.shut_down();
    q.add("a");
    assert_eq!(
        *calls.lock(),
        ["push a", "touch a", "pop a", "push a"],
        "no touch while processing; nothing after shut down"
    );
}

#[tokio::test]
async fn touch_lets_a_priority_storage_re_rank_a_waiting_item() {
    let table = priorities(&[("a", 1), ("b", 2), ("c", 3)]);
    let q = WorkQueue::with_config(
        WorkQueueConfig::new().storage(PriorityStorage::new(Arc::clone(&table))),
    );
    for item in ["a", "b", "c"] {
        q.add(item);
    }
    table.lock().insert("a", 100);
    q.add("a");
    assert_eq!(q.len(), 3, "a re-add does not store a second copy");
    assert_eq!(drain_now(&q), ["a", "c", "b"]);
}

/// Breaks the contract: every push is stored twice.
#[derive(Default)]
struct Stutter(FifoStorage<u32>);

impl QueueStorage<u32> for Stutter {
    fn push(&mut self, item: u32) {
        self.0.push(item);
        self.0.push(item);
    }

    fn pop(&mut self) -> Option<u32> {
        self.0.pop()
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

#[tokio::test]
async fn a_storage_that_hands_an_item_out_twice_cannot_give_it_to_two_workers() {
    let q = WorkQueue::with_config(WorkQueueConfig::new().storage(Stutter::default()));
    q.add(1);
    q.add(2);
    let first = q.try_get().unwrap();
    assert_eq!(first, 1);
    // The second copy of 1 is dropped (1 is processing): the next item is 2.
    assert_eq!(q.try_get(), Ok(2));
    assert_eq!(
        q.try_get(),
        Err(TryGetError::Empty),
        "the extra copy of 2 is dropped too"
    );
    q.done(&first);
    q.done(&2);
    q.add(1);
    assert_eq!(q.try_get(), Ok(1), "1 can be added and handed out again");
}

#[tokio::test(start_paused = true)]
async fn a_delaying_queue_on_a_custom_storage_orders_due_items_by_it() {
    let table = priorities(&[("soon-low", 1), ("later-high", 9), ("now", 5)]);
    let q = DelayingQueue::with_config(DelayingQueueConfig::new().queue(WorkQueue::with_config(
        WorkQueueConfig::new().storage(PriorityStorage::new(table)),
    )));
    q.add_after("soon-low", Duration::from_millis(10));
    q.add_after("later-high", Duration::from_millis(20));
    q.add("now");
    assert_eq!(q.len(), 1);
    tokio::time::advance(Duration::from_millis(25)).await;
    assert_eq!(q.len(), 3, "both delayed items are due");
    let mut out = Vec::new();
    while let Ok(item) = q.try_get() {
        q.done(&item);
        out.push(item);
    }
    assert_eq!(out, ["later-high", "now", "soon-low"]);
}

#[test]
fn the_default_storage_is_first_in_first_out() {
    let mut fifo = FifoStorage::new();
    assert!(QueueStorage::<u8>::is_empty(&fifo));
    for n in [3u8, 1, 2] {
        fifo.push(n);
    }
    assert_eq!(fifo.len(), 3);
    assert_eq!(
        [fifo.pop(), fifo.pop(), fifo.pop(), fifo.pop()],
        [Some(3), Some(1), Some(2), None]
    );
    assert!(format!("{fifo:?}").contains("len: 0"));
    let q = WorkQueue::with_config(WorkQueueConfig::new().storage(FifoStorage::new()));
    for n in [3u8, 1, 2, 1] {
        q.add(n);
    }
    assert_eq!(drain_now(&q), [3, 1, 2]);
    assert!(format!(
        "{:?}",
        WorkQueueConfig::<u8>::new().storage(FifoStorage::new())
    )
    .contains("storage: true"));
}
