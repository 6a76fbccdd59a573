//! Client certificates that rotate on disk (client-go's `transport/cert_rotation.go`).
//!
//! When the client certificate and key come from files (`client-certificate` and
//! `client-key` in a kubeconfig, `TlsConfig::cert_file` and `key_file`), the pool presents
//! them through a [`DynamicClientCert`]: every new connection's handshake uses the pair
//! last read; every [`CERT_CALLBACK_REFRESH_DURATION`] the files are read again and, when
//! the certificate or key changed, the new pair is used and every open connection of the
//! pool is closed (watches included), so that all requests move to the new credentials.
//! A read that fails (a file being rewritten, a pair that does not match) keeps the current
//! pair and is retried with backoff, as client-go's work queue does.

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::RwLock;
use rustls::client::ResolvesClientCert;
use rustls::sign::CertifiedKey;
use rustls::SignatureScheme;

use super::conn_rotation::ConnectionTracker;
use super::tls::{parse_client_identity, provider, read, TlsError};

/// How often rotating client certificate files are read again (client-go's
/// `CertCallbackRefreshDuration`, 5 minutes).
pub const CERT_CALLBACK_REFRESH_DURATION: Duration = Duration::from_secs(5 * 60);

/// The first retry of a failed read (client-go's default controller rate limiter starts at
/// 5 ms and doubles); retries are capped at [`CERT_CALLBACK_REFRESH_DURATION`].
const FIRST_RETRY: Duration = Duration::from_millis(5);

/// Where a rotating client certificate and its key are read from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct CertFiles {
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
}

/// The pair presented, with the key's DER to tell a changed key apart.
struct Identity {
    certified: Arc<CertifiedKey>,
    key_der: Vec<u8>,
}

impl Identity {
    fn parse(cert_pem: &[u8], key_pem: &[u8]) -> Result<Self, TlsError> {
        let (chain, key) = parse_client_identity(cert_pem, key_pem)?;
        let key_der = key.secret_der().to_vec();
        let certified = CertifiedKey::from_der(chain, key, &provider()).map_err(|source| {
            TlsError::Invalid {
                what: "client certificate and key",
                source,
            }
        })?;
        Ok(Self {
            certified: Arc::new(certified),
            key_der,
        })
    }

    /// client-go's `certsEqual`: the same chain and the same key.
    fn same_as(&self, other: &Self) -> bool {
        self.certified.cert == other.certified.cert && self.key_der == other.key_der
    }
}

/// A client certificate read from files, re-read periodically, that closes the pool's
/// connections when it changes (client-go's `dynamicClientCert`).
pub(crate) struct DynamicClientCert {
    files: CertFiles,
    current: RwLock<Identity>,
    connections: ConnectionTracker,
    watching: AtomicBool,
}

impl fmt::Debug for DynamicClientCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamicClientCert")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl DynamicClientCert {
    /// Presents `cert_pem`/`key_pem` (what was just read from `files`) until the files
    /// change; closes `connections` when they do.
    pub(crate) fn new(
        files: CertFiles,
        cert_pem: &[u8],
        key_pem: &[u8],
        connections: ConnectionTracker,
    ) -> Result<Arc<Self>, TlsError> {
        Ok(Arc::new(Self {
            files,
            current: RwLock::new(Identity::parse(cert_pem, key_pem)?),
            connections,
            watching: AtomicBool::new(false),
        }))
    }

    /// Reads the files again; when the pair changed, presents the new one and closes every
    /// connection of the pool (client-go's `loadClientCert`). Whether it changed.
    pub(crate) fn reload(&self) -> Result<bool, TlsError> {
        let cert_pem = read("client certificate file", &self.files.cert)?;
        let key_pem = read("client key file", &self.files.key)?;
        let fresh = Identity::parse(&cert_pem, &key_pem)?;
        if self.current.read().same_as(&fresh) {
            return Ok(false);
        }
        *self.current.write() = fresh;
        tracing::info!(
            cert = %self.files.cert.display(),
            "certificate rotation detected, shutting down client connections to start using new credentials"
        );
        self.connections.close_all();
        Ok(true)
    }

    /// Starts the periodic re-read on the current tokio runtime, once. It ends when the
    /// pool is gone.
    pub(crate) fn start_watching(self: &Arc<Self>) {
        if self.watching.swap(true, Ordering::AcqRel) {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(watch_files(Arc::downgrade(self)));
            }
            Err(_) => self.watching.store(false, Ordering::Release),
        }
    }
}

/// Re-reads the files every [`CERT_CALLBACK_REFRESH_DURATION`], sooner after a failure.
async fn watch_files(cert: Weak<DynamicClientCert>) {
    let mut retry = None;
    loop {
        tokio::time::sleep(retry.unwrap_or(CERT_CALLBACK_REFRESH_DURATION)).await;
        let Some(cert) = cert.upgrade() else { return };
        retry = match cert.reload() {
            Ok(_) => None,
            Err(e) => {
                let wait = next_retry(retry);
                tracing::warn!(error = %e, retry_in = ?wait, "cannot reload the client certificate; keeping the current one");
                Some(wait)
            }
        };
    }
}

/// The wait after a failed read, given the wait after the previous consecutive failure:
/// 5 ms, doubling, at most the refresh period.
fn next_retry(previous: Option<Duration>) -> Duration {
    previous.map_or(FIRST_RETRY, |p| (p * 2).min(CERT_CALLBACK_REFRESH_DURATION))
}

impl ResolvesClientCert for DynamicClientCert {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.current.read().certified))
    }

    fn has_certs(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refresh_period_is_client_go_s() {
        assert_eq!(CERT_CALLBACK_REFRESH_DURATION, Duration::from_secs(300));
    }

    #[test]
    fn retries_back_off_from_5ms_up_to_the_refresh_period() {
        let mut retry = None;
        let mut waits = Vec::new();
        for _ in 0..40 {
            let wait = next_retry(retry);
            retry = Some(wait);
            waits.push(wait);
        }
        assert_eq!(waits[0], Duration::from_millis(5));
        assert_eq!(waits[1], Duration::from_millis(10));
        assert_eq!(*waits.last().unwrap(), CERT_CALLBACK_REFRESH_DURATION);
        assert!(waits.windows(2).all(|w| w[0] <= w[1]));
    }
}
