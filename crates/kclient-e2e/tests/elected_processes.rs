//! Leader-elected controller replicas as separate *processes* (this test binary started again
//! as each replica) under faults, against kclient-fake: parent ConfigMaps each owning one
//! child Secret, two replicas of one Manager with leader election on a Lease; round after
//! round, parents are written while kclient-fake injects a fault — its watches dropped, its
//! history compacted (410), a storm of 503s or of 429s with `Retry-After`, slow answers — or
//! the leader process is killed with SIGKILL. A replica whose process ends (killed, or exiting
//! after it lost its lease in a storm) is started again under a new identity, as a kubelet
//! restarts a container. Every reconcile's start and end, per key and process, goes to a
//! probe file; from it: **no key is ever reconciled by two processes at once**, and every
//! parent gets its child. The order of the faults comes from a fixed seed
//! (`KCLIENT_ELECTED_SEED` picks another).

mod replicas;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Child;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kclient_cache::SharedInformerFactory;
use kclient_controller::{shutdown_on_signal, Controller, Manager, ManagerError};
use kclient_fake::{Failure, FakeApiServer};
use kclient_testkit::SeededRng;
use kclient_tools::leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaseLock};
use kclient_typed::Clientset;

use replicas::{
    clientset_of, create_parents, intervals, micros, overlaps, reconciles_by_replica,
    serve_if_replica, start, terminate, until_children, ReplicaSpec,
};

const NAMESPACE: &str = "default";
const LEASE_NAME: &str = "elected-proof";

/// A replica process's work: a Manager under leader election until SIGTERM, or until it
/// loses its lease (then the process ends, to be started again, as a controller's does).
async fn replica(spec: ReplicaSpec) -> Result<()> {
    let clientset = clientset_of(&spec.kubeconfig)?;
    let factory = SharedInformerFactory::builder(clientset.clone())
        .namespace(&spec.namespace)
        .build();
    let lease = LeaseLock::from_clientset(
        &clientset,
        &spec.namespace,
        LEASE_NAME,
        spec.identity.clone(),
    );
    // A leader gives up `renew_deadline` after its last renewal started; another may take
    // over `lease_duration` after it saw that renewal: the 3 s between them are what a paused
    // or starved process may lose without two leaders at once — the assumption of every
    // lease-based election (1 s was too little on a 2-core machine under a CI build and a soak).
    let mut manager = Manager::builder(&factory)
        .leader_election(LeaderElectionConfig {
            lease_duration: Duration::from_secs(6),
            renew_deadline: Duration::from_secs(3),
            retry_period: Duration::from_millis(500),
            release_on_cancel: true,
            name: LEASE_NAME.into(),
            ..LeaderElectionConfig::new(lease, LeaderCallbacks::new())
        })
        .graceful_shutdown_timeout(Duration::from_millis(500))
        .build()?;
    let controller = Controller::<ConfigMap, _>::new("proof", &factory).owns::<Secret>();
    manager.add(controller, spec.parent_reconciler()?);
    match manager.run(shutdown_on_signal()?).await {
        Ok(()) => Ok(()),
        Err(ManagerError::LeaderElectionLost) => {
            spec.probe.note_exit();
            std::process::exit(3)
        }
        Err(e) => Err(e.into()),
    }
}

/// The replica, when this process is one; nothing otherwise.
#[test]
fn replica_process() {
    serve_if_replica(replica);
}

/// The running replica processes, started again under a new identity when one ends.
struct Replicas<'a> {
    kubeconfig: &'a Path,
    probe: &'a Path,
    running: BTreeMap<String, Child>,
    started: usize,
    /// Replica → when its process was killed or seen ended (a reconcile of it left in flight
    /// counts as running until then, or until the exit a replica that lost its lease noted
    /// itself).
    gone: BTreeMap<String, u128>,
    /// Replicas that ended on their own (a lost lease), and how.
    ended: Vec<String>,
}

impl Replicas<'_> {
    fn start_one(&mut self) -> Result<()> {
        let identity = format!("r{}", self.started);
        self.started += 1;
        let child = start(self.kubeconfig, NAMESPACE, &identity, self.probe)?;
        self.running.insert(identity, child);
        Ok(())
    }

    /// Starts a replica in place of each that ended.
    fn restart_ended(&mut self) -> Result<()> {
        let mut gone = Vec::new();
        for (identity, child) in &mut self.running {
            if let Some(status) = child.try_wait()? {
                gone.push(format!("{identity}: {status}"));
            }
        }
        for line in gone {
            let identity = line.split(':').next().unwrap_or_default().to_owned();
            self.running.remove(&identity);
            self.gone.insert(identity, micros());
            self.ended.push(line);
            self.start_one()?;
        }
        Ok(())
    }

    /// Kills the replica `identity` with SIGKILL, noting when; starts another in its place.
    fn kill(&mut self, identity: &str) -> Result<()> {
        let mut child = self
            .running
            .remove(identity)
            .with_context(|| format!("{identity} is not running"))?;
        child.kill()?;
        self.gone.insert(identity.to_owned(), micros());
        child.wait()?;
        self.start_one()
    }
}

/// The holder of the election's Lease, if any.
async fn leader(admin: &Clientset) -> Option<String> {
    let lease = admin
        .coordination_v1()
        .leases(NAMESPACE)
        .get(LEASE_NAME)
        .await
        .ok()?;
    lease.spec?.holder_identity.filter(|h| !h.is_empty())
}

const FAULTS: usize = 6;

/// Injects fault `kind` (one of [`FAULTS`]); a SIGKILL of the leader is the replicas' part.
async fn inject(
    server: &FakeApiServer,
    admin: &Clientset,
    replicas: &mut Replicas<'_>,
    kind: usize,
) -> Result<String> {
    let faults = server.faults();
    Ok(match kind {
        0 => {
            faults.drop_watches();
            "watches dropped".into()
        }
        1 => {
            faults.compact_history();
            faults.drop_watches();
            "history compacted, watches dropped (410 on resuming)".into()
        }
        2 => {
            faults.fail_next(30, Failure::status(503).message("proof"));
            "30 × 503".into()
        }
        3 => {
            faults.fail_next(30, Failure::status(429).retry_after(1).message("proof"));
            "30 × 429 with Retry-After".into()
        }
        4 => {
            faults.set_latency(Duration::from_millis(40));
            tokio::time::sleep(Duration::from_secs(2)).await;
            faults.set_latency(Duration::ZERO);
            "2 s of 40 ms answers".into()
        }
        _ => match leader(admin).await {
            Some(identity) if replicas.running.contains_key(&identity) => {
                replicas.kill(&identity)?;
                format!("leader {identity} killed")
            }
            other => format!("no running leader to kill ({other:?})"),
        },
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elected_processes_under_faults_never_reconcile_one_key_at_once() -> Result<()> {
    let seed = std::env::var("KCLIENT_ELECTED_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(46u64);
    let dir = tempfile::tempdir()?;
    let server = FakeApiServer::builder().start().await?;
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig)?;
    let admin = clientset_of(&kubeconfig)?;
    let probe = dir.path().join("probe");
    let mut replicas = Replicas {
        kubeconfig: &kubeconfig,
        probe: &probe,
        running: BTreeMap::new(),
        started: 0,
        gone: BTreeMap::new(),
        ended: Vec::new(),
    };
    for _ in 0..2 {
        replicas.start_one()?;
    }
    // Every kind of fault once per round of FAULTS batches, in a seeded order, twice over.
    let mut rng = SeededRng::new(seed);
    let mut order: Vec<usize> = Vec::new();
    for _ in 0..2 {
        let mut kinds: Vec<usize> = (0..FAULTS).collect();
        rng.shuffle(&mut kinds);
        order.extend(kinds);
    }
    let mut all = Vec::new();
    let mut log = Vec::new();
    for (round, kind) in order.into_iter().enumerate() {
        let batch: Vec<String> = (0..25).map(|i| format!("p{round}-{i}")).collect();
        let (half, rest) = batch.split_at(batch.len() / 2);
        replicas.restart_ended()?;
        create_parents(&admin, NAMESPACE, half).await?;
        log.push(inject(&server, &admin, &mut replicas, kind).await?);
        create_parents(&admin, NAMESPACE, rest).await?;
        all.extend(batch);
        // Let the round's work start before the next fault.
        tokio::time::sleep(Duration::from_millis(700)).await;
        replicas.restart_ended()?;
    }
    server.faults().clear_failures();
    // Within two lease durations of the last fault, and the reconciles themselves.
    let took = until_children(&admin, NAMESPACE, &all, Duration::from_secs(60)).await;
    replicas.restart_ended()?;
    for child in replicas.running.values_mut() {
        terminate(child)?;
    }
    for (identity, mut child) in std::mem::take(&mut replicas.running) {
        let status = child.wait()?;
        ensure!(
            status.success() || status.code() == Some(3),
            "{identity} ended {status}"
        );
    }
    let took = took.with_context(|| format!("faults: {log:#?}; ended: {:?}", replicas.ended))?;

    let reconciles = intervals(&probe, &replicas.gone)?;
    let overlaps = overlaps(&reconciles);
    ensure!(
        overlaps.is_empty(),
        "reconciled by two processes at once: {overlaps:#?}\nfaults: {log:#?}\n\
         killed or seen ended: {:?}; ended on their own: {:?}",
        replicas.gone,
        replicas.ended
    );
    let by = reconciles_by_replica(&reconciles);
    ensure!(
        by.len() >= 2,
        "leadership moved between processes: {by:?}; faults: {log:#?}"
    );
    println!(
        "seed {seed}: {} parents, faults {log:?}; killed or ended {:?}, ended on their own {:?}; \
         reconciles by replica {by:?}; all children {took:?} after the last round",
        all.len(),
        replicas.gone.keys().collect::<Vec<_>>(),
        replicas.ended
    );
    Ok(())
}
