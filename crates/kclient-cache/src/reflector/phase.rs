//! The reflector's run as a state machine: where a run is ([`Phase`]), what its last step
//! came to ([`Outcome`]), and what it does next ([`Next`]), decided by one pure function,
//! [`Run::next`], with no I/O and no clock of its own (the time is an argument). The
//! reflector's driver (`Reflector::list_and_watch`) performs each phase's step and each
//! decision; this module holds client-go's rules for when to list again, watch again, back
//! off, fall back to a plain list, or end the run with an error for the watch-error handler.
//!
//! ```text
//!  StreamingList --other errors--> List --failed--> End(Failed)
//!   | ^ closed early, 410: at once   |
//!   | ' refused, 429: after backoff  | listed
//!   '---------- listed -----------> Watch <-- closed; a 500 within its window: at once
//!                                    |  ^---- refused, 429: after a backoff
//!                                    |------- the request failed otherwise --> End(Failed)
//!                                    '------- 410, other errors, a failed resync --> End
//! ```
//!
//! (`docs/architecture.md` draws it whole.)

use std::time::Duration;

use kclient_core::ApiStatus;
use tokio::time::Instant;

use super::errors::is_expired;

/// Where a run of the reflector is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// A watch with `sendInitialEvents` (KEP-3157): its initial events fill a temporary store
    /// that replaces the store's content at the bookmark that ends them.
    StreamingList,
    /// A list (paged) that replaces the store's content.
    List,
    /// Watching from the last resourceVersion, the resync timer running.
    Watch,
}

/// What the errors of a request or a stream say, for the rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Failure {
    /// The connection was refused (the server is not up yet).
    pub(super) refused: bool,
    /// `429 Too Many Requests`.
    pub(super) too_many_requests: bool,
    /// `410 Expired` or `410 Gone`: the resourceVersion was compacted away.
    pub(super) expired: bool,
    /// The resourceVersion is newer than the server has ("too large resource version").
    pub(super) too_large: bool,
    /// `500 Internal Server Error`.
    pub(super) internal: bool,
}

impl Failure {
    /// What `error` says.
    pub(super) fn of(error: &impl ApiStatus) -> Self {
        Self {
            refused: error.is_connection_refused(),
            too_many_requests: error.is_too_many_requests(),
            expired: is_expired(error),
            too_large: error.is_too_large_resource_version(),
            internal: error.is_internal_error(),
        }
    }

    /// client-go's `isWatchErrorRetriable`: a refused connection or a `429` are waited out
    /// and the same request made again.
    fn backs_off(&self) -> bool {
        self.refused || self.too_many_requests
    }

    /// The resourceVersion asked for is not served (expired or too large): ask at `""`.
    pub(super) fn version_unavailable(&self) -> bool {
        self.expired || self.too_large
    }
}

/// What a phase's step came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The objects of a list or a streaming list are in the store.
    Listed,
    /// The stream ended without an error (a streaming list's before its initial events
    /// ended; a watch's at its timeout).
    Closed,
    /// The request failed: no stream was opened (for a list, the list failed).
    NotOpened(Failure),
    /// The stream failed, ended with an `ERROR` event or very early, or the store refused a
    /// list's objects.
    Failed(Failure),
    /// The store's resync failed.
    ResyncFailed,
    /// The run was cancelled.
    Cancelled,
}

/// What the driver does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// Go into the phase at once.
    Enter(Phase),
    /// Go into the phase once the backoff has passed.
    BackOff(Phase),
    /// The last resourceVersion is not served: go into the phase at once, reading at `""`
    /// (a quorum read) from now on.
    EnterAtQuorum(Phase),
    /// The streaming list failed otherwise (a server that does not serve them, a store that
    /// refused its objects): list instead, at once.
    ListInstead,
    /// The run is over; the next one follows the backoff and lists again.
    End(RunEnd),
    /// Stop: the run was cancelled.
    Stop,
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RunEnd {
    /// With an error for the watch-error handler: a list that failed, a watch that could not
    /// be opened.
    Failed,
    /// A watch ended with `410`: the next list reads at the last resourceVersion (a list at a
    /// resourceVersion returns data at least that fresh, so the `410` is no reason for `""`).
    Expired,
    /// A watch ended with another error (logged, not passed on: client-go's `watch` returns
    /// nil).
    WatchFailed,
    /// The store's resync failed (logged, not passed on: client-go's "error from Resync is
    /// not propagated up").
    ResyncFailed,
}

/// One run of the reflector (client-go's `ListAndWatch`): its phase, and the window within
/// which internal errors of its watches are retried.
#[derive(Debug)]
pub(super) struct Run {
    phase: Phase,
    internal_errors: RetryWithDeadline,
}

impl Run {
    /// A run that starts with a streaming list, or with a list.
    pub(super) fn new(use_watch_list: bool, max_internal_error_retry_duration: Duration) -> Self {
        Self {
            phase: if use_watch_list {
                Phase::StreamingList
            } else {
                Phase::List
            },
            internal_errors: RetryWithDeadline::new(
                max_internal_error_retry_duration,
                INTERNAL_ERROR_RESET_PERIOD,
            ),
        }
    }

    /// The phase the run is in.
    pub(super) fn phase(&self) -> Phase {
        self.phase
    }

    /// The transition: given what the current phase's step (or a wait in it) came to at
    /// `now`, the next move, and the phase the run is then in.
    pub(super) fn next(&mut self, outcome: Outcome, now: Instant) -> Next {
        let next = match outcome {
            Outcome::Cancelled => Next::Stop,
            Outcome::Listed => Next::Enter(Phase::Watch),
            // A streaming list closed early starts over with a clean store; a watch closed by
            // the server (its timeout) resumes from the last resourceVersion, no relist.
            Outcome::Closed => Next::Enter(self.phase),
            Outcome::ResyncFailed => Next::End(RunEnd::ResyncFailed),
            Outcome::NotOpened(failure) | Outcome::Failed(failure) => match self.phase {
                Phase::StreamingList => after_streaming_list_failure(failure),
                Phase::List => Next::End(RunEnd::Failed),
                Phase::Watch => match outcome {
                    Outcome::NotOpened(_) => after_watch_refusal(failure),
                    _ => self.after_watch_failure(failure, now),
                },
            },
        };
        self.phase = match next {
            Next::Enter(phase) | Next::BackOff(phase) | Next::EnterAtQuorum(phase) => phase,
            Next::ListInstead => Phase::List,
            Next::End(_) | Next::Stop => self.phase,
        };
        next
    }

    /// client-go's `watch` after `handleWatch` returned an error: a `410` relists (at the
    /// last resourceVersion), a `429` re-watches after the backoff, an internal error
    /// re-watches at once while within its window, anything else relists.
    fn after_watch_failure(&mut self, failure: Failure, now: Instant) -> Next {
        self.internal_errors.after(failure.internal, now);
        if failure.expired {
            Next::End(RunEnd::Expired)
        } else if failure.too_many_requests {
            Next::BackOff(Phase::Watch)
        } else if failure.internal && self.internal_errors.should_retry(now) {
            Next::Enter(Phase::Watch)
        } else {
            Next::End(RunEnd::WatchFailed)
        }
    }
}

/// client-go's `watchList` error handling (`isErrorRetriableWithSideEffectsFn`): a refused
/// connection or a `429` try again after a backoff; an expired or too-large resourceVersion
/// tries again at once from `""`; anything else falls back to a list.
fn after_streaming_list_failure(failure: Failure) -> Next {
    if failure.backs_off() {
        Next::BackOff(Phase::StreamingList)
    } else if failure.version_unavailable() {
        Next::EnterAtQuorum(Phase::StreamingList)
    } else {
        Next::ListInstead
    }
}

/// A watch request that failed: a refused connection or a `429` re-watch after a backoff
/// (the server is not up, or busy); anything else ends the run with the error.
fn after_watch_refusal(failure: Failure) -> Next {
    if failure.backs_off() {
        Next::BackOff(Phase::Watch)
    } else {
        Next::End(RunEnd::Failed)
    }
}

/// How long without a retryable error starts a new window (client-go: one minute).
const INTERNAL_ERROR_RESET_PERIOD: Duration = Duration::from_secs(60);

/// client-go's `RetryWithDeadline` for the watches' internal errors: retries are allowed
/// while the first error of a series is at most `max_retry_duration` old; a series ends
/// when no retryable error came for `min_reset_period`. A zero `max_retry_duration`
/// (client-go's default) never retries.
#[derive(Debug, Clone)]
struct RetryWithDeadline {
    max_retry_duration: Duration,
    min_reset_period: Duration,
    first_error: Option<Instant>,
    last_error: Option<Instant>,
}

impl RetryWithDeadline {
    fn new(max_retry_duration: Duration, min_reset_period: Duration) -> Self {
        Self {
            max_retry_duration,
            min_reset_period,
            first_error: None,
            last_error: None,
        }
    }

    /// Records the outcome of a watch at `now`: only retryable errors count.
    fn after(&mut self, retryable: bool, now: Instant) {
        if !retryable {
            return;
        }
        if self
            .last_error
            .is_none_or(|last| now.saturating_duration_since(last) >= self.min_reset_period)
        {
            self.first_error = None;
            self.last_error = None;
        }
        self.first_error.get_or_insert(now);
        self.last_error = Some(now);
    }

    /// Whether the error just recorded may be retried at `now`.
    fn should_retry(&mut self, now: Instant) -> bool {
        if self.max_retry_duration.is_zero() {
            return false;
        }
        let first = self.first_error.unwrap_or(now);
        if now.saturating_duration_since(first) <= self.max_retry_duration {
            return true;
        }
        self.first_error = None;
        self.last_error = None;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REFUSED: Failure = Failure {
        refused: true,
        ..OTHER
    };
    const TOO_MANY: Failure = Failure {
        too_many_requests: true,
        ..OTHER
    };
    const EXPIRED: Failure = Failure {
        expired: true,
        ..OTHER
    };
    const TOO_LARGE: Failure = Failure {
        too_large: true,
        ..OTHER
    };
    const INTERNAL: Failure = Failure {
        internal: true,
        ..OTHER
    };
    const OTHER: Failure = Failure {
        refused: false,
        too_many_requests: false,
        expired: false,
        too_large: false,
        internal: false,
    };

    fn in_phase(phase: Phase) -> Run {
        let mut run = Run::new(true, Duration::ZERO);
        run.phase = phase;
        run
    }

    /// The decision for `outcome` in `phase`, and the phase after it.
    fn step(phase: Phase, outcome: Outcome) -> (Next, Phase) {
        let mut run = in_phase(phase);
        let next = run.next(outcome, Instant::now());
        (next, run.phase())
    }

    #[test]
    fn a_run_starts_with_a_streaming_list_or_a_list() {
        assert_eq!(Run::new(true, Duration::ZERO).phase(), Phase::StreamingList);
        assert_eq!(Run::new(false, Duration::ZERO).phase(), Phase::List);
    }

    /// seed-semantics §3.17 and §3.18: a list or a streaming list is followed by the watch;
    /// a normal close re-watches without a relist; cancellation stops anywhere.
    #[test]
    fn listed_watches_and_closed_goes_again() {
        for phase in [Phase::StreamingList, Phase::List, Phase::Watch] {
            assert_eq!(step(phase, Outcome::Listed).0, Next::Enter(Phase::Watch));
            assert_eq!(step(phase, Outcome::Cancelled), (Next::Stop, phase));
            assert_eq!(
                step(phase, Outcome::ResyncFailed).0,
                Next::End(RunEnd::ResyncFailed),
                "client-go: a failed resync ends the watch, not passed up"
            );
        }
        assert_eq!(
            step(Phase::Watch, Outcome::Closed),
            (Next::Enter(Phase::Watch), Phase::Watch),
            "re-watch from the last resourceVersion, no relist"
        );
        assert_eq!(
            step(Phase::StreamingList, Outcome::Closed).0,
            Next::Enter(Phase::StreamingList),
            "closed before its initial events ended: start over"
        );
    }

    /// client-go's `watchList`: back off on a refused connection or a 429, start over at ""
    /// on an expired or too-large resourceVersion, list instead on anything else.
    #[test]
    fn a_failed_streaming_list_backs_off_retries_at_quorum_or_falls_back() {
        for outcome in [Outcome::NotOpened, Outcome::Failed] {
            let s = |f| step(Phase::StreamingList, outcome(f));
            assert_eq!(s(REFUSED).0, Next::BackOff(Phase::StreamingList));
            assert_eq!(s(TOO_MANY).0, Next::BackOff(Phase::StreamingList));
            assert_eq!(s(EXPIRED).0, Next::EnterAtQuorum(Phase::StreamingList));
            assert_eq!(s(TOO_LARGE).0, Next::EnterAtQuorum(Phase::StreamingList));
            assert_eq!(s(OTHER), (Next::ListInstead, Phase::List));
            assert_eq!(s(INTERNAL).0, Next::ListInstead);
        }
    }

    /// A failed list ends the run with its error (the list itself retried a 410 at "").
    #[test]
    fn a_failed_list_ends_the_run_with_its_error() {
        for failure in [REFUSED, TOO_MANY, EXPIRED, TOO_LARGE, INTERNAL, OTHER] {
            assert_eq!(
                step(Phase::List, Outcome::NotOpened(failure)).0,
                Next::End(RunEnd::Failed)
            );
            assert_eq!(
                step(Phase::List, Outcome::Failed(failure)).0,
                Next::End(RunEnd::Failed),
                "the store refused the list"
            );
        }
    }

    /// seed-semantics §3.18: a watch request refused (connection refused) or throttled (429)
    /// is made again after the backoff, without a relist; any other refusal ends the run
    /// with the error.
    #[test]
    fn a_refused_watch_backs_off_or_ends_the_run() {
        let s = |f| step(Phase::Watch, Outcome::NotOpened(f));
        assert_eq!(s(REFUSED), (Next::BackOff(Phase::Watch), Phase::Watch));
        assert_eq!(s(TOO_MANY).0, Next::BackOff(Phase::Watch));
        for failure in [EXPIRED, TOO_LARGE, INTERNAL, OTHER] {
            assert_eq!(s(failure).0, Next::End(RunEnd::Failed), "{failure:?}");
        }
    }

    /// seed-semantics §3.17 and §3.18: a watch that fails with 410 relists (at the last
    /// resourceVersion); a 429 re-watches after the backoff; other errors (a very short
    /// watch among them) relist; none of them goes to the watch-error handler.
    #[test]
    fn a_failed_watch_relists_or_backs_off() {
        let s = |f| step(Phase::Watch, Outcome::Failed(f));
        assert_eq!(s(EXPIRED).0, Next::End(RunEnd::Expired));
        assert_eq!(s(TOO_MANY).0, Next::BackOff(Phase::Watch));
        assert_eq!(
            s(INTERNAL).0,
            Next::End(RunEnd::WatchFailed),
            "no retry window"
        );
        assert_eq!(s(OTHER).0, Next::End(RunEnd::WatchFailed));
        assert_eq!(
            s(REFUSED).0,
            Next::End(RunEnd::WatchFailed),
            "a stream broken by a refusal is no refused request"
        );
    }

    /// Internal errors re-watch at once while the first of a series is at most
    /// `max_internal_error_retry_duration` old; a minute without one starts a new series.
    #[test]
    fn internal_errors_rewatch_within_their_window() {
        let mut run = Run::new(false, Duration::from_secs(30));
        run.phase = Phase::Watch;
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let internal = Outcome::Failed(INTERNAL);
        assert_eq!(run.next(internal, at(0)), Next::Enter(Phase::Watch));
        assert_eq!(run.next(internal, at(20)), Next::Enter(Phase::Watch));
        assert_eq!(
            run.next(internal, at(40)),
            Next::End(RunEnd::WatchFailed),
            "40 s since the first"
        );
        assert_eq!(
            run.next(internal, at(200)),
            Next::Enter(Phase::Watch),
            "a new series"
        );
        assert_eq!(
            run.next(Outcome::Failed(OTHER), at(201)),
            Next::End(RunEnd::WatchFailed),
            "other errors are not retried"
        );
    }

    #[test]
    fn retry_with_deadline_counts_only_retryable_errors() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let mut never = RetryWithDeadline::new(Duration::ZERO, Duration::from_secs(60));
        never.after(true, at(0));
        assert!(!never.should_retry(at(0)));

        let mut r = RetryWithDeadline::new(Duration::from_secs(30), Duration::from_secs(60));
        r.after(true, at(0));
        assert!(r.should_retry(at(0)));
        r.after(true, at(20));
        assert!(r.should_retry(at(20)));
        r.after(true, at(40));
        assert!(!r.should_retry(at(40)), "40 s since the first error");
        r.after(true, at(40));
        r.after(true, at(101));
        assert!(
            r.should_retry(at(101)),
            "a minute without errors starts a new series"
        );
        r.after(false, at(102));
        assert!(r.should_retry(at(102)), "other errors do not count");
    }

    #[test]
    fn failures_are_read_from_the_status() {
        use kclient_core::{ApiError, GroupResource};
        assert_eq!(
            Failure::of(&ApiError::resource_expired("too old")),
            Failure {
                expired: true,
                ..OTHER
            }
        );
        assert_eq!(
            Failure::of(&ApiError::too_many_requests("slow down", 1)),
            TOO_MANY
        );
        let forbidden = ApiError::forbidden(&GroupResource::new("", "pods"), "", "no");
        assert_eq!(Failure::of(&forbidden), OTHER);
        assert!(EXPIRED.version_unavailable() && TOO_LARGE.version_unavailable());
        assert!(!INTERNAL.version_unavailable());
    }
}
