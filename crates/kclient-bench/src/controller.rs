//! Scenario 8: the reconcile runtime (kclient-controller) beside kube-rs's `Controller`, on
//! the `--count` primary ConfigMaps `p-<i>` of `--namespace`, each owning a Secret `o-<i>`
//! (a controller owner reference).
//!
//! * `--controllers 1`: one controller of the ConfigMaps that owns the Secrets, `--concurrency`
//!   workers. From its start (informers not started yet) to every ConfigMap reconciled once:
//!   wall and CPU time, reconciles, the resident set. With `--requeue`, every reconcile asks
//!   to be requeued at once, and once every ConfigMap was reconciled the reconciles of the
//!   next `--settle` seconds are counted: the runtime's own turnaround (queue, worker,
//!   reconcile, requeue), in reconciles per second.
//! * `--controllers 3`: three controllers over the same two types — ConfigMaps owning Secrets,
//!   Secrets watching their ConfigMap, ConfigMaps watching their Secret — on one informer
//!   factory: the resident set once each has reconciled every object of its type, and how
//!   many informers (caches, watches) they needed.
//!
//! The reconciles only count: what is measured is the runtime, not the API server's writes.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kclient_controller::{
    Action, Controller, ControllerConfig, ControllerError, ReconcileContext, Reconciler,
};
use kclient_core::{CancellationToken, ObjectKey, ResourceExt};
use kclient_typed::Clientset;
use serde_json::{json, Value};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::args::Options;
use crate::proc_stats::{cpu_time, reset_peak, status_bytes};
use crate::Error;

/// Counts the reconciles of one controller, and which of its `count` objects were
/// reconciled at least once.
struct Counter {
    reconciles: AtomicUsize,
    first: Vec<AtomicBool>,
    missing: AtomicUsize,
    all_seen: Notify,
    requeue: Arc<AtomicBool>,
}

impl Counter {
    fn new(count: usize, requeue: &Arc<AtomicBool>) -> Arc<Self> {
        Arc::new(Self {
            reconciles: AtomicUsize::new(0),
            first: (0..count).map(|_| AtomicBool::new(false)).collect(),
            missing: AtomicUsize::new(count),
            all_seen: Notify::new(),
            requeue: Arc::clone(requeue),
        })
    }

    /// Counts a reconcile of the object named `<prefix>-<i>`.
    fn count(&self, name: &str) -> Action {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        let index = name
            .split_once('-')
            .and_then(|(_, i)| i.parse::<usize>().ok());
        if let Some(seen) = index.and_then(|i| self.first.get(i)) {
            if !seen.swap(true, Ordering::AcqRel)
                && self.missing.fetch_sub(1, Ordering::AcqRel) == 1
            {
                self.all_seen.notify_one();
            }
        }
        if self.requeue.load(Ordering::Relaxed) {
            Action::requeue(Duration::ZERO)
        } else {
            Action::await_change()
        }
    }

    async fn wait_all_seen(&self) {
        if self.missing.load(Ordering::Acquire) > 0 {
            self.all_seen.notified().await;
        }
    }
}

/// A reconciler that counts.
struct Counting(Arc<Counter>);

impl<K: kclient_core::Resource + Send + Sync + 'static> Reconciler<K> for Counting {
    type Error = std::convert::Infallible;

    async fn reconcile(&self, obj: Arc<K>, _: &ReconcileContext) -> Result<Action, Self::Error> {
        Ok(self.0.count(obj.name_any()))
    }
}

fn counterpart(namespace: &str, name: &str, prefix: &str) -> Option<ObjectKey> {
    let (_, i) = name.split_once('-')?;
    Some(ObjectKey::namespaced(namespace, format!("{prefix}-{i}")))
}

pub(crate) async fn run(o: &Options) -> Result<Value, Error> {
    if o.controllers != 1 && o.controllers != 3 {
        return Err(format!("--controllers {}: 1 or 3", o.controllers).into());
    }
    let factory = o.factory()?;
    let config = ControllerConfig {
        workers: o.concurrency,
        ..ControllerConfig::default()
    };
    let requeue = Arc::new(AtomicBool::new(o.requeue));
    let shutdown = CancellationToken::new();
    let mut runs = Runs {
        config,
        shutdown: shutdown.clone(),
        counters: Vec::new(),
        tasks: Vec::new(),
    };
    let before = status_bytes("VmRSS:");
    reset_peak();
    let (began, cpu0) = (Instant::now(), cpu_time());
    let config_maps = Controller::<ConfigMap, _>::new("config-maps", &factory);
    let config_maps = match o.owns.as_str() {
        "metadata" => config_maps.owns_metadata::<Secret>(),
        "whole" => config_maps.owns::<Secret>(),
        other => return Err(format!("--owns {other:?}: metadata or whole").into()),
    };
    runs.start(config_maps, Counter::new(o.count, &requeue));
    if o.controllers == 3 {
        let ns = o.namespace.clone();
        runs.start(
            Controller::<Secret, _>::new("secrets", &factory)
                .watches(move |cm: &ConfigMap| counterpart(&ns, cm.name_any(), "o")),
            Counter::new(o.count, &requeue),
        );
        let ns = o.namespace.clone();
        runs.start(
            Controller::<ConfigMap, _>::new("config-maps-by-secret", &factory)
                .watches(move |s: &Secret| counterpart(&ns, s.name_any(), "p")),
            Counter::new(o.count, &requeue),
        );
    }
    let counters = runs.counters.clone();
    for counter in &counters {
        let limit = Duration::from_secs(600).saturating_sub(began.elapsed());
        if tokio::time::timeout(limit, counter.wait_all_seen())
            .await
            .is_err()
        {
            let missing: Vec<usize> = counters
                .iter()
                .map(|c| c.missing.load(Ordering::Acquire))
                .collect();
            return Err(format!(
                "not every object was reconciled within 600 s: {missing:?} missing"
            )
            .into());
        }
    }
    let (wall, cpu) = (began.elapsed(), cpu_time() - cpu0);
    let (peak, after) = (status_bytes("VmHWM:"), status_bytes("VmRSS:"));
    let reconciles = |counters: &[Arc<Counter>]| -> usize {
        counters
            .iter()
            .map(|c| c.reconciles.load(Ordering::Relaxed))
            .sum()
    };
    let counted = reconciles(&counters);
    let mut result = json!({
        "controllers": o.controllers,
        "owns": o.owns,
        "objects": o.count,
        "initial_s": wall.as_secs_f64(),
        "cpu_s": cpu.as_secs_f64(),
        "reconciles": counted,
        "rss_before": before,
        "rss_after": after,
        "rss_peak": peak,
    });
    if o.requeue {
        // Every reconcile requeues its key at once: the runtime's own turnaround.
        let (window, cpu1) = (Instant::now(), cpu_time());
        tokio::time::sleep(Duration::from_secs(o.settle.max(1))).await;
        let (elapsed, cpu) = (window.elapsed().as_secs_f64(), cpu_time() - cpu1);
        let requeued = reconciles(&counters) - counted;
        result["requeue_per_s"] = json!(requeued as f64 / elapsed);
        result["requeue_cpu_s"] = json!(cpu.as_secs_f64());
        requeue.store(false, Ordering::Relaxed);
    }
    shutdown.cancel();
    for task in runs.tasks {
        task.await??;
    }
    factory.shutdown().await;
    Ok(result)
}

/// The controllers of a run: their counters and tasks.
struct Runs {
    config: ControllerConfig,
    shutdown: CancellationToken,
    counters: Vec<Arc<Counter>>,
    tasks: Vec<JoinHandle<Result<(), ControllerError>>>,
}

impl Runs {
    fn start<K>(&mut self, controller: Controller<K, Clientset>, counter: Arc<Counter>)
    where
        K: kclient_core::Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
    {
        self.counters.push(Arc::clone(&counter));
        self.tasks.push(tokio::spawn(
            controller
                .with_config(self.config.clone())
                .run(Counting(counter), self.shutdown.clone()),
        ));
    }
}
