//! Admission webhooks, called as kube-apiserver calls them, against a small HTTPS webhook
//! server run by each test (`common::webhook_server`).

use std::time::Duration;

use http::StatusCode;
use serde_json::{json, Value};

use crate::common::webhook_server::{
    allow, configuration, core_rule, deny, patch, webhook, Answer, WebhookServer,
};
use crate::common::{server, warnings, Client, Reply, JSON_PATCH, MERGE};

const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

fn config_map(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}})
}

async fn register(c: &Client, path: &str, config: &Value) {
    let r = c.post(path, config).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}

async fn validating(c: &Client, name: &str, webhook: Value) {
    register(c, VALIDATING, &configuration("Validating", name, webhook)).await;
}

async fn mutating(c: &Client, name: &str, webhook: Value) {
    register(c, MUTATING, &configuration("Mutating", name, webhook)).await;
}

/// Creates ConfigMap `name` in `namespace`.
async fn create_config_map(c: &Client, namespace: &str, name: &str) -> Reply {
    let path = format!("/api/v1/namespaces/{namespace}/configmaps");
    c.post(&path, &config_map(name, json!({}))).await
}

#[tokio::test]
async fn mutating_webhooks_run_before_validating_ones_and_their_patch_is_stored() {
    let hooks = WebhookServer::start(&[], |path, review| match path {
        "/mutate" => patch(
            review,
            json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]),
        ),
        _ if review["request"]["object"]["metadata"]["labels"]["mutated"] == "yes" => allow(review),
        _ => deny(review, 403, "not mutated first"),
    })
    .await;
    let (server, c) = server().await;
    let rules = core_rule(&["CREATE"], &["configmaps"]);
    let mutate = webhook(
        "mutate.example.com",
        hooks.client_config("/mutate"),
        rules.clone(),
    );
    let validate = webhook(
        "validate.example.com",
        hooks.client_config("/validate"),
        rules,
    );
    mutating(&c, "m", mutate).await;
    validating(&c, "v", validate).await;

    let r = c
        .post(
            "/api/v1/namespaces/default/configmaps?fieldManager=tests",
            &config_map("settings", json!({"app": "web"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"]["mutated"], "yes");
    let stored = server
        .get_value(
            &kclient_core::GroupResource::new("", "configmaps"),
            "default",
            "settings",
        )
        .unwrap();
    assert_eq!(
        stored["metadata"]["labels"],
        json!({"app": "web", "mutated": "yes"})
    );

    let calls: Vec<String> = hooks.requests().into_iter().map(|(p, _)| p).collect();
    assert_eq!(calls, ["/mutate", "/validate"]);
    // A generated name: mutating webhooks are asked before it exists, validating ones after.
    let generated = json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"generateName": "gen-", "labels": {"a": "b"}}});
    let r = c
        .post("/api/v1/namespaces/default/configmaps", &generated)
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert!(hooks.requests_to("/mutate")[1]["request"]
        .get("name")
        .is_none());
    let named = &hooks.requests_to("/validate")[1]["request"]["name"];
    assert_eq!(named, &r.body["metadata"]["name"]);
    // What kube-apiserver sends.
    let review = &hooks.requests_to("/mutate")[0];
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(review["kind"], "AdmissionReview");
    let request = &review["request"];
    assert_eq!(request["uid"].as_str().unwrap().len(), 36);
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(request["requestKind"], request["kind"]);
    assert_eq!(request["requestResource"], request["resource"]);
    assert_eq!(request["operation"], "CREATE");
    assert_eq!(request["namespace"], "default");
    assert_eq!(request["name"], "settings");
    assert_eq!(request["dryRun"], false);
    assert_eq!(request["userInfo"]["username"], "kclient-fake-admin");
    assert_eq!(
        request["options"],
        json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "tests"})
    );
    assert_eq!(request["oldObject"], Value::Null);
    // The mutating webhook sees the object before the server completes it.
    assert!(request["object"]["metadata"].get("uid").is_none());
    // The validating webhook sees it whole, patch applied.
    let validated = &hooks.requests_to("/validate")[0]["request"]["object"];
    assert_eq!(validated["metadata"]["labels"]["mutated"], "yes");
    assert!(validated["metadata"]["uid"].is_string());
    assert_ne!(
        hooks.requests_to("/validate")[0]["request"]["uid"],
        request["uid"]
    );
}

#[tokio::test]
async fn a_denial_is_the_servers_error_with_the_webhooks_code_and_warnings() {
    let hooks = WebhookServer::start(&[], |path, review| match path {
        "/forbid" => crate::common::webhook_server::admission_answer(
            review,
            json!({"allowed": false, "warnings": ["think twice"],
                   "status": {"code": 403, "reason": "Forbidden", "message": "configmaps are frozen"}}),
        ),
        _ => crate::common::webhook_server::admission_answer(review, json!({"allowed": false})),
    })
    .await;
    let (_server, c) = server().await;
    let forbid = webhook(
        "forbid.example.com",
        hooks.client_config("/forbid"),
        core_rule(&["CREATE"], &["configmaps"]),
    );
    let bare = webhook(
        "bare.example.com",
        hooks.client_config("/bare"),
        core_rule(&["CREATE"], &["secrets"]),
    );
    validating(&c, "a", forbid).await;
    validating(&c, "b", bare).await;

    let r = create_config_map(&c, "default", "x").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(
        r.body["message"],
        "admission webhook \"forbid.example.com\" denied the request: configmaps are frozen"
    );
    assert_eq!(r.body["reason"], "Forbidden");
    assert_eq!(r.body["code"], 403);
    assert_eq!(warnings(&r), ["299 - \"think twice\""]);

    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
    let r = c.post("/api/v1/namespaces/default/secrets", &secret).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["message"],
        "admission webhook \"bare.example.com\" denied the request without explanation"
    );
    assert_eq!(r.body["status"], "Failure");
}

/// A port nothing listens on.
async fn closed_port() -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn failure_policy_decides_what_a_webhook_that_is_down_does() {
    let port = closed_port().await;
    let (server, c) = server().await;
    let url = format!("https://127.0.0.1:{port}/validate");
    let mut fail = webhook(
        "fail.example.com",
        json!({"url": url}),
        core_rule(&["CREATE"], &["configmaps"]),
    );
    fail["namespaceSelector"] = json!({"matchLabels": {"policy": "fail"}});
    let mut ignore = fail.clone();
    ignore["name"] = json!("ignore.example.com");
    ignore["failurePolicy"] = json!("Ignore");
    ignore["namespaceSelector"] = json!({"matchLabels": {"policy": "ignore"}});
    validating(&c, "fail", fail).await;
    validating(&c, "ignore", ignore).await;
    for (ns, policy) in [("closed", "fail"), ("open", "ignore")] {
        server
            .seed(json!({"apiVersion": "v1", "kind": "Namespace",
                         "metadata": {"name": ns, "labels": {"policy": policy}}}))
            .unwrap();
    }

    let r = create_config_map(&c, "closed", "x").await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(r.body["reason"], "InternalError");
    assert_eq!(
        r.body["message"],
        format!("Internal error occurred: failed calling webhook \"fail.example.com\": failed to call webhook: Post \"{url}?timeout=10s\": dial tcp 127.0.0.1:{port}: connect: connection refused")
    );
    let r = create_config_map(&c, "open", "x").await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}

#[tokio::test(start_paused = true)]
async fn a_webhook_that_does_not_answer_in_time_fails_after_its_timeout() {
    let hooks = WebhookServer::start(&[], |_, review| {
        Answer::After(Duration::from_secs(60), Box::new(allow(review)))
    })
    .await;
    let (_server, c) = server().await;
    let mut slow = webhook(
        "slow.example.com",
        hooks.client_config("/slow"),
        core_rule(&["CREATE"], &["configmaps"]),
    );
    slow["timeoutSeconds"] = json!(3);
    validating(&c, "slow", slow.clone()).await;

    let start = tokio::time::Instant::now();
    let r = create_config_map(&c, "default", "x").await;
    let waited = start.elapsed();
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        r.body["message"],
        format!("Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \"{}?timeout=3s\": context deadline exceeded", hooks.url("/slow"))
    );
    assert!(
        waited >= Duration::from_secs(3) && waited < Duration::from_secs(60),
        "{waited:?}"
    );

    // Ignored: the request goes on after the timeout.
    slow["failurePolicy"] = json!("Ignore");
    let ignoring = configuration("Validating", "slow", slow);
    let r = c
        .send(
            http::Method::PUT,
            &format!("{VALIDATING}/slow"),
            crate::common::JSON,
            ignoring.to_string().into_bytes(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = create_config_map(&c, "default", "y").await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}

#[tokio::test]
async fn namespace_and_object_selectors_pick_the_requests() {
    let hooks = WebhookServer::start(&[], |_, review| deny(review, 403, "selected")).await;
    let (server, c) = server().await;
    let mut by_namespace = webhook(
        "ns.example.com",
        hooks.client_config("/ns"),
        core_rule(&["CREATE"], &["configmaps", "namespaces"]),
    );
    by_namespace["namespaceSelector"] = json!({"matchLabels": {"webhooks": "on"}});
    let mut by_object = webhook(
        "obj.example.com",
        hooks.client_config("/obj"),
        core_rule(&["CREATE", "UPDATE"], &["configmaps"]),
    );
    by_object["objectSelector"] =
        json!({"matchExpressions": [{"key": "checked", "operator": "Exists"}]});
    validating(&c, "ns", by_namespace).await;
    validating(&c, "obj", by_object).await;
    server
        .seed(json!({"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": "watched", "labels": {"webhooks": "on"}}}))
        .unwrap();

    let ok = create_config_map(&c, "default", "a").await;
    assert_eq!(ok.status, StatusCode::CREATED, "{}", ok.body);
    let r = create_config_map(&c, "watched", "a").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .contains("\"ns.example.com\""));
    // A namespace is matched by its own labels.
    let plain = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "plain"}});
    assert_eq!(
        c.post("/api/v1/namespaces", &plain).await.status,
        StatusCode::CREATED
    );
    let labelled = json!({"apiVersion": "v1", "kind": "Namespace",
                          "metadata": {"name": "labelled", "labels": {"webhooks": "on"}}});
    let r = c.post("/api/v1/namespaces", &labelled).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let namespace_review = hooks.requests_to("/ns").last().unwrap().clone();
    assert_eq!(namespace_review["request"]["namespace"], "labelled");
    // The object selector: the new object's labels, or the old one's.
    let r = c
        .post(
            "/api/v1/namespaces/default/configmaps",
            &config_map("b", json!({"checked": "yes"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(r.body["message"]
        .as_str()
        .unwrap()
        .contains("\"obj.example.com\""));
    server
        .seed(config_map("c", json!({"checked": "yes"})))
        .unwrap();
    let r = c
        .patch(
            "/api/v1/namespaces/default/configmaps/c",
            MERGE,
            r#"{"metadata":{"labels":{"checked":null}}}"#,
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::FORBIDDEN,
        "the old object is selected"
    );
}

#[tokio::test]
async fn rules_match_subresources_and_wildcards() {
    let hooks = WebhookServer::start(&[], |_, review| deny(review, 403, "no")).await;
    let (server, c) = server().await;
    let status = webhook(
        "status.example.com",
        hooks.client_config("/status"),
        core_rule(&["UPDATE"], &["pods/status"]),
    );
    let scale = webhook(
        "scale.example.com",
        hooks.client_config("/scale"),
        json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/scale"]}]),
    );
    validating(&c, "status", status).await;
    validating(&c, "scale", scale).await;
    server.seed(crate::common::pod("web")).unwrap();
    server
        .seed(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                     "metadata": {"name": "d", "namespace": "default"},
                     "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                              "template": {"metadata": {"labels": {"a": "b"}},
                                           "spec": {"containers": [{"name": "c", "image": "i"}]}}}}))
        .unwrap();

    // The pod itself: no rule matches.
    let r = c
        .patch(
            "/api/v1/namespaces/default/pods/web",
            MERGE,
            r#"{"metadata":{"labels":{"x":"1"}}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let r = c
        .patch(
            "/api/v1/namespaces/default/pods/web/status",
            MERGE,
            r#"{"status":{"phase":"Running"}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let review = &hooks.requests_to("/status")[0]["request"];
    assert_eq!(review["subResource"], "status");
    assert_eq!(review["requestSubResource"], "status");
    assert_eq!(review["kind"]["kind"], "Pod");
    assert_eq!(review["object"]["status"]["phase"], "Running");
    assert_eq!(review["oldObject"]["metadata"]["labels"]["x"], "1");
    assert_eq!(review["options"]["kind"], "UpdateOptions");

    let r = c
        .patch(
            "/apis/apps/v1/namespaces/default/deployments/d/scale",
            MERGE,
            r#"{"spec":{"replicas":3}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let review = &hooks.requests_to("/scale")[0]["request"];
    assert_eq!(
        review["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    assert_eq!(
        review["resource"],
        json!({"group": "apps", "version": "v1", "resource": "deployments"})
    );
    assert_eq!(review["subResource"], "scale");
    assert_eq!(review["object"]["spec"]["replicas"], 3);
    assert_eq!(review["oldObject"]["spec"]["replicas"], 1);
    let stored = server
        .get_value(
            &kclient_core::GroupResource::new("apps", "deployments"),
            "default",
            "d",
        )
        .unwrap();
    assert_eq!(stored["spec"]["replicas"], 1);
}

#[tokio::test]
async fn dry_runs_reach_only_webhooks_without_side_effects() {
    let hooks = WebhookServer::start(&[], |_, review| allow(review)).await;
    let (server, c) = server().await;
    let mut safe = webhook(
        "safe.example.com",
        hooks.client_config("/safe"),
        core_rule(&["CREATE"], &["configmaps"]),
    );
    safe["sideEffects"] = json!("NoneOnDryRun");
    validating(&c, "safe", safe).await;

    let r = c
        .post(
            "/api/v1/namespaces/default/configmaps?dryRun=All",
            &config_map("dry", json!({})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let review = &hooks.requests_to("/safe")[0]["request"];
    assert_eq!(review["dryRun"], true);
    assert_eq!(review["options"]["dryRun"], json!(["All"]));
    let configmaps = kclient_core::GroupResource::new("", "configmaps");
    assert!(server.get_value(&configmaps, "default", "dry").is_none());

    // kube-apiserver refuses to create such a configuration today; one stored by an older
    // server (seeded here) is refused dry runs.
    let mut unsafe_hook = webhook(
        "unsafe.example.com",
        hooks.client_config("/unsafe"),
        core_rule(&["DELETE"], &["configmaps"]),
    );
    unsafe_hook["sideEffects"] = json!("Some");
    let refused = c
        .post(
            VALIDATING,
            &configuration("Validating", "unsafe", unsafe_hook.clone()),
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.body["message"].as_str().unwrap().contains(
        "webhooks[0].sideEffects: Unsupported value: \"Some\": supported values: \"None\", \"NoneOnDryRun\""
    ));
    server
        .seed(configuration("Validating", "unsafe", unsafe_hook))
        .unwrap();
    server.seed(config_map("kept", json!({}))).unwrap();
    let r = c
        .send(
            http::Method::DELETE,
            "/api/v1/namespaces/default/configmaps/kept?dryRun=All",
            crate::common::JSON,
            Vec::new(),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["message"],
        "admission webhook \"unsafe.example.com\" does not support dry run"
    );
    assert!(hooks.requests_to("/unsafe").is_empty());
    let r = c.delete("/api/v1/namespaces/default/configmaps/kept").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(hooks.requests_to("/unsafe").len(), 1);
}

#[tokio::test]
async fn deletes_are_admitted_with_the_old_object() {
    let hooks = WebhookServer::start(&[], |_, review| {
        if review["request"]["oldObject"]["metadata"]["labels"]["keep"] == "yes" {
            deny(review, 403, "kept")
        } else {
            allow(review)
        }
    })
    .await;
    let (server, c) = server().await;
    let hook = webhook(
        "delete.example.com",
        hooks.client_config("/delete"),
        core_rule(&["DELETE"], &["configmaps"]),
    );
    validating(&c, "delete", hook).await;
    server
        .seed(config_map("kept", json!({"keep": "yes"})))
        .unwrap();
    server
        .seed(config_map("gone", json!({"group": "a"})))
        .unwrap();
    server
        .seed(config_map("also-gone", json!({"group": "a"})))
        .unwrap();

    let r = c.delete("/api/v1/namespaces/default/configmaps/kept").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let request = &hooks.requests_to("/delete")[0]["request"];
    assert_eq!(request["operation"], "DELETE");
    assert_eq!(request["name"], "kept");
    assert_eq!(request["object"], Value::Null);
    assert_eq!(request["oldObject"]["metadata"]["name"], "kept");
    assert_eq!(
        request["options"],
        json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"})
    );

    let r = c
        .delete("/api/v1/namespaces/default/configmaps?labelSelector=group%3Da")
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let collection: Vec<Value> = hooks.requests_to("/delete")[1..].to_vec();
    assert_eq!(collection.len(), 2);
    for review in &collection {
        assert!(review["request"].get("name").is_none(), "{review}");
        assert_eq!(review["request"]["namespace"], "default");
    }
    let configmaps = kclient_core::GroupResource::new("", "configmaps");
    assert!(server.get_value(&configmaps, "default", "kept").is_some());
    assert!(server.get_value(&configmaps, "default", "gone").is_none());
}

#[tokio::test]
async fn bad_answers_are_the_servers_errors() {
    let hooks = WebhookServer::start(&[], |path, review| match path {
        "/uid" => crate::common::webhook_server::admission_answer(
            review,
            json!({"allowed": true}),
        )
        .with_uid("wrong"),
        "/text" => Answer::Raw(200, "application/json", b"not json".to_vec()),
        "/version" => Answer::Json(json!({"apiVersion": "admission.k8s.io/v1beta1",
            "kind": "AdmissionReview", "response": {"uid": review["request"]["uid"], "allowed": true}})),
        "/patch" => patch(review, json!([{"op": "remove", "path": "/metadata/labels/missing"}])),
        "/error" => Answer::Raw(500, "text/plain", b"boom".to_vec()),
        _ => allow(review),
    })
    .await;
    let (server, c) = server().await;
    for (i, path) in ["/uid", "/text", "/version", "/patch", "/error"]
        .iter()
        .enumerate()
    {
        let mut hook = webhook(
            &format!("bad{i}.example.com"),
            hooks.client_config(path),
            core_rule(&["CREATE"], &["configmaps"]),
        );
        hook["failurePolicy"] = json!("Fail");
        hook["namespaceSelector"] = json!({"matchLabels": {"hook": path.trim_start_matches('/')}});
        let kind = if *path == "/patch" {
            "Mutating"
        } else {
            "Validating"
        };
        let collection = if *path == "/patch" {
            MUTATING
        } else {
            VALIDATING
        };
        register(
            &c,
            collection,
            &configuration(kind, &format!("bad{i}"), hook),
        )
        .await;
        server
            .seed(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": path.trim_start_matches('/'), "labels": {"hook": path.trim_start_matches('/')}}}))
            .unwrap();
    }
    let create = |ns: &'static str| {
        let c = c.clone();
        async move {
            c.post(
                &format!("/api/v1/namespaces/{ns}/configmaps"),
                &config_map("x", json!({})),
            )
            .await
        }
    };
    let prefix = |i: usize| {
        format!("Internal error occurred: failed calling webhook \"bad{i}.example.com\": ")
    };

    let r = create("uid").await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    let uid = hooks.requests_to("/uid")[0]["request"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        r.body["message"],
        format!(
            "{}received invalid webhook response: expected response.uid={uid:?}, got \"wrong\"",
            prefix(0)
        )
    );

    let r = create("text").await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    let message = r.body["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "{}failed to call webhook: couldn't get version/kind; json parse error: ",
            prefix(1)
        )),
        "{message}"
    );

    let r = create("version").await;
    assert_eq!(
        r.body["message"],
        format!("{}received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview", prefix(2))
    );

    // A patch that does not apply fails the request whatever the failure policy.
    let r = create("patch").await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    let message = r.body["message"].as_str().unwrap();
    assert!(
        message.starts_with("Internal error occurred: "),
        "{message}"
    );
    assert!(!message.contains("failed calling webhook"), "{message}");

    let r = create("error").await;
    assert_eq!(
        r.body["message"],
        format!("{}failed to call webhook: an error on the server (\"boom\") has prevented the request from succeeding", prefix(4))
    );
    let configmaps = kclient_core::GroupResource::new("", "configmaps");
    for ns in ["uid", "text", "version", "patch", "error"] {
        assert!(server.get_value(&configmaps, ns, "x").is_none(), "{ns}");
    }
}

#[tokio::test]
async fn a_webhook_called_before_a_later_change_is_reinvoked_if_needed() {
    let hooks = WebhookServer::start(&[], |path, review| {
        let labels = &review["request"]["object"]["metadata"]["labels"];
        match path {
            // Counts what it saw: reinvoked, it sees `second`.
            "/first" if labels.get("second").is_some() => patch(
                review,
                json!([{"op": "add", "path": "/metadata/labels/first-saw-second", "value": "yes"}]),
            ),
            "/first" => patch(
                review,
                json!([{"op": "add", "path": "/metadata/labels/first", "value": "yes"}]),
            ),
            _ if labels.get("second").is_none() => patch(
                review,
                json!([{"op": "add", "path": "/metadata/labels/second", "value": "yes"}]),
            ),
            _ => allow(review),
        }
    })
    .await;
    let (_server, c) = server().await;
    let rules = core_rule(&["CREATE"], &["configmaps"]);
    let mut first = webhook(
        "first.example.com",
        hooks.client_config("/first"),
        rules.clone(),
    );
    first["reinvocationPolicy"] = json!("IfNeeded");
    let second = webhook("second.example.com", hooks.client_config("/second"), rules);
    // Configurations are called by name: `a-…` first.
    mutating(&c, "b-second", second).await;
    mutating(&c, "a-first", first).await;

    let r = create_config_map(&c, "default", "x").await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(
        r.body["metadata"]["labels"],
        json!({"first": "yes", "second": "yes", "first-saw-second": "yes"})
    );
    let calls: Vec<String> = hooks.requests().into_iter().map(|(p, _)| p).collect();
    assert_eq!(calls, ["/first", "/second", "/first"]);
}

#[tokio::test]
async fn a_webhook_speaking_only_v1beta1_gets_v1beta1_reviews() {
    let hooks = WebhookServer::start(&[], |_, _| {
        // v1beta1 answers were never checked for their uid.
        Answer::Json(
            json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
                            "response": {"uid": "anything", "allowed": true}}),
        )
    })
    .await;
    let (_server, c) = server().await;
    let mut hook = webhook(
        "old.example.com",
        hooks.client_config("/old"),
        core_rule(&["CREATE"], &["configmaps"]),
    );
    hook["admissionReviewVersions"] = json!(["v1beta1"]);
    validating(&c, "old", hook).await;
    let r = create_config_map(&c, "default", "x").await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(
        hooks.requests_to("/old")[0]["apiVersion"],
        "admission.k8s.io/v1beta1"
    );
}

#[tokio::test]
async fn mutating_webhooks_see_updates_and_patches() {
    let hooks = WebhookServer::start(&[], |_, review| {
        patch(
            review,
            json!([{"op": "add", "path": "/data/stamped", "value": "yes"}]),
        )
    })
    .await;
    let (server, c) = server().await;
    let hook = webhook(
        "stamp.example.com",
        hooks.client_config("/stamp"),
        core_rule(&["UPDATE"], &["configmaps"]),
    );
    mutating(&c, "stamp", hook).await;
    server.seed(config_map("x", json!({}))).unwrap();
    let r = c
        .patch(
            "/api/v1/namespaces/default/configmaps/x",
            JSON_PATCH,
            r#"[{"op":"replace","path":"/data/k","value":"w"}]"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["data"], json!({"k": "w", "stamped": "yes"}));
    let request = &hooks.requests_to("/stamp")[0]["request"];
    assert_eq!(request["operation"], "UPDATE");
    assert_eq!(request["object"]["data"]["k"], "w");
    assert_eq!(request["oldObject"]["data"]["k"], "v");
}

#[tokio::test]
async fn webhook_configurations_are_defaulted_and_never_admitted() {
    let hooks = WebhookServer::start(&[], |_, review| deny(review, 403, "no")).await;
    let (_server, c) = server().await;
    let everything = webhook(
        "everything.example.com",
        hooks.client_config("/all"),
        json!([{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}]),
    );
    validating(&c, "all", everything).await;
    let r = c.get(&format!("{VALIDATING}/all")).await;
    let stored = &r.body["webhooks"][0];
    assert_eq!(stored["failurePolicy"], "Fail");
    assert_eq!(stored["matchPolicy"], "Equivalent");
    assert_eq!(stored["timeoutSeconds"], 10);
    assert_eq!(stored["namespaceSelector"], json!({}));
    assert_eq!(stored["objectSelector"], json!({}));
    assert_eq!(stored["rules"][0]["scope"], "*");
    // The configurations themselves are exempt: it can be removed.
    let r = c.delete(&format!("{VALIDATING}/all")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(hooks.requests().is_empty());
}

fn hook_with_bundle(hooks: &WebhookServer, bundle: &str) -> Value {
    use base64::Engine as _;
    let mut config = hooks.client_config("/check");
    config["caBundle"] = json!(base64::engine::general_purpose::STANDARD.encode(bundle));
    webhook("x.example.com", config, json!([]))
}

#[tokio::test]
async fn service_references_reach_the_address_a_test_maps_them_to() {
    let hooks = WebhookServer::start(&["hooks.system.svc"], |_, review| {
        deny(review, 403, "via service")
    })
    .await;
    let (server, c) = server().await;
    let hook = webhook(
        "svc.example.com",
        json!({"service": {"namespace": "system", "name": "hooks", "path": "/check"},
               "caBundle": hooks.ca_bundle}),
        core_rule(&["CREATE"], &["configmaps"]),
    );
    validating(&c, "svc", hook).await;
    let r = create_config_map(&c, "default", "x").await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        r.body["message"].as_str().unwrap().starts_with("Internal error occurred: failed calling webhook \"svc.example.com\": failed to call webhook: Post \"https://hooks.system.svc:443/check?timeout=10s\": "),
        "{}",
        r.body["message"]
    );
    server.route_service("system", "hooks", hooks.addr);
    // A CA bundle that is no PEM: client-go cannot build the client.
    let mut junk = hook_with_bundle(&hooks, "anything");
    junk["name"] = json!("junk.example.com");
    junk["rules"] = core_rule(&["CREATE"], &["secrets"]);
    validating(&c, "junk", junk).await;
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
    let r = c.post("/api/v1/namespaces/default/secrets", &secret).await;
    assert_eq!(
        r.body["message"],
        "Internal error occurred: failed calling webhook \"junk.example.com\": could not get REST client: unable to load root certificates: unable to parse bytes as PEM block"
    );
    let r = create_config_map(&c, "default", "x").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(hooks.requests_to("/check").len(), 1);
}

#[tokio::test]
async fn a_webhook_whose_certificate_the_ca_bundle_does_not_sign_fails_the_handshake() {
    let hooks = WebhookServer::start(&[], |_, review| allow(review)).await;
    let other = WebhookServer::start(&[], |_, review| allow(review)).await;
    let (_server, c) = server().await;
    let mut config = hooks.client_config("/allow");
    config["caBundle"] = json!(other.ca_bundle);
    let hook = webhook(
        "mistrusted.example.com",
        config,
        core_rule(&["CREATE"], &["configmaps"]),
    );
    validating(&c, "mistrusted", hook).await;
    let r = create_config_map(&c, "default", "x").await;
    assert_eq!(
        r.body["message"],
        format!("Internal error occurred: failed calling webhook \"mistrusted.example.com\": failed to call webhook: Post \"{}?timeout=10s\": tls: failed to verify certificate: x509: certificate signed by unknown authority", hooks.url("/allow"))
    );
    assert!(hooks.requests().is_empty());
}

#[tokio::test]
async fn equivalent_match_policy_sends_the_object_in_the_version_the_rule_names() {
    let hooks = WebhookServer::start(&[], |_, review| allow(review)).await;
    let (_server, c) = server().await;
    let version = |name: &str, storage: bool| {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object",
                   "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}})
    };
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [version("v1", true), version("v2", false)]}
    });
    let r = c
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let rules = json!([{"operations": ["CREATE"], "apiGroups": ["example.com"],
                        "apiVersions": ["v1"], "resources": ["gadgets"]}]);
    let equivalent = webhook(
        "equivalent.example.com",
        hooks.client_config("/eq"),
        rules.clone(),
    );
    let mut exact = webhook("exact.example.com", hooks.client_config("/exact"), rules);
    exact["matchPolicy"] = json!("Exact");
    validating(&c, "eq", equivalent).await;
    validating(&c, "exact", exact).await;

    let gadget = json!({"apiVersion": "example.com/v2", "kind": "Gadget",
                        "metadata": {"name": "g"}, "spec": {"size": 1}});
    let r = c
        .post("/apis/example.com/v2/namespaces/default/gadgets", &gadget)
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert!(hooks.requests_to("/exact").is_empty());
    let request = &hooks.requests_to("/eq")[0]["request"];
    assert_eq!(
        request["kind"],
        json!({"group": "example.com", "version": "v1", "kind": "Gadget"})
    );
    assert_eq!(request["resource"]["version"], "v1");
    assert_eq!(request["requestKind"]["version"], "v2");
    assert_eq!(request["requestResource"]["version"], "v2");
    assert_eq!(request["object"]["apiVersion"], "example.com/v1");
}

#[tokio::test]
async fn evictions_are_admitted_as_creates_of_the_eviction_subresource() {
    let hooks = WebhookServer::start(&[], |_, review| deny(review, 429, "not now")).await;
    let (server, c) = server().await;
    let hook = webhook(
        "evictions.example.com",
        hooks.client_config("/evict"),
        core_rule(&["CREATE"], &["pods/eviction"]),
    );
    validating(&c, "evictions", hook).await;
    server.seed(crate::common::pod("web")).unwrap();
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
                          "metadata": {"name": "web", "namespace": "default"}});
    let r = c
        .post("/api/v1/namespaces/default/pods/web/eviction", &eviction)
        .await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        r.body["message"],
        "admission webhook \"evictions.example.com\" denied the request: not now"
    );
    let request = &hooks.requests_to("/evict")[0]["request"];
    assert_eq!(
        request["kind"],
        json!({"group": "policy", "version": "v1", "kind": "Eviction"})
    );
    assert_eq!(request["resource"]["resource"], "pods");
    assert_eq!(request["subResource"], "eviction");
    assert_eq!(request["name"], "web");
    assert_eq!(request["object"]["kind"], "Eviction");
    let pods = kclient_core::GroupResource::new("", "pods");
    assert!(server.get_value(&pods, "default", "web").is_some());
}

#[tokio::test]
async fn webhooks_see_the_user_a_client_certificate_names() {
    let hooks = WebhookServer::start(&[], |_, review| allow(review)).await;
    let server = kclient_fake::FakeApiServer::builder()
        .https()
        .client_cert_auth()
        .start()
        .await
        .unwrap();
    let hook = webhook(
        "who.example.com",
        hooks.client_config("/who"),
        core_rule(&["CREATE"], &["configmaps"]),
    );
    server
        .seed(configuration("Validating", "who", hook))
        .unwrap();
    let mut config = server.config().unwrap();
    let alice = server.issue_client_certificate("alice", &["devs"]).unwrap();
    config.tls.cert_data = Some(alice.cert_pem.into_bytes());
    config.tls.key_data = Some(alice.key_pem.into_bytes());
    let client = kclient_rest::RestClient::new(config).unwrap();
    let created: Value = client
        .post()
        .abs_path("/api/v1/namespaces/default/configmaps")
        .json_body(&config_map("x", json!({})))
        .json()
        .await
        .unwrap();
    assert_eq!(created["metadata"]["name"], "x");
    let request = &hooks.requests_to("/who")[0]["request"];
    assert_eq!(
        request["userInfo"],
        json!({"username": "alice", "groups": ["devs", "system:authenticated"]})
    );
}
