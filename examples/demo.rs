//! The main demo, `cargo xtask demo`: a controller on kclient's reconcile runtime, watched live
//! while a scripted scenario changes and breaks the world around it.
//!
//! **The controller** keeps one ConfigMap `<name>-status` per Deployment of its namespace,
//! owned by the Deployment and holding its replica count and image (the shape of client-go's
//! sample-controller), on kclient-controller:
//!
//! * a [`Controller`] of Deployments that `owns` ConfigMaps (a change to a ConfigMap reconciles
//!   its owner), with two workers, on the shared informers of one `SharedInformerFactory`;
//!   the ConfigMaps' informer carries a custom index, ConfigMaps by the uid of their owner;
//! * a [`Reconciler`] reading the Deployment from the lister and its ConfigMap from the index,
//!   creating or updating it through the typed Clientset (owned with
//!   [`set_controller_reference`]), recording an Event for each write, and retrying failures
//!   with the workqueue's per-key backoff;
//! * a [`Manager`] running it: leader election on a Lease (only the leader reconciles),
//!   `/healthz` and `/readyz`, Prometheus metrics under controller-runtime's names (the summary
//!   reads them from `/metrics`), and a graceful shutdown at the end or on a signal.
//!
//! **The scenario** creates, scales, updates and deletes Deployments, and breaks things with
//! kclient-fake: every watch dropped (the informers watch again from where they were, without
//! a relist), the history compacted (the watches end with `410 Gone` and the informers list
//! again after the reflector's backoff), a storm of `503`s on the controller's ConfigMap
//! updates (a targeted reactor; the controller retries with backoff). After each step it
//! waits until the caches and the ConfigMaps agree with the Deployments again, and times it.
//! The informers' reactions are shown as they happen, from their reflectors' metrics hooks
//! (`ReflectorMetrics`) and from event handlers of the demo's own on the shared informers.
//!
//! **The view**: on a terminal, a table of the cached Deployments and their ConfigMaps (the
//! STATE column coloured unless `NO_COLOR` is set), the latest actions and a progress line,
//! redrawn in place (indicatif); plain lines when the output is not a terminal or with
//! `--plain`. A summary ends it.
//!
//! ```text
//! cargo xtask demo                               # against kclient-fake, started here
//! cargo xtask demo --plain                       # plain lines, no redrawing
//! cargo xtask demo --kubeconfig ~/.kube/config   # against a cluster (or set KUBECONFIG)
//! ```
//!
//! Against a cluster it works in a namespace of its own, `kclient-demo-<random>`, deleted at
//! the end; the faults need kclient-fake, so against a cluster those steps only make their
//! change. Ctrl-C, SIGTERM or SIGHUP stop it: the live view stops, the Manager shuts down
//! gracefully, the namespace is deleted, and it exits with status 130 (a second Ctrl-C exits
//! at once). A failure is printed as sentences, the error and its causes one per line.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kclient::cache::{ReflectorMetrics, ReflectorOptions};
use kclient::controller::owner::{controller_of, set_controller_reference};
use kclient::controller::{self, shutdown_on_signal};
use kclient::core::labels::Selector;
use kclient::core::{BoxError, CreateOptions, DeleteOptions, ListerWatcherFor, UpdateOptions};
use kclient::fake::{ActionFilter, Failure, FakeApiServer, Reaction, Reactor, ReactorHandle};
use kclient::prelude::*;
use kclient::rest::{KubeconfigOptions, RequestMetrics, RestClient};
use kclient::tools::events::{new_broadcaster, object_reference, EventBroadcaster, EventType};
use kclient::tools::leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaseLock};
use kclient::tools::retry::{retry_on_conflict, DEFAULT_RETRY};
use kclient::tools::wait::poll_until_timeout;
use serde_json::json;
use tokio::time::Instant;

/// The controller's name: its workqueue, metrics label, Events' source and Lease.
const CONTROLLER: &str = "kclient-demo";
/// The User-Agent of the controller's requests (the 503 storm picks them by it).
const CONTROLLER_AGENT: &str = "kclient-demo-controller";
/// The User-Agent of the scenario's requests (the "user" changing the Deployments).
const SCRIPT_AGENT: &str = "kclient-demo-script";
/// The demo's client-side rate limit: controller-runtime's (and kube-controller-manager's)
/// 20 requests per second with a burst of 30. client-go's default, 5 qps with a burst of 10,
/// is spent in the first second, and then throttles a step's few writes (the change, the
/// ConfigMap, its Event) to 200 ms each: against a cluster every step took about a second.
const QPS: f32 = 20.0;
/// See [`QPS`].
const BURST: u32 = 30;
/// The label on the ConfigMaps the controller makes.
const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "kclient-demo");
/// The index of ConfigMaps by the uid of their owning Deployment.
const BY_OWNER: &str = "by-owner";
/// How many times a failing key is retried before it is dropped.
const MAX_RETRIES: usize = 15;
/// The longest the scenario waits for the controller to catch up after a step.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);
/// How many of the latest actions the live table shows.
const RECENT_ACTIONS: usize = 8;
/// The exit status after an interruption (Ctrl-C's conventional 128 + SIGINT).
const INTERRUPTED: u8 = 130;
/// What the demo does, in one line: the first thing it prints.
const WHAT: &str = "kclient demo: a controller on kclient's reconcile runtime keeps one ConfigMap \
    <name>-status per Deployment (its replicas and image), while a script changes the \
    Deployments and breaks the API server";

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

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
enum Command {
    Run(Options),
    Help,
}

const USAGE: &str =
    "usage: demo [--plain] [--kubeconfig <path>]   (default: KUBECONFIG, else kclient-fake)";

fn parse_args(args: &[String], kubeconfig_env: bool) -> Result<Command, String> {
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
            "-h" | "--help" => return Ok(Command::Help),
            other => return Err(format!("unexpected argument {other:?}")),
        }
    }
    Ok(Command::Run(options))
}

// ---------------------------------------------------------------------------------------
// What happened, for the view and the summary
// ---------------------------------------------------------------------------------------

/// Counters and the action log, shared by the controller, the informers' hooks, the scenario
/// and the view.
#[derive(Default)]
struct Stats {
    /// Notifications to the demo's own handlers on the two informers.
    notifications: AtomicU64,
    /// ConfigMaps created or updated.
    writes: AtomicU64,
    /// Kubernetes Events recorded.
    events_recorded: AtomicU64,
    /// Failed reconciles the error policy requeued.
    retries: AtomicU64,
    /// Reconciles running (a failed one until the error policy is done).
    busy: AtomicU64,
    /// The informers' first lists, later lists, and watches opened again without a list.
    lists: AtomicU64,
    relists: AtomicU64,
    rewatches: AtomicU64,
    /// Requests the demo's clients sent, and how long they waited for the rate limiter.
    requests: AtomicU64,
    throttled_micros: AtomicU64,
    /// The leader the election last observed.
    leader: Mutex<String>,
    /// The names of the objects the demo's handlers saw deleted.
    deleted: Mutex<BTreeSet<String>>,
    /// The last fault injected, named as the informers' lines refer to it, and when.
    last_fault: Mutex<Option<(&'static str, Instant)>>,
    /// The latest actions, newest last.
    recent: Mutex<VecDeque<String>>,
}

impl Stats {
    fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// ", 1.18 s after the 410", when a fault was injected.
    fn since_fault(&self) -> String {
        match *lock(&self.last_fault) {
            Some((fault, at)) => format!(", {} after {fault}", elapsed(at.elapsed())),
            None => String::new(),
        }
    }
}

/// Locks `mutex`, whether or not a panic poisoned it (the data are counters and text).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A step's label, the same in the plain lines and on the live progress line: `[6/8] title`
/// while step 6 runs.
fn step_label(n: u64, total: u64, title: &str) -> String {
    format!("[{n}/{total}] {title}")
}

/// Where lines and the live table go.
#[derive(Clone)]
struct View {
    inner: Arc<ViewInner>,
    stats: Arc<Stats>,
    started: Instant,
    /// Whether the interruption was announced (see [`View::interrupted`]).
    announced: Arc<Mutex<bool>>,
}

enum ViewInner {
    /// A terminal: the table and the progress line, redrawn in place until they stop (then
    /// `None`: from there on lines go below them, and nothing redraws them).
    Live(Mutex<Option<Bars>>),
    /// Plain lines.
    Plain(Mutex<Box<dyn Write + Send>>),
}

/// The live view's bars. Every change to them happens under the view's lock, so that none
/// can come after they stopped (a redraw then would draw over the lines below them).
struct Bars {
    multi: MultiProgress,
    table: ProgressBar,
    progress: ProgressBar,
    /// The running step's label, for its outcome line.
    label: String,
}

impl View {
    fn live(stats: Arc<Stats>, steps: u64) -> Self {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stdout());
        let table = multi.add(ProgressBar::new_spinner());
        table.set_style(ProgressStyle::with_template("{msg}").expect("a valid template"));
        let progress = multi.add(ProgressBar::new(steps));
        // The bar counts the steps done; the message names the step running, with its number
        // (`{pos}/{len}` would show the steps done next to the running step's title). Not
        // `{wide_msg}`: a line as wide as the terminal wraps when the terminal echoes `^C`,
        // and the redraw then starts one line off.
        progress.set_style(
            ProgressStyle::with_template(
                "{spinner:.green} [{elapsed_precise}] {bar:30.cyan/blue} {msg}",
            )
            .expect("a valid template"),
        );
        progress.enable_steady_tick(Duration::from_millis(100));
        let bars = Bars {
            multi,
            table,
            progress,
            label: String::new(),
        };
        Self {
            inner: Arc::new(ViewInner::Live(Mutex::new(Some(bars)))),
            stats,
            started: Instant::now(),
            announced: Arc::default(),
        }
    }

    fn plain(stats: Arc<Stats>, out: Box<dyn Write + Send>) -> Self {
        Self {
            inner: Arc::new(ViewInner::Plain(Mutex::new(out))),
            stats,
            started: Instant::now(),
            announced: Arc::default(),
        }
    }

    fn is_live(&self) -> bool {
        matches!(*self.inner, ViewInner::Live(_))
    }

    /// A line of its own: above the live table, or in order with the others. Write errors
    /// (a terminal gone after SIGHUP) are ignored: the demo still cleans up.
    fn line(&self, text: &str) {
        match &*self.inner {
            ViewInner::Live(bars) => match &*lock(bars) {
                Some(bars) => {
                    let _ = bars.multi.println(text);
                }
                None => {
                    let _ = writeln!(std::io::stdout(), "{text}");
                }
            },
            ViewInner::Plain(out) => {
                let _ = writeln!(lock(out), "{text}");
            }
        }
    }

    /// Something the controller or an informer did: kept for the live table, a line when
    /// plain.
    fn action(&self, text: String) {
        let stamped = format!("{:>7.3}s  {text}", self.started.elapsed().as_secs_f64());
        if !self.is_live() {
            self.line(&format!("  {stamped}"));
        }
        let mut recent = lock(&self.stats.recent);
        if recent.len() == RECENT_ACTIONS {
            recent.pop_front();
        }
        recent.push_back(stamped);
    }

    /// The scenario moved to step `n` (from 1) of `total`.
    fn step(&self, n: u64, total: u64, title: &str) {
        let label = step_label(n, total, title);
        match &*self.inner {
            ViewInner::Live(bars) => {
                if let Some(bars) = lock(bars).as_mut() {
                    bars.progress.set_position(n - 1);
                    bars.progress.set_message(label.clone());
                    bars.label = label;
                }
            }
            ViewInner::Plain(_) => self.line(&label),
        }
    }

    /// The running step's outcome.
    fn outcome(&self, text: &str) {
        match &*self.inner {
            ViewInner::Live(bars) => {
                let mut bars = lock(bars);
                if let Some(bars) = bars.as_mut() {
                    bars.progress.inc(1);
                    let _ = bars.multi.println(format!("{}: {text}", bars.label));
                }
            }
            ViewInner::Plain(_) => self.line(&format!("      {text}")),
        }
    }

    /// Redraws the live table (nothing when plain or stopped).
    fn draw(&self, table: String) {
        if let ViewInner::Live(bars) = &*self.inner {
            if let Some(bars) = lock(bars).as_ref() {
                bars.table.set_message(table);
            }
        }
    }

    /// The scenario is done: the bar full, the last table left on screen, no more redraws.
    fn finish(&self) {
        if let Some(bars) = self.take_bars() {
            bars.progress.finish_with_message("done");
            bars.table.finish();
        }
    }

    /// The scenario stopped early (`why`: interrupted, failed): the bars stay as they were,
    /// marked, and nothing redraws them any more, so the lines that follow are not drawn
    /// over.
    fn stop(&self, why: &'static str) {
        if let Some(bars) = self.take_bars() {
            bars.progress
                .abandon_with_message(format!("{} ({why})", bars.label));
            bars.table.abandon();
        }
    }

    /// A signal interrupted the demo: stops the live view and says so, once, before
    /// anything else is printed (the signal's watcher and the scenario's end both call it;
    /// the second waits for the first).
    fn interrupted(&self) {
        let mut announced = lock(&self.announced);
        if !*announced {
            *announced = true;
            self.stop("interrupted");
            self.line("Interrupted: cleaning up (Ctrl-C again to exit at once)");
        }
    }

    fn take_bars(&self) -> Option<Bars> {
        match &*self.inner {
            ViewInner::Live(bars) => lock(bars).take(),
            ViewInner::Plain(_) => None,
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

/// The reconciler: makes each Deployment's ConfigMap what it should be.
struct StatusConfigMaps {
    clientset: Clientset,
    /// The ConfigMaps' cache, with the [`BY_OWNER`] index.
    config_maps: Indexer<ConfigMap>,
    view: View,
}

impl Reconciler<Deployment> for StatusConfigMaps {
    type Error = kclient::Error;

    /// Makes the Deployment's ConfigMap what it should be, counted as busy until it is done
    /// (a failure: until the error policy has told of it).
    async fn reconcile(
        &self,
        d: Arc<Deployment>,
        ctx: &ReconcileContext,
    ) -> kclient::Result<Action> {
        Stats::count(&self.view.stats.busy);
        let result = self.make_config_map(d, ctx).await;
        if result.is_ok() {
            self.view.stats.busy.fetch_sub(1, Ordering::AcqRel);
        }
        result
    }

    /// Retries with the workqueue's per-key backoff (5 ms doubling), at most
    /// [`MAX_RETRIES`] times.
    fn error_policy(&self, error: &kclient::Error, ctx: &ReconcileContext) -> Action {
        let action = if ctx.retries() < MAX_RETRIES {
            Stats::count(&self.view.stats.retries);
            self.view.action(format!(
                "reconcile {} failed ({}): retry {} after the workqueue's backoff",
                ctx.key().name,
                short(error),
                ctx.retries() + 1
            ));
            Action::requeue_rate_limited()
        } else {
            self.view.action(format!(
                "giving up on {} after {MAX_RETRIES} retries: {error}",
                ctx.key().name
            ));
            Action::await_change()
        };
        self.view.stats.busy.fetch_sub(1, Ordering::AcqRel);
        action
    }
}

impl StatusConfigMaps {
    /// Creates or updates the ConfigMap of `d` if it is not what it should be, and tells of
    /// it (an Event, an action line).
    async fn make_config_map(
        &self,
        d: Arc<Deployment>,
        ctx: &ReconcileContext,
    ) -> kclient::Result<Action> {
        let data = desired_data(&d);
        let owned = self
            .config_maps
            .by_index(BY_OWNER, d.uid().unwrap_or_default())?;
        let (namespace, name) = (d.namespace().unwrap_or_default(), d.name_any());
        let client = self.clientset.core_v1().config_maps(namespace);
        let reason = match owned.first() {
            Some(cm) if cm.data.as_ref() == Some(&data) => return Ok(Action::await_change()),
            Some(cm) => {
                let mut updated = ConfigMap::clone(cm);
                updated.data = Some(data.clone());
                client.update(&updated, &UpdateOptions::default()).await?;
                "Updated"
            }
            None => {
                if !self.still_exists(&d).await? {
                    return Ok(Action::await_change());
                }
                let mut cm = ConfigMap::default();
                cm.metadata.name = Some(status_name(name));
                cm.metadata.namespace = Some(namespace.to_owned());
                cm.metadata.labels = Some(BTreeMap::from([(
                    MANAGED_BY.0.to_owned(),
                    MANAGED_BY.1.to_owned(),
                )]));
                cm.data = Some(data.clone());
                set_controller_reference(&*d, &mut cm)?;
                match client.create(&cm, &CreateOptions::default()).await {
                    Ok(_) => "Created",
                    // Made by an earlier attempt whose answer was lost: the cache will show
                    // it, and the reconcile its change queues compares it.
                    Err(e) if e.is_already_exists() => return Ok(Action::await_change()),
                    Err(e) => return Err(e.into()),
                }
            }
        };
        Stats::count(&self.view.stats.writes);
        let message = format!(
            "{} {}: replicas={} image={}",
            reason.to_lowercase(),
            status_name(name),
            data["replicas"],
            data["image"]
        );
        if let Some(recorder) = ctx.recorder() {
            recorder.event(&object_reference(&*d), EventType::Normal, reason, &message);
            Stats::count(&self.view.stats.events_recorded);
        }
        self.view.action(message);
        Ok(Action::await_change())
    }

    /// Whether `d` still exists on the server. The cache may not show yet that it is gone
    /// (its ConfigMap's deletion by the garbage collector can arrive first): read it live
    /// before making it an owner, as client-go's controllers do before adopting.
    async fn still_exists(&self, d: &Deployment) -> kclient::Result<bool> {
        let live = self
            .clientset
            .apps_v1()
            .deployments(d.namespace().unwrap_or_default())
            .get(d.name_any())
            .await;
        match live {
            Ok(live) => Ok(live.uid() == d.uid()),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(e.into()),
        }
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
// The informers, and what they show of themselves
// ---------------------------------------------------------------------------------------

/// A reflector's lists and watches, told in the action log (kclient-cache's
/// `ReflectorMetrics` hook): its first list, every relist, and every watch opened again
/// without a list (after the server closed the previous one).
struct ReflectorNarrator {
    /// "Deployments", "ConfigMaps".
    what: &'static str,
    view: View,
    state: Mutex<NarratorState>,
}

#[derive(Default)]
struct NarratorState {
    lists: u64,
    /// A list came since the last watch opened: the next watch goes on from it.
    listed: bool,
    resource_version: String,
}

impl ReflectorMetrics for ReflectorNarrator {
    fn list(&self, items: usize, elapsed: Duration) {
        let stats = &self.view.stats;
        let first = {
            let mut state = lock(&self.state);
            state.lists += 1;
            state.listed = true;
            state.lists == 1
        };
        let text = if first {
            Stats::count(&stats.lists);
            format!(
                "{} informer: listed {items} objects in {}",
                self.what,
                ms(elapsed)
            )
        } else {
            Stats::count(&stats.relists);
            format!(
                "{} informer: relisted {items} objects{}",
                self.what,
                stats.since_fault()
            )
        };
        self.view.action(text);
    }

    fn watch(&self) {
        let resource_version = {
            let mut state = lock(&self.state);
            if std::mem::take(&mut state.listed) {
                return; // the watch that follows a list
            }
            state.resource_version.clone()
        };
        Stats::count(&self.view.stats.rewatches);
        self.view.action(format!(
            "{} informer: watching again from resourceVersion {resource_version}, no relist{}",
            self.what,
            self.view.stats.since_fault()
        ));
    }

    fn last_resource_version(&self, resource_version: &str) {
        lock(&self.state).resource_version = resource_version.to_owned();
    }
}

/// The informer of `K` from `factory`, made with a [`ReflectorNarrator`] on its reflector
/// (the factory's own settings otherwise), and a handler of the demo's own that counts its
/// notifications and tells its deletions. The controller built on the factory later gets
/// this same informer.
fn narrated_informer<K>(
    factory: &SharedInformerFactory<Clientset>,
    what: &'static str,
    view: &View,
) -> kclient::Result<SharedIndexInformer<K>>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
    Clientset: ListerWatcherFor<K>,
{
    let informer = factory.informer_for::<K>(|client, settings| {
        let lister_watcher =
            client.lister_watcher(settings.namespace.as_deref(), settings.tweak.clone());
        let narrator = ReflectorNarrator {
            what,
            view: view.clone(),
            state: Mutex::default(),
        };
        let reflector = ReflectorOptions::default().metrics(Arc::new(narrator));
        SharedIndexInformer::new(
            lister_watcher,
            settings.informer_options().reflector_options(reflector),
        )
    });
    let counted = |view: &View| {
        let view = view.clone();
        move || Stats::count(&view.stats.notifications)
    };
    let (added, updated, deleted) = (counted(view), counted(view), view.clone());
    informer.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .add_func(move |_: &Arc<K>, _| added())
            .update_func(move |_: &Arc<K>, _: &Arc<K>| updated())
            .delete_func(move |gone: &DeletedObject<K>| {
                Stats::count(&deleted.stats.notifications);
                let Some(obj) = gone.last_known() else { return };
                lock(&deleted.stats.deleted).insert(obj.name_any().to_owned());
                let why = match controller_of(&**obj) {
                    Some(owner) => format!(" with its owner {} (garbage collection)", owner.name),
                    None => String::new(),
                };
                deleted.action(format!("{what} informer: {} deleted{why}", obj.name_any()));
            }),
    )?;
    Ok(informer)
}

/// The two informers the controller reads, with the owner index on the ConfigMaps.
#[derive(Clone)]
struct Informers {
    deployments: SharedIndexInformer<Deployment>,
    config_maps: SharedIndexInformer<ConfigMap>,
}

impl Informers {
    fn new(factory: &SharedInformerFactory<Clientset>, view: &View) -> kclient::Result<Self> {
        let config_maps = narrated_informer::<ConfigMap>(factory, "ConfigMaps", view)?;
        config_maps.add_indexers(Indexers::new().with(BY_OWNER, |cm: &ConfigMap| {
            Ok(controller_of(cm)
                .filter(|o| o.kind == "Deployment")
                .map(|o| o.uid.clone())
                .into_iter()
                .collect())
        }))?;
        Ok(Self {
            deployments: narrated_informer::<Deployment>(factory, "Deployments", view)?,
            config_maps,
        })
    }

    fn synced(&self) -> bool {
        self.deployments.has_synced() && self.config_maps.has_synced()
    }

    fn cached_deployments(&self, namespace: &str) -> Vec<Arc<Deployment>> {
        let mut deployments = self
            .deployments
            .lister()
            .namespaced(namespace)
            .list(&Selector::everything());
        deployments.sort_by(|a, b| a.name_any().cmp(b.name_any()));
        deployments
    }

    /// The ConfigMaps the controller made, as cached.
    fn ours(&self, namespace: &str) -> Vec<Arc<ConfigMap>> {
        let mut ours: Vec<_> = self
            .config_maps
            .lister()
            .namespaced(namespace)
            .list(&Selector::everything())
            .into_iter()
            .filter(|cm| cm.labels().get(MANAGED_BY.0).map(String::as_str) == Some(MANAGED_BY.1))
            .collect();
        ours.sort_by(|a, b| a.name_any().cmp(b.name_any()));
        ours
    }

    fn owned_by(&self, d: &Deployment) -> Vec<Arc<ConfigMap>> {
        self.config_maps
            .get_indexer()
            .by_index(BY_OWNER, d.uid().unwrap_or_default())
            .unwrap_or_default()
    }

    /// Whether the caches show every Deployment with its ConfigMap in sync, and no ConfigMap
    /// of ours without its Deployment.
    fn converged(&self, namespace: &str) -> bool {
        let deployments = self.cached_deployments(namespace);
        self.ours(namespace).len() == deployments.len()
            && deployments.iter().all(|d| {
                let want = desired_data(d);
                self.owned_by(d)
                    .iter()
                    .any(|cm| cm.data.as_ref() == Some(&want))
            })
    }

    /// A field of `name`'s desired ConfigMap data (`replicas`, `image`), as the Deployment
    /// cache has it.
    fn cached(&self, namespace: &str, name: &str, field: &str) -> Option<String> {
        let d = self
            .deployments
            .lister()
            .namespaced(namespace)
            .get(name)
            .ok()?;
        desired_data(&d).remove(field)
    }

    /// The table: the cached Deployments with their ConfigMaps, the ConfigMaps whose owner is
    /// gone, the latest actions; padded to a fixed height when `live` (so that the live view
    /// does not jump) and the STATE column coloured when `colour`.
    fn table(
        &self,
        namespace: &str,
        header: &str,
        stats: &Stats,
        live: bool,
        colour: bool,
    ) -> String {
        let mut rows = vec![(
            [
                "DEPLOYMENT".to_owned(),
                "REPLICAS".to_owned(),
                "IMAGE".to_owned(),
                "CONFIGMAP".to_owned(),
            ],
            None,
        )];
        let deployments = self.cached_deployments(namespace);
        for d in &deployments {
            let want = desired_data(d);
            let owned = self.owned_by(d);
            let (config_map, state) = match owned.first() {
                Some(cm) if cm.data.as_ref() == Some(&want) => {
                    (cm.name_any().to_owned(), State::InSync)
                }
                Some(cm) => (cm.name_any().to_owned(), State::OutOfDate),
                None => ("-".to_owned(), State::Missing),
            };
            let cells = [
                d.name_any().to_owned(),
                want["replicas"].clone(),
                want["image"].clone(),
                config_map,
            ];
            rows.push((cells, Some(state)));
        }
        for cm in self.ours(namespace) {
            let owner = controller_of(&*cm).map(|o| o.uid.as_str());
            if !deployments.iter().any(|d| d.uid() == owner) {
                let cells = [
                    "(deleted)".to_owned(),
                    "-".to_owned(),
                    "-".to_owned(),
                    cm.name_any().to_owned(),
                ];
                rows.push((cells, Some(State::OwnerGone)));
            }
        }
        let mut widths = [0usize; 4];
        for (cells, _) in &rows {
            for (w, cell) in widths.iter_mut().zip(cells) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = format!("{header}\n");
        for (cells, state) in &rows {
            for (cell, w) in cells.iter().zip(widths) {
                out.push_str(&format!("{cell:w$}  "));
            }
            out.push_str(&match state {
                Some(state) => state.cell(colour),
                None => "STATE".to_owned(),
            });
            out.push('\n');
        }
        out.push_str("latest actions:");
        let recent = lock(&stats.recent);
        for action in recent.iter() {
            out.push_str("\n  ");
            out.push_str(action);
        }
        if live {
            for _ in recent.len()..RECENT_ACTIONS {
                out.push('\n');
            }
        }
        out
    }
}

/// A row's STATE.
#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    InSync,
    OutOfDate,
    Missing,
    OwnerGone,
}

impl State {
    /// The cell, in the state's colour (ANSI: green, yellow, red, magenta) when `colour`.
    fn cell(self, colour: bool) -> String {
        let (text, code) = match self {
            State::InSync => ("in sync", 32),
            State::OutOfDate => ("out of date", 33),
            State::Missing => ("missing", 31),
            State::OwnerGone => ("owner deleted", 35),
        };
        if colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
}

// ---------------------------------------------------------------------------------------
// The clients
// ---------------------------------------------------------------------------------------

/// Counts a client's requests and the time they waited for its rate limiter
/// (kclient-rest's `RequestMetrics` hook).
struct RequestCounter(Arc<Stats>);

impl RequestMetrics for RequestCounter {
    fn request_latency(&self, _verb: &str, _url_template: &str, _latency: Duration) {
        Stats::count(&self.0.requests);
    }

    fn rate_limiter_latency(&self, _verb: &str, _url_template: &str, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.0.throttled_micros.fetch_add(micros, Ordering::Relaxed);
    }
}

/// A client of the demo's: `base`'s server and credentials, [`QPS`] and [`BURST`], its own
/// User-Agent, its requests counted.
fn client(base: &Config, agent: &str, stats: &Arc<Stats>) -> kclient::Result<Clientset> {
    let mut config = base.clone();
    (config.qps, config.burst) = (Some(QPS), BURST);
    config.user_agent = Some(agent.to_owned());
    config.metrics = Some(Arc::new(RequestCounter(Arc::clone(stats))));
    Ok(Clientset::new(config)?)
}

/// `GET http://{address}{path}` with kclient's own REST client (`kubectl get --raw`): the
/// Manager's probes and metrics.
async fn get_raw(address: SocketAddr, path: &str) -> kclient::Result<String> {
    let client = RestClient::new(Config::new(format!("http://{address}")))?;
    let body = client.get().abs_path(path).bytes().await?;
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// The value of the series of `name` carrying every label of `labels`, in a Prometheus text
/// exposition.
fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.rsplit_once(' '))
        .find(|(series, _)| {
            series
                .strip_prefix(name)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('{'))
                && labels
                    .iter()
                    .all(|(k, v)| series.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|(_, value)| value.parse().ok())
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
    /// Reconciles, from `/metrics` (`controller_runtime_reconcile_total`): all, and failed.
    reconciles: u64,
    reconcile_errors: u64,
    /// Keys requeued with backoff, from `/metrics` (`workqueue_retries_total`).
    retries: u64,
    /// ConfigMaps created or updated.
    writes: u64,
    /// Kubernetes Events recorded.
    events_recorded: u64,
    /// Notifications to the demo's own handlers on the informers.
    notifications: u64,
    /// The informers' lists, relists and watches opened again without a list.
    lists: u64,
    relists: u64,
    rewatches: u64,
    /// Requests sent by the demo's clients, and their total wait for the rate limiter.
    requests: u64,
    throttled: Duration,
    /// Deployments and ConfigMaps in the caches at the end.
    cached_deployments: usize,
    cached_config_maps: usize,
    /// From the Manager's start to every cache synced.
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

/// Milliseconds below a second, seconds above.
fn elapsed(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        ms(d)
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Summary")?;
        writeln!(
            f,
            "  reconciles          {} ({} failed), {} retries with backoff (from /metrics)",
            self.reconciles, self.reconcile_errors, self.retries
        )?;
        writeln!(
            f,
            "  writes              {} ConfigMaps created or updated, {} Events recorded",
            self.writes, self.events_recorded
        )?;
        writeln!(
            f,
            "  informers           {} lists, {} relists, {} watches opened again; {} notifications",
            self.lists, self.relists, self.rewatches, self.notifications
        )?;
        writeln!(
            f,
            "  requests            {}, {} waiting for the client-side rate limit ({QPS} qps, burst {BURST})",
            self.requests,
            ms(self.throttled)
        )?;
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

impl Change {
    fn describe(&self) -> String {
        match self {
            Change::Create(name, replicas, image) => {
                format!("create {name} ({replicas} × {image})")
            }
            Change::Scale(name, replicas) => format!("scale {name} to {replicas}"),
            Change::Image(name, image) => format!("set {name}'s image to {image}"),
            Change::Delete(name) => format!("delete {name} (its ConfigMap goes with it)"),
        }
    }

    /// Makes the change, as a user would.
    async fn apply(&self, clientset: &Clientset, namespace: &str) -> Result<(), BoxError> {
        let deployments = clientset.apps_v1().deployments(namespace);
        match self {
            Change::Create(name, replicas, image) => {
                let d = deployment(name, *replicas, image)?;
                deployments.create(&d, &CreateOptions::default()).await?;
            }
            Change::Scale(name, replicas) => {
                deployments.scale_to(name, *replicas).await?;
            }
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
        Ok(())
    }

    /// Whether the Deployment cache shows the change (for a deletion: and the demo's
    /// handlers were told of the Deployment's and its ConfigMap's).
    fn seen(&self, informers: &Informers, namespace: &str, stats: &Stats) -> bool {
        match self {
            Change::Create(name, ..) => informers.cached(namespace, name, "replicas").is_some(),
            Change::Scale(name, replicas) => {
                informers.cached(namespace, name, "replicas") == Some(replicas.to_string())
            }
            Change::Image(name, image) => {
                informers.cached(namespace, name, "image").as_deref() == Some(*image)
            }
            Change::Delete(name) => {
                let deleted = lock(&stats.deleted);
                informers.cached(namespace, name, "replicas").is_none()
                    && deleted.contains(*name)
                    && deleted.contains(&status_name(name))
            }
        }
    }
}

/// A fault to inject before a change (kclient-fake only).
#[derive(Clone, Copy)]
enum Fault {
    DroppedWatches,
    Compaction,
    ServiceUnavailableStorm,
}

/// How many of the controller's ConfigMap updates the 503 storm fails.
const STORM: usize = 6;

impl Fault {
    /// Its name in the summary.
    fn name(self) -> &'static str {
        match self {
            Fault::DroppedWatches => "dropped watches",
            Fault::Compaction => "410 Gone (compaction)",
            Fault::ServiceUnavailableStorm => "503 storm",
        }
    }

    /// What it does, in the step's title.
    fn describe(self) -> String {
        match self {
            Fault::DroppedWatches => "the server drops every watch".to_owned(),
            Fault::Compaction => "the history is compacted (watches end with 410 Gone)".to_owned(),
            Fault::ServiceUnavailableStorm => {
                format!("{STORM} × 503 on the controller's ConfigMap updates")
            }
        }
    }

    /// How the informers' lines refer to it ("… after the 410").
    fn event(self) -> &'static str {
        match self {
            Fault::DroppedWatches => "the drop",
            Fault::Compaction => "the 410",
            Fault::ServiceUnavailableStorm => "the storm began",
        }
    }

    /// Why recovering took what it took, after the step's outcome.
    fn explain(self) -> &'static str {
        match self {
            Fault::DroppedWatches => {
                "the informers watched again from their last resourceVersion, missing nothing"
            }
            Fault::Compaction => {
                "after a 410 the reflector lists anew once its backoff has passed \
                 (800 ms plus up to 100% jitter: 0.8-1.6 s the first time)"
            }
            Fault::ServiceUnavailableStorm => {
                "the reconciler's error policy requeued the key with the workqueue's \
                 per-key backoff (5 ms doubling) until the storm was over"
            }
        }
    }

    /// Injects it into `server`; the storm's reactor, to see when it is used up.
    fn inject(self, server: &FakeApiServer, namespace: &str) -> Option<ReactorHandle> {
        let faults = server.faults();
        match self {
            Fault::DroppedWatches => {
                faults.drop_watches();
                None
            }
            // Open watches get an ERROR event with 410 and end; the reflector relists.
            Fault::Compaction => {
                faults.compact_history();
                None
            }
            // Only the controller's ConfigMap updates fail (a targeted reactor): the
            // scenario's own change and the informers' requests go through.
            Fault::ServiceUnavailableStorm => {
                let updates = ActionFilter::new("update", "configmaps")
                    .namespace(namespace)
                    .user_agent(CONTROLLER_AGENT);
                let failure = Failure::status(503).message("the demo's 503 storm");
                let reactor = Reactor::new(updates, Reaction::Fail(failure)).times(STORM);
                Some(server.reactors().prepend(reactor))
            }
        }
    }
}

/// The scripted scenario after the start, the whole of it.
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

/// Everything the scenario plays with.
struct Scene<'a> {
    namespace: &'a str,
    /// The "user" changing the Deployments.
    user: Clientset,
    informers: &'a Informers,
    identity: &'a str,
    /// Where `/readyz` is served.
    probes: SocketAddr,
    fake: Option<&'a FakeApiServer>,
    view: &'a View,
    interrupted: &'a CancellationToken,
    /// When the Manager started.
    started: Instant,
}

/// What [`Scene::play`] measured.
struct Played {
    time_to_sync: Duration,
    recoveries: Vec<(String, Duration)>,
    skipped_faults: usize,
}

impl Scene<'_> {
    /// Plays the start and [`SCRIPT`], each step awaited until the controller caught up.
    async fn play(&self) -> Result<Played, BoxError> {
        let total = SCRIPT.len() as u64 + 1;
        let stats = &self.view.stats;
        self.view
            .step(1, total, "informers list, leader election, cache sync");
        let synced_after = OnceLock::new();
        self.wait_until(|| {
            if self.informers.synced() {
                let _ = synced_after.set(self.started.elapsed());
            }
            self.informers.synced()
                && *lock(&stats.leader) == self.identity
                && self.informers.converged(self.namespace)
                && Stats::get(&stats.busy) == 0
        })
        .await?;
        let time_to_sync = synced_after.get().copied().unwrap_or_default();
        let ready = get_raw(self.probes, "/readyz").await?;
        self.view.outcome(&format!(
            "caches synced in {} (/readyz: {}), leading; ConfigMaps made for the seeded Deployments",
            ms(time_to_sync),
            ready.trim()
        ));

        let mut recoveries = Vec::new();
        let mut skipped_faults = 0;
        for (i, (fault, change)) in SCRIPT.iter().enumerate() {
            self.pause().await?;
            let title = match fault {
                Some(fault) => format!("fault: {}; then {}", fault.describe(), change.describe()),
                None => change.describe(),
            };
            self.view.step(i as u64 + 2, total, &title);
            let injected = Instant::now();
            let (fault, storm) = match (fault, self.fake) {
                (Some(fault), Some(server)) => {
                    *lock(&stats.last_fault) = Some((fault.event(), injected));
                    (Some(*fault), fault.inject(server, self.namespace))
                }
                (Some(_), None) => {
                    skipped_faults += 1;
                    self.view
                        .line("      (the fault is skipped: fault injection needs kclient-fake)");
                    (None, None)
                }
                (None, _) => (None, None),
            };
            tokio::select! {
                biased;
                () = self.interrupted.cancelled() => return Err("interrupted".into()),
                applied = change.apply(&self.user, self.namespace) => applied?,
            }
            let storm_over = || storm.as_ref().is_none_or(|s| !s.is_active());
            self.wait_until(|| {
                change.seen(self.informers, self.namespace, stats)
                    && self.informers.converged(self.namespace)
                    && Stats::get(&stats.busy) == 0
                    && storm_over()
            })
            .await?;
            let took = injected.elapsed();
            *lock(&stats.last_fault) = None;
            match fault {
                Some(fault) => {
                    self.view.outcome(&format!(
                        "recovered and in sync after {}: {}",
                        ms(took),
                        fault.explain()
                    ));
                    recoveries.push((fault.name().to_owned(), took));
                }
                None => self.view.outcome(&format!("in sync after {}", ms(took))),
            }
        }
        Ok(Played {
            time_to_sync,
            recoveries,
            skipped_faults,
        })
    }

    /// On a terminal, a moment between steps for the eye (none when plain); an error once
    /// interrupted.
    async fn pause(&self) -> Result<(), BoxError> {
        if self.view.is_live() {
            tokio::select! {
                () = self.interrupted.cancelled() => {}
                () = tokio::time::sleep(Duration::from_millis(1200)) => {}
            }
        }
        if self.interrupted.is_cancelled() {
            return Err("interrupted".into());
        }
        Ok(())
    }

    /// Polls `condition` every 10 ms until it holds ([`STEP_TIMEOUT`] at most, or until
    /// interrupted).
    async fn wait_until(&self, mut condition: impl FnMut() -> bool) -> kclient::Result<()> {
        poll_until_timeout(
            self.interrupted,
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
}

/// The Manager running the controller: leader election on the Lease [`CONTROLLER`] in
/// `namespace`, probes and metrics on loopback ports of the system's choosing, Events
/// through `broadcaster`.
fn manager(
    factory: &SharedInformerFactory<Clientset>,
    clientset: &Clientset,
    namespace: &str,
    identity: &str,
    broadcaster: &EventBroadcaster,
    view: &View,
) -> Result<Manager, BoxError> {
    let lease = LeaseLock::from_clientset(clientset, namespace, CONTROLLER, identity.to_owned());
    let loopback: SocketAddr = "127.0.0.1:0".parse()?;
    let manager = Manager::builder(factory)
        .leader_election(LeaderElectionConfig {
            release_on_cancel: true,
            name: CONTROLLER.into(),
            ..LeaderElectionConfig::new(lease, LeaderCallbacks::new())
        })
        .on_new_leader({
            let (view, identity) = (view.clone(), identity.to_owned());
            move |leader| {
                *lock(&view.stats.leader) = leader.to_owned();
                if leader == identity {
                    view.action(format!("leader election: {leader} (this process) leads"));
                } else if !leader.is_empty() {
                    view.action(format!("leader election: {leader} leads"));
                }
            }
        })
        .event_broadcaster(broadcaster.clone())
        .health_probe_bind_address(loopback)
        .metrics_bind_address(loopback)
        .cache_sync_timeout(STEP_TIMEOUT)
        .build()?;
    Ok(manager)
}

/// Seeds, starts the controller under its Manager, plays the scenario, stops, and returns what
/// it measured. `fake` is the server when the demo runs against kclient-fake (faults need it);
/// `interrupted` ends the scenario early (a signal).
async fn run(
    config: Config,
    namespace: &str,
    fake: Option<&FakeApiServer>,
    view: View,
    interrupted: CancellationToken,
) -> Result<Summary, BoxError> {
    let started = Instant::now();
    let stats = Arc::clone(&view.stats);
    let user = client(&config, SCRIPT_AGENT, &stats)?;
    let controller_client = client(&config, CONTROLLER_AGENT, &stats)?;

    // Seed: two Deployments before the controller starts (they are in its first list).
    let deployments = user.apps_v1().deployments(namespace);
    for (name, replicas, image) in [("web", 2, "nginx:1.27"), ("api", 1, "nginx:1.27")] {
        let d = deployment(name, replicas, image)?;
        deployments.create(&d, &CreateOptions::default()).await?;
    }
    view.line(&format!("Seeded {namespace} with Deployments web and api"));

    // The controller: the informers first (with the demo's hooks), then the Controller on the
    // same factory, under a Manager.
    let factory = SharedInformerFactory::builder(controller_client.clone())
        .namespace(namespace)
        .build();
    let informers = Informers::new(&factory, &view)?;
    let broadcaster = new_broadcaster();
    broadcaster.start_recording_to_sink(controller_client.core_v1().events(""))?;
    let identity = format!("demo-{}", std::process::id());
    let mut manager = manager(
        &factory,
        &controller_client,
        namespace,
        &identity,
        &broadcaster,
        &view,
    )?;
    let reconciler = StatusConfigMaps {
        clientset: controller_client,
        config_maps: informers.config_maps.get_indexer().clone(),
        view: view.clone(),
    };
    let controller = Controller::<Deployment, _>::new(CONTROLLER, &factory)
        .owns::<ConfigMap>()
        .with_config(controller::ControllerConfig {
            workers: 2,
            graceful_shutdown_timeout: Duration::from_secs(10),
            ..Default::default()
        });
    manager.add(controller, reconciler);
    let (probes, metrics) = match (manager.health_probe_address(), manager.metrics_address()) {
        (Some(probes), Some(metrics)) => (probes, metrics),
        _ => return Err("the Manager serves no probes or metrics".into()),
    };
    view.line(&format!(
        "Controller {CONTROLLER}: Deployments owning ConfigMaps, 2 workers, in a Manager \
         (leader election on Lease {CONTROLLER}, http://{probes}/readyz, http://{metrics}/metrics)"
    ));
    let stop = interrupted.child_token();
    let manager_started = Instant::now();
    let running = tokio::spawn(manager.run(stop.clone()));

    // The live table, redrawn ten times a second.
    let header = format!(
        "kclient demo · namespace {namespace} · {} · {identity}",
        match fake {
            Some(server) => format!("kclient-fake {}", server.url()),
            None => format!("cluster {}", config.host),
        }
    );
    let colour = view.is_live() && std::env::var_os("NO_COLOR").is_none();
    let drawer = tokio::spawn({
        let (view, header) = (view.clone(), header.clone());
        let informers = informers.clone();
        let namespace = namespace.to_owned();
        async move {
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            loop {
                tick.tick().await;
                view.draw(informers.table(&namespace, &header, &view.stats, true, colour));
            }
        }
    });

    let scene = Scene {
        namespace,
        user,
        informers: &informers,
        identity: &identity,
        probes,
        fake,
        view: &view,
        interrupted: &interrupted,
        started: manager_started,
    };
    let played = scene.play().await;
    let scraped = match &played {
        Ok(_) => Some(get_raw(metrics, "/metrics").await),
        Err(_) => None,
    };

    // Stop: the Manager lets the reconciles in flight finish, releases the Lease, stops the
    // informers; then the Events are flushed.
    if played.is_ok() {
        view.line("Done: stopping the Manager (reconciles in flight finish, the Lease is released, the informers stop)");
    }
    stop.cancel();
    let stopped = running.await?;
    drawer.abort();
    broadcaster
        .shutdown_with_timeout(Duration::from_secs(2))
        .await;
    let played = played?;
    stopped?;
    let text = scraped.transpose()?.unwrap_or_default();
    let reconciles = |result| {
        metric(
            &text,
            "controller_runtime_reconcile_total",
            &[("controller", CONTROLLER), ("result", result)],
        )
        .unwrap_or_default() as u64
    };
    let summary = Summary {
        reconciles: ["success", "error", "requeue", "requeue_after"]
            .into_iter()
            .map(reconciles)
            .sum(),
        reconcile_errors: reconciles("error"),
        retries: metric(&text, "workqueue_retries_total", &[("name", CONTROLLER)])
            .unwrap_or_default() as u64,
        writes: Stats::get(&stats.writes),
        events_recorded: Stats::get(&stats.events_recorded),
        notifications: Stats::get(&stats.notifications),
        lists: Stats::get(&stats.lists),
        relists: Stats::get(&stats.relists),
        rewatches: Stats::get(&stats.rewatches),
        requests: Stats::get(&stats.requests),
        throttled: Duration::from_micros(Stats::get(&stats.throttled_micros)),
        cached_deployments: informers.deployments.get_store().len(),
        cached_config_maps: informers.config_maps.get_store().len(),
        time_to_sync: played.time_to_sync,
        recoveries: played.recoveries,
        skipped_faults: played.skipped_faults,
        elapsed: started.elapsed(),
    };
    let table = informers.table(namespace, "final state", &stats, view.is_live(), colour);
    if view.is_live() {
        view.draw(table);
    } else {
        view.line(&table);
    }
    view.finish();
    Ok(summary)
}

// ---------------------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------------------

/// How the demo ended, when it did not fail.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Exit {
    /// The scenario ran to its end.
    Done,
    /// `--help`.
    Help,
    /// A wrong command line.
    Usage,
    /// A signal stopped it; it cleaned up.
    Interrupted,
}

impl Exit {
    fn code(self) -> u8 {
        match self {
            Exit::Done | Exit::Help => 0,
            Exit::Usage => 2,
            Exit::Interrupted => INTERRUPTED,
        }
    }
}

#[tokio::main]
async fn main() -> Result<std::process::ExitCode, ErrorReport> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kubeconfig_env = std::env::var_os("KUBECONFIG").is_some_and(|v| !v.is_empty());
    let exit = demo(&args, kubeconfig_env, interrupted_by_signals()?).await?;
    Ok(exit.code().into())
}

/// A token that fires on the first SIGTERM, Ctrl-C (kclient-controller's
/// `shutdown_on_signal`, what a controller's `main` uses) or SIGHUP (the terminal closed).
fn interrupted_by_signals() -> std::io::Result<CancellationToken> {
    let interrupted = shutdown_on_signal()?;
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut hangup = signal(SignalKind::hangup())?;
        let fired = interrupted.clone();
        tokio::spawn(async move {
            if hangup.recv().await.is_some() {
                fired.cancel();
            }
        });
    }
    Ok(interrupted)
}

/// The demo with this command line, until it ends or `interrupted` fires.
async fn demo(
    args: &[String],
    kubeconfig_env: bool,
    interrupted: CancellationToken,
) -> Result<Exit, ErrorReport> {
    let options = match parse_args(args, kubeconfig_env) {
        Ok(Command::Run(options)) => options,
        Ok(Command::Help) => {
            println!("{USAGE}");
            return Ok(Exit::Help);
        }
        Err(message) => {
            eprintln!("{message}\n{USAGE}");
            return Ok(Exit::Usage);
        }
    };
    let stats = Arc::new(Stats::default());
    let view = if options.plain || !std::io::stdout().is_terminal() {
        View::plain(Arc::clone(&stats), Box::new(std::io::stdout()))
    } else {
        View::live(Arc::clone(&stats), SCRIPT.len() as u64 + 1)
    };
    view.line(WHAT);

    // Interrupted: the live view stops first, then the scenario ends and cleans up; a second
    // Ctrl-C exits at once.
    tokio::spawn({
        let (interrupted, view) = (interrupted.clone(), view.clone());
        async move {
            interrupted.cancelled().await;
            view.interrupted();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(INTERRUPTED.into());
            }
        }
    });

    let result = connect_and_run(&options.target, &view, &interrupted).await;
    match result {
        Ok(summary) => {
            view.line(&summary.to_string());
            Ok(Exit::Done)
        }
        Err(_) if interrupted.is_cancelled() => {
            view.interrupted();
            view.line("Interrupted.");
            Ok(Exit::Interrupted)
        }
        Err(error) => {
            view.stop("failed");
            Err(ErrorReport::new(error))
        }
    }
}

/// Reaches the target (starting kclient-fake if it is the one) and runs the demo in a
/// namespace of its own.
async fn connect_and_run(
    target: &Target,
    view: &View,
    interrupted: &CancellationToken,
) -> Result<Summary, BoxError> {
    let (fake, config) = match target {
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
            let options = KubeconfigOptions {
                path: Some(path.clone()),
                ..Default::default()
            };
            let config = Config::from_kubeconfig(&options)?;
            view.line(&format!(
                "Using the cluster at {} (from {})",
                config.host,
                path.display()
            ));
            (None, config)
        }
        Target::Environment => {
            let config = Config::infer()?;
            view.line(&format!(
                "Using the cluster at {} (from KUBECONFIG)",
                config.host
            ));
            (None, config)
        }
    };
    let namespace = namespace_name();
    in_namespace(
        config,
        &namespace,
        fake.as_ref(),
        view.clone(),
        interrupted.clone(),
    )
    .await
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
    let namespaces = client(&config, SCRIPT_AGENT, &view.stats)?
        .core_v1()
        .namespaces();
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": namespace}}))?;
    namespaces.create(&ns, &CreateOptions::default()).await?;
    view.line(&format!("Created namespace {namespace}"));
    let result = run(config, namespace, fake, view.clone(), interrupted.clone()).await;
    if interrupted.is_cancelled() {
        view.interrupted();
    }
    match namespaces
        .delete(namespace, &DeleteOptions::background())
        .await
    {
        Ok(_) => view.line(&format!("Deleted namespace {namespace}")),
        Err(e) => view.line(&format!(
            "Could not delete namespace {namespace}: {}",
            ErrorReport::new(e)
        )),
    }
    result
}

#[cfg(test)]
mod tests {
    use kclient::core::GroupResource;

    use super::*;

    /// A `Write` into a buffer the test keeps.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            lock(&self.0).extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn arguments() {
        assert_eq!(
            parse_args(&args(&[]), false),
            Ok(Command::Run(Options {
                target: Target::Fake,
                plain: false
            }))
        );
        assert_eq!(
            parse_args(&args(&["--plain"]), true),
            Ok(Command::Run(Options {
                target: Target::Environment,
                plain: true
            }))
        );
        let target = |a: &[&str]| match parse_args(&args(a), true) {
            Ok(Command::Run(options)) => Some(options.target),
            _ => None,
        };
        assert_eq!(
            target(&["--kubeconfig", "k.yaml", "--plain"]),
            Some(Target::Kubeconfig("k.yaml".into()))
        );
        assert_eq!(
            target(&["--kubeconfig=k.yaml"]),
            Some(Target::Kubeconfig("k.yaml".into()))
        );
        assert_eq!(parse_args(&args(&["--help"]), false), Ok(Command::Help));
        assert_eq!(
            parse_args(&args(&["--kubeconfig"]), false),
            Err("--kubeconfig needs a path".to_owned())
        );
        assert_eq!(
            parse_args(&args(&["--bogus"]), false),
            Err("unexpected argument \"--bogus\"".to_owned())
        );
        assert_eq!(
            [Exit::Done, Exit::Help, Exit::Usage, Exit::Interrupted].map(Exit::code),
            [0, 0, 2, 130]
        );
    }

    /// The live progress line names the step running with the same label as the plain
    /// lines, and its bar counts the steps done; once stopped, nothing changes it.
    #[test]
    fn the_live_progress_line_shows_the_running_step() {
        let view = View::live(Arc::new(Stats::default()), 8);
        let progress = match &*view.inner {
            ViewInner::Live(bars) => lock(bars).as_ref().map(|b| b.progress.clone()),
            ViewInner::Plain(_) => None,
        }
        .expect("live bars");
        progress.set_draw_target(ProgressDrawTarget::hidden());
        view.step(6, 8, "scale api to 3");
        assert_eq!(progress.message(), step_label(6, 8, "scale api to 3"));
        assert_eq!(progress.message(), "[6/8] scale api to 3");
        assert_eq!(progress.position(), 5);
        view.outcome("in sync");
        assert_eq!(progress.position(), 6);
        view.stop("interrupted");
        assert_eq!(progress.message(), "[6/8] scale api to 3 (interrupted)");
        assert_eq!(
            progress.position(),
            6,
            "an interruption does not fill the bar"
        );
        view.step(7, 8, "scale web to 2");
        view.finish();
        assert_eq!(progress.message(), "[6/8] scale api to 3 (interrupted)");
        assert_eq!(progress.position(), 6);
    }

    #[test]
    fn the_state_is_coloured_on_a_terminal_only() {
        assert_eq!(State::InSync.cell(false), "in sync");
        assert_eq!(State::InSync.cell(true), "\x1b[32min sync\x1b[0m");
        assert_eq!(State::OutOfDate.cell(true), "\x1b[33mout of date\x1b[0m");
        assert_eq!(State::Missing.cell(true), "\x1b[31mmissing\x1b[0m");
        assert_eq!(State::OwnerGone.cell(false), "owner deleted");
    }

    #[test]
    fn metrics_are_read_from_the_text_exposition() {
        let text = "# TYPE controller_runtime_reconcile counter\n\
            controller_runtime_reconcile_total{controller=\"kclient-demo\",result=\"success\"} 22\n\
            controller_runtime_reconcile_total{controller=\"kclient-demo\",result=\"error\"} 6\n\
            controller_runtime_reconcile_errors_total{controller=\"kclient-demo\"} 6\n\
            workqueue_retries_total{name=\"kclient-demo\",controller=\"kclient-demo\"} 7\n";
        let reconciles = |result| {
            metric(
                text,
                "controller_runtime_reconcile_total",
                &[("controller", CONTROLLER), ("result", result)],
            )
        };
        assert_eq!(reconciles("success"), Some(22.0));
        assert_eq!(reconciles("error"), Some(6.0));
        assert_eq!(reconciles("requeue"), None);
        assert_eq!(
            metric(text, "workqueue_retries_total", &[("name", CONTROLLER)]),
            Some(7.0)
        );
        assert_eq!(metric(text, "workqueue_retries", &[]), None);
    }

    /// The whole demo against kclient-fake in plain mode: the story it tells (what the
    /// controller does, each step numbered, how the informers react to each fault, the
    /// retries in the storm, the ConfigMap going with its Deployment), the summary it prints
    /// and what it measured, and the namespace is gone at the end.
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
        let text = String::from_utf8(lock(&out.0).clone())?;
        println!("{text}");
        let lines: Vec<&str> = text.lines().collect();
        // The lines of step `n`, from its label to the next step's.
        let step = |n: usize| -> Vec<&str> {
            let label = format!("[{n}/{}] ", SCRIPT.len() + 1);
            let next = format!("[{}/{}] ", n + 1, SCRIPT.len() + 1);
            lines
                .iter()
                .skip_while(|l| !l.starts_with(&label))
                .take_while(|l| !l.starts_with(&next) && !l.starts_with("Done"))
                .copied()
                .collect()
        };
        let count = |lines: &[&str], what: &str| lines.iter().filter(|l| l.contains(what)).count();

        // Every step ran, in order, and converged; the three faults were recovered from.
        for n in 1..=SCRIPT.len() + 1 {
            let lines = step(n);
            assert!(!lines.is_empty(), "step {n} in\n{text}");
            assert!(
                lines
                    .iter()
                    .any(|l| l.trim_start().starts_with("in sync after")
                        || l.trim_start().starts_with("recovered and in sync after")
                        || l.trim_start().starts_with("caches synced in")),
                "step {n} converged:\n{}",
                lines.join("\n")
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

        // Step 1: both informers listed (before its label is printed, or after), this process
        // leads, the seeded ConfigMaps made.
        let next = format!("[2/{}] ", SCRIPT.len() + 1);
        let start: Vec<&str> = lines
            .iter()
            .take_while(|l| !l.starts_with(&next))
            .copied()
            .collect();
        assert_eq!(count(&start, "informer: listed"), 2, "{start:#?}");
        assert_eq!(count(&start, "(this process) leads"), 1, "{start:#?}");
        assert_eq!(count(&start, "created "), 2, "{start:#?}");
        // Dropped watches: both informers watch again, without a relist.
        let dropped = step(5);
        assert_eq!(
            count(&dropped, "watching again from resourceVersion"),
            2,
            "{dropped:#?}"
        );
        assert_eq!(count(&dropped, "relisted"), 0, "{dropped:#?}");
        // The 410: both informers relist, after the reflector's backoff.
        let compacted = step(6);
        assert_eq!(count(&compacted, "relisted "), 2, "{compacted:#?}");
        assert_eq!(count(&compacted, "s after the 410"), 2, "{compacted:#?}");
        // The storm: exactly its six 503s, each retried, then the update went through.
        let storm = step(7);
        assert_eq!(
            count(&storm, "failed (503 ServiceUnavailable): retry"),
            STORM,
            "{storm:#?}"
        );
        assert_eq!(count(&storm, "updated web-status"), 1, "{storm:#?}");
        // The deletion: the Deployment and its ConfigMap leave the caches.
        let deleted = step(8);
        assert_eq!(
            count(&deleted, "Deployments informer: api deleted"),
            1,
            "{deleted:#?}"
        );
        assert_eq!(
            count(
                &deleted,
                "ConfigMaps informer: api-status deleted with its owner api"
            ),
            1,
            "{deleted:#?}"
        );

        // The counters: from /metrics, and the demo's own.
        assert!(summary.reconcile_errors >= STORM as u64, "{summary:?}");
        assert_eq!(summary.reconcile_errors, Stats::get(&stats.retries));
        assert_eq!(summary.retries, summary.reconcile_errors, "{summary:?}");
        // Made: 3 ConfigMaps (web, api, worker); updated: web twice, api twice, worker once.
        assert!(summary.writes >= 8, "{summary:?}");
        assert!(summary.reconciles >= summary.writes, "{summary:?}");
        assert_eq!(summary.events_recorded, summary.writes);
        assert!(summary.notifications >= summary.writes, "{summary:?}");
        assert_eq!((summary.lists, summary.relists), (2, 2), "{summary:?}");
        assert_eq!(summary.rewatches, 2, "{summary:?}");
        assert!(summary.requests > 0, "{summary:?}");
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
            &format!(
                "  reconciles          {} ({} failed), {} retries with backoff (from /metrics)",
                summary.reconciles, summary.reconcile_errors, summary.retries
            ),
            "  cache size          4 objects (2 Deployments, 2 ConfigMaps)",
            "  recovery after dropped watches",
            "  recovery after 410 Gone (compaction)",
            "  recovery after 503 storm",
        ] {
            assert!(printed.contains(line), "{line:?} in\n{printed}");
        }
        assert!(text.contains("final state\nDEPLOYMENT  REPLICAS  IMAGE         CONFIGMAP      STATE\nweb         2         nginx:1.27    web-status     in sync\nworker      2         busybox:1.36  worker-status  in sync\n"), "{text}");
        assert!(text.contains(&format!("Deleted namespace {namespace}")));

        // The server: the namespace is gone.
        let namespaces = GroupResource::new("", "namespaces");
        assert!(server.get_value(&namespaces, "", &namespace).is_none());
        Ok(())
    }

    /// A kubeconfig that is not there: one sentence naming it.
    #[tokio::test]
    async fn a_missing_kubeconfig_is_reported_as_a_sentence() {
        let report = demo(
            &args(&["--plain", "--kubeconfig", "/nope/kubeconfig"]),
            false,
            CancellationToken::new(),
        )
        .await
        .expect_err("no kubeconfig");
        assert_eq!(
            report.to_string(),
            "kubeconfig /nope/kubeconfig does not exist"
        );
    }

    /// A server that is not there: the error and its causes, one per line, "connection
    /// refused" among them.
    #[tokio::test]
    async fn a_dead_server_is_reported_with_its_causes() -> Result<(), BoxError> {
        let server = FakeApiServer::builder().start().await?;
        let kubeconfig = std::env::temp_dir().join(format!(
            "kclient-demo-dead-server-{}.yaml",
            std::process::id()
        ));
        server.write_kubeconfig(&kubeconfig)?;
        server.shutdown().await;
        let report = demo(
            &args(&["--plain", "--kubeconfig", &kubeconfig.to_string_lossy()]),
            false,
            CancellationToken::new(),
        )
        .await
        .expect_err("the server is gone");
        let _ = std::fs::remove_file(&kubeconfig);
        let text = report.to_string();
        let mut lines = text.lines();
        let first = lines.next().unwrap_or_default();
        assert!(
            first.starts_with("cannot connect to http://127.0.0.1:")
                && first.contains("/api/v1/namespaces"),
            "{text}"
        );
        let causes: Vec<&str> = lines.collect();
        assert!(
            causes.iter().all(|l| l.starts_with("  caused by: ")),
            "{text}"
        );
        assert!(
            causes
                .iter()
                .any(|l| l.to_lowercase().contains("connection refused")),
            "{text}"
        );
        assert!(!text.contains(" { "), "no Debug dump: {text}");
        Ok(())
    }

    /// The demo's `main`, in a child process of the signal tests: its arguments come from
    /// `KCLIENT_DEMO_ARGS` (one per line), its signals are the real ones, and the process
    /// exits with the demo's status. Run on its own (`--ignored`), it is the demo against
    /// kclient-fake, which must end well.
    #[test]
    #[ignore = "the demo's process, started by the signal tests"]
    fn demo_process() {
        let from_parent = std::env::var("KCLIENT_DEMO_ARGS").ok();
        let args: Vec<String> = match &from_parent {
            Some(args) => args.lines().map(str::to_owned).collect(),
            None => args(&["--plain"]),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let exit = runtime.block_on(async {
            let interrupted = interrupted_by_signals().expect("the signal handlers install");
            demo(&args, false, interrupted).await
        });
        let code = match exit {
            Ok(exit) => exit.code(),
            Err(report) => {
                eprintln!("Error: {report}");
                1
            }
        };
        if from_parent.is_some() {
            std::process::exit(code.into());
        }
        assert_eq!(code, 0);
    }

    /// Starts the demo in a child process against a kclient-fake of this test, in which
    /// every ConfigMap create fails (the demo stays in its first step, the controller
    /// retrying); once the controller retries, sends it `signal` (with `kill`). The demo must
    /// stop its scenario, delete its namespace and exit with 130.
    #[cfg(unix)]
    async fn stopped_by(signal: &str) -> Result<(), BoxError> {
        use tokio::io::AsyncBufReadExt;

        let server = FakeApiServer::builder().start().await?;
        let creates = ActionFilter::new("create", "configmaps");
        let refusal = Reaction::Fail(Failure::status(503).message("not now"));
        server.reactors().prepend(Reactor::new(creates, refusal));
        let kubeconfig =
            std::env::temp_dir().join(format!("kclient-demo-{signal}-{}.yaml", std::process::id()));
        server.write_kubeconfig(&kubeconfig)?;
        let mut child = tokio::process::Command::new(std::env::current_exe()?)
            .args(["tests::demo_process", "--exact", "--ignored", "--nocapture"])
            .env(
                "KCLIENT_DEMO_ARGS",
                format!("--plain\n--kubeconfig\n{}", kubeconfig.display()),
            )
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdout = child.stdout.take().ok_or("the child's stdout")?;
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let mut output = Vec::new();
        let bound = Duration::from_secs(120);
        let retrying = tokio::time::timeout(bound, async {
            while let Some(line) = lines.next_line().await? {
                let retry = line.contains("failed (503 ServiceUnavailable): retry");
                output.push(line);
                if retry {
                    return Ok(true);
                }
            }
            Ok::<_, std::io::Error>(false)
        })
        .await??;
        assert!(retrying, "the controller retries:\n{}", output.join("\n"));
        let pid = child.id().ok_or("the child's pid")?.to_string();
        let kill = tokio::process::Command::new("kill")
            .args([format!("-{signal}"), pid])
            .status()
            .await?;
        assert!(kill.success(), "kill -{signal}");
        let status = tokio::time::timeout(bound, async {
            while let Some(line) = lines.next_line().await? {
                output.push(line);
            }
            child.wait().await
        })
        .await??;
        let _ = std::fs::remove_file(&kubeconfig);
        let text = output.join("\n");
        println!("SIG{signal}:\n{text}");
        assert_eq!(status.code(), Some(130), "SIG{signal}:\n{text}");
        let namespace = output
            .iter()
            .find_map(|l| l.strip_prefix("Created namespace "))
            .ok_or_else(|| format!("no namespace in\n{text}"))?;
        let after: Vec<&str> = output
            .iter()
            .map(String::as_str)
            .skip_while(|l| !l.starts_with("Interrupted: cleaning up"))
            .collect();
        assert_eq!(
            after.first().copied(),
            Some("Interrupted: cleaning up (Ctrl-C again to exit at once)"),
            "{text}"
        );
        assert!(
            after.contains(&format!("Deleted namespace {namespace}").as_str()),
            "{text}"
        );
        assert_eq!(after.last().copied(), Some("Interrupted."), "{text}");
        assert!(
            !text.contains("final state") && !text.contains("Summary"),
            "{text}"
        );
        let namespaces = GroupResource::new("", "namespaces");
        assert!(server.get_value(&namespaces, "", namespace).is_none());
        Ok(())
    }

    #[cfg(unix)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ctrl_c_stops_the_demo_which_cleans_up() -> Result<(), BoxError> {
        stopped_by("INT").await
    }

    #[cfg(unix)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sigterm_stops_the_demo_which_cleans_up() -> Result<(), BoxError> {
        stopped_by("TERM").await
    }

    #[cfg(unix)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sighup_stops_the_demo_which_cleans_up() -> Result<(), BoxError> {
        stopped_by("HUP").await
    }
}
