//! Behaviour of [`DelayingQueue`] on tokio's paused clock: seed item 25 (earliest ready time
//! wins, zero delay adds at once, due items move together), waking exactly when the next item
//! is due, shut down, and 100k pending items.

use std::collections::HashMap;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use futures::poll;
use kclient_workqueue::{DelayingQueue, DelayingQueueConfig, WorkQueue};
use tokio::time::{advance, Instant};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn s(v: &str) -> String {
    v.to_owned()
}

/// Gets an item that must already be there (outside the task's budget, which `get` spends
/// and which a long run of gets would exhaust: see
/// `queue::get_spends_the_task_budget_so_a_busy_worker_lets_other_tasks_run`).
async fn get_now<T: Clone + Eq + std::hash::Hash + Send + Sync + 'static>(
    q: &DelayingQueue<T>,
) -> Option<T> {
    let mut get = pin!(tokio::task::unconstrained(q.get()));
    match poll!(get.as_mut()) {
        Poll::Ready(item) => item,
        Poll::Pending => panic!("get should not wait here"),
    }
}

#[tokio::test(start_paused = true)]
async fn simple_delay() {
    // client-go's TestSimpleQueue.
    let q = DelayingQueue::new();
    q.add_after(s("foo"), ms(50));
    assert_eq!(q.len(), 0, "not added before the delay");
    advance(ms(49)).await;
    assert_eq!(q.len(), 0);
    advance(ms(1)).await;
    assert_eq!(q.len(), 1, "added exactly at the ready time");
    let item = get_now(&q).await.unwrap();
    q.done(&item);
    assert_eq!(q.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_waiting_worker_wakes_exactly_when_the_item_is_due() {
    let q = DelayingQueue::new();
    let start = Instant::now();
    q.add_after(s("later"), Duration::from_secs(37));
    let item = q.get().await.unwrap();
    assert_eq!(item, "later");
    assert_eq!(Instant::now() - start, Duration::from_secs(37));
}

#[tokio::test(start_paused = true)]
async fn a_sleeping_worker_rearms_for_an_earlier_item() {
    let q = DelayingQueue::new();
    let start = Instant::now();
    q.add_after(s("far"), Duration::from_secs(60));
    let mut get = pin!(q.get());
    assert!(poll!(get.as_mut()).is_pending());
    q.add_after(s("near"), Duration::from_secs(2));
    assert_eq!(get.await, Some(s("near")));
    assert_eq!(Instant::now() - start, Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn zero_delay_adds_at_once() {
    // Seed 25: AddAfter with d <= 0 adds immediately.
    let q = DelayingQueue::new();
    q.add_after(s("now"), Duration::ZERO);
    assert_eq!(q.len(), 1);
    assert_eq!(get_now(&q).await, Some(s("now")));
}

#[tokio::test(start_paused = true)]
async fn duplicates_keep_the_earliest_ready_time() {
    // Seed 25 and client-go's TestDeduping: the earlier readyAt wins either way round.
    let q = DelayingQueue::new();
    q.add_after(s("foo"), ms(50));
    q.add_after(s("foo"), ms(70));
    advance(ms(60)).await;
    assert_eq!(q.len(), 1, "due at 50 ms, not 70 ms");
    let item = get_now(&q).await.unwrap();
    q.done(&item);
    advance(ms(20)).await;
    assert_eq!(q.len(), 0, "the later duplicate left no second entry");

    q.add_after(s("foo"), ms(70));
    q.add_after(s("foo"), ms(50));
    advance(ms(49)).await;
    assert_eq!(q.len(), 0);
    advance(ms(1)).await;
    assert_eq!(q.len(), 1, "moved earlier to 50 ms");
    let item = get_now(&q).await.unwrap();
    q.done(&item);
    advance(ms(100)).await;
    assert_eq!(q.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn add_two_fire_early() {
    // client-go's TestAddTwoFireEarly.
    let q = DelayingQueue::new();
    q.add_after(s("foo"), Duration::from_secs(1));
    q.add_after(s("bar"), ms(50));
    advance(ms(60)).await;
    assert_eq!(get_now(&q).await, Some(s("bar")));
    q.add_after(s("foo"), ms(50));
    advance(ms(60)).await;
    assert_eq!(get_now(&q).await, Some(s("foo")), "foo was brought forward");
    advance(Duration::from_secs(2)).await;
    assert_eq!(q.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn due_items_enter_in_ready_order() {
    // client-go's TestCopyShifting, plus ties in add order.
    let q = DelayingQueue::new();
    q.add_after(s("foo"), Duration::from_secs(1));
    q.add_after(s("bar"), ms(500));
    q.add_after(s("baz"), ms(250));
    q.add_after(s("tie-1"), ms(500));
    q.add_after(s("tie-2"), ms(500));
    assert_eq!(q.len(), 0);
    advance(Duration::from_secs(2)).await;
    assert_eq!(q.len(), 5, "all due items move at once");
    let mut order = Vec::new();
    for _ in 0..5 {
        order.push(get_now(&q).await.unwrap());
    }
    assert_eq!(order, ["baz", "bar", "tie-1", "tie-2", "foo"]);
}

#[tokio::test(start_paused = true)]
async fn a_due_item_is_ahead_of_later_direct_adds() {
    // The item became due before `y` was added, so it is queued first, as client-go's
    // waiting loop would have done at its ready time.
    let q = DelayingQueue::new();
    q.add_after(s("x"), Duration::from_secs(1));
    advance(Duration::from_secs(2)).await;
    q.add(s("y"));
    assert_eq!(get_now(&q).await, Some(s("x")));
    assert_eq!(get_now(&q).await, Some(s("y")));
}

#[tokio::test(start_paused = true)]
async fn a_delayed_item_that_is_already_queued_is_deduped() {
    let q = DelayingQueue::new();
    q.add(s("k"));
    q.add_after(s("k"), ms(10));
    advance(ms(20)).await;
    assert_eq!(q.len(), 1);
    let k = get_now(&q).await.unwrap();
    q.done(&k);
    assert_eq!(q.len(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_delayed_item_being_processed_is_requeued_on_done() {
    let q = DelayingQueue::new();
    q.add(s("k"));
    let k = get_now(&q).await.unwrap();
    q.add_after(s("k"), ms(10));
    advance(ms(20)).await;
    assert_eq!(q.len(), 0, "dirty but processing");
    q.done(&k);
    assert_eq!(q.len(), 1);
    assert_eq!(get_now(&q).await, Some(s("k")));
}

#[tokio::test(start_paused = true)]
async fn shut_down_drops_waiting_items_and_ignores_add_after() {
    // Seed 23: AddAfter after shut down is ignored.
    let q = DelayingQueue::new();
    q.add_after(s("due"), ms(10));
    q.add_after(s("pending"), Duration::from_secs(10));
    advance(ms(20)).await;
    q.shut_down();
    q.add_after(s("ignored"), Duration::ZERO);
    q.add_after(s("ignored-too"), ms(1));
    advance(Duration::from_secs(20)).await;
    assert_eq!(q.len(), 1, "only the item due before the shut down");
    let due = get_now(&q).await.unwrap();
    assert_eq!(due, "due");
    q.done(&due);
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn shut_down_wakes_a_worker_sleeping_on_a_timer() {
    let q = DelayingQueue::<String>::new();
    q.add_after(s("far"), Duration::from_secs(3600));
    let mut get = pin!(q.get());
    assert!(poll!(get.as_mut()).is_pending());
    q.shut_down();
    assert_eq!(get.await, None);
}

#[tokio::test(start_paused = true)]
async fn wrapping_an_existing_queue_shares_it() {
    let plain: WorkQueue<u32> = WorkQueue::new();
    let delaying = DelayingQueue::with_config(DelayingQueueConfig::new().queue(plain.clone()));
    delaying.add_after(7, ms(5));
    advance(ms(5)).await;
    assert_eq!(plain.len(), 1);
    assert_eq!(plain.get().await, Some(7));
    let back: WorkQueue<u32> = delaying.clone().into();
    back.done(&7);
    assert_eq!(delaying.queue().len(), 0);
    assert!(format!("{delaying:?}").contains("DelayingQueue"));
}

#[tokio::test(start_paused = true)]
async fn huge_delays_do_not_overflow() {
    let q = DelayingQueue::new();
    q.add_after(1u8, Duration::MAX);
    q.add_after(2u8, Duration::from_secs(u64::MAX / 2));
    advance(Duration::from_secs(86_400 * 365)).await;
    assert_eq!(q.len(), 0);
    q.add_after(1u8, ms(1));
    advance(ms(1)).await;
    assert_eq!(
        get_now(&q).await,
        Some(1),
        "an earlier time still wins over 'never'"
    );
}

/// Seed 25 at scale: 100k pending items with random delays come out exactly once each, in
/// ready-time order, each once its time has come.
#[tokio::test(start_paused = true)]
async fn one_hundred_thousand_pending_items() {
    const N: u32 = 100_000;
    let q = DelayingQueue::new();
    let start = Instant::now();
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut ready_ms = HashMap::new();
    for i in 0..N {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let delay = 1 + rng % 600_000; // up to 10 minutes, as client-go's benchmark
        q.add_after(i, ms(delay));
        ready_ms.insert(i, delay);
    }
    // Re-adding every item later changes nothing.
    for i in 0..N {
        q.add_after(i, Duration::from_secs(3600));
    }
    assert_eq!(q.len(), 0);

    let mut seen = 0u32;
    let mut last_ready = 0u64;
    for _ in 0..600 {
        advance(Duration::from_secs(1)).await;
        let now_ms = (Instant::now() - start).as_millis() as u64;
        while !q.is_empty() {
            let item = get_now(&q).await.unwrap();
            let ready = ready_ms.remove(&item).expect("each item once");
            assert!(ready <= now_ms, "handed out before it was due");
            assert!(ready >= last_ready, "out of ready-time order");
            last_ready = ready;
            q.done(&item);
            seen += 1;
        }
    }
    advance(Duration::from_secs(1)).await;
    while let Some(item) = {
        let mut get = pin!(tokio::task::unconstrained(q.get()));
        match poll!(get.as_mut()) {
            Poll::Ready(item) => item,
            Poll::Pending => None,
        }
    } {
        ready_ms.remove(&item).expect("each item once");
        q.done(&item);
        seen += 1;
    }
    assert_eq!(seen, N);
    assert!(ready_ms.is_empty());
}
