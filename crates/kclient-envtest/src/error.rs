//! Why an environment did not start or stop: one typed error, each variant saying what to do.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Why an environment did not start, or did not stop cleanly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No directory of binaries was given, `KUBEBUILDER_ASSETS` is unset and kclient's build
    /// cache has none.
    #[error(
        "no etcd and kube-apiserver binaries were found ({searched}): set KUBEBUILDER_ASSETS to \
         a directory holding etcd, kube-apiserver and kubectl (`setup-envtest use -p path` \
         prints one), give one with `EnvironmentBuilder::binary_assets_directory`, or build \
         kclient's with `cargo xtask e2e build` in a kclient checkout"
    )]
    BinariesNotFound {
        /// Where they were looked for.
        searched: String,
    },
    /// The directory of binaries lacks one the environment needs.
    #[error("{binary} is not in {directory} (from {origin}): {help}")]
    BinaryMissing {
        /// The binary's file name.
        binary: String,
        /// The directory.
        directory: PathBuf,
        /// Where the directory came from.
        origin: String,
        /// What to do.
        help: String,
    },
    /// The kube-apiserver reports another version than the one asked for.
    #[error(
        "{binary} reports Kubernetes {found}, not the {expected} asked for: point \
         KUBEBUILDER_ASSETS (or `binary_assets_directory`) at binaries of {expected} \
         (`setup-envtest use {expected} -p path`), or ask for {found}"
    )]
    VersionMismatch {
        /// The binary asked.
        binary: PathBuf,
        /// The version asked for.
        expected: String,
        /// The version it reports.
        found: String,
    },
    /// Asking the kube-apiserver for its version failed.
    #[error(
        "could not read the version of {binary} ({reason}): is it a kube-apiserver binary \
         for this machine?"
    )]
    Version {
        /// The binary asked.
        binary: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The port asked for the kube-apiserver is taken.
    #[error(
        "port {port} on 127.0.0.1 is in use: give another `apiserver_port`, or none (a free \
         port is chosen)"
    )]
    PortInUse {
        /// The port.
        port: u16,
    },
    /// A file or directory of the environment could not be made, read or removed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The certificates could not be generated.
    #[error("could not generate the certificates: {0}")]
    Certificates(#[from] rcgen::Error),
    /// A server could not be started.
    #[error("could not start {component} ({path}): {source}")]
    Spawn {
        /// etcd, kube-apiserver, kube-controller-manager or the watchdog.
        component: String,
        /// The program.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A server exited while the environment started.
    #[error("{component} exited while starting; the end of {log}:\n{log_tail}")]
    Exited {
        /// The server.
        component: String,
        /// Its log file (removed with a temporary directory).
        log: PathBuf,
        /// The log's last lines.
        log_tail: String,
    },
    /// A server did not become ready in time.
    #[error(
        "{component} was not ready within {timeout:?} (last probe: {last_probe}); on a slow \
         machine raise `EnvironmentBuilder::start_timeout`; the end of {log}:\n{log_tail}"
    )]
    NotReady {
        /// The server.
        component: String,
        /// The time it was given.
        timeout: Duration,
        /// What the last readiness probe saw.
        last_probe: String,
        /// Its log file (removed with a temporary directory).
        log: PathBuf,
        /// The log's last lines.
        log_tail: String,
    },
    /// A server still ran after SIGTERM, the grace period and SIGKILL.
    #[error("{component} (pid {pid}) is still running after SIGKILL")]
    StillRunning {
        /// The server.
        component: String,
        /// Its process id.
        pid: u32,
    },
    /// The admin client could not be built from the environment's kubeconfig.
    #[error("the admin client: {0}")]
    Client(#[from] kclient_rest::Error),
    /// A CRD was refused or not served in time.
    #[cfg(feature = "clientset")]
    #[error("installing the CRDs: {0}")]
    InstallCrds(#[from] kclient_tools::crd::InstallCrdError),
    /// A webhook configuration was refused.
    #[cfg(feature = "clientset")]
    #[error("installing the webhook configuration {name}: {source}")]
    InstallWebhook {
        /// The configuration's name.
        name: String,
        /// The server's answer.
        #[source]
        source: kclient_typed::Error,
    },
    /// The process-wide environment of [`Environment::shared`](crate::Environment::shared)
    /// failed to start (once; every caller gets this error).
    #[error("the shared environment did not start: {0}")]
    Shared(Arc<Error>),
}

impl Error {
    /// An [`Error::Io`] for `what`.
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let what = what.into();
        move |source| Error::Io { what, source }
    }
}
