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
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

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
struct RawEvent<'a> {
    #[serde(rename = "type", borrow)]
    event_type: Cow<'a, str>,
    #[serde(borrow)]
    object: &'a RawValue,
}

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

impl<K> WatchEvent<K> {
    /// Decodes one JSON watch frame: `{"type": "...", "object": {...}}`.
    pub fn from_json(frame: &[u8]) -> Result<Self, WatchDecodeError>
    where
        K: serde::de::DeserializeOwned,
    {
        let json_err = |what, source| WatchDecodeError::Json {
            what,
            source,
            snippet: snippet(frame, SNIPPET_LEN),
        };
        let raw: RawEvent<'_> =
            serde_json::from_slice(frame).map_err(|e| json_err("envelope", e))?;
        let object = raw.object.get();
        let decode_object = |what| serde_json::from_str::<K>(object).map_err(|e| json_err(what, e));
        Ok(match raw.event_type.as_ref() {
            "ADDED" => Self::Added(decode_object("ADDED object")?),
            "MODIFIED" => Self::Modified(decode_object("MODIFIED object")?),
            "DELETED" => Self::Deleted(decode_object("DELETED object")?),
            "BOOKMARK" => {
                let b: BookmarkObject =
                    serde_json::from_str(object).map_err(|e| json_err("BOOKMARK object", e))?;
                Self::Bookmark(Bookmark {
                    resource_version: b.metadata.resource_version.unwrap_or_default(),
                    annotations: b.metadata.annotations.unwrap_or_default(),
                })
            }
            "ERROR" => {
                Self::Error(serde_json::from_str(object).map_err(|e| json_err("ERROR object", e))?)
            }
            other => return Err(WatchDecodeError::UnknownType(other.to_owned())),
        })
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
        for bytes in cases {
            let err = WatchEvent::<Pod>::from_json(bytes).unwrap_err();
            assert!(matches!(err, WatchDecodeError::Json { .. }), "{err}");
        }
        let err = WatchEvent::<Pod>::from_json(b"{\"type\":\"RESYNC\",\"object\":{}}").unwrap_err();
        assert!(matches!(err, WatchDecodeError::UnknownType(ref t) if t == "RESYNC"));
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
