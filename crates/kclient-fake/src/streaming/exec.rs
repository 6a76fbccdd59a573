//! The server side of exec and attach: the channel protocol (`v5.channel.k8s.io`,
//! `v4.channel.k8s.io`) as kube-apiserver's stream translator speaks it, around the
//! [`Process`] a test's handler runs.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use http::{HeaderMap, Response, StatusCode};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use kclient_streaming::chunks::ChunkReader;
use kclient_streaming::remotecommand::{
    channel_message, TerminalSize, STREAM_CLOSE, STREAM_ERR, STREAM_PROTOCOL_V4_NAME,
    STREAM_PROTOCOL_V5_NAME, STREAM_RESIZE, STREAM_STDERR, STREAM_STDIN, STREAM_STDOUT,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::{CancellationToken, PollSender};

use super::handlers::{ExecHandler, ExecRequest};
use super::protocol::{offered_protocols, text, upgrade_to, websocket_accept};
use crate::response::Body;

/// How long the server waits for the client's close after its own (kube-apiserver waits up
/// to 15 minutes for a client still reading; a test server need not).
const CLIENT_CLOSE_WAIT: Duration = Duration::from_secs(30);
/// Messages buffered between the socket and the process, each way.
const BUFFERED_MESSAGES: usize = 16;

/// The process of an exec or attach, as the test's handler sees it: what was asked for,
/// and its streams. The handler returns the exit code (0 for success).
pub struct Process {
    /// What the client asked for.
    pub request: ExecRequest,
    /// The client's input; ends when the client closes it (v5's CLOSE signal) or goes away.
    pub stdin: ProcessStdin,
    /// To the client's stdout (dropped when the client did not ask for it).
    pub stdout: ProcessOutput,
    /// To the client's stderr (dropped when the client did not ask for it).
    pub stderr: ProcessOutput,
    /// The terminal's sizes as the client resizes it (with a TTY).
    pub resizes: mpsc::Receiver<TerminalSize>,
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}

/// The session's ends of a [`Process`]'s streams.
pub(super) struct ProcessEnds {
    /// Into its stdin (dropped: the end of its input).
    pub(super) stdin: mpsc::Sender<Bytes>,
    /// What it writes, with the channel (stdout, or stderr) it is for.
    pub(super) output: mpsc::Receiver<(u8, Bytes)>,
    /// Into its terminal's sizes.
    pub(super) resizes: mpsc::Sender<TerminalSize>,
}

impl Process {
    /// A process for `request`, and the session's ends of its streams. With a TTY the
    /// terminal carries stderr on stdout.
    pub(super) fn new(request: ExecRequest) -> (Self, ProcessEnds) {
        let (stdin_tx, stdin_rx) = mpsc::channel(BUFFERED_MESSAGES);
        let (out_tx, out_rx) = mpsc::channel(BUFFERED_MESSAGES);
        let (resize_tx, resize_rx) = mpsc::channel(BUFFERED_MESSAGES);
        let (stdout, stderr, tty) = (request.stdout, request.stderr, request.tty);
        let process = Process {
            request,
            stdin: ChunkReader::new(stdin_rx),
            stdout: ProcessOutput {
                channel: STREAM_STDOUT,
                wanted: stdout,
                out: PollSender::new(out_tx.clone()),
            },
            stderr: ProcessOutput {
                channel: if tty { STREAM_STDOUT } else { STREAM_STDERR },
                wanted: if tty { stdout } else { stderr },
                out: PollSender::new(out_tx),
            },
            resizes: resize_rx,
        };
        let ends = ProcessEnds {
            stdin: stdin_tx,
            output: out_rx,
            resizes: resize_tx,
        };
        (process, ends)
    }
}

/// A process's standard input: what the client sends on the stdin channel, read as it
/// arrives.
pub type ProcessStdin = ChunkReader<mpsc::Receiver<Bytes>>;

/// A process's standard output or error: each write is a message to the client.
pub struct ProcessOutput {
    channel: u8,
    wanted: bool,
    out: PollSender<(u8, Bytes)>,
}

impl AsyncWrite for ProcessOutput {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        // A stream the client did not ask for swallows what is written (wsstream's
        // IgnoreChannel).
        if !self.wanted || buf.is_empty() {
            return Poll::Ready(Ok(buf.len()));
        }
        let gone = || io::Error::new(io::ErrorKind::BrokenPipe, "the client is gone");
        ready!(self.out.poll_reserve(cx)).map_err(|_| gone())?;
        let channel = self.channel;
        self.out
            .send_item((channel, Bytes::copy_from_slice(buf)))
            .map_err(|_| gone())?;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Answers the upgrade request: `101` with the subprotocol and the session started, or the
/// refusal.
pub(super) fn upgrade(
    headers: &HeaderMap,
    on_upgrade: OnUpgrade,
    request: ExecRequest,
    running: bool,
    handler: ExecHandler,
    shutdown: CancellationToken,
) -> Response<Body> {
    if !upgrade_to(headers, "websocket") {
        return text(
            StatusCode::BAD_REQUEST,
            "kclient-fake serves exec and attach over WebSocket only (v5.channel.k8s.io, v4.channel.k8s.io): unable to upgrade: missing upgrade headers in request".into(),
        );
    }
    let offered = offered_protocols(headers);
    // wsstream's handshake: the first protocol the client offers that the server speaks.
    let Some(protocol) = offered
        .iter()
        .find(|p| *p == STREAM_PROTOCOL_V5_NAME || *p == STREAM_PROTOCOL_V4_NAME)
        .cloned()
    else {
        return text(
            StatusCode::FORBIDDEN,
            format!(
                "requested protocol(s) are not supported: {offered:?}; supports [{STREAM_PROTOCOL_V5_NAME} {STREAM_PROTOCOL_V4_NAME}]"
            ),
        );
    };
    let response = match websocket_accept(headers, &protocol) {
        Ok(r) => r,
        Err(refusal) => return refusal,
    };
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let socket =
            WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        let session = Session {
            close_signal: protocol == STREAM_PROTOCOL_V5_NAME,
            request,
        };
        tokio::select! {
            _ = session.run(socket, running, handler) => {}
            _ = shutdown.cancelled() => {}
        }
    });
    response
}

struct Session {
    close_signal: bool,
    request: ExecRequest,
}

/// A `Status` as kube-apiserver writes it on the error channel (`json.Marshal` of a
/// `metav1.Status` without type meta).
pub(super) fn status_json(exit_code: i32) -> String {
    if exit_code == 0 {
        return r#"{"metadata":{},"status":"Success"}"#.to_owned();
    }
    format!(
        r#"{{"metadata":{{}},"status":"Failure","message":"command terminated with non-zero exit code: command terminated with exit code {exit_code}","reason":"NonZeroExitCode","details":{{"causes":[{{"reason":"ExitCode","message":"{exit_code}"}}]}}}}"#
    )
}

/// kube-apiserver's translation of a kubelet that has no running container.
fn not_running_json(container: &str) -> String {
    let cause = format!("unable to upgrade connection: container not found ({container:?})");
    let json = |s: &str| serde_json::to_string(s).unwrap_or_default();
    format!(
        r#"{{"metadata":{{}},"status":"Failure","message":{},"reason":"InternalError","details":{{"causes":[{{"message":{}}}]}},"code":500}}"#,
        json(&format!("Internal error occurred: {cause}")),
        json(&cause),
    )
}

/// A close frame with status 1000.
fn normal_closure() -> CloseFrame {
    CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    }
}

impl Session {
    async fn run<S>(self, socket: WebSocketStream<S>, running: bool, handler: ExecHandler)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send,
    {
        let (mut sink, source) = socket.split();
        let r = &self.request;
        // The lowest channel the client reads tells it the connection is up.
        let first = if r.stdout {
            STREAM_STDOUT
        } else if r.stderr {
            STREAM_STDERR
        } else {
            STREAM_ERR
        };
        if sink.send(channel_message(first, b"")).await.is_err() {
            return;
        }
        if !running {
            let status = not_running_json(&r.container);
            let _ = sink
                .send(channel_message(STREAM_ERR, status.as_bytes()))
                .await;
            finish(sink, source).await;
            return;
        }
        let (process, ends) = Process::new(self.request.clone());
        let ProcessEnds {
            stdin,
            output,
            resizes,
        } = ends;
        let stdin = self.request.stdin.then_some(stdin);
        // The process runs as a task of its own, as a container's process runs whatever the
        // session is doing: the session may wait for room in its stdin while the process
        // is the one to make it. Dropping the session (the client gone) ends it.
        let process = AbortOnDrop(tokio::spawn(handler(process)));
        // The client's messages are read, and the process's output is sent, side by side
        // (wsstream's reader and writers): a process that does not read its stdin holds up
        // only the reading, never its output.
        let reading = self.read_client(source, stdin, resizes);
        let writing = send_output(&mut sink, output, process);
        tokio::pin!(reading);
        tokio::select! {
            // The client closed or went away: the process is ended with the session.
            _ = &mut reading => {}
            () = writing => {
                // The status is out: the close, and a bounded wait for the client's
                // (kube-apiserver's `finish`), which `reading` reads.
                let _ = sink.send(Message::Close(Some(normal_closure()))).await;
                let _ = sink.close().await;
                let _ = tokio::time::timeout(CLIENT_CLOSE_WAIT, reading).await;
            }
        }
    }

    /// Reads the client's messages until it closes the WebSocket or goes away: stdin into
    /// the process (waiting for room, as a pipe does), the CLOSE signal, terminal sizes.
    async fn read_client<R>(
        &self,
        mut source: R,
        mut stdin: Option<mpsc::Sender<Bytes>>,
        resizes: mpsc::Sender<TerminalSize>,
    ) where
        R: futures::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
    {
        let mut resize_buf = Vec::new();
        while let Some(Ok(incoming)) = source.next().await {
            let data = match incoming {
                Message::Binary(data) => data,
                Message::Close(_) => return,
                _ => continue,
            };
            match data.first().copied() {
                Some(STREAM_CLOSE) if self.close_signal => {
                    // wsstream: exactly one channel byte follows; closing stdin ends the
                    // process's input.
                    if data.len() != 2 {
                        return;
                    }
                    if data[1] == STREAM_STDIN {
                        stdin = None;
                    }
                }
                Some(STREAM_STDIN) => {
                    if let Some(tx) = &stdin {
                        // A process that has ended reads no more: what follows is dropped.
                        if data.len() > 1 && tx.send(data.slice(1..)).await.is_err() {
                            stdin = None;
                        }
                    }
                }
                Some(STREAM_RESIZE) => {
                    resize_buf.extend_from_slice(&data[1..]);
                    for size in drain_sizes(&mut resize_buf) {
                        let _ = resizes.try_send(size);
                    }
                }
                _ => {}
            }
        }
    }
}

/// Aborts a spawned task when dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Sends what the process writes until it exits, then the rest of what it wrote and its
/// status (a handler that panicked exits with 1, as a crashed process would fail).
async fn send_output<K>(
    sink: &mut K,
    mut output: mpsc::Receiver<(u8, Bytes)>,
    mut process: AbortOnDrop<i32>,
) where
    K: futures::Sink<Message> + Unpin,
{
    let exit_code = loop {
        tokio::select! {
            code = &mut process.0 => break code.unwrap_or_else(|e| {
                tracing::error!(error = %e, "the exec handler panicked: the process exits with 1");
                1
            }),
            Some((channel, data)) = output.recv() => {
                if sink.send(channel_message(channel, &data)).await.is_err() {
                    return std::future::pending().await;
                }
            }
        }
    };
    // What the process wrote before it ended goes out before the status.
    while let Ok((channel, data)) = output.try_recv() {
        if sink.send(channel_message(channel, &data)).await.is_err() {
            return std::future::pending().await;
        }
    }
    if sink
        .send(channel_message(
            STREAM_ERR,
            status_json(exit_code).as_bytes(),
        ))
        .await
        .is_err()
    {
        std::future::pending().await
    }
}

/// Sends the close (a normal closure: gorilla/websocket, under client-go, takes any other
/// close, a bare one included, as an error) and waits (bounded) for the client's
/// (kube-apiserver's `finish`).
async fn finish<K, R>(mut sink: K, mut source: R)
where
    K: futures::Sink<Message> + Unpin,
    R: futures::Stream + Unpin,
{
    let _ = sink.send(Message::Close(Some(normal_closure()))).await;
    let _ = sink.close().await;
    let _ = tokio::time::timeout(CLIENT_CLOSE_WAIT, async {
        while source.next().await.is_some() {}
    })
    .await;
}

/// The complete JSON sizes at the front of `buf` (a `json.Decoder` over the resize
/// channel's bytes); what is left is kept for the next message. A size that does not parse
/// ends the resizes, as the decoder's error ends the server's loop.
pub(super) fn drain_sizes(buf: &mut Vec<u8>) -> Vec<TerminalSize> {
    let mut sizes = Vec::new();
    let consumed = {
        let mut stream = serde_json::Deserializer::from_slice(buf).into_iter::<TerminalSize>();
        loop {
            match stream.next() {
                Some(Ok(size)) => sizes.push(size),
                Some(Err(e)) if e.is_eof() => break stream.byte_offset(),
                Some(Err(_)) => break buf.len(),
                None => break stream.byte_offset(),
            }
        }
    };
    buf.drain(..consumed);
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_kube_apiserver_s_bytes() {
        assert_eq!(status_json(0), r#"{"metadata":{},"status":"Success"}"#);
        assert_eq!(
            status_json(7),
            r#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: command terminated with exit code 7","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"7"}]}}"#
        );
        let not_running: serde_json::Value =
            serde_json::from_str(&not_running_json("app")).unwrap();
        assert_eq!(
            not_running["message"],
            "Internal error occurred: unable to upgrade connection: container not found (\"app\")"
        );
        assert_eq!(not_running["code"], 500);
    }

    #[test]
    fn sizes_are_read_across_messages() {
        let mut buf = br#"{"Width":80,"Height":24}
{"Width":1"#
            .to_vec();
        assert_eq!(
            drain_sizes(&mut buf),
            [TerminalSize {
                width: 80,
                height: 24
            }]
        );
        buf.extend_from_slice(b"00,\"Height\":50}\n");
        assert_eq!(
            drain_sizes(&mut buf),
            [TerminalSize {
                width: 100,
                height: 50
            }]
        );
        assert!(buf.iter().all(u8::is_ascii_whitespace));
    }
}
