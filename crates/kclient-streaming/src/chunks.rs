//! [`ChunkReader`]: a byte stream that arrives in chunks (the messages of a channel, the
//! binary messages of a WebSocket, the `DATA` frames of a SPDY stream), read as an
//! [`AsyncRead`] or chunk by chunk. The read half of [`spdy::Stream`](crate::spdy::Stream) and
//! of [`TunnelingConnection`](crate::portforward::TunnelingConnection) is one, and so is
//! the stdin a server implementation (kclient-fake's exec) hands the process it runs.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc;

/// Where a [`ChunkReader`]'s chunks come from.
pub trait ChunkSource {
    /// Why the source failed.
    type Error;

    /// The next chunk; `None` at the end. An empty chunk is passed over.
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Self::Error>>>;
}

/// The chunks sent on a channel; the end is every sender dropped.
impl ChunkSource for mpsc::Receiver<Bytes> {
    type Error = io::Error;

    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> {
        self.poll_recv(cx).map(|chunk| chunk.map(Ok))
    }
}

/// Reads the chunks of a [`ChunkSource`] as one byte stream: a read takes what is left of
/// the last chunk, or waits for the next. The source is not read again after its end, nor
/// after it failed (the failure is the read's error; later reads see the end), nor after
/// [`end`](Self::end).
///
/// ```
/// use kclient_streaming::chunks::ChunkReader;
/// use tokio::io::AsyncReadExt;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let (tx, rx) = tokio::sync::mpsc::channel(4);
/// tx.send(bytes::Bytes::from_static(b"hello, ")).await.unwrap();
/// tx.send(bytes::Bytes::from_static(b"world")).await.unwrap();
/// drop(tx);
/// let mut text = String::new();
/// ChunkReader::new(rx).read_to_string(&mut text).await.unwrap();
/// assert_eq!(text, "hello, world");
/// # }
/// ```
#[derive(Debug)]
pub struct ChunkReader<S> {
    source: S,
    unread: Bytes,
    ended: bool,
}

impl<S> ChunkReader<S> {
    /// Reads `source`.
    pub fn new(source: S) -> Self {
        Self {
            source,
            unread: Bytes::new(),
            ended: false,
        }
    }

    /// The source.
    pub fn get_ref(&self) -> &S {
        &self.source
    }

    /// The source, to use it otherwise (a WebSocket's sending half): taking chunks from it
    /// directly skips them.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.source
    }

    /// Whether the source has ended (or failed, or [`end`](Self::end) was called); what is
    /// left of its last chunk may still be read.
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// Reads no more from the source (what is left of the last chunk is still read).
    pub fn end(&mut self) {
        self.ended = true;
    }
}

impl<S: ChunkSource> ChunkReader<S> {
    /// The next chunk: what is left of the last one, or the source's next; `None` at the
    /// end.
    pub fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, S::Error>>> {
        if !self.unread.is_empty() {
            return Poll::Ready(Some(Ok(std::mem::take(&mut self.unread))));
        }
        while !self.ended {
            match ready!(self.source.poll_chunk(cx)) {
                Some(Ok(chunk)) if chunk.is_empty() => {}
                Some(Ok(chunk)) => return Poll::Ready(Some(Ok(chunk))),
                end => {
                    self.ended = true;
                    return Poll::Ready(end);
                }
            }
        }
        Poll::Ready(None)
    }

    /// Waits for the next chunk ([`poll_chunk`](Self::poll_chunk)).
    pub async fn next_chunk(&mut self) -> Option<Result<Bytes, S::Error>> {
        poll_fn(|cx| self.poll_chunk(cx)).await
    }
}

impl<S> AsyncRead for ChunkReader<S>
where
    S: ChunkSource + Unpin,
    S::Error: Into<io::Error>,
{
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let mut chunk = match ready!(self.poll_chunk(cx)) {
            Some(Ok(chunk)) => chunk,
            Some(Err(e)) => return Poll::Ready(Err(e.into())),
            None => return Poll::Ready(Ok(())),
        };
        let n = chunk.len().min(buf.remaining());
        buf.put_slice(&chunk.split_to(n));
        self.unread = chunk;
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// Chunks, then a failure.
    struct Failing(Vec<Bytes>);

    impl ChunkSource for Failing {
        type Error = io::Error;

        fn poll_chunk(&mut self, _: &mut Context<'_>) -> Poll<Option<io::Result<Bytes>>> {
            Poll::Ready(Some(if self.0.is_empty() {
                Err(io::Error::other("broken"))
            } else {
                Ok(self.0.remove(0))
            }))
        }
    }

    #[tokio::test]
    async fn reads_run_chunks_together_and_a_failure_ends_them() {
        let mut reader = ChunkReader::new(Failing(vec![
            Bytes::from_static(b"abc"),
            Bytes::new(),
            Bytes::from_static(b"de"),
        ]));
        let mut two = [0u8; 2];
        reader.read_exact(&mut two).await.unwrap();
        assert_eq!(&two, b"ab");
        assert_eq!(reader.next_chunk().await.unwrap().unwrap(), "c");
        assert_eq!(reader.next_chunk().await.unwrap().unwrap(), "de");
        let error = reader.read(&mut two).await.unwrap_err();
        assert_eq!(error.to_string(), "broken");
        assert!(reader.is_ended());
        assert_eq!(reader.read(&mut two).await.unwrap(), 0);
    }

    #[tokio::test]
    async fn what_is_left_is_read_after_the_end() {
        let (tx, rx) = mpsc::channel(2);
        tx.send(Bytes::from_static(b"xyz")).await.unwrap();
        tx.send(Bytes::from_static(b"more")).await.unwrap();
        let mut reader = ChunkReader::new(rx);
        let mut one = [0u8; 1];
        reader.read_exact(&mut one).await.unwrap();
        reader.end();
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).await.unwrap();
        assert_eq!(rest, b"yz");
        // The chunk still queued is not read.
        assert_eq!(reader.get_mut().try_recv().unwrap(), "more");
    }
}
