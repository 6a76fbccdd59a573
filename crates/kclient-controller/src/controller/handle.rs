//! [`ControllerHandle`]: watches added to a controller that runs already
//! (controller-runtime's `Controller.Watch` after `Start`).

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use kclient_cache::SharedInformerFactory;
use kclient_core::{ListerWatcherFor, ObjectKey, Resource};
use tokio::sync::mpsc;

use super::{group_resource, Controller, WatchSource};
use crate::predicate::Predicate;
use crate::source::OwnerType;

/// The controller's run has ended: a watch can no longer be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the controller has stopped")]
pub struct ControllerStopped;

/// Adds watches to a controller after it was built — before it runs, or while it runs
/// (controller-runtime's `Controller.Watch` on a started controller): for types known only
/// later, a CRD installed while the operator runs, say. Made by [`Controller::handle`];
/// cheap to clone. A watch added while the controller runs starts its informer on the
/// controller's factory at once; its initial list queues its keys at low priority, as any
/// initial list.
///
/// ```no_run
/// # use std::time::Duration;
/// # use k8s_openapi::api::apps::v1::Deployment;
/// # use k8s_openapi::api::core::v1::Secret;
/// # use kclient_cache::SharedInformerFactory;
/// # use kclient_controller::{Action, Controller, ReconcileContext, Reconciler};
/// # use kclient_core::{CancellationToken, ObjectKey, ResourceExt};
/// # struct Web;
/// # impl Reconciler<Deployment> for Web { type Error = std::convert::Infallible;
/// #   async fn reconcile(&self, _: std::sync::Arc<Deployment>, _: &ReconcileContext) -> Result<Action, Self::Error> { Ok(Action::await_change()) } }
/// # async fn demo(clientset: kclient_typed::Clientset) -> Result<(), Box<dyn std::error::Error>> {
/// let factory = SharedInformerFactory::new(clientset, Duration::ZERO);
/// let controller = Controller::<Deployment, _>::new("web", &factory);
/// let handle = controller.handle();
/// let stop = CancellationToken::new();
/// let running = tokio::spawn(controller.run(Web, stop.clone()));
/// // Later, once Secrets matter:
/// handle.watches(|s: &Secret| {
///     s.labels().get("app").map(|app| ObjectKey::namespaced(s.namespace().unwrap_or_default(), app.clone()))
/// })?;
/// # stop.cancel(); running.await??; Ok(()) }
/// ```
pub struct ControllerHandle<K, C> {
    name: Arc<str>,
    factory: SharedInformerFactory<C>,
    owner: OwnerType,
    sources: mpsc::UnboundedSender<WatchSource>,
    _kind: PhantomData<fn() -> K>,
}

impl<K, C> Clone for ControllerHandle<K, C> {
    fn clone(&self) -> Self {
        Self {
            name: Arc::clone(&self.name),
            factory: self.factory.clone(),
            owner: self.owner.clone(),
            sources: self.sources.clone(),
            _kind: PhantomData,
        }
    }
}

impl<K, C> fmt::Debug for ControllerHandle<K, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ControllerHandle")
            .field("controller", &self.name)
            .finish_non_exhaustive()
    }
}

impl<K, C> Controller<K, C> {
    /// A handle that adds watches to this controller later, while it runs.
    pub fn handle(&self) -> ControllerHandle<K, C> {
        ControllerHandle {
            name: Arc::clone(&self.name),
            factory: self.factory.clone(),
            owner: self.owner.clone(),
            sources: self.late_sender.clone(),
            _kind: PhantomData,
        }
    }
}

impl<K, C> ControllerHandle<K, C> {
    /// [`Controller::watches`] on the running controller.
    ///
    /// # Errors
    ///
    /// [`ControllerStopped`] once the controller's run has ended.
    pub fn watches<W, I>(
        &self,
        mapper: impl Fn(&W) -> I + Send + Sync + 'static,
    ) -> Result<(), ControllerStopped>
    where
        W: Resource + Clone + Send + Sync + 'static,
        W::DynamicType: Default,
        C: ListerWatcherFor<W> + Send + Sync + 'static,
        I: IntoIterator<Item = ObjectKey>,
    {
        self.watches_with(mapper, None)
    }

    /// [`Controller::watches_with`] on the running controller.
    ///
    /// # Errors
    ///
    /// [`ControllerStopped`] once the controller's run has ended.
    pub fn watches_with<W, I>(
        &self,
        mapper: impl Fn(&W) -> I + Send + Sync + 'static,
        predicate: impl Into<Option<Predicate<W>>>,
    ) -> Result<(), ControllerStopped>
    where
        W: Resource + Clone + Send + Sync + 'static,
        W::DynamicType: Default,
        C: ListerWatcherFor<W> + Send + Sync + 'static,
        I: IntoIterator<Item = ObjectKey>,
    {
        let informer = self.factory.informer::<W>();
        let resource = group_resource(&W::api_resource(&W::DynamicType::default()));
        let watch = WatchSource::mapped(&self.name, &informer, resource, mapper, predicate.into());
        self.sources.send(watch).map_err(|_| ControllerStopped)
    }

    /// [`Controller::owns`] on the running controller.
    ///
    /// # Errors
    ///
    /// [`ControllerStopped`] once the controller's run has ended.
    pub fn owns<O>(&self) -> Result<(), ControllerStopped>
    where
        O: Resource + Clone + Send + Sync + 'static,
        O::DynamicType: Default,
        C: ListerWatcherFor<O> + Send + Sync + 'static,
    {
        let owner = self.owner.clone();
        self.watches_with(move |obj: &O| owner.controller_key(obj), None)
    }
}
