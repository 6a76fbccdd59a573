//! [`TypedInformer`]: one resource's informer and lister in a factory, what every generated
//! accessor (`factory.core_v1().pods()`) returns.

use std::fmt;
use std::marker::PhantomData;

use kclient_cache::{Lister, SharedIndexInformer, SharedInformerFactory};
use kclient_core::{ListerWatcherFor, Resource};

/// One resource's informer and lister in a factory (client-go's generated `PodInformer` with
/// `Informer()` and `Lister()`), for any factory whose client makes lister-watchers of `K`
/// (kclient-typed's `Clientset`, or a test double implementing
/// [`ListerWatcherFor<K>`](ListerWatcherFor)).
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kclient_cache::testing::FakeControllerSource;
/// use kclient_cache::{ResourceEventHandlerFuncs, SharedInformerFactory};
/// use kclient_core::{ListerWatcherFor, TweakListOptions};
/// use kclient_informers::TypedInformer;
///
/// // A test double serving ConfigMaps.
/// struct Source(FakeControllerSource<ConfigMap>);
/// impl ListerWatcherFor<ConfigMap> for Source {
///     type ListerWatcher = FakeControllerSource<ConfigMap>;
///     fn lister_watcher(&self, _: Option<&str>, _: Option<TweakListOptions>) -> Self::ListerWatcher {
///         self.0.clone()
///     }
/// }
///
/// let factory = SharedInformerFactory::new(Source(FakeControllerSource::new()), std::time::Duration::ZERO);
/// let config_maps = TypedInformer::<_, ConfigMap>::new(&factory);
/// // The factory's one shared informer of ConfigMaps, however it is asked for.
/// config_maps.informer().add_event_handler(ResourceEventHandlerFuncs::new()).unwrap();
/// assert_eq!(factory.informer::<ConfigMap>().handler_count(), 1);
/// ```
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
