//! A tiny API server of the tests' own on 127.0.0.1, for what kclient-fake will not do:
//! answer a watch with `200` and its headers and then stay silent, ignoring
//! `timeoutSeconds` (a broken server, or a proxy in front of one), or hand out the same
//! continue token forever. Over HTTP/1.1 (plain) or HTTP/2 (TLS, negotiated by ALPN, with a
//! self-signed certificate the client is told not to verify). Every request is recorded,
//! with the time it arrived on tokio's clock, and handed to the test in order.
#![allow(dead_code)] // each test uses part of it

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use http::{Request, Response, Version};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use kclient_cache::{Store, StoreError};
use kclient_core::{DeletedObject, Resource, ResourceExt};
use kclient_rest::{Config, Proxy, RestClient};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A response body.
pub type Body = BoxBody<Bytes, Infallible>;

/// How the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1 over plain TCP.
    Http1,
    /// HTTP/2 over TLS (ALPN offers h2 and http/1.1; the client picks h2).
    Http2,
}

impl Protocol {
    /// The HTTP version requests arrive in.
    pub fn version(self) -> Version {
        match self {
            Protocol::Http1 => Version::HTTP_11,
            Protocol::Http2 => Version::HTTP_2,
        }
    }
}

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The path.
    pub path: String,
    /// The query parameters.
    pub query: HashMap<String, String>,
    /// The HTTP version.
    pub version: Version,
    /// When it arrived (tokio's clock).
    pub at: Instant,
}

impl Seen {
    /// Whether it is a watch.
    pub fn is_watch(&self) -> bool {
        self.param("watch").is_some_and(|w| w == "true" || w == "1")
    }

    /// A query parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }

    /// The `timeoutSeconds` it asked for.
    pub fn timeout(&self) -> Duration {
        let seconds = self.param("timeoutSeconds").expect("a timeoutSeconds");
        Duration::from_secs(seconds.parse().expect("whole seconds"))
    }
}

type Handler = Arc<dyn Fn(&Seen) -> Response<Body> + Send + Sync>;

/// The server; dropping it stops accepting connections.
pub struct MisbehavingServer {
    url: String,
    protocol: Protocol,
    requests: mpsc::UnboundedReceiver<Seen>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MisbehavingServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl MisbehavingServer {
    /// Starts a server answering every request with `handler`.
    pub async fn start(
        protocol: Protocol,
        handler: impl Fn(&Seen) -> Response<Body> + Send + Sync + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let tls = (protocol == Protocol::Http2).then(tls_acceptor);
        let (sent, requests) = mpsc::unbounded_channel();
        let handler: Handler = Arc::new(handler);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (handler, sent, tls) = (handler.clone(), sent.clone(), tls.clone());
                tokio::spawn(async move {
                    match tls {
                        None => serve(TokioIo::new(stream), handler, sent).await,
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(stream).await {
                                serve(TokioIo::new(stream), handler, sent).await;
                            }
                        }
                    }
                });
            }
        });
        let scheme = match protocol {
            Protocol::Http1 => "http",
            Protocol::Http2 => "https",
        };
        Self {
            url: format!("{scheme}://{addr}"),
            protocol,
            requests,
            task,
        }
    }

    /// A REST client for the server: no client-side rate limit, no proxy, and (HTTPS) a
    /// certificate accepted unverified.
    pub fn rest(&self) -> RestClient {
        let mut config = Config::new(&self.url);
        config.qps = None;
        config.proxy = Proxy::Direct;
        config.tls.insecure = self.protocol == Protocol::Http2;
        RestClient::new(config).unwrap()
    }

    /// The next request, in the protocol the server speaks. Bounded (a day of tokio's
    /// paused clock) so that a client that never comes back fails the test instead of
    /// hanging it.
    pub async fn next_request(&mut self) -> Seen {
        let seen = tokio::time::timeout(Duration::from_secs(24 * 3600), self.requests.recv())
            .await
            .expect("no request within a day")
            .expect("the server stopped");
        assert_eq!(seen.version, self.protocol.version(), "{seen:?}");
        seen
    }
}

async fn serve<I>(io: TokioIo<I>, handler: Handler, sent: mpsc::UnboundedSender<Seen>)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let seen = Seen {
            path: req.uri().path().to_owned(),
            query: query(req.uri().query().unwrap_or_default()),
            version: req.version(),
            at: Instant::now(),
        };
        let response = handler(&seen);
        let _ = sent.send(seen);
        async move { Ok::<_, Infallible>(response) }
    });
    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
        .serve_connection(io, service)
        .await;
}

/// The parameters of a query string (the values the tests look at need no decoding).
fn query(query: &str) -> HashMap<String, String> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// A TLS acceptor with a fresh self-signed certificate, offering h2 and http/1.1.
fn tls_acceptor() -> tokio_rustls::TlsAcceptor {
    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![certified.cert.der().clone()], key)
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// A ConfigMap in `default` at a resourceVersion.
pub fn config_map(name: &str, resource_version: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "default", "resourceVersion": resource_version}})
}

/// A ConfigMap list at `resource_version`, with a continue token if given.
pub fn list(items: Vec<Value>, resource_version: &str, continue_: Option<&str>) -> Response<Body> {
    let mut metadata = json!({"resourceVersion": resource_version});
    if let Some(token) = continue_ {
        metadata["continue"] = json!(token);
    }
    let body =
        json!({"apiVersion": "v1", "kind": "ConfigMapList", "metadata": metadata, "items": items});
    Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())).boxed())
        .unwrap()
}

/// A watch answered with `200`, its headers and these events, then silence: the body never
/// ends, whatever the `timeoutSeconds`.
pub fn watch_then_silence(events: Vec<(&str, Value)>) -> Response<Body> {
    let frames: Vec<_> = events
        .into_iter()
        .map(|(kind, object)| {
            let line = format!("{}\n", json!({"type": kind, "object": object}));
            Ok::<_, Infallible>(Frame::data(Bytes::from(line)))
        })
        .collect();
    let body = futures::stream::iter(frames).chain(futures::stream::pending());
    Response::builder()
        .header("content-type", "application/json")
        .body(BodyExt::boxed(StreamBody::new(body)))
        .unwrap()
}

/// A watch answered with `200` and its headers, then nothing, ever.
pub fn silent_watch() -> Response<Body> {
    watch_then_silence(Vec::new())
}

/// A store that tells the test each write, as `add default/b 11` or `replace [default/a] 10`,
/// through a channel (so a test waits for a write without polling).
pub struct Writes<K>(
    mpsc::UnboundedSender<String>,
    std::marker::PhantomData<fn(K)>,
);

impl<K> Writes<K> {
    /// The store and the receiving end of its writes.
    pub fn new() -> (Self, mpsc::UnboundedReceiver<String>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self(tx, std::marker::PhantomData), rx)
    }
}

impl<K: Resource> Writes<K> {
    fn tell(&self, what: &str, obj: &K) {
        let key = kclient_core::meta_namespace_key(obj);
        let rv = obj.resource_version().unwrap_or_default();
        let _ = self.0.send(format!("{what} {key} {rv}"));
    }
}

impl<K: Resource> Store<K> for Writes<K> {
    fn add(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.tell("add", &obj);
        Ok(())
    }

    fn update(&self, obj: Arc<K>) -> Result<(), StoreError> {
        self.tell("update", &obj);
        Ok(())
    }

    fn delete(&self, obj: DeletedObject<K>) -> Result<(), StoreError> {
        if let Some(obj) = obj.last_known() {
            self.tell("delete", obj);
        }
        Ok(())
    }

    fn replace(&self, list: Vec<Arc<K>>, resource_version: &str) -> Result<(), StoreError> {
        let keys: Vec<String> = list
            .iter()
            .map(|o| kclient_core::meta_namespace_key(&**o))
            .collect();
        let _ = self
            .0
            .send(format!("replace [{}] {resource_version}", keys.join(" ")));
        Ok(())
    }

    fn resync(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn list_keys(&self) -> Vec<String> {
        Vec::new()
    }
}

/// The next write a [`Writes`] store was given, bounded like
/// [`MisbehavingServer::next_request`].
pub async fn next_write(writes: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(24 * 3600), writes.recv())
        .await
        .expect("no write within a day")
        .expect("the store was dropped")
}
