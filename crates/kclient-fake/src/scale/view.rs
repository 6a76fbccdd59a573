//! The `Scale` view of an object (`autoscaling/v1`): what a read of the subresource answers
//! and what admission webhooks see of a write of it.

use serde_json::{json, Value};

use crate::catalogue::ResourceInfo;
use crate::meta::{self, meta_str};

fn selector_string(obj: &Value) -> Option<String> {
    let labels = obj.pointer("/spec/selector/matchLabels")?.as_object()?;
    let mut parts: Vec<String> = labels
        .iter()
        .filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}")))
        .collect();
    parts.sort();
    Some(parts.join(","))
}

/// The `Scale` view of `obj`.
pub fn to_scale(info: &ResourceInfo, obj: &Value) -> Value {
    let Some(spec) = &info.scale else {
        return Value::Null;
    };
    let replicas = meta::get_path(obj, &spec.spec_replicas_path)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let status_replicas = meta::get_path(obj, &spec.status_replicas_path)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut status = json!({"replicas": status_replicas});
    let selector = match &spec.label_selector_path {
        Some(p) => meta::get_path(obj, p)
            .and_then(Value::as_str)
            .map(String::from),
        None => selector_string(obj),
    };
    if let Some(sel) = selector {
        status["selector"] = json!(sel);
    }
    let mut metadata = json!({
        "name": meta_str(obj, "name"),
        "uid": meta_str(obj, "uid"),
        "resourceVersion": meta_str(obj, "resourceVersion"),
        "creationTimestamp": meta_str(obj, "creationTimestamp"),
    });
    if info.namespaced() {
        metadata["namespace"] = json!(meta_str(obj, "namespace"));
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": replicas},
        "status": status,
    })
}
