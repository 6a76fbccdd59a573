//! [`Predicate`]s: which update events a controller acts on (controller-runtime's
//! `predicate` package, kube-rs's `predicates`).
//!
//! A predicate sees the cached object before and after an update and says whether the
//! update should queue a reconcile. Adds and deletes always pass: a predicate filters
//! updates only. Ready-made: [`generation_changed`] (spec changes of objects whose
//! `metadata.generation` the server tracks), [`labels_changed`], [`annotations_changed`],
//! [`resource_version_changed`] (anything but a resync's replay); your own with
//! [`Predicate::new`]; combined with [`and`](Predicate::and) and [`or`](Predicate::or).
//!
//! ```
//! use k8s_openapi::api::apps::v1::Deployment;
//! use kclient_controller::predicate::{generation_changed, labels_changed};
//!
//! // Spec or label changes, not status updates.
//! let interesting = generation_changed::<Deployment>().or(labels_changed());
//! let mut old = Deployment::default();
//! old.metadata.generation = Some(1);
//! let mut new = old.clone();
//! new.metadata.resource_version = Some("2".into()); // a status update
//! assert!(!interesting.evaluate(&old, &new));
//! new.metadata.labels = Some([("tier".to_string(), "web".to_string())].into());
//! assert!(interesting.evaluate(&old, &new));
//! ```

use std::fmt;
use std::sync::Arc;

use kclient_core::{Resource, ResourceExt};

type UpdateFilter<K> = dyn Fn(&K, &K) -> bool + Send + Sync;

/// Whether an update event (the cached object before and after) should queue a reconcile.
/// Cheap to clone.
pub struct Predicate<K> {
    filter: Arc<UpdateFilter<K>>,
}

impl<K> Clone for Predicate<K> {
    fn clone(&self) -> Self {
        Self {
            filter: Arc::clone(&self.filter),
        }
    }
}

impl<K> fmt::Debug for Predicate<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Predicate").finish_non_exhaustive()
    }
}

impl<K: 'static> Predicate<K> {
    /// A predicate of your own: `filter(old, new)` says whether the update passes.
    pub fn new(filter: impl Fn(&K, &K) -> bool + Send + Sync + 'static) -> Self {
        Self {
            filter: Arc::new(filter),
        }
    }

    /// Whether the update from `old` to `new` passes.
    pub fn evaluate(&self, old: &K, new: &K) -> bool {
        (self.filter)(old, new)
    }

    /// Passes when both pass (controller-runtime's `predicate.And`).
    #[must_use]
    pub fn and(self, other: Predicate<K>) -> Self {
        Self::new(move |old, new| self.evaluate(old, new) && other.evaluate(old, new))
    }

    /// Passes when either passes (controller-runtime's `predicate.Or`).
    #[must_use]
    pub fn or(self, other: Predicate<K>) -> Self {
        Self::new(move |old, new| self.evaluate(old, new) || other.evaluate(old, new))
    }
}

/// Passes updates that change `metadata.generation`, which the API server bumps on spec
/// changes (and when deletion starts on an object with finalizers) but not on status or
/// metadata changes (controller-runtime's `GenerationChangedPredicate`).
///
/// An object without a generation on either side passes: many kinds (ConfigMaps, Secrets)
/// never get one, and controller-runtime's version, which compares the missing values as
/// equal, silently drops every update of them. kube-rs's `predicates::generation` lets them
/// through too.
pub fn generation_changed<K: Resource + 'static>() -> Predicate<K> {
    Predicate::new(
        |old: &K, new: &K| match (old.meta().generation, new.meta().generation) {
            (Some(old), Some(new)) => old != new,
            _ => true,
        },
    )
}

/// Passes updates that change the labels (controller-runtime's `LabelChangedPredicate`).
pub fn labels_changed<K: Resource + 'static>() -> Predicate<K> {
    Predicate::new(|old: &K, new: &K| old.labels() != new.labels())
}

/// Passes updates that change the annotations (controller-runtime's
/// `AnnotationChangedPredicate`).
pub fn annotations_changed<K: Resource + 'static>() -> Predicate<K> {
    Predicate::new(|old: &K, new: &K| old.annotations() != new.annotations())
}

/// Passes updates that change the resourceVersion: every real change, but not the replay of
/// a periodic resync, which delivers the cached object as both old and new
/// (controller-runtime's `ResourceVersionChangedPredicate`).
pub fn resource_version_changed<K: Resource + 'static>() -> Predicate<K> {
    Predicate::new(|old: &K, new: &K| old.resource_version() != new.resource_version())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(generation: Option<i64>, rv: &str, label: Option<&str>, note: Option<&str>) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.generation = generation;
        cm.metadata.resource_version = Some(rv.into());
        cm.metadata.labels = label.map(|l| [("l".to_string(), l.to_string())].into());
        cm.metadata.annotations = note.map(|a| [("a".to_string(), a.to_string())].into());
        cm
    }

    #[test]
    fn generation_passes_only_changes_and_objects_without_one() {
        let p = generation_changed::<ConfigMap>();
        assert!(!p.evaluate(&cm(Some(1), "1", None, None), &cm(Some(1), "2", None, None)));
        assert!(p.evaluate(&cm(Some(1), "1", None, None), &cm(Some(2), "2", None, None)));
        assert!(p.evaluate(&cm(None, "1", None, None), &cm(None, "2", None, None)));
        assert!(p.evaluate(&cm(Some(1), "1", None, None), &cm(None, "2", None, None)));
    }

    #[test]
    fn labels_annotations_and_resource_version() {
        let base = cm(None, "1", Some("a"), Some("x"));
        assert!(!labels_changed().evaluate(&base, &cm(None, "2", Some("a"), Some("y"))));
        assert!(labels_changed().evaluate(&base, &cm(None, "2", Some("b"), Some("x"))));
        assert!(labels_changed().evaluate(&base, &cm(None, "2", None, Some("x"))));
        assert!(!annotations_changed().evaluate(&base, &cm(None, "2", Some("b"), Some("x"))));
        assert!(annotations_changed().evaluate(&base, &cm(None, "2", Some("a"), None)));
        assert!(!resource_version_changed().evaluate(&base, &base.clone()));
        assert!(resource_version_changed().evaluate(&base, &cm(None, "2", Some("a"), Some("x"))));
    }

    #[test]
    fn combinators() {
        let yes = || Predicate::<ConfigMap>::new(|_, _| true);
        let no = || Predicate::<ConfigMap>::new(|_, _| false);
        let obj = ConfigMap::default();
        assert!(yes().and(yes()).evaluate(&obj, &obj));
        assert!(!yes().and(no()).evaluate(&obj, &obj));
        assert!(no().or(yes()).evaluate(&obj, &obj));
        assert!(!no().or(no()).evaluate(&obj, &obj));
    }
}
