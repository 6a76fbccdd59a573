//! The resource table from an API server's discovery: what `cargo xtask codegen refresh`
//! uses to replace the verbs and subresources the generator only knows approximately.
//!
//! [`table_from_discovery`] folds the legacy discovery documents (`/api/v1`,
//! `/apis/<group>/<version>`: `APIResourceList`s) into a table; subresources
//! (`pods/status`, `deployments/scale`) become entries of their resource. With the
//! `discovery` feature, `fetch_discovery` reads those documents from a server, leaving out
//! the group-versions that are not built in ([`non_builtin_group_versions`]): a table lists
//! Kubernetes' own resources, not the CRDs or aggregated APIs of the cluster it was read from.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::error::Error;
use crate::table::{ResourceEntry, ResourceTable, Scope};

/// `metav1.APIResourceList`, the fields the table needs.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiResourceList {
    /// `group/version`, or `v1` for the core group.
    pub group_version: String,
    /// The resources and subresources.
    #[serde(default)]
    pub resources: Vec<ApiResourceDoc>,
}

/// `metav1.APIResource`, the fields the table needs.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiResourceDoc {
    /// The plural, or `plural/subresource`.
    pub name: String,
    /// Whether it is namespaced.
    #[serde(default)]
    pub namespaced: bool,
    /// The kind.
    #[serde(default)]
    pub kind: String,
    /// The verbs.
    #[serde(default)]
    pub verbs: Vec<String>,
}

/// Folds discovery documents into the table of `kubernetes_version`.
pub fn table_from_discovery(
    kubernetes_version: &str,
    source: &str,
    lists: &[ApiResourceList],
) -> Result<ResourceTable, Error> {
    let mut entries: BTreeMap<(String, String, String), ResourceEntry> = BTreeMap::new();
    let mut subresources: Vec<(String, String, String, String)> = Vec::new();
    for list in lists {
        let (group, version) = match list.group_version.split_once('/') {
            Some((g, v)) => (g.to_owned(), v.to_owned()),
            None => (String::new(), list.group_version.clone()),
        };
        for r in &list.resources {
            if let Some((plural, sub)) = r.name.split_once('/') {
                subresources.push((
                    group.clone(),
                    version.clone(),
                    plural.to_owned(),
                    sub.to_owned(),
                ));
                continue;
            }
            entries.insert(
                (group.clone(), version.clone(), r.name.clone()),
                ResourceEntry {
                    group: group.clone(),
                    version: version.clone(),
                    kind: r.kind.clone(),
                    plural: r.name.clone(),
                    scope: if r.namespaced {
                        Scope::Namespaced
                    } else {
                        Scope::Cluster
                    },
                    verbs: r.verbs.clone(),
                    subresources: Vec::new(),
                    rust_type: None,
                    unsupported: None,
                },
            );
        }
    }
    for (group, version, plural, sub) in subresources {
        if let Some(entry) = entries.get_mut(&(group, version, plural)) {
            entry.subresources.push(sub);
        }
    }
    if entries.is_empty() {
        return Err(Error::Invalid("discovery listed no resources".into()));
    }
    let mut table = ResourceTable {
        kubernetes_version: kubernetes_version.to_owned(),
        source: source.to_owned(),
        resources: entries.into_values().collect(),
    };
    table.normalize();
    Ok(table)
}

/// The group-versions (`group/version`) a server serves that kube-apiserver does not build in:
/// those of CustomResourceDefinitions and those of APIServices backed by another server
/// (aggregated APIs such as `metrics.k8s.io`). `crds` is the server's
/// `CustomResourceDefinitionList`, `api_services` its `APIServiceList`.
pub fn non_builtin_group_versions(
    crds: &serde_json::Value,
    api_services: &serde_json::Value,
) -> BTreeSet<String> {
    let items = |list: &serde_json::Value| -> Vec<serde_json::Value> {
        list["items"].as_array().cloned().unwrap_or_default()
    };
    let mut out = BTreeSet::new();
    for crd in items(crds) {
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        for version in crd["spec"]["versions"].as_array().into_iter().flatten() {
            if let Some(name) = version["name"].as_str() {
                out.insert(format!("{group}/{name}"));
            }
        }
    }
    for service in items(api_services) {
        let spec = &service["spec"];
        if spec["service"].is_object() {
            let (group, version) = (
                spec["group"].as_str().unwrap_or_default(),
                spec["version"].as_str().unwrap_or_default(),
            );
            out.insert(if group.is_empty() {
                version.to_owned()
            } else {
                format!("{group}/{version}")
            });
        }
    }
    out
}

/// `major.minor` from a `/version` document's `gitVersion` (`v1.35.2` → `1.35`).
pub fn minor_version(git_version: &str) -> Option<String> {
    let mut parts = git_version.trim_start_matches('v').split('.');
    let major = parts.next()?;
    let minor: String = parts
        .next()?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    (!major.is_empty() && !minor.is_empty()).then(|| format!("{major}.{minor}"))
}

/// What [`fetch_discovery`] read from a server.
#[cfg(feature = "discovery")]
#[derive(Debug, Clone)]
pub struct ServerDiscovery {
    /// The server's `gitVersion` (`v1.37.1`).
    pub git_version: String,
    /// The discovery documents of its built-in group-versions.
    pub lists: Vec<ApiResourceList>,
    /// The group-versions it serves that were left out, not being built in (CRDs, aggregated
    /// APIs; see [`non_builtin_group_versions`]).
    pub left_out: Vec<String>,
}

/// The discovery documents and version of the server `config` points at: `/version`, `/api`
/// with each of its versions, `/apis` with each group's versions except those of
/// CustomResourceDefinitions and aggregated APIs (read from the server's CRDs and
/// APIServices, so the credentials must allow listing both).
#[cfg(feature = "discovery")]
pub async fn fetch_discovery(
    config: kclient_rest::Config,
) -> Result<ServerDiscovery, kclient_rest::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Version {
        git_version: String,
    }
    #[derive(Deserialize)]
    struct ApiVersions {
        versions: Vec<String>,
    }
    #[derive(Deserialize)]
    struct GroupList {
        groups: Vec<Group>,
    }
    #[derive(Deserialize)]
    struct Group {
        versions: Vec<GroupVersionDoc>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct GroupVersionDoc {
        group_version: String,
    }

    let client = kclient_rest::RestClient::new(config)?;
    let version: Version = client.get().abs_path("/version").json().await?;
    let mut paths = Vec::new();
    let core: ApiVersions = client.get().abs_path("/api").json().await?;
    paths.extend(core.versions.iter().map(|v| format!("/api/{v}")));
    let groups: GroupList = client.get().abs_path("/apis").json().await?;
    let crds: serde_json::Value = client
        .get()
        .abs_path("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
        .json()
        .await?;
    let api_services: serde_json::Value = client
        .get()
        .abs_path("/apis/apiregistration.k8s.io/v1/apiservices")
        .json()
        .await?;
    let non_builtin = non_builtin_group_versions(&crds, &api_services);
    let mut left_out = Vec::new();
    for group in groups.groups {
        for v in group.versions {
            if non_builtin.contains(&v.group_version) {
                left_out.push(v.group_version);
            } else {
                paths.push(format!("/apis/{}", v.group_version));
            }
        }
    }
    let mut lists = Vec::new();
    for path in paths {
        lists.push(client.get().abs_path(path).json().await?);
    }
    Ok(ServerDiscovery {
        git_version: version.git_version,
        lists,
        left_out,
    })
}

/// [`fetch_discovery`] on a current-thread runtime of its own, for synchronous callers such
/// as an xtask.
#[cfg(feature = "discovery")]
pub fn fetch_discovery_blocking(
    config: kclient_rest::Config,
) -> Result<ServerDiscovery, kclient_rest::Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| kclient_rest::Error::InvalidRequest(format!("cannot start a runtime: {e}")))?;
    runtime.block_on(fetch_discovery(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subresources_fold_into_their_resources() {
        let core: ApiResourceList = serde_json::from_str(
            r#"{"kind":"APIResourceList","groupVersion":"v1","resources":[
                {"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["get","list","create"]},
                {"name":"pods/status","namespaced":true,"kind":"Pod","verbs":["get","patch","update"]},
                {"name":"pods/log","namespaced":true,"kind":"Pod","verbs":["get"]},
                {"name":"nodes","namespaced":false,"kind":"Node","verbs":["get"]}]}"#,
        )
        .unwrap();
        let apps: ApiResourceList = serde_json::from_str(
            r#"{"groupVersion":"apps/v1","resources":[
                {"name":"deployments/scale","namespaced":true,"kind":"Scale","verbs":["get"]},
                {"name":"deployments","namespaced":true,"kind":"Deployment","verbs":["get"]}]}"#,
        )
        .unwrap();
        let table = table_from_discovery("1.35", "test", &[core, apps]).unwrap();
        let kinds: Vec<&str> = table.resources.iter().map(|r| r.kind.as_str()).collect();
        assert_eq!(kinds, ["Node", "Pod", "Deployment"]);
        assert_eq!(table.resources[1].subresources, ["log", "status"]);
        assert_eq!(table.resources[1].verbs, ["create", "get", "list"]);
        assert_eq!(table.resources[0].scope, Scope::Cluster);
        assert_eq!(table.resources[2].subresources, ["scale"]);
        assert_eq!(table.resources[2].group, "apps");
        assert!(table_from_discovery("1.35", "test", &[]).is_err());
    }

    #[test]
    fn crds_and_aggregated_apis_are_not_built_in() {
        let crds = serde_json::json!({"kind": "CustomResourceDefinitionList", "items": [
            {"spec": {"group": "stable.example.com", "names": {"plural": "crontabs"},
                      "versions": [{"name": "v1"}, {"name": "v2beta1"}]}}
        ]});
        let api_services = serde_json::json!({"kind": "APIServiceList", "items": [
            {"spec": {"version": "v1", "service": null}},
            {"spec": {"group": "apps", "version": "v1"}},
            {"spec": {"group": "stable.example.com", "version": "v1", "service": null}},
            {"spec": {"group": "metrics.k8s.io", "version": "v1beta1",
                      "service": {"namespace": "kube-system", "name": "metrics-server"}}}
        ]});
        let found: Vec<String> = non_builtin_group_versions(&crds, &api_services)
            .into_iter()
            .collect();
        assert_eq!(
            found,
            [
                "metrics.k8s.io/v1beta1",
                "stable.example.com/v1",
                "stable.example.com/v2beta1"
            ]
        );
        assert!(
            non_builtin_group_versions(&serde_json::json!({}), &serde_json::json!({})).is_empty()
        );
    }

    #[test]
    fn minor_versions() {
        assert_eq!(minor_version("v1.35.2").as_deref(), Some("1.35"));
        assert_eq!(
            minor_version("v1.36.0-alpha.1+abc").as_deref(),
            Some("1.36")
        );
        assert_eq!(minor_version("garbage"), None);
    }
}
