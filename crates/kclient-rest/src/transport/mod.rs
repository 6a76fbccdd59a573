//! The transport: one attempt of one request, from headers to the response head.
//!
//! It adds the credentials (bearer token, token file, basic auth or exec plugin), the
//! `User-Agent` and the impersonation headers in client-go's round-tripper order, each skipped
//! when the request already has its header; sends through the shared connection pool; refreshes
//! credentials and retries once on `401`; and maps failures to typed errors.

pub(crate) mod ca_rotation;
pub(crate) mod cert_rotation;
pub(crate) mod conn_rotation;
pub(crate) mod connector;
pub(crate) mod pool;
pub mod tls;
pub(crate) mod tls_error;
pub(crate) mod url;

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http::header::{AUTHORIZATION, USER_AGENT};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Uri};
use http_body_util::Full;
use hyper::body::Incoming;
use parking_lot::{Mutex, RwLock};

use crate::auth::exec::ExecClusterInfo;
use crate::auth::impersonation::{self, IMPERSONATE_USER};
use crate::auth::{Authenticator, Credentials};
use crate::config::Config;
use crate::error::{chain_has_io_kind, Error};
use ca_rotation::CaRotation;
use pool::{NetOptions, Pool};
use tls::{TlsError, TlsMaterial};
use url::{redacted_uri, BaseUrl};

/// One request as the retry loop sees it: everything needed to send it again.
#[derive(Debug, Clone)]
pub(crate) struct OutgoingRequest {
    pub(crate) method: Method,
    pub(crate) uri: Uri,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    /// Send over HTTP/1.1 only (a protocol upgrade, which HTTP/2 has no place for).
    pub(crate) http1_only: bool,
}

/// The connection pool and the headers every request gets.
pub(crate) struct Transport {
    base: BaseUrl,
    net: NetOptions,
    /// The TLS material and its pools, replaced when a rotating CA file changes.
    pools: RwLock<Arc<Pools>>,
    ca_rotation: Option<CaRotation>,
    /// The pools for the client certificate an exec plugin returned, replaced when it
    /// changes (the old pools' connections are closed then, as client-go's `CloseAll` does).
    exec_cert_pools: Mutex<Option<ExecCertPools>>,
    auth: Authenticator,
    user_agent: HeaderValue,
    impersonation: Vec<(HeaderName, HeaderValue)>,
}

impl Transport {
    pub(crate) fn new(config: &Config) -> Result<Self, Error> {
        config.validate()?;
        let base = BaseUrl::parse(&config.host, &config.tls)?;
        let tls = TlsMaterial::load(&config.tls)?;
        let net = NetOptions::new(config.proxy.clone(), config.disable_http2);
        let ca_rotation = CaRotation::of(&tls, config.metrics.clone());
        let cluster = config.exec.as_ref().map(|exec| {
            ExecClusterInfo::new(
                base.to_url_string(),
                &tls,
                &config.proxy,
                exec.cluster_config.clone(),
            )
        });
        let auth = Authenticator::from_config(config, cluster)?;
        let agent = config
            .user_agent
            .clone()
            .filter(|a| !a.is_empty())
            .unwrap_or_else(crate::config::default_user_agent);
        let user_agent = HeaderValue::from_str(&agent).map_err(|_| {
            crate::config::ConfigError::Invalid(format!("invalid user agent {agent:?}"))
        })?;
        let impersonation = impersonation::headers(&config.impersonate)?;
        if auth.may_provide_client_cert() && tls.cert_pem.is_some() {
            tracing::debug!("a client certificate is configured; the exec plugin's is ignored");
        }
        Ok(Self {
            base,
            pools: RwLock::new(Arc::new(Pools::new(tls, &net)?)),
            net,
            ca_rotation,
            exec_cert_pools: Mutex::new(None),
            auth,
            user_agent,
            impersonation,
        })
    }

    /// The server.
    pub(crate) fn base(&self) -> &BaseUrl {
        &self.base
    }

    /// Sends one attempt; on `401` with credentials that can be refreshed, refreshes them and
    /// sends once more.
    pub(crate) async fn send(
        &self,
        req: &OutgoingRequest,
    ) -> Result<http::Response<Incoming>, Error> {
        let creds = if req.headers.contains_key(AUTHORIZATION) {
            None
        } else {
            Some(self.auth.credentials().await?)
        };
        let response = self.send_with(req, creds.as_ref()).await?;
        if response.status() == http::StatusCode::UNAUTHORIZED {
            if let Some(used) = &creds {
                if self.auth.refresh_after_unauthorized(used).await {
                    tracing::debug!(url = %redacted_uri(&req.uri), "401: retrying once with refreshed credentials");
                    drop(response);
                    let fresh = self.auth.credentials().await?;
                    return self.send_with(req, Some(&fresh)).await;
                }
            }
        }
        Ok(response)
    }

    async fn send_with(
        &self,
        req: &OutgoingRequest,
        creds: Option<&Credentials>,
    ) -> Result<http::Response<Incoming>, Error> {
        let mut builder = http::Request::builder()
            .method(req.method.clone())
            .uri(req.uri.clone());
        let mut headers = req.headers.clone();
        if let Some(value) = creds.and_then(|c| c.authorization.clone()) {
            headers.entry(AUTHORIZATION).or_insert(value);
        }
        headers
            .entry(USER_AGENT)
            .or_insert_with(|| self.user_agent.clone());
        if !headers.contains_key(IMPERSONATE_USER) {
            for (name, value) in &self.impersonation {
                headers.append(name.clone(), value.clone());
            }
        }
        if let Some(h) = builder.headers_mut() {
            *h = headers;
        }
        let request = builder
            .body(Full::new(req.body.clone()))
            .map_err(|e| Error::InvalidRequest(e.to_string()))?;
        let pools = self.current_pools()?;
        let pool = match creds.and_then(|c| c.client_cert.as_ref()) {
            Some((cert, key)) if pools.tls.cert_pem.is_none() => {
                self.exec_pool(&pools.tls, cert, key, req.http1_only)?
            }
            _ if req.http1_only => pools.http1(&self.net)?,
            _ => pools.http.clone(),
        };
        pool.client()
            .request(request)
            .await
            .map_err(|e| classify(&req.uri, e))
    }

    /// The pools to send with: those of the CAs the file now holds, when they rotated.
    fn current_pools(&self) -> Result<Arc<Pools>, Error> {
        let current = self.pools.read().clone();
        let Some(fresh) = self
            .ca_rotation
            .as_ref()
            .and_then(|rotation| rotation.check(&current.tls))
        else {
            return Ok(current);
        };
        let pools = Arc::new(Pools::new(fresh, &self.net)?);
        *self.pools.write() = Arc::clone(&pools);
        Ok(pools)
    }

    /// The pool presenting an exec plugin's client certificate (HTTP/1.1-only for an
    /// upgrade), trusting `tls`'s CAs. When the plugin returns another certificate, new
    /// pools present it and the old pools' connections are closed (client-go's certificate
    /// callback rotation); when the CAs rotated, new pools trust the new ones and the old
    /// pools' connections finish what they carry.
    fn exec_pool(
        &self,
        tls: &TlsMaterial,
        cert: &[u8],
        key: &[u8],
        http1_only: bool,
    ) -> Result<Arc<Pool>, Error> {
        let mut slot = self.exec_cert_pools.lock();
        if let Some(old) = slot.take_if(|pools| pools.cert != cert) {
            tracing::info!("the exec plugin returned a new client certificate: closing the connections that present the old one");
            old.close_all();
        }
        slot.take_if(|pools| pools.ca_pem != tls.ca_pem);
        let pools = slot.get_or_insert_with(|| ExecCertPools {
            cert: cert.to_vec(),
            key: key.to_vec(),
            ca_pem: tls.ca_pem.clone(),
            any: None,
            http1: None,
        });
        let net = if http1_only {
            self.net.http1_only()
        } else {
            self.net.clone()
        };
        let tls = TlsMaterial {
            cert_pem: Some(pools.cert.clone()),
            key_pem: Some(pools.key.clone()),
            cert_files: None,
            ..tls.clone()
        };
        let entry = if http1_only {
            &mut pools.http1
        } else {
            &mut pools.any
        };
        if let Some(pool) = entry {
            return Ok(pool.clone());
        }
        let pool = Arc::new(pool::build_pool(&tls, &net)?);
        *entry = Some(pool.clone());
        Ok(pool)
    }
}

/// The pools of one TLS configuration.
struct Pools {
    tls: TlsMaterial,
    /// HTTP/2 or HTTP/1.1, as ALPN decides.
    http: Arc<Pool>,
    /// HTTP/1.1 only (ALPN offers `http/1.1` alone), for protocol upgrades; made on the first
    /// upgrade.
    http1: OnceLock<Arc<Pool>>,
}

impl Pools {
    fn new(tls: TlsMaterial, net: &NetOptions) -> Result<Self, Error> {
        Ok(Self {
            http: pool::shared_pool(&tls, net)?,
            tls,
            http1: OnceLock::new(),
        })
    }

    /// The pool of HTTP/1.1-only connections with this TLS configuration and `net`'s proxy.
    fn http1(&self, net: &NetOptions) -> Result<Arc<Pool>, Error> {
        if let Some(pool) = self.http1.get() {
            return Ok(pool.clone());
        }
        let pool = pool::shared_pool(&self.tls, &net.http1_only())?;
        Ok(self.http1.get_or_init(|| pool).clone())
    }
}

/// The pools presenting one client certificate from an exec plugin.
struct ExecCertPools {
    cert: Vec<u8>,
    key: Vec<u8>,
    /// The CAs the pools trust.
    ca_pem: Option<Vec<u8>>,
    /// HTTP/2 or HTTP/1.1, as ALPN decides.
    any: Option<Arc<Pool>>,
    /// HTTP/1.1 only, for upgrades.
    http1: Option<Arc<Pool>>,
}

impl ExecCertPools {
    fn close_all(&self) {
        for pool in self.any.iter().chain(self.http1.iter()) {
            pool.close_all();
        }
    }
}

/// Maps a hyper client error to a typed error.
pub(crate) fn classify(uri: &Uri, err: hyper_util::client::legacy::Error) -> Error {
    let url = redacted_uri(uri);
    if let Some(source) = tls::find_rustls_error(&err) {
        return TlsError::Handshake { url, source }.into();
    }
    if err.is_connect() {
        let refused = chain_has_io_kind(&err, &[std::io::ErrorKind::ConnectionRefused]);
        return Error::Connect {
            url,
            refused,
            source: Box::new(err),
        };
    }
    Error::Transport {
        url,
        source: Box::new(err),
    }
}

/// client-go's `IsConnectionReset || IsProbableEOF || IsHTTP2ConnectionLost`: the connection
/// broke under the request. `GET`s are retried on it as if the server had said
/// `Retry-After: 1`.
pub(crate) fn is_connection_reset_or_eof(err: &Error) -> bool {
    let source: &(dyn std::error::Error + 'static) = match err {
        Error::Transport { source, .. } => source.as_ref(),
        Error::Connect {
            source,
            refused: false,
            ..
        } => source.as_ref(),
        _ => return false,
    };
    use std::io::ErrorKind::*;
    if chain_has_io_kind(
        source,
        &[
            ConnectionReset,
            ConnectionAborted,
            BrokenPipe,
            UnexpectedEof,
        ],
    ) {
        return true;
    }
    crate::error::chain(source).any(|e| {
        e.downcast_ref::<hyper::Error>()
            .is_some_and(|h| h.is_incomplete_message() || h.is_canceled() || h.is_closed())
    })
}

/// client-go's `IsTimeout` for network errors: a connect or read that timed out.
pub(crate) fn is_network_timeout(err: &Error) -> bool {
    let source: &(dyn std::error::Error + 'static) = match err {
        Error::Transport { source, .. } | Error::Connect { source, .. } => source.as_ref(),
        _ => return false,
    };
    if chain_has_io_kind(source, &[std::io::ErrorKind::TimedOut]) {
        return true;
    }
    crate::error::chain(source).any(|e| e.is::<connector::ConnectTimedOut>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_error_classes() {
        let reset = Error::Transport {
            url: "u".into(),
            source: Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionReset)),
        };
        assert!(is_connection_reset_or_eof(&reset));
        let refused = Error::Connect {
            url: "u".into(),
            refused: true,
            source: Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
        };
        assert!(
            !is_connection_reset_or_eof(&refused),
            "refused is not retried"
        );
        let timeout = Error::Connect {
            url: "u".into(),
            refused: false,
            source: Box::new(connector::ConnectTimedOut(std::time::Duration::from_secs(
                40,
            ))),
        };
        assert!(is_network_timeout(&timeout));
        assert!(!is_network_timeout(&reset));
        assert!(!is_connection_reset_or_eof(&Error::Auth("x".into())));
    }
}
