//! Leader election end to end, on every available target (the real kube-apiserver when
//! `KCLIENT_E2E_KUBECONFIG` is set, and always a fresh kclient-fake), in real time with short
//! durations (lease 3 s, renew 2 s, retry 0.5 s): two candidates on one Lease, one leads;
//! the Lease as kubectl (the independent client) sees it names it, with no transition yet;
//! the leader leaves releasing the Lease, the other leads and the transition is counted;
//! never both at once.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use kclient_e2e::scenarios::Namespace;
use kclient_e2e::Target;
use kclient_tools::leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock,
};
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
