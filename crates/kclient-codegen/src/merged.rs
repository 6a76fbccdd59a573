//! The resource tables of several Kubernetes versions merged into one model (group-versions,
//! their resources, and in which versions each exists), which the Clientset and the informer
//! generators both render.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::Error;
use crate::naming::{group_version_module, resource_method};
use crate::table::{ResourceEntry, ResourceTable};

/// One resource across the versions that have it.
#[derive(Debug, Clone)]
pub(crate) struct Resource {
    /// The entry of the newest version that has it (its docs and verbs).
    pub(crate) entry: ResourceEntry,
    pub(crate) rust_type: String,
    pub(crate) method: String,
    /// Kubernetes versions that have it.
    pub(crate) versions: BTreeSet<String>,
    /// Kubernetes versions in which it has the status / scale subresource.
    pub(crate) status_versions: BTreeSet<String>,
    pub(crate) scale_versions: BTreeSet<String>,
}

impl Resource {
    /// Whether it can have an informer: it can be listed and watched.
    pub(crate) fn informable(&self) -> bool {
        let verbs = &self.entry.verbs;
        verbs.iter().any(|v| v == "list") && verbs.iter().any(|v| v == "watch")
    }
}

/// One group-version across versions.
#[derive(Debug, Clone, Default)]
pub(crate) struct GroupVersion {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) resources: BTreeMap<String, Resource>,
}

impl GroupVersion {
    /// `apps/v1`, or `v1` for the core group.
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether any of its resources can have an informer.
    pub(crate) fn has_informers(&self) -> bool {
        self.resources.values().any(|r| r.informable())
    }

    /// The Kubernetes versions that have any of its resources.
    pub(crate) fn versions(&self) -> BTreeSet<String> {
        self.resources
            .values()
            .flat_map(|r| r.versions.iter().cloned())
            .collect()
    }
}

/// The tables merged: every Kubernetes version (in order) and every group-version by module
/// name.
#[derive(Debug, Clone)]
pub(crate) struct Merged {
    /// The Kubernetes versions of the tables, oldest first.
    pub(crate) versions: Vec<String>,
    /// The group-versions, by module name (`apps_v1`).
    pub(crate) group_versions: BTreeMap<String, GroupVersion>,
}

impl Merged {
    /// Merges `tables` (which must cover distinct Kubernetes versions), checking that no two
    /// group-versions share a module and no two resources of one share a method.
    pub(crate) fn new(tables: &[ResourceTable]) -> Result<Self, Error> {
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
        Ok(Self {
            versions: all_versions,
            group_versions: gvs,
        })
    }

    /// The cfg attribute (with its newline) for items present in `versions` only, or
    /// nothing when they are in every version; the cfg is named `name`.
    pub(crate) fn cfg(&self, versions: &BTreeSet<String>, name: &str) -> String {
        let all: BTreeSet<String> = self.versions.iter().cloned().collect();
        version_cfg(versions, &all, name)
    }
}

/// Sorts `1.9` before `1.10`.
pub(crate) fn version_key(version: &str) -> Vec<u32> {
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
pub(crate) fn indent(text: &str, spaces: usize) -> String {
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
