//! Waiting for caches to sync (client-go's `WaitForCacheSync`, `WaitForNamedCacheSync` and
//! `InformerSynced`).
//!
//! kclient's informers, controllers and handler registrations tell when they sync, so
//! [`wait_for_cache_sync`] wakes exactly then instead of polling every 100 ms as client-go's
//! does; a plain `Fn() -> bool` ([`InformerSynced::from_fn`]) is still polled at that
//! period.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use kclient_core::CancellationToken;

/// Something that syncs once: an informer, a controller, a handler registration.
pub trait Synced: Send + Sync {
    /// Whether it has synced.
    fn has_synced(&self) -> bool;

    /// Resolves once [`has_synced`](Self::has_synced) is true (it may never, if it stops
    /// first; callers race it with their cancellation).
    fn wait_synced(&self) -> BoxFuture<'_, ()>;
}

/// How often a [`InformerSynced::from_fn`] check is polled (client-go's `syncedPollPeriod`).
pub const SYNCED_POLL_PERIOD: Duration = Duration::from_millis(100);

/// A handle on something's `has_synced` (client-go's `InformerSynced` function). Cheap to
/// clone; get one from `informer.synced()`, `registration.synced()` or
/// [`InformerSynced::from_fn`].
#[derive(Clone)]
pub struct InformerSynced(Arc<dyn Synced>);

impl fmt::Debug for InformerSynced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("InformerSynced")
            .field(&self.0.has_synced())
            .finish()
    }
}

struct PolledFn<F>(F);

impl<F: Fn() -> bool + Send + Sync> Synced for PolledFn<F> {
    fn has_synced(&self) -> bool {
        (self.0)()
    }

    fn wait_synced(&self) -> BoxFuture<'_, ()> {
        async move {
            while !(self.0)() {
                tokio::time::sleep(SYNCED_POLL_PERIOD).await;
            }
        }
        .boxed()
    }
}

impl InformerSynced {
    /// Wraps anything [`Synced`].
    pub fn new(synced: impl Synced + 'static) -> Self {
        Self(Arc::new(synced))
    }

    /// A plain check, polled every [`SYNCED_POLL_PERIOD`] while waiting.
    pub fn from_fn(has_synced: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        Self(Arc::new(PolledFn(has_synced)))
    }

    /// Whether it has synced.
    pub fn has_synced(&self) -> bool {
        self.0.has_synced()
    }

    /// Resolves once it has synced.
    pub async fn wait(&self) {
        self.0.wait_synced().await
    }
}

/// Waits until every one of `synced` has synced (true), or `cancel` fires first (false)
/// (client-go's `WaitForCacheSync`).
pub async fn wait_for_cache_sync(cancel: &CancellationToken, synced: &[InformerSynced]) -> bool {
    for s in synced {
        if s.has_synced() {
            continue;
        }
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return false,
            _ = s.wait() => {}
        }
    }
    true
}

/// [`wait_for_cache_sync`] with client-go's log lines: "Waiting for caches to sync for
/// {name}", then "Caches are synced for {name}", or an error "unable to sync caches for
/// {name}" when cancelled first.
pub async fn wait_for_named_cache_sync(
    controller_name: &str,
    cancel: &CancellationToken,
    synced: &[InformerSynced],
) -> bool {
    tracing::info!(
        controller = controller_name,
        "Waiting for caches to sync for {controller_name}"
    );
    if !wait_for_cache_sync(cancel, synced).await {
        tracing::error!(
            controller = controller_name,
            "unable to sync caches for {controller_name}"
        );
        return false;
    }
    tracing::info!(
        controller = controller_name,
        "Caches are synced for {controller_name}"
    );
    true
}
