//! The resource table: what the generator knows about each resource of one Kubernetes
//! version (group, version, kind, plural, scope, verbs, subresources, and the Rust type that
//! models it), checked in as JSON and refreshed from an API server's discovery.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// Whether objects of a resource live in namespaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Scope {
    /// Objects live in a namespace.
    Namespaced,
    /// Objects are cluster-wide.
    Cluster,
}

/// One resource of one group-version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceEntry {
    /// The API group (`""` for the core group).
    pub group: String,
    /// The version (`v1`, `v1beta1`).
    pub version: String,
    /// The kind (`Pod`).
    pub kind: String,
    /// The plural used in URLs (`pods`).
    pub plural: String,
    /// Namespaced or cluster-scoped.
    pub scope: Scope,
    /// The verbs the server supports (`create`, `get`, `list` ...), sorted.
    pub verbs: Vec<String>,
    /// The subresources (`status`, `scale`, `log` ...), sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subresources: Vec<String>,
    /// The Rust type that models the kind (`k8s_openapi::api::core::v1::Pod`); `None` when no
    /// crate models it (the resource is then skipped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rust_type: Option<String>,
    /// Why the generator skips this resource, if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsupported: Option<String>,
}

impl ResourceEntry {
    /// Whether the resource has `subresource`.
    pub fn has_subresource(&self, subresource: &str) -> bool {
        self.subresources.iter().any(|s| s == subresource)
    }

    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Why the generator skips this resource, if it does: an explicit reason, or no Rust type.
    pub fn skip_reason(&self) -> Option<String> {
        if let Some(reason) = &self.unsupported {
            return Some(reason.clone());
        }
        if self.rust_type.is_none() {
            return Some("no Rust type models this kind".to_owned());
        }
        None
    }

    fn sort_key(&self) -> (String, String, String) {
        (self.group.clone(), self.version.clone(), self.kind.clone())
    }
}

/// The resources of one Kubernetes version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTable {
    /// The Kubernetes minor version (`"1.35"`).
    pub kubernetes_version: String,
    /// Where the table came from (k8s-openapi's types, or an API server's discovery).
    pub source: String,
    /// The resources, sorted by group, version and kind.
    pub resources: Vec<ResourceEntry>,
}

impl ResourceTable {
    /// Parses a table from JSON.
    pub fn from_json(json: &str, what: &str) -> Result<Self, Error> {
        let mut table: ResourceTable =
            serde_json::from_str(json).map_err(|source| Error::Json {
                what: what.to_owned(),
                source,
            })?;
        table.normalize();
        Ok(table)
    }

    /// Reads a table from a file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        let json = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::from_json(&json, &path.display().to_string())
    }

    /// Sorts resources, verbs and subresources, so that equal tables serialize equally.
    pub fn normalize(&mut self) {
        for r in &mut self.resources {
            r.verbs.sort();
            r.verbs.dedup();
            r.subresources.sort();
            r.subresources.dedup();
        }
        self.resources.sort_by_key(ResourceEntry::sort_key);
    }

    /// The table as JSON: one resource per line, so that changes diff line by line.
    pub fn to_json(&self) -> String {
        let mut table = self.clone();
        table.normalize();
        let mut out = String::from("{\n");
        let field = |v: &str| serde_json::to_string(v).expect("strings serialize");
        out.push_str(&format!(
            "  \"kubernetesVersion\": {},\n  \"source\": {},\n  \"resources\": [\n",
            field(&table.kubernetes_version),
            field(&table.source)
        ));
        let lines: Vec<String> = table
            .resources
            .iter()
            .map(|r| {
                format!(
                    "    {}",
                    serde_json::to_string(r).expect("entries serialize")
                )
            })
            .collect();
        out.push_str(&lines.join(",\n"));
        out.push_str("\n  ]\n}\n");
        out
    }

    /// Writes the table to a file.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        std::fs::write(path, self.to_json()).map_err(|e| Error::io(path, e))
    }

    /// The entries the generator uses (those without a skip reason).
    pub fn supported(&self) -> impl Iterator<Item = &ResourceEntry> {
        self.resources.iter().filter(|r| r.skip_reason().is_none())
    }

    /// The entries the generator skips, with why.
    pub fn skipped(&self) -> impl Iterator<Item = (&ResourceEntry, String)> {
        self.resources
            .iter()
            .filter_map(|r| r.skip_reason().map(|why| (r, why)))
    }

    /// Takes the Rust types (and skip reasons) of `other` for the resources both know, for a
    /// table read from discovery, which knows nothing of Rust.
    pub fn adopt_rust_types(&mut self, other: &ResourceTable) {
        for r in &mut self.resources {
            let known = other
                .resources
                .iter()
                .find(|o| o.group == r.group && o.version == r.version && o.kind == r.kind);
            if let Some(known) = known {
                if r.rust_type.is_none() {
                    r.rust_type = known.rust_type.clone();
                }
                if r.unsupported.is_none() {
                    r.unsupported = known.unsupported.clone();
                }
            }
        }
    }
}

impl ResourceTable {
    /// Adds the entries of `other` this table lacks (for a table read from discovery: APIs
    /// the server does not enable, such as alpha groups, keep their previous entries), and
    /// returns how many were added.
    pub fn keep_missing_from(&mut self, other: &ResourceTable) -> usize {
        let missing: Vec<ResourceEntry> = other
            .resources
            .iter()
            .filter(|o| {
                !self
                    .resources
                    .iter()
                    .any(|r| r.group == o.group && r.version == o.version && r.kind == o.kind)
            })
            .cloned()
            .collect();
        let added = missing.len();
        self.resources.extend(missing);
        self.normalize();
        added
    }
}

/// The unit tests' resource tables, which each test adjusts to what it checks.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::{ResourceEntry, ResourceTable, Scope};

    /// A namespaced `v1` resource of `group`, with the verbs `get` and `list`, modelled by
    /// `t::{kind}`.
    pub(crate) fn entry(group: &str, kind: &str, plural: &str) -> ResourceEntry {
        ResourceEntry {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            plural: plural.into(),
            scope: Scope::Namespaced,
            verbs: vec!["get".into(), "list".into()],
            subresources: Vec::new(),
            rust_type: Some(format!("t::{kind}")),
            unsupported: None,
        }
    }

    /// The table of Kubernetes `version` with `resources`.
    pub(crate) fn table(version: &str, resources: Vec<ResourceEntry>) -> ResourceTable {
        ResourceTable {
            kubernetes_version: version.into(),
            source: "test".into(),
            resources,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(group: &str, kind: &str) -> ResourceEntry {
        ResourceEntry {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()),
            scope: Scope::Namespaced,
            verbs: vec!["list".into(), "get".into(), "get".into()],
            subresources: vec![],
            rust_type: Some(format!("x::{kind}")),
            unsupported: None,
        }
    }

    #[test]
    fn json_round_trips_one_resource_per_line() {
        let mut table = ResourceTable {
            kubernetes_version: "1.35".into(),
            source: "test".into(),
            resources: vec![entry("apps", "Deployment"), entry("", "Pod")],
        };
        let json = table.to_json();
        assert_eq!(json.lines().count(), 8);
        assert!(
            json.lines().nth(4).unwrap().contains("\"kind\":\"Pod\""),
            "sorted: {json}"
        );
        let back = ResourceTable::from_json(&json, "test").unwrap();
        table.normalize();
        assert_eq!(back, table);
        assert_eq!(back.resources[0].verbs, ["get", "list"]);
    }

    #[test]
    fn discovery_keeps_what_the_server_does_not_serve() {
        let mut served = ResourceTable {
            kubernetes_version: "1.35".into(),
            source: "discovery".into(),
            resources: vec![ResourceEntry {
                rust_type: None,
                ..entry("", "Pod")
            }],
        };
        let known = ResourceTable {
            kubernetes_version: "1.35".into(),
            source: "k8s-openapi".into(),
            resources: vec![entry("", "Pod"), entry("alpha.k8s.io", "Thing")],
        };
        served.adopt_rust_types(&known);
        assert_eq!(served.resources[0].rust_type.as_deref(), Some("x::Pod"));
        assert_eq!(served.keep_missing_from(&known), 1);
        assert_eq!(served.resources.len(), 2);
        assert_eq!(served.keep_missing_from(&known), 0);
    }

    #[test]
    fn skip_reasons() {
        let mut e = entry("", "Pod");
        assert_eq!(e.skip_reason(), None);
        e.rust_type = None;
        assert!(e.skip_reason().unwrap().contains("no Rust type"));
        e.unsupported = Some("a subresource".into());
        assert_eq!(e.skip_reason().as_deref(), Some("a subresource"));
        assert_eq!(e.api_version(), "v1");
    }
}
