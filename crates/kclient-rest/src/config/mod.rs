//! [`Config`]: everything needed to talk to one API server as one identity (client-go's
//! `rest.Config`), and where it comes from: a kubeconfig ([`Config::from_kubeconfig`]), the
//! pod's service account ([`Config::incluster`]) or whichever of the two applies
//! ([`Config::infer`]).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::error::Error;
use crate::incluster;
use crate::kubeconfig::{AuthProviderConfig, ExecConfig, KubeconfigError, KubeconfigOptions};
use crate::metrics::RequestMetrics;
use crate::rate_limit::RateLimiter;
use crate::transport::url::redacted_url;
use crate::warnings::WarningHandler;

mod error;
mod tls;

pub use error::ConfigError;
pub use tls::TlsConfig;

/// client-go's default client-side QPS (`rest.DefaultQPS`).
pub const DEFAULT_QPS: f32 = 5.0;
/// client-go's default client-side burst (`rest.DefaultBurst`).
pub const DEFAULT_BURST: u32 = 10;
/// The namespace used when a context names none (`default`).
pub const DEFAULT_NAMESPACE: &str = "default";
/// How long an exec credential plugin may run before it is killed and the request fails.
///
/// client-go has no limit; a plugin that hangs then hangs every request. Five minutes leaves
/// room for interactive logins (kubelogin's browser flow gives up after three).
pub const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// How to reach and authenticate to an API server, and how to behave as its client.
///
/// Build one from a kubeconfig ([`Config::from_kubeconfig`]), in a pod
/// ([`Config::incluster`]), by whichever applies ([`Config::infer`]), or by hand with
/// [`Config::new`] and field updates. Turn it into a client with
/// [`RestClient::new`](crate::RestClient::new).
///
/// `Debug` never prints tokens, passwords or private keys.
///
/// ```
/// use std::time::Duration;
/// use kclient_rest::Config;
///
/// let mut config = Config::new("https://10.0.0.1:6443");
/// config.bearer_token = Some("my-token".into());
/// config.timeout = Some(Duration::from_secs(30));
/// assert_eq!((config.qps, config.burst), (Some(5.0), 10));
/// assert!(!format!("{config:?}").contains("my-token"));
/// ```
#[derive(Clone)]
pub struct Config {
    /// The API server: `https://host:port`, optionally with a path prefix. A bare `host:port`
    /// gets `https://` when TLS is configured (a CA, a client certificate or `insecure`), else
    /// `http://`, as in client-go.
    pub host: String,
    /// How to trust the server and present a client certificate.
    pub tls: TlsConfig,
    /// A bearer token. With [`bearer_token_file`](Self::bearer_token_file) it is the initial
    /// value of the file's token.
    pub bearer_token: Option<String>,
    /// A file holding the bearer token, re-read every minute (service-account tokens rotate).
    /// Takes precedence over `bearer_token`.
    pub bearer_token_file: Option<PathBuf>,
    /// HTTP basic authentication. May not be combined with a bearer token.
    pub basic_auth: Option<BasicAuth>,
    /// An exec credential plugin, used when no token, basic auth or client certificate is set.
    pub exec: Option<ExecConfig>,
    /// How long an exec plugin may run ([`DEFAULT_EXEC_TIMEOUT`]); `None` waits forever.
    pub exec_timeout: Option<Duration>,
    /// A legacy auth-provider plugin from the kubeconfig. Kept for information only: these
    /// plugins (gcp, azure, oidc) are deprecated and not run; use an exec plugin instead.
    pub auth_provider: Option<AuthProviderConfig>,
    /// Act as another user (the `Impersonate-*` headers).
    pub impersonate: ImpersonationConfig,
    /// The `User-Agent` header; `None` uses [`default_user_agent`].
    pub user_agent: Option<String>,
    /// Client-side requests per second. `None` or a negative value disables rate limiting;
    /// `Some(0.0)` means the default ([`DEFAULT_QPS`]), as a zero `QPS` does in client-go.
    pub qps: Option<f32>,
    /// The burst of the client-side rate limiter; 0 means the default ([`DEFAULT_BURST`]).
    pub burst: u32,
    /// A rate limiter to use instead of one built from `qps`/`burst`, to share one token
    /// bucket between several clients.
    pub rate_limiter: Option<RateLimiter>,
    /// The timeout of every request (sent to the server as `?timeout=`, and enforced on the
    /// client). For streams and watches it bounds the wait for the response headers only.
    /// `None`, the default, means no timeout.
    pub timeout: Option<Duration>,
    /// Which proxy to use.
    pub proxy: Proxy,
    /// Where `Warning` headers go; `None` uses the default, which logs each distinct warning
    /// once.
    pub warning_handler: Option<Arc<dyn WarningHandler>>,
    /// Hooks for request metrics; `None` (the default) costs nothing.
    pub metrics: Option<Arc<dyn RequestMetrics>>,
    /// The default namespace of the context (or of the pod); see [`Config::namespace`].
    pub namespace: Option<String>,
    /// Speak only HTTP/1.1. The `DISABLE_HTTP2` environment variable has the same effect.
    pub disable_http2: bool,
    /// Speak only JSON: the typed clients of built-in kinds then never ask for protobuf
    /// (client-go's way is `ContentType: "application/json"`). By default they ask for
    /// `application/vnd.kubernetes.protobuf,application/json`, as client-go's do: the API
    /// server spends less CPU writing protobuf and sends fewer bytes.
    pub disable_protobuf: bool,
    /// Do not ask for gzip-compressed answers (client-go's `DisableCompression`). By default
    /// requests whose answer is read whole send `Accept-Encoding: gzip`, as Go's transport
    /// does for client-go, and kube-apiserver compresses answers of 128 KiB and more.
    pub disable_compression: bool,
}

/// HTTP basic-auth credentials.
#[derive(Clone, PartialEq, Eq)]
pub struct BasicAuth {
    /// The user name.
    pub username: String,
    /// The password.
    pub password: String,
}

impl fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BasicAuth")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Whom to impersonate (client-go's `rest.ImpersonationConfig`). Empty means nobody.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImpersonationConfig {
    /// The user (`Impersonate-User`).
    pub user: Option<String>,
    /// The user's UID (`Impersonate-Uid`).
    pub uid: Option<String>,
    /// The groups (one `Impersonate-Group` header each).
    pub groups: Vec<String>,
    /// Extra fields (`Impersonate-Extra-<key>` headers).
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

impl ImpersonationConfig {
    /// Whether anything is impersonated.
    pub fn is_empty(&self) -> bool {
        self.user.is_none() && self.uid.is_none() && self.groups.is_empty() && self.extra.is_empty()
    }
}

/// Which proxy requests go through. Its `Debug` output shows a proxy URL without its
/// password.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub enum Proxy {
    /// `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` (and their lower-case forms), as Go's
    /// `http.ProxyFromEnvironment`; the default.
    #[default]
    FromEnvironment,
    /// This proxy for every request (a kubeconfig cluster's `proxy-url`): `http://host:port`,
    /// optionally with `user:password@`.
    Url(String),
    /// No proxy, whatever the environment says.
    Direct,
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Proxy::FromEnvironment => f.write_str("FromEnvironment"),
            Proxy::Url(url) => f.debug_tuple("Url").field(&redacted_url(url)).finish(),
            Proxy::Direct => f.write_str("Direct"),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            host: String::new(),
            tls: TlsConfig::default(),
            bearer_token: None,
            bearer_token_file: None,
            basic_auth: None,
            exec: None,
            exec_timeout: Some(DEFAULT_EXEC_TIMEOUT),
            auth_provider: None,
            impersonate: ImpersonationConfig::default(),
            user_agent: None,
            qps: Some(DEFAULT_QPS),
            burst: DEFAULT_BURST,
            rate_limiter: None,
            timeout: None,
            proxy: Proxy::default(),
            warning_handler: None,
            metrics: None,
            namespace: None,
            disable_http2: false,
            disable_protobuf: false,
            disable_compression: false,
        }
    }
}

impl Config {
    /// A configuration for `host` with every other setting at its default.
    pub fn new(host: impl Into<String>) -> Self {
        Self {
            host: host.into(),
            ..Self::default()
        }
    }

    /// The default namespace: the kubeconfig context's, or in a pod the pod's, else
    /// [`DEFAULT_NAMESPACE`].
    pub fn namespace(&self) -> &str {
        self.namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
            .unwrap_or(DEFAULT_NAMESPACE)
    }

    /// Loads the kubeconfig named by `options` (or kubectl's default files) and builds the
    /// configuration of its context, as client-go's `DeferredLoadingClientConfig` does.
    pub fn from_kubeconfig(options: &KubeconfigOptions) -> Result<Self, Error> {
        options.load_config()
    }

    /// Builds the configuration of the current context of the kubeconfig file at `path`.
    pub fn from_kubeconfig_file(path: impl Into<PathBuf>) -> Result<Self, Error> {
        KubeconfigOptions {
            path: Some(path.into()),
            ..KubeconfigOptions::default()
        }
        .load_config()
    }

    /// The kubeconfig's configuration if a kubeconfig exists (`KUBECONFIG` or
    /// `~/.kube/config`), else the in-cluster configuration.
    ///
    /// As client-go's deferred loading does, a kubeconfig that exists but defines no usable
    /// cluster also falls back to the in-cluster configuration when running in a pod. A
    /// kubeconfig that is broken (bad YAML, a missing context) is an error, not a fallback.
    pub fn infer() -> Result<Self, Error> {
        match KubeconfigOptions::default().load_config() {
            Err(Error::Kubeconfig(KubeconfigError::Empty { .. })) if incluster::possible() => {
                Self::incluster()
            }
            Err(kc_err @ Error::Kubeconfig(KubeconfigError::Empty { .. })) => {
                Err(ConfigError::Infer {
                    kubeconfig: Box::new(kc_err),
                    in_cluster: Box::new(ConfigError::NotInCluster.into()),
                }
                .into())
            }
            other => other,
        }
    }

    /// Validates what can be checked without I/O: a parseable host, no token together with
    /// basic auth, no CA together with `insecure`, a key with every certificate.
    pub fn validate(&self) -> Result<(), Error> {
        crate::transport::url::BaseUrl::parse(&self.host, &self.tls)?;
        let has_token = self.bearer_token.as_deref().is_some_and(|t| !t.is_empty())
            || self.bearer_token_file.is_some();
        if has_token && self.basic_auth.is_some() {
            return Err(ConfigError::Invalid(
                "username/password or bearer token may be set, but not both".into(),
            )
            .into());
        }
        if self.tls.insecure && self.tls.has_ca() {
            return Err(ConfigError::Invalid(
                "specifying a root certificates file with the insecure flag is not allowed".into(),
            )
            .into());
        }
        if self.tls.has_cert() != (self.tls.key_data.is_some() || self.tls.key_file.is_some()) {
            return Err(ConfigError::Invalid(
                "a client certificate needs a key, and a key needs a certificate".into(),
            )
            .into());
        }
        if let Some(qps) = self.qps {
            if qps.is_nan() || qps.is_infinite() {
                return Err(ConfigError::Invalid(format!("invalid qps {qps}")).into());
            }
        }
        Ok(())
    }

    /// The effective QPS and burst: `None` when rate limiting is off.
    pub(crate) fn effective_rate_limit(&self) -> Option<(f32, u32)> {
        let qps = match self.qps {
            None => return None,
            Some(q) if q < 0.0 => return None,
            Some(0.0) => DEFAULT_QPS,
            Some(q) => q,
        };
        let burst = if self.burst == 0 {
            DEFAULT_BURST
        } else {
            self.burst
        };
        Some((qps, burst))
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("host", &redacted_url(&self.host))
            .field("tls", &self.tls)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("bearer_token_file", &self.bearer_token_file)
            .field("basic_auth", &self.basic_auth)
            .field("exec", &self.exec)
            .field("exec_timeout", &self.exec_timeout)
            .field("auth_provider", &self.auth_provider)
            .field("impersonate", &self.impersonate)
            .field("user_agent", &self.user_agent)
            .field("qps", &self.qps)
            .field("burst", &self.burst)
            .field("rate_limiter", &self.rate_limiter)
            .field("timeout", &self.timeout)
            .field("proxy", &self.proxy)
            .field(
                "warning_handler",
                &self.warning_handler.as_ref().map(|_| "<handler>"),
            )
            .field("metrics", &self.metrics.as_ref().map(|_| "<hooks>"))
            .field("namespace", &self.namespace)
            .field("disable_http2", &self.disable_http2)
            .field("disable_protobuf", &self.disable_protobuf)
            .field("disable_compression", &self.disable_compression)
            .finish()
    }
}

/// The `User-Agent` client-go would send, in kclient's spelling:
/// `<program>/<kclient version> (<os>/<arch>) kclient`, with Go's names for the OS and
/// architecture (`linux/amd64`).
pub fn default_user_agent() -> String {
    let program = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64",
        other => other,
    };
    format!(
        "{program}/v{} ({}/{arch}) kclient",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_client_go() {
        let c = Config::default();
        assert_eq!(c.qps, Some(5.0));
        assert_eq!(c.burst, 10);
        assert_eq!(c.timeout, None);
        assert_eq!(c.proxy, Proxy::FromEnvironment);
        assert_eq!(c.namespace(), "default");
        assert_eq!(c.exec_timeout, Some(Duration::from_secs(300)));
        assert!(!c.disable_http2);
        assert_eq!(DEFAULT_QPS, 5.0);
        assert_eq!(DEFAULT_BURST, 10);
    }

    #[test]
    fn effective_rate_limit_follows_client_go() {
        let mut c = Config::default();
        assert_eq!(c.effective_rate_limit(), Some((5.0, 10)));
        c.qps = Some(0.0);
        c.burst = 0;
        assert_eq!(
            c.effective_rate_limit(),
            Some((5.0, 10)),
            "zero means default"
        );
        c.qps = Some(-1.0);
        assert_eq!(c.effective_rate_limit(), None, "negative disables");
        c.qps = None;
        assert_eq!(c.effective_rate_limit(), None, "None disables");
        c.qps = Some(50.0);
        c.burst = 100;
        assert_eq!(c.effective_rate_limit(), Some((50.0, 100)));
    }

    #[test]
    fn debug_redacts_secrets() {
        let mut c = Config::new("https://h");
        c.bearer_token = Some("tok-secret".into());
        c.basic_auth = Some(BasicAuth {
            username: "admin".into(),
            password: "pw-secret".into(),
        });
        c.tls.key_data = Some(b"-----BEGIN PRIVATE KEY----- key-secret".to_vec());
        c.tls.cert_data = Some(b"cert".to_vec());
        c.proxy = Proxy::Url("http://bob:proxy-secret@proxy:3128".into());
        let debug = format!("{c:?}");
        for secret in ["tok-secret", "pw-secret", "key-secret", "proxy-secret"] {
            assert!(!debug.contains(secret), "{debug}");
        }
        assert!(debug.contains("admin") && debug.contains("bob") && debug.contains("proxy:3128"));
    }

    #[test]
    fn validation_rejects_conflicts() {
        let mut c = Config::new("https://h");
        c.bearer_token = Some("t".into());
        c.basic_auth = Some(BasicAuth {
            username: "u".into(),
            password: "p".into(),
        });
        assert!(c.validate().is_err());
        let mut c = Config::new("https://h");
        c.tls.insecure = true;
        c.tls.ca_data = Some(b"x".to_vec());
        assert!(c.validate().is_err());
        let mut c = Config::new("https://h");
        c.tls.cert_data = Some(b"x".to_vec());
        assert!(c.validate().is_err());
        assert!(Config::new("https://h").validate().is_ok());
        assert!(Config::new("").validate().is_err());
    }

    #[test]
    fn user_agent_has_client_go_shape() {
        let ua = default_user_agent();
        let (program_version, rest) = ua.split_once(' ').unwrap();
        assert!(program_version.contains("/v"), "{ua}");
        assert!(rest.starts_with('(') && rest.ends_with(") kclient"), "{ua}");
        assert!(!ua.contains("x86_64"), "Go's architecture names: {ua}");
    }
}
