//! The streaming list (client-go's `watchList`, KEP-3157): a watch with
//! `sendInitialEvents=true`, `resourceVersionMatch=NotOlderThan` and bookmarks, whose events
//! are gathered until the bookmark annotated `k8s.io/initial-events-end`, then replace the
//! store's content in one go; the same watch then goes on as the watch phase's.

use kclient_core::options::ResourceVersionMatch;
use kclient_core::{CancellationToken, ListOptions, ListerWatcher, Resource, WatchStream};
use tokio::time::Instant;

use super::errors::ReflectorError;
use super::list::SLOW_LIST;
use super::phase::Outcome;
use super::watch::WatchEnd;
use super::Reflector;
use crate::initial_events::InitialEvents;
use crate::store::Store;

impl<K, L, S> Reflector<K, L, S>
where
    K: Resource + Clone + Send + Sync + 'static,
    L: ListerWatcher<K> + Clone + 'static,
    S: Store<K>,
{
    /// The streaming list phase's step, one attempt: [`Outcome::Listed`] once the initial
    /// events are in the store, with the watch to go on with in `carried`;
    /// [`Outcome::Closed`] when the server ended the watch before its closing bookmark.
    /// `since` is when the run's first attempt started (what a slow list is measured by).
    pub(super) async fn streaming_list(
        &self,
        since: Instant,
        carried: &mut Option<WatchStream<K, L::Error>>,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ReflectorError<L::Error>> {
        let options = ListOptions::default()
            .resource_version(self.state.lock().versions.rewatch_at())
            .resource_version_match(ResourceVersionMatch::NotOlderThan)
            .send_initial_events(true)
            .allow_watch_bookmarks(true)
            .timeout_seconds(self.watch_timeout_seconds())
            .omit_managed_fields(self.admission.omits_managed_fields());
        let indexers = (self.admission.known_objects.as_ref())
            .filter(|_| self.admission.codec.is_some())
            .map(|store| store.current_indexers());
        let initial = InitialEvents::<K>::new(self.admission.codec.clone(), indexers);
        let started = Instant::now();
        let Some(opened) = self
            .with_resync(None, cancel, self.start_watch(&options))
            .await?
        else {
            return Ok(Outcome::Cancelled);
        };
        let mut stream = opened.map_err(|source| ReflectorError::Watch {
            what: self.type_description.clone(),
            source,
        })?;
        let mut resource_version = String::new();
        let mut record = |rv: &str| {
            resource_version.clear();
            resource_version.push_str(rv);
        };
        let ended = self
            .consume(&mut stream, &initial, started, cancel, true, &mut record)
            .await?;
        let stream = match ended {
            None => return Ok(Outcome::Cancelled),
            // Closed before the bookmark: the next attempt starts with a clean store.
            Some(WatchEnd::Closed) => return Ok(Outcome::Closed),
            Some(WatchEnd::InitialEventsEnd(stream)) => stream,
        };
        let elapsed = since.elapsed();
        if elapsed > SLOW_LIST {
            tracing::warn!(reflector = %self.name, ?elapsed, "slow streaming list");
        }
        self.state.lock().versions.streamed();
        let listed = initial.into_listed();
        if self.check_watch_list_consistency {
            self.check_consistency(&listed, &resource_version, cancel)
                .await;
        }
        self.sync_with(listed, &resource_version, elapsed)?;
        *carried = Some(stream);
        Ok(Outcome::Listed)
    }
}
