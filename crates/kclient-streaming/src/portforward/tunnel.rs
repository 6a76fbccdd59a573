//! [`TunnelingConnection`]: a byte stream carried in binary WebSocket messages (client-go's
//! `portforward.TunnelingConnection`): SPDY runs over it when kube-apiserver tunnels
//! port-forward through a WebSocket (`SPDY/3.1+portforward.k8s.io`).

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use futures::{Sink, Stream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_tungstenite::tungstenite::error::{CapacityError, Error as WsError};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use crate::chunks::{ChunkReader, ChunkSource};

/// Each write is one binary message; reads run the messages together. A normal close is
/// the end of the stream; any other end, a text message or an oversized message is an
/// error.
pub struct TunnelingConnection<S> {
    /// The WebSocket, read for its binary messages; written through [`ChunkReader::get_mut`].
    messages: ChunkReader<BinaryMessages<S>>,
    close_sent: bool,
}

impl<S> std::fmt::Debug for TunnelingConnection<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TunnelingConnection")
            .field("eof", &self.messages.is_ended())
            .finish_non_exhaustive()
    }
}

impl<S> TunnelingConnection<S> {
    /// Wraps an open WebSocket.
    pub fn new(socket: WebSocketStream<S>) -> Self {
        Self {
            messages: ChunkReader::new(BinaryMessages(socket)),
            close_sent: false,
        }
    }
}

impl<S: Unpin> TunnelingConnection<S> {
    fn socket(&mut self) -> Pin<&mut WebSocketStream<S>> {
        Pin::new(&mut self.messages.get_mut().0)
    }
}

fn ws_io_error(e: WsError) -> io::Error {
    match e {
        WsError::Io(e) => e,
        WsError::Capacity(CapacityError::MessageTooLong { size, max_size }) => io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a tunnel message of {size} bytes is over the limit of {max_size}"),
        ),
        WsError::ConnectionClosed | WsError::AlreadyClosed => {
            io::Error::new(io::ErrorKind::BrokenPipe, "the tunnel is closed")
        }
        other => io::Error::new(io::ErrorKind::ConnectionAborted, other),
    }
}

/// A WebSocket's binary messages, as the chunks of the tunnelled byte stream: pings and
/// pongs are passed over, a normal close (or a closed connection) is the end.
struct BinaryMessages<S>(WebSocketStream<S>);

impl<S> ChunkSource for BinaryMessages<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    type Error = io::Error;

    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> {
        loop {
            let chunk = match ready!(Pin::new(&mut self.0).poll_next(cx)) {
                None | Some(Err(WsError::ConnectionClosed)) => None,
                Some(Ok(Message::Binary(data))) => Some(Ok(data)),
                Some(Ok(Message::Close(frame))) => {
                    let normal = frame.as_ref().is_none_or(|f| f.code == CloseCode::Normal);
                    if normal {
                        None
                    } else {
                        Some(Err(io::Error::new(
                            io::ErrorKind::ConnectionAborted,
                            format!("the tunnel was closed: {frame:?}"),
                        )))
                    }
                }
                Some(Ok(Message::Text(_))) => Some(Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "invalid message type received: text",
                ))),
                Some(Ok(_)) => continue,
                Some(Err(e)) => Some(Err(ws_io_error(e))),
            };
            return Poll::Ready(chunk);
        }
    }
}

impl<S> AsyncRead for TunnelingConnection<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.messages).poll_read(cx, buf)
    }
}

impl<S> AsyncWrite for TunnelingConnection<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(self.socket().poll_ready(cx)).map_err(ws_io_error)?;
        self.socket()
            .start_send(Message::Binary(Bytes::copy_from_slice(buf)))
            .map_err(ws_io_error)?;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.socket().poll_flush(cx).map_err(ws_io_error)
    }

    /// Sends a normal closure (client-go's `Close`; gorilla/websocket takes a bare close as
    /// an error), then closes.
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if !this.close_sent {
            match ready!(this.socket().poll_ready(cx)) {
                Ok(()) => {
                    let normal = CloseFrame {
                        code: CloseCode::Normal,
                        reason: "".into(),
                    };
                    // Refused only when the socket is closing already.
                    let _ = this.socket().start_send(Message::Close(Some(normal)));
                }
                Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => {}
                Err(e) => return Poll::Ready(Err(ws_io_error(e))),
            }
            this.close_sent = true;
        }
        match ready!(this.socket().poll_close(cx)) {
            Ok(()) | Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => Poll::Ready(Ok(())),
            Err(e) => Poll::Ready(Err(ws_io_error(e))),
        }
    }
}
