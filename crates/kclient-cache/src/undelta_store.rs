//! [`UndeltaStore`]: a store that pushes its whole content after every change (client-go's
//! `UndeltaStore`), for consumers that want the full state each time rather than deltas.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_cache::{KeyFunc, UndeltaStore};
//!
//! let states = Arc::new(Mutex::new(Vec::new()));
//! let seen = Arc::clone(&states);
//! let store = UndeltaStore::new(
//!     move |all: Vec<Arc<ConfigMap>>| seen.lock().unwrap().push(all.len()),
//!     KeyFunc::meta_namespace(),
//! );
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("a".into());
//! store.add(Arc::new(cm.clone())).unwrap();
//! cm.metadata.name = Some("b".into());
//! store.add(Arc::new(cm)).unwrap();
//! assert_eq!(*states.lock().unwrap(), [1, 2]);
//! ```

use std::fmt;
use std::sync::Arc;

use kclient_core::{DeletedObject, Resource};

use crate::indexer::{new_store, Indexer};
use crate::key_func::KeyFunc;
use crate::store::{Store, StoreError};

type PushFunc<K> = dyn Fn(Vec<Arc<K>>) + Send + Sync;

/// A store that calls its push function with every object it holds after each add, update,
/// delete and replace (client-go's `UndeltaStore`, `NewUndeltaStore(pushFunc, keyFunc)`).
/// A write that fails pushes nothing. Cheap to clone: clones share the store.
pub struct UndeltaStore<K> {
    store: Indexer<K>,
    push: Arc<PushFunc<K>>,
}

impl<K> Clone for UndeltaStore<K> {
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            push: Arc::clone(&self.push),
        }
    }
}

impl<K> fmt::Debug for UndeltaStore<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UndeltaStore")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl<K> UndeltaStore<K> {
    /// An empty store keyed by `key_func` that calls `push` with its content after every
    /// change.
    pub fn new(push: impl Fn(Vec<Arc<K>>) + Send + Sync + 'static, key_func: KeyFunc<K>) -> Self {
        Self {
            store: new_store(key_func),
            push: Arc::new(push),
        }
    }

    fn pushed(&self, written: Result<(), StoreError>) -> Result<(), StoreError> {
        written?;
        (self.push)(self.store.list());
        Ok(())
    }

    /// Replaces the content with `list`, then pushes it.
    pub fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        self.pushed(self.store.replace(list, resource_version))
    }

    /// The store it keeps (reads: `get_by_key`, `list`, `list_keys`…).
    pub fn store(&self) -> &Indexer<K> {
        &self.store
    }
}

impl<K: Resource> UndeltaStore<K> {
    /// Adds `obj`, then pushes the whole content.
    pub fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.pushed(self.store.add(obj))
    }

    /// Updates `obj`, then pushes the whole content.
    pub fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.pushed(self.store.update(obj))
    }

    /// Deletes `obj` (or a tombstone), then pushes the whole content.
    pub fn delete(&self, obj: impl Into<DeletedObject<K>>) -> Result<(), StoreError> {
        self.pushed(self.store.delete(obj))
    }
}

impl<K: Resource + Send + Sync> Store<K> for UndeltaStore<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        UndeltaStore::add(self, obj)
    }

    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        UndeltaStore::update(self, obj)
    }

    fn delete(&self, obj: DeletedObject<K>) -> Result<(), StoreError> {
        UndeltaStore::delete(self, obj)
    }

    fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        UndeltaStore::replace(self, list, resource_version)
    }

    fn resync(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn list_keys(&self) -> Vec<String> {
        self.store.list_keys()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use parking_lot::Mutex;

    use super::*;

    fn cm(name: &str, v: &str) -> Arc<ConfigMap> {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.into());
        cm.data = Some([("v".to_owned(), v.to_owned())].into());
        Arc::new(cm)
    }

    /// client-go's undelta_store_test.go: every write pushes the whole, current content.
    #[test]
    fn every_write_pushes_the_whole_state() {
        let pushes = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&pushes);
        let store = UndeltaStore::new(
            move |all: Vec<Arc<ConfigMap>>| {
                let mut state: Vec<String> = all
                    .iter()
                    .map(|o| {
                        let v = &o.data.as_ref().unwrap()["v"];
                        format!("{}={v}", o.metadata.name.as_deref().unwrap())
                    })
                    .collect();
                state.sort();
                seen.lock().push(state.join(","));
            },
            KeyFunc::meta_namespace(),
        );
        store.add(cm("a", "1")).unwrap();
        store.update(cm("a", "2")).unwrap();
        store.add(cm("b", "1")).unwrap();
        store.delete(cm("a", "2")).unwrap();
        store
            .replace(vec![cm("c", "1"), cm("d", "1")], "9")
            .unwrap();
        assert_eq!(*pushes.lock(), ["a=1", "a=2", "a=2,b=1", "b=1", "c=1,d=1"]);
        assert_eq!(store.store().len(), 2);
    }

    #[test]
    fn a_failed_write_pushes_nothing() {
        let pushes = Arc::new(Mutex::new(0));
        let seen = Arc::clone(&pushes);
        let refusing =
            KeyFunc::new(|o: &ConfigMap| Err(crate::KeyFuncError::new(o, "no key for anything")));
        let store = UndeltaStore::new(move |_: Vec<Arc<ConfigMap>>| *seen.lock() += 1, refusing);
        assert!(store.add(cm("a", "1")).is_err());
        assert!(store.replace(vec![cm("a", "1")], "1").is_err());
        assert_eq!(*pushes.lock(), 0);
    }
}
