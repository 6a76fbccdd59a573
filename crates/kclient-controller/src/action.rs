//! [`Action`]: what a reconcile (or the error policy) asks the runtime to do with the key
//! next (kube-rs's `Action`, controller-runtime's `reconcile.Result`).

use std::fmt;
use std::time::Duration;

use crate::reconciler::ReconcileContext;

/// What happens to a key after a reconcile, in workqueue terms:
///
/// | action | after a success | after an error (from the error policy) |
/// |---|---|---|
/// | [`await_change`](Self::await_change) | `forget`: nothing until the next event | `forget`: given up until the next event |
/// | [`requeue`](Self::requeue)`(d)` | `forget`, then `add_after(d)` | `add_after(d)` (the failure history is kept) |
/// | [`requeue_rate_limited`](Self::requeue_rate_limited) | `add_rate_limited` | `add_rate_limited`: the per-key exponential backoff (the default error policy) |
///
/// In every case the key is marked `done`. An event that arrived while it was being
/// reconciled queues it again at once, whatever the action; an event that arrives while a
/// requeue is waiting replaces it (the controller's [`PriorityQueue`] keeps one entry per
/// key, the sooner wins), so a `requeue(d)` never fires after an event was handled.
///
/// A requeue is at the priority the key was handed out with, unless
/// [`with_priority`](Self::with_priority) says otherwise (controller-runtime's
/// `Result.Priority`).
///
/// [`PriorityQueue`]: kclient_workqueue::PriorityQueue
///
/// ```
/// use std::time::Duration;
/// use kclient_controller::Action;
///
/// let poll = Action::requeue(Duration::from_secs(300));
/// assert_eq!(poll.requeue_after(), Some(Duration::from_secs(300)));
/// assert_eq!(Action::await_change().requeue_after(), None);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Action {
    next: Next,
    priority: Option<i32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Next {
    AwaitChange,
    After(Duration),
    RateLimited,
}

impl Action {
    /// Reconcile the key again once `after` has passed, even without an event (a periodic
    /// check of something the controller cannot watch): the workqueue's `add_after`. A zero
    /// duration queues it again at once. After a success the key's failure history is
    /// forgotten first, as controller-runtime does for `RequeueAfter`.
    pub fn requeue(after: Duration) -> Self {
        Self {
            next: Next::After(after),
            priority: None,
        }
    }

    /// Nothing more until the next event for the key (an informer's add, update or
    /// delete, a mapped owned or watched object): the workqueue's `forget`.
    pub fn await_change() -> Self {
        Self {
            next: Next::AwaitChange,
            priority: None,
        }
    }

    /// Reconcile the key again after the rate limiter's delay: the workqueue's
    /// `add_rate_limited`, per-key exponential backoff (5 ms doubling up to 1000 s with
    /// client-go's default limiter) combined with an overall 10 qps / 100 burst bucket. What
    /// the default error policy returns; after a success it is controller-runtime's
    /// `Result{Requeue: true}`.
    pub fn requeue_rate_limited() -> Self {
        Self {
            next: Next::RateLimited,
            priority: None,
        }
    }

    /// [`requeue_rate_limited`](Self::requeue_rate_limited) while the key has been retried
    /// fewer than `max_retries` times since it last succeeded
    /// ([`ReconcileContext::retries`]), then [`await_change`](Self::await_change): the
    /// error policy that gives up on a failing key after `max_retries` retries, until its
    /// next event (client-go's workqueue example: `if queue.NumRequeues(key) < maxRetries {
    /// queue.AddRateLimited(key) } else { queue.Forget(key) }`).
    ///
    /// ```
    /// use kclient_controller::{Action, ReconcileContext, Reconciler};
    /// # use std::sync::Arc;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # struct Settings;
    /// # impl Reconciler<ConfigMap> for Settings {
    /// #     type Error = std::io::Error;
    /// #     async fn reconcile(&self, _: Arc<ConfigMap>, _: &ReconcileContext) -> Result<Action, Self::Error> { Ok(Action::await_change()) }
    /// fn error_policy(&self, _: &std::io::Error, ctx: &ReconcileContext) -> Action {
    ///     Action::requeue_rate_limited_up_to(ctx, 5)
    /// }
    /// # }
    /// ```
    pub fn requeue_rate_limited_up_to(ctx: &ReconcileContext, max_retries: usize) -> Self {
        if ctx.retries() < max_retries {
            Self::requeue_rate_limited()
        } else {
            Self::await_change()
        }
    }

    /// The same action, its requeue queued at `priority` (higher is served first; the
    /// initial list and unchanged resyncs queue at
    /// [`LOW_PRIORITY`](crate::LOW_PRIORITY)) rather than at the priority the key was handed
    /// out with (controller-runtime's `Result.Priority`). No effect on
    /// [`await_change`](Self::await_change).
    ///
    /// ```
    /// use std::time::Duration;
    /// use kclient_controller::Action;
    ///
    /// let background = Action::requeue(Duration::from_secs(60)).with_priority(-10);
    /// assert_eq!(background.priority(), Some(-10));
    /// ```
    #[must_use]
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = Some(priority);
        self
    }

    /// The priority set by [`with_priority`](Self::with_priority).
    pub fn priority(&self) -> Option<i32> {
        self.priority
    }

    /// The delay of a [`requeue`](Self::requeue), `None` for the other actions.
    pub fn requeue_after(&self) -> Option<Duration> {
        match self.next {
            Next::After(after) => Some(after),
            Next::AwaitChange | Next::RateLimited => None,
        }
    }

    /// Whether this is [`requeue_rate_limited`](Self::requeue_rate_limited).
    pub fn is_rate_limited(&self) -> bool {
        self.next == Next::RateLimited
    }

    pub(crate) fn next(&self) -> Next {
        self.next
    }
}

impl fmt::Debug for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.next {
            Next::AwaitChange => f.write_str("Action::await_change()"),
            Next::After(after) => write!(f, "Action::requeue({after:?})"),
            Next::RateLimited => f.write_str("Action::requeue_rate_limited()"),
        }?;
        match self.priority {
            Some(priority) => write!(f, ".with_priority({priority})"),
            None => Ok(()),
        }
    }
}
