//! kclient-rest: everything between a user's kubeconfig and a decoded response or watch stream.
//!
//! - [`Config`] says how to reach and authenticate to an API server. It comes from a kubeconfig
//!   ([`Config::from_kubeconfig`], loaded and merged exactly as kubectl does), from a pod's
//!   service account ([`Config::incluster`]), or from whichever applies ([`Config::infer`]).
//! - [`RestClient`] is the HTTP client of one server and identity: hyper with rustls (HTTP/1.1
//!   and HTTP/2 with keep-alive pings), one connection pool per distinct TLS configuration,
//!   bearer tokens (also re-read from a token file), client certificates (rotating when read
//!   from files: [`CERT_CALLBACK_REFRESH_DURATION`]; a CA file too: [`CA_REFRESH_DURATION`]),
//!   basic auth, exec
//!   credential plugins, impersonation, proxies, and one client-side token bucket
//!   ([`RateLimiter`], client-go's 5 QPS / burst 10 by default) shared by every request.
//! - [`Request`] builds a request the way the API is laid out (group-version, namespace,
//!   resource, name, subresource) and sends it with client-go's retries (`Retry-After` on 429
//!   and 5xx; connection resets on `GET`), returning bytes, a decoded value, a byte stream or a
//!   watch stream of [`kclient_core::WatchEvent`]s decoded incrementally. A request that
//!   [prefers protobuf](Request::accept_protobuf) (the typed clients of built-in kinds, the
//!   metadata client) asks for `application/vnd.kubernetes.protobuf,application/json` as
//!   client-go's do, and whatever the server answers is decoded by its `Content-Type`: objects,
//!   lists item by item (decoded as their bytes arrive) and watch frames with
//!   kclient-protobuf's codecs, `Status` errors in
//!   either encoding. [`Config::disable_protobuf`] forces JSON; a `406` makes the client speak
//!   JSON for its lifetime. Requests whose answer is read whole (and lists) ask for gzip, as
//!   Go's transport does for client-go, and inflate it as it arrives
//!   ([`Config::disable_compression`] turns that off). [`Request::upgrade`] switches a
//!   connection to another protocol (`101`; the WebSocket and SPDY of exec, attach and
//!   port-forward, which kclient-streaming speaks over it), over HTTP/1.1 with the same TLS,
//!   proxy and credentials.
//! - [`Error`] is typed: the server's `Status` ([`Error::Api`], with `is_not_found()` and the
//!   other [`kclient_core::ApiStatus`] predicates), TLS, connection, exec plugin, kubeconfig and
//!   timeout failures each have a variant, and every cause stays in the source chain.
//!
//! The defaults are client-go's (v0.35), each pinned by a test.
//!
//! The examples use the paths a program depending on the `kclient` facade writes
//! (`kclient::rest::…`); one depending on kclient-rest alone writes `kclient_rest::…`.
//!
//! ```no_run
//! # mod kclient { pub mod k8s_openapi { pub use ::k8s_openapi::*; } pub mod core { pub use ::kclient_core::*; } pub mod rest { pub use ::kclient_rest::*; } } // the facade's paths
//! use kclient::k8s_openapi::api::core::v1::ConfigMap;
//! use kclient::core::{GroupVersion, ListOptions, WatchEvent};
//! use kclient::rest::{Config, RestClient};
//! use futures::StreamExt;
//!
//! # async fn run() -> Result<(), kclient::rest::Error> {
//! let config = Config::infer()?;
//! let namespace = config.namespace().to_owned();
//! let client = RestClient::new(config)?.for_group_version(GroupVersion::new("", "v1"));
//!
//! let cm: ConfigMap = client
//!     .get()
//!     .namespace(&namespace)
//!     .resource("configmaps")
//!     .name("settings")
//!     .json()
//!     .await?;
//! println!("{:?}", cm.data);
//!
//! let options = ListOptions::default().allow_watch_bookmarks(true);
//! let mut events = client
//!     .get()
//!     .namespace(&namespace)
//!     .resource("configmaps")
//!     .params(options.watch_query_pairs())
//!     .watch::<ConfigMap>()
//!     .await?;
//! while let Some(event) = events.next().await {
//!     match event? {
//!         WatchEvent::Added(cm) | WatchEvent::Modified(cm) => println!("{:?}", cm.metadata.name),
//!         other => println!("{}", other.type_name()),
//!     }
//! }
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod auth;
mod client;
mod compression;
pub mod config;
pub mod error;
pub mod incluster;
pub mod kubeconfig;
mod list;
pub mod metrics;
mod protobuf;
pub mod rate_limit;
pub mod request;
pub mod resource_requests;
pub mod response;
pub mod retry;
#[cfg(test)]
mod test_runtime;
pub mod transport;
pub mod upgrade;
pub mod warnings;
pub mod watch;

pub use auth::exec::{ExecError, EXEC_INFO_ENV, SUPPORTED_EXEC_VERSIONS};
pub use auth::impersonation::{
    IMPERSONATE_EXTRA_PREFIX, IMPERSONATE_GROUP, IMPERSONATE_UID, IMPERSONATE_USER,
};
pub use auth::token_file::{TOKEN_FILE_LEEWAY, TOKEN_FILE_REFRESH};
pub use client::RestClient;
pub use compression::DEFAULT_MAX_INFLATED_LEN;
pub use config::{
    default_user_agent, BasicAuth, Config, ConfigError, ImpersonationConfig, Proxy, TlsConfig,
    DEFAULT_BURST, DEFAULT_EXEC_TIMEOUT, DEFAULT_NAMESPACE, DEFAULT_QPS,
};
pub use error::Error;
/// The HTTP method of a [`RestClient::request`] (the `http` crate's, so callers need not depend
/// on it).
pub use http::Method;
pub use kubeconfig::{Kubeconfig, KubeconfigError, KubeconfigOptions, LoadingRules};
pub use metrics::RequestMetrics;
pub use protobuf::{PROTOBUF_ACCEPT, PROTOBUF_MEDIA_TYPE};
pub use rate_limit::RateLimiter;
pub use request::{AsPatch, ByteStream, Request};
pub use resource_requests::{object_name, RefusedRequest, ResourceRequests};
pub use response::Response;
pub use retry::DEFAULT_MAX_RETRIES;
pub use transport::ca_rotation::CA_REFRESH_DURATION;
pub use transport::cert_rotation::CERT_CALLBACK_REFRESH_DURATION;
pub use transport::connector::{DIAL_TIMEOUT, TCP_KEEPALIVE, TLS_HANDSHAKE_TIMEOUT};
pub use transport::pool::{
    HTTP2_PING_TIMEOUT, HTTP2_READ_IDLE_TIMEOUT, IDLE_CONN_TIMEOUT, MAX_IDLE_CONNS_PER_HOST,
};
pub use transport::tls::TlsError;
pub use upgrade::{Upgraded, UpgradedConnection};
pub use warnings::{DedupWarningLogger, NoWarnings, Warning, WarningHandler};
