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
use kclient_workqueue::RateLimitingQueue;
use parking_lot::Mutex;

use crate::owner::{controller_of, reference_group};
use crate::predicate::Predicate;

/// The controller's queue of keys.
pub(crate) type KeyQueue = RateLimitingQueue<ObjectKey>;

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
    remove: Box<dyn FnOnce() + Send>,
}

impl Registration {
    pub(crate) fn remove(self) {
        (self.remove)();
    }
}

/// Registers a controller's handler on one informer when the controller starts.
pub(crate) type Source = Box<dyn FnOnce(&KeyQueue) -> Result<Registration, InformerError> + Send>;

/// Adds `handler` to `informer` under `name`, as a [`Registration`]. The handler only
/// queues keys (its predicates and mappers are documented as quick), so the informer calls
/// it from its listener's task rather than on the blocking pool.
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

/// The primary type's handler: every add and delete queues the object's key, an update
/// queues it when `predicate` passes. A deletion also keeps the last known state for
/// [`Reconciler::reconcile_deleted`](crate::Reconciler::reconcile_deleted).
pub(crate) fn register_primary<K>(
    informer: &SharedIndexInformer<K>,
    name: String,
    queue: &KeyQueue,
    predicate: Option<Predicate<K>>,
    last_known: LastKnown<K>,
) -> Result<Registration, InformerError>
where
    K: Resource + Clone + Send + Sync + 'static,
{
    let (on_add, on_update, on_delete) = (queue.clone(), queue.clone(), queue.clone());
    let handler = ResourceEventHandlerFuncs::new()
        .add_func(move |obj: &Arc<K>, _| on_add.add(ObjectKey::from_object(obj.as_ref())))
        .update_func(move |old: &Arc<K>, new: &Arc<K>| {
            if predicate.as_ref().is_none_or(|p| p.evaluate(old, new)) {
                on_update.add(ObjectKey::from_object(new.as_ref()));
            }
        })
        .delete_func(move |deleted| {
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

/// A handler queueing the keys `map` gives for each object: both the old and the new
/// object's on an update that `predicate` passes (a change can move an object from one key
/// to another), the last known state's on a deletion.
pub(crate) fn register_mapped<O, F, I>(
    informer: &SharedIndexInformer<O>,
    name: String,
    queue: &KeyQueue,
    map: F,
    predicate: Option<Predicate<O>>,
) -> Result<Registration, InformerError>
where
    O: Resource + Clone + Send + Sync + 'static,
    F: Fn(&O) -> I + Send + Sync + 'static,
    I: IntoIterator<Item = ObjectKey>,
{
    let map = Arc::new(map);
    let (map_add, map_update, map_delete) = (Arc::clone(&map), Arc::clone(&map), map);
    let (on_add, on_update, on_delete) = (queue.clone(), queue.clone(), queue.clone());
    let handler = ResourceEventHandlerFuncs::new()
        .add_func(move |obj: &Arc<O>, _| {
            map_add(obj).into_iter().for_each(|key| on_add.add(key));
        })
        .update_func(move |old: &Arc<O>, new: &Arc<O>| {
            if predicate.as_ref().is_none_or(|p| p.evaluate(old, new)) {
                map_update(old)
                    .into_iter()
                    .for_each(|key| on_update.add(key));
                map_update(new)
                    .into_iter()
                    .for_each(|key| on_update.add(key));
            }
        })
        .delete_func(move |deleted| {
            if let Some(obj) = deleted.last_known() {
                map_delete(obj)
                    .into_iter()
                    .for_each(|key| on_delete.add(key));
            }
        });
    register(informer, name, handler)
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
