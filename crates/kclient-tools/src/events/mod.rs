//! Kubernetes Events: client-go's `tools/record` (core/v1 Events, with the
//! [`EventCorrelator`]) and, in [`v1`], `tools/events` (events.k8s.io/v1 Events with
//! `EventSeries`).
//!
//! A controller makes one [`EventBroadcaster`], starts writing its events to the API server
//! with [`start_recording_to_sink`](EventBroadcaster::start_recording_to_sink) (any
//! [`EventSink`]; a `ResourceClient<Event>` is one), and hands out [`EventRecorder`]s. Recording
//! never blocks: [`EventRecorder::event`] puts the event on each watcher's bounded queue
//! (1000 events, client-go's `maxQueuedEvents`) or, when a queue is full, drops it and counts
//! the drop ([`EventBroadcaster::dropped_events`], [`EventMetrics`]). A background task
//! correlates each event — aggregation, deduplication into a count, spam filtering — and
//! writes it with client-go's retries (12 tries, 10 s apart, the first wait randomized).
//! [`shutdown`](EventBroadcaster::shutdown) writes what is still queued, within a timeout,
//! then stops.
//!
//! ```
//! use k8s_openapi::api::core::v1::{ConfigMap, Event};
//! use kclient_tools::events::{object_reference, new_broadcaster, EventType, MemorySink, Shutdown};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let broadcaster = new_broadcaster();
//! let sink = MemorySink::new();
//! broadcaster.start_recording_to_sink(sink.clone()).unwrap();
//! let recorder = broadcaster.new_recorder("my-controller", "node-1");
//!
//! let mut config = ConfigMap::default();
//! config.metadata.name = Some("settings".into());
//! config.metadata.namespace = Some("prod".into());
//! for _ in 0..3 {
//!     recorder.event(&object_reference(&config), EventType::Normal, "Synced", "settings applied");
//! }
//! assert_eq!(broadcaster.shutdown().await, Shutdown::Flushed);
//!
//! // One Event, counted three times.
//! let events = sink.events();
//! assert_eq!(events.len(), 1);
//! assert_eq!(events[0].count, Some(3));
//! assert_eq!(events[0].message.as_deref(), Some("settings applied"));
//! # }
//! ```
//!
//! Where client-go differs from this port, the item's documentation says so: mainly, server
//! errors that may pass (5xx, 429) are retried where client-go gives up on every `Status`
//! error, and [`shutdown`](EventBroadcaster::shutdown) writes the queued events first.

mod broadcaster;
mod clock;
mod correlator;
mod fanout;
mod lru;
mod recorder;
mod reference;
mod sink;
pub mod v1;

use std::fmt;
use std::str::FromStr;

pub use broadcaster::{
    new_broadcaster, BroadcasterOptions, EventBroadcaster, DEFAULT_SHUTDOWN_TIMEOUT,
    DEFAULT_SLEEP_DURATION, MAX_QUEUED_EVENTS, MAX_TRIES_PER_EVENT,
};
pub use correlator::{
    event_aggregator_by_reason, event_aggregator_by_reason_message, event_key, spam_key,
    Correlation, CorrelatorOptions, EventAggregator, EventAggregatorKeyFn,
    EventAggregatorMessageFn, EventCorrelator, EventSpamKeyFn, AGGREGATE_MESSAGE_PREFIX,
    DEFAULT_AGGREGATE_INTERVAL, DEFAULT_AGGREGATE_MAX_EVENTS, DEFAULT_SPAM_BURST, DEFAULT_SPAM_QPS,
    MAX_LRU_CACHE_ENTRIES,
};
pub use fanout::{EventMetrics, EventWatcher, Shutdown};
pub use recorder::EventRecorder;
pub use reference::{object_reference, object_reference_with};
pub use sink::{EventSink, MemorySink, SinkCall, SinkError, SinkFuture};

/// The type of an event (client-go's `v1.EventTypeNormal` and `v1.EventTypeWarning`).
///
/// client-go takes the type as a string and drops an event with any other type, logging
/// an error; here the recorders take this enum, so that an invalid type cannot be recorded,
/// and a type read as text is checked when it is parsed ([`EventError::InvalidEventType`]).
///
/// ```
/// use kclient_tools::events::{EventError, EventType};
///
/// assert_eq!("Warning".parse::<EventType>(), Ok(EventType::Warning));
/// assert!(matches!("Error".parse::<EventType>(), Err(EventError::InvalidEventType(_))));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Nothing to worry about.
    Normal,
    /// Something may be wrong.
    Warning,
}

impl EventType {
    /// The type as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EventType {
    type Err = EventError;

    /// `Normal` or `Warning`, exactly (client-go's `ValidateEventType`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "Normal" => Ok(EventType::Normal),
            "Warning" => Ok(EventType::Warning),
            other => Err(EventError::InvalidEventType(other.to_owned())),
        }
    }
}

/// What setting up event recording can fail with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EventError {
    /// An event type other than `Normal` and `Warning`.
    #[error("unsupported event type {0:?}: the types are Normal and Warning")]
    InvalidEventType(String),
    /// An option out of its range.
    #[error("invalid option {option}: {reason}")]
    InvalidOption {
        /// The option's name.
        option: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A background task was to be started outside a tokio runtime.
    #[error("event recording needs a tokio runtime: start it from within one")]
    NoRuntime,
    /// The broadcaster was shut down.
    #[error("the event broadcaster is shut down")]
    ShutDown,
}
