//! Behaviour of the plain [`WorkQueue`]: client-go's invariants (fair, stingy, dirty/processing,
//! re-add while processing, `len`, shut down and drain) and seed items 22 and 23.

use std::pin::pin;
use std::task::Poll;

use futures::poll;
use kclient_workqueue::{WorkQueue, WorkQueueConfig};

fn queue() -> WorkQueue<String> {
    WorkQueue::new()
}

fn s(v: &str) -> String {
    v.to_owned()
}

/// Gets an item that must already be there (outside the task's budget, which `get` spends
/// and which a long run of gets would exhaust: see
/// `queue::get_spends_the_task_budget_so_a_busy_worker_lets_other_tasks_run`).
async fn get_now(q: &WorkQueue<String>) -> Option<String> {
    let mut get = pin!(tokio::task::unconstrained(q.get()));
    match poll!(get.as_mut()) {
        Poll::Ready(item) => item,
        Poll::Pending => panic!("get should not wait here"),
    }
}

#[tokio::test]
async fn fair_items_come_out_in_order_of_first_add() {
    let q = queue();
    for k in ["a", "b", "c", "b", "a", "d"] {
        q.add(s(k));
    }
    let mut out = Vec::new();
    for _ in 0..4 {
        let item = get_now(&q).await.unwrap();
        q.done(&item);
        out.push(item);
    }
    assert_eq!(
        out,
        ["a", "b", "c", "d"],
        "a re-add does not move a queued item"
    );
}

#[tokio::test]
async fn stingy_an_item_added_twice_is_handed_out_once() {
    // Seed 22: add of a dirty item is a no-op.
    let q = queue();
    q.add(s("foo"));
    q.add(s("foo"));
    q.add(s("foo"));
    assert_eq!(q.len(), 1);
    let item = get_now(&q).await.unwrap();
    assert_eq!(item, "foo");
    assert_eq!(q.len(), 0);
    q.done(&item);
    assert_eq!(q.len(), 0, "nothing left after done");
    q.shut_down();
    assert_eq!(q.get().await, None);
}

#[tokio::test]
async fn add_while_processing_is_requeued_on_done() {
    // Seed 22: add of an item being processed marks it dirty but does not queue it.
    let q = queue();
    q.add(s("foo"));
    let item = get_now(&q).await.unwrap();
    q.add(s("foo"));
    assert_eq!(q.len(), 0, "not queued while processing");
    {
        // Not handed to a second worker either.
        let mut second = pin!(q.get());
        assert!(poll!(second.as_mut()).is_pending());
        q.done(&item);
        assert_eq!(poll!(second.as_mut()), Poll::Ready(Some(s("foo"))));
    }
    q.done(&item);
    assert_eq!(q.len(), 0);
}

#[tokio::test]
async fn many_adds_while_processing_collapse_into_one_rerun() {
    // client-go's TestCollapseWhileProcessing.
    let q = queue();
    q.add(s("foo"));
    let item = get_now(&q).await.unwrap();
    for _ in 0..10 {
        q.add(s("foo"));
    }
    q.add(s("bar"));
    assert_eq!(q.len(), 1, "only bar is queued");
    q.done(&item);
    assert_eq!(q.len(), 2);
    let first = get_now(&q).await.unwrap();
    let second = get_now(&q).await.unwrap();
    assert_eq!([first.as_str(), second.as_str()], ["bar", "foo"]);
    q.done(&first);
    q.done(&second);
    assert_eq!(q.len(), 0, "foo ran exactly once more");
}

#[tokio::test]
async fn len_counts_only_queued_items() {
    // Seed 22: Len counts only queued items (client-go's TestLen).
    let q = queue();
    q.add(s("a"));
    assert_eq!(q.len(), 1);
    q.add(s("b"));
    assert_eq!(q.len(), 2);
    let a = get_now(&q).await.unwrap();
    assert_eq!(q.len(), 1, "the processing item is not counted");
    q.add(s("a"));
    assert_eq!(q.len(), 1, "a dirty processing item is not counted");
    assert!(!q.is_empty());
    q.done(&a);
    assert_eq!(q.len(), 2);
}

#[tokio::test]
async fn get_moves_an_item_from_dirty_to_processing() {
    // After get, the item is no longer dirty: a new add marks it dirty again (it is not a
    // no-op), which shows up as a re-queue on done.
    let q = queue();
    q.add(s("x"));
    let x = get_now(&q).await.unwrap();
    q.done(&x);
    assert_eq!(q.len(), 0, "not dirty after get, so done does not re-queue");
    q.add(s("x"));
    assert_eq!(q.len(), 1, "absent again, so add queues it");
}

#[tokio::test]
async fn reinsert_after_done() {
    // client-go's TestReinsert.
    let q = queue();
    q.add(s("foo"));
    let item = get_now(&q).await.unwrap();
    q.add(item.clone());
    q.done(&item);
    let again = get_now(&q).await.unwrap();
    assert_eq!(again, "foo");
    q.done(&again);
    assert_eq!(q.len(), 0);
}

#[tokio::test]
async fn done_for_an_item_not_processing_changes_nothing() {
    let q = queue();
    q.done(&s("never-added"));
    q.add(s("queued"));
    q.done(&s("queued"));
    assert_eq!(q.len(), 1, "no duplicate of a queued item");
    let item = get_now(&q).await.unwrap();
    q.done(&item);
    q.done(&item);
    assert_eq!(q.len(), 0);
    q.shut_down();
    assert_eq!(q.get().await, None);
}

#[tokio::test]
async fn get_waits_for_an_add() {
    let q = queue();
    let mut get = pin!(q.get());
    assert!(poll!(get.as_mut()).is_pending());
    q.add(s("late"));
    assert_eq!(get.await, Some(s("late")));
}

#[tokio::test]
async fn every_waiting_worker_gets_its_own_item() {
    let q = queue();
    let mut a = pin!(q.get());
    let mut b = pin!(q.get());
    let mut c = pin!(q.get());
    assert!(poll!(a.as_mut()).is_pending());
    assert!(poll!(b.as_mut()).is_pending());
    assert!(poll!(c.as_mut()).is_pending());
    q.add(s("1"));
    q.add(s("2"));
    let got_a = a.await.unwrap();
    let got_b = b.await.unwrap();
    assert_ne!(got_a, got_b);
    assert!(poll!(c.as_mut()).is_pending(), "no third item");
    q.add(s("3"));
    assert_eq!(c.await, Some(s("3")));
}

#[tokio::test]
async fn a_cancelled_get_passes_its_wake_up_on() {
    let q = queue();
    let mut first = Box::pin(q.get());
    let mut second = pin!(q.get());
    assert!(poll!(first.as_mut()).is_pending());
    assert!(poll!(second.as_mut()).is_pending());
    // The wake-up goes to the first waiter, which is then dropped without running.
    q.add(s("only"));
    drop(first);
    assert_eq!(second.await, Some(s("only")));
    assert_eq!(q.len(), 0);
}

#[tokio::test]
async fn shut_down_keeps_queued_items_then_returns_none() {
    // Seed 23 (client-go's TestNoQueueDrainageUsingShutDown and TestBasic's ending).
    let q = queue();
    q.add(s("a"));
    q.add(s("b"));
    q.shut_down();
    assert!(q.shutting_down());
    assert_eq!(q.len(), 2, "shut down discards nothing");
    let a = get_now(&q).await.unwrap();
    let b = get_now(&q).await.unwrap();
    assert_eq!((a.as_str(), b.as_str()), ("a", "b"));
    assert_eq!(q.get().await, None);
    assert_eq!(q.get().await, None, "and keeps returning None");
    q.done(&a);
    q.done(&b);
}

#[tokio::test]
async fn add_after_shut_down_is_ignored() {
    let q = queue();
    q.shut_down();
    q.add(s("ignored"));
    assert_eq!(q.len(), 0);
    assert_eq!(q.get().await, None);
}

#[tokio::test]
async fn done_after_shut_down_still_requeues_a_dirty_item() {
    // Seed 23: Done re-queues items that were made dirty before the shut down.
    let q = queue();
    q.add(s("foo"));
    let item = get_now(&q).await.unwrap();
    q.add(s("foo"));
    q.shut_down();
    q.add(s("bar")); // ignored
    assert_eq!(q.len(), 0);
    q.done(&item);
    assert_eq!(q.len(), 1);
    let again = get_now(&q).await.unwrap();
    assert_eq!(again, "foo");
    q.done(&again);
    assert_eq!(q.get().await, None);
}

#[tokio::test]
async fn shut_down_wakes_every_waiting_worker() {
    let q = queue();
    let mut a = pin!(q.get());
    let mut b = pin!(q.get());
    assert!(poll!(a.as_mut()).is_pending());
    assert!(poll!(b.as_mut()).is_pending());
    q.shut_down();
    assert_eq!(a.await, None);
    assert_eq!(b.await, None);
}

#[tokio::test]
async fn shut_down_twice_is_harmless() {
    let q = queue();
    q.shut_down();
    q.shut_down();
    assert!(q.shutting_down());
    assert_eq!(q.get().await, None);
}

#[tokio::test]
async fn shut_down_with_drain_waits_for_items_being_processed() {
    // client-go's TestQueueDrainageUsingShutDownWithDrain.
    let q = queue();
    q.add(s("foo"));
    q.add(s("bar"));
    let foo = get_now(&q).await.unwrap();
    let bar = get_now(&q).await.unwrap();
    let mut drain = pin!(q.shut_down_with_drain());
    assert!(poll!(drain.as_mut()).is_pending());
    assert!(q.shutting_down());
    q.done(&foo);
    assert!(
        poll!(drain.as_mut()).is_pending(),
        "bar is still being processed"
    );
    q.done(&bar);
    assert_eq!(poll!(drain.as_mut()), Poll::Ready(()));
}

#[tokio::test]
async fn shut_down_with_drain_returns_at_once_when_nothing_is_processing() {
    // Like client-go, it waits for the processing set only; queued items are left to the
    // workers' usual get loop.
    let q = queue();
    q.add(s("queued"));
    let mut drain = pin!(q.shut_down_with_drain());
    assert_eq!(poll!(drain.as_mut()), Poll::Ready(()));
    assert_eq!(get_now(&q).await, Some(s("queued")));
}

#[tokio::test]
async fn shut_down_ends_a_pending_drain() {
    // client-go's TestForceQueueShutdownUsingShutDown.
    let q = queue();
    q.add(s("foo"));
    let foo = get_now(&q).await.unwrap();
    let mut drain = pin!(q.shut_down_with_drain());
    assert!(poll!(drain.as_mut()).is_pending());
    q.shut_down();
    assert_eq!(poll!(drain.as_mut()), Poll::Ready(()));
    q.done(&foo);
}

#[tokio::test]
async fn drain_with_a_dirty_item_hands_it_out_again() {
    // client-go's TestQueueDrainageUsingShutDownWithDrainWithDirtyItem. As in client-go, the
    // drain watches only the processing set: once `done` moves the dirty item back into the
    // queue, nothing is being processed and the drain may return, while the item is still
    // handed out to a worker.
    let q = queue();
    q.add(s("foo"));
    let gotten = get_now(&q).await.unwrap();
    q.add(s("foo"));
    let mut drain = pin!(q.shut_down_with_drain());
    assert!(poll!(drain.as_mut()).is_pending());
    assert_eq!(q.get().await, None, "nothing queued yet: workers may stop");
    q.done(&gotten);
    assert_eq!(poll!(drain.as_mut()), Poll::Ready(()));
    let again = get_now(&q).await.unwrap();
    assert_eq!(again, "foo", "the dirty item is back in the queue");
    q.done(&again);
    assert_eq!(q.get().await, None);
}

#[tokio::test]
async fn handles_share_one_queue() {
    let q = queue();
    let producer = q.clone();
    let worker = q.clone();
    producer.add(s("k"));
    assert_eq!(q.len(), 1);
    let item = get_now(&worker).await.unwrap();
    q.done(&item);
    producer.shut_down();
    assert!(worker.shutting_down());
}

#[tokio::test]
async fn name_and_debug() {
    let q: WorkQueue<u32> = WorkQueue::with_config(WorkQueueConfig::new().name("pods"));
    assert_eq!(q.name(), "pods");
    q.add(1);
    let debug = format!("{q:?}");
    assert!(
        debug.contains("pods") && debug.contains("queued: 1"),
        "{debug}"
    );
    assert_eq!(WorkQueue::<u32>::default().name(), "");
    assert!(format!("{:?}", WorkQueueConfig::<u8>::new().name("x")).contains("\"x\""));
}

#[tokio::test]
async fn a_large_queue_stays_fifo() {
    let q: WorkQueue<u32> = WorkQueue::new();
    for i in 0..10_000 {
        q.add(i);
    }
    for i in 0..5_000 {
        q.add(i); // duplicates of queued items: no effect
    }
    assert_eq!(q.len(), 10_000);
    for expected in 0..10_000 {
        let got = q.get().await.unwrap();
        assert_eq!(got, expected);
        q.done(&got);
    }
    assert!(q.is_empty());
}

/// A worker loop that always finds an item and never awaits anything but `get`: on a
/// current-thread runtime it must still let the other tasks run (tokio's cooperative budget,
/// spent by each item `get` hands out), or it would hold the thread for ever. It stops as soon
/// as another task has run; the bound only turns a starving loop into a failure.
#[tokio::test(flavor = "current_thread")]
async fn get_spends_the_task_budget_so_a_busy_worker_lets_other_tasks_run() {
    let q: WorkQueue<u32> = WorkQueue::new();
    q.add(1);
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    tokio::spawn({
        let ran = std::sync::Arc::clone(&ran);
        async move { ran.store(true, std::sync::atomic::Ordering::SeqCst) }
    });
    let mut handed_out = 0;
    while !ran.load(std::sync::atomic::Ordering::SeqCst) {
        assert!(
            handed_out < 100_000,
            "the worker never gave its thread back"
        );
        let item = q.get().await.expect("an item is always waiting");
        q.done(&item);
        q.add(item);
        handed_out += 1;
    }
}

#[test]
fn works_without_a_runtime_until_get() {
    // Construction, add, len, done and shut_down need no tokio runtime.
    let q: WorkQueue<u8> = WorkQueue::with_config(WorkQueueConfig::new().name("no-runtime"));
    q.add(1);
    assert_eq!(q.len(), 1);
    q.shut_down();
    assert!(q.shutting_down());
}

#[test]
fn futures_are_send() {
    fn assert_send<F: Send>(_: F) {}
    let q: WorkQueue<String> = WorkQueue::new();
    assert_send(q.get());
    assert_send(q.shut_down_with_drain());
    fn assert_handle<H: Clone + Send + Sync + 'static>() {}
    assert_handle::<WorkQueue<String>>();
    assert_handle::<kclient_workqueue::DelayingQueue<String>>();
    assert_handle::<kclient_workqueue::RateLimitingQueue<String>>();
}
