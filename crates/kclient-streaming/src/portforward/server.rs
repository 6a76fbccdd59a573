//! The server side of port-forward, as the kubelet runs it (its `httpStreamHandler`): the
//! streams a client opens are checked, answered, paired by `requestID`, and each complete
//! pair is handed to a handler that connects the data stream to the port. kclient-fake
//! serves port-forward with it.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::task::JoinSet;

use super::{
    PORT_HEADER, REQUEST_ID_HEADER, STREAM_TYPE_DATA, STREAM_TYPE_ERROR, STREAM_TYPE_HEADER,
};
use crate::spdy;

/// How long the kubelet waits for both streams of a request (its default
/// `streamCreationTimeout`).
pub const STREAM_CREATION_TIMEOUT: Duration = Duration::from_secs(30);

/// What connects a forwarded connection to a port: given the port and the data stream,
/// runs until the connection is done; an error is written to the error stream (the kubelet's
/// `error forwarding port P to pod NAME, uid UID: …`).
pub type PortHandler = Arc<
    dyn Fn(u16, spdy::Stream) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>>
        + Send
        + Sync,
>;

/// Whose ports are forwarded (for the error messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodIdentity {
    /// The pod's name.
    pub name: String,
    /// Its uid.
    pub uid: String,
}

/// A request's two streams as they arrive.
#[derive(Default)]
struct Pair {
    error: Option<spdy::Stream>,
    data: Option<spdy::Stream>,
}

/// The kubelet's header checks of a new stream (`httpStreamReceived`): the port and the
/// stream type must be there and valid.
fn check_headers(headers: &spdy::Headers) -> Result<(u16, bool), String> {
    let port = headers
        .get(PORT_HEADER)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| format!("{PORT_HEADER:?} header is required"))?;
    let port: u16 = port
        .parse()
        .map_err(|e| format!("unable to parse {port:?} as a port: {e}"))?;
    if port < 1 {
        return Err(format!("port \"{port}\" must be > 0"));
    }
    match headers.get(STREAM_TYPE_HEADER) {
        None | Some("") => Err(format!("{STREAM_TYPE_HEADER:?} header is required")),
        Some(STREAM_TYPE_ERROR) => Ok((port, true)),
        Some(STREAM_TYPE_DATA) => Ok((port, false)),
        Some(other) => Err(format!("invalid stream type {other:?}")),
    }
}

/// The request id of a stream; an old client's streams without one are paired by stream
/// id (the kubelet's best effort: the error stream's id, the data stream's id minus two).
fn request_id(stream: &spdy::Stream, is_error: bool) -> String {
    match stream
        .headers()
        .get(REQUEST_ID_HEADER)
        .filter(|r| !r.is_empty())
    {
        Some(id) => id.to_owned(),
        None if is_error => stream.id().to_string(),
        None => stream.id().saturating_sub(2).to_string(),
    }
}

/// Serves `connection` until it ends: each stream is checked (a bad one is reset), answered
/// and paired; each pair runs `handler` (several at once), the streams are closed after it,
/// a pair not complete within [`STREAM_CREATION_TIMEOUT`] gets `timed out waiting for
/// streams` on its error stream.
pub async fn serve(connection: spdy::Connection, pod: PodIdentity, handler: PortHandler) {
    let mut pairing = Pairing {
        pairs: HashMap::new(),
        running: JoinSet::new(),
        pod: Arc::new(pod),
        handler,
    };
    loop {
        let next_deadline = pairing.pairs.values().map(|(_, at)| *at).min();
        let expired = async {
            match next_deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let mut stream = tokio::select! {
            stream = connection.accept() => match stream {
                Some(s) => s,
                None => break,
            },
            _ = expired => {
                pairing.fail_expired();
                continue;
            }
            Some(_) = pairing.running.join_next(), if !pairing.running.is_empty() => continue,
        };
        let (port, is_error) = match check_headers(stream.headers()) {
            Ok(checked) => checked,
            Err(e) => {
                tracing::warn!(error = %e, "port-forward stream rejected");
                stream.reset();
                continue;
            }
        };
        if stream.reply().await.is_err() {
            break;
        }
        pairing.assign(stream, port, is_error).await;
    }
    pairing.running.shutdown().await;
}

/// The streams of a connection being paired by request, and the pairs being forwarded.
struct Pairing {
    /// The incomplete pairs by request id, each with the time it must be complete by.
    pairs: HashMap<String, (Pair, tokio::time::Instant)>,
    /// The handlers of complete pairs, and the failures of expired ones.
    running: JoinSet<()>,
    pod: Arc<PodIdentity>,
    handler: PortHandler,
}

impl Pairing {
    /// Fails the pairs not complete in time: `timed out waiting for streams`.
    fn fail_expired(&mut self) {
        let now = tokio::time::Instant::now();
        let late: Vec<String> = self
            .pairs
            .iter()
            .filter(|(_, (_, at))| *at <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in late {
            if let Some((pair, _)) = self.pairs.remove(&id) {
                tracing::warn!(request = %id, "timed out waiting for streams");
                self.running.spawn(fail_pair(
                    pair,
                    format!("(conn=kclient, request={id}) timed out waiting for streams"),
                ));
            }
        }
    }

    /// Puts an accepted stream into its request's pair (a second stream of the same type is
    /// refused: reported on the pair's error stream, and reset); a pair now complete is
    /// forwarded.
    async fn assign(&mut self, mut stream: spdy::Stream, port: u16, is_error: bool) {
        let id = request_id(&stream, is_error);
        let (pair, _) = self.pairs.entry(id.clone()).or_insert_with(|| {
            (
                Pair::default(),
                tokio::time::Instant::now() + STREAM_CREATION_TIMEOUT,
            )
        });
        let slot = if is_error {
            &mut pair.error
        } else {
            &mut pair.data
        };
        if slot.is_some() {
            let kind = if is_error { "error" } else { "data" };
            let message =
                format!("error processing stream for request {id}: {kind} stream already assigned");
            tracing::warn!(%message);
            if let Some(error) = pair.error.as_mut() {
                let _ = error.write_data(Bytes::from(message), false).await;
            }
            stream.reset();
            return;
        }
        *slot = Some(stream);
        if pair.error.is_some() && pair.data.is_some() {
            if let Some((
                Pair {
                    error: Some(error),
                    data: Some(data),
                },
                _,
            )) = self.pairs.remove(&id)
            {
                self.running.spawn(forward_pair(
                    port,
                    error,
                    data,
                    self.pod.clone(),
                    self.handler.clone(),
                ));
            }
        }
    }
}

/// Runs the handler for a complete pair; closes the error stream, then the data stream.
async fn forward_pair(
    port: u16,
    mut error: spdy::Stream,
    data: spdy::Stream,
    pod: Arc<PodIdentity>,
    handler: PortHandler,
) {
    if let Err(e) = handler(port, data).await {
        let message = format!(
            "error forwarding port {port} to pod {}, uid {}: {e}",
            pod.name, pod.uid
        );
        tracing::debug!(%message);
        let _ = error.write_data(Bytes::from(message), false).await;
    }
    let _ = error.close().await;
}

/// Writes `message` to a pair's error stream and ends its streams.
async fn fail_pair(pair: Pair, message: String) {
    if let Some(mut error) = pair.error {
        let _ = error.write_data(Bytes::from(message), true).await;
    }
    if let Some(mut data) = pair.data {
        let _ = data.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_checked_as_the_kubelet_does() {
        let headers = |pairs: &[(&str, &str)]| {
            let mut h = spdy::Headers::new();
            for (n, v) in pairs {
                h.set(n, *v);
            }
            h
        };
        assert_eq!(
            check_headers(&headers(&[("port", "80"), ("streamType", "data")])),
            Ok((80, false))
        );
        assert_eq!(
            check_headers(&headers(&[("port", "80"), ("streamType", "error")])),
            Ok((80, true))
        );
        assert_eq!(
            check_headers(&headers(&[("streamType", "data")])).unwrap_err(),
            "\"port\" header is required"
        );
        assert!(
            check_headers(&headers(&[("port", "x"), ("streamType", "data")]))
                .unwrap_err()
                .starts_with("unable to parse \"x\" as a port")
        );
        assert_eq!(
            check_headers(&headers(&[("port", "0"), ("streamType", "data")])).unwrap_err(),
            "port \"0\" must be > 0"
        );
        assert_eq!(
            check_headers(&headers(&[("port", "80")])).unwrap_err(),
            "\"streamType\" header is required"
        );
        assert_eq!(
            check_headers(&headers(&[("port", "80"), ("streamType", "stdin")])).unwrap_err(),
            "invalid stream type \"stdin\""
        );
    }
}
