//! Sharded list and watch (KEP-5866), as kube-apiserver 1.37.1 serves them with the alpha gate
//! `ShardedListAndWatch`: `shardSelector` filters lists (paged or not, JSON or protobuf),
//! watches and streaming lists by the FNV-1a hash of `metadata.uid` or
//! `metadata.namespace`; lists echo the canonical selector in `metadata.shardInfo` and leave
//! `remainingItemCount` out; a selector the server cannot read is a `500` without a reason;
//! without the gate the parameter is ignored.

use std::collections::BTreeSet;

use crate::common;

use common::*;
use http::StatusCode;
use k8s_openapi::api::core::v1::Pod;
use kclient_core::sharding::{ShardKey, ShardSelector};
use kclient_fake::FakeApiServer;
use kclient_protobuf::{envelope, Ctx};
use serde_json::{json, Value};

const PODS: &str = "/api/v1/namespaces/default/pods";

async fn sharded_server() -> (FakeApiServer, Client) {
    let server = FakeApiServer::builder()
        .sharded_list_and_watch(true)
        .start()
        .await
        .expect("server starts");
    let client = Client::new(&server);
    (server, client)
}

/// `selector` as a query parameter value.
fn query(selector: &str) -> String {
    selector
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'_' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn create_pods(c: &Client, namespace: &str, n: usize) -> Vec<Value> {
    let mut created = Vec::new();
    for i in 0..n {
        let r = c
            .post(
                &format!("/api/v1/namespaces/{namespace}/pods"),
                &pod(&format!("p{i}")),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        created.push(r.body);
    }
    created
}

fn uid(obj: &Value) -> &str {
    obj["metadata"]["uid"].as_str().expect("a uid")
}

fn uids(list: &Value) -> BTreeSet<String> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| uid(i).to_owned())
        .collect()
}

#[tokio::test]
async fn shards_of_a_list_are_disjoint_and_cover_it() {
    let (_server, c) = sharded_server().await;
    let pods = create_pods(&c, "default", 40).await;
    let mut seen = BTreeSet::new();
    for index in 0..3 {
        let selector = ShardSelector::shard(ShardKey::Uid, index, 3).unwrap();
        let r = c
            .get(&format!(
                "{PODS}?shardSelector={}",
                query(&selector.to_string())
            ))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        assert_eq!(
            r.body["metadata"]["shardInfo"],
            json!({"selector": selector.to_string()})
        );
        for uid in uids(&r.body) {
            assert!(selector.matches_value(&uid));
            assert!(seen.insert(uid), "in two shards");
        }
    }
    let all: BTreeSet<_> = pods.iter().map(|p| uid(p).to_owned()).collect();
    assert_eq!(seen, all);
}

#[tokio::test]
async fn the_echo_is_the_canonical_form_and_pages_keep_the_shard() {
    let (_server, c) = sharded_server().await;
    create_pods(&c, "default", 30).await;
    // Spelled another way than the server writes it: its echo is canonical.
    let written =
        "(shardRange( object.metadata.uid ,\"0x0000000000000000\", '0x8000000000000000'))";
    let selector = ShardSelector::parse(written).unwrap();
    let mut uids_paged = BTreeSet::new();
    let mut path = format!("{PODS}?limit=4&shardSelector={}", query(written));
    loop {
        let r = c.get(&path).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        assert_eq!(
            r.body["metadata"]["shardInfo"]["selector"],
            json!(selector.to_string())
        );
        assert!(r.body["metadata"].get("remainingItemCount").is_none());
        uids_paged.extend(uids(&r.body));
        match r.body["metadata"]["continue"].as_str() {
            Some(token) => {
                path = format!(
                    "{PODS}?limit=4&continue={token}&shardSelector={}",
                    query(written)
                )
            }
            None => break,
        }
    }
    let whole = c
        .get(&format!("{PODS}?shardSelector={}", query(written)))
        .await;
    assert_eq!(uids_paged, uids(&whole.body));
    assert!(uids_paged.iter().all(|u| selector.matches_value(u)));
}

#[tokio::test]
async fn by_namespace_a_namespace_stays_together() {
    let (_server, c) = sharded_server().await;
    for ns in ["a", "b", "c", "d"] {
        let r = c
            .post(
                "/api/v1/namespaces",
                &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED);
        create_pods(&c, ns, 3).await;
    }
    let selector = ShardSelector::shard(ShardKey::Namespace, 0, 2).unwrap();
    let r = c
        .get(&format!(
            "/api/v1/pods?shardSelector={}",
            query(&selector.to_string())
        ))
        .await;
    let namespaces: Vec<&str> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["metadata"]["namespace"].as_str().unwrap())
        .collect();
    for ns in ["a", "b", "c", "d"] {
        let count = namespaces.iter().filter(|n| **n == ns).count();
        assert_eq!(
            count,
            if selector.matches_value(ns) { 3 } else { 0 },
            "{ns}"
        );
    }
}

#[tokio::test]
async fn protobuf_lists_carry_shard_info() {
    let (_server, c) = sharded_server().await;
    create_pods(&c, "default", 10).await;
    let selector = ShardSelector::shard(ShardKey::Uid, 1, 2).unwrap();
    let r = c
        .clone()
        .with_header("accept", "application/vnd.kubernetes.protobuf")
        .get(&format!(
            "{PODS}?shardSelector={}",
            query(&selector.to_string())
        ))
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let unknown = envelope::decode_envelope(&r.raw).expect("an envelope");
    let mut items = Vec::new();
    let meta = envelope::decode_list(unknown.raw, Ctx::default(), &mut |p: Pod| items.push(p))
        .expect("a list");
    assert!(selector.is_echoed_by(&meta));
    for p in &items {
        assert!(selector.matches(&p.metadata));
    }
}

#[tokio::test]
async fn watches_and_streaming_lists_see_only_their_shard() {
    let (_server, c) = sharded_server().await;
    let before = create_pods(&c, "default", 10).await;
    let selector = ShardSelector::shard(ShardKey::Uid, 0, 2).unwrap();
    let q = query(&selector.to_string());
    let mut streaming = c
        .watch(&format!(
            "{PODS}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&shardSelector={q}"
        ))
        .await;
    let expected: BTreeSet<_> = before
        .iter()
        .map(|p| uid(p).to_owned())
        .filter(|u| selector.matches_value(u))
        .collect();
    let mut initial = BTreeSet::new();
    loop {
        let event = streaming.next().await.expect("an event");
        if event["type"] == "BOOKMARK" {
            break;
        }
        assert_eq!(event["type"], "ADDED");
        initial.insert(uid(&event["object"]).to_owned());
    }
    assert_eq!(initial, expected);

    let mut watch = c
        .watch(&format!(
            "{PODS}?watch=true&resourceVersion={}&shardSelector={q}",
            rv(before.last().unwrap())
        ))
        .await;
    let after: Vec<Value> = {
        let mut created = Vec::new();
        for i in 0..10 {
            let r = c.post(PODS, &pod(&format!("later{i}"))).await;
            created.push(r.body);
        }
        created
    };
    let in_shard: Vec<_> = after
        .iter()
        .map(|p| uid(p).to_owned())
        .filter(|u| selector.matches_value(u))
        .collect();
    let mut watched = Vec::new();
    while watched.len() < in_shard.len() {
        let event = watch.next().await.expect("an event");
        assert_eq!(event["type"], "ADDED");
        watched.push(uid(&event["object"]).to_owned());
    }
    assert_eq!(watched, in_shard);
    // A change to an object of another shard is not seen; one to this shard's is next.
    let outside = after
        .iter()
        .find(|p| !selector.matches_value(uid(p)))
        .unwrap();
    let inside = after
        .iter()
        .find(|p| selector.matches_value(uid(p)))
        .unwrap();
    for p in [outside, inside] {
        let name = p["metadata"]["name"].as_str().unwrap();
        let r = c
            .patch(
                &format!("{PODS}/{name}"),
                "application/merge-patch+json",
                r#"{"metadata":{"labels":{"touched":"yes"}}}"#,
            )
            .await;
        assert_eq!(r.status, StatusCode::OK);
    }
    let event = watch.next().await.expect("an event");
    assert_eq!(event["type"], "MODIFIED");
    assert_eq!(uid(&event["object"]), uid(inside));
}

#[tokio::test]
async fn a_selector_the_server_cannot_read_is_a_500() {
    let (_server, c) = sharded_server().await;
    let bad = "shardRange(object.metadata.uid, '0x0', '0x8000000000000000')";
    for path in [
        format!("{PODS}?shardSelector={}", query(bad)),
        format!("{PODS}?watch=true&shardSelector={}", query(bad)),
    ] {
        let r = c.get(&path).await;
        assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR, "{path}");
        assert_eq!(
            r.body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "invalid shard selector: hexStart must be a 0x-prefixed 16-digit hex value, got \"0x0\" (did you mean \"0x0000000000000000\"?)",
                   "code": 500})
        );
    }
    // The label selector is read first.
    let r = c
        .get(&format!(
            "{PODS}?labelSelector=a%20in%20(&shardSelector={}",
            query(bad)
        ))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn without_the_gate_the_parameter_is_ignored() {
    let (_server, c) = server().await;
    let pods = create_pods(&c, "default", 6).await;
    for selector in [
        ShardSelector::shard(ShardKey::Uid, 0, 2)
            .unwrap()
            .to_string(),
        "not even CEL".to_owned(),
    ] {
        let r = c
            .get(&format!("{PODS}?shardSelector={}", query(&selector)))
            .await;
        assert_eq!(r.status, StatusCode::OK);
        assert!(r.body["metadata"].get("shardInfo").is_none());
        assert_eq!(uids(&r.body).len(), pods.len());
    }
}
