//! `Request::upgrade`: an HTTP/1.1 upgrade with the client's TLS, proxy, credentials and
//! impersonation (what exec, attach and port-forward start with), and the answers that are
//! not `101`.

use crate::support;

use std::sync::Arc;

use kclient_core::ApiStatus;
use kclient_rest::{Error, Proxy, RestClient};
use parking_lot::Mutex;
use support::{raw_server, Pki};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A TLS server on raw TCP: reads the request head, records it with the ALPN protocol the
/// handshake chose, and answers `answer`; after a `101` it echoes what it reads.
async fn upgrade_server(
    pki: &Pki,
    answer: &'static str,
) -> (
    std::net::SocketAddr,
    Arc<Mutex<Vec<(String, Option<Vec<u8>>)>>>,
) {
    let acceptor = tokio_rustls::TlsAcceptor::from(pki.server_config());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = seen.clone();
    let (addr, _task) = raw_server(move |tcp, _| {
        let (acceptor, recorded) = (acceptor.clone(), recorded.clone());
        async move {
            let Ok(mut tls) = acceptor.accept(tcp).await else {
                return;
            };
            let alpn = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                if tls.read_exact(&mut byte).await.is_err() {
                    return;
                }
                head.push(byte[0]);
            }
            recorded
                .lock()
                .push((String::from_utf8_lossy(&head).into_owned(), alpn));
            let _ = tls.write_all(answer.as_bytes()).await;
            if answer.starts_with("HTTP/1.1 101") {
                let mut buf = [0u8; 1024];
                while let Ok(n) = tls.read(&mut buf).await {
                    if n == 0 || tls.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            }
            let _ = tls.shutdown().await;
        }
    })
    .await;
    (addr, seen)
}

const SWITCHED: &str =
    "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: x-echo\r\nX-Chosen: echo/1\r\n\r\n";

#[tokio::test]
async fn an_upgrade_is_http1_with_the_client_s_tls_proxy_credentials_and_impersonation() {
    let pki = Pki::new();
    let (server, seen) = upgrade_server(&pki, SWITCHED).await;
    let (proxy, proxy_heads, proxy_task) = crate::proxy::connect_proxy(None).await;
    let mut config = support::config(&format!("https://{server}"));
    config.tls.ca_data = Some(pki.ca_pem.clone().into_bytes());
    config.proxy = Proxy::Url(format!("http://{proxy}"));
    config.bearer_token = Some("sesame".into());
    config.impersonate.user = Some("alice".into());
    let upgraded = RestClient::new(config)
        .unwrap()
        .get()
        .abs_path("/api/v1/namespaces/ns/pods/web/exec")
        .header("Upgrade", "x-echo")
        .upgrade()
        .await
        .unwrap();
    assert_eq!(upgraded.headers()["x-chosen"], "echo/1");
    let (_, mut connection) = upgraded.into_parts();
    connection
        .write_all(b"over the upgraded connection")
        .await
        .unwrap();
    let mut back = [0u8; 28];
    connection.read_exact(&mut back).await.unwrap();
    assert_eq!(&back, b"over the upgraded connection");

    let (head, alpn) = seen.lock()[0].clone();
    // The HTTP/1.1-only pool offers no `h2` (no ALPN at all, as hyper-rustls does for
    // HTTP/1.1 alone), so the server cannot choose HTTP/2, where there is no upgrade.
    assert_ne!(
        alpn.as_deref(),
        Some(&b"h2"[..]),
        "an upgrade never goes over HTTP/2"
    );
    let lower = head.to_ascii_lowercase();
    assert!(
        head.starts_with("GET /api/v1/namespaces/ns/pods/web/exec HTTP/1.1\r\n"),
        "{head}"
    );
    for line in [
        "connection: upgrade",
        "upgrade: x-echo",
        "authorization: bearer sesame",
        "impersonate-user: alice",
    ] {
        assert!(lower.contains(line), "{line} in {head}");
    }
    assert_eq!(proxy_heads.lock().len(), 1, "through the proxy's tunnel");
    proxy_task.abort();
}

#[tokio::test]
async fn answers_that_do_not_switch_are_errors() {
    let pki = Pki::new();
    let client = |addr: std::net::SocketAddr| {
        let mut config = support::config(&format!("https://{addr}"));
        config.tls.ca_data = Some(pki.ca_pem.clone().into_bytes());
        RestClient::new(config).unwrap()
    };
    let refused = "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 93\r\n\r\n{\"kind\":\"Status\",\"status\":\"Failure\",\"message\":\"pods \\\"web\\\" not found\",\"reason\":\"NotFound\"}";
    let (addr, _) = upgrade_server(&pki, refused).await;
    let error = client(addr)
        .get()
        .abs_path("/x")
        .header("Upgrade", "x-echo")
        .upgrade()
        .await
        .unwrap_err();
    assert!(error.is_not_found(), "{error:?}");
    assert_eq!(error.http_code(), Some(404));

    let ok = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    let (addr, _) = upgrade_server(&pki, ok).await;
    let error = client(addr)
        .get()
        .abs_path("/x")
        .header("Upgrade", "x-echo")
        .upgrade()
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::HttpStatus { code: 200, .. }),
        "{error:?}"
    );

    let error = client(addr)
        .get()
        .abs_path("/x")
        .upgrade()
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::InvalidRequest(m) if m.contains("Upgrade header")),
        "{error:?}"
    );
}
