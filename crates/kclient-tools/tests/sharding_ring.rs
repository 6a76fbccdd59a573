//! Rings of replicas on real Leases, served over HTTP by kclient-fake, on tokio's paused
//! clock with leader election's default durations (15 s / 10 s / 2 s): several replicas in
//! one process, each with a consumer that works on what its ring holds, and a witness of
//! which replica works on which slot at each instant. Every slot ends up held, the slots
//! spread over the replicas, replicas joining, leaving and dying move slots, and no slot is
//! ever worked on by two replicas at once.

use crate::election_support::until;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kclient_fake::FakeApiServer;
use kclient_rest::{Config, RestClient};
use kclient_tools::sharding::{ShardRing, ShardRingConfig};
use kclient_typed::Clientset;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const SLOTS: u32 = 16;
const LEASE: Duration = Duration::from_secs(15);

/// Who works on which slot, and every time two did at once.
#[derive(Default)]
struct Witness {
    working: Mutex<BTreeMap<u32, String>>,
    overlaps: Mutex<Vec<String>>,
}

impl Witness {
    fn start(&self, who: &str, slots: &BTreeSet<u32>) {
        let mut working = self.working.lock();
        for slot in slots {
            if let Some(other) = working.insert(*slot, who.to_owned()) {
                self.overlaps.lock().push(format!(
                    "slot {slot}: {who} started while {other} worked on it"
                ));
            }
        }
    }

    fn stop(&self, who: &str, slots: &BTreeSet<u32>) {
        let mut working = self.working.lock();
        for slot in slots {
            if working.get(slot).is_some_and(|w| w == who) {
                working.remove(slot);
            }
        }
    }

    /// Who works on each slot now.
    fn owners(&self) -> BTreeMap<u32, String> {
        self.working.lock().clone()
    }
}

/// A replica: its ring and a consumer that works on each holding until its token fires.
struct Replica {
    name: String,
    cancel: CancellationToken,
    ring: JoinHandle<()>,
    consumer: JoinHandle<()>,
}

impl Replica {
    fn start(server: &FakeApiServer, witness: &Arc<Witness>, name: &str) -> Self {
        Self::draining(server, witness, name, Duration::ZERO)
    }

    /// A replica whose work takes `drain` to stop once its holding ends.
    fn draining(
        server: &FakeApiServer,
        witness: &Arc<Witness>,
        name: &str,
        drain: Duration,
    ) -> Self {
        let mut config = Config::new(server.url());
        config.qps = None; // its token bucket runs on the wall clock
        let clientset = Clientset::from_client(RestClient::new(config).unwrap());
        let ring = Arc::new(
            ShardRing::new(&clientset, ShardRingConfig::new("default", "test", name)).unwrap(),
        );
        let cancel = CancellationToken::new();
        let mut held = ring.held();
        let consumer = tokio::spawn({
            let (ring, witness, name) = (ring.clone(), witness.clone(), name.to_owned());
            async move {
                loop {
                    let holding = held.borrow_and_update().clone();
                    if holding.is_current() {
                        witness.start(&name, &holding.slots);
                        holding.token().cancelled().await;
                        tokio::time::sleep(drain).await;
                    }
                    witness.stop(&name, &holding.slots);
                    ring.acknowledge(holding.generation);
                    if held.changed().await.is_err() {
                        return;
                    }
                }
            }
        });
        let ring = tokio::spawn({
            let cancel = cancel.clone();
            async move { ring.run(cancel).await }
        });
        Self {
            name: name.to_owned(),
            cancel,
            ring,
            consumer,
        }
    }

    /// Leaves the ring: its work stops, its slots are released.
    async fn leave(self) {
        self.cancel.cancel();
        self.ring.await.unwrap();
        self.consumer.abort();
    }

    /// Dies: the process is gone, its work with it, nothing is released.
    fn kill(self, witness: &Witness) {
        self.ring.abort();
        self.consumer.abort();
        let all = (0..SLOTS).collect();
        witness.stop(&self.name, &all);
    }
}

/// Whether every slot is worked on, and by each of `names` for at least one slot.
fn balanced(witness: &Witness, names: &[&str]) -> bool {
    let owners = witness.owners();
    owners.len() == SLOTS as usize
        && names.iter().all(|n| owners.values().any(|o| o == n))
        && owners.values().all(|o| names.contains(&o.as_str()))
}

#[tokio::test(start_paused = true)]
async fn replicas_divide_the_slots_and_hand_them_over_without_overlap() {
    let server = FakeApiServer::builder().start().await.unwrap();
    let witness = Arc::new(Witness::default());

    let a = Replica::start(&server, &witness, "a");
    let b = Replica::start(&server, &witness, "b");
    let c = Replica::start(&server, &witness, "c");
    assert!(
        until(Duration::from_secs(60), || balanced(
            &witness,
            &["a", "b", "c"]
        ))
        .await,
        "three replicas: {:?}",
        witness.owners()
    );

    // A fourth joins: it gets slots, the others give them up first.
    let d = Replica::start(&server, &witness, "d");
    assert!(
        until(Duration::from_secs(60), || balanced(
            &witness,
            &["a", "b", "c", "d"]
        ))
        .await,
        "four replicas: {:?}",
        witness.owners()
    );

    // One leaves: its slots are taken over well within a lease duration.
    let left = Instant::now();
    d.leave().await;
    assert!(
        until(LEASE, || balanced(&witness, &["a", "b", "c"])).await,
        "after d left: {:?}",
        witness.owners()
    );
    assert!(left.elapsed() < LEASE);

    // One dies: its slots stay unworked until its Leases expire, then move.
    let owned_by_c: BTreeSet<u32> = witness
        .owners()
        .into_iter()
        .filter(|(_, o)| o == "c")
        .map(|(s, _)| s)
        .collect();
    assert!(!owned_by_c.is_empty());
    let died = Instant::now();
    c.kill(&witness);
    let taken = || witness.owners().keys().any(|s| owned_by_c.contains(s));
    assert!(
        until(Duration::from_secs(90), taken).await,
        "c's slots never moved"
    );
    // Nobody took c's slots before a lease duration, less the time (a retry period and its
    // jitter at most) between c's last renewal and its death.
    let took = died.elapsed();
    assert!(
        took >= LEASE - Duration::from_secs(4),
        "c's slots moved after {took:?}"
    );
    assert!(
        until(Duration::from_secs(60), || balanced(&witness, &["a", "b"])).await,
        "after c died: {:?}",
        witness.owners()
    );

    a.leave().await;
    b.leave().await;
    let overlaps = witness.overlaps.lock().clone();
    assert!(overlaps.is_empty(), "{overlaps:#?}");
}

#[tokio::test(start_paused = true)]
async fn a_slot_moves_only_once_its_work_has_stopped() {
    let server = FakeApiServer::builder().start().await.unwrap();
    let witness = Arc::new(Witness::default());
    let drain = Duration::from_secs(40);
    let a = Replica::draining(&server, &witness, "a", drain);
    assert!(until(Duration::from_secs(60), || balanced(&witness, &["a"])).await);

    let joined = Instant::now();
    let b = Replica::start(&server, &witness, "b");
    let b_works = || witness.owners().values().any(|o| o == "b");
    assert!(
        until(Duration::from_secs(120), b_works).await,
        "b never got a slot"
    );
    // a's work on what it gives up takes 40 s to stop: b waits for it, beyond a lease
    // duration (so no expiry decided it).
    assert!(
        joined.elapsed() >= drain,
        "b worked after {:?}",
        joined.elapsed()
    );
    assert!(
        until(Duration::from_secs(120), || balanced(&witness, &["a", "b"])).await,
        "{:?}",
        witness.owners()
    );
    b.leave().await;
    a.leave().await;
    let overlaps = witness.overlaps.lock().clone();
    assert!(overlaps.is_empty(), "{overlaps:#?}");
}
