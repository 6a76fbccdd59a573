//! SPDY/3.1 as Kubernetes speaks it (moby/spdystream under client-go's and the kubelet's
//! `httpstream/spdy`): the frames ([`frame`]), header blocks compressed with zlib and the
//! SPDY dictionary ([`Headers`]), and connections multiplexing streams ([`Connection`],
//! [`Stream`]).
//!
//! Port-forward runs on it: over a WebSocket tunnel (`SPDY/3.1+portforward.k8s.io`, what
//! kube-apiserver offers client-go since 1.30) or over a plain `Upgrade: SPDY/3.1`.
//! kclient-fake serves the server side with the same code.

mod connection;
mod dictionary;
pub mod frame;
mod headers;

pub use connection::{
    CloseReason, Connection, ConnectionOptions, Error, Role, Stream,
    CREATE_STREAM_RESPONSE_TIMEOUT, MAX_WRITE_FRAME, STREAM_BUFFER_FRAMES,
};
pub use frame::{Frame, FrameDecoder, FrameEncoder, FrameError};
pub use headers::{Headers, DEFAULT_MAX_HEADER_BLOCK_LEN};

/// The `Upgrade` header value of a SPDY upgrade.
pub const HEADER_SPDY31: &str = "SPDY/3.1";
/// The header naming the protocol spoken over SPDY (client-go's
/// `httpstream.HeaderProtocolVersion`).
pub const HEADER_PROTOCOL_VERSION: &str = "X-Stream-Protocol-Version";
