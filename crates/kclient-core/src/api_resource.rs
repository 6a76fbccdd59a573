//! [`ApiResource`]: everything needed to address a resource over HTTP, whether it is a built-in
//! known at compile time or a custom resource discovered at run time.

use serde::{Deserialize, Serialize};

use crate::gvk::{GroupVersion, GroupVersionKind, GroupVersionResource};

/// Describes one resource of the API: its group, version and kind, the plural used in URLs,
/// whether it lives in namespaces, and (when known from discovery) its verbs and subresources.
///
/// Static types get theirs from k8s-openapi through [`Resource::api_resource`](crate::Resource);
/// for those, `verbs` and `subresources` are empty because k8s-openapi does not record them.
/// Discovery fills them in for resources found at run time.
///
/// ```
/// use kclient_core::{ApiResource, GroupVersionKind};
///
/// let crontabs = ApiResource::from_gvk_with_plural(
///     &GroupVersionKind::new("stable.example.com", "v1", "CronTab"),
///     "crontabs",
///     true,
/// );
/// assert_eq!(crontabs.api_version, "stable.example.com/v1");
/// assert_eq!(
///     crontabs.collection_path(Some("prod")),
///     "/apis/stable.example.com/v1/namespaces/prod/crontabs"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiResource {
    /// The API group; empty for the core group.
    pub group: String,
    /// The version within the group.
    pub version: String,
    /// The `apiVersion` string of objects of this resource (`v1`, `apps/v1`).
    pub api_version: String,
    /// The kind of objects of this resource (`Pod`).
    pub kind: String,
    /// The plural name used in URLs (`pods`).
    pub plural: String,
    /// Whether objects of this resource live in a namespace.
    pub namespaced: bool,
    /// The verbs the server supports on it (`get`, `list`, `watch`, ...), when known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verbs: Vec<String>,
    /// The subresources the server offers on it (`status`, `scale`, ...), when known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subresources: Vec<String>,
}

impl ApiResource {
    /// An `ApiResource` from a kind and the plural the server serves it under.
    ///
    /// Plurals cannot be derived reliably from kinds (`Endpoints`, `NetworkPolicy`), so the
    /// caller says it; discovery's RestMapper is the way to look it up.
    pub fn from_gvk_with_plural(
        gvk: &GroupVersionKind,
        plural: impl Into<String>,
        namespaced: bool,
    ) -> Self {
        Self {
            group: gvk.group.clone(),
            version: gvk.version.clone(),
            api_version: gvk.api_version(),
            kind: gvk.kind.clone(),
            plural: plural.into(),
            namespaced,
            verbs: Vec::new(),
            subresources: Vec::new(),
        }
    }

    /// The same resource with its verbs recorded.
    pub fn with_verbs<I, S>(mut self, verbs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.verbs = verbs.into_iter().map(Into::into).collect();
        self
    }

    /// The same resource with its subresources recorded.
    pub fn with_subresources<I, S>(mut self, subresources: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.subresources = subresources.into_iter().map(Into::into).collect();
        self
    }

    /// The group-version.
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(self.group.clone(), self.version.clone())
    }

    /// The group-version-kind.
    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::new(self.group.clone(), self.version.clone(), self.kind.clone())
    }

    /// The group-version-resource.
    pub fn gvr(&self) -> GroupVersionResource {
        GroupVersionResource::new(
            self.group.clone(),
            self.version.clone(),
            self.plural.clone(),
        )
    }

    /// Whether the server is known to support `verb`. Unknown verbs (an empty list, as for
    /// static types) count as supported: the server has the last word.
    pub fn supports_verb(&self, verb: &str) -> bool {
        self.verbs.is_empty() || self.verbs.iter().any(|v| v == verb)
    }

    /// Whether the server is known to offer `subresource`.
    pub fn has_subresource(&self, subresource: &str) -> bool {
        self.subresources.iter().any(|s| s == subresource)
    }

    /// The URL path of the collection: `/api/v1/namespaces/{ns}/pods`, or the path across all
    /// namespaces (`/api/v1/pods`) when `namespace` is `None` or the resource is cluster-scoped.
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        let prefix = self.group_version().url_prefix();
        match namespace {
            Some(ns) if self.namespaced => format!("{prefix}/namespaces/{ns}/{}", self.plural),
            _ => format!("{prefix}/{}", self.plural),
        }
    }

    /// The URL path of one object: the collection path followed by `/{name}`.
    pub fn object_path(&self, namespace: Option<&str>, name: &str) -> String {
        format!("{}/{name}", self.collection_path(namespace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pods() -> ApiResource {
        ApiResource::from_gvk_with_plural(&GroupVersionKind::new("", "v1", "Pod"), "pods", true)
    }

    #[test]
    fn paths_for_core_namespaced_resources() {
        let pods = pods();
        assert_eq!(pods.api_version, "v1");
        assert_eq!(
            pods.collection_path(Some("default")),
            "/api/v1/namespaces/default/pods"
        );
        assert_eq!(pods.collection_path(None), "/api/v1/pods");
        assert_eq!(
            pods.object_path(Some("a"), "web"),
            "/api/v1/namespaces/a/pods/web"
        );
    }

    #[test]
    fn cluster_scoped_resources_ignore_the_namespace() {
        let nodes = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::new("", "v1", "Node"),
            "nodes",
            false,
        );
        assert_eq!(nodes.collection_path(Some("default")), "/api/v1/nodes");
        assert_eq!(nodes.object_path(None, "n1"), "/api/v1/nodes/n1");
    }

    #[test]
    fn verbs_and_subresources() {
        let pods = pods();
        assert!(
            pods.supports_verb("watch"),
            "unknown verbs count as supported"
        );
        let pods = pods
            .with_verbs(["get", "list"])
            .with_subresources(["status", "log"]);
        assert!(pods.supports_verb("list"));
        assert!(!pods.supports_verb("watch"));
        assert!(pods.has_subresource("status"));
        assert!(!pods.has_subresource("scale"));
        assert_eq!(pods.gvr().to_string(), "/v1, Resource=pods");
    }
}
