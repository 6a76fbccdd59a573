//! A leader-elected controller (client-go's `examples/leader-election`): replicas of one
//! program stand for election on a Lease, and only the leader runs the controller. The
//! controller writes its identity into `data.leader` of every ConfigMap labelled
//! `leader-election-example=managed`, so leadership can be watched moving:
//!
//! ```text
//! kubectl get configmaps -l leader-election-example=managed -o custom-columns=NAME:.metadata.name,LEADER:.data.leader
//! kubectl get lease leader-election-example -o jsonpath='{.spec.holderIdentity} {.spec.leaseTransitions}'
//! ```
//!
//! The leader's work (an informer, a queue and a worker) runs under the leader token: when
//! leadership ends, it stops at once. Right before each write it asks the token whether
//! this replica still leads (`LeaderToken::is_leader`, which reads the clock, so a replica
//! that was frozen past its renew deadline does not write before its elector has even
//! run). That narrows the window in which a deposed leader could write, it does not close
//! it: a pause between the check and the write can still let it land late. The write is an
//! update carrying the `resourceVersion` read, so a stale one fails with a conflict instead
//! of overwriting the new leader's.
//!
//! ```text
//! # kclient-fake in-process, scripted: replicas a and b, a leads, a crashes, b takes over
//! cargo run -p kclient --features fake,tools --example leader_election
//!
//! # a cluster: one replica per terminal. Ctrl-C releases the Lease, so the other replica
//! # takes over within a few seconds; a replica killed outright (kill -9) releases nothing,
//! # and the other takes over once the lease duration (15 s) has passed.
//! cargo run -p kclient --features fake,tools --example leader_election -- --kubeconfig ~/.kube/config --id a
//! cargo run -p kclient --features fake,tools --example leader_election -- --kubeconfig ~/.kube/config --id b
//! ```
//!
//! Options: `--namespace NS` (default `default`), `--lease NAME` (default
//! `leader-election-example`).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kclient::cache::Lister;
use kclient::core::{CancellationToken, CreateOptions, UpdateOptions};
use kclient::fake::FakeApiServer;
use kclient::prelude::*;
use kclient::rest::KubeconfigOptions;
use kclient::tools::leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaderToken, LeaseLock, Lock,
    DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD,
};
use kclient::workqueue::WorkQueue;
use serde_json::json;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The label that puts a ConfigMap under the controller.
const MANAGED: (&str, &str) = ("leader-election-example", "managed");
/// The Lease's default name.
const LEASE: &str = "leader-election-example";

/// The election's durations.
#[derive(Debug, Clone, Copy)]
struct Timing {
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
}

/// client-go's defaults, for a cluster.
const DEFAULT_TIMING: Timing = Timing {
    lease_duration: DEFAULT_LEASE_DURATION,
    renew_deadline: DEFAULT_RENEW_DEADLINE,
    retry_period: DEFAULT_RETRY_PERIOD,
};

/// Short durations for the scripted scenario, so that a failover takes seconds.
const QUICK_TIMING: Timing = Timing {
    lease_duration: Duration::from_secs(3),
    renew_deadline: Duration::from_secs(2),
    retry_period: Duration::from_millis(500),
};

/// One replica: stands for election on Lease `namespace/lease` until `cancel` fires, running
/// the controller while it leads, and releasing the Lease when it leaves.
async fn replica(
    clientset: Clientset,
    namespace: String,
    lease: String,
    identity: String,
    timing: Timing,
    cancel: CancellationToken,
) -> Result<(), Error> {
    let lock = LeaseLock::from_clientset(&clientset, &namespace, lease, identity.clone());
    let lease_name = lock.describe();
    let callbacks = LeaderCallbacks::new()
        .on_started_leading({
            let (clientset, namespace, identity) = (clientset, namespace, identity.clone());
            move |token| {
                controller(
                    clientset.clone(),
                    namespace.clone(),
                    identity.clone(),
                    token,
                )
            }
        })
        .on_stopped_leading({
            let identity = identity.clone();
            move || println!("[{identity}] left the election")
        })
        .on_new_leader({
            let identity = identity.clone();
            move |leader| match leader {
                "" => println!("[{identity}] the lease was released"),
                leader if leader == identity => println!("[{identity}] I lead"),
                leader => println!("[{identity}] {leader} leads"),
            }
        });
    let elector = LeaderElector::new(LeaderElectionConfig {
        lease_duration: timing.lease_duration,
        renew_deadline: timing.renew_deadline,
        retry_period: timing.retry_period,
        release_on_cancel: true,
        name: "leader-election-example".into(),
        ..LeaderElectionConfig::new(lock, callbacks)
    })?;
    println!("[{identity}] standing for election on {lease_name}");
    elector.run(cancel).await;
    Ok(())
}

/// The leader's work: a ConfigMap informer, a queue and a worker writing this replica's
/// identity into the managed ConfigMaps, until the leader token fires.
async fn controller(clientset: Clientset, namespace: String, identity: String, token: LeaderToken) {
    println!("[{identity}] starting the controller");
    let factory = SharedInformerFactory::builder(clientset.clone())
        .namespace(namespace.as_str())
        .build();
    let informer = factory.core_v1().config_maps().informer();
    let lister = factory.core_v1().config_maps().lister();
    let queue = WorkQueue::<String>::new();
    let sink = queue.clone();
    let registered = informer.add_event_handler(EnqueueObjectKey::new(move |key| sink.add(key)));
    if let Err(error) = registered {
        println!("[{identity}] cannot watch ConfigMaps: {error}");
        return;
    }
    factory.start(token.cancellation_token());
    let synced = factory
        .wait_for_cache_sync(token.cancellation_token())
        .await;
    if synced.all_synced() {
        let worker = async {
            while let Some(key) = queue.get().await {
                // Only the leader writes: ask the token right before each write.
                if token.is_leader() {
                    let stamped = stamp(&clientset, &lister, &key, &identity).await;
                    if let Err(error) = stamped {
                        println!("[{identity}] {key}: {error}; retrying");
                        queue.add(key.clone());
                    }
                }
                queue.done(&key);
            }
        };
        tokio::select! {
            () = worker => {}
            () = token.cancelled() => {}
        }
    }
    queue.shut_down();
    factory.shutdown().await;
    println!("[{identity}] stopped the controller");
}

/// Writes `identity` into `data.leader` of the ConfigMap `key` (`namespace/name`), if it is
/// managed and says otherwise.
async fn stamp(
    clientset: &Clientset,
    lister: &Lister<ConfigMap>,
    key: &str,
    identity: &str,
) -> Result<(), Error> {
    let (namespace, name) = kclient::core::split_meta_namespace_key(key)?;
    let Ok(cm) = lister.namespaced(namespace).get(name) else {
        return Ok(()); // deleted meanwhile
    };
    let managed = cm.labels().get(MANAGED.0).map(String::as_str) == Some(MANAGED.1);
    let leader = cm.data.as_ref().and_then(|d| d.get("leader"));
    if !managed || leader.map(String::as_str) == Some(identity) {
        return Ok(());
    }
    let mut updated = ConfigMap::clone(&cm);
    updated
        .data
        .get_or_insert_with(BTreeMap::new)
        .insert("leader".into(), identity.into());
    clientset
        .core_v1()
        .config_maps(namespace)
        .update(&updated, &UpdateOptions::default())
        .await?;
    println!("[{identity}] {name}: leader = {identity}");
    Ok(())
}

/// `data.leader` of ConfigMap `default/name`, once it is `want` (polled for at most `limit`).
async fn until_stamped(
    clientset: &Clientset,
    name: &str,
    want: &str,
    limit: Duration,
) -> Result<Duration, Error> {
    let started = tokio::time::Instant::now();
    let config_maps = clientset.core_v1().config_maps("default");
    while started.elapsed() < limit {
        let cm = config_maps.get(name).await?;
        if cm
            .data
            .as_ref()
            .and_then(|d| d.get("leader"))
            .map(String::as_str)
            == Some(want)
        {
            return Ok(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!("{name} never said leader = {want} within {limit:?}").into())
}

fn managed_config_map(name: &str) -> Result<ConfigMap, Error> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {MANAGED.0: MANAGED.1}},
        "data": {"purpose": "watch the leader stamp me"}
    }))?)
}

/// What the scripted scenario saw.
#[derive(Debug)]
struct Outcome {
    /// Who stamped each ConfigMap, in order.
    stamps: Vec<(String, String)>,
    /// How long after replica `a` crashed `b` had stamped `settings`.
    failover: Duration,
    /// The Lease's holder and transitions at the end (after `b` left and released it).
    lease: (Option<String>, Option<i32>),
}

/// The scripted scenario against kclient-fake: replica `a` leads and stamps `settings`;
/// replica `b` joins; `a` crashes (no release); `b` takes over and stamps `settings` and a new
/// ConfigMap; `b` leaves, releasing the Lease.
async fn scenario(server: &FakeApiServer) -> Result<Outcome, Error> {
    let clientset = Clientset::new(server.config()?)?;
    let config_maps = clientset.core_v1().config_maps("default");
    config_maps
        .create(&managed_config_map("settings")?, &CreateOptions::default())
        .await?;
    let start = |identity: &str, cancel: &CancellationToken| {
        tokio::spawn(replica(
            clientset.clone(),
            "default".into(),
            LEASE.into(),
            identity.into(),
            QUICK_TIMING,
            cancel.clone(),
        ))
    };
    let (cancel_a, cancel_b) = (CancellationToken::new(), CancellationToken::new());
    let a = start("a", &cancel_a);
    let mut stamps = Vec::new();
    until_stamped(&clientset, "settings", "a", Duration::from_secs(10)).await?;
    stamps.push(("settings".to_string(), "a".to_string()));
    let b = start("b", &cancel_b);
    tokio::time::sleep(Duration::from_secs(1)).await;

    println!("[scenario] a crashes");
    a.abort();
    let failover = until_stamped(&clientset, "settings", "b", Duration::from_secs(15)).await?;
    stamps.push(("settings".to_string(), "b".to_string()));
    config_maps
        .create(
            &managed_config_map("more-settings")?,
            &CreateOptions::default(),
        )
        .await?;
    until_stamped(&clientset, "more-settings", "b", Duration::from_secs(10)).await?;
    stamps.push(("more-settings".to_string(), "b".to_string()));

    println!("[scenario] b leaves");
    cancel_b.cancel();
    b.await??;
    let spec = clientset
        .coordination_v1()
        .leases("default")
        .get(LEASE)
        .await?
        .spec
        .unwrap_or_default();
    Ok(Outcome {
        stamps,
        failover,
        lease: (spec.holder_identity, spec.lease_transitions),
    })
}

#[tokio::main]
async fn main() -> Result<(), ErrorReport> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    match flag("--kubeconfig") {
        Some(path) => {
            let config = Config::from_kubeconfig(&KubeconfigOptions {
                path: Some(path.into()),
                ..Default::default()
            })?;
            let identity =
                flag("--id").unwrap_or_else(|| format!("replica-{}", std::process::id()));
            let namespace = flag("--namespace").unwrap_or_else(|| "default".into());
            let lease = flag("--lease").unwrap_or_else(|| LEASE.into());
            let cancel = CancellationToken::new();
            tokio::spawn({
                let cancel = cancel.clone();
                async move {
                    let _ = tokio::signal::ctrl_c().await;
                    println!("Leaving (Ctrl-C)...");
                    cancel.cancel();
                }
            });
            println!("Until Ctrl-C.");
            let clientset = Clientset::new(config)?;
            replica(
                clientset,
                namespace,
                lease,
                identity,
                DEFAULT_TIMING,
                cancel,
            )
            .await?;
        }
        None => {
            let server = FakeApiServer::builder().start().await?;
            println!(
                "Started kclient-fake at {} (pass --kubeconfig for a cluster)",
                server.url()
            );
            let outcome = scenario(&server).await?;
            println!(
                "b took over {:?} after a crashed; stamps {:?}; the Lease at the end: holder {:?}, {:?} transitions",
                outcome.failover, outcome.stamps, outcome.lease.0, outcome.lease.1
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_other_replica_takes_over_when_the_leader_crashes() -> Result<(), Error> {
        let server = FakeApiServer::builder().start().await?;
        let outcome = scenario(&server).await?;
        let stamps: Vec<(&str, &str)> = outcome
            .stamps
            .iter()
            .map(|(cm, leader)| (cm.as_str(), leader.as_str()))
            .collect();
        assert_eq!(
            stamps,
            [("settings", "a"), ("settings", "b"), ("more-settings", "b")]
        );
        // b saw a's last renewal at most (1 + 1.2) × 0.5 s before the crash, and takes over
        // 3 s after it saw it, at its next attempt.
        assert!(
            outcome.failover <= Duration::from_millis(3000 + 2 * 1100 + 1000),
            "{:?}",
            outcome.failover
        );
        assert_eq!(
            outcome.lease,
            (Some(String::new()), Some(1)),
            "released by b"
        );
        Ok(())
    }
}
