//! [`ListerWatcher`]: the seam between clients and the informer cache.
//!
//! The cache (reflector, informers) needs exactly two things from a client: list a resource,
//! and watch it from a resourceVersion. Typed and dynamic clients implement this trait; the
//! cache depends only on it, never on HTTP. Tests implement it in memory.
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
use crate::fetched_list::FetchedList;
use crate::object_list::ObjectList;
use crate::options::ListOptions;
use crate::watch_event::WatchEvent;

/// A watch: a stream of events that ends when the server closes the watch. An `Err` item is a
/// failure of the stream itself (a broken connection, an undecodable frame); the server's own
/// errors arrive as [`WatchEvent::Error`].
pub type WatchStream<K, E> = BoxStream<'static, Result<WatchEvent<K>, E>>;

/// The function a filtered lister applies to the options of every list and watch it makes,
/// typically to add label or field selectors (client-go's `TweakListOptionsFunc`): the
/// typed and dynamic clients' `FilteredListWatch` hold one.
pub type TweakListOptions = Arc<dyn Fn(&mut ListOptions) + Send + Sync>;

/// Lists and watches one resource (client-go's `cache.ListerWatcher`).
///
/// A `ListerWatcher` is bound to one resource, and usually to one namespace and selector: the
/// options passed in carry only what the reflector controls (resourceVersion, paging, timeouts,
/// bookmarks); implementations add their own selectors.
pub trait ListerWatcher<K>: Send + Sync {
    /// The error of a failed list or watch. [`ApiStatus`] lets the reflector tell a `410 Gone`
    /// from a refused connection from anything else.
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
        async move { fetched.await?.decode_mapped(f) }
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
