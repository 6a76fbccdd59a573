//! The core/v1 recorder → broadcaster → sink path on tokio's paused clock: what is written
//! (created, counted, aggregated), that recording never blocks and counts its drops, the
//! write retries with client-go's limits and rules, and that shutdown writes what is queued.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, ObjectReference};
use kclient_core::{ApiError, GroupResource};
use kclient_tools::events::{
    new_broadcaster, object_reference, BroadcasterOptions, EventBroadcaster, EventError,
    EventMetrics, EventSink, EventType, MemorySink, Shutdown, SinkCall, SinkError, SinkFuture,
    DEFAULT_SLEEP_DURATION, MAX_QUEUED_EVENTS, MAX_TRIES_PER_EVENT,
};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;

fn config_map(name: &str) -> ObjectReference {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.namespace = Some("prod".into());
    cm.metadata.uid = Some(format!("uid-{name}"));
    object_reference(&cm)
}

async fn flushed(broadcaster: &EventBroadcaster) {
    assert_eq!(broadcaster.shutdown().await, Shutdown::Flushed);
}

#[test]
fn the_defaults_are_client_gos() {
    assert_eq!(MAX_TRIES_PER_EVENT, 12);
    assert_eq!(DEFAULT_SLEEP_DURATION, Duration::from_secs(10));
    assert_eq!(MAX_QUEUED_EVENTS, 1000);
    let options = BroadcasterOptions::default();
    assert_eq!(options.queue_length, 1000);
    assert_eq!(options.sleep_duration, Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn recorded_events_carry_the_source_and_the_object() {
    let broadcaster = new_broadcaster();
    let sink = MemorySink::new();
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    let recorder = broadcaster.new_recorder("my-controller", "node-1");
    let reference = config_map("settings");
    recorder.eventf(
        &reference,
        EventType::Warning,
        "Invalid",
        format_args!("key {} is {}", "a", 1),
    );
    let annotations = BTreeMap::from([("team".to_owned(), "blue".to_owned())]);
    recorder.annotated_eventf(
        &reference,
        annotations.clone(),
        EventType::Normal,
        "Noted",
        format_args!("ok"),
    );
    let mut node = Namespace::default();
    node.metadata.name = Some("cluster-wide".into());
    recorder.event(
        &object_reference(&node),
        EventType::Normal,
        "Seen",
        "cluster-scoped",
    );
    flushed(&broadcaster).await;

    let events = sink.events();
    assert_eq!(events.len(), 3);
    let invalid = events
        .iter()
        .find(|e| e.reason.as_deref() == Some("Invalid"))
        .unwrap();
    assert_eq!(invalid.message.as_deref(), Some("key a is 1"));
    assert_eq!(invalid.type_.as_deref(), Some("Warning"));
    assert_eq!(invalid.count, Some(1));
    assert_eq!(invalid.involved_object, reference);
    assert_eq!(invalid.metadata.namespace.as_deref(), Some("prod"));
    assert!(invalid
        .metadata
        .name
        .as_deref()
        .unwrap()
        .starts_with("settings."));
    let source = invalid.source.clone().unwrap();
    assert_eq!(
        (source.component.as_deref(), source.host.as_deref()),
        (Some("my-controller"), Some("node-1"))
    );
    assert_eq!(
        invalid.reporting_component.as_deref(),
        Some("my-controller")
    );
    assert_eq!(invalid.reporting_instance.as_deref(), Some("node-1"));
    assert_eq!(invalid.first_timestamp, invalid.last_timestamp);
    let noted = events
        .iter()
        .find(|e| e.reason.as_deref() == Some("Noted"))
        .unwrap();
    assert_eq!(noted.metadata.annotations.as_ref(), Some(&annotations));
    let seen = events
        .iter()
        .find(|e| e.reason.as_deref() == Some("Seen"))
        .unwrap();
    assert_eq!(
        seen.metadata.namespace.as_deref(),
        Some("default"),
        "cluster-scoped objects' events"
    );
}

/// An event repeated is one Event: created once, then patched with its count and last
/// timestamp, its first timestamp kept.
#[tokio::test(start_paused = true)]
async fn a_repeated_event_is_one_event_with_a_count() {
    let broadcaster = new_broadcaster();
    let sink = MemorySink::new();
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    let recorder = broadcaster.new_recorder("c", "");
    for _ in 0..5 {
        recorder.event(&config_map("a"), EventType::Normal, "Synced", "done");
        tokio::time::advance(Duration::from_secs(60)).await;
    }
    flushed(&broadcaster).await;
    let events = sink.events();
    assert_eq!(events.len(), 1);
    let event = &events[0];
    assert_eq!(event.count, Some(5));
    assert_eq!(
        event
            .last_timestamp
            .as_ref()
            .unwrap()
            .0
            .duration_since(event.first_timestamp.as_ref().unwrap().0),
        k8s_openapi::jiff::SignedDuration::from_secs(240)
    );
    let name = event.metadata.name.clone().unwrap();
    let calls = sink.calls();
    assert_eq!(calls[0], SinkCall::Create(name.clone()));
    assert!(
        calls[1..]
            .iter()
            .all(|c| *c == SinkCall::Patch(name.clone())),
        "{calls:?}"
    );
}

/// Ten distinct messages with one reason: the tenth and later become one aggregate Event,
/// counted up.
#[tokio::test(start_paused = true)]
async fn similar_events_are_aggregated() {
    let broadcaster = new_broadcaster();
    let sink = MemorySink::new();
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    let recorder = broadcaster.new_recorder("c", "");
    for i in 0..12 {
        recorder.eventf(
            &config_map("a"),
            EventType::Warning,
            "Failed",
            format_args!("attempt {i}"),
        );
    }
    flushed(&broadcaster).await;
    let events = sink.events();
    assert_eq!(events.len(), 10, "9 single events and one aggregate");
    let aggregate = events
        .iter()
        .find(|e| {
            e.message
                .as_deref()
                .is_some_and(|m| m.starts_with("(combined"))
        })
        .unwrap();
    assert_eq!(aggregate.count, Some(3));
    assert_eq!(
        aggregate.message.as_deref(),
        Some("(combined from similar events): attempt 11")
    );
}

/// A sink whose writes never finish.
struct Stuck {
    entered: Arc<Notify>,
}

impl EventSink<Event> for Stuck {
    fn create<'a>(&'a self, _: &'a Event) -> SinkFuture<'a, Event> {
        self.entered.notify_one();
        Box::pin(std::future::pending())
    }
    fn update<'a>(&'a self, event: &'a Event) -> SinkFuture<'a, Event> {
        self.create(event)
    }
    fn patch<'a>(&'a self, event: &'a Event, _: &'a Value) -> SinkFuture<'a, Event> {
        self.create(event)
    }
}

#[derive(Default)]
struct Drops(AtomicU64);

impl EventMetrics for Drops {
    fn event_dropped(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// With the sink blocked forever, recording still returns at once: the queue takes 1000
/// events and the rest are dropped and counted; shutdown gives up after its timeout.
#[tokio::test(start_paused = true)]
async fn a_blocked_sink_never_blocks_recording() {
    let drops = Arc::new(Drops::default());
    let broadcaster = EventBroadcaster::with_options(BroadcasterOptions {
        metrics: Some(drops.clone()),
        ..BroadcasterOptions::default()
    })
    .unwrap();
    let entered = Arc::new(Notify::new());
    broadcaster
        .start_recording_to_sink(Stuck {
            entered: entered.clone(),
        })
        .unwrap();
    let recorder = broadcaster.new_recorder("c", "");
    recorder.event(&config_map("first"), EventType::Normal, "R", "m");
    entered.notified().await; // the writer is now stuck on the first event

    let started = std::time::Instant::now();
    for i in 0..5000 {
        recorder.event(&config_map(&format!("o{i}")), EventType::Normal, "R", "m");
    }
    println!(
        "5000 event() calls with a stuck sink: {:?}",
        started.elapsed()
    );
    assert_eq!(broadcaster.dropped_events(), 4000);
    assert_eq!(drops.0.load(Ordering::Relaxed), 4000);

    let began = Instant::now();
    assert_eq!(
        broadcaster
            .shutdown_with_timeout(Duration::from_secs(5))
            .await,
        Shutdown::TimedOut
    );
    assert_eq!(began.elapsed(), Duration::from_secs(5));
    recorder.event(&config_map("late"), EventType::Normal, "R", "m");
    assert_eq!(
        broadcaster.dropped_events(),
        4001,
        "after shutdown, events are dropped"
    );
}

/// Makes the error a scripted call fails with.
type MakeError = fn() -> SinkError;

/// A sink that answers from a script (then succeeds), noting when each call came.
#[derive(Clone, Default)]
struct Scripted {
    inner: MemorySink<Event>,
    script: Arc<Mutex<VecDeque<MakeError>>>,
    calls: Arc<Mutex<Vec<Instant>>>,
}

impl Scripted {
    fn failing(n: usize, error: MakeError) -> Self {
        let sink = Self::default();
        sink.script.lock().extend(std::iter::repeat_n(error, n));
        sink
    }

    fn next(&self) -> Option<SinkError> {
        self.calls.lock().push(Instant::now());
        self.script.lock().pop_front().map(|make| make())
    }
}

impl EventSink<Event> for Scripted {
    fn create<'a>(&'a self, event: &'a Event) -> SinkFuture<'a, Event> {
        match self.next() {
            Some(e) => Box::pin(async move { Err(e) }),
            None => self.inner.create(event),
        }
    }
    fn update<'a>(&'a self, event: &'a Event) -> SinkFuture<'a, Event> {
        self.inner.update(event)
    }
    fn patch<'a>(&'a self, event: &'a Event, patch: &'a Value) -> SinkFuture<'a, Event> {
        match self.next() {
            Some(e) => Box::pin(async move { Err(e) }),
            None => self.inner.patch(event, patch),
        }
    }
}

fn transport() -> SinkError {
    SinkError::Client("connection reset".into())
}

fn events_resource() -> GroupResource {
    GroupResource::new("", "events")
}

/// Records one event through `sink` and returns how many writes were tried.
async fn tries_of(sink: Scripted) -> usize {
    let broadcaster = new_broadcaster();
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    broadcaster
        .new_recorder("c", "")
        .event(&config_map("a"), EventType::Normal, "R", "m");
    assert_eq!(
        broadcaster
            .shutdown_with_timeout(Duration::from_secs(3600))
            .await,
        Shutdown::Flushed
    );
    let tries = sink.calls.lock().len();
    tries
}

/// client-go's TestWriteEventError: errors that cannot succeed end the tries at once,
/// others are retried up to 12 tries.
#[tokio::test(start_paused = true)]
async fn what_is_retried_and_how_often() {
    assert_eq!(
        tries_of(Scripted::failing(1000, || SinkError::Invalid("bad".into()))).await,
        1
    );
    assert_eq!(
        tries_of(Scripted::failing(1000, || ApiError::bad_request("no").into())).await,
        1
    );
    assert_eq!(
        tries_of(Scripted::failing(1000, || ApiError::already_exists(
            &events_resource(),
            "a"
        )
        .into()))
        .await,
        1
    );
    assert_eq!(tries_of(Scripted::failing(1000, transport)).await, 12);
    assert_eq!(
        tries_of(Scripted::failing(2, transport)).await,
        3,
        "succeeds eventually"
    );
    // This port's deviation: the server's 5xx and 429 answers are retried too.
    assert_eq!(
        tries_of(Scripted::failing(1000, || ApiError::internal_error("boom").into())).await,
        12
    );
    assert_eq!(
        tries_of(Scripted::failing(3, || ApiError::too_many_requests(
            "slow", 1
        )
        .into()))
        .await,
        4
    );
}

/// The waits between tries: the first randomized within the sleep duration, then the sleep
/// duration each.
#[tokio::test(start_paused = true)]
async fn retries_wait_ten_seconds_the_first_wait_randomized() {
    let sink = Scripted::failing(1000, transport);
    tries_of(sink.clone()).await;
    let calls = sink.calls.lock().clone();
    assert_eq!(calls.len(), 12);
    let waits: Vec<Duration> = calls.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(waits[0] <= Duration::from_secs(10), "{:?}", waits[0]);
    assert!(
        waits[1..].iter().all(|w| *w == Duration::from_secs(10)),
        "{waits:?}"
    );
}

/// A repeat of an Event that is gone from the server (its TTL passed) creates it again.
#[tokio::test(start_paused = true)]
async fn a_patch_of_a_vanished_event_creates_it() {
    let sink = MemorySink::new();
    let broadcaster = new_broadcaster();
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    let recorder = broadcaster.new_recorder("c", "");
    recorder.event(&config_map("a"), EventType::Normal, "R", "m");
    tokio::time::sleep(Duration::from_millis(1)).await;
    let first = sink.events().pop().unwrap();
    let name = first.metadata.name.clone().unwrap();
    sink.remove("prod", &name).unwrap();
    recorder.event(&config_map("a"), EventType::Normal, "R", "m");
    flushed(&broadcaster).await;
    assert_eq!(
        sink.calls(),
        [
            SinkCall::Create(name.clone()),
            SinkCall::Patch(name.clone()),
            SinkCall::Create(name)
        ]
    );
    assert_eq!(sink.events()[0].count, Some(2));
}

/// A slow sink: each write takes a second on tokio's clock.
#[derive(Clone, Default)]
struct Slow(MemorySink<Event>);

impl EventSink<Event> for Slow {
    fn create<'a>(&'a self, event: &'a Event) -> SinkFuture<'a, Event> {
        Box::pin(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            self.0.create(event).await
        })
    }
    fn update<'a>(&'a self, event: &'a Event) -> SinkFuture<'a, Event> {
        self.0.update(event)
    }
    fn patch<'a>(&'a self, event: &'a Event, patch: &'a Value) -> SinkFuture<'a, Event> {
        self.0.patch(event, patch)
    }
}

/// Shutdown writes every queued event before it returns; past its timeout it stops.
#[tokio::test(start_paused = true)]
async fn shutdown_flushes_the_queue_within_its_timeout() {
    let sink = Slow::default();
    let broadcaster = new_broadcaster();
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    let recorder = broadcaster.new_recorder("c", "");
    for i in 0..50 {
        recorder.event(&config_map(&format!("o{i}")), EventType::Normal, "R", "m");
    }
    let began = Instant::now();
    assert_eq!(
        broadcaster
            .shutdown_with_timeout(Duration::from_secs(60))
            .await,
        Shutdown::Flushed
    );
    assert_eq!(sink.0.events().len(), 50, "every queued event written");
    assert_eq!(began.elapsed(), Duration::from_secs(50));

    let sink = Slow::default();
    let broadcaster = new_broadcaster();
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    let recorder = broadcaster.new_recorder("c", "");
    for i in 0..50 {
        recorder.event(&config_map(&format!("o{i}")), EventType::Normal, "R", "m");
    }
    assert_eq!(
        broadcaster
            .shutdown_with_timeout(Duration::from_millis(10_500))
            .await,
        Shutdown::TimedOut
    );
    assert_eq!(sink.0.events().len(), 10, "written until the timeout");
}

/// Every watcher gets every event; a stopped watcher gets no more.
#[tokio::test(start_paused = true)]
async fn watchers_each_get_the_events_until_stopped() {
    let broadcaster = new_broadcaster();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_by_handler = seen.clone();
    let watcher = broadcaster
        .start_event_watcher(move |e| seen_by_handler.lock().push(e.reason.clone().unwrap()))
        .unwrap();
    broadcaster.start_structured_logging().unwrap();
    let sink = MemorySink::new();
    broadcaster.start_recording_to_sink(sink.clone()).unwrap();
    let recorder = broadcaster.new_recorder("c", "");
    recorder.event(&config_map("a"), EventType::Normal, "First", "m");
    tokio::time::sleep(Duration::from_millis(1)).await;
    watcher.stop();
    recorder.event(&config_map("a"), EventType::Normal, "Second", "m");
    flushed(&broadcaster).await;
    assert_eq!(*seen.lock(), ["First"]);
    assert_eq!(sink.events().len(), 2);
}

#[test]
fn starting_outside_a_runtime_is_an_error() {
    let broadcaster = new_broadcaster();
    assert_eq!(
        broadcaster
            .start_recording_to_sink(MemorySink::new())
            .unwrap_err(),
        EventError::NoRuntime
    );
}

#[tokio::test]
async fn starting_after_shutdown_is_an_error_and_options_are_checked() {
    let broadcaster = new_broadcaster();
    broadcaster.shutdown().await;
    assert_eq!(
        broadcaster.start_event_watcher(|_| {}).unwrap_err(),
        EventError::ShutDown
    );
    let zero_queue = BroadcasterOptions {
        queue_length: 0,
        ..BroadcasterOptions::default()
    };
    assert!(matches!(
        EventBroadcaster::with_options(zero_queue),
        Err(EventError::InvalidOption {
            option: "queue_length",
            ..
        })
    ));
    assert!("Info".parse::<EventType>().is_err());
    assert_eq!("Normal".parse::<EventType>(), Ok(EventType::Normal));
}
