//! The TCP side of a connection: dialing (30 s timeout, 30 s TCP keep-alive), proxies (HTTP
//! `CONNECT` tunnels and SOCKS5), and an overall connect timeout that covers the TLS handshake.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use base64::Engine as _;
use http::{HeaderValue, Uri};
use hyper_util::client::legacy::connect::proxy::{SocksV5, Tunnel};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::TokioIo;
use kclient_core::BoxError;
use tokio::net::TcpStream;
use tower_service::Service;

use super::conn_rotation::{ConnectionTracker, TrackedIo};
use crate::config::{ConfigError, Proxy};
use crate::transport::url::{redacted_url, REDACTED_PASSWORD};

/// client-go's dial timeout (`transport/cache.go`: `Timeout: 30 * time.Second`).
pub const DIAL_TIMEOUT: Duration = Duration::from_secs(30);
/// client-go's TCP keep-alive period (`KeepAlive: 30 * time.Second`).
pub const TCP_KEEPALIVE: Duration = Duration::from_secs(30);
/// client-go's TLS handshake timeout (`TLSHandshakeTimeout: 10 * time.Second`).
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

type BoxFuture<T> = Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>>;

/// Where a connection goes first.
#[derive(Clone, Debug)]
enum Route {
    /// `HTTP(S)_PROXY`/`NO_PROXY`, loopback destinations always direct (as Go does).
    Environment(Arc<Matcher>),
    /// Every connection through this proxy.
    Fixed(ProxyTarget),
    /// No proxy.
    Direct,
}

#[derive(Clone)]
struct ProxyTarget {
    uri: Uri,
    /// `user`, `password` from the proxy URL.
    credentials: Option<(String, String)>,
}

/// Shows the user, never the password.
impl std::fmt::Debug for ProxyTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let user = self.credentials.as_ref().map(|(user, _)| user);
        f.debug_struct("ProxyTarget")
            .field("uri", &self.uri)
            .field("user", &user)
            .field(
                "password",
                &self.credentials.as_ref().map(|_| REDACTED_PASSWORD),
            )
            .finish()
    }
}

impl ProxyTarget {
    fn parse(url: &str) -> Result<Self, ConfigError> {
        let invalid = |reason: &str| ConfigError::InvalidProxy {
            url: redacted_url(url).into_owned(),
            reason: reason.to_owned(),
        };
        let uri = crate::kubeconfig::check_proxy_url(url).map_err(|r| invalid(&r))?;
        if uri.scheme_str() == Some("https") {
            return Err(invalid(
                "https:// proxies are not supported; use an http:// proxy (the tunnel to the server is still TLS) or socks5://",
            ));
        }
        let authority = uri.authority().ok_or_else(|| invalid("no host"))?;
        let credentials = authority.as_str().rsplit_once('@').map(|(userinfo, _)| {
            let (user, pass) = userinfo.split_once(':').unwrap_or((userinfo, ""));
            (percent_decode(user), percent_decode(pass))
        });
        let host_port = authority.as_str().rsplit('@').next().unwrap_or_default();
        let uri = Uri::builder()
            .scheme(uri.scheme_str().unwrap_or("http"))
            .authority(host_port)
            .path_and_query("/")
            .build()
            .map_err(|e| invalid(&e.to_string()))?;
        Ok(Self { uri, credentials })
    }
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// Dials TCP, directly or through a proxy; its pool's tracker can close every connection.
#[derive(Clone, Debug)]
pub(crate) struct ProxyConnector {
    http: HttpConnector,
    route: Route,
    connections: ConnectionTracker,
}

impl ProxyConnector {
    pub(crate) fn new(proxy: &Proxy, connections: ConnectionTracker) -> Result<Self, ConfigError> {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(DIAL_TIMEOUT));
        http.set_keepalive(Some(TCP_KEEPALIVE));
        let route = match proxy {
            Proxy::FromEnvironment => Route::Environment(Arc::new(Matcher::from_env())),
            Proxy::Url(url) => Route::Fixed(ProxyTarget::parse(url)?),
            Proxy::Direct => Route::Direct,
        };
        Ok(Self {
            http,
            route,
            connections,
        })
    }

    fn proxy_for(&self, dst: &Uri) -> Option<ProxyTarget> {
        match &self.route {
            Route::Direct => None,
            Route::Fixed(target) => Some(target.clone()),
            Route::Environment(matcher) => {
                if is_loopback(dst) {
                    return None;
                }
                let intercept = matcher.intercept(dst)?;
                Some(ProxyTarget {
                    uri: intercept.uri().clone(),
                    credentials: intercept
                        .raw_auth()
                        .map(|(u, p)| (u.to_owned(), p.to_owned())),
                })
            }
        }
    }
}

/// Go's `ProxyFromEnvironment` never proxies `localhost` or loopback addresses.
fn is_loopback(dst: &Uri) -> bool {
    let Some(host) = dst.host() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl Service<Uri> for ProxyConnector {
    type Response = TrackedIo<TokioIo<TcpStream>>;
    type Error = BoxError;
    type Future = BoxFuture<Self::Response>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let http = self.http.clone();
        let proxy = self.proxy_for(&dst);
        let connections = self.connections.clone();
        Box::pin(async move {
            let stream = dial(http, proxy, dst).await?;
            Ok(connections.track(stream))
        })
    }
}

/// A TCP stream to `dst`, directly or through `proxy`.
async fn dial(
    http: HttpConnector,
    proxy: Option<ProxyTarget>,
    dst: Uri,
) -> Result<TokioIo<TcpStream>, BoxError> {
    match proxy {
        None => {
            let mut http = http;
            http.call(dst).await.map_err(Into::into)
        }
        Some(target) if target.uri.scheme_str() == Some("socks5") => {
            let mut socks = SocksV5::new(target.uri, http);
            if let Some((user, pass)) = target.credentials {
                socks = socks.with_auth(user, pass);
            }
            socks.local_dns(false).call(dst).await.map_err(Into::into)
        }
        Some(target) => {
            let mut tunnel = Tunnel::new(target.uri, http);
            if let Some((user, pass)) = target.credentials {
                let token =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
                if let Ok(value) = HeaderValue::from_str(&format!("Basic {token}")) {
                    tunnel = tunnel.with_auth(value);
                }
            }
            tunnel.call(dst).await.map_err(Into::into)
        }
    }
}

/// A connect that took longer than [`DIAL_TIMEOUT`] + [`TLS_HANDSHAKE_TIMEOUT`].
#[derive(Debug, thiserror::Error)]
#[error("connecting (TCP and TLS) timed out after {0:?}")]
pub(crate) struct ConnectTimedOut(pub(crate) Duration);

/// Bounds a whole connect (dial, proxy tunnel and TLS handshake).
#[derive(Clone, Debug)]
pub(crate) struct ConnectTimeout<C> {
    inner: C,
    timeout: Duration,
}

impl<C> ConnectTimeout<C> {
    pub(crate) fn new(inner: C) -> Self {
        Self {
            inner,
            timeout: DIAL_TIMEOUT + TLS_HANDSHAKE_TIMEOUT,
        }
    }
}

impl<C> Service<Uri> for ConnectTimeout<C>
where
    C: Service<Uri>,
    C::Future: Send + 'static,
    C::Response: Send + 'static,
    C::Error: Into<BoxError>,
{
    type Response = C::Response;
    type Error = BoxError;
    type Future = BoxFuture<Self::Response>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let timeout = self.timeout;
        let connecting = self.inner.call(dst);
        Box::pin(async move {
            match tokio::time::timeout(timeout, connecting).await {
                Ok(result) => result.map_err(Into::into),
                Err(_) => Err(Box::new(ConnectTimedOut(timeout)) as BoxError),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_urls_carry_credentials() {
        let t = ProxyTarget::parse("http://bob:s%40cret@proxy.local:3128").unwrap();
        assert_eq!(t.uri.to_string(), "http://proxy.local:3128/");
        assert_eq!(t.credentials, Some(("bob".into(), "s@cret".into())));
        assert!(ProxyTarget::parse("https://proxy:443").is_err());
        assert!(ProxyTarget::parse("ftp://proxy").is_err());
        let s = ProxyTarget::parse("socks5://proxy:1080").unwrap();
        assert_eq!(s.credentials, None);
    }

    #[test]
    fn loopback_is_never_proxied_from_the_environment() {
        for uri in [
            "https://localhost:6443",
            "https://127.0.0.1",
            "https://[::1]:1",
        ] {
            assert!(is_loopback(&uri.parse().unwrap()), "{uri}");
        }
        assert!(!is_loopback(&"https://10.0.0.1".parse().unwrap()));
        let c = ProxyConnector::new(
            &Proxy::Url("http://p:1".into()),
            ConnectionTracker::default(),
        )
        .unwrap();
        assert!(
            c.proxy_for(&"https://127.0.0.1".parse().unwrap()).is_some(),
            "an explicit proxy-url applies to every host, as http.ProxyURL does"
        );
        let c = ProxyConnector::new(&Proxy::Direct, ConnectionTracker::default()).unwrap();
        assert!(c.proxy_for(&"https://10.0.0.1".parse().unwrap()).is_none());
    }

    #[test]
    fn timeouts_are_client_go_s() {
        assert_eq!(DIAL_TIMEOUT, Duration::from_secs(30));
        assert_eq!(TCP_KEEPALIVE, Duration::from_secs(30));
        assert_eq!(TLS_HANDSHAKE_TIMEOUT, Duration::from_secs(10));
    }
}
