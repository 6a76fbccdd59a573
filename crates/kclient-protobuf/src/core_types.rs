//! kclient-core's own types on the wire: `PartialObjectMetadata` (the metadata client's
//! objects), `Status` (errors in protobuf) and watch events decoded into
//! [`kclient_core::WatchEvent`] (bookmarks read from any object's `metadata`, field 1 of every
//! kind).
//!
//! ```
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//! use kclient_core::WatchEvent;
//! use kclient_protobuf::core_types::{decode_event, encode_event};
//! use kclient_protobuf::{registry, Ctx};
//!
//! let codec = registry::codec::<ConfigMap>().unwrap();
//! let cm = ConfigMap {
//!     metadata: ObjectMeta { name: Some("a".into()), ..Default::default() },
//!     ..Default::default()
//! };
//! let frame = encode_event("ADDED", &codec.encode_body(&cm));
//! assert_eq!(decode_event(&frame, codec, Ctx::default()).unwrap(), WatchEvent::Added(cm));
//! ```

#[cfg(feature = "encode")]
use bytes::BufMut;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kclient_core::{Bookmark, PartialObjectMetadata, Status, WatchEvent};

use crate::envelope;
use crate::field::{self, Message};
use crate::registry::Codec;
#[cfg(feature = "encode")]
use crate::wire::Encode;
use crate::wire::{self, At, Ctx, Decode, DecodeError};

/// `metav1.PartialObjectMetadata { ObjectMeta metadata = 1; }`. Decoded objects carry the
/// `meta.k8s.io/v1` type, as the JSON the server sends does (a list's items have no envelope).
impl Decode for PartialObjectMetadata {
    fn decode(mut buf: &[u8], ctx: Ctx) -> Result<Self, DecodeError> {
        let mut metadata = ObjectMeta::default();
        while !buf.is_empty() {
            let (tag, wt) = wire::key(&mut buf)?;
            match tag {
                1 => metadata = wire::message(wt, &mut buf, ctx).at("metadata")?,
                _ => wire::skip(tag, wt, &mut buf)?,
            }
        }
        Ok(PartialObjectMetadata::new(metadata))
    }
}

#[cfg(feature = "encode")]
impl Encode for PartialObjectMetadata {
    fn encoded_len(&self) -> usize {
        field::len_req(1, &self.metadata)
    }

    fn encode_raw(&self, buf: &mut impl BufMut) {
        field::put_req(1, &self.metadata, buf);
    }
}

impl Message for PartialObjectMetadata {
    #[cfg(feature = "encode")]
    fn zero_len() -> usize {
        field::len_req(1, &ObjectMeta::default())
    }

    #[cfg(feature = "encode")]
    fn put_zero(buf: &mut impl BufMut) {
        field::put_req(1, &ObjectMeta::default(), buf);
    }

    fn fit(&mut self) {
        field::fit_req(&mut self.metadata);
    }
}

/// A `Status` message (the `raw` of an envelope typed `v1` `Status`) as kclient-core's
/// [`Status`].
pub fn decode_status(raw: &[u8]) -> Result<Status, DecodeError> {
    let status =
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Status::decode(raw, Ctx::default())?;
    let json =
        serde_json::to_value(&status).map_err(|e| DecodeError::new(format!("Status: {e}")))?;
    serde_json::from_value(json).map_err(|e| DecodeError::new(format!("Status: {e}")))
}

/// The failure `Status` of an error response in protobuf (`k8s\0`, envelope `v1` `Status`),
/// under the rules of [`Status::from_failure_body`]: `None` for another kind or a success.
pub fn decode_failure_status(body: &[u8]) -> Option<Status> {
    let unknown = envelope::decode_envelope(body).ok()?;
    if unknown.kind != "Status" {
        return None;
    }
    decode_status(unknown.raw)
        .ok()
        .filter(|s| s.status == Status::FAILURE)
}

/// Decodes one `;stream=watch` frame (a bare `metav1.WatchEvent` whose object is a whole
/// protobuf body) into an event of `K`: `ADDED`, `MODIFIED` and `DELETED` objects with
/// `codec`, a `BOOKMARK`'s resourceVersion and annotations from its object's metadata, an
/// `ERROR`'s `Status`.
pub fn decode_event<K>(
    frame: &[u8],
    codec: &Codec<K>,
    ctx: Ctx,
) -> Result<WatchEvent<K>, DecodeError> {
    let (event_type, body) = envelope::decode_watch_event(frame)?;
    let object = |what: &'static str| codec.decode_body(body, ctx).map_err(|e| e.at(what));
    Ok(match event_type.as_str() {
        "ADDED" => WatchEvent::Added(object("ADDED object")?),
        "MODIFIED" => WatchEvent::Modified(object("MODIFIED object")?),
        "DELETED" => WatchEvent::Deleted(object("DELETED object")?),
        "BOOKMARK" => {
            let unknown = envelope::decode_envelope(body).at("BOOKMARK object")?;
            let meta = PartialObjectMetadata::decode(unknown.raw, Ctx::default())
                .at("BOOKMARK object")?
                .metadata;
            WatchEvent::Bookmark(Bookmark {
                resource_version: meta.resource_version.unwrap_or_default(),
                annotations: meta.annotations.unwrap_or_default(),
            })
        }
        "ERROR" => {
            let unknown = envelope::decode_envelope(body).at("ERROR object")?;
            WatchEvent::Error(decode_status(unknown.raw).at("ERROR object")?)
        }
        other => {
            return Err(DecodeError::new(format!(
                "unknown watch event type {other:?}"
            )))
        }
    })
}

/// One watch frame's bytes without the length prefix: a `metav1.WatchEvent` of `event_type`
/// whose object is `body` (a whole protobuf body, as [`Codec::encode_body`] writes it).
pub fn encode_event(event_type: &str, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(event_len(event_type, body));
    put_event(event_type, body, &mut out);
    out
}

/// One whole watch frame, in one buffer: the 4-byte big-endian length of the
/// [`encode_event`] bytes, then those bytes (a frame over 4 GiB, which no API server writes,
/// gets the largest length the prefix holds).
pub fn encode_event_frame(event_type: &str, body: &[u8]) -> Vec<u8> {
    let len = event_len(event_type, body);
    let mut out = Vec::with_capacity(4 + len);
    out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
    put_event(event_type, body, &mut out);
    out
}

fn event_len(event_type: &str, body: &[u8]) -> usize {
    wire::delimited_len(1, event_type.len())
        + wire::delimited_len(2, wire::delimited_len(1, body.len()))
}

fn put_event(event_type: &str, body: &[u8], out: &mut Vec<u8>) {
    wire::put_bytes(1, event_type.as_bytes(), out);
    wire::put_header(2, wire::delimited_len(1, body.len()), out);
    wire::put_bytes(1, body, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn meta(rv: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some("a".into()),
            resource_version: Some(rv.into()),
            annotations: Some([("k8s.io/initial-events-end".into(), "true".into())].into()),
            ..Default::default()
        }
    }

    #[test]
    fn partial_object_metadata_round_trips_with_its_type() {
        let codec = registry::codec::<PartialObjectMetadata>().unwrap();
        let pom = PartialObjectMetadata::new(meta("3"));
        let body = codec.encode_body(&pom);
        let back = codec.decode_body(&body, Ctx::default()).unwrap();
        assert_eq!(back, pom);
        assert_eq!(
            back.types.map(|t| (t.api_version, t.kind)),
            Some(("meta.k8s.io/v1".into(), "PartialObjectMetadata".into()))
        );
    }

    #[test]
    fn every_event_type_decodes() {
        let codec = registry::codec::<ConfigMap>().unwrap();
        let cm = ConfigMap {
            metadata: meta("7"),
            ..Default::default()
        };
        let body = codec.encode_body(&cm);
        for (ty, want) in [
            ("ADDED", WatchEvent::Added(cm.clone())),
            ("MODIFIED", WatchEvent::Modified(cm.clone())),
            ("DELETED", WatchEvent::Deleted(cm.clone())),
        ] {
            assert_eq!(
                decode_event(&encode_event(ty, &body), codec, Ctx::default()).unwrap(),
                want
            );
        }
        let WatchEvent::Bookmark(b) =
            decode_event(&encode_event("BOOKMARK", &body), codec, Ctx::default()).unwrap()
        else {
            panic!("not a bookmark")
        };
        assert_eq!(b.resource_version, "7");
        assert!(b.is_initial_events_end());

        let status = k8s_openapi::apimachinery::pkg::apis::meta::v1::Status {
            status: Some("Failure".into()),
            code: Some(410),
            reason: Some("Expired".into()),
            message: Some("too old resource version".into()),
            ..Default::default()
        };
        let status_body =
            registry::codec::<k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>()
                .unwrap()
                .encode_body(&status);
        let WatchEvent::Error(s) =
            decode_event(&encode_event("ERROR", &status_body), codec, Ctx::default()).unwrap()
        else {
            panic!("not an error")
        };
        assert_eq!(
            (s.code, s.message.as_str()),
            (410, "too old resource version")
        );
        assert_eq!(
            decode_failure_status(&status_body).map(|s| s.code),
            Some(410)
        );
        assert!(decode_failure_status(&body).is_none());

        let err =
            decode_event(&encode_event("SOMETHING", &body), codec, Ctx::default()).unwrap_err();
        assert!(
            err.to_string().contains("unknown watch event type"),
            "{err}"
        );
        // The object of the wrong kind is refused, with where it was.
        let secret = envelope::encode_envelope("v1", "Secret", &cm);
        let err = decode_event(&encode_event("ADDED", &secret), codec, Ctx::default()).unwrap_err();
        assert!(err.to_string().contains("ADDED object"), "{err}");
    }
}
