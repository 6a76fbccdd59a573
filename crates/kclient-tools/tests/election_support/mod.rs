//! What the leader-election tests share: an in-memory lock server with fault injection, a
//! witness of who believes it leads, and candidates that log what happens to them.
#![allow(dead_code)] // each test binary uses part of it

use std::sync::Arc;
use std::time::Duration;

use kclient_core::{ApiError, GroupResource};
use kclient_tools::leaderelection::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElectionRecord, LeaderElector, Lock,
    VersionedRecord,
};
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Who believed it led, and when: each leadership from the start of the leader's work to the
/// moment its token fired. `begin` refuses a second believer.
#[derive(Debug, Default)]
pub struct Witness {
    state: Mutex<WitnessState>,
}

#[derive(Debug, Default)]
struct WitnessState {
    current: Option<(String, Instant)>,
    terms: Vec<Term>,
    violations: Vec<String>,
}

/// One leadership.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    pub identity: String,
    pub began: Instant,
    pub ended: Instant,
}

impl Witness {
    pub fn begin(&self, identity: &str) {
        let mut state = self.state.lock();
        if let Some((other, since)) = &state.current {
            let violation = format!(
                "{identity} began leading while {other} had led since {since:?} (now {:?})",
                Instant::now()
            );
            state.violations.push(violation);
        }
        state.current = Some((identity.to_owned(), Instant::now()));
    }

    pub fn end(&self, identity: &str) {
        let mut state = self.state.lock();
        match state.current.take() {
            Some((who, began)) if who == identity => state.terms.push(Term {
                identity: who,
                began,
                ended: Instant::now(),
            }),
            other => {
                let violation = format!("{identity} ended while the witness had {other:?}");
                state.violations.push(violation);
                state.current = other;
            }
        }
    }

    /// What went wrong so far.
    pub fn violations(&self) -> Vec<String> {
        self.state.lock().violations.clone()
    }

    /// Who believes it leads now.
    pub fn current(&self) -> Option<String> {
        self.state
            .lock()
            .current
            .as_ref()
            .map(|(who, _)| who.clone())
    }

    /// Since when the current leader leads.
    pub fn current_since(&self) -> Option<Instant> {
        self.state.lock().current.as_ref().map(|(_, since)| *since)
    }

    /// The finished leaderships, in order.
    pub fn terms(&self) -> Vec<Term> {
        self.state.lock().terms.clone()
    }

    /// Panics if two candidates ever believed they led at once, and returns the shortest gap
    /// between one leadership's end and the next one's start.
    pub fn assert_never_two_leaders(&self) -> Option<Duration> {
        let state = self.state.lock();
        assert!(state.violations.is_empty(), "{:#?}", state.violations);
        let mut starts: Vec<Instant> = state.terms.iter().map(|t| t.began).collect();
        starts.extend(state.current.as_ref().map(|(_, since)| *since));
        state
            .terms
            .iter()
            .zip(starts.iter().skip(1))
            .map(|(term, next)| {
                // Equal instants are a handover within one instant: `begin` saw no
                // leader, so the end came first.
                assert!(
                    *next >= term.ended,
                    "{term:?} overlaps the next at {next:?}"
                );
                *next - term.ended
            })
            .min()
    }
}

/// What happened to a candidate, with the time since the test's start.
pub type Log = Arc<Mutex<Vec<(Duration, String)>>>;

/// A running candidate.
pub struct Candidate<L: Lock> {
    pub identity: String,
    pub elector: Arc<LeaderElector<L>>,
    pub cancel: CancellationToken,
    pub task: JoinHandle<()>,
    pub log: Log,
}

impl<L: Lock> Candidate<L> {
    /// Starts `config`'s candidate; its work tells `witness` when it leads, and everything
    /// is logged from `epoch`.
    pub fn start(witness: &Arc<Witness>, epoch: Instant, config: LeaderElectionConfig<L>) -> Self {
        Self::start_with_cleanup(witness, epoch, config, Duration::ZERO)
    }

    /// [`start`](Self::start), with a work that takes `cleanup` to return after its token
    /// fired (logging `work returned`).
    pub fn start_with_cleanup(
        witness: &Arc<Witness>,
        epoch: Instant,
        mut config: LeaderElectionConfig<L>,
        cleanup: Duration,
    ) -> Self {
        let identity = config.lock.identity().to_owned();
        let log: Log = Arc::default();
        config.callbacks = callbacks(witness, epoch, &identity, &log, cleanup);
        let elector = Arc::new(LeaderElector::new(config).unwrap());
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (elector, cancel) = (Arc::clone(&elector), cancel.clone());
            async move { elector.run(cancel).await }
        });
        Self {
            identity,
            elector,
            cancel,
            task,
            log,
        }
    }

    /// Cancels the run and waits for it to return.
    pub async fn stop(self) -> Log {
        self.cancel.cancel();
        self.task.await.unwrap();
        self.log
    }

    /// The logged events (without their times).
    pub fn events(&self) -> Vec<String> {
        self.log.lock().iter().map(|(_, e)| e.clone()).collect()
    }

    /// When `event` was first logged.
    pub fn when(&self, event: &str) -> Option<Duration> {
        when(&self.log, event)
    }
}

pub fn when(log: &Log, event: &str) -> Option<Duration> {
    log.lock().iter().find(|(_, e)| e == event).map(|(t, _)| *t)
}

/// Callbacks that log and tell the witness: `leader <id>`, `started`, `token fired`, (after
/// `cleanup`) `work returned`, `stopped`.
pub fn callbacks(
    witness: &Arc<Witness>,
    epoch: Instant,
    identity: &str,
    log: &Log,
    cleanup: Duration,
) -> LeaderCallbacks {
    let note = {
        let log = Arc::clone(log);
        move |event: String| log.lock().push((epoch.elapsed(), event))
    };
    LeaderCallbacks::new()
        .on_started_leading({
            let (witness, identity, note) =
                (Arc::clone(witness), identity.to_owned(), note.clone());
            move |token| {
                let (witness, identity, note) =
                    (Arc::clone(&witness), identity.clone(), note.clone());
                async move {
                    note("started".into());
                    witness.begin(&identity);
                    token.cancelled().await;
                    witness.end(&identity);
                    note("token fired".into());
                    if !cleanup.is_zero() {
                        tokio::time::sleep(cleanup).await;
                        note("work returned".into());
                    }
                }
            }
        })
        .on_stopped_leading({
            let note = note.clone();
            move || note("stopped".into())
        })
        .on_new_leader(move |leader| note(format!("leader {leader}")))
}

/// Polls `condition` every 10 ms of (paused) time, at most `limit`; whether it held.
pub async fn until(limit: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if condition() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    condition()
}

/// An in-memory record store acting as the API server behind [`MemoryLock`]s: a version per
/// write, `404` / `409` as the API server answers them, and faults.
#[derive(Clone, Default)]
pub struct MemoryServer {
    inner: Arc<Mutex<Store>>,
}

#[derive(Default)]
struct Store {
    record: Option<LeaderElectionRecord>,
    version: u64,
    writes: Vec<Write>,
    calls: Vec<Call>,
    failing: bool,
    latency_before: Duration,
    latency_after: Duration,
    intrude_before_next_update: Option<LeaderElectionRecord>,
}

/// A stored write.
#[derive(Debug, Clone)]
pub struct Write {
    pub at: Instant,
    pub by: String,
    pub record: LeaderElectionRecord,
}

/// A call a lock made, when it arrived.
#[derive(Debug, Clone)]
pub struct Call {
    pub at: Instant,
    pub by: String,
    pub verb: &'static str,
    pub outcome: String,
}

fn leases() -> GroupResource {
    GroupResource::new("coordination.k8s.io", "leases")
}

impl MemoryServer {
    /// A lock for candidate `identity`.
    pub fn lock(&self, identity: &str) -> MemoryLock {
        MemoryLock {
            server: self.clone(),
            identity: identity.to_owned(),
            seen: Mutex::new(None),
        }
    }

    /// The record now.
    pub fn record(&self) -> Option<LeaderElectionRecord> {
        self.inner.lock().record.clone()
    }

    /// Writes `record` as someone outside the election would.
    pub fn put(&self, by: &str, record: LeaderElectionRecord) {
        let mut store = self.inner.lock();
        store.write(by, record);
    }

    /// Every stored write so far.
    pub fn writes(&self) -> Vec<Write> {
        self.inner.lock().writes.clone()
    }

    /// Every call so far.
    pub fn calls(&self) -> Vec<Call> {
        self.inner.lock().calls.clone()
    }

    /// Prints every write and call, to explain a failure.
    pub fn dump(&self, epoch: Instant) {
        for w in self.writes() {
            eprintln!("{:?} write by {}: {:?}", w.at - epoch, w.by, w.record);
        }
        for c in self.calls() {
            eprintln!("{:?} {} by {}: {}", c.at - epoch, c.verb, c.by, c.outcome);
        }
    }

    /// Every call fails with a `500` while `failing`.
    pub fn set_failing(&self, failing: bool) {
        self.inner.lock().failing = failing;
    }

    /// Each call waits `before`, is served, then its answer waits `after` (a write that
    /// lands although its caller gave up).
    pub fn set_latency(&self, before: Duration, after: Duration) {
        let mut store = self.inner.lock();
        store.latency_before = before;
        store.latency_after = after;
    }

    /// Just before the next update is served, `record` is written by an intruder.
    pub fn intrude_before_next_update(&self, record: LeaderElectionRecord) {
        self.inner.lock().intrude_before_next_update = Some(record);
    }
}

impl Store {
    fn write(&mut self, by: &str, record: LeaderElectionRecord) -> u64 {
        self.version += 1;
        self.record = Some(record.clone());
        self.writes.push(Write {
            at: Instant::now(),
            by: by.to_owned(),
            record,
        });
        self.version
    }
}

/// A [`Lock`] on a [`MemoryServer`], remembering the version it last read or wrote.
pub struct MemoryLock {
    server: MemoryServer,
    identity: String,
    seen: Mutex<Option<u64>>,
}

impl MemoryLock {
    /// Serves a call: `serve` gets the version this lock saw last and returns its outcome
    /// and the version seen now. Like an HTTP client, the lock learns that version only
    /// when the answer arrives: a caller that gave up on a slow answer never sees it.
    async fn call<T>(
        &self,
        verb: &'static str,
        serve: impl FnOnce(&mut Store, Option<u64>) -> (Result<T, ApiError>, Option<u64>),
    ) -> Result<T, ApiError> {
        let before = self.server.inner.lock().latency_before;
        if !before.is_zero() {
            tokio::time::sleep(before).await;
        }
        let (outcome, seen, after) = {
            let mut store = self.server.inner.lock();
            let (outcome, seen) = if store.failing {
                (Err(ApiError::internal_error("injected failure")), None)
            } else {
                serve(&mut store, *self.seen.lock())
            };
            let answer = match &outcome {
                Ok(_) => "ok".to_string(),
                Err(e) => e.to_string(),
            };
            let call = Call {
                at: Instant::now(),
                by: self.identity.clone(),
                verb,
                outcome: format!(
                    "{answer} (version seen {:?}, then {seen:?}; answered after {:?})",
                    *self.seen.lock(),
                    store.latency_after
                ),
            };
            store.calls.push(call);
            (outcome, seen, store.latency_after)
        };
        if !after.is_zero() {
            tokio::time::sleep(after).await;
        }
        if seen.is_some() {
            *self.seen.lock() = seen;
        }
        outcome
    }
}

impl Lock for MemoryLock {
    type Error = ApiError;

    async fn get(&self) -> Result<VersionedRecord, ApiError> {
        self.call("get", |store, _| match &store.record {
            Some(record) => {
                let read = VersionedRecord {
                    record: record.clone(),
                    version: store.version.to_string(),
                };
                (Ok(read), Some(store.version))
            }
            None => (Err(ApiError::not_found(&leases(), "lock")), None),
        })
        .await
    }

    async fn create(&self, record: LeaderElectionRecord) -> Result<(), ApiError> {
        let by = self.identity.clone();
        self.call("create", move |store, _| {
            if store.record.is_some() {
                return (Err(ApiError::already_exists(&leases(), "lock")), None);
            }
            (Ok(()), Some(store.write(&by, record)))
        })
        .await
    }

    async fn update(&self, record: LeaderElectionRecord) -> Result<(), ApiError> {
        let by = self.identity.clone();
        self.call("update", move |store, seen| {
            if let Some(intruder) = store.intrude_before_next_update.take() {
                store.write("intruder", intruder);
            }
            if store.record.is_none() {
                return (Err(ApiError::not_found(&leases(), "lock")), None);
            }
            if seen != Some(store.version) {
                let conflict = ApiError::conflict(
                    &leases(),
                    "lock",
                    "the object has been modified; please apply your changes to the latest version and try again",
                );
                return (Err(conflict), None);
            }
            (Ok(()), Some(store.write(&by, record)))
        })
        .await
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        "memory/lock".to_owned()
    }
}
