//! Targeted reactors, as client-go's fake clientset has them: the chain of one server
//! ([`ReactorChain`], which also serves [`Faults::fail_next`](crate::Faults::fail_next)),
//! the [`Reactor`]s in it, their [`Reaction`]s, and the handles tests use ([`Reactors`],
//! [`ReactorHandle`]).

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http::{Response, StatusCode};
use kclient_core::{ApiError, Status, StatusDetails, StatusReason};
use parking_lot::Mutex;
use serde_json::Value;

use crate::actions::{ActionFilter, RecordedAction};
use crate::response::{self, Body};

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

/// What a reactor does with a request it picked (client-go's `ReactionFunc` results).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Reaction {
    /// Answer with this failure: its `Status` and, if it has one, its `Retry-After`.
    Fail(Failure),
    /// Answer with this object (as JSON) and HTTP status code, as if the server had served
    /// the request (for example `200` with the object a `get` or an `update` would answer).
    Respond {
        /// The HTTP status code.
        code: u16,
        /// The body.
        object: Value,
    },
    /// Wait this long (tokio's clock), then let the request go on down the chain and, if no
    /// later reactor answers it, to the server.
    Delay(Duration),
    /// Do nothing: the request goes on down the chain, and this reactor has not reacted (its
    /// count is not used). What a [`Reactor::from_fn`] returns for requests it lets by.
    PassThrough,
}

type ReactionFn = Arc<dyn Fn(&RecordedAction) -> Reaction + Send + Sync>;

/// A reactor: which requests it picks, what it does with them, and how many times (client-go's
/// `SimpleReactor`, narrowed further than by verb and resource).
#[derive(Clone)]
pub struct Reactor {
    filter: ActionFilter,
    reaction: ReactionFn,
    times: Option<usize>,
}

impl fmt::Debug for Reactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reactor")
            .field("filter", &self.filter)
            .field("times", &self.times)
            .finish_non_exhaustive()
    }
}

impl Reactor {
    /// A reactor that reacts to every request `filter` picks with `reaction`, until it is
    /// removed (see [`times`](Self::times)).
    pub fn new(filter: ActionFilter, reaction: Reaction) -> Self {
        Self::from_fn(filter, move |_| reaction.clone())
    }

    /// A reactor whose reaction is computed from the request (client-go's `ReactionFunc`):
    /// return [`Reaction::PassThrough`] for a request the reactor lets by. The function runs
    /// outside every lock of the server, so it may read the server's state.
    pub fn from_fn(
        filter: ActionFilter,
        reaction: impl Fn(&RecordedAction) -> Reaction + Send + Sync + 'static,
    ) -> Self {
        Self {
            filter,
            reaction: Arc::new(reaction),
            times: None,
        }
    }

    /// Reacts `n` times, then leaves the chain (a pass-through does not count). `times(1)`:
    /// one shot.
    pub fn times(mut self, n: usize) -> Self {
        self.times = Some(n);
        self
    }
}

/// Who put an entry in the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A test, through [`Reactors`].
    Reactor,
    /// [`Faults::fail_next`](crate::Faults::fail_next).
    InjectedFailure,
}

struct Entry {
    id: u64,
    reactor: Reactor,
    /// Reactions left (`None`: until removed).
    remaining: Option<usize>,
    uses: Arc<AtomicUsize>,
    origin: Origin,
}

/// The reactor chain of one server.
#[derive(Default)]
pub(crate) struct ReactorChain {
    entries: Mutex<Vec<Entry>>,
    next_id: AtomicU64,
}

impl fmt::Debug for ReactorChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReactorChain")
            .field("entries", &self.entries.lock().len())
            .finish()
    }
}

impl ReactorChain {
    /// Puts `reactor` at the front of the chain or at its end; its id and use counter.
    pub(crate) fn insert(
        &self,
        reactor: Reactor,
        front: bool,
        origin: Origin,
    ) -> (u64, Arc<AtomicUsize>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let uses = Arc::new(AtomicUsize::new(0));
        let entry = Entry {
            id,
            remaining: reactor.times,
            reactor,
            uses: uses.clone(),
            origin,
        };
        let mut entries = self.entries.lock();
        if entry.remaining == Some(0) {
            return (id, uses);
        }
        if front {
            entries.insert(0, entry);
        } else {
            entries.push(entry);
        }
        (id, uses)
    }

    /// Removes the entry `id`; whether it was still in the chain.
    pub(crate) fn remove(&self, id: u64) -> bool {
        let mut entries = self.entries.lock();
        let before = entries.len();
        entries.retain(|e| e.id != id);
        entries.len() != before
    }

    /// Whether the entry `id` is still in the chain.
    pub(crate) fn contains(&self, id: u64) -> bool {
        self.entries.lock().iter().any(|e| e.id == id)
    }

    /// Removes every entry from `origin`.
    pub(crate) fn clear(&self, origin: Origin) {
        self.entries.lock().retain(|e| e.origin != origin);
    }

    /// The reactions left of the entries from `origin` that react a limited number of times.
    pub(crate) fn remaining(&self, origin: Origin) -> usize {
        self.entries
            .lock()
            .iter()
            .filter(|e| e.origin == origin)
            .filter_map(|e| e.remaining)
            .sum()
    }

    /// Takes one reaction of entry `id`: false if the entry left the chain meanwhile (removed,
    /// or used up by a concurrent request).
    fn claim(&self, id: u64) -> bool {
        let mut entries = self.entries.lock();
        let Some(at) = entries.iter().position(|e| e.id == id) else {
            return false;
        };
        let entry = &mut entries[at];
        entry.uses.fetch_add(1, Ordering::Relaxed);
        if let Some(left) = entry.remaining.as_mut() {
            *left -= 1;
            if *left == 0 {
                entries.remove(at);
            }
        }
        true
    }

    /// Sends `action` down the chain: the answer of the reactor that answers it, if one
    /// does (after the delays of those before it).
    pub(crate) async fn react(&self, action: &RecordedAction) -> Option<Response<Body>> {
        let candidates: Vec<(u64, ActionFilter, ReactionFn)> = self
            .entries
            .lock()
            .iter()
            .map(|e| (e.id, e.reactor.filter.clone(), e.reactor.reaction.clone()))
            .collect();
        for (id, filter, reaction) in candidates {
            if !filter.matches(action) {
                continue;
            }
            let reaction = reaction(action);
            if reaction == Reaction::PassThrough || !self.claim(id) {
                continue;
            }
            match reaction {
                Reaction::Fail(failure) => return Some(failure.response()),
                Reaction::Respond { code, object } => return Some(respond(code, &object)),
                Reaction::Delay(delay) => tokio::time::sleep(delay).await,
                Reaction::PassThrough => {}
            }
        }
        None
    }
}

/// The answer of [`Reaction::Respond`]; a code HTTP cannot carry is the test's mistake,
/// answered as a `500` that says so.
fn respond(code: u16, object: &Value) -> Response<Body> {
    match StatusCode::from_u16(code) {
        Ok(code) => response::json(code, object),
        Err(_) => response::error(&ApiError::internal_error(&format!(
            "a reactor answered with status code {code}, which HTTP cannot carry"
        ))),
    }
}

/// The reactor chain of one server, `server.reactors()`: targeted reactors, as client-go's
/// fake clientset has them (`PrependReactor`, `AddReactor`, `ReactionFunc`). Each reactor is
/// an [`ActionFilter`] (verb, resource, subresource, namespace, name, user agent) and a
/// [`Reaction`]: fail with a status, answer with a given object, delay, or pass the request
/// on. A reactor reacts once, `n` times, or until it is removed.
///
/// Every request goes down the chain before the server serves it (after it is recorded as
/// a [`RecordedAction`], and after the server-wide latency of
/// [`Faults::set_latency`](crate::Faults::set_latency)). The first reactor whose filter picks
/// the request and whose reaction is not [`Reaction::PassThrough`] reacts: a failure or an
/// object answers the request (the server does not serve it), a delay waits and then lets
/// the request go on down the chain. A request no reactor answers is served.
/// [`Faults::fail_next`](crate::Faults::fail_next) is a reactor of this chain too: one that
/// picks every request, appended at the end.
///
/// ```no_run
/// # async fn demo() -> Result<(), kclient_fake::Error> {
/// use std::time::Duration;
/// use kclient_fake::{ActionFilter, FakeApiServer, Failure, Reaction, Reactor};
///
/// let server = FakeApiServer::builder().start().await?;
/// // The controller's next update of deployment web conflicts; the test's own GETs do not.
/// server.reactors().prepend(
///     Reactor::new(
///         ActionFilter::new("update", "deployments").namespace("default").name("web"),
///         Reaction::Fail(Failure::status(409)),
///     )
///     .times(1),
/// );
/// // Status writes are slow until the handle is removed.
/// let slow = server.reactors().prepend(Reactor::new(
///     ActionFilter::new("*", "deployments/status"),
///     Reaction::Delay(Duration::from_millis(200)),
/// ));
/// // A reaction computed from the request, as client-go's ReactionFunc.
/// server.reactors().prepend(Reactor::from_fn(
///     ActionFilter::new("create", "configmaps"),
///     |action| match action.object() {
///         Some(o) if o["data"]["mode"] == "forbidden" => {
///             Reaction::Fail(Failure::status(403).message("mode forbidden"))
///         }
///         _ => Reaction::PassThrough,
///     },
/// ));
/// // ... run the code under test ...
/// slow.remove();
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Reactors {
    pub(crate) chain: Arc<ReactorChain>,
}

impl Reactors {
    /// Puts `reactor` first in the chain (client-go's `PrependReactor`): it sees requests
    /// before every reactor already there.
    pub fn prepend(&self, reactor: Reactor) -> ReactorHandle {
        self.insert(reactor, true)
    }

    /// Puts `reactor` last in the chain (client-go's `AddReactor`): it sees the requests the
    /// reactors before it let by.
    pub fn add(&self, reactor: Reactor) -> ReactorHandle {
        self.insert(reactor, false)
    }

    fn insert(&self, reactor: Reactor, front: bool) -> ReactorHandle {
        let (id, uses) = self.chain.insert(reactor, front, Origin::Reactor);
        ReactorHandle {
            id,
            uses,
            chain: self.chain.clone(),
        }
    }

    /// Removes every reactor added through this handle's methods (the failures of
    /// [`Faults::fail_next`](crate::Faults::fail_next) stay; `clear_failures` removes those).
    pub fn clear(&self) {
        self.chain.clear(Origin::Reactor);
    }
}

/// One reactor in a server's chain: how often it reacted, and a way to remove it.
#[derive(Debug, Clone)]
pub struct ReactorHandle {
    id: u64,
    uses: Arc<AtomicUsize>,
    chain: Arc<ReactorChain>,
}

impl ReactorHandle {
    /// How many requests it reacted to (pass-throughs not counted).
    pub fn uses(&self) -> usize {
        self.uses.load(Ordering::Relaxed)
    }

    /// Whether it is still in the chain (not removed, not used up).
    pub fn is_active(&self) -> bool {
        self.chain.contains(self.id)
    }

    /// Takes it out of the chain; whether it was still there.
    pub fn remove(&self) -> bool {
        self.chain.remove(self.id)
    }
}
