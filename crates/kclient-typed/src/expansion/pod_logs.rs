//! Pod logs: `GET .../pods/{name}/log`, whole or as a stream of bytes or lines.

use bytes::{Bytes, BytesMut};
use futures::stream::{self, BoxStream, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kclient_rest::Method;

use crate::client::ResourceClient;
use crate::error::Error;

/// A stream of log bytes, as the kubelet sends them.
pub type LogStream = BoxStream<'static, Result<Bytes, Error>>;

/// A stream of log lines, without their line endings.
pub type LogLines = BoxStream<'static, Result<String, Error>>;

/// Which of the container's output streams to read (`stream`, Kubernetes 1.32+ with the
/// `PodLogsQuerySplitStreams` feature).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogStreamKind {
    /// Standard output only.
    Stdout,
    /// Standard error only.
    Stderr,
    /// Both, interleaved (the default).
    All,
}

impl LogStreamKind {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            LogStreamKind::Stdout => "Stdout",
            LogStreamKind::Stderr => "Stderr",
            LogStreamKind::All => "All",
        }
    }
}

/// The options of a log request (`corev1.PodLogOptions`), sent as query parameters.
///
/// ```
/// use kclient_typed::LogOptions;
///
/// let opts = LogOptions::default().container("app").follow().tail_lines(10).timestamps();
/// assert_eq!(
///     opts.query_pairs(),
///     [
///         ("container", "app".to_string()),
///         ("follow", "true".to_string()),
///         ("timestamps", "true".to_string()),
///         ("tailLines", "10".to_string()),
///     ]
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// The container; required when the pod has more than one.
    pub container: Option<String>,
    /// Keep the stream open and follow new output.
    pub follow: bool,
    /// The previous, terminated instance of the container.
    pub previous: bool,
    /// Only output from the last this many seconds.
    pub since_seconds: Option<i64>,
    /// Only output after this RFC 3339 time.
    pub since_time: Option<String>,
    /// Prefix every line with its RFC 3339 timestamp.
    pub timestamps: bool,
    /// Only the last this many lines.
    pub tail_lines: Option<i64>,
    /// Stop after this many bytes.
    pub limit_bytes: Option<i64>,
    /// Skip verifying the kubelet's serving certificate.
    pub insecure_skip_tls_verify_backend: bool,
    /// Which output stream to read.
    pub stream: Option<LogStreamKind>,
}

impl LogOptions {
    /// Sets the container.
    pub fn container(mut self, container: impl Into<String>) -> Self {
        self.container = Some(container.into());
        self
    }

    /// Follows the log.
    pub fn follow(mut self) -> Self {
        self.follow = true;
        self
    }

    /// Reads the previous instance's log.
    pub fn previous(mut self) -> Self {
        self.previous = true;
        self
    }

    /// Only the last `seconds` seconds.
    pub fn since_seconds(mut self, seconds: i64) -> Self {
        self.since_seconds = Some(seconds);
        self
    }

    /// Only output after `time` (RFC 3339).
    pub fn since_time(mut self, time: impl Into<String>) -> Self {
        self.since_time = Some(time.into());
        self
    }

    /// Prefixes lines with timestamps.
    pub fn timestamps(mut self) -> Self {
        self.timestamps = true;
        self
    }

    /// Only the last `lines` lines.
    pub fn tail_lines(mut self, lines: i64) -> Self {
        self.tail_lines = Some(lines);
        self
    }

    /// At most `bytes` bytes.
    pub fn limit_bytes(mut self, bytes: i64) -> Self {
        self.limit_bytes = Some(bytes);
        self
    }

    /// Only this output stream.
    pub fn stream(mut self, stream: LogStreamKind) -> Self {
        self.stream = Some(stream);
        self
    }

    /// The query parameters, in `PodLogOptions` field order; unset and false values are
    /// omitted.
    pub fn query_pairs(&self) -> Vec<(&'static str, String)> {
        let mut pairs = Vec::new();
        if let Some(c) = self.container.as_deref().filter(|c| !c.is_empty()) {
            pairs.push(("container", c.to_owned()));
        }
        let flags = [("follow", self.follow), ("previous", self.previous)];
        pairs.extend(
            flags
                .iter()
                .filter(|(_, on)| *on)
                .map(|(k, _)| (*k, "true".to_owned())),
        );
        if let Some(s) = self.since_seconds {
            pairs.push(("sinceSeconds", s.to_string()));
        }
        if let Some(t) = self.since_time.as_deref().filter(|t| !t.is_empty()) {
            pairs.push(("sinceTime", t.to_owned()));
        }
        if self.timestamps {
            pairs.push(("timestamps", "true".to_owned()));
        }
        if let Some(n) = self.tail_lines {
            pairs.push(("tailLines", n.to_string()));
        }
        if let Some(n) = self.limit_bytes {
            pairs.push(("limitBytes", n.to_string()));
        }
        if self.insecure_skip_tls_verify_backend {
            pairs.push(("insecureSkipTLSVerifyBackend", "true".to_owned()));
        }
        if let Some(s) = self.stream {
            pairs.push(("stream", s.as_str().to_owned()));
        }
        pairs
    }
}

impl ResourceClient<Pod> {
    fn log_request(
        &self,
        name: &str,
        options: &LogOptions,
    ) -> Result<kclient_rest::Request, Error> {
        Ok(self
            .object_request("logs", Method::GET, name)?
            .subresource("log")
            .params(options.query_pairs()))
    }

    /// The pod's log as text (client-go's `GetLogs(name, opts).Do()`), decoded lossily as
    /// UTF-8. With `follow`, this waits until the container ends; use
    /// [`log_stream`](Self::log_stream) or [`log_lines`](Self::log_lines) to follow.
    pub async fn logs(&self, name: &str, options: &LogOptions) -> Result<String, Error> {
        let bytes = self.log_request(name, options)?.bytes().await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The pod's log as a stream of byte chunks (client-go's `GetLogs(name, opts).Stream()`).
    pub async fn log_stream(&self, name: &str, options: &LogOptions) -> Result<LogStream, Error> {
        let stream = self.log_request(name, options)?.stream().await?;
        Ok(stream.map(|chunk| chunk.map_err(Error::from)).boxed())
    }

    /// The pod's log as a stream of lines (without `\n` or `\r\n`), decoded lossily as
    /// UTF-8. A last line without a newline is yielded when the stream ends.
    pub async fn log_lines(&self, name: &str, options: &LogOptions) -> Result<LogLines, Error> {
        let chunks = self.log_stream(name, options).await?;
        Ok(lines(chunks))
    }
}

/// Splits a byte stream into lines.
fn lines(chunks: LogStream) -> LogLines {
    struct State {
        chunks: Option<LogStream>,
        buffer: BytesMut,
    }
    let state = State {
        chunks: Some(chunks),
        buffer: BytesMut::new(),
    };
    stream::unfold(state, |mut state| async move {
        loop {
            if let Some(end) = state.buffer.iter().position(|b| *b == b'\n') {
                let mut line = state.buffer.split_to(end + 1);
                line.truncate(end);
                if line.last() == Some(&b'\r') {
                    line.truncate(end - 1);
                }
                return Some((Ok(String::from_utf8_lossy(&line).into_owned()), state));
            }
            let Some(chunks) = state.chunks.as_mut() else {
                if state.buffer.is_empty() {
                    return None;
                }
                let rest = state.buffer.split();
                return Some((Ok(String::from_utf8_lossy(&rest).into_owned()), state));
            };
            match chunks.next().await {
                Some(Ok(chunk)) => state.buffer.extend_from_slice(&chunk),
                Some(Err(e)) => {
                    state.chunks = None;
                    state.buffer.clear();
                    return Some((Err(e), state));
                }
                None => state.chunks = None,
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;

    fn chunks(parts: &[&'static str]) -> LogStream {
        let parts: Vec<Result<Bytes, Error>> = parts
            .iter()
            .map(|p| Ok(Bytes::from_static(p.as_bytes())))
            .collect();
        stream::iter(parts).boxed()
    }

    #[tokio::test]
    async fn lines_are_split_across_chunks() {
        let got: Vec<String> = lines(chunks(&["a\nb", "c\r\n", "", "\nlast"]))
            .try_collect()
            .await
            .unwrap();
        assert_eq!(got, ["a", "bc", "", "last"]);
        let none: Vec<String> = lines(chunks(&[])).try_collect().await.unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn every_option_has_its_wire_name() {
        let opts = LogOptions {
            container: Some("c".into()),
            follow: true,
            previous: true,
            since_seconds: Some(5),
            since_time: Some("2025-01-01T00:00:00Z".into()),
            timestamps: true,
            tail_lines: Some(3),
            limit_bytes: Some(100),
            insecure_skip_tls_verify_backend: true,
            stream: Some(LogStreamKind::Stderr),
        };
        let names: Vec<&str> = opts.query_pairs().iter().map(|(k, _)| *k).collect();
        assert_eq!(
            names,
            [
                "container",
                "follow",
                "previous",
                "sinceSeconds",
                "sinceTime",
                "timestamps",
                "tailLines",
                "limitBytes",
                "insecureSkipTLSVerifyBackend",
                "stream"
            ]
        );
        assert!(LogOptions::default().query_pairs().is_empty());
    }
}
