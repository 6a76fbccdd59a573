//! Object references for events (client-go's `tools/reference.GetReference`): what an event
//! is about, built from any [`Resource`].

use k8s_openapi::api::core::v1::ObjectReference;
use kclient_core::Resource;

/// A reference to `object` for an event's `involvedObject` or `regarding`: its kind and
/// apiVersion (from its type), name, namespace, uid and resourceVersion (client-go's
/// `reference.GetReference`).
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kclient_tools::events::object_reference;
///
/// let mut config = ConfigMap::default();
/// config.metadata.name = Some("settings".into());
/// config.metadata.namespace = Some("prod".into());
/// let reference = object_reference(&config);
/// assert_eq!(reference.kind.as_deref(), Some("ConfigMap"));
/// assert_eq!(reference.api_version.as_deref(), Some("v1"));
/// assert_eq!(reference.namespace.as_deref(), Some("prod"));
/// ```
pub fn object_reference<K: Resource<DynamicType = ()>>(object: &K) -> ObjectReference {
    object_reference_with(object, &())
}

/// [`object_reference`] for a type known at run time (a
/// [`DynamicObject`](kclient_core::DynamicObject) with its
/// [`ApiResource`](kclient_core::ApiResource)).
pub fn object_reference_with<K: Resource>(
    object: &K,
    dynamic_type: &K::DynamicType,
) -> ObjectReference {
    let resource = K::api_resource(dynamic_type);
    let meta = object.meta();
    let non_empty = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
    ObjectReference {
        api_version: Some(resource.api_version),
        kind: Some(resource.kind),
        name: non_empty(&meta.name),
        namespace: non_empty(&meta.namespace),
        uid: non_empty(&meta.uid),
        resource_version: non_empty(&meta.resource_version),
        field_path: None,
    }
}
