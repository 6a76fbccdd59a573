//! [`WatchEvent`]: one event of a watch stream (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`,
//! `ERROR`), and its decoding from the API server's JSON frames.
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kclient_core::WatchEvent;
//!
//! let frame = br#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"5"}}}"#;
//! match WatchEvent::<ConfigMap>::from_json(frame).unwrap() {
//!     WatchEvent::Added(cm) => assert_eq!(cm.metadata.name.as_deref(), Some("a")),
//!     other => panic!("unexpected {other:?}"),
//! }
//!
//! let bookmark = br#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}"#;
//! let event = WatchEvent::<ConfigMap>::from_json(bookmark).unwrap();
//! assert_eq!(event.resource_version(), Some("12"));
//! assert!(matches!(event, WatchEvent::Bookmark(b) if b.is_initial_events_end()));
//! ```

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::marker::PhantomData;

use serde::de::{DeserializeSeed, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::json_text::members;
use crate::managed_fields::{strip_managed_fields, Key};

use crate::resource::Resource;
use crate::snippet::snippet;
use crate::status::Status;

/// The annotation on the bookmark that ends the initial events of a streaming list
/// (`sendInitialEvents=true`).
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// One event of a watch.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent<K> {
    /// An object was created (or, in the initial events of a watch, already existed).
    Added(K),
    /// An object was changed.
    Modified(K),
    /// An object was deleted; this is its last state.
    Deleted(K),
    /// A progress notification: the watch has seen everything up to this resourceVersion.
    Bookmark(Bookmark),
    /// The server ended the watch with an error, typically `410 Gone` for a resourceVersion too
    /// old to resume from.
    Error(Status),
}

/// The payload of a `BOOKMARK` event: a resourceVersion and the object's annotations, and
/// nothing else (bookmarks carry an object of the watched kind with only these fields set, so
/// they are not decoded as `K`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Bookmark {
    /// The resourceVersion the watch has reached.
    pub resource_version: String,
    /// The bookmark object's annotations, such as [`INITIAL_EVENTS_END_ANNOTATION`].
    pub annotations: BTreeMap<String, String>,
}

impl Bookmark {
    /// Whether this bookmark ends the initial events of a streaming list.
    pub fn is_initial_events_end(&self) -> bool {
        self.annotations
            .get(INITIAL_EVENTS_END_ANNOTATION)
            .is_some_and(|v| v == "true")
    }
}

/// A watch frame that could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum WatchDecodeError {
    /// The frame is not valid JSON, or its object does not fit the expected type.
    #[error("malformed watch event ({what}): {source}; frame starts with {snippet:?}")]
    Json {
        /// Which part failed: the envelope or the object of a given event type.
        what: &'static str,
        /// The JSON error, with line and column.
        source: serde_json::Error,
        /// The first bytes of the frame, for diagnosis.
        snippet: String,
    },
    /// The event's `type` is none of the five the API defines.
    #[error("unknown watch event type {0:?}")]
    UnknownType(String),
    /// A frame grew beyond the decoder's limit before it was complete.
    #[error("watch frame exceeds the {limit}-byte limit")]
    FrameTooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The stream ended in the middle of a frame.
    #[error("watch stream ended inside a frame ({buffered} bytes buffered)")]
    Truncated {
        /// How many bytes of the incomplete frame were buffered.
        buffered: usize,
    },
    /// A protobuf frame (`application/vnd.kubernetes.protobuf;stream=watch`) could not be
    /// decoded: a malformed event, an object of another kind, a frame over the limit.
    #[error("malformed protobuf watch event: {message}")]
    Protobuf {
        /// What failed, with the path of the field.
        message: String,
    },
    /// Bytes between frames that cannot start a JSON object.
    #[error("unexpected byte {byte:#04x} between watch frames at offset {offset}")]
    UnexpectedByte {
        /// The byte.
        byte: u8,
        /// Its offset in the stream.
        offset: u64,
    },
}

/// The longest prefix of a frame that errors quote.
const SNIPPET_LEN: usize = 120;

#[derive(Deserialize)]
struct BookmarkObject {
    #[serde(default)]
    metadata: BookmarkMeta,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct BookmarkMeta {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

impl From<BookmarkObject> for Bookmark {
    fn from(b: BookmarkObject) -> Self {
        Bookmark {
            resource_version: b.metadata.resource_version.unwrap_or_default(),
            annotations: b.metadata.annotations.unwrap_or_default(),
        }
    }
}

/// The part of a frame being decoded, for errors.
fn part_of(event_type: &str) -> &'static str {
    match event_type {
        "ADDED" => "ADDED object",
        "MODIFIED" => "MODIFIED object",
        "DELETED" => "DELETED object",
        "BOOKMARK" => "BOOKMARK object",
        "ERROR" => "ERROR object",
        _ => "envelope",
    }
}

impl<K> WatchEvent<K> {
    /// Decodes one JSON watch frame: `{"type": "...", "object": {...}}`.
    ///
    /// In one pass when `type` comes before `object`, as the API server writes them: the
    /// object is decoded straight from the frame as a `K`. Otherwise (and for a bookmark or
    /// an error, whose objects are not `K`s) the object is first delimited, then decoded.
    pub fn from_json(frame: &[u8]) -> Result<Self, WatchDecodeError>
    where
        K: serde::de::DeserializeOwned,
    {
        Self::decode(frame, false)
    }

    /// [`from_json`](Self::from_json), with the object decoded without
    /// `metadata.managedFields` (see [`managed_fields`](crate::managed_fields)).
    pub fn from_json_without_managed_fields(frame: &[u8]) -> Result<Self, WatchDecodeError>
    where
        K: serde::de::DeserializeOwned,
    {
        Self::decode(frame, true)
    }

    fn decode(frame: &[u8], omit_managed_fields: bool) -> Result<Self, WatchDecodeError>
    where
        K: serde::de::DeserializeOwned,
    {
        let part = Cell::new("envelope");
        let json_err = |source| WatchDecodeError::Json {
            what: part.get(),
            source,
            snippet: snippet(frame, SNIPPET_LEN),
        };
        // The object's managedFields are cut out of its text before it is decoded: delimit it
        // first (a frame that is not as expected is left to the envelope's decoder to say).
        let delimited = match omit_managed_fields {
            true => delimit(frame),
            false => None,
        };
        let (event_type, object) = match delimited {
            Some(delimited) => delimited,
            None => {
                let mut deserializer = serde_json::Deserializer::from_slice(frame);
                let decoded = serde::Deserializer::deserialize_map(
                    &mut deserializer,
                    EventVisitor::<K> {
                        part: &part,
                        omit_managed_fields,
                        _kind: PhantomData,
                    },
                )
                .and_then(|decoded| deserializer.end().map(|()| decoded))
                .map_err(json_err)?;
                match decoded {
                    Decoded::Event(event) => return Ok(event),
                    Decoded::UnknownType(t) => return Err(WatchDecodeError::UnknownType(t)),
                    // The frame was just read whole: one object with one `object` member.
                    Decoded::Deferred { event_type } => {
                        (Cow::Owned(event_type), delimit_object(frame))
                    }
                }
            }
        };
        part.set(part_of(&event_type));
        let object = match omit_managed_fields {
            true => strip_managed_fields(object),
            false => Cow::Borrowed(object),
        };
        if let Some(event) = decode_kind_free(&event_type, &object) {
            return event.map(Into::into).map_err(json_err);
        }
        let mut deserializer = serde_json::Deserializer::from_slice(&object);
        let event = Self::object_of(&event_type, &mut deserializer)
            .and_then(|event| deserializer.end().map(|()| event))
            .map_err(json_err)?;
        event.ok_or_else(|| WatchDecodeError::UnknownType(event_type.into_owned()))
    }

    /// The event of type `event_type` with its object, a `K`, decoded from `deserializer`;
    /// `None` for an unknown type (its object skipped). Bookmarks and errors are decoded
    /// apart ([`decode_kind_free`]).
    fn object_of<'de, D: serde::Deserializer<'de>>(
        event_type: &str,
        deserializer: D,
    ) -> Result<Option<Self>, D::Error>
    where
        K: serde::de::DeserializeOwned,
    {
        Ok(Some(match event_type {
            "ADDED" => Self::Added(K::deserialize(deserializer)?),
            "MODIFIED" => Self::Modified(K::deserialize(deserializer)?),
            "DELETED" => Self::Deleted(K::deserialize(deserializer)?),
            _ => {
                IgnoredAny::deserialize(deserializer)?;
                return Ok(None);
            }
        }))
    }

    /// The event type as the API spells it (`ADDED`, ...).
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Added(_) => "ADDED",
            Self::Modified(_) => "MODIFIED",
            Self::Deleted(_) => "DELETED",
            Self::Bookmark(_) => "BOOKMARK",
            Self::Error(_) => "ERROR",
        }
    }

    /// The object of an `ADDED`, `MODIFIED` or `DELETED` event.
    pub fn object(&self) -> Option<&K> {
        match self {
            Self::Added(k) | Self::Modified(k) | Self::Deleted(k) => Some(k),
            Self::Bookmark(_) | Self::Error(_) => None,
        }
    }

    /// The same event with its object transformed (for example wrapped in an `Arc`).
    pub fn map<T>(self, f: impl FnOnce(K) -> T) -> WatchEvent<T> {
        match self {
            Self::Added(k) => WatchEvent::Added(f(k)),
            Self::Modified(k) => WatchEvent::Modified(f(k)),
            Self::Deleted(k) => WatchEvent::Deleted(f(k)),
            Self::Bookmark(b) => WatchEvent::Bookmark(b),
            Self::Error(s) => WatchEvent::Error(s),
        }
    }
}

/// A frame's event type and its object's text, found without decoding; `None` when the frame
/// is not one well-formed object with a string `type` and an `object`.
fn delimit(frame: &[u8]) -> Option<(Cow<'_, str>, &[u8])> {
    let [event_type, object] = members(frame, ["type", "object"])?;
    let Key(event_type) = serde_json::from_slice(event_type?).ok()?;
    Some((event_type, object?))
}

/// The text of the `object` member of a frame already checked to have one.
fn delimit_object(frame: &[u8]) -> &[u8] {
    members(frame, ["object"])
        .and_then(|[object]| object)
        .unwrap_or_default()
}

/// Whether events of `event_type` carry an object that is not the watched kind's.
fn is_kind_free(event_type: &str) -> bool {
    matches!(event_type, "BOOKMARK" | "ERROR")
}

/// A bookmark's or an error's object decoded from its text; `None` for another type. Not
/// generic, so that its decoding is compiled once, here, rather than once per kind in each
/// program that watches (`docs/architecture.md`, "Compiled once").
fn decode_kind_free(
    event_type: &str,
    object: &[u8],
) -> Option<Result<KindFreeEvent, serde_json::Error>> {
    match event_type {
        "BOOKMARK" => Some(
            serde_json::from_slice::<BookmarkObject>(object)
                .map(|bookmark| KindFreeEvent::Bookmark(bookmark.into())),
        ),
        "ERROR" => Some(serde_json::from_slice(object).map(KindFreeEvent::Error)),
        _ => None,
    }
}

/// An event whose object is not the watched kind's.
enum KindFreeEvent {
    Bookmark(Bookmark),
    Error(Status),
}

impl<K> From<KindFreeEvent> for WatchEvent<K> {
    fn from(event: KindFreeEvent) -> Self {
        match event {
            KindFreeEvent::Bookmark(bookmark) => Self::Bookmark(bookmark),
            KindFreeEvent::Error(status) => Self::Error(status),
        }
    }
}

/// What one pass over a frame found.
enum Decoded<K> {
    Event(WatchEvent<K>),
    UnknownType(String),
    /// `object` came before `type`, its managedFields are to be cut out of its text, or it is
    /// a bookmark's or an error's: checked to be JSON, not yet decoded (its text is found
    /// again in the frame).
    Deferred {
        event_type: String,
    },
}

/// Reads the envelope, decoding the object in place once its type is known (unless its
/// managedFields are to be cut out of its text first).
struct EventVisitor<'p, K> {
    /// The part being decoded, for errors.
    part: &'p Cell<&'static str>,
    omit_managed_fields: bool,
    _kind: PhantomData<fn() -> K>,
}

impl<'de, K: serde::de::DeserializeOwned> Visitor<'de> for EventVisitor<'_, K> {
    type Value = Decoded<K>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a watch event")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut event_type: Option<Cow<'de, str>> = None;
        let mut event: Option<Option<WatchEvent<K>>> = None;
        let mut skipped_object = false;
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            match key.as_ref() {
                "type" => {
                    if event_type.is_some() {
                        return Err(A::Error::duplicate_field("type"));
                    }
                    event_type = Some(map.next_value::<Key<'de>>()?.0);
                }
                "object" => {
                    if event.is_some() || skipped_object {
                        return Err(A::Error::duplicate_field("object"));
                    }
                    match event_type.as_deref() {
                        Some(t) if !self.omit_managed_fields && !is_kind_free(t) => {
                            self.part.set(part_of(t));
                            event = Some(map.next_value_seed(ObjectOf::<K> {
                                event_type: t,
                                _kind: PhantomData,
                            })?);
                            self.part.set("envelope");
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                            skipped_object = true;
                        }
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let event_type = event_type.ok_or_else(|| A::Error::missing_field("type"))?;
        match (event, skipped_object) {
            (Some(Some(event)), _) => Ok(Decoded::Event(event)),
            (Some(None), _) => Ok(Decoded::UnknownType(event_type.into_owned())),
            (None, true) => Ok(Decoded::Deferred {
                event_type: event_type.into_owned(),
            }),
            (None, false) => Err(A::Error::missing_field("object")),
        }
    }
}

/// The object of an event whose type is known.
struct ObjectOf<'t, K> {
    event_type: &'t str,
    _kind: PhantomData<fn() -> K>,
}

impl<'de, K: serde::de::DeserializeOwned> DeserializeSeed<'de> for ObjectOf<'_, K> {
    type Value = Option<WatchEvent<K>>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        WatchEvent::object_of(self.event_type, deserializer)
    }
}

impl<K: Resource> WatchEvent<K> {
    /// The resourceVersion this event moves the watch to: the object's for object events, the
    /// bookmark's for bookmarks, none for errors.
    pub fn resource_version(&self) -> Option<&str> {
        match self {
            Self::Added(k) | Self::Modified(k) | Self::Deleted(k) => {
                k.meta().resource_version.as_deref()
            }
            Self::Bookmark(b) => Some(&b.resource_version),
            Self::Error(_) => None,
        }
    }
}

impl<K: Serialize> WatchEvent<K> {
    /// Encodes the event as the API server does: one JSON object, without a trailing newline.
    /// A bookmark's object carries only `metadata`; add `apiVersion`/`kind` on the server side
    /// if a peer needs them.
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        #[derive(Serialize)]
        struct Out<'a, T: Serialize> {
            #[serde(rename = "type")]
            event_type: &'static str,
            object: &'a T,
        }
        let event_type = self.type_name();
        match self {
            Self::Added(k) | Self::Modified(k) | Self::Deleted(k) => serde_json::to_vec(&Out {
                event_type,
                object: k,
            }),
            Self::Bookmark(b) => {
                let object = serde_json::json!({"metadata": {
                    "resourceVersion": b.resource_version,
                    "annotations": b.annotations,
                }});
                serde_json::to_vec(&Out {
                    event_type,
                    object: &object,
                })
            }
            Self::Error(s) => serde_json::to_vec(&Out {
                event_type,
                object: s,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    use super::*;
    use crate::dynamic_object::DynamicObject;
    use crate::status::StatusReason;

    fn frame(v: serde_json::Value) -> Vec<u8> {
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn decodes_every_event_type() {
        let pod = json!({"metadata": {"name": "p", "resourceVersion": "3"}});
        for (t, check) in [
            ("ADDED", "Added"),
            ("MODIFIED", "Modified"),
            ("DELETED", "Deleted"),
        ] {
            let e =
                WatchEvent::<Pod>::from_json(&frame(json!({"type": t, "object": pod}))).unwrap();
            assert_eq!(format!("{e:?}").split('(').next().unwrap(), check);
            assert_eq!(e.resource_version(), Some("3"));
            assert_eq!(e.type_name(), t);
        }
        let e = WatchEvent::<Pod>::from_json(&frame(json!({"type": "ERROR", "object": {
            "kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": "too old resource version: 1 (20)", "reason": "Expired", "code": 410
        }})))
        .unwrap();
        match e {
            WatchEvent::Error(s) => {
                assert_eq!(s.reason, StatusReason::Expired);
                assert_eq!(s.code, 410);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bookmarks_need_not_fit_the_type() {
        // A bookmark object lacks fields a strict type might require.
        let e = WatchEvent::<Pod>::from_json(&frame(json!({"type": "BOOKMARK", "object": {
            "kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "99"}
        }})))
        .unwrap();
        assert_eq!(
            e,
            WatchEvent::Bookmark(Bookmark {
                resource_version: "99".into(),
                ..Default::default()
            })
        );
        assert!(matches!(e, WatchEvent::Bookmark(ref b) if !b.is_initial_events_end()));
    }

    #[test]
    fn bad_frames_are_typed_errors() {
        let cases: &[&[u8]] = &[
            b"",
            b"not json",
            b"{\"type\":\"ADDED\"}",
            b"{\"object\":{}}",
            b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":7}}}",
            b"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Service\",\"metadata\":{}}}",
            b"[1,2,3]",
            b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}",
            b"\xff\xfe",
        ];
        let extra: &[&[u8]] = &[
            b"{\"type\":\"ADDED\",\"object\":{},\"object\":{}}",
            b"{\"type\":\"ADDED\",\"object\":{}} {}",
            b"{\"type\":7,\"object\":{}}",
            b"{\"object\":{\"metadata\":{\"managedFields\":[tru]}},\"type\":\"ADDED\"}",
        ];
        for bytes in cases.iter().chain(extra) {
            for decode in [
                WatchEvent::<Pod>::from_json,
                WatchEvent::<Pod>::from_json_without_managed_fields,
            ] {
                let err = decode(bytes).unwrap_err();
                assert!(matches!(err, WatchDecodeError::Json { .. }), "{err}");
            }
        }
        let frame = b"{\"type\":\"RESYNC\",\"object\":{}}";
        for decode in [
            WatchEvent::<Pod>::from_json,
            WatchEvent::<Pod>::from_json_without_managed_fields,
        ] {
            let err = decode(frame).unwrap_err();
            assert!(matches!(err, WatchDecodeError::UnknownType(ref t) if t == "RESYNC"));
        }
    }

    /// The API server writes `type` first and the object is decoded in the same pass; a frame
    /// with `object` first decodes to the same events, unknown types and errors included.
    #[test]
    fn key_order_does_not_matter() {
        let object = json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "a", "resourceVersion": "3"}});
        let bookmark = json!({"metadata": {"resourceVersion": "9", "annotations": {INITIAL_EVENTS_END_ANNOTATION: "true"}}});
        let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410, "reason": "Expired"});
        for (t, o) in [
            ("ADDED", &object),
            ("MODIFIED", &object),
            ("DELETED", &object),
            ("BOOKMARK", &bookmark),
            ("ERROR", &status),
        ] {
            let type_first = format!(r#"{{"type":"{t}","object":{o}}}"#);
            let object_first = format!(r#"{{"object":{o},"other":[1],"type":"{t}"}}"#);
            let a = WatchEvent::<Pod>::from_json(type_first.as_bytes()).unwrap();
            let b = WatchEvent::<Pod>::from_json(object_first.as_bytes()).unwrap();
            assert_eq!(a, b, "{t}");
            assert_eq!(a.type_name(), t);
        }
        for frame in [
            r#"{"type":"RESYNC","object":{"x":1}}"#,
            r#"{"object":{"x":1},"type":"RESYNC"}"#,
        ] {
            let err = WatchEvent::<Pod>::from_json(frame.as_bytes()).unwrap_err();
            assert!(
                matches!(err, WatchDecodeError::UnknownType(ref t) if t == "RESYNC"),
                "{err}"
            );
        }
        for frame in [
            r#"{"type":"ADDED","object":{"metadata":{"name":7}}}"#,
            r#"{"object":{"metadata":{"name":7}},"type":"ADDED"}"#,
        ] {
            let err = WatchEvent::<Pod>::from_json(frame.as_bytes()).unwrap_err();
            assert!(
                matches!(
                    err,
                    WatchDecodeError::Json {
                        what: "ADDED object",
                        ..
                    }
                ),
                "{err}"
            );
        }
        for frame in [
            r#"{"type":"ADDED","type":"ADDED","object":{}}"#,
            r#"{"type":"ADDED","object":{},"object":{}}"#,
            r#"{"type":"ADDED","object":{}} trailing"#,
        ] {
            let err = WatchEvent::<Pod>::from_json(frame.as_bytes()).unwrap_err();
            assert!(
                matches!(
                    err,
                    WatchDecodeError::Json {
                        what: "envelope",
                        ..
                    }
                ),
                "{err}"
            );
        }
    }

    #[test]
    fn managed_fields_can_be_skipped_while_decoding() {
        let frame = frame(json!({"type": "MODIFIED", "object": {"metadata": {
            "name": "a", "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:metadata": {}}}]}}}));
        let kept = WatchEvent::<Pod>::from_json(&frame).unwrap();
        assert!(kept.object().unwrap().metadata.managed_fields.is_some());
        let omitted = WatchEvent::<Pod>::from_json_without_managed_fields(&frame).unwrap();
        let mut expected = kept.object().unwrap().clone();
        expected.metadata.managed_fields = None;
        assert_eq!(omitted, WatchEvent::Modified(expected));
    }

    #[test]
    fn error_snippets_are_bounded() {
        let mut big = b"{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":".to_vec();
        big.extend(std::iter::repeat_n(b'x', 10_000));
        let err = WatchEvent::<Pod>::from_json(&big).unwrap_err();
        assert!(err.to_string().len() < 600, "{}", err.to_string().len());
    }

    #[test]
    fn encodes_as_the_api_server_does() {
        let obj: DynamicObject =
            serde_json::from_value(json!({"metadata": {"name": "a", "resourceVersion": "4"}}))
                .unwrap();
        let e = WatchEvent::Modified(obj.clone());
        let back = WatchEvent::<DynamicObject>::from_json(&e.to_json().unwrap()).unwrap();
        assert_eq!(back, e);
        let b = WatchEvent::<DynamicObject>::Bookmark(Bookmark {
            resource_version: "8".into(),
            annotations: [(INITIAL_EVENTS_END_ANNOTATION.to_owned(), "true".to_owned())].into(),
        });
        let back = WatchEvent::<DynamicObject>::from_json(&b.to_json().unwrap()).unwrap();
        assert_eq!(back, b);
        assert_eq!(back.map(|o| o.metadata).object(), None);
        assert_eq!(
            WatchEvent::Added(obj).map(|o| o.metadata.name).object(),
            Some(&Some("a".into()))
        );
    }
}
