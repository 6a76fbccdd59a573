//! When to try a request again (client-go's `rest/with_retry.go`).
//!
//! - A response with status 429 or any 5xx **and** an integer `Retry-After` header is retried
//!   after that many seconds; without the header it is final.
//! - A connection that broke under the request (reset, closed before the response, probable
//!   EOF) is retried after 1 second, as if the server had said `Retry-After: 1` — for `GET`s
//!   only, except watches, which also retry on network timeouts.
//! - At most [`DEFAULT_MAX_RETRIES`] retries (so 11 attempts) unless the request says otherwise.
//! - A `Retry-After` longer than [`MAX_RETRY_AFTER`] is waited as [`MAX_RETRY_AFTER`], so a
//!   hostile or broken server (`Retry-After: 9223372036854775807`) can neither overflow the
//!   clock nor park a request for ever.

use std::time::Duration;

use http::{HeaderMap, Method, StatusCode};

use crate::error::Error;
use crate::request::Mode;
use crate::transport::{is_connection_reset_or_eof, is_network_timeout};

/// client-go's default ceiling on retries (`maxRetries: 10`).
pub const DEFAULT_MAX_RETRIES: u32 = 10;

/// The longest wait a `Retry-After` gets (client-go multiplies the header's seconds into a
/// `time.Duration`, which silently wraps for huge values; here they are bounded instead).
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(10 * 60);

/// The delay used for a retryable connection error (client-go synthesises `Retry-After: 1`).
pub const CONNECTION_ERROR_RETRY_DELAY: Duration = Duration::from_secs(1);

/// The `Retry-After` header as whole seconds (client-go's `retryAfterSeconds`: an integer, or
/// nothing; HTTP dates are not honoured).
pub fn retry_after_seconds(headers: &HeaderMap) -> Option<i64> {
    headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// How an attempt failed, as the retry decision sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Failure<'a> {
    /// The request got no response: the transport failed with `error`.
    Transport {
        /// The transport's error.
        error: &'a Error,
        /// The request's method (only `GET`s retry a broken connection, watches aside).
        method: &'a Method,
        /// How the request reads its response.
        mode: Mode,
    },
    /// The server answered with an unsuccessful status.
    Response {
        /// The status.
        status: StatusCode,
        /// The response's headers (`Retry-After`, the FlowSchema of a 429).
        headers: &'a HeaderMap,
    },
}

/// The decision to try again: how long to wait first, and why (for the log and the rate
/// limiter's wait message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Retry {
    /// The wait before the next attempt.
    pub(crate) wait: Duration,
    /// Why, as client-go words it.
    pub(crate) reason: String,
}

/// Whether a transport error is worth another attempt (client-go's `IsRetryableResponse`
/// and the watch's own rule): a connection that broke under a `GET`, or under a watch, which
/// also retries network timeouts; never a stream, whose caller may have read part of it, nor
/// an upgrade (client-go's upgrading dialers try once).
pub(crate) fn is_retryable_transport_error(error: &Error, method: &Method, mode: Mode) -> bool {
    match mode {
        Mode::Full | Mode::List => method == Method::GET && is_connection_reset_or_eof(error),
        Mode::Stream | Mode::Upgrade => false,
        Mode::Watch => is_connection_reset_or_eof(error) || is_network_timeout(error),
    }
}

/// Counts attempts and decides on retries.
#[derive(Debug)]
pub(crate) struct RetryState {
    max_retries: u32,
    attempts: u32,
}

impl RetryState {
    pub(crate) fn new(max_retries: u32) -> Self {
        Self {
            max_retries,
            attempts: 0,
        }
    }

    /// The number of retries decided so far.
    pub(crate) fn retries(&self) -> u32 {
        self.attempts.min(self.max_retries)
    }

    fn next(&mut self) -> bool {
        self.attempts += 1;
        self.attempts <= self.max_retries
    }

    /// After a response: the delay before the next attempt, or `None` when it is final.
    pub(crate) fn after_response(
        &mut self,
        status: StatusCode,
        headers: &HeaderMap,
    ) -> Option<Duration> {
        if !self.next() {
            return None;
        }
        if !(status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()) {
            return None;
        }
        let seconds = retry_after_seconds(headers)?;
        Some(Duration::from_secs(u64::try_from(seconds).unwrap_or(0)).min(MAX_RETRY_AFTER))
    }

    /// After a transport error: the delay before the next attempt when the error is retryable.
    pub(crate) fn after_error(&mut self, retryable: bool) -> Option<Duration> {
        if !self.next() || !retryable {
            return None;
        }
        Some(CONNECTION_ERROR_RETRY_DELAY)
    }

    /// After a failed attempt: whether to try again, after how long and why; `None` when the
    /// failure is final. Counts the attempt.
    pub(crate) fn decide(&mut self, failure: Failure<'_>) -> Option<Retry> {
        match failure {
            Failure::Transport {
                error,
                method,
                mode,
            } => {
                let wait = self.after_error(is_retryable_transport_error(error, method, mode))?;
                Some(Retry {
                    wait,
                    reason: format!("retryable error: {error}"),
                })
            }
            Failure::Response { status, headers } => {
                let wait = self.after_response(status, headers)?;
                let reason = if status == StatusCode::TOO_MANY_REQUESTS {
                    let flow_schema = headers
                        .get("x-kubernetes-pf-flowschema-uid")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    format!(
                        "retries: {}, retry-after: {}s - retry-reason: due to server-side throttling, FlowSchema UID: {:?}",
                        self.retries(),
                        wait.as_secs(),
                        flow_schema.unwrap_or_default()
                    )
                } else {
                    format!(
                        "retries: {}, retry-after: {}s - retry-reason: {}",
                        self.retries(),
                        wait.as_secs(),
                        status.as_u16()
                    )
                };
                Some(Retry { wait, reason })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_retry_after(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(http::header::RETRY_AFTER, v.parse().unwrap());
        h
    }

    #[test]
    fn huge_retry_after_is_bounded() {
        let mut r = RetryState::new(10);
        assert_eq!(
            r.after_response(
                StatusCode::TOO_MANY_REQUESTS,
                &with_retry_after("9223372036854775807")
            ),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(
            r.after_response(StatusCode::SERVICE_UNAVAILABLE, &with_retry_after("-5")),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn defaults_match_client_go() {
        assert_eq!(DEFAULT_MAX_RETRIES, 10);
        assert_eq!(CONNECTION_ERROR_RETRY_DELAY, Duration::from_secs(1));
    }

    #[test]
    fn retries_429_and_5xx_only_with_retry_after() {
        let mut r = RetryState::new(10);
        assert_eq!(
            r.after_response(StatusCode::TOO_MANY_REQUESTS, &with_retry_after("3")),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            r.after_response(StatusCode::SERVICE_UNAVAILABLE, &with_retry_after(" 0 ")),
            Some(Duration::ZERO)
        );
        assert_eq!(
            r.after_response(StatusCode::INTERNAL_SERVER_ERROR, &HeaderMap::new()),
            None,
            "no Retry-After, no retry"
        );
        assert_eq!(
            r.after_response(StatusCode::CONFLICT, &with_retry_after("1")),
            None,
            "4xx other than 429 are final"
        );
        assert_eq!(
            r.after_response(
                StatusCode::TOO_MANY_REQUESTS,
                &with_retry_after("Wed, 21 Oct 2015 07:28:00 GMT")
            ),
            None,
            "dates are not honoured, as in client-go"
        );
        assert_eq!(
            r.after_response(StatusCode::TOO_MANY_REQUESTS, &with_retry_after("-4")),
            Some(Duration::ZERO)
        );
    }

    #[test]
    fn decisions_carry_client_gos_reasons() {
        let mut r = RetryState::new(10);
        let mut h = with_retry_after("2");
        h.insert("x-kubernetes-pf-flowschema-uid", "fs-1".parse().unwrap());
        let throttled = r
            .decide(Failure::Response {
                status: StatusCode::TOO_MANY_REQUESTS,
                headers: &h,
            })
            .unwrap();
        assert_eq!(throttled.wait, Duration::from_secs(2));
        assert_eq!(
            throttled.reason,
            "retries: 1, retry-after: 2s - retry-reason: due to server-side throttling, FlowSchema UID: \"fs-1\""
        );
        let unavailable = r
            .decide(Failure::Response {
                status: StatusCode::SERVICE_UNAVAILABLE,
                headers: &with_retry_after("1"),
            })
            .unwrap();
        assert_eq!(
            unavailable.reason,
            "retries: 2, retry-after: 1s - retry-reason: 503"
        );
        let refused = Error::InvalidRequest("not a transport error".into());
        for mode in [Mode::Full, Mode::List, Mode::Stream, Mode::Watch] {
            assert_eq!(
                r.decide(Failure::Transport {
                    error: &refused,
                    method: &Method::GET,
                    mode,
                }),
                None,
                "only broken connections (and a watch's timeouts) are retried"
            );
        }
    }

    #[test]
    fn stops_after_max_retries() {
        let mut r = RetryState::new(2);
        let h = with_retry_after("1");
        assert!(r
            .after_response(StatusCode::TOO_MANY_REQUESTS, &h)
            .is_some());
        assert!(r.after_error(true).is_some());
        assert!(r
            .after_response(StatusCode::TOO_MANY_REQUESTS, &h)
            .is_none());
        assert_eq!(r.retries(), 2);
        let mut none = RetryState::new(0);
        assert!(none.after_error(true).is_none());
        let mut r = RetryState::new(5);
        assert!(r.after_error(false).is_none());
    }
}
