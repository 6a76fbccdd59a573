//! [`RestClient`]: the HTTP client of one API server (client-go's `rest.RESTClient`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http::Method;
use kclient_core::GroupVersion;

use crate::config::Config;
use crate::error::Error;
use crate::metrics::RequestMetrics;
use crate::rate_limit::RateLimiter;
use crate::request::{AsPatch, Request};
use crate::transport::Transport;
use crate::warnings::{DedupWarningLogger, WarningHandler};

/// A client for one API server and identity: a connection pool, credentials, and one
/// client-side rate limiter shared by every request.
///
/// Cloning is cheap, and clones (including those from
/// [`for_group_version`](Self::for_group_version)) share the pool and the rate limiter. Requests
/// are built with [`get`](Self::get), [`post`](Self::post), [`put`](Self::put),
/// [`patch`](Self::patch), [`delete`](Self::delete) or [`request`](Self::request).
///
/// ```no_run
/// use k8s_openapi::api::core::v1::Pod;
/// use kclient_core::{GroupVersion, ObjectList};
/// use kclient_rest::{Config, RestClient};
///
/// # async fn run() -> Result<(), kclient_rest::Error> {
/// let client = RestClient::new(Config::infer()?)?;
/// let pods: ObjectList<Pod> = client
///     .get()
///     .group_version(&GroupVersion::new("", "v1"))
///     .namespace("kube-system")
///     .resource("pods")
///     .param("limit", "10")
///     .json()
///     .await?;
/// println!("{} pods", pods.items.len());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RestClient {
    inner: Arc<Inner>,
    group_version: Option<GroupVersion>,
}

pub(crate) struct Inner {
    pub(crate) transport: Transport,
    pub(crate) rate_limiter: Option<RateLimiter>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) warning_handler: Arc<dyn WarningHandler>,
    pub(crate) metrics: Option<Arc<dyn RequestMetrics>>,
    pub(crate) config: Config,
    /// Set when the server answered a protobuf-first request with `406 Not Acceptable`: the
    /// client speaks JSON from then on.
    protobuf_refused: AtomicBool,
}

impl std::fmt::Debug for RestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestClient")
            .field(
                "base_url",
                &self.inner.transport.base().to_redacted_string(),
            )
            .field("group_version", &self.group_version)
            .field("rate_limiter", &self.inner.rate_limiter)
            .field("timeout", &self.inner.timeout)
            .finish()
    }
}

/// The process-wide default warning handler, so each distinct warning is logged once.
fn default_warning_handler() -> Arc<dyn WarningHandler> {
    static DEFAULT: OnceLock<Arc<DedupWarningLogger>> = OnceLock::new();
    DEFAULT
        .get_or_init(|| Arc::new(DedupWarningLogger::new()))
        .clone()
}

impl RestClient {
    /// A client for `config`. Reads certificate files and builds (or reuses) the connection
    /// pool for its TLS settings; does not contact the server.
    pub fn new(config: Config) -> Result<Self, Error> {
        let transport = Transport::new(&config)?;
        let rate_limiter = match (&config.rate_limiter, config.effective_rate_limit()) {
            (Some(shared), _) => Some(shared.clone()),
            (None, Some((qps, burst))) => Some(RateLimiter::new(qps, burst)?),
            (None, None) => None,
        };
        Ok(Self {
            inner: Arc::new(Inner {
                transport,
                rate_limiter,
                timeout: config.timeout.filter(|t| !t.is_zero()),
                warning_handler: config
                    .warning_handler
                    .clone()
                    .unwrap_or_else(default_warning_handler),
                metrics: config.metrics.clone(),
                config,
                protobuf_refused: AtomicBool::new(false),
            }),
            group_version: None,
        })
    }

    /// The same client with a default group-version, so requests need not name one (client-go's
    /// versioned `RESTClientFor`). Shares the pool and the rate limiter.
    pub fn for_group_version(&self, group_version: GroupVersion) -> Self {
        Self {
            inner: self.inner.clone(),
            group_version: Some(group_version),
        }
    }

    /// The default group-version, if any.
    pub fn group_version(&self) -> Option<&GroupVersion> {
        self.group_version.as_ref()
    }

    /// The client-side rate limiter, `None` when rate limiting is off.
    pub fn rate_limiter(&self) -> Option<&RateLimiter> {
        self.inner.rate_limiter.as_ref()
    }

    /// The configuration the client was built from.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The default namespace of the configuration ([`Config::namespace`]).
    pub fn default_namespace(&self) -> &str {
        self.inner.config.namespace()
    }

    /// The server's base URL, with its path prefix.
    pub fn base_url(&self) -> String {
        self.inner.transport.base().to_url_string()
    }

    /// Whether two clients share one connection pool and client state.
    pub fn shares_state_with(&self, other: &RestClient) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Whether requests that prefer protobuf ask for it: not when the configuration says
    /// [`disable_protobuf`](Config::disable_protobuf), nor after the server refused it with a
    /// `406` (the client and its clones then speak JSON for their lifetime).
    pub fn speaks_protobuf(&self) -> bool {
        !self.inner.config.disable_protobuf && !self.inner.protobuf_refused.load(Ordering::Relaxed)
    }

    /// Stops asking for protobuf (after the server refused it).
    pub(crate) fn refuse_protobuf(&self) {
        if !self.inner.protobuf_refused.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                server = %self.inner.transport.base().to_redacted_string(),
                "the server refused protobuf (406 Not Acceptable): this client speaks JSON from now on"
            );
        }
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }

    /// A request with any method.
    pub fn request(&self, method: Method) -> Request {
        Request::new(self.clone(), method, self.group_version.clone())
    }

    /// A `GET` request.
    pub fn get(&self) -> Request {
        self.request(Method::GET)
    }

    /// A `POST` request.
    pub fn post(&self) -> Request {
        self.request(Method::POST)
    }

    /// A `PUT` request.
    pub fn put(&self) -> Request {
        self.request(Method::PUT)
    }

    /// A `DELETE` request.
    pub fn delete(&self) -> Request {
        self.request(Method::DELETE)
    }

    /// A `PATCH` request with the content type of `patch`: a [`PatchType`](kclient_core::PatchType)
    /// sets only the content type; a [`&Patch`](kclient_core::Patch) also sets the body.
    pub fn patch(&self, patch: impl AsPatch) -> Request {
        self.request(Method::PATCH).with_patch(patch)
    }
}
