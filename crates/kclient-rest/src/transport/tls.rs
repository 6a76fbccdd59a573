//! TLS with rustls and the `ring` provider: trusted CAs, client certificates, server-name
//! override and the insecure mode, plus [`TlsError`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::cert_rotation::{CertFiles, DynamicClientCert};
use crate::config::TlsConfig;

pub use super::tls_error::TlsError;

/// The TLS inputs, read from files where needed: what a connection pool is keyed by.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct TlsMaterial {
    pub(crate) ca_pem: Option<Vec<u8>>,
    /// Where `ca_pem` was read from, when it came from a file and nothing else: the CAs
    /// rotate ([`ca_rotation`](super::ca_rotation)).
    pub(crate) ca_file: Option<PathBuf>,
    pub(crate) cert_pem: Option<Vec<u8>>,
    pub(crate) key_pem: Option<Vec<u8>>,
    /// Where `cert_pem` and `key_pem` were read from, when both came from files: the pair
    /// rotates ([`cert_rotation`](super::cert_rotation)).
    pub(crate) cert_files: Option<CertFiles>,
    pub(crate) server_name: Option<String>,
    pub(crate) insecure: bool,
}

pub(crate) fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::ReadFile {
        what,
        path: path.to_path_buf(),
        source,
    })
}

impl TlsMaterial {
    /// Reads the files of `tls` (inline data wins over files).
    pub(crate) fn load(tls: &TlsConfig) -> Result<Self, TlsError> {
        let pick = |data: &Option<Vec<u8>>, file: &Option<PathBuf>, what| -> Result<_, TlsError> {
            match (data, file) {
                (Some(d), _) => Ok(Some(d.clone())),
                (None, Some(f)) => read(what, f).map(Some),
                (None, None) => Ok(None),
            }
        };
        Ok(Self {
            ca_pem: pick(&tls.ca_data, &tls.ca_file, "CA file")?,
            ca_file: tls.ca_file.clone().filter(|_| tls.ca_data.is_none()),
            cert_pem: pick(&tls.cert_data, &tls.cert_file, "client certificate file")?,
            key_pem: pick(&tls.key_data, &tls.key_file, "client key file")?,
            cert_files: cert_files(tls),
            server_name: tls.server_name.clone().filter(|s| !s.is_empty()),
            insecure: tls.insecure,
        })
    }

    /// The server name to verify and send as SNI, when overridden.
    pub(crate) fn server_name(&self) -> Result<Option<ServerName<'static>>, TlsError> {
        self.server_name
            .as_ref()
            .map(|name| {
                ServerName::try_from(name.clone())
                    .map_err(|_| TlsError::InvalidServerName(name.clone()))
            })
            .transpose()
    }

    /// A rustls client configuration (without ALPN: the connector sets the protocols). The
    /// client certificate is `rotating`'s when given, else the fixed pair of `self`.
    pub(crate) fn client_config(
        &self,
        rotating: Option<Arc<DynamicClientCert>>,
    ) -> Result<ClientConfig, TlsError> {
        let provider = provider();
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|source| TlsError::Invalid {
                what: "TLS protocol versions",
                source,
            })?;
        let builder = if self.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(InsecureVerifier(provider.clone())))
        } else {
            builder.with_root_certificates(self.root_store()?)
        };
        let config = match (&self.cert_pem, &self.key_pem, rotating) {
            (_, _, Some(rotating)) => {
                let mut config = builder.with_client_cert_resolver(rotating);
                // A resumed TLS session keeps the identity it was made with: after a
                // rotation the server would still see the old certificate. (client-go's
                // transport resumes no sessions at all.)
                config.resumption = rustls::client::Resumption::disabled();
                config
            }
            (Some(cert), Some(key), None) => {
                let (chain, key) = parse_client_identity(cert, key)?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|source| TlsError::Invalid {
                        what: "client certificate and key",
                        source,
                    })?
            }
            _ => builder.with_no_client_auth(),
        };
        Ok(config)
    }

    pub(crate) fn root_store(&self) -> Result<RootCertStore, TlsError> {
        match &self.ca_pem {
            Some(pem) => {
                let mut store = RootCertStore::empty();
                let certs = parse_certificates(pem, "the CA")?;
                for cert in certs {
                    store.add(cert).map_err(|source| TlsError::Invalid {
                        what: "CA certificate",
                        source,
                    })?;
                }
                Ok(store)
            }
            None => Ok(system_roots().clone()),
        }
    }
}

/// Where the client certificate and key rotate from: both from files, neither inline
/// (client-go reloads file-based credentials only).
fn cert_files(tls: &TlsConfig) -> Option<CertFiles> {
    if tls.cert_data.is_some() || tls.key_data.is_some() {
        return None;
    }
    Some(CertFiles {
        cert: tls.cert_file.clone()?,
        key: tls.key_file.clone()?,
    })
}

/// The `ring` crypto provider, shared.
pub(crate) fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

/// The system's trusted CAs, loaded once (unreadable ones are skipped, as Go does).
fn system_roots() -> &'static RootCertStore {
    static ROOTS: OnceLock<RootCertStore> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        for e in &found.errors {
            tracing::debug!(error = %e, "skipping unreadable system CA certificates");
        }
        let mut store = RootCertStore::empty();
        let (_, ignored) = store.add_parsable_certificates(found.certs);
        if ignored > 0 {
            tracing::debug!(ignored, "skipped unparsable system CA certificates");
        }
        store
    })
}

/// Whether PEM data holds at least one certificate.
pub(crate) fn pem_has_certificates(pem: &[u8]) -> bool {
    CertificateDer::pem_slice_iter(pem).any(|c| c.is_ok())
}

fn parse_certificates(
    pem: &[u8],
    what: &'static str,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs: Vec<_> = CertificateDer::pem_slice_iter(pem)
        .filter_map(Result::ok)
        .collect();
    if certs.is_empty() {
        Err(TlsError::NoCertificates { what })
    } else {
        Ok(certs)
    }
}

/// Parses a client certificate chain and its private key (PKCS#8, PKCS#1 or SEC1).
pub(crate) fn parse_client_identity(
    cert_pem: &[u8],
    key_pem: &[u8],
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let chain = parse_certificates(cert_pem, "the client certificate")?;
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| TlsError::NoPrivateKey {
        reason: e.to_string(),
    })?;
    Ok((chain, key))
}

/// Finds a rustls error in an error chain (a failed handshake surfaces as an I/O error
/// wrapping one).
pub(crate) fn find_rustls_error(err: &(dyn std::error::Error + 'static)) -> Option<rustls::Error> {
    crate::error::chain(err).find_map(|e| e.downcast_ref::<rustls::Error>().cloned())
}

/// Accepts any server certificate (`insecure-skip-tls-verify`), still checking that the
/// handshake signatures are valid for the certificate presented.
#[derive(Debug)]
struct InsecureVerifier(Arc<CryptoProvider>);

impl ServerCertVerifier for InsecureVerifier {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_material_is_a_typed_error() {
        let m = TlsMaterial {
            ca_pem: Some(b"not pem".to_vec()),
            ..TlsMaterial::default()
        };
        assert!(matches!(
            m.client_config(None),
            Err(TlsError::NoCertificates { .. })
        ));
        let missing = TlsConfig {
            ca_file: Some("/nonexistent/ca.crt".into()),
            ..TlsConfig::default()
        };
        assert!(matches!(
            TlsMaterial::load(&missing),
            Err(TlsError::ReadFile {
                what: "CA file",
                ..
            })
        ));
        let m = TlsMaterial {
            server_name: Some("bad name!".into()),
            ..TlsMaterial::default()
        };
        assert!(matches!(
            m.server_name(),
            Err(TlsError::InvalidServerName(_))
        ));
        assert!(!pem_has_certificates(
            b"-----BEGIN CERTIFICATE-----\nnope\n"
        ));
    }

    #[test]
    fn insecure_needs_no_roots() {
        let m = TlsMaterial {
            insecure: true,
            ..TlsMaterial::default()
        };
        let config = m.client_config(None).unwrap();
        assert!(config.alpn_protocols.is_empty(), "hyper-rustls sets ALPN");
    }

    #[test]
    fn inline_data_wins_over_files() {
        let tls = TlsConfig {
            ca_data: Some(b"inline".to_vec()),
            ca_file: Some("/nonexistent".into()),
            ..TlsConfig::default()
        };
        assert_eq!(
            TlsMaterial::load(&tls).unwrap().ca_pem.as_deref(),
            Some(&b"inline"[..])
        );
    }
}
