//! SPDY/3 header blocks: the name/value pairs of `SYN_STREAM`, `SYN_REPLY` and `HEADERS`,
//! and their compression (one zlib stream per direction of a connection, primed with the
//! SPDY dictionary, each block ending in a sync flush).

use bytes::{BufMut, BytesMut};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::dictionary::header_dictionary;
use super::frame::FrameError;

/// The most a header block may inflate to ([`DEFAULT_MAX_HEADER_BLOCK_LEN`] unless the
/// decoder says otherwise): a block of a few compressed bytes can claim megabytes.
pub const DEFAULT_MAX_HEADER_BLOCK_LEN: usize = 256 * 1024;

/// The headers of a stream: lower-case names, each with one or more values, in the order
/// they were set (as `net/http`'s `Header`, names compare without regard to case).
///
/// ```
/// use kclient_streaming::spdy::Headers;
///
/// let mut headers = Headers::new();
/// headers.set("streamType", "data");
/// headers.set("port", "8080");
/// assert_eq!(headers.get("StreamType"), Some("data"));
/// assert_eq!(headers.get("requestID"), None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Headers {
    entries: Vec<(String, Vec<String>)>,
}

impl Headers {
    /// No headers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `name` to `value`, replacing its values.
    pub fn set(&mut self, name: &str, value: impl Into<String>) {
        let name = name.to_ascii_lowercase();
        let value = value.into();
        match self.entries.iter_mut().find(|(n, _)| *n == name) {
            Some((_, values)) => *values = vec![value],
            None => self.entries.push((name, vec![value])),
        }
    }

    /// Adds a value to `name`.
    pub fn add(&mut self, name: &str, value: impl Into<String>) {
        let name = name.to_ascii_lowercase();
        let value = value.into();
        match self.entries.iter_mut().find(|(n, _)| *n == name) {
            Some((_, values)) => values.push(value),
            None => self.entries.push((name, vec![value])),
        }
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .and_then(|(_, values)| values.first())
            .map(String::as_str)
    }

    /// Every name with its values.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v.as_slice()))
    }

    /// How many names.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The uncompressed block: a 32-bit count of names, then each name and its values
    /// (joined by NUL) with 32-bit lengths.
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&len32(self.entries.len()).to_be_bytes());
        for (name, values) in &self.entries {
            out.extend_from_slice(&len32(name.len()).to_be_bytes());
            out.extend_from_slice(name.as_bytes());
            let joined = values.join("\0");
            out.extend_from_slice(&len32(joined.len()).to_be_bytes());
            out.extend_from_slice(joined.as_bytes());
        }
    }

    /// Reads an uncompressed block. Names are lower-cased (a Go peer refuses others; this
    /// side is lenient), a repeated name adds its values.
    fn decode(block: &[u8]) -> Result<Self, FrameError> {
        let mut reader = BlockReader { rest: block };
        let count = reader.u32()?;
        let mut headers = Headers::new();
        for _ in 0..count {
            let name = reader.string()?;
            let value = reader.string()?;
            for v in value.split('\0') {
                headers.add(&name, v);
            }
        }
        if !reader.rest.is_empty() {
            return Err(FrameError::InvalidHeaderBlock(
                "bytes after the last header".into(),
            ));
        }
        Ok(headers)
    }
}

/// A length as the wire's 32 bits (no header of a real stream comes near 4 GiB).
fn len32(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

struct BlockReader<'a> {
    rest: &'a [u8],
}

impl BlockReader<'_> {
    fn u32(&mut self) -> Result<u32, FrameError> {
        let Some((head, rest)) = self.rest.split_first_chunk::<4>() else {
            return Err(FrameError::InvalidHeaderBlock("truncated length".into()));
        };
        self.rest = rest;
        Ok(u32::from_be_bytes(*head))
    }

    fn string(&mut self) -> Result<String, FrameError> {
        let len = self.u32()? as usize;
        if len > self.rest.len() {
            return Err(FrameError::InvalidHeaderBlock(format!(
                "a length of {len} with {} bytes left",
                self.rest.len()
            )));
        }
        let (text, rest) = self.rest.split_at(len);
        self.rest = rest;
        String::from_utf8(text.to_vec())
            .map_err(|_| FrameError::InvalidHeaderBlock("a name or value is not UTF-8".into()))
    }
}

/// The compressing side of a connection's header blocks.
pub(crate) struct HeaderCompressor {
    zlib: Compress,
}

impl HeaderCompressor {
    pub(crate) fn new() -> Self {
        let mut zlib = Compress::new(Compression::best(), true);
        // Only fails before the first byte is compressed, which this is.
        let _ = zlib.set_dictionary(header_dictionary());
        Self { zlib }
    }

    /// Appends `headers`, compressed and sync-flushed, to `out`.
    pub(crate) fn compress(
        &mut self,
        headers: &Headers,
        out: &mut BytesMut,
    ) -> Result<(), FrameError> {
        let mut block = Vec::new();
        headers.encode(&mut block);
        let mut consumed = 0;
        let mut buf = Vec::with_capacity(block.len() + 64);
        loop {
            let before = self.zlib.total_in();
            buf.clear();
            self.zlib
                .compress_vec(&block[consumed..], &mut buf, FlushCompress::Sync)
                .map_err(|e| FrameError::Compression(e.to_string()))?;
            consumed += (self.zlib.total_in() - before) as usize;
            out.put_slice(&buf);
            // Done when all input is in and the flush left room to spare.
            if consumed == block.len() && buf.len() < buf.capacity() {
                return Ok(());
            }
        }
    }
}

/// The decompressing side of a connection's header blocks.
pub(crate) struct HeaderDecompressor {
    zlib: Decompress,
    max_len: usize,
}

impl HeaderDecompressor {
    pub(crate) fn new(max_len: usize) -> Self {
        Self {
            zlib: Decompress::new(true),
            max_len,
        }
    }

    /// Inflates one block (the whole compressed payload of a frame) and parses it.
    pub(crate) fn decompress(&mut self, compressed: &[u8]) -> Result<Headers, FrameError> {
        let mut block = Vec::with_capacity(compressed.len() * 4);
        let mut consumed = 0;
        loop {
            if block.len() >= self.max_len {
                return Err(FrameError::HeaderBlockTooLarge { max: self.max_len });
            }
            let room = (self.max_len - block.len()).min(64 * 1024);
            block.reserve(room);
            let before_in = self.zlib.total_in();
            let before_out = block.len();
            let result = self.zlib.decompress_vec(
                &compressed[consumed..],
                &mut block,
                FlushDecompress::Sync,
            );
            consumed += (self.zlib.total_in() - before_in) as usize;
            match result {
                Ok(Status::StreamEnd) => {
                    return Err(FrameError::Compression(
                        "the header stream ended (a peer never ends it)".into(),
                    ))
                }
                Ok(_) => {}
                Err(e) if e.needs_dictionary().is_some() => {
                    self.zlib
                        .set_dictionary(header_dictionary())
                        .map_err(|e| FrameError::Compression(e.to_string()))?;
                    continue;
                }
                Err(e) => return Err(FrameError::Compression(e.to_string())),
            }
            let produced = block.len() - before_out;
            let took = self.zlib.total_in() - before_in;
            // Everything is in, and the flush left room to spare: the block is whole.
            if consumed == compressed.len() && block.len() < block.capacity() {
                break;
            }
            if produced == 0 && took == 0 {
                return Err(FrameError::Compression(
                    "the header block is truncated".into(),
                ));
            }
        }
        if block.len() > self.max_len {
            return Err(FrameError::HeaderBlockTooLarge { max: self.max_len });
        }
        Headers::decode(&block)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> Headers {
        let mut h = Headers::new();
        for (n, v) in pairs {
            h.add(n, *v);
        }
        h
    }

    #[test]
    fn blocks_round_trip_through_one_zlib_stream_per_direction() {
        let mut compressor = HeaderCompressor::new();
        let mut decompressor = HeaderDecompressor::new(DEFAULT_MAX_HEADER_BLOCK_LEN);
        let blocks = [
            headers(&[
                ("streamtype", "error"),
                ("port", "8080"),
                ("requestid", "0"),
            ]),
            headers(&[("streamtype", "data"), ("port", "8080"), ("requestid", "0")]),
            Headers::new(),
            headers(&[("x-multi", "a"), ("x-multi", "b")]),
        ];
        for block in &blocks {
            let mut out = BytesMut::new();
            compressor.compress(block, &mut out).unwrap();
            assert_eq!(&decompressor.decompress(&out).unwrap(), block);
        }
    }

    #[test]
    fn the_first_block_asks_for_the_dictionary() {
        let mut compressor = HeaderCompressor::new();
        let mut out = BytesMut::new();
        compressor
            .compress(&headers(&[("streamtype", "data")]), &mut out)
            .unwrap();
        // zlib header: CMF 0x78, FLG with FDICT (0x20), then the dictionary's Adler-32.
        assert_eq!(out[0], 0x78);
        assert_ne!(out[1] & 0x20, 0);
        assert_eq!(&out[2..6], &0xe3c6_a7c2u32.to_be_bytes());
    }

    #[test]
    fn a_header_bomb_is_refused() {
        let mut compressor = HeaderCompressor::new();
        let mut out = BytesMut::new();
        let big = "x".repeat(100_000);
        compressor
            .compress(&headers(&[("big", &big)]), &mut out)
            .unwrap();
        assert!(out.len() < 2_000, "compresses well: {}", out.len());
        let mut decompressor = HeaderDecompressor::new(10_000);
        assert!(matches!(
            decompressor.decompress(&out),
            Err(FrameError::HeaderBlockTooLarge { max: 10_000 })
        ));
    }

    #[test]
    fn malformed_blocks_are_errors() {
        assert!(Headers::decode(&[0, 0, 0, 1, 0, 0, 0, 9, b'a']).is_err());
        assert!(Headers::decode(&[0, 0]).is_err());
        assert!(Headers::decode(&[0, 0, 0, 0, 1]).is_err());
        let mut decompressor = HeaderDecompressor::new(1024);
        assert!(decompressor.decompress(b"not zlib at all").is_err());
    }
}
