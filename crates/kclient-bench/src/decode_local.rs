//! `decode-local`: the decoders alone, no server: `--count` of kclient-fake's realistic Pods
//! (with managedFields) as one JSON list and one protobuf list in memory, decoded `--repeat`
//! times each, in turn — `serde_json` into k8s-openapi Pods against kclient-protobuf — with and
//! without managedFields (skipped while decoding, as informers do); and, as the yardstick,
//! prost's decode of the same protobuf bytes into k8s-pb's `PodList` (kube-rs's protobuf
//! bindings, which keep each `FieldsV1` as its raw JSON string and cannot skip a field).

use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kclient_core::ObjectList;
use kclient_protobuf::{envelope, Ctx};
use serde_json::{json, Value};

use crate::args::Options;
use crate::decode::protobuf_pods;
use crate::proc_stats::median;
use crate::Error;

pub(crate) fn run(o: &Options) -> Result<Value, Error> {
    let pods: Vec<Pod> = (0..o.count)
        .map(|i| serde_json::from_value(kclient_fake::samples::realistic_pod(i, true)))
        .collect::<Result<_, _>>()?;
    let json_body = serde_json::to_vec(&json!({
        "apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "1"}, "items": pods,
    }))?;
    let protobuf_body = envelope::encode_list(
        "v1",
        "PodList",
        &k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta::default(),
        &pods,
    );
    drop(pods);
    let mut times: [Vec<f64>; 4] = Default::default();
    let mut prost_times = Vec::new();
    for _ in 0..o.repeat {
        prost_times.push(prost_decode(&protobuf_body, o.count)?);
        for (slot, skip) in [(0, false), (2, true)] {
            let start = Instant::now();
            let list: ObjectList<Pod> = if skip {
                json_list_without_managed_fields(&json_body)?
            } else {
                serde_json::from_slice(&json_body)?
            };
            times[slot].push(start.elapsed().as_secs_f64());
            drop(list);
            let start = Instant::now();
            let ctx = Ctx {
                skip_managed_fields: skip,
                ..Ctx::default()
            };
            let decoded = protobuf_pods(&protobuf_body, ctx)?;
            times[slot + 1].push(start.elapsed().as_secs_f64());
            if decoded.len() != o.count {
                return Err("the protobuf list lost Pods".into());
            }
        }
    }
    Ok(json!({
        "count": o.count, "json_bytes": json_body.len(), "protobuf_bytes": protobuf_body.len(),
        "json_s": median(&times[0]), "protobuf_s": median(&times[1]),
        "json_without_managed_fields_s": median(&times[2]),
        "protobuf_without_managed_fields_s": median(&times[3]),
        "prost_k8s_pb_s": median(&prost_times),
    }))
}

/// Seconds to decode `body` (a protobuf `PodList` in its envelope) into k8s-pb's types with
/// prost, checking that it holds `count` Pods.
fn prost_decode(body: &[u8], count: usize) -> Result<f64, Error> {
    use prost::Message;
    let start = Instant::now();
    let raw = envelope::decode_envelope(body)?.raw;
    let list = k8s_pb::api::core::v1::PodList::decode(raw)?;
    let took = start.elapsed().as_secs_f64();
    if list.items.len() != count {
        return Err("prost's list lost Pods".into());
    }
    Ok(took)
}

/// A JSON list decoded as an informer's list is: item by item from the list reader, each
/// without managedFields.
fn json_list_without_managed_fields(body: &[u8]) -> Result<ObjectList<Pod>, Error> {
    use kclient_core::json_list::{JsonListPiece, JsonListReader};
    let mut reader = JsonListReader::new(body.len());
    reader.push(body);
    let mut items = Vec::new();
    while let Some(piece) = reader.next_piece()? {
        if let JsonListPiece::Item(json) = piece {
            items.push(kclient_core::managed_fields::decode_object(json, true)?);
        }
    }
    let end = reader.finish()?;
    Ok(ObjectList {
        types: end.types,
        metadata: end.metadata,
        items,
    })
}
