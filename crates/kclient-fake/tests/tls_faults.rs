//! HTTPS with bearer-token and client-certificate authentication, kubeconfigs, and fault
//! injection.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::*;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use kclient_fake::{CertifiedKey, Failure, FakeApiServer};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::{json, Value};

async fn https_get(
    server: &FakeApiServer,
    path: &str,
    token: Option<&str>,
    cert: Option<&CertifiedKey>,
) -> (StatusCode, Value) {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    let ca =
        CertificateDer::from_pem_slice(server.ca_certificate_pem().unwrap().as_bytes()).unwrap();
    roots.add(ca).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match cert {
        Some(c) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(c.cert_pem.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(c.key_pem.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    let tcp = tokio::net::TcpStream::connect(server.address())
        .await
        .unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .expect("the server's certificate verifies against its CA");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut req = Request::get(path).header("host", "127.0.0.1");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let res = sender
        .send_request(req.body(Full::new(Bytes::new())).unwrap())
        .await
        .unwrap();
    let status = res.status();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

#[tokio::test]
async fn https_with_bearer_tokens() {
    let server = FakeApiServer::builder()
        .https()
        .token("s3cret")
        .start()
        .await
        .unwrap();
    assert!(server.url().starts_with("https://127.0.0.1:"));
    let (status, body) = https_get(&server, "/api/v1/namespaces", Some("s3cret"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["kind"], "NamespaceList");
    let (status, body) = https_get(&server, "/api/v1/namespaces", Some("wrong"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    );
    let (status, _) = https_get(&server, "/api/v1/namespaces", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = https_get(&server, "/healthz", None, None).await;
    assert_eq!(status, StatusCode::OK);

    let kubeconfig: Value = serde_yaml_ng::from_str(&server.kubeconfig_yaml().unwrap()).unwrap();
    assert_eq!(kubeconfig["clusters"][0]["cluster"]["server"], server.url());
    assert!(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"].is_string());
    assert_eq!(kubeconfig["users"][0]["user"]["token"], "s3cret");
}

#[tokio::test]
async fn https_with_client_certificates() {
    let server = FakeApiServer::builder()
        .client_cert_auth()
        .start()
        .await
        .unwrap();
    let cert = server.issue_client_certificate("alice", &["devs"]).unwrap();
    let (status, _) = https_get(&server, "/api/v1/pods", None, Some(&cert)).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = https_get(&server, "/api/v1/pods", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let kubeconfig: Value = serde_yaml_ng::from_str(&server.kubeconfig_yaml().unwrap()).unwrap();
    assert!(kubeconfig["users"][0]["user"]["client-certificate-data"].is_string());
    assert!(kubeconfig["users"][0]["user"]["client-key-data"].is_string());
}

#[tokio::test]
async fn plain_http_kubeconfig() {
    let (server, _c) = server().await;
    let path = std::env::temp_dir().join(format!("kclient-fake-kubeconfig-{}", std::process::id()));
    server.write_kubeconfig(&path).unwrap();
    let kubeconfig: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(kubeconfig["clusters"][0]["cluster"]["server"], server.url());
    assert_eq!(kubeconfig["current-context"], "kclient-fake");
    assert_eq!(kubeconfig["contexts"][0]["context"]["namespace"], "default");
    assert!(server.ca_certificate_pem().is_none());
    assert!(server.issue_client_certificate("x", &[]).is_err());
}

#[tokio::test]
async fn failing_the_next_requests() {
    let (server, c) = server().await;
    server
        .faults()
        .fail_next(2, Failure::status(503).retry_after(3));
    assert_eq!(server.faults().pending_failures(), 2);
    for _ in 0..2 {
        let r = c.get("/api/v1/namespaces/default/pods").await;
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers["retry-after"], "3");
        assert_eq!(
            r.body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "injected failure (503)", "reason": "ServiceUnavailable",
                   "details": {"retryAfterSeconds": 3}, "code": 503})
        );
    }
    assert_eq!(
        c.get("/api/v1/namespaces/default/pods").await.status,
        StatusCode::OK
    );
    server
        .faults()
        .fail_next(1, Failure::status(429).retry_after(1).message("slow down"));
    let r = c.get("/version").await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.body["message"], "slow down");
    server.faults().fail_next(5, Failure::status(500));
    server.faults().clear_failures();
    assert_eq!(c.get("/version").await.status, StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn added_latency() {
    let (server, c) = server().await;
    server.faults().set_latency(Duration::from_secs(2));
    let before = tokio::time::Instant::now();
    assert_eq!(c.get("/version").await.status, StatusCode::OK);
    assert!(
        before.elapsed() >= Duration::from_secs(2),
        "the paused clock moved by the latency"
    );
    server.faults().set_latency(Duration::ZERO);
    assert_eq!(c.get("/version").await.status, StatusCode::OK);
}

#[tokio::test(start_paused = true)]
async fn stalled_watches_stay_open() {
    let (server, c) = server().await;
    let mut w = c
        .watch(&format!(
            "/api/v1/namespaces/default/pods?watch=true&resourceVersion={}",
            server.resource_version()
        ))
        .await;
    server.faults().stall_watches();
    c.post("/api/v1/namespaces/default/pods", &pod("p")).await;
    let nothing = tokio::time::timeout(Duration::from_secs(30), w.next()).await;
    assert!(
        nothing.is_err(),
        "nothing arrives while stalled, and the stream stays open"
    );
    server.faults().resume_watches();
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("ADDED".into(), "p".into())
    );
}

/// `hang_watches`: an open watch is left open and silent past its `timeoutSeconds` — no
/// event, no bookmark, no end — as a broken server or proxy can leave it; a watch started
/// afterwards is served.
#[tokio::test(start_paused = true)]
async fn hung_watches_outlive_their_timeout_and_later_watches_are_served() {
    let (server, c) = server().await;
    let watch = format!(
        "/api/v1/namespaces/default/pods?watch=true&allowWatchBookmarks=true&timeoutSeconds=60&resourceVersion={}",
        server.resource_version()
    );
    let mut hung = c.watch(&watch).await;
    server.faults().hang_watches();
    c.post("/api/v1/namespaces/default/pods", &pod("p")).await;
    let nothing = tokio::time::timeout(Duration::from_secs(600), hung.next()).await;
    assert!(
        nothing.is_err(),
        "nothing arrives, and the watch outlives its timeout"
    );
    let mut later = c.watch(&watch).await;
    assert_eq!(
        later.next_summary().await.unwrap(),
        ("ADDED".into(), "p".into())
    );
}

#[tokio::test]
async fn shutdown_closes_watches_and_the_listener() {
    let (server, c) = server().await;
    let mut w = c.watch("/api/v1/namespaces/default/pods?watch=true").await;
    let addr = server.address();
    server.shutdown().await;
    assert!(w.next().await.is_none());
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}
