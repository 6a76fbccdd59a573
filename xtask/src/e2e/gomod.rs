//! Our Go module's `go.mod`: reading its pins, and generating it from Kubernetes' own go.mod.
//!
//! `k8s.io/kubernetes` cannot be used as a dependency as it is: its go.mod points every staging
//! module (`k8s.io/api`, `k8s.io/client-go`, ...) at `./staging/src/...` with `replace`
//! directives, which do not apply to a module that requires it. A module that requires it must
//! replace each of them with the published release of the same minor and patch
//! (`k8s.io/kubernetes v1.X.Y` goes with `k8s.io/<staging> v0.X.Y`). This module derives those
//! lines from Kubernetes' go.mod, downloaded through the Go module proxy, so they are never
//! typed by hand: `cargo xtask e2e gomod [--kubernetes vX.Y.Z]`.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::build::{go_command, require_go};
use super::layout::go_module_dir;
use crate::step;

/// The module path of our Go module.
const MODULE_PATH: &str = "github.com/kclient-rs/kclient/e2e";
/// The Kubernetes module and the etcd server module.
pub(crate) const KUBERNETES_MODULE: &str = "k8s.io/kubernetes";
const ETCD_SERVER_MODULE: &str = "go.etcd.io/etcd/server/v3";
/// The Kubernetes commands we build (as `tool` directives, so `go mod tidy` keeps their
/// dependencies).
pub(crate) const KUBERNETES_COMMANDS: [&str; 3] = [
    "k8s.io/kubernetes/cmd/kube-apiserver",
    "k8s.io/kubernetes/cmd/kube-controller-manager",
    "k8s.io/kubernetes/cmd/kubectl",
];

/// What our go.mod pins.
#[derive(Debug, Clone)]
pub(crate) struct Pins {
    /// The `go` directive (minimum Go version), e.g. `1.26.0`.
    pub(crate) go: String,
    /// The `k8s.io/kubernetes` version, e.g. `v1.37.1`.
    pub(crate) kubernetes: String,
    /// The `go.etcd.io/etcd/server/v3` version, e.g. `v3.7.0`.
    pub(crate) etcd: String,
}

/// Reads the pins from `e2e/go.mod`.
pub(crate) fn read_pins(module_dir: &Path) -> Result<Pins> {
    let path = module_dir.join("go.mod");
    let text =
        fs::read_to_string(&path).with_context(|| format!("could not read {}", path.display()))?;
    let parsed = parse_go_mod(&text);
    let find = |module: &str| {
        parsed
            .requires
            .iter()
            .find(|(path, _)| path == module)
            .map(|(_, version)| version.clone())
            .with_context(|| format!("{} requires no {module}", path.display()))
    };
    Ok(Pins {
        go: parsed
            .go
            .with_context(|| format!("{} has no go directive", path.display()))?,
        kubernetes: find(KUBERNETES_MODULE)?,
        etcd: find(ETCD_SERVER_MODULE)?,
    })
}

/// The parts of a go.mod that matter here.
#[derive(Debug, Default, PartialEq)]
struct GoMod {
    go: Option<String>,
    requires: Vec<(String, String)>,
    /// `(from, to)` with `to` as written: `./path` or `module version`.
    replaces: Vec<(String, String)>,
}

/// A small line-based go.mod reader (enough for the go, require and replace directives, in
/// single-line and block form).
fn parse_go_mod(text: &str) -> GoMod {
    let mut parsed = GoMod::default();
    let mut block: Option<String> = None;
    for raw in text.lines() {
        let line = raw.split("//").next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        if block.is_some() && line == ")" {
            block = None;
            continue;
        }
        let (directive, body) = match &block {
            Some(name) => (name.as_str(), line),
            None => {
                let (directive, body) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
                let body = body.trim();
                if body == "(" {
                    block = Some(directive.to_string());
                    continue;
                }
                (directive, body)
            }
        };
        match directive {
            "go" => parsed.go = Some(body.to_string()),
            "require" => {
                let mut words = body.split_whitespace();
                if let (Some(path), Some(version)) = (words.next(), words.next()) {
                    parsed.requires.push((path.into(), version.into()));
                }
            }
            "replace" => {
                if let Some((from, to)) = body.split_once("=>") {
                    let from = from.split_whitespace().next().unwrap_or_default();
                    parsed.replaces.push((from.into(), to.trim().into()));
                }
            }
            _ => {}
        }
    }
    parsed
}

/// The staging modules' published version for a Kubernetes version: `v1.X.Y[-pre]` ->
/// `v0.X.Y[-pre]`.
fn staging_version(kubernetes: &str) -> Result<String> {
    match kubernetes.strip_prefix("v1.") {
        Some(rest) => Ok(format!("v0.{rest}")),
        None => bail!("unexpected Kubernetes version {kubernetes:?} (expected v1.X.Y)"),
    }
}

/// Renders our go.mod from Kubernetes' go.mod (before `go mod tidy` adds the indirect
/// requirements and go.sum).
fn render_go_mod(kubernetes_version: &str, kubernetes_go_mod: &str) -> Result<String> {
    let upstream = parse_go_mod(kubernetes_go_mod);
    let go = upstream
        .go
        .as_deref()
        .context("Kubernetes' go.mod has no go directive")?;
    let etcd = upstream
        .requires
        .iter()
        .find(|(path, _)| path == ETCD_SERVER_MODULE)
        .map(|(_, version)| version.as_str())
        .with_context(|| format!("Kubernetes' go.mod does not require {ETCD_SERVER_MODULE}"))?;
    let staging = staging_version(kubernetes_version)?;

    let mut replaces = Vec::new();
    for (from, to) in &upstream.replaces {
        if to.starts_with("./staging/src/") {
            replaces.push(format!("{from} => {from} {staging}"));
        } else if to.starts_with('.') || to.starts_with('/') {
            bail!(
                "Kubernetes' go.mod replaces {from} with the local path {to}, which is not a \
                 staging module: this generator does not know which published module to use"
            );
        } else {
            // A replacement by another published module applies to us as well.
            replaces.push(format!("{from} => {to}"));
        }
    }
    if replaces.is_empty() {
        bail!("Kubernetes' go.mod has no replace directives for its staging modules");
    }

    let mut out = String::new();
    writeln!(
        out,
        "// Code generated by `cargo xtask e2e gomod --kubernetes {kubernetes_version}` from \
         Kubernetes' go.mod. DO NOT EDIT.\n\
         //\n\
         // Builds etcd, kube-apiserver, kube-controller-manager and kubectl for kclient's e2e \
         tests\n\
         // (`cargo xtask e2e`, docs/e2e.md). The replace lines point Kubernetes' staging \
         modules at\n\
         // their published releases, as `go install k8s.io/kubernetes/...@version` cannot.\n\n\
         module {MODULE_PATH}\n\n\
         go {go}\n\n\
         require (\n\t{ETCD_SERVER_MODULE} {etcd}\n\t{KUBERNETES_MODULE} {kubernetes_version}\n)\n"
    )?;
    out.push_str("\ntool (\n");
    for command in KUBERNETES_COMMANDS {
        writeln!(out, "\t{command}")?;
    }
    out.push_str(")\n\nreplace (\n");
    for line in &replaces {
        writeln!(out, "\t{line}")?;
    }
    out.push_str(")\n");
    Ok(out)
}

/// `cargo xtask e2e gomod [--kubernetes vX.Y.Z | --check]`: regenerates e2e/go.mod and
/// e2e/go.sum, or checks that go.mod is what the generator makes.
pub(crate) fn generate(args: &[String]) -> Result<()> {
    let module_dir = go_module_dir();
    let version = match args {
        [] => read_pins(&module_dir)?.kubernetes,
        [flag] if flag == "--check" => return check(),
        [flag, version] if flag == "--kubernetes" => version.clone(),
        _ => bail!("usage: cargo xtask e2e gomod [--kubernetes vX.Y.Z | --check]"),
    };
    require_go(None)?;

    let download = super::build::download_kubernetes(&version)?;
    let upstream = fs::read_to_string(&download.go_mod)
        .with_context(|| format!("could not read {}", download.go_mod.display()))?;
    let rendered = render_go_mod(&version, &upstream)?;
    let upstream_go = parse_go_mod(&upstream).go.unwrap_or_default();
    require_go(Some(&upstream_go))?;

    fs::create_dir_all(&module_dir)?;
    let go_mod = module_dir.join("go.mod");
    fs::write(&go_mod, rendered)
        .with_context(|| format!("could not write {}", go_mod.display()))?;
    // go.sum is recomputed from scratch for the new graph.
    let go_sum = module_dir.join("go.sum");
    if go_sum.exists() {
        fs::remove_file(&go_sum)?;
    }
    let mut tidy = go_command(&module_dir)?;
    tidy.args(["mod", "tidy"]);
    tidy.env("GOFLAGS", "-mod=mod");
    step("go mod tidy (e2e/)", tidy)?;
    let pins = read_pins(&module_dir)?;
    eprintln!(
        "e2e: wrote {} and go.sum: Kubernetes {}, etcd {}, go {}",
        go_mod.display(),
        pins.kubernetes,
        pins.etcd,
        pins.go
    );
    Ok(())
}

/// Checks that e2e/go.mod has exactly the go directive, etcd version and replace lines that
/// the generator derives from Kubernetes' go.mod (so none was typed or changed by hand).
pub(crate) fn check() -> Result<()> {
    let module_dir = go_module_dir();
    let path = module_dir.join("go.mod");
    let current =
        fs::read_to_string(&path).with_context(|| format!("could not read {}", path.display()))?;
    let pins = read_pins(&module_dir)?;
    let download = super::build::download_kubernetes(&pins.kubernetes)?;
    let upstream = fs::read_to_string(&download.go_mod)
        .with_context(|| format!("could not read {}", download.go_mod.display()))?;
    let expected = parse_go_mod(&render_go_mod(&pins.kubernetes, &upstream)?);
    let actual = parse_go_mod(&current);
    let sorted = |mut v: Vec<(String, String)>| {
        v.sort();
        v
    };
    let etcd = |m: &GoMod| {
        m.requires
            .iter()
            .find(|(p, _)| p == ETCD_SERVER_MODULE)
            .map(|(_, v)| v.clone())
    };
    let mut drift = Vec::new();
    if expected.go != actual.go {
        drift.push(format!("go {:?} instead of {:?}", actual.go, expected.go));
    }
    if etcd(&expected) != etcd(&actual) {
        drift.push(format!(
            "{ETCD_SERVER_MODULE} {:?} instead of {:?}",
            etcd(&actual),
            etcd(&expected)
        ));
    }
    if sorted(expected.replaces) != sorted(actual.replaces) {
        drift.push("the replace directives differ".to_string());
    }
    if !drift.is_empty() {
        bail!(
            "{} is not what `cargo xtask e2e gomod` generates from Kubernetes {}'s go.mod ({}): \
             run `cargo xtask e2e gomod` and commit e2e/go.mod and e2e/go.sum",
            path.display(),
            pins.kubernetes,
            drift.join("; ")
        );
    }
    eprintln!(
        "e2e: e2e/go.mod matches Kubernetes {}'s go.mod (etcd {})",
        pins.kubernetes, pins.etcd
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const UPSTREAM: &str = "module k8s.io/kubernetes\n\ngo 1.26.0\n\nrequire (\n\
        \tgithub.com/foo/bar v1.2.3\n\tgo.etcd.io/etcd/server/v3 v3.7.0 // indirect\n\
        \tk8s.io/api v0.0.0\n)\n\nreplace (\n\
        \tk8s.io/api => ./staging/src/k8s.io/api\n\
        \tk8s.io/client-go => ./staging/src/k8s.io/client-go\n)\n";

    #[test]
    fn parses_blocks_and_single_lines() {
        let parsed = parse_go_mod(
            "module m\ngo 1.22\nrequire a.b/c v1.0.0 // indirect\nrequire (\n\td/e v2.0.0\n)\n\
             replace x/y => x/y v0.1.0\n",
        );
        assert_eq!(parsed.go.as_deref(), Some("1.22"));
        assert_eq!(
            parsed.requires,
            vec![
                ("a.b/c".to_string(), "v1.0.0".to_string()),
                ("d/e".to_string(), "v2.0.0".to_string())
            ]
        );
        assert_eq!(
            parsed.replaces,
            vec![("x/y".to_string(), "x/y v0.1.0".to_string())]
        );
    }

    #[test]
    fn renders_staging_replaces_from_upstream() {
        let rendered = render_go_mod("v1.37.1", UPSTREAM).unwrap();
        assert!(rendered.contains("\tk8s.io/api => k8s.io/api v0.37.1\n"));
        assert!(rendered.contains("\tk8s.io/client-go => k8s.io/client-go v0.37.1\n"));
        assert!(rendered.contains("\tgo.etcd.io/etcd/server/v3 v3.7.0\n"));
        assert!(rendered.contains("\tk8s.io/kubernetes v1.37.1\n"));
        assert!(rendered.contains("\ngo 1.26.0\n"));
        let ours = parse_go_mod(&rendered);
        assert_eq!(ours.replaces.len(), 2);
    }

    #[test]
    fn staging_versions() {
        assert_eq!(staging_version("v1.37.1").unwrap(), "v0.37.1");
        assert_eq!(staging_version("v1.38.0-rc.1").unwrap(), "v0.38.0-rc.1");
        assert!(staging_version("v2.0.0").is_err());
    }
}
