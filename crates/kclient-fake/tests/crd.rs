//! CustomResourceDefinitions registering and unregistering custom resources.

mod common;

use common::*;
use http::StatusCode;
use serde_json::{json, Value};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                      "listKind": "WidgetList", "shortNames": ["wd"], "categories": ["all"]},
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                 "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                          "statusReplicasPath": ".status.replicas"}},
                 "selectableFields": [{"jsonPath": ".spec.color"}]},
                {"name": "v1beta1", "served": true, "storage": false,
                 "schema": {"openAPIV3Schema": {"type": "object"}}}
            ]
        }
    })
}

#[tokio::test]
async fn crd_lifecycle() {
    let (_server, c) = server().await;
    assert_eq!(c.get(WIDGETS).await.status, StatusCode::NOT_FOUND);
    let r = c.post(CRDS, &crd()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let got = c.get(&format!("{CRDS}/widgets.example.com")).await.body;
    let conditions = got["status"]["conditions"].as_array().unwrap();
    assert!(conditions
        .iter()
        .any(|c| c["type"] == "Established" && c["status"] == "True"));
    assert_eq!(got["status"]["storedVersions"], json!(["v1"]));

    // Discovery.
    let v1 = c.get("/apis/example.com/v1").await.body;
    let names: Vec<&str> = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    // kube-apiserver v1.37 lists a custom resource's status before its scale.
    assert_eq!(names, ["widgets", "widgets/status", "widgets/scale"]);
    let group = c.get("/apis/example.com").await.body;
    assert_eq!(group["preferredVersion"]["version"], "v1");
    assert_eq!(group["versions"].as_array().unwrap().len(), 2);

    // Custom resources.
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
                   "spec": {"replicas": 1, "color": "red"}, "status": {"ignored": true}});
    let r = c.post(WIDGETS, &w).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["metadata"]["generation"], 1);
    assert!(
        r.body.get("status").is_none(),
        "status is dropped on create with the subresource"
    );
    let list = c
        .get(&format!("{WIDGETS}?fieldSelector=spec.color%3Dred"))
        .await
        .body;
    assert_eq!(list["kind"], "WidgetList");
    assert_eq!(names_of(&list), ["w1"]);
    let r = c
        .get(&format!("{WIDGETS}?fieldSelector=spec.size%3D1"))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["message"],
        "\"spec.size\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
    let scale = c.get(&format!("{WIDGETS}/w1/scale")).await.body;
    assert_eq!(scale["spec"]["replicas"], 1);
    let beta = c
        .get("/apis/example.com/v1beta1/namespaces/default/widgets/w1")
        .await;
    assert_eq!(beta.status, StatusCode::OK);
    assert_eq!(beta.body["apiVersion"], "example.com/v1beta1");
    let start = rv(&c.get(WIDGETS).await.body);
    let mut watch = c
        .watch(&format!("/apis/example.com/v1beta1/namespaces/default/widgets?watch=true&resourceVersion={start}"))
        .await;
    c.patch(
        &format!("{WIDGETS}/w1"),
        MERGE,
        r#"{"spec":{"color":"blue"}}"#,
    )
    .await;
    let e = watch.next().await.unwrap();
    assert_eq!(e["object"]["apiVersion"], "example.com/v1beta1");

    // Deleting the CRD deletes the resources and unregisters them.
    let r = c.delete(&format!("{CRDS}/widgets.example.com")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(c.get(WIDGETS).await.status, StatusCode::NOT_FOUND);
    assert_eq!(
        c.get("/apis/example.com/v1").await.status,
        StatusCode::NOT_FOUND
    );
    let r = c.post(CRDS, &crd()).await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert!(c.get(WIDGETS).await.body["items"]
        .as_array()
        .unwrap()
        .is_empty());
}

fn names_of(list: &Value) -> Vec<String> {
    names(list)
}

#[tokio::test]
async fn invalid_crds() {
    let (_server, c) = server().await;
    let mut bad = crd();
    bad["metadata"]["name"] = json!("wrong");
    let r = c.post(CRDS, &bad).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.body["message"],
        "CustomResourceDefinition.apiextensions.k8s.io \"wrong\" is invalid: metadata.name: Invalid value: \"wrong\": must be spec.names.plural+\".\"+spec.group"
    );
    let mut no_storage = crd();
    no_storage["spec"]["versions"][0]["storage"] = json!(false);
    let r = c.post(CRDS, &no_storage).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn cluster_scoped_custom_resources() {
    let (_server, c) = server().await;
    let mut crd = crd();
    crd["spec"]["scope"] = json!("Cluster");
    c.post(CRDS, &crd).await;
    let w =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "global"}});
    let r = c.post("/apis/example.com/v1/widgets", &w).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(c.get(WIDGETS).await.status, StatusCode::NOT_FOUND);
}
