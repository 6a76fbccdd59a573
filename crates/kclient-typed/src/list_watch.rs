//! The [`ListerWatcher`] implementations that connect typed clients to the informer cache,
//! and the [`ListerWatcherFor`] through which an informer factory makes them from the
//! [`Clientset`] — both kclient-core's seams, so this crate knows nothing of the cache.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use kclient_core::{
    FetchedList, ListOptions, ListerWatcher, ListerWatcherFor, ObjectList, Resource,
    TweakListOptions, WatchStream,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::client::ResourceClient;
use crate::clientset::Clientset;
use crate::error::Error;

/// A typed client lists and watches its resource in its namespace (or all namespaces): the
/// options the reflector passes (resourceVersion, paging, timeout, bookmarks) are sent as
/// they are. For selectors, use [`ResourceClient::filtered_list_watch`].
impl<K> ListerWatcher<K> for ResourceClient<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    type Error = Error;

    fn list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ObjectList<K>, Error>> + Send {
        ResourceClient::list(self, options)
    }

    fn watch(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<WatchStream<K, Error>, Error>> + Send {
        ResourceClient::watch(self, options)
    }

    fn fetch_list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<FetchedList<K, Error>, Error>> + Send {
        ResourceClient::fetch_list(self, options)
    }
}

/// A [`ListerWatcher`] that adjusts every list and watch it makes, typically to add label or
/// field selectors (client-go's `NewFilteredListWatchFromClient` with its
/// `optionsModifier`, and the informer factories' `WithTweakListOptions`).
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use kclient_typed::ResourceClient;
///
/// # fn make(pods: ResourceClient<Pod>) {
/// let lw = pods.filtered_list_watch(|options| {
///     options.label_selector = Some("app=web".into());
///     options.field_selector = Some("status.phase=Running".into());
/// });
/// # let _ = lw; }
/// ```
pub struct FilteredListWatch<K: Resource> {
    client: ResourceClient<K>,
    tweak: TweakListOptions,
}

impl<K: Resource> Clone for FilteredListWatch<K> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            tweak: self.tweak.clone(),
        }
    }
}

impl<K: Resource> fmt::Debug for FilteredListWatch<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilteredListWatch")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl<K: Resource> FilteredListWatch<K> {
    /// `client` listing and watching with `tweak` applied.
    pub fn new(client: ResourceClient<K>, tweak: TweakListOptions) -> Self {
        Self { client, tweak }
    }

    /// The options as they are sent: the reflector's, adjusted by the tweak.
    pub fn tweaked(&self, options: &ListOptions) -> ListOptions {
        let mut options = options.clone();
        (self.tweak)(&mut options);
        options
    }

    /// The client underneath.
    pub fn client(&self) -> &ResourceClient<K> {
        &self.client
    }
}

impl<K: Resource> ResourceClient<K> {
    /// A [`ListerWatcher`] over this client that applies `tweak` to the options of every list
    /// and watch.
    pub fn filtered_list_watch(
        &self,
        tweak: impl Fn(&mut ListOptions) + Send + Sync + 'static,
    ) -> FilteredListWatch<K> {
        FilteredListWatch {
            client: self.clone(),
            tweak: Arc::new(tweak),
        }
    }
}

impl<K> ListerWatcher<K> for FilteredListWatch<K>
where
    K: Resource + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    type Error = Error;

    async fn list(&self, options: &ListOptions) -> Result<ObjectList<K>, Error> {
        let options = self.tweaked(options);
        self.client.list(&options).await
    }

    async fn watch(&self, options: &ListOptions) -> Result<WatchStream<K, Error>, Error> {
        let options = self.tweaked(options);
        self.client.watch(&options).await
    }

    async fn fetch_list(&self, options: &ListOptions) -> Result<FetchedList<K, Error>, Error> {
        let options = self.tweaked(options);
        self.client.fetch_list(&options).await
    }
}

/// The Clientset lists and watches any statically typed resource for an informer factory
/// (kclient-cache's `SharedInformerFactory`, with kclient-informers' generated accessors), in
/// the factory's namespace (cluster-scoped resources ignore it), with its list-options tweak.
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
