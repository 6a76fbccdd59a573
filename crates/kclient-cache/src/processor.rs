//! The fan-out of a shared informer (client-go's `sharedProcessor`): the listeners, which of
//! them are due for a resync, and their tasks.
//!
//! A notification from a resync (an update whose old and new objects have the same
//! resourceVersion) goes only to the listeners whose own resync period is due at the last
//! resync check; everything else goes to every listener. Before the first check every
//! listener counts as due (client-go starts `syncingListeners` with all of them).
//!
//! Like the listeners, the processor does not know its informer's kind (see
//! [`Queued`]): it is compiled once for every kind.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::{Mutex, RwLock};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::announced::Queued;
use crate::listener::Listener;

struct State {
    listeners: Vec<Arc<Listener>>,
    /// The listeners due at the last resync check.
    syncing: Vec<Arc<Listener>>,
    /// Where listener tasks run once started.
    runtime: Option<Handle>,
}

pub(crate) struct Processor {
    state: RwLock<State>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Processor {
    pub(crate) fn new() -> Self {
        Self {
            state: RwLock::new(State {
                listeners: Vec::new(),
                syncing: Vec::new(),
                runtime: None,
            }),
            tasks: Mutex::new(Vec::new()),
        }
    }

    /// Adds a listener (started at once if the processor runs).
    pub(crate) fn add_listener(&self, listener: Arc<Listener>) {
        let mut state = self.state.write();
        state.listeners.push(Arc::clone(&listener));
        state.syncing.push(Arc::clone(&listener));
        if let Some(runtime) = &state.runtime {
            self.tasks.lock().push(spawn_listener(runtime, listener));
        }
    }

    /// Removes and stops a listener (nothing if it is not there).
    pub(crate) fn remove_listener(&self, id: u64) {
        let mut state = self.state.write();
        state.listeners.retain(|l| {
            if l.id == id {
                l.close();
            }
            l.id != id
        });
        state.syncing.retain(|l| l.id != id);
    }

    pub(crate) fn listeners(&self) -> Vec<Arc<Listener>> {
        self.state.read().listeners.clone()
    }

    /// The bounded listeners whose queue is at its bound (usually none).
    pub(crate) fn full_listeners(&self) -> Vec<Arc<Listener>> {
        self.state
            .read()
            .listeners
            .iter()
            .filter(|l| l.max_pending().is_some_and(|bound| l.pending() >= bound))
            .cloned()
            .collect()
    }

    /// Hands a notification to every listener, or for a resync only to the due ones; it is
    /// made (one allocation, shared by the listeners) only when one is to get it. Never waits
    /// for a handler.
    pub(crate) fn distribute(&self, notification: impl FnOnce() -> Queued, is_sync: bool) {
        let state = self.state.read();
        let targets = if is_sync {
            &state.syncing
        } else {
            &state.listeners
        };
        if targets.is_empty() {
            return;
        }
        let notification = notification();
        for listener in targets {
            listener.add(notification.clone());
        }
    }

    /// Starts every listener's task on the current runtime.
    pub(crate) fn run(&self) {
        let mut state = self.state.write();
        let runtime = Handle::current();
        let mut tasks = self.tasks.lock();
        for listener in &state.listeners {
            tasks.push(spawn_listener(&runtime, Arc::clone(listener)));
        }
        state.runtime = Some(runtime);
    }

    /// Stops every listener and waits for their tasks (a handler call in progress finishes).
    pub(crate) async fn stop(&self) {
        {
            let mut state = self.state.write();
            for listener in &state.listeners {
                listener.close();
            }
            state.runtime = None;
        }
        let tasks = std::mem::take(&mut *self.tasks.lock());
        for task in tasks {
            let _ = task.await;
        }
    }

    /// Whether any listener is due for a resync; remembers which (client-go's
    /// `shouldResync`).
    pub(crate) fn should_resync(&self) -> bool {
        let now = Instant::now();
        let mut state = self.state.write();
        let due: Vec<_> = state
            .listeners
            .iter()
            .filter(|l| l.should_resync(now))
            .cloned()
            .collect();
        for listener in &due {
            listener.determine_next_resync(now);
        }
        let any = !due.is_empty();
        state.syncing = due;
        any
    }

    /// Aligns every listener's period with a new check period (client-go's
    /// `resyncCheckPeriodChanged`).
    pub(crate) fn resync_check_period_changed(&self, check: Duration) {
        for listener in &self.state.read().listeners {
            listener.set_resync_period(determine_resync_period(
                &listener.name,
                listener.requested_resync_period,
                check,
            ));
        }
    }
}

/// Starts `listener`'s task on `runtime`. The task is boxed, so that the runtime's task code
/// is compiled once, not once per kind a program caches.
fn spawn_listener(runtime: &Handle, listener: Arc<Listener>) -> JoinHandle<()> {
    let run: BoxFuture<'static, ()> = Box::pin(listener.run());
    runtime.spawn(run)
}

/// The period a listener actually resyncs with, given what it asked for and the informer's
/// check period (client-go's `determineResyncPeriod`): 0 stays 0; a non-resyncing informer
/// gives 0 (with a warning); shorter than the check period is raised to it.
pub(crate) fn determine_resync_period(
    handler: &str,
    desired: Duration,
    check: Duration,
) -> Duration {
    if desired.is_zero() {
        return desired;
    }
    if check.is_zero() {
        tracing::warn!(
            handler,
            ?desired,
            "the specified resync period is invalid because this shared informer doesn't support resyncing"
        );
        return Duration::ZERO;
    }
    if desired < check {
        tracing::warn!(
            handler,
            ?desired,
            ?check,
            "the specified resync period is being increased to the minimum resync check period"
        );
        return check;
    }
    desired
}
