//! What a session runs and with which streams: [`ExecOptions`] and [`AttachOptions`]
//! (`corev1.PodExecOptions` and `PodAttachOptions`, sent as query parameters), and
//! [`StreamOptions`] (client-go's, the local ends of the streams).

use futures::Stream;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};

/// A terminal's size (client-go's `TerminalSize`), sent on the resize channel as
/// `{"Width":…,"Height":…}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TerminalSize {
    /// Columns.
    #[serde(rename = "Width")]
    pub width: u16,
    /// Rows.
    #[serde(rename = "Height")]
    pub height: u16,
}

/// Terminal sizes as the terminal changes (client-go's `TerminalSizeQueue`, whose `Next`
/// is this stream's next item; the end of the stream is its `nil`). Any
/// `Stream<Item = TerminalSize>` is one, e.g. the receiver of a channel fed by `SIGWINCH`.
pub trait TerminalSizeQueue: Stream<Item = TerminalSize> + Send + Unpin {}

impl<S: Stream<Item = TerminalSize> + Send + Unpin> TerminalSizeQueue for S {}

/// The local ends of a session's streams (client-go's `StreamOptions`): any that is set is
/// carried; with a TTY, stderr is not (the terminal merges it into stdout).
#[derive(Default)]
pub struct StreamOptions<'a> {
    /// Read and sent as the command's standard input.
    pub stdin: Option<Box<dyn AsyncRead + Send + Unpin + 'a>>,
    /// Receives the command's standard output.
    pub stdout: Option<Box<dyn AsyncWrite + Send + Unpin + 'a>>,
    /// Receives its standard error.
    pub stderr: Option<Box<dyn AsyncWrite + Send + Unpin + 'a>>,
    /// Whether the command has a terminal.
    pub tty: bool,
    /// The terminal's sizes, sent as it is resized (with `tty` only).
    pub terminal_size_queue: Option<Box<dyn TerminalSizeQueue + 'a>>,
}

impl std::fmt::Debug for StreamOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamOptions")
            .field("stdin", &self.stdin.is_some())
            .field("stdout", &self.stdout.is_some())
            .field("stderr", &self.stderr.is_some())
            .field("tty", &self.tty)
            .field("terminal_size_queue", &self.terminal_size_queue.is_some())
            .finish()
    }
}

impl<'a> StreamOptions<'a> {
    /// No streams.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets stdin.
    pub fn stdin(mut self, stdin: impl AsyncRead + Send + Unpin + 'a) -> Self {
        self.stdin = Some(Box::new(stdin));
        self
    }

    /// Sets stdout.
    pub fn stdout(mut self, stdout: impl AsyncWrite + Send + Unpin + 'a) -> Self {
        self.stdout = Some(Box::new(stdout));
        self
    }

    /// Sets stderr.
    pub fn stderr(mut self, stderr: impl AsyncWrite + Send + Unpin + 'a) -> Self {
        self.stderr = Some(Box::new(stderr));
        self
    }

    /// Asks for a terminal.
    pub fn tty(mut self, tty: bool) -> Self {
        self.tty = tty;
        self
    }

    /// Sets the terminal's sizes.
    pub fn terminal_size_queue(mut self, queue: impl TerminalSizeQueue + 'a) -> Self {
        self.terminal_size_queue = Some(Box::new(queue));
        self
    }
}

/// The streams of a session as query parameters: `true` for each one asked for, nothing for
/// the others (as client-go's parameter codec leaves out `omitempty` fields).
fn stream_params(
    pairs: &mut Vec<(String, String)>,
    stdin: bool,
    stdout: bool,
    stderr: bool,
    tty: bool,
) {
    for (name, on) in [
        ("stdin", stdin),
        ("stdout", stdout),
        ("stderr", stderr),
        ("tty", tty),
    ] {
        if on {
            pairs.push((name.into(), "true".into()));
        }
    }
}

/// What to run (`corev1.PodExecOptions`).
///
/// ```
/// use kclient_streaming::remotecommand::ExecOptions;
///
/// let options = ExecOptions::command(["sh", "-c", "date"]).container("app").stdout().stderr();
/// assert_eq!(
///     options.query_pairs(),
///     [
///         ("command", "sh".to_string()),
///         ("command", "-c".to_string()),
///         ("command", "date".to_string()),
///         ("container", "app".to_string()),
///         ("stdout", "true".to_string()),
///         ("stderr", "true".to_string()),
///     ]
///     .map(|(k, v)| (k.to_string(), v))
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOptions {
    /// The command and its arguments (not run in a shell).
    pub command: Vec<String>,
    /// The container; required when the pod has more than one.
    pub container: Option<String>,
    /// Pass stdin.
    pub stdin: bool,
    /// Return stdout.
    pub stdout: bool,
    /// Return stderr.
    pub stderr: bool,
    /// Allocate a terminal.
    pub tty: bool,
}

impl ExecOptions {
    /// Runs `command`.
    pub fn command<I, S>(command: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            command: command.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// In this container.
    pub fn container(mut self, container: impl Into<String>) -> Self {
        self.container = Some(container.into());
        self
    }

    /// With stdin.
    pub fn stdin(mut self) -> Self {
        self.stdin = true;
        self
    }

    /// With stdout.
    pub fn stdout(mut self) -> Self {
        self.stdout = true;
        self
    }

    /// With stderr.
    pub fn stderr(mut self) -> Self {
        self.stderr = true;
        self
    }

    /// With a terminal.
    pub fn tty(mut self) -> Self {
        self.tty = true;
        self
    }

    /// The query parameters.
    pub fn query_pairs(&self) -> Vec<(String, String)> {
        let mut pairs: Vec<(String, String)> = self
            .command
            .iter()
            .map(|c| ("command".to_string(), c.clone()))
            .collect();
        if let Some(c) = &self.container {
            pairs.push(("container".into(), c.clone()));
        }
        stream_params(&mut pairs, self.stdin, self.stdout, self.stderr, self.tty);
        pairs
    }
}

/// What to attach to (`corev1.PodAttachOptions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AttachOptions {
    /// The container; required when the pod has more than one.
    pub container: Option<String>,
    /// Pass stdin.
    pub stdin: bool,
    /// Return stdout.
    pub stdout: bool,
    /// Return stderr.
    pub stderr: bool,
    /// The container has a terminal.
    pub tty: bool,
}

impl AttachOptions {
    /// Attaches to `container`.
    pub fn container(mut self, container: impl Into<String>) -> Self {
        self.container = Some(container.into());
        self
    }

    /// With stdin.
    pub fn stdin(mut self) -> Self {
        self.stdin = true;
        self
    }

    /// With stdout.
    pub fn stdout(mut self) -> Self {
        self.stdout = true;
        self
    }

    /// With stderr.
    pub fn stderr(mut self) -> Self {
        self.stderr = true;
        self
    }

    /// With a terminal.
    pub fn tty(mut self) -> Self {
        self.tty = true;
        self
    }

    /// The query parameters.
    pub fn query_pairs(&self) -> Vec<(String, String)> {
        let mut pairs = Vec::new();
        if let Some(c) = &self.container {
            pairs.push(("container".into(), c.clone()));
        }
        stream_params(&mut pairs, self.stdin, self.stdout, self.stderr, self.tty);
        pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_sizes_are_client_go_s_json() {
        let size = TerminalSize {
            width: 80,
            height: 24,
        };
        assert_eq!(
            serde_json::to_string(&size).unwrap(),
            r#"{"Width":80,"Height":24}"#
        );
    }

    #[test]
    fn attach_options_are_query_parameters() {
        let options = AttachOptions::default().container("c").stdin().tty();
        assert_eq!(
            options.query_pairs(),
            [
                ("container".to_string(), "c".to_string()),
                ("stdin".to_string(), "true".to_string()),
                ("tty".to_string(), "true".to_string()),
            ]
        );
        assert!(AttachOptions::default().query_pairs().is_empty());
    }
}
