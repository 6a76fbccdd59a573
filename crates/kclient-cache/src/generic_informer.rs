//! [`GenericInformer`]: what the factory's `for_resource` gives — an informer of a resource
//! chosen at run time and a lister over its cache (client-go's `GenericInformer`, with its
//! `Informer()` and `Lister()`).
//!
//! client-go's generic lister (`cache.GenericLister`) hands out `runtime.Object`s; here the
//! object type is the informer's own (`DynamicObject`, `PartialObjectMetadata`, ...), so the
//! generic lister is the ordinary [`Lister`]: `list(selector)`, `get(name)` (a cache key:
//! `namespace/name` for a namespaced object), and `namespaced(ns)` (client-go's
//! `ByNamespace`).

use std::fmt;

use kclient_core::Resource;

use crate::lister::Lister;
use crate::shared_informer::SharedIndexInformer;

/// A shared informer of a resource picked at run time, with a lister over its cache
/// (client-go's `GenericInformer`). Cheap to clone; clones share the informer.
pub struct GenericInformer<K> {
    informer: SharedIndexInformer<K>,
}

impl<K> Clone for GenericInformer<K> {
    fn clone(&self) -> Self {
        Self {
            informer: self.informer.clone(),
        }
    }
}

impl<K> fmt::Debug for GenericInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenericInformer")
            .field("informer", &self.informer)
            .finish()
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> GenericInformer<K> {
    /// Wraps a shared informer.
    pub fn new(informer: SharedIndexInformer<K>) -> Self {
        Self { informer }
    }

    /// The shared informer (client-go's `Informer()`): add handlers, run it, check
    /// `has_synced`.
    pub fn informer(&self) -> &SharedIndexInformer<K> {
        &self.informer
    }

    /// A lister over the informer's cache (client-go's `Lister()`).
    pub fn lister(&self) -> Lister<K> {
        self.informer.lister()
    }

    /// The shared informer, owned.
    pub fn into_informer(self) -> SharedIndexInformer<K> {
        self.informer
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> From<SharedIndexInformer<K>>
    for GenericInformer<K>
{
    fn from(informer: SharedIndexInformer<K>) -> Self {
        Self::new(informer)
    }
}
