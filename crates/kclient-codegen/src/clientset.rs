//! The typed Clientset: from resource tables (one per Kubernetes version) to the
//! `generated/` tree of kclient-typed.
//!
//! The output is thin type-level glue over `kclient_typed::ResourceClient`: one module and one
//! client type per group-version (`core_v1::CoreV1Client`), one accessor per group-version on
//! `Clientset` (`core_v1()`), one method per resource (`pods(namespace)`, `nodes()`), and the
//! `HasStatus` / `HasScale` impls of the types whose resources have those subresources. The
//! typed informers are kclient-informers' ([`generate_informers`](crate::generate_informers)):
//! the Clientset knows nothing of the cache.
//!
//! Several tables (1.35, 1.36, 1.37 ...) generate one tree: whatever exists in only some of
//! the versions is gated with `#[cfg(kclient_k8s = "1.NN")]`, the cfg kclient-typed's build
//! script sets from k8s-openapi's enabled version.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::error::Error;
use crate::merged::{indent, GroupVersion, Merged, Resource};
use crate::naming::group_version_client;
use crate::output::{GeneratedFiles, HEADER};
use crate::table::{ResourceTable, Scope};

/// Where the generated code finds the crate's items: `crate` inside kclient-typed,
/// `kclient_typed` from another crate.
#[derive(Debug, Clone)]
pub struct ClientsetOptions {
    /// The path of kclient-typed as seen from the generated code.
    pub typed_crate: String,
    /// The cfg name carrying the Kubernetes version (`kclient_k8s`).
    pub version_cfg: String,
}

impl Default for ClientsetOptions {
    fn default() -> Self {
        Self {
            typed_crate: "crate".to_owned(),
            version_cfg: "kclient_k8s".to_owned(),
        }
    }
}

/// Generates the Clientset tree from `tables` (which must cover distinct Kubernetes versions).
/// The files are relative to the `generated/` directory: `mod.rs` and one `<group>_<version>.rs`
/// per group-version. They are not rustfmt-formatted; see [`GeneratedFiles::rustfmt`].
pub fn generate_clientset(
    tables: &[ResourceTable],
    options: &ClientsetOptions,
) -> Result<GeneratedFiles, Error> {
    let merged = Merged::new(tables)?;
    let gvs = &merged.group_versions;
    let all_versions = &merged.versions;
    let cfg = |versions: &BTreeSet<String>| merged.cfg(versions, &options.version_cfg);
    let mut files = GeneratedFiles::new();
    files.insert("mod.rs", root_module(gvs, all_versions, options, &cfg));
    for (module, gv) in gvs {
        files.insert(
            format!("{module}.rs"),
            group_version_module_source(gv, options, &cfg),
        );
    }
    Ok(files)
}

fn root_module(
    gvs: &BTreeMap<String, GroupVersion>,
    versions: &[String],
    options: &ClientsetOptions,
    cfg: &dyn Fn(&BTreeSet<String>) -> String,
) -> String {
    let krate = &options.typed_crate;
    let mut out = String::new();
    let _ = writeln!(out, "{HEADER}");
    let _ = writeln!(
        out,
        "//! The generated surface of the Clientset: one module and client per group-version \
         (client-go's\n//! `kubernetes/typed/<group>/<version>`), for Kubernetes {}.\n//!\n\
         //! Generated from the resource tables of kclient-codegen; the generic behaviour lives in\n\
         //! [`ResourceClient`]({krate}::ResourceClient).\n",
        versions.join(", ")
    );
    for (module, gv) in gvs {
        let gate = cfg(&gv.versions());
        let _ = writeln!(out, "{gate}pub mod {module};");
    }
    let _ = writeln!(out, "\nimpl {krate}::Clientset {{");
    let mut first = true;
    for (module, gv) in gvs {
        if !first {
            out.push('\n');
        }
        first = false;
        let client = group_version_client(&gv.group, &gv.version);
        let gate = cfg(&gv.versions());
        let api_version = gv.api_version();
        let method = format!(
            "/// The `{api_version}` clients (client-go's `{}()`).\n{gate}pub fn {module}(&self) -> {module}::{client} {{\n    {module}::{client}::new(self.client.clone())\n}}\n",
            client.trim_end_matches("Client")
        );
        out.push_str(&indent(&method, 4));
    }
    out.push_str("}\n");
    out
}

/// The file of one group-version: its client, one method per resource, and the resources'
/// subresource markers.
fn group_version_module_source(
    gv: &GroupVersion,
    options: &ClientsetOptions,
    cfg: &dyn Fn(&BTreeSet<String>) -> String,
) -> String {
    let krate = &options.typed_crate;
    let client = group_version_client(&gv.group, &gv.version);
    let api_version = gv.api_version();
    let group_doc = if gv.group.is_empty() {
        "the core group".to_owned()
    } else {
        format!("`{}`", gv.group)
    };
    let mut out = String::new();
    let _ = writeln!(out, "{HEADER}");
    let _ = writeln!(
        out,
        "//! `{api_version}`: the `{}` clients of {group_doc}.\n",
        gv.version
    );
    let _ = writeln!(
        out,
        "use {krate}::ResourceClient;\nuse kclient_rest::RestClient;\n"
    );
    let _ = writeln!(
        out,
        "/// The resources of `{api_version}` (client-go's `{}Interface`): one method per resource,\n\
         /// each returning a [`ResourceClient`] that shares this client's transport and rate limiter.\n\
         #[derive(Clone, Debug)]\npub struct {client} {{\n    client: RestClient,\n}}\n",
        client.trim_end_matches("Client")
    );
    let _ = writeln!(out, "impl {client} {{");
    let _ = writeln!(
        out,
        "    /// The clients of `{api_version}` over `client` (its transport and rate limiter are shared).\n    \
         pub fn new(client: RestClient) -> Self {{\n        Self {{ client }}\n    }}\n\n    \
         /// The REST client underneath.\n    pub fn rest_client(&self) -> &RestClient {{\n        &self.client\n    }}"
    );
    for r in gv.resources.values() {
        out.push('\n');
        out.push_str(&indent(&resource_method(r, cfg), 4));
    }
    out.push_str("}\n");
    for r in gv.resources.values() {
        for (trait_name, versions) in [
            ("HasStatus", &r.status_versions),
            ("HasScale", &r.scale_versions),
        ] {
            if versions.is_empty() {
                continue;
            }
            let gate = cfg(versions);
            let _ = write!(
                out,
                "\n{gate}impl {krate}::{trait_name} for {} {{}}\n",
                r.rust_type
            );
        }
    }
    out
}

/// The method of the group-version's client that gives resource `r`'s client.
fn resource_method(r: &Resource, cfg: &dyn Fn(&BTreeSet<String>) -> String) -> String {
    let e = &r.entry;
    let gate = cfg(&r.versions);
    let subresources = if e.subresources.is_empty() {
        String::new()
    } else {
        format!("; subresources: {}", e.subresources.join(", "))
    };
    let facts = format!("Verbs: {}{subresources}.", e.verbs.join(", "));
    match e.scope {
        Scope::Namespaced => format!(
            "/// `{}` (kind `{}`) in `namespace`; the empty namespace means all namespaces.\n///\n/// {facts}\n\
             {gate}pub fn {}(&self, namespace: &str) -> ResourceClient<{}> {{\n    ResourceClient::namespaced(self.client.clone(), namespace)\n}}\n",
            e.plural, e.kind, r.method, r.rust_type
        ),
        Scope::Cluster => format!(
            "/// `{}` (kind `{}`), cluster-scoped.\n///\n/// {facts}\n\
             {gate}pub fn {}(&self) -> ResourceClient<{}> {{\n    ResourceClient::cluster_scoped(self.client.clone())\n}}\n",
            e.plural, e.kind, r.method, r.rust_type
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::fixtures::table;
    use crate::table::{fixtures, ResourceEntry};

    fn entry(group: &str, kind: &str, plural: &str, scope: Scope, subs: &[&str]) -> ResourceEntry {
        ResourceEntry {
            scope,
            subresources: subs.iter().map(|s| s.to_string()).collect(),
            ..fixtures::entry(group, kind, plural)
        }
    }

    #[test]
    fn one_version_has_no_cfg() {
        let t = table(
            "1.35",
            vec![
                entry("", "Pod", "pods", Scope::Namespaced, &["status"]),
                entry("", "Node", "nodes", Scope::Cluster, &[]),
            ],
        );
        let files = generate_clientset(&[t], &ClientsetOptions::default()).unwrap();
        let core = files.get("core_v1.rs").unwrap();
        assert!(core.starts_with(HEADER));
        assert!(!core.contains("#[cfg"));
        assert!(core.contains("pub fn pods(&self, namespace: &str) -> ResourceClient<t::Pod>"));
        assert!(core.contains("pub fn nodes(&self) -> ResourceClient<t::Node>"));
        assert!(core.contains("impl crate::HasStatus for t::Pod {}"));
        assert!(!core.contains("HasScale"));
        let root = files.get("mod.rs").unwrap();
        assert!(root.contains("pub fn core_v1(&self) -> core_v1::CoreV1Client"));
        assert!(
            !root.contains("pub use"),
            "each client has one path: its group-version module"
        );
    }

    #[test]
    fn resources_of_some_versions_are_gated() {
        let old = table(
            "1.35",
            vec![entry(
                "apps",
                "Deployment",
                "deployments",
                Scope::Namespaced,
                &["status"],
            )],
        );
        let new = table(
            "1.36",
            vec![
                entry(
                    "apps",
                    "Deployment",
                    "deployments",
                    Scope::Namespaced,
                    &["scale", "status"],
                ),
                entry("x.k8s.io", "Thing", "things", Scope::Cluster, &[]),
            ],
        );
        let files = generate_clientset(&[new, old], &ClientsetOptions::default()).unwrap();
        let apps = files.get("apps_v1.rs").unwrap();
        assert!(apps.contains("impl crate::HasStatus for t::Deployment {}"));
        assert!(apps
            .contains("#[cfg(kclient_k8s = \"1.36\")]\nimpl crate::HasScale for t::Deployment {}"));
        let root = files.get("mod.rs").unwrap();
        assert!(root.contains("#[cfg(kclient_k8s = \"1.36\")]\npub mod x_v1;"));
        assert!(root.contains("Kubernetes 1.35, 1.36"));
    }

    #[test]
    fn skipped_entries_and_collisions() {
        let mut skipped = entry("", "Scale", "scale", Scope::Namespaced, &[]);
        skipped.unsupported = Some("a subresource".into());
        let files = generate_clientset(
            &[table(
                "1.35",
                vec![skipped, entry("", "Pod", "pods", Scope::Namespaced, &[])],
            )],
            &ClientsetOptions::default(),
        )
        .unwrap();
        assert!(!files.get("core_v1.rs").unwrap().contains("Scale"));

        let clash = table(
            "1.35",
            vec![
                entry("a.example.com", "A", "as", Scope::Cluster, &[]),
                entry("a.other.com", "B", "bs", Scope::Cluster, &[]),
            ],
        );
        assert!(generate_clientset(&[clash], &ClientsetOptions::default()).is_err());
        let dup = [table("1.35", vec![]), table("1.35", vec![])];
        assert!(generate_clientset(&dup, &ClientsetOptions::default()).is_err());
    }
}
