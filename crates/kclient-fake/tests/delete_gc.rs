//! Deletes: responses, preconditions, finalizers, propagation policies, deletecollection,
//! namespace deletion.

use crate::common;

use common::*;
use http::StatusCode;
use kclient_core::GroupResource;
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const PODS: &str = "/api/v1/namespaces/default/pods";

fn owned_by(mut obj: Value, owner: &Value) -> Value {
    obj["metadata"]["ownerReferences"] = json!([{
        "apiVersion": owner["apiVersion"], "kind": owner["kind"],
        "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": true
    }]);
    obj
}

#[tokio::test]
async fn delete_responses() {
    let (_server, c) = server().await;
    let cm = c.post(CMS, &configmap("a", json!({}))).await.body;
    let r = c.delete(&format!("{CMS}/a")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
               "details": {"name": "a", "kind": "configmaps", "uid": cm["metadata"]["uid"]}})
    );
    let r = c.delete(&format!("{CMS}/a")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body["message"], "configmaps \"a\" not found");

    c.post(PODS, &pod("p")).await;
    let r = c.delete(&format!("{PODS}/p")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["kind"], "Pod", "pods answer with the deleted object");
    assert_eq!(
        c.get(&format!("{PODS}/p")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn preconditions() {
    let (_server, c) = server().await;
    let cm = c.post(CMS, &configmap("a", json!({}))).await.body;
    let r = c
        .delete_with(
            &format!("{CMS}/a"),
            &json!({"preconditions": {"uid": "wrong"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(
        r.body["message"],
        format!(
            "Operation cannot be fulfilled on configmaps \"a\": StorageError: invalid object, Code: 4, Key: /registry/configmaps/default/a, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: wrong, UID in object meta: {}",
            cm["metadata"]["uid"].as_str().unwrap()
        )
    );
    let r = c
        .delete_with(
            &format!("{CMS}/a"),
            &json!({"preconditions": {"resourceVersion": "1"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert!(r.body["message"].as_str().unwrap().ends_with(&format!(
        "Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: {}",
        rv(&cm)
    )));
    let r = c
        .delete_with(
            &format!("{CMS}/a"),
            &json!({"preconditions": {"uid": cm["metadata"]["uid"], "resourceVersion": cm["metadata"]["resourceVersion"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = c
        .delete_with(&format!("{CMS}/x"), &json!("not options"))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn finalizers_hold_deletion() {
    let (_server, c) = server().await;
    let mut cm = configmap("held", json!({}));
    cm["metadata"]["finalizers"] = json!(["example.com/a", "example.com/b"]);
    c.post(CMS, &cm).await;
    let start = rv(&c.get(CMS).await.body);
    let mut w = c
        .watch(&format!("{CMS}?watch=true&resourceVersion={start}"))
        .await;
    let r = c.delete(&format!("{CMS}/held")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(r.body["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("MODIFIED".into(), "held".into())
    );

    // No new finalizers once deleting.
    let mut more = r.body.clone();
    more["metadata"]["finalizers"] = json!(["example.com/a", "example.com/b", "example.com/c"]);
    let r2 = c.put(&format!("{CMS}/held"), &more).await;
    assert_eq!(r2.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r2.body["message"],
        "ConfigMap \"held\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted"
    );

    let r = c
        .patch(
            &format!("{CMS}/held"),
            JSON_PATCH,
            r#"[{"op":"remove","path":"/metadata/finalizers/0"}]"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["metadata"]["finalizers"], json!(["example.com/b"]));
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("MODIFIED".into(), "held".into())
    );
    let r = c
        .patch(
            &format!("{CMS}/held"),
            MERGE,
            r#"{"metadata":{"finalizers":null}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // The writer gets its update back (no finalizers left)...
    assert!(r.body["metadata"].get("finalizers").is_none(), "{}", r.body);
    assert_eq!(
        c.get(&format!("{CMS}/held")).await.status,
        StatusCode::NOT_FOUND
    );
    // ...and watchers see one DELETED event with the last stored state, as kube-apiserver
    // deletes without storing the update (checked against v1.37 by the e2e suite).
    let deleted = w.next().await.unwrap();
    assert_eq!(deleted["type"], "DELETED");
    assert_eq!(
        deleted["object"]["metadata"]["finalizers"],
        json!(["example.com/b"])
    );
}

#[tokio::test]
async fn background_propagation() {
    let (server, c) = server().await;
    let owner = c.post(CMS, &configmap("owner", json!({}))).await.body;
    let other = c.post(CMS, &configmap("other-owner", json!({}))).await.body;
    c.post(CMS, &owned_by(configmap("child", json!({})), &owner))
        .await;
    let mut shared = owned_by(configmap("shared", json!({})), &owner);
    shared["metadata"]["ownerReferences"]
        .as_array_mut()
        .unwrap()
        .push(json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "other-owner", "uid": other["metadata"]["uid"]}));
    c.post(CMS, &shared).await;
    let grandchild_owner = c.get(&format!("{CMS}/child")).await.body;
    c.post(PODS, &owned_by(pod("grandchild"), &grandchild_owner))
        .await;

    let r = c.delete(&format!("{CMS}/owner")).await;
    assert_eq!(r.status, StatusCode::OK);
    let cms = GroupResource::new("", "configmaps");
    assert!(
        server.get_value(&cms, "default", "child").is_none(),
        "dependent collected"
    );
    assert!(server
        .get_value(&GroupResource::new("", "pods"), "default", "grandchild")
        .is_none());
    let shared = server
        .get_value(&cms, "default", "shared")
        .expect("kept: it has another owner");
    assert_eq!(
        shared["metadata"]["ownerReferences"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        shared["metadata"]["ownerReferences"][0]["name"],
        "other-owner"
    );
}

/// An object written after its owner went (created, or updated to name it) is collected as
/// kube-controller-manager's collector collects a dangling dependent: deleted when no owner
/// is left, the dangling reference dropped when another owner exists. An owner the server
/// never held is not dangling to it: such a reference stays.
#[tokio::test]
async fn a_dependent_written_after_its_owner_went_is_collected() {
    let (server, c) = server().await;
    let cms = GroupResource::new("", "configmaps");
    let owner = c.post(CMS, &configmap("owner", json!({}))).await.body;
    let other = c.post(CMS, &configmap("other-owner", json!({}))).await.body;
    let r = c.delete(&format!("{CMS}/owner")).await;
    assert_eq!(r.status, StatusCode::OK);

    // Created naming the removed owner: answered, then collected.
    let r = c
        .post(CMS, &owned_by(configmap("late", json!({})), &owner))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert!(server.get_value(&cms, "default", "late").is_none());

    // Updated to name it: collected too.
    c.post(CMS, &configmap("edited", json!({}))).await;
    let mut edited = c.get(&format!("{CMS}/edited")).await.body;
    edited["metadata"]["ownerReferences"] =
        owned_by(json!({}), &owner)["metadata"]["ownerReferences"].clone();
    let r = c.put(&format!("{CMS}/edited"), &edited).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(server.get_value(&cms, "default", "edited").is_none());

    // With another owner alive: kept, without the dangling reference.
    let mut shared = owned_by(configmap("shared", json!({})), &owner);
    shared["metadata"]["ownerReferences"]
        .as_array_mut()
        .unwrap()
        .push(json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "other-owner", "uid": other["metadata"]["uid"]}));
    c.post(CMS, &shared).await;
    let shared = server
        .get_value(&cms, "default", "shared")
        .expect("kept: it has another owner");
    let refs = shared["metadata"]["ownerReferences"].as_array().unwrap();
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0]["name"], "other-owner");

    // An owner this server never held: left alone.
    let never = json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "ghost", "uid": "0b5c0c6a-0000-0000-0000-000000000000"}});
    c.post(CMS, &owned_by(configmap("haunted", json!({})), &never))
        .await;
    assert!(server.get_value(&cms, "default", "haunted").is_some());
}

#[tokio::test]
async fn orphan_dependents_false_is_accepted_when_the_object_stays() {
    let (_server, c) = server().await;
    let mut held = configmap("held", json!({}));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    c.post(CMS, &held).await;
    c.post(CMS, &configmap("free", json!({}))).await;
    // The object stays (a finalizer holds it): 202.
    let r = c
        .delete_with(&format!("{CMS}/held"), &json!({"orphanDependents": false}))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    // The object is gone at once: 200, as for the query parameter.
    let r = c
        .delete(&format!("{CMS}/free?orphanDependents=false"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

#[tokio::test]
async fn foreground_propagation() {
    let (server, c) = server().await;
    let owner = c.post(CMS, &configmap("owner", json!({}))).await.body;
    let mut child = owned_by(configmap("child", json!({})), &owner);
    child["metadata"]["finalizers"] = json!(["example.com/slow"]);
    c.post(CMS, &child).await;
    let r = c
        .delete_with(
            &format!("{CMS}/owner"),
            &json!({"propagationPolicy": "Foreground"}),
        )
        .await;
    // 200, not 202: kube-apiserver keeps 202 for the deprecated `orphanDependents: false`
    // (checked against v1.37 by the e2e suite's garbage_collection scenario).
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        r.body["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    let cms = GroupResource::new("", "configmaps");
    let child = server.get_value(&cms, "default", "child").unwrap();
    assert!(
        child["metadata"]["deletionTimestamp"].is_string(),
        "the child is being deleted"
    );
    assert!(
        server.get_value(&cms, "default", "owner").is_some(),
        "the owner waits"
    );
    c.patch(
        &format!("{CMS}/child"),
        MERGE,
        r#"{"metadata":{"finalizers":null}}"#,
    )
    .await;
    assert!(server.get_value(&cms, "default", "child").is_none());
    assert!(
        server.get_value(&cms, "default", "owner").is_none(),
        "then the owner goes"
    );
}

#[tokio::test]
async fn orphan_propagation() {
    let (server, c) = server().await;
    let owner = c.post(CMS, &configmap("owner", json!({}))).await.body;
    c.post(CMS, &owned_by(configmap("child", json!({})), &owner))
        .await;
    let r = c
        .delete(&format!("{CMS}/owner?propagationPolicy=Orphan"))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let cms = GroupResource::new("", "configmaps");
    assert!(server.get_value(&cms, "default", "owner").is_none());
    let child = server.get_value(&cms, "default", "child").unwrap();
    assert!(
        child["metadata"].get("ownerReferences").is_none(),
        "{child}"
    );
    let r = c
        .delete(&format!("{CMS}/child?propagationPolicy=Sideways"))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn delete_collection() {
    let (server, c) = server().await;
    c.post(CMS, &labelled(configmap("a", json!({})), json!({"x": "1"})))
        .await;
    c.post(CMS, &labelled(configmap("b", json!({})), json!({"x": "1"})))
        .await;
    c.post(CMS, &configmap("c", json!({}))).await;
    let r = c.delete(&format!("{CMS}?labelSelector=x%3D1")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["kind"], "ConfigMapList");
    assert_eq!(names(&r.body), ["a", "b"]);
    let left: Vec<Value> =
        server.list_values(&GroupResource::new("", "configmaps"), Some("default"));
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["metadata"]["name"], "c");
}

#[tokio::test]
async fn namespace_deletion_removes_its_content() {
    let (server, c) = server().await;
    c.post("/api/v1/namespaces", &json!({"metadata": {"name": "team"}}))
        .await;
    let ns = c.get("/api/v1/namespaces/team").await.body;
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(ns["status"]["phase"], "Active");
    c.post("/api/v1/namespaces/team/pods", &pod("a")).await;
    c.post(
        "/api/v1/namespaces/team/configmaps",
        &configmap("b", json!({})),
    )
    .await;
    let start = rv(&c.get("/api/v1/namespaces").await.body);
    let mut w = c
        .watch(&format!(
            "/api/v1/namespaces?watch=true&resourceVersion={start}"
        ))
        .await;
    let r = c.delete("/api/v1/namespaces/team").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["status"]["phase"], "Terminating");
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("MODIFIED".into(), "team".into())
    );
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("MODIFIED".into(), "team".into())
    );
    assert_eq!(
        w.next_summary().await.unwrap(),
        ("DELETED".into(), "team".into())
    );
    assert!(server
        .list_values(&GroupResource::new("", "pods"), Some("team"))
        .is_empty());
    assert_eq!(
        c.get("/api/v1/namespaces/team").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn namespace_metadata_finalizers_and_the_finalize_subresource() {
    let (server, c) = server().await;
    c.post(
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "held", "finalizers": ["example.com/x"]}}),
    )
    .await;
    c.post(
        "/api/v1/namespaces/held/configmaps",
        &configmap("cm", json!({})),
    )
    .await;
    let r = c.delete("/api/v1/namespaces/held").await;
    assert_eq!(r.body["status"]["phase"], "Terminating");
    let namespaces = GroupResource::new("", "namespaces");
    // The content is gone and the spec finalizer removed, but the metadata finalizer holds it.
    let ns = server
        .get_value(&namespaces, "", "held")
        .expect("held by its finalizer");
    assert!(ns["spec"].get("finalizers").is_none(), "{ns}");
    assert!(server
        .list_values(&GroupResource::new("", "configmaps"), Some("held"))
        .is_empty());
    let r = c
        .patch(
            "/api/v1/namespaces/held",
            MERGE,
            r#"{"metadata":{"finalizers":null}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(server.get_value(&namespaces, "", "held").is_none());

    // The finalize subresource sets spec.finalizers.
    c.post("/api/v1/namespaces", &json!({"metadata": {"name": "f"}}))
        .await;
    let r = c
        .put(
            "/api/v1/namespaces/f/finalize",
            &json!({"metadata": {"name": "f"}, "spec": {"finalizers": ["a", "b"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["spec"]["finalizers"], json!(["a", "b"]));
}

#[tokio::test]
async fn a_namespace_waits_for_its_content_even_without_metadata_finalizers() {
    let (server, c) = server().await;
    c.post(
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "n", "finalizers": ["example.com/x"]}}),
    )
    .await;
    let mut cm = configmap("stuck", json!({}));
    cm["metadata"]["finalizers"] = json!(["example.com/y"]);
    c.post("/api/v1/namespaces/n/configmaps", &cm).await;
    c.delete("/api/v1/namespaces/n").await;
    let r = c
        .patch(
            "/api/v1/namespaces/n",
            MERGE,
            r#"{"metadata":{"finalizers":null}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let namespaces = GroupResource::new("", "namespaces");
    let ns = server
        .get_value(&namespaces, "", "n")
        .expect("still held by spec.finalizers");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    c.patch(
        "/api/v1/namespaces/n/configmaps/stuck",
        MERGE,
        r#"{"metadata":{"finalizers":null}}"#,
    )
    .await;
    assert!(
        server.get_value(&namespaces, "", "n").is_none(),
        "gone once empty"
    );
}
