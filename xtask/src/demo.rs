//! `cargo xtask demo`: the main demo, `examples/demo.rs` of the facade crate — a small
//! controller (an informer from the factory feeding a rate-limited workqueue, a worker
//! reconciling keys from the lister) driven by typed writes, with discovery, the RestMapper
//! and the dynamic client around it. It runs against kclient-fake started in-process, or
//! against a cluster given by `--kubeconfig <path>` or `KUBECONFIG`.

use anyhow::{bail, Context, Result};

use crate::cargo;

pub(crate) fn run(args: &[String]) -> Result<()> {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        eprintln!("usage: cargo xtask demo [--kubeconfig <path>]   (default: KUBECONFIG, else kclient-fake)");
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
            "fake",
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
