//! HTTPS: a certificate authority generated per server (rcgen, ring), a serving certificate
//! for `127.0.0.1` and `localhost`, client certificates issued on demand, and the rustls
//! server configuration (ring) that asks for — but does not require — a client certificate
//! signed by that CA.

use std::sync::Arc;

use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::Error;

fn tls_err(e: impl std::fmt::Display) -> Error {
    Error::Tls(e.to_string())
}

/// PEM-encodes DER bytes with `label`.
pub fn pem(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// A certificate and its private key, PEM-encoded.
#[derive(Clone)]
pub struct CertifiedKey {
    /// The certificate (`CERTIFICATE`).
    pub cert_pem: String,
    /// The private key (`PRIVATE KEY`, PKCS#8).
    pub key_pem: String,
    pub(crate) cert_der: CertificateDer<'static>,
    pub(crate) key_der: Vec<u8>,
}

impl std::fmt::Debug for CertifiedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertifiedKey")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

/// The server's certificate authority and serving certificate.
pub struct Authority {
    issuer: Issuer<'static, KeyPair>,
    ca_der: CertificateDer<'static>,
    /// The CA certificate, PEM-encoded (what kubeconfigs carry).
    pub ca_pem: String,
    /// The serving certificate.
    pub serving: CertifiedKey,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority")
            .field("ca_pem", &self.ca_pem)
            .finish()
    }
}

impl Authority {
    /// Generates a CA and a serving certificate for `127.0.0.1`, `::1` and `localhost`.
    pub fn generate() -> Result<Self, Error> {
        let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(tls_err)?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "kclient-fake-ca");
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate().map_err(tls_err)?;
        let ca_cert = ca.self_signed(&ca_key).map_err(tls_err)?;
        let ca_der = ca_cert.der().clone();
        let issuer = Issuer::new(ca, ca_key);
        let serving = issue(
            &issuer,
            "kube-apiserver",
            &[
                "127.0.0.1",
                "::1",
                "localhost",
                "kubernetes",
                "kubernetes.default",
            ],
            ExtendedKeyUsagePurpose::ServerAuth,
            &[],
        )?;
        Ok(Self {
            ca_pem: pem("CERTIFICATE", &ca_der),
            ca_der,
            issuer,
            serving,
        })
    }

    /// Issues a client certificate for user `common_name` in `groups` (the organisations).
    pub fn client_certificate(
        &self,
        common_name: &str,
        groups: &[&str],
    ) -> Result<CertifiedKey, Error> {
        issue(
            &self.issuer,
            common_name,
            &[],
            ExtendedKeyUsagePurpose::ClientAuth,
            groups,
        )
    }

    /// The rustls server configuration: the serving certificate, HTTP/2 and HTTP/1.1 by
    /// ALPN, and optional client certificates verified against the CA.
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca_der.clone()).map_err(tls_err)?;
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .allow_unauthenticated()
        .build()
        .map_err(tls_err)?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.serving.key_der.clone()));
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(tls_err)?
            .with_client_cert_verifier(verifier)
            .with_single_cert(vec![self.serving.cert_der.clone()], key)
            .map_err(tls_err)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

fn issue(
    issuer: &Issuer<'static, KeyPair>,
    common_name: &str,
    sans: &[&str],
    usage: ExtendedKeyUsagePurpose,
    organisations: &[&str],
) -> Result<CertifiedKey, Error> {
    let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
    let mut params = CertificateParams::new(sans).map_err(tls_err)?;
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    for o in organisations {
        params.distinguished_name.push(DnType::OrganizationName, *o);
    }
    params.extended_key_usages = vec![usage];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let key = KeyPair::generate().map_err(tls_err)?;
    let cert = params.signed_by(&key, issuer).map_err(tls_err)?;
    let key_der = key.serialize_der();
    Ok(CertifiedKey {
        cert_pem: pem("CERTIFICATE", cert.der()),
        key_pem: pem("PRIVATE KEY", &key_der),
        cert_der: cert.der().clone(),
        key_der,
    })
}

/// One DER element: its tag, its content, and what follows it.
fn der_element(data: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = data.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |l, b| (l << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The elements of a DER `SEQUENCE` or `SET`'s content.
fn der_elements(mut data: &[u8]) -> Vec<(u8, &[u8])> {
    let mut out = Vec::new();
    while let Some((tag, content, rest)) = der_element(data) {
        out.push((tag, content));
        data = rest;
    }
    out
}

/// Who a client certificate (DER) names, as kube-apiserver's x509 authenticator reads it:
/// the subject's common name is the user, its organisations the groups.
pub fn certificate_identity(der: &[u8]) -> Option<(String, Vec<String>)> {
    const COMMON_NAME: &[u8] = &[0x55, 0x04, 0x03];
    const ORGANISATION: &[u8] = &[0x55, 0x04, 0x0a];
    let (_, certificate, _) = der_element(der)?;
    let (_, tbs, _) = der_element(certificate)?;
    let fields = der_elements(tbs);
    // The version (optional), the serial number, the signature algorithm, the issuer, the
    // validity, the subject.
    let version = usize::from(fields.first()?.0 == 0xa0);
    let (_, subject) = *fields.get(version + 4)?;
    let (mut user, mut groups) = (String::new(), Vec::new());
    for (_, rdn) in der_elements(subject) {
        for (_, attribute) in der_elements(rdn) {
            let parts = der_elements(attribute);
            let [(0x06, oid), (_, value)] = parts.as_slice() else {
                continue;
            };
            let value = String::from_utf8_lossy(value).into_owned();
            match *oid {
                COMMON_NAME => user = value,
                ORGANISATION => groups.push(value),
                _ => {}
            }
        }
    }
    Some((user, groups))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_certificates_name_their_user_and_groups() {
        let ca = Authority::generate().unwrap();
        // (rcgen keeps one value per attribute type: one organisation.)
        let client = ca.client_certificate("alice", &["devs"]).unwrap();
        assert_eq!(
            certificate_identity(&client.cert_der),
            Some(("alice".to_string(), vec!["devs".to_string()]))
        );
        assert_eq!(certificate_identity(b"junk"), None);
    }

    #[test]
    fn generates_a_usable_configuration() {
        let ca = Authority::generate().unwrap();
        assert!(ca.ca_pem.starts_with("-----BEGIN CERTIFICATE-----\n"));
        assert!(ca.serving.key_pem.contains("PRIVATE KEY"));
        ca.server_config().unwrap();
        let client = ca.client_certificate("alice", &["devs"]).unwrap();
        assert!(client.cert_pem.contains("CERTIFICATE"));
        assert!(!format!("{client:?}").contains("PRIVATE"));
    }
}
