//! Behaviour of [`RateLimitingQueue`] on tokio's paused clock: client-go's
//! TestRateLimitingQueue, seed items 24 (forget is not done) and 26 (limiters have side
//! effects), and the default controller limiter through the queue.

use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures::poll;
use kclient_workqueue::rate_limiter::{
    ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter, TypedRateLimiter,
};
use kclient_workqueue::{
    default_controller_rate_limiter, DelayingQueue, RateLimitingQueue, RateLimitingQueueConfig,
};
use tokio::time::{advance, Instant};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn s(v: &str) -> String {
    v.to_owned()
}

async fn get_now<T: Clone + Eq + std::hash::Hash + Send + Sync + 'static>(
    q: &RateLimitingQueue<T>,
) -> Option<T> {
    let mut get = pin!(q.get());
    match poll!(get.as_mut()) {
        Poll::Ready(item) => item,
        Poll::Pending => panic!("get should not wait here"),
    }
}

/// The instant at which the next item arrives, relative to `start`.
async fn arrival<T: Clone + Eq + std::hash::Hash + Send + Sync + 'static>(
    q: &RateLimitingQueue<T>,
    start: Instant,
) -> (T, Duration) {
    let item = q.get().await.expect("an item");
    (item, Instant::now() - start)
}

#[tokio::test(start_paused = true)]
async fn add_rate_limited_waits_for_the_limiter_delay() {
    // client-go's TestRateLimitingQueue, observed through arrival times.
    let q = RateLimitingQueue::new(ItemExponentialFailureRateLimiter::new(
        ms(1),
        Duration::from_secs(1),
    ));
    let start = Instant::now();
    q.add_rate_limited(s("one"));
    let (one, at) = arrival(&q, start).await;
    assert_eq!((one.as_str(), at), ("one", ms(1)));
    q.add_rate_limited(one.clone());
    q.done(&one);
    let start = Instant::now();
    let (one, at) = arrival(&q, start).await;
    assert_eq!((one.as_str(), at), ("one", ms(2)));
    assert_eq!(q.num_requeues(&one), 2);

    q.add_rate_limited(s("two"));
    q.add_rate_limited(s("two"));
    assert_eq!(q.num_requeues(&s("two")), 2);
    let start = Instant::now();
    let (two, at) = arrival(&q, start).await;
    assert_eq!(
        (two.as_str(), at),
        ("two", ms(1)),
        "the earlier of 1 ms and 2 ms wins"
    );

    q.forget(&one);
    assert_eq!(q.num_requeues(&one), 0);
    q.done(&one);
    q.add_rate_limited(one.clone());
    let start = Instant::now();
    let (one, at) = arrival(&q, start).await;
    assert_eq!(
        (one.as_str(), at),
        ("one", ms(1)),
        "forget restarts the backoff"
    );
    q.done(&one);
    q.done(&two);
}

#[tokio::test(start_paused = true)]
async fn forget_does_not_release_or_remove_an_item() {
    // Seed 24: Forget only resets the limiter; Done is what releases the item.
    let q = RateLimitingQueue::new(default_controller_rate_limiter());
    q.add(s("k"));
    q.forget(&s("k"));
    assert_eq!(q.len(), 1, "forget leaves a queued item in the queue");
    let k = get_now(&q).await.unwrap();
    q.forget(&k);
    q.add(s("k"));
    assert_eq!(
        q.len(),
        0,
        "still processing after forget: the add only marks it dirty"
    );
    q.done(&k);
    assert_eq!(q.len(), 1, "done released it and re-queued it");
}

#[tokio::test(start_paused = true)]
async fn an_item_never_done_is_blocked_forever() {
    // Seed 24: forgetting to call done blocks that key.
    let q = RateLimitingQueue::new(default_controller_rate_limiter());
    q.add(s("stuck"));
    let stuck = get_now(&q).await.unwrap();
    q.forget(&stuck);
    q.add(s("stuck"));
    q.add_rate_limited(s("stuck"));
    advance(Duration::from_secs(3600)).await;
    assert_eq!(q.len(), 0);
    let mut get = pin!(q.get());
    assert!(poll!(get.as_mut()).is_pending());
}

#[tokio::test(start_paused = true)]
async fn add_rate_limited_after_shut_down_still_asks_the_limiter() {
    // client-go calls When before AddAfter checks the shut down: the failure is recorded.
    let q = RateLimitingQueue::new(ItemFastSlowRateLimiter::new(ms(1), ms(10), 3));
    q.shut_down();
    q.add_rate_limited(s("late"));
    assert_eq!(q.num_requeues(&s("late")), 1);
    advance(ms(100)).await;
    assert_eq!(q.len(), 0);
    assert_eq!(q.get().await, None);
}

#[tokio::test(start_paused = true)]
async fn default_controller_limiter_through_the_queue() {
    // Seed 26: 100 distinct failures fit the burst (5 ms each, the per-item backoff); the
    // bucket then spaces retries 100 ms apart.
    let q = RateLimitingQueue::new(default_controller_rate_limiter());
    let start = Instant::now();
    for i in 0..103u32 {
        q.add_rate_limited(i);
    }
    let mut arrivals = Vec::new();
    for _ in 0..103 {
        let (item, at) = arrival(&q, start).await;
        q.done(&item);
        arrivals.push((item, at));
    }
    for (item, at) in &arrivals[..100] {
        assert!(*item < 100);
        assert_eq!(*at, ms(5));
    }
    assert_eq!(arrivals[100], (100, ms(100)));
    assert_eq!(arrivals[101], (101, ms(200)));
    assert_eq!(arrivals[102], (102, ms(300)));
}

#[tokio::test(start_paused = true)]
async fn retries_back_off_exponentially_per_item() {
    let q = RateLimitingQueue::new(default_controller_rate_limiter());
    q.add(s("flaky"));
    let mut gaps = Vec::new();
    for _ in 0..6 {
        let item = q.get().await.unwrap();
        let failed_at = Instant::now();
        q.add_rate_limited(item.clone());
        q.done(&item);
        let again = q.get().await.unwrap();
        gaps.push(Instant::now() - failed_at);
        q.done(&again);
        q.add(again); // next attempt starts at once
    }
    assert_eq!(gaps, [ms(5), ms(10), ms(20), ms(40), ms(80), ms(160)]);
    assert_eq!(q.num_requeues(&s("flaky")), 6);
}

#[tokio::test(start_paused = true)]
async fn wraps_an_existing_delaying_queue_and_exposes_its_parts() {
    let delaying: DelayingQueue<u8> = DelayingQueue::new();
    let limiter = Arc::new(ItemExponentialFailureRateLimiter::new(ms(3), ms(30)));
    let q = RateLimitingQueue::with_config(
        limiter.clone(),
        RateLimitingQueueConfig::new().delaying_queue(delaying.clone()),
    );
    q.add_rate_limited(9);
    assert_eq!(limiter.num_requeues(&9), 1, "the limiter is shared");
    assert_eq!(q.rate_limiter().num_requeues(&9), 1);
    advance(ms(3)).await;
    assert_eq!(delaying.len(), 1, "same queue underneath");
    assert_eq!(q.queue().len(), 1);
    assert_eq!(q.delaying_queue().len(), 1);
    q.add_after(8, Duration::ZERO);
    assert_eq!(q.len(), 2);
    assert!(!q.is_empty());
    assert_eq!(q.name(), "");
    let clone = q.clone();
    clone.shut_down();
    assert!(q.shutting_down());
    let mut drain = pin!(q.shut_down_with_drain());
    assert_eq!(poll!(drain.as_mut()), Poll::Ready(()));
    assert!(format!("{q:?}").contains("RateLimitingQueue"));
}

#[tokio::test(start_paused = true)]
async fn named_config() {
    let q: RateLimitingQueue<u8> = RateLimitingQueue::with_config(
        default_controller_rate_limiter(),
        RateLimitingQueueConfig::new().name("nodes"),
    );
    assert_eq!(q.name(), "nodes");
    assert!(format!("{:?}", RateLimitingQueueConfig::<u8>::new().name("n")).contains("\"n\""));
}
