//! `cargo xtask codegen` for kclient-protobuf's codecs (issue 26).
//!
//! * `codegen [--check]` also generates (or checks) `crates/kclient-protobuf/src/generated/v1_NN/`
//!   from the checked-in inputs `crates/kclient-codegen/data/protobuf-v1.NN.json` and
//!   k8s-openapi's source (no network).
//! * `codegen protobuf-refresh [--versions 1.35,1.36,1.37]` rewrites those inputs: for each
//!   version in `data/protobuf-sources.json` it fetches `k8s.io/api`, `k8s.io/apimachinery`,
//!   `k8s.io/apiextensions-apiserver` and `k8s.io/kube-aggregator` through the Go module proxy
//!   (`go mod download -json`, as the e2e build fetches Go modules), checks their hashes
//!   against the previous input, and distills the `generated.proto` files and Go struct tags.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use kclient_codegen::protobuf::{self, ModuleDir, ModuleSource, ProtobufInput};
use serde::Deserialize;

use crate::workspace_root;

fn data_dir() -> PathBuf {
    workspace_root().join("crates/kclient-codegen/data")
}

/// Where the generated codecs live.
fn generated_dir() -> PathBuf {
    workspace_root().join("crates/kclient-protobuf/src/generated")
}

/// Where the generated test schemas live.
fn tests_dir() -> PathBuf {
    workspace_root().join("crates/kclient-protobuf/tests/generated")
}

fn input_path(version: &str) -> PathBuf {
    data_dir().join(format!("protobuf-v{version}.json"))
}

/// Kubernetes version → Go module version (`data/protobuf-sources.json`).
fn sources() -> Result<BTreeMap<String, String>> {
    let path = data_dir().join("protobuf-sources.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

fn version_dir(src: &Path, version: &str) -> PathBuf {
    src.join(format!("v1_{}", version.trim_start_matches("1.")))
}

/// Generates (or checks) the codecs and their test schemas.
pub(crate) fn codecs(check: bool) -> Result<()> {
    let (codecs, tests) = generate()?;
    crate::codegen::write_or_check(&codecs, &generated_dir(), check, "cargo xtask codegen")?;
    crate::codegen::write_or_check(&tests, &tests_dir(), check, "cargo xtask codegen")
}

/// The codecs and test schemas of every version with a checked-in input, formatted.
fn generate() -> Result<(
    kclient_codegen::GeneratedFiles,
    kclient_codegen::GeneratedFiles,
)> {
    let (src, _) = crate::codegen::k8s_openapi_source()?;
    let mut inputs = Vec::new();
    for version in sources()?.keys() {
        let path = input_path(version);
        let input =
            ProtobufInput::load(&path).with_context(|| format!("loading {}", path.display()))?;
        let definitions = protobuf::read_definitions(&version_dir(&src, version))?;
        inputs.push((input, definitions));
    }
    let (codecs, tests) = protobuf::generate(&inputs)?;
    Ok((codecs.rustfmt()?, tests.rustfmt()?))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Download {
    path: String,
    version: String,
    dir: Option<String>,
    sum: Option<String>,
    error: Option<String>,
}

/// `go mod download -json` of the four modules at `module_version`.
fn download(module_version: &str) -> Result<Vec<ModuleDir>> {
    let scratch = std::env::temp_dir();
    let mut cmd = crate::e2e::build::go_command(&scratch)?;
    cmd.args(["mod", "download", "-json"]);
    for module in protobuf::MODULES {
        cmd.arg(format!("{module}@{module_version}"));
    }
    // Outside any module, so that no go.mod constrains the look-up.
    cmd.env("GOFLAGS", "-mod=mod").env("GO111MODULE", "on");
    let output = cmd.output().context("could not run `go mod download`")?;
    let mut modules = Vec::new();
    for item in serde_json::Deserializer::from_slice(&output.stdout).into_iter::<Download>() {
        let item = item.context("reading `go mod download -json`")?;
        if let Some(error) = item.error {
            bail!("{}@{}: {error}", item.path, item.version);
        }
        let (Some(dir), Some(sum)) = (item.dir, item.sum) else {
            bail!(
                "{}@{}: no Dir or Sum in `go mod download -json`",
                item.path,
                item.version
            );
        };
        modules.push(ModuleDir {
            path: item.path,
            source: ModuleSource {
                version: item.version,
                sum,
            },
            dir: PathBuf::from(dir),
        });
    }
    if !output.status.success() || modules.len() != protobuf::MODULES.len() {
        bail!(
            "`go mod download` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    modules.sort_by_key(|m| protobuf::MODULES.iter().position(|p| *p == m.path));
    Ok(modules)
}

/// `codegen protobuf-refresh [--versions …]`.
pub(crate) fn refresh(args: &[String]) -> Result<()> {
    let all = sources()?;
    let versions: Vec<String> = match crate::codegen::flag_value(args, "--versions")? {
        Some(list) => list.split(',').map(str::to_owned).collect(),
        None => all.keys().cloned().collect(),
    };
    let (src, _) = crate::codegen::k8s_openapi_source()?;
    for version in versions {
        let module_version = all
            .get(&version)
            .with_context(|| format!("{version} is not in data/protobuf-sources.json"))?;
        let modules = download(module_version)?;
        let path = input_path(&version);
        if let Ok(previous) = ProtobufInput::load(&path) {
            for m in &modules {
                if let Some(old) = previous.modules.get(&m.path) {
                    if old.version == m.source.version && old.sum != m.source.sum {
                        bail!(
                            "{}@{}: hash {} differs from the {} recorded in {}",
                            m.path,
                            m.source.version,
                            m.source.sum,
                            old.sum,
                            path.display()
                        );
                    }
                }
            }
        }
        let definitions = protobuf::read_definitions(&version_dir(&src, &version))?;
        let input = protobuf::distill(&version, &modules, &definitions)?;
        input.save(&path)?;
        eprintln!(
            "codegen: {} ({} messages from {})",
            path.display(),
            input.messages.len(),
            modules
                .iter()
                .map(|m| format!("{}@{}", m.path, m.source.version))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    eprintln!("now run `cargo xtask codegen`");
    Ok(())
}
