//! The [`Discovery`] trait (client-go's `DiscoveryInterface` and `CachedDiscoveryInterface` in
//! one), implemented by the live [`DiscoveryClient`](crate::DiscoveryClient), the
//! [`MemCacheClient`](crate::MemCacheClient) and the
//! [`DiskCachedDiscoveryClient`](crate::DiskCachedDiscoveryClient), and the results it
//! returns.
//!
//! An implementation provides three things: the server version, the groups (with, when
//! aggregated discovery or a cache has them, every group-version's resources), and the
//! resources of one group-version. Everything else — all groups and resources with
//! group-versions fetched in parallel, the preferred resources — is built on those by the
//! provided methods, exactly as client-go's package-level `ServerGroupsAndResources` and
//! `ServerPreferredResources` are.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;

use futures::future::join_all;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    APIGroup, APIGroupList, APIResource, APIResourceList,
};
use k8s_openapi::apimachinery::pkg::version::Info;
use kclient_core::{GroupResource, GroupVersion};

use crate::error::{Error, GroupDiscoveryFailed};

/// How many times [`Discovery::server_groups_and_resources`] and
/// [`Discovery::server_preferred_resources`] try when some group-versions fail (a group can
/// disappear while it is being discovered, as a CRD being deleted does): client-go's
/// `defaultRetries`.
pub const DEFAULT_RETRIES: usize = 2;

/// The groups of the server, and the resources of each group-version when they came with
/// them (aggregated discovery, or a cache that holds them).
#[derive(Debug, Clone, Default)]
pub struct GroupsAndMaybeResources {
    /// The groups, the core group (named `""`) first, each with its versions, preferred first.
    pub groups: APIGroupList,
    /// The resources of every group-version, if known; `None` means "ask per group-version".
    pub resources: Option<BTreeMap<GroupVersion, APIResourceList>>,
    /// Group-versions known to have failed (stale in aggregated discovery, or failed when a
    /// cache fetched them).
    pub failed: BTreeMap<GroupVersion, Arc<Error>>,
}

/// Groups and their resources, possibly incomplete.
///
/// Discovery that reaches most group-versions but not all is still returned, with the failed
/// group-versions in [`failed`](Self::failed) (client-go returns the same data together with
/// an `ErrGroupDiscoveryFailed`). Use [`complete`](Self::complete) to turn any failure into an
/// error.
#[derive(Debug, Clone, Default)]
pub struct ServerResources {
    /// The groups, the core group first.
    pub groups: Vec<APIGroup>,
    /// The resources of every group-version that was discovered, in group then version order.
    pub resources: Vec<APIResourceList>,
    /// The group-versions that could not be discovered, with why.
    pub failed: BTreeMap<GroupVersion, Arc<Error>>,
}

impl ServerResources {
    /// Whether every group-version was discovered.
    pub fn is_complete(&self) -> bool {
        self.failed.is_empty()
    }

    /// The partial failure, if any (client-go's `ErrGroupDiscoveryFailed`).
    pub fn failure(&self) -> Option<GroupDiscoveryFailed> {
        (!self.failed.is_empty()).then(|| GroupDiscoveryFailed {
            groups: self.failed.clone(),
        })
    }

    /// `self` if every group-version was discovered, else the partial failure.
    pub fn complete(self) -> Result<Self, GroupDiscoveryFailed> {
        match self.failure() {
            None => Ok(self),
            Some(failure) => Err(failure),
        }
    }

    /// The resources of `group_version`, if it was discovered.
    pub fn resources_for(&self, group_version: &GroupVersion) -> Option<&APIResourceList> {
        let api_version = group_version.api_version();
        self.resources
            .iter()
            .find(|l| l.group_version == api_version)
    }

    /// Every resource (subresources excluded) with its group-version, in discovery order.
    pub fn iter_resources(&self) -> impl Iterator<Item = (GroupVersion, &APIResource)> {
        self.resources.iter().flat_map(|list| {
            let gv = GroupVersion::parse(&list.group_version).unwrap_or_default();
            list.resources
                .iter()
                .filter(|r| !r.name.contains('/'))
                .map(move |r| (gv.clone(), r))
        })
    }
}

/// Every group-version of `groups`, in discovery order.
pub(crate) fn group_versions(groups: &APIGroupList) -> Vec<GroupVersion> {
    groups
        .groups
        .iter()
        .flat_map(|g| {
            g.versions
                .iter()
                .map(move |v| GroupVersion::new(g.name.clone(), v.version.clone()))
        })
        .collect()
}

/// Discovers what an API server serves (client-go's `DiscoveryInterface`, with the
/// `fresh`/`invalidate` of `CachedDiscoveryInterface`).
///
/// Implementors provide [`server_version`](Self::server_version),
/// [`groups_and_maybe_resources`](Self::groups_and_maybe_resources) and
/// [`server_resources_for_group_version`](Self::server_resources_for_group_version); caches
/// also override [`fresh`](Self::fresh) and [`invalidate`](Self::invalidate).
pub trait Discovery: Send + Sync {
    /// The server's version (`/version`).
    fn server_version(&self) -> impl Future<Output = Result<Info, Error>> + Send;

    /// The groups, and the resources of every group-version when they came with them
    /// (client-go's `GroupsAndMaybeResources`).
    fn groups_and_maybe_resources(
        &self,
    ) -> impl Future<Output = Result<GroupsAndMaybeResources, Error>> + Send;

    /// The resources of one group-version (`/api/v1`, `/apis/apps/v1`), subresources included
    /// (named `plural/subresource`).
    fn server_resources_for_group_version(
        &self,
        group_version: &GroupVersion,
    ) -> impl Future<Output = Result<APIResourceList, Error>> + Send;

    /// Whether what this client returns was fetched from the server by this process, so that
    /// looking again cannot find more (client-go's `Fresh`). Live clients are always fresh.
    fn fresh(&self) -> bool {
        true
    }

    /// Forgets cached discovery, so that the next call asks the server (client-go's
    /// `Invalidate`). Does nothing on a live client.
    fn invalidate(&self) {}

    /// The groups, the core group first (client-go's `ServerGroups`).
    fn server_groups(&self) -> impl Future<Output = Result<APIGroupList, Error>> + Send {
        async move { Ok(self.groups_and_maybe_resources().await?.groups) }
    }

    /// Every group and the resources of every group-version (client-go's
    /// `ServerGroupsAndResources`).
    ///
    /// Group-versions missing from [`groups_and_maybe_resources`](Self::groups_and_maybe_resources)
    /// are fetched in parallel. The result is returned even when some group-versions failed,
    /// with those in [`ServerResources::failed`]; the whole discovery is retried
    /// ([`DEFAULT_RETRIES`]) while some fail. `Err` means the groups themselves could not be
    /// listed.
    fn server_groups_and_resources(
        &self,
    ) -> impl Future<Output = Result<ServerResources, Error>> + Send {
        async move {
            let mut attempt = 1;
            loop {
                let result = groups_and_resources_once(self).await?;
                if result.is_complete() || attempt >= DEFAULT_RETRIES {
                    return Ok(result);
                }
                tracing::debug!(
                    failed = result.failed.len(),
                    attempt,
                    "discovery incomplete; retrying"
                );
                attempt += 1;
            }
        }
    }

    /// For every group-resource, its resource in the group's preferred version (or, if the
    /// preferred version does not serve it, in the first version that does), grouped into one
    /// list per group-version (client-go's `ServerPreferredResources`). Subresources are left
    /// out. Lists of versions whose resources are all served elsewhere stay in the result,
    /// empty, as in client-go.
    fn server_preferred_resources(
        &self,
    ) -> impl Future<Output = Result<ServerResources, Error>> + Send {
        async move {
            let all = self.server_groups_and_resources().await?;
            Ok(preferred(all))
        }
    }

    /// [`server_preferred_resources`](Self::server_preferred_resources), namespaced resources
    /// only (client-go's `ServerPreferredNamespacedResources`).
    fn server_preferred_namespaced_resources(
        &self,
    ) -> impl Future<Output = Result<ServerResources, Error>> + Send {
        async move {
            let mut preferred = self.server_preferred_resources().await?;
            for list in &mut preferred.resources {
                list.resources.retain(|r| r.namespaced);
            }
            Ok(preferred)
        }
    }
}

/// One round of `server_groups_and_resources`.
async fn groups_and_resources_once<D: Discovery + ?Sized>(d: &D) -> Result<ServerResources, Error> {
    let GroupsAndMaybeResources {
        groups,
        resources,
        mut failed,
    } = d.groups_and_maybe_resources().await?;
    let gvs = group_versions(&groups);
    let mut by_gv = match resources {
        Some(resources) => resources,
        None => {
            let fetched = join_all(gvs.iter().map(|gv| async move {
                (gv.clone(), d.server_resources_for_group_version(gv).await)
            }))
            .await;
            let mut by_gv = BTreeMap::new();
            for (gv, result) in fetched {
                match result {
                    Ok(list) => {
                        by_gv.insert(gv, list);
                    }
                    Err(e) => {
                        failed.insert(gv, Arc::new(e));
                    }
                }
            }
            by_gv
        }
    };
    let resources = gvs.iter().filter_map(|gv| by_gv.remove(gv)).collect();
    Ok(ServerResources {
        groups: groups.groups,
        resources,
        failed,
    })
}

/// client-go's `ServerPreferredResources` selection over a complete discovery.
pub(crate) fn preferred(all: ServerResources) -> ServerResources {
    // For each group-resource: the version chosen, and the resource.
    let mut chosen: HashMap<GroupResource, (String, APIResource)> = HashMap::new();
    // The order in which group-resources were first seen, to keep the output deterministic.
    let mut order: Vec<GroupResource> = Vec::new();
    let mut lists: Vec<(GroupVersion, APIResourceList)> = Vec::new();
    for group in &all.groups {
        let preferred_version = group
            .preferred_version
            .as_ref()
            .map(|p| p.version.as_str())
            .unwrap_or_default();
        for version in &group.versions {
            let gv = GroupVersion::new(group.name.clone(), version.version.clone());
            let Some(list) = all.resources_for(&gv) else {
                continue;
            };
            lists.push((
                gv.clone(),
                APIResourceList {
                    group_version: version.group_version.clone(),
                    resources: Vec::new(),
                },
            ));
            for r in list.resources.iter().filter(|r| !r.name.contains('/')) {
                let gr = GroupResource::new(group.name.clone(), r.name.clone());
                match chosen.get(&gr) {
                    Some(_) if version.version != preferred_version => continue,
                    Some(_) => {}
                    None => order.push(gr.clone()),
                }
                chosen.insert(gr, (version.version.clone(), r.clone()));
            }
        }
    }
    for gr in order {
        let Some((version, resource)) = chosen.remove(&gr) else {
            continue;
        };
        let gv = GroupVersion::new(gr.group, version);
        if let Some((_, list)) = lists.iter_mut().find(|(g, _)| *g == gv) {
            list.resources.push(resource);
        }
    }
    ServerResources {
        groups: all.groups,
        resources: lists.into_iter().map(|(_, l)| l).collect(),
        failed: all.failed,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::GroupVersionForDiscovery;

    use super::*;

    fn group(name: &str, versions: &[&str], preferred: &str) -> APIGroup {
        let gvd = |v: &str| GroupVersionForDiscovery {
            group_version: GroupVersion::new(name, v).api_version(),
            version: v.to_string(),
        };
        APIGroup {
            name: name.to_string(),
            versions: versions.iter().map(|v| gvd(v)).collect(),
            preferred_version: Some(gvd(preferred)),
            ..APIGroup::default()
        }
    }

    fn list(gv: &str, names: &[&str]) -> APIResourceList {
        APIResourceList {
            group_version: gv.to_string(),
            resources: names
                .iter()
                .map(|n| APIResource {
                    name: n.to_string(),
                    kind: format!("K{n}"),
                    namespaced: !n.starts_with("cluster"),
                    ..APIResource::default()
                })
                .collect(),
        }
    }

    #[test]
    fn preferred_resources_pick_the_preferred_version() {
        let all = ServerResources {
            groups: vec![
                group("", &["v1"], "v1"),
                group("g", &["v1beta1", "v1"], "v1"),
            ],
            resources: vec![
                list("v1", &["pods", "pods/status", "clusterthings"]),
                list("g/v1beta1", &["a", "b"]),
                list("g/v1", &["a"]),
            ],
            failed: BTreeMap::new(),
        };
        let p = preferred(all);
        let shape: Vec<(String, Vec<String>)> = p
            .resources
            .iter()
            .map(|l| {
                (
                    l.group_version.clone(),
                    l.resources.iter().map(|r| r.name.clone()).collect(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                (
                    "v1".to_string(),
                    vec!["pods".to_string(), "clusterthings".to_string()]
                ),
                ("g/v1beta1".to_string(), vec!["b".to_string()]),
                ("g/v1".to_string(), vec!["a".to_string()]),
            ]
        );
    }

    #[test]
    fn retries_match_client_go() {
        assert_eq!(DEFAULT_RETRIES, 2);
    }

    #[test]
    fn complete_and_failure() {
        let mut r = ServerResources::default();
        assert!(r.is_complete() && r.failure().is_none());
        let gv = GroupVersion::new("x", "v1");
        r.failed
            .insert(gv.clone(), Arc::new(Error::StaleGroupVersion(gv.clone())));
        assert!(!r.is_complete());
        let failure = r.clone().complete().unwrap_err();
        assert!(failure.failed(&gv));
    }

    #[test]
    fn iter_resources_skips_subresources() {
        let r = ServerResources {
            groups: vec![],
            resources: vec![
                list("v1", &["pods", "pods/log"]),
                list("apps/v1", &["deployments"]),
            ],
            failed: BTreeMap::new(),
        };
        let seen: Vec<String> = r
            .iter_resources()
            .map(|(gv, res)| format!("{gv} {}", res.name))
            .collect();
        assert_eq!(seen, ["v1 pods", "apps/v1 deployments"]);
        assert_eq!(
            r.resources_for(&GroupVersion::new("apps", "v1"))
                .unwrap()
                .resources
                .len(),
            1
        );
    }
}
