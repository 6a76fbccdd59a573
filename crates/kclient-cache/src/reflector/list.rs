//! The list (client-go's `list` and `syncWith`): a paged list at the relist resourceVersion,
//! again at `""` after an expired or too-large one, whose objects replace the store's
//! content.

use std::time::Duration;

use kclient_core::{CancellationToken, ListOptions, PagedListError};
use tokio::time::Instant;

use super::errors::ReflectorError;
use super::errors::SourceError;
use super::io::{KindIo, ListedObjects, Listing};
use super::phase::{Failure, Outcome};
use super::Core;

/// A list slower than this is logged as a warning (client-go's trace threshold).
pub(super) const SLOW_LIST: Duration = Duration::from_secs(10);

impl Core {
    /// The list phase's step: lists at the relist resourceVersion (again at `""` after an
    /// expired or too-large error), then replaces the store's content.
    pub(super) async fn list(
        &self,
        io: &dyn KindIo,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ReflectorError<SourceError>> {
        let started = Instant::now();
        let requested = self.state.lock().versions.relist_at().to_owned();
        let listing = async {
            match self.list_at(io, &requested).await {
                Err(e) if Failure::of(&e).version_unavailable() => {
                    let retry_at = {
                        let mut state = self.state.lock();
                        state.versions.forget();
                        state.versions.relist_at().to_owned()
                    };
                    tracing::debug!(reflector = %self.name, error = %e, "list at resourceVersion {requested:?} refused; listing at {retry_at:?}");
                    self.list_at(io, &retry_at).await.map(|l| (l, retry_at))
                }
                other => other.map(|l| (l, requested.clone())),
            }
        };
        let result = tokio::select! {
            _ = cancel.cancelled() => return Ok(Outcome::Cancelled),
            result = listing => result,
        };
        let elapsed = started.elapsed();
        if elapsed > SLOW_LIST {
            tracing::warn!(reflector = %self.name, ?elapsed, "slow list");
        }
        let what = self.type_description.clone();
        let (listing, listed_at) = result.map_err(|e| match e {
            PagedListError::Lister(source) => ReflectorError::List { what, source },
            PagedListError::Pager(source) => ReflectorError::Pager { what, source },
        })?;
        self.state
            .lock()
            .versions
            .listed(&listed_at, listing.paginated);
        let listed = listing.items.map_err(ReflectorError::Store)?;
        self.sync_with(listed, &listing.resource_version, elapsed)?;
        Ok(Outcome::Listed)
    }

    /// Replaces the store's content with a list's (or a streaming list's) objects and
    /// records its resourceVersion (client-go's `syncWith`), reporting the list.
    pub(super) fn sync_with(
        &self,
        listed: Box<dyn ListedObjects + '_>,
        resource_version: &str,
        elapsed: Duration,
    ) -> Result<(), ReflectorError<SourceError>> {
        self.report_list(listed.len(), elapsed);
        listed
            .replace(resource_version)
            .map_err(ReflectorError::Store)?;
        self.record_resource_version(resource_version);
        Ok(())
    }

    /// Tells the metrics about a list of `len` objects.
    fn report_list(&self, len: usize, elapsed: Duration) {
        if let Some(m) = &self.metrics {
            m.list(len, elapsed);
            let listed_before = std::mem::replace(&mut self.state.lock().listed_before, true);
            if listed_before {
                m.relist();
            }
        }
    }

    /// One list at `resource_version`, paged by client-go's rules.
    async fn list_at<'a>(
        &self,
        io: &'a dyn KindIo,
        resource_version: &str,
    ) -> Result<Listing<'a>, PagedListError<SourceError>> {
        let page_size = self
            .state
            .lock()
            .versions
            .page_size(self.watch_list_page_size, resource_version);
        let options = ListOptions::default()
            .resource_version(resource_version)
            .omit_managed_fields(io.omits_managed_fields());
        io.list(options, page_size).await
    }
}
