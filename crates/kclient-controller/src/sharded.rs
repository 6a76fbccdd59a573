//! [`run_sharded`]: a [`Manager`] per holding of a [`ShardRing`], so that replicas divide
//! the work and the caches instead of idling behind one leader.
//!
//! Each replica runs the same program: a ring member ([`ShardRing`]) and, for each of its
//! holdings, a manager whose informers list, watch and cache only the held slots' objects
//! (the factory built with [`Held::selector`] as its `shard_selector`) and whose controllers
//! reconcile them. When the holding ends — a replica joined or left, a slot's Lease was
//! lost — the manager shuts down gracefully (in-flight reconciles finish within its graceful
//! shutdown timeout, or are abandoned), *then* the ring is told the work stopped, and only
//! then may a slot it gave up move to another replica (see
//! [`kclient_tools::sharding`] for the argument). The next holding gets a new manager.
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_cache::SharedInformerFactory;
//! use kclient_controller::sharded::{run_sharded, ShardedOptions};
//! use kclient_controller::{Action, Controller, Manager, ReconcileContext, Reconciler};
//! use kclient_core::CancellationToken;
//! use kclient_tools::sharding::{ShardRing, ShardRingConfig};
//! use kclient_typed::Clientset;
//!
//! struct Noop;
//!
//! impl Reconciler<ConfigMap> for Noop {
//!     type Error = kclient_typed::Error;
//!
//!     async fn reconcile(&self, _: Arc<ConfigMap>, _: &ReconcileContext) -> Result<Action, Self::Error> {
//!         Ok(Action::await_change())
//!     }
//! }
//!
//! # async fn example(clientset: Clientset) -> Result<(), Box<dyn std::error::Error>> {
//! let ring = Arc::new(ShardRing::new(
//!     &clientset,
//!     ShardRingConfig::new("operators", "config-watcher", "replica-0"),
//! )?);
//! let shutdown = CancellationToken::new();
//! run_sharded(ring, shutdown, ShardedOptions::default(), |held| {
//!     let mut factory = SharedInformerFactory::builder(clientset.clone());
//!     if let Some(selector) = held.selector() {
//!         factory = factory.shard_selector(selector);
//!     }
//!     let factory = factory.build();
//!     let mut manager = Manager::builder(&factory).build()?;
//!     manager.add(Controller::<ConfigMap, _>::new("config-watcher", &factory), Noop);
//!     Ok(manager)
//! })
//! .await?;
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kclient_core::CancellationToken;
use kclient_tools::events::{EventRecorder, EventType};
use kclient_tools::sharding::{Held, ShardRing};
use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use tokio::time::Instant;

use crate::manager::{Manager, ManagerError};

/// The metrics of a sharded replica.
///
/// | metric | type | what |
/// |---|---|---|
/// | `kclient_shard_slots_held` | gauge | slots this replica holds now |
/// | `kclient_shard_slots` | gauge | slots in the ring |
/// | `kclient_shard_ring_members` | gauge | live members of the ring as this replica last saw them |
/// | `kclient_shard_handovers_total` | counter | changes of this replica's holding |
/// | `kclient_shard_handover_seconds` | histogram | from a holding's end to the next holding's manager starting (the work paused on this replica) |
/// | `kclient_shard_objects_cached` | gauge | objects the running manager's informers cache, counted at each scrape (0 between holdings) |
#[derive(Debug, Clone, Default)]
pub struct ShardedMetrics {
    slots_held: Gauge,
    slots: Gauge,
    members: Gauge,
    handovers: Counter,
    handover_seconds: Option<Histogram>,
    objects_cached: ObjectsCached,
}

/// What counts the running manager's cached objects, if a manager runs.
type Counting = Arc<dyn Fn() -> usize + Send + Sync>;

/// `kclient_shard_objects_cached`: read from the running manager's informers when scraped.
#[derive(Clone, Default)]
struct ObjectsCached(Arc<Mutex<Option<Counting>>>);

impl ObjectsCached {
    fn count(&self) -> usize {
        self.0.lock().as_ref().map_or(0, |count| count())
    }
}

impl fmt::Debug for ObjectsCached {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ObjectsCached").field(&self.count()).finish()
    }
}

impl Collector for ObjectsCached {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), fmt::Error> {
        let metric = encoder.encode_descriptor(
            "kclient_shard_objects_cached",
            "Objects the running manager's informers cache",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(self.count() as i64).encode(metric)
    }
}

impl ShardedMetrics {
    /// The metrics, registered in `registry`.
    pub fn registered(registry: &mut Registry) -> Self {
        let metrics = Self {
            handover_seconds: Some(Histogram::new(exponential_buckets(0.01, 2.0, 14))),
            ..Self::default()
        };
        registry.register(
            "kclient_shard_slots_held",
            "Slots this replica holds",
            metrics.slots_held.clone(),
        );
        registry.register(
            "kclient_shard_slots",
            "Slots in the ring",
            metrics.slots.clone(),
        );
        registry.register(
            "kclient_shard_ring_members",
            "Live members of the ring as this replica last saw them",
            metrics.members.clone(),
        );
        registry.register(
            "kclient_shard_handovers",
            "Changes of this replica's holding",
            metrics.handovers.clone(),
        );
        if let Some(histogram) = &metrics.handover_seconds {
            registry.register(
                "kclient_shard_handover_seconds",
                "From a holding's end to the next holding's work starting",
                histogram.clone(),
            );
        }
        registry.register_collector(Box::new(metrics.objects_cached.clone()));
        metrics
    }

    /// The objects cached, as `kclient_shard_objects_cached` reports them now.
    pub fn objects_cached(&self) -> usize {
        self.objects_cached.count()
    }

    fn note_holding(&self, ring: &ShardRing, held: &Held, ended: Option<Instant>) {
        self.slots_held.set(held.slots.len() as i64);
        self.slots.set(i64::from(held.slot_count()));
        self.members.set(ring.members().len() as i64);
        if let Some(ended) = ended {
            self.handovers.inc();
            if let Some(histogram) = &self.handover_seconds {
                histogram.observe(ended.elapsed().as_secs_f64());
            }
        }
    }
}

/// What a sharded replica reports: its metrics, and Events on its member Lease each time its
/// holding changes (reason `ShardsRebalanced`) when given a recorder.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ShardedOptions {
    /// The metrics ([`ShardedMetrics::registered`] to export them).
    pub metrics: ShardedMetrics,
    /// Where Events go, if anywhere.
    pub events: Option<EventRecorder>,
}

impl ShardedOptions {
    /// Reports to `metrics`.
    pub fn metrics(mut self, metrics: ShardedMetrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// Records Events with `recorder`.
    pub fn events(mut self, recorder: EventRecorder) -> Self {
        self.events = Some(recorder);
        self
    }

    fn report(&self, ring: &ShardRing, held: &Held, ended: Option<Instant>) {
        self.metrics.note_holding(ring, held, ended);
        let Some(recorder) = &self.events else {
            return;
        };
        let lease = ObjectReference {
            api_version: Some("coordination.k8s.io/v1".into()),
            kind: Some("Lease".into()),
            name: Some(ring.member_lease_name()),
            namespace: Some(ring.config().namespace.clone()),
            ..ObjectReference::default()
        };
        let message = format!(
            "holding {} of {} slots {:?} (live members: {})",
            held.slots.len(),
            held.slot_count(),
            held.slots,
            ring.members().join(", ")
        );
        recorder.event(&lease, EventType::Normal, "ShardsRebalanced", &message);
    }
}

/// Takes part in `ring` until `shutdown` fires, running the manager `make` builds for each
/// holding (see the [module documentation](self)) while the holding stands: `make` is given
/// the holding and builds the informer factory with its [`selector`](Held::selector) and the
/// controllers on it (without leader election: the ring replaces it). A holding without
/// slots runs nothing. Returns when the replica has left the ring (its slots released), or
/// with the first manager's error (the ring is left then too).
///
/// A holding also ends when a slot's Lease is lost (renewals failing past the renew
/// deadline): another replica may then take the slot `lease_duration − renew_deadline`
/// later (5 s with the defaults), while this manager's controllers are still finishing
/// their reconciles. Give the manager a graceful shutdown timeout below that margin, and let
/// a reconciler that writes what only the holder may write check [`Held::is_current`]
/// right before (give it a clone of the holding `make` is given).
pub async fn run_sharded<F>(
    ring: Arc<ShardRing>,
    shutdown: CancellationToken,
    options: ShardedOptions,
    mut make: F,
) -> Result<(), ManagerError>
where
    F: FnMut(&Held) -> Result<Manager, ManagerError>,
{
    let leave = CancellationToken::new();
    let mut running = tokio::spawn({
        let (ring, leave) = (Arc::clone(&ring), leave.clone());
        async move { ring.run(leave).await }
    });
    let mut held = ring.held();
    let mut ended: Option<Instant> = None;
    let mut outcome = Ok(());
    while !shutdown.is_cancelled() {
        let holding = held.borrow_and_update().clone();
        if holding.generation > 0 {
            options.report(&ring, &holding, ended.take());
        }
        if holding.is_current() && !holding.slots.is_empty() {
            tracing::info!(ring = %ring.config().ring, slots = ?holding.slots, generation = holding.generation, "holding slots");
            let stop = CancellationToken::new();
            let link = tokio::spawn({
                let (stop, token, shutdown) =
                    (stop.clone(), holding.token().clone(), shutdown.clone());
                async move {
                    tokio::select! {
                        () = token.cancelled() => {}
                        () = shutdown.cancelled() => {}
                    }
                    stop.cancel();
                }
            });
            let result = match make(&holding) {
                Ok(manager) => {
                    let counting: Counting = Arc::new(manager.cached_objects_counter());
                    *options.metrics.objects_cached.0.lock() = Some(counting);
                    let result = manager.run(stop).await;
                    *options.metrics.objects_cached.0.lock() = None;
                    result
                }
                Err(e) => Err(e),
            };
            link.abort();
            ended = Some(Instant::now());
            if let Err(e) = result {
                outcome = Err(e);
                break;
            }
        }
        ring.acknowledge(holding.generation);
        tokio::select! {
            changed = held.changed() => if changed.is_err() { break },
            () = shutdown.cancelled() => {}
        }
    }
    // Leave: keep acknowledging (nothing runs any more) until the ring has released the slots.
    leave.cancel();
    loop {
        ring.acknowledge(held.borrow_and_update().generation);
        tokio::select! {
            _ = &mut running => break,
            _ = held.changed() => {}
        }
    }
    outcome
}
