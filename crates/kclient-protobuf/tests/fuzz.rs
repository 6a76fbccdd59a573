//! Fuzz targets for the decoders, as property tests: arbitrary bytes and mutations of valid
//! bodies give a value or a typed error, never a panic, and decoding allocates at most a bound
//! proportional to the input. A bounded number of cases runs with the tests, from a fixed seed
//! (`kclient-testkit`); `cargo xtask fuzz protobuf` runs them longer with new seeds.
//!
//! The allocation bound is enforced by a capped global allocator ([`cap`]): around each decode
//! the cap is lowered to what is allocated plus `ALLOC_PER_BYTE × input + ALLOC_BASE`, so a
//! decode that allocated more would fail its allocation (and abort the test). Then what the
//! decoded value keeps is measured and checked against the same bound. The per-byte constant
//! is large because two input bytes (`key, 0`) can add one defaulted element to a `Vec` of big
//! structs (a `Container` is about a kilobyte), exactly as `[{}]` does on the JSON path; it is
//! a constant, not a function of the lengths the input claims.
//!
//! The allocator's count is process-wide, so this target has no test harness (`harness = false`
//! in Cargo.toml): `main` runs the checks one after the other on its own thread, with no other
//! thread allocating meanwhile, so what is measured is the decode's alone and the same commit
//! always measures the same.

use std::alloc::System;

use cap::Cap;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kclient_protobuf::envelope::{self, FrameDecoder};
use kclient_protobuf::list_reader::{ListPiece, ListReader};
use kclient_protobuf::{Ctx, Decode, Encode};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

const ALLOC_PER_BYTE: usize = 4096;
const ALLOC_BASE: usize = 64 * 1024;

/// Runs `decode` under the cap; returns the bytes its result keeps.
fn bounded<T>(input_len: usize, decode: impl FnOnce() -> T) -> (T, usize) {
    let bound = ALLOC_PER_BYTE * input_len + ALLOC_BASE;
    let before = ALLOCATOR.allocated();
    ALLOCATOR
        .set_limit(before + bound)
        .expect("the cap is above what is allocated");
    let value = decode();
    let kept = ALLOCATOR.allocated().saturating_sub(before);
    ALLOCATOR
        .set_limit(usize::MAX)
        .expect("raising the cap always works");
    assert!(
        kept <= bound,
        "kept {kept} bytes for {input_len} input bytes"
    );
    (value, kept)
}

/// Every decoder on one input.
fn decode_everything(bytes: &[u8]) {
    bounded(bytes.len(), || Pod::decode(bytes, Ctx::default()).ok());
    bounded(bytes.len(), || {
        JSONSchemaProps::decode(bytes, Ctx::default()).ok()
    });
    bounded(bytes.len(), || {
        CustomResourceDefinition::decode(bytes, Ctx::default()).ok()
    });
    bounded(bytes.len(), || {
        envelope::decode_object::<Pod>(
            bytes,
            "Pod",
            Ctx {
                skip_managed_fields: true,
                ..Ctx::default()
            },
        )
        .ok()
    });
    bounded(bytes.len(), || {
        let mut items = Vec::new();
        let meta = envelope::decode_list::<Pod>(bytes, Ctx::default(), &mut |p| items.push(p)).ok();
        (meta, items)
    });
    bounded(bytes.len(), || envelope::peek_list_meta(bytes).ok());
    bounded(bytes.len(), || {
        let mut decoder = FrameDecoder::new(1024);
        let mut events = Vec::new();
        for chunk in bytes.chunks(7) {
            decoder.push(chunk);
            while let Some(Ok(frame)) = decoder.next_frame() {
                if let Ok((ty, object)) = envelope::decode_watch_event(&frame) {
                    events.push((
                        ty,
                        envelope::decode_object::<Pod>(object, "Pod", Ctx::default()).ok(),
                    ));
                }
            }
        }
        events
    });
    bounded(bytes.len(), || {
        let mut reader = ListReader::new(1024);
        let mut items = Vec::new();
        'read: for chunk in bytes.chunks(5) {
            reader.push(chunk);
            loop {
                match reader.next_piece() {
                    Ok(Some(ListPiece::Item(item))) => {
                        items.push(Pod::decode(item, Ctx::default()).ok())
                    }
                    Ok(Some(ListPiece::Metadata(_))) => {}
                    Ok(None) => break,
                    Err(_) => break 'read,
                }
            }
        }
        (items, reader.finish().is_ok())
    });
}

/// A valid Pod body to mutate: a few nested messages, lists, maps, times and quantities.
fn sample_pod() -> Vec<u8> {
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web-0", "namespace": "default", "labels": {"app": "web"},
                     "creationTimestamp": "2025-03-14T15:09:26Z",
                     "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1",
                                        "fieldsV1": {"f:spec": {}}}]},
        "spec": {"containers": [{"name": "web", "image": "nginx",
                                 "ports": [{"containerPort": 80}],
                                 "resources": {"limits": {"cpu": "500m"}},
                                 "livenessProbe": {"httpGet": {"port": "http", "path": "/"}}}],
                 "volumes": [{"name": "data", "emptyDir": {}}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                                                        "lastTransitionTime": "2025-03-14T15:09:30Z"}]}
    }))
    .expect("a valid Pod");
    envelope::encode_envelope("v1", "Pod", &pod)
}

/// Arbitrary bytes, mutations of a valid body and truncations of it through every decoder.
fn decoders_never_panic_and_allocate_in_proportion() {
    let config = kclient_testkit::proptest_config(
        1024,
        concat!(env!("CARGO_MANIFEST_DIR"), "/proptest-regressions/fuzz.txt"),
    );
    let inputs = (
        proptest::collection::vec(any::<u8>(), 0..512),
        proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        any::<usize>(),
    );
    let sample = sample_pod();
    let raw = envelope::decode_envelope(&sample)
        .map(|u| u.raw.to_vec())
        .unwrap_or_default();
    let result = TestRunner::new(config).run(&inputs, |(bytes, flips, cut)| {
        decode_everything(&bytes);
        // Mutations of a valid body reach deeper than random bytes do.
        let mut body = sample.clone();
        for (at, byte) in flips {
            let i = at % body.len();
            body[i] = byte;
        }
        decode_everything(&body);
        decode_everything(&raw[..cut % (raw.len() + 1)]);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

fn deep_nesting_is_an_error_not_a_stack_overflow() {
    // JSONSchemaProps.not (#28) nested 10,000 times: each level is a length-delimited field.
    let mut msg: Vec<u8> = Vec::new();
    for _ in 0..10_000 {
        let mut outer = vec![0xe2, 0x01]; // key of field 28, length-delimited
        prost_varint(msg.len() as u64, &mut outer);
        outer.extend_from_slice(&msg);
        msg = outer;
    }
    let err = JSONSchemaProps::decode(&msg, Ctx::default()).unwrap_err();
    assert!(err.to_string().contains("nesting too deep"), "{err}");
    // 50 levels are fine and come back the same.
    let mut props = JSONSchemaProps::default();
    for _ in 0..50 {
        props = JSONSchemaProps {
            not: Some(Box::new(props)),
            ..Default::default()
        };
    }
    let back = JSONSchemaProps::decode(&props.encode_to_vec(), Ctx::default()).unwrap();
    assert_eq!(back, props);
}

fn prost_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn claimed_lengths_allocate_nothing_up_front() {
    // A string field claiming 4 GiB with 3 bytes behind it: refused before anything is
    // allocated for it (the cap would fail a 4 GiB allocation); what is kept is the error.
    let input = [0x0a, 0x80, 0x80, 0x80, 0x80, 0x10, b'a', b'b', b'c'];
    let (result, kept) = bounded(input.len(), || Pod::decode(&input, Ctx::default()));
    let err = result.unwrap_err();
    assert!(
        err.to_string().contains("exceeds the 3 bytes that remain"),
        "{err}"
    );
    assert!(kept < 1024, "{kept}");
}

/// A list read as it arrives holds the item being received, not the list: 2,000 Pods
/// (about 2.5 MB) pushed in 16 KiB chunks, each item's bytes handed out and dropped, under
/// a cap of a few chunks and items above what was allocated before.
fn a_list_read_as_it_arrives_holds_one_item_not_the_list() {
    let pod = envelope::decode_object::<Pod>(&sample_pod(), "Pod", Ctx::default()).unwrap();
    let pods = vec![pod; 2000];
    let body = envelope::encode_list("v1", "PodList", &ListMeta::default(), &pods);
    drop(pods);
    let item_len = body.len() / 2000;
    let chunk = 16 * 1024;
    let before = ALLOCATOR.allocated();
    let bound = 4 * (chunk + item_len) + ALLOC_BASE;
    ALLOCATOR
        .set_limit(before + bound)
        .expect("the cap is above what is allocated");
    let mut reader = ListReader::new(1 << 20);
    let (mut items, mut most) = (0, 0);
    for piece in body.chunks(chunk) {
        reader.push(piece);
        while let Some(piece) = reader.next_piece().expect("a valid list") {
            items += usize::from(matches!(piece, ListPiece::Item(_)));
        }
        most = most.max(ALLOCATOR.allocated() - before);
    }
    let finished = reader.finish();
    drop(reader);
    ALLOCATOR
        .set_limit(usize::MAX)
        .expect("raising the cap always works");
    finished.expect("the whole list");
    assert_eq!(items, 2000);
    assert!(
        most <= bound,
        "held {most} bytes reading {} (bound {bound})",
        body.len()
    );
}

fn main() {
    let checks: [(&str, fn()); 4] = [
        (
            "decoders_never_panic_and_allocate_in_proportion",
            decoders_never_panic_and_allocate_in_proportion,
        ),
        (
            "deep_nesting_is_an_error_not_a_stack_overflow",
            deep_nesting_is_an_error_not_a_stack_overflow,
        ),
        (
            "claimed_lengths_allocate_nothing_up_front",
            claimed_lengths_allocate_nothing_up_front,
        ),
        (
            "a_list_read_as_it_arrives_holds_one_item_not_the_list",
            a_list_read_as_it_arrives_holds_one_item_not_the_list,
        ),
    ];
    for (name, check) in checks {
        check(); // a failure panics: the process exits non-zero with the message
        println!("test {name} ... ok");
    }
    println!("{} passed, 0 failed", checks.len());
}
