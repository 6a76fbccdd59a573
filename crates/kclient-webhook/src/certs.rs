//! Certificates for development and tests: a self-signed CA and a serving certificate it
//! signed, the CA's PEM being the `caBundle` the API server verifies the webhook with. (In
//! production, cert-manager or a platform issues them, and the server reloads them.)

use std::net::IpAddr;
use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

use crate::tls::ServingCertificate;
use crate::WebhookError;

/// A CA and a serving certificate of its, for the names and addresses a webhook is reached
/// at.
///
/// ```
/// use kclient_webhook::certs::SelfSignedCertificates;
///
/// let certs = SelfSignedCertificates::generate(&["webhook.system.svc"], &["127.0.0.1".parse().unwrap()]).unwrap();
/// assert!(certs.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
/// // certs.serving() is what the server serves; certs.ca_pem goes into the caBundle.
/// ```
#[derive(Clone)]
pub struct SelfSignedCertificates {
    /// The CA's certificate (the `caBundle`).
    pub ca_pem: String,
    /// The serving certificate.
    pub cert_pem: String,
    /// The serving certificate's private key (PKCS#8).
    pub key_pem: String,
}

impl std::fmt::Debug for SelfSignedCertificates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelfSignedCertificates")
            .field("ca_pem", &self.ca_pem)
            .finish_non_exhaustive()
    }
}

fn cert_error(e: rcgen::Error) -> WebhookError {
    WebhookError::Certificate(e.to_string())
}

impl SelfSignedCertificates {
    /// A new CA (valid as long as rcgen's default, years) and a serving certificate for
    /// `dns_names` and `ips`.
    pub fn generate(dns_names: &[&str], ips: &[IpAddr]) -> Result<Self, WebhookError> {
        let mut ca = CertificateParams::new(Vec::<String>::new()).map_err(cert_error)?;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "kclient-webhook-ca");
        ca.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate().map_err(cert_error)?;
        let ca_cert = ca.self_signed(&ca_key).map_err(cert_error)?;
        let issuer = Issuer::new(ca, ca_key);

        let names: Vec<String> = dns_names.iter().map(|n| (*n).to_owned()).collect();
        let mut serving = CertificateParams::new(names).map_err(cert_error)?;
        serving
            .subject_alt_names
            .extend(ips.iter().map(|ip| SanType::IpAddress(*ip)));
        let common_name = dns_names.first().map_or("kclient-webhook", |n| *n);
        serving
            .distinguished_name
            .push(DnType::CommonName, common_name);
        serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        serving.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        let key = KeyPair::generate().map_err(cert_error)?;
        let cert = serving.signed_by(&key, &issuer).map_err(cert_error)?;
        Ok(Self {
            ca_pem: ca_cert.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// The serving certificate, from memory.
    pub fn serving(&self) -> ServingCertificate {
        ServingCertificate::Pem {
            cert: self.cert_pem.clone(),
            key: self.key_pem.clone(),
        }
    }

    /// Writes `tls.crt`, `tls.key` and `ca.crt` into `dir` (a Secret's layout) and returns
    /// the serving certificate from those files, reloaded when they change.
    pub fn write_to(&self, dir: &Path) -> Result<ServingCertificate, WebhookError> {
        let write = |name: &str, contents: &str| {
            std::fs::write(dir.join(name), contents).map_err(|e| {
                WebhookError::Certificate(format!("cannot write {}: {e}", dir.join(name).display()))
            })
        };
        write("ca.crt", &self.ca_pem)?;
        write("tls.crt", &self.cert_pem)?;
        write("tls.key", &self.key_pem)?;
        Ok(ServingCertificate::from_dir(dir))
    }
}
