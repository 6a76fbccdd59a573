//! The priority queue against controller-runtime's `priorityqueue` tests, on tokio's paused
//! clock: de-duplication, the highest priority and the soonest ready time winning, first in,
//! first out within a priority, items being processed held back, delays, rate limits,
//! shutdown, and the depth metric per priority.

use std::collections::{BTreeMap, HashSet};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use futures::poll;
use kclient_workqueue::metrics::{CounterMetric, MetricsProvider, PriorityGaugeMetric};
use kclient_workqueue::rate_limiter::ItemExponentialFailureRateLimiter;
use kclient_workqueue::{AddOpts, PriorityQueue, PriorityQueueConfig, TryGetError};
use tokio::time::{advance, Instant};

/// The depth per priority, the adds and the retries a queue reported.
#[derive(Default)]
struct Recorded {
    depth: BTreeMap<i32, i64>,
    adds: u64,
    retries: u64,
}

#[derive(Default, Clone)]
struct Recorder(Arc<Mutex<Recorded>>);

struct Depth(Recorder);
impl PriorityGaugeMetric for Depth {
    fn inc(&self, priority: i32) {
        *self.0 .0.lock().unwrap().depth.entry(priority).or_default() += 1;
    }
    fn dec(&self, priority: i32) {
        *self.0 .0.lock().unwrap().depth.entry(priority).or_default() -= 1;
    }
}

struct Adds(Recorder);
impl CounterMetric for Adds {
    fn inc(&self) {
        self.0 .0.lock().unwrap().adds += 1;
    }
}

struct Retries(Recorder);
impl CounterMetric for Retries {
    fn inc(&self) {
        self.0 .0.lock().unwrap().retries += 1;
    }
}

impl MetricsProvider for Recorder {
    fn new_depth_with_priority_metric(&self, _: &str) -> Box<dyn PriorityGaugeMetric> {
        Box::new(Depth(self.clone()))
    }
    fn new_adds_metric(&self, _: &str) -> Box<dyn CounterMetric> {
        Box::new(Adds(self.clone()))
    }
    fn new_retries_metric(&self, _: &str) -> Box<dyn CounterMetric> {
        Box::new(Retries(self.clone()))
    }
}

impl Recorder {
    fn depth(&self) -> Vec<(i32, i64)> {
        self.0
            .lock()
            .unwrap()
            .depth
            .iter()
            .map(|(p, d)| (*p, *d))
            .collect()
    }
    fn adds(&self) -> u64 {
        self.0.lock().unwrap().adds
    }
    fn retries(&self) -> u64 {
        self.0.lock().unwrap().retries
    }
}

fn queue() -> (PriorityQueue<&'static str>, Recorder) {
    let recorder = Recorder::default();
    let queue = PriorityQueue::with_config(
        PriorityQueueConfig::new()
            .name("test")
            .metrics_provider(Arc::new(recorder.clone())),
    );
    (queue, recorder)
}

/// "returns an item", "returns items in order".
#[tokio::test(start_paused = true)]
async fn returns_items_first_in_first_out() {
    let (q, metrics) = queue();
    q.add("foo");
    q.add("bar");
    assert_eq!(q.get_with_priority().await, Some(("foo", 0)));
    assert_eq!(q.get_with_priority().await, Some(("bar", 0)));
    assert_eq!(metrics.depth(), [(0, 0)]);
    assert_eq!(metrics.adds(), 2);
    assert_eq!(metrics.retries(), 0);
}

/// "doesn't return an item that is currently locked", "returns an item as soon as its
/// unlocked", "enqueues a locked item".
#[tokio::test(start_paused = true)]
async fn an_item_being_processed_waits_for_its_done() {
    let (q, metrics) = queue();
    q.add("foo");
    assert_eq!(q.get().await, Some("foo"));
    q.add("foo");
    q.add("bar");
    assert_eq!(q.len(), 2, "the re-added item counts");
    assert_eq!(q.get().await, Some("bar"));
    q.add("baz");
    {
        // baz is ready; foo is held back until its done even though it came first.
        assert_eq!(q.get().await, Some("baz"));
        let mut next = pin!(q.get());
        assert_eq!(poll!(next.as_mut()), Poll::Pending);
        q.done(&"foo");
        assert_eq!(next.await, Some("foo"));
    }
    assert_eq!(metrics.depth(), [(0, 0)]);
    assert_eq!(metrics.adds(), 4);
}

/// "de-duplicates items".
#[tokio::test(start_paused = true)]
async fn de_duplicates_items() {
    let (q, metrics) = queue();
    q.add("foo");
    q.add("foo");
    assert_eq!(q.len(), 1);
    assert_eq!(metrics.depth(), [(0, 1)]);
    assert_eq!(metrics.adds(), 1);
}

/// "retains the highest priority", "will not decrease the priority".
#[tokio::test(start_paused = true)]
async fn keeps_the_highest_priority() {
    let (q, metrics) = queue();
    q.add_with_opts(AddOpts::new().priority(1), ["foo"]);
    q.add_with_opts(AddOpts::new().priority(2), ["foo"]);
    q.add_with_opts(AddOpts::new().priority(2), ["bar"]);
    q.add_with_opts(AddOpts::new().priority(1), ["bar"]);
    assert_eq!(q.get_with_priority().await, Some(("foo", 2)));
    assert_eq!(q.get_with_priority().await, Some(("bar", 2)));
    assert!(q.is_empty());
    assert_eq!(metrics.depth(), [(1, 0), (2, 0)]);
    assert_eq!(metrics.adds(), 2);
}

/// "gets pushed to the front if the priority increases", "follows FIFO order in the new
/// priority queue when item priority changes": a raised item goes behind those already at
/// its new priority.
#[tokio::test(start_paused = true)]
async fn a_raised_item_goes_behind_its_new_priority() {
    let (q, metrics) = queue();
    q.add("foo");
    q.add("bar");
    q.add("baz");
    q.add_with_opts(AddOpts::new().priority(1), ["baz"]);
    assert_eq!(q.get_with_priority().await, Some(("baz", 1)));
    assert_eq!(q.len(), 2);
    assert_eq!(metrics.depth(), [(0, 2), (1, 0)]);
    assert_eq!(metrics.adds(), 3);

    let (q, _) = queue();
    q.add_with_opts(AddOpts::new().priority(0), ["foo"]);
    q.add_with_opts(AddOpts::new().priority(1), ["bar"]);
    q.add_with_opts(AddOpts::new().priority(1), ["foo"]);
    assert_eq!(q.get_with_priority().await, Some(("bar", 1)));
    assert_eq!(q.get_with_priority().await, Some(("foo", 1)));
}

/// "retains the lowest after duration", "TestWaitingItemIsReturnedRightAfterReadWithoutAfter":
/// an add without a delay replaces a waiting requeue; the requeue does not come back.
#[tokio::test(start_paused = true)]
async fn an_add_replaces_a_waiting_requeue() {
    let (q, metrics) = queue();
    q.add_after("foo", Duration::from_secs(3600));
    assert_eq!(q.len(), 0);
    assert_eq!(metrics.depth(), []);
    q.add("foo");
    assert_eq!(q.len(), 1);
    assert_eq!(metrics.depth(), [(0, 1)]);
    assert_eq!(q.get().await, Some("foo"));
    q.done(&"foo");
    // An hour later nothing comes back: the requeue was consumed by the add.
    advance(Duration::from_secs(7200)).await;
    assert_eq!(q.try_get(), Err(TryGetError::Empty));
    assert_eq!(metrics.depth(), [(0, 0)]);
    assert_eq!(metrics.adds(), 1);
    assert_eq!(metrics.retries(), 1);

    // The sooner of two delays wins.
    q.add_after("bar", Duration::from_secs(60));
    q.add_after("bar", Duration::from_secs(10));
    q.add_after("bar", Duration::from_secs(30));
    let start = Instant::now();
    assert_eq!(q.get().await, Some("bar"));
    assert_eq!(start.elapsed(), Duration::from_secs(10));
}

/// "doesn't include non-ready items in Len()", "TestItemsAreInludedInLenAndMetricsOnceTheyAreReady".
#[tokio::test(start_paused = true)]
async fn waiting_items_count_once_ready() {
    let (q, metrics) = queue();
    q.add_after("foo", Duration::from_millis(500));
    q.add("baz");
    q.add_after("bar", Duration::from_millis(500));
    q.add("bal");
    assert_eq!(q.len(), 2);
    assert_eq!(metrics.depth(), [(0, 2)]);
    advance(Duration::from_secs(1)).await;
    assert_eq!(q.len(), 4);
    assert_eq!(metrics.depth(), [(0, 4)]);
    for _ in 0..4 {
        let item = q.get().await.unwrap();
        q.done(&item);
    }
    assert_eq!(metrics.depth(), [(0, 0)]);
}

/// "TestItemIsOnlyReturnedAfterAfterHasPassed", "TestMultipleItemsWithAfterAreReturnedInCorrectOrder".
#[tokio::test(start_paused = true)]
async fn delayed_items_come_in_ready_time_order() {
    let (q, metrics) = queue();
    let start = Instant::now();
    q.add_after("foo", Duration::from_secs(1));
    q.add_after("bar", Duration::from_millis(200));
    assert_eq!(q.get().await, Some("bar"));
    assert_eq!(start.elapsed(), Duration::from_millis(200));
    assert_eq!(q.get().await, Some("foo"));
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    assert_eq!(metrics.retries(), 2);
    assert_eq!(metrics.adds(), 2);
}

/// "TestHighPriorityItemThatBecameReadyIsReturnedBeforeLowPriorityItem".
#[tokio::test(start_paused = true)]
async fn an_item_that_became_ready_is_served_by_its_priority() {
    let (q, metrics) = queue();
    q.add_with_opts(AddOpts::new().priority(-100), ["foo"]);
    q.add_with_opts(AddOpts::new().after(Duration::from_secs(1)), ["prio"]);
    advance(Duration::from_secs(1)).await;
    assert_eq!(q.get_with_priority().await, Some(("prio", 0)));
    assert_eq!(metrics.depth(), [(-100, 1), (0, 0)]);
    assert_eq!(metrics.adds(), 2);
    assert_eq!(metrics.retries(), 1);
}

/// "TestHighPriorityItemsAreReturnedBeforeLowPriorityItemMultipleTimes", with no delay and
/// with a delay passed.
#[tokio::test(start_paused = true)]
async fn priorities_then_first_in_first_out() {
    for after in [Duration::ZERO, Duration::from_secs(1)] {
        let (q, metrics) = queue();
        let priorities = [10, 5, 0, -5, -10];
        let names: Vec<&'static str> = (0..5 * 100)
            .map(|i| &*format!("{}-{}", priorities[i % 5], i / 5).leak())
            .collect();
        for (i, name) in names.iter().enumerate() {
            q.add_with_opts(
                AddOpts::new().after(after).priority(priorities[i % 5]),
                [*name],
            );
        }
        advance(after).await;
        for priority in priorities {
            for i in 0..100 {
                let expected = format!("{priority}-{i}");
                let (item, got) = q.get_with_priority().await.unwrap();
                assert_eq!((item, got), (&*expected, priority), "after {after:?}");
            }
        }
        assert_eq!(
            metrics.depth(),
            [(-10, 0), (-5, 0), (0, 0), (5, 0), (10, 0)]
        );
        assert_eq!(metrics.adds(), 500);
        assert_eq!(metrics.retries(), if after.is_zero() { 0 } else { 500 });
    }
}

/// "TestWhenAddingMultipleItemsWithRatelimitTrueTheyDontAffectEachOther".
#[tokio::test(start_paused = true)]
async fn rate_limited_adds_have_their_own_delays() {
    let recorder = Recorder::default();
    let limiter =
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(1000));
    let q = PriorityQueue::with_config(
        PriorityQueueConfig::new()
            .name("test")
            .metrics_provider(Arc::new(recorder.clone()))
            .rate_limiter(limiter),
    );
    // Seven failures of bar already: its next delay is 5 ms × 2^7 = 640 ms.
    for _ in 0..7 {
        q.add_rate_limited("bar");
        let bar = q.get().await.unwrap();
        q.done(&bar);
    }
    assert_eq!(q.num_requeues(&"bar"), 7);
    let start = Instant::now();
    q.add_with_opts(AddOpts::new().rate_limited(), ["foo", "bar"]);
    assert_eq!(q.get().await, Some("foo"));
    assert_eq!(start.elapsed(), Duration::from_millis(5));
    assert_eq!(q.get().await, Some("bar"));
    assert_eq!(start.elapsed(), Duration::from_millis(640));
    q.forget(&"bar");
    assert_eq!(q.num_requeues(&"bar"), 0);

    // With a delay as well, the shorter of the two.
    let start = Instant::now();
    q.add_with_opts(
        AddOpts::new().rate_limited().after(Duration::from_secs(1)),
        ["baz"],
    );
    assert_eq!(q.get().await, Some("baz"));
    assert_eq!(start.elapsed(), Duration::from_millis(5));
}

/// "TestGetFromPriorityQueueIsUnblockedOnShutdown", "Get from priority queue might get
/// stuck when the priority queue is shut down".
#[tokio::test(start_paused = true)]
async fn shutdown_ends_every_get_and_ignores_adds() {
    let (q, _) = queue();
    let mut waiting = pin!(q.get());
    assert_eq!(poll!(waiting.as_mut()), Poll::Pending);
    q.shut_down();
    assert_eq!(waiting.await, None);

    let (q, _) = queue();
    q.add("baz");
    q.shut_down();
    q.add_with_opts(AddOpts::new().after(Duration::from_secs(1)), ["foo"]);
    assert!(q.shutting_down());
    assert_eq!(q.get_with_priority().await, None);
    assert_eq!(q.get_with_priority().await, None);
    assert_eq!(q.try_get(), Err(TryGetError::ShutDown));
}

/// shut_down_with_drain waits for the items handed out.
#[tokio::test(start_paused = true)]
async fn drain_waits_for_the_items_handed_out() {
    let (q, _) = queue();
    q.add("foo");
    let foo = q.get().await.unwrap();
    let mut drain = pin!(q.shut_down_with_drain());
    assert_eq!(poll!(drain.as_mut()), Poll::Pending);
    q.done(&foo);
    drain.await;
}

/// TestFuzzPriorityQueue's invariants under many producers and consumers on a multi-thread
/// runtime: no item handed out twice at once, every add served, the highest priority kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_producers_and_consumers_keep_the_invariants() {
    let q: PriorityQueue<u32> = PriorityQueue::new();
    let handed_out = Arc::new(Mutex::new(HashSet::new()));
    let mut consumers = Vec::new();
    for _ in 0..8 {
        let (q, handed_out) = (q.clone(), Arc::clone(&handed_out));
        consumers.push(tokio::spawn(async move {
            let mut served = 0usize;
            while let Some((item, priority)) = q.get_with_priority().await {
                assert!((0..10).contains(&priority));
                assert!(handed_out.lock().unwrap().insert(item), "{item} twice");
                tokio::task::yield_now().await;
                handed_out.lock().unwrap().remove(&item);
                q.done(&item);
                served += 1;
            }
            served
        }));
    }
    let mut producers = Vec::new();
    for p in 0..4u32 {
        let q = q.clone();
        producers.push(tokio::spawn(async move {
            for i in 0..2000u32 {
                let item = (i * 7 + p) % 300;
                let opts = AddOpts::new().priority((i % 10) as i32);
                q.add_with_opts(opts, [item]);
                if i % 64 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }));
    }
    for producer in producers {
        producer.await.unwrap();
    }
    // Everything added is served: the consumers empty the queue.
    while !q.is_empty() {
        tokio::task::yield_now().await;
    }
    q.shut_down_with_drain().await;
    let mut served = 0;
    for consumer in consumers {
        served += consumer.await.unwrap();
    }
    assert!(served >= 300, "served {served}");
}
