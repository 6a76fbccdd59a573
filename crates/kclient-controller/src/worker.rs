//! The workers: take a key, read its object from the cache, reconcile it, and tell the
//! workqueue what comes next (client-go's `processNextWorkItem` / controller-runtime's
//! `reconcileHandler`).

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures::FutureExt;
use kclient_cache::Indexer;
use kclient_core::{CancellationToken, ObjectKey, Resource, ResourceExt};
use kclient_workqueue::AddOpts;
use tokio::time::Instant;
use tracing::Instrument;

use crate::action::{Action, Next};
use crate::key_queue::KeyQueue;
use crate::metrics::ReconcileMetrics;
use crate::reconciler::{ControllerScope, ReconcileContext, Reconciler};
use crate::source::LastKnown;

/// What every worker of one controller run shares.
pub(crate) struct Workers<K, R> {
    pub(crate) scope: Arc<ControllerScope>,
    pub(crate) queue: KeyQueue,
    pub(crate) cache: Indexer<K>,
    pub(crate) last_known: LastKnown<K>,
    pub(crate) reconciler: Arc<R>,
    pub(crate) metrics: Option<ReconcileMetrics>,
    /// Reconciles running now.
    pub(crate) in_flight: AtomicUsize,
    /// How long one reconcile may run.
    pub(crate) reconcile_timeout: Option<std::time::Duration>,
}

/// How a reconcile ended, before the action is applied.
enum Outcome {
    Succeeded(Action),
    Failed(Action),
    Panicked,
    TimedOut,
}

impl<K, R> Workers<K, R>
where
    K: Resource + Send + Sync + 'static,
    R: Reconciler<K>,
{
    /// One worker: takes keys until `halt` fires or the queue shuts down. Right before each
    /// reconcile it asks whether this process may still act (the leader token's clock
    /// check); when it may not, it gives the key back undone, fires `lost` and stops.
    pub(crate) async fn run(self: Arc<Self>, halt: CancellationToken, lost: CancellationToken) {
        loop {
            let next = tokio::select! {
                biased;
                () = halt.cancelled() => return,
                next = self.queue.get_with_priority() => next,
            };
            let Some((key, priority)) = next else { return };
            let handed_out = HandedOut {
                queue: &self.queue,
                key: &key,
                priority,
            };
            if !self.scope.leader.as_ref().is_none_or(|l| l.is_leader()) {
                tracing::info!(controller = %self.scope.name, %key, "no longer the leader: not reconciling");
                drop(handed_out);
                lost.cancel();
                return;
            }
            self.in_flight.fetch_add(1, Ordering::AcqRel);
            self.process(&key, priority).await;
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            // No yield of our own: a reconcile may finish without awaiting anything, but
            // the queue's `get` spends tokio's cooperative budget, so a worker that always
            // finds a key waiting still gives its thread back.
            handed_out.finish();
        }
    }

    /// Reconciles `key` (handed out at `priority`) in a span carrying the key and its
    /// attempt, and applies the outcome.
    async fn process(&self, key: &ObjectKey, priority: i32) {
        if self.stale(key, priority) {
            return;
        }
        let retries = self.queue.num_requeues(key);
        let span = tracing::info_span!(
            "reconcile",
            controller = %self.scope.name,
            key = %key,
            attempt = retries,
        );
        async {
            let started = Instant::now();
            if let Some(metrics) = &self.metrics {
                metrics.active.inc();
            }
            let cached = self.cache.get_by_object_key(key);
            if cached.is_none() {
                // The object is gone: nothing to wait for any more (replica_set.go's `Clear`
                // on NotFound).
                if let Some(consistency) = &self.scope.consistency {
                    consistency.clear(key, "");
                }
            }
            let owner_uid = cached.as_ref().and_then(|o| o.uid()).unwrap_or_default();
            let ctx = ReconcileContext::new(
                Arc::clone(&self.scope),
                key.clone(),
                retries,
                owner_uid.to_owned(),
            );
            let outcome = self.reconcile(&ctx, cached).await;
            self.apply(key, priority, outcome);
            if let Some(metrics) = &self.metrics {
                metrics.active.dec();
                metrics.time.observe(started.elapsed().as_secs_f64());
            }
        }
        .instrument(span)
        .await;
    }

    /// KEP-5647's check before a sync (kubernetes' replica_set.go `syncReplicaSet`): when a
    /// cache is older than a write recorded for `key`, the reconcile is skipped, counted, and
    /// the key requeued with the rate limiter (`AddRateLimited`, as the sync's error does
    /// there); true then.
    fn stale(&self, key: &ObjectKey, priority: i32) -> bool {
        let Some(consistency) = &self.scope.consistency else {
            return false;
        };
        if let Err(stale) = consistency.ensure_ready(key) {
            tracing::debug!(controller = %self.scope.name, %key, error = %stale, "the cache is older than this controller's writes; not reconciling yet");
            if let Some(metrics) = &self.metrics {
                metrics.stale_sync_skip(&stale.group_resource);
            }
            self.queue.add_with_opts(
                AddOpts::new().priority(priority).rate_limited(),
                key.clone(),
            );
            return true;
        }
        false
    }

    /// Calls the reconciler with the key's object as the cache holds it now (`cached`, or its
    /// deletion hook), catching panics.
    async fn reconcile(&self, ctx: &ReconcileContext, cached: Option<Arc<K>>) -> Outcome {
        let key = ctx.key();
        let last_known = self.last_known.lock().remove(key);
        let reconciling = async {
            match cached {
                Some(obj) => {
                    AssertUnwindSafe(self.reconciler.reconcile(obj, ctx))
                        .catch_unwind()
                        .await
                }
                None => {
                    AssertUnwindSafe(self.reconciler.reconcile_deleted(last_known, ctx))
                        .catch_unwind()
                        .await
                }
            }
        };
        let result = match self.reconcile_timeout {
            None => reconciling.await,
            Some(limit) => match tokio::time::timeout(limit, reconciling).await {
                Ok(result) => result,
                Err(_) => {
                    tracing::error!(timeout = ?limit, "the reconcile timed out; backing off");
                    return Outcome::TimedOut;
                }
            },
        };
        match result {
            Ok(Ok(action)) => {
                tracing::debug!(?action, "reconciled");
                Outcome::Succeeded(action)
            }
            Ok(Err(error)) => {
                tracing::error!(error = %error, "Reconciler error");
                let policy = std::panic::catch_unwind(AssertUnwindSafe(|| {
                    self.reconciler.error_policy(&error, ctx)
                }));
                Outcome::Failed(policy.unwrap_or_else(|panic| {
                    tracing::error!(
                        panic = panic_message(&*panic),
                        "the error policy panicked; backing off"
                    );
                    Action::requeue_rate_limited()
                }))
            }
            Err(panic) => {
                tracing::error!(
                    panic = panic_message(&*panic),
                    "the reconciler panicked; backing off"
                );
                Outcome::Panicked
            }
        }
    }

    /// Tells the queue what comes next for `key`, handed out at `priority`
    /// (controller-runtime's `reconcileHandler`), and counts the result.
    fn apply(&self, key: &ObjectKey, priority: i32, outcome: Outcome) {
        let queue = &self.queue;
        let (action, failed) = match outcome {
            Outcome::Succeeded(action) => (action, false),
            Outcome::Failed(action) => (action, true),
            Outcome::Panicked => {
                if let Some(metrics) = &self.metrics {
                    metrics.panics.inc();
                }
                (Action::requeue_rate_limited(), true)
            }
            Outcome::TimedOut => {
                if let Some(metrics) = &self.metrics {
                    metrics.timeouts.inc();
                }
                (Action::requeue_rate_limited(), true)
            }
        };
        let requeue = AddOpts::new().priority(action.priority().unwrap_or(priority));
        match action.next() {
            Next::AwaitChange => queue.forget(key),
            Next::After(after) => {
                if !failed {
                    queue.forget(key);
                }
                queue.add_with_opts(requeue.after(after), key.clone());
            }
            Next::RateLimited => queue.add_with_opts(requeue.rate_limited(), key.clone()),
        }
        if let Some(metrics) = &self.metrics {
            if failed {
                metrics.errors.inc();
                metrics.error.inc();
            } else {
                match action.next() {
                    Next::AwaitChange => metrics.success.inc(),
                    Next::After(_) => metrics.requeue_after.inc(),
                    Next::RateLimited => metrics.requeue.inc(),
                };
            }
        }
    }
}

/// A key a worker took from the queue. Finished, it is marked done; dropped unfinished — not
/// reconciled because leadership was lost, or its reconcile dropped with the worker's task —
/// it is given back to the queue, ready at once at its priority, so that whoever runs this
/// queue's workers next (this replica, leading again after a
/// [graceful leader transition](crate::ManagerBuilder::graceful_leader_transition))
/// reconciles it. A queue that was shut down takes nothing back.
struct HandedOut<'a> {
    queue: &'a KeyQueue,
    key: &'a ObjectKey,
    priority: i32,
}

impl HandedOut<'_> {
    /// The reconcile ran and its outcome was applied: the key is done.
    fn finish(self) {
        self.queue.done(self.key);
        std::mem::forget(self);
    }
}

impl Drop for HandedOut<'_> {
    fn drop(&mut self) {
        self.queue
            .add_with_opts(AddOpts::new().priority(self.priority), self.key.clone());
        self.queue.done(self.key);
    }
}

/// A panic's message, for the log.
fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}
