//! [`LeaderElectionConfig`] and [`LeaderCallbacks`] (client-go's `LeaderElectionConfig` and
//! `LeaderCallbacks`), the documented defaults, and the validation [`LeaderElector::new`]
//! does ([`LeaderElectionConfigError`]).
//!
//! [`LeaderElector::new`]: super::LeaderElector::new

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use super::healthz::HealthzAdaptor;
use super::token::LeaderToken;

/// How long others wait for a silent leader before taking over: 15 s, client-go's documented
/// default for core clients (`LeaseDuration`).
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);

/// How long a leader keeps trying to renew before it gives up leading: 10 s, client-go's
/// documented default for core clients (`RenewDeadline`).
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);

/// How long to wait between attempts to acquire or renew: 2 s, client-go's documented default
/// for core clients (`RetryPeriod`).
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);

/// The jitter of the acquire loop (client-go's `JitterFactor`): a candidate waits between
/// `retry_period` and `(1 + JITTER_FACTOR) × retry_period` between two attempts, and the
/// renew deadline must exceed `JITTER_FACTOR × retry_period`.
pub const JITTER_FACTOR: f64 = 1.2;

/// The leader's work: given the leader token, the future that does what only the leader may
/// do (see [`LeaderCallbacks::on_started_leading`]).
pub type LeaderWork = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

pub(crate) type StartedLeading = Arc<dyn Fn(LeaderToken) -> LeaderWork + Send + Sync>;
pub(crate) type StoppedLeading = Arc<dyn Fn() + Send + Sync>;
pub(crate) type NewLeader = Arc<dyn Fn(&str) + Send + Sync>;

/// What the elector calls as leadership comes and goes (client-go's `LeaderCallbacks`).
///
/// [`on_started_leading`](Self::on_started_leading) and
/// [`on_stopped_leading`](Self::on_stopped_leading) are required,
/// [`on_new_leader`](Self::on_new_leader) is optional:
///
/// ```
/// use kclient_tools::leaderelection::LeaderCallbacks;
///
/// let callbacks = LeaderCallbacks::new()
///     .on_started_leading(|token| async move {
///         // Work as the leader until the token fires, then stop at once; check
///         // `token.is_leader()` right before each write.
///         token.cancelled().await;
///     })
///     .on_stopped_leading(|| println!("no longer leading"))
///     .on_new_leader(|identity| println!("{identity} leads"));
/// # let _ = callbacks;
/// ```
#[derive(Clone, Default)]
pub struct LeaderCallbacks {
    pub(crate) on_started_leading: Option<StartedLeading>,
    pub(crate) on_stopped_leading: Option<StoppedLeading>,
    pub(crate) on_new_leader: Option<NewLeader>,
}

impl LeaderCallbacks {
    /// No callbacks yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The leader's work (client-go's `OnStartedLeading`), started on its own task when this
    /// candidate becomes leader and given the *leader token* ([`LeaderToken`]).
    ///
    /// The token fires when this candidate must stop acting as leader: when a renewal has
    /// not succeeded within the renew deadline, when another holder is seen, or when
    /// [`run`](super::LeaderElector::run)'s token fires. The work must then stop at once
    /// (that is the whole of the no-split-brain guarantee) and return. Firing takes the
    /// elector's task to run; right before each write only the leader may make, ask
    /// [`LeaderToken::is_leader`], which reads the clock itself and is false from the
    /// deadline on, even in a process that was frozen past it and has not run the elector
    /// since. The elector waits for
    /// it to return before it releases the lease and calls
    /// [`on_stopped_leading`](Self::on_stopped_leading). If the work returns on its own
    /// while still leading, the candidate steps down as if cancelled; if it panics, it steps
    /// down too and `run` resumes the panic at its end.
    pub fn on_started_leading<F, Fut>(mut self, work: F) -> Self
    where
        F: Fn(LeaderToken) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.on_started_leading = Some(Arc::new(move |token| Box::pin(work(token))));
        self
    }

    /// Called when [`run`](super::LeaderElector::run) ends (client-go's
    /// `OnStoppedLeading`): after the leader's work returned and the lease was released,
    /// and also when this candidate never led. Do not assume it follows
    /// `on_started_leading`.
    pub fn on_stopped_leading<F>(mut self, f: F) -> Self
    where
        F: Fn() + Send + Sync + 'static,
    {
        self.on_stopped_leading = Some(Arc::new(f));
        self
    }

    /// Called with the holder's identity whenever the observed holder changes, the first
    /// observation included, and with `""` when the lease is seen released (client-go's
    /// `OnNewLeader`). It runs on the elector's task: keep it quick.
    pub fn on_new_leader<F>(mut self, f: F) -> Self
    where
        F: Fn(&str) + Send + Sync + 'static,
    {
        self.on_new_leader = Some(Arc::new(f));
        self
    }
}

impl fmt::Debug for LeaderCallbacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderCallbacks")
            .field("on_started_leading", &self.on_started_leading.is_some())
            .field("on_stopped_leading", &self.on_stopped_leading.is_some())
            .field("on_new_leader", &self.on_new_leader.is_some())
            .finish()
    }
}

/// An election's configuration (client-go's `LeaderElectionConfig`).
///
/// [`new`](Self::new) fills in client-go's documented defaults (15 s / 10 s / 2 s); set the
/// fields to change them. [`LeaderElector::new`](super::LeaderElector::new) checks them as
/// client-go does ([`LeaderElectionConfigError`]).
#[derive(Debug, Clone)]
pub struct LeaderElectionConfig<L> {
    /// What the election is held on, with this candidate's identity.
    pub lock: L,
    /// How long candidates wait, after they last saw the record change, before they take
    /// the lease over. It is written into the record in whole seconds, rounded up.
    ///
    /// A fresh set of candidates (after all of them restarted with new identities) waits a
    /// full lease duration before anyone leads, so keep it short, within your tolerance for
    /// clock *rate* skew between machines (see the [module documentation](super)).
    pub lease_duration: Duration,
    /// How long the leader tries to renew before it stops leading. Measured from the start
    /// of the last successful renewal; must be shorter than `lease_duration`, and the
    /// difference is the safety margin against a split brain.
    pub renew_deadline: Duration,
    /// How long to wait between attempts to acquire or renew.
    pub retry_period: Duration,
    /// What to call as leadership comes and goes.
    pub callbacks: LeaderCallbacks,
    /// A health check to tie to the elector (client-go's `WatchDog`), if any.
    pub watch_dog: Option<HealthzAdaptor>,
    /// On leaving, after the leader's work has returned, write a record that releases the
    /// lease (no holder, a 1 s duration), so that the next candidate leads at its next
    /// attempt instead of after a lease duration.
    pub release_on_cancel: bool,
    /// The name of the election, for logs and the health check.
    pub name: String,
}

impl<L> LeaderElectionConfig<L> {
    /// An election on `lock` with client-go's default durations (15 s / 10 s / 2 s), no
    /// health check, no release on cancel.
    pub fn new(lock: L, callbacks: LeaderCallbacks) -> Self {
        Self {
            lock,
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            callbacks,
            watch_dog: None,
            release_on_cancel: false,
            name: String::new(),
        }
    }
}

/// Why [`LeaderElector::new`](super::LeaderElector::new) refused a configuration (client-go's
/// `NewLeaderElector` checks, in its order).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LeaderElectionConfigError {
    /// `lease_duration <= renew_deadline`: others could take over while the leader still
    /// believes it leads.
    #[error("leaseDuration ({lease_duration:?}) must be greater than renewDeadline ({renew_deadline:?})")]
    LeaseDurationNotAboveRenewDeadline {
        /// The lease duration.
        lease_duration: Duration,
        /// The renew deadline.
        renew_deadline: Duration,
    },
    /// `renew_deadline <= JITTER_FACTOR × retry_period`: not even two attempts fit in the
    /// deadline.
    #[error("renewDeadline ({renew_deadline:?}) must be greater than retryPeriod*JitterFactor ({retry_period:?}*{JITTER_FACTOR})")]
    RenewDeadlineNotAboveJitteredRetryPeriod {
        /// The renew deadline.
        renew_deadline: Duration,
        /// The retry period.
        retry_period: Duration,
    },
    /// A zero retry period. (client-go also checks for a zero lease duration and renew
    /// deadline; with unsigned durations the two checks above already refuse those.)
    #[error("retryPeriod must be greater than zero")]
    ZeroRetryPeriod,
    /// A lease duration that does not fit a Lease's `leaseDurationSeconds` (an `i32`).
    #[error("leaseDuration ({0:?}) does not fit a Lease's leaseDurationSeconds")]
    LeaseDurationTooLong(Duration),
    /// No [`on_started_leading`](LeaderCallbacks::on_started_leading).
    #[error("OnStartedLeading callback must not be nil")]
    MissingOnStartedLeading,
    /// No [`on_stopped_leading`](LeaderCallbacks::on_stopped_leading).
    #[error("OnStoppedLeading callback must not be nil")]
    MissingOnStoppedLeading,
    /// The lock's identity is empty.
    #[error("Lock identity is empty")]
    EmptyIdentity,
}

/// The former name of [`LeaderElectionConfigError`], named apart from kclient-rest's
/// `ConfigError`.
#[deprecated(note = "renamed `LeaderElectionConfigError`, apart from kclient-rest's `ConfigError`")]
pub type ConfigError = LeaderElectionConfigError;

/// The whole seconds written as the record's `leaseDurationSeconds`: the lease duration
/// rounded up (client-go truncates, which would let others take over before a sub-second
/// remainder has passed, and writes 0 for a lease under a second).
pub(crate) fn lease_duration_seconds(lease_duration: Duration) -> Option<i32> {
    let seconds = lease_duration
        .as_secs()
        .checked_add(u64::from(lease_duration.subsec_nanos() > 0))?;
    i32::try_from(seconds).ok()
}

/// A configuration that passed [`validate`]: the required callbacks and the record's lease
/// duration.
pub(crate) struct Checked {
    pub(crate) on_started_leading: StartedLeading,
    pub(crate) on_stopped_leading: StoppedLeading,
    pub(crate) on_new_leader: Option<NewLeader>,
    pub(crate) lease_duration_seconds: i32,
}

/// client-go's checks, in its order.
pub(crate) fn validate(
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    callbacks: LeaderCallbacks,
    identity: &str,
) -> Result<Checked, LeaderElectionConfigError> {
    if lease_duration <= renew_deadline {
        return Err(
            LeaderElectionConfigError::LeaseDurationNotAboveRenewDeadline {
                lease_duration,
                renew_deadline,
            },
        );
    }
    // In nanoseconds through a float, as Go's `time.Duration(JitterFactor*float64(...))`;
    // the cast saturates instead of overflowing.
    let jittered = (JITTER_FACTOR * retry_period.as_nanos() as f64) as u128;
    if renew_deadline.as_nanos() <= jittered {
        return Err(
            LeaderElectionConfigError::RenewDeadlineNotAboveJitteredRetryPeriod {
                renew_deadline,
                retry_period,
            },
        );
    }
    if retry_period.is_zero() {
        return Err(LeaderElectionConfigError::ZeroRetryPeriod);
    }
    let Some(lease_duration_seconds) = lease_duration_seconds(lease_duration) else {
        return Err(LeaderElectionConfigError::LeaseDurationTooLong(
            lease_duration,
        ));
    };
    let Some(on_started_leading) = callbacks.on_started_leading else {
        return Err(LeaderElectionConfigError::MissingOnStartedLeading);
    };
    let Some(on_stopped_leading) = callbacks.on_stopped_leading else {
        return Err(LeaderElectionConfigError::MissingOnStoppedLeading);
    };
    if identity.is_empty() {
        return Err(LeaderElectionConfigError::EmptyIdentity);
    }
    Ok(Checked {
        on_started_leading,
        on_stopped_leading,
        on_new_leader: callbacks.on_new_leader,
        lease_duration_seconds,
    })
}
