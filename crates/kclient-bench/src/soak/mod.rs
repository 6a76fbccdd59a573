//! `soak`: an informer factory and a controller over `--objects` parents (ConfigMaps, each
//! owning a Secret) for `--seconds`, against kclient-fake under constant churn (parents
//! changed, deleted and made again) and a fault every `--fault-every` seconds (dropped
//! watches, a compaction, a 503 storm, a 429 storm, in turn), sampling the process's resident
//! set, threads, open descriptors and tokio tasks every `--sample` seconds. The first fifth of
//! the run is the warm-up; the result says how each figure grew after it, and whether every
//! parent converged once the churn stopped. `cargo xtask soak --minutes N` runs it (issue 46).
//!
//! The server, its churn and its faults run in a child process (`kclient-bench soak-server`,
//! [`server`]), so that the figures are the client's alone; each sample carries the server's
//! latest report beside them (its resident set, the resourceVersion, the churn's writes).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kclient_cache::{Lister, SharedInformerFactory};
use kclient_controller::owner::set_controller_reference;
use kclient_controller::{Action, Controller, ControllerConfig, ReconcileContext, Reconciler};
use kclient_core::{ApiStatus, CancellationToken, CreateOptions, Patch, PatchOptions, ResourceExt};
use kclient_rest::{Config, RestClient};
use kclient_typed::Clientset;
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;

use crate::args::Options;
use crate::proc_stats::{heap_bytes, status_bytes, threads};
use crate::Error;

pub(crate) mod server;

pub(super) const NAMESPACE: &str = "soak";

/// Keeps a Secret named as each parent, its annotation `v` equal to the parent's `data.v`,
/// owned by it; then writes `v` into the parent's annotation `observed`.
struct Mirror {
    clientset: Clientset,
    secrets: Lister<Secret>,
    tally: Arc<Tally>,
}

/// What the reconciler did so far: its calls, and its writes by kind (to tell its writes from
/// the churn's in the samples).
#[derive(Default)]
struct Tally {
    reconciles: AtomicU64,
    child_creates: AtomicU64,
    child_patches: AtomicU64,
    parent_patches: AtomicU64,
}

impl Tally {
    fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Its counts now.
    fn now(&self) -> Work {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Work {
            reconciles: get(&self.reconciles),
            child_creates: get(&self.child_creates),
            child_patches: get(&self.child_patches),
            parent_patches: get(&self.parent_patches),
        }
    }
}

/// The [`Tally`]'s counts at one sample.
#[derive(Debug, Clone, Copy)]
struct Work {
    reconciles: u64,
    child_creates: u64,
    child_patches: u64,
    parent_patches: u64,
}

impl Work {
    fn json(&self) -> Value {
        json!({"reconciles": self.reconciles, "child_creates": self.child_creates,
               "child_patches": self.child_patches, "parent_patches": self.parent_patches})
    }
}

pub(super) fn v_of(cm: &ConfigMap) -> String {
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
                    other => drop(other?),
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

/// One sample of this process, with the server's latest report.
///
/// Of a fixed size, in a vector made large enough for the whole run at its start: the samples
/// kept must not themselves grow the heap they measure. (Held as JSON, they grew it by
/// 0.8 MiB an hour.)
#[derive(Debug, Clone, Copy)]
struct Sample {
    at_s: f64,
    rss: u64,
    /// The heap's live bytes, with the `heap-count` feature.
    heap: Option<u64>,
    threads: u64,
    fds: u64,
    tasks: u64,
    /// The reconciler's [`Tally`] so far.
    work: Work,
    /// The server process's latest report.
    server: ServerReport,
}

impl Sample {
    fn now(started: Instant, tally: &Tally, server: ServerReport) -> Self {
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
            work: tally.now(),
            server,
        }
    }

    fn server_rss(&self) -> Option<u64> {
        self.server.rss
    }

    fn json(&self) -> Value {
        json!({"at_s": round1(self.at_s), "rss_mib": mib(self.rss),
               "heap_mib": self.heap.map(mib),
               "threads": self.threads, "fds": self.fds, "tasks": self.tasks,
               "work": self.work.json(), "server": self.server.json()})
    }
}

/// The figures of one progress line of the server (see [`server`]); `None` before its first.
#[derive(Debug, Clone, Copy, Default)]
struct ServerReport {
    rss: Option<u64>,
    heap: Option<u64>,
    resource_version: Option<u64>,
    churn_writes: Option<u64>,
    /// The informers' lists and watches of parents and children.
    lists: [Option<u64>; 2],
    watches: [Option<u64>; 2],
}

impl ServerReport {
    fn of(line: &Value) -> Self {
        let pair = |name: &str| [0, 1].map(|i| line["requests"][name][i].as_u64());
        ServerReport {
            rss: line["rss"].as_u64(),
            heap: line["heap"].as_u64(),
            resource_version: line["resource_version"].as_u64(),
            churn_writes: line["churn_writes"].as_u64(),
            lists: pair("lists"),
            watches: pair("watches"),
        }
    }

    fn json(&self) -> Value {
        json!({"rss_mib": self.rss.map(mib), "heap_mib": self.heap.map(mib),
               "resource_version": self.resource_version, "churn_writes": self.churn_writes,
               "requests": {"lists": self.lists, "watches": self.watches}})
    }
}

fn mib(bytes: u64) -> f64 {
    round1(bytes as f64 / 1048576.0)
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// The parents a run has (`--objects`, 10,000 by default).
fn objects(o: &Options) -> usize {
    if o.objects == 0 {
        10_000
    } else {
        o.objects
    }
}

/// The server's process: `kclient-bench soak-server` with the same options, its stdout read
/// line by line. Killed if dropped before [`finish`](Self::finish).
struct ServerProcess {
    child: tokio::process::Child,
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl ServerProcess {
    async fn start(o: &Options) -> Result<(Self, String), Error> {
        let mut child = tokio::process::Command::new(std::env::current_exe()?)
            .arg("soak-server")
            .args(["--objects", &objects(o).to_string()])
            .args(["--seconds", &o.seconds.to_string()])
            .args(["--sample", &o.sample.to_string()])
            .args(["--fault-every", &o.fault_every.to_string()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdout = child
            .stdout
            .take()
            .ok_or("the server's stdout is not piped")?;
        let mut server = Self {
            child,
            lines: tokio::io::BufReader::new(stdout).lines(),
        };
        let first = server.next_line().await?;
        let url = first["url"]
            .as_str()
            .ok_or_else(|| format!("the server's first line has no url: {first}"))?
            .to_owned();
        Ok((server, url))
    }

    /// The server's next line (an error if it ended).
    async fn next_line(&mut self) -> Result<Value, Error> {
        match self.lines.next_line().await? {
            Some(line) => Ok(serde_json::from_str(&line)?),
            None => Err(format!("the server ended: {:?}", self.child.wait().await?).into()),
        }
    }

    /// Lets the server end (its stdin closed) and waits for it.
    async fn finish(mut self) -> Result<(), Error> {
        drop(self.child.stdin.take());
        let status = self.child.wait().await?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("the server ended with {status}").into())
        }
    }
}

/// Runs the soak (see the module documentation).
pub(crate) async fn run(o: &Options) -> Result<Value, Error> {
    let (mut server, url) = ServerProcess::start(o).await?;
    let mut config = Config::new(url);
    config.qps = None;
    let clientset = Clientset::from_client(RestClient::new(config)?);
    let factory = SharedInformerFactory::builder(clientset.clone())
        .namespace(NAMESPACE)
        .build();
    let tally = Arc::new(Tally::default());
    let controller = Controller::<ConfigMap, _>::new("soak", &factory)
        .owns::<Secret>()
        .with_config(ControllerConfig {
            workers: 4,
            ..ControllerConfig::default()
        });
    let mirror = Mirror {
        clientset,
        secrets: factory.lister::<Secret>(),
        tally: Arc::clone(&tally),
    };
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(controller.run(mirror, shutdown.clone()));

    let started = Instant::now();
    let mut latest = ServerReport::default();
    let every = o.sample.max(1);
    // Room for the churn's samples and ten minutes of settling; more only if it settles slower.
    let mut samples = Vec::with_capacity(((o.seconds.max(10) + 600) / every + 2) as usize);
    samples.push(Sample::now(started, &tally, latest));
    let mut tick = tokio::time::interval(Duration::from_secs(every));
    tick.tick().await;
    // Sample until the server says the churn is over and everything has converged.
    let done = loop {
        tokio::select! {
            line = server.next_line() => {
                let line = line?;
                if line["done"] == true {
                    break line;
                }
                latest = ServerReport::of(&line);
            }
            _ = tick.tick() => samples.push(Sample::now(started, &tally, latest)),
        }
    };
    samples.push(Sample::now(started, &tally, ServerReport::of(&done)));
    shutdown.cancel();
    running.await??;
    factory.shutdown().await;
    server.finish().await?;

    Ok(summary(
        &samples,
        json!({
            "objects": objects(o), "seconds": o.seconds.max(10),
            "writes": done["churn_writes"], "faults": done["faults"],
            "reconciles": tally.reconciles.load(Ordering::Relaxed),
            "unconverged_at_end": done["unconverged_at_end"],
            "parents_at_end": done["parents_at_end"],
            "settle_s": done["settle_s"],
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
    if let Some((first, last)) = windows(Sample::server_rss) {
        out["server_rss_mib_after_warm_up"] = json!(mib(first));
        out["server_rss_mib_at_end"] = json!(mib(last));
        out["server_rss_growth_pct"] = json!(pct((first, last)));
    }
    out["threads"] = growth(|s| s.threads);
    out["fds"] = growth(|s| s.fds);
    out["tasks"] = growth(|s| s.tasks);
    out["samples"] = samples.iter().map(Sample::json).collect();
    out
}
