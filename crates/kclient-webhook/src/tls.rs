//! The server's certificate: from PEM in memory or from files that are read again when they
//! change (controller-runtime's `certwatcher`), so a rotated certificate (cert-manager's, a
//! Secret volume's) is served without a restart and without dropping a request.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kclient_core::CancellationToken;
use parking_lot::RwLock;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::metrics::WebhookMetrics;
use crate::WebhookError;

/// How often certificate files are looked at by default (controller-runtime's certwatcher
/// polls every 10 s too, beside its file notifications).
pub const DEFAULT_RELOAD_INTERVAL: Duration = Duration::from_secs(10);

/// Where the serving certificate comes from.
#[derive(Clone, PartialEq, Eq)]
pub enum ServingCertificate {
    /// A certificate chain and its private key, in PEM.
    Pem {
        /// The chain (`CERTIFICATE` blocks), the server's first.
        cert: String,
        /// The key (PKCS#8, PKCS#1 or SEC1).
        key: String,
    },
    /// The same, in files (`tls.crt` and `tls.key` of a mounted Secret), read again every
    /// `reload_interval` and served anew when they changed.
    Files {
        /// The chain's file.
        cert: PathBuf,
        /// The key's file.
        key: PathBuf,
        /// How often to look ([`DEFAULT_RELOAD_INTERVAL`]).
        reload_interval: Duration,
    },
}

impl fmt::Debug for ServingCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Never a private key in a log.
            Self::Pem { .. } => f.write_str("ServingCertificate::Pem"),
            Self::Files {
                cert,
                key,
                reload_interval,
            } => f
                .debug_struct("ServingCertificate::Files")
                .field("cert", cert)
                .field("key", key)
                .field("reload_interval", reload_interval)
                .finish(),
        }
    }
}

impl ServingCertificate {
    /// The files `dir/tls.crt` and `dir/tls.key` (a Secret of type `kubernetes.io/tls`,
    /// mounted), reloaded every [`DEFAULT_RELOAD_INTERVAL`].
    pub fn from_dir(dir: impl AsRef<Path>) -> Self {
        let dir = dir.as_ref();
        Self::Files {
            cert: dir.join("tls.crt"),
            key: dir.join("tls.key"),
            reload_interval: DEFAULT_RELOAD_INTERVAL,
        }
    }
}

/// The certificate being served, replaced when its files change.
pub(crate) struct Resolver {
    current: RwLock<Arc<CertifiedKey>>,
}

impl fmt::Debug for Resolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Resolver")
    }
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.current.read()))
    }
}

/// A chain and key parsed into what rustls serves.
fn certified_key(
    provider: &CryptoProvider,
    cert: &[u8],
    key: &[u8],
) -> Result<CertifiedKey, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert)
        .filter_map(Result::ok)
        .collect();
    if chain.is_empty() {
        return Err("no CERTIFICATE in the certificate PEM".into());
    }
    let key = PrivateKeyDer::from_pem_slice(key)
        .map_err(|e| format!("no private key in the key PEM: {e}"))?;
    let signing = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| format!("the private key is not usable: {e}"))?;
    let certified = CertifiedKey::new(chain, signing);
    certified
        .keys_match()
        .map_err(|e| format!("the key does not belong to the certificate: {e}"))?;
    Ok(certified)
}

/// The two files' contents.
async fn read_pair(cert: &Path, key: &Path) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    Ok((tokio::fs::read(cert).await?, tokio::fs::read(key).await?))
}

impl Resolver {
    /// The resolver of `source`, its certificate read now; for files, the task that reloads
    /// them until `stop` fires is spawned.
    pub(crate) async fn start(
        source: &ServingCertificate,
        provider: Arc<CryptoProvider>,
        metrics: WebhookMetrics,
        stop: &CancellationToken,
    ) -> Result<Arc<Self>, WebhookError> {
        match source {
            ServingCertificate::Pem { cert, key } => {
                let certified = certified_key(&provider, cert.as_bytes(), key.as_bytes())
                    .map_err(WebhookError::Certificate)?;
                Ok(Arc::new(Self {
                    current: RwLock::new(Arc::new(certified)),
                }))
            }
            ServingCertificate::Files {
                cert,
                key,
                reload_interval,
            } => {
                let (cert_pem, key_pem) = read_pair(cert, key).await.map_err(|e| {
                    WebhookError::Certificate(format!(
                        "cannot read {} or {}: {e}",
                        cert.display(),
                        key.display()
                    ))
                })?;
                let certified = certified_key(&provider, &cert_pem, &key_pem)
                    .map_err(WebhookError::Certificate)?;
                let resolver = Arc::new(Self {
                    current: RwLock::new(Arc::new(certified)),
                });
                tokio::spawn(reload(
                    Arc::clone(&resolver),
                    provider,
                    metrics,
                    (cert.clone(), key.clone()),
                    (cert_pem, key_pem),
                    *reload_interval,
                    stop.clone(),
                ));
                Ok(resolver)
            }
        }
    }
}

/// Reads the files every `interval`; a pair that changed and parses replaces the one served
/// (a pair caught half-written does not parse, or does not match, and waits for the next
/// look).
async fn reload(
    resolver: Arc<Resolver>,
    provider: Arc<CryptoProvider>,
    metrics: WebhookMetrics,
    (cert, key): (PathBuf, PathBuf),
    mut last: (Vec<u8>, Vec<u8>),
    interval: Duration,
    stop: CancellationToken,
) {
    let mut ticks = tokio::time::interval(interval.max(Duration::from_millis(1)));
    ticks.tick().await;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let pair = match read_pair(&cert, &key).await {
            Ok(pair) => pair,
            Err(error) => {
                tracing::warn!(%error, cert = %cert.display(), "cannot read the serving certificate; serving the current one");
                continue;
            }
        };
        if pair == last {
            continue;
        }
        metrics.certificate_reads.inc();
        match certified_key(&provider, &pair.0, &pair.1) {
            Ok(certified) => {
                *resolver.current.write() = Arc::new(certified);
                tracing::info!(cert = %cert.display(), "serving a new certificate");
                last = pair;
            }
            Err(error) => {
                metrics.certificate_read_errors.inc();
                tracing::warn!(%error, cert = %cert.display(), "the changed serving certificate does not load (yet); serving the current one");
                // Looked at again only once it changes again.
                last = pair;
            }
        }
    }
}
