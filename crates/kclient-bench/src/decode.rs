//! Scenario 5: list decoding. The typed list of all Pods in one request (no paging),
//! `--repeat` times in a row, as the peers do; then, for the limit, `--repeat` pairs of the
//! same typed list and the same response body fetched as bytes (the transfer alone) and parsed
//! by a bare `serde_json::from_slice` into k8s-openapi Pods, in turn, so that the typed list
//! and the bare parse decode into the same state of the heap. (Compared across the two loops,
//! the typed lists would pay for growing the heap while the bare parses reuse what they
//! freed: 0.35 s against 0.26 s for the same typed list of 10k Pods, transfer included.)
//! In each loop the first repetition pays the kernel for fresh pages; the median of the others
//! counts. The peak resident set is the first typed list's.
//!
//! Then the same list as protobuf (`Accept: application/vnd.kubernetes.protobuf`; a server that
//! answers JSON gives no protobuf figures): its bytes, its transfer, and its decode straight
//! into k8s-openapi Pods by kclient-protobuf, taken in turn with the bare `serde_json` parse
//! of the JSON bytes, so the two decodes are compared in the same heap state.

use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kclient_core::{ListOptions, ObjectList};
use serde_json::{json, Value};

use crate::args::Options;
use crate::proc_stats::{median, reset_peak, status_bytes};
use crate::Error;

pub(crate) async fn run(o: &Options) -> Result<Value, Error> {
    let clientset = o.clientset()?;
    let pods = clientset.namespaced::<Pod>(&o.namespace);
    let mut typed = Vec::with_capacity(o.repeat);
    let (mut objects, mut peak) = (0, 0);
    reset_peak();
    for round in 0..o.repeat {
        let start = Instant::now();
        let list = pods.list(&ListOptions::default()).await?;
        typed.push(start.elapsed().as_secs_f64());
        objects = list.items.len();
        if round == 0 {
            peak = status_bytes("VmHWM:");
        }
    }
    let path = match o.namespace() {
        Some(ns) => format!("/api/v1/namespaces/{ns}/pods"),
        None => "/api/v1/pods".to_owned(),
    };
    let mut paired = Vec::with_capacity(o.repeat);
    let mut transfer = Vec::with_capacity(o.repeat);
    let mut parse = Vec::with_capacity(o.repeat);
    let mut body_bytes = 0;
    for _ in 0..o.repeat {
        let start = Instant::now();
        let list = pods.list(&ListOptions::default()).await?;
        paired.push(start.elapsed().as_secs_f64());
        drop(list);
        let start = Instant::now();
        let body = clientset
            .rest_client()
            .get()
            .abs_path(path.clone())
            .header("Accept", "application/json")
            .bytes()
            .await?;
        transfer.push(start.elapsed().as_secs_f64());
        body_bytes = body.len();
        let start = Instant::now();
        let parsed: ObjectList<Pod> = serde_json::from_slice(&body)?;
        parse.push(start.elapsed().as_secs_f64());
        if parsed.items.len() != objects {
            return Err(format!(
                "the bare parse found {} Pods, the typed list {objects}",
                parsed.items.len()
            )
            .into());
        }
    }
    let protobuf = protobuf_decode(o, &path, objects).await?;
    let rest = |times: &[f64]| median(times.get(1..).filter(|t| !t.is_empty()).unwrap_or(times));
    let protobuf = match protobuf {
        Some(p) => json!({
            "protobuf_bytes": p.bytes, "protobuf_transfer_s": rest(&p.transfer),
            "protobuf_decode_s": rest(&p.decode), "json_parse_in_turn_s": rest(&p.json_parse),
        }),
        None => json!({}),
    };
    let mut result = json!({
        "objects": objects, "json_bytes": body_bytes, "http1": o.http1,
        "first_s": typed[0], "rss_peak": peak, "seconds": rest(&typed),
        "paired_s": rest(&paired), "transfer_s": rest(&transfer), "bare_parse_s": rest(&parse),
        "bare_parse_first_s": parse[0],
    });
    if let (Some(out), Some(extra)) = (result.as_object_mut(), protobuf.as_object()) {
        out.extend(extra.clone());
    }
    Ok(result)
}

/// The Pods of a protobuf `PodList` body, decoded by kclient-protobuf straight into
/// k8s-openapi Pods.
pub(crate) fn protobuf_pods(body: &[u8], ctx: kclient_protobuf::Ctx) -> Result<Vec<Pod>, Error> {
    use kclient_protobuf::{envelope, registry};
    let codec = registry::codec::<Pod>().ok_or("no protobuf codec for Pods")?;
    let mut pods = Vec::new();
    envelope::decode_list_with(
        envelope::decode_envelope(body)?.raw,
        ctx,
        |b, ctx| codec.decode_message(b, ctx),
        &mut |pod| pods.push(pod),
    )?;
    Ok(pods)
}

/// The protobuf pair of measurements: see the module docs.
struct ProtobufDecode {
    bytes: usize,
    transfer: Vec<f64>,
    decode: Vec<f64>,
    json_parse: Vec<f64>,
}

async fn protobuf_decode(
    o: &Options,
    path: &str,
    objects: usize,
) -> Result<Option<ProtobufDecode>, Error> {
    use kclient_protobuf::Ctx;
    let rest = o.clientset()?.rest_client().clone();
    let fetch = |accept: &'static str| {
        rest.get()
            .abs_path(path.to_owned())
            .header("Accept", accept)
            .send()
    };
    let json_body = fetch("application/json").await?.into_body();
    let mut p = ProtobufDecode {
        bytes: 0,
        transfer: Vec::new(),
        decode: Vec::new(),
        json_parse: Vec::new(),
    };
    for _ in 0..o.repeat {
        let start = Instant::now();
        let response = fetch(kclient_rest::PROTOBUF_MEDIA_TYPE).await?;
        p.transfer.push(start.elapsed().as_secs_f64());
        if !response.is_protobuf() {
            return Ok(None);
        }
        let body = response.into_body();
        p.bytes = body.len();
        let start = Instant::now();
        let pods = protobuf_pods(&body, Ctx::default())?;
        p.decode.push(start.elapsed().as_secs_f64());
        if pods.len() != objects {
            return Err("the protobuf list and the typed list differ in length".into());
        }
        drop(pods);
        let start = Instant::now();
        let parsed: ObjectList<Pod> = serde_json::from_slice(&json_body)?;
        p.json_parse.push(start.elapsed().as_secs_f64());
        if parsed.items.len() != objects {
            return Err("the protobuf and JSON lists differ in length".into());
        }
    }
    Ok(Some(p))
}
