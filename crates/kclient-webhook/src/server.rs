//! [`WebhookServer`]: the HTTPS server of a process's admission and conversion webhooks.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::FutureExt;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kclient_core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use kclient_core::conversion::{ConversionResponse, ConversionReview};
use kclient_core::{CancellationToken, Resource, Status};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::admission::{
    AdmissionHandler, CustomDefaulter, CustomValidator, Defaulting, Validating,
};
use crate::configuration::{
    default_path, Admission, ClientConfig, Registration, WebhookOptions, CONVERSION_PATH,
};
use crate::conversion::Conversion;
use crate::metrics::WebhookMetrics;
use crate::tls::{Resolver, ServingCertificate};
use crate::WebhookError;

/// The largest request body read (controller-runtime's limit: a review carries two objects
/// of up to ~3 MiB).
pub const MAX_REQUEST_BYTES: usize = 7 * 1024 * 1024;
/// How long a handler may take before the server answers for it (the API server waits 30 s
/// at most).
pub const DEFAULT_HANDLER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connections still open at shutdown may take to finish.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// A conversion of any hub type, as the server keeps it.
trait Converter: Send + Sync {
    fn review(&self, review: &kclient_core::conversion::ConversionRequest) -> ConversionResponse;
}

impl<H> Converter for Conversion<H>
where
    H: k8s_openapi::Resource + Serialize + DeserializeOwned + 'static,
{
    fn review(&self, request: &kclient_core::conversion::ConversionRequest) -> ConversionResponse {
        Conversion::review(self, request)
    }
}

/// What a path serves.
#[derive(Clone)]
enum Route {
    Admission(Arc<dyn AdmissionHandler>),
    /// The conversions, by the `group/Kind` of the objects they convert.
    Conversion(Arc<BTreeMap<(String, String), Arc<dyn Converter>>>),
}

/// Builds a [`WebhookServer`]: the handlers, then [`bind`](Self::bind).
pub struct WebhookServerBuilder {
    admission: BTreeMap<String, Arc<dyn AdmissionHandler>>,
    conversions: BTreeMap<(String, String), Arc<dyn Converter>>,
    registrations: Vec<Registration>,
    metrics: WebhookMetrics,
    handler_timeout: Duration,
}

impl std::fmt::Debug for WebhookServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServerBuilder")
            .field("paths", &self.admission.keys().collect::<Vec<_>>())
            .field("handler_timeout", &self.handler_timeout)
            .finish_non_exhaustive()
    }
}

impl Default for WebhookServerBuilder {
    fn default() -> Self {
        Self {
            admission: BTreeMap::new(),
            conversions: BTreeMap::new(),
            registrations: Vec::new(),
            metrics: WebhookMetrics::default(),
            handler_timeout: DEFAULT_HANDLER_TIMEOUT,
        }
    }
}

impl WebhookServerBuilder {
    fn register(
        mut self,
        admission: Admission,
        resource: kclient_core::ApiResource,
        handler: Arc<dyn AdmissionHandler>,
        options: WebhookOptions,
    ) -> Self {
        let path = default_path(admission, &resource);
        self.admission.insert(path.clone(), handler);
        self.registrations.retain(|r| r.path != path);
        self.registrations.push(Registration {
            admission,
            path,
            resource,
            options,
        });
        self
    }

    /// Validates `K` with `validator` at controller-runtime's path
    /// (`/validate-<group>-<version>-<kind>`), for creates and updates.
    pub fn validator<K, V>(self, validator: V) -> Self
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
        V: CustomValidator<K>,
    {
        self.validator_with::<K, V>(validator, WebhookOptions::default())
    }

    /// [`validator`](Self::validator) with its registration's `options` (deletions, failure
    /// policy, selectors …).
    pub fn validator_with<K, V>(self, validator: V, options: WebhookOptions) -> Self
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
        V: CustomValidator<K>,
    {
        let handler = Arc::new(Validating::<K, V>::new(validator));
        self.register(
            Admission::Validating,
            K::api_resource(&()),
            handler,
            options,
        )
    }

    /// Defaults `K` with `defaulter` at controller-runtime's path
    /// (`/mutate-<group>-<version>-<kind>`), on creates and updates.
    pub fn defaulter<K, D>(self, defaulter: D) -> Self
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Serialize + Send + Sync + 'static,
        D: CustomDefaulter<K>,
    {
        self.defaulter_with::<K, D>(defaulter, WebhookOptions::default())
    }

    /// [`defaulter`](Self::defaulter) with its registration's `options`.
    pub fn defaulter_with<K, D>(self, defaulter: D, options: WebhookOptions) -> Self
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + Serialize + Send + Sync + 'static,
        D: CustomDefaulter<K>,
    {
        let handler = Arc::new(Defaulting::<K, D>::new(defaulter));
        self.register(Admission::Mutating, K::api_resource(&()), handler, options)
    }

    /// Converts the versions of `H`'s kind at [`CONVERSION_PATH`] (several kinds share it).
    pub fn conversion<H>(mut self, conversion: Conversion<H>) -> Self
    where
        H: k8s_openapi::Resource + Serialize + DeserializeOwned + 'static,
    {
        self.conversions.insert(
            (H::GROUP.to_owned(), H::KIND.to_owned()),
            Arc::new(conversion),
        );
        self
    }

    /// Counts into `metrics` (registered in the manager's registry; see [`WebhookMetrics`]).
    pub fn metrics(mut self, metrics: WebhookMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// How long a handler may take ([`DEFAULT_HANDLER_TIMEOUT`]); past it the request is
    /// answered with a `500` status (the API server applies the failure policy).
    pub fn handler_timeout(mut self, timeout: Duration) -> Self {
        self.handler_timeout = timeout;
        self
    }

    /// Listens on `address` (port 0 for any free port) with `certificate` (read now: a
    /// certificate that does not load fails here).
    pub async fn bind(
        self,
        address: SocketAddr,
        certificate: ServingCertificate,
    ) -> Result<WebhookServer, WebhookError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let stop_reload = CancellationToken::new();
        let resolver = Resolver::start(
            &certificate,
            Arc::clone(&provider),
            self.metrics.clone(),
            &stop_reload,
        )
        .await?;
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| WebhookError::Certificate(e.to_string()))?
            .with_no_client_auth()
            .with_cert_resolver(resolver);
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let listener = TcpListener::bind(address)
            .await
            .map_err(|source| WebhookError::Bind { address, source })?;
        let mut routes: BTreeMap<String, Route> = self
            .admission
            .into_iter()
            .map(|(path, handler)| (path, Route::Admission(handler)))
            .collect();
        if !self.conversions.is_empty() {
            routes.insert(
                CONVERSION_PATH.to_owned(),
                Route::Conversion(Arc::new(self.conversions)),
            );
        }
        Ok(WebhookServer {
            listener,
            tls: Arc::new(tls),
            stop_reload,
            shared: Arc::new(Shared {
                routes,
                metrics: self.metrics,
                handler_timeout: self.handler_timeout,
            }),
            registrations: self.registrations,
        })
    }
}

/// What every connection reads.
struct Shared {
    routes: BTreeMap<String, Route>,
    metrics: WebhookMetrics,
    handler_timeout: Duration,
}

/// The HTTPS server of a process's webhooks (controller-runtime's `webhook.Server`): HTTP/2
/// and HTTP/1.1, its certificate reloaded when its files change, each handler at its path.
///
/// It runs in every replica, leader or not (a webhook must answer whichever replica the
/// Service picks): run it beside the controllers, or under a `Manager` with
/// `Manager::add_runnable`.
pub struct WebhookServer {
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    stop_reload: CancellationToken,
    shared: Arc<Shared>,
    registrations: Vec<Registration>,
}

impl std::fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServer")
            .field("address", &self.local_addr().ok())
            .field("paths", &self.paths())
            .finish_non_exhaustive()
    }
}

impl WebhookServer {
    /// A builder.
    pub fn builder() -> WebhookServerBuilder {
        WebhookServerBuilder::default()
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The paths it serves.
    pub fn paths(&self) -> Vec<&str> {
        self.shared.routes.keys().map(String::as_str).collect()
    }

    /// The `ValidatingWebhookConfiguration` named `name` for every validator, reached
    /// through `client`.
    pub fn validating_webhook_configuration(
        &self,
        name: &str,
        client: &ClientConfig,
    ) -> ValidatingWebhookConfiguration {
        ValidatingWebhookConfiguration {
            metadata: named(name),
            webhooks: Some(self.webhooks(Admission::Validating, |r| r.validating(client))),
        }
    }

    /// The `MutatingWebhookConfiguration` named `name` for every defaulter, reached through
    /// `client`.
    pub fn mutating_webhook_configuration(
        &self,
        name: &str,
        client: &ClientConfig,
    ) -> MutatingWebhookConfiguration {
        MutatingWebhookConfiguration {
            metadata: named(name),
            webhooks: Some(self.webhooks(Admission::Mutating, |r| r.mutating(client))),
        }
    }

    /// The registrations of `admission` handlers, each made into a webhook by `webhook`.
    fn webhooks<W>(&self, admission: Admission, webhook: impl Fn(&Registration) -> W) -> Vec<W> {
        self.registrations
            .iter()
            .filter(|r| r.admission == admission)
            .map(webhook)
            .collect()
    }

    /// Serves until `stop` fires; then accepts no more connections and gives the open ones
    /// up to 10 s to finish.
    pub async fn run(self, stop: CancellationToken) -> Result<(), WebhookError> {
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::clone(&self.tls));
        let mut connections = JoinSet::new();
        loop {
            let accepted = tokio::select! {
                () = stop.cancelled() => break,
                accepted = self.listener.accept() => accepted,
            };
            let (tcp, peer) = match accepted {
                Ok(pair) => pair,
                Err(error) => {
                    // Out of file descriptors and the like: wait a little and go on.
                    tracing::warn!(%error, "the webhook server could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let (acceptor, shared) = (acceptor.clone(), Arc::clone(&self.shared));
            connections.spawn(async move {
                let tls = match acceptor.accept(tcp).await {
                    Ok(tls) => tls,
                    Err(error) => {
                        tracing::debug!(%error, %peer, "a TLS handshake with the webhook server failed");
                        return;
                    }
                };
                let service = hyper::service::service_fn(move |request| {
                    let shared = Arc::clone(&shared);
                    async move { Ok::<_, Infallible>(shared.serve(request).await) }
                });
                let served = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
                if let Err(error) = served {
                    tracing::debug!(%error, %peer, "a webhook connection ended with an error");
                }
            });
            while connections.try_join_next().is_some() {}
        }
        self.stop_reload.cancel();
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        connections.abort_all();
        Ok(())
    }
}

/// Metadata that names a cluster-scoped object `name`.
fn named(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        ..Default::default()
    }
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.stop_reload.cancel();
    }
}

/// A JSON response.
fn json_response<T: Serialize>(status: StatusCode, body: &T) -> Response<Full<Bytes>> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(bytes)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// A plain-text response.
fn text_response(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// controller-runtime's `admission.Errored(code, err)`: not allowed, the code and message.
fn errored(uid: &str, code: u16, message: impl Into<String>) -> AdmissionResponse {
    AdmissionResponse::deny_with(
        uid,
        Status {
            code,
            message: message.into(),
            ..Status::default()
        },
    )
}

impl Shared {
    async fn serve(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path().to_owned();
        let Some(route) = self.routes.get(&path).cloned() else {
            return text_response(StatusCode::NOT_FOUND, format!("no webhook at {path}\n"));
        };
        if request.method() != Method::POST {
            return text_response(
                StatusCode::METHOD_NOT_ALLOWED,
                "webhooks are called with POST\n".into(),
            );
        }
        let labels = [("webhook", path.clone())];
        let in_flight = self.metrics.in_flight.get_or_create(&labels).clone();
        in_flight.inc();
        let started = Instant::now();
        let response = match route {
            Route::Admission(handler) => self.admission(&*handler, request).await,
            Route::Conversion(conversions) => self.conversion(&conversions, request).await,
        };
        in_flight.dec();
        self.metrics
            .latency
            .get_or_create(&labels)
            .observe(started.elapsed().as_secs_f64());
        self.metrics
            .requests
            .get_or_create(&[
                ("webhook", path),
                ("code", response.status().as_u16().to_string()),
            ])
            .inc();
        response
    }

    /// The request's body as JSON: an error for a wrong content type, one too large, one
    /// that is not JSON.
    async fn body<T: DeserializeOwned>(request: Request<Incoming>) -> Result<T, String> {
        let content_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if !content_type.starts_with("application/json") {
            return Err(format!(
                "contentType={content_type}, expected application/json"
            ));
        }
        let bytes = Limited::new(request.into_body(), MAX_REQUEST_BYTES)
            .collect()
            .await
            .map_err(|e| format!("unable to read the body from the incoming request: {e}"))?
            .to_bytes();
        if bytes.is_empty() {
            return Err("request body is empty".into());
        }
        serde_json::from_slice(&bytes).map_err(|e| format!("unable to decode the request: {e}"))
    }

    async fn admission(
        &self,
        handler: &dyn AdmissionHandler,
        request: Request<Incoming>,
    ) -> Response<Full<Bytes>> {
        let review: AdmissionReview<Value> = match Self::body(request).await {
            Ok(review) => review,
            Err(message) => {
                tracing::warn!(%message, "a malformed admission review");
                return json_response(StatusCode::OK, &errored("", 400, message).into_review());
            }
        };
        let Some(request) = review.request else {
            let response = errored("", 400, "the admission review has no request");
            return json_response(StatusCode::OK, &response.into_review());
        };
        let uid = request.uid.clone();
        let response = self.admit(handler, request).await;
        if !response.allowed {
            let message = response.status.as_ref().map(|s| s.message.as_str());
            tracing::info!(%uid, message = message.unwrap_or_default(), "admission denied");
        }
        json_response(StatusCode::OK, &response.into_review())
    }

    /// The handler's answer, within the timeout, a panic caught.
    async fn admit(
        &self,
        handler: &dyn AdmissionHandler,
        request: AdmissionRequest<Value>,
    ) -> AdmissionResponse {
        let uid = request.uid.clone();
        let answer = AssertUnwindSafe(handler.handle(request)).catch_unwind();
        match tokio::time::timeout(self.handler_timeout, answer).await {
            Ok(Ok(mut response)) => {
                response.uid = uid;
                response
            }
            Ok(Err(panic)) => {
                self.metrics.panics.inc();
                let message = panic_message(&*panic);
                tracing::error!(%uid, panic = %message, "an admission handler panicked");
                errored(&uid, 500, format!("panic: {message} [recovered]"))
            }
            Err(_) => {
                tracing::error!(%uid, timeout = ?self.handler_timeout, "an admission handler did not answer in time");
                errored(
                    &uid,
                    500,
                    format!(
                        "the webhook handler did not answer within {:?}",
                        self.handler_timeout
                    ),
                )
            }
        }
    }

    async fn conversion(
        &self,
        conversions: &BTreeMap<(String, String), Arc<dyn Converter>>,
        request: Request<Incoming>,
    ) -> Response<Full<Bytes>> {
        let review: ConversionReview = match Self::body(request).await {
            Ok(review) => review,
            Err(message) => {
                tracing::warn!(%message, "a malformed conversion review");
                return text_response(StatusCode::BAD_REQUEST, format!("{message}\n"));
            }
        };
        let Some(request) = review.request else {
            return text_response(
                StatusCode::BAD_REQUEST,
                "the conversion review has no request\n".into(),
            );
        };
        let group = request
            .desired_api_version
            .split_once('/')
            .map(|(g, _)| g)
            .unwrap_or_default()
            .to_owned();
        let kind = request
            .objects
            .first()
            .and_then(|o| o["kind"].as_str())
            .unwrap_or_default()
            .to_owned();
        let response = match conversions.get(&(group.clone(), kind.clone())) {
            // An empty request has nothing to convert.
            None if request.objects.is_empty() => {
                ConversionResponse::success(&request.uid, Vec::new())
            }
            None => ConversionResponse::failure(
                &request.uid,
                format!("no conversion for {kind} in {group}"),
            ),
            Some(converter) => {
                match std::panic::catch_unwind(AssertUnwindSafe(|| converter.review(&request))) {
                    Ok(response) => response,
                    Err(panic) => {
                        self.metrics.conversion_panics.inc();
                        let message = panic_message(&*panic);
                        tracing::error!(uid = %request.uid, panic = %message, "a conversion panicked");
                        ConversionResponse::failure(
                            &request.uid,
                            format!("panic: {message} [recovered]"),
                        )
                    }
                }
            }
        };
        json_response(StatusCode::OK, &response.into_review())
    }
}

/// What a panic said.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}
