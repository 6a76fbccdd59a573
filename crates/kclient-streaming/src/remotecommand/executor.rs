//! [`Executor`]: one exec or attach target, run as sessions over WebSocket (client-go's
//! `wsStreamExecutor`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use kclient_core::GroupVersion;
use kclient_rest::{Request, RestClient};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::error::{CapacityError, Error as WsError};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

use super::options::{AttachOptions, ExecOptions, StreamOptions, TerminalSizeQueue};
use super::{
    channel_message, status, Error, DEFAULT_MAX_MESSAGE_LEN, MAX_ERROR_STREAM_LEN, PING_PERIOD,
    PING_READ_DEADLINE, STATUS_CLOSE_GRACE, STREAM_CLOSE, STREAM_ERR, STREAM_PROTOCOL_V4_NAME,
    STREAM_PROTOCOL_V5_NAME, STREAM_RESIZE, STREAM_STDERR, STREAM_STDIN, STREAM_STDOUT,
};
use crate::upgrade::{self, UpgradeError, DEFAULT_UPGRADE_TIMEOUT};

/// How much of stdin goes into one message (client-go's `io.Copy` buffer).
const STDIN_CHUNK: usize = 32 * 1024;
/// How long the answer to the server's close may take.
const CLOSE_REPLY_TIMEOUT: Duration = Duration::from_secs(1);

/// Makes the request a session opens.
type RequestFactory = Arc<dyn Fn() -> Request + Send + Sync>;

/// A command to run or a container to attach to, each [`stream`](Self::stream) a session of
/// its own (client-go's `NewWebSocketExecutor`; one executor may run sessions one after the
/// other or at once).
#[derive(Clone)]
pub struct Executor {
    request: RequestFactory,
    protocols: Vec<&'static str>,
    upgrade_timeout: Duration,
    max_message_len: usize,
    ping_period: Duration,
    ping_read_deadline: Duration,
}

impl fmt::Debug for Executor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Executor")
            .field("protocols", &self.protocols)
            .field("upgrade_timeout", &self.upgrade_timeout)
            .field("max_message_len", &self.max_message_len)
            .finish_non_exhaustive()
    }
}

/// What a command printed and how it exited ([`Executor::output`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Output {
    /// Its standard output.
    pub stdout: Vec<u8>,
    /// Its standard error (empty with a TTY, which merges it into stdout).
    pub stderr: Vec<u8>,
    /// Its exit code (0 for success).
    pub exit_code: i32,
}

impl Executor {
    /// An executor whose sessions open the request `request` makes (a `GET`: a WebSocket
    /// handshake is one; client-go's gorilla/websocket sends `GET` whatever method the
    /// caller names). The request carries the path (`…/pods/NAME/exec` or `/attach`) and
    /// the query ([`ExecOptions::query_pairs`], [`AttachOptions::query_pairs`]); the
    /// upgrade headers are added here.
    pub fn new(request: impl Fn() -> Request + Send + Sync + 'static) -> Self {
        Self {
            request: Arc::new(request),
            protocols: vec![STREAM_PROTOCOL_V5_NAME, STREAM_PROTOCOL_V4_NAME],
            upgrade_timeout: DEFAULT_UPGRADE_TIMEOUT,
            max_message_len: DEFAULT_MAX_MESSAGE_LEN,
            ping_period: PING_PERIOD,
            ping_read_deadline: PING_READ_DEADLINE,
        }
    }

    /// Runs `options` in pod `pod` of `namespace` (`GET …/pods/POD/exec`).
    pub fn exec(client: &RestClient, namespace: &str, pod: &str, options: &ExecOptions) -> Self {
        Self::for_subresource(client, namespace, pod, "exec", options.query_pairs())
    }

    /// Attaches to a container of pod `pod` of `namespace` (`GET …/pods/POD/attach`).
    pub fn attach(
        client: &RestClient,
        namespace: &str,
        pod: &str,
        options: &AttachOptions,
    ) -> Self {
        Self::for_subresource(client, namespace, pod, "attach", options.query_pairs())
    }

    fn for_subresource(
        client: &RestClient,
        namespace: &str,
        pod: &str,
        subresource: &'static str,
        query: Vec<(String, String)>,
    ) -> Self {
        let (client, namespace, pod) = (client.clone(), namespace.to_owned(), pod.to_owned());
        Self::new(move || {
            client
                .get()
                .group_version(&GroupVersion::new("", "v1"))
                .namespace(namespace.as_str())
                .resource("pods")
                .name(pod.as_str())
                .subresource(subresource)
                .params(query.iter().cloned())
        })
    }

    /// Offers these subprotocols, in order of preference (client-go's
    /// `NewWebSocketExecutorForProtocols`); the default is v5 then v4. Only v5 and v4 are
    /// spoken here (the others have no exit codes): others are left out.
    pub fn protocols(mut self, protocols: &[&str]) -> Self {
        self.protocols = protocols
            .iter()
            .filter_map(|p| {
                [STREAM_PROTOCOL_V5_NAME, STREAM_PROTOCOL_V4_NAME]
                    .into_iter()
                    .find(|known| known == p)
            })
            .collect();
        self
    }

    /// How long the upgrade may take ([`DEFAULT_UPGRADE_TIMEOUT`]).
    pub fn upgrade_timeout(mut self, timeout: Duration) -> Self {
        self.upgrade_timeout = timeout;
        self
    }

    /// The largest message accepted ([`DEFAULT_MAX_MESSAGE_LEN`]).
    pub fn max_message_len(mut self, len: usize) -> Self {
        self.max_message_len = len;
        self
    }

    /// How often to ping, and how long the server may stay silent
    /// ([`PING_PERIOD`], [`PING_READ_DEADLINE`]).
    pub fn heartbeat(mut self, period: Duration, read_deadline: Duration) -> Self {
        self.ping_period = period;
        self.ping_read_deadline = read_deadline;
        self
    }

    /// Runs one session with these streams (client-go's `StreamWithContext`: the future is
    /// the context; drop it to cancel). `Ok` when the command succeeded;
    /// [`Error::NonZeroExit`] with its code when it did not.
    pub async fn stream(&self, options: StreamOptions<'_>) -> Result<(), Error> {
        if self.protocols.is_empty() {
            return Err(Error::Upgrade(UpgradeError::Handshake(
                "no protocol to offer: only v5.channel.k8s.io and v4.channel.k8s.io are spoken"
                    .into(),
            )));
        }
        let (socket, protocol) = upgrade::websocket(
            (self.request)(),
            &self.protocols,
            self.max_message_len,
            self.upgrade_timeout,
        )
        .await?;
        tracing::debug!(%protocol, "remote command session opened");
        let session = Session {
            close_signal: protocol == STREAM_PROTOCOL_V5_NAME,
            ping_period: self.ping_period,
            ping_read_deadline: self.ping_read_deadline,
        };
        session.run(socket, options).await
    }

    /// Runs the command with `stdin` (if any) as its input and collects its output
    /// (`std::process::Command::output`'s shape): a non-zero exit is an
    /// [`Output::exit_code`], not an error. Which streams the server sends is the request's
    /// business (`stdout`, `stderr` in [`ExecOptions`]). All of the output is kept in
    /// memory, as much as the server sends: for output of unknown size (or a server not
    /// trusted with the client's memory), [`stream`](Self::stream) it to writers of your own,
    /// which hold the server back when they are slow.
    pub async fn output(&self, stdin: Option<&[u8]>) -> Result<Output, Error> {
        let mut output = Output::default();
        let mut options = StreamOptions::new()
            .stdout(&mut output.stdout)
            .stderr(&mut output.stderr);
        if let Some(input) = stdin {
            options = options.stdin(input);
        }
        let exit_code = match self.stream(options).await {
            Ok(()) => 0,
            Err(Error::NonZeroExit(e)) => e.code,
            Err(e) => return Err(e),
        };
        output.exit_code = exit_code;
        Ok(output)
    }
}

/// One session's settings.
struct Session {
    /// Whether the protocol has the CLOSE signal (v5).
    close_signal: bool,
    ping_period: Duration,
    ping_read_deadline: Duration,
}

/// A local writer the server's output goes to (stdout or stderr), if the caller gave one.
type LocalWriter<'a> = Option<Box<dyn AsyncWrite + Send + Unpin + 'a>>;

/// How the server's side of a session ended.
struct Received {
    /// What the error channel carried (the session's `Status`; empty if nothing).
    error_stream: Vec<u8>,
    /// Whether the server closed the WebSocket (rather than the connection just ending).
    closed: bool,
    /// The code and reason of a close other than a normal closure (or one without a code).
    abnormal_close: Option<(u16, String)>,
}

impl Session {
    /// Runs the session: what the server sends is read and written out while stdin, terminal
    /// sizes and pings are sent, the two directions side by side (client-go's separate
    /// goroutines), so neither waits on the other: a local stdout that is slow to take the
    /// output never holds up stdin, and a server slow to take stdin never holds up its
    /// output. The session is over when the server's side ends.
    async fn run<S>(&self, socket: S, options: StreamOptions<'_>) -> Result<(), Error>
    where
        S: futures::Stream<Item = Result<Message, WsError>>
            + futures::Sink<Message, Error = WsError>
            + Unpin,
    {
        let StreamOptions {
            stdin,
            stdout,
            stderr,
            tty,
            terminal_size_queue,
        } = options;
        // With a TTY the terminal merges stderr into stdout (client-go asks for no stderr).
        let stderr = if tty { None } else { stderr };
        let resizes: Option<Box<dyn TerminalSizeQueue + '_>> =
            if tty { terminal_size_queue } else { None };
        let (mut sink, source) = socket.split();
        let (received, write_error) = {
            let reading = self.read_server(source, stdout, stderr);
            let writing = self.write_client(&mut sink, stdin, resizes);
            tokio::pin!(reading, writing);
            let mut write_error = None;
            let received = loop {
                tokio::select! {
                    received = &mut reading => break received,
                    // The writer ends only when sending failed; the reader tells how the
                    // session ended (a server that closed the connection after its status
                    // has said everything, whatever became of our last stdin).
                    e = &mut writing, if write_error.is_none() => {
                        tracing::debug!(error = %e, "sending to the server failed; reading what it sends");
                        write_error = Some(e);
                    }
                }
            };
            (received?, write_error)
        };
        if received.closed {
            // The server has said everything (the status comes before the close): the close
            // is answered, and the session is over.
            let _ = tokio::time::timeout(CLOSE_REPLY_TIMEOUT, sink.close()).await;
        }
        // The status, when the server sent one, says how the command ended, whatever became
        // of the connection after it.
        if received.error_stream.is_empty() {
            if let Some((code, reason)) = received.abnormal_close {
                return Err(Error::AbnormalClose { code, reason });
            }
            if let Some(e) = write_error {
                return Err(e);
            }
        }
        status::decode(&received.error_stream)
    }

    /// Reads the server's messages to the end of the session: output to the local writers,
    /// the error channel kept. The server is judged silent only while this waits for it:
    /// [`PING_READ_DEADLINE`] without a message or a pong, counted afresh each time a read
    /// begins, so time spent writing to a slow local stdout is not the server's. Once the
    /// error channel has carried something, the server has [`STATUS_CLOSE_GRACE`] from then
    /// to close the connection; after that the session ends with what it said.
    ///
    /// One message is read at a time, and written out before the next is read: what the
    /// session holds is the WebSocket's read buffer and one message, however fast the server
    /// sends (a slow local writer holds the server back through TCP).
    async fn read_server<R>(
        &self,
        mut source: R,
        mut stdout: LocalWriter<'_>,
        mut stderr: LocalWriter<'_>,
    ) -> Result<Received, Error>
    where
        R: futures::Stream<Item = Result<Message, WsError>> + Unpin,
    {
        let mut error_stream = Vec::new();
        // When the server must have closed the connection, once its status came.
        let mut status_deadline: Option<Instant> = None;
        let mut abnormal_close = None;
        let closed = loop {
            let silence_deadline = Instant::now() + self.ping_read_deadline;
            let deadline = status_deadline.map_or(silence_deadline, |d| d.min(silence_deadline));
            let message = match tokio::time::timeout_at(deadline, source.next()).await {
                Err(_) if deadline < silence_deadline => {
                    tracing::debug!(
                        grace = ?STATUS_CLOSE_GRACE,
                        "the server kept the connection open after its status; ending the session"
                    );
                    break false;
                }
                Err(_) => return Err(Error::HeartbeatTimeout(self.ping_read_deadline)),
                Ok(None) => break false,
                Ok(Some(Ok(m))) => m,
                Ok(Some(Err(e))) => match read_error(e) {
                    Some(e) => return Err(e),
                    None => break false,
                },
            };
            match message {
                Message::Binary(data) => {
                    let Some((&channel, payload)) = data.split_first() else {
                        return Err(Error::Protocol("an empty message has no channel".into()));
                    };
                    match channel {
                        STREAM_STDOUT => write_to(&mut stdout, payload).await?,
                        STREAM_STDERR => write_to(&mut stderr, payload).await?,
                        STREAM_ERR => {
                            keep_error_message(&mut error_stream, payload)?;
                            if !payload.is_empty() && status_deadline.is_none() {
                                status_deadline = Some(Instant::now() + STATUS_CLOSE_GRACE);
                            }
                        }
                        // Nothing is read from the stdin and resize channels.
                        STREAM_STDIN | STREAM_RESIZE => {}
                        other => tracing::debug!(
                            channel = other,
                            "discarding a message for an unknown channel"
                        ),
                    }
                }
                Message::Text(_) => {
                    return Err(Error::Protocol("unexpected message type: text".into()))
                }
                Message::Close(frame) => {
                    // As client-go: only a normal closure ends the session cleanly (a close
                    // without a code too, which kube-apiserver never sends but simple
                    // servers do).
                    if let Some(frame) = frame.filter(|f| f.code != CloseCode::Normal) {
                        abnormal_close = Some((u16::from(frame.code), frame.reason.to_string()));
                    }
                    break true;
                }
                // Pongs only prove the server is alive; pings are answered by the WebSocket
                // layer.
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
            }
        };
        for writer in [&mut stdout, &mut stderr].into_iter().flatten() {
            writer.flush().await?;
        }
        Ok(Received {
            error_stream,
            closed,
            abnormal_close,
        })
    }

    /// Sends stdin (then, on v5, the CLOSE signal for it), terminal sizes and a ping every
    /// [`PING_PERIOD`], until sending fails: that error is what this returns. It never ends
    /// otherwise; the session drops it when the server's side has ended.
    async fn write_client<K>(
        &self,
        sink: &mut K,
        mut stdin: Option<Box<dyn AsyncRead + Send + Unpin + '_>>,
        mut resizes: Option<Box<dyn TerminalSizeQueue + '_>>,
    ) -> Error
    where
        K: futures::Sink<Message, Error = WsError> + Unpin,
    {
        let mut stdin_buf = vec![0u8; STDIN_CHUNK];
        let mut pings =
            tokio::time::interval_at(Instant::now() + self.ping_period, self.ping_period);
        loop {
            let message = tokio::select! {
                read = read_stdin(&mut stdin, &mut stdin_buf), if stdin.is_some() => match read {
                    Ok(n) if n > 0 => Some(channel_message(STREAM_STDIN, &stdin_buf[..n])),
                    end => {
                        if let Err(e) = end {
                            // As client-go: the copy ends, the remote stdin is closed.
                            tracing::warn!(error = %e, "reading stdin failed; closing the command's stdin");
                        }
                        stdin = None;
                        self.close_signal
                            .then(|| Message::Binary(Bytes::from_static(&[STREAM_CLOSE, STREAM_STDIN])))
                    }
                },
                size = next_size(&mut resizes), if resizes.is_some() => match size {
                    Some(size) => {
                        // client-go's json.Encoder: the object and a newline.
                        let mut json = serde_json::to_vec(&size).unwrap_or_default();
                        json.push(b'\n');
                        Some(channel_message(STREAM_RESIZE, &json))
                    }
                    None => {
                        resizes = None;
                        None
                    }
                },
                _ = pings.tick() => Some(Message::Ping(Bytes::new())),
            };
            if let Some(message) = message {
                if let Err(e) = sink.send(message).await {
                    return Error::ConnectionLost(e);
                }
            }
        }
    }
}

/// Adds a message of the error channel to what it carried, at most [`MAX_ERROR_STREAM_LEN`]
/// bytes in all.
fn keep_error_message(error_stream: &mut Vec<u8>, payload: &[u8]) -> Result<(), Error> {
    if error_stream.len() + payload.len() > MAX_ERROR_STREAM_LEN {
        return Err(Error::Protocol(format!(
            "the error channel carries more than {MAX_ERROR_STREAM_LEN} bytes"
        )));
    }
    error_stream.extend_from_slice(payload);
    Ok(())
}

/// What a read failure means: `None` for the end of an orderly closed connection.
fn read_error(e: WsError) -> Option<Error> {
    match e {
        WsError::ConnectionClosed | WsError::AlreadyClosed => None,
        WsError::Capacity(CapacityError::MessageTooLong { size, max_size }) => {
            Some(Error::MessageTooLarge {
                size,
                max: max_size,
            })
        }
        other => Some(Error::ConnectionLost(other)),
    }
}

async fn write_to<W: AsyncWrite + Unpin + ?Sized>(
    writer: &mut Option<Box<W>>,
    data: &[u8],
) -> Result<(), Error> {
    if let Some(w) = writer {
        w.write_all(data).await?;
    }
    Ok(())
}

async fn read_stdin(
    stdin: &mut Option<Box<dyn AsyncRead + Send + Unpin + '_>>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match stdin {
        Some(r) => r.read(buf).await,
        None => std::future::pending().await,
    }
}

async fn next_size(
    queue: &mut Option<Box<dyn TerminalSizeQueue + '_>>,
) -> Option<super::TerminalSize> {
    match queue {
        Some(q) => q.next().await,
        None => std::future::pending().await,
    }
}
