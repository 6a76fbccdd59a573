//! Byte-level compatibility with k8s.io/api v0.37.1's generated marshalling and apimachinery's
//! protobuf serializer (golden bytes in `tests/golden`, written by Go: see
//! `docs/design/protobuf-spike/golden`, `go run . out`), equality with the JSON path, and
//! robustness on malformed input. The types used (ConfigMap, ObjectMeta, Status, …) are the
//! same in every supported Kubernetes version.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, MicroTime, ObjectMeta, OwnerReference, Status, Time,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use k8s_openapi::ByteString;
use kclient_protobuf::envelope::{self, FrameDecoder};
use kclient_protobuf::special;
use kclient_protobuf::wire::{Ctx, Decode, Encode};

fn golden(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn strings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The same ConfigMap as golden/main.go's `configMap()`.
fn config_map() -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some("app-config".into()),
            namespace: Some("default".into()),
            uid: Some("6f1c9c1e-8b7a-4c3e-9d2a-0f4b5e6a7b8c".into()),
            resource_version: Some("123456".into()),
            creation_timestamp: Some(Time(ts("2025-03-14T15:09:26Z"))),
            labels: Some(strings(&[("app", "web"), ("tier", "frontend")])),
            annotations: Some(strings(&[
                (
                    "kubectl.kubernetes.io/last-applied-configuration",
                    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}\n",
                ),
                ("note", ""),
            ])),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: "web".into(),
                uid: "0a1b2c3d-0000-4000-8000-000000000001".into(),
                controller: Some(true),
                block_owner_deletion: Some(false),
            }]),
            finalizers: Some(vec!["example.com/cleanup".into()]),
            managed_fields: Some(vec![
                ManagedFieldsEntry {
                    manager: Some("kubectl-client-side-apply".into()),
                    operation: Some("Update".into()),
                    api_version: Some("v1".into()),
                    time: Some(Time(ts("2025-03-14T15:09:27Z"))),
                    fields_type: Some("FieldsV1".into()),
                    fields_v1: Some(FieldsV1(serde_json::json!({
                        "f:data": {".": {}, "f:key": {}},
                        "f:metadata": {"f:labels": {".": {}, "f:app": {}}}
                    }))),
                    subresource: None,
                },
                ManagedFieldsEntry {
                    manager: Some("controller".into()),
                    operation: Some("Apply".into()),
                    api_version: Some("v1".into()),
                    time: None,
                    fields_type: Some("FieldsV1".into()),
                    fields_v1: Some(FieldsV1(serde_json::json!({
                        "f:metadata": {"f:finalizers": {"v:\"example.com/cleanup\"": {}}}
                    }))),
                    subresource: None,
                },
            ]),
            ..Default::default()
        },
        data: Some(strings(&[
            ("key", "value"),
            ("multi", "line1\nline2"),
            ("unicode", "h\u{e9}llo \u{2713}"),
            ("empty", ""),
        ])),
        binary_data: Some(
            [
                ("bin".to_string(), ByteString(vec![0, 1, 2, 0xff])),
                ("emptybin".to_string(), ByteString(vec![])),
            ]
            .into_iter()
            .collect(),
        ),
        immutable: Some(false),
    }
}

#[test]
fn encode_is_byte_identical_to_go_marshal() {
    let cm = config_map();
    let ours = cm.encode_to_vec();
    assert_eq!(ours.len(), cm.encoded_len());
    assert_eq!(ours, golden("configmap.pb"), "ConfigMap.Marshal()");
}

#[test]
fn envelope_is_byte_identical_to_the_protobuf_serializer() {
    let ours = envelope::encode_envelope("v1", "ConfigMap", &config_map());
    assert_eq!(ours, golden("configmap.k8s"), "protobuf.Serializer.Encode");
}

#[test]
fn decode_equals_the_json_path() {
    let from_json: ConfigMap = serde_json::from_slice(&golden("configmap.json")).unwrap();
    assert_eq!(from_json, config_map(), "the Rust fixture is the Go one");
    let from_pb = ConfigMap::decode(&golden("configmap.pb"), Ctx::default()).unwrap();
    assert_eq!(from_pb, from_json);
    let body = golden("configmap.k8s");
    let unk = envelope::decode_envelope(&body).unwrap();
    assert_eq!(
        (unk.api_version.as_str(), unk.kind.as_str()),
        ("v1", "ConfigMap")
    );
    assert_eq!(
        (unk.content_encoding.as_str(), unk.content_type.as_str()),
        ("", "")
    );
    let from_envelope: ConfigMap =
        envelope::decode_object(&golden("configmap.k8s"), "ConfigMap", Ctx::default()).unwrap();
    assert_eq!(from_envelope, from_json);
}

#[test]
fn round_trip() {
    let cm = config_map();
    assert_eq!(
        ConfigMap::decode(&cm.encode_to_vec(), Ctx::default()).unwrap(),
        cm
    );
    // Omitted vs empty: what Go writes for a zero value decodes as "absent" where the JSON
    // omits it (value-omitempty), and stays Some where Go has a pointer.
    let bare = ConfigMap {
        immutable: Some(false),
        ..Default::default()
    };
    let back = ConfigMap::decode(&bare.encode_to_vec(), Ctx::default()).unwrap();
    assert_eq!(back, bare);
    assert_eq!(back.metadata.name, None);
    assert_eq!(back.metadata.generation, None);
    assert_eq!(back.metadata.creation_timestamp, None);
}

#[test]
fn managed_fields_skipped_on_request() {
    let ctx = Ctx {
        skip_managed_fields: true,
        ..Ctx::default()
    };
    let cm = ConfigMap::decode(&golden("configmap.pb"), ctx).unwrap();
    let mut expected = config_map();
    expected.metadata.managed_fields = None;
    assert_eq!(cm, expected);
}

#[test]
fn list_item_by_item() {
    let body = golden("configmaplist.k8s");
    let unk = envelope::decode_envelope(&body).unwrap();
    assert_eq!(
        (unk.api_version.as_str(), unk.kind.as_str()),
        ("v1", "ConfigMapList")
    );
    let peeked = envelope::peek_list_meta(unk.raw).unwrap();
    assert_eq!(peeked.resource_version.as_deref(), Some("999"));
    assert_eq!(peeked.continue_.as_deref(), Some("abc"));
    assert_eq!(peeked.remaining_item_count, Some(5));
    let mut items = Vec::new();
    let meta =
        envelope::decode_list::<ConfigMap>(unk.raw, Ctx::default(), &mut |cm| items.push(cm))
            .unwrap();
    assert_eq!(meta, peeked);
    assert_eq!(items.len(), 2);
    assert_eq!(items[0], config_map());
    assert_eq!(
        items[1],
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("empty".into()),
                namespace: Some("kube-system".into()),
                resource_version: Some("7".into()),
                ..Default::default()
            },
            ..Default::default()
        }
    );
}

#[test]
fn list_read_as_it_arrives_gives_what_the_whole_body_gives() {
    use kclient_protobuf::list_reader::{ListPiece, ListReader};
    let body = golden("configmaplist.k8s");
    let unk = envelope::decode_envelope(&body).unwrap();
    let mut whole = Vec::new();
    let meta =
        envelope::decode_list::<ConfigMap>(unk.raw, Ctx::default(), &mut |cm| whole.push(cm))
            .unwrap();
    let mut reader = ListReader::new(1 << 20);
    let (mut read_meta, mut items) = (None, Vec::new());
    for chunk in body.chunks(3) {
        reader.push(chunk);
        while let Some(piece) = reader.next_piece().unwrap() {
            match piece {
                ListPiece::Metadata(m) => read_meta = Some(m),
                ListPiece::Item(bytes) => {
                    items.push(ConfigMap::decode(bytes, Ctx::default()).unwrap())
                }
            }
        }
    }
    reader.finish().unwrap();
    assert_eq!(read_meta, Some(meta));
    assert_eq!(items, whole);
    assert_eq!(
        (reader.api_version(), reader.kind()),
        ("v1", "ConfigMapList")
    );
}

#[test]
fn status_error_body() {
    let status: Status =
        envelope::decode_object(&golden("status.k8s"), "Status", Ctx::default()).unwrap();
    assert_eq!(
        envelope::decode_envelope(&golden("status.k8s"))
            .unwrap()
            .api_version,
        "v1"
    );
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert_eq!(status.reason.as_deref(), Some("Expired"));
    assert_eq!(status.code, Some(410));
    assert_eq!(
        status.message.as_deref(),
        Some("too old resource version: 1 (123456)")
    );
    assert_eq!(status.details, None);
}

#[test]
fn watch_frames() {
    let stream = golden("watch.frames");
    let mut decoder = FrameDecoder::new(FrameDecoder::DEFAULT_MAX_FRAME_LEN);
    let mut events = Vec::new();
    for chunk in stream.chunks(7) {
        decoder.push(chunk);
        while let Some(frame) = decoder.next_frame() {
            let frame = frame.unwrap();
            let (ty, object) = envelope::decode_watch_event(&frame).unwrap();
            let kind = envelope::decode_envelope(object).unwrap().kind;
            events.push((ty, kind, object.to_vec()));
        }
    }
    assert!(!decoder.has_partial());
    assert_eq!(events.len(), 2);
    assert_eq!(
        (events[0].0.as_str(), events[0].1.as_str()),
        ("ADDED", "ConfigMap")
    );
    let cm: ConfigMap = envelope::decode_object(&events[0].2, "ConfigMap", Ctx::default()).unwrap();
    assert_eq!(cm, config_map());
    assert_eq!(
        (events[1].0.as_str(), events[1].1.as_str()),
        ("ERROR", "Status")
    );
    let status: Status = envelope::decode_object(&events[1].2, "Status", Ctx::default()).unwrap();
    assert_eq!(status.code, Some(410));

    // The frame bound is checked on the header, before the frame's bytes are buffered.
    let mut small = FrameDecoder::new(100);
    small.push(&stream[..4]);
    assert!(small.next_frame().unwrap().is_err());
}

#[test]
fn special_types_match_go() {
    // MicroTime keeps microseconds (Go truncates the nanoseconds).
    let micro = MicroTime(ts("2025-03-14T15:09:26.123456789Z"));
    let mut ours = Vec::new();
    special::encode_micro_time(Some(&micro), &mut ours);
    assert_eq!(ours, golden("microtime.pb"));
    assert_eq!(special::micro_time_len(Some(&micro)), ours.len());
    assert_eq!(
        special::decode_micro_time(&golden("microtime.pb")).unwrap(),
        Some(MicroTime(ts("2025-03-14T15:09:26.123456Z")))
    );
    // Time drops the nanoseconds both ways (Go writes nanos = 0 and ignores them on read).
    let time = Time(ts("2025-03-14T15:09:26.987654321Z"));
    let mut ours = Vec::new();
    special::encode_time(Some(&time), &mut ours);
    assert_eq!(ours, golden("time_nanos.pb"));
    assert_eq!(
        special::decode_time(&golden("time_nanos.pb")).unwrap(),
        Some(Time(ts("2025-03-14T15:09:26Z")))
    );
    // Empty bytes are Go's zero time: null in JSON, None here.
    assert_eq!(special::decode_time(&[]).unwrap(), None);
    // IntOrString writes all three fields; Quantity its canonical string.
    assert_eq!(
        IntOrString::Int(8080).encode_to_vec(),
        golden("intorstring_int.pb")
    );
    assert_eq!(
        IntOrString::String("http".into()).encode_to_vec(),
        golden("intorstring_str.pb")
    );
    assert_eq!(
        IntOrString::decode(&golden("intorstring_str.pb"), Ctx::default()).unwrap(),
        IntOrString::String("http".into())
    );
    assert_eq!(
        IntOrString::decode(&golden("intorstring_int.pb"), Ctx::default()).unwrap(),
        IntOrString::Int(8080)
    );
    assert_eq!(
        Quantity("1500m".into()).encode_to_vec(),
        golden("quantity.pb")
    );
    assert_eq!(
        Quantity::decode(&golden("quantity.pb"), Ctx::default()).unwrap(),
        Quantity("1500m".into())
    );
    // Before 1970 with a fraction: Go floors the seconds and keeps nanos positive.
    let before = MicroTime(ts("1969-12-31T23:59:59.5Z"));
    let mut ours = Vec::new();
    special::encode_micro_time(Some(&before), &mut ours);
    assert_eq!(special::decode_micro_time(&ours).unwrap(), Some(before));
}

#[test]
fn unknown_fields_are_skipped() {
    let mut pb = golden("configmap.pb");
    // Field 99 (varint), field 98 (length-delimited), field 97 (fixed64), field 96 (fixed32).
    pb.extend_from_slice(&[0x98, 0x06, 0x2a]);
    pb.extend_from_slice(&[0x92, 0x06, 0x03, b'a', b'b', b'c']);
    pb.extend_from_slice(&[0x89, 0x06, 1, 2, 3, 4, 5, 6, 7, 8]);
    pb.extend_from_slice(&[0x85, 0x06, 1, 2, 3, 4]);
    assert_eq!(
        ConfigMap::decode(&pb, Ctx::default()).unwrap(),
        config_map()
    );
}

#[test]
fn malformed_input_is_an_error_not_a_panic() {
    let pb = golden("configmap.pb");
    // Every truncation.
    for end in 0..pb.len() {
        let _ = ConfigMap::decode(&pb[..end], Ctx::default());
    }
    // Deterministic byte flips.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..20_000 {
        let mut bytes = pb.clone();
        for _ in 0..3 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let i = (seed as usize) % bytes.len();
            bytes[i] = (seed >> 32) as u8;
        }
        let _ = ConfigMap::decode(&bytes, Ctx::default());
        let _ = envelope::decode_envelope(&bytes);
    }
    // A length far beyond the input is refused before anything is allocated.
    let err = ConfigMap::decode(&[0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f], Ctx::default()).unwrap_err();
    assert!(err.to_string().contains("exceeds"), "{err}");
    // The error names the field it happened in.
    let err = ConfigMap::decode(&[0x0a, 0x02, 0x0a, 0x05], Ctx::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "metadata.name: length 5 exceeds the 0 bytes that remain"
    );
    // Nesting is bounded.
    let err = ConfigMap::decode(
        &pb,
        Ctx {
            depth: 1,
            ..Ctx::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("nesting too deep"), "{err}");
    // A body without the magic.
    assert!(envelope::decode_envelope(b"{\"kind\":\"ConfigMap\"}").is_err());
}

#[test]
fn omitted_vs_empty_follow_go() {
    use k8s_openapi::api::apps::v1::DeploymentSpec;
    use k8s_openapi::api::core::v1::{Probe, ServicePort};
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIServiceSpec;

    // `[]byte` with omitempty: Go writes an empty non-nil slice, its JSON omits it.
    let spec = APIServiceSpec {
        ca_bundle: Some(ByteString(vec![])),
        ..Default::default()
    };
    let back = APIServiceSpec::decode(&spec.encode_to_vec(), Ctx::default()).unwrap();
    assert_eq!(back.ca_bundle, None);
    // A Go pointer keeps its zero value.
    let spec = DeploymentSpec {
        replicas: Some(0),
        ..Default::default()
    };
    let back = DeploymentSpec::decode(&spec.encode_to_vec(), Ctx::default()).unwrap();
    assert_eq!(back.replicas, Some(0));
    // A Go value with omitempty: zero is None (Go writes it, its JSON omits it).
    let probe = Probe {
        period_seconds: Some(0),
        ..Default::default()
    };
    let back = Probe::decode(&probe.encode_to_vec(), Ctx::default()).unwrap();
    assert_eq!(back.period_seconds, None);
    // A Go struct value held as an Option (`omitempty` does not omit structs in Go's JSON): Go
    // always writes it (None as its zero value), so it comes back Some, as Go's JSON has it.
    let port = ServicePort {
        port: 80,
        target_port: None,
        ..Default::default()
    };
    let back = ServicePort::decode(&port.encode_to_vec(), Ctx::default()).unwrap();
    assert_eq!(back.target_port, Some(IntOrString::Int(0)));
    assert_eq!(back.port, 80);
}
