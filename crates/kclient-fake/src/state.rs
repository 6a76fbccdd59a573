//! The ground floor of the handlers' state: [`Shared`], what the server handle and every
//! connection share (the registry, faults, recorded actions, settings, scripted pod logs,
//! streaming handlers), and its parts that belong to no handler. It imports none of the
//! handler modules, which all import it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::Response;
use parking_lot::Mutex;

use crate::actions::{ActionLog, RecordedAction};
use crate::reactors::ReactorChain;
use crate::registry::Registry;
use crate::request::ApiRequest;
use crate::response::Body;

/// Tunables of a server.
#[derive(Debug, Clone)]
pub struct Settings {
    /// How many events the history keeps (watches and continue tokens older than that get
    /// `410 Expired`).
    pub history_window: usize,
    /// How often a watch with `allowWatchBookmarks` gets a bookmark.
    pub bookmark_interval: Duration,
    /// The resourceVersion the server starts at (0: its own, 1).
    pub start_resource_version: u64,
    /// How long a watch without `timeoutSeconds` lasts.
    pub watch_timeout: Duration,
    /// How many recorded actions the server keeps, the most recent ones (0: records none).
    pub action_history: usize,
    /// kube-apiserver's alpha feature gate `ShardedListAndWatch` (KEP-5866; off by default,
    /// as there): lists and watches honour `shardSelector`, lists say so in
    /// `metadata.shardInfo`. Off, the parameter is ignored, as kube-apiserver ignores it.
    pub sharded_list_and_watch: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            history_window: 10_000,
            start_resource_version: 0,
            bookmark_interval: Duration::from_secs(60),
            watch_timeout: Duration::from_secs(1800),
            action_history: crate::actions::DEFAULT_ACTION_HISTORY,
            sharded_list_and_watch: false,
        }
    }
}

/// Who may call the server.
#[derive(Debug, Clone, Default)]
pub(crate) struct Auth {
    pub(crate) tokens: Vec<String>,
    pub(crate) client_certs: bool,
}

impl Auth {
    pub(crate) fn required(&self) -> bool {
        !self.tokens.is_empty() || self.client_certs
    }
}

/// State shared by the server handle and every connection.
#[derive(Debug)]
pub struct Shared {
    pub(crate) registry: Registry,
    pub(crate) faults: FaultState,
    pub(crate) actions: ActionLog,
    pub(crate) settings: Settings,
    pub(crate) pod_logs: PodLogs,
    pub(crate) streaming: crate::streaming::handlers::Handlers,
    pub(crate) addr: SocketAddr,
    pub(crate) auth: Auth,
}

impl Shared {
    /// `host:port` of the listener.
    pub fn address(&self) -> String {
        self.addr.to_string()
    }

    /// What happens to every request before it is served: it is recorded, delayed by the
    /// injected latency and sent down the reactor chain, whose answer, if any, is the
    /// response.
    pub(crate) async fn intercept(&self, req: &ApiRequest) -> Option<Response<Body>> {
        let action = RecordedAction::from_request(req, Some(&self.registry.catalogue));
        self.actions.record(action.clone());
        let latency = self.faults.latency();
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        self.faults.reactors.react(&action).await
    }
}

/// Logs scripted by tests, per (namespace, pod, container).
#[derive(Debug, Default)]
pub struct PodLogs {
    logs: Mutex<HashMap<(String, String, String), String>>,
}

impl PodLogs {
    /// Sets the log of a container.
    pub fn set(&self, namespace: &str, pod: &str, container: &str, text: &str) {
        self.logs.lock().insert(
            (namespace.into(), pod.into(), container.into()),
            text.into(),
        );
    }

    pub(crate) fn get(&self, namespace: &str, pod: &str, container: &str) -> String {
        self.logs
            .lock()
            .get(&(namespace.into(), pod.into(), container.into()))
            .cloned()
            .unwrap_or_default()
    }
}

/// The fault state of one server.
#[derive(Debug)]
pub struct FaultState {
    /// The reactor chain: the tests' reactors and the failures of `fail_next`.
    pub(crate) reactors: Arc<ReactorChain>,
    pub(crate) latency: Mutex<Duration>,
    pub(crate) drop_watches: tokio::sync::watch::Sender<u64>,
    pub(crate) stall_watches: tokio::sync::watch::Sender<bool>,
    pub(crate) hang_watches: tokio::sync::watch::Sender<u64>,
}

impl Default for FaultState {
    fn default() -> Self {
        Self {
            reactors: Arc::default(),
            latency: Mutex::new(Duration::ZERO),
            drop_watches: tokio::sync::watch::channel(0).0,
            stall_watches: tokio::sync::watch::channel(false).0,
            hang_watches: tokio::sync::watch::channel(0).0,
        }
    }
}

impl FaultState {
    /// The latency to add to a request.
    pub fn latency(&self) -> Duration {
        *self.latency.lock()
    }
}
