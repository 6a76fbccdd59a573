//! A [`MetricsProvider`] that exports the workqueue metrics through `prometheus-client`
//! (feature `prometheus`).
//!
//! The names and the `name` label are those of Kubernetes' component-base, so existing
//! dashboards and alerts work unchanged:
//!
//! | metric | type |
//! |---|---|
//! | `workqueue_depth{name}` | gauge; a [`PriorityQueue`](crate::PriorityQueue)'s also labelled `priority` |
//! | `workqueue_adds_total{name}` | counter |
//! | `workqueue_queue_duration_seconds{name}` | histogram, buckets 1e-8 s × 10^0..9 |
//! | `workqueue_work_duration_seconds{name}` | histogram, same buckets |
//! | `workqueue_unfinished_work_seconds{name}` | gauge |
//! | `workqueue_longest_running_processor_seconds{name}` | gauge |
//! | `workqueue_retries_total{name}` | counter |
//!
//! [`PrometheusMetricsProvider::with_controller_label`] adds the `controller` label
//! controller-runtime sets (to the same value as `name`), for dashboards built on
//! controller-runtime's metrics; kclient-controller's `ControllerMetrics` uses it.
//!
//! ```
//! use std::sync::Arc;
//! use prometheus_client::registry::Registry;
//! use kclient_workqueue::prometheus::PrometheusMetricsProvider;
//! use kclient_workqueue::{WorkQueue, WorkQueueConfig};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let mut registry = Registry::default();
//! let provider = Arc::new(PrometheusMetricsProvider::new(&mut registry));
//! let queue = WorkQueue::with_config(WorkQueueConfig::new().name("pods").metrics_provider(provider));
//! queue.add("default/web-0".to_string());
//!
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
//! assert!(text.contains(r#"workqueue_depth{name="pods"} 1"#));
//! # }
//! ```

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Metric, Registry};

use crate::metrics::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, PriorityGaugeMetric,
    SettableGaugeMetric,
};

/// The label set of every workqueue metric: the queue's name, and with
/// [`PrometheusMetricsProvider::with_controller_label`] the `controller` label too.
type QueueLabel = Vec<(&'static str, String)>;

/// A constructor for the duration histograms.
type HistogramConstructor = fn() -> Histogram;

fn duration_histogram() -> Histogram {
    // component-base: prometheus.ExponentialBuckets(10e-9, 10, 10).
    Histogram::new(exponential_buckets(10e-9, 10.0, 10))
}

/// Registers `metric` in `registry` under `name` with the help text `help`, and returns it:
/// a metric made and registered in one expression, so that a set of metrics names each one
/// once (kclient-controller's `ControllerMetrics` registers its own so too).
///
/// ```
/// use prometheus_client::metrics::counter::Counter;
/// use prometheus_client::registry::Registry;
/// use kclient_workqueue::prometheus::registered;
///
/// let mut registry = Registry::default();
/// let restarts: Counter = registered(&mut registry, "restarts", "Number of restarts", Counter::default());
/// restarts.inc();
/// let mut text = String::new();
/// prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
/// assert!(text.contains("restarts_total 1"), "{text}");
/// ```
pub fn registered<M: Metric + Clone>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    metric: M,
) -> M {
    registry.register(name, help, metric.clone());
    metric
}

/// Makes the workqueue metrics as labelled series of families registered in a
/// `prometheus-client` [`Registry`]. One provider serves any number of queues; give each
/// queue a distinct name.
#[derive(Debug, Clone)]
pub struct PrometheusMetricsProvider {
    depth: Family<QueueLabel, Gauge>,
    adds: Family<QueueLabel, Counter>,
    latency: Family<QueueLabel, Histogram, HistogramConstructor>,
    work_duration: Family<QueueLabel, Histogram, HistogramConstructor>,
    unfinished_work_seconds: Family<QueueLabel, Gauge<f64, AtomicU64>>,
    longest_running_processor_seconds: Family<QueueLabel, Gauge<f64, AtomicU64>>,
    retries: Family<QueueLabel, Counter>,
    controller_label: bool,
}

impl PrometheusMetricsProvider {
    /// Creates the seven metric families and registers them in `registry`; each series is
    /// labelled with the queue's `name`.
    pub fn new(registry: &mut Registry) -> Self {
        Self::register(registry, false)
    }

    /// [`new`](Self::new), each series labelled `name` and `controller`, both the queue's
    /// name, as controller-runtime labels its workqueue metrics (whose queues are named
    /// after their controllers).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use prometheus_client::registry::Registry;
    /// use kclient_workqueue::prometheus::PrometheusMetricsProvider;
    /// use kclient_workqueue::{WorkQueue, WorkQueueConfig};
    ///
    /// let mut registry = Registry::default();
    /// let provider = Arc::new(PrometheusMetricsProvider::with_controller_label(&mut registry));
    /// let queue = WorkQueue::with_config(WorkQueueConfig::new().name("web").metrics_provider(provider));
    /// queue.add(1);
    /// let mut text = String::new();
    /// prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    /// assert!(text.contains(r#"workqueue_depth{name="web",controller="web"} 1"#), "{text}");
    /// ```
    pub fn with_controller_label(registry: &mut Registry) -> Self {
        Self::register(registry, true)
    }

    fn register(registry: &mut Registry, controller_label: bool) -> Self {
        Self {
            depth: registered(
                registry,
                "workqueue_depth",
                "Number of items waiting in the workqueue",
                Family::default(),
            ),
            adds: registered(
                registry,
                "workqueue_adds",
                "Number of additions to the workqueue",
                Family::default(),
            ),
            latency: registered(
                registry,
                "workqueue_queue_duration_seconds",
                "Seconds an item waits in the workqueue before a worker takes it",
                Family::new_with_constructor(duration_histogram),
            ),
            work_duration: registered(
                registry,
                "workqueue_work_duration_seconds",
                "Seconds a worker spends on an item taken from the workqueue",
                Family::new_with_constructor(duration_histogram),
            ),
            unfinished_work_seconds: registered(
                registry,
                "workqueue_unfinished_work_seconds",
                "Summed seconds of the work in progress not yet observed by work_duration; \
                 large values point at stuck workers",
                Family::default(),
            ),
            longest_running_processor_seconds: registered(
                registry,
                "workqueue_longest_running_processor_seconds",
                "Seconds the longest running worker has spent on its current item",
                Family::default(),
            ),
            retries: registered(
                registry,
                "workqueue_retries",
                "Number of delayed additions (retries) to the workqueue",
                Family::default(),
            ),
            controller_label,
        }
    }

    fn label(&self, name: &str) -> QueueLabel {
        let mut label = vec![("name", name.to_owned())];
        if self.controller_label {
            label.push(("controller", name.to_owned()));
        }
        label
    }
}

struct DepthGauge(Gauge);

impl GaugeMetric for DepthGauge {
    fn inc(&self) {
        self.0.inc();
    }
    fn dec(&self) {
        self.0.dec();
    }
}

/// The depth of a priority queue: one series per priority, labelled `priority` beside the
/// queue's labels (controller-runtime's depth metric of its priority queue).
struct PriorityDepthGauge {
    family: Family<QueueLabel, Gauge>,
    label: QueueLabel,
}

impl PriorityDepthGauge {
    fn series(&self, priority: i32) -> Gauge {
        let mut label = self.label.clone();
        label.push(("priority", priority.to_string()));
        self.family.get_or_create(&label).clone()
    }
}

impl PriorityGaugeMetric for PriorityDepthGauge {
    fn inc(&self, priority: i32) {
        self.series(priority).inc();
    }
    fn dec(&self, priority: i32) {
        self.series(priority).dec();
    }
}

struct SecondsGauge(Gauge<f64, AtomicU64>);

impl SettableGaugeMetric for SecondsGauge {
    fn set(&self, value: f64) {
        self.0.set(value);
    }
}

struct TotalCounter(Counter);

impl CounterMetric for TotalCounter {
    fn inc(&self) {
        self.0.inc();
    }
}

struct SecondsHistogram(Histogram);

impl HistogramMetric for SecondsHistogram {
    fn observe(&self, value: f64) {
        self.0.observe(value);
    }
}

impl MetricsProvider for PrometheusMetricsProvider {
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric> {
        Box::new(DepthGauge(
            self.depth.get_or_create(&self.label(name)).clone(),
        ))
    }

    fn new_depth_with_priority_metric(&self, name: &str) -> Box<dyn PriorityGaugeMetric> {
        Box::new(PriorityDepthGauge {
            family: self.depth.clone(),
            label: self.label(name),
        })
    }

    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        Box::new(TotalCounter(
            self.adds.get_or_create(&self.label(name)).clone(),
        ))
    }

    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        Box::new(SecondsHistogram(
            self.latency.get_or_create(&self.label(name)).clone(),
        ))
    }

    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        Box::new(SecondsHistogram(
            self.work_duration.get_or_create(&self.label(name)).clone(),
        ))
    }

    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(SecondsGauge(
            self.unfinished_work_seconds
                .get_or_create(&self.label(name))
                .clone(),
        ))
    }

    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Box<dyn SettableGaugeMetric> {
        Box::new(SecondsGauge(
            self.longest_running_processor_seconds
                .get_or_create(&self.label(name))
                .clone(),
        ))
    }

    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        Box::new(TotalCounter(
            self.retries.get_or_create(&self.label(name)).clone(),
        ))
    }
}
