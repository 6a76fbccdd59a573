//! [`ExecError`]: why an exec credential plugin gave no credential.

use std::time::Duration;

/// Why an exec credential plugin gave no credentials.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// The command does not exist.
    #[error("exec: executable {command} not found{}", hint_suffix(.hint))]
    NotFound {
        /// The command.
        command: String,
        /// The kubeconfig's install hint (shown at most ten times an hour).
        hint: Option<String>,
    },
    /// The command could not be started.
    #[error("exec: cannot run {command}: {source}")]
    Spawn {
        /// The command.
        command: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The command exited with a failure.
    #[error("exec: executable {command} failed with exit code {}", .code.map_or_else(|| "(killed by a signal)".to_owned(), |c| c.to_string()))]
    Failed {
        /// The command.
        command: String,
        /// Its exit code, if it exited.
        code: Option<i32>,
    },
    /// The command ran longer than the configured timeout and was killed.
    #[error("exec: executable {command} did not finish within {timeout:?} and was killed")]
    TimedOut {
        /// The command.
        command: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The command's output is not an `ExecCredential`. The error says where decoding
    /// failed, never what the output says: a plugin's output holds credentials (a token in
    /// truncated JSON would otherwise end up in logs).
    #[error("exec: the output of {command} is not an ExecCredential: {what} at line {line}, column {column} ({bytes} bytes; not shown, it may hold credentials)")]
    Decode {
        /// The command.
        command: String,
        /// What kind of error: `invalid JSON`, `unexpected end of output`, `wrong shape`.
        what: &'static str,
        /// Where, in the output.
        line: usize,
        /// Where, in the output.
        column: usize,
        /// How long the output was.
        bytes: usize,
    },
    /// The output is an `ExecCredential` that cannot be used.
    #[error("exec: {command}: {reason}")]
    Invalid {
        /// The command.
        command: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The plugin's interactive mode cannot be honoured.
    #[error("exec plugin cannot support interactive mode: {0}")]
    Interactive(String),
    /// The plugin configuration is unusable.
    #[error("exec plugin configuration: {0}")]
    Config(String),
}

fn hint_suffix(hint: &Option<String>) -> String {
    hint.as_ref()
        .map(|h| format!("\n\n{h}"))
        .unwrap_or_default()
}
