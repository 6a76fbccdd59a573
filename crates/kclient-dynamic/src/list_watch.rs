//! The [`ListerWatcher`] implementations that connect the dynamic and metadata clients to
//! the informer cache, so informers work for any resource, and the
//! [`DynamicListerWatcherFor`] through which an informer factory makes them — kclient-core's
//! seams, so this crate knows nothing of the cache.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use kclient_core::{
    ApiResource, DynamicListerWatcherFor, DynamicObject, FetchedList, ListOptions, ListerWatcher,
    ObjectList, TweakListOptions, WatchStream,
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

/// A [`ListerWatcher`] over a dynamic resource (or, as `FilteredListWatch<MetadataResource>`,
/// a metadata one) that adjusts every list and watch it makes, typically to add label or
/// field selectors (client-go's `NewFilteredDynamicSharedInformerFactory` and
/// `NewFilteredSharedInformerFactory` of `metadatainformer`, their `tweakListOptions`).
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
#[derive(Clone)]
pub struct FilteredListWatch<R = DynamicResource> {
    resource: R,
    tweak: TweakListOptions,
}

impl<R: fmt::Debug> fmt::Debug for FilteredListWatch<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilteredListWatch")
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl<R> FilteredListWatch<R> {
    /// A lister-watcher over `resource` that applies `tweak` (or nothing) to every list and
    /// watch.
    pub(crate) fn new(resource: R, tweak: Option<TweakListOptions>) -> Self {
        Self {
            resource,
            tweak: tweak.unwrap_or_else(|| Arc::new(|_| {})),
        }
    }

    /// The options as they are sent: the caller's, adjusted by the tweak.
    pub fn tweaked(&self, options: &ListOptions) -> ListOptions {
        let mut options = options.clone();
        (self.tweak)(&mut options);
        options
    }

    /// The resource underneath.
    pub fn resource(&self) -> &R {
        &self.resource
    }
}

impl DynamicResource {
    /// A [`ListerWatcher`] over this resource that applies `tweak` to the options of every
    /// list and watch.
    pub fn filtered_list_watch(
        &self,
        tweak: impl Fn(&mut ListOptions) + Send + Sync + 'static,
    ) -> FilteredListWatch {
        FilteredListWatch::new(self.clone(), Some(Arc::new(tweak)))
    }
}

impl<K, R: ListerWatcher<K>> ListerWatcher<K> for FilteredListWatch<R> {
    type Error = R::Error;

    async fn list(&self, options: &ListOptions) -> Result<ObjectList<K>, R::Error> {
        let options = self.tweaked(options);
        self.resource.list(&options).await
    }

    async fn watch(&self, options: &ListOptions) -> Result<WatchStream<K, R::Error>, R::Error> {
        let options = self.tweaked(options);
        self.resource.watch(&options).await
    }

    async fn fetch_list(
        &self,
        options: &ListOptions,
    ) -> Result<FetchedList<K, R::Error>, R::Error> {
        let options = self.tweaked(options);
        self.resource.fetch_list(&options).await
    }
}

/// The dynamic client lists and watches any resource for the informer factory's
/// `for_resource` (client-go's dynamic informer factory), in the factory's namespace when the
/// resource is namespaced, with its list-options tweak.
impl DynamicListerWatcherFor for DynamicClient {
    type ListerWatcher = FilteredListWatch;

    fn dynamic_lister_watcher(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        tweak: Option<TweakListOptions>,
    ) -> FilteredListWatch {
        let mut client = self.resource(resource);
        if let Some(namespace) = namespace.filter(|_| resource.namespaced) {
            client = client.namespace(namespace);
        }
        FilteredListWatch::new(client, tweak)
    }
}
