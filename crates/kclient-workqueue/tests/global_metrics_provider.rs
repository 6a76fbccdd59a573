//! The process-wide metrics provider (client-go's `SetProvider`). A binary of its own, since
//! the provider is global to the process.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use kclient_workqueue::metrics::{set_provider, CounterMetric, MetricsProvider};
use kclient_workqueue::{WorkQueue, WorkQueueConfig};

struct CountingAdds(Arc<AtomicUsize>);
struct AddCounter(Arc<AtomicUsize>);

impl CounterMetric for AddCounter {
    fn inc(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl MetricsProvider for CountingAdds {
    fn new_adds_metric(&self, _name: &str) -> Box<dyn CounterMetric> {
        Box::new(AddCounter(self.0.clone()))
    }
}

#[tokio::test]
async fn the_first_global_provider_serves_named_queues_without_their_own() {
    let global = Arc::new(AtomicUsize::new(0));
    let other = Arc::new(AtomicUsize::new(0));
    assert!(set_provider(Arc::new(CountingAdds(global.clone()))));
    assert!(
        !set_provider(Arc::new(CountingAdds(other.clone()))),
        "only the first call takes effect"
    );

    let named: WorkQueue<u8> = WorkQueue::with_config(WorkQueueConfig::new().name("global"));
    named.add(1);
    named.add(2);
    assert_eq!(global.load(Ordering::SeqCst), 2);

    let unnamed: WorkQueue<u8> = WorkQueue::new();
    unnamed.add(1);
    assert_eq!(
        global.load(Ordering::SeqCst),
        2,
        "unnamed queues report nothing"
    );

    let own = Arc::new(AtomicUsize::new(0));
    let with_own: WorkQueue<u8> = WorkQueue::with_config(
        WorkQueueConfig::new()
            .name("own")
            .metrics_provider(Arc::new(CountingAdds(own.clone()))),
    );
    with_own.add(1);
    assert_eq!(own.load(Ordering::SeqCst), 1, "a queue's own provider wins");
    assert_eq!(global.load(Ordering::SeqCst), 2);
    assert_eq!(other.load(Ordering::SeqCst), 0);
}
