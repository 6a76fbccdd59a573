//! [`HealthzAdaptor`]: a health check that fails for a leader stuck without renewing
//! (client-go's `HealthzAdaptor` and `NewLeaderHealthzAdaptor`).

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::elector::LeaderElector;
use super::resource_lock::Lock;
use super::state::{ElectionState, LeaseNotRenewed};

/// A health check for a process that leads (client-go's `HealthzAdaptor`).
///
/// Healthy unless its elector's last record names it and has not been renewed for longer
/// than the lease duration plus the adaptor's `timeout`: a leader that should have stopped
/// but did not — its task blocked, its work ignoring the leader token, `run` not returning
/// — so that the kubelet can restart it. A candidate that does not lead is always healthy.
///
/// Make it before the elector, hand a clone to the `/healthz` handler, and put one in
/// [`LeaderElectionConfig::watch_dog`](super::LeaderElectionConfig::watch_dog) (or call
/// [`set_leader_election`](Self::set_leader_election)); until then it is healthy.
///
/// ```
/// use std::time::Duration;
/// use kclient_tools::leaderelection::HealthzAdaptor;
///
/// let watch_dog = HealthzAdaptor::new(Duration::from_secs(20));
/// assert_eq!(watch_dog.name(), "leaderElection");
/// assert!(watch_dog.check().is_ok(), "no elector yet");
/// ```
#[derive(Debug, Clone)]
pub struct HealthzAdaptor {
    timeout: Duration,
    elector: Arc<Mutex<Option<Arc<ElectionState>>>>,
}

impl HealthzAdaptor {
    /// A check allowing `timeout` beyond the lease's expiry (client-go's
    /// `NewLeaderHealthzAdaptor`).
    pub fn new(timeout: Duration) -> Self {
        Self {
            timeout,
            elector: Arc::default(),
        }
    }

    /// The check's name: `leaderElection`.
    pub fn name(&self) -> &'static str {
        "leaderElection"
    }

    /// `Ok` when healthy (see the type's documentation).
    pub fn check(&self) -> Result<(), LeaseNotRenewed> {
        match self.elector.lock().as_ref() {
            Some(state) => state.check(self.timeout),
            None => Ok(()),
        }
    }

    /// Ties the check to `elector` (its clones too), replacing any other.
    pub fn set_leader_election<L: Lock>(&self, elector: &LeaderElector<L>) {
        *self.elector.lock() = Some(Arc::clone(elector.state()));
    }
}
