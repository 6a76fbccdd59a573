//! The streaming list (client-go's `watchList`, KEP-3157): a watch with
//! `sendInitialEvents=true`, `resourceVersionMatch=NotOlderThan` and bookmarks, whose events
//! are gathered until the bookmark annotated `k8s.io/initial-events-end`, then replace the
//! store's content in one go; the same watch then goes on as the watch phase's.

use kclient_core::options::ResourceVersionMatch;
use kclient_core::{CancellationToken, ListOptions};
use tokio::time::Instant;

use super::errors::ReflectorError;
use super::errors::SourceError;
use super::io::{EventSource, KindIo};
use super::list::SLOW_LIST;
use super::phase::Outcome;
use super::watch::WatchEnd;
use super::Core;

impl Core {
    /// The streaming list phase's step, one attempt: [`Outcome::Listed`] once the initial
    /// events are in the store, with the watch to go on with in `carried`;
    /// [`Outcome::Closed`] when the server ended the watch before its closing bookmark.
    /// `since` is when the run's first attempt started (what a slow list is measured by).
    pub(super) async fn streaming_list<'a>(
        &self,
        io: &'a dyn KindIo,
        since: Instant,
        carried: &mut Option<Box<dyn EventSource<'a> + 'a>>,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ReflectorError<SourceError>> {
        let options = ListOptions::default()
            .resource_version(self.state.lock().versions.rewatch_at())
            .resource_version_match(ResourceVersionMatch::NotOlderThan)
            .send_initial_events(true)
            .allow_watch_bookmarks(true)
            .timeout_seconds(self.watch_timeout_seconds())
            .omit_managed_fields(io.omits_managed_fields());
        let started = Instant::now();
        let opened = io.watch(options, self.watch_idle_timeout, true);
        let Some(opened) = self.with_resync(io, None, cancel, opened).await? else {
            return Ok(Outcome::Cancelled);
        };
        let mut source = opened.map_err(|source| ReflectorError::Watch {
            what: self.type_description.clone(),
            source,
        })?;
        let mut resource_version = String::new();
        let mut record = |rv: &str| {
            resource_version.clear();
            resource_version.push_str(rv);
        };
        let ended = self
            .consume(&mut *source, started, cancel, true, &mut record)
            .await?;
        match ended {
            None => return Ok(Outcome::Cancelled),
            // Closed before the bookmark: the next attempt starts with a clean store.
            Some(WatchEnd::Closed) => return Ok(Outcome::Closed),
            Some(WatchEnd::InitialEventsEnd) => {}
        }
        let elapsed = since.elapsed();
        if elapsed > SLOW_LIST {
            tracing::warn!(reflector = %self.name, ?elapsed, "slow streaming list");
        }
        self.state.lock().versions.streamed();
        let listed = source.finish_initial_events();
        if self.check_watch_list_consistency {
            self.check_consistency(io, &*listed, &resource_version, cancel)
                .await;
        }
        self.sync_with(listed, &resource_version, elapsed)?;
        *carried = Some(source);
        Ok(Outcome::Listed)
    }
}
