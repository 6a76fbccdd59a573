//! The pod subresources: log, eviction, binding.

mod common;

use common::*;
use http::{Method, StatusCode};
use serde_json::json;

const PODS: &str = "/api/v1/namespaces/default/pods";

#[tokio::test]
async fn logs() {
    let (server, c) = server().await;
    c.post(PODS, &pod("web")).await;
    server.set_pod_log("default", "web", "main", "one\ntwo\nthree\n");
    let r = c.get(&format!("{PODS}/web/log")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.headers["content-type"], "text/plain");
    assert_eq!(&r.raw[..], b"one\ntwo\nthree\n");
    let r = c.get(&format!("{PODS}/web/log?tailLines=2")).await;
    assert_eq!(&r.raw[..], b"two\nthree\n");
    let r = c
        .get(&format!("{PODS}/web/log?limitBytes=3&follow=true"))
        .await;
    assert_eq!(&r.raw[..], b"one");
    let r = c.get(&format!("{PODS}/web/log?container=side")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.body["message"], "container side is not valid for pod web");
    let mut two = pod("two");
    two["spec"]["containers"] = json!([{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]);
    c.post(PODS, &two).await;
    let r = c.get(&format!("{PODS}/two/log")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["message"],
        "a container name must be specified for pod two, choose one of: [a b]"
    );
    assert_eq!(
        c.get(&format!("{PODS}/nope/log")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn eviction_deletes_the_pod() {
    let (_server, c) = server().await;
    c.post(PODS, &pod("web")).await;
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
                          "metadata": {"name": "web", "namespace": "default"}});
    let r = c.post(&format!("{PODS}/web/eviction"), &eviction).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    );
    assert_eq!(
        c.get(&format!("{PODS}/web")).await.status,
        StatusCode::NOT_FOUND
    );
    let r = c.post(&format!("{PODS}/web/eviction"), &eviction).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    c.post(PODS, &pod("other")).await;
    let r = c.post(&format!("{PODS}/other/eviction"), &eviction).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["message"],
        "name in URL does not match name in Eviction object"
    );
}

#[tokio::test]
async fn binding_assigns_a_node_once() {
    let (_server, c) = server().await;
    c.post(PODS, &pod("web")).await;
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
                         "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}});
    let r = c
        .send(
            Method::POST,
            &format!("{PODS}/web/binding"),
            JSON,
            binding.to_string().into_bytes(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(
        c.get(&format!("{PODS}/web")).await.body["spec"]["nodeName"],
        "n1"
    );
    let r = c
        .send(
            Method::POST,
            &format!("{PODS}/web/binding"),
            JSON,
            binding.to_string().into_bytes(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(
        r.body["message"],
        "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"n1\""
    );
}

#[tokio::test]
async fn pod_subresources_in_discovery() {
    let (_server, c) = server().await;
    let core = c.get("/api/v1").await.body;
    let find = |n: &str| {
        core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == n)
            .cloned()
            .unwrap_or_else(|| panic!("{n}"))
    };
    assert_eq!(find("pods/eviction")["group"], "policy");
    assert_eq!(find("pods/eviction")["verbs"], json!(["create"]));
    assert_eq!(find("pods/binding")["kind"], "Binding");
    assert_eq!(find("pods/log")["verbs"], json!(["get"]));
}
