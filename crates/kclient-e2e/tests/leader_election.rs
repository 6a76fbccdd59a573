//! Leader election end to end, on every available target (the real kube-apiserver when
//! `KCLIENT_E2E_KUBECONFIG` is set, and always a fresh kclient-fake), in real time with short
//! durations (lease 3 s, renew 2 s, retry 0.5 s): two candidates on one Lease, one leads;
//! the Lease as kubectl (the independent client) sees it names it, with no transition yet;
//! the leader leaves releasing the Lease, the other leads and the transition is counted;
//! never both at once. Then two Managers with a graceful leader transition (KEP-5366): the
//! leader, its lease taken over, follows without ending its run, and leads on when the other
//! leaves, reconciling what was queued meanwhile.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::SharedInformerFactory;
use kclient_controller::{Action, Controller, Manager, ManagerError, ReconcileContext, Reconciler};
use kclient_core::{CreateOptions, ResourceExt, UpdateOptions};
use kclient_e2e::scenarios::Namespace;
use kclient_e2e::Target;
use kclient_tools::leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock,
};
use kclient_tools::retry::{retry_on_conflict, DEFAULT_RETRY};
use kclient_typed::Clientset;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const LEASE: &str = "e2e-election";

/// Who believes it leads, and whether two ever did at once.
#[derive(Default)]
struct Witness {
    leader: Mutex<Option<String>>,
    overlaps: Mutex<Vec<String>>,
}

impl Witness {
    fn begin(&self, identity: &str) {
        let mut leader = self.leader.lock();
        if let Some(other) = leader.as_ref() {
            self.overlaps
                .lock()
                .push(format!("{identity} began leading while {other} led"));
        }
        *leader = Some(identity.to_owned());
    }

    fn end(&self, identity: &str) {
        let mut leader = self.leader.lock();
        if leader.as_deref() == Some(identity) {
            *leader = None;
        }
    }
}

struct Candidate {
    identity: String,
    cancel: CancellationToken,
    run: JoinHandle<()>,
}

fn candidate(
    clientset: &Clientset,
    namespace: &str,
    identity: &str,
    witness: &Arc<Witness>,
) -> Result<Candidate> {
    let lock = LeaseLock::from_clientset(clientset, namespace, LEASE, identity);
    let callbacks = LeaderCallbacks::new()
        .on_started_leading({
            let (witness, identity) = (Arc::clone(witness), identity.to_owned());
            move |token| {
                let (witness, identity) = (Arc::clone(&witness), identity.clone());
                async move {
                    witness.begin(&identity);
                    token.cancelled().await;
                    witness.end(&identity);
                }
            }
        })
        .on_stopped_leading(|| {});
    let elector = LeaderElector::new(LeaderElectionConfig {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(500),
        release_on_cancel: true,
        name: "e2e".into(),
        ..LeaderElectionConfig::new(lock, callbacks)
    })?;
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let cancel = cancel.clone();
        async move { elector.run(cancel).await }
    });
    Ok(Candidate {
        identity: identity.to_owned(),
        cancel,
        run,
    })
}

/// Waits (at most `limit`) until `who` leads, or anyone when `None`; who leads.
async fn until_leader(witness: &Witness, who: Option<&str>, limit: Duration) -> Result<String> {
    let started = tokio::time::Instant::now();
    loop {
        let leader = witness.leader.lock().clone();
        match (leader, who) {
            (Some(leader), None) => return Ok(leader),
            (Some(leader), Some(who)) if leader == who => return Ok(leader),
            _ if started.elapsed() > limit => bail!("{who:?} did not lead within {limit:?}"),
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

/// The Lease's holder, transitions and duration as the independent client sees them
/// (`kubectl get lease -o json`), or through the typed client when there is no kubectl.
async fn lease_as_seen(
    target: &Target,
    clientset: &Clientset,
    namespace: &str,
) -> Result<(String, i64, i64)> {
    let lease: Value = match target
        .kubectl(&["get", "lease", LEASE, "-n", namespace, "-o", "json"])
        .await
    {
        Some(output) => serde_json::from_str(&output?).context("kubectl's lease JSON")?,
        None => serde_json::to_value(
            clientset
                .coordination_v1()
                .leases(namespace)
                .get(LEASE)
                .await?,
        )?,
    };
    let spec = &lease["spec"];
    Ok((
        spec["holderIdentity"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        spec["leaseTransitions"].as_i64().unwrap_or_default(),
        spec["leaseDurationSeconds"].as_i64().unwrap_or_default(),
    ))
}

async fn election_on(target: &Target) -> Result<()> {
    let ns = Namespace::create(&target.client()?, "leader-election").await?;
    let outcome = run(target, &ns.name).await;
    ns.delete().await?;
    outcome
}

async fn run(target: &Target, namespace: &str) -> Result<()> {
    let clientset = Clientset::new(target.config.clone())?;
    let witness = Arc::new(Witness::default());
    let mut candidates = vec![
        candidate(&clientset, namespace, "a", &witness)?,
        candidate(&clientset, namespace, "b", &witness)?,
    ];
    let first = until_leader(&witness, None, Duration::from_secs(20)).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(
        witness.leader.lock().as_deref() == Some(first.as_str()),
        "the leader changed without a reason"
    );
    let seen = lease_as_seen(target, &clientset, namespace).await?;
    ensure!(
        seen == (first.clone(), 0, 3),
        "the Lease as seen: {seen:?}, leader {first}"
    );

    let leaving = candidates.iter().position(|c| c.identity == first).unwrap();
    let leaving = candidates.remove(leaving);
    leaving.cancel.cancel();
    leaving.run.await?;
    let second = candidates[0].identity.clone();
    // The Lease was released: the other leads at its next attempt, within 1.1 s.
    until_leader(&witness, Some(&second), Duration::from_secs(5)).await?;
    let seen = lease_as_seen(target, &clientset, namespace).await?;
    ensure!(
        seen == (second.clone(), 1, 3),
        "the Lease as seen: {seen:?}, leader {second}"
    );

    let last = candidates.remove(0);
    last.cancel.cancel();
    last.run.await?;
    let seen = lease_as_seen(target, &clientset, namespace).await?;
    ensure!(
        seen == (String::new(), 1, 1),
        "released at the end: {seen:?}"
    );
    let overlaps = witness.overlaps.lock().clone();
    ensure!(overlaps.is_empty(), "two leaders at once: {overlaps:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_candidates_one_leader_and_a_handover_on_release() -> Result<()> {
    let targets = Target::available().await?;
    let mut failures = Vec::new();
    for target in &targets {
        match election_on(target).await {
            Ok(()) => eprintln!("kclient-e2e: leader election against {}: ok", target.kind),
            Err(e) => failures.push(format!("against {}: {e:#}", target.kind)),
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("; "));
    Ok(())
}

/// Which replica reconciled which of the test's ConfigMaps (`cm-*`), in order.
type Reconciled = Arc<Mutex<Vec<(String, String)>>>;

struct Recording {
    identity: String,
    reconciled: Reconciled,
}

impl Reconciler<ConfigMap> for Recording {
    type Error = std::convert::Infallible;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        _ctx: &ReconcileContext,
    ) -> Result<Action, Self::Error> {
        let name = cm.name_any();
        if name.starts_with("cm-") {
            self.reconciled
                .lock()
                .push((name.to_owned(), self.identity.clone()));
        }
        Ok(Action::await_change())
    }
}

struct Replica {
    stop: CancellationToken,
    run: JoinHandle<Result<(), ManagerError>>,
    factory: SharedInformerFactory<Clientset>,
}

/// A Manager of one ConfigMap controller in `namespace`, under the Lease as `identity`,
/// following after a lost lease.
fn replica(
    clientset: &Clientset,
    namespace: &str,
    identity: &str,
    reconciled: &Reconciled,
) -> Result<Replica> {
    let factory = SharedInformerFactory::builder(clientset.clone())
        .namespace(namespace)
        .build();
    let lock = LeaseLock::from_clientset(clientset, namespace, LEASE, identity);
    let mut manager = Manager::builder(&factory)
        .leader_election(LeaderElectionConfig {
            lease_duration: Duration::from_secs(3),
            renew_deadline: Duration::from_secs(2),
            retry_period: Duration::from_millis(500),
            release_on_cancel: true,
            name: "e2e".into(),
            ..LeaderElectionConfig::new(lock, LeaderCallbacks::new())
        })
        .graceful_leader_transition(true)
        .build()?;
    manager.add(
        Controller::<ConfigMap, _>::new("e2e-transition", &factory),
        Recording {
            identity: identity.to_owned(),
            reconciled: Arc::clone(reconciled),
        },
    );
    let stop = CancellationToken::new();
    let run = tokio::spawn(manager.run(stop.clone()));
    Ok(Replica { stop, run, factory })
}

/// Waits (at most 20 s) until `identity` reconciled ConfigMap `name`.
async fn until_reconciled(reconciled: &Reconciled, name: &str, identity: &str) -> Result<()> {
    let started = tokio::time::Instant::now();
    let wanted = (name.to_owned(), identity.to_owned());
    while !reconciled.lock().contains(&wanted) {
        if started.elapsed() > Duration::from_secs(20) {
            bail!(
                "{identity} did not reconcile {name}: {:?}",
                reconciled.lock()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

async fn transition_on(target: &Target) -> Result<()> {
    let ns = Namespace::create(&target.client()?, "leader-transition").await?;
    let outcome = transition(target, &ns.name).await;
    ns.delete().await?;
    outcome
}

async fn transition(target: &Target, namespace: &str) -> Result<()> {
    let clientset = Clientset::new(target.config.clone())?;
    let config_maps = clientset.core_v1().config_maps(namespace);
    let create = |name: &str| {
        let cm = ConfigMap {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.to_owned()),
                ..Default::default()
            },
            ..Default::default()
        };
        let config_maps = config_maps.clone();
        async move { config_maps.create(&cm, &CreateOptions::default()).await }
    };
    let reconciled: Reconciled = Arc::default();
    create("cm-one").await?;
    let a = replica(&clientset, namespace, "a", &reconciled)?;
    until_reconciled(&reconciled, "cm-one", "a").await?;
    let b = replica(&clientset, namespace, "b", &reconciled)?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(
        !reconciled.lock().contains(&("cm-one".into(), "b".into())),
        "a follower reconciled: {:?}",
        reconciled.lock()
    );

    // The Lease is written over to name "b" (as after a partition): "a" loses it and follows,
    // "b" leads and reconciles what it queued while following.
    // "a" renews every 500 ms: a renewal between the read and the write is a conflict, read
    // again (as every read-modify-write of a Lease its holder renews must).
    let leases = clientset.coordination_v1().leases(namespace);
    retry_on_conflict(DEFAULT_RETRY, || async {
        let mut lease = leases.get(LEASE).await?;
        lease
            .spec
            .get_or_insert_with(Default::default)
            .holder_identity = Some("b".into());
        leases.update(&lease, &UpdateOptions::default()).await
    })
    .await?;
    until_reconciled(&reconciled, "cm-one", "b").await?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    ensure!(
        !a.run.is_finished(),
        "the replica that lost its lease ended its run"
    );
    create("cm-two").await?;
    until_reconciled(&reconciled, "cm-two", "b").await?;

    // "b" leaves, releasing: "a" leads on, reconciling what it queued meanwhile, and after.
    b.stop.cancel();
    b.run.await?.context("b's run")?;
    b.factory.shutdown().await;
    until_reconciled(&reconciled, "cm-two", "a").await?;
    create("cm-three").await?;
    until_reconciled(&reconciled, "cm-three", "a").await?;
    let seen = lease_as_seen(target, &clientset, namespace).await?;
    ensure!(seen.0 == "a", "the Lease as seen: {seen:?}");

    a.stop.cancel();
    a.run.await?.context("a's run")?;
    a.factory.shutdown().await;
    let order = reconciled.lock().clone();
    let expected: Vec<(String, String)> = [
        ("cm-one", "a"),
        ("cm-one", "b"),
        ("cm-two", "b"),
        ("cm-two", "a"),
        ("cm-three", "a"),
    ]
    .iter()
    .map(|(n, i)| ((*n).to_owned(), (*i).to_owned()))
    .collect();
    ensure!(order == expected, "reconciled: {order:?}");
    let seen = lease_as_seen(target, &clientset, namespace).await?;
    ensure!(seen.0.is_empty(), "released at the end: {seen:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_leader_transition_follows_and_leads_on_on_both_servers() -> Result<()> {
    let targets = Target::available().await?;
    let mut failures = Vec::new();
    for target in &targets {
        match transition_on(target).await {
            Ok(()) => eprintln!(
                "kclient-e2e: graceful leader transition against {}: ok",
                target.kind
            ),
            Err(e) => failures.push(format!("against {}: {e:#}", target.kind)),
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("; "));
    Ok(())
}
