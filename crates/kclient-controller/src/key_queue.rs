//! The controller's queue of keys: controller-runtime's priority queue of [`ObjectKey`]s,
//! behind methods that are not generic.
//!
//! The handlers and the workers are generic over the kinds and the reconciler, so each of
//! their calls into the generic [`PriorityQueue`] would compile the queue's code again in the
//! program that uses the controller. Calls through these methods compile it once, here
//! ("Compiled once" in docs/architecture.md).

use futures::future::BoxFuture;
use kclient_core::ObjectKey;
use kclient_workqueue::{AddOpts, PriorityQueue};

/// A controller's queue of keys (see the module docs).
#[derive(Clone)]
pub(crate) struct KeyQueue(PriorityQueue<ObjectKey>);

impl KeyQueue {
    pub(crate) fn new(queue: PriorityQueue<ObjectKey>) -> Self {
        Self(queue)
    }

    /// Queues `key` as `opts` say.
    pub(crate) fn add_with_opts(&self, opts: AddOpts, key: ObjectKey) {
        self.0.add_with_opts(opts, [key]);
    }

    /// Queues `keys` as `opts` say, at once.
    pub(crate) fn add_all_with_opts(&self, opts: AddOpts, keys: Vec<ObjectKey>) {
        self.0.add_with_opts(opts, keys);
    }

    /// Queues `key`, ready now at the default priority.
    pub(crate) fn add(&self, key: ObjectKey) {
        self.0.add(key);
    }

    /// The next key and its priority, once one is ready; `None` once shut down.
    pub(crate) fn get_with_priority(&self) -> BoxFuture<'_, Option<(ObjectKey, i32)>> {
        Box::pin(self.0.get_with_priority())
    }

    pub(crate) fn done(&self, key: &ObjectKey) {
        self.0.done(key);
    }

    pub(crate) fn forget(&self, key: &ObjectKey) {
        self.0.forget(key);
    }

    pub(crate) fn num_requeues(&self, key: &ObjectKey) -> usize {
        self.0.num_requeues(key)
    }

    pub(crate) fn shut_down(&self) {
        self.0.shut_down();
    }
}
