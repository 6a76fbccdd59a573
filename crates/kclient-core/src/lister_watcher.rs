//! [`ListerWatcher`]: the seam between clients and the informer cache, and the two traits
//! through which an informer factory makes lister-watchers ([`ListerWatcherFor`],
//! [`DynamicListerWatcherFor`]).
//!
//! The cache (reflector, informers) needs exactly two things from a client: list a resource,
//! and watch it from a resourceVersion. Typed and dynamic clients implement this trait; the
//! cache depends only on it, never on HTTP, and the clients never depend on the cache (as
//! client-go's `kubernetes/` and `dynamic/` never import `tools/cache`). Tests implement it
//! in memory.
//!
//! ```
//! use futures::stream::{self, StreamExt};
//! use kclient_core::options::ListOptions;
//! use kclient_core::{ApiError, DynamicObject, ListerWatcher, ObjectList, WatchEvent, WatchStream};
//!
//! /// A ListerWatcher over a fixed list whose watch ends at once.
//! struct Fixed(Vec<DynamicObject>);
//!
//! impl ListerWatcher<DynamicObject> for Fixed {
//!     type Error = ApiError;
//!
//!     async fn list(&self, _: &ListOptions) -> Result<ObjectList<DynamicObject>, ApiError> {
//!         Ok(ObjectList::new(self.0.clone(), "1"))
//!     }
//!
//!     async fn watch(&self, _: &ListOptions) -> Result<WatchStream<DynamicObject, ApiError>, ApiError> {
//!         Ok(stream::empty().boxed())
//!     }
//! }
//!
//! # futures::executor::block_on(async {
//! let lw = Fixed(vec![DynamicObject::default()]);
//! let list = lw.list(&ListOptions::default()).await.unwrap();
//! assert_eq!(list.resource_version(), Some("1"));
//! assert!(lw.watch(&ListOptions::default()).await.unwrap().next().await.is_none());
//! # });
//! ```

use std::future::Future;
use std::sync::Arc;

use futures::stream::BoxStream;

use crate::api_error::ApiStatus;
use crate::api_resource::ApiResource;
use crate::dynamic_object::DynamicObject;
use crate::fetched_list::FetchedList;
use crate::object_list::ObjectList;
use crate::options::ListOptions;
use crate::resource::Resource;
use crate::watch_event::WatchEvent;
#[cfg(doc)]
use crate::PartialObjectMetadata;

/// A watch: a stream of events that ends when the server closes the watch. An `Err` item is a
/// failure of the stream itself (a broken connection, an undecodable frame); the server's own
/// errors arrive as [`WatchEvent::Error`].
pub type WatchStream<K, E> = BoxStream<'static, Result<WatchEvent<K>, E>>;

/// The function a filtered lister applies to the options of every list and watch it makes,
/// typically to add label or field selectors (client-go's `TweakListOptionsFunc`): a
/// [`FilteredListWatch`] holds one.
pub type TweakListOptions = Arc<dyn Fn(&mut ListOptions) + Send + Sync>;

/// Lists and watches one resource (client-go's `cache.ListerWatcher`).
///
/// A `ListerWatcher` is bound to one resource, and usually to one namespace and selector: the
/// options passed in carry only what the reflector controls (resourceVersion, paging, timeouts,
/// bookmarks); implementations add their own selectors.
pub trait ListerWatcher<K>: Send + Sync {
    /// The error of a failed list or watch. [`ApiStatus`] lets the reflector tell a `410 Gone`
    /// from a refused connection from anything else. (A paged list's own failure is
    /// [`ListPager`](crate::ListPager)'s [`PagedListError`](crate::PagedListError), around this
    /// type.)
    type Error: std::error::Error + ApiStatus + Send + Sync + 'static;

    /// Lists the resource. The list's resourceVersion is where a following watch starts.
    fn list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ObjectList<K>, Self::Error>> + Send;

    /// Starts a watch at `options.resource_version`.
    fn watch(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<WatchStream<K, Self::Error>, Self::Error>> + Send;

    /// Lists, handing each object to `f` as it is decoded (the pager and the reflector use it
    /// to wrap objects as they arrive, reusing cached ones): [`fetch_list`](Self::fetch_list),
    /// then decode. With the typed and dynamic clients a large page never exists in full as
    /// decoded objects next to what `f` made of it.
    fn list_mapped<T, F>(
        &self,
        options: &ListOptions,
        f: F,
    ) -> impl Future<Output = Result<ObjectList<T>, Self::Error>> + Send
    where
        T: Send,
        F: FnMut(K) -> T + Send,
        K: Send,
    {
        let fetched = self.fetch_list(options);
        async move { fetched.await?.decode_mapped(f).await }
    }

    /// Lists, leaving the items to decode later: the response with its metadata read, so
    /// that a pager can request the next page (with its continue token) while this one
    /// decodes. The default lists and hands over the decoded list; the typed and dynamic
    /// clients return the undecoded body.
    fn fetch_list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<FetchedList<K, Self::Error>, Self::Error>> + Send {
        let list = self.list(options);
        async move { Ok(FetchedList::decoded(list.await?)) }
    }
}

impl<K, L: ListerWatcher<K> + ?Sized> ListerWatcher<K> for Arc<L> {
    type Error = L::Error;

    fn list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ObjectList<K>, Self::Error>> + Send {
        (**self).list(options)
    }

    fn watch(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<WatchStream<K, Self::Error>, Self::Error>> + Send {
        (**self).watch(options)
    }

    fn list_mapped<T, F>(
        &self,
        options: &ListOptions,
        f: F,
    ) -> impl Future<Output = Result<ObjectList<T>, Self::Error>> + Send
    where
        T: Send,
        F: FnMut(K) -> T + Send,
        K: Send,
    {
        (**self).list_mapped(options, f)
    }

    fn fetch_list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<FetchedList<K, Self::Error>, Self::Error>> + Send {
        (**self).fetch_list(options)
    }
}

/// A [`ListerWatcher`] that adjusts the options of every list and watch it makes, typically to
/// add label or field selectors (client-go's `NewFilteredListWatchFromClient` with its
/// `optionsModifier`, and the informer factories' `WithTweakListOptions`): any lister-watcher
/// `L` — a typed `ResourceClient<K>`, a `DynamicResource`, a `MetadataResource` — with a
/// [`TweakListOptions`]. The clients make one with their `filtered_list_watch`, and their
/// [`ListerWatcherFor`] / [`DynamicListerWatcherFor`] impls with the factory's tweak.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use futures::stream::{self, StreamExt};
/// use kclient_core::{ApiError, DynamicObject, FilteredListWatch, ListOptions, ListerWatcher};
/// use kclient_core::{ObjectList, WatchStream};
///
/// /// Records the label selector of each list it is asked for.
/// #[derive(Default)]
/// struct Recording(Mutex<Vec<Option<String>>>);
///
/// impl ListerWatcher<DynamicObject> for Recording {
///     type Error = ApiError;
///     async fn list(&self, o: &ListOptions) -> Result<ObjectList<DynamicObject>, ApiError> {
///         self.0.lock().unwrap().push(o.label_selector.clone());
///         Ok(ObjectList::new(Vec::new(), "1"))
///     }
///     async fn watch(&self, _: &ListOptions) -> Result<WatchStream<DynamicObject, ApiError>, ApiError> {
///         Ok(stream::empty().boxed())
///     }
/// }
///
/// # futures::executor::block_on(async {
/// let lw = FilteredListWatch::new(Recording::default(), Arc::new(|o: &mut ListOptions| {
///     o.label_selector = Some("app=web".into());
/// }));
/// lw.list(&ListOptions::default()).await.unwrap();
/// assert_eq!(*lw.inner().0.lock().unwrap(), [Some("app=web".to_string())]);
/// # });
/// ```
pub struct FilteredListWatch<L> {
    inner: L,
    tweak: TweakListOptions,
}

impl<L: Clone> Clone for FilteredListWatch<L> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            tweak: Arc::clone(&self.tweak),
        }
    }
}

impl<L: std::fmt::Debug> std::fmt::Debug for FilteredListWatch<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilteredListWatch")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<L> FilteredListWatch<L> {
    /// `inner` listing and watching with `tweak` applied to the options of every request.
    pub fn new(inner: L, tweak: TweakListOptions) -> Self {
        Self { inner, tweak }
    }

    /// `inner` with `tweak` if there is one, else with the options unchanged: what an informer
    /// factory makes with its optional tweak.
    pub fn with_optional_tweak(inner: L, tweak: Option<TweakListOptions>) -> Self {
        Self::new(inner, tweak.unwrap_or_else(|| Arc::new(|_| {})))
    }

    /// The options as they are sent: the caller's, adjusted by the tweak.
    pub fn tweaked(&self, options: &ListOptions) -> ListOptions {
        let mut options = options.clone();
        (self.tweak)(&mut options);
        options
    }

    /// The lister-watcher underneath.
    pub fn inner(&self) -> &L {
        &self.inner
    }
}

impl<K, L: ListerWatcher<K>> ListerWatcher<K> for FilteredListWatch<L> {
    type Error = L::Error;

    async fn list(&self, options: &ListOptions) -> Result<ObjectList<K>, L::Error> {
        let options = self.tweaked(options);
        self.inner.list(&options).await
    }

    async fn watch(&self, options: &ListOptions) -> Result<WatchStream<K, L::Error>, L::Error> {
        let options = self.tweaked(options);
        self.inner.watch(&options).await
    }

    async fn fetch_list(
        &self,
        options: &ListOptions,
    ) -> Result<FetchedList<K, L::Error>, L::Error> {
        let options = self.tweaked(options);
        self.inner.fetch_list(&options).await
    }
}

/// Makes the lister-watcher of a statically typed resource, for an informer factory
/// (kclient-cache's `SharedInformerFactory::informer`): kclient-typed's `Clientset`
/// implements it for every type, a test double can implement it for the types it serves.
///
/// It lives here, next to [`ListerWatcher`], so that the clients implement it without
/// depending on the cache and the cache uses it without depending on a client.
pub trait ListerWatcherFor<K>: Send + Sync + 'static {
    /// What it makes.
    type ListerWatcher: ListerWatcher<K> + Clone + 'static;

    /// A lister-watcher of `K` in `namespace` (all namespaces when `None`; ignored for a
    /// cluster-scoped resource) that applies `tweak` to every list and watch.
    fn lister_watcher(
        &self,
        namespace: Option<&str>,
        tweak: Option<TweakListOptions>,
    ) -> Self::ListerWatcher;
}

/// Makes the lister-watcher of any resource described at run time, for an informer
/// factory's `for_resource` (client-go's `dynamicinformer` and `metadatainformer`), its
/// objects of type `K`: a [`DynamicObject`] (the default, kclient-dynamic's
/// `DynamicClient`) or a [`PartialObjectMetadata`] (its `MetadataClient`) — any type whose
/// dynamic type is the [`ApiResource`] it was read from.
pub trait DynamicListerWatcherFor<K = DynamicObject>: Send + Sync + 'static
where
    K: Resource<DynamicType = ApiResource>,
{
    /// What it makes.
    type ListerWatcher: ListerWatcher<K> + Clone + 'static;

    /// A lister-watcher of `resource` in `namespace` (all namespaces when `None`; ignored
    /// for a cluster-scoped resource) that applies `tweak` to every list and watch.
    fn dynamic_lister_watcher(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        tweak: Option<TweakListOptions>,
    ) -> Self::ListerWatcher;
}
