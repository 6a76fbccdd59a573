//! The core/v1 [`EventRecorder`] (client-go's `record.EventRecorder`): makes Events about
//! objects and queues them on its broadcaster without ever waiting.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use super::clock::{event_metadata, EventClock};
use super::fanout::Fanout;
use super::EventType;

/// Records events on behalf of one source (a component on a host); made by
/// [`EventBroadcaster::new_recorder`](super::EventBroadcaster::new_recorder), cheap to clone.
///
/// Every method returns at once: the event goes onto the broadcaster's queues, or is dropped
/// and counted when they are full. Each event is created in the namespace of the object it
/// is about (`default` for cluster-scoped objects), named `<object name>.<unix nanoseconds
/// in hex>`.
#[derive(Clone)]
pub struct EventRecorder {
    fanout: Fanout<Event>,
    source: EventSource,
    clock: EventClock,
}

impl fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventRecorder")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl EventRecorder {
    pub(crate) fn new(fanout: Fanout<Event>, source: EventSource, clock: EventClock) -> Self {
        Self {
            fanout,
            source,
            clock,
        }
    }

    /// Records an event about `object` (build the reference with
    /// [`object_reference`](super::object_reference)): `reason` is a short UpperCamelCase
    /// word that programs may switch on, `message` is for people.
    pub fn event(&self, object: &ObjectReference, type_: EventType, reason: &str, message: &str) {
        self.generate(object, BTreeMap::new(), type_, reason, message.to_owned());
    }

    /// [`event`](Self::event) with a formatted message (client-go's `Eventf`):
    /// `recorder.eventf(&reference, EventType::Normal, "Scaled", format_args!("to {replicas}"))`.
    pub fn eventf(
        &self,
        object: &ObjectReference,
        type_: EventType,
        reason: &str,
        message: fmt::Arguments<'_>,
    ) {
        self.generate(object, BTreeMap::new(), type_, reason, message.to_string());
    }

    /// [`eventf`](Self::eventf) with annotations on the Event (client-go's
    /// `AnnotatedEventf`).
    pub fn annotated_eventf(
        &self,
        object: &ObjectReference,
        annotations: BTreeMap<String, String>,
        type_: EventType,
        reason: &str,
        message: fmt::Arguments<'_>,
    ) {
        self.generate(object, annotations, type_, reason, message.to_string());
    }

    /// client-go's `generateEvent`: makes the Event (client-go's `makeEvent`, with the source
    /// and reporting fields) and hands it to the watchers.
    fn generate(
        &self,
        object: &ObjectReference,
        annotations: BTreeMap<String, String>,
        type_: EventType,
        reason: &str,
        message: String,
    ) {
        let now = self.clock.now();
        let event = Event {
            metadata: ObjectMeta {
                annotations: Some(annotations).filter(|a| !a.is_empty()),
                ..event_metadata(object, now)
            },
            involved_object: object.clone(),
            reason: Some(reason.to_owned()),
            message: Some(message),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            count: Some(1),
            type_: Some(type_.as_str().to_owned()),
            source: Some(self.source.clone()),
            reporting_component: self.source.component.clone(),
            reporting_instance: self.source.host.clone(),
            ..Event::default()
        };
        self.fanout.emit(event);
    }
}
