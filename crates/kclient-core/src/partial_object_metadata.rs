//! [`PartialObjectMetadata`] and [`PartialObjectMetadataList`] (`meta.k8s.io/v1`): an object
//! of any resource reduced to its type and metadata, as the API server sends it when asked
//! with `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`.
//!
//! Garbage collectors, quota counters and label indexers need names, labels, owners and
//! finalizers, not specs: a metadata-only client (kclient-dynamic's `MetadataClient`) lists,
//! watches and caches these instead of whole objects. The type of a `PartialObjectMetadata`
//! says nothing about the resource it describes (it is `meta.k8s.io/v1`
//! `PartialObjectMetadata` for pods and CronTabs alike), so, like
//! [`DynamicObject`](crate::DynamicObject), it carries its resource as the
//! [`DynamicType`](Resource::DynamicType): an [`ApiResource`].
//!
//! ```
//! use kclient_core::{PartialObjectMetadata, PartialObjectMetadataList, ResourceExt};
//!
//! let json = r#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1",
//!     "metadata":{"resourceVersion":"42"},
//!     "items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",
//!               "metadata":{"name":"web-0","namespace":"prod","labels":{"app":"web"}}}]}"#;
//! let list: PartialObjectMetadataList = serde_json::from_str(json).unwrap();
//! assert_eq!(list.resource_version(), Some("42"));
//! let pod = &list.items[0];
//! assert_eq!((pod.namespace(), pod.name_any()), (Some("prod"), "web-0"));
//! assert_eq!(pod.labels()["app"], "web");
//! ```

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Serialize;

use crate::api_resource::ApiResource;
use crate::object_list::{lenient_string, ObjectList};
use crate::resource::Resource;
use crate::type_meta::TypeMeta;

/// The metadata of an object of any resource, without its spec or status (apimachinery's
/// `metav1.PartialObjectMetadata`).
///
/// Decoding is lenient the way client-go's metadata client is: every field other than
/// `apiVersion`, `kind` and `metadata` is skipped, so a whole object (from a server that
/// ignores `as=PartialObjectMetadata`) decodes to its metadata too, keeping its own type.
/// `apiVersion` and `kind` are kept when both are strings.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kclient_core::{PartialObjectMetadata, Resource};
///
/// let mut cm = ConfigMap::default();
/// cm.metadata.name = Some("settings".into());
/// cm.data = Some([("mode".to_string(), "fast".to_string())].into());
/// let partial = PartialObjectMetadata::from_resource(&cm);
/// assert_eq!(partial.metadata.name.as_deref(), Some("settings"));
/// assert_eq!(
///     serde_json::to_value(&partial).unwrap(),
///     serde_json::json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
///                        "metadata": {"name": "settings"}})
/// );
/// // Its resource is whatever it was read from.
/// assert_eq!(PartialObjectMetadata::api_resource(&ConfigMap::api_resource(&())).plural, "configmaps");
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct PartialObjectMetadata {
    /// `apiVersion` and `kind` as the server sent them (`meta.k8s.io/v1`
    /// `PartialObjectMetadata`), when it sent both as strings.
    #[serde(flatten)]
    pub types: Option<TypeMeta>,
    /// Standard object metadata.
    pub metadata: ObjectMeta,
}

/// A list of [`PartialObjectMetadata`] (apimachinery's `metav1.PartialObjectMetadataList`):
/// the list's `resourceVersion` and continue token, and the items' metadata.
pub type PartialObjectMetadataList = ObjectList<PartialObjectMetadata>;

impl PartialObjectMetadata {
    /// The `apiVersion` the API server gives a `PartialObjectMetadata`.
    pub const API_VERSION: &'static str = "meta.k8s.io/v1";
    /// The `kind` of one object.
    pub const KIND: &'static str = "PartialObjectMetadata";
    /// The `kind` of a list.
    pub const LIST_KIND: &'static str = "PartialObjectMetadataList";

    /// A `meta.k8s.io/v1` `PartialObjectMetadata` with `metadata`.
    pub fn new(metadata: ObjectMeta) -> Self {
        Self {
            types: Some(TypeMeta::new(Self::API_VERSION, Self::KIND)),
            metadata,
        }
    }

    /// The metadata of any object (apimachinery's `meta.AsPartialObjectMetadata`), typed
    /// `meta.k8s.io/v1` `PartialObjectMetadata`.
    pub fn from_resource<K: Resource>(object: &K) -> Self {
        Self::new(object.meta().clone())
    }
}

/// One pass over the object: `metadata` is decoded, `apiVersion` and `kind` are read, every
/// other field is skipped unread (no intermediate tree, so a list of 100k items decodes at
/// the speed of their metadata).
impl<'de> Deserialize<'de> for PartialObjectMetadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(PartialVisitor)
    }
}

struct PartialVisitor;

impl<'de> Visitor<'de> for PartialVisitor {
    type Value = PartialObjectMetadata;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut api_version = None;
        let mut kind = None;
        let mut metadata: Option<ObjectMeta> = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "apiVersion" => api_version = lenient_string(map.next_value()?),
                "kind" => kind = lenient_string(map.next_value()?),
                "metadata" => metadata = map.next_value()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(PartialObjectMetadata {
            types: api_version
                .zip(kind)
                .map(|(api_version, kind)| TypeMeta { api_version, kind }),
            metadata: metadata.unwrap_or_default(),
        })
    }
}

impl Resource for PartialObjectMetadata {
    type DynamicType = ApiResource;

    fn api_resource(dt: &ApiResource) -> ApiResource {
        dt.clone()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    use super::*;
    use crate::resource::ResourceExt;

    #[test]
    fn reads_what_the_api_server_sends() {
        let partial: PartialObjectMetadata = serde_json::from_value(json!({
            "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"name": "c1", "namespace": "ns", "resourceVersion": "7",
                         "labels": {"app": "x"}, "finalizers": ["f"],
                         "managedFields": [{"manager": "kubectl", "operation": "Update"}]}
        }))
        .unwrap();
        assert_eq!(
            partial.types,
            Some(TypeMeta::new("meta.k8s.io/v1", "PartialObjectMetadata"))
        );
        assert_eq!(partial.resource_version(), Some("7"));
        assert_eq!(partial.finalizers(), ["f"]);
        assert_eq!(partial.metadata.managed_fields.as_ref().unwrap().len(), 1);
        let back = serde_json::to_value(&partial).unwrap();
        assert_eq!(back["kind"], "PartialObjectMetadata");
        assert_eq!(back["metadata"]["labels"]["app"], "x");
    }

    #[test]
    fn a_whole_object_reads_as_its_metadata() {
        let partial: PartialObjectMetadata = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"},
            "metadata": {"name": "c1"}, "spec": {"deep": [1, {"x": null}]}
        }))
        .unwrap();
        assert_eq!(partial.name_any(), "c1");
        assert_eq!(partial.types, Some(TypeMeta::new("v1", "ConfigMap")));
        assert_eq!(
            serde_json::to_value(&partial).unwrap(),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}})
        );
    }

    #[test]
    fn odd_shapes_read_leniently_or_fail_clearly() {
        let bare: PartialObjectMetadata =
            serde_json::from_value(json!({"metadata": null, "kind": 5, "apiVersion": "v1"}))
                .unwrap();
        assert_eq!(bare, PartialObjectMetadata::default());
        assert_eq!(
            serde_json::to_value(&bare).unwrap(),
            json!({"metadata": {}})
        );
        assert!(serde_json::from_value::<PartialObjectMetadata>(json!([1])).is_err());
        assert!(
            serde_json::from_value::<PartialObjectMetadata>(json!({"metadata": {"name": 5}}))
                .is_err()
        );
    }

    #[test]
    fn lists_read_with_null_items_and_item_types() {
        let empty: PartialObjectMetadataList = serde_json::from_value(json!({
            "kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": "9"}, "items": null
        }))
        .unwrap();
        assert!(empty.items.is_empty());
        assert_eq!(empty.types.unwrap().kind, PartialObjectMetadata::LIST_KIND);
    }

    #[test]
    fn the_resource_is_the_dynamic_type() {
        let pods = Pod::api_resource(&());
        assert_eq!(PartialObjectMetadata::api_resource(&pods), pods);
        let mut pod = Pod::default();
        pod.metadata.name = Some("web".into());
        pod.metadata.namespace = Some("prod".into());
        let mut partial = PartialObjectMetadata::from_resource(&pod);
        assert_eq!(crate::meta_namespace_key(&partial), "prod/web");
        partial.meta_mut().labels = Some([("a".to_owned(), "b".to_owned())].into());
        assert_eq!(partial.labels()["a"], "b");
        assert_eq!(
            partial.types.unwrap().api_version,
            PartialObjectMetadata::API_VERSION
        );
    }
}
