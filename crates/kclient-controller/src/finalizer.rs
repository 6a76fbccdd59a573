//! [`finalizer()`]: the finalizer dance every controller that cleans up outside Kubernetes
//! writes by hand (kube-rs's `finalizer`, controller-runtime's `controllerutil.AddFinalizer`
//! and `RemoveFinalizer` in a reconcile).
//!
//! A finalizer on an object keeps the API server from deleting it: deletion only sets
//! `deletionTimestamp` until every finalizer is removed. So a controller that must clean up
//! (an external resource, a record elsewhere) adds its finalizer before it acts, and
//! removes it only once its cleanup succeeded:
//!
//! ```text
//!  object without our finalizer, not deleting --> add it (a patch), then Apply
//!  object with our finalizer, not deleting    --> Apply
//!  object with our finalizer, deleting        --> read it live; if it still has the finalizer,
//!                                                 Cleanup; once it succeeded, remove the finalizer
//!  object without our finalizer, deleting     --> nothing: not ours to clean up (any more)
//! ```
//!
//! Both writes are JSON merge patches of `metadata.finalizers` carrying the
//! `resourceVersion` they were computed from, so they never overwrite a change made
//! meanwhile (another controller's finalizer); a `409 Conflict` is retried on a fresh read
//! with client-go's `retry.DefaultRetry` (kclient-tools' [`retry_on_conflict`]).
//!
//! The live read before a cleanup costs one GET per deletion and keeps a cache that lags
//! behind (the finalizer's removal not seen yet when the object is reconciled again) from
//! running a finished cleanup twice (kube-rs's `finalizer` and controller-runtime run it
//! from the cached object).
//!
//! What `Apply` and `Cleanup` must allow for: both may run again for the same state (a
//! restart, a failed finalizer removal after a successful cleanup, a requeue), so they must
//! be idempotent; `Cleanup` may run without `Apply` ever having succeeded. The finalizer's
//! name must be unique to the controller and qualified (`example.com/cleanup`).

use std::future::Future;
use std::sync::Arc;

use kclient_core::{ApiStatus, Patch, PatchOptions, Resource, ResourceExt};
use kclient_tools::retry::{retry_on_conflict, DEFAULT_RETRY};
use kclient_typed::ResourceClient;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::json;

use crate::action::Action;

/// What [`finalizer()`] asks the reconcile to do.
#[derive(Debug)]
pub enum FinalizerEvent<K> {
    /// Make the world match the object (which carries the finalizer now).
    Apply(Arc<K>),
    /// The object is being deleted: clean up what it made. The finalizer is removed once
    /// this succeeds.
    Cleanup(Arc<K>),
}

/// Why [`finalizer()`] failed; the reconcile's own error is kept as it is.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FinalizerError<E: std::error::Error + 'static> {
    /// `Apply` failed.
    #[error("failed to apply the object: {0}")]
    ApplyFailed(#[source] E),
    /// `Cleanup` failed; the finalizer stays, and the cleanup is retried.
    #[error("failed to clean up the object: {0}")]
    CleanupFailed(#[source] E),
    /// The finalizer could not be added.
    #[error("failed to add the finalizer {finalizer:?}: {source}")]
    AddFinalizer {
        /// The finalizer.
        finalizer: String,
        /// The write's error.
        #[source]
        source: kclient_typed::Error,
    },
    /// The object could not be read live before its cleanup (the cleanup did not run and is
    /// retried).
    #[error("failed to read the object before its cleanup (finalizer {finalizer:?}): {source}")]
    ReadBeforeCleanup {
        /// The finalizer.
        finalizer: String,
        /// The read's error.
        #[source]
        source: kclient_typed::Error,
    },
    /// The finalizer could not be removed (the cleanup had succeeded and runs again).
    #[error("failed to remove the finalizer {finalizer:?}: {source}")]
    RemoveFinalizer {
        /// The finalizer.
        finalizer: String,
        /// The write's error.
        #[source]
        source: kclient_typed::Error,
    },
    /// The object has no name, so it cannot be patched.
    #[error("the object has no name")]
    UnnamedObject,
}

impl<E: std::error::Error + 'static> FinalizerError<E> {
    /// The same error with the reconcile's error converted by `f` (into a program's own
    /// error type, say); the finalizer's own errors are kept.
    pub fn map_reconcile_error<F: std::error::Error + 'static>(
        self,
        f: impl FnOnce(E) -> F,
    ) -> FinalizerError<F> {
        match self {
            Self::ApplyFailed(e) => FinalizerError::ApplyFailed(f(e)),
            Self::CleanupFailed(e) => FinalizerError::CleanupFailed(f(e)),
            Self::AddFinalizer { finalizer, source } => {
                FinalizerError::AddFinalizer { finalizer, source }
            }
            Self::ReadBeforeCleanup { finalizer, source } => {
                FinalizerError::ReadBeforeCleanup { finalizer, source }
            }
            Self::RemoveFinalizer { finalizer, source } => {
                FinalizerError::RemoveFinalizer { finalizer, source }
            }
            Self::UnnamedObject => FinalizerError::UnnamedObject,
        }
    }
}

impl<E: std::error::Error + ApiStatus + 'static> ApiStatus for FinalizerError<E> {
    fn api_status(&self) -> Option<&kclient_core::Status> {
        match self {
            Self::ApplyFailed(e) | Self::CleanupFailed(e) => e.api_status(),
            Self::AddFinalizer { source, .. }
            | Self::ReadBeforeCleanup { source, .. }
            | Self::RemoveFinalizer { source, .. } => source.api_status(),
            Self::UnnamedObject => None,
        }
    }
}

/// Runs `reconcile` for `obj` behind the finalizer `finalizer_name` (see the
/// [module docs](self)): adds the finalizer first if the object lacks it, then calls
/// `reconcile` with [`FinalizerEvent::Apply`]; when the object is being deleted, calls it
/// with [`FinalizerEvent::Cleanup`] and removes the finalizer once that succeeded. Returns
/// the reconcile's [`Action`] ([`Action::await_change`] when there was nothing to do).
///
/// `client` writes `obj`'s resource; its namespace does not matter (the object's is used).
///
/// ```no_run
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kclient_controller::finalizer::{finalizer, FinalizerError, FinalizerEvent};
/// use kclient_controller::Action;
/// use kclient_typed::ResourceClient;
///
/// # async fn reconcile(client: ResourceClient<ConfigMap>, cm: Arc<ConfigMap>) -> Result<Action, FinalizerError<std::io::Error>> {
/// finalizer(&client, "example.com/cleanup", cm, |event| async move {
///     match event {
///         FinalizerEvent::Apply(cm) => { /* make the world match cm */ }
///         FinalizerEvent::Cleanup(cm) => { /* undo what cm made */ }
///     }
///     Ok::<_, std::io::Error>(Action::await_change())
/// })
/// .await
/// # }
/// ```
pub async fn finalizer<K, F, Fut, E>(
    client: &ResourceClient<K>,
    finalizer_name: &str,
    obj: Arc<K>,
    reconcile: F,
) -> Result<Action, FinalizerError<E>>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
    F: FnOnce(FinalizerEvent<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
    E: std::error::Error + 'static,
{
    let name = obj
        .name()
        .filter(|n| !n.is_empty())
        .ok_or(FinalizerError::UnnamedObject)?
        .to_owned();
    let client = client.within(obj.namespace().unwrap_or_default());
    let ours = |o: &K| o.finalizers().iter().any(|f| f == finalizer_name);
    match (ours(&obj), obj.is_being_deleted()) {
        (true, false) => reconcile(FinalizerEvent::Apply(obj))
            .await
            .map_err(FinalizerError::ApplyFailed),
        (true, true) => {
            // The cache can lag behind a cleanup this process finished a moment ago (its
            // finalizer's removal not seen yet, and an event about the object queued it
            // again): read the object live, and clean up only while it still carries the
            // finalizer. With the workqueue's one reconcile per key at a time, a deletion's
            // cleanup then runs once per process unless it or the removal fails.
            let live = match client.get(&name).await {
                Ok(live) if ours(&live) => Arc::new(live),
                Ok(_) => return Ok(Action::await_change()),
                Err(e) if e.is_not_found() => return Ok(Action::await_change()),
                Err(source) => {
                    return Err(FinalizerError::ReadBeforeCleanup {
                        finalizer: finalizer_name.to_owned(),
                        source,
                    })
                }
            };
            let action = reconcile(FinalizerEvent::Cleanup(Arc::clone(&live)))
                .await
                .map_err(FinalizerError::CleanupFailed)?;
            write_finalizer_out(&client, &name, finalizer_name, &live)
                .await
                .map_err(|source| FinalizerError::RemoveFinalizer {
                    finalizer: finalizer_name.to_owned(),
                    source,
                })?;
            Ok(action)
        }
        (false, true) => Ok(Action::await_change()),
        (false, false) => {
            let current = write_finalizer_in(&client, &name, finalizer_name, &obj)
                .await
                .map_err(|source| FinalizerError::AddFinalizer {
                    finalizer: finalizer_name.to_owned(),
                    source,
                })?;
            if ours(&current) && !current.is_being_deleted() {
                reconcile(FinalizerEvent::Apply(Arc::new(current)))
                    .await
                    .map_err(FinalizerError::ApplyFailed)
            } else {
                // Deletion began before the finalizer could be added: nothing of ours to
                // clean up; the deletion's event queues the key again anyway.
                Ok(Action::await_change())
            }
        }
    }
}

/// Adds `finalizer_name` to the object's finalizers, unless it has it or is being deleted
/// (a finalizer cannot be added then); the object as it is afterwards.
async fn write_finalizer_in<K>(
    client: &ResourceClient<K>,
    name: &str,
    finalizer_name: &str,
    obj: &K,
) -> Result<K, kclient_typed::Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    let attempt = std::sync::atomic::AtomicUsize::new(0);
    retry_on_conflict(DEFAULT_RETRY, || async {
        let current = match attempt.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
            0 if obj.resource_version().is_some() => obj.clone(),
            _ => client.get(name).await?,
        };
        if current.is_being_deleted() || current.finalizers().iter().any(|f| f == finalizer_name) {
            return Ok(current);
        }
        let mut finalizers = current.finalizers().to_vec();
        finalizers.push(finalizer_name.to_owned());
        patch_finalizers(client, name, &current, finalizers).await
    })
    .await
}

/// Removes `finalizer_name` from the object's finalizers; done when the object or the
/// finalizer is gone already.
async fn write_finalizer_out<K>(
    client: &ResourceClient<K>,
    name: &str,
    finalizer_name: &str,
    obj: &K,
) -> Result<(), kclient_typed::Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    let attempt = std::sync::atomic::AtomicUsize::new(0);
    let removed = retry_on_conflict(DEFAULT_RETRY, || async {
        let current = match attempt.fetch_add(1, std::sync::atomic::Ordering::Relaxed) {
            0 if obj.resource_version().is_some() => obj.clone(),
            _ => client.get(name).await?,
        };
        if !current.finalizers().iter().any(|f| f == finalizer_name) {
            return Ok(());
        }
        let finalizers = current
            .finalizers()
            .iter()
            .filter(|f| *f != finalizer_name)
            .cloned()
            .collect();
        patch_finalizers(client, name, &current, finalizers)
            .await
            .map(drop)
    })
    .await;
    match removed {
        Err(e) if e.is_not_found() => Ok(()),
        other => other,
    }
}

/// Sets the object's finalizers to `finalizers` if it is still at `current`'s
/// resourceVersion (`409 Conflict` otherwise).
async fn patch_finalizers<K>(
    client: &ResourceClient<K>,
    name: &str,
    current: &K,
    finalizers: Vec<String>,
) -> Result<K, kclient_typed::Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    let patch = Patch::Merge(json!({
        "metadata": {
            "finalizers": finalizers,
            "resourceVersion": current.resource_version(),
        }
    }));
    client.patch(name, &patch, &PatchOptions::default()).await
}

/// Adds `finalizer` to `obj`'s finalizers unless it is there (controller-runtime's
/// `controllerutil.AddFinalizer`); whether the list changed. The object still has to be
/// written (a patch or an update); [`finalizer()`] does the whole dance.
pub fn add_finalizer<K: Resource>(obj: &mut K, finalizer: &str) -> bool {
    let finalizers = obj.meta_mut().finalizers.get_or_insert_with(Vec::new);
    if finalizers.iter().any(|f| f == finalizer) {
        return false;
    }
    finalizers.push(finalizer.to_owned());
    true
}

/// Removes every occurrence of `finalizer` from `obj`'s finalizers (controller-runtime's
/// `controllerutil.RemoveFinalizer`); whether the list changed.
pub fn remove_finalizer<K: Resource>(obj: &mut K, finalizer: &str) -> bool {
    let Some(finalizers) = obj.meta_mut().finalizers.as_mut() else {
        return false;
    };
    let before = finalizers.len();
    finalizers.retain(|f| f != finalizer);
    finalizers.len() != before
}

/// Whether `obj` has `finalizer` (controller-runtime's `controllerutil.ContainsFinalizer`).
pub fn contains_finalizer<K: Resource + ?Sized>(obj: &K, finalizer: &str) -> bool {
    obj.meta()
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|f| f == finalizer))
}

#[cfg(test)]
mod helper_tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

    /// controller-runtime's controllerutil tests of AddFinalizer, RemoveFinalizer and
    /// ContainsFinalizer.
    #[test]
    fn add_remove_contains_as_controllerutil() {
        let mut cm = ConfigMap::default();
        assert!(!contains_finalizer(&cm, "example.com/a"));
        assert!(add_finalizer(&mut cm, "example.com/a"));
        assert!(!add_finalizer(&mut cm, "example.com/a"), "already there");
        assert!(add_finalizer(&mut cm, "example.com/b"));
        assert!(contains_finalizer(&cm, "example.com/a"));
        cm.metadata
            .finalizers
            .as_mut()
            .unwrap()
            .push("example.com/a".into());
        assert!(
            remove_finalizer(&mut cm, "example.com/a"),
            "every occurrence goes"
        );
        assert_eq!(
            cm.metadata.finalizers,
            Some(vec!["example.com/b".to_owned()])
        );
        assert!(!remove_finalizer(&mut cm, "example.com/a"));
        assert!(!remove_finalizer(
            &mut ConfigMap::default(),
            "example.com/a"
        ));
    }
}
