//! The two store traits: [`Store`], what a reflector writes into (an [`Indexer`], a
//! [`DeltaFifo`] or a [`RealFifo`]), and [`KeyListerGetter`], what a FIFO reads the
//! consumer's state through (client-go's `KnownObjects`).
//!
//! client-go's `Store` interface also has the reads (`List`, `Get`, `GetByKey`); here each
//! type has its own reads as inherent methods with the return type that fits it (an
//! `Arc<K>` for the indexer, a [`Deltas`](crate::Deltas) for DeltaFIFO).
//!
//! [`Indexer`]: crate::Indexer
//! [`DeltaFifo`]: crate::DeltaFifo
//! [`RealFifo`]: crate::RealFifo

use std::sync::Arc;

use kclient_core::{BoxError, DeletedObject};

use crate::representation::EncodedList;

use crate::index::IndexError;
use crate::key_func::KeyFuncError;

/// Why a store refused a write.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The key function failed for an object (client-go's `KeyError`).
    #[error(transparent)]
    Key(#[from] KeyFuncError),
    /// An index function failed; the store is unchanged.
    #[error(transparent)]
    Index(#[from] IndexError),
    /// The transform function failed for an object; nothing was queued for it.
    #[error("couldn't transform object {object}: {source}")]
    Transform {
        /// The object as `namespace/name`.
        object: String,
        /// The transform's error.
        source: BoxError,
    },
    /// An object could not be encoded for, or decoded from, an [`EncodedList`] (a compact
    /// informer's list).
    #[error("couldn't encode or decode a listed object: {0}")]
    Codec(BoxError),
}

/// What a reflector writes into: the write half of client-go's `Store` interface.
///
/// Every method is synchronous and quick; none waits on a consumer.
pub trait Store<K>: Send + Sync {
    /// An object was added.
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError>;
    /// An object was updated.
    fn update(&self, obj: Arc<K>) -> Result<(), StoreError>;
    /// An object was deleted; a tombstone when the deletion was inferred.
    fn delete(&self, obj: DeletedObject<K>) -> Result<(), StoreError>;
    /// The whole content is `list`, as of `resource_version` (after a list).
    fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError>;
    /// The same with the objects still encoded (a compact informer's list). A store that
    /// cannot keep them so decodes them all and calls [`replace`](Self::replace); a
    /// [`RealFifo`](crate::RealFifo) queues them as they are, for a compact cache to adopt one
    /// by one.
    fn replace_encoded(
        &self,
        list: EncodedList<K>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        let objects = list.decode_all().map_err(StoreError::Codec)?;
        self.replace(objects, resource_version)
    }
    /// A periodic resync: replay what the consumer knows (a no-op for a plain store).
    fn resync(&self) -> Result<(), StoreError>;
    /// The keys of what the store holds (for a FIFO, of what is queued).
    fn list_keys(&self) -> Vec<String>;
    /// The reflector has seen `resource_version`: called after every watch event it writes,
    /// and for every bookmark (client-go's `ResourceVersionUpdater.UpdateResourceVersion`,
    /// which a store opts into by implementing the interface; here by overriding this
    /// method). A list's resourceVersion comes with [`replace`](Self::replace). Does nothing
    /// by default.
    fn update_resource_version(&self, resource_version: &str) {
        let _ = resource_version;
    }
    /// The latest resourceVersion the store has seen (client-go's
    /// `Store.LastStoreSyncResourceVersion`, KEP-5647): an
    /// [`Indexer`](crate::Indexer) answers the resourceVersion of its newest write, list or
    /// [`bookmark`](Self::bookmark). `""` by default, for a store that does not track it (a
    /// FIFO; client-go's FIFOs do not either), which consistency checks read as "unknown"
    /// and let pass.
    fn last_store_sync_resource_version(&self) -> String {
        String::new()
    }
    /// A watch bookmark at `resource_version` (client-go's `Store.Bookmark`, which the
    /// reflector calls for every BOOKMARK event): an [`Indexer`](crate::Indexer) records it as
    /// the latest seen; a [`RealFifo`](crate::RealFifo) queues a
    /// [`Delta::Bookmark`](crate::Delta::Bookmark) so the consumer's store takes it in order
    /// with the objects before it. Does nothing by default.
    fn bookmark(&self, resource_version: &str) {
        let _ = resource_version;
    }
}

/// A shared store is a store (the informer shares its FIFO between the reflector and its own
/// pop loop).
impl<K, S: Store<K> + ?Sized> Store<K> for Arc<S> {
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        (**self).add(obj)
    }

    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        (**self).update(obj)
    }

    fn delete(&self, obj: DeletedObject<K>) -> Result<(), StoreError> {
        (**self).delete(obj)
    }

    fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        (**self).replace(list, resource_version)
    }

    fn replace_encoded(
        &self,
        list: EncodedList<K>,
        resource_version: &str,
    ) -> Result<(), StoreError> {
        (**self).replace_encoded(list, resource_version)
    }

    fn resync(&self) -> Result<(), StoreError> {
        (**self).resync()
    }

    fn list_keys(&self) -> Vec<String> {
        (**self).list_keys()
    }

    fn update_resource_version(&self, resource_version: &str) {
        (**self).update_resource_version(resource_version)
    }

    fn last_store_sync_resource_version(&self) -> String {
        (**self).last_store_sync_resource_version()
    }

    fn bookmark(&self, resource_version: &str) {
        (**self).bookmark(resource_version)
    }
}

/// What a FIFO needs of the consumer's store to detect deletions and to resync (client-go's
/// `KeyListerGetter`; the informer passes its [`Indexer`](crate::Indexer)).
pub trait KeyListerGetter<K>: Send + Sync {
    /// Every key the consumer knows.
    fn list_keys(&self) -> Vec<String>;
    /// The consumer's object under `key`.
    fn get_by_key(&self, key: &str) -> Option<Arc<K>>;
}
