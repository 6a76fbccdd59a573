//! Leader election on a `coordination.k8s.io/v1` Lease (client-go's `tools/leaderelection`):
//! of several replicas of a controller, one at a time does the work.
//!
//! Each replica runs a [`LeaderElector`] on the same [`LeaseLock`] with its own identity.
//! One acquires the Lease and runs the leader's work
//! ([`LeaderCallbacks::on_started_leading`], given a [`LeaderToken`]), renewing the Lease
//! every `retry_period`; the others retry every `retry_period` (with jitter) and take over
//! when the Lease has not changed for `lease_duration`, or at once when it was released.
//!
//! ```
//! use std::time::Duration;
//! use kclient_tools::leaderelection::{LeaderCallbacks, LeaderElectionConfig, LeaderElector, LeaseLock};
//! use kclient_typed::Clientset;
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let server = kclient_fake::FakeApiServer::builder().start().await?;
//! # let clientset = Clientset::new(server.config()?)?;
//! let lock = LeaseLock::from_clientset(&clientset, "default", "my-controller", "replica-1");
//! let callbacks = LeaderCallbacks::new()
//!     .on_started_leading(|token| async move {
//!         // Do the leader's work here, check `token.is_leader()` right before each write,
//!         // and stop the moment the token fires.
//!         token.cancelled().await;
//!     })
//!     .on_stopped_leading(|| println!("stopped leading"));
//! let mut config = LeaderElectionConfig::new(lock, callbacks); // 15 s / 10 s / 2 s
//! config.release_on_cancel = true;
//! let elector = std::sync::Arc::new(LeaderElector::new(config)?);
//!
//! let cancel = CancellationToken::new();
//! let running = tokio::spawn({
//!     let (elector, cancel) = (elector.clone(), cancel.clone());
//!     async move { elector.run(cancel).await }
//! });
//! while !elector.is_leader() {
//!     tokio::time::sleep(Duration::from_millis(100)).await;
//! }
//! assert_eq!(elector.get_leader(), "replica-1");
//! cancel.cancel(); // leave: the work stops, then the Lease is released
//! running.await?;
//! assert_eq!(elector.get_leader(), "");
//! # Ok(()) }
//! ```
//!
//! # What is guaranteed
//!
//! *At any instant at most one candidate believes it leads*, where "believes" means:
//! [`LeaderToken::is_leader`] (the token given to `on_started_leading`) and
//! [`LeaderElector::is_leader`] are true. The reasoning, with `S` the start of the leader's
//! last successful renewal:
//!
//! 1. The leader's `is_leader` is false from `S + renew_deadline` on, whatever its requests
//!    are doing: it compares tokio's monotonic clock with that deadline each time it is
//!    asked, so it holds even in a process that was frozen past the deadline and has not
//!    run the elector since. The token fires then too, as soon as the elector's task runs
//!    (a timer, not a request timeout).
//! 2. That renewal's write reached the server at some `W ≥ S`. Any other candidate saw it (or
//!    a later write) at some `O ≥ W`, *on its own clock*, and takes over no earlier than
//!    `O + lease_duration ≥ S + lease_duration`.
//! 3. `lease_duration > renew_deadline` (checked by [`LeaderElector::new`]), so the leader
//!    stopped at least `lease_duration − renew_deadline` before anyone else may start.
//! 4. Taking over is a compare-and-swap on the version read: a candidate with a stale view
//!    gets `409 Conflict` and overwrites nothing, and a renewal that finds another holder
//!    ends leadership at once.
//!
//! Expiry is judged by when a candidate *saw the record change*, never by the timestamps in
//! the record, so any offset between the machines' clocks is harmless. What must hold is that
//! their clocks run at about the same *rate*: a clock running `lease_duration /
//! renew_deadline` times faster than the leader's (1.5 with the defaults) eats the margin.
//!
//! This is not fencing. As client-go's documentation says of its own implementation, leader
//! election on a Lease does not guarantee that only one client *acts* as leader: that would
//! take the server refusing a stale leader's writes, which the Kubernetes API does not do
//! for an election's Lease. The guarantee covers what the candidates believe, at the moment
//! they ask. [`LeaderToken::is_leader`] checked right before a write narrows the window to
//! the time between the check and the write reaching the server, but does not close it: a
//! process frozen (a GC or VM pause, `SIGSTOP`, a blocked thread) *between* the check and
//! the write, or a write delayed on the network, can still land after another candidate
//! took over. Make the leader's writes safe on their own where it matters (preconditions,
//! `resourceVersion`s). It also assumes that only the candidates write the Lease: clearing its
//! `holderIdentity` by hand, or writing a live candidate's identity into it, lets another
//! candidate lead before the displaced leader's next renewal tells it so.
//!
//! # What you must do
//!
//! * Stop the leader's work the moment its token fires, well within
//!   `lease_duration − renew_deadline` (5 s with the defaults), and return from it.
//! * Right before each write only the leader may make, check
//!   [`LeaderToken::is_leader`] (the token may not have fired yet after a pause).
//! * Give each candidate a unique identity (a pod name, or a hostname plus a random suffix).
//! * With [`release_on_cancel`](LeaderElectionConfig::release_on_cancel), the Lease is
//!   released only after the work returned; without it, others wait a lease duration.
//! * After [`run`](LeaderElector::run) returns, exit (the usual choice, as with client-go) or
//!   call `run` again to stand for election anew.
//! * Serve a [`HealthzAdaptor`] as a liveness check, so that a leader stuck without renewing
//!   gets restarted.
//!
//! # Timing
//!
//! * A candidate tries every `retry_period` to `(1 + JITTER_FACTOR) × retry_period`.
//! * After a leader dies, another takes over `lease_duration` after it saw the last renewal,
//!   at its next attempt: at most `lease_duration + 2 × (1 + JITTER_FACTOR) × retry_period`
//!   after the leader's last write.
//! * After a release, the next candidate takes over at its next attempt.
//! * A leader whose renewals fail stops `renew_deadline` after the start of its last
//!   successful one.
//!
//! # Differences from client-go
//!
//! * The renew deadline runs from the start of the last successful renewal and is enforced
//!   by a timer; client-go starts it afresh each round, so its leader may believe it leads for
//!   up to `retry_period + renew_deadline` after its last renewal, plus the time that
//!   renewal took. A renewal that finds another holder ends leadership at once (client-go
//!   keeps retrying until its deadline).
//! * `leaseDurationSeconds` is the lease duration rounded *up* to whole seconds; client-go
//!   truncates (a 1.5 s lease would be written as 1 s, a 0.5 s one as 0 s).
//! * `on_started_leading` returns the leader's work as a future; `run` waits for it before it
//!   releases the lease and calls `on_stopped_leading`, and the work returning steps down.
//! * [`is_leader`](LeaderElector::is_leader) and [`LeaderToken::is_leader`] are false once
//!   the renew deadline has passed since the last successful renewal, judged by the clock
//!   when asked, or the leader token fired (client-go's `IsLeader` stays true until another
//!   record is seen, and its `OnStartedLeading` context has no such check: client-go's
//!   leader acts on after a pause until its elector runs). [`check`](LeaderElector::check)
//!   and the health check use the observed record, as client-go's do.
//! * A read counts as a change when the record *or its version* (the Lease's
//!   `resourceVersion`) is new. client-go compares the record's content only, so a foreign
//!   write of the same content (a Lease re-applied from a manifest, say) goes unseen, and a
//!   candidate could take over while the holder it displaced still believes it leads.
//! * Releasing requires the record just read to name this candidate, not only the last one
//!   seen.
//! * Acquire attempts are bounded by `renew_deadline` too. Renewals start one
//!   `retry_period` after acquiring (client-go renews once right away), and a failed one is
//!   retried `retry_period` after it ended (client-go polls on a fixed schedule).
//! * Not implemented: coordinated leader election (`LeaseCandidate`), the event recorder
//!   and the metrics provider (the elector logs through `tracing`).

mod config;
mod elector;
mod healthz;
pub mod resource_lock;
mod state;
mod token;

#[allow(deprecated)]
pub use config::ConfigError;
pub use config::{
    LeaderCallbacks, LeaderElectionConfig, LeaderElectionConfigError, LeaderWork,
    DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD, JITTER_FACTOR,
};
pub use elector::LeaderElector;
pub use healthz::HealthzAdaptor;
pub use resource_lock::{LeaderElectionRecord, LeaseLock, LeaseLockError, Lock, VersionedRecord};
pub use state::LeaseNotRenewed;
pub use token::LeaderToken;
