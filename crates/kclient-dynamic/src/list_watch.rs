//! The [`ListerWatcher`] implementations that connect the dynamic client to the informer
//! cache, so informers work for any resource.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use kclient_core::{
    ApiResource, DynamicObject, FetchedList, ListOptions, ListerWatcher, ObjectList,
    TweakListOptions, WatchStream,
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

/// A [`ListerWatcher`] over a dynamic resource that adjusts every list and watch it makes,
/// typically to add label or field selectors (client-go's
/// `NewFilteredDynamicSharedInformerFactory` `tweakListOptions`).
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
pub struct FilteredListWatch {
    resource: DynamicResource,
    tweak: TweakListOptions,
}

impl fmt::Debug for FilteredListWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilteredListWatch")
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl FilteredListWatch {
    /// The options as they are sent: the caller's, adjusted by the tweak.
    pub fn tweaked(&self, options: &ListOptions) -> ListOptions {
        let mut options = options.clone();
        (self.tweak)(&mut options);
        options
    }

    /// The resource underneath.
    pub fn resource(&self) -> &DynamicResource {
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
        FilteredListWatch {
            resource: self.clone(),
            tweak: Arc::new(tweak),
        }
    }
}

impl ListerWatcher<DynamicObject> for FilteredListWatch {
    type Error = Error;

    async fn list(&self, options: &ListOptions) -> Result<ObjectList<DynamicObject>, Error> {
        let options = self.tweaked(options);
        self.resource.list(&options).await
    }

    async fn watch(
        &self,
        options: &ListOptions,
    ) -> Result<WatchStream<DynamicObject, Error>, Error> {
        let options = self.tweaked(options);
        self.resource.watch(&options).await
    }

    async fn fetch_list(
        &self,
        options: &ListOptions,
    ) -> Result<FetchedList<DynamicObject, Error>, Error> {
        let options = self.tweaked(options);
        self.resource.fetch_list(&options).await
    }
}

/// The dynamic client lists and watches any resource for the informer factory's
/// `for_resource` (client-go's dynamic informer factory), in the factory's namespace when the
/// resource is namespaced, with its list-options tweak.
impl kclient_cache::DynamicListerWatcherFor for DynamicClient {
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
        FilteredListWatch {
            resource: client,
            tweak: tweak.unwrap_or_else(|| Arc::new(|_| {})),
        }
    }
}
