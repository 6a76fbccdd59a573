//! [`shutdown_on_signal`]: a cancellation token that fires on SIGTERM (what Kubernetes
//! sends a pod it stops) or SIGINT (Ctrl-C) — controller-runtime's `SetupSignalHandler`.

use kclient_core::CancellationToken;

/// A token that fires on the first SIGTERM or SIGINT (Ctrl-C) the process receives; give
/// it to [`Manager::run`](crate::Manager::run) or [`Controller::run`](crate::Controller::run)
/// for a graceful shutdown.
///
/// The handlers are installed before this returns, so a signal that arrives any time after
/// the call is seen (from then on these signals no longer end the process by themselves:
/// the program decides when to exit). A second signal is not handled specially: the
/// shutdown's own timeouts bound how long it takes. On platforms without Unix signals, only
/// Ctrl-C is watched.
///
/// Needs a tokio runtime (the watch is a task). Errors when the handlers cannot be
/// installed.
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// let shutdown = kclient_controller::shutdown_on_signal()?;
/// shutdown.cancelled().await; // SIGTERM or Ctrl-C
/// # Ok(()) }
/// ```
pub fn shutdown_on_signal() -> std::io::Result<CancellationToken> {
    let token = CancellationToken::new();
    let fired = token.clone();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        tokio::spawn(async move {
            let name = tokio::select! {
                _ = terminate.recv() => "SIGTERM",
                _ = interrupt.recv() => "SIGINT",
            };
            tracing::info!(signal = name, "shutting down");
            fired.cancel();
        });
    }
    #[cfg(not(unix))]
    {
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                tracing::info!(signal = "Ctrl-C", "shutting down");
                fired.cancel();
            }
        });
    }
    Ok(token)
}
