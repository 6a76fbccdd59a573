//! `as=PartialObjectMetadata[List]` content negotiation, with kube-apiserver 1.37's answers
//! (each checked against the real server with curl): conversions on get, list (paged),
//! watch and the writes' answers, for built-in and custom resources, the three kinds of
//! `406`, and the order in which the header's clauses are tried.

use crate::common;

use common::*;
use http::{Method, StatusCode};
use serde_json::{json, Value};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";
const META: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const META_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const NOT_ACCEPTED: &str = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// A server with ConfigMaps `a`, `b`, `c` (labelled `app=x`) and a Widget CRD with `w1`.
async fn seeded() -> (kclient_fake::FakeApiServer, Client) {
    let (server, c) = server().await;
    for name in ["a", "b", "c"] {
        let cm = labelled(configmap(name, json!({"k": name})), json!({"app": "x"}));
        assert_eq!(c.post(CMS, &cm).await.status, StatusCode::CREATED);
    }
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let r = c
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": "w1", "labels": {"app": "x"}}, "spec": {"size": 3}});
    assert_eq!(c.post(WIDGETS, &widget).await.status, StatusCode::CREATED);
    (server, c)
}

fn accepting(c: &Client, accept: &str) -> Client {
    c.clone().with_header("accept", accept)
}

/// `code reason message` of a failure.
fn failure(reply: &Reply) -> (u16, Value, String) {
    assert_eq!(reply.body["kind"], "Status", "{}", reply.body);
    (
        reply.status.as_u16(),
        reply.body.get("reason").cloned().unwrap_or(Value::Null),
        reply.body["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

fn not_acceptable(message: &str) -> (u16, Value, String) {
    (406, json!("NotAcceptable"), message.to_owned())
}

#[tokio::test]
async fn get_answers_with_the_objects_metadata() {
    let (_server, c) = seeded().await;
    let full = c.get(&format!("{CMS}/a")).await.body;
    for (accept, api_version) in [
        (META, "meta.k8s.io/v1"),
        (
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1",
            "meta.k8s.io/v1beta1",
        ),
        // Spaces around parameters, unknown parameters, and `*/*` are fine.
        (
            "application/json; as=PartialObjectMetadata; g=meta.k8s.io; v=v1; x=y",
            "meta.k8s.io/v1",
        ),
        (
            "*/*;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
            "meta.k8s.io/v1",
        ),
        // client-go's metadata client, protobuf first, gets protobuf: tests/protobuf.rs.
    ] {
        let r = accepting(&c, accept).get(&format!("{CMS}/a")).await;
        assert_eq!(r.status, StatusCode::OK, "{accept}: {}", r.body);
        assert_eq!(
            r.body,
            json!({"kind": "PartialObjectMetadata", "apiVersion": api_version,
                   "metadata": full["metadata"]}),
            "{accept}"
        );
    }
    let w = accepting(&c, META).get(&format!("{WIDGETS}/w1")).await;
    assert_eq!(w.body["kind"], "PartialObjectMetadata");
    assert_eq!(w.body["metadata"]["generation"], 1);
    assert!(w.body.get("spec").is_none());
}

#[tokio::test]
async fn a_list_asked_of_one_object_and_one_object_asked_of_a_list_are_refused() {
    let (_server, c) = seeded().await;
    let r = accepting(&c, META_LIST).get(&format!("{CMS}/a")).await;
    assert_eq!(
        failure(&r),
        not_acceptable("you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)")
    );
    // A missing object is a 404 first: the conversion comes after the read.
    let missing = accepting(&c, META_LIST).get(&format!("{CMS}/zz")).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let r = accepting(&c, META).get(CMS).await;
    assert_eq!(
        failure(&r),
        not_acceptable("you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)")
    );
    let r = accepting(&c, META).get(WIDGETS).await;
    assert_eq!(
        failure(&r),
        not_acceptable("you requested PartialObjectMetadata, but the requested object is a list (*unstructured.UnstructuredList)")
    );
    // An unstructured object passes for a list until its items are read: a 500, no reason.
    let r = accepting(&c, META_LIST).get(&format!("{WIDGETS}/w1")).await;
    assert_eq!(
        failure(&r),
        (500, Value::Null, "content is not a list".to_owned())
    );
    let r = accepting(&c, META)
        .get("/apis/apps/v1/namespaces/default/deployments")
        .await;
    assert!(failure(&r).2.ends_with("(*apps.DeploymentList)"));
}

#[tokio::test]
async fn lists_page_and_encode_no_items_as_null() {
    let (_server, c) = seeded().await;
    let c = accepting(&c, META_LIST);
    let first = c.get(&format!("{CMS}?limit=2")).await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.body["kind"], "PartialObjectMetadataList");
    assert_eq!(first.body["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(names(&first.body), ["a", "b"]);
    assert_eq!(first.body["metadata"]["remainingItemCount"], 1);
    let item = &first.body["items"][0];
    assert_eq!(item["kind"], "PartialObjectMetadata");
    assert_eq!(item["apiVersion"], "meta.k8s.io/v1");
    assert!(item.get("data").is_none());
    let token = first.body["metadata"]["continue"].as_str().unwrap();
    let rest = c.get(&format!("{CMS}?limit=2&continue={token}")).await;
    assert_eq!(names(&rest.body), ["c"]);
    assert_eq!(
        rest.body["metadata"]["resourceVersion"],
        first.body["metadata"]["resourceVersion"]
    );
    let none = c.get(&format!("{CMS}?labelSelector=app%3Dnone")).await;
    assert_eq!(none.body["items"], Value::Null);
    let widgets = c.get(WIDGETS).await;
    assert_eq!(names(&widgets.body), ["w1"]);
}

#[tokio::test]
async fn unsupported_conversions_and_media_types_are_406() {
    let (_server, c) = seeded().await;
    for accept in [
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2",
        "application/json;as=PartialObjectMetadata;g=example.com;v=v1",
        "application/json;as=Foo;g=meta.k8s.io;v=v1",
        "application/json;as=partialobjectmetadata;g=meta.k8s.io;v=v1",
        "application/json;as=PartialObjectMetadata",
        "application/json;v=v1",
        "application/json;stream=foo",
        "application/json;sv=v2",
    ] {
        for path in [format!("{CMS}/a"), format!("{WIDGETS}/w1")] {
            let r = accepting(&c, accept).get(&path).await;
            assert_eq!(failure(&r), not_acceptable(NOT_ACCEPTED), "{accept} {path}");
            assert!(r.body.get("details").is_none());
        }
    }
    // Refused before the read: a missing object is 406 too.
    let r = accepting(
        &c,
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2",
    )
    .get(&format!("{CMS}/zz"))
    .await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
    // A media type no route of a built-in produces: go-restful's 406, with empty details.
    let routes = "406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf";
    for accept in [
        "text/html",
        "application/*;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        "application/JSON",
    ] {
        let r = accepting(&c, accept).get(&format!("{CMS}/a")).await;
        assert_eq!(failure(&r), not_acceptable(routes), "{accept}");
        assert_eq!(r.body["details"], json!({}));
    }
    let r = accepting(&c, "text/html").get(CMS).await;
    assert_eq!(
        failure(&r).2,
        format!("{routes}, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch")
    );
    let r = accepting(&c, "text/html")
        .send(
            Method::POST,
            CMS,
            JSON,
            configmap("d", json!({})).to_string().into_bytes(),
        )
        .await;
    assert_eq!(failure(&r), not_acceptable(routes));
    // Custom resources are served outside go-restful: only the negotiation's 406, and
    // `application/*` matches; protobuf is served only converted.
    let r = accepting(&c, "text/html")
        .get(&format!("{WIDGETS}/w1"))
        .await;
    assert_eq!(failure(&r), not_acceptable(NOT_ACCEPTED));
    let r = accepting(
        &c,
        "application/*;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    )
    .get(&format!("{WIDGETS}/w1"))
    .await;
    assert_eq!(r.body["kind"], "PartialObjectMetadata");
    // The 406 itself is written as errors are (apiserver's ErrorNegotiated, whose default
    // restrictions take plain protobuf, which a custom resource's serializer has): in
    // protobuf here.
    let r = accepting(&c, "application/vnd.kubernetes.protobuf")
        .get(&format!("{WIDGETS}/w1"))
        .await;
    let status =
        kclient_protobuf::core_types::decode_failure_status(&r.raw).expect("a protobuf Status");
    assert_eq!((status.code, status.message.as_str()), (406, NOT_ACCEPTED));
    let r = accepting(
        &c,
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    )
    .get(&format!("{WIDGETS}/w1"))
    .await;
    // In protobuf (tests/protobuf.rs decodes it).
    let unknown = kclient_protobuf::envelope::decode_envelope(&r.raw).expect("a protobuf body");
    assert_eq!(unknown.kind, "PartialObjectMetadata");
}

#[tokio::test]
async fn clauses_are_tried_in_the_servers_order() {
    let (_server, c) = seeded().await;
    let kind = |accept: &'static str| {
        let c = accepting(&c, accept);
        async move { c.get(&format!("{CMS}/a")).await.body["kind"].clone() }
    };
    // A refused clause is skipped for the next one.
    assert_eq!(
        kind("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2, application/json")
            .await,
        "ConfigMap"
    );
    // Higher q first.
    assert_eq!(
        kind("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1;q=0.5, application/json;q=0.9").await,
        "ConfigMap"
    );
    assert_eq!(
        kind(
            "application/json;q=0.5, application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
        )
        .await,
        "PartialObjectMetadata"
    );
    // A concrete type before a wildcard, whatever the q.
    assert_eq!(
        kind("*/*, application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1;q=0.1").await,
        "PartialObjectMetadata"
    );
    // Only a first entry asks for a Table (the fake's Table rule, kept as it was): one
    // further down gets the object, where kube-apiserver would send the Table.
    assert_eq!(
        kind("application/json;as=Table;g=meta.k8s.io;v=v1, application/json").await,
        "Table"
    );
    assert_eq!(
        kind("application/json;as=Foo;g=meta.k8s.io;v=v1, application/json;as=Table;g=meta.k8s.io;v=v1").await,
        "ConfigMap"
    );
}

#[tokio::test]
async fn watches_carry_metadata_and_bookmarks_lose_their_creation_timestamp() {
    let (server, c) = seeded().await;
    let watcher = accepting(&c, META);
    let mut w = watcher
        .watch(&format!(
            "{CMS}?watch=1&labelSelector=app%3Dx&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
        ))
        .await;
    for name in ["a", "b", "c"] {
        let e = w.next().await.unwrap();
        assert_eq!(
            (e["type"].as_str(), e["object"]["kind"].as_str()),
            (Some("ADDED"), Some("PartialObjectMetadata"))
        );
        assert_eq!(e["object"]["metadata"]["name"], name);
        assert!(e["object"].get("data").is_none());
    }
    let bookmark = w.next().await.unwrap();
    assert_eq!(bookmark["type"], "BOOKMARK");
    let rv = bookmark["object"]["metadata"]["resourceVersion"].clone();
    assert_eq!(
        bookmark["object"],
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
               "metadata": {"resourceVersion": rv,
                            "annotations": {"k8s.io/initial-events-end": "true"}}})
    );
    c.patch(
        &format!("{CMS}/a"),
        MERGE,
        r#"{"metadata":{"labels":{"z":"1"}}}"#,
    )
    .await;
    // Leaving the selector: a DELETED of the last state, converted too.
    c.patch(
        &format!("{CMS}/b"),
        MERGE,
        r#"{"metadata":{"labels":{"app":"y"}}}"#,
    )
    .await;
    c.delete(&format!("{CMS}/c")).await;
    for (event, name) in [("MODIFIED", "a"), ("DELETED", "b"), ("DELETED", "c")] {
        let e = w.next().await.unwrap();
        assert_eq!(
            (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
            (Some(event), Some(name))
        );
        assert_eq!(e["object"]["kind"], "PartialObjectMetadata", "{e}");
    }
    drop(server);
}

#[tokio::test]
async fn watch_errors_keep_their_status_and_a_list_conversion_ends_the_watch_unsent() {
    let (server, c) = seeded().await;
    server.faults().compact_history();
    let mut w = accepting(&c, META)
        .watch(&format!("{CMS}?watch=1&resourceVersion=1"))
        .await;
    let e = w.next().await.unwrap();
    assert_eq!(e["type"], "ERROR");
    assert_eq!(
        (e["object"]["kind"].as_str(), e["object"]["code"].as_u64()),
        (Some("Status"), Some(410))
    );
    assert!(w.next().await.is_none());

    // The server cannot encode one object as a list: the watch ends at its first object.
    let mut w = accepting(&c, META_LIST)
        .watch(&format!("{CMS}?watch=1"))
        .await;
    assert!(w.next().await.is_none());
    let mut w = accepting(&c, META_LIST)
        .watch(&format!("{WIDGETS}?watch=1&resourceVersion=0"))
        .await;
    assert!(w.next().await.is_none());
    // ... but an error still arrives.
    let mut w = accepting(&c, META_LIST)
        .watch(&format!("{CMS}?watch=1&resourceVersion=1"))
        .await;
    assert_eq!(w.next().await.unwrap()["type"], "ERROR");

    // YAML has no watch framing.
    let r = accepting(&c, "application/yaml")
        .get(&format!("{CMS}?watch=1"))
        .await;
    assert_eq!(
        failure(&r),
        not_acceptable("only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch")
    );
    // `stream=watch` is a JSON parameter a watch may carry.
    let mut w = accepting(
        &c,
        "application/json;stream=watch;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    )
    .watch(&format!("{CMS}?watch=1&labelSelector=app%3Dx"))
    .await;
    assert_eq!(
        w.next().await.unwrap()["object"]["kind"],
        "PartialObjectMetadata"
    );
}

#[tokio::test]
async fn writes_answer_with_metadata_and_refuse_the_wrong_shape_after_the_write() {
    let (server, c) = seeded().await;
    let meta = accepting(&c, META);
    let created = meta.post(CMS, &configmap("d", json!({"k": "d"}))).await;
    assert_eq!(created.status, StatusCode::CREATED);
    assert_eq!(created.body["kind"], "PartialObjectMetadata");
    let patched = meta
        .patch(
            &format!("{CMS}/d"),
            MERGE,
            r#"{"metadata":{"labels":{"p":"1"}}}"#,
        )
        .await;
    assert_eq!(patched.body["metadata"]["labels"]["p"], "1");
    assert!(patched.body.get("data").is_none());
    let replaced = meta
        .put(&format!("{CMS}/d"), &configmap("d", json!({"k": "e"})))
        .await;
    assert_eq!(replaced.body["kind"], "PartialObjectMetadata");

    // The patch is applied, then its answer refused.
    let r = accepting(&c, META_LIST)
        .patch(
            &format!("{CMS}/d"),
            MERGE,
            r#"{"metadata":{"labels":{"p":"2"}}}"#,
        )
        .await;
    assert_eq!(failure(&r).0, 406);
    let stored = c.get(&format!("{CMS}/d")).await.body;
    assert_eq!(stored["metadata"]["labels"]["p"], "2");

    // A Status answer is not converted (custom resources too answer a removal with one); an
    // object answer (one a finalizer keeps) is.
    for path in [format!("{CMS}/d"), format!("{WIDGETS}/w1")] {
        let deleted = meta.delete(&path).await;
        assert_eq!(
            (
                deleted.body["kind"].as_str(),
                deleted.body["status"].as_str()
            ),
            (Some("Status"), Some("Success")),
            "{path}"
        );
    }
    let kept = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                      "metadata": {"name": "w2", "finalizers": ["example.com/keep"]}});
    assert_eq!(c.post(WIDGETS, &kept).await.status, StatusCode::CREATED);
    let deleted = meta.delete(&format!("{WIDGETS}/w2")).await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(deleted.body["kind"], "PartialObjectMetadata");
    assert!(deleted.body["metadata"]["deletionTimestamp"].is_string());

    // A collection deleted, then the conversion refused: the objects are gone all the same.
    let r = meta.delete(&format!("{CMS}?labelSelector=k%3Dnone")).await;
    assert_eq!(failure(&r).2, "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)");
    let r = meta.delete(&format!("{CMS}?labelSelector=app%3Dx")).await;
    assert_eq!(failure(&r).0, 406);
    assert_eq!(names(&c.get(CMS).await.body), Vec::<String>::new());
    for name in ["e", "f"] {
        c.post(
            CMS,
            &labelled(configmap(name, json!({})), json!({"app": "x"})),
        )
        .await;
    }
    let r = accepting(&c, META_LIST)
        .delete(&format!("{CMS}?labelSelector=app%3Dx"))
        .await;
    assert_eq!(r.body["kind"], "PartialObjectMetadataList");
    assert_eq!(names(&r.body), ["e", "f"]);
    assert_eq!(r.body["items"][0]["kind"], "PartialObjectMetadata");
    drop(server);
}
