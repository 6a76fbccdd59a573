//! The resource table from an API server's discovery: what `cargo xtask codegen refresh`
//! uses to replace the verbs and subresources the generator only knows approximately.
//!
//! [`table_from_discovery`] folds the legacy discovery documents (`/api/v1`,
//! `/apis/<group>/<version>`: `APIResourceList`s) into a table; subresources
//! (`pods/status`, `deployments/scale`) become entries of their resource. With the
//! `discovery` feature, `fetch_discovery` reads those documents from a server.

use std::collections::BTreeMap;

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

/// The discovery documents and version of the server `config` points at: `/version`, `/api`
/// with each of its versions, `/apis` with each group's versions.
#[cfg(feature = "discovery")]
pub async fn fetch_discovery(
    config: kclient_rest::Config,
) -> Result<(String, Vec<ApiResourceList>), kclient_rest::Error> {
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
    for group in groups.groups {
        paths.extend(
            group
                .versions
                .iter()
                .map(|v| format!("/apis/{}", v.group_version)),
        );
    }
    let mut lists = Vec::new();
    for path in paths {
        lists.push(client.get().abs_path(path).json().await?);
    }
    Ok((version.git_version, lists))
}

/// [`fetch_discovery`] on a current-thread runtime of its own, for synchronous callers such
/// as an xtask.
#[cfg(feature = "discovery")]
pub fn fetch_discovery_blocking(
    config: kclient_rest::Config,
) -> Result<(String, Vec<ApiResourceList>), kclient_rest::Error> {
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
    fn minor_versions() {
        assert_eq!(minor_version("v1.35.2").as_deref(), Some("1.35"));
        assert_eq!(
            minor_version("v1.36.0-alpha.1+abc").as_deref(),
            Some("1.36")
        );
        assert_eq!(minor_version("garbage"), None);
    }
}
