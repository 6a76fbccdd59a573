//! Transforms: a function the FIFOs apply to each object before queueing it, so what enters
//! the cache is already trimmed (client-go's `TransformFunc`).
//!
//! A transform edits the object in place. It runs once per object that arrives from the
//! server (added, updated, deleted, relisted), never on resync deltas (those objects come
//! from the cache, already transformed) nor on tombstones, and never under a queue's lock.
//! It must be idempotent all the same: client-go documents that an object can pass twice
//! through a relist.
//!
//! The object arrives as an `Arc`; when the FIFO holds the only reference (as it does for
//! what a reflector decodes) the edit happens in place, otherwise on a copy.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::Pod;
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
//! use kclient_cache::TransformFunc;
//!
//! let strip = TransformFunc::<Pod>::strip_managed_fields();
//! let mut pod = Pod::default();
//! pod.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
//! let pod = strip.apply(Arc::new(pod)).unwrap();
//! assert!(pod.metadata.managed_fields.is_none());
//! ```

use std::fmt;
use std::sync::Arc;

use kclient_core::{BoxError, Resource};

use crate::key_func::describe;
use crate::store::StoreError;

type TransformFn<K> = dyn Fn(&mut K) -> Result<(), BoxError> + Send + Sync;

/// A transform (client-go's `TransformFunc`), cheap to clone.
///
/// A transform that drops `metadata.managedFields` (the ready-made ones, or any marked with
/// [`also_strip_managed_fields`](Self::also_strip_managed_fields)) lets the reflector ask
/// for objects decoded without them (`ListOptions::omit_managed_fields`): they are skipped in
/// the response instead of built and dropped, about half the decoding cost of a Pod.
pub struct TransformFunc<K> {
    f: Arc<TransformFn<K>>,
    strips_managed_fields: bool,
}

impl<K> Clone for TransformFunc<K> {
    fn clone(&self) -> Self {
        Self {
            f: Arc::clone(&self.f),
            strips_managed_fields: self.strips_managed_fields,
        }
    }
}

impl<K> fmt::Debug for TransformFunc<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TransformFunc")
    }
}

impl<K: Resource + Clone> TransformFunc<K> {
    /// Wraps a function that edits an object in place.
    pub fn new<F>(f: F) -> Self
    where
        F: Fn(&mut K) -> Result<(), BoxError> + Send + Sync + 'static,
    {
        Self {
            f: Arc::new(f),
            strips_managed_fields: false,
        }
    }

    /// The ready-made transform that drops `metadata.managedFields`, typically 40% of an
    /// object, which controllers rarely read.
    pub fn strip_managed_fields() -> Self
    where
        K: 'static,
    {
        Self::new(|_: &mut K| Ok(())).also_strip_managed_fields()
    }

    /// This transform, followed by dropping `metadata.managedFields`; marked as doing so, so
    /// that the objects it receives are decoded without them in the first place.
    pub fn also_strip_managed_fields(self) -> Self
    where
        K: 'static,
    {
        if self.strips_managed_fields {
            return self;
        }
        let f = self.f;
        Self {
            f: Arc::new(move |obj: &mut K| {
                f(obj)?;
                obj.meta_mut().managed_fields = None;
                Ok(())
            }),
            strips_managed_fields: true,
        }
    }

    /// Whether this transform drops `metadata.managedFields` (so the objects may be decoded
    /// without them).
    pub fn strips_managed_fields(&self) -> bool {
        self.strips_managed_fields
    }

    /// Applies the transform: in place when `obj` is the only reference, else on a copy.
    pub fn apply(&self, mut obj: Arc<K>) -> Result<Arc<K>, StoreError> {
        (self.f)(Arc::make_mut(&mut obj)).map_err(|source| StoreError::Transform {
            object: describe(obj.as_ref()),
            source,
        })?;
        Ok(obj)
    }
}

impl TransformFunc<kclient_core::DynamicObject> {
    /// The ready-made transform that keeps only the type and the metadata of a dynamic
    /// object (its `spec`, `status`, `data` and every other field are dropped) and strips
    /// `metadata.managedFields`: an informer that needs names, labels, owners and
    /// finalizers caches what a metadata-only informer would. Idempotent.
    pub fn metadata_only() -> Self {
        Self::new(|obj: &mut kclient_core::DynamicObject| {
            obj.data = serde_json::Value::Object(serde_json::Map::new());
            Ok(())
        })
        .also_strip_managed_fields()
    }
}

/// Applies an optional transform.
pub(crate) fn transform<K: Resource + Clone>(
    transformer: Option<&TransformFunc<K>>,
    obj: Arc<K>,
) -> Result<Arc<K>, StoreError> {
    match transformer {
        Some(t) => t.apply(obj),
        None => Ok(obj),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kclient_core::DynamicObject;

    #[test]
    fn metadata_only_keeps_type_and_metadata() {
        let obj: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "metadata": {"name": "a", "namespace": "ns", "labels": {"app": "x"},
                         "managedFields": [{"manager": "kubectl"}]},
            "spec": {"cronSpec": "* * * * */5"}, "status": {"replicas": 2}
        }))
        .unwrap();
        let t = TransformFunc::metadata_only();
        let once = t.apply(Arc::new(obj)).unwrap();
        assert_eq!(once.data, serde_json::json!({}));
        assert_eq!(once.metadata.name.as_deref(), Some("a"));
        assert!(once.metadata.labels.as_ref().unwrap().contains_key("app"));
        assert!(once.metadata.managed_fields.is_none());
        assert_eq!(once.types.as_ref().unwrap().kind, "CronTab");
        let twice = t.apply(Arc::clone(&once)).unwrap();
        assert_eq!(*twice, *once, "idempotent");
    }
}
