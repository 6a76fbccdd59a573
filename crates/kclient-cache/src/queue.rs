//! [`Queue`]: what the informer pops deltas from, a [`DeltaFifo`](crate::DeltaFifo) or a
//! [`RealFifo`](crate::RealFifo) (client-go's `Queue` interface), with the errors of a pop.
//!
//! A pop waits until there is something to process, takes it out of the queue, and runs the
//! process function on it **without holding the queue's lock**: producers (the reflector)
//! and readers are never blocked by a slow consumer. (client-go runs it under the lock until
//! 1.36's `UnlockWhileProcessingFIFO`; each FIFO's docs say how it keeps the guarantees the
//! lock gave.) A closed queue still hands out what it holds, then fails with
//! [`PopError::Closed`], like a closed Go channel.

use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use kclient_core::BoxError;
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::delta::{Delta, Deltas};
use crate::metrics::CacheMetrics;
use crate::store::Store;

/// What a pop's process function can answer besides success.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// Put the deltas back into the queue and report the error (client-go's `ErrRequeue`).
    /// DeltaFIFO puts them back only if nothing newer was queued for the key since (client-go's
    /// `AddIfNotPresent`); RealFIFO puts them back at the head, keeping the order.
    #[error("{0}")]
    Requeue(BoxError),
    /// The deltas are dropped and the error reported.
    #[error("{0}")]
    Failed(BoxError),
}

/// Why a pop returned without success.
#[derive(Debug, thiserror::Error)]
pub enum PopError {
    /// The queue is closed and empty (client-go's `ErrFIFOClosed`).
    #[error("DeltaFIFO: manipulating with closed queue")]
    Closed,
    /// The process function failed.
    #[error("processing popped deltas failed{}: {error}", if *.requeued { " (requeued)" } else { "" })]
    Process {
        /// The process function's error.
        error: BoxError,
        /// Whether the deltas went back into the queue.
        requeued: bool,
    },
}

/// A queue of deltas between a reflector (which writes through [`Store`]) and the informer
/// (which pops).
pub trait Queue<K>: Store<K> {
    /// Waits for deltas, takes them out of the queue and runs `process` on them, outside
    /// the queue's lock. `process` gets the deltas, oldest first, and whether they belong to
    /// the initial list (the queue has not synced yet). Returns the deltas processed.
    ///
    /// Cancel-safe: cancelled while waiting, it takes nothing out of the queue.
    fn pop<F>(&self, process: F) -> impl Future<Output = Result<Deltas<K>, PopError>> + Send
    where
        F: FnOnce(&[Delta<K>], bool) -> Result<(), ProcessError> + Send;

    /// Whether the first replace's content has been popped and processed, or something
    /// was added before any replace (client-go's `HasSynced`).
    fn has_synced(&self) -> bool;

    /// Closes the queue: pops drain what is left, then fail with [`PopError::Closed`].
    fn close(&self);

    /// Resolves once [`has_synced`](Self::has_synced) is true. The default checks every
    /// 100 ms (client-go's `syncedPollPeriod`); kclient's FIFOs wake it when they sync, without
    /// polling.
    fn wait_synced(&self) -> impl Future<Output = ()> + Send {
        async {
            while !self.has_synced() {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }

    /// Whether [`close`](Self::close) was called.
    fn is_closed(&self) -> bool;

    /// How many entries wait to be popped.
    fn len(&self) -> usize;

    /// Whether nothing waits to be popped.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where a FIFO stands towards its first sync: whether anything was written (before the
/// first replace, a write syncs the queue), and how many entries of the first replace are
/// still to be popped.
#[derive(Default)]
pub(crate) struct Population {
    pub(crate) populated: bool,
    pub(crate) initial_population_count: usize,
}

impl Population {
    /// Whether the queue has synced: written to, and the first replace's entries popped.
    pub(crate) fn has_synced(&self) -> bool {
        self.populated && self.initial_population_count == 0
    }

    /// After a write other than a replace.
    pub(crate) fn written(&mut self) {
        self.populated = true;
    }

    /// After a replace that left `count` entries to pop: the first write decides, so only a
    /// replace before any other write sets what the sync waits for.
    pub(crate) fn replaced(&mut self, count: usize) {
        if !self.populated {
            self.populated = true;
            self.initial_population_count = count;
        }
    }

    /// After `n` entries were popped.
    pub(crate) fn popped(&mut self, n: usize) {
        self.initial_population_count = self.initial_population_count.saturating_sub(n);
    }
}

/// A FIFO's state, which holds its [`Population`].
pub(crate) trait SyncedState {
    fn population(&self) -> &Population;
}

/// What the FIFOs share: their state behind one lock, and the [`Signals`] around it.
pub(crate) struct Guarded<S> {
    pub(crate) state: Mutex<S>,
    signals: Signals,
}

/// The part of [`Guarded`] that does not depend on the FIFO's state, so that it is compiled
/// once, not once per kind a program caches: the wake-up for waiting pops, the synced and
/// closed flags and the metrics around a pop.
struct Signals {
    ready: Notify,
    /// Set once the queue has synced (it never unsyncs); `synced_flag` is its fast path.
    synced: tokio::sync::watch::Sender<bool>,
    synced_flag: AtomicBool,
    closed: AtomicBool,
    metrics: Option<Arc<dyn CacheMetrics>>,
}

impl Signals {
    /// Wakes every waiting pop and reports the depth.
    fn queued(&self, depth: usize) {
        self.ready.notify_waiters();
        if let Some(m) = &self.metrics {
            m.fifo_depth(depth);
        }
    }

    fn is_synced(&self) -> bool {
        self.synced_flag.load(Ordering::Acquire)
    }

    fn mark_synced(&self) {
        self.synced_flag.store(true, Ordering::Release);
        self.synced.send_replace(true);
    }

    async fn wait_synced(&self) {
        let mut synced = self.synced.subscribe();
        // The sender lives as long as `self`, so waiting cannot fail.
        let _ = synced.wait_for(|s| *s).await;
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.ready.notify_waiters();
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

impl<S> Guarded<S> {
    pub(crate) fn new(state: S, metrics: Option<Arc<dyn CacheMetrics>>) -> Self {
        Self {
            state: Mutex::new(state),
            signals: Signals {
                ready: Notify::new(),
                synced: tokio::sync::watch::Sender::new(false),
                synced_flag: AtomicBool::new(false),
                closed: AtomicBool::new(false),
                metrics,
            },
        }
    }

    /// After queueing: wakes every waiting pop and reports the depth.
    pub(crate) fn queued(&self, depth: usize)
    where
        S: SyncedState,
    {
        self.signals.queued(depth);
        self.check_synced();
    }

    /// After a change that may have synced the queue (a queued replace, a pop): wakes
    /// [`wait_synced`](Self::wait_synced) the first time it has.
    pub(crate) fn check_synced(&self)
    where
        S: SyncedState,
    {
        if !self.signals.is_synced() && self.state.lock().population().has_synced() {
            self.signals.mark_synced();
        }
    }

    /// Resolves once the queue has synced.
    pub(crate) fn wait_synced(&self) -> impl Future<Output = ()> + Send + '_ {
        self.signals.wait_synced()
    }

    /// Closes the queue and wakes the waiting pops.
    pub(crate) fn close(&self) {
        self.signals.close();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.signals.is_closed()
    }

    /// A FIFO's `Debug`, named `name`: how many entries are queued (`queued` of the state,
    /// shown as `label`), its population and whether it is closed. The FIFO adds its own
    /// fields and finishes it.
    pub(crate) fn debug_struct<'a, 'b>(
        &self,
        f: &'a mut fmt::Formatter<'b>,
        name: &str,
        label: &str,
        queued: impl FnOnce(&S) -> usize,
    ) -> fmt::DebugStruct<'a, 'b>
    where
        S: SyncedState,
    {
        let state = self.state.lock();
        let population = state.population();
        let mut d = f.debug_struct(name);
        d.field(label, &queued(&state))
            .field("populated", &population.populated)
            .field(
                "initial_population_count",
                &population.initial_population_count,
            )
            .field("closed", &self.is_closed());
        d
    }

    /// Waits until `take` finds something under the lock. The closed flag is read only when
    /// `take` found nothing, so a closed queue drains first.
    pub(crate) async fn wait_for<T>(
        &self,
        mut take: impl FnMut(&mut S) -> Option<T>,
    ) -> Result<T, PopError> {
        loop {
            let mut notified = pin!(self.signals.ready.notified());
            notified.as_mut().enable();
            {
                let mut state = self.state.lock();
                if let Some(taken) = take(&mut state) {
                    return Ok(taken);
                }
                if self.is_closed() {
                    return Err(PopError::Closed);
                }
            }
            notified.await;
        }
    }

    /// Runs a pop's process function on `deltas` (taken out of the queue, which now holds
    /// `depth` entries), with no lock held, reporting the depth, the pop and its latency.
    pub(crate) fn process<K>(
        &self,
        deltas: &[Delta<K>],
        depth: usize,
        is_in_initial_list: bool,
        process: impl FnOnce(&[Delta<K>], bool) -> Result<(), ProcessError>,
    ) -> Result<(), ProcessError> {
        let Some(m) = &self.signals.metrics else {
            return process(deltas, is_in_initial_list);
        };
        m.fifo_depth(depth);
        m.popped(deltas.len());
        let started = tokio::time::Instant::now();
        let outcome = process(deltas, is_in_initial_list);
        m.process_latency(started.elapsed());
        outcome
    }
}

/// The [`Store`] and [`Queue`] impls of a FIFO built on [`Guarded`]: the store methods
/// forward to the FIFO's inherent ones of the same names, `pop` to its `$pop` method, the
/// rest to its `Guarded` state, whose `$entries` field holds what waits to be popped.
macro_rules! fifo_store_and_queue {
    ($fifo:ident, $pop:ident, $entries:ident, $pop_doc:literal) => {
        impl<K: Resource + Clone + Send + Sync + 'static> Store<K> for $fifo<K> {
            fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
                $fifo::add(self, obj)
            }

            fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
                $fifo::update(self, obj)
            }

            fn delete(&self, obj: DeletedObject<K>) -> Result<(), StoreError> {
                $fifo::delete(self, obj)
            }

            fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
                $fifo::replace(self, list, resource_version)
            }

            fn replace_encoded(
                &self,
                list: $crate::representation::EncodedList<K>,
                resource_version: &str,
            ) -> Result<(), StoreError> {
                $fifo::replace_encoded(self, list, resource_version)
            }

            fn resync(&self) -> Result<(), StoreError> {
                $fifo::resync(self)
            }

            fn list_keys(&self) -> Vec<String> {
                $fifo::list_keys(self)
            }

            fn bookmark(&self, resource_version: &str) {
                $fifo::bookmark(self, resource_version)
            }
        }

        impl<K: Resource + Clone + Send + Sync + 'static> Queue<K> for $fifo<K> {
            #[doc = $pop_doc]
            fn pop<F>(
                &self,
                process: F,
            ) -> impl std::future::Future<Output = Result<Deltas<K>, PopError>> + Send
            where
                F: FnOnce(&[Delta<K>], bool) -> Result<(), ProcessError> + Send,
            {
                self.$pop(process)
            }

            fn has_synced(&self) -> bool {
                self.guarded.state.lock().population().has_synced()
            }

            fn wait_synced(&self) -> impl std::future::Future<Output = ()> + Send {
                self.guarded.wait_synced()
            }

            fn close(&self) {
                self.guarded.close();
            }

            fn is_closed(&self) -> bool {
                self.guarded.is_closed()
            }

            fn len(&self) -> usize {
                self.guarded.state.lock().$entries.len()
            }
        }
    };
}
pub(crate) use fifo_store_and_queue;

/// Turns a process function's answer into a pop's result.
pub(crate) fn pop_result<K>(
    deltas: Deltas<K>,
    outcome: Result<(), ProcessError>,
    requeued: bool,
) -> Result<Deltas<K>, PopError> {
    match outcome {
        Ok(()) => Ok(deltas),
        Err(ProcessError::Requeue(error)) => Err(PopError::Process { error, requeued }),
        Err(ProcessError::Failed(error)) => Err(PopError::Process {
            error,
            requeued: false,
        }),
    }
}
