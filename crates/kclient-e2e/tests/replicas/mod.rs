//! Controller replicas as separate *processes*, for the tests that prove what holds across
//! processes (`sharded_processes`, `elected_processes`): the test binary started again as
//! each replica ([`start`]; the replica runs when [`ReplicaSpec::from_env`] finds its spec),
//! a reconciler giving each parent ConfigMap its child Secret ([`Parent`]), a probe file of
//! every reconcile's start and end per key and process ([`Probe`], read back by
//! [`intervals`]), and the checks on it ([`overlaps`], [`until_children`]).

#![allow(dead_code)] // each test binary uses its part

use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, ensure, Context, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kclient_controller::{Action, ReconcileContext, Reconciler};
use kclient_core::{ApiStatus as _, CreateOptions, ListOptions};
use kclient_rest::{Config, KubeconfigOptions};
use kclient_typed::Clientset;
use parking_lot::Mutex;
use serde_json::json;

/// Set in a replica process: `<kubeconfig>|<namespace>|<identity>|<probe file>`.
const REPLICA_ENV: &str = "KCLIENT_E2E_REPLICA";

/// Microseconds since the Unix epoch: the probe's clock, shared by the processes.
pub fn micros() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros())
        .unwrap_or_default()
}

/// What a replica process is to do, read from its environment.
pub struct ReplicaSpec {
    pub kubeconfig: PathBuf,
    pub namespace: String,
    pub identity: String,
    pub probe: Arc<Probe>,
}

impl ReplicaSpec {
    /// The spec, when this process is a replica.
    pub fn from_env() -> Option<Result<Self>> {
        let spec = std::env::var(REPLICA_ENV).ok()?;
        Some(Self::parse(&spec))
    }

    fn parse(spec: &str) -> Result<Self> {
        let parts: Vec<&str> = spec.split('|').collect();
        let [kubeconfig, namespace, identity, probe] = parts[..] else {
            bail!("bad {REPLICA_ENV}: {spec}");
        };
        let file = OpenOptions::new().append(true).create(true).open(probe)?;
        Ok(Self {
            kubeconfig: kubeconfig.into(),
            namespace: namespace.to_owned(),
            identity: identity.to_owned(),
            probe: Arc::new(Probe {
                file: Mutex::new(file),
                replica: identity.to_owned(),
            }),
        })
    }

    /// The reconciler of this replica.
    pub fn parent_reconciler(&self) -> Result<Parent> {
        Ok(Parent {
            clientset: clientset_of(&self.kubeconfig)?,
            namespace: self.namespace.clone(),
            probe: Arc::clone(&self.probe),
        })
    }
}

/// Runs `replica` when this process is a replica (its exit code: 0, or 1 with the error
/// printed); does nothing otherwise. Each test binary calls it from a `#[test]` named
/// `replica_process`, which [`start`] runs.
pub fn serve_if_replica<F, Fut>(replica: F)
where
    F: FnOnce(ReplicaSpec) -> Fut,
    Fut: std::future::Future<Output = Result<()>>,
{
    let Some(spec) = ReplicaSpec::from_env() else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    if let Err(e) = spec.and_then(|spec| runtime.block_on(replica(spec))) {
        eprintln!("replica failed: {e:#}");
        std::process::exit(1);
    }
}

/// Appends reconciles' starts and ends to the probe file, one `write` per line.
pub struct Probe {
    file: Mutex<std::fs::File>,
    replica: String,
}

impl Probe {
    fn note(&self, what: &str, key: &str) {
        let line = format!("{what} {key} {} {}\n", self.replica, micros());
        let _ = self.file.lock().write_all(line.as_bytes());
    }

    /// Notes that this process ends now, on its own (its reconciles left in flight end with
    /// it): call right before `std::process::exit`. The test sees the exit only when it next
    /// looks, which may be seconds later, so without this mark a reconcile cut short by the
    /// exit would seem to run on until then.
    pub fn note_exit(&self) {
        self.note("X", "-");
    }
}

/// Gives each parent its child Secret, noting the reconcile in the probe.
#[derive(Clone)]
pub struct Parent {
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
pub fn clientset_of(kubeconfig: &Path) -> Result<Clientset> {
    let mut config = Config::from_kubeconfig(&KubeconfigOptions {
        path: Some(kubeconfig.into()),
        ..Default::default()
    })?;
    config.qps = None;
    Ok(Clientset::new(config)?)
}

/// Starts this test binary again as the replica `identity` (its `replica_process` test).
pub fn start(kubeconfig: &Path, namespace: &str, identity: &str, probe: &Path) -> Result<Child> {
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

/// Sends SIGTERM: the replica leaves cleanly.
pub fn terminate(child: &mut Child) -> Result<()> {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()?;
    ensure!(status.success(), "kill -TERM failed");
    Ok(())
}

/// Reconciles by key: (replica, start, end) in microseconds.
pub type Reconciles = BTreeMap<String, Vec<(String, u128, u128)>>;

/// Reconciles by key: (replica, start, end). A reconcile that never ended is allowed only
/// of a replica that is gone: its end is the exit the replica noted itself
/// ([`Probe::note_exit`]) when there is one after the reconcile's start, otherwise the
/// replica's death as the test saw it (`killed`: replica → when it was killed with SIGKILL,
/// or seen ended).
pub fn intervals(probe: &Path, killed: &BTreeMap<String, u128>) -> Result<Reconciles> {
    let text = std::fs::read_to_string(probe)?;
    let mut open: BTreeMap<(String, String), u128> = BTreeMap::new();
    let mut done: Reconciles = BTreeMap::new();
    let mut exits: BTreeMap<String, u128> = BTreeMap::new();
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
            "X" => {
                exits.insert(id.1, at);
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
        let exit = exits.get(&replica).filter(|exit| **exit >= start);
        let death = exit
            .or_else(|| killed.get(&replica))
            .with_context(|| format!("{replica} left a reconcile of {key} unfinished"))?;
        done.entry(key).or_default().push((replica, start, *death));
    }
    Ok(done)
}

/// Every pair of reconciles of one key by two replicas whose times overlap.
pub fn overlaps(reconciles: &Reconciles) -> Vec<String> {
    let mut found = Vec::new();
    for (key, runs) in reconciles {
        for (i, (r1, s1, e1)) in runs.iter().enumerate() {
            for (r2, s2, e2) in &runs[i + 1..] {
                if r1 != r2 && s1 < e2 && s2 < e1 {
                    found.push(format!("{key}: {r1} [{s1}, {e1}] and {r2} [{s2}, {e2}]"));
                }
            }
        }
    }
    found
}

/// How many reconciles each replica ran.
pub fn reconciles_by_replica(reconciles: &Reconciles) -> BTreeMap<&str, usize> {
    reconciles
        .values()
        .flatten()
        .fold(BTreeMap::new(), |mut m, (r, _, _)| {
            *m.entry(r.as_str()).or_default() += 1;
            m
        })
}

/// Creates the parents `names`; a failed create is tried again (a test may be injecting
/// failures into the server meanwhile), at most 100 times each.
pub async fn create_parents(
    clientset: &Clientset,
    namespace: &str,
    names: &[String],
) -> Result<()> {
    let config_maps = clientset.core_v1().config_maps(namespace);
    for name in names {
        let parent: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}}))?;
        let mut tries = 0;
        loop {
            match config_maps.create(&parent, &CreateOptions::default()).await {
                Ok(_) => break,
                Err(e) if e.is_already_exists() => break,
                Err(_) if tries < 100 => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

/// How many of `names` have their child.
pub async fn children_of(
    clientset: &Clientset,
    namespace: &str,
    names: &[String],
) -> Result<usize> {
    let secrets = clientset
        .core_v1()
        .secrets(namespace)
        .list(&ListOptions::default())
        .await?;
    let have: BTreeSet<String> = secrets
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect();
    Ok(names
        .iter()
        .filter(|n| have.contains(&format!("child-{n}")))
        .count())
}

/// Waits until every one of `names` has its child, at most `limit`; how long it took. A
/// failed list is tried again at the next look.
pub async fn until_children(
    clientset: &Clientset,
    namespace: &str,
    names: &[String],
    limit: Duration,
) -> Result<Duration> {
    let started = tokio::time::Instant::now();
    while started.elapsed() < limit {
        if children_of(clientset, namespace, names).await.ok() == Some(names.len()) {
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
