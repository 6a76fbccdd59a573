//! Recorded actions: every request the server saw, as client-go's fake clientset records
//! them ([`RecordedAction`], [`ActionFilter`], and the server's log of them, [`ActionLog`]).

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use http::{header, Method};
use kclient_core::{GroupVersionResource, PatchType};
use parking_lot::Mutex;
use serde_json::Value;

use crate::catalogue::{Catalogue, ResourceInfo};
use crate::query::Query;
use crate::request::ApiRequest;
use crate::router::{route, Route};

/// How many actions a server keeps by default (the most recent ones).
pub const DEFAULT_ACTION_HISTORY: usize = 10_000;

/// One request the server saw: client-go's fake `testing.Action`, with what its
/// `CreateAction`, `UpdateAction`, `PatchAction` ... carry. The server records every request,
/// in arrival order ([`FakeApiServer::actions`](crate::FakeApiServer::actions),
/// [`actions_matching`](crate::FakeApiServer::actions_matching),
/// [`clear_actions`](crate::FakeApiServer::clear_actions), as client-go's `Actions()` and
/// `ClearActions()`), so that a test can assert what the code under test asked for: "the
/// controller created exactly these objects, and patched that one with a merge patch".
///
/// An action is what kube-apiserver's request-info resolver makes of a request: the verb
/// (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`: the
/// verbs of its audit log and of RBAC, where client-go's fake says `delete-collection`), the
/// resource, subresource, namespace and name, and what came with it (the patch type, the
/// body, the query, the user agent). Requests that address no resource (discovery,
/// `/version`, `/healthz`) are recorded too, with the lower-cased method as verb and no
/// resource. Every authenticated request is recorded before anything answers it, so those
/// a [`Reactor`](crate::Reactor) or an injected fault answered, and those the server
/// refused, are in the log as well.
///
/// The server keeps the most recent [`DEFAULT_ACTION_HISTORY`] actions unless its builder
/// says otherwise ([`action_history`](crate::FakeApiServerBuilder::action_history)); how
/// many older ones it let go is
/// [`actions_dropped`](crate::FakeApiServer::actions_dropped), so that a test never takes
/// a trimmed log for a complete one.
///
/// ```no_run
/// # async fn demo() -> Result<(), kclient_fake::Error> {
/// use kclient_fake::{ActionFilter, FakeApiServer};
///
/// let server = FakeApiServer::builder().start().await?;
/// // ... run the code under test ...
/// let created: Vec<String> = server
///     .actions_matching(&ActionFilter::new("create", "configmaps").namespace("default"))
///     .iter()
///     .filter_map(|a| a.object())
///     .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
///     .collect();
/// assert_eq!(created, ["settings"]);
/// server.clear_actions();
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RecordedAction {
    /// kube-apiserver's verb for the request: `get`, `list`, `watch`, `create`, `update`,
    /// `patch`, `delete` or `deletecollection` on a resource; the lower-cased method for a
    /// request that addresses no resource.
    pub verb: String,
    /// The resource addressed (its group, version and plural), `None` for discovery,
    /// `/version`, health checks and other paths that address no resource.
    pub resource: Option<GroupVersionResource>,
    /// The subresource (`status`, `scale`, `log`, `exec` ...), if any.
    pub subresource: Option<String>,
    /// The namespace of the path, if any.
    pub namespace: Option<String>,
    /// The object's name, if the path names one.
    pub name: Option<String>,
    /// The request path.
    pub path: String,
    /// The raw query string, if any.
    pub query: Option<String>,
    /// The kind of patch, for a `PATCH` whose `Content-Type` names one.
    pub patch_type: Option<PatchType>,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The `User-Agent` header, if any.
    pub user_agent: Option<String>,
    /// The request body, as sent.
    pub body: Bytes,
    /// The served resource, to decode a protobuf body with its kind's codec.
    info: Option<Arc<ResourceInfo>>,
}

impl RecordedAction {
    /// The action a request is, resolved as kube-apiserver's request-info resolver does
    /// (`catalogue` finds the resource, whose codec reads a protobuf body).
    pub(crate) fn from_request(req: &ApiRequest, catalogue: Option<&Catalogue>) -> Self {
        let header = |name: header::HeaderName| {
            req.headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let content_type = header(header::CONTENT_TYPE);
        let mut action = RecordedAction {
            verb: req.method.as_str().to_ascii_lowercase(),
            resource: None,
            subresource: None,
            namespace: None,
            name: None,
            path: req.path.clone(),
            query: req.query.clone(),
            patch_type: None,
            content_type: content_type.clone(),
            user_agent: header(header::USER_AGENT),
            body: req.body.clone(),
            info: None,
        };
        let Route::Resource(path) = route(&req.path) else {
            return action;
        };
        let watch_param = || {
            Query::parse(req.query.as_deref())
                .bool("watch")
                .ok()
                .flatten()
                .unwrap_or(false)
        };
        let collection = path.name.is_none();
        action.verb = match req.method {
            Method::GET if path.watch_prefix || watch_param() => "watch",
            Method::GET if collection => "list",
            Method::GET | Method::HEAD => "get",
            Method::POST => "create",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE if collection => "deletecollection",
            Method::DELETE => "delete",
            _ => return action,
        }
        .to_string();
        if req.method == Method::PATCH {
            action.patch_type = content_type
                .as_deref()
                .and_then(PatchType::from_content_type);
        }
        action.info = catalogue.and_then(|c| c.get(&path.group, &path.version, &path.resource));
        action.resource = Some(GroupVersionResource::new(
            path.group,
            path.version,
            path.resource,
        ));
        action.subresource = path.subresource;
        action.namespace = path.namespace;
        action.name = path.name;
        action
    }

    /// Whether this is `verb` on `resource`, as client-go's `Action.Matches`: `resource` is a
    /// plural (`"pods"`, in any group), which matches every action on that resource, its
    /// subresources included, or a plural and a subresource (`"pods/status"`), which matches
    /// that subresource only; both compare without regard to ASCII case.
    pub fn matches(&self, verb: &str, resource: &str) -> bool {
        if !self.verb.eq_ignore_ascii_case(verb) {
            return false;
        }
        let Some(gvr) = &self.resource else {
            return false;
        };
        match resource.split_once('/') {
            None => gvr.resource.eq_ignore_ascii_case(resource),
            Some((top, sub)) => {
                gvr.resource.eq_ignore_ascii_case(top)
                    && self
                        .subresource
                        .as_deref()
                        .is_some_and(|s| s.eq_ignore_ascii_case(sub))
            }
        }
    }

    /// The body as JSON: a JSON or YAML body parsed, a Kubernetes protobuf body of a built-in
    /// kind decoded with its codec; `None` for an empty body or one that is none of these.
    pub fn object(&self) -> Option<Value> {
        if self.body.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let media = self
            .content_type
            .as_deref()
            .and_then(|c| c.split(';').next())
            .unwrap_or("")
            .trim();
        if media == crate::protobuf::PROTOBUF {
            let info = self.info.as_deref()?;
            return crate::protobuf::decode_body(&self.body, info).ok();
        }
        if media.ends_with("yaml") {
            return crate::manifests::parse_yaml_body(&self.body).ok();
        }
        serde_json::from_slice(&self.body).ok()
    }

    /// The first value of a query parameter, percent-decoded (`labelSelector`,
    /// `resourceVersion`, `dryRun`, `fieldManager` ...).
    pub fn query_param(&self, name: &str) -> Option<String> {
        Query::parse(self.query.as_deref())
            .get(name)
            .map(str::to_string)
    }
}

/// Which actions to pick: a verb and a resource as client-go's reactors take them, narrowed
/// by namespace, name, subresource and user agent. Used to filter the recorded actions
/// ([`FakeApiServer::actions_matching`](crate::FakeApiServer::actions_matching)) and to say
/// which requests a [`Reactor`](crate::Reactor) reacts to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionFilter {
    verb: String,
    resource: String,
    subresource: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    user_agent: Option<String>,
}

impl ActionFilter {
    /// `verb` on `resource`, as client-go's `AddReactor(verb, resource, ...)`: `"*"` for any
    /// verb or any resource (any request, those that address no resource included); a
    /// resource is a plural, which matches the resource and its subresources, or
    /// `"plural/subresource"` (`"pods/status"`), which matches that subresource only.
    pub fn new(verb: impl Into<String>, resource: impl Into<String>) -> Self {
        let resource: String = resource.into();
        let (resource, subresource) = match resource.split_once('/') {
            Some((top, sub)) => (top.to_string(), Some(sub.to_string())),
            None => (resource, None),
        };
        Self {
            verb: verb.into(),
            resource,
            subresource,
            namespace: None,
            name: None,
            user_agent: None,
        }
    }

    /// Every request.
    pub fn any() -> Self {
        Self::new("*", "*")
    }

    /// Only requests in this namespace (the namespace of the path).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Only requests naming this object.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Only requests on this subresource (the same as `"plural/subresource"`).
    pub fn subresource(mut self, subresource: impl Into<String>) -> Self {
        self.subresource = Some(subresource.into());
        self
    }

    /// Only requests whose `User-Agent` starts with `prefix` (for example the program name a
    /// client puts first, `my-controller/v0.1.0 ...`), so that faults meant for the code
    /// under test leave the test's own requests alone.
    pub fn user_agent(mut self, prefix: impl Into<String>) -> Self {
        self.user_agent = Some(prefix.into());
        self
    }

    /// Whether `action` is one of the actions this filter picks.
    pub fn matches(&self, action: &RecordedAction) -> bool {
        let verb = self.verb == "*" || self.verb.eq_ignore_ascii_case(&action.verb);
        let resource = self.resource == "*"
            || action
                .resource
                .as_ref()
                .is_some_and(|r| r.resource.eq_ignore_ascii_case(&self.resource));
        let equal = |want: &Option<String>, got: &Option<String>| {
            want.as_ref().is_none_or(|w| got.as_ref() == Some(w))
        };
        let user_agent = self.user_agent.as_ref().is_none_or(|prefix| {
            action
                .user_agent
                .as_deref()
                .is_some_and(|ua| ua.starts_with(prefix.as_str()))
        });
        verb && resource
            && equal(&self.subresource, &action.subresource)
            && equal(&self.namespace, &action.namespace)
            && equal(&self.name, &action.name)
            && user_agent
    }
}

/// The recorded actions of one server.
#[derive(Debug)]
pub(crate) struct ActionLog {
    state: Mutex<LogState>,
    limit: usize,
    /// The number of actions recorded so far, for waiters.
    changed: tokio::sync::watch::Sender<u64>,
}

#[derive(Debug, Default)]
struct LogState {
    actions: VecDeque<RecordedAction>,
    dropped: u64,
}

impl ActionLog {
    /// A log keeping the most recent `limit` actions (0: records nothing).
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            state: Mutex::new(LogState::default()),
            limit,
            changed: tokio::sync::watch::channel(0).0,
        }
    }

    /// Records `action`, letting the oldest go past the limit.
    pub(crate) fn record(&self, action: RecordedAction) {
        {
            let mut state = self.state.lock();
            if self.limit == 0 {
                state.dropped += 1;
            } else {
                if state.actions.len() == self.limit {
                    state.actions.pop_front();
                    state.dropped += 1;
                }
                state.actions.push_back(action);
            }
        }
        self.changed.send_modify(|n| *n += 1);
    }

    /// The recorded actions, oldest first.
    pub(crate) fn all(&self) -> Vec<RecordedAction> {
        self.state.lock().actions.iter().cloned().collect()
    }

    /// The recorded actions `filter` picks, oldest first.
    pub(crate) fn matching(&self, filter: &ActionFilter) -> Vec<RecordedAction> {
        let state = self.state.lock();
        state
            .actions
            .iter()
            .filter(|a| filter.matches(a))
            .cloned()
            .collect()
    }

    /// Forgets every recorded action (the count of dropped ones too).
    pub(crate) fn clear(&self) {
        let mut state = self.state.lock();
        state.actions.clear();
        state.dropped = 0;
    }

    /// How many actions were let go (past the limit) since the last clear.
    pub(crate) fn dropped(&self) -> u64 {
        self.state.lock().dropped
    }

    /// A receiver that changes with every recorded action.
    pub(crate) fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderMap;

    fn request(method: Method, path: &str, query: Option<&str>) -> ApiRequest {
        ApiRequest {
            method,
            path: path.into(),
            query: query.map(str::to_string),
            headers: HeaderMap::new(),
            body: Bytes::new(),
            user: None,
        }
    }

    fn action(method: Method, path: &str, query: Option<&str>) -> RecordedAction {
        RecordedAction::from_request(&request(method, path, query), None)
    }

    #[test]
    fn verbs_as_the_request_info_resolver_names_them() {
        let pods = "/api/v1/namespaces/ns/pods";
        let cases = [
            (Method::GET, pods, None, "list"),
            (Method::GET, pods, Some("watch=true"), "watch"),
            (Method::GET, pods, Some("watch=1"), "watch"),
            (
                Method::GET,
                "/api/v1/watch/namespaces/ns/pods",
                None,
                "watch",
            ),
            (Method::GET, "/api/v1/namespaces/ns/pods/p", None, "get"),
            (
                Method::GET,
                "/api/v1/namespaces/ns/pods/p",
                Some("watch=true"),
                "watch",
            ),
            (Method::POST, pods, None, "create"),
            (Method::PUT, "/api/v1/namespaces/ns/pods/p", None, "update"),
            (Method::PATCH, "/api/v1/namespaces/ns/pods/p", None, "patch"),
            (
                Method::DELETE,
                "/api/v1/namespaces/ns/pods/p",
                None,
                "delete",
            ),
            (Method::DELETE, pods, None, "deletecollection"),
            (Method::GET, "/apis", None, "get"),
        ];
        for (method, path, query, verb) in cases {
            assert_eq!(action(method, path, query).verb, verb, "{path} {query:?}");
        }
    }

    #[test]
    fn resource_subresource_namespace_and_name() {
        let a = action(
            Method::PUT,
            "/apis/apps/v1/namespaces/ns/deployments/web/status",
            None,
        );
        assert_eq!(
            a.resource,
            Some(GroupVersionResource::new("apps", "v1", "deployments"))
        );
        assert_eq!(a.subresource.as_deref(), Some("status"));
        assert_eq!(a.namespace.as_deref(), Some("ns"));
        assert_eq!(a.name.as_deref(), Some("web"));
        assert!(a.matches("update", "deployments"));
        assert!(a.matches("UPDATE", "Deployments/Status"));
        assert!(!a.matches("update", "deployments/scale"));
        assert!(!a.matches("patch", "deployments"));

        let discovery = action(Method::GET, "/api/v1", None);
        assert_eq!(discovery.resource, None);
        assert!(!discovery.matches("get", "pods"));
    }

    #[test]
    fn patch_type_from_the_content_type() {
        let mut req = request(Method::PATCH, "/api/v1/namespaces/ns/pods/p", None);
        req.headers.insert(
            header::CONTENT_TYPE,
            "application/merge-patch+json; charset=utf-8"
                .parse()
                .unwrap(),
        );
        req.body = Bytes::from_static(br#"{"metadata":{"labels":{"a":"b"}}}"#);
        let a = RecordedAction::from_request(&req, None);
        assert_eq!(a.patch_type, Some(PatchType::Merge));
        assert_eq!(
            a.object(),
            Some(serde_json::json!({"metadata": {"labels": {"a": "b"}}}))
        );
        let get = action(Method::GET, "/api/v1/namespaces/ns/pods/p", None);
        assert_eq!(get.patch_type, None);
        assert_eq!(get.object(), None);
    }

    #[test]
    fn filters() {
        let a = action(
            Method::PUT,
            "/apis/apps/v1/namespaces/ns/deployments/web/status",
            None,
        );
        assert!(ActionFilter::any().matches(&a));
        assert!(ActionFilter::new("update", "deployments").matches(&a));
        assert!(ActionFilter::new("*", "deployments/status").matches(&a));
        assert!(!ActionFilter::new("*", "deployments/scale").matches(&a));
        assert!(ActionFilter::new("update", "*")
            .namespace("ns")
            .name("web")
            .matches(&a));
        assert!(!ActionFilter::new("update", "*")
            .namespace("other")
            .matches(&a));
        assert!(!ActionFilter::new("update", "*").name("db").matches(&a));
        assert!(!ActionFilter::new("update", "*")
            .user_agent("ctl")
            .matches(&a));
        let discovery = action(Method::GET, "/apis", None);
        assert!(ActionFilter::any().matches(&discovery));
        assert!(!ActionFilter::new("get", "pods").matches(&discovery));

        let mut req = request(Method::GET, "/api/v1/namespaces/ns/pods", None);
        req.headers.insert(
            header::USER_AGENT,
            "my-controller/v1.0 (linux/amd64) kclient".parse().unwrap(),
        );
        let listed = RecordedAction::from_request(&req, None);
        assert!(ActionFilter::any()
            .user_agent("my-controller")
            .matches(&listed));
        assert!(!ActionFilter::any().user_agent("kubectl").matches(&listed));
    }

    #[test]
    fn the_log_keeps_the_most_recent_and_counts_the_others() {
        let log = ActionLog::new(2);
        for name in ["a", "b", "c"] {
            log.record(action(
                Method::GET,
                &format!("/api/v1/namespaces/ns/pods/{name}"),
                None,
            ));
        }
        let names: Vec<_> = log.all().into_iter().filter_map(|a| a.name).collect();
        assert_eq!(names, ["b", "c"]);
        assert_eq!(log.dropped(), 1);
        assert_eq!(log.matching(&ActionFilter::any().name("c")).len(), 1);
        log.clear();
        assert!(log.all().is_empty());
        assert_eq!(log.dropped(), 0);

        let off = ActionLog::new(0);
        off.record(action(Method::GET, "/version", None));
        assert!(off.all().is_empty());
        assert_eq!(off.dropped(), 1);
    }
}
