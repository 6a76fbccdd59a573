//! Fault injection, scoped to one server instance: fail the next N requests with any status
//! (and a `Retry-After`), add latency to every request, drop every open watch, compact the
//! history (the next watch or continue token from before gets `410 Expired`), stall
//! watches without closing them, and hang them past their timeout (a broken server or
//! proxy).
//!
//! These hit every request of every client. To fail, answer or delay only some requests
//! (a verb, a resource, a namespace, a name, a user agent), add a [reactor](crate::Reactor);
//! [`Faults::fail_next`] is one, which picks every request.
//!
//! ```no_run
//! # async fn demo() -> Result<(), kclient_fake::Error> {
//! use std::time::Duration;
//! use kclient_fake::{FakeApiServer, Failure};
//!
//! let server = FakeApiServer::builder().start().await?;
//! server.faults().fail_next(2, Failure::status(503).retry_after(1));
//! server.faults().set_latency(Duration::from_millis(50));
//! server.faults().drop_watches();
//! server.faults().compact_history();
//! # Ok(()) }
//! ```

use std::sync::Arc;
use std::time::Duration;

use crate::actions::ActionFilter;
use crate::reactors::{Failure, Origin, Reaction, Reactor};
use crate::state::Shared;

/// Fault injection on one server (see the module documentation).
#[derive(Debug, Clone)]
pub struct Faults {
    pub(crate) shared: Arc<Shared>,
}

impl Faults {
    /// Answers the next `n` requests (any path, any verb) with `failure` instead of serving
    /// them: a reactor that picks every request, `n` times, at the end of the
    /// [reactor chain](crate::Reactors) (so failures injected one after the other are served
    /// in that order, and the tests' own reactors come first).
    pub fn fail_next(&self, n: usize, failure: Failure) {
        let reactor = Reactor::new(ActionFilter::any(), Reaction::Fail(failure)).times(n);
        self.shared
            .faults
            .reactors
            .insert(reactor, false, Origin::InjectedFailure);
    }

    /// Forgets the failures not yet used.
    pub fn clear_failures(&self) {
        self.shared.faults.reactors.clear(Origin::InjectedFailure);
    }

    /// How many injected failures are still to be served.
    pub fn pending_failures(&self) -> usize {
        self.shared
            .faults
            .reactors
            .remaining(Origin::InjectedFailure)
    }

    /// Delays every request by `latency` (measured with tokio's clock, so a paused clock
    /// controls it). `Duration::ZERO` removes the delay.
    pub fn set_latency(&self, latency: Duration) {
        *self.shared.faults.latency.lock() = latency;
    }

    /// Ends every open watch (the client sees its stream close cleanly).
    pub fn drop_watches(&self) {
        self.shared.faults.drop_watches.send_modify(|g| *g += 1);
    }

    /// Compacts the history: every resourceVersion handed out so far becomes too old, so
    /// watches and continue tokens from before now get `410 Expired`, open watches included
    /// (they receive an `ERROR` event and end). A fresh list works, at a new resourceVersion.
    pub fn compact_history(&self) {
        self.shared.registry.store.mutate(|s| s.compact());
    }

    /// Stalls every watch: the connections stay open but no event or bookmark is sent until
    /// [`resume_watches`](Self::resume_watches).
    pub fn stall_watches(&self) {
        self.shared.faults.stall_watches.send_replace(true);
    }

    /// Hangs every open watch, as a broken server or a proxy in front of one can: its
    /// connection stays open and nothing more is sent on it — no event, no bookmark — and it
    /// is not ended at its `timeoutSeconds` either; only the client (or
    /// [`drop_watches`](Self::drop_watches)) ends it. Watches started afterwards are served
    /// normally, so a client that gives up on a hung watch and watches again recovers.
    pub fn hang_watches(&self) {
        self.shared.faults.hang_watches.send_modify(|g| *g += 1);
    }

    /// Lets stalled watches send again (events that happened meanwhile are delivered, if the
    /// history still has them).
    pub fn resume_watches(&self) {
        self.shared.faults.stall_watches.send_replace(false);
    }
}
