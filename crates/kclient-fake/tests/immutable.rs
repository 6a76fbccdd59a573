//! Immutable fields of built-in kinds over every write path: PUT, the patches, server-side
//! apply and the handle's direct `modify` are refused alike; the binding subresource and the
//! status subresource are not held to them. (The wording is proven against kube-apiserver by
//! kclient-e2e's `immutable_*` scenarios.)

use http::StatusCode;
use kclient_core::GroupResource;
use serde_json::json;

use crate::common::{pod, server, APPLY, MERGE};

const PODS: &str = "/api/v1/namespaces/default/pods";

#[tokio::test]
async fn every_write_path_refuses_a_node_name_change() {
    let (server, c) = server().await;
    assert_eq!(c.post(PODS, &pod("web")).await.status, StatusCode::CREATED);
    let item = format!("{PODS}/web");
    let forbidden = "pod updates may not change fields other than `spec.containers[*].image`";

    let mut moved = c.get(&item).await.body;
    moved["spec"]["nodeName"] = json!("node-a");
    let put = c.put(&item, &moved).await;
    assert_eq!(put.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(put.body["reason"], "Invalid");
    assert_eq!(put.body["details"]["kind"], "Pod");
    assert_eq!(put.body["details"]["causes"][0]["field"], "spec");
    assert!(put.body["message"].as_str().unwrap().contains(forbidden));

    let merge = c
        .patch(&item, MERGE, r#"{"spec":{"nodeName":"node-a"}}"#)
        .await;
    assert_eq!(merge.status, StatusCode::UNPROCESSABLE_ENTITY);

    let apply = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\nspec:\n  nodeName: node-a\n  containers:\n  - {name: main, image: nginx}\n";
    let applied = c
        .patch(
            &format!("{item}?fieldManager=tests&force=true"),
            APPLY,
            apply,
        )
        .await;
    assert_eq!(
        applied.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "{}",
        applied.body
    );

    let direct = server.modify(&GroupResource::new("", "pods"), "default", "web", |p| {
        p["spec"]["nodeName"] = json!("node-a");
    });
    let err = direct.expect_err("the handle's writes are updates too");
    assert_eq!(err.status.code, 422);

    // The status subresource is not the spec's business; the binding sets the node.
    let status = c
        .patch(
            &format!("{item}/status"),
            MERGE,
            r#"{"status":{"phase":"Running"}}"#,
        )
        .await;
    assert_eq!(status.status, StatusCode::OK);
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
                         "target": {"kind": "Node", "name": "node-a"}});
    let bound = c.post(&format!("{item}/binding"), &binding).await;
    assert_eq!(bound.status, StatusCode::CREATED, "{}", bound.body);
    assert_eq!(c.get(&item).await.body["spec"]["nodeName"], "node-a");
}

#[tokio::test]
async fn a_secrets_string_data_is_written_into_its_data() {
    let (_server, c) = server().await;
    let secrets = "/api/v1/namespaces/default/secrets";
    let created = c
        .post(
            secrets,
            &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                    "data": {"user": "YWRh"}, "stringData": {"password": "one"}}),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED);
    assert_eq!(
        created.body["data"],
        json!({"user": "YWRh", "password": "b25l"})
    );
    assert_eq!(created.body.get("stringData"), None);
    assert_eq!(created.body["type"], "Opaque");
    // An update without a type keeps the default; stringData replaces a key of data.
    let mut update = created.body.clone();
    update.as_object_mut().unwrap().remove("type");
    update["stringData"] = json!({"user": "bob"});
    let updated = c.put(&format!("{secrets}/s"), &update).await;
    assert_eq!(updated.status, StatusCode::OK, "{}", updated.body);
    assert_eq!(updated.body["type"], "Opaque");
    assert_eq!(
        updated.body["data"],
        json!({"user": "Ym9i", "password": "b25l"})
    );
}
