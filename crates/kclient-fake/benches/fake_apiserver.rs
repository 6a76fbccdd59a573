//! Figures for the fake API server (`cargo bench -p kclient-fake --bench fake_apiserver`):
//! a list of 100k Pods over HTTP (whole and paged) and a watch fan-out to 100 watchers.
//! Prints a Markdown table; docs/benchmarks.md records the results.

use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use kclient_fake::FakeApiServer;
use serde_json::{json, Value};

const PODS: usize = 100_000;
const WATCHERS: usize = 100;
const EVENTS: usize = 1_000;

fn pod(i: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("pod-{i:06}"), "namespace": format!("ns-{}", i % 10),
                     "labels": {"app": format!("app-{}", i % 100), "tier": "backend"},
                     "annotations": {"example.com/owner": "team-a"}},
        "spec": {"nodeName": format!("node-{}", i % 50), "restartPolicy": "Always",
                 "containers": [{"name": "main", "image": "registry.example.com/app:1.2.3",
                                 "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                                 "env": [{"name": "MODE", "value": "production"}],
                                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]},
        "status": {"phase": "Running", "podIP": format!("10.0.{}.{}", (i / 250) % 250, i % 250)}
    })
}

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

async fn get(client: &HttpClient, url: &str) -> Bytes {
    let req = Request::get(url).body(Full::new(Bytes::new())).unwrap();
    let res = client.request(req).await.unwrap();
    assert!(res.status().is_success(), "{url}: {}", res.status());
    res.into_body().collect().await.unwrap().to_bytes()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let server = FakeApiServer::builder()
        .history_window(200_000)
        .start()
        .await
        .unwrap();
    let base = server.url();
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();

    let t = Instant::now();
    for i in 0..PODS {
        server.seed(pod(i)).unwrap();
    }
    let seed = t.elapsed();

    // A whole list, received in full and parsed as JSON by the client.
    let mut whole = Vec::new();
    let mut bytes = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let body = get(&client, &format!("{base}/api/v1/pods")).await;
        whole.push(t.elapsed());
        bytes = body.len();
    }
    let t = Instant::now();
    let body = get(&client, &format!("{base}/api/v1/pods")).await;
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["items"].as_array().unwrap().len(), PODS);
    let with_parse = t.elapsed();

    // Paged, 500 at a time (client-go's pager default).
    let mut paged = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let mut token = String::new();
        let mut n = 0;
        loop {
            let url = if token.is_empty() {
                format!("{base}/api/v1/pods?limit=500")
            } else {
                format!("{base}/api/v1/pods?limit=500&continue={token}")
            };
            let page: Value = serde_json::from_slice(&get(&client, &url).await).unwrap();
            n += page["items"].as_array().unwrap().len();
            match page["metadata"]["continue"].as_str() {
                Some(c) => token = c.to_string(),
                None => break,
            }
        }
        assert_eq!(n, PODS);
        paged.push(t.elapsed());
    }

    // A selective list (label selector matching 1%).
    let t = Instant::now();
    let sel: Value = serde_json::from_slice(
        &get(
            &client,
            &format!("{base}/api/v1/pods?labelSelector=app%3Dapp-7"),
        )
        .await,
    )
    .unwrap();
    assert_eq!(sel["items"].as_array().unwrap().len(), PODS / 100);
    let selective = t.elapsed();

    // Fan-out: 100 watchers, 1000 events each.
    let rv = server.resource_version();
    let mut handles = Vec::new();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(WATCHERS);
    for _ in 0..WATCHERS {
        let client = client.clone();
        let url = format!("{base}/api/v1/namespaces/fanout/pods?watch=true&resourceVersion={rv}");
        let ready = ready_tx.clone();
        handles.push(tokio::spawn(async move {
            let req = Request::get(&url).body(Full::new(Bytes::new())).unwrap();
            let res = client.request(req).await.unwrap();
            ready.send(()).await.unwrap();
            let mut body = res.into_body();
            let mut buf = BytesMut::new();
            let mut seen = 0;
            while seen < EVENTS {
                let frame = body.frame().await.unwrap().unwrap();
                if let Ok(data) = frame.into_data() {
                    buf.extend_from_slice(&data);
                    while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                        let line = buf.split_to(pos + 1);
                        let _: Value = serde_json::from_slice(&line[..pos]).unwrap();
                        seen += 1;
                    }
                }
            }
        }));
    }
    for _ in 0..WATCHERS {
        ready_rx.recv().await.unwrap();
    }
    let t = Instant::now();
    for i in 0..EVENTS {
        let mut p = pod(i);
        p["metadata"]["namespace"] = json!("fanout");
        server.seed(p).unwrap();
    }
    for h in handles {
        h.await.unwrap();
    }
    let fanout = t.elapsed();
    let deliveries = (WATCHERS * EVENTS) as f64;

    println!("| figure | value |");
    println!("|---|---|");
    println!(
        "| seed {PODS} Pods (no HTTP) | {:.2} s ({:.0} objects/s) |",
        seed.as_secs_f64(),
        PODS as f64 / seed.as_secs_f64()
    );
    println!("| list {PODS} Pods, whole (median of 5, body received) | {:.0} ms, {:.1} MB ({:.0} MB/s) |", median(whole.clone()).as_secs_f64() * 1e3, bytes as f64 / 1e6, bytes as f64 / 1e6 / median(whole).as_secs_f64());
    println!(
        "| list {PODS} Pods, whole, with client JSON parse | {:.0} ms |",
        with_parse.as_secs_f64() * 1e3
    );
    println!(
        "| list {PODS} Pods, paged by 500 (median of 3, with parse) | {:.0} ms |",
        median(paged).as_secs_f64() * 1e3
    );
    println!(
        "| list with a label selector matching 1% of {PODS} | {:.0} ms |",
        selective.as_secs_f64() * 1e3
    );
    println!("| watch fan-out: {EVENTS} events to {WATCHERS} watchers (received and parsed) | {:.0} ms ({:.0} deliveries/s) |", fanout.as_secs_f64() * 1e3, deliveries / fanout.as_secs_f64());
    server.shutdown().await;
}
