//! The manager's endpoints: the probes' built-in checks, and the servers of `/healthz`,
//! `/readyz` and `/metrics`.

use std::sync::Arc;

use http::StatusCode;
use kclient_core::{BoxError, CancellationToken};
use kclient_tools::leaderelection::HealthzAdaptor;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use super::Shared;
use crate::health::{Checker, Checks};
use crate::http::{serve, Reply, Routes};

/// `check` as a [`Checker`].
pub(super) fn checker<E: Into<BoxError>>(
    check: impl Fn() -> Result<(), E> + Send + Sync + 'static,
) -> Checker {
    Arc::new(move || check().map_err(Into::into))
}

/// The built-in checks: `/healthz`'s `leaderElection` (with a watch dog), `/readyz`'s
/// `informer-sync`.
pub(super) fn built_in_checks(
    shared: &Arc<Shared>,
    watch_dog: Option<HealthzAdaptor>,
) -> (Checks, Checks) {
    let mut healthz = Checks::default();
    if let Some(watch_dog) = watch_dog {
        let check = checker(move || {
            watch_dog
                .check()
                .map_err(|e| format!("leader election: {e}"))
        });
        // A fresh set: neither the name nor its uniqueness can fail.
        let _ = healthz.add("healthz", "leaderElection", check);
    }
    let mut readyz = Checks::default();
    let shared = Arc::clone(shared);
    let synced = checker(move || {
        let unsynced = shared.unsynced();
        if unsynced.is_empty() {
            Ok(())
        } else {
            Err(format!("caches not synced: {}", unsynced.join(", ")))
        }
    });
    let _ = readyz.add("readyz", "informer-sync", synced);
    (healthz, readyz)
}

pub(super) fn spawn_server(
    listener: std::net::TcpListener,
    routes: Routes,
    stop: &CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let stop = stop.clone();
    tokio::spawn(async move {
        match TcpListener::from_std(listener) {
            Ok(listener) => serve(listener, routes, stop).await,
            Err(error) => tracing::error!(%error, "cannot serve an endpoint"),
        }
    })
}

/// `/healthz` and `/readyz`, with their checks' sub-paths.
pub(super) fn probe_routes(healthz: Checks, readyz: Checks) -> Routes {
    Arc::new(move |path, query| {
        if let Some(rest) = path.strip_prefix("/healthz") {
            return healthz.serve(rest, query);
        }
        if let Some(rest) = path.strip_prefix("/readyz") {
            return readyz.serve(rest, query);
        }
        None
    })
}

/// `/metrics`: the registry in the OpenMetrics text format.
pub(super) fn metrics_routes(registry: Arc<Registry>) -> Routes {
    Arc::new(move |path, _| {
        (path == "/metrics").then(|| {
            let mut text = String::new();
            match prometheus_client::encoding::text::encode(&mut text, &registry) {
                Ok(()) => Reply {
                    status: StatusCode::OK,
                    content_type: "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    body: text,
                },
                Err(error) => Reply::text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("cannot encode the metrics: {error}\n"),
                ),
            }
        })
    })
}
