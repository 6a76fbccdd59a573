//! Reading response bodies: whole (bounded), as frames, as a stream, as an error.

use bytes::Bytes;
use futures::stream::StreamExt;
use http_body_util::{BodyExt, BodyStream, Limited};
use hyper::body::Incoming;
use tokio::time::Instant;

use crate::compression;
use crate::error::Error;
use crate::response::{error_from_response, Response};
use crate::warnings::Warning;

use super::{ByteStream, Streaming, MAX_ERROR_BODY};

/// Reads a whole body into one buffer. A body of one chunk is kept as it is (no copy); from
/// the second chunk on, each chunk is copied into the buffer and released as it arrives. So
/// a large body is held once, not as its chunks plus their concatenation (as
/// `collect().to_bytes()` would), and chunks that are slices of larger reads (HTTP/2 DATA
/// frames cut from the connection's read buffers) do not keep those buffers alive
/// until the end: over HTTP/2 that kept ~40 MB more at the peak of a 94 MB list.
pub(super) async fn read_body(mut body: Incoming) -> Result<Bytes, hyper::Error> {
    use hyper::body::Body as _;
    let mut first: Option<Bytes> = None;
    let mut joined: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else {
            continue; // trailers
        };
        match first.take() {
            None if joined.is_empty() => first = Some(data),
            Some(head) => {
                // What the `Content-Length` says is still to come, as far as it is believable
                // before the bytes arrive (a lying header claimed exabytes: an abort).
                let hint = usize::try_from(body.size_hint().lower())
                    .unwrap_or(0)
                    .min(compression::MAX_PREALLOCATION);
                joined.reserve(head.len() + data.len() + hint);
                joined.extend_from_slice(&head);
                joined.extend_from_slice(&data);
            }
            None => joined.extend_from_slice(&data),
        }
    }
    Ok(first.unwrap_or_else(|| Bytes::from(joined)))
}

/// Reads a whole body; a gzip-compressed one is inflated as it arrives, up to
/// `max_inflated_len` bytes ([`Error::InflatedTooLarge`] past them).
pub(super) async fn read_full(
    response: http::Response<Incoming>,
    url: &str,
    warnings: Vec<Warning>,
    max_inflated_len: u64,
) -> Result<Response, Error> {
    let (mut parts, body) = response.into_parts();
    let transport = |e: Box<dyn std::error::Error + Send + Sync>| Error::Transport {
        url: url.to_owned(),
        source: e,
    };
    let body = if compression::is_gzip(&parts.headers) {
        // Inflated frame by frame as it arrives, overlapping the transfer.
        let mut inflater = compression::Inflater::new(&mut parts.headers, max_inflated_len);
        let mut failed = None;
        read_frames(body, |data| {
            inflater.push(&data).map_err(|e| {
                failed = Some(e);
                std::io::Error::other("inflating failed")
            })
        })
        .await
        .map_err(|e| match failed.take() {
            Some(failed) => failed.into_error(url),
            None => transport(e),
        })?;
        inflater.finish().map_err(|e| e.into_error(url))?
    } else {
        read_body(body).await.map_err(|e| transport(Box::new(e)))?
    };
    Ok(Response {
        status: parts.status,
        headers: parts.headers,
        body,
        warnings,
    })
}

/// Hands each data frame of `body` to `sink`, which may fail.
pub(super) async fn read_frames(
    mut body: Incoming,
    mut sink: impl FnMut(Bytes) -> Result<(), std::io::Error>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            sink(data)?;
        }
    }
    Ok(())
}

/// Reads (at most [`MAX_ERROR_BODY`] of) a failed response and turns it into an error.
pub(super) async fn read_error(
    response: http::Response<Incoming>,
    deadline: Option<Instant>,
) -> Error {
    let status = response.status();
    let mut headers = response.headers().clone();
    let url_free = Limited::new(response.into_body(), MAX_ERROR_BODY).collect();
    let collected = match deadline {
        Some(d) => tokio::time::timeout_at(d, url_free).await.ok(),
        None => Some(url_free.await),
    };
    let mut body = match collected {
        Some(Ok(c)) => c.to_bytes(),
        _ => Bytes::new(),
    };
    if compression::is_gzip(&headers) {
        body = compression::inflate(&mut headers, &body, MAX_ERROR_BODY as u64).unwrap_or_default();
    }
    error_from_response(status, &body)
}

/// The data frames of a streaming response.
pub(super) fn body_stream(s: Streaming) -> ByteStream {
    let url = s.url;
    BodyStream::new(s.response.into_body())
        .filter_map(move |frame| {
            let url = url.clone();
            async move {
                match frame {
                    Ok(frame) => frame.into_data().ok().map(Ok),
                    Err(e) => Some(Err(Error::Transport {
                        url,
                        source: Box::new(e),
                    })),
                }
            }
        })
        .boxed()
}
