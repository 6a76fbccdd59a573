//! Proxies: an HTTP `CONNECT` proxy on loopback tunnels TLS to the test server, with the
//! credentials of the proxy URL.

use crate::support;

use std::sync::Arc;

use kclient_rest::{Error, Proxy, RestClient};
use parking_lot::Mutex;
use serde_json::json;
use support::{json, raw_server, Pki, TestServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A CONNECT proxy that records each request head and tunnels to the target (or refuses with
/// 407 when `require` is set and the Proxy-Authorization header differs).
pub(crate) async fn connect_proxy(
    require: Option<&'static str>,
) -> (
    std::net::SocketAddr,
    Arc<Mutex<Vec<String>>>,
    tokio::task::JoinHandle<()>,
) {
    let heads = Arc::new(Mutex::new(Vec::new()));
    let recorded = heads.clone();
    let (addr, task) = raw_server(move |mut client, _| {
        let recorded = recorded.clone();
        async move {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                if client.read_exact(&mut byte).await.is_err() {
                    return;
                }
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).into_owned();
            recorded.lock().push(head.clone());
            if let Some(expected) = require {
                let ok = head
                    .lines()
                    .any(|l| l.to_ascii_lowercase() == format!("proxy-authorization: {}", expected.to_ascii_lowercase()));
                if !ok {
                    let _ = client
                        .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n")
                        .await;
                    return;
                }
            }
            let target = head
                .lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .unwrap_or_default()
                .to_owned();
            let Ok(mut upstream) = TcpStream::connect(&target).await else {
                return;
            };
            if client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .is_err()
            {
                return;
            }
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        }
    })
    .await;
    (addr, heads, task)
}

async fn tls_server(pki: &Pki) -> TestServer {
    TestServer::https(pki.server_config(), |_| async {
        json(200, json!({"through": "proxy"}))
    })
    .await
}

#[tokio::test]
async fn requests_tunnel_through_a_connect_proxy() {
    let pki = Pki::new();
    let server = tls_server(&pki).await;
    let (proxy, heads, task) = connect_proxy(Some("Basic Ym9iOnMzY3JldA==")).await;
    let mut c = support::config(&server.url());
    c.tls.ca_data = Some(pki.ca_pem.clone().into_bytes());
    c.proxy = Proxy::Url(format!("http://bob:s3cret@{proxy}"));
    let v: serde_json::Value = RestClient::new(c)
        .unwrap()
        .get()
        .abs_path("/version")
        .json()
        .await
        .unwrap();
    assert_eq!(v["through"], "proxy");
    let heads = heads.lock().clone();
    assert_eq!(heads.len(), 1);
    assert!(
        heads[0].starts_with(&format!("CONNECT {} HTTP/1.1", server.addr)),
        "{}",
        heads[0]
    );
    assert_eq!(server.requests().len(), 1);
    task.abort();
}

#[tokio::test]
async fn a_refusing_proxy_is_a_connect_error() {
    let pki = Pki::new();
    let server = tls_server(&pki).await;
    let (proxy, _heads, task) = connect_proxy(Some("Basic c29tZW9uZTplbHNl")).await;
    let mut c = support::config(&server.url());
    c.tls.ca_data = Some(pki.ca_pem.clone().into_bytes());
    c.proxy = Proxy::Url(format!("http://{proxy}"));
    let err = RestClient::new(c)
        .unwrap()
        .get()
        .abs_path("/version")
        .send()
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Connect { refused: false, .. }),
        "{err:?}"
    );
    assert!(server.requests().is_empty());
    task.abort();
}

#[test]
fn unsupported_proxy_schemes_are_rejected() {
    let mut c = support::config("https://127.0.0.1:1");
    c.proxy = Proxy::Url("https://proxy.example:443".into());
    let err = RestClient::new(c).unwrap_err();
    assert!(
        err.to_string()
            .contains("https:// proxies are not supported"),
        "{err}"
    );
    let mut c = support::config("https://127.0.0.1:1");
    c.proxy = Proxy::Url("gopher://proxy".into());
    assert!(RestClient::new(c).is_err());
}

/// Issue 29, item 5: a refused proxy URL is shown as Go's `url.URL.Redacted` shows it (the
/// user kept, the password `xxxxx`), in the message and in `Debug`, also when the password
/// holds characters that end a URL's authority (where Go's parse shows the rest of it).
#[test]
fn a_refused_proxy_url_never_shows_its_password() {
    let cases = [
        (
            "https://user:PASSWORD@proxy:3128",
            "https://user:xxxxx@proxy:3128",
        ),
        ("gopher://user:PASSWORD@proxy", "gopher://user:xxxxx@proxy"),
        (
            "http://user:PASS/WORD@proxy:3128",
            "http://user:xxxxx@proxy:3128",
        ),
        (
            "socks5://user:PASSWORD@prox y:1080",
            "socks5://user:xxxxx@prox y:1080",
        ),
    ];
    for (proxy, shown) in cases {
        let mut c = support::config("https://127.0.0.1:1");
        c.proxy = Proxy::Url(proxy.into());
        assert!(!format!("{c:?}").contains("PASS"), "{c:?}");
        let Err(err) = RestClient::new(c) else {
            panic!("{proxy} accepted");
        };
        let message = format!("{err} {err:?}");
        assert!(message.contains(shown), "{proxy}: {message}");
        assert!(!message.contains("PASS"), "{proxy}: {message}");
    }
}
