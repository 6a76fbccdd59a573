//! Where the e2e machinery keeps things: all of it outside the repository, under one cache
//! root (`$KCLIENT_E2E_CACHE`, else `$XDG_CACHE_HOME/kclient/e2e`, else
//! `~/.cache/kclient/e2e`: kclient-envtest's rules, which find the binaries there); the run
//! directory can be moved on its own with `$KCLIENT_E2E_RUN_DIR`.
//!
//! ```text
//! <root>/<kubernetes version>/bin/   etcd, kube-apiserver, kube-controller-manager, kubectl
//! <root>/go-build/                   Go's build cache (unless GOCACHE is set)
//! <root>/run/                        the running cluster: state.json, pki/, etcd data, logs,
//!                                    kubeconfig
//! ```

use std::env;
use std::path::PathBuf;

use anyhow::{bail, Result};
use kclient_envtest::binaries;

use crate::workspace_root;

/// The cache root.
pub(crate) fn cache_root() -> Result<PathBuf> {
    match binaries::kclient_cache_root() {
        Some(root) => Ok(root),
        None => bail!(
            "neither {}, XDG_CACHE_HOME nor HOME is set: nowhere to cache",
            binaries::KCLIENT_CACHE_ENV
        ),
    }
}

/// The directory holding the binaries built for one Kubernetes version.
pub(crate) fn bin_dir(kubernetes_version: &str) -> Result<PathBuf> {
    Ok(binaries::kclient_cache_bin_dir(
        &cache_root()?,
        kubernetes_version,
    ))
}

/// Go's build cache, used unless the caller's environment sets GOCACHE.
pub(crate) fn go_build_cache() -> Result<PathBuf> {
    Ok(cache_root()?.join("go-build"))
}

/// Overrides the running cluster's state directory (for example to run two clusters from two
/// work trees on one machine).
const RUN_DIR_ENV: &str = "KCLIENT_E2E_RUN_DIR";

/// The running cluster's state directory.
pub(crate) fn run_dir() -> Result<PathBuf> {
    match env::var_os(RUN_DIR_ENV).filter(|v| !v.is_empty()) {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => Ok(cache_root()?.join("run")),
    }
}

/// Our Go module (`e2e/` at the repository root).
pub(crate) fn go_module_dir() -> PathBuf {
    workspace_root().join("e2e")
}
