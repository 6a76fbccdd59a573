//! The typed Clientset: from resource tables (one per Kubernetes version) to the
//! `generated/` tree of kclient-typed.
//!
//! The output is thin type-level glue over `kclient_typed::ResourceClient`: one module and one
//! client type per group-version (`core_v1::CoreV1Client`), one accessor per group-version on
//! `Clientset` (`core_v1()`), one method per resource (`pods(namespace)`, `nodes()`), and the
//! `HasStatus` / `HasScale` impls of the types whose resources have those subresources.
//!
//! Several tables (1.35, 1.36, 1.37 ...) generate one tree: whatever exists in only some of
//! the versions is gated with `#[cfg(kclient_k8s = "1.NN")]`, the cfg kclient-typed's build
//! script sets from k8s-openapi's enabled version.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::error::Error;
use crate::naming::{group_version_client, group_version_module, resource_method};
use crate::output::{GeneratedFiles, HEADER};
use crate::table::{ResourceEntry, ResourceTable, Scope};

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

/// One resource across the versions that have it.
#[derive(Debug, Clone)]
struct Resource {
    /// The entry of the newest version that has it (its docs and verbs).
    entry: ResourceEntry,
    rust_type: String,
    method: String,
    /// Kubernetes versions that have it.
    versions: BTreeSet<String>,
    /// Kubernetes versions in which it has the status / scale subresource.
    status_versions: BTreeSet<String>,
    scale_versions: BTreeSet<String>,
}

/// One group-version across versions.
#[derive(Debug, Clone, Default)]
struct GroupVersion {
    group: String,
    version: String,
    resources: BTreeMap<String, Resource>,
}

impl GroupVersion {
    fn versions(&self) -> BTreeSet<String> {
        self.resources
            .values()
            .flat_map(|r| r.versions.iter().cloned())
            .collect()
    }
}

/// Generates the Clientset tree from `tables` (which must cover distinct Kubernetes versions).
/// The files are relative to the `generated/` directory: `mod.rs` and one `<group>_<version>.rs`
/// per group-version. They are not rustfmt-formatted; see [`GeneratedFiles::rustfmt`].
pub fn generate_clientset(
    tables: &[ResourceTable],
    options: &ClientsetOptions,
) -> Result<GeneratedFiles, Error> {
    let mut all_versions: Vec<String> = tables
        .iter()
        .map(|t| t.kubernetes_version.clone())
        .collect();
    all_versions.sort_by_key(|v| version_key(v));
    let before = all_versions.len();
    all_versions.dedup();
    if all_versions.len() != before || all_versions.is_empty() {
        return Err(Error::Invalid(
            "the tables must cover distinct Kubernetes versions (and at least one)".into(),
        ));
    }
    let all: BTreeSet<String> = all_versions.iter().cloned().collect();

    let mut gvs: BTreeMap<String, GroupVersion> = BTreeMap::new();
    let mut ordered: Vec<&ResourceTable> = tables.iter().collect();
    ordered.sort_by_key(|t| version_key(&t.kubernetes_version));
    for table in ordered {
        let k8s = &table.kubernetes_version;
        for entry in table.supported() {
            let module = group_version_module(&entry.group, &entry.version);
            let gv = gvs.entry(module.clone()).or_insert_with(|| GroupVersion {
                group: entry.group.clone(),
                version: entry.version.clone(),
                ..GroupVersion::default()
            });
            if gv.group != entry.group {
                return Err(Error::Invalid(format!(
                    "groups {:?} and {:?} would both be generated as module {module}",
                    gv.group, entry.group
                )));
            }
            let rust_type = entry.rust_type.clone().unwrap_or_default();
            let method = resource_method(&entry.kind, &entry.plural);
            let resource = gv
                .resources
                .entry(entry.kind.clone())
                .or_insert_with(|| Resource {
                    entry: entry.clone(),
                    rust_type: rust_type.clone(),
                    method: method.clone(),
                    versions: BTreeSet::new(),
                    status_versions: BTreeSet::new(),
                    scale_versions: BTreeSet::new(),
                });
            if resource.rust_type != rust_type {
                return Err(Error::Invalid(format!(
                    "{} {} is modelled by {} in one version and {rust_type} in another",
                    entry.api_version(),
                    entry.kind,
                    resource.rust_type
                )));
            }
            resource.entry = entry.clone();
            resource.versions.insert(k8s.clone());
            if entry.has_subresource("status") {
                resource.status_versions.insert(k8s.clone());
            }
            if entry.has_subresource("scale") {
                resource.scale_versions.insert(k8s.clone());
            }
        }
    }
    for (module, gv) in &gvs {
        let mut methods = BTreeSet::new();
        for r in gv.resources.values() {
            if !methods.insert(r.method.clone()) {
                return Err(Error::Invalid(format!(
                    "two resources of {module} would both get the method {}",
                    r.method
                )));
            }
        }
    }

    let cfg = |versions: &BTreeSet<String>| version_cfg(versions, &all, &options.version_cfg);
    let mut files = GeneratedFiles::new();
    files.insert("mod.rs", root_module(&gvs, &all_versions, options, &cfg));
    for (module, gv) in &gvs {
        files.insert(
            format!("{module}.rs"),
            group_version_module_source(gv, options, &cfg),
        );
    }
    Ok(files)
}

/// Sorts `1.9` before `1.10`.
fn version_key(version: &str) -> Vec<u32> {
    version.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// The cfg attribute (with its newline) for items present in `versions` only, or nothing.
fn version_cfg(versions: &BTreeSet<String>, all: &BTreeSet<String>, name: &str) -> String {
    if versions == all {
        return String::new();
    }
    let mut sorted: Vec<&String> = versions.iter().collect();
    sorted.sort_by_key(|v| version_key(v));
    let preds: Vec<String> = sorted.iter().map(|v| format!("{name} = \"{v}\"")).collect();
    if preds.len() == 1 {
        format!("#[cfg({})]\n", preds[0])
    } else {
        format!("#[cfg(any({}))]\n", preds.join(", "))
    }
}

/// Indents every non-empty line of `text` by `spaces`.
fn indent(text: &str, spaces: usize) -> String {
    let pad = " ".repeat(spaces);
    text.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{pad}{l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + if text.ends_with('\n') { "\n" } else { "" }
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
        let _ = writeln!(
            out,
            "{gate}pub mod {module};\n{gate}pub use self::{module}::{};",
            group_version_client(&gv.group, &gv.version)
        );
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
        let api_version = if gv.group.is_empty() {
            gv.version.clone()
        } else {
            format!("{}/{}", gv.group, gv.version)
        };
        let method = format!(
            "/// The `{api_version}` clients (client-go's `{}()`).\n{gate}pub fn {module}(&self) -> {client} {{\n    {client}::new(self.client.clone())\n}}\n",
            client.trim_end_matches("Client")
        );
        out.push_str(&indent(&method, 4));
    }
    out.push_str("}\n");
    informer_factory_ext(&mut out, gvs, cfg);
    out
}

/// The extension trait that gives an informer factory its typed accessors
/// (`factory.core_v1().pods().informer()`).
fn informer_factory_ext(
    out: &mut String,
    gvs: &BTreeMap<String, GroupVersion>,
    cfg: &dyn Fn(&BTreeSet<String>) -> String,
) {
    let _ = writeln!(
        out,
        "\n/// The typed informers of a [`SharedInformerFactory`](kclient_cache::SharedInformerFactory), by\n\
         /// group-version (client-go's `factory.Core().V1().Pods()` is `factory.core_v1().pods()`): each\n\
         /// resource that can be listed and watched gives its shared informer and lister.\n\
         pub trait InformerFactoryExt<C> {{"
    );
    let mut methods = String::new();
    let mut first = true;
    for (module, gv) in gvs.iter().filter(|(_, gv)| has_informers(gv)) {
        if !first {
            out.push('\n');
            methods.push('\n');
        }
        first = false;
        let informers = group_version_informers(&gv.group, &gv.version);
        let gate = cfg(&gv.versions());
        let api_version = api_version(gv);
        let decl = format!(
            "/// The `{api_version}` informers.\n{gate}fn {module}(&self) -> {module}::{informers}<'_, C>;\n"
        );
        out.push_str(&indent(&decl, 4));
        let body = format!(
            "{gate}fn {module}(&self) -> {module}::{informers}<'_, C> {{\n    {module}::{informers}::new(self)\n}}\n"
        );
        methods.push_str(&indent(&body, 4));
    }
    out.push_str("}\n");
    let _ = writeln!(
        out,
        "\nimpl<C> InformerFactoryExt<C> for kclient_cache::SharedInformerFactory<C> {{"
    );
    out.push_str(&methods);
    out.push_str("}\n");
}

fn api_version(gv: &GroupVersion) -> String {
    if gv.group.is_empty() {
        gv.version.clone()
    } else {
        format!("{}/{}", gv.group, gv.version)
    }
}

/// Whether a resource can have an informer: it can be listed and watched.
fn informable(e: &ResourceEntry) -> bool {
    e.verbs.iter().any(|v| v == "list") && e.verbs.iter().any(|v| v == "watch")
}

/// Whether a group-version has any resource with an informer.
fn has_informers(gv: &GroupVersion) -> bool {
    gv.resources.values().any(|r| informable(&r.entry))
}

/// `AppsV1Informers` for `apps/v1`.
fn group_version_informers(group: &str, version: &str) -> String {
    group_version_client(group, version)
        .trim_end_matches("Client")
        .to_owned()
        + "Informers"
}

/// The informer accessors of one group-version: one method per resource that can be listed
/// and watched.
fn group_version_informers_source(
    out: &mut String,
    gv: &GroupVersion,
    options: &ClientsetOptions,
    cfg: &dyn Fn(&BTreeSet<String>) -> String,
) {
    if !has_informers(gv) {
        return;
    }
    let krate = &options.typed_crate;
    let informers = group_version_informers(&gv.group, &gv.version);
    let api_version = api_version(gv);
    let _ = writeln!(
        out,
        "\n/// The informers of `{api_version}` of an informer factory (client-go's \
         `informers/{}/{}`):\n/// one method per resource that can be listed and watched.\n\
         #[derive(Debug)]\npub struct {informers}<'a, C> {{\n    factory: &'a kclient_cache::SharedInformerFactory<C>,\n}}\n",
        if gv.group.is_empty() { "core" } else { gv.group.split('.').next().unwrap_or(&gv.group) },
        gv.version
    );
    let _ = writeln!(out, "impl<'a, C> {informers}<'a, C> {{");
    let _ = writeln!(
        out,
        "    /// The `{api_version}` informers of `factory`.\n    \
         pub fn new(factory: &'a kclient_cache::SharedInformerFactory<C>) -> Self {{\n        Self {{ factory }}\n    }}"
    );
    for r in gv.resources.values() {
        let e = &r.entry;
        if !informable(e) {
            continue;
        }
        let gate = cfg(&r.versions);
        let method = format!(
            "/// `{}` (kind `{}`): its shared informer and lister.\n\
             {gate}pub fn {}(&self) -> {krate}::TypedInformer<'a, C, {}> {{\n    {krate}::TypedInformer::new(self.factory)\n}}\n",
            e.plural, e.kind, r.method, r.rust_type
        );
        out.push('\n');
        out.push_str(&indent(&method, 4));
    }
    out.push_str("}\n");
}

fn group_version_module_source(
    gv: &GroupVersion,
    options: &ClientsetOptions,
    cfg: &dyn Fn(&BTreeSet<String>) -> String,
) -> String {
    let krate = &options.typed_crate;
    let client = group_version_client(&gv.group, &gv.version);
    let api_version = if gv.group.is_empty() {
        gv.version.clone()
    } else {
        format!("{}/{}", gv.group, gv.version)
    };
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
        let e = &r.entry;
        let gate = cfg(&r.versions);
        let subresources = if e.subresources.is_empty() {
            String::new()
        } else {
            format!("; subresources: {}", e.subresources.join(", "))
        };
        let facts = format!("Verbs: {}{subresources}.", e.verbs.join(", "));
        let method = match e.scope {
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
        };
        out.push('\n');
        out.push_str(&indent(&method, 4));
    }
    out.push_str("}\n");
    group_version_informers_source(&mut out, gv, options, cfg);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(group: &str, kind: &str, plural: &str, scope: Scope, subs: &[&str]) -> ResourceEntry {
        ResourceEntry {
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            plural: plural.into(),
            scope,
            verbs: vec!["get".into(), "list".into()],
            subresources: subs.iter().map(|s| s.to_string()).collect(),
            rust_type: Some(format!("t::{kind}")),
            unsupported: None,
        }
    }

    fn table(version: &str, resources: Vec<ResourceEntry>) -> ResourceTable {
        ResourceTable {
            kubernetes_version: version.into(),
            source: "test".into(),
            resources,
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
        assert!(root.contains("pub fn core_v1(&self) -> CoreV1Client"));
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
