//! `soak`: an informer factory and a controller over `--objects` parents (ConfigMaps, each
//! owning a Secret) on an embedded kclient-fake, for `--seconds`, with constant churn (parents
//! changed, deleted and made again) and a fault every `--fault-every` seconds (dropped
//! watches, a compaction, a 503 storm, a 429 storm, in turn), sampling the process's resident
//! set, threads, open descriptors and tokio tasks every `--sample` seconds. The first fifth of
//! the run is the warm-up; the result says how each figure grew after it, and whether every
//! parent converged once the churn stopped. `cargo xtask soak --minutes N` runs it (issue 46).
//!
//! The process holds kclient-fake too: its store is the same size throughout, and its event
//! history is compacted by the compaction fault (as etcd compacts every five minutes).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kclient_cache::{Lister, SharedInformerFactory};
use kclient_controller::owner::{controller_of, set_controller_reference};
use kclient_controller::{Action, Controller, ControllerConfig, ReconcileContext, Reconciler};
use kclient_core::{
    ApiStatus, CancellationToken, CreateOptions, DeleteOptions, Patch, PatchOptions, ResourceExt,
};
use kclient_fake::{ActionFilter, Failure, FakeApiServer, Reaction, Reactor};
use kclient_rest::{Config, RestClient};
use kclient_testkit::SeededRng;
use kclient_typed::Clientset;
use serde_json::{json, Value};

use crate::args::Options;
use crate::proc_stats::{heap_bytes, status_bytes, threads};
use crate::Error;

const NAMESPACE: &str = "soak";

/// Keeps a Secret named as each parent, its annotation `v` equal to the parent's `data.v`,
/// owned by it; then writes `v` into the parent's annotation `observed`.
struct Mirror {
    clientset: Clientset,
    secrets: Lister<Secret>,
    tally: Arc<Tally>,
    /// The server, to tell a child its garbage collector deleted as it was made.
    server: Arc<FakeApiServer>,
}

/// What the reconciler did so far: its calls, and its writes by kind (to tell its writes from
/// the churn's in the samples).
#[derive(Default)]
struct Tally {
    reconciles: AtomicU64,
    child_creates: AtomicU64,
    /// Children made for a parent the server no longer held (the cache was behind: a parent
    /// deleted and made again), which its garbage collector deleted at once.
    children_collected: AtomicU64,
    child_patches: AtomicU64,
    parent_patches: AtomicU64,
    /// The informers' lists and watches, by resource (reactors on the server count them).
    lists: [AtomicU64; 2],
    watches: [AtomicU64; 2],
}

impl Tally {
    fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn json(&self) -> Value {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        json!({"reconciles": get(&self.reconciles), "child_creates": get(&self.child_creates),
               "children_collected": get(&self.children_collected),
               "child_patches": get(&self.child_patches),
               "parent_patches": get(&self.parent_patches),
               "lists": [get(&self.lists[0]), get(&self.lists[1])],
               "watches": [get(&self.watches[0]), get(&self.watches[1])]})
    }
}

fn v_of(cm: &ConfigMap) -> String {
    cm.data
        .as_ref()
        .and_then(|d| d.get("v"))
        .cloned()
        .unwrap_or_default()
}

impl Reconciler<ConfigMap> for Mirror {
    type Error = Error;

    async fn reconcile(
        &self,
        parent: Arc<ConfigMap>,
        _ctx: &ReconcileContext,
    ) -> Result<Action, Error> {
        Tally::count(&self.tally.reconciles);
        let name = parent.name_any().to_owned();
        let v = v_of(&parent);
        let secrets = self.clientset.core_v1().secrets(NAMESPACE);
        match self.secrets.namespaced(NAMESPACE).get(&name) {
            Ok(child) if child.annotations().get("v") == Some(&v) => {}
            Ok(_) => {
                let patch = Patch::Merge(json!({"metadata": {"annotations": {"v": v}}}));
                Tally::count(&self.tally.child_patches);
                secrets
                    .patch(&name, &patch, &PatchOptions::default())
                    .await?;
            }
            Err(e) if e.is_not_found() => {
                let mut child = Secret::default();
                child.metadata.namespace = Some(NAMESPACE.into());
                child.metadata.name = Some(name.clone());
                child.metadata.annotations = Some([("v".to_string(), v.clone())].into());
                set_controller_reference(parent.as_ref(), &mut child)?;
                Tally::count(&self.tally.child_creates);
                match secrets.create(&child, &CreateOptions::default()).await {
                    Err(e) if e.is_already_exists() => {}
                    Err(e) => return Err(e.into()),
                    Ok(made) => {
                        let now = self.server.get::<Secret>(NAMESPACE, &name);
                        if now.as_ref().and_then(|s| s.uid()) != made.uid() {
                            Tally::count(&self.tally.children_collected);
                        }
                    }
                }
            }
            Err(e) => return Err(e.into()),
        }
        if parent.annotations().get("observed") != Some(&v) {
            let patch = Patch::Merge(json!({"metadata": {"annotations": {"observed": v}}}));
            Tally::count(&self.tally.parent_patches);
            self.clientset
                .core_v1()
                .config_maps(NAMESPACE)
                .patch(&name, &patch, &PatchOptions::default())
                .await?;
        }
        Ok(Action::await_change())
    }
}

/// One sample of the process.
#[derive(Debug, Clone)]
struct Sample {
    at_s: f64,
    rss: u64,
    /// The heap's live bytes, with the `heap-count` feature.
    heap: Option<u64>,
    threads: u64,
    fds: u64,
    tasks: u64,
    /// The server's resourceVersion: how far the churn has gone (to place a change of the
    /// curves against the server's history).
    resource_version: u64,
    /// The churn's writes and the reconciler's [`Tally`] so far.
    work: Value,
}

impl Sample {
    fn now(started: Instant, server: &FakeApiServer, tally: &Tally, churn_writes: u64) -> Self {
        let mut work = tally.json();
        work["churn_writes"] = json!(churn_writes);
        let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
        Sample {
            at_s: started.elapsed().as_secs_f64(),
            rss: status_bytes("VmRSS:"),
            heap: heap_bytes(),
            threads: threads(),
            fds,
            tasks: tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks() as u64,
            resource_version: server.resource_version(),
            work,
        }
    }

    fn json(&self) -> Value {
        json!({"at_s": (self.at_s * 10.0).round() / 10.0, "rss_mib": mib(self.rss),
               "heap_mib": self.heap.map(mib),
               "threads": self.threads, "fds": self.fds, "tasks": self.tasks,
               "resource_version": self.resource_version, "work": self.work})
    }
}

fn mib(bytes: u64) -> f64 {
    (bytes as f64 / 1048576.0 * 10.0).round() / 10.0
}

/// Counts the lists and watches of parents and children in `tally` (reactors that let every
/// request by).
fn count_lists_and_watches(server: &FakeApiServer, tally: &Arc<Tally>) {
    for (i, resource) in ["configmaps", "secrets"].into_iter().enumerate() {
        for verb in ["list", "watch"] {
            let tally = Arc::clone(tally);
            let reactor = Reactor::from_fn(ActionFilter::new(verb, resource), move |_| {
                let counters = if verb == "list" {
                    &tally.lists
                } else {
                    &tally.watches
                };
                Tally::count(&counters[i]);
                Reaction::PassThrough
            });
            server.reactors().add(reactor);
        }
    }
}

/// The parents whose child or status is not `data.v`, on the server.
fn unconverged(server: &FakeApiServer) -> usize {
    let children: std::collections::HashMap<String, Secret> = server
        .list::<Secret>(Some(NAMESPACE))
        .into_iter()
        .map(|s| (s.name_any().to_owned(), s))
        .collect();
    server
        .list::<ConfigMap>(Some(NAMESPACE))
        .iter()
        .filter(|p| p.name_any().starts_with("p-"))
        .filter(|p| {
            let v = v_of(p);
            let child_ok = children.get(p.name_any()).is_some_and(|c| {
                c.annotations().get("v") == Some(&v)
                    && controller_of(c).is_some_and(|o| Some(o.uid.as_str()) == p.uid())
            });
            p.annotations().get("observed") != Some(&v) || !child_ok
        })
        .count()
}

fn parent(i: usize, v: u64) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some(NAMESPACE.into());
    cm.metadata.name = Some(format!("p-{i}"));
    cm.data = Some([("v".to_string(), v.to_string())].into());
    cm
}

/// Runs the soak (see the module documentation).
pub(crate) async fn run(o: &Options) -> Result<Value, Error> {
    let objects = if o.objects == 0 { 10_000 } else { o.objects };
    let duration = Duration::from_secs(o.seconds.max(10));
    let sample_every = Duration::from_secs(o.sample.max(1));
    let fault_every = Duration::from_secs(o.fault_every.max(1));
    let server = Arc::new(FakeApiServer::builder().start().await?);
    let mut namespace = k8s_openapi::api::core::v1::Namespace::default();
    namespace.metadata.name = Some(NAMESPACE.into());
    server.seed_typed(&namespace)?;
    for i in 0..objects {
        server.seed_typed(&parent(i, 0))?;
    }
    let mut config = Config::new(server.url());
    config.qps = None;
    let clientset = Clientset::from_client(RestClient::new(config)?);
    let factory = SharedInformerFactory::builder(clientset.clone())
        .namespace(NAMESPACE)
        .build();
    let tally = Arc::new(Tally::default());
    count_lists_and_watches(&server, &tally);
    let controller = Controller::<ConfigMap, _>::new("soak", &factory)
        .owns::<Secret>()
        .with_config(ControllerConfig {
            workers: 4,
            ..ControllerConfig::default()
        });
    let mirror = Mirror {
        clientset: clientset.clone(),
        secrets: factory.lister::<Secret>(),
        tally: Arc::clone(&tally),
        server: Arc::clone(&server),
    };
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(controller.run(mirror, shutdown.clone()));

    let started = Instant::now();
    let mut samples = vec![Sample::now(started, &server, &tally, 0)];
    let (mut next_sample, mut next_fault) = (sample_every, fault_every);
    let mut rng = SeededRng::new(0x9e37_79b9_7f4a_7c15);
    let (mut writes, mut faults_injected, mut version) = (0u64, 0u64, 0u64);
    let churn = clientset.core_v1().config_maps(NAMESPACE);
    // About 50 writes a second: a change, now and then a deletion and a new parent.
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    while started.elapsed() < duration {
        tick.tick().await;
        version += 1;
        let i = rng.below(objects as u64) as usize;
        let name = format!("p-{i}");
        let written = if rng.below(20) == 0 {
            match churn.delete(&name, &DeleteOptions::background()).await {
                Ok(_) => churn
                    .create(&parent(i, version), &CreateOptions::default())
                    .await
                    .map(drop),
                Err(e) => Err(e),
            }
        } else {
            let patch = Patch::Merge(json!({"data": {"v": version.to_string()}}));
            churn
                .patch(&name, &patch, &PatchOptions::default())
                .await
                .map(drop)
        };
        // Faults fail some of the churn's writes too: the churn goes on.
        writes += u64::from(written.is_ok());
        let elapsed = started.elapsed();
        if elapsed >= next_fault {
            next_fault += fault_every;
            let faults = server.faults();
            match faults_injected % 4 {
                0 => faults.drop_watches(),
                1 => faults.compact_history(),
                2 => faults.fail_next(20, Failure::status(503).message("soak")),
                _ => faults.fail_next(20, Failure::status(429).retry_after(1).message("soak")),
            }
            faults_injected += 1;
        }
        if elapsed >= next_sample {
            next_sample += sample_every;
            samples.push(Sample::now(started, &server, &tally, writes));
        }
    }
    // The churn stops: everything converges.
    server.faults().clear_failures();
    let settle_started = Instant::now();
    let mut left = unconverged(&server);
    while left > 0 && settle_started.elapsed() < Duration::from_secs(120) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        left = unconverged(&server);
    }
    samples.push(Sample::now(started, &server, &tally, writes));
    shutdown.cancel();
    running.await??;
    factory.shutdown().await;

    Ok(summary(
        &samples,
        json!({
            "objects": objects, "seconds": duration.as_secs(), "writes": writes,
            "faults": faults_injected,
            "reconciles": tally.reconciles.load(Ordering::Relaxed),
            "unconverged_at_end": left,
            "settle_s": (settle_started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
        }),
    ))
}

/// The figures after the warm-up (the first fifth of the samples): each figure's value at the
/// end of the warm-up, its highest after it, and the resident set's growth from the median of
/// the first after-warm-up window to that of the last one (a tenth of the samples each).
fn summary(samples: &[Sample], mut out: Value) -> Value {
    let warm = (samples.len() / 5).max(1).min(samples.len() - 1);
    let after = &samples[warm..];
    let window = (after.len() / 10).max(1);
    // A figure's median over the first and the last after-warm-up windows.
    let windows = |f: fn(&Sample) -> Option<u64>| {
        let median = |s: &[Sample]| {
            let mut v: Vec<u64> = s.iter().filter_map(f).collect();
            v.sort_unstable();
            v.get(v.len() / 2).copied()
        };
        Some((
            median(&after[..window])?,
            median(&after[after.len() - window..])?,
        ))
    };
    let pct = |(first, last): (u64, u64)| {
        ((last as f64 / first.max(1) as f64 - 1.0) * 1000.0).round() / 10.0
    };
    let growth = |f: fn(&Sample) -> u64| {
        let base = f(&samples[warm]);
        let most = after.iter().map(f).max().unwrap_or(base);
        json!({"after_warm_up": base, "highest_after": most, "growth": most.saturating_sub(base)})
    };
    if let Some((first, last)) = windows(|s| Some(s.rss)) {
        out["rss_mib_after_warm_up"] = json!(mib(first));
        out["rss_mib_at_end"] = json!(mib(last));
        out["rss_growth_pct"] = json!(pct((first, last)));
    }
    if let Some((first, last)) = windows(|s| s.heap) {
        out["heap_mib_after_warm_up"] = json!(mib(first));
        out["heap_mib_at_end"] = json!(mib(last));
        out["heap_growth_pct"] = json!(pct((first, last)));
    }
    out["threads"] = growth(|s| s.threads);
    out["fds"] = growth(|s| s.fds);
    out["tasks"] = growth(|s| s.tasks);
    out["samples"] = samples.iter().map(Sample::json).collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test command's short soak: 300 parents for 12 s, a fault every 2 s; everything
    /// converges once the churn stops, and no descriptors are left open by the faults.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_short_soak_converges_and_leaks_no_descriptors() {
        let options = Options {
            objects: 300,
            seconds: 12,
            sample: 1,
            fault_every: 2,
            ..Options::parse(&[]).unwrap()
        };
        let result = run(&options).await.unwrap();
        assert_eq!(result["unconverged_at_end"], 0, "{result}");
        assert!(result["faults"].as_u64().unwrap() >= 4, "{result}");
        assert!(result["reconciles"].as_u64().unwrap() > 300, "{result}");
        // Reconnections after dropped watches and storms must not pile up descriptors.
        assert!(result["fds"]["growth"].as_u64().unwrap() <= 16, "{result}");
    }
}
