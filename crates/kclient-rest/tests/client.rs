//! RestClient and Request against a plain HTTP test server: addressing, encoding, headers,
//! typed errors, warnings, timeouts and metrics hooks.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kclient_core::{ApiStatus, GroupVersion, ListOptions, ObjectList, Patch, PatchType};
use kclient_rest::{
    Error, ImpersonationConfig, RequestMetrics, RestClient, Warning, WarningHandler,
};
use parking_lot::Mutex;
use serde_json::json;
use support::{config, json, status, text, TestServer};

fn core() -> GroupVersion {
    GroupVersion::new("", "v1")
}

fn configmap(name: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns", "resourceVersion": "7"}, "data": {"k": "v"}})
}

#[tokio::test]
async fn get_decodes_typed_objects() {
    let server = TestServer::http(|_| async { json(200, configmap("a")) }).await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let cm: ConfigMap = client
        .get()
        .group_version(&core())
        .namespace("ns")
        .resource("configmaps")
        .name("a")
        .json()
        .await
        .unwrap();
    assert_eq!(cm.metadata.name.as_deref(), Some("a"));
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].uri.path(), "/api/v1/namespaces/ns/configmaps/a");
    assert_eq!(seen[0].header("accept"), Some("application/json, */*"));
    let ua = seen[0].header("user-agent").unwrap();
    assert!(ua.contains("kclient"), "{ua}");
}

#[tokio::test]
async fn list_params_are_encoded() {
    let server = TestServer::http(|_| async {
        json(200, json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": {"resourceVersion": "9"}, "items": [configmap("a"), configmap("b")]}))
    })
    .await;
    let client = RestClient::new(config(&server.url()))
        .unwrap()
        .for_group_version(core());
    let options = ListOptions::default()
        .labels("app in (web, api),tier!=db")
        .fields("metadata.name=a&b")
        .limit(500);
    let list: ObjectList<ConfigMap> = client
        .get()
        .resource("configmaps")
        .params(options.query_pairs())
        .json()
        .await
        .unwrap();
    assert_eq!(list.items.len(), 2);
    assert_eq!(list.resource_version(), Some("9"));
    let seen = &server.requests()[0];
    assert_eq!(seen.uri.path(), "/api/v1/configmaps");
    let query = seen.uri.query().unwrap();
    let pairs: Vec<(String, String)> = form_pairs(query);
    assert!(pairs.contains(&("labelSelector".into(), "app in (web, api),tier!=db".into())));
    assert!(pairs.contains(&("fieldSelector".into(), "metadata.name=a&b".into())));
    assert!(pairs.contains(&("limit".into(), "500".into())));
}

fn form_pairs(query: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect()
}

#[tokio::test]
async fn status_bodies_are_api_errors() {
    let server =
        TestServer::http(|_| async { status(404, "NotFound", "configmaps \"nope\" not found") })
            .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let err = client
        .get()
        .group_version(&core())
        .namespace("ns")
        .resource("configmaps")
        .name("nope")
        .json::<ConfigMap>()
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
    assert!(matches!(err, Error::Api(_)));
    assert_eq!(err.http_code(), Some(404));
    assert_eq!(
        err.to_string(),
        "configmaps \"nope\" not found (reason NotFound, code 404)"
    );
}

#[tokio::test]
async fn non_json_error_bodies_keep_code_and_snippet() {
    let server = TestServer::http(|_| async {
        text(
            502,
            "text/html",
            "<html><body>Bad Gateway from the proxy</body></html>",
        )
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let err = client.get().abs_path("/version").send().await.unwrap_err();
    match &err {
        Error::HttpStatus { code, snippet, .. } => {
            assert_eq!(*code, 502);
            assert!(snippet.contains("Bad Gateway from the proxy"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err.status_code(), Some(502));
    assert!(!err.is_not_found());
}

#[tokio::test]
async fn undecodable_success_bodies_are_decode_errors() {
    let server =
        TestServer::http(|_| async { text(200, "application/json", "{\"metadata\": 12}") }).await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let err = client
        .get()
        .abs_path("/x")
        .json::<ConfigMap>()
        .await
        .unwrap_err();
    match &err {
        Error::Decode { snippet, what, .. } => {
            assert!(snippet.contains("metadata"));
            assert!(what.contains("ConfigMap"));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        std::error::Error::source(&err).is_some(),
        "the JSON error is the source"
    );
}

#[tokio::test]
async fn create_update_patch_and_delete_send_bodies() {
    let server = TestServer::http(|r| async move {
        match r.method.as_str() {
            "POST" => json(201, configmap("a")),
            "DELETE" => json(
                200,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}),
            ),
            _ => json(200, configmap("a")),
        }
    })
    .await;
    let client = RestClient::new(config(&server.url()))
        .unwrap()
        .for_group_version(core());
    let created = client
        .post()
        .namespace("ns")
        .resource("configmaps")
        .json_body(&configmap("a"))
        .send()
        .await
        .unwrap();
    assert!(created.was_created());
    assert_eq!(created.content_type(), Some("application/json"));
    client
        .put()
        .namespace("ns")
        .resource("configmaps")
        .name("a")
        .body(configmap("a").to_string())
        .send()
        .await
        .unwrap();
    let patch = Patch::Merge(json!({"data": {"k": "w"}}));
    client
        .patch(&patch)
        .namespace("ns")
        .resource("configmaps")
        .name("a")
        .send()
        .await
        .unwrap();
    client
        .patch(PatchType::Apply)
        .namespace("ns")
        .resource("configmaps")
        .name("a")
        .param("fieldManager", "me")
        .body(configmap("a").to_string())
        .send()
        .await
        .unwrap();
    client
        .delete()
        .namespace("ns")
        .resource("configmaps")
        .name("a")
        .json_body(&json!({"propagationPolicy": "Background"}))
        .bytes()
        .await
        .unwrap();
    let seen = server.requests();
    let methods: Vec<_> = seen.iter().map(|r| r.method.as_str()).collect();
    assert_eq!(methods, ["POST", "PUT", "PATCH", "PATCH", "DELETE"]);
    assert_eq!(seen[0].header("content-type"), Some("application/json"));
    assert_eq!(
        seen[2].header("content-type"),
        Some("application/merge-patch+json")
    );
    assert_eq!(&seen[2].body[..], br#"{"data":{"k":"w"}}"#);
    assert_eq!(
        seen[3].header("content-type"),
        Some("application/apply-patch+yaml")
    );
    assert_eq!(seen[3].uri.query(), Some("fieldManager=me"));
    assert!(std::str::from_utf8(&seen[4].body)
        .unwrap()
        .contains("Background"));
}

#[tokio::test]
async fn builder_errors_surface_at_the_terminal_without_a_request() {
    let server = TestServer::http(|_| async { json(200, json!({})) }).await;
    let client = RestClient::new(config(&server.url())).unwrap();
    for req in [
        client.get().namespace("a/b").resource("pods"),
        client.get().resource("pods").name(""),
        client.post().namespace("").resource("pods"),
        client.get().header("bad header", "x"),
    ] {
        let err = req.send().await.unwrap_err();
        assert!(matches!(err, Error::InvalidRequest(_)), "{err:?}");
    }
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn credentials_user_agent_and_impersonation_headers() {
    let server = TestServer::http(|_| async { json(200, json!({})) }).await;
    let mut c = config(&server.url());
    c.bearer_token = Some("tok-1\n".into());
    c.user_agent = Some("my-controller/1.0".into());
    c.impersonate = ImpersonationConfig {
        user: Some("jane".into()),
        uid: Some("u-1".into()),
        groups: vec!["devs".into(), "ops".into()],
        extra: [("scopes".to_owned(), vec!["view".to_owned()])].into(),
    };
    let client = RestClient::new(c).unwrap();
    client.get().abs_path("/api").send().await.unwrap();
    client
        .get()
        .abs_path("/api")
        .header("Authorization", "Bearer caller")
        .header("User-Agent", "caller-agent")
        .header("Impersonate-User", "someone-else")
        .send()
        .await
        .unwrap();
    let seen = server.requests();
    let first = &seen[0];
    assert_eq!(first.header("authorization"), Some("Bearer tok-1"));
    assert_eq!(first.header("user-agent"), Some("my-controller/1.0"));
    assert_eq!(first.header("impersonate-user"), Some("jane"));
    assert_eq!(first.header("impersonate-uid"), Some("u-1"));
    let groups: Vec<_> = first.headers.get_all("impersonate-group").iter().collect();
    assert_eq!(groups, ["devs", "ops"]);
    assert_eq!(first.header("impersonate-extra-scopes"), Some("view"));
    let second = &seen[1];
    assert_eq!(
        second.header("authorization"),
        Some("Bearer caller"),
        "a set header wins"
    );
    assert_eq!(second.header("user-agent"), Some("caller-agent"));
    assert_eq!(second.header("impersonate-user"), Some("someone-else"));
    assert!(
        second.header("impersonate-group").is_none(),
        "impersonation is skipped whole"
    );
}

#[tokio::test]
async fn basic_auth_header() {
    let server = TestServer::http(|_| async { json(200, json!({})) }).await;
    let mut c = config(&server.url());
    c.basic_auth = Some(kclient_rest::BasicAuth {
        username: "admin".into(),
        password: "s3cret".into(),
    });
    RestClient::new(c)
        .unwrap()
        .get()
        .abs_path("/api")
        .send()
        .await
        .unwrap();
    // base64("admin:s3cret")
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Basic YWRtaW46czNjcmV0")
    );
}

#[derive(Default)]
struct CollectWarnings(Mutex<Vec<Warning>>);

impl WarningHandler for CollectWarnings {
    fn handle_warning(&self, warning: &Warning) {
        self.0.lock().push(warning.clone());
    }
}

#[tokio::test]
async fn warnings_reach_the_handler_and_the_response() {
    let server = TestServer::http(|_| async {
        let mut r = json(200, json!({}));
        r.headers_mut().append(
            "warning",
            "299 - \"v1beta1 is deprecated\"".parse().unwrap(),
        );
        r.headers_mut().append(
            "warning",
            "299 - \"second\", 299 - \"third\"".parse().unwrap(),
        );
        r
    })
    .await;
    let handler = Arc::new(CollectWarnings::default());
    let mut c = config(&server.url());
    c.warning_handler = Some(handler.clone());
    let response = RestClient::new(c)
        .unwrap()
        .get()
        .abs_path("/x")
        .send()
        .await
        .unwrap();
    let texts: Vec<_> = response
        .warnings()
        .iter()
        .map(|w| w.text.as_str())
        .collect();
    assert_eq!(texts, ["v1beta1 is deprecated", "second", "third"]);
    assert_eq!(handler.0.lock().len(), 3);
}

#[tokio::test]
async fn connection_refused_is_typed() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let client = RestClient::new(config(&format!("http://{addr}"))).unwrap();
    let err = client
        .get()
        .abs_path("/api")
        .max_retries(0)
        .send()
        .await
        .unwrap_err();
    assert!(err.is_connection_refused(), "{err:?}");
    assert!(matches!(err, Error::Connect { refused: true, .. }));
    assert!(std::error::Error::source(&err).is_some());
}

/// Issue 29, item 5: a server URL with a password: the client's `Debug` output and a
/// request's connect error show the user and `xxxxx`, never the password.
#[tokio::test]
async fn a_server_password_never_shows_in_errors_or_debug() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let client = RestClient::new(config(&format!("http://user:SERVER-SECRET@{addr}"))).unwrap();
    let debug = format!("{client:?}");
    assert!(debug.contains(&format!("user:xxxxx@{addr}")), "{debug}");
    assert!(!debug.contains("SERVER-SECRET"), "{debug}");
    let err = client
        .get()
        .abs_path("/api")
        .max_retries(0)
        .send()
        .await
        .unwrap_err();
    assert!(err.is_connection_refused(), "{err:?}");
    let shown = format!("{err} {err:?}");
    assert!(
        shown.contains(&format!("http://user:xxxxx@{addr}/api")),
        "{shown}"
    );
    assert!(!shown.contains("SERVER-SECRET"), "{shown}");
}

#[test]
fn request_timeout_is_enforced_and_sent() {
    support::paused_runtime().block_on(async {
        let server = TestServer::http(|_| async {
            // Never answers within the timeout (the paused clock jumps ahead).
            tokio::time::sleep(Duration::from_secs(3600)).await;
            json(200, json!({}))
        })
        .await;
        let client = RestClient::new(config(&server.url())).unwrap();
        let err = client
            .get()
            .abs_path("/slow")
            .timeout(Duration::from_millis(1500))
            .send()
            .await
            .unwrap_err();
        assert!(
            matches!(err, Error::Timeout { timeout, .. } if timeout == Duration::from_millis(1500)),
            "{err:?}"
        );
        assert!(err.is_client_timeout());
        assert!(err.to_string().contains("1.5s"), "{err}");
    });
}

#[derive(Default)]
struct Recording {
    events: Mutex<Vec<String>>,
}

impl RequestMetrics for Recording {
    fn request_latency(&self, verb: &str, url_template: &str, _latency: Duration) {
        self.events
            .lock()
            .push(format!("latency {verb} {url_template}"));
    }
    fn request_result(&self, code: &str, verb: &str, host: &str) {
        assert!(host.starts_with("127.0.0.1:"));
        self.events.lock().push(format!("result {code} {verb}"));
    }
    fn request_retry(&self, code: &str, verb: &str, _host: &str) {
        self.events.lock().push(format!("retry {code} {verb}"));
    }
    fn rate_limiter_latency(&self, verb: &str, url_template: &str, _latency: Duration) {
        self.events
            .lock()
            .push(format!("throttle {verb} {url_template}"));
    }
}

#[tokio::test]
async fn metrics_hooks_see_every_request() {
    let server = TestServer::http(|r| async move {
        if r.uri.path().ends_with("/missing") {
            status(404, "NotFound", "nope")
        } else {
            json(200, configmap("a"))
        }
    })
    .await;
    let metrics = Arc::new(Recording::default());
    let mut c = config(&server.url());
    c.qps = Some(100.0);
    c.metrics = Some(metrics.clone());
    let client = RestClient::new(c).unwrap().for_group_version(core());
    client
        .get()
        .namespace("ns")
        .resource("configmaps")
        .name("a")
        .send()
        .await
        .unwrap();
    client
        .get()
        .namespace("ns")
        .resource("configmaps")
        .name("missing")
        .send()
        .await
        .unwrap_err();
    let events = metrics.events.lock().clone();
    assert_eq!(
        events,
        [
            "throttle GET /api/v1/namespaces/{namespace}/configmaps/{name}",
            "result 200 GET",
            "latency GET /api/v1/namespaces/{namespace}/configmaps/{name}",
            "throttle GET /api/v1/namespaces/{namespace}/configmaps/{name}",
            "result 404 GET",
            "latency GET /api/v1/namespaces/{namespace}/configmaps/{name}",
        ]
    );
}

#[tokio::test]
async fn streams_hand_over_the_body() {
    use futures::StreamExt;
    let server = TestServer::http(|_| async {
        support::chunked(vec![b"line one\n".to_vec(), b"line two\n".to_vec()])
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let mut stream = client
        .get()
        .group_version(&core())
        .namespace("ns")
        .resource("pods")
        .name("p")
        .subresource("log")
        .param("follow", "true")
        .stream()
        .await
        .unwrap();
    let mut all = Vec::new();
    while let Some(chunk) = stream.next().await {
        all.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(all, b"line one\nline two\n");
}

#[tokio::test]
async fn clones_share_state() {
    let client = RestClient::new(config("http://127.0.0.1:1")).unwrap();
    let clone = client.clone();
    let versioned = client.for_group_version(GroupVersion::new("apps", "v1"));
    assert!(client.shares_state_with(&clone));
    assert!(client.shares_state_with(&versioned));
    assert_eq!(
        versioned.group_version(),
        Some(&GroupVersion::new("apps", "v1"))
    );
    assert_eq!(client.base_url(), "http://127.0.0.1:1");
    assert_eq!(client.default_namespace(), "default");
    assert!(format!("{client:?}").contains("127.0.0.1:1"));
}

fn assert_send<T: Send>(_: &T) {}
fn assert_send_sync_static<T: Send + Sync + 'static>() {}

#[test]
fn clients_errors_futures_and_streams_are_send() {
    assert_send_sync_static::<RestClient>();
    assert_send_sync_static::<Error>();
    assert_send_sync_static::<kclient_rest::Request>();
    let client = RestClient::new(config("http://127.0.0.1:1")).unwrap();
    let send = client.get().send();
    assert_send(&send);
    let json = client.get().json::<ConfigMap>();
    assert_send(&json);
    let stream = client.get().stream();
    assert_send(&stream);
    let watch = client.get().watch::<kclient_core::DynamicObject>();
    assert_send(&watch);
}

fn gzipped(status: u16, value: serde_json::Value) -> http::Response<support::Body> {
    http::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .body(support::full(support::gzip(value.to_string().as_bytes())))
        .unwrap()
}

#[tokio::test]
async fn compressed_answers_are_asked_for_and_inflated() {
    let server = TestServer::http(|r| async move {
        if r.uri.path().ends_with("/missing") {
            gzipped(404, json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "message": "gone", "code": 404}))
        } else {
            gzipped(200, configmap("a"))
        }
    })
    .await;
    let client = RestClient::new(config(&server.url())).unwrap();
    let get = |name: &'static str| {
        client
            .get()
            .group_version(&core())
            .namespace("ns")
            .resource("configmaps")
            .name(name)
    };
    let cm: ConfigMap = get("a").decode().await.unwrap();
    assert_eq!(cm.metadata.name.as_deref(), Some("a"));
    let err = get("missing").decode::<ConfigMap>().await.unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
    assert_eq!(server.requests()[0].header("accept-encoding"), Some("gzip"));

    let mut config = config(&server.url());
    config.disable_compression = true;
    let plain = RestClient::new(config).unwrap();
    let _ = plain.get().abs_path("/x").bytes().await;
    assert_eq!(server.requests()[2].header("accept-encoding"), None);
}
