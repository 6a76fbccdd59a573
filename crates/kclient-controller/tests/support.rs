//! What the suites share: in-memory sources for the paused clock, a client that counts the
//! lists and watches its informers make, a probe recording reconciles (and catching two of
//! one key at once), object builders and small waits.
#![allow(dead_code)] // each suite uses part of it

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kclient_cache::testing::FakeControllerSource;
use kclient_controller::{Action, ReconcileContext, Reconciler};
use kclient_core::{
    ApiResource, DynamicListerWatcherFor, DynamicObject, FetchedList, GroupVersionKind,
    ListOptions, ListerWatcher, ListerWatcherFor, ObjectKey, ObjectList, PartialObjectMetadata,
    Resource, TweakListOptions, WatchStream,
};
use kclient_fake::FakeApiServer;
use kclient_rest::{Config as RestConfig, RestClient};
use kclient_typed::Clientset;
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

/// In-memory sources of the types the paused-clock suites use: a client for an informer
/// factory without HTTP. Besides the typed sources, the metadata of ConfigMaps (for
/// `owns_metadata`) and the CronTabs of [`crontabs`] (a resource known at run time), with
/// the resources the factory asked for.
#[derive(Clone, Default)]
pub struct Sources {
    pub config_maps: FakeControllerSource<ConfigMap>,
    pub secrets: FakeControllerSource<Secret>,
    pub deployments: FakeControllerSource<Deployment>,
    pub config_map_metadata: FakeControllerSource<PartialObjectMetadata>,
    pub crontabs: FakeControllerSource<DynamicObject>,
    pub asked: Arc<Mutex<Vec<String>>>,
}

/// The custom resource of the dynamic suites: `stable.example.com/v1` CronTabs.
pub fn crontabs() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::new("stable.example.com", "v1", "CronTab"),
        "crontabs",
        true,
    )
}

impl DynamicListerWatcherFor<PartialObjectMetadata> for Sources {
    type ListerWatcher = FakeControllerSource<PartialObjectMetadata>;

    fn dynamic_lister_watcher(
        &self,
        resource: &ApiResource,
        _namespace: Option<&str>,
        _tweak: Option<TweakListOptions>,
    ) -> Self::ListerWatcher {
        self.asked
            .lock()
            .push(format!("metadata {}", resource.plural));
        assert_eq!(resource.plural, "configmaps", "only ConfigMaps' metadata");
        self.config_map_metadata.clone()
    }
}

impl DynamicListerWatcherFor<DynamicObject> for Sources {
    type ListerWatcher = FakeControllerSource<DynamicObject>;

    fn dynamic_lister_watcher(
        &self,
        resource: &ApiResource,
        _namespace: Option<&str>,
        _tweak: Option<TweakListOptions>,
    ) -> Self::ListerWatcher {
        self.asked
            .lock()
            .push(format!("objects {}", resource.plural));
        assert_eq!(resource, &crontabs(), "only CronTabs");
        self.crontabs.clone()
    }
}

macro_rules! source_for {
    ($kind:ty, $field:ident) => {
        impl ListerWatcherFor<$kind> for Sources {
            type ListerWatcher = FakeControllerSource<$kind>;
            fn lister_watcher(
                &self,
                _namespace: Option<&str>,
                _tweak: Option<TweakListOptions>,
            ) -> Self::ListerWatcher {
                self.$field.clone()
            }
        }
    };
}

source_for!(ConfigMap, config_maps);
source_for!(Secret, secrets);
source_for!(Deployment, deployments);

/// How many lists and watches the informers of a [`Counting`] client made, by kind.
#[derive(Debug, Default)]
pub struct Calls {
    pub lists: HashMap<String, usize>,
    pub watches: HashMap<String, usize>,
    pub lister_watchers: HashMap<String, usize>,
}

/// A client that counts what its informers ask of the server, per kind.
#[derive(Clone)]
pub struct Counting<C> {
    pub client: C,
    pub calls: Arc<Mutex<Calls>>,
}

impl<C> Counting<C> {
    pub fn new(client: C) -> Self {
        Self {
            client,
            calls: Arc::default(),
        }
    }

    pub fn watches(&self, kind: &str) -> usize {
        self.calls.lock().watches.get(kind).copied().unwrap_or(0)
    }

    pub fn lists(&self, kind: &str) -> usize {
        self.calls.lock().lists.get(kind).copied().unwrap_or(0)
    }

    pub fn lister_watchers(&self, kind: &str) -> usize {
        self.calls
            .lock()
            .lister_watchers
            .get(kind)
            .copied()
            .unwrap_or(0)
    }
}

impl<K, C> ListerWatcherFor<K> for Counting<C>
where
    K: Resource + Send + Sync + 'static,
    K::DynamicType: Default,
    C: ListerWatcherFor<K>,
{
    type ListerWatcher = CountingListerWatcher<C::ListerWatcher>;

    fn lister_watcher(
        &self,
        namespace: Option<&str>,
        tweak: Option<TweakListOptions>,
    ) -> Self::ListerWatcher {
        let kind = K::api_resource(&Default::default()).kind;
        *self
            .calls
            .lock()
            .lister_watchers
            .entry(kind.clone())
            .or_default() += 1;
        CountingListerWatcher {
            inner: self.client.lister_watcher(namespace, tweak),
            kind,
            calls: Arc::clone(&self.calls),
        }
    }
}

/// The informers of resources chosen at run time, counted under `<Kind>/<object type>`
/// (`ConfigMap/PartialObjectMetadata`, `CronTab/DynamicObject`).
impl<K, C> DynamicListerWatcherFor<K> for Counting<C>
where
    K: Resource<DynamicType = ApiResource> + Send + Sync + 'static,
    C: DynamicListerWatcherFor<K>,
{
    type ListerWatcher = CountingListerWatcher<C::ListerWatcher>;

    fn dynamic_lister_watcher(
        &self,
        resource: &ApiResource,
        namespace: Option<&str>,
        tweak: Option<TweakListOptions>,
    ) -> Self::ListerWatcher {
        let object_type = std::any::type_name::<K>()
            .rsplit("::")
            .next()
            .unwrap_or("?");
        let kind = format!("{}/{object_type}", resource.kind);
        *self
            .calls
            .lock()
            .lister_watchers
            .entry(kind.clone())
            .or_default() += 1;
        CountingListerWatcher {
            inner: self
                .client
                .dynamic_lister_watcher(resource, namespace, tweak),
            kind,
            calls: Arc::clone(&self.calls),
        }
    }
}

/// One kind's lister-watcher, counted.
#[derive(Clone)]
pub struct CountingListerWatcher<L> {
    inner: L,
    kind: String,
    calls: Arc<Mutex<Calls>>,
}

impl<L> CountingListerWatcher<L> {
    fn count_list(&self) {
        *self
            .calls
            .lock()
            .lists
            .entry(self.kind.clone())
            .or_default() += 1;
    }
}

impl<K: Send, L: ListerWatcher<K>> ListerWatcher<K> for CountingListerWatcher<L> {
    type Error = L::Error;

    fn list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<ObjectList<K>, Self::Error>> + Send {
        self.count_list();
        self.inner.list(options)
    }

    fn watch(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<WatchStream<K, Self::Error>, Self::Error>> + Send {
        *self
            .calls
            .lock()
            .watches
            .entry(self.kind.clone())
            .or_default() += 1;
        self.inner.watch(options)
    }

    fn list_mapped<T, F>(
        &self,
        options: &ListOptions,
        f: F,
    ) -> impl Future<Output = Result<ObjectList<T>, Self::Error>> + Send
    where
        T: Send,
        F: FnMut(K) -> T + Send,
        K: Send,
    {
        self.count_list();
        self.inner.list_mapped(options, f)
    }

    fn fetch_list(
        &self,
        options: &ListOptions,
    ) -> impl Future<Output = Result<FetchedList<K, Self::Error>, Self::Error>> + Send {
        self.count_list();
        self.inner.fetch_list(options)
    }
}

/// One reconcile as a probe saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub key: String,
    pub retries: usize,
    /// The resourceVersion of the object reconciled (`None` for a deleted one).
    pub resource_version: Option<String>,
    pub at: Instant,
}

/// Records reconciles and how many of one key ran at once.
#[derive(Default)]
pub struct Probe {
    seen: Mutex<Vec<Seen>>,
    running: Mutex<HashMap<String, usize>>,
    overlaps: Mutex<Vec<String>>,
    most_at_once: Mutex<usize>,
}

/// Ends a reconcile's record when dropped (also when the reconcile is dropped).
pub struct Running<'a> {
    probe: &'a Probe,
    key: String,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let mut running = self.probe.running.lock();
        if let Some(n) = running.get_mut(&self.key) {
            *n -= 1;
        }
    }
}

impl Probe {
    /// Records the start of a reconcile of `key`; keep the guard until it ends.
    pub fn begin(
        &self,
        key: &ObjectKey,
        retries: usize,
        resource_version: Option<&str>,
    ) -> Running<'_> {
        let key = key.to_string();
        {
            let mut running = self.running.lock();
            let n = running.entry(key.clone()).or_default();
            *n += 1;
            if *n > 1 {
                self.overlaps
                    .lock()
                    .push(format!("{n} reconciles of {key} at once"));
            }
            let total: usize = running.values().sum();
            let mut most = self.most_at_once.lock();
            *most = (*most).max(total);
        }
        self.seen.lock().push(Seen {
            key: key.clone(),
            retries,
            resource_version: resource_version.map(str::to_owned),
            at: Instant::now(),
        });
        Running { probe: self, key }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().clone()
    }

    pub fn seen_of(&self, key: &str) -> Vec<Seen> {
        self.seen().into_iter().filter(|s| s.key == key).collect()
    }

    pub fn count(&self, key: &str) -> usize {
        self.seen_of(key).len()
    }

    pub fn total(&self) -> usize {
        self.seen.lock().len()
    }

    /// Every time two reconciles of one key overlapped.
    pub fn overlaps(&self) -> Vec<String> {
        self.overlaps.lock().clone()
    }

    /// The most reconciles (of any keys) that ran at once.
    pub fn most_at_once(&self) -> usize {
        *self.most_at_once.lock()
    }
}

/// A reconciler that records each reconcile in a probe, nothing more.
pub struct Count<K>(pub Arc<Probe>, std::marker::PhantomData<fn() -> K>);

impl<K> Count<K> {
    pub fn new(probe: &Arc<Probe>) -> Self {
        Self(Arc::clone(probe), std::marker::PhantomData)
    }
}

impl<K: Resource + Send + Sync + 'static> Reconciler<K> for Count<K> {
    type Error = std::convert::Infallible;

    async fn reconcile(&self, obj: Arc<K>, ctx: &ReconcileContext) -> Result<Action, Self::Error> {
        let _running = self.0.begin(
            ctx.key(),
            ctx.retries(),
            obj.meta().resource_version.as_deref(),
        );
        Ok(Action::await_change())
    }
}

/// A Clientset for `server` without client-side rate limiting (the tests write in bursts).
pub fn clientset(server: &FakeApiServer) -> Clientset {
    let mut config = RestConfig::new(server.url());
    config.qps = None;
    Clientset::from_client(RestClient::new(config).expect("a client for kclient-fake"))
}

pub fn config_map(namespace: &str, name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.namespace = Some(namespace.into());
    cm.metadata.name = Some(name.into());
    cm.data = Some(
        data.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
    );
    cm
}

pub fn secret(namespace: &str, name: &str, labels: &[(&str, &str)]) -> Secret {
    let mut secret = Secret::default();
    secret.metadata.namespace = Some(namespace.into());
    secret.metadata.name = Some(name.into());
    secret.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    secret
}

/// A Deployment with `replicas` and one container of `image`.
pub fn deployment(namespace: &str, name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(serde_json::json!({
        "metadata": {"namespace": namespace, "name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}
            }
        }
    }))
    .expect("a valid Deployment")
}

/// The replicas of a Deployment, read through JSON (the same for every Kubernetes version).
pub fn replicas(d: &Deployment) -> i64 {
    serde_json::to_value(d).unwrap_or_default()["spec"]["replicas"]
        .as_i64()
        .unwrap_or(1)
}

/// Polls `condition` every 20 ms until it holds, for at most `limit` (on the paused clock
/// the time passes at once); whether it held.
pub async fn eventually(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if condition() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// [`eventually`] for an async condition.
pub async fn eventually_async<F, Fut>(limit: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    loop {
        if condition().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `GET path` on `address` over HTTP/1.1: the status code and the body.
pub async fn http_get(address: std::net::SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}
