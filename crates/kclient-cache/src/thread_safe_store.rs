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

use std::collections::HashMap;
use std::sync::Arc;

use foldhash::fast::RandomState;
use parking_lot::{Mutex, RwLock};

use crate::index::{IndexError, IndexFunc, Indexers};
use crate::metrics::CacheMetrics;
use crate::store_key::StoreKey;

type Map<Key, V> = HashMap<Key, V, RandomState>;
/// The objects under one indexed value, by storage key: client-go's set of keys, with each
/// key's object next to it, so that a lookup reads the objects without going through `items`
/// (hashing each key again and probing a map of every object). Each `Arc` is the one in
/// `items`: a write replaces both under the same lock.
type Bucket<K> = Map<StoreKey, Arc<K>>;
/// Indexed value → the objects that have it (client-go's `Index`).
type Index<K> = Map<String, Bucket<K>>;

/// What readers see: the objects and their indices, always consistent with each other.
struct Data<K> {
    items: Map<StoreKey, Arc<K>>,
    indexers: Arc<Indexers<K>>,
    /// Index name → index. An index with no entries may be absent.
    indices: Map<String, Index<K>>,
}

impl<K> Data<K> {
    fn empty(indexers: Arc<Indexers<K>>) -> Self {
        Self {
            items: Map::default(),
            indexers,
            indices: Map::default(),
        }
    }

    /// Files `obj` under `values` of `index`, replacing the object a value held for `key`.
    fn insert_index_values(
        &mut self,
        index: &str,
        values: &[String],
        key: &StoreKey,
        obj: &Arc<K>,
    ) {
        let index = match self.indices.get_mut(index) {
            Some(index) => index,
            None => self.indices.entry(index.to_owned()).or_default(),
        };
        for value in values {
            match index.get_mut(value.as_str()) {
                Some(bucket) => match bucket.get_mut(key.as_bytes()) {
                    Some(filed) => *filed = Arc::clone(obj),
                    None => {
                        bucket.insert(key.clone(), Arc::clone(obj));
                    }
                },
                None => {
                    let mut bucket = Bucket::default();
                    bucket.insert(key.clone(), Arc::clone(obj));
                    index.insert(value.clone(), bucket);
                }
            }
        }
    }

    /// Gives the entries of `key` under `values` of `index` (which hold an older version of
    /// the object) the new object: an update whose indexed values did not change.
    fn refresh_index_values(&mut self, index: &str, values: &[String], key: &[u8], obj: &Arc<K>) {
        let Some(index) = self.indices.get_mut(index) else {
            return;
        };
        for value in values {
            if let Some(filed) = index
                .get_mut(value.as_str())
                .and_then(|bucket| bucket.get_mut(key))
            {
                *filed = Arc::clone(obj);
            }
        }
    }

    /// Removes `key` under `values`, dropping sets that become empty (client-go issue
    /// #84959: high-cardinality values would otherwise leak).
    fn remove_index_values(&mut self, index: &str, values: &[String], key: &[u8]) {
        let Some(index) = self.indices.get_mut(index) else {
            return;
        };
        for value in values {
            if let Some(bucket) = index.get_mut(value.as_str()) {
                bucket.remove(key);
                if bucket.is_empty() {
                    index.remove(value.as_str());
                }
            }
        }
    }

    fn bucket(&self, index: &str, value: &str) -> Result<Option<&Bucket<K>>, IndexError> {
        if !self.indexers.contains(index) {
            return Err(IndexError::NoSuchIndex(index.to_owned()));
        }
        Ok(self.indices.get(index).and_then(|i| i.get(value)))
    }
}

/// The indexed values of one object under every index, in the indexers' order.
type IndexValues = Vec<Vec<String>>;

fn index_values<K>(indexers: &Indexers<K>, key: &[u8], obj: &K) -> Result<IndexValues, IndexError> {
    indexers
        .iter()
        .map(|(name, f)| index_values_of(name, f, key, obj))
        .collect()
}

/// `key` (the object's storage key) only names the object in an error.
fn index_values_of<K>(
    name: &str,
    f: &IndexFunc<K>,
    key: &[u8],
    obj: &K,
) -> Result<Vec<String>, IndexError> {
    f.values(obj).map_err(|source| IndexError::IndexFunc {
        key: String::from_utf8_lossy(key).into_owned(),
        index: name.to_owned(),
        source,
    })
}

/// A map from storage keys to `Arc<K>` with named indices, safe to share between threads
/// (client-go's `ThreadSafeStore`). Most code uses it through an
/// [`Indexer`](crate::Indexer), which computes the keys.
///
/// Every read hands out the stored `Arc`s themselves: no object is ever cloned. Objects are
/// immutable once stored (Rust enforces what client-go can only ask for), so an index can
/// never go stale because someone changed a cached object.
pub struct ThreadSafeStore<K> {
    data: RwLock<Data<K>>,
    /// Serialises writers, so the slow part of a write can run without the `RwLock`.
    writer: Mutex<()>,
    metrics: Option<Arc<dyn CacheMetrics>>,
}

impl<K> ThreadSafeStore<K> {
    /// An empty store with these indices.
    pub fn new(indexers: Indexers<K>) -> Self {
        Self {
            data: RwLock::new(Data::empty(Arc::new(indexers))),
            writer: Mutex::new(()),
            metrics: None,
        }
    }

    /// Reports the store's size to `metrics` after every change.
    pub fn with_metrics(mut self, metrics: Arc<dyn CacheMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    fn report_size(&self, len: usize) {
        if let Some(m) = &self.metrics {
            m.store_size(len);
        }
    }

    /// Stores `obj` under `key`, replacing what was there (client-go's `Add`; `Add` and
    /// `Update` are the same operation). Indices are updated by difference: only the values
    /// that changed are touched. If an index function fails, nothing changes.
    ///
    /// Cost: the index functions on the new and the old object, outside any lock readers
    /// wait on; then `O(changed values)` under the write lock.
    pub fn add(&self, key: &str, obj: Arc<K>) -> Result<(), IndexError> {
        let _writer = self.writer.lock();
        let (indexers, old, stored_key) = {
            let data = self.data.read();
            let stored = data.items.get_key_value(key.as_bytes());
            (
                Arc::clone(&data.indexers),
                stored.map(|(_, o)| Arc::clone(o)),
                stored.map(|(k, _)| k.clone()),
            )
        };
        let new_values = index_values(&indexers, key.as_bytes(), &obj)?;
        let old_values = old
            .as_ref()
            .map(|o| index_values(&indexers, key.as_bytes(), o))
            .transpose()?;
        let key = stored_key.unwrap_or_else(|| StoreKey::new(key));
        let len = {
            let mut data = self.data.write();
            for (i, name) in indexers.names().enumerate() {
                let new = &new_values[i];
                match &old_values {
                    Some(old) if old[i] == *new => {
                        data.refresh_index_values(name, new, key.as_bytes(), &obj);
                    }
                    Some(old) => {
                        let removed: Vec<String> = old[i]
                            .iter()
                            .filter(|v| !new.contains(v))
                            .cloned()
                            .collect();
                        data.remove_index_values(name, &removed, key.as_bytes());
                        // Values kept are filed again: their entries must hold the new object.
                        data.insert_index_values(name, new, &key, &obj);
                    }
                    None => data.insert_index_values(name, new, &key, &obj),
                }
            }
            data.items.insert(key, obj);
            data.items.len()
        };
        drop(old);
        self.report_size(len);
        Ok(())
    }

    /// The same as [`add`](Self::add) (client-go's `Update`).
    pub fn update(&self, key: &str, obj: Arc<K>) -> Result<(), IndexError> {
        self.add(key, obj)
    }

    /// Removes the object under `key` and its index entries; a missing key is no error.
    /// Returns the removed object.
    pub fn delete(&self, key: &str) -> Result<Option<Arc<K>>, IndexError> {
        let _writer = self.writer.lock();
        let (indexers, old) = {
            let data = self.data.read();
            (
                Arc::clone(&data.indexers),
                data.items.get(key.as_bytes()).map(Arc::clone),
            )
        };
        let Some(old) = old else {
            return Ok(None);
        };
        let old_values = index_values(&indexers, key.as_bytes(), &old)?;
        let len = {
            let mut data = self.data.write();
            for (name, values) in indexers.names().zip(&old_values) {
                data.remove_index_values(name, values, key.as_bytes());
            }
            data.items.remove(key.as_bytes());
            data.items.len()
        };
        self.report_size(len);
        Ok(Some(old))
    }

    /// The object under `key`: the stored `Arc`, no allocation.
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        self.data.read().items.get(key.as_bytes()).map(Arc::clone)
    }

    /// Whether an object is stored under `key`.
    pub fn contains_key(&self, key: &str) -> bool {
        self.data.read().items.contains_key(key.as_bytes())
    }

    /// Every object, in no particular order. Cost: one `Vec` and one `Arc` clone per object.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.data.read().items.values().map(Arc::clone).collect()
    }

    /// The objects for which `keep` is true, in no particular order, cloning only their
    /// `Arc`s. `keep` runs under the read lock: it should be quick and must not write to
    /// this store.
    pub fn list_filtered(&self, mut keep: impl FnMut(&K) -> bool) -> Vec<Arc<K>> {
        self.data
            .read()
            .items
            .values()
            .filter(|o| keep(o))
            .map(Arc::clone)
            .collect()
    }

    /// Every storage key, in no particular order.
    pub fn list_keys(&self) -> Vec<String> {
        self.data
            .read()
            .items
            .keys()
            .map(StoreKey::to_text)
            .collect()
    }

    /// How many objects are stored.
    pub fn len(&self) -> usize {
        self.data.read().items.len()
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
        let _writer = self.writer.lock();
        let indexers = Arc::clone(&self.data.read().indexers);
        let mut next = Data::empty(Arc::clone(&indexers));
        let items = items.into_iter();
        // Sized once: a map grown by doubling to a million entries copies itself twenty times.
        next.items.reserve(items.size_hint().0);
        for (key, obj) in items {
            next.items.insert(StoreKey::new(&key), obj);
        }
        let mut indexed: Vec<(StoreKey, Arc<K>, IndexValues)> =
            Vec::with_capacity(next.items.len());
        for (key, obj) in &next.items {
            let values = index_values(&indexers, key.as_bytes(), obj)?;
            indexed.push((key.clone(), Arc::clone(obj), values));
        }
        for (key, obj, values) in indexed {
            for (name, values) in indexers.names().zip(&values) {
                next.insert_index_values(name, values, &key, &obj);
            }
        }
        let len = next.items.len();
        let old = std::mem::replace(&mut *self.data.write(), next);
        drop(old);
        self.report_size(len);
        Ok(())
    }

    /// The objects whose values under `index_name` meet the values `obj` has under it,
    /// each once (client-go's `Index`). The index function runs outside the lock.
    pub fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>, IndexError> {
        let f = self
            .data
            .read()
            .indexers
            .get(index_name)
            .cloned()
            .ok_or_else(|| IndexError::NoSuchIndex(index_name.to_owned()))?;
        let values = index_values_of(index_name, &f, b"", obj)?;
        let data = self.data.read();
        let Some(index) = data.indices.get(index_name) else {
            return Ok(Vec::new());
        };
        if let [value] = values.as_slice() {
            return Ok(index
                .get(value.as_str())
                .map_or_else(Vec::new, |bucket| bucket.values().map(Arc::clone).collect()));
        }
        let mut matches: Map<&StoreKey, &Arc<K>> = Map::default();
        for value in &values {
            if let Some(bucket) = index.get(value.as_str()) {
                matches.extend(bucket.iter());
            }
        }
        Ok(matches.into_values().map(Arc::clone).collect())
    }

    /// The storage keys whose objects have `indexed_value` under `index_name`, sorted
    /// (client-go's `IndexKeys`). An unknown index is an error.
    pub fn index_keys(
        &self,
        index_name: &str,
        indexed_value: &str,
    ) -> Result<Vec<String>, IndexError> {
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

    /// The objects that have `indexed_value` under `index_name` (client-go's `ByIndex`), in
    /// no particular order. An unknown index is an error. Cost: one `Vec` and one `Arc`
    /// clone per match, read from the index itself (no lookup per key).
    pub fn by_index(
        &self,
        index_name: &str,
        indexed_value: &str,
    ) -> Result<Vec<Arc<K>>, IndexError> {
        let data = self.data.read();
        Ok(data
            .bucket(index_name, indexed_value)?
            .map_or_else(Vec::new, |bucket| bucket.values().map(Arc::clone).collect()))
    }

    /// How many objects have `indexed_value` under `index_name`, without collecting them.
    pub fn count_by_index(
        &self,
        index_name: &str,
        indexed_value: &str,
    ) -> Result<usize, IndexError> {
        Ok(self
            .data
            .read()
            .bucket(index_name, indexed_value)?
            .map_or(0, Bucket::len))
    }

    /// Every value present under `index_name` (client-go's `ListIndexFuncValues`); empty,
    /// not an error, for an unknown index. Values whose last object left are gone.
    pub fn list_index_func_values(&self, index_name: &str) -> Vec<String> {
        self.data
            .read()
            .indices
            .get(index_name)
            .map_or_else(Vec::new, |index| index.keys().cloned().collect())
    }

    /// The index functions (client-go's `GetIndexers`).
    pub fn get_indexers(&self) -> Indexers<K> {
        Indexers::clone(&self.data.read().indexers)
    }

    /// Adds indices (client-go's `AddIndexers`). A name that exists already is a conflict
    /// and nothing is added. On a populated store the new indices are built over every
    /// object (client-go ≥ 1.30 does the same); if an index function fails, nothing is added.
    pub fn add_indexers(&self, new: Indexers<K>) -> Result<(), IndexError> {
        let _writer = self.writer.lock();
        let (current, objects) = {
            let data = self.data.read();
            let objects: Vec<(StoreKey, Arc<K>)> = data
                .items
                .iter()
                .map(|(k, o)| (k.clone(), Arc::clone(o)))
                .collect();
            (Arc::clone(&data.indexers), objects)
        };
        let conflicts: Vec<String> = new
            .names()
            .filter(|n| current.contains(n))
            .map(str::to_owned)
            .collect();
        if !conflicts.is_empty() {
            return Err(IndexError::Conflict(conflicts));
        }
        let mut built: Vec<(String, Index<K>)> = Vec::with_capacity(new.len());
        for (name, f) in new.iter() {
            let mut index = Index::default();
            for (key, obj) in &objects {
                for value in index_values_of(name, f, key.as_bytes(), obj)? {
                    index
                        .entry(value)
                        .or_default()
                        .insert(key.clone(), Arc::clone(obj));
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

impl<K> std::fmt::Debug for ThreadSafeStore<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let data = self.data.read();
        f.debug_struct("ThreadSafeStore")
            .field("len", &data.items.len())
            .field("indexers", &*data.indexers)
            .finish()
    }
}
