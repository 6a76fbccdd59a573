//! The manager under leader election: the elector behind a trait, where a replica is in the
//! election, the leader's callbacks, the controllers that warm up before leading, and the run
//! of the election (again after a lost leadership, with a graceful leader transition).

use std::sync::Arc;

use futures::future::BoxFuture;
use kclient_core::CancellationToken;
use kclient_tools::leaderelection::{LeaderCallbacks, LeaderElector, Lock};

use super::{run_controllers, ManagerError, NewLeader, Shared};
use crate::controller::Leadership;

/// A leader elector, without its lock type.
pub(super) trait Election: Send + Sync {
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, ()>;
}

impl<L: Lock + 'static> Election for LeaderElector<L> {
    fn run(&self, cancel: CancellationToken) -> BoxFuture<'_, ()> {
        Box::pin(LeaderElector::run(self, cancel))
    }
}

/// Where a replica is in the election.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Waiting to lead.
    Candidate,
    /// Running the controllers.
    Leading,
    /// Done: stopped before leading, or the controllers' run ended.
    Finished,
}

/// The leader's work: the controllers, until the manager stops (gracefully, still leading)
/// or the leader token fires (leadership lost: at once).
pub(super) fn leader_callbacks(
    shared: &Arc<Shared>,
    on_new_leader: Option<NewLeader>,
) -> LeaderCallbacks {
    let shared = Arc::clone(shared);
    let callbacks = match on_new_leader {
        Some(f) => LeaderCallbacks::new().on_new_leader(move |leader| f(leader)),
        None => LeaderCallbacks::new(),
    };
    callbacks
        .on_started_leading(move |token| {
            let shared = Arc::clone(&shared);
            async move {
                {
                    let mut phase = shared.phase.lock();
                    if *phase != Phase::Candidate {
                        return;
                    }
                    *phase = Phase::Leading;
                }
                tracing::info!("leading: starting the controllers");
                shared.leadership.send_replace(Some(Leadership {
                    abort: token.cancellation_token().clone(),
                    token: token.clone(),
                }));
                let cold = shared.take_controllers();
                let errors = run_controllers(cold, || shared.elected_env()).await;
                shared.errors.lock().extend(errors);
                // The warm controllers' workers run under this leadership too.
                let lost = token.cancellation_token();
                tokio::select! {
                    () = shared.warm_done.cancelled() => {}
                    () = lost.cancelled(), if shared.follow => {
                        // A graceful leader transition: a follower again.
                        shared.leadership.send_replace(None);
                        *shared.phase.lock() = Phase::Candidate;
                        return;
                    }
                }
                *shared.phase.lock() = Phase::Finished;
            }
        })
        .on_stopped_leading(|| tracing::info!("left the leader election"))
}

/// Starts the controllers that warm up: their queues, handlers and caches now, their
/// workers once this replica leads. Their failure (a cache that never syncs) ends the
/// election (`leave`).
pub(super) fn spawn_warm(
    shared: &Arc<Shared>,
    leave: &CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let (shared, leave) = (Arc::clone(shared), leave.clone());
    let warm = shared.take_warm();
    tokio::spawn(async move {
        let errors = run_controllers(warm, || shared.elected_env()).await;
        if !errors.is_empty() {
            shared.errors.lock().extend(errors);
            leave.cancel();
        }
        shared.warm_done.cancel();
    })
}

/// Under the election: the leader callbacks run the controllers while this replica leads.
pub(super) async fn run_elected(
    shared: &Arc<Shared>,
    elector: &dyn Election,
    leave: CancellationToken,
) -> Result<(), ManagerError> {
    // Stopped while a candidate: leave the election. While leading, the controllers stop
    // gracefully and their end steps down (and releases).
    let candidate_stop = tokio::spawn({
        let (shared, leave) = (Arc::clone(shared), leave.clone());
        async move {
            shared.stop.cancelled().await;
            let mut phase = shared.phase.lock();
            if *phase == Phase::Candidate {
                *phase = Phase::Finished;
                leave.cancel();
            }
        }
    });
    while !shared.stop.is_cancelled() {
        elector.run(leave.clone()).await;
        let following = shared.follow && *shared.phase.lock() == Phase::Candidate;
        if !following || leave.is_cancelled() {
            break;
        }
        tracing::info!("leadership lost: standing for election again");
    }
    candidate_stop.abort();
    if shared.stop.is_cancelled() {
        return Ok(());
    }
    let errors = std::mem::take(&mut *shared.errors.lock());
    if !errors.is_empty() {
        return Err(ManagerError::Controllers(errors));
    }
    Err(ManagerError::LeaderElectionLost)
}
