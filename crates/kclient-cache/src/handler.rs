//! Event handlers: what an informer calls when an object is added, updated or deleted
//! (client-go's `ResourceEventHandler`, in its typed form `TypedResourceEventHandler[T]`).
//!
//! * [`ResourceEventHandler`]: the trait, three methods with no-op defaults.
//! * [`ResourceEventHandlerFuncs`]: the same from closures, set as needed (client-go's
//!   `ResourceEventHandlerFuncs`).
//! * [`FilteringResourceEventHandler`]: passes on only objects a filter accepts, turning an
//!   update that crosses the filter into an add or a delete (client-go's
//!   `FilteringResourceEventHandler`).
//! * [`EnqueueObjectKey`]: feeds a workqueue — the key of every added, updated and deleted
//!   object (tombstones included) to one sink, where client-go programs write
//!   `queue.Add(key)` in three closures (controller-runtime's `EnqueueRequestForObject`).
//!
//! Each handler has its own queue and is called one notification at a time and in order;
//! the objects are the cache's shared `Arc`s and must not be changed (they are immutable
//! behind `Arc` anyway). On a multi-thread runtime the calls are made on tokio's blocking
//! pool, so a handler that blocks (a synchronous call, a lock, a sleep) delays only its own
//! queue: never the runtime's workers, the informer or the other handlers (client-go gives
//! each handler a goroutine). On a current-thread runtime they are made on the runtime's one
//! thread, like every task there. Either way a handler should return quickly — the usual one
//! puts the object's key into a workqueue — or its queue grows.
//!
//! What handlers see, as in client-go:
//! * A relist (after a `410 Gone`, a broken watch that cannot resume) delivers `on_update`
//!   for every listed object still cached, including unchanged ones (same
//!   resourceVersion), even to a handler without a resync period: compare resourceVersions
//!   to skip them.
//! * An object deleted and recreated while the watch was broken arrives, after the relist,
//!   as an `on_update` whose `old` and `new` have different UIDs, not as a delete and an
//!   add: compare `metadata.uid` in `on_update` when identity matters.
//! * A list that holds two objects with the same namespace and name (a misbehaving server)
//!   gives two `on_add`s for the one cached object, and no delete.
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::Pod;
//! use kclient_cache::{ResourceEventHandler, ResourceEventHandlerFuncs};
//!
//! let handler = ResourceEventHandlerFuncs::<Pod>::new()
//!     .add_func(|pod, is_in_initial_list| println!("added {:?} ({is_in_initial_list})", pod.metadata.name))
//!     .delete_func(|deleted| println!("deleted {:?}", deleted.last_known().map(|p| &p.metadata.name)));
//! handler.on_add(&Arc::new(Pod::default()), true);
//! ```

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use kclient_core::{
    deletion_handling_meta_namespace_key, meta_namespace_key, DeletedFinalStateUnknown,
    DeletedObject, Resource,
};

/// What an informer calls for each change of its cache (client-go's
/// `ResourceEventHandler`). Every method has a no-op default.
pub trait ResourceEventHandler<K>: Send + Sync {
    /// An object appeared in the cache. `is_in_initial_list` is true for the objects of the
    /// first list (and for the cached objects replayed to a handler added to a running
    /// informer), false for objects created later.
    fn on_add(&self, _obj: &Arc<K>, _is_in_initial_list: bool) {}

    /// An object changed; `old` is the cached state before. A periodic resync calls it with
    /// `old` and `new` the same object (same resourceVersion): filter on the resourceVersion
    /// to tell a resync from a change.
    fn on_update(&self, _old: &Arc<K>, _new: &Arc<K>) {}

    /// An object was deleted. When the deletion was inferred from a relist (the watch missed
    /// it), `obj` is a [`DeletedFinalStateUnknown`] tombstone carrying the last known state.
    fn on_delete(&self, _obj: &DeletedObject<K>) {}

    /// Whether a call may block or take long (I/O, a lock another thread holds for long,
    /// heavy work). `true` unless the handler says otherwise: a shared informer then calls
    /// it on the process's handler threads, where it delays nobody but itself. A handler that only
    /// hands work on (a workqueue's `add`, an unbounded channel's `send`, counters) returns
    /// `false`, and the informer calls it from its listener's own task instead, saving a
    /// thread hand-off per burst of events; such a handler that blocks anyway holds an
    /// async worker thread while it does. kclient's own queueing handlers
    /// ([`EnqueueObjectKey`], the reconcile runtime's) return `false`.
    fn may_block(&self) -> bool {
        true
    }
}

impl<K, H: ResourceEventHandler<K> + ?Sized> ResourceEventHandler<K> for Arc<H> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        (**self).on_add(obj, is_in_initial_list)
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        (**self).on_update(old, new)
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        (**self).on_delete(obj)
    }

    fn may_block(&self) -> bool {
        (**self).may_block()
    }
}

impl<K, H: ResourceEventHandler<K> + ?Sized> ResourceEventHandler<K> for Box<H> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        (**self).on_add(obj, is_in_initial_list)
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        (**self).on_update(old, new)
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        (**self).on_delete(obj)
    }

    fn may_block(&self) -> bool {
        (**self).may_block()
    }
}

type AddFn<K> = dyn Fn(&Arc<K>, bool) + Send + Sync;
type UpdateFn<K> = dyn Fn(&Arc<K>, &Arc<K>) + Send + Sync;
type DeleteFn<K> = dyn Fn(&DeletedObject<K>) + Send + Sync;

/// A [`ResourceEventHandler`] made of closures; the ones not set do nothing (client-go's
/// `ResourceEventHandlerFuncs`). Cheap to clone.
pub struct ResourceEventHandlerFuncs<K> {
    add: Option<Arc<AddFn<K>>>,
    update: Option<Arc<UpdateFn<K>>>,
    delete: Option<Arc<DeleteFn<K>>>,
    non_blocking: bool,
}

impl<K> Clone for ResourceEventHandlerFuncs<K> {
    fn clone(&self) -> Self {
        Self {
            add: self.add.clone(),
            update: self.update.clone(),
            delete: self.delete.clone(),
            non_blocking: self.non_blocking,
        }
    }
}

impl<K> Default for ResourceEventHandlerFuncs<K> {
    fn default() -> Self {
        Self {
            add: None,
            update: None,
            delete: None,
            non_blocking: false,
        }
    }
}

impl<K> fmt::Debug for ResourceEventHandlerFuncs<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceEventHandlerFuncs")
            .field("add", &self.add.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .field("non_blocking", &self.non_blocking)
            .finish()
    }
}

impl<K> ResourceEventHandlerFuncs<K> {
    /// A handler that does nothing until closures are set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Calls `f(obj, is_in_initial_list)` on add (client-go's `AddFunc`).
    pub fn add_func(mut self, f: impl Fn(&Arc<K>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Arc::new(f));
        self
    }

    /// Calls `f(old, new)` on update (client-go's `UpdateFunc`).
    pub fn update_func(mut self, f: impl Fn(&Arc<K>, &Arc<K>) + Send + Sync + 'static) -> Self {
        self.update = Some(Arc::new(f));
        self
    }

    /// Calls `f(obj)` on delete, `obj` possibly a tombstone (client-go's `DeleteFunc`).
    pub fn delete_func(mut self, f: impl Fn(&DeletedObject<K>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Arc::new(f));
        self
    }

    /// Declares that none of the closures blocks or takes long (they queue keys, send on an
    /// unbounded channel, count): the informer calls them from its listener's task rather
    /// than on the handler threads (see [`ResourceEventHandler::may_block`]). Not part of
    /// client-go, whose handlers all run on goroutines of their own.
    pub fn non_blocking(mut self) -> Self {
        self.non_blocking = true;
        self
    }
}

impl<K> ResourceEventHandler<K> for ResourceEventHandlerFuncs<K> {
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(obj, is_in_initial_list)
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &self.update {
            f(old, new)
        }
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        if let Some(f) = &self.delete {
            f(obj)
        }
    }

    fn may_block(&self) -> bool {
        !self.non_blocking
    }
}

/// Passes on only the objects `filter` accepts (client-go's
/// `FilteringResourceEventHandler`):
///
/// * add: passed on if the object is accepted;
/// * update: both accepted → update; only the new one → add (`is_in_initial_list` false);
///   only the old one → delete (of the old object); neither → nothing;
/// * delete: passed on if the object (or the tombstone's last known state) is accepted; a
///   tombstone without an object is passed on, as its object cannot be judged.
pub struct FilteringResourceEventHandler<K, H> {
    filter: Arc<dyn Fn(&K) -> bool + Send + Sync>,
    handler: H,
}

impl<K, H: fmt::Debug> fmt::Debug for FilteringResourceEventHandler<K, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilteringResourceEventHandler")
            .field("handler", &self.handler)
            .finish_non_exhaustive()
    }
}

impl<K, H> FilteringResourceEventHandler<K, H> {
    /// `handler`, seeing only what `filter` accepts.
    pub fn new(filter: impl Fn(&K) -> bool + Send + Sync + 'static, handler: H) -> Self {
        Self {
            filter: Arc::new(filter),
            handler,
        }
    }
}

impl<K, H: ResourceEventHandler<K>> ResourceEventHandler<K>
    for FilteringResourceEventHandler<K, H>
{
    fn on_add(&self, obj: &Arc<K>, is_in_initial_list: bool) {
        if (self.filter)(obj) {
            self.handler.on_add(obj, is_in_initial_list);
        }
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        match ((self.filter)(old), (self.filter)(new)) {
            (true, true) => self.handler.on_update(old, new),
            (false, true) => self.handler.on_add(new, false),
            (true, false) => self
                .handler
                .on_delete(&DeletedObject::Object(Arc::clone(old))),
            (false, false) => {}
        }
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        let accepted = match obj {
            DeletedObject::Object(o) => (self.filter)(o),
            DeletedObject::Tombstone(DeletedFinalStateUnknown { obj: Some(o), .. }) => {
                (self.filter)(o)
            }
            DeletedObject::Tombstone(DeletedFinalStateUnknown { obj: None, .. }) => true,
        };
        if accepted {
            self.handler.on_delete(obj);
        }
    }

    /// The filter runs where the handler does: it should be as quick as the handler says.
    fn may_block(&self) -> bool {
        self.handler.may_block()
    }
}

type KeySink = dyn Fn(String) + Send + Sync;
type UpdateFilter<K> = dyn Fn(&K, &K) -> bool + Send + Sync;

/// A [`ResourceEventHandler`] that gives the key of every object added, updated or deleted
/// to one sink, usually a workqueue: the handler of almost every controller, written once
/// instead of as three closures that each clone the queue and compute the key (client-go
/// programs write `queue.Add(key)` in an `AddFunc`, an `UpdateFunc` and a `DeleteFunc`;
/// controller-runtime calls it `EnqueueRequestForObject`).
///
/// * add and update: the object's `namespace/name` (`name` when cluster-scoped), client-go's
///   `MetaNamespaceKeyFunc` ([`meta_namespace_key`]); every update, periodic resyncs
///   included (a resync exists to reconcile again), unless [`filter_updates`](Self::filter_updates)
///   says otherwise;
/// * delete: the same key, taken from the tombstone when the informer missed the deletion
///   and learnt of it from a relist (client-go's `DeletionHandlingMetaNamespaceKeyFunc`,
///   [`deletion_handling_meta_namespace_key`]), so no deletion is lost.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use k8s_openapi::api::core::v1::Pod;
/// use kclient_cache::{EnqueueObjectKey, ResourceEventHandler};
///
/// // A workqueue's `add` in a real controller: `move |key| queue.add(key)`.
/// let keys = Arc::new(Mutex::new(Vec::new()));
/// let sink = keys.clone();
/// let handler = EnqueueObjectKey::<Pod>::new(move |key| sink.lock().unwrap().push(key));
/// let mut pod = Pod::default();
/// pod.metadata.namespace = Some("default".into());
/// pod.metadata.name = Some("web".into());
/// handler.on_add(&Arc::new(pod), true);
/// assert_eq!(*keys.lock().unwrap(), ["default/web"]);
/// ```
pub struct EnqueueObjectKey<K> {
    sink: Arc<KeySink>,
    updates: Option<Arc<UpdateFilter<K>>>,
    // `fn(&K)`: the handler holds no `K`, so it is `Send + Sync` whatever `K` is.
    kind: PhantomData<fn(&K)>,
}

impl<K> EnqueueObjectKey<K> {
    /// A handler that calls `sink` with the key of each event's object. `sink` must not block
    /// (the informer calls it from its listener's task: see
    /// [`ResourceEventHandler::may_block`]); a workqueue's `add` does not.
    pub fn new(sink: impl Fn(String) + Send + Sync + 'static) -> Self {
        Self {
            sink: Arc::new(sink),
            updates: None,
            kind: PhantomData,
        }
    }

    /// Enqueues an update only when `changed(old, new)` holds, for example when the
    /// generation moved (so that the controller's own status writes, which come back as
    /// updates, do not queue the object again). Adds and deletes are always enqueued.
    pub fn filter_updates(
        mut self,
        changed: impl Fn(&K, &K) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.updates = Some(Arc::new(changed));
        self
    }
}

impl<K> Clone for EnqueueObjectKey<K> {
    fn clone(&self) -> Self {
        Self {
            sink: self.sink.clone(),
            updates: self.updates.clone(),
            kind: PhantomData,
        }
    }
}

impl<K> fmt::Debug for EnqueueObjectKey<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnqueueObjectKey")
            .field("filter_updates", &self.updates.is_some())
            .finish_non_exhaustive()
    }
}

impl<K: Resource> ResourceEventHandler<K> for EnqueueObjectKey<K> {
    fn on_add(&self, obj: &Arc<K>, _is_in_initial_list: bool) {
        (self.sink)(meta_namespace_key(obj.as_ref()));
    }

    fn on_update(&self, old: &Arc<K>, new: &Arc<K>) {
        if self
            .updates
            .as_ref()
            .is_none_or(|changed| changed(old, new))
        {
            (self.sink)(meta_namespace_key(new.as_ref()));
        }
    }

    fn on_delete(&self, obj: &DeletedObject<K>) {
        (self.sink)(deletion_handling_meta_namespace_key(obj));
    }

    /// `false`: the sink queues a key (a workqueue's `add` never blocks).
    fn may_block(&self) -> bool {
        false
    }
}

/// Calls the handler method for `notification`, catching a panic: `Err` carries the panic's
/// message. Shared by the informers' listeners and [`new_informer`](crate::new_informer).
pub(crate) fn dispatch<K, H: ResourceEventHandler<K> + ?Sized>(
    handler: &H,
    notification: &crate::process_deltas::Notification<K>,
) -> Result<(), String> {
    use crate::process_deltas::Notification;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match notification {
        Notification::Add {
            obj,
            is_in_initial_list,
        } => handler.on_add(obj, *is_in_initial_list),
        Notification::Update { old, new } => handler.on_update(old, new),
        Notification::Delete(obj) => handler.on_delete(obj),
    }))
    .map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned())
    })
}
