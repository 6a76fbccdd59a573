//! [`Dialer`] opens a port-forward connection to a pod ([`PortForwardConnection`]), and
//! [`PortForwardConnection::connect`] opens one forwarded TCP connection on it
//! ([`PortForwardStream`]): client-go's dialers and the stream pairs of `handleConnection`.

use std::fmt;
use std::future::Future as _;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use kclient_core::GroupVersion;
use kclient_rest::{Request, RestClient};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use super::tunnel::TunnelingConnection;
use super::{
    Error, MAX_ERROR_STREAM_LEN, PING_PERIOD, PORT_FORWARD_PROTOCOL_V1_NAME, PORT_HEADER,
    REQUEST_ID_HEADER, SPDY_PING_PERIOD, STREAM_TYPE_DATA, STREAM_TYPE_ERROR, STREAM_TYPE_HEADER,
    WEBSOCKETS_SPDY_TUNNELING_PREFIX,
};
use crate::remotecommand::DEFAULT_MAX_MESSAGE_LEN;
use crate::spdy::{self, CloseReason, ConnectionOptions, Headers, Role};
use crate::upgrade::{self, UpgradeError, DEFAULT_UPGRADE_TIMEOUT};

/// How long a forwarded connection whose data stream the pod side reset waits for the pod
/// side's error stream to end, before it reports the reset.
pub const ERROR_STREAM_GRACE: Duration = Duration::from_secs(5);

/// Makes the request a dial opens, for the method given.
type RequestFactory = Arc<dyn Fn(kclient_rest::Method) -> Request + Send + Sync>;

/// How a [`Dialer`] reaches the pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// SPDY tunnelled through a WebSocket (`GET`, subprotocol
    /// `SPDY/3.1+portforward.k8s.io`; client-go's `NewSPDYOverWebsocketDialer`).
    WebSocketTunnel,
    /// A plain SPDY upgrade (`POST`, `Upgrade: SPDY/3.1`; client-go's `spdy.NewDialer`).
    Spdy,
    /// The tunnel, and SPDY when the server refuses it (kubectl's `NewFallbackDialer` with
    /// `IsUpgradeFailure`), the default.
    WebSocketTunnelWithFallback,
}

/// Opens port-forward connections to one pod.
#[derive(Clone)]
pub struct Dialer {
    request: RequestFactory,
    transport: Transport,
    upgrade_timeout: Duration,
    max_message_len: usize,
}

impl fmt::Debug for Dialer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dialer")
            .field("transport", &self.transport)
            .field("upgrade_timeout", &self.upgrade_timeout)
            .finish_non_exhaustive()
    }
}

impl Dialer {
    /// A dialer whose request `request` makes for a method (`GET` for the WebSocket tunnel,
    /// `POST` for a SPDY upgrade): the path `…/pods/NAME/portforward`, no query needed.
    pub fn new(request: impl Fn(kclient_rest::Method) -> Request + Send + Sync + 'static) -> Self {
        Self {
            request: Arc::new(request),
            transport: Transport::WebSocketTunnelWithFallback,
            upgrade_timeout: DEFAULT_UPGRADE_TIMEOUT,
            max_message_len: DEFAULT_MAX_MESSAGE_LEN,
        }
    }

    /// A dialer for pod `pod` of `namespace` (`…/namespaces/NS/pods/POD/portforward`, as
    /// kubectl builds it).
    pub fn for_pod(client: &RestClient, namespace: &str, pod: &str) -> Self {
        let (client, namespace, pod) = (client.clone(), namespace.to_owned(), pod.to_owned());
        Self::new(move |method| {
            client
                .request(method)
                .group_version(&GroupVersion::new("", "v1"))
                .namespace(namespace.as_str())
                .resource("pods")
                .name(pod.as_str())
                .subresource("portforward")
        })
    }

    /// How to reach the pod ([`Transport::WebSocketTunnelWithFallback`] by default).
    pub fn transport(mut self, transport: Transport) -> Self {
        self.transport = transport;
        self
    }

    /// How long the upgrade may take ([`DEFAULT_UPGRADE_TIMEOUT`]).
    pub fn upgrade_timeout(mut self, timeout: Duration) -> Self {
        self.upgrade_timeout = timeout;
        self
    }

    /// The largest WebSocket message accepted through the tunnel
    /// ([`DEFAULT_MAX_MESSAGE_LEN`]).
    pub fn max_message_len(mut self, len: usize) -> Self {
        self.max_message_len = len;
        self
    }

    /// Opens a connection (client-go's `Dialer.Dial(PortForwardProtocolV1Name)`).
    pub async fn dial(&self) -> Result<PortForwardConnection, Error> {
        match self.transport {
            Transport::WebSocketTunnel => self.dial_tunnel().await,
            Transport::Spdy => self.dial_spdy().await,
            Transport::WebSocketTunnelWithFallback => match self.dial_tunnel().await {
                Err(Error::Upgrade(e)) if e.is_upgrade_failure() => {
                    tracing::debug!(error = %e, "the WebSocket tunnel was refused; falling back to a SPDY upgrade");
                    self.dial_spdy().await
                }
                other => other,
            },
        }
    }

    async fn dial_tunnel(&self) -> Result<PortForwardConnection, Error> {
        let offered = format!("{WEBSOCKETS_SPDY_TUNNELING_PREFIX}{PORT_FORWARD_PROTOCOL_V1_NAME}");
        let (socket, protocol) = upgrade::websocket(
            (self.request)(kclient_rest::Method::GET),
            &[offered.as_str()],
            self.max_message_len,
            self.upgrade_timeout,
        )
        .await?;
        let protocol = protocol
            .strip_prefix(WEBSOCKETS_SPDY_TUNNELING_PREFIX)
            .unwrap_or(&protocol)
            .to_owned();
        let options = ConnectionOptions {
            ping_period: Some(PING_PERIOD),
            ..ConnectionOptions::default()
        };
        let connection =
            spdy::Connection::new(TunnelingConnection::new(socket), Role::Client, options);
        PortForwardConnection::negotiated(connection, &protocol)
    }

    async fn dial_spdy(&self) -> Result<PortForwardConnection, Error> {
        let (io, protocol) = upgrade::spdy(
            (self.request)(kclient_rest::Method::POST),
            &[PORT_FORWARD_PROTOCOL_V1_NAME],
            self.upgrade_timeout,
        )
        .await?;
        let options = ConnectionOptions {
            ping_period: Some(SPDY_PING_PERIOD),
            ..ConnectionOptions::default()
        };
        let connection = spdy::Connection::new(io, Role::Client, options);
        PortForwardConnection::negotiated(connection, &protocol)
    }
}

/// A port-forward connection to a pod: any number of forwarded TCP connections to any of
/// its ports, each a pair of SPDY streams. Cheap to clone; closed when the last clone (and
/// the last [`PortForwardStream`]) is dropped, or by [`close`](Self::close).
#[derive(Clone)]
pub struct PortForwardConnection {
    connection: spdy::Connection,
    next_request_id: Arc<AtomicU64>,
}

impl fmt::Debug for PortForwardConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PortForwardConnection")
            .field("connection", &self.connection)
            .finish_non_exhaustive()
    }
}

impl PortForwardConnection {
    /// Checks the negotiated protocol (client-go's `ForwardPorts`).
    fn negotiated(connection: spdy::Connection, protocol: &str) -> Result<Self, Error> {
        if protocol != PORT_FORWARD_PROTOCOL_V1_NAME {
            connection.close();
            return Err(Error::Protocol(format!(
                "unable to negotiate protocol: client supports {PORT_FORWARD_PROTOCOL_V1_NAME:?}, server returned {protocol:?}"
            )));
        }
        Ok(Self::from_connection(connection))
    }

    /// A port-forward connection over a SPDY connection opened some other way.
    pub fn from_connection(connection: spdy::Connection) -> Self {
        Self {
            connection,
            next_request_id: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Opens a forwarded connection to `port` of the pod (client-go's
    /// `handleConnection`): the error stream (this side writes nothing on it), then the data
    /// stream, with the same `port` and `requestID` headers.
    pub async fn connect(&self, port: u16) -> Result<PortForwardStream, Error> {
        let request_id = self.next_request_id.fetch_add(1, Ordering::Relaxed);
        let mut headers = Headers::new();
        headers.set(STREAM_TYPE_HEADER, STREAM_TYPE_ERROR);
        headers.set(PORT_HEADER, port.to_string());
        headers.set(REQUEST_ID_HEADER, request_id.to_string());
        let mut error_stream = self.connection.create_stream(headers.clone()).await?;
        error_stream.close().await?;
        headers.set(STREAM_TYPE_HEADER, STREAM_TYPE_DATA);
        let data = self.connection.create_stream(headers).await?;
        Ok(PortForwardStream {
            data,
            port,
            error: ErrorStream::Open {
                stream: error_stream,
                message: Vec::new(),
            },
            data_end: None,
            grace: None,
        })
    }

    /// Ends the connection and every forwarded connection on it.
    pub fn close(&self) {
        self.connection.close();
    }

    /// Waits until the connection is over, and says why.
    pub async fn closed(&self) -> CloseReason {
        self.connection.closed().await
    }

    /// Why the connection ended, once it has.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.connection.close_reason()
    }
}

/// The pod side's error stream, read as it arrives.
enum ErrorStream {
    /// Still open: what it has carried so far (bounded).
    Open {
        stream: spdy::Stream,
        message: Vec<u8>,
    },
    /// Ended: its message, when it carried one.
    Ended(Option<String>),
}

impl ErrorStream {
    /// Reads what has arrived, without waiting; `Ready` once the stream has ended.
    fn poll_end(&mut self, cx: &mut Context<'_>) -> Poll<Option<&str>> {
        if let ErrorStream::Open { stream, message } = self {
            let mut buf = [0u8; 1024];
            loop {
                let mut read = ReadBuf::new(&mut buf);
                match Pin::new(&mut *stream).poll_read(cx, &mut read) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok(())) if !read.filled().is_empty() => {
                        let room = MAX_ERROR_STREAM_LEN.saturating_sub(message.len());
                        let filled = read.filled();
                        message.extend_from_slice(&filled[..filled.len().min(room)]);
                    }
                    // The end (or a reset: what came before it is the message).
                    Poll::Ready(_) => break,
                }
            }
            let text = String::from_utf8_lossy(message).into_owned();
            *self = ErrorStream::Ended(Some(text).filter(|m| !m.is_empty()));
        }
        match self {
            ErrorStream::Ended(message) => Poll::Ready(message.as_deref()),
            ErrorStream::Open { .. } => Poll::Pending,
        }
    }
}

/// One forwarded TCP connection: the pod's port as an [`AsyncRead`] + [`AsyncWrite`].
/// What the pod side reports on the error stream (the kubelet's "error forwarding port …",
/// written before it closes the connection's streams) surfaces as the read or write error
/// at the end of the data, and from [`remote_error`](Self::remote_error): at most
/// [`MAX_ERROR_STREAM_LEN`] bytes of it, read as it arrives while the stream is read or
/// written, and taken as UTF-8 lossily. Shutting the writer down half-closes the
/// connection; dropping it resets the data stream.
pub struct PortForwardStream {
    data: spdy::Stream,
    port: u16,
    error: ErrorStream,
    /// How the data ended, once it has.
    data_end: Option<DataEnd>,
    /// The wait for the error stream after the data stream broke.
    grace: Option<Pin<Box<Sleep>>>,
}

impl fmt::Debug for PortForwardStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PortForwardStream")
            .field("port", &self.port)
            .field("data", &self.data)
            .finish_non_exhaustive()
    }
}

impl PortForwardStream {
    /// The pod's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// What the pod side reported on the error stream, once that stream ended (`None`
    /// while it is open, or when it ended empty).
    pub fn remote_error(&mut self) -> Option<&str> {
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        match self.error.poll_end(&mut cx) {
            Poll::Ready(message) => message,
            Poll::Pending => None,
        }
    }

    /// At the end of the data: the pod side's error, if it sent one. After a clean end the
    /// kubelet has written it already; after a reset it may still be on its way, and is
    /// waited for (at most [`ERROR_STREAM_GRACE`]).
    fn poll_remote_error(&mut self, cx: &mut Context<'_>, reset: bool) -> Poll<Option<io::Error>> {
        let message = match self.error.poll_end(cx) {
            Poll::Ready(message) => message.map(str::to_owned),
            Poll::Pending if !reset => None,
            Poll::Pending => {
                let sleep = self
                    .grace
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(ERROR_STREAM_GRACE)));
                ready!(sleep.as_mut().poll(cx));
                None
            }
        };
        Poll::Ready(message.map(|message| {
            io::Error::other(Error::Remote {
                port: self.port,
                message,
            })
        }))
    }
}

/// How the data stream ended, kept while the error stream is waited for.
enum DataEnd {
    /// The pod side finished it.
    Clean,
    /// It broke (reset, or the connection failed): the error's kind and text.
    Broken(io::ErrorKind, String),
}

impl AsyncRead for PortForwardStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        // The error stream is read as it arrives, not only at the end of the data (client-go
        // reads it in a goroutine of its own): a pod side that writes more on it than a
        // stream buffers ([`STREAM_BUFFER_FRAMES`](spdy::STREAM_BUFFER_FRAMES)) before
        // finishing the data would otherwise hold the connection, and the data behind it,
        // back for good. What is kept of it is bounded ([`MAX_ERROR_STREAM_LEN`]).
        let _ = this.error.poll_end(cx);
        if this.data_end.is_none() {
            let before = buf.filled().len();
            match ready!(Pin::new(&mut this.data).poll_read(cx, buf)) {
                Ok(()) if buf.filled().len() > before || buf.remaining() == 0 => {
                    return Poll::Ready(Ok(()))
                }
                Ok(()) => this.data_end = Some(DataEnd::Clean),
                Err(e) => this.data_end = Some(DataEnd::Broken(e.kind(), e.to_string())),
            }
        }
        // The data ended: the pod side's error, if it sent one, is the better answer.
        let broken = matches!(this.data_end, Some(DataEnd::Broken(..)));
        if let Some(remote) = ready!(this.poll_remote_error(cx, broken)) {
            return Poll::Ready(Err(remote));
        }
        match &this.data_end {
            Some(DataEnd::Broken(kind, text)) => {
                Poll::Ready(Err(io::Error::new(*kind, text.clone())))
            }
            _ => Poll::Ready(Ok(())),
        }
    }
}

impl AsyncWrite for PortForwardStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        // As in `poll_read`: the error stream never holds the connection back.
        let _ = this.error.poll_end(cx);
        match ready!(Pin::new(&mut this.data).poll_write(cx, buf)) {
            Ok(n) => Poll::Ready(Ok(n)),
            Err(e) => match ready!(this.poll_remote_error(cx, true)) {
                Some(remote) => Poll::Ready(Err(remote)),
                None => Poll::Ready(Err(e)),
            },
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.data).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.data).poll_shutdown(cx)
    }
}

impl From<UpgradeError> for Error {
    fn from(e: UpgradeError) -> Self {
        Error::Upgrade(e)
    }
}
