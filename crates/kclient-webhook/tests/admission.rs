//! Validating and defaulting webhooks over HTTPS, as the API server calls them: verdicts,
//! warnings, patches, and every way a request or a handler can go wrong.

use std::time::Duration;

use base64::Engine as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kclient_core::admission::Operation;
use kclient_core::{FieldError, GroupKind};
use kclient_webhook::admission::{AdmissionContext, Warnings};
use kclient_webhook::{
    CustomDefaulter, CustomValidator, Denial, WebhookMetrics, WebhookOptions, WebhookServer,
};
use serde_json::{json, Value};

use crate::support::start;

const VALIDATE: &str = "/validate--v1-configmap";
const MUTATE: &str = "/mutate--v1-configmap";

/// Refuses a ConfigMap with a `forbidden` key, warns about an empty one, refuses changing
/// `locked`, refuses deleting one labelled `keep`; panics on a `panic` key, hangs on `hang`.
struct Rules;

impl CustomValidator<ConfigMap> for Rules {
    async fn validate_create(
        &self,
        cm: &ConfigMap,
        ctx: &AdmissionContext,
    ) -> Result<Warnings, Denial> {
        let data = cm.data.clone().unwrap_or_default();
        if data.contains_key("panic") {
            panic!("the validator was told to panic");
        }
        if data.contains_key("hang") {
            std::future::pending::<()>().await;
        }
        if data.contains_key("forbidden") {
            return Err(Denial::forbidden(format!(
                "{} has a forbidden key",
                ctx.name
            )));
        }
        if data.contains_key("invalid") {
            let kind = GroupKind::new("", "ConfigMap");
            let errors = vec![FieldError::invalid(
                "data.invalid",
                &json!("x"),
                "must not be set",
            )];
            return Err(Denial::invalid(&kind, &ctx.name, errors));
        }
        Ok(if data.is_empty() {
            vec!["the ConfigMap is empty".into()]
        } else {
            vec![]
        })
    }

    async fn validate_update(
        &self,
        old: &ConfigMap,
        new: &ConfigMap,
        _: &AdmissionContext,
    ) -> Result<Warnings, Denial> {
        let locked = |cm: &ConfigMap| cm.data.as_ref().and_then(|d| d.get("locked").cloned());
        if locked(old) != locked(new) {
            return Err("locked may not change".into());
        }
        Ok(vec![])
    }

    async fn validate_delete(
        &self,
        cm: &ConfigMap,
        _: &AdmissionContext,
    ) -> Result<Warnings, Denial> {
        if cm
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key("keep"))
        {
            return Err("this ConfigMap is kept".into());
        }
        Ok(vec![])
    }
}

/// Sets `data.mode` to `fast` when missing.
struct Mode;

impl CustomDefaulter<ConfigMap> for Mode {
    async fn default(&self, cm: &mut ConfigMap, _: &AdmissionContext) -> Result<(), Denial> {
        cm.data
            .get_or_insert_default()
            .entry("mode".into())
            .or_insert_with(|| "fast".into());
        Ok(())
    }
}

fn review(uid: &str, operation: &str, object: Option<Value>, old: Option<Value>) -> Value {
    let mut request = json!({
        "uid": uid,
        "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
        "namespace": "default", "name": "settings", "operation": operation,
        "userInfo": {"username": "admin"},
    });
    if let Some(o) = object {
        request["object"] = o;
    }
    if let Some(o) = old {
        request["oldObject"] = o;
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}

fn config_map(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "default", "labels": {"keep": "yes"}}, "data": data})
}

fn server() -> kclient_webhook::WebhookServerBuilder {
    let options = WebhookOptions {
        operations: vec![Operation::Create, Operation::Update, Operation::Delete],
        ..WebhookOptions::default()
    };
    WebhookServer::builder()
        .validator_with::<ConfigMap, _>(Rules, options)
        .defaulter::<ConfigMap, _>(Mode)
}

#[tokio::test]
async fn validators_allow_deny_and_warn_with_the_uid_echoed() {
    let running = start(server()).await;
    let allowed = running
        .post(
            VALIDATE,
            &review("u1", "CREATE", Some(config_map(json!({"a": "1"}))), None),
        )
        .await;
    assert_eq!(allowed["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(allowed["response"]["uid"], "u1");
    assert_eq!(allowed["response"]["allowed"], true);

    let warned = running
        .post(
            VALIDATE,
            &review("u2", "CREATE", Some(config_map(json!({}))), None),
        )
        .await;
    assert_eq!(
        warned["response"]["warnings"],
        json!(["the ConfigMap is empty"])
    );

    let denied = running
        .post(
            VALIDATE,
            &review(
                "u3",
                "CREATE",
                Some(config_map(json!({"forbidden": "x"}))),
                None,
            ),
        )
        .await;
    assert_eq!(denied["response"]["allowed"], false);
    assert_eq!(denied["response"]["uid"], "u3");
    assert_eq!(
        denied["response"]["status"],
        json!({"status": "Failure", "message": "settings has a forbidden key", "reason": "Forbidden", "code": 403})
    );

    let invalid = running
        .post(
            VALIDATE,
            &review(
                "u4",
                "CREATE",
                Some(config_map(json!({"invalid": "x"}))),
                None,
            ),
        )
        .await;
    let status = &invalid["response"]["status"];
    assert_eq!(
        (status["code"].as_u64(), status["reason"].as_str()),
        (Some(422), Some("Invalid"))
    );
    assert_eq!(
        status["message"],
        "ConfigMap \"settings\" is invalid: data.invalid: Invalid value: \"x\": must not be set"
    );

    let old = config_map(json!({"locked": "1"}));
    let changed = running
        .post(
            VALIDATE,
            &review(
                "u5",
                "UPDATE",
                Some(config_map(json!({"locked": "2"}))),
                Some(old.clone()),
            ),
        )
        .await;
    assert_eq!(
        changed["response"]["status"]["message"],
        "locked may not change"
    );
    let same = running
        .post(
            VALIDATE,
            &review("u6", "UPDATE", Some(old.clone()), Some(old.clone())),
        )
        .await;
    assert_eq!(same["response"]["allowed"], true);

    // A delete carries the old object only.
    let kept = running
        .post(VALIDATE, &review("u7", "DELETE", None, Some(old)))
        .await;
    assert_eq!(
        kept["response"]["status"]["message"],
        "this ConfigMap is kept"
    );
}

#[tokio::test]
async fn a_defaulter_answers_with_the_patch_of_what_it_changed_leaving_unknown_fields_alone() {
    let running = start(server()).await;
    let mut object = config_map(json!({"a": "1"}));
    object["unknownTopLevel"] = json!({"kept": true});
    let answer = running
        .post(MUTATE, &review("m1", "CREATE", Some(object.clone()), None))
        .await;
    let response = &answer["response"];
    assert_eq!(
        (
            response["allowed"].as_bool(),
            response["patchType"].as_str()
        ),
        (Some(true), Some("JSONPatch"))
    );
    let patch = base64::engine::general_purpose::STANDARD
        .decode(response["patch"].as_str().unwrap())
        .unwrap();
    let patch: Value = serde_json::from_slice(&patch).unwrap();
    assert_eq!(
        patch,
        json!([{"op": "add", "path": "/data/mode", "value": "fast"}])
    );

    // Nothing to default: no patch at all.
    let defaulted = config_map(json!({"mode": "safe"}));
    let answer = running
        .post(MUTATE, &review("m2", "CREATE", Some(defaulted), None))
        .await;
    assert_eq!(answer["response"]["allowed"], true);
    assert!(answer["response"].get("patch").is_none(), "{answer}");
}

#[tokio::test]
async fn bad_requests_are_answered_with_a_status_never_a_crash() {
    let running = start(server()).await;
    // Not JSON.
    let raw = running
        .client
        .post()
        .abs_path(VALIDATE)
        .header("Content-Type", "application/json")
        .body("{not json")
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(raw["response"]["status"]["code"], 400);
    assert!(raw["response"]["status"]["message"]
        .as_str()
        .unwrap()
        .starts_with("unable to decode the request"));
    // Another content type.
    let text = running
        .client
        .post()
        .abs_path(VALIDATE)
        .header("Content-Type", "text/plain")
        .body("hello")
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(
        text["response"]["status"]["message"],
        "contentType=text/plain, expected application/json"
    );
    // A review without a request.
    let empty = running
        .post(
            VALIDATE,
            &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}),
        )
        .await;
    assert_eq!(
        empty["response"]["status"]["message"],
        "the admission review has no request"
    );
    // An object that is not a ConfigMap.
    let wrong = running
        .post(
            VALIDATE,
            &review("b1", "CREATE", Some(json!({"data": "not a map"})), None),
        )
        .await;
    assert_eq!(wrong["response"]["uid"], "b1");
    assert_eq!(wrong["response"]["status"]["code"], 400);
    assert!(wrong["response"]["status"]["message"]
        .as_str()
        .unwrap()
        .starts_with("cannot decode the object"));
    // A path nothing serves, and a GET.
    let missing = running
        .client
        .post()
        .abs_path("/nothing")
        .json_body(&json!({}))
        .send()
        .await
        .unwrap_err();
    assert_eq!(missing.http_code(), Some(404));
    let get = running
        .client
        .get()
        .abs_path(VALIDATE)
        .send()
        .await
        .unwrap_err();
    assert_eq!(get.http_code(), Some(405));
}

#[tokio::test]
async fn a_handler_that_panics_is_answered_for_and_counted_and_the_server_goes_on() {
    let mut registry = prometheus_client::registry::Registry::default();
    let metrics = WebhookMetrics::new(&mut registry);
    let running = start(server().metrics(metrics.clone())).await;
    let answer = running
        .post(
            VALIDATE,
            &review(
                "p1",
                "CREATE",
                Some(config_map(json!({"panic": "1"}))),
                None,
            ),
        )
        .await;
    assert_eq!(answer["response"]["uid"], "p1");
    assert_eq!(answer["response"]["allowed"], false);
    assert_eq!(
        answer["response"]["status"],
        json!({"message": "panic: the validator was told to panic [recovered]", "code": 500})
    );
    assert_eq!(metrics.panics(), 1);
    let after = running
        .post(
            VALIDATE,
            &review("p2", "CREATE", Some(config_map(json!({"a": "1"}))), None),
        )
        .await;
    assert_eq!(after["response"]["allowed"], true);
    assert_eq!(metrics.requests(VALIDATE, 200), 2);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for name in [
        "controller_runtime_webhook_requests_total{webhook=\"/validate--v1-configmap\",code=\"200\"} 2",
        "controller_runtime_webhook_panics_total 1",
        "controller_runtime_webhook_latency_seconds_count{webhook=\"/validate--v1-configmap\"} 2",
        "controller_runtime_webhook_requests_in_flight{webhook=\"/validate--v1-configmap\"} 0",
    ] {
        assert!(text.contains(name), "{name} in {text}");
    }
}

#[tokio::test]
async fn a_handler_that_hangs_is_answered_for_after_the_timeout() {
    let running = start(server().handler_timeout(Duration::from_millis(200))).await;
    let answer = running
        .post(
            VALIDATE,
            &review("h1", "CREATE", Some(config_map(json!({"hang": "1"}))), None),
        )
        .await;
    assert_eq!(answer["response"]["uid"], "h1");
    assert_eq!(
        answer["response"]["status"],
        json!({"message": "the webhook handler did not answer within 200ms", "code": 500})
    );
}

#[tokio::test]
async fn the_configurations_name_each_handler_with_its_rules() {
    let running_server = server()
        .bind(
            "127.0.0.1:0".parse().unwrap(),
            kclient_webhook::certs::SelfSignedCertificates::generate(&["localhost"], &[])
                .unwrap()
                .serving(),
        )
        .await
        .unwrap();
    let client = kclient_webhook::ClientConfig::url("https://127.0.0.1:9443/", "CA PEM");
    let validating = serde_json::to_value(
        running_server.validating_webhook_configuration("config-maps", &client),
    )
    .unwrap();
    assert_eq!(
        validating,
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "config-maps"},
            "webhooks": [{
                "name": "validate.configmap.v1.core",
                "clientConfig": {"url": "https://127.0.0.1:9443/validate--v1-configmap", "caBundle": "Q0EgUEVN"},
                "rules": [{"operations": ["CREATE", "UPDATE", "DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "scope": "Namespaced"}],
                "failurePolicy": "Fail", "sideEffects": "None", "timeoutSeconds": 10, "matchPolicy": "Equivalent",
                "admissionReviewVersions": ["v1"],
            }],
        })
    );
    let mutating =
        serde_json::to_value(running_server.mutating_webhook_configuration("config-maps", &client))
            .unwrap();
    assert_eq!(
        mutating["webhooks"][0]["clientConfig"]["url"],
        "https://127.0.0.1:9443/mutate--v1-configmap"
    );
    assert_eq!(mutating["webhooks"][0]["reinvocationPolicy"], "Never");
    assert_eq!(
        mutating["webhooks"][0]["rules"][0]["operations"],
        json!(["CREATE", "UPDATE"])
    );
}
