//! Aggregated discovery (`apidiscovery.k8s.io/v2`): the `APIGroupDiscoveryList` documents that
//! `/api` and `/apis` return when asked for them, and their conversion into the legacy
//! shapes (`APIGroup`s and one `APIResourceList` per group-version), as client-go's
//! `SplitGroupsAndResources` does.
//!
//! With aggregated discovery the whole API is described by two requests instead of one per
//! group-version. A group-version whose aggregated API server did not answer is marked
//! `Stale`; it is left out of the groups and reported as failed
//! ([`Error::StaleGroupVersion`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    APIGroup, APIGroupList, APIResource, APIResourceList, GroupVersionForDiscovery,
};
use kclient_core::{GroupVersion, GroupVersionKind};
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// The media type of aggregated discovery v2, as sent in `Accept` and `Content-Type`.
pub const ACCEPT_AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// The media type of legacy discovery (`APIVersions`, `APIGroupList`, `APIResourceList`).
pub const ACCEPT_LEGACY: &str = "application/json";

/// The `Accept` header of a discovery request: aggregated v2 first, legacy JSON as the fallback
/// (client-go v0.37's `AcceptV2` and `AcceptV1`; the v2beta1 format, which Kubernetes 1.36
/// stopped serving, is asked for by neither).
pub const ACCEPT_DISCOVERY: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

/// `freshness` of a group-version whose discovery document is up to date.
pub const FRESHNESS_CURRENT: &str = "Current";
/// `freshness` of a group-version whose aggregated API server did not answer.
pub const FRESHNESS_STALE: &str = "Stale";

/// Whether a response `Content-Type` is aggregated discovery v2
/// (`application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`, parameters in any
/// order, with or without spaces).
pub fn is_aggregated_v2(content_type: &str) -> bool {
    let mut parts = content_type.split(';').map(str::trim);
    let media = parts.next().unwrap_or_default();
    if !media.eq_ignore_ascii_case("application/json") {
        return false;
    }
    let (mut g, mut v, mut r#as) = (false, false, false);
    for param in parts {
        let Some((key, value)) = param.split_once('=') else {
            continue;
        };
        let value = value.trim().trim_matches('"');
        match key.trim().to_ascii_lowercase().as_str() {
            "g" => g = value == "apidiscovery.k8s.io",
            "v" => v = value == "v2",
            "as" => r#as = value == "APIGroupDiscoveryList",
            _ => {}
        }
    }
    g && v && r#as
}

/// `apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`: every group (or, on `/api`, the core
/// group) with all its versions and resources.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiGroupDiscoveryList {
    /// The groups, in preference order.
    #[serde(default)]
    pub items: Vec<ApiGroupDiscovery>,
}

/// One group in aggregated discovery.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiGroupDiscovery {
    /// The group's name (in `metadata.name`; empty for the core group).
    #[serde(default)]
    pub metadata: DiscoveryMeta,
    /// The versions, preferred first.
    #[serde(default)]
    pub versions: Vec<ApiVersionDiscovery>,
}

/// The metadata of an [`ApiGroupDiscovery`]: only its name matters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiscoveryMeta {
    /// The group name; empty for the core group.
    #[serde(default)]
    pub name: String,
}

/// One version of a group in aggregated discovery.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiVersionDiscovery {
    /// The version (`v1`).
    pub version: String,
    /// Its resources.
    #[serde(default)]
    pub resources: Vec<ApiResourceDiscovery>,
    /// [`FRESHNESS_CURRENT`] or [`FRESHNESS_STALE`]; empty means current.
    #[serde(default)]
    pub freshness: String,
}

/// One resource in aggregated discovery.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiResourceDiscovery {
    /// The plural name (`deployments`).
    pub resource: String,
    /// The kind of the objects it serves. Always set by conforming servers.
    #[serde(default)]
    pub response_kind: Option<GroupVersionKind>,
    /// `Namespaced` or `Cluster`.
    #[serde(default)]
    pub scope: String,
    /// The singular name (`deployment`).
    #[serde(default)]
    pub singular_resource: String,
    /// The verbs it supports.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// Short names (`deploy`).
    #[serde(default)]
    pub short_names: Vec<String>,
    /// Categories (`all`).
    #[serde(default)]
    pub categories: Vec<String>,
    /// Subresources (`status`, `scale`).
    #[serde(default)]
    pub subresources: Vec<ApiSubresourceDiscovery>,
}

/// One subresource in aggregated discovery.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiSubresourceDiscovery {
    /// The subresource's name (`status`).
    pub subresource: String,
    /// The kind it returns (`autoscaling/v1 Scale` for `scale`).
    #[serde(default)]
    pub response_kind: Option<GroupVersionKind>,
    /// The verbs it supports.
    #[serde(default)]
    pub verbs: Vec<String>,
}

/// The legacy view of an aggregated discovery document.
#[derive(Debug, Clone, Default)]
pub struct SplitDiscovery {
    /// The groups with their non-stale versions (preferred version: the first non-stale one).
    pub groups: APIGroupList,
    /// The resources of each non-stale group-version.
    pub resources: BTreeMap<GroupVersion, APIResourceList>,
    /// The stale group-versions, each with [`Error::StaleGroupVersion`].
    pub failed: BTreeMap<GroupVersion, Arc<Error>>,
}

fn gvk_fields(kind: &Option<GroupVersionKind>) -> (Option<String>, Option<String>, String) {
    match kind {
        Some(k) => (
            Some(k.group.clone()),
            Some(k.version.clone()),
            k.kind.clone(),
        ),
        None => (None, None, String::new()),
    }
}

/// Converts one aggregated resource and its subresources to legacy `APIResource`s (the
/// subresources named `plural/sub`). A resource without a `responseKind` is skipped, as
/// client-go does; its subresources still convert if they carry their own kind.
fn convert_resource(r: &ApiResourceDiscovery, out: &mut Vec<APIResource>) {
    let (group, version, kind) = gvk_fields(&r.response_kind);
    let namespaced = r.scope == "Namespaced";
    if r.response_kind.is_some() {
        out.push(APIResource {
            name: r.resource.clone(),
            singular_name: r.singular_resource.clone(),
            namespaced,
            group,
            version,
            kind,
            verbs: r.verbs.clone(),
            short_names: Some(r.short_names.clone()).filter(|s| !s.is_empty()),
            categories: Some(r.categories.clone()).filter(|c| !c.is_empty()),
            ..APIResource::default()
        });
    }
    for sub in &r.subresources {
        if sub.response_kind.is_none() {
            continue;
        }
        let (group, version, kind) = gvk_fields(&sub.response_kind);
        out.push(APIResource {
            name: format!("{}/{}", r.resource, sub.subresource),
            singular_name: String::new(),
            namespaced,
            group,
            version,
            kind,
            verbs: sub.verbs.clone(),
            ..APIResource::default()
        });
    }
}

/// Splits an aggregated discovery document into groups, resources per group-version and
/// stale group-versions (client-go's `SplitGroupsAndResources`).
pub fn split_groups_and_resources(list: &ApiGroupDiscoveryList) -> SplitDiscovery {
    let mut out = SplitDiscovery::default();
    for g in &list.items {
        let mut group = APIGroup {
            name: g.metadata.name.clone(),
            ..APIGroup::default()
        };
        for v in &g.versions {
            let gv = GroupVersion::new(g.metadata.name.clone(), v.version.clone());
            if v.freshness == FRESHNESS_STALE {
                out.failed
                    .insert(gv.clone(), Arc::new(Error::StaleGroupVersion(gv)));
                continue;
            }
            let version = GroupVersionForDiscovery {
                group_version: gv.api_version(),
                version: v.version.clone(),
            };
            if group.preferred_version.is_none() {
                group.preferred_version = Some(version.clone());
            }
            group.versions.push(version);
            let mut resources = Vec::new();
            for r in &v.resources {
                convert_resource(r, &mut resources);
            }
            out.resources.insert(
                gv.clone(),
                APIResourceList {
                    group_version: gv.api_version(),
                    resources,
                },
            );
        }
        // A group whose versions are all stale is left out, as client-go does.
        if !group.versions.is_empty() {
            out.groups.groups.push(group);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn recognises_the_aggregated_content_type() {
        assert!(is_aggregated_v2(ACCEPT_AGGREGATED_V2));
        assert!(is_aggregated_v2(
            "application/json; as=APIGroupDiscoveryList; v=v2; g=apidiscovery.k8s.io"
        ));
        assert!(!is_aggregated_v2("application/json"));
        assert!(!is_aggregated_v2(
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
        ));
        assert!(!is_aggregated_v2(
            "application/yaml;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ));
        assert!(!is_aggregated_v2(""));
    }

    #[test]
    fn accept_header_prefers_v2_then_legacy() {
        assert_eq!(
            ACCEPT_DISCOVERY,
            format!("{ACCEPT_AGGREGATED_V2},{ACCEPT_LEGACY}")
        );
    }

    #[test]
    fn splits_groups_resources_and_stale_versions() {
        let doc: ApiGroupDiscoveryList = serde_json::from_value(json!({
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {},
            "items": [
                {"metadata": {"name": "apps"}, "versions": [{
                    "version": "v1", "freshness": "Current",
                    "resources": [{
                        "resource": "deployments",
                        "responseKind": {"group": "apps", "version": "v1", "kind": "Deployment"},
                        "scope": "Namespaced", "singularResource": "deployment",
                        "verbs": ["get", "list"], "shortNames": ["deploy"], "categories": ["all"],
                        "subresources": [
                            {"subresource": "scale",
                             "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                             "verbs": ["get", "patch", "update"]},
                            {"subresource": "nokind", "verbs": ["get"]}
                        ]
                    }, {
                        "resource": "broken", "scope": "Cluster", "verbs": ["get"]
                    }]
                }]},
                {"metadata": {"name": "metrics.k8s.io"}, "versions": [
                    {"version": "v1beta1", "freshness": "Stale"}
                ]},
                {"metadata": {"name": "example.com"}, "versions": [
                    {"version": "v2", "freshness": "Stale"},
                    {"version": "v1", "resources": []}
                ]}
            ]
        }))
        .unwrap();
        let split = split_groups_and_resources(&doc);
        let names: Vec<&str> = split
            .groups
            .groups
            .iter()
            .map(|g| g.name.as_str())
            .collect();
        assert_eq!(
            names,
            ["apps", "example.com"],
            "all-stale groups are left out"
        );
        let example = &split.groups.groups[1];
        assert_eq!(
            example.preferred_version.as_ref().unwrap().version,
            "v1",
            "the preferred version is the first non-stale one"
        );
        assert_eq!(example.versions.len(), 1);
        let apps = &split.resources[&GroupVersion::new("apps", "v1")];
        assert_eq!(apps.group_version, "apps/v1");
        let names: Vec<&str> = apps.resources.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            ["deployments", "deployments/scale"],
            "resources and subresources without a kind are skipped"
        );
        let deploy = &apps.resources[0];
        assert!(deploy.namespaced);
        assert_eq!(deploy.kind, "Deployment");
        assert_eq!(
            deploy.short_names.as_deref(),
            Some(&["deploy".to_string()][..])
        );
        let scale = &apps.resources[1];
        assert_eq!(
            (scale.group.as_deref(), scale.kind.as_str()),
            (Some("autoscaling"), "Scale")
        );
        assert!(scale.namespaced, "subresources inherit the scope");
        let failed: Vec<String> = split.failed.keys().map(ToString::to_string).collect();
        assert_eq!(failed, ["example.com/v2", "metrics.k8s.io/v1beta1"]);
        assert!(matches!(
            *split.failed[&GroupVersion::new("example.com", "v2")],
            Error::StaleGroupVersion(_)
        ));
    }

    #[test]
    fn the_core_group_has_no_name() {
        let doc: ApiGroupDiscoveryList = serde_json::from_value(json!({
            "items": [{"metadata": {"creationTimestamp": null}, "versions": [{
                "version": "v1",
                "resources": [{"resource": "pods",
                               "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
                               "scope": "Namespaced", "singularResource": "pod", "verbs": ["get"]}]
            }]}]
        }))
        .unwrap();
        let split = split_groups_and_resources(&doc);
        assert_eq!(split.groups.groups[0].name, "");
        assert_eq!(
            split.groups.groups[0].versions[0].group_version, "v1",
            "the core group-version is just the version"
        );
        assert_eq!(
            split.resources[&GroupVersion::new("", "v1")].group_version,
            "v1"
        );
    }
}
