//! Project automation for kclient, run as `cargo xtask <command>`.
//!
//! * `test` — everything CI checks: formatting, the layering of the crates (`layering`),
//!   clippy with `-D warnings`, the facade's feature combinations (`check-features`), every
//!   test of the workspace (unit, integration and doc tests), cargo-deny's licence, ban and source checks, and then the end-to-end
//!   suite against a real kube-apiserver (`e2e test`). It exits non-zero on the first
//!   failure.
//! * `codegen [--check] | table | refresh | crd | protobuf-refresh` — the generated typed
//!   Clientset, typed informers, CRD clients and protobuf codecs (see `codegen.rs`); `--check`
//!   fails when the checked-in code drifts.
//! * `e2e up | down | test | status | build | gomod | kubectl` — a real kube-apiserver,
//!   kube-controller-manager and etcd on 127.0.0.1, built from the Kubernetes Go module (see
//!   `docs/e2e.md`).
//! * `bench [--quick] [--real] [--smoke] [--only <id prefix>]` — kclient side by side with client-go and kube-rs on
//!   the same objects; writes `docs/benchmarks.md`'s generated section (see `bench/mod.rs`).
//! * `build-compare [--skip-dev]` — the same small operator built on kclient and on kube-rs,
//!   cold and after a one-line change, build times and stripped binary sizes side by side
//!   (see `build_compare.rs`).
//! * `fuzz [--cases N] [--seconds S] [--seed X] [SUITE...]` — the property tests and fuzz
//!   targets, run longer from new seeds (printed); what fails is recorded in the suites'
//!   committed regression files (see `fuzz.rs`).
//! * `soak [--minutes N] [--objects N]` — an informer factory and a controller on an embedded
//!   kclient-fake under churn and faults for N minutes (60), sampling memory, threads,
//!   descriptors and tasks (see `soak.rs`).
//! * `check-features` — the facade built with no layer and with each layer feature alone
//!   (see `check_features.rs`).
//! * `layering` — the crates' dependencies checked against the one allow-list of edges
//!   between them (see `layering.rs`); `test` runs it right after the format check.
//! * `publish-check` — `cargo package` of every published crate (in dependency order, offline),
//!   and the dependency lines of `README.md` and `docs/getting-started.md` resolved against
//!   this checkout with one Kubernetes version (see `publish.rs`); `test` runs it after the
//!   layering check.
//! * `demo` — the main job: `examples/demo.rs`, a controller on kclient's reconcile runtime,
//!   against kclient-fake or, with `--kubeconfig`/`KUBECONFIG`, a cluster; built with cargo's
//!   progress shown, then run in place of xtask (see `demo.rs`).

mod bench;
mod build_compare;
mod check_features;
mod codegen;
mod codegen_protobuf;
mod demo;
mod e2e;
mod fuzz;
mod layering;
mod module_circles;
mod public_names;
mod publish;
mod rust_source;
mod sizes;
mod soak;
mod test;

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{bail, Context, Result};

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test::run(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("build-compare") => build_compare::run(&args[1..]),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("soak") => soak::run(&args[1..]),
        Some("codegen") => codegen::run(&args[1..]),
        Some("e2e") => e2e::run(&args[1..]),
        Some("demo") => demo::run(&args[1..]),
        Some("check-features") => check_features::run(&args[1..]),
        Some("layering") => layering::run(&args[1..]),
        Some("public-names") => public_names::run(&args[1..]),
        Some("module-circles") => module_circles::run(&args[1..]),
        Some("sizes") => sizes::run(&args[1..]),
        Some("publish-check") => publish::run(&args[1..]),
        Some("help" | "-h" | "--help") | None => {
            print_help();
            Ok(())
        }
        Some(other) => {
            print_help();
            Err(anyhow::anyhow!("unknown xtask command {other:?}"))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn print_help() {
    eprintln!(
        "usage: cargo xtask <command>\n\n\
         commands:\n  \
           test    fmt check, layering, clippy -D warnings, all tests and doc tests, cargo-deny,\n          \
                   then the e2e suite against a real kube-apiserver\n  \
           codegen the typed Clientset [--check] | table | refresh --kubeconfig <file> |\n          \
                   crd <crd.yaml>... --out <dir> | protobuf-refresh (`cargo xtask codegen help`)\n  \
           e2e     a real kube-apiserver + etcd on 127.0.0.1: up | down | test | status |\n          \
                   build | gomod | kubectl (`cargo xtask e2e help`)\n  \
           bench   kclient vs client-go and kube-rs on kclient-fake [--quick], or on the\n          \
                   running e2e kube-apiserver [--real], some scenarios [--only <id>];\n          \
                   writes docs/benchmarks.md\n  \
           build-compare  the memcached operator built on kclient and on kube-rs: build\n          \
                   times and binary sizes side by side [--skip-dev]\n  \
           fuzz    the property tests and fuzz targets from new seeds, longer [--cases N]\n          \
                   [--seconds S] [--seed X] [SUITE...]; failures go to proptest-regressions/\n  \
           soak    an informer factory and a controller under churn and faults on the\n          \
                   embedded fake API server, memory, threads, descriptors and tasks sampled\n          \
                   [--minutes N] [--objects N]\n  \
           demo    run the main demo (against the embedded fake API server, or a cluster\n          \
                   when KUBECONFIG or --kubeconfig is given)\n  \
           check-features  build the facade with no layer and with each layer alone\n  \
           layering  check the crates' dependencies against the allow-list of edges\n  \
           public-names  no two public types of the facade's crates share a name\n  \
           module-circles  no crate has modules importing from each other in a circle of\n          \
                   more than three\n  \
           sizes   no hand-written library file over 1,000 lines, no function over 80\n  \
           publish-check  `cargo package` of every published crate, and the docs'\n          \
                   dependency lines resolved against this checkout\n"
    );
}

/// The workspace root (the parent of this crate's directory).
pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// `cargo metadata --no-deps` of this workspace, read as `T` (the fields the caller needs).
pub(crate) fn workspace_metadata<T: serde::de::DeserializeOwned>() -> Result<T> {
    let output = cargo()
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("could not run cargo metadata")?;
    if !output.status.success() {
        bail!("cargo metadata failed ({})", output.status);
    }
    serde_json::from_slice(&output.stdout).context("cannot read cargo metadata's output")
}

/// The part of `cargo metadata`'s output that names the target directory.
#[derive(serde::Deserialize)]
struct TargetDirectory {
    target_directory: PathBuf,
}

/// The directory cargo builds into, found the way cargo finds it (`CARGO_TARGET_DIR`,
/// `build.target-dir` in a config file, or `<workspace>/target`): `cargo metadata`'s
/// `target_directory`. Asked once per run.
pub(crate) fn target_dir() -> Result<PathBuf> {
    static TARGET_DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    if let Some(dir) = TARGET_DIR.get() {
        return Ok(dir.clone());
    }
    let TargetDirectory { target_directory } = workspace_metadata()?;
    Ok(TARGET_DIR.get_or_init(|| target_directory).clone())
}

/// `cargo` (the one running this xtask), run from the workspace root.
///
/// The variables `cargo run` set for this xtask's own package (`CARGO_PKG_NAME`,
/// `CARGO_MANIFEST_DIR`, ...) are removed: build scripts such as ring's rerun when they change,
/// so a nested cargo that saw them would rebuild those crates, and the next cargo run from a
/// shell would rebuild them again.
pub(crate) fn cargo() -> Command {
    let mut cmd = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(workspace_root());
    for (name, _) in env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        if name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_MANIFEST_")
            || matches!(
                name,
                "CARGO_CRATE_NAME" | "CARGO_BIN_NAME" | "CARGO_PRIMARY_PACKAGE"
            )
        {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// Runs one step, printing its name and duration; fails if the command fails.
pub(crate) fn step(name: &str, mut cmd: Command) -> Result<()> {
    eprintln!("==> {name}");
    let started = Instant::now();
    let status = cmd
        .status()
        .with_context(|| format!("could not start {cmd:?}"))?;
    eprintln!(
        "<== {name}: {} in {:.1}s",
        if status.success() { "ok" } else { "FAILED" },
        started.elapsed().as_secs_f64()
    );
    if !status.success() {
        bail!("step {name:?} failed ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_directory_is_read_from_cargo_metadata() {
        let read = |json: &[u8]| serde_json::from_slice::<TargetDirectory>(json);
        let json = br#"{"packages":[],"target_directory":"/elsewhere/target","version":1}"#;
        assert_eq!(
            read(json).unwrap().target_directory,
            PathBuf::from("/elsewhere/target")
        );
        assert!(read(b"{}").is_err());
    }
}
