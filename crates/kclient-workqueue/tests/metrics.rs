//! Metrics hooks through a recording provider, on tokio's paused clock: client-go's
//! TestMetrics, the retries counter, delayed items, unnamed queues and the 500 ms
//! unfinished-work refresh.

use std::collections::HashMap;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use futures::poll;
use kclient_workqueue::metrics::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, SettableGaugeMetric,
    UNFINISHED_WORK_UPDATE_PERIOD,
};
use kclient_workqueue::{
    DelayingQueue, DelayingQueueConfig, RateLimitingQueue, RateLimitingQueueConfig, WorkQueue,
    WorkQueueConfig,
};
use tokio::time::advance;

/// Everything the metrics of all queues reported, by `"<queue>/<metric>"`.
#[derive(Default)]
struct Recorded {
    /// Current value of gauges and counters.
    values: HashMap<String, f64>,
    /// Observations of histograms.
    observations: HashMap<String, Vec<f64>>,
    /// Number of `set` calls on settable gauges.
    sets: HashMap<String, usize>,
    /// Which metrics were created.
    created: Vec<String>,
}

#[derive(Default, Clone)]
struct RecordingProvider(Arc<Mutex<Recorded>>);

struct Metric {
    key: String,
    rec: Arc<Mutex<Recorded>>,
}

impl Metric {
    fn bump(&self, by: f64) {
        *self
            .rec
            .lock()
            .unwrap()
            .values
            .entry(self.key.clone())
            .or_default() += by;
    }
}
impl GaugeMetric for Metric {
    fn inc(&self) {
        self.bump(1.0);
    }
    fn dec(&self) {
        self.bump(-1.0);
    }
}
impl CounterMetric for Metric {
    fn inc(&self) {
        self.bump(1.0);
    }
}
impl SettableGaugeMetric for Metric {
    fn set(&self, value: f64) {
        let mut rec = self.rec.lock().unwrap();
        rec.values.insert(self.key.clone(), value);
        *rec.sets.entry(self.key.clone()).or_default() += 1;
    }
}
impl HistogramMetric for Metric {
    fn observe(&self, value: f64) {
        let mut rec = self.rec.lock().unwrap();
        rec.observations
            .entry(self.key.clone())
            .or_default()
            .push(value);
    }
}

impl RecordingProvider {
    fn metric(&self, name: &str, what: &str) -> Box<Metric> {
        let key = format!("{name}/{what}");
        self.0.lock().unwrap().created.push(key.clone());
        Box::new(Metric {
            key,
            rec: self.0.clone(),
        })
    }
    fn value(&self, key: &str) -> f64 {
        self.0
            .lock()
            .unwrap()
            .values
            .get(key)
            .copied()
            .unwrap_or(0.0)
    }
    fn observations(&self, key: &str) -> Vec<f64> {
        self.0
            .lock()
            .unwrap()
            .observations
            .get(key)
            .cloned()
            .unwrap_or_default()
    }
    fn sets(&self, key: &str) -> usize {
        self.0.lock().unwrap().sets.get(key).copied().unwrap_or(0)
    }
    fn created(&self) -> Vec<String> {
        self.0.lock().unwrap().created.clone()
    }
}

impl MetricsProvider for RecordingProvider {
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric> {
        self.metric(name, "depth")
    }
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        self.metric(name, "adds")
    }
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        self.metric(name, "latency")
    }
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        self.metric(name, "work_duration")
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        self.metric(name, "unfinished")
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Box<dyn SettableGaugeMetric> {
        self.metric(name, "longest")
    }
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        self.metric(name, "retries")
    }
}

async fn get_now<T: Clone + Eq + std::hash::Hash + Send + Sync + 'static>(q: &WorkQueue<T>) -> T {
    let mut get = pin!(q.get());
    match poll!(get.as_mut()) {
        Poll::Ready(Some(item)) => item,
        _ => panic!("an item should be there"),
    }
}

/// Lets the unfinished-work task run after the clock moved (bounded: no waiting on time).
async fn until_sets(mp: &RecordingProvider, key: &str, count: usize) {
    for _ in 0..1_000 {
        if mp.sets(key) >= count {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("{key} was set {} times, expected {count}", mp.sets(key));
}

#[tokio::test(start_paused = true)]
async fn client_go_test_metrics_sequence() {
    let mp = RecordingProvider::default();
    let q = WorkQueue::with_config(
        WorkQueueConfig::new()
            .name("test")
            .metrics_provider(Arc::new(mp.clone())),
    );
    q.add("foo");
    assert_eq!(mp.value("test/adds"), 1.0);
    assert_eq!(mp.value("test/depth"), 1.0);

    advance(Duration::from_micros(50)).await;
    let item = get_now(&q).await;
    assert_eq!(mp.observations("test/latency"), [5e-5]);

    // Added back while processing; repeated adds are deduped.
    for _ in 0..5 {
        q.add(item);
    }
    assert_eq!(mp.value("test/adds"), 2.0);
    assert_eq!(
        mp.value("test/depth"),
        1.0,
        "the dirty item counts in depth"
    );

    advance(Duration::from_micros(25)).await;
    q.done(&item);
    assert_eq!(mp.observations("test/work_duration"), [2.5e-5]);
    assert_eq!(mp.value("test/depth"), 1.0);

    let item = get_now(&q).await;
    assert_eq!(mp.observations("test/latency"), [5e-5, 2.5e-5]);
    assert_eq!(mp.value("test/depth"), 0.0);

    // The gauges are refreshed every 500 ms; the first tick is 500 ms after construction.
    advance(UNFINISHED_WORK_UPDATE_PERIOD - Duration::from_micros(75)).await;
    until_sets(&mp, "test/unfinished", 1).await;
    assert_eq!(mp.value("test/unfinished"), 0.499_925);
    assert_eq!(mp.value("test/longest"), 0.499_925);

    q.done(&item);
    assert_eq!(mp.observations("test/work_duration"), [2.5e-5, 0.499_925]);
    advance(UNFINISHED_WORK_UPDATE_PERIOD).await;
    until_sets(&mp, "test/unfinished", 2).await;
    assert_eq!(mp.value("test/unfinished"), 0.0);
    assert_eq!(mp.value("test/longest"), 0.0);
    q.shut_down();
}

#[tokio::test(start_paused = true)]
async fn unfinished_work_sums_ages_and_takes_the_oldest() {
    let mp = RecordingProvider::default();
    let q = WorkQueue::with_config(
        WorkQueueConfig::new()
            .name("busy")
            .metrics_provider(Arc::new(mp.clone())),
    );
    q.add(1u8);
    q.add(2u8);
    let one = get_now(&q).await;
    advance(Duration::from_millis(200)).await;
    let two = get_now(&q).await;
    advance(Duration::from_millis(300)).await;
    until_sets(&mp, "busy/unfinished", 1).await;
    assert_eq!(mp.value("busy/unfinished"), 0.5 + 0.3);
    assert_eq!(mp.value("busy/longest"), 0.5);
    q.done(&one);
    q.done(&two);
}

#[tokio::test(start_paused = true)]
async fn the_refresh_stops_after_shut_down() {
    let mp = RecordingProvider::default();
    let q: WorkQueue<u8> = WorkQueue::with_config(
        WorkQueueConfig::new()
            .name("stops")
            .metrics_provider(Arc::new(mp.clone())),
    );
    advance(UNFINISHED_WORK_UPDATE_PERIOD).await;
    until_sets(&mp, "stops/unfinished", 1).await;
    q.shut_down();
    let before = mp.sets("stops/unfinished");
    for _ in 0..5 {
        advance(UNFINISHED_WORK_UPDATE_PERIOD).await;
        tokio::task::yield_now().await;
    }
    assert_eq!(mp.sets("stops/unfinished"), before);
}

#[tokio::test(start_paused = true)]
async fn delaying_queues_count_retries_and_time_latency_from_ready() {
    let mp = RecordingProvider::default();
    let q = DelayingQueue::with_config(
        DelayingQueueConfig::new()
            .name("delayed")
            .metrics_provider(Arc::new(mp.clone())),
    );
    q.add_after("x", Duration::from_secs(10));
    q.add_after("x", Duration::from_secs(20));
    q.add_after("y", Duration::ZERO);
    assert_eq!(mp.value("delayed/retries"), 3.0, "every add_after counts");
    assert_eq!(mp.value("delayed/adds"), 1.0, "only y is added so far");
    advance(Duration::from_secs(15)).await;
    assert_eq!(q.len(), 2);
    assert_eq!(mp.value("delayed/depth"), 2.0);
    let y = q.get().await.unwrap();
    let x = q.get().await.unwrap();
    assert_eq!((y, x), ("y", "x"));
    // y waited 15 s; x counts from its ready time (10 s), so 5 s.
    assert_eq!(mp.observations("delayed/latency"), [15.0, 5.0]);
    q.shut_down();
    q.add_after("z", Duration::ZERO);
    assert_eq!(
        mp.value("delayed/retries"),
        3.0,
        "not counted after shut down"
    );
}

#[tokio::test(start_paused = true)]
async fn rate_limiting_queues_count_retries() {
    let mp = RecordingProvider::default();
    let q = RateLimitingQueue::with_config(
        kclient_workqueue::default_controller_rate_limiter(),
        RateLimitingQueueConfig::new()
            .name("rl")
            .metrics_provider(Arc::new(mp.clone())),
    );
    q.add_rate_limited(1u32);
    q.add_rate_limited(2u32);
    assert_eq!(mp.value("rl/retries"), 2.0);
}

#[tokio::test(start_paused = true)]
async fn plain_queues_have_no_retries_metric_and_unnamed_queues_no_metrics() {
    let mp = RecordingProvider::default();
    let named: WorkQueue<u8> = WorkQueue::with_config(
        WorkQueueConfig::new()
            .name("plain")
            .metrics_provider(Arc::new(mp.clone())),
    );
    let created = mp.created();
    assert_eq!(
        created,
        [
            "plain/depth",
            "plain/adds",
            "plain/latency",
            "plain/work_duration",
            "plain/unfinished",
            "plain/longest"
        ]
    );
    let unnamed: DelayingQueue<u8> = DelayingQueue::with_config(
        DelayingQueueConfig::new().metrics_provider(Arc::new(mp.clone())),
    );
    unnamed.add(1);
    unnamed.add_after(2, Duration::from_secs(1));
    assert_eq!(mp.created(), created, "an unnamed queue makes no metrics");
    named.add(1);
    assert_eq!(mp.value("plain/adds"), 1.0);
}
