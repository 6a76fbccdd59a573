//! Leader election on a real Lease, served over HTTP by kclient-fake, on tokio's paused clock
//! with client-go's default durations (15 s / 10 s / 2 s): several candidates in one process
//! and a witness of who believes it leads at each instant. One leader at a time; failover
//! after a lease duration when the leader stops renewing; handover at the next attempt after
//! a release; no split brain while the server is slower than the renew deadline or answers
//! with storms of `500`s.

use crate::election_support;

use std::sync::Arc;
use std::time::Duration;

use election_support::{until, Candidate, Witness};
use k8s_openapi::api::coordination::v1::Lease;
use kclient_fake::{Failure, FakeApiServer};
use kclient_rest::{Config, RestClient};
use kclient_tools::leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaseLock, DEFAULT_LEASE_DURATION,
    DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD, JITTER_FACTOR,
};
use kclient_typed::Clientset;
use tokio::time::{sleep, Instant};

const SECOND: Duration = Duration::from_secs(1);
const LEASE: Duration = DEFAULT_LEASE_DURATION;
const RENEW: Duration = DEFAULT_RENEW_DEADLINE;
const RETRY: Duration = DEFAULT_RETRY_PERIOD;
const LEASE_NAME: &str = "controller";

/// The longest wait between two acquire attempts: (1 + JITTER_FACTOR) × retry period.
fn longest_retry() -> Duration {
    RETRY.mul_f64(1.0 + JITTER_FACTOR)
}

/// A clientset without client-side rate limiting (its token bucket runs on the wall clock,
/// not tokio's paused one).
fn clientset(server: &FakeApiServer) -> Clientset {
    let mut config = Config::new(server.url());
    config.qps = None;
    Clientset::from_client(RestClient::new(config).unwrap())
}

struct Election {
    server: FakeApiServer,
    witness: Arc<Witness>,
    epoch: Instant,
}

impl Election {
    async fn new() -> Self {
        Self {
            server: FakeApiServer::builder().start().await.unwrap(),
            witness: Arc::default(),
            epoch: Instant::now(),
        }
    }

    /// A candidate with its own client, on Lease `default/controller`.
    fn candidate(&self, identity: &str, release_on_cancel: bool) -> Candidate<LeaseLock> {
        let lock =
            LeaseLock::from_clientset(&clientset(&self.server), "default", LEASE_NAME, identity);
        let config = LeaderElectionConfig {
            release_on_cancel,
            name: "test".into(),
            ..LeaderElectionConfig::new(lock, LeaderCallbacks::new())
        };
        Candidate::start(&self.witness, self.epoch, config)
    }

    /// The Lease as the server has it.
    async fn lease(&self) -> Lease {
        clientset(&self.server)
            .coordination_v1()
            .leases("default")
            .get(LEASE_NAME)
            .await
            .unwrap()
    }

    /// Waits (at most `limit`) for someone to lead; who, and since when.
    async fn leader_within(&self, limit: Duration) -> (String, Instant) {
        assert!(
            until(limit, || self.witness.current().is_some()).await,
            "nobody led within {limit:?}"
        );
        (
            self.witness.current().unwrap(),
            self.witness.current_since().unwrap(),
        )
    }

    /// Starts again, as a supervisor would, the candidates whose run ended (they lost
    /// leadership).
    async fn restart_finished(&self, candidates: &mut [Candidate<LeaseLock>]) {
        for candidate in candidates.iter_mut() {
            if candidate.task.is_finished() {
                let fresh = self.candidate(&candidate.identity.clone(), false);
                std::mem::replace(candidate, fresh).stop().await;
            }
        }
    }
}

fn holder(lease: &Lease) -> (Option<String>, Option<i32>, Option<i32>) {
    let spec = lease.spec.clone().unwrap_or_default();
    (
        spec.holder_identity,
        spec.lease_transitions,
        spec.lease_duration_seconds,
    )
}

fn take(candidates: &mut Vec<Candidate<LeaseLock>>, identity: &str) -> Candidate<LeaseLock> {
    let i = candidates
        .iter()
        .position(|c| c.identity == identity)
        .unwrap();
    candidates.remove(i)
}

/// Three candidates: one leads and the others leave it alone; the Lease names it. Each time
/// the leader stops renewing (killed: no release), another takes over a lease duration later,
/// and never sooner than the old leader's last renewal plus the lease duration allows.
#[tokio::test(start_paused = true)]
async fn one_leader_among_candidates_and_failover_after_a_lease_duration() {
    let election = Election::new().await;
    let mut candidates: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|id| election.candidate(id, false))
        .collect();
    let (mut leader, _) = election.leader_within(SECOND).await;
    sleep(30 * SECOND).await;
    assert!(election.witness.terms().is_empty(), "no change of leader");
    assert_eq!(
        holder(&election.lease().await),
        (Some(leader.clone()), Some(0), Some(15))
    );
    for transitions in 1..=2 {
        let killed = Instant::now();
        take(&mut candidates, &leader).stop().await;
        let (next, since) = election.leader_within(LEASE + 3 * longest_retry()).await;
        let failover = since - killed;
        println!("failover {leader} -> {next}: {failover:?} after the leader stopped");
        assert!(
            failover >= LEASE - RETRY && failover <= LEASE + 2 * longest_retry(),
            "{failover:?}"
        );
        assert_eq!(
            holder(&election.lease().await),
            (Some(next.clone()), Some(transitions), Some(15))
        );
        leader = next;
        sleep(10 * SECOND).await;
    }
    for candidate in candidates {
        candidate.stop().await;
    }
    let gap = election.witness.assert_never_two_leaders().unwrap();
    assert!(gap >= LEASE - RENEW, "{gap:?}");
}

/// ReleaseOnCancel: the leader leaves, its Lease is released (no holder, 1 s), and the other
/// candidate leads at its next attempt, at most (1 + JITTER_FACTOR) × retry period later.
#[tokio::test(start_paused = true)]
async fn release_on_cancel_hands_over_at_the_next_attempt() {
    let election = Election::new().await;
    let mut candidates: Vec<_> = ["a", "b"]
        .iter()
        .map(|id| election.candidate(id, true))
        .collect();
    let (leader, _) = election.leader_within(SECOND).await;
    sleep(10 * SECOND).await;
    let left = Instant::now();
    take(&mut candidates, &leader).stop().await;
    let released = holder(&election.lease().await);
    assert_eq!(
        released,
        (Some(String::new()), Some(0), Some(1)),
        "released"
    );
    let (next, since) = election.leader_within(longest_retry() + SECOND).await;
    let handover = since - left;
    println!("handover {leader} -> {next} after a release: {handover:?}");
    assert!(handover <= longest_retry(), "{handover:?}");
    assert_eq!(
        holder(&election.lease().await),
        (Some(next), Some(1), Some(15))
    );
    for candidate in candidates {
        candidate.stop().await;
    }
    election.witness.assert_never_two_leaders();
}

/// Every request slower than the renew deadline for a minute: the leader stops within the
/// renew deadline, nobody else can lead meanwhile, and after the server recovers exactly one
/// candidate leads again.
#[tokio::test(start_paused = true)]
async fn no_split_brain_while_the_server_is_slower_than_the_renew_deadline() {
    let election = Election::new().await;
    let mut candidates: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|id| election.candidate(id, false))
        .collect();
    let (leader, _) = election.leader_within(SECOND).await;
    sleep(10 * SECOND).await;
    let slow = Instant::now();
    election.server.faults().set_latency(RENEW + 2 * SECOND);
    sleep(60 * SECOND).await;
    let terms = election.witness.terms();
    assert_eq!(terms.len(), 1, "{terms:?}");
    assert_eq!(terms[0].identity, leader);
    let stopped_after = terms[0].ended - slow;
    println!("the leader stopped {stopped_after:?} after the server became slow");
    assert!(stopped_after <= RENEW, "{stopped_after:?}");
    assert_eq!(
        election.witness.current(),
        None,
        "nobody leads while it is slow"
    );

    election.server.faults().set_latency(Duration::ZERO);
    let recovered = Instant::now();
    election.restart_finished(&mut candidates).await;
    let (next, since) = election.leader_within(60 * SECOND).await;
    println!(
        "{next} leads {:?} after the server recovered",
        since - recovered
    );
    sleep(30 * SECOND).await;
    assert_eq!(election.witness.current(), Some(next));
    for candidate in candidates {
        candidate.stop().await;
    }
    election.witness.assert_never_two_leaders();
}

/// A server slow but within the renew deadline (3 s per request) does not cost the leader
/// its leadership.
#[tokio::test(start_paused = true)]
async fn a_slow_server_within_the_deadline_keeps_the_leader() {
    let election = Election::new().await;
    let candidates: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|id| election.candidate(id, false))
        .collect();
    let (leader, _) = election.leader_within(SECOND).await;
    election.server.faults().set_latency(3 * SECOND);
    sleep(120 * SECOND).await;
    assert!(election.witness.terms().is_empty());
    assert_eq!(election.witness.current(), Some(leader));
    election.server.faults().set_latency(Duration::ZERO);
    for candidate in candidates {
        candidate.stop().await;
    }
    election.witness.assert_never_two_leaders();
}

/// Storms of `500`s, each long enough to cost the leader its leadership or not: never two
/// leaders, and a leader again once they pass.
#[tokio::test(start_paused = true)]
async fn no_split_brain_during_storms_of_server_errors() {
    let election = Election::new().await;
    let mut candidates: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|id| election.candidate(id, false))
        .collect();
    election.leader_within(SECOND).await;
    for storm in [3, 10, 30, 60, 5] {
        election
            .server
            .faults()
            .fail_next(storm, Failure::status(500));
        sleep(25 * SECOND).await;
        election.witness.assert_never_two_leaders();
        election.restart_finished(&mut candidates).await;
    }
    election.server.faults().clear_failures();
    election.leader_within(60 * SECOND).await;
    for candidate in candidates {
        candidate.stop().await;
    }
    election.witness.assert_never_two_leaders();
    println!(
        "{} leaderships through the storms",
        election.witness.terms().len()
    );
}
