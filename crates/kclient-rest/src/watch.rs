//! Decoding a watch response: bytes in, [`WatchEvent`]s out.
//!
//! Frames are found incrementally — JSON with kclient-core's [`JsonFrameDecoder`], protobuf
//! with kclient-protobuf's length-prefixed frames, one loop for both: each chunk is
//! scanned once and only the incomplete frame is buffered, up to a size limit, so a stream is
//! never buffered whole. The stream ends cleanly when the server closes it between frames; a
//! malformed, truncated or oversized frame, or a broken connection, yields one typed error and
//! then the stream ends (as client-go's `StreamWatcher` stops after a decoding error).

use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use kclient_core::{JsonFrameDecoder, WatchDecodeError, WatchEvent, WatchStream};
use serde::de::DeserializeOwned;

use crate::error::Error;

/// The default limit on one watch frame (kclient-core's 64 MiB, far above the API server's own
/// object size limits).
pub const DEFAULT_MAX_WATCH_FRAME_LEN: usize = JsonFrameDecoder::DEFAULT_MAX_FRAME_LEN;

/// How a watch body is cut into events: kclient-core's JSON frames here, kclient-protobuf's
/// length-prefixed frames in [`crate::protobuf`]. [`decode_events`] drives either.
pub(crate) trait EventFrames<K>: Send + 'static {
    /// Adds bytes read from the body.
    fn push(&mut self, chunk: &[u8]);
    /// The next complete event, if one is buffered; an error for a malformed or oversized
    /// frame.
    fn next_event(&mut self) -> Option<Result<WatchEvent<K>, WatchDecodeError>>;
    /// At the end of the body: an error if an incomplete frame is left.
    fn finish(&self) -> Result<(), WatchDecodeError>;
}

/// JSON frames, their objects decoded without `metadata.managedFields` if asked.
struct JsonEvents {
    decoder: JsonFrameDecoder,
    omit_managed_fields: bool,
}

impl<K: DeserializeOwned + Send + 'static> EventFrames<K> for JsonEvents {
    fn push(&mut self, chunk: &[u8]) {
        self.decoder.push(chunk);
    }

    fn next_event(&mut self) -> Option<Result<WatchEvent<K>, WatchDecodeError>> {
        let frame = self.decoder.next_frame()?;
        Some(frame.and_then(|frame| {
            if self.omit_managed_fields {
                WatchEvent::<K>::from_json_without_managed_fields(&frame)
            } else {
                WatchEvent::<K>::from_json(&frame)
            }
        }))
    }

    fn finish(&self) -> Result<(), WatchDecodeError> {
        self.decoder.finish()
    }
}

/// Turns a byte stream of JSON frames into a watch stream, its objects decoded without
/// `metadata.managedFields` if `omit_managed_fields`.
pub(crate) fn decode_watch<K>(
    body: BoxStream<'static, Result<Bytes, Error>>,
    max_frame_len: usize,
    omit_managed_fields: bool,
) -> WatchStream<K, Error>
where
    K: DeserializeOwned + Send + 'static,
{
    let frames = JsonEvents {
        decoder: JsonFrameDecoder::with_max_frame_len(max_frame_len),
        omit_managed_fields,
    };
    decode_events(body, frames)
}

struct State<F> {
    body: BoxStream<'static, Result<Bytes, Error>>,
    frames: F,
    done: bool,
}

/// Turns a byte stream into a watch stream with `frames`: events as their frames complete;
/// after a decoding error, a broken body, or a body ending inside a frame, one error and the
/// end.
pub(crate) fn decode_events<K, F>(
    body: BoxStream<'static, Result<Bytes, Error>>,
    frames: F,
) -> WatchStream<K, Error>
where
    K: Send + 'static,
    F: EventFrames<K>,
{
    let state = State {
        body,
        frames,
        done: false,
    };
    stream::unfold(state, |mut state| async move {
        if state.done {
            return None;
        }
        loop {
            if let Some(event) = state.frames.next_event() {
                if event.is_err() {
                    state.done = true;
                }
                return Some((event.map_err(Error::Watch), state));
            }
            match state.body.next().await {
                Some(Ok(chunk)) => state.frames.push(&chunk),
                Some(Err(e)) => {
                    state.done = true;
                    return Some((Err(e), state));
                }
                None => {
                    state.done = true;
                    return match state.frames.finish() {
                        Ok(()) => None,
                        Err(e) => Some((Err(Error::Watch(e)), state)),
                    };
                }
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kclient_core::{DynamicObject, WatchDecodeError};

    fn chunks(parts: Vec<&'static [u8]>) -> BoxStream<'static, Result<Bytes, Error>> {
        stream::iter(parts.into_iter().map(|p| Ok(Bytes::from_static(p)))).boxed()
    }

    fn collect(
        parts: Vec<&'static [u8]>,
        limit: usize,
    ) -> Vec<Result<WatchEvent<DynamicObject>, Error>> {
        futures::executor::block_on(
            decode_watch::<DynamicObject>(chunks(parts), limit, false).collect(),
        )
    }

    const ADDED: &[u8] =
        br#"{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}}"#;

    #[test]
    fn frames_split_across_chunks() {
        let events = collect(
            vec![
                &ADDED[..10],
                &ADDED[10..],
                b"\n",
                &ADDED[..3],
                &ADDED[3..],
                b"\n",
            ],
            1024,
        );
        assert_eq!(events.len(), 2);
        assert!(events.iter().all(Result::is_ok));
    }

    #[test]
    fn truncated_stream_ends_with_an_error() {
        let events = collect(vec![ADDED, b"\n{\"type\":\"MODIFIED\",\"obj"], 1024);
        assert_eq!(events.len(), 2);
        assert!(events[0].is_ok());
        assert!(matches!(
            events[1],
            Err(Error::Watch(WatchDecodeError::Truncated { .. }))
        ));
    }

    #[test]
    fn malformed_frame_ends_the_stream() {
        let events = collect(
            vec![
                br#"{"type":"ADDED","object":{"metadata":{"name":7}}}"#,
                ADDED,
            ],
            1024,
        );
        assert_eq!(events.len(), 1, "nothing after the error");
        assert!(matches!(
            events[0],
            Err(Error::Watch(WatchDecodeError::Json { .. }))
        ));
        let events = collect(vec![b"<html>oops</html>"], 1024);
        assert!(matches!(
            events[..],
            [Err(Error::Watch(WatchDecodeError::UnexpectedByte { .. }))]
        ));
    }

    #[test]
    fn oversized_frames_are_rejected() {
        let events = collect(vec![ADDED], 16);
        assert!(matches!(
            events[..],
            [Err(Error::Watch(WatchDecodeError::FrameTooLarge {
                limit: 16
            }))]
        ));
    }

    #[test]
    fn clean_close_and_empty_streams() {
        assert!(collect(vec![], 16).is_empty());
        assert!(collect(vec![b"\n \r\n"], 16).is_empty());
        assert_eq!(collect(vec![ADDED, b"\n"], 1024).len(), 1);
    }

    #[test]
    fn body_errors_end_the_stream() {
        let body = stream::iter(vec![
            Ok(Bytes::from_static(ADDED)),
            Err(Error::Auth("connection dropped".into())),
            Ok(Bytes::from_static(ADDED)),
        ])
        .boxed();
        let events: Vec<_> =
            futures::executor::block_on(decode_watch::<DynamicObject>(body, 1024, false).collect());
        assert_eq!(events.len(), 2);
        assert!(matches!(events[1], Err(Error::Auth(_))));
    }

    #[test]
    fn default_limit_is_core_s() {
        assert_eq!(DEFAULT_MAX_WATCH_FRAME_LEN, 64 * 1024 * 1024);
    }
}
