//! The [`ListerWatcher`] implementation that connects dynamic and metadata resources to the
//! informer cache, so informers work for any resource, and the [`DynamicListerWatcherFor`]
//! through which an informer factory makes them — kclient-core's seams, so this crate knows
//! nothing of the cache.

use std::future::Future;
use std::sync::Arc;

use kclient_core::{
    ApiResource, DynamicListerWatcherFor, FetchedList, FilteredListWatch, ListOptions,
    ListerWatcher, ObjectList, Resource, TweakListOptions, WatchStream,
};

use kclient_rest::RestClient;

use crate::client::ViewClient;
use crate::error::Error;
use crate::resource::DynamicResource;
use crate::view::ObjectView;

/// A dynamic or metadata resource lists and watches in its namespace (or all namespaces):
/// the options the reflector passes (resourceVersion, paging, timeout, bookmarks) are sent as
/// they are. For selectors, use [`DynamicResource::filtered_list_watch`].
impl<T: ObjectView> ListerWatcher<T> for DynamicResource<T> {
    type Error = Error;

    fn list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ObjectList<T>, Error>> + Send {
        DynamicResource::list(self, options)
    }

    fn watch(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<WatchStream<T, Error>, Error>> + Send {
        DynamicResource::watch(self, options)
    }

    fn fetch_list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<FetchedList<T, Error>, Error>> + Send {
        DynamicResource::fetch_list(self, options)
    }
}

impl<T: ObjectView> DynamicResource<T> {
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
    ) -> FilteredListWatch<Self> {
        FilteredListWatch::new(self.clone(), Arc::new(tweak))
    }

    /// What an informer factory lists and watches (kclient-core's
    /// [`DynamicListerWatcherFor`], of the dynamic and metadata clients and of kclient-typed's
    /// `Clientset`): `resource` over `rest`, in the factory's namespace (ignored for a
    /// cluster-scoped resource, whose scope the [`ApiResource`] tells), with its list-options
    /// tweak.
    pub fn informer_lister_watcher(
        rest: RestClient,
        resource: &ApiResource,
        namespace: Option<&str>,
        tweak: Option<TweakListOptions>,
    ) -> FilteredListWatch<Self> {
        let resource = Self::new(rest, resource.into());
        let resource = match namespace {
            Some(namespace) => resource.namespace(namespace),
            None => resource,
        };
        FilteredListWatch::with_optional_tweak(resource, tweak)
    }
}

/// The dynamic and metadata clients list and watch any resource for the informer factory's
/// `for_resource` (client-go's dynamic informer factory and `metadatainformer`), in the
/// factory's namespace when the resource is namespaced, with its list-options tweak.
impl<T> DynamicListerWatcherFor<T> for ViewClient<T>
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
