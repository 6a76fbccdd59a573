//! The [`Resource`] abstraction: what kclient needs to know about any object type, whether a
//! k8s-openapi type known at compile time or a [`DynamicObject`](crate::DynamicObject) whose
//! type is known only at run time.
//!
//! Every k8s-openapi type with `ObjectMeta` metadata is a `Resource` through a blanket
//! implementation over k8s-openapi's own `Resource` and `Metadata` traits; its
//! [`DynamicType`](Resource::DynamicType) is `()`. A `DynamicObject` carries an
//! [`ApiResource`] as its dynamic type instead.
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_core::{Resource, ResourceExt};
//!
//! let pods = Pod::api_resource(&());
//! assert_eq!((pods.plural.as_str(), pods.namespaced), ("pods", true));
//!
//! let mut pod = Pod::default();
//! pod.meta_mut().name = Some("web".into());
//! pod.meta_mut().namespace = Some("prod".into());
//! assert_eq!(pod.name_any(), "web");
//! assert_eq!(pod.namespace(), Some("prod"));
//! ```

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::api_resource::ApiResource;
use crate::gvk::GroupVersionKind;

/// A Kubernetes object type with `ObjectMeta`: the bound every kclient client and cache uses.
pub trait Resource {
    /// The run-time type information this type needs: `()` for static types, whose type is
    /// known at compile time, and [`ApiResource`] for [`DynamicObject`](crate::DynamicObject).
    type DynamicType: Clone + Send + Sync + 'static;

    /// Describes the resource (group, version, kind, plural, scope).
    fn api_resource(dt: &Self::DynamicType) -> ApiResource;

    /// The object's metadata.
    fn meta(&self) -> &ObjectMeta;

    /// The object's metadata, mutably.
    fn meta_mut(&mut self) -> &mut ObjectMeta;
}

/// Maps a k8s-openapi scope marker to whether objects live in namespaces.
pub trait ScopeNamespaced {
    /// `true` for namespaced resources.
    const NAMESPACED: bool;
}

impl ScopeNamespaced for k8s_openapi::NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl ScopeNamespaced for k8s_openapi::ClusterResourceScope {
    const NAMESPACED: bool = false;
}

impl ScopeNamespaced for k8s_openapi::SubResourceScope {
    const NAMESPACED: bool = false;
}

impl<K, S> Resource for K
where
    K: k8s_openapi::Resource<Scope = S> + k8s_openapi::Metadata<Ty = ObjectMeta>,
    S: ScopeNamespaced,
{
    type DynamicType = ();

    fn api_resource((): &()) -> ApiResource {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::new(K::GROUP, K::VERSION, K::KIND),
            K::URL_PATH_SEGMENT,
            S::NAMESPACED,
        )
    }

    fn meta(&self) -> &ObjectMeta {
        self.metadata()
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.metadata_mut()
    }
}

/// Read-only conveniences over [`Resource::meta`], implemented for every [`Resource`].
///
/// Absent fields read as `None` or empty, never as an error.
pub trait ResourceExt: Resource {
    /// The name; for an object that has none yet, its `generateName` prefix; else the empty
    /// string. Borrowed from the object (kube-rs's `name_any` returns an owned `String`).
    fn name_any(&self) -> &str {
        let meta = self.meta();
        meta.name
            .as_deref()
            .or(meta.generate_name.as_deref())
            .unwrap_or_default()
    }

    /// The name, if set.
    fn name(&self) -> Option<&str> {
        self.meta().name.as_deref()
    }

    /// The namespace, if set (cluster-scoped objects have none).
    fn namespace(&self) -> Option<&str> {
        self.meta().namespace.as_deref().filter(|ns| !ns.is_empty())
    }

    /// The resourceVersion, if set.
    fn resource_version(&self) -> Option<&str> {
        self.meta().resource_version.as_deref()
    }

    /// The uid, if set.
    fn uid(&self) -> Option<&str> {
        self.meta().uid.as_deref()
    }

    /// The labels (empty when there are none).
    fn labels(&self) -> &BTreeMap<String, String> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        self.meta().labels.as_ref().unwrap_or(&EMPTY)
    }

    /// The annotations (empty when there are none).
    fn annotations(&self) -> &BTreeMap<String, String> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        self.meta().annotations.as_ref().unwrap_or(&EMPTY)
    }

    /// The finalizers (empty when there are none).
    fn finalizers(&self) -> &[String] {
        self.meta().finalizers.as_deref().unwrap_or_default()
    }

    /// The owner references (empty when there are none).
    fn owner_references(&self) -> &[OwnerReference] {
        self.meta().owner_references.as_deref().unwrap_or_default()
    }

    /// Whether the object is being deleted (its deletionTimestamp is set).
    fn is_being_deleted(&self) -> bool {
        self.meta().deletion_timestamp.is_some()
    }
}

impl<K: Resource + ?Sized> ResourceExt for K {}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};

    use super::*;

    #[test]
    fn static_types_describe_themselves() {
        let d = Deployment::api_resource(&());
        assert_eq!(d.gvk(), GroupVersionKind::new("apps", "v1", "Deployment"));
        assert_eq!(d.api_version, "apps/v1");
        assert_eq!(d.plural, "deployments");
        assert!(d.namespaced);
        let n = Node::api_resource(&());
        assert!(!n.namespaced);
        assert_eq!(n.collection_path(Some("ignored")), "/api/v1/nodes");
        assert_eq!(ConfigMap::api_resource(&()).plural, "configmaps");
    }

    #[test]
    fn ext_reads_absent_fields_as_empty() {
        let mut pod = Pod::default();
        assert_eq!(pod.name_any(), "");
        assert!(pod.labels().is_empty() && pod.annotations().is_empty());
        assert!(pod.finalizers().is_empty() && pod.owner_references().is_empty());
        assert!(!pod.is_being_deleted());
        pod.meta_mut().generate_name = Some("web-".into());
        assert_eq!(pod.name_any(), "web-");
        pod.meta_mut().namespace = Some(String::new());
        assert_eq!(pod.namespace(), None, "an empty namespace is no namespace");
        pod.meta_mut().labels = Some([("app".to_owned(), "web".to_owned())].into());
        assert_eq!(pod.labels()["app"], "web");
    }
}
