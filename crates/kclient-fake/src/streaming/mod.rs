//! Exec, attach and port-forward, served for the fake's pods through handlers the test
//! installs ([`FakeApiServer::set_exec_handler`](crate::FakeApiServer::set_exec_handler),
//! [`set_port_forward_handler`](crate::FakeApiServer::set_port_forward_handler)): the test
//! plays the kubelet and the container runtime, the fake speaks the protocols as
//! kube-apiserver 1.37 does.
//!
//! - `pods/exec` and `pods/attach`: a WebSocket with `v5.channel.k8s.io` (or
//!   `v4.channel.k8s.io`, which a real cluster serves through the kubelet), the empty first
//!   message on the lowest channel asked for, the process's output, its stdin (ended by v5's
//!   CLOSE signal), terminal resizes, and the `Status` it ends with (success, or
//!   `NonZeroExitCode` with the code), then the close, after which the server waits for the
//!   client's close.
//! - `pods/portforward`: SPDY/3.1 through a WebSocket tunnel (`SPDY/3.1+portforward.k8s.io`)
//!   or over a plain SPDY upgrade, with the kubelet's stream pairing
//!   (`kclient_streaming::portforward::server`).
//!
//! Before upgrading, the checks of kube-apiserver (the pod exists: `404`; a valid container,
//! named when there are several: `400`; a node assigned: `400 pod P does not have a host
//! assigned`). A handler stands in for the kubelet of every node, so the Node object need not
//! exist. Then the kubelet's: a pod whose `status.phase` is not `Running` has no running
//! container, which exec and attach learn after the upgrade (the error channel's
//! `InternalError`: `unable to upgrade connection: container not found ("c")`, as
//! kube-apiserver translates the kubelet's refusal) and port-forward from the answer to the
//! upgrade (`500 pod not found ("name_namespace")`, the kubelet's, passed through).
//!
//! Without a handler, the subresources fail as a cluster with nothing running does (see the
//! `connect` module). [`FakeKubelet`] serves the same handlers as a kubelet, for a real
//! kube-apiserver to proxy to.

mod exec;
mod kubelet;
mod port_forward;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http::{header, HeaderMap, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use kclient_core::ApiError;
use parking_lot::Mutex;
use serde_json::Value;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_util::sync::CancellationToken;

pub use exec::{Process, ProcessOutput, ProcessStdin};
pub use kubelet::FakeKubelet;
pub use port_forward::{echo_port, forward_to_address, PortForwardRequest};

use crate::query::Query;
use crate::request::ApiRequest;
use crate::response::{self, Body};
use crate::router::{route, Route};
use crate::state::Shared;

/// What an exec or an attach asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod.
    pub pod: String,
    /// The container (the pod's only one when the request named none).
    pub container: String,
    /// The command and its arguments; empty for an attach.
    pub command: Vec<String>,
    /// Whether this is an attach (to the container's main process) rather than an exec.
    pub attach: bool,
    /// Whether the client sends stdin.
    pub stdin: bool,
    /// Whether it wants stdout.
    pub stdout: bool,
    /// Whether it wants stderr.
    pub stderr: bool,
    /// Whether the process has a terminal.
    pub tty: bool,
}

/// Runs the "process" of an exec or attach and returns its exit code.
pub(crate) type ExecHandler =
    Arc<dyn Fn(Process) -> Pin<Box<dyn Future<Output = i32> + Send>> + Send + Sync>;

/// Connects a forwarded connection to a port; an error goes to the client's error stream.
pub(crate) type PortForwardHandler = Arc<
    dyn Fn(
            PortForwardRequest,
            kclient_streaming::spdy::Stream,
        ) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>>
        + Send
        + Sync,
>;

/// The handlers a test installed, and the end of every session when the server goes.
#[derive(Default)]
pub(crate) struct Handlers {
    exec: Mutex<Option<ExecHandler>>,
    port_forward: Mutex<Option<PortForwardHandler>>,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for Handlers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handlers")
            .field("exec", &self.exec.lock().is_some())
            .field("port_forward", &self.port_forward.lock().is_some())
            .finish()
    }
}

impl Drop for Handlers {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

impl Handlers {
    pub(crate) fn set_exec(&self, handler: ExecHandler) {
        *self.exec.lock() = Some(handler);
    }

    pub(crate) fn set_port_forward(&self, handler: PortForwardHandler) {
        *self.port_forward.lock() = Some(handler);
    }
}

/// Which streaming subresource a request addresses, when a handler serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Exec,
    Attach,
    PortForward,
}

/// The pod and subresource of a request this module serves: `pods/{name}/{exec,attach,
/// portforward}` with a handler installed for it.
fn served(shared: &Shared, req: &Request<Incoming>) -> Option<(String, String, Kind)> {
    let Route::Resource(path) = route(req.uri().path()) else {
        return None;
    };
    if path.group.is_empty() && path.version == "v1" && path.resource == "pods" {
        let kind = match path.subresource.as_deref()? {
            "exec" => Kind::Exec,
            "attach" => Kind::Attach,
            "portforward" => Kind::PortForward,
            _ => return None,
        };
        let installed = match kind {
            Kind::Exec | Kind::Attach => shared.streaming.exec.lock().is_some(),
            Kind::PortForward => shared.streaming.port_forward.lock().is_some(),
        };
        return installed.then(|| {
            (
                path.namespace.unwrap_or_default(),
                path.name.unwrap_or_default(),
                kind,
            )
        });
    }
    None
}

/// Serves the request if it is an exec, attach or port-forward with a handler installed;
/// gives it back otherwise.
pub(crate) async fn try_serve(
    shared: &Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Request<Incoming>> {
    let Some((namespace, name, kind)) = served(shared, &req) else {
        return Err(req);
    };
    // Recorded, delayed and offered to the reactors as every request is (an upgrade has no
    // body to read).
    let seen = ApiRequest {
        method: req.method().clone(),
        path: req.uri().path().to_owned(),
        query: req.uri().query().map(str::to_owned),
        headers: req.headers().clone(),
        body: Default::default(),
        user: None,
    };
    if let Some(answer) = shared.intercept(&seen).await {
        return Ok(answer);
    }
    Ok(match serve(shared, req, &namespace, &name, kind) {
        Ok(res) => res,
        Err(e) => crate::negotiate::error_negotiated(&HeaderMap::new(), &e),
    })
}

fn serve(
    shared: &Arc<Shared>,
    mut req: Request<Incoming>,
    namespace: &str,
    name: &str,
    kind: Kind,
) -> Result<Response<Body>, ApiError> {
    if !matches!(*req.method(), Method::GET | Method::POST) {
        return Err(crate::errors::method_not_allowed());
    }
    let info = shared
        .registry
        .catalogue
        .get("", "v1", "pods")
        .ok_or_else(crate::errors::resource_not_found)?;
    let pod = shared.registry.get(&info, namespace, name)?;
    let q = Query::parse(req.uri().query());
    let container = match kind {
        Kind::PortForward => String::new(),
        Kind::Exec | Kind::Attach => {
            crate::request::validate_container(&pod, name, q.str("container"))?
        }
    };
    if str_at(&pod, "/spec/nodeName").is_empty() {
        return Err(ApiError::bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    let running = str_at(&pod, "/status/phase") == "Running";
    let on_upgrade = hyper::upgrade::on(&mut req);
    let shutdown = shared.streaming.shutdown.clone();
    match kind {
        Kind::Exec | Kind::Attach => {
            let Some(handler) = shared.streaming.exec.lock().clone() else {
                return Err(ApiError::bad_request("no exec handler"));
            };
            let request = exec_request(&q, req.uri().query(), kind, namespace, name, container)?;
            Ok(exec::upgrade(
                req.headers(),
                on_upgrade,
                request,
                running,
                handler,
                shutdown,
            ))
        }
        Kind::PortForward => {
            let Some(handler) = shared.streaming.port_forward.lock().clone() else {
                return Err(ApiError::bad_request("no port-forward handler"));
            };
            let target = port_forward::Target {
                namespace: namespace.to_owned(),
                pod: name.to_owned(),
                uid: str_at(&pod, "/metadata/uid").to_owned(),
            };
            Ok(port_forward::upgrade(
                req.headers(),
                on_upgrade,
                target,
                running,
                handler,
                shutdown,
            ))
        }
    }
}

/// The exec or attach (`kind`) the request's query asks for, in `container` of pod `name`
/// (`raw_query`: the query as sent, for the repeated `command`).
fn exec_request(
    q: &Query,
    raw_query: Option<&str>,
    kind: Kind,
    namespace: &str,
    name: &str,
    container: String,
) -> Result<ExecRequest, ApiError> {
    let flag = |name: &str| q.bool(name).map(|b| b.unwrap_or(false));
    let command = match kind {
        Kind::Exec => all_values(raw_query, "command"),
        _ => Vec::new(),
    };
    Ok(ExecRequest {
        namespace: namespace.to_owned(),
        pod: name.to_owned(),
        container,
        command,
        attach: kind == Kind::Attach,
        stdin: flag("stdin")?,
        stdout: flag("stdout")?,
        stderr: flag("stderr")?,
        tty: flag("tty")?,
    })
}

/// Every value of a repeated query parameter, in order (`command`).
pub(super) fn all_values(query: Option<&str>, name: &str) -> Vec<String> {
    query
        .unwrap_or("")
        .split('&')
        .filter_map(|pair| pair.split_once('=').or(Some((pair, ""))))
        .filter(|(k, _)| crate::query::percent_decode(k) == name)
        .map(|(_, v)| crate::query::percent_decode(v))
        .collect()
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// A plain-text answer (what the kubelet writes, passed through by kube-apiserver).
pub(super) fn text(code: StatusCode, message: String) -> Response<Body> {
    let mut res = Response::new(response::full(message));
    *res.status_mut() = code;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res
}

/// Whether the request asks for `Upgrade: <protocol>` with `Connection: Upgrade`.
pub(super) fn upgrade_to(headers: &HeaderMap, protocol: &str) -> bool {
    let has_token = |name: header::HeaderName, token: &str| {
        headers.get_all(name).iter().any(|v| {
            v.to_str()
                .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
        })
    };
    has_token(header::CONNECTION, "upgrade") && has_token(header::UPGRADE, protocol)
}

/// httpstream's `Handshake` on a SPDY upgrade: the first protocol the client offers in
/// `X-Stream-Protocol-Version` that `supported` has, with httpstream's refusals (`400`
/// without the header, `403` with `X-Accepted-Stream-Protocol-Versions` when none fits); the
/// `101` and the protocol chosen.
fn spdy_handshake(
    headers: &HeaderMap,
    supported: &[&str],
) -> Result<(Response<Body>, String), Response<Body>> {
    use kclient_streaming::spdy::{HEADER_PROTOCOL_VERSION, HEADER_SPDY31};
    if !upgrade_to(headers, HEADER_SPDY31) {
        return Err(text(
            StatusCode::BAD_REQUEST,
            "unable to upgrade: missing upgrade headers in request".into(),
        ));
    }
    let offered: Vec<String> = headers
        .get_all(HEADER_PROTOCOL_VERSION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    if offered.is_empty() {
        return Err(text(
            StatusCode::BAD_REQUEST,
            format!(
                "unable to upgrade: header {HEADER_PROTOCOL_VERSION} does not exist in request"
            ),
        ));
    }
    let Some(chosen) = offered
        .iter()
        .find(|p| supported.contains(&p.as_str()))
        .cloned()
    else {
        let mut refusal = text(
            StatusCode::FORBIDDEN,
            format!(
                "unable to upgrade: unable to negotiate protocol: client supports {offered:?}, server accepts {supported:?}"
            ),
        );
        for accepted in supported {
            if let Ok(v) = header::HeaderValue::from_str(accepted) {
                refusal
                    .headers_mut()
                    .append("X-Accepted-Stream-Protocol-Versions", v);
            }
        }
        return Err(refusal);
    };
    let mut res = Response::new(response::full(""));
    *res.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = res.headers_mut();
    h.insert(
        header::CONNECTION,
        header::HeaderValue::from_static("Upgrade"),
    );
    h.insert(
        header::UPGRADE,
        header::HeaderValue::from_static(HEADER_SPDY31),
    );
    if let Ok(v) = header::HeaderValue::from_str(&chosen) {
        h.insert(HEADER_PROTOCOL_VERSION, v);
    }
    Ok((res, chosen))
}

/// The subprotocols a WebSocket request offers, in its order.
fn offered_protocols(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_owned())
        .filter(|p| !p.is_empty())
        .collect()
}

/// The `101` of a WebSocket handshake choosing `protocol`, or why the handshake is refused.
fn websocket_accept(headers: &HeaderMap, protocol: &str) -> Result<Response<Body>, Response<Body>> {
    let version = headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if version.trim() != "13" {
        return Err(text(
            StatusCode::BAD_REQUEST,
            "websocket: unsupported version: 13 not found in 'Sec-Websocket-Version' header".into(),
        ));
    }
    let Some(key) = headers.get(header::SEC_WEBSOCKET_KEY) else {
        return Err(text(
            StatusCode::BAD_REQUEST,
            "websocket: not a websocket handshake: 'Sec-WebSocket-Key' header is missing".into(),
        ));
    };
    let mut res = Response::new(response::full(""));
    *res.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = res.headers_mut();
    h.insert(
        header::UPGRADE,
        header::HeaderValue::from_static("websocket"),
    );
    h.insert(
        header::CONNECTION,
        header::HeaderValue::from_static("Upgrade"),
    );
    if let Ok(accept) = header::HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
    }
    if let Ok(p) = header::HeaderValue::from_str(protocol) {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, p);
    }
    Ok(res)
}

impl crate::FakeApiServer {
    /// Serves `pods/exec` and `pods/attach` of every pod with `handler`, which plays the
    /// process: it reads [`Process::stdin`], writes [`Process::stdout`] and
    /// [`Process::stderr`], and returns the exit code. See the module's rules for what is
    /// checked first (a pod that is not `Running` gets the kubelet's "container not found").
    /// It serves the sessions opened after it is set.
    ///
    /// ```no_run
    /// # async fn demo(server: kclient_fake::FakeApiServer) {
    /// use tokio::io::{AsyncReadExt, AsyncWriteExt};
    ///
    /// server.set_exec_handler(|mut process: kclient_fake::Process| async move {
    ///     // `cat`: stdin to stdout, then exit 0.
    ///     let mut input = Vec::new();
    ///     let _ = process.stdin.read_to_end(&mut input).await;
    ///     let _ = process.stdout.write_all(&input).await;
    ///     0
    /// });
    /// # }
    /// ```
    pub fn set_exec_handler<F, Fut>(&self, handler: F)
    where
        F: Fn(Process) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = i32> + Send + 'static,
    {
        self.shared()
            .streaming
            .set_exec(Arc::new(move |process| Box::pin(handler(process))));
    }

    /// Serves `pods/portforward` of every pod with `handler`, which connects each forwarded
    /// connection (an `AsyncRead + AsyncWrite`) to something: [`echo_port`],
    /// [`forward_to_address`] (a real listener of the test), or a closure. Its error is
    /// written to the client's error stream as the kubelet words it (`error forwarding port
    /// P to pod NAME, uid UID: …`). A handler serves the port-forward connections opened
    /// after it is set (an open connection keeps the one it started with).
    pub fn set_port_forward_handler<F, Fut>(&self, handler: F)
    where
        F: Fn(PortForwardRequest, kclient_streaming::spdy::Stream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        self.shared()
            .streaming
            .set_port_forward(Arc::new(move |request, stream| {
                Box::pin(handler(request, stream))
            }));
    }
}
