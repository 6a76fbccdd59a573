//! KEP-5647's stale-controller handling in the controller runtime, against kclient-fake on
//! tokio's paused clock: a reconciler that records its writes
//! ([`ReconcileContext::wrote`]) is not called again for the key while the cache of what it
//! wrote is older than the write (the watches stalled), each skip counted in
//! `controller_runtime_stale_sync_skips_total`, and runs again once the cache catches up —
//! kubernetes v1.37.1's replica_set.go `syncReplicaSet` (`EnsureReady` before the sync, the
//! skip counted in `stale_sync_skips_total{group,resource}` and the key requeued with
//! `AddRateLimited`; `WroteAt` after the status write).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kclient_cache::{Lister, SharedInformerFactory};
use kclient_controller::owner::set_controller_reference;
use kclient_controller::{Action, Controller, ControllerMetrics, ReconcileContext, Reconciler};
use kclient_core::{ApiStatus, CancellationToken, CreateOptions, ResourceExt, UpdateOptions};
use kclient_fake::FakeApiServer;
use kclient_typed::Clientset;
use prometheus_client::registry::Registry;

use crate::support::{clientset, config_map, eventually};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Every second, makes the Secret `<name>-child` its ConfigMap owns carry the annotation
/// `target` = the test's target, as the cache shows it: creates it, or updates the cached
/// copy when its annotation differs, and records the write.
struct Writer {
    clientset: Clientset,
    secrets: Lister<Secret>,
    target: Arc<AtomicUsize>,
    reconciles: Arc<AtomicUsize>,
    failures: Arc<AtomicUsize>,
}

impl Reconciler<ConfigMap> for Writer {
    type Error = BoxError;

    async fn reconcile(
        &self,
        cm: Arc<ConfigMap>,
        ctx: &ReconcileContext,
    ) -> Result<Action, BoxError> {
        self.reconciles.fetch_add(1, Ordering::SeqCst);
        let target = self.target.load(Ordering::SeqCst).to_string();
        let namespace = cm.namespace().unwrap_or_default();
        let name = format!("{}-child", cm.name_any());
        let client = self.clientset.core_v1().secrets(namespace);
        let written = match self.secrets.namespaced(namespace).get(&name) {
            Ok(cached) if cached.annotations().get("target") == Some(&target) => {
                return Ok(Action::requeue(Duration::from_secs(1)));
            }
            Ok(cached) => {
                let mut secret = Secret::clone(&cached);
                secret
                    .metadata
                    .annotations
                    .get_or_insert_with(BTreeMap::new)
                    .insert("target".into(), target);
                client.update(&secret, &UpdateOptions::default()).await
            }
            Err(e) if e.is_not_found() => {
                let mut secret = Secret {
                    metadata: ObjectMeta {
                        name: Some(name),
                        namespace: Some(namespace.to_owned()),
                        annotations: Some(BTreeMap::from([("target".into(), target)])),
                        ..ObjectMeta::default()
                    },
                    ..Secret::default()
                };
                set_controller_reference(cm.as_ref(), &mut secret)?;
                client.create(&secret, &CreateOptions::default()).await
            }
            Err(e) => return Err(e.into()),
        };
        let written = written.inspect_err(|_| {
            self.failures.fetch_add(1, Ordering::SeqCst);
        })?;
        ctx.wrote(&written);
        Ok(Action::requeue(Duration::from_secs(1)))
    }
}

struct Run {
    server: FakeApiServer,
    registry: Registry,
    target: Arc<AtomicUsize>,
    reconciles: Arc<AtomicUsize>,
    failures: Arc<AtomicUsize>,
    shutdown: CancellationToken,
    running: tokio::task::JoinHandle<Result<(), kclient_controller::ControllerError>>,
}

/// A controller "stale" of ConfigMaps owning Secrets (from the start, or added through its
/// handle once it runs when `owns_late`), with its checks on or off, and the ConfigMap
/// `default/web` reconciled a few times with fresh caches (its Secret written once).
async fn start(checks: bool, owns_late: bool) -> Result<Run, BoxError> {
    let server = FakeApiServer::builder().start().await?;
    let clientset = clientset(&server);
    let factory = SharedInformerFactory::new(clientset.clone(), Duration::ZERO);
    let mut registry = Registry::default();
    let metrics = ControllerMetrics::new(&mut registry);
    let mut controller = Controller::<ConfigMap, _>::new("stale", &factory)
        .metrics(metrics)
        .stale_controller_consistency(checks);
    if !owns_late {
        controller = controller.owns::<Secret>();
    }
    let handle = controller.handle();
    let target = Arc::new(AtomicUsize::new(1));
    let reconciles = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(AtomicUsize::new(0));
    let writer = Writer {
        clientset: clientset.clone(),
        secrets: factory.lister::<Secret>(),
        target: Arc::clone(&target),
        reconciles: Arc::clone(&reconciles),
        failures: Arc::clone(&failures),
    };
    let shutdown = CancellationToken::new();
    let running = tokio::spawn(controller.run(writer, shutdown.clone()));
    if owns_late {
        handle.owns::<Secret>()?;
    }
    clientset
        .core_v1()
        .config_maps("default")
        .create(
            &config_map("default", "web", &[]),
            &CreateOptions::default(),
        )
        .await?;
    assert!(
        eventually(Duration::from_secs(30), || reconciles
            .load(Ordering::SeqCst)
            >= 3)
        .await
    );
    assert_eq!(
        failures.load(Ordering::SeqCst),
        0,
        "fresh caches: no conflict"
    );
    Ok(Run {
        server,
        registry,
        target,
        reconciles,
        failures,
        shutdown,
        running,
    })
}

/// The value of `controller_runtime_stale_sync_skips_total` for the Secrets of "stale".
fn stale_skips(registry: &Registry) -> u64 {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    let series = r#"controller_runtime_stale_sync_skips_total{controller="stale",group="",resource="secrets"} "#;
    text.lines()
        .find_map(|line| line.strip_prefix(series))
        .map_or(0, |v| v.trim().parse().unwrap())
}

/// With the checks on (the default, as kube-controller-manager's
/// `StaleControllerConsistency*` gates in 1.37): while the watches are stalled, the write
/// made meanwhile holds every later reconcile of the key back (no update of a stale copy, so
/// no conflict), each skip counted; once the watches resume the reconciles go on.
#[tokio::test(start_paused = true)]
async fn a_reconcile_waits_until_the_cache_has_its_writes() -> Result<(), BoxError> {
    reconciles_wait_until_the_cache_has_their_writes(false).await
}

/// The same, with the Secrets owned through a [`ControllerHandle`] added once the controller
/// runs: the late watch's cache is checked too.
///
/// [`ControllerHandle`]: kclient_controller::ControllerHandle
#[tokio::test(start_paused = true)]
async fn a_watch_added_while_running_is_checked_too() -> Result<(), BoxError> {
    reconciles_wait_until_the_cache_has_their_writes(true).await
}

async fn reconciles_wait_until_the_cache_has_their_writes(owns_late: bool) -> Result<(), BoxError> {
    let run = start(true, owns_late).await?;
    run.server.faults().stall_watches();
    run.target.store(2, Ordering::SeqCst);
    // The next reconcile writes while stalled; then none runs.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let held = run.reconciles.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        run.reconciles.load(Ordering::SeqCst),
        held,
        "no reconcile on a stale cache"
    );
    assert_eq!(
        run.failures.load(Ordering::SeqCst),
        0,
        "no write from a stale copy"
    );
    assert!(stale_skips(&run.registry) > 0, "the skips are counted");

    run.server.faults().resume_watches();
    assert!(
        eventually(Duration::from_secs(30), || run
            .reconciles
            .load(Ordering::SeqCst)
            > held + 2)
        .await,
        "the reconciles go on once the cache caught up"
    );
    assert_eq!(run.failures.load(Ordering::SeqCst), 0);
    run.shutdown.cancel();
    run.running.await??;
    Ok(())
}

/// With the checks off ([`Controller::stale_controller_consistency`]`(false)`, the gates'
/// off position), the same stall lets reconciles run on the stale cache: their updates of a
/// stale copy conflict, and nothing is counted as skipped.
#[tokio::test(start_paused = true)]
async fn without_the_checks_a_stale_cache_is_reconciled() -> Result<(), BoxError> {
    let run = start(false, false).await?;
    run.server.faults().stall_watches();
    run.target.store(2, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = run.reconciles.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(run.reconciles.load(Ordering::SeqCst) > before);
    assert!(
        run.failures.load(Ordering::SeqCst) > 0,
        "updates of a stale copy conflict"
    );
    assert_eq!(stale_skips(&run.registry), 0);
    run.server.faults().resume_watches();
    run.shutdown.cancel();
    run.running.await??;
    Ok(())
}
