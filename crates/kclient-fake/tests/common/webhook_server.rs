//! A small HTTPS webhook server for the tests: hyper and rustls on 127.0.0.1, with a CA and a
//! serving certificate made by rcgen, answering every request with what the test's handler
//! says, and remembering what it was asked.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{json, Value};

/// What the server answers.
pub enum Answer {
    /// `200` with this JSON.
    Json(Value),
    /// This status, content type and body.
    Raw(u16, &'static str, Vec<u8>),
    /// The answer after this long (tokio's clock).
    After(Duration, Box<Answer>),
}

impl Answer {
    /// This answer with its `response.uid` replaced.
    pub fn with_uid(self, uid: &str) -> Answer {
        match self {
            Answer::Json(mut v) => {
                v["response"]["uid"] = json!(uid);
                Answer::Json(v)
            }
            other => other,
        }
    }
}

type Handler = dyn Fn(&str, &Value) -> Answer + Send + Sync;

/// A running webhook server; stops when dropped.
pub struct WebhookServer {
    /// Its address.
    pub addr: SocketAddr,
    /// Its CA, as a `caBundle` (base64 of the PEM).
    pub ca_bundle: String,
    requests: Arc<Mutex<Vec<(String, Value)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn pem(der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        lines.join("\n")
    )
}

impl WebhookServer {
    /// Starts a server for `127.0.0.1` (and `names`) whose handler gets each request's path
    /// and JSON body.
    pub async fn start(
        names: &[&str],
        handler: impl Fn(&str, &Value) -> Answer + Send + Sync + 'static,
    ) -> Self {
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        // Each server's CA has a name of its own.
        static SERVERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = SERVERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, format!("webhook-test-ca-{n}"));
        let ca_key = KeyPair::generate().unwrap();
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca, ca_key);
        let mut sans = vec!["127.0.0.1".to_string()];
        sans.extend(names.iter().map(|n| n.to_string()));
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(sans)
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![CertificateDer::from(cert.der().to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .unwrap();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let seen = requests.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, handler, seen) = (acceptor.clone(), handler.clone(), seen.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| {
                            let (handler, seen) = (handler.clone(), seen.clone());
                            async move {
                                let path = req.uri().path().to_string();
                                let body = req.into_body().collect().await?.to_bytes();
                                let review: Value =
                                    serde_json::from_slice(&body).unwrap_or_default();
                                seen.lock().push((path.clone(), review.clone()));
                                let mut answer = handler(&path, &review);
                                while let Answer::After(wait, next) = answer {
                                    tokio::time::sleep(wait).await;
                                    answer = *next;
                                }
                                let (code, content_type, body) = match answer {
                                    Answer::Json(v) => {
                                        (200, "application/json", v.to_string().into_bytes())
                                    }
                                    Answer::Raw(code, content_type, body) => {
                                        (code, content_type, body)
                                    }
                                    Answer::After(..) => unreachable!("unwrapped above"),
                                };
                                let response = http::Response::builder()
                                    .status(code)
                                    .header(http::header::CONTENT_TYPE, content_type)
                                    .body(Full::new(Bytes::from(body)))
                                    .unwrap();
                                Ok::<_, hyper::Error>(response)
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Self {
            addr,
            ca_bundle: base64::engine::general_purpose::STANDARD.encode(pem(ca_cert.der())),
            requests,
            task,
        }
    }

    /// `https://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// A `clientConfig` for `path`.
    pub fn client_config(&self, path: &str) -> Value {
        json!({"url": self.url(path), "caBundle": self.ca_bundle})
    }

    /// The requests so far: path and body.
    pub fn requests(&self) -> Vec<(String, Value)> {
        self.requests.lock().clone()
    }

    /// The bodies of the requests to `path`.
    pub fn requests_to(&self, path: &str) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|(p, _)| p == path)
            .map(|(_, b)| b)
            .collect()
    }
}

/// The `AdmissionReview` answering `review` with `response` (its uid filled in).
pub fn admission_answer(review: &Value, mut response: Value) -> Answer {
    response["uid"] = review["request"]["uid"].clone();
    Answer::Json(json!({
        "apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": response,
    }))
}

/// Allows.
pub fn allow(review: &Value) -> Answer {
    admission_answer(review, json!({"allowed": true}))
}

/// Allows with a JSON patch.
pub fn patch(review: &Value, operations: Value) -> Answer {
    let encoded = base64::engine::general_purpose::STANDARD.encode(operations.to_string());
    admission_answer(
        review,
        json!({"allowed": true, "patchType": "JSONPatch", "patch": encoded}),
    )
}

/// Denies with a `Status` of `code` and `message`.
pub fn deny(review: &Value, code: u16, message: &str) -> Answer {
    admission_answer(
        review,
        json!({"allowed": false, "status": {"code": code, "message": message}}),
    )
}

/// A webhook configuration of `kind` (`Mutating…` or `Validating…`) with one webhook.
pub fn configuration(kind: &str, name: &str, webhook: Value) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": format!("{kind}WebhookConfiguration"),
        "metadata": {"name": name},
        "webhooks": [webhook],
    })
}

/// A webhook named `name` calling `client_config` for `rules`, with no side effects.
pub fn webhook(name: &str, client_config: Value, rules: Value) -> Value {
    json!({
        "name": name,
        "clientConfig": client_config,
        "rules": rules,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

/// A rule for `operations` on `resources` of the core group.
pub fn core_rule(operations: &[&str], resources: &[&str]) -> Value {
    json!([{"operations": operations, "apiGroups": [""], "apiVersions": ["v1"], "resources": resources}])
}
