//! `cargo xtask publish-check`: the crates can be published, and depended on as the docs say.
//!
//! * **Packaging.** `cargo package` of every crate that is published (`publish` not `false`),
//!   all at once with `--workspace`: cargo packages them in dependency order and resolves each
//!   one's dependencies on the others through the packages just made (a local registry
//!   overlay), so crates whose kclient dependencies are not on crates.io yet package too.
//!   Offline, with the lock file unchanged, and without the verification build (`cargo
//!   package` without `--no-verify` works too, offline, with `K8S_OPENAPI_ENABLED_VERSION`
//!   set for the libraries, but builds each package with its kclient dependencies again from
//!   their packages: the first six took 13 s, 37 s, 49 s, 72 s, 99 s and 103 s on the shared
//!   two-core machine, so the thirteen would add a quarter of an hour to every CI run), for
//!   what the normal build already proves: no crate reads a file outside its directory, but
//!   the facade's doc tests of `README.md` and `docs/`, behind `cfg(doctest)`. What it does
//!   check is what `cargo publish` would refuse: the metadata (description, licence,
//!   repository), the files of each package, every dependency carrying a version, and that
//!   each package's dependencies resolve.
//! * **The documented dependency lines.** Every `toml` block of `README.md`,
//!   `docs/getting-started.md` and `docs/envtest.md` that declares kclient crates becomes the manifest of a scratch
//!   project (in the target directory), its `git = ...` (or `path = ...`) source replaced by
//!   this checkout's crate, and must resolve offline (`cargo metadata`) with exactly one
//!   Kubernetes version feature on k8s-openapi — the mistake a newcomer makes first is a
//!   line that picks none, or two. The `git` URL must be the workspace's `repository`. (The
//!   Rust code of the same documents is compiled by the facade's doc tests.)

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use anyhow::{bail, ensure, Context, Result};
use serde::Deserialize;

use crate::{cargo, step, target_dir, workspace_metadata, workspace_root};

/// The documents whose dependency lines are checked.
const DOCUMENTS: &[&str] = &["README.md", "docs/getting-started.md", "docs/envtest.md"];

pub(crate) fn run(args: &[String]) -> Result<()> {
    if let Some(unknown) = args.first() {
        bail!("`cargo xtask publish-check` takes no arguments (got {unknown:?})");
    }
    package()?;
    eprintln!("==> the dependency lines of the docs");
    let checked = documented_dependencies()?;
    eprintln!("<== {checked} dependency blocks resolve, each with one Kubernetes version");
    Ok(())
}

/// A workspace crate, as far as publishing goes.
#[derive(Debug, Deserialize)]
struct Member {
    name: String,
    /// `null` (published anywhere), `[]` (`publish = false`) or the registries.
    #[serde(default)]
    publish: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
struct Members {
    packages: Vec<Member>,
}

/// `cargo package --workspace` of the published crates (see the module documentation).
fn package() -> Result<()> {
    let Members { packages } = workspace_metadata()?;
    let unpublished: Vec<&str> = packages
        .iter()
        .filter(|p| p.publish.as_ref().is_some_and(Vec::is_empty))
        .map(|p| p.name.as_str())
        .collect();
    let mut package = cargo();
    package.args([
        "package",
        "--workspace",
        "--no-verify",
        "--offline",
        "--locked",
        "--allow-dirty",
    ]);
    for name in &unpublished {
        package.args(["--exclude", name]);
    }
    let published = packages.len() - unpublished.len();
    step(
        &format!(
            "cargo package of the {published} published crates (not {})",
            unpublished.join(", ")
        ),
        package,
    )
}

/// The `toml` blocks of `markdown` that declare kclient crates, with their first line number.
fn dependency_blocks(markdown: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (index, line) in markdown.lines().enumerate() {
        match (&mut current, line.trim_end()) {
            (None, "```toml") => current = Some((index + 2, String::new())),
            (Some(_), "```") => {
                if let Some((at, block)) = current.take() {
                    if block.lines().any(|l| crate_name(l).is_some()) {
                        blocks.push((at, block));
                    }
                }
            }
            (Some((_, block)), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// The kclient crate a dependency line declares (`kclient`, `kclient-core`, ...), if any.
fn crate_name(line: &str) -> Option<&str> {
    let (name, _) = line.split_once('=')?;
    let name = name.trim();
    (name == "kclient" || name.starts_with("kclient-")).then_some(name)
}

/// The value of `key = "..."` in an inline table line, if present.
fn string_value<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let at = line.find(&format!("{key} = \""))? + key.len() + 4;
    let rest = &line[at..];
    Some(&rest[..rest.find('"')?])
}

/// `block`'s dependency lines with their kclient sources pointed at this checkout: `git =
/// "URL"` (which must be `repository`) or `path = "..."` replaced by `path = "<crate dir>"`, a
/// bare `"0.1"` made `{ version = "0.1", path = "<crate dir>" }`.
fn localized(block: &str, root: &Path, repository: &str) -> Result<String> {
    let mut out = String::new();
    for line in block.lines() {
        let Some(name) = crate_name(line) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let local = root.join("crates").join(name);
        ensure!(
            local.join("Cargo.toml").is_file(),
            "{name} is no crate of this workspace"
        );
        let path = format!("path = {:?}", local.display().to_string());
        let (_, value) = line.split_once('=').unwrap_or_default();
        let value = value.trim();
        let rewritten = if let Some(url) = string_value(line, "git") {
            ensure!(
                url == repository,
                "{name}'s git source {url:?} is not the workspace's repository {repository:?}"
            );
            line.replace(&format!("git = {url:?}"), &path)
        } else if let Some(given) = string_value(line, "path") {
            line.replace(&format!("path = {given:?}"), &path)
        } else if value.starts_with('"') {
            format!("{name} = {{ version = {value}, {path} }}")
        } else {
            bail!("{name} has neither a git nor a path source nor a bare version: {line}");
        };
        out.push_str(&rewritten);
        out.push('\n');
    }
    Ok(out)
}

/// What `cargo metadata` says of a resolved dependency graph, as far as the check goes.
#[derive(Debug, Deserialize)]
struct Resolved {
    packages: Vec<ResolvedPackage>,
    resolve: Resolve,
}

#[derive(Debug, Deserialize)]
struct ResolvedPackage {
    id: String,
    name: String,
}

#[derive(Debug, Deserialize)]
struct Resolve {
    nodes: Vec<Node>,
}

#[derive(Debug, Deserialize)]
struct Node {
    id: String,
    features: Vec<String>,
}

/// The Kubernetes version features k8s-openapi resolved with (`v1_37`, ...); `None` when
/// k8s-openapi is not in the graph.
fn kubernetes_versions(resolved: &Resolved) -> Option<BTreeSet<String>> {
    let names: BTreeMap<&str, &str> = resolved
        .packages
        .iter()
        .map(|p| (p.id.as_str(), p.name.as_str()))
        .collect();
    let node = resolved
        .resolve
        .nodes
        .iter()
        .find(|n| names.get(n.id.as_str()) == Some(&"k8s-openapi"))?;
    Some(
        node.features
            .iter()
            .filter(|f| f.starts_with("v1_"))
            .cloned()
            .collect(),
    )
}

/// The workspace's `repository`, as `cargo metadata` reports it for the facade.
#[derive(Debug, Deserialize)]
struct Repository {
    packages: Vec<RepositoryOf>,
}

#[derive(Debug, Deserialize)]
struct RepositoryOf {
    name: String,
    repository: Option<String>,
}

/// Checks every dependency block of [`DOCUMENTS`]; how many there were.
fn documented_dependencies() -> Result<usize> {
    let root = workspace_root();
    let Repository { packages } = workspace_metadata()?;
    let repository = packages
        .iter()
        .find(|p| p.name == "kclient")
        .and_then(|p| p.repository.clone())
        .context("the facade has no repository")?;
    let scratch = target_dir()?.join("doc-dependencies");
    let mut checked = 0;
    for document in DOCUMENTS {
        let text = fs::read_to_string(root.join(document))
            .with_context(|| format!("cannot read {document}"))?;
        for (line, block) in dependency_blocks(&text) {
            let place = format!("{document}:{line}");
            check_block(
                &block,
                &root,
                &repository,
                &scratch.join(checked.to_string()),
            )
            .with_context(|| format!("the dependency block at {place}"))?;
            eprintln!("    {place}: resolves");
            checked += 1;
        }
    }
    ensure!(checked > 0, "no dependency block found in {DOCUMENTS:?}");
    Ok(checked)
}

/// One block: a scratch project with it as its dependencies, resolved offline.
fn check_block(block: &str, root: &Path, repository: &str, project: &Path) -> Result<()> {
    fs::create_dir_all(project.join("src"))?;
    let manifest = format!(
        "[package]\nname = \"doc-dependency-check\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
         publish = false\n\n[workspace]\n\n{}",
        localized(block, root, repository)?
    );
    fs::write(project.join("Cargo.toml"), manifest)?;
    fs::write(project.join("src/main.rs"), "fn main() {}\n")?;
    // The workspace's lock: the versions the workspace builds with, all in the local cache.
    fs::copy(root.join("Cargo.lock"), project.join("Cargo.lock"))?;
    let output = cargo()
        .current_dir(project)
        .args(["metadata", "--format-version", "1", "--offline"])
        .output()
        .context("could not run cargo metadata")?;
    if !output.status.success() {
        bail!(
            "it does not resolve: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let resolved: Resolved = serde_json::from_slice(&output.stdout)?;
    if let Some(versions) = kubernetes_versions(&resolved) {
        ensure!(
            versions.len() == 1,
            "k8s-openapi resolves with {} Kubernetes versions ({versions:?}): a build needs \
             exactly one",
            versions.len()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPOSITORY: &str = "https://github.com/kclient-rs/kclient";

    #[test]
    fn finds_the_blocks_that_declare_kclient_crates() {
        let markdown = "text\n```toml\n[dependencies]\nkclient = \"0.1\"\n```\n\n```toml\n\
                        [dependencies]\nserde = \"1\"\n```\n```rust\nkclient = 1;\n```\n";
        let blocks = dependency_blocks(markdown);
        assert_eq!(
            blocks,
            [(3, "[dependencies]\nkclient = \"0.1\"\n".to_string())]
        );
    }

    #[test]
    fn sources_point_at_the_checkout() {
        let root = workspace_root();
        let local =
            |name: &str| format!("{:?}", root.join("crates").join(name).display().to_string());
        let block = format!(
            "[dependencies]\nkclient = {{ version = \"0.1\", git = \"{REPOSITORY}\", features = [\"fake\"] }}\n\
             kclient-core = \"0.1\"\nkclient-workqueue = {{ version = \"0.1\", path = \"../kclient/crates/kclient-workqueue\" }}\n\
             tokio = \"1\"\n"
        );
        assert_eq!(
            localized(&block, &root, REPOSITORY).unwrap(),
            format!(
                "[dependencies]\nkclient = {{ version = \"0.1\", path = {}, features = [\"fake\"] }}\n\
                 kclient-core = {{ version = \"0.1\", path = {} }}\n\
                 kclient-workqueue = {{ version = \"0.1\", path = {} }}\ntokio = \"1\"\n",
                local("kclient"),
                local("kclient-core"),
                local("kclient-workqueue")
            )
        );
        let elsewhere = "kclient = { version = \"0.1\", git = \"https://example.com/fork\" }\n";
        let err = localized(elsewhere, &root, REPOSITORY).unwrap_err();
        assert!(
            err.to_string().contains("not the workspace's repository"),
            "{err}"
        );
        let unknown = "kclient-nope = \"0.1\"\n";
        assert!(localized(unknown, &root, REPOSITORY).is_err());
    }

    #[test]
    fn counts_the_kubernetes_versions_of_k8s_openapi() {
        let resolved = |features: &str| -> Resolved {
            serde_json::from_str(&format!(
                r#"{{"packages": [{{"id": "k8s-openapi 0.29.0", "name": "k8s-openapi"}},
                                  {{"id": "serde 1", "name": "serde"}}],
                    "resolve": {{"nodes": [{{"id": "serde 1", "features": ["std"]}},
                                           {{"id": "k8s-openapi 0.29.0", "features": {features}}}]}}}}"#
            ))
            .unwrap()
        };
        let versions = |f: &str| kubernetes_versions(&resolved(f)).map(|v| v.len());
        assert_eq!(versions(r#"["std", "v1_37"]"#), Some(1));
        assert_eq!(versions(r#"["latest", "std", "v1_37"]"#), Some(1));
        assert_eq!(versions(r#"["std"]"#), Some(0));
        assert_eq!(versions(r#"["v1_35", "v1_37"]"#), Some(2));
        let without: Resolved =
            serde_json::from_str(r#"{"packages": [], "resolve": {"nodes": []}}"#).unwrap();
        assert_eq!(kubernetes_versions(&without), None);
    }
}
