//! Wall-clock time for events, read from tokio's clock, and client-go's event names.
//!
//! Events carry wall-clock timestamps (`firstTimestamp`, `eventTime` …), while every interval
//! decision (aggregation windows, spam buckets, series ends, retries) runs on tokio's clock.
//! [`EventClock`] ties the two together: it notes the wall time once and moves it forward with
//! tokio's [`Instant`], so a paused test clock drives the timestamps too.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use tokio::time::Instant;

/// Wall-clock time that advances with tokio's clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventClock {
    wall: Timestamp,
    at: Instant,
}

impl EventClock {
    /// A clock starting at the system's time now.
    pub(crate) fn new() -> Self {
        Self {
            wall: Timestamp::now(),
            at: Instant::now(),
        }
    }

    /// The wall-clock time now.
    pub(crate) fn now(&self) -> Timestamp {
        self.at_instant(Instant::now())
    }

    /// The wall-clock time of a tokio instant (instants before the clock's start read as its
    /// start).
    pub(crate) fn at_instant(&self, instant: Instant) -> Timestamp {
        let elapsed = instant.saturating_duration_since(self.at);
        let elapsed = SignedDuration::try_from(elapsed).unwrap_or(SignedDuration::MAX);
        self.wall.saturating_add(elapsed).unwrap_or(self.wall)
    }

    /// How long ago, on tokio's clock, the wall time `then` was (zero for the future).
    pub(crate) fn since(&self, then: Timestamp) -> Duration {
        let span = self.now().duration_since(then);
        Duration::try_from(span).unwrap_or(Duration::ZERO)
    }
}

/// The last nanosecond value handed out for a name, process-wide.
static LAST_NAME_NANOS: AtomicI64 = AtomicI64::new(i64::MIN);

/// client-go's `GenerateEventName`: `<object name>.<unix nanoseconds in hex>`, or a random
/// UUID when that is not a valid DNS subdomain (an object name with upper-case letters, or too
/// long).
///
/// The nanoseconds are made unique within the process (the next free value at or after
/// `at`): with a coarse or paused clock, two events about one object at one instant would
/// otherwise get one name, and the second create would fail with `AlreadyExists`.
pub(crate) fn event_name(object_name: &str, at: Timestamp) -> String {
    let wanted = i64::try_from(at.as_nanosecond()).unwrap_or(i64::MAX);
    let previous = LAST_NAME_NANOS
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
            Some(wanted.max(last.saturating_add(1)))
        })
        .unwrap_or(wanted);
    let nanos = wanted.max(previous.saturating_add(1));
    let name = format!("{object_name}.{nanos:x}");
    if is_dns_subdomain(&name) {
        name
    } else {
        random_uuid()
    }
}

/// The metadata of a new Event about `object` at `at` (both recorders'): an
/// [`event_name`], in the object's namespace, or `default` for a cluster-scoped object.
pub(crate) fn event_metadata(object: &ObjectReference, at: Timestamp) -> ObjectMeta {
    let namespace = object
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".to_owned());
    ObjectMeta {
        name: Some(event_name(object.name.as_deref().unwrap_or_default(), at)),
        namespace: Some(namespace),
        ..ObjectMeta::default()
    }
}

/// Kubernetes' `IsDNS1123Subdomain`: at most 253 characters, lower-case alphanumerics, `-`
/// and `.`, starting and ending with an alphanumeric.
fn is_dns_subdomain(name: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 253
        && alnum(bytes[0])
        && alnum(bytes[bytes.len() - 1])
        && bytes.iter().all(|&c| alnum(c) || c == b'-' || c == b'.')
}

/// A random (version 4) UUID in its textual form.
fn random_uuid() -> String {
    let mut bytes: [u8; 16] = std::array::from_fn(|_| fastrand::u8(..));
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn wall_time_follows_tokios_clock() {
        let clock = EventClock::new();
        let start = clock.now();
        tokio::time::advance(Duration::from_secs(90)).await;
        assert_eq!(
            clock.now().duration_since(start),
            SignedDuration::from_secs(90)
        );
        assert_eq!(clock.since(start), Duration::from_secs(90));
    }

    #[test]
    fn names_are_unique_and_valid() {
        let at = Timestamp::from_second(1_700_000_000).unwrap();
        let a = event_name("web", at);
        let b = event_name("web", at);
        assert_ne!(a, b, "one instant, two names");
        assert!(a.starts_with("web.") && is_dns_subdomain(&a), "{a}");
        let uuid = event_name("Not_A_Name", at);
        assert_eq!(uuid.len(), 36, "{uuid}");
        assert!(is_dns_subdomain(&uuid));
    }
}
