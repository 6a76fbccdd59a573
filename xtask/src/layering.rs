//! `cargo xtask layering` (and the second step of `cargo xtask test`): the workspace's crates
//! depend on each other only along the edges of [`ALLOWED`], the one allow-list of the
//! layering (`docs/architecture.md` shows it; a test keeps the two equal).
//!
//! What is checked, from `cargo metadata --no-deps`:
//!
//! * **Normal and build dependencies** between workspace crates: each must be an edge of
//!   [`ALLOWED`], and every workspace crate must have an entry there (a new crate is placed
//!   in the layering on purpose, not by accident). Optional dependencies count: the facade's
//!   layers are optional.
//! * **Dev-dependencies** are not held to the allow-list — tests may reach up (the clients'
//!   suites run against kclient-fake, kclient-informers' against the clients) — with two
//!   rules: a dev-dependency must not depend, through normal edges, on the crate it tests (a
//!   dev-dependency cycle builds the crate twice, and its types in the test are not the
//!   crate's own), and a crate that is not published (`publish = false`, such as
//!   `kclient-testkit`) may only ever be a dev-dependency of a published crate.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{bail, Result};
use serde::Deserialize;

use crate::{workspace_metadata, workspace_root};

/// The allow-list: each workspace crate and the workspace crates it may depend on (normal
/// and build dependencies). Lower layers first. Changing the layering means changing this
/// list, and the table in `docs/architecture.md` with it.
pub(crate) const ALLOWED: &[(&str, &[&str])] = &[
    // The bottom: no kclient dependency at all.
    ("kclient-core", &[]),
    // x/time/rate's token bucket: under the REST client's throttle and the workqueue.
    ("kclient-rate", &[]),
    ("kclient-testkit", &[]),
    ("kclient-derive", &[]),
    ("kclient-webhook", &["kclient-core"]),
    // The queue's overall rate limiter is kclient-rate's token bucket; no Kubernetes types.
    ("kclient-workqueue", &["kclient-rate"]),
    // Protobuf codecs on the k8s-openapi types and kclient-core's own (the REST layer's wire).
    ("kclient-protobuf", &["kclient-core"]),
    // HTTP (its client-side throttle is kclient-rate's bucket), and the cache (which knows
    // only kclient-core's ListerWatcher seams; its compact representation keeps built-in
    // kinds as protobuf).
    (
        "kclient-rest",
        &["kclient-core", "kclient-rate", "kclient-protobuf"],
    ),
    ("kclient-cache", &["kclient-core", "kclient-protobuf"]),
    // The clients: none of them knows the cache.
    ("kclient-discovery", &["kclient-core", "kclient-rest"]),
    ("kclient-dynamic", &["kclient-core", "kclient-rest"]),
    // Exec, attach and port-forward: protocols upgraded on the REST layer's transport.
    ("kclient-streaming", &["kclient-core", "kclient-rest"]),
    // The typed client's Pod expansion runs exec and port-forward (its optional
    // `streaming` feature); the Clientset makes the informers of resources chosen at run time
    // (whole or metadata only) through the dynamic and metadata clients.
    (
        "kclient-typed",
        &[
            "kclient-core",
            "kclient-rest",
            "kclient-dynamic",
            "kclient-streaming",
        ],
    ),
    (
        "kclient-fake",
        &[
            "kclient-core",
            "kclient-rest",
            "kclient-protobuf",
            "kclient-streaming",
        ],
    ),
    // The typed informers: the cache with generated accessors, no client.
    ("kclient-informers", &["kclient-core", "kclient-cache"]),
    // Controllers' tools sit on the clients and the cache.
    (
        "kclient-tools",
        &[
            "kclient-core",
            "kclient-rest",
            "kclient-discovery",
            "kclient-typed",
            "kclient-cache",
        ],
    ),
    // Tests against a real etcd and kube-apiserver: the admin client and install_crds.
    (
        "kclient-envtest",
        &[
            "kclient-core",
            "kclient-rest",
            "kclient-typed",
            "kclient-tools",
        ],
    ),
    // The reconcile runtime: controllers on the cache's shared informers, fed through the
    // workqueue; leader election, events and retries from the tools, the finalizer helper's
    // writes through the typed client (create_or_update's status patch through its rest
    // client).
    (
        "kclient-controller",
        &[
            "kclient-core",
            "kclient-cache",
            "kclient-workqueue",
            "kclient-tools",
            "kclient-rest",
            "kclient-typed",
        ],
    ),
    // The generator (its optional `discovery` feature reads a live server).
    ("kclient-codegen", &["kclient-rest"]),
    // The facade: every layer; nothing depends on it.
    (
        "kclient",
        &[
            "kclient-core",
            // Only to forward its API-group features (`group-apps`, …): nothing re-exported.
            "kclient-protobuf",
            "kclient-rest",
            "kclient-discovery",
            "kclient-dynamic",
            "kclient-typed",
            "kclient-cache",
            "kclient-informers",
            "kclient-workqueue",
            "kclient-fake",
            "kclient-tools",
            "kclient-streaming",
            "kclient-controller",
            "kclient-derive",
            "kclient-webhook",
        ],
    ),
    // Not published: the e2e suite, the benchmark scenarios, the project's automation.
    (
        "kclient-e2e",
        &[
            "kclient-core",
            "kclient-rest",
            "kclient-fake",
            "kclient-protobuf",
            "kclient-webhook",
            "kclient-derive",
            "kclient-tools",
        ],
    ),
    (
        "kclient-bench",
        &[
            "kclient-core",
            "kclient-rest",
            "kclient-cache",
            "kclient-typed",
            "kclient-workqueue",
            "kclient-controller",
            "kclient-fake",
            "kclient-protobuf",
            // The soak's seeded choices (`SeededRng`, without proptest).
            "kclient-testkit",
        ],
    ),
    // kclient-derive's tests: what it generates, and its compile errors (only
    // dev-dependencies; a proc macro's own tests would build theirs a second time, for the
    // host).
    ("kclient-derive-tests", &[]),
    ("kclient-derive-ui", &[]),
    // A user's crate (docs/envtest.md): its operator on the facade, as users depend on it.
    ("envtest-greeter", &["kclient"]),
    (
        "xtask",
        &["kclient-codegen", "kclient-rest", "kclient-envtest"],
    ),
];

/// One workspace crate as `cargo metadata` describes it.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Package {
    name: String,
    manifest_path: String,
    /// `null` (published anywhere), `[]` (`publish = false`) or the registries.
    #[serde(default)]
    publish: Option<Vec<String>>,
    dependencies: Vec<Dependency>,
}

/// One dependency of a [`Package`].
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Dependency {
    name: String,
    /// `null` for a normal dependency, `"dev"` or `"build"`.
    kind: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Metadata {
    packages: Vec<Package>,
}

/// How a dependency is declared, for the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A normal or build dependency: part of the crate's own build.
    Normal,
    /// A dev-dependency: tests, examples and benchmarks only.
    Dev,
}

impl Dependency {
    fn kind(&self) -> Kind {
        match self.kind.as_deref() {
            Some("dev") => Kind::Dev,
            _ => Kind::Normal,
        }
    }

    fn kind_name(&self) -> &str {
        match self.kind.as_deref() {
            Some("build") => "build-dependency",
            Some("dev") => "dev-dependency",
            _ => "dependency",
        }
    }
}

pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(unknown) = args.first() {
        bail!("`cargo xtask layering` takes no arguments (got {unknown:?})");
    }
    let metadata: Metadata = workspace_metadata()?;
    let edges = check(&metadata.packages, ALLOWED)?;
    eprintln!(
        "layering: {} crates, {edges} dependencies between them, all along the allowed edges",
        metadata.packages.len()
    );
    Ok(())
}

/// Checks `packages` (the workspace) against `allowed`: the number of normal edges between
/// workspace crates, or an error naming every offending edge.
pub(crate) fn check(packages: &[Package], allowed: &[(&str, &[&str])]) -> Result<usize> {
    let members: BTreeMap<&str, &Package> = packages.iter().map(|p| (p.name.as_str(), p)).collect();
    let allowed: BTreeMap<&str, BTreeSet<&str>> = allowed
        .iter()
        .map(|(from, to)| (*from, to.iter().copied().collect()))
        .collect();
    let mut problems = Vec::new();
    let mut edges = 0;
    for package in packages {
        let from = package.name.as_str();
        let Some(may) = allowed.get(from) else {
            problems.push(format!(
                "{from} ({}) is not in the allow-list: add it to ALLOWED in \
                 xtask/src/layering.rs, with the crates it may depend on",
                relative(&package.manifest_path)
            ));
            continue;
        };
        for dep in &package.dependencies {
            let to = dep.name.as_str();
            let Some(target) = members.get(to) else {
                continue; // not a workspace crate
            };
            match dep.kind() {
                Kind::Normal => {
                    edges += 1;
                    if !may.contains(to) {
                        problems.push(format!(
                            "{from} -> {to}: a {} the layering does not allow ({}); \
                             {from} may depend on {}",
                            dep.kind_name(),
                            relative(&package.manifest_path),
                            list(may)
                        ));
                    } else if is_published(package) && !is_published(target) {
                        problems.push(format!(
                            "{from} -> {to}: {to} is not published (publish = false), so it \
                             can only be a dev-dependency ({})",
                            relative(&package.manifest_path)
                        ));
                    }
                }
                Kind::Dev => {
                    if depends_on(&members, to, from) {
                        problems.push(format!(
                            "{from} -> {to}: a dev-dependency cycle ({to} depends on {from}, \
                             so {from}'s tests would build a second {from}) ({})",
                            relative(&package.manifest_path)
                        ));
                    }
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(edges)
    } else {
        bail!(
            "the crates do not layer as allowed (the allow-list is ALLOWED in \
             xtask/src/layering.rs, shown in docs/architecture.md):\n  {}",
            problems.join("\n  ")
        )
    }
}

/// Whether `from` reaches `to` through normal (and build) dependencies between workspace
/// crates.
fn depends_on(members: &BTreeMap<&str, &Package>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut pending = vec![from];
    while let Some(current) = pending.pop() {
        if current == to {
            return true;
        }
        if !seen.insert(current) {
            continue;
        }
        if let Some(package) = members.get(current) {
            pending.extend(
                package
                    .dependencies
                    .iter()
                    .filter(|d| d.kind() == Kind::Normal && members.contains_key(d.name.as_str()))
                    .map(|d| d.name.as_str()),
            );
        }
    }
    false
}

fn is_published(package: &Package) -> bool {
    package.publish.as_ref().is_none_or(|r| !r.is_empty())
}

fn list(crates: &BTreeSet<&str>) -> String {
    if crates.is_empty() {
        "no workspace crate".to_owned()
    } else {
        crates.iter().copied().collect::<Vec<_>>().join(", ")
    }
}

/// `path` relative to the workspace root, for messages.
fn relative(path: &str) -> String {
    let root = workspace_root();
    std::path::Path::new(path)
        .strip_prefix(&root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.to_owned())
}

/// The allow-list as the Markdown table `docs/architecture.md` shows (only the test that
/// compares the two needs it).
#[cfg(test)]
fn allow_list_table() -> String {
    let mut out =
        String::from("| crate | may depend on (normal and build dependencies) |\n|---|---|\n");
    for (from, to) in ALLOWED {
        let to = if to.is_empty() {
            "no kclient crate".to_owned()
        } else {
            to.iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        out.push_str(&format!("| `{from}` | {to} |\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(name: &str, deps: &[(&str, Option<&str>)]) -> Package {
        Package {
            name: name.to_owned(),
            manifest_path: format!("/nowhere/crates/{name}/Cargo.toml"),
            publish: None,
            dependencies: deps
                .iter()
                .map(|(n, kind)| Dependency {
                    name: (*n).to_owned(),
                    kind: kind.map(str::to_owned),
                })
                .collect(),
        }
    }

    const SMALL: &[(&str, &[&str])] = &[
        ("kclient-core", &[]),
        ("kclient-cache", &["kclient-core"]),
        ("kclient-typed", &["kclient-core"]),
        ("kclient-testkit", &[]),
        ("kclient-derive", &[]),
        ("kclient-webhook", &["kclient-core"]),
    ];

    #[test]
    fn allowed_edges_pass_and_are_counted() {
        let packages = [
            package("kclient-core", &[("serde", None)]),
            package("kclient-cache", &[("kclient-core", None)]),
            package(
                "kclient-typed",
                &[("kclient-core", None), ("kclient-cache", Some("dev"))],
            ),
        ];
        assert_eq!(check(&packages, SMALL).unwrap(), 2);
    }

    #[test]
    fn a_wrong_edge_fails_naming_it() {
        let packages = [
            package("kclient-core", &[]),
            package("kclient-cache", &[("kclient-core", None)]),
            package(
                "kclient-typed",
                &[("kclient-core", None), ("kclient-cache", None)],
            ),
        ];
        let message = check(&packages, SMALL).unwrap_err().to_string();
        assert!(
            message.contains(
                "kclient-typed -> kclient-cache: a dependency the layering does not allow \
                 (/nowhere/crates/kclient-typed/Cargo.toml); kclient-typed may depend on \
                 kclient-core"
            ),
            "{message}"
        );
        assert!(
            !message.contains("kclient-typed -> kclient-core"),
            "{message}"
        );
    }

    #[test]
    fn build_dependencies_are_held_to_the_list_too() {
        let packages = [
            package("kclient-core", &[("kclient-typed", Some("build"))]),
            package("kclient-typed", &[("kclient-core", None)]),
        ];
        let message = check(&packages, SMALL).unwrap_err().to_string();
        assert!(
            message.contains("kclient-core -> kclient-typed: a build-dependency"),
            "{message}"
        );
    }

    #[test]
    fn a_crate_missing_from_the_list_fails() {
        let packages = [package("kclient-new", &[])];
        let message = check(&packages, SMALL).unwrap_err().to_string();
        assert!(
            message.contains(
                "kclient-new (/nowhere/crates/kclient-new/Cargo.toml) is not in the allow-list"
            ),
            "{message}"
        );
    }

    #[test]
    fn dev_dependency_cycles_fail() {
        let packages = [
            package("kclient-core", &[]),
            package(
                "kclient-cache",
                &[("kclient-core", None), ("kclient-typed", Some("dev"))],
            ),
            package("kclient-typed", &[("kclient-core", None)]),
        ];
        assert!(
            check(&packages, SMALL).is_ok(),
            "no cycle: typed does not need the cache"
        );
        let packages = [
            package("kclient-core", &[]),
            package(
                "kclient-cache",
                &[("kclient-core", None), ("kclient-typed", Some("dev"))],
            ),
            package(
                "kclient-typed",
                &[("kclient-core", None), ("kclient-cache", None)],
            ),
        ];
        let message = check(&packages, SMALL).unwrap_err().to_string();
        assert!(
            message.contains("kclient-cache -> kclient-typed: a dev-dependency cycle"),
            "{message}"
        );
    }

    #[test]
    fn an_unpublished_crate_is_a_dev_dependency_only() {
        let mut testkit = package("kclient-testkit", &[]);
        testkit.publish = Some(Vec::new());
        let allowed: &[(&str, &[&str])] = &[
            ("kclient-core", &["kclient-testkit"]),
            ("kclient-testkit", &[]),
            ("kclient-derive", &[]),
            ("kclient-webhook", &["kclient-core"]),
        ];
        let as_dev = [
            package("kclient-core", &[("kclient-testkit", Some("dev"))]),
            testkit.clone(),
        ];
        assert!(check(&as_dev, allowed).is_ok());
        let as_normal = [
            package("kclient-core", &[("kclient-testkit", None)]),
            testkit,
        ];
        let message = check(&as_normal, allowed).unwrap_err().to_string();
        assert!(
            message.contains("kclient-core -> kclient-testkit: kclient-testkit is not published"),
            "{message}"
        );
    }

    #[test]
    fn cargo_metadata_is_read() {
        let json = br#"{"packages":[{"name":"kclient-typed","manifest_path":"/w/Cargo.toml",
            "publish":null,"dependencies":[{"name":"kclient-core","kind":null},
            {"name":"kclient-fake","kind":"dev"}]}],"version":1}"#;
        let metadata: Metadata = serde_json::from_slice(json).unwrap();
        assert_eq!(metadata.packages[0].dependencies[1].kind(), Kind::Dev);
    }

    #[test]
    fn the_workspace_layers_as_allowed() {
        let metadata: Metadata = workspace_metadata().unwrap();
        check(&metadata.packages, ALLOWED).unwrap();
        for (from, _) in ALLOWED {
            assert!(
                metadata.packages.iter().any(|p| p.name == *from),
                "{from} is in the allow-list but not in the workspace"
            );
        }
    }

    #[test]
    fn the_architecture_doc_shows_the_allow_list() {
        let doc = std::fs::read_to_string(workspace_root().join("docs/architecture.md")).unwrap();
        let table = allow_list_table();
        assert!(
            doc.contains(&table),
            "docs/architecture.md must show the allow-list as it is in xtask/src/layering.rs:\n{table}"
        );
    }
}
