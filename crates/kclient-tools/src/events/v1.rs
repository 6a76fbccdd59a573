//! events.k8s.io/v1 Events (client-go's `tools/events`): an [`EventsV1Broadcaster`] and
//! [`EventsV1Recorder`] for the newer Event API, where a repeated event becomes an
//! `EventSeries` instead of a count.
//!
//! The broadcaster keeps every event it wrote, keyed by type, action, reason, reporting
//! controller and instance, and the objects it is about (client-go's `eventKey`). An event
//! with the key of a kept one is not created again:
//!
//! * the second occurrence turns the kept Event into a series (`series.count` 2,
//!   `series.lastObservedTime` now) and patches the stored Event so;
//! * later occurrences only count up the kept series and move its `lastObservedTime`;
//! * every [`finish_time`](EventsV1BroadcasterOptions::finish_time) (6 min) the series that saw no
//!   occurrence for that long are written one last time with their final count and
//!   forgotten, and so are single events older than that;
//! * every [`refresh_time`](EventsV1BroadcasterOptions::refresh_time) (30 min) the open series are
//!   written again, so that their Events outlive the server's Event TTL.
//!
//! Events are written one at a time, in order (client-go starts a goroutine per event), and
//! writes are retried like the core/v1 broadcaster's, every wait jittered by up to 25%, and
//! a create that finds the series' Event already there is retried (it raced the first
//! write). [`EventsV1Broadcaster::shutdown`] also writes the counts of the series not yet
//! written, which client-go leaves for the next finish.
//!
//! For servers without events.k8s.io/v1, [`EventBroadcasterAdapter`] falls back to core/v1
//! Events, choosing by discovery (client-go's `NewEventBroadcasterAdapter`).

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kclient_core::GroupVersion;
use kclient_discovery::{Discovery, DiscoveryClient};
use kclient_typed::Clientset;
use serde_json::{json, Value};
use tokio::time::{interval_at, Instant, MissedTickBehavior};

use super::clock::{event_metadata, EventClock};
use super::fanout::{EventMetrics, EventWatcher, Fanout, Shutdown};
use super::sink::{after_failure, patch_or_create, write_with_retries, Attempt, EventSink};
use super::{
    EventError, EventType, DEFAULT_SHUTDOWN_TIMEOUT, DEFAULT_SLEEP_DURATION, MAX_QUEUED_EVENTS,
};
use crate::retry::jitter;

/// client-go's `finishTime`: a series with no occurrence for this long is finished.
pub const FINISH_TIME: Duration = Duration::from_secs(6 * 60);
/// client-go's `refreshTime`: open series are written again this often.
pub const REFRESH_TIME: Duration = Duration::from_secs(30 * 60);

/// How an [`EventsV1Broadcaster`] works; [`Default`] gives client-go's
/// values.
#[derive(Clone)]
pub struct EventsV1BroadcasterOptions {
    /// The wait between tries of a write, jittered by up to 25% (10 s).
    pub sleep_duration: Duration,
    /// Events each watcher queues before new ones are dropped (1000).
    pub queue_length: usize,
    /// How long a series stays open without an occurrence (6 min).
    pub finish_time: Duration,
    /// How often open series are written again (30 min).
    pub refresh_time: Duration,
    /// Told of every dropped event.
    pub metrics: Option<Arc<dyn EventMetrics>>,
}

impl Default for EventsV1BroadcasterOptions {
    fn default() -> Self {
        Self {
            sleep_duration: DEFAULT_SLEEP_DURATION,
            queue_length: MAX_QUEUED_EVENTS,
            finish_time: FINISH_TIME,
            refresh_time: REFRESH_TIME,
            metrics: None,
        }
    }
}

impl fmt::Debug for EventsV1BroadcasterOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventsV1BroadcasterOptions")
            .field("sleep_duration", &self.sleep_duration)
            .field("queue_length", &self.queue_length)
            .field("finish_time", &self.finish_time)
            .field("refresh_time", &self.refresh_time)
            .field("metrics", &self.metrics.is_some())
            .finish()
    }
}

/// The events.k8s.io/v1 broadcaster (client-go's `events.EventBroadcaster`, named apart
/// from the core/v1 [`EventBroadcaster`](super::EventBroadcaster)): writes the events of its [`EventsV1Recorder`]s to its sink as Events and `EventSeries` (see the
/// [module documentation](self)). Cloning shares it.
#[derive(Clone)]
pub struct EventsV1Broadcaster {
    fanout: Fanout<Event>,
    sink: Arc<dyn EventSink<Event>>,
    options: Arc<EventsV1BroadcasterOptions>,
    clock: EventClock,
}

impl fmt::Debug for EventsV1Broadcaster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventsV1Broadcaster")
            .field("options", &self.options)
            .field("dropped_events", &self.dropped_events())
            .finish_non_exhaustive()
    }
}

impl EventsV1Broadcaster {
    /// A broadcaster writing to `sink` with client-go's defaults (client-go's
    /// `NewBroadcaster(sink)`); `clientset.events_v1().events("")` is such a sink.
    pub fn new(sink: impl EventSink<Event>) -> Self {
        Self::build(Arc::new(sink), EventsV1BroadcasterOptions::default())
    }

    /// A broadcaster with `options`: the queue must hold at least one event and both
    /// periods must be positive.
    pub fn with_options(
        sink: impl EventSink<Event>,
        options: EventsV1BroadcasterOptions,
    ) -> Result<Self, EventError> {
        let invalid = |option: &'static str, reason: &str| EventError::InvalidOption {
            option,
            reason: reason.to_owned(),
        };
        if options.queue_length == 0 {
            return Err(invalid("queue_length", "must be at least 1"));
        }
        if options.finish_time.is_zero() {
            return Err(invalid("finish_time", "must be positive"));
        }
        if options.refresh_time.is_zero() {
            return Err(invalid("refresh_time", "must be positive"));
        }
        Ok(Self::build(Arc::new(sink), options))
    }

    fn build(sink: Arc<dyn EventSink<Event>>, options: EventsV1BroadcasterOptions) -> Self {
        Self {
            fanout: Fanout::new(options.queue_length, options.metrics.clone()),
            sink,
            options: Arc::new(options),
            clock: EventClock::new(),
        }
    }

    /// A recorder for `reporting_controller` (a qualified name such as
    /// `example.com/my-controller`), reporting as `<controller>-<hostname>` (client-go's
    /// `NewRecorder`).
    pub fn new_recorder(&self, reporting_controller: &str) -> EventsV1Recorder {
        let instance = format!("{reporting_controller}-{}", hostname());
        self.new_recorder_with_instance(reporting_controller, &instance)
    }

    /// A recorder for `reporting_controller` reporting as `reporting_instance`.
    pub fn new_recorder_with_instance(
        &self,
        reporting_controller: &str,
        reporting_instance: &str,
    ) -> EventsV1Recorder {
        EventsV1Recorder {
            fanout: self.fanout.clone(),
            reporting_controller: reporting_controller.to_owned(),
            reporting_instance: reporting_instance.to_owned(),
            clock: self.clock,
        }
    }

    /// Starts writing the events to the sink, with the series bookkeeping of the
    /// [module documentation](self) (client-go's `StartRecordingToSinkWithContext`; stop it
    /// with the returned watcher or [`shutdown`](Self::shutdown)).
    pub fn start_recording_to_sink(&self) -> Result<EventWatcher, EventError> {
        let mut series = SeriesCache {
            sink: self.sink.clone(),
            options: self.options.clone(),
            clock: self.clock,
            events: HashMap::new(),
        };
        let (finish_time, refresh_time) = (self.options.finish_time, self.options.refresh_time);
        self.fanout.start(move |mut events| async move {
            let start = Instant::now();
            let mut finish = interval_at(start + finish_time, finish_time);
            let mut refresh = interval_at(start + refresh_time, refresh_time);
            finish.set_missed_tick_behavior(MissedTickBehavior::Delay);
            refresh.set_missed_tick_behavior(MissedTickBehavior::Delay);
            loop {
                let done = tokio::select! {
                    event = events.recv() => match event {
                        Some(event) => events.unless_stopped(series.record(event)).await.is_none(),
                        None => true,
                    },
                    _ = finish.tick() => events.unless_stopped(series.finish()).await.is_none(),
                    _ = refresh.tick() => events.unless_stopped(series.refresh()).await.is_none(),
                };
                if done {
                    break;
                }
            }
            // Shut down (or stopped: then this ends at once): write the counts not yet written.
            tokio::select! {
                biased;
                _ = events.stopped() => {}
                _ = series.flush() => {}
            }
        })
    }

    /// Calls `handler` with every event (client-go's `StartEventWatcher`).
    pub fn start_event_watcher(
        &self,
        handler: impl FnMut(&Event) + Send + 'static,
    ) -> Result<EventWatcher, EventError> {
        self.fanout.watch(handler)
    }

    /// Logs every event with `tracing` at the info level (client-go's `StartLogging`).
    pub fn start_structured_logging(&self) -> Result<EventWatcher, EventError> {
        self.start_event_watcher(|event| {
            let regarding = event.regarding.clone().unwrap_or_default();
            tracing::info!(
                object = %format_args!("{}/{}", regarding.namespace.as_deref().unwrap_or_default(), regarding.name.as_deref().unwrap_or_default()),
                kind = regarding.kind.as_deref().unwrap_or_default(),
                api_version = regarding.api_version.as_deref().unwrap_or_default(),
                r#type = event.type_.as_deref().unwrap_or_default(),
                reason = event.reason.as_deref().unwrap_or_default(),
                action = event.action.as_deref().unwrap_or_default(),
                note = event.note.as_deref().unwrap_or_default(),
                "Event occurred"
            );
        })
    }

    /// How many events were dropped: once per watcher whose queue was full when the event
    /// came, and once per event recorded after shutdown.
    pub fn dropped_events(&self) -> u64 {
        self.fanout.dropped_events()
    }

    /// [`shutdown_with_timeout`](Self::shutdown_with_timeout) with
    /// [`DEFAULT_SHUTDOWN_TIMEOUT`].
    pub async fn shutdown(&self) -> Shutdown {
        self.shutdown_with_timeout(DEFAULT_SHUTDOWN_TIMEOUT).await
    }

    /// Stops taking events, writes what is queued and the series counts not yet written
    /// for at most `timeout`, then stops the watchers.
    pub async fn shutdown_with_timeout(&self, timeout: Duration) -> Shutdown {
        self.fanout.shutdown(timeout).await
    }
}

/// The hostname, for the default reporting instance (empty when it cannot be read).
fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// A kept event and the series count last written for it.
struct Kept {
    event: Event,
    written_count: Option<i32>,
}

/// The broadcaster's memory of written events (client-go's `eventCache`).
struct SeriesCache {
    sink: Arc<dyn EventSink<Event>>,
    options: Arc<EventsV1BroadcasterOptions>,
    clock: EventClock,
    events: HashMap<String, Kept>,
}

/// client-go's `getKey`: type, action, reason, reporting controller and instance, and the
/// objects the event is about.
fn series_key(event: &Event) -> String {
    let reference = |r: &Option<ObjectReference>| {
        serde_json::to_string(&r.clone().unwrap_or_default()).unwrap_or_default()
    };
    let text = |s: &Option<String>| s.clone().unwrap_or_default();
    [
        text(&event.type_),
        text(&event.action),
        text(&event.reason),
        text(&event.reporting_controller),
        text(&event.reporting_instance),
        reference(&event.regarding),
        reference(&event.related),
    ]
    .join("\u{0}")
}

/// client-go's `createPatchBytesForSeries`: the two-way merge patch from the event without
/// its series to the event, which is its series.
fn series_patch(event: &Event) -> Value {
    json!({ "series": event.series })
}

impl SeriesCache {
    /// client-go's `recordToSink`: a new event is kept and created; a repeat starts a series
    /// (written) or counts up the open one (not written).
    async fn record(&mut self, event: Event) {
        let now = MicroTime(self.clock.now());
        let key = series_key(&event);
        let to_write = match self.events.get_mut(&key) {
            Some(kept) => match kept.event.series.as_mut() {
                Some(series) => {
                    series.count = series.count.saturating_add(1);
                    series.last_observed_time = now;
                    None
                }
                None => {
                    kept.event.series = Some(EventSeries {
                        count: 2,
                        last_observed_time: now,
                    });
                    Some(kept.event.clone())
                }
            },
            None => {
                self.events.insert(
                    key.clone(),
                    Kept {
                        event: event.clone(),
                        written_count: None,
                    },
                );
                Some(event)
            }
        };
        if let Some(event) = to_write {
            self.write(&key, &event).await;
        }
    }

    /// Writes `event`, kept under `key`, with retries (every wait jittered by up to 25%),
    /// and notes the count written.
    async fn write(&mut self, key: &str, event: &Event) {
        let sleep = self.options.sleep_duration;
        let delay = |_| jitter(sleep, 0.25);
        let sink = &*self.sink;
        if write_with_retries(delay, || record_event(sink, event))
            .await
            .is_some()
        {
            self.note_written(key, event);
        }
    }

    /// The keys and copies of the kept events that `wanted` picks.
    fn kept(&self, wanted: impl Fn(&Kept) -> bool) -> Vec<(String, Event)> {
        self.events
            .iter()
            .filter(|(_, kept)| wanted(kept))
            .map(|(key, kept)| (key.clone(), kept.event.clone()))
            .collect()
    }

    fn note_written(&mut self, key: &str, event: &Event) {
        if let Some(kept) = self.events.get_mut(key) {
            kept.written_count = event.series.as_ref().map(|s| s.count);
        }
    }

    /// client-go's `finishSeries`: writes the final count of the series with no occurrence
    /// for `finish_time` and forgets them (unless the write may be retried), and forgets
    /// single events older than that.
    async fn finish(&mut self) {
        let finish_time = self.options.finish_time;
        let keys: Vec<String> = self.events.keys().cloned().collect();
        for key in keys {
            let Some(kept) = self.events.get(&key) else {
                continue;
            };
            match &kept.event.series {
                Some(series) if self.clock.since(series.last_observed_time.0) > finish_time => {
                    let event = kept.event.clone();
                    if !matches!(record_event(&*self.sink, &event).await, Attempt::Retry) {
                        self.events.remove(&key);
                    }
                }
                None if kept
                    .event
                    .event_time
                    .as_ref()
                    .is_some_and(|t| self.clock.since(t.0) > finish_time) =>
                {
                    self.events.remove(&key);
                }
                _ => {}
            }
        }
    }

    /// client-go's `refreshExistingEventSeries`: writes every open series again, keeping
    /// what the server stored.
    async fn refresh(&mut self) {
        for (key, event) in self.kept(|kept| kept.event.series.is_some()) {
            if let Attempt::Written(stored) = record_event(&*self.sink, &event).await {
                self.note_written(&key, &stored);
                if let Some(kept) = self.events.get_mut(&key) {
                    kept.event = stored;
                }
            }
        }
    }

    /// Writes the series whose count changed since it was last written.
    async fn flush(&mut self) {
        let changed = |kept: &Kept| {
            kept.event.series.as_ref().map(|s| s.count) != kept.written_count
                && kept.event.series.is_some()
        };
        for (key, event) in self.kept(changed) {
            self.write(&key, &event).await;
        }
    }
}

/// client-go's `recordEvent` for events.k8s.io/v1: a series is patched (created if its
/// Event is gone), a single event created.
async fn record_event(sink: &dyn EventSink<Event>, event: &Event) -> Attempt<Event> {
    let is_series = event.series.is_some();
    let patch = is_series.then(|| series_patch(event));
    match patch_or_create(sink, event, patch.as_ref()).await {
        Ok(stored) => Attempt::Written(stored),
        Err(error) => after_failure(&error, is_series),
    }
}

/// Records events.k8s.io/v1 events (client-go's `events.EventRecorder`, named apart from
/// the core/v1 [`EventRecorder`](super::EventRecorder)); made by
/// [`EventsV1Broadcaster::new_recorder`], cheap to clone, never waits.
#[derive(Clone)]
pub struct EventsV1Recorder {
    fanout: Fanout<Event>,
    reporting_controller: String,
    reporting_instance: String,
    clock: EventClock,
}

impl fmt::Debug for EventsV1Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventsV1Recorder")
            .field("reporting_controller", &self.reporting_controller)
            .field("reporting_instance", &self.reporting_instance)
            .finish_non_exhaustive()
    }
}

impl EventsV1Recorder {
    /// Records that `action` was taken on `regarding` (and `related`, if any) because of
    /// `reason`, with a human-readable `note` (a `&str`, a `String` or `format_args!(…)`);
    /// client-go's `Eventf`. The Event goes into `regarding`'s namespace (`default` for
    /// cluster-scoped objects).
    pub fn eventf(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        type_: EventType,
        reason: &str,
        action: &str,
        note: impl fmt::Display,
    ) {
        let now = self.clock.now();
        let event = Event {
            metadata: event_metadata(regarding, now),
            event_time: Some(MicroTime(now)),
            series: None,
            reporting_controller: Some(self.reporting_controller.clone()),
            reporting_instance: Some(self.reporting_instance.clone()),
            action: Some(action.to_owned()),
            reason: Some(reason.to_owned()),
            regarding: Some(regarding.clone()),
            related: related.cloned(),
            note: Some(note.to_string()),
            type_: Some(type_.as_str().to_owned()),
            ..Event::default()
        };
        self.fanout.emit(event);
    }
}

/// Records events through events.k8s.io/v1 where the server has it and core/v1 otherwise
/// (client-go's `EventBroadcasterAdapter`).
#[derive(Debug, Clone)]
pub struct EventBroadcasterAdapter {
    events_v1: Option<EventsV1Broadcaster>,
    core: super::EventBroadcaster,
    core_sink: kclient_typed::ResourceClient<k8s_openapi::api::core::v1::Event>,
}

impl EventBroadcasterAdapter {
    /// Asks the server's discovery whether it serves events.k8s.io/v1 (client-go's
    /// `NewEventBroadcasterAdapter`): when it does, recorders write events.k8s.io/v1 Events;
    /// when it does not, or discovery fails, core/v1 Events.
    pub async fn new(clientset: &Clientset) -> Self {
        let discovery = DiscoveryClient::new(clientset.rest_client().clone());
        let served = discovery
            .server_resources_for_group_version(&GroupVersion::new("events.k8s.io", "v1"))
            .await
            .is_ok_and(|list| list.resources.iter().any(|r| r.name == "events"));
        Self::choose(clientset, served)
    }

    /// The adapter with the API chosen by the caller: events.k8s.io/v1 when `events_v1`.
    pub fn choose(clientset: &Clientset, events_v1: bool) -> Self {
        Self {
            events_v1: events_v1
                .then(|| EventsV1Broadcaster::new(clientset.events_v1().events(""))),
            core: super::EventBroadcaster::new(),
            core_sink: clientset.core_v1().events(""),
        }
    }

    /// Whether events go through events.k8s.io/v1.
    pub fn uses_events_v1(&self) -> bool {
        self.events_v1.is_some()
    }

    /// Starts writing events to the server (through both broadcasters, as client-go does:
    /// the core/v1 one serves the recorders of
    /// [`deprecated_new_legacy_recorder`](Self::deprecated_new_legacy_recorder)).
    pub fn start_recording_to_sink(&self) -> Result<(), EventError> {
        if let Some(events_v1) = &self.events_v1 {
            events_v1.start_recording_to_sink()?;
        }
        self.core.start_recording_to_sink(self.core_sink.clone())?;
        Ok(())
    }

    /// A recorder for the controller `name`, writing through the API chosen.
    pub fn new_recorder(&self, name: &str) -> AdapterRecorder {
        match &self.events_v1 {
            Some(events_v1) => AdapterRecorder::EventsV1(events_v1.new_recorder(name)),
            None => AdapterRecorder::Core(self.deprecated_new_legacy_recorder(name)),
        }
    }

    /// A core/v1 recorder for the component `name` (client-go's
    /// `DeprecatedNewLegacyRecorder`).
    pub fn deprecated_new_legacy_recorder(&self, name: &str) -> super::EventRecorder {
        self.core.new_recorder(name, "")
    }

    /// Shuts both broadcasters down (see [`EventsV1Broadcaster::shutdown`]);
    /// [`Shutdown::TimedOut`] if either timed out.
    pub async fn shutdown(&self) -> Shutdown {
        let mut outcome = self.core.shutdown().await;
        if let Some(events_v1) = &self.events_v1 {
            if events_v1.shutdown().await == Shutdown::TimedOut {
                outcome = Shutdown::TimedOut;
            }
        }
        outcome
    }
}

/// A recorder of an [`EventBroadcasterAdapter`]: events.k8s.io/v1 or core/v1.
#[derive(Debug, Clone)]
pub enum AdapterRecorder {
    /// Writes events.k8s.io/v1 Events.
    EventsV1(EventsV1Recorder),
    /// Writes core/v1 Events (client-go's `EventRecorderAdapter`).
    Core(super::EventRecorder),
}

impl AdapterRecorder {
    /// [`EventsV1Recorder::eventf`]; through core/v1, `related` and `action` are not recorded
    /// (core/v1 Events written by client-go's adapter have neither) and `note` is the
    /// message.
    pub fn eventf(
        &self,
        regarding: &ObjectReference,
        related: Option<&ObjectReference>,
        type_: EventType,
        reason: &str,
        action: &str,
        note: impl fmt::Display,
    ) {
        match self {
            AdapterRecorder::EventsV1(recorder) => {
                recorder.eventf(regarding, related, type_, reason, action, note)
            }
            AdapterRecorder::Core(recorder) => {
                recorder.eventf(regarding, type_, reason, format_args!("{note}"))
            }
        }
    }
}

/// The former name of [`EventsV1Broadcaster`].
#[deprecated(note = "renamed `EventsV1Broadcaster`, apart from the core/v1 `EventBroadcaster`")]
pub type EventBroadcaster = EventsV1Broadcaster;

/// The former name of [`EventsV1Recorder`].
#[deprecated(note = "renamed `EventsV1Recorder`, apart from the core/v1 `EventRecorder`")]
pub type EventRecorder = EventsV1Recorder;

/// The former name of [`EventsV1BroadcasterOptions`].
#[deprecated(
    note = "renamed `EventsV1BroadcasterOptions`, apart from the core/v1 `BroadcasterOptions`"
)]
pub type BroadcasterOptions = EventsV1BroadcasterOptions;
