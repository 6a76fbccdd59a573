//! SharedInformerFactory against in-memory sources: laziness, one informer per type,
//! idempotent start of new informers only, waiting for started informers only, shutdown,
//! and the options (namespace, tweak, resync per type, transforms, names) — client-go's
//! factory rules and seed-semantics 3.27 by name.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kclient_cache::testing::FakeControllerSource;
use kclient_cache::{GenericInformer, SharedIndexInformer, SharedInformerFactory, TransformFunc};
use kclient_core::labels::Selector;
use kclient_core::{
    ApiResource, DynamicListerWatcherFor, DynamicObject, ListerWatcherFor, PartialObjectMetadata,
    Resource, ResourceExt, TweakListOptions,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// One source per type, recording what the factory asked for.
#[derive(Clone, Default)]
struct Sources {
    config_maps: FakeControllerSource<ConfigMap>,
    secrets: FakeControllerSource<Secret>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Sources {
    fn record(&self, kind: &str, namespace: Option<&str>, tweak: &Option<TweakListOptions>) {
        let tweaked = tweak.as_ref().map(|t| {
            let mut options = kclient_core::ListOptions::default();
            t(&mut options);
            options.label_selector.unwrap_or_default()
        });
        self.asked
            .lock()
            .push(format!("{kind} ns={namespace:?} tweak={tweaked:?}"));
    }
}

impl ListerWatcherFor<ConfigMap> for Sources {
    type ListerWatcher = FakeControllerSource<ConfigMap>;

    fn lister_watcher(
        &self,
        namespace: Option<&str>,
        tweak: Option<TweakListOptions>,
    ) -> Self::ListerWatcher {
        self.record("ConfigMap", namespace, &tweak);
        self.config_maps.clone()
    }
}

impl ListerWatcherFor<Secret> for Sources {
    type ListerWatcher = FakeControllerSource<Secret>;

    fn lister_watcher(
        &self,
        namespace: Option<&str>,
        tweak: Option<TweakListOptions>,
    ) -> Self::ListerWatcher {
        self.record("Secret", namespace, &tweak);
        self.secrets.clone()
    }
}

fn cm(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some("ns".into());
    cm.metadata.name = Some(name.into());
    cm.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
        manager: Some("kubectl".into()),
        ..ManagedFieldsEntry::default()
    }]);
    cm
}

/// Seed-semantics 3.27: the factory is lazy — an informer exists once asked for — and
/// there is one informer per type.
#[tokio::test(start_paused = true)]
async fn the_factory_is_lazy_and_shares_one_informer_per_type() {
    let sources = Sources::default();
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    assert!(sources.asked.lock().is_empty(), "nothing made before asked");
    let a = factory.informer::<ConfigMap>();
    let b = factory.informer::<ConfigMap>();
    let _lister = factory.lister::<ConfigMap>();
    assert_eq!(sources.asked.lock().len(), 1, "made once");
    a.add_event_handler(kclient_cache::ResourceEventHandlerFuncs::new())
        .unwrap();
    assert_eq!(b.handler_count(), 1, "the same informer");
}

/// client-go's factory Start: idempotent, starts only informers not started yet;
/// WaitForCacheSync covers the started ones only; after Shutdown, Start does nothing.
#[tokio::test(start_paused = true)]
async fn start_starts_new_informers_only_and_shutdown_ends_everything() {
    let sources = Sources::default();
    sources.config_maps.add(cm("a"));
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let config_maps = factory.informer::<ConfigMap>();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory.start(&cancel);
    let secrets = factory.informer::<Secret>();
    let result = factory.wait_for_cache_sync(&cancel).await;
    assert_eq!(
        result.synced.keys().collect::<Vec<_>>(),
        ["v1/ConfigMap"],
        "only the started informer"
    );
    assert!(result.all_synced());
    assert!(!secrets.is_started());
    assert_eq!(config_maps.get_store().len(), 1);

    factory.start(&cancel);
    let result = factory.wait_for_cache_sync(&cancel).await;
    assert_eq!(result.synced.len(), 2);
    assert!(result.all_synced());
    let cached = factory.cached_objects();
    assert_eq!(
        cached.into_iter().collect::<Vec<_>>(),
        [
            ("v1/ConfigMap".to_string(), 1),
            ("v1/Secret".to_string(), 0)
        ],
        "what each informer caches, by name"
    );

    factory.shutdown().await;
    assert!(config_maps.is_stopped() && secrets.is_stopped());
    assert_eq!(sources.config_maps.open_watches(), 0);
    let late = SharedInformerFactory::new(Sources::default(), Duration::ZERO);
    late.shutdown().await;
    let never = late.informer::<ConfigMap>();
    late.start(&cancel);
    tokio::task::yield_now().await;
    assert!(!never.is_started(), "start after shutdown does nothing");
}

/// Cancelling the token given to `start` stops the informers too; a wait cancelled first
/// reports them unsynced.
#[tokio::test(start_paused = true)]
async fn the_start_token_stops_the_informers() {
    let sources = Sources::default();
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let informer = factory.informer::<ConfigMap>();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    assert!(factory.wait_for_cache_sync(&cancel).await.all_synced());
    cancel.cancel();
    factory.shutdown().await;
    assert!(informer.is_stopped());

    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let stalled = SharedInformerFactory::new(Sources::default(), Duration::ZERO);
    let _ = stalled.informer::<Secret>();
    stalled.start(&CancellationToken::new());
    let result = stalled.wait_for_cache_sync(&cancelled).await;
    assert_eq!(result.unsynced().collect::<Vec<_>>(), ["v1/Secret"]);
    stalled.shutdown().await;
}

/// The options reach every informer: namespace and tweak to the lister-watcher, resync
/// per type over the default, the informer name as a prefix.
#[tokio::test(start_paused = true)]
async fn options_reach_the_informers() {
    let sources = Sources::default();
    let factory = SharedInformerFactory::builder(sources.clone())
        .default_resync(Duration::from_secs(30))
        .namespace("prod")
        .tweak_list_options(|o| o.label_selector = Some("app=web".into()))
        .custom_resync::<Secret>(Duration::from_secs(90))
        .informer_name("my-controller")
        .build();
    let config_maps = factory.informer::<ConfigMap>();
    let secrets = factory.informer::<Secret>();
    assert_eq!(
        *sources.asked.lock(),
        [
            "ConfigMap ns=Some(\"prod\") tweak=Some(\"app=web\")",
            "Secret ns=Some(\"prod\") tweak=Some(\"app=web\")"
        ]
    );
    assert_eq!(config_maps.resync_check_period(), Duration::from_secs(30));
    assert_eq!(secrets.resync_check_period(), Duration::from_secs(90));
    assert_eq!(config_maps.name(), "my-controller/v1/ConfigMap");
}

/// A factory's options are fixed when it is built: every informer of the factory and of its
/// clones is made with the same namespace and tweak, whoever asks and in whatever order —
/// one factory cannot hold informers of two namespaces (there is no setter left to call after
/// an informer exists; `SharedInformerFactory`'s docs hold a `compile_fail` example).
#[tokio::test(start_paused = true)]
async fn one_factory_and_its_clones_watch_one_namespace() {
    let sources = Sources::default();
    let factory = SharedInformerFactory::builder(sources.clone())
        .namespace("prod")
        .build();
    let clone = factory.clone();
    factory.informer::<ConfigMap>();
    let other = SharedInformerFactory::builder(sources.clone())
        .namespace("dev")
        .build();
    other.informer::<ConfigMap>();
    clone.informer::<Secret>();
    clone.informer::<ConfigMap>();
    assert_eq!(
        *sources.asked.lock(),
        [
            "ConfigMap ns=Some(\"prod\") tweak=None",
            "ConfigMap ns=Some(\"dev\") tweak=None",
            "Secret ns=Some(\"prod\") tweak=None",
        ],
        "the clone shares the first factory's namespace and informers; another namespace is another factory"
    );
}

/// `informer_for`'s constructor is user code: it runs without the factory's lock, so it may
/// call back into the factory (here for another informer, a lister and the factory's debug
/// form) without deadlocking, and it runs once however many ask.
#[test]
fn a_constructor_that_calls_back_into_the_factory_does_not_deadlock() {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let sources = Sources::default();
        let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
        let calls = Arc::new(Mutex::new(0));
        let make = |calls: &Arc<Mutex<i32>>| {
            let calls = Arc::clone(calls);
            let factory = &factory;
            move |client: &Sources, settings: &kclient_cache::InformerSettings<ConfigMap>| {
                *calls.lock() += 1;
                let secrets = factory.informer::<Secret>();
                let _ = factory.lister::<Secret>();
                let _ = format!("{factory:?}");
                assert_eq!(secrets.name(), "v1/Secret");
                let lw = kclient_core::ListerWatcherFor::<ConfigMap>::lister_watcher(
                    client,
                    settings.namespace.as_deref(),
                    settings.tweak.clone(),
                );
                SharedIndexInformer::new(lw, settings.informer_options())
            }
        };
        let first = factory.informer_for::<ConfigMap>(make(&calls));
        let again = factory.informer_for::<ConfigMap>(make(&calls));
        assert_eq!(*calls.lock(), 1, "the constructor runs once");
        assert_eq!(first.name(), again.name());
        assert_eq!(
            *sources.asked.lock(),
            ["Secret ns=None tweak=None", "ConfigMap ns=None tweak=None"]
        );
        done.send(()).unwrap();
    });
    finished
        .recv_timeout(Duration::from_secs(30))
        .expect("informer_for's constructor deadlocked on the factory's lock");
}

/// managedFields are stripped by default; `keep_managed_fields` keeps them, and a transform
/// set for a type replaces the default for that type.
#[tokio::test(start_paused = true)]
async fn managed_fields_are_stripped_by_default() {
    for (keep, custom, expect_managed, expect_label) in [
        (false, false, false, false),
        (true, false, true, false),
        (false, true, true, true),
    ] {
        let sources = Sources::default();
        sources.config_maps.add(cm("a"));
        let mut builder = SharedInformerFactory::builder(sources.clone());
        if keep {
            builder = builder.keep_managed_fields();
        }
        if custom {
            builder = builder.transform(TransformFunc::new(|o: &mut ConfigMap| {
                o.metadata
                    .labels
                    .get_or_insert_with(Default::default)
                    .insert("seen".into(), "yes".into());
                Ok(())
            }));
        }
        let factory = builder.build();
        let informer = factory.informer::<ConfigMap>();
        let cancel = CancellationToken::new();
        factory.start(&cancel);
        assert!(factory.wait_for_cache_sync(&cancel).await.all_synced());
        let cached = informer.get_store().get_by_key("ns/a").unwrap();
        assert_eq!(
            cached.metadata.managed_fields.is_some(),
            expect_managed,
            "keep={keep} custom={custom}"
        );
        assert_eq!(cached.labels().contains_key("seen"), expect_label);
        factory.shutdown().await;
    }
}

/// A client of resources described at run time, both as whole objects and as metadata (as
/// kclient-dynamic's `DynamicClient` and `MetadataClient` are, each for one of them).
#[derive(Clone, Default)]
struct RunTimeSources {
    objects: FakeControllerSource<DynamicObject>,
    metadata: FakeControllerSource<PartialObjectMetadata>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl DynamicListerWatcherFor for RunTimeSources {
    type ListerWatcher = FakeControllerSource<DynamicObject>;

    fn dynamic_lister_watcher(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        _: Option<TweakListOptions>,
    ) -> Self::ListerWatcher {
        self.asked
            .lock()
            .push(format!("objects {} ns={namespace:?}", resource.plural));
        self.objects.clone()
    }
}

impl DynamicListerWatcherFor<PartialObjectMetadata> for RunTimeSources {
    type ListerWatcher = FakeControllerSource<PartialObjectMetadata>;

    fn dynamic_lister_watcher(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        _: Option<TweakListOptions>,
    ) -> Self::ListerWatcher {
        self.asked
            .lock()
            .push(format!("metadata {} ns={namespace:?}", resource.plural));
        self.metadata.clone()
    }
}

/// `for_resource` makes one informer per resource and object type: the metadata informer
/// of a resource is not its whole-object informer; asking again gives the same one. The
/// factory's options (namespace, managedFields stripping, transforms by type) reach it.
#[tokio::test(start_paused = true)]
async fn for_resource_keeps_metadata_and_whole_object_informers_apart() {
    let sources = RunTimeSources::default();
    let mut partial = PartialObjectMetadata::from_resource(&cm("a"));
    partial.metadata.namespace = Some("ns".into());
    sources.metadata.add(partial);
    let factory = SharedInformerFactory::builder(sources.clone())
        .namespace("ns")
        .build();
    let config_maps = ConfigMap::api_resource(&());
    let metadata = factory.for_resource::<PartialObjectMetadata>(&config_maps);
    let objects = factory.for_resource::<DynamicObject>(&config_maps);
    let again = factory.for_resource::<PartialObjectMetadata>(&config_maps);
    assert_eq!(
        *sources.asked.lock(),
        [
            "metadata configmaps ns=Some(\"ns\")",
            "objects configmaps ns=Some(\"ns\")"
        ]
    );
    assert_eq!(metadata.informer().name(), "v1/ConfigMap");
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    assert!(factory.wait_for_cache_sync(&cancel).await.all_synced());
    let cached = again.lister().namespaced("ns").get("a").unwrap();
    assert!(
        cached.metadata.managed_fields.is_none(),
        "stripped by default"
    );
    assert!(objects.informer().get_store().is_empty());
    factory.shutdown().await;

    // A transform set for PartialObjectMetadata replaces the default for metadata informers.
    let factory = SharedInformerFactory::builder(sources.clone())
        .transform(TransformFunc::new(|o: &mut PartialObjectMetadata| {
            o.metadata.annotations = Some([("seen".to_owned(), "yes".to_owned())].into());
            Ok(())
        }))
        .build();
    let metadata = factory.for_resource::<PartialObjectMetadata>(&config_maps);
    factory.start(&cancel);
    assert!(factory.wait_for_cache_sync(&cancel).await.all_synced());
    let cached = metadata.lister().get("ns/a").unwrap();
    assert_eq!(cached.annotations()["seen"], "yes");
    assert!(cached.metadata.managed_fields.is_some());
    factory.shutdown().await;
}

/// client-go's `GenericInformer` (informers/generic.go; dynamicinformer's
/// `TestFilteredDynamicSharedInformerFactory` uses `ForResource(gvr).Informer()` and
/// `.Lister()`): `for_resource` gives the shared informer and a lister over that same cache,
/// by key, by namespace (`ByNamespace`) and by selector; two requests share one informer.
#[tokio::test(start_paused = true)]
async fn generic_informer_gives_the_informer_and_a_lister_over_its_cache() {
    let sources = RunTimeSources::default();
    for (ns, name) in [("ns", "a"), ("ns", "b"), ("other", "c")] {
        let mut object = cm(name);
        object.metadata.namespace = Some(ns.into());
        sources
            .metadata
            .add(PartialObjectMetadata::from_resource(&object));
    }
    let factory = SharedInformerFactory::new(sources.clone(), Duration::ZERO);
    let config_maps = ConfigMap::api_resource(&());
    let generic: GenericInformer<PartialObjectMetadata> = factory.for_resource(&config_maps);
    let again = factory.for_resource::<PartialObjectMetadata>(&config_maps);
    assert_eq!(sources.asked.lock().len(), 1, "one informer per resource");
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    assert!(factory.wait_for_cache_sync(&cancel).await.all_synced());
    assert!(generic.informer().has_synced());
    assert_eq!(again.informer().get_store().len(), 3, "the same cache");

    let lister = generic.lister();
    assert_eq!(lister.list(&Selector::everything()).len(), 3);
    assert_eq!(lister.get("other/c").unwrap().name_any(), "c");
    let in_ns = lister.namespaced("ns");
    let mut names: Vec<_> = in_ns
        .list(&Selector::everything())
        .into_iter()
        .map(|o| o.name_any().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "b"]);
    assert!(in_ns.get("c").is_err(), "c is in another namespace");
    let informer: SharedIndexInformer<PartialObjectMetadata> = again.into_informer();
    assert_eq!(informer.lister().list(&Selector::everything()).len(), 3);
    factory.shutdown().await;
}
