//! kube-rs running the peer benchmark scenarios of kclient's `cargo xtask bench`; each result
//! is printed as one JSON object on stdout.
//!
//! ```text
//! kube-rs-bench sync   --kubeconfig K [--namespace NS] [--kind pods|configmaps] --count N --mode list|stream --managed-fields keep|strip
//! kube-rs-bench watch  --kubeconfig K --namespace NS --count N
//! kube-rs-bench decode --kubeconfig K [--namespace NS] --count N [--repeat R]
//! kube-rs-bench controller --kubeconfig K --namespace NS --count N --controllers 1|3 [--concurrency W] [--requeue --settle S]
//! ```
//!
//! The same scenarios, arguments and JSON fields as the kclient and client-go programs. kube-rs
//! has no workqueue and no indexer (its `Store` is one map; lookups by a field are linear
//! scans), so scenarios 3 and 4 have no kube-rs side.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Client, Config, ResourceExt};
use serde_json::{json, Value};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The annotation the writer sets to the time of each update (Unix nanoseconds).
const WRITTEN_AT: &str = "bench.kclient.io/written-at";

struct Options {
    kubeconfig: String,
    namespace: String,
    mode: String,
    managed_fields: String,
    /// What the sync scenario caches: `pods` or `configmaps`.
    kind: String,
    count: usize,
    repeat: usize,
    /// Seconds after the sync before reading the resident set again (0: not read); the
    /// controller scenario's requeue window.
    settle: u64,
    /// The controller scenario: how many controllers, how many concurrent reconciles each,
    /// whether every reconcile requeues its key at once.
    controllers: usize,
    concurrency: usize,
    requeue: bool,
}

fn options(args: &[String]) -> Result<Options, Error> {
    let mut flags: HashMap<&str, &str> = HashMap::new();
    let mut requeue = false;
    let mut it = args.iter();
    while let Some(name) = it.next() {
        if name == "--requeue" {
            requeue = true;
            continue;
        }
        let name = name
            .strip_prefix("--")
            .ok_or(format!("unexpected {name:?}"))?;
        let value = it.next().ok_or(format!("--{name} needs a value"))?;
        flags.insert(name, value);
    }
    let get = |name: &str, default: &str| flags.get(name).copied().unwrap_or(default).to_owned();
    Ok(Options {
        kubeconfig: get("kubeconfig", ""),
        namespace: get("namespace", ""),
        mode: get("mode", "list"),
        managed_fields: get("managed-fields", "strip"),
        kind: get("kind", "pods"),
        count: get("count", "0").parse()?,
        repeat: get("repeat", "3").parse()?,
        settle: get("settle", "0").parse()?,
        controllers: get("controllers", "1").parse()?,
        concurrency: get("concurrency", "16").parse()?,
        requeue,
    })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let scenario = args
        .first()
        .ok_or("usage: kube-rs-bench sync|watch|decode [options]")?;
    let o = options(&args[1..])?;
    let mut result = match scenario.as_str() {
        "sync" => sync(&o).await?,
        "watch" => watch(&o).await?,
        "decode" => decode(&o).await?,
        "controller" => controller(&o).await?,
        other => return Err(format!("kube-rs has no {other:?} scenario").into()),
    };
    result["client"] = json!("kube-rs");
    result["scenario"] = json!(scenario);
    println!("{result}");
    Ok(())
}

async fn client(o: &Options) -> Result<Client, Error> {
    let kubeconfig = Kubeconfig::read_from(&o.kubeconfig)?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

fn api<K>(client: Client, namespace: &str) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    if namespace.is_empty() {
        Api::all(client)
    } else {
        Api::namespaced(client, namespace)
    }
}

fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| {
            l.strip_prefix(field)?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(0)
        * 1024
}

fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

fn watcher_config(o: &Options) -> watcher::Config {
    let config = watcher::Config::default();
    if o.mode == "stream" {
        config.streaming_lists()
    } else {
        config
    }
}

async fn sync(o: &Options) -> Result<Value, Error> {
    match o.kind.as_str() {
        "pods" => sync_kind::<Pod>(o).await,
        "configmaps" => sync_kind::<ConfigMap>(o).await,
        other => Err(format!("unknown kind {other:?}").into()),
    }
}

async fn sync_kind<K>(o: &Options) -> Result<Value, Error>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + k8s_openapi::serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    let objects_api: Api<K> = api(client(o).await?, &o.namespace);
    let (reader, writer) = reflector::store::<K>();
    let strip = o.managed_fields == "strip";
    let before = status_bytes("VmRSS:");
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let (start, cpu0) = (Instant::now(), cpu_time());
    let stream = watcher(objects_api, watcher_config(o))
        .default_backoff()
        .modify(move |pod| {
            if strip {
                pod.managed_fields_mut().clear();
            }
        })
        .reflect(writer)
        .for_each(|_| futures::future::ready(()));
    let task = tokio::spawn(stream);
    reader.wait_until_ready().await?;
    let (wall, cpu) = (start.elapsed(), cpu_time() - cpu0);
    let (peak, after) = (status_bytes("VmHWM:"), status_bytes("VmRSS:"));
    let objects = reader.len();
    let mut result = json!({
        "objects": objects, "mode": o.mode, "managed_fields": o.managed_fields, "kind": o.kind,
        "wall_s": wall.as_secs_f64(), "cpu_s": cpu.as_secs_f64(),
        "rss_before": before, "rss_after": after, "rss_peak": peak,
    });
    if o.settle > 0 {
        tokio::time::sleep(std::time::Duration::from_secs(o.settle)).await;
        result["rss_settled"] = json!(status_bytes("VmRSS:"));
        result["settle_s"] = json!(o.settle);
    }
    task.abort();
    Ok(result)
}

fn unix_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// The watch stream, three "handlers" (closures called for every applied object: kube-rs has
/// no event handlers) each sending the object's key to a channel, and two workers taking keys
/// from it (kube-rs has no workqueue; its Controller's scheduler is not a public queue).
async fn watch(o: &Options) -> Result<Value, Error> {
    let config_maps: Api<ConfigMap> = api(client(o).await?, &o.namespace);
    let (reader, writer) = reflector::store::<ConfigMap>();
    let (tx, rx) = async_channel_pair();
    let processed = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (rx, processed) = (Arc::clone(&rx), Arc::clone(&processed));
            tokio::spawn(async move {
                loop {
                    let key = rx.lock().await.recv().await;
                    if key.is_none() {
                        return;
                    }
                    processed.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let first = Arc::new(AtomicI64::new(0));
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(o.count)));
    let counts: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    let synced = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stream = {
        let (first, latencies, counts, synced) = (
            first.clone(),
            latencies.clone(),
            counts.clone(),
            synced.clone(),
        );
        watcher(config_maps, watcher_config(o))
            .default_backoff()
            .reflect(writer)
            .applied_objects()
            .for_each(move |cm| {
                if let (Ok(cm), true) = (cm, synced.load(Ordering::Relaxed)) {
                    let now = unix_nanos();
                    let _ = first.compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
                    let key = format!("{}/{}", cm.namespace().unwrap_or_default(), cm.name_any());
                    for (h, count) in counts.iter().enumerate() {
                        if h == 0 {
                            if let Some(at) = cm
                                .annotations()
                                .get(WRITTEN_AT)
                                .and_then(|a| a.parse::<i64>().ok())
                            {
                                latencies.lock().unwrap().push(now - at);
                            }
                        }
                        let _ = tx.send(key.clone());
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                }
                futures::future::ready(())
            })
    };
    let task = tokio::spawn(stream);
    reader.wait_until_ready().await?;
    synced.store(true, Ordering::Relaxed);
    println!("{{\"ready\":true}}");
    let (mut last, mut idle) = (u64::MAX, Instant::now());
    loop {
        let seen = counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .min()
            .unwrap_or(0);
        if seen as usize >= o.count {
            break;
        }
        if seen != last {
            (last, idle) = (seen, Instant::now());
        } else if idle.elapsed() > Duration::from_secs(30) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let end = unix_nanos();
    task.abort();
    let _ = task.await;
    for w in workers {
        let _ = w.await;
    }
    let delivered = counts
        .iter()
        .map(|c| c.load(Ordering::Relaxed))
        .min()
        .unwrap_or(0);
    let seconds = (end - first.load(Ordering::Relaxed)) as f64 / 1e9;
    let mut result = json!({
        "updates": delivered, "handlers": 3, "seconds": seconds,
        "events_per_s": delivered as f64 / seconds, "processed": processed.load(Ordering::Relaxed),
    });
    let mut latencies = latencies.lock().unwrap().clone();
    if !latencies.is_empty() {
        latencies.sort_unstable();
        result["latency_p50_ms"] = json!(latencies[latencies.len() / 2] as f64 / 1e6);
        result["latency_p99_ms"] = json!(latencies[latencies.len() * 99 / 100] as f64 / 1e6);
    }
    Ok(result)
}

type KeySender = tokio::sync::mpsc::UnboundedSender<String>;
type KeyReceiver = Arc<tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<String>>>;

fn async_channel_pair() -> (KeySender, KeyReceiver) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    (tx, Arc::new(tokio::sync::Mutex::new(rx)))
}

async fn decode(o: &Options) -> Result<Value, Error> {
    let pods: Api<Pod> = api(client(o).await?, &o.namespace);
    let mut times = Vec::new();
    let mut objects = 0;
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    for _ in 0..o.repeat.max(1) {
        let start = Instant::now();
        let list = pods.list(&ListParams::default()).await?;
        times.push(start.elapsed().as_secs_f64());
        objects = list.items.len();
    }
    let first = times[0];
    let mut rest = times[1..].to_vec();
    rest.sort_by(f64::total_cmp);
    let seconds = rest.get(rest.len() / 2).copied().unwrap_or(first);
    Ok(
        json!({"objects": objects, "first_s": first, "seconds": seconds, "rss_peak": status_bytes("VmHWM:")}),
    )
}

/// Counts the reconciles of one controller, and which of its `count` objects were reconciled
/// at least once (the objects are named `<prefix>-<i>`).
struct Counter {
    reconciles: AtomicU64,
    first: Vec<std::sync::atomic::AtomicBool>,
    missing: AtomicU64,
    requeue: Arc<std::sync::atomic::AtomicBool>,
}

impl Counter {
    fn new(count: usize, requeue: &Arc<std::sync::atomic::AtomicBool>) -> Arc<Self> {
        Arc::new(Self {
            reconciles: AtomicU64::new(0),
            first: (0..count).map(|_| Default::default()).collect(),
            missing: AtomicU64::new(count as u64),
            requeue: Arc::clone(requeue),
        })
    }

    fn count(&self, name: &str) -> Action {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        let index = name.split_once('-').and_then(|(_, i)| i.parse::<usize>().ok());
        if let Some(seen) = index.and_then(|i| self.first.get(i)) {
            if !seen.swap(true, Ordering::AcqRel) {
                self.missing.fetch_sub(1, Ordering::AcqRel);
            }
        }
        if self.requeue.load(Ordering::Relaxed) {
            Action::requeue(Duration::ZERO)
        } else {
            Action::await_change()
        }
    }
}

async fn count<K: kube::Resource>(obj: Arc<K>, counter: Arc<Counter>) -> Result<Action, kube::Error> {
    Ok(counter.count(&obj.name_any()))
}

fn never_fails<K>(_: Arc<K>, _: &kube::Error, _: Arc<Counter>) -> Action {
    Action::await_change()
}

fn counterpart<K: kube::Resource<DynamicType = ()>>(namespace: &str, name: &str, prefix: &str) -> Option<ObjectRef<K>> {
    let (_, i) = name.split_once('-')?;
    Some(ObjectRef::new(&format!("{prefix}-{i}")).within(namespace))
}

/// Scenario 8, kube-rs's side: its `Controller` on the primary ConfigMaps owning a Secret
/// each (see kclient-bench's `controller` module). Each `Controller` runs its own reflector
/// of its primary type (a store) and a watcher per `owns`/`watches` (no store): with three
/// controllers, three stores and six watches where kclient's shared informers have two.
async fn controller(o: &Options) -> Result<Value, Error> {
    let client = client(o).await?;
    let config_maps = || Api::<ConfigMap>::namespaced(client.clone(), &o.namespace);
    let secrets = || Api::<Secret>::namespaced(client.clone(), &o.namespace);
    let wc = watcher::Config::default;
    let config = ControllerConfig::default().concurrency(o.concurrency as u16);
    let requeue = Arc::new(std::sync::atomic::AtomicBool::new(o.requeue));
    let mut counters = Vec::new();
    let mut tasks = Vec::new();
    let before = status_bytes("VmRSS:");
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let (start, cpu0) = (Instant::now(), cpu_time());
    let c = Counter::new(o.count, &requeue);
    counters.push(Arc::clone(&c));
    tasks.push(tokio::spawn(
        Controller::new(config_maps(), wc())
            .owns(secrets(), wc())
            .with_config(config.clone())
            .run(count, never_fails, c)
            .for_each(|_| futures::future::ready(())),
    ));
    match o.controllers {
        1 => {}
        3 => {
            let c = Counter::new(o.count, &requeue);
            counters.push(Arc::clone(&c));
            let ns = o.namespace.clone();
            tasks.push(tokio::spawn(
                Controller::new(secrets(), wc())
                    .watches(config_maps(), wc(), move |cm: ConfigMap| {
                        counterpart::<Secret>(&ns, &cm.name_any(), "o")
                    })
                    .with_config(config.clone())
                    .run(count, never_fails, c)
                    .for_each(|_| futures::future::ready(())),
            ));
            let c = Counter::new(o.count, &requeue);
            counters.push(Arc::clone(&c));
            let ns = o.namespace.clone();
            tasks.push(tokio::spawn(
                Controller::new(config_maps(), wc())
                    .watches(secrets(), wc(), move |s: Secret| {
                        counterpart::<ConfigMap>(&ns, &s.name_any(), "p")
                    })
                    .with_config(config.clone())
                    .run(count, never_fails, c)
                    .for_each(|_| futures::future::ready(())),
            ));
        }
        other => return Err(format!("--controllers {other}: 1 or 3").into()),
    }
    while counters.iter().any(|c| c.missing.load(Ordering::Acquire) > 0) {
        if start.elapsed() > Duration::from_secs(600) {
            let missing: Vec<u64> = counters.iter().map(|c| c.missing.load(Ordering::Acquire)).collect();
            return Err(format!("not every object was reconciled within 600 s: {missing:?} missing").into());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let (wall, cpu) = (start.elapsed(), cpu_time() - cpu0);
    let (peak, after) = (status_bytes("VmHWM:"), status_bytes("VmRSS:"));
    let reconciles = |counters: &[Arc<Counter>]| -> u64 {
        counters.iter().map(|c| c.reconciles.load(Ordering::Relaxed)).sum()
    };
    let counted = reconciles(&counters);
    let mut result = json!({
        "controllers": o.controllers, "objects": o.count,
        "initial_s": wall.as_secs_f64(), "cpu_s": cpu.as_secs_f64(), "reconciles": counted,
        "rss_before": before, "rss_after": after, "rss_peak": peak,
    });
    if o.requeue {
        let (window, cpu1) = (Instant::now(), cpu_time());
        tokio::time::sleep(Duration::from_secs(o.settle.max(1))).await;
        let (elapsed, cpu) = (window.elapsed().as_secs_f64(), cpu_time() - cpu1);
        result["requeue_per_s"] = json!((reconciles(&counters) - counted) as f64 / elapsed);
        result["requeue_cpu_s"] = json!(cpu.as_secs_f64());
    }
    for task in tasks {
        task.abort();
    }
    Ok(result)
}
