//! Discovery endpoints, legacy and aggregated.

use crate::common;

use common::*;
use http::StatusCode;
use serde_json::{json, Value};

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

#[tokio::test]
async fn version_and_legacy_discovery() {
    let (server, c) = server().await;
    let v = c.get("/version").await.body;
    assert_eq!(v["major"], "1");
    assert_eq!(v["minor"], "37");
    assert_eq!(v["gitVersion"], "v1.37.0-kclient-fake");
    assert_eq!(v["emulationMinor"], "37");
    assert_eq!(v["minCompatibilityMinor"], "36");

    let api = c.get("/api").await;
    assert_eq!(api.headers["content-type"], "application/json");
    assert_eq!(
        api.body,
        json!({"kind": "APIVersions", "versions": ["v1"],
               "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                               "serverAddress": server.address().to_string()}]})
    );

    let core = c.get("/api/v1").await.body;
    assert_eq!(core["kind"], "APIResourceList");
    assert_eq!(core["groupVersion"], "v1");
    let resources = core["resources"].as_array().unwrap();
    let pods = resources.iter().find(|r| r["name"] == "pods").unwrap();
    assert_eq!(pods["singularName"], "pod");
    assert_eq!(pods["namespaced"], true);
    assert_eq!(pods["kind"], "Pod");
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert_eq!(pods["categories"], json!(["all"]));
    assert_eq!(
        pods["verbs"],
        json!([
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch"
        ])
    );
    assert!(pods["storageVersionHash"].is_string());
    let status = resources
        .iter()
        .find(|r| r["name"] == "pods/status")
        .unwrap();
    assert_eq!(status["verbs"], json!(["get", "patch", "update"]));
    let ns = resources
        .iter()
        .find(|r| r["name"] == "namespaces")
        .unwrap();
    assert_eq!(ns["namespaced"], false);

    let groups = c.get("/apis").await.body;
    assert_eq!(groups["kind"], "APIGroupList");
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    for g in [
        "apps",
        "batch",
        "coordination.k8s.io",
        "events.k8s.io",
        "apiextensions.k8s.io",
    ] {
        assert!(names.contains(&g), "{g} in {names:?}");
    }
    let apps = c.get("/apis/apps").await.body;
    assert_eq!(apps["kind"], "APIGroup");
    assert_eq!(
        apps["preferredVersion"],
        json!({"groupVersion": "apps/v1", "version": "v1"})
    );
    let apps_v1 = c.get("/apis/apps/v1").await.body;
    assert_eq!(apps_v1["apiVersion"], "v1");
    let scale = apps_v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "deployments/scale")
        .unwrap();
    assert_eq!(scale["group"], "autoscaling");
    assert_eq!(scale["kind"], "Scale");
    let unknown_group = c.get("/apis/nope.example.com").await;
    assert_eq!(unknown_group.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown_group.body, json!("404 page not found\n"));
    assert_eq!(
        c.get("/apis/nope.example.com/v1/namespaces/default/things")
            .await
            .body,
        json!("404 page not found\n")
    );
    // Inside a built-in group, a NotFound Status.
    let unknown_version = c.get("/apis/apps/v9").await;
    assert_eq!(unknown_version.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown_version.body["reason"], "NotFound");
    assert_eq!(
        c.get("/apis/apps/v1/namespaces/default/nothings")
            .await
            .body["reason"],
        "NotFound"
    );
}

#[tokio::test]
async fn aggregated_discovery() {
    let (server, _) = server().await;
    let c = Client::new(&server).with_header(
        "accept",
        &format!("{AGGREGATED},application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"),
    );
    let r = c.get("/apis").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.headers["content-type"], AGGREGATED);
    assert_eq!(r.body["kind"], "APIGroupDiscoveryList");
    assert_eq!(r.body["apiVersion"], "apidiscovery.k8s.io/v2");
    let apps = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "apps")
        .unwrap();
    let v1 = &apps["versions"][0];
    assert_eq!(v1["version"], "v1");
    assert_eq!(v1["freshness"], "Current");
    let deploy = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "deployments")
        .unwrap();
    assert_eq!(deploy["scope"], "Namespaced");
    assert_eq!(deploy["singularResource"], "deployment");
    // kube-apiserver leaves a built-in resource's own group and version out.
    assert_eq!(
        deploy["responseKind"],
        json!({"group": "", "version": "", "kind": "Deployment"})
    );
    assert_eq!(deploy["shortNames"], json!(["deploy"]));
    let subs: Vec<&Value> = deploy["subresources"].as_array().unwrap().iter().collect();
    assert_eq!(subs[0]["subresource"], "scale");
    assert_eq!(subs[0]["responseKind"]["kind"], "Scale");
    assert_eq!(subs[1]["subresource"], "status");

    let core = c.get("/api").await;
    assert_eq!(core.headers["content-type"], AGGREGATED);
    assert_eq!(core.body["items"].as_array().unwrap().len(), 1);
    assert_eq!(core.body["items"][0]["metadata"], json!({}));
    assert_eq!(apps["metadata"], json!({"name": "apps"}));
    assert!(core.body["items"][0]["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["resource"] == "pods" && r["scope"] == "Namespaced"));

    // Without the aggregated media type in Accept, the legacy shape.
    let plain = Client::new(&server).with_header("accept", "application/json");
    assert_eq!(plain.get("/apis").await.body["kind"], "APIGroupList");
}

/// The subresources of `resource` in a legacy `APIResourceList`, as `name kind verbs`.
fn legacy_subresources(list: &Value, resource: &str) -> Vec<String> {
    let prefix = format!("{resource}/");
    list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| {
            let name = r["name"].as_str()?.strip_prefix(&prefix)?;
            let group = r["group"]
                .as_str()
                .map(|g| format!("{g}/"))
                .unwrap_or_default();
            let version = r["version"]
                .as_str()
                .map(|v| format!("{v}."))
                .unwrap_or_default();
            Some(format!(
                "{name} {group}{version}{} {}",
                r["kind"].as_str()?,
                r["verbs"]
            ))
        })
        .collect()
}

#[tokio::test]
async fn subresources_as_kube_apiserver_lists_them() {
    // kube-apiserver v1.37.1's /api/v1 (the e2e suite's discovery scenario compares all of it).
    let (_server, c) = server().await;
    let core = c.get("/api/v1").await.body;
    assert_eq!(
        legacy_subresources(&core, "pods"),
        [
            r#"attach PodAttachOptions ["create","get"]"#,
            r#"binding Binding ["create"]"#,
            r#"ephemeralcontainers Pod ["get","patch","update"]"#,
            r#"eviction policy/v1.Eviction ["create"]"#,
            r#"exec PodExecOptions ["create","get"]"#,
            r#"log Pod ["get"]"#,
            r#"portforward PodPortForwardOptions ["create","get"]"#,
            r#"proxy PodProxyOptions ["create","delete","get","patch","update"]"#,
            r#"resize Pod ["get","patch","update"]"#,
            r#"status Pod ["get","patch","update"]"#,
        ]
    );
    assert_eq!(
        legacy_subresources(&core, "namespaces"),
        [
            r#"finalize Namespace ["update"]"#,
            r#"status Namespace ["get","patch","update"]"#
        ]
    );
    assert_eq!(
        legacy_subresources(&core, "serviceaccounts"),
        [r#"token authentication.k8s.io/v1.TokenRequest ["create"]"#]
    );
    assert_eq!(
        legacy_subresources(&core, "replicationcontrollers"),
        [
            r#"scale autoscaling/v1.Scale ["get","patch","update"]"#,
            r#"status ReplicationController ["get","patch","update"]"#
        ]
    );
    let names: Vec<&str> = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "sorted by name, subresources included");

    let c = c.with_header("accept", AGGREGATED);
    let all = c.get("/api").await.body;
    let pods = all["items"][0]["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "pods")
        .unwrap()
        .clone();
    assert_eq!(
        pods["responseKind"],
        json!({"group": "", "version": "", "kind": "Pod"})
    );
    let eviction = pods["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["subresource"] == "eviction")
        .unwrap();
    assert_eq!(
        eviction["responseKind"],
        json!({"group": "policy", "version": "v1", "kind": "Eviction"})
    );
}

#[tokio::test]
async fn groups_in_kube_apiserver_order() {
    let (_server, c) = server().await;
    let groups = c.get("/apis").await.body;
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    // kube-apiserver v1.37.1's order, of the groups the fake serves.
    assert_eq!(
        names,
        [
            "apps",
            "events.k8s.io",
            "autoscaling",
            "batch",
            "networking.k8s.io",
            "policy",
            "rbac.authorization.k8s.io",
            "storage.k8s.io",
            "admissionregistration.k8s.io",
            "apiextensions.k8s.io",
            "scheduling.k8s.io",
            "coordination.k8s.io",
            "discovery.k8s.io",
        ]
    );
    let autoscaling = c.get("/apis/autoscaling").await.body;
    assert_eq!(autoscaling["preferredVersion"]["version"], "v2");
}

#[tokio::test]
async fn custom_resources_as_kube_apiserver_lists_them() {
    let (_server, c) = server().await;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object"}},
                               "subresources": {"status": {}, "scale": {
                                   "specReplicasPath": ".spec.replicas",
                                   "statusReplicasPath": ".status.replicas"}}}]}
    });
    let r = c
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    // What kube-apiserver v1.37.1 answers for such a CRD: the group and version named, its
    // own order of verbs, status before scale.
    let verbs = json!([
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "create",
        "update",
        "watch"
    ]);
    let v1 = c.get("/apis/example.com/v1").await.body;
    assert_eq!(v1["resources"][0]["verbs"], verbs);
    let agg = c.with_header("accept", AGGREGATED).get("/apis").await.body;
    let group = agg["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "example.com")
        .unwrap();
    let widgets = &group["versions"][0]["resources"][0];
    assert_eq!(
        widgets["responseKind"],
        json!({"group": "example.com", "version": "v1", "kind": "Widget"})
    );
    assert_eq!(widgets["verbs"], verbs);
    assert_eq!(widgets["subresources"][0]["subresource"], "status");
    assert_eq!(
        widgets["subresources"][0]["responseKind"],
        json!({"group": "example.com", "version": "v1", "kind": "Widget"})
    );
    assert_eq!(widgets["subresources"][1]["subresource"], "scale");
}

#[tokio::test]
async fn health_endpoints() {
    let (_server, c) = server().await;
    for p in ["/healthz", "/livez", "/readyz"] {
        let r = c.get(p).await;
        assert_eq!(r.status, StatusCode::OK);
        assert_eq!(r.body, json!("ok"));
    }
}
