//! [`ListWatch`]: a [`ListerWatcher`] made of two closures (client-go's `cache.ListWatch`),
//! for tests and custom sources.
//!
//! ```
//! use futures::stream::{self, StreamExt};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_cache::ListWatch;
//! use kclient_core::{ApiError, ListerWatcher, ListOptions, ObjectList, WatchStream};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let lw = ListWatch::<ConfigMap, ApiError>::new(
//!     |_options: ListOptions| async { Ok(ObjectList::new(vec![ConfigMap::default()], "7")) },
//!     |_options: ListOptions| async { Ok(stream::empty().boxed()) },
//! );
//! let list = lw.list(&ListOptions::default()).await.unwrap();
//! assert_eq!(list.resource_version(), Some("7"));
//! # }
//! ```

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use kclient_core::{ApiStatus, ListOptions, ListerWatcher, ObjectList, WatchStream};

type ListFn<K, E> =
    dyn Fn(ListOptions) -> BoxFuture<'static, Result<ObjectList<K>, E>> + Send + Sync;
type WatchFn<K, E> =
    dyn Fn(ListOptions) -> BoxFuture<'static, Result<WatchStream<K, E>, E>> + Send + Sync;

/// A [`ListerWatcher`] from a list closure and a watch closure, each given the options the
/// caller (usually a [`Reflector`](crate::Reflector)) chose. Cheap to clone.
pub struct ListWatch<K, E> {
    list: Arc<ListFn<K, E>>,
    watch: Arc<WatchFn<K, E>>,
}

impl<K, E> Clone for ListWatch<K, E> {
    fn clone(&self) -> Self {
        Self {
            list: Arc::clone(&self.list),
            watch: Arc::clone(&self.watch),
        }
    }
}

impl<K, E> fmt::Debug for ListWatch<K, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ListWatch")
    }
}

impl<K, E> ListWatch<K, E> {
    /// A lister-watcher from its two halves.
    pub fn new<LF, LFut, WF, WFut>(list: LF, watch: WF) -> Self
    where
        LF: Fn(ListOptions) -> LFut + Send + Sync + 'static,
        LFut: Future<Output = Result<ObjectList<K>, E>> + Send + 'static,
        WF: Fn(ListOptions) -> WFut + Send + Sync + 'static,
        WFut: Future<Output = Result<WatchStream<K, E>, E>> + Send + 'static,
    {
        Self {
            list: Arc::new(move |o| list(o).boxed()),
            watch: Arc::new(move |o| watch(o).boxed()),
        }
    }
}

impl<K, E> ListerWatcher<K> for ListWatch<K, E>
where
    K: Send + 'static,
    E: std::error::Error + ApiStatus + Send + Sync + 'static,
{
    type Error = E;

    fn list(&self, options: &ListOptions) -> impl Future<Output = Result<ObjectList<K>, E>> + Send {
        (self.list)(options.clone())
    }

    fn watch(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<WatchStream<K, E>, E>> + Send {
        (self.watch)(options.clone())
    }
}
