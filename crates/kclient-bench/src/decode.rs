//! Scenario 5: list decoding. The typed list of all Pods in one request (no paging),
//! `--repeat` times in a row, as the peers do; then, for the limit, `--repeat` pairs of the
//! same typed list and the same response body fetched as bytes (the transfer alone) and parsed
//! by a bare `serde_json::from_slice` into k8s-openapi Pods, in turn, so that the typed list
//! and the bare parse decode into the same state of the heap. (Compared across the two loops,
//! the typed lists would pay for growing the heap while the bare parses reuse what they
//! freed: 0.35 s against 0.26 s for the same typed list of 10k Pods, transfer included.)
//! In each loop the first repetition pays the kernel for fresh pages; the median of the others
//! counts. The peak resident set is the first typed list's.

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
    let rest = |times: &[f64]| median(times.get(1..).filter(|t| !t.is_empty()).unwrap_or(times));
    Ok(json!({
        "objects": objects, "json_bytes": body_bytes, "http1": o.http1,
        "first_s": typed[0], "rss_peak": peak, "seconds": rest(&typed),
        "paired_s": rest(&paired), "transfer_s": rest(&transfer), "bare_parse_s": rest(&parse),
        "bare_parse_first_s": parse[0],
    }))
}
