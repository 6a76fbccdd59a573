//! Object keys: the `"namespace/name"` strings (or `"name"` for cluster-scoped objects) that
//! the cache stores objects under and controllers put on their workqueues, and the deletion
//! tombstone [`DeletedFinalStateUnknown`].
//!
//! ```
//! use kclient_core::{split_meta_namespace_key, ObjectKey};
//!
//! let key: ObjectKey = "prod/web".parse().unwrap();
//! assert_eq!(key.namespace.as_deref(), Some("prod"));
//! assert_eq!(key.to_string(), "prod/web");
//! assert_eq!(split_meta_namespace_key("node-1").unwrap(), ("", "node-1"));
//! assert!(split_meta_namespace_key("a/b/c").is_err());
//! ```

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::resource::Resource;

/// A key that is not `name` or `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected key format: {key:?}")]
pub struct KeyError {
    /// The offending key.
    pub key: String,
}

/// The namespace and name of an object, the parsed form of a key.
///
/// It is a good workqueue item: cheap to hash, and `Display` gives client-go's key string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl ObjectKey {
    /// The key of a namespaced object.
    pub fn namespaced(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }

    /// The key of a cluster-scoped object.
    pub fn cluster_scoped(name: impl Into<String>) -> Self {
        Self {
            namespace: None,
            name: name.into(),
        }
    }

    /// The key of `obj` (an empty namespace counts as none).
    pub fn from_object<K: Resource + ?Sized>(obj: &K) -> Self {
        let meta = obj.meta();
        Self {
            namespace: meta.namespace.clone().filter(|ns| !ns.is_empty()),
            name: meta.name.clone().unwrap_or_default(),
        }
    }
}

/// Formats as client-go's `MetaNamespaceKeyFunc`: `namespace/name`, or `name`.
impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{ns}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// Parses as client-go's `SplitMetaNamespaceKey`.
impl FromStr for ObjectKey {
    type Err = KeyError;

    fn from_str(key: &str) -> Result<Self, KeyError> {
        let (namespace, name) = split_meta_namespace_key(key)?;
        Ok(Self {
            namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
            name: name.to_owned(),
        })
    }
}

/// client-go's `MetaNamespaceKeyFunc`: `"namespace/name"` for namespaced objects and
/// `"name"` (no leading slash) for cluster-scoped ones.
///
/// It cannot fail: every [`Resource`] has metadata. An object without a name gets the key
/// `"namespace/"` or `""`, as in client-go.
pub fn meta_namespace_key<K: Resource + ?Sized>(obj: &K) -> String {
    let meta = obj.meta();
    let name = meta.name.as_deref().unwrap_or_default();
    match meta.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => {
            let mut key = String::with_capacity(ns.len() + 1 + name.len());
            key.push_str(ns);
            key.push('/');
            key.push_str(name);
            key
        }
        _ => name.to_owned(),
    }
}

/// client-go's `SplitMetaNamespaceKey`: `"name"` gives `("", "name")`, `"ns/name"` gives
/// `("ns", "name")`, and a key with more than one `/` is an error.
pub fn split_meta_namespace_key(key: &str) -> Result<(&str, &str), KeyError> {
    let mut parts = key.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, None) => Ok(("", name)),
        (Some(namespace), Some(name), None) => Ok((namespace, name)),
        _ => Err(KeyError {
            key: key.to_owned(),
        }),
    }
}

/// The tombstone a cache delivers when an object was deleted while the watch was down: the
/// relist no longer contains it, so its final state is unknown. `obj` is the last state the
/// cache knew, if it knew one.
#[derive(Debug)]
pub struct DeletedFinalStateUnknown<K> {
    /// The key the object was stored under.
    pub key: String,
    /// The last known state, if any.
    pub obj: Option<Arc<K>>,
}

impl<K> Clone for DeletedFinalStateUnknown<K> {
    fn clone(&self) -> Self {
        Self {
            key: self.key.clone(),
            obj: self.obj.clone(),
        }
    }
}

impl<K> PartialEq for DeletedFinalStateUnknown<K> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
            && match (&self.obj, &other.obj) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
    }
}

/// What a delete notification carries: the deleted object, or a tombstone when the deletion
/// was inferred from a relist (client-go passes either to `OnDelete`).
#[derive(Debug)]
pub enum DeletedObject<K> {
    /// The object's final state, as the watch reported it.
    Object(Arc<K>),
    /// The deletion was missed; see [`DeletedFinalStateUnknown`].
    Tombstone(DeletedFinalStateUnknown<K>),
}

impl<K> Clone for DeletedObject<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Object(o) => Self::Object(Arc::clone(o)),
            Self::Tombstone(t) => Self::Tombstone(t.clone()),
        }
    }
}

impl<K> From<Arc<K>> for DeletedObject<K> {
    fn from(obj: Arc<K>) -> Self {
        Self::Object(obj)
    }
}

impl<K> From<DeletedFinalStateUnknown<K>> for DeletedObject<K> {
    fn from(tombstone: DeletedFinalStateUnknown<K>) -> Self {
        Self::Tombstone(tombstone)
    }
}

impl<K> DeletedObject<K> {
    /// The last known state of the object: the object itself, or the tombstone's object.
    pub fn last_known(&self) -> Option<&Arc<K>> {
        match self {
            Self::Object(o) => Some(o),
            Self::Tombstone(t) => t.obj.as_ref(),
        }
    }
}

/// client-go's `DeletionHandlingMetaNamespaceKeyFunc`: the tombstone's key for a
/// [`DeletedFinalStateUnknown`], otherwise [`meta_namespace_key`].
pub fn deletion_handling_meta_namespace_key<K: Resource>(obj: &DeletedObject<K>) -> String {
    match obj {
        DeletedObject::Object(o) => meta_namespace_key(o.as_ref()),
        DeletedObject::Tombstone(t) => t.key.clone(),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn pod(ns: Option<&str>, name: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                namespace: ns.map(Into::into),
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        }
    }

    #[test]
    fn keys_have_no_leading_slash_without_a_namespace() {
        assert_eq!(
            meta_namespace_key(&pod(Some("default"), "web")),
            "default/web"
        );
        assert_eq!(meta_namespace_key(&pod(None, "web")), "web");
        assert_eq!(meta_namespace_key(&pod(Some(""), "web")), "web");
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some("kube-system".into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        assert_eq!(meta_namespace_key(&ns), "kube-system");
        assert_eq!(meta_namespace_key(&Pod::default()), "");
    }

    #[test]
    fn split_follows_client_go() {
        assert_eq!(split_meta_namespace_key("ns/name").unwrap(), ("ns", "name"));
        assert_eq!(split_meta_namespace_key("name").unwrap(), ("", "name"));
        assert_eq!(split_meta_namespace_key("").unwrap(), ("", ""));
        assert_eq!(split_meta_namespace_key("/name").unwrap(), ("", "name"));
        assert_eq!(split_meta_namespace_key("ns/").unwrap(), ("ns", ""));
        for bad in ["a/b/c", "//", "a//"] {
            let err = split_meta_namespace_key(bad).unwrap_err();
            assert_eq!(err.to_string(), format!("unexpected key format: {bad:?}"));
        }
    }

    #[test]
    fn object_key_round_trips() {
        for key in ["ns/name", "name"] {
            assert_eq!(key.parse::<ObjectKey>().unwrap().to_string(), key);
        }
        assert_eq!(
            ObjectKey::from_object(&pod(Some("a"), "b")),
            ObjectKey::namespaced("a", "b")
        );
        assert_eq!(
            ObjectKey::from_object(&pod(Some(""), "b")),
            ObjectKey::cluster_scoped("b")
        );
        assert!("x/y/z".parse::<ObjectKey>().is_err());
    }

    #[test]
    fn deletion_handling_unwraps_tombstones() {
        let live = Arc::new(pod(Some("ns"), "a"));
        assert_eq!(
            deletion_handling_meta_namespace_key(&DeletedObject::Object(live.clone())),
            "ns/a"
        );
        let tombstone = DeletedObject::<Pod>::Tombstone(DeletedFinalStateUnknown {
            key: "ns/gone".into(),
            obj: None,
        });
        assert_eq!(deletion_handling_meta_namespace_key(&tombstone), "ns/gone");
        assert!(tombstone.last_known().is_none());
        let with_state = DeletedObject::Tombstone(DeletedFinalStateUnknown {
            key: "ns/a".into(),
            obj: Some(live.clone()),
        });
        assert!(Arc::ptr_eq(with_state.last_known().unwrap(), &live));
        assert_eq!(
            with_state
                .clone()
                .last_known()
                .map(|p| p.metadata.name.clone()),
            Some(Some("a".into()))
        );
    }
}
