//! [`Fifo`]: client-go's plain `FIFO` — a queue of objects by key, where an object queued
//! again before it is popped is popped once, in its latest state. Unlike
//! [`DeltaFifo`](crate::DeltaFifo) it keeps no history: a consumer that only needs the current
//! state of what changed (and no deletions) uses it.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_cache::{Fifo, KeyFunc};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let fifo = Fifo::new(KeyFunc::meta_namespace());
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("a".into());
//! fifo.add(Arc::new(cm.clone())).unwrap();
//! cm.data = Some([("v".to_owned(), "2".to_owned())].into());
//! fifo.update(Arc::new(cm)).unwrap(); // the same key: still one entry, now the latest
//! assert_eq!(fifo.len(), 1);
//! let popped = fifo.pop(|obj, _| { assert!(obj.data.is_some()); Ok(()) }).await.unwrap();
//! assert_eq!(popped.metadata.name.as_deref(), Some("a"));
//! # }
//! ```

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;

use foldhash::fast::RandomState;
use kclient_core::{DeletedObject, Resource};

use crate::key_func::KeyFunc;
use crate::queue::{Guarded, PopError, Population, ProcessError, SyncedState};
use crate::store::{Store, StoreError};

struct State<K> {
    /// The objects waiting, by key.
    items: HashMap<String, Arc<K>, RandomState>,
    /// The keys in popping order; a key whose object was deleted is skipped.
    queue: VecDeque<String>,
    /// Where the queue stands towards its first sync (counting the keys of the first
    /// replace).
    population: Population,
}

impl<K> SyncedState for State<K> {
    fn population(&self) -> &Population {
        &self.population
    }
}

/// client-go's `FIFO` (`NewFIFO(keyFunc)`); see the [module docs](self).
pub struct Fifo<K> {
    key_func: KeyFunc<K>,
    guarded: Guarded<State<K>>,
}

impl<K> fmt::Debug for Fifo<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.guarded.state.lock();
        f.debug_struct("Fifo")
            .field("queued", &state.items.len())
            .field("closed", &self.guarded.is_closed())
            .finish_non_exhaustive()
    }
}

impl<K: Resource + Send + Sync + 'static> Fifo<K> {
    /// An empty queue keyed by `key_func` (client-go's `NewFIFO`).
    pub fn new(key_func: KeyFunc<K>) -> Self {
        Self {
            key_func,
            guarded: Guarded::new(
                State {
                    items: HashMap::default(),
                    queue: VecDeque::new(),
                    population: Population::default(),
                },
                None,
            ),
        }
    }

    /// Queues `obj`, or replaces the queued object with its key (which keeps its place).
    pub fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        let key = self.key_func.key(&obj)?;
        let depth = {
            let mut state = self.guarded.state.lock();
            state.population.written();
            if state.items.insert(key.clone(), obj).is_none() {
                state.queue.push_back(key);
            }
            state.items.len()
        };
        self.guarded.queued(depth);
        Ok(())
    }

    /// The same as [`add`](Self::add).
    pub fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.add(obj)
    }

    /// Queues `obj` unless an object with its key is queued already (client-go's
    /// `AddIfNotPresent`: a requeued object must not overwrite a newer one).
    pub fn add_if_not_present(&self, obj: Arc<K>) -> Result<(), StoreError> {
        let key = self.key_func.key(&obj)?;
        let depth = {
            let mut state = self.guarded.state.lock();
            state.population.written();
            if state.items.contains_key(&key) {
                return Ok(());
            }
            state.items.insert(key.clone(), obj);
            state.queue.push_back(key);
            state.items.len()
        };
        self.guarded.queued(depth);
        Ok(())
    }

    /// Takes the object with the key of `obj` out of the queue, if it is there.
    pub fn delete(&self, obj: impl Into<DeletedObject<K>>) -> Result<(), StoreError> {
        let key = self.key_func.key_of_deleted(&obj.into())?;
        let mut state = self.guarded.state.lock();
        state.population.written();
        state.items.remove(&key);
        Ok(())
    }

    /// The queued objects, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.guarded.state.lock().items.values().cloned().collect()
    }

    /// The keys of the queued objects, in no particular order.
    pub fn list_keys(&self) -> Vec<String> {
        self.guarded.state.lock().items.keys().cloned().collect()
    }

    /// The queued object with the key of `obj`.
    pub fn get(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        let key = self.key_func.key(obj)?;
        Ok(self.get_by_key(&key))
    }

    /// The queued object under `key`.
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.guarded.state.lock().items.get(key).cloned()
    }

    /// Replaces what is queued with `list` (for a repeated key the last one wins), queued in
    /// list order. The first replace sets how many objects [`has_synced`](Self::has_synced)
    /// waits to see popped. The resourceVersion is not used.
    pub fn replace(&self, list: Vec<Arc<K>>, _resource_version: &str) -> Result<(), StoreError> {
        let mut items = HashMap::with_capacity_and_hasher(list.len(), RandomState::default());
        let mut queue = VecDeque::with_capacity(list.len());
        for obj in list {
            let key = self.key_func.key(&obj)?;
            if items.insert(key.clone(), obj).is_none() {
                queue.push_back(key);
            }
        }
        let depth = {
            let mut state = self.guarded.state.lock();
            state.items = items;
            state.queue = queue;
            let count = state.items.len();
            state.population.replaced(count);
            state.items.len()
        };
        self.guarded.queued(depth);
        Ok(())
    }

    /// Queues again every object whose key is not waiting in line (client-go's `Resync`).
    pub fn resync(&self) -> Result<(), StoreError> {
        let depth = {
            let mut state = self.guarded.state.lock();
            let waiting: std::collections::HashSet<String> = state.queue.iter().cloned().collect();
            let missing: Vec<String> = state
                .items
                .keys()
                .filter(|k| !waiting.contains(*k))
                .cloned()
                .collect();
            state.queue.extend(missing);
            state.items.len()
        };
        self.guarded.queued(depth);
        Ok(())
    }

    /// Waits for an object, takes it out of the queue and runs `process` on it (with whether
    /// it belongs to the initial list), outside the queue's lock. If `process` asks for a
    /// requeue, the object goes back unless a newer one with its key was queued meanwhile.
    /// Fails with [`PopError::Closed`] once the queue is closed and empty.
    pub async fn pop(
        &self,
        process: impl FnOnce(&Arc<K>, bool) -> Result<(), ProcessError>,
    ) -> Result<Arc<K>, PopError> {
        let (obj, is_in_initial_list) = self
            .guarded
            .wait_for(|state| loop {
                let is_in_initial_list = !state.population.has_synced();
                let key = state.queue.pop_front()?;
                state.population.popped(1);
                // A key whose object was deleted meanwhile is skipped.
                if let Some(obj) = state.items.remove(&key) {
                    return Some((obj, is_in_initial_list));
                }
            })
            .await?;
        let outcome = process(&obj, is_in_initial_list);
        self.guarded.check_synced();
        match outcome {
            Ok(()) => Ok(obj),
            Err(ProcessError::Requeue(error)) => {
                self.add_if_not_present(Arc::clone(&obj))
                    .map_err(|e| PopError::Process {
                        error: e.into(),
                        requeued: false,
                    })?;
                Err(PopError::Process {
                    error,
                    requeued: true,
                })
            }
            Err(ProcessError::Failed(error)) => Err(PopError::Process {
                error,
                requeued: false,
            }),
        }
    }

    /// Whether the first replace's objects have all been popped, or something was written
    /// before any replace (client-go's `HasSynced`).
    pub fn has_synced(&self) -> bool {
        self.guarded.state.lock().population.has_synced()
    }

    /// Closes the queue: pops drain what is left, then fail with [`PopError::Closed`].
    pub fn close(&self) {
        self.guarded.close();
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.guarded.is_closed()
    }

    /// How many objects wait to be popped.
    pub fn len(&self) -> usize {
        self.guarded.state.lock().items.len()
    }

    /// Whether nothing waits to be popped.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K: Resource + Send + Sync + 'static> Store<K> for Fifo<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        Fifo::add(self, obj)
    }

    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        Fifo::update(self, obj)
    }

    fn delete(&self, obj: DeletedObject<K>) -> Result<(), StoreError> {
        Fifo::delete(self, obj)
    }

    fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        Fifo::replace(self, list, resource_version)
    }

    fn resync(&self) -> Result<(), StoreError> {
        Fifo::resync(self)
    }

    fn list_keys(&self) -> Vec<String> {
        Fifo::list_keys(self)
    }
}
