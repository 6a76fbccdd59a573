//! [`ControllerError`]: why a controller's run ended badly.

use std::time::Duration;

use kclient_cache::InformerError;

/// Why [`Controller::run`](crate::Controller::run) failed. A reconcile's own errors are not
/// among them: they go to the reconciler's error policy and the metrics.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControllerError {
    /// An informer refused the controller's handler (it had stopped: its factory was shut
    /// down).
    #[error("controller {controller}: {source}")]
    Informer {
        /// The controller.
        controller: String,
        /// The informer's refusal.
        #[source]
        source: InformerError,
    },
    /// Some caches did not sync within [`ControllerConfig::cache_sync_timeout`](crate::ControllerConfig).
    #[error("controller {controller}: caches did not sync within {timeout:?}: {}", unsynced.join(", "))]
    CacheSyncTimeout {
        /// The controller.
        controller: String,
        /// The informers that had not synced.
        unsynced: Vec<String>,
        /// The timeout.
        timeout: Duration,
    },
    /// Reconciles were still running when the graceful shutdown timeout passed; they were
    /// dropped.
    #[error("controller {controller}: {in_flight} reconciles still running after the graceful shutdown timeout of {timeout:?} were dropped")]
    ShutdownTimedOut {
        /// The controller.
        controller: String,
        /// How many workers were still reconciling.
        in_flight: usize,
        /// The timeout.
        timeout: Duration,
    },
}
