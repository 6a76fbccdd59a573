//! Installing CRDs against kclient-fake: served when Established and in discovery, refusals
//! and name clashes as typed errors at once, a CRD never served as a bounded wait.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kclient_core::ApiStatus;
use kclient_fake::{ActionFilter, FakeApiServer, Reaction, Reactor};
use kclient_tools::crd::{install_crd, install_crds, InstallCrdError};
use kclient_typed::Clientset;
use serde_json::{json, Value};

fn crd_json(plural: &str, kind: &str, size_schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {"size": size_schema}}},
                }}},
                {"name": "v2", "served": false, "storage": false, "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true,
                }}},
            ],
        },
    })
}

fn crd(plural: &str, kind: &str) -> CustomResourceDefinition {
    serde_json::from_value(crd_json(plural, kind, json!({"type": "integer"}))).unwrap()
}

async fn fake() -> (FakeApiServer, Clientset) {
    let server = FakeApiServer::start().await.unwrap();
    let clientset = Clientset::new(server.config().unwrap()).unwrap();
    (server, clientset)
}

#[tokio::test]
async fn installed_crds_are_served_and_installing_again_is_an_apply() {
    let (_server, clientset) = fake().await;
    let installed = install_crds(
        &clientset,
        &[crd("widgets", "Widget"), crd("gadgets", "Gadget")],
        Duration::from_secs(10),
    )
    .await
    .unwrap();
    assert_eq!(installed.len(), 2);
    let established = |crd: &CustomResourceDefinition| {
        crd.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            })
    };
    assert!(installed.iter().all(established));
    // Served: an object of the kind can be created.
    let created = clientset
        .rest_client()
        .post()
        .abs_path("/apis/example.com/v1/namespaces/default/widgets")
        .json_body(&json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}))
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(created["spec"]["size"], 1);
    // Again, changed: applied over the first, still served.
    let changed: CustomResourceDefinition = serde_json::from_value(crd_json(
        "widgets",
        "Widget",
        json!({"type": "integer", "minimum": 1}),
    ))
    .unwrap();
    let again = install_crd(&clientset, &changed, Duration::from_secs(10))
        .await
        .unwrap();
    let schema = serde_json::to_value(&again.spec.versions[0].schema).unwrap();
    assert_eq!(
        schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]["minimum"],
        1.0
    );
}

#[tokio::test]
async fn a_refused_crd_is_the_server_s_refusal() {
    let (_server, clientset) = fake().await;
    // Not structural: a property without a type.
    let bad: CustomResourceDefinition = serde_json::from_value(crd_json(
        "widgets",
        "Widget",
        json!({"description": "no type"}),
    ))
    .unwrap();
    let error = install_crd(&clientset, &bad, Duration::from_secs(10))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, InstallCrdError::Request { name, .. } if name == "widgets.example.com"),
        "{error:?}"
    );
    assert!(error.is_invalid(), "{error}");
    let mut nameless = crd("widgets", "Widget");
    nameless.metadata.name = None;
    assert!(matches!(
        install_crd(&clientset, &nameless, Duration::from_secs(10)).await,
        Err(InstallCrdError::NoName)
    ));
}

/// The CRD as the server would show it with these conditions.
fn with_conditions(conditions: Value) -> Value {
    let mut crd = crd_json("widgets", "Widget", json!({"type": "integer"}));
    crd["status"] = json!({"conditions": conditions, "acceptedNames": {"plural": "", "kind": ""}});
    crd
}

#[tokio::test]
async fn names_the_server_does_not_accept_fail_at_once() {
    let (server, clientset) = fake().await;
    let clash = with_conditions(json!([{
        "type": "NamesAccepted", "status": "False", "reason": "MultipleNamesNotAllowed",
        "message": "\"Widget\" is already in use", "lastTransitionTime": "2026-11-29T00:00:00Z",
    }]));
    server.reactors().prepend(Reactor::new(
        ActionFilter::new("get", "customresourcedefinitions"),
        Reaction::Respond {
            code: 200,
            object: clash,
        },
    ));
    let error = install_crd(
        &clientset,
        &crd("widgets", "Widget"),
        Duration::from_secs(10),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&error, InstallCrdError::NamesNotAccepted { reason, message, .. }
            if reason == "MultipleNamesNotAllowed" && message.contains("already in use")),
        "{error:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_crd_never_served_is_a_timeout_that_says_what_was_seen() {
    let (server, clientset) = fake().await;
    let pending = with_conditions(json!([{
        "type": "Established", "status": "False", "reason": "Installing",
        "lastTransitionTime": "2026-11-29T00:00:00Z",
    }]));
    server.reactors().prepend(Reactor::new(
        ActionFilter::new("get", "customresourcedefinitions"),
        Reaction::Respond {
            code: 200,
            object: pending,
        },
    ));
    let started = tokio::time::Instant::now();
    let error = install_crd(
        &clientset,
        &crd("widgets", "Widget"),
        Duration::from_secs(30),
    )
    .await
    .unwrap_err();
    assert!(started.elapsed() >= Duration::from_secs(30));
    assert!(started.elapsed() < Duration::from_secs(31));
    match error {
        InstallCrdError::Timeout {
            name, last_seen, ..
        } => {
            assert_eq!(name, "widgets.example.com");
            assert_eq!(last_seen, "conditions [Established=False]");
        }
        other => panic!("{other:?}"),
    }
}
