//! [`WebhookMetrics`]: controller-runtime's webhook metrics.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Metric, Registry};

type WebhookLabel = [(&'static str, String); 1];
type CodeLabel = [(&'static str, String); 2];
type HistogramConstructor = fn() -> Histogram;

/// Registers `metric` in `registry` under `name` with the help text `help`, and returns it
/// (kclient-workqueue's `prometheus::registered`, which this crate does not depend on).
fn registered<M: Metric + Clone>(registry: &mut Registry, name: &str, help: &str, metric: M) -> M {
    registry.register(name, help, metric.clone());
    metric
}

/// Prometheus' default buckets (controller-runtime's latency histogram uses them).
fn latency_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
    ])
}

/// The webhook server's metrics, under controller-runtime's names and labels (its dashboards
/// and alerts work unchanged):
///
/// | metric | type | labels |
/// |---|---|---|
/// | `controller_runtime_webhook_latency_seconds` | histogram | `webhook` (the path) |
/// | `controller_runtime_webhook_requests_total` | counter | `webhook`, `code` (the HTTP status code answered) |
/// | `controller_runtime_webhook_requests_in_flight` | gauge | `webhook` |
/// | `controller_runtime_webhook_panics_total` | counter | — (admission handlers that panicked) |
/// | `controller_runtime_conversion_webhook_panics_total` | counter | — (conversions that panicked) |
/// | `certwatcher_read_certificate_total` | counter | — (reads of changed certificate files) |
/// | `certwatcher_read_certificate_errors_total` | counter | — (changed files that did not load) |
///
/// Register them once per registry with [`new`](Self::new) (the manager's registry, so that
/// its `/metrics` serves them) and hand them to the server builder. Cheap to clone.
#[derive(Debug, Clone)]
pub struct WebhookMetrics {
    pub(crate) latency: Family<WebhookLabel, Histogram, HistogramConstructor>,
    pub(crate) requests: Family<CodeLabel, Counter>,
    pub(crate) in_flight: Family<WebhookLabel, Gauge>,
    pub(crate) panics: Counter,
    pub(crate) conversion_panics: Counter,
    pub(crate) certificate_reads: Counter,
    pub(crate) certificate_read_errors: Counter,
}

impl Default for WebhookMetrics {
    /// Metrics registered nowhere (counted, not exported): in a registry of their own,
    /// dropped at once.
    fn default() -> Self {
        Self::new(&mut Registry::default())
    }
}

impl WebhookMetrics {
    /// Creates the metrics and registers them in `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        Self {
            latency: registered(
                registry,
                "controller_runtime_webhook_latency_seconds",
                "Histogram of the latency of processing admission requests",
                Family::new_with_constructor(latency_histogram),
            ),
            requests: registered(
                registry,
                "controller_runtime_webhook_requests",
                "Total number of admission requests by HTTP status code",
                Family::default(),
            ),
            in_flight: registered(
                registry,
                "controller_runtime_webhook_requests_in_flight",
                "Current number of admission requests being served",
                Family::default(),
            ),
            panics: registered(
                registry,
                "controller_runtime_webhook_panics",
                "Total number of webhook panics",
                Counter::default(),
            ),
            conversion_panics: registered(
                registry,
                "controller_runtime_conversion_webhook_panics",
                "Total number of conversion webhook panics",
                Counter::default(),
            ),
            certificate_reads: registered(
                registry,
                "certwatcher_read_certificate",
                "Total number of certificate reads",
                Counter::default(),
            ),
            certificate_read_errors: registered(
                registry,
                "certwatcher_read_certificate_errors",
                "Total number of certificate read errors",
                Counter::default(),
            ),
        }
    }

    /// How many times changed certificate files were read, and how many of those did not
    /// load (a pair caught half-written, say).
    pub fn certificate_reads(&self) -> (u64, u64) {
        (
            self.certificate_reads.get(),
            self.certificate_read_errors.get(),
        )
    }

    /// How many requests to `webhook` (a path) were answered with HTTP `code`.
    pub fn requests(&self, webhook: &str, code: u16) -> u64 {
        self.requests
            .get_or_create(&[("webhook", webhook.to_owned()), ("code", code.to_string())])
            .get()
    }

    /// How many admission handlers panicked.
    pub fn panics(&self) -> u64 {
        self.panics.get()
    }
}
