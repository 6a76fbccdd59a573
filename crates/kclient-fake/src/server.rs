//! [`FakeApiServer`]: the listener, the connections (HTTP/1.1 and HTTP/2, plain or TLS),
//! authentication, and the handles tests use: URL, kubeconfig, direct store access, faults,
//! shutdown.

use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::panic::Location;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use http::{header, Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kclient_core::{ApiError, ApiResource, DynamicObject, GroupResource, GroupVersionKind};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::actions::{ActionFilter, ActionLog, RecordedAction};
use crate::catalogue::ResourceInfo;
use crate::faults::Faults;
use crate::handler;
use crate::kubeconfig::{self, Credentials};
use crate::reactors::Reactors;
use crate::registry::{Registry, WriteOptions};
use crate::response::{self, Body};
use crate::state::{Auth, FaultState, Settings, Shared};
use crate::store::{object_key, StoreState};
use crate::tls::{Authority, CertifiedKey};
use crate::{wait, Error};

/// Builds a [`FakeApiServer`].
#[derive(Debug, Clone)]
pub struct FakeApiServerBuilder {
    ip: IpAddr,
    port: u16,
    settings: Settings,
    https: bool,
    auth: Auth,
    objects: Vec<Value>,
}

impl Default for FakeApiServerBuilder {
    fn default() -> Self {
        Self {
            ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            settings: Settings::default(),
            https: false,
            auth: Auth::default(),
            objects: Vec::new(),
        }
    }
}

impl FakeApiServerBuilder {
    /// Turns kube-apiserver's alpha feature gate `ShardedListAndWatch` on or off (off by
    /// default, as in kube-apiserver 1.37): with it, lists and watches honour
    /// `shardSelector` and lists carry `metadata.shardInfo` (see
    /// [`kclient_core::sharding`]); without it the parameter is ignored.
    pub fn sharded_list_and_watch(mut self, enabled: bool) -> Self {
        self.settings.sharded_list_and_watch = enabled;
        self
    }

    /// Listens on this port of 127.0.0.1 (0, the default, picks a free one).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Listens on this loopback address instead of 127.0.0.1 (for example `::1`).
    pub fn ip(mut self, ip: IpAddr) -> Self {
        self.ip = ip;
        self
    }

    /// Starts the server's resourceVersions at `rv`, as a server restarted on a later etcd
    /// revision: objects seeded into it come after every resourceVersion a client saw from a
    /// previous server.
    pub fn start_resource_version(mut self, rv: u64) -> Self {
        self.settings.start_resource_version = rv;
        self
    }

    /// How many events of history the server keeps (default 10,000).
    pub fn history_window(mut self, events: usize) -> Self {
        self.settings.history_window = events;
        self
    }

    /// Sends watch bookmarks this often (default 60 s, tokio's clock).
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.settings.bookmark_interval = interval;
        self
    }

    /// Ends watches without `timeoutSeconds` after this long (default 30 minutes).
    pub fn watch_timeout(mut self, timeout: Duration) -> Self {
        self.settings.watch_timeout = timeout;
        self
    }

    /// Keeps the most recent `actions` recorded actions (default
    /// [`DEFAULT_ACTION_HISTORY`](crate::DEFAULT_ACTION_HISTORY)); 0 records none,
    /// as a long-running server that nobody asks may prefer.
    pub fn action_history(mut self, actions: usize) -> Self {
        self.settings.action_history = actions;
        self
    }

    /// Serves HTTPS with a generated certificate authority.
    pub fn https(mut self) -> Self {
        self.https = true;
        self
    }

    /// Requires authentication and accepts this bearer token (may be called several times).
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.auth.tokens.push(token.into());
        self
    }

    /// Requires authentication and accepts client certificates signed by the server's CA
    /// (implies [`https`](Self::https)).
    pub fn client_cert_auth(mut self) -> Self {
        self.auth.client_certs = true;
        self.https = true;
        self
    }

    /// Preloads an object (any kind the catalogue knows; namespaces it needs are created).
    pub fn object(mut self, object: Value) -> Self {
        self.objects.push(object);
        self
    }

    /// Preloads objects.
    pub fn objects(mut self, objects: impl IntoIterator<Item = Value>) -> Self {
        self.objects.extend(objects);
        self
    }

    /// Starts serving.
    pub async fn start(self) -> Result<FakeApiServer, Error> {
        let listener = TcpListener::bind(SocketAddr::new(self.ip, self.port)).await?;
        let addr = listener.local_addr()?;
        let authority = if self.https {
            Some(Authority::generate()?)
        } else {
            None
        };
        let tls = match &authority {
            Some(a) => Some(tokio_rustls::TlsAcceptor::from(a.server_config()?)),
            None => None,
        };
        let registry = Registry::new(self.settings.history_window);
        registry
            .store
            .mutate(|s| s.advance_to(self.settings.start_resource_version));
        let shared = Arc::new(Shared {
            registry,
            faults: FaultState::default(),
            actions: ActionLog::new(self.settings.action_history),
            settings: self.settings,
            pod_logs: Default::default(),
            streaming: Default::default(),
            addr,
            auth: self.auth,
        });
        create_system_namespaces(&shared)?;
        let (shutdown, stop) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(accept(listener, tls, shared.clone(), stop));
        let server = FakeApiServer {
            shared,
            addr,
            authority,
            shutdown,
            task: Some(task),
        };
        for obj in self.objects {
            server.seed(obj)?;
        }
        // The watch history starts with the state the server starts with, as kube-apiserver's
        // watch cache starts from a list: a watch from an older resourceVersion (such as 1)
        // gets `410 Expired`.
        server
            .shared
            .registry
            .store
            .mutate(StoreState::start_history_here);
        Ok(server)
    }
}

/// The namespaces every cluster starts with.
fn create_system_namespaces(shared: &Shared) -> Result<(), Error> {
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let info = shared
            .registry
            .catalogue
            .get("", "v1", "namespaces")
            .ok_or_else(|| Error::Tls("no namespaces resource".into()))?;
        shared.registry.create_now(
            &info,
            "",
            serde_json::json!({"metadata": {"name": ns}}),
            &WriteOptions::default(),
        )?;
    }
    Ok(())
}

/// Accepts and serves connections (over TLS with `tls`) until `stop` changes; then drops
/// the connections still open.
async fn accept(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let shared = shared.clone();
                let tls = tls.clone();
                connections.spawn(async move {
                    match tls {
                        Some(acceptor) => {
                            // A client that never finishes its handshake is dropped.
                            let handshake = tokio::time::timeout(READ_HEADER_TIMEOUT, acceptor.accept(stream));
                            let Ok(Ok(stream)) = handshake.await else { return };
                            let user = client_identity(stream.get_ref().1.peer_certificates());
                            serve_connection(stream, shared, user).await;
                        }
                        None => serve_connection(stream, shared, None).await,
                    }
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = stop.changed() => break,
        }
    }
    connections.abort_all();
}

/// The user a verified client certificate names (see [`crate::request::user_info`]).
fn client_identity(
    certificates: Option<&[rustls::pki_types::CertificateDer<'_>]>,
) -> Option<Arc<Value>> {
    let first = certificates?.first()?;
    let identity = crate::tls::certificate_identity(first)?;
    Some(Arc::new(crate::request::user_info(Some(identity))))
}

/// Serves one connection; `user` is who its client certificate names, if it has one.
async fn serve_connection<IO>(io: IO, shared: Arc<Shared>, user: Option<Arc<Value>>)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let first_request = Arc::new(tokio::sync::Notify::new());
    let service = {
        let first_request = Arc::clone(&first_request);
        hyper::service::service_fn(move |req: Request<Incoming>| {
            first_request.notify_one();
            let (shared, user) = (shared.clone(), user.clone());
            async move { Ok::<_, Infallible>(dispatch(shared, req, user).await) }
        })
    };
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(READ_HEADER_TIMEOUT);
    // With upgrades: exec, attach and port-forward switch their connection to WebSocket or
    // SPDY (see the `streaming` module).
    let connection = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    let mut connection = std::pin::pin!(connection);
    // Until a first request has arrived (protocol detection, a slow first header), the
    // connection gets READ_HEADER_TIMEOUT; later requests' headers get it from hyper.
    tokio::select! {
        _ = connection.as_mut() => return,
        _ = first_request.notified() => {}
        _ = tokio::time::sleep(READ_HEADER_TIMEOUT) => return,
    }
    let _ = connection.await;
}

/// kube-apiserver's `ReadHeaderTimeout` (32 s, "just shy of" its request-timeout bound): how
/// long a connection may take to deliver a request's headers, TLS handshake included.
const READ_HEADER_TIMEOUT: Duration = Duration::from_secs(32);

fn authenticated(shared: &Shared, req: &Request<Incoming>, client_cert: bool) -> bool {
    if !shared.auth.required() || (shared.auth.client_certs && client_cert) {
        return true;
    }
    let path = req.uri().path();
    if matches!(path, "/healthz" | "/livez" | "/readyz") {
        return true;
    }
    req.headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| shared.auth.tokens.iter().any(|ok| ok == t.trim()))
}

async fn dispatch(
    shared: Arc<Shared>,
    mut req: Request<Incoming>,
    user: Option<Arc<Value>>,
) -> Response<Body> {
    if !authenticated(&shared, &req, user.is_some()) {
        return response::error(&crate::errors::unauthorized());
    }
    if let Some(user) = user {
        req.extensions_mut().insert(user);
    }
    let req = match crate::streaming::try_serve(&shared, req).await {
        Ok(res) => return res,
        Err(req) => req,
    };
    match crate::request::read_request(req).await {
        Ok(req) => handler::handle(shared, req).await,
        Err(e) => response::error(&e),
    }
}

/// An in-memory Kubernetes API server listening on loopback. See the crate documentation.
///
/// Dropping it stops it (like [`shutdown`](Self::shutdown), without waiting).
#[derive(Debug)]
pub struct FakeApiServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    authority: Option<Authority>,
    shutdown: tokio::sync::watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl FakeApiServer {
    /// A builder with the defaults: 127.0.0.1, a free port, plain HTTP, no authentication.
    pub fn builder() -> FakeApiServerBuilder {
        FakeApiServerBuilder::default()
    }

    /// Starts a server with the defaults.
    pub async fn start() -> Result<Self, Error> {
        Self::builder().start().await
    }

    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL, `http://127.0.0.1:PORT` (or `https://`).
    pub fn url(&self) -> String {
        let scheme = if self.authority.is_some() {
            "https"
        } else {
            "http"
        };
        match self.addr.ip() {
            IpAddr::V6(ip) => format!("{scheme}://[{ip}]:{}", self.addr.port()),
            IpAddr::V4(ip) => format!("{scheme}://{ip}:{}", self.addr.port()),
        }
    }

    /// The CA certificate (PEM) when serving HTTPS.
    pub fn ca_certificate_pem(&self) -> Option<&str> {
        self.authority.as_ref().map(|a| a.ca_pem.as_str())
    }

    /// Sends the webhook calls (admission and CRD conversion) addressed to Service
    /// `namespace/name` (a `clientConfig.service`, any port) to `address`: the fake runs no
    /// Service, so a test serving a webhook on loopback maps the Service to its listener.
    /// The TLS server name stays `<name>.<namespace>.svc`, as kube-apiserver's, so the
    /// webhook's certificate must name it.
    pub fn route_service(&self, namespace: &str, name: &str, address: SocketAddr) {
        self.shared.registry.services.set(namespace, name, address);
    }

    /// Issues a client certificate for user `common_name` in `groups` (HTTPS only).
    pub fn issue_client_certificate(
        &self,
        common_name: &str,
        groups: &[&str],
    ) -> Result<CertifiedKey, Error> {
        match &self.authority {
            Some(a) => a.client_certificate(common_name, groups),
            None => Err(Error::Tls("the server does not serve HTTPS".into())),
        }
    }

    /// The credentials a kubeconfig for this server carries: its first token, or else a
    /// fresh client certificate when client-certificate authentication is on.
    fn credentials(&self) -> Result<Credentials, Error> {
        if let Some(t) = self.shared.auth.tokens.first() {
            return Ok(Credentials::Token(t.clone()));
        }
        if self.shared.auth.client_certs {
            let c = self.issue_client_certificate("kclient-fake-admin", &["system:masters"])?;
            return Ok(Credentials::ClientCertificate {
                cert_pem: c.cert_pem,
                key_pem: c.key_pem,
            });
        }
        Ok(Credentials::None)
    }

    /// A kclient-rest configuration for this server: its URL, its CA (HTTPS), its first
    /// token or a fresh client certificate (when authentication is on), namespace
    /// `default`, and no client-side rate limit (a test server needs no protection from
    /// its tests).
    pub fn config(&self) -> Result<kclient_rest::Config, Error> {
        let mut config = kclient_rest::Config::new(self.url());
        config.tls.ca_data = self.ca_certificate_pem().map(|p| p.as_bytes().to_vec());
        match self.credentials()? {
            Credentials::None => {}
            Credentials::Token(t) => config.bearer_token = Some(t),
            Credentials::ClientCertificate { cert_pem, key_pem } => {
                config.tls.cert_data = Some(cert_pem.into_bytes());
                config.tls.key_data = Some(key_pem.into_bytes());
            }
        }
        config.namespace = Some("default".into());
        config.qps = None;
        Ok(config)
    }

    /// A kubeconfig (YAML) that kubectl and kclient-rest can use to reach this server.
    pub fn kubeconfig_yaml(&self) -> Result<String, Error> {
        Ok(kubeconfig::render(
            &self.url(),
            self.ca_certificate_pem(),
            &self.credentials()?,
            "default",
        ))
    }

    /// Writes [`kubeconfig_yaml`](Self::kubeconfig_yaml) to `path`.
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        std::fs::write(path, self.kubeconfig_yaml()?)?;
        Ok(())
    }

    /// Fault injection on this server.
    pub fn faults(&self) -> Faults {
        Faults {
            shared: self.shared.clone(),
        }
    }

    /// The reactor chain of this server: reactors that fail, answer or delay the requests
    /// they pick (see [`Reactor`](crate::Reactor)).
    pub fn reactors(&self) -> Reactors {
        Reactors {
            chain: self.shared.faults.reactors.clone(),
        }
    }

    /// Every recorded action, oldest first (client-go's fake `Actions()`; see
    /// [`RecordedAction`]).
    pub fn actions(&self) -> Vec<RecordedAction> {
        let all = self.shared.actions.all();
        wait::note(|| format!("the recorded actions: {}", all.len()));
        all
    }

    /// The recorded actions `filter` picks, oldest first.
    pub fn actions_matching(&self, filter: &ActionFilter) -> Vec<RecordedAction> {
        let matching = self.shared.actions.matching(filter);
        wait::note(|| format!("the recorded actions {filter:?}: {}", matching.len()));
        matching
    }

    /// Forgets the recorded actions (client-go's `ClearActions()`).
    pub fn clear_actions(&self) {
        self.shared.actions.clear();
    }

    /// How many recorded actions the server let go since the last
    /// [`clear_actions`](Self::clear_actions), because it keeps only the most recent
    /// [`action_history`](FakeApiServerBuilder::action_history) ones: 0 means
    /// [`actions`](Self::actions) is every request since.
    pub fn actions_dropped(&self) -> u64 {
        self.shared.actions.dropped()
    }

    /// Waits until `condition` holds of the server's state (its objects, read with
    /// [`get`](Self::get), [`list`](Self::list) ..., and its recorded actions), at most
    /// `timeout` (tokio's clock). The condition is checked now and again after every change
    /// of the store and every new request, never by polling; a condition that holds at once
    /// returns at once.
    ///
    /// When it did not hold in time: [`Error::WaitTimeout`], which names the caller's line
    /// and what the condition read from the server when it was last checked (the objects it
    /// got, without their `managedFields`, the names it listed, how many actions it saw):
    ///
    /// ```text
    /// the condition at tests/web.rs:42:10 did not hold within 10s; it last read:
    /// deployments.apps default/web: {"apiVersion":"apps/v1",...,"status":{"replicas":2}}
    /// ```
    ///
    /// ```no_run
    /// # async fn demo(server: kclient_fake::FakeApiServer) -> Result<(), kclient_fake::Error> {
    /// use std::time::Duration;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// server
    ///     .wait_until(Duration::from_secs(10), |s| {
    ///         s.get::<ConfigMap>("default", "web-status").is_some()
    ///     })
    ///     .await?;
    /// # Ok(()) }
    /// ```
    #[track_caller]
    pub fn wait_until<'a>(
        &'a self,
        timeout: Duration,
        mut condition: impl FnMut(&Self) -> bool + 'a,
    ) -> impl Future<Output = Result<(), Error>> + 'a {
        let location = Location::caller();
        async move {
            // Subscribed before the first check: a change between the check and the wait is
            // not missed.
            let mut store = self.shared.registry.store.subscribe();
            let mut actions = self.shared.actions.subscribe();
            let deadline = tokio::time::Instant::now() + timeout;
            loop {
                let (holds, read) = wait::noting_reads(|| condition(self));
                if holds {
                    return Ok(());
                }
                // Both senders live in the server's shared state, as long as `self`: neither
                // `changed` can report a closed channel here.
                tokio::select! {
                    _ = store.changed() => {}
                    _ = actions.changed() => {}
                    () = tokio::time::sleep_until(deadline) => {
                        return Err(Error::WaitTimeout {
                            timeout,
                            location,
                            last_read: wait::describe(&read),
                        });
                    }
                }
            }
        }
    }

    /// Sets what `GET pods/{pod}/log?container={container}` answers (the fake server runs
    /// no containers, so tests script their logs).
    pub fn set_pod_log(&self, namespace: &str, pod: &str, container: &str, text: &str) {
        self.shared.pod_logs.set(namespace, pod, container, text);
    }

    /// The state every connection shares (for the modules that extend the handle).
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// The current resourceVersion of the store.
    pub fn resource_version(&self) -> u64 {
        self.shared.registry.store.read().current_rv()
    }

    /// Serves a new resource (a built-in the catalogue lacks, or a custom resource without a
    /// CRD object).
    pub fn register(&self, info: ResourceInfo) {
        self.shared.registry.catalogue.register(info);
    }

    /// Every resource served, in discovery order.
    pub fn resources(&self) -> Vec<ResourceInfo> {
        self.shared
            .registry
            .catalogue
            .all()
            .iter()
            .map(|i| (**i).clone())
            .collect()
    }

    fn info_for(&self, api_version: &str, kind: &str) -> Result<Arc<ResourceInfo>, ApiError> {
        let gvk = GroupVersionKind::from_api_version_kind(api_version, kind)
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        self.shared.registry.catalogue.by_kind(&gvk).ok_or_else(|| {
            ApiError::bad_request(format!(
                "no resource of kind {kind:?} in {api_version:?} is served"
            ))
        })
    }

    /// Stores an object directly (no HTTP, no injected faults): any kind the catalogue knows,
    /// identified by its `apiVersion` and `kind`. Namespaced objects without a namespace go
    /// to `default`; a missing namespace is created. The server sets `uid`,
    /// `creationTimestamp` and `resourceVersion` as on create, but keeps `status` as given.
    /// Returns the stored object.
    pub fn seed(&self, object: Value) -> Result<Value, ApiError> {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
        let info = self.info_for(api_version, kind)?;
        let mut ns = crate::meta::meta_str(&object, "namespace").to_string();
        if info.namespaced() && ns.is_empty() {
            ns = "default".to_string();
        }
        if info.namespaced() {
            let namespaces = self
                .shared
                .registry
                .catalogue
                .get("", "v1", "namespaces")
                .ok_or_else(|| ApiError::internal_error("no namespaces resource"))?;
            if self.shared.registry.get(&namespaces, "", &ns).is_err() {
                self.shared.registry.create_now(
                    &namespaces,
                    "",
                    serde_json::json!({"metadata": {"name": ns}}),
                    &WriteOptions::default(),
                )?;
            }
        }
        let opts = WriteOptions {
            seed: true,
            ..WriteOptions::default()
        };
        let out = self.shared.registry.create_now(&info, &ns, object, &opts);
        self.shared.registry.settle();
        out
    }

    /// Stores a typed object (see [`seed`](Self::seed)).
    pub fn seed_typed<K>(&self, object: &K) -> Result<K, ApiError>
    where
        K: k8s_openapi::Resource + Serialize + DeserializeOwned,
    {
        let mut v =
            serde_json::to_value(object).map_err(|e| ApiError::bad_request(e.to_string()))?;
        if let Some(m) = v.as_object_mut() {
            m.insert("apiVersion".into(), Value::String(K::API_VERSION.into()));
            m.insert("kind".into(), Value::String(K::KIND.into()));
        }
        let stored = self.seed(v)?;
        serde_json::from_value(stored).map_err(|e| ApiError::internal_error(&e.to_string()))
    }

    /// Changes an object directly (no HTTP, no injected faults): `change` edits the stored
    /// JSON, then the server moves the resourceVersion and tells watchers (`MODIFIED`).
    /// Returns the stored object; `404` if there is none.
    ///
    /// It is a write of the whole object, `status` included: the fake runs no controllers,
    /// so a test plays them by writing what they would (a Deployment's `readyReplicas`, a
    /// Pod's `phase`), which a client could only write through the `status` subresource.
    /// Otherwise it is checked as an update of the main resource (immutable fields,
    /// `generation` moved by spec changes, a custom resource's schema).
    ///
    /// ```no_run
    /// # fn demo(server: &kclient_fake::FakeApiServer) -> Result<(), kclient_core::ApiError> {
    /// use kclient_core::GroupResource;
    /// use serde_json::json;
    ///
    /// // The deployment controller's work, done by the test: two replicas ready.
    /// server.modify(&GroupResource::new("apps", "deployments"), "default", "web", |d| {
    ///     d["status"] = json!({"replicas": 2, "readyReplicas": 2, "availableReplicas": 2});
    /// })?;
    /// # Ok(()) }
    /// ```
    pub fn modify(
        &self,
        resource: &GroupResource,
        namespace: &str,
        name: &str,
        change: impl FnOnce(&mut Value),
    ) -> Result<Value, ApiError> {
        let registry = &self.shared.registry;
        let info = registry
            .catalogue
            .any_version(resource)
            .ok_or_else(|| ApiError::not_found(resource, name))?;
        let mut change = Some(change);
        let out = registry.update_now(
            &info,
            namespace,
            name,
            crate::registry::Part::Main,
            &WriteOptions {
                seed: true,
                ..WriteOptions::default()
            },
            |current| {
                let mut obj = current
                    .cloned()
                    .ok_or_else(|| ApiError::not_found(resource, name))?;
                // Another write between the read and the write: the change is not
                // repeated (it is `FnOnce`).
                let change = change
                    .take()
                    .ok_or_else(|| crate::errors::stale_resource_version(resource, name))?;
                change(&mut obj);
                Ok(obj)
            },
        );
        registry.settle();
        out.map(|(object, _)| object)
    }

    /// Deletes an object directly (no HTTP, no injected faults), as a `DELETE` with the
    /// default propagation would (finalizers hold it; dependents are collected).
    pub fn remove(
        &self,
        resource: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        let registry = &self.shared.registry;
        let info = registry
            .catalogue
            .any_version(resource)
            .ok_or_else(|| ApiError::not_found(resource, name))?;
        let out = registry.delete_now(
            &info,
            namespace,
            name,
            &kclient_core::DeleteOptions::default(),
        );
        registry.settle();
        out.map(|_| ())
    }

    /// The object `name` of `resource` (`namespace` `""` for cluster-scoped), read directly
    /// from the store.
    pub fn get_value(
        &self,
        resource: &GroupResource,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        let state = self.shared.registry.store.read();
        let found = state
            .get(resource, &object_key(namespace, name))
            .map(|o| o.value.clone());
        wait::note(|| {
            let shown = found.as_ref().map_or("absent".into(), wait::object);
            format!("{resource} {}: {shown}", object_key(namespace, name))
        });
        found
    }

    /// A typed object read directly from the store: any k8s-openapi type, or any type with
    /// k8s-openapi's `Resource` (kclient's generated CRD types have it). `None` when there is
    /// no such object, or it does not deserialize as `K`.
    pub fn get<K>(&self, namespace: &str, name: &str) -> Option<K>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        self.get_as(
            &GroupResource::new(K::GROUP, K::URL_PATH_SEGMENT),
            namespace,
            name,
        )
    }

    /// An object of `resource` read directly from the store as any type it deserializes
    /// into, for types that do not implement k8s-openapi's `Resource`: a kube-derive
    /// `#[derive(CustomResource)]` type (which implements kube's own `Resource`), or a
    /// struct of the test's own. `None` when there is no such object, or it does not
    /// deserialize as `T`.
    ///
    /// ```no_run
    /// # #[derive(serde::Deserialize)] struct Memcached {}
    /// # fn demo(server: &kclient_fake::FakeApiServer) {
    /// use kclient_core::GroupResource;
    ///
    /// let memcacheds = GroupResource::new("cache.example.com", "memcacheds");
    /// let m: Option<Memcached> = server.get_as(&memcacheds, "default", "cache");
    /// # }
    /// ```
    pub fn get_as<T>(&self, resource: &GroupResource, namespace: &str, name: &str) -> Option<T>
    where
        T: DeserializeOwned,
    {
        serde_json::from_value(self.get_value(resource, namespace, name)?).ok()
    }

    /// A dynamic object read directly from the store.
    pub fn get_dynamic(
        &self,
        resource: &ApiResource,
        namespace: &str,
        name: &str,
    ) -> Option<DynamicObject> {
        self.get_as(
            &GroupResource::new(resource.group.clone(), resource.plural.clone()),
            namespace,
            name,
        )
    }

    /// Every object of `resource` (in `namespace`, if given), in key order, read directly
    /// from the store.
    pub fn list_values(&self, resource: &GroupResource, namespace: Option<&str>) -> Vec<Value> {
        let state = self.shared.registry.store.read();
        let all: Vec<Value> = state
            .range(resource, namespace, None)
            .map(|(_, o)| o.value.clone())
            .collect();
        wait::note(|| {
            let names: Vec<&str> = all
                .iter()
                .map(|o| crate::meta::meta_str(o, "name"))
                .collect();
            let place = namespace.map_or("all namespaces".into(), |ns| format!("namespace {ns}"));
            format!(
                "{resource} in {place}: {} ({})",
                names.len(),
                names.join(", ")
            )
        });
        all
    }

    /// Every typed object of `K` (in `namespace`, if given), read directly from the store
    /// (see [`get`](Self::get); those that do not deserialize as `K` are left out).
    pub fn list<K>(&self, namespace: Option<&str>) -> Vec<K>
    where
        K: k8s_openapi::Resource + DeserializeOwned,
    {
        self.list_as(
            &GroupResource::new(K::GROUP, K::URL_PATH_SEGMENT),
            namespace,
        )
    }

    /// Every object of `resource` (in `namespace`, if given) as any type it deserializes
    /// into (see [`get_as`](Self::get_as); those that do not are left out).
    pub fn list_as<T>(&self, resource: &GroupResource, namespace: Option<&str>) -> Vec<T>
    where
        T: DeserializeOwned,
    {
        self.list_values(resource, namespace)
            .into_iter()
            .filter_map(|v| serde_json::from_value(v).ok())
            .collect()
    }

    /// Stops accepting connections, closes the open ones (watches end) and waits for the
    /// server task.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for FakeApiServer {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
