//! PATCH over HTTP: JSON patch, merge patch, strategic merge patch, server-side apply.

use crate::common;

use common::*;
use http::StatusCode;
use serde_json::json;

const PODS: &str = "/api/v1/namespaces/default/pods";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn deployment(name: &str) -> serde_json::Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                    "template": {"metadata": {"labels": {"app": name}},
                                 "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}})
}

/// kube-runtime's `finalizer()` adds the first finalizer with a `test` of null on the missing
/// `metadata.finalizers`, then later ones after a `test` of the list it saw, and removes each
/// after its cleanup with a `test` of its name (issue 49: the first patch was refused).
#[tokio::test]
async fn kube_runtime_finalizer_patches_apply() {
    let (_server, c) = with_configmap("cfg").await;
    let item = "/api/v1/namespaces/default/configmaps/cfg";
    let first = r#"[{"op":"test","path":"/metadata/finalizers","value":null},
                    {"op":"add","path":"/metadata/finalizers","value":["example.com/one"]}]"#;
    let r = c.patch(item, JSON_PATCH, first).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["metadata"]["finalizers"], json!(["example.com/one"]));
    // The same patch once there is a finalizer: the test fails.
    let r = c.patch(item, JSON_PATCH, first).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let second = r#"[{"op":"test","path":"/metadata/finalizers","value":["example.com/one"]},
                     {"op":"add","path":"/metadata/finalizers/-","value":"example.com/two"}]"#;
    let r = c.patch(item, JSON_PATCH, second).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = c.delete(item).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    for (at, name) in [(1, "example.com/two"), (0, "example.com/one")] {
        let remove = format!(
            r#"[{{"op":"test","path":"/metadata/finalizers/{at}","value":"{name}"}},
                {{"op":"remove","path":"/metadata/finalizers/{at}"}}]"#
        );
        let r = c.patch(item, JSON_PATCH, &remove).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    }
    assert_eq!(c.get(item).await.status, StatusCode::NOT_FOUND);
}

/// A failing JSON patch is kube-apiserver's bare 422 (no causes); a body that is not JSON is
/// `400 invalid JSON patch` even when the object is missing; unknown and repeated fields of
/// an operation are warnings; a copy from a missing key writes a null, which a ConfigMap's
/// data holds as an empty string.
#[tokio::test]
async fn json_patch_answers_are_kube_apiserver_s() {
    let (_server, c) = with_configmap("cfg").await;
    let item = "/api/v1/namespaces/default/configmaps/cfg";
    let r = c
        .patch(item, JSON_PATCH, r#"[{"op":"remove","path":"/data/nope"}]"#)
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.body["details"], json!({}), "{}", r.body);
    let r = c
        .patch(
            "/api/v1/namespaces/default/configmaps/missing",
            JSON_PATCH,
            "[",
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.body["message"], "invalid JSON patch");
    let r = c
        .patch(
            item,
            JSON_PATCH,
            r#"[{"op":"copy","from":"/data/nope","path":"/data/b","extra":1}]"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["data"], json!({"k": "v", "b": ""}));
    assert_eq!(
        r.headers.get("warning").and_then(|v| v.to_str().ok()),
        Some(r#"299 - "json patch unknown field \"[0].extra\"""#)
    );
}

#[tokio::test]
async fn merge_and_json_patches() {
    let (_server, c) = server().await;
    c.post(
        "/api/v1/namespaces/default/configmaps",
        &configmap("cfg", json!({"a": "1", "b": "2"})),
    )
    .await;
    let r = c
        .patch(
            "/api/v1/namespaces/default/configmaps/cfg",
            MERGE,
            r#"{"data":{"a":null,"c":"3"}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["data"], json!({"b": "2", "c": "3"}));
    let r = c
        .patch(
            "/api/v1/namespaces/default/configmaps/cfg",
            JSON_PATCH,
            r#"[{"op":"replace","path":"/data/b","value":"x"},{"op":"add","path":"/metadata/labels","value":{"l":"v"}}]"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["data"]["b"], "x");
    assert_eq!(r.body["metadata"]["labels"]["l"], "v");

    let r = c
        .patch(
            "/api/v1/namespaces/default/configmaps/cfg",
            JSON_PATCH,
            r#"[{"op":"test","path":"/data/b","value":"nope"}]"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.body["message"],
        "the server rejected our request due to an error in our request"
    );
    let r = c
        .patch("/api/v1/namespaces/default/configmaps/cfg", JSON_PATCH, "{")
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = c
        .patch("/api/v1/namespaces/default/configmaps/missing", MERGE, "{}")
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = c
        .patch(
            "/api/v1/namespaces/default/configmaps/cfg",
            "text/plain",
            "{}",
        )
        .await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // A stale resourceVersion in a patch is a conflict.
    let r = c
        .patch(
            "/api/v1/namespaces/default/configmaps/cfg",
            MERGE,
            r#"{"metadata":{"resourceVersion":"1"}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn strategic_merge_patch_on_pods() {
    let (_server, c) = server().await;
    // The container lists of a pod template merge by name (a pod's own spec may change
    // only its images, below).
    let containers = json!([
        {"name": "main", "image": "nginx:1", "env": [{"name": "A", "value": "1"}], "ports": [{"containerPort": 80}]},
        {"name": "side", "image": "busybox"}
    ]);
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": containers}}}});
    let created = c.post(DEPLOYS, &deployment).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "main", "image": "nginx:2", "env": [{"name": "B", "value": "2"}], "ports": [{"containerPort": 443}]},
        {"name": "side", "$patch": "delete"}
    ]}}}});
    let r = c
        .patch(&format!("{DEPLOYS}/web"), STRATEGIC, &patch.to_string())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let merged = &r.body["spec"]["template"]["spec"]["containers"];
    assert_eq!(merged.as_array().unwrap().len(), 1);
    assert_eq!(merged[0]["image"], "nginx:2");
    assert_eq!(
        merged[0]["env"],
        json!([{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    );
    assert_eq!(
        merged[0]["ports"],
        json!([{"containerPort": 80}, {"containerPort": 443}])
    );
    assert_eq!(r.body["metadata"]["generation"], 2);

    let mut p = pod("web");
    p["spec"]["containers"] = containers;
    c.post(PODS, &p).await;
    let image = json!({"spec": {"containers": [{"name": "main", "image": "nginx:2"}]}});
    let r = c
        .patch(&format!("{PODS}/web"), STRATEGIC, &image.to_string())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["spec"]["containers"][0]["image"], "nginx:2");
    assert_eq!(r.body["spec"]["containers"][1]["image"], "busybox");
    let removal = json!({"spec": {"containers": [{"name": "side", "$patch": "delete"}]}});
    let r = c
        .patch(&format!("{PODS}/web"), STRATEGIC, &removal.to_string())
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Pod \"web\" is invalid: spec.containers: Forbidden: pod updates may not add or remove containers"
    );

    // Status patches go through the status subresource only.
    let r = c
        .patch(
            &format!("{PODS}/web"),
            MERGE,
            r#"{"status":{"phase":"Running"}}"#,
        )
        .await;
    assert_eq!(r.body["status"]["phase"], "Pending");
    let r = c
        .patch(
            &format!("{PODS}/web/status"),
            MERGE,
            r#"{"status":{"phase":"Running"}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["status"]["phase"], "Running");
}

#[tokio::test]
async fn server_side_apply() {
    let (_server, c) = server().await;
    let manifest = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  labels: {team: a}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: d}}\n  template:\n    metadata: {labels: {app: d}}\n    spec:\n      containers:\n      - {name: c, image: 'i:1'}\n";
    let r = c.patch(&format!("{DEPLOYS}/d"), APPLY, manifest).await;
    assert_eq!(
        r.status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "fieldManager is required"
    );
    assert_eq!(
        r.body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    let r = c
        .patch(&format!("{DEPLOYS}/d?fieldManager=alice"), APPLY, manifest)
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let mf = &r.body["metadata"]["managedFields"][0];
    assert_eq!(mf["manager"], "alice");
    assert_eq!(mf["operation"], "Apply");
    assert_eq!(mf["fieldsType"], "FieldsV1");
    assert_eq!(mf["fieldsV1"]["f:spec"]["f:replicas"], json!({}));

    // Another manager changing a field alice owns: a conflict.
    let other = manifest.replace("replicas: 2", "replicas: 5");
    let r = c
        .patch(&format!("{DEPLOYS}/d?fieldManager=bob"), APPLY, &other)
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas",
               "reason": "Conflict",
               "details": {"causes": [{"reason": "FieldManagerConflict",
                                       "message": "conflict with \"alice\"",
                                       "field": ".spec.replicas"}]},
               "code": 409})
    );
    let r = c
        .patch(
            &format!("{DEPLOYS}/d?fieldManager=bob&force=true"),
            APPLY,
            &other,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["spec"]["replicas"], 5);

    // An update by a PUT takes the fields it changes; applying over it conflicts.
    let mut d = r.body.clone();
    d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("i:2");
    let r = c
        .put(&format!("{DEPLOYS}/d?fieldManager=kubectl-edit"), &d)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = c
        .patch(&format!("{DEPLOYS}/d?fieldManager=alice"), APPLY, manifest)
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    let message = r.body["message"].as_str().unwrap();
    assert!(message.starts_with("Apply failed with 2 conflicts: conflicts with \"bob\":\n- .spec.replicas\nconflicts with \"kubectl-edit\" using apps/v1 at "), "{message}");
    assert!(
        message.ends_with(":\n- .spec.template.spec.containers[name=\"c\"].image"),
        "{message}"
    );

    // Dropping a field you alone own removes it; a field another manager shares stays.
    let cm = |labels: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {{{labels}}}\n")
    };
    let cms = "/api/v1/namespaces/default/configmaps/cm";
    c.patch(
        &format!("{cms}?fieldManager=alice"),
        APPLY,
        &cm("a: '1', b: '2'"),
    )
    .await;
    c.patch(&format!("{cms}?fieldManager=bob"), APPLY, &cm("b: '2'"))
        .await;
    let r = c
        .patch(&format!("{cms}?fieldManager=alice"), APPLY, &cm(""))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        r.body["metadata"]["labels"],
        json!({"b": "2"}),
        "{}",
        r.body
    );

    let r = c
        .patch(
            &format!("{DEPLOYS}/other?fieldManager=alice"),
            APPLY,
            manifest,
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::BAD_REQUEST,
        "the name must match the URL"
    );
    let r = c
        .patch(&format!("{DEPLOYS}/d?fieldManager=alice"), APPLY, "a: [")
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn owning_an_empty_map_survives_another_managers_entries() {
    // Checked against kube-apiserver v1.37 by the e2e suite's server_side_apply scenario.
    let (_server, c) = server().await;
    let cms = "/api/v1/namespaces/default/configmaps/cm";
    let r = c
        .patch(
            &format!("{cms}?fieldManager=alice"),
            APPLY,
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {}\n",
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let mut cm = r.body.clone();
    cm["data"] = json!({"u": "3"});
    let r = c.put(&format!("{cms}?fieldManager=carol"), &cm).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let fields = |manager: &str| {
        r.body["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["manager"] == manager)
            .map(|e| e["fieldsV1"].clone())
    };
    assert_eq!(fields("alice"), Some(json!({"f:data": {}})));
    assert_eq!(fields("carol"), Some(json!({"f:data": {"f:u": {}}})));
}

#[tokio::test]
async fn force_is_only_for_apply() {
    let (_server, c) = server().await;
    let cms = "/api/v1/namespaces/default/configmaps";
    c.post(cms, &configmap("cm", json!({}))).await;
    for force in ["true", "false"] {
        let r = c
            .patch(&format!("{cms}/cm?force={force}"), MERGE, "{}")
            .await;
        assert_eq!(
            r.body,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch",
                   "reason": "Invalid",
                   "details": {"group": "meta.k8s.io", "kind": "PatchOptions",
                               "causes": [{"reason": "FieldValueForbidden",
                                           "message": "Forbidden: may not be specified for non-apply patch",
                                           "field": "force"}]},
                   "code": 422})
        );
    }
}

#[tokio::test]
async fn apply_to_a_custom_resource_rejects_strategic_merge() {
    let (server, c) = server().await;
    server.register(
        kclient_fake::ResourceInfo::new(
            kclient_core::GroupVersionKind::new("example.com", "v1", "Widget"),
            "widgets",
            true,
        )
        .custom_resource(),
    );
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}});
    assert_eq!(
        c.post("/apis/example.com/v1/namespaces/default/widgets", &w)
            .await
            .status,
        StatusCode::CREATED
    );
    let r = c
        .patch(
            "/apis/example.com/v1/namespaces/default/widgets/w",
            STRATEGIC,
            r#"{"spec":{"size":2}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let r = c
        .patch(
            "/apis/example.com/v1/namespaces/default/widgets/w",
            MERGE,
            r#"{"spec":{"size":2}}"#,
        )
        .await;
    assert_eq!(r.body["spec"]["size"], 2);
    assert_eq!(r.body["metadata"]["generation"], 2);
}

#[tokio::test]
async fn strategic_merge_patch_on_deployments() {
    let (_server, c) = server().await;
    c.post(DEPLOYS, &deployment("d")).await;
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "sidecar", "image": "envoy"}
    ]}}}});
    let r = c
        .patch(&format!("{DEPLOYS}/d"), STRATEGIC, &patch.to_string())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let names: Vec<&str> = r.body["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "sidecar"]);
    assert_eq!(r.body["metadata"]["generation"], 2);
}
