//! Calling a webhook (admission or CRD conversion) as kube-apiserver's webhook client
//! (`k8s.io/apiserver/pkg/util/webhook`) calls it: a JSON `POST` to the configuration's
//! `url` over HTTPS, trusting only its `caBundle`, with the `?timeout=` query client-go adds,
//! bounded by that timeout on tokio's clock.
//!
//! A failure is worded as Go's HTTP client words it (`Post "<url>": <why>`), so that the
//! server's messages built on it start as kube-apiserver's do. The reason itself is the
//! closest Go wording of what went wrong: `dial tcp 127.0.0.1:1: connect: connection
//! refused`, `context deadline exceeded`, `tls: failed to verify certificate: x509:
//! certificate signed by unknown authority`, `EOF`; less common transport failures keep
//! Rust's wording. A non-2xx answer becomes the `Status` it carries, or client-go's generic
//! one for its code.
//!
//! `service` references are reached only through an address a test maps the Service to
//! ([`FakeApiServer::route_service`](crate::FakeApiServer::route_service)): the fake runs no
//! Service. The TLS server name is then `<name>.<namespace>.svc`, as kube-apiserver's.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use kclient_core::{Status, StatusCause, StatusDetails, StatusReason};
use parking_lot::RwLock;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::net::TcpStream;

/// The user agent of kube-apiserver's webhook clients.
const USER_AGENT: &str = "kube-apiserver-admission";
/// The largest webhook answer read.
const MAX_RESPONSE: usize = 32 * 1024 * 1024;

/// Where a webhook is: a webhook configuration's or a CRD's `clientConfig`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientConfig {
    /// `url`.
    pub url: Option<String>,
    /// `service`.
    pub service: Option<ServiceReference>,
    /// `caBundle`, base64 as stored (PEM once decoded).
    pub ca_bundle: String,
}

/// A `clientConfig.service`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceReference {
    /// The Service's namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The path (`""` for `/`).
    pub path: String,
    /// The port (443 by default).
    pub port: u16,
}

impl ClientConfig {
    /// Reads a `clientConfig` object.
    pub fn from_json(value: &Value) -> Self {
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        Self {
            url: text(value, "url"),
            service: value
                .get("service")
                .filter(|s| s.is_object())
                .map(|s| ServiceReference {
                    namespace: text(s, "namespace").unwrap_or_default(),
                    name: text(s, "name").unwrap_or_default(),
                    path: text(s, "path").unwrap_or_default(),
                    port: s
                        .get("port")
                        .and_then(Value::as_u64)
                        .and_then(|p| u16::try_from(p).ok())
                        .unwrap_or(443),
                }),
            ca_bundle: text(value, "caBundle").unwrap_or_default(),
        }
    }
}

/// The addresses tests map Services to (see the module documentation).
#[derive(Debug, Default)]
pub struct ServiceRoutes(RwLock<HashMap<(String, String), SocketAddr>>);

impl ServiceRoutes {
    /// Sends calls to Service `namespace/name` (any port) to `address`.
    pub fn set(&self, namespace: &str, name: &str, address: SocketAddr) {
        self.0
            .write()
            .insert((namespace.to_string(), name.to_string()), address);
    }

    fn get(&self, namespace: &str, name: &str) -> Option<SocketAddr> {
        self.0
            .read()
            .get(&(namespace.to_string(), name.to_string()))
            .copied()
    }
}

/// Why a call failed.
#[derive(Debug, Clone)]
pub enum CallError {
    /// The configuration names nowhere to call (no `url` nor `service`, a URL that does not
    /// parse): client-go cannot build a client.
    Config(String),
    /// No answer: the transport's failure, worded as Go's client (`Post "<url>": <why>`).
    Transport(String),
    /// A non-2xx answer, as client-go reads it: the `Status` it carried, or the generic one
    /// of its code.
    Status(Status),
}

impl CallError {
    /// The error's text (Go's `err.Error()`).
    pub fn message(&self) -> &str {
        match self {
            CallError::Config(why) | CallError::Transport(why) => why,
            CallError::Status(status) => &status.message,
        }
    }
}

/// Where a call goes: the URL as client-go writes it, the address to dial, the TLS name.
#[derive(Debug)]
struct Target {
    url: String,
    scheme: String,
    dial: String,
    host_header: String,
    server_name: String,
    path_and_query: String,
}

fn target(
    config: &ClientConfig,
    routes: &ServiceRoutes,
    timeout: Duration,
) -> Result<Target, CallError> {
    let query = format!("timeout={}", kclient_core::go_duration(timeout));
    if let Some(svc) = &config.service {
        let host = format!("{}.{}.svc", svc.name, svc.namespace);
        let path = if svc.path.is_empty() { "/" } else { &svc.path };
        let url = format!("https://{host}:{}{path}?{query}", svc.port);
        let Some(address) = routes.get(&svc.namespace, &svc.name) else {
            return Err(CallError::Transport(format!(
                "Post {url:?}: kclient-fake cannot reach Service {}/{}: map it to a listener with FakeApiServer::route_service",
                svc.namespace, svc.name
            )));
        };
        return Ok(Target {
            url,
            scheme: "https".into(),
            dial: address.to_string(),
            host_header: format!("{host}:{}", svc.port),
            server_name: host,
            path_and_query: format!("{path}?{query}"),
        });
    }
    let Some(raw) = config.url.as_deref() else {
        return Err(CallError::Config(
            "webhook configuration must have either service or URL".into(),
        ));
    };
    let uri: http::Uri = raw
        .parse()
        .map_err(|e| CallError::Config(format!("Unparsable URL: parse {raw:?}: {e}")))?;
    let scheme = uri.scheme_str().unwrap_or("").to_string();
    let host = uri.host().unwrap_or("").to_string();
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "http" { 80 } else { 443 });
    let bare_host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let authority = uri
        .authority()
        .map(|a| a.as_str().to_string())
        .unwrap_or_default();
    let path = match uri.path() {
        "" => "/",
        p => p,
    };
    let dial = if bare_host.contains(':') {
        format!("[{bare_host}]:{port}")
    } else {
        format!("{bare_host}:{port}")
    };
    Ok(Target {
        url: format!("{scheme}://{authority}{path}?{query}"),
        scheme,
        dial,
        host_header: authority,
        server_name: bare_host,
        path_and_query: format!("{path}?{query}"),
    })
}

/// `POST`s `body` (JSON) to the webhook, waiting `timeout` at most; returns the answer's body.
pub async fn post(
    config: &ClientConfig,
    routes: &ServiceRoutes,
    body: Vec<u8>,
    timeout: Duration,
) -> Result<Bytes, CallError> {
    let target = target(config, routes, timeout)?;
    let tls = match target.scheme.as_str() {
        "https" => Some(tls_config(&config.ca_bundle).map_err(CallError::Config)?),
        _ => None,
    };
    let call = exchange(&target, tls, body);
    match tokio::time::timeout(timeout, call).await {
        Ok(Ok(answer)) => answer_of(answer),
        Ok(Err(why)) => Err(CallError::Transport(format!(
            "Post {:?}: {why}",
            target.url
        ))),
        Err(_) => Err(CallError::Transport(format!(
            "Post {:?}: context deadline exceeded",
            target.url
        ))),
    }
}

/// A webhook's HTTP answer.
struct Answer {
    code: u16,
    content_type: String,
    body: Bytes,
}

async fn exchange(
    target: &Target,
    tls: Option<Arc<rustls::ClientConfig>>,
    body: Vec<u8>,
) -> Result<Answer, String> {
    let tcp = TcpStream::connect(&target.dial)
        .await
        .map_err(|e| dial_error(&target.dial, &e))?;
    if let Some(tls) = tls {
        let name = ServerName::try_from(target.server_name.clone())
            .map_err(|e| format!("tls: invalid server name {:?}: {e}", target.server_name))?;
        let stream = tokio_rustls::TlsConnector::from(tls)
            .connect(name, tcp)
            .await
            .map_err(|e| tls_error(&e))?;
        send(target, stream, body).await
    } else {
        send(target, tcp, body).await
    }
}

async fn send<IO>(target: &Target, io: IO, body: Vec<u8>) -> Result<Answer, String>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| e.to_string())?;
    let driver = tokio::spawn(connection);
    let request = http::Request::post(target.path_and_query.as_str())
        .header(http::header::HOST, target.host_header.as_str())
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .header(http::header::USER_AGENT, USER_AGENT)
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let result = async {
        let response = sender.send_request(request).await.map_err(hyper_error)?;
        let code = response.status().as_u16();
        let content_type = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let body = Limited::new(response.into_body(), MAX_RESPONSE)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok(Answer {
            code,
            content_type,
            body,
        })
    }
    .await;
    driver.abort();
    result
}

/// A 2xx answer's body, or the error client-go makes of another code.
fn answer_of(answer: Answer) -> Result<Bytes, CallError> {
    if (200..=206).contains(&answer.code) {
        return Ok(answer.body);
    }
    if let Ok(status) = serde_json::from_slice::<Value>(&answer.body) {
        if status.get("kind").and_then(Value::as_str) == Some("Status") {
            if let Ok(mut status) = serde_json::from_value::<Status>(status) {
                if status.code == 0 {
                    status.code = answer.code;
                }
                return Err(CallError::Status(status));
            }
        }
    }
    let media = answer.content_type.split(';').next().unwrap_or("").trim();
    let text = media.is_empty() || media.starts_with("text/");
    let server_message = if text {
        let end = answer.body.len().min(1024);
        String::from_utf8_lossy(&answer.body[..end])
            .trim()
            .to_string()
    } else {
        "unknown".to_string()
    };
    Err(CallError::Status(generic_status(
        answer.code,
        server_message,
    )))
}

/// client-go's `NewGenericServerResponse` for an answer without a `Status`.
fn generic_status(code: u16, server_message: String) -> Status {
    use StatusReason as R;
    let (reason, message) = match code {
        409 => (R::AlreadyExists, "the server reported a conflict".to_string()),
        404 => (
            R::NotFound,
            "the server could not find the requested resource".to_string(),
        ),
        400 => (
            R::BadRequest,
            "the server rejected our request for an unknown reason".to_string(),
        ),
        401 => (
            R::Unauthorized,
            "the server has asked for the client to provide credentials".to_string(),
        ),
        403 => (R::Forbidden, server_message.clone()),
        405 => (
            R::MethodNotAllowed,
            "the server does not allow this method on the requested resource".to_string(),
        ),
        415 => (R::UnsupportedMediaType, server_message.clone()),
        422 => (
            R::Invalid,
            "the server rejected our request due to an error in our request".to_string(),
        ),
        429 => (
            R::TooManyRequests,
            "the server has received too many requests and has asked us to try again later"
                .to_string(),
        ),
        503 => (
            R::ServiceUnavailable,
            "the server is currently unable to handle the request".to_string(),
        ),
        504 => (R::Timeout, "the server was unable to return a response in the time allotted, but may still be processing the request".to_string()),
        c if c >= 500 => (
            R::InternalError,
            format!(
                "an error on the server ({}) has prevented the request from succeeding",
                kclient_core::go_format::quote(&server_message)
            ),
        ),
        c => (
            R::Unknown,
            format!("the server responded with the status code {c} but did not return more information"),
        ),
    };
    Status::failure(reason, code, message).with_details(StatusDetails {
        causes: vec![StatusCause {
            cause_type: "UnexpectedServerResponse".into(),
            message: server_message,
            field: String::new(),
        }],
        ..StatusDetails::default()
    })
}

/// The TLS client configuration trusting `ca_bundle` (base64 of PEM certificates) alone; a
/// bundle without a certificate is client-go's `unable to load root certificates`.
fn tls_config(ca_bundle: &str) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    let pem = base64::engine::general_purpose::STANDARD
        .decode(ca_bundle.trim())
        .unwrap_or_default();
    let certificates = pem_certificates(&pem);
    if certificates.is_empty() && !pem.iter().all(u8::is_ascii_whitespace) {
        return Err("unable to load root certificates: unable to parse bytes as PEM block".into());
    }
    for der in certificates {
        // A certificate rustls cannot use is left out, as Go's pool skips it.
        let _ = roots.add(der);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The `CERTIFICATE` blocks of a PEM bundle.
fn pem_certificates(pem: &[u8]) -> Vec<CertificateDer<'static>> {
    let text = String::from_utf8_lossy(pem);
    let mut out = Vec::new();
    let mut rest = text.as_ref();
    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";
    while let Some(start) = rest.find(BEGIN) {
        let after = &rest[start + BEGIN.len()..];
        let Some(end) = after.find(END) else { break };
        let b64: String = after[..end].split_whitespace().collect();
        if let Ok(der) = base64::engine::general_purpose::STANDARD.decode(b64) {
            out.push(CertificateDer::from(der));
        }
        rest = &after[end + END.len()..];
    }
    out
}

/// Go's wording of a failed dial.
fn dial_error(address: &str, e: &std::io::Error) -> String {
    let why = match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
        _ => e.to_string(),
    };
    format!("dial tcp {address}: {why}")
}

/// Go's wording of a failed TLS handshake.
fn tls_error(e: &std::io::Error) -> String {
    let inner = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(cert)) => {
            let why = match cert {
                // A CA of the same name but another key is no authority of it either.
                rustls::CertificateError::UnknownIssuer
                | rustls::CertificateError::BadSignature => {
                    "certificate signed by unknown authority".to_string()
                }
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. } => {
                    "certificate is not valid for the requested name".to_string()
                }
                rustls::CertificateError::Expired
                | rustls::CertificateError::ExpiredContext { .. }
                | rustls::CertificateError::NotValidYet
                | rustls::CertificateError::NotValidYetContext { .. } => {
                    "certificate has expired or is not yet valid".to_string()
                }
                other => format!("{other:?}"),
            };
            format!("tls: failed to verify certificate: x509: {why}")
        }
        Some(other) => format!("tls: {other}"),
        None if e.kind() == std::io::ErrorKind::UnexpectedEof => "EOF".to_string(),
        None => e.to_string(),
    }
}

/// Go's wording of a request that got no answer.
fn hyper_error(e: hyper::Error) -> String {
    if e.is_incomplete_message() || e.is_canceled() {
        "EOF".to_string()
    } else {
        e.to_string()
    }
}

/// A CRD's conversion webhook (`spec.conversion.webhook`).
#[derive(Debug, Clone, PartialEq)]
pub struct ConversionWebhook {
    /// Where it is.
    pub client: ClientConfig,
    /// `conversionReviewVersions`.
    pub review_versions: Vec<String>,
}

impl ConversionWebhook {
    /// The webhook of a CRD whose `spec.conversion.strategy` is `Webhook`.
    pub fn of_crd(crd: &Value) -> Option<Arc<Self>> {
        let conversion = crd.pointer("/spec/conversion")?;
        if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        let webhook = conversion.get("webhook").unwrap_or(&Value::Null);
        Some(Arc::new(Self {
            client: ClientConfig::from_json(webhook.get("clientConfig").unwrap_or(&Value::Null)),
            review_versions: webhook
                .get("conversionReviewVersions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_written_as_client_go_writes_them() {
        let routes = ServiceRoutes::default();
        let config = ClientConfig {
            url: Some("https://127.0.0.1:8443/validate".into()),
            ..ClientConfig::default()
        };
        let t = target(&config, &routes, Duration::from_secs(10)).unwrap();
        assert_eq!(t.url, "https://127.0.0.1:8443/validate?timeout=10s");
        assert_eq!(t.dial, "127.0.0.1:8443");
        assert_eq!(t.server_name, "127.0.0.1");
        let bare = ClientConfig {
            url: Some("https://localhost".into()),
            ..ClientConfig::default()
        };
        let t = target(&bare, &routes, Duration::from_secs(90)).unwrap();
        assert_eq!(t.url, "https://localhost/?timeout=1m30s");
        assert_eq!(t.dial, "localhost:443");
    }

    #[test]
    fn services_need_a_route() {
        let routes = ServiceRoutes::default();
        let config = ClientConfig::from_json(&serde_json::json!({
            "service": {"namespace": "system", "name": "hooks", "path": "/mutate"}
        }));
        let err = target(&config, &routes, Duration::from_secs(10)).unwrap_err();
        let err = err.message();
        assert!(
            err.starts_with("Post \"https://hooks.system.svc:443/mutate?timeout=10s\": "),
            "{err}"
        );
        routes.set("system", "hooks", "127.0.0.1:9443".parse().unwrap());
        let t = target(&config, &routes, Duration::from_secs(10)).unwrap();
        assert_eq!(t.dial, "127.0.0.1:9443");
        assert_eq!(t.server_name, "hooks.system.svc");
    }

    #[test]
    fn answers_without_a_status_get_client_gos_generic_one() {
        let answer = Answer {
            code: 500,
            content_type: "text/plain".into(),
            body: Bytes::from_static(b"boom\n"),
        };
        let CallError::Status(status) = answer_of(answer).unwrap_err() else {
            panic!("not a status");
        };
        assert_eq!(
            status.message,
            "an error on the server (\"boom\") has prevented the request from succeeding"
        );
        assert_eq!(status.code, 500);
    }
}
