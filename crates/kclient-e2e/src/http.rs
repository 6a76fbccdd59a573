//! A deliberately small HTTP client for the scenarios (JSON in, JSON out, watch streams as
//! newline-delimited JSON), independent of kclient-rest so that it can check it. Scenarios
//! move to kclient-rest's `RestClient` as it lands; this stays as the reference.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::Value;

use crate::target::Credentials;

/// How long one ordinary request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A JSON response: status and body (`Value::Null` when the body is empty or not JSON).
#[derive(Debug, Clone)]
pub struct Response {
    /// The HTTP status.
    pub status: StatusCode,
    /// The body, parsed.
    pub body: Value,
}

impl Response {
    /// The `reason` of a `Status` body (`NotFound`, `Conflict`, ...), if it is one.
    pub fn reason(&self) -> Option<&str> {
        (self.body["kind"] == "Status")
            .then(|| self.body["reason"].as_str())
            .flatten()
    }

    /// Fails unless the status is `expected`, showing the body.
    pub fn expect(self, expected: StatusCode) -> Result<Response> {
        if self.status != expected {
            bail!(
                "expected HTTP {expected}, got {}: {}",
                self.status,
                self.body
            );
        }
        Ok(self)
    }
}

/// An HTTP client for one server with one identity.
#[derive(Clone)]
pub struct HttpClient {
    base: String,
    token: Option<String>,
    inner: Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl HttpClient {
    pub(crate) fn new(base: &str, credentials: &Credentials) -> Result<HttpClient> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        if let Some(ca) = &credentials.ca_pem {
            for cert in CertificateDer::pem_slice_iter(ca) {
                roots
                    .add(cert.context("bad certificate-authority PEM")?)
                    .context("unusable CA certificate")?;
            }
        }
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("TLS protocol versions")?
            .with_root_certificates(roots);
        let tls = match (&credentials.client_cert_pem, &credentials.client_key_pem) {
            (Some(cert), Some(key)) => {
                let chain = CertificateDer::pem_slice_iter(cert)
                    .collect::<Result<Vec<_>, _>>()
                    .context("bad client certificate PEM")?;
                let key = PrivateKeyDer::from_pem_slice(key).context("bad client key PEM")?;
                builder
                    .with_client_auth_cert(chain, key)
                    .context("unusable client certificate")?
            }
            _ => builder.with_no_client_auth(),
        };
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        Ok(HttpClient {
            base: base.trim_end_matches('/').to_string(),
            token: credentials.token.clone(),
            inner: Client::builder(TokioExecutor::new()).build(connector),
        })
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, Vec<u8>)>,
    ) -> Result<hyper::Response<Incoming>> {
        let mut request = Request::builder()
            .method(method.clone())
            .uri(format!("{}{path}", self.base))
            .header("Accept", "application/json");
        if let Some(token) = &self.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let body = match body {
            Some((content_type, bytes)) => {
                request = request.header("Content-Type", content_type);
                Full::new(Bytes::from(bytes))
            }
            None => Full::new(Bytes::new()),
        };
        let request = request.body(body).context("building the request")?;
        self.inner
            .request(request)
            .await
            .with_context(|| format!("{method} {path}"))
    }

    /// Sends a request and reads the whole JSON response.
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<(&str, &Value)>,
    ) -> Result<Response> {
        let body = body
            .map(|(content_type, value)| {
                Ok::<_, serde_json::Error>((content_type, serde_json::to_vec(value)?))
            })
            .transpose()?;
        let exchange = async {
            let response = self.send(method.clone(), path, body).await?;
            let status = response.status();
            let bytes = response
                .into_body()
                .collect()
                .await
                .with_context(|| format!("reading the response to {method} {path}"))?
                .to_bytes();
            let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
            Ok(Response { status, body })
        };
        tokio::time::timeout(REQUEST_TIMEOUT, exchange)
            .await
            .with_context(|| format!("{method} {path}: no response within {REQUEST_TIMEOUT:?}"))?
    }

    /// `GET path`.
    pub async fn get(&self, path: &str) -> Result<Response> {
        self.request(Method::GET, path, None).await
    }

    /// `POST path` with a JSON body.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Response> {
        self.request(Method::POST, path, Some(("application/json", body)))
            .await
    }

    /// `PUT path` with a JSON body.
    pub async fn put(&self, path: &str, body: &Value) -> Result<Response> {
        self.request(Method::PUT, path, Some(("application/json", body)))
            .await
    }

    /// `PATCH path` with a body of the given patch content type.
    pub async fn patch(&self, path: &str, content_type: &str, body: &Value) -> Result<Response> {
        self.request(Method::PATCH, path, Some((content_type, body)))
            .await
    }

    /// `DELETE path`.
    pub async fn delete(&self, path: &str) -> Result<Response> {
        self.request(Method::DELETE, path, None).await
    }

    /// Opens a watch (`path` must carry `watch=1`). A non-200 answer is returned as an error
    /// response instead of a stream.
    pub async fn watch(&self, path: &str) -> Result<std::result::Result<WatchStream, Response>> {
        let response = tokio::time::timeout(REQUEST_TIMEOUT, self.send(Method::GET, path, None))
            .await
            .with_context(|| format!("GET {path}: no response within {REQUEST_TIMEOUT:?}"))??;
        let status = response.status();
        if status != StatusCode::OK {
            let bytes = response.into_body().collect().await?.to_bytes();
            return Ok(Err(Response {
                status,
                body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            }));
        }
        Ok(Ok(WatchStream {
            body: response.into_body(),
            buffer: Vec::new(),
        }))
    }
}

/// One watch event: `type` and `object`.
#[derive(Debug, Clone)]
pub struct WatchEvent {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub event_type: String,
    /// The object (a `Status` for `ERROR`).
    pub object: Value,
}

impl WatchEvent {
    /// `metadata.name` of the object.
    pub fn name(&self) -> &str {
        self.object["metadata"]["name"].as_str().unwrap_or_default()
    }
}

/// An open watch: newline-delimited JSON events.
#[derive(Debug)]
pub struct WatchStream {
    body: Incoming,
    buffer: Vec<u8>,
}

impl WatchStream {
    /// The next event, `None` when the server closed the stream; fails after `limit` with no
    /// event.
    pub async fn next(&mut self, limit: Duration) -> Result<Option<WatchEvent>> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(end) = self.buffer.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let value: Value =
                    serde_json::from_slice(&line).context("a watch event is not JSON")?;
                return Ok(Some(WatchEvent {
                    event_type: value["type"].as_str().unwrap_or_default().to_string(),
                    object: value["object"].clone(),
                }));
            }
            let frame = tokio::time::timeout_at(deadline, self.body.frame())
                .await
                .with_context(|| format!("no watch event within {limit:?}"))?;
            match frame {
                None => {
                    if self.buffer.iter().all(u8::is_ascii_whitespace) {
                        return Ok(None);
                    }
                    // A last event without its newline.
                    self.buffer.push(b'\n');
                }
                Some(frame) => {
                    if let Ok(data) = frame.context("reading the watch stream")?.into_data() {
                        self.buffer.extend_from_slice(&data);
                    }
                }
            }
        }
    }
}
