//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`): the bytes kube-apiserver
//! writes for the built-in kinds, made from the stored JSON with kclient-protobuf's codecs, and
//! protobuf request bodies read back into JSON.
//!
//! [`crate::negotiate`] decides when an answer is protobuf; the verbs, the watch and the error
//! responses call here instead of writing JSON. The wire (apimachinery's protobuf serializer):
//!
//! - **an object**: the `k8s\0` magic, then a `runtime.Unknown` envelope
//!   (`typeMeta{apiVersion, kind}`, `raw` = the object's message, empty `contentEncoding` and
//!   `contentType`);
//! - **a list**: the same envelope typed with the list's kind (`PodList`), whose `raw` is the
//!   list message: its `ListMeta` (field 1), then each item's bare message (field 2) — no
//!   envelope per item. A `meta.k8s.io/v1beta1` `PartialObjectMetadataList` numbers them the
//!   other way round (items 1, metadata 2), and Go writes them in that order;
//! - **a watch** (`;stream=watch`): frames of a 4-byte big-endian length and a bare
//!   `metav1.WatchEvent{type = 1, object = 2 RawExtension{raw = 1}}` whose `raw` is the whole
//!   body (magic and envelope) of the event's object;
//! - **a `Status`** (errors, and the success `Status` some deletes answer with): envelope `v1`
//!   `Status`.
//!
//! A stored object's message is encoded the first time it is served in protobuf and kept
//! with it ([`StoredObject::protobuf_message`]), as its JSON is: a list of 100k objects or an
//! event fanned out to many watchers is copied, not re-encoded. A list is written into one
//! buffer of its exact size.

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta_v1;
use kclient_core::{ApiError, PartialObjectMetadata, Status};
use kclient_protobuf::core_types;
use kclient_protobuf::envelope::{self, MAGIC};
use kclient_protobuf::registry::{self, Entry};
use kclient_protobuf::{wire, Ctx, Decode, Encode};
use serde::Deserialize;
use serde_json::Value;

use crate::catalogue::ResourceInfo;
use crate::registry::{for_version, needs_version_rewrite};
use crate::response::{full, Body, MetaVersion, ObjectForm};
use crate::store::StoredObject;

/// The content type of protobuf bodies.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The content type of a protobuf watch.
pub const PROTOBUF_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// The codec `info`'s objects are served in protobuf with: the built-in kinds kclient-protobuf
/// has a codec of (every k8s-openapi kind of the Kubernetes version built for); never a custom
/// resource (which kube-apiserver serves in JSON or YAML only).
pub fn codec(info: &ResourceInfo) -> Option<&'static dyn Entry> {
    if info.custom {
        return None;
    }
    registry::by_kind(info.api_version(), info.kind())
}

/// A response with `code` and a protobuf body.
pub fn response(code: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut res = Response::new(full(body));
    *res.status_mut() = code;
    res.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROTOBUF));
    res
}

/// The `500` of an object the codec cannot take (the fake stores what it is given; a value
/// k8s-openapi cannot read has no protobuf form). kube-apiserver, failing to encode an
/// answer, sends the failure instead of it, as here.
fn encode_error(kind: &str, err: impl std::fmt::Display) -> ApiError {
    ApiError::internal_error(&format!("unable to encode the {kind} as protobuf: {err}"))
}

// ---------------------------------------------------------------------------------------------
// Messages (bare: no magic, no envelope).

/// The message of `value`, an object of `codec`'s kind as JSON.
pub fn message(codec: &dyn Entry, value: &Value) -> Result<Vec<u8>, ApiError> {
    codec
        .json_to_message(value)
        .map_err(|e| encode_error(codec.kind(), e))
}

/// The message of a stored object served as `info`'s version: kept with the object when it is
/// stored in that version (the usual case), encoded afresh otherwise.
pub fn stored_message(
    codec: &dyn Entry,
    info: &ResourceInfo,
    obj: &StoredObject,
) -> Result<Bytes, ApiError> {
    if needs_version_rewrite(info, &obj.value) {
        let value = for_version(info, &obj.value);
        return message(codec, &value).map(Bytes::from);
    }
    obj.protobuf_message(|value| message(codec, value))
}

/// The message of `obj`'s `PartialObjectMetadata`: its `ObjectMeta` as field 1 (written even
/// when empty, as Go writes a non-pointer struct).
pub fn partial_message(obj: &Value) -> Result<Vec<u8>, ApiError> {
    let meta = match obj.get("metadata") {
        Some(m) => meta_v1::ObjectMeta::deserialize(m)
            .map_err(|e| encode_error("PartialObjectMetadata", e))?,
        None => meta_v1::ObjectMeta::default(),
    };
    Ok(PartialObjectMetadata::new(meta).encode_to_vec())
}

// ---------------------------------------------------------------------------------------------
// Bodies (magic and envelope).

/// A whole body: magic, envelope typed `api_version`/`kind`, `message`.
pub fn body(api_version: &str, kind: &str, message: &[u8]) -> Vec<u8> {
    envelope::encode_envelope_with(api_version, kind, message.len(), |out| {
        out.extend_from_slice(message)
    })
}

/// The body of `value`, an object of `codec`'s kind.
pub fn object(codec: &dyn Entry, value: &Value) -> Result<Vec<u8>, ApiError> {
    Ok(body(
        codec.api_version(),
        codec.kind(),
        &message(codec, value)?,
    ))
}

/// The body of `obj`'s `PartialObjectMetadata` in `version`.
pub fn partial_object(obj: &Value, version: MetaVersion) -> Result<Vec<u8>, ApiError> {
    Ok(body(
        version.api_version(),
        "PartialObjectMetadata",
        &partial_message(obj)?,
    ))
}

/// The body of a `Status` given as JSON (as [`crate::errors::status_json`] writes it, a list
/// error's `metadata.continue` included).
pub fn status(value: &Value) -> Vec<u8> {
    let status = meta_v1::Status::deserialize(value).unwrap_or_else(|e| meta_v1::Status {
        status: Some(Status::FAILURE.into()),
        code: Some(500),
        message: Some(format!("unable to encode the Status as protobuf: {e}")),
        ..meta_v1::Status::default()
    });
    envelope::encode_envelope("v1", "Status", &status)
}

/// The response of an error in protobuf: its `Status` with its code.
pub fn error(err: &ApiError) -> Response<Body> {
    let code = StatusCode::from_u16(err.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response(code, status(&crate::errors::status_json(&err.status)))
}

/// The codec of a plain (unconverted) protobuf answer: negotiation gives one whenever it
/// chooses protobuf without a conversion, so its absence is the fake's own bug.
pub fn require(codec: Option<&'static dyn Entry>) -> Result<&'static dyn Entry, ApiError> {
    codec.ok_or_else(|| ApiError::internal_error("no protobuf codec for an unconverted answer"))
}

/// The protobuf answer of a verb on one object, `obj` served as `form` (a `Status`, which
/// some deletes answer with, as a `Status`).
pub fn object_response(
    codec: Option<&'static dyn Entry>,
    form: ObjectForm,
    code: StatusCode,
    obj: &Value,
) -> Result<Response<Body>, ApiError> {
    let body = match form {
        ObjectForm::Metadata(version) => partial_object(obj, version)?,
        ObjectForm::AsIs if obj.get("kind").and_then(Value::as_str) == Some("Status") => {
            status(obj)
        }
        ObjectForm::AsIs => object(require(codec)?, obj)?,
    };
    Ok(response(code, body))
}

/// A list body: envelope `api_version`/`kind`, then the list message, `metadata` (the list's
/// `ListMeta` as JSON) and the items' messages written once into a buffer of the exact size.
/// `items_first` is the field order of `meta.k8s.io/v1beta1`'s `PartialObjectMetadataList`
/// (items are field 1 and come first, metadata field 2).
pub fn list<M: AsRef<[u8]>>(
    api_version: &str,
    kind: &str,
    metadata: &Value,
    items: &[M],
    items_first: bool,
) -> Result<Vec<u8>, ApiError> {
    let meta = meta_v1::ListMeta::deserialize(metadata).map_err(|e| encode_error(kind, e))?;
    let (meta_tag, item_tag) = if items_first { (2, 1) } else { (1, 2) };
    let meta_len = meta.encoded_len();
    let raw_len = wire::delimited_len(meta_tag, meta_len)
        + items
            .iter()
            .map(|i| wire::delimited_len(item_tag, i.as_ref().len()))
            .sum::<usize>();
    let write_meta = |out: &mut Vec<u8>| {
        wire::put_header(meta_tag, meta_len, out);
        meta.encode_raw(out);
    };
    Ok(envelope::encode_envelope_with(
        api_version,
        kind,
        raw_len,
        |out| {
            if !items_first {
                write_meta(out);
            }
            for item in items {
                wire::put_bytes(item_tag, item.as_ref(), out);
            }
            if items_first {
                write_meta(out);
            }
        },
    ))
}

/// The body of a list of `info`'s stored objects.
pub fn stored_list<'a>(
    codec: &dyn Entry,
    info: &ResourceInfo,
    metadata: &Value,
    items: impl Iterator<Item = &'a StoredObject>,
) -> Result<Vec<u8>, ApiError> {
    resource_list(
        info,
        metadata,
        items.map(|obj| stored_message(codec, info, obj)),
    )
}

/// The body of a list of objects of `info` given as JSON (a deletecollection's answer).
pub fn value_list(
    codec: &dyn Entry,
    info: &ResourceInfo,
    metadata: &Value,
    items: &[Value],
) -> Result<Vec<u8>, ApiError> {
    resource_list(info, metadata, items.iter().map(|v| message(codec, v)))
}

/// The body of a list of `info`'s objects, each encoded already (or failed to).
fn resource_list<M: AsRef<[u8]>>(
    info: &ResourceInfo,
    metadata: &Value,
    messages: impl Iterator<Item = Result<M, ApiError>>,
) -> Result<Vec<u8>, ApiError> {
    let messages = messages.collect::<Result<Vec<_>, _>>()?;
    list(
        info.api_version(),
        &info.list_kind(),
        metadata,
        &messages,
        false,
    )
}

/// The body of a `PartialObjectMetadataList` of `items` in `version`.
pub fn partial_list<'a>(
    version: MetaVersion,
    metadata: &Value,
    items: impl Iterator<Item = &'a Value>,
) -> Result<Vec<u8>, ApiError> {
    let messages = items.map(partial_message).collect::<Result<Vec<_>, _>>()?;
    list(
        version.api_version(),
        "PartialObjectMetadataList",
        metadata,
        &messages,
        version == MetaVersion::V1beta1,
    )
}

// ---------------------------------------------------------------------------------------------
// Watch frames.

/// One frame of a protobuf watch: the 4-byte big-endian length, then the `WatchEvent` of
/// `event_type` whose object is `object_body` (a whole body, magic and envelope), written in
/// one buffer.
pub fn watch_frame(event_type: &str, object_body: &[u8]) -> Bytes {
    Bytes::from(core_types::encode_event_frame(event_type, object_body))
}

// ---------------------------------------------------------------------------------------------
// Request bodies.

/// kube-apiserver's `summarizeData`: a body's first 30 bytes, as text when it looks like JSON,
/// in hex otherwise.
fn summarize(body: &[u8]) -> String {
    const MAX: usize = 30;
    let end = body.len().min(MAX);
    let mut s = match body.first() {
        None => return "<empty>".to_owned(),
        Some(b'{') => String::from_utf8_lossy(&body[..end]).into_owned(),
        Some(_) => body[..end].iter().map(|b| format!("{b:02x}")).collect(),
    };
    if body.len() > MAX {
        s.push_str(" ...");
    }
    s
}

/// Reads a protobuf request body (`Content-Type: application/vnd.kubernetes.protobuf`) for
/// `info` into the JSON the verbs work on, or the `400` kube-apiserver's decoder and
/// `transformDecodeError` answer: a body that is not protobuf, a kind without a codec, and
/// any body for a custom resource (an `Unstructured` has no protobuf form).
///
/// The envelope's type names the body's kind, defaulted from `info` where it is empty; the
/// JSON carries it, so the verbs check it as for a JSON body.
pub fn decode_body(body: &[u8], info: &ResourceInfo) -> Result<Value, ApiError> {
    let unrecognized = |err: &str| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): {err} ({})",
            info.kind(),
            summarize(body)
        ))
    };
    if body.is_empty() {
        return Err(unrecognized("empty data"));
    }
    if !body.starts_with(&MAGIC) {
        return Err(unrecognized(&format!(
            "provided data does not appear to be a protobuf message, expected prefix {:?}",
            MAGIC
        )));
    }
    if body.len() == MAGIC.len() {
        return Err(unrecognized("empty body"));
    }
    let unknown = envelope::decode_envelope(body).map_err(|e| unrecognized(&e.to_string()))?;
    let api_version = if unknown.api_version.is_empty() {
        info.api_version()
    } else {
        &unknown.api_version
    };
    let kind = if unknown.kind.is_empty() {
        info.kind()
    } else {
        &unknown.kind
    };
    let version = api_version.rsplit('/').next().unwrap_or(api_version);
    let cannot = |err: &str| {
        ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {}: {err}",
            info.kind()
        ))
    };
    if info.custom {
        return Err(cannot(
            "object *unstructured.Unstructured does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message",
        ));
    }
    let Some(codec) = registry::by_kind(api_version, kind) else {
        return Err(cannot(&format!(
            "no kind {kind:?} is registered for version {api_version:?}"
        )));
    };
    codec
        .message_to_json(unknown.raw)
        .map_err(|e| cannot(&e.to_string()))
}

/// Reads a protobuf `DeleteOptions` body (client-go sends its delete options in protobuf)
/// into JSON.
pub fn decode_delete_options(body: &[u8]) -> Result<Value, ApiError> {
    let bad = |err: String| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type DeleteOptions): {err} ({})",
            summarize(body)
        ))
    };
    let unknown = envelope::decode_envelope(body).map_err(|e| bad(e.to_string()))?;
    if !unknown.kind.is_empty() && unknown.kind != "DeleteOptions" {
        return Err(bad(format!(
            "expected a DeleteOptions, got a {:?}",
            unknown.kind
        )));
    }
    let options = meta_v1::DeleteOptions::decode(unknown.raw, Ctx::default())
        .map_err(|e| bad(e.to_string()))?;
    serde_json::to_value(&options).map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kclient_core::GroupVersionKind;
    use kclient_protobuf::core_types;
    use serde_json::json;

    fn configmaps() -> ResourceInfo {
        ResourceInfo::new(
            GroupVersionKind::new("", "v1", "ConfigMap"),
            "configmaps",
            true,
        )
    }

    fn cm(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "default", "resourceVersion": "3"},
               "data": {"k": "v"}})
    }

    #[test]
    fn an_object_is_what_the_codec_writes() {
        let info = configmaps();
        let codec = codec(&info).unwrap();
        let typed: ConfigMap = serde_json::from_value(cm("a")).unwrap();
        assert_eq!(
            object(codec, &cm("a")).unwrap(),
            envelope::encode_envelope("v1", "ConfigMap", &typed)
        );
        let custom = info.clone().custom_resource();
        assert!(super::codec(&custom).is_none());
    }

    #[test]
    fn lists_are_metadata_then_bare_items() {
        let info = configmaps();
        let codec = codec(&info).unwrap();
        let items = [
            message(codec, &cm("a")).unwrap(),
            message(codec, &cm("b")).unwrap(),
        ];
        let body = list(
            "v1",
            "ConfigMapList",
            &json!({"resourceVersion": "7", "continue": "x"}),
            &items,
            false,
        )
        .unwrap();
        let unknown = envelope::decode_envelope(&body).unwrap();
        assert_eq!(
            (unknown.api_version.as_str(), unknown.kind.as_str()),
            ("v1", "ConfigMapList")
        );
        let mut names = Vec::new();
        let meta = envelope::decode_list(unknown.raw, Ctx::default(), &mut |c: ConfigMap| {
            names.push(c.metadata.name.unwrap())
        })
        .unwrap();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(meta.resource_version.as_deref(), Some("7"));
        assert_eq!(meta.continue_.as_deref(), Some("x"));
        // An empty list still has its metadata (a non-pointer struct in Go, whose strings Go
        // writes even when empty, as the golden `Status` of kclient-protobuf shows).
        let empty = list::<Vec<u8>>("v1", "ConfigMapList", &json!({}), &[], false).unwrap();
        let raw = envelope::decode_envelope(&empty).unwrap().raw.to_vec();
        assert_eq!(raw, [0x0a, 0x06, 0x0a, 0x00, 0x12, 0x00, 0x1a, 0x00]);
    }

    #[test]
    fn v1beta1_metadata_lists_put_items_first() {
        let obj = cm("a");
        let body = partial_list(
            MetaVersion::V1beta1,
            &json!({"resourceVersion": "1"}),
            [&obj].into_iter(),
        )
        .unwrap();
        let unknown = envelope::decode_envelope(&body).unwrap();
        assert_eq!(unknown.api_version, "meta.k8s.io/v1beta1");
        assert_eq!(unknown.raw[0], 0x0a, "items are field 1");
        let v1 = partial_list(
            MetaVersion::V1,
            &json!({"resourceVersion": "1"}),
            [&obj].into_iter(),
        )
        .unwrap();
        let raw = envelope::decode_envelope(&v1).unwrap().raw;
        let mut items = Vec::new();
        envelope::decode_list(
            raw,
            Ctx::default(),
            &mut |p: kclient_core::PartialObjectMetadata| items.push(p),
        )
        .unwrap();
        assert_eq!(items[0].metadata.name.as_deref(), Some("a"));
    }

    #[test]
    fn watch_frames_are_length_prefixed_events() {
        let body = object(codec(&configmaps()).unwrap(), &cm("a")).unwrap();
        let frame = watch_frame("ADDED", &body);
        let event = core_types::encode_event("ADDED", &body);
        assert_eq!(&frame[..4], (event.len() as u32).to_be_bytes());
        assert_eq!(&frame[4..], event);
    }

    #[test]
    fn a_status_keeps_its_fields() {
        let err = ApiError::resource_expired("too old");
        let mut value = crate::errors::status_json(&err.status);
        value["metadata"] = json!({"continue": "c"});
        let body = status(&value);
        let back = core_types::decode_failure_status(&body).unwrap();
        assert_eq!((back.code, back.message.as_str()), (410, "too old"));
        let unknown = envelope::decode_envelope(&body).unwrap();
        let typed = meta_v1::Status::decode(unknown.raw, Ctx::default()).unwrap();
        assert_eq!(typed.metadata.continue_.as_deref(), Some("c"));
    }

    #[test]
    fn bodies_decode_to_json_or_fail_as_the_server_does() {
        let info = configmaps();
        let body = object(codec(&info).unwrap(), &cm("a")).unwrap();
        let value = decode_body(&body, &info).unwrap();
        assert_eq!(value["metadata"]["name"], "a");
        assert_eq!(value["kind"], "ConfigMap");
        for (bad, want) in [
            (&b""[..], "empty data"),
            (b"{}", "does not appear to be a protobuf message"),
            (b"k8s\0", "empty body"),
        ] {
            let err = decode_body(bad, &info).unwrap_err();
            assert_eq!(err.code(), 400);
            assert!(err.message().contains(want), "{}", err.message());
        }
        let custom = ResourceInfo::new(
            GroupVersionKind::new("x.example.com", "v1", "Widget"),
            "widgets",
            true,
        )
        .custom_resource();
        let err = decode_body(&body, &custom).unwrap_err();
        assert_eq!(err.code(), 400);
        assert!(
            err.message()
                .starts_with("ConfigMap in version \"v1\" cannot be handled as a Widget"),
            "{}",
            err.message()
        );
    }
}
