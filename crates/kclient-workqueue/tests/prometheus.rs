//! The Prometheus adapter (feature `prometheus`): component-base's metric names and label.
#![cfg(feature = "prometheus")]

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use futures::poll;
use kclient_workqueue::prometheus::PrometheusMetricsProvider;
use kclient_workqueue::{DelayingQueue, DelayingQueueConfig};
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

#[tokio::test(start_paused = true)]
async fn exports_component_base_names_with_the_queue_name_label() {
    let mut registry = Registry::default();
    let provider = Arc::new(PrometheusMetricsProvider::new(&mut registry));
    let q = DelayingQueue::with_config(
        DelayingQueueConfig::new()
            .name("pods")
            .metrics_provider(provider.clone()),
    );
    let other = DelayingQueue::with_config(
        DelayingQueueConfig::new()
            .name("nodes")
            .metrics_provider(provider),
    );
    q.add("a");
    q.add("b");
    q.add_after("c", Duration::from_secs(1));
    other.add("x");
    tokio::time::advance(Duration::from_millis(2)).await;
    let a = {
        let mut get = pin!(q.get());
        match poll!(get.as_mut()) {
            std::task::Poll::Ready(Some(item)) => item,
            _ => panic!("a should be queued"),
        }
    };
    q.done(&a);

    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    for line in [
        r#"workqueue_depth{name="pods"} 1"#,
        r#"workqueue_depth{name="nodes"} 1"#,
        r#"workqueue_adds_total{name="pods"} 2"#,
        r#"workqueue_retries_total{name="pods"} 1"#,
        r#"workqueue_queue_duration_seconds_count{name="pods"} 1"#,
        r#"workqueue_work_duration_seconds_count{name="pods"} 1"#,
        r#"workqueue_queue_duration_seconds_bucket{le="0.01",name="pods"} 1"#,
        r#"workqueue_unfinished_work_seconds{name="pods"} 0"#,
        r#"workqueue_longest_running_processor_seconds{name="pods"} 0"#,
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    // Buckets 1e-8 .. 1e1 as component-base's ExponentialBuckets(10e-9, 10, 10).
    assert!(
        text.contains(r#"le="1e-8""#) || text.contains(r#"le="0.00000001""#),
        "{text}"
    );
    assert!(
        text.contains(r#"le="10.0""#) || text.contains(r#"le="10""#),
        "{text}"
    );
}

#[tokio::test(start_paused = true)]
async fn with_the_controller_label_each_series_names_the_queue_twice_as_controller_runtime_does() {
    let mut registry = Registry::default();
    let provider = Arc::new(PrometheusMetricsProvider::with_controller_label(
        &mut registry,
    ));
    let q = DelayingQueue::with_config(
        DelayingQueueConfig::new()
            .name("deployments")
            .metrics_provider(provider),
    );
    q.add("default/web");
    q.add_after("default/api", Duration::from_secs(1));
    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    for line in [
        r#"workqueue_depth{name="deployments",controller="deployments"} 1"#,
        r#"workqueue_adds_total{name="deployments",controller="deployments"} 1"#,
        r#"workqueue_retries_total{name="deployments",controller="deployments"} 1"#,
        r#"workqueue_unfinished_work_seconds{name="deployments",controller="deployments"} 0"#,
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

/// A priority queue's depth has one series per priority, labelled `priority` after the
/// queue's own labels (controller-runtime's `workqueue_depth{name,controller,priority}`).
#[tokio::test(start_paused = true)]
async fn a_priority_queue_reports_its_depth_per_priority() {
    use kclient_workqueue::{AddOpts, PriorityQueue, PriorityQueueConfig};

    let mut registry = Registry::default();
    let provider = Arc::new(PrometheusMetricsProvider::with_controller_label(
        &mut registry,
    ));
    let q = PriorityQueue::with_config(
        PriorityQueueConfig::new()
            .name("web")
            .metrics_provider(provider),
    );
    q.add_with_opts(AddOpts::new().priority(-100), ["a", "b"]);
    q.add("c");
    assert_eq!(q.get().await, Some("c"));
    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    assert!(
        text.contains(r#"workqueue_depth{name="web",controller="web",priority="-100"} 2"#),
        "{text}"
    );
    assert!(
        text.contains(r#"workqueue_depth{name="web",controller="web",priority="0"} 0"#),
        "{text}"
    );
}
