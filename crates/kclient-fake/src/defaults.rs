//! The few per-type rules of kube-apiserver's strategies and defaulting that a client can
//! observe in ordinary use:
//!
//! - on create, `status` is reset for types with a status subresource (pods start `Pending`);
//! - namespaces get `spec.finalizers: ["kubernetes"]` and `status.phase: Active`, and an update
//!   cannot change `spec.finalizers` (only the `finalize` subresource can);
//! - workloads (ReplicationControllers too) default `spec.replicas` to 1, and a
//!   ReplicationController's selector to its template's labels;
//! - secrets default `type` to `Opaque` (on updates too, as every decode defaults it), and
//!   their write-only `stringData` is merged into `data` (base64) and dropped, as the
//!   server's conversion does;
//! - services default `spec.type` to `ClusterIP`, and keep `spec.clusterIP` and
//!   `spec.clusterIPs` in step as the service registry does (see `immutable`'s `service`);
//! - PersistentVolumes default their reclaim policy (`Retain`) and volume mode, StorageClasses
//!   theirs (`Delete`, `Immediate`), PriorityClasses their preemption policy, NetworkPolicies
//!   their `policyTypes`, HorizontalPodAutoscalers `minReplicas: 1` and the 80% CPU metric;
//! - a new object's status is what kube-apiserver's strategies start it with (a PV `Pending`,
//!   the zero counters of a PodDisruptionBudget, an Ingress's empty `loadBalancer`, ...).
//!
//! - empty metadata labels, annotations, finalizers and owner references, and a ConfigMap's or
//!   Secret's empty `data`/`binaryData`, are dropped, as Go's `omitempty` drops them when the
//!   server re-encodes an object, and a null in labels, annotations or a ConfigMap's `data`
//!   is an empty string, as Go decodes it ([`drop_empty`]).
//!
//! Full defaulting and validation of every field is out of scope.

use kclient_core::ApiError;
use serde_json::{json, Map, Value};

use crate::catalogue::ResourceInfo;

/// Drops what Go's `omitempty` drops when kube-apiserver decodes and re-encodes an object:
/// empty `metadata.labels`, `annotations`, `finalizers` and `ownerReferences` (every type's
/// metadata is typed, custom resources' too) and, for built-in types, a ConfigMap's or
/// Secret's empty `data`/`binaryData`. Other empty fields of built-in types are kept as sent.
/// A null in one of those maps of strings (labels, annotations, a ConfigMap's `data`) becomes
/// an empty string, as Go decodes a null into a string (a JSON patch's `copy` from a missing
/// key writes one).
pub fn drop_empty(info: &ResourceInfo, obj: &mut Value) {
    fn strings_from_nulls(map: Option<&mut Value>) {
        for value in map
            .and_then(Value::as_object_mut)
            .into_iter()
            .flat_map(|m| m.values_mut())
        {
            if value.is_null() {
                *value = Value::String(String::new());
            }
        }
    }
    fn drop_if_empty(map: &mut serde_json::Map<String, Value>, fields: &[&str]) {
        for field in fields {
            let empty = match map.get(*field) {
                Some(Value::Object(m)) => m.is_empty(),
                Some(Value::Array(a)) => a.is_empty(),
                Some(Value::Null) => true,
                _ => false,
            };
            if empty {
                map.remove(*field);
            }
        }
    }
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        strings_from_nulls(meta.get_mut("labels"));
        strings_from_nulls(meta.get_mut("annotations"));
        drop_if_empty(
            meta,
            &["labels", "annotations", "finalizers", "ownerReferences"],
        );
    }
    if !info.custom && info.api.group.is_empty() && matches!(info.kind(), "ConfigMap" | "Secret") {
        if info.kind() == "ConfigMap" {
            strings_from_nulls(obj.get_mut("data"));
        }
        if let Some(map) = obj.as_object_mut() {
            drop_if_empty(map, &["data", "binaryData"]);
        }
    }
}

/// Applies create-time defaults and strategy rules.
pub fn on_create(info: &ResourceInfo, obj: &mut Value) {
    crate::admission::configuration::default(info, obj);
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    if info.status_subresource {
        map.remove("status");
    }
    match (info.api.group.as_str(), info.kind()) {
        ("", "Pod") => {
            map.insert(
                "status".into(),
                json!({"phase": "Pending", "qosClass": "BestEffort"}),
            );
        }
        ("", "Namespace") => {
            map.insert("spec".into(), json!({"finalizers": ["kubernetes"]}));
            map.insert("status".into(), json!({"phase": "Active"}));
        }
        ("", "Secret") => {
            map.entry("type").or_insert_with(|| json!("Opaque"));
            merge_string_data(obj);
        }
        ("", "Service") => {
            if let Some(spec) = spec_of(map) {
                spec.entry("type").or_insert_with(|| json!("ClusterIP"));
            }
            crate::immutable::normalize_service_create(obj);
        }
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet") => {
            if let Some(spec) = spec_of(map) {
                spec.entry("replicas").or_insert_with(|| json!(1));
            }
        }
        ("", "ReplicationController") => replication_controller_defaults(map),
        ("", "PersistentVolume") => persistent_volume_defaults(map),
        ("", "ResourceQuota") => {
            map.insert("status".into(), json!({}));
        }
        ("autoscaling", "HorizontalPodAutoscaler") => autoscaler_defaults(map),
        ("networking.k8s.io", "Ingress") => {
            map.insert("status".into(), json!({"loadBalancer": {}}));
        }
        ("networking.k8s.io", "NetworkPolicy") => network_policy_defaults(map),
        ("policy", "PodDisruptionBudget") => {
            map.insert(
                "status".into(),
                json!({"disruptionsAllowed": 0, "currentHealthy": 0,
                       "desiredHealthy": 0, "expectedPods": 0}),
            );
        }
        ("scheduling.k8s.io", "PriorityClass") => {
            map.entry("preemptionPolicy")
                .or_insert_with(|| json!("PreemptLowerPriority"));
        }
        ("storage.k8s.io", "StorageClass") => {
            map.entry("reclaimPolicy")
                .or_insert_with(|| json!("Delete"));
            map.entry("volumeBindingMode")
                .or_insert_with(|| json!("Immediate"));
        }
        _ => {}
    }
}

/// The object's `spec` (created empty when missing), if it is an object.
fn spec_of(map: &mut Map<String, Value>) -> Option<&mut Map<String, Value>> {
    map.entry("spec")
        .or_insert_with(|| json!({}))
        .as_object_mut()
}

/// A ReplicationController: one replica, a selector from the template's labels, and no
/// replicas yet.
fn replication_controller_defaults(map: &mut Map<String, Value>) {
    let template_labels = map
        .get("spec")
        .and_then(|s| s.pointer("/template/metadata/labels"))
        .cloned();
    if let Some(spec) = spec_of(map) {
        spec.entry("replicas").or_insert_with(|| json!(1));
        if let Some(labels) = &template_labels {
            let empty = spec
                .get("selector")
                .and_then(Value::as_object)
                .is_none_or(|m| m.is_empty());
            if empty {
                spec.insert("selector".into(), labels.clone());
            }
        }
    }
    map.insert("status".into(), json!({"replicas": 0}));
}

/// A PersistentVolume: retained, a filesystem, pending since now.
fn persistent_volume_defaults(map: &mut Map<String, Value>) {
    if let Some(spec) = spec_of(map) {
        spec.entry("persistentVolumeReclaimPolicy")
            .or_insert_with(|| json!("Retain"));
        spec.entry("volumeMode")
            .or_insert_with(|| json!("Filesystem"));
    }
    map.insert(
        "status".into(),
        json!({"phase": "Pending", "lastPhaseTransitionTime": crate::meta::now_rfc3339()}),
    );
}

/// A HorizontalPodAutoscaler: at least one replica, 80% CPU utilisation when no metric is
/// given.
fn autoscaler_defaults(map: &mut Map<String, Value>) {
    if let Some(spec) = spec_of(map) {
        spec.entry("minReplicas").or_insert_with(|| json!(1));
        let no_metrics = spec
            .get("metrics")
            .and_then(Value::as_array)
            .is_none_or(|m| m.is_empty());
        if no_metrics {
            spec.insert(
                "metrics".into(),
                json!([{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}}}]),
            );
        }
    }
    map.insert(
        "status".into(),
        json!({"desiredReplicas": 0, "currentMetrics": null}),
    );
}

/// A NetworkPolicy: `policyTypes` from what the policy has (Ingress always, Egress with
/// egress rules).
fn network_policy_defaults(map: &mut Map<String, Value>) {
    if let Some(spec) = spec_of(map) {
        if !spec.contains_key("policyTypes") {
            let mut types = vec![json!("Ingress")];
            if spec.get("egress").is_some_and(|e| !e.is_null()) {
                types.push(json!("Egress"));
            }
            spec.insert("policyTypes".into(), json!(types));
        }
    }
}

/// Applies update-time strategy rules (`old` is the stored state).
pub fn on_update(info: &ResourceInfo, old: &Value, new: &mut Value) -> Result<(), ApiError> {
    crate::admission::configuration::default(info, new);
    if info.custom || !info.api.group.is_empty() {
        return Ok(());
    }
    match info.kind() {
        "Namespace" => {
            if let Some(map) = new.as_object_mut() {
                match old.get("spec") {
                    Some(spec) => map.insert("spec".into(), spec.clone()),
                    None => map.remove("spec"),
                };
            }
        }
        "Secret" => {
            if let Some(map) = new.as_object_mut() {
                map.entry("type").or_insert_with(|| json!("Opaque"));
            }
            merge_string_data(new);
        }
        "Service" => crate::immutable::normalize_service_update(old, new),
        _ => {}
    }
    Ok(())
}

/// A Secret's `stringData` merged into `data` (each value base64-encoded, replacing the
/// key's value in `data`) and dropped, as the v1 to internal conversion does: the field is
/// write-only, and a read never shows it.
fn merge_string_data(secret: &mut Value) {
    use base64::Engine as _;
    let Some(map) = secret.as_object_mut() else {
        return;
    };
    let Some(Value::Object(strings)) = map.remove("stringData") else {
        return;
    };
    if strings.is_empty() {
        return;
    }
    let data = map.entry("data").or_insert_with(|| json!({}));
    if !data.is_object() {
        *data = json!({});
    }
    if let Some(data) = data.as_object_mut() {
        for (key, value) in strings {
            let text = value.as_str().unwrap_or_default();
            let encoded = base64::engine::general_purpose::STANDARD.encode(text);
            data.insert(key, Value::String(encoded));
        }
    }
}
