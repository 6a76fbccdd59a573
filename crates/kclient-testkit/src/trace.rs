//! The spans and events a test makes, captured while other tests of the same binary run beside
//! it.
//!
//! tracing decides once per callsite, process-wide, whether anyone is interested in it: the
//! first thread to reach a callsite asks the subscribers registered at that moment, and the
//! answer is cached. A subscriber set for one thread (`tracing::subscriber::set_default`) is
//! therefore unreliable when tests run in parallel: if another test's thread reaches a
//! callsite first while that subscriber is the only one registered, tracing asks the other
//! thread's default (none), caches "never", and the test's subscriber misses every span and
//! event of that callsite for the rest of the run. A test then fails once in a while, on
//! another machine.
//!
//! [`capture`] avoids this with one global subscriber, installed by the first capture, that is
//! interested in every callsite and gives each span and event to the capture open on the
//! thread that made it (a test's own thread, and its current-thread runtime). Other threads'
//! spans and events are dropped. The one moment left exposed is the installation itself: a
//! callsite that another thread is reaching for the very first time in those few instructions
//! may still cache its old answer. Every capture asks tracing to rebuild its cache when it
//! opens, so that only that instant of the first capture of a process is exposed.
//!
//! ```
//! let trace = kclient_testkit::trace::capture();
//! tracing::warn!(attempt = 2, "retrying");
//! let events = trace.events();
//! assert_eq!(events[0].level, tracing::Level::WARN);
//! assert_eq!(events[0].field("message"), Some("retrying"));
//! assert_eq!(events[0].field("attempt"), Some("2"));
//! ```

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Once;

use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record as SpanValues};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};

/// One span or event as it was made: its level, target, name and fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Its level.
    pub level: Level,
    /// Its target (by default, the module that made it).
    pub target: &'static str,
    /// Its name (a span's name; for an event, tracing's generated name).
    pub name: &'static str,
    /// Its fields in order, by name, as text: strings and `%value`s as they display, other
    /// values as they debug-print. An event's text is the field `message`.
    pub fields: Vec<(&'static str, String)>,
}

impl Record {
    /// The text of the field `name`, if it has one.
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(field, _)| *field == name)
            .map(|(_, value)| value.as_str())
    }
}

/// What a capture has seen so far.
#[derive(Default)]
struct Seen {
    spans: Vec<Record>,
    events: Vec<Record>,
}

thread_local! {
    /// The capture open on this thread.
    static OPEN: RefCell<Option<Rc<RefCell<Seen>>>> = const { RefCell::new(None) };
}

/// The spans and events made on this thread from [`capture`] until it is dropped.
///
/// Not `Send`: it captures the thread that opened it.
pub struct Capture {
    seen: Rc<RefCell<Seen>>,
}

/// Opens a capture of the spans and events made on this thread until it is dropped.
///
/// Panics if a capture is already open on this thread, or if another global subscriber was
/// set in this process.
pub fn capture() -> Capture {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        tracing::subscriber::set_global_default(ToOpenCapture::default())
            .expect("kclient_testkit::trace needs the process's global tracing subscriber");
    });
    tracing::callsite::rebuild_interest_cache();
    let seen = Rc::new(RefCell::new(Seen::default()));
    OPEN.with(|open| {
        let mut open = open.borrow_mut();
        assert!(
            open.is_none(),
            "a trace capture is already open on this thread"
        );
        *open = Some(Rc::clone(&seen));
    });
    Capture { seen }
}

impl Capture {
    /// The spans made so far, in order.
    pub fn spans(&self) -> Vec<Record> {
        self.seen.borrow().spans.clone()
    }

    /// The events made so far, in order.
    pub fn events(&self) -> Vec<Record> {
        self.seen.borrow().events.clone()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        OPEN.with(|open| open.borrow_mut().take());
    }
}

impl fmt::Debug for Capture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seen = self.seen.borrow();
        f.debug_struct("Capture")
            .field("spans", &seen.spans)
            .field("events", &seen.events)
            .finish()
    }
}

/// The global subscriber: interested in everything, it hands each span and event to the
/// capture open on the thread that made it.
#[derive(Default)]
struct ToOpenCapture {
    last_span: AtomicU64,
}

/// Hands `record` to the capture open on this thread, if any, with `store` choosing the list.
fn to_open_capture(
    store: impl FnOnce(&mut Seen) -> &mut Vec<Record>,
    record: impl FnOnce() -> Record,
) {
    OPEN.with(|open| {
        // `try_borrow`: a field's `Debug` that traces while it is being recorded is dropped,
        // not a panic.
        let Ok(open) = open.try_borrow() else { return };
        if let Some(seen) = open.as_ref() {
            if let Ok(mut seen) = seen.try_borrow_mut() {
                let record = record();
                store(&mut seen).push(record);
            }
        }
    });
}

impl Subscriber for ToOpenCapture {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::always()
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::TRACE)
    }

    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, attributes: &Attributes<'_>) -> Id {
        to_open_capture(
            |seen| &mut seen.spans,
            || {
                let mut fields = Fields::default();
                attributes.record(&mut fields);
                record_of(attributes.metadata(), fields)
            },
        );
        Id::from_u64(self.last_span.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, _: &Id, _: &SpanValues<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        to_open_capture(
            |seen| &mut seen.events,
            || {
                let mut fields = Fields::default();
                event.record(&mut fields);
                record_of(event.metadata(), fields)
            },
        );
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

fn record_of(metadata: &'static Metadata<'static>, fields: Fields) -> Record {
    Record {
        level: *metadata.level(),
        target: metadata.target(),
        name: metadata.name(),
        fields: fields.0,
    }
}

/// A span's or an event's fields as text.
#[derive(Default)]
struct Fields(Vec<(&'static str, String)>);

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push((field.name(), value.to_owned()));
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
        self.0.push((field.name(), format!("{value:?}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_and_events_of_this_thread_are_captured_and_others_are_not() {
        let trace = capture();
        let span = tracing::info_span!("reconcile", key = %"prod/web", attempt = 1u64);
        let _entered = span.enter();
        tracing::debug!(name = "web", "seen");
        std::thread::spawn(|| tracing::error!("elsewhere"))
            .join()
            .unwrap();
        let spans = trace.spans();
        assert_eq!(spans.len(), 1);
        assert_eq!(spans[0].name, "reconcile");
        assert_eq!(
            spans[0].fields,
            [("key", "prod/web".to_owned()), ("attempt", "1".to_owned())]
        );
        let events = trace.events();
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(events[0].level, Level::DEBUG);
        assert_eq!(events[0].field("name"), Some("web"));
        assert_eq!(events[0].field("message"), Some("seen"));
    }

    #[test]
    fn a_dropped_capture_sees_nothing_more_and_a_new_one_can_open() {
        let first = capture();
        tracing::info!("one");
        drop(first);
        tracing::info!("unseen");
        let second = capture();
        tracing::info!("two");
        let messages: Vec<_> = second
            .events()
            .iter()
            .map(|e| e.field("message").unwrap().to_owned())
            .collect();
        assert_eq!(messages, ["two"]);
    }
}
