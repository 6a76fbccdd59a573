//! Watch utilities (client-go's `tools/watch`): wait until objects meet conditions, with a
//! watch that resumes where it broke off, or with an informer that survives anything.
//!
//! * [`until_with_sync`]: informer-backed (client-go's `UntilWithSync`). The informer lists,
//!   watches and relists as needed, so the wait survives dropped watches and expired
//!   resourceVersions; an optional precondition is checked against the synced cache first.
//!   The one to reach for.
//! * [`until`]: over a [`RetryWatcher`] from a known resourceVersion (client-go's `Until`).
//! * [`until_without_retry`]: over one watch stream, ending when it ends (client-go's
//!   `UntilWithoutRetry`).
//! * [`RetryWatcher`]: a watch that re-watches from the last resourceVersion it delivered,
//!   so that no event is replayed or skipped, until the server says the resourceVersion is
//!   gone (client-go's `RetryWatcher`).
//! * [`InformerWatcher`]: an informer's notifications as a watch stream (client-go's
//!   `NewIndexerInformerWatcher`).
//! * [`conditions`]: ready-made conditions — deleted, a status condition, the generation
//!   observed, a Deployment available.
//!
//! Conditions see events of `Arc<K>` (the informer's objects, shared, not copied) and are
//! met one after the other: each event is offered to the current condition, and when it is
//! met the next one is first offered the same event. Time limits are the caller's: wrap the
//! future in [`tokio::time::timeout`], or drop it; the informer or watch stops with it.
//!
//! ```no_run
//! use std::time::Duration;
//! use k8s_openapi::api::apps::v1::Deployment;
//! use kclient_core::ListerWatcher;
//! use kclient_tools::watch::{conditions, until_with_sync};
//!
//! async fn wait_available<L>(deployments: L) -> Result<(), Box<dyn std::error::Error>>
//! where
//!     L: ListerWatcher<Deployment> + Clone + 'static,
//! {
//!     // The lister should list only this Deployment (a metadata.name field selector);
//!     // `named` makes sure of it.
//!     let available = conditions::named("default", "web", conditions::deployment_available());
//!     let event = tokio::time::timeout(
//!         Duration::from_secs(300),
//!         until_with_sync(deployments, None, [available]),
//!     )
//!     .await??;
//!     println!("available: {event:?}");
//!     Ok(())
//! }
//! ```

pub mod conditions;
mod informer_watcher;
mod retry_watcher;
mod until;

use std::sync::Arc;

use kclient_core::WatchEvent;

pub use informer_watcher::{new_indexer_informer_watcher, InformerWatcher};
pub use retry_watcher::{RetryWatcher, RetryWatcherError, MIN_RESTART_DELAY};
pub use until::{until, until_with_sync, until_without_retry, Precondition, UntilError};

/// The error a condition returns to end the wait (client-go's `ConditionFunc` error).
pub type ConditionError = Box<dyn std::error::Error + Send + Sync>;

/// A condition on watch events (client-go's `watch.ConditionFunc`): `Ok(true)` when it is
/// met, `Ok(false)` to wait for the next event, an error to stop waiting.
pub type Condition<K> = Box<dyn FnMut(&WatchEvent<Arc<K>>) -> Result<bool, ConditionError> + Send>;

/// Boxes a closure as a [`Condition`].
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use std::sync::Arc;
/// use kclient_core::WatchEvent;
/// use kclient_tools::watch::{condition, Condition};
///
/// let mut named_a: Condition<ConfigMap> = condition(|event: &WatchEvent<Arc<ConfigMap>>| {
///     Ok(matches!(event, WatchEvent::Added(cm) if cm.metadata.name.as_deref() == Some("a")))
/// });
/// # let _ = &mut named_a;
/// ```
pub fn condition<K>(
    f: impl FnMut(&WatchEvent<Arc<K>>) -> Result<bool, ConditionError> + Send + 'static,
) -> Condition<K> {
    Box::new(f)
}
