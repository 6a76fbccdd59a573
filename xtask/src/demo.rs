//! `cargo xtask demo`: the main demo, `examples/demo.rs` of the facade crate — a controller
//! built from kclient's layers (informer factory, listers, a custom index, a rate-limited
//! workqueue with workers, typed writes, Events, leader election), shown live while a
//! scripted scenario creates, scales, breaks (faults) and deletes objects, with a summary at
//! the end. It runs against kclient-fake started in-process, or against a cluster given by
//! `--kubeconfig <path>` or `KUBECONFIG`; `--plain` prints plain lines instead of the live
//! view.

use anyhow::{bail, Context, Result};

use crate::cargo;

pub(crate) fn run(args: &[String]) -> Result<()> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        eprintln!("usage: cargo xtask demo [--plain] [--kubeconfig <path>]   (default: KUBECONFIG, else kclient-fake)");
        return Ok(());
    }
    let status = cargo()
        .args([
            "run",
            "--quiet",
            "-p",
            "kclient",
            "--example",
            "demo",
            "--features",
            "fake,tools",
            "--",
        ])
        .args(args)
        .status()
        .context("could not run cargo")?;
    if !status.success() {
        bail!("the demo failed ({status})");
    }
    Ok(())
}
