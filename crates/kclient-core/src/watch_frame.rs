//! [`JsonFrameDecoder`]: incremental framing of a JSON watch stream.
//!
//! The API server writes one JSON object per watch event. HTTP delivers them in chunks that
//! split and join objects arbitrarily, so a client must find object boundaries itself. The
//! decoder scans each byte once (tracking nesting and string state across chunks, and
//! jumping inside a frame from one quote, brace or backslash to the next), buffers
//! only the incomplete frame, and enforces a size limit, so a stream is never buffered whole
//! and a misbehaving server cannot exhaust memory.
//!
//! ```
//! use kclient_core::JsonFrameDecoder;
//!
//! let mut decoder = JsonFrameDecoder::new();
//! decoder.push(br#"{"type":"ADDED","object":{"s":"}"}}"#);
//! decoder.push(b"\n{\"type\":\"DEL");
//! assert_eq!(decoder.next_frame().unwrap().unwrap(), br#"{"type":"ADDED","object":{"s":"}"}}"#);
//! assert!(decoder.next_frame().is_none(), "the second frame is incomplete");
//! decoder.push(b"ETED\",\"object\":{}}\n");
//! assert!(decoder.next_frame().unwrap().is_ok());
//! assert!(decoder.finish().is_ok());
//! ```

use crate::json_scan::ObjectScanner;
use crate::watch_event::WatchDecodeError;

/// Splits a byte stream into complete top-level JSON objects.
#[derive(Debug)]
pub struct JsonFrameDecoder {
    buf: Vec<u8>,
    /// Start of the unconsumed part of `buf`.
    start: usize,
    /// How far `buf` has been scanned.
    scanned: usize,
    /// Where the current frame began, if one has.
    frame_start: Option<usize>,
    /// The state of the frame being scanned.
    scanner: ObjectScanner,
    /// Stream offset of `buf[0]`, for error messages.
    offset: u64,
    max_frame_len: usize,
    failed: bool,
}

impl Default for JsonFrameDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl JsonFrameDecoder {
    /// The default limit on one frame: 64 MiB, far above the API server's own limit on an
    /// object (about 3 MiB for a request, 1.5 MiB in etcd), so only a broken stream hits it.
    pub const DEFAULT_MAX_FRAME_LEN: usize = 64 * 1024 * 1024;

    /// A decoder with the default frame limit.
    pub fn new() -> Self {
        Self::with_max_frame_len(Self::DEFAULT_MAX_FRAME_LEN)
    }

    /// A decoder that fails any frame longer than `max_frame_len` bytes.
    pub fn with_max_frame_len(max_frame_len: usize) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            frame_start: None,
            scanner: ObjectScanner::opened(),
            offset: 0,
            max_frame_len,
            failed: false,
        }
    }

    /// Appends bytes received from the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.failed {
            return;
        }
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.offset += self.start as u64;
            self.scanned -= self.start;
            self.frame_start = self.frame_start.map(|s| s - self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// How many bytes are buffered and not yet returned as a frame.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The next complete frame, `None` until more bytes are pushed, or an error once the
    /// stream is known to be broken (after which the decoder yields nothing more).
    pub fn next_frame(&mut self) -> Option<Result<Vec<u8>, WatchDecodeError>> {
        if self.failed {
            return None;
        }
        while self.scanned < self.buf.len() {
            let Some(frame_start) = self.frame_start else {
                let i = self.scanned;
                let byte = self.buf[i];
                self.scanned += 1;
                match byte {
                    b' ' | b'\t' | b'\r' | b'\n' => self.start = self.scanned,
                    b'{' => {
                        self.frame_start = Some(i);
                        self.scanner = ObjectScanner::opened();
                    }
                    _ => {
                        self.failed = true;
                        return Some(Err(WatchDecodeError::UnexpectedByte {
                            byte,
                            offset: self.offset + i as u64,
                        }));
                    }
                }
                continue;
            };
            // Inside a frame only a few bytes change the state: jump from one to the next
            // rather than stepping through every byte of the strings between them.
            self.scanned += self.scanner.step(&self.buf[self.scanned..]);
            let len = self.scanned - frame_start;
            // A frame may end one byte past the limit (its closing brace), as when every
            // byte was checked on its own; anything longer fails.
            if self.scanner.closed() && len <= self.max_frame_len.saturating_add(1) {
                let frame = self.buf[frame_start..self.scanned].to_vec();
                self.frame_start = None;
                self.start = self.scanned;
                return Some(Ok(frame));
            }
            if len > self.max_frame_len {
                self.failed = true;
                return Some(Err(WatchDecodeError::FrameTooLarge {
                    limit: self.max_frame_len,
                }));
            }
        }
        None
    }

    /// Checks that the stream ended between frames: an incomplete frame at the end means the
    /// stream was cut off.
    pub fn finish(&self) -> Result<(), WatchDecodeError> {
        match self.frame_start {
            Some(_) if !self.failed => Err(WatchDecodeError::Truncated {
                buffered: self.buffered(),
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_frames(d: &mut JsonFrameDecoder) -> Vec<Vec<u8>> {
        std::iter::from_fn(|| d.next_frame())
            .map(Result::unwrap)
            .collect()
    }

    #[test]
    fn splits_at_every_chunk_boundary() {
        let stream = b"{\"a\":{\"b\":\"}{\\\"\"}}\n{\"c\":[{},{}]}\r\n  {\"d\":\"\\\\\"}\n";
        let expected: Vec<&[u8]> = vec![
            b"{\"a\":{\"b\":\"}{\\\"\"}}",
            b"{\"c\":[{},{}]}",
            b"{\"d\":\"\\\\\"}",
        ];
        for cut in 0..stream.len() {
            for cut2 in cut..stream.len() {
                let mut d = JsonFrameDecoder::new();
                let mut frames = Vec::new();
                for part in [&stream[..cut], &stream[cut..cut2], &stream[cut2..]] {
                    d.push(part);
                    frames.extend(all_frames(&mut d));
                }
                assert_eq!(frames, expected, "cuts at {cut}, {cut2}");
                assert!(d.finish().is_ok());
                assert_eq!(d.buffered(), 0);
            }
        }
    }

    #[test]
    fn byte_by_byte_with_concatenated_objects() {
        let stream = b"{}{\"x\":1}{\"y\":{\"z\":\"\xc3\xa9\"}}";
        let mut d = JsonFrameDecoder::new();
        let mut n = 0;
        for b in stream {
            d.push(std::slice::from_ref(b));
            n += all_frames(&mut d).len();
        }
        assert_eq!(n, 3);
    }

    #[test]
    fn truncated_stream_is_reported() {
        let mut d = JsonFrameDecoder::new();
        d.push(b"{\"type\":\"ADDED\",\"object\":{\"meta");
        assert!(d.next_frame().is_none());
        let err = d.finish().unwrap_err();
        assert!(
            matches!(err, WatchDecodeError::Truncated { buffered: 31 }),
            "{err}"
        );
    }

    #[test]
    fn garbage_between_frames_is_an_error_once() {
        let mut d = JsonFrameDecoder::new();
        d.push(b"{}\n<html>");
        assert!(d.next_frame().unwrap().is_ok());
        let err = d.next_frame().unwrap().unwrap_err();
        assert!(
            matches!(
                err,
                WatchDecodeError::UnexpectedByte {
                    byte: b'<',
                    offset: 3
                }
            ),
            "{err}"
        );
        assert!(d.next_frame().is_none());
        d.push(b"{}");
        assert!(d.next_frame().is_none(), "a failed decoder stays failed");
        assert!(d.finish().is_ok());
    }

    #[test]
    fn frames_over_the_limit_fail_without_buffering_more() {
        let mut d = JsonFrameDecoder::with_max_frame_len(16);
        d.push(b"{\"k\":\"0123456789abcdef\"}");
        let err = d.next_frame().unwrap().unwrap_err();
        assert!(matches!(err, WatchDecodeError::FrameTooLarge { limit: 16 }));
        let mut d = JsonFrameDecoder::with_max_frame_len(16);
        d.push(b"{\"k\":\"01234\"}");
        assert!(
            d.next_frame().unwrap().is_ok(),
            "frames within the limit pass"
        );
    }

    #[test]
    fn the_limit_counts_every_byte_before_the_closing_brace() {
        // 17 bytes: the closing brace is the one byte past the limit that is allowed.
        let mut d = JsonFrameDecoder::with_max_frame_len(16);
        d.push(b"{\"k\":\"012345678\"}");
        assert_eq!(d.next_frame().unwrap().unwrap().len(), 17);
        // 18 bytes fail, whether they arrive at once or a byte at a time.
        for whole in [true, false] {
            let mut d = JsonFrameDecoder::with_max_frame_len(16);
            let frame = b"{\"k\":\"0123456789\"}";
            let mut result = None;
            if whole {
                d.push(frame);
                result = d.next_frame();
            } else {
                for byte in frame {
                    d.push(&[*byte]);
                    if let Some(r) = d.next_frame() {
                        result = Some(r);
                        break;
                    }
                }
            }
            let err = result.unwrap().unwrap_err();
            assert!(matches!(err, WatchDecodeError::FrameTooLarge { limit: 16 }));
        }
    }

    #[test]
    fn whitespace_only_stream_is_clean() {
        let mut d = JsonFrameDecoder::new();
        d.push(b" \n\r\n\t");
        assert!(d.next_frame().is_none());
        assert!(d.finish().is_ok());
        assert_eq!(d.buffered(), 0);
    }
}
