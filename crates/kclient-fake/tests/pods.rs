//! The pod subresources: log, eviction, binding.

use crate::common;

use common::*;
use http::{Method, StatusCode};
use serde_json::json;

const PODS: &str = "/api/v1/namespaces/default/pods";

#[tokio::test]
async fn logs() {
    let (server, c) = server().await;
    c.post(PODS, &pod("web")).await;
    server.set_pod_log("default", "web", "main", "one\ntwo\nthree\n");
    let r = c.get(&format!("{PODS}/web/log")).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.headers["content-type"], "text/plain");
    assert_eq!(&r.raw[..], b"one\ntwo\nthree\n");
    let r = c.get(&format!("{PODS}/web/log?tailLines=2")).await;
    assert_eq!(&r.raw[..], b"two\nthree\n");
    let r = c
        .get(&format!("{PODS}/web/log?limitBytes=3&follow=true"))
        .await;
    assert_eq!(&r.raw[..], b"one");
    let r = c.get(&format!("{PODS}/web/log?container=side")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.body["message"], "container side is not valid for pod web");
    let mut two = pod("two");
    two["spec"]["containers"] = json!([{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]);
    c.post(PODS, &two).await;
    let r = c.get(&format!("{PODS}/two/log")).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["message"],
        "a container name must be specified for pod two, choose one of: [a b]"
    );
    assert_eq!(
        c.get(&format!("{PODS}/nope/log")).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn eviction_deletes_the_pod() {
    let (_server, c) = server().await;
    c.post(PODS, &pod("web")).await;
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
                          "metadata": {"name": "web", "namespace": "default"}});
    let r = c.post(&format!("{PODS}/web/eviction"), &eviction).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    );
    assert_eq!(
        c.get(&format!("{PODS}/web")).await.status,
        StatusCode::NOT_FOUND
    );
    let r = c.post(&format!("{PODS}/web/eviction"), &eviction).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    c.post(PODS, &pod("other")).await;
    let r = c.post(&format!("{PODS}/other/eviction"), &eviction).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["message"],
        "name in URL does not match name in Eviction object"
    );
}

#[tokio::test]
async fn binding_assigns_a_node_once() {
    let (_server, c) = server().await;
    c.post(PODS, &pod("web")).await;
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"},
                         "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}});
    let r = c
        .send(
            Method::POST,
            &format!("{PODS}/web/binding"),
            JSON,
            binding.to_string().into_bytes(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(
        c.get(&format!("{PODS}/web")).await.body["spec"]["nodeName"],
        "n1"
    );
    let r = c
        .send(
            Method::POST,
            &format!("{PODS}/web/binding"),
            JSON,
            binding.to_string().into_bytes(),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(
        r.body["message"],
        "Operation cannot be fulfilled on pods/binding \"web\": pod web is already assigned to node \"n1\""
    );
}

#[tokio::test]
async fn pod_subresources_in_discovery() {
    let (_server, c) = server().await;
    let core = c.get("/api/v1").await.body;
    let find = |n: &str| {
        core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == n)
            .cloned()
            .unwrap_or_else(|| panic!("{n}"))
    };
    assert_eq!(find("pods/eviction")["group"], "policy");
    assert_eq!(find("pods/eviction")["verbs"], json!(["create"]));
    assert_eq!(find("pods/binding")["kind"], "Binding");
    assert_eq!(find("pods/log")["verbs"], json!(["get"]));
}

#[tokio::test]
async fn eviction_honours_the_disruption_budget() {
    // kube-apiserver v1.37.1's eviction rules; the test plays the disruption controller.
    let (_server, c) = server().await;
    let pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    let eviction = |name: &str| json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}});
    for name in ["running", "pending"] {
        c.post(PODS, &labelled(pod(name), json!({"app": "web"})))
            .await;
    }
    c.patch(
        &format!("{PODS}/running/status"),
        MERGE,
        r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#,
    )
    .await;
    let pdb = c
        .post(
            pdbs,
            &json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": "web"},
                    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
        )
        .await;
    assert_eq!(pdb.status, StatusCode::CREATED);

    // A pending pod is evicted regardless of its budget.
    let r = c
        .post(&format!("{PODS}/pending/eviction"), &eviction("pending"))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);

    // The budget's status has not observed its generation yet.
    let r = c
        .post(&format!("{PODS}/running/eviction"), &eviction("running"))
        .await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.headers["retry-after"], "10");
    assert_eq!(
        r.body["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        r.body["details"]["causes"][0],
        json!({"reason": "DisruptionBudget",
               "message": "The disruption budget web is still being processed by the server."})
    );

    let status = |allowed: i64| {
        format!(
            r#"{{"status":{{"observedGeneration":1,"disruptionsAllowed":{allowed},"currentHealthy":1,"desiredHealthy":1,"expectedPods":1}}}}"#
        )
    };
    c.patch(&format!("{pdbs}/web/status"), MERGE, &status(0))
        .await;
    let r = c
        .post(&format!("{PODS}/running/eviction"), &eviction("running"))
        .await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        r.body["details"]["causes"][0]["message"],
        "The disruption budget web needs 1 healthy pods and has 1 currently"
    );
    assert!(r.body["details"].get("retryAfterSeconds").is_none());

    c.patch(&format!("{pdbs}/web/status"), MERGE, &status(-1))
        .await;
    let r = c
        .post(&format!("{PODS}/running/eviction"), &eviction("running"))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(
        r.body["message"],
        r#"poddisruptionbudget.policy "web" is forbidden: pdb disruptions allowed is negative"#
    );
    assert_eq!(
        r.body["details"]["causes"][0]["message"],
        "The disruption budget web does not allow evicting pods currently: pdb disruptions allowed is negative"
    );

    c.patch(&format!("{pdbs}/web/status"), MERGE, &status(1))
        .await;
    let r = c
        .post(&format!("{PODS}/running/eviction"), &eviction("running"))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(
        c.get(&format!("{PODS}/running")).await.status,
        StatusCode::NOT_FOUND
    );
    let budget = c.get(&format!("{pdbs}/web")).await.body;
    assert_eq!(budget["status"]["disruptionsAllowed"], 0);
    assert!(budget["status"]["disruptedPods"]["running"].is_string());
    let condition = &budget["status"]["conditions"][0];
    assert_eq!(condition["type"], "DisruptionAllowed");
    assert_eq!(condition["status"], "False");
    assert_eq!(condition["reason"], "InsufficientPods");
    assert_eq!(condition["observedGeneration"], 1);

    // Two budgets for one pod: the eviction subresource gives up.
    c.post(PODS, &labelled(pod("two"), json!({"app": "web"})))
        .await;
    c.patch(
        &format!("{PODS}/two/status"),
        MERGE,
        r#"{"status":{"phase":"Running"}}"#,
    )
    .await;
    c.post(
        pdbs,
        &json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "all"}, "spec": {"maxUnavailable": 1, "selector": {}}}),
    )
    .await;
    let r = c
        .post(&format!("{PODS}/two/eviction"), &eviction("two"))
        .await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(
        r.body["message"],
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );
}
