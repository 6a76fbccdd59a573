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

use crate::error::Error;

/// The `Accept-Encoding` of requests whose body is read whole.
pub(crate) const ACCEPT_ENCODING: &str = "gzip";

/// Whether the response body is gzip-compressed.
pub(crate) fn is_gzip(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("gzip"))
}

/// The most bytes a gzip-compressed answer read whole may inflate to unless the request says
/// otherwise ([`Request::max_inflated_len`](crate::Request::max_inflated_len); a list read as it
/// arrives has no such bound by default): 1 GiB, 40 times a list of 10k Pods in protobuf. A decompression bomb (a few megabytes that inflate to gigabytes) fails
/// there with [`Error::InflatedTooLarge`](crate::Error::InflatedTooLarge) instead of taking the
/// memory; an uncompressed answer is not bounded (it costs the server what it costs the client).
pub const DEFAULT_MAX_INFLATED_LEN: u64 = 1 << 30;

/// The most set aside for a body before its bytes arrive, whatever its `Content-Length` claims
/// (a larger body grows as it arrives): a lying header must not make the client allocate.
pub(crate) const MAX_PREALLOCATION: usize = 64 << 20;

/// How much a list read as it arrives inflates at a time before the reader takes it
/// ([`Inflater::inflate`]): the memory one compressed chunk can claim at once (a 16 KiB frame
/// of a bomb inflates to 16 MiB; of a list, to some 400 KiB).
pub(crate) const INFLATE_STEP: usize = 1 << 20;

/// Why inflating failed.
#[derive(Debug)]
pub(crate) enum InflateError {
    /// The body inflated past the limit (in bytes).
    TooLarge(u64),
    /// Not gzip, corrupt, cut short, or followed by other bytes.
    Corrupt(std::io::Error),
}

impl InflateError {
    /// The request's error: [`Error::InflatedTooLarge`] or a broken body
    /// ([`Error::Transport`]).
    pub(crate) fn into_error(self, url: &str) -> Error {
        match self {
            InflateError::TooLarge(limit) => Error::InflatedTooLarge {
                url: url.to_owned(),
                limit,
            },
            InflateError::Corrupt(e) => Error::Transport {
                url: url.to_owned(),
                source: Box::new(e),
            },
        }
    }
}

/// Inflates a gzip body (at most `limit` bytes of it) and drops the headers that described
/// the compressed one.
pub(crate) fn inflate(
    headers: &mut HeaderMap,
    body: &[u8],
    limit: u64,
) -> Result<Bytes, std::io::Error> {
    let mut out = Vec::with_capacity(body.len().saturating_mul(4).min(MAX_PREALLOCATION));
    flate2::read::GzDecoder::new(body)
        .take(limit)
        .read_to_end(&mut out)?;
    headers.remove(CONTENT_ENCODING);
    headers.remove(CONTENT_LENGTH);
    Ok(Bytes::from(out))
}

/// Inflates a gzip body frame by frame as it arrives (the transfer and the inflating overlap),
/// up to a limit: past it, [`InflateError::TooLarge`], having held at most the limit and one
/// step of the decompressor (32 KiB) more.
pub(crate) struct Inflater {
    decoder: flate2::write::GzDecoder<Vec<u8>>,
    /// The most bytes the body may inflate to.
    limit: u64,
    /// The bytes inflated and taken already ([`take`](Self::take)).
    taken: u64,
}

impl Inflater {
    /// An inflater for a response whose `headers` say gzip; drops the headers that described
    /// the compressed body.
    pub(crate) fn new(headers: &mut HeaderMap, limit: u64) -> Self {
        let size = headers
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
            .unwrap_or(0);
        let capacity = size
            .saturating_mul(8)
            .min(usize::try_from(limit).unwrap_or(usize::MAX))
            .min(MAX_PREALLOCATION);
        Self::with_capacity(headers, capacity, limit)
    }

    /// An inflater whose output is taken as it comes ([`take`](Self::take)), not kept whole.
    pub(crate) fn incremental(headers: &mut HeaderMap, limit: u64) -> Self {
        Self::with_capacity(headers, 0, limit)
    }

    fn with_capacity(headers: &mut HeaderMap, capacity: usize, limit: u64) -> Self {
        headers.remove(CONTENT_ENCODING);
        headers.remove(CONTENT_LENGTH);
        Self {
            decoder: flate2::write::GzDecoder::new(Vec::with_capacity(capacity)),
            limit,
            taken: 0,
        }
    }

    /// Inflates the whole of the next piece of the body.
    pub(crate) fn push(&mut self, data: &[u8]) -> Result<(), InflateError> {
        self.inflate(data, usize::MAX).map(|_| ())
    }

    /// Inflates the start of `data` until `step` bytes or more are waiting to be taken, or
    /// `data` is used up; returns how many bytes of `data` it used. Each write into the
    /// decompressor inflates at most 32 KiB, so what waits stays within `step` and 32 KiB.
    pub(crate) fn inflate(&mut self, data: &[u8], step: usize) -> Result<usize, InflateError> {
        let mut used = 0;
        while used < data.len() && self.decoder.get_ref().len() < step {
            let n = self
                .decoder
                .write(&data[used..])
                .map_err(InflateError::Corrupt)?;
            if n == 0 {
                // The gzip stream has ended (its trailer read): bytes after it are not gzip.
                return Err(InflateError::Corrupt(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "bytes after the end of the gzip stream",
                )));
            }
            used += n;
            self.check_limit()?;
        }
        Ok(used)
    }

    fn check_limit(&self) -> Result<(), InflateError> {
        if self.taken + self.decoder.get_ref().len() as u64 > self.limit {
            return Err(InflateError::TooLarge(self.limit));
        }
        Ok(())
    }

    /// What was inflated since the last `take`.
    pub(crate) fn take(&mut self) -> Vec<u8> {
        let out = std::mem::take(self.decoder.get_mut());
        self.taken += out.len() as u64;
        out
    }

    /// The whole inflated body (what was not taken); an error if the stream was cut short,
    /// corrupt, or inflated past the limit.
    pub(crate) fn finish(mut self) -> Result<Bytes, InflateError> {
        self.decoder.try_finish().map_err(InflateError::Corrupt)?;
        self.check_limit()?;
        Ok(Bytes::from(std::mem::take(self.decoder.get_mut())))
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
            let mut inflater = Inflater::new(&mut HeaderMap::new(), 1 << 20);
            for piece in body.chunks(split) {
                inflater.push(piece).unwrap();
            }
            assert_eq!(inflater.finish().unwrap(), b"0123456789".repeat(1000));
        }
        let mut cut = Inflater::new(&mut HeaderMap::new(), 1 << 20);
        cut.push(&body[..body.len() / 2]).unwrap();
        assert!(matches!(cut.finish(), Err(InflateError::Corrupt(_))));
    }

    #[test]
    fn a_bomb_stops_at_the_limit_holding_no_more() {
        // 64 MiB of zeros in some 64 KiB: inflating stops within a step of the limit.
        let bomb = gzip(&vec![0; 64 << 20]);
        let limit = 1 << 20;
        let mut inflater = Inflater::new(&mut HeaderMap::new(), limit);
        let error = inflater.push(&bomb).expect_err("past the limit");
        assert!(matches!(error, InflateError::TooLarge(l) if l == limit));
        let held = inflater.decoder.get_ref().len();
        assert!(held as u64 <= limit + 32 * 1024, "{held}");
        // Taken as it comes: each step holds at most a step and 32 KiB, and the total is
        // bounded all the same.
        let mut inflater = Inflater::incremental(&mut HeaderMap::new(), 4 << 20);
        let (mut rest, mut taken) = (&bomb[..], 0u64);
        let error = loop {
            match inflater.inflate(rest, 64 * 1024) {
                Ok(used) => {
                    rest = &rest[used..];
                    let out = inflater.take();
                    assert!(out.len() <= 64 * 1024 + 32 * 1024, "{}", out.len());
                    taken += out.len() as u64;
                }
                Err(e) => break e,
            }
        };
        assert!(matches!(error, InflateError::TooLarge(l) if l == 4 << 20));
        assert!(taken <= 4 << 20, "{taken}");
    }

    #[test]
    fn trailing_garbage_and_corruption_are_errors() {
        let body = gzip(b"hello, world");
        let mut trailing = body.clone();
        trailing.extend_from_slice(b"garbage");
        let mut inflater = Inflater::new(&mut HeaderMap::new(), 1 << 20);
        let error = inflater
            .push(&trailing)
            .expect_err("bytes after the stream");
        assert!(
            matches!(&error, InflateError::Corrupt(e) if e.to_string() == "bytes after the end of the gzip stream"),
            "{error:?}"
        );
        // A second gzip member (which Go's reader would read) is refused the same way:
        // kube-apiserver writes one.
        let mut two = body.clone();
        two.extend_from_slice(&body);
        let mut inflater = Inflater::new(&mut HeaderMap::new(), 1 << 20);
        assert!(matches!(inflater.push(&two), Err(InflateError::Corrupt(_))));
        // A flipped byte in the deflate data, or in the CRC.
        let mut flipped = gzip(&b"0123456789".repeat(1000));
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0xff;
        let mut inflater = Inflater::new(&mut HeaderMap::new(), 1 << 20);
        let result = inflater
            .push(&flipped)
            .and_then(|()| inflater.finish().map(drop));
        assert!(
            matches!(result, Err(InflateError::Corrupt(_))),
            "{result:?}"
        );
        let mut bad_crc = body.clone();
        let at = bad_crc.len() - 8;
        bad_crc[at] ^= 0xff;
        let mut inflater = Inflater::new(&mut HeaderMap::new(), 1 << 20);
        inflater.push(&bad_crc).unwrap();
        assert!(matches!(inflater.finish(), Err(InflateError::Corrupt(_))));
    }

    #[test]
    fn a_lying_content_length_sets_nothing_aside() {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_LENGTH, "4611686018427387904".parse().unwrap());
        let inflater = Inflater::new(&mut headers, u64::MAX);
        assert!(inflater.decoder.get_ref().capacity() <= MAX_PREALLOCATION);
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_LENGTH, "1000".parse().unwrap());
        let inflater = Inflater::new(&mut headers, 100);
        assert!(inflater.decoder.get_ref().capacity() <= 100);
    }
}
