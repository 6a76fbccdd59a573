//! CustomResourceDefinitions registering and unregistering custom resources.

use crate::common;

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
    // Outside the built-in groups, kube-apiserver's mux answers, in plain text.
    let gone = c.get(WIDGETS).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    assert_eq!(gone.body, json!("404 page not found\n"));
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

// Custom resources against their schemas. The CRD, the objects and every pinned body below
// are those of probes of kube-apiserver v1.37.1 (same group, kind, namespace and names), so
// the bodies are the real server's, byte for byte in content.

const GROUP: &str = "p1.schema-probe.kclient.dev";
const THINGS: &str = "/apis/p1.schema-probe.kclient.dev/v1/namespaces/schema-probe/things";

fn things_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("things.{GROUP}")},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": "things", "singular": "thing", "kind": "Thing", "listKind": "ThingList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["size"], "properties": {
                        "size": {"type": "integer", "minimum": 1, "maximum": 10},
                        "colour": {"type": "string", "enum": ["red", "blue"]},
                        "deflt": {"type": "string", "default": "dflt"},
                        "defobj": {"type": "object", "default": {}, "properties": {
                            "a": {"type": "integer", "default": 7}, "b": {"type": "string"}}},
                        "objs": {"type": "array", "items": {"type": "object", "properties": {
                            "k": {"type": "string", "default": "kd"}, "n": {"type": "integer"}}}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "emb": {"type": "object", "x-kubernetes-embedded-resource": true,
                                "properties": {"spec": {"type": "object",
                                               "properties": {"x": {"type": "string"}}}}},
                        "mlist": {"type": "array", "x-kubernetes-list-type": "map",
                                  "x-kubernetes-list-map-keys": ["name"],
                                  "items": {"type": "object", "required": ["name"], "properties": {
                                      "name": {"type": "string"}, "v": {"type": "integer"}}}}
                    }},
                    "status": {"type": "object", "properties": {
                        "ready": {"type": "boolean"}, "count": {"type": "integer", "minimum": 0}}}
                }}}}]
        }
    })
}

fn thing(name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Thing", "metadata": {"name": name}, "spec": spec})
}

async fn things_server() -> (kclient_fake::FakeApiServer, Client) {
    let (server, c) = server().await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "schema-probe"}});
    assert_eq!(
        c.post("/api/v1/namespaces", &ns).await.status,
        StatusCode::CREATED
    );
    let r = c.post(CRDS, &things_crd()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    (server, c)
}

#[tokio::test]
async fn invalid_custom_resources_are_refused_as_kube_apiserver_refuses_them() {
    let (_server, c) = things_server().await;
    let r = c
        .post(THINGS, &thing("bad", json!({"size": 3, "colour": "green"})))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.body,
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Thing.p1.schema-probe.kclient.dev \"bad\" is invalid: spec.colour: Unsupported value: \"green\": supported values: \"red\", \"blue\"","reason":"Invalid","details":{"name":"bad","group":"p1.schema-probe.kclient.dev","kind":"Thing","causes":[{"reason":"FieldValueNotSupported","message":"Unsupported value: \"green\": supported values: \"red\", \"blue\"","field":"spec.colour"}]},"code":422})
    );
    let r = c.post(THINGS, &thing("bad", json!({"size": 3.5}))).await;
    assert_eq!(
        r.body,
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Thing.p1.schema-probe.kclient.dev \"bad\" is invalid: [spec.size: Invalid value: \"number\": spec.size in body must be of type integer: \"number\", <nil>: Invalid value: \"\": Checked value must be of type integer (default format) in spec.size]","reason":"Invalid","details":{"name":"bad","group":"p1.schema-probe.kclient.dev","kind":"Thing","causes":[{"reason":"FieldValueTypeInvalid","message":"Invalid value: \"number\": spec.size in body must be of type integer: \"number\"","field":"spec.size"},{"reason":"FieldValueInvalid","message":"Invalid value: \"\": Checked value must be of type integer (default format) in spec.size","field":"<nil>"}]},"code":422})
    );
    let causes = |r: &Reply| -> Vec<String> {
        r.body["details"]["causes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                format!(
                    "{} {} {}",
                    c["field"].as_str().unwrap(),
                    c["reason"].as_str().unwrap(),
                    c["message"].as_str().unwrap()
                )
            })
            .collect()
    };
    let r = c.post(THINGS, &thing("bad", json!({}))).await;
    assert_eq!(causes(&r), ["spec.size FieldValueRequired Required value"]);
    let r = c
        .post(
            THINGS,
            &thing(
                "bad",
                json!({"size": 1, "mlist": [{"name": "a"}, {"name": "a", "v": 1}]}),
            ),
        )
        .await;
    assert_eq!(
        causes(&r),
        [r#"spec.mlist[1] FieldValueDuplicate Duplicate value: {"name":"a"}"#]
    );
    let r = c
        .post(THINGS, &thing("bad", json!({"size": 1, "emb": {}})))
        .await;
    assert_eq!(
        r.body["message"],
        "Thing.p1.schema-probe.kclient.dev \"bad\" is invalid: [spec.emb.apiVersion: Required value, spec.emb.kind: Required value]"
    );
    // Nothing was stored.
    assert_eq!(
        c.get(&format!("{THINGS}/bad")).await.status,
        StatusCode::NOT_FOUND
    );

    let r = c
        .post(
            &format!("{THINGS}?fieldValidation=Strict"),
            &thing("bad", json!({"size": 1, "zz": 1, "objs": [{"yy": 1}]})),
        )
        .await;
    assert_eq!(
        r.body,
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Thing in version \"v1\" cannot be handled as a Thing: strict decoding error: unknown field \"spec.objs[0].yy\", unknown field \"spec.zz\"","reason":"BadRequest","code":400})
    );
    let r = c
        .post(
            &format!("{THINGS}?fieldValidation=Bogus"),
            &thing("bad", json!({"size": 1})),
        )
        .await;
    assert_eq!(
        r.body,
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Bogus\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"","reason":"Invalid","details":{"group":"meta.k8s.io","kind":"CreateOptions","causes":[{"reason":"FieldValueNotSupported","message":"Unsupported value: \"Bogus\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"","field":"fieldValidation"}]},"code":422})
    );
}

#[tokio::test]
async fn custom_resources_are_pruned_and_defaulted_with_warnings() {
    let (_server, c) = things_server().await;
    let r = c
        .post(
            THINGS,
            &thing(
                "ok",
                json!({"size": 1, "unknown": 1, "objs": [{"n": 1, "zz": 2}],
            "defobj": null, "free": {"a": {"b": null}},
            "emb": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "junk": 1},
                    "spec": {"x": "y", "z": 1}, "other": 1}}),
            ),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(
        r.body["spec"],
        json!({"deflt": "dflt", "defobj": {"a": 7}, "objs": [{"k": "kd", "n": 1}], "size": 1,
               "free": {"a": {"b": null}},
               "emb": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": {"x": "y"}}})
    );
    assert_eq!(
        warnings(&r),
        [
            r#"299 - "unknown field \"spec.emb.other\"""#,
            r#"299 - "unknown field \"spec.emb.spec.z\"""#,
            r#"299 - "unknown field \"spec.objs[0].zz\"""#,
            r#"299 - "unknown field \"spec.unknown\"""#,
            r#"299 - "unknown field \"spec.emb.metadata.junk\"""#,
        ]
    );
    assert_eq!(
        c.get(&format!("{THINGS}/ok")).await.body["spec"],
        r.body["spec"]
    );
    // A merge patch that removes a defaulted field gets the default back.
    let r = c
        .patch(
            &format!("{THINGS}/ok"),
            MERGE,
            r#"{"spec":{"deflt":null,"zzz":1}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["spec"]["deflt"], "dflt");
    assert_eq!(warnings(&r), [r#"299 - "unknown field \"spec.zzz\"""#]);
    // Strict merge patches quote the patched object.
    let r = c
        .patch(
            &format!("{THINGS}/ok?fieldValidation=Strict"),
            MERGE,
            r#"{"spec":{"zz":1}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let message = r.body["message"].as_str().unwrap();
    assert!(message.starts_with(r#" "" is invalid: patch: Invalid value: "{\"apiVersion\":\"p1.schema-probe.kclient.dev/v1\",\"kind\":\"Thing\",\"metadata\":{"#), "{message}");
    assert!(
        message.ends_with(
            r#"\"zz\":1},\"status\":null}": strict decoding error: unknown field "spec.zz""#
        ) || message.ends_with(r#"\"zz\":1}}": strict decoding error: unknown field "spec.zz""#),
        "{message}"
    );
    let r = c
        .patch(
            &format!("{THINGS}/ok?fieldValidation=Ignore"),
            MERGE,
            r#"{"spec":{"zz":1}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(warnings(&r).is_empty());
}

#[tokio::test]
async fn status_and_apply_are_checked_as_kube_apiserver_checks_them() {
    let (_server, c) = things_server().await;
    let created = c.post(THINGS, &thing("ok1", json!({"size": 1}))).await.body;
    let mut status = created.clone();
    status["status"] = json!({"ready": "no", "count": -1});
    let r = c.put(&format!("{THINGS}/ok1/status"), &status).await;
    assert_eq!(
        r.body,
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Thing.p1.schema-probe.kclient.dev \"ok1\" is invalid: [status.count: Invalid value: -1: count in body should be greater than or equal to 0, status.ready: Invalid value: \"string\": ready in body must be of type boolean: \"string\"]","reason":"Invalid","details":{"name":"ok1","group":"p1.schema-probe.kclient.dev","kind":"Thing","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: -1: count in body should be greater than or equal to 0","field":"status.count"},{"reason":"FieldValueTypeInvalid","message":"Invalid value: \"string\": ready in body must be of type boolean: \"string\"","field":"status.ready"}]},"code":422})
    );
    // The status subresource checks status only; the main resource ignores status.
    status["status"] = json!({"ready": true, "count": 2, "junk": 1});
    status["spec"]["size"] = json!("not checked here");
    let r = c.put(&format!("{THINGS}/ok1/status"), &status).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["status"], json!({"ready": true, "count": 2}));
    assert_eq!(r.body["spec"]["size"], 1);
    assert_eq!(warnings(&r), [r#"299 - "unknown field \"status.junk\"""#]);

    let applied = r#"{"apiVersion":"p1.schema-probe.kclient.dev/v1","kind":"Thing","metadata":{"name":"ok1"},"spec":{"size":2,"zzz":1}}"#;
    let r = c
        .patch(
            &format!("{THINGS}/ok1?fieldManager=probe&force=true"),
            APPLY,
            applied,
        )
        .await;
    assert_eq!(
        r.body,
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"failed to create typed patch object (/ok1; p1.schema-probe.kclient.dev/v1, Kind=Thing): .spec.zzz: field not declared in schema","code":500})
    );
    let applied = r#"{"apiVersion":"p1.schema-probe.kclient.dev/v1","kind":"Thing","metadata":{"name":"ok1"},"spec":{"size":0}}"#;
    let r = c
        .patch(
            &format!("{THINGS}/ok1?fieldManager=probe&force=true"),
            APPLY,
            applied,
        )
        .await;
    assert_eq!(
        r.body["message"],
        "Thing.p1.schema-probe.kclient.dev \"ok1\" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"
    );
}

#[tokio::test]
async fn updates_ratchet_errors_in_unchanged_fields() {
    let (_server, c) = server().await;
    let mut crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "rats.p3.schema-probe.kclient.dev"},
        "spec": {"group": "p3.schema-probe.kclient.dev", "scope": "Namespaced",
            "names": {"plural": "rats", "singular": "rat", "kind": "Rat", "listKind": "RatList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "properties": {
                    "size": {"type": "integer"}, "other": {"type": "string"},
                    "items": {"type": "array", "items": {"type": "object",
                              "properties": {"n": {"type": "integer"}}}}}}}}}}]}
    });
    assert_eq!(c.post(CRDS, &crd).await.status, StatusCode::CREATED);
    let rats = "/apis/p3.schema-probe.kclient.dev/v1/namespaces/default/rats";
    let rat = json!({"apiVersion": "p3.schema-probe.kclient.dev/v1", "kind": "Rat", "metadata": {"name": "r1"},
                     "spec": {"size": 0, "other": "a", "items": [{"n": 0}, {"n": 0}]}});
    assert_eq!(c.post(rats, &rat).await.status, StatusCode::CREATED);
    // Tighten the schema, as the probe did.
    let spec = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    spec["properties"]["size"]["minimum"] = json!(5);
    spec["properties"]["items"]["items"]["properties"]["n"]["minimum"] = json!(5);
    spec["required"] = json!(["must"]);
    let r = c
        .put(&format!("{CRDS}/rats.p3.schema-probe.kclient.dev"), &crd)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let put = |change: fn(&mut Value)| {
        let c = c.clone();
        async move {
            let mut r1 = c.get(&format!("{rats}/r1")).await.body;
            change(&mut r1);
            c.put(&format!("{rats}/r1"), &r1).await.body["message"].clone()
        }
    };
    assert_eq!(
        put(|r| r["spec"]["other"] = json!("b")).await,
        "Rat.p3.schema-probe.kclient.dev \"r1\" is invalid: spec.must: Required value"
    );
    assert_eq!(
        put(|r| r["spec"]["items"][1]["n"] = json!(1)).await,
        "Rat.p3.schema-probe.kclient.dev \"r1\" is invalid: [spec.items[0].n: Invalid value: 0: spec.items[0].n in body should be greater than or equal to 5, spec.items[1].n: Invalid value: 1: spec.items[1].n in body should be greater than or equal to 5, spec.must: Required value]"
    );
    assert_eq!(
        put(|r| r["spec"]["size"] = json!(1)).await,
        "Rat.p3.schema-probe.kclient.dev \"r1\" is invalid: [spec.size: Invalid value: 1: spec.size in body should be greater than or equal to 5, spec.must: Required value]"
    );
    // Metadata-only changes leave spec alone: nothing to report.
    let r = c
        .patch(
            &format!("{rats}/r1"),
            MERGE,
            r#"{"metadata":{"labels":{"a":"b"}}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

#[tokio::test]
async fn each_version_prunes_with_its_own_schema() {
    let (_server, c) = server().await;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "cels.p4.schema-probe.kclient.dev"},
        "spec": {"group": "p4.schema-probe.kclient.dev", "scope": "Namespaced",
            "names": {"plural": "cels", "singular": "cel", "kind": "Cel", "listKind": "CelList"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"spec": {"type": "object",
                        "x-kubernetes-validations": [{"rule": "self.a < 10", "message": "a too big"}],
                        "properties": {"a": {"type": "integer"}, "b": {"type": "string", "enum": ["x"]}}}}}}},
                {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema": {
                    "type": "object", "properties": {"spec": {"type": "object", "properties": {
                        "a": {"type": "string"}, "c": {"type": "integer", "default": 5}}}}}}}]}
    });
    assert_eq!(c.post(CRDS, &crd).await.status, StatusCode::CREATED);
    let v1 = "/apis/p4.schema-probe.kclient.dev/v1/namespaces/default/cels";
    let v2 = "/apis/p4.schema-probe.kclient.dev/v2/namespaces/default/cels";
    // v1's schema: the CEL rules are not run, but the server's note that they were not is.
    let r = c
        .post(
            v1,
            &json!({"apiVersion": "p4.schema-probe.kclient.dev/v1", "kind": "Cel",
                          "metadata": {"name": "c1"}, "spec": {"a": "x", "b": "y"}}),
        )
        .await;
    assert_eq!(
        r.body["message"],
        "Cel.p4.schema-probe.kclient.dev \"c1\" is invalid: [spec.a: Invalid value: \"string\": spec.a in body must be of type integer: \"string\", spec.b: Unsupported value: \"y\": supported values: \"x\", <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]"
    );
    // v2's schema for a v2 write; stored in v1 (pruned by v1's schema), as the real server
    // answered: {"spec":{"a":"str"}} in both versions.
    let r = c
        .post(
            v2,
            &json!({"apiVersion": "p4.schema-probe.kclient.dev/v2", "kind": "Cel",
                          "metadata": {"name": "c2"}, "spec": {"a": "str", "b": "dropped"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(warnings(&r), [r#"299 - "unknown field \"spec.b\"""#]);
    assert_eq!(r.body["apiVersion"], "p4.schema-probe.kclient.dev/v2");
    assert_eq!(r.body["spec"], json!({"a": "str"}));
    let stored = c.get(&format!("{v1}/c2")).await.body;
    assert_eq!(stored["apiVersion"], "p4.schema-probe.kclient.dev/v1");
    assert_eq!(stored["spec"], json!({"a": "str"}));
}

#[tokio::test]
async fn non_structural_crds_are_refused() {
    let (_server, c) = server().await;
    let mut crd = things_crd();
    crd["metadata"]["name"] = json!("bads.p2.schema-probe.kclient.dev");
    crd["spec"]["group"] = json!("p2.schema-probe.kclient.dev");
    crd["spec"]["names"] =
        json!({"plural": "bads", "singular": "bad", "kind": "Bad", "listKind": "BadList"});
    crd["spec"]["versions"][0]
        .as_object_mut()
        .unwrap()
        .remove("subresources");
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] =
        json!({"type": "object", "properties": {"spec": {}}});
    let r = c.post(CRDS, &crd).await;
    assert_eq!(
        r.body,
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"CustomResourceDefinition.apiextensions.k8s.io \"bads.p2.schema-probe.kclient.dev\" is invalid: spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields","reason":"Invalid","details":{"name":"bads.p2.schema-probe.kclient.dev","group":"apiextensions.k8s.io","kind":"CustomResourceDefinition","causes":[{"reason":"FieldValueRequired","message":"Required value: must not be empty for specified object fields","field":"spec.validation.openAPIV3Schema.properties[spec].type"}]},"code":422})
    );
    crd["spec"]["versions"][0]
        .as_object_mut()
        .unwrap()
        .remove("schema");
    let r = c.post(CRDS, &crd).await;
    assert_eq!(
        r.body["message"],
        "CustomResourceDefinition.apiextensions.k8s.io \"bads.p2.schema-probe.kclient.dev\" is invalid: spec.versions[0].schema.openAPIV3Schema: Required value"
    );
}

/// A type from another derive (kube-derive's `CustomResource` implements kube's own
/// `Resource`, not k8s-openapi's): seeded from its JSON, read back with `get_as` and
/// `list_as` naming its resource (issue 49: `get` wants k8s-openapi's `Resource`).
#[tokio::test]
async fn types_without_k8s_openapi_s_resource_are_read_by_their_resource() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kclient_core::GroupResource;

    /// The shape `#[derive(CustomResource)]` gives a type: metadata and a spec, `apiVersion`
    /// and `kind` in its JSON, serde's traits and none of k8s-openapi's.
    #[derive(Debug, serde::Serialize, serde::Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Memcached {
        api_version: String,
        kind: String,
        metadata: ObjectMeta,
        spec: MemcachedSpec,
    }
    #[derive(Debug, serde::Serialize, serde::Deserialize, PartialEq)]
    struct MemcachedSpec {
        size: i32,
    }

    let (server, _c) = server().await;
    server.register(
        kclient_fake::ResourceInfo::new(
            kclient_core::GroupVersionKind::new("cache.example.com", "v1alpha1", "Memcached"),
            "memcacheds",
            true,
        )
        .custom_resource(),
    );
    let cache = Memcached {
        api_version: "cache.example.com/v1alpha1".into(),
        kind: "Memcached".into(),
        metadata: ObjectMeta {
            name: Some("cache".into()),
            namespace: Some("default".into()),
            ..ObjectMeta::default()
        },
        spec: MemcachedSpec { size: 3 },
    };
    server.seed(serde_json::to_value(&cache).unwrap()).unwrap();
    let memcacheds = GroupResource::new("cache.example.com", "memcacheds");
    let read: Memcached = server.get_as(&memcacheds, "default", "cache").unwrap();
    assert_eq!(read.spec, MemcachedSpec { size: 3 });
    assert!(read.metadata.uid.is_some());
    let all: Vec<Memcached> = server.list_as(&memcacheds, Some("default"));
    assert_eq!(all.len(), 1);
    assert_eq!(
        server.get_as::<Memcached>(&memcacheds, "default", "other"),
        None
    );
}
