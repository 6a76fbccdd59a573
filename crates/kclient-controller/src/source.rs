//! What turns informer events into keys on a controller's queue: the primary type's handler,
//! and the handlers of owned and watched types (controller-runtime's `source.Kind` with
//! `EnqueueRequestForObject`, `EnqueueRequestForOwner` and `EnqueueRequestsFromMapFunc`).

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kclient_cache::{
    deleted_object_key, HandlerOptions, InformerError, InformerSynced, ResourceEventHandlerFuncs,
    SharedIndexInformer,
};
use kclient_core::{ObjectKey, Resource, ResourceExt};
use kclient_workqueue::AddOpts;
use parking_lot::Mutex;

use crate::key_queue::KeyQueue;
use crate::owner::{controller_of, reference_group};
use crate::predicate::{Object, Predicate};

/// The priority of the keys queued by an object of the informer's initial list or by a
/// resync that changed nothing (controller-runtime's `handler.LowPriority`): real changes
/// are served first during a startup or a resync flood.
pub const LOW_PRIORITY: i32 = -100;

/// How a key queued by an add is queued: at [`LOW_PRIORITY`] when the object comes from the
/// informer's initial list.
fn on_add_opts(is_in_initial_list: bool) -> AddOpts {
    if is_in_initial_list {
        AddOpts::new().priority(LOW_PRIORITY)
    } else {
        AddOpts::new()
    }
}

/// How a key queued by an update is queued: at [`LOW_PRIORITY`] when the object's resource
/// version did not change (a resync).
fn on_update_opts<K: Resource>(old: &K, new: &K) -> AddOpts {
    if old.resource_version() == new.resource_version() {
        AddOpts::new().priority(LOW_PRIORITY)
    } else {
        AddOpts::new()
    }
}

/// The last known state of primary objects whose deletion was seen and whose key has not
/// been processed since, under the key the queue and the cache share. The cache holds what
/// exists and the queue holds keys only (so that it can merge them), so a deleted object's
/// last state, which only its deletion notification carries, waits here for its key's
/// reconcile (`Reconciler::reconcile_deleted`).
pub(crate) type LastKnown<K> = Arc<Mutex<HashMap<ObjectKey, Arc<K>>>>;

/// A registered handler: whether it has handled its informer's initial list, and how to
/// remove it.
pub(crate) struct Registration {
    pub(crate) synced: InformerSynced,
    remove: Box<dyn FnOnce() + Send + Sync>,
}

impl Registration {
    pub(crate) fn remove(self) {
        (self.remove)();
    }
}

/// The controller-wide event filter ([`Controller::with_event_filter`](crate::Controller::with_event_filter)).
pub(crate) type EventFilter = Option<Predicate<dyn Object>>;

/// Registers a controller's handler on one informer when the controller starts.
pub(crate) type Source =
    Box<dyn FnOnce(&KeyQueue, &EventFilter) -> Result<Registration, InformerError> + Send>;

/// The predicates an event of an `O` must pass: the source's own and the controller's
/// event filter.
pub(crate) struct Filters<O> {
    own: Option<Predicate<O>>,
    controller: EventFilter,
}

impl<O: Object + 'static> Filters<O> {
    pub(crate) fn new(own: Option<Predicate<O>>, controller: &EventFilter) -> Self {
        Self {
            own,
            controller: controller.clone(),
        }
    }

    fn add(&self, obj: &O) -> bool {
        self.own.as_ref().is_none_or(|p| p.evaluate_create(obj))
            && self
                .controller
                .as_ref()
                .is_none_or(|p| p.evaluate_create(obj))
    }

    fn update(&self, old: &O, new: &O) -> bool {
        self.own.as_ref().is_none_or(|p| p.evaluate(old, new))
            && self
                .controller
                .as_ref()
                .is_none_or(|p| p.evaluate(old as &dyn Object, new as &dyn Object))
    }

    /// A delete without a last known state (a tombstone of an unknown object) passes.
    fn delete(&self, obj: Option<&O>) -> bool {
        let Some(obj) = obj else { return true };
        self.own.as_ref().is_none_or(|p| p.evaluate_delete(obj))
            && self
                .controller
                .as_ref()
                .is_none_or(|p| p.evaluate_delete(obj))
    }
}

/// Adds `handler` to `informer` under `name`, as a [`Registration`]. The handler only
/// queues keys (its predicates and mappers are documented as quick), so the informer calls
/// it from its listener's task rather than on the handler threads.
fn register<K>(
    informer: &SharedIndexInformer<K>,
    name: String,
    handler: ResourceEventHandlerFuncs<K>,
) -> Result<Registration, InformerError>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    let registration = informer.add_event_handler_with_options(
        handler.non_blocking(),
        HandlerOptions {
            name: Some(name),
            ..HandlerOptions::default()
        },
    )?;
    let informer = informer.clone();
    Ok(Registration {
        synced: registration.synced(),
        remove: Box::new(move || {
            // Removing from a stopped informer, or twice, does nothing.
            let _ = informer.remove_event_handler(&registration);
        }),
    })
}

/// The primary type's handler: each add, update and delete that `filters` pass queues the
/// object's key; adds from the initial list and unchanged resyncs at [`LOW_PRIORITY`]. A
/// deletion also keeps the last known state for
/// [`Reconciler::reconcile_deleted`](crate::Reconciler::reconcile_deleted).
pub(crate) fn register_primary<K>(
    informer: &SharedIndexInformer<K>,
    name: String,
    queue: &KeyQueue,
    filters: Filters<K>,
    last_known: LastKnown<K>,
) -> Result<Registration, InformerError>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    let (on_add, on_update, on_delete) = (queue.clone(), queue.clone(), queue.clone());
    let filters = Arc::new(filters);
    let (add_filters, update_filters, delete_filters) =
        (Arc::clone(&filters), Arc::clone(&filters), filters);
    let handler = ResourceEventHandlerFuncs::new()
        .add_func(move |obj: &Arc<K>, initial| {
            if add_filters.add(obj) {
                let key = ObjectKey::from_object(obj.as_ref());
                on_add.add_with_opts(on_add_opts(initial), key);
            }
        })
        .update_func(move |old: &Arc<K>, new: &Arc<K>| {
            if update_filters.update(old, new) {
                on_update.add_with_opts(
                    on_update_opts(old.as_ref(), new.as_ref()),
                    ObjectKey::from_object(new.as_ref()),
                );
            }
        })
        .delete_func(move |deleted| {
            if !delete_filters.delete(deleted.last_known().map(AsRef::as_ref)) {
                return;
            }
            let key = match deleted_object_key(deleted) {
                Ok(key) => key,
                Err(error) => {
                    tracing::warn!(key = %error.key, "a deletion with a malformed key: not queued");
                    return;
                }
            };
            if let Some(obj) = deleted.last_known() {
                last_known.lock().insert(key.clone(), Arc::clone(obj));
            }
            on_delete.add(key);
        });
    register(informer, name, handler)
}

/// A handler queueing the keys `map` gives for each object whose event `filters` pass: both
/// the old and the new object's on an update (a change can move an object from one key to
/// another), the last known state's on a deletion; at the same priorities as the primary's
/// handler.
pub(crate) fn register_mapped<O, F, I>(
    informer: &SharedIndexInformer<O>,
    name: String,
    queue: &KeyQueue,
    map: F,
    filters: Filters<O>,
) -> Result<Registration, InformerError>
where
    O: Resource + Clone + Send + Sync + 'static,
    F: Fn(&O) -> I + Send + Sync + 'static,
    I: IntoIterator<Item = ObjectKey>,
{
    let map = Arc::new(map);
    let (map_add, map_update, map_delete) = (Arc::clone(&map), Arc::clone(&map), map);
    let (on_add, on_update, on_delete) = (queue.clone(), queue.clone(), queue.clone());
    let filters = Arc::new(filters);
    let (add_filters, update_filters, delete_filters) =
        (Arc::clone(&filters), Arc::clone(&filters), filters);
    let handler = ResourceEventHandlerFuncs::new()
        .add_func(move |obj: &Arc<O>, initial| {
            if add_filters.add(obj) {
                on_add.add_all_with_opts(on_add_opts(initial), map_add(obj).into_iter().collect());
            }
        })
        .update_func(move |old: &Arc<O>, new: &Arc<O>| {
            if update_filters.update(old, new) {
                let opts = on_update_opts(old.as_ref(), new.as_ref());
                on_update.add_all_with_opts(opts, map_update(old).into_iter().collect());
                on_update.add_all_with_opts(opts, map_update(new).into_iter().collect());
            }
        })
        .delete_func(move |deleted| {
            let obj = deleted.last_known();
            if !delete_filters.delete(obj.map(AsRef::as_ref)) {
                return;
            }
            if let Some(obj) = obj {
                map_delete(obj)
                    .into_iter()
                    .for_each(|key| on_delete.add(key));
            }
        });
    register(informer, name, handler)
}

/// A trigger that is not an informer (kube-rs's `reconcile_on` / `reconcile_all_on`,
/// controller-runtime's `source.Channel`): a task queueing the keys `keys` gives for each
/// item of `trigger`, until the stream ends or the registration is removed. Always synced.
pub(crate) fn register_trigger<S, F>(trigger: S, queue: &KeyQueue, keys: F) -> Registration
where
    S: futures::Stream + Send + 'static,
    F: Fn(S::Item) -> Vec<ObjectKey> + Send + 'static,
{
    use futures::StreamExt;
    let queue = queue.clone();
    let task = tokio::spawn(async move {
        let mut trigger = std::pin::pin!(trigger);
        while let Some(item) = trigger.next().await {
            queue.add_all_with_opts(AddOpts::new(), keys(item));
        }
    });
    Registration {
        synced: kclient_cache::InformerSynced::from_fn(|| true),
        remove: Box::new(move || task.abort()),
    }
}

/// The primary type, as owner references name it.
#[derive(Debug, Clone)]
pub(crate) struct OwnerType {
    group: String,
    kind: String,
    namespaced: bool,
}

impl OwnerType {
    pub(crate) fn of<K: Resource>(dt: &K::DynamicType) -> Self {
        let resource = K::api_resource(dt);
        Self {
            group: resource.group,
            kind: resource.kind,
            namespaced: resource.namespaced,
        }
    }

    fn is(&self, reference: &OwnerReference) -> bool {
        reference.kind == self.kind && reference_group(reference).as_deref() == Some(&self.group)
    }

    /// The key of `obj`'s controller when it is of this type (controller-runtime's
    /// `EnqueueRequestForOwner` with `OnlyControllerOwner`: same group and kind, any version;
    /// the owner's namespace is the object's, none for a cluster-scoped owner).
    pub(crate) fn controller_key<O: Resource>(&self, obj: &O) -> Option<ObjectKey> {
        let owner = controller_of(obj).filter(|owner| self.is(owner))?;
        self.key_of(obj, owner)
    }

    /// The keys of every owner reference of `obj` naming this type, controller or not
    /// (controller-runtime's `EnqueueRequestForOwner` without `OnlyControllerOwner`, the
    /// `builder.MatchEveryOwner` of `Owns`).
    pub(crate) fn owner_keys<O: Resource>(&self, obj: &O) -> Vec<ObjectKey> {
        obj.meta()
            .owner_references
            .iter()
            .flatten()
            .filter(|owner| self.is(owner))
            .filter_map(|owner| self.key_of(obj, owner))
            .collect()
    }

    /// The key of `owner`, a reference of `obj` to this type.
    fn key_of<O: Resource>(&self, obj: &O, owner: &OwnerReference) -> Option<ObjectKey> {
        if !self.namespaced {
            return Some(ObjectKey::cluster_scoped(owner.name.clone()));
        }
        // A namespaced owner of a cluster-scoped object cannot exist; such a reference is
        // ignored, as the garbage collector ignores it.
        let namespace = obj.namespace().filter(|ns| !ns.is_empty())?;
        Some(ObjectKey::namespaced(namespace, owner.name.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

    fn owned(references: Vec<OwnerReference>, namespace: Option<&str>) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("settings".into());
        cm.metadata.namespace = namespace.map(Into::into);
        cm.metadata.owner_references = Some(references);
        cm
    }

    fn reference(
        api_version: &str,
        kind: &str,
        name: &str,
        controller: Option<bool>,
    ) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            uid: format!("{name}-uid"),
            controller,
            block_owner_deletion: None,
        }
    }

    #[test]
    fn only_the_controller_reference_of_the_primary_group_and_kind_maps() {
        let deployments = OwnerType::of::<Deployment>(&());
        let key = |refs, ns| deployments.controller_key(&owned(refs, ns));
        assert_eq!(
            key(
                vec![reference("apps/v1", "Deployment", "web", Some(true))],
                Some("prod")
            ),
            Some(ObjectKey::namespaced("prod", "web"))
        );
        // Any version of the group.
        assert_eq!(
            key(
                vec![reference("apps/v1beta2", "Deployment", "web", Some(true))],
                Some("prod")
            ),
            Some(ObjectKey::namespaced("prod", "web"))
        );
        // Not the controller, another group, another kind, a malformed apiVersion.
        for refs in [
            vec![reference("apps/v1", "Deployment", "web", None)],
            vec![reference("apps/v1", "Deployment", "web", Some(false))],
            vec![reference(
                "extensions/v1beta1",
                "Deployment",
                "web",
                Some(true),
            )],
            vec![reference("apps/v1", "StatefulSet", "web", Some(true))],
            vec![reference("a/b/c", "Deployment", "web", Some(true))],
        ] {
            assert_eq!(key(refs.clone(), Some("prod")), None, "{refs:?}");
        }
        // A namespaced owner without a namespace to look in.
        assert_eq!(
            key(
                vec![reference("apps/v1", "Deployment", "web", Some(true))],
                None
            ),
            None
        );
        // A second, non-controller reference of the right kind does not map.
        assert_eq!(
            key(
                vec![
                    reference("apps/v1", "Deployment", "other", None),
                    reference("apps/v1", "Deployment", "web", Some(true))
                ],
                Some("prod")
            ),
            Some(ObjectKey::namespaced("prod", "web"))
        );
    }

    /// controller-runtime's `handler.TypedFuncs`: the initial list and an update that did not
    /// change the resource version (a resync) queue at `LowPriority`; the rest at none.
    #[test]
    fn the_initial_list_and_unchanged_resyncs_queue_at_low_priority() {
        assert_eq!(on_add_opts(true).priority, Some(LOW_PRIORITY));
        assert_eq!(on_add_opts(false).priority, None);
        let mut old = ConfigMap::default();
        old.metadata.resource_version = Some("7".into());
        let mut new = old.clone();
        assert_eq!(on_update_opts(&old, &new).priority, Some(LOW_PRIORITY));
        new.metadata.resource_version = Some("8".into());
        assert_eq!(on_update_opts(&old, &new).priority, None);
    }

    #[test]
    fn a_cluster_scoped_owner_has_no_namespace_in_its_key() {
        let namespaces = OwnerType::of::<Namespace>(&());
        assert_eq!(
            namespaces.controller_key(&owned(
                vec![reference("v1", "Namespace", "team", Some(true))],
                Some("team")
            )),
            Some(ObjectKey::cluster_scoped("team"))
        );
    }
}
