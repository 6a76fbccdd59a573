//! The server side of port-forward: SPDY through the WebSocket tunnel or over a SPDY
//! upgrade, the kubelet's stream pairing, and the test's port handler behind it.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use http::{HeaderMap, Response, StatusCode};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use kclient_streaming::portforward::server::{self, PodIdentity, PortHandler};
use kclient_streaming::portforward::{
    TunnelingConnection, PORT_FORWARD_PROTOCOL_V1_NAME, WEBSOCKETS_SPDY_TUNNELING_PORT_FORWARD_V1,
};
use kclient_streaming::spdy::{self, ConnectionOptions, Role};
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::tungstenite::protocol::Role as WsRole;
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

use super::handlers::PortForwardHandler;
use super::protocol::{offered_protocols, spdy_handshake, text, upgrade_to, websocket_accept};
use crate::response::Body;

/// Which pod's port a forwarded connection is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortForwardRequest {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod.
    pub pod: String,
    /// The pod's port.
    pub port: u16,
}

/// The pod a port-forward reaches.
pub(super) struct Target {
    pub(super) namespace: String,
    pub(super) pod: String,
    pub(super) uid: String,
}

/// Answers the upgrade: the tunnel (`SPDY/3.1+portforward.k8s.io`) or a SPDY upgrade, or the
/// kubelet's refusal for a pod with nothing running.
pub(super) fn upgrade(
    headers: &HeaderMap,
    on_upgrade: OnUpgrade,
    target: Target,
    running: bool,
    handler: PortForwardHandler,
    shutdown: CancellationToken,
) -> Response<Body> {
    let websocket = upgrade_to(headers, "websocket");
    let spdy_upgrade = upgrade_to(headers, spdy::HEADER_SPDY31);
    if !websocket && !spdy_upgrade {
        return text(
            StatusCode::BAD_REQUEST,
            "unable to upgrade: missing upgrade headers in request".into(),
        );
    }
    if websocket
        && !offered_protocols(headers)
            .iter()
            .any(|p| p == WEBSOCKETS_SPDY_TUNNELING_PORT_FORWARD_V1)
    {
        return text(
            StatusCode::BAD_REQUEST,
            format!(
                "kclient-fake serves port-forward through the {WEBSOCKETS_SPDY_TUNNELING_PORT_FORWARD_V1} tunnel or a SPDY upgrade, not the WebSocket channel protocol"
            ),
        );
    }
    if !running {
        // The kubelet finds no running sandbox; kube-apiserver passes its answer through.
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("pod not found (\"{}_{}\")", target.pod, target.namespace),
        );
    }
    let response = if websocket {
        match websocket_accept(headers, WEBSOCKETS_SPDY_TUNNELING_PORT_FORWARD_V1) {
            Ok(r) => r,
            Err(refusal) => return refusal,
        }
    } else {
        match spdy_handshake(headers, &[PORT_FORWARD_PROTOCOL_V1_NAME]) {
            Ok((r, _)) => r,
            Err(refusal) => return refusal,
        }
    };
    let transport = if websocket {
        Transport::WebSocketTunnel
    } else {
        Transport::Spdy
    };
    spawn_session(on_upgrade, transport, target, handler, shutdown);
    response
}

/// How the session's SPDY arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Transport {
    /// Inside a WebSocket (`SPDY/3.1+portforward.k8s.io`).
    WebSocketTunnel,
    /// On the upgraded connection itself.
    Spdy,
}

/// Once the connection is upgraded, serves it with the kubelet's stream pairing and the
/// test's handler, until it ends or the server shuts down.
pub(super) fn spawn_session(
    on_upgrade: OnUpgrade,
    transport: Transport,
    target: Target,
    handler: PortForwardHandler,
    shutdown: CancellationToken,
) {
    let pod = PodIdentity {
        name: target.pod.clone(),
        uid: target.uid,
    };
    let (namespace, pod_name) = (target.namespace, target.pod);
    let port_handler: PortHandler = Arc::new(move |port, stream| {
        let request = PortForwardRequest {
            namespace: namespace.clone(),
            pod: pod_name.clone(),
            port,
        };
        handler(request, stream)
    });
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let io = TokioIo::new(upgraded);
        let connection = match transport {
            Transport::WebSocketTunnel => {
                let socket = WebSocketStream::from_raw_socket(io, WsRole::Server, None).await;
                spdy::Connection::new(
                    TunnelingConnection::new(socket),
                    Role::Server,
                    ConnectionOptions::default(),
                )
            }
            Transport::Spdy => {
                spdy::Connection::new(io, Role::Server, ConnectionOptions::default())
            }
        };
        tokio::select! {
            _ = server::serve(connection.clone(), pod, port_handler) => {}
            _ = shutdown.cancelled() => connection.close(),
        }
    });
}

type PortFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// A port handler that sends back whatever it receives (an in-process echo server on every
/// port), for [`FakeApiServer::set_port_forward_handler`](crate::FakeApiServer::set_port_forward_handler).
pub fn echo_port(_: PortForwardRequest, stream: spdy::Stream) -> PortFuture {
    Box::pin(async move {
        let (mut read, mut write) = tokio::io::split(stream);
        tokio::io::copy(&mut read, &mut write)
            .await
            .map_err(|e| e.to_string())?;
        write.shutdown().await.map_err(|e| e.to_string())
    })
}

/// A port handler that connects every forwarded connection to `address` (a real listener
/// of the test: an HTTP server, a database), whatever the pod's port; a refused connection
/// is the pod side's error, as when nothing listens in the pod.
pub fn forward_to_address(
    address: SocketAddr,
) -> impl Fn(PortForwardRequest, spdy::Stream) -> PortFuture + Send + Sync + 'static {
    move |_, mut stream| {
        Box::pin(async move {
            let mut target = tokio::net::TcpStream::connect(address)
                .await
                .map_err(|e| format!("dial tcp4 {address}: {e}"))?;
            tokio::io::copy_bidirectional(&mut stream, &mut target)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    }
}
