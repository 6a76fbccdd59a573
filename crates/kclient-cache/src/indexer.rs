//! [`Indexer`]: a [`ThreadSafeStore`] that computes its own keys (client-go's `cache`
//! struct behind `NewStore` and `NewIndexer`).
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_cache::{Indexer, Indexers, KeyFunc, NAMESPACE_INDEX};
//!
//! let indexer = Indexer::new(KeyFunc::deletion_handling_meta_namespace(), Indexers::<Pod>::namespace());
//! let mut pod = Pod::default();
//! pod.metadata.namespace = Some("prod".into());
//! pod.metadata.name = Some("web-0".into());
//! let pod = Arc::new(pod);
//! indexer.add(pod.clone()).unwrap();
//!
//! // Reads hand out the stored Arc: the very object that was added.
//! assert!(Arc::ptr_eq(&indexer.get_by_key("prod/web-0").unwrap(), &pod));
//! assert_eq!(indexer.by_index(NAMESPACE_INDEX, "prod").unwrap().len(), 1);
//! indexer.delete(pod).unwrap();
//! assert!(indexer.is_empty());
//! ```

use std::fmt;
use std::sync::Arc;

use kclient_core::{DeletedObject, ObjectKey, Resource};

use crate::index::{IndexError, Indexers};
use crate::key_func::KeyFunc;
use crate::representation::EncodedList;
use crate::store::{KeyListerGetter, Store, StoreError};
use crate::thread_safe_store::ThreadSafeStore;
use crate::transform::TransformFunc;

/// A store of `Arc<K>` keyed by a [`KeyFunc`], with named indices: client-go's `Indexer`
/// (and, built with no indices, its `Store`).
///
/// A cheap handle: clones share the same store, so the informer, its listers and any number
/// of workers can hold one. Every read returns the stored `Arc`s, never a copy of an object.
pub struct Indexer<K> {
    key_func: KeyFunc<K>,
    store: Arc<ThreadSafeStore<K>>,
    transformer: Option<Transformer<K>>,
}

/// [`TransformFunc::apply`], with its bounds erased so that the indexer needs none.
type Transformer<K> = Arc<dyn Fn(Arc<K>) -> Result<Arc<K>, StoreError> + Send + Sync>;

impl<K> Clone for Indexer<K> {
    fn clone(&self) -> Self {
        Self {
            key_func: self.key_func.clone(),
            store: Arc::clone(&self.store),
            transformer: self.transformer.clone(),
        }
    }
}

impl<K> fmt::Debug for Indexer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Indexer")
            .field("key_func", &self.key_func)
            .field("store", &self.store)
            .field("transformer", &self.transformer.is_some())
            .finish()
    }
}

impl<K: Resource + Clone + 'static> Indexer<K> {
    /// Transforms every object added, updated or replaced before it is stored (client-go's
    /// `NewStore(keyFunc, WithTransformer(f))`): a store that trims what it caches. Deletes
    /// are not transformed. A transform error fails the write, which stores nothing.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kclient_cache::{new_store, KeyFunc, TransformFunc};
    ///
    /// let store = new_store(KeyFunc::meta_namespace()).with_transformer(TransformFunc::new(
    ///     |cm: &mut ConfigMap| {
    ///         cm.data = None;
    ///         Ok(())
    ///     },
    /// ));
    /// let mut cm = ConfigMap::default();
    /// cm.metadata.name = Some("settings".into());
    /// cm.data = Some([("big".to_owned(), "x".repeat(1000))].into());
    /// store.add(Arc::new(cm)).unwrap();
    /// assert_eq!(store.get_by_key("settings").unwrap().data, None);
    /// ```
    pub fn with_transformer(mut self, transformer: TransformFunc<K>) -> Self {
        self.transformer = Some(Arc::new(move |obj| transformer.apply(obj)));
        self
    }
}

/// client-go's `NewStore`: an [`Indexer`] with no indices.
pub fn new_store<K>(key_func: KeyFunc<K>) -> Indexer<K> {
    Indexer::new(key_func, Indexers::new())
}

impl<K> Indexer<K> {
    /// An empty indexer (client-go's `NewIndexer`).
    pub fn new(key_func: KeyFunc<K>, indexers: Indexers<K>) -> Self {
        Self {
            key_func,
            store: Arc::new(ThreadSafeStore::new(indexers)),
            transformer: None,
        }
    }

    /// An indexer over a store built beforehand, e.g. one
    /// [`with_metrics`](ThreadSafeStore::with_metrics).
    pub fn from_store(key_func: KeyFunc<K>, store: ThreadSafeStore<K>) -> Self {
        Self {
            key_func,
            store: Arc::new(store),
            transformer: None,
        }
    }

    /// The key function.
    pub fn key_func(&self) -> &KeyFunc<K> {
        &self.key_func
    }

    /// The underlying thread-safe store, addressed by key.
    pub fn thread_safe_store(&self) -> &ThreadSafeStore<K> {
        &self.store
    }

    pub(crate) fn transformed(&self, obj: Arc<K>) -> Result<Arc<K>, StoreError> {
        match &self.transformer {
            Some(transform) => transform(obj),
            None => Ok(obj),
        }
    }

    /// Removes the object under `key` (client-go passes an `ExplicitKey` for this).
    pub fn delete_by_key(&self, key: &str) -> Result<Option<Arc<K>>, StoreError> {
        Ok(self.store.delete(key)?)
    }

    /// The stored object with the key of `obj`.
    pub fn get(&self, obj: &K) -> Result<Option<Arc<K>>, StoreError> {
        let key = self.key_func.key(obj)?;
        Ok(self.store.get(&key))
    }

    /// The object under `key`: the stored `Arc`, with no allocation.
    pub fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        self.store.get(key)
    }

    /// The object a workqueue's [`ObjectKey`] names, in a cache keyed `namespace/name` (an
    /// informer's, [`KeyFunc::deletion_handling_meta_namespace`], whose keys are what an
    /// `ObjectKey` displays): what a worker reads for the key it took from its queue (see
    /// [`deleted_object_key`](crate::deleted_object_key) for the keys of deletions).
    pub fn get_by_object_key(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.store.get(&key.to_string())
    }

    /// Every object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.store.list()
    }

    /// Every key, in no particular order.
    pub fn list_keys(&self) -> Vec<String> {
        self.store.list_keys()
    }

    /// How many objects are stored.
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.store.is_empty()
    }

    /// Replaces the whole content with `list` (client-go's `Replace`: a full rebuild, unlike
    /// DeltaFIFO's) and records `resource_version` as the latest seen. Atomic; see
    /// [`ThreadSafeStore::replace`]. If any key or index function fails, nothing changes.
    pub fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        let items = list
            .into_iter()
            .map(|obj| Ok((self.key_func.key(&obj)?, self.transformed(obj)?)))
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok(self
            .store
            .replace_with_resource_version(items, resource_version)?)
    }

    /// The latest resourceVersion the store has seen (client-go's
    /// `Store.LastStoreSyncResourceVersion`); see
    /// [`ThreadSafeStore::last_store_sync_resource_version`].
    pub fn last_store_sync_resource_version(&self) -> String {
        self.store.last_store_sync_resource_version()
    }

    /// Records `resource_version` as the latest the store has seen (client-go's
    /// `Store.Bookmark`).
    pub fn bookmark(&self, resource_version: &str) {
        self.store.bookmark(resource_version);
    }

    /// [`replace`](Self::replace) with a list of encoded objects (see
    /// [`ThreadSafeStore::replace_encoded`]).
    pub fn replace_encoded(&self, list: &EncodedList<K>) -> Result<(), StoreError> {
        self.store.replace_encoded(list)
    }

    /// A no-op: a plain store has nothing to replay (client-go's `cache.Resync`).
    pub fn resync(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// The objects sharing an indexed value with `obj` under `index_name`.
    pub fn index(&self, index_name: &str, obj: &K) -> Result<Vec<Arc<K>>, IndexError> {
        self.store.index(index_name, obj)
    }

    /// The keys of the objects with `indexed_value` under `index_name`, sorted.
    pub fn index_keys(
        &self,
        index_name: &str,
        indexed_value: &str,
    ) -> Result<Vec<String>, IndexError> {
        self.store.index_keys(index_name, indexed_value)
    }

    /// The objects with `indexed_value` under `index_name`.
    pub fn by_index(
        &self,
        index_name: &str,
        indexed_value: &str,
    ) -> Result<Vec<Arc<K>>, IndexError> {
        self.store.by_index(index_name, indexed_value)
    }

    /// Every value present under `index_name` (empty for an unknown index).
    pub fn list_index_func_values(&self, index_name: &str) -> Vec<String> {
        self.store.list_index_func_values(index_name)
    }

    /// The index functions.
    pub fn get_indexers(&self) -> Indexers<K> {
        self.store.get_indexers()
    }

    /// The index functions as shared now (see [`ThreadSafeStore::current_indexers`]).
    pub(crate) fn current_indexers(&self) -> Arc<Indexers<K>> {
        self.store.current_indexers()
    }

    /// Adds indices, building them over the objects already stored.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<(), IndexError> {
        self.store.add_indexers(indexers)
    }
}

/// The writes, which also record the written object's resourceVersion (see
/// [`ThreadSafeStore::last_store_sync_resource_version`]).
impl<K: Resource> Indexer<K> {
    /// Adds `obj` (or replaces the object with its key), transformed first if the indexer
    /// has a transformer (the key is the untransformed object's, as in client-go), and records
    /// its resourceVersion.
    pub fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        let key = self.key_func.key(&obj)?;
        let obj = self.transformed(obj)?;
        Ok(self.store.add_object(&key, obj)?)
    }

    /// The same as [`add`](Self::add).
    pub fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.add(obj)
    }

    /// Removes the object with the key of `obj`: an object, or a tombstone when the key
    /// function is deletion-handling. Removing an absent key is no error. An object's
    /// resourceVersion (that of its deletion) is recorded; a tombstone's is not (client-go's
    /// `DeleteWithObject` cannot read one from a `DeletedFinalStateUnknown` either).
    pub fn delete(&self, obj: impl Into<DeletedObject<K>>) -> Result<(), StoreError> {
        let obj = obj.into();
        let key = self.key_func.key_of_deleted(&obj)?;
        match &obj {
            DeletedObject::Object(o) => {
                self.store.delete_with_object(&key, o)?;
            }
            DeletedObject::Tombstone(_) => {
                self.store.delete(&key)?;
            }
        }
        Ok(())
    }
}

impl<K: Resource + Send + Sync> Store<K> for Indexer<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        Indexer::add(self, obj)
    }

    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        Indexer::update(self, obj)
    }

    fn delete(&self, obj: DeletedObject<K>) -> Result<(), StoreError> {
        Indexer::delete(self, obj)
    }

    fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        Indexer::replace(self, list, resource_version)
    }

    fn resync(&self) -> Result<(), StoreError> {
        Indexer::resync(self)
    }

    fn list_keys(&self) -> Vec<String> {
        Indexer::list_keys(self)
    }

    fn last_store_sync_resource_version(&self) -> String {
        Indexer::last_store_sync_resource_version(self)
    }

    fn bookmark(&self, resource_version: &str) {
        Indexer::bookmark(self, resource_version);
    }
}

impl<K: Send + Sync> KeyListerGetter<K> for Indexer<K> {
    fn list_keys(&self) -> Vec<String> {
        Indexer::list_keys(self)
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        Indexer::get_by_key(self, key)
    }
}
