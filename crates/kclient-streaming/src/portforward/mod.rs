//! Forwarding local ports to a pod's ports (client-go's `tools/portforward`).
//!
//! A [`Dialer`] opens one connection to the pod's `portforward` subresource and runs SPDY/3.1
//! on it, the way kube-apiserver 1.37 offers client-go: through a WebSocket tunnel
//! (`GET …/portforward`, subprotocol `SPDY/3.1+portforward.k8s.io`: each WebSocket message
//! carries bytes of the SPDY session), and, when the server refuses the tunnel (API servers
//! before 1.30, or a proxy that drops WebSocket upgrades), a plain SPDY upgrade (`POST`,
//! `Upgrade: SPDY/3.1`, `X-Stream-Protocol-Version: portforward.k8s.io`), as kubectl's
//! fallback dialer does. Each forwarded TCP connection is a pair of streams with the headers
//! `streamType` (`error`, then `data`), `port` and `requestID`: the data stream carries the
//! bytes, the error stream what the pod side could not do ("error forwarding port 80 …").
//!
//! Two levels, as in client-go, plus a shortcut:
//!
//! - [`PortForwarder`] listens locally (`localhost` by default: `127.0.0.1` and `::1`) and
//!   forwards every connection it accepts; [`start`](PortForwarder::start) returns a
//!   [`PortForward`] with the ports it bound.
//! - [`PortForwardConnection::connect`] opens one forwarded connection, an
//!   `AsyncRead + AsyncWrite` ([`PortForwardStream`]), without a listener.
//!
//! The older WebSocket channel protocol for port-forward (the kubelet's `v4.channel.k8s.io`
//! for `portforward`: one WebSocket per forwarded connection, two channels per port and the
//! port number in the first bytes) is not spoken: client-go never used it, and every server
//! that lacks the tunnel accepts the SPDY upgrade this falls back to.
//!
//! ```no_run
//! use kclient_streaming::portforward::{Dialer, PortForwarder};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! # async fn run(client: kclient_rest::RestClient) -> Result<(), Box<dyn std::error::Error>> {
//! // A local listener (port 0: any free port) forwarding to port 80 of pod `web`.
//! let forward = PortForwarder::new(Dialer::for_pod(&client, "default", "web"), &["0:80"])?
//!     .start()
//!     .await?;
//! let address = forward.local_addr(80).unwrap();
//! let mut conn = tokio::net::TcpStream::connect(address).await?;
//! conn.write_all(b"GET / HTTP/1.0\r\n\r\n").await?;
//!
//! // Or one connection, without a listener.
//! let connection = Dialer::for_pod(&client, "default", "web").dial().await?;
//! let mut stream = connection.connect(80).await?;
//! stream.write_all(b"GET / HTTP/1.0\r\n\r\n").await?;
//! let mut answer = Vec::new();
//! stream.read_to_end(&mut answer).await?;
//! forward.stop().await?;
//! # Ok(()) }
//! ```

mod dialer;
mod forwarder;
pub mod server;
mod tunnel;

use std::time::Duration;

use kclient_core::{ApiStatus, Status};

pub use dialer::{Dialer, PortForwardConnection, PortForwardStream, Transport, ERROR_STREAM_GRACE};
pub use forwarder::{ForwardedPort, PortForward, PortForwarder};
pub use tunnel::TunnelingConnection;

use crate::spdy::{self, CloseReason};
use crate::upgrade::UpgradeError;

/// The port-forward protocol (client-go's `PortForwardProtocolV1Name`).
pub const PORT_FORWARD_PROTOCOL_V1_NAME: &str = "portforward.k8s.io";
/// The prefix of a WebSocket subprotocol that tunnels SPDY.
pub const WEBSOCKETS_SPDY_TUNNELING_PREFIX: &str = "SPDY/3.1+";
/// The WebSocket subprotocol of the tunnel.
pub const WEBSOCKETS_SPDY_TUNNELING_PORT_FORWARD_V1: &str = "SPDY/3.1+portforward.k8s.io";

/// The header naming a stream's role.
pub const STREAM_TYPE_HEADER: &str = "streamType";
/// The header naming the pod's port.
pub const PORT_HEADER: &str = "port";
/// The header pairing a connection's error and data streams.
pub const REQUEST_ID_HEADER: &str = "requestID";
/// The role of the stream carrying the bytes.
pub const STREAM_TYPE_DATA: &str = "data";
/// The role of the stream carrying the pod side's errors.
pub const STREAM_TYPE_ERROR: &str = "error";

/// How often a ping goes through the WebSocket tunnel (client-go's tunneling dialer).
pub const PING_PERIOD: Duration = Duration::from_secs(10);
/// How often a ping goes over a SPDY upgrade (client-go's `spdy.RoundTripperFor`).
pub const SPDY_PING_PERIOD: Duration = Duration::from_secs(5);
/// The most of an error stream kept.
pub const MAX_ERROR_STREAM_LEN: usize = 64 * 1024;

/// Why a port-forward failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The connection could not be opened (refused by the server with its `Status`: a
    /// missing pod, one without a node; the request failed; no answer in time).
    #[error("error upgrading connection: {0}")]
    Upgrade(UpgradeError),
    /// The server chose another protocol.
    #[error("{0}")]
    Protocol(String),
    /// A SPDY stream could not be opened, or the connection is over.
    #[error(transparent)]
    Spdy(#[from] spdy::Error),
    /// The pod side could not forward a connection (what it wrote on the error stream).
    #[error("an error occurred forwarding to port {port}: {message}")]
    Remote {
        /// The pod's port.
        port: u16,
        /// The pod side's message.
        message: String,
    },
    /// The connection to the pod ended while forwarding (client-go's
    /// `ErrLostConnectionToPod`).
    #[error("lost connection to pod: {0}")]
    LostConnectionToPod(CloseReason),
    /// A port specification that does not parse.
    #[error("{0}")]
    InvalidPort(String),
    /// A listen address that is not `localhost` or an IP.
    #[error("{0}")]
    InvalidAddress(String),
    /// No local port could be listened on.
    #[error("{0}")]
    Listen(String),
}

/// The server's refusal of the upgrade (a missing pod, one without a node).
impl ApiStatus for Error {
    fn api_status(&self) -> Option<&Status> {
        match self {
            Error::Upgrade(e) => e.api_status(),
            _ => None,
        }
    }

    fn is_connection_refused(&self) -> bool {
        matches!(self, Error::Upgrade(e) if e.is_connection_refused())
    }
}
