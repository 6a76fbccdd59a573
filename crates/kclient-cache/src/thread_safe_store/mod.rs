//! [`ThreadSafeStore`]: objects by storage key, with indices kept in step (client-go's
//! `ThreadSafeStore`/`threadSafeMap`).
//!
//! # Concurrency design
//!
//! The objects and every index live in one structure behind one `RwLock`, so a reader always
//! sees the objects and the indices of the same moment. Writers are serialised by a separate
//! writer mutex, and do all their slow work before they take the `RwLock` for writing:
//!
//! * an add, update or delete runs the index functions (user code) with no lock readers
//!   wait on, then takes the write lock only to apply the differences;
//! * a [`replace`](ThreadSafeStore::replace) builds the whole new map and all its indices
//!   aside, swaps it in under the write lock (a pointer swap), and drops the old map after
//!   releasing it. No read waits for the duration of a replace, whatever its size.
//!
//! Why not `dashmap` or a copy-on-write snapshot: a sharded map cannot replace its content
//! atomically nor keep the indices consistent with the objects across shards, and a
//! persistent (copy-on-write) map makes every write allocate `O(log n)` nodes and every
//! read follow more pointers. Reads here are a hash lookup under an uncontended read lock
//! (see `docs/benchmarks.md` for the figures). Readers only clone `Arc`s under the lock,
//! never objects.
//!
//! Storage keys are shared between the object map and every index that holds them (see
//! `store_key.rs`), so an object costs its key once. An index entry keeps the object's `Arc`
//! next to its key: a lookup by index reads its matches straight from the index instead of
//! hashing each key again and probing the map of every object, as client-go's `ByIndex` does.
//! That costs one pointer per index entry and, on an update, a refresh of the entries whose
//! values did not change; it made `by_index` over 100k Pods (100 per value) 8× faster, 2.2×
//! client-go's `ByIndex` (`docs/benchmarks.md`, scenario 4).
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_cache::{Indexers, ThreadSafeStore, NAMESPACE_INDEX};
//!
//! let store = ThreadSafeStore::<Pod>::new(Indexers::namespace());
//! let mut pod = Pod::default();
//! pod.metadata.namespace = Some("prod".into());
//! pod.metadata.name = Some("web".into());
//! store.add("prod/web", Arc::new(pod)).unwrap();
//! assert_eq!(store.index_keys(NAMESPACE_INDEX, "prod").unwrap(), ["prod/web"]);
//! ```

use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use kclient_core::{Resource, ResourceExt};

mod data;

pub(crate) use self::data::{index_values, IndexValues};
use self::data::{index_values_of, Bucket, Data, Index, Map, OldValues, Planned};
use crate::index::{IndexError, Indexers};
use crate::metrics::CacheMetrics;
use crate::representation::{CacheRepresentation, EncodedList};
use crate::store::StoreError;
use crate::store_key::StoreKey;
#[cfg(feature = "compact")]
use crate::stored::Stored;
use crate::stored::{Representation, Slot};

/// A map from storage keys to `Arc<K>` with named indices, safe to share between threads
/// (client-go's `ThreadSafeStore`). Most code uses it through an
/// [`Indexer`](crate::Indexer), which computes the keys.
///
/// In the default, decoded representation every read hands out the stored `Arc`s
/// themselves: no object is ever cloned. Objects are immutable once stored (Rust enforces what
/// client-go can only ask for), so an index can never go stale because someone changed a
/// cached object. In the compact representation
/// ([`with_representation`](Self::with_representation)) objects are kept encoded and every
/// read decodes a fresh `Arc` (outside the lock).
pub struct ThreadSafeStore<K> {
    core: Core<K>,
    /// The resourceVersion of the newest write or bookmark (client-go's `threadSafeMap.rv`).
    rv: RwLock<String>,
}

/// The store in one of its representations: the same code over the slot type, so that the
/// decoded representation's map and index entries stay one pointer each. The compact one is
/// compiled only with the `compact` feature: it is a second copy of the store's code for
/// every kind a program caches.
enum Core<K> {
    Decoded(Table<K, Arc<K>>),
    #[cfg(feature = "compact")]
    Compact(Table<K, Stored<K>>),
}

/// Calls the same method of whichever store `core` holds.
macro_rules! on_core {
    ($core:expr, $store:ident => $call:expr) => {
        match $core {
            Core::Decoded($store) => $call,
            #[cfg(feature = "compact")]
            Core::Compact($store) => $call,
        }
    };
}

/// The store proper — its objects and indices, their locks and metrics — generic over how it
/// holds an object (named apart from the [`Store`](crate::Store) trait, which it does not
/// implement).
struct Table<K, S> {
    data: RwLock<Data<K, S>>,
    /// Serialises writers, so the slow part of a write can run without the `RwLock`.
    writer: Mutex<()>,
    metrics: Option<Arc<dyn CacheMetrics>>,
    representation: Representation<K>,
}

/// Objects read under the lock: the decoded ones ready, the encoded ones to decode once the
/// lock is released.
struct Gathered<K, S> {
    ready: Vec<Arc<K>>,
    encoded: Vec<(StoreKey, S)>,
}

impl<K, S: Slot<K>> Gathered<K, S> {
    fn with_capacity(n: usize) -> Self {
        Self {
            ready: Vec::with_capacity(n),
            encoded: Vec::new(),
        }
    }

    fn push(&mut self, key: &StoreKey, stored: &S) {
        match stored.decoded() {
            Some(obj) => self.ready.push(Arc::clone(obj)),
            None => self.encoded.push((key.clone(), stored.clone())),
        }
    }
}

impl<K, S: Slot<K>> Table<K, S> {
    fn new(indexers: Arc<Indexers<K>>, representation: Representation<K>) -> Self {
        Self {
            data: RwLock::new(Data::empty(indexers)),
            writer: Mutex::new(()),
            metrics: None,
            representation,
        }
    }

    fn report_size(&self, len: usize) {
        if let Some(m) = &self.metrics {
            m.store_size(len);
        }
    }

    fn load(&self, key: &[u8], stored: &S) -> Option<Arc<K>> {
        stored.load(&self.representation, key)
    }

    fn store(&self, key: &[u8], obj: &Arc<K>) -> S {
        S::store(&self.representation, key, obj)
    }

    /// Decodes what was gathered under the lock (call it after releasing the lock).
    fn finish(&self, gathered: Gathered<K, S>) -> Vec<Arc<K>> {
        let Gathered { mut ready, encoded } = gathered;
        ready.extend(
            encoded
                .iter()
                .filter_map(|(key, stored)| self.load(key.as_bytes(), stored)),
        );
        ready
    }

    /// The index values `obj` will have under `key` (and, in the compact representation, its
    /// encoded form): a write worked out before the lock readers wait on is taken. `old` is
    /// what the key holds: `None` if nothing, `Some(None)` if an object that cannot be
    /// decoded.
    fn plan_put(
        &self,
        indexers: &Indexers<K>,
        key: StoreKey,
        obj: &Arc<K>,
        old: Option<Option<&Arc<K>>>,
    ) -> Result<Planned<S>, IndexError> {
        let new_values = index_values(indexers, key.as_bytes(), obj)?;
        let old = self.old_values(indexers, key.as_bytes(), old)?;
        let stored = self.store(key.as_bytes(), obj);
        Ok(Planned::Put {
            key,
            stored,
            new_values,
            old,
        })
    }

    fn old_values(
        &self,
        indexers: &Indexers<K>,
        key: &[u8],
        old: Option<Option<&Arc<K>>>,
    ) -> Result<OldValues, IndexError> {
        Ok(match old {
            None => OldValues::Absent,
            Some(None) => OldValues::Unknown,
            Some(Some(o)) => OldValues::Known(index_values(indexers, key, o)?),
        })
    }

    /// The object under `key` now, decoded: `None` if absent, `Some(None)` if it does not
    /// decode. Call it with the writer lock held.
    fn current(&self, key: &str) -> (Option<Option<Arc<K>>>, Option<StoreKey>) {
        let stored = {
            let data = self.data.read();
            data.items
                .get_key_value(key.as_bytes())
                .map(|(k, o)| (k.clone(), o.clone()))
        };
        match stored {
            Some((stored_key, slot)) => (Some(self.load(key.as_bytes(), &slot)), Some(stored_key)),
            None => (None, None),
        }
    }

    /// Applies `planned` writes under one write lock and reports the new size.
    fn apply(&self, indexers: &Indexers<K>, planned: Vec<Planned<S>>) {
        let len = {
            let mut data = self.data.write();
            for write in planned {
                data.apply(indexers, write);
            }
            data.items.len()
        };
        self.report_size(len);
    }

    /// See [`ThreadSafeStore::add`].
    fn add(&self, key: &str, obj: Arc<K>) -> Result<(), IndexError> {
        let _writer = self.writer.lock();
        let indexers = Arc::clone(&self.data.read().indexers);
        let (old, stored_key) = self.current(key);
        let key = stored_key.unwrap_or_else(|| StoreKey::new(key));
        let planned = self.plan_put(&indexers, key, &obj, old.as_ref().map(Option::as_ref))?;
        self.apply(&indexers, vec![planned]);
        Ok(())
    }

    /// See [`ThreadSafeStore::delete`].
    fn delete(&self, key: &str) -> Result<Option<Arc<K>>, IndexError> {
        let _writer = self.writer.lock();
        let indexers = Arc::clone(&self.data.read().indexers);
        let (Some(old), _) = self.current(key) else {
            return Ok(None);
        };
        let values = self.old_values(&indexers, key.as_bytes(), Some(old.as_ref()))?;
        self.apply(
            &indexers,
            vec![Planned::Remove {
                key: key.to_owned(),
                old: values,
            }],
        );
        Ok(old)
    }

    /// See [`ThreadSafeStore::transaction`].
    fn transaction(&self, writes: Vec<(String, Option<Arc<K>>)>) -> Vec<Result<(), IndexError>> {
        let _writer = self.writer.lock();
        let indexers = Arc::clone(&self.data.read().indexers);
        // Each key's object as the writes before leave it (`None`: deleted).
        let mut written: Map<String, Option<Arc<K>>> = Map::default();
        let mut planned = Vec::with_capacity(writes.len());
        let mut results = Vec::with_capacity(writes.len());
        for (key, write) in writes {
            let (old, stored_key) = match written.get(&key) {
                Some(state) => (state.clone().map(Some), None),
                None => self.current(&key),
            };
            let result = match write {
                Some(obj) => {
                    let store_key = stored_key.unwrap_or_else(|| StoreKey::new(&key));
                    self.plan_put(&indexers, store_key, &obj, old.as_ref().map(Option::as_ref))
                        .map(|p| {
                            planned.push(p);
                            written.insert(key, Some(obj));
                        })
                }
                None if old.is_none() => Ok(()),
                None => self
                    .old_values(&indexers, key.as_bytes(), old.as_ref().map(Option::as_ref))
                    .map(|values| {
                        planned.push(Planned::Remove {
                            key: key.clone(),
                            old: values,
                        });
                        written.insert(key, None);
                    }),
            };
            results.push(result);
        }
        self.apply(&indexers, planned);
        results
    }

    /// See [`ThreadSafeStore::get`].
    fn get(&self, key: &str) -> Option<Arc<K>> {
        let stored = self.data.read().items.get(key.as_bytes()).cloned()?;
        self.load(key.as_bytes(), &stored)
    }

    /// See [`ThreadSafeStore::contains_key`].
    fn contains_key(&self, key: &str) -> bool {
        self.data.read().items.contains_key(key.as_bytes())
    }

    /// See [`ThreadSafeStore::list`].
    fn list(&self) -> Vec<Arc<K>> {
        let gathered = {
            let data = self.data.read();
            let mut gathered = Gathered::with_capacity(data.items.len());
            for (key, stored) in &data.items {
                gathered.push(key, stored);
            }
            gathered
        };
        self.finish(gathered)
    }

    /// See [`ThreadSafeStore::list_filtered`].
    fn list_filtered(&self, mut keep: impl FnMut(&K) -> bool) -> Vec<Arc<K>> {
        let Gathered { mut ready, encoded } = {
            let data = self.data.read();
            let mut gathered = Gathered::with_capacity(0);
            for (key, stored) in &data.items {
                match stored.decoded() {
                    Some(obj) if !keep(obj) => {}
                    _ => gathered.push(key, stored),
                }
            }
            gathered
        };
        ready.extend(
            encoded
                .iter()
                .filter_map(|(key, stored)| self.load(key.as_bytes(), stored))
                .filter(|obj| keep(obj)),
        );
        ready
    }

    /// See [`ThreadSafeStore::list_keys`].
    fn list_keys(&self) -> Vec<String> {
        self.data
            .read()
            .items
            .keys()
            .map(StoreKey::to_text)
            .collect()
    }

    /// See [`ThreadSafeStore::len`].
    fn len(&self) -> usize {
        self.data.read().items.len()
    }

    /// See [`ThreadSafeStore::replace`].
    fn replace(&self, items: impl IntoIterator<Item = (String, Arc<K>)>) -> Result<(), IndexError> {
        let _writer = self.writer.lock();
        let indexers = Arc::clone(&self.data.read().indexers);
        let items = items.into_iter();
        // Sized once: a map grown by doubling to a million entries copies itself twenty times.
        let mut latest: Map<StoreKey, Arc<K>> = Map::default();
        latest.reserve(items.size_hint().0);
        for (key, obj) in items {
            latest.insert(StoreKey::new(&key), obj);
        }
        let mut next = Data::empty(Arc::clone(&indexers));
        next.items.reserve(latest.len());
        for (key, obj) in latest {
            let planned = self.plan_put(&indexers, key, &obj, None)?;
            next.apply(&indexers, planned);
        }
        self.install(next);
        Ok(())
    }

    /// Swaps `next` in for the whole content (a pointer swap under the write lock; the old
    /// content is dropped after the lock is released) and reports the new size.
    fn install(&self, next: Data<K, S>) {
        let len = next.items.len();
        let old = std::mem::replace(&mut *self.data.write(), next);
        drop(old);
        self.report_size(len);
    }

    /// See [`ThreadSafeStore::replace_encoded`].
    fn replace_encoded(&self, list: &EncodedList<K>) -> Result<(), StoreError> {
        let _writer = self.writer.lock();
        let indexers = Arc::clone(&self.data.read().indexers);
        // For a repeated key the last one wins, as in `replace`.
        let mut last: Map<&str, usize> = Map::default();
        last.reserve(list.len());
        for (i, (key, _)) in list.entries().iter().enumerate() {
            last.insert(key.as_str(), i);
        }
        let mut next = Data::empty(Arc::clone(&indexers));
        next.items.reserve(last.len());
        for (i, (key, bytes)) in list.entries().iter().enumerate() {
            if last.get(key.as_str()) != Some(&i) {
                continue;
            }
            let key = StoreKey::new(key);
            // The values computed when the item was encoded, if the index functions are
            // still those; else the item is decoded (one at a time) to compute them.
            let precomputed = list.index_values(i, &indexers).and_then(|values| {
                let stored = S::adopt_encoded(&self.representation, list.codec(), bytes)?;
                Some((stored, values.clone()))
            });
            let (stored, new_values) = match precomputed {
                Some(found) => found,
                None => {
                    let obj = Arc::new(
                        list.codec()
                            .decode(&bytes.slice)
                            .map_err(StoreError::Codec)?,
                    );
                    let values = index_values(&indexers, key.as_bytes(), &obj)?;
                    let stored = S::adopt(
                        &self.representation,
                        list.codec(),
                        key.as_bytes(),
                        bytes,
                        &obj,
                    );
                    (stored, values)
                }
            };
            next.apply(
                &indexers,
                Planned::Put {
                    key,
                    stored,
                    new_values,
                    old: OldValues::Absent,
                },
            );
        }
        self.install(next);
        Ok(())
    }

    /// See [`ThreadSafeStore::index`].
    fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>, IndexError> {
        let f = self
            .data
            .read()
            .indexers
            .get(index_name)
            .cloned()
            .ok_or_else(|| IndexError::NoSuchIndex(index_name.to_owned()))?;
        let values = index_values_of(index_name, &f, b"", obj)?;
        let gathered = {
            let data = self.data.read();
            let Some(index) = data.indices.get(index_name) else {
                return Ok(Vec::new());
            };
            let mut matches: Map<&StoreKey, &S> = Map::default();
            for value in &values {
                if let Some(bucket) = index.get(value.as_str()) {
                    matches.extend(bucket.iter());
                }
            }
            let mut gathered = Gathered::with_capacity(matches.len());
            for (key, stored) in matches {
                gathered.push(key, stored);
            }
            gathered
        };
        Ok(self.finish(gathered))
    }

    /// See [`ThreadSafeStore::index_keys`].
    fn index_keys(&self, index_name: &str, indexed_value: &str) -> Result<Vec<String>, IndexError> {
        let data = self.data.read();
        let mut keys: Vec<String> = data
            .bucket(index_name, indexed_value)?
            .map_or_else(Vec::new, |bucket| {
                bucket.keys().map(StoreKey::to_text).collect()
            });
        drop(data);
        keys.sort_unstable();
        Ok(keys)
    }

    /// See [`ThreadSafeStore::by_index`].
    fn by_index(&self, index_name: &str, indexed_value: &str) -> Result<Vec<Arc<K>>, IndexError> {
        let gathered = {
            let data = self.data.read();
            let bucket = data.bucket(index_name, indexed_value)?;
            let mut gathered = Gathered::with_capacity(bucket.map_or(0, Bucket::len));
            for (key, stored) in bucket.into_iter().flatten() {
                gathered.push(key, stored);
            }
            gathered
        };
        Ok(self.finish(gathered))
    }

    /// See [`ThreadSafeStore::count_by_index`].
    fn count_by_index(&self, index_name: &str, indexed_value: &str) -> Result<usize, IndexError> {
        Ok(self
            .data
            .read()
            .bucket(index_name, indexed_value)?
            .map_or(0, Bucket::len))
    }

    /// See [`ThreadSafeStore::list_index_func_values`].
    fn list_index_func_values(&self, index_name: &str) -> Vec<String> {
        self.data
            .read()
            .indices
            .get(index_name)
            .map_or_else(Vec::new, |index| index.keys().cloned().collect())
    }

    /// See [`ThreadSafeStore::get_indexers`].
    fn get_indexers(&self) -> Indexers<K> {
        Indexers::clone(&self.data.read().indexers)
    }

    /// See [`ThreadSafeStore::current_indexers`].
    fn current_indexers(&self) -> Arc<Indexers<K>> {
        Arc::clone(&self.data.read().indexers)
    }

    /// See [`ThreadSafeStore::add_indexers`].
    fn add_indexers(&self, new: Indexers<K>) -> Result<(), IndexError> {
        let _writer = self.writer.lock();
        let (current, stored) = {
            let data = self.data.read();
            let stored: Vec<(StoreKey, S)> = data
                .items
                .iter()
                .map(|(k, o)| (k.clone(), o.clone()))
                .collect();
            (Arc::clone(&data.indexers), stored)
        };
        let conflicts: Vec<String> = new
            .names()
            .filter(|n| current.contains(n))
            .map(str::to_owned)
            .collect();
        if !conflicts.is_empty() {
            return Err(IndexError::Conflict(conflicts));
        }
        let objects: Vec<(StoreKey, S, Arc<K>)> = stored
            .into_iter()
            .filter_map(|(key, stored)| {
                let obj = self.load(key.as_bytes(), &stored)?;
                Some((key, stored, obj))
            })
            .collect();
        let mut built: Vec<(String, Index<S>)> = Vec::with_capacity(new.len());
        for (name, f) in new.iter() {
            let mut index = Index::default();
            for (key, stored, obj) in &objects {
                for value in index_values_of(name, f, key.as_bytes(), obj)? {
                    index
                        .entry(value)
                        .or_default()
                        .insert(key.clone(), stored.clone());
                }
            }
            built.push((name.to_owned(), index));
        }
        let mut merged = Indexers::clone(&current);
        for (name, f) in new.iter() {
            merged.insert(name, f.clone());
        }
        let mut data = self.data.write();
        data.indexers = Arc::new(merged);
        data.indices.extend(built);
        Ok(())
    }
}

impl<K> Core<K> {
    /// The table for `representation`.
    #[cfg(feature = "compact")]
    fn new(indexers: Arc<Indexers<K>>, representation: CacheRepresentation<K>) -> Self {
        let representation = Representation::new(representation);
        if representation.is_compact() {
            Self::Compact(Table::new(indexers, representation))
        } else {
            Self::Decoded(Table::new(indexers, representation))
        }
    }

    /// The decoded table: the compact one is not compiled in.
    #[cfg(not(feature = "compact"))]
    fn new(indexers: Arc<Indexers<K>>, representation: CacheRepresentation<K>) -> Self {
        if representation.is_compact() {
            tracing::warn!(
                "compact cache representation asked for, but kclient-cache was built without \
                 its `compact` feature: objects are kept decoded"
            );
        }
        let decoded = Representation::new(CacheRepresentation::Decoded);
        Self::Decoded(Table::new(indexers, decoded))
    }
}

impl<K> ThreadSafeStore<K> {
    /// An empty store with these indices, holding objects decoded.
    pub fn new(indexers: Indexers<K>) -> Self {
        Self::with_representation(indexers, CacheRepresentation::Decoded)
    }

    /// An empty store with these indices, holding objects in `representation` (see
    /// [`CacheRepresentation`]).
    ///
    /// The compact representation needs this crate's `compact` feature (in its default
    /// features, and in the facade's through `compact-protobuf`). Without it a store asked
    /// for it logs a warning and holds its objects decoded: [`is_compact`](Self::is_compact)
    /// tells which it got.
    pub fn with_representation(
        indexers: Indexers<K>,
        representation: CacheRepresentation<K>,
    ) -> Self {
        Self {
            core: Core::new(Arc::new(indexers), representation),
            rv: RwLock::new(String::new()),
        }
    }

    /// Reports the store's size to `metrics` after every change.
    pub fn with_metrics(mut self, metrics: Arc<dyn CacheMetrics>) -> Self {
        on_core!(&mut self.core, store => store.metrics = Some(metrics));
        self
    }

    /// The latest resourceVersion the store has seen (client-go's
    /// `LastStoreSyncResourceVersion`): that of the object of the newest
    /// [`add`](Self::add)/[`update`](Self::update)/[`delete_with_object`](Self::delete_with_object)
    /// (the last object of a [`transaction`](Self::transaction)), the list's of the newest
    /// [`replace_with_resource_version`](Self::replace_with_resource_version), or the newest
    /// [`bookmark`](Self::bookmark)'s, whichever came last; `""` before any.
    ///
    /// An informer's store is written only as its deltas are handed to the handlers, so this
    /// is the resourceVersion up to which the handlers have been told everything: what
    /// KEP-5647's consistency checks compare a controller's writes with. client-go answers
    /// `""` when its `AtomicFIFO` gate is off; kclient's informer has no such mode off (with
    /// `FifoKind::Delta` no bookmark reaches the store, so the value moves only with objects).
    pub fn last_store_sync_resource_version(&self) -> String {
        self.rv.read().clone()
    }

    /// Records `resource_version` as the latest the store has seen, with no object changed
    /// (client-go's `Bookmark`): a watch bookmark, applied in order with the other deltas.
    pub fn bookmark(&self, resource_version: &str) {
        self.set_resource_version(resource_version);
    }

    /// Sets the latest resourceVersion and reports it to the metrics.
    fn set_resource_version(&self, resource_version: &str) {
        {
            let mut rv = self.rv.write();
            if *rv != resource_version {
                resource_version.clone_into(&mut rv);
            }
        }
        on_core!(&self.core, store => if let Some(m) = &store.metrics {
            m.store_resource_version(resource_version);
        });
    }

    /// Whether objects are kept in the compact representation.
    pub fn is_compact(&self) -> bool {
        match self.core {
            Core::Decoded(_) => false,
            #[cfg(feature = "compact")]
            Core::Compact(_) => true,
        }
    }

    /// Stores `obj` under `key`, replacing what was there (client-go's `Add`; `Add` and
    /// `Update` are the same operation). Indices are updated by difference: only the values
    /// that changed are touched. If an index function fails, nothing changes.
    ///
    /// Cost: the index functions on the new and the old object (and, in the compact
    /// representation, encoding the new one), outside any lock readers wait on; then
    /// `O(changed values)` under the write lock.
    pub fn add(&self, key: &str, obj: Arc<K>) -> Result<(), IndexError> {
        on_core!(&self.core, store => store.add(key, obj))
    }

    /// The same as [`add`](Self::add) (client-go's `Update`).
    pub fn update(&self, key: &str, obj: Arc<K>) -> Result<(), IndexError> {
        self.add(key, obj)
    }

    /// Removes the object under `key` and its index entries; a missing key is no error.
    /// Returns the removed object.
    pub fn delete(&self, key: &str) -> Result<Option<Arc<K>>, IndexError> {
        on_core!(&self.core, store => store.delete(key))
    }

    /// The object under `key`: the stored `Arc` (decoded representation, no allocation) or a
    /// decoded copy (compact).
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        on_core!(&self.core, store => store.get(key))
    }

    /// Whether an object is stored under `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        on_core!(&self.core, store => store.contains_key(key))
    }

    /// Every object, in no particular order. Cost: one `Vec` and one `Arc` clone per object
    /// (and a decode per object in the compact representation).
    pub fn list(&self) -> Vec<Arc<K>> {
        on_core!(&self.core, store => store.list())
    }

    /// The objects for which `keep` is true, in no particular order, cloning only their
    /// `Arc`s. In the decoded representation `keep` runs under the read lock: it should be
    /// quick and must not write to this store.
    pub fn list_filtered(&self, keep: impl FnMut(&K) -> bool) -> Vec<Arc<K>> {
        on_core!(&self.core, store => store.list_filtered(keep))
    }

    /// Every storage key, in no particular order.
    pub fn list_keys(&self) -> Vec<String> {
        on_core!(&self.core, store => store.list_keys())
    }

    /// How many objects are stored.
    pub fn len(&self) -> usize {
        on_core!(&self.core, store => store.len())
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Replaces the whole content with `items` (for a repeated key the last one wins) and
    /// rebuilds every index (client-go's `Replace`; the resourceVersion is not kept).
    ///
    /// Atomic: the new map and its indices are built aside and swapped in, so a reader sees
    /// either the old content or the new one, and no reader waits while it is built. If an
    /// index function fails, nothing changes.
    pub fn replace(
        &self,
        items: impl IntoIterator<Item = (String, Arc<K>)>,
    ) -> Result<(), IndexError> {
        on_core!(&self.core, store => store.replace(items))
    }

    /// Several writes applied as one step (client-go's `Transaction`): `(key, Some(obj))`
    /// stores `obj`, `(key, None)` removes the key; each sees the ones before it. Readers see
    /// the store before all of them or after all of them. A write whose index function fails
    /// is skipped (its result says why) and the others are applied.
    pub fn transaction(
        &self,
        writes: Vec<(String, Option<Arc<K>>)>,
    ) -> Vec<Result<(), IndexError>> {
        on_core!(&self.core, store => store.transaction(writes))
    }

    /// [`replace`](Self::replace) with a list of encoded objects (a compact informer's list):
    /// each is decoded for the index functions only, and a compact store keeps the listed
    /// bytes themselves. Never holds more than one of the list's objects decoded. If an index
    /// function fails or an object does not decode, nothing changes.
    pub fn replace_encoded(&self, list: &EncodedList<K>) -> Result<(), StoreError> {
        on_core!(&self.core, store => store.replace_encoded(list))
    }

    /// The objects whose values under `index_name` meet the values `obj` has under it,
    /// each once (client-go's `Index`). The index function runs outside the lock.
    pub fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>, IndexError> {
        on_core!(&self.core, store => store.index(index_name, obj))
    }

    /// The storage keys whose objects have `indexed_value` under `index_name`, sorted
    /// (client-go's `IndexKeys`). An unknown index is an error.
    pub fn index_keys(
        &self,
        index_name: &str,
        indexed_value: &str,
    ) -> Result<Vec<String>, IndexError> {
        on_core!(&self.core, store => store.index_keys(index_name, indexed_value))
    }

    /// The objects that have `indexed_value` under `index_name` (client-go's `ByIndex`), in
    /// no particular order. An unknown index is an error. Cost: one `Vec` and one `Arc`
    /// clone per match, read from the index itself (no lookup per key), and in the compact
    /// representation a decode per match.
    pub fn by_index(
        &self,
        index_name: &str,
        indexed_value: &str,
    ) -> Result<Vec<Arc<K>>, IndexError> {
        on_core!(&self.core, store => store.by_index(index_name, indexed_value))
    }

    /// How many objects have `indexed_value` under `index_name`, without collecting them.
    pub fn count_by_index(
        &self,
        index_name: &str,
        indexed_value: &str,
    ) -> Result<usize, IndexError> {
        on_core!(&self.core, store => store.count_by_index(index_name, indexed_value))
    }

    /// Every value present under `index_name` (client-go's `ListIndexFuncValues`); empty,
    /// not an error, for an unknown index. Values whose last object left are gone.
    pub fn list_index_func_values(&self, index_name: &str) -> Vec<String> {
        on_core!(&self.core, store => store.list_index_func_values(index_name))
    }

    /// The index functions (client-go's `GetIndexers`).
    pub fn get_indexers(&self) -> Indexers<K> {
        on_core!(&self.core, store => store.get_indexers())
    }

    /// The index functions as shared now (the same `Arc` until indexers are added): what an
    /// [`EncodedList`] computes its items' values with.
    pub(crate) fn current_indexers(&self) -> Arc<Indexers<K>> {
        on_core!(&self.core, store => store.current_indexers())
    }

    /// Adds indices (client-go's `AddIndexers`). A name that exists already is a conflict
    /// and nothing is added. On a populated store the new indices are built over every
    /// object (client-go ≥ 1.30 does the same); if an index function fails, nothing is added.
    pub fn add_indexers(&self, new: Indexers<K>) -> Result<(), IndexError> {
        on_core!(&self.core, store => store.add_indexers(new))
    }
}

/// The writes that also record the written object's resourceVersion (see
/// [`ThreadSafeStore::last_store_sync_resource_version`]). An object without one (a transform
/// took it away) leaves the recorded one as it was, as a non-object does in client-go.
impl<K: Resource> ThreadSafeStore<K> {
    /// [`add`](Self::add), recording `obj`'s resourceVersion as the latest seen (client-go's
    /// `threadSafeMap.Add`).
    pub fn add_object(&self, key: &str, obj: Arc<K>) -> Result<(), IndexError> {
        self.add(key, Arc::clone(&obj))?;
        self.observe(obj.resource_version());
        Ok(())
    }

    /// Removes the object under `key` and records `obj`'s resourceVersion (client-go's
    /// `DeleteWithObject`): the deleted object's last state carries the resourceVersion of its
    /// deletion. Returns the removed object.
    pub fn delete_with_object(&self, key: &str, obj: &K) -> Result<Option<Arc<K>>, IndexError> {
        let removed = self.delete(key)?;
        self.observe(obj.resource_version());
        Ok(removed)
    }

    /// [`transaction`](Self::transaction), recording the resourceVersion of the last write's
    /// object (client-go's `Transaction`; a last write that removes a key records nothing).
    pub fn transaction_objects(
        &self,
        writes: Vec<(String, Option<Arc<K>>)>,
    ) -> Vec<Result<(), IndexError>> {
        let last = writes.last().and_then(|(_, obj)| obj.clone());
        let results = self.transaction(writes);
        self.observe(last.as_deref().and_then(ResourceExt::resource_version));
        results
    }

    fn observe(&self, resource_version: Option<&str>) {
        if let Some(rv) = resource_version {
            self.set_resource_version(rv);
        }
    }
}

impl<K> ThreadSafeStore<K> {
    /// [`replace`](Self::replace), recording the list's `resource_version` as the latest seen
    /// (client-go's `threadSafeMap.Replace(items, resourceVersion)`).
    pub fn replace_with_resource_version(
        &self,
        items: impl IntoIterator<Item = (String, Arc<K>)>,
        resource_version: &str,
    ) -> Result<(), IndexError> {
        self.replace(items)?;
        self.set_resource_version(resource_version);
        Ok(())
    }

    /// [`replace_encoded`](Self::replace_encoded), recording the list's `resource_version`.
    pub fn replace_encoded_with_resource_version(
        &self,
        list: &EncodedList<K>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        self.replace_encoded(list)?;
        self.set_resource_version(resource_version);
        Ok(())
    }
}

impl<K> std::fmt::Debug for ThreadSafeStore<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadSafeStore")
            .field("len", &self.len())
            .field("indexers", &self.get_indexers())
            .field("compact", &self.is_compact())
            .finish()
    }
}
