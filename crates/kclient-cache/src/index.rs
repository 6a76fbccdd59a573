//! Index functions and the named set of them an indexer is built with (client-go's
//! `IndexFunc`, `Indexers`, `NamespaceIndex`, `MetaNamespaceIndexFunc`).
//!
//! Three kinds of strings meet here, as in client-go: the **storage key** of an object
//! (`ns/name`), the **index name** (`"namespace"`, `"by-node"`), and the **indexed values** an
//! index function computes for an object (a namespace, a node name). One object may have
//! several indexed values under one index.
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_cache::{Indexers, NAMESPACE_INDEX};
//!
//! let indexers = Indexers::<Pod>::namespace().with("by-node", |pod: &Pod| {
//!     Ok(pod.spec.as_ref().and_then(|s| s.node_name.clone()).into_iter().collect())
//! });
//! assert_eq!(indexers.names().collect::<Vec<_>>(), ["by-node", NAMESPACE_INDEX]);
//! ```

use std::fmt;
use std::sync::Arc;

use kclient_core::{Resource, ResourceExt};

use crate::key_func::{KeyFunc, KeyFuncError};

/// The name of the ready-made namespace index (client-go's `NamespaceIndex`).
pub const NAMESPACE_INDEX: &str = "namespace";

/// An index function failed. It is a typed error, not client-go's panic: the write that
/// needed it changes nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct IndexFuncError {
    /// Why no indexed values could be computed.
    pub reason: String,
}

impl IndexFuncError {
    /// An index function error with the given reason.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}

/// What can go wrong with an index (client-go's messages, word for word where it has one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// `by_index`, `index`, `index_keys` named an index that was never added.
    #[error("Index with name {0} does not exist")]
    NoSuchIndex(String),
    /// `add_indexers` named indices that exist already.
    #[error("indexer conflict: {0:?}")]
    Conflict(Vec<String>),
    /// An index function failed for an object (client-go panics here).
    #[error("unable to calculate an index entry for key {key:?} on index {index:?}: {source}")]
    IndexFunc {
        /// The storage key of the object.
        key: String,
        /// The index whose function failed.
        index: String,
        /// The function's error.
        source: IndexFuncError,
    },
}

type IndexFn<K> = dyn Fn(&K) -> Result<Vec<String>, IndexFuncError> + Send + Sync;

/// An index function: the indexed values of an object (client-go's `IndexFunc`). Cloning is
/// cheap (an `Arc`). It must be deterministic: the store recomputes an object's old values
/// to remove them.
pub struct IndexFunc<K>(Arc<IndexFn<K>>);

impl<K> Clone for IndexFunc<K> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<K> fmt::Debug for IndexFunc<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IndexFunc")
    }
}

impl<K> IndexFunc<K> {
    /// Wraps a function.
    pub fn new<F>(f: F) -> Self
    where
        F: Fn(&K) -> Result<Vec<String>, IndexFuncError> + Send + Sync + 'static,
    {
        Self(Arc::new(f))
    }

    /// The indexed values of `obj`.
    pub fn values(&self, obj: &K) -> Result<Vec<String>, IndexFuncError> {
        (self.0)(obj)
    }
}

/// client-go's `MetaNamespaceIndexFunc`: the object's namespace, `""` for a cluster-scoped
/// object.
pub fn meta_namespace_index_func<K: Resource + ?Sized>(
    obj: &K,
) -> Result<Vec<String>, IndexFuncError> {
    Ok(vec![obj.namespace().unwrap_or_default().to_owned()])
}

/// client-go's `IndexFuncToKeyFuncAdapter`: a key function from an index function that
/// gives exactly one value (`too many keys` / `unexpected empty indexKeys` otherwise).
pub fn index_func_to_key_func_adapter<K: Resource + 'static>(index: IndexFunc<K>) -> KeyFunc<K> {
    KeyFunc::new(move |obj: &K| {
        let mut values = index
            .values(obj)
            .map_err(|e| KeyFuncError::new(obj, e.reason))?;
        match values.len() {
            1 => Ok(values.pop().unwrap_or_default()),
            0 => Err(KeyFuncError::new(obj, "unexpected empty indexKeys")),
            _ => Err(KeyFuncError::new(obj, format!("too many keys: {values:?}"))),
        }
    })
}

/// Named index functions (client-go's `Indexers`), in name order.
///
/// Kept as a `Vec` sorted by name rather than a `BTreeMap`: a store has a handful of
/// indices, and a map's code would be compiled again for every kind a program caches.
pub struct Indexers<K>(Vec<(String, IndexFunc<K>)>);

impl<K> Clone for Indexers<K> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<K> Default for Indexers<K> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<K> fmt::Debug for Indexers<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.names()).finish()
    }
}

impl<K> Indexers<K> {
    /// No indices.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the index `name`.
    pub fn with<F>(mut self, name: impl Into<String>, f: F) -> Self
    where
        F: Fn(&K) -> Result<Vec<String>, IndexFuncError> + Send + Sync + 'static,
    {
        self.insert(name, IndexFunc::new(f));
        self
    }

    /// Adds (or replaces) the index `name`.
    pub fn insert(&mut self, name: impl Into<String>, f: IndexFunc<K>) {
        let name = name.into();
        match self.position(&name) {
            Ok(i) => self.0[i].1 = f,
            Err(i) => self.0.insert(i, (name, f)),
        }
    }

    /// The index function called `name`.
    pub fn get(&self, name: &str) -> Option<&IndexFunc<K>> {
        self.position(name).ok().map(|i| &self.0[i].1)
    }

    /// Whether an index is called `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.position(name).is_ok()
    }

    /// The index names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(n, _)| n.as_str())
    }

    /// The indices, in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &IndexFunc<K>)> {
        self.0.iter().map(|(n, f)| (n.as_str(), f))
    }

    /// How many indices there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Where `name` is (`Ok`) or would go (`Err`) in the sorted list.
    fn position(&self, name: &str) -> Result<usize, usize> {
        self.0.binary_search_by(|(n, _)| n.as_str().cmp(name))
    }
}

impl<K: Resource + 'static> Indexers<K> {
    /// The namespace index alone ([`NAMESPACE_INDEX`] → [`meta_namespace_index_func`]), what
    /// client-go's typed informers are built with.
    pub fn namespace() -> Self {
        Self::new().with(NAMESPACE_INDEX, meta_namespace_index_func::<K>)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::test_objects::pod;

    #[test]
    fn namespace_index_func_gives_the_namespace_or_empty() {
        assert_eq!(meta_namespace_index_func(&pod("a", "x")).unwrap(), ["a"]);
        assert_eq!(meta_namespace_index_func(&Pod::default()).unwrap(), [""]);
    }

    #[test]
    fn index_func_to_key_func_adapter_wants_exactly_one_value() {
        let one = index_func_to_key_func_adapter(IndexFunc::new(|p: &Pod| {
            Ok(vec![p.metadata.name.clone().unwrap_or_default()])
        }));
        assert_eq!(one.key(&pod("ns", "x")).unwrap(), "x");
        let none = index_func_to_key_func_adapter(IndexFunc::new(|_: &Pod| Ok(vec![])));
        assert!(none
            .key(&pod("ns", "x"))
            .unwrap_err()
            .to_string()
            .contains("unexpected empty indexKeys"));
        let two = index_func_to_key_func_adapter(IndexFunc::new(|_: &Pod| {
            Ok(vec!["a".into(), "b".into()])
        }));
        assert!(two
            .key(&pod("ns", "x"))
            .unwrap_err()
            .to_string()
            .contains("too many keys: [\"a\", \"b\"]"));
    }

    #[test]
    fn index_errors_are_worded_as_client_go() {
        assert_eq!(
            IndexError::NoSuchIndex("x".into()).to_string(),
            "Index with name x does not exist"
        );
        assert_eq!(
            IndexError::Conflict(vec!["a".into()]).to_string(),
            "indexer conflict: [\"a\"]"
        );
    }
}
