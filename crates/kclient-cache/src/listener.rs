//! One handler's side of a shared informer (client-go's `processorListener`): its own queue
//! of notifications, drained by its own task, in order, one call at a time, the calls made
//! on the process's pool of handler threads (`lane_pool`; or by the task itself, for a handler
//! that never blocks).
//!
//! The informer only ever pushes onto the queue (no handler runs under any lock, and a slow
//! or blocking handler delays nobody but itself: it never holds an async worker thread). The queue is unbounded by default, like client-go's
//! growing ring buffer; with a bound, the informer waits for room before it pops more from
//! its FIFO (see [`HandlerOptions::max_pending`](crate::HandlerOptions::max_pending)).
//!
//! A compact informer's listed objects arrive still encoded
//! ([`Announced::EncodedAdd`](crate::announced::Announced::EncodedAdd)) and are decoded on the
//! lane, right before the handler's call, once for all the listeners.
//!
//! A handler that panics is caught: the panic is logged and counted, that notification is
//! skipped, and the listener goes on with the next one. (client-go sleeps one second after a
//! crash before it resumes; there is no hot loop to slow down here, since the notification
//! that panicked is not retried.)
//!
//! A listener does not know its informer's kind: it queues [`Queued`] announcements and calls
//! its handler through [`KindHandler`], the one part made for the kind. So the queue, the lane
//! and the bookkeeping are compiled once, not once per kind a program caches.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kclient_core::{deletion_handling_meta_namespace_key, meta_namespace_key, Resource};
use parking_lot::{Condvar, Mutex};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::announced::{Announced, Queued};
use crate::handler::{dispatch, ResourceEventHandler};
use crate::lane_pool::LanePool;
use crate::metrics::InformerMetrics;
use crate::process_deltas::Notification;

/// How long a lane waits for more notifications before it gives its thread back (at once
/// when other lanes wait for a thread).
pub(crate) const LANE_LINGER: Duration = Duration::from_millis(1);

/// What is queued, and whether a lane is handling the queue.
struct Queue {
    notifications: VecDeque<Queued>,
    lane_active: bool,
}

/// When the clock cannot represent `now + period`: about thirty years ahead.
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 3600);

struct Resync {
    /// The period the listener runs with (client-go's `resyncPeriod`).
    period: Duration,
    next: Instant,
}

/// A handler, its queue and its resync schedule.
pub(crate) struct Listener {
    pub(crate) id: u64,
    pub(crate) name: String,
    informer: Arc<str>,
    handler: Box<dyn KindHandler>,
    queue: Mutex<Queue>,
    /// Wakes a lane that lingers for more notifications.
    more: Condvar,
    /// Queued plus being handled.
    pending: AtomicUsize,
    /// Initial-list adds not handled yet (for the registration's `has_synced`).
    initial_pending: AtomicUsize,
    wake: Notify,
    room: Notify,
    initial_done: Notify,
    closed: AtomicBool,
    max_pending: Option<usize>,
    /// What the handler asked for (client-go's `requestedResyncPeriod`).
    pub(crate) requested_resync_period: Duration,
    resync: Mutex<Resync>,
    handled: AtomicU64,
    panics: AtomicU64,
    metrics: Option<Arc<dyn InformerMetrics>>,
}

impl Listener {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        id: u64,
        name: String,
        informer: Arc<str>,
        handler: Box<dyn KindHandler>,
        requested_resync_period: Duration,
        resync_period: Duration,
        max_pending: Option<usize>,
        metrics: Option<Arc<dyn InformerMetrics>>,
    ) -> Self {
        let listener = Self {
            id,
            name,
            informer,
            handler,
            queue: Mutex::new(Queue {
                notifications: VecDeque::new(),
                lane_active: false,
            }),
            more: Condvar::new(),
            pending: AtomicUsize::new(0),
            initial_pending: AtomicUsize::new(0),
            wake: Notify::new(),
            room: Notify::new(),
            initial_done: Notify::new(),
            closed: AtomicBool::new(false),
            max_pending: max_pending.map(|n| n.max(1)),
            requested_resync_period,
            resync: Mutex::new(Resync {
                period: resync_period,
                next: Instant::now(),
            }),
            handled: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            metrics,
        };
        listener.determine_next_resync(Instant::now());
        listener
    }

    /// Queues a notification; never waits.
    pub(crate) fn add(&self, notification: Queued) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        if notification.is_initial_add() {
            self.initial_pending.fetch_add(1, Ordering::AcqRel);
        }
        let depth = self.pending.fetch_add(1, Ordering::AcqRel) + 1;
        let lane_active = {
            let mut queued = self.queue.lock();
            queued.notifications.push_back(notification);
            queued.lane_active
        };
        if lane_active {
            self.more.notify_one();
        } else {
            self.wake.notify_one();
        }
        if let Some(m) = &self.metrics {
            m.handler_queue_depth(&self.informer, &self.name, depth);
        }
    }

    /// Notifications queued or being handled.
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    /// The bound on the queue, if any.
    pub(crate) fn max_pending(&self) -> Option<usize> {
        self.max_pending
    }

    /// Notifications handled so far (panicked ones included).
    pub(crate) fn handled(&self) -> u64 {
        self.handled.load(Ordering::Acquire)
    }

    /// Handler calls that panicked.
    pub(crate) fn panics(&self) -> u64 {
        self.panics.load(Ordering::Acquire)
    }

    /// Whether every initial-list add queued so far has been handled.
    pub(crate) fn initial_list_handled(&self) -> bool {
        self.initial_pending.load(Ordering::Acquire) == 0
    }

    /// Resolves when every initial-list add queued so far has been handled.
    pub(crate) async fn wait_initial_list_handled(&self) {
        loop {
            let notified = self.initial_done.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.initial_list_handled() {
                return;
            }
            notified.await;
        }
    }

    /// Resolves when the queue is below its bound (at once when unbounded or closed).
    pub(crate) async fn wait_for_room(&self) {
        let Some(bound) = self.max_pending else {
            return;
        };
        loop {
            let notified = self.room.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.pending() < bound || self.closed.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }

    /// Stops the listener: what is still queued is dropped (as client-go's listener stops).
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.wake.notify_one();
        self.more.notify_all();
        self.room.notify_waiters();
        // Whoever waits for this handler to sync would otherwise wait forever.
        self.initial_done.notify_waiters();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Handles notifications until closed.
    ///
    /// Handlers are synchronous and may block, so they never run on an async worker: a
    /// *lane* (a job for the process's [`LanePool`]) handles what is queued, in order, then
    /// lingers up to [`LANE_LINGER`] for more before it returns (unless other lanes wait for
    /// a thread), so that a steady stream of events costs one hand-off, not one per event.
    /// A slow or blocking handler holds one of the pool's threads and delays only its own
    /// listener (the pool starts more threads when jobs wait behind blocked ones), not the
    /// runtime, the informer or other handlers (client-go gives each listener a goroutine of
    /// its own). A thousand handlers cost a thread per core, not a thread each.
    ///
    /// A handler that says it never blocks ([`ResourceEventHandler::may_block`] is false) is
    /// called by the listener's task itself, as is every handler on a current-thread
    /// runtime (there is no worker to keep free: every task already shares the one
    /// thread); the task spends tokio's cooperative budget per batch, so a steady stream of
    /// events does not hold its worker.
    pub(crate) async fn run(self: Arc<Self>) {
        let offload = self.handler.may_block()
            && tokio::runtime::Handle::current().runtime_flavor()
                != tokio::runtime::RuntimeFlavor::CurrentThread;
        loop {
            if self.is_closed() {
                return;
            }
            let batch = self.start_lane();
            if batch.is_empty() {
                self.wake.notified().await;
                continue;
            }
            if !offload {
                self.handle_batch(batch);
                self.queue.lock().lane_active = false;
                tokio::task::coop::consume_budget().await;
                continue;
            }
            let listener = Arc::clone(&self);
            let runtime = tokio::runtime::Handle::current();
            let (ended, lane) = tokio::sync::oneshot::channel();
            LanePool::process().spawn(Box::new(move || {
                // Handlers may use the runtime (spawn, `Handle::current`), as they could on
                // its blocking pool.
                let _entered = runtime.enter();
                listener.run_lane(batch);
                let _ = ended.send(());
            }));
            if lane.await.is_err() {
                // The lane did not end normally (a handler's panic is caught in `handle`).
                return;
            }
        }
    }

    /// Takes what is queued; when there is something, the lane is active from now on (new
    /// notifications wake it rather than the task).
    fn start_lane(&self) -> VecDeque<Queued> {
        let mut queued = self.queue.lock();
        let batch = std::mem::take(&mut queued.notifications);
        queued.lane_active = !batch.is_empty();
        batch
    }

    /// Handles a batch in order, stopping early once the listener is closed.
    fn handle_batch(&self, batch: VecDeque<Queued>) {
        for notification in batch {
            if self.is_closed() {
                return;
            }
            self.handle(notification);
        }
    }

    /// Handles `batch` and whatever arrives while it runs or lingers, then ends the lane.
    fn run_lane(&self, mut batch: VecDeque<Queued>) {
        loop {
            self.handle_batch(batch);
            let mut queued = self.queue.lock();
            if queued.notifications.is_empty()
                && !self.is_closed()
                && !LanePool::process().has_waiting_jobs()
            {
                self.more.wait_for(&mut queued, LANE_LINGER);
            }
            if queued.notifications.is_empty() || self.is_closed() {
                queued.lane_active = false;
                return;
            }
            batch = std::mem::take(&mut queued.notifications);
        }
    }

    /// Calls the handler with one notification (an encoded add decoded first, here on the
    /// lane), then does the bookkeeping.
    fn handle(&self, queued: Queued) {
        let initial = queued.is_initial_add();
        let started = Instant::now();
        self.call(&queued);
        drop(queued);
        self.handled.fetch_add(1, Ordering::AcqRel);
        let depth = self.pending.fetch_sub(1, Ordering::AcqRel) - 1;
        if self.max_pending.is_some_and(|bound| depth < bound) {
            self.room.notify_one();
        }
        if initial && self.initial_pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.initial_done.notify_waiters();
        }
        if let Some(m) = &self.metrics {
            m.handler_latency(&self.informer, &self.name, started.elapsed());
            m.handler_queue_depth(&self.informer, &self.name, depth);
        }
    }

    /// The handler's call, a panic caught, logged and counted.
    fn call(&self, queued: &Queued) {
        let Err(panic) = self.handler.call(queued, &self.informer, &self.name) else {
            return;
        };
        self.panics.fetch_add(1, Ordering::AcqRel);
        tracing::error!(
            informer = %self.informer,
            handler = %self.name,
            event = panic.event,
            key = panic.key,
            panic = %panic.message,
            "event handler panicked; the notification is skipped and the handler goes on"
        );
        if let Some(m) = &self.metrics {
            m.handler_panicked(&self.informer, &self.name);
        }
    }

    /// Whether this listener's resync is due (client-go's `shouldResync`).
    pub(crate) fn should_resync(&self, now: Instant) -> bool {
        let resync = self.resync.lock();
        !resync.period.is_zero() && now >= resync.next
    }

    /// Schedules the next resync one period from `now` (client-go's `determineNextResync`).
    pub(crate) fn determine_next_resync(&self, now: Instant) {
        let mut resync = self.resync.lock();
        resync.next = now
            .checked_add(resync.period)
            .unwrap_or_else(|| now + FAR_FUTURE);
    }

    /// The period the listener resyncs with.
    pub(crate) fn resync_period(&self) -> Duration {
        self.resync.lock().period
    }

    pub(crate) fn set_resync_period(&self, period: Duration) {
        self.resync.lock().period = period;
    }
}

/// A listener's handler, seen from the listener: the one part of a listener made for its
/// informer's kind.
pub(crate) trait KindHandler: Send + Sync {
    /// Whether a call may block ([`ResourceEventHandler::may_block`]).
    fn may_block(&self) -> bool;

    /// Calls the handler with `queued` (an encoded add decoded first), in a span naming the
    /// informer, the handler and the event. `Err` when the call panicked.
    fn call(&self, queued: &Queued, informer: &str, handler: &str) -> Result<(), HandlerPanic>;
}

/// A handler call that panicked.
pub(crate) struct HandlerPanic {
    event: &'static str,
    key: String,
    message: String,
}

/// `handler` as a listener's [`KindHandler`] for an informer of `K`.
pub(crate) fn kind_handler<K: Resource + Send + Sync + 'static>(
    handler: Arc<dyn ResourceEventHandler<K>>,
) -> Box<dyn KindHandler> {
    Box::new(TypedHandler(handler))
}

/// A handler of `K`'s notifications, called through the kind-free [`KindHandler`].
struct TypedHandler<K>(Arc<dyn ResourceEventHandler<K>>);

impl<K: Resource + Send + Sync + 'static> KindHandler for TypedHandler<K> {
    fn may_block(&self) -> bool {
        self.0.may_block()
    }

    fn call(&self, queued: &Queued, informer: &str, handler: &str) -> Result<(), HandlerPanic> {
        let Some(announced) = queued.announced::<K>() else {
            // Only the informer of `K` queues for this listener.
            tracing::error!(
                informer,
                handler,
                "a notification of another kind is skipped"
            );
            return Ok(());
        };
        // A ready notification is handed over as it is queued, without a copy of its `Arc`s.
        let notification = match announced {
            Announced::Ready(notification) => Cow::Borrowed(notification),
            Announced::EncodedAdd(_) => match announced.clone().notification() {
                Some(notification) => Cow::Owned(notification),
                None => return Ok(()),
            },
        };
        let event = event_name(&notification);
        let _entered = handler_span(informer, handler, event).entered();
        dispatch(self.0.as_ref(), &notification).map_err(|message| HandlerPanic {
            event,
            key: notification_key(&notification),
            message,
        })
    }
}

/// The span a handler is called in.
fn handler_span(informer: &str, handler: &str, event: &'static str) -> tracing::Span {
    tracing::trace_span!("handler", informer, handler, event)
}

/// The event's name, for the span and logs.
fn event_name<K>(notification: &Notification<K>) -> &'static str {
    match notification {
        Notification::Add { .. } => "add",
        Notification::Update { .. } => "update",
        Notification::Delete(_) => "delete",
    }
}

/// The object's key, for logs.
fn notification_key<K: Resource>(notification: &Notification<K>) -> String {
    match notification {
        Notification::Add { obj, .. } | Notification::Update { new: obj, .. } => {
            meta_namespace_key(obj.as_ref())
        }
        Notification::Delete(deleted) => deletion_handling_meta_namespace_key(deleted),
    }
}
