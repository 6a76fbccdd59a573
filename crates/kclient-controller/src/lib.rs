//! kclient-controller: a reconcile runtime on kclient's shared informers — what kube-rs's
//! `Controller` and controller-runtime's builder give, done on client-go's model.
//!
//! You write a [`Reconciler`] (`async fn reconcile(&self, obj: Arc<K>, ctx) -> Result<Action,
//! E>`); a [`Controller`] runs it for every object of type `K`:
//!
//! * its informers come from a [`SharedInformerFactory`](kclient_cache::SharedInformerFactory)
//!   that several controllers share: **one watch and one cache per type** in the process,
//!   however many controllers read it (kube-rs opens one per controller, kube-rs#1080);
//! * events become keys on controller-runtime's [`PriorityQueue`](kclient_workqueue::PriorityQueue):
//!   a key queued many times is reconciled once, **never by two workers at once**, with
//!   [`ControllerConfig::workers`] workers; an event **replaces a waiting requeue** of its key, and the
//!   initial list and unchanged resyncs queue at [`LOW_PRIORITY`] behind real changes;
//! * the object comes from the **lister when the key is processed** (never a stale copy from
//!   the event); a **deleted object is not reconciled** unless the reconciler implements
//!   [`Reconciler::reconcile_deleted`];
//! * [`Action::requeue`] / [`Action::await_change`] after a success; on an error the
//!   reconciler's [`error_policy`](Reconciler::error_policy) chooses, by default the
//!   queue's **per-key exponential backoff** (`add_rate_limited`), which kube-rs lacks
//!   (kube-rs#1916); a success `forget`s the key's failures;
//! * [`owns`](Controller::owns) maps owned objects to their controller owner,
//!   [`watches`](Controller::watches) any object to keys, and [`predicate`]s filter updates;
//! * each reconcile runs in a `tracing` span `reconcile` with the `controller`, the `key` and
//!   the `attempt` (the key's retries so far).
//!
//! Helpers, with controller-runtime's `controllerutil` and apimachinery's `meta` semantics:
//! [`create_or_update()`] / [`create_or_patch`] ([`OperationResult`]), [`conditions`]
//! (`set_status_condition` …), [`finalizer::finalizer`] (add, clean up, remove, conflicts
//! retried) and the object-level [`finalizer::add_finalizer`] …, [`owner`] references
//! (`set_controller_reference`, `set_owner_reference`, `has_owner_reference` …), an Event
//! recorder bound to the controller ([`ReconcileContext::recorder`]).
//!
//! A [`Manager`] runs several controllers on one factory, with leader election (caches warm
//! in every replica, reconciles in the leader only, the leader token checked right before
//! each reconcile), `/healthz` and `/readyz`, Prometheus metrics under controller-runtime's
//! names ([`ControllerMetrics`]), and a graceful shutdown on SIGTERM or Ctrl-C
//! ([`shutdown_on_signal`]).
//!
//! # Stale caches
//!
//! A controller reads from caches that lag behind the API server. Right after it writes — a
//! create, an update of an owned object or of its own status — the next reconcile of the same
//! key may read a cache without that write, and act on it again (a second Pod, an update of a
//! stale copy that conflicts). KEP-5647 (kube-controller-manager 1.36–1.37, the
//! `StaleControllerConsistency*` gates) has a controller remember the resourceVersions it
//! wrote and wait until its caches have caught up; kclient-controller does the same:
//!
//! * the reconciler records each write with
//!   [`ReconcileContext::wrote(&written)`](ReconcileContext::wrote) (the object the write
//!   returned);
//! * before the key's next reconcile the worker compares those resourceVersions with its
//!   informers' [`last_store_sync_resource_version`](kclient_cache::Indexer::last_store_sync_resource_version)
//!   (the primary's, and those of the [`owns`](Controller::owns) and
//!   [`watches`](Controller::watches) types); while one is behind, the reconcile is skipped,
//!   the key requeued with the rate limiter and the skip counted in
//!   `controller_runtime_stale_sync_skips_total{controller,group,resource}`;
//! * a key whose object is gone has its record dropped.
//!
//! It is on by default, as the kube-controller-manager gates are (beta, on by default in
//! 1.37), and costs nothing for a reconciler that records no write;
//! [`Controller::stale_controller_consistency(false)`](Controller::stale_controller_consistency)
//! turns it off. [`consistency::ConsistencyStore`] is the building block, for a hand-written
//! worker.
//!
//! # Example
//!
//! A controller that stamps every ConfigMap with the number of its keys, against
//! kclient-fake:
//!
//! The examples use the paths a program depending on the `kclient` facade writes
//! (`kclient::controller::…`); one depending on kclient-controller alone writes `kclient_controller::…`.
//!
//! ```
//! # mod kclient { pub mod k8s_openapi { pub use ::k8s_openapi::*; } pub mod core { pub use ::kclient_core::*; } pub mod typed { pub use ::kclient_typed::*; } pub mod cache { pub use ::kclient_cache::*; } pub mod controller { pub use ::kclient_controller::*; } pub mod fake { pub use ::kclient_fake::*; } } // the facade's paths
//! use std::sync::Arc;
//! use std::time::Duration;
//! use kclient::k8s_openapi::api::core::v1::ConfigMap;
//! use kclient::cache::SharedInformerFactory;
//! use kclient::controller::{Action, Controller, ReconcileContext, Reconciler};
//! use kclient::core::{CancellationToken, CreateOptions, Patch, PatchOptions};
//! use kclient::typed::Clientset;
//! use serde_json::json;
//!
//! struct Stamp(Clientset);
//!
//! impl Reconciler<ConfigMap> for Stamp {
//!     type Error = kclient::typed::Error;
//!
//!     async fn reconcile(&self, cm: Arc<ConfigMap>, ctx: &ReconcileContext) -> Result<Action, Self::Error> {
//!         let keys = cm.data.as_ref().map_or(0, |d| d.len()).to_string();
//!         let stamped = cm.metadata.annotations.as_ref().and_then(|a| a.get("keys"));
//!         if stamped != Some(&keys) {
//!             let patch = Patch::Merge(json!({"metadata": {"annotations": {"keys": keys}}}));
//!             let namespace = ctx.key().namespace.as_deref().unwrap_or_default();
//!             self.0.core_v1().config_maps(namespace).patch(&ctx.key().name, &patch, &PatchOptions::default()).await?;
//!         }
//!         Ok(Action::await_change())
//!     }
//! }
//!
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = kclient::fake::FakeApiServer::builder().start().await?;
//! let clientset = Clientset::new(server.config()?)?;
//! let factory = SharedInformerFactory::new(clientset.clone(), Duration::ZERO);
//! let shutdown = CancellationToken::new();
//! let controller = Controller::<ConfigMap, _>::new("stamp", &factory);
//! let running = tokio::spawn(controller.run(Stamp(clientset.clone()), shutdown.clone()));
//!
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! cm.data = Some([("mode".to_string(), "fast".to_string())].into());
//! let config_maps = clientset.core_v1().config_maps("default");
//! config_maps.create(&cm, &CreateOptions::default()).await?;
//! let stamped = async {
//!     loop {
//!         let cm = config_maps.get("settings").await?;
//!         if cm.metadata.annotations.is_some_and(|a| a.get("keys").is_some_and(|k| k == "1")) {
//!             return Ok::<_, kclient::typed::Error>(());
//!         }
//!         tokio::time::sleep(Duration::from_millis(20)).await;
//!     }
//! };
//! tokio::time::timeout(Duration::from_secs(30), stamped).await??;
//! shutdown.cancel();
//! running.await??;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod action;
pub mod conditions;
mod config;
pub mod consistency;
mod controller;
pub mod create_or_update;
mod error;
pub mod finalizer;
pub mod health;
mod http;
mod key_queue;
mod manager;
mod metrics;
pub mod owner;
pub mod predicate;
mod reconciler;
pub mod sharded;
mod signal;
mod source;
mod worker;

pub use action::Action;
#[allow(deprecated)]
pub use config::Config;
pub use config::{ControllerConfig, DEFAULT_CACHE_SYNC_TIMEOUT, DEFAULT_GRACEFUL_SHUTDOWN_TIMEOUT};
pub use controller::{Controller, ControllerHandle, ControllerStopped, OwnsOptions};
pub use create_or_update::{
    create_or_patch, create_or_update, CreateOrUpdateError, OperationResult,
};
pub use error::ControllerError;
pub use manager::{Manager, ManagerBuilder, ManagerError};
pub use metrics::ControllerMetrics;
pub use reconciler::{ReconcileContext, Reconciler};
pub use signal::shutdown_on_signal;
pub use source::LOW_PRIORITY;
