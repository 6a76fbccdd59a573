//! The generated accessors against in-memory sources (no HTTP): each gives the factory's one
//! shared informer of its type, whatever the path it was asked through, and its lister reads
//! that informer's cache.

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::testing::FakeControllerSource;
use kclient_cache::{ResourceEventHandlerFuncs, SharedInformerFactory};
use kclient_core::{ListerWatcherFor, TweakListOptions};
use kclient_informers::{InformerFactoryExt, TypedInformer};
use tokio_util::sync::CancellationToken;

/// A test double serving ConfigMaps and Deployments from memory.
#[derive(Clone, Default)]
struct Sources {
    config_maps: FakeControllerSource<ConfigMap>,
    deployments: FakeControllerSource<Deployment>,
}

impl ListerWatcherFor<ConfigMap> for Sources {
    type ListerWatcher = FakeControllerSource<ConfigMap>;
    fn lister_watcher(&self, _: Option<&str>, _: Option<TweakListOptions>) -> Self::ListerWatcher {
        self.config_maps.clone()
    }
}

impl ListerWatcherFor<Deployment> for Sources {
    type ListerWatcher = FakeControllerSource<Deployment>;
    fn lister_watcher(&self, _: Option<&str>, _: Option<TweakListOptions>) -> Self::ListerWatcher {
        self.deployments.clone()
    }
}

fn config_map(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("prod".into());
    cm.metadata.name = Some(name.into());
    cm
}

#[test]
fn every_path_gives_the_one_shared_informer() {
    let factory = SharedInformerFactory::new(Sources::default(), Duration::ZERO);
    factory
        .core_v1()
        .config_maps()
        .informer()
        .add_event_handler(ResourceEventHandlerFuncs::new())
        .unwrap();
    assert_eq!(factory.informer::<ConfigMap>().handler_count(), 1);
    assert_eq!(
        TypedInformer::<_, ConfigMap>::new(&factory)
            .informer()
            .handler_count(),
        1
    );
    assert_eq!(
        factory.apps_v1().deployments().informer().handler_count(),
        0,
        "another type, another informer"
    );
}

#[tokio::test]
async fn the_lister_reads_the_informers_cache() {
    let sources = Sources::default();
    sources.config_maps.add(config_map("web"));
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let config_maps = factory.core_v1().config_maps();
    let _ = config_maps.informer();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    assert!(factory.wait_for_cache_sync(&cancel).await.all_synced());
    let web = config_maps.lister().namespaced("prod").get("web").unwrap();
    assert_eq!(web.metadata.name.as_deref(), Some("web"));
    factory.shutdown().await;
}
