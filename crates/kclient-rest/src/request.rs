//! [`Request`]: the request builder (client-go's `rest.Request`) and its terminals.
//!
//! A request is addressed the way the API is laid out:
//! `<prefix>/namespaces/<namespace>/<resource>/<name>/<subresource>`, where the prefix is
//! `/api/v1` or `/apis/<group>/<version>` from the group-version (or anything given with
//! [`abs_path`](Request::abs_path)). Builder mistakes (an invalid name, a bad header) are
//! remembered and returned by the terminal, so building never fails half-way.
//!
//! Every terminal waits for the client-side rate limiter, sends, and retries as
//! [`retry`](crate::retry) describes; each runs in a `tracing` span with the verb, path, status
//! and latency.

use std::time::Duration;

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt};
use http::header::{ACCEPT, ACCEPT_ENCODING, CONNECTION, CONTENT_TYPE, UPGRADE};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use http_body_util::{BodyExt, BodyStream, Limited};
use hyper::body::Incoming;
use kclient_core::{ApiResource, GroupVersion, Patch, PatchType, WatchStream, MAX_GO_DURATION};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::time::Instant;
use tracing::Instrument as _;

use crate::client::RestClient;
use crate::compression;
use crate::error::Error;
use crate::protobuf::{self, PROTOBUF_ACCEPT};
use crate::response::{decode_json, error_from_response, Response};
use crate::retry::{Failure, Retry, RetryState, DEFAULT_MAX_RETRIES};
use crate::transport::url::{encode_path, encode_query, redacted_uri};
use crate::transport::{is_connection_reset_or_eof, is_network_timeout, OutgoingRequest};
use crate::upgrade::Upgraded;
use crate::warnings::{parse_warning_headers, Warning};
use crate::watch::{decode_watch, DEFAULT_MAX_WATCH_FRAME_LEN};

/// A rate-limiter wait longer than this is logged (client-go's `longThrottleLatency`).
pub const LONG_THROTTLE_LATENCY: Duration = Duration::from_millis(50);
/// A rate-limiter wait longer than this is logged at `info` (`extraLongThrottleLatency`).
pub const EXTRA_LONG_THROTTLE_LATENCY: Duration = Duration::from_secs(1);
/// The `Accept` header sent unless the request sets one (client-go's default for JSON).
pub const DEFAULT_ACCEPT: &str = "application/json, */*";
/// The most of an error body read to build the error (larger bodies are cut).
const MAX_ERROR_BODY: usize = 1024 * 1024;

/// A stream of response body chunks.
pub type ByteStream = BoxStream<'static, Result<Bytes, Error>>;

/// A request being built. Finish it with [`send`](Self::send), [`bytes`](Self::bytes),
/// [`json`](Self::json), [`stream`](Self::stream), [`watch`](Self::watch) or
/// [`upgrade`](Self::upgrade).
#[must_use = "a request does nothing until a terminal (send, json, watch ...) is awaited"]
pub struct Request {
    client: RestClient,
    method: Method,
    prefix: Option<String>,
    abs_path: Option<String>,
    namespace: Option<String>,
    resource: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
    suffix: Vec<String>,
    params: Vec<(String, String)>,
    headers: HeaderMap,
    body: Option<Bytes>,
    timeout: Option<Duration>,
    max_retries: u32,
    max_frame_len: usize,
    omit_managed_fields: bool,
    negotiation: Option<Negotiation>,
    error: Option<Error>,
}

/// The `Accept` headers of a request that prefers protobuf: the one it sends while the client
/// speaks protobuf, and the JSON one otherwise.
#[derive(Clone, Copy, Debug)]
struct Negotiation {
    protobuf: &'static str,
    json: &'static str,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method)
            .field("path", &self.path())
            .field("params", &self.params)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .finish_non_exhaustive()
    }
}

/// What can set the type (and possibly the body) of a `PATCH`: a [`PatchType`], or a
/// [`&Patch`](Patch) whose body is serialized too.
pub trait AsPatch {
    /// The patch type.
    fn patch_type(&self) -> PatchType;
    /// The body, if this value carries one.
    fn patch_body(&self) -> Option<Result<Vec<u8>, serde_json::Error>>;
}

impl AsPatch for PatchType {
    fn patch_type(&self) -> PatchType {
        *self
    }
    fn patch_body(&self) -> Option<Result<Vec<u8>, serde_json::Error>> {
        None
    }
}

impl AsPatch for &PatchType {
    fn patch_type(&self) -> PatchType {
        **self
    }
    fn patch_body(&self) -> Option<Result<Vec<u8>, serde_json::Error>> {
        None
    }
}

impl<T: Serialize> AsPatch for &Patch<T> {
    fn patch_type(&self) -> PatchType {
        Patch::patch_type(self)
    }
    fn patch_body(&self) -> Option<Result<Vec<u8>, serde_json::Error>> {
        Some(self.to_body())
    }
}

/// client-go's `IsValidPathSegmentName`: not `.` or `..`, and no `/` or `%`.
fn check_segment(kind: &str, value: &str) -> Result<(), Error> {
    if value == "." || value == ".." {
        return Err(Error::InvalidRequest(format!(
            "invalid {kind} {value:?}: may not be '.' or '..'"
        )));
    }
    if value.contains('/') || value.contains('%') {
        return Err(Error::InvalidRequest(format!(
            "invalid {kind} {value:?}: may not contain '/' or '%'"
        )));
    }
    Ok(())
}

/// Which terminal runs the request (how it reads the response, and so which failures the
/// retry decision may retry).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// Read the whole body.
    Full,
    /// Hand the body over as a stream.
    Stream,
    /// Hand the body over as a watch.
    Watch,
    /// Upgrade the connection (`101 Switching Protocols`) and hand it over.
    Upgrade,
}

/// A response whose body has not been read.
struct Streaming {
    response: http::Response<Incoming>,
    url: String,
}

impl Request {
    pub(crate) fn new(client: RestClient, method: Method, gv: Option<GroupVersion>) -> Self {
        let timeout = client.inner().timeout;
        Self {
            client,
            method,
            prefix: gv.map(|gv| gv.url_prefix()),
            abs_path: None,
            namespace: None,
            resource: None,
            name: None,
            subresource: None,
            suffix: Vec::new(),
            params: Vec::new(),
            headers: HeaderMap::new(),
            body: None,
            timeout,
            max_retries: DEFAULT_MAX_RETRIES,
            max_frame_len: DEFAULT_MAX_WATCH_FRAME_LEN,
            omit_managed_fields: false,
            negotiation: None,
            error: None,
        }
    }

    fn fail(mut self, error: Error) -> Self {
        if self.error.is_none() {
            self.error = Some(error);
        }
        self
    }

    /// Checks a path segment, recording the error; returns whether it is valid.
    fn check(&mut self, kind: &str, value: &str) -> bool {
        match check_segment(kind, value) {
            Ok(()) => true,
            Err(e) => {
                self.error.get_or_insert(e);
                false
            }
        }
    }

    /// Addresses the group-version: `/api/v1` for the core group, `/apis/<group>/<version>`
    /// otherwise.
    pub fn group_version(mut self, gv: &GroupVersion) -> Self {
        self.prefix = Some(gv.url_prefix());
        self
    }

    /// Addresses a resource: its group-version and plural (the namespace is still set with
    /// [`namespace`](Self::namespace), and is ignored for cluster-scoped resources).
    pub fn api_resource(mut self, resource: &ApiResource) -> Self {
        self.prefix = Some(resource.group_version().url_prefix());
        let namespaced = resource.namespaced;
        let mut r = self.resource(&resource.plural);
        if !namespaced {
            r.namespace = None;
        }
        r
    }

    /// The namespace (client-go's `Namespace`). An empty namespace addresses all namespaces for
    /// lists, and is an error for creates and for named gets, updates and deletes.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        let namespace = namespace.into();
        if namespace.is_empty() || self.check("namespace", &namespace) {
            self.namespace = Some(namespace);
        }
        self
    }

    /// The namespace, only if it is `Some` (client-go's `NamespaceIfScoped`).
    pub fn namespace_opt(self, namespace: Option<&str>) -> Self {
        match namespace {
            Some(ns) => self.namespace(ns),
            None => self,
        }
    }

    /// The resource's plural name (`pods`); lower-cased, as client-go does.
    pub fn resource(mut self, resource: impl AsRef<str>) -> Self {
        let resource = resource.as_ref().to_ascii_lowercase();
        if self.check("resource", &resource) {
            self.resource = Some(resource).filter(|s| !s.is_empty());
        }
        self
    }

    /// The object's name. It may not be empty.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        if name.is_empty() {
            return self.fail(Error::InvalidRequest(
                "resource name may not be empty".into(),
            ));
        }
        if self.check("name", &name) {
            self.name = Some(name);
        }
        self
    }

    /// A subresource (`status`, `scale`, `log`, `eviction` ...).
    pub fn subresource(mut self, subresource: impl Into<String>) -> Self {
        let subresource = subresource.into();
        if self.check("subresource", &subresource) {
            self.subresource = Some(subresource).filter(|s| !s.is_empty());
        }
        self
    }

    /// Path segments after the subresource (client-go's `Suffix`, for proxy paths).
    pub fn suffix<I, S>(mut self, segments: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.suffix.extend(segments.into_iter().map(Into::into));
        self
    }

    /// An absolute path under the server's base URL, replacing the group-version prefix
    /// (`/version`, `/apis`, `/openapi/v3` ...). A trailing `/` is kept.
    pub fn abs_path(mut self, path: impl Into<String>) -> Self {
        self.abs_path = Some(path.into());
        self
    }

    /// Adds a query parameter. Repeated keys are all sent.
    pub fn param(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.params.push((key.into(), value.into()));
        self
    }

    /// Adds query parameters, such as kclient-core's `ListOptions::query_pairs()`.
    pub fn params<I, K, V>(mut self, pairs: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.params
            .extend(pairs.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// Sets a header, replacing any earlier value. A header the transport would add
    /// (`Authorization`, `User-Agent`, `Impersonate-User`) set here wins over the client's.
    pub fn header(self, name: impl AsRef<str>, value: impl AsRef<str>) -> Self {
        let name = match HeaderName::from_bytes(name.as_ref().as_bytes()) {
            Ok(n) => n,
            Err(_) => {
                let msg = format!("invalid header name {:?}", name.as_ref());
                return self.fail(Error::InvalidRequest(msg));
            }
        };
        let value = match HeaderValue::from_str(value.as_ref()) {
            Ok(v) => v,
            Err(_) => {
                let msg = format!("invalid value for header {name}");
                return self.fail(Error::InvalidRequest(msg));
            }
        };
        let mut r = self;
        r.headers.insert(name, value);
        r
    }

    /// The body, as bytes (sent as `application/json` unless a `Content-Type` is set).
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = Some(body.into());
        self
    }

    /// The body, serialized as JSON.
    pub fn json_body<T: Serialize + ?Sized>(self, value: &T) -> Self {
        match serde_json::to_vec(value) {
            Ok(bytes) => self.body(bytes),
            Err(e) => self.fail(Error::Serialize(e)),
        }
    }

    /// Sets the patch content type, and the body when `patch` carries one.
    pub(crate) fn with_patch(self, patch: impl AsPatch) -> Self {
        let r = self.header(CONTENT_TYPE.as_str(), patch.patch_type().content_type());
        match patch.patch_body() {
            Some(Ok(body)) => r.body(body),
            Some(Err(e)) => r.fail(Error::Serialize(e)),
            None => r,
        }
    }

    /// The timeout of this request, replacing the client's: sent as `?timeout=` and enforced on
    /// the client (for streams and watches, up to the response headers).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout).filter(|t| !t.is_zero());
        self
    }

    /// The most retries after `Retry-After` responses and connection errors
    /// ([`DEFAULT_MAX_RETRIES`]); 0 disables retries.
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// The largest watch event accepted ([`DEFAULT_MAX_WATCH_FRAME_LEN`]).
    pub fn max_watch_frame_len(mut self, bytes: usize) -> Self {
        self.max_frame_len = bytes;
        self
    }

    /// Decodes the objects of [`fetch_list`](Self::fetch_list) and [`watch`](Self::watch)
    /// without `metadata.managedFields`, skipping that part of the response (kclient-core's
    /// `WithoutManagedFields`; `ListOptions::omit_managed_fields` asks for it). Off by default.
    pub fn omit_managed_fields(mut self, omit: bool) -> Self {
        self.omit_managed_fields = omit;
        self
    }

    /// Prefers protobuf (client-go's generated clients of built-in kinds): asks for
    /// `application/vnd.kubernetes.protobuf,application/json` while the client
    /// [speaks protobuf](RestClient::speaks_protobuf), else for JSON. The terminals decode
    /// whatever comes back, by its `Content-Type`; [`decode`](Self::decode),
    /// [`fetch_list`](Self::fetch_list) and [`watch`](Self::watch) need a type with a protobuf
    /// codec (kclient-protobuf's registry) for a protobuf answer. A `406` answer makes the
    /// client speak JSON from then on, and a `GET` is sent again at once in JSON. An `Accept`
    /// header set on the request wins.
    pub fn accept_protobuf(self) -> Self {
        self.negotiate(PROTOBUF_ACCEPT, DEFAULT_ACCEPT)
    }

    /// [`accept_protobuf`](Self::accept_protobuf) with other `Accept` headers: `protobuf` while
    /// the client speaks protobuf, `json` otherwise (the metadata client's conversions).
    pub fn negotiate(mut self, protobuf: &'static str, json: &'static str) -> Self {
        self.negotiation = Some(Negotiation { protobuf, json });
        self
    }

    /// The request path (before the base URL's prefix), unencoded.
    pub fn path(&self) -> String {
        self.build_path(false)
    }

    /// The path with the namespace and name replaced by `{namespace}` and `{name}` (a metrics
    /// label with bounded cardinality, as client-go's `finalURLTemplate`).
    pub fn url_template(&self) -> String {
        self.build_path(true)
    }

    fn build_path(&self, template: bool) -> String {
        let base = self.client.inner().transport.base().prefix();
        let mut p = String::from(base);
        let push = |p: &mut String, seg: &str| {
            for part in seg.split('/').filter(|s| !s.is_empty()) {
                p.push('/');
                p.push_str(part);
            }
        };
        let trailing_slash = match &self.abs_path {
            Some(abs) => {
                push(&mut p, abs);
                abs.ends_with('/') && abs.len() > 1
            }
            None => {
                if let Some(prefix) = &self.prefix {
                    push(&mut p, prefix);
                }
                false
            }
        };
        if let Some(ns) = self.namespace.as_deref().filter(|n| !n.is_empty()) {
            push(&mut p, "namespaces");
            push(&mut p, if template { "{namespace}" } else { ns });
        }
        if let Some(resource) = &self.resource {
            push(&mut p, resource);
        }
        if let Some(name) = &self.name {
            push(&mut p, if template { "{name}" } else { name });
        }
        if let Some(sub) = &self.subresource {
            push(&mut p, sub);
        }
        for s in &self.suffix {
            push(&mut p, s);
        }
        if p.is_empty() || trailing_slash {
            p.push('/');
        }
        p
    }

    /// client-go's `requestPreflightCheck`: an explicitly empty namespace is refused where it
    /// cannot mean "all namespaces".
    fn preflight(&self) -> Result<(), Error> {
        if self.namespace.as_deref() != Some("") {
            return Ok(());
        }
        let named = self.name.is_some();
        match self.method {
            Method::POST => Err(Error::InvalidRequest(
                "an empty namespace may not be set during creation".into(),
            )),
            Method::GET | Method::PUT | Method::DELETE if named => Err(Error::InvalidRequest(
                "an empty namespace may not be set when a resource name is provided".into(),
            )),
            _ => Ok(()),
        }
    }

    /// The request as the transport sends it.
    fn outgoing(&self, mode: Mode) -> Result<OutgoingRequest, Error> {
        let mut params = self.params.clone();
        if let Some(t) = self.timeout {
            params.retain(|(k, _)| k != "timeout");
            params.push(("timeout".into(), go_duration(t)));
        }
        let uri = self
            .client
            .inner()
            .transport
            .base()
            .uri(&encode_path(&self.path()), &encode_query(&params))?;
        let mut headers = self.headers.clone();
        let accept = match self.negotiation {
            Some(n) if self.client.speaks_protobuf() => n.protobuf,
            Some(n) => n.json,
            None => DEFAULT_ACCEPT,
        };
        headers
            .entry(ACCEPT)
            .or_insert(HeaderValue::from_static(accept));
        if mode == Mode::Upgrade {
            headers
                .entry(CONNECTION)
                .or_insert(HeaderValue::from_static("Upgrade"));
        }
        if mode == Mode::Full && !self.client.config().disable_compression {
            headers
                .entry(ACCEPT_ENCODING)
                .or_insert(HeaderValue::from_static(compression::ACCEPT_ENCODING));
        }
        if self.body.is_some() {
            headers
                .entry(CONTENT_TYPE)
                .or_insert(HeaderValue::from_static("application/json"));
        }
        Ok(OutgoingRequest {
            method: self.method.clone(),
            uri,
            headers,
            body: self.body.clone().unwrap_or_default(),
            http1_only: mode == Mode::Upgrade,
        })
    }

    /// Sends the request and reads the whole response. A non-2xx answer is an error: the
    /// server's `Status` as [`Error::Api`], or [`Error::HttpStatus`] for other bodies.
    pub async fn send(self) -> Result<Response, Error> {
        match self.run(Mode::Full).await? {
            Outcome::Full(r) => Ok(r),
            Outcome::Streaming(_) => {
                Err(Error::InvalidRequest("internal: unexpected stream".into()))
            }
        }
    }

    /// Sends the request and returns the body.
    pub async fn bytes(self) -> Result<Bytes, Error> {
        Ok(self.send().await?.into_body())
    }

    /// Sends the request and decodes the body as JSON.
    pub async fn json<K: DeserializeOwned>(self) -> Result<K, Error> {
        let response = self.send().await?;
        decode_json(response.body())
    }

    /// Sends the request and decodes the body by its `Content-Type`: protobuf with `K`'s codec
    /// (see [`accept_protobuf`](Self::accept_protobuf)), JSON otherwise.
    pub async fn decode<K: DeserializeOwned + 'static>(self) -> Result<K, Error> {
        self.send().await?.decode()
    }

    /// Sends a list request and reads the whole body, leaving its items to decode later: the
    /// list's metadata is read ahead (kclient-core's `peek_list_metadata`), so that a pager can
    /// request the next page while this one decodes. A body whose metadata cannot be read is
    /// decoded at once, to report the error as [`json`](Self::json) does. A protobuf answer
    /// (see [`accept_protobuf`](Self::accept_protobuf)) is read the same way, item by item.
    pub async fn fetch_list<K>(self) -> Result<kclient_core::FetchedList<K, Error>, Error>
    where
        K: DeserializeOwned + Send + 'static,
    {
        use kclient_core::object_list::{
            decode_list_mapped, decode_list_mapped_without_managed_fields, peek_list_metadata,
        };
        use kclient_core::{FetchedList, ObjectList};
        let omit = self.omit_managed_fields;
        let decode = move |json: &[u8], sink: &mut dyn FnMut(K)| {
            if omit {
                decode_list_mapped_without_managed_fields(json, sink)
            } else {
                decode_list_mapped(json, sink)
            }
        };
        let response = self.send().await?;
        if protobuf::is_protobuf(response.content_type(), response.body()) {
            return protobuf::fetched_list(response.into_body(), omit);
        }
        let body = response.into_body();
        let what = std::any::type_name::<ObjectList<K>>();
        let metadata = peek_list_metadata(&body);
        let peeked = metadata.is_ok();
        let fetched = FetchedList::encoded(metadata.unwrap_or_default(), move |sink| {
            crate::response::decode_with(&body, what, |json| decode(json, sink))
        });
        if peeked {
            Ok(fetched)
        } else {
            fetched.decode().map(FetchedList::decoded)
        }
    }

    /// Sends the request and returns the body as a stream of chunks (logs, proxied data). The
    /// response head must be 2xx; the timeout bounds only the wait for it.
    pub async fn stream(self) -> Result<ByteStream, Error> {
        match self.run(Mode::Stream).await? {
            Outcome::Streaming(s) => Ok(body_stream(s)),
            Outcome::Full(r) => Ok(futures::stream::once(async move { Ok(r.into_body()) }).boxed()),
        }
    }

    /// Starts a watch: add `watch=true` (for example with `ListOptions::watch_query_pairs()`)
    /// and get a stream of events, decoded incrementally. The stream ends when the server
    /// closes the watch; a malformed or truncated frame yields an error and ends it.
    ///
    /// As in client-go, a watch whose connection broke before the response (reset, EOF, a
    /// network timeout) and could not be retried yields an empty stream rather than an error:
    /// the caller simply watches again.
    pub async fn watch<K>(self) -> Result<WatchStream<K, Error>, Error>
    where
        K: DeserializeOwned + Send + 'static,
    {
        let (max_frame_len, omit) = (self.max_frame_len, self.omit_managed_fields);
        match self.run(Mode::Watch).await {
            Ok(Outcome::Streaming(s)) => {
                let content_type = s.response.headers().get(CONTENT_TYPE);
                let content_type = content_type.and_then(|v| v.to_str().ok());
                Ok(if protobuf::is_protobuf(content_type, b"") {
                    protobuf::decode_watch(body_stream(s), max_frame_len, omit)
                } else {
                    decode_watch(body_stream(s), max_frame_len, omit)
                })
            }
            Ok(Outcome::Full(_)) => Err(Error::InvalidRequest(
                "internal: unexpected full body".into(),
            )),
            Err(e) if is_connection_reset_or_eof(&e) || is_network_timeout(&e) => {
                tracing::debug!(error = %e, "watch connection broke before the response; returning an empty watch");
                Ok(futures::stream::empty().boxed())
            }
            Err(e) => Err(e),
        }
    }

    /// Upgrades the connection to another protocol (client-go's upgrading round trippers:
    /// the WebSocket and SPDY dialers of `remotecommand` and `portforward`): sends the
    /// request over HTTP/1.1 (a connection of its own, with the client's TLS, proxy,
    /// credentials and impersonation; HTTP/2 has no upgrade) with `Connection: Upgrade` and
    /// the `Upgrade` header the caller set (with the protocol's own headers), and returns the
    /// connection once the server answers `101 Switching Protocols`.
    ///
    /// Any other answer is an error: the server's `Status` as [`Error::Api`], or
    /// [`Error::HttpStatus`] with the start of the body (a `2xx` too: the server did not
    /// switch). The timeout bounds the wait for the answer only; answers with `Retry-After`
    /// are retried as every request's are, a broken connection is not.
    pub async fn upgrade(self) -> Result<Upgraded, Error> {
        if !self.headers.contains_key(UPGRADE) {
            return Err(Error::InvalidRequest(
                "an upgrade request needs an Upgrade header".into(),
            ));
        }
        match self.run(Mode::Upgrade).await? {
            Outcome::Streaming(s) => Upgraded::from_response(s.response, s.url).await,
            Outcome::Full(_) => Err(Error::InvalidRequest(
                "internal: unexpected full body".into(),
            )),
        }
    }

    async fn run(mut self, mode: Mode) -> Result<Outcome, Error> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.preflight()?;
        let outgoing = self.outgoing(mode)?;
        let result = self.send_outgoing(mode, &outgoing).await;
        match result {
            Err(e) if e.http_code() == Some(406) && self.asked_for_protobuf(&outgoing) => {
                self.client.refuse_protobuf();
                // A read is sent again in JSON; a write may have happened before the server
                // failed to encode its answer, so it is not repeated.
                if self.method == Method::GET {
                    let outgoing = self.outgoing(mode)?;
                    self.send_outgoing(mode, &outgoing).await
                } else {
                    Err(e)
                }
            }
            result => result,
        }
    }

    /// Whether `outgoing` asked for protobuf on this request's behalf (not an `Accept`
    /// header the caller set).
    fn asked_for_protobuf(&self, outgoing: &OutgoingRequest) -> bool {
        self.negotiation.is_some_and(|n| {
            !self.headers.contains_key(ACCEPT)
                && outgoing
                    .headers
                    .get(ACCEPT)
                    .is_some_and(|a| a == n.protobuf)
        })
    }

    /// Sends `outgoing`, retrying as the retry policy says, in a span with its metrics.
    async fn send_outgoing(
        &self,
        mode: Mode,
        outgoing: &OutgoingRequest,
    ) -> Result<Outcome, Error> {
        let span = tracing::debug_span!(
            "kclient_rest.request",
            verb = %outgoing.method,
            path = %outgoing.uri.path(),
            status = tracing::field::Empty,
            retries = tracing::field::Empty,
            latency_ms = tracing::field::Empty,
        );
        let metrics = self.client.inner().metrics.clone();
        let template = metrics.as_ref().map(|_| self.url_template());
        let start = Instant::now();
        // Boxed: the future of the attempts (the retry loop, the transport's send, the body
        // read) is deep, and every caller's future would carry its whole type; behind one
        // allocation per request, the futures of programs built on the clients stay within
        // the compiler's layout depth limit (the kubectl_get example's main went past it).
        let result = Box::pin(
            self.attempts(mode, outgoing, template.as_deref())
                .instrument(span.clone()),
        )
        .await;
        let latency = start.elapsed();
        span.record("latency_ms", latency.as_millis() as u64);
        if let (Some(m), Some(t)) = (&metrics, &template) {
            m.request_latency(outgoing.method.as_str(), t, latency);
        }
        result
    }

    /// Waits for the rate limiter; logs long waits.
    async fn throttle(
        &self,
        outgoing: &OutgoingRequest,
        template: Option<&str>,
        deadline: Option<Instant>,
        reason: Option<&str>,
    ) -> Result<(), Error> {
        let inner = self.client.inner();
        let Some(limiter) = &inner.rate_limiter else {
            return Ok(());
        };
        let waited = limiter
            .acquire_before(deadline)
            .await
            .map_err(|e| Error::RateLimited {
                wait: e.wait,
                remaining: e.remaining,
            })?;
        if waited > LONG_THROTTLE_LATENCY {
            let reason = reason.unwrap_or("client-side throttling, not priority and fairness");
            if waited > EXTRA_LONG_THROTTLE_LATENCY {
                tracing::info!(delay = ?waited, reason, verb = %outgoing.method, url = %redacted_uri(&outgoing.uri), "Waited before sending request");
            } else {
                tracing::debug!(delay = ?waited, reason, verb = %outgoing.method, url = %redacted_uri(&outgoing.uri), "Waited before sending request");
            }
        }
        if let (Some(m), Some(t)) = (&inner.metrics, template) {
            m.rate_limiter_latency(outgoing.method.as_str(), t, waited);
        }
        Ok(())
    }

    /// Sends the request until an attempt succeeds, fails for good, or the deadline passes:
    /// the first rate-limiter wait, then [`attempt`](Self::attempt) after attempt, waiting
    /// between them as the retry decision ([`RetryState::decide`]) says.
    async fn attempts(
        &self,
        mode: Mode,
        outgoing: &OutgoingRequest,
        template: Option<&str>,
    ) -> Result<Outcome, Error> {
        // As client-go, the first wait for the rate limiter does not count against the timeout.
        self.throttle(outgoing, template, None, None).await?;
        let deadline = Deadline::starting_now(self.timeout);
        let mut retry = RetryState::new(self.max_retries);
        let mut previous: Option<Error> = None;
        loop {
            let (Retry { wait, reason }, error) = match self
                .attempt(mode, outgoing, &deadline, &mut retry, previous.take())
                .await
            {
                Attempt::Done(result) => return result,
                Attempt::Retry(retry, error) => (retry, error),
            };
            self.record_retry(&outgoing.method, &error);
            tracing::debug!(delay = ?wait, %reason, url = %redacted_uri(&outgoing.uri), "retrying request");
            if deadline.passes_within(wait) {
                deadline.sleep_until().await;
                return Err(deadline.timed_out(Some(error)));
            }
            tokio::time::sleep(wait).await;
            self.throttle(outgoing, template, deadline.at, Some(&reason))
                .await?;
            previous = Some(error);
        }
    }

    /// One attempt: sends, then reads the response as `mode` says, or asks `retry` whether a
    /// failure is worth another attempt. `previous` is the error that caused this attempt,
    /// kept in the timeout error if the deadline passes while sending.
    async fn attempt(
        &self,
        mode: Mode,
        outgoing: &OutgoingRequest,
        deadline: &Deadline,
        retry: &mut RetryState,
        previous: Option<Error>,
    ) -> Attempt {
        let inner = self.client.inner();
        // The deadline is applied here rather than through a helper future: each async layer
        // deepens the future types of every request, which the compiler must lay out.
        let sent = match deadline.at {
            Some(at) => match tokio::time::timeout_at(at, inner.transport.send(outgoing)).await {
                Ok(sent) => sent,
                Err(_) => return Attempt::Done(Err(deadline.timed_out(previous))),
            },
            None => inner.transport.send(outgoing).await,
        };
        let response = match sent {
            Ok(response) => response,
            Err(error) => {
                self.record_result(&outgoing.method, "<error>");
                let failure = Failure::Transport {
                    error: &error,
                    method: &outgoing.method,
                    mode,
                };
                return match retry.decide(failure) {
                    Some(next) => Attempt::Retry(next, error),
                    None => Attempt::Done(Err(error)),
                };
            }
        };
        let status = response.status();
        self.record_result(&outgoing.method, status.as_str());
        let success = match mode {
            Mode::Watch => status == StatusCode::OK,
            Mode::Upgrade => status == StatusCode::SWITCHING_PROTOCOLS,
            Mode::Full | Mode::Stream => status.is_success(),
        };
        if success {
            record_final(status, retry);
            let warnings = self.handle_warnings(response.headers());
            return Attempt::Done(match mode {
                Mode::Full => {
                    let url = redacted_uri(&outgoing.uri);
                    let read = read_full(response, &url, warnings);
                    match deadline.at {
                        Some(at) => tokio::time::timeout_at(at, read)
                            .await
                            .unwrap_or_else(|_| Err(deadline.timed_out(None))),
                        None => read.await,
                    }
                    .map(Outcome::Full)
                }
                Mode::Stream | Mode::Watch | Mode::Upgrade => Ok(Outcome::Streaming(Streaming {
                    response,
                    url: redacted_uri(&outgoing.uri),
                })),
            });
        }
        let next = retry.decide(Failure::Response {
            status,
            headers: response.headers(),
        });
        if next.is_none() {
            self.handle_warnings(response.headers());
        }
        let error = read_error(response, deadline.at).await;
        match next {
            Some(next) => Attempt::Retry(next, error),
            None => {
                record_final(status, retry);
                Attempt::Done(Err(error))
            }
        }
    }

    /// Counts an attempt's result in the request metrics (client-go's `RequestResult`).
    fn record_result(&self, verb: &Method, code: &str) {
        let inner = self.client.inner();
        if let Some(m) = &inner.metrics {
            m.request_result(code, verb.as_str(), inner.transport.base().host());
        }
    }

    /// Counts a retry in the request metrics (client-go's `RequestRetry`).
    fn record_retry(&self, verb: &Method, error: &Error) {
        let inner = self.client.inner();
        if let Some(m) = &inner.metrics {
            let code = match error.http_code() {
                Some(c) => c.to_string(),
                None => "<error>".to_owned(),
            };
            m.request_retry(&code, verb.as_str(), inner.transport.base().host());
        }
    }

    /// Parses the `Warning` headers and gives them to the handler.
    fn handle_warnings(&self, headers: &HeaderMap) -> Vec<Warning> {
        let warnings = parse_warning_headers(headers);
        let handler = &self.client.inner().warning_handler;
        for w in &warnings {
            handler.handle_warning(w);
        }
        warnings
    }
}

enum Outcome {
    Full(Response),
    Streaming(Streaming),
}

/// How one attempt ended.
enum Attempt {
    /// For good: the outcome, or a final error.
    Done(Result<Outcome, Error>),
    /// With a failure worth another attempt (after the wait the decision gives).
    Retry(Retry, Error),
}

/// Records the final status and the number of retries in the request's span.
fn record_final(status: StatusCode, retry: &RetryState) {
    tracing::Span::current().record("status", status.as_u16());
    tracing::Span::current().record("retries", retry.retries());
}

/// A request's deadline: its timeout, counted from the first send (after the first
/// rate-limiter wait). Without a timeout, nothing ever times out.
struct Deadline {
    /// When the request times out; `None` without a timeout, or with one too long for the
    /// clock to add (no deadline at all).
    at: Option<Instant>,
    timeout: Duration,
}

impl Deadline {
    fn starting_now(timeout: Option<Duration>) -> Self {
        Self {
            at: timeout.and_then(|t| Instant::now().checked_add(t)),
            timeout: timeout.unwrap_or_default(),
        }
    }

    /// Whether waiting `wait` from now would end after the deadline.
    fn passes_within(&self, wait: Duration) -> bool {
        self.at.is_some_and(|at| {
            Instant::now()
                .checked_add(wait)
                .is_none_or(|ready| ready > at)
        })
    }

    /// Sleeps until the deadline (at once without one).
    async fn sleep_until(&self) {
        if let Some(at) = self.at {
            tokio::time::sleep_until(at).await;
        }
    }

    /// The timeout error, with the error that caused the last retry, if any.
    fn timed_out(&self, previous: Option<Error>) -> Error {
        Error::Timeout {
            timeout: self.timeout,
            previous: previous.map(Box::new),
        }
    }
}

/// Reads a whole body into one buffer. A body of one chunk is kept as it is (no copy); from
/// the second chunk on, each chunk is copied into the buffer and released as it arrives. So
/// a large body is held once, not as its chunks plus their concatenation (as
/// `collect().to_bytes()` would), and chunks that are slices of larger reads (HTTP/2 DATA
/// frames cut from the connection's read buffers) do not keep those buffers alive
/// until the end: over HTTP/2 that kept ~40 MB more at the peak of a 94 MB list.
async fn read_body(mut body: Incoming) -> Result<Bytes, hyper::Error> {
    use hyper::body::Body as _;
    let mut first: Option<Bytes> = None;
    let mut joined: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue; // trailers
        };
        match first.take() {
            None if joined.is_empty() => first = Some(data),
            Some(head) => {
                let hint = usize::try_from(body.size_hint().lower()).unwrap_or(0);
                joined.reserve(head.len() + data.len() + hint);
                joined.extend_from_slice(&head);
                joined.extend_from_slice(&data);
            }
            None => joined.extend_from_slice(&data),
        }
    }
    Ok(first.unwrap_or_else(|| Bytes::from(joined)))
}

async fn read_full(
    response: http::Response<Incoming>,
    url: &str,
    warnings: Vec<Warning>,
) -> Result<Response, Error> {
    let (mut parts, body) = response.into_parts();
    let transport = |e: Box<dyn std::error::Error + Send + Sync>| Error::Transport {
        url: url.to_owned(),
        source: e,
    };
    let body = if compression::is_gzip(&parts.headers) {
        // Inflated frame by frame as it arrives, overlapping the transfer.
        let mut inflater = compression::Inflater::new(&mut parts.headers);
        read_frames(body, |data| inflater.push(&data))
            .await
            .map_err(transport)?;
        inflater.finish().map_err(|e| transport(Box::new(e)))?
    } else {
        read_body(body).await.map_err(|e| transport(Box::new(e)))?
    };
    Ok(Response {
        status: parts.status,
        headers: parts.headers,
        body,
        warnings,
    })
}

/// Hands each data frame of `body` to `sink`, which may fail.
async fn read_frames(
    mut body: Incoming,
    mut sink: impl FnMut(Bytes) -> Result<(), std::io::Error>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            sink(data)?;
        }
    }
    Ok(())
}

/// Reads (at most [`MAX_ERROR_BODY`] of) a failed response and turns it into an error.
async fn read_error(response: http::Response<Incoming>, deadline: Option<Instant>) -> Error {
    let status = response.status();
    let mut headers = response.headers().clone();
    let url_free = Limited::new(response.into_body(), MAX_ERROR_BODY).collect();
    let collected = match deadline {
        Some(d) => tokio::time::timeout_at(d, url_free).await.ok(),
        None => Some(url_free.await),
    };
    let mut body = match collected {
        Some(Ok(c)) => c.to_bytes(),
        _ => Bytes::new(),
    };
    if compression::is_gzip(&headers) {
        body = compression::inflate(&mut headers, &body, MAX_ERROR_BODY as u64).unwrap_or_default();
    }
    error_from_response(status, &body)
}

/// The data frames of a streaming response.
fn body_stream(s: Streaming) -> ByteStream {
    let url = s.url;
    BodyStream::new(s.response.into_body())
        .filter_map(move |frame| {
            let url = url.clone();
            async move {
                match frame {
                    Ok(frame) => frame.into_data().ok().map(Ok),
                    Err(e) => Some(Err(Error::Transport {
                        url,
                        source: Box::new(e),
                    })),
                }
            }
        })
        .boxed()
}

/// Formats a duration as Go's `time.Duration.String` does (`30s`, `1m30s`, `1.5s`, `250ms`),
/// the form the API server parses in `?timeout=`.
///
/// A duration longer than Go's can be ([`MAX_GO_DURATION`], about 292 years) is formatted as
/// that one, `2562047h47m16.854775807s`: the server's `time.ParseDuration` refuses anything
/// longer, answering `400 Bad Request` to the whole request, whereas the longest it parses
/// means what was asked (the server then applies its own limit, `--request-timeout`, to any
/// timeout longer than that). So `Config { timeout: Some(Duration::MAX), .. }` sends this.
pub fn go_duration(d: Duration) -> String {
    let nanos = d.min(MAX_GO_DURATION).as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    fn with_fraction(value: u128, unit: u128, digits: usize) -> String {
        let whole = value / unit;
        let frac = value % unit;
        if frac == 0 {
            whole.to_string()
        } else {
            let frac = format!("{frac:0digits$}");
            format!("{whole}.{}", frac.trim_end_matches('0'))
        }
    }
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}µs", with_fraction(nanos, 1_000, 3));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", with_fraction(nanos, 1_000_000, 6));
    }
    let secs = nanos / 1_000_000_000;
    let sub = nanos % 1_000_000_000;
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if h > 0 || m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&with_fraction(s * 1_000_000_000 + sub, 1_000_000_000, 9));
    out.push('s');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn client(host: &str) -> RestClient {
        RestClient::new(Config::new(host)).unwrap()
    }

    #[test]
    fn go_duration_strings() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(100), "100ns"),
            (Duration::from_micros(1500), "1.5ms"),
            (Duration::from_micros(500), "500µs"),
            (Duration::from_millis(250), "250ms"),
            (Duration::from_secs(30), "30s"),
            (Duration::from_millis(1500), "1.5s"),
            (Duration::from_secs(60), "1m0s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(3600), "1h0m0s"),
            (Duration::from_secs(3723), "1h2m3s"),
        ];
        for (d, s) in cases {
            assert_eq!(go_duration(d), s, "{d:?}");
        }
    }

    /// Issue 29, item 6: `Duration::MAX` was sent as `5124095576030431h0m15.999999999s`,
    /// which Go's `time.ParseDuration` refuses (the server answers 400): what is sent is at
    /// most Go's longest duration, `math.MaxInt64` nanoseconds.
    #[test]
    fn durations_beyond_go_are_sent_as_the_longest_go_duration() {
        const GO_MAX: &str = "2562047h47m16.854775807s";
        assert_eq!(MAX_GO_DURATION.as_nanos(), i64::MAX as u128);
        assert_eq!(go_duration(MAX_GO_DURATION), GO_MAX);
        assert_eq!(
            go_duration(MAX_GO_DURATION + Duration::from_nanos(1)),
            GO_MAX
        );
        assert_eq!(go_duration(Duration::MAX), GO_MAX);
        assert_eq!(
            go_duration(MAX_GO_DURATION - Duration::from_nanos(1)),
            "2562047h47m16.854775806s"
        );
        let mut config = Config::new("https://h");
        config.timeout = Some(Duration::MAX);
        let r = RestClient::new(config).unwrap().get().abs_path("/x");
        let uri = r.outgoing(Mode::Full).unwrap().uri.to_string();
        assert!(uri.ends_with("timeout=2562047h47m16.854775807s"), "{uri}");
    }

    #[test]
    fn paths_follow_the_api_layout() {
        let c = client("https://h:6443");
        let core = GroupVersion::new("", "v1");
        let apps = GroupVersion::new("apps", "v1");
        assert_eq!(
            c.get().group_version(&core).resource("Pods").path(),
            "/api/v1/pods"
        );
        assert_eq!(
            c.get()
                .group_version(&core)
                .namespace("ns")
                .resource("pods")
                .name("p")
                .subresource("log")
                .path(),
            "/api/v1/namespaces/ns/pods/p/log"
        );
        assert_eq!(
            c.get()
                .group_version(&apps)
                .namespace("ns")
                .resource("deployments")
                .name("d")
                .url_template(),
            "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
        );
        assert_eq!(c.get().abs_path("/version").path(), "/version");
        assert_eq!(c.get().abs_path("/apis/").path(), "/apis/");
        assert_eq!(c.get().path(), "/");
        assert_eq!(
            c.get()
                .group_version(&core)
                .namespace("")
                .resource("pods")
                .path(),
            "/api/v1/pods",
            "an empty namespace lists across namespaces"
        );
        let prefixed = client("https://h/rancher/k8s/");
        assert_eq!(
            prefixed.get().group_version(&core).resource("nodes").path(),
            "/rancher/k8s/api/v1/nodes"
        );
        let gv_client = c.for_group_version(apps.clone());
        assert_eq!(
            gv_client.get().resource("replicasets").path(),
            "/apis/apps/v1/replicasets"
        );
        assert_eq!(
            c.get()
                .group_version(&core)
                .resource("services")
                .name("s")
                .subresource("proxy")
                .suffix(["a", "b/c"])
                .path(),
            "/api/v1/services/s/proxy/a/b/c"
        );
    }

    #[test]
    fn api_resources_address_by_scope() {
        let c = client("https://h");
        let nodes = ApiResource::from_gvk_with_plural(
            &kclient_core::GroupVersionKind::new("", "v1", "Node"),
            "nodes",
            false,
        );
        assert_eq!(
            c.get().namespace("x").api_resource(&nodes).path(),
            "/api/v1/nodes"
        );
        let cms = ApiResource::from_gvk_with_plural(
            &kclient_core::GroupVersionKind::new("", "v1", "ConfigMap"),
            "configmaps",
            true,
        );
        assert_eq!(
            c.get().namespace("x").api_resource(&cms).path(),
            "/api/v1/namespaces/x/configmaps"
        );
    }

    #[test]
    fn invalid_segments_are_deferred_errors() {
        let c = client("https://h");
        for r in [
            c.get().namespace("a/b"),
            c.get().name("x%2F"),
            c.get().name(""),
            c.get().resource(".."),
            c.get().subresource("a/b"),
            c.get().header("bad header", "v"),
            c.get().header("x", "bad\nvalue"),
        ] {
            assert!(r.error.is_some(), "{r:?}");
        }
        assert!(c.post().namespace("").preflight().is_err());
        assert!(c.get().namespace("").name("x").preflight().is_err());
        assert!(c.get().namespace("").preflight().is_ok());
    }

    #[test]
    fn outgoing_requests_carry_defaults() {
        let c = client("https://h");
        let out = c
            .get()
            .abs_path("/api")
            .param("labelSelector", "a=b,c in (d)")
            .timeout(Duration::from_secs(30))
            .outgoing(Mode::Full)
            .unwrap();
        assert_eq!(
            out.uri.to_string(),
            "https://h/api?labelSelector=a%3Db%2Cc+in+%28d%29&timeout=30s"
        );
        assert_eq!(out.headers[ACCEPT], DEFAULT_ACCEPT);
        assert_eq!(out.headers[ACCEPT_ENCODING], "gzip");
        let watch = c.get().abs_path("/api").outgoing(Mode::Watch).unwrap();
        assert!(
            !watch.headers.contains_key(ACCEPT_ENCODING),
            "watches are not compressed"
        );
        assert!(
            !out.headers.contains_key(CONTENT_TYPE),
            "no body, no content type"
        );
        let out = c
            .post()
            .abs_path("/x")
            .json_body(&serde_json::json!({"a": 1}))
            .outgoing(Mode::Full)
            .unwrap();
        assert_eq!(out.headers[CONTENT_TYPE], "application/json");
        assert_eq!(&out.body[..], br#"{"a":1}"#);
        let patch = Patch::Merge(serde_json::json!({"spec": {}}));
        let out = c.patch(&patch).abs_path("/x").outgoing(Mode::Full).unwrap();
        assert_eq!(out.headers[CONTENT_TYPE], "application/merge-patch+json");
        assert_eq!(&out.body[..], br#"{"spec":{}}"#);
        let out = c
            .patch(PatchType::Apply)
            .abs_path("/x")
            .body("{}")
            .outgoing(Mode::Full)
            .unwrap();
        assert_eq!(out.headers[CONTENT_TYPE], "application/apply-patch+yaml");
    }

    #[test]
    fn defaults_match_client_go() {
        assert_eq!(LONG_THROTTLE_LATENCY, Duration::from_millis(50));
        assert_eq!(EXTRA_LONG_THROTTLE_LATENCY, Duration::from_secs(1));
        assert_eq!(DEFAULT_ACCEPT, "application/json, */*");
        let r = client("https://h").get();
        assert_eq!(r.max_retries, 10);
        assert_eq!(r.timeout, None);
        let mut config = Config::new("https://h");
        config.timeout = Some(Duration::from_secs(5));
        let r = RestClient::new(config).unwrap().get().abs_path("/x");
        assert_eq!(
            r.timeout,
            Some(Duration::from_secs(5)),
            "the client's timeout is the default"
        );
        assert!(r
            .outgoing(Mode::Full)
            .unwrap()
            .uri
            .to_string()
            .ends_with("timeout=5s"));
    }
}
