//! [`Error`]: why generation failed.

use std::path::PathBuf;

/// Why a table could not be read or code could not be generated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A JSON document (a resource table, a discovery document) could not be parsed.
    #[error("{what}: {source}")]
    Json {
        /// What was being parsed.
        what: String,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
    /// A YAML document (a CRD manifest) could not be parsed.
    #[error("{what}: {source}")]
    Yaml {
        /// What was being parsed.
        what: String,
        /// The parse error.
        #[source]
        source: serde_yaml_ng::Error,
    },
    /// The input is well-formed but cannot be generated from (a name collision, a missing
    /// field, a CRD without served versions ...).
    #[error("{0}")]
    Invalid(String),
    /// rustfmt could not be run or refused the generated code.
    #[error("rustfmt: {0}")]
    Rustfmt(String),
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
