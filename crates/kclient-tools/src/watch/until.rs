//! [`until_without_retry`], [`until`] and [`until_with_sync`]: wait until watch events meet
//! conditions.

use std::sync::Arc;

use futures::{Stream, StreamExt};
use kclient_cache::Indexer;
use kclient_core::{ListerWatcher, Resource, WatchEvent};

use super::{
    new_indexer_informer_watcher, Condition, ConditionError, RetryWatcher, RetryWatcherError,
};

/// A check of the synced cache before any event (client-go's `PreconditionFunc`):
/// `Ok(true)` means the wait is already over, `Ok(false)` to go on waiting for events, an
/// error to stop.
pub type Precondition<K> = Box<dyn FnOnce(&Indexer<K>) -> Result<bool, ConditionError> + Send>;

/// Why a wait ended without its conditions met.
#[derive(Debug, thiserror::Error)]
pub enum UntilError {
    /// The events ended first (client-go's `ErrWatchClosed`).
    #[error("watch closed before the conditions were met")]
    WatchClosed,
    /// A condition returned an error.
    #[error("condition failed: {0}")]
    Condition(#[source] ConditionError),
    /// The precondition returned an error.
    #[error("precondition failed: {0}")]
    Precondition(#[source] ConditionError),
    /// The retry watcher could not start.
    #[error(transparent)]
    RetryWatcher(#[from] RetryWatcherError),
}

/// Reads `events` until the conditions are met, one after the other, and returns the event
/// that met the last (client-go's `UntilWithoutRetry`); `None` with no conditions. Each
/// event is offered to the current condition; when it is met, the next condition is first
/// offered the same event. Ends with [`UntilError::WatchClosed`] if the events end first.
///
/// A single watch ends on its own (a timeout, a broken connection): prefer
/// [`until_with_sync`] or [`until`]. A raw `WatchStream` fits with
/// `stream.map_while(Result::ok).map(|e| e.map(Arc::new))`.
pub async fn until_without_retry<K, S>(
    events: S,
    conditions: impl IntoIterator<Item = Condition<K>>,
) -> Result<Option<WatchEvent<Arc<K>>>, UntilError>
where
    S: Stream<Item = WatchEvent<Arc<K>>>,
{
    let mut events = std::pin::pin!(events);
    let mut last: Option<WatchEvent<Arc<K>>> = None;
    for mut condition in conditions {
        if let Some(event) = &last {
            if condition(event).map_err(UntilError::Condition)? {
                continue;
            }
        }
        loop {
            let event = events.next().await.ok_or(UntilError::WatchClosed)?;
            let met = condition(&event).map_err(UntilError::Condition)?;
            last = Some(event);
            if met {
                break;
            }
        }
    }
    Ok(last)
}

/// Waits until the conditions are met, watching from `initial_resource_version` with a
/// [`RetryWatcher`] (client-go's `Until`): the watch resumes where it broke off, but a `410
/// Gone` ends it (delivered to the conditions as an error event, then
/// [`UntilError::WatchClosed`]). Use a resourceVersion from a list or get.
pub async fn until<K, L>(
    initial_resource_version: &str,
    lister_watcher: L,
    conditions: impl IntoIterator<Item = Condition<K>>,
) -> Result<Option<WatchEvent<Arc<K>>>, UntilError>
where
    K: Resource + Send + 'static,
    L: ListerWatcher<K> + 'static,
{
    let watcher = RetryWatcher::new(initial_resource_version, lister_watcher)?;
    until_without_retry(watcher.map(|event| event.map(Arc::new)), conditions).await
}

/// Waits until the conditions are met, with an informer over `lister_watcher` (client-go's
/// `UntilWithSync`): the conditions see every object of the initial list as `Added`, then
/// every change; the informer relists whenever its watch cannot resume, so the wait
/// survives anything the server does. With a `precondition`, the cache is synced first and
/// the precondition may end the wait at once (`Ok(None)`) — for example when the object is
/// already gone. The informer stops when this returns or is dropped.
///
/// # Panics
///
/// Outside a tokio runtime (the informer runs on a task of its own).
pub async fn until_with_sync<K, L>(
    lister_watcher: L,
    precondition: Option<Precondition<K>>,
    conditions: impl IntoIterator<Item = Condition<K>>,
) -> Result<Option<WatchEvent<Arc<K>>>, UntilError>
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Default,
    L: ListerWatcher<K> + Clone + 'static,
{
    let (indexer, informer, watcher) = new_indexer_informer_watcher(lister_watcher);
    if let Some(precondition) = precondition {
        informer.synced().wait().await;
        if precondition(&indexer).map_err(UntilError::Precondition)? {
            return Ok(None);
        }
    }
    until_without_retry(watcher, conditions).await
}
