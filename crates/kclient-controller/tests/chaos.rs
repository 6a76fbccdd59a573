//! The reconcile runtime under chaos (issue 46): two replicas of a Manager under leader
//! election against kclient-fake over real HTTP, parents (ConfigMaps) each owning a child (a
//! Secret), and a seeded sequence of faults — dropped, hung and stalled watches, compactions
//! (410), 5xx and 429 storms, slow answers, replicas stopped and replaced (a leader change each
//! time the leader goes) — while parents change. Reconciles panic, or never return (cut by the
//! reconcile timeout), on the first try of some parents' versions.
//!
//! Checked after every round: every parent's child and status converge (no panicking or
//! timed-out reconcile is lost: each is retried); throughout: no key reconciled by two
//! replicas at once. At the end: the caches hold exactly the objects of the server.
//! `KCLIENT_CHAOS_PARENTS`, `KCLIENT_CHAOS_ROUNDS` and `KCLIENT_CHAOS_SEEDS` (comma-separated)
//! run it longer.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kclient_cache::{Lister, SharedInformerFactory};
use kclient_controller::owner::{controller_of, set_controller_reference};
use kclient_controller::{
    Action, Controller, ControllerConfig, Manager, ManagerError, ReconcileContext, Reconciler,
};
use kclient_core::labels::Selector;
use kclient_core::{
    ApiStatus, CancellationToken, CreateOptions, GroupResource, Patch, PatchOptions, ResourceExt,
};
use kclient_fake::{Failure, FakeApiServer};
use kclient_testkit::SeededRng;
use kclient_tools::leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaseLock};
use kclient_typed::Clientset;
use serde_json::json;

use crate::support::{clientset, config_map, eventually, Probe};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const NAMESPACE: &str = "default";
/// The kinds of fault a round may bring.
const FAULT_KINDS: u64 = 8;
/// How long a round may take to converge.
const CONVERGE: Duration = Duration::from_secs(90);

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What the reconcilers of every replica count.
#[derive(Default)]
struct Tally {
    panicked: AtomicUsize,
    hung: AtomicUsize,
}

/// Keeps a Secret `<parent>` owned by each parent ConfigMap `p-*`, its annotation `v` equal to
/// the parent's `data.v`, then writes `v` into the parent's annotation `observed`. The first
/// try of some versions panics or never returns.
struct Mirror {
    clientset: Clientset,
    secrets: Lister<Secret>,
    probe: Arc<Probe>,
    tally: Arc<Tally>,
    seed: u64,
}

/// A parent's `data.v`.
fn v_of(cm: &ConfigMap) -> String {
    cm.data
        .as_ref()
        .and_then(|d| d.get("v"))
        .cloned()
        .unwrap_or_default()
}

impl Reconciler<ConfigMap> for Mirror {
    type Error = BoxError;

    async fn reconcile(
        &self,
        parent: Arc<ConfigMap>,
        ctx: &ReconcileContext,
    ) -> Result<Action, BoxError> {
        let name = parent.name_any().to_owned();
        if !name.starts_with("p-") {
            return Ok(Action::await_change());
        }
        let _running = self
            .probe
            .begin(ctx.key(), ctx.retries(), parent.resource_version());
        let v = v_of(&parent);
        if ctx.retries() == 0 {
            let mut hasher = DefaultHasher::new();
            (self.seed, &name, &v).hash(&mut hasher);
            match hasher.finish() % 40 {
                0 => {
                    self.tally.panicked.fetch_add(1, Ordering::SeqCst);
                    panic!("chaos: the reconcile of {name} at v={v} panics");
                }
                1 => {
                    self.tally.hung.fetch_add(1, Ordering::SeqCst);
                    std::future::pending::<()>().await;
                }
                _ => {}
            }
        }
        let secrets = self.clientset.core_v1().secrets(NAMESPACE);
        match self.secrets.namespaced(NAMESPACE).get(&name) {
            Ok(child) if child.annotations().get("v") == Some(&v) => {}
            Ok(child) => {
                let patch = Patch::Merge(json!({"metadata": {"annotations": {"v": v}}}));
                secrets
                    .patch(child.name_any(), &patch, &PatchOptions::default())
                    .await?;
            }
            Err(e) if e.is_not_found() => {
                let mut child = Secret::default();
                child.metadata.namespace = Some(NAMESPACE.into());
                child.metadata.name = Some(name.clone());
                child.metadata.annotations = Some([("v".to_string(), v.clone())].into());
                set_controller_reference(parent.as_ref(), &mut child)?;
                match secrets.create(&child, &CreateOptions::default()).await {
                    // Made by a reconcile whose answer was lost: the cache will show it.
                    Err(e) if e.is_already_exists() => {}
                    other => drop(other?),
                }
            }
            Err(e) => return Err(e.into()),
        }
        if parent.annotations().get("observed") != Some(&v) {
            let patch = Patch::Merge(json!({"metadata": {"annotations": {"observed": v}}}));
            self.clientset
                .core_v1()
                .config_maps(NAMESPACE)
                .patch(&name, &patch, &PatchOptions::default())
                .await?;
        }
        Ok(Action::await_change())
    }
}

/// One replica: a Manager of the mirror controller under leader election on one Lease.
struct Replica {
    identity: String,
    shutdown: CancellationToken,
    run: tokio::task::JoinHandle<Result<(), ManagerError>>,
    factory: SharedInformerFactory<Clientset>,
    parents: Lister<ConfigMap>,
    children: Lister<Secret>,
}

impl Replica {
    fn start(
        server: &FakeApiServer,
        identity: String,
        probe: &Arc<Probe>,
        tally: &Arc<Tally>,
        seed: u64,
    ) -> Result<Replica, BoxError> {
        let clientset = clientset(server);
        let factory = SharedInformerFactory::new(clientset.clone(), Duration::ZERO);
        let lease = LeaseLock::from_clientset(&clientset, NAMESPACE, "chaos", identity.clone());
        let mut manager = Manager::builder(&factory)
            .leader_election(LeaderElectionConfig {
                lease_duration: Duration::from_secs(3),
                renew_deadline: Duration::from_secs(2),
                retry_period: Duration::from_millis(250),
                release_on_cancel: true,
                name: "chaos".into(),
                ..LeaderElectionConfig::new(lease, LeaderCallbacks::new())
            })
            .graceful_shutdown_timeout(Duration::from_secs(20))
            .build()?;
        let controller = Controller::<ConfigMap, _>::new("mirror", &factory)
            .owns::<Secret>()
            .with_config(
                ControllerConfig {
                    workers: 4,
                    ..ControllerConfig::default()
                }
                .reconcile_timeout(Duration::from_secs(1)),
            );
        let mirror = Mirror {
            clientset,
            secrets: factory.lister::<Secret>(),
            probe: Arc::clone(probe),
            tally: Arc::clone(tally),
            seed,
        };
        manager.add(controller, mirror);
        let shutdown = CancellationToken::new();
        let run = tokio::spawn(manager.run(shutdown.clone()));
        Ok(Replica {
            identity,
            shutdown,
            run,
            parents: factory.lister::<ConfigMap>(),
            children: factory.lister::<Secret>(),
            factory,
        })
    }

    /// Stops it (gracefully: its reconciles finish, its lease is released) and checks how
    /// its run ended: by the stop, or earlier by a lost lease.
    async fn stop(self) -> Result<(), BoxError> {
        self.shutdown.cancel();
        let outcome = tokio::time::timeout(Duration::from_secs(60), self.run)
            .await
            .map_err(|_| format!("{}: the Manager did not stop within 60 s", self.identity))??;
        self.factory.shutdown().await;
        match outcome {
            Ok(()) | Err(ManagerError::LeaderElectionLost) => Ok(()),
            Err(e) => Err(format!("{}: {e}", self.identity).into()),
        }
    }
}

/// The parents whose child or status is not `data.v` yet, read from the server.
fn unconverged(server: &FakeApiServer) -> Vec<String> {
    let children: HashMap<String, Secret> = server
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
            let child_ok = children.get(p.name_any()).is_some_and(|child| {
                child.annotations().get("v") == Some(&v)
                    && controller_of(child).is_some_and(|owner| Some(owner.uid.as_str()) == p.uid())
            });
            p.annotations().get("observed") != Some(&v) || !child_ok
        })
        .map(|p| p.name_any().to_owned())
        .collect()
}

/// Keeps the reconcilers' planned panics out of the output (the runtime logs each one).
fn quiet_planned_panics() {
    static QUIET: std::sync::Once = std::sync::Once::new();
    QUIET.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info.payload().downcast_ref::<String>().map(String::as_str);
            if !message.is_some_and(|m| m.starts_with("chaos:")) {
                previous(info);
            }
        }));
    });
}

async fn chaos(seed: u64, parents: usize, rounds: usize) -> Result<(), BoxError> {
    quiet_planned_panics();
    let server = FakeApiServer::builder().start().await?;
    let config_maps = GroupResource::new("", "configmaps");
    for i in 0..parents {
        server.seed_typed(&config_map(NAMESPACE, &format!("p-{i}"), &[("v", "0")]))?;
    }
    let probe = Arc::new(Probe::default());
    let tally = Arc::new(Tally::default());
    let mut rng = SeededRng::new(seed);
    let mut started = 0;
    let mut start = |rng: &mut SeededRng| {
        started += 1;
        let identity = format!("replica-{started}-{}", rng.below(1000));
        Replica::start(&server, identity, &probe, &tally, seed)
    };
    let mut replicas = vec![start(&mut rng)?, start(&mut rng)?];
    assert!(
        eventually(CONVERGE, || unconverged(&server).is_empty()).await,
        "seed {seed}: the first sync did not converge: {:?}",
        unconverged(&server)
    );

    let faults = server.faults();
    let mut log = Vec::new();
    // Every kind of fault once in each eight rounds, in a seeded order.
    let mut kinds = Vec::new();
    for round in 1..=rounds {
        if kinds.is_empty() {
            kinds = (0..FAULT_KINDS).collect();
            rng.shuffle(&mut kinds);
        }
        let fault = match kinds.pop().unwrap_or_default() {
            0 => {
                faults.drop_watches();
                "dropped watches".to_owned()
            }
            1 => {
                faults.compact_history();
                "a compaction (410)".to_owned()
            }
            2 => {
                let status = [500, 503][rng.below(2) as usize];
                let n = 5 + rng.below(30) as usize;
                faults.fail_next(n, Failure::status(status).message("chaos"));
                format!("{n} answers of {status}")
            }
            3 => {
                let n = 5 + rng.below(30) as usize;
                faults.fail_next(n, Failure::status(429).retry_after(1).message("chaos"));
                format!("{n} answers of 429 with Retry-After: 1")
            }
            4 => {
                let ms = 5 + rng.below(40);
                faults.set_latency(Duration::from_millis(ms));
                format!("{ms} ms of latency on every answer")
            }
            5 => {
                // A proxy that stops forwarding, then drops the connections.
                faults.hang_watches();
                "hung watches, then dropped".to_owned()
            }
            6 => {
                faults.stall_watches();
                "stalled watches, resumed after the changes".to_owned()
            }
            _ => {
                let which = rng.below(replicas.len() as u64) as usize;
                let stopped = replicas.remove(which);
                let identity = stopped.identity.clone();
                stopped.stop().await?;
                replicas.push(start(&mut rng)?);
                format!("{identity} stopped and replaced")
            }
        };
        log.push(fault.clone());
        let mut changed = 0;
        for i in 0..parents {
            if rng.below(4) == 0 {
                server.modify(&config_maps, NAMESPACE, &format!("p-{i}"), |cm| {
                    cm["data"]["v"] = json!(round.to_string());
                })?;
                changed += 1;
            }
        }
        if fault.starts_with("hung") {
            faults.drop_watches();
        }
        faults.resume_watches();
        // A replica whose lease was lost (a storm can outlast its renew deadline) ends its run:
        // replaced, as its Pod would be restarted.
        for replica in &mut replicas {
            if replica.run.is_finished() {
                let fresh = start(&mut rng)?;
                let ended = std::mem::replace(replica, fresh);
                log.push(format!("{} ended its run (replaced)", ended.identity));
                ended.stop().await?;
            }
        }
        let converged = eventually(CONVERGE, || unconverged(&server).is_empty()).await;
        faults.set_latency(Duration::ZERO);
        faults.clear_failures();
        assert!(
            converged,
            "seed {seed}, round {round} ({fault}, {changed} parents changed): not converged: \
             {:?}; the rounds: {log:?}",
            unconverged(&server)
        );
        assert!(
            probe.overlaps().is_empty(),
            "seed {seed}, round {round}: {:?}",
            probe.overlaps()
        );
    }

    // Every replica's caches hold what the server holds, no more.
    let on_server = (
        server.list::<ConfigMap>(Some(NAMESPACE)).len(),
        server.list::<Secret>(Some(NAMESPACE)).len(),
    );
    for replica in &replicas {
        let caches = || {
            (
                replica
                    .parents
                    .namespaced(NAMESPACE)
                    .list(&Selector::everything())
                    .len(),
                replica
                    .children
                    .namespaced(NAMESPACE)
                    .list(&Selector::everything())
                    .len(),
            ) == on_server
        };
        assert!(
            eventually(CONVERGE, caches).await,
            "seed {seed}: {}'s caches hold other objects than the server",
            replica.identity
        );
    }
    for replica in replicas {
        replica.stop().await?;
    }
    assert!(probe.overlaps().is_empty(), "{:?}", probe.overlaps());
    let (panicked, hung) = (
        tally.panicked.load(Ordering::SeqCst),
        tally.hung.load(Ordering::SeqCst),
    );
    assert!(
        panicked > 0 && hung > 0,
        "seed {seed}: the chaos had reconciles panic ({panicked}) and hang ({hung})"
    );
    eprintln!(
        "chaos seed {seed}: {parents} parents, {rounds} rounds ({log:?}): {} reconciles, \
         {panicked} panicked and {hung} hung on their first try, all converged",
        probe.total()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_converges_through_seeded_chaos_and_never_reconciles_a_key_twice_at_once(
) -> Result<(), BoxError> {
    let parents = env_or("KCLIENT_CHAOS_PARENTS", 400);
    let rounds = env_or("KCLIENT_CHAOS_ROUNDS", 8);
    let seeds: Vec<u64> = std::env::var("KCLIENT_CHAOS_SEEDS")
        .ok()
        .map(|s| s.split(',').filter_map(|v| v.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![46, 7]);
    for seed in seeds {
        chaos(seed, parents, rounds).await?;
    }
    Ok(())
}
