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

mod replicas;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kclient_cache::SharedInformerFactory;
use kclient_controller::sharded::{run_sharded, ShardedOptions};
use kclient_controller::{shutdown_on_signal, Controller, Manager, ManagerError};
use kclient_e2e::scenarios::Namespace;
use kclient_e2e::Target;
use kclient_fake::FakeApiServer;
use kclient_tools::sharding::{ShardRing, ShardRingConfig};
use kclient_typed::Clientset;

use replicas::{
    clientset_of, create_parents, intervals, micros, overlaps, reconciles_by_replica,
    serve_if_replica, start, terminate, until_children, ReplicaSpec,
};

const LEASE: Duration = Duration::from_secs(4);

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
async fn replica(spec: ReplicaSpec) -> Result<()> {
    let clientset = clientset_of(&spec.kubeconfig)?;
    let namespace = spec.namespace.as_str();
    let mut ring_config = ShardRingConfig::new(namespace, "proof", &spec.identity);
    ring_config.lease_duration = LEASE;
    ring_config.renew_deadline = Duration::from_secs(3);
    ring_config.retry_period = Duration::from_millis(500);
    let ring = Arc::new(ShardRing::new(&clientset, ring_config)?);
    let shutdown = shutdown_on_signal()?;
    let parent = spec.parent_reconciler()?;
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
        let controller = Controller::<ConfigMap, _>::new("proof", &factory).owns::<Secret>();
        manager.add(controller, parent.clone());
        Ok::<_, ManagerError>(manager)
    })
    .await?;
    Ok(())
}

/// The replica, when this process is one; nothing otherwise.
#[test]
fn replica_process() {
    serve_if_replica(replica);
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
    let reconciles = intervals(probe, &BTreeMap::from([("b".to_owned(), death)]))?;
    let overlaps = overlaps(&reconciles);
    ensure!(
        overlaps.is_empty(),
        "reconciled by two processes at once: {overlaps:#?}"
    );
    let by = reconciles_by_replica(&reconciles);
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
