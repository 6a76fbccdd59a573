//! Create, get, update, delete over HTTP, with kube-apiserver's status codes and error bodies.

use crate::common;

use common::*;
use http::StatusCode;
use serde_json::json;

#[tokio::test]
async fn create_get_and_already_exists() {
    let (_server, c) = server().await;
    let r = c.post("/api/v1/namespaces/default/pods", &pod("web")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let created = r.body;
    assert_eq!(created["apiVersion"], "v1");
    assert_eq!(created["kind"], "Pod");
    assert_eq!(created["metadata"]["namespace"], "default");
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(created["metadata"]["uid"].as_str().unwrap().len(), 36);
    assert!(created["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap()
        .ends_with('Z'));
    assert_eq!(created["status"]["phase"], "Pending");

    let got = c.get("/api/v1/namespaces/default/pods/web").await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.body, created);

    let again = c.post("/api/v1/namespaces/default/pods", &pod("web")).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(
        again.body,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure",
            "message": "pods \"web\" already exists",
            "reason": "AlreadyExists",
            "details": {"name": "web", "kind": "pods"},
            "code": 409
        })
    );
}

#[tokio::test]
async fn not_found_bodies() {
    let (_server, c) = server().await;
    let r = c
        .get("/apis/apps/v1/namespaces/default/deployments/nope")
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(
        r.body,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure",
            "message": "deployments.apps \"nope\" not found",
            "reason": "NotFound",
            "details": {"name": "nope", "group": "apps", "kind": "deployments"},
            "code": 404
        })
    );
    let r = c.get("/api/v1/widgets").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(
        r.body["message"],
        "the server could not find the requested resource"
    );
    let r = c.get("/not-an-api").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body, json!("404 page not found\n"));
}

#[tokio::test]
async fn one_resource_version_across_resources() {
    let (_server, c) = server().await;
    let a = c
        .post("/api/v1/namespaces/default/pods", &pod("a"))
        .await
        .body;
    let b = c
        .post(
            "/api/v1/namespaces/default/configmaps",
            &configmap("b", json!({})),
        )
        .await
        .body;
    assert_eq!(rv(&b), rv(&a) + 1);
    assert!(
        b["metadata"].get("generation").is_none(),
        "configmaps do not track generation"
    );
}

#[tokio::test]
async fn generate_name() {
    let (_server, c) = server().await;
    let r = c
        .post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"metadata": {"generateName": "cfg-"}, "data": {}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let name = r.body["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("cfg-") && name.len() == 9, "{name}");
    let r = c
        .post(
            "/api/v1/namespaces/default/configmaps",
            &json!({"metadata": {}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.body,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure",
            "message": "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required",
            "reason": "Invalid",
            "details": {"kind": "ConfigMap", "causes": [{
                "reason": "FieldValueRequired",
                "message": "Required value: name or generateName is required",
                "field": "metadata.name"
            }]},
            "code": 422
        })
    );
}

#[tokio::test]
async fn invalid_names_are_rejected() {
    let (_server, c) = server().await;
    let r = c
        .post("/api/v1/namespaces/default/pods", &pod("Not_Valid"))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .starts_with("Pod \"Not_Valid\" is invalid: metadata.name: Invalid value: \"Not_Valid\": a lowercase RFC 1123 subdomain"));
}

#[tokio::test]
async fn namespace_lifecycle_admission() {
    let (server, c) = server().await;
    let r = c.post("/api/v1/namespaces/missing/pods", &pod("a")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body["message"], "namespaces \"missing\" not found");
    assert_eq!(
        r.body["details"],
        json!({"name": "missing", "kind": "namespaces"})
    );

    // A namespace held by a finalizer on its content stays Terminating.
    c.post("/api/v1/namespaces", &json!({"metadata": {"name": "t"}}))
        .await;
    let mut held = configmap("held", json!({}));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert_eq!(
        c.post("/api/v1/namespaces/t/configmaps", &held)
            .await
            .status,
        StatusCode::CREATED
    );
    let r = c.delete("/api/v1/namespaces/t").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["status"]["phase"], "Terminating");
    let r = c.post("/api/v1/namespaces/t/pods", &pod("late")).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(
        r.body,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure",
            "message": "pods \"late\" is forbidden: unable to create new content in namespace t because it is being terminated",
            "reason": "Forbidden",
            "details": {"name": "late", "kind": "pods", "causes": [{
                "reason": "NamespaceTerminating",
                "message": "namespace t is being terminated",
                "field": "metadata.namespace"
            }]},
            "code": 403
        })
    );
    assert!(server
        .get_value(&kclient_core::GroupResource::new("", "namespaces"), "", "t")
        .is_some());
}

#[tokio::test]
async fn update_conflicts_and_unconditional_updates() {
    let (_server, c) = server().await;
    let created = c
        .post(
            "/api/v1/namespaces/default/configmaps",
            &configmap("cfg", json!({"a": "1"})),
        )
        .await
        .body;
    let mut next = created.clone();
    next["data"]["a"] = json!("2");
    let updated = c
        .put("/api/v1/namespaces/default/configmaps/cfg", &next)
        .await;
    assert_eq!(updated.status, StatusCode::OK);
    assert!(rv(&updated.body) > rv(&created));

    // Stale resourceVersion.
    let stale = c
        .put("/api/v1/namespaces/default/configmaps/cfg", &next)
        .await;
    assert_eq!(stale.status, StatusCode::CONFLICT);
    assert_eq!(
        stale.body,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure",
            "message": "Operation cannot be fulfilled on configmaps \"cfg\": the object has been modified; please apply your changes to the latest version and try again",
            "reason": "Conflict",
            "details": {"name": "cfg", "kind": "configmaps"},
            "code": 409
        })
    );

    // No resourceVersion: unconditional.
    let mut blind = configmap("cfg", json!({"a": "3"}));
    blind["metadata"]["namespace"] = json!("default");
    let r = c
        .put("/api/v1/namespaces/default/configmaps/cfg", &blind)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["data"]["a"], "3");
    assert_eq!(r.body["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(
        r.body["metadata"]["creationTimestamp"],
        created["metadata"]["creationTimestamp"]
    );

    // A no-op update does not move the resourceVersion.
    let same = c
        .put("/api/v1/namespaces/default/configmaps/cfg", &r.body)
        .await;
    assert_eq!(rv(&same.body), rv(&r.body));
}

#[tokio::test]
async fn update_of_missing_objects() {
    let (_server, c) = server().await;
    let r = c
        .put(
            "/api/v1/namespaces/default/configmaps/none",
            &configmap("none", json!({})),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body["message"], "configmaps \"none\" not found");
    // Leases are created by an update.
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "leader"}, "spec": {"holderIdentity": "me"}});
    let r = c
        .put(
            "/apis/coordination.k8s.io/v1/namespaces/default/leases/leader",
            &lease,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}

#[tokio::test]
async fn name_and_namespace_mismatches() {
    let (_server, c) = server().await;
    c.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("a", json!({})),
    )
    .await;
    let r = c
        .put(
            "/api/v1/namespaces/default/configmaps/a",
            &configmap("b", json!({})),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["message"],
        "the name of the object (b) does not match the name on the URL (a)"
    );
    let mut other_ns = configmap("a", json!({}));
    other_ns["metadata"]["namespace"] = json!("kube-system");
    let r = c
        .put("/api/v1/namespaces/default/configmaps/a", &other_ns)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["message"],
        "the namespace of the object (kube-system) does not match the namespace on the request (default)"
    );
    let r = c
        .post("/api/v1/namespaces/default/configmaps", &other_ns)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );
}

#[tokio::test]
async fn kind_and_version_mismatches() {
    let (_server, c) = server().await;
    let r = c
        .post(
            "/api/v1/namespaces/default/pods",
            &configmap("x", json!({})),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .starts_with("ConfigMap in version \"v1\" cannot be handled as a Pod"));
    let mut deploy = pod("x");
    deploy["apiVersion"] = json!("apps/v1");
    let r = c.post("/api/v1/namespaces/default/pods", &deploy).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["message"],
        "the API version in the data (apps/v1) does not match the expected API version (v1)"
    );
}

#[tokio::test]
async fn bad_bodies() {
    let (_server, c) = server().await;
    let r = c
        .send(
            http::Method::POST,
            "/api/v1/namespaces/default/pods",
            JSON,
            b"{nope".to_vec(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.body["reason"], "BadRequest");
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .starts_with("the object provided is unrecognized (must be of type Pod)"));
    let r = c
        .send(
            http::Method::POST,
            "/api/v1/namespaces/default/pods",
            JSON,
            b"[1,2]".to_vec(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .send(
            http::Method::POST,
            "/api/v1/namespaces/default/pods",
            "application/vnd.kubernetes.protobuf",
            b"k8s\0".to_vec(),
        )
        .await;
    // A protobuf body is decoded (see tests/protobuf.rs): the magic alone is an empty one.
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["message"],
        "the object provided is unrecognized (must be of type Pod): empty body (6b387300)"
    );
    let r = c
        .send(
            http::Method::POST,
            "/api/v1/namespaces/default/pods",
            "application/cbor",
            vec![0xa0],
        )
        .await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(
        r.body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    let big = vec![b' '; 3 * 1024 * 1024 + 10];
    let r = c
        .send(
            http::Method::POST,
            "/api/v1/namespaces/default/pods",
            JSON,
            big,
        )
        .await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn generation_tracks_spec_changes_only() {
    let (_server, c) = server().await;
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}},
        "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}});
    let created = c
        .post("/apis/apps/v1/namespaces/default/deployments", &d)
        .await
        .body;
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(created["spec"]["replicas"], 1, "defaulted");
    let mut labels_only = created.clone();
    labels_only["metadata"]["labels"] = json!({"x": "y"});
    let r = c
        .put(
            "/apis/apps/v1/namespaces/default/deployments/d",
            &labels_only,
        )
        .await
        .body;
    assert_eq!(r["metadata"]["generation"], 1);
    let mut spec = r.clone();
    spec["spec"]["template"]["spec"]["containers"][0]["image"] = json!("i:2");
    let r = c
        .put("/apis/apps/v1/namespaces/default/deployments/d", &spec)
        .await
        .body;
    assert_eq!(r["metadata"]["generation"], 2);
    // Status changes through the main resource are ignored...
    let mut status = r.clone();
    status["status"] = json!({"replicas": 5});
    let r2 = c
        .put("/apis/apps/v1/namespaces/default/deployments/d", &status)
        .await
        .body;
    assert!(r2.get("status").is_none() || r2["status"].get("replicas").is_none());
    // ...and go through the status subresource, which ignores spec changes.
    let mut via_status = r.clone();
    via_status["status"] = json!({"replicas": 5});
    via_status["spec"]["replicas"] = json!(9);
    let r3 = c
        .put(
            "/apis/apps/v1/namespaces/default/deployments/d/status",
            &via_status,
        )
        .await;
    assert_eq!(r3.status, StatusCode::OK, "{}", r3.body);
    assert_eq!(r3.body["status"]["replicas"], 5);
    assert_eq!(r3.body["spec"]["replicas"], 1);
    assert_eq!(r3.body["metadata"]["generation"], 2);
}

#[tokio::test]
async fn status_writes_and_metadata() {
    // kube-apiserver v1.37's status strategies (probed with kubectl --subresource=status): a
    // built-in resource's status write takes metadata changes, except a Deployment's labels and
    // a Pod's ownerReferences; a custom resource's takes none (see the crd tests).
    let (_server, c) = server().await;
    let owner = json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "o",
                        "uid": "0b5c0c6a-0000-0000-0000-000000000000"}]);
    let change = json!({"metadata": {"labels": {"z": "1"}, "annotations": {"a": "1"},
                                     "ownerReferences": owner},
                        "status": {}});
    let pods = "/api/v1/namespaces/default/pods";
    c.post(pods, &pod("p")).await;
    let r = c
        .patch(&format!("{pods}/p/status"), MERGE, &change.to_string())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"]["z"], "1");
    assert_eq!(r.body["metadata"]["annotations"]["a"], "1");
    assert!(r.body["metadata"].get("ownerReferences").is_none());

    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}},
        "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}});
    c.post(deployments, &d).await;
    let r = c
        .patch(
            &format!("{deployments}/d/status"),
            MERGE,
            &change.to_string(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body["metadata"].get("labels").is_none(), "{}", r.body);
    assert_eq!(r.body["metadata"]["annotations"]["a"], "1");
    assert_eq!(r.body["metadata"]["ownerReferences"], owner);
    assert_eq!(r.body["metadata"]["generation"], 1);
}

#[tokio::test]
async fn empty_fields_go_as_with_go_omitempty() {
    // kube-apiserver v1.37 drops an empty ConfigMap `data` (seen by the e2e suite's writes
    // scenario) and empty metadata maps and lists, as Go's encoding/json with omitempty does.
    let (_server, c) = server().await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "e", "labels": {}, "annotations": {}, "finalizers": []},
                    "data": {}, "binaryData": {}});
    let r = c.post(cms, &cm).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    for field in ["labels", "annotations", "finalizers"] {
        assert!(
            r.body["metadata"].get(field).is_none(),
            "{field}: {}",
            r.body
        );
    }
    assert!(r.body.get("data").is_none() && r.body.get("binaryData").is_none());
    let r = c
        .patch(&format!("{cms}/e"), MERGE, r#"{"data": {"k": "v"}}"#)
        .await;
    assert_eq!(r.body["data"], json!({"k": "v"}));
    let r = c
        .patch(&format!("{cms}/e"), MERGE, r#"{"data": {"k": null}}"#)
        .await;
    assert!(r.body.get("data").is_none(), "{}", r.body);
}

#[tokio::test]
async fn scale_subresource() {
    let (_server, c) = server().await;
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "d"}}, "template": {}}});
    c.post("/apis/apps/v1/namespaces/default/deployments", &d)
        .await;
    let s = c
        .get("/apis/apps/v1/namespaces/default/deployments/d/scale")
        .await;
    assert_eq!(s.status, StatusCode::OK);
    assert_eq!(s.body["kind"], "Scale");
    assert_eq!(s.body["apiVersion"], "autoscaling/v1");
    assert_eq!(s.body["spec"]["replicas"], 2);
    assert_eq!(s.body["status"]["selector"], "app=d");
    let mut scale = s.body.clone();
    scale["spec"]["replicas"] = json!(5);
    let r = c
        .put(
            "/apis/apps/v1/namespaces/default/deployments/d/scale",
            &scale,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["spec"]["replicas"], 5);
    let d = c
        .get("/apis/apps/v1/namespaces/default/deployments/d")
        .await
        .body;
    assert_eq!(d["spec"]["replicas"], 5);
    assert_eq!(d["metadata"]["generation"], 2);
    // Stale scale.
    let r = c
        .put(
            "/apis/apps/v1/namespaces/default/deployments/d/scale",
            &scale,
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    let r = c
        .patch(
            "/apis/apps/v1/namespaces/default/deployments/d/scale",
            MERGE,
            r#"{"spec":{"replicas":1}}"#,
        )
        .await;
    assert_eq!(r.body["spec"]["replicas"], 1);
    let r = c.get("/api/v1/namespaces/default/configmaps/x/scale").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn cluster_scoped_resources() {
    let (_server, c) = server().await;
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "namespace": "ignored"}});
    let r = c.post("/api/v1/nodes", &node).await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert!(r.body["metadata"].get("namespace").is_none());
    assert_eq!(
        c.get("/api/v1/namespaces/default/nodes/n1").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(c.get("/api/v1/nodes/n1").await.status, StatusCode::OK);
}

#[tokio::test]
async fn unsupported_verbs() {
    let (_server, c) = server().await;
    let r = c.post("/api/v1/pods", &pod("x")).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    let r = c.delete("/api/v1/namespaces").await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        r.body["message"],
        "deletecollection is not supported on resources of kind \"namespaces\""
    );
}

#[tokio::test]
async fn seeding_and_reading_without_http() {
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    let (server, c) = server().await;
    let mut p: Pod = serde_json::from_value(pod("seeded")).unwrap();
    p.metadata.namespace = Some("apps".into());
    p.status = Some(k8s_openapi::api::core::v1::PodStatus {
        phase: Some("Running".into()),
        ..Default::default()
    });
    let stored = server.seed_typed(&p).unwrap();
    assert!(stored.metadata.uid.is_some());
    assert_eq!(
        stored.status.unwrap().phase.as_deref(),
        Some("Running"),
        "seeding keeps status"
    );
    let r = c.get("/api/v1/namespaces/apps/pods/seeded").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["status"]["phase"], "Running");
    c.post(
        "/api/v1/namespaces/apps/configmaps",
        &configmap("via-http", json!({"k": "v"})),
    )
    .await;
    let cm: ConfigMap = server.get("apps", "via-http").unwrap();
    assert_eq!(cm.data.unwrap()["k"], "v");
    assert_eq!(server.list::<Pod>(Some("apps")).len(), 1);
    assert_eq!(server.list::<Pod>(None).len(), 1);
    assert!(server.resource_version() >= rv(&r.body));
}

/// `modify` is a test's direct write: a Deployment's status is written as given (issue 49: it
/// was silently dropped, as an update of the main resource drops it, and the test waited
/// forever for ready replicas), watchers see it, and the generation stays.
#[tokio::test]
async fn modify_writes_status_too() {
    use k8s_openapi::api::apps::v1::Deployment;
    use kclient_core::GroupResource;
    let (server, c) = server().await;
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    c.post(
        deployments,
        &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web"}},
                                      "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}}),
    )
    .await;
    let mut watch = c
        .watch(&format!(
            "{deployments}?watch=1&resourceVersion={}",
            server.resource_version()
        ))
        .await;
    let stored = server
        .modify(
            &GroupResource::new("apps", "deployments"),
            "default",
            "web",
            |d| {
                d["status"] = json!({"replicas": 2, "readyReplicas": 2, "availableReplicas": 2});
            },
        )
        .unwrap();
    assert_eq!(stored["status"]["readyReplicas"], 2);
    assert_eq!(stored["metadata"]["generation"], 1);
    let d: Deployment = server.get("default", "web").unwrap();
    assert_eq!(d.status.and_then(|s| s.ready_replicas), Some(2));
    let event = watch.next().await.unwrap();
    assert_eq!(event["type"], "MODIFIED");
    assert_eq!(event["object"]["status"]["readyReplicas"], 2);
    // A write through the API still cannot change it.
    let mut body = c.get(&format!("{deployments}/web")).await.body;
    body["status"]["readyReplicas"] = json!(0);
    let r = c.put(&format!("{deployments}/web"), &body).await;
    assert_eq!(r.body["status"]["readyReplicas"], 2, "{}", r.body);
}
