//! `cargo xtask demo`: the main demo, `examples/demo.rs` of the facade crate — a controller on
//! kclient's reconcile runtime (a `Controller` in a `Manager`: informer factory, listers, an
//! index, typed writes, Events, leader election, probes, metrics), shown live while a
//! scripted scenario creates, scales, breaks (faults) and deletes objects, with a summary at
//! the end. It runs against kclient-fake started in-process, or against a cluster given by
//! `--kubeconfig <path>` or `KUBECONFIG`; `--plain` prints plain lines instead of the live
//! view.
//!
//! The demo is built first with cargo's own progress on the terminal (the first build
//! compiles kclient's crates, which takes minutes), then run in place of xtask (see
//! [`exec`]).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use anyhow::{bail, Context, Result};

use crate::{cargo, target_dir};

/// The facade's features the demo needs.
const FEATURES: &str = "fake,tools,controller";

pub(crate) fn run(args: &[String]) -> Result<()> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        eprintln!("usage: cargo xtask demo [--plain] [--kubeconfig <path>]   (default: KUBECONFIG, else kclient-fake)");
        return Ok(());
    }
    eprintln!(
        "xtask: building the demo, examples/demo.rs (kclient with the features {FEATURES}); \
         the first build compiles kclient's crates and their dependencies and takes a few minutes"
    );
    let status = cargo()
        .args([
            "build",
            "-p",
            "kclient",
            "--example",
            "demo",
            "--features",
            FEATURES,
        ])
        .status()
        .context("could not run cargo")?;
    if !status.success() {
        bail!(
            "the demo did not build: cargo {} (its messages above say why)",
            ended(status)
        );
    }
    let binary = demo_binary(&target_dir()?);
    let mut demo = Command::new(&binary);
    demo.args(args);
    exec(demo, &binary)
}

/// Where `cargo build --example demo` puts the demo.
fn demo_binary(target_dir: &Path) -> PathBuf {
    target_dir
        .join("debug")
        .join("examples")
        .join(format!("demo{}", std::env::consts::EXE_SUFFIX))
}

/// How a process ended, in words: "exited with code 101", "was killed by signal 9".
fn ended(status: ExitStatus) -> String {
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return format!("was killed by signal {signal}");
    }
    match status.code() {
        Some(code) => format!("exited with code {code}"),
        None => status.to_string(),
    }
}

/// Runs the demo in place of xtask: on Unix xtask `exec`s it, as `cargo run` does, so the
/// demo is the terminal's foreground process itself. Ctrl-C, SIGTERM and SIGHUP then reach
/// the demo, which stops its live view, cleans up its namespace and exits; the shell's
/// prompt comes back once it has. (Run as a child, xtask would die on Ctrl-C at once and give
/// the prompt back while the demo was still cleaning up and drawing.) Elsewhere xtask waits
/// for it.
#[cfg(unix)]
fn exec(mut demo: Command, binary: &Path) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let error = demo.exec();
    Err(error).with_context(|| format!("could not start the demo, {}", binary.display()))
}

/// See the Unix version.
#[cfg(not(unix))]
fn exec(mut demo: Command, binary: &Path) -> Result<()> {
    let status = demo
        .status()
        .with_context(|| format!("could not start the demo, {}", binary.display()))?;
    if !status.success() {
        bail!("the demo {} (its messages above say why)", ended(status));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_is_where_cargo_builds_examples() {
        let binary = demo_binary(Path::new("/t"));
        assert_eq!(
            binary,
            Path::new("/t/debug/examples").join(format!("demo{}", std::env::consts::EXE_SUFFIX))
        );
    }

    #[cfg(unix)]
    #[test]
    fn how_a_process_ended_is_said_in_words() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            ended(ExitStatus::from_raw(101 << 8)),
            "exited with code 101"
        );
        assert_eq!(ended(ExitStatus::from_raw(9)), "was killed by signal 9");
    }
}
