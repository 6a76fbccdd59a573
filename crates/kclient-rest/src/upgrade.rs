//! [`Upgraded`]: a connection the server switched to another protocol (`101 Switching
//! Protocols`), what [`Request::upgrade`](crate::Request::upgrade) returns. The WebSocket
//! handshake of exec and attach and the SPDY or WebSocket tunnel of port-forward run on it.

use std::fmt;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{HeaderMap, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::error::Error;

/// The answer to an upgrade request and the connection it switched: the response's headers
/// (the WebSocket accept key and subprotocol, the SPDY protocol version) and the byte stream
/// that now speaks the new protocol.
pub struct Upgraded {
    headers: HeaderMap,
    connection: UpgradedConnection,
}

impl fmt::Debug for Upgraded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upgraded")
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}

impl Upgraded {
    /// Takes over the connection of a `101` response.
    pub(crate) async fn from_response(
        mut response: http::Response<Incoming>,
        url: String,
    ) -> Result<Self, Error> {
        debug_assert_eq!(response.status(), StatusCode::SWITCHING_PROTOCOLS);
        let upgraded = hyper::upgrade::on(&mut response)
            .await
            .map_err(|e| Error::Transport {
                url,
                source: Box::new(e),
            })?;
        Ok(Self {
            headers: std::mem::take(response.headers_mut()),
            connection: UpgradedConnection(TokioIo::new(upgraded)),
        })
    }

    /// The headers of the `101` response.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The headers and the connection.
    pub fn into_parts(self) -> (HeaderMap, UpgradedConnection) {
        (self.headers, self.connection)
    }
}

/// The byte stream of an upgraded connection (TLS and any proxy tunnel underneath), with
/// whatever the server sent right after its `101` already buffered in it.
pub struct UpgradedConnection(TokioIo<hyper::upgrade::Upgraded>);

impl fmt::Debug for UpgradedConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("UpgradedConnection")
    }
}

impl AsyncRead for UpgradedConnection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for UpgradedConnection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }
}
