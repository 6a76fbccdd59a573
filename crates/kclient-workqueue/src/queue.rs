//! [`WorkQueue`]: the fair, stingy work queue (client-go's `workqueue.Typed`).
//!
//! This module also holds the state shared with the delaying layer: the waiting room of
//! delayed items sits under the same lock as the queue, so that an item that becomes due is
//! moved into the queue by whichever operation comes first after its ready time (a `get`
//! sleeping until exactly that time, or any `add`, `done`, `len` or `shut_down`). Every
//! operation moves all due items first, in ready-time order, so the queue evolves exactly as
//! if each delayed item had been added at its ready time, as client-go's waiting loop would
//! have done; no background task or channel is involved.

use std::collections::hash_map::Entry;
use std::collections::VecDeque;
use std::fmt;
use std::hash::Hash;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::delay_heap::DelayHeap;
use crate::metrics::{
    resolve_provider, spawn_unfinished_work_updater, CounterMetric, MetricsProvider, QueueMetrics,
};
use crate::storage::{QueueStorage, Storage};
use crate::ItemMap;

/// The longest a waiting `get` sleeps before re-checking the delayed items (client-go's
/// `maxWait` heartbeat, 10 s). Sleeps normally end exactly when the next item is due; the
/// cap only bounds the timer.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(10);

/// Used when `now + delay` cannot be represented: about thirty years.
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// Options for [`WorkQueue::with_config`] (client-go's `TypedQueueConfig`).
pub struct WorkQueueConfig<T> {
    /// The queue's name, used as the metrics label and in log events. An unnamed queue
    /// reports no metrics, as in client-go.
    pub name: String,
    /// The metrics provider for this queue; when `None`, the process-wide provider from
    /// [`metrics::set_provider`](crate::metrics::set_provider) is used, if any.
    pub metrics_provider: Option<Arc<dyn MetricsProvider>>,
    /// Where the waiting items are kept, which decides the order they are handed out in
    /// (client-go's `Queue`); first in, first out when `None` ([`FifoStorage`](crate::FifoStorage)).
    pub storage: Option<Box<dyn QueueStorage<T>>>,
}

queue_config!(WorkQueueConfig { storage });

impl<T> WorkQueueConfig<T> {
    /// An unnamed configuration without a metrics provider, with the FIFO storage.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets where the waiting items are kept (client-go's `TypedQueueConfig.Queue`), for an
    /// order other than first in, first out; see [`QueueStorage`].
    #[must_use]
    pub fn storage(mut self, storage: impl QueueStorage<T> + 'static) -> Self {
        self.storage = Some(Box::new(storage));
        self
    }
}

/// A work queue that is fair, stingy and safe for many producers and workers (client-go's
/// `workqueue.TypedInterface` and its implementation `Typed`). Named `WorkQueue`, not
/// `Queue`: client-go's `Queue` is kclient-cache's FIFO interface (`cache.Queue`) and this
/// crate's [`QueueStorage`](crate::QueueStorage) (`workqueue.Queue[T]`).
///
/// * **Fair**: items are handed out in the order in which they were first added.
/// * **Stingy**: an item added several times before a worker takes it is handed out once, and
///   an item is never handed to two workers at once.
/// * **Re-add while processing**: an item added while a worker holds it is not queued; it is
///   queued again when that worker calls [`done`](Self::done), so the latest state is always
///   processed once more.
///
/// Every item a worker gets must be passed to [`done`](Self::done) when the worker has
/// finished with it; until then the item stays in the processing set and further adds only
/// mark it dirty.
///
/// `WorkQueue` is a cheap handle (an [`Arc`] inside): clone it into every producer and worker.
/// See the [crate documentation](crate) for the dirty/processing model.
pub struct WorkQueue<T> {
    pub(crate) shared: Arc<Shared<T>>,
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.state.lock();
        f.debug_struct("WorkQueue")
            .field("name", &self.shared.name)
            .field("queued", &state.queue.len())
            .field("processing", &state.processing)
            .field("waiting", &state.waiting.len())
            .field("shutting_down", &state.shutting_down)
            .finish()
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> Default for WorkQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> WorkQueue<T> {
    /// An unnamed queue without metrics (client-go's `NewTyped`).
    pub fn new() -> Self {
        Self::with_config(WorkQueueConfig::default())
    }

    /// A queue built from `config` (client-go's `NewTypedWithConfig`).
    ///
    /// When the queue reports metrics, the unfinished-work gauges are refreshed every 500 ms by
    /// a task on the current tokio runtime, or by a small thread when there is no runtime.
    pub fn with_config(config: WorkQueueConfig<T>) -> Self {
        let provider = resolve_provider(&config.name, config.metrics_provider.as_ref());
        let metrics = provider
            .as_deref()
            .map(|provider| QueueMetrics::new(provider, &config.name));
        let has_metrics = metrics.is_some();
        let queue = Self {
            shared: Arc::new(Shared {
                name: config.name,
                provider,
                state: Mutex::new(State {
                    queue: match config.storage {
                        Some(storage) => Storage::Custom(storage),
                        None => Storage::Fifo(VecDeque::new()),
                    },
                    marks: ItemMap::default(),
                    processing: 0,
                    shutting_down: false,
                    drain: false,
                    waiting: DelayHeap::default(),
                    waiting_getters: 0,
                    metrics,
                    retries: None,
                }),
                item_ready: Notify::new(),
                drained: Notify::new(),
            }),
        };
        if has_metrics {
            let shared = Arc::downgrade(&queue.shared);
            spawn_unfinished_work_updater(move || {
                shared.upgrade().is_some_and(|s| s.update_unfinished_work())
            });
        }
        queue
    }

    /// The queue's name (empty for an unnamed queue).
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Marks `item` as needing processing (client-go's `Add`).
    ///
    /// * If the item is already waiting in the queue, nothing happens.
    /// * If a worker is processing it, it is marked dirty and queued again on
    ///   [`done`](Self::done).
    /// * Otherwise it joins the back of the queue and one waiting worker is woken.
    /// * After [`shut_down`](Self::shut_down) the item is silently ignored.
    pub fn add(&self, item: T) {
        let pushed = {
            let mut state = self.shared.state.lock();
            if state.shutting_down {
                return;
            }
            let promoted = state.promote_due_now();
            let added = usize::from(state.add(item, None));
            state.wakes_for(promoted + added)
        };
        self.shared.wake(pushed);
    }

    /// The number of items waiting to be handed out (client-go's `Len`). Items being
    /// processed and delayed items that are not due yet are not counted; an item that is
    /// being processed and was added again counts only once it is queued again by `done`.
    ///
    /// For information only: do not gate `add` or `get` on it.
    pub fn len(&self) -> usize {
        let (len, pushed) = {
            let mut state = self.shared.state.lock();
            let pushed = state.promote_due_now();
            (state.queue.len(), state.wakes_for(pushed))
        };
        self.shared.wake(pushed);
        len
    }

    /// Whether no item is waiting to be handed out (`len() == 0`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits for the next item and hands it to the caller, who must call
    /// [`done`](Self::done) with it when finished (client-go's `Get`).
    ///
    /// Returns `None` once the queue is shut down **and** no item is left in it: after
    /// [`shut_down`](Self::shut_down), workers still receive every item queued before it,
    /// then `None`, which is their signal to stop.
    ///
    /// Cancel-safe: dropping the future before it completes loses no item (an item is taken
    /// from the queue only in the same step that returns it), and a wake-up it had received
    /// passes on to another waiting worker.
    ///
    /// Cooperative, as tokio's channels are: handing out an item spends a unit of the task's
    /// [budget](tokio::task::coop), and a `get` whose task has spent it yields to the
    /// scheduler before looking. So a worker loop that always finds an item waiting (a
    /// backlog, or items that requeue themselves) and whose processing never awaits still
    /// gives its thread back; without it, such a loop would starve every other task of that
    /// thread, the informers filling the queue included. (Go's scheduler preempts a goroutine
    /// that never blocks; tokio's relies on this budget.)
    pub async fn get(&self) -> Option<T> {
        tokio::task::coop::cooperative(self.get_uncooperative()).await
    }

    /// [`get`](Self::get) without the budget.
    async fn get_uncooperative(&self) -> Option<T> {
        match self.shared.try_get(None) {
            Attempt::Item(item) => return Some(item),
            Attempt::ShutDown => return None,
            Attempt::Wait(_) => {}
        }
        let mut registration = GetterRegistration {
            shared: &self.shared,
            registered: false,
        };
        loop {
            // Enable the wake-up before looking, so that an add between the look and the
            // wait still wakes this worker.
            let mut notified = pin!(self.shared.item_ready.notified());
            notified.as_mut().enable();
            match self.shared.try_get(Some(&mut registration.registered)) {
                Attempt::Item(item) => return Some(item),
                Attempt::ShutDown => return None,
                Attempt::Wait(None) => notified.await,
                Attempt::Wait(Some(deadline)) => {
                    tokio::select! {
                        () = notified => {}
                        () = tokio::time::sleep_until(deadline) => {}
                    }
                }
            }
        }
    }

    /// Takes the next item if one is waiting, without waiting for one: the non-blocking
    /// [`get`](Self::get). As with `get`, the caller must call [`done`](Self::done) with the
    /// item when finished. Delayed items that are due are queued first, so it sees exactly
    /// what a `get` would.
    ///
    /// # Errors
    ///
    /// [`TryGetError::Empty`] when no item is waiting (one may come later), and
    /// [`TryGetError::ShutDown`] when the queue is shut down and empty: where `get` returns
    /// `None`.
    pub fn try_get(&self) -> Result<T, TryGetError> {
        match self.shared.try_get(None) {
            Attempt::Item(item) => Ok(item),
            Attempt::ShutDown => Err(TryGetError::ShutDown),
            Attempt::Wait(_) => Err(TryGetError::Empty),
        }
    }

    /// Marks `item` as finished (client-go's `Done`). If it was added again while being
    /// processed, it is queued again now (this happens even after shut down, as in
    /// client-go). When the last item being processed is done, a pending
    /// [`shut_down_with_drain`](Self::shut_down_with_drain) returns.
    ///
    /// Calling `done` for an item that is not being processed does nothing (and logs a
    /// warning). client-go would instead queue a second copy of an item that is already
    /// queued, breaking its own invariant; here the misuse cannot corrupt the queue.
    pub fn done(&self, item: &T) {
        let (outcome, pushed, drained) = {
            let mut state = self.shared.state.lock();
            let promoted = state.promote_due_now();
            let outcome = state.done(item);
            let pushed = state.wakes_for(promoted + usize::from(outcome == DoneOutcome::Requeued));
            let drained = state.drain && state.processing == 0;
            (outcome, pushed, drained)
        };
        self.shared.wake(pushed);
        if drained {
            self.shared.drained.notify_waiters();
        }
        if outcome == DoneOutcome::NotProcessing {
            tracing::warn!(
                queue = %self.shared.name,
                "workqueue: done called for an item that is not being processed; ignored"
            );
        }
    }

    /// Stops the queue (client-go's `ShutDown`): from now on `add` and `add_after` ignore
    /// new items and delayed items that are not due yet are dropped. Items already queued
    /// are still handed out by [`get`](Self::get), which returns `None` once the queue is
    /// empty. Items being processed may still be queued again by `done` if they were added
    /// again before the shut down. Also ends a pending
    /// [`shut_down_with_drain`](Self::shut_down_with_drain). Calling it again is harmless.
    pub fn shut_down(&self) {
        self.shared.begin_shut_down(false);
        self.shared.drained.notify_waiters();
    }

    /// Stops the queue like [`shut_down`](Self::shut_down), then waits until every item
    /// handed out by `get` has been marked [`done`](Self::done) (client-go's
    /// `ShutDownWithDrain`).
    ///
    /// As in client-go, it waits for the items **being processed**, not for items still
    /// queued: workers keep draining those through `get` as usual. So it also returns when
    /// `done` moves a dirty item back into the queue and leaves nothing in processing; that
    /// item is still handed out to a worker still calling `get`. A call to `shut_down`
    /// while it waits makes it return at once. If a worker never calls `done`, this never
    /// returns; bound it with `tokio::time::timeout` if that can happen.
    pub async fn shut_down_with_drain(&self) {
        self.shared.begin_shut_down(true);
        loop {
            let mut notified = pin!(self.shared.drained.notified());
            notified.as_mut().enable();
            {
                let state = self.shared.state.lock();
                if state.processing == 0 || !state.drain {
                    return;
                }
            }
            notified.await;
        }
    }

    /// Whether [`shut_down`](Self::shut_down) or
    /// [`shut_down_with_drain`](Self::shut_down_with_drain) has been called (client-go's
    /// `ShuttingDown`).
    pub fn shutting_down(&self) -> bool {
        self.shared.state.lock().shutting_down
    }
}

/// Why [`WorkQueue::try_get`] returned no item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TryGetError {
    /// No item is waiting now; one may be added later.
    Empty,
    /// The queue is shut down and empty: no item will come (where [`WorkQueue::get`] returns
    /// `None`).
    ShutDown,
}

impl fmt::Display for TryGetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TryGetError::Empty => "the work queue is empty",
            TryGetError::ShutDown => "the work queue is shut down",
        })
    }
}

impl std::error::Error for TryGetError {}

/// What a worker's look at the queue found.
enum Attempt<T> {
    /// An item, now being processed by the caller.
    Item(T),
    /// The queue is shut down and empty.
    ShutDown,
    /// Nothing yet; sleep until woken or until the deadline (the next delayed item).
    Wait(Option<Instant>),
}

/// Keeps a waiting `get` counted in `waiting_getters`, and uncounts it if the `get` future
/// is dropped while waiting.
struct GetterRegistration<'a, T> {
    shared: &'a Shared<T>,
    registered: bool,
}

impl<T> Drop for GetterRegistration<'_, T> {
    fn drop(&mut self) {
        if self.registered {
            self.shared.state.lock().waiting_getters -= 1;
        }
    }
}

/// What `done` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DoneOutcome {
    /// The item left the processing set.
    Released,
    /// The item was dirty and went back into the queue.
    Requeued,
    /// The item was not being processed.
    NotProcessing,
}

/// Where an item known to the queue stands. Client-go keeps a `dirty` and a `processing`
/// set; the three marks are their three legal combinations (an item that is dirty and not
/// processing is exactly an item in the queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    /// Dirty, not processing: waiting in the queue.
    Queued,
    /// Processing, not dirty.
    Processing,
    /// Processing and dirty: added again while a worker holds it.
    ProcessingDirty,
}

/// What every handle of one queue shares.
pub(crate) struct Shared<T> {
    name: String,
    provider: Option<Arc<dyn MetricsProvider>>,
    state: Mutex<State<T>>,
    /// Wakes workers waiting in `get`: `notify_one` per item queued, `notify_waiters` when
    /// the next delayed item moved earlier or the queue shuts down.
    item_ready: Notify,
    /// Wakes `shut_down_with_drain` when processing empties or the drain is cancelled.
    drained: Notify,
}

impl<T: Clone + Eq + Hash> Shared<T> {
    /// Wakes `count` waiting workers (a count from `State::wakes_for`).
    fn wake(&self, count: usize) {
        for _ in 0..count {
            self.item_ready.notify_one();
        }
    }

    /// One look at the queue by a worker. `registration` is the worker's flag of being
    /// counted in `waiting_getters`; `None` for a first look that never waits.
    fn try_get(&self, registration: Option<&mut bool>) -> Attempt<T> {
        let (attempt, pushed) = {
            let mut state = self.state.lock();
            let now = if state.waiting.is_empty() {
                None
            } else {
                Some(Instant::now())
            };
            let pushed = now.map_or(0, |now| state.promote_due(now));
            let attempt = if let Some(item) = state.pop(&self.name) {
                Attempt::Item(item)
            } else if state.shutting_down {
                Attempt::ShutDown
            } else {
                let deadline = match (now, state.waiting.next_ready_at()) {
                    (Some(now), Some(next)) => Some(next.min(now + MAX_WAIT)),
                    _ => None,
                };
                Attempt::Wait(deadline)
            };
            if let Some(registered) = registration {
                let waits = matches!(attempt, Attempt::Wait(_));
                if waits && !*registered {
                    state.waiting_getters += 1;
                } else if !waits && *registered {
                    state.waiting_getters -= 1;
                }
                *registered = waits;
            }
            (attempt, state.wakes_for(pushed))
        };
        // The caller took one of the pushed items (or an older one, whose wake-up is then
        // spare): waking one worker per pushed item never under-wakes.
        self.wake(pushed);
        attempt
    }

    fn begin_shut_down(&self, drain: bool) {
        let pushed = {
            let mut state = self.state.lock();
            let pushed = state.promote_due_now();
            state.shutting_down = true;
            state.drain = drain;
            state.waiting.clear();
            state.wakes_for(pushed)
        };
        self.wake(pushed);
        self.item_ready.notify_waiters();
        tracing::debug!(queue = %self.name, drain, "workqueue: shutting down");
    }

    /// The `add_after` of the delaying layer; see `DelayingQueue::add_after`.
    pub(crate) fn add_after(&self, item: T, delay: Duration) {
        let (pushed, head_moved, anyone_waiting) = {
            let mut state = self.state.lock();
            if state.shutting_down {
                return;
            }
            if let Some(retries) = &state.retries {
                retries.inc();
            }
            let (pushed, head_moved) = if delay.is_zero() {
                let promoted = state.promote_due_now();
                (promoted + usize::from(state.add(item, None)), false)
            } else {
                let now = Instant::now();
                let pushed = state.promote_due(now);
                match now
                    .checked_add(delay)
                    .or_else(|| now.checked_add(FAR_FUTURE))
                {
                    Some(ready_at) => (pushed, state.waiting.insert(item, ready_at)),
                    // Not representable even thirty years out: the item would never be due.
                    None => (pushed, false),
                }
            };
            (
                state.wakes_for(pushed),
                head_moved,
                state.waiting_getters > 0,
            )
        };
        self.wake(pushed);
        if head_moved && anyone_waiting {
            // Sleeping workers re-arm their timers for the new first ready time.
            self.item_ready.notify_waiters();
        }
    }

    /// Gives the queue its retries counter (delaying and rate-limiting queues only), made by
    /// the queue's provider if it reports metrics.
    pub(crate) fn enable_retries_metric(&self) {
        let Some(provider) = self.provider.as_deref() else {
            return;
        };
        let mut state = self.state.lock();
        if state.retries.is_none() {
            state.retries = Some(provider.new_retries_metric(&self.name));
        }
    }

    /// One tick of the unfinished-work updater; returns whether to keep ticking.
    fn update_unfinished_work(&self) -> bool {
        let pushed = {
            let mut state = self.state.lock();
            if state.shutting_down {
                return false;
            }
            let now = Instant::now();
            let pushed = if state.waiting.is_empty() {
                0
            } else {
                state.promote_due(now)
            };
            if let Some(metrics) = &state.metrics {
                metrics.update_unfinished_work(now);
            }
            state.wakes_for(pushed)
        };
        self.wake(pushed);
        true
    }
}

/// The queue proper: client-go's `queue`, `dirty` and `processing`, plus the waiting room of
/// the delaying layer and the metrics.
struct State<T> {
    /// Items waiting to be handed out, in the storage's order. Each is marked `Queued`.
    queue: Storage<T>,
    /// Every item that is dirty or processing, and which.
    marks: ItemMap<T, Mark>,
    /// How many items are marked `Processing` or `ProcessingDirty`.
    processing: usize,
    shutting_down: bool,
    /// Set by `shut_down_with_drain`, cleared by `shut_down`.
    drain: bool,
    /// Delayed items that are not due yet.
    waiting: DelayHeap<T>,
    /// How many `get` calls are between finding the queue empty and their next look. While
    /// it is zero nobody can be parked, so queuing an item skips the wake-up (an atomic
    /// read-modify-write on a cache line every producer and worker touches).
    waiting_getters: usize,
    metrics: Option<QueueMetrics<T>>,
    retries: Option<Box<dyn CounterMetric>>,
}

impl<T> State<T> {
    /// How many wake-ups `pushed` newly queued items call for: one each, or none when no
    /// worker waits. A worker registers in `waiting_getters` under the lock in the same step
    /// in which it finds the queue empty, after enabling its wake-up, so an item queued
    /// while the count is zero is seen by that worker's look.
    fn wakes_for(&self, pushed: usize) -> usize {
        if self.waiting_getters > 0 {
            pushed
        } else {
            0
        }
    }
}

impl<T: Clone + Eq + Hash> State<T> {
    /// Client-go's `Add` without the shut-down check. `added_at` is when the item counts as
    /// added for the latency metric (a delayed item counts from its ready time); `None` means
    /// now. Returns whether the item entered the queue.
    fn add(&mut self, item: T, added_at: Option<Instant>) -> bool {
        match self.marks.entry(item) {
            Entry::Occupied(mut entry) => {
                // Queued or ProcessingDirty: already dirty, nothing to do but tell the
                // storage of a queued one (client-go's `Touch`).
                if *entry.get() == Mark::Queued {
                    self.queue.touch(entry.key());
                } else if *entry.get() == Mark::Processing {
                    *entry.get_mut() = Mark::ProcessingDirty;
                    if let Some(metrics) = self.metrics.as_mut() {
                        metrics.add(entry.key(), added_at.unwrap_or_else(Instant::now));
                    }
                }
                false
            }
            Entry::Vacant(entry) => {
                if let Some(metrics) = self.metrics.as_mut() {
                    metrics.add(entry.key(), added_at.unwrap_or_else(Instant::now));
                }
                self.queue.push(entry.key().clone());
                entry.insert(Mark::Queued);
                true
            }
        }
    }

    /// Client-go's `Get` once an item is there: the head moves from dirty to processing.
    /// An item the storage hands out that is not marked queued (a storage that broke its
    /// contract by handing an item out twice, or one it was never given) is dropped.
    fn pop(&mut self, queue_name: &str) -> Option<T> {
        let item = loop {
            let item = self.queue.pop()?;
            match self.marks.get_mut(&item) {
                Some(mark) if *mark == Mark::Queued => {
                    *mark = Mark::Processing;
                    break item;
                }
                _ => tracing::warn!(
                    queue = %queue_name,
                    "workqueue: the queue storage handed out an item that is not waiting; dropped"
                ),
            }
        };
        self.processing += 1;
        if let Some(metrics) = self.metrics.as_mut() {
            metrics.get(&item, Instant::now());
        }
        Some(item)
    }

    /// Client-go's `Done`, except that an item that is not being processed is left alone.
    fn done(&mut self, item: &T) -> DoneOutcome {
        if let Some(metrics) = self.metrics.as_mut() {
            metrics.done(item, Instant::now());
        }
        match self.marks.remove_entry(item) {
            Some((_, Mark::Processing)) => {
                self.processing -= 1;
                DoneOutcome::Released
            }
            Some((key, Mark::ProcessingDirty)) => {
                self.processing -= 1;
                self.queue.push(key.clone());
                self.marks.insert(key, Mark::Queued);
                DoneOutcome::Requeued
            }
            Some((key, Mark::Queued)) => {
                self.marks.insert(key, Mark::Queued);
                DoneOutcome::NotProcessing
            }
            None => DoneOutcome::NotProcessing,
        }
    }

    /// Moves every delayed item due at `now` into the queue, earliest first (client-go's
    /// waiting loop). Returns how many entered the queue.
    fn promote_due(&mut self, now: Instant) -> usize {
        let mut pushed = 0;
        while let Some((item, ready_at)) = self.waiting.pop_due(now) {
            pushed += usize::from(self.add(item, Some(ready_at)));
        }
        pushed
    }

    /// [`promote_due`](Self::promote_due) at the current time, skipping the clock read when
    /// nothing is waiting.
    fn promote_due_now(&mut self) -> usize {
        if self.waiting.is_empty() {
            0
        } else {
            self.promote_due(Instant::now())
        }
    }
}

#[cfg(test)]
mod tests {
    use std::pin::pin;
    use std::task::{Context, Poll};

    use super::*;

    fn waiting_getters<T>(q: &WorkQueue<T>) -> usize {
        q.shared.state.lock().waiting_getters
    }

    /// Checks the dirty/processing invariants on the internal state.
    fn assert_invariants<T: Clone + Eq + Hash + fmt::Debug>(q: &WorkQueue<T>) {
        let state = q.shared.state.lock();
        let queued = state.marks.values().filter(|m| **m == Mark::Queued).count();
        let processing = state.marks.len() - queued;
        assert_eq!(queued, state.queue.len(), "queue and Queued marks agree");
        assert_eq!(processing, state.processing);
        for item in state.queue.fifo_items().into_iter().flatten() {
            assert_eq!(state.marks.get(item), Some(&Mark::Queued), "{item:?}");
        }
    }

    fn poll_once<F: std::future::Future>(fut: std::pin::Pin<&mut F>) -> Poll<F::Output> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        fut.poll(&mut cx)
    }

    #[test]
    fn marks_follow_the_lifecycle() {
        let q: WorkQueue<&str> = WorkQueue::new();
        q.add("a");
        q.add("b");
        assert_invariants(&q);
        let mut get = pin!(q.get());
        assert_eq!(poll_once(get.as_mut()), Poll::Ready(Some("a")));
        assert_eq!(
            q.shared.state.lock().marks.get("a"),
            Some(&Mark::Processing)
        );
        q.add("a");
        assert_eq!(
            q.shared.state.lock().marks.get("a"),
            Some(&Mark::ProcessingDirty)
        );
        assert_invariants(&q);
        q.done(&"a");
        assert_eq!(q.shared.state.lock().marks.get("a"), Some(&Mark::Queued));
        assert_invariants(&q);
        let mut get = pin!(q.get());
        assert_eq!(poll_once(get.as_mut()), Poll::Ready(Some("b")));
        q.done(&"b");
        assert!(!q.shared.state.lock().marks.contains_key("b"), "released");
        assert_invariants(&q);
    }

    #[test]
    fn a_dropped_waiting_get_is_uncounted() {
        let q: WorkQueue<u8> = WorkQueue::new();
        {
            let mut get = pin!(q.get());
            assert!(poll_once(get.as_mut()).is_pending());
            assert_eq!(waiting_getters(&q), 1);
        }
        assert_eq!(waiting_getters(&q), 0);
    }

    #[test]
    fn a_served_get_is_uncounted() {
        let q: WorkQueue<u8> = WorkQueue::new();
        let mut get = pin!(q.get());
        assert!(poll_once(get.as_mut()).is_pending());
        assert_eq!(waiting_getters(&q), 1);
        q.add(1);
        assert_eq!(poll_once(get.as_mut()), Poll::Ready(Some(1)));
        assert_eq!(waiting_getters(&q), 0);
        let mut get = pin!(q.get());
        assert!(poll_once(get.as_mut()).is_pending());
        q.shut_down();
        assert_eq!(poll_once(get.as_mut()), Poll::Ready(None));
        assert_eq!(waiting_getters(&q), 0);
    }

    #[test]
    fn the_fast_path_never_registers() {
        let q: WorkQueue<u8> = WorkQueue::new();
        q.add(1);
        let mut get = pin!(q.get());
        assert_eq!(poll_once(get.as_mut()), Poll::Ready(Some(1)));
        assert_eq!(waiting_getters(&q), 0);
    }

    /// A random mix of operations keeps the internal state consistent.
    #[test]
    fn invariants_hold_under_random_operations() {
        let q: WorkQueue<u8> = WorkQueue::new();
        let mut held: Vec<u8> = Vec::new();
        let mut rng = 0x1234_5678_9ABC_DEF1u64;
        for _ in 0..20_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            match rng % 3 {
                0 => q.add((rng >> 8) as u8 % 32),
                1 => {
                    let mut get = pin!(q.get());
                    if let Poll::Ready(Some(item)) = poll_once(get.as_mut()) {
                        assert!(!held.contains(&item), "{item} handed out twice");
                        held.push(item);
                    }
                }
                _ => {
                    if !held.is_empty() {
                        let item = held.swap_remove((rng >> 8) as usize % held.len());
                        q.done(&item);
                    }
                }
            }
            assert_invariants(&q);
        }
        assert_eq!(waiting_getters(&q), 0);
    }
}
