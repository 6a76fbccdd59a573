//! [`LeaderToken`]: what the leader's work is given, to stop when leadership ends and to
//! check, right before acting, that it still leads.

use std::fmt;
use std::sync::Arc;

use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

use super::state::ElectionState;

/// The *leader token*: what [`on_started_leading`](super::LeaderCallbacks::on_started_leading)
/// gives the leader's work (client-go passes a `context.Context`).
///
/// It does two things:
///
/// * It *fires* ([`cancelled`](Self::cancelled)) when this candidate must stop acting as
///   leader, so that the work can stop and return.
/// * [`is_leader`](Self::is_leader) says, at the moment it is asked, whether this candidate
///   may still act as leader. It reads tokio's monotonic clock itself, so it turns false
///   once the renew deadline has passed since the last successful renewal even when the
///   elector's task has not run since: after the whole process was frozen (a GC or VM pause,
///   `SIGSTOP`), the work may run before the elector notices and fires the token. Check it
///   right before each write that only the leader may make.
///
/// Neither is fencing: a pause between the check and the write still lets a stale leader
/// write (see the [module documentation](super)).
///
/// ```
/// use std::time::Duration;
/// use kclient_tools::leaderelection::LeaderCallbacks;
///
/// let callbacks = LeaderCallbacks::new().on_started_leading(|token| async move {
///     let mut ticks = tokio::time::interval(Duration::from_secs(1));
///     loop {
///         tokio::select! {
///             () = token.cancelled() => return,
///             _ = ticks.tick() => {}
///         }
///         // Right before a write that only the leader may make:
///         if !token.is_leader() {
///             return; // the lease may be someone else's by now
///         }
///         // ... write ...
///     }
/// });
/// # let _ = callbacks;
/// ```
#[derive(Clone)]
pub struct LeaderToken {
    cancel: CancellationToken,
    election: Arc<ElectionState>,
}

impl LeaderToken {
    pub(crate) fn new(cancel: CancellationToken, election: Arc<ElectionState>) -> Self {
        Self { cancel, election }
    }

    /// Whether this candidate may act as leader *now* (client-go's `IsLeader`, judged by the
    /// clock): the token has not fired and less than the renew deadline has passed since
    /// the start of the last successful renewal (or of the acquisition), on tokio's
    /// monotonic clock. False for good once it is false: a later leadership gets a new
    /// token.
    pub fn is_leader(&self) -> bool {
        !self.cancel.is_cancelled() && self.election.leads_at(Instant::now())
    }

    /// Resolves when the token fires: when a renewal has not succeeded within the renew
    /// deadline, another holder is seen, [`run`](super::LeaderElector::run)'s token fires,
    /// or `run` is dropped.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }

    /// Whether the token has fired. The elector fires it when it runs; between the deadline
    /// and that moment, only [`is_leader`](Self::is_leader) knows.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The cancellation token that fires with this one, for APIs that take a
    /// [`CancellationToken`] (an informer factory's `start`, say).
    pub fn cancellation_token(&self) -> &CancellationToken {
        &self.cancel
    }
}

impl fmt::Debug for LeaderToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderToken")
            .field("is_cancelled", &self.is_cancelled())
            .field("is_leader", &self.is_leader())
            .finish()
    }
}
