//! Project automation for kclient, run as `cargo xtask <command>`.
//!
//! * `test` — everything CI checks: formatting, clippy with `-D warnings`, every test of the
//!   workspace (unit, integration and doc tests) and cargo-deny's licence, ban and source
//!   checks. It exits non-zero on the first failure.
//! * `demo` — the main job: a demo of the informer stack (available once the examples issue
//!   lands; until then it says so and exits non-zero).

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{bail, Context, Result};

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("demo") => demo(&args[1..]),
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
           test    fmt check, clippy -D warnings, all tests and doc tests, cargo-deny\n  \
           demo    run the main demo (against the embedded fake API server, or a cluster\n          \
                   when KUBECONFIG or --kubeconfig is given)\n"
    );
}

/// The workspace root (the parent of this crate's directory).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

fn cargo() -> Command {
    let mut cmd = Command::new(env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(workspace_root());
    cmd
}

/// Runs one step, printing its name and duration; fails if the command fails.
fn step(name: &str, mut cmd: Command) -> Result<()> {
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

/// Optional features switched on for checks and tests, so that feature-gated code is built
/// and tested too. (`--all-features` cannot be used: the facade's Kubernetes-version features
/// are mutually exclusive.)
const TEST_FEATURES: &str = "kclient-workqueue/prometheus";

fn test(args: &[String]) -> Result<()> {
    if let Some(unknown) = args.first() {
        bail!("`cargo xtask test` takes no arguments (got {unknown:?})");
    }
    let started = Instant::now();

    let mut fmt = cargo();
    fmt.args(["fmt", "--all", "--check"]);
    step("cargo fmt --check", fmt)?;

    let mut clippy = cargo();
    clippy.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--features",
        TEST_FEATURES,
    ]);
    clippy.args(["--", "-D", "warnings"]);
    step("cargo clippy -D warnings", clippy)?;

    // Unit, integration and example/bench targets compile and run; then the doc tests.
    let mut tests = cargo();
    tests.args([
        "test",
        "--workspace",
        "--all-targets",
        "--features",
        TEST_FEATURES,
    ]);
    step("cargo test (all targets)", tests)?;

    let mut doc_tests = cargo();
    doc_tests.args(["test", "--workspace", "--doc", "--features", TEST_FEATURES]);
    step("cargo test --doc", doc_tests)?;

    let mut docs = cargo();
    docs.args([
        "doc",
        "--workspace",
        "--no-deps",
        "--features",
        TEST_FEATURES,
    ]);
    docs.env("RUSTDOCFLAGS", "-D warnings");
    step("cargo doc (warnings are errors)", docs)?;

    ensure_cargo_deny()?;
    let mut deny = cargo();
    deny.args([
        "deny",
        "--all-features",
        "check",
        "licenses",
        "bans",
        "sources",
    ]);
    step("cargo deny check licenses bans sources", deny)?;

    eprintln!(
        "xtask test: all steps passed in {:.0}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Installs cargo-deny (from crates.io, pinned) when it is missing.
fn ensure_cargo_deny() -> Result<()> {
    let present = cargo()
        .args(["deny", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if present {
        return Ok(());
    }
    let mut install = cargo();
    install.args([
        "install",
        "cargo-deny",
        "--locked",
        "--version",
        CARGO_DENY_VERSION,
    ]);
    step("cargo install cargo-deny", install)
}

/// The cargo-deny release the checks are written for.
const CARGO_DENY_VERSION: &str = "0.20.2";

fn demo(_args: &[String]) -> Result<()> {
    bail!(
        "the demo arrives with the examples issue (an informer-driven controller against the \
         embedded fake API server, or a real cluster via KUBECONFIG); nothing to run yet"
    )
}
