//! client-go's `EventCorrelator` (`tools/record/events_cache.go`): aggregation,
//! deduplication and spam filtering of core/v1 events before they are written.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{json, Map, Value};
use tokio::time::Instant;

use super::clock::{event_name, EventClock};
use super::lru::Lru;
use super::EventError;

/// client-go's `maxLruCacheEntries`: the size of each of the correlator's caches.
pub const MAX_LRU_CACHE_ENTRIES: usize = 4096;
/// client-go's `defaultAggregateMaxEvents`: distinct similar events before aggregation.
pub const DEFAULT_AGGREGATE_MAX_EVENTS: usize = 10;
/// client-go's `defaultAggregateIntervalInSeconds`: the longest gap between similar events
/// that still counts them together.
pub const DEFAULT_AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);
/// client-go's `defaultSpamBurst`: events a source may send about an object at once.
pub const DEFAULT_SPAM_BURST: u32 = 25;
/// client-go's `defaultSpamQPS`: the refill rate of the spam filter, one event per 300 s.
pub const DEFAULT_SPAM_QPS: f64 = 1.0 / 300.0;
/// The prefix of aggregate messages ([`event_aggregator_by_reason_message`]).
pub const AGGREGATE_MESSAGE_PREFIX: &str = "(combined from similar events): ";

/// Groups events for aggregation: returns the aggregation key (the group) and the local key
/// (what makes an event distinct within the group) — client-go's `EventAggregatorKeyFunc`.
pub type EventAggregatorKeyFn = Arc<dyn Fn(&Event) -> (String, String) + Send + Sync>;
/// Makes the message of an aggregate event — client-go's `EventAggregatorMessageFunc`.
pub type EventAggregatorMessageFn = Arc<dyn Fn(&Event) -> String + Send + Sync>;
/// The key of the spam filter's token buckets — client-go's `EventSpamKeyFunc`.
pub type EventSpamKeyFn = Arc<dyn Fn(&Event) -> String + Send + Sync>;

/// How an [`EventCorrelator`] aggregates, deduplicates and filters (client-go's
/// `CorrelatorOptions`); [`Default`] gives client-go's defaults.
///
/// client-go reads a zero as "the default"; here the defaults are the `Default` values and a
/// zero (or a rate that is not a positive finite number) is refused with
/// [`EventError::InvalidOption`].
#[derive(Clone)]
pub struct CorrelatorOptions {
    /// Entries in each of the three caches (4096).
    pub lru_cache_size: usize,
    /// Tokens of each spam bucket (25).
    pub burst_size: u32,
    /// Refill rate of each spam bucket, in tokens per second (1/300).
    pub qps: f64,
    /// Groups events for aggregation ([`event_aggregator_by_reason`]).
    pub key_func: EventAggregatorKeyFn,
    /// Makes aggregate messages ([`event_aggregator_by_reason_message`]).
    pub message_func: EventAggregatorMessageFn,
    /// Distinct similar events within the interval before aggregation (10).
    pub max_events: usize,
    /// The longest gap between similar events that still counts them together (600 s).
    pub max_interval: Duration,
    /// Keys the spam buckets ([`spam_key`]).
    pub spam_key_func: EventSpamKeyFn,
}

impl Default for CorrelatorOptions {
    fn default() -> Self {
        Self {
            lru_cache_size: MAX_LRU_CACHE_ENTRIES,
            burst_size: DEFAULT_SPAM_BURST,
            qps: DEFAULT_SPAM_QPS,
            key_func: Arc::new(event_aggregator_by_reason),
            message_func: Arc::new(event_aggregator_by_reason_message),
            max_events: DEFAULT_AGGREGATE_MAX_EVENTS,
            max_interval: DEFAULT_AGGREGATE_INTERVAL,
            spam_key_func: Arc::new(spam_key),
        }
    }
}

impl fmt::Debug for CorrelatorOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CorrelatorOptions")
            .field("lru_cache_size", &self.lru_cache_size)
            .field("burst_size", &self.burst_size)
            .field("qps", &self.qps)
            .field("max_events", &self.max_events)
            .field("max_interval", &self.max_interval)
            .finish_non_exhaustive()
    }
}

impl CorrelatorOptions {
    /// Checks the numbers: every size and the interval must be positive, the rate a positive
    /// finite number.
    pub fn validate(&self) -> Result<(), EventError> {
        let invalid = |option: &'static str, reason: &str| {
            Err(EventError::InvalidOption {
                option,
                reason: reason.to_owned(),
            })
        };
        if self.lru_cache_size == 0 {
            return invalid("lru_cache_size", "must be at least 1");
        }
        if self.burst_size == 0 {
            return invalid("burst_size", "must be at least 1");
        }
        if !(self.qps.is_finite() && self.qps > 0.0) {
            return invalid("qps", "must be a positive finite number");
        }
        if self.max_events == 0 {
            return invalid("max_events", "must be at least 1");
        }
        if self.max_interval.is_zero() {
            return invalid("max_interval", "must be positive");
        }
        Ok(())
    }
}

fn text(value: &Option<String>) -> &str {
    value.as_deref().unwrap_or_default()
}

/// The source, the object (its field path only `with_field_path`) and the type of `event`,
/// concatenated: where every key of the correlator starts.
fn source_object_type(event: &Event, with_field_path: bool) -> String {
    let source = event.source.clone().unwrap_or_default();
    let object = &event.involved_object;
    let field_path = if with_field_path {
        text(&object.field_path)
    } else {
        ""
    };
    [
        text(&source.component),
        text(&source.host),
        text(&object.kind),
        text(&object.namespace),
        text(&object.name),
        field_path,
        text(&object.uid),
        text(&object.api_version),
        text(&event.type_),
    ]
    .concat()
}

/// client-go's `getEventKey`: source, object (field path included), type, reason and
/// message — what makes two events the same event.
pub fn event_key(event: &Event) -> String {
    let start = source_object_type(event, true);
    [start.as_str(), text(&event.reason), text(&event.message)].concat()
}

/// client-go's `getSpamKey`: source, object (without field path) and type — what shares one
/// spam bucket.
pub fn spam_key(event: &Event) -> String {
    source_object_type(event, false)
}

/// client-go's `EventAggregatorByReasonFunc`: groups by source, object, type, reason and
/// reporting controller and instance; the message is the local key.
pub fn event_aggregator_by_reason(event: &Event) -> (String, String) {
    let key = [
        spam_key(event).as_str(),
        text(&event.reason),
        text(&event.reporting_component),
        text(&event.reporting_instance),
    ]
    .concat();
    (key, text(&event.message).to_owned())
}

/// client-go's `EventAggregatorByReasonMessageFunc`: the message prefixed with
/// `"(combined from similar events): "`.
pub fn event_aggregator_by_reason_message(event: &Event) -> String {
    format!("{AGGREGATE_MESSAGE_PREFIX}{}", text(&event.message))
}

/// A passive token bucket (golang.org/x/time/rate's `Limiter` as client-go's
/// `NewTokenBucketPassiveRateLimiter` uses it): starts full, refills continuously.
#[derive(Debug, Clone)]
struct TokenBucket {
    tokens: f64,
    updated: Instant,
}

impl TokenBucket {
    fn try_accept(&mut self, now: Instant, burst: u32, qps: f64) -> bool {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * qps).min(f64::from(burst));
        self.updated = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// client-go's `EventSourceObjectSpamFilter`.
struct SpamFilter {
    buckets: Lru<String, TokenBucket>,
    burst: u32,
    qps: f64,
    key_func: EventSpamKeyFn,
}

impl SpamFilter {
    /// Whether `event` is spam (its bucket is empty); takes a token otherwise.
    fn is_spam(&mut self, event: &Event, now: Instant) -> bool {
        let key = (self.key_func)(event);
        let mut bucket = self.buckets.get(&key).cloned().unwrap_or(TokenBucket {
            tokens: f64::from(self.burst),
            updated: now,
        });
        let spam = !bucket.try_accept(now, self.burst, self.qps);
        self.buckets.add(key, bucket);
        spam
    }
}

/// What the aggregator remembers of a group of similar events.
struct AggregateRecord {
    local_keys: HashSet<String>,
    last_seen: Instant,
}

/// client-go's `EventAggregator`: turns the (max_events)th distinct similar event within the
/// interval, and each one after it, into an aggregate event.
pub struct EventAggregator {
    records: Lru<String, AggregateRecord>,
    key_func: EventAggregatorKeyFn,
    message_func: EventAggregatorMessageFn,
    max_events: usize,
    max_interval: Duration,
}

impl fmt::Debug for EventAggregator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventAggregator")
            .field("max_events", &self.max_events)
            .field("max_interval", &self.max_interval)
            .finish_non_exhaustive()
    }
}

impl EventAggregator {
    fn new(options: &CorrelatorOptions) -> Self {
        Self {
            records: Lru::new(options.lru_cache_size),
            key_func: options.key_func.clone(),
            message_func: options.message_func.clone(),
            max_events: options.max_events,
            max_interval: options.max_interval,
        }
    }

    /// client-go's `EventAggregate`: the event to record (the event itself, or a new aggregate
    /// event) and the key to deduplicate it under (its [`event_key`], or the aggregation key
    /// for an aggregate, so that later aggregates count up the same Event).
    fn aggregate(&mut self, event: &Event, now: Instant, clock: &EventClock) -> (Event, String) {
        let full_key = event_key(event);
        let (aggregate_key, local_key) = (self.key_func)(event);
        let fresh = || AggregateRecord {
            local_keys: HashSet::new(),
            last_seen: now,
        };
        if self.records.get(&aggregate_key).is_none() {
            self.records.add(aggregate_key.clone(), fresh());
        }
        let Some(record) = self.records.get(&aggregate_key) else {
            return (event.clone(), full_key);
        };
        // A gap longer than the interval starts the group afresh (exactly the interval does not).
        if now.saturating_duration_since(record.last_seen) > self.max_interval {
            *record = fresh();
        }
        record.local_keys.insert(local_key);
        record.last_seen = now;
        if record.local_keys.len() < self.max_events {
            return (event.clone(), full_key);
        }
        // Keep the set below the threshold so that the next similar event aggregates again.
        if let Some(any) = record.local_keys.iter().next().cloned() {
            record.local_keys.remove(&any);
        }
        let at = Time(clock.at_instant(now));
        let object = event.involved_object.clone();
        let aggregate = Event {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(event_name(text(&object.name), at.0)),
                namespace: event.metadata.namespace.clone(),
                ..Default::default()
            },
            count: Some(1),
            first_timestamp: Some(at.clone()),
            involved_object: object,
            last_timestamp: Some(at),
            message: Some((self.message_func)(event)),
            type_: event.type_.clone(),
            reason: event.reason.clone(),
            source: event.source.clone(),
            ..Default::default()
        };
        (aggregate, aggregate_key)
    }
}

/// What the deduplication step remembers of an Event it has seen.
#[derive(Debug, Clone)]
struct EventLog {
    count: i32,
    first_timestamp: Option<Time>,
    name: Option<String>,
    resource_version: Option<String>,
}

impl EventLog {
    fn of(event: &Event) -> Self {
        Self {
            count: event.count.unwrap_or(0),
            first_timestamp: event.first_timestamp.clone(),
            name: event.metadata.name.clone(),
            resource_version: event.metadata.resource_version.clone(),
        }
    }
}

/// What to do with an event, as the correlator decided (client-go's `EventCorrelateResult`).
#[derive(Debug, Clone, PartialEq)]
pub enum Correlation {
    /// Spam: do not write it.
    Skip,
    /// A new Event: create it.
    Create(Event),
    /// An Event seen before (`count` > 1): apply `patch` (a strategic merge patch of `count`,
    /// `lastTimestamp` and `message`) to the existing Event named in `event`, creating
    /// `event` instead if it is gone.
    Patch {
        /// The Event as it is now, name and `firstTimestamp` those of its first occurrence.
        event: Event,
        /// The patch body.
        patch: Value,
    },
}

/// client-go's `EventCorrelator` (`tools/record/events_cache.go`): what the core/v1
/// broadcaster does to every event before writing it, so that a busy controller does not
/// flood the API server.
///
/// Three steps, in this order, each with its own least-recently-used cache of
/// [`lru_cache_size`](CorrelatorOptions::lru_cache_size) entries (4096):
///
/// 1. **Aggregation** ([`EventAggregator`]): events that differ only in their message
///    (same source, object, type, reason — the [`key_func`](CorrelatorOptions::key_func)) are
///    counted per aggregation key; once [`max_events`](CorrelatorOptions::max_events) (10)
///    distinct messages were seen with no gap longer than
///    [`max_interval`](CorrelatorOptions::max_interval) (600 s), each further one becomes one
///    aggregate event, `"(combined from similar events): <message>"`, keyed without the
///    message so that it is counted instead of created again.
/// 2. **Deduplication**: an event seen before (same [`event_key`], the message included) is
///    not created again: its count is incremented, its `lastTimestamp` moved, and it is
///    written as a strategic merge PATCH of the Event that already exists
///    ([`Correlation::Patch`]).
/// 3. **Spam filtering**: a token bucket per source and object ([`spam_key`]), starting full
///    with [`burst_size`](CorrelatorOptions::burst_size) (25) tokens and refilled at
///    [`qps`](CorrelatorOptions::qps) (one every 300 s); an event finding it empty is
///    skipped ([`Correlation::Skip`]).
///
/// All intervals are measured on tokio's clock.
///
/// ```
/// use k8s_openapi::api::core::v1::{Event, ObjectReference};
/// use kclient_tools::events::{Correlation, EventCorrelator};
///
/// let mut correlator = EventCorrelator::default();
/// let event = Event {
///     involved_object: ObjectReference { kind: Some("Pod".into()), name: Some("web".into()), ..Default::default() },
///     reason: Some("BackOff".into()),
///     message: Some("restarting".into()),
///     count: Some(1),
///     ..Default::default()
/// };
/// assert!(matches!(correlator.correlate(event.clone()), Correlation::Create(_)));
/// match correlator.correlate(event) {
///     Correlation::Patch { event, patch } => {
///         assert_eq!(event.count, Some(2));
///         assert_eq!(patch["count"], 2);
///     }
///     other => panic!("expected a patch, got {other:?}"),
/// }
/// ```
pub struct EventCorrelator {
    aggregator: EventAggregator,
    observed: Lru<String, EventLog>,
    spam: SpamFilter,
    clock: EventClock,
}

impl fmt::Debug for EventCorrelator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventCorrelator")
            .field("aggregator", &self.aggregator)
            .finish_non_exhaustive()
    }
}

impl Default for EventCorrelator {
    /// A correlator with client-go's defaults (`NewEventCorrelator`).
    fn default() -> Self {
        Self::build(&CorrelatorOptions::default(), EventClock::new())
    }
}

impl EventCorrelator {
    /// A correlator with `options` (client-go's `NewEventCorrelatorWithOptions`).
    pub fn new(options: CorrelatorOptions) -> Result<Self, EventError> {
        options.validate()?;
        Ok(Self::build(&options, EventClock::new()))
    }

    pub(crate) fn build(options: &CorrelatorOptions, clock: EventClock) -> Self {
        Self {
            aggregator: EventAggregator::new(options),
            observed: Lru::new(options.lru_cache_size),
            spam: SpamFilter {
                buckets: Lru::new(options.lru_cache_size),
                burst: options.burst_size,
                qps: options.qps,
                key_func: options.spam_key_func.clone(),
            },
            clock,
        }
    }

    /// Aggregates, deduplicates and filters `event` (client-go's `EventCorrelate`), now on
    /// tokio's clock.
    pub fn correlate(&mut self, event: Event) -> Correlation {
        let now = Instant::now();
        let (event, key) = self.aggregator.aggregate(&event, now, &self.clock);
        let (event, patch) = self.observe(event, key);
        if self.spam.is_spam(&event, now) {
            return Correlation::Skip;
        }
        match patch {
            Some(patch) => Correlation::Patch { event, patch },
            None => Correlation::Create(event),
        }
    }

    /// Notes the Event as the server returned it (its name, resourceVersion and count) under
    /// its [`event_key`] (client-go's `UpdateState`).
    pub fn update_state(&mut self, event: &Event) {
        self.observed.add(event_key(event), EventLog::of(event));
    }

    /// client-go's `eventObserve`: the event with the name, resourceVersion, first timestamp
    /// and next count of an earlier occurrence under `key`, and the patch that moves the
    /// stored Event there; the event itself and no patch for a first occurrence.
    fn observe(&mut self, mut event: Event, key: String) -> (Event, Option<Value>) {
        let mut patch = None;
        if let Some(last) = self.observed.get(&key).filter(|last| last.count > 0) {
            event.metadata.name = last.name.clone();
            event.metadata.resource_version = last.resource_version.clone();
            event.first_timestamp = last.first_timestamp.clone();
            event.count = Some(last.count.saturating_add(1));
            patch = Some(count_patch(&event));
        }
        self.observed.add(key, EventLog::of(&event));
        (event, patch)
    }
}

/// The two-way merge patch client-go computes from the event with `count` 0, `lastTimestamp`
/// at the Unix epoch and no message to the event itself: `count`, `lastTimestamp` and, when
/// there is one, `message`.
fn count_patch(event: &Event) -> Value {
    let mut patch = Map::new();
    patch.insert("count".into(), json!(event.count.unwrap_or(0)));
    patch.insert(
        "lastTimestamp".into(),
        serde_json::to_value(&event.last_timestamp).unwrap_or(Value::Null),
    );
    if let Some(message) = event.message.as_deref().filter(|m| !m.is_empty()) {
        patch.insert("message".into(), json!(message));
    }
    Value::Object(patch)
}
