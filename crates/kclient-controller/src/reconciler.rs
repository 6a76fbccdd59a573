//! [`Reconciler`]: the code a controller runs for each key, and [`ReconcileContext`], what
//! the runtime tells it about the key.

use std::future::Future;
use std::sync::Arc;

use kclient_core::{ApiResource, GroupResource, ObjectKey, Resource, ResourceExt};
use kclient_tools::events::EventRecorder;
use kclient_tools::leaderelection::LeaderToken;

use crate::action::Action;
use crate::consistency::ConsistencyStore;

/// What a controller does for a key: make the world match the object.
///
/// [`reconcile`](Self::reconcile) gets the object as the cache holds it *when the key is
/// processed* (read from the lister then, never the copy an event carried, so a burst of
/// updates is one reconcile of the newest state) and returns what should happen next
/// ([`Action`]). It is never called for two objects of the same key at once, and it must be
/// idempotent: the same state may be reconciled again (a resync, a relist, a requeue).
///
/// When it fails, [`error_policy`](Self::error_policy) chooses the requeue; the default is
/// the workqueue's per-key exponential backoff ([`Action::requeue_rate_limited`]).
///
/// A key whose object is gone from the cache (deleted) is not reconciled: it goes to
/// [`reconcile_deleted`](Self::reconcile_deleted), which by default does nothing — deleted
/// objects are reconciled only by a reconciler that implements it. Owned objects are best
/// cleaned up by the garbage collector (owner references) or by a finalizer
/// ([`finalizer`](crate::finalizer::finalizer)), which runs *before* the object goes.
///
/// ```
/// use std::sync::Arc;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kclient_controller::{Action, ReconcileContext, Reconciler};
///
/// struct Logger;
///
/// impl Reconciler<ConfigMap> for Logger {
///     type Error = std::convert::Infallible;
///
///     async fn reconcile(&self, cm: Arc<ConfigMap>, ctx: &ReconcileContext) -> Result<Action, Self::Error> {
///         println!("{} has {} keys (retry {})", ctx.key(), cm.data.as_ref().map_or(0, |d| d.len()), ctx.retries());
///         Ok(Action::await_change())
///     }
/// }
/// ```
pub trait Reconciler<K>: Send + Sync + 'static {
    /// What a reconcile fails with: anything that can be logged, such as a
    /// `std::error::Error`, `kclient::Error`, `Box<dyn std::error::Error + Send + Sync>` or
    /// `anyhow::Error`.
    type Error: std::fmt::Debug + std::fmt::Display + Send + Sync + 'static;

    /// Makes the world match `obj`, the cached state of [`ReconcileContext::key`].
    fn reconcile(
        &self,
        obj: Arc<K>,
        ctx: &ReconcileContext,
    ) -> impl Future<Output = Result<Action, Self::Error>> + Send;

    /// What to do after [`reconcile`](Self::reconcile) (or
    /// [`reconcile_deleted`](Self::reconcile_deleted)) failed with `error`: by default
    /// [`Action::requeue_rate_limited`], the workqueue's per-key exponential backoff. Return
    /// [`Action::await_change`] to give up on the key until its next event (after
    /// [`ReconcileContext::retries`] attempts, say), or [`Action::requeue`] for a fixed
    /// delay. A reconcile that panics is counted as an error with the default backoff; the
    /// error policy is not asked.
    fn error_policy(&self, error: &Self::Error, ctx: &ReconcileContext) -> Action {
        let _ = (error, ctx);
        Action::requeue_rate_limited()
    }

    /// The key's object is no longer in the cache: it was deleted (or never existed, for a
    /// key a mapper produced). `last_known` is the state the deletion event carried, if
    /// the controller saw one (a tombstone without a state, or a key the object never had,
    /// gives `None`). By default nothing happens: a deleted object is not reconciled unless
    /// a reconciler asks for it by implementing this.
    fn reconcile_deleted(
        &self,
        last_known: Option<Arc<K>>,
        ctx: &ReconcileContext,
    ) -> impl Future<Output = Result<Action, Self::Error>> + Send {
        let _ = (last_known, ctx);
        async { Ok(Action::await_change()) }
    }
}

/// What is shared by every reconcile of one controller run.
#[derive(Debug)]
pub(crate) struct ControllerScope {
    pub(crate) name: Arc<str>,
    pub(crate) recorder: Option<EventRecorder>,
    pub(crate) leader: Option<LeaderToken>,
    /// The stale-cache checks, unless turned off.
    pub(crate) consistency: Option<Arc<ConsistencyStore>>,
}

/// What the runtime tells a reconcile about its key.
#[derive(Debug, Clone)]
pub struct ReconcileContext {
    scope: Arc<ControllerScope>,
    key: ObjectKey,
    retries: usize,
    /// The UID of the object being reconciled (empty for a deleted one).
    owner_uid: String,
}

impl ReconcileContext {
    pub(crate) fn new(
        scope: Arc<ControllerScope>,
        key: ObjectKey,
        retries: usize,
        owner_uid: String,
    ) -> Self {
        Self {
            scope,
            key,
            retries,
            owner_uid,
        }
    }

    /// Records that this reconcile wrote `written` (the object a create, update, patch or
    /// apply returned): the key is not reconciled again until the controller's cache of
    /// `written`'s resource has caught up with its resourceVersion (KEP-5647, kubernetes'
    /// `ConsistencyStore.WroteAt` with the reconciled object as the owner; see the crate docs'
    /// "Stale caches" section). The resource must be one the controller watches (its primary,
    /// [`owns`](crate::Controller::owns) or [`watches`](crate::Controller::watches) type) for
    /// the write to hold anything back. Does nothing when the checks are off
    /// ([`Controller::stale_controller_consistency`](crate::Controller::stale_controller_consistency))
    /// or `written` has no resourceVersion.
    pub fn wrote<O>(&self, written: &O)
    where
        O: Resource,
        O::DynamicType: Default,
    {
        let resource = O::api_resource(&O::DynamicType::default());
        self.wrote_resource(written, &resource);
    }

    /// [`wrote`](Self::wrote) for an object of a resource known at run time (a
    /// [`DynamicObject`](kclient_core::DynamicObject) or
    /// [`PartialObjectMetadata`](kclient_core::PartialObjectMetadata)), described by
    /// `resource`.
    pub fn wrote_resource<O: Resource>(&self, written: &O, resource: &ApiResource) {
        if let Some(rv) = written.resource_version() {
            self.wrote_at(
                &GroupResource::new(resource.group.clone(), resource.plural.clone()),
                rv,
            );
        }
    }

    /// Records a write to `resource` at resourceVersion `rv` for this key (kubernetes'
    /// `ConsistencyStore.WroteAt`); see [`wrote`](Self::wrote).
    pub fn wrote_at(&self, resource: &GroupResource, rv: &str) {
        if let Some(consistency) = &self.scope.consistency {
            consistency.wrote_at(&self.key, &self.owner_uid, resource, rv);
        }
    }

    /// The controller's [`ConsistencyStore`], unless the stale-cache checks are off.
    pub fn consistency_store(&self) -> Option<&Arc<ConsistencyStore>> {
        self.scope.consistency.as_ref()
    }

    /// The controller's name (the `controller` label of its metrics and the component of
    /// its Events).
    pub fn controller_name(&self) -> &str {
        &self.scope.name
    }

    /// The key being reconciled.
    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// How many times the key was requeued with backoff since it last succeeded (the
    /// workqueue's `num_requeues`): 0 on a first attempt. The `attempt` the reconcile's
    /// tracing span carries.
    pub fn retries(&self) -> usize {
        self.retries
    }

    /// Whether this process may act as the leader *now*: true without leader election;
    /// with it, the leader token's [`is_leader`](LeaderToken::is_leader), which reads the
    /// clock against the renew deadline. The runtime asks it right before each reconcile;
    /// ask it again right before a write that only the leader may make.
    pub fn is_leader(&self) -> bool {
        self.scope
            .leader
            .as_ref()
            .is_none_or(LeaderToken::is_leader)
    }

    /// The Event recorder bound to this controller (its name is the Events' source
    /// component), when the controller records Events
    /// ([`Controller::record_events`](crate::Controller::record_events), or a
    /// [`Manager`](crate::Manager) with an event broadcaster).
    pub fn recorder(&self) -> Option<&EventRecorder> {
        self.scope.recorder.as_ref()
    }
}
