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

use kclient_core::{ApiError, Status, StatusDetails, StatusReason};
use parking_lot::Mutex;

use crate::actions::ActionFilter;
use crate::reactors::{Origin, Reaction, Reactor, ReactorChain};
use crate::state::Shared;

/// A failure to answer requests with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The HTTP status code.
    pub code: u16,
    /// The `Retry-After` header and `details.retryAfterSeconds`, if any.
    pub retry_after: Option<u32>,
    /// The message of the `Status` body (a default one when `None`).
    pub message: Option<String>,
}

impl Failure {
    /// A failure with this HTTP status code.
    pub fn status(code: u16) -> Self {
        Self {
            code,
            retry_after: None,
            message: None,
        }
    }

    /// The same failure with a `Retry-After` of `seconds`.
    pub fn retry_after(mut self, seconds: u32) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// The same failure with this message.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// The response: the `Status` of [`to_error`](Self::to_error), and the `Retry-After`
    /// header exactly as asked for (`0` and any status code included: a test of how a client
    /// treats a `502` with `Retry-After` must get one).
    pub fn response(&self) -> http::Response<crate::response::Body> {
        let mut res = crate::response::error(&self.to_error());
        if let Some(seconds) = self.retry_after {
            res.headers_mut()
                .insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
        }
        res
    }

    /// The `Status` error this failure answers with, with the reason the code implies.
    pub fn to_error(&self) -> ApiError {
        let reason = match self.code {
            400 => StatusReason::BadRequest,
            401 => StatusReason::Unauthorized,
            403 => StatusReason::Forbidden,
            404 => StatusReason::NotFound,
            405 => StatusReason::MethodNotAllowed,
            409 => StatusReason::Conflict,
            410 => StatusReason::Gone,
            422 => StatusReason::Invalid,
            429 => StatusReason::TooManyRequests,
            500 => StatusReason::InternalError,
            503 => StatusReason::ServiceUnavailable,
            504 => StatusReason::Timeout,
            _ => StatusReason::Unknown,
        };
        let message = self
            .message
            .clone()
            .unwrap_or_else(|| format!("injected failure ({})", self.code));
        let mut status = Status::failure(reason, self.code, message);
        if let Some(s) = self.retry_after {
            status = status.with_details(StatusDetails {
                retry_after_seconds: i32::try_from(s).unwrap_or(i32::MAX),
                ..StatusDetails::default()
            });
        }
        status.into()
    }
}

/// The fault state of one server.
#[derive(Debug)]
pub struct FaultState {
    /// The reactor chain: the tests' reactors and the failures of `fail_next`.
    pub(crate) reactors: ReactorChain,
    latency: Mutex<Duration>,
    pub(crate) drop_watches: tokio::sync::watch::Sender<u64>,
    pub(crate) stall_watches: tokio::sync::watch::Sender<bool>,
    pub(crate) hang_watches: tokio::sync::watch::Sender<u64>,
}

impl Default for FaultState {
    fn default() -> Self {
        Self {
            reactors: ReactorChain::default(),
            latency: Mutex::new(Duration::ZERO),
            drop_watches: tokio::sync::watch::channel(0).0,
            stall_watches: tokio::sync::watch::channel(false).0,
            hang_watches: tokio::sync::watch::channel(0).0,
        }
    }
}

impl FaultState {
    /// The latency to add to a request.
    pub fn latency(&self) -> Duration {
        *self.latency.lock()
    }
}

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
