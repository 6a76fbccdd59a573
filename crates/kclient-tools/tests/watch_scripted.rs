//! The watch utilities against a scripted lister-watcher, on tokio's paused clock: client-go's
//! `retrywatcher_test.go` and `until_test.go` cases.

#![allow(clippy::result_large_err)] // scripted watch events carry ApiError, as the clients do

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{stream, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kclient_cache::WATCH_DEADLINE_GRACE;
use kclient_core::{
    ApiError, Bookmark, GroupResource, ListOptions, ListerWatcher, ObjectList, Status,
    StatusDetails, WatchEvent, WatchStream,
};
use kclient_tools::watch::{
    condition, conditions, until_without_retry, Condition, RetryWatcher, RetryWatcherError,
    UntilError, MIN_RESTART_DELAY,
};
use tokio::time::Instant;

type Event = Result<WatchEvent<ConfigMap>, ApiError>;

/// One scripted watch: the request fails, or it streams these events and closes (or, with
/// `hang`, stays open after them).
enum Script {
    Fail(ApiError),
    Events(Vec<Event>),
    Hang(Vec<Event>),
}

/// What a watch request asked for: resourceVersion, bookmarks, start time, timeoutSeconds.
type WatchCall = (String, bool, Instant, Option<i64>);

/// A lister-watcher whose watches follow a script; it records each watch's
/// resourceVersion, bookmark flag, start time and timeout. With the script exhausted,
/// watches stay open with nothing to say.
#[derive(Clone, Default)]
struct Scripted {
    script: Arc<Mutex<VecDeque<Script>>>,
    watches: Arc<Mutex<Vec<WatchCall>>>,
}

impl Scripted {
    fn new(script: impl IntoIterator<Item = Script>) -> Self {
        Self {
            script: Arc::new(Mutex::new(script.into_iter().collect())),
            ..Self::default()
        }
    }

    fn watch_rvs(&self) -> Vec<String> {
        self.watches
            .lock()
            .unwrap()
            .iter()
            .map(|w| w.0.clone())
            .collect()
    }

    fn starts(&self) -> Vec<Instant> {
        self.watches.lock().unwrap().iter().map(|w| w.2).collect()
    }

    fn timeouts(&self) -> Vec<Option<i64>> {
        self.watches.lock().unwrap().iter().map(|w| w.3).collect()
    }
}

impl ListerWatcher<ConfigMap> for Scripted {
    type Error = ApiError;

    async fn list(&self, _: &ListOptions) -> Result<ObjectList<ConfigMap>, ApiError> {
        Ok(ObjectList::new(Vec::new(), "1"))
    }

    async fn watch(
        &self,
        options: &ListOptions,
    ) -> Result<WatchStream<ConfigMap, ApiError>, ApiError> {
        self.watches.lock().unwrap().push((
            options.resource_version.clone().unwrap_or_default(),
            options.allow_watch_bookmarks,
            Instant::now(),
            options.timeout_seconds,
        ));
        let next = self.script.lock().unwrap().pop_front();
        match next {
            Some(Script::Fail(e)) => Err(e),
            Some(Script::Events(events)) => Ok(stream::iter(events).boxed()),
            Some(Script::Hang(events)) => Ok(stream::iter(events).chain(stream::pending()).boxed()),
            None => Ok(stream::pending().boxed()),
        }
    }
}

fn cm(name: &str, rv: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            resource_version: Some(rv.into()).filter(|rv: &String| !rv.is_empty()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

fn added(name: &str, rv: &str) -> Event {
    Ok(WatchEvent::Added(cm(name, rv)))
}

fn modified(name: &str, rv: &str) -> Event {
    Ok(WatchEvent::Modified(cm(name, rv)))
}

fn bookmark(rv: &str) -> Event {
    Ok(WatchEvent::Bookmark(Bookmark {
        resource_version: rv.into(),
        ..Bookmark::default()
    }))
}

fn error_event(code: u16, retry_after_seconds: i32) -> Event {
    let mut status = ApiError::internal_error("boom").status;
    status.code = code;
    status.details = Some(StatusDetails {
        retry_after_seconds,
        ..StatusDetails::default()
    });
    Ok(WatchEvent::Error(status))
}

/// The (type, name, resourceVersion) of an event.
fn describe(event: &WatchEvent<ConfigMap>) -> String {
    match event {
        WatchEvent::Error(s) => format!("ERROR {}", s.code),
        e => format!(
            "{} {} {}",
            e.type_name(),
            e.object().unwrap().metadata.name.as_deref().unwrap(),
            e.resource_version().unwrap()
        ),
    }
}

#[test]
fn a_retry_watcher_refuses_a_resource_version_the_server_did_not_give() {
    for rv in ["", "0"] {
        let err = RetryWatcher::<ConfigMap>::new(rv, Scripted::default()).unwrap_err();
        assert_eq!(
            err,
            RetryWatcherError::UnsupportedResourceVersion(rv.into())
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_retry_watcher_resumes_from_the_last_delivered_resource_version() {
    let lw = Scripted::new([
        Script::Events(vec![added("a", "11"), modified("a", "12"), bookmark("15")]),
        // A broken stream: resume from the bookmark's resourceVersion.
        Script::Events(vec![
            added("b", "16"),
            Err(ApiError::internal_error("reset")),
        ]),
        // A refused watch request is retried.
        Script::Fail(ApiError::internal_error("connection refused")),
        Script::Hang(vec![modified("b", "17")]),
    ]);
    let mut watcher = RetryWatcher::new("10", lw.clone()).unwrap();
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.push(describe(&watcher.next().await.unwrap()));
    }
    assert_eq!(
        seen,
        ["ADDED a 11", "MODIFIED a 12", "ADDED b 16", "MODIFIED b 17"],
        "every event once, bookmarks not delivered"
    );
    assert_eq!(lw.watch_rvs(), ["10", "15", "16", "16"]);
    assert!(
        lw.watches.lock().unwrap().iter().all(|w| w.1),
        "bookmarks always requested"
    );
    // Each start at least MIN_RESTART_DELAY after the previous one.
    let starts = lw.starts();
    for pair in starts.windows(2) {
        assert!(pair[1] - pair[0] >= MIN_RESTART_DELAY, "{starts:?}");
    }
    assert_eq!(MIN_RESTART_DELAY, Duration::from_secs(1));
    watcher.stop();
    assert!(watcher.next().await.is_none(), "stop ends the stream");
}

/// Issue 29: each watch asks for a `timeoutSeconds` of 5–10 minutes; one the server leaves
/// open and silent past it (plus `WATCH_DEADLINE_GRACE`) is ended by the watcher, which
/// resumes from the last delivered resourceVersion.
#[tokio::test(start_paused = true)]
async fn a_retry_watcher_ends_a_silent_watch_at_its_deadline_and_resumes() {
    let lw = Scripted::new([
        Script::Hang(vec![added("a", "11")]),
        Script::Events(vec![added("b", "12")]),
    ]);
    let mut watcher = RetryWatcher::new("10", lw.clone()).unwrap();
    assert_eq!(describe(&watcher.next().await.unwrap()), "ADDED a 11");
    // The first watch now stays open with nothing to say; the next event comes from a new
    // watch started at the first one's deadline. (A bound on the paused clock, past any
    // deadline, so that a regression fails instead of hanging.)
    let next = tokio::time::timeout(Duration::from_secs(3600), watcher.next())
        .await
        .expect("the silent watch was given up on");
    assert_eq!(describe(&next.unwrap()), "ADDED b 12");
    assert_eq!(lw.watch_rvs(), ["10", "11"]);
    let timeout = lw.timeouts()[0].expect("a timeoutSeconds is asked for");
    assert!((300..600).contains(&timeout), "{timeout}");
    let deadline = lw.starts()[0] + Duration::from_secs(timeout as u64) + WATCH_DEADLINE_GRACE;
    let restarted = lw.starts()[1];
    assert!(
        restarted >= deadline && restarted < deadline + Duration::from_secs(1),
        "restarted {:?} after the deadline",
        restarted.checked_duration_since(deadline)
    );
}

#[tokio::test(start_paused = true)]
async fn a_retry_watcher_honours_retry_after_of_an_error_event() {
    let lw = Scripted::new([
        Script::Events(vec![added("a", "11"), error_event(500, 5)]),
        Script::Events(vec![error_event(504, 0)]),
        Script::Hang(vec![added("b", "12")]),
    ]);
    let mut watcher = RetryWatcher::new("10", lw.clone()).unwrap();
    assert_eq!(describe(&watcher.next().await.unwrap()), "ADDED a 11");
    assert_eq!(
        describe(&watcher.next().await.unwrap()),
        "ADDED b 12",
        "5xx error events are retried, not delivered"
    );
    let starts = lw.starts();
    assert_eq!(lw.watch_rvs(), ["10", "11", "11"]);
    assert!(
        starts[1] - starts[0] >= Duration::from_secs(5),
        "retryAfterSeconds honoured: {starts:?}"
    );
    assert_eq!(starts[2] - starts[1], MIN_RESTART_DELAY);
}

#[tokio::test(start_paused = true)]
async fn gone_forbidden_and_objects_without_resource_version_end_a_retry_watcher() {
    // 410 as an event: delivered, then the end.
    let lw = Scripted::new([Script::Events(vec![added("a", "11"), error_event(410, 0)])]);
    let mut watcher = RetryWatcher::new("10", lw).unwrap();
    assert_eq!(describe(&watcher.next().await.unwrap()), "ADDED a 11");
    assert_eq!(describe(&watcher.next().await.unwrap()), "ERROR 410");
    assert!(watcher.next().await.is_none());

    // 410 as the answer to the request (client-go would retry it forever): the same.
    let lw = Scripted::new([Script::Fail(ApiError::gone(
        "too old resource version: 10 (20)",
    ))]);
    let mut watcher = RetryWatcher::new("10", lw).unwrap();
    assert_eq!(describe(&watcher.next().await.unwrap()), "ERROR 410");
    assert!(watcher.next().await.is_none());

    // 403 on the request: delivered, then the end.
    let forbidden = ApiError::forbidden(&GroupResource::new("", "configmaps"), "", "no");
    let lw = Scripted::new([Script::Fail(forbidden)]);
    let mut watcher = RetryWatcher::new("10", lw).unwrap();
    assert_eq!(describe(&watcher.next().await.unwrap()), "ERROR 403");
    assert!(watcher.next().await.is_none());

    // An object without a resourceVersion cannot be resumed after.
    let lw = Scripted::new([Script::Events(vec![added("a", "")])]);
    let mut watcher = RetryWatcher::new("10", lw).unwrap();
    match watcher.next().await.unwrap() {
        WatchEvent::Error(Status {
            code: 500, message, ..
        }) => {
            assert!(message.contains("no resourceVersion"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert!(watcher.next().await.is_none());
}

/// The resourceVersion of an event's object.
fn rv_of(event: &WatchEvent<Arc<ConfigMap>>) -> String {
    event
        .object()
        .unwrap()
        .metadata
        .resource_version
        .clone()
        .unwrap()
}

fn arc_events(events: Vec<Event>) -> impl futures::Stream<Item = WatchEvent<Arc<ConfigMap>>> {
    stream::iter(events).map(|e| e.unwrap().map(Arc::new))
}

fn named_event(kind: &'static str, name: &'static str) -> Condition<ConfigMap> {
    condition(move |e: &WatchEvent<Arc<ConfigMap>>| {
        Ok(e.type_name() == kind
            && e.object().and_then(|o| o.metadata.name.as_deref()) == Some(name))
    })
}

#[tokio::test]
async fn until_meets_conditions_one_after_the_other_offering_the_same_event_to_the_next() {
    let events = vec![
        added("a", "1"),
        modified("a", "2"),
        added("b", "3"),
        added("c", "4"),
    ];
    // The event that meets the first condition meets the second too.
    let last = until_without_retry(
        arc_events(events.clone()),
        [
            named_event("ADDED", "b"),
            condition(|e| Ok(e.type_name() == "ADDED")),
        ],
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(rv_of(&last), "3");

    let last = until_without_retry(
        arc_events(events.clone()),
        [named_event("MODIFIED", "a"), named_event("ADDED", "c")],
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(rv_of(&last), "4");

    let none = until_without_retry(arc_events(events.clone()), [])
        .await
        .unwrap();
    assert!(none.is_none(), "no conditions: no event");

    let closed =
        until_without_retry(arc_events(events.clone()), [named_event("DELETED", "a")]).await;
    assert!(matches!(closed, Err(UntilError::WatchClosed)), "{closed:?}");

    let failed = until_without_retry(
        arc_events(events),
        [condition(|_: &WatchEvent<Arc<ConfigMap>>| {
            Err("no good".into())
        })],
    )
    .await;
    assert!(
        matches!(&failed, Err(UntilError::Condition(e)) if e.to_string() == "no good"),
        "{failed:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn until_over_a_retry_watcher_rides_out_closed_watches() {
    let lw = Scripted::new([
        Script::Events(vec![added("a", "11")]),
        Script::Events(vec![]),
        Script::Events(vec![Ok(WatchEvent::Deleted(cm("a", "14")))]),
    ]);
    let last = kclient_tools::watch::until("10", lw.clone(), [conditions::deleted()])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rv_of(&last), "14");
    assert_eq!(lw.watch_rvs(), ["10", "11", "11"]);
}

#[tokio::test]
async fn ready_made_conditions_read_status_conditions_and_generations() {
    let mut cm_with_status = serde_json::json!({
        "metadata": {"name": "web", "namespace": "default", "generation": 3},
        "spec": {"selector": {}, "template": {}},
        "status": {"observedGeneration": 2, "conditions": [
            {"type": "Available", "status": "True"},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}
    });
    let deployment =
        |json: &serde_json::Value| -> WatchEvent<Arc<k8s_openapi::api::apps::v1::Deployment>> {
            WatchEvent::Modified(Arc::new(serde_json::from_value(json.clone()).unwrap()))
        };
    let mut available = conditions::deployment_available();
    assert!(
        !available(&deployment(&cm_with_status)).unwrap(),
        "status of an older generation"
    );
    cm_with_status["status"]["observedGeneration"] = 3.into();
    assert!(available(&deployment(&cm_with_status)).unwrap());
    let mut observed = conditions::generation_observed();
    assert!(observed(&deployment(&cm_with_status)).unwrap());
    let mut has = conditions::has_condition("Progressing", "False");
    assert!(!has(&deployment(&cm_with_status)).unwrap());
    cm_with_status["status"]["conditions"][1]["reason"] = "ProgressDeadlineExceeded".into();
    let err = available(&deployment(&cm_with_status)).unwrap_err();
    assert!(err.to_string().contains("progress deadline"), "{err}");

    let gone = WatchEvent::Deleted(Arc::new(cm("a", "5")));
    let mut has = conditions::has_condition::<ConfigMap>("Ready", "True");
    assert!(
        has(&gone).is_err(),
        "a deleted object never meets a status condition"
    );
    let mut deleted = conditions::named("default", "a", conditions::deleted::<ConfigMap>());
    assert!(deleted(&gone).unwrap());
    assert!(
        !deleted(&WatchEvent::Deleted(Arc::new(cm("b", "6")))).unwrap(),
        "another object"
    );
}
