//! The port-forward client against scripted servers that serve port-forward with the
//! kubelet's stream handling (`portforward::server`): over the WebSocket tunnel and over a
//! SPDY upgrade, with the fallback between them, and the ways a server or pod can fail.

use std::sync::Arc;

use kclient_core::ApiStatus;
use std::time::Duration;

use kclient_streaming::portforward::server::{self, PodIdentity, PortHandler};
use kclient_streaming::portforward::{Dialer, Error, ForwardedPort, PortForwarder, Transport};
use kclient_streaming::spdy::{self, ConnectionOptions, Role};
use kclient_streaming::upgrade::UpgradeError;
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{accept_spdy, accept_websocket, respond, RequestHead, ScriptedServer};

/// Port 80 echoes, port 82 echoes with a prefix, anything else is refused as a pod with
/// nothing listening there.
fn handler() -> PortHandler {
    Arc::new(|port, mut stream: spdy::Stream| {
        Box::pin(async move {
            if port != 80 && port != 82 {
                return Err(format!(
                    "dial tcp4 127.0.0.1:{port}: connect: connection refused"
                ));
            }
            let mut input = Vec::new();
            stream
                .read_to_end(&mut input)
                .await
                .map_err(|e| e.to_string())?;
            if port == 82 {
                stream.write_all(b"82:").await.map_err(|e| e.to_string())?;
            }
            stream.write_all(&input).await.map_err(|e| e.to_string())?;
            stream.shutdown().await.map_err(|e| e.to_string())
        })
    })
}

fn pod() -> PodIdentity {
    PodIdentity {
        name: "web".into(),
        uid: "u-1".into(),
    }
}

/// How the scripted server answers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Serve {
    /// The tunnel and SPDY.
    Both,
    /// SPDY only (a WebSocket upgrade gets 400).
    SpdyOnly,
}

async fn port_forward_server(serve: Serve, heads: Arc<Mutex<Vec<RequestHead>>>) -> ScriptedServer {
    ScriptedServer::start(move |head, tcp| {
        let heads = heads.clone();
        async move {
            heads.lock().push(head.clone());
            let websocket = head
                .header("Upgrade")
                .is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
            let connection = if websocket {
                if serve == Serve::SpdyOnly {
                    respond(
                        tcp,
                        "400 Bad Request",
                        "text/plain",
                        "websocket upgrades are not served here",
                    )
                    .await;
                    return;
                }
                let ws = accept_websocket(&head, tcp, Some("SPDY/3.1+portforward.k8s.io")).await;
                let tunnel = kclient_streaming::portforward::TunnelingConnection::new(ws);
                spdy::Connection::new(tunnel, Role::Server, ConnectionOptions::default())
            } else {
                let tcp = accept_spdy(tcp, "portforward.k8s.io").await;
                spdy::Connection::new(tcp, Role::Server, ConnectionOptions::default())
            };
            server::serve(connection, pod(), handler()).await;
        }
    })
    .await
}

async fn echo(
    stream: &mut (impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin),
    data: &[u8],
) -> std::io::Result<Vec<u8>> {
    stream.write_all(data).await?;
    stream.shutdown().await?;
    let mut back = Vec::new();
    stream.read_to_end(&mut back).await?;
    Ok(back)
}

#[tokio::test]
async fn connections_are_forwarded_through_the_websocket_tunnel() {
    let heads = Arc::default();
    let server = port_forward_server(Serve::Both, Arc::clone(&heads)).await;
    let connection = Dialer::for_pod(&server.client(), "ns", "web")
        .transport(Transport::WebSocketTunnel)
        .dial()
        .await
        .unwrap();
    let mut stream = connection.connect(80).await.unwrap();
    assert_eq!(echo(&mut stream, b"hello").await.unwrap(), b"hello");
    assert_eq!(stream.remote_error(), None);
    // A large transfer, in many frames.
    let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let mut stream = connection.connect(80).await.unwrap();
    assert_eq!(echo(&mut stream, &big).await.unwrap(), big);

    let heads = heads.lock().clone();
    assert_eq!(
        heads.len(),
        1,
        "one connection for every forwarded connection"
    );
    assert_eq!(heads[0].method, "GET");
    assert_eq!(heads[0].path, "/api/v1/namespaces/ns/pods/web/portforward");
    assert_eq!(
        heads[0].header("Sec-WebSocket-Protocol"),
        Some("SPDY/3.1+portforward.k8s.io")
    );
}

/// Several ports and connections at once on one connection: each pair is its own.
#[tokio::test]
async fn several_ports_and_connections_share_one_connection() {
    let server = port_forward_server(Serve::Both, Arc::default()).await;
    let connection = Dialer::for_pod(&server.client(), "ns", "web")
        .dial()
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for i in 0..6u16 {
        let connection = connection.clone();
        tasks.push(tokio::spawn(async move {
            let port = if i % 2 == 0 { 80 } else { 82 };
            let mut stream = connection.connect(port).await.unwrap();
            let data = format!("connection {i}").into_bytes();
            let back = echo(&mut stream, &data).await.unwrap();
            (port, data, back)
        }));
    }
    for task in tasks {
        let (port, data, back) = task.await.unwrap();
        let expected = if port == 82 {
            [b"82:".as_slice(), &data].concat()
        } else {
            data
        };
        assert_eq!(back, expected);
    }
}

/// A server that refuses the tunnel gets a SPDY upgrade instead (kubectl's fallback).
#[tokio::test]
async fn a_refused_tunnel_falls_back_to_a_spdy_upgrade() {
    let heads = Arc::default();
    let server = port_forward_server(Serve::SpdyOnly, Arc::clone(&heads)).await;
    let connection = Dialer::for_pod(&server.client(), "ns", "web")
        .dial()
        .await
        .unwrap();
    let mut stream = connection.connect(80).await.unwrap();
    assert_eq!(echo(&mut stream, b"over spdy").await.unwrap(), b"over spdy");
    let heads = heads.lock().clone();
    assert_eq!(heads.len(), 2);
    assert_eq!(heads[1].method, "POST");
    assert_eq!(heads[1].header("Upgrade"), Some("SPDY/3.1"));
    assert_eq!(
        heads[1].header("X-Stream-Protocol-Version"),
        Some("portforward.k8s.io")
    );

    // Without the fallback, the refusal is the error.
    let error = Dialer::for_pod(&server.client(), "ns", "web")
        .transport(Transport::WebSocketTunnel)
        .dial()
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::Upgrade(e) if e.is_upgrade_failure()),
        "{error:?}"
    );
}

/// What the pod side reports on the error stream surfaces on the connection: as the read
/// error after the data, and from `remote_error`.
#[tokio::test]
async fn the_pod_side_error_surfaces_on_the_forwarded_connection() {
    let server = port_forward_server(Serve::Both, Arc::default()).await;
    let connection = Dialer::for_pod(&server.client(), "ns", "web")
        .dial()
        .await
        .unwrap();
    let mut stream = connection.connect(81).await.unwrap();
    let mut buf = Vec::new();
    let error = stream.read_to_end(&mut buf).await.unwrap_err();
    let remote = error
        .get_ref()
        .and_then(|e| e.downcast_ref::<Error>())
        .unwrap_or_else(|| panic!("{error:?}"));
    let Error::Remote { port, message } = remote else {
        panic!("{remote:?}");
    };
    assert_eq!(*port, 81);
    assert_eq!(
        message,
        "error forwarding port 81 to pod web, uid u-1: dial tcp4 127.0.0.1:81: connect: connection refused"
    );
    assert!(stream
        .remote_error()
        .unwrap()
        .contains("connection refused"));
}

/// The forwarder listens on `localhost`, reports the ports it bound, forwards, and stops.
#[tokio::test]
async fn a_forwarder_listens_locally_and_forwards_every_connection() {
    let server = port_forward_server(Serve::Both, Arc::default()).await;
    let forwarder = PortForwarder::new(
        Dialer::for_pod(&server.client(), "ns", "web"),
        &["0:80", ":82"],
    )
    .unwrap();
    let forward = forwarder.start().await.unwrap();
    let ports = forward.ports().to_vec();
    assert_eq!(ports.len(), 2);
    assert!(ports.iter().all(|p| p.local != 0), "{ports:?}");
    assert_eq!(ports[0].remote, 80);
    for _ in 0..3 {
        let address = forward.local_addr(80).unwrap();
        assert!(address.ip().is_loopback() && address.is_ipv4());
        let mut local = tokio::net::TcpStream::connect(address).await.unwrap();
        assert_eq!(
            echo(&mut local, b"through a listener").await.unwrap(),
            b"through a listener"
        );
    }
    let mut local = tokio::net::TcpStream::connect(forward.local_addr(82).unwrap())
        .await
        .unwrap();
    assert_eq!(echo(&mut local, b"x").await.unwrap(), b"82:x");
    // Every address of `localhost` that could be bound listens on the same port.
    for (address, port) in forward.local_addresses() {
        assert_eq!(address.port(), port.local);
    }
    let address = forward.local_addr(80).unwrap();
    forward.stop().await.unwrap();
    assert!(
        tokio::net::TcpStream::connect(address).await.is_err(),
        "stopped: nothing listens"
    );
}

/// As client-go: an error from the pod side ends the whole forward.
#[tokio::test]
async fn a_pod_side_error_ends_the_forward() {
    let server = port_forward_server(Serve::Both, Arc::default()).await;
    let mut forward = PortForwarder::new(Dialer::for_pod(&server.client(), "ns", "web"), &["0:81"])
        .unwrap()
        .start()
        .await
        .unwrap();
    let mut local = tokio::net::TcpStream::connect(forward.local_addr(81).unwrap())
        .await
        .unwrap();
    let mut buf = Vec::new();
    let _ = local.read_to_end(&mut buf).await;
    let error = tokio::time::timeout(Duration::from_secs(10), forward.done())
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(error, Error::LostConnectionToPod(_)), "{error:?}");
}

/// The server going away ends the forward with the lost connection.
#[tokio::test]
async fn losing_the_connection_ends_the_forward() {
    let server = ScriptedServer::start(|head, tcp| async move {
        let ws = accept_websocket(&head, tcp, Some("SPDY/3.1+portforward.k8s.io")).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(ws);
    })
    .await;
    let mut forward = PortForwarder::new(Dialer::for_pod(&server.client(), "ns", "web"), &["0:80"])
        .unwrap()
        .start()
        .await
        .unwrap();
    let error = tokio::time::timeout(Duration::from_secs(10), forward.done())
        .await
        .unwrap()
        .unwrap_err();
    let Error::LostConnectionToPod(reason) = error else {
        panic!("{error:?}");
    };
    assert!(!reason.is_orderly(), "{reason:?}");
}

/// Refusals keep the server's `Status` (a missing pod is a 404); a server choosing another
/// protocol is refused by the client.
#[tokio::test]
async fn refusals_and_wrong_protocols_are_typed_errors() {
    let server = ScriptedServer::start(|_, tcp| async move {
        respond(
            tcp,
            "404 Not Found",
            "application/json",
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"web\" not found","reason":"NotFound","details":{"name":"web","kind":"pods"},"code":404}"#,
        )
        .await;
    })
    .await;
    let error = Dialer::for_pod(&server.client(), "ns", "web")
        .dial()
        .await
        .unwrap_err();
    let Error::Upgrade(upgrade) = &error else {
        panic!("{error:?}");
    };
    assert_eq!(upgrade.api_status().unwrap().code, 404);
    assert!(
        matches!(upgrade, UpgradeError::Refused(e) if kclient_core::ApiStatus::is_not_found(e))
    );

    let server = ScriptedServer::start(|_, tcp| async move {
        let tcp = accept_spdy(tcp, "other.k8s.io").await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        drop(tcp);
    })
    .await;
    let error = Dialer::for_pod(&server.client(), "ns", "web")
        .transport(Transport::Spdy)
        .dial()
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::Protocol(m) if m.contains("server returned \"other.k8s.io\"")),
        "{error:?}"
    );
}

/// A tunnel message over the limit breaks the connection, with the limit in the reason.
#[tokio::test]
async fn an_oversized_tunnel_message_breaks_the_connection() {
    use futures::SinkExt;
    let server = ScriptedServer::start(|head, tcp| async move {
        let mut ws = accept_websocket(&head, tcp, Some("SPDY/3.1+portforward.k8s.io")).await;
        let _ = ws
            .send(tokio_tungstenite::tungstenite::Message::Binary(
                vec![0u8; 64 * 1024].into(),
            ))
            .await;
        tokio::time::sleep(Duration::from_secs(2)).await;
    })
    .await;
    let connection = Dialer::for_pod(&server.client(), "ns", "web")
        .max_message_len(1024)
        .dial()
        .await
        .unwrap();
    let reason = tokio::time::timeout(Duration::from_secs(5), connection.closed())
        .await
        .unwrap();
    assert!(
        matches!(&reason, spdy::CloseReason::Failed(m) if m.contains("over the limit of 1024")),
        "{reason:?}"
    );
    assert!(matches!(
        connection.connect(80).await,
        Err(Error::Spdy(spdy::Error::Closed(_)))
    ));
}

/// A server that never answers a new stream: the opener gives up after client-go's 30 s.
#[tokio::test(start_paused = true)]
async fn an_unanswered_stream_times_out() {
    let server = ScriptedServer::start(|head, tcp| async move {
        let ws = accept_websocket(&head, tcp, Some("SPDY/3.1+portforward.k8s.io")).await;
        let tunnel = kclient_streaming::portforward::TunnelingConnection::new(ws);
        let connection = spdy::Connection::new(tunnel, Role::Server, ConnectionOptions::default());
        // Streams are accepted but never answered.
        let mut held = Vec::new();
        while let Some(stream) = connection.accept().await {
            held.push(stream);
        }
    })
    .await;
    let connection = Dialer::for_pod(&server.client(), "ns", "web")
        .dial()
        .await
        .unwrap();
    let error = connection.connect(80).await.unwrap_err();
    assert!(
        matches!(error, Error::Spdy(spdy::Error::ReplyTimeout { timeout, .. }) if timeout == Duration::from_secs(30)),
        "{error:?}"
    );
}

/// A port that is taken locally cannot be listened on: with nothing else to listen on,
/// the forward does not start.
#[tokio::test]
async fn a_taken_local_port_is_a_listen_error() {
    let server = port_forward_server(Serve::Both, Arc::default()).await;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let forwarder = PortForwarder::on_addresses(
        Dialer::for_pod(&server.client(), "ns", "web"),
        &["127.0.0.1"],
        &[&format!("{port}:80")],
    )
    .unwrap();
    let error = forwarder.start().await.unwrap_err();
    assert!(
        matches!(&error, Error::Listen(m) if m.contains("unable to listen on any of the requested ports")),
        "{error:?}"
    );
    assert_eq!(
        ForwardedPort::new(port, 80),
        format!("{port}:80").parse().unwrap()
    );
}
