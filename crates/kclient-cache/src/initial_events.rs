//! [`InitialEvents`]: where a streaming list gathers its initial events until the bookmark
//! that ends them (client-go's `watchList` gathers them in a temporary `Store`).
//!
//! The events arrive one by one and are handed over all at once, as one `replace`: so this
//! is a map from key to object that keeps the order of arrival and hands its objects over by
//! moving them, without the indexer's locks, indices and shared keys, and without cloning an
//! `Arc` per object (a streaming list of a million ConfigMaps from kclient-fake went from
//! 11.2 s to 9.3–9.7 s with it; `docs/benchmarks.md`, scenario 6).

use std::collections::HashMap;
use std::sync::Arc;

use foldhash::fast::RandomState;
use kclient_core::Resource;
use parking_lot::Mutex;

use crate::index::Indexers;
use crate::key_func::KeyFunc;
use crate::representation::{EncodedList, Listed, ObjectCodec};
use crate::store::{Store, StoreError};
use crate::stored::Encoded;
use crate::thread_safe_store::{index_values, IndexValues};
use kclient_core::DeletedObject;

/// The objects of a streaming list's initial events, by key (the deletion-handling
/// namespace/name key), in order of arrival.
/// With a codec (a compact informer's), each object is kept encoded from its event on, with
/// its index values when the informer's index functions are known (see
/// [`EncodedList::indexed_by`]).
pub(crate) struct InitialEvents<K> {
    key_func: KeyFunc<K>,
    codec: Option<ObjectCodec<K>>,
    indexers: Option<Arc<Indexers<K>>>,
    gathered: Mutex<Gathered<K>>,
}

struct Gathered<K> {
    /// Key → position in `objects`.
    positions: HashMap<String, usize, RandomState>,
    /// The objects; `None` where one was deleted.
    objects: Vec<Option<Held<K>>>,
}

/// One gathered object: decoded, or encoded under its key (with its index values, if
/// computed).
enum Held<K> {
    Object(Arc<K>),
    Encoded(String, Encoded, Option<IndexValues>),
}

impl<K> Default for Gathered<K> {
    fn default() -> Self {
        Self {
            positions: HashMap::default(),
            objects: Vec::new(),
        }
    }
}

impl<K: Resource + 'static> InitialEvents<K> {
    /// Gathers decoded objects, or, given a codec, encoded ones (their index values computed
    /// with `indexers`, if given).
    pub(crate) fn new(codec: Option<ObjectCodec<K>>, indexers: Option<Arc<Indexers<K>>>) -> Self {
        Self {
            key_func: KeyFunc::deletion_handling_meta_namespace(),
            codec,
            indexers,
            gathered: Mutex::new(Gathered::default()),
        }
    }

    /// The objects gathered, in order of first arrival.
    pub(crate) fn into_listed(self) -> Listed<K> {
        let gathered = self.gathered.into_inner();
        let held = gathered.objects.into_iter().flatten();
        match self.codec {
            None => Listed::Decoded(
                held.filter_map(|h| match h {
                    Held::Object(obj) => Some(obj),
                    Held::Encoded(..) => None,
                })
                .collect(),
            ),
            Some(codec) => {
                let (items, values): (Vec<_>, Vec<_>) = held
                    .filter_map(|h| match h {
                        Held::Encoded(key, bytes, values) => Some(((key, bytes), values)),
                        Held::Object(_) => None,
                    })
                    .unzip();
                let list = EncodedList::from_entries(codec, items);
                Listed::Encoded(match self.indexers {
                    Some(indexers) => list.with_index_values(indexers, values),
                    None => list,
                })
            }
        }
    }

    fn put(&self, obj: Arc<K>) -> Result<(), StoreError> {
        let key = self.key_func.key(&obj)?;
        let obj = match &self.codec {
            None => Held::Object(obj),
            Some(codec) => Held::Encoded(
                key.clone(),
                EncodedList::encode_one(codec, &obj).map_err(StoreError::Codec)?,
                self.indexers
                    .as_ref()
                    .and_then(|indexers| index_values(indexers, key.as_bytes(), &obj).ok()),
            ),
        };
        let mut gathered = self.gathered.lock();
        let Gathered { positions, objects } = &mut *gathered;
        match positions.get(&key) {
            Some(&at) => objects[at] = Some(obj),
            None => {
                positions.insert(key, objects.len());
                objects.push(Some(obj));
            }
        }
        Ok(())
    }
}

impl<K: Resource + Send + Sync + 'static> Store<K> for InitialEvents<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.put(obj)
    }

    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.put(obj)
    }

    fn delete(&self, obj: DeletedObject<K>) -> Result<(), StoreError> {
        let key = self.key_func.key_of_deleted(&obj)?;
        let mut gathered = self.gathered.lock();
        let Gathered { positions, objects } = &mut *gathered;
        if let Some(at) = positions.remove(&key) {
            objects[at] = None;
        }
        Ok(())
    }

    fn replace(&self, list: Vec<Arc<K>>, _resource_version: &str) -> Result<(), StoreError> {
        *self.gathered.lock() = Gathered::default();
        list.into_iter().try_for_each(|obj| self.put(obj))
    }

    fn resync(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn list_keys(&self) -> Vec<String> {
        self.gathered.lock().positions.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use kclient_core::DeletedFinalStateUnknown;

    fn cm(ns: &str, name: &str, rv: &str) -> Arc<ConfigMap> {
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some(ns.into());
        cm.metadata.name = Some(name.into());
        cm.metadata.resource_version = Some(rv.into());
        Arc::new(cm)
    }

    fn objects(events: InitialEvents<ConfigMap>) -> Vec<Arc<ConfigMap>> {
        match events.into_listed() {
            Listed::Decoded(objects) => objects,
            Listed::Encoded(list) => list.decode_all().unwrap(),
        }
    }

    fn described(objects: &[Arc<ConfigMap>]) -> Vec<String> {
        objects
            .iter()
            .map(|o| {
                format!(
                    "{}/{}@{}",
                    o.metadata.namespace.as_deref().unwrap_or_default(),
                    o.metadata.name.as_deref().unwrap_or_default(),
                    o.metadata.resource_version.as_deref().unwrap_or_default()
                )
            })
            .collect()
    }

    /// A later event for a key replaces the earlier object in place; a deletion (of an
    /// object or a tombstone) removes it; a key seen again after its deletion comes last.
    #[test]
    fn keeps_the_last_state_of_each_key_in_order_of_arrival() {
        let events = InitialEvents::<ConfigMap>::new(None, None);
        events.add(cm("a", "x", "1")).unwrap();
        events.add(cm("a", "y", "2")).unwrap();
        events.add(cm("b", "x", "3")).unwrap();
        events.update(cm("a", "x", "4")).unwrap();
        events
            .delete(DeletedObject::Object(cm("a", "y", "5")))
            .unwrap();
        events
            .delete(DeletedObject::Tombstone(DeletedFinalStateUnknown {
                key: "b/x".into(),
                obj: Some(cm("b", "x", "3")),
            }))
            .unwrap();
        events.add(cm("a", "y", "6")).unwrap();
        let mut keys = events.list_keys();
        keys.sort();
        assert_eq!(keys, ["a/x", "a/y"]);
        assert_eq!(described(&objects(events)), ["a/x@4", "a/y@6"]);
    }

    /// With a codec, the same objects in the same order come out of an encoded list, with
    /// the index values of each as it was last put, given the index functions.
    #[test]
    fn keeps_them_encoded_given_a_codec() {
        let indexers = Arc::new(Indexers::namespace());
        let events = InitialEvents::<ConfigMap>::new(
            Some(ObjectCodec::for_type()),
            Some(Arc::clone(&indexers)),
        );
        events.add(cm("a", "x", "1")).unwrap();
        events.add(cm("b", "y", "2")).unwrap();
        events.update(cm("a", "x", "3")).unwrap();
        let Listed::Encoded(list) = events.into_listed() else {
            panic!("decoded objects gathered")
        };
        assert_eq!(list.keys().collect::<Vec<_>>(), ["a/x", "b/y"]);
        assert_eq!(described(&list.decode_all().unwrap()), ["a/x@3", "b/y@2"]);
        assert_eq!(
            list.index_values(1, &indexers),
            Some(&vec![vec!["b".to_string()]])
        );
        assert_eq!(list.index_values(1, &Arc::new(Indexers::namespace())), None);
    }

    /// The objects are handed over, not copied: the `Arc`s are the ones that came in.
    #[test]
    fn hands_the_objects_over_without_cloning() {
        let events = InitialEvents::<ConfigMap>::new(None, None);
        let obj = cm("a", "x", "1");
        events.add(Arc::clone(&obj)).unwrap();
        let objects = objects(events);
        assert!(Arc::ptr_eq(&objects[0], &obj));
        assert_eq!(Arc::strong_count(&obj), 2);
    }
}
