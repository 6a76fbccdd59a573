//! The small HTTP/1.1 server behind the [`Manager`](crate::Manager)'s probe and metrics
//! endpoints: `GET` (and `HEAD`) of a few fixed paths, nothing else.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use kclient_core::CancellationToken;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// What a route answers: a status, a content type and a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) content_type: &'static str,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn text(status: StatusCode, body: impl Into<String>) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into(),
        }
    }
}

/// Answers a `GET` of a path (with its query, if any); `None` for a path it does not serve
/// (404).
pub(crate) type Routes = Arc<dyn Fn(&str, Option<&str>) -> Option<Reply> + Send + Sync>;

/// Serves `routes` on `listener` until `stop` fires; then stops accepting and drops the open
/// connections.
pub(crate) async fn serve(listener: TcpListener, routes: Routes, stop: CancellationToken) {
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of file descriptors and the like: wait a little and go on.
                tracing::warn!(%error, "the probe or metrics endpoint could not accept a connection");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let routes = Arc::clone(&routes);
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let uri = request.uri();
                let response = respond(&routes, request.method(), uri.path(), uri.query());
                async move { Ok::<_, Infallible>(response) }
            });
            let served = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(error) = served {
                tracing::debug!(%error, "a probe or metrics connection ended with an error");
            }
        });
        // Forget the connections that have ended.
        while connections.try_join_next().is_some() {}
    }
    connections.abort_all();
    while connections.join_next().await.is_some() {}
}

fn respond(
    routes: &Routes,
    method: &Method,
    path: &str,
    query: Option<&str>,
) -> Response<Full<Bytes>> {
    let reply = if method != Method::GET && method != Method::HEAD {
        Reply::text(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD\n")
    } else {
        routes(path, query)
            .unwrap_or_else(|| Reply::text(StatusCode::NOT_FOUND, "404 page not found\n"))
    };
    let body = if method == Method::HEAD {
        Bytes::new()
    } else {
        Bytes::from(reply.body)
    };
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = reply.status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(reply.content_type),
    );
    response
}
