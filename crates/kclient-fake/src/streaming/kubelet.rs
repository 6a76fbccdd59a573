//! [`FakeKubelet`]: a stand-in for a node's kubelet, so that a real kube-apiserver proxies
//! exec, attach and port-forward to the test's handlers. kube-apiserver reaches a pod's
//! kubelet at the address and port its Node's status names ([`FakeKubelet::node`] makes
//! one), over HTTPS (without `--kubelet-certificate-authority` it does not verify the
//! kubelet's certificate), and speaks SPDY to it: `POST /exec/{namespace}/{pod}/{container}`
//! and `/attach/…` with the channel protocol's streams (`streamType` `error`, `stdin`,
//! `stdout`, `stderr`, `resize`), which it translates to and from a client's WebSocket;
//! `POST /portForward/{namespace}/{pod}`, whose SPDY session it tunnels through a client's
//! WebSocket unchanged.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kclient_streaming::remotecommand::{
    STREAM_PROTOCOL_V4_NAME, STREAM_PROTOCOL_V5_NAME, STREAM_STDERR, STREAM_STDOUT,
};
use kclient_streaming::spdy::{self, ConnectionOptions, Role};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::exec::{drain_sizes, status_json, Process, ProcessEnds};
use super::handlers::{ExecHandler, ExecRequest, Handlers};
use super::port_forward::{spawn_session, PortForwardRequest, Target, Transport};
use super::protocol::{all_values, spdy_handshake, text};
use crate::response::Body;
use crate::tls::Authority;
use crate::Error;

/// How long the kubelet waits for a client's streams (its `streamCreationTimeout`).
const STREAM_CREATION_TIMEOUT: Duration = Duration::from_secs(30);

/// A kubelet stand-in on 127.0.0.1 (HTTPS), serving exec, attach and port-forward for every
/// pod with the handlers the test installs, as kclient-fake serves them itself.
pub struct FakeKubelet {
    addr: SocketAddr,
    handlers: Arc<Handlers>,
    stop: CancellationToken,
}

impl std::fmt::Debug for FakeKubelet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeKubelet")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for FakeKubelet {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl FakeKubelet {
    /// Starts serving on a free port of 127.0.0.1 with a generated certificate.
    pub async fn start() -> Result<Self, Error> {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0))).await?;
        let addr = listener.local_addr()?;
        let tls = tokio_rustls::TlsAcceptor::from(Authority::generate()?.server_config()?);
        let handlers = Arc::new(Handlers::default());
        let stop = CancellationToken::new();
        let (serving, stopped) = (handlers.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    _ = stopped.cancelled() => return,
                };
                let Ok((tcp, _)) = accepted else { continue };
                let (tls, handlers, stopped) = (tls.clone(), serving.clone(), stopped.clone());
                tokio::spawn(async move {
                    let Ok(Ok(stream)) =
                        tokio::time::timeout(Duration::from_secs(30), tls.accept(tcp)).await
                    else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |req| {
                        let (handlers, stopped) = (handlers.clone(), stopped.clone());
                        async move { Ok::<_, Infallible>(route(req, &handlers, stopped)) }
                    });
                    let builder =
                        hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    let _ = builder
                        .serve_connection_with_upgrades(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Self {
            addr,
            handlers,
            stop,
        })
    }

    /// The port it listens on (the Node's `status.daemonEndpoints.kubeletEndpoint.Port`).
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// A Node named `name` whose kubelet is this one (its status: an `InternalIP` of
    /// 127.0.0.1 and this port), to create (and write the status of) on the API server.
    pub fn node(&self, name: &str) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name},
            "status": {
                "addresses": [
                    {"type": "InternalIP", "address": "127.0.0.1"},
                    {"type": "Hostname", "address": "127.0.0.1"},
                ],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": self.port()}},
            },
        })
    }

    /// Runs exec and attach sessions with `handler` (as
    /// [`FakeApiServer::set_exec_handler`](crate::FakeApiServer::set_exec_handler)).
    pub fn set_exec_handler<F, Fut>(&self, handler: F)
    where
        F: Fn(Process) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = i32> + Send + 'static,
    {
        self.handlers
            .set_exec(Arc::new(move |process| Box::pin(handler(process))));
    }

    /// Serves forwarded connections with `handler` (as
    /// [`FakeApiServer::set_port_forward_handler`](crate::FakeApiServer::set_port_forward_handler)).
    pub fn set_port_forward_handler<F, Fut>(&self, handler: F)
    where
        F: Fn(PortForwardRequest, spdy::Stream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        self.handlers
            .set_port_forward(Arc::new(move |request, stream| {
                Box::pin(handler(request, stream))
            }));
    }
}

fn not_found() -> Response<Body> {
    text(StatusCode::NOT_FOUND, "404 page not found\n".into())
}

/// The kubelet's routes for streaming.
fn route(
    mut req: Request<Incoming>,
    handlers: &Handlers,
    stop: CancellationToken,
) -> Response<Body> {
    if req.method() != Method::POST && req.method() != Method::GET {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed\n".into(),
        );
    }
    let path: Vec<String> = req
        .uri()
        .path()
        .split('/')
        .skip(1)
        .map(crate::query::percent_decode)
        .collect();
    let query = req.uri().query().map(str::to_owned);
    let headers = req.headers().clone();
    let on_upgrade = hyper::upgrade::on(&mut req);
    match path
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [kind @ ("exec" | "attach"), namespace, pod, container] => {
            let Some(handler) = handlers.exec.lock().clone() else {
                return not_found();
            };
            let request = exec_request(kind, namespace, pod, container, query.as_deref());
            let (response, _) = match spdy_handshake(
                &headers,
                &[STREAM_PROTOCOL_V5_NAME, STREAM_PROTOCOL_V4_NAME],
            ) {
                Ok(accepted) => accepted,
                Err(refusal) => return refusal,
            };
            spawn_exec(on_upgrade, request, handler, stop);
            response
        }
        ["portForward", namespace, pod] => {
            let Some(handler) = handlers.port_forward.lock().clone() else {
                return not_found();
            };
            let (response, _) = match spdy_handshake(
                &headers,
                &[kclient_streaming::portforward::PORT_FORWARD_PROTOCOL_V1_NAME],
            ) {
                Ok(accepted) => accepted,
                Err(refusal) => return refusal,
            };
            let target = Target {
                namespace: (*namespace).to_owned(),
                pod: (*pod).to_owned(),
                // The kubelet's URL carries no uid.
                uid: String::new(),
            };
            spawn_session(on_upgrade, Transport::Spdy, target, handler, stop);
            response
        }
        _ => not_found(),
    }
}

/// The exec (or attach, `kind`) the kubelet's URL asks for.
fn exec_request(
    kind: &str,
    namespace: &str,
    pod: &str,
    container: &str,
    query: Option<&str>,
) -> ExecRequest {
    let param = |name: &str| {
        all_values(query, name)
            .first()
            .is_some_and(|v| matches!(v.as_str(), "1" | "true"))
    };
    ExecRequest {
        namespace: namespace.to_owned(),
        pod: pod.to_owned(),
        container: container.to_owned(),
        command: all_values(query, "command"),
        attach: kind == "attach",
        stdin: param("input"),
        stdout: param("output"),
        stderr: param("error"),
        tty: param("tty"),
    }
}

/// Serves the exec over the SPDY connection the upgrade brings, until it ends or `stop`.
fn spawn_exec(
    on_upgrade: hyper::upgrade::OnUpgrade,
    request: ExecRequest,
    handler: ExecHandler,
    stop: CancellationToken,
) {
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let connection = spdy::Connection::new(
            TokioIo::new(upgraded),
            Role::Server,
            ConnectionOptions::default(),
        );
        tokio::select! {
            _ = serve_exec(connection.clone(), request, handler) => {}
            _ = stop.cancelled() => {}
        }
        connection.close();
    });
}

/// One exec or attach over SPDY, as the kubelet's `remotecommand` server runs it: the
/// client's streams (one per `streamType`, the error stream always), the process, the
/// `Status` on the error stream, then every stream and the connection closed.
async fn serve_exec(connection: spdy::Connection, request: ExecRequest, handler: ExecHandler) {
    let expected = 1
        + usize::from(request.stdin)
        + usize::from(request.stdout)
        + usize::from(request.stderr && !request.tty)
        + usize::from(request.tty);
    let mut streams: HashMap<String, spdy::Stream> = HashMap::new();
    let deadline = tokio::time::Instant::now() + STREAM_CREATION_TIMEOUT;
    while streams.len() < expected {
        let next = tokio::time::timeout_at(deadline, connection.accept()).await;
        let Ok(Some(mut stream)) = next else {
            tracing::warn!("timed out waiting for client to create streams");
            return;
        };
        let kind = stream.headers().get("streamType").unwrap_or("").to_owned();
        if !matches!(
            kind.as_str(),
            "error" | "stdin" | "stdout" | "stderr" | "resize"
        ) {
            stream.reset();
            continue;
        }
        if stream.reply().await.is_err() {
            return;
        }
        streams.insert(kind, stream);
    }
    let (process, ends) = Process::new(request);
    let ProcessEnds {
        stdin,
        mut output,
        resizes,
    } = ends;
    let mut pumps = tokio::task::JoinSet::new();
    match streams.remove("stdin") {
        Some(mut stream) => {
            pumps.spawn(async move {
                while let Ok(Some(data)) = stream.read_data().await {
                    if stdin.send(data).await.is_err() {
                        break;
                    }
                }
            });
        }
        // No stdin: the process reads its end at once.
        None => drop(stdin),
    }
    if let Some(mut stream) = streams.remove("resize") {
        pumps.spawn(async move {
            let mut buf = Vec::new();
            while let Ok(Some(data)) = stream.read_data().await {
                buf.extend_from_slice(&data);
                for size in drain_sizes(&mut buf) {
                    let _ = resizes.send(size).await;
                }
            }
        });
    }
    let mut running = handler(process);
    let exit_code = loop {
        tokio::select! {
            code = &mut running => break code,
            Some((channel, data)) = output.recv() => write_output(&mut streams, channel, data).await,
        }
    };
    while let Ok((channel, data)) = output.try_recv() {
        write_output(&mut streams, channel, data).await;
    }
    if let Some(error) = streams.get_mut("error") {
        let _ = error
            .write_data(Bytes::from(status_json(exit_code)), false)
            .await;
    }
    for stream in streams.values_mut() {
        let _ = stream.close().await;
    }
    pumps.shutdown().await;
}

async fn write_output(streams: &mut HashMap<String, spdy::Stream>, channel: u8, data: Bytes) {
    let name = match channel {
        STREAM_STDOUT => "stdout",
        STREAM_STDERR => "stderr",
        _ => return,
    };
    if let Some(stream) = streams.get_mut(name) {
        let _ = stream.write_data(data, false).await;
    }
}
