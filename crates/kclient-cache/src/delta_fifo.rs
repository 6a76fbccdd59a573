//! [`DeltaFifo`]: client-go's `DeltaFIFO`, a queue of keys, each with the [`Deltas`]
//! accumulated since it was last popped.
//!
//! The semantics are client-go's (v0.35), item by item:
//!
//! * A key is queued once, at its **first** delta; later deltas append to its `Deltas`
//!   without moving it. A pop hands over the whole `Deltas` of one key, oldest first.
//! * Only two trailing deletions are merged (keeping the older unless it is a tombstone).
//!   Adds, updates and syncs are never merged.
//! * [`replace`](DeltaFifo::replace) queues a `Replaced` delta (or `Sync`, without
//!   [`emit_delta_type_replaced`](DeltaFifoOptions::emit_delta_type_replaced)) for each
//!   listed object, then a [`DeletedFinalStateUnknown`] tombstone for every queued key and
//!   every key the consumer knows (`known_objects`, the informer's indexer) that the list
//!   no longer has. A `Delete` followed by a `Replace` that lists the object again gives
//!   `[Deleted, Replaced]`: nothing drops the relist's delta (client-go #83810).
//! * [`delete`](DeltaFifo::delete) of a key neither queued nor known is ignored: the relist
//!   that dropped it reported the deletion already.
//! * [`resync`](DeltaFifo::resync) replays the consumer's objects as `Sync` deltas, skipping
//!   keys that have deltas queued. It never contacts the server.
//! * [`has_synced`](Queue::has_synced) is true once the first replace's keys and tombstones
//!   have all been popped **and processed**, or once anything was added before a replace.
//! * The transform runs on every object from the server before it is queued; never on
//!   `Sync` deltas nor on tombstones.
//!
//! # No lock while the consumer runs
//!
//! client-go calls the process function under the FIFO's lock so that a `Replace`, `Delete`
//! or `Resync` reading `known_objects` never sees the indexer without the change being
//! processed. Here the process function runs outside the lock; instead, while a key's
//! deltas are being processed, the FIFO answers for that key as the indexer will be once
//! they are applied (present with the newest object, or absent after a deletion). Deletion
//! detection, ignored deletes and resyncs therefore come out exactly as under client-go's
//! lock, and `has_synced` counts a key only once its processing is over. This assumes, as
//! client-go does, that the process function applies the deltas to `known_objects`.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_cache::{DeltaFifo, DeltaFifoOptions, DeltaType, Queue};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let fifo = DeltaFifo::<Pod>::new(DeltaFifoOptions::default());
//! let mut pod = Pod::default();
//! pod.metadata.name = Some("a".into());
//! let pod = Arc::new(pod);
//! fifo.add(pod.clone()).unwrap();
//! fifo.update(pod.clone()).unwrap();
//!
//! let deltas = fifo.pop(|deltas, _| Ok(())).await.unwrap();
//! let types: Vec<_> = deltas.iter().map(|d| d.delta_type()).collect();
//! assert_eq!(types, [DeltaType::Added, DeltaType::Updated]);
//! # }
//! ```
//!
//! [`DeletedFinalStateUnknown`]: kclient_core::DeletedFinalStateUnknown

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::Arc;

use foldhash::fast::RandomState;
use kclient_core::{DeletedFinalStateUnknown, DeletedObject, Resource};

use crate::delta::{Delta, Deltas};
use crate::intake::Intake;
use crate::key_func::{KeyFunc, KeyFuncError};
use crate::metrics::CacheMetrics;
use crate::queue::{
    fifo_store_and_queue, pop_result, Guarded, PopError, Population, ProcessError, Queue,
    SyncedState,
};
use crate::representation::EncodedList;
use crate::store::{KeyListerGetter, Store, StoreError};
use crate::transform::TransformFunc;

/// How to build a [`DeltaFifo`] (client-go's `DeltaFIFOOptions`).
pub struct DeltaFifoOptions<K> {
    /// The key function; [`KeyFunc::meta_namespace`] when `None`. Tombstones are always
    /// keyed by their recorded key.
    pub key_function: Option<KeyFunc<K>>,
    /// What the consumer knows (the informer's indexer): used by `replace` to find deleted
    /// objects, by `delete` to ignore already-reported deletions, and by `resync`.
    pub known_objects: Option<Arc<dyn KeyListerGetter<K>>>,
    /// Queue `Replaced` rather than `Sync` deltas for a replace's objects (the informer
    /// sets it; the default `false` keeps client-go's backwards-compatible `Sync`).
    pub emit_delta_type_replaced: bool,
    /// Applied to every object from the server before it is queued.
    pub transformer: Option<TransformFunc<K>>,
    /// Receives the queue depth, pops and processing latency.
    pub metrics: Option<Arc<dyn CacheMetrics>>,
}

impl<K> Default for DeltaFifoOptions<K> {
    fn default() -> Self {
        Self {
            key_function: None,
            known_objects: None,
            emit_delta_type_replaced: false,
            transformer: None,
            metrics: None,
        }
    }
}

/// A key being processed, and what the consumer will know of it once processing is done.
struct InFlight<K> {
    pop: u64,
    /// The newest object, or `None` when the newest delta is a deletion.
    outcome: Option<Arc<K>>,
}

struct State<K> {
    items: HashMap<String, Deltas<K>, RandomState>,
    queue: VecDeque<String>,
    population: Population,
    in_flight: HashMap<String, InFlight<K>, RandomState>,
    pops: u64,
}

impl<K> SyncedState for State<K> {
    fn population(&self) -> &Population {
        &self.population
    }
}

impl<K> State<K> {
    /// client-go's `queueActionLocked`: appends, dedups, and queues the key on its first
    /// delta.
    fn queue_action(&mut self, key: String, delta: Delta<K>) {
        match self.items.entry(key) {
            Entry::Occupied(mut e) => {
                let deltas = e.get_mut();
                deltas.push(delta);
                deltas.dedup_newest();
            }
            Entry::Vacant(e) => {
                self.queue.push_back(e.key().clone());
                let mut deltas = Deltas::new();
                deltas.push(delta);
                e.insert(deltas);
            }
        }
    }

    fn has_deltas(&self, key: &str) -> bool {
        self.items.get(key).is_some_and(|d| !d.is_empty())
    }
}

/// client-go's `DeltaFIFO`; see the [module docs](self).
pub struct DeltaFifo<K> {
    guarded: Guarded<State<K>>,
    intake: Intake<K>,
    known_objects: Option<Arc<dyn KeyListerGetter<K>>>,
    emit_delta_type_replaced: bool,
}

impl<K> fmt::Debug for DeltaFifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.guarded
            .debug_struct(f, "DeltaFifo", "queued_keys", |state| state.queue.len())
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> DeltaFifo<K> {
    /// A new, empty FIFO (client-go's `NewDeltaFIFOWithOptions`).
    pub fn new(options: DeltaFifoOptions<K>) -> Self {
        Self {
            guarded: Guarded::new(
                State {
                    items: HashMap::default(),
                    queue: VecDeque::new(),
                    population: Population::default(),
                    in_flight: HashMap::default(),
                    pops: 0,
                },
                options.metrics,
            ),
            intake: Intake::new(options.key_function, options.transformer),
            known_objects: options.known_objects,
            emit_delta_type_replaced: options.emit_delta_type_replaced,
        }
    }

    /// client-go's `KeyOf`: a tombstone's recorded key, otherwise the key function's.
    pub fn key_of(&self, delta: &Delta<K>) -> Result<String, KeyFuncError> {
        self.intake.key_of(delta)
    }

    fn enqueue(&self, key: String, delta: Delta<K>) {
        let depth = {
            let mut state = self.guarded.state.lock();
            state.population.written();
            state.queue_action(key, delta);
            state.queue.len()
        };
        self.guarded.queued(depth);
    }

    /// Whether the consumer knows `key`, counting a key being processed as processed.
    fn known(&self, state: &State<K>, key: &str) -> bool {
        self.known_object(state, key).is_some()
    }

    /// The consumer's object under `key`, counting a key being processed as processed.
    fn known_object(&self, state: &State<K>, key: &str) -> Option<Arc<K>> {
        let known = self.known_objects.as_ref()?;
        match state.in_flight.get(key) {
            Some(f) => f.outcome.clone(),
            None => known.get_by_key(key),
        }
    }

    /// The consumer's keys, counting keys being processed as processed.
    fn known_keys(&self, state: &State<K>) -> Vec<String> {
        let Some(known) = self.known_objects.as_ref() else {
            return Vec::new();
        };
        let mut keys = known.list_keys();
        if !state.in_flight.is_empty() {
            keys.retain(|k| state.in_flight.get(k).is_none_or(|f| f.outcome.is_some()));
            for (key, f) in &state.in_flight {
                if f.outcome.is_some() && !keys.contains(key) {
                    keys.push(key.clone());
                }
            }
        }
        keys
    }

    /// Queues `delta` of `obj` transformed, under its key.
    fn enqueue_object(&self, obj: Arc<K>, delta: fn(Arc<K>) -> Delta<K>) -> Result<(), StoreError> {
        let (key, obj) = self.intake.object(obj)?;
        self.enqueue(key, delta(obj));
        Ok(())
    }

    /// Queues an `Added` delta (client-go's `Add`).
    pub fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.enqueue_object(obj, Delta::Added)
    }

    /// Queues an `Updated` delta (client-go's `Update`).
    pub fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.enqueue_object(obj, Delta::Updated)
    }

    /// Queues a `Deleted` delta, unless the key is neither queued nor known to the consumer
    /// (then the deletion was reported already, by the relist that dropped it).
    pub fn delete(&self, obj: impl Into<DeletedObject<K>>) -> Result<(), StoreError> {
        let (key, delta) = self.intake.deleted(obj.into())?;
        let depth = {
            let mut state = self.guarded.state.lock();
            state.population.written();
            if !state.items.contains_key(&key) && !self.known(&state, &key) {
                return Ok(());
            }
            state.queue_action(key, delta);
            state.queue.len()
        };
        self.guarded.queued(depth);
        Ok(())
    }

    /// [`replace`](Self::replace) with the objects decoded first: a DeltaFIFO files deltas by
    /// object, so it cannot keep a list encoded.
    pub fn replace_encoded(
        &self,
        list: EncodedList<K>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        let objects = list.decode_all().map_err(StoreError::Codec)?;
        self.replace(objects, resource_version)
    }

    /// client-go's `Replace`: a `Replaced` (or `Sync`) delta for each object, then a
    /// tombstone for each queued or known key the list does not have. The first replace
    /// sets the number of keys [`has_synced`](Queue::has_synced) waits for. The
    /// resourceVersion is not used.
    pub fn replace(&self, list: Vec<Arc<K>>, _resource_version: &str) -> Result<(), StoreError> {
        let mut listed = Vec::with_capacity(list.len());
        for obj in list {
            listed.push(self.intake.object(obj)?);
        }
        let depth = {
            let mut state = self.guarded.state.lock();
            let keys: HashSet<String, RandomState> =
                listed.iter().map(|(k, _)| k.clone()).collect();
            for (key, obj) in listed {
                let delta = if self.emit_delta_type_replaced {
                    Delta::Replaced(obj)
                } else {
                    Delta::Sync(obj)
                };
                state.queue_action(key, delta);
            }

            // Deletion detection against the queue: keys queued but no longer listed.
            let mut queued_deletions = 0;
            let vanished: Vec<(String, Option<Arc<K>>)> = state
                .queue
                .iter()
                .filter(|k| !keys.contains(*k))
                .map(|k| {
                    let last = state
                        .items
                        .get(k)
                        .and_then(|d| d.newest()?.object().cloned());
                    (k.clone(), last)
                })
                .collect();
            for (key, obj) in vanished {
                queued_deletions += 1;
                let tombstone = DeletedFinalStateUnknown {
                    key: key.clone(),
                    obj,
                };
                state.queue_action(key, Delta::Deleted(DeletedObject::Tombstone(tombstone)));
            }

            // Deletion detection against what the consumer knows.
            for key in self.known_keys(&state) {
                if keys.contains(&key) || state.has_deltas(&key) {
                    continue;
                }
                let obj = self.known_object(&state, &key);
                if obj.is_none() {
                    tracing::info!(key, "key does not exist in known objects store, placing DeletedFinalStateUnknown marker without object");
                }
                queued_deletions += 1;
                let tombstone = DeletedFinalStateUnknown {
                    key: key.clone(),
                    obj,
                };
                state.queue_action(key, Delta::Deleted(DeletedObject::Tombstone(tombstone)));
            }

            state.population.replaced(keys.len() + queued_deletions);
            state.queue.len()
        };
        self.guarded.queued(depth);
        Ok(())
    }

    /// A watch bookmark: ignored, as client-go's DeltaFIFO has no `Bookmark` (only RealFIFO
    /// in its atomic mode hands bookmarks to the consumer's store; see
    /// [`RealFifo::bookmark`](crate::RealFifo::bookmark)).
    pub fn bookmark(&self, resource_version: &str) {
        let _ = resource_version;
    }

    /// client-go's `Resync`: a `Sync` delta for every object the consumer knows that has no
    /// delta queued. A no-op without `known_objects`.
    pub fn resync(&self) -> Result<(), StoreError> {
        if self.known_objects.is_none() {
            return Ok(());
        }
        let depth = {
            let mut state = self.guarded.state.lock();
            for key in self.known_keys(&state) {
                let Some(obj) = self.known_object(&state, &key) else {
                    tracing::info!(key, "key does not exist in known objects store, unable to queue object for sync");
                    continue;
                };
                // The FIFO's key function may differ from the consumer's.
                let id = self.intake.key_func().key(&obj)?;
                if state.has_deltas(&id) {
                    continue;
                }
                state.queue_action(id, Delta::Sync(obj));
            }
            state.queue.len()
        };
        self.guarded.queued(depth);
        Ok(())
    }

    /// Queues `deltas` (as popped) again, unless newer deltas were queued for its key since
    /// (client-go's `AddIfNotPresent`, used to requeue).
    pub fn add_if_not_present(&self, deltas: Deltas<K>) -> Result<(), StoreError> {
        let Some(newest) = deltas.newest() else {
            return Ok(());
        };
        let key = self.key_of(newest)?;
        let depth = {
            let mut state = self.guarded.state.lock();
            Self::add_if_not_present_locked(&mut state, key, deltas);
            state.queue.len()
        };
        self.guarded.queued(depth);
        Ok(())
    }

    fn add_if_not_present_locked(state: &mut State<K>, key: String, deltas: Deltas<K>) {
        state.population.written();
        if state.items.contains_key(&key) {
            return;
        }
        state.queue.push_back(key.clone());
        state.items.insert(key, deltas);
    }

    /// The deltas queued for `key` (a copy of the list; the objects are shared).
    pub fn get_by_key(&self, key: &str) -> Option<Deltas<K>> {
        self.guarded.state.lock().items.get(key).cloned()
    }

    /// The deltas queued for the key of `obj`.
    pub fn get(&self, obj: &K) -> Result<Option<Deltas<K>>, StoreError> {
        Ok(self.get_by_key(&self.intake.key_func().key(obj)?))
    }

    /// The newest known object of every queued key (tombstones without a last state are
    /// left out), in queue order.
    pub fn list(&self) -> Vec<Arc<K>> {
        let state = self.guarded.state.lock();
        state
            .queue
            .iter()
            .filter_map(|k| state.items.get(k)?.newest()?.object().cloned())
            .collect()
    }

    /// The queued keys, in queue order.
    pub fn list_keys(&self) -> Vec<String> {
        self.guarded.state.lock().queue.iter().cloned().collect()
    }

    async fn pop_deltas<F>(&self, process: F) -> Result<Deltas<K>, PopError>
    where
        F: FnOnce(&[Delta<K>], bool) -> Result<(), ProcessError> + Send,
    {
        let tracks_known = self.known_objects.is_some();
        let (pop, key, deltas, is_in_initial_list, depth) = self
            .guarded
            .wait_for(|state| {
                while let Some(key) = state.queue.pop_front() {
                    let Some(deltas) = state.items.remove(&key) else {
                        tracing::error!(key, "inconceivable: key queued without deltas; ignoring");
                        state.population.popped(1);
                        continue;
                    };
                    state.pops += 1;
                    let pop = state.pops;
                    if tracks_known {
                        let outcome = match deltas.newest() {
                            Some(Delta::Deleted(_)) | None => None,
                            Some(d) => d.object().cloned(),
                        };
                        state
                            .in_flight
                            .insert(key.clone(), InFlight { pop, outcome });
                    }
                    let depth = state.queue.len();
                    return Some((pop, key, deltas, !state.population.has_synced(), depth));
                }
                None
            })
            .await?;
        let outcome = self
            .guarded
            .process(&deltas, depth, is_in_initial_list, process);

        let requeue = matches!(outcome, Err(ProcessError::Requeue(_)));
        {
            let mut state = self.guarded.state.lock();
            if state.in_flight.get(&key).is_some_and(|f| f.pop == pop) {
                state.in_flight.remove(&key);
            }
            state.population.popped(1);
            if requeue {
                Self::add_if_not_present_locked(&mut state, key, deltas.clone());
            }
        }
        if requeue {
            self.guarded.queued(depth + 1);
        }
        self.guarded.check_synced();
        pop_result(deltas, outcome, requeue)
    }
}

fifo_store_and_queue!(
    DeltaFifo,
    pop_deltas,
    queue,
    "Pops the oldest queued key with all its deltas. If `process` asks for a requeue, the deltas go back unless newer ones were queued meanwhile."
);
