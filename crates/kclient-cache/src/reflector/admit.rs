//! [`Admission`]: what a listed or watched object becomes on its way into the store — the
//! consumer's cached `Arc` when it holds the same version, else the object transformed and
//! compacted; or, for a compact informer's list, the object encoded.

use std::sync::Arc;

use kclient_core::{Resource, ResourceExt};
use parking_lot::Mutex;

use crate::indexer::Indexer;
use crate::representation::{EncodedList, ObjectCodec};
use crate::store::StoreError;
use crate::transform::{transform, TransformFunc};

/// How received objects are admitted (the reflector's transform, known objects, compaction
/// and list codec; see [`ReflectorOptions`](crate::ReflectorOptions)).
pub(super) struct Admission<K> {
    pub(super) transform: Option<TransformFunc<K>>,
    pub(super) known_objects: Option<Indexer<K>>,
    pub(super) codec: Option<ObjectCodec<K>>,
    compaction: Compaction<K>,
}

/// How a received object gets exact capacities
/// ([`ReflectorOptions::compact_objects`](crate::ReflectorOptions::compact_objects)).
enum Compaction<K> {
    /// Stored as received.
    Keep,
    /// Fitted in place by its protobuf codec's walk.
    Fit(fn(&mut K)),
    /// Stored as a copy (a type without a codec).
    Copy,
}

impl<K: Clone + 'static> Compaction<K> {
    fn new(compact_objects: bool) -> Self {
        match (compact_objects, kclient_protobuf::registry::codec::<K>()) {
            (false, _) => Compaction::Keep,
            (true, Some(codec)) => Compaction::Fit(codec.fitter()),
            (true, None) => Compaction::Copy,
        }
    }

    fn apply(&self, mut obj: Arc<K>) -> Arc<K> {
        match self {
            Compaction::Keep => obj,
            Compaction::Fit(fit) => {
                // The object was just made (and transformed): the `Arc` is its only owner.
                fit(Arc::make_mut(&mut obj));
                obj
            }
            Compaction::Copy => Arc::new(K::clone(&obj)),
        }
    }
}

impl<K: Resource + Clone + 'static> Admission<K> {
    pub(super) fn new(
        transform: Option<TransformFunc<K>>,
        known_objects: Option<Indexer<K>>,
        codec: Option<ObjectCodec<K>>,
        compact_objects: bool,
    ) -> Self {
        Self {
            transform,
            known_objects,
            codec,
            compaction: Compaction::new(compact_objects),
        }
    }

    /// Whether the transform drops managedFields, so lists and watches may skip them while
    /// decoding.
    pub(super) fn omits_managed_fields(&self) -> bool {
        self.transform
            .as_ref()
            .is_some_and(TransformFunc::strips_managed_fields)
    }

    /// What a listed or watched object becomes in the store: the cached `Arc` if the
    /// consumer holds the same version, else the object, transformed and compacted.
    pub(super) fn admit(&self, obj: K) -> Result<Arc<K>, StoreError> {
        if let Some(cached) = self.cached_same_version(&obj) {
            return Ok(cached);
        }
        let obj = transform(self.transform.as_ref(), Arc::new(obj))?;
        Ok(self.compaction.apply(obj))
    }

    /// [`admit`](Self::admit) for an encoded list: the object transformed, then keyed and
    /// appended to `list` encoded (and dropped).
    pub(super) fn admit_encoded(
        &self,
        obj: K,
        list: &Mutex<EncodedList<K>>,
    ) -> Result<(), StoreError> {
        let obj = transform(self.transform.as_ref(), Arc::new(obj))?;
        let key = kclient_core::meta_namespace_key(&*obj);
        list.lock().push(key, &obj).map_err(StoreError::Codec)
    }

    fn cached_same_version(&self, obj: &K) -> Option<Arc<K>> {
        let known = self.known_objects.as_ref()?;
        // The first sync's objects are all new: no key to compute for each of them.
        if known.is_empty() {
            return None;
        }
        let rv = obj.resource_version().filter(|rv| !rv.is_empty())?;
        let key = known.key_func().key(obj).ok()?;
        let cached = known.get_by_key(&key)?;
        (cached.resource_version() == Some(rv)).then_some(cached)
    }
}
