//! The few per-type rules of kube-apiserver's strategies and defaulting that a client can
//! observe in ordinary use:
//!
//! - on create, `status` is reset for types with a status subresource (pods start `Pending`);
//! - namespaces get `spec.finalizers: ["kubernetes"]` and `status.phase: Active`, and an update
//!   cannot change `spec.finalizers` (only the `finalize` subresource can);
//! - workloads default `spec.replicas` to 1;
//! - secrets default `type` to `Opaque`, services `spec.type` to `ClusterIP`.
//!
//! Full defaulting and validation of every field is out of scope.

use kclient_core::ApiError;
use serde_json::{json, Value};

use crate::catalogue::ResourceInfo;

/// Applies create-time defaults and strategy rules.
pub fn on_create(info: &ResourceInfo, obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    if info.status_subresource && !info.custom {
        map.remove("status");
    }
    if info.custom && info.status_subresource {
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
        }
        ("", "Service") => {
            let spec = map.entry("spec").or_insert_with(|| json!({}));
            if let Some(spec) = spec.as_object_mut() {
                spec.entry("type").or_insert_with(|| json!("ClusterIP"));
            }
        }
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet") => {
            let spec = map.entry("spec").or_insert_with(|| json!({}));
            if let Some(spec) = spec.as_object_mut() {
                spec.entry("replicas").or_insert_with(|| json!(1));
            }
        }
        _ => {}
    }
}

/// Applies update-time strategy rules (`old` is the stored state).
pub fn on_update(info: &ResourceInfo, old: &Value, new: &mut Value) -> Result<(), ApiError> {
    if info.api.group.is_empty() && info.kind() == "Namespace" {
        if let Some(map) = new.as_object_mut() {
            match old.get("spec") {
                Some(spec) => map.insert("spec".into(), spec.clone()),
                None => map.remove("spec"),
            };
        }
    }
    Ok(())
}
