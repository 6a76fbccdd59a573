//! [`RealFifo`]: client-go's `RealFIFO`, the informer's default queue: every delta, in the
//! order it arrived, with nothing merged.
//!
//! This is client-go's RealFIFO in its atomic mode (`AtomicFIFO`, with
//! `UnlockWhileProcessingFIFO`), the mode in which its process function can run without
//! the lock:
//!
//! * [`add`](RealFifo::add), [`update`](RealFifo::update) and [`delete`](RealFifo::delete)
//!   append one delta each. A delete is always queued: the consumer decides what it means.
//! * [`replace`](RealFifo::replace) appends **one** [`Delta::ReplacedAll`] with the whole
//!   (transformed) list, and [`resync`](RealFifo::resync) one [`Delta::SyncAll`]. The
//!   consumer works out the deletions (the tombstones) and the resync's objects when it
//!   processes them, against its own store at that point of the stream, so they are
//!   always in order with the other deltas; [`process_deltas`](fn@crate::process_deltas) does
//!   it. That is why RealFIFO needs no `known_objects` and no lock while processing.
//! * [`bookmark`](RealFifo::bookmark) (a watch bookmark, from the reflector) appends one
//!   [`Delta::Bookmark`]: the consumer's store records its resourceVersion in order.
//! * A pop takes a **batch**: up to [`batch_size`](RealFifoOptions::batch_size) deltas
//!   (1000 by default, client-go's `InOrderInformersBatchProcess`), of distinct keys, never
//!   across the end of the initial list, with a `ReplacedAll`/`SyncAll` always alone.
//! * [`has_synced`](Queue::has_synced) is true once everything queued up to and including
//!   the first replace has been popped and processed (or something was added before any
//!   replace).
//!
//! Pops are meant for a single consumer (as in client-go): two concurrent pops could
//! process deltas of one key out of order.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_cache::{DeltaType, Queue, RealFifo, RealFifoOptions};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let fifo = RealFifo::<Pod>::new(RealFifoOptions::default());
//! let mut pod = Pod::default();
//! pod.metadata.name = Some("a".into());
//! let pod = Arc::new(pod);
//! fifo.add(pod.clone()).unwrap();
//! fifo.update(pod.clone()).unwrap();
//!
//! // Two deltas of one key: two pops, in order.
//! let first = fifo.pop(|_, _| Ok(())).await.unwrap();
//! assert_eq!(first[0].delta_type(), DeltaType::Added);
//! let second = fifo.pop(|_, _| Ok(())).await.unwrap();
//! assert_eq!(second[0].delta_type(), DeltaType::Updated);
//! # }
//! ```

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use foldhash::fast::RandomState;
use kclient_core::{DeletedObject, Resource};

use crate::delta::{BookmarkInfo, Delta, Deltas, ReplacedAllInfo};
use crate::intake::Intake;
use crate::key_func::{KeyFunc, KeyFuncError};
use crate::metrics::CacheMetrics;
use crate::queue::{
    fifo_store_and_queue, pop_result, Guarded, PopError, Population, ProcessError, Queue,
    SyncedState,
};
use crate::representation::EncodedList;
use crate::store::{Store, StoreError};
use crate::transform::TransformFunc;

/// client-go's `defaultBatchSize`.
pub const DEFAULT_BATCH_SIZE: usize = 1000;

/// How to build a [`RealFifo`] (client-go's `RealFIFOOptions`).
pub struct RealFifoOptions<K> {
    /// The key function; [`KeyFunc::meta_namespace`] when `None`.
    pub key_function: Option<KeyFunc<K>>,
    /// Applied to every object from the server before it is queued.
    pub transformer: Option<TransformFunc<K>>,
    /// The most deltas one pop hands over; at least 1 (1 pops one delta at a time).
    pub batch_size: usize,
    /// Receives the queue depth, pops and processing latency.
    pub metrics: Option<Arc<dyn CacheMetrics>>,
}

impl<K> Default for RealFifoOptions<K> {
    fn default() -> Self {
        Self {
            key_function: None,
            transformer: None,
            batch_size: DEFAULT_BATCH_SIZE,
            metrics: None,
        }
    }
}

struct State<K> {
    items: VecDeque<Delta<K>>,
    population: Population,
}

impl<K> SyncedState for State<K> {
    fn population(&self) -> &Population {
        &self.population
    }
}

/// client-go's `RealFIFO`; see the [module docs](self).
pub struct RealFifo<K> {
    guarded: Guarded<State<K>>,
    intake: Intake<K>,
    batch_size: usize,
}

impl<K> fmt::Debug for RealFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.guarded
            .debug_struct(f, "RealFifo", "queued", |state| state.items.len())
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> RealFifo<K> {
    /// A new, empty FIFO (client-go's `NewRealFIFOWithOptions`).
    pub fn new(options: RealFifoOptions<K>) -> Self {
        Self {
            guarded: Guarded::new(
                State {
                    items: VecDeque::new(),
                    population: Population::default(),
                },
                options.metrics,
            ),
            intake: Intake::new(options.key_function, options.transformer),
            batch_size: options.batch_size.max(1),
        }
    }

    /// The key of a delta: a tombstone's recorded key, otherwise the key function's; an
    /// error for the whole-store deltas.
    pub fn key_of(&self, delta: &Delta<K>) -> Result<String, KeyFuncError> {
        self.intake.key_of(delta)
    }

    fn push(&self, delta: Delta<K>, first_replace: bool) {
        let depth = {
            let mut state = self.guarded.state.lock();
            state.items.push_back(delta);
            if first_replace {
                let count = state.items.len();
                state.population.replaced(count);
            } else {
                state.population.written();
            }
            state.items.len()
        };
        self.guarded.queued(depth);
    }

    /// Queues `delta` of `obj` transformed (which must have a key).
    fn push_object(&self, obj: Arc<K>, delta: fn(Arc<K>) -> Delta<K>) -> Result<(), StoreError> {
        let (_, obj) = self.intake.object(obj)?;
        self.push(delta(obj), false);
        Ok(())
    }

    /// Queues an `Added` delta.
    pub fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.push_object(obj, Delta::Added)
    }

    /// Queues an `Updated` delta.
    pub fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.push_object(obj, Delta::Updated)
    }

    /// Queues a `Deleted` delta (always: the consumer knows whether it held the object).
    pub fn delete(&self, obj: impl Into<DeletedObject<K>>) -> Result<(), StoreError> {
        let (_, delta) = self.intake.deleted(obj.into())?;
        self.push(delta, false);
        Ok(())
    }

    /// Queues one `ReplacedAll` delta with the whole list, transformed. Every object must
    /// have a key, or nothing is queued. The first replace sets what
    /// [`has_synced`](Queue::has_synced) waits for: everything queued up to it.
    pub fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        let mut objects = Vec::with_capacity(list.len());
        for obj in list {
            let (_, obj) = self.intake.object(obj)?;
            objects.push(obj);
        }
        let info = ReplacedAllInfo {
            objects,
            encoded: None,
            resource_version: resource_version.to_owned(),
        };
        self.push(Delta::ReplacedAll(info), true);
        Ok(())
    }

    /// Queues one `ReplacedAll` delta with the listed objects still encoded (a compact
    /// informer's list; see [`Store::replace_encoded`]). They were transformed and keyed when
    /// listed: the transformer and key function are not applied again.
    pub fn replace_encoded(
        &self,
        list: EncodedList<K>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        let info = ReplacedAllInfo {
            objects: Vec::new(),
            encoded: Some(list),
            resource_version: resource_version.to_owned(),
        };
        self.push(Delta::ReplacedAll(info), true);
        Ok(())
    }

    /// Queues a [`Delta::Bookmark`] at `resource_version` (client-go's `RealFIFO.Bookmark` with
    /// `EmitDeltaTypeBookmark`, which its informers set in the atomic mode): the consumer's
    /// store records it ([`Store::bookmark`]) when it gets there, after every delta queued
    /// before it, so the store's
    /// [`last_store_sync_resource_version`](crate::Indexer::last_store_sync_resource_version)
    /// never runs ahead of what the handlers were given. Pops alone, like the whole-store
    /// deltas; it does not count towards [`has_synced`](Queue::has_synced).
    pub fn bookmark(&self, resource_version: &str) {
        let depth = {
            let mut state = self.guarded.state.lock();
            state.items.push_back(Delta::Bookmark(BookmarkInfo {
                resource_version: resource_version.to_owned(),
            }));
            state.items.len()
        };
        self.guarded.queued(depth);
    }

    /// Queues one `SyncAll` delta: the consumer replays its whole store when it gets there.
    pub fn resync(&self) -> Result<(), StoreError> {
        let depth = {
            let mut state = self.guarded.state.lock();
            state.items.push_back(Delta::SyncAll);
            state.items.len()
        };
        self.guarded.queued(depth);
        Ok(())
    }

    /// The keys of the queued deltas, in order, once each (whole-store deltas have none).
    pub fn list_keys(&self) -> Vec<String> {
        let state = self.guarded.state.lock();
        let mut seen = HashSet::<String, RandomState>::default();
        state
            .items
            .iter()
            .filter_map(|d| self.key_of(d).ok())
            .filter(|k| seen.insert(k.clone()))
            .collect()
    }

    /// Takes the next batch under the lock: see the module docs for its limits.
    fn take_batch(&self, state: &mut State<K>) -> Option<(Deltas<K>, bool)> {
        if state.items.is_empty() {
            return None;
        }
        let is_in_initial_list = !state.population.has_synced();
        let mut keys = HashSet::<String, RandomState>::default();
        let initial = state.population.initial_population_count;
        let mut take = 0;
        for (i, delta) in state.items.iter().enumerate().take(self.batch_size) {
            if initial > 0 && i >= initial {
                break;
            }
            // client-go's `batchable`: a whole-store delta or a bookmark pops alone.
            if matches!(
                delta,
                Delta::ReplacedAll(_) | Delta::SyncAll | Delta::Bookmark(_)
            ) {
                if i == 0 {
                    take = 1;
                }
                break;
            }
            match self.key_of(delta) {
                Ok(key) => {
                    if !keys.insert(key) {
                        break;
                    }
                    take = i + 1;
                }
                // client-go pops a delta it cannot key, alone at the end of the batch.
                Err(_) => {
                    take = i + 1;
                    break;
                }
            }
        }
        let batch: Vec<Delta<K>> = state.items.drain(..take).collect();
        Some((Deltas::from(batch), is_in_initial_list))
    }

    async fn pop_batch<F>(&self, process: F) -> Result<Deltas<K>, PopError>
    where
        F: FnOnce(&[Delta<K>], bool) -> Result<(), ProcessError> + Send,
    {
        let (batch, is_in_initial_list, depth) = self
            .guarded
            .wait_for(|state| {
                let (batch, initial) = self.take_batch(state)?;
                Some((batch, initial, state.items.len()))
            })
            .await?;
        let outcome = self
            .guarded
            .process(&batch, depth, is_in_initial_list, process);

        let requeue = matches!(outcome, Err(ProcessError::Requeue(_)));
        {
            let mut state = self.guarded.state.lock();
            if requeue {
                for delta in batch.iter().rev() {
                    state.items.push_front(delta.clone());
                }
            } else {
                state.population.popped(batch.len());
            }
        }
        if requeue {
            self.guarded.queued(depth + batch.len());
        }
        self.guarded.check_synced();
        pop_result(batch, outcome, requeue)
    }
}

fifo_store_and_queue!(
    RealFifo,
    pop_batch,
    items,
    "Pops a batch (see the module docs). If `process` asks for a requeue, the batch goes back to the head of the queue, in order."
);
