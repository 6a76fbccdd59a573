//! The exec and port-forward handlers a test installs ([`Handlers`], held by the server's
//! shared state): below the streaming routes and the server, so that the state needs
//! nothing else of this module.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use super::exec::Process;
use super::port_forward::PortForwardRequest;

/// Runs the "process" of an exec or attach and returns its exit code.
pub(crate) type ExecHandler =
    Arc<dyn Fn(Process) -> Pin<Box<dyn Future<Output = i32> + Send>> + Send + Sync>;

/// Connects a forwarded connection to a port; an error goes to the client's error stream.
pub(crate) type PortForwardHandler = Arc<
    dyn Fn(
            PortForwardRequest,
            kclient_streaming::spdy::Stream,
        ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>>
        + Send
        + Sync,
>;

/// The handlers a test installed, and the end of every session when the server goes.
#[derive(Default)]
pub(crate) struct Handlers {
    pub(super) exec: Mutex<Option<ExecHandler>>,
    pub(super) port_forward: Mutex<Option<PortForwardHandler>>,
    pub(super) shutdown: CancellationToken,
}

impl std::fmt::Debug for Handlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handlers")
            .field("exec", &self.exec.lock().is_some())
            .field("port_forward", &self.port_forward.lock().is_some())
            .finish()
    }
}

impl Drop for Handlers {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Handlers {
    pub(crate) fn set_exec(&self, handler: ExecHandler) {
        *self.exec.lock() = Some(handler);
    }

    pub(crate) fn set_port_forward(&self, handler: PortForwardHandler) {
        *self.port_forward.lock() = Some(handler);
    }
}

/// What an exec or an attach asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod.
    pub pod: String,
    /// The container (the pod's only one when the request named none).
    pub container: String,
    /// The command and its arguments; empty for an attach.
    pub command: Vec<String>,
    /// Whether this is an attach (to the container's main process) rather than an exec.
    pub attach: bool,
    /// Whether the client sends stdin.
    pub stdin: bool,
    /// Whether it wants stdout.
    pub stdout: bool,
    /// Whether it wants stderr.
    pub stderr: bool,
    /// Whether the process has a terminal.
    pub tty: bool,
}
