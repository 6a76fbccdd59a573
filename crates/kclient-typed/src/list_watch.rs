//! The [`ListerWatcher`] implementations that connect typed clients to the informer cache,
//! and the [`ListerWatcherFor`] and [`DynamicListerWatcherFor`] through which an informer
//! factory makes them from the [`Clientset`] — kclient-core's seams, so this crate knows
//! nothing of the cache.

use std::future::Future;
use std::sync::Arc;

use kclient_core::{
    ApiResource, DynamicListerWatcherFor, FetchedList, FilteredListWatch, ListOptions,
    ListerWatcher, ListerWatcherFor, ObjectList, Resource, TweakListOptions, WatchStream,
};
use kclient_dynamic::{DynamicResource, ObjectView};
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

impl<K: Resource> ResourceClient<K> {
    /// A [`FilteredListWatch`] over this client: a [`ListerWatcher`] that applies `tweak` to
    /// the options of every list and watch (client-go's `NewFilteredListWatchFromClient`).
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
    pub fn filtered_list_watch(
        &self,
        tweak: impl Fn(&mut ListOptions) + Send + Sync + 'static,
    ) -> FilteredListWatch<ResourceClient<K>> {
        FilteredListWatch::new(self.clone(), Arc::new(tweak))
    }
}

/// The Clientset lists and watches any statically typed resource for an informer factory
/// (kclient-cache's `SharedInformerFactory`, with kclient-informers' generated accessors), in
/// the factory's namespace (cluster-scoped resources ignore it), with its list-options tweak.
impl<K> ListerWatcherFor<K> for Clientset
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    type ListerWatcher = FilteredListWatch<ResourceClient<K>>;

    fn lister_watcher(
        &self,
        namespace: Option<&str>,
        tweak: Option<TweakListOptions>,
    ) -> Self::ListerWatcher {
        let client = match namespace {
            Some(namespace) => {
                ResourceClient::<K>::namespaced(self.rest_client().clone(), namespace)
            }
            None => ResourceClient::<K>::all_namespaces(self.rest_client().clone()),
        };
        FilteredListWatch::with_optional_tweak(client, tweak)
    }
}

/// The Clientset lists and watches any resource described at run time for the informer
/// factory's `for_resource`, through kclient-dynamic's clients over the Clientset's REST
/// client (sharing its transport and rate limiter), so one factory over a Clientset serves
/// typed informers and run-time ones: whole objects,
/// [`DynamicObject`](kclient_core::DynamicObject)s (client-go's
/// `dynamicinformer`: a custom resource known only at run time), or their metadata alone,
/// [`PartialObjectMetadata`](kclient_core::PartialObjectMetadata) (client-go's `metadatainformer`, controller-runtime's
/// metadata-only watches: a type's whole objects through `informer::<Secret>()` and, in
/// another informer, its metadata through
/// `for_resource::<PartialObjectMetadata>(&Secret::api_resource(&()))`).
impl<T> DynamicListerWatcherFor<T> for Clientset
where
    T: ObjectView + Resource<DynamicType = ApiResource>,
{
    type ListerWatcher = FilteredListWatch<DynamicResource<T>>;

    fn dynamic_lister_watcher(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        tweak: Option<TweakListOptions>,
    ) -> Self::ListerWatcher {
        DynamicResource::informer_lister_watcher(
            self.rest_client().clone(),
            resource,
            namespace,
            tweak,
        )
    }
}
