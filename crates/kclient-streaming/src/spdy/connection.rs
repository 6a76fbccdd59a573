//! A SPDY/3.1 connection: streams multiplexed over one byte stream, as moby/spdystream (under
//! client-go's and the kubelet's `httpstream/spdy`) runs them.
//!
//! Two tasks drive it: one reads frames and hands data to the streams, answers pings and
//! delivers the streams a peer opens; one writes the frames every handle queues. What
//! spdystream does, this does: a stream is opened with `SYN_STREAM` and answered with
//! `SYN_REPLY` (an opener waits up to [`CREATE_STREAM_RESPONSE_TIMEOUT`] for it), a side ends
//! its half with an empty `DATA` frame flagged `FIN`, `RST_STREAM` ends both halves at once,
//! pings are echoed, `GOAWAY` ends the connection, and there is no flow control
//! (`WINDOW_UPDATE` and `SETTINGS` are read and ignored, none is sent). A stream whose reader
//! falls behind holds the whole connection back, as in spdystream: each stream buffers
//! [`STREAM_BUFFER_FRAMES`] pieces of at most [`MAX_WRITE_FRAME`] bytes (a larger frame is
//! handed over in pieces, so a stream holds at most two frames' bytes).
//!
//! The connection ends when the peer sends `GOAWAY` or closes, when a frame breaks the
//! protocol, or when every handle ([`Connection`] and its [`Stream`]s) is dropped or
//! [`Connection::close`] is called (this side then sends `GOAWAY` after what is queued).

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, ReadBuf};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::{CancellationToken, PollSender};

use crate::chunks::{ChunkReader, ChunkSource};

use super::frame::{rst_status, Frame, FrameDecoder, FrameEncoder, FrameError, MAX_PAYLOAD_LEN};
use super::headers::{Headers, DEFAULT_MAX_HEADER_BLOCK_LEN};

/// How long an opener waits for the peer's `SYN_REPLY` (client-go's
/// `createStreamResponseTimeout`).
pub const CREATE_STREAM_RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);
/// How many pieces of `DATA` (each at most [`MAX_WRITE_FRAME`] bytes) a stream holds for its
/// reader before the connection waits.
pub const STREAM_BUFFER_FRAMES: usize = 16;
/// The largest `DATA` frame this side writes (what Go's `io.Copy` hands a stream at once).
pub const MAX_WRITE_FRAME: usize = 32 * 1024;
/// How many frames may wait for the writer.
const OUTGOING_FRAMES: usize = 64;
/// How many opened streams may wait for [`Connection::accept`].
const INCOMING_STREAMS: usize = 64;
/// The largest stream id.
const MAX_STREAM_ID: u32 = 0x7fff_ffff;
/// How long a closing connection may take to write what is queued and its `GOAWAY`.
const CLOSE_FLUSH_TIMEOUT: Duration = Duration::from_secs(1);

/// Which end of the connection this is: the client opens odd-numbered streams and sends
/// odd ping ids, the server even ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The side that asked for the upgrade.
    Client,
    /// The side that answered it.
    Server,
}

/// How a connection is run.
#[derive(Debug, Clone)]
pub struct ConnectionOptions {
    /// Send a `PING` this often (client-go pings every 10 s through the WebSocket tunnel
    /// and every 5 s over a SPDY upgrade, so that idle connections survive load
    /// balancers); `None` sends none. Like spdystream, an unanswered ping ends nothing.
    pub ping_period: Option<Duration>,
    /// The largest frame payload accepted (16 MiB - 1, the protocol's, by default).
    pub max_frame_len: usize,
    /// The most a header block may inflate to.
    pub max_header_block_len: usize,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        Self {
            ping_period: None,
            max_frame_len: MAX_PAYLOAD_LEN,
            max_header_block_len: DEFAULT_MAX_HEADER_BLOCK_LEN,
        }
    }
}

/// Why a connection, a stream opening or a stream failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The connection is over.
    #[error("the SPDY connection is closed: {0}")]
    Closed(CloseReason),
    /// The peer reset the stream (`RST_STREAM`).
    #[error("the peer reset SPDY stream {stream_id} (status {status})")]
    Reset {
        /// The stream.
        stream_id: u32,
        /// The `RST_STREAM` status ([`rst_status`]).
        status: u32,
    },
    /// The peer did not answer a new stream in time.
    #[error("no reply to SPDY stream {stream_id} within {timeout:?}")]
    ReplyTimeout {
        /// The stream.
        stream_id: u32,
        /// How long it waited.
        timeout: Duration,
    },
    /// This side has opened every stream id there is.
    #[error("no SPDY stream ids left on this connection")]
    StreamIdsExhausted,
}

/// How a connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// The peer sent `GOAWAY`.
    GoAway {
        /// Its status (0 OK).
        status: u32,
    },
    /// The peer closed the connection without `GOAWAY`.
    Eof,
    /// The connection failed, or a frame broke the protocol.
    Failed(String),
    /// This side closed it.
    Local,
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseReason::GoAway { status: 0 } => f.write_str("the peer went away"),
            CloseReason::GoAway { status } => write!(f, "the peer went away (status {status})"),
            CloseReason::Eof => f.write_str("the peer closed the connection"),
            CloseReason::Failed(why) => f.write_str(why),
            CloseReason::Local => f.write_str("closed by this side"),
        }
    }
}

impl CloseReason {
    /// Whether the connection ended in an orderly way (`GOAWAY`, or this side's close).
    pub fn is_orderly(&self) -> bool {
        matches!(self, CloseReason::GoAway { .. } | CloseReason::Local)
    }
}

/// What the reader delivers to a stream.
type Delivery = Result<Bytes, Error>;

/// The reader's view of a stream.
struct StreamEntry {
    /// Where its data goes; `None` once the peer finished its half.
    data: Option<mpsc::Sender<Delivery>>,
    /// Who waits for its `SYN_REPLY` (streams this side opened).
    reply: Option<oneshot::Sender<Result<(), Error>>>,
}

struct State {
    streams: HashMap<u32, StreamEntry>,
    next_stream_id: u32,
    /// The lowest id the peer may open next.
    next_remote_id: u32,
    next_ping_id: u32,
    pings: HashMap<u32, oneshot::Sender<()>>,
    closed: Option<CloseReason>,
}

struct Shared {
    role: Role,
    out: mpsc::Sender<Frame>,
    state: Mutex<State>,
    /// Set once the connection is over, whoever ended it.
    closed: CancellationToken,
    /// Set when this side closes (or drops every handle).
    local_close: CancellationToken,
    incoming: tokio::sync::Mutex<mpsc::Receiver<Stream>>,
}

/// Closes the connection when the last user handle goes.
struct CloseOnDrop(CancellationToken);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// What every user handle holds.
#[derive(Clone)]
struct Handle {
    shared: Arc<Shared>,
    _alive: Arc<CloseOnDrop>,
}

/// A SPDY connection (cheap to clone; the clones share it).
#[derive(Clone)]
pub struct Connection {
    handle: Handle,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("role", &self.handle.shared.role)
            .field("closed", &self.handle.shared.state.lock().closed)
            .finish()
    }
}

impl Connection {
    /// Runs a connection over `io` (an upgraded HTTP connection, or a WebSocket tunnel's
    /// byte stream). Needs a tokio runtime: it spawns its reader and writer.
    pub fn new<IO>(io: IO, role: Role, options: ConnectionOptions) -> Self
    where
        IO: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (read, write) = tokio::io::split(io);
        let (out, out_rx) = mpsc::channel(OUTGOING_FRAMES);
        let (incoming_tx, incoming_rx) = mpsc::channel(INCOMING_STREAMS);
        let (first_id, first_ping) = match role {
            Role::Client => (1, 1),
            Role::Server => (2, 2),
        };
        let shared = Arc::new(Shared {
            role,
            out,
            state: Mutex::new(State {
                streams: HashMap::new(),
                next_stream_id: first_id,
                next_remote_id: if role == Role::Client { 2 } else { 1 },
                next_ping_id: first_ping,
                pings: HashMap::new(),
                closed: None,
            }),
            closed: CancellationToken::new(),
            local_close: CancellationToken::new(),
            incoming: tokio::sync::Mutex::new(incoming_rx),
        });
        let handle = Handle {
            shared: shared.clone(),
            _alive: Arc::new(CloseOnDrop(shared.local_close.clone())),
        };
        let decoder = FrameDecoder::new(options.max_frame_len, options.max_header_block_len);
        tokio::spawn(read_loop(
            FramedRead::new(read, decoder),
            shared.clone(),
            incoming_tx,
            Arc::downgrade(&handle._alive),
        ));
        tokio::spawn(write_loop(
            FramedWrite::new(write, FrameEncoder::default()),
            out_rx,
            shared.clone(),
        ));
        if let Some(period) = options.ping_period.filter(|p| !p.is_zero()) {
            tokio::spawn(ping_loop(shared, period));
        }
        Self { handle }
    }

    /// Opens a stream with `headers` and waits for the peer's `SYN_REPLY` (at most
    /// [`CREATE_STREAM_RESPONSE_TIMEOUT`]).
    pub async fn create_stream(&self, headers: Headers) -> Result<Stream, Error> {
        let shared = &self.handle.shared;
        let (data_tx, data_rx) = mpsc::channel(STREAM_BUFFER_FRAMES);
        let (reply_tx, reply_rx) = oneshot::channel();
        let stream_id = {
            let mut state = shared.state.lock();
            if let Some(reason) = &state.closed {
                return Err(Error::Closed(reason.clone()));
            }
            let id = state.next_stream_id;
            if id > MAX_STREAM_ID {
                return Err(Error::StreamIdsExhausted);
            }
            state.next_stream_id = id + 2;
            state.streams.insert(
                id,
                StreamEntry {
                    data: Some(data_tx),
                    reply: Some(reply_tx),
                },
            );
            id
        };
        let stream = Stream::new(self.handle.clone(), stream_id, headers.clone(), data_rx);
        let syn = Frame::SynStream {
            stream_id,
            associated_to: 0,
            priority: 0,
            fin: false,
            unidirectional: false,
            headers,
        };
        shared.send(syn).await?;
        match tokio::time::timeout(CREATE_STREAM_RESPONSE_TIMEOUT, reply_rx).await {
            Ok(Ok(Ok(()))) => Ok(stream),
            Ok(Ok(Err(e))) => Err(e),
            Ok(Err(_)) => Err(shared.closed_error()),
            Err(_) => Err(Error::ReplyTimeout {
                stream_id,
                timeout: CREATE_STREAM_RESPONSE_TIMEOUT,
            }),
        }
    }

    /// The next stream the peer opened, not yet answered ([`Stream::reply`] accepts it,
    /// [`Stream::reset`] refuses it); `None` once the connection is over.
    pub async fn accept(&self) -> Option<Stream> {
        let mut incoming = self.handle.shared.incoming.lock().await;
        incoming.recv().await
    }

    /// Sends a `PING` and waits for its answer; the round trip.
    pub async fn ping(&self) -> Result<Duration, Error> {
        let shared = &self.handle.shared;
        let (id, answered) = shared.register_ping()?;
        let start = Instant::now();
        shared.send(Frame::Ping { id }).await?;
        tokio::select! {
            answer = answered => answer.map_err(|_| shared.closed_error())?,
            _ = shared.closed.cancelled() => return Err(shared.closed_error()),
        }
        Ok(start.elapsed())
    }

    /// Ends the connection: what is queued is written, then `GOAWAY`; every stream ends.
    pub fn close(&self) {
        self.handle.shared.local_close.cancel();
    }

    /// Waits until the connection is over, and says why.
    pub async fn closed(&self) -> CloseReason {
        self.handle.shared.closed.cancelled().await;
        self.close_reason().unwrap_or(CloseReason::Local)
    }

    /// Why the connection ended, once it has.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.handle.shared.state.lock().closed.clone()
    }

    /// This side's role.
    pub fn role(&self) -> Role {
        self.handle.shared.role
    }
}

impl Shared {
    /// Queues a frame for the writer.
    async fn send(&self, frame: Frame) -> Result<(), Error> {
        if self.closed.is_cancelled() {
            return Err(self.closed_error());
        }
        tokio::select! {
            sent = self.out.send(frame) => sent.map_err(|_| self.closed_error()),
            _ = self.closed.cancelled() => Err(self.closed_error()),
        }
    }

    fn closed_error(&self) -> Error {
        Error::Closed(
            self.state
                .lock()
                .closed
                .clone()
                .unwrap_or(CloseReason::Local),
        )
    }

    fn register_ping(&self) -> Result<(u32, oneshot::Receiver<()>), Error> {
        let mut state = self.state.lock();
        if let Some(reason) = &state.closed {
            return Err(Error::Closed(reason.clone()));
        }
        let id = state.next_ping_id;
        state.next_ping_id = if id > MAX_STREAM_ID - 2 {
            id - (MAX_STREAM_ID - 1)
        } else {
            id + 2
        };
        let (tx, rx) = oneshot::channel();
        state.pings.insert(id, tx);
        Ok((id, rx))
    }

    /// The end of the connection: every stream's reader sees the end (a clean end after an
    /// orderly close, an error otherwise), every waiter is released.
    fn finish(&self, reason: CloseReason) {
        let streams = {
            let mut state = self.state.lock();
            if state.closed.is_none() {
                state.closed = Some(reason.clone());
            }
            state.pings.clear();
            std::mem::take(&mut state.streams)
        };
        let orderly = reason.is_orderly();
        for (_, entry) in streams {
            if let Some(reply) = entry.reply {
                let _ = reply.send(Err(Error::Closed(reason.clone())));
            }
            if let (Some(data), false) = (entry.data, orderly) {
                let _ = data.try_send(Err(Error::Closed(reason.clone())));
            }
        }
        self.closed.cancel();
    }

    /// Handles one frame from the peer.
    async fn on_frame(
        self: &Arc<Self>,
        frame: Frame,
        incoming: &mpsc::Sender<Stream>,
        alive: &std::sync::Weak<CloseOnDrop>,
    ) -> Option<CloseReason> {
        match frame {
            Frame::Data {
                stream_id,
                fin,
                data,
            } => return self.on_data(stream_id, fin, data).await,
            Frame::SynReply { stream_id, fin, .. } => {
                let reply = self
                    .state
                    .lock()
                    .streams
                    .get_mut(&stream_id)
                    .and_then(|e| e.reply.take());
                if let Some(reply) = reply {
                    let _ = reply.send(Ok(()));
                }
                if fin {
                    self.remote_finished(stream_id);
                }
            }
            Frame::Headers { stream_id, fin, .. } => {
                if fin {
                    self.remote_finished(stream_id);
                }
            }
            Frame::RstStream { stream_id, status } => self.on_reset(stream_id, status),
            Frame::SynStream {
                stream_id,
                fin,
                headers,
                ..
            } => {
                self.on_syn_stream(stream_id, fin, headers, incoming, alive)
                    .await
            }
            Frame::Ping { id } => self.on_ping(id),
            Frame::GoAway { status, .. } => return Some(CloseReason::GoAway { status }),
            Frame::Settings { .. } | Frame::WindowUpdate { .. } | Frame::Unknown { .. } => {}
        }
        None
    }

    /// Data for a stream: handed to its reader (waiting for room, unless the connection is
    /// closed locally meanwhile), then the peer's half closed if `fin`.
    async fn on_data(&self, stream_id: u32, fin: bool, data: Bytes) -> Option<CloseReason> {
        let sender = self
            .state
            .lock()
            .streams
            .get(&stream_id)
            .and_then(|e| e.data.clone());
        if let (Some(sender), false) = (sender, data.is_empty()) {
            // Handed over in pieces of at most `MAX_WRITE_FRAME`: a stream's buffer of
            // `STREAM_BUFFER_FRAMES` pieces then keeps at most two frames' bytes alive, the
            // one being handed over and the tail of the one before, whatever size a peer
            // makes its frames (16 buffered frames of the protocol's largest size would be
            // 256 MiB; the kubelet writes 32 KiB).
            let mut data = data;
            while !data.is_empty() {
                let piece = data.split_to(data.len().min(MAX_WRITE_FRAME));
                tokio::select! {
                    sent = sender.send(Ok(piece)) => {
                        // A reader that is gone drops what it would have read.
                        if sent.is_err() {
                            break;
                        }
                    }
                    _ = self.local_close.cancelled() => return Some(CloseReason::Local),
                }
            }
        }
        if fin {
            self.remote_finished(stream_id);
        }
        None
    }

    /// The peer reset a stream: its opener and its reader are told, and it is forgotten.
    fn on_reset(&self, stream_id: u32, status: u32) {
        let entry = self.state.lock().streams.remove(&stream_id);
        if let Some(entry) = entry {
            let error = Error::Reset { stream_id, status };
            if let Some(reply) = entry.reply {
                let _ = reply.send(Err(error.clone()));
            }
            if let Some(data) = entry.data {
                let _ = data.try_send(Err(error));
            }
        }
    }

    /// A ping: the answer to one of ours (odd ids are the client's), or the peer's, echoed.
    fn on_ping(&self, id: u32) {
        let ours = match self.role {
            Role::Client => !id.is_multiple_of(2),
            Role::Server => id.is_multiple_of(2),
        };
        if ours {
            if let Some(waiter) = self.state.lock().pings.remove(&id) {
                let _ = waiter.send(());
            }
        } else {
            let _ = self.out.try_send(Frame::Ping { id });
        }
    }

    async fn on_syn_stream(
        self: &Arc<Self>,
        stream_id: u32,
        fin: bool,
        headers: Headers,
        incoming: &mpsc::Sender<Stream>,
        alive: &std::sync::Weak<CloseOnDrop>,
    ) {
        let refuse = |status| {
            let _ = self.out.try_send(Frame::RstStream { stream_id, status });
        };
        if self.role == Role::Client {
            // Kubernetes' servers open no streams; a client refuses them.
            refuse(rst_status::REFUSED_STREAM);
            return;
        }
        let (data_tx, data_rx) = mpsc::channel(STREAM_BUFFER_FRAMES);
        {
            let mut state = self.state.lock();
            if stream_id.is_multiple_of(2) || stream_id < state.next_remote_id {
                drop(state);
                refuse(rst_status::PROTOCOL_ERROR);
                return;
            }
            state.next_remote_id = stream_id + 2;
            state.streams.insert(
                stream_id,
                StreamEntry {
                    data: (!fin).then_some(data_tx),
                    reply: None,
                },
            );
        }
        // The connection lives while the reader delivers: the stream keeps it alive once
        // the peer's half is accepted.
        let Some(alive) = alive.upgrade() else {
            return;
        };
        let handle = Handle {
            shared: self.clone(),
            _alive: alive,
        };
        let mut stream = Stream::new(handle, stream_id, headers, data_rx);
        stream.awaiting_reply = true;
        tokio::select! {
            _ = incoming.send(stream) => {}
            _ = self.local_close.cancelled() => {}
        }
    }

    /// The peer finished its half of a stream: its reader sees the end.
    fn remote_finished(&self, stream_id: u32) {
        if let Some(entry) = self.state.lock().streams.get_mut(&stream_id) {
            entry.data = None;
        }
    }
}

async fn read_loop<R>(
    mut frames: FramedRead<R, FrameDecoder>,
    shared: Arc<Shared>,
    incoming: mpsc::Sender<Stream>,
    alive: std::sync::Weak<CloseOnDrop>,
) where
    R: AsyncRead + Unpin,
{
    let reason = loop {
        let next = tokio::select! {
            next = frames.next() => next,
            _ = shared.local_close.cancelled() => break CloseReason::Local,
        };
        match next {
            None => break CloseReason::Eof,
            Some(Err(FrameError::Io(e))) => break CloseReason::Failed(format!("reading: {e}")),
            Some(Err(e)) => break CloseReason::Failed(e.to_string()),
            Some(Ok(frame)) => {
                if let Some(reason) = shared.on_frame(frame, &incoming, &alive).await {
                    break reason;
                }
            }
        }
    };
    tracing::debug!(%reason, "SPDY connection ended");
    shared.finish(reason);
}

async fn write_loop<W>(
    mut frames: FramedWrite<W, FrameEncoder>,
    mut out: mpsc::Receiver<Frame>,
    shared: Arc<Shared>,
) where
    W: AsyncWrite + Unpin,
{
    let closed_here = loop {
        let frame = tokio::select! {
            biased;
            frame = out.recv() => frame,
            _ = shared.local_close.cancelled() => break true,
            _ = shared.closed.cancelled() => break false,
        };
        let Some(frame) = frame else { break false };
        if let Err(e) = write_batch(&mut frames, frame, &mut out).await {
            shared.finish(CloseReason::Failed(format!("writing: {e}")));
            break false;
        }
    };
    if closed_here {
        // What was queued goes out first, then GOAWAY (client-go's Close); a peer that is
        // gone already makes these writes fail, which ends nothing more.
        let last_good_stream_id = shared.state.lock().next_remote_id.saturating_sub(2);
        let mut pending = Vec::new();
        while let Ok(frame) = out.try_recv() {
            pending.push(frame);
        }
        pending.push(Frame::GoAway {
            last_good_stream_id,
            status: 0,
        });
        let flush = async {
            for frame in pending {
                frames.feed(frame).await?;
            }
            frames.flush().await
        };
        let _ = tokio::time::timeout(CLOSE_FLUSH_TIMEOUT, flush).await;
        shared.finish(CloseReason::Local);
    }
    let _ = tokio::time::timeout(CLOSE_FLUSH_TIMEOUT, frames.get_mut().shutdown()).await;
}

/// Writes `first` and whatever else is queued, then flushes once.
async fn write_batch<W>(
    frames: &mut FramedWrite<W, FrameEncoder>,
    first: Frame,
    out: &mut mpsc::Receiver<Frame>,
) -> Result<(), FrameError>
where
    W: AsyncWrite + Unpin,
{
    frames.feed(first).await?;
    while let Ok(frame) = out.try_recv() {
        frames.feed(frame).await?;
    }
    frames.flush().await
}

async fn ping_loop(shared: Arc<Shared>, period: Duration) {
    let mut ticks = tokio::time::interval_at(Instant::now() + period, period);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = shared.closed.cancelled() => return,
            _ = shared.local_close.cancelled() => return,
        }
        let Ok((id, answered)) = shared.register_ping() else {
            return;
        };
        // The answer is not waited for (nor is its absence an error), as in client-go.
        drop(answered);
        if shared.send(Frame::Ping { id }).await.is_err() {
            return;
        }
    }
}

/// One stream of a connection: its bytes from the peer ([`AsyncRead`]) and to it
/// ([`AsyncWrite`]; shutting the writer down finishes this side's half).
///
/// Dropping a stream that is not finished both ways resets it (`RST_STREAM`, cancel).
pub struct Stream {
    handle: Handle,
    id: u32,
    headers: Headers,
    /// The peer's half: its `DATA` frames as they are delivered.
    data: ChunkReader<mpsc::Receiver<Delivery>>,
    writer: PollSender<Frame>,
    write_finished: bool,
    reset: bool,
    /// A stream the peer opened, not answered yet.
    awaiting_reply: bool,
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("id", &self.id)
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}

impl Stream {
    fn new(handle: Handle, id: u32, headers: Headers, data: mpsc::Receiver<Delivery>) -> Self {
        let writer = PollSender::new(handle.shared.out.clone());
        Self {
            handle,
            id,
            headers,
            data: ChunkReader::new(data),
            writer,
            write_finished: false,
            reset: false,
            awaiting_reply: false,
        }
    }

    /// The stream id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The headers it was opened with.
    pub fn headers(&self) -> &Headers {
        &self.headers
    }

    /// Accepts a stream the peer opened (`SYN_REPLY` with no headers, as Kubernetes'
    /// servers answer).
    pub async fn reply(&mut self) -> Result<(), Error> {
        if !self.awaiting_reply {
            return Ok(());
        }
        self.awaiting_reply = false;
        self.handle
            .shared
            .send(Frame::SynReply {
                stream_id: self.id,
                fin: false,
                headers: Headers::new(),
            })
            .await
    }

    /// Writes `data` (in frames of at most [`MAX_WRITE_FRAME`] bytes); `fin` finishes this
    /// side's half after it.
    pub async fn write_data(&mut self, data: Bytes, fin: bool) -> Result<(), Error> {
        self.check_writable()?;
        let mut rest = data;
        loop {
            let chunk = rest.split_to(rest.len().min(MAX_WRITE_FRAME));
            let last = rest.is_empty();
            self.handle
                .shared
                .send(Frame::Data {
                    stream_id: self.id,
                    fin: fin && last,
                    data: chunk,
                })
                .await?;
            if last {
                break;
            }
        }
        if fin {
            self.write_finished = true;
        }
        Ok(())
    }

    /// Finishes this side's half (an empty `DATA` frame with `FIN`, spdystream's `Close`).
    pub async fn close(&mut self) -> Result<(), Error> {
        if self.write_finished {
            return Ok(());
        }
        self.write_data(Bytes::new(), true).await
    }

    /// Ends both halves at once (`RST_STREAM`, cancel): unsent data is dropped.
    pub fn reset(&mut self) {
        if self.reset {
            return;
        }
        self.reset = true;
        self.data.end();
        self.write_finished = true;
        self.awaiting_reply = false;
        self.handle.shared.state.lock().streams.remove(&self.id);
        let _ = self.handle.shared.out.try_send(Frame::RstStream {
            stream_id: self.id,
            status: rst_status::CANCEL,
        });
    }

    fn check_writable(&self) -> Result<(), Error> {
        if self.reset {
            return Err(Error::Reset {
                stream_id: self.id,
                status: rst_status::CANCEL,
            });
        }
        if let Some(reason) = &self.handle.shared.state.lock().closed {
            return Err(Error::Closed(reason.clone()));
        }
        Ok(())
    }

    /// Reads the next bytes the peer sent; `None` at the end of its half.
    pub async fn read_data(&mut self) -> Result<Option<Bytes>, Error> {
        self.data.next_chunk().await.transpose()
    }
}

/// What the data of a stream delivers: the peer's bytes, or why the stream ended early.
impl ChunkSource for mpsc::Receiver<Delivery> {
    type Error = Error;

    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Delivery>> {
        self.poll_recv(cx)
    }
}

/// A stream's failure as an I/O error: a reset is `ConnectionReset`, an orderly close
/// `BrokenPipe`, anything else `ConnectionAborted`.
impl From<Error> for io::Error {
    fn from(e: Error) -> Self {
        let kind = match &e {
            Error::Reset { .. } => io::ErrorKind::ConnectionReset,
            Error::Closed(reason) if reason.is_orderly() => io::ErrorKind::BrokenPipe,
            _ => io::ErrorKind::ConnectionAborted,
        };
        io::Error::new(kind, e)
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.data).poll_read(cx, buf)
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.write_finished {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "write on a finished SPDY stream",
            )));
        }
        if let Err(e) = this.check_writable() {
            return Poll::Ready(Err(io::Error::from(e)));
        }
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        match this.writer.poll_reserve(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Err(_)) => {
                return Poll::Ready(Err(io::Error::from(this.handle.shared.closed_error())))
            }
            Poll::Ready(Ok(())) => {}
        }
        let n = buf.len().min(MAX_WRITE_FRAME);
        let frame = Frame::Data {
            stream_id: this.id,
            fin: false,
            data: Bytes::copy_from_slice(&buf[..n]),
        };
        match this.writer.send_item(frame) {
            Ok(()) => Poll::Ready(Ok(n)),
            Err(_) => Poll::Ready(Err(io::Error::from(this.handle.shared.closed_error()))),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Frames are written by the connection's writer as soon as they are queued.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.write_finished {
            return Poll::Ready(Ok(()));
        }
        if let Err(e) = this.check_writable() {
            return Poll::Ready(Err(io::Error::from(e)));
        }
        match this.writer.poll_reserve(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Err(_)) => {
                return Poll::Ready(Err(io::Error::from(this.handle.shared.closed_error())))
            }
            Poll::Ready(Ok(())) => {}
        }
        let fin = Frame::Data {
            stream_id: this.id,
            fin: true,
            data: Bytes::new(),
        };
        match this.writer.send_item(fin) {
            Ok(()) => {
                this.write_finished = true;
                Poll::Ready(Ok(()))
            }
            Err(_) => Poll::Ready(Err(io::Error::from(this.handle.shared.closed_error()))),
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let entry_done = {
            let mut state = self.handle.shared.state.lock();
            // The peer's half is over when it sent FIN (no data sender left) or reset it.
            let peer_finished = state
                .streams
                .get(&self.id)
                .is_none_or(|entry| entry.data.is_none());
            let done = self.write_finished && (self.data.is_ended() || peer_finished);
            if done {
                state.streams.remove(&self.id);
            }
            done
        };
        if self.awaiting_reply || (!entry_done && !self.reset) {
            self.reset();
        }
    }
}
