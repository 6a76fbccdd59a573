//! [`DeferredRestMapper`]: a [`RestMapper`] built on first use and rebuilt once when a name is
//! missing, so that resources created after start (a CRD installed by another controller) are
//! found (client-go's `restmapper.NewDeferredDiscoveryRESTMapper`).

use std::sync::Arc;
use std::time::Duration;

use kclient_core::{GroupKind, GroupResource, GroupVersionKind, GroupVersionResource};
use parking_lot::{Mutex, RwLock};
use tokio::time::Instant;

use crate::discovery::Discovery;
use crate::rest_mapper::{MapperError, RestMapper, RestMapping};

#[derive(Debug)]
struct Current {
    mapper: Arc<RestMapper>,
    /// Bumped by every rebuild.
    generation: u64,
}

/// A [`RestMapper`] over a [`Discovery`] client, built on first use and rebuilt once when a
/// lookup finds nothing.
///
/// On a miss ([`MapperError::is_no_match`]) the discovery client is invalidated, the mapper
/// rebuilt and the lookup tried once more — unless the mapper was built during this very
/// lookup from fresh discovery ([`Discovery::fresh`]), where looking again cannot find more.
/// Concurrent misses share one rebuild. This differs from client-go, which rebuilds only when
/// the discovery client is not fresh: over a memory cache that is never, so a CRD created
/// after start would never be found there. To bound the cost of lookups of names that really
/// do not exist, set [`min_refresh_interval`](Self::min_refresh_interval).
///
/// Put a cache underneath ([`MemCacheClient`](crate::MemCacheClient) or
/// [`DiskCachedDiscoveryClient`](crate::DiskCachedDiscoveryClient)): the mapper itself only
/// keeps the snapshot it built.
///
/// ```no_run
/// use kclient_discovery::{DeferredRestMapper, DiscoveryClient, MemCacheClient};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let discovery = DiscoveryClient::for_config(&kclient_rest::Config::infer()?)?;
/// let mapper = DeferredRestMapper::new(MemCacheClient::new(discovery));
/// let deployments = mapper.find("deploy").await?;
/// println!("{} -> {}", deployments.gvk, deployments.resource);
/// // Installed after start: found after one refresh of discovery.
/// let crontabs = mapper.find("crontabs.stable.example.com").await?;
/// println!("{}", crontabs.api_resource().collection_path(Some("default")));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct DeferredRestMapper<D> {
    discovery: D,
    current: RwLock<Option<Current>>,
    building: tokio::sync::Mutex<()>,
    min_refresh_interval: Option<Duration>,
    last_refresh: Mutex<Option<Instant>>,
}

impl<D: Discovery> DeferredRestMapper<D> {
    /// A mapper over `discovery`; nothing is fetched until the first lookup.
    pub fn new(discovery: D) -> Self {
        Self {
            discovery,
            current: RwLock::new(None),
            building: tokio::sync::Mutex::new(()),
            min_refresh_interval: None,
            last_refresh: Mutex::new(None),
        }
    }

    /// Rebuilds on a miss at most once per `interval` (tokio's clock); misses in between are
    /// answered from the current snapshot. Off by default.
    pub fn min_refresh_interval(mut self, interval: Duration) -> Self {
        self.min_refresh_interval = Some(interval);
        self
    }

    /// The discovery client underneath.
    pub fn discovery(&self) -> &D {
        &self.discovery
    }

    /// Forgets the snapshot and invalidates discovery: the next lookup rebuilds (client-go's
    /// `Reset`).
    pub fn reset(&self) {
        self.discovery.invalidate();
        *self.current.write() = None;
    }

    async fn build(&self) -> Result<Arc<RestMapper>, MapperError> {
        RestMapper::from_discovery(&self.discovery)
            .await
            .map(Arc::new)
            .map_err(|e| MapperError::Discovery(Arc::new(e)))
    }

    /// The current snapshot, building it if needed: (mapper, generation, built during this
    /// call).
    async fn snapshot(&self) -> Result<(Arc<RestMapper>, u64, bool), MapperError> {
        if let Some(c) = self.current.read().as_ref() {
            return Ok((c.mapper.clone(), c.generation, false));
        }
        let _building = self.building.lock().await;
        if let Some(c) = self.current.read().as_ref() {
            // Built by another caller while this one waited: as new as a build of our own.
            return Ok((c.mapper.clone(), c.generation, true));
        }
        let mapper = self.build().await?;
        let mut current = self.current.write();
        let generation = current.as_ref().map_or(0, |c| c.generation) + 1;
        *current = Some(Current {
            mapper: mapper.clone(),
            generation,
        });
        Ok((mapper, generation, true))
    }

    /// The current snapshot, built if needed.
    pub async fn mapper(&self) -> Result<Arc<RestMapper>, MapperError> {
        Ok(self.snapshot().await?.0)
    }

    /// Rebuilds from invalidated discovery, unless another caller rebuilt since `seen`.
    async fn refresh(&self, seen: u64) -> Result<Arc<RestMapper>, MapperError> {
        let _building = self.building.lock().await;
        if let Some(c) = self.current.read().as_ref() {
            if c.generation != seen {
                return Ok(c.mapper.clone());
            }
        }
        tracing::debug!("a name is missing from discovery; refreshing it");
        self.discovery.invalidate();
        *self.last_refresh.lock() = Some(Instant::now());
        let mapper = self.build().await?;
        *self.current.write() = Some(Current {
            mapper: mapper.clone(),
            generation: seen + 1,
        });
        Ok(mapper)
    }

    fn refresh_allowed(&self) -> bool {
        match (self.min_refresh_interval, *self.last_refresh.lock()) {
            (Some(interval), Some(last)) => last.elapsed() >= interval,
            _ => true,
        }
    }

    /// Runs `lookup`, and on a miss once more after a refresh (see the type's documentation).
    async fn lookup<T>(
        &self,
        lookup: impl Fn(&RestMapper) -> Result<T, MapperError>,
    ) -> Result<T, MapperError> {
        let (mapper, generation, built_now) = self.snapshot().await?;
        match lookup(&mapper) {
            Err(e)
                if e.is_no_match()
                    && (!built_now || !self.discovery.fresh())
                    && self.refresh_allowed() =>
            {
                let mapper = self.refresh(generation).await?;
                lookup(&mapper)
            }
            other => other,
        }
    }

    /// [`RestMapper::find`]: what a user typed (`po`, `Deployment`, `crontabs.stable.example.com`).
    pub async fn find(&self, name: &str) -> Result<RestMapping, MapperError> {
        self.lookup(|m| m.find(name)).await
    }

    /// [`RestMapper::kind_for`].
    pub async fn kind_for(
        &self,
        resource: &GroupVersionResource,
    ) -> Result<GroupVersionKind, MapperError> {
        self.lookup(|m| m.kind_for(resource)).await
    }

    /// [`RestMapper::kinds_for`].
    pub async fn kinds_for(
        &self,
        resource: &GroupVersionResource,
    ) -> Result<Vec<GroupVersionKind>, MapperError> {
        self.lookup(|m| m.kinds_for(resource)).await
    }

    /// [`RestMapper::resource_for`].
    pub async fn resource_for(
        &self,
        resource: &GroupVersionResource,
    ) -> Result<GroupVersionResource, MapperError> {
        self.lookup(|m| m.resource_for(resource)).await
    }

    /// [`RestMapper::resources_for`].
    pub async fn resources_for(
        &self,
        resource: &GroupVersionResource,
    ) -> Result<Vec<GroupVersionResource>, MapperError> {
        self.lookup(|m| m.resources_for(resource)).await
    }

    /// [`RestMapper::mapping_for_resource`].
    pub async fn mapping_for_resource(
        &self,
        resource: &GroupVersionResource,
    ) -> Result<RestMapping, MapperError> {
        self.lookup(|m| m.mapping_for_resource(resource)).await
    }

    /// [`RestMapper::rest_mapping`].
    pub async fn rest_mapping(
        &self,
        group_kind: &GroupKind,
        versions: &[&str],
    ) -> Result<RestMapping, MapperError> {
        self.lookup(|m| m.rest_mapping(group_kind, versions)).await
    }

    /// [`RestMapper::rest_mappings`].
    pub async fn rest_mappings(
        &self,
        group_kind: &GroupKind,
        versions: &[&str],
    ) -> Result<Vec<RestMapping>, MapperError> {
        self.lookup(|m| m.rest_mappings(group_kind, versions)).await
    }

    /// [`RestMapper::mapping_for_kind`].
    pub async fn mapping_for_kind(
        &self,
        gvk: &GroupVersionKind,
    ) -> Result<RestMapping, MapperError> {
        self.lookup(|m| m.mapping_for_kind(gvk)).await
    }

    /// [`RestMapper::resource_singularizer`].
    pub async fn resource_singularizer(&self, resource: &str) -> Result<String, MapperError> {
        self.lookup(|m| m.resource_singularizer(resource)).await
    }

    /// [`RestMapper::expand_category`]; an unknown category is a miss (refreshed once) and
    /// then `None`.
    pub async fn expand_category(
        &self,
        category: &str,
    ) -> Result<Option<Vec<GroupResource>>, MapperError> {
        let found = self
            .lookup(|m| {
                m.expand_category(category)
                    .ok_or_else(|| MapperError::UnknownResourceType {
                        name: category.to_owned(),
                    })
            })
            .await;
        match found {
            Ok(resources) => Ok(Some(resources)),
            Err(MapperError::UnknownResourceType { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}
