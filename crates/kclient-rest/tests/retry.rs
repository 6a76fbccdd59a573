//! Retries as client-go's `with_retry.go`: `Retry-After` on 429 and 5xx, connection resets on
//! GET, the retry ceiling and timeouts. Time is tokio's paused clock.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kclient_core::ApiStatus;
use kclient_rest::{Error, RestClient};
use serde_json::json;
use support::{config, json, paused_runtime, raw_server, status, TestServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

fn with_retry_after(
    mut r: http::Response<support::Body>,
    seconds: &str,
) -> http::Response<support::Body> {
    r.headers_mut()
        .insert("retry-after", seconds.parse().unwrap());
    r
}

/// A server failing the first `failures` requests with `code` and `Retry-After`, then 200.
async fn flaky(failures: usize, code: u16, retry_after: Option<&'static str>) -> TestServer {
    let count = Arc::new(AtomicUsize::new(0));
    TestServer::http(move |_| {
        let n = count.fetch_add(1, Ordering::SeqCst);
        async move {
            if n < failures {
                let r = status(code, "TooManyRequests", "slow down");
                match retry_after {
                    Some(s) => with_retry_after(r, s),
                    None => r,
                }
            } else {
                json(200, json!({"ok": true}))
            }
        }
    })
    .await
}

#[test]
fn retry_after_is_honoured_on_429() {
    paused_runtime().block_on(async {
        let server = flaky(2, 429, Some("2")).await;
        let client = RestClient::new(config(&server.url())).unwrap();
        let start = Instant::now();
        let v: serde_json::Value = client.get().abs_path("/x").json().await.unwrap();
        assert_eq!(v["ok"], true);
        assert_eq!(server.requests().len(), 3);
        assert!(
            start.elapsed() >= Duration::from_secs(4),
            "waited 2 s twice"
        );
    });
}

#[test]
fn five_hundreds_with_retry_after_are_retried_for_every_verb() {
    paused_runtime().block_on(async {
        let server = flaky(1, 503, Some("1")).await;
        let client = RestClient::new(config(&server.url())).unwrap();
        client
            .post()
            .abs_path("/x")
            .json_body(&json!({"a": 1}))
            .send()
            .await
            .unwrap();
        let seen = server.requests();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0].body, seen[1].body, "the body is sent again");
    });
}

#[tokio::test]
async fn no_retry_without_retry_after() {
    let server = flaky(1, 503, None).await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let err = client.get().abs_path("/x").send().await.unwrap_err();
    assert!(
        err.is_service_unavailable() || err.http_code() == Some(503),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn no_retry_for_other_client_errors() {
    let server =
        TestServer::http(|_| async { with_retry_after(status(409, "Conflict", "conflict"), "1") })
            .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let err = client.get().abs_path("/x").send().await.unwrap_err();
    assert!(err.is_conflict());
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn retries_stop_at_the_ceiling() {
    paused_runtime().block_on(async {
        let server = flaky(usize::MAX, 429, Some("0")).await;
        let client = RestClient::new(config(&server.url())).unwrap();
        let err = client
            .get()
            .abs_path("/x")
            .max_retries(3)
            .send()
            .await
            .unwrap_err();
        assert!(err.is_too_many_requests(), "{err:?}");
        assert_eq!(server.requests().len(), 4, "one attempt and three retries");

        let server = flaky(usize::MAX, 429, Some("1")).await;
        let client = RestClient::new(config(&server.url())).unwrap();
        client.get().abs_path("/x").send().await.unwrap_err();
        assert_eq!(
            server.requests().len(),
            11,
            "client-go's default: 10 retries"
        );

        let server = flaky(usize::MAX, 429, Some("1")).await;
        let client = RestClient::new(config(&server.url())).unwrap();
        client
            .get()
            .abs_path("/x")
            .max_retries(0)
            .send()
            .await
            .unwrap_err();
        assert_eq!(server.requests().len(), 1);
    });
}

#[test]
fn a_timeout_cuts_retries_short_and_keeps_the_last_error() {
    paused_runtime().block_on(async {
        let server = flaky(usize::MAX, 429, Some("30")).await;
        let client = RestClient::new(config(&server.url())).unwrap();
        let err = client
            .get()
            .abs_path("/x")
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .unwrap_err();
        match &err {
            Error::Timeout {
                previous: Some(p), ..
            } => assert!(p.is_too_many_requests()),
            other => panic!("{other:?}"),
        }
        assert!(
            err.is_too_many_requests(),
            "predicates see the previous attempt"
        );
        assert_eq!(server.requests().len(), 1);
    });
}

const OK_RESPONSE: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\nconnection: close\r\n\r\n{\"ok\":true}";

/// A server whose first `drops` connections read the request and close without answering.
async fn dropping(drops: usize) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    raw_server(move |mut stream, n| async move {
        let mut buf = vec![0u8; 4096];
        let _ = stream.read(&mut buf).await;
        if n >= drops {
            let _ = stream.write_all(OK_RESPONSE).await;
            let _ = stream.shutdown().await;
        }
    })
    .await
}

#[test]
fn gets_are_retried_when_the_connection_breaks() {
    paused_runtime().block_on(async {
        let (addr, task) = dropping(2).await;
        let client = RestClient::new(config(&format!("http://{addr}"))).unwrap();
        let start = Instant::now();
        let v: serde_json::Value = client.get().abs_path("/x").json().await.unwrap();
        assert_eq!(v["ok"], true);
        assert!(
            start.elapsed() >= Duration::from_secs(2),
            "Retry-After: 1, twice"
        );
        task.abort();
    });
}

#[test]
fn posts_are_not_retried_when_the_connection_breaks() {
    paused_runtime().block_on(async {
        let (addr, task) = dropping(1).await;
        let client = RestClient::new(config(&format!("http://{addr}"))).unwrap();
        let err = client
            .post()
            .abs_path("/x")
            .body("{}")
            .send()
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Transport { .. }), "{err:?}");
        assert!(!err.is_connection_refused());
        task.abort();
    });
}

#[test]
fn every_retry_waits_for_the_rate_limiter() {
    paused_runtime().block_on(async {
        let server = flaky(3, 429, Some("0")).await;
        let mut c = config(&server.url());
        c.qps = Some(1.0);
        c.burst = 1;
        let client = RestClient::new(c).unwrap();
        let start = Instant::now();
        client.get().abs_path("/x").send().await.unwrap();
        assert_eq!(server.requests().len(), 4);
        assert!(
            start.elapsed() >= Duration::from_secs(3),
            "three retries, one token per second"
        );
    });
}

/// Issue 19, item 1: a `Retry-After` of 2⁶³−1 seconds used to overflow the deadline
/// arithmetic and panic any client with a timeout. Now the wait is bounded by
/// `MAX_RETRY_AFTER` and the timeout still ends the request.
#[test]
fn huge_retry_after_with_a_timeout_times_out_without_panicking() {
    paused_runtime().block_on(async {
        let server = flaky(1, 429, Some("9223372036854775807")).await;
        let mut config = config(&server.url());
        config.timeout = Some(Duration::from_secs(30));
        let client = RestClient::new(config).unwrap();
        let start = Instant::now();
        let err = client.get().abs_path("/x").send().await.unwrap_err();
        assert!(matches!(err, Error::Timeout { .. }), "{err}");
        assert!(start.elapsed() <= Duration::from_secs(30));
    });
}

/// Without a timeout, a huge `Retry-After` waits `MAX_RETRY_AFTER`, not for ever.
#[test]
fn huge_retry_after_without_a_timeout_waits_the_bounded_time() {
    paused_runtime().block_on(async {
        let server = flaky(1, 503, Some("9223372036854775807")).await;
        let client = RestClient::new(config(&server.url())).unwrap();
        let start = Instant::now();
        let v: serde_json::Value = client.get().abs_path("/x").json().await.unwrap();
        assert_eq!(v["ok"], true);
        assert_eq!(start.elapsed(), kclient_rest::retry::MAX_RETRY_AFTER);
    });
}

/// Issue 29, item 6: with `Config.timeout = Duration::MAX` the server is sent Go's longest
/// duration (`math.MaxInt64` nanoseconds, which `time.ParseDuration` reads; the whole
/// `Duration::MAX` was refused with a 400), and the client side has no deadline: tokio's
/// `timeout` with a duration its clock cannot add waits without one, and does not panic.
#[test]
fn a_maximal_timeout_is_sent_as_the_longest_go_duration() {
    paused_runtime().block_on(async {
        let server = flaky(0, 200, None).await;
        let mut config = config(&server.url());
        config.timeout = Some(Duration::MAX);
        let client = RestClient::new(config).unwrap();
        let v: serde_json::Value = client.get().abs_path("/x").json().await.unwrap();
        assert_eq!(v["ok"], true);
        let requests = server.requests();
        assert_eq!(
            requests[0].uri.query(),
            Some("timeout=2562047h47m16.854775807s")
        );
        let unbounded = tokio::time::timeout(Duration::MAX, std::future::ready(()));
        assert!(unbounded.await.is_ok());
    });
}

/// Issue 19, item 1: `Config.timeout = Duration::MAX` used to panic every request.
#[test]
fn a_maximal_timeout_is_no_deadline() {
    paused_runtime().block_on(async {
        let server = flaky(1, 429, Some("1")).await;
        let mut config = config(&server.url());
        config.timeout = Some(Duration::MAX);
        let client = RestClient::new(config).unwrap();
        let v: serde_json::Value = client.get().abs_path("/x").json().await.unwrap();
        assert_eq!(v["ok"], true);
    });
}
