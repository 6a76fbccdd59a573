//! The initial resource table, read from k8s-openapi's source.
//!
//! k8s-openapi models every kind of a Kubernetes version as a Rust type implementing its
//! `Resource` trait (group, version, kind, plural, scope). It records neither verbs nor
//! subresources, so this reader adds what the generator knows about them ([`known_verbs`],
//! [`known_subresources`]) — an approximation of kube-apiserver's discovery that
//! `cargo xtask codegen refresh --kubeconfig …` replaces with the real thing.
//!
//! The reader scans the text of k8s-openapi's generated files (`src/v1_NN/**/*.rs`), whose
//! shape is regular: `impl crate::Resource for Kind { const …; type Scope = …; }`.

use std::path::Path;

use crate::error::Error;
use crate::source_tree::each_k8s_openapi_file;
use crate::table::{ResourceEntry, ResourceTable, Scope};

/// The verbs of an ordinary read-write resource.
const STANDARD_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// One `impl crate::Resource for X` found in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelledKind {
    /// The Rust path (`k8s_openapi::api::core::v1::Pod`).
    pub rust_type: String,
    /// The group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind.
    pub kind: String,
    /// The URL path segment (the plural, or the subresource name for subresource types).
    pub plural: String,
    /// `NamespaceResourceScope`, `ClusterResourceScope` or `SubResourceScope`.
    pub scope: String,
    /// Whether it implements `ListableResource`.
    pub listable: bool,
    /// Whether its metadata is `ObjectMeta`.
    pub object_meta: bool,
    /// Whether the struct has a `status` field.
    pub has_status_field: bool,
}

/// The verbs kube-apiserver serves for a kind, as far as the generator knows without asking.
pub fn known_verbs(m: &ModelledKind) -> Vec<String> {
    let verbs: &[&str] = match (m.group.as_str(), m.kind.as_str()) {
        (_, kind) if kind.ends_with("Review") => &["create"],
        ("", "Binding") => &["create"],
        ("", "ComponentStatus") => &["get", "list"],
        ("", "Namespace") => &[
            "create", "delete", "get", "list", "patch", "update", "watch",
        ],
        _ if !m.listable => &["create"],
        _ => STANDARD_VERBS,
    };
    verbs.iter().map(|v| v.to_string()).collect()
}

/// The subresources kube-apiserver serves for a kind, as far as the generator knows without
/// asking: `status` for every writable kind with a status field, plus the well-known others.
pub fn known_subresources(m: &ModelledKind, verbs: &[String]) -> Vec<String> {
    let mut subs: Vec<&str> = Vec::new();
    if m.has_status_field && verbs.iter().any(|v| v == "update") {
        subs.push("status");
    }
    let extra: &[&str] = match (m.group.as_str(), m.plural.as_str()) {
        ("", "pods") => &[
            "attach",
            "binding",
            "ephemeralcontainers",
            "eviction",
            "exec",
            "log",
            "portforward",
            "proxy",
            "resize",
        ],
        ("", "nodes") | ("", "services") => &["proxy"],
        ("", "namespaces") => &["finalize"],
        ("", "serviceaccounts") => &["token"],
        ("", "replicationcontrollers") => &["scale"],
        ("apps", "deployments" | "replicasets" | "statefulsets") => &["scale"],
        ("certificates.k8s.io", "certificatesigningrequests") => &["approval"],
        _ => &[],
    };
    subs.extend(extra);
    subs.sort();
    subs.into_iter().map(str::to_owned).collect()
}

/// Why a kind gets no client, if it gets none.
fn unsupported_reason(m: &ModelledKind) -> Option<String> {
    if m.plural.is_empty() {
        return Some("a discovery document, not a resource (use kclient-discovery)".to_owned());
    }
    if m.scope == "SubResourceScope" {
        return Some(format!(
            "the body of a subresource ({}), not a resource: used through the methods that call it",
            m.plural
        ));
    }
    if !m.object_meta {
        return Some("its metadata is not ObjectMeta".to_owned());
    }
    None
}

/// Reads every kind from the directory of one version of k8s-openapi's source
/// (`…/k8s-openapi-0.29.0/src/v1_35`).
pub fn read_kinds(version_dir: &Path) -> Result<Vec<ModelledKind>, Error> {
    let mut kinds = Vec::new();
    each_k8s_openapi_file(version_dir, |module, source| {
        kinds.extend(parse_kinds(source, module));
    })?;
    kinds.sort_by(|a, b| (&a.group, &a.version, &a.kind).cmp(&(&b.group, &b.version, &b.kind)));
    Ok(kinds)
}

/// The value of `const NAME: &'static str = "value";` inside `block`.
fn const_str(block: &str, name: &str) -> Option<String> {
    let line = block
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("const {name}:")))?;
    let start = line.find('"')? + 1;
    let end = line.rfind('"')?;
    Some(line[start..end].to_owned())
}

/// The kinds implemented in one source file, whose module path (below the version directory)
/// is `module`.
pub fn parse_kinds(source: &str, module: &[String]) -> Vec<ModelledKind> {
    const IMPL: &str = "impl crate::Resource for ";
    let mut kinds = Vec::new();
    let mut rest = source;
    while let Some(at) = rest.find(IMPL) {
        let after = &rest[at + IMPL.len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        let block_end = after.find("\n}").unwrap_or(after.len());
        let block = &after[..block_end];
        rest = &after[block_end..];
        let scope = block
            .lines()
            .find_map(|l| l.trim().strip_prefix("type Scope = crate::"))
            .map(|s| s.trim_end_matches(';').to_owned())
            .unwrap_or_default();
        let (Some(group), Some(version), Some(kind), Some(plural)) = (
            const_str(block, "GROUP"),
            const_str(block, "VERSION"),
            const_str(block, "KIND"),
            const_str(block, "URL_PATH_SEGMENT"),
        ) else {
            continue;
        };
        let struct_body = source
            .find(&format!("pub struct {name} {{"))
            .map(|s| {
                let body = &source[s..];
                &body[..body.find("\n}").unwrap_or(body.len())]
            })
            .unwrap_or_default();
        let object_meta = source.contains(&format!(
            "impl crate::Metadata for {name} {{\n    type Ty = crate::apimachinery::pkg::apis::meta::v1::ObjectMeta;"
        ));
        let mut path = vec!["k8s_openapi".to_owned()];
        path.extend(module.iter().cloned());
        path.push(name.clone());
        kinds.push(ModelledKind {
            rust_type: path.join("::"),
            group,
            version,
            kind,
            plural,
            scope,
            listable: source.contains(&format!("impl crate::ListableResource for {name} ")),
            object_meta,
            has_status_field: struct_body.contains("\n    pub status: "),
        });
    }
    kinds
}

/// The table of one Kubernetes version from k8s-openapi's source directory of that version.
pub fn table_from_k8s_openapi(
    version_dir: &Path,
    kubernetes_version: &str,
    k8s_openapi_version: &str,
) -> Result<ResourceTable, Error> {
    let kinds = read_kinds(version_dir)?;
    if kinds.is_empty() {
        return Err(Error::Invalid(format!(
            "no k8s-openapi resource types under {}",
            version_dir.display()
        )));
    }
    let resources = kinds
        .iter()
        .map(|m| {
            let verbs = known_verbs(m);
            let subresources = known_subresources(m, &verbs);
            ResourceEntry {
                group: m.group.clone(),
                version: m.version.clone(),
                kind: m.kind.clone(),
                plural: m.plural.clone(),
                scope: if m.scope == "NamespaceResourceScope" {
                    Scope::Namespaced
                } else {
                    Scope::Cluster
                },
                verbs,
                subresources,
                rust_type: Some(m.rust_type.clone()),
                unsupported: unsupported_reason(m),
            }
        })
        .collect();
    let mut table = ResourceTable {
        kubernetes_version: kubernetes_version.to_owned(),
        source: format!(
            "k8s-openapi {k8s_openapi_version} (v1_{}), with the verbs and subresources kclient-codegen \
             knows; refresh from a live API server with `cargo xtask codegen refresh`",
            kubernetes_version.trim_start_matches("1.")
        ),
        resources,
    };
    table.normalize();
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEPLOYMENT: &str = r#"
/// Deployment enables declarative updates for Pods and ReplicaSets.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Deployment {
    pub metadata: crate::apimachinery::pkg::apis::meta::v1::ObjectMeta,

    pub spec: Option<crate::api::apps::v1::DeploymentSpec>,

    pub status: Option<crate::api::apps::v1::DeploymentStatus>,
}

impl crate::Resource for Deployment {
    const API_VERSION: &'static str = "apps/v1";
    const GROUP: &'static str = "apps";
    const KIND: &'static str = "Deployment";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "deployments";
    type Scope = crate::NamespaceResourceScope;
}

impl crate::ListableResource for Deployment {
    const LIST_KIND: &'static str = "DeploymentList";
}

impl crate::Metadata for Deployment {
    type Ty = crate::apimachinery::pkg::apis::meta::v1::ObjectMeta;
}
"#;

    #[test]
    fn kinds_are_read_from_the_source() {
        let kinds = parse_kinds(DEPLOYMENT, &["api".into(), "apps".into(), "v1".into()]);
        assert_eq!(
            kinds,
            [ModelledKind {
                rust_type: "k8s_openapi::api::apps::v1::Deployment".into(),
                group: "apps".into(),
                version: "v1".into(),
                kind: "Deployment".into(),
                plural: "deployments".into(),
                scope: "NamespaceResourceScope".into(),
                listable: true,
                object_meta: true,
                has_status_field: true,
            }]
        );
        let verbs = known_verbs(&kinds[0]);
        assert_eq!(verbs.len(), 8);
        assert_eq!(known_subresources(&kinds[0], &verbs), ["scale", "status"]);
        assert_eq!(unsupported_reason(&kinds[0]), None);
    }

    #[test]
    fn reviews_are_create_only_and_subresource_types_unsupported() {
        let review = ModelledKind {
            rust_type: "k8s_openapi::api::authentication::v1::TokenReview".into(),
            group: "authentication.k8s.io".into(),
            version: "v1".into(),
            kind: "TokenReview".into(),
            plural: "tokenreviews".into(),
            scope: "ClusterResourceScope".into(),
            listable: false,
            object_meta: true,
            has_status_field: true,
        };
        let verbs = known_verbs(&review);
        assert_eq!(verbs, ["create"]);
        assert!(
            known_subresources(&review, &verbs).is_empty(),
            "no status subresource"
        );
        let scale = ModelledKind {
            kind: "Scale".into(),
            plural: "scale".into(),
            scope: "SubResourceScope".into(),
            ..review
        };
        assert!(unsupported_reason(&scale).unwrap().contains("subresource"));
    }
}
