//! Bad input never panics the server: malformed bodies, paths, query strings, patches and
//! raw bytes on the socket all get an answer (or a closed connection for garbage that is not
//! HTTP), and the server keeps serving.

use crate::common;

use common::*;
use http::{Method, StatusCode};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

const PATHS: &[&str] = &[
    "/api/v1/namespaces/default/pods",
    "/api/v1/namespaces/default/pods/a",
    "/api/v1/namespaces/default/pods/a/status",
    "/api/v1/namespaces/default/pods/a/scale",
    "/api/v1/namespaces/default/pods/a/exec",
    "/apis/apps/v1/namespaces/default/deployments/d/scale",
    "/api/v1/namespaces/a",
    "/api/v1/namespaces/a/finalize",
    "/api/v1/nodes/n",
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x.y",
    "/api/v1/watch/pods",
    "/api/v1/namespaces/%2e%2e/pods",
    "/api/v1/namespaces//pods",
    "/api/v1/namespaces/default/pods/..",
    "/apis/apps",
    "/apis/nope/v1/things",
    "/api/v1/namespaces/default/pods/a/b/c/d",
];

const QUERIES: &[&str] = &[
    "",
    "?watch=maybe",
    "?limit=-5",
    "?limit=99999999999999999999",
    "?continue=%ZZ",
    "?continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTIsInN0YXJ0IjoiLi4vLi4vIn0",
    "?resourceVersion=abc",
    "?resourceVersion=18446744073709551616",
    "?resourceVersionMatch=Sometimes&resourceVersion=1",
    "?labelSelector=%28%28%28",
    "?fieldSelector=a%3D%3D%3Db",
    "?timeoutSeconds=-1&watch=true",
    "?dryRun=Partly",
    "?fieldManager=&force=yes",
    "?propagationPolicy=Sideways",
    "?gracePeriodSeconds=x",
    "?%%%=%%%",
];

const TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/merge-patch+json",
    "application/json-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/vnd.kubernetes.protobuf",
    "",
];

#[tokio::test]
async fn malformed_requests_get_answers() {
    let (_server, c) = server().await;
    c.post("/api/v1/namespaces/default/pods", &pod("a")).await;
    let bodies: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"{".to_vec(),
        b"null".to_vec(),
        b"[]".to_vec(),
        b"\"x\"".to_vec(),
        b"{\"metadata\": 5}".to_vec(),
        b"{\"metadata\": {\"name\": 5}}".to_vec(),
        b"{\"metadata\": {\"name\": \"a\", \"finalizers\": \"x\"}}".to_vec(),
        b"{\"metadata\": {\"name\": \"a\", \"ownerReferences\": [1, {\"uid\": 2}]}}".to_vec(),
        b"[{\"op\": \"explode\", \"path\": \"/\"}]".to_vec(),
        b"{\"spec\": {\"containers\": [{\"$patch\": \"delete\"}]}}".to_vec(),
        b"{\"spec\": {\"replicas\": \"many\"}}".to_vec(),
        b"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n".to_vec(),
        b"\xff\xfe\x00garbage".to_vec(),
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let methods = [
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
    ];
    for i in 0..400 {
        let path = format!("{}{}", rng.pick(PATHS), rng.pick(QUERIES));
        let method = methods[(rng.next() % methods.len() as u64) as usize].clone();
        let content_type = rng.pick(TYPES);
        let body = if i % 5 == 0 {
            let n = (rng.next() % 64) as usize;
            rng.bytes(n)
        } else {
            bodies[(rng.next() % bodies.len() as u64) as usize].clone()
        };
        if method == Method::GET && path.contains("watch") {
            continue;
        }
        let r = c.send(method.clone(), &path, content_type, body).await;
        assert!(
            r.status.is_client_error()
                || r.status.is_success()
                || r.status == StatusCode::GATEWAY_TIMEOUT,
            "{method} {path}: {} {}",
            r.status,
            r.body
        );
    }
    assert_eq!(
        c.get("/version").await.status,
        StatusCode::OK,
        "still serving"
    );
}

#[tokio::test]
async fn garbage_on_the_socket() {
    let (server, c) = server().await;
    let mut rng = Rng(42);
    let inputs: Vec<Vec<u8>> = vec![
        b"GARBAGE\r\n\r\n".to_vec(),
        b"GET /version HTTP/9.9\r\n\r\n".to_vec(),
        b"GET \x00\x01 HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        b"POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{".to_vec(),
        b"POST /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".to_vec(),
        rng.bytes(512),
    ];
    for input in inputs {
        let mut s = tokio::net::TcpStream::connect(server.address())
            .await
            .unwrap();
        let _ = s.write_all(&input).await;
        let _ = s.shutdown().await;
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
    }
    assert_eq!(
        c.get("/version").await.status,
        StatusCode::OK,
        "still serving"
    );
}

#[tokio::test]
async fn hostile_objects_are_stored_or_refused_cleanly() {
    let (_server, c) = server().await;
    let deep = (0..200).fold(json!("leaf"), |acc, _| json!({ "x": acc }));
    let r = c
        .post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"metadata": {"name": "deep"}, "data": {}, "extra": deep}),
        )
        .await;
    assert!(
        r.status.is_success() || r.status.is_client_error(),
        "{}",
        r.status
    );
    let r = c
        .post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"metadata": {"name": "x".repeat(300)}, "data": {}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let r = c
        .post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"metadata": {"name": "a/b"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let r = c
        .patch(
            "/api/v1/namespaces/default/configmaps/deep",
            APPLY,
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\n  managedFields: 7\n",
        )
        .await;
    assert!(
        r.status.is_success() || r.status.is_client_error(),
        "{}",
        r.status
    );
}

/// Issue 19, item 2: a watch with `timeoutSeconds=9223372036854775807` used to panic the
/// connection (`now + timeout` overflowed) and drop it without an answer. Now it is a watch
/// without a practical deadline, and its events arrive.
#[tokio::test]
async fn a_huge_watch_timeout_is_served() {
    let (_server, c) = server().await;
    let mut w = c
        .watch("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=9223372036854775807&allowWatchBookmarks=true")
        .await;
    c.post(
        "/api/v1/namespaces/default/configmaps",
        &json!({"metadata": {"name": "after"}}),
    )
    .await;
    assert_eq!(
        w.next_summary().await,
        Some(("ADDED".to_string(), "after".to_string()))
    );
    // The server goes on serving.
    assert_eq!(
        c.get("/api/v1/namespaces/default/configmaps/after")
            .await
            .status,
        StatusCode::OK
    );
}

/// Reads until the server closes the connection (or a minute of tokio time passes):
/// whether it was closed.
async fn closed_by_server(stream: &mut tokio::net::TcpStream) -> bool {
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(std::time::Duration::from_secs(60), stream.read(&mut buf)).await
        {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

/// Issue 19, item 10: a connection that never completes its request headers (slowloris), or
/// never sends anything, is closed after kube-apiserver's 32 s header timeout; one that
/// never starts TLS likewise. The server keeps serving others.
#[tokio::test(start_paused = true)]
async fn slow_or_silent_connections_are_closed() {
    let (server, c) = server().await;
    let mut silent = tokio::net::TcpStream::connect(server.address())
        .await
        .unwrap();
    let mut slow = tokio::net::TcpStream::connect(server.address())
        .await
        .unwrap();
    slow.write_all(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    assert!(
        closed_by_server(&mut silent).await,
        "a silent connection is closed"
    );
    assert!(
        closed_by_server(&mut slow).await,
        "a slowloris connection is closed"
    );
    assert_eq!(c.get("/api/v1/namespaces").await.status, StatusCode::OK);

    let tls = kclient_fake::FakeApiServer::builder()
        .https()
        .start()
        .await
        .unwrap();
    let mut no_hello = tokio::net::TcpStream::connect(tls.address()).await.unwrap();
    assert!(
        closed_by_server(&mut no_hello).await,
        "a connection without a TLS handshake is closed"
    );
}

/// Issue 19, item 6: a YAML body nested 100,000 deep is refused before parsing, and the
/// server goes on serving.
#[tokio::test]
async fn deeply_nested_yaml_bodies_are_refused() {
    let (_server, c) = server().await;
    let body = format!("metadata: {{name: x}}\ndata: {}", "[".repeat(100_000)).into_bytes();
    let r = c
        .send(
            Method::POST,
            "/api/v1/namespaces/default/configmaps",
            "application/yaml",
            body,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("nested deeper than 128 levels"),
        "{}",
        r.body
    );
    assert_eq!(c.get("/api/v1/namespaces").await.status, StatusCode::OK);
}
