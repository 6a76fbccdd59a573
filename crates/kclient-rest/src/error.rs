//! [`Error`]: everything that can go wrong between a kubeconfig and a decoded response.
//!
//! Every variant keeps its cause as an error `source`, so nothing is hidden from a caller that
//! walks the chain. [`Error`] implements [`ApiStatus`], so `err.is_not_found()` and friends
//! work on it directly, and [`ApiStatus::is_connection_refused`] tells a refused connection from
//! every other failure (the reflector re-watches instead of relisting on it).

use std::error::Error as StdError;
use std::time::Duration;

use kclient_core::{snippet, ApiError, ApiStatus, BoxError, Status, WatchDecodeError};

use crate::auth::exec_error::ExecError;
use crate::config::ConfigError;
use crate::kubeconfig::KubeconfigError;
use crate::transport::tls_error::TlsError;

/// The error of every fallible operation of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The API server answered with a failure [`Status`] (`404 NotFound`, `409 Conflict`, ...).
    /// Boxed to keep `Result<_, Error>` small.
    #[error("{0}")]
    Api(Box<ApiError>),

    /// The server answered with an error code and a body that is not a `Status` (an HTML page
    /// from a proxy, plain text from a load balancer ...).
    #[error("the server answered HTTP {code} with a body that is not a Status: {snippet:?}")]
    HttpStatus {
        /// The HTTP status code.
        code: u16,
        /// The start of the body (at most 2 KiB, lossily decoded).
        snippet: String,
        /// A `Status` made from the code, so the [`ApiStatus`] predicates work by code
        /// (`is_not_found()` for a 404) as apimachinery's do for unstructured errors.
        status: Box<Status>,
    },

    /// A successful response whose body could not be decoded as the expected type.
    #[error("cannot decode the response body as {what}: {source}; body starts with {snippet:?}")]
    Decode {
        /// The type the body was decoded as.
        what: &'static str,
        /// The start of the body.
        snippet: String,
        /// The JSON error, with line and column.
        #[source]
        source: serde_json::Error,
    },

    /// A successful response in protobuf whose body could not be decoded as the expected
    /// type (or whose type has no protobuf codec).
    #[error("cannot decode the protobuf response body as {what}: {source}; body starts with {snippet:?}")]
    ProtobufDecode {
        /// The type the body was decoded as.
        what: &'static str,
        /// The start of the body.
        snippet: String,
        /// The protobuf error, with the path of the field (boxed: errors stay small).
        #[source]
        source: Box<kclient_protobuf::DecodeError>,
    },

    /// A request body could not be serialized.
    #[error("cannot serialize the request body: {0}")]
    Serialize(#[source] serde_json::Error),

    /// A watch stream broke: a malformed, truncated or oversized frame. The stream ends after
    /// this error.
    #[error("watch stream: {0}")]
    Watch(#[from] WatchDecodeError),

    /// No connection could be made to the server (DNS failure, nothing listening, a proxy that
    /// refused the tunnel, a connect timeout).
    #[error("cannot connect to {url}: {source}")]
    Connect {
        /// The URL of the request, without a password in it (as Go's `url.URL.Redacted`
        /// shows it).
        url: String,
        /// Whether the server refused the connection (`ECONNREFUSED`).
        refused: bool,
        /// The underlying error.
        #[source]
        source: BoxError,
    },

    /// The connection failed after it was made: reset, closed early, an HTTP/2 protocol error,
    /// a broken response body.
    #[error("request to {url} failed: {source}")]
    Transport {
        /// The URL of the request, without a password in it (as Go's `url.URL.Redacted`
        /// shows it).
        url: String,
        /// The underlying error.
        #[source]
        source: BoxError,
    },

    /// A gzip-compressed answer inflated past the request's bound
    /// ([`Request::max_inflated_len`](crate::Request::max_inflated_len), by default
    /// [`DEFAULT_MAX_INFLATED_LEN`](crate::DEFAULT_MAX_INFLATED_LEN)): a decompression bomb,
    /// or an answer larger than the bound allows. Inflating stopped there.
    #[error("the gzip-compressed answer of {url} inflates past the limit of {limit} bytes")]
    InflatedTooLarge {
        /// The URL of the request, without a password in it.
        url: String,
        /// The bound, in inflated bytes.
        limit: u64,
    },

    /// TLS failed: a bad CA or client certificate in the configuration, or a handshake that
    /// failed (unknown CA, wrong server name, expired certificate ...).
    #[error(transparent)]
    Tls(#[from] TlsError),

    /// Credentials could not be obtained (an unreadable token file, bad basic-auth values).
    #[error("authentication: {0}")]
    Auth(String),

    /// An exec credential plugin failed: missing binary, non-zero exit, a hang, garbage output.
    #[error(transparent)]
    ExecPlugin(#[from] ExecError),

    /// The client configuration is invalid (a bad host, conflicting options, not in a cluster).
    #[error(transparent)]
    Config(#[from] ConfigError),

    /// A kubeconfig could not be read, parsed or used.
    #[error(transparent)]
    Kubeconfig(#[from] KubeconfigError),

    /// The request did not finish within its timeout.
    #[error("the request did not finish within {timeout:?}{}", previous_suffix(.previous))]
    Timeout {
        /// The timeout that expired.
        timeout: Duration,
        /// The error of the previous attempt, when the timeout cut a retry short.
        #[source]
        previous: Option<Box<Error>>,
    },

    /// The client-side rate limiter would make the request wait past its deadline (a retry
    /// close to the request's timeout).
    #[error("client rate limiter: waiting {wait:?} would exceed the request's deadline ({remaining:?} left)")]
    RateLimited {
        /// How long the limiter asked to wait.
        wait: Duration,
        /// How much of the request's timeout was left.
        remaining: Duration,
    },

    /// The request could not be built (an invalid name or namespace, a bad header, a URL that
    /// does not parse).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
}

fn previous_suffix(previous: &Option<Box<Error>>) -> String {
    match previous {
        Some(e) => format!(" (previous attempt: {e})"),
        None => String::new(),
    }
}

impl From<ApiError> for Error {
    fn from(e: ApiError) -> Self {
        Error::Api(Box::new(e))
    }
}

impl Error {
    /// The HTTP status code of a failed response, if the server sent one.
    pub fn http_code(&self) -> Option<u16> {
        match self {
            Error::Api(e) => Some(e.code()).filter(|c| *c != 0),
            Error::HttpStatus { code, .. } => Some(*code),
            Error::Timeout {
                previous: Some(p), ..
            } => p.http_code(),
            _ => None,
        }
    }

    /// Whether the request failed for lack of time (its own timeout), not because of the server.
    pub fn is_client_timeout(&self) -> bool {
        matches!(self, Error::Timeout { .. } | Error::RateLimited { .. })
    }

    pub(crate) fn unstructured(code: u16, body: &[u8]) -> Self {
        let snippet = snippet(body, UNSTRUCTURED_SNIPPET_LEN);
        let message = if snippet.trim().is_empty() {
            format!("the server responded with HTTP {code} and no body")
        } else {
            snippet.clone()
        };
        Error::HttpStatus {
            code,
            snippet,
            status: Box::new(Status {
                status: Status::FAILURE.to_owned(),
                message,
                code,
                ..Status::default()
            }),
        }
    }
}

/// The most of a non-`Status` error body kept in [`Error::HttpStatus`] (client-go keeps 2 KiB).
pub(crate) const UNSTRUCTURED_SNIPPET_LEN: usize = 2048;

/// The most of a body quoted in a decode error.
pub(crate) const DECODE_SNIPPET_LEN: usize = 256;

/// The first `max` bytes of `bytes`, lossily decoded, with `…` when cut.
/// The errors of a chain, outermost first. Custom I/O errors are descended into through
/// `get_ref` (their `source()` skips the wrapped error itself).
pub(crate) fn chain<'a>(
    err: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    fn next<'a>(e: &'a (dyn StdError + 'static)) -> Option<&'a (dyn StdError + 'static)> {
        match e.downcast_ref::<std::io::Error>() {
            Some(io) => match io.get_ref() {
                Some(inner) => Some(inner as &(dyn StdError + 'static)),
                None => io.source(),
            },
            None => e.source(),
        }
    }
    std::iter::successors(Some(err), |e| next(*e))
}

/// Whether an error chain contains an I/O error of one of `kinds`.
pub(crate) fn chain_has_io_kind(
    err: &(dyn StdError + 'static),
    kinds: &[std::io::ErrorKind],
) -> bool {
    chain(err).any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| kinds.contains(&io.kind()))
    })
}

impl ApiStatus for Error {
    fn api_status(&self) -> Option<&Status> {
        match self {
            Error::Api(e) => Some(&e.status),
            Error::HttpStatus { status, .. } => Some(status),
            Error::Timeout {
                previous: Some(p), ..
            } => p.api_status(),
            _ => None,
        }
    }

    fn is_connection_refused(&self) -> bool {
        match self {
            Error::Connect { refused, .. } => *refused,
            Error::Timeout {
                previous: Some(p), ..
            } => p.is_connection_refused(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unstructured_errors_answer_predicates_by_code() {
        let err = Error::unstructured(404, b"<html>not here</html>");
        assert!(err.is_not_found());
        assert_eq!(err.http_code(), Some(404));
        assert!(err.to_string().contains("<html>not here</html>"), "{err}");
        let err = Error::unstructured(503, b"");
        assert!(err.is_service_unavailable());
        assert!(err.api_status().unwrap().message.contains("no body"));
    }

    #[test]
    fn snippets_are_bounded() {
        let body = vec![b'x'; 10_000];
        let err = Error::unstructured(500, &body);
        match err {
            Error::HttpStatus { snippet, .. } => {
                assert_eq!(snippet.chars().count(), UNSTRUCTURED_SNIPPET_LEN + 1);
                assert!(snippet.ends_with('…'));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn timeouts_keep_the_previous_error() {
        let err = Error::Timeout {
            timeout: Duration::from_secs(1),
            previous: Some(Box::new(Error::unstructured(429, b"slow down"))),
        };
        assert!(err.is_too_many_requests());
        assert!(err.is_client_timeout());
        assert!(err.to_string().contains("previous attempt"), "{err}");
        assert!(err.source().is_some());
    }

    #[test]
    fn connection_refused_is_reported() {
        let err = Error::Connect {
            url: "https://127.0.0.1:1".into(),
            refused: true,
            source: Box::new(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
        };
        assert!(err.is_connection_refused());
        assert!(chain_has_io_kind(
            &err,
            &[std::io::ErrorKind::ConnectionRefused]
        ));
        assert!(!Error::Auth("x".into()).is_connection_refused());
    }
}
