//! Test servers on 127.0.0.1 (plain HTTP and HTTPS with a CA made in the test) and helpers.
#![allow(dead_code)]

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use futures::FutureExt;
use http::{HeaderMap, Method, StatusCode, Uri, Version};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use parking_lot::Mutex;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// A response body.
pub type Body = BoxBody<Bytes, Infallible>;

/// What the server saw.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: Method,
    pub uri: Uri,
    pub version: Version,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The DER of the client certificate, if one was presented.
    pub client_cert: Option<Vec<u8>>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

type Handler = Arc<dyn Fn(Recorded) -> BoxFuture<'static, http::Response<Body>> + Send + Sync>;

/// A server that answers every request with a handler and records what it saw.
pub struct TestServer {
    pub addr: SocketAddr,
    pub tls: bool,
    requests: Arc<Mutex<Vec<Recorded>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    /// A plain HTTP server.
    pub async fn http<F, Fut>(handler: F) -> Self
    where
        F: Fn(Recorded) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = http::Response<Body>> + Send + 'static,
    {
        Self::start(None, handler).await
    }

    /// An HTTPS server.
    pub async fn https<F, Fut>(tls: Arc<rustls::ServerConfig>, handler: F) -> Self
    where
        F: Fn(Recorded) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = http::Response<Body>> + Send + 'static,
    {
        Self::start(Some(tls), handler).await
    }

    async fn start<F, Fut>(tls: Option<Arc<rustls::ServerConfig>>, handler: F) -> Self
    where
        F: Fn(Recorded) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = http::Response<Body>> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(move |r| handler(r).boxed());
        let recorded = requests.clone();
        let is_tls = tls.is_some();
        let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let handler = handler.clone();
                let recorded = recorded.clone();
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    match acceptor {
                        None => serve(TokioIo::new(stream), None, handler, recorded).await,
                        Some(acceptor) => {
                            let Ok(tls) = acceptor.accept(stream).await else {
                                return;
                            };
                            let cert = tls
                                .get_ref()
                                .1
                                .peer_certificates()
                                .and_then(|c| c.first())
                                .map(|c| c.to_vec());
                            serve(TokioIo::new(tls), cert, handler, recorded).await
                        }
                    }
                });
            }
        });
        Self {
            addr,
            tls: is_tls,
            requests,
            task,
        }
    }

    /// `http://127.0.0.1:port` or `https://...`.
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// `https://localhost:port`.
    pub fn localhost_url(&self) -> String {
        format!("https://localhost:{}", self.addr.port())
    }

    /// Every request seen so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().clone()
    }
}

async fn serve<I>(
    io: TokioIo<I>,
    cert: Option<Vec<u8>>,
    handler: Handler,
    recorded: Arc<Mutex<Vec<Recorded>>>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req: http::Request<Incoming>| {
        let handler = handler.clone();
        let recorded = recorded.clone();
        let cert = cert.clone();
        async move {
            let (parts, body) = req.into_parts();
            let body = body
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            let r = Recorded {
                method: parts.method,
                uri: parts.uri,
                version: parts.version,
                headers: parts.headers,
                body,
                client_cert: cert,
            };
            recorded.lock().push(r.clone());
            Ok::<_, Infallible>(handler(r).await)
        }
    });
    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
        .serve_connection(io, service)
        .await;
}

/// A complete body.
pub fn full(body: impl Into<Bytes>) -> Body {
    Full::new(body.into()).boxed()
}

/// A JSON response.
pub fn json(status: u16, value: serde_json::Value) -> http::Response<Body> {
    http::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(full(value.to_string()))
        .unwrap()
}

/// A plain-text or HTML response.
pub fn text(status: u16, content_type: &str, body: &str) -> http::Response<Body> {
    http::Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(full(body.to_owned()))
        .unwrap()
}

/// A Status response, as the API server sends.
pub fn status(code: u16, reason: &str, message: &str) -> http::Response<Body> {
    json(
        code,
        serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": reason, "code": code,
        }),
    )
}

/// A response whose body is fed chunk by chunk through the returned sender; dropping the
/// sender ends the body.
pub fn streaming(status: StatusCode) -> (mpsc::UnboundedSender<Bytes>, http::Response<Body>) {
    let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, Infallible>(Frame::data(chunk)), rx))
    });
    let response = http::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(BodyExt::boxed(StreamBody::new(stream)))
        .unwrap();
    (tx, response)
}

/// A response whose body is the given chunks.
pub fn chunked(chunks: Vec<Vec<u8>>) -> http::Response<Body> {
    let stream = futures::stream::iter(
        chunks
            .into_iter()
            .map(|c| Ok::<_, Infallible>(Frame::data(Bytes::from(c)))),
    );
    http::Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(BodyExt::boxed(StreamBody::new(stream)))
        .unwrap()
}

/// `data` gzip-compressed.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write as _;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// A response of `body` in pieces of `split` bytes, gzip-compressed first if `gzipped`,
/// with no `Content-Type` if `content_type` is `None`.
pub fn pieces(
    body: &[u8],
    split: usize,
    gzipped: bool,
    content_type: Option<&'static str>,
) -> http::Response<Body> {
    let body = if gzipped { gzip(body) } else { body.to_vec() };
    let mut response = chunked(body.chunks(split).map(<[u8]>::to_vec).collect());
    let headers = response.headers_mut();
    headers.remove("content-type");
    if let Some(content_type) = content_type {
        headers.insert("content-type", http::HeaderValue::from_static(content_type));
    }
    if gzipped {
        headers.insert("content-encoding", http::HeaderValue::from_static("gzip"));
    }
    response
}

/// A request for the ConfigMaps of namespace `ns`.
pub fn configmaps(client: &kclient_rest::RestClient) -> kclient_rest::Request {
    client
        .get()
        .group_version(&kclient_core::GroupVersion::new("", "v1"))
        .namespace("ns")
        .resource("configmaps")
}

/// A CA, a server certificate for `localhost` and `127.0.0.1`, and a client certificate.
pub struct Pki {
    pub ca_pem: String,
    pub server_cert_pem: String,
    pub server_key_pem: String,
    pub client_cert_pem: String,
    pub client_key_pem: String,
    pub client_cert_der: Vec<u8>,
    issuer: Issuer<'static, KeyPair>,
}

fn ca(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

fn leaf(
    issuer: &Issuer<'static, KeyPair>,
    cn: &str,
    sans: Vec<String>,
) -> (String, String, Vec<u8>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(sans).unwrap();
    params.distinguished_name.push(DnType::CommonName, cn);
    let cert = params.signed_by(&key, issuer).unwrap();
    (cert.pem(), key.serialize_pem(), cert.der().to_vec())
}

impl Pki {
    pub fn new() -> Self {
        let (ca_pem, issuer) = ca("kclient test CA");
        let (server_cert_pem, server_key_pem, _) = leaf(
            &issuer,
            "kube-apiserver",
            vec![
                "localhost".into(),
                "127.0.0.1".into(),
                "kubernetes.default.svc".into(),
            ],
        );
        let (client_cert_pem, client_key_pem, client_cert_der) = leaf(&issuer, "jane", Vec::new());
        Self {
            ca_pem,
            server_cert_pem,
            server_key_pem,
            client_cert_pem,
            client_key_pem,
            client_cert_der,
            issuer,
        }
    }

    /// Another client certificate signed by the CA: its PEM, its key's PEM and its DER.
    pub fn client_identity(&self, cn: &str) -> (String, String, Vec<u8>) {
        leaf(&self.issuer, cn, Vec::new())
    }

    /// Another CA's PEM (for wrong-CA tests).
    pub fn other_ca_pem() -> String {
        ca("some other CA").0
    }

    /// A server config offering h2 and http/1.1; client certificates signed by the CA are
    /// accepted but not required.
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(self.ca_pem.as_bytes()) {
            roots.add(c.unwrap()).unwrap();
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .allow_unauthenticated()
        .build()
        .unwrap();
        let certs: Vec<_> = CertificateDer::pem_slice_iter(self.server_cert_pem.as_bytes())
            .map(Result::unwrap)
            .collect();
        let key = PrivateKeyDer::from_pem_slice(self.server_key_pem.as_bytes()).unwrap();
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs, key)
            .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Arc::new(config)
    }
}

/// A config for `url` with rate limiting off (so tests are not throttled) and no proxy.
pub fn config(url: &str) -> kclient_rest::Config {
    let mut c = kclient_rest::Config::new(url);
    c.qps = None;
    c.proxy = kclient_rest::Proxy::Direct;
    c
}

/// A tokio runtime with a paused clock.
pub fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}

/// A raw TCP server that accepts connections and hands each to `f` (for connections that break).
pub async fn raw_server<F, Fut>(f: F) -> (SocketAddr, tokio::task::JoinHandle<()>)
where
    F: Fn(tokio::net::TcpStream, usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let f = Arc::new(f);
    let task = tokio::spawn(async move {
        let mut n = 0;
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(f(stream, n));
            n += 1;
        }
    });
    (addr, task)
}
