//! The list (client-go's `list` and `syncWith`): a paged list at the relist resourceVersion,
//! again at `""` after an expired or too-large one, whose objects replace the store's
//! content.

use std::time::Duration;

use kclient_core::{
    CancellationToken, ListOptions, ListPager, ListerWatcher, PagedList, PagedListError, Resource,
};
use parking_lot::Mutex;
use tokio::time::Instant;

use super::errors::ReflectorError;
use super::phase::{Failure, Outcome};
use super::Reflector;
use crate::representation::{EncodedList, Listed};
use crate::store::{Store, StoreError};

/// A list slower than this is logged as a warning (client-go's trace threshold).
pub(super) const SLOW_LIST: Duration = Duration::from_secs(10);

/// One list: its resourceVersion, whether it came in pages, its objects (or the first
/// error admitting one).
struct Listing<K> {
    resource_version: String,
    paginated: bool,
    items: Result<Listed<K>, StoreError>,
}

impl<K> Listing<K> {
    /// A paged list whose items (each the outcome of admitting one object) `gather` makes
    /// into the listed objects.
    fn of<T>(
        paged: PagedList<T>,
        gather: impl FnOnce(Vec<T>) -> Result<Listed<K>, StoreError>,
    ) -> Self {
        Self {
            resource_version: paged.list.resource_version().unwrap_or_default().to_owned(),
            paginated: paged.paginated,
            items: gather(paged.list.items),
        }
    }
}

impl<K, L, S> Reflector<K, L, S>
where
    K: Resource + Clone + Send + Sync + 'static,
    L: ListerWatcher<K> + Clone + 'static,
    S: Store<K>,
{
    /// The list phase's step: lists at the relist resourceVersion (again at `""` after an
    /// expired or too-large error), then replaces the store's content.
    pub(super) async fn list(
        &self,
        cancel: &CancellationToken,
    ) -> Result<Outcome, ReflectorError<L::Error>> {
        let started = Instant::now();
        let requested = self.state.lock().versions.relist_at().to_owned();
        let listing = async {
            match self.list_at(&requested).await {
                Err(e) if Failure::of(&e).version_unavailable() => {
                    let retry_at = {
                        let mut state = self.state.lock();
                        state.versions.forget();
                        state.versions.relist_at().to_owned()
                    };
                    tracing::debug!(reflector = %self.name, error = %e, "list at resourceVersion {requested:?} refused; listing at {retry_at:?}");
                    self.list_at(&retry_at).await.map(|l| (l, retry_at))
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
        listed: Listed<K>,
        resource_version: &str,
        elapsed: Duration,
    ) -> Result<(), ReflectorError<L::Error>> {
        match listed {
            Listed::Decoded(items) => {
                self.report_list(items.len(), elapsed);
                self.store.replace(items, resource_version)
            }
            Listed::Encoded(list) => {
                self.report_list(list.len(), elapsed);
                self.store.replace_encoded(list, resource_version)
            }
        }
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

    /// One list at `resource_version`, paged by client-go's rules, each item admitted (or
    /// encoded, for a compact informer) as its page arrives.
    async fn list_at(
        &self,
        resource_version: &str,
    ) -> Result<Listing<K>, PagedListError<L::Error>> {
        let page_size = self
            .state
            .lock()
            .versions
            .page_size(self.watch_list_page_size, resource_version);
        let options = ListOptions::default()
            .resource_version(resource_version)
            .omit_managed_fields(self.admission.omits_managed_fields());
        let pager = ListPager::new(self.lister_watcher.clone()).page_size(page_size);
        let Some(codec) = &self.admission.codec else {
            let paged = pager
                .list_map(&options, |obj| self.admission.admit(obj))
                .await?;
            return Ok(Listing::of(paged, |items| {
                items
                    .into_iter()
                    .collect::<Result<_, _>>()
                    .map(Listed::Decoded)
            }));
        };
        let mut encoded = EncodedList::new(codec.clone());
        if let Some(store) = &self.admission.known_objects {
            encoded = encoded.indexed_by(store.current_indexers());
        }
        let encoded = Mutex::new(encoded);
        let paged = pager
            .list_map(&options, |obj| self.admission.admit_encoded(obj, &encoded))
            .await?;
        Ok(Listing::of(paged, |items| {
            items
                .into_iter()
                .collect::<Result<(), StoreError>>()
                .map(|()| Listed::Encoded(encoded.into_inner()))
        }))
    }
}
