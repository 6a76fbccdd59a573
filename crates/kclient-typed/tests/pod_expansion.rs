//! The pod extensions (logs, eviction, binding) over real HTTP against a scripted server,
//! since kclient-fake does not serve these subresources yet: each test checks the request the
//! client sends and how it reads the answer.

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Pod;
use kclient_core::ApiStatus;
use kclient_rest::{Config, RefusedRequest, RestClient};
use kclient_typed::{Error, LogOptions, LogStreamKind, ResourceClient};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A request as the scripted server received it.
#[derive(Debug)]
struct Received {
    method: String,
    target: String,
    body: String,
}

/// Serves one connection: reads one request, answers with `status`, `content_type` and the
/// `chunks` of a chunked body, then closes. Returns the base URL and the received request.
async fn serve_once(
    status: &'static str,
    content_type: &'static str,
    chunks: Vec<&'static str>,
) -> (String, JoinHandle<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let head_end = loop {
            let n = socket.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the client closed before sending a request");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let length = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse::<usize>().ok())?
            })
            .unwrap_or(0);
        while buf.len() < head_end + length {
            let n = socket.read(&mut chunk).await.unwrap();
            buf.extend_from_slice(&chunk[..n]);
        }
        let mut request_line = head.lines().next().unwrap().split(' ');
        let received = Received {
            method: request_line.next().unwrap().to_owned(),
            target: request_line.next().unwrap().to_owned(),
            body: String::from_utf8_lossy(&buf[head_end..head_end + length]).into_owned(),
        };
        let mut response = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        );
        for c in chunks {
            response.push_str(&format!("{:x}\r\n{c}\r\n", c.len()));
        }
        response.push_str("0\r\n\r\n");
        socket.write_all(response.as_bytes()).await.unwrap();
        socket.shutdown().await.unwrap();
        received
    });
    (url, task)
}

fn pods(url: &str) -> ResourceClient<Pod> {
    let mut config = Config::new(url);
    config.qps = None;
    config.disable_http2 = true;
    ResourceClient::namespaced(RestClient::new(config).unwrap(), "prod")
}

#[tokio::test]
async fn logs_are_read_whole_with_every_option() {
    let (url, server) = serve_once("200 OK", "text/plain", vec!["line 1\n", "line 2\n"]).await;
    let options = LogOptions::default()
        .container("app")
        .follow()
        .previous()
        .since_seconds(60)
        .tail_lines(2)
        .timestamps()
        .limit_bytes(1024)
        .stream(LogStreamKind::Stdout);
    let text = pods(&url).logs("web-0", &options).await.unwrap();
    assert_eq!(text, "line 1\nline 2\n");
    let received = server.await.unwrap();
    assert_eq!(received.method, "GET");
    assert_eq!(
        received.target,
        "/api/v1/namespaces/prod/pods/web-0/log?container=app&follow=true&limitBytes=1024&previous=true&sinceSeconds=60&stream=Stdout&tailLines=2&timestamps=true",
        "every option, sorted by name as client-go encodes queries"
    );
}

#[tokio::test]
async fn log_lines_follow_a_stream_split_anywhere() {
    let (url, server) = serve_once(
        "200 OK",
        "text/plain",
        vec!["first li", "ne\nsecond\r\nthi", "rd"],
    )
    .await;
    let lines: Vec<String> = pods(&url)
        .log_lines("web-0", &LogOptions::default().follow())
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(lines, ["first line", "second", "third"]);
    assert_eq!(
        server.await.unwrap().target,
        "/api/v1/namespaces/prod/pods/web-0/log?follow=true"
    );
}

#[tokio::test]
async fn log_errors_carry_the_status() {
    let body = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"container \"x\" in pod \"web-0\" is waiting to start","reason":"BadRequest","code":400}"#;
    let (url, _server) = serve_once("400 Bad Request", "application/json", vec![body]).await;
    let err = pods(&url)
        .log_stream("web-0", &LogOptions::default().container("x"))
        .await
        .err()
        .expect("a 400");
    assert!(err.is_bad_request(), "{err}");
}

#[tokio::test]
async fn eviction_posts_a_policy_v1_eviction() {
    let ok = r#"{"kind":"Status","apiVersion":"v1","status":"Success","code":201}"#;
    let (url, server) = serve_once("201 Created", "application/json", vec![ok]).await;
    pods(&url).evict("web-0", None).await.unwrap();
    let received = server.await.unwrap();
    assert_eq!(received.method, "POST");
    assert_eq!(
        received.target,
        "/api/v1/namespaces/prod/pods/web-0/eviction"
    );
    let body: serde_json::Value = serde_json::from_str(&received.body).unwrap();
    assert_eq!(body["apiVersion"], "policy/v1");
    assert_eq!(body["kind"], "Eviction");
    assert_eq!(body["metadata"]["name"], "web-0");
    assert_eq!(body["metadata"]["namespace"], "prod");
}

#[tokio::test]
async fn a_blocked_eviction_is_too_many_requests() {
    let body = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","code":429}"#;
    let (url, _server) = serve_once("429 Too Many Requests", "application/json", vec![body]).await;
    let err = pods(&url).evict("web-0", None).await.unwrap_err();
    assert!(err.is_too_many_requests(), "{err}");
}

#[tokio::test]
async fn binding_posts_a_binding_to_the_node() {
    let ok = r#"{"kind":"Status","apiVersion":"v1","status":"Success","code":201}"#;
    let (url, server) = serve_once("201 Created", "application/json", vec![ok]).await;
    pods(&url).bind_to_node("web-0", "node-1").await.unwrap();
    let received = server.await.unwrap();
    assert_eq!(received.method, "POST");
    assert_eq!(
        received.target,
        "/api/v1/namespaces/prod/pods/web-0/binding"
    );
    let body: serde_json::Value = serde_json::from_str(&received.body).unwrap();
    assert_eq!(body["kind"], "Binding");
    assert_eq!(body["target"]["kind"], "Node");
    assert_eq!(body["target"]["name"], "node-1");
}

#[tokio::test]
async fn pod_extensions_need_a_namespace() {
    let rest = RestClient::new(Config::new("http://127.0.0.1:1")).unwrap();
    let everywhere = ResourceClient::<Pod>::all_namespaces(rest);
    assert!(matches!(
        everywhere.logs("x", &LogOptions::default()).await,
        Err(Error::Refused(RefusedRequest::NamespaceRequired {
            verb: "logs",
            ..
        }))
    ));
    assert!(matches!(
        everywhere.evict("x", None).await,
        Err(Error::Refused(RefusedRequest::NamespaceRequired {
            verb: "evict",
            ..
        }))
    ));
}
