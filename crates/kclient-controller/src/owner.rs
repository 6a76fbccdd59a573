//! Owner and controller references: [`controller_of`] and [`is_controlled_by`]
//! (apimachinery's `GetControllerOf` and `IsControlledBy`), [`set_controller_reference`]
//! (controller-runtime's `controllerutil.SetControllerReference`), which makes an object a
//! dependent of its controller — the garbage collector deletes it with its owner, and
//! [`Controller::owns`](crate::Controller::owns) maps its changes to the owner's key — and
//! [`new_controlled_by`], a new object in its owner's namespace with that reference set.
//!
//! ```
//! use k8s_openapi::api::apps::v1::Deployment;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_controller::owner::{controller_of, set_controller_reference, OwnerReferenceError};
//!
//! let mut web = Deployment::default();
//! web.metadata.name = Some("web".into());
//! web.metadata.namespace = Some("prod".into());
//! web.metadata.uid = Some("0b8c-web".into());
//!
//! let mut settings = ConfigMap::default();
//! settings.metadata.name = Some("web-settings".into());
//! settings.metadata.namespace = Some("prod".into());
//! set_controller_reference(&web, &mut settings).unwrap();
//! let owner = controller_of(&settings).unwrap();
//! assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Deployment", "web"));
//! assert_eq!(owner.block_owner_deletion, Some(true));
//!
//! // A second controller is refused.
//! let mut api = web.clone();
//! api.metadata.name = Some("api".into());
//! api.metadata.uid = Some("77aa-api".into());
//! let refused = set_controller_reference(&api, &mut settings).unwrap_err();
//! assert!(matches!(refused, OwnerReferenceError::AlreadyOwned { .. }));
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kclient_core::{GroupVersion, Resource, ResourceExt};

/// Why [`set_controller_reference`] refused, with controller-runtime's rules (and its
/// wording where it has one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OwnerReferenceError {
    /// The owner has no name or no uid: only a stored object can own (the API server refuses
    /// an owner reference without a uid, and the garbage collector matches by it).
    #[error("the owner {kind} {name:?} has no {missing}: only a stored object can be an owner")]
    OwnerNotStored {
        /// The owner's kind.
        kind: String,
        /// The owner's name (empty when missing).
        name: String,
        /// What is missing: `metadata.name` or `metadata.uid`.
        missing: &'static str,
    },
    /// A cluster-scoped object cannot depend on a namespaced owner.
    #[error("cluster-scoped resource must not have a namespace-scoped owner, owner's namespace {owner_namespace}")]
    ClusterScopedObjectWithNamespacedOwner {
        /// The owner's namespace.
        owner_namespace: String,
    },
    /// A namespaced owner can only own objects of its own namespace (the object's namespace
    /// must be set).
    #[error("cross-namespace owner references are disallowed, owner's namespace {owner_namespace}, obj's namespace {object_namespace}")]
    CrossNamespace {
        /// The owner's namespace.
        owner_namespace: String,
        /// The object's namespace (empty when not set).
        object_namespace: String,
    },
    /// The object already has another controller (controller-runtime's `AlreadyOwnedError`).
    #[error("object {object} is already owned by another {kind} controller {name}")]
    AlreadyOwned {
        /// The object (`namespace/name`).
        object: String,
        /// The current controller's kind.
        kind: String,
        /// The current controller's name.
        name: String,
    },
    /// The object has no owner reference to remove.
    #[error("{object} does not have any owner references")]
    NoOwnerReferences {
        /// The object (`namespace/name`).
        object: String,
    },
    /// The object has no owner reference to this owner.
    #[error("{object} does not have an owner reference for {kind} {name}")]
    NotOwned {
        /// The object (`namespace/name`).
        object: String,
        /// The owner's kind.
        kind: String,
        /// The owner's name.
        name: String,
    },
    /// The owner refers to the object, but not as its controller.
    #[error("{kind} {name} is not the controller of {object}")]
    NotTheController {
        /// The object (`namespace/name`).
        object: String,
        /// The owner's kind.
        kind: String,
        /// The owner's name.
        name: String,
    },
}

/// How an owner reference is made beyond its owner: `blockOwnerDeletion`
/// (controller-runtime's `WithBlockOwnerDeletion`). `None` leaves the field out; a controller
/// reference sets `true` unless told otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OwnerReferenceOptions {
    /// Whether a foreground deletion of the owner waits for this object
    /// (`blockOwnerDeletion`).
    pub block_owner_deletion: Option<bool>,
}

/// The owner reference of `obj` that is its controller (`controller: true`), if any
/// (apimachinery's `metav1.GetControllerOf`). An object has at most one.
pub fn controller_of<K: Resource + ?Sized>(obj: &K) -> Option<&OwnerReference> {
    obj.owner_references()
        .iter()
        .find(|owner| owner.controller == Some(true))
}

/// Whether `owner` is the controller of `obj`: `obj`'s controller reference carries
/// `owner`'s uid (apimachinery's `metav1.IsControlledBy`). The uid decides, as for the
/// garbage collector: an object controlled by an earlier owner of the same name (deleted and
/// made again) is not controlled by the new one, and an owner without a uid (not stored
/// yet) controls nothing.
pub fn is_controlled_by<K: Resource + ?Sized, O: Resource + ?Sized>(obj: &K, owner: &O) -> bool {
    let Some(uid) = owner.uid().filter(|uid| !uid.is_empty()) else {
        return false;
    };
    controller_of(obj).is_some_and(|reference| reference.uid == uid)
}

/// A new `K` named `name`, in `owner`'s namespace and controlled by it
/// ([`set_controller_reference`]): how a controller starts each object it makes for an
/// owner, before filling in the rest. The object is a namespaced `K` of the owner's
/// namespace, or a cluster-scoped `K`; a cluster-scoped owner has no namespace to give, so
/// set a namespaced object's namespace yourself then.
///
/// Refused as [`set_controller_reference`] refuses: an owner not stored yet (no name or
/// uid), a cluster-scoped `K` of a namespaced owner.
///
/// ```
/// use k8s_openapi::api::apps::v1::Deployment;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kclient_controller::owner::{is_controlled_by, new_controlled_by};
///
/// let mut web = Deployment::default();
/// web.metadata.name = Some("web".into());
/// web.metadata.namespace = Some("prod".into());
/// web.metadata.uid = Some("0b8c-web".into());
///
/// let settings: ConfigMap = new_controlled_by(&web, "web-settings").unwrap();
/// assert_eq!(settings.metadata.namespace.as_deref(), Some("prod"));
/// assert!(is_controlled_by(&settings, &web));
/// ```
pub fn new_controlled_by<K, O>(owner: &O, name: impl Into<String>) -> Result<K, OwnerReferenceError>
where
    K: Resource<DynamicType = ()> + Default,
    O: Resource<DynamicType = ()>,
{
    let mut object = K::default();
    object.meta_mut().name = Some(name.into());
    if K::api_resource(&()).namespaced {
        object.meta_mut().namespace = owner.namespace().map(str::to_owned);
    }
    set_controller_reference(owner, &mut object)?;
    Ok(object)
}

/// Makes `owner` the controller of `object` (controller-runtime's
/// `SetControllerReference`): adds an owner reference with `controller: true` and
/// `blockOwnerDeletion: true`, or updates the one that already refers to `owner` (same
/// group, kind and name). For statically typed objects; see
/// [`set_controller_reference_with`] for dynamic ones.
///
/// Refused ([`OwnerReferenceError`]): an owner not stored yet (no name or uid), a
/// namespaced owner of a cluster-scoped object or of an object in another namespace (set
/// the object's namespace first), and an object that already has another controller.
pub fn set_controller_reference<O, K>(owner: &O, object: &mut K) -> Result<(), OwnerReferenceError>
where
    O: Resource<DynamicType = ()>,
    K: Resource<DynamicType = ()>,
{
    set_controller_reference_with(owner, &(), object, &())
}

/// [`set_controller_reference`] for types known at run time
/// ([`DynamicObject`](kclient_core::DynamicObject) with its `ApiResource`): the owner's
/// group, version and kind and the object's scope come from their dynamic types.
pub fn set_controller_reference_with<O: Resource, K: Resource>(
    owner: &O,
    owner_type: &O::DynamicType,
    object: &mut K,
    object_type: &K::DynamicType,
) -> Result<(), OwnerReferenceError> {
    let owner_resource = O::api_resource(owner_type);
    let reference = controller_reference(owner, &owner_resource)?;
    check_scopes(owner, object, K::api_resource(object_type).namespaced)?;
    if let Some(existing) = controller_of(object) {
        if !refers_to_same_object(existing, &reference) {
            return Err(OwnerReferenceError::AlreadyOwned {
                object: kclient_core::meta_namespace_key(object),
                kind: existing.kind.clone(),
                name: existing.name.clone(),
            });
        }
    }
    upsert(object, reference);
    Ok(())
}

/// Adds an owner reference to `owner` to `object`, or updates the one that refers to it —
/// not a controller reference (controller-runtime's `controllerutil.SetOwnerReference`): the
/// garbage collector deletes `object` once all its owners are gone, but
/// [`Controller::owns`](crate::Controller::owns) does not map it to `owner`. The same checks
/// as [`set_controller_reference`] but for the second controller.
pub fn set_owner_reference<O, K>(owner: &O, object: &mut K) -> Result<(), OwnerReferenceError>
where
    O: Resource<DynamicType = ()>,
    K: Resource<DynamicType = ()>,
{
    set_owner_reference_with_options(owner, object, OwnerReferenceOptions::default())
}

/// [`set_owner_reference`] with `options` (`blockOwnerDeletion`).
pub fn set_owner_reference_with_options<O, K>(
    owner: &O,
    object: &mut K,
    options: OwnerReferenceOptions,
) -> Result<(), OwnerReferenceError>
where
    O: Resource<DynamicType = ()>,
    K: Resource<DynamicType = ()>,
{
    let mut reference = controller_reference(owner, &O::api_resource(&()))?;
    reference.controller = None;
    reference.block_owner_deletion = options.block_owner_deletion;
    check_scopes(owner, object, K::api_resource(&()).namespaced)?;
    upsert(object, reference);
    Ok(())
}

/// [`set_controller_reference`] with `options`: `block_owner_deletion: Some(false)` makes a
/// controller reference that does not hold up a foreground deletion of the owner.
pub fn set_controller_reference_with_options<O, K>(
    owner: &O,
    object: &mut K,
    options: OwnerReferenceOptions,
) -> Result<(), OwnerReferenceError>
where
    O: Resource<DynamicType = ()>,
    K: Resource<DynamicType = ()>,
{
    set_controller_reference(owner, object)?;
    if let Some(block) = options.block_owner_deletion {
        let owner_reference = controller_reference(owner, &O::api_resource(&()))?;
        if let Some(reference) = object
            .meta_mut()
            .owner_references
            .iter_mut()
            .flatten()
            .find(|r| refers_to_same_object(r, &owner_reference))
        {
            reference.block_owner_deletion = Some(block);
        }
    }
    Ok(())
}

/// Whether `object` has an owner reference to `owner` (the same group, kind and name;
/// controller-runtime's `controllerutil.HasOwnerReference`).
pub fn has_owner_reference<K, O>(object: &K, owner: &O) -> bool
where
    K: Resource + ?Sized,
    O: Resource<DynamicType = ()>,
{
    let wanted = reference_to(owner);
    object
        .owner_references()
        .iter()
        .any(|r| refers_to_same_object(r, &wanted))
}

/// Whether `object` has a controller reference (controller-runtime's
/// `controllerutil.HasControllerReference`).
pub fn has_controller_reference<K: Resource + ?Sized>(object: &K) -> bool {
    controller_of(object).is_some()
}

/// Removes `object`'s owner reference to `owner` (controller-runtime's
/// `controllerutil.RemoveOwnerReference`), so that another owner can be set; an error if it
/// has none.
pub fn remove_owner_reference<O, K>(owner: &O, object: &mut K) -> Result<(), OwnerReferenceError>
where
    O: Resource<DynamicType = ()>,
    K: Resource<DynamicType = ()>,
{
    remove_reference(owner, object, false)
}

/// Removes `object`'s controller reference to `owner` (controller-runtime's
/// `controllerutil.RemoveControllerReference`): an error if it has no controller, no
/// reference to `owner`, or one that is not a controller reference.
pub fn remove_controller_reference<O, K>(
    owner: &O,
    object: &mut K,
) -> Result<(), OwnerReferenceError>
where
    O: Resource<DynamicType = ()>,
    K: Resource<DynamicType = ()>,
{
    remove_reference(owner, object, true)
}

fn remove_reference<O, K>(
    owner: &O,
    object: &mut K,
    controller: bool,
) -> Result<(), OwnerReferenceError>
where
    O: Resource<DynamicType = ()>,
    K: Resource<DynamicType = ()>,
{
    let key = kclient_core::meta_namespace_key(object);
    let wanted = reference_to(owner);
    let not_owned = || OwnerReferenceError::NotOwned {
        object: key.clone(),
        kind: wanted.kind.clone(),
        name: wanted.name.clone(),
    };
    let references = object
        .meta_mut()
        .owner_references
        .get_or_insert_with(Vec::new);
    if references.is_empty() {
        return Err(OwnerReferenceError::NoOwnerReferences { object: key });
    }
    if controller && !references.iter().any(|r| r.controller == Some(true)) {
        return Err(not_owned());
    }
    let index = references
        .iter()
        .position(|r| refers_to_same_object(r, &wanted))
        .ok_or_else(not_owned)?;
    if controller && references[index].controller != Some(true) {
        return Err(OwnerReferenceError::NotTheController {
            object: key,
            kind: wanted.kind,
            name: wanted.name,
        });
    }
    references.remove(index);
    Ok(())
}

/// A reference naming `owner` (no uid needed: for matching).
fn reference_to<O: Resource<DynamicType = ()>>(owner: &O) -> OwnerReference {
    let resource = O::api_resource(&());
    OwnerReference {
        api_version: resource.api_version,
        kind: resource.kind,
        name: owner.name().unwrap_or_default().to_owned(),
        ..OwnerReference::default()
    }
}

/// Puts `reference` into `object`'s owner references, replacing one to the same object.
fn upsert<K: Resource + ?Sized>(object: &mut K, reference: OwnerReference) {
    let references = object
        .meta_mut()
        .owner_references
        .get_or_insert_with(Vec::new);
    match references
        .iter_mut()
        .find(|r| refers_to_same_object(r, &reference))
    {
        Some(same) => *same = reference,
        None => references.push(reference),
    }
}

/// The controller reference to `owner` (apimachinery's `NewControllerRef`).
fn controller_reference<O: Resource>(
    owner: &O,
    resource: &kclient_core::ApiResource,
) -> Result<OwnerReference, OwnerReferenceError> {
    let missing = |missing| OwnerReferenceError::OwnerNotStored {
        kind: resource.kind.clone(),
        name: owner.name().unwrap_or_default().to_owned(),
        missing,
    };
    let name = owner
        .name()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| missing("metadata.name"))?;
    let uid = owner
        .uid()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| missing("metadata.uid"))?;
    Ok(OwnerReference {
        api_version: resource.api_version.clone(),
        kind: resource.kind.clone(),
        name: name.to_owned(),
        uid: uid.to_owned(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

/// controller-runtime's `validateOwner`, with the object's scope from its type rather than
/// from whether its namespace is set.
fn check_scopes<O: Resource, K: Resource>(
    owner: &O,
    object: &K,
    object_namespaced: bool,
) -> Result<(), OwnerReferenceError> {
    let Some(owner_namespace) = owner.namespace().filter(|ns| !ns.is_empty()) else {
        return Ok(()); // a cluster-scoped owner may own anything
    };
    if !object_namespaced {
        return Err(
            OwnerReferenceError::ClusterScopedObjectWithNamespacedOwner {
                owner_namespace: owner_namespace.to_owned(),
            },
        );
    }
    let object_namespace = object.namespace().unwrap_or_default();
    if object_namespace != owner_namespace {
        return Err(OwnerReferenceError::CrossNamespace {
            owner_namespace: owner_namespace.to_owned(),
            object_namespace: object_namespace.to_owned(),
        });
    }
    Ok(())
}

/// The group of an owner reference's `apiVersion` (`""` for the core group); `None` when it
/// does not parse.
pub(crate) fn reference_group(reference: &OwnerReference) -> Option<String> {
    GroupVersion::parse(&reference.api_version)
        .ok()
        .map(|gv| gv.group)
}

/// controller-runtime's `referSameObject`: the same group, kind and name (the version may
/// differ).
fn refers_to_same_object(a: &OwnerReference, b: &OwnerReference) -> bool {
    a.kind == b.kind
        && a.name == b.name
        && reference_group(a).is_some()
        && reference_group(a) == reference_group(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};

    fn deployment(ns: &str, name: &str, uid: &str) -> Deployment {
        let mut d = Deployment::default();
        d.metadata.namespace = Some(ns.into());
        d.metadata.name = Some(name.into());
        d.metadata.uid = Some(uid.into());
        d
    }

    fn config_map(ns: Option<&str>) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = ns.map(Into::into);
        cm.metadata.name = Some("settings".into());
        cm
    }

    #[test]
    fn adds_a_controller_reference_once_and_updates_it_in_place() {
        let mut cm = config_map(Some("prod"));
        let other = OwnerReference {
            api_version: "v1".into(),
            kind: "Secret".into(),
            name: "creds".into(),
            uid: "s".into(),
            ..OwnerReference::default()
        };
        cm.metadata.owner_references = Some(vec![other.clone()]);
        set_controller_reference(&deployment("prod", "web", "u1"), &mut cm).unwrap();
        set_controller_reference(&deployment("prod", "web", "u1"), &mut cm).unwrap();
        let refs = cm.metadata.owner_references.clone().unwrap();
        assert_eq!(refs.len(), 2, "{refs:?}");
        assert_eq!(refs[0], other);
        assert_eq!(
            refs[1],
            OwnerReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: "web".into(),
                uid: "u1".into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }
        );
        // The same owner recreated (a new uid): the reference is replaced, not added.
        set_controller_reference(&deployment("prod", "web", "u2"), &mut cm).unwrap();
        let refs = cm.metadata.owner_references.unwrap();
        assert_eq!(refs.len(), 2);
        assert_eq!(refs[1].uid, "u2");
    }

    #[test]
    fn a_plain_owner_reference_to_the_same_object_becomes_the_controller() {
        let mut cm = config_map(Some("prod"));
        cm.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "apps/v1beta1".into(),
            kind: "Deployment".into(),
            name: "web".into(),
            uid: "old".into(),
            ..OwnerReference::default()
        }]);
        set_controller_reference(&deployment("prod", "web", "u1"), &mut cm).unwrap();
        let refs = cm.metadata.owner_references.unwrap();
        assert_eq!(refs.len(), 1);
        assert_eq!(refs[0].controller, Some(true));
        assert_eq!(refs[0].api_version, "apps/v1");
    }

    #[test]
    fn controlled_by_is_decided_by_the_uid_of_the_controller_reference() {
        let web = deployment("prod", "web", "u1");
        let mut cm = config_map(Some("prod"));
        assert!(!is_controlled_by(&cm, &web));
        set_controller_reference(&web, &mut cm).unwrap();
        assert!(is_controlled_by(&cm, &web));
        // The same name made again, another owner, an owner not stored.
        assert!(!is_controlled_by(&cm, &deployment("prod", "web", "u2")));
        assert!(!is_controlled_by(&cm, &deployment("prod", "api", "u3")));
        assert!(!is_controlled_by(&cm, &deployment("prod", "web", "")));
        // A plain owner reference is not control.
        cm.metadata.owner_references.as_mut().unwrap()[0].controller = None;
        assert!(!is_controlled_by(&cm, &web));
    }

    #[test]
    fn a_new_controlled_object_is_named_in_the_owners_namespace_and_controlled_by_it() {
        let web = deployment("prod", "web", "u1");
        let cm: ConfigMap = new_controlled_by(&web, "web-settings").unwrap();
        assert_eq!(cm.metadata.name.as_deref(), Some("web-settings"));
        assert_eq!(cm.metadata.namespace.as_deref(), Some("prod"));
        assert!(is_controlled_by(&cm, &web));
        assert_eq!(controller_of(&cm).unwrap().block_owner_deletion, Some(true));
        // A cluster-scoped owner: no namespace to give; a cluster-scoped object of a
        // namespaced owner, or an owner not stored: refused.
        let mut team = Namespace::default();
        team.metadata.name = Some("team".into());
        team.metadata.uid = Some("n1".into());
        let cm: ConfigMap = new_controlled_by(&team, "quota").unwrap();
        assert_eq!(cm.metadata.namespace, None);
        assert!(matches!(
            new_controlled_by::<Namespace, _>(&web, "web-ns"),
            Err(OwnerReferenceError::ClusterScopedObjectWithNamespacedOwner { .. })
        ));
        assert!(matches!(
            new_controlled_by::<ConfigMap, _>(&deployment("prod", "web", ""), "x"),
            Err(OwnerReferenceError::OwnerNotStored { .. })
        ));
    }

    #[test]
    fn refusals() {
        let mut cm = config_map(Some("prod"));
        set_controller_reference(&deployment("prod", "web", "u1"), &mut cm).unwrap();
        assert_eq!(
            set_controller_reference(&deployment("prod", "api", "u2"), &mut cm),
            Err(OwnerReferenceError::AlreadyOwned {
                object: "prod/settings".into(),
                kind: "Deployment".into(),
                name: "web".into()
            })
        );
        assert_eq!(
            set_controller_reference(
                &deployment("dev", "web", "u1"),
                &mut config_map(Some("prod"))
            ),
            Err(OwnerReferenceError::CrossNamespace {
                owner_namespace: "dev".into(),
                object_namespace: "prod".into()
            })
        );
        assert!(matches!(
            set_controller_reference(&deployment("prod", "web", "u1"), &mut config_map(None)),
            Err(OwnerReferenceError::CrossNamespace { object_namespace, .. }) if object_namespace.is_empty()
        ));
        let mut ns = Namespace::default();
        ns.metadata.name = Some("team".into());
        assert_eq!(
            set_controller_reference(&deployment("prod", "web", "u1"), &mut ns),
            Err(
                OwnerReferenceError::ClusterScopedObjectWithNamespacedOwner {
                    owner_namespace: "prod".into()
                }
            )
        );
        let mut unsaved = deployment("prod", "web", "");
        unsaved.metadata.uid = None;
        assert!(matches!(
            set_controller_reference(&unsaved, &mut config_map(Some("prod"))),
            Err(OwnerReferenceError::OwnerNotStored {
                missing: "metadata.uid",
                ..
            })
        ));
        // Nothing was changed by a refusal.
        let mut untouched = config_map(Some("prod"));
        let _ = set_controller_reference(&deployment("dev", "web", "u1"), &mut untouched);
        assert_eq!(untouched.metadata.owner_references, None);
    }

    #[test]
    fn a_cluster_scoped_owner_may_own_namespaced_and_cluster_scoped_objects() {
        let mut owner = Namespace::default();
        owner.metadata.name = Some("team".into());
        owner.metadata.uid = Some("n1".into());
        let mut cm = config_map(Some("prod"));
        set_controller_reference(&owner, &mut cm).unwrap();
        assert_eq!(controller_of(&cm).unwrap().kind, "Namespace");
        let mut other = Namespace::default();
        other.metadata.name = Some("other".into());
        set_controller_reference(&owner, &mut other).unwrap();
        assert_eq!(controller_of(&other).unwrap().api_version, "v1");
    }
}
