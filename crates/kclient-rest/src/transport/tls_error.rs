//! [`TlsError`]: why a TLS configuration is unusable or a handshake failed.

use std::path::PathBuf;

/// A TLS failure: unusable CA or client-certificate settings, or a failed handshake.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A certificate or key file could not be read.
    #[error("cannot read {what} {path}: {source}")]
    ReadFile {
        /// What the file is (`CA file`, `client certificate file`, `client key file`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// PEM data that holds no certificate.
    #[error("{what} holds no PEM certificate")]
    NoCertificates {
        /// Which data (`CA`, `client certificate`).
        what: &'static str,
    },
    /// PEM data that holds no usable private key.
    #[error("the client key holds no PEM private key: {reason}")]
    NoPrivateKey {
        /// What was wrong.
        reason: String,
    },
    /// rustls rejected a certificate, a key or the combination.
    #[error("invalid {what}: {source}")]
    Invalid {
        /// What was rejected.
        what: &'static str,
        /// rustls' reason.
        #[source]
        source: rustls::Error,
    },
    /// The configured server name is not a DNS name or IP address.
    #[error("invalid TLS server name {0:?}")]
    InvalidServerName(String),
    /// The TLS handshake with the server failed (an unknown CA, a certificate for another name,
    /// an expired certificate, a rejected client certificate ...).
    #[error("TLS handshake with {url} failed: {source}")]
    Handshake {
        /// The URL of the request, without a password in it (as Go's `url.URL.Redacted`
        /// shows it).
        url: String,
        /// rustls' reason.
        #[source]
        source: rustls::Error,
    },
}
