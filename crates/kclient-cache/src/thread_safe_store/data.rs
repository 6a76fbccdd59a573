//! What a [`ThreadSafeStore`](super::ThreadSafeStore)'s readers see — the objects by storage
//! key and their indices, always consistent with each other — and the planned writes applied
//! to them under the write lock.

use std::collections::HashMap;
use std::sync::Arc;

use foldhash::fast::RandomState;

use crate::index::{IndexError, IndexFunc, Indexers};
use crate::store_key::StoreKey;

pub(super) type Map<Key, V> = HashMap<Key, V, RandomState>;
/// The objects under one indexed value, by storage key: client-go's set of keys, with each
/// key's object next to it, so that a lookup reads the objects without going through `items`
/// (hashing each key again and probing a map of every object). Each entry shares the one in
/// `items`: a write replaces both under the same lock.
pub(super) type Bucket<S> = Map<StoreKey, S>;
/// Indexed value → the objects that have it (client-go's `Index`).
pub(super) type Index<S> = Map<String, Bucket<S>>;

/// What readers see: the objects (each in its slot `S`, see `stored.rs`) and their indices,
/// always consistent with each other.
pub(super) struct Data<K, S> {
    pub(super) items: Map<StoreKey, S>,
    pub(super) indexers: Arc<Indexers<K>>,
    /// Index name → index. An index with no entries may be absent.
    pub(super) indices: Map<String, Index<S>>,
}

impl<K, S: Clone> Data<K, S> {
    pub(super) fn empty(indexers: Arc<Indexers<K>>) -> Self {
        Self {
            items: Map::default(),
            indexers,
            indices: Map::default(),
        }
    }

    /// Files `obj` under `values` of `index`, replacing the object a value held for `key`.
    pub(super) fn insert_index_values(
        &mut self,
        index: &str,
        values: &[String],
        key: &StoreKey,
        obj: &S,
    ) {
        let index = match self.indices.get_mut(index) {
            Some(index) => index,
            None => self.indices.entry(index.to_owned()).or_default(),
        };
        for value in values {
            match index.get_mut(value.as_str()) {
                Some(bucket) => match bucket.get_mut(key.as_bytes()) {
                    Some(filed) => *filed = obj.clone(),
                    None => {
                        bucket.insert(key.clone(), obj.clone());
                    }
                },
                None => {
                    let mut bucket = Bucket::default();
                    bucket.insert(key.clone(), obj.clone());
                    index.insert(value.clone(), bucket);
                }
            }
        }
    }

    /// Gives the entries of `key` under `values` of `index` (which hold an older version of
    /// the object) the new object: an update whose indexed values did not change.
    pub(super) fn refresh_index_values(
        &mut self,
        index: &str,
        values: &[String],
        key: &[u8],
        obj: &S,
    ) {
        let Some(index) = self.indices.get_mut(index) else {
            return;
        };
        for value in values {
            if let Some(filed) = index
                .get_mut(value.as_str())
                .and_then(|bucket| bucket.get_mut(key))
            {
                *filed = obj.clone();
            }
        }
    }

    /// Removes `key` under `values`, dropping sets that become empty (client-go issue
    /// #84959: high-cardinality values would otherwise leak).
    pub(super) fn remove_index_values(&mut self, index: &str, values: &[String], key: &[u8]) {
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

    /// Removes `key` from every index, whatever its values: for an old object that cannot be
    /// decoded (so its values are unknown).
    pub(super) fn remove_from_every_index(&mut self, key: &[u8]) {
        for index in self.indices.values_mut() {
            index.retain(|_, bucket| {
                bucket.remove(key);
                !bucket.is_empty()
            });
        }
    }

    pub(super) fn bucket(
        &self,
        index: &str,
        value: &str,
    ) -> Result<Option<&Bucket<S>>, IndexError> {
        if !self.indexers.contains(index) {
            return Err(IndexError::NoSuchIndex(index.to_owned()));
        }
        Ok(self.indices.get(index).and_then(|i| i.get(value)))
    }
}

/// The indexed values of one object under every index, in the indexers' order.
pub(crate) type IndexValues = Vec<Vec<String>>;

/// What a key held before a write, as far as the indices are concerned.
pub(super) enum OldValues {
    /// Nothing.
    Absent,
    /// An object with these values.
    Known(IndexValues),
    /// An object that does not decode: its values are unknown, so every index is searched.
    Unknown,
}

/// A write worked out (index functions run, the object in its slot), applied under the write
/// lock by [`Data::apply`].
pub(super) enum Planned<S> {
    Put {
        key: StoreKey,
        stored: S,
        new_values: IndexValues,
        old: OldValues,
    },
    Remove {
        key: String,
        old: OldValues,
    },
}

impl<K, S: Clone> Data<K, S> {
    /// Applies one planned write: the indices by difference (only the values that changed
    /// are touched), then the object map.
    pub(super) fn apply(&mut self, indexers: &Indexers<K>, write: Planned<S>) {
        match write {
            Planned::Put {
                key,
                stored,
                new_values,
                old,
            } => {
                if matches!(old, OldValues::Unknown) {
                    self.remove_from_every_index(key.as_bytes());
                }
                for (i, name) in indexers.names().enumerate() {
                    let new = &new_values[i];
                    match &old {
                        OldValues::Known(old) if old[i] == *new => {
                            self.refresh_index_values(name, new, key.as_bytes(), &stored);
                        }
                        OldValues::Known(old) => {
                            let removed: Vec<String> = old[i]
                                .iter()
                                .filter(|v| !new.contains(v))
                                .cloned()
                                .collect();
                            self.remove_index_values(name, &removed, key.as_bytes());
                            // Values kept are filed again: their entries must hold the new
                            // object.
                            self.insert_index_values(name, new, &key, &stored);
                        }
                        OldValues::Absent | OldValues::Unknown => {
                            self.insert_index_values(name, new, &key, &stored)
                        }
                    }
                }
                self.items.insert(key, stored);
            }
            Planned::Remove { key, old } => {
                match old {
                    OldValues::Known(values) => {
                        for (name, values) in indexers.names().zip(&values) {
                            self.remove_index_values(name, values, key.as_bytes());
                        }
                    }
                    OldValues::Unknown => self.remove_from_every_index(key.as_bytes()),
                    OldValues::Absent => {}
                }
                self.items.remove(key.as_bytes());
            }
        }
    }
}

pub(crate) fn index_values<K>(
    indexers: &Indexers<K>,
    key: &[u8],
    obj: &K,
) -> Result<IndexValues, IndexError> {
    indexers
        .iter()
        .map(|(name, f)| index_values_of(name, f, key, obj))
        .collect()
}

/// `key` (the object's storage key) only names the object in an error.
pub(super) fn index_values_of<K>(
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
