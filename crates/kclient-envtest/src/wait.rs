//! Waiting for a server to become ready: its probe polled until it answers, within a bound,
//! failing early — with the end of its log — when a server exits.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

use crate::process::Server;
use crate::Error;

/// Between two probes.
const POLL_INTERVAL: Duration = Duration::from_millis(100);
/// How many lines of a log an error shows.
const LOG_LINES: usize = 30;

/// Polls `probe` until it succeeds or `timeout` passes (a probe that hangs included). The
/// last of `servers` is the one waited for; all of them must keep running.
pub(crate) async fn until_ready<F, Fut>(
    component: &str,
    timeout: Duration,
    servers: &mut [Server],
    mut probe: F,
) -> Result<(), Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), String>>,
{
    let started = Instant::now();
    let deadline = started + timeout;
    let mut last_probe = String::from("none finished");
    loop {
        match tokio::time::timeout_at(deadline, probe()).await {
            Ok(Ok(())) => {
                tracing::info!(
                    "{component}: ready after {:.1}s",
                    started.elapsed().as_secs_f64()
                );
                return Ok(());
            }
            Ok(Err(e)) => last_probe = e,
            Err(_) => {}
        }
        if let Some(dead) = servers
            .iter_mut()
            .find_map(|s| (!s.is_alive()).then_some(s))
        {
            return Err(Error::Exited {
                component: dead.record.name.clone(),
                log: dead.record.log.clone(),
                log_tail: dead.record.log_tail(LOG_LINES),
            });
        }
        let now = Instant::now();
        if now >= deadline {
            let (log, log_tail) = servers
                .last()
                .map(|s| (s.record.log.clone(), s.record.log_tail(LOG_LINES)))
                .unwrap_or_default();
            return Err(Error::NotReady {
                component: component.to_owned(),
                timeout,
                last_probe,
                log,
                log_tail,
            });
        }
        tokio::time::sleep(POLL_INTERVAL.min(deadline - now)).await;
    }
}
