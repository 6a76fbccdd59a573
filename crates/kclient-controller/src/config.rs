//! [`ControllerConfig`]: how a controller runs (kube-rs's `controller::Config`, controller-runtime's
//! `controller.Options`).

use std::time::Duration;

/// How many workers a controller runs and how long it waits at its start and its end.
///
/// ```
/// use std::time::Duration;
/// use kclient_controller::ControllerConfig;
///
/// let config = ControllerConfig::default().workers(4);
/// assert_eq!(config, ControllerConfig { workers: 4, ..ControllerConfig::default() });
/// assert_eq!(config.graceful_shutdown_timeout, Duration::from_secs(30));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerConfig {
    /// How many keys are reconciled at once, at most (client-go's worker count,
    /// controller-runtime's `MaxConcurrentReconciles`, kube-rs's `concurrency`); zero counts
    /// as one. Whatever the number, one key is never reconciled by two workers at once.
    pub workers: usize,
    /// How long the controller waits for its caches to sync before it fails
    /// ([`ControllerError::CacheSyncTimeout`](crate::ControllerError::CacheSyncTimeout)): a
    /// cache that cannot list (no permission, a missing CRD) never syncs.
    pub cache_sync_timeout: Duration,
    /// How long reconciles in flight may run on after the controller was told to stop;
    /// then they are dropped at their next await point
    /// ([`ControllerError::ShutdownTimedOut`](crate::ControllerError::ShutdownTimedOut)).
    pub graceful_shutdown_timeout: Duration,
    /// How long one reconcile may run (controller-runtime's `ReconciliationTimeout`); one
    /// that runs longer is dropped at its next await point, counted in
    /// `controller_runtime_reconcile_timeouts_total` and as an error, and its key requeued
    /// with the rate limiter's backoff. `None` (the default, as controller-runtime's): no
    /// limit, because no single bound suits every reconciler (a reconcile that waits on a
    /// slow API server, a cloud API or a long apply is not stuck), and a reconcile cut
    /// short at an await point leaves its writes half done. A stuck reconcile holds one
    /// worker, never the Manager's shutdown: that is bounded by
    /// [`graceful_shutdown_timeout`](Self::graceful_shutdown_timeout) whatever the
    /// reconcilers do. A reconcile that blocks its thread (no await point) is not stopped
    /// by either: write reconcilers that await.
    pub reconcile_timeout: Option<Duration>,
    /// Whether, under a [`Manager`](crate::Manager)'s leader election, the controller's
    /// queue, handlers and caches start before this replica leads, and only its workers
    /// wait (controller-runtime's `EnableWarmup`): a new leader starts reconciling at once,
    /// its queue already filled, instead of first registering and replaying. The cost: a
    /// follower keeps a queue of every key. Off by default, as controller-runtime's.
    pub warm_up: bool,
}

/// controller-runtime's `CacheSyncTimeout` default.
pub const DEFAULT_CACHE_SYNC_TIMEOUT: Duration = Duration::from_secs(120);

/// controller-runtime's `GracefulShutdownTimeout` default.
pub const DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// The former name of [`ControllerConfig`], named apart from kclient-rest's `Config` (one
/// name, one thing, across the workspace).
#[deprecated(note = "renamed `ControllerConfig`, apart from kclient-rest's `Config`")]
pub type Config = ControllerConfig;

impl ControllerConfig {
    /// The same configuration with `workers` workers (kube-rs's `Config::concurrency`):
    /// `ControllerConfig::default().workers(4)`.
    #[must_use]
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// The same configuration with the cache sync timeout `timeout`.
    #[must_use]
    pub fn cache_sync_timeout(mut self, timeout: Duration) -> Self {
        self.cache_sync_timeout = timeout;
        self
    }

    /// The same configuration with the graceful shutdown timeout `timeout`; zero does not
    /// wait: the reconciles in flight are dropped at once (controller-runtime's zero
    /// `GracefulShutdownTimeout`).
    #[must_use]
    pub fn graceful_shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.graceful_shutdown_timeout = timeout;
        self
    }

    /// The same configuration, warming up before leadership (see [`ControllerConfig::warm_up`]).
    #[must_use]
    pub fn warm_up(mut self, warm_up: bool) -> Self {
        self.warm_up = warm_up;
        self
    }

    /// The same configuration with each reconcile limited to `timeout`.
    #[must_use]
    pub fn reconcile_timeout(mut self, timeout: Duration) -> Self {
        self.reconcile_timeout = Some(timeout);
        self
    }
}

impl Default for ControllerConfig {
    /// One worker (controller-runtime's default), caches given two minutes to sync,
    /// reconciles in flight given 30 s to finish at shutdown, no reconcile timeout.
    fn default() -> Self {
        Self {
            workers: 1,
            cache_sync_timeout: DEFAULT_CACHE_SYNC_TIMEOUT,
            graceful_shutdown_timeout: DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT,
            reconcile_timeout: None,
            warm_up: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_controller_runtimes() {
        let config = ControllerConfig::default();
        assert_eq!(config.workers, 1);
        assert_eq!(config.cache_sync_timeout, Duration::from_secs(120));
        assert_eq!(config.graceful_shutdown_timeout, Duration::from_secs(30));
        assert_eq!(config.reconcile_timeout, None);
    }

    #[test]
    fn setters_change_one_field_each() {
        let config = ControllerConfig::default()
            .workers(3)
            .cache_sync_timeout(Duration::from_secs(5))
            .graceful_shutdown_timeout(Duration::from_secs(7))
            .reconcile_timeout(Duration::from_secs(9));
        assert_eq!(
            config,
            ControllerConfig {
                workers: 3,
                cache_sync_timeout: Duration::from_secs(5),
                graceful_shutdown_timeout: Duration::from_secs(7),
                reconcile_timeout: Some(Duration::from_secs(9)),
                warm_up: false,
            }
        );
    }
}
