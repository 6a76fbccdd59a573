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

/// The sizes of one run: the full figures under `cargo bench` (which passes `--bench`), and
/// a small smoke run under `cargo test --all-targets`, which only checks that the program
/// still works.
struct Sizes {
    pods: usize,
    watchers: usize,
    events: usize,
}

impl Sizes {
    fn from_args() -> Self {
        if std::env::args().any(|a| a == "--bench") {
            Self {
                pods: 100_000,
                watchers: 100,
                events: 1_000,
            }
        } else {
            Self {
                pods: 1_000,
                watchers: 10,
                events: 100,
            }
        }
    }
}

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
    let Sizes {
        pods,
        watchers,
        events,
    } = Sizes::from_args();
    let server = FakeApiServer::builder()
        .history_window(200_000)
        .start()
        .await
        .unwrap();
    let base = server.url();
    let client: HttpClient = Client::builder(TokioExecutor::new()).build_http();

    let t = Instant::now();
    for i in 0..pods {
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
    assert_eq!(v["items"].as_array().unwrap().len(), pods);
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
        assert_eq!(n, pods);
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
    assert_eq!(sel["items"].as_array().unwrap().len(), pods / 100);
    let selective = t.elapsed();

    // Fan-out: 100 watchers, 1000 events each.
    let rv = server.resource_version();
    let mut handles = Vec::new();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(watchers);
    for _ in 0..watchers {
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
            while seen < events {
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
    for _ in 0..watchers {
        ready_rx.recv().await.unwrap();
    }
    let t = Instant::now();
    for i in 0..events {
        let mut p = pod(i);
        p["metadata"]["namespace"] = json!("fanout");
        server.seed(p).unwrap();
    }
    for h in handles {
        h.await.unwrap();
    }
    let fanout = t.elapsed();
    let deliveries = (watchers * events) as f64;

    println!("| figure | value |");
    println!("|---|---|");
    println!(
        "| seed {pods} Pods (no HTTP) | {:.2} s ({:.0} objects/s) |",
        seed.as_secs_f64(),
        pods as f64 / seed.as_secs_f64()
    );
    println!("| list {pods} Pods, whole (median of 5, body received) | {:.0} ms, {:.1} MB ({:.0} MB/s) |", median(whole.clone()).as_secs_f64() * 1e3, bytes as f64 / 1e6, bytes as f64 / 1e6 / median(whole).as_secs_f64());
    println!(
        "| list {pods} Pods, whole, with client JSON parse | {:.0} ms |",
        with_parse.as_secs_f64() * 1e3
    );
    println!(
        "| list {pods} Pods, paged by 500 (median of 3, with parse) | {:.0} ms |",
        median(paged).as_secs_f64() * 1e3
    );
    println!(
        "| list with a label selector matching 1% of {pods} | {:.0} ms |",
        selective.as_secs_f64() * 1e3
    );
    println!("| watch fan-out: {events} events to {watchers} watchers (received and parsed) | {:.0} ms ({:.0} deliveries/s) |", fanout.as_secs_f64() * 1e3, deliveries / fanout.as_secs_f64());
    server.shutdown().await;
}
