//! CRDs converted by a webhook (`spec.conversion.strategy: Webhook`), against a small HTTPS
//! conversion webhook run by each test (`common::webhook_server`).

use http::StatusCode;
use serde_json::{json, Value};

use crate::common::webhook_server::{Answer, WebhookServer};
use crate::common::{server, Client, MERGE};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const V1: &str = "/apis/example.com/v1/namespaces/default/widgets";
const V2: &str = "/apis/example.com/v2/namespaces/default/widgets";

/// Widgets: `v1` (stored) says `spec.name`, `v2` says `spec.fullName`.
fn widgets_crd(client_config: Value) -> Value {
    let version = |name: &str, field: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                   "spec": {"type": "object", "properties": {field: {"type": "string"}}}}}}})
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [version("v1", "name", true), version("v2", "fullName", false)],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": client_config, "conversionReviewVersions": ["v1"]}},
        }
    })
}

/// Converts between the widgets' versions.
fn convert(review: &Value) -> Answer {
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap().to_string();
    let objects: Vec<Value> = request["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let mut o = o.clone();
            let spec = o["spec"].as_object_mut().unwrap();
            match desired.as_str() {
                "example.com/v1" => {
                    let v = spec.remove("fullName").unwrap_or_default();
                    spec.insert("name".into(), v);
                }
                _ => {
                    let v = spec.remove("name").unwrap_or_default();
                    spec.insert("fullName".into(), v);
                }
            }
            o["apiVersion"] = json!(desired);
            o
        })
        .collect();
    converted(request, objects)
}

/// The `ConversionReview` answering `request` with `objects`.
fn converted(request: &Value, objects: Vec<Value>) -> Answer {
    answer(request, json!({"status": "Success"}), objects)
}

/// The `ConversionReview` answering `request` with `result` and `objects`.
fn answer(request: &Value, result: Value, objects: Vec<Value>) -> Answer {
    Answer::Json(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": request["uid"], "result": result, "convertedObjects": objects},
    }))
}

fn widget(version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget",
           "metadata": {"name": name}, "spec": spec})
}

async fn widgets_server(client_config: Value) -> (kclient_fake::FakeApiServer, Client) {
    let (server, c) = server().await;
    let r = c.post(CRDS, &widgets_crd(client_config)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    (server, c)
}

/// The `desiredAPIVersion` and object names of each conversion call so far.
fn calls(hooks: &WebhookServer) -> Vec<(String, Vec<String>)> {
    hooks
        .requests_to("/convert")
        .iter()
        .map(|r| {
            let request = &r["request"];
            let names = request["objects"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
                .collect();
            (
                request["desiredAPIVersion"].as_str().unwrap().to_string(),
                names,
            )
        })
        .collect()
}

fn call(version: &str, names: &[&str]) -> (String, Vec<String>) {
    (
        format!("example.com/{version}"),
        names.iter().map(|n| n.to_string()).collect(),
    )
}

#[tokio::test]
async fn custom_resources_convert_through_the_webhook_on_writes_reads_lists_and_watches() {
    let hooks = WebhookServer::start(&[], |_, review| convert(review)).await;
    let (server, c) = widgets_server(hooks.client_config("/convert")).await;
    let widgets = kclient_core::GroupResource::new("example.com", "widgets");

    // A write in v2: converted to v1 to be stored, and back for the answer.
    let r = c
        .post(V2, &widget("v2", "a", json!({"fullName": "Alpha"})))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["apiVersion"], "example.com/v2");
    assert_eq!(r.body["spec"], json!({"fullName": "Alpha"}));
    let stored = server.get_value(&widgets, "default", "a").unwrap();
    assert_eq!(stored["apiVersion"], "example.com/v1");
    assert_eq!(stored["spec"], json!({"name": "Alpha"}));
    assert_eq!(calls(&hooks), [call("v1", &["a"]), call("v2", &["a"])]);
    let review = &hooks.requests_to("/convert")[0];
    assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(review["kind"], "ConversionReview");
    assert_eq!(review["request"]["uid"].as_str().unwrap().len(), 36);

    // Reads: in v2 through the webhook, in the storage version without it.
    let r = c.get(&format!("{V2}/a")).await;
    assert_eq!(r.body["spec"], json!({"fullName": "Alpha"}));
    let r = c.get(&format!("{V1}/a")).await;
    assert_eq!(r.body["spec"], json!({"name": "Alpha"}));
    assert_eq!(calls(&hooks).len(), 3);

    for name in ["b", "c"] {
        let r = c
            .post(
                V1,
                &widget("v1", name, json!({"name": name.to_uppercase()})),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    }
    assert_eq!(
        calls(&hooks).len(),
        3,
        "writes in the storage version convert nothing"
    );

    // A list: each item converted on its own, as kube-apiserver's storage decodes them.
    let r = c.get(V2).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let full_names: Vec<&Value> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["spec"]["fullName"])
        .collect();
    assert_eq!(full_names, [&json!("Alpha"), &json!("B"), &json!("C")]);
    assert_eq!(r.body["apiVersion"], "example.com/v2");
    assert_eq!(
        calls(&hooks)[3..],
        [call("v2", &["a"]), call("v2", &["b"]), call("v2", &["c"])]
    );

    // An update in v2: the current object converted, the new one stored in v1.
    let before = calls(&hooks).len();
    let r = c
        .patch(&format!("{V2}/b"), MERGE, r#"{"spec":{"fullName":"Beta"}}"#)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["spec"], json!({"fullName": "Beta"}));
    assert_eq!(
        server.get_value(&widgets, "default", "b").unwrap()["spec"],
        json!({"name": "Beta"})
    );
    assert_eq!(
        calls(&hooks)[before..],
        [call("v2", &["b"]), call("v1", &["b"]), call("v2", &["b"])]
    );

    // Watch events, each converted.
    let mut watch = c.watch(&format!("{V2}?watch=true&resourceVersion=0")).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let e = watch.next().await.unwrap();
        assert_eq!(e["type"], "ADDED");
        assert_eq!(e["object"]["apiVersion"], "example.com/v2");
        seen.push(e["object"]["spec"]["fullName"].clone());
    }
    assert_eq!(seen, [json!("Alpha"), json!("Beta"), json!("C")]);
    let r = c
        .post(V1, &widget("v1", "d", json!({"name": "Delta"})))
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let e = watch.next().await.unwrap();
    assert_eq!(
        (e["type"].as_str(), e["object"]["spec"].clone()),
        (Some("ADDED"), json!({"fullName": "Delta"}))
    );
    assert_eq!(calls(&hooks).last().unwrap(), &call("v2", &["d"]));
}

#[tokio::test]
async fn conversion_failures_are_the_servers_errors() {
    let hooks = WebhookServer::start(&[], |_, review| {
        let request = &review["request"];
        match request["objects"][0]["metadata"]["name"].as_str() {
            Some("lost") => converted(request, Vec::new()),
            Some("renamed") => {
                let mut out = request["objects"][0].clone();
                out["apiVersion"] = request["desiredAPIVersion"].clone();
                out["metadata"]["name"] = json!("other");
                converted(request, vec![out])
            }
            _ => answer(
                request,
                json!({"status": "Failure", "message": "cannot convert"}),
                Vec::new(),
            ),
        }
    })
    .await;
    let (server, c) = widgets_server(hooks.client_config("/convert")).await;
    for name in ["a", "lost", "renamed"] {
        server
            .seed(widget("v1", name, json!({"name": name})))
            .unwrap();
    }
    let rv = |name: &str| {
        let widgets = kclient_core::GroupResource::new("example.com", "widgets");
        let stored = server.get_value(&widgets, "default", name).unwrap();
        stored["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // A read: the storage's corrupt object.
    let corrupt = |key: &str, name: &str, why: &str| {
        format!(
            "StorageError: corrupt object, Code: 7, Key: {key}/{name}, ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision={}: conversion webhook for example.com/v1, Kind=Widget {why}",
            rv(name)
        )
    };
    let r = c.get(&format!("{V2}/a")).await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(r.body["reason"], "InternalError");
    let expected = corrupt(
        "/example.com/widgets/default",
        "a",
        "failed: cannot convert",
    );
    assert_eq!(
        r.body["message"],
        format!("Internal error occurred: {expected}")
    );
    assert_eq!(r.body["details"]["causes"][0]["message"], expected);
    // The converter's own checks.
    for (name, why) in [
        ("lost", "returned 0 objects, expected 1"),
        (
            "renamed",
            "returned invalid object: must have the same name: renamed != other",
        ),
    ] {
        let r = c.get(&format!("{V2}/{name}")).await;
        let expected = corrupt("/example.com/widgets/default", name, why);
        assert_eq!(
            r.body["message"],
            format!("Internal error occurred: {expected}")
        );
    }
    // A list: the storage's read error, naming the first object and counting the others.
    let r = c.get(V2).await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(r.body["reason"], "StorageReadError");
    assert_eq!(
        r.body["message"],
        format!(
            "failed to read one or more widgets.example.com from the storage: {} (and 2 more)",
            corrupt(
                "/registry/example.com/widgets/default",
                "a",
                "failed: cannot convert"
            )
        )
    );
    assert_eq!(r.body["details"]["causes"].as_array().unwrap().len(), 3);
    assert_eq!(
        r.body["details"]["causes"][0]["field"],
        "/registry/example.com/widgets/default/a"
    );
    // An update starts from an object it cannot read.
    let r = c
        .patch(
            &format!("{V2}/a"),
            MERGE,
            r#"{"metadata":{"labels":{"x":"y"}}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        r.body["message"],
        format!(
            "object not decodable revision={}: conversion webhook for example.com/v1, Kind=Widget failed: cannot convert",
            rv("a")
        )
    );
    // A write that cannot be converted is not stored.
    let r = c
        .post(V2, &widget("v2", "new", json!({"fullName": "N"})))
        .await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        r.body["message"],
        "conversion webhook for example.com/v2, Kind=Widget failed: cannot convert"
    );
    let widgets = kclient_core::GroupResource::new("example.com", "widgets");
    assert!(server.get_value(&widgets, "default", "new").is_none());
    // Reads in the storage version need no webhook.
    assert_eq!(c.get(&format!("{V1}/a")).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_conversion_webhook_that_is_down_fails_reads_in_other_versions() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let url = format!("https://127.0.0.1:{port}/convert");
    let (server, c) = widgets_server(json!({"url": url})).await;
    server
        .seed(widget("v1", "a", json!({"name": "Alpha"})))
        .unwrap();
    // Seeding in another version would need the webhook: refused, with a way out.
    let err = server
        .seed(widget("v2", "b", json!({"fullName": "Beta"})))
        .unwrap_err();
    assert_eq!(err.code(), 400);
    assert!(
        err.message().contains("write this object in version v1"),
        "{}",
        err.message()
    );
    let r = c.get(&format!("{V2}/a")).await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    let message = r.body["message"].as_str().unwrap();
    assert!(
        message.ends_with(&format!("conversion webhook for example.com/v1, Kind=Widget failed: Post \"{url}?timeout=30s\": dial tcp 127.0.0.1:{port}: connect: connection refused")),
        "{message}"
    );
}
