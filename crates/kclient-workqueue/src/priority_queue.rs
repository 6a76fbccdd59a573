//! [`PriorityQueue`]: controller-runtime's priority queue (`priorityqueue.PriorityQueue`, a
//! controller's default queue since controller-runtime v0.23).
//!
//! Each item is in the queue at most once. Adding an item that is already there keeps the
//! **highest** of the two priorities and the **soonest** of the two ready times (an item
//! added without a delay is ready at once): so an event for a key replaces a requeue waiting
//! for it, and a real change overtakes a low-priority resync of the same key. Ready items are
//! handed out by priority, highest first, and within a priority first in, first out (an item
//! whose priority was raised, or whose delay has passed, counts as added at that moment).
//! An item handed out is not handed out again before its [`done`](PriorityQueue::done), but
//! it may wait in the queue meanwhile.
//!
//! It differs from the [`RateLimitingQueue`](crate::RateLimitingQueue) (client-go's
//! dirty/processing queue) in those two merges — there, an item waiting for its delay and the
//! same item added at once are two separate adds, and the delayed one comes back after the
//! event was handled — and, as controller-runtime's, in its shutdown: once shut down, `get`
//! returns `None` at once and adds are ignored, whatever is still waiting.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::fmt;
use std::hash::Hash;
use std::pin::pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics::{
    resolve_provider, spawn_unfinished_work_updater, CounterMetric, MetricsProvider, QueueMetrics,
};
use crate::queue::TryGetError;
use crate::rate_limiter::{ItemExponentialFailureRateLimiter, TypedRateLimiter};
use crate::ItemMap;

/// Used when `now + delay` cannot be represented: about thirty years.
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// How items are added to a [`PriorityQueue`] (controller-runtime's `priorityqueue.AddOpts`).
///
/// ```
/// use std::time::Duration;
/// use kclient_workqueue::AddOpts;
///
/// let opts = AddOpts::new().after(Duration::from_secs(10)).priority(5);
/// assert_eq!(opts, AddOpts { after: Duration::from_secs(10), rate_limited: false, priority: Some(5) });
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct AddOpts {
    /// How long the item waits before it can be handed out; zero for at once.
    pub after: Duration,
    /// Whether the rate limiter's delay applies (the item's failure counts); with `after`
    /// too, the shorter of the two delays.
    pub rate_limited: bool,
    /// The item's priority; higher is served first. `None` counts as 0, and an item already
    /// queued keeps its priority when that is higher.
    pub priority: Option<i32>,
}

impl AddOpts {
    /// Ready at once, not rate-limited, priority 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same options with the delay `after`.
    #[must_use]
    pub fn after(mut self, after: Duration) -> Self {
        self.after = after;
        self
    }

    /// The same options, rate-limited.
    #[must_use]
    pub fn rate_limited(mut self) -> Self {
        self.rate_limited = true;
        self
    }

    /// The same options with the priority `priority`.
    #[must_use]
    pub fn priority(mut self, priority: i32) -> Self {
        self.priority = Some(priority);
        self
    }
}

/// Options for [`PriorityQueue::with_config`] (controller-runtime's `priorityqueue.Opts`).
pub struct PriorityQueueConfig<T> {
    /// The queue's name, used as the metrics label. An unnamed queue reports no metrics.
    pub name: String,
    /// The metrics provider for this queue; when `None`, the process-wide provider is used,
    /// if any. The depth is reported per priority
    /// ([`MetricsProvider::new_depth_with_priority_metric`]).
    pub metrics_provider: Option<Arc<dyn MetricsProvider>>,
    /// The limiter of rate-limited adds; when `None`, per-item exponential backoff from 5 ms
    /// to 1000 s (controller-runtime's default for this queue).
    pub rate_limiter: Option<Box<dyn TypedRateLimiter<T>>>,
}

queue_config!(PriorityQueueConfig { rate_limiter });

impl<T> PriorityQueueConfig<T> {
    /// An unnamed configuration with the default rate limiter.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the rate limiter of rate-limited adds.
    #[must_use]
    pub fn rate_limiter(mut self, limiter: impl TypedRateLimiter<T> + 'static) -> Self {
        self.rate_limiter = Some(Box::new(limiter));
        self
    }
}

/// A de-duplicating queue that hands out the highest-priority ready item first
/// (controller-runtime's `priorityqueue.PriorityQueue`); see the module `priority_queue` for its
/// rules. A cheap handle: clone it into every event handler and worker.
///
/// ```
/// use std::time::Duration;
/// use kclient_workqueue::{AddOpts, PriorityQueue};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let queue = PriorityQueue::new();
/// // A requeue in ten seconds, then an event for the same key: the event wins.
/// queue.add_after("default/web", Duration::from_secs(10));
/// queue.add("default/web");
/// // A resync at low priority is served after a real change.
/// queue.add_with_opts(AddOpts::new().priority(-100), ["default/db"]);
/// queue.add("default/cache");
///
/// let start = tokio::time::Instant::now();
/// assert_eq!(queue.get_with_priority().await, Some(("default/web", 0)));
/// assert_eq!(queue.get_with_priority().await, Some(("default/cache", 0)));
/// assert_eq!(queue.get_with_priority().await, Some(("default/db", -100)));
/// assert_eq!(start.elapsed(), Duration::ZERO);
/// # }
/// ```
pub struct PriorityQueue<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for PriorityQueue<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T> fmt::Debug for PriorityQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.state.lock();
        f.debug_struct("PriorityQueue")
            .field("ready", &state.ready.len())
            .field("waiting", &state.waiting.len())
            .field("handed_out", &state.handed_out.len())
            .field("shutting_down", &state.shutting_down)
            .finish()
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> Default for PriorityQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> PriorityQueue<T> {
    /// An unnamed queue (no metrics) with the default rate limiter.
    pub fn new() -> Self {
        Self::with_config(PriorityQueueConfig::new())
    }

    /// A queue configured by `config`.
    pub fn with_config(config: PriorityQueueConfig<T>) -> Self {
        let provider = resolve_provider(&config.name, config.metrics_provider.as_ref());
        let metrics = provider
            .as_deref()
            .map(|provider| QueueMetrics::with_priorities(provider, &config.name));
        let retries = provider
            .as_deref()
            .map(|provider| provider.new_retries_metric(&config.name));
        let rate_limiter = config.rate_limiter.unwrap_or_else(|| {
            Box::new(ItemExponentialFailureRateLimiter::new(
                Duration::from_millis(5),
                Duration::from_secs(1000),
            ))
        });
        let with_metrics = metrics.is_some();
        let queue = Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    items: ItemMap::default(),
                    ready: BTreeMap::new(),
                    waiting: BTreeMap::new(),
                    handed_out: ItemMap::default(),
                    added_counter: 0,
                    shutting_down: false,
                    metrics,
                    retries,
                }),
                changed: Notify::new(),
                drained: Notify::new(),
                rate_limiter,
            }),
        };
        if with_metrics {
            let shared: Weak<Shared<T>> = Arc::downgrade(&queue.shared);
            spawn_unfinished_work_updater(move || {
                shared.upgrade().is_some_and(|s| s.update_unfinished_work())
            });
        }
        queue
    }

    /// Adds `items` as `opts` says (controller-runtime's `AddWithOpts`). An item already in
    /// the queue keeps the higher priority and the sooner ready time; an item being processed
    /// is queued again, to be handed out after its [`done`](Self::done). Ignored once the
    /// queue is shut down.
    pub fn add_with_opts(&self, opts: AddOpts, items: impl IntoIterator<Item = T>) {
        let changed = {
            let mut state = self.shared.state.lock();
            if state.shutting_down {
                return;
            }
            let now = Instant::now();
            let mut changed = false;
            for item in items {
                let ready_at = self.ready_at(&opts, &item, now);
                if ready_at.is_some() {
                    if let Some(retries) = &state.retries {
                        retries.inc();
                    }
                }
                state.add(item, ready_at, opts.priority.unwrap_or(0), now);
                changed = true;
            }
            changed
        };
        if changed {
            self.shared.changed.notify_waiters();
        }
    }

    /// When an item added with `opts` is ready; `None` for at once.
    fn ready_at(&self, opts: &AddOpts, item: &T, now: Instant) -> Option<Instant> {
        let mut after = opts.after;
        if opts.rate_limited {
            let limited = self.shared.rate_limiter.when(item);
            if after.is_zero() || limited < after {
                after = limited;
            }
        }
        (!after.is_zero()).then(|| now.checked_add(after).unwrap_or(now + FAR_FUTURE))
    }

    /// Adds `item`, ready at once, at priority 0.
    pub fn add(&self, item: T) {
        self.add_with_opts(AddOpts::new(), [item]);
    }

    /// Adds `item`, ready once `delay` has passed, at priority 0.
    pub fn add_after(&self, item: T, delay: Duration) {
        self.add_with_opts(AddOpts::new().after(delay), [item]);
    }

    /// Adds `item` after the rate limiter's delay, at priority 0.
    pub fn add_rate_limited(&self, item: T) {
        self.add_with_opts(AddOpts::new().rate_limited(), [item]);
    }

    /// Waits for the highest-priority ready item that is not being processed, and hands it
    /// out with its priority (controller-runtime's `GetWithPriority`); `None` once the queue
    /// is shut down. The caller must call [`done`](Self::done) with it when finished.
    ///
    /// Like [`WorkQueue::get`](crate::WorkQueue::get), it spends tokio's cooperative budget,
    /// so a worker that always finds an item waiting still gives its thread back.
    pub async fn get_with_priority(&self) -> Option<(T, i32)> {
        tokio::task::coop::cooperative(self.get_uncooperative()).await
    }

    /// [`get_with_priority`](Self::get_with_priority) without the budget.
    async fn get_uncooperative(&self) -> Option<(T, i32)> {
        loop {
            // Enable the wake-up before looking, so that an add between the look and the
            // wait still wakes this worker.
            let mut changed = pin!(self.shared.changed.notified());
            changed.as_mut().enable();
            let attempt = self.shared.state.lock().take_next(Instant::now());
            match attempt {
                Attempt::Item(item, priority) => return Some((item, priority)),
                Attempt::ShutDown => return None,
                Attempt::Wait(None) => changed.await,
                Attempt::Wait(Some(deadline)) => {
                    tokio::select! {
                        () = changed => {}
                        () = tokio::time::sleep_until(deadline) => {}
                    }
                }
            }
        }
    }

    /// [`get_with_priority`](Self::get_with_priority) without the priority.
    pub async fn get(&self) -> Option<T> {
        self.get_with_priority().await.map(|(item, _)| item)
    }

    /// Takes the next item if one is ready, without waiting.
    ///
    /// # Errors
    ///
    /// [`TryGetError::Empty`] when no item is ready, [`TryGetError::ShutDown`] once the
    /// queue is shut down.
    pub fn try_get(&self) -> Result<T, TryGetError> {
        match self.shared.state.lock().take_next(Instant::now()) {
            Attempt::Item(item, _) => Ok(item),
            Attempt::ShutDown => Err(TryGetError::ShutDown),
            Attempt::Wait(_) => Err(TryGetError::Empty),
        }
    }

    /// Marks `item` as finished: if it was added again meanwhile, it can be handed out now.
    pub fn done(&self, item: &T) {
        let drained = {
            let mut state = self.shared.state.lock();
            if state.handed_out.remove(item).is_none() {
                drop(state);
                tracing::warn!("workqueue: done called for an item that is not being processed");
                return;
            }
            if let Some(metrics) = &mut state.metrics {
                metrics.done(item, Instant::now());
            }
            state.shutting_down && state.handed_out.is_empty()
        };
        self.shared.changed.notify_waiters();
        if drained {
            self.shared.drained.notify_waiters();
        }
    }

    /// Clears `item`'s failure history in the rate limiter.
    pub fn forget(&self, item: &T) {
        self.shared.rate_limiter.forget(item);
    }

    /// How many failures the rate limiter has recorded for `item`.
    pub fn num_requeues(&self, item: &T) -> usize {
        self.shared.rate_limiter.num_requeues(item)
    }

    /// The number of items ready to be handed out, those being processed included; items
    /// still waiting for their delay are not counted (controller-runtime's `Len`).
    pub fn len(&self) -> usize {
        let mut state = self.shared.state.lock();
        state.promote_due(Instant::now());
        state.ready.len()
    }

    /// Whether no item is ready.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops the queue: every `get` returns `None` from now on, and adds are ignored.
    pub fn shut_down(&self) {
        self.shared.state.lock().shutting_down = true;
        self.shared.changed.notify_waiters();
    }

    /// [`shut_down`](Self::shut_down), then waits until every item handed out is
    /// [`done`](Self::done).
    pub async fn shut_down_with_drain(&self) {
        loop {
            let mut drained = pin!(self.shared.drained.notified());
            drained.as_mut().enable();
            {
                let mut state = self.shared.state.lock();
                state.shutting_down = true;
                if state.handed_out.is_empty() {
                    break;
                }
            }
            self.shared.changed.notify_waiters();
            drained.await;
        }
        self.shared.changed.notify_waiters();
    }

    /// Whether the queue is shut down.
    pub fn shutting_down(&self) -> bool {
        self.shared.state.lock().shutting_down
    }
}

/// What every handle of one queue shares.
struct Shared<T> {
    state: Mutex<State<T>>,
    /// Signalled when an item may have become available, and at shutdown.
    changed: Notify,
    /// Signalled when the last item handed out is done after shutdown.
    drained: Notify,
    rate_limiter: Box<dyn TypedRateLimiter<T>>,
}

impl<T: Clone + Eq + Hash> Shared<T> {
    /// One tick of the unfinished-work updater; whether to keep ticking.
    fn update_unfinished_work(&self) -> bool {
        let state = self.state.lock();
        if state.shutting_down {
            return false;
        }
        if let Some(metrics) = &state.metrics {
            metrics.update_unfinished_work(Instant::now());
        }
        true
    }
}

/// An item in the queue: its priority, its place in its order, and when it is ready
/// (`None`: it is).
#[derive(Debug, Clone, Copy)]
struct Entry {
    priority: i32,
    counter: u64,
    ready_at: Option<Instant>,
}

/// The outcome of one look at the queue.
enum Attempt<T> {
    Item(T, i32),
    ShutDown,
    /// Nothing to hand out; the next ready time of a waiting item, if any.
    Wait(Option<Instant>),
}

/// The queue proper.
struct State<T> {
    /// Every item in the queue, ready or waiting (not those only being processed).
    items: ItemMap<T, Entry>,
    /// The ready items, highest priority first, then by counter.
    ready: BTreeMap<(Reverse<i32>, u64), T>,
    /// The items waiting for their ready time, soonest first.
    waiting: BTreeMap<(Instant, u64), T>,
    /// The items handed out and not yet done.
    handed_out: ItemMap<T, ()>,
    /// The next counter: the order of adds, for first in, first out within a priority.
    added_counter: u64,
    shutting_down: bool,
    metrics: Option<QueueMetrics<T>>,
    retries: Option<Box<dyn CounterMetric>>,
}

impl<T: Clone + Eq + Hash> State<T> {
    fn next_counter(&mut self) -> u64 {
        let counter = self.added_counter;
        self.added_counter += 1;
        counter
    }

    /// Adds `item`, ready at `ready_at`, at `priority`, merging with its entry if queued.
    fn add(&mut self, item: T, ready_at: Option<Instant>, priority: i32, now: Instant) {
        let Some(&old) = self.items.get(&item) else {
            let entry = Entry {
                priority,
                counter: self.next_counter(),
                ready_at,
            };
            self.insert(item, entry, now);
            return;
        };
        self.remove_from_order(&old);
        let mut entry = old;
        entry.ready_at = match (old.ready_at, ready_at) {
            (Some(old), Some(new)) => Some(old.min(new)),
            _ => None,
        };
        if priority > old.priority {
            entry.priority = priority;
            entry.counter = self.next_counter();
            if old.ready_at.is_none() {
                if let Some(metrics) = &self.metrics {
                    metrics.reprioritize(old.priority, priority);
                }
            }
        }
        if old.ready_at.is_none() {
            self.place(item, entry);
        } else {
            self.insert(item, entry, now);
        }
    }

    /// Puts `entry` in its order and, when it is ready, counts it as added at `now`.
    fn insert(&mut self, item: T, entry: Entry, now: Instant) {
        if entry.ready_at.is_none() {
            if let Some(metrics) = &mut self.metrics {
                metrics.add_at_priority(&item, now, entry.priority);
            }
        }
        self.place(item, entry);
    }

    /// Puts `entry` in the items and in the order it belongs to.
    fn place(&mut self, item: T, entry: Entry) {
        match entry.ready_at {
            None => self
                .ready
                .insert((Reverse(entry.priority), entry.counter), item.clone()),
            Some(at) => self.waiting.insert((at, entry.counter), item.clone()),
        };
        self.items.insert(item, entry);
    }

    /// Takes `entry` out of its order (not out of the items).
    fn remove_from_order(&mut self, entry: &Entry) {
        match entry.ready_at {
            None => self.ready.remove(&(Reverse(entry.priority), entry.counter)),
            Some(at) => self.waiting.remove(&(at, entry.counter)),
        };
    }

    /// Moves the waiting items whose time has come to the ready ones, each counted as added
    /// at its ready time and placed after the items already ready at its priority.
    fn promote_due(&mut self, now: Instant) {
        while let Some(entry) = self.waiting.first_entry() {
            let (at, _) = *entry.key();
            if at > now {
                break;
            }
            let item = entry.remove();
            let counter = self.next_counter();
            let Some(entry) = self.items.get_mut(&item) else {
                continue;
            };
            entry.ready_at = None;
            entry.counter = counter;
            let entry = *entry;
            if let Some(metrics) = &mut self.metrics {
                metrics.add_at_priority(&item, at, entry.priority);
            }
            self.ready
                .insert((Reverse(entry.priority), entry.counter), item);
        }
    }

    /// Hands out the first ready item not being processed.
    fn take_next(&mut self, now: Instant) -> Attempt<T> {
        if self.shutting_down {
            return Attempt::ShutDown;
        }
        self.promote_due(now);
        let found = self
            .ready
            .iter()
            .find(|(_, item)| !self.handed_out.contains_key(*item))
            .map(|(key, _)| *key);
        let Some(key) = found else {
            return Attempt::Wait(self.waiting.keys().next().map(|(at, _)| *at));
        };
        let Some(item) = self.ready.remove(&key) else {
            return Attempt::Wait(None);
        };
        self.items.remove(&item);
        let priority = key.0 .0;
        if let Some(metrics) = &mut self.metrics {
            metrics.get_at_priority(&item, now, priority);
        }
        self.handed_out.insert(item.clone(), ());
        Attempt::Item(item, priority)
    }
}
