//! client-go's watch-list data-consistency detector
//! ([`ReflectorOptions::check_watch_list_consistency`](crate::ReflectorOptions::check_watch_list_consistency),
//! a test aid): after a streaming list, a list at its resourceVersion must hold the same
//! objects.

use std::time::Duration;

use kclient_core::options::ResourceVersionMatch;
use kclient_core::{CancellationToken, ListOptions};
use tokio::time::sleep;

use super::io::{KindIo, ListedObjects};
use super::Core;

impl Core {
    /// Lists at `resource_version` (`Exact`, retried every second until it works or `cancel`
    /// fires) and panics if what the server lists differs from what the streaming list
    /// gathered, as client-go's detector does.
    pub(super) async fn check_consistency(
        &self,
        io: &dyn KindIo,
        listed: &dyn ListedObjects,
        resource_version: &str,
        cancel: &CancellationToken,
    ) {
        tracing::warn!(reflector = %self.name, "the watch-list data consistency check is on: an additional list call to the API server");
        let mut gathered = listed.identities();
        let options = ListOptions::default()
            .resource_version(resource_version)
            .resource_version_match(ResourceVersionMatch::Exact);
        let mut listed = loop {
            match io.list_identities(options.clone()).await {
                Ok(identities) => break identities,
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
