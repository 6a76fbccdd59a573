//! [`ConfigError`]: why a [`Config`](super::Config) is unusable.

use std::path::PathBuf;

use crate::error::Error;

/// Why a [`Config`](super::Config) is unusable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The host is not a URL or `host:port`.
    #[error("invalid host {host:?}: {reason}")]
    InvalidHost {
        /// The host given, without a password in it (shown as Go's `url.URL.Redacted`
        /// shows it: `user:xxxxx@`).
        host: String,
        /// What is wrong.
        reason: String,
    },
    /// Not running in a pod: the service environment variables are missing.
    #[error("unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined")]
    NotInCluster,
    /// A file the configuration needs could not be read.
    #[error("cannot read {what} {path}: {source}")]
    ReadFile {
        /// What the file is.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The proxy URL is unusable.
    #[error("invalid proxy URL {url:?}: {reason}")]
    InvalidProxy {
        /// The URL, without its password (shown as Go's `url.URL.Redacted` shows it:
        /// `user:xxxxx@`).
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// Options that cannot be combined, or a value out of range.
    #[error("{0}")]
    Invalid(String),
    /// Neither a kubeconfig nor the in-cluster configuration could be used.
    #[error("no usable configuration: kubeconfig: {kubeconfig}; in-cluster: {in_cluster}")]
    Infer {
        /// Why the kubeconfig could not be used.
        #[source]
        kubeconfig: Box<Error>,
        /// Why the in-cluster configuration could not be used.
        in_cluster: Box<Error>,
    },
}
