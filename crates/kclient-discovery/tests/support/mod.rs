//! Test support: a kclient-fake server, clients for it without rate limiting, a CRD, and a
//! recording proxy that can fail chosen paths, hide aggregated discovery (an old server) or
//! mark a group stale in it (an aggregated API server that is down).
#![allow(dead_code)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http::{header, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kclient_fake::FakeApiServer;
use kclient_rest::{Config, RestClient};
use parking_lot::Mutex;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A configuration for `url` without client-side rate limiting.
pub fn config(url: &str) -> Config {
    let mut config = Config::new(url);
    config.qps = None;
    config
}

/// A REST client for `url` without client-side rate limiting.
pub fn rest(url: &str) -> RestClient {
    RestClient::new(config(url)).expect("rest client")
}

/// A fresh fake API server.
pub async fn fake() -> FakeApiServer {
    FakeApiServer::builder().start().await.expect("fake server")
}

/// The CronTab CRD of the Kubernetes documentation, served in v1 (storage) and v1beta1.
pub fn crontab_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab",
                      "listKind": "CronTabList", "shortNames": ["ct"], "categories": ["all"]},
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                 "subresources": {"status": {}}},
                {"name": "v1beta1", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
            ]
        }
    })
}

/// Creates the CronTab CRD through the API.
pub async fn create_crontab_crd(url: &str) {
    let _: Value = rest(url)
        .post()
        .abs_path("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
        .json_body(&crontab_crd())
        .json()
        .await
        .expect("create CRD");
}

/// One request seen by the proxy.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub accept: String,
}

#[derive(Default)]
struct Rules {
    /// path -> (status code, how many more times; None = always)
    fail: HashMap<String, (u16, Option<usize>)>,
    /// Groups to mark stale in aggregated discovery.
    stale: Vec<String>,
}

struct State {
    upstream: String,
    client: Client<HttpConnector, Full<Bytes>>,
    legacy_only: AtomicBool,
    rules: Mutex<Rules>,
    seen: Mutex<Vec<Seen>>,
}

/// A recording HTTP proxy in front of a server (see the module documentation).
pub struct Proxy {
    addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// A proxy in front of `upstream` (`http://127.0.0.1:PORT`).
    pub async fn start(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let state = Arc::new(State {
            upstream: upstream.trim_end_matches('/').to_string(),
            client: Client::builder(TokioExecutor::new()).build_http(),
            legacy_only: AtomicBool::new(false),
            rules: Mutex::new(Rules::default()),
            seen: Mutex::new(Vec::new()),
        });
        let accept_state = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let state = accept_state.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(handle(state, req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Proxy { addr, state, task }
    }

    /// The proxy's URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Answers like a server without aggregated discovery (the `Accept` header is reduced to
    /// plain JSON before forwarding).
    pub fn legacy_only(&self, on: bool) {
        self.state.legacy_only.store(on, Ordering::SeqCst);
    }

    /// Answers `path` with `code` (a `Status` body) `times` times (`None`: always).
    pub fn fail(&self, path: &str, code: u16, times: Option<usize>) {
        self.state
            .rules
            .lock()
            .fail
            .insert(path.to_string(), (code, times));
    }

    /// Stops failing `path`.
    pub fn heal(&self, path: &str) {
        self.state.rules.lock().fail.remove(path);
    }

    /// Marks every version of `group` stale in aggregated discovery.
    pub fn mark_stale(&self, group: &str) {
        self.state.rules.lock().stale.push(group.to_string());
    }

    /// The requests seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().clone()
    }

    /// The paths requested so far, sorted.
    pub fn paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = self.seen().into_iter().map(|s| s.path).collect();
        paths.sort();
        paths
    }

    /// How many requests went to `path`.
    pub fn count(&self, path: &str) -> usize {
        self.seen().iter().filter(|s| s.path == path).count()
    }

    /// Forgets the requests seen so far.
    pub fn clear(&self) {
        self.state.seen.lock().clear();
    }
}

fn status(code: u16) -> Response<Full<Bytes>> {
    let reason = match code {
        403 => "Forbidden",
        404 => "NotFound",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        _ => "",
    };
    let body = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                      "message": format!("injected {code}"), "reason": reason, "code": code});
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("response")
}

async fn handle(state: Arc<State>, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    let accept = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    state.seen.lock().push(Seen {
        path: path.clone(),
        accept: accept.clone(),
    });
    {
        let mut rules = state.rules.lock();
        if let Some((code, times)) = rules.fail.get_mut(&path) {
            let code = *code;
            match times {
                Some(0) => {}
                Some(n) => {
                    *n -= 1;
                    return status(code);
                }
                None => return status(code),
            }
        }
    }
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| path.clone());
    let mut builder = Request::builder()
        .method(parts.method)
        .uri(format!("{}{}", state.upstream, path_and_query));
    let hide_aggregated =
        state.legacy_only.load(Ordering::SeqCst) && accept.contains("apidiscovery");
    for (name, value) in &parts.headers {
        if name == header::HOST || (hide_aggregated && name == header::ACCEPT) {
            continue;
        }
        builder = builder.header(name, value);
    }
    if hide_aggregated {
        builder = builder.header(header::ACCEPT, "application/json");
    }
    let upstream = builder.body(Full::new(body)).expect("request");
    let response = match state.client.request(upstream).await {
        Ok(r) => r,
        Err(_) => return status(502),
    };
    let (mut parts, body) = response.into_parts();
    let mut bytes = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let stale = state.rules.lock().stale.clone();
    let aggregated = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.contains("APIGroupDiscoveryList"));
    if aggregated && !stale.is_empty() {
        if let Ok(mut doc) = serde_json::from_slice::<Value>(&bytes) {
            for item in doc["items"].as_array_mut().into_iter().flatten() {
                let name = item["metadata"]["name"].as_str().unwrap_or("").to_string();
                if stale.contains(&name) {
                    for v in item["versions"].as_array_mut().into_iter().flatten() {
                        v["freshness"] = json!("Stale");
                        v["resources"] = json!([]);
                    }
                }
            }
            bytes = Bytes::from(doc.to_string());
            parts.headers.remove(header::CONTENT_LENGTH);
        }
    }
    Response::from_parts(parts, Full::new(bytes))
}
