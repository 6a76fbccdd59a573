//! gzip-compressed responses. Go's HTTP transport, under client-go, asks every request for
//! `Accept-Encoding: gzip` unless `DisableCompression` is set, and kube-apiserver compresses
//! answers of 128 KiB and more (its `APIResponseCompression` feature, on by default): a list of
//! 10k Pods travels as ~1 MB instead of ~25 MB. kclient asks the same for requests whose body
//! it reads whole (not streams or watches, which the server does not compress) and inflates
//! the answer before anything else reads it.

use std::io::{Read as _, Write as _};

use bytes::Bytes;
use http::header::{CONTENT_ENCODING, CONTENT_LENGTH};
use http::HeaderMap;

/// The `Accept-Encoding` of requests whose body is read whole.
pub(crate) const ACCEPT_ENCODING: &str = "gzip";

/// Whether the response body is gzip-compressed.
pub(crate) fn is_gzip(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("gzip"))
}

/// Inflates a gzip body (at most `limit` bytes of it) and drops the headers that described
/// the compressed one.
pub(crate) fn inflate(
    headers: &mut HeaderMap,
    body: &[u8],
    limit: u64,
) -> Result<Bytes, std::io::Error> {
    let mut out = Vec::with_capacity(body.len().saturating_mul(4));
    flate2::read::GzDecoder::new(body)
        .take(limit)
        .read_to_end(&mut out)?;
    headers.remove(CONTENT_ENCODING);
    headers.remove(CONTENT_LENGTH);
    Ok(Bytes::from(out))
}

/// Inflates a gzip body frame by frame as it arrives (the transfer and the inflating overlap).
pub(crate) struct Inflater {
    decoder: flate2::write::GzDecoder<Vec<u8>>,
}

impl Inflater {
    /// An inflater for a response whose `headers` say gzip; drops the headers that described
    /// the compressed body.
    pub(crate) fn new(headers: &mut HeaderMap) -> Self {
        let size = headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
            .unwrap_or(0);
        Self::with_capacity(headers, size.saturating_mul(8))
    }

    /// An inflater whose output is taken as it comes ([`take`](Self::take)), not kept whole.
    pub(crate) fn incremental(headers: &mut HeaderMap) -> Self {
        Self::with_capacity(headers, 0)
    }

    fn with_capacity(headers: &mut HeaderMap, capacity: usize) -> Self {
        headers.remove(CONTENT_ENCODING);
        headers.remove(CONTENT_LENGTH);
        Self {
            decoder: flate2::write::GzDecoder::new(Vec::with_capacity(capacity)),
        }
    }

    /// Inflates the next piece of the body.
    pub(crate) fn push(&mut self, data: &[u8]) -> Result<(), std::io::Error> {
        self.decoder.write_all(data)
    }

    /// What was inflated since the last `take`.
    pub(crate) fn take(&mut self) -> Vec<u8> {
        std::mem::take(self.decoder.get_mut())
    }

    /// The whole inflated body; an error if the stream was cut short.
    pub(crate) fn finish(self) -> Result<Bytes, std::io::Error> {
        Ok(Bytes::from(self.decoder.finish()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn gzip_bodies_are_inflated_and_bounded() {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_ENCODING, "gzip".parse().unwrap());
        headers.insert(CONTENT_LENGTH, "10".parse().unwrap());
        assert!(is_gzip(&headers));
        let body = gzip(b"hello, world");
        assert_eq!(
            &inflate(&mut headers, &body, 1 << 20).unwrap()[..],
            b"hello, world"
        );
        assert!(headers.is_empty());
        assert_eq!(
            &inflate(&mut HeaderMap::new(), &body, 5).unwrap()[..],
            b"hello"
        );
        assert!(inflate(&mut HeaderMap::new(), b"not gzip", 100).is_err());
        assert!(!is_gzip(&HeaderMap::new()));
    }

    #[test]
    fn an_inflater_takes_any_split_and_refuses_a_cut_stream() {
        let body = gzip(&b"0123456789".repeat(1000));
        for split in [1, 7, body.len()] {
            let mut inflater = Inflater::new(&mut HeaderMap::new());
            for piece in body.chunks(split) {
                inflater.push(piece).unwrap();
            }
            assert_eq!(inflater.finish().unwrap(), b"0123456789".repeat(1000));
        }
        let mut cut = Inflater::new(&mut HeaderMap::new());
        cut.push(&body[..body.len() / 2]).unwrap();
        assert!(cut.finish().is_err());
    }
}
