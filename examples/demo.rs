//! The main demo, `cargo xtask demo`: a real controller built from kclient's layers, watched
//! live while a scripted scenario changes and breaks the world around it.
//!
//! **The controller** keeps, for every Deployment of its namespace, a ConfigMap
//! `<name>-status` owned by the Deployment and holding its replica count and image (the
//! shape of client-go's sample-controller):
//!
//! * a `SharedInformerFactory` with two informers (Deployments and ConfigMaps) and their
//!   listers, and a custom index: ConfigMaps by the uid of their owning Deployment;
//! * event handlers that turn every change (a Deployment's, or a ConfigMap's it owns) into a
//!   `namespace/name` key on a rate-limited workqueue, and two workers that reconcile keys
//!   from the listers, writing through the typed Clientset and retrying failures with the
//!   queue's backoff;
//! * Kubernetes Events for what it did, recorded through `kclient_tools::events`;
//! * leader election on a Lease (`kclient_tools::leaderelection`): the informers and workers
//!   run while this process leads.
//!
//! **The scenario** creates, scales, updates and deletes Deployments, and breaks things with
//! kclient-fake's fault injection: every watch dropped, the history compacted (the next
//! watch gets `410 Gone`, the reflector relists), a storm of `503`s that the controller's
//! writes run into. After each step it waits until the controller's caches and the
//! ConfigMaps agree with the Deployments again, and times how long that took.
//!
//! **The view**: on a terminal, a table of the cached Deployments and their ConfigMaps, the
//! controller's latest actions and a progress line, redrawn in place (indicatif); plain lines
//! when the output is not a terminal or with `--plain`. A summary ends it: events handled,
//! reconciles, retries, cache size, time to sync, recovery time after each fault.
//!
//! ```text
//! cargo xtask demo                               # against kclient-fake, started here
//! cargo xtask demo --plain                       # plain lines, no redrawing
//! cargo xtask demo --kubeconfig ~/.kube/config   # against a cluster (or set KUBECONFIG)
//! ```
//!
//! Against a cluster it works in a namespace of its own, `kclient-demo-<random>`, deleted at
//! the end, also after Ctrl-C (a second Ctrl-C exits at once). The faults need kclient-fake:
//! against a cluster those steps are skipped.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kclient::core::labels::Selector;
use kclient::core::{BoxError, CreateOptions, DeleteOptions, GroupResource, UpdateOptions};
use kclient::fake::{Failure, FakeApiServer, Faults};
use kclient::prelude::*;
use kclient::rest::KubeconfigOptions;
use kclient::tools::events::{new_broadcaster, object_reference, EventRecorder, EventType};
use kclient::tools::leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaderToken, LeaseLock,
};
use kclient::tools::retry::{retry_on_conflict, DEFAULT_RETRY};
use kclient::tools::wait::poll_until_timeout;
use serde_json::{json, Value};
use tokio::time::Instant;

/// The label on the ConfigMaps the controller makes.
const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "kclient-demo");
/// The index of ConfigMaps by the uid of their owning Deployment.
const BY_OWNER: &str = "by-owner";
/// How many times a failing key is retried before it is dropped.
const MAX_RETRIES: usize = 15;
/// The longest the scenario waits for the controller to catch up after a step.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);
/// How many of the latest actions the live table shows.
const RECENT_ACTIONS: usize = 6;

// ---------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------

/// Where the demo runs.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    /// kclient-fake, started here.
    Fake,
    /// `--kubeconfig <path>`.
    Kubeconfig(PathBuf),
    /// `KUBECONFIG` is set: client-go's loading rules (it may list several files).
    Environment,
}

/// The command line.
#[derive(Debug, Clone, PartialEq)]
struct Options {
    target: Target,
    /// Plain lines even on a terminal.
    plain: bool,
}

const USAGE: &str =
    "usage: demo [--plain] [--kubeconfig <path>]   (default: KUBECONFIG, else kclient-fake)";

fn parse_args(args: &[String], kubeconfig_env: bool) -> Result<Options, String> {
    let mut options = Options {
        target: if kubeconfig_env {
            Target::Environment
        } else {
            Target::Fake
        },
        plain: false,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--plain" => options.plain = true,
            "--kubeconfig" => {
                let path = args.next().ok_or("--kubeconfig needs a path")?;
                options.target = Target::Kubeconfig(path.into());
            }
            flag if flag.starts_with("--kubeconfig=") => {
                options.target = Target::Kubeconfig(flag["--kubeconfig=".len()..].into());
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unexpected argument {other:?}\n{USAGE}")),
        }
    }
    Ok(options)
}

// ---------------------------------------------------------------------------------------
// What the controller did, for the view and the summary
// ---------------------------------------------------------------------------------------

/// Counters and the action log, shared by the controller, the scenario and the view.
#[derive(Default)]
struct Stats {
    /// Event handler calls, both informers.
    events_handled: AtomicU64,
    /// Keys reconciled (successfully or not).
    reconciles: AtomicU64,
    /// Keys re-queued with the rate limiter's backoff after a failure.
    retries: AtomicU64,
    /// ConfigMaps created or updated.
    writes: AtomicU64,
    /// Kubernetes Events recorded.
    events_recorded: AtomicU64,
    /// From the factory's start to every cache synced.
    time_to_sync: OnceLock<Duration>,
    /// The latest actions, newest last.
    recent: Mutex<VecDeque<String>>,
}

/// Where lines and the live table go.
#[derive(Clone)]
struct View {
    inner: Arc<ViewInner>,
    stats: Arc<Stats>,
    started: Instant,
}

enum ViewInner {
    /// A terminal: the table and the progress line, redrawn in place.
    Live {
        multi: MultiProgress,
        table: ProgressBar,
        progress: ProgressBar,
        /// The current step's title, for its outcome line.
        title: Mutex<String>,
        /// Set once the bars are finished: lines go below them from then on.
        finished: AtomicBool,
    },
    /// Plain lines.
    Plain(Mutex<Box<dyn Write + Send>>),
}

impl View {
    fn live(stats: Arc<Stats>, steps: u64) -> Self {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stdout());
        let table = multi.add(ProgressBar::new_spinner());
        table.set_style(ProgressStyle::with_template("{msg}").expect("a valid template"));
        let progress = multi.add(ProgressBar::new(steps));
        progress.set_style(
            ProgressStyle::with_template(
                "{spinner:.green} [{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len} {wide_msg}",
            )
            .expect("a valid template"),
        );
        progress.enable_steady_tick(Duration::from_millis(100));
        Self {
            inner: Arc::new(ViewInner::Live {
                multi,
                table,
                progress,
                title: Mutex::new(String::new()),
                finished: AtomicBool::new(false),
            }),
            stats,
            started: Instant::now(),
        }
    }

    fn plain(stats: Arc<Stats>, out: Box<dyn Write + Send>) -> Self {
        Self {
            inner: Arc::new(ViewInner::Plain(Mutex::new(out))),
            stats,
            started: Instant::now(),
        }
    }

    fn is_live(&self) -> bool {
        matches!(*self.inner, ViewInner::Live { .. })
    }

    /// A line of its own: above the live table, or in order with the others.
    fn line(&self, text: &str) {
        match &*self.inner {
            ViewInner::Live {
                multi, finished, ..
            } => {
                if finished.load(Ordering::Acquire) {
                    println!("{text}");
                } else {
                    let _ = multi.println(text);
                }
            }
            ViewInner::Plain(out) => {
                let mut out = out.lock().unwrap_or_else(|e| e.into_inner());
                let _ = writeln!(out, "{text}");
            }
        }
    }

    /// Something the controller did: kept for the live table, a line when plain.
    fn action(&self, text: String) {
        let stamped = format!("{:>7.3}s  {text}", self.started.elapsed().as_secs_f64());
        if !self.is_live() {
            self.line(&format!("  {stamped}"));
        }
        let mut recent = self.stats.recent.lock().unwrap_or_else(|e| e.into_inner());
        if recent.len() == RECENT_ACTIONS {
            recent.pop_front();
        }
        recent.push_back(stamped);
    }

    /// The scenario moved to step `n` (from 1).
    fn step(&self, n: u64, total: u64, title: &str) {
        match &*self.inner {
            ViewInner::Live {
                progress,
                title: current,
                ..
            } => {
                progress.set_position(n - 1);
                progress.set_message(title.to_owned());
                *current.lock().unwrap_or_else(|e| e.into_inner()) =
                    format!("[{n}/{total}] {title}");
            }
            ViewInner::Plain(_) => self.line(&format!("[{n}/{total}] {title}")),
        }
    }

    /// A step's outcome.
    fn outcome(&self, text: &str) {
        match &*self.inner {
            ViewInner::Live {
                progress, title, ..
            } => {
                progress.inc(1);
                let title = title.lock().unwrap_or_else(|e| e.into_inner()).clone();
                self.line(&format!("{title}: {text}"));
            }
            ViewInner::Plain(_) => self.line(&format!("      {text}")),
        }
    }

    /// Redraws the live table (nothing when plain).
    fn draw(&self, table: String) {
        if let ViewInner::Live { table: bar, .. } = &*self.inner {
            bar.set_message(table);
        }
    }

    /// Leaves the last table on screen and stops redrawing.
    fn finish(&self) {
        if let ViewInner::Live {
            table,
            progress,
            finished,
            ..
        } = &*self.inner
        {
            progress.finish_with_message("done");
            table.finish();
            finished.store(true, Ordering::Release);
        }
    }
}

// ---------------------------------------------------------------------------------------
// The controller
// ---------------------------------------------------------------------------------------

/// What the ConfigMap of `d` should hold, read through JSON (the same for every Kubernetes
/// version k8s-openapi models).
fn desired_data(d: &Deployment) -> BTreeMap<String, String> {
    let value = serde_json::to_value(d).unwrap_or_default();
    let replicas = value["spec"]["replicas"].as_i64().unwrap_or(1);
    let image = value["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default();
    BTreeMap::from([
        ("replicas".to_owned(), replicas.to_string()),
        ("image".to_owned(), image.to_owned()),
    ])
}

fn status_name(deployment: &str) -> String {
    format!("{deployment}-status")
}

/// The controller: listers over two caches, the owner index, the queue, the client for
/// writes and the event recorder.
#[derive(Clone)]
struct Controller {
    clientset: Clientset,
    namespace: String,
    deployments: Lister<Deployment>,
    config_maps: Lister<ConfigMap>,
    config_map_index: Indexer<ConfigMap>,
    queue: RateLimitingQueue<String>,
    recorder: EventRecorder,
    view: View,
}

impl Controller {
    /// Builds the controller on `factory`'s informers and registers its handlers.
    fn new(
        clientset: Clientset,
        factory: &SharedInformerFactory<Clientset>,
        namespace: &str,
        recorder: EventRecorder,
        view: View,
    ) -> Result<Self, kclient::Error> {
        let deployment_informer = factory.apps_v1().deployments().informer();
        let config_map_informer = factory.core_v1().config_maps().informer();
        config_map_informer.add_indexers(Indexers::new().with(BY_OWNER, |cm: &ConfigMap| {
            Ok(cm
                .owner_references()
                .iter()
                .filter(|o| o.kind == "Deployment")
                .map(|o| o.uid.clone())
                .collect())
        }))?;
        let controller = Controller {
            clientset,
            namespace: namespace.to_owned(),
            deployments: deployment_informer.lister(),
            config_maps: config_map_informer.lister(),
            config_map_index: config_map_informer.get_indexer().clone(),
            queue: RateLimitingQueue::with_config(
                default_controller_rate_limiter(),
                kclient::workqueue::RateLimitingQueueConfig::new().name("kclient-demo"),
            ),
            recorder,
            view,
        };
        let (add, update, delete) = (controller.clone(), controller.clone(), controller.clone());
        deployment_informer.add_event_handler(
            ResourceEventHandlerFuncs::new()
                .add_func(move |d: &Arc<Deployment>, _| add.handled().enqueue(d))
                .update_func(move |_, d: &Arc<Deployment>| update.handled().enqueue(d))
                .delete_func(move |d: &DeletedObject<Deployment>| {
                    // A tombstone carries the key when the final state was missed.
                    delete.handled();
                    delete
                        .queue
                        .add(kclient::core::deletion_handling_meta_namespace_key(d));
                }),
        )?;
        let (add, update, delete) = (controller.clone(), controller.clone(), controller.clone());
        config_map_informer.add_event_handler(
            ResourceEventHandlerFuncs::new()
                .add_func(move |cm: &Arc<ConfigMap>, _| add.handled().enqueue_owner(cm))
                .update_func(move |_, cm: &Arc<ConfigMap>| update.handled().enqueue_owner(cm))
                .delete_func(move |cm: &DeletedObject<ConfigMap>| {
                    delete.handled();
                    if let Some(cm) = cm.last_known() {
                        delete.enqueue_owner(cm);
                    }
                }),
        )?;
        Ok(controller)
    }

    fn stats(&self) -> &Stats {
        &self.view.stats
    }

    /// Counts a handler call.
    fn handled(&self) -> &Self {
        self.stats().events_handled.fetch_add(1, Ordering::Relaxed);
        self
    }

    fn enqueue(&self, d: &Deployment) {
        self.queue.add(kclient::core::meta_namespace_key(d));
    }

    /// A ConfigMap changed: its owning Deployment is looked at again (sample-controller's
    /// `handleObject`), so a ConfigMap edited or deleted by someone else is repaired.
    fn enqueue_owner(&self, cm: &ConfigMap) {
        if let Some(owner) = cm
            .owner_references()
            .iter()
            .find(|o| o.kind == "Deployment")
        {
            self.queue.add(format!(
                "{}/{}",
                cm.namespace().unwrap_or_default(),
                owner.name
            ));
        }
    }

    /// Runs `workers` workers until the queue shuts down. They reconcile only while `leader`
    /// says this process leads, asked right before each reconcile (it reads the clock, so it
    /// is false after a pause past the renew deadline even before the token fires); keys
    /// taken after that are dropped, the next leader's informers list everything anew.
    async fn run_workers(&self, workers: usize, leader: &LeaderToken) {
        let tasks: Vec<_> = (0..workers)
            .map(|_| {
                let (controller, leader) = (self.clone(), leader.clone());
                tokio::spawn(async move {
                    while let Some(key) = controller.queue.get().await {
                        if leader.is_leader() {
                            let result = controller.sync(&key).await;
                            controller.handle_err(&key, result);
                        }
                        controller.queue.done(&key);
                    }
                })
            })
            .collect();
        for task in tasks {
            let _ = task.await;
        }
    }

    fn handle_err(&self, key: &String, result: Result<(), kclient::Error>) {
        match result {
            Ok(()) => self.queue.forget(key),
            Err(error) if self.queue.num_requeues(key) < MAX_RETRIES => {
                self.stats().retries.fetch_add(1, Ordering::Relaxed);
                let attempt = self.queue.num_requeues(key) + 1;
                self.view.action(format!(
                    "retry {key} ({}), attempt {attempt}",
                    short(&error)
                ));
                self.queue.add_rate_limited(key.clone());
            }
            Err(error) => {
                self.view
                    .action(format!("drop {key} after {MAX_RETRIES} retries: {error}"));
                self.queue.forget(key);
            }
        }
    }

    fn record(&self, d: &Deployment, type_: EventType, reason: &str, message: &str) {
        self.stats().events_recorded.fetch_add(1, Ordering::Relaxed);
        self.recorder
            .event(&object_reference(d), type_, reason, message);
    }

    /// Makes the Deployment's ConfigMap what it should be.
    async fn sync(&self, key: &str) -> Result<(), kclient::Error> {
        self.stats().reconciles.fetch_add(1, Ordering::Relaxed);
        let (namespace, name) = kclient::core::split_meta_namespace_key(key)?;
        let deployment = match self.deployments.namespaced(namespace).get(name) {
            Ok(d) => d,
            // Deleted: its ConfigMap goes with it (garbage collection of owned objects).
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let uid = deployment.uid().unwrap_or_default().to_owned();
        let data = desired_data(&deployment);
        let owned = self.config_map_index.by_index(BY_OWNER, &uid)?;
        let client = self.clientset.core_v1().config_maps(namespace);
        match owned.first() {
            Some(cm) if cm.data.as_ref() == Some(&data) => Ok(()),
            Some(cm) => {
                let mut updated = ConfigMap::clone(cm);
                updated.data = Some(data.clone());
                client.update(&updated, &UpdateOptions::default()).await?;
                self.stats().writes.fetch_add(1, Ordering::Relaxed);
                let message = format!(
                    "updated {}: replicas={} image={}",
                    cm.name_any(),
                    data["replicas"],
                    data["image"]
                );
                self.record(&deployment, EventType::Normal, "Updated", &message);
                self.view.action(message);
                Ok(())
            }
            None => {
                // The cache may not show yet that the Deployment is gone (its ConfigMap's
                // deletion by the garbage collector can arrive first): read it live before
                // making it a dependent, as client-go's controllers do before adopting.
                let live = self
                    .clientset
                    .apps_v1()
                    .deployments(namespace)
                    .get(name)
                    .await;
                match live {
                    Ok(live) if live.uid() == Some(uid.as_str()) => {}
                    Ok(_) => return Ok(()),
                    Err(e) if e.is_not_found() => return Ok(()),
                    Err(e) => return Err(e.into()),
                }
                let mut cm = ConfigMap::default();
                cm.metadata.name = Some(status_name(name));
                cm.metadata.namespace = Some(namespace.to_owned());
                cm.metadata.labels = Some(BTreeMap::from([(
                    MANAGED_BY.0.to_owned(),
                    MANAGED_BY.1.to_owned(),
                )]));
                cm.metadata.owner_references = Some(vec![OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: "Deployment".into(),
                    name: name.to_owned(),
                    uid,
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]);
                cm.data = Some(data.clone());
                match client.create(&cm, &CreateOptions::default()).await {
                    Ok(_) => {}
                    // Made by an earlier attempt whose answer was lost: the cache will show
                    // it, and the next sync compares it.
                    Err(e) if e.is_already_exists() => return Ok(()),
                    Err(e) => return Err(e.into()),
                }
                self.stats().writes.fetch_add(1, Ordering::Relaxed);
                let message = format!(
                    "created {}: replicas={} image={}",
                    status_name(name),
                    data["replicas"],
                    data["image"]
                );
                self.record(&deployment, EventType::Normal, "Created", &message);
                self.view.action(message);
                Ok(())
            }
        }
    }

    /// Whether the caches show every Deployment with its ConfigMap in sync, and no
    /// ConfigMap of ours without its Deployment.
    fn converged(&self) -> bool {
        let everything = Selector::everything();
        let deployments = self
            .deployments
            .namespaced(&self.namespace)
            .list(&everything);
        let ours = self
            .config_maps
            .namespaced(&self.namespace)
            .list(&everything)
            .into_iter()
            .filter(|cm| cm.labels().get(MANAGED_BY.0).map(String::as_str) == Some(MANAGED_BY.1))
            .count();
        ours == deployments.len()
            && deployments.iter().all(|d| {
                let uid = d.uid().unwrap_or_default();
                let want = desired_data(d);
                self.config_map_index
                    .by_index(BY_OWNER, uid)
                    .is_ok_and(|owned| owned.iter().any(|cm| cm.data.as_ref() == Some(&want)))
            })
    }

    /// `name`'s replicas as the Deployment cache has them.
    fn cached_replicas(&self, name: &str) -> Option<String> {
        let d = self
            .deployments
            .namespaced(&self.namespace)
            .get(name)
            .ok()?;
        Some(desired_data(&d)["replicas"].clone())
    }

    /// `name`'s image as the Deployment cache has it.
    fn cached_image(&self, name: &str) -> Option<String> {
        let d = self
            .deployments
            .namespaced(&self.namespace)
            .get(name)
            .ok()?;
        Some(desired_data(&d)["image"].clone())
    }

    /// The table: the cached Deployments, their ConfigMaps, the latest actions (padded to
    /// a fixed height when `pad`, so that the live view does not jump).
    fn table(&self, header: &str, pad: bool) -> String {
        let everything = Selector::everything();
        let mut deployments = self
            .deployments
            .namespaced(&self.namespace)
            .list(&everything);
        deployments.sort_by(|a, b| a.name_any().cmp(b.name_any()));
        let mut rows = vec![[
            "DEPLOYMENT".to_owned(),
            "REPLICAS".to_owned(),
            "IMAGE".to_owned(),
            "CONFIGMAP".to_owned(),
            "STATE".to_owned(),
        ]];
        for d in &deployments {
            let want = desired_data(d);
            let owned = self
                .config_map_index
                .by_index(BY_OWNER, d.uid().unwrap_or_default())
                .unwrap_or_default();
            let (config_map, state) = match owned.first() {
                Some(cm) if cm.data.as_ref() == Some(&want) => {
                    (cm.name_any().to_owned(), "in sync")
                }
                Some(cm) => (cm.name_any().to_owned(), "out of date"),
                None => ("-".to_owned(), "missing"),
            };
            rows.push([
                d.name_any().to_owned(),
                want["replicas"].clone(),
                want["image"].clone(),
                config_map,
                state.to_owned(),
            ]);
        }
        let mut widths = [0usize; 5];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.len());
            }
        }
        let mut out = format!("{header}\n");
        for row in &rows {
            let line: Vec<String> = row
                .iter()
                .zip(widths)
                .map(|(cell, w)| format!("{cell:w$}"))
                .collect();
            out.push_str(line.join("  ").trim_end());
            out.push('\n');
        }
        out.push_str("latest actions:");
        let recent = self
            .stats()
            .recent
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for action in recent.iter() {
            out.push_str("\n  ");
            out.push_str(action);
        }
        if pad {
            for _ in recent.len()..RECENT_ACTIONS {
                out.push('\n');
            }
        }
        out
    }
}

/// An error in a few words, for the action log.
fn short(error: &kclient::Error) -> String {
    match error.api_status() {
        Some(status) => format!("{} {:?}", status.code, status.reason),
        None => error.to_string(),
    }
}

// ---------------------------------------------------------------------------------------
// The scenario
// ---------------------------------------------------------------------------------------

fn deployment(name: &str, replicas: i32, image: &str) -> Result<Deployment, BoxError> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image}]}
            }
        }
    }))?)
}

/// Sets the image of the Deployment's first container. `Option::from` turns either model of
/// `spec` (`Option<DeploymentSpec>` up to Kubernetes 1.36, `DeploymentSpec` from 1.37 on) into
/// an `Option<&mut DeploymentSpec>`; a program written for one version just uses `d.spec`.
fn set_image(d: &mut Deployment, image: &str) {
    let spec: Option<&mut DeploymentSpec> = Option::from(&mut d.spec);
    let container = spec
        .and_then(|s| s.template.spec.as_mut())
        .and_then(|pod| pod.containers.first_mut());
    if let Some(container) = container {
        container.image = Some(image.to_owned());
    }
}

/// What the demo measured.
#[derive(Debug, Clone, Default, PartialEq)]
struct Summary {
    /// Event handler calls.
    events_handled: u64,
    /// Keys reconciled.
    reconciles: u64,
    /// Failed reconciles re-queued with backoff.
    retries: u64,
    /// ConfigMaps created or updated.
    writes: u64,
    /// Kubernetes Events recorded.
    events_recorded: u64,
    /// Deployments in the cache at the end.
    cached_deployments: usize,
    /// ConfigMaps in the cache at the end.
    cached_config_maps: usize,
    /// From the informers' start to every cache synced.
    time_to_sync: Duration,
    /// For each fault, from its injection to the controller caught up with the change made
    /// after it.
    recoveries: Vec<(String, Duration)>,
    /// Faults skipped (against a cluster).
    skipped_faults: usize,
    /// The whole scenario.
    elapsed: Duration,
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Summary")?;
        writeln!(f, "  events handled      {}", self.events_handled)?;
        writeln!(f, "  reconciles          {}", self.reconciles)?;
        writeln!(f, "  retries             {}", self.retries)?;
        writeln!(f, "  writes              {}", self.writes)?;
        writeln!(f, "  events recorded     {}", self.events_recorded)?;
        writeln!(
            f,
            "  cache size          {} objects ({} Deployments, {} ConfigMaps)",
            self.cached_deployments + self.cached_config_maps,
            self.cached_deployments,
            self.cached_config_maps
        )?;
        writeln!(f, "  time to sync        {}", ms(self.time_to_sync))?;
        for (fault, took) in &self.recoveries {
            writeln!(f, "  recovery after {fault:<22} {}", ms(*took))?;
        }
        if self.skipped_faults > 0 {
            writeln!(
                f,
                "  faults skipped      {} (fault injection needs kclient-fake)",
                self.skipped_faults
            )?;
        }
        write!(f, "  scenario            {}", ms(self.elapsed))
    }
}

/// The demo's namespace: `kclient-demo-<5 hex digits>`.
fn namespace_name() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("kclient-demo-{:05x}", nanos & 0xfffff)
}

/// One step of the scenario.
enum Change {
    Create(&'static str, i32, &'static str),
    Scale(&'static str, i32),
    Image(&'static str, &'static str),
    Delete(&'static str),
}

/// A fault to inject before a change (kclient-fake only).
#[derive(Clone, Copy)]
enum Fault {
    DroppedWatches,
    Compaction,
    ServiceUnavailableStorm,
}

impl Fault {
    fn describe(self) -> &'static str {
        match self {
            Fault::DroppedWatches => "dropped watches",
            Fault::Compaction => "410 Gone (compaction)",
            Fault::ServiceUnavailableStorm => "503 storm",
        }
    }
}

/// How many requests the 503 storm fails.
const STORM: usize = 6;

/// The scripted scenario, the whole of it.
const SCRIPT: &[(Option<Fault>, Change)] = &[
    (None, Change::Create("worker", 1, "busybox:1.36")),
    (None, Change::Scale("web", 5)),
    (None, Change::Image("api", "nginx:1.28")),
    (Some(Fault::DroppedWatches), Change::Scale("worker", 2)),
    (Some(Fault::Compaction), Change::Scale("api", 3)),
    (
        Some(Fault::ServiceUnavailableStorm),
        Change::Scale("web", 2),
    ),
    (None, Change::Delete("api")),
];

/// Seeds, starts the controller under leader election, plays the script, stops, and
/// returns what it measured. `fake` is the server when the demo runs against kclient-fake
/// (faults need it); `interrupted` ends the scenario early (Ctrl-C).
async fn run(
    config: Config,
    namespace: &str,
    fake: Option<&FakeApiServer>,
    view: View,
    interrupted: CancellationToken,
) -> Result<Summary, BoxError> {
    let started = Instant::now();
    let clientset = Clientset::new(config)?;
    let deployments = clientset.apps_v1().deployments(namespace);

    // Seed: two Deployments before the controller starts (they are in its first list).
    for (name, replicas, image) in [("web", 2, "nginx:1.27"), ("api", 1, "nginx:1.27")] {
        deployments
            .create(
                &deployment(name, replicas, image)?,
                &CreateOptions::default(),
            )
            .await?;
    }
    view.line(&format!("Seeded {namespace} with Deployments web and api"));

    // Events, recorded on the Deployments.
    let broadcaster = new_broadcaster();
    broadcaster.start_recording_to_sink(clientset.core_v1().events(""))?;
    let recorder = broadcaster.new_recorder("kclient-demo", "demo");

    // The controller, built now, started by leader election.
    let factory = SharedInformerFactory::builder(clientset.clone())
        .namespace(namespace)
        .build();
    let controller = Controller::new(
        clientset.clone(),
        &factory,
        namespace,
        recorder,
        view.clone(),
    )?;
    let factory = Arc::new(factory);
    let identity = format!("demo-{}", std::process::id());
    let lock = LeaseLock::from_clientset(&clientset, namespace, "kclient-demo", identity.clone());
    let callbacks = LeaderCallbacks::new()
        .on_started_leading({
            let (factory, controller) = (Arc::clone(&factory), controller.clone());
            move |token| lead(Arc::clone(&factory), controller.clone(), token)
        })
        .on_stopped_leading({
            let view = view.clone();
            move || view.action("left the election".to_owned())
        })
        .on_new_leader({
            let view = view.clone();
            move |leader| {
                if !leader.is_empty() {
                    view.action(format!("leader is {leader}"));
                }
            }
        });
    let elector = LeaderElector::new(LeaderElectionConfig {
        release_on_cancel: true,
        name: "kclient-demo".into(),
        ..LeaderElectionConfig::new(lock, callbacks)
    })?;
    let leave = CancellationToken::new();
    let election = tokio::spawn({
        let leave = leave.clone();
        async move { elector.run(leave).await }
    });

    // The live table, redrawn ten times a second.
    let header = format!(
        "kclient demo · namespace {namespace} · {} · leader {identity}",
        match fake {
            Some(server) => format!("kclient-fake {}", server.url()),
            None => "cluster".to_owned(),
        }
    );
    let drawer = tokio::spawn({
        let (controller, view) = (controller.clone(), view.clone());
        async move {
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            loop {
                tick.tick().await;
                view.draw(controller.table(&header, true));
            }
        }
    });

    let outcome = script(&controller, fake, &view, &interrupted).await;

    // Stop: leave the election (the leader's work drains the queue and stops the
    // informers, then the Lease is released), flush the events.
    let summary = Summary {
        events_handled: view.stats.events_handled.load(Ordering::Relaxed),
        reconciles: view.stats.reconciles.load(Ordering::Relaxed),
        retries: view.stats.retries.load(Ordering::Relaxed),
        writes: view.stats.writes.load(Ordering::Relaxed),
        events_recorded: view.stats.events_recorded.load(Ordering::Relaxed),
        cached_deployments: controller.deployments.list(&Selector::everything()).len(),
        cached_config_maps: controller.config_maps.list(&Selector::everything()).len(),
        time_to_sync: view.stats.time_to_sync.get().copied().unwrap_or_default(),
        elapsed: started.elapsed(),
        ..Summary::default()
    };
    leave.cancel();
    election.await?;
    drawer.abort();
    broadcaster
        .shutdown_with_timeout(Duration::from_secs(2))
        .await;
    if view.is_live() {
        view.draw(controller.table("final state", true));
    } else {
        view.line(&controller.table("final state", false));
    }
    view.finish();
    let (recoveries, skipped_faults) = outcome?;
    Ok(Summary {
        recoveries,
        skipped_faults,
        ..summary
    })
}

/// The leader's work: start the informers, wait for their caches, run the workers until
/// leadership ends, then drain the queue and stop the informers.
async fn lead(
    factory: Arc<SharedInformerFactory<Clientset>>,
    controller: Controller,
    token: LeaderToken,
) {
    let started = Instant::now();
    factory.start(token.cancellation_token());
    let synced = factory
        .wait_for_cache_sync(token.cancellation_token())
        .await
        .all_synced();
    if synced {
        let _ = controller.stats().time_to_sync.set(started.elapsed());
        controller.view.action(format!(
            "caches synced in {} ({} Deployments, {} ConfigMaps)",
            ms(started.elapsed()),
            controller.deployments.list(&Selector::everything()).len(),
            controller.config_maps.list(&Selector::everything()).len()
        ));
        let workers = tokio::spawn({
            let (controller, token) = (controller.clone(), token.clone());
            async move { controller.run_workers(2, &token).await }
        });
        token.cancelled().await;
        controller.queue.shut_down_with_drain().await;
        let _ = workers.await;
    }
    controller.queue.shut_down();
    factory.shutdown().await;
}

/// Plays [`SCRIPT`]; returns the recovery time of each fault and how many were skipped.
async fn script(
    controller: &Controller,
    fake: Option<&FakeApiServer>,
    view: &View,
    interrupted: &CancellationToken,
) -> Result<(Vec<(String, Duration)>, usize), BoxError> {
    let total = SCRIPT.len() as u64 + 1;
    view.step(1, total, "leader election, informers, cache sync");
    wait_until(interrupted, || {
        controller.stats().time_to_sync.get().is_some() && controller.converged()
    })
    .await?;
    view.outcome(&format!(
        "leading; caches synced in {}; ConfigMaps made for the seeded Deployments",
        ms(controller
            .stats()
            .time_to_sync
            .get()
            .copied()
            .unwrap_or_default())
    ));
    let deployments = controller
        .clientset
        .apps_v1()
        .deployments(&controller.namespace);
    let mut recoveries = Vec::new();
    let mut skipped = 0;
    for (i, (fault, change)) in SCRIPT.iter().enumerate() {
        pause(view).await;
        let describe = match change {
            Change::Create(name, replicas, image) => {
                format!("create {name} ({replicas} × {image})")
            }
            Change::Scale(name, replicas) => format!("scale {name} to {replicas}"),
            Change::Image(name, image) => format!("set {name}'s image to {image}"),
            Change::Delete(name) => format!("delete {name}"),
        };
        let title = match fault {
            Some(fault) => format!("fault: {}, then {describe}", fault.describe()),
            None => describe,
        };
        view.step(i as u64 + 2, total, &title);
        let injected = Instant::now();
        let faults = match (fault, fake) {
            (Some(fault), Some(server)) => {
                let faults = server.faults();
                inject(*fault, &faults);
                Some(faults)
            }
            (Some(_), None) => {
                skipped += 1;
                view.line("      (the fault is skipped: fault injection needs kclient-fake)");
                None
            }
            (None, _) => None,
        };
        match change {
            Change::Create(name, replicas, image) => {
                deployments
                    .create(
                        &deployment(name, *replicas, image)?,
                        &CreateOptions::default(),
                    )
                    .await?;
            }
            Change::Scale(name, replicas) => match (fault, fake) {
                // The storm fails the next requests, whoever sends them: change the
                // Deployment inside the server so that the controller's writes meet it.
                (Some(Fault::ServiceUnavailableStorm), Some(server)) => {
                    server.modify(
                        &GroupResource::new("apps", "deployments"),
                        &controller.namespace,
                        name,
                        |d: &mut Value| d["spec"]["replicas"] = json!(replicas),
                    )?;
                }
                _ => {
                    deployments.scale_to(name, *replicas).await?;
                }
            },
            Change::Image(name, image) => {
                // A read-modify-write, retried when another writer got there first.
                retry_on_conflict(DEFAULT_RETRY, || async {
                    let mut current = deployments.get(name).await?;
                    set_image(&mut current, image);
                    deployments
                        .update(&current, &UpdateOptions::default())
                        .await
                })
                .await?;
            }
            Change::Delete(name) => {
                deployments
                    .delete(name, &DeleteOptions::background())
                    .await?;
            }
        }
        let seen = || match change {
            Change::Create(name, ..) => controller.cached_replicas(name).is_some(),
            Change::Scale(name, replicas) => {
                controller.cached_replicas(name) == Some(replicas.to_string())
            }
            Change::Image(name, image) => controller.cached_image(name).as_deref() == Some(*image),
            Change::Delete(name) => controller.cached_replicas(name).is_none(),
        };
        let storm_over = || faults.as_ref().is_none_or(|f| f.pending_failures() == 0);
        wait_until(interrupted, || {
            seen() && controller.converged() && storm_over()
        })
        .await?;
        let took = injected.elapsed();
        match fault.filter(|_| faults.is_some()) {
            Some(fault) => {
                view.outcome(&format!("recovered and in sync after {}", ms(took)));
                recoveries.push((fault.describe().to_owned(), took));
            }
            None => view.outcome(&format!("in sync after {}", ms(took))),
        }
    }
    view.line("Done: leaving the election (the queue drains, the informers stop)");
    Ok((recoveries, skipped))
}

fn inject(fault: Fault, faults: &Faults) {
    match fault {
        Fault::DroppedWatches => faults.drop_watches(),
        // Open watches get an ERROR event with 410 and end; the reflector relists.
        Fault::Compaction => faults.compact_history(),
        Fault::ServiceUnavailableStorm => {
            faults.fail_next(STORM, Failure::status(503).message("the demo's 503 storm"))
        }
    }
}

/// On a terminal, a moment between steps for the eye; none when plain.
async fn pause(view: &View) {
    if view.is_live() {
        tokio::time::sleep(Duration::from_millis(1200)).await;
    }
}

/// Polls `condition` every 10 ms until it holds ([`STEP_TIMEOUT`] at most, or until
/// interrupted).
async fn wait_until(
    interrupted: &CancellationToken,
    condition: impl Fn() -> bool,
) -> Result<(), kclient::Error> {
    poll_until_timeout(
        interrupted,
        Duration::from_millis(10),
        STEP_TIMEOUT,
        true,
        || {
            let holds = condition();
            async move { Ok::<_, kclient::Error>(holds) }
        },
    )
    .await
    .map_err(kclient::Error::from)
}

// ---------------------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------------------

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kubeconfig_env = std::env::var_os("KUBECONFIG").is_some_and(|v| !v.is_empty());
    let options = match parse_args(&args, kubeconfig_env) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    let stats = Arc::new(Stats::default());
    let view = if options.plain || !std::io::stdout().is_terminal() {
        View::plain(Arc::clone(&stats), Box::new(std::io::stdout()))
    } else {
        View::live(Arc::clone(&stats), SCRIPT.len() as u64 + 1)
    };

    // Ctrl-C ends the scenario and cleans up; a second one exits at once.
    let interrupted = CancellationToken::new();
    tokio::spawn({
        let (interrupted, view) = (interrupted.clone(), view.clone());
        async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                interrupted.cancel();
                view.line("Interrupted: cleaning up (Ctrl-C again to exit at once)");
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(130);
                }
            }
        }
    });

    let (fake, config) = match &options.target {
        Target::Fake => {
            let server = FakeApiServer::builder()
                .https()
                .token("demo")
                .start()
                .await?;
            view.line(&format!(
                "Started kclient-fake at {} (pass --kubeconfig for a cluster)",
                server.url()
            ));
            let config = server.config()?;
            (Some(server), config)
        }
        Target::Kubeconfig(path) => {
            view.line(&format!("Using the cluster of {}", path.display()));
            let options = KubeconfigOptions {
                path: Some(path.clone()),
                ..Default::default()
            };
            (None, Config::from_kubeconfig(&options)?)
        }
        Target::Environment => {
            view.line("Using the cluster of KUBECONFIG");
            (None, Config::infer()?)
        }
    };
    let namespace = namespace_name();
    let result = in_namespace(
        config,
        &namespace,
        fake.as_ref(),
        view.clone(),
        interrupted.clone(),
    )
    .await;
    match result {
        Ok(summary) => {
            view.line(&summary.to_string());
            Ok(())
        }
        Err(_) if interrupted.is_cancelled() => {
            view.line("Interrupted.");
            std::process::exit(130);
        }
        Err(error) => {
            view.line(&format!("The demo failed: {error}"));
            Err(error)
        }
    }
}

/// [`run`] in a namespace of its own, created first and deleted at the end whatever
/// happened.
async fn in_namespace(
    config: Config,
    namespace: &str,
    fake: Option<&FakeApiServer>,
    view: View,
    interrupted: CancellationToken,
) -> Result<Summary, BoxError> {
    let namespaces = Clientset::new(config.clone())?.core_v1().namespaces();
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": namespace}}))?;
    namespaces.create(&ns, &CreateOptions::default()).await?;
    view.line(&format!("Created namespace {namespace}"));
    let result = run(config, namespace, fake, view.clone(), interrupted).await;
    match namespaces
        .delete(namespace, &DeleteOptions::background())
        .await
    {
        Ok(_) => view.line(&format!("Deleted namespace {namespace}")),
        Err(e) => view.line(&format!("Could not delete namespace {namespace}: {e}")),
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Write` into a buffer the test keeps.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn arguments() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse_args(&args(&[]), false),
            Ok(Options {
                target: Target::Fake,
                plain: false
            })
        );
        assert_eq!(
            parse_args(&args(&["--plain"]), true),
            Ok(Options {
                target: Target::Environment,
                plain: true
            })
        );
        assert_eq!(
            parse_args(&args(&["--kubeconfig", "k.yaml", "--plain"]), true).map(|o| o.target),
            Ok(Target::Kubeconfig("k.yaml".into()))
        );
        assert_eq!(
            parse_args(&args(&["--kubeconfig=k.yaml"]), false).map(|o| o.target),
            Ok(Target::Kubeconfig("k.yaml".into()))
        );
        assert!(parse_args(&args(&["--kubeconfig"]), false).is_err());
        assert!(parse_args(&args(&["--bogus"]), false).is_err());
    }

    /// The whole demo against kclient-fake in plain mode: the summary it prints and what it
    /// measured, and the namespace is gone at the end.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_demo_runs_end_to_end_against_kclient_fake() -> Result<(), BoxError> {
        let server = FakeApiServer::builder()
            .https()
            .token("demo")
            .start()
            .await?;
        let out = Captured::default();
        let stats = Arc::new(Stats::default());
        let view = View::plain(Arc::clone(&stats), Box::new(out.clone()));
        let namespace = namespace_name();
        let summary = in_namespace(
            server.config()?,
            &namespace,
            Some(&server),
            view.clone(),
            CancellationToken::new(),
        )
        .await?;
        view.line(&summary.to_string());
        let text = String::from_utf8(out.0.lock().unwrap().clone())?;
        println!("{text}");

        // Every step ran and converged; the three faults were recovered from.
        for step in 1..=SCRIPT.len() + 1 {
            assert!(
                text.contains(&format!("[{step}/{}]", SCRIPT.len() + 1)),
                "{text}"
            );
        }
        let faults: Vec<&str> = summary.recoveries.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            faults,
            ["dropped watches", "410 Gone (compaction)", "503 storm"]
        );
        assert!(summary
            .recoveries
            .iter()
            .all(|(_, took)| *took < STEP_TIMEOUT));
        assert_eq!(summary.skipped_faults, 0);
        // The storm failed some of the controller's writes, which were retried.
        assert!(summary.retries >= 1, "{summary:?}");
        // Made: 3 ConfigMaps (web, api, worker); updated: web twice, api twice, worker once.
        assert!(summary.writes >= 8, "{summary:?}");
        assert!(summary.reconciles >= summary.writes, "{summary:?}");
        assert!(summary.events_handled >= summary.writes, "{summary:?}");
        assert_eq!(summary.events_recorded, summary.writes);
        // At the end: web and worker, each with its ConfigMap (api's went with it).
        assert_eq!(
            (summary.cached_deployments, summary.cached_config_maps),
            (2, 2)
        );
        assert!(summary.time_to_sync > Duration::ZERO);

        // The printed summary says the same.
        let printed = summary.to_string();
        assert!(text.contains(&printed));
        for line in [
            "Summary",
            &format!("  reconciles          {}", summary.reconciles),
            &format!("  retries             {}", summary.retries),
            "  cache size          4 objects (2 Deployments, 2 ConfigMaps)",
            "  recovery after dropped watches",
            "  recovery after 410 Gone (compaction)",
            "  recovery after 503 storm",
        ] {
            assert!(printed.contains(line), "{line:?} in\n{printed}");
        }
        assert!(
            text.contains("retry "),
            "the retries are in the action log:\n{text}"
        );
        assert!(text.contains(&format!("Deleted namespace {namespace}")));

        // The server: the namespace is gone, the Events were written before it went.
        let namespaces = Clientset::new(server.config()?)?
            .core_v1()
            .namespaces()
            .list(&Default::default())
            .await?;
        assert!(namespaces
            .items
            .iter()
            .all(|n| n.metadata.name.as_deref() != Some(namespace.as_str())));
        Ok(())
    }
}
