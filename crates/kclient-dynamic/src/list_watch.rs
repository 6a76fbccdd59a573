//! The [`ListerWatcher`] implementations that connect the dynamic and metadata clients to
//! the informer cache, so informers work for any resource, and the
//! [`DynamicListerWatcherFor`] through which an informer factory makes them — kclient-core's
//! seams, so this crate knows nothing of the cache.

use std::future::Future;
use std::sync::Arc;

use kclient_core::{
    ApiResource, DynamicListerWatcherFor, DynamicObject, FetchedList, FilteredListWatch,
    ListOptions, ListerWatcher, ObjectList, TweakListOptions, WatchStream,
};

use crate::client::{DynamicClient, DynamicResource};
use crate::error::Error;

/// A dynamic resource lists and watches in its namespace (or all namespaces): the options the
/// reflector passes (resourceVersion, paging, timeout, bookmarks) are sent as they are. For
/// selectors, use [`DynamicResource::filtered_list_watch`].
impl ListerWatcher<DynamicObject> for DynamicResource {
    type Error = Error;

    fn list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ObjectList<DynamicObject>, Error>> + Send {
        DynamicResource::list(self, options)
    }

    fn watch(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<WatchStream<DynamicObject, Error>, Error>> + Send {
        DynamicResource::watch(self, options)
    }

    fn fetch_list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<FetchedList<DynamicObject, Error>, Error>> + Send {
        DynamicResource::fetch_list(self, options)
    }
}

impl DynamicResource {
    /// A [`FilteredListWatch`] over this resource: a [`ListerWatcher`] that applies `tweak` to
    /// the options of every list and watch (client-go's `NewFilteredDynamicSharedInformerFactory`
    /// and `NewFilteredSharedInformerFactory` of `metadatainformer`, their `tweakListOptions`).
    ///
    /// ```
    /// use kclient_core::GroupVersionResource;
    /// use kclient_dynamic::DynamicClient;
    ///
    /// # fn make(client: DynamicClient) {
    /// let crontabs = GroupVersionResource::new("stable.example.com", "v1", "crontabs");
    /// let lw = client.resource(&crontabs).namespace("default").filtered_list_watch(|options| {
    ///     options.label_selector = Some("team=payments".into());
    /// });
    /// # let _ = lw; }
    /// ```
    pub fn filtered_list_watch(
        &self,
        tweak: impl Fn(&mut ListOptions) + Send + Sync + 'static,
    ) -> FilteredListWatch<DynamicResource> {
        FilteredListWatch::new(self.clone(), Arc::new(tweak))
    }
}

/// The dynamic client lists and watches any resource for the informer factory's
/// `for_resource` (client-go's dynamic informer factory), in the factory's namespace when the
/// resource is namespaced, with its list-options tweak.
impl DynamicListerWatcherFor for DynamicClient {
    type ListerWatcher = FilteredListWatch<DynamicResource>;

    fn dynamic_lister_watcher(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        tweak: Option<TweakListOptions>,
    ) -> Self::ListerWatcher {
        let mut client = self.resource(resource);
        if let Some(namespace) = namespace.filter(|_| resource.namespaced) {
            client = client.namespace(namespace);
        }
        FilteredListWatch::with_optional_tweak(client, tweak)
    }
}
