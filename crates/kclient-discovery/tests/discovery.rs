//! DiscoveryClient against kclient-fake over HTTP: aggregated discovery, the legacy fallback,
//! partial failures (a failing group-version, a stale aggregated group) and preferred
//! resources.

use crate::support;

use std::collections::BTreeMap;

use kclient_core::{ApiStatus, GroupVersion};
use kclient_discovery::aggregated::ACCEPT_DISCOVERY;
use kclient_discovery::{
    Discovery, DiscoveryClient, Error, RestMapper, ServerResources, DEFAULT_RETRIES,
};
use support::*;

/// group-version -> sorted resource names (subresources included), to compare discoveries.
fn shape(r: &ServerResources) -> BTreeMap<String, Vec<String>> {
    r.resources
        .iter()
        .map(|l| {
            let mut names: Vec<String> = l.resources.iter().map(|r| r.name.clone()).collect();
            names.sort();
            (l.group_version.clone(), names)
        })
        .collect()
}

#[tokio::test]
async fn server_version() {
    let server = fake().await;
    let d = DiscoveryClient::new(rest(&server.url()));
    let v = d.server_version().await.unwrap();
    assert_eq!((v.major.as_str(), v.minor.as_str()), ("1", "37"));
    assert!(v.git_version.starts_with("v1.37."), "{}", v.git_version);
}

#[tokio::test]
async fn aggregated_discovery_takes_one_request_each_for_api_and_apis() {
    let server = fake().await;
    let proxy = Proxy::start(&server.url()).await;
    let d = DiscoveryClient::new(rest(&proxy.url()));
    let all = d.server_groups_and_resources().await.unwrap();
    assert!(all.is_complete(), "{:?}", all.failed);
    assert_eq!(proxy.paths(), ["/api", "/apis"]);
    assert!(proxy.seen().iter().all(|s| s.accept == ACCEPT_DISCOVERY));

    assert_eq!(all.groups[0].name, "", "the core group comes first");
    let names: Vec<&str> = all.groups.iter().map(|g| g.name.as_str()).collect();
    for g in ["apps", "batch", "apiextensions.k8s.io"] {
        assert!(names.contains(&g), "{g} in {names:?}");
    }
    let core = all.resources_for(&GroupVersion::new("", "v1")).unwrap();
    let pods = core.resources.iter().find(|r| r.name == "pods").unwrap();
    assert_eq!(pods.kind, "Pod");
    assert_eq!(pods.singular_name, "pod");
    assert!(pods.namespaced);
    assert_eq!(pods.short_names.as_deref(), Some(&["po".to_string()][..]));
    let apps = all.resources_for(&GroupVersion::new("apps", "v1")).unwrap();
    let scale = apps
        .resources
        .iter()
        .find(|r| r.name == "deployments/scale")
        .unwrap();
    assert_eq!(
        (scale.group.as_deref(), scale.kind.as_str()),
        (Some("autoscaling"), "Scale")
    );
}

#[tokio::test]
async fn legacy_servers_are_discovered_per_group_version_with_the_same_result() {
    let server = fake().await;
    let aggregated = DiscoveryClient::new(rest(&server.url()))
        .server_groups_and_resources()
        .await
        .unwrap();

    let proxy = Proxy::start(&server.url()).await;
    proxy.legacy_only(true);
    let d = DiscoveryClient::new(rest(&proxy.url()));
    let legacy = d.server_groups_and_resources().await.unwrap();
    assert!(legacy.is_complete(), "{:?}", legacy.failed);

    let group_versions: usize = legacy.groups.iter().map(|g| g.versions.len()).sum();
    assert_eq!(
        proxy.seen().len(),
        2 + group_versions,
        "/api, /apis, then one request per group-version: {:?}",
        proxy.paths()
    );
    assert!(proxy.count("/api/v1") == 1 && proxy.count("/apis/apps/v1") == 1);
    assert_eq!(shape(&legacy), shape(&aggregated));
    let names =
        |r: &ServerResources| -> Vec<String> { r.groups.iter().map(|g| g.name.clone()).collect() };
    assert_eq!(names(&legacy), names(&aggregated));
}

#[tokio::test]
async fn a_legacy_only_client_never_asks_for_aggregated_discovery() {
    let server = fake().await;
    let proxy = Proxy::start(&server.url()).await;
    let d = DiscoveryClient::new(rest(&proxy.url())).legacy_only(true);
    let groups = d.server_groups().await.unwrap();
    assert!(groups.groups.iter().any(|g| g.name == "apps"));
    assert!(proxy.seen().iter().all(|s| s.accept == "application/json"));
}

#[tokio::test]
async fn a_failing_group_version_returns_the_rest_and_says_which_failed() {
    let server = fake().await;
    let proxy = Proxy::start(&server.url()).await;
    proxy.legacy_only(true);
    proxy.fail("/apis/batch/v1", 503, None);
    let d = DiscoveryClient::new(rest(&proxy.url()));

    let all = d.server_groups_and_resources().await.unwrap();
    let batch = GroupVersion::new("batch", "v1");
    assert_eq!(all.failed.keys().collect::<Vec<_>>(), [&batch]);
    assert!(all.failed[&batch].is_service_unavailable());
    assert!(all.resources_for(&batch).is_none());
    assert!(all
        .resources_for(&GroupVersion::new("apps", "v1"))
        .is_some());
    assert!(
        all.groups.iter().any(|g| g.name == "batch"),
        "the group itself is listed"
    );
    assert_eq!(
        proxy.count("/apis/batch/v1"),
        DEFAULT_RETRIES,
        "an incomplete discovery is retried"
    );

    let failure = all.clone().complete().unwrap_err();
    assert!(
        failure
            .to_string()
            .starts_with("unable to retrieve the complete list of server APIs: batch/v1: "),
        "{failure}"
    );
    let err: Error = failure.into();
    assert!(matches!(err, Error::GroupDiscoveryFailed(_)));

    // Preferred resources and the mapper work with what was found.
    let preferred = d.server_preferred_resources().await.unwrap();
    assert!(preferred.failed.contains_key(&batch));
    assert!(preferred
        .resources
        .iter()
        .flat_map(|l| &l.resources)
        .any(|r| r.name == "deployments"));
    let mapper = RestMapper::new(&all);
    assert_eq!(mapper.failed_group_versions(), [batch]);
    assert!(mapper.find("cronjobs").unwrap_err().is_no_match());
    assert_eq!(
        mapper.find("deploy").unwrap().resource.resource,
        "deployments"
    );

    // Once the group-version answers again, discovery is complete.
    proxy.heal("/apis/batch/v1");
    assert!(d.server_groups_and_resources().await.unwrap().is_complete());
}

#[tokio::test]
async fn a_stale_aggregated_group_is_reported_as_failed() {
    let server = fake().await;
    let proxy = Proxy::start(&server.url()).await;
    proxy.mark_stale("batch");
    let d = DiscoveryClient::new(rest(&proxy.url()));
    let all = d.server_groups_and_resources().await.unwrap();
    let batch = GroupVersion::new("batch", "v1");
    assert!(matches!(
        *all.failed[&batch],
        Error::StaleGroupVersion(ref gv) if *gv == batch
    ));
    assert!(
        all.groups.iter().all(|g| g.name != "batch"),
        "a group with only stale versions is left out"
    );
    assert!(all.resources_for(&batch).is_none());
    assert!(all
        .resources_for(&GroupVersion::new("apps", "v1"))
        .is_some());
}

#[tokio::test]
async fn when_api_fails_the_whole_discovery_fails() {
    let server = fake().await;
    let proxy = Proxy::start(&server.url()).await;
    proxy.fail("/apis", 403, None);
    let d = DiscoveryClient::new(rest(&proxy.url()));
    let err = d.server_groups_and_resources().await.unwrap_err();
    assert!(err.is_forbidden(), "{err}");
}

#[tokio::test]
async fn a_404_on_api_or_apis_is_an_empty_list() {
    let server = fake().await;
    let proxy = Proxy::start(&server.url()).await;
    proxy.fail("/api", 404, None);
    let d = DiscoveryClient::new(rest(&proxy.url()));
    let all = d.server_groups_and_resources().await.unwrap();
    assert!(
        all.groups.iter().all(|g| !g.name.is_empty()),
        "no core group"
    );
    assert!(all.groups.iter().any(|g| g.name == "apps"));
    assert!(
        all.resources_for(&GroupVersion::new("apps", "v1"))
            .is_some(),
        "the named groups are still discovered (per group-version, as /api was not aggregated)"
    );
}

#[tokio::test]
async fn resources_for_one_group_version() {
    let server = fake().await;
    let d = DiscoveryClient::new(rest(&server.url()));
    let core = d
        .server_resources_for_group_version(&GroupVersion::new("", "v1"))
        .await
        .unwrap();
    assert_eq!(core.group_version, "v1");
    assert!(core.resources.iter().any(|r| r.name == "configmaps"));
    let apps = d
        .server_resources_for_group_version(&GroupVersion::new("apps", "v1"))
        .await
        .unwrap();
    assert_eq!(apps.group_version, "apps/v1");
    let err = d
        .server_resources_for_group_version(&GroupVersion::new("nope.example.com", "v1"))
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err}");
}

#[tokio::test]
async fn preferred_resources_have_no_subresources_and_one_version_each() {
    let server = fake().await;
    create_crontab_crd(&server.url()).await;
    let d = DiscoveryClient::new(rest(&server.url()));
    let preferred = d.server_preferred_resources().await.unwrap();
    let all: Vec<(String, String)> = preferred
        .resources
        .iter()
        .flat_map(|l| {
            l.resources
                .iter()
                .map(move |r| (l.group_version.clone(), r.name.clone()))
        })
        .collect();
    assert!(all.iter().all(|(_, name)| !name.contains('/')));
    let crontabs: Vec<&(String, String)> = all.iter().filter(|(_, n)| n == "crontabs").collect();
    assert_eq!(
        crontabs,
        [&("stable.example.com/v1".to_string(), "crontabs".to_string())],
        "only in the preferred version"
    );
    let namespaced = d.server_preferred_namespaced_resources().await.unwrap();
    let names: Vec<&str> = namespaced
        .resources
        .iter()
        .flat_map(|l| l.resources.iter().map(|r| r.name.as_str()))
        .collect();
    assert!(names.contains(&"pods") && !names.contains(&"nodes") && !names.contains(&"namespaces"));
}

#[tokio::test]
async fn for_config_applies_discovery_defaults() {
    let server = fake().await;
    let d = DiscoveryClient::for_config(&kclient_rest::Config::new(server.url())).unwrap();
    let config = d.rest_client().config();
    assert_eq!(config.burst, 300);
    assert_eq!(config.timeout, Some(std::time::Duration::from_secs(32)));
    assert!(!d.server_groups().await.unwrap().groups.is_empty());
}
