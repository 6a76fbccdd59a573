//! Does CBOR help the clients that get no protobuf? (issue 44: KEP-4222, client gates
//! `ClientsAllowCBOR` / `ClientsPreferCBOR`, alpha.) A measurement, not a test: it runs only
//! when asked (`--ignored`) and asserts nothing about time.
//!
//! It starts kube-apiserver 1.37 with `CBORServingAndStorage` on, installs a CRD, creates
//! custom resources of a realistic size, and lists them over and over as the dynamic client
//! would, alternating `Accept: application/json` and `Accept: application/cbor`: the bytes on
//! the wire (gzip asked for, as kclient does by default, and not), the time to fetch the body
//! and the time to decode it into a value tree (`serde_json::Value` with serde_json for JSON,
//! `ciborium::Value` with ciborium, the Rust ecosystem's CBOR decoder, for CBOR). The figures and what they decided are in
//! docs/benchmarks.md ("CBOR for custom resources").
//!
//! ```text
//! KCLIENT_ENVTEST_BINARIES=~/.cache/kclient/e2e/v1.37.1/bin \
//!   cargo test --release -p kclient-envtest --features clientset --test cbor_probe -- --ignored --nocapture
//! ```

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use kclient_envtest::Environment;
use kclient_rest::RestClient;
use serde_json::{json, Value};

/// How many custom resources are listed.
const OBJECTS: usize = 5_000;
/// How many lists of each format are timed.
const ROUNDS: usize = 7;

const CRD: &str = "probes.cbor.kclient.dev";
const LIST: &str = "/apis/cbor.kclient.dev/v1/namespaces/default/probes";

fn crd() -> Value {
    let string = json!({"type": "string"});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD},
        "spec": {
            "group": "cbor.kclient.dev", "scope": "Namespaced",
            "names": {"kind": "Probe", "plural": "probes", "singular": "probe", "listKind": "ProbeList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {
                    "image": string, "replicas": {"type": "integer"}, "paused": {"type": "boolean"},
                    "ratio": {"type": "number"},
                    "labels": {"type": "object", "additionalProperties": string},
                    "ports": {"type": "array", "items": {"type": "object", "properties": {
                        "name": string, "port": {"type": "integer"}, "protocol": string}}},
                    "env": {"type": "array", "items": {"type": "object", "properties": {
                        "name": string, "value": string}}}
                }}}
            }}}]
        }
    })
}

/// A custom resource of about 1.5 KB of JSON: strings, numbers, booleans, a map and lists.
fn probe(i: usize) -> Value {
    json!({
        "apiVersion": "cbor.kclient.dev/v1", "kind": "Probe",
        "metadata": {"name": format!("probe-{i:05}"), "labels": {"app": "probe", "shard": format!("{}", i % 16)}},
        "spec": {
            "image": format!("registry.example.com/team/service-{}:v1.{}.{}", i % 50, i % 7, i % 13),
            "replicas": i % 10, "paused": i.is_multiple_of(3), "ratio": (i as f64) / 7.0,
            "labels": {"tier": "backend", "owner": format!("team-{}", i % 9), "cost-centre": "cc-1234"},
            "ports": [
                {"name": "http", "port": 8080, "protocol": "TCP"},
                {"name": "metrics", "port": 9090, "protocol": "TCP"}
            ],
            "env": (0..8).map(|e| json!({"name": format!("SETTING_{e}"), "value": format!("value-{i}-{e}-abcdefgh")})).collect::<Vec<_>>()
        }
    })
}

/// One timed list: bytes received, fetch and decode times.
struct Sample {
    bytes: usize,
    fetch: Duration,
    decode: Duration,
}

async fn list(client: &RestClient, accept: &str, gzip: bool) -> Sample {
    let mut request = client.get().abs_path(LIST).header("Accept", accept);
    if !gzip {
        request = request.header("Accept-Encoding", "identity");
    }
    let started = Instant::now();
    let body = request.bytes().await.expect("list");
    let fetch = started.elapsed();
    let started = Instant::now();
    let items = if accept == "application/cbor" {
        // CBOR's own value tree (kube-apiserver tags its answers as self-described CBOR,
        // which serde_json's Value cannot hold).
        let value: ciborium::Value = ciborium::from_reader(&body[..]).expect("CBOR list");
        cbor_items(&value)
    } else {
        let value: Value = serde_json::from_slice(&body).expect("JSON list");
        value["items"].as_array().map(Vec::len)
    };
    let decode = started.elapsed();
    assert_eq!(items, Some(OBJECTS), "{accept}: every object listed");
    Sample {
        bytes: body.len(),
        fetch,
        decode,
    }
}

/// How many items a CBOR list holds, under its self-described CBOR tag.
fn cbor_items(value: &ciborium::Value) -> Option<usize> {
    let value = match value {
        ciborium::Value::Tag(_, inner) => inner,
        other => other,
    };
    let map = value.as_map()?;
    // Kubernetes writes Go strings, map keys included, as CBOR byte strings.
    let is_items = |key: &ciborium::Value| {
        key.as_text() == Some("items") || key.as_bytes().map(Vec::as_slice) == Some(b"items")
    };
    map.iter()
        .find(|(key, _)| is_items(key))
        .and_then(|(_, items)| items.as_array())
        .map(Vec::len)
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run it with --ignored (see the module docs)"]
async fn cbor_against_json_for_custom_resources() {
    let env = Environment::builder()
        .apiserver_arg("--feature-gates=CBORServingAndStorage=true")
        .start()
        .await
        .expect("kube-apiserver with CBORServingAndStorage");
    let client = RestClient::new(env.config()).expect("client");
    client
        .post()
        .abs_path("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
        .body(serde_json::to_vec(&crd()).unwrap())
        .header("Content-Type", "application/json")
        .bytes()
        .await
        .expect("CRD");
    // Wait until the CRD serves.
    let deadline = Instant::now() + Duration::from_secs(60);
    while client.get().abs_path(LIST).bytes().await.is_err() {
        assert!(Instant::now() < deadline, "the CRD never served");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut created = futures::stream::iter(0..OBJECTS)
        .map(|i| {
            let client = client.clone();
            async move {
                client
                    .post()
                    .abs_path(LIST)
                    .body(serde_json::to_vec(&probe(i)).unwrap())
                    .header("Content-Type", "application/json")
                    .bytes()
                    .await
            }
        })
        .buffer_unordered(16);
    while let Some(result) = created.next().await {
        result.expect("create");
    }

    for gzip in [true, false] {
        let mut samples: Vec<(&str, Vec<Sample>)> = vec![
            ("application/json", Vec::new()),
            ("application/cbor", Vec::new()),
        ];
        for round in 0..ROUNDS {
            // A different format first each round.
            let order: [usize; 2] = if round.is_multiple_of(2) {
                [0, 1]
            } else {
                [1, 0]
            };
            for i in order {
                let accept = samples[i].0;
                let sample = list(&client, accept, gzip).await;
                samples[i].1.push(sample);
            }
        }
        for (accept, runs) in &samples {
            let bytes = runs[0].bytes;
            let fetch = median(runs.iter().map(|s| s.fetch).collect());
            let decode = median(runs.iter().map(|s| s.decode).collect());
            println!(
                "cbor-probe: {OBJECTS} objects, gzip {gzip}, {accept}: {bytes} bytes, fetch {fetch:?}, decode {decode:?} (medians of {ROUNDS})"
            );
        }
    }
    env.stop().expect("stop");
}
