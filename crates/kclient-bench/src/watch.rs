//! Scenario 2: watch throughput. An informer of the ConfigMaps in one namespace with three
//! handlers, each adding the object's key to one workqueue that two workers drain. Once
//! synced it prints `{"ready":true}`; the harness then starts the writer (`kclient-bench
//! write`), which stamps every update with its write time, and this process counts updates
//! until every handler saw `--count` of them (or none came for 30 s): events per second from
//! the first update to the last one handled and the queue drained, and the latency from the
//! write to the first handler (p50, p99).

use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::ResourceEventHandler;
use kclient_core::CancellationToken;
use kclient_workqueue::WorkQueue;
use serde_json::{json, Value};
use tokio::sync::Notify;

use crate::args::Options;
use crate::objects::WRITTEN_AT;
use crate::Error;

/// The current time in Unix nanoseconds (the clock the writer stamps updates with).
pub(crate) fn unix_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// One of the three handlers: counts updates and adds each key to the queue; the first one
/// also records latencies.
struct Handler {
    queue: WorkQueue<String>,
    count: AtomicU64,
    target: u64,
    first: Arc<AtomicI64>,
    latencies: Option<Mutex<Vec<i64>>>,
    remaining: Arc<AtomicUsize>,
    all_done: Arc<Notify>,
}

impl ResourceEventHandler<ConfigMap> for Handler {
    fn on_update(&self, _old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        let now = unix_nanos();
        let _ = self
            .first
            .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
        let meta = &new.metadata;
        if let Some(latencies) = &self.latencies {
            let written = meta
                .annotations
                .as_ref()
                .and_then(|a| a.get(WRITTEN_AT))
                .and_then(|v| v.parse::<i64>().ok());
            if let (Some(at), Ok(mut l)) = (written, latencies.lock()) {
                l.push(now - at);
            }
        }
        self.queue.add(format!(
            "{}/{}",
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default()
        ));
        if self.count.fetch_add(1, Ordering::Relaxed) + 1 == self.target
            && self.remaining.fetch_sub(1, Ordering::AcqRel) == 1
        {
            self.all_done.notify_one();
        }
    }
}

pub(crate) async fn run(o: &Options) -> Result<Value, Error> {
    let factory = o.factory()?;
    let informer = factory.informer::<ConfigMap>();
    let queue = WorkQueue::<String>::new();
    let first = Arc::new(AtomicI64::new(0));
    let remaining = Arc::new(AtomicUsize::new(3));
    let all_done = Arc::new(Notify::new());
    let handlers: Vec<Arc<Handler>> = (0..3)
        .map(|h| {
            Arc::new(Handler {
                queue: queue.clone(),
                count: AtomicU64::new(0),
                target: o.count as u64,
                first: Arc::clone(&first),
                latencies: (h == 0).then(|| Mutex::new(Vec::with_capacity(o.count))),
                remaining: Arc::clone(&remaining),
                all_done: Arc::clone(&all_done),
            })
        })
        .collect();
    for h in &handlers {
        informer.add_event_handler(Arc::clone(h))?;
    }
    let processed = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (queue, processed) = (queue.clone(), Arc::clone(&processed));
            tokio::spawn(async move {
                while let Some(key) = queue.get().await {
                    processed.fetch_add(1, Ordering::Relaxed);
                    queue.done(&key);
                }
            })
        })
        .collect();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    if !factory.wait_for_cache_sync(&cancel).await.all_synced() {
        return Err("the informer did not sync".into());
    }
    println!("{{\"ready\":true}}");
    // Every handler saw every update, or nothing arrived for 30 s (the watch fell behind).
    let seen = || {
        handlers
            .iter()
            .map(|h| h.count.load(Ordering::Relaxed))
            .sum::<u64>()
    };
    let (mut last, mut idle) = (u64::MAX, Instant::now());
    loop {
        tokio::select! {
            _ = all_done.notified() => break,
            _ = tokio::time::sleep(Duration::from_millis(100)) => {
                let now_seen = seen();
                if now_seen != last {
                    (last, idle) = (now_seen, Instant::now());
                } else if idle.elapsed() > Duration::from_secs(30) {
                    break;
                }
            }
        }
    }
    while !queue.is_empty() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let end = unix_nanos();
    queue.shut_down();
    for w in workers {
        w.await?;
    }
    factory.shutdown().await;
    let delivered = handlers
        .iter()
        .map(|h| h.count.load(Ordering::Relaxed))
        .min()
        .unwrap_or(0);
    let seconds = (end - first.load(Ordering::Relaxed)) as f64 / 1e9;
    let mut result = json!({
        "updates": delivered, "handlers": 3, "seconds": seconds,
        "events_per_s": delivered as f64 / seconds,
        "processed": processed.load(Ordering::Relaxed),
    });
    let mut latencies = handlers[0]
        .latencies
        .as_ref()
        .and_then(|l| l.lock().ok().map(|l| l.clone()))
        .unwrap_or_default();
    if !latencies.is_empty() {
        latencies.sort_unstable();
        result["latency_p50_ms"] = json!(latencies[latencies.len() / 2] as f64 / 1e6);
        result["latency_p99_ms"] = json!(latencies[latencies.len() * 99 / 100] as f64 / 1e6);
    }
    Ok(result)
}
