//! Informers from the factory against kclient-fake over real HTTP — typed through the
//! Clientset and its generated accessors (`factory.core_v1().config_maps()`), dynamic through
//! the DynamicClient (`for_resource`), metadata-only through the MetadataClient — with fault
//! injection: dropped watches, compaction
//! (410), error storms with deletions during the outage. After each fault: every handler's
//! view and the cache equal the server's state, and each handler saw each object's changes
//! in a consistent order (an add only for an absent object, an update or a delete only for a
//! present one; deletions missed during an outage arrive as tombstones).

use crate::fake_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fake_support::{change, configmaps, rest, seed};
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_cache::{
    IndexFuncError, Indexers, ResourceEventHandler, SharedIndexInformer, SharedInformerFactory,
};
use kclient_core::{
    ApiStatus, DeletedObject, DynamicObject, PartialObjectMetadata, Resource, ResourceExt,
};
use kclient_dynamic::{DynamicClient, MetadataClient};
use kclient_fake::{Failure, FakeApiServer};
use kclient_informers::InformerFactoryExt;
use kclient_typed::Clientset;

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// A handler keeping its own view (key → resourceVersion) and each object's history.
#[derive(Default)]
struct View {
    objects: Mutex<BTreeMap<String, String>>,
    history: Mutex<BTreeMap<String, Vec<String>>>,
}

impl View {
    fn note(&self, key: String, event: &str, rv: Option<&str>) {
        let mut history = self.history.lock();
        let events = history.entry(key.clone()).or_default();
        let present = self.objects.lock().contains_key(&key);
        let ok = match event {
            "add" => !present,
            _ => present,
        };
        assert!(ok, "{key}: {event} out of order after {events:?}");
        events.push(event.to_owned());
        match rv {
            Some(rv) => {
                self.objects.lock().insert(key, rv.to_owned());
            }
            None => {
                self.objects.lock().remove(&key);
            }
        }
    }
}

impl<K: Resource> ResourceEventHandler<K> for View {
    fn on_add(&self, obj: &Arc<K>, _: bool) {
        self.note(
            kclient_core::meta_namespace_key(obj.as_ref()),
            "add",
            obj.meta().resource_version.as_deref(),
        );
    }

    fn on_update(&self, _: &Arc<K>, new: &Arc<K>) {
        self.note(
            kclient_core::meta_namespace_key(new.as_ref()),
            "update",
            new.meta().resource_version.as_deref(),
        );
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        let (key, event) = match obj {
            DeletedObject::Object(o) => (kclient_core::meta_namespace_key(o.as_ref()), "delete"),
            DeletedObject::Tombstone(t) => (t.key.clone(), "tombstone"),
        };
        self.note(key, event, None);
    }
}

/// The server's ConfigMaps in `default` as key → resourceVersion.
fn server_state(server: &FakeApiServer) -> BTreeMap<String, String> {
    server
        .list::<ConfigMap>(Some("default"))
        .into_iter()
        .map(|o| {
            (
                format!("default/{}", o.name_any()),
                o.resource_version().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn cache_state<K: Resource + Clone + Send + Sync + 'static>(
    informer: &SharedIndexInformer<K>,
) -> BTreeMap<String, String> {
    informer
        .get_store()
        .list()
        .iter()
        .map(|o| {
            (
                kclient_core::meta_namespace_key(o.as_ref()),
                o.meta().resource_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// Waits (tokio time, paused: the informer's backoffs pass at once) until the cache and
/// every view equal the server.
async fn until_in_sync<K: Resource + Clone + Send + Sync + 'static>(
    server: &FakeApiServer,
    informer: &SharedIndexInformer<K>,
    views: &[Arc<View>],
) {
    for _ in 0..3000 {
        let expected = server_state(server);
        if cache_state(informer) == expected && views.iter().all(|v| *v.objects.lock() == expected)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "never in sync: server {:?}, cache {:?}",
        server_state(server),
        cache_state(informer)
    );
}

/// The typed factory through the generated accessors: three handlers, dropped watches,
/// a compaction and an outage with a deletion; all agree with the server throughout.
#[tokio::test(start_paused = true)]
async fn typed_factory_informers_ride_out_faults() {
    let server = FakeApiServer::builder().start().await.unwrap();
    for name in ["a", "b", "c"] {
        seed(&server, name, "1");
    }
    let factory = SharedInformerFactory::builder(Clientset::from_client(rest(&server)))
        .namespace("default")
        .build();
    let config_maps = factory.core_v1().config_maps();
    let informer = config_maps.informer();
    let views: Vec<Arc<View>> = (0..3).map(|_| Arc::new(View::default())).collect();
    let registrations: Vec<_> = views
        .iter()
        .map(|v| informer.add_event_handler(Arc::clone(v)).unwrap())
        .collect();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    assert!(factory.wait_for_cache_sync(&cancel).await.all_synced());
    let synced: Vec<_> = registrations.iter().map(|r| r.synced()).collect();
    assert!(kclient_cache::wait_for_cache_sync(&cancel, &synced).await);
    until_in_sync(&server, &informer, &views).await;
    assert_eq!(
        config_maps
            .lister()
            .namespaced("default")
            .get("a")
            .unwrap()
            .data
            .as_ref()
            .unwrap()["v"],
        "1"
    );

    // Dropped watches: resumed, nothing lost.
    server.faults().drop_watches();
    change(&server, "a", "2");
    seed(&server, "d", "1");
    until_in_sync(&server, &informer, &views).await;

    // A compaction while the watch is stalled: a 410, a relist, nothing lost.
    server.faults().stall_watches();
    change(&server, "b", "2");
    server.remove(&configmaps(), "default", "c").unwrap();
    server.faults().compact_history();
    server.faults().resume_watches();
    until_in_sync(&server, &informer, &views).await;

    // An outage with a deletion: the deletion arrives as a tombstone.
    server.faults().fail_next(5, Failure::status(503));
    server.faults().drop_watches();
    server.remove(&configmaps(), "default", "d").unwrap();
    server.faults().compact_history();
    until_in_sync(&server, &informer, &views).await;
    for view in &views {
        let history = view.history.lock();
        assert_eq!(
            history["default/c"].last().unwrap(),
            "tombstone",
            "{history:?}"
        );
        assert_eq!(
            history["default/d"].last().unwrap(),
            "tombstone",
            "{history:?}"
        );
    }

    factory.shutdown().await;
    assert!(informer.is_stopped());
}

/// The dynamic factory (`for_resource` over the DynamicClient) sees the same objects
/// through a dropped watch and a compaction.
#[tokio::test(start_paused = true)]
async fn dynamic_factory_informers_ride_out_faults() {
    let server = FakeApiServer::builder().start().await.unwrap();
    seed(&server, "a", "1");
    let factory = SharedInformerFactory::builder(DynamicClient::new(rest(&server)))
        .namespace("default")
        .build();
    let resource = ConfigMap::api_resource(&());
    let informer = factory.for_resource(&resource).into_informer();
    let view = Arc::new(View::default());
    informer.add_event_handler(Arc::clone(&view)).unwrap();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    assert!(factory.wait_for_cache_sync(&cancel).await.all_synced());
    let views = [view];
    until_in_sync::<DynamicObject>(&server, &informer, &views).await;

    server.faults().drop_watches();
    seed(&server, "b", "1");
    change(&server, "a", "2");
    until_in_sync::<DynamicObject>(&server, &informer, &views).await;

    server.faults().stall_watches();
    server.remove(&configmaps(), "default", "a").unwrap();
    server.faults().compact_history();
    server.faults().resume_watches();
    until_in_sync::<DynamicObject>(&server, &informer, &views).await;
    let cached = informer.lister().namespaced("default").get("b").unwrap();
    assert_eq!(cached.types.as_ref().unwrap().kind, "ConfigMap");
    factory.shutdown().await;
}

/// The metadata informer factory (`for_resource` over the MetadataClient) rides out a
/// dropped watch, a compaction (410) and an outage with a deletion: the cache and a handler
/// equal the server throughout; the cache holds metadata only, without managedFields;
/// listers read it by namespace and by index.
#[tokio::test(start_paused = true)]
async fn metadata_factory_informers_ride_out_faults() {
    let server = FakeApiServer::builder().start().await.unwrap();
    for name in ["a", "b"] {
        seed(&server, name, "1");
    }
    // One written over HTTP, so that the server keeps managedFields for it.
    let dynamic = DynamicClient::new(rest(&server));
    let written: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "labels": {"tier": "web"}},
        "data": {"v": "1"}
    }))
    .unwrap();
    let resource = ConfigMap::api_resource(&());
    dynamic
        .resource(&resource)
        .namespace("default")
        .create(&written, &Default::default())
        .await
        .unwrap();
    assert!(server.list::<ConfigMap>(Some("default"))[2]
        .metadata
        .managed_fields
        .is_some());

    let factory = SharedInformerFactory::builder(MetadataClient::new(rest(&server)))
        .namespace("default")
        .build();
    let informer = factory
        .for_resource::<PartialObjectMetadata>(&resource)
        .into_informer();
    informer
        .add_indexers(
            Indexers::new().with("by-tier", |o: &PartialObjectMetadata| {
                Ok::<_, IndexFuncError>(o.labels().get("tier").cloned().into_iter().collect())
            }),
        )
        .unwrap();
    let view = Arc::new(View::default());
    informer.add_event_handler(Arc::clone(&view)).unwrap();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    assert!(factory.wait_for_cache_sync(&cancel).await.all_synced());
    let views = [view];
    until_in_sync::<PartialObjectMetadata>(&server, &informer, &views).await;
    let lister = informer.lister();
    let c = lister.namespaced("default").get("c").unwrap();
    assert!(
        c.metadata.managed_fields.is_none(),
        "stripped by the factory"
    );
    assert_eq!(
        c.types.as_ref().map(|t| t.kind.as_str()),
        Some("PartialObjectMetadata")
    );
    let web = lister.by_index("by-tier", "web").unwrap();
    assert_eq!(web.iter().map(|o| o.name_any()).collect::<Vec<_>>(), ["c"]);

    // Dropped watches: resumed, nothing lost.
    server.faults().drop_watches();
    seed(&server, "d", "1");
    change(&server, "a", "2");
    until_in_sync::<PartialObjectMetadata>(&server, &informer, &views).await;

    // A compaction while the watch is stalled: a 410, a relist, nothing lost.
    server.faults().stall_watches();
    change(&server, "b", "2");
    server.remove(&configmaps(), "default", "a").unwrap();
    server.faults().compact_history();
    server.faults().resume_watches();
    until_in_sync::<PartialObjectMetadata>(&server, &informer, &views).await;

    // An outage with a deletion: the deletion arrives as a tombstone.
    server.faults().fail_next(5, Failure::status(503));
    server.faults().drop_watches();
    server.remove(&configmaps(), "default", "d").unwrap();
    server.faults().compact_history();
    until_in_sync::<PartialObjectMetadata>(&server, &informer, &views).await;
    assert_eq!(
        views[0].history.lock()["default/d"].last().unwrap(),
        "tombstone"
    );
    assert!(lister
        .namespaced("default")
        .get("a")
        .unwrap_err()
        .is_not_found());
    factory.shutdown().await;
}
