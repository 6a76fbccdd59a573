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
use futures::stream::BoxStream;
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use hyper::body::Incoming;
use kclient_core::{ApiResource, GroupVersion};
use serde::Serialize;

use crate::client::RestClient;

use crate::error::Error;
use crate::protobuf::PROTOBUF_ACCEPT;
use crate::retry::DEFAULT_MAX_RETRIES;
use crate::watch::DEFAULT_MAX_WATCH_FRAME_LEN;

mod body;
mod execute;
mod patch;
#[cfg(test)]
mod tests;

pub use patch::AsPatch;

/// Go's `time.Duration.String`, now in kclient-core beside `MAX_GO_DURATION`.
#[deprecated(note = "moved to kclient_core::go_duration")]
pub use kclient_core::go_duration;

/// A rate-limiter wait longer than this is logged (client-go's `longThrottleLatency`).
pub const LONG_THROTTLE_LATENCY: Duration = Duration::from_millis(50);
/// A rate-limiter wait longer than this is logged at `info` (`extraLongThrottleLatency`).
pub const EXTRA_LONG_THROTTLE_LATENCY: Duration = Duration::from_secs(1);
/// The `Accept` header sent unless the request sets one (client-go's default for JSON).
pub const DEFAULT_ACCEPT: &str = "application/json, */*";
/// The most of an error body read to build the error (larger bodies are cut).
pub(super) const MAX_ERROR_BODY: usize = 1024 * 1024;

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
    /// Set by [`max_inflated_len`](Self::max_inflated_len); else the default of the read.
    max_inflated_len: Option<u64>,
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
    /// Read a list's body as it arrives, decoding its items meanwhile.
    List,
    /// Hand the body over as a stream.
    Stream,
    /// Hand the body over as a watch.
    Watch,
    /// Upgrade the connection (`101 Switching Protocols`) and hand it over.
    Upgrade,
}

/// A response whose body has not been read.
pub(super) struct Streaming {
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
            max_inflated_len: None,
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

    /// The largest watch event accepted ([`DEFAULT_MAX_WATCH_FRAME_LEN`]), and the largest
    /// item of a protobuf list read as it arrives ([`fetch_list`](Self::fetch_list)).
    pub fn max_watch_frame_len(mut self, bytes: usize) -> Self {
        self.max_frame_len = bytes;
        self
    }

    /// The most bytes a gzip-compressed answer may inflate to: past them the request fails
    /// with [`Error::InflatedTooLarge`], having held no more than that (a decompression
    /// bomb's few megabytes claim gigabytes). By default an answer read whole is bounded by
    /// [`DEFAULT_MAX_INFLATED_LEN`](crate::DEFAULT_MAX_INFLATED_LEN), and a list read as it arrives is not: its memory is
    /// bounded item by item (each item at most the frame bound), garbage is refused by the
    /// list's reader a step of inflating at a time, and a list of a large cluster can
    /// inflate past any fixed bound (a million ConfigMaps, unpaged from the watch cache).
    /// Answers that are not compressed are not bounded here.
    pub fn max_inflated_len(mut self, bytes: u64) -> Self {
        self.max_inflated_len = Some(bytes);
        self
    }

    /// The bound on an answer read whole, once inflated.
    fn whole_inflated_limit(&self) -> u64 {
        self.max_inflated_len
            .unwrap_or(crate::compression::DEFAULT_MAX_INFLATED_LEN)
    }

    /// Decodes the objects of [`fetch_list`](Self::fetch_list) and [`watch`](Self::watch)
    /// without `metadata.managedFields`, skipping that part of the response (kclient-core's
    /// `kclient_core::managed_fields`; `ListOptions::omit_managed_fields` asks for it). Off by default.
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
}
