//! The subresources kube-apiserver lists besides status and scale: a pod's
//! `ephemeralcontainers` and `resize`, the connect subresources (`exec`, `attach`,
//! `portforward`, `proxy`) with nothing to connect to, `serviceaccounts/token`,
//! `namespaces/finalize`. Expectations checked against kube-apiserver v1.37.1.

use crate::common;

use base64::Engine as _;
use common::*;
use http::{Method, StatusCode};
use serde_json::{json, Value};

const PODS: &str = "/api/v1/namespaces/default/pods";

#[tokio::test]
async fn ephemeral_containers_change_only_the_ephemeral_containers() {
    let (_server, c) = server().await;
    let created = c.post(PODS, &pod("p")).await;
    assert_eq!(created.body["metadata"]["generation"], 1);
    let got = c.get(&format!("{PODS}/p/ephemeralcontainers")).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.body["kind"], "Pod");

    let mut body = got.body.clone();
    body["metadata"]["labels"] = json!({"x": "y"});
    body["spec"]["containers"][0]["image"] = json!("changed");
    body["spec"]["ephemeralContainers"] = json!([{"name": "debug", "image": "busybox"}]);
    let r = c
        .put(
            &format!("{PODS}/p/ephemeralcontainers?fieldManager=kubectl-debug"),
            &body,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["spec"]["ephemeralContainers"][0]["name"], "debug");
    assert_eq!(r.body["spec"]["containers"][0]["image"], "nginx");
    assert!(r.body["metadata"].get("labels").is_none());
    assert_eq!(r.body["metadata"]["generation"], 2);
    let managers: Vec<(&str, &str)> = r.body["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["manager"].as_str().unwrap(),
                m["subresource"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(
        managers.contains(&("kubectl-debug", "ephemeralcontainers")),
        "{managers:?}"
    );

    let r = c
        .patch(
            &format!("{PODS}/p/ephemeralcontainers"),
            MERGE,
            r#"{"spec":{"ephemeralContainers":[{"name":"debug","image":"busybox"},{"name":"two","image":"busybox"}]}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["spec"]["ephemeralContainers"][1]["name"], "two");
    assert_eq!(r.body["metadata"]["generation"], 3);

    let r = c
        .post(&format!("{PODS}/p/ephemeralcontainers"), &json!({}))
        .await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        r.body["message"],
        "the server does not allow this method on the requested resource"
    );
}

#[tokio::test]
async fn resize_changes_only_container_resources() {
    let (_server, c) = server().await;
    let mut p = pod("r");
    p["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "100m"}});
    c.post(PODS, &p).await;
    let mut body = c.get(&format!("{PODS}/r/resize")).await.body;
    body["metadata"]["labels"] = json!({"z": "w"});
    body["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "200m"}});
    body["spec"]["containers"][0]["image"] = json!("changed");
    body["spec"]["activeDeadlineSeconds"] = json!(5);
    let r = c.put(&format!("{PODS}/r/resize"), &body).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        r.body["spec"]["containers"][0]["resources"],
        json!({"requests": {"cpu": "200m"}})
    );
    assert_eq!(r.body["spec"]["containers"][0]["image"], "nginx");
    assert!(r.body["spec"].get("activeDeadlineSeconds").is_none());
    assert!(r.body["metadata"].get("labels").is_none());
    assert_eq!(r.body["metadata"]["generation"], 2);

    let r = c
        .patch(
            &format!("{PODS}/r/resize"),
            STRATEGIC,
            r#"{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"300m"}}}]}}"#,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        r.body["spec"]["containers"][0]["resources"]["requests"]["cpu"],
        "300m"
    );
    assert_eq!(r.body["metadata"]["generation"], 3);
    assert_eq!(
        c.get(&format!("{PODS}/nope/resize")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn connect_subresources_have_nothing_to_connect_to() {
    let (_server, c) = server().await;
    c.post(PODS, &pod("p")).await;
    for sub in ["exec", "attach", "portforward"] {
        for method in [Method::GET, Method::POST] {
            let r = c
                .send(
                    method,
                    &format!("{PODS}/p/{sub}?command=ls"),
                    JSON,
                    Vec::new(),
                )
                .await;
            assert_eq!(r.status, StatusCode::BAD_REQUEST, "{sub}");
            assert_eq!(r.body["message"], "pod p does not have a host assigned");
        }
        let r = c
            .send(Method::PUT, &format!("{PODS}/p/{sub}"), JSON, Vec::new())
            .await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{sub}");
    }
    let r = c.get(&format!("{PODS}/nope/exec?command=ls")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body["message"], r#"pods "nope" not found"#);
    let r = c.get(&format!("{PODS}/p/proxy")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.body["message"], "address not allowed");

    // Bound to a node, a pod still has no kubelet behind it.
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
                         "target": {"kind": "Node", "name": "n1"}});
    c.post(&format!("{PODS}/p/binding"), &binding).await;
    let r = c.get(&format!("{PODS}/p/exec?command=ls")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body["message"], r#"pods "n1" not found"#, "sic");
    let nodes = "/api/v1/nodes";
    c.post(
        nodes,
        &json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
    )
    .await;
    for path in [
        format!("{PODS}/p/exec?command=ls"),
        format!("{nodes}/n1/proxy"),
    ] {
        let r = c.get(&path).await;
        assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR, "{path}");
        assert_eq!(
            r.body["message"],
            "no preferred addresses found; known addresses: []"
        );
        assert!(r.body.get("reason").is_none());
    }
    c.patch(
        &format!("{nodes}/n1/status"),
        MERGE,
        r#"{"status":{"addresses":[{"type":"InternalIP","address":"10.0.0.1"}]}}"#,
    )
    .await;
    let r = c.get(&format!("{PODS}/p/attach")).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.body["reason"], "ServiceUnavailable");

    let mut two = pod("two");
    two["spec"]["containers"] = json!([{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]);
    c.post(PODS, &two).await;
    let r = c.get(&format!("{PODS}/two/exec?command=ls")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["message"],
        "a container name must be specified for pod two, choose one of: [a b]"
    );
    let r = c
        .get(&format!("{PODS}/two/exec?command=ls&container=zz"))
        .await;
    assert_eq!(r.body["message"], "container zz is not valid for pod two");
    let r = c
        .get(&format!("{PODS}/two/exec?command=ls&container=a"))
        .await;
    assert_eq!(r.body["message"], "pod two does not have a host assigned");

    let services = "/api/v1/namespaces/default/services";
    c.post(
        services,
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    let r = c.get(&format!("{services}/s/proxy")).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        r.body["message"],
        r#"no endpoints available for service "s""#
    );
    let r = c.get(&format!("{nodes}/nope/proxy")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body["message"], r#"nodes "nope" not found"#);
}

#[tokio::test]
async fn token_requests() {
    let (_server, c) = server().await;
    let accounts = "/api/v1/namespaces/default/serviceaccounts";
    let sa = c
        .post(
            accounts,
            &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
        )
        .await
        .body;
    let request = |spec: Value| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
    let r = c
        .post(&format!("{accounts}/robot/token"), &request(json!({})))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["kind"], "TokenRequest");
    assert_eq!(r.body["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(r.body["metadata"]["name"], "robot");
    assert_eq!(r.body["metadata"]["uid"], sa["metadata"]["uid"]);
    assert_eq!(
        r.body["spec"],
        json!({"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": 3600,
               "boundObjectRef": null})
    );
    let token = r.body["status"]["token"].as_str().unwrap();
    let claims = token.split('.').nth(1).unwrap();
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(claims)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["sub"], "system:serviceaccount:default:robot");
    assert_eq!(
        claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap(),
        3600
    );
    assert!(r.body["status"]["expirationTimestamp"].is_string());

    let r = c
        .post(
            &format!("{accounts}/robot/token"),
            &request(json!({"expirationSeconds": 100})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.body["message"],
        r#"TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 100: may not specify a duration less than 10 minutes"#
    );
    let mut named = request(json!({}));
    named["metadata"] = json!({"name": "zzz"});
    let r = c.post(&format!("{accounts}/robot/token"), &named).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        r.body["message"],
        r#"TokenRequest.authentication.k8s.io "robot" is invalid: metadata.name: Invalid value: "zzz": must match the service account name if specified"#
    );
    let r = c
        .post(&format!("{accounts}/nope/token"), &request(json!({})))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body["message"], r#"serviceaccounts "nope" not found"#);
    let r = c.get(&format!("{accounts}/robot/token")).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn finalize_serves_only_updates() {
    let (_server, c) = server().await;
    let r = c.get("/api/v1/namespaces/default/finalize").await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        r.body["message"],
        "the server does not allow this method on the requested resource"
    );
}
