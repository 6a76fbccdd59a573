//! A minimal HTTP client for the fake server's tests (hyper-util's legacy client), until
//! kclient-rest's `RestClient` is available.
#![allow(dead_code)]

pub mod webhook_server;

use bytes::{Bytes, BytesMut};
use http::{header, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use kclient_fake::FakeApiServer;
use serde_json::{json, Value};

/// JSON.
pub const JSON: &str = "application/json";
/// Merge patch.
pub const MERGE: &str = "application/merge-patch+json";
/// JSON patch.
pub const JSON_PATCH: &str = "application/json-patch+json";
/// Strategic merge patch.
pub const STRATEGIC: &str = "application/strategic-merge-patch+json";
/// Apply patch.
pub const APPLY: &str = "application/apply-patch+yaml";

/// A client for one server.
#[derive(Clone)]
pub struct Client {
    inner: HyperClient<HttpConnector, Full<Bytes>>,
    base: String,
    headers: Vec<(String, String)>,
}

/// A response: status, headers, and the body as JSON (or as a string when not JSON).
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Value,
    pub raw: Bytes,
}

impl Client {
    pub fn new(server: &FakeApiServer) -> Self {
        Self::for_url(&server.url())
    }

    pub fn for_url(url: &str) -> Self {
        Self {
            inner: HyperClient::builder(TokioExecutor::new()).build_http(),
            base: url.to_string(),
            headers: Vec::new(),
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub async fn send(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> Reply {
        let res = self.raw(method, path, content_type, body).await;
        let status = res.status();
        let headers = res.headers().clone();
        let raw = res.into_body().collect().await.expect("body").to_bytes();
        let body = serde_json::from_slice(&raw)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&raw).into_owned()));
        Reply {
            status,
            headers,
            body,
            raw,
        }
    }

    pub async fn raw(
        &self,
        method: Method,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
    ) -> http::Response<Incoming> {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{}", self.base, path))
            .header(header::CONTENT_TYPE, content_type);
        let own_agent = self
            .headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("user-agent"));
        if !own_agent {
            req = req.header(header::USER_AGENT, "kclient-fake-tests/0.1");
        }
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let req = req.body(Full::new(Bytes::from(body))).expect("request");
        self.inner.request(req).await.expect("the server answers")
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(Method::GET, path, JSON, Vec::new()).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Reply {
        self.send(Method::POST, path, JSON, body.to_string().into_bytes())
            .await
    }

    pub async fn put(&self, path: &str, body: &Value) -> Reply {
        self.send(Method::PUT, path, JSON, body.to_string().into_bytes())
            .await
    }

    pub async fn patch(&self, path: &str, content_type: &str, body: &str) -> Reply {
        self.send(Method::PATCH, path, content_type, body.as_bytes().to_vec())
            .await
    }

    pub async fn delete(&self, path: &str) -> Reply {
        self.send(Method::DELETE, path, JSON, Vec::new()).await
    }

    pub async fn delete_with(&self, path: &str, options: &Value) -> Reply {
        self.send(Method::DELETE, path, JSON, options.to_string().into_bytes())
            .await
    }

    /// Opens a watch; the status must be 200.
    pub async fn watch(&self, path: &str) -> Watch {
        let res = self.raw(Method::GET, path, JSON, Vec::new()).await;
        assert_eq!(res.status(), StatusCode::OK, "watch {path}");
        Watch {
            body: res.into_body(),
            buf: BytesMut::new(),
        }
    }
}

/// An open watch.
pub struct Watch {
    body: Incoming,
    buf: BytesMut,
}

impl Watch {
    /// The next event, or `None` when the stream ended.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let line = self.buf.split_to(pos + 1);
                let v: Value = serde_json::from_slice(&line[..pos]).expect("a JSON frame");
                return Some(v);
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
                Some(Err(_)) | None => {
                    assert!(self.buf.is_empty(), "stream ended inside a frame");
                    return None;
                }
            }
        }
    }

    /// The next event's type and object name.
    pub async fn next_summary(&mut self) -> Option<(String, String)> {
        let e = self.next().await?;
        Some((
            e["type"].as_str().unwrap_or("").to_string(),
            e["object"]["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        ))
    }
}

/// The `Warning` headers of a response.
pub fn warnings(r: &Reply) -> Vec<String> {
    r.headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect()
}

pub async fn server() -> (FakeApiServer, Client) {
    let server = FakeApiServer::builder()
        .start()
        .await
        .expect("server starts");
    let client = Client::new(&server);
    (server, client)
}

/// A server with ConfigMap `name` (`{"k": "v"}`) in `default`.
pub async fn with_configmap(name: &str) -> (FakeApiServer, Client) {
    let (server, c) = server().await;
    let created = c
        .post(
            "/api/v1/namespaces/default/configmaps",
            &configmap(name, json!({"k": "v"})),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    (server, c)
}

pub fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "nginx"}]}
    })
}

pub fn configmap(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

pub fn labelled(mut obj: Value, labels: Value) -> Value {
    obj["metadata"]["labels"] = labels;
    obj
}

pub fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .parse()
        .expect("numeric resourceVersion")
}

pub fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap_or("").to_string())
        .collect()
}
