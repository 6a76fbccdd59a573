//! Closing every connection of a pool at once (client-go's `util/connrotation`: its dialer
//! tracks the connections it made and `CloseAll` closes them), for when the client's TLS
//! identity changes: open connections, watches included, would otherwise go on presenting
//! the old certificate for as long as they live.
//!
//! The connector wraps each TCP stream in a [`TrackedIo`]; [`ConnectionTracker::close_all`]
//! makes every stream opened before it fail its next read or write (and wakes a read that is
//! waiting), so hyper drops the connection and a request in flight ends with a
//! connection-aborted error, which the retry and watch logic treat as a broken connection.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use tokio::sync::watch;

/// Closes the connections it tracks (client-go's `connrotation.Dialer.CloseAll`).
#[derive(Clone)]
pub(crate) struct ConnectionTracker {
    /// Bumped by each `close_all`; a stream is closed once the number changes.
    generation: watch::Sender<u64>,
}

impl fmt::Debug for ConnectionTracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionTracker")
            .field("closed_times", &*self.generation.borrow())
            .finish()
    }
}

impl Default for ConnectionTracker {
    fn default() -> Self {
        Self {
            generation: watch::Sender::new(0),
        }
    }
}

impl ConnectionTracker {
    /// `io`, closed by the next [`close_all`](Self::close_all).
    pub(crate) fn track<T>(&self, io: T) -> TrackedIo<T> {
        let mut changed = self.generation.subscribe();
        let closed = async move {
            if changed.changed().await.is_err() {
                // The tracker is gone (its pool was dropped): nothing can close this
                // connection any more.
                std::future::pending::<()>().await;
            }
        };
        TrackedIo {
            inner: io,
            state: State::Open(Box::pin(closed)),
        }
    }

    /// Closes every connection tracked so far; connections made later are not affected.
    pub(crate) fn close_all(&self) {
        self.generation.send_modify(|g| *g += 1);
    }
}

/// Why a tracked connection failed: its pool closed it.
#[derive(Debug, thiserror::Error)]
#[error("connection closed by the client: its TLS client certificate changed")]
pub(crate) struct ConnectionClosedForRotation;

enum State {
    Open(Pin<Box<dyn Future<Output = ()> + Send>>),
    Closed,
}

/// A connection's stream that a [`ConnectionTracker`] can close.
pub(crate) struct TrackedIo<T> {
    inner: T,
    state: State,
}

impl<T: fmt::Debug> fmt::Debug for TrackedIo<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrackedIo")
            .field("inner", &self.inner)
            .field("closed", &matches!(self.state, State::Closed))
            .finish()
    }
}

impl<T> TrackedIo<T> {
    /// An error once the tracker has closed this connection (registering `cx` to be woken
    /// when it does).
    fn check_open(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if let State::Open(closed) = &mut self.state {
            if closed.as_mut().poll(cx).is_ready() {
                self.state = State::Closed;
            }
        }
        match self.state {
            State::Open(_) => Ok(()),
            State::Closed => Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                ConnectionClosedForRotation,
            )),
        }
    }
}

impl<T: Read + Unpin> Read for TrackedIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check_open(cx)?;
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<T: Write + Unpin> Write for TrackedIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check_open(cx)?;
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check_open(cx)?;
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check_open(cx)?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl<T: Connection> Connection for TrackedIo<T> {
    fn connected(&self) -> Connected {
        self.inner.connected()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper_util::rt::TokioIo;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A read waiting on a tracked stream fails as soon as `close_all` runs; a stream
    /// tracked afterwards is not closed by it.
    #[tokio::test]
    async fn close_all_fails_waiting_reads_of_earlier_streams_only() {
        let tracker = ConnectionTracker::default();
        let (a, _peer_a) = tokio::io::duplex(64);
        let mut early = TokioIo::new(tracker.track(TokioIo::new(a)));
        let reading = tokio::spawn(async move {
            let mut buf = [0u8; 8];
            early.read(&mut buf).await
        });
        tokio::task::yield_now().await;
        tracker.close_all();
        let err = reading.await.unwrap().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionAborted);
        assert!(err.to_string().contains("certificate changed"), "{err}");

        let (b, mut peer_b) = tokio::io::duplex(64);
        let mut late = TokioIo::new(tracker.track(TokioIo::new(b)));
        peer_b.write_all(b"hi").await.unwrap();
        let mut buf = [0u8; 2];
        late.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"hi");
    }

    /// A stream whose tracker is dropped stays open.
    #[tokio::test]
    async fn a_dropped_tracker_closes_nothing() {
        let tracker = ConnectionTracker::default();
        let (a, mut peer) = tokio::io::duplex(64);
        let mut io = TokioIo::new(tracker.track(TokioIo::new(a)));
        drop(tracker);
        peer.write_all(b"ok").await.unwrap();
        let mut buf = [0u8; 2];
        io.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ok");
    }
}
