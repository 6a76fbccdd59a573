//! [`Predicate`]s: which events a controller acts on (controller-runtime's `predicate`
//! package, kube-rs's `predicates`).
//!
//! A predicate says, for each event of an informer — an add, an update (the cached object
//! before and after), a delete — whether it queues a reconcile. Ready-made:
//! [`generation_changed`] (spec changes of objects whose `metadata.generation` the server
//! tracks), [`labels_changed`], [`annotations_changed`], [`resource_version_changed`]
//! (anything but a resync's replay) — these filter updates and let adds and deletes pass, as
//! controller-runtime's do — and [`label_selector`] (every event, by the object's labels);
//! your own with [`Predicate::new`] (updates), [`Predicate::from_object`] (every event, by
//! the object) or [`Predicate::funcs`] (one function per event); combined with
//! [`and`](Predicate::and), [`or`](Predicate::or) and [`not`] (`!`).
//!
//! A predicate of `dyn `[`Object`] reads only metadata and applies to objects of any type:
//! what [`Controller::with_event_filter`](crate::Controller::with_event_filter) takes, for
//! every type the controller watches.
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
//! assert!(interesting.evaluate_create(&new), "adds pass");
//! ```

use std::fmt;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kclient_core::labels::Selector;
use kclient_core::Resource;

/// Any object with metadata, as predicates read it (controller-runtime's `client.Object`
/// seen by a predicate): every [`Resource`], and `dyn Object` for a predicate that applies
/// to objects of any type.
pub trait Object: Send + Sync {
    /// The object's metadata.
    fn object_meta(&self) -> &ObjectMeta;
}

impl<K: Resource + Send + Sync> Object for K {
    fn object_meta(&self) -> &ObjectMeta {
        self.meta()
    }
}

type ObjectFilter<K> = dyn Fn(&K) -> bool + Send + Sync;
type UpdateFilter<K> = dyn Fn(&K, &K) -> bool + Send + Sync;

/// Whether an add, an update or a delete event queues a reconcile (controller-runtime's
/// `predicate.Predicate`; kclient has no generic events). Cheap to clone.
pub struct Predicate<K: ?Sized> {
    create: Arc<ObjectFilter<K>>,
    update: Arc<UpdateFilter<K>>,
    delete: Arc<ObjectFilter<K>>,
}

impl<K: ?Sized> Clone for Predicate<K> {
    fn clone(&self) -> Self {
        Self {
            create: Arc::clone(&self.create),
            update: Arc::clone(&self.update),
            delete: Arc::clone(&self.delete),
        }
    }
}

impl<K: ?Sized> fmt::Debug for Predicate<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Predicate").finish_non_exhaustive()
    }
}

impl<K: ?Sized + 'static> Predicate<K> {
    /// A predicate of updates: `filter(old, new)` says whether an update passes; adds and
    /// deletes pass.
    pub fn new(filter: impl Fn(&K, &K) -> bool + Send + Sync + 'static) -> Self {
        Self::funcs(|_| true, filter, |_| true)
    }

    /// A predicate of every event by its object: the object added, the object after an
    /// update, the object deleted (its last known state) (controller-runtime's
    /// `NewPredicateFuncs`).
    pub fn from_object(filter: impl Fn(&K) -> bool + Send + Sync + 'static) -> Self {
        let filter = Arc::new(filter);
        let (on_update, on_delete) = (Arc::clone(&filter), Arc::clone(&filter));
        Self {
            create: filter,
            update: Arc::new(move |_, new| on_update(new)),
            delete: on_delete,
        }
    }

    /// A predicate with one function per event (controller-runtime's `predicate.Funcs`).
    pub fn funcs(
        create: impl Fn(&K) -> bool + Send + Sync + 'static,
        update: impl Fn(&K, &K) -> bool + Send + Sync + 'static,
        delete: impl Fn(&K) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self {
            create: Arc::new(create),
            update: Arc::new(update),
            delete: Arc::new(delete),
        }
    }

    /// Whether the update from `old` to `new` passes.
    pub fn evaluate(&self, old: &K, new: &K) -> bool {
        (self.update)(old, new)
    }

    /// Whether the add of `obj` passes.
    pub fn evaluate_create(&self, obj: &K) -> bool {
        (self.create)(obj)
    }

    /// Whether the delete of `obj` (its last known state) passes.
    pub fn evaluate_delete(&self, obj: &K) -> bool {
        (self.delete)(obj)
    }

    /// Passes an event when both pass it (controller-runtime's `predicate.And`).
    #[must_use]
    pub fn and(self, other: Predicate<K>) -> Self {
        let (a, b) = (self, other);
        let (a2, b2, a3, b3) = (a.clone(), b.clone(), a.clone(), b.clone());
        Self::funcs(
            move |o| a.evaluate_create(o) && b.evaluate_create(o),
            move |old, new| a2.evaluate(old, new) && b2.evaluate(old, new),
            move |o| a3.evaluate_delete(o) && b3.evaluate_delete(o),
        )
    }

    /// Passes an event when either passes it (controller-runtime's `predicate.Or`).
    #[must_use]
    pub fn or(self, other: Predicate<K>) -> Self {
        let (a, b) = (self, other);
        let (a2, b2, a3, b3) = (a.clone(), b.clone(), a.clone(), b.clone());
        Self::funcs(
            move |o| a.evaluate_create(o) || b.evaluate_create(o),
            move |old, new| a2.evaluate(old, new) || b2.evaluate(old, new),
            move |o| a3.evaluate_delete(o) || b3.evaluate_delete(o),
        )
    }
}

/// Passes the events `predicate` does not (controller-runtime's `predicate.Not`; also
/// `!predicate`): so the negation of an update filter such as [`generation_changed`] also
/// stops every add and delete, as controller-runtime's does.
pub fn not<K: ?Sized + 'static>(predicate: Predicate<K>) -> Predicate<K> {
    let (a, a2, a3) = (predicate.clone(), predicate.clone(), predicate);
    Predicate::funcs(
        move |o| !a.evaluate_create(o),
        move |old, new| !a2.evaluate(old, new),
        move |o| !a3.evaluate_delete(o),
    )
}

impl<K: ?Sized + 'static> std::ops::Not for Predicate<K> {
    type Output = Predicate<K>;

    fn not(self) -> Predicate<K> {
        not(self)
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
pub fn generation_changed<K: Object + ?Sized + 'static>() -> Predicate<K> {
    Predicate::new(|old: &K, new: &K| {
        match (old.object_meta().generation, new.object_meta().generation) {
            (Some(old), Some(new)) => old != new,
            _ => true,
        }
    })
}

/// Passes updates that change the labels (controller-runtime's `LabelChangedPredicate`).
pub fn labels_changed<K: Object + ?Sized + 'static>() -> Predicate<K> {
    Predicate::new(|old: &K, new: &K| old.object_meta().labels != new.object_meta().labels)
}

/// Passes updates that change the annotations (controller-runtime's
/// `AnnotationChangedPredicate`).
pub fn annotations_changed<K: Object + ?Sized + 'static>() -> Predicate<K> {
    Predicate::new(|old: &K, new: &K| {
        old.object_meta().annotations != new.object_meta().annotations
    })
}

/// Passes updates that change the resourceVersion: every real change, but not the replay of
/// a periodic resync, which delivers the cached object as both old and new
/// (controller-runtime's `ResourceVersionChangedPredicate`).
pub fn resource_version_changed<K: Object + ?Sized + 'static>() -> Predicate<K> {
    Predicate::new(|old: &K, new: &K| {
        old.object_meta().resource_version != new.object_meta().resource_version
    })
}

/// Passes the events of objects whose labels `selector` matches — the object added, the
/// object after an update, the object deleted (controller-runtime's
/// `LabelSelectorPredicate`). A `LabelSelector` converts with `Selector::try_from`.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kclient_controller::predicate::label_selector;
///
/// let web = label_selector::<ConfigMap>("tier=web".parse().unwrap());
/// let mut cm = ConfigMap::default();
/// assert!(!web.evaluate_create(&cm));
/// cm.metadata.labels = Some([("tier".to_string(), "web".to_string())].into());
/// assert!(web.evaluate_create(&cm));
/// ```
pub fn label_selector<K: Object + ?Sized + 'static>(selector: Selector) -> Predicate<K> {
    Predicate::from_object(move |obj: &K| {
        let labels = obj.object_meta().labels.as_ref();
        selector.matches_fn(|key| labels.and_then(|l| l.get(key)).map(String::as_str))
    })
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

    /// controller-runtime's predicate tests of `Not`, `LabelSelectorPredicate`,
    /// `NewPredicateFuncs` and `And`/`Or` over every event kind.
    #[test]
    fn every_event_kind_not_and_the_label_selector() {
        let web = cm(None, "1", Some("web"), None);
        let db = cm(None, "1", Some("db"), None);
        let selected = label_selector::<ConfigMap>("l=web".parse().unwrap());
        assert!(selected.evaluate_create(&web) && !selected.evaluate_create(&db));
        assert!(selected.evaluate(&db, &web) && !selected.evaluate(&web, &db));
        assert!(selected.evaluate_delete(&web) && !selected.evaluate_delete(&db));
        let unselected = !selected.clone();
        assert!(!unselected.evaluate_create(&web) && unselected.evaluate_create(&db));
        assert!(unselected.evaluate(&web, &db));

        // An update filter passes adds and deletes; its negation stops them.
        let generation = generation_changed::<ConfigMap>();
        assert!(generation.evaluate_create(&web) && generation.evaluate_delete(&web));
        let not_generation = !generation;
        assert!(!not_generation.evaluate_create(&web) && !not_generation.evaluate_delete(&web));

        let both = selected.clone().and(labels_changed());
        assert!(both.evaluate_create(&web) && !both.evaluate_create(&db));
        assert!(!both.evaluate(&web, &web.clone()), "labels unchanged");
        let either = Predicate::<ConfigMap>::funcs(|_| false, |_, _| false, |_| true).or(selected);
        assert!(either.evaluate_delete(&db) && either.evaluate_create(&web));
        assert!(!either.evaluate_create(&db));
    }

    /// A predicate of `dyn Object` reads any type's metadata.
    #[test]
    fn a_predicate_of_dyn_object_applies_to_every_type() {
        use k8s_openapi::api::core::v1::Secret;
        let filter = label_selector::<dyn Object>("l=web".parse().unwrap());
        let cm = cm(None, "1", Some("web"), None);
        let mut secret = Secret::default();
        assert!(filter.evaluate_create(&cm as &dyn Object));
        assert!(!filter.evaluate_create(&secret as &dyn Object));
        secret.metadata.labels = cm.metadata.labels.clone();
        assert!(filter.evaluate_create(&secret as &dyn Object));
    }
}
