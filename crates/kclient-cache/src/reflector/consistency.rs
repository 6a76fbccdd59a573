//! client-go's watch-list data-consistency detector
//! ([`ReflectorOptions::check_watch_list_consistency`](crate::ReflectorOptions::check_watch_list_consistency),
//! a test aid): after a streaming list, a list at its resourceVersion must hold the same
//! objects.

use std::time::Duration;

use kclient_core::options::ResourceVersionMatch;
use kclient_core::{
    CancellationToken, ListOptions, ListPager, ListerWatcher, Resource, DEFAULT_PAGE_SIZE,
};
use tokio::time::sleep;

use super::Reflector;
use crate::representation::Listed;
use crate::store::Store;

/// What the check compares of an object: key, uid, resourceVersion.
type Identity = (String, String, String);

fn identity<K: Resource>(obj: &K) -> Identity {
    (
        kclient_core::meta_namespace_key(obj),
        obj.meta().uid.clone().unwrap_or_default(),
        obj.meta().resource_version.clone().unwrap_or_default(),
    )
}

impl<K, L, S> Reflector<K, L, S>
where
    K: Resource + Clone + Send + Sync + 'static,
    L: ListerWatcher<K> + Clone + 'static,
    S: Store<K>,
{
    /// Lists at `resource_version` (`Exact`, retried every second until it works or `cancel`
    /// fires) and panics if what the server lists differs from what the streaming list
    /// gathered, as client-go's detector does.
    pub(super) async fn check_consistency(
        &self,
        listed: &Listed<K>,
        resource_version: &str,
        cancel: &CancellationToken,
    ) {
        tracing::warn!(reflector = %self.name, "the watch-list data consistency check is on: an additional list call to the API server");
        let mut gathered: Vec<Identity> = match listed {
            Listed::Decoded(objects) => objects.iter().map(|o| identity(&**o)).collect(),
            Listed::Encoded(list) => (0..list.len())
                .filter_map(|i| list.decode(i)?.ok())
                .map(|o| identity(&o))
                .collect(),
        };
        let options = ListOptions::default()
            .resource_version(resource_version)
            .resource_version_match(ResourceVersionMatch::Exact);
        let mut listed = loop {
            let pager = ListPager::new(self.lister_watcher.clone()).page_size(DEFAULT_PAGE_SIZE);
            match pager.list_map(&options, |o| identity(&o)).await {
                Ok(paged) => break paged.list.items,
                Err(err) => {
                    tracing::error!(reflector = %self.name, error = %err, "failed to list for the data consistency check; retrying");
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        _ = sleep(Duration::from_secs(1)) => {}
                    }
                }
            }
        };
        gathered.sort();
        listed.sort();
        if gathered != listed {
            tracing::info!(reflector = %self.name, streamed = ?gathered, listed = ?listed, "what the streaming list gathered differs from a list at its resourceVersion");
            panic!("data inconsistency detected for {}, panicking!", self.name);
        }
    }
}
