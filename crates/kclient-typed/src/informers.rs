//! Typed informers and listers over the informer factory (client-go's `informers` and
//! `listers` packages): the Clientset makes lister-watchers for
//! [`SharedInformerFactory`], and the generated [`InformerFactoryExt`](crate::InformerFactoryExt)
//! gives it one accessor per group-version and resource.
//!
//! ```no_run
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_cache::SharedInformerFactory;
//! use kclient_typed::{Clientset, InformerFactoryExt};
//! use kclient_cache::CancellationToken;
//!
//! # async fn run(clientset: Clientset) {
//! let factory = SharedInformerFactory::new(clientset, std::time::Duration::ZERO).namespace("prod");
//! let pods = factory.core_v1().pods();
//! let informer = pods.informer(); // asks for it: the factory will start it
//! let cancel = CancellationToken::new();
//! factory.start(&cancel);
//! assert!(factory.wait_for_cache_sync(&cancel).await.all_synced());
//! let web: Option<std::sync::Arc<Pod>> = pods.lister().namespaced("prod").get("web-0").ok();
//! # let _ = (informer, web); }
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use kclient_cache::{Lister, ListerWatcherFor, SharedIndexInformer, SharedInformerFactory};
use kclient_core::{Resource, TweakListOptions};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::client::ResourceClient;
use crate::clientset::Clientset;
use crate::list_watch::FilteredListWatch;

/// The Clientset lists and watches any statically typed resource for the informer factory,
/// in the factory's namespace (cluster-scoped resources ignore it), with its list-options
/// tweak.
impl<K> ListerWatcherFor<K> for Clientset
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    type ListerWatcher = FilteredListWatch<K>;

    fn lister_watcher(
        &self,
        namespace: Option<&str>,
        tweak: Option<TweakListOptions>,
    ) -> FilteredListWatch<K> {
        let client = match namespace {
            Some(namespace) => {
                ResourceClient::<K>::namespaced(self.rest_client().clone(), namespace)
            }
            None => ResourceClient::<K>::all_namespaces(self.rest_client().clone()),
        };
        FilteredListWatch::new(client, tweak.unwrap_or_else(|| Arc::new(|_| {})))
    }
}

/// One resource's informer and lister in a factory (client-go's generated
/// `PodInformer` with `Informer()` and `Lister()`); see the [module docs](self).
pub struct TypedInformer<'a, C, K> {
    factory: &'a SharedInformerFactory<C>,
    _kind: PhantomData<fn() -> K>,
}

impl<C, K> fmt::Debug for TypedInformer<'_, C, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedInformer")
            .field("kind", &std::any::type_name::<K>())
            .finish_non_exhaustive()
    }
}

impl<'a, C, K> TypedInformer<'a, C, K> {
    /// `K`'s accessor in `factory`.
    pub fn new(factory: &'a SharedInformerFactory<C>) -> Self {
        Self {
            factory,
            _kind: PhantomData,
        }
    }
}

impl<C, K> TypedInformer<'_, C, K>
where
    C: ListerWatcherFor<K>,
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    /// The shared informer of `K`, made on first request: ask before the factory starts.
    pub fn informer(&self) -> SharedIndexInformer<K> {
        self.factory.informer::<K>()
    }

    /// A lister over the informer's cache (which it makes if needed).
    pub fn lister(&self) -> Lister<K> {
        self.factory.lister::<K>()
    }
}
