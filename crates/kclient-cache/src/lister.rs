//! Listers: read-only views of an [`Indexer`] (client-go's generated listers, its generic
//! `listers.ResourceIndexer[T]`, and `cache.ListAll` / `ListAllByNamespace`).
//!
//! Results are the cached `Arc<K>`s themselves: cheap to hand out, and immutable, so the
//! cache cannot be corrupted through them (client-go can only ask callers not to mutate).
//! A label selector is matched against each object in place; only the matches are
//! collected.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_cache::{Indexer, Indexers, KeyFunc, Lister};
//! use kclient_core::labels::Selector;
//! use kclient_core::ApiStatus;
//!
//! let indexer = Indexer::new(KeyFunc::deletion_handling_meta_namespace(), Indexers::<Pod>::namespace());
//! for (ns, name, app) in [("prod", "web-0", "web"), ("prod", "db-0", "db"), ("dev", "web-0", "web")] {
//!     let mut pod = Pod::default();
//!     pod.metadata.namespace = Some(ns.into());
//!     pod.metadata.name = Some(name.into());
//!     pod.metadata.labels = Some([("app".to_string(), app.to_string())].into());
//!     indexer.add(Arc::new(pod)).unwrap();
//! }
//!
//! let pods = Lister::<Pod>::new(indexer);
//! let web: Selector = "app=web".parse().unwrap();
//! assert_eq!(pods.list(&web).len(), 2);
//! assert_eq!(pods.namespaced("prod").list(&web).len(), 1);
//! assert_eq!(pods.namespaced("prod").get("db-0").unwrap().metadata.name.as_deref(), Some("db-0"));
//! assert!(pods.namespaced("dev").get("db-0").unwrap_err().is_not_found());
//! ```

use std::fmt;
use std::sync::Arc;

use kclient_core::labels::Selector;
use kclient_core::{ApiError, GroupResource, Resource, ResourceExt};

use crate::index::{IndexError, NAMESPACE_INDEX};
use crate::indexer::Indexer;

/// client-go's `ListAll`: every object of `indexer` that `selector` matches, passed to
/// `f`. An empty selector matches everything without reading labels.
pub fn list_all<K: Resource>(indexer: &Indexer<K>, selector: &Selector, mut f: impl FnMut(Arc<K>)) {
    let matched = if selector.is_empty() {
        indexer.list()
    } else {
        indexer
            .thread_safe_store()
            .list_filtered(|obj| selector.matches(obj.labels()))
    };
    matched.into_iter().for_each(&mut f);
}

/// client-go's `ListAllByNamespace`: the objects of `namespace` (all of them for `""`, the
/// `NamespaceAll`) that `selector` matches, passed to `f`. Uses the namespace index when the
/// indexer has one, otherwise scans every object (with a warning, as client-go does).
pub fn list_all_by_namespace<K: Resource>(
    indexer: &Indexer<K>,
    namespace: &str,
    selector: &Selector,
    mut f: impl FnMut(Arc<K>),
) {
    if namespace.is_empty() {
        return list_all(indexer, selector, f);
    }
    let everything = selector.is_empty();
    match indexer.by_index(NAMESPACE_INDEX, namespace) {
        Ok(objects) => objects
            .into_iter()
            .filter(|o| everything || selector.matches(o.labels()))
            .for_each(&mut f),
        Err(_) => {
            tracing::warn!(namespace, "can not retrieve list of objects using index: no namespace index; scanning every object");
            indexer
                .thread_safe_store()
                .list_filtered(|o| {
                    o.namespace() == Some(namespace) && (everything || selector.matches(o.labels()))
                })
                .into_iter()
                .for_each(&mut f);
        }
    }
}

/// A lister over an [`Indexer`] of `K`: client-go's `<Kind>Lister` for every `K`.
///
/// For a namespaced kind, [`namespaced`](Self::namespaced) gives the lister of one namespace
/// (client-go's `Pods(namespace)`); for a cluster-scoped kind, [`get`](Self::get) looks an
/// object up by name.
pub struct Lister<K> {
    indexer: Indexer<K>,
    resource: Arc<GroupResource>,
}

impl<K> Clone for Lister<K> {
    fn clone(&self) -> Self {
        Self {
            indexer: self.indexer.clone(),
            resource: Arc::clone(&self.resource),
        }
    }
}

impl<K> fmt::Debug for Lister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lister")
            .field("resource", &self.resource.to_string())
            .finish_non_exhaustive()
    }
}

impl<K: Resource> Lister<K>
where
    K::DynamicType: Default,
{
    /// A lister over `indexer` for a statically typed `K` (a k8s-openapi type or a CRD type).
    pub fn new(indexer: Indexer<K>) -> Self {
        Self::new_with(indexer, &K::DynamicType::default())
    }
}

impl<K: Resource> Lister<K> {
    /// A lister over `indexer` for a `K` described at run time (a
    /// [`DynamicObject`](kclient_core::DynamicObject) with its `ApiResource`).
    pub fn new_with(indexer: Indexer<K>, dt: &K::DynamicType) -> Self {
        let resource = K::api_resource(dt).gvr().group_resource();
        Self {
            indexer,
            resource: Arc::new(resource),
        }
    }

    /// The indexer this lister reads.
    pub fn indexer(&self) -> &Indexer<K> {
        &self.indexer
    }

    /// Every object that `selector` matches, in no particular order.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        let mut out = Vec::new();
        list_all(&self.indexer, selector, |o| out.push(o));
        out
    }

    /// The object named `name`, for a cluster-scoped kind: a NotFound [`ApiError`] (as the
    /// API server would word it, and as client-go's listers answer) when the cache has none.
    pub fn get(&self, name: &str) -> Result<Arc<K>, Box<ApiError>> {
        self.indexer
            .get_by_key(name)
            .ok_or_else(|| Box::new(ApiError::not_found(&self.resource, name)))
    }

    /// The objects with `indexed_value` under `index_name`.
    pub fn by_index(
        &self,
        index_name: &str,
        indexed_value: &str,
    ) -> Result<Vec<Arc<K>>, IndexError> {
        self.indexer.by_index(index_name, indexed_value)
    }

    /// The lister of one namespace (client-go's `Pods(namespace)`, `ConfigMaps(namespace)`...).
    pub fn namespaced(&self, namespace: impl Into<String>) -> NamespaceLister<K> {
        NamespaceLister {
            lister: self.clone(),
            namespace: namespace.into(),
        }
    }
}

/// The lister of one namespace (client-go's `<Kind>NamespaceLister`).
pub struct NamespaceLister<K> {
    lister: Lister<K>,
    namespace: String,
}

impl<K> fmt::Debug for NamespaceLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceLister")
            .field("resource", &self.lister.resource.to_string())
            .field("namespace", &self.namespace)
            .finish()
    }
}

impl<K: Resource> NamespaceLister<K> {
    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The objects of the namespace that `selector` matches, through the namespace index.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        let mut out = Vec::new();
        list_all_by_namespace(&self.lister.indexer, &self.namespace, selector, |o| {
            out.push(o)
        });
        out
    }

    /// The object `namespace/name`: a NotFound [`ApiError`] when the cache has none.
    pub fn get(&self, name: &str) -> Result<Arc<K>, Box<ApiError>> {
        let key = format!("{}/{name}", self.namespace);
        self.lister
            .indexer
            .get_by_key(&key)
            .ok_or_else(|| Box::new(ApiError::not_found(&self.lister.resource, name)))
    }
}
