//! RestMapper and DeferredRestMapper against kclient-fake: built-in names, a CRD registered
//! after start and found through one refresh, unknown names, refresh throttling.

use crate::support;

use std::time::Duration;

use kclient_core::{GroupKind, GroupResource, GroupVersionKind, GroupVersionResource};
use kclient_discovery::{
    DeferredRestMapper, Discovery, DiscoveryClient, MapperError, MemCacheClient, RestMapper,
};
use support::*;

#[tokio::test]
async fn a_mapper_over_live_discovery_resolves_built_in_names() {
    let server = fake().await;
    let mapper = RestMapper::from_discovery(&DiscoveryClient::new(rest(&server.url())))
        .await
        .unwrap();
    let cases = [
        ("po", "", "v1", "pods"),
        ("pods", "", "v1", "pods"),
        ("Pod", "", "v1", "pods"),
        ("deploy", "apps", "v1", "deployments"),
        ("Deployment", "apps", "v1", "deployments"),
        ("deployments.apps", "apps", "v1", "deployments"),
        ("deployments.v1.apps", "apps", "v1", "deployments"),
        ("cm", "", "v1", "configmaps"),
        ("ns", "", "v1", "namespaces"),
        ("events", "", "v1", "events"),
        ("cronjobs", "batch", "v1", "cronjobs"),
    ];
    for (name, group, version, resource) in cases {
        let m = mapper.find(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            m.resource,
            GroupVersionResource::new(group, version, resource),
            "{name}"
        );
    }
    assert!(!mapper.find("ns").unwrap().namespaced());
    assert_eq!(
        mapper
            .rest_mapping(&GroupKind::new("apps", "Deployment"), &[])
            .unwrap()
            .resource
            .resource,
        "deployments"
    );
    let all = mapper.expand_category("all").unwrap();
    assert!(all.contains(&GroupResource::new("", "pods")));
    assert!(all.contains(&GroupResource::new("apps", "deployments")));
    assert!(!all.contains(&GroupResource::new("", "configmaps")));
}

#[tokio::test]
async fn a_crd_created_after_start_is_found_after_one_refresh() {
    let server = fake().await;
    let proxy = Proxy::start(&server.url()).await;
    let mapper = DeferredRestMapper::new(MemCacheClient::new(DiscoveryClient::new(rest(
        &proxy.url(),
    ))));
    // First use builds the mapper.
    assert_eq!(mapper.find("po").await.unwrap().resource.resource, "pods");
    assert_eq!(proxy.paths(), ["/api", "/apis"]);
    assert!(mapper.discovery().fresh());

    create_crontab_crd(&server.url()).await;
    proxy.clear();
    let ct = mapper.find("crontabs.stable.example.com").await.unwrap();
    assert_eq!(
        ct.resource,
        GroupVersionResource::new("stable.example.com", "v1", "crontabs")
    );
    assert_eq!(
        ct.gvk,
        GroupVersionKind::new("stable.example.com", "v1", "CronTab")
    );
    assert!(ct.namespaced());
    assert_eq!(ct.subresources, ["status"]);
    assert_eq!(
        proxy.paths(),
        ["/api", "/apis"],
        "one refresh of aggregated discovery"
    );

    // Now known: short name, kind, category, other version — no more requests.
    proxy.clear();
    assert_eq!(
        mapper.find("ct").await.unwrap().resource.resource,
        "crontabs"
    );
    assert_eq!(mapper.find("CronTab").await.unwrap().gvk.kind, "CronTab");
    assert_eq!(
        mapper
            .find("crontabs.v1beta1.stable.example.com")
            .await
            .unwrap()
            .resource
            .version,
        "v1beta1"
    );
    assert!(mapper
        .expand_category("all")
        .await
        .unwrap()
        .unwrap()
        .contains(&GroupResource::new("stable.example.com", "crontabs")));
    assert!(proxy.seen().is_empty(), "{:?}", proxy.paths());
}

#[tokio::test]
async fn an_unknown_name_refreshes_once_then_fails_with_a_typed_error() {
    let server = fake().await;
    let proxy = Proxy::start(&server.url()).await;
    let mapper = DeferredRestMapper::new(MemCacheClient::new(DiscoveryClient::new(rest(
        &proxy.url(),
    ))));
    // Built during this very lookup from fresh discovery: no second fetch.
    let err = mapper.find("nosuchthing").await.unwrap_err();
    assert!(matches!(&err, MapperError::UnknownResourceType { name } if name == "nosuchthing"));
    assert_eq!(proxy.paths(), ["/api", "/apis"]);

    // A later miss refreshes once.
    proxy.clear();
    let err = mapper
        .kind_for(&GroupVersionResource::new("", "", "nosuchthings"))
        .await
        .unwrap_err();
    assert!(matches!(err, MapperError::NoResourceMatch { .. }));
    assert_eq!(proxy.paths(), ["/api", "/apis"]);

    let err = mapper
        .rest_mapping(&GroupKind::new("apps", "Nope"), &["v1"])
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "no matches for kind \"Nope\" in version \"apps/v1\""
    );
    assert_eq!(mapper.expand_category("nope").await.unwrap(), None);
}

#[tokio::test]
async fn min_refresh_interval_bounds_refreshes_on_misses() {
    let server = fake().await;
    let proxy = Proxy::start(&server.url()).await;
    let mapper = DeferredRestMapper::new(MemCacheClient::new(DiscoveryClient::new(rest(
        &proxy.url(),
    ))))
    .min_refresh_interval(Duration::from_secs(3600));
    mapper.find("po").await.unwrap();
    proxy.clear();
    assert!(mapper.find("nosuchthing").await.unwrap_err().is_no_match());
    assert_eq!(proxy.seen().len(), 2, "the first miss refreshes");
    proxy.clear();
    create_crontab_crd(&server.url()).await;
    assert!(mapper.find("crontabs").await.unwrap_err().is_no_match());
    assert!(proxy.seen().is_empty(), "within the interval: no refresh");
    mapper.reset();
    assert_eq!(
        mapper.find("crontabs").await.unwrap().resource.resource,
        "crontabs",
        "reset always rebuilds"
    );
}

#[tokio::test]
async fn the_deferred_mapper_can_be_shared_across_tasks() {
    let server = fake().await;
    let mapper = std::sync::Arc::new(DeferredRestMapper::new(MemCacheClient::new(
        DiscoveryClient::new(rest(&server.url())),
    )));
    let task = {
        let mapper = mapper.clone();
        tokio::spawn(async move { mapper.find("deploy").await })
    };
    assert_eq!(task.await.unwrap().unwrap().resource.group, "apps");
    assert_eq!(
        mapper
            .mapper()
            .await
            .unwrap()
            .find("po")
            .unwrap()
            .resource
            .resource,
        "pods"
    );
}

#[tokio::test]
async fn concurrent_misses_share_one_refresh() {
    let server = fake().await;
    let proxy = Proxy::start(&server.url()).await;
    let mapper = DeferredRestMapper::new(MemCacheClient::new(DiscoveryClient::new(rest(
        &proxy.url(),
    ))));
    mapper.find("po").await.unwrap();
    create_crontab_crd(&server.url()).await;
    proxy.clear();
    let lookups = (0..8).map(|_| mapper.find("ct"));
    for result in futures::future::join_all(lookups).await {
        assert_eq!(result.unwrap().resource.resource, "crontabs");
    }
    assert_eq!(proxy.paths(), ["/api", "/apis"], "one refresh for all");
}

#[tokio::test]
async fn discovery_failures_are_mapper_errors() {
    let server = fake().await;
    let proxy = Proxy::start(&server.url()).await;
    proxy.fail("/apis", 500, None);
    let mapper = DeferredRestMapper::new(DiscoveryClient::new(rest(&proxy.url())));
    let err = mapper.find("pods").await.unwrap_err();
    assert!(matches!(err, MapperError::Discovery(_)), "{err}");
    assert!(std::error::Error::source(&err).is_some());
    proxy.heal("/apis");
    assert_eq!(mapper.find("pods").await.unwrap().resource.resource, "pods");
}
