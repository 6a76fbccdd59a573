//! Metrics hooks: the metric kinds a queue reports and the provider that makes them.
//!
//! These are client-go's `MetricsProvider` hooks. A queue reports metrics only when it has a
//! **name** and a **provider** (its own, from its config, or the process-wide one installed
//! with [`set_provider`]); otherwise it carries no metrics state at all and pays nothing but
//! one branch per operation.
//!
//! | metric | kind | what it follows | Prometheus name (component-base) |
//! |---|---|---|---|
//! | depth | [`GaugeMetric`] | items marked dirty and not yet handed out | `workqueue_depth` |
//! | adds | [`CounterMetric`] | additions that marked an item dirty | `workqueue_adds_total` |
//! | latency | [`HistogramMetric`] | seconds from add to `get` | `workqueue_queue_duration_seconds` |
//! | work duration | [`HistogramMetric`] | seconds from `get` to `done` | `workqueue_work_duration_seconds` |
//! | unfinished work | [`SettableGaugeMetric`] | summed age of the items being processed | `workqueue_unfinished_work_seconds` |
//! | longest running processor | [`SettableGaugeMetric`] | age of the oldest item being processed | `workqueue_longest_running_processor_seconds` |
//! | retries | [`CounterMetric`] | `add_after` calls (so also `add_rate_limited`) | `workqueue_retries_total` |
//!
//! The two unfinished-work gauges are refreshed every 500 ms (client-go's
//! `defaultUnfinishedWorkUpdatePeriod`) while the queue runs. The retries counter exists only
//! for delaying and rate-limiting queues.
//!
//! A delayed item counts as added at its ready time (so its queue latency is measured from
//! then, as with client-go's waiting loop). It enters the adds and depth metrics when the
//! queue next moves due items: at the next operation on the queue, when a waiting worker
//! wakes for it, or at the latest at the next 500 ms refresh.
//!
//! Every hook is called while the queue's lock is held, as in client-go, so implementations
//! must be quick and must not call back into the queue. Atomic counters are the intended
//! shape. The optional `prometheus` feature provides a ready-made provider over
//! `prometheus-client`.

use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

use crate::ItemMap;

/// How often the unfinished-work gauges are refreshed (client-go:
/// `defaultUnfinishedWorkUpdatePeriod`, 500 ms).
pub const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// A value that goes up and down one step at a time (the queue depth).
pub trait GaugeMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
    /// Subtracts one.
    fn dec(&self);
}

/// A depth gauge with one series per priority: the depth of a
/// [`PriorityQueue`](crate::PriorityQueue) (controller-runtime's `DepthMetricWithPriority`,
/// the `priority` label of its `workqueue_depth`).
pub trait PriorityGaugeMetric: Send + Sync {
    /// Adds one to the series of `priority`.
    fn inc(&self, priority: i32);
    /// Subtracts one from the series of `priority`.
    fn dec(&self, priority: i32);
}

/// A plain depth gauge serving as a [`PriorityGaugeMetric`]: the priority is not reported.
struct UnlabelledDepth(Box<dyn GaugeMetric>);

impl PriorityGaugeMetric for UnlabelledDepth {
    fn inc(&self, _priority: i32) {
        self.0.inc();
    }
    fn dec(&self, _priority: i32) {
        self.0.dec();
    }
}

/// A value that is set outright (the unfinished-work gauges).
pub trait SettableGaugeMetric: Send + Sync {
    /// Replaces the value.
    fn set(&self, value: f64);
}

/// A value that only goes up (adds, retries).
pub trait CounterMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
}

/// A distribution of observations in seconds (queue latency, work duration).
pub trait HistogramMetric: Send + Sync {
    /// Records one observation.
    fn observe(&self, value: f64);
}

/// A metric that ignores everything; what a provider hands out for a metric it does not
/// support.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoopMetric;

impl GaugeMetric for NoopMetric {
    fn inc(&self) {}
    fn dec(&self) {}
}

impl SettableGaugeMetric for NoopMetric {
    fn set(&self, _value: f64) {}
}

impl CounterMetric for NoopMetric {
    fn inc(&self) {}
}

impl HistogramMetric for NoopMetric {
    fn observe(&self, _value: f64) {}
}

/// Makes the metrics of one named queue (client-go's `MetricsProvider`).
///
/// Each method is called once per queue, at construction, with the queue's name. Every method
/// has a default that returns a [`NoopMetric`], so a provider implements only the metrics it
/// wants.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicI64, Ordering};
/// use kclient_workqueue::metrics::{GaugeMetric, MetricsProvider};
/// use kclient_workqueue::{WorkQueue, WorkQueueConfig};
///
/// #[derive(Default)]
/// struct Depth(Arc<AtomicI64>);
/// struct DepthGauge(Arc<AtomicI64>);
/// impl GaugeMetric for DepthGauge {
///     fn inc(&self) { self.0.fetch_add(1, Ordering::Relaxed); }
///     fn dec(&self) { self.0.fetch_sub(1, Ordering::Relaxed); }
/// }
/// impl MetricsProvider for Depth {
///     fn new_depth_metric(&self, _name: &str) -> Box<dyn GaugeMetric> {
///         Box::new(DepthGauge(self.0.clone()))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let provider = Arc::new(Depth::default());
/// let depth = provider.0.clone();
/// let queue = WorkQueue::with_config(WorkQueueConfig::new().name("pods").metrics_provider(provider));
/// queue.add("default/nginx".to_string());
/// assert_eq!(depth.load(Ordering::Relaxed), 1);
/// # }
/// ```
pub trait MetricsProvider: Send + Sync {
    /// The gauge of items waiting to be handed out.
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric> {
        let _ = name;
        Box::new(NoopMetric)
    }

    /// The gauge of items waiting to be handed out, per priority, of a
    /// [`PriorityQueue`](crate::PriorityQueue). By default the plain
    /// [`new_depth_metric`](Self::new_depth_metric) gauge, the priority not reported.
    fn new_depth_with_priority_metric(&self, name: &str) -> Box<dyn PriorityGaugeMetric> {
        Box::new(UnlabelledDepth(self.new_depth_metric(name)))
    }

    /// The counter of additions.
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        let _ = name;
        Box::new(NoopMetric)
    }

    /// The histogram of seconds an item waits between being added and being handed out.
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        let _ = name;
        Box::new(NoopMetric)
    }

    /// The histogram of seconds between `get` and `done`.
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        let _ = name;
        Box::new(NoopMetric)
    }

    /// The gauge of the summed age, in seconds, of every item being processed.
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        let _ = name;
        Box::new(NoopMetric)
    }

    /// The gauge of the age, in seconds, of the item that has been processed the longest.
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Box<dyn SettableGaugeMetric> {
        let _ = name;
        Box::new(NoopMetric)
    }

    /// The counter of `add_after` calls.
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        let _ = name;
        Box::new(NoopMetric)
    }
}

static GLOBAL_PROVIDER: OnceLock<Arc<dyn MetricsProvider>> = OnceLock::new();

/// Installs the process-wide metrics provider used by every queue created afterwards without
/// a provider of its own (client-go's `workqueue.SetProvider`). Only the first call has an
/// effect; it returns whether this call was the one that took effect.
pub fn set_provider(provider: Arc<dyn MetricsProvider>) -> bool {
    GLOBAL_PROVIDER.set(provider).is_ok()
}

/// The provider a queue named `name` uses: none for an unnamed queue (client-go registers no
/// metrics for those), else its own, else the process-wide one.
pub(crate) fn resolve_provider(
    name: &str,
    own: Option<&Arc<dyn MetricsProvider>>,
) -> Option<Arc<dyn MetricsProvider>> {
    if name.is_empty() {
        return None;
    }
    own.cloned().or_else(|| GLOBAL_PROVIDER.get().cloned())
}

/// The per-queue metrics state (client-go's `defaultQueueMetrics`). It lives inside the
/// queue's state and is only touched under the queue's lock.
pub(crate) struct QueueMetrics<T> {
    depth: Box<dyn PriorityGaugeMetric>,
    adds: Box<dyn CounterMetric>,
    latency: Box<dyn HistogramMetric>,
    work_duration: Box<dyn HistogramMetric>,
    unfinished_work_seconds: Box<dyn SettableGaugeMetric>,
    longest_running_processor: Box<dyn SettableGaugeMetric>,
    add_times: ItemMap<T, Instant>,
    processing_start_times: ItemMap<T, Instant>,
}

impl<T> fmt::Debug for QueueMetrics<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueMetrics")
            .field("tracked_adds", &self.add_times.len())
            .field("tracked_processing", &self.processing_start_times.len())
            .finish_non_exhaustive()
    }
}

impl<T: Clone + Eq + Hash> QueueMetrics<T> {
    pub(crate) fn new(provider: &dyn MetricsProvider, name: &str) -> Self {
        Self::with_depth(
            provider,
            name,
            Box::new(UnlabelledDepth(provider.new_depth_metric(name))),
        )
    }

    /// The metrics of a priority queue: its depth per priority.
    pub(crate) fn with_priorities(provider: &dyn MetricsProvider, name: &str) -> Self {
        Self::with_depth(
            provider,
            name,
            provider.new_depth_with_priority_metric(name),
        )
    }

    fn with_depth(
        provider: &dyn MetricsProvider,
        name: &str,
        depth: Box<dyn PriorityGaugeMetric>,
    ) -> Self {
        Self {
            depth,
            adds: provider.new_adds_metric(name),
            latency: provider.new_latency_metric(name),
            work_duration: provider.new_work_duration_metric(name),
            unfinished_work_seconds: provider.new_unfinished_work_seconds_metric(name),
            longest_running_processor: provider.new_longest_running_processor_seconds_metric(name),
            add_times: ItemMap::default(),
            processing_start_times: ItemMap::default(),
        }
    }

    /// `item` was marked dirty at `at`.
    pub(crate) fn add(&mut self, item: &T, at: Instant) {
        self.add_at_priority(item, at, 0);
    }

    /// `item` became ready to be handed out at `at`, at `priority`.
    pub(crate) fn add_at_priority(&mut self, item: &T, at: Instant, priority: i32) {
        self.adds.inc();
        self.depth.inc(priority);
        if !self.add_times.contains_key(item) {
            self.add_times.insert(item.clone(), at);
        }
    }

    /// `item` was handed out at `now`.
    pub(crate) fn get(&mut self, item: &T, now: Instant) {
        self.get_at_priority(item, now, 0);
    }

    /// A waiting item moved from priority `from` to `to`.
    pub(crate) fn reprioritize(&self, from: i32, to: i32) {
        self.depth.dec(from);
        self.depth.inc(to);
    }

    /// `item`, waiting at `priority`, was handed out at `now`.
    pub(crate) fn get_at_priority(&mut self, item: &T, now: Instant, priority: i32) {
        self.depth.dec(priority);
        self.processing_start_times.insert(item.clone(), now);
        if let Some(added) = self.add_times.remove(item) {
            self.latency.observe(seconds_between(added, now));
        }
    }

    /// `item` was marked done at `now`.
    pub(crate) fn done(&mut self, item: &T, now: Instant) {
        if let Some(started) = self.processing_start_times.remove(item) {
            self.work_duration.observe(seconds_between(started, now));
        }
    }

    /// Recomputes the unfinished-work gauges as of `now`.
    pub(crate) fn update_unfinished_work(&self, now: Instant) {
        let mut total = 0.0;
        let mut oldest = 0.0f64;
        for &started in self.processing_start_times.values() {
            let age = seconds_between(started, now);
            total += age;
            oldest = oldest.max(age);
        }
        self.unfinished_work_seconds.set(total);
        self.longest_running_processor.set(oldest);
    }
}

/// Calls `tick` every 500 ms until it returns false (the queue shut down or was
/// dropped): the refresh of the unfinished-work gauges (client-go's `updateUnfinishedWorkLoop`).
pub(crate) fn spawn_unfinished_work_updater(tick: impl Fn() -> bool + Send + 'static) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        // Ticks count from construction, not from the task's first poll.
        let start = Instant::now() + UNFINISHED_WORK_UPDATE_PERIOD;
        runtime.spawn(async move {
            let mut interval = tokio::time::interval_at(start, UNFINISHED_WORK_UPDATE_PERIOD);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                if !tick() {
                    return;
                }
            }
        });
    } else {
        let spawned = std::thread::Builder::new()
            .name("workqueue-metrics".into())
            .spawn(move || loop {
                std::thread::sleep(UNFINISHED_WORK_UPDATE_PERIOD);
                if !tick() {
                    return;
                }
            });
        if let Err(error) = spawned {
            tracing::warn!(%error, "workqueue: cannot start the unfinished-work metrics thread");
        }
    }
}

fn seconds_between(earlier: Instant, later: Instant) -> f64 {
    later.saturating_duration_since(earlier).as_secs_f64()
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Recorder(Arc<Mutex<Vec<String>>>);

    struct Rec(Arc<Mutex<Vec<String>>>, &'static str);

    impl Rec {
        fn push(&self, what: String) {
            self.0.lock().unwrap().push(what);
        }
    }
    impl GaugeMetric for Rec {
        fn inc(&self) {
            self.push(format!("{}+", self.1));
        }
        fn dec(&self) {
            self.push(format!("{}-", self.1));
        }
    }
    impl CounterMetric for Rec {
        fn inc(&self) {
            self.push(format!("{}+", self.1));
        }
    }
    impl HistogramMetric for Rec {
        fn observe(&self, value: f64) {
            self.push(format!("{}={value}", self.1));
        }
    }
    impl SettableGaugeMetric for Rec {
        fn set(&self, value: f64) {
            self.push(format!("{}={value}", self.1));
        }
    }
    impl MetricsProvider for Recorder {
        fn new_depth_metric(&self, _: &str) -> Box<dyn GaugeMetric> {
            Box::new(Rec(self.0.clone(), "depth"))
        }
        fn new_adds_metric(&self, _: &str) -> Box<dyn CounterMetric> {
            Box::new(Rec(self.0.clone(), "adds"))
        }
        fn new_latency_metric(&self, _: &str) -> Box<dyn HistogramMetric> {
            Box::new(Rec(self.0.clone(), "latency"))
        }
        fn new_work_duration_metric(&self, _: &str) -> Box<dyn HistogramMetric> {
            Box::new(Rec(self.0.clone(), "work"))
        }
        fn new_unfinished_work_seconds_metric(&self, _: &str) -> Box<dyn SettableGaugeMetric> {
            Box::new(Rec(self.0.clone(), "unfinished"))
        }
        fn new_longest_running_processor_seconds_metric(
            &self,
            _: &str,
        ) -> Box<dyn SettableGaugeMetric> {
            Box::new(Rec(self.0.clone(), "longest"))
        }
    }

    #[test]
    fn unnamed_queues_get_no_provider() {
        let own: Arc<dyn MetricsProvider> = Arc::new(Recorder::default());
        assert!(resolve_provider("", Some(&own)).is_none());
        assert!(resolve_provider("q", Some(&own)).is_some());
    }

    #[test]
    fn default_provider_methods_hand_out_zero_sized_noops() {
        struct Nothing;
        impl MetricsProvider for Nothing {}
        let p = Nothing;
        let depth = p.new_depth_metric("q");
        let adds = p.new_adds_metric("q");
        let latency = p.new_latency_metric("q");
        let work = p.new_work_duration_metric("q");
        let unfinished = p.new_unfinished_work_seconds_metric("q");
        let longest = p.new_longest_running_processor_seconds_metric("q");
        let retries = p.new_retries_metric("q");
        // Every default is the zero-sized NoopMetric: nothing is stored or counted.
        assert_eq!(std::mem::size_of_val(&*depth), 0);
        assert_eq!(std::mem::size_of_val(&*adds), 0);
        assert_eq!(std::mem::size_of_val(&*latency), 0);
        assert_eq!(std::mem::size_of_val(&*work), 0);
        assert_eq!(std::mem::size_of_val(&*unfinished), 0);
        assert_eq!(std::mem::size_of_val(&*longest), 0);
        assert_eq!(std::mem::size_of_val(&*retries), 0);
        depth.inc();
        depth.dec();
        adds.inc();
        latency.observe(1.0);
        work.observe(1.0);
        unfinished.set(1.0);
        longest.set(1.0);
        retries.inc();
    }

    #[test]
    fn lifecycle_observes_latency_work_and_unfinished() {
        let rec = Recorder::default();
        let log = rec.0.clone();
        let mut m = QueueMetrics::new(&rec, "q");
        let t0 = Instant::now();
        m.add(&"a", t0);
        m.add(&"a", t0 + Duration::from_secs(1)); // the first add time is kept
        m.get(&"a", t0 + Duration::from_secs(2));
        m.update_unfinished_work(t0 + Duration::from_secs(5));
        m.done(&"a", t0 + Duration::from_secs(6));
        m.done(&"a", t0 + Duration::from_secs(7)); // not processing: nothing observed
        m.update_unfinished_work(t0 + Duration::from_secs(8));
        let log = log.lock().unwrap().clone();
        assert_eq!(
            log,
            [
                "adds+",
                "depth+",
                "adds+",
                "depth+",
                "depth-",
                "latency=2",
                "unfinished=3",
                "longest=3",
                "work=4",
                "unfinished=0",
                "longest=0",
            ]
        );
    }

    #[test]
    fn unfinished_work_sums_and_takes_the_oldest() {
        let rec = Recorder::default();
        let log = rec.0.clone();
        let mut m = QueueMetrics::new(&rec, "q");
        let t0 = Instant::now();
        m.get(&1, t0);
        m.get(&2, t0 + Duration::from_secs(2));
        log.lock().unwrap().clear();
        m.update_unfinished_work(t0 + Duration::from_secs(3));
        assert_eq!(*log.lock().unwrap(), ["unfinished=4", "longest=3"]);
    }
}
