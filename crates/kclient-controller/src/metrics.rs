//! [`ControllerMetrics`]: controller-runtime's controller and workqueue metrics.

use std::sync::Arc;

use kclient_core::GroupResource;
use kclient_workqueue::metrics::MetricsProvider;
use kclient_workqueue::prometheus::{registered, PrometheusMetricsProvider};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

type ControllerLabel = [(&'static str, String); 1];
type ResultLabel = [(&'static str, String); 2];
type StaleLabel = [(&'static str, String); 3];
type HistogramConstructor = fn() -> Histogram;

/// controller-runtime's `controller_runtime_reconcile_time_seconds` buckets.
const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

fn reconcile_time_histogram() -> Histogram {
    Histogram::new(RECONCILE_TIME_BUCKETS)
}

/// The metrics of controller-runtime's controllers and client-go's workqueue, in a
/// `prometheus-client` registry, under controller-runtime's names and labels so that its
/// dashboards and alerts work unchanged.
///
/// | metric | type | labels |
/// |---|---|---|
/// | `controller_runtime_reconcile_total` | counter | `controller`, `result` (`success`, `error`, `requeue`, `requeue_after`) |
/// | `controller_runtime_reconcile_errors_total` | counter | `controller` |
/// | `controller_runtime_reconcile_panics_total` | counter | `controller` |
/// | `controller_runtime_reconcile_timeouts_total` | counter (reconciles cut off by [`ControllerConfig::reconcile_timeout`](crate::ControllerConfig::reconcile_timeout)) | `controller` |
/// | `controller_runtime_reconcile_time_seconds` | histogram (controller-runtime's buckets, 5 ms to 60 s) | `controller` |
/// | `controller_runtime_max_concurrent_reconciles` | gauge | `controller` |
/// | `controller_runtime_active_workers` | gauge | `controller` |
/// | `controller_runtime_stale_sync_skips_total` | counter (reconciles skipped because a cache was older than the controller's recorded writes, KEP-5647) | `controller`, `group`, `resource` (the resource whose cache was behind) |
/// | `workqueue_depth`, `workqueue_adds_total`, `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds`, `workqueue_unfinished_work_seconds`, `workqueue_longest_running_processor_seconds`, `workqueue_retries_total` | kclient-workqueue's [`PrometheusMetricsProvider`] | `name`, `controller` (both the controller's name); `workqueue_depth` also `priority` |
///
/// A reconcile's `result`: `error` when it failed (or panicked), `requeue_after` for
/// [`Action::requeue`](crate::Action::requeue), `requeue` for
/// [`Action::requeue_rate_limited`](crate::Action::requeue_rate_limited), `success` for
/// [`Action::await_change`](crate::Action::await_change). controller-runtime's
/// `controller_runtime_terminal_reconcile_errors_total` has no counterpart: an error policy
/// that gives up returns `await_change`, and the error is counted in `..._errors_total`.
///
/// `controller_runtime_stale_sync_skips_total` is kube-controller-manager's
/// `<controller>_stale_sync_skips_total{group,resource}` (e.g.
/// `replicaset_controller_stale_sync_skips_total`, KEP-5647) under this table's conventions:
/// controller-runtime has no such metric, so it takes the `controller_runtime_` prefix of its
/// neighbours and, as they do, names the controller in a `controller` label rather than in
/// the metric's name (one series family for every controller, as dashboards expect).
///
/// ```
/// use prometheus_client::registry::Registry;
/// use kclient_controller::ControllerMetrics;
///
/// let mut registry = Registry::default();
/// let metrics = ControllerMetrics::new(&mut registry);
/// # let _ = metrics;
/// // Hand `metrics` to Controller::metrics (a Manager with a metrics address does it).
/// ```
///
/// Register them once per registry ([`new`](Self::new)) and give clones to each controller.
/// Cheap to clone.
#[derive(Debug, Clone)]
pub struct ControllerMetrics {
    reconcile_total: Family<ResultLabel, Counter>,
    reconcile_errors: Family<ControllerLabel, Counter>,
    reconcile_panics: Family<ControllerLabel, Counter>,
    reconcile_timeouts: Family<ControllerLabel, Counter>,
    reconcile_time: Family<ControllerLabel, Histogram, HistogramConstructor>,
    max_concurrent_reconciles: Family<ControllerLabel, Gauge>,
    active_workers: Family<ControllerLabel, Gauge>,
    stale_sync_skips: Family<StaleLabel, Counter>,
    workqueue: Arc<PrometheusMetricsProvider>,
}

impl ControllerMetrics {
    /// Creates the families (controller-runtime's seven controller metrics, the stale-sync
    /// skips and the seven workqueue metrics) and registers them in `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        // The workqueue's families are registered before the controller's: /metrics lists
        // them in that order.
        let workqueue = Arc::new(PrometheusMetricsProvider::with_controller_label(registry));
        Self {
            reconcile_total: registered(
                registry,
                "controller_runtime_reconcile",
                "Total number of reconciliations per controller",
                Family::default(),
            ),
            reconcile_errors: registered(
                registry,
                "controller_runtime_reconcile_errors",
                "Total number of reconciliation errors per controller",
                Family::default(),
            ),
            reconcile_panics: registered(
                registry,
                "controller_runtime_reconcile_panics",
                "Total number of reconciliation panics per controller",
                Family::default(),
            ),
            reconcile_timeouts: registered(
                registry,
                "controller_runtime_reconcile_timeouts",
                "Total number of reconciliation timeouts per controller",
                Family::default(),
            ),
            reconcile_time: registered(
                registry,
                "controller_runtime_reconcile_time_seconds",
                "Length of time per reconciliation per controller",
                Family::new_with_constructor(reconcile_time_histogram),
            ),
            max_concurrent_reconciles: registered(
                registry,
                "controller_runtime_max_concurrent_reconciles",
                "Maximum number of concurrent reconciles per controller",
                Family::default(),
            ),
            active_workers: registered(
                registry,
                "controller_runtime_active_workers",
                "Number of currently used workers per controller",
                Family::default(),
            ),
            stale_sync_skips: registered(
                registry,
                "controller_runtime_stale_sync_skips",
                "Number of reconciles skipped because a cache was older than the controller's own writes, per controller and resource",
                Family::default(),
            ),
            workqueue,
        }
    }

    /// The workqueue metrics provider (with the `controller` label) for the controller's
    /// queue.
    pub(crate) fn workqueue_provider(&self) -> Arc<dyn MetricsProvider> {
        self.workqueue.clone()
    }

    /// The series of one controller, created at zero as controller-runtime's
    /// `initMetrics` does (so that rates exist before the first reconcile), with the
    /// worker count set.
    pub(crate) fn for_controller(&self, name: &str, workers: usize) -> ReconcileMetrics {
        let controller = [("controller", name.to_owned())];
        let total = |result: &str| {
            self.reconcile_total
                .get_or_create(&[
                    ("controller", name.to_owned()),
                    ("result", result.to_owned()),
                ])
                .clone()
        };
        let max = self.max_concurrent_reconciles.get_or_create(&controller);
        max.set(i64::try_from(workers).unwrap_or(i64::MAX));
        let active = self.active_workers.get_or_create(&controller).clone();
        active.set(0);
        ReconcileMetrics {
            success: total("success"),
            error: total("error"),
            requeue: total("requeue"),
            requeue_after: total("requeue_after"),
            errors: self.reconcile_errors.get_or_create(&controller).clone(),
            panics: self.reconcile_panics.get_or_create(&controller).clone(),
            timeouts: self.reconcile_timeouts.get_or_create(&controller).clone(),
            time: self.reconcile_time.get_or_create(&controller).clone(),
            active,
            stale_sync_skips: self.stale_sync_skips.clone(),
            controller: name.to_owned(),
        }
    }
}

/// One controller's series.
#[derive(Debug, Clone)]
pub(crate) struct ReconcileMetrics {
    pub(crate) success: Counter,
    pub(crate) error: Counter,
    pub(crate) requeue: Counter,
    pub(crate) requeue_after: Counter,
    pub(crate) errors: Counter,
    pub(crate) panics: Counter,
    pub(crate) timeouts: Counter,
    pub(crate) time: Histogram,
    pub(crate) active: Gauge,
    stale_sync_skips: Family<StaleLabel, Counter>,
    controller: String,
}

impl ReconcileMetrics {
    /// Counts a reconcile skipped because the cache of `resource` was behind.
    pub(crate) fn stale_sync_skip(&self, resource: &GroupResource) {
        self.stale_sync_skips
            .get_or_create(&[
                ("controller", self.controller.clone()),
                ("group", resource.group.clone()),
                ("resource", resource.resource.clone()),
            ])
            .inc();
    }
}
