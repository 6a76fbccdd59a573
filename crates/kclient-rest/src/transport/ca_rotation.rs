//! A CA file that rotates on disk (client-go's `transport/ca_rotation.go`, its
//! `ClientsAllowCARotation` gate, beta and on by default since 1.36).
//!
//! When the trusted CAs come from a file and nothing else (`certificate-authority` in a
//! kubeconfig, `TlsConfig::ca_file` without `ca_data`, the in-cluster `ca.crt`), a request at
//! least [`CA_REFRESH_DURATION`] after the last look reads the file again. A changed,
//! non-empty, well-formed file moves the client to connections that trust it: new requests
//! go to a pool made with the new CAs, while the requests and watches already running finish
//! on their connections, which close when the old pool is dropped — client-go's new transport
//! and `CloseIdleConnections` of the old one. A file that cannot be read, is empty or does not
//! parse keeps the current CAs. Each look is counted as client-go counts it
//! ([`RequestMetrics::transport_ca_reload`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::tls::TlsMaterial;
use crate::metrics::RequestMetrics;

/// How often a rotating CA file is read again (client-go's `caRefreshDuration`, 5 minutes).
pub const CA_REFRESH_DURATION: Duration = Duration::from_secs(5 * 60);

/// Where the CAs are read from again, and when they last were.
pub(crate) struct CaRotation {
    file: PathBuf,
    last_checked: Mutex<Instant>,
    metrics: Option<Arc<dyn RequestMetrics>>,
}

impl CaRotation {
    /// Watches `tls`'s CA file, if its CAs come from one (and were just read from it).
    pub(crate) fn of(tls: &TlsMaterial, metrics: Option<Arc<dyn RequestMetrics>>) -> Option<Self> {
        Some(Self {
            file: tls.ca_file.clone()?,
            last_checked: Mutex::new(Instant::now()),
            metrics,
        })
    }

    /// The TLS material to move to, when the refresh period has passed since the last look
    /// and the file now holds other CAs than `current`'s.
    pub(crate) fn check(&self, current: &TlsMaterial) -> Option<TlsMaterial> {
        {
            let mut last = self.last_checked.lock();
            if last.elapsed() < CA_REFRESH_DURATION {
                return None;
            }
            *last = Instant::now();
        }
        let (result, reason, fresh) = self.look(current);
        if let Some(m) = &self.metrics {
            m.transport_ca_reload(result, reason);
        }
        fresh
    }

    /// One look at the file: client-go's result and reason, and the new material.
    fn look(&self, current: &TlsMaterial) -> (&'static str, &'static str, Option<TlsMaterial>) {
        let file = self.file.display();
        let pem = match std::fs::read(&self.file) {
            Ok(pem) => pem,
            Err(error) => {
                tracing::error!(ca_file = %file, %error, "failed to read CA data from file");
                return ("failure", "read_error", None);
            }
        };
        if pem.is_empty() {
            tracing::info!(ca_file = %file, "CA file empty, skipping transport rotation");
            return ("failure", "empty", None);
        }
        if current.ca_pem.as_deref() == Some(pem.as_slice()) {
            return ("success", "unchanged", None);
        }
        let fresh = TlsMaterial {
            ca_pem: Some(pem),
            ..current.clone()
        };
        if let Err(error) = fresh.root_store() {
            tracing::error!(ca_file = %file, %error, "failed to parse CA data from file");
            return ("failure", "ca_parse_error", None);
        }
        tracing::info!(ca_file = %file, "CA content changed, updating transport");
        ("success", "updated", Some(fresh))
    }
}
