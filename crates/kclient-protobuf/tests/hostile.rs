//! Protobuf from a hostile server (issue 46): bodies cut at every byte, lengths that lie,
//! over-long varints, wrong wire types, nesting up to the bound and past it, envelopes of
//! another kind or content type, and lists whose items are of another kind. Each is a typed
//! [`DecodeError`] whose message says what was found — never a panic, a hang, or a stack
//! overflow. (That decoding allocates in proportion to its input, whatever lengths the input
//! claims, is pinned by the capped allocator of `tests/fuzz.rs`.)

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use kclient_protobuf::envelope::{self, FrameDecoder};
use kclient_protobuf::list_reader::{ListPiece, ListReader};
use kclient_protobuf::{registry, Ctx, Decode, DecodeError};

// ---------------------------------------------------------------------------------------------
// Writing the wire by hand.

fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A length-delimited field: `key` (already encoded), the length, `value`.
fn delimited(key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = key.to_vec();
    varint(value.len() as u64, &mut out);
    out.extend_from_slice(value);
    out
}

/// A field key whose length is `claimed` (what a lying server says), with `value` after it.
fn claiming(key: &[u8], claimed: u64, value: &[u8]) -> Vec<u8> {
    let mut out = key.to_vec();
    varint(claimed, &mut out);
    out.extend_from_slice(value);
    out
}

/// A whole body: the magic and an envelope with the fields given (`None` leaves one out).
fn body(
    type_meta: Option<(&str, &str)>,
    raw: Option<&[u8]>,
    content_encoding: Option<&str>,
    content_type: Option<&str>,
) -> Vec<u8> {
    let mut out = envelope::MAGIC.to_vec();
    if let Some((api_version, kind)) = type_meta {
        let mut tm = delimited(&[0x0a], api_version.as_bytes());
        tm.extend_from_slice(&delimited(&[0x12], kind.as_bytes()));
        out.extend_from_slice(&delimited(&[0x0a], &tm));
    }
    if let Some(raw) = raw {
        out.extend_from_slice(&delimited(&[0x12], raw));
    }
    if let Some(ce) = content_encoding {
        out.extend_from_slice(&delimited(&[0x1a], ce.as_bytes()));
    }
    if let Some(ct) = content_type {
        out.extend_from_slice(&delimited(&[0x22], ct.as_bytes()));
    }
    out
}

/// A Pod as kube-apiserver serves one: nested messages, lists, maps, times, quantities,
/// managed fields.
fn pod() -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": "api-7d4b9", "namespace": "prod", "uid": "5a0c6f2e-1d3b-4c8e-9f70-2b1a3c4d5e6f",
            "resourceVersion": "812", "labels": {"app": "api", "pod-template-hash": "7d4b9"},
            "creationTimestamp": "2025-06-01T10:00:00Z",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "api-7d4b9",
                                 "uid": "0b1c2d3e-0000-4000-8000-000000000002", "controller": true}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                               "apiVersion": "v1", "time": "2025-06-01T10:00:00Z",
                               "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {}}}}]
        },
        "spec": {
            "containers": [{
                "name": "api", "image": "registry.example/api:1.2", "args": ["--port=8080"],
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "MODE", "value": "prod"}],
                "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}},
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5}
            }],
            "terminationGracePeriodSeconds": 30, "nodeName": "node-3"
        },
        "status": {
            "phase": "Running", "podIP": "10.0.3.17", "startTime": "2025-06-01T10:00:01Z",
            "conditions": [{"type": "Ready", "status": "True",
                            "lastTransitionTime": "2025-06-01T10:00:05Z"}]
        }
    }))
    .expect("a valid Pod")
}

fn pod_body() -> Vec<u8> {
    envelope::encode_envelope("v1", "Pod", &pod())
}

fn decode_pod(body: &[u8]) -> Result<Pod, DecodeError> {
    envelope::decode_object::<Pod>(body, "Pod", Ctx::default())
}

/// Reads a list body pushed in one piece through a [`ListReader`]: the items' bytes, or the
/// first error (of the reader or of its `finish`).
fn read_list(body: &[u8], max_item_len: usize) -> Result<Vec<Vec<u8>>, DecodeError> {
    let mut reader = ListReader::new(max_item_len);
    reader.push(body);
    let mut items = Vec::new();
    while let Some(piece) = reader.next_piece()? {
        if let ListPiece::Item(bytes) = piece {
            items.push(bytes.to_vec());
        }
    }
    reader.finish()?;
    Ok(items)
}

fn message_of(result: Result<impl std::fmt::Debug, DecodeError>) -> String {
    result.expect_err("a typed error").to_string()
}

// ---------------------------------------------------------------------------------------------
// Truncation.

#[test]
fn a_pod_body_cut_at_every_byte_is_a_typed_error() {
    let body = pod_body();
    let whole = decode_pod(&body).expect("the whole body");
    assert_eq!(whole.metadata.name.as_deref(), Some("api-7d4b9"));
    let codec = registry::codec::<Pod>().unwrap();
    let mut messages = BTreeSet::new();
    for cut in 0..body.len() {
        let part = &body[..cut];
        let result = decode_pod(part);
        assert_eq!(
            result,
            codec.decode_body(part, Ctx::default()),
            "the registry's codec reads the same, cut at {cut}"
        );
        // The envelope ends with the object and then the empty contentEncoding and contentType
        // (2 bytes each): cut before one of them, the object is whole (protobuf has no end
        // marker; the ListReader accepts the same two cuts of a list).
        if cut == body.len() - 4 || cut == body.len() - 2 {
            assert_eq!(result.as_ref(), Ok(&whole), "cut at {cut}");
            continue;
        }
        let error = result.expect_err("a cut body");
        let message = error.to_string();
        let expected = if cut < envelope::MAGIC.len() {
            "not a Kubernetes protobuf body (no k8s\\0 prefix)"
        } else if message.starts_with("raw: length ") {
            // Inside the object: its length says more than there is.
            "exceeds the"
        } else if message.starts_with("typeMeta") {
            "typeMeta"
        } else if message.contains("has no object (raw)") {
            // Cut right after the magic or the typeMeta: no longer an empty Pod (issue 46).
            "has no object (raw): a body cut short"
        } else {
            // A field key or length cut in its middle.
            "invalid varint"
        };
        assert!(message.contains(expected), "cut at {cut}: {message}");
        messages.insert(expected);
    }
    // Every kind of cut was met: the magic, the typeMeta, between typeMeta and raw, a length
    // cut in its varint, and the object itself.
    assert_eq!(messages.len(), 5, "{messages:?}");
}

#[test]
fn a_watch_frame_cut_at_every_byte_is_refused() {
    let codec = registry::codec::<Pod>().unwrap();
    let frame = kclient_protobuf::core_types::encode_event_frame("ADDED", &pod_body());
    for cut in 0..frame.len() {
        let mut decoder = FrameDecoder::new(FrameDecoder::DEFAULT_MAX_FRAME_LEN);
        decoder.push(&frame[..cut]);
        assert!(decoder.next_frame().is_none(), "cut at {cut}: not a frame");
        assert_eq!(
            decoder.has_partial(),
            cut > 0,
            "cut at {cut}: the end of the body is a truncated stream"
        );
    }
    // The frame's object cut inside, with a length prefix that agrees (a server that frames a
    // cut object): the object's own lengths refuse it.
    let body = pod_body();
    let cut = &body[..body.len() / 2];
    let event = kclient_protobuf::core_types::encode_event("ADDED", cut);
    let error = kclient_protobuf::core_types::decode_event(&event, codec, Ctx::default())
        .expect_err("a cut object");
    assert!(
        error.to_string().starts_with("ADDED object.raw: length"),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------------------
// Lengths that lie.

#[test]
fn lengths_that_lie_are_refused_before_they_are_used() {
    let raw = pod().metadata.name.unwrap().into_bytes();
    for claimed in [raw.len() as u64 + 1, 1 << 31, 1 << 63, u64::MAX] {
        // The envelope's object.
        let mut lying = envelope::MAGIC.to_vec();
        lying.extend_from_slice(&claiming(&[0x12], claimed, &raw));
        assert_eq!(
            message_of(envelope::decode_envelope(&lying)),
            format!(
                "raw: length {claimed} exceeds the {} bytes that remain",
                raw.len()
            )
        );
        // A Pod's metadata, its name.
        let pod = claiming(&[0x0a], claimed, &raw);
        assert_eq!(
            message_of(Pod::decode(&pod, Ctx::default())),
            format!(
                "metadata: length {claimed} exceeds the {} bytes that remain",
                raw.len()
            )
        );
        let pod = delimited(&[0x0a], &claiming(&[0x0a], claimed, &raw));
        assert_eq!(
            message_of(Pod::decode(&pod, Ctx::default())),
            format!(
                "metadata.name: length {claimed} exceeds the {} bytes that remain",
                raw.len()
            )
        );
        // A list's metadata read ahead of its items.
        let list = claiming(&[0x0a], claimed, &raw);
        assert!(
            message_of(envelope::peek_list_meta(&list)).starts_with("metadata: length"),
            "{claimed}"
        );
        // A watch event's object.
        let event = claiming(&[0x12], claimed, &raw);
        assert!(
            message_of(envelope::decode_watch_event(&event)).starts_with("object: length"),
            "{claimed}"
        );
    }
}

#[test]
fn a_list_reader_refuses_lying_item_lengths_on_their_header() {
    let meta = ListMeta {
        resource_version: Some("5".into()),
        ..Default::default()
    };
    for claimed in [1u64 << 31, 1 << 63, u64::MAX - 1, u64::MAX] {
        // An item claiming more than the list, in a list whose own length is honest: refused
        // on its header (`u64::MAX` overflowed the header's length before: a panic in debug
        // builds).
        let item = claiming(&[0x12], claimed, b"abc");
        let mut list = delimited(&[0x0a], &meta_bytes(&meta));
        list.extend_from_slice(&item);
        let list_body = body(Some(("v1", "PodList")), Some(&list), Some(""), Some(""));
        let message = message_of(read_list(&list_body, 1 << 20));
        assert!(
            message.starts_with("a field of ") && message.contains("where the list has"),
            "{claimed}: {message}"
        );
        // The same item in a list that claims to hold it: over the item bound, refused before
        // its bytes arrive.
        let mut lying_list = envelope::MAGIC.to_vec();
        lying_list.extend_from_slice(&delimited(&[0x0a], b"\x0a\x02v1\x12\x07PodList"));
        lying_list.extend_from_slice(&claiming(&[0x12], u64::MAX, &item));
        let mut reader = ListReader::new(1 << 20);
        reader.push(&lying_list);
        let message = message_of(reader.next_piece().map(|_| ()));
        assert_eq!(
            message,
            format!("items: a field of {claimed} bytes exceeds the limit of 1048576"),
        );
    }
    // An envelope field other than the list claiming 2^63 bytes: refused on its header too.
    let mut lying = envelope::MAGIC.to_vec();
    lying.extend_from_slice(&claiming(&[0x0a], 1 << 63, b"\x0a\x02v1"));
    assert_eq!(
        message_of(read_list(&lying, 1 << 20)),
        "envelope field: a field of 9223372036854775808 bytes exceeds the limit of 1048576"
    );
}

fn meta_bytes(meta: &ListMeta) -> Vec<u8> {
    use kclient_protobuf::Encode as _;
    meta.encode_to_vec()
}

#[test]
fn watch_frames_claiming_more_than_the_bound_are_refused_on_their_header() {
    for (bound, header) in [
        (
            FrameDecoder::DEFAULT_MAX_FRAME_LEN,
            [0xff, 0xff, 0xff, 0xff],
        ),
        (1024, [0x00, 0x00, 0x04, 0x01]),
    ] {
        let mut decoder = FrameDecoder::new(bound);
        decoder.push(&header);
        let error = decoder
            .next_frame()
            .expect("an answer on the header alone")
            .expect_err("over the bound");
        let claimed = u32::from_be_bytes(header);
        assert_eq!(
            error.to_string(),
            format!("watch frame of {claimed} bytes exceeds the limit of {bound}")
        );
        // Nothing was set aside for the claim: only the header is buffered.
        assert_eq!(decoder.partial_len(), 4);
    }
}

// ---------------------------------------------------------------------------------------------
// Varints and wire types.

#[test]
fn varints_longer_than_ten_bytes_are_invalid() {
    let eleven = [0x80u8; 11];
    let overflowing = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
    for bad in [&eleven[..], &overflowing[..]] {
        // As a key.
        assert!(message_of(Pod::decode(bad, Ctx::default())).contains("invalid varint"));
        // As a length.
        let mut as_length = vec![0x0a];
        as_length.extend_from_slice(bad);
        assert!(message_of(Pod::decode(&as_length, Ctx::default())).contains("invalid varint"));
        // As a value (`terminationGracePeriodSeconds`, an int64, in `spec`).
        let mut spec = vec![0x20];
        spec.extend_from_slice(bad);
        let as_value = delimited(&[0x12], &spec);
        let message = message_of(Pod::decode(&as_value, Ctx::default()));
        assert!(message.starts_with("spec."), "{message}");
        assert!(message.contains("invalid varint"), "{message}");
        // In the envelope, and as a list's field read as it arrives.
        let mut envelope_key = envelope::MAGIC.to_vec();
        envelope_key.extend_from_slice(bad);
        assert!(message_of(envelope::decode_envelope(&envelope_key)).contains("invalid varint"));
        let mut list = envelope::MAGIC.to_vec();
        list.extend_from_slice(&[0x12, 0x0b, 0x12]);
        list.extend_from_slice(bad);
        let mut reader = ListReader::new(1 << 20);
        reader.push(&list);
        assert!(
            message_of(reader.next_piece().map(|_| ())).contains("invalid varint"),
            "{bad:?}"
        );
    }
    // Ten bytes of continuation and the body ends: the reader does not wait for an eleventh.
    let mut list = envelope::MAGIC.to_vec();
    list.extend_from_slice(&[0x80; 10]);
    let mut reader = ListReader::new(1 << 20);
    reader.push(&list);
    assert_eq!(
        message_of(reader.next_piece().map(|_| ())),
        "invalid varint"
    );
}

#[test]
fn wrong_wire_types_for_known_fields_are_typed_errors() {
    let cases: [(&[u8], &str); 7] = [
        // Pod.metadata as a varint.
        (
            &[0x08, 0x01],
            "metadata: wire type Varint, expected LengthDelimited",
        ),
        // Pod.metadata.name as a fixed64.
        (
            &[0x0a, 0x09, 0x09, 1, 2, 3, 4, 5, 6, 7, 8],
            "metadata.name: wire type SixtyFourBit, expected LengthDelimited",
        ),
        // Pod.spec.terminationGracePeriodSeconds (int64) as a fixed32.
        (
            &[0x12, 0x05, 0x25, 1, 2, 3, 4],
            "spec.terminationGracePeriodSeconds: wire type ThirtyTwoBit, expected Varint",
        ),
        // Pod.spec.terminationGracePeriodSeconds as bytes (packed is for repeated fields).
        (
            &[0x12, 0x03, 0x22, 0x01, 0x1e],
            "spec.terminationGracePeriodSeconds: wire type LengthDelimited, expected Varint",
        ),
        // Pod.status as the start of a group.
        (
            &[0x1b, 0x1c],
            "status: wire type StartGroup, expected LengthDelimited",
        ),
        // An end of group that was never started (an unknown field 15).
        (&[0x7c], "unexpected end group tag"),
        // Wire type 6 does not exist.
        (&[0x0e], "invalid wire type value: 6"),
    ];
    for (bytes, expected) in cases {
        let message = message_of(Pod::decode(bytes, Ctx::default()));
        assert!(message.contains(expected), "{bytes:02x?}: {message}");
    }
    // In the envelope: the typeMeta and the object as varints.
    for (field, expected) in [
        (0x08u8, "typeMeta: wire type Varint"),
        (0x10, "raw: wire type Varint"),
    ] {
        let mut bad = envelope::MAGIC.to_vec();
        bad.extend_from_slice(&[field, 0x01]);
        let message = message_of(envelope::decode_envelope(&bad));
        assert!(message.starts_with(expected), "{message}");
        let message = message_of(read_list(&bad, 1 << 20));
        assert!(message.starts_with(expected), "{message}");
    }
}

// ---------------------------------------------------------------------------------------------
// Nesting.

/// A `JSONSchemaProps` nested `levels` times through `wrap`, with a JSON `default` nested
/// `json_depth` arrays deep innermost (serde_json's own limit is 128).
fn nested(levels: usize, json_depth: usize, wrap: Wrap) -> Vec<u8> {
    let json = format!("{}{}", "[".repeat(json_depth), "]".repeat(json_depth));
    let mut props = delimited(&[0x42], &delimited(&[0x0a], json.as_bytes()));
    for _ in 0..levels {
        props = wrap(&props);
    }
    props
}

/// Wraps a schema's bytes in one more level.
type Wrap = fn(&[u8]) -> Vec<u8>;

/// The recursive fields of `JSONSchemaProps`, each wrapping a schema in one more.
const PATHS: [(&str, Wrap); 5] = [
    ("not", |inner| delimited(&[0xe2, 0x01], inner)),
    ("allOf", |inner| delimited(&[0xca, 0x01], inner)),
    // `items`: a `JSONSchemaPropsOrArray` whose `schema` is the inner one.
    ("items", |inner| {
        delimited(&[0xc2, 0x01], &delimited(&[0x0a], inner))
    }),
    // `properties`: a map entry `{key, value}`.
    ("properties", |inner| {
        let mut entry = delimited(&[0x0a], b"p");
        entry.extend_from_slice(&delimited(&[0x12], inner));
        delimited(&[0xea, 0x01], &entry)
    }),
    // `additionalProperties`: a `JSONSchemaPropsOrBool` `{allows, schema}`.
    ("additionalProperties", |inner| {
        let mut or_bool = vec![0x08, 0x01];
        or_bool.extend_from_slice(&delimited(&[0x12], inner));
        delimited(&[0xf2, 0x01], &or_bool)
    }),
];

/// Runs `f` on a thread of 1 MiB of stack: half of a tokio worker's 2 MiB, the other half
/// left to the frames of whatever calls a decoder. A debug build's frames are large (some
/// 25 KiB a level of `JSONSchemaProps`, 2.5 MiB at the bound), so a debug build decodes every
/// few levels of a deep message on a fresh stack (`fresh_stack`); a release build needs less
/// than 1 MiB at the bound. Overflowing it would abort the test binary, not fail one test.
fn on_half_a_worker_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .expect("no panic, no overflow")
}

#[test]
fn nesting_is_bounded_on_every_recursive_path() {
    on_half_a_worker_stack(|| {
        for (name, wrap) in PATHS {
            // The deepest schema accepted: found from the bound down (a level costs one unit
            // of `Ctx::depth`, or two where a map entry or a `JSONSchemaPropsOr*` wraps it).
            let deepest = (1..=kclient_protobuf::wire::DEFAULT_DEPTH as usize)
                .rev()
                .find(|&levels| {
                    JSONSchemaProps::decode(&nested(levels, 1, wrap), Ctx::default()).is_ok()
                })
                .expect("some nesting is accepted");
            assert!(deepest == 100 || deepest == 50, "{name}: {deepest}");
            // At the bound, with the deepest JSON serde_json reads innermost.
            let decoded = JSONSchemaProps::decode(&nested(deepest, 127, wrap), Ctx::default());
            assert!(decoded.is_ok(), "{name}: {decoded:?}");
            // One level more is an error naming where it happened.
            let error = JSONSchemaProps::decode(&nested(deepest + 1, 1, wrap), Ctx::default())
                .expect_err("past the bound");
            assert_eq!(error.message(), "nesting too deep", "{name}");
            assert!(error.to_string().starts_with(name), "{name}: {error}");
            // Far past it (10,000 levels) too, without going deeper than the bound.
            let error = JSONSchemaProps::decode(&nested(10_000, 1, wrap), Ctx::default())
                .expect_err("far past the bound");
            assert_eq!(error.message(), "nesting too deep", "{name}");
            // And JSON nested past serde_json's limit, at the bound.
            let error = JSONSchemaProps::decode(&nested(deepest, 200, wrap), Ctx::default())
                .expect_err("JSON too deep");
            assert!(
                error.to_string().contains("recursion limit exceeded"),
                "{name}: {error}"
            );
        }
    });
}

#[test]
fn deeply_nested_unknown_groups_are_an_error_not_a_stack_overflow() {
    // Field 99 as a group, opened 100,000 times: skipping it recurses once per group, up to
    // prost's bound.
    let mut bytes = Vec::new();
    for _ in 0..100_000 {
        bytes.extend_from_slice(&[0x9b, 0x06]);
    }
    let mut pod = delimited(&[0x0a], &delimited(&[0x0a], b"x"));
    pod.extend_from_slice(&bytes);
    let message = on_half_a_worker_stack(move || message_of(Pod::decode(&pod, Ctx::default())));
    assert!(message.contains("recursion limit reached"), "{message}");
    // A list read as it arrives refuses groups outright (kube-apiserver writes none).
    let mut list = envelope::MAGIC.to_vec();
    list.extend_from_slice(&[0x9b, 0x06, 0x9b, 0x06]);
    assert_eq!(
        message_of(read_list(&list, 1 << 20)),
        "groups are not used by Kubernetes messages"
    );
}

// ---------------------------------------------------------------------------------------------
// The envelope.

#[test]
fn a_body_without_the_magic_is_refused_by_every_reader() {
    let good = pod_body();
    let mut wrong_byte = good.clone();
    wrong_byte[3] = 0x01;
    let mut upper = good.clone();
    upper[..3].copy_from_slice(b"K8S");
    for bad in [
        &wrong_byte[..],
        &upper[..],
        b"k8s",
        b"",
        br#"{"kind":"Pod","apiVersion":"v1"}"#,
        b"\x1f\x8b\x08\x00", // gzip that was not inflated
    ] {
        let expected = "not a Kubernetes protobuf body (no k8s\\0 prefix)";
        assert_eq!(message_of(decode_pod(bad)), expected, "{bad:02x?}");
        assert_eq!(message_of(envelope::decode_envelope(bad)), expected);
        if bad.len() >= 4 || !envelope::MAGIC.starts_with(bad) {
            assert_eq!(message_of(read_list(bad, 1 << 20)), expected);
        }
    }
    // A prefix of the magic is only short: a body that ends there is cut, not foreign.
    assert_eq!(
        message_of(read_list(b"k8s", 1 << 20)),
        "the body ended inside a field (3 bytes of it arrived)"
    );
}

#[test]
fn an_object_of_another_kind_is_refused_naming_the_kind_found() {
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("settings".into()),
            ..Default::default()
        },
        data: Some([("mode".to_owned(), "prod".to_owned())].into()),
        ..Default::default()
    };
    let cm_body = envelope::encode_envelope("v1", "ConfigMap", &cm);
    assert_eq!(
        message_of(decode_pod(&cm_body)),
        "expected a Pod, got a \"ConfigMap\""
    );
    let codec = registry::codec::<Pod>().unwrap();
    assert_eq!(
        message_of(codec.decode_body(&cm_body, Ctx::default())),
        "expected a Pod, got a \"ConfigMap\""
    );
    // In a watch of Pods.
    let event = kclient_protobuf::core_types::encode_event("MODIFIED", &cm_body);
    assert_eq!(
        message_of(kclient_protobuf::core_types::decode_event(
            &event,
            codec,
            Ctx::default()
        )),
        "MODIFIED object: expected a Pod, got a \"ConfigMap\""
    );
    // No type at all.
    let untyped = body(None, Some(b""), None, None);
    assert_eq!(
        message_of(decode_pod(&untyped)),
        "expected a Pod, got a \"\""
    );
    // The right kind in the wrong group is what the envelope says; the kind decides (as Go's
    // serializer, which checks the kind against the type decoded into).
    let regrouped = body(Some(("apps/v1", "Pod")), Some(b""), None, None);
    assert_eq!(decode_pod(&regrouped).unwrap(), Pod::default());
}

#[test]
fn an_envelope_whose_object_is_not_protobuf_is_refused_naming_what_it_is() {
    let raw = br#"{"metadata":{"name":"a"}}"#;
    for (content_encoding, content_type, expected) in [
        (
            None,
            Some("application/json"),
            "contentType: the envelope's object is \"application/json\", not application/vnd.kubernetes.protobuf",
        ),
        (
            None,
            Some("application/cbor"),
            "contentType: the envelope's object is \"application/cbor\", not application/vnd.kubernetes.protobuf",
        ),
        (
            Some("gzip"),
            Some(""),
            "contentEncoding: the envelope's object is encoded as \"gzip\", which kclient does not decode",
        ),
    ] {
        let bad = body(Some(("v1", "Pod")), Some(raw), content_encoding, content_type);
        assert_eq!(message_of(decode_pod(&bad)), expected);
        assert_eq!(message_of(envelope::decode_envelope(&bad)), expected);
        // A list says so after its items (kube-apiserver writes these fields last): the list
        // still ends with the error, never as a list.
        let list = body(Some(("v1", "PodList")), Some(b""), content_encoding, content_type);
        assert_eq!(message_of(read_list(&list, 1 << 20)), expected);
    }
    // The protobuf media type, with parameters or in capitals, is protobuf.
    for content_type in [
        "application/vnd.kubernetes.protobuf",
        "Application/Vnd.Kubernetes.Protobuf; charset=binary",
    ] {
        let good = body(Some(("v1", "Pod")), Some(b""), Some(""), Some(content_type));
        assert_eq!(decode_pod(&good).unwrap(), Pod::default());
    }
}

#[test]
fn an_envelope_without_its_object_is_a_cut_body_not_an_empty_object() {
    let typed_only = body(Some(("v1", "Pod")), None, None, None);
    assert_eq!(
        message_of(decode_pod(&typed_only)),
        "the envelope of \"Pod\" has no object (raw): a body cut short"
    );
    assert_eq!(
        message_of(read_list(&typed_only, 1 << 20)),
        "the body ended before the list"
    );
    // An empty object is written with its (empty) raw field, and reads as one.
    let empty = body(Some(("v1", "Pod")), Some(b""), Some(""), Some(""));
    assert_eq!(decode_pod(&empty).unwrap(), Pod::default());
}

// ---------------------------------------------------------------------------------------------
// Lists whose items are of another kind.

#[test]
fn a_list_whose_items_are_of_another_kind_is_read_as_go_reads_it() {
    // A list's items carry no type of their own: only the envelope's kind says what they are
    // (kclient-rest refuses a list of another kind than asked: `hostile_wire.rs`). Bytes of
    // another kind under a PodList's envelope are decoded as Pods, as Go's generated
    // `Unmarshal` would: fields of the same number and wire type are read, unknown ones
    // skipped, a clash is a typed error — never a panic.
    let cm = |name: &str, data: Option<(&str, &str)>| ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("prod".into()),
            ..Default::default()
        },
        data: data.map(|(k, v)| [(k.to_owned(), v.to_owned())].into()),
        ..Default::default()
    };
    let meta = ListMeta {
        resource_version: Some("77".into()),
        ..Default::default()
    };
    let decode = |items: &[ConfigMap]| {
        let list = envelope::encode_list("v1", "PodList", &meta, items);
        let raw = envelope::decode_envelope(&list).unwrap().raw;
        let mut pods = Vec::new();
        let result = envelope::decode_list::<Pod>(raw, Ctx::default(), &mut |p| pods.push(p));
        // The list read as it arrives hands out the same item bytes (it decodes none).
        let read = read_list(&list, 1 << 20).expect("well-formed bytes");
        assert_eq!(read.len(), items.len());
        (result, pods)
    };

    // A ConfigMap without data: its metadata (field 1 in both) is a Pod's metadata.
    let (result, pods) = decode(&[cm("a", None), cm("b", None)]);
    assert_eq!(result.unwrap().resource_version.as_deref(), Some("77"));
    let names: Vec<_> = pods.iter().map(|p| p.metadata.name.as_deref()).collect();
    assert_eq!(names, [Some("a"), Some("b")]);
    assert!(pods.iter().all(|p| p.spec.is_none() && p.status.is_none()));

    // A reader told the list's kind refuses another before handing out anything.
    let list = envelope::encode_list("v1", "ConfigMapList", &meta, &[cm("a", None)]);
    let mut reader = ListReader::new(1 << 20).expecting("PodList");
    reader.push(&list);
    assert_eq!(
        message_of(reader.next_piece().map(|_| ())),
        "expected a PodList, got a \"ConfigMapList\""
    );

    // With data: a ConfigMap's `data` entries (field 2) are read as a Pod's `spec` (field 2),
    // whose first field is `volumes`: the key's bytes as a Volume, a clash of wire types.
    let (result, pods) = decode(&[cm("a", None), cm("b", Some(("key", "value")))]);
    let message = message_of(result);
    assert!(message.starts_with("items.spec.volumes"), "{message}");
    assert_eq!(pods.len(), 1, "the item before the clash was handed out");
}
