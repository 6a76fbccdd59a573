//! The queue interfaces ([`QueueInterface`], [`DelayingInterface`], [`RateLimitingInterface`],
//! client-go's `TypedInterface`, `TypedDelayingInterface`, `TypedRateLimitingInterface`) and
//! the non-blocking `try_get`: generic code runs on every queue of a layer and above, and its
//! futures can be spawned.

use std::time::Duration;

use kclient_workqueue::rate_limiter::ItemExponentialFailureRateLimiter;
use kclient_workqueue::{
    default_controller_rate_limiter, DelayingInterface, DelayingQueue, QueueInterface,
    RateLimitingInterface, RateLimitingQueue, TryGetError, WorkQueue,
};

/// A worker written once for any queue: takes keys until the queue shuts down.
async fn worker<Q: QueueInterface<String>>(queue: Q) -> Vec<String> {
    let mut seen = Vec::new();
    while let Some(key) = queue.get().await {
        seen.push(key.clone());
        queue.done(&key);
    }
    seen
}

/// Adds keys and stops the queue through the trait alone.
fn feed<Q: QueueInterface<String>>(queue: &Q, keys: &[&str]) {
    for key in keys {
        queue.add((*key).to_owned());
    }
    assert_eq!(queue.len(), keys.len());
    assert!(!queue.is_empty());
    assert!(!queue.shutting_down());
    queue.shut_down();
    assert!(queue.shutting_down());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_generic_worker_runs_on_every_queue_and_can_be_spawned() {
    let keys = ["default/a", "default/b", "kube-system/c"];
    let plain: WorkQueue<String> = WorkQueue::new();
    let delaying: DelayingQueue<String> = DelayingQueue::new();
    let rate_limited: RateLimitingQueue<String> =
        RateLimitingQueue::new(default_controller_rate_limiter());
    feed(&plain, &keys);
    feed(&delaying, &keys);
    feed(&rate_limited, &keys);
    // tokio::spawn needs the generic worker's future to be Send.
    let results = [
        tokio::spawn(worker(plain)).await.unwrap(),
        tokio::spawn(worker(delaying)).await.unwrap(),
        tokio::spawn(worker(rate_limited)).await.unwrap(),
    ];
    for seen in results {
        assert_eq!(seen, keys);
    }
}

/// client-go's controller loop, generic over the rate-limiting interface: retries a failing
/// key with the limiter's backoff up to `max_retries`, then drops it.
async fn process_with_retries<Q: RateLimitingInterface<String>>(
    queue: &Q,
    max_retries: usize,
    fails: impl Fn(&str, usize) -> bool,
) -> Vec<(String, usize)> {
    let mut log = Vec::new();
    while let Some(key) = queue.get().await {
        let attempt = queue.num_requeues(&key);
        log.push((key.clone(), attempt));
        if fails(&key, attempt) && attempt < max_retries {
            queue.add_rate_limited(key.clone());
        } else {
            queue.forget(&key);
        }
        queue.done(&key);
        if key == "last" {
            queue.shut_down();
        }
    }
    log
}

#[tokio::test(start_paused = true)]
async fn a_generic_controller_loop_retries_through_the_rate_limiting_interface() {
    let queue = RateLimitingQueue::new(ItemExponentialFailureRateLimiter::new(
        Duration::from_millis(10),
        Duration::from_secs(1),
    ));
    queue.add("flaky".to_owned());
    let started = tokio::time::Instant::now();
    let driver = {
        let queue = queue.clone();
        async move {
            // "last" arrives after flaky's retries (10 + 20 ms of backoff).
            tokio::time::sleep(Duration::from_millis(100)).await;
            queue.add_after("last".to_owned(), Duration::ZERO);
        }
    };
    let (log, ()) = tokio::join!(
        process_with_retries(&queue, 5, |key, attempt| key == "flaky" && attempt < 2),
        driver
    );
    assert_eq!(
        log,
        [
            ("flaky".to_owned(), 0),
            ("flaky".to_owned(), 1),
            ("flaky".to_owned(), 2),
            ("last".to_owned(), 0),
        ]
    );
    assert_eq!(queue.num_requeues(&"flaky".to_owned()), 0, "forgotten");
    assert_eq!(started.elapsed(), Duration::from_millis(100));
}

/// Delays through the trait: the earlier ready time wins, as with the inherent method.
fn schedule<Q: DelayingInterface<&'static str>>(queue: &Q) {
    queue.add_after("x", Duration::from_secs(5));
    queue.add_after("x", Duration::from_secs(1));
    queue.add_after("y", Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn add_after_through_the_delaying_interface() {
    for queue in [
        DelayingQueue::new(),
        RateLimitingQueue::new(default_controller_rate_limiter())
            .delaying_queue()
            .clone(),
    ] {
        schedule(&queue);
        assert_eq!(queue.try_get(), Err(TryGetError::Empty));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(queue.try_get(), Ok("x"), "due at the earlier time");
        assert_eq!(queue.try_get(), Err(TryGetError::Empty));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(queue.try_get(), Ok("y"));
    }
    let rate_limited = RateLimitingQueue::new(default_controller_rate_limiter());
    schedule(&rate_limited);
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(QueueInterface::try_get(&rate_limited), Ok("x"));
}

#[tokio::test]
async fn try_get_takes_a_waiting_item_without_waiting() {
    let q: WorkQueue<&str> = WorkQueue::new();
    assert_eq!(q.try_get(), Err(TryGetError::Empty));
    q.add("a");
    q.add("b");
    let a = q.try_get().unwrap();
    assert_eq!(a, "a", "in order, as get");
    q.add("a");
    assert_eq!(q.try_get(), Ok("b"));
    assert_eq!(
        q.try_get(),
        Err(TryGetError::Empty),
        "a is processing: dirty, not handed out again"
    );
    q.done(&a);
    assert_eq!(q.try_get(), Ok("a"), "queued again by done");
}

#[tokio::test]
async fn try_get_after_shut_down_hands_out_what_is_left_then_says_so() {
    let q: WorkQueue<u8> = WorkQueue::new();
    q.add(1);
    q.add(2);
    q.shut_down();
    assert_eq!(q.try_get(), Ok(1));
    assert_eq!(q.try_get(), Ok(2));
    assert_eq!(q.try_get(), Err(TryGetError::ShutDown));
    assert_eq!(q.get().await, None, "where get returns None");
    assert_eq!(
        TryGetError::ShutDown.to_string(),
        "the work queue is shut down"
    );
    assert_eq!(TryGetError::Empty.to_string(), "the work queue is empty");
}

#[tokio::test(start_paused = true)]
async fn try_get_on_a_rate_limiting_queue_sees_a_retry_once_it_is_due() {
    let q = RateLimitingQueue::new(ItemExponentialFailureRateLimiter::new(
        Duration::from_millis(5),
        Duration::from_secs(1),
    ));
    q.add_rate_limited("k");
    assert_eq!(q.try_get(), Err(TryGetError::Empty));
    tokio::time::advance(Duration::from_millis(4)).await;
    assert_eq!(q.try_get(), Err(TryGetError::Empty));
    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(q.try_get(), Ok("k"));
}
