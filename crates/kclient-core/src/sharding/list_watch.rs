//! [`ShardedListWatch`]: a lister-watcher that lists and watches one shard of a collection,
//! on any server.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use futures::stream::StreamExt as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;

use super::{Placement, ShardSelector};
use crate::fetched_list::FetchedList;
use crate::lister_watcher::{ListerWatcher, WatchStream};
use crate::object_list::ObjectList;
use crate::options::ListOptions;
use crate::resource::Resource;
use crate::watch_event::WatchEvent;

/// What the lists so far said of the server.
const UNKNOWN: u8 = 0;
const FILTERS: u8 = 1;
const IGNORES: u8 = 2;

/// Lists and watches the shard `selector` names of what `inner` lists and watches: sends
/// the selector (`shardSelector`) with every list and watch, and keeps only the shard's
/// objects of what comes back.
///
/// kube-apiserver with the `ShardedListAndWatch` gate (and kclient-fake with it) filters on
/// its side and echoes the selector in each list's `metadata.shardInfo`; a server without
/// the gate ignores the parameter and sends everything. Filtering again here makes both
/// correct: on the first the check finds nothing to drop; on the second the shard is cut out
/// here (every object still crosses the wire), and a warning says so once.
/// [`server_filters`](Self::server_filters) tells which the lists found.
///
/// An object's shard never changes (its uid and namespace are immutable), so a watch needs no
/// events for objects leaving or joining it.
///
/// ```
/// use futures::stream::{self, StreamExt};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kclient_core::sharding::{ShardKey, ShardSelector, ShardedListWatch};
/// use kclient_core::{ApiError, ListOptions, ListerWatcher, ObjectList, WatchStream};
///
/// /// A server without the gate: every object, whatever the options.
/// struct Everything(Vec<ConfigMap>);
///
/// impl ListerWatcher<ConfigMap> for Everything {
///     type Error = ApiError;
///     async fn list(&self, _: &ListOptions) -> Result<ObjectList<ConfigMap>, ApiError> {
///         Ok(ObjectList::new(self.0.clone(), "1"))
///     }
///     async fn watch(&self, _: &ListOptions) -> Result<WatchStream<ConfigMap, ApiError>, ApiError> {
///         Ok(stream::empty().boxed())
///     }
/// }
///
/// let objects = (0..100).map(|i| {
///     let mut cm = ConfigMap::default();
///     cm.metadata.uid = Some(format!("uid-{i}"));
///     cm
/// });
/// let selector = ShardSelector::shard(ShardKey::Uid, 0, 2).unwrap();
/// let lw = ShardedListWatch::new(Everything(objects.collect()), selector.clone());
/// # futures::executor::block_on(async {
/// let list = lw.list(&ListOptions::default()).await.unwrap();
/// assert!(list.items.iter().all(|cm| selector.matches(&cm.metadata)));
/// assert_eq!(lw.server_filters(), Some(false));
/// # });
/// ```
///
/// Without a selector ([`with_optional_selector`](Self::with_optional_selector) given
/// `None`, as an informer factory without one makes it) it passes everything through as is.
///
/// Objects placed by their controller's uid ([`by_controller_owner`](Self::by_controller_owner),
/// for the kinds a sharded controller owns) cannot be selected by the server: they are all
/// listed and watched, and only the shard's are kept — the cache holds the shard, the wire
/// carries everything.
#[derive(Debug)]
pub struct ShardedListWatch<L> {
    inner: L,
    selector: Option<Arc<ShardSelector>>,
    placement: Placement,
    server: Arc<AtomicU8>,
}

impl<L: Clone> Clone for ShardedListWatch<L> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            selector: self.selector.clone(),
            placement: self.placement,
            server: Arc::clone(&self.server),
        }
    }
}

impl<L> ShardedListWatch<L> {
    /// `inner`'s lists and watches, of the shard `selector` names.
    pub fn new(inner: L, selector: ShardSelector) -> Self {
        Self::with_optional_selector(inner, Some(selector))
    }

    /// `inner`'s lists and watches, of the shard `selector` names if there is one, else all
    /// of them, unchanged.
    pub fn with_optional_selector(inner: L, selector: Option<ShardSelector>) -> Self {
        Self::placed(inner, selector, Placement::Object)
    }

    /// `inner`'s lists and watches, keeping the objects whose controller (the owner
    /// reference with `controller: true`) is in the shard `selector` names (see
    /// [`Placement::ControllerOwner`]), or all of them unchanged without a selector.
    pub fn by_controller_owner(inner: L, selector: Option<ShardSelector>) -> Self {
        Self::placed(inner, selector, Placement::ControllerOwner)
    }

    /// `inner`'s lists and watches, of the shard `selector` names (if any) as `placement`
    /// places objects.
    pub fn placed(inner: L, selector: Option<ShardSelector>, placement: Placement) -> Self {
        Self {
            inner,
            selector: selector.map(Arc::new),
            placement,
            server: Arc::new(AtomicU8::new(UNKNOWN)),
        }
    }

    /// What places an object in the shard.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// The options as sent: with the selector when the server can apply it.
    fn sent(&self, selector: &ShardSelector, options: &ListOptions) -> ListOptions {
        match self.placement {
            Placement::Object => options.clone().shard_selector(selector),
            Placement::ControllerOwner => options.clone(),
        }
    }

    /// The shard, if any.
    pub fn selector(&self) -> Option<&ShardSelector> {
        self.selector.as_deref()
    }

    /// Whether the server filtered the lists so far (`Some(true)`: each echoed the
    /// selector), ignored the selector (`Some(false)`: one did not), or no list has been
    /// answered yet (`None`).
    pub fn server_filters(&self) -> Option<bool> {
        match self.server.load(Ordering::Relaxed) {
            FILTERS => Some(true),
            IGNORES => Some(false),
            _ => None,
        }
    }

    /// The lister-watcher underneath.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// Notes what a list's metadata says of the server (a warning the first time it did not
    /// filter).
    fn note(&self, selector: &ShardSelector, metadata: &ListMeta) {
        if self.placement != Placement::Object {
            return;
        }
        if selector.is_echoed_by(metadata) {
            // A server that ignored the selector once is not trusted again.
            let _ = self.server.compare_exchange(
                UNKNOWN,
                FILTERS,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        } else if self.server.swap(IGNORES, Ordering::Relaxed) != IGNORES {
            tracing::warn!(
                %selector,
                "the server ignored the shard selector (no ShardedListAndWatch gate?): the \
                 shard is filtered on the client, every object still crosses the wire"
            );
        }
    }
}

impl<K, L> ListerWatcher<K> for ShardedListWatch<L>
where
    K: Resource + Send + 'static,
    L: ListerWatcher<K>,
{
    type Error = L::Error;

    async fn list(&self, options: &ListOptions) -> Result<ObjectList<K>, L::Error> {
        let Some(selector) = &self.selector else {
            return self.inner.list(options).await;
        };
        let mut list = self.inner.list(&self.sent(selector, options)).await?;
        self.note(selector, &list.metadata);
        list.items
            .retain(|k| selector.places(self.placement, k.meta()));
        Ok(list)
    }

    async fn watch(&self, options: &ListOptions) -> Result<WatchStream<K, L::Error>, L::Error> {
        let Some(selector) = &self.selector else {
            return self.inner.watch(options).await;
        };
        let events = self.inner.watch(&self.sent(selector, options)).await?;
        let (selector, placement) = (Arc::clone(selector), self.placement);
        Ok(events
            .filter(move |event| {
                let keep = match event {
                    Ok(WatchEvent::Added(k) | WatchEvent::Modified(k) | WatchEvent::Deleted(k)) => {
                        selector.places(placement, k.meta())
                    }
                    _ => true,
                };
                std::future::ready(keep)
            })
            .boxed())
    }

    async fn fetch_list(
        &self,
        options: &ListOptions,
    ) -> Result<FetchedList<K, L::Error>, L::Error> {
        let Some(selector) = &self.selector else {
            return self.inner.fetch_list(options).await;
        };
        let fetched = self.inner.fetch_list(&self.sent(selector, options)).await?;
        self.note(selector, fetched.metadata());
        let (selector, placement) = (Arc::clone(selector), self.placement);
        Ok(fetched.filter(move |k| selector.places(placement, k.meta())))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use futures::executor::block_on;
    use futures::stream;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, ShardInfo};

    use super::*;
    use crate::api_error::ApiError;
    use crate::sharding::ShardKey;

    fn config_map(uid: &str) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.uid = Some(uid.to_owned());
        cm
    }

    /// A server that filters (echoing the selector) or not, recording the options it got.
    struct Server {
        filters: bool,
        objects: Vec<ConfigMap>,
        asked: Mutex<Vec<Option<String>>>,
    }

    impl Server {
        fn answer(&self, options: &ListOptions) -> ObjectList<ConfigMap> {
            self.asked
                .lock()
                .unwrap()
                .push(options.shard_selector.clone());
            let selector = options
                .shard_selector
                .as_deref()
                .map(|s| ShardSelector::parse(s).unwrap());
            let mut list = ObjectList::new(self.objects.clone(), "7");
            if let (true, Some(selector)) = (self.filters, selector) {
                list.items.retain(|cm| selector.matches(&cm.metadata));
                list.metadata.shard_info = Some(ShardInfo {
                    selector: selector.to_string(),
                });
            }
            list
        }
    }

    impl ListerWatcher<ConfigMap> for Server {
        type Error = ApiError;

        async fn list(&self, options: &ListOptions) -> Result<ObjectList<ConfigMap>, ApiError> {
            Ok(self.answer(options))
        }

        async fn watch(
            &self,
            options: &ListOptions,
        ) -> Result<WatchStream<ConfigMap, ApiError>, ApiError> {
            let events: Vec<Result<_, ApiError>> = self
                .answer(options)
                .items
                .into_iter()
                .map(WatchEvent::Modified)
                .map(Ok)
                .collect();
            Ok(stream::iter(events).boxed())
        }
    }

    /// Uids shaped as the server's (random UUIDs): FNV-1a's top bits spread them evenly
    /// (short keys that differ in their last bytes, `u0`, `u1`, …, would all hash alike).
    fn uid(i: u64) -> String {
        let x = (i + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let y = x.rotate_left(29).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            x >> 32,
            x & 0xffff,
            y >> 48,
            y & 0xffff,
            y >> 8 & 0xffff_ffff_ffff
        )
    }

    fn sharded(filters: bool) -> ShardedListWatch<Server> {
        let server = Server {
            filters,
            objects: (0..64).map(|i| config_map(&uid(i))).collect(),
            asked: Mutex::new(Vec::new()),
        };
        ShardedListWatch::new(server, ShardSelector::shard(ShardKey::Uid, 1, 3).unwrap())
    }

    fn uids(items: &[ConfigMap]) -> Vec<String> {
        items
            .iter()
            .filter_map(|c| c.metadata.uid.clone())
            .collect()
    }

    #[test]
    fn the_same_shard_whether_the_server_filters_or_not() {
        let (filtering, ignoring) = (sharded(true), sharded(false));
        assert_eq!(filtering.server_filters(), None);
        let options = ListOptions::default();
        let a = block_on(filtering.list(&options)).unwrap();
        let b = block_on(ignoring.list(&options)).unwrap();
        assert_eq!(uids(&a.items), uids(&b.items));
        assert!(!a.items.is_empty() && a.items.len() < 64);
        assert_eq!(filtering.server_filters(), Some(true));
        assert_eq!(ignoring.server_filters(), Some(false));
        let selector = filtering.selector().unwrap().to_string();
        assert_eq!(*filtering.inner().asked.lock().unwrap(), [Some(selector)]);

        let fetched = block_on(ignoring.fetch_list(&options)).unwrap();
        let fetched = block_on(fetched.decode()).unwrap();
        assert_eq!(uids(&fetched.items), uids(&a.items));
    }

    #[test]
    fn a_watch_delivers_only_the_shard() {
        let ignoring = sharded(false);
        let events = block_on(async {
            ignoring
                .watch(&ListOptions::default())
                .await
                .unwrap()
                .collect::<Vec<_>>()
                .await
        });
        assert!(!events.is_empty());
        for event in events {
            let event = event.unwrap();
            assert!(ignoring
                .selector()
                .unwrap()
                .matches(event.object().unwrap().meta()));
        }
    }

    #[test]
    fn without_a_selector_everything_passes_unchanged() {
        let lw = ShardedListWatch::with_optional_selector(sharded(true).inner, None);
        let list = block_on(lw.list(&ListOptions::default())).unwrap();
        assert_eq!(list.items.len(), 64);
        assert_eq!(*lw.inner().asked.lock().unwrap(), [None]);
        assert_eq!(lw.server_filters(), None);
    }

    #[test]
    fn owned_objects_are_kept_by_their_controllers_shard() {
        let owner_of = |i: u64| uid(1000 + i);
        let mut objects: Vec<ConfigMap> = (0..64)
            .map(|i| {
                let mut cm = config_map(&uid(i));
                cm.metadata.owner_references = Some(vec![OwnerReference {
                    uid: owner_of(i),
                    controller: Some(true),
                    ..OwnerReference::default()
                }]);
                cm
            })
            .collect();
        objects.push(config_map("no-owner"));
        let server = Server {
            filters: true,
            objects,
            asked: Mutex::new(Vec::new()),
        };
        let selector = ShardSelector::shard(ShardKey::Uid, 0, 2).unwrap();
        let lw = ShardedListWatch::by_controller_owner(server, Some(selector.clone()));
        let list = block_on(lw.list(&ListOptions::default())).unwrap();
        // The server cannot select by owner: nothing is asked of it.
        assert_eq!(*lw.inner().asked.lock().unwrap(), [None]);
        let expected: Vec<String> = (0..64)
            .filter(|i| selector.matches_value(&owner_of(*i)))
            .map(uid)
            .collect();
        assert!(!expected.is_empty() && expected.len() < 64);
        assert_eq!(uids(&list.items), expected);
        assert_eq!(lw.server_filters(), None);
    }

    #[test]
    fn a_server_that_ignored_the_selector_once_is_not_trusted_again() {
        let lw = sharded(false);
        block_on(lw.list(&ListOptions::default())).unwrap();
        let selector = lw.selector().unwrap().clone();
        let echoed = ListMeta {
            shard_info: Some(ShardInfo {
                selector: selector.to_string(),
            }),
            ..ListMeta::default()
        };
        lw.note(&selector, &echoed);
        assert_eq!(lw.server_filters(), Some(false));
    }
}
