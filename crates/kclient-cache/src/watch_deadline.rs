//! Client-side deadlines of watches: a watch the server keeps open, silent, past the
//! `timeoutSeconds` it was asked for is ended by the client, so that it is re-established.
//!
//! The API server ends a watch when its `timeoutSeconds` runs out, and a watcher then starts
//! a new one from the last resourceVersion it saw. A server, or a proxy in front of it, that
//! answers a watch with `200` and its headers and then sends nothing, ignoring
//! `timeoutSeconds`, would otherwise leave the watcher waiting forever: no error, no event,
//! no relist. Neither side's transport notices: HTTP/1.1 has no keep-alive probe, and an
//! HTTP/2 server (or proxy) that answers pings keeps a silent stream alive. client-go has
//! no client-side bound either (its `Watch` requests carry no context deadline).
//!
//! So every watch [`watch_with_deadline`] starts ends, on the client, at the latest
//! [`WATCH_DEADLINE_GRACE`] after the `timeoutSeconds` it asked for, counted on tokio's
//! clock from the moment the request is made: the wait for the response's headers included
//! (a request the server never answers is a watch that ended without events). The stream
//! then simply ends, as a watch the server closed: the reflector and `RetryWatcher` watch
//! again from their last resourceVersion, without a relist. A watch without
//! `timeoutSeconds` (or with `0`, the server's choice) gets no deadline.
//!
//! An optional idle timeout ends a watch that delivers nothing — no event, no bookmark — for
//! that long ([`ReflectorOptions::watch_idle_timeout`](crate::ReflectorOptions::watch_idle_timeout),
//! off by default: kube-apiserver sends a bookmark about once a minute to a watch that asked
//! for them, but only from its watch cache; with the cache off, a quiet resource's watch is
//! silent until its timeout).
//!
//! ```
//! use std::time::Duration;
//! use futures::stream::{self, StreamExt};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_cache::{watch_with_deadline, ListWatch, WATCH_DEADLINE_GRACE};
//! use kclient_core::{ApiError, ListOptions, ObjectList};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
//! // A server that answers every watch and then stays silent forever.
//! let silent = ListWatch::<ConfigMap, ApiError>::new(
//!     |_: ListOptions| async { Ok(ObjectList::new(vec![], "5")) },
//!     |_: ListOptions| async { Ok(stream::pending().boxed()) },
//! );
//! let options = ListOptions::default().resource_version("5").timeout_seconds(300);
//! let started = tokio::time::Instant::now();
//! let mut watch = watch_with_deadline(&silent, &options, None).await.unwrap();
//! assert!(watch.next().await.is_none(), "ended by the client");
//! assert!(started.elapsed() >= Duration::from_secs(300) + WATCH_DEADLINE_GRACE);
//! # }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::stream::{self, Stream, StreamExt};
use kclient_core::{ListOptions, ListerWatcher, WatchEvent, WatchStream};
use tokio::time::{sleep_until, Instant, Sleep};

/// How long after the `timeoutSeconds` it asked for a watch is ended by the client, if the
/// server has not ended it (kclient's; client-go has no client-side watch deadline).
///
/// The server's clock for `timeoutSeconds` starts when it has the request (after the
/// network, authentication and admission; kube-apiserver's watch cache may first wait up to
/// 3 s to be fresh enough for the resourceVersion asked), and its closing bookmark and close
/// take a network trip back; both are measured on each side's own monotonic clock, so no
/// clock skew enters. 30 s covers these delays on a loaded server and a slow link with a wide
/// margin (a close later than that is no longer a late close), while adding at most a tenth
/// to the reflector's shortest watch (5 min) when a silent server has to be given up on.
pub const WATCH_DEADLINE_GRACE: Duration = Duration::from_secs(30);

/// A watch's `timeoutSeconds` as client-go's reflector picks it: uniform in
/// `[min_watch_timeout, 2 × min_watch_timeout)`, so that a fleet of watchers does not come
/// back at once. The reflector and kclient-tools' `RetryWatcher` use it.
pub fn watch_timeout_seconds(min_watch_timeout: Duration) -> i64 {
    (min_watch_timeout.as_secs_f64() * (fastrand::f64() + 1.0)) as i64
}

/// How long after it is requested a watch asking for `timeout_seconds` may last on the
/// client: the timeout plus [`WATCH_DEADLINE_GRACE`]. `None` (no deadline) without a
/// positive timeout.
pub fn watch_deadline(timeout_seconds: Option<i64>) -> Option<Duration> {
    let seconds = u64::try_from(timeout_seconds?).ok().filter(|s| *s > 0)?;
    Some(Duration::from_secs(seconds).saturating_add(WATCH_DEADLINE_GRACE))
}

/// Starts a watch through `lister_watcher` that the client ends at its deadline
/// ([`watch_deadline`] of `options.timeout_seconds`, from now) and, with an `idle_timeout`,
/// once nothing has arrived for that long. Either end is logged and looks like a watch the
/// server closed: the stream ends. A response that does not come by then is an empty watch.
/// Errors of the request itself are returned as they are.
pub async fn watch_with_deadline<K, L>(
    lister_watcher: &L,
    options: &ListOptions,
    idle_timeout: Option<Duration>,
) -> Result<WatchStream<K, L::Error>, L::Error>
where
    K: Send + 'static,
    L: ListerWatcher<K>,
{
    let timers = Timers::new(options.timeout_seconds, idle_timeout);
    let watch = lister_watcher.watch(options);
    let stream = match timers.answer_by() {
        None => watch.await?,
        Some(at) => match tokio::time::timeout_at(at, watch).await {
            Ok(opened) => opened?,
            Err(_) => {
                timers.log_unanswered();
                return Ok(stream::empty().boxed());
            }
        },
    };
    Ok(Bounded {
        inner: stream,
        timers,
    }
    .boxed())
}

/// `now + d` on tokio's clock, if the clock can hold it.
fn later(d: Duration) -> Option<Instant> {
    Instant::now().checked_add(d)
}

/// A watch's deadline and idle timeout, counted from when it was requested. Apart from the
/// stream they bound, so that they are compiled once, not once per kind.
struct Timers {
    timeout_seconds: Option<i64>,
    deadline: Option<Pin<Box<Sleep>>>,
    idle: Option<(Duration, Pin<Box<Sleep>>)>,
}

impl Timers {
    fn new(timeout_seconds: Option<i64>, idle_timeout: Option<Duration>) -> Self {
        let deadline = watch_deadline(timeout_seconds).and_then(later);
        Self {
            timeout_seconds,
            deadline: deadline.map(|at| Box::pin(sleep_until(at))),
            idle: idle_timeout.and_then(|idle| Some((idle, Box::pin(sleep_until(later(idle)?))))),
        }
    }

    /// When the response must have come: the earlier of the deadline and the idle timeout.
    fn answer_by(&self) -> Option<Instant> {
        let deadline = self.deadline.as_ref().map(|at| at.deadline());
        let idle = self.idle.as_ref().map(|(_, at)| at.deadline());
        deadline.into_iter().chain(idle).min()
    }

    fn log_unanswered(&self) {
        tracing::warn!(
            timeout_seconds = ?self.timeout_seconds,
            idle_timeout = ?self.idle.as_ref().map(|(idle, _)| idle),
            "the server did not answer the watch request in time; watching again"
        );
    }

    /// Something arrived: the idle timeout starts again.
    fn arrived(&mut self) {
        if let Some((idle, at)) = &mut self.idle {
            if let Some(next) = later(*idle) {
                at.as_mut().reset(next);
            }
        }
    }

    /// Whether the deadline or the idle timeout has passed (logged once, when it has).
    fn expired(&mut self, cx: &mut Context<'_>) -> bool {
        if self
            .deadline
            .as_mut()
            .is_some_and(|at| at.as_mut().poll(cx).is_ready())
        {
            tracing::warn!(
                timeout_seconds = ?self.timeout_seconds,
                grace = ?WATCH_DEADLINE_GRACE,
                "the server did not end the watch at its timeoutSeconds; ending it and watching again"
            );
            return true;
        }
        if let Some((idle, at)) = &mut self.idle {
            if at.as_mut().poll(cx).is_ready() {
                tracing::warn!(idle_timeout = ?idle, "no watch event or bookmark within the idle timeout; ending the watch and watching again");
                return true;
            }
        }
        false
    }

    fn clear(&mut self) {
        self.deadline = None;
        self.idle = None;
    }
}

/// A watch stream that ends at its deadline or after an idle period.
struct Bounded<K, E> {
    inner: WatchStream<K, E>,
    timers: Timers,
}

impl<K: Send + 'static, E: Send + 'static> Bounded<K, E> {
    /// Ends the watch: the connection (or HTTP/2 stream) is released at once, and the
    /// stream answers `None` from now on.
    fn end(&mut self) {
        self.inner = stream::empty().boxed();
        self.timers.clear();
    }
}

impl<K: Send + 'static, E: Send + 'static> Stream for Bounded<K, E> {
    type Item = Result<WatchEvent<K>, E>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        match this.inner.poll_next_unpin(cx) {
            Poll::Ready(Some(item)) => {
                this.timers.arrived();
                Poll::Ready(Some(item))
            }
            Poll::Ready(None) => {
                this.end();
                Poll::Ready(None)
            }
            Poll::Pending if this.timers.expired(cx) => {
                this.end();
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_is_the_timeout_plus_the_grace_and_none_without_a_timeout() {
        assert_eq!(WATCH_DEADLINE_GRACE, Duration::from_secs(30));
        assert_eq!(watch_deadline(Some(300)), Some(Duration::from_secs(330)));
        assert_eq!(watch_deadline(Some(0)), None, "0 is the server's choice");
        assert_eq!(watch_deadline(Some(-5)), None);
        assert_eq!(watch_deadline(None), None);
        assert_eq!(
            watch_deadline(Some(i64::MAX)),
            Some(Duration::from_secs(i64::MAX as u64) + WATCH_DEADLINE_GRACE)
        );
        for _ in 0..100 {
            let t = watch_timeout_seconds(Duration::from_secs(300));
            assert!((300..600).contains(&t), "{t}");
        }
    }
}
