//! [`KubeconfigError`]: why a kubeconfig could not be read, merged or used.

use std::path::{Path, PathBuf};

/// Why a kubeconfig could not be loaded or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KubeconfigError {
    /// A kubeconfig file could not be read.
    #[error("cannot read kubeconfig {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A kubeconfig is not valid YAML, or does not have the kubeconfig shape. The message
    /// is the parser's with every quoted value taken out: a kubeconfig holds tokens and
    /// passwords, and a value in the wrong place (`user: <token>`) would otherwise be quoted.
    #[error("cannot parse kubeconfig{}: {message}", path_suffix(.path.as_deref()))]
    Parse {
        /// The file, when the kubeconfig came from one.
        path: Option<PathBuf>,
        /// What is wrong and where (line and column), without the values.
        message: String,
    },
    /// A kubeconfig could not be written as YAML.
    #[error("cannot serialize kubeconfig: {0}")]
    Serialize(#[source] serde_yaml_ng::Error),
    /// The explicitly named kubeconfig file does not exist.
    #[error("kubeconfig {0} does not exist")]
    ExplicitFileMissing(PathBuf),
    /// No kubeconfig was found, or it names no cluster (client-go's `ErrEmptyConfig`).
    #[error("invalid configuration: no configuration has been provided{}", missing_suffix(.missing))]
    Empty {
        /// The files that were looked for and not found.
        missing: Vec<PathBuf>,
    },
    /// The chosen context does not exist.
    #[error("context {0:?} does not exist")]
    ContextNotFound(String),
    /// The chosen cluster does not exist.
    #[error("cluster {0:?} does not exist")]
    ClusterNotFound(String),
    /// The chosen user does not exist.
    #[error("user {0:?} does not exist")]
    UserNotFound(String),
    /// A `*-data` field is not valid base64.
    #[error("{field} of {name:?} is not valid base64: {source}")]
    InvalidBase64 {
        /// The field.
        field: &'static str,
        /// The cluster or user it belongs to.
        name: String,
        /// The decoding error.
        #[source]
        source: base64::DecodeError,
    },
    /// A file the kubeconfig refers to (token file, certificate) could not be read.
    #[error("cannot read {what} {path} named by the kubeconfig: {source}")]
    ReferencedFile {
        /// What the file is (`tokenFile`, ...).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The selected context, cluster and user do not make a usable configuration (client-go's
    /// `ConfirmUsable`); every problem found is listed.
    #[error("invalid configuration: {}", .0.join("; "))]
    Invalid(Vec<String>),
}

fn path_suffix(path: Option<&Path>) -> String {
    path.map(|p| format!(" {}", p.display()))
        .unwrap_or_default()
}

fn missing_suffix(missing: &[PathBuf]) -> String {
    if missing.is_empty() {
        String::new()
    } else {
        let list: Vec<_> = missing.iter().map(|p| p.display().to_string()).collect();
        format!(" (not found: {})", list.join(", "))
    }
}
