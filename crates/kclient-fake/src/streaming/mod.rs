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
pub(crate) mod handlers;
mod kubelet;
mod port_forward;
mod protocol;

use std::future::Future;
use std::sync::Arc;

use http::{HeaderMap, Method, Request, Response};
use hyper::body::Incoming;
use kclient_core::ApiError;
use serde_json::Value;

pub use exec::{Process, ProcessOutput, ProcessStdin};
pub use handlers::ExecRequest;
pub use kubelet::FakeKubelet;
pub use port_forward::{echo_port, forward_to_address, PortForwardRequest};

use crate::query::Query;
use crate::request::ApiRequest;
use crate::response::Body;
use crate::router::{route, Route};
use crate::state::Shared;
use protocol::all_values;

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

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
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
