//! Informers from the factories end to end, on every available target (the real
//! kube-apiserver when `KCLIENT_E2E_KUBECONFIG` is set, and always a fresh kclient-fake):
//! Pods and ConfigMaps through the typed factory's generated accessors, a custom resource
//! through the dynamic factory, changed while they run by kubectl (the independent client,
//! when there is one) and by the typed client. Each informer's cache ends equal to a fresh
//! list, each handler's view equals its cache, and each object's notifications came in a
//! consistent order.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{bail, ensure, Context, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kclient_cache::{
    CacheRepresentation, ResourceEventHandler, SharedIndexInformer, SharedInformerFactory,
};
use kclient_core::sharding::{ShardKey, ShardSelector};
use kclient_core::{
    ApiResource, CreateOptions, DeleteOptions, DeletedObject, DynamicObject, GroupVersionKind,
    ListOptions, Resource,
};
use kclient_dynamic::DynamicClient;
use kclient_e2e::scenarios::Namespace;
use kclient_e2e::Target;
use kclient_informers::InformerFactoryExt;
use kclient_rest::RestClient;
use kclient_typed::Clientset;
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A handler's own view (name → resourceVersion) and the order checks, with the first
/// failure kept for the test to report.
#[derive(Default)]
struct View {
    objects: Mutex<BTreeMap<String, String>>,
    error: Mutex<Option<String>>,
}

impl View {
    fn note(&self, name: &str, event: &str, rv: Option<&str>) {
        let mut objects = self.objects.lock();
        let present = objects.contains_key(name);
        if (event == "add") == present {
            self.error
                .lock()
                .get_or_insert_with(|| format!("{name}: {event} when present={present}"));
        }
        match rv {
            Some(rv) => {
                objects.insert(name.to_owned(), rv.to_owned());
            }
            None => {
                objects.remove(name);
            }
        }
    }
}

impl<K: Resource> ResourceEventHandler<K> for View {
    fn on_add(&self, obj: &Arc<K>, _: bool) {
        let meta = obj.meta();
        self.note(
            meta.name.as_deref().unwrap_or_default(),
            "add",
            meta.resource_version.as_deref(),
        );
    }

    fn on_update(&self, _: &Arc<K>, new: &Arc<K>) {
        let meta = new.meta();
        self.note(
            meta.name.as_deref().unwrap_or_default(),
            "update",
            meta.resource_version.as_deref(),
        );
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        let name = match obj {
            DeletedObject::Object(o) => o.meta().name.clone().unwrap_or_default(),
            DeletedObject::Tombstone(t) => t.key.rsplit('/').next().unwrap_or_default().to_owned(),
        };
        self.note(&name, "delete", None);
    }
}

/// Name → resourceVersion, without `kube-root-ca.crt` (kube-controller-manager adds it to
/// every namespace of a real cluster when it likes).
fn names<'a, K: Resource + 'a>(
    objects: impl IntoIterator<Item = &'a K>,
) -> BTreeMap<String, String> {
    objects
        .into_iter()
        .map(|o| {
            let meta = o.meta();
            (
                meta.name.clone().unwrap_or_default(),
                meta.resource_version.clone().unwrap_or_default(),
            )
        })
        .filter(|(name, _)| name != "kube-root-ca.crt")
        .collect()
}

fn cached<K: Resource + Clone + Send + Sync + 'static>(
    informer: &SharedIndexInformer<K>,
) -> BTreeMap<String, String> {
    let list = informer.get_store().list();
    names(list.iter().map(|o| o.as_ref()))
}

/// Polls (the real server runs on real time) until the cache equals `fresh()` and the view
/// equals the cache.
async fn until_in_sync<K, F, Fut>(
    what: &str,
    informer: &SharedIndexInformer<K>,
    view: &View,
    fresh: F,
) -> Result<()>
where
    K: Resource + Clone + Send + Sync + 'static,
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<BTreeMap<String, String>>>,
{
    let mut last = Default::default();
    for _ in 0..300 {
        let server = fresh().await?;
        let cache = cached(informer);
        let mut seen = view.objects.lock().clone();
        seen.remove("kube-root-ca.crt");
        if server == cache && cache == seen {
            if let Some(error) = view.error.lock().clone() {
                bail!("{what}: notifications out of order: {error}");
            }
            return Ok(());
        }
        last = (server, cache, seen);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!(
        "{what}: never in sync: server {:?}, cache {:?}, handler {:?}",
        last.0,
        last.1,
        last.2
    )
}

fn widget_crd(group: &str) -> Result<CustomResourceDefinition> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}
                }}}
            }]
        }
    }))?)
}

/// The scenario with the caches decoded, or `compact` (issue 27: built-in kinds kept as
/// protobuf, the custom resource as JSON).
async fn informers_on(target: &Target, compact: bool) -> Result<()> {
    let api = target.client()?;
    let ns = Namespace::create(&api, "informers").await?;
    let clientset = Clientset::new(target.config.clone())?;
    let dynamic = DynamicClient::new(RestClient::new(target.config.clone())?);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH)?.subsec_nanos();
    let group = format!(
        "informers-{}{:05x}.example.com",
        if compact { "c" } else { "d" },
        nanos & 0xfffff
    );
    let crds = clientset.apiextensions_v1().custom_resource_definitions();
    crds.create(&widget_crd(&group)?, &CreateOptions::default())
        .await?;
    let widgets = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::new(&group, "v1", "Widget"),
        "widgets",
        true,
    );
    let widget_client = dynamic.resource(&widgets).namespace(&ns.name);
    let mut served = false;
    for _ in 0..600 {
        if widget_client.list(&ListOptions::default()).await.is_ok() {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ensure!(served, "the Widget resource was never served");

    let outcome = run(target, &ns.name, &clientset, &dynamic, &widgets, compact).await;
    ns.delete().await?;
    crds.delete(&format!("widgets.{group}"), &DeleteOptions::default())
        .await?;
    outcome
}

async fn run(
    target: &Target,
    namespace: &str,
    clientset: &Clientset,
    dynamic: &DynamicClient,
    widgets: &ApiResource,
    compact: bool,
) -> Result<()> {
    let mut typed = SharedInformerFactory::builder(clientset.clone()).namespace(namespace);
    let mut untyped = SharedInformerFactory::builder(dynamic.clone()).namespace(namespace);
    if compact {
        typed = typed.compact_cache();
        untyped = untyped.representation::<DynamicObject>(CacheRepresentation::compact());
    }
    let (typed, untyped) = (typed.build(), untyped.build());
    let pods = typed.core_v1().pods().informer();
    let config_maps = typed.core_v1().config_maps().informer();
    let widget_informer = untyped.for_resource(widgets).into_informer();
    let views: [Arc<View>; 3] = Default::default();
    pods.add_event_handler(Arc::clone(&views[0]))?;
    config_maps.add_event_handler(Arc::clone(&views[1]))?;
    widget_informer.add_event_handler(Arc::clone(&views[2]))?;

    let cm_client = clientset.core_v1().config_maps(namespace);
    cm_client
        .create(
            &serde_json::from_value(json!({"metadata": {"name": "before"}, "data": {"v": "1"}}))?,
            &CreateOptions::default(),
        )
        .await?;

    let cancel = CancellationToken::new();
    typed.start(&cancel);
    untyped.start(&cancel);
    let synced = tokio::time::timeout(Duration::from_secs(60), async {
        (
            typed.wait_for_cache_sync(&cancel).await,
            untyped.wait_for_cache_sync(&cancel).await,
        )
    })
    .await
    .context("caches did not sync within a minute")?;
    ensure!(
        synced.0.all_synced() && synced.1.all_synced(),
        "synced: {synced:?}"
    );

    let outcome = async {
        // Changes by the independent client, when there is one; by the typed client always.
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}});
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "by-kubectl", "namespace": namespace}, "data": {"v": "1"}});
        let widget = json!({"apiVersion": widgets.api_version, "kind": "Widget",
            "metadata": {"name": "w1", "namespace": namespace}, "spec": {"size": 3}});
        for manifest in [&pod, &cm, &widget] {
            match target.kubectl_create(manifest).await {
                Some(created) => {
                    created?;
                }
                None => create_directly(clientset, dynamic, widgets, namespace, manifest).await?,
            }
        }
        let mut before = cm_client.get("before").await?;
        before.data = Some(BTreeMap::from([("v".to_string(), "2".to_string())]));
        cm_client.update(&before, &Default::default()).await?;
        match target
            .kubectl(&["delete", "configmap", "by-kubectl", "-n", namespace])
            .await
        {
            Some(deleted) => {
                deleted?;
            }
            None => {
                cm_client
                    .delete("by-kubectl", &DeleteOptions::default())
                    .await?;
            }
        }
        dynamic
            .resource(widgets)
            .namespace(namespace)
            .delete("w1", &DeleteOptions::default())
            .await?;

        let pod_client = clientset.core_v1().pods(namespace);
        until_in_sync("pods", &pods, &views[0], || async {
            Ok(names(
                &pod_client.list(&ListOptions::default()).await?.items,
            ))
        })
        .await?;
        until_in_sync("configmaps", &config_maps, &views[1], || async {
            Ok(names(&cm_client.list(&ListOptions::default()).await?.items))
        })
        .await?;
        let widget_client = dynamic.resource(widgets).namespace(namespace);
        until_in_sync("widgets", &widget_informer, &views[2], || async {
            Ok(names(
                &widget_client.list(&ListOptions::default()).await?.items,
            ))
        })
        .await?;
        ensure!(cached(&pods).contains_key("web"), "the pod is cached");
        ensure!(
            pods.get_indexer().thread_safe_store().is_compact() == compact
                && widget_informer
                    .get_indexer()
                    .thread_safe_store()
                    .is_compact()
                    == compact,
            "the caches are {}",
            if compact { "compact" } else { "decoded" }
        );
        ensure!(
            config_maps
                .lister()
                .namespaced(namespace)
                .get("before")?
                .data
                .as_ref()
                .map(|d| d["v"].as_str())
                == Some("2"),
            "the update reached the cache"
        );
        Ok(())
    }
    .await;
    typed.shutdown().await;
    untyped.shutdown().await;
    outcome
}

/// What kubectl would have created, through kclient's clients.
async fn create_directly(
    clientset: &Clientset,
    dynamic: &DynamicClient,
    widgets: &ApiResource,
    namespace: &str,
    manifest: &serde_json::Value,
) -> Result<()> {
    match manifest["kind"].as_str() {
        Some("Pod") => {
            let pod: Pod = serde_json::from_value(manifest.clone())?;
            clientset
                .core_v1()
                .pods(namespace)
                .create(&pod, &CreateOptions::default())
                .await?;
        }
        Some("ConfigMap") => {
            let cm: ConfigMap = serde_json::from_value(manifest.clone())?;
            clientset
                .core_v1()
                .config_maps(namespace)
                .create(&cm, &CreateOptions::default())
                .await?;
        }
        _ => {
            let obj: DynamicObject = serde_json::from_value(manifest.clone())?;
            dynamic
                .resource(widgets)
                .namespace(namespace)
                .create(&obj, &CreateOptions::default())
                .await?;
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn factories_with_typed_and_dynamic_informers_follow_the_server() -> Result<()> {
    let targets = Target::available().await?;
    let mut failures = Vec::new();
    for target in &targets {
        for compact in [false, true] {
            if let Err(e) = informers_on(target, compact).await {
                failures.push(format!(
                    "against {} (compact: {compact}): {e:#}",
                    target.kind
                ));
            }
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("; "));
    Ok(())
}

/// The ConfigMaps of `namespace` the server lists, by uid (name → resourceVersion), in
/// `selector`'s shard.
async fn shard_of_fresh_list(
    clientset: &Clientset,
    namespace: &str,
    selector: &ShardSelector,
) -> Result<BTreeMap<String, String>> {
    let list = clientset
        .core_v1()
        .config_maps(namespace)
        .list(&ListOptions::default())
        .await?;
    Ok(names(
        list.items
            .iter()
            .filter(|cm| selector.matches(&cm.metadata)),
    ))
}

/// Two factories, each with one of two shards, on a server (with the `ShardedListAndWatch`
/// gate or without it): each informer holds exactly its shard, before and after changes, and
/// the two together hold the namespace.
async fn sharded_factories_on(config: &kclient_rest::Config, what: &str) -> Result<()> {
    let clientset = Clientset::new(config.clone())?;
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH)?.subsec_nanos();
    let namespace = format!("kclient-e2e-sharded-informers-{:05x}", nanos & 0xfffff);
    let namespaces = clientset.core_v1().namespaces();
    namespaces
        .create(
            &serde_json::from_value(json!({"metadata": {"name": namespace}}))?,
            &CreateOptions::default(),
        )
        .await?;
    let config_maps = clientset.core_v1().config_maps(&namespace);
    let create = |name: String| {
        let config_maps = config_maps.clone();
        async move {
            config_maps
                .create(
                    &serde_json::from_value(json!({"metadata": {"name": name}}))?,
                    &CreateOptions::default(),
                )
                .await?;
            anyhow::Ok(())
        }
    };
    for i in 0..30 {
        create(format!("before-{i}")).await?;
    }
    let cancel = CancellationToken::new();
    let mut informers = Vec::new();
    for index in 0..2 {
        let selector = ShardSelector::shard(ShardKey::Uid, index, 2)?;
        let factory = SharedInformerFactory::builder(clientset.clone())
            .namespace(&namespace)
            .shard_selector(selector.clone())
            .build();
        let informer = factory.core_v1().config_maps().informer();
        let view = Arc::new(View::default());
        informer.add_event_handler(Arc::clone(&view))?;
        factory.start(&cancel);
        informers.push((selector, informer, view, factory));
    }
    let outcome = async {
        for (index, (selector, informer, view, _)) in informers.iter().enumerate() {
            until_in_sync(&format!("{what}: shard {index}"), informer, view, || {
                shard_of_fresh_list(&clientset, &namespace, selector)
            })
            .await?;
        }
        for i in 0..10 {
            create(format!("after-{i}")).await?;
        }
        for i in 0..5 {
            config_maps
                .delete(&format!("before-{i}"), &DeleteOptions::default())
                .await?;
        }
        let mut union = BTreeMap::new();
        for (index, (selector, informer, view, _)) in informers.iter().enumerate() {
            until_in_sync(
                &format!("{what}: shard {index} after changes"),
                informer,
                view,
                || shard_of_fresh_list(&clientset, &namespace, selector),
            )
            .await?;
            let cache = cached(informer);
            ensure!(
                cache.keys().all(|k| !union.contains_key(k)),
                "{what}: an object in both shards"
            );
            union.extend(cache);
        }
        let all = config_maps.list(&ListOptions::default()).await?;
        ensure!(
            union == names(all.items.iter()),
            "{what}: the shards do not hold the namespace"
        );
        anyhow::Ok(())
    }
    .await;
    cancel.cancel();
    namespaces
        .delete(&namespace, &DeleteOptions::default())
        .await?;
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_factories_hold_their_shard_with_or_without_the_gate() -> Result<()> {
    let mut failures = Vec::new();
    for target in Target::available().await? {
        // Both targets run with the gate on.
        if let Err(e) = sharded_factories_on(&target.config, &target.kind.to_string()).await {
            failures.push(format!("{e:#}"));
        }
    }
    let ungated = kclient_fake::FakeApiServer::builder().start().await?;
    if let Err(e) = sharded_factories_on(&ungated.config()?, "kclient-fake without the gate").await
    {
        failures.push(format!("{e:#}"));
    }
    ensure!(failures.is_empty(), "{}", failures.join("; "));
    Ok(())
}

/// The children of owners in a shard, by their controller's uid: a factory with
/// `shard_by_controller_owner` caches exactly them (owners, which have no controller, none).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owned_objects_follow_their_owners_shard() -> Result<()> {
    let server = kclient_fake::FakeApiServer::builder()
        .sharded_list_and_watch(true)
        .start()
        .await?;
    let clientset = Clientset::new(server.config()?)?;
    let config_maps = clientset.core_v1().config_maps("default");
    let selector = ShardSelector::shard(ShardKey::Uid, 1, 2)?;
    let mut expected = BTreeSet::new();
    for i in 0..12 {
        let owner = config_maps
            .create(
                &serde_json::from_value(json!({"metadata": {"name": format!("owner-{i}")}}))?,
                &CreateOptions::default(),
            )
            .await?;
        let uid = owner.metadata.uid.clone().context("a uid")?;
        for j in 0..2 {
            let name = format!("child-{i}-{j}");
            let child = json!({"metadata": {"name": name, "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": format!("owner-{i}"),
                "uid": uid, "controller": true}]}});
            config_maps
                .create(&serde_json::from_value(child)?, &CreateOptions::default())
                .await?;
            if selector.matches_value(&uid) {
                expected.insert(name);
            }
        }
    }
    ensure!(!expected.is_empty() && expected.len() < 24, "{expected:?}");
    let factory = SharedInformerFactory::builder(clientset.clone())
        .namespace("default")
        .shard_selector(selector)
        .shard_by_controller_owner::<ConfigMap>()
        .build();
    let informer = factory.core_v1().config_maps().informer();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    let synced = factory.wait_for_cache_sync(&cancel).await;
    ensure!(synced.all_synced(), "{synced:?}");
    let cached: BTreeSet<String> = cached(&informer).into_keys().collect();
    cancel.cancel();
    ensure!(
        cached == expected,
        "cached {cached:?}, expected {expected:?}"
    );
    Ok(())
}
