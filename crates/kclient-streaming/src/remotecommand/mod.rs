//! Running a command in a container, or attaching to one (client-go's
//! `tools/remotecommand`), over WebSocket.
//!
//! An [`Executor`] opens `GET …/pods/NAME/exec?command=…` (or `/attach`) as a WebSocket with
//! the subprotocol `v5.channel.k8s.io` or, from servers that lack it, `v4.channel.k8s.io`.
//! Every binary message starts with the channel it is for: 0 stdin, 1 stdout, 2 stderr,
//! 3 the error channel (the command's end, a `metav1.Status`), 4 terminal resizes
//! (`{"Width":80,"Height":24}`); v5 adds 255, the CLOSE signal (`[255, 0]` ends stdin, so a
//! command reading its input sees end-of-file; over v4 the end of stdin cannot be told).
//! The session ends when the server closes the WebSocket after writing the status: a
//! success is `Ok(())`, a non-zero exit is [`Error::NonZeroExit`] (with the code), any
//! other failure the server reports is [`Error::Remote`] (its `Status`).
//!
//! The server's output is read while stdin goes out, side by side (client-go's goroutines),
//! so a slow local stdout never holds up stdin, nor a server slow to take stdin its output.
//! Pings go out every [`PING_PERIOD`]; a server silent for [`PING_READ_DEADLINE`] (no data,
//! no pong) while the session waits for it ends the session with [`Error::HeartbeatTimeout`]
//! (time the session spends writing to a slow local stdout is not the server's silence). Messages over
//! [`DEFAULT_MAX_MESSAGE_LEN`] are refused ([`Error::MessageTooLarge`]). Cancelling is
//! dropping the future (or wrapping it in `tokio::time::timeout`): the connection closes
//! with it.
//!
//! Against a hostile or broken server:
//!
//! - Memory is bounded by the configured buffers, however fast the server sends: one message
//!   is read at a time and written to the local stdout or stderr before the next is read,
//!   so a slow local writer holds the server back through TCP (what is in flight is at most
//!   the WebSocket's read buffer and one message of at most
//!   [`max_message_len`](Executor::max_message_len), besides the kernel's socket buffers).
//! - Messages on a channel the session does not read (an unknown channel number, stdin,
//!   resize, a CLOSE signal from the server) are discarded, as client-go's
//!   `readDemuxLoop` discards them ("Unknown stream id, discarding message").
//! - The error channel keeps at most [`MAX_ERROR_STREAM_LEN`] bytes ([`Error::Protocol`]
//!   past it); what it carried must be a `Status` ([`Error::ErrorStream`] otherwise).
//! - A server that sends its status but never closes the connection ends the session with
//!   that status [`STATUS_CLOSE_GRACE`] after the status came (client-go would wait for the
//!   close as long as the server answers pings).
//! - A connection that ends without a close frame (mid-frame or between frames) is
//!   [`Error::ConnectionLost`], as is a frame that breaks the WebSocket protocol; a close
//!   other than a normal closure, without a status before it, is [`Error::AbnormalClose`]
//!   (never a success).
//!
//! A server that refuses the WebSocket upgrade (an API server older than 1.29 answers
//! exec over WebSocket only through the kubelet, which speaks v4 at most; a proxy that does
//! not pass upgrades) ends in [`Error::Upgrade`]: client-go then falls back to SPDY;
//! kclient does not speak exec over SPDY, and says so in the error.
//!
//! ```no_run
//! use kclient_streaming::remotecommand::{ExecOptions, Executor};
//!
//! # async fn run(client: kclient_rest::RestClient) -> Result<(), kclient_streaming::remotecommand::Error> {
//! let options = ExecOptions::command(["sh", "-c", "echo hello; exit 3"]).stdout().stderr();
//! let output = Executor::exec(&client, "default", "web", &options).output(None).await?;
//! assert_eq!(output.stdout, b"hello\n");
//! assert_eq!(output.exit_code, 3);
//! # Ok(()) }
//! ```

mod executor;
mod options;
mod status;

use std::io;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use kclient_core::{ApiStatus, Status};
use tokio_tungstenite::tungstenite::Message;

pub use executor::{Executor, Output};
pub use options::{AttachOptions, ExecOptions, StreamOptions, TerminalSize, TerminalSizeQueue};
pub use status::{CodeExitError, EXIT_CODE_CAUSE_TYPE, NON_ZERO_EXIT_CODE_REASON};

use crate::upgrade::UpgradeError;

/// The fourth version of the channel protocol: exit codes on the error channel.
pub const STREAM_PROTOCOL_V4_NAME: &str = "v4.channel.k8s.io";
/// The fifth version: v4 and the CLOSE signal (kube-apiserver 1.30+).
pub const STREAM_PROTOCOL_V5_NAME: &str = "v5.channel.k8s.io";

/// The channel of the command's standard input.
pub const STREAM_STDIN: u8 = 0;
/// The channel of its standard output.
pub const STREAM_STDOUT: u8 = 1;
/// The channel of its standard error.
pub const STREAM_STDERR: u8 = 2;
/// The error channel: the `Status` the session ends with.
pub const STREAM_ERR: u8 = 3;
/// The channel of terminal resizes.
pub const STREAM_RESIZE: u8 = 4;
/// The CLOSE signal (v5): `[255, channel]` closes a channel.
pub const STREAM_CLOSE: u8 = 255;

/// How often a ping goes to the server (client-go's `pingPeriod`).
pub const PING_PERIOD: Duration = Duration::from_secs(5);
/// How long the server may stay silent (client-go's `pingReadDeadline`: twelve pings and a
/// second).
pub const PING_READ_DEADLINE: Duration = Duration::from_secs(61);
/// The largest message accepted (16 MiB; servers send at most 32 KiB and a byte).
pub const DEFAULT_MAX_MESSAGE_LEN: usize = 16 * 1024 * 1024;
/// The most the error channel may carry (a `Status` is a few hundred bytes).
pub const MAX_ERROR_STREAM_LEN: usize = 64 * 1024;
/// How long a session waits for the server to close the connection once the error channel
/// has carried its status (kube-apiserver closes right after writing it): a server that
/// keeps the connection open after the status (answering pings, or still sending output)
/// ends the session with that status this long after it came, rather than holding it
/// forever.
pub const STATUS_CLOSE_GRACE: Duration = Duration::from_secs(5);

/// A binary message on `channel` of the channel protocol: the channel's byte, then `data`
/// (what a client writes on stdin and resize, and a server on stdout, stderr and the error
/// channel).
pub fn channel_message(channel: u8, data: &[u8]) -> Message {
    let mut frame = BytesMut::with_capacity(data.len() + 1);
    frame.put_u8(channel);
    frame.put_slice(data);
    Message::Binary(frame.freeze())
}

/// Why a session failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The WebSocket could not be opened: the server refused the upgrade (with its `Status`:
    /// a missing pod or container, a pod without a node), the request failed, or the
    /// handshake was wrong. (client-go falls back to SPDY here; kclient does not speak exec
    /// over SPDY.)
    #[error("{0}")]
    Upgrade(#[from] UpgradeError),
    /// The command ran and exited with a non-zero code.
    #[error(transparent)]
    NonZeroExit(CodeExitError),
    /// The server ended the session with a failure other than an exit code (a container
    /// that is not running, an internal error): its `Status`, whose message is the error's.
    #[error("{}", .0.message)]
    Remote(Box<kclient_core::Status>),
    /// The error channel carried something that is not a `Status` of the protocol.
    #[error("{0}")]
    ErrorStream(String),
    /// The server broke the channel protocol (an empty or text message).
    #[error("remote command protocol error: {0}")]
    Protocol(String),
    /// A message over the limit.
    #[error("a remote command message of {size} bytes is over the limit of {max}")]
    MessageTooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// The server closed the WebSocket with a code other than a normal closure (`1000`), and
    /// without a status on the error channel (client-go's `next reader: websocket: close
    /// CODE`): the session did not end as the protocol ends it.
    #[error("the server closed the remote command session with code {code}: {reason:?}")]
    AbnormalClose {
        /// The close code (`1011` an internal error, `1001` going away, …).
        code: u16,
        /// The reason the server gave (at most 123 bytes).
        reason: String,
    },
    /// The connection broke before the session ended (reset, closed without a close frame).
    #[error("the remote command connection was lost: {0}")]
    ConnectionLost(#[source] tokio_tungstenite::tungstenite::Error),
    /// Nothing came from the server for [`PING_READ_DEADLINE`].
    #[error("no message or pong from the server for {0:?}")]
    HeartbeatTimeout(Duration),
    /// The local side failed: reading stdin or writing stdout or stderr.
    #[error("remote command: local stream failed: {0}")]
    Io(#[from] io::Error),
}

impl Error {
    /// The exit code of a command that exited non-zero.
    pub fn exit_code(&self) -> Option<i32> {
        match self {
            Error::NonZeroExit(e) => Some(e.code),
            _ => None,
        }
    }
}

/// The server's `Status`: the refusal of the upgrade, or the failure the session ended with
/// (a container that is not running).
impl ApiStatus for Error {
    fn api_status(&self) -> Option<&Status> {
        match self {
            Error::Upgrade(e) => e.api_status(),
            Error::Remote(status) => Some(status),
            _ => None,
        }
    }

    fn is_connection_refused(&self) -> bool {
        matches!(self, Error::Upgrade(e) if e.is_connection_refused())
    }
}
