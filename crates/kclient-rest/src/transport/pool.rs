//! Connection pools: one hyper client (with its pool) per distinct TLS and proxy configuration,
//! shared by every [`RestClient`](crate::RestClient) that needs the same one (client-go's
//! `transport/cache.go`).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use parking_lot::Mutex;

use super::cert_rotation::DynamicClientCert;
use super::conn_rotation::ConnectionTracker;
use super::connector::{ConnectTimeout, ProxyConnector};
use super::tls::TlsMaterial;
use crate::config::Proxy;
use crate::error::Error;

/// client-go's idle connections kept per host (`transport/cache.go`: `idleConnsPerHost = 25`).
pub const MAX_IDLE_CONNS_PER_HOST: usize = 25;
/// How long an idle connection stays in the pool (Go's `http.DefaultTransport`: 90 s).
pub const IDLE_CONN_TIMEOUT: Duration = Duration::from_secs(90);
/// HTTP/2: ping when nothing was read for this long (apimachinery's `ReadIdleTimeout`).
pub const HTTP2_READ_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// HTTP/2: close the connection when a ping is not answered within this (`PingTimeout`).
pub const HTTP2_PING_TIMEOUT: Duration = Duration::from_secs(15);

/// HTTP/2: the receive window of each stream (Go's HTTP/2 transport, which client-go uses:
/// `transportDefaultStreamFlow`, 4 MiB).
pub const HTTP2_STREAM_WINDOW: u32 = 4 << 20;
/// HTTP/2: the receive window of the connection (Go's `transportDefaultConnFlow`, 1 GiB).
pub const HTTP2_CONNECTION_WINDOW: u32 = 1 << 30;
/// HTTP/2: the largest frame the server may send (Go's `defaultMaxReadFrameSize`, 1 MiB;
/// the protocol's default is 16 KiB): a large list arrives in fewer frames.
pub const HTTP2_MAX_FRAME_SIZE: u32 = 1 << 20;

/// The hyper client every request goes through.
pub(crate) type HttpClient = Client<ConnectTimeout<HttpsConnector<ProxyConnector>>, Full<Bytes>>;

/// A hyper client, its connections' tracker, and the rotating client certificate it
/// presents when the certificate comes from files.
pub(crate) struct Pool {
    client: HttpClient,
    connections: ConnectionTracker,
    rotating_cert: Option<Arc<DynamicClientCert>>,
}

impl Pool {
    /// The client, with the certificate files' periodic re-read started (on the first
    /// request: a pool may be built outside a tokio runtime).
    pub(crate) fn client(&self) -> &HttpClient {
        if let Some(cert) = &self.rotating_cert {
            cert.start_watching();
        }
        &self.client
    }

    /// Closes every open connection of the pool (client-go's `CloseAll`): for a client
    /// certificate that changed.
    pub(crate) fn close_all(&self) {
        self.connections.close_all();
    }
}

/// Network options besides TLS.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct NetOptions {
    pub(crate) proxy: Proxy,
    pub(crate) http2: bool,
    /// `None` turns the HTTP/2 health check off.
    pub(crate) h2_read_idle: Option<Duration>,
    pub(crate) h2_ping_timeout: Duration,
}

impl NetOptions {
    /// The options of a configuration, with apimachinery's environment overrides:
    /// `DISABLE_HTTP2`, `HTTP2_READ_IDLE_TIMEOUT_SECONDS` (0 disables the health check) and
    /// `HTTP2_PING_TIMEOUT_SECONDS`.
    pub(crate) fn new(proxy: Proxy, disable_http2: bool) -> Self {
        let env_secs = |name| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        let env_disables_h2 = std::env::var_os("DISABLE_HTTP2").is_some_and(|v| !v.is_empty());
        let h2_read_idle = match env_secs("HTTP2_READ_IDLE_TIMEOUT_SECONDS") {
            Some(0) => None,
            Some(s) => Some(Duration::from_secs(s)),
            None => Some(HTTP2_READ_IDLE_TIMEOUT),
        };
        let h2_ping_timeout = env_secs("HTTP2_PING_TIMEOUT_SECONDS")
            .filter(|s| *s > 0)
            .map(Duration::from_secs)
            .unwrap_or(HTTP2_PING_TIMEOUT);
        Self {
            proxy,
            http2: !(disable_http2 || env_disables_h2),
            h2_read_idle,
            h2_ping_timeout,
        }
    }

    /// The same options with HTTP/2 off: ALPN offers `http/1.1` alone (for protocol
    /// upgrades, which HTTP/2 has no place for).
    pub(crate) fn http1_only(&self) -> Self {
        Self {
            http2: false,
            ..self.clone()
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct PoolKey {
    tls: TlsMaterial,
    net: NetOptions,
    /// Connections are driven by tasks of the runtime that opened them, so pools are not
    /// shared across runtimes.
    runtime: Option<tokio::runtime::Id>,
}

type Pools = Mutex<HashMap<PoolKey, Weak<Pool>>>;

fn pools() -> &'static Pools {
    static POOLS: OnceLock<Pools> = OnceLock::new();
    POOLS.get_or_init(Pools::default)
}

/// The shared client for this configuration, built on first use and dropped with its last user.
pub(crate) fn shared_pool(tls: &TlsMaterial, net: &NetOptions) -> Result<Arc<Pool>, Error> {
    let key = PoolKey {
        tls: tls.clone(),
        net: net.clone(),
        runtime: tokio::runtime::Handle::try_current().ok().map(|h| h.id()),
    };
    let mut pools = pools().lock();
    if let Some(pool) = pools.get(&key).and_then(Weak::upgrade) {
        return Ok(pool);
    }
    pools.retain(|_, weak| weak.strong_count() > 0);
    let pool = Arc::new(build_pool(tls, net)?);
    pools.insert(key, Arc::downgrade(&pool));
    Ok(pool)
}

/// How many pools are alive (for tests).
#[cfg(test)]
pub(crate) fn live_pools() -> usize {
    pools()
        .lock()
        .values()
        .filter(|w| w.strong_count() > 0)
        .count()
}

/// A pool of its own (not shared), for credentials that change the TLS identity.
pub(crate) fn build_pool(tls: &TlsMaterial, net: &NetOptions) -> Result<Pool, Error> {
    let connections = ConnectionTracker::default();
    let rotating_cert = match (&tls.cert_files, &tls.cert_pem, &tls.key_pem) {
        (Some(files), Some(cert), Some(key)) => Some(DynamicClientCert::new(
            files.clone(),
            cert,
            key,
            connections.clone(),
        )?),
        _ => None,
    };
    let client = build_client(tls, net, rotating_cert.clone(), connections.clone())?;
    Ok(Pool {
        client,
        connections,
        rotating_cert,
    })
}

fn build_client(
    tls: &TlsMaterial,
    net: &NetOptions,
    rotating_cert: Option<Arc<DynamicClientCert>>,
    connections: ConnectionTracker,
) -> Result<HttpClient, Error> {
    let tls_config = tls.client_config(rotating_cert)?;
    let server_name = tls.server_name()?;
    let tcp = ProxyConnector::new(&net.proxy, connections)?;
    let mut builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config)
        .https_or_http();
    if let Some(name) = server_name {
        builder =
            builder.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name));
    }
    // ALPN offers h2 and http/1.1, or only http/1.1 with HTTP/2 disabled.
    let https = if net.http2 {
        builder.enable_all_versions().wrap_connector(tcp)
    } else {
        builder.enable_http1().wrap_connector(tcp)
    };
    let mut builder = Client::builder(TokioExecutor::new());
    builder
        .pool_max_idle_per_host(MAX_IDLE_CONNS_PER_HOST)
        .pool_idle_timeout(IDLE_CONN_TIMEOUT)
        .pool_timer(TokioTimer::new())
        .timer(TokioTimer::new());
    // HTTP/2 flow control and framing as client-go's transport (golang.org/x/net/http2)
    // has them, not hyper's smaller defaults (2 MiB per stream, 5 MiB per connection,
    // 16 KiB frames), which pace a large list (docs/benchmarks.md, "HTTP/2 against
    // HTTP/1.1").
    builder
        .http2_initial_stream_window_size(HTTP2_STREAM_WINDOW)
        .http2_initial_connection_window_size(HTTP2_CONNECTION_WINDOW)
        .http2_max_frame_size(HTTP2_MAX_FRAME_SIZE);
    if let Some(interval) = net.h2_read_idle {
        builder
            .http2_keep_alive_interval(interval)
            .http2_keep_alive_timeout(net.h2_ping_timeout)
            .http2_keep_alive_while_idle(true);
    }
    Ok(builder.build(ConnectTimeout::new(https)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_client_go() {
        assert_eq!(MAX_IDLE_CONNS_PER_HOST, 25);
        assert_eq!(HTTP2_READ_IDLE_TIMEOUT, Duration::from_secs(30));
        assert_eq!(HTTP2_PING_TIMEOUT, Duration::from_secs(15));
        assert_eq!(IDLE_CONN_TIMEOUT, Duration::from_secs(90));
        // Go's HTTP/2 transport (golang.org/x/net/http2), under client-go.
        assert_eq!(HTTP2_STREAM_WINDOW, 4 * 1024 * 1024);
        assert_eq!(HTTP2_CONNECTION_WINDOW, 1024 * 1024 * 1024);
        assert_eq!(HTTP2_MAX_FRAME_SIZE, 1024 * 1024);
    }

    #[test]
    fn identical_configs_share_a_pool_until_dropped() {
        let tls = TlsMaterial {
            insecure: true,
            server_name: Some("pool-test.example".into()),
            ..TlsMaterial::default()
        };
        let net = NetOptions {
            proxy: Proxy::Direct,
            http2: true,
            h2_read_idle: Some(HTTP2_READ_IDLE_TIMEOUT),
            h2_ping_timeout: HTTP2_PING_TIMEOUT,
        };
        let a = shared_pool(&tls, &net).unwrap();
        let b = shared_pool(&tls, &net).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let other = NetOptions {
            http2: false,
            ..net.clone()
        };
        let c = shared_pool(&tls, &other).unwrap();
        assert!(!Arc::ptr_eq(&a, &c), "another configuration, another pool");
        let weak = Arc::downgrade(&a);
        drop((a, b));
        assert!(
            weak.upgrade().is_none(),
            "the cache does not keep pools alive"
        );
        assert!(live_pools() >= 1);
    }
}
