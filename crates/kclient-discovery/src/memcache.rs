//! [`MemCacheClient`]: discovery cached in memory (client-go's `memory.NewMemCacheClient`).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::join_all;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIGroupList, APIResourceList};
use k8s_openapi::apimachinery::pkg::version::Info;
use kclient_core::GroupVersion;
use parking_lot::Mutex;

use crate::client::DiscoveryClient;
use crate::discovery::{group_versions, Discovery, GroupsAndMaybeResources};
use crate::error::Error;

/// A cached group-version: its resources, or why they could not be fetched.
type Entry = Result<APIResourceList, Arc<Error>>;

#[derive(Debug, Clone, Default)]
struct Cache {
    groups: APIGroupList,
    resources: BTreeMap<GroupVersion, Entry>,
}

#[derive(Debug, Default)]
struct State {
    cache: Option<Cache>,
    /// Bumped by every invalidation, so that a fetch that started before one does not
    /// install its (possibly older) result.
    generation: u64,
}

/// Discovery cached in memory: the first call fetches every group and group-version (with
/// aggregated discovery, in two requests; otherwise the group-versions in parallel), later
/// calls answer from memory until [`invalidate`](Discovery::invalidate).
///
/// As in client-go:
/// - [`fresh`](Discovery::fresh) is true once the cache is filled (it was fetched by this
///   process);
/// - a group-version that failed with a transient error (a 5xx, a 429, a broken connection) is
///   fetched again when asked for; other failures, stale group-versions and empty
///   group-versions (an error here, so that they are retried after an invalidation) stay
///   cached;
/// - a group-version the server does not list is [`Error::NotServed`];
/// - invalidating also invalidates the delegate (a disk cache underneath, for example).
///
/// Concurrent callers share one fetch.
///
/// ```no_run
/// use kclient_discovery::{Discovery, DiscoveryClient, MemCacheClient};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let cached = MemCacheClient::new(DiscoveryClient::for_config(&kclient_rest::Config::infer()?)?);
/// let first = cached.server_groups_and_resources().await?; // asks the server
/// let again = cached.server_groups_and_resources().await?; // answered from memory
/// assert_eq!(first.resources.len(), again.resources.len());
/// cached.invalidate(); // the next call asks the server again
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct MemCacheClient<D = DiscoveryClient> {
    delegate: D,
    state: Mutex<State>,
    fetching: tokio::sync::Mutex<()>,
}

impl<D: Discovery> MemCacheClient<D> {
    /// A memory cache in front of `delegate`.
    pub fn new(delegate: D) -> Self {
        Self {
            delegate,
            state: Mutex::new(State::default()),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// The client behind the cache.
    pub fn delegate(&self) -> &D {
        &self.delegate
    }

    /// The resources of a group-version from the delegate; an empty list is an error, as in
    /// client-go (`emptyResponseError`), so that it is fetched again later.
    async fn fetch_group_version(&self, gv: &GroupVersion) -> Entry {
        match self.delegate.server_resources_for_group_version(gv).await {
            Ok(list) if list.resources.is_empty() => {
                tracing::debug!(group_version = %gv, "discovery returned no resources");
                Err(Arc::new(Error::EmptyResponse(gv.clone())))
            }
            Ok(list) => Ok(list),
            Err(e) => {
                tracing::debug!(group_version = %gv, error = %e, "discovery of a group-version failed");
                Err(Arc::new(e))
            }
        }
    }

    /// Everything the delegate knows, fetching group-versions in parallel if needed. `None`
    /// when the server lists no groups at all (not cached, as in client-go).
    async fn fetch_all(&self) -> Result<Option<Cache>, Error> {
        let GroupsAndMaybeResources {
            groups,
            resources,
            failed,
        } = self.delegate.groups_and_maybe_resources().await?;
        let mut entries: BTreeMap<GroupVersion, Entry> = BTreeMap::new();
        match resources {
            Some(resources) => {
                entries.extend(resources.into_iter().map(|(gv, l)| (gv, Ok(l))));
            }
            None => {
                if groups.groups.is_empty() {
                    return Ok(None);
                }
                let gvs = group_versions(&groups);
                let fetched = join_all(
                    gvs.iter()
                        .map(|gv| async move { (gv.clone(), self.fetch_group_version(gv).await) }),
                )
                .await;
                entries.extend(fetched);
            }
        }
        entries.extend(failed.into_iter().map(|(gv, e)| (gv, Err(e))));
        Ok(Some(Cache {
            groups,
            resources: entries,
        }))
    }

    /// The cache, filling it first if needed (one fetch for all concurrent callers).
    async fn cache(&self) -> Result<Cache, Error> {
        if let Some(cache) = &self.state.lock().cache {
            return Ok(cache.clone());
        }
        let _fetching = self.fetching.lock().await;
        let generation = {
            let state = self.state.lock();
            if let Some(cache) = &state.cache {
                return Ok(cache.clone());
            }
            state.generation
        };
        let Some(cache) = self.fetch_all().await? else {
            return Ok(Cache::default());
        };
        let mut state = self.state.lock();
        if state.generation == generation {
            state.cache = Some(cache.clone());
        }
        Ok(cache)
    }

    /// Fetches again the cached group-versions that failed transiently, and records the
    /// outcome.
    async fn retry_transient(&self, cache: &mut Cache) {
        let retry: Vec<GroupVersion> = cache
            .resources
            .iter()
            .filter(|(_, e)| e.as_ref().is_err_and(|e| e.is_transient()))
            .map(|(gv, _)| gv.clone())
            .collect();
        if retry.is_empty() {
            return;
        }
        let fetched = join_all(
            retry
                .iter()
                .map(|gv| async move { (gv.clone(), self.fetch_group_version(gv).await) }),
        )
        .await;
        let mut state = self.state.lock();
        for (gv, entry) in fetched {
            if let Some(c) = state.cache.as_mut() {
                c.resources.insert(gv.clone(), entry.clone());
            }
            cache.resources.insert(gv, entry);
        }
    }
}

impl<D: Discovery> Discovery for MemCacheClient<D> {
    /// Not cached: the version can change under a running client (an upgrade).
    async fn server_version(&self) -> Result<Info, Error> {
        self.delegate.server_version().await
    }

    /// The cached groups with every cached group-version: the ones that failed in
    /// [`failed`](GroupsAndMaybeResources::failed), after transient failures were retried.
    async fn groups_and_maybe_resources(&self) -> Result<GroupsAndMaybeResources, Error> {
        let mut cache = self.cache().await?;
        self.retry_transient(&mut cache).await;
        let mut out = GroupsAndMaybeResources {
            groups: cache.groups,
            resources: Some(BTreeMap::new()),
            failed: BTreeMap::new(),
        };
        for (gv, entry) in cache.resources {
            match entry {
                Ok(list) => {
                    if let Some(r) = out.resources.as_mut() {
                        r.insert(gv, list);
                    }
                }
                Err(e) => {
                    out.failed.insert(gv, e);
                }
            }
        }
        Ok(out)
    }

    async fn server_resources_for_group_version(
        &self,
        group_version: &GroupVersion,
    ) -> Result<APIResourceList, Error> {
        let cache = self.cache().await?;
        let entry = match cache.resources.get(group_version) {
            None => return Err(Error::not_served(group_version.clone())),
            Some(Err(e)) if e.is_transient() => {
                let entry = self.fetch_group_version(group_version).await;
                if let Some(c) = self.state.lock().cache.as_mut() {
                    c.resources.insert(group_version.clone(), entry.clone());
                }
                entry
            }
            Some(entry) => entry.clone(),
        };
        entry.map_err(Error::Shared)
    }

    fn fresh(&self) -> bool {
        self.state.lock().cache.is_some()
    }

    fn invalidate(&self) {
        {
            let mut state = self.state.lock();
            state.cache = None;
            state.generation += 1;
        }
        self.delegate.invalidate();
    }
}
