//! Sharded replicas as separate *processes* (this test binary started again as each
//! replica), against kclient-fake with the `ShardedListAndWatch` gate: parent ConfigMaps
//! each owning one child Secret (created by the replica that holds the parent's slot; the
//! Secrets cached by their controller's shard). Three replicas start, a fourth joins while
//! parents are being written, one is killed with SIGKILL mid-work, one leaves with SIGTERM.
//! Every reconcile's start and end, per key and process, goes to a probe file; from it:
//! **no key is ever reconciled by two processes at once**, and every parent gets its child,
//! those written while a replica died within a lease duration and a margin.
//!
//! The default is 300 parents, to keep the suite short; `KCLIENT_SHARDING_OBJECTS=10000`
//! runs the 10k (opt-in: a few minutes).

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, ensure, Context, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kclient_cache::SharedInformerFactory;
use kclient_controller::sharded::{run_sharded, ShardedOptions};
use kclient_controller::{
    shutdown_on_signal, Action, Controller, Manager, ManagerError, ReconcileContext, Reconciler,
};
use kclient_core::{ApiStatus as _, CreateOptions, ListOptions};
use kclient_e2e::scenarios::Namespace;
use kclient_e2e::Target;
use kclient_fake::FakeApiServer;
use kclient_rest::{Config, KubeconfigOptions};
use kclient_tools::sharding::{ShardRing, ShardRingConfig};
use kclient_typed::Clientset;
use parking_lot::Mutex;
use serde_json::json;

/// Set in a replica process: `<kubeconfig>|<namespace>|<identity>|<probe file>`.
const REPLICA_ENV: &str = "KCLIENT_E2E_SHARD_REPLICA";
const LEASE: Duration = Duration::from_secs(4);

fn micros() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or_default()
}

/// Appends reconciles' starts and ends to the probe file, one `write` per line.
struct Probe {
    file: Mutex<std::fs::File>,
    replica: String,
}

impl Probe {
    fn note(&self, what: &str, key: &str) {
        let line = format!("{what} {key} {} {}\n", self.replica, micros());
        let _ = self.file.lock().write_all(line.as_bytes());
    }
}

/// Gives each parent its child Secret, noting the reconcile in the probe.
struct Parent {
    clientset: Clientset,
    namespace: String,
    probe: Arc<Probe>,
}

impl Reconciler<ConfigMap> for Parent {
    type Error = kclient_typed::Error;

    async fn reconcile(
        &self,
        parent: Arc<ConfigMap>,
        ctx: &ReconcileContext,
    ) -> Result<Action, Self::Error> {
        let name = ctx.key().name.clone();
        self.probe.note("S", &name);
        let secrets = self.clientset.core_v1().secrets(&self.namespace);
        let mut child = Secret::default();
        child.metadata.name = Some(format!("child-{name}"));
        child.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: name.clone(),
            uid: parent.metadata.uid.clone().unwrap_or_default(),
            controller: Some(true),
            ..OwnerReference::default()
        }]);
        child.string_data = Some([("parent".to_owned(), name.clone())].into());
        let created = secrets.create(&child, &CreateOptions::default()).await;
        self.probe.note("E", &name);
        match created {
            Ok(_) => Ok(Action::await_change()),
            Err(e) if e.is_already_exists() => Ok(Action::await_change()),
            Err(e) => Err(e),
        }
    }
}

/// A client of the server `kubeconfig` names, without client-side rate limiting.
fn clientset_of(kubeconfig: &Path) -> Result<Clientset> {
    let mut config = Config::from_kubeconfig(&KubeconfigOptions {
        path: Some(kubeconfig.into()),
        ..Default::default()
    })?;
    config.qps = None;
    Ok(Clientset::new(config)?)
}

/// `KCLIENT_SHARDING_OBJECTS`, or `default`.
fn objects_or(default: usize) -> usize {
    std::env::var("KCLIENT_SHARDING_OBJECTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// A kclient-fake with the gate, its kubeconfig written in `dir`, and an admin client.
async fn fake(dir: &Path) -> Result<(FakeApiServer, PathBuf, Clientset)> {
    let server = FakeApiServer::builder()
        .sharded_list_and_watch(true)
        .start()
        .await?;
    let kubeconfig = dir.join("kubeconfig");
    server.write_kubeconfig(&kubeconfig)?;
    let admin = clientset_of(&kubeconfig)?;
    Ok((server, kubeconfig, admin))
}

/// A replica process's work: the ring and a manager per holding, until SIGTERM.
async fn replica(spec: &str) -> Result<()> {
    let parts: Vec<&str> = spec.split('|').collect();
    let [kubeconfig, namespace, identity, probe] = parts[..] else {
        bail!("bad {REPLICA_ENV}: {spec}");
    };
    let clientset = clientset_of(Path::new(kubeconfig))?;
    let file = OpenOptions::new().append(true).create(true).open(probe)?;
    let probe = Arc::new(Probe {
        file: Mutex::new(file),
        replica: identity.to_owned(),
    });
    let mut ring_config = ShardRingConfig::new(namespace, "proof", identity);
    ring_config.lease_duration = LEASE;
    ring_config.renew_deadline = Duration::from_secs(3);
    ring_config.retry_period = Duration::from_millis(500);
    let ring = Arc::new(ShardRing::new(&clientset, ring_config)?);
    let shutdown = shutdown_on_signal()?;
    run_sharded(ring, shutdown, ShardedOptions::default(), |held| {
        let mut factory = SharedInformerFactory::builder(clientset.clone())
            .namespace(namespace)
            .shard_by_controller_owner::<Secret>();
        if let Some(selector) = held.selector() {
            factory = factory.shard_selector(selector);
        }
        let factory = factory.build();
        let mut manager = Manager::builder(&factory)
            .graceful_shutdown_timeout(Duration::from_millis(500))
            .build()?;
        let parent = Parent {
            clientset: clientset.clone(),
            namespace: namespace.to_owned(),
            probe: probe.clone(),
        };
        let controller = Controller::<ConfigMap, _>::new("proof", &factory).owns::<Secret>();
        manager.add(controller, parent);
        Ok::<_, ManagerError>(manager)
    })
    .await?;
    Ok(())
}

/// The replica, when this process is one (see [`REPLICA_ENV`]); nothing otherwise.
#[test]
fn replica_process() {
    let Ok(spec) = std::env::var(REPLICA_ENV) else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    if let Err(e) = runtime.block_on(replica(&spec)) {
        eprintln!("replica failed: {e:#}");
        std::process::exit(1);
    }
}

fn start(kubeconfig: &Path, namespace: &str, identity: &str, probe: &Path) -> Result<Child> {
    let spec = [
        &kubeconfig.display().to_string(),
        namespace,
        identity,
        &probe.display().to_string(),
    ]
    .join("|");
    Command::new(std::env::current_exe()?)
        .args([
            "--exact",
            "replica_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(REPLICA_ENV, spec)
        .stdout(Stdio::null())
        .spawn()
        .context("starting a replica")
}

fn terminate(child: &mut Child) -> Result<()> {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()?;
    ensure!(status.success(), "kill -TERM failed");
    Ok(())
}

/// Reconciles by key: (replica, start, end) in microseconds.
type Reconciles = BTreeMap<String, Vec<(String, u128, u128)>>;

/// Reconciles by key: (replica, start, end) — an end missing for the killed replica's
/// reconcile in flight when it died is its death.
fn intervals(probe: &Path, killed: &str, death: u128) -> Result<Reconciles> {
    let text = std::fs::read_to_string(probe)?;
    let mut open: BTreeMap<(String, String), u128> = BTreeMap::new();
    let mut done: Reconciles = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let [what, key, replica, at] = fields[..] else {
            bail!("a torn probe line: {line:?}");
        };
        let at: u128 = at.parse()?;
        let id = (key.to_owned(), replica.to_owned());
        match what {
            "S" => {
                open.insert(id, at);
            }
            "E" => {
                let start = open
                    .remove(&id)
                    .with_context(|| format!("an end without a start: {line}"))?;
                done.entry(id.0).or_default().push((id.1, start, at));
            }
            _ => bail!("a bad probe line: {line:?}"),
        }
    }
    for ((key, replica), start) in open {
        ensure!(
            replica == killed,
            "{replica} left a reconcile of {key} unfinished"
        );
        done.entry(key).or_default().push((replica, start, death));
    }
    Ok(done)
}

async fn create_parents(clientset: &Clientset, namespace: &str, names: &[String]) -> Result<()> {
    let config_maps = clientset.core_v1().config_maps(namespace);
    for name in names {
        let parent: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}}))?;
        config_maps
            .create(&parent, &CreateOptions::default())
            .await?;
    }
    Ok(())
}

/// How many of `names` have their child.
async fn children_of(clientset: &Clientset, namespace: &str, names: &[String]) -> Result<usize> {
    let secrets = clientset
        .core_v1()
        .secrets(namespace)
        .list(&ListOptions::default())
        .await?;
    let have: std::collections::BTreeSet<String> = secrets
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect();
    Ok(names
        .iter()
        .filter(|n| have.contains(&format!("child-{n}")))
        .count())
}

async fn until_children(
    clientset: &Clientset,
    namespace: &str,
    names: &[String],
    limit: Duration,
) -> Result<Duration> {
    let started = tokio::time::Instant::now();
    while started.elapsed() < limit {
        if children_of(clientset, namespace, names).await? == names.len() {
            return Ok(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!(
        "{} of {} parents have their child after {limit:?}",
        children_of(clientset, namespace, names).await?,
        names.len()
    )
}

/// The scenario against the server `kubeconfig` names, in `namespace` (see the module).
async fn proof(
    kubeconfig: &Path,
    admin: &Clientset,
    namespace: &str,
    probe: &Path,
    objects: usize,
) -> Result<()> {
    let first: Vec<String> = (0..objects).map(|i| format!("first-{i}")).collect();
    create_parents(admin, namespace, &first).await?;
    let mut replicas: BTreeMap<&str, Child> = BTreeMap::new();
    for id in ["a", "b", "c"] {
        replicas.insert(id, start(kubeconfig, namespace, id, probe)?);
    }
    let limit = Duration::from_secs(60 + objects as u64 / 50);
    let synced = until_children(admin, namespace, &first, limit).await?;

    // A fourth joins while parents are written.
    replicas.insert("d", start(kubeconfig, namespace, "d", probe)?);
    let second: Vec<String> = (0..objects / 3).map(|i| format!("second-{i}")).collect();
    create_parents(admin, namespace, &second).await?;
    let joined = until_children(admin, namespace, &second, limit).await?;

    // One dies mid-work, while parents are written; another leaves.
    let third: Vec<String> = (0..objects / 3).map(|i| format!("third-{i}")).collect();
    let (half, rest) = third.split_at(third.len() / 2);
    create_parents(admin, namespace, half).await?;
    let mut killed = replicas.remove("b").context("b")?;
    killed.kill()?;
    let (death, died) = (micros(), tokio::time::Instant::now());
    killed.wait()?;
    create_parents(admin, namespace, rest).await?;
    let mut leaving = replicas.remove("c").context("c")?;
    terminate(&mut leaving)?;
    ensure!(leaving.wait()?.success(), "c did not leave cleanly");
    // Within a lease duration and a margin of the death, plus c's leaving and the
    // reconciles themselves.
    until_children(admin, namespace, &third, limit).await?;
    let took = died.elapsed();
    let bound = LEASE * 3 + Duration::from_secs(objects as u64 / 50);
    ensure!(took < bound, "the third batch took {took:?}");
    println!(
        "{namespace}: {objects} parents done by 3 replicas in {synced:?}; {} more with a 4th \
         joining in {joined:?}; {} more, one replica killed and one leaving, all done \
         {took:?} after the kill (lease {LEASE:?})",
        second.len(),
        third.len()
    );

    for (_, mut child) in replicas {
        terminate(&mut child)?;
        ensure!(child.wait()?.success(), "a replica did not leave cleanly");
    }
    let reconciles = intervals(probe, "b", death)?;
    let mut overlaps = Vec::new();
    for (key, runs) in &reconciles {
        for (i, (r1, s1, e1)) in runs.iter().enumerate() {
            for (r2, s2, e2) in &runs[i + 1..] {
                if r1 != r2 && s1 < e2 && s2 < e1 {
                    overlaps.push(format!("{key}: {r1} [{s1}, {e1}] and {r2} [{s2}, {e2}]"));
                }
            }
        }
    }
    ensure!(
        overlaps.is_empty(),
        "reconciled by two processes at once: {overlaps:#?}"
    );
    let by: BTreeMap<&str, usize> =
        reconciles
            .values()
            .flatten()
            .fold(BTreeMap::new(), |mut m, (r, _, _)| {
                *m.entry(r.as_str()).or_default() += 1;
                m
            });
    ensure!(by.len() == 4, "every replica reconciled: {by:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replica_processes_never_reconcile_one_key_at_once() -> Result<()> {
    let objects = objects_or(300);
    let dir = tempfile::tempdir()?;
    let (_server, kubeconfig, admin) = fake(dir.path()).await?;
    let probe = dir.path().join("probe-fake");
    proof(&kubeconfig, &admin, "default", &probe, objects)
        .await
        .context("against kclient-fake")?;

    // And against kube-apiserver (with the gate), when the e2e cluster is there.
    if let Some(target) = Target::real_from_env()? {
        let ns = Namespace::create(&target.client()?, "sharded-processes").await?;
        let admin = Clientset::new(target.config.clone())?;
        let probe = dir.path().join("probe-real");
        let outcome = proof(&target.kubeconfig, &admin, &ns.name, &probe, objects)
            .await
            .context("against kube-apiserver");
        ns.delete().await?;
        outcome?;
    }
    Ok(())
}

/// A process's resident memory, in bytes (Linux's `/proc/<pid>/status`).
fn resident_bytes(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .context("no VmRSS")?;
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .context("no VmRSS value")?
        .parse()?;
    Ok(kib * 1024)
}

/// The resident memory of each of `count` replicas once every one of `objects` parents has
/// its child, on the server `kubeconfig` names, in `namespace`.
async fn resident_per_replica(
    kubeconfig: &Path,
    admin: &Clientset,
    namespace: &str,
    count: usize,
    objects: usize,
) -> Result<Vec<u64>> {
    let dir = tempfile::tempdir()?;
    let parents: Vec<String> = (0..objects).map(|i| format!("p-{i}")).collect();
    create_parents(admin, namespace, &parents).await?;
    let probe = dir.path().join("probe");
    let mut replicas = Vec::new();
    for id in &["a", "b", "c", "d"][..count] {
        replicas.push(start(kubeconfig, namespace, id, &probe)?);
    }
    until_children(admin, namespace, &parents, Duration::from_secs(900)).await?;
    // Settle: the last holdings' informers have listed.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let resident = replicas
        .iter()
        .map(|c| resident_bytes(c.id()))
        .collect::<Result<_>>();
    for mut child in replicas {
        terminate(&mut child)?;
        child.wait()?;
    }
    resident
}

fn report(server: &str, count: usize, objects: usize, resident: &[u64]) {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "{server}: {count} replica(s), {objects} parents and children: resident MiB {:?}, max {:.1}",
        resident.iter().map(|b| format!("{:.1}", mib(*b))).collect::<Vec<_>>(),
        mib(resident.iter().copied().max().unwrap_or_default())
    );
}

/// Memory per replica against the number of replicas (opt-in, for docs/benchmarks.md):
/// `KCLIENT_SHARDING_OBJECTS` parents (10k by default), each with its child, on kclient-fake
/// and, when the e2e cluster is there, on kube-apiserver; for 1 to 4 replicas, each
/// replica's resident memory once every parent was reconciled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: cargo test -p kclient-e2e --test sharded_processes -- --ignored --nocapture"]
async fn memory_per_replica() -> Result<()> {
    let objects = objects_or(10_000);
    for count in 1..=4usize {
        let dir = tempfile::tempdir()?;
        let (_server, kubeconfig, admin) = fake(dir.path()).await?;
        let resident = resident_per_replica(&kubeconfig, &admin, "default", count, objects).await?;
        report("kclient-fake", count, objects, &resident);
    }
    let Some(target) = Target::real_from_env()? else {
        return Ok(());
    };
    let admin = Clientset::new(target.config.clone())?;
    for count in 1..=4usize {
        let ns = Namespace::create(&target.client()?, "sharded-memory").await?;
        let resident =
            resident_per_replica(&target.kubeconfig, &admin, &ns.name, count, objects).await;
        ns.delete().await?;
        report("kube-apiserver", count, objects, &resident?);
    }
    Ok(())
}
