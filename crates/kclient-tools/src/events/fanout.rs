//! The queue between recorders and the tasks that write or watch events (client-go's
//! `watch.Broadcaster` as the event broadcasters configure it: `DropIfChannelFull`).
//!
//! Each watcher has its own bounded queue. Emitting never waits: an event is offered to
//! every queue with `try_send`, and a full queue loses it, counted in
//! [`dropped_events`](Fanout::dropped_events) and reported to the [`EventMetrics`] hook. On
//! shutdown the queues are closed, the watchers' tasks finish what is queued, and after the
//! timeout they are cancelled.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::EventError;

/// A hook for metrics about event recording (count the drops in your metrics system).
pub trait EventMetrics: Send + Sync {
    /// An event was dropped: a watcher's queue was full, or the broadcaster was shut down.
    fn event_dropped(&self) {}
}

/// How a shutdown ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// Every queued event was handled (written, or given up on after its tries).
    Flushed,
    /// The timeout passed first: the watchers were cancelled with events still queued or
    /// being retried.
    TimedOut,
}

/// A running watcher (a sink writer, a logger or an event handler); [`stop`](Self::stop)
/// ends it (client-go's `watch.Interface.Stop`). Dropping the handle leaves it running.
#[derive(Debug, Clone)]
pub struct EventWatcher {
    stop: CancellationToken,
}

impl EventWatcher {
    /// Stops the watcher: it takes no further event, and a write in progress is abandoned.
    pub fn stop(&self) {
        self.stop.cancel();
    }
}

struct Shared<E> {
    /// The watchers' queues; `None` once shut down.
    queues: Mutex<Option<Vec<mpsc::Sender<E>>>>,
    queue_length: usize,
    dropped: AtomicU64,
    metrics: Option<Arc<dyn EventMetrics>>,
    tasks: TaskTracker,
    cancel: CancellationToken,
}

/// The fan-out from recorders to watchers; cloning shares it.
pub(crate) struct Fanout<E> {
    shared: Arc<Shared<E>>,
}

impl<E> Clone for Fanout<E> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl<E> fmt::Debug for Fanout<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fanout")
            .field("queue_length", &self.shared.queue_length)
            .field("dropped", &self.shared.dropped.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// One watcher's end of the fan-out.
pub(crate) struct Subscription<E> {
    queue: mpsc::Receiver<E>,
    stop: CancellationToken,
}

impl<E> Subscription<E> {
    /// The next event; `None` once the broadcaster shut down and the queue is empty, or the
    /// watcher was stopped.
    pub(crate) async fn recv(&mut self) -> Option<E> {
        tokio::select! {
            biased;
            _ = self.stop.cancelled() => None,
            event = self.queue.recv() => event,
        }
    }

    /// Runs `work` unless the watcher is stopped first (`None` then).
    pub(crate) async fn unless_stopped<T>(&self, work: impl Future<Output = T>) -> Option<T> {
        tokio::select! {
            biased;
            _ = self.stop.cancelled() => None,
            out = work => Some(out),
        }
    }

    /// Completes when the watcher is stopped.
    pub(crate) async fn stopped(&self) {
        self.stop.cancelled().await;
    }
}

impl<E: Clone + Send + 'static> Fanout<E> {
    /// A fan-out whose watchers each queue at most `queue_length` events.
    pub(crate) fn new(queue_length: usize, metrics: Option<Arc<dyn EventMetrics>>) -> Self {
        Self {
            shared: Arc::new(Shared {
                queues: Mutex::new(Some(Vec::new())),
                queue_length: queue_length.max(1),
                dropped: AtomicU64::new(0),
                metrics,
                tasks: TaskTracker::new(),
                cancel: CancellationToken::new(),
            }),
        }
    }

    /// Offers `event` to every watcher without waiting (client-go's `ActionOrDrop`).
    pub(crate) fn emit(&self, event: E) {
        let mut queues = self.shared.queues.lock();
        let Some(queues) = queues.as_mut() else {
            tracing::debug!("event broadcaster is shut down: event dropped");
            self.count_drop();
            return;
        };
        queues.retain(|queue| !queue.is_closed());
        for queue in queues.iter() {
            match queue.try_send(event.clone()) {
                Ok(()) | Err(TrySendError::Closed(_)) => {}
                Err(TrySendError::Full(_)) => {
                    tracing::warn!("too many queued events: event dropped");
                    self.count_drop();
                }
            }
        }
    }

    fn count_drop(&self) {
        self.shared.dropped.fetch_add(1, Ordering::Relaxed);
        if let Some(metrics) = &self.shared.metrics {
            metrics.event_dropped();
        }
    }

    /// How many events were dropped so far.
    pub(crate) fn dropped_events(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Starts a watcher: `run` gets its subscription and runs as a task until the
    /// subscription ends.
    pub(crate) fn start<F, Fut>(&self, run: F) -> Result<EventWatcher, EventError>
    where
        F: FnOnce(Subscription<E>) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| EventError::NoRuntime)?;
        let (sender, queue) = mpsc::channel(self.shared.queue_length);
        let stop = self.shared.cancel.child_token();
        {
            let mut queues = self.shared.queues.lock();
            let Some(queues) = queues.as_mut() else {
                return Err(EventError::ShutDown);
            };
            queues.push(sender);
        }
        let task = run(Subscription {
            queue,
            stop: stop.clone(),
        });
        self.shared.tasks.spawn_on(task, &runtime);
        Ok(EventWatcher { stop })
    }

    /// Starts a watcher that calls `handler` with every event (the broadcasters'
    /// `start_event_watcher`).
    pub(crate) fn watch(
        &self,
        mut handler: impl FnMut(&E) + Send + 'static,
    ) -> Result<EventWatcher, EventError> {
        self.start(move |mut events| async move {
            while let Some(event) = events.recv().await {
                handler(&event);
            }
        })
    }

    /// Closes the queues, lets the watchers finish what is queued for at most `timeout`,
    /// then cancels them; returns once every watcher's task ended.
    pub(crate) async fn shutdown(&self, timeout: Duration) -> Shutdown {
        drop(self.shared.queues.lock().take());
        self.shared.tasks.close();
        if tokio::time::timeout(timeout, self.shared.tasks.wait())
            .await
            .is_ok()
        {
            return Shutdown::Flushed;
        }
        self.shared.cancel.cancel();
        self.shared.tasks.wait().await;
        Shutdown::TimedOut
    }
}
