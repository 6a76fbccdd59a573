//! Deterministic, realistic objects for benchmarks and load tests: the same index always
//! gives the same bytes, so every client measured is served the same objects.
//!
//! ```
//! let pod = kclient_fake::samples::realistic_pod(7, true);
//! assert_eq!(pod["metadata"]["name"], "app-7-7d9f8b6c5d-000007");
//! assert!(pod["metadata"]["managedFields"].is_array());
//! assert_eq!(pod, kclient_fake::samples::realistic_pod(7, true));
//! ```

use serde_json::{json, Value};

/// A Pod as a Deployment's ReplicaSet makes it, scheduled and running: labels, an owner
/// reference, one container with args, env, ports, probe, resources and a volume mount, and
/// a full status — about 2.5 KB of JSON; with `managed_fields`, also the three
/// `metadata.managedFields` entries a real cluster records (kube-controller-manager, the
/// scheduler, the kubelet), about 5 KB in all.
pub fn realistic_pod(i: usize, managed_fields: bool) -> Value {
    let app = format!("app-{}", i % 100);
    let mut pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("{app}-7d9f8b6c5d-{i:06}"), "namespace": format!("ns-{}", i % 10),
            "labels": {"app": app, "pod-template-hash": "7d9f8b6c5d", "tier": "backend"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-11-20T10:00:00Z"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-7d9f8b6c5d"),
                                 "uid": "0b7c6d2e-1f3a-4b5c-9d8e-7f6a5b4c3d2e", "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {
            "containers": [{
                "name": "server", "image": "registry.example.com/team/server:1.27.3",
                "args": ["--port=8080", "--log-level=info"],
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                        {"name": "MODE", "value": "production"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10},
                "volumeMounts": [{"name": "config", "mountPath": "/etc/server"}]
            }],
            "volumes": [{"name": "config", "configMap": {"name": format!("{app}-config")}}],
            "nodeName": format!("node-{}", i % 1000), "serviceAccountName": "default"
        },
        "status": {
            "phase": "Running", "podIP": format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255),
            "hostIP": "192.168.1.10", "startTime": "2026-11-20T10:00:05Z", "qosClass": "Burstable",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-20T10:00:15Z"},
                           {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-20T10:00:01Z"}],
            "containerStatuses": [{"name": "server", "ready": true, "restartCount": 0, "started": true,
                                   "image": "registry.example.com/team/server:1.27.3",
                                   "imageID": "registry.example.com/team/server@sha256:3f1e0c8c2a",
                                   "containerID": format!("containerd://{i:064x}"),
                                   "state": {"running": {"startedAt": "2026-11-20T10:00:10Z"}}}]
        }
    });
    if managed_fields {
        pod["metadata"]["managedFields"] = managed_fields_of_a_pod();
    }
    pod
}

/// The managedFields of a running Pod: the controller's spec, the scheduler's condition and
/// the kubelet's status, as `FieldsV1` trees.
fn managed_fields_of_a_pod() -> Value {
    json!([
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
         "time": "2026-11-20T10:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:tier": {}},
                                     "f:annotations": {".": {}, "f:kubectl.kubernetes.io/restartedAt": {}},
                                     "f:ownerReferences": {".": {}, "k:{\"uid\":\"0b7c6d2e-1f3a-4b5c-9d8e-7f6a5b4c3d2e\"}": {}}},
                      "f:spec": {"f:containers": {"k:{\"name\":\"server\"}": {".": {}, "f:args": {}, "f:env": {".": {},
                                     "k:{\"name\":\"MODE\"}": {".": {}, "f:name": {}, "f:value": {}},
                                     "k:{\"name\":\"POD_NAME\"}": {".": {}, "f:name": {}, "f:valueFrom": {".": {}, "f:fieldRef": {}}}},
                                     "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                                     "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}},
                                     "f:readinessProbe": {".": {}, "f:httpGet": {".": {}, "f:path": {}, "f:port": {}, "f:scheme": {}}, "f:periodSeconds": {}},
                                     "f:resources": {".": {}, "f:limits": {".": {}, "f:memory": {}}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
                                     "f:volumeMounts": {".": {}, "k:{\"mountPath\":\"/etc/server\"}": {".": {}, "f:mountPath": {}, "f:name": {}}}}},
                                 "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {},
                                 "f:securityContext": {}, "f:serviceAccountName": {}, "f:terminationGracePeriodSeconds": {},
                                 "f:volumes": {".": {}, "k:{\"name\":\"config\"}": {".": {}, "f:configMap": {".": {}, "f:name": {}}, "f:name": {}}}}}},
        {"manager": "kube-scheduler", "operation": "Update", "apiVersion": "v1", "subresource": "status",
         "time": "2026-11-20T10:00:01Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:status": {"f:conditions": {".": {}, "k:{\"type\":\"PodScheduled\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}}}}},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "subresource": "status",
         "time": "2026-11-20T10:00:15Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}},
                                   "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:qosClass": {}, "f:startTime": {}}}}
    ])
}

/// Writes a `List` of `count` realistic Pods to `out`, one Pod at a time (for
/// `kclient-fake-apiserver --load`).
pub fn write_pod_list(
    out: &mut impl std::io::Write,
    count: usize,
    managed_fields: bool,
) -> std::io::Result<()> {
    out.write_all(br#"{"apiVersion":"v1","kind":"List","items":["#)?;
    for i in 0..count {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &realistic_pod(i, managed_fields))?;
    }
    out.write_all(b"]}")
}
