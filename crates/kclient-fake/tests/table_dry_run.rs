//! Server-side printing (`as=Table`) and `dryRun=All`.

use crate::common;

use common::*;
use http::StatusCode;
use serde_json::json;

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

#[tokio::test]
async fn tables_for_kubectl() {
    let (server, _) = server().await;
    let c = Client::new(&server).with_header("accept", TABLE);
    c.post("/api/v1/namespaces/default/pods", &pod("web")).await;
    let r = c.get("/api/v1/namespaces/default/pods").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["kind"], "Table");
    assert_eq!(r.body["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(r.body["columnDefinitions"][0]["name"], "Name");
    assert_eq!(r.body["columnDefinitions"][1]["name"], "Created At");
    assert_eq!(r.body["rows"][0]["cells"][0], "web");
    assert_eq!(r.body["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(r.body["rows"][0]["object"]["metadata"]["name"], "web");
    let one = c
        .get("/api/v1/namespaces/default/pods/web?includeObject=Object")
        .await;
    assert_eq!(one.body["rows"][0]["object"]["kind"], "Pod");
    // Plain JSON when the Table is not asked for first.
    let plain = Client::new(&server)
        .get("/api/v1/namespaces/default/pods")
        .await;
    assert_eq!(plain.body["kind"], "PodList");
}

#[tokio::test]
async fn dry_run_stores_nothing() {
    let (server, c) = server().await;
    let before = server.resource_version();
    let r = c
        .post(
            "/api/v1/namespaces/default/configmaps?dryRun=All",
            &configmap("dry", json!({})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.body["metadata"]["name"], "dry");
    assert_eq!(server.resource_version(), before);
    assert_eq!(
        c.get("/api/v1/namespaces/default/configmaps/dry")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    let r = c
        .post(
            "/api/v1/namespaces/default/configmaps?dryRun=Partly",
            &configmap("dry", json!({})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    c.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("real", json!({})),
    )
    .await;
    let r = c
        .delete("/api/v1/namespaces/default/configmaps/real?dryRun=All")
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        c.get("/api/v1/namespaces/default/configmaps/real")
            .await
            .status,
        StatusCode::OK
    );
}
