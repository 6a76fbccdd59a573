//! `cargo xtask codegen`: the generated code of kclient, from kclient-codegen.
//!
//! * `codegen [--check]` — the typed Clientset (`crates/kclient-typed/src/generated/`) and the
//!   typed informers (`crates/kclient-informers/src/generated/`) from the resource tables
//!   `crates/kclient-codegen/data/resources-v1.NN.json`; `--check` writes nothing and fails if
//!   the checked-in code differs (the step `cargo xtask test` runs).
//! * `codegen table [--versions 1.35,1.36,1.37]` — the tables, from k8s-openapi's source (its
//!   types, plus the verbs and subresources kclient-codegen knows).
//! * `codegen refresh --kubeconfig <file>` — the table of the server's version, from its
//!   discovery of the built-in APIs (the cluster's CRDs and aggregated APIs are left out; Rust
//!   types and skip reasons are kept from the existing table, and so are the resources the
//!   server does not serve, such as alpha APIs it does not enable).
//! * `codegen crd <crd.yaml>… --out <dir> [--check]` — Rust types and typed clients for
//!   CustomResourceDefinitions.
//! * `codegen` and `codegen --check` also cover kclient-protobuf's codecs, and
//!   `codegen protobuf-refresh` their inputs (see `codegen_protobuf.rs`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use kclient_codegen::discovery::{fetch_discovery_blocking, minor_version};
use kclient_codegen::{
    generate_clientset, generate_informers, table_from_discovery, table_from_k8s_openapi,
    ClientsetOptions, CrdOptions, GeneratedFiles, InformersOptions, ResourceTable,
};

use crate::{cargo, workspace_root};

/// The Kubernetes versions the checked-in tables cover by default (kclient-typed's features).
const DEFAULT_VERSIONS: &[&str] = &["1.35", "1.36", "1.37"];

fn data_dir() -> PathBuf {
    workspace_root().join("crates/kclient-codegen/data")
}

fn generated_dir() -> PathBuf {
    workspace_root().join("crates/kclient-typed/src/generated")
}

fn informers_generated_dir() -> PathBuf {
    workspace_root().join("crates/kclient-informers/src/generated")
}

fn table_path(version: &str) -> PathBuf {
    data_dir().join(format!("resources-v{version}.json"))
}

pub(crate) fn run(args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        None => clientset(false),
        Some("--check") if args.len() == 1 => clientset(true),
        Some("table") => table(&args[1..]),
        Some("refresh") => refresh(&args[1..]),
        Some("crd") => crd(&args[1..]),
        Some("protobuf-refresh") => crate::codegen_protobuf::refresh(&args[1..]),
        Some("help" | "-h" | "--help") => {
            eprintln!(
                "usage: cargo xtask codegen [--check]\n       \
                 cargo xtask codegen table [--versions 1.35,1.36,1.37]\n       \
                 cargo xtask codegen refresh --kubeconfig <file> [--context <name>]\n       \
                 cargo xtask codegen crd <crd.yaml>... --out <dir> [--check]\n       \
                 cargo xtask codegen protobuf-refresh [--versions 1.35,1.36,1.37]"
            );
            Ok(())
        }
        Some(other) => bail!("unknown codegen argument {other:?} (see `cargo xtask codegen help`)"),
    }
}

/// Every checked-in table, in version order.
fn load_tables() -> Result<Vec<ResourceTable>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .with_context(|| format!("reading {}", data_dir().display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("resources-v") && n.ends_with(".json"))
        })
        .collect();
    paths.sort();
    if paths.is_empty() {
        bail!(
            "no resource tables in {} (run `cargo xtask codegen table`)",
            data_dir().display()
        );
    }
    paths
        .iter()
        .map(|p| ResourceTable::load(p).with_context(|| format!("loading {}", p.display())))
        .collect()
}

/// Generates (or checks) the Clientset and the typed informers.
fn clientset(check: bool) -> Result<()> {
    let tables = load_tables()?;
    let files = generate_clientset(&tables, &ClientsetOptions::default())?.rustfmt()?;
    write_or_check(&files, &generated_dir(), check, "cargo xtask codegen")?;
    let informers = generate_informers(&tables, &InformersOptions::default())?.rustfmt()?;
    write_or_check(
        &informers,
        &informers_generated_dir(),
        check,
        "cargo xtask codegen",
    )?;
    crate::codegen_protobuf::codecs(check)?;
    if !check {
        for table in &tables {
            let skipped: Vec<String> = table
                .skipped()
                .map(|(r, why)| format!("{} {}: {why}", r.api_version(), r.kind))
                .collect();
            eprintln!(
                "codegen: Kubernetes {}: {} resources, {} skipped",
                table.kubernetes_version,
                table.supported().count(),
                skipped.len()
            );
            for s in skipped {
                eprintln!("  skipped {s}");
            }
        }
    }
    Ok(())
}

pub(crate) fn write_or_check(
    files: &GeneratedFiles,
    dir: &Path,
    check: bool,
    regenerate: &str,
) -> Result<()> {
    if check {
        let drift = files.diff(dir)?;
        if !drift.is_empty() {
            bail!(
                "the generated code in {} is out of date; run `{regenerate}`:\n{drift}",
                dir.display()
            );
        }
        eprintln!(
            "codegen: {} files in {} are up to date",
            files.len(),
            dir.display()
        );
    } else {
        let drift = files.write(dir)?;
        eprintln!(
            "codegen: {} files in {} ({} new, {} changed, {} removed)",
            files.len(),
            dir.display(),
            drift.missing.len(),
            drift.changed.len(),
            drift.stale.len()
        );
    }
    Ok(())
}

/// The value after `flag`, if given.
pub(crate) fn flag_value<'a>(args: &'a [String], flag: &str) -> Result<Option<&'a str>> {
    match args.iter().position(|a| a == flag) {
        None => Ok(None),
        Some(i) => match args.get(i + 1) {
            Some(v) => Ok(Some(v)),
            None => bail!("{flag} needs a value"),
        },
    }
}

/// The source directory of k8s-openapi as cargo resolved it for this workspace.
pub(crate) fn k8s_openapi_source() -> Result<(PathBuf, String)> {
    let output = cargo()
        .args(["metadata", "--format-version", "1"])
        .output()
        .context("running cargo metadata")?;
    if !output.status.success() {
        bail!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let package = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "k8s-openapi")
        .context("k8s-openapi is not in the dependency graph")?;
    let manifest = package["manifest_path"]
        .as_str()
        .context("no manifest_path")?;
    let version = package["version"].as_str().unwrap_or("?").to_owned();
    let dir = Path::new(manifest)
        .parent()
        .context("manifest_path has no parent")?
        .join("src");
    Ok((dir, version))
}

/// Writes the tables from k8s-openapi's source.
fn table(args: &[String]) -> Result<()> {
    let versions: Vec<String> = match flag_value(args, "--versions")? {
        Some(list) => list.split(',').map(str::to_owned).collect(),
        None => DEFAULT_VERSIONS.iter().map(|v| v.to_string()).collect(),
    };
    let (src, crate_version) = k8s_openapi_source()?;
    for version in versions {
        let dir = src.join(format!("v1_{}", version.trim_start_matches("1.")));
        let table = table_from_k8s_openapi(&dir, &version, &crate_version)
            .with_context(|| format!("reading {}", dir.display()))?;
        let path = table_path(&version);
        table.save(&path)?;
        eprintln!(
            "codegen: {} ({} resources, {} skipped)",
            path.display(),
            table.supported().count(),
            table.skipped().count()
        );
    }
    Ok(())
}

/// Replaces the table of the server's version with its discovery.
fn refresh(args: &[String]) -> Result<()> {
    let kubeconfig = flag_value(args, "--kubeconfig")?
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("KUBECONFIG").map(PathBuf::from))
        .context("--kubeconfig <file> (or KUBECONFIG) is required")?;
    let mut options = kclient_rest::KubeconfigOptions {
        path: Some(kubeconfig.clone()),
        ..Default::default()
    };
    if let Some(context) = flag_value(args, "--context")? {
        options.context = Some(context.to_owned());
    }
    let config = kclient_rest::Config::from_kubeconfig(&options)
        .with_context(|| format!("loading {}", kubeconfig.display()))?;
    let discovered = fetch_discovery_blocking(config).context("reading discovery")?;
    let git_version = &discovered.git_version;
    let version = minor_version(git_version)
        .with_context(|| format!("cannot read the server version {git_version:?}"))?;
    if !discovered.left_out.is_empty() {
        eprintln!(
            "codegen: left out, not built in (CRDs, aggregated APIs): {}",
            discovered.left_out.join(", ")
        );
    }
    let mut table = table_from_discovery(
        &version,
        &format!("discovery of kube-apiserver {git_version}"),
        &discovered.lists,
    )?;
    let path = table_path(&version);
    let known = match ResourceTable::load(&path) {
        Ok(known) => known,
        Err(_) => {
            let (src, crate_version) = k8s_openapi_source()?;
            let dir = src.join(format!("v1_{}", version.trim_start_matches("1.")));
            table_from_k8s_openapi(&dir, &version, &crate_version)?
        }
    };
    table.adopt_rust_types(&known);
    let kept = table.keep_missing_from(&known);
    if kept > 0 {
        table.source = format!(
            "discovery of kube-apiserver {git_version}, with the {kept} entries it does not serve \
             (APIs it does not enable, non-resource kinds) kept from the previous table"
        );
    }
    table.save(&path)?;
    eprintln!(
        "codegen: {} from {git_version} ({} resources, {} skipped, {kept} not served by this \
         server kept from the previous table); now run `cargo xtask codegen`",
        path.display(),
        table.supported().count(),
        table.skipped().count()
    );
    Ok(())
}

/// Generates types and clients for CRDs.
fn crd(args: &[String]) -> Result<()> {
    let out = flag_value(args, "--out")?.context("--out <dir> is required")?;
    let check = args.iter().any(|a| a == "--check");
    let mut inputs = Vec::new();
    let mut skip_next = false;
    for arg in args {
        if skip_next {
            skip_next = false;
            continue;
        }
        match arg.as_str() {
            "--out" => skip_next = true,
            "--check" => {}
            path => {
                let yaml =
                    std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
                inputs.push((path.to_owned(), yaml));
            }
        }
    }
    if inputs.is_empty() {
        bail!("usage: cargo xtask codegen crd <crd.yaml>... --out <dir> [--check]");
    }
    let files = kclient_codegen::crd::generate_crds(&inputs, &CrdOptions::default())?.rustfmt()?;
    write_or_check(&files, Path::new(out), check, "cargo xtask codegen crd ...")
}
