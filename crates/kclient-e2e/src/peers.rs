//! Other clients the scenarios run as programs of their own: kube-rs (`e2e/peers/kube-rs`, a
//! Cargo project outside the workspace with its own `Cargo.lock`, so that kube's dependency
//! tree stays out of kclient's).
//!
//! The program is built the first time a scenario asks for it in a test process, by the
//! cargo running the tests, in the dev profile, into the workspace's target directory (the
//! crates both projects build alike are built once; the rest takes under a minute the first
//! time, then nothing). `KCLIENT_E2E_SKIP_KUBE_RS=1` skips the
//! scenarios that need it, saying so; nothing else does.

use std::env;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use tokio::process::Command;
use tokio::sync::OnceCell;

/// Set (to anything but `0`) to skip the scenarios that run kube-rs, e.g. on a machine
/// without access to crates.io. `cargo xtask test` (CI) never sets it.
pub const SKIP_KUBE_RS_ENV: &str = "KCLIENT_E2E_SKIP_KUBE_RS";

/// The kube-rs program, built on first use; `None` when [`SKIP_KUBE_RS_ENV`] says to skip
/// (printed once).
pub async fn kube_rs() -> Result<Option<PathBuf>> {
    static PROGRAM: OnceCell<Result<Option<PathBuf>, String>> = OnceCell::const_new();
    PROGRAM
        .get_or_init(|| async { build_kube_rs().await.map_err(|e| format!("{e:#}")) })
        .await
        .clone()
        .map_err(anyhow::Error::msg)
}

async fn build_kube_rs() -> Result<Option<PathBuf>> {
    if env::var_os(SKIP_KUBE_RS_ENV).is_some_and(|v| !v.is_empty() && v != "0") {
        eprintln!(
            "kclient-e2e: SKIPPED the kube-rs scenarios: {SKIP_KUBE_RS_ENV} is set (unset it \
             to build e2e/peers/kube-rs and run them)"
        );
        return Ok(None);
    }
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .ancestors()
        .nth(2)
        .context("kclient-e2e is not two levels under the workspace root")?;
    let manifest = root.join("e2e/peers/kube-rs/Cargo.toml");
    let target_dir = target_dir(root).await?;
    eprintln!(
        "kclient-e2e: building the kube-rs peer ({}) into {}",
        manifest.display(),
        target_dir.display()
    );
    let mut build = cargo();
    build
        .args(["build", "--locked", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target_dir);
    run(build, "building the kube-rs peer").await?;
    let program = target_dir
        .join("debug")
        .join(format!("kube-rs-e2e{}", env::consts::EXE_SUFFIX));
    Ok(Some(program))
}

/// The cargo running the tests (`CARGO`), else the one on `PATH`, without the variables
/// cargo sets for the test process (`CARGO_PKG_NAME`, `CARGO_MANIFEST_DIR`, `OUT_DIR`, ...):
/// build scripts that watch them (ring's) would otherwise build again, and everything above
/// them, each time the program is built from a test instead of a shell.
fn cargo() -> Command {
    let mut command = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for (name, _) in env::vars_os() {
        let set_for_tests = name.to_str().is_some_and(|n| {
            n.starts_with("CARGO_PKG_")
                || matches!(
                    n,
                    "CARGO_MANIFEST_DIR"
                        | "CARGO_MANIFEST_PATH"
                        | "CARGO_MANIFEST_LINKS"
                        | "CARGO_CRATE_NAME"
                        | "CARGO_BIN_NAME"
                        | "CARGO_PRIMARY_PACKAGE"
                        | "CARGO_TARGET_TMPDIR"
                        | "CARGO_RUSTC_CURRENT_DIR"
                        | "OUT_DIR"
                )
        });
        if set_for_tests {
            command.env_remove(name);
        }
    }
    command
}

/// The workspace's target directory, as cargo finds it (`CARGO_TARGET_DIR`,
/// `build.target-dir`, or `target/`).
async fn target_dir(root: &Path) -> Result<PathBuf> {
    let mut metadata = cargo();
    metadata
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(root.join("Cargo.toml"));
    let output = run(metadata, "cargo metadata").await?;
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("cargo metadata printed no JSON")?;
    metadata["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .context("cargo metadata names no target directory")
}

/// Runs `command` to its end; its output, or an error naming `what` with its stderr.
async fn run(mut command: Command, what: &str) -> Result<std::process::Output> {
    let output = command
        .output()
        .await
        .with_context(|| format!("{what}: could not run cargo"))?;
    if !output.status.success() {
        bail!(
            "{what} failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(output)
}
