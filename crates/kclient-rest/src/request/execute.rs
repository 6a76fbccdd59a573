//! Sending a request: the terminals, the rate limiter, the attempts and their retries, the
//! deadline.

use std::time::Duration;

use bytes::Bytes;
use futures::stream::StreamExt;
use http::header::{ACCEPT, ACCEPT_ENCODING, CONNECTION, CONTENT_TYPE, UPGRADE};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use kclient_core::{go_duration, WatchStream};
use serde::de::DeserializeOwned;
use tokio::time::Instant;
use tracing::Instrument as _;

use crate::compression;
use crate::error::Error;
use crate::protobuf::{self};
use crate::response::{decode_json, Response};
use crate::retry::{Failure, Retry, RetryState};
use crate::transport::url::{encode_path, encode_query, redacted_uri};
use crate::transport::{is_connection_reset_or_eof, is_network_timeout, OutgoingRequest};
use crate::upgrade::Upgraded;
use crate::warnings::{parse_warning_headers, Warning};
use crate::watch::decode_watch;

use super::body::{body_stream, read_error, read_full};
use super::{
    ByteStream, Mode, Request, Streaming, DEFAULT_ACCEPT, EXTRA_LONG_THROTTLE_LATENCY,
    LONG_THROTTLE_LATENCY,
};
use crate::list::ListBody;

impl Request {
    /// client-go's `requestPreflightCheck`: an explicitly empty namespace is refused where it
    /// cannot mean "all namespaces".
    pub(super) fn preflight(&self) -> Result<(), Error> {
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
    pub(super) fn outgoing(&self, mode: Mode) -> Result<OutgoingRequest, Error> {
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
        if matches!(mode, Mode::Full | Mode::List) && !self.client.config().disable_compression {
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
            Outcome::Streaming(_) | Outcome::List(_) => {
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

    /// Sends a list request and hands the list over once its metadata has arrived, its items
    /// to decode as the rest of the body arrives: a pager can
    /// request the next page at once, and the decoding overlaps the transfer.
    ///
    /// A protobuf answer (see [`accept_protobuf`](Self::accept_protobuf)) is read with
    /// kclient-protobuf's `ListReader`, a JSON one with kclient-core's `JsonListReader`; an
    /// item longer than [`max_watch_frame_len`](Self::max_watch_frame_len) is refused before
    /// it is whole, a body cut short is an error ([`Error::ProtobufDecode`] or
    /// [`Error::Decode`]), never a shorter list.
    pub async fn fetch_list<K>(self) -> Result<kclient_core::FetchedList<K, Error>, Error>
    where
        K: DeserializeOwned + Send + 'static,
    {
        use crate::list::{streaming_list, JsonItems, ListItems};
        let (omit, max_item_len) = (self.omit_managed_fields, self.max_frame_len);
        let mut body = match self.run(Mode::List).await? {
            Outcome::List(body) => *body,
            Outcome::Full(_) | Outcome::Streaming(_) => {
                return Err(Error::InvalidRequest("internal: unexpected body".into()))
            }
        };
        let content_type = body.headers().get(CONTENT_TYPE);
        let protobuf = match content_type.and_then(|v| v.to_str().ok()) {
            Some(content_type) => protobuf::is_protobuf(Some(content_type), b""),
            None => match body.next().await? {
                Some(first) => {
                    let magic = protobuf::is_protobuf(None, &first);
                    body.unread(first);
                    magic
                }
                None => false,
            },
        };
        let items: Box<dyn ListItems<K>> = if protobuf {
            Box::new(protobuf::ProtobufItems::<K>::new(max_item_len, omit)?)
        } else {
            Box::new(JsonItems::<K>::new(max_item_len, omit))
        };
        streaming_list(body, items).await
    }

    /// Sends the request and returns the body as a stream of chunks (logs, proxied data). The
    /// response head must be 2xx; the timeout bounds only the wait for it.
    pub async fn stream(self) -> Result<ByteStream, Error> {
        match self.run(Mode::Stream).await? {
            Outcome::Streaming(s) => Ok(body_stream(s)),
            Outcome::Full(r) => Ok(futures::stream::once(async move { Ok(r.into_body()) }).boxed()),
            Outcome::List(_) => Err(Error::InvalidRequest(
                "internal: unexpected list body".into(),
            )),
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
            Ok(Outcome::Full(_) | Outcome::List(_)) => Err(Error::InvalidRequest(
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
            Outcome::Full(_) | Outcome::List(_) => Err(Error::InvalidRequest(
                "internal: unexpected full body".into(),
            )),
        }
    }

    /// Sends the request as `mode` says: the future every way of sending awaits, boxed here,
    /// where it is compiled once. (Awaited unboxed from the generic [`json`](Self::json),
    /// [`fetch_list`](Self::fetch_list) and [`watch`](Self::watch), the whole send path —
    /// retries, credentials, the HTTP client — would be compiled again in every program that
    /// calls them: an `async fn`'s body is compiled where it is polled.)
    #[inline(never)]
    fn run(self, mode: Mode) -> futures::future::BoxFuture<'static, Result<Outcome, Error>> {
        Box::pin(self.run_unboxed(mode))
    }

    async fn run_unboxed(mut self, mode: Mode) -> Result<Outcome, Error> {
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
            Mode::Full | Mode::List | Mode::Stream => status.is_success(),
        };
        if success {
            record_final(status, retry);
            let warnings = self.handle_warnings(response.headers());
            return Attempt::Done(match mode {
                Mode::Full => {
                    let url = redacted_uri(&outgoing.uri);
                    let read = read_full(response, &url, warnings, self.whole_inflated_limit());
                    match deadline.at {
                        Some(at) => tokio::time::timeout_at(at, read)
                            .await
                            .unwrap_or_else(|_| Err(deadline.timed_out(None))),
                        None => read.await,
                    }
                    .map(Outcome::Full)
                }
                Mode::List | Mode::Stream | Mode::Watch | Mode::Upgrade => Ok(unread(
                    mode,
                    response,
                    outgoing,
                    deadline,
                    self.max_inflated_len.unwrap_or(u64::MAX),
                )),
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
    /// Boxed: the body's inflater is large, and outcomes are moved through every attempt.
    List(Box<ListBody>),
}

/// A successful response whose body the caller reads: a list's as it arrives (within the
/// request's deadline), a stream's, a watch's or an upgraded connection.
fn unread(
    mode: Mode,
    response: http::Response<hyper::body::Incoming>,
    outgoing: &OutgoingRequest,
    deadline: &Deadline,
    max_inflated_len: u64,
) -> Outcome {
    let url = redacted_uri(&outgoing.uri);
    match mode {
        Mode::List => Outcome::List(Box::new(ListBody::new(
            response,
            url,
            deadline.at.map(|at| (at, deadline.timeout)),
            max_inflated_len,
        ))),
        _ => Outcome::Streaming(Streaming { response, url }),
    }
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
