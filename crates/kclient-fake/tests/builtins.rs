//! The built-in resources beyond the workloads: per-type rules of kube-apiserver's strategies
//! (generation tracking, create on update, what a delete answers, visible defaults), as
//! kube-apiserver v1.37.1 answered the same requests.

use crate::common;

use common::*;
use http::StatusCode;
use serde_json::{json, Value};

/// One type and what kube-apiserver did with it.
struct Case {
    api_version: &'static str,
    plural: &'static str,
    namespaced: bool,
    body: Value,
    /// A change outside metadata and status.
    change: fn(&mut Value),
    /// `metadata.generation` after create, after the change, after a label change.
    generations: [Option<i64>; 3],
    /// Whether a PUT of a missing object creates it.
    creates_on_update: bool,
    /// The kind of a delete's answer (`Status`, or the object's kind).
    delete_answers: &'static str,
}

fn pod_template() -> Value {
    json!({"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            api_version: "v1",
            plural: "persistentvolumes",
            namespaced: false,
            body: json!({"kind": "PersistentVolume", "spec": {"capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/x"}}}),
            change: |o| o["spec"]["capacity"]["storage"] = json!("2Gi"),
            generations: [None, None, None],
            creates_on_update: false,
            delete_answers: "PersistentVolume",
        },
        Case {
            api_version: "v1",
            plural: "resourcequotas",
            namespaced: true,
            body: json!({"kind": "ResourceQuota", "spec": {"hard": {"pods": "10"}}}),
            change: |o| o["spec"]["hard"]["pods"] = json!("11"),
            generations: [None, None, None],
            creates_on_update: false,
            delete_answers: "ResourceQuota",
        },
        Case {
            api_version: "v1",
            plural: "limitranges",
            namespaced: true,
            body: json!({"kind": "LimitRange", "spec": {"limits": [{"type": "Container"}]}}),
            change: |o| o["spec"]["limits"][0]["max"] = json!({"cpu": "2"}),
            generations: [None, None, None],
            creates_on_update: true,
            delete_answers: "Status",
        },
        Case {
            api_version: "v1",
            plural: "replicationcontrollers",
            namespaced: true,
            body: json!({"kind": "ReplicationController",
                         "spec": {"replicas": 0, "selector": {"a": "b"}, "template": pod_template()}}),
            change: |o| o["spec"]["minReadySeconds"] = json!(3),
            generations: [Some(1), Some(2), Some(2)],
            creates_on_update: false,
            delete_answers: "ReplicationController",
        },
        Case {
            api_version: "v1",
            plural: "podtemplates",
            namespaced: true,
            body: json!({"kind": "PodTemplate", "template": pod_template()}),
            change: |o| o["template"]["metadata"]["labels"]["c"] = json!("d"),
            generations: [Some(1), Some(2), Some(2)],
            creates_on_update: false,
            delete_answers: "PodTemplate",
        },
        Case {
            api_version: "apps/v1",
            plural: "controllerrevisions",
            namespaced: true,
            body: json!({"kind": "ControllerRevision", "revision": 1, "data": {}}),
            change: |o| o["revision"] = json!(2),
            generations: [None, None, None],
            creates_on_update: false,
            delete_answers: "Status",
        },
        Case {
            api_version: "rbac.authorization.k8s.io/v1",
            plural: "roles",
            namespaced: true,
            body: json!({"kind": "Role",
                         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
            change: |o| o["rules"][0]["verbs"] = json!(["list"]),
            generations: [None, None, None],
            creates_on_update: true,
            delete_answers: "Status",
        },
        Case {
            api_version: "rbac.authorization.k8s.io/v1",
            plural: "rolebindings",
            namespaced: true,
            body: json!({"kind": "RoleBinding",
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                         "subjects": [{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"}]}),
            change: |o| o["subjects"][0]["name"] = json!("v"),
            generations: [None, None, None],
            creates_on_update: true,
            delete_answers: "Status",
        },
        Case {
            api_version: "rbac.authorization.k8s.io/v1",
            plural: "clusterroles",
            namespaced: false,
            body: json!({"kind": "ClusterRole",
                         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
            change: |o| o["rules"][0]["verbs"] = json!(["list"]),
            generations: [None, None, None],
            creates_on_update: true,
            delete_answers: "Status",
        },
        Case {
            api_version: "rbac.authorization.k8s.io/v1",
            plural: "clusterrolebindings",
            namespaced: false,
            body: json!({"kind": "ClusterRoleBinding",
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"},
                         "subjects": [{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"}]}),
            change: |o| o["subjects"][0]["name"] = json!("v"),
            generations: [None, None, None],
            creates_on_update: true,
            delete_answers: "Status",
        },
        Case {
            api_version: "networking.k8s.io/v1",
            plural: "ingresses",
            namespaced: true,
            body: json!({"kind": "Ingress", "spec": {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}}}}),
            change: |o| o["spec"]["defaultBackend"]["service"]["port"]["number"] = json!(81),
            generations: [Some(1), Some(2), Some(2)],
            creates_on_update: false,
            delete_answers: "Status",
        },
        Case {
            api_version: "networking.k8s.io/v1",
            plural: "ingressclasses",
            namespaced: false,
            body: json!({"kind": "IngressClass", "spec": {"controller": "example.com/c"}}),
            change: |o| o["spec"]["parameters"] = json!({"kind": "K", "name": "n"}),
            generations: [Some(1), Some(2), Some(2)],
            creates_on_update: false,
            delete_answers: "Status",
        },
        Case {
            api_version: "networking.k8s.io/v1",
            plural: "networkpolicies",
            namespaced: true,
            body: json!({"kind": "NetworkPolicy", "spec": {"podSelector": {}}}),
            change: |o| o["spec"]["podSelector"] = json!({"matchLabels": {"a": "b"}}),
            generations: [Some(1), Some(2), Some(2)],
            creates_on_update: false,
            delete_answers: "Status",
        },
        Case {
            api_version: "policy/v1",
            plural: "poddisruptionbudgets",
            namespaced: true,
            body: json!({"kind": "PodDisruptionBudget",
                         "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}}),
            change: |o| o["spec"]["minAvailable"] = json!(2),
            generations: [Some(1), Some(2), Some(2)],
            creates_on_update: false,
            delete_answers: "Status",
        },
        Case {
            api_version: "autoscaling/v2",
            plural: "horizontalpodautoscalers",
            namespaced: true,
            body: json!({"kind": "HorizontalPodAutoscaler", "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                "minReplicas": 1, "maxReplicas": 3}}),
            change: |o| o["spec"]["maxReplicas"] = json!(4),
            generations: [Some(1), Some(2), Some(2)],
            creates_on_update: false,
            delete_answers: "Status",
        },
        Case {
            api_version: "storage.k8s.io/v1",
            plural: "storageclasses",
            namespaced: false,
            body: json!({"kind": "StorageClass", "provisioner": "example.com/p"}),
            change: |o| o["allowVolumeExpansion"] = json!(true),
            generations: [None, None, None],
            creates_on_update: false,
            delete_answers: "StorageClass",
        },
        Case {
            api_version: "discovery.k8s.io/v1",
            plural: "endpointslices",
            namespaced: true,
            body: json!({"kind": "EndpointSlice", "addressType": "IPv4", "endpoints": [], "ports": []}),
            change: |o| o["endpoints"] = json!([{"addresses": ["10.0.0.1"]}]),
            // An EndpointSlice's labels count.
            generations: [Some(1), Some(2), Some(3)],
            creates_on_update: false,
            delete_answers: "Status",
        },
        Case {
            api_version: "scheduling.k8s.io/v1",
            plural: "priorityclasses",
            namespaced: false,
            body: json!({"kind": "PriorityClass", "value": 1000}),
            change: |o| o["description"] = json!("x"),
            // Set on create, never bumped.
            generations: [Some(1), Some(1), Some(1)],
            creates_on_update: false,
            delete_answers: "Status",
        },
    ]
}

fn generation(obj: &Value) -> Option<i64> {
    obj["metadata"]["generation"].as_i64()
}

#[tokio::test]
async fn per_type_rules_as_kube_apiserver_applies_them() {
    let (_server, c) = server().await;
    for case in cases() {
        let api = if case.api_version == "v1" {
            "/api/v1".to_string()
        } else {
            format!("/apis/{}", case.api_version)
        };
        let collection = if case.namespaced {
            format!("{api}/namespaces/default/{}", case.plural)
        } else {
            format!("{api}/{}", case.plural)
        };
        let what = case.plural;
        let mut body = case.body.clone();
        body["apiVersion"] = json!(case.api_version);
        body["metadata"] = json!({"name": "one"});

        let created = c.post(&collection, &body).await;
        assert_eq!(
            created.status,
            StatusCode::CREATED,
            "{what}: {}",
            created.body
        );
        let mut changed = created.body.clone();
        (case.change)(&mut changed);
        let updated = c.put(&format!("{collection}/one"), &changed).await;
        assert_eq!(updated.status, StatusCode::OK, "{what}: {}", updated.body);
        let mut labelled = updated.body.clone();
        labelled["metadata"]["labels"] = json!({"x": "y"});
        let relabelled = c.put(&format!("{collection}/one"), &labelled).await;
        assert_eq!(
            relabelled.status,
            StatusCode::OK,
            "{what}: {}",
            relabelled.body
        );
        assert_eq!(
            [
                generation(&created.body),
                generation(&updated.body),
                generation(&relabelled.body)
            ],
            case.generations,
            "{what}: generations"
        );

        let mut missing = body.clone();
        missing["metadata"]["name"] = json!("two");
        let put = c.put(&format!("{collection}/two"), &missing).await;
        let expected = if case.creates_on_update {
            StatusCode::CREATED
        } else {
            StatusCode::NOT_FOUND
        };
        assert_eq!(put.status, expected, "{what}: update of a missing object");

        let deleted = c.delete(&format!("{collection}/one")).await;
        assert_eq!(deleted.status, StatusCode::OK, "{what}");
        assert_eq!(deleted.body["kind"], case.delete_answers, "{what}: delete");
    }
}

#[tokio::test]
async fn defaults_and_initial_status() {
    let (_server, c) = server().await;
    let post = |path: &'static str, body: Value| {
        let c = c.clone();
        async move {
            let r = c.post(path, &body).await;
            assert_eq!(r.status, StatusCode::CREATED, "{path}: {}", r.body);
            r.body
        }
    };
    let pv = post(
        "/api/v1/persistentvolumes",
        json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
               "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                        "hostPath": {"path": "/tmp/x"}},
               "status": {"phase": "Bound"}}),
    )
    .await;
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    assert_eq!(pv["spec"]["volumeMode"], "Filesystem");
    assert_eq!(pv["status"]["phase"], "Pending");
    assert!(pv["status"]["lastPhaseTransitionTime"].is_string());

    let rc = post(
        "/api/v1/namespaces/default/replicationcontrollers",
        json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"},
               "spec": {"template": pod_template()}}),
    )
    .await;
    assert_eq!(rc["spec"]["replicas"], 1);
    assert_eq!(rc["spec"]["selector"], json!({"a": "b"}));
    assert_eq!(rc["status"], json!({"replicas": 0}));

    let pdb = post(
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb"},
               "spec": {"minAvailable": 1}}),
    )
    .await;
    assert_eq!(
        pdb["status"],
        json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0})
    );

    let hpa = post(
        "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": "hpa"},
               "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                        "maxReplicas": 3}}),
    )
    .await;
    assert_eq!(hpa["spec"]["minReplicas"], 1);
    assert_eq!(
        hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );
    assert_eq!(
        hpa["status"],
        json!({"desiredReplicas": 0, "currentMetrics": null})
    );

    let ingress = post(
        "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i"},
               "spec": {}}),
    )
    .await;
    assert_eq!(ingress["status"], json!({"loadBalancer": {}}));

    let policy = post(
        "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "np"},
               "spec": {"podSelector": {}, "egress": [{}]}}),
    )
    .await;
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress", "Egress"]));

    let class = post(
        "/apis/storage.k8s.io/v1/storageclasses",
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc"},
               "provisioner": "example.com/p"}),
    )
    .await;
    assert_eq!(class["reclaimPolicy"], "Delete");
    assert_eq!(class["volumeBindingMode"], "Immediate");

    let priority = post(
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "pc"},
               "value": 5}),
    )
    .await;
    assert_eq!(priority["preemptionPolicy"], "PreemptLowerPriority");
}

#[tokio::test]
async fn selectable_fields_of_the_new_types() {
    let (_server, c) = server().await;
    let rcs = "/api/v1/namespaces/default/replicationcontrollers";
    c.post(
        rcs,
        &json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "rc"},
                "spec": {"replicas": 0, "template": pod_template()}}),
    )
    .await;
    let list = c
        .get(&format!("{rcs}?fieldSelector=status.replicas%3D0"))
        .await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(list.body["items"][0]["metadata"]["name"], "rc");
    let r = c
        .get(&format!("{rcs}?fieldSelector=spec.replicas%3D0"))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["message"],
        "field label not supported: spec.replicas"
    );

    let events = "/apis/events.k8s.io/v1/namespaces/default/events";
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
                       "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "a/b",
                       "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal",
                       "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}});
    c.post(events, &event).await;
    for selector in [
        "regarding.name%3Dp",
        "reason%3DR",
        "reportingController%3Da/b",
        "type%3DNormal",
    ] {
        let list = c.get(&format!("{events}?fieldSelector={selector}")).await;
        assert_eq!(list.status, StatusCode::OK, "{selector}: {}", list.body);
        assert_eq!(list.body["items"][0]["metadata"]["name"], "e", "{selector}");
    }
    let r = c.get(&format!("{events}?fieldSelector=source%3Dx")).await;
    assert_eq!(r.body["message"], "field label not supported: source");
    let slices = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices";
    let r = c
        .get(&format!("{slices}?fieldSelector=addressType%3DIPv4"))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body["message"],
        r#""addressType" is not a known field selector: only "metadata.name", "metadata.namespace""#
    );
}
