//! SPDY/3 frames and their codec (tokio-util's `Decoder`/`Encoder`).
//!
//! A control frame starts with the control bit, the version (3) and the type; a data frame
//! with the stream id. Both continue with 8 bits of flags and a 24-bit payload length:
//!
//! ```text
//! control: |1|version(15)|type(16)|flags(8)|length(24)|payload
//! data:    |0|stream id(31)      |flags(8)|length(24)|payload
//! ```

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

use super::headers::{HeaderCompressor, HeaderDecompressor, Headers, DEFAULT_MAX_HEADER_BLOCK_LEN};

/// The protocol version this codec writes.
pub const VERSION: u16 = 3;
/// The largest payload the 24-bit length can say (16 MiB - 1), the default bound.
pub const MAX_PAYLOAD_LEN: usize = 0x00ff_ffff;

const TYPE_SYN_STREAM: u16 = 1;
const TYPE_SYN_REPLY: u16 = 2;
const TYPE_RST_STREAM: u16 = 3;
const TYPE_SETTINGS: u16 = 4;
const TYPE_PING: u16 = 6;
const TYPE_GOAWAY: u16 = 7;
const TYPE_HEADERS: u16 = 8;
const TYPE_WINDOW_UPDATE: u16 = 9;

const FLAG_FIN: u8 = 0x01;
const FLAG_UNIDIRECTIONAL: u8 = 0x02;
const STREAM_ID_MASK: u32 = 0x7fff_ffff;

/// `RST_STREAM` status codes (SPDY/3 section 2.6.3).
pub mod rst_status {
    /// A protocol error.
    pub const PROTOCOL_ERROR: u32 = 1;
    /// A frame for a stream that is not active.
    pub const INVALID_STREAM: u32 = 2;
    /// The stream was refused before any processing.
    pub const REFUSED_STREAM: u32 = 3;
    /// The stream is no longer needed (what a Go peer's `Reset` sends).
    pub const CANCEL: u32 = 5;
    /// An internal error.
    pub const INTERNAL_ERROR: u32 = 6;
    /// A frame larger than the endpoint supports.
    pub const FRAME_TOO_LARGE: u32 = 11;
}

/// A frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// Opens a stream.
    SynStream {
        /// Its id: odd from the client, even from the server.
        stream_id: u32,
        /// The stream it belongs to (0: none).
        associated_to: u32,
        /// 0 (highest) to 7.
        priority: u8,
        /// The sender sends nothing more on it.
        fin: bool,
        /// The receiver may not send on it.
        unidirectional: bool,
        /// Its headers (Kubernetes': `streamType`, `port`, `requestID`).
        headers: Headers,
    },
    /// Accepts a stream.
    SynReply {
        /// The stream.
        stream_id: u32,
        /// The sender sends nothing more on it.
        fin: bool,
        /// Headers of the reply (empty from Kubernetes' servers).
        headers: Headers,
    },
    /// Ends a stream abnormally.
    RstStream {
        /// The stream.
        stream_id: u32,
        /// Why ([`rst_status`]).
        status: u32,
    },
    /// Connection settings (read and ignored: Kubernetes' peers send none).
    Settings {
        /// How many entries it had.
        entries: u32,
    },
    /// A ping, answered with the same id by the side that did not send it.
    Ping {
        /// Odd from the client, even from the server.
        id: u32,
    },
    /// The sender accepts no more streams.
    GoAway {
        /// The last stream the sender accepted.
        last_good_stream_id: u32,
        /// 0 OK, 1 protocol error, 2 internal error.
        status: u32,
    },
    /// More headers of a stream.
    Headers {
        /// The stream.
        stream_id: u32,
        /// The sender sends nothing more on it.
        fin: bool,
        /// The headers.
        headers: Headers,
    },
    /// Flow control (read and ignored: Kubernetes' peers, on moby/spdystream, neither
    /// honour nor send it).
    WindowUpdate {
        /// The stream.
        stream_id: u32,
        /// The window's increase.
        delta: u32,
    },
    /// Bytes of a stream.
    Data {
        /// The stream.
        stream_id: u32,
        /// The sender sends nothing more on it.
        fin: bool,
        /// The bytes.
        data: Bytes,
    },
    /// A control frame of a type SPDY/3 does not define (ignored, as the specification
    /// says).
    Unknown {
        /// Its type.
        frame_type: u16,
    },
}

/// A frame that could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The connection failed.
    #[error("SPDY connection: {0}")]
    Io(#[from] std::io::Error),
    /// A payload longer than the bound.
    #[error("a SPDY frame of {len} bytes is over the limit of {max}")]
    TooLarge {
        /// The frame's payload length.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// A header block that inflates past the bound.
    #[error("a SPDY header block inflates past the limit of {max} bytes")]
    HeaderBlockTooLarge {
        /// The bound.
        max: usize,
    },
    /// A header block that is not a well-formed list of names and values.
    #[error("invalid SPDY header block: {0}")]
    InvalidHeaderBlock(String),
    /// zlib refused the header block.
    #[error("SPDY header compression: {0}")]
    Compression(String),
    /// A frame that breaks the protocol (a zero stream id, a wrong length).
    #[error("invalid SPDY {kind} frame: {reason}")]
    Invalid {
        /// The frame's type.
        kind: &'static str,
        /// What is wrong.
        reason: String,
    },
}

fn invalid(kind: &'static str, reason: impl Into<String>) -> FrameError {
    FrameError::Invalid {
        kind,
        reason: reason.into(),
    }
}

/// Reads frames, inflating header blocks with the connection's one decompressor.
pub struct FrameDecoder {
    headers: HeaderDecompressor,
    max_payload_len: usize,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new(MAX_PAYLOAD_LEN, DEFAULT_MAX_HEADER_BLOCK_LEN)
    }
}

impl std::fmt::Debug for FrameDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameDecoder")
            .field("max_payload_len", &self.max_payload_len)
            .finish_non_exhaustive()
    }
}

impl FrameDecoder {
    /// A decoder refusing payloads over `max_payload_len` and header blocks inflating past
    /// `max_header_block_len`.
    pub fn new(max_payload_len: usize, max_header_block_len: usize) -> Self {
        Self {
            headers: HeaderDecompressor::new(max_header_block_len),
            max_payload_len: max_payload_len.min(MAX_PAYLOAD_LEN),
        }
    }

    /// A control frame of `frame_type` with its flags and payload (after the frame header).
    fn control(
        &mut self,
        frame_type: u16,
        flags: u8,
        mut payload: Bytes,
    ) -> Result<Frame, FrameError> {
        let fin = flags & FLAG_FIN != 0;
        Ok(match frame_type {
            TYPE_SYN_STREAM => {
                need("SYN_STREAM", &payload, 10)?;
                let stream_id = stream_id("SYN_STREAM", payload.get_u32())?;
                let associated_to = payload.get_u32() & STREAM_ID_MASK;
                let priority = payload.get_u8() >> 5;
                let _slot = payload.get_u8();
                Frame::SynStream {
                    stream_id,
                    associated_to,
                    priority,
                    fin,
                    unidirectional: flags & FLAG_UNIDIRECTIONAL != 0,
                    headers: self.headers.decompress(&payload)?,
                }
            }
            TYPE_SYN_REPLY => {
                let (stream_id, headers) = self.stream_headers("SYN_REPLY", payload)?;
                Frame::SynReply {
                    stream_id,
                    fin,
                    headers,
                }
            }
            TYPE_HEADERS => {
                let (stream_id, headers) = self.stream_headers("HEADERS", payload)?;
                Frame::Headers {
                    stream_id,
                    fin,
                    headers,
                }
            }
            other => session_frame(other, payload)?,
        })
    }

    /// The stream id and header block of a SYN_REPLY or HEADERS frame.
    fn stream_headers(
        &mut self,
        kind: &'static str,
        mut payload: Bytes,
    ) -> Result<(u32, Headers), FrameError> {
        need(kind, &payload, 4)?;
        let stream_id = stream_id(kind, payload.get_u32())?;
        Ok((stream_id, self.headers.decompress(&payload)?))
    }
}

/// A control frame without a header block (RST_STREAM, SETTINGS, PING, GOAWAY,
/// WINDOW_UPDATE), or an unknown one.
fn session_frame(frame_type: u16, mut payload: Bytes) -> Result<Frame, FrameError> {
    Ok(match frame_type {
        TYPE_RST_STREAM => {
            need("RST_STREAM", &payload, 8)?;
            let stream_id = stream_id("RST_STREAM", payload.get_u32())?;
            let status = payload.get_u32();
            if status == 0 {
                return Err(invalid("RST_STREAM", "status zero"));
            }
            Frame::RstStream { stream_id, status }
        }
        TYPE_SETTINGS => {
            need("SETTINGS", &payload, 4)?;
            let entries = payload.get_u32();
            if u64::from(entries) * 8 != payload.len() as u64 {
                return Err(invalid("SETTINGS", "the entries do not fill the frame"));
            }
            Frame::Settings { entries }
        }
        TYPE_PING => {
            need("PING", &payload, 4)?;
            let id = payload.get_u32();
            if id == 0 {
                return Err(invalid("PING", "id zero"));
            }
            Frame::Ping { id }
        }
        TYPE_GOAWAY => {
            exactly("GOAWAY", &payload, 8)?;
            Frame::GoAway {
                last_good_stream_id: payload.get_u32() & STREAM_ID_MASK,
                status: payload.get_u32(),
            }
        }
        TYPE_WINDOW_UPDATE => {
            exactly("WINDOW_UPDATE", &payload, 8)?;
            Frame::WindowUpdate {
                stream_id: payload.get_u32() & STREAM_ID_MASK,
                delta: payload.get_u32() & STREAM_ID_MASK,
            }
        }
        other => Frame::Unknown { frame_type: other },
    })
}

/// Refuses a `kind` frame whose payload is shorter than `len`.
fn need(kind: &'static str, payload: &Bytes, len: usize) -> Result<(), FrameError> {
    if payload.len() < len {
        Err(invalid(
            kind,
            format!("{} bytes, at least {len} expected", payload.len()),
        ))
    } else {
        Ok(())
    }
}

/// Refuses a `kind` frame whose payload is not `len` bytes.
fn exactly(kind: &'static str, payload: &Bytes, len: usize) -> Result<(), FrameError> {
    if payload.len() != len {
        Err(invalid(
            kind,
            format!("{} bytes, {len} expected", payload.len()),
        ))
    } else {
        Ok(())
    }
}

/// The stream id in `word`, refused when zero.
fn stream_id(kind: &'static str, word: u32) -> Result<u32, FrameError> {
    let id = word & STREAM_ID_MASK;
    if id == 0 {
        Err(invalid(kind, "stream id zero"))
    } else {
        Ok(id)
    }
}

impl Decoder for FrameDecoder {
    type Item = Frame;
    type Error = FrameError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        if src.len() < 8 {
            return Ok(None);
        }
        let first = u32::from_be_bytes([src[0], src[1], src[2], src[3]]);
        let flags = src[4];
        let len = u32::from_be_bytes([0, src[5], src[6], src[7]]) as usize;
        if len > self.max_payload_len {
            return Err(FrameError::TooLarge {
                len,
                max: self.max_payload_len,
            });
        }
        if src.len() < 8 + len {
            src.reserve(8 + len - src.len());
            return Ok(None);
        }
        src.advance(8);
        let payload = src.split_to(len).freeze();
        if first & 0x8000_0000 != 0 {
            // The version is not checked, as Go's framer does not check it.
            let frame_type = (first & 0xffff) as u16;
            return self.control(frame_type, flags, payload).map(Some);
        }
        let stream_id = first & STREAM_ID_MASK;
        if stream_id == 0 {
            return Err(invalid("DATA", "stream id zero"));
        }
        Ok(Some(Frame::Data {
            stream_id,
            fin: flags & FLAG_FIN != 0,
            data: payload,
        }))
    }
}

/// Writes frames, compressing header blocks with the connection's one compressor.
pub struct FrameEncoder {
    headers: HeaderCompressor,
}

impl Default for FrameEncoder {
    fn default() -> Self {
        Self {
            headers: HeaderCompressor::new(),
        }
    }
}

impl std::fmt::Debug for FrameEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FrameEncoder")
    }
}

fn control_header(
    dst: &mut BytesMut,
    frame_type: u16,
    flags: u8,
    len: usize,
) -> Result<(), FrameError> {
    if len > MAX_PAYLOAD_LEN {
        return Err(FrameError::TooLarge {
            len,
            max: MAX_PAYLOAD_LEN,
        });
    }
    dst.put_u16(0x8000 | VERSION);
    dst.put_u16(frame_type);
    dst.put_u32((u32::from(flags) << 24) | len as u32);
    Ok(())
}

fn fin_flag(fin: bool) -> u8 {
    if fin {
        FLAG_FIN
    } else {
        0
    }
}

impl FrameEncoder {
    /// A control frame whose payload is `fixed` followed by a compressed header block.
    fn with_headers(
        &mut self,
        dst: &mut BytesMut,
        frame_type: u16,
        flags: u8,
        fixed: &[u8],
        headers: &Headers,
    ) -> Result<(), FrameError> {
        let mut block = BytesMut::new();
        self.headers.compress(headers, &mut block)?;
        control_header(dst, frame_type, flags, fixed.len() + block.len())?;
        dst.put_slice(fixed);
        dst.put_slice(&block);
        Ok(())
    }
}

/// A control frame of `frame_type`, without flags, whose payload is `payload`'s 32-bit words.
fn words(dst: &mut BytesMut, frame_type: u16, payload: &[u32]) -> Result<(), FrameError> {
    control_header(dst, frame_type, 0, 4 * payload.len())?;
    for word in payload {
        dst.put_u32(*word);
    }
    Ok(())
}

/// A data frame of `stream_id`, its payload `data`.
fn data_frame(
    dst: &mut BytesMut,
    stream_id: u32,
    fin: bool,
    data: &[u8],
) -> Result<(), FrameError> {
    if data.len() > MAX_PAYLOAD_LEN {
        return Err(FrameError::TooLarge {
            len: data.len(),
            max: MAX_PAYLOAD_LEN,
        });
    }
    dst.put_u32(stream_id & STREAM_ID_MASK);
    dst.put_u32((u32::from(fin_flag(fin)) << 24) | data.len() as u32);
    dst.put_slice(data);
    Ok(())
}

impl Encoder<Frame> for FrameEncoder {
    type Error = FrameError;

    fn encode(&mut self, frame: Frame, dst: &mut BytesMut) -> Result<(), FrameError> {
        match frame {
            Frame::SynStream {
                stream_id,
                associated_to,
                priority,
                fin,
                unidirectional,
                headers,
            } => {
                let mut fixed = [0u8; 10];
                fixed[..4].copy_from_slice(&(stream_id & STREAM_ID_MASK).to_be_bytes());
                fixed[4..8].copy_from_slice(&(associated_to & STREAM_ID_MASK).to_be_bytes());
                fixed[8] = (priority & 0x07) << 5;
                let flags = fin_flag(fin)
                    | if unidirectional {
                        FLAG_UNIDIRECTIONAL
                    } else {
                        0
                    };
                self.with_headers(dst, TYPE_SYN_STREAM, flags, &fixed, &headers)
            }
            Frame::SynReply {
                stream_id,
                fin,
                headers,
            } => self.with_headers(
                dst,
                TYPE_SYN_REPLY,
                fin_flag(fin),
                &(stream_id & STREAM_ID_MASK).to_be_bytes(),
                &headers,
            ),
            Frame::Headers {
                stream_id,
                fin,
                headers,
            } => self.with_headers(
                dst,
                TYPE_HEADERS,
                fin_flag(fin),
                &(stream_id & STREAM_ID_MASK).to_be_bytes(),
                &headers,
            ),
            Frame::RstStream { stream_id, status } => {
                words(dst, TYPE_RST_STREAM, &[stream_id & STREAM_ID_MASK, status])
            }
            Frame::Settings { .. } => words(dst, TYPE_SETTINGS, &[0]),
            Frame::Ping { id } => words(dst, TYPE_PING, &[id]),
            Frame::GoAway {
                last_good_stream_id,
                status,
            } => words(
                dst,
                TYPE_GOAWAY,
                &[last_good_stream_id & STREAM_ID_MASK, status],
            ),
            Frame::WindowUpdate { stream_id, delta } => words(
                dst,
                TYPE_WINDOW_UPDATE,
                &[stream_id & STREAM_ID_MASK, delta & STREAM_ID_MASK],
            ),
            Frame::Data {
                stream_id,
                fin,
                data,
            } => data_frame(dst, stream_id, fin, &data),
            Frame::Unknown { frame_type } => Err(invalid(
                "unknown",
                format!("type {frame_type} cannot be written"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(frames: Vec<Frame>) {
        let mut encoder = FrameEncoder::default();
        let mut decoder = FrameDecoder::default();
        let mut wire = BytesMut::new();
        for f in &frames {
            encoder.encode(f.clone(), &mut wire).unwrap();
        }
        // Fed one byte at a time, the decoder waits for whole frames.
        let mut got = Vec::new();
        let mut buf = BytesMut::new();
        for b in wire.iter() {
            buf.put_u8(*b);
            while let Some(f) = decoder.decode(&mut buf).unwrap() {
                got.push(f);
            }
        }
        assert_eq!(got, frames);
    }

    fn headers(pairs: &[(&str, &str)]) -> Headers {
        let mut h = Headers::new();
        for (n, v) in pairs {
            h.set(n, *v);
        }
        h
    }

    #[test]
    fn every_frame_round_trips() {
        round_trip(vec![
            Frame::SynStream {
                stream_id: 1,
                associated_to: 0,
                priority: 0,
                fin: false,
                unidirectional: false,
                headers: headers(&[("streamtype", "error"), ("port", "80"), ("requestid", "0")]),
            },
            Frame::SynReply {
                stream_id: 1,
                fin: false,
                headers: Headers::new(),
            },
            Frame::Data {
                stream_id: 1,
                fin: false,
                data: Bytes::from_static(b"hello"),
            },
            Frame::Data {
                stream_id: 1,
                fin: true,
                data: Bytes::new(),
            },
            Frame::Headers {
                stream_id: 3,
                fin: true,
                headers: headers(&[("a", "b")]),
            },
            Frame::RstStream {
                stream_id: 3,
                status: rst_status::CANCEL,
            },
            Frame::Settings { entries: 0 },
            Frame::Ping { id: 1 },
            Frame::GoAway {
                last_good_stream_id: 5,
                status: 0,
            },
            Frame::WindowUpdate {
                stream_id: 1,
                delta: 65_536,
            },
        ]);
    }

    /// The bytes of a frame, exactly as SPDY/3 lays them out.
    #[test]
    fn wire_layout() {
        let mut wire = BytesMut::new();
        let mut encoder = FrameEncoder::default();
        encoder
            .encode(
                Frame::Data {
                    stream_id: 5,
                    fin: true,
                    data: Bytes::from_static(b"ab"),
                },
                &mut wire,
            )
            .unwrap();
        assert_eq!(&wire[..], &[0, 0, 0, 5, 1, 0, 0, 2, b'a', b'b']);
        wire.clear();
        encoder.encode(Frame::Ping { id: 7 }, &mut wire).unwrap();
        assert_eq!(&wire[..], &[0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 7]);
        wire.clear();
        encoder
            .encode(
                Frame::RstStream {
                    stream_id: 3,
                    status: rst_status::CANCEL,
                },
                &mut wire,
            )
            .unwrap();
        assert_eq!(
            &wire[..],
            &[0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 3, 0, 0, 0, 5]
        );
    }

    #[test]
    fn bad_frames_are_errors() {
        let mut decoder = FrameDecoder::new(16, 1024);
        let mut data0 = BytesMut::from(&[0u8, 0, 0, 0, 0, 0, 0, 1, 9][..]);
        assert!(decoder.decode(&mut data0).is_err(), "data on stream 0");
        let mut big = BytesMut::from(&[0u8, 0, 0, 1, 0, 0, 0, 17][..]);
        assert!(matches!(
            decoder.decode(&mut big),
            Err(FrameError::TooLarge { len: 17, max: 16 })
        ));
        let mut ping0 = BytesMut::from(&[0x80u8, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 0][..]);
        assert!(decoder.decode(&mut ping0).is_err(), "ping id 0");
        let mut goaway = BytesMut::from(&[0x80u8, 3, 0, 7, 0, 0, 0, 4, 0, 0, 0, 0][..]);
        assert!(decoder.decode(&mut goaway).is_err(), "short GOAWAY");
        let mut unknown = BytesMut::from(&[0x80u8, 3, 0, 42, 0, 0, 0, 1, 0][..]);
        assert_eq!(
            decoder.decode(&mut unknown).unwrap(),
            Some(Frame::Unknown { frame_type: 42 })
        );
    }
}
