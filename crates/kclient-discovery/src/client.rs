//! [`DiscoveryClient`]: live discovery against an API server (client-go's
//! `discovery.DiscoveryClient`).

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    APIGroup, APIGroupList, APIResourceList, APIVersions, GroupVersionForDiscovery,
};
use k8s_openapi::apimachinery::pkg::version::Info;
use kclient_core::{ApiStatus, GroupVersion};
use kclient_rest::{Config, RestClient};
use serde::de::DeserializeOwned;

use crate::aggregated::{
    is_aggregated_v2, split_groups_and_resources, ApiGroupDiscoveryList, ACCEPT_DISCOVERY,
    ACCEPT_LEGACY,
};
use crate::discovery::{Discovery, GroupsAndMaybeResources};
use crate::error::Error;

/// The client-side burst of a discovery client made by [`DiscoveryClient::for_config`] when
/// the configuration leaves the default (client-go's `defaultBurst`, kubernetes#86149):
/// discovery is bursty, one request per group-version.
pub const DEFAULT_DISCOVERY_BURST: u32 = 300;

/// The request timeout of a discovery client made by [`DiscoveryClient::for_config`] when the
/// configuration sets none (client-go's `defaultTimeout`).
pub const DEFAULT_DISCOVERY_TIMEOUT: Duration = Duration::from_secs(32);

/// Discovers the groups, versions and resources an API server serves.
///
/// Asks for aggregated discovery (`apidiscovery.k8s.io/v2`) on `/api` and `/apis`, so the whole
/// API is described in two round trips, and falls back to the legacy documents (`APIVersions`,
/// `APIGroupList`, then one `APIResourceList` per group-version) when the server answers in the
/// legacy shape. Cheap to clone.
///
/// ```no_run
/// use kclient_discovery::{Discovery, DiscoveryClient};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let discovery = DiscoveryClient::for_config(&kclient_rest::Config::infer()?)?;
/// let version = discovery.server_version().await?;
/// println!("Kubernetes {}.{}", version.major, version.minor);
/// let all = discovery.server_groups_and_resources().await?;
/// for gv in all.failed.keys() {
///     eprintln!("warning: could not discover {gv}");
/// }
/// for list in &all.resources {
///     println!("{}: {} resources", list.group_version, list.resources.len());
/// }
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct DiscoveryClient {
    rest: RestClient,
    legacy_only: bool,
}

impl DiscoveryClient {
    /// A discovery client over `rest`, sharing its connection pool and rate limiter (client-go's
    /// `NewDiscoveryClient`).
    pub fn new(rest: RestClient) -> Self {
        Self {
            rest,
            legacy_only: false,
        }
    }

    /// A discovery client with its own [`RestClient`] for `config`, with client-go's discovery
    /// defaults: a burst of [`DEFAULT_DISCOVERY_BURST`] unless the configuration sets a burst
    /// other than the default, and a timeout of [`DEFAULT_DISCOVERY_TIMEOUT`] unless it sets
    /// one (client-go's `NewDiscoveryClientForConfig`).
    ///
    /// An explicit burst equal to the default ([`kclient_rest::DEFAULT_BURST`]) cannot be told
    /// from the default, so it is raised too. A shared [`Config::rate_limiter`] is kept as is.
    pub fn for_config(config: &Config) -> Result<Self, Error> {
        Ok(Self::new(RestClient::new(discovery_config(config))?))
    }

    /// Uses only the legacy discovery documents, never asking for aggregated discovery
    /// (client-go's `UseLegacyDiscovery`).
    pub fn legacy_only(mut self, legacy_only: bool) -> Self {
        self.legacy_only = legacy_only;
        self
    }

    /// The REST client discovery requests go through.
    pub fn rest_client(&self) -> &RestClient {
        &self.rest
    }

    fn accept(&self) -> &'static str {
        if self.legacy_only {
            ACCEPT_LEGACY
        } else {
            ACCEPT_DISCOVERY
        }
    }

    /// GETs a discovery document, returning `None` for a 404 (aggregated API servers may
    /// answer `/api` with one), with whether it came in the aggregated shape.
    async fn get_discovery(&self, path: &str) -> Result<Option<(bool, Bytes)>, Error> {
        let result = self
            .rest
            .get()
            .abs_path(path)
            .header("Accept", self.accept())
            .send()
            .await;
        match result {
            Ok(response) => {
                let aggregated = response.content_type().is_some_and(is_aggregated_v2);
                Ok(Some((aggregated, response.into_body())))
            }
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// `/api`: the core group (and, if aggregated, its resources).
    async fn download_legacy(&self) -> Result<GroupsAndMaybeResources, Error> {
        let Some((aggregated, body)) = self.get_discovery("/api").await? else {
            return Ok(GroupsAndMaybeResources::default());
        };
        if aggregated {
            let list: ApiGroupDiscoveryList = decode(&body, "APIGroupDiscoveryList", "/api")?;
            return Ok(from_split(&list));
        }
        let versions: APIVersions = decode(&body, "APIVersions", "/api")?;
        let mut groups = APIGroupList::default();
        if !versions.versions.is_empty() {
            groups.groups.push(api_versions_to_group(&versions));
        }
        Ok(GroupsAndMaybeResources {
            groups,
            resources: None,
            failed: BTreeMap::new(),
        })
    }

    /// `/apis`: the named groups (and, if aggregated, their resources).
    async fn download_apis(&self) -> Result<GroupsAndMaybeResources, Error> {
        let Some((aggregated, body)) = self.get_discovery("/apis").await? else {
            return Ok(GroupsAndMaybeResources::default());
        };
        if aggregated {
            let list: ApiGroupDiscoveryList = decode(&body, "APIGroupDiscoveryList", "/apis")?;
            return Ok(from_split(&list));
        }
        let groups: APIGroupList = decode(&body, "APIGroupList", "/apis")?;
        Ok(GroupsAndMaybeResources {
            groups,
            resources: None,
            failed: BTreeMap::new(),
        })
    }
}

/// The configuration of a discovery client: `config` with client-go's discovery defaults.
pub(crate) fn discovery_config(config: &Config) -> Config {
    let mut config = config.clone();
    if config.burst == 0 || config.burst == kclient_rest::DEFAULT_BURST {
        config.burst = DEFAULT_DISCOVERY_BURST;
    }
    if config.timeout.is_none_or(|t| t.is_zero()) {
        config.timeout = Some(DEFAULT_DISCOVERY_TIMEOUT);
    }
    config
}

fn decode<T: DeserializeOwned>(body: &[u8], what: &'static str, path: &str) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|source| Error::Decode {
        what,
        source_name: path.to_owned(),
        source,
    })
}

fn from_split(list: &ApiGroupDiscoveryList) -> GroupsAndMaybeResources {
    let split = split_groups_and_resources(list);
    GroupsAndMaybeResources {
        groups: split.groups,
        resources: Some(split.resources),
        failed: split.failed,
    }
}

/// The core group as an `APIGroup` (client-go's `apiVersionsToAPIGroup`).
fn api_versions_to_group(versions: &APIVersions) -> APIGroup {
    let versions: Vec<GroupVersionForDiscovery> = versions
        .versions
        .iter()
        .map(|v| GroupVersionForDiscovery {
            group_version: v.clone(),
            version: v.clone(),
        })
        .collect();
    APIGroup {
        name: String::new(),
        preferred_version: versions.first().cloned(),
        versions,
        ..APIGroup::default()
    }
}

impl Discovery for DiscoveryClient {
    async fn server_version(&self) -> Result<Info, Error> {
        let body = self.rest.get().abs_path("/version").bytes().await?;
        decode(&body, "version.Info", "/version")
    }

    /// `/api` then `/apis`; resources are returned only if both came aggregated, as in
    /// client-go.
    async fn groups_and_maybe_resources(&self) -> Result<GroupsAndMaybeResources, Error> {
        let (legacy, apis) = futures::try_join!(self.download_legacy(), self.download_apis())?;
        let mut out = legacy;
        out.groups.groups.extend(apis.groups.groups);
        out.resources = match (out.resources, apis.resources) {
            (Some(mut core), Some(named)) => {
                core.extend(named);
                Some(core)
            }
            _ => None,
        };
        out.failed.extend(apis.failed);
        Ok(out)
    }

    /// `/api/v1` for the core group, `/apis/{group}/{version}` otherwise. As client-go, a 404
    /// for the core `v1` is an empty list.
    async fn server_resources_for_group_version(
        &self,
        group_version: &GroupVersion,
    ) -> Result<APIResourceList, Error> {
        let path = group_version.url_prefix();
        let result = self
            .rest
            .get()
            .abs_path(&path)
            .header("Accept", ACCEPT_LEGACY)
            .bytes()
            .await;
        let body = match result {
            Ok(body) => body,
            Err(e) if group_version.group.is_empty() && e.is_not_found() => {
                return Ok(APIResourceList {
                    group_version: group_version.api_version(),
                    resources: Vec::new(),
                })
            }
            Err(e) => return Err(e.into()),
        };
        let mut list: APIResourceList = decode(&body, "APIResourceList", &path)?;
        if list.group_version.is_empty() {
            list.group_version = group_version.api_version();
        }
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_defaults_match_client_go() {
        assert_eq!(DEFAULT_DISCOVERY_BURST, 300);
        assert_eq!(DEFAULT_DISCOVERY_TIMEOUT, Duration::from_secs(32));
        let c = discovery_config(&Config::new("https://h"));
        assert_eq!(c.burst, 300);
        assert_eq!(c.timeout, Some(Duration::from_secs(32)));
        let mut custom = Config::new("https://h");
        custom.burst = 42;
        custom.timeout = Some(Duration::from_secs(5));
        let c = discovery_config(&custom);
        assert_eq!((c.burst, c.timeout), (42, Some(Duration::from_secs(5))));
    }

    #[test]
    fn core_group_from_api_versions() {
        let g = api_versions_to_group(&APIVersions {
            versions: vec!["v1".into()],
            ..APIVersions::default()
        });
        assert_eq!(g.name, "");
        assert_eq!(g.versions[0].group_version, "v1");
        assert_eq!(g.preferred_version.unwrap().version, "v1");
    }
}
