//! [`TlsConfig`]: which CAs a client trusts and which certificate it presents.

use std::fmt;
use std::path::PathBuf;

/// TLS settings: which CAs to trust, which client certificate to present.
///
/// Inline data takes precedence over the corresponding file.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct TlsConfig {
    /// A PEM file of CA certificates to trust instead of the system's.
    pub ca_file: Option<PathBuf>,
    /// PEM CA certificates to trust instead of the system's.
    pub ca_data: Option<Vec<u8>>,
    /// A PEM client certificate (chain) file. With `key_file` (and no inline data) the pair
    /// rotates: both are read again every
    /// [`CERT_CALLBACK_REFRESH_DURATION`](crate::CERT_CALLBACK_REFRESH_DURATION), and a
    /// changed pair closes the pool's connections so that every request moves to it
    /// (client-go's `transport/cert_rotation`).
    pub cert_file: Option<PathBuf>,
    /// A PEM client certificate (chain).
    pub cert_data: Option<Vec<u8>>,
    /// A PEM private key file for the client certificate.
    pub key_file: Option<PathBuf>,
    /// A PEM private key for the client certificate.
    pub key_data: Option<Vec<u8>>,
    /// The name to verify the server's certificate against, and to send as SNI, instead of the
    /// host of [`Config::host`](super::Config::host).
    pub server_name: Option<String>,
    /// Do not verify the server's certificate. Insecure: for tests only.
    pub insecure: bool,
}

impl TlsConfig {
    /// Whether a CA is configured.
    pub fn has_ca(&self) -> bool {
        self.ca_data.is_some() || self.ca_file.is_some()
    }

    /// Whether a client certificate is configured.
    pub fn has_cert(&self) -> bool {
        self.cert_data.is_some() || self.cert_file.is_some()
    }
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = |d: &Option<Vec<u8>>| d.as_ref().map(|d| format!("<{} bytes>", d.len()));
        f.debug_struct("TlsConfig")
            .field("ca_file", &self.ca_file)
            .field("ca_data", &bytes(&self.ca_data))
            .field("cert_file", &self.cert_file)
            .field("cert_data", &bytes(&self.cert_data))
            .field("key_file", &self.key_file)
            .field("key_data", &self.key_data.as_ref().map(|_| "<redacted>"))
            .field("server_name", &self.server_name)
            .field("insecure", &self.insecure)
            .finish()
    }
}
