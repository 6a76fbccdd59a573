//! The core/v1 [`EventBroadcaster`] (client-go's `record.EventBroadcaster`): hands out
//! [`EventRecorder`]s and runs the watchers that write, log or handle their events.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, EventSource};

use super::clock::EventClock;
use super::correlator::{Correlation, CorrelatorOptions, EventCorrelator};
use super::fanout::{EventMetrics, EventWatcher, Fanout, Shutdown};
use super::recorder::EventRecorder;
use super::sink::{after_failure, patch_or_create, write_with_retries, Attempt, EventSink};
use super::EventError;

/// client-go's `maxTriesPerEvent`: writes of one event before giving up.
pub const MAX_TRIES_PER_EVENT: u32 = 12;
/// client-go's `defaultSleepDuration`: the wait between tries of a write (the first one
/// randomized between zero and this, so that clients do not retry in step).
pub const DEFAULT_SLEEP_DURATION: Duration = Duration::from_secs(10);
/// client-go's `maxQueuedEvents`: events each watcher queues before new ones are dropped.
pub const MAX_QUEUED_EVENTS: usize = 1000;
/// How long [`EventBroadcaster::shutdown`] lets the watchers write what is queued.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// How an [`EventBroadcaster`] works; [`Default`] gives client-go's values.
#[derive(Clone)]
pub struct BroadcasterOptions {
    /// The correlation of each sink's events (client-go's `WithCorrelatorOptions`).
    pub correlator: CorrelatorOptions,
    /// The wait between tries of a write (client-go's `WithSleepDuration`; 10 s).
    pub sleep_duration: Duration,
    /// Events each watcher queues before new ones are dropped (1000).
    pub queue_length: usize,
    /// Told of every dropped event.
    pub metrics: Option<Arc<dyn EventMetrics>>,
}

impl Default for BroadcasterOptions {
    fn default() -> Self {
        Self {
            correlator: CorrelatorOptions::default(),
            sleep_duration: DEFAULT_SLEEP_DURATION,
            queue_length: MAX_QUEUED_EVENTS,
            metrics: None,
        }
    }
}

impl fmt::Debug for BroadcasterOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BroadcasterOptions")
            .field("correlator", &self.correlator)
            .field("sleep_duration", &self.sleep_duration)
            .field("queue_length", &self.queue_length)
            .field("metrics", &self.metrics.is_some())
            .finish()
    }
}

/// client-go's `NewBroadcaster()`: an [`EventBroadcaster`] with the default options.
pub fn new_broadcaster() -> EventBroadcaster {
    EventBroadcaster::new()
}

/// Receives events from its [`EventRecorder`]s and hands them to its watchers: sinks
/// ([`start_recording_to_sink`](Self::start_recording_to_sink)), loggers and handlers.
/// Cloning shares it.
///
/// Watchers run as tokio tasks, so the `start_*` methods need a runtime
/// ([`EventError::NoRuntime`] otherwise). Events recorded while no watcher runs go nowhere,
/// as in client-go.
#[derive(Clone)]
pub struct EventBroadcaster {
    fanout: Fanout<Event>,
    options: Arc<BroadcasterOptions>,
    clock: EventClock,
}

impl fmt::Debug for EventBroadcaster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventBroadcaster")
            .field("options", &self.options)
            .field("dropped_events", &self.dropped_events())
            .finish()
    }
}

impl Default for EventBroadcaster {
    fn default() -> Self {
        Self::new()
    }
}

impl EventBroadcaster {
    /// A broadcaster with client-go's defaults.
    pub fn new() -> Self {
        Self::build(BroadcasterOptions::default())
    }

    /// A broadcaster with `options`, checked first ([`CorrelatorOptions::validate`], and a
    /// queue of at least one event).
    pub fn with_options(options: BroadcasterOptions) -> Result<Self, EventError> {
        options.correlator.validate()?;
        if options.queue_length == 0 {
            return Err(EventError::InvalidOption {
                option: "queue_length",
                reason: "must be at least 1".into(),
            });
        }
        Ok(Self::build(options))
    }

    fn build(options: BroadcasterOptions) -> Self {
        Self {
            fanout: Fanout::new(options.queue_length, options.metrics.clone()),
            options: Arc::new(options),
            clock: EventClock::new(),
        }
    }

    /// A recorder of events from `component` on `host` (client-go's `NewRecorder` with
    /// `EventSource{Component, Host}`; `host` may be empty).
    pub fn new_recorder(&self, component: &str, host: &str) -> EventRecorder {
        let non_empty = |s: &str| Some(s.to_owned()).filter(|s| !s.is_empty());
        let source = EventSource {
            component: non_empty(component),
            host: non_empty(host),
        };
        EventRecorder::new(self.fanout.clone(), source, self.clock)
    }

    /// Starts writing every event to `sink` (client-go's `StartRecordingToSink`): each is
    /// correlated ([`EventCorrelator`], one per sink) and then created, or patched when it
    /// repeats an Event already written, with up to [`MAX_TRIES_PER_EVENT`] tries. Events
    /// are written one at a time, in order.
    pub fn start_recording_to_sink(
        &self,
        sink: impl EventSink<Event>,
    ) -> Result<EventWatcher, EventError> {
        let options = self.options.clone();
        let clock = self.clock;
        self.fanout.start(move |mut events| async move {
            let mut correlator = EventCorrelator::build(&options.correlator, clock);
            while let Some(event) = events.recv().await {
                let write = record_to_sink(&sink, &mut correlator, event, options.sleep_duration);
                if events.unless_stopped(write).await.is_none() {
                    break;
                }
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

    /// Logs every event with `tracing` at the info level (client-go's
    /// `StartStructuredLogging`).
    pub fn start_structured_logging(&self) -> Result<EventWatcher, EventError> {
        self.start_event_watcher(|event| {
            let object = &event.involved_object;
            tracing::info!(
                object = %format_args!("{}/{}", object.namespace.as_deref().unwrap_or_default(), object.name.as_deref().unwrap_or_default()),
                field_path = object.field_path.as_deref().unwrap_or_default(),
                kind = object.kind.as_deref().unwrap_or_default(),
                api_version = object.api_version.as_deref().unwrap_or_default(),
                r#type = event.type_.as_deref().unwrap_or_default(),
                reason = event.reason.as_deref().unwrap_or_default(),
                message = event.message.as_deref().unwrap_or_default(),
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

    /// Stops taking events, lets the watchers write what is queued for at most `timeout`
    /// (retries included), then stops them; returns once they have stopped. Events recorded
    /// afterwards are dropped.
    ///
    /// client-go's `Shutdown` stops its watchers without waiting for their queues; flushing
    /// first is this port's addition, so that a controller exiting does not lose its last
    /// events.
    pub async fn shutdown_with_timeout(&self, timeout: Duration) -> Shutdown {
        self.fanout.shutdown(timeout).await
    }
}

/// client-go's `recordToSink`: correlates `event`, then writes it with retries, the first
/// wait randomized, and notes what the server stored in the correlator.
async fn record_to_sink(
    sink: &dyn EventSink<Event>,
    correlator: &mut EventCorrelator,
    event: Event,
    sleep: Duration,
) {
    let (event, patch) = match correlator.correlate(event) {
        Correlation::Skip => return,
        Correlation::Create(event) => (event, None),
        Correlation::Patch { event, patch } => (event, Some(patch)),
    };
    let (event, patch) = (&event, patch.as_ref());
    let delay = |tries: u32| {
        if tries == 1 {
            sleep.mul_f64(fastrand::f64())
        } else {
            sleep
        }
    };
    let written = write_with_retries(delay, || async move {
        match patch_or_create(sink, event, patch).await {
            Ok(stored) => Attempt::Written(stored),
            Err(error) => after_failure(&error, false),
        }
    })
    .await;
    if let Some(stored) = written {
        correlator.update_state(&stored);
    }
}
