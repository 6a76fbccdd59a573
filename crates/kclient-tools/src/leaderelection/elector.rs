//! [`LeaderElector`]: the acquire and renew loops (client-go's `LeaderElector`), on tokio's
//! clock.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kclient_core::ApiStatus;
use parking_lot::Mutex;
use tokio::task::{JoinError, JoinHandle};
use tokio::time::{sleep, sleep_until, timeout, Instant};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::config::{
    validate, LeaderElectionConfig, LeaderElectionConfigError, NewLeader, StartedLeading,
    StoppedLeading, JITTER_FACTOR,
};
use super::resource_lock::{LeaderElectionRecord, LeaseLock, Lock};
use super::state::{ElectionState, LeaseNotRenewed};
use super::token::LeaderToken;
use crate::retry::jitter;

/// A candidate in a leader election (client-go's `LeaderElector`).
///
/// Make one with [`new`](Self::new), share it (`Arc`) with whoever asks
/// [`is_leader`](Self::is_leader) or [`get_leader`](Self::get_leader), and drive it with
/// [`run`](Self::run). See the [module documentation](super) for what it guarantees.
pub struct LeaderElector<L: Lock = LeaseLock> {
    lock: L,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    /// `lease_duration` in whole seconds, rounded up: what the record says.
    lease_duration_seconds: i32,
    release_on_cancel: bool,
    on_started_leading: StartedLeading,
    on_stopped_leading: StoppedLeading,
    on_new_leader: Option<NewLeader>,
    state: Arc<ElectionState>,
    /// Held for the whole of a [`run`](Self::run): runs of one elector take turns.
    running: tokio::sync::Mutex<()>,
}

impl<L: Lock> fmt::Debug for LeaderElector<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElector")
            .field("name", &self.state.name)
            .field("lock", &self.lock.describe())
            .field("identity", &self.state.identity)
            .field("lease_duration", &self.lease_duration)
            .field("renew_deadline", &self.renew_deadline)
            .field("retry_period", &self.retry_period)
            .field("release_on_cancel", &self.release_on_cancel)
            .field("is_leader", &self.is_leader())
            .finish_non_exhaustive()
    }
}

/// Why the renew loop ended.
enum Stop {
    /// `run`'s token fired.
    Cancelled,
    /// No renewal succeeded within the renew deadline.
    DeadlinePassed,
    /// A renewal found the lease held by someone else.
    HeldBy(String),
    /// The leader's work returned (or panicked) on its own.
    WorkEnded(Result<(), JoinError>),
}

impl<L: Lock> LeaderElector<L> {
    /// A candidate with this configuration (client-go's `NewLeaderElector`), or why the
    /// configuration is refused. Ties the configuration's health check, if any, to it.
    pub fn new(config: LeaderElectionConfig<L>) -> Result<Self, LeaderElectionConfigError> {
        let LeaderElectionConfig {
            lock,
            lease_duration,
            renew_deadline,
            retry_period,
            callbacks,
            watch_dog,
            release_on_cancel,
            name,
        } = config;
        let checked = validate(
            lease_duration,
            renew_deadline,
            retry_period,
            callbacks,
            lock.identity(),
        )?;
        let elector = Self {
            state: Arc::new(ElectionState {
                identity: lock.identity().to_owned(),
                name,
                lease_duration,
                observed: Mutex::default(),
            }),
            lock,
            lease_duration,
            renew_deadline,
            retry_period,
            lease_duration_seconds: checked.lease_duration_seconds,
            release_on_cancel,
            on_started_leading: checked.on_started_leading,
            on_stopped_leading: checked.on_stopped_leading,
            on_new_leader: checked.on_new_leader,
            running: tokio::sync::Mutex::new(()),
        };
        if let Some(watch_dog) = watch_dog {
            watch_dog.set_leader_election(&elector);
        }
        Ok(elector)
    }

    /// This candidate's identity (the lock's).
    pub fn identity(&self) -> &str {
        &self.state.identity
    }

    /// Whether this candidate leads now: from the moment it acquired the lease until its
    /// leader token fired or, whichever comes first, the renew deadline passed since the
    /// start of its last successful renewal, judged on tokio's monotonic clock when asked
    /// (as [`LeaderToken::is_leader`] judges it). (client-go's `IsLeader` answers whether
    /// the last record *seen* names this candidate, which stays true after a renewal
    /// failed; this one goes false the moment the leader must stop, even before the
    /// elector's task has run.)
    pub fn is_leader(&self) -> bool {
        self.state.leads_at(Instant::now())
    }

    /// The holder in the last record seen, `""` before any or when the lease was released
    /// (client-go's `GetLeader`). Informational: for monitoring and logs.
    pub fn get_leader(&self) -> String {
        self.state.observed.lock().record.holder_identity.clone()
    }

    /// An error if the last record seen names this candidate and has not been renewed for
    /// longer than the lease duration plus `max_tolerable_expired_lease` (client-go's
    /// `Check`): a leader that should have stopped but is stuck. See
    /// [`HealthzAdaptor`](super::HealthzAdaptor).
    pub fn check(&self, max_tolerable_expired_lease: Duration) -> Result<(), LeaseNotRenewed> {
        self.state.check(max_tolerable_expired_lease)
    }

    pub(crate) fn state(&self) -> &Arc<ElectionState> {
        &self.state
    }

    /// Runs the election until `cancel` fires or leadership ends (client-go's `Run`).
    ///
    /// 1. *Acquire*: try to acquire the lease at once, then again every `retry_period`
    ///    with jitter (up to `JITTER_FACTOR` more), until it is acquired or `cancel` fires.
    /// 2. *Lead*: start the leader's work
    ///    ([`on_started_leading`](super::LeaderCallbacks::on_started_leading)) with the
    ///    leader token, and renew the lease every `retry_period`. The token fires, at the
    ///    latest, `renew_deadline` after the start of the last successful renewal; at once
    ///    when a renewal finds another holder or `cancel` fires; and when the work returns.
    /// 3. *Leave*: wait for the work to return, release the lease if `release_on_cancel`,
    ///    then call [`on_stopped_leading`](super::LeaderCallbacks::on_stopped_leading) (also
    ///    when this candidate never led) and return.
    ///
    /// Each attempt is bounded: by the renew deadline while leading (and at most
    /// `renew_deadline` while acquiring or releasing), so a hung request cannot stall the
    /// loops. Runs of one elector take turns. Dropping the future stops the election
    /// where it is: the leader token fires, nothing is released and `on_stopped_leading` is
    /// not called.
    pub async fn run(&self, cancel: CancellationToken) {
        let _one_run_at_a_time = self.running.lock().await;
        let mut panic = None;
        if let Some(acquired_at) = self.acquire(&cancel).await {
            let deadline = self.renew_deadline_after(acquired_at);
            let leadership = Leadership::begin(&self.state, cancel.child_token(), deadline);
            let token = LeaderToken::new(leadership.token.clone(), Arc::clone(&self.state));
            let mut work = tokio::spawn((self.on_started_leading)(token));
            let stop = self.renew(&leadership, deadline, &mut work).await;
            drop(leadership);
            let lock = self.lock.describe();
            let outcome = match stop {
                Stop::Cancelled => {
                    info!(name = %self.state.name, %lock, "stopping: leaving the election");
                    work.await
                }
                Stop::DeadlinePassed => {
                    warn!(name = %self.state.name, %lock, renew_deadline = ?self.renew_deadline,
                        "failed to renew lease within the renew deadline: leadership lost");
                    work.await
                }
                Stop::HeldBy(holder) => {
                    warn!(name = %self.state.name, %lock, %holder,
                        "the lease is held by another candidate: leadership lost");
                    work.await
                }
                Stop::WorkEnded(outcome) => {
                    info!(name = %self.state.name, %lock, "the leader's work ended: stepping down");
                    outcome
                }
            };
            if let Err(e) = outcome {
                if e.is_panic() {
                    panic = Some(e.into_panic());
                }
            }
            if self.release_on_cancel {
                self.release().await;
            }
        }
        (self.on_stopped_leading)();
        if let Some(payload) = panic {
            std::panic::resume_unwind(payload);
        }
    }

    /// Tries until the lease is acquired (returning when the successful attempt started) or
    /// `cancel` fires (client-go's `acquire`: `JitterUntil(retry_period, JITTER_FACTOR)`,
    /// sliding).
    async fn acquire(&self, cancel: &CancellationToken) -> Option<Instant> {
        let lock = self.lock.describe();
        info!(name = %self.state.name, %lock, "attempting to acquire leader lease");
        loop {
            let started = Instant::now();
            let acquired = tokio::select! {
                biased;
                () = cancel.cancelled() => return None,
                acquired = timeout(self.renew_deadline, self.try_acquire_or_renew()) => {
                    acquired.unwrap_or_else(|_| {
                        warn!(%lock, "an attempt to acquire the lease timed out");
                        false
                    })
                }
            };
            self.maybe_report_transition();
            if acquired {
                info!(name = %self.state.name, %lock, identity = %self.state.identity,
                    "successfully acquired lease");
                return Some(started);
            }
            debug!(%lock, "failed to acquire lease");
            tokio::select! {
                biased;
                () = cancel.cancelled() => return None,
                () = sleep(jitter(self.retry_period, JITTER_FACTOR)) => {}
            }
        }
    }

    /// Renews every `retry_period` until the token fires, the work ends, a renewal finds
    /// another holder, or no renewal has succeeded for `renew_deadline` since the start of
    /// the last successful one (`deadline`, first the acquisition's). Each success moves
    /// the deadline on, for [`LeaderToken::is_leader`] too.
    ///
    /// client-go runs `Until(PollUntilContextTimeout(retry_period, renew_deadline))`, whose
    /// deadline starts with each round, so a leader may go on for up to
    /// `retry_period + renew_deadline` after its last renewal. Here the deadline is a timer
    /// from the last success that no attempt in flight can outlast: the leader stops
    /// believing it leads before anyone else may take over (see the module documentation).
    async fn renew(
        &self,
        leadership: &Leadership<'_>,
        mut deadline: Instant,
        work: &mut JoinHandle<()>,
    ) -> Stop {
        let leader = &leadership.token;
        let mut next = Instant::now() + self.retry_period;
        loop {
            tokio::select! {
                biased;
                () = leader.cancelled() => return Stop::Cancelled,
                outcome = &mut *work => return Stop::WorkEnded(outcome),
                () = sleep_until(deadline) => return Stop::DeadlinePassed,
                () = sleep_until(next) => {}
            }
            let started = Instant::now();
            let renewed = tokio::select! {
                biased;
                () = leader.cancelled() => return Stop::Cancelled,
                () = sleep_until(deadline) => return Stop::DeadlinePassed,
                renewed = self.try_acquire_or_renew() => renewed,
            };
            self.maybe_report_transition();
            if renewed {
                deadline = self.renew_deadline_after(started);
                leadership.extend(deadline);
                debug!(lock = %self.lock.describe(), "successfully renewed lease");
            } else if let Some(holder) = self.state.other_holder() {
                return Stop::HeldBy(holder);
            }
            next = Instant::now() + self.retry_period;
        }
    }

    /// Until when a leader may act after an acquisition or renewal that started at
    /// `started`.
    fn renew_deadline_after(&self, started: Instant) -> Instant {
        started + self.renew_deadline
    }

    /// One attempt to acquire the lease or renew it (client-go's `tryAcquireOrRenew`);
    /// `true` when this candidate wrote a record naming itself.
    async fn try_acquire_or_renew(&self) -> bool {
        let now = Instant::now();
        let stamp = self.state.timestamp();
        let mut record = LeaderElectionRecord {
            holder_identity: self.state.identity.clone(),
            lease_duration_seconds: self.lease_duration_seconds,
            acquire_time: Some(stamp.clone()),
            renew_time: Some(stamp),
            ..LeaderElectionRecord::default()
        };
        let lock = self.lock.describe();

        // 1. The fast path: a leader renews from the version it wrote last, without reading.
        if self.state.observed_holder_is_me() && self.state.lease_valid(now) {
            let observed = self.state.observed_record();
            record.acquire_time = observed.acquire_time;
            record.leader_transitions = observed.leader_transitions;
            match self.lock.update(record.clone()).await {
                Ok(()) => {
                    self.state.set_observed_record(record);
                    return true;
                }
                Err(error) => {
                    debug!(%lock, %error, "failed to update lease optimistically, falling back to slow path");
                }
            }
        }

        // 2. Read the record, or create it.
        let read = match self.lock.get().await {
            Ok(read) => read,
            Err(error) if error.is_not_found() => {
                return match self.lock.create(record.clone()).await {
                    Ok(()) => {
                        self.state.set_observed_record(record);
                        true
                    }
                    Err(error) => {
                        warn!(%lock, %error, "error initially creating lease lock");
                        false
                    }
                };
            }
            Err(error) => {
                warn!(%lock, %error, "error retrieving lease lock");
                return false;
            }
        };

        // 3. Note a change (expiry is measured from when this candidate saw it), and leave
        //    alone a lease that another holder keeps alive.
        self.state.observe_read(&read);
        let current = read.record;
        if !current.holder_identity.is_empty()
            && self.state.lease_valid(now)
            && !self.state.observed_holder_is_me()
        {
            debug!(%lock, holder = %current.holder_identity, "lease is held and has not yet expired");
            return false;
        }

        // 4. Take the lease over (one more transition) or renew it, from the version read:
        //    a conflict means someone else wrote since, and nothing is overwritten.
        if self.state.observed_holder_is_me() {
            record.acquire_time = current.acquire_time;
            record.leader_transitions = current.leader_transitions;
        } else {
            record.leader_transitions = current.leader_transitions.saturating_add(1);
        }
        match self.lock.update(record.clone()).await {
            Ok(()) => {
                self.state.set_observed_record(record);
                true
            }
            Err(error) => {
                warn!(%lock, %error, "failed to update lease");
                false
            }
        }
    }

    /// Writes a record releasing the lease, if this candidate still holds it (client-go's
    /// `release`): no holder, a 1 s duration, acquired and renewed now, transitions kept.
    /// A conflict (a renewal still in flight when the work ended landed first) reads the
    /// lease again and retries, as client-go 1.37 does; all within the renew deadline.
    async fn release(&self) -> bool {
        let lock = self.lock.describe();
        let attempt = async {
            loop {
                match self.try_release(&lock).await {
                    Ok(released) => return released,
                    Err(conflict) => {
                        debug!(%lock, error = %conflict, "conflict when releasing the lease, retrying");
                    }
                }
            }
        };
        timeout(self.renew_deadline, attempt)
            .await
            .unwrap_or_else(|_| {
                warn!(%lock, "releasing the lease timed out");
                false
            })
    }

    /// One attempt at [`release`](Self::release): whether the lease is released (or was
    /// not this candidate's), or the conflict to retry on.
    async fn try_release(&self, lock: &str) -> Result<bool, L::Error> {
        let current = match self.lock.get().await {
            Ok(read) => read.record,
            Err(error) => {
                warn!(%lock, %error, "error retrieving lease lock to release it");
                return Ok(false);
            }
        };
        // client-go looks only at the record it saw last, which may be older than the one
        // just read: after a lost renewal it could clear a lease that another candidate has
        // just taken. The record just read must name this candidate too.
        if !self.state.observed_holder_is_me() || current.holder_identity != self.state.identity {
            return Ok(true);
        }
        let stamp = self.state.timestamp();
        let released = LeaderElectionRecord {
            lease_duration_seconds: 1,
            acquire_time: Some(stamp.clone()),
            renew_time: Some(stamp),
            leader_transitions: current.leader_transitions,
            ..LeaderElectionRecord::default()
        };
        match self.lock.update(released.clone()).await {
            Ok(()) => {
                info!(name = %self.state.name, %lock, "released lease");
                self.state.set_observed_record(released);
                Ok(true)
            }
            Err(error) if error.is_conflict() => Err(error),
            Err(error) => {
                warn!(%lock, %error, "failed to release lease");
                Ok(false)
            }
        }
    }

    /// Calls `on_new_leader` when the observed holder differs from the one reported last
    /// (client-go's `maybeReportTransition`).
    fn maybe_report_transition(&self) {
        let holder = {
            let mut observed = self.state.observed.lock();
            if observed.record.holder_identity == observed.reported_leader {
                return;
            }
            observed.reported_leader = observed.record.holder_identity.clone();
            observed.reported_leader.clone()
        };
        info!(name = %self.state.name, lock = %self.lock.describe(), leader = %holder, "new leader observed");
        if let Some(on_new_leader) = &self.on_new_leader {
            on_new_leader(&holder);
        }
    }
}

/// While it lives, the elector leads (until its deadline at the latest); dropping it fires
/// the leader token and ends that, also when `run`'s future is dropped mid-way.
struct Leadership<'a> {
    state: &'a ElectionState,
    token: CancellationToken,
}

impl<'a> Leadership<'a> {
    /// Leads until `deadline` unless [extended](Self::extend).
    fn begin(state: &'a ElectionState, token: CancellationToken, deadline: Instant) -> Self {
        state.observed.lock().leading_until = Some(deadline);
        Self { state, token }
    }

    /// A renewal succeeded: leads until `deadline`.
    fn extend(&self, deadline: Instant) {
        self.state.observed.lock().leading_until = Some(deadline);
    }
}

impl Drop for Leadership<'_> {
    fn drop(&mut self) {
        self.token.cancel();
        self.state.observed.lock().leading_until = None;
    }
}
