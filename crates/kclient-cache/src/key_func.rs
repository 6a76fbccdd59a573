//! Key functions: how a store turns an object into the key it is stored under.
//!
//! A store is built with a [`KeyFunc`] value. The two client-go uses are ready-made:
//! [`KeyFunc::meta_namespace`] (client-go's `MetaNamespaceKeyFunc`, what the FIFOs use) and
//! [`KeyFunc::deletion_handling_meta_namespace`] (`DeletionHandlingMetaNamespaceKeyFunc`, what
//! the informer's indexer uses, because a delete may carry a [`DeletedFinalStateUnknown`]
//! tombstone instead of an object). [`KeyFunc::new`] takes any function; it must be
//! deterministic.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_cache::KeyFunc;
//! use kclient_core::{DeletedFinalStateUnknown, DeletedObject};
//!
//! let mut pod = Pod::default();
//! pod.metadata.namespace = Some("prod".into());
//! pod.metadata.name = Some("web-0".into());
//!
//! let keys = KeyFunc::<Pod>::deletion_handling_meta_namespace();
//! assert_eq!(keys.key(&pod).unwrap(), "prod/web-0");
//! let tombstone = DeletedObject::Tombstone(DeletedFinalStateUnknown { key: "prod/gone".into(), obj: None });
//! assert_eq!(keys.key_of_deleted(&tombstone).unwrap(), "prod/gone");
//!
//! // The plain variant refuses tombstones, as client-go's MetaNamespaceKeyFunc does.
//! assert!(KeyFunc::<Pod>::meta_namespace().key_of_deleted(&tombstone).is_err());
//! ```
//!
//! [`DeletedFinalStateUnknown`]: kclient_core::DeletedFinalStateUnknown

use std::fmt;
use std::sync::Arc;

use kclient_core::{meta_namespace_key, DeletedObject, KeyError, ObjectKey, Resource, ResourceExt};

/// A key function failed: client-go's `KeyError{Obj, Err}`. It names the object (never its
/// content); the key function's own error, if it gave one, is its
/// [`source`](std::error::Error::source) (client-go's `Unwrap`).
#[derive(Debug, Clone)]
pub struct KeyFuncError {
    /// The object as `namespace/name` (or `name`), or `a tombstone for <key>`.
    pub object: String,
    /// Why no key could be made.
    pub reason: String,
    /// The key function's error.
    pub source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl fmt::Display for KeyFuncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "couldn't create key for object {}: {}",
            self.object, self.reason
        )
    }
}

/// The source is the key function's error itself (not the `Arc` holding it), so callers can
/// downcast it.
impl std::error::Error for KeyFuncError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Equal when they name the same object for the same reason (errors have no equality).
impl PartialEq for KeyFuncError {
    fn eq(&self, other: &Self) -> bool {
        self.object == other.object && self.reason == other.reason
    }
}

impl Eq for KeyFuncError {}

impl KeyFuncError {
    /// A key error for `obj` with the given reason.
    pub fn new<K: Resource + ?Sized>(obj: &K, reason: impl Into<String>) -> Self {
        Self::described(describe(obj), reason)
    }

    /// A key error for `obj` caused by `source`, the key function's own error (its message is
    /// the reason).
    pub fn with_source<K: Resource + ?Sized>(
        obj: &K,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        let source: Arc<dyn std::error::Error + Send + Sync> = Arc::from(source.into());
        Self {
            object: describe(obj),
            reason: source.to_string(),
            source: Some(source),
        }
    }

    /// A key error for what `object` describes (`namespace/name`, `a tombstone for …`).
    pub fn described(object: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            object: object.into(),
            reason: reason.into(),
            source: None,
        }
    }
}

/// `namespace/name` (or `name`) of an object, for messages.
pub(crate) fn describe<K: Resource + ?Sized>(obj: &K) -> String {
    match obj.namespace() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{}", obj.name_any()),
        _ => obj.name_any().to_owned(),
    }
}

type KeyFn<K> = dyn Fn(&K) -> Result<String, KeyFuncError> + Send + Sync;

/// A key function, as a value a store is built with (client-go's `KeyFunc`).
///
/// Cloning is cheap (an `Arc`). Whether it accepts tombstones is part of the value:
/// [`key_of_deleted`](Self::key_of_deleted) gives a tombstone's key only for a
/// deletion-handling key function.
pub struct KeyFunc<K> {
    f: Arc<KeyFn<K>>,
    handles_tombstones: bool,
}

impl<K> Clone for KeyFunc<K> {
    fn clone(&self) -> Self {
        Self {
            f: Arc::clone(&self.f),
            handles_tombstones: self.handles_tombstones,
        }
    }
}

impl<K> fmt::Debug for KeyFunc<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyFunc")
            .field("handles_tombstones", &self.handles_tombstones)
            .finish_non_exhaustive()
    }
}

impl<K: Resource + 'static> KeyFunc<K> {
    /// client-go's `MetaNamespaceKeyFunc`: `namespace/name`, or `name` for cluster-scoped
    /// objects. A tombstone has no key under it.
    pub fn meta_namespace() -> Self {
        Self::new(|obj: &K| Ok(meta_namespace_key(obj)))
    }

    /// client-go's `DeletionHandlingMetaNamespaceKeyFunc`: a tombstone's own key, otherwise
    /// [`meta_namespace`](Self::meta_namespace). The informer's indexer uses it.
    pub fn deletion_handling_meta_namespace() -> Self {
        Self::meta_namespace().deletion_handling()
    }
}

impl<K> KeyFunc<K> {
    /// A custom key function. It must be deterministic: the same object always gets the
    /// same key. It does not accept tombstones unless made
    /// [`deletion_handling`](Self::deletion_handling).
    pub fn new<F>(f: F) -> Self
    where
        F: Fn(&K) -> Result<String, KeyFuncError> + Send + Sync + 'static,
    {
        Self {
            f: Arc::new(f),
            handles_tombstones: false,
        }
    }

    /// The same function, which also gives a [`DeletedFinalStateUnknown`] tombstone its
    /// recorded key (client-go wraps a key function in the same way).
    ///
    /// [`DeletedFinalStateUnknown`]: kclient_core::DeletedFinalStateUnknown
    pub fn deletion_handling(mut self) -> Self {
        self.handles_tombstones = true;
        self
    }

    /// Whether tombstones get their recorded key.
    pub fn handles_tombstones(&self) -> bool {
        self.handles_tombstones
    }

    /// The key of `obj`.
    pub fn key(&self, obj: &K) -> Result<String, KeyFuncError> {
        (self.f)(obj)
    }

    /// The key of a deleted object: the object's key, or, for a tombstone, its recorded key
    /// when this is a deletion-handling key function and an error otherwise.
    pub fn key_of_deleted(&self, obj: &DeletedObject<K>) -> Result<String, KeyFuncError> {
        match obj {
            DeletedObject::Object(o) => self.key(o),
            DeletedObject::Tombstone(t) if self.handles_tombstones => Ok(t.key.clone()),
            DeletedObject::Tombstone(t) => Err(KeyFuncError::described(
                format!("a tombstone for {:?}", t.key),
                "this key function does not accept DeletedFinalStateUnknown",
            )),
        }
    }
}

/// The [`ObjectKey`] of a deletion an informer's handler receives: the object's own for a
/// deletion the watch reported, the tombstone's key (the informer cache's `namespace/name`)
/// for one a relist inferred. What a controller puts on its workqueue, so that the queue and
/// the cache are keyed alike ([`Indexer::get_by_object_key`](crate::Indexer::get_by_object_key)
/// reads the cache by it). An error for a tombstone whose key has more than one `/` (a
/// cache with a key function of its own).
pub fn deleted_object_key<K: Resource>(deleted: &DeletedObject<K>) -> Result<ObjectKey, KeyError> {
    match deleted {
        DeletedObject::Object(obj) => Ok(ObjectKey::from_object(obj.as_ref())),
        DeletedObject::Tombstone(tombstone) => tombstone.key.parse(),
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use k8s_openapi::api::core::v1::{Namespace, Pod};

    use super::*;
    use crate::test_objects::pod;

    /// A deletion's `ObjectKey`: the object's, or the tombstone's key parsed.
    #[test]
    fn a_deletion_has_the_object_key_the_queue_and_the_cache_share() {
        use kclient_core::DeletedFinalStateUnknown;
        let mut pod = Pod::default();
        pod.metadata.namespace = Some("prod".into());
        pod.metadata.name = Some("web".into());
        let seen = DeletedObject::Object(Arc::new(pod));
        assert_eq!(
            deleted_object_key(&seen).unwrap(),
            ObjectKey::namespaced("prod", "web")
        );
        let inferred = |key: &str| {
            DeletedObject::<Namespace>::Tombstone(DeletedFinalStateUnknown {
                key: key.into(),
                obj: None,
            })
        };
        assert_eq!(
            deleted_object_key(&inferred("team")).unwrap(),
            ObjectKey::cluster_scoped("team")
        );
        assert!(deleted_object_key(&inferred("a/b/c")).is_err());
    }

    /// client-go's `KeyError` unwraps to the key function's error: here, its `source`.
    #[test]
    fn a_key_error_carries_the_key_functions_error_as_its_source() {
        #[derive(Debug, thiserror::Error)]
        #[error("no owner")]
        struct NoOwner;

        let by_owner = KeyFunc::<Pod>::new(|pod| Err(KeyFuncError::with_source(pod, NoOwner)));
        let err = by_owner.key(&pod("ns", "web")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "couldn't create key for object ns/web: no owner"
        );
        let source = err.source().expect("the key function's error");
        assert!(source.downcast_ref::<NoOwner>().is_some());
        // Through a store (whose key errors are transparent), the chain keeps it.
        let store = crate::new_store(by_owner);
        let err = store.add(Arc::new(pod("ns", "web"))).unwrap_err();
        assert!(matches!(&err, crate::StoreError::Key(k) if k.object == "ns/web"));
        assert!(err.source().is_some_and(|e| e.is::<NoOwner>()));
        assert!(KeyFuncError::new(&pod("ns", "web"), "no reason")
            .source()
            .is_none());
    }

    #[test]
    fn key_format_has_no_leading_slash_for_cluster_scoped_objects() {
        let keys = KeyFunc::<Pod>::meta_namespace();
        assert_eq!(keys.key(&pod("a", "b")).unwrap(), "a/b");
        assert_eq!(keys.key(&pod("", "b")).unwrap(), "b");
        let mut ns = Namespace::default();
        ns.metadata.name = Some("kube-system".into());
        assert_eq!(
            KeyFunc::<Namespace>::meta_namespace().key(&ns).unwrap(),
            "kube-system"
        );
    }

    #[test]
    fn custom_key_functions_and_their_errors() {
        let by_uid = KeyFunc::<Pod>::new(|p| {
            p.metadata
                .uid
                .clone()
                .ok_or_else(|| KeyFuncError::new(p, "no uid"))
        });
        let mut p = pod("ns", "x");
        let err = by_uid.key(&p).unwrap_err();
        assert_eq!(
            err.to_string(),
            "couldn't create key for object ns/x: no uid"
        );
        p.metadata.uid = Some("u-1".into());
        assert_eq!(by_uid.key(&p).unwrap(), "u-1");
        assert!(!by_uid.handles_tombstones());
        assert!(by_uid.clone().deletion_handling().handles_tombstones());
    }

    #[test]
    fn deletion_handling_key_func_unwraps_tombstones() {
        let tombstone = DeletedObject::<Pod>::Tombstone(kclient_core::DeletedFinalStateUnknown {
            key: "ns/gone".into(),
            obj: Some(Arc::new(pod("ns", "other-name"))),
        });
        let keys = KeyFunc::<Pod>::deletion_handling_meta_namespace();
        assert_eq!(keys.key_of_deleted(&tombstone).unwrap(), "ns/gone");
        let live = DeletedObject::Object(Arc::new(pod("ns", "live")));
        assert_eq!(keys.key_of_deleted(&live).unwrap(), "ns/live");
        let err = KeyFunc::<Pod>::meta_namespace()
            .key_of_deleted(&tombstone)
            .unwrap_err();
        assert!(err.to_string().contains("ns/gone"), "{err}");
    }
}
