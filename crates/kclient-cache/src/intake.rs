//! [`Intake`]: what the informer FIFOs do to every object before they queue it.

use std::sync::Arc;

use kclient_core::{DeletedObject, Resource};

use crate::delta::Delta;
use crate::key_func::{KeyFunc, KeyFuncError};
use crate::store::StoreError;
use crate::transform::{transform, TransformFunc};

/// A FIFO's key function and transformer: each object from the server is transformed, then
/// keyed, before it is queued ([`DeltaFifo`](crate::DeltaFifo) and
/// [`RealFifo`](crate::RealFifo) alike).
pub(crate) struct Intake<K> {
    key_func: KeyFunc<K>,
    transformer: Option<TransformFunc<K>>,
}

impl<K: Resource + Clone + 'static> Intake<K> {
    /// `key_function`, [`KeyFunc::meta_namespace`] when `None`, and `transformer`.
    pub(crate) fn new(
        key_function: Option<KeyFunc<K>>,
        transformer: Option<TransformFunc<K>>,
    ) -> Self {
        Self {
            key_func: key_function.unwrap_or_else(KeyFunc::meta_namespace),
            transformer,
        }
    }

    /// The key function.
    pub(crate) fn key_func(&self) -> &KeyFunc<K> {
        &self.key_func
    }

    /// The key of a delta: a tombstone's recorded key, otherwise the key function's; an
    /// error for the whole-store deltas.
    pub(crate) fn key_of(&self, delta: &Delta<K>) -> Result<String, KeyFuncError> {
        delta.key(&self.key_func)
    }

    /// `obj` transformed, with its key.
    pub(crate) fn object(&self, obj: Arc<K>) -> Result<(String, Arc<K>), StoreError> {
        let obj = transform(self.transformer.as_ref(), obj)?;
        Ok((self.key_func.key(&obj)?, obj))
    }

    /// The `Deleted` delta of `obj` (its object transformed, a tombstone as it is), with its
    /// key.
    pub(crate) fn deleted(&self, obj: DeletedObject<K>) -> Result<(String, Delta<K>), StoreError> {
        let obj = match obj {
            DeletedObject::Object(o) => {
                DeletedObject::Object(transform(self.transformer.as_ref(), o)?)
            }
            tombstone => tombstone,
        };
        let delta = Delta::Deleted(obj);
        Ok((self.key_of(&delta)?, delta))
    }
}
