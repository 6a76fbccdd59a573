//! `shutdown_on_signal`: the token fires on SIGTERM and on SIGINT, sent to this very process
//! with `kill` (a test binary of its own: signals go to the whole process). Once the
//! handlers are installed the signals no longer end the process, which is why this binary
//! survives them.
#![cfg(unix)]

use std::time::Duration;

use kclient_controller::shutdown_on_signal;

async fn send(signal: &str) {
    let status = tokio::process::Command::new("kill")
        .args([format!("-{signal}"), std::process::id().to_string()])
        .status()
        .await
        .expect("kill runs");
    assert!(status.success(), "kill -{signal}");
}

/// One test: the signals reach every handler of the process, so two tests side by side would
/// fire each other's tokens.
#[tokio::test]
async fn the_token_fires_on_sigterm_and_on_sigint_and_not_on_other_signals() {
    let token = shutdown_on_signal().expect("the handlers install");
    // SIGWINCH is ignored by default, and means nothing to the shutdown.
    send("WINCH").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!token.is_cancelled());
    for signal in ["TERM", "INT"] {
        let token = shutdown_on_signal().expect("the handlers install");
        send(signal).await;
        tokio::time::timeout(Duration::from_secs(10), token.cancelled())
            .await
            .unwrap_or_else(|_| panic!("SIG{signal} did not fire the token"));
    }
    assert!(token.is_cancelled(), "the first token saw SIGTERM too");
}
