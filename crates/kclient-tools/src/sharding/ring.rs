//! [`ShardRing`]: one replica's membership of a ring, the slots it holds, and the handover
//! of slots between replicas.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kclient_core::backoff::jitter;
use kclient_core::sharding::{ShardKey, ShardSelector};
use kclient_core::ListOptions;
use kclient_typed::{Clientset, ResourceClient};
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::{sleep, Instant};
use tokio_util::sync::CancellationToken;

use super::assignment::{assign, selector_of};
use super::members::Members;
use crate::leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElectionConfigError, LeaderElector, LeaderToken,
    LeaseLock,
};

/// The label every Lease of a ring carries: the ring's name.
pub const RING_LABEL: &str = "sharding.kclient.dev/ring";
/// The label that tells a ring's member Leases (`member`) from its slot Leases (`slot`).
pub const ROLE_LABEL: &str = "sharding.kclient.dev/role";
/// The default number of slots a ring divides the hash space into.
pub const DEFAULT_SLOTS: u32 = 16;

/// A ring's configuration: where its Leases live, who this replica is, how many slots, and
/// the leases' timing (leader election's: 15 s / 10 s / 2 s).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ShardRingConfig {
    /// The namespace of the ring's Leases.
    pub namespace: String,
    /// The ring's name: every replica of one sharded controller uses the same (its Leases
    /// are `<ring>-member-<identity>` and `<ring>-slot-<n>`).
    pub ring: String,
    /// This replica's identity, unique in the ring (a Pod name).
    pub identity: String,
    /// How many slots the hash space is divided into (at least as many as replicas; each
    /// held slot costs one Lease renewal per `retry_period`).
    pub slots: u32,
    /// The field the slots hash.
    pub key: ShardKey,
    /// How long a Lease stays held without renewal (member and slot Leases alike).
    pub lease_duration: Duration,
    /// How long a holder tries to renew before it gives a slot up.
    pub renew_deadline: Duration,
    /// How long between attempts, and between looks at the ring.
    pub retry_period: Duration,
}

impl ShardRingConfig {
    /// A ring `ring` in `namespace` as seen by `identity`: 16 slots by uid, leader
    /// election's default timing.
    pub fn new(
        namespace: impl Into<String>,
        ring: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        let defaults = LeaderElectionConfig::new((), LeaderCallbacks::new());
        Self {
            namespace: namespace.into(),
            ring: ring.into(),
            identity: identity.into(),
            slots: DEFAULT_SLOTS,
            key: ShardKey::Uid,
            lease_duration: defaults.lease_duration,
            renew_deadline: defaults.renew_deadline,
            retry_period: defaults.retry_period,
        }
    }
}

/// Why a [`ShardRing`] could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShardRingError {
    /// A name the Leases would be made of is not a valid object name or label value.
    #[error("{what} {value:?} cannot name a Lease: {why}")]
    InvalidName {
        /// `ring` or `identity`.
        what: &'static str,
        /// The value.
        value: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// No slots.
    #[error("a ring needs at least one slot")]
    NoSlots,
    /// The timing is refused, as leader election refuses it.
    #[error(transparent)]
    Timing(#[from] LeaderElectionConfigError),
}

/// The slots a replica holds, from one change to the next: work on objects of these slots
/// only, and stop when [`token`](Self::token) fires.
#[derive(Clone)]
pub struct Held {
    /// Which slots (of [`slot_count`](Self::slot_count)).
    pub slots: BTreeSet<u32>,
    /// Counts the changes; [`ShardRing::acknowledge`] names the holding whose work stopped.
    pub generation: u64,
    slot_count: u32,
    key: ShardKey,
    token: CancellationToken,
    leaders: BTreeMap<u32, LeaderToken>,
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Held")
            .field("slots", &self.slots)
            .field("generation", &self.generation)
            .field("slot_count", &self.slot_count)
            .field("current", &self.is_current())
            .finish_non_exhaustive()
    }
}

impl Held {
    fn new(
        slots: BTreeSet<u32>,
        generation: u64,
        config: &ShardRingConfig,
        leaders: BTreeMap<u32, LeaderToken>,
    ) -> Self {
        Self {
            slots,
            generation,
            slot_count: config.slots,
            key: config.key,
            token: CancellationToken::new(),
            leaders,
        }
    }

    /// How many slots the ring has.
    pub fn slot_count(&self) -> u32 {
        self.slot_count
    }

    /// Fires when this holding ends: the ring changes it (and waits for
    /// [`ShardRing::acknowledge`] before another replica may take a slot it gives up), or a
    /// slot's Lease was lost (then another replica may take it a lease duration after its
    /// last renewal: stop at once).
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// The objects of these slots: what to list, watch and cache (`None`: no slot).
    pub fn selector(&self) -> Option<ShardSelector> {
        selector_of(&self.slots, self.slot_count, self.key)
    }

    /// Whether the holding still stands: its token has not fired and every slot's Lease is
    /// still this replica's by its own clock (as [`LeaderToken::is_leader`] says). Ask
    /// right before a write that only the slot's holder may make.
    pub fn is_current(&self) -> bool {
        !self.token.is_cancelled() && self.leaders.values().all(LeaderToken::is_leader)
    }
}

/// What a slot's elector (numbered, as a slot may get a new elector before the last one's
/// report arrives) reports.
enum SlotEvent {
    Acquired {
        slot: u32,
        elector: u64,
        token: LeaderToken,
    },
    Lost {
        slot: u32,
        elector: u64,
    },
}

/// A slot's elector, running while the slot is wanted.
struct SlotElector {
    cancel: CancellationToken,
    task: Task,
}

/// A task of the ring's, aborted if the ring's `run` is dropped before it ends (as a process
/// that dies takes its tasks with it: nothing is released, the Leases expire).
struct Task(Option<JoinHandle<()>>);

impl Task {
    /// Waits for the task to end.
    async fn join(mut self) {
        if let Some(task) = self.0.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Task {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

/// The leadership of a held slot's Lease, and which elector has it.
#[derive(Clone)]
struct Leader {
    elector: u64,
    token: LeaderToken,
}

/// One replica's place in a ring of replicas that divide a collection between them: it
/// keeps this replica's member Lease, reads the others', computes which slots are this
/// replica's ([`assign`](super::assign)), acquires their Leases and gives up the others,
/// and publishes what it holds ([`held`](Self::held)).
///
/// Each slot is a Lease held through leader election, so that a slot has at most one holder
/// at a time by the argument of [`leaderelection`](crate::leaderelection); see the
/// [module documentation](super) for the handover and what it guarantees.
pub struct ShardRing {
    config: ShardRingConfig,
    leases: ResourceClient<Lease>,
    held: watch::Sender<Held>,
    acknowledged: watch::Sender<u64>,
    members: Mutex<Vec<String>>,
}

impl ShardRing {
    /// A ring member with this configuration, its Leases through `clientset`.
    pub fn new(clientset: &Clientset, config: ShardRingConfig) -> Result<Self, ShardRingError> {
        check_name("ring", &config.ring)?;
        check_name("identity", &config.identity)?;
        if config.slots == 0 {
            return Err(ShardRingError::NoSlots);
        }
        let leases = clientset.coordination_v1().leases(&config.namespace);
        election(
            &config,
            LeaseLock::new(leases, "probe", "probe"),
            membership(),
            "probe",
        )?;
        let held = Held::new(BTreeSet::new(), 0, &config, BTreeMap::new());
        Ok(Self {
            leases: clientset.coordination_v1().leases(&config.namespace),
            config,
            held: watch::channel(held).0,
            acknowledged: watch::channel(0).0,
            members: Mutex::new(Vec::new()),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &ShardRingConfig {
        &self.config
    }

    /// What this replica holds, updated as it changes.
    pub fn held(&self) -> watch::Receiver<Held> {
        self.held.subscribe()
    }

    /// Says that the work of holding `generation` (and of every earlier one) has stopped:
    /// the ring gives up the slots a change takes away only after this.
    pub fn acknowledge(&self, generation: u64) {
        self.acknowledged.send_if_modified(|acked| {
            let newer = generation > *acked;
            *acked = (*acked).max(generation);
            newer
        });
    }

    /// The live members as last seen (this replica included), sorted.
    pub fn members(&self) -> Vec<String> {
        self.members.lock().clone()
    }

    /// Takes part in the ring until `cancel` fires, then leaves it: the holding ends, and
    /// once acknowledged every slot Lease and the member Lease are released, so that the
    /// others take the slots over at their next look rather than after a lease duration.
    /// Dropped before it returns, it stops its elections where they are and releases
    /// nothing, as a replica that dies: the others take over when the Leases expire.
    pub async fn run(&self, cancel: CancellationToken) {
        let (events, mut reports) = mpsc::unbounded_channel();
        let member_cancel = CancellationToken::new();
        let member = spawn(
            election(&self.config, self.member_lease(), membership(), "member"),
            member_cancel.clone(),
        );
        let mut electors: BTreeMap<u32, SlotElector> = BTreeMap::new();
        let mut leaders: BTreeMap<u32, Leader> = BTreeMap::new();
        let mut serial = 0u64;
        let mut members = Members::new(self.config.lease_duration);
        let (mut last_acquired, mut additions_since) = (None, None);
        while !cancel.is_cancelled() {
            let healthy = self.look(&mut members).await;
            let target = self.targets(&healthy);
            for &slot in &target {
                electors.entry(slot).or_insert_with(|| {
                    serial += 1;
                    self.slot_elector(slot, serial, events.clone())
                });
            }
            // Slots still being acquired that are no longer wanted: stop trying at once.
            let unwanted: Vec<u32> = electors
                .keys()
                .filter(|s| !target.contains(s) && !leaders.contains_key(s))
                .copied()
                .collect();
            stop(&mut electors, &unwanted).await;
            let wanted: BTreeMap<u32, LeaderToken> = leaders
                .iter()
                .filter(|(s, l)| target.contains(s) && l.token.is_leader())
                .map(|(s, l)| (*s, l.token.clone()))
                .collect();
            if !self.settling(&wanted, last_acquired, &mut additions_since) {
                self.change_to(wanted, &cancel).await;
            }
            // Held slots no longer wanted are given up once their work has stopped.
            let given_up: Vec<u32> = leaders
                .keys()
                .filter(|s| !target.contains(s))
                .copied()
                .collect();
            stop(&mut electors, &given_up).await;
            for slot in given_up {
                leaders.remove(&slot);
            }
            tokio::select! {
                () = cancel.cancelled() => {}
                () = sleep(jitter(self.config.retry_period, 0.2)) => {}
                Some(report) = reports.recv() => {
                    let mut acquired = self.note(report, &mut leaders);
                    while let Ok(report) = reports.try_recv() {
                        acquired |= self.note(report, &mut leaders);
                    }
                    if acquired {
                        last_acquired = Some(Instant::now());
                    }
                }
            }
        }
        self.change_to(BTreeMap::new(), &cancel).await;
        let all: Vec<u32> = electors.keys().copied().collect();
        stop(&mut electors, &all).await;
        member_cancel.cancel();
        member.join().await;
    }

    /// Publishes `wanted` as the holding if it differs from the current one: ends the
    /// current holding and, if it held slots and anyone follows the holdings, waits until
    /// its work has stopped ([`acknowledge`](Self::acknowledge)), then publishes the new one.
    async fn change_to(&self, wanted: BTreeMap<u32, LeaderToken>, cancel: &CancellationToken) {
        let current = self.held.borrow().clone();
        let slots: BTreeSet<u32> = wanted.keys().copied().collect();
        if slots == current.slots && current.is_current() {
            return;
        }
        current.token.cancel();
        if !current.slots.is_empty() && self.held.receiver_count() > 0 {
            let mut acknowledged = self.acknowledged.subscribe();
            let stopped = acknowledged.wait_for(|acked| *acked >= current.generation);
            tokio::select! {
                _ = stopped => {}
                // Leaving: the consumer stops on the token; its acknowledgement is still
                // awaited, a lease duration at most, before the slots are released.
                () = async {
                    cancel.cancelled().await;
                    sleep(self.config.lease_duration).await;
                } => {}
            }
        }
        let next = Held::new(slots, current.generation + 1, &self.config, wanted);
        self.held.send_replace(next);
    }

    /// The slots to try for: this replica's under the live membership, and those it would
    /// get if the members suspected of being gone (not seen renewing lately) were gone. An
    /// election observes a Lease for a lease duration before it takes it over, so trying for
    /// a suspect's slots at once makes the takeover after a death a lease duration after the
    /// suspicion, not after the death is certain (a suspect that is alive keeps its slots:
    /// it renews them).
    fn targets(&self, healthy: &BTreeSet<String>) -> BTreeSet<u32> {
        let me = self.config.identity.as_str();
        let live = self.members();
        let mut target = assign(live.iter().map(String::as_str), self.config.slots)
            .remove(me)
            .unwrap_or_default();
        let fallback = assign(healthy.iter().map(String::as_str), self.config.slots)
            .remove(me)
            .unwrap_or_default();
        target.extend(fallback);
        target
    }

    /// Whether to wait before publishing `wanted`: it only adds slots to a holding that
    /// stands, and a slot was acquired within the last retry period — more are likely on
    /// their way, and each change restarts the consumer's work — for a lease duration at
    /// most. A change that takes a slot away is never held back.
    fn settling(
        &self,
        wanted: &BTreeMap<u32, LeaderToken>,
        last_acquired: Option<Instant>,
        additions_since: &mut Option<Instant>,
    ) -> bool {
        let held = self.held.borrow();
        let adds_only = held.is_current()
            && wanted.len() > held.slots.len()
            && held.slots.iter().all(|s| wanted.contains_key(s));
        if !adds_only {
            *additions_since = None;
            return false;
        }
        let since = *additions_since.get_or_insert_with(Instant::now);
        let recent = last_acquired.is_some_and(|t| t.elapsed() < self.config.retry_period);
        recent && since.elapsed() < self.config.lease_duration
    }

    /// Applies a slot elector's report (whether it acquired a slot). A slot lost while held
    /// ends the holding at once.
    fn note(&self, report: SlotEvent, leaders: &mut BTreeMap<u32, Leader>) -> bool {
        match report {
            SlotEvent::Acquired {
                slot,
                elector,
                token,
            } => {
                leaders.insert(slot, Leader { elector, token });
                true
            }
            SlotEvent::Lost { slot, elector } => {
                if leaders.get(&slot).is_none_or(|l| l.elector != elector) {
                    return false;
                }
                leaders.remove(&slot);
                if self.held.borrow().slots.contains(&slot) {
                    tracing::warn!(ring = %self.config.ring, slot, "a held slot's lease was lost");
                    self.held.borrow().token.cancel();
                }
                false
            }
        }
    }

    /// Reads the ring's member Leases and notes which members are live; returns those of
    /// them not suspected of being gone (their Lease seen changing within one and a half
    /// retry periods, this replica included).
    async fn look(&self, members: &mut Members) -> BTreeSet<String> {
        let selector = format!("{RING_LABEL}={},{ROLE_LABEL}=member", self.config.ring);
        match self
            .leases
            .list(&ListOptions::default().labels(selector))
            .await
        {
            Ok(list) => members.observe(&list.items),
            Err(e) => {
                tracing::debug!(ring = %self.config.ring, error = %e, "could not list the ring's members")
            }
        }
        let mut live = members.live();
        live.insert(self.config.identity.clone());
        *self.members.lock() = live.iter().cloned().collect();
        let suspicion = (self.config.retry_period * 3 / 2).min(self.config.lease_duration / 2);
        let mut healthy = members.changed_within(suspicion);
        healthy.insert(self.config.identity.clone());
        healthy
    }

    /// The name of this replica's member Lease (`<ring>-member-<identity>`), in the ring's
    /// namespace: what Events about this replica's holdings are recorded on.
    pub fn member_lease_name(&self) -> String {
        format!("{}-member-{}", self.config.ring, self.config.identity)
    }

    fn member_lease(&self) -> LeaseLock {
        self.lock(self.member_lease_name(), "member")
    }

    fn lock(&self, name: String, role: &str) -> LeaseLock {
        let labels = [
            (RING_LABEL.to_owned(), self.config.ring.clone()),
            (ROLE_LABEL.to_owned(), role.to_owned()),
        ];
        LeaseLock::new(self.leases.clone(), name, self.config.identity.clone())
            .with_labels(labels.into())
    }

    fn slot_elector(
        &self,
        slot: u32,
        elector: u64,
        events: mpsc::UnboundedSender<SlotEvent>,
    ) -> SlotElector {
        let cancel = CancellationToken::new();
        let lock = self.lock(format!("{}-slot-{slot}", self.config.ring), "slot");
        let acquired = events.clone();
        let callbacks = LeaderCallbacks::new()
            .on_started_leading(move |token: LeaderToken| {
                let _ = acquired.send(SlotEvent::Acquired {
                    slot,
                    elector,
                    token: token.clone(),
                });
                async move { token.cancelled().await }
            })
            .on_stopped_leading(move || {
                let _ = events.send(SlotEvent::Lost { slot, elector });
            });
        let task = spawn(
            election(&self.config, lock, callbacks, "slot"),
            cancel.clone(),
        );
        SlotElector { cancel, task }
    }
}

/// A member's own election: nothing to do but hold the Lease.
fn membership() -> LeaderCallbacks {
    LeaderCallbacks::new()
        .on_started_leading(|token: LeaderToken| async move { token.cancelled().await })
        .on_stopped_leading(|| {})
}

/// An election on `lock` with the ring's timing, releasing the Lease on leaving.
fn election(
    config: &ShardRingConfig,
    lock: LeaseLock,
    callbacks: LeaderCallbacks,
    role: &str,
) -> Result<LeaderElector, LeaderElectionConfigError> {
    LeaderElector::new(LeaderElectionConfig {
        lease_duration: config.lease_duration,
        renew_deadline: config.renew_deadline,
        retry_period: config.retry_period,
        release_on_cancel: true,
        name: format!("{} {role}", config.ring),
        ..LeaderElectionConfig::new(lock, callbacks)
    })
}

/// Runs `elector` until `cancel` fires (nothing, if its configuration was refused: `new`
/// checked the same timing).
fn spawn(
    elector: Result<LeaderElector, LeaderElectionConfigError>,
    cancel: CancellationToken,
) -> Task {
    Task(Some(tokio::spawn(async move {
        match elector {
            Ok(elector) => elector.run(cancel).await,
            Err(e) => tracing::error!(error = %e, "a ring election could not start"),
        }
    })))
}

/// Stops the electors of `slots` (each releases its Lease if it held it).
async fn stop(electors: &mut BTreeMap<u32, SlotElector>, slots: &[u32]) {
    let stopping: Vec<SlotElector> = slots.iter().filter_map(|s| electors.remove(s)).collect();
    for elector in &stopping {
        elector.cancel.cancel();
    }
    for elector in stopping {
        elector.task.join().await;
    }
}

/// Refuses what cannot be part of a Lease's name and a label's value: lowercase letters,
/// digits and `-`, starting and ending alphanumeric, at most 40 characters (a Lease name
/// holds the ring, the identity and a suffix).
fn check_name(what: &'static str, value: &str) -> Result<(), ShardRingError> {
    let invalid = |why| ShardRingError::InvalidName {
        what,
        value: value.to_owned(),
        why,
    };
    if value.is_empty() || value.len() > 40 {
        return Err(invalid("it must have 1 to 40 characters"));
    }
    if !value
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(invalid(
            "it may hold only lowercase letters, digits and '-'",
        ));
    }
    if value.starts_with('-') || value.ends_with('-') {
        return Err(invalid("it must start and end with a letter or digit"));
    }
    Ok(())
}
