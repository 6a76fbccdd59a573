//! The typed informers: from resource tables (one per Kubernetes version) to the `generated/`
//! tree of kclient-informers (client-go's generated `informers` and `listers` packages).
//!
//! The output is thin type-level glue over `kclient_informers::TypedInformer`: one module and
//! one `…Informers` type per group-version whose resources can be listed and watched
//! (`core_v1::CoreV1Informers`), with one method per such resource (`pods()`), and the
//! `InformerFactoryExt` trait that gives kclient-cache's `SharedInformerFactory` one accessor
//! per group-version (`factory.core_v1().pods().informer()`). Nothing in it names a client:
//! the factory's client makes the lister-watchers through kclient-core's `ListerWatcherFor`.
//!
//! Several tables generate one tree, gated with `#[cfg(kclient_k8s = "1.NN")]` as the
//! Clientset is; kclient-informers' build script sets that cfg.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use crate::error::Error;
use crate::merged::{indent, GroupVersion, Merged};
use crate::naming::{group_name, group_version_client};
use crate::output::{GeneratedFiles, HEADER};
use crate::table::ResourceTable;

/// Where the generated informers find the crates they use: `crate` for kclient-informers'
/// own items from inside it, `kclient_cache` for the factory.
#[derive(Debug, Clone)]
pub struct InformersOptions {
    /// The path of kclient-informers as seen from the generated code (`crate`).
    pub informers_crate: String,
    /// The path of kclient-cache as seen from the generated code (`kclient_cache`).
    pub cache_crate: String,
    /// The cfg name carrying the Kubernetes version (`kclient_k8s`).
    pub version_cfg: String,
}

impl Default for InformersOptions {
    fn default() -> Self {
        Self {
            informers_crate: "crate".to_owned(),
            cache_crate: "kclient_cache".to_owned(),
            version_cfg: "kclient_k8s".to_owned(),
        }
    }
}

/// Generates the informers tree from `tables` (which must cover distinct Kubernetes
/// versions). The files are relative to the `generated/` directory: `mod.rs` and one
/// `<group>_<version>.rs` per group-version with a resource that can be listed and watched.
/// They are not rustfmt-formatted; see [`GeneratedFiles::rustfmt`].
pub fn generate_informers(
    tables: &[ResourceTable],
    options: &InformersOptions,
) -> Result<GeneratedFiles, Error> {
    let merged = Merged::new(tables)?;
    let cfg = |versions: &BTreeSet<String>| merged.cfg(versions, &options.version_cfg);
    let gvs: BTreeMap<&String, &GroupVersion> = merged
        .group_versions
        .iter()
        .filter(|(_, gv)| gv.has_informers())
        .collect();
    let mut files = GeneratedFiles::new();
    files.insert("mod.rs", root_module(&gvs, &merged.versions, options, &cfg));
    for (module, gv) in &gvs {
        files.insert(
            format!("{module}.rs"),
            group_version_source(gv, options, &cfg),
        );
    }
    Ok(files)
}

/// `AppsV1Informers` for `apps/v1`.
fn group_version_informers(group: &str, version: &str) -> String {
    group_version_client(group, version)
        .trim_end_matches("Client")
        .to_owned()
        + "Informers"
}

/// `mod.rs`: the modules and the extension trait of the factory.
fn root_module(
    gvs: &BTreeMap<&String, &GroupVersion>,
    versions: &[String],
    options: &InformersOptions,
    cfg: &dyn Fn(&BTreeSet<String>) -> String,
) -> String {
    let krate = &options.informers_crate;
    let mut out = String::new();
    let _ = writeln!(out, "{HEADER}");
    let _ = writeln!(
        out,
        "//! The generated typed informers: one module per group-version (client-go's\n\
         //! `informers/<group>/<version>`), for Kubernetes {}, and\n\
         //! [`InformerFactoryExt`], which gives an informer factory one accessor per group-version.\n//!\n\
         //! Generated from the resource tables of kclient-codegen; the generic behaviour lives in\n\
         //! [`TypedInformer`]({krate}::TypedInformer).\n",
        versions.join(", ")
    );
    for (module, gv) in gvs {
        let gate = cfg(&gv.versions());
        let _ = writeln!(out, "{gate}pub mod {module};");
    }
    out.push_str(&factory_extension(gvs, &options.cache_crate, cfg));
    out
}

/// The `InformerFactoryExt` trait, one accessor per group-version, and its impl for the
/// factory.
fn factory_extension(
    gvs: &BTreeMap<&String, &GroupVersion>,
    cache: &str,
    cfg: &dyn Fn(&BTreeSet<String>) -> String,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n/// The typed informers of a [`SharedInformerFactory`]({cache}::SharedInformerFactory), by\n\
         /// group-version (client-go's `factory.Core().V1().Pods()` is `factory.core_v1().pods()`): each\n\
         /// resource that can be listed and watched gives its shared informer and lister."
    );
    let _ = writeln!(out, "pub trait InformerFactoryExt<C> {{");
    let mut methods = String::new();
    let mut first = true;
    for (module, gv) in gvs {
        if !first {
            out.push('\n');
            methods.push('\n');
        }
        first = false;
        let informers = group_version_informers(&gv.group, &gv.version);
        let gate = cfg(&gv.versions());
        let api_version = gv.api_version();
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
        "\nimpl<C> InformerFactoryExt<C> for {cache}::SharedInformerFactory<C> {{"
    );
    out.push_str(&methods);
    out.push_str("}\n");
    out
}

/// The informers of one group-version: one method per resource that can be listed and
/// watched.
fn group_version_source(
    gv: &GroupVersion,
    options: &InformersOptions,
    cfg: &dyn Fn(&BTreeSet<String>) -> String,
) -> String {
    let krate = &options.informers_crate;
    let cache = &options.cache_crate;
    let informers = group_version_informers(&gv.group, &gv.version);
    let api_version = gv.api_version();
    let mut out = String::new();
    let _ = writeln!(out, "{HEADER}");
    let _ = writeln!(
        out,
        "//! `{api_version}`: the informers of its resources (client-go's `informers/{}/{}`).\n",
        group_name(&gv.group),
        gv.version
    );
    let _ = writeln!(
        out,
        "/// The informers of `{api_version}` of an informer factory: one method per resource that\n\
         /// can be listed and watched.\n\
         #[derive(Debug)]\npub struct {informers}<'a, C> {{\n    factory: &'a {cache}::SharedInformerFactory<C>,\n}}\n"
    );
    let _ = writeln!(out, "impl<'a, C> {informers}<'a, C> {{");
    let _ = writeln!(
        out,
        "    /// The `{api_version}` informers of `factory`.\n    \
         pub fn new(factory: &'a {cache}::SharedInformerFactory<C>) -> Self {{\n        Self {{ factory }}\n    }}"
    );
    for r in gv.resources.values().filter(|r| r.informable()) {
        let e = &r.entry;
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::fixtures::table;
    use crate::table::{fixtures, ResourceEntry};

    fn entry(group: &str, kind: &str, plural: &str, verbs: &[&str]) -> ResourceEntry {
        ResourceEntry {
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
            ..fixtures::entry(group, kind, plural)
        }
    }

    #[test]
    fn only_listable_and_watchable_resources_get_informers() {
        let t = table(
            "1.35",
            vec![
                entry("", "Pod", "pods", &["get", "list", "watch"]),
                entry("", "Binding", "bindings", &["create"]),
                entry(
                    "authentication.k8s.io",
                    "TokenReview",
                    "tokenreviews",
                    &["create"],
                ),
            ],
        );
        let files = generate_informers(&[t], &InformersOptions::default()).unwrap();
        let names: Vec<String> = files.iter().map(|(p, _)| p.display().to_string()).collect();
        assert_eq!(names, ["core_v1.rs", "mod.rs"], "no informers, no module");
        let core = files.get("core_v1.rs").unwrap();
        assert!(core.starts_with(HEADER));
        assert!(core.contains("pub fn pods(&self) -> crate::TypedInformer<'a, C, t::Pod>"));
        assert!(!core.contains("bindings"));
        assert!(core.contains("factory: &'a kclient_cache::SharedInformerFactory<C>"));
        let root = files.get("mod.rs").unwrap();
        assert!(root.contains("pub mod core_v1;"));
        assert!(!root.contains("authentication"));
        assert!(root.contains("fn core_v1(&self) -> core_v1::CoreV1Informers<'_, C>;"));
        assert!(root
            .contains("impl<C> InformerFactoryExt<C> for kclient_cache::SharedInformerFactory<C>"));
    }

    #[test]
    fn informers_of_some_versions_are_gated() {
        let old = table("1.35", vec![entry("", "Pod", "pods", &["list", "watch"])]);
        let new = table(
            "1.36",
            vec![
                entry("", "Pod", "pods", &["list", "watch"]),
                entry("x.k8s.io", "Thing", "things", &["list", "watch"]),
            ],
        );
        let files = generate_informers(&[new, old], &InformersOptions::default()).unwrap();
        let root = files.get("mod.rs").unwrap();
        assert!(root.contains("#[cfg(kclient_k8s = \"1.36\")]\npub mod x_v1;"));
        assert!(root.contains("Kubernetes 1.35, 1.36"));
        assert!(files.get("core_v1.rs").unwrap().contains("pub fn pods"));
    }
}
