//! A controller's run, phase by phase (controller-runtime's `Controller.Start`, client-go's
//! controller `Run`): the queue and the handlers, the caches, leadership, the workers, the
//! shutdown.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use kclient_cache::{InformerSynced, SharedIndexInformer, SharedInformerFactory};
use kclient_core::{CancellationToken, ObjectKey, Resource};
use kclient_tools::leaderelection::LeaderToken;
use kclient_workqueue::rate_limiter::TypedRateLimiter;
use kclient_workqueue::{default_controller_rate_limiter, PriorityQueue, PriorityQueueConfig};
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};

use tokio::task::JoinSet;

use super::{Controller, WatchSource};
use crate::config::ControllerConfig;
use crate::consistency::ConsistencyStore;
use crate::error::ControllerError;
use crate::key_queue::KeyQueue;
use crate::metrics::ControllerMetrics;
use crate::predicate::Predicate;
use crate::reconciler::{ControllerScope, Reconciler};
use crate::source::{register_primary, EventFilter, Filters, LastKnown, Registration, Source};
use crate::worker::Workers;

/// This replica's leadership, while it leads.
#[derive(Clone)]
pub(crate) struct Leadership {
    /// Fires when leadership is lost: stop at once.
    pub(crate) abort: CancellationToken,
    /// The leader token, asked right before each reconcile.
    pub(crate) token: LeaderToken,
}

/// How a controller run is driven: by its own token ([`Controller::run`]) or by a
/// [`Manager`](crate::Manager) (leader election).
pub(crate) struct RunEnv {
    /// Stop gracefully: no new reconcile, the ones in flight get the graceful timeout.
    pub(crate) stop: CancellationToken,
    /// `None` without an election. Otherwise this replica's leadership once it leads: the
    /// workers start only then (the queue, the handlers and the caches before, for a
    /// controller that warms up).
    pub(crate) leadership: Option<watch::Receiver<Option<Leadership>>>,
    /// After a lost leadership, keep the queue and the handlers and wait for the next one
    /// (a [graceful leader transition](crate::ManagerBuilder::graceful_leader_transition)),
    /// instead of ending the run.
    pub(crate) follow: bool,
}

/// What follows a round of workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AfterWork {
    /// The run is over: stopped, or leadership lost without following.
    End,
    /// Leadership was lost and the run follows: the queue is kept for the next leadership.
    Follow,
}

impl RunEnv {
    /// Without an election: the workers start once the caches synced.
    pub(crate) fn standalone(stop: CancellationToken) -> Self {
        Self {
            stop,
            leadership: None,
            follow: false,
        }
    }

    /// The leadership now, if this replica leads already.
    fn current_leadership(&self) -> Option<Leadership> {
        self.leadership.as_ref().and_then(|l| l.borrow().clone())
    }

    /// Waits until this replica leads: `Some(None)` without an election, `Some(leadership)`
    /// once it leads (a leadership not lost yet: after a loss, the next one), `None` when
    /// stopped first (or the election ended).
    fn lead(&mut self) -> BoxFuture<'_, Option<Option<Leadership>>> {
        Box::pin(async move {
            let Some(leadership) = self.leadership.as_mut() else {
                return Some(None);
            };
            let live = |l: &Option<Leadership>| l.as_ref().is_some_and(|l| !l.abort.is_cancelled());
            tokio::select! {
                led = leadership.wait_for(live) => led.ok().and_then(|l| l.clone()).map(Some),
                () = self.stop.cancelled() => None,
            }
        })
    }
}

/// What a run holds from its first handler to its end.
struct Run {
    name: Arc<str>,
    queue: KeyQueue,
    registrations: Vec<Registration>,
    event_filter: EventFilter,
    config: ControllerConfig,
}

/// How the workers ended.
enum Ending {
    /// Every reconcile in flight finished.
    Drained,
    /// Some were still running at the graceful shutdown timeout.
    TimedOut,
    /// Leadership was lost: dropped at once.
    Aborted,
    /// The graceful shutdown timeout is zero: dropped at once, as asked.
    NotWaited,
}

/// The controller's queue: controller-runtime's priority queue, paced by `rate_limiter`.
fn new_queue(
    name: &str,
    rate_limiter: Option<Box<dyn TypedRateLimiter<ObjectKey>>>,
    metrics: Option<&ControllerMetrics>,
) -> KeyQueue {
    let mut config = PriorityQueueConfig::new().name(name);
    config.rate_limiter =
        Some(rate_limiter.unwrap_or_else(|| Box::new(default_controller_rate_limiter())));
    if let Some(metrics) = metrics {
        config = config.metrics_provider(metrics.workqueue_provider());
    }
    KeyQueue::new(PriorityQueue::with_config(config))
}

impl<K, C> Controller<K, C>
where
    K: Resource + Clone + Send + Sync + 'static,
    C: Send + Sync + 'static,
{
    /// Runs the controller in `env`; the factory is started by the caller.
    pub(crate) async fn run_in<R: Reconciler<K>>(
        self,
        reconciler: R,
        mut env: RunEnv,
    ) -> Result<(), ControllerError> {
        let Controller {
            name,
            factory,
            primary,
            owner: _,
            predicate,
            event_filter,
            sources,
            mut late_sources,
            late_sender,
            informers,
            config,
            rate_limiter,
            metrics,
            recorder,
            consistency_stores,
            stale_consistency,
        } = self;
        let mut run = Run {
            queue: new_queue(&name, rate_limiter, metrics.as_ref()),
            name,
            registrations: Vec::new(),
            event_filter,
            config,
        };
        let last_known = Arc::new(Mutex::new(HashMap::new()));
        // The handles' clones keep the channel open; the controller's own goes.
        drop(late_sender);
        if let Err(e) = run.register_handlers(&primary, predicate, sources, &last_known) {
            run.end();
            return Err(e);
        }
        let outcome = async {
            if !run.wait_for_caches(&informers, &env).await? {
                return Ok(());
            }
            let reconciler = Arc::new(reconciler);
            let consistency =
                stale_consistency.then(|| Arc::new(ConsistencyStore::new(consistency_stores)));
            // One round a leadership: a follower's workers wait for the next one.
            loop {
                let Some(leadership) = env.lead().await else {
                    return Ok(());
                };
                let scope = ControllerScope {
                    name: Arc::clone(&run.name),
                    recorder: recorder.clone(),
                    leader: leadership.as_ref().map(|l| l.token.clone()),
                    consistency: consistency.clone(),
                };
                let workers = run.workers(
                    scope,
                    &primary,
                    Arc::clone(&last_known),
                    Arc::clone(&reconciler),
                    metrics.as_ref(),
                );
                let abort = leadership.map_or_else(CancellationToken::new, |l| l.abort);
                let after = run
                    .work(workers, &env, &abort, &factory, Some(&mut late_sources))
                    .await?;
                if after == AfterWork::End {
                    return Ok(());
                }
                tracing::info!(controller = %run.name, "leadership lost: following until this replica leads again; the queue is kept");
            }
        }
        .await;
        run.end();
        outcome
    }
}

impl Run {
    /// Registers the primary's handler and every source's: now, so that a run that never
    /// happens queues nothing; on a running informer each gets the cache replayed.
    fn register_handlers<K>(
        &mut self,
        primary: &SharedIndexInformer<K>,
        predicate: Option<Predicate<K>>,
        sources: Vec<Source>,
        last_known: &LastKnown<K>,
    ) -> Result<(), ControllerError>
    where
        K: Resource + Clone + Send + Sync + 'static,
    {
        let primary_handler = register_primary(
            primary,
            format!("{}/{}", self.name, primary.name()),
            &self.queue,
            Filters::new(predicate, &self.event_filter),
            Arc::clone(last_known),
        );
        self.register(primary_handler)?;
        for source in sources {
            self.add_source(source)?;
        }
        Ok(())
    }

    /// What the workers share: the scope their reconciles see, the queue, the primary's
    /// cache and the deleted objects' last states, the reconciler and its metrics.
    fn workers<K, R>(
        &self,
        scope: ControllerScope,
        primary: &SharedIndexInformer<K>,
        last_known: LastKnown<K>,
        reconciler: Arc<R>,
        metrics: Option<&ControllerMetrics>,
    ) -> Arc<Workers<K, R>>
    where
        K: Resource + Clone + Send + Sync + 'static,
        R: Reconciler<K>,
    {
        Arc::new(Workers {
            scope: Arc::new(scope),
            queue: self.queue.clone(),
            cache: primary.get_indexer().clone(),
            last_known,
            reconciler,
            metrics: metrics.map(|m| m.for_controller(&self.name, self.config.workers.max(1))),
            in_flight: AtomicUsize::new(0),
            reconcile_timeout: self.config.reconcile_timeout,
        })
    }

    /// Keeps a handler's registration, or fails the run with its error.
    fn register(
        &mut self,
        registration: Result<Registration, kclient_cache::InformerError>,
    ) -> Result<(), ControllerError> {
        let registration = registration.map_err(|source| ControllerError::Informer {
            controller: self.name.to_string(),
            source,
        })?;
        self.registrations.push(registration);
        Ok(())
    }

    /// Registers `source`'s handler on the queue.
    fn add_source(&mut self, source: Source) -> Result<(), ControllerError> {
        let registration = source(&self.queue, &self.event_filter);
        self.register(registration)
    }

    /// Waits for every informer and every handler's initial list; whether they synced
    /// (false: stopped, or leadership lost, first).
    fn wait_for_caches<'a>(
        &'a self,
        informers: &'a [(String, InformerSynced)],
        env: &'a RunEnv,
    ) -> BoxFuture<'a, Result<bool, ControllerError>> {
        Box::pin(async move {
            let synced: Vec<InformerSynced> = (informers.iter().map(|(_, s)| s.clone()))
                .chain(self.registrations.iter().map(|r| r.synced.clone()))
                .collect();
            let abort = env.current_leadership().map(|l| l.abort);
            let waited = tokio::time::timeout(self.config.cache_sync_timeout, async {
                tokio::select! {
                    synced = kclient_cache::wait_for_named_cache_sync(&self.name, &env.stop, &synced) => synced,
                    () = async { match &abort { Some(abort) => abort.cancelled().await, None => std::future::pending().await } } => false,
                }
            })
            .await;
            let Err(_) = waited else {
                return Ok(waited.unwrap_or(false));
            };
            let mut unsynced: Vec<String> = (informers.iter())
                .filter(|(_, s)| !s.has_synced())
                .map(|(n, _)| n.clone())
                .collect();
            if unsynced.is_empty() {
                unsynced.push(format!("the handlers of {}", self.name));
            }
            Err(ControllerError::CacheSyncTimeout {
                controller: self.name.to_string(),
                unsynced,
                timeout: self.config.cache_sync_timeout,
            })
        })
    }

    /// Runs the workers until `stop` (gracefully), `abort` or a lost leadership (at once);
    /// meanwhile registers the sources a [`ControllerHandle`](super::ControllerHandle)
    /// adds, starting their informers on `factory`. A lost leadership in a run that follows
    /// keeps the queue ([`AfterWork::Follow`]); anything else shuts it down.
    async fn work<K, R, C>(
        &mut self,
        workers: Arc<Workers<K, R>>,
        env: &RunEnv,
        abort: &CancellationToken,
        factory: &SharedInformerFactory<C>,
        mut late_sources: Option<&mut mpsc::UnboundedReceiver<WatchSource>>,
    ) -> Result<AfterWork, ControllerError>
    where
        K: Resource + Send + Sync + 'static,
        R: Reconciler<K>,
        C: Send + Sync + 'static,
    {
        let count = self.config.workers.max(1);
        tracing::info!(controller = %self.name, workers = count, "Starting workers");
        let halt = CancellationToken::new();
        let lost = CancellationToken::new();
        let mut tasks = JoinSet::new();
        for _ in 0..count {
            tasks.spawn(Arc::clone(&workers).run(halt.clone(), lost.clone()));
        }
        let stop = &env.stop;
        let graceful = loop {
            tokio::select! {
                () = stop.cancelled() => break true,
                () = abort.cancelled() => break false,
                () = lost.cancelled() => break false,
                late = next_source(&mut late_sources) => {
                    if let Some(late) = late {
                        self.add_source(late.source)?;
                        if let Some(consistency) = &workers.scope.consistency {
                            consistency.set_store(late.resource, late.store);
                        }
                        factory.start(stop);
                    } else {
                        late_sources = None;
                    }
                }
            }
        };
        halt.cancel();
        if !graceful && env.follow {
            // The workers' keys go back to the queue, which stays for the next leadership.
            tasks.abort_all();
            drain(&mut tasks).await;
            return Ok(AfterWork::Follow);
        }
        self.queue.shut_down();
        let ending = self.ending(graceful, abort, &mut tasks).await;
        self.report(ending, &workers.in_flight, &mut tasks).await?;
        Ok(AfterWork::End)
    }

    /// Waits for the reconciles in flight as the shutdown allows.
    fn ending<'a>(
        &'a self,
        graceful: bool,
        abort: &'a CancellationToken,
        tasks: &'a mut JoinSet<()>,
    ) -> BoxFuture<'a, Ending> {
        Box::pin(async move {
            if !graceful {
                return Ending::Aborted;
            }
            let timeout = self.config.graceful_shutdown_timeout;
            if timeout.is_zero() {
                return Ending::NotWaited;
            }
            tracing::info!(controller = %self.name, "Shutdown signal received, waiting for all workers to finish");
            tokio::select! {
                drained = tokio::time::timeout(timeout, drain(tasks)) => {
                    if drained.is_ok() { Ending::Drained } else { Ending::TimedOut }
                }
                () = abort.cancelled() => Ending::Aborted,
            }
        })
    }

    /// Drops what still runs, logs how the workers ended, and what the run returns.
    fn report<'a>(
        &'a self,
        ending: Ending,
        in_flight: &'a AtomicUsize,
        tasks: &'a mut JoinSet<()>,
    ) -> BoxFuture<'a, Result<(), ControllerError>> {
        Box::pin(async move {
            let name = &self.name;
            let in_flight = in_flight.load(Ordering::Acquire);
            tasks.abort_all();
            drain(tasks).await;
            match ending {
                Ending::Drained => tracing::info!(controller = %name, "All workers finished"),
                Ending::TimedOut => {
                    tracing::error!(controller = %name, in_flight, "reconciles still running after the graceful shutdown timeout: dropped");
                    return Err(ControllerError::ShutdownTimedOut {
                        controller: name.to_string(),
                        in_flight,
                        timeout: self.config.graceful_shutdown_timeout,
                    });
                }
                Ending::Aborted => {
                    tracing::warn!(controller = %name, "leadership lost: the reconciles in flight are dropped");
                }
                Ending::NotWaited => {
                    tracing::info!(controller = %name, "a zero graceful shutdown timeout: the reconciles in flight are dropped");
                }
            }
            Ok(())
        })
    }

    /// Removes the handlers and shuts the queue down.
    fn end(&mut self) {
        self.registrations.drain(..).for_each(Registration::remove);
        self.queue.shut_down();
    }
}

/// The next source a handle added; pending forever when there is no channel.
async fn next_source(
    late: &mut Option<&mut mpsc::UnboundedReceiver<WatchSource>>,
) -> Option<WatchSource> {
    match late {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

/// Waits for every task of `tasks` to end.
async fn drain(tasks: &mut JoinSet<()>) {
    while tasks.join_next().await.is_some() {}
}
